//! Client quotas as Kafka's ZooKeeper mode keeps and applies them:
//! `producer_byte_rate`, `consumer_byte_rate` and `request_percentage` on
//! user, client-id and user+client-id entities (with `<default>`s), stored
//! in `/config/users` and `/config/clients` ([`entity`]), measured with
//! Kafka's sampled rate ([`rate`]). A client over its quota is never
//! refused: its response carries `throttle_time_ms` and its connection
//! reads nothing more until the delay has passed (KIP-219), as Kafka's
//! `ClientQuotaManager` does.

pub mod entity;
pub mod rate;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, RwLock};

use entity::{ClientQuotaConfigs, EntityName, QuotaEntity, QuotaValues};
use rate::{RateConfig, SampledRate};

use crate::metadata::store::{MetadataError, MetadataStore};

/// The stored quotas and the broker's copy of them, kept in step: loaded
/// at start-up, each entity reread when a `/config/changes` notification
/// names it (the controller actor follows them), so quotas written by any
/// broker or by Kafka's `kafka-configs --zookeeper` apply everywhere.
#[derive(Debug)]
pub struct ClientQuotas {
    /// Where the quotas are stored, behind Describe/AlterClientQuotas.
    pub configs: ClientQuotaConfigs,
    /// What the request path consults.
    pub manager: ClientQuotaManager,
}

impl ClientQuotas {
    /// Over `store`, measuring with `rate`; nothing loaded yet.
    pub fn new(store: std::sync::Arc<dyn MetadataStore>, rate: RateConfig) -> ClientQuotas {
        ClientQuotas {
            configs: ClientQuotaConfigs::new(store),
            manager: ClientQuotaManager::new(rate),
        }
    }

    /// Reads every stored quota.
    pub async fn load(&self) -> Result<(), MetadataError> {
        self.manager.replace_all(self.configs.all().await?);
        Ok(())
    }

    /// Rereads one entity's quotas.
    pub async fn reload(&self, entity: &QuotaEntity) -> Result<(), MetadataError> {
        let values = self.configs.values(entity).await?;
        self.manager.update(entity.clone(), values);
        Ok(())
    }
}

/// A connection's mute (KIP-219): after a throttled response the broker
/// reads nothing more from that connection until the delay has passed,
/// so a client that ignores `throttle_time_ms` is held back too.
#[derive(Debug, Default)]
pub struct ChannelMute {
    until: Mutex<Option<tokio::time::Instant>>,
}

impl ChannelMute {
    /// Mutes for `ms` from now (a longer mute already set stands).
    pub fn mute_for(&self, ms: u64) {
        if ms == 0 {
            return;
        }
        let until = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
        let mut current = lock(&self.until);
        if current.is_none_or(|c| c < until) {
            *current = Some(until);
        }
    }

    /// Waits out the mute, if any.
    pub async fn wait(&self) {
        let until = lock(&self.until).take();
        if let Some(until) = until {
            tokio::time::sleep_until(until).await;
        }
    }
}

/// What a quota limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaType {
    /// Produce request bytes per second (`producer_byte_rate`).
    Produce,
    /// Fetch response bytes per second (`consumer_byte_rate`).
    Fetch,
    /// Percent of one thread's time (`request_percentage`).
    Request,
}

impl QuotaType {
    /// The quota's key.
    pub fn key(self) -> &'static str {
        match self {
            QuotaType::Produce => "producer_byte_rate",
            QuotaType::Fetch => "consumer_byte_rate",
            QuotaType::Request => "request_percentage",
        }
    }
}

/// Whose rate a quota measures: the matched entity with `<default>`
/// replaced by the client's own names, so clients under one default quota
/// are measured one by one (Kafka's metric tags).
type SensorKey = (QuotaType, Option<String>, Option<String>);

