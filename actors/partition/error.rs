//! The one error every partition-actor message answers with, and its
//! Kafka code: a replication rule refused the request, or the log under
//! the partition failed.

use kafka_protocol::error::ResponseError;

use crate::actors::log_manager::LogManagerError;
use crate::replication::ReplicationError;
use crate::storage::LogError;

#[derive(Debug, thiserror::Error)]
pub enum PartitionError {
    /// Leadership, ISR or leader epoch (`src/replication.rs`).
    #[error(transparent)]
    Replication(#[from] ReplicationError),
    /// The log under the partition: its shard, its files, or offline.
    #[error(transparent)]
    Log(#[from] LogManagerError),
    /// The partition actor went away (a restart or a stop) before it
    /// answered: a client retries, as after a leadership move.
    #[error("the partition actor stopped before it answered")]
    Stopped,
}

impl From<LogError> for PartitionError {
    fn from(e: LogError) -> Self {
        PartitionError::Log(LogManagerError::Log(e))
    }
}

impl PartitionError {
    /// Kafka's error code for this error.
    pub fn code(&self) -> i16 {
        match self {
            PartitionError::Replication(e) => e.code(),
            PartitionError::Log(e) => e.code(),
            PartitionError::Stopped => ResponseError::NotLeaderOrFollower.code(),
        }
    }

    /// The log went offline under the partition (a disk fault).
    pub fn is_offline(&self) -> bool {
        matches!(
            self,
            PartitionError::Log(LogManagerError::PartitionOffline { .. })
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topic_partition::TopicPartition;

    #[test]
    fn each_kind_keeps_the_code_of_what_it_wraps() {
        let fenced = ReplicationError::FencedLeaderEpoch {
            requested: 1,
            current: 2,
        };
        assert_eq!(PartitionError::from(fenced.clone()).code(), fenced.code());
        let offline = LogManagerError::PartitionOffline {
            tp: TopicPartition::new("t", 0),
            reason: "disk".into(),
        };
        assert_eq!(
            PartitionError::from(offline).code(),
            ResponseError::KafkaStorageError.code()
        );
        assert_eq!(
            PartitionError::Stopped.code(),
            ResponseError::NotLeaderOrFollower.code()
        );
    }
}
