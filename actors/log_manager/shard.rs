//! A log shard: one blocking thread (an actix `SyncArbiter` of size one) that
//! owns a fixed subset of the partition logs and runs every file operation on
//! them. A partition always maps to the same shard, so its appends keep their
//! order; shards run in parallel with each other and off the async reactors.
//!
//! It never lets a disk error or a panic on one partition escape: the
//! partition is marked offline with a log line and the shard keeps serving the
//! others. Every message arrives through a `ShardLink` (`mod.rs`), wrapped in
//! `Permitted` with its place in the shard's in-flight window, from the log
//! manager or straight from a partition actor.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use bytes::Bytes;

use crate::clock::SharedClock;
use crate::storage::cleaner::{CleanOutcome, CleanTask, Cleanable};
use crate::storage::{
    AppendInfo, LoadOptions, LoadReport, LogConfig, LogError, PartitionLog, ReadInfo,
    RetentionReport, RollFlush,
};
use crate::topic_partition::TopicPartition;

use super::LogManagerError;
use crate::actors::supervisor::panic_message;

/// A partition's offsets as its log knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsets {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub recovery_point: i64,
    /// The high watermark last checkpointed or reported (never above the
    /// log end offset).
    pub high_watermark: i64,
    /// The newest leader epoch in the log's epoch cache (-1: none).
    pub latest_leader_epoch: i32,
}

/// One partition's line in the checkpoint files of its log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointEntry {
    pub tp: TopicPartition,
    /// The `log.dirs` entry holding the partition.
    pub log_dir: PathBuf,
    pub recovery_point: i64,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// A compacted log's first dirty offset (`cleaner-offset-checkpoint`).
    pub cleaner_offset: Option<i64>,
}

enum PartitionState {
    Online(Box<PartitionLog>),
    /// Taken offline by a disk error or a panic; `ReopenOffline` retries
    /// loading it from what was last known.
    Offline {
        reason: String,
        dir: PathBuf,
        config: Box<LogConfig>,
        options: LoadOptions,
    },
}

pub struct LogShard {
    id: usize,
    logs: HashMap<TopicPartition, PartitionState>,
    clock: SharedClock,
    /// The shard's flusher thread: fsyncs after a roll run there, so this
    /// thread never stalls on them (`RollFlush`).
    flusher: Option<std::sync::mpsc::Sender<RollFlush>>,
    /// `CloseAll` ran: the clean-shutdown marker may follow, so no log is
    /// created or opened any more (it would be unflushed under the marker).
    closed: bool,
}

impl LogShard {
    pub fn new(id: usize, clock: SharedClock) -> Self {
        LogShard {
            id,
            logs: HashMap::new(),
            clock,
            flusher: None,
            closed: false,
        }
    }

    /// Run `op` on an online log. A fatal error or a panic takes the
    /// partition offline; client errors pass through untouched.
    fn with_log<T>(
        &mut self,
        tp: &TopicPartition,
        op: impl FnOnce(&mut PartitionLog, i64) -> Result<T, LogError>,
    ) -> Result<T, LogManagerError> {
        let now_ms = self.clock.now_ms();
        let log = match self.logs.get_mut(tp) {
            None => return Err(LogManagerError::UnknownPartition(tp.clone())),
            Some(PartitionState::Offline { reason, .. }) => {
                return Err(LogManagerError::PartitionOffline {
                    tp: tp.clone(),
                    reason: reason.clone(),
                })
            }
            Some(PartitionState::Online(log)) => log,
        };
        let failure = match catch_unwind(AssertUnwindSafe(|| op(log, now_ms))) {
            Ok(Ok(value)) => {
                if let Some(flush) = log.take_roll_flush() {
                    self.flush_after_roll(flush);
                }
                return Ok(value);
            }
            Ok(Err(e)) if !e.is_fatal_for_partition() => return Err(LogManagerError::Log(e)),
            Ok(Err(e)) => e.to_string(),
            Err(panic) => format!("panic: {}", panic_message(panic.as_ref())),
        };
        self.take_offline(tp, failure.clone());
        Err(LogManagerError::PartitionOffline {
            tp: tp.clone(),
            reason: failure,
        })
    }