/// The broker's quotas and the clients' observed rates.
#[derive(Debug)]
pub struct ClientQuotaManager {
    rate: RateConfig,
    entities: RwLock<HashMap<QuotaEntity, QuotaValues>>,
    sensors: Mutex<HashMap<SensorKey, SampledRate>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl ClientQuotaManager {
    /// No quotas yet, sampling with `rate`.
    pub fn new(rate: RateConfig) -> ClientQuotaManager {
        ClientQuotaManager {
            rate,
            entities: RwLock::default(),
            sensors: Mutex::default(),
        }
    }

    /// `entity`'s quotas are now `values` (empty: it has none).
    pub fn update(&self, entity: QuotaEntity, values: QuotaValues) {
        let mut entities = match self.entities.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if values.is_empty() {
            entities.remove(&entity);
        } else {
            entities.insert(entity, values);
        }
    }

    /// Replaces every quota (start-up).
    pub fn replace_all(&self, all: Vec<(QuotaEntity, QuotaValues)>) {
        let mut entities = match self.entities.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *entities = all.into_iter().collect();
    }

    /// Whether any quota is set (nothing is measured otherwise).
    fn any(&self) -> bool {
        match self.entities.read() {
            Ok(entities) => !entities.is_empty(),
            Err(poisoned) => !poisoned.into_inner().is_empty(),
        }
    }

    /// The quota of `user`/`client_id` for `quota_type` and whose rate it
    /// measures: the first entity in Kafka's precedence order that sets it
    /// (user+client, user+default client, user, default user+client,
    /// default user+default client, default user, client, default client).
    pub fn quota(&self, user: &str, client_id: &str, quota_type: QuotaType) -> Option<(f64, SensorKey)> {
        let entities = match self.entities.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (u, c) = (
            EntityName::Named(user.to_string()),
            EntityName::Named(client_id.to_string()),
        );
        let (du, dc) = (EntityName::Default, EntityName::Default);
        let (mine_u, mine_c) = (Some(user.to_string()), Some(client_id.to_string()));
        let candidates = [
            (QuotaEntity::UserClient(u.clone(), c.clone()), mine_u.clone(), mine_c.clone()),
            (QuotaEntity::UserClient(u.clone(), dc.clone()), mine_u.clone(), mine_c.clone()),
            (QuotaEntity::User(u), mine_u.clone(), None),
            (QuotaEntity::UserClient(du.clone(), c.clone()), mine_u.clone(), mine_c.clone()),
            (QuotaEntity::UserClient(du.clone(), dc.clone()), mine_u.clone(), mine_c.clone()),
            (QuotaEntity::User(du), mine_u, None),
            (QuotaEntity::Client(c), None, mine_c.clone()),
            (QuotaEntity::Client(dc), None, mine_c),
        ];
        candidates.into_iter().find_map(|(entity, key_user, key_client)| {
            let bound = *entities.get(&entity)?.get(quota_type.key())?;
            Some((bound, (quota_type, key_user, key_client)))
        })
    }

    /// Records `value` for the client and returns the delay (ms) its quota
    /// earns; 0 without a quota.
    pub fn record(&self, user: &str, client_id: &str, quota_type: QuotaType, value: f64, now_ms: u64) -> u64 {
        if !self.any() {
            return 0;
        }
        let Some((bound, key)) = self.quota(user, client_id, quota_type) else {
            return 0;
        };
        let mut sensors = lock(&self.sensors);
        let rate = sensors
            .entry(key)
            .or_insert_with(|| SampledRate::new(self.rate));
        rate.record_and_throttle_ms(value, bound, now_ms)
    }

    /// The most a client may take in one response under its quota:
    /// `samples - 1` windows' worth (Kafka's `getMaxValueInQuotaWindow`),
    /// so one fetch never earns a delay it can never work off.
    pub fn max_value_in_window(&self, user: &str, client_id: &str, quota_type: QuotaType) -> Option<f64> {
        if !self.any() {
            return None;
        }
        let (bound, _) = self.quota(user, client_id, quota_type)?;
        let windows = self.rate.samples.saturating_sub(1).max(1) as f64;
        Some(bound * windows * self.rate.window_ms as f64 / 1000.0)
    }

    /// The `connection_creation_rate` quota of `ip`: its own, else the
    /// default address's.
    pub fn ip_connection_rate(&self, ip: std::net::IpAddr) -> Option<f64> {
        let entities = match self.entities.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let rate = |entity: QuotaEntity| {
            entities
                .get(&entity)
                .and_then(|values| values.get("connection_creation_rate").copied())
        };
        rate(QuotaEntity::Ip(EntityName::Named(ip.to_canonical().to_string())))
            .or_else(|| rate(QuotaEntity::Ip(EntityName::Default)))
    }

    /// The sampling windows.
    pub fn rate_config(&self) -> RateConfig {
        self.rate
    }

    /// Takes back a recorded value (a fetch answered empty because the
    /// client is throttled, as Kafka unrecords it).
    pub fn unrecord(&self, user: &str, client_id: &str, quota_type: QuotaType, value: f64, now_ms: u64) {
        if let Some((_, key)) = self.quota(user, client_id, quota_type) {
            if let Some(rate) = lock(&self.sensors).get_mut(&key) {
                rate.unrecord(value, now_ms);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(n: &str) -> EntityName {
        EntityName::Named(n.into())
    }

    #[test]
    fn the_most_specific_entity_that_sets_a_quota_applies() {
        let quotas = ClientQuotaManager::new(RateConfig {
            samples: 11,
            window_ms: 1000,
        });
        let values = |k: &str, v: f64| -> QuotaValues { [(k.to_string(), v)].into() };
        quotas.update(QuotaEntity::Client(EntityName::Default), values("producer_byte_rate", 10.0));
        quotas.update(QuotaEntity::User(named("alice")), values("producer_byte_rate", 20.0));
        quotas.update(
            QuotaEntity::UserClient(named("alice"), named("app")),
            values("consumer_byte_rate", 30.0),
        );
        let produce = |u: &str, c: &str| quotas.quota(u, c, QuotaType::Produce);
        // alice's user quota beats the default client's; user+client sets
        // only a fetch quota, so it does not apply to produce.
        assert_eq!(
            produce("alice", "app"),
            Some((20.0, (QuotaType::Produce, Some("alice".into()), None)))
        );
        assert_eq!(
            quotas.quota("alice", "app", QuotaType::Fetch),
            Some((30.0, (QuotaType::Fetch, Some("alice".into()), Some("app".into()))))
        );
        // Everyone else falls to the default client-id, measured per client.
        assert_eq!(
            produce("bob", "tool"),
            Some((10.0, (QuotaType::Produce, None, Some("tool".into()))))
        );
        assert_eq!(quotas.quota("bob", "tool", QuotaType::Request), None);
        // Throttled by its own quota, not by other clients' traffic.
        assert_eq!(quotas.record("bob", "other", QuotaType::Produce, 5.0, 0), 0);
        assert!(quotas.record("bob", "tool", QuotaType::Produce, 1000.0, 0) > 0);
        quotas.update(QuotaEntity::Client(EntityName::Default), QuotaValues::new());
        assert_eq!(produce("bob", "tool"), None);
    }
}
