//! The one way a producer's records enter a partition (Kafka's
//! `ReplicaManager.appendRecords`): a client's Produce and an extension's
//! `ExtensionContext::produce` both call `ProducePath::append`, so both get
//! the same checks (required acks, internal topics, empty records, a
//! partition this broker leads), the same `min.insync.replicas` and the same
//! acks, and the same authorization (WRITE on the topic, checked first as
//! Kafka's `KafkaApis.handleProduceRequest` does); quotas and transactions
//! add their check here once.
//! Internal topics are always refused here: their coordinators append to
//! their own partitions directly.

use std::future::Future;
use std::pin::Pin;

use kafka_protocol::error::ResponseError;

use super::*;
use crate::cluster::{is_internal_topic, MetadataCache};
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::{AclAuthorizer, Session};

/// A produce's `acks`, as the wire says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequiredAcks(pub i16);

impl RequiredAcks {
    pub const ALL: RequiredAcks = RequiredAcks(-1);
}

/// Why a partition's append was refused, each with Kafka's code.
#[derive(Debug, thiserror::Error)]
pub enum ProduceError {
    /// The principal may not WRITE the topic (TOPIC_AUTHORIZATION_FAILED).
    #[error("not authorized to write to topic {0}")]
    TopicAuthorizationFailed(String),
    /// acks other than -1, 0 or 1 (INVALID_REQUIRED_ACKS).
    #[error("acks={0} is not -1, 0 or 1")]
    InvalidRequiredAcks(i16),
    /// Kafka: "Cannot append to internal topic" (INVALID_TOPIC_EXCEPTION).
    #[error("cannot append to internal topic {0}")]
    InternalTopic(String),
    /// No records, or none at all (CORRUPT_MESSAGE).
    #[error("the produce carries no records")]
    NoRecords,
    /// This broker does not lead the partition: the code says whether it is
    /// led elsewhere, leaderless, or unknown.
    #[error("this broker does not serve {tp} (error {code})")]
    NotServed { tp: TopicPartition, code: i16 },
    /// The partition actor refused or failed the append.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// The partition actor stopped (a restart or a leadership move) before
    /// it answered (NOT_LEADER_OR_FOLLOWER: the client retries).
    #[error("the partition actor stopped before answering")]
    PartitionStopped,
}

impl ProduceError {
    pub fn code(&self) -> i16 {
        match self {
            ProduceError::TopicAuthorizationFailed(_) => {
                ResponseError::TopicAuthorizationFailed.code()
            }
            ProduceError::InvalidRequiredAcks(_) => ResponseError::InvalidRequiredAcks.code(),
            ProduceError::InternalTopic(_) => ResponseError::InvalidTopicException.code(),
            ProduceError::NoRecords => ResponseError::CorruptMessage.code(),
            ProduceError::NotServed { code, .. } => *code,
            ProduceError::Partition(e) => e.code(),
            ProduceError::PartitionStopped => ResponseError::NotLeaderOrFollower.code(),
        }
    }
}

/// An append enqueued at its partition actor, not yet answered.
pub type PendingAppend = Pin<Box<dyn Future<Output = Result<Produced, ProduceError>>>>;

/// What an append needs to find its partition and its rules.
#[derive(Clone)]
pub struct ProducePath {
    pub partitions: PartitionRegistry,
    pub metadata: MetadataCache,
    /// `None`: no authorizer, every write allowed.
    pub authorizer: Option<Arc<AclAuthorizer>>,
    /// Where appends are counted (Kafka's BrokerTopicMetrics).
    pub metrics: Arc<crate::metrics::BrokerMetrics>,
}

impl ProducePath {
    /// Check and enqueue `records` for `tp`. The append is at its partition
    /// actor when this returns (a fresh `Addr` clone never parks the
    /// sender), so appends called in order reach the log in that order; the
    /// future only waits for the answer.
    pub fn append(
        &self,
        session: &Session,
        tp: TopicPartition,
        records: Option<Bytes>,
        acks: RequiredAcks,
        timeout: Duration,
    ) -> PendingAppend {
        self.append_in_epoch(session, tp, records, acks, timeout, -1)
    }

