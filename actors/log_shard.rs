//! A log shard: one blocking thread (an actix `SyncArbiter` of size one) that
//! owns a fixed subset of the partition logs and runs every file operation on
//! them. A partition always maps to the same shard, so its appends keep their
//! order; shards run in parallel with each other and off the async reactors.
//!
//! It never lets a disk error or a panic on one partition escape: the
//! partition is marked offline with a log line and the shard keeps serving the
//! others. Only the log actor (`actors/log.rs`) talks to it.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use actix::prelude::*;
use bytes::Bytes;

use crate::clock::SharedClock;
use crate::storage::{
    AppendInfo, LoadOptions, LogConfig, LogError, PartitionLog, ReadInfo, RetentionReport,
};
use crate::topic_partition::TopicPartition;

use super::log::LogActorError;

/// A partition's offsets as its log knows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsets {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub recovery_point: i64,
}

/// One partition's line in the checkpoint files of its log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointEntry {
    pub tp: TopicPartition,
    /// The `log.dirs` entry holding the partition.
    pub log_dir: PathBuf,
    pub recovery_point: i64,
    pub log_start_offset: i64,
}

/// Everything a shard can be asked to do.
#[derive(Debug)]
pub enum ShardCommand {
    Open {
        tp: TopicPartition,
        dir: PathBuf,
        config: LogConfig,
        options: LoadOptions,
    },
    Create {
        tp: TopicPartition,
        log_dir: PathBuf,
        config: LogConfig,
    },
    Append {
        tp: TopicPartition,
        records: Bytes,
    },
    Read {
        tp: TopicPartition,
        offset: i64,
        max_bytes: u64,
        max_offset: Option<i64>,
    },
    OffsetForTimestamp {
        tp: TopicPartition,
        timestamp: i64,
    },
    Offsets {
        tp: TopicPartition,
    },
    Flush {
        tp: Option<TopicPartition>,
    },
    /// Flush the logs whose `flush.ms` has passed.
    FlushDue,
    Roll {
        tp: TopicPartition,
    },
    Truncate {
        tp: TopicPartition,
        offset: i64,
    },
    DeleteRecordsBefore {
        tp: TopicPartition,
        offset: i64,
    },
    EnforceRetention,
    UpdateConfig {
        tp: TopicPartition,
        config: LogConfig,
    },
    Delete {
        tp: TopicPartition,
    },
    Checkpoints,
    /// Flush and close every log; the shard holds none afterwards.
    CloseAll,
}

#[derive(Debug)]
pub enum ShardReply {
    Done,
    Appended(AppendInfo),
    Read(ReadInfo),
    Offsets(LogOffsets),
    Timestamp(Option<(i64, i64)>),
    StartOffset(i64),
    Retention(Vec<(TopicPartition, RetentionReport)>),
    Checkpoints(Vec<CheckpointEntry>),
    /// CloseAll: the entries of the logs closed cleanly, and how many failed.
    Closed {
        entries: Vec<CheckpointEntry>,
        failed_dirs: Vec<PathBuf>,
    },
}

impl Message for ShardCommand {
    type Result = Result<ShardReply, LogActorError>;
}

enum PartitionState {
    Online(Box<PartitionLog>),
    Offline { reason: String, dir: PathBuf },
}

pub struct LogShard {
    id: usize,
    logs: HashMap<TopicPartition, PartitionState>,
    clock: SharedClock,
}

impl LogShard {
    pub fn new(id: usize, clock: SharedClock) -> Self {
        LogShard {
            id,
            logs: HashMap::new(),
            clock,
        }
    }

