//! The storage engine: partition logs made of segments, their indexes, the
//! checkpoint files and crash recovery, in Kafka's on-disk formats.
//!
//! Architecture invariant: nothing here knows about actix, sockets or the
//! Kafka request layer. Only the log manager (`actors/log_manager/`) calls into it for data files,
//! and it reads no clock: time comes in as `now_ms`.

pub mod batch;
pub mod checkpoint;
pub mod cleaner;
pub mod config;
pub mod error;
pub mod index;
pub mod leader_epoch;
pub mod log;
pub mod log_dir;
pub mod partition_metadata;
pub mod producer_state;
pub mod records;
pub mod segment;
#[cfg(any(test, feature = "internals"))]
pub mod testing;

pub use config::LogConfig;
pub use error::LogError;
pub use leader_epoch::EpochEndOffset;
pub use log::{
    AppendInfo, LoadOptions, LoadReport, PartitionLog, ReadInfo, RetentionReport, RollFlush,
};
pub use segment::FileRegion;