    /// Hand a roll's fsyncs to the flusher thread (inline if it is gone).
    fn flush_after_roll(&mut self, flush: RollFlush) {
        let flush = match &self.flusher {
            Some(flusher) => match flusher.send(flush) {
                Ok(()) => return,
                Err(returned) => returned.0,
            },
            None => flush,
        };
        let result = flush.run();
        self.apply_roll_flushed(&flush.tp, flush.incarnation, flush.up_to, result);
    }

    fn apply_roll_flushed(
        &mut self,
        tp: &TopicPartition,
        incarnation: u64,
        up_to: i64,
        result: Result<(), LogError>,
    ) {
        if !matches!(self.logs.get(tp), Some(PartitionState::Online(_))) {
            // Deleted or offline meanwhile: nothing to move.
            return;
        }
        let _ = self.with_log(tp, |log, _| match result {
            Ok(()) => {
                log.roll_flushed(incarnation, up_to);
                Ok(())
            }
            // A failure for an earlier log of the same name is not this one's.
            Err(_) if log.incarnation() != incarnation => Ok(()),
            Err(e) => {
                log::error!("{tp}: the fsync after a roll failed");
                Err(e)
            }
        });
    }

    fn take_offline(&mut self, tp: &TopicPartition, reason: String) {
        log::error!(
            "log shard {}: partition {tp} is now offline: {reason}",
            self.id
        );
        let state = match self.logs.remove(tp) {
            Some(PartitionState::Online(log)) => PartitionState::Offline {
                reason,
                dir: log.dir().to_path_buf(),
                config: Box::new(log.config().clone()),
                options: LoadOptions {
                    recovery_point: log.recovery_point(),
                    log_start_offset: log.log_start_offset(),
                    clean_shutdown: false,
                    high_watermark: log.high_watermark(),
                    cleaner_offset: log.cleaner_checkpoint().unwrap_or(0),
                },
            },
            Some(PartitionState::Offline {
                dir,
                config,
                options,
                ..
            }) => PartitionState::Offline {
                reason,
                dir,
                config,
                options,
            },
            None => return,
        };
        self.logs.insert(tp.clone(), state);
    }

    /// Run a whole command with panics contained: a panic answers an error
    /// and the shard thread, with every other partition on it, lives on.
    fn guarded<T>(
        &mut self,
        what: &'static str,
        op: impl FnOnce(&mut Self) -> Result<T, LogManagerError>,
    ) -> Result<T, LogManagerError> {
        match catch_unwind(AssertUnwindSafe(|| op(self))) {
            Ok(result) => result,
            Err(panic) => {
                let reason = panic_message(panic.as_ref());
                log::error!("log shard {}: {what} panicked: {reason}", self.id);
                Err(LogManagerError::ShardPanic { what, reason })
            }
        }
    }

    fn load(
        &mut self,
        tp: TopicPartition,
        dir: PathBuf,
        config: LogConfig,
        options: LoadOptions,
    ) -> Result<(LogOffsets, LoadReport), LogManagerError> {
        let now_ms = self.clock.now_ms();
        let loaded = catch_unwind(AssertUnwindSafe(|| {
            PartitionLog::load(&dir, tp.clone(), config.clone(), options, now_ms)
        }));
        let reason = match loaded {
            Ok(Ok((log, report))) => {
                let offsets = offsets_of(&log);
                self.logs.insert(tp, PartitionState::Online(Box::new(log)));
                return Ok((offsets, report));
            }
            Ok(Err(e)) => e.to_string(),
            Err(panic) => format!("panic while loading: {}", panic_message(panic.as_ref())),
        };
        log::error!("partition {tp} could not be loaded and is offline: {reason}");
        self.logs.insert(
            tp.clone(),
            PartitionState::Offline {
                reason: reason.clone(),
                dir,
                config: Box::new(config),
                options,
            },
        );
        Err(LogManagerError::PartitionOffline { tp, reason })
    }

