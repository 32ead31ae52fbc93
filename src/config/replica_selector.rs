//! `replica.selector.class`: which replica a consumer is told to fetch
//! from (KIP-392). Only Kafka's built-in rack-aware selector can be named;
//! Java classes cannot be loaded.

use super::ConfigError;

/// Which replica a consumer is told to fetch from (`replica.selector.class`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// Kafka's default (no selector): always the leader.
    LeaderOnly,
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`: an
    /// in-sync replica in the consumer's `client.rack`, if there is one.
    RackAware,
}

impl ReplicaSelector {
    /// The class name of Kafka's rack-aware selector, the one built in.
    pub const RACK_AWARE_CLASS: &'static str =
        "org.apache.kafka.common.replica.RackAwareReplicaSelector";

    pub(super) fn parse(raw: &str) -> Result<ReplicaSelector, ConfigError> {
        match raw.trim() {
            "" => Ok(ReplicaSelector::LeaderOnly),
            Self::RACK_AWARE_CLASS => Ok(ReplicaSelector::RackAware),
            other => Err(ConfigError::InvalidValue {
                key: "replica.selector.class".into(),
                value: other.into(),
                reason: format!(
                    "Java classes cannot be loaded; the built-in selector is {}",
                    Self::RACK_AWARE_CLASS
                ),
            }),
        }
    }
}
