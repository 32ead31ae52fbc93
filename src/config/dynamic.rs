//! Kafka's dynamic broker configs (KIP-226): broker keys changed while the
//! broker runs, kept in the metadata store as Kafka keeps them
//! (`/config/brokers/<id>` for one broker, `/config/brokers/<default>` for
//! the cluster default, each `{"version":1,"config":{...}}`, followed
//! through `/config/changes`). The effective config layers them as Kafka
//! does: this broker's dynamic value, then the cluster default, then
//! `server.properties`, then Kafka's default.
//!
//! [`DYNAMIC_BROKER_KEYS`] is the one list of keys that can change: the
//! keys Kafka 3.9 can change at run time that ferrolog either applies
//! without a restart or ignores altogether. Readers take the current
//! config from [`DynamicBrokerConfig::current`] when they act, so a change
//! needs no message to reach them; the partitions' log configs are
//! recomputed by the controller when a change arrives.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use super::{BrokerConfig, ConfigError};

/// The name of the cluster-default entity under `/config/brokers`.
pub const DEFAULT_BROKER_ENTITY: &str = "<default>";

/// The broker keys that can change without a restart, sorted by name.
/// Log defaults reach every partition without an override of its own;
/// `min.insync.replicas` the next produce, `unclean.leader.election.enable`
/// the next election, `max.connections` the next accepted connection, the
/// `log.cleaner.*` keys the cleaner's next pass.
pub const DYNAMIC_BROKER_KEYS: &[&str] = &[
    "compression.type",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.threads",
    "log.cleanup.policy",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.type",
    "log.retention.bytes",
    "log.retention.hours",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.hours",
    "log.roll.ms",
    "log.segment.bytes",
    "max.connection.creation.rate",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "message.max.bytes",
    "min.insync.replicas",
    "producer.id.expiration.ms",
    "unclean.leader.election.enable",
];

/// The TLS keys a listener reloads without a restart (Kafka's
/// `SslConfigs.RECONFIGURABLE_CONFIGS`), broker-wide or for one listener
/// (`listener.name.<l>.ssl.keystore.location`), sorted.
pub const DYNAMIC_SSL_KEYS: &[&str] = &[
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
];

/// Whether `key` can change without a restart.
pub fn is_dynamic(key: &str) -> bool {
    let ssl = key
        .strip_prefix("listener.name.")
        .and_then(|rest| rest.split_once('.'))
        .map_or(key, |(_, ssl)| ssl);
    DYNAMIC_BROKER_KEYS.binary_search(&key).is_ok() || DYNAMIC_SSL_KEYS.binary_search(&ssl).is_ok()
}

/// Why a dynamic change was refused; Kafka answers INVALID_REQUEST for
/// both (`ZkAdminManager.alterConfigs`).
#[derive(Debug, thiserror::Error)]
pub enum DynamicConfigError {
    /// Keys that need a restart (or that no broker knows).
    #[error("Cannot update these configs dynamically: {0:?}")]
    NotDynamic(Vec<String>),
    /// A value the key's rule refuses.
    #[error("{0}")]
    Invalid(#[from] ConfigError),
    /// What the config builds refuses it (a keystore that does not load).
    #[error("{0}")]
    Refused(String),
}

impl DynamicConfigError {
    /// Kafka's error code for it.
    pub fn code(&self) -> i16 {
        kafka_protocol::error::ResponseError::InvalidRequest.code()
    }
}

/// The dynamic layers: the cluster default and this broker's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicLayers {
    /// `/config/brokers/<default>`.
    pub cluster_default: BTreeMap<String, String>,
    /// `/config/brokers/<this broker's id>`.
    pub per_broker: BTreeMap<String, String>,
}

impl DynamicLayers {
    /// The config `static_config` becomes with these layers over it.
    pub fn apply(&self, static_config: &BrokerConfig) -> Result<BrokerConfig, DynamicConfigError> {
        let refused: Vec<String> = self
            .cluster_default
            .keys()
            .chain(self.per_broker.keys())
            .filter(|k| !is_dynamic(k))
            .cloned()
            .collect();
        if !refused.is_empty() {
            return Err(DynamicConfigError::NotDynamic(refused));
        }
        Ok(static_config.with_layers(&[&self.cluster_default, &self.per_broker])?)
    }
}

struct State {
    static_config: BrokerConfig,
    layers: DynamicLayers,
    current: Arc<BrokerConfig>,
    /// Told of every new config (Kafka's `Reconfigurable`s).
    reconfigurables: Vec<Arc<dyn Reconfigurable>>,
}

/// Something built from the config that must be rebuilt when it changes
/// (Kafka's `Reconfigurable`: a TLS listener's keystore). `validate`
/// refuses a change before it is stored; `reconfigure` takes it.
pub trait Reconfigurable: Send + Sync {
    /// Why `config` cannot be taken, if it cannot.
    fn validate(&self, config: &BrokerConfig) -> Result<(), String>;
    /// Take `config` (a failure is logged and keeps what is in service).
    fn reconfigure(&self, config: &BrokerConfig);
}

/// This broker's config as it is now: `server.properties` with the dynamic
/// layers applied. Cheap to clone (one shared state); every clone sees
/// every change.
#[derive(Clone)]
pub struct DynamicBrokerConfig {
    state: Arc<RwLock<State>>,
}

impl std::fmt::Debug for DynamicBrokerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicBrokerConfig")
            .field("layers", &self.layers())
            .finish()
    }
}

