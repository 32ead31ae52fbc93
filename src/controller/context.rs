//! Kafka's ControllerContext, the part the controller owns alone: its role
//! and epoch, the live brokers with their epochs, the brokers in a
//! controlled shutdown and the topic deletions in progress. Plain data; the
//! controller actor holds one and changes it between store reads and writes.
//!
//! Topic assignments, leaders and ISRs are still read from the broker's
//! metadata cache, which the active controller updates as it decides.

use std::collections::{BTreeMap, BTreeSet};

use super::deletion::TopicDeletions;

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
