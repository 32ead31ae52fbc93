//! Kafka's ControllerContext, the part the controller owns alone: its role
//! and epoch, the live brokers with their epochs, the brokers in a
//! controlled shutdown and the topic deletions in progress. Plain data; the
//! controller actor holds one and changes it between store reads and writes.
//!
//! It also holds the active controller's own view of every topic
//! (assignment, leader, leader epoch, ISR and each partition state's
//! zkVersion) and of the live brokers' endpoints. The broker's metadata
//! cache is a different thing: it hears of this controller's decisions
//! only through UpdateMetadata, as every other broker does, so nothing is
//! advertised on this broker before its own replicas took it up.

use std::collections::{BTreeMap, BTreeSet};

use super::deletion::TopicDeletions;
use crate::cluster::{BrokerEndpoint, TopicMetadata};

/// This broker's part in the controller election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerRole {
    pub active: bool,
    /// Between a session expiry and the registration on the new session:
    /// no election may run (this broker is not registered).
    pub registering: bool,
    /// While active: this controller's epoch.
    pub controller_epoch: i32,
    /// While active: the version of `/controller_epoch` this controller
    /// wrote its epoch at. Every controller write checks it in the same
    /// transaction (Kafka's `wrapRequestWithControllerEpochCheck`), so a
    /// controller that was paused or cut off while a successor was elected
    /// can write nothing.
    pub epoch_zk_version: i32,
    /// This broker's epoch (its registration's czxid, KIP-380).
    pub broker_epoch: i64,
}

/// What a read of `/brokers/ids` found against the brokers known before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerChanges {
    /// New, or registered again (`bounced` are here too).
    pub joined: Vec<i32>,
    pub left: Vec<i32>,
    /// Registered again with a new broker epoch before this controller saw
    /// them go (KIP-380).
    pub bounced: Vec<i32>,
}

#[derive(Debug, Clone)]
pub struct ControllerContext {
    broker_id: i32,
    pub role: ControllerRole,
    /// The live brokers and their epochs, as `/brokers/ids` last said
    /// (active controller only).
    live: BTreeMap<i32, i64>,
    /// Brokers in a controlled shutdown (active controller only): live,
    /// but never given a leadership, until they leave or register again.
    shutting_down: BTreeSet<i32>,
    /// The topic deletions in progress (active controller only): which
    /// brokers have deleted their replicas.
    pub deletions: TopicDeletions,
    /// The live brokers' endpoints, as their registrations say (active
    /// controller only).
    endpoints: BTreeMap<i32, BrokerEndpoint>,
    /// Every topic as this controller last read or wrote it (active
    /// controller only): Kafka's partitionAssignments, partitionLeadershipInfo
    /// and the zkVersion of each partition state.
    topics: BTreeMap<String, TopicMetadata>,
}

impl ControllerContext {
    pub fn new(broker_id: i32, broker_epoch: i64) -> ControllerContext {
        ControllerContext {
            broker_id,
            role: ControllerRole {
                active: false,
                registering: false,
                controller_epoch: 0,
                epoch_zk_version: -1,
                broker_epoch,
            },
            live: BTreeMap::new(),
            shutting_down: BTreeSet::new(),
            deletions: TopicDeletions::default(),
            endpoints: BTreeMap::new(),
            topics: BTreeMap::new(),
        }
    }

    /// Takes up the role at `epoch`: a new term starts from what the store
    /// says, so what a previous term knew is dropped (Kafka resets its
    /// context on resignation).
    pub fn activate(&mut self, epoch: i32, epoch_zk_version: i32) {
        self.role.active = true;
        self.role.controller_epoch = epoch;
        self.role.epoch_zk_version = epoch_zk_version;
        self.live.clear();
        self.shutting_down.clear();
        self.deletions.clear();
        self.endpoints.clear();
        self.topics.clear();
    }

    /// Gives the role up: what this term knew is not kept for the next.
    pub fn resign(&mut self) {
        self.role.active = false;
        self.topics.clear();
        self.endpoints.clear();
    }

