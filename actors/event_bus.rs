//! The event bus: typed broker events (topics created, deleted or
//! reconfigured, leadership gained or lost, high watermarks advanced,
//! groups rebalanced or emptied, brokers registered or gone, group
//! flushes) fanned out to
//! every actor that subscribed to their kind. Built-in actors publish here,
//! and extensions and built-in actors subscribe alike; the ZooKeeper
//! session's watches are meant to arrive here as the same events.
//!
//! Not an actor: publishing is a `try_send` to each subscriber's mailbox,
//! so a publisher never waits. A subscriber whose mailbox is full misses
//! that event (counted in `dropped`, logged at debug): events say what
//! changed, and the next one of a kind carries the latest value. A
//! subscriber that is gone is removed. It never blocks and never holds an
//! event.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use actix::prelude::*;

pub use crate::replication::CommittedTotals;
use crate::topic_partition::TopicPartition;

/// Something that happened in the broker.
#[derive(Debug, Clone, PartialEq, Eq, Message)]
#[rtype(result = "()")]
pub enum BrokerEvent {
    /// A topic was created (on this broker's view of the cluster).
    TopicCreated {
        /// The topic's name.
        topic: String,
        /// Its partition count.
        partitions: i32,
    },
    /// A topic was deleted; its committed offsets are tombstoned.
    TopicDeleted {
        /// The topic's name.
        topic: String,
        /// The partition count it had.
        partitions: i32,
    },
    /// A topic's dynamic config changed (AlterConfigs).
    TopicConfigChanged {
        /// The topic's name.
        topic: String,
    },
    /// This broker now leads `tp`.
    LeadershipGained {
        /// The partition.
        tp: TopicPartition,
        /// The epoch this leadership runs in.
        leader_epoch: i32,
    },
    /// This broker no longer leads `tp` (deletion, shutdown, a new leader).
    LeadershipLost {
        /// The partition.
        tp: TopicPartition,
    },
    /// Records became committed (readable by consumers): the new high
    /// watermark, how many records and bytes moved below it, and the
    /// running totals of this leadership. A subscriber that may drop
    /// events (a full mailbox) counts from `committed`, not by summing
    /// `records` and `bytes`.
    HighWatermarkAdvanced {
        /// The partition.
        tp: TopicPartition,
        /// The new high watermark.
        high_watermark: i64,
        /// Records newly below it.
        records: i64,
        /// Bytes newly below it.
        bytes: u64,
        /// What this leadership has committed so far.
        committed: CommittedTotals,
    },
    /// A group commit fsynced `tp` up to `recovery_point`, answering
    /// `produces` appends that waited for it (`flush.messages`).
    LogFlushed {
        /// The partition.
        tp: TopicPartition,
        /// Offsets below it are on disk.
        recovery_point: i64,
        /// Produce requests the flush answered.
        produces: usize,
    },
    /// A rebalance completed: the group is Stable in `generation_id`.
    GroupRebalanced {
        /// The group.
        group_id: String,
        /// Its new generation.
        generation_id: i32,
        /// Members in that generation.
        members: usize,
    },
    /// The group's last member left; it is Empty.
    GroupEmptied {
        /// The group.
        group_id: String,
    },
    /// A broker joined the live brokers this broker knows (an
    /// UpdateMetadata from the controller lists it; this broker itself too).
    BrokerRegistered {
        /// Its id.
        broker_id: i32,
    },
    /// A broker left the live brokers this broker knows (an UpdateMetadata
    /// from the controller no longer lists it: its session ended).
    BrokerLeft {
        /// Its id.
        broker_id: i32,
    },
}

/// The kinds of `BrokerEvent`, for subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // one per `BrokerEvent` variant, named alike
pub enum EventKind {
    TopicCreated,
    TopicDeleted,
    TopicConfigChanged,
    LeadershipGained,
    LeadershipLost,
    HighWatermarkAdvanced,
    GroupRebalanced,
    GroupEmptied,
    BrokerRegistered,
    BrokerLeft,
    LogFlushed,
}

