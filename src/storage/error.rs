//! The storage layer's error type. Operating errors (disk, corruption, bad
//! input) are values; each maps to one Kafka error code at the API edge.

use std::io;
use std::path::{Path, PathBuf};

use kafka_protocol::error::ResponseError;

use super::batch::BatchError;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("I/O error on {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "offset {offset} is out of range: the log holds [{log_start_offset}, {log_end_offset})"
    )]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    #[error("offset {offset} does not follow the log end offset {expected}")]
    NonMonotonicOffset { offset: i64, expected: i64 },
    #[error(transparent)]
    InvalidBatch(#[from] BatchError),
    /// An idempotent producer's batch refused (epoch or sequence).
    #[error(transparent)]
    Producer(#[from] ProducerStateError),
    #[error("log dir {path} is in use by another process (its .lock is held)")]
    DirInUse { path: PathBuf },
    /// The log belongs to another topic of the same name (one deleted and
    /// created again): Kafka's INCONSISTENT_TOPIC_ID.
    #[error("the log in {path} belongs to topic id {found}, not {expected}")]
    InconsistentTopicId {
        path: PathBuf,
        expected: String,
        found: String,
    },
    #[error("checkpoint {path} is malformed at line {line}: {reason}")]
    Checkpoint {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

impl LogError {
    pub fn io(path: &Path, source: io::Error) -> LogError {
        LogError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the partition can go on serving after this error. Disk and
    /// corruption errors take it offline; bad input from a client does not.
    pub fn is_fatal_for_partition(&self) -> bool {
        matches!(self, LogError::Io { .. } | LogError::Corrupt { .. })
    }

    /// Kafka's error code for this error (one per kind; disk faults are
    /// KAFKA_STORAGE_ERROR).
    pub fn code(&self) -> i16 {
        match self {
            LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange.code(),
            LogError::InvalidBatch(BatchError::TooLarge { .. }) => {
                ResponseError::MessageTooLarge.code()
            }
            LogError::InvalidBatch(BatchError::UnsupportedLegacyCompression { .. }) => {
                ResponseError::UnsupportedCompressionType.code()
            }
            // Kafka's InvalidRecordException: well-formed entries whose
            // records do not add up; damaged bytes stay CORRUPT_MESSAGE.
            LogError::InvalidBatch(
                BatchError::Empty
                | BatchError::InvalidRecordCount { .. }
                | BatchError::MissingKey { .. },
            ) => ResponseError::InvalidRecord.code(),
            LogError::InvalidBatch(BatchError::InvalidTimestamp { .. }) => {
                ResponseError::InvalidTimestamp.code()
            }
            LogError::InvalidBatch(_) => ResponseError::CorruptMessage.code(),
            LogError::NonMonotonicOffset { .. } => ResponseError::InvalidRequest.code(),
            LogError::Producer(ProducerStateError::InvalidProducerEpoch { .. }) => {
                ResponseError::InvalidProducerEpoch.code()
            }
            LogError::Producer(
                ProducerStateError::OutOfOrderSequence { .. }
                | ProducerStateError::InvalidSequenceForNewEpoch { .. },
            ) => ResponseError::OutOfOrderSequenceNumber.code(),
            LogError::InconsistentTopicId { .. } => ResponseError::InconsistentTopicId.code(),
            LogError::Io { .. }
            | LogError::Corrupt { .. }
            | LogError::Checkpoint { .. }
            | LogError::DirInUse { .. } => ResponseError::KafkaStorageError.code(),
        }
    }
}

/// Why a producer's batch is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerStateError {
    #[error("epoch {epoch} of producer {producer_id} is older than its current epoch {current}")]
    InvalidProducerEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },
    #[error(
        "out of order sequence number for producer {producer_id}: {first_sequence} (incoming), \
         {last_sequence} (current end)"
    )]
    OutOfOrderSequence {
        producer_id: i64,
        first_sequence: i32,
        last_sequence: i32,
    },
    #[error(
        "invalid sequence number {first_sequence} for new epoch {epoch} of producer {producer_id}"
    )]
    InvalidSequenceForNewEpoch {
        producer_id: i64,
        epoch: i16,
        first_sequence: i32,
    },
}
