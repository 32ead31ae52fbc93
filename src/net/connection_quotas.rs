//! Kafka's `ConnectionQuotas` for the limits that close a new connection
//! at once: `max.connections` (all clients, every listener) and
//! `max.connections.per.ip` with `max.connections.per.ip.overrides`, and
//! the creation rates of KIP-612, `max.connection.creation.rate` for the
//! broker and the `connection_creation_rate` quota of `/config/ips`
//! (measured with Kafka's sampled rate). A [`ConnectionSlot`] is one open
//! connection; dropping it (the connection actor going away) frees it, so
//! the counts cannot leak on any path out of a connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::quota::rate::{RateConfig, SampledRate};

/// Open connections, in total and per client address.
#[derive(Debug, Default)]
pub struct ConnectionQuotas {
    open: Mutex<Counts>,
    created: Mutex<Creations>,
    /// Connections closed at once for a limit, since start.
    refused: std::sync::atomic::AtomicU64,
}

/// Connections accepted lately, broker-wide and per address.
#[derive(Debug, Default)]
struct Creations {
    total: Option<SampledRate>,
    per_ip: HashMap<IpAddr, SampledRate>,
}

/// The creation-rate limits in force for one new connection.
#[derive(Debug, Clone, Copy)]
pub struct CreationLimits {
    /// `max.connection.creation.rate` (connections per second).
    pub broker_rate: f64,
    /// The address's `connection_creation_rate` quota, if any.
    pub ip_rate: Option<f64>,
    /// The sampling windows (`quota.window.*`).
    pub windows: RateConfig,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Why a new connection was closed at once.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// `max.connections` open already.
    #[error("max.connections ({0}) reached")]
    Total(usize),
    /// The address has its `max.connections.per.ip` (or override) open.
    #[error("max.connections.per.ip ({0}) reached for this address")]
    PerIp(usize),
    /// New connections come faster than `max.connection.creation.rate`.
    #[error("max.connection.creation.rate ({0}/s) reached")]
    BrokerRate(f64),
    /// The address connects faster than its `connection_creation_rate`.
    #[error("connection_creation_rate ({0}/s) of this address reached")]
    IpRate(f64),
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

    fn creations(&self) -> std::sync::MutexGuard<'_, Creations> {
        match self.created.lock() {
            Ok(created) => created,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Counts a connection closed for a limit.
    pub fn note_refused(&self) -> u64 {
        self.refused.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Records a new connection from `ip` at `now_ms` unless it would take
    /// the broker's or the address's creation rate past its limit (a
    /// refused connection is not counted, as Kafka unrecords it).
    pub fn try_create(&self, ip: IpAddr, now_ms: u64, limits: CreationLimits) -> Result<(), Refusal> {
        let ip = ip.to_canonical();
        let mut created = self.creations();
        let Creations { total, per_ip } = &mut *created;
        let total = total.get_or_insert_with(|| SampledRate::new(limits.windows));
        total.record(1.0, now_ms);
        if total.throttle_ms(limits.broker_rate, now_ms) > 0 {
            total.unrecord(1.0, now_ms);
            return Err(Refusal::BrokerRate(limits.broker_rate));
        }
        if let Some(bound) = limits.ip_rate {
            // Addresses that went quiet are forgotten, so a scan of many
            // addresses cannot grow the map without bound.
            if per_ip.len() > 10_000 {
                per_ip.retain(|_, rate| rate.per_second(now_ms) > 0.0);
            }
            let rate = per_ip
                .entry(ip)
                .or_insert_with(|| SampledRate::new(limits.windows));
            rate.record(1.0, now_ms);
            if rate.throttle_ms(bound, now_ms) > 0 {
                rate.unrecord(1.0, now_ms);
                total.unrecord(1.0, now_ms);
                return Err(Refusal::IpRate(bound));
            }
        }
        Ok(())
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
    fn creation_rates_refuse_a_burst_and_count_only_the_admitted() {
        let quotas = ConnectionQuotas::default();
        let windows = RateConfig {
            samples: 2,
            window_ms: 1000,
        };
        let a: IpAddr = "10.0.0.1".parse().expect("ip");
        let b: IpAddr = "10.0.0.2".parse().expect("ip");
        let per_ip = CreationLimits {
            broker_rate: 1e9,
            ip_rate: Some(3.0),
            windows,
        };
        // 3 per second over a 1 s window: the 4th at once is refused,
        // another address is not, and a second later there is room again.
        for _ in 0..3 {
            assert_eq!(quotas.try_create(a, 0, per_ip), Ok(()));
        }
        assert_eq!(quotas.try_create(a, 0, per_ip), Err(Refusal::IpRate(3.0)));
        assert_eq!(quotas.try_create(b, 0, per_ip), Ok(()));
        assert_eq!(quotas.try_create(a, 2_000, per_ip), Ok(()));
        let broker_wide = CreationLimits {
            broker_rate: 2.0,
            ip_rate: None,
            windows,
        };
        let quotas = ConnectionQuotas::default();
        assert_eq!(quotas.try_create(a, 0, broker_wide), Ok(()));
        assert_eq!(quotas.try_create(b, 0, broker_wide), Ok(()));
        assert_eq!(quotas.try_create(b, 0, broker_wide), Err(Refusal::BrokerRate(2.0)));
        assert_eq!(quotas.note_refused(), 1);
    }

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