    fn online(&mut self) -> impl Iterator<Item = (&TopicPartition, &mut PartitionLog)> {
        self.logs.iter_mut().filter_map(|(tp, state)| match state {
            PartitionState::Online(log) => Some((tp, log.as_mut())),
            PartitionState::Offline { .. } => None,
        })
    }

    /// Run `op` on every online log, isolating failures per partition.
    /// Retention runs on offline logs too, from file metadata: a disk they
    /// filled frees itself and `ReopenOffline` can bring them back. Their
    /// new log start offset reaches the partition when the log reopens.
    fn enforce_retention_offline(&mut self) {
        let now = self.clock.now_ms();
        for (tp, state) in self.logs.iter_mut() {
            let PartitionState::Offline {
                dir,
                config,
                options,
                ..
            } = state
            else {
                continue;
            };
            match crate::storage::log::enforce_retention_offline(dir, config, options, now) {
                Ok(report) if report.deleted_segments > 0 => log::warn!(
                    "partition {tp} is offline; retention deleted {} segment(s), {} bytes, \
                     up to offset {}",
                    report.deleted_segments,
                    report.deleted_bytes,
                    report.log_start_offset
                ),
                Ok(_) => {}
                Err(e) => log::warn!("retention on offline partition {tp} failed: {e}"),
            }
        }
    }

    fn for_each_log<T>(
        &mut self,
        mut op: impl FnMut(&mut PartitionLog, i64) -> Result<T, LogError>,
    ) -> Vec<(TopicPartition, T)> {
        let tps: Vec<TopicPartition> = self.online().map(|(tp, _)| tp.clone()).collect();
        let mut results = Vec::with_capacity(tps.len());
        for tp in tps {
            if let Ok(value) = self.with_log(&tp, &mut op) {
                results.push((tp, value));
            }
        }
        results
    }
}

fn offsets_of(log: &PartitionLog) -> LogOffsets {
    LogOffsets {
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.log_end_offset(),
        recovery_point: log.recovery_point(),
        high_watermark: log.high_watermark(),
        latest_leader_epoch: log.latest_leader_epoch().unwrap_or(-1),
    }
}

/// An offline partition's checkpoint line: what was last known of it, so a
/// checkpoint written while it is offline does not forget it (the next
/// start would recover it from offset 0 and lose its log start offset).
fn offline_checkpoint(
    tp: &TopicPartition,
    log_dir: &std::path::Path,
    options: &LoadOptions,
) -> CheckpointEntry {
    CheckpointEntry {
        tp: tp.clone(),
        log_dir: log_dir.to_path_buf(),
        recovery_point: options.recovery_point,
        log_start_offset: options.log_start_offset,
        high_watermark: options.high_watermark,
        cleaner_offset: (options.cleaner_offset > 0).then_some(options.cleaner_offset),
    }
}

impl LogShard {
    fn offline_checkpoints(&self) -> Vec<CheckpointEntry> {
        self.logs
            .iter()
            .filter_map(|(tp, state)| match state {
                PartitionState::Offline { dir, options, .. } => dir
                    .parent()
                    .map(|log_dir| offline_checkpoint(tp, log_dir, options)),
                PartitionState::Online(_) => None,
            })
            .collect()
    }
}

fn checkpoint_of(log: &PartitionLog) -> CheckpointEntry {
    CheckpointEntry {
        tp: log.tp().clone(),
        log_dir: log
            .dir()
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_default(),
        recovery_point: log.recovery_point(),
        log_start_offset: log.log_start_offset(),
        high_watermark: log.high_watermark(),
        cleaner_offset: log.cleaner_checkpoint(),
    }
}

/// A message bound with its place in the shard's in-flight window and the
/// way back for its answer (`ShardLink::enqueue`): run on the shard's
/// thread, it handles the message, answers, and drops the place, so the
/// window frees there, with no task relaying the answer. A closure, not a
/// generic `Handler`, so any message type rides in the same envelope.
pub struct Permitted(pub PermittedTask);