impl EventKind {
    /// Every kind, for a subscriber that wants them all.
    pub const ALL: [EventKind; 11] = [
        EventKind::TopicCreated,
        EventKind::TopicDeleted,
        EventKind::TopicConfigChanged,
        EventKind::LeadershipGained,
        EventKind::LeadershipLost,
        EventKind::HighWatermarkAdvanced,
        EventKind::GroupRebalanced,
        EventKind::GroupEmptied,
        EventKind::BrokerRegistered,
        EventKind::BrokerLeft,
        EventKind::LogFlushed,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl BrokerEvent {
    /// Which kind of event this is.
    pub fn kind(&self) -> EventKind {
        match self {
            BrokerEvent::TopicCreated { .. } => EventKind::TopicCreated,
            BrokerEvent::TopicDeleted { .. } => EventKind::TopicDeleted,
            BrokerEvent::TopicConfigChanged { .. } => EventKind::TopicConfigChanged,
            BrokerEvent::LeadershipGained { .. } => EventKind::LeadershipGained,
            BrokerEvent::LeadershipLost { .. } => EventKind::LeadershipLost,
            BrokerEvent::HighWatermarkAdvanced { .. } => EventKind::HighWatermarkAdvanced,
            BrokerEvent::GroupRebalanced { .. } => EventKind::GroupRebalanced,
            BrokerEvent::GroupEmptied { .. } => EventKind::GroupEmptied,
            BrokerEvent::BrokerRegistered { .. } => EventKind::BrokerRegistered,
            BrokerEvent::BrokerLeft { .. } => EventKind::BrokerLeft,
            BrokerEvent::LogFlushed { .. } => EventKind::LogFlushed,
        }
    }
}

struct Subscriber {
    recipient: Recipient<BrokerEvent>,
    kinds: u32,
}

#[derive(Default)]
struct Subscribers {
    list: RwLock<Vec<Subscriber>>,
    /// Bitwise OR of every subscriber's kinds: a publish nobody listens to
    /// costs one atomic load.
    wanted: AtomicU64,
    dropped: AtomicU64,
}

/// A handle on the bus; cheap to clone, shared by every publisher.
#[derive(Clone, Default)]
pub struct EventBus(Arc<Subscribers>);

impl EventBus {
    /// A bus with no subscribers.
    pub fn new() -> Self {
        EventBus::default()
    }

    /// Deliver every future event of `kinds` to `recipient`.
    pub fn subscribe(&self, recipient: Recipient<BrokerEvent>, kinds: &[EventKind]) {
        let mask = kinds.iter().fold(0, |m, k| m | k.bit());
        let mut list = match self.0.list.write() {
            Ok(list) => list,
            Err(poisoned) => poisoned.into_inner(),
        };
        list.push(Subscriber {
            recipient,
            kinds: mask,
        });
        self.0.wanted.fetch_or(u64::from(mask), Ordering::SeqCst);
    }

    /// Whether anyone listens to `kind` (publishers may skip building the
    /// event otherwise).
    pub fn wants(&self, kind: EventKind) -> bool {
        self.0.wanted.load(Ordering::Relaxed) & u64::from(kind.bit()) != 0
    }

    /// Fan `event` out without waiting.
    pub fn publish(&self, event: BrokerEvent) {
        let bit = event.kind().bit();
        if self.0.wanted.load(Ordering::Relaxed) & u64::from(bit) == 0 {
            return;
        }
        let mut gone = false;
        {
            let list = match self.0.list.read() {
                Ok(list) => list,
                Err(poisoned) => poisoned.into_inner(),
            };
            for subscriber in list.iter().filter(|s| s.kinds & bit != 0) {
                match subscriber.recipient.try_send(event.clone()) {
                    Ok(()) => {}
                    Err(SendError::Full(_)) => {
                        self.0.dropped.fetch_add(1, Ordering::Relaxed);
                        log::debug!("an event subscriber is behind; {event:?} dropped for it");
                    }
                    Err(SendError::Closed(_)) => gone = true,
                }
            }
        }
        if gone {
            self.remove_closed();
        }
    }

    /// Events not delivered because a subscriber's mailbox was full.
    pub fn dropped(&self) -> u64 {
        self.0.dropped.load(Ordering::Relaxed)
    }

    /// How many subscriptions there are.
    pub fn subscribers(&self) -> usize {
        match self.0.list.read() {
            Ok(list) => list.len(),
            Err(poisoned) => poisoned.into_inner().len(),
        }
    }

    fn remove_closed(&self) {
        let mut list = match self.0.list.write() {
            Ok(list) => list,
            Err(poisoned) => poisoned.into_inner(),
        };
        list.retain(|s| s.recipient.connected());
        let wanted = list.iter().fold(0u32, |m, s| m | s.kinds);
        self.0.wanted.store(u64::from(wanted), Ordering::SeqCst);
    }
}