    /// Run `op` on an online log. A fatal error or a panic takes the
    /// partition offline; client errors pass through untouched.
    fn with_log<T>(
        &mut self,
        tp: &TopicPartition,
        op: impl FnOnce(&mut PartitionLog, i64) -> Result<T, LogError>,
    ) -> Result<T, LogActorError> {
        let now_ms = self.clock.now_ms();
        let log = match self.logs.get_mut(tp) {
            None => return Err(LogActorError::UnknownPartition(tp.clone())),
            Some(PartitionState::Offline { reason, .. }) => {
                return Err(LogActorError::PartitionOffline {
                    tp: tp.clone(),
                    reason: reason.clone(),
                })
            }
            Some(PartitionState::Online(log)) => log,
        };
        let failure = match catch_unwind(AssertUnwindSafe(|| op(log, now_ms))) {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(e)) if !e.is_fatal_for_partition() => return Err(LogActorError::Log(e)),
            Ok(Err(e)) => e.to_string(),
            Err(panic) => format!("panic: {}", panic_message(&panic)),
        };
        self.take_offline(tp, failure.clone());
        Err(LogActorError::PartitionOffline {
            tp: tp.clone(),
            reason: failure,
        })
    }

    fn take_offline(&mut self, tp: &TopicPartition, reason: String) {
        log::error!(
            "log shard {}: partition {tp} is now offline: {reason}",
            self.id
        );
        let dir = match self.logs.get(tp) {
            Some(PartitionState::Online(log)) => log.dir().to_path_buf(),
            Some(PartitionState::Offline { dir, .. }) => dir.clone(),
            None => PathBuf::new(),
        };
        self.logs
            .insert(tp.clone(), PartitionState::Offline { reason, dir });
    }

    fn online(&mut self) -> impl Iterator<Item = (&TopicPartition, &mut PartitionLog)> {
        self.logs.iter_mut().filter_map(|(tp, state)| match state {
            PartitionState::Online(log) => Some((tp, log.as_mut())),
            PartitionState::Offline { .. } => None,
        })
    }

    /// Run `op` on every online log, isolating failures per partition.
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

    fn handle_command(&mut self, command: ShardCommand) -> Result<ShardReply, LogActorError> {
        let now_ms = self.clock.now_ms();
        match command {
            ShardCommand::Open {
                tp,
                dir,
                config,
                options,
            } => {
                let loaded = catch_unwind(AssertUnwindSafe(|| {
                    PartitionLog::load(&dir, tp.clone(), config, options, now_ms)
                }));
                match loaded {
                    Ok(Ok((log, _report))) => {
                        let offsets = offsets_of(&log);
                        self.logs.insert(tp, PartitionState::Online(Box::new(log)));
                        Ok(ShardReply::Offsets(offsets))
                    }
                    Ok(Err(e)) => {
                        let reason = e.to_string();
                        self.logs.insert(
                            tp.clone(),
                            PartitionState::Offline {
                                reason: reason.clone(),
                                dir,
                            },
                        );
                        log::error!("partition {tp} could not be loaded and is offline: {reason}");
                        Err(LogActorError::PartitionOffline { tp, reason })
                    }
                    Err(panic) => {
                        let reason = format!("panic while loading: {}", panic_message(&panic));
                        self.logs.insert(
                            tp.clone(),
                            PartitionState::Offline {
                                reason: reason.clone(),
                                dir,
                            },
                        );
                        log::error!("partition {tp} is offline: {reason}");
                        Err(LogActorError::PartitionOffline { tp, reason })
                    }
                }
            }
            ShardCommand::Create {
                tp,
                log_dir,
                config,
            } => {
                if self.logs.contains_key(&tp) {
                    return Err(LogActorError::PartitionExists(tp));
                }
                let log = PartitionLog::create(&log_dir, tp.clone(), config, now_ms)?;
                let offsets = offsets_of(&log);
                self.logs.insert(tp, PartitionState::Online(Box::new(log)));
                Ok(ShardReply::Offsets(offsets))
            }
            ShardCommand::Append { tp, records } => self
                .with_log(&tp, |log, now| log.append(records, now))
                .map(ShardReply::Appended),
            ShardCommand::Read {
                tp,
                offset,
                max_bytes,
                max_offset,
            } => self
                .with_log(&tp, |log, _| log.read(offset, max_bytes, max_offset))
                .map(ShardReply::Read),
            ShardCommand::OffsetForTimestamp { tp, timestamp } => self
                .with_log(&tp, |log, _| log.offset_for_timestamp(timestamp))
                .map(ShardReply::Timestamp),
            ShardCommand::Offsets { tp } => self
                .with_log(&tp, |log, _| Ok(offsets_of(log)))
                .map(ShardReply::Offsets),
            ShardCommand::Flush { tp: Some(tp) } => self
                .with_log(&tp, |log, now| log.flush(now))
                .map(|()| ShardReply::Done),
            ShardCommand::Flush { tp: None } => {
                self.for_each_log(|log, now| log.flush(now));
                Ok(ShardReply::Done)
            }
            ShardCommand::FlushDue => {
                self.for_each_log(|log, now| log.maybe_flush(now));
                Ok(ShardReply::Done)
            }
            ShardCommand::Roll { tp } => self
                .with_log(&tp, |log, now| log.roll(now))
                .map(|()| ShardReply::Done),
            ShardCommand::Truncate { tp, offset } => self
                .with_log(&tp, |log, now| log.truncate_to(offset, now))
                .map(|()| ShardReply::Done),
            ShardCommand::DeleteRecordsBefore { tp, offset } => self
                .with_log(&tp, |log, _| log.delete_records_before(offset))
                .map(ShardReply::StartOffset),
            ShardCommand::EnforceRetention => Ok(ShardReply::Retention(
                self.for_each_log(|log, now| log.enforce_retention(now)),
            )),
            ShardCommand::UpdateConfig { tp, config } => self
                .with_log(&tp, |log, _| {
                    log.update_config(config);
                    Ok(())
                })
                .map(|()| ShardReply::Done),
            ShardCommand::Delete { tp } => match self.logs.remove(&tp) {
                Some(PartitionState::Online(log)) => {
                    log.delete()?;
                    Ok(ShardReply::Done)
                }
                Some(PartitionState::Offline { dir, .. }) => {
                    std::fs::remove_dir_all(&dir).map_err(|e| LogError::io(&dir, e))?;
                    Ok(ShardReply::Done)
                }
                None => Err(LogActorError::UnknownPartition(tp)),
            },
            ShardCommand::Checkpoints => Ok(ShardReply::Checkpoints(
                self.for_each_log(|log, _| Ok(checkpoint_of(log)))
                    .into_iter()
                    .map(|(_, entry)| entry)
                    .collect(),
            )),
            ShardCommand::CloseAll => {
                let mut entries = Vec::new();
                let mut failed_dirs = Vec::new();
                for (tp, state) in self.logs.drain() {
                    match state {
                        PartitionState::Online(log) => {
                            let entry = checkpoint_of(&log);
                            match log.close(now_ms) {
                                Ok(()) => entries.push(entry),
                                Err(e) => {
                                    log::error!("closing {tp} failed: {e}");
                                    failed_dirs.push(entry.log_dir);
                                }
                            }
                        }
                        PartitionState::Offline { dir, .. } => {
                            if let Some(parent) = dir.parent() {
                                failed_dirs.push(parent.to_path_buf());
                            }
                        }
                    }
                }
                Ok(ShardReply::Closed {
                    entries,
                    failed_dirs,
                })
            }
        }
    }
}

fn offsets_of(log: &PartitionLog) -> LogOffsets {
    LogOffsets {
        log_start_offset: log.log_start_offset(),
        log_end_offset: log.log_end_offset(),
        recovery_point: log.recovery_point(),
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
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

impl Actor for LogShard {
    type Context = SyncContext<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        log::debug!("log shard {} started", self.id);
    }
}

impl Handler<ShardCommand> for LogShard {
    type Result = Result<ShardReply, LogActorError>;

    fn handle(&mut self, command: ShardCommand, _ctx: &mut Self::Context) -> Self::Result {
        self.handle_command(command)
    }
}