/// One message's handling, run on the shard's thread.
pub type PermittedTask = Box<dyn FnOnce(&mut LogShard, &mut SyncContext<LogShard>) + Send>;

impl Message for Permitted {
    type Result = ();
}

impl Handler<Permitted> for LogShard {
    type Result = ();

    fn handle(&mut self, permitted: Permitted, ctx: &mut SyncContext<Self>) {
        (permitted.0)(self, ctx)
    }
}

impl Actor for LogShard {
    type Context = SyncContext<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        log::debug!("log shard {} started", self.id);
        let (sender, receiver) = std::sync::mpsc::channel::<RollFlush>();
        let shard = ctx.address();
        let spawned = std::thread::Builder::new()
            .name(format!("log-flusher-{}", self.id))
            .spawn(move || {
                // Ends when the shard (the only sender) is gone.
                while let Ok(flush) = receiver.recv() {
                    let result = flush.run();
                    shard.do_send(RollFlushed {
                        tp: flush.tp,
                        incarnation: flush.incarnation,
                        up_to: flush.up_to,
                        result,
                    });
                }
            });
        match spawned {
            Ok(_) => self.flusher = Some(sender),
            Err(e) => log::warn!(
                "log shard {}: no flusher thread ({e}); rolls fsync inline",
                self.id
            ),
        }
    }
}

/// The flusher thread finished a roll's fsyncs.
#[derive(Debug)]
struct RollFlushed {
    tp: TopicPartition,
    incarnation: u64,
    up_to: i64,
    result: Result<(), LogError>,
}

impl Message for RollFlushed {
    type Result = ();
}

impl Handler<RollFlushed> for LogShard {
    type Result = ();

    fn handle(&mut self, msg: RollFlushed, _ctx: &mut Self::Context) {
        self.apply_roll_flushed(&msg.tp, msg.incarnation, msg.up_to, msg.result);
    }
}

