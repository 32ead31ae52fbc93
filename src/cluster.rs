//! The broker's view of the cluster, as Metadata requests see it: brokers,
//! the controller, topics with their partitions (leader, leader epoch,
//! replicas, ISR) and configs. The controller is its only writer; request
//! handlers read a consistent snapshot.
//!
//! It holds no I/O and no actors; it is rebuilt from the metadata store.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::config::topic::TopicConfig;

/// One broker: the endpoint brokers reach it on (its inter-broker
/// listener's) and every listener it advertises, so each client is told
/// the endpoints of the listener it connected to, as Kafka does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub id: i32,
    pub host: String,
    pub port: u16,
    pub rack: Option<String>,
    /// Every advertised listener; empty when only `host`/`port` is known.
    pub listeners: Vec<ListenerEndpoint>,
}

/// One advertised listener of a broker (`SASL_PLAINTEXT://h:9093`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerEndpoint {
    /// Upper-cased listener name.
    pub name: String,
    pub security_protocol: crate::config::SecurityProtocol,
    pub host: String,
    pub port: u16,
}

impl BrokerEndpoint {
    /// The host and port a client on `listener` is told; `None` if the
    /// broker does not advertise that listener (Kafka leaves such brokers
    /// out of the answer).
    pub fn on_listener(&self, listener: &str) -> Option<(&str, u16)> {
        if self.listeners.is_empty() {
            return Some((&self.host, self.port));
        }
        self.listeners
            .iter()
            .find(|l| l.name == listener)
            .map(|l| (l.host.as_str(), l.port))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// The partition state znode's version (Kafka's zkVersion, sent as
    /// LeaderAndIsr's `partition_epoch`): a leader's ISR writes are
    /// conditional on it.
    pub zk_version: i32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TopicMetadata {
    pub name: String,
    /// Kafka topic ids are UUIDs; 16 bytes here.
    pub topic_id: [u8; 16],
    pub is_internal: bool,
    pub partitions: BTreeMap<i32, PartitionMetadata>,
    /// Topic-level overrides only, as set by the operator.
    pub configs: BTreeMap<String, String>,
    /// Broker defaults with the overrides applied, typed.
    pub config: TopicConfig,
}

impl TopicMetadata {
    /// The same topic with only the partitions `indexes`: what the
    /// controller sends when those changed (Kafka's
    /// ControllerBrokerRequestBatch carries the partitions that changed,
    /// and brokers merge them into what they know).
    pub fn only(&self, indexes: &[i32]) -> TopicMetadata {
        // Looked up one by one (not a scan with `contains`), and without
        // cloning the whole topic first: a 1,000-partition topic of which
        // one partition changed costs one clone.
        TopicMetadata {
            name: self.name.clone(),
            topic_id: self.topic_id,
            is_internal: self.is_internal,
            partitions: indexes
                .iter()
                .filter_map(|index| Some((*index, self.partitions.get(index)?.clone())))
                .collect(),
            configs: self.configs.clone(),
            config: self.config.clone(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterMetadata {
    pub cluster_id: String,
    pub controller_id: i32,
    pub brokers: BTreeMap<i32, BrokerEndpoint>,
    pub topics: BTreeMap<String, TopicMetadata>,
}

impl ClusterMetadata {
    /// The controller as clients are told of it: -1 unless it is among
    /// `brokers` (Kafka's cache takes both from one UpdateMetadata).
    /// librdkafka's admin client, told of a controller it cannot find,
    /// waits for it instead of asking again; a joining broker therefore
    /// lists the controller it learns from ZooKeeper (`learn_controller`).
    pub fn advertised_controller_id(&self) -> i32 {
        if self.brokers.contains_key(&self.controller_id) {
            self.controller_id
        } else {
            -1
        }
    }
}

/// Shared, read-mostly cluster metadata.
#[derive(Debug, Clone, Default)]
pub struct MetadataCache(Arc<RwLock<ClusterMetadata>>);

impl MetadataCache {
    /// A copy of the whole view (cheap enough at the sizes a broker holds;
    /// readers never block the controller for long).
    pub fn snapshot(&self) -> ClusterMetadata {
        match self.0.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn read<T>(&self, f: impl FnOnce(&ClusterMetadata) -> T) -> T {
        match self.0.read() {
            Ok(guard) => f(&guard),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    pub fn update<T>(&self, f: impl FnOnce(&mut ClusterMetadata) -> T) -> T {
        match self.0.write() {
            Ok(mut guard) => f(&mut guard),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    pub fn topic(&self, name: &str) -> Option<TopicMetadata> {
        self.read(|m| m.topics.get(name).cloned())
    }
}

/// Kafka's internal topics (`Topic.INTERNAL_TOPICS`): clients cannot
/// produce to them, and Metadata marks them internal.
pub fn is_internal_topic(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
}

/// Why a topic name breaks Kafka's rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTopicName {
    #[error("topic name is empty")]
    Empty,
    #[error("topic name cannot be '.' or '..'")]
    Dots,
    #[error("topic name is {0} characters, at most 249 are allowed")]
    TooLong(usize),
    #[error("topic name contains '{0}'; only [a-zA-Z0-9._-] are allowed")]
    BadCharacter(char),
}

/// Kafka's rule for topic names: 1 to 249 characters of `[a-zA-Z0-9._-]`,
/// not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), InvalidTopicName> {
    if name.is_empty() {
        return Err(InvalidTopicName::Empty);
    }
    if name == "." || name == ".." {
        return Err(InvalidTopicName::Dots);
    }
    if name.len() > 249 {
        return Err(InvalidTopicName::TooLong(name.len()));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(InvalidTopicName::BadCharacter(c));
    }
    Ok(())
}

/// The brokers that joined and that left between two UpdateMetadata
/// views of the live brokers: each broker publishes `BrokerRegistered` and
/// `BrokerLeft` as its own metadata learns of them.
pub fn membership_changes(
    before: &BTreeMap<i32, BrokerEndpoint>,
    after: &BTreeMap<i32, BrokerEndpoint>,
) -> (Vec<i32>, Vec<i32>) {
    let joined = after.keys().filter(|id| !before.contains_key(id)).copied().collect();
    let left = before.keys().filter(|id| !after.contains_key(id)).copied().collect();
    (joined, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's legal and illegal topic names.
    #[test]
    fn topic_names() {
        for ok in ["a", "orders.v1", "my_topic-2", &"x".repeat(249)] {
            assert!(validate_topic_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "with space", "slash/", "ü", &"x".repeat(250)] {
            assert!(validate_topic_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_keeps_the_partitions_that_changed() {
        let partition = |leader| PartitionMetadata {
            leader,
            leader_epoch: 1,
            replicas: vec![0, 1],
            isr: vec![0, 1],
            zk_version: 0,
        };
        let topic = TopicMetadata {
            name: "t".into(),
            topic_id: [7; 16],
            is_internal: false,
            partitions: BTreeMap::from([(0, partition(0)), (1, partition(1)), (2, partition(0))]),
            configs: BTreeMap::new(),
            config: TopicConfig::default(),
        };
        let delta = topic.only(&[1, 5]);
        assert_eq!(delta.partitions, BTreeMap::from([(1, partition(1))]));
        assert_eq!((delta.name.as_str(), delta.topic_id), ("t", [7; 16]));
    }

    #[test]
    fn membership_changes_name_who_joined_and_who_left() {
        let endpoint = |id| BrokerEndpoint {
            id,
            host: "127.0.0.1".into(),
            port: 9092,
            rack: None,
            listeners: Vec::new(),
        };
        let before = BTreeMap::from([(0, endpoint(0)), (1, endpoint(1))]);
        let after = BTreeMap::from([(1, endpoint(1)), (2, endpoint(2)), (3, endpoint(3))]);
        assert_eq!(membership_changes(&before, &after), (vec![2, 3], vec![0]));
        assert_eq!(membership_changes(&after, &after), (vec![], vec![]));
    }
}