    pub fn topic(&self, name: &str) -> Option<&TopicMetadata> {
        self.topics.get(name)
    }

    pub fn topics(&self) -> impl Iterator<Item = &TopicMetadata> {
        self.topics.values()
    }

    /// Takes `topic` as it now is (read from the store, or just written).
    pub fn put_topic(&mut self, topic: TopicMetadata) {
        self.topics.insert(topic.name.clone(), topic);
    }

    pub fn remove_topic(&mut self, name: &str) -> Option<TopicMetadata> {
        self.topics.remove(name)
    }

    /// The live brokers, in id order.
    pub fn live_brokers(&self) -> Vec<i32> {
        self.live.keys().copied().collect()
    }

    pub fn endpoints(&self) -> &BTreeMap<i32, BrokerEndpoint> {
        &self.endpoints
    }

    /// [`Self::set_live_brokers`] with the endpoints the registrations name.
    pub fn set_registrations(
        &mut self,
        registered: BTreeMap<i32, (BrokerEndpoint, i64)>,
    ) -> BrokerChanges {
        let epochs = registered.iter().map(|(id, (_, epoch))| (*id, *epoch)).collect();
        self.endpoints = registered
            .into_iter()
            .map(|(id, (endpoint, _))| (id, endpoint))
            .collect();
        self.set_live_brokers(epochs)
    }

    /// The epoch of broker `id`'s registration; -1 when it is not known.
    pub fn broker_epoch_of(&self, id: i32) -> i64 {
        if id == self.broker_id {
            return self.role.broker_epoch;
        }
        self.live.get(&id).copied().unwrap_or(-1)
    }

    /// Takes `registered` (broker id to epoch, as `/brokers/ids` says now)
    /// as the live brokers and says who joined, left and bounced. A broker
    /// that registered again with a new epoch before this controller saw it
    /// go counts as joined: it needs the whole state again, stamped with its
    /// new epoch (KIP-380's bounced brokers). A shutdown in progress ends
    /// when its broker leaves or joins again.
    pub fn set_live_brokers(&mut self, registered: BTreeMap<i32, i64>) -> BrokerChanges {
        let bounced: Vec<i32> = registered
            .iter()
            .filter(|(id, epoch)| {
                **id != self.broker_id && self.live.get(id).is_some_and(|known| known != *epoch)
            })
            .map(|(id, _)| *id)
            .collect();
        let mut joined: Vec<i32> = registered
            .keys()
            .copied()
            .filter(|id| !self.live.contains_key(id))
            .collect();
        joined.extend(bounced.iter().copied());
        let left: Vec<i32> = self
            .live
            .keys()
            .copied()
            .filter(|id| !registered.contains_key(id))
            .collect();
        self.shutting_down
            .retain(|id| registered.contains_key(id) && !joined.contains(id));
        self.live = registered;
        BrokerChanges {
            joined,
            left,
            bounced,
        }
    }

    pub fn is_live(&self, id: i32) -> bool {
        self.live.contains_key(&id)
    }

    pub fn shutting_down(&self) -> BTreeSet<i32> {
        self.shutting_down.clone()
    }