/// Declares a request about one partition: its message struct, answered by
/// the shard owning the partition (the log manager forwards the same struct,
/// and partition actors send it to their shard directly).
macro_rules! partition_request {
    ($(#[$doc:meta])* $name:ident { $($field:ident : $ty:ty),* } -> $out:ty,
     |$log:ident, $now:ident, $msg:ident| $op:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name { pub tp: TopicPartition, $(pub $field: $ty),* }

        impl Message for $name {
            type Result = Result<$out, LogManagerError>;
        }

        impl PartitionRequest for $name {
            fn tp(&self) -> &TopicPartition {
                &self.tp
            }
        }

        impl Handler<$name> for LogShard {
            type Result = Result<$out, LogManagerError>;

            fn handle(&mut self, $msg: $name, _ctx: &mut Self::Context) -> Self::Result {
                let tp = $msg.tp.clone();
                #[allow(unused_variables)]
                self.with_log(&tp, |$log, $now| $op)
            }
        }
    };
}

/// A request routed by partition to the shard that owns it.
pub trait PartitionRequest {
    fn tp(&self) -> &TopicPartition;
}

partition_request!(
    /// Validate, assign offsets to and append a producer's record set (as
    /// the leader), leaving a flush the policy asks for to the sender
    /// (`AppendInfo::flush_due`), who sends one `Flush` for many appends.
    /// The batches are stamped with `leader_epoch`, the sender's epoch in
    /// force (-1: the cache's latest).
    AppendDeferringFlush { records: Bytes, leader_epoch: i32 } -> AppendInfo,
    |log, now, msg| {
        fail::fail_point!("shard.append", |_| Err(LogError::io(
            log.dir(),
            std::io::Error::from_raw_os_error(libc::EIO)
        )));
        log.append_as_leader(msg.records, (msg.leader_epoch >= 0).then_some(msg.leader_epoch), now)
    }
);

partition_request!(
    /// Read up to `max_bytes` from `offset`, not past `max_offset`.
    Read { offset: i64, max_bytes: u64, max_offset: Option<i64> } -> ReadInfo,
    |log, now, msg| log.read(msg.offset, msg.max_bytes, msg.max_offset)
);

partition_request!(
    /// The first offset with a timestamp at or after `timestamp`; for
    /// `MAX_TIMESTAMP` (-3), the record with the largest timestamp.
    OffsetForTimestamp { timestamp: i64 } -> Option<(i64, i64)>,
    |log, now, msg| if msg.timestamp == MAX_TIMESTAMP {
        log.offset_of_max_timestamp()
    } else {
        log.offset_for_timestamp(msg.timestamp)
    }
);

/// What only tests send: an append that flushes as its policy says on the
/// shard thread, and a roll on demand. Production appends with
/// `AppendDeferringFlush` and rolls by size and time.
#[cfg(any(test, feature = "internals"))]
mod test_only {
    use super::*;

    partition_request!(
        /// Validate, assign offsets to and append a producer's record set.
        Append { records: Bytes } -> AppendInfo,
        |log, now, msg| {
            fail::fail_point!("shard.append", |_| Err(LogError::io(
                log.dir(),
                std::io::Error::from_raw_os_error(libc::EIO)
            )));
            log.append(msg.records, now)
        }
    );

    partition_request!(
        /// Start a new active segment.
        Roll {} -> (),
        |log, now, msg| log.roll(now)
    );
}
#[cfg(any(test, feature = "internals"))]
pub use test_only::{Append, Roll};

/// ListOffsets' "the record with the largest timestamp".
pub const MAX_TIMESTAMP: i64 = -3;

partition_request!(
    /// The partition's log start, log end and recovery point.
    GetLogOffsets {} -> LogOffsets,
    |log, now, msg| Ok(offsets_of(log))
);

partition_request!(
    /// fsync the partition's log now; answers the recovery point after
    /// (everything below it is on disk).
    Flush {} -> i64,
    |log, now, msg| {
        log.flush(now)?;
        Ok(log.recovery_point())
    }
);

partition_request!(
    /// Drop every record at `offset` or later (followers); answers the
    /// offsets after.
    Truncate { offset: i64 } -> LogOffsets,
    |log, now, msg| {
        log.truncate_to(msg.offset, now)?;
        Ok(offsets_of(log))
    }
);

partition_request!(
    /// Replace the log by an empty one starting at `offset` (a follower
    /// behind its leader's log start).
    TruncateFully { offset: i64 } -> LogOffsets,
    |log, now, msg| {
        log.truncate_fully_and_start_at(msg.offset, now)?;
        Ok(offsets_of(log))
    }
);

partition_request!(
    /// Append batches a leader already gave offsets and epochs (a
    /// follower); `high_watermark` is the follower's new one, for the
    /// checkpoint; the leader's log start (retention, DeleteRecords) moves
    /// this log's start too, never past the follower's high watermark
    /// (Kafka's `maybeIncrementLogStartOffset` on a fetch response).
    /// Answers the offsets after.
    AppendAsFollower { records: Bytes, high_watermark: i64, leader_log_start_offset: i64 } -> LogOffsets,
    |log, now, msg| {
        fail::fail_point!("shard.append", |_| Err(LogError::io(
            log.dir(),
            std::io::Error::from_raw_os_error(libc::EIO)
        )));
        log.append_as_follower(&msg.records, now)?;
        log.set_high_watermark(msg.high_watermark);
        let start = msg.leader_log_start_offset.min(log.high_watermark());
        if start > log.log_start_offset() {
            log.delete_records_before(start)?;
        }
        Ok(offsets_of(log))
    }
);

partition_request!(
    /// This broker leads the partition from now on, in `epoch`.
    AssignLeaderEpoch { epoch: i32 } -> LogOffsets,
    |log, now, msg| {
        log.assign_leader_epoch(msg.epoch)?;
        Ok(offsets_of(log))
    }
);

partition_request!(
    /// Ties the log to its topic's id (`partition.metadata`, KIP-516);
    /// INCONSISTENT_TOPIC_ID when it belongs to another topic of the name.
    AssignTopicId { topic_id: [u8; 16] } -> (),
    |log, now, msg| log.assign_topic_id(&msg.topic_id)
);

partition_request!(
    /// OffsetForLeaderEpoch: `(epoch, end offset)` for `epoch`.
    EndOffsetForEpoch { epoch: i32 } -> crate::storage::EpochEndOffset,
    |log, now, msg| Ok(log.end_offset_for_epoch(msg.epoch))
);

partition_request!(
    /// Note the high watermark for `replication-offset-checkpoint`.
    SetHighWatermark { high_watermark: i64 } -> (),
    |log, now, msg| {
        log.set_high_watermark(msg.high_watermark);
        Ok(())
    }
);

partition_request!(
    /// Raise the log start offset (DeleteRecords); answers the new one.
    DeleteRecordsBefore { offset: i64 } -> i64,
    |log, now, msg| log.delete_records_before(msg.offset)
);

partition_request!(
    /// Replace the partition's log config (a topic config change).
    UpdateLogConfig { config: LogConfig } -> (),
    |log, now, msg| {
        log.update_config(msg.config);
        Ok(())
    }
);

partition_request!(
    /// Swap in what the cleaner wrote (`.cleaned` segments), each only if
    /// its sources are unchanged; answers how many went in.
    SwapCleaned { outcome: Arc<CleanOutcome> } -> usize,
    |log, now, msg| log.swap_cleaned(&msg.outcome, now)
);

/// Load a partition found on disk at start-up (recovering it if needed).
#[derive(Debug)]
pub struct OpenLog {
    pub tp: TopicPartition,
    pub dir: PathBuf,
    pub config: LogConfig,
    pub options: LoadOptions,
}

impl Message for OpenLog {
    type Result = Result<(LogOffsets, LoadReport), LogManagerError>;
}

impl Handler<OpenLog> for LogShard {
    type Result = Result<(LogOffsets, LoadReport), LogManagerError>;

    fn handle(&mut self, msg: OpenLog, _ctx: &mut Self::Context) -> Self::Result {
        if self.closed {
            return Err(LogManagerError::Stopped);
        }
        self.load(msg.tp, msg.dir, msg.config, msg.options)
    }
}

/// Create an empty log for a new partition in `log_dir`.
#[derive(Debug)]
pub struct CreateShardLog {
    pub tp: TopicPartition,
    pub log_dir: PathBuf,
    pub config: LogConfig,
}

impl Message for CreateShardLog {
    type Result = Result<LogOffsets, LogManagerError>;
}

impl Handler<CreateShardLog> for LogShard {
    type Result = Result<LogOffsets, LogManagerError>;

    fn handle(&mut self, msg: CreateShardLog, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("create", |shard| {
            if shard.closed {
                log::warn!("not creating {}: the logs are closing", msg.tp);
                return Err(LogManagerError::Stopped);
            }
            if shard.logs.contains_key(&msg.tp) {
                return Err(LogManagerError::PartitionExists(msg.tp));
            }
            fail::fail_point!("shard.create");
            let now_ms = shard.clock.now_ms();
            let log = PartitionLog::create(&msg.log_dir, msg.tp.clone(), msg.config, now_ms)?;
            let offsets = offsets_of(&log);
            shard
                .logs
                .insert(msg.tp, PartitionState::Online(Box::new(log)));
            Ok(offsets)
        })
    }
}

/// Delete a partition's log and its files.
#[derive(Debug)]
pub struct DeleteShardLog {
    pub tp: TopicPartition,
}

impl Message for DeleteShardLog {
    type Result = Result<(), LogManagerError>;
}

impl Handler<DeleteShardLog> for LogShard {
    type Result = Result<(), LogManagerError>;

    fn handle(&mut self, msg: DeleteShardLog, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("delete", |shard| match shard.logs.remove(&msg.tp) {
            Some(PartitionState::Online(log)) => Ok(log.delete()?),
            Some(PartitionState::Offline { dir, .. }) => {
                std::fs::remove_dir_all(&dir).map_err(|e| LogError::io(&dir, e))?;
                Ok(())
            }
            None => Err(LogManagerError::UnknownPartition(msg.tp)),
        })
    }
}

/// fsync the logs whose `flush.ms` has passed.
#[derive(Debug, Clone, Copy)]
pub struct FlushDueLogs;

impl Message for FlushDueLogs {
    type Result = Result<(), LogManagerError>;
}

impl Handler<FlushDueLogs> for LogShard {
    type Result = Result<(), LogManagerError>;

    fn handle(&mut self, _msg: FlushDueLogs, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("flush", |shard| {
            shard.for_each_log(|log, now| log.maybe_flush(now));
            Ok(())
        })
    }
}

/// Delete segments past `retention.ms`/`retention.bytes` on every log.
#[derive(Debug)]
pub struct EnforceRetention;

impl Message for EnforceRetention {
    type Result = Result<Vec<(TopicPartition, RetentionReport)>, LogManagerError>;
}

impl Handler<EnforceRetention> for LogShard {
    type Result = Result<Vec<(TopicPartition, RetentionReport)>, LogManagerError>;

    fn handle(&mut self, _msg: EnforceRetention, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("retention", |shard| {
            let reports = shard.for_each_log(|log, now| log.enforce_retention(now));
            shard.enforce_retention_offline();
            // The same period bounds index memory: what no read touched
            // since the last check leaves memory.
            shard.for_each_log(|log, _| Ok(log.evict_idle_indexes()));
            Ok(reports)
        })
    }
}

/// The dirtiest compacted log of this shard the cleaner may take now (not
/// one in `exclude`, being cleaned already), with its cleaning task.
#[derive(Debug)]
pub struct TakeCleanable {
    pub exclude: Vec<TopicPartition>,
}

impl Message for TakeCleanable {
    type Result = Result<Vec<(Cleanable, CleanTask)>, LogManagerError>;
}

impl Handler<TakeCleanable> for LogShard {
    type Result = Result<Vec<(Cleanable, CleanTask)>, LogManagerError>;

    fn handle(&mut self, msg: TakeCleanable, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("choosing a log to clean", |shard| {
            let now = shard.clock.now_ms();
            let best = shard
                .online()
                .filter(|(tp, _)| !msg.exclude.contains(tp))
                .filter_map(|(_, log)| Some((log.cleanable(now)?, log)))
                .max_by(|(a, _), (b, _)| a.priority(b))
                .and_then(|(cleanable, log)| Some((cleanable, log.clean_task(now)?)));
            Ok(best.into_iter().collect())
        })
    }
}

/// Every log's checkpoint line.
#[derive(Debug)]
pub struct CollectCheckpoints;

impl Message for CollectCheckpoints {
    type Result = Result<Vec<CheckpointEntry>, LogManagerError>;
}

impl Handler<CollectCheckpoints> for LogShard {
    type Result = Result<Vec<CheckpointEntry>, LogManagerError>;

    fn handle(&mut self, _msg: CollectCheckpoints, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("checkpoints", |shard| {
            let mut entries: Vec<CheckpointEntry> = shard
                .for_each_log(|log, _| Ok(checkpoint_of(log)))
                .into_iter()
                .map(|(_, entry)| entry)
                .collect();
            entries.extend(shard.offline_checkpoints());
            Ok(entries)
        })
    }
}

/// What closing a shard's logs left: the checkpoint lines of the logs
/// closed cleanly, and the log dirs holding one that failed.
#[derive(Debug, Default)]
pub struct ClosedLogs {
    pub entries: Vec<CheckpointEntry>,
    pub failed_dirs: Vec<PathBuf>,
}

/// Flush and close every log; the shard holds none afterwards.
#[derive(Debug)]
pub struct CloseAll;

impl Message for CloseAll {
    type Result = Result<ClosedLogs, LogManagerError>;
}

impl Handler<CloseAll> for LogShard {
    type Result = Result<ClosedLogs, LogManagerError>;

    fn handle(&mut self, _msg: CloseAll, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("close", |shard| {
            shard.closed = true;
            let now_ms = shard.clock.now_ms();
            let mut closed = ClosedLogs::default();
            for (tp, state) in shard.logs.drain() {
                match state {
                    PartitionState::Online(log) => {
                        let entry = checkpoint_of(&log);
                        match log.close(now_ms) {
                            Ok(()) => closed.entries.push(entry),
                            Err(e) => {
                                log::error!("closing {tp} failed: {e}");
                                closed.failed_dirs.push(entry.log_dir);
                            }
                        }
                    }
                    PartitionState::Offline { dir, options, .. } => {
                        if let Some(parent) = dir.parent() {
                            closed.failed_dirs.push(parent.to_path_buf());
                            // What was last known stays in the checkpoint.
                            closed
                                .entries
                                .push(offline_checkpoint(&tp, parent, &options));
                        }
                    }
                }
            }
            Ok(closed)
        })
    }
}

/// One replica's log as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaLog {
    pub tp: TopicPartition,
    /// The `log.dirs` entry holding it.
    pub log_dir: PathBuf,
    /// The bytes of its segments.
    pub size_bytes: u64,
    /// Kafka's offset lag of a current (not future) replica: how far its
    /// log end is below its high watermark, never negative.
    pub offset_lag: i64,
    /// Kafka's `kafka.log:type=Log` gauges: LogStartOffset, LogEndOffset,
    /// NumLogSegments.
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub segments: usize,
}