    /// As `append`, refused unless this broker leads `tp` in
    /// `current_leader_epoch` (-1: in any epoch, as a client's Produce).
    pub fn append_in_epoch(
        &self,
        session: &Session,
        tp: TopicPartition,
        records: Option<Bytes>,
        acks: RequiredAcks,
        timeout: Duration,
        current_leader_epoch: i32,
    ) -> PendingAppend {
        let stats = &self.metrics.topics;
        // Kafka's ReplicaManager.appendToLocalLog: every append asked for
        // counts, including refused ones.
        stats.add(&tp.topic, 1, |s| &s.total_produce_requests);
        let refused = |e: ProduceError| -> PendingAppend { Box::pin(std::future::ready(Err(e))) };
        if !self.may_write(session, &tp.topic) {
            return refused(ProduceError::TopicAuthorizationFailed(tp.topic));
        }
        if !matches!(acks.0, -1..=1) {
            return refused(ProduceError::InvalidRequiredAcks(acks.0));
        }
        if is_internal_topic(&tp.topic) {
            return refused(ProduceError::InternalTopic(tp.topic));
        }
        let Some(records) = records.filter(|r| !r.is_empty()) else {
            return refused(ProduceError::NoRecords);
        };
        let Some(handle) = self.partitions.get(&tp) else {
            let code = self.missing_partition(&tp);
            return refused(ProduceError::NotServed { tp, code });
        };
        // The leader checks its own ISR against its min.insync.replicas:
        // its view is the one acks=all waits on.
        let required = if acks == RequiredAcks::ALL {
            Acks::All { timeout }
        } else {
            Acks::Leader
        };
        let bytes = records.len() as u64;
        let append = handle.addr.send(AppendRecords {
            records,
            acks: required,
            current_leader_epoch,
        });
        let metrics = self.metrics.clone();
        let topic = tp.topic;
        Box::pin(async move {
            let stats = &metrics.topics;
            match append.await {
                Ok(Ok(produced)) => {
                    // A duplicate an idempotent producer retried was not
                    // appended again.
                    if !produced.info.duplicate {
                        stats.add(&topic, produced.info.record_count, |s| &s.messages_in);
                        stats.add(&topic, bytes, |s| &s.bytes_in);
                    }
                    Ok(produced)
                }
                Ok(Err(e)) => {
                    // As Kafka: what the log refused is a failed produce;
                    // a partition led elsewhere is the client's to retry.
                    if e.code() != ResponseError::NotLeaderOrFollower.code() {
                        stats.add(&topic, 1, |s| &s.failed_produce_requests);
                    }
                    Err(ProduceError::Partition(e))
                }
                Err(_) => Err(ProduceError::PartitionStopped),
            }
        })
    }

    /// WRITE on the topic (always, without an authorizer).
    pub fn may_write(&self, session: &Session, topic: &str) -> bool {
        self.authorizer
            .as_ref()
            .is_none_or(|a| a.authorize(session, AclOperation::Write, ResourceType::Topic, topic))
    }

    /// The error for a partition this broker does not serve: led elsewhere
    /// (NOT_LEADER_OR_FOLLOWER, so clients refresh their metadata), without
    /// a leader (LEADER_NOT_AVAILABLE), or unknown.
    pub fn missing_partition(&self, tp: &TopicPartition) -> i16 {
        let leader = self.metadata.read(|m| {
            m.topics
                .get(&tp.topic)
                .and_then(|t| t.partitions.get(&tp.partition))
                .map(|p| p.leader)
        });
        match leader {
            Some(leader) if leader < 0 => ResponseError::LeaderNotAvailable.code(),
            Some(_) => ResponseError::NotLeaderOrFollower.code(),
            None => ResponseError::UnknownTopicOrPartition.code(),
        }
    }
}
