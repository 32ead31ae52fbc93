//! Kafka's `ConnectionQuotas` for the limits that close a new connection
//! at once: `max.connections` (all clients) and `max.connections.per.ip`
//! with `max.connections.per.ip.overrides`. A [`ConnectionSlot`] is one
//! open connection; dropping it (the connection actor going away) frees
//! it, so the counts cannot leak on any path out of a connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Open connections, in total and per client address.
#[derive(Debug, Default)]
pub struct ConnectionQuotas {
    open: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Why a new connection was closed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `max.connections` open already.
    #[error("max.connections ({0}) reached")]
    Total(usize),
    /// The address has its `max.connections.per.ip` (or override) open.
    #[error("max.connections.per.ip ({0}) reached for this address")]
    PerIp(usize),
}

/// One admitted connection; dropping it frees its place.
#[derive(Debug)]
pub struct ConnectionSlot {
    quotas: Arc<ConnectionQuotas>,
    ip: IpAddr,
}

impl ConnectionQuotas {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        match self.open.lock() {
            Ok(counts) => counts,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Admits a connection from `ip` if neither limit is reached.
    pub fn try_open(
        self: &Arc<Self>,
        ip: IpAddr,
        max_total: usize,
        max_for_ip: usize,
    ) -> Result<ConnectionSlot, Refusal> {
        let ip = ip.to_canonical();
        let mut counts = self.counts();
        if counts.total >= max_total {
            return Err(Refusal::Total(max_total));
        }
        let for_ip = counts.per_ip.get(&ip).copied().unwrap_or(0);
        if for_ip >= max_for_ip {
            return Err(Refusal::PerIp(max_for_ip));
        }
        counts.total += 1;
        counts.per_ip.insert(ip, for_ip + 1);
        Ok(ConnectionSlot {
            quotas: self.clone(),
            ip,
        })
    }

    /// Connections open now (all, and from `ip`).
    #[cfg(test)]
    pub fn open(&self, ip: IpAddr) -> (usize, usize) {
        let counts = self.counts();
        let ip = ip.to_canonical();
        (counts.total, counts.per_ip.get(&ip).copied().unwrap_or(0))
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut counts = self.quotas.counts();
        counts.total = counts.total.saturating_sub(1);
        if let Some(n) = counts.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                counts.per_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_apply_in_total_and_per_address_and_slots_free_on_drop() {
        let quotas = Arc::new(ConnectionQuotas::default());
        let a: IpAddr = "10.0.0.1".parse().expect("ip");
        let b: IpAddr = "10.0.0.2".parse().expect("ip");
        let first = quotas.try_open(a, 3, 2).expect("admitted");
        let _second = quotas.try_open(a, 3, 2).expect("admitted");
        assert_eq!(quotas.try_open(a, 3, 2).err(), Some(Refusal::PerIp(2)));
        let _third = quotas.try_open(b, 3, 2).expect("another address");
        assert_eq!(quotas.try_open(b, 3, 2).err(), Some(Refusal::Total(3)));
        assert_eq!(quotas.open(a), (3, 2));
        drop(first);
        assert_eq!(quotas.open(a), (2, 1));
        let _again = quotas.try_open(a, 3, 2).expect("a freed place");
        // IPv4-mapped IPv6 counts as the IPv4 address.
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().expect("ip");
        assert_eq!(quotas.try_open(mapped, 9, 2).err(), Some(Refusal::PerIp(2)));
    }
}