/// The shard's online logs, each with its directory and size (offline
/// ones are not listed, as Kafka lists only the logs it has open).
#[derive(Debug)]
pub struct DescribeShardLogs;

impl Message for DescribeShardLogs {
    type Result = Result<Vec<ReplicaLog>, LogManagerError>;
}

impl Handler<DescribeShardLogs> for LogShard {
    type Result = Result<Vec<ReplicaLog>, LogManagerError>;

    fn handle(&mut self, _msg: DescribeShardLogs, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("describe", |shard| {
            Ok(shard
                .logs
                .iter()
                .filter_map(|(tp, state)| match state {
                    PartitionState::Online(log) => Some(ReplicaLog {
                        tp: tp.clone(),
                        log_dir: log.dir().parent().unwrap_or(log.dir()).to_path_buf(),
                        size_bytes: log.size_in_bytes(),
                        offset_lag: (log.high_watermark() - log.log_end_offset()).max(0),
                        log_start_offset: log.log_start_offset(),
                        log_end_offset: log.log_end_offset(),
                        segments: log.segment_count(),
                    }),
                    PartitionState::Offline { .. } => None,
                })
                .collect())
        })
    }
}

/// Try to load every offline partition again from what was last known of
/// it (the disk fault may have cleared: space freed, a remount). Answers
/// the partitions that came back.
#[derive(Debug)]
pub struct ReopenOffline;

impl Message for ReopenOffline {
    type Result = Result<Vec<(TopicPartition, LogOffsets)>, LogManagerError>;
}

impl Handler<ReopenOffline> for LogShard {
    type Result = Result<Vec<(TopicPartition, LogOffsets)>, LogManagerError>;

    fn handle(&mut self, _msg: ReopenOffline, _ctx: &mut Self::Context) -> Self::Result {
        self.guarded("reopen", |shard| {
            let offline: Vec<(TopicPartition, PathBuf, LogConfig, LoadOptions)> = shard
                .logs
                .iter()
                .filter_map(|(tp, state)| match state {
                    PartitionState::Offline {
                        dir,
                        config,
                        options,
                        ..
                    } if dir.exists() => {
                        Some((tp.clone(), dir.clone(), (**config).clone(), *options))
                    }
                    _ => None,
                })
                .collect();
            let mut back = Vec::new();
            for (tp, dir, config, options) in offline {
                if let Ok((offsets, _)) = shard.load(tp.clone(), dir, config, options) {
                    log::info!("partition {tp} is back online at {offsets:?}");
                    back.push((tp, offsets));
                }
            }
            Ok(back)
        })
    }
}
