//! Kafka's TopicDeletionManager as a pure type: which brokers must still
//! delete their replicas of each topic being deleted. A replica on a
//! broker that is offline, or that did not answer its StopReplica, is
//! "ineligible": the deletion waits for it, and resumes when the broker
//! is back or on the retry timer. A topic's deletion completes (its
//! znodes may go) only once every broker holding a replica has deleted
//! it. Brokers that deleted already are not asked again.
//!
//! The marks in `/admin/delete_topics` are what survives a controller
//! failover: a new controller starts every deletion over from them, as
//! Kafka's does (`initializeControllerContext`).

use std::collections::{BTreeMap, BTreeSet};

/// One broker's replicas of a topic being deleted (Kafka's replica states
/// during deletion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaDeletion {
    /// Not asked yet.
    Pending,
    /// StopReplica with deletion sent; no answer yet.
    Started,
    /// Deleted there.
    Successful,
    /// Offline when the deletion started, or the deletion failed there:
    /// asked again when the broker is back (or on the retry timer).
    Ineligible,
}

/// The deletions in progress, by topic name.
#[derive(Debug, Default, Clone)]
pub struct TopicDeletions {
    topics: BTreeMap<String, BTreeMap<i32, ReplicaDeletion>>,
}

impl TopicDeletions {
    /// Starts tracking `topic`'s deletion; `holders` are the brokers with a
    /// replica of it. A deletion tracked already keeps what it knows (and
    /// learns of holders it did not know).
    pub fn enqueue(&mut self, topic: &str, holders: impl IntoIterator<Item = i32>) {
        let brokers = self.topics.entry(topic.to_string()).or_default();
        for broker in holders {
            brokers.entry(broker).or_insert(ReplicaDeletion::Pending);
        }
    }

    /// The brokers to send StopReplica with deletion now: every holder
    /// that has not deleted yet and is live (`live`), marked Started. The
    /// holders that are not live become Ineligible.
    pub fn start(&mut self, topic: &str, live: impl Fn(i32) -> bool) -> Vec<i32> {
        let Some(brokers) = self.topics.get_mut(topic) else {
            return Vec::new();
        };
        let mut asked = Vec::new();
        for (&broker, state) in brokers.iter_mut() {
            if *state == ReplicaDeletion::Successful {
                continue;
            }
            if live(broker) {
                *state = ReplicaDeletion::Started;
                asked.push(broker);
            } else {
                *state = ReplicaDeletion::Ineligible;
            }
        }
        asked
    }

    /// `broker` answered (or failed to answer) its StopReplica for
    /// `topic`: deleted, or ineligible until asked again.
    pub fn answered(&mut self, topic: &str, broker: i32, deleted: bool) {
        if let Some(state) = self
            .topics
            .get_mut(topic)
            .and_then(|brokers| brokers.get_mut(&broker))
        {
            *state = if deleted {
                ReplicaDeletion::Successful
            } else {
                ReplicaDeletion::Ineligible
            };
        }
    }

    /// Whether every holder of `topic`'s replicas has deleted them (an
    /// untracked topic has nothing left to wait for).
    pub fn is_complete(&self, topic: &str) -> bool {
        self.topics.get(topic).is_none_or(|brokers| {
            brokers
                .values()
                .all(|state| *state == ReplicaDeletion::Successful)
        })
    }

    /// The holders of `topic`'s replicas that have not deleted them.
    pub fn waiting_for(&self, topic: &str) -> BTreeSet<i32> {
        self.topics
            .get(topic)
            .map(|brokers| {
                brokers
                    .iter()
                    .filter(|(_, state)| **state != ReplicaDeletion::Successful)
                    .map(|(&broker, _)| broker)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `broker`'s state in `topic`'s deletion.
    #[cfg(test)]
    pub fn state(&self, topic: &str, broker: i32) -> Option<ReplicaDeletion> {
        self.topics.get(topic)?.get(&broker).copied()
    }

    /// The deletion of `topic` is over (its znodes are gone): forget it.
    pub fn complete(&mut self, topic: &str) {
        self.topics.remove(topic);
    }

    /// A new controller term: nothing carries over (the marks in the store
    /// are the truth), as Kafka's controller resets its context.
    pub fn clear(&mut self) {
        self.topics.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_completes_once_every_holder_has_deleted() {
        let mut deletions = TopicDeletions::default();
        deletions.enqueue("t", [0, 1, 2]);
        assert!(!deletions.is_complete("t"));
        assert_eq!(deletions.start("t", |_| true), vec![0, 1, 2]);
        assert_eq!(deletions.state("t", 1), Some(ReplicaDeletion::Started));
        deletions.answered("t", 0, true);
        deletions.answered("t", 1, true);
        assert!(!deletions.is_complete("t"));
        assert_eq!(deletions.waiting_for("t"), BTreeSet::from([2]));
        deletions.answered("t", 2, true);
        assert!(deletions.is_complete("t"));
        deletions.complete("t");
        assert_eq!(deletions.state("t", 0), None);
    }

    #[test]
    fn an_offline_holder_is_ineligible_and_asked_again_when_back_and_the_others_are_not() {
        let mut deletions = TopicDeletions::default();
        deletions.enqueue("t", [0, 1, 2]);
        let live = |b: i32| b != 2;
        assert_eq!(deletions.start("t", live), vec![0, 1]);
        assert_eq!(deletions.state("t", 2), Some(ReplicaDeletion::Ineligible));
        deletions.answered("t", 0, true);
        deletions.answered("t", 1, true);
        assert!(!deletions.is_complete("t"));
        assert_eq!(deletions.waiting_for("t"), BTreeSet::from([2]));
        // Broker 2 is back: only it is asked.
        assert_eq!(deletions.start("t", |_| true), vec![2]);
        deletions.answered("t", 2, true);
        assert!(deletions.is_complete("t"));
    }

    #[test]
    fn a_failed_answer_makes_the_holder_ineligible_until_the_next_attempt() {
        let mut deletions = TopicDeletions::default();
        deletions.enqueue("t", [0, 1]);
        deletions.start("t", |_| true);
        deletions.answered("t", 0, true);
        deletions.answered("t", 1, false);
        assert_eq!(deletions.state("t", 1), Some(ReplicaDeletion::Ineligible));
        assert!(!deletions.is_complete("t"));
        assert_eq!(deletions.start("t", |_| true), vec![1]);
    }

    #[test]
    fn enqueueing_again_keeps_what_is_known_and_adds_new_holders() {
        let mut deletions = TopicDeletions::default();
        deletions.enqueue("t", [0, 1]);
        deletions.start("t", |_| true);
        deletions.answered("t", 0, true);
        deletions.enqueue("t", [0, 1, 3]);
        assert_eq!(deletions.state("t", 0), Some(ReplicaDeletion::Successful));
        assert_eq!(deletions.state("t", 3), Some(ReplicaDeletion::Pending));
        assert_eq!(deletions.start("t", |_| true), vec![1, 3]);
    }

    #[test]
    fn an_untracked_topic_waits_for_nothing_and_a_new_term_forgets_everything() {
        let mut deletions = TopicDeletions::default();
        assert!(deletions.is_complete("none"));
        assert!(deletions.start("none", |_| true).is_empty());
        deletions.enqueue("t", [0]);
        deletions.clear();
        assert!(deletions.is_complete("t"));
    }
}