impl DynamicBrokerConfig {
    /// `static_config` (the file) with no dynamic configs yet.
    pub fn new(static_config: BrokerConfig) -> DynamicBrokerConfig {
        let current = Arc::new(static_config.clone());
        DynamicBrokerConfig {
            state: Arc::new(RwLock::new(State {
                static_config,
                layers: DynamicLayers::default(),
                current,
                reconfigurables: Vec::new(),
            })),
        }
    }

    /// The effective config now.
    pub fn current(&self) -> Arc<BrokerConfig> {
        self.read(|s| s.current.clone())
    }

    /// The file's config, without the dynamic layers.
    pub fn static_config(&self) -> BrokerConfig {
        self.read(|s| s.static_config.clone())
    }

    /// The dynamic layers in force.
    pub fn layers(&self) -> DynamicLayers {
        self.read(|s| s.layers.clone())
    }

    /// What `layers` would make of this broker's config, without taking
    /// them (validation).
    pub fn try_layers(&self, layers: &DynamicLayers) -> Result<BrokerConfig, DynamicConfigError> {
        let (next, reconfigurables) =
            self.read(|s| (layers.apply(&s.static_config), s.reconfigurables.clone()));
        let next = next?;
        for reconfigurable in reconfigurables {
            reconfigurable
                .validate(&next)
                .map_err(DynamicConfigError::Refused)?;
        }
        Ok(next)
    }

    /// Tells `reconfigurable` of every config taken from now on.
    pub fn add_reconfigurable(&self, reconfigurable: Arc<dyn Reconfigurable>) {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        state.reconfigurables.push(reconfigurable);
    }

    /// Takes `layers` as the dynamic configs in force. Answers whether the
    /// broker-wide log defaults changed (every partition without its own
    /// override then needs its log config again). Refused layers leave
    /// the config as it was.
    pub fn set_layers(&self, layers: DynamicLayers) -> Result<bool, DynamicConfigError> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        let next = layers.apply(&state.static_config)?;
        let log_defaults_changed = next.log_config() != state.current.log_config();
        state.layers = layers;
        state.current = Arc::new(next);
        let (current, reconfigurables) = (state.current.clone(), state.reconfigurables.clone());
        drop(state);
        for reconfigurable in reconfigurables {
            reconfigurable.reconfigure(&current);
        }
        Ok(log_defaults_changed)
    }

    fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn static_config() -> BrokerConfig {
        BrokerConfig::from_properties("log.retention.ms=1000\nmin.insync.replicas=2\n", &[])
            .map(|(c, _)| c)
            .unwrap_or_default()
    }

    #[test]
    fn the_list_is_sorted_and_names_table_keys() {
        let mut sorted = DYNAMIC_BROKER_KEYS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, DYNAMIC_BROKER_KEYS);
        for key in DYNAMIC_BROKER_KEYS {
            assert!(
                super::super::broker_key(key).is_some(),
                "{key} is not a broker key"
            );
        }
    }

    #[test]
    fn per_broker_beats_the_cluster_default_which_beats_the_file() {
        let dynamic = DynamicBrokerConfig::new(static_config());
        assert_eq!(dynamic.current().log_retention_ms, 1000);
        let changed = dynamic
            .set_layers(DynamicLayers {
                cluster_default: layer(&[
                    ("log.retention.ms", "2000"),
                    ("min.insync.replicas", "3"),
                ]),
                per_broker: layer(&[("log.retention.ms", "3000")]),
            })
            .map_err(|e| e.to_string());
        assert_eq!(changed, Ok(true));
        let current = dynamic.current();
        assert_eq!(current.log_retention_ms, 3000);
        assert_eq!(current.min_insync_replicas, 3);
        // The file's values stay the static ones.
        assert_eq!(dynamic.static_config().log_retention_ms, 1000);
        // Dropping the layers goes back to the file.
        let changed = dynamic
            .set_layers(DynamicLayers::default())
            .map_err(|e| e.to_string());
        assert_eq!(changed, Ok(true));
        assert_eq!(dynamic.current().log_retention_ms, 1000);
        assert_eq!(dynamic.current().min_insync_replicas, 2);
    }

    #[test]
    fn a_change_outside_the_log_defaults_says_so() {
        let dynamic = DynamicBrokerConfig::new(static_config());
        let changed = dynamic
            .set_layers(DynamicLayers {
                cluster_default: BTreeMap::new(),
                per_broker: layer(&[("max.connections", "10")]),
            })
            .map_err(|e| e.to_string());
        assert_eq!(changed, Ok(false));
        assert_eq!(dynamic.current().max_connections, 10);
    }

    #[test]
    fn static_only_and_bad_values_are_refused_and_change_nothing() {
        let dynamic = DynamicBrokerConfig::new(static_config());
        let refused = dynamic.set_layers(DynamicLayers {
            cluster_default: BTreeMap::new(),
            per_broker: layer(&[("broker.id", "7"), ("log.retention.ms", "5")]),
        });
        assert!(
            matches!(refused, Err(DynamicConfigError::NotDynamic(keys)) if keys == ["broker.id"])
        );
        let invalid = dynamic.set_layers(DynamicLayers {
            cluster_default: layer(&[("log.segment.bytes", "not-a-number")]),
            per_broker: BTreeMap::new(),
        });
        assert!(matches!(invalid, Err(DynamicConfigError::Invalid(_))));
        assert_eq!(dynamic.current().log_retention_ms, 1000);
        assert_eq!(dynamic.layers(), DynamicLayers::default());
    }
}