    /// Broker `id` asked for a controlled shutdown.
    pub fn begin_shutdown(&mut self, id: i32) {
        self.shutting_down.insert(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epochs(pairs: &[(i32, i64)]) -> BTreeMap<i32, i64> {
        pairs.iter().copied().collect()
    }

    #[test]
    fn joins_leaves_and_bounces_are_told_apart() {
        let mut context = ControllerContext::new(0, 10);
        context.activate(1, 0);
        let first = context.set_live_brokers(epochs(&[(0, 10), (1, 20), (2, 30)]));
        assert_eq!(first.joined, vec![0, 1, 2]);
        assert!(first.left.is_empty() && first.bounced.is_empty());
        // Broker 1 left; broker 2 registered again before it was seen go.
        let second = context.set_live_brokers(epochs(&[(0, 10), (2, 31)]));
        assert_eq!(second.left, vec![1]);
        assert_eq!(second.bounced, vec![2]);
        assert_eq!(second.joined, vec![2]);
        assert_eq!(context.broker_epoch_of(2), 31);
        assert_eq!(context.broker_epoch_of(1), -1);
        assert_eq!(context.broker_epoch_of(0), 10);
    }

    #[test]
    fn a_shutdown_ends_when_its_broker_leaves_or_comes_back() {
        let mut context = ControllerContext::new(0, 10);
        context.activate(1, 0);
        context.set_live_brokers(epochs(&[(0, 10), (1, 20), (2, 30)]));
        context.begin_shutdown(1);
        context.begin_shutdown(2);
        context.set_live_brokers(epochs(&[(0, 10), (1, 20), (2, 30)]));
        assert_eq!(context.shutting_down(), BTreeSet::from([1, 2]));
        // 1 left; 2 is back with a new registration.
        context.set_live_brokers(epochs(&[(0, 10), (2, 31)]));
        assert!(context.shutting_down().is_empty());
    }

    fn topic(name: &str) -> TopicMetadata {
        TopicMetadata {
            name: name.into(),
            topic_id: [1; 16],
            is_internal: false,
            partitions: BTreeMap::new(),
            configs: BTreeMap::new(),
            config: Default::default(),
        }
    }

    fn endpoint(id: i32) -> BrokerEndpoint {
        BrokerEndpoint {
            id,
            host: "127.0.0.1".into(),
            port: 9092 + id as u16,
            rack: None,
            listeners: Vec::new(),
        }
    }

    #[test]
    fn registrations_give_the_endpoints_and_the_epochs() {
        let mut context = ControllerContext::new(0, 10);
        context.activate(1, 0);
        let registered = [(0, (endpoint(0), 10)), (1, (endpoint(1), 20))].into_iter().collect();
        let changes = context.set_registrations(registered);
        assert_eq!(changes.joined, vec![0, 1]);
        assert_eq!(context.live_brokers(), vec![0, 1]);
        assert_eq!(context.endpoints().get(&1).map(|b| b.port), Some(9093));
        assert_eq!(context.broker_epoch_of(1), 20);
        let changes = context.set_registrations([(0, (endpoint(0), 10))].into_iter().collect());
        assert_eq!(changes.left, vec![1]);
        assert!(!context.endpoints().contains_key(&1));
    }

    #[test]
    fn a_resignation_drops_the_topics_and_a_new_term_starts_empty() {
        let mut context = ControllerContext::new(0, 10);
        context.activate(1, 0);
        context.put_topic(topic("a"));
        context.put_topic(topic("b"));
        assert_eq!(context.topics().count(), 2);
        assert!(context.remove_topic("b").is_some());
        assert!(context.topic("b").is_none());
        context.resign();
        assert!(!context.role.active);
        assert!(context.topic("a").is_none());
        context.activate(2, 1);
        context.put_topic(topic("c"));
        context.activate(3, 2);
        assert_eq!(context.topics().count(), 0);
    }

    #[test]
    fn a_new_term_forgets_the_last_one() {
        let mut context = ControllerContext::new(0, 10);
        context.activate(1, 0);
        context.set_live_brokers(epochs(&[(0, 10), (1, 20)]));
        context.begin_shutdown(1);
        context.deletions.enqueue("t", [1]);
        context.role.active = false;
        context.activate(3, 2);
        assert_eq!(context.role.controller_epoch, 3);
        assert_eq!(context.role.epoch_zk_version, 2);
        assert!(!context.is_live(1));
        assert!(context.shutting_down().is_empty());
        assert!(context.deletions.waiting_for("t").is_empty());
        // Everything registered counts as joined in the new term.
        let changes = context.set_live_brokers(epochs(&[(0, 10), (1, 20)]));
        assert_eq!(changes.joined, vec![0, 1]);
    }
}
