//! The shared log actor: the one door to persistence. Partition actors send it
//! typed messages (append, read, flush, truncate, roll, delete-below, close);
//! it routes each to the log shard owning that partition, bounds the work in
//! flight per shard, places new partitions on the `log.dirs` entry holding the
//! fewest, and runs the periodic duties: retention, time-based flushes and
//! the checkpoint files.
//!
//! It never touches a data file itself (shards do), never blocks its reactor
//! thread on disk I/O, and never holds partition state that a restart would
//! lose: logs live in the shards.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::Semaphore;

use crate::clock::SharedClock;
use crate::storage::log_dir::LogDir;
use crate::storage::{AppendInfo, LogConfig, LogError, ReadInfo, RetentionReport};
use crate::topic_partition::TopicPartition;

use super::log_shard::{CheckpointEntry, LogOffsets, LogShard, ShardCommand, ShardReply};
use super::supervisor::RestartBudget;

#[derive(Debug, thiserror::Error)]
pub enum LogActorError {
    #[error("unknown partition {0}")]
    UnknownPartition(TopicPartition),
    #[error("partition {tp} is offline: {reason}")]
    PartitionOffline { tp: TopicPartition, reason: String },
    #[error("partition {0} already exists")]
    PartitionExists(TopicPartition),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("log shard {0} is not running")]
    ShardGone(usize),
    #[error("the log actor is not running")]
    Stopped,
}

/// How the log actor runs; built from the broker config.
#[derive(Debug, Clone)]
pub struct LogActorConfig {
    pub log_dirs: Vec<PathBuf>,
    /// Broker-wide log defaults.
    pub default_config: LogConfig,
    /// Per-topic configs (defaults with topic overrides applied).
    pub topic_configs: HashMap<String, LogConfig>,
    /// Blocking threads; each owns a fixed subset of the partitions.
    pub shards: usize,
    /// Requests in flight per shard before senders wait.
    pub max_in_flight_per_shard: usize,
    pub retention_check_interval_ms: u64,
    pub flush_scheduler_interval_ms: u64,
    pub checkpoint_interval_ms: u64,
}

impl LogActorConfig {
    pub fn new(log_dirs: Vec<PathBuf>, default_config: LogConfig) -> Self {
        LogActorConfig {
            log_dirs,
            default_config,
            topic_configs: HashMap::new(),
            shards: 2,
            max_in_flight_per_shard: 256,
            retention_check_interval_ms: 300_000,
            flush_scheduler_interval_ms: u64::MAX,
            checkpoint_interval_ms: 60_000,
        }
    }

    pub fn from_broker(config: &crate::config::BrokerConfig) -> Self {
        let mut actor = LogActorConfig::new(config.log_dirs.clone(), config.log_config());
        actor.shards = config.num_io_threads.clamp(1, 64);
        actor.max_in_flight_per_shard = config.queued_max_requests.max(1);
        actor.retention_check_interval_ms = config.log_retention_check_interval_ms;
        actor.flush_scheduler_interval_ms = config.log_flush_scheduler_interval_ms.max(0) as u64;
        actor.checkpoint_interval_ms = config
            .log_flush_offset_checkpoint_interval_ms
            .min(config.log_flush_start_offset_checkpoint_interval_ms);
        actor
    }

    fn config_for(&self, tp: &TopicPartition) -> LogConfig {
        self.topic_configs
            .get(&tp.topic)
            .cloned()
            .unwrap_or_else(|| self.default_config.clone())
    }
}

/// What loading found for one partition at start-up.
#[derive(Debug)]
pub struct LoadedLog {
    pub tp: TopicPartition,
    pub offsets: Result<LogOffsets, String>,
}

#[derive(Clone)]
struct ShardHandle {
    addr: Addr<LogShard>,
    in_flight: Arc<Semaphore>,
}

pub struct LogActor {
    config: LogActorConfig,
    shards: Vec<ShardHandle>,
    dirs: Vec<Arc<LogDir>>,
    /// Which `dirs` entry holds each partition.
    placement: HashMap<TopicPartition, usize>,
    restarts: RestartBudget,
}

impl LogActor {
    /// Open the log directories, start the shards, load every partition found
    /// (recovering those not shut down cleanly, shards in parallel), then
    /// start the actor under a supervisor. Must run inside an actix system.
    pub async fn start(
        config: LogActorConfig,
        clock: SharedClock,
    ) -> Result<(Addr<LogActor>, Vec<LoadedLog>), LogActorError> {
        let mut dirs = Vec::with_capacity(config.log_dirs.len());
        for path in &config.log_dirs {
            let path = path.clone();
            let dir = tokio::task::spawn_blocking(move || LogDir::open(&path))
                .await
                .map_err(|_| LogActorError::Stopped)??;
            dirs.push(Arc::new(dir));
        }
        let shards: Vec<ShardHandle> = (0..config.shards.max(1))
            .map(|id| {
                let clock = clock.clone();
                ShardHandle {
                    addr: SyncArbiter::start(1, move || LogShard::new(id, clock.clone())),
                    in_flight: Arc::new(Semaphore::new(config.max_in_flight_per_shard.max(1))),
                }
            })
            .collect();
        let mut placement = HashMap::new();
        let mut pending = Vec::new();
        for (dir_index, dir) in dirs.iter().enumerate() {
            if !dir.clean_shutdown && !dir.partitions.is_empty() {
                log::info!(
                    "{} was not shut down cleanly: recovering its partitions past their recovery points",
                    dir.path().display()
                );
            }
            for (tp, path) in &dir.partitions {
                placement.insert(tp.clone(), dir_index);
                let command = ShardCommand::Open {
                    tp: tp.clone(),
                    dir: path.clone(),
                    config: config.config_for(tp),
                    options: dir.load_options(tp),
                };
                let shard = shards[shard_of(tp, shards.len())].clone();
                let tp = tp.clone();
                pending.push(async move {
                    let offsets = match dispatch(&shard, 0, command).await {
                        Ok(ShardReply::Offsets(offsets)) => Ok(offsets),
                        Ok(other) => Err(format!("unexpected reply {other:?}")),
                        Err(e) => Err(e.to_string()),
                    };
                    LoadedLog { tp, offsets }
                });
            }
        }
        let loaded = futures_util::future::join_all(pending).await;
        let actor = LogActor {
            config,
            shards,
            dirs,
            placement,
            restarts: RestartBudget::default(),
        };
        let addr = actix::Supervisor::start(move |_| actor);
        Ok((addr, loaded))
    }

    fn shard_for(&self, tp: &TopicPartition) -> (usize, ShardHandle) {
        let index = shard_of(tp, self.shards.len());
        (index, self.shards[index].clone())
    }

    /// Send `command` to `tp`'s shard, waiting for room in its window.
    fn forward(
        &self,
        tp: &TopicPartition,
        command: ShardCommand,
    ) -> impl std::future::Future<Output = Result<ShardReply, LogActorError>> + 'static {
        let (index, shard) = self.shard_for(tp);
        async move { dispatch(&shard, index, command).await }
    }

    /// Send a command to every shard and gather the replies.
    fn broadcast(
        &self,
        make: impl Fn() -> ShardCommand,
    ) -> impl std::future::Future<Output = Vec<Result<ShardReply, LogActorError>>> + 'static {
        let sends: Vec<_> = self
            .shards
            .iter()
            .enumerate()
            .map(|(index, shard)| {
                let shard = shard.clone();
                let command = make();
                async move { dispatch(&shard, index, command).await }
            })
            .collect();
        futures_util::future::join_all(sends)
    }

    /// The `log.dirs` entry holding the fewest partitions, as Kafka places them.
    fn least_loaded_dir(&self) -> usize {
        let mut counts = vec![0usize; self.dirs.len()];
        for &dir in self.placement.values() {
            counts[dir] += 1;
        }
        (0..counts.len()).min_by_key(|&i| counts[i]).unwrap_or(0)
    }

    fn schedule(&self, ctx: &mut Context<Self>) {
        if let Some(every) = interval(self.config.retention_check_interval_ms) {
            ctx.run_interval(every, |actor, ctx| {
                let retention = actor.broadcast(|| ShardCommand::EnforceRetention);
                ctx.spawn(fut::wrap_future(async move {
                    log_failures("retention", retention.await);
                }));
            });
        }
        if let Some(every) = interval(self.config.flush_scheduler_interval_ms) {
            ctx.run_interval(every, |actor, ctx| {
                let flush = actor.broadcast(|| ShardCommand::FlushDue);
                ctx.spawn(fut::wrap_future(async move {
                    log_failures("scheduled flush", flush.await);
                }));
            });
        }
        if let Some(every) = interval(self.config.checkpoint_interval_ms) {
            ctx.run_interval(every, |actor, ctx| {
                let checkpoint = actor.checkpoint();
                ctx.spawn(fut::wrap_future(async move {
                    if let Err(e) = checkpoint.await {
                        log::error!("writing checkpoints failed: {e}");
                    }
                }));
            });
        }
    }

    fn checkpoint(&self) -> impl std::future::Future<Output = Result<(), LogActorError>> + 'static {
        let collect = self.broadcast(|| ShardCommand::Checkpoints);
        let dirs = self.dirs.clone();
        async move {
            let mut entries = Vec::new();
            for reply in collect.await {
                if let ShardReply::Checkpoints(mut part) = reply? {
                    entries.append(&mut part);
                }
            }
            let mark_clean = vec![false; dirs.len()];
            tokio::task::spawn_blocking(move || {
                write_checkpoint_files(&dirs, &entries, &mark_clean)
            })
            .await
            .map_err(|_| LogActorError::Stopped)?
        }
    }
}

/// The shard that owns `tp`, stable for the life of the process.
pub fn shard_of(tp: &TopicPartition, shards: usize) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    tp.hash(&mut hasher);
    (hasher.finish() % shards.max(1) as u64) as usize
}

async fn dispatch(
    shard: &ShardHandle,
    index: usize,
    command: ShardCommand,
) -> Result<ShardReply, LogActorError> {
    let _permit = shard
        .in_flight
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| LogActorError::ShardGone(index))?;
    shard
        .addr
        .send(command)
        .await
        .map_err(|_| LogActorError::ShardGone(index))?
}

fn interval(ms: u64) -> Option<Duration> {
    // Kafka uses Long.MAX_VALUE to mean "never".
    (ms > 0 && ms < i64::MAX as u64 / 2).then(|| Duration::from_millis(ms))
}

fn log_failures(what: &str, replies: Vec<Result<ShardReply, LogActorError>>) {
    for reply in replies {
        match reply {
            Err(e) => log::error!("{what} failed on a shard: {e}"),
            Ok(ShardReply::Retention(reports)) => {
                for (tp, report) in reports.iter().filter(|(_, r)| r.deleted_segments > 0) {
                    log::info!(
                        "retention deleted {} segment(s), {} bytes, of {tp}; log start offset {}",
                        report.deleted_segments,
                        report.deleted_bytes,
                        report.log_start_offset
                    );
                }
            }
            Ok(_) => {}
        }
    }
}

fn write_checkpoint_files(
    dirs: &[Arc<LogDir>],
    entries: &[CheckpointEntry],
    mark_clean: &[bool],
) -> Result<(), LogActorError> {
    for (i, dir) in dirs.iter().enumerate() {
        let mut recovery_points = BTreeMap::new();
        let mut log_start_offsets = BTreeMap::new();
        for entry in entries.iter().filter(|e| e.log_dir == dir.path()) {
            recovery_points.insert(entry.tp.clone(), entry.recovery_point);
            log_start_offsets.insert(entry.tp.clone(), entry.log_start_offset);
        }
        dir.write_checkpoints(&recovery_points, &log_start_offsets)?;
        if mark_clean.get(i).copied().unwrap_or(false) {
            dir.mark_clean_shutdown()?;
        }
    }
    Ok(())
}

impl Actor for LogActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Bounded by design: callers wait instead of queueing without limit.
        ctx.set_mailbox_capacity(1024);
        self.schedule(ctx);
    }
}

impl actix::Supervised for LogActor {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        // Logs live in the shards, so a restart loses nothing; only count it.
        if !self.restarts.record_restart(std::time::Instant::now()) {
            log::error!("the log actor keeps failing; restarts are being throttled");
        }
    }
}

/// Declares a message to the log actor and the shard command it forwards to.
macro_rules! forwarded_message {
    ($(#[$doc:meta])* $name:ident { $($field:ident : $ty:ty),* } -> $out:ty,
     |$msg:ident| $command:expr, $reply:pat => $value:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name { pub tp: TopicPartition, $(pub $field: $ty),* }

        impl Message for $name {
            type Result = Result<$out, LogActorError>;
        }

        impl Handler<$name> for LogActor {
            type Result = ResponseFuture<Result<$out, LogActorError>>;

            fn handle(&mut self, $msg: $name, _ctx: &mut Context<Self>) -> Self::Result {
                let tp = $msg.tp.clone();
                let reply = self.forward(&tp, $command);
                Box::pin(async move {
                    match reply.await? {
                        $reply => Ok($value),
                        other => {
                            log::error!("log shard answered {other:?} to {}", stringify!($name));
                            Err(LogActorError::Stopped)
                        }
                    }
                })
            }
        }
    };
}

forwarded_message!(
    /// Validate, assign offsets to and append a producer's record set.
    Append { records: Bytes } -> AppendInfo,
    |m| ShardCommand::Append { tp: m.tp, records: m.records },
    ShardReply::Appended(info) => info
);

forwarded_message!(
    /// Read up to `max_bytes` from `offset`, not past `max_offset`.
    Read { offset: i64, max_bytes: u64, max_offset: Option<i64> } -> ReadInfo,
    |m| ShardCommand::Read { tp: m.tp, offset: m.offset, max_bytes: m.max_bytes, max_offset: m.max_offset },
    ShardReply::Read(info) => info
);

forwarded_message!(
    /// The first offset with a timestamp at or after `timestamp`.
    OffsetForTimestamp { timestamp: i64 } -> Option<(i64, i64)>,
    |m| ShardCommand::OffsetForTimestamp { tp: m.tp, timestamp: m.timestamp },
    ShardReply::Timestamp(found) => found
);

forwarded_message!(
    /// The partition's log start, log end and recovery point.
    GetLogOffsets {} -> LogOffsets,
    |m| ShardCommand::Offsets { tp: m.tp },
    ShardReply::Offsets(offsets) => offsets
);

forwarded_message!(
    /// fsync the partition's log now.
    Flush {} -> (),
    |m| ShardCommand::Flush { tp: Some(m.tp) },
    ShardReply::Done => ()
);

forwarded_message!(
    /// Start a new active segment.
    Roll {} -> (),
    |m| ShardCommand::Roll { tp: m.tp },
    ShardReply::Done => ()
);

forwarded_message!(
    /// Drop every record at `offset` or later (followers).
    Truncate { offset: i64 } -> (),
    |m| ShardCommand::Truncate { tp: m.tp, offset: m.offset },
    ShardReply::Done => ()
);

forwarded_message!(
    /// Raise the log start offset (DeleteRecords); answers the new one.
    DeleteRecordsBefore { offset: i64 } -> i64,
    |m| ShardCommand::DeleteRecordsBefore { tp: m.tp, offset: m.offset },
    ShardReply::StartOffset(offset) => offset
);

forwarded_message!(
    /// Replace the partition's log config (a topic config change).
    UpdateLogConfig { config: LogConfig } -> (),
    |m| ShardCommand::UpdateConfig { tp: m.tp, config: m.config },
    ShardReply::Done => ()
);

/// Create an empty log for a new partition on the least loaded log dir.
#[derive(Debug)]
pub struct CreateLog {
    pub tp: TopicPartition,
    pub config: LogConfig,
}

impl Message for CreateLog {
    type Result = Result<LogOffsets, LogActorError>;
}

impl Handler<CreateLog> for LogActor {
    type Result = ResponseFuture<Result<LogOffsets, LogActorError>>;

    fn handle(&mut self, msg: CreateLog, _ctx: &mut Context<Self>) -> Self::Result {
        if self.placement.contains_key(&msg.tp) {
            return Box::pin(async move { Err(LogActorError::PartitionExists(msg.tp)) });
        }
        let dir_index = self.least_loaded_dir();
        let Some(dir) = self.dirs.get(dir_index) else {
            return Box::pin(async move { Err(LogActorError::Stopped) });
        };
        self.placement.insert(msg.tp.clone(), dir_index);
        let reply = self.forward(
            &msg.tp,
            ShardCommand::Create {
                tp: msg.tp.clone(),
                log_dir: dir.path().to_path_buf(),
                config: msg.config,
            },
        );
        Box::pin(async move {
            match reply.await? {
                ShardReply::Offsets(offsets) => Ok(offsets),
                _ => Err(LogActorError::Stopped),
            }
        })
    }
}

/// Delete a partition's log and its files (topic deletion).
#[derive(Debug)]
pub struct DeleteLog {
    pub tp: TopicPartition,
}

impl Message for DeleteLog {
    type Result = Result<(), LogActorError>;
}

impl Handler<DeleteLog> for LogActor {
    type Result = ResponseFuture<Result<(), LogActorError>>;

    fn handle(&mut self, msg: DeleteLog, _ctx: &mut Context<Self>) -> Self::Result {
        self.placement.remove(&msg.tp);
        let reply = self.forward(&msg.tp, ShardCommand::Delete { tp: msg.tp.clone() });
        Box::pin(async move { reply.await.map(|_| ()) })
    }
}

/// Run one retention pass now (the timer does this every
/// `log.retention.check.interval.ms`).
#[derive(Debug)]
pub struct RetentionTick;

impl Message for RetentionTick {
    type Result = Result<Vec<(TopicPartition, RetentionReport)>, LogActorError>;
}

impl Handler<RetentionTick> for LogActor {
    type Result = ResponseFuture<Result<Vec<(TopicPartition, RetentionReport)>, LogActorError>>;

    fn handle(&mut self, _msg: RetentionTick, _ctx: &mut Context<Self>) -> Self::Result {
        let replies = self.broadcast(|| ShardCommand::EnforceRetention);
        Box::pin(async move {
            let mut all = Vec::new();
            for reply in replies.await {
                if let ShardReply::Retention(mut reports) = reply? {
                    all.append(&mut reports);
                }
            }
            Ok(all)
        })
    }
}

/// Write the checkpoint files now.
#[derive(Debug)]
pub struct WriteCheckpoints;

impl Message for WriteCheckpoints {
    type Result = Result<(), LogActorError>;
}

impl Handler<WriteCheckpoints> for LogActor {
    type Result = ResponseFuture<Result<(), LogActorError>>;

    fn handle(&mut self, _msg: WriteCheckpoints, _ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.checkpoint())
    }
}

/// Flush and close every log, write the checkpoints and the clean-shutdown
/// markers. Logs are closed afterwards: send nothing else but this again.
#[derive(Debug)]
pub struct Close;

impl Message for Close {
    type Result = Result<(), LogActorError>;
}

impl Handler<Close> for LogActor {
    type Result = ResponseFuture<Result<(), LogActorError>>;

    fn handle(&mut self, _msg: Close, _ctx: &mut Context<Self>) -> Self::Result {
        let replies = self.broadcast(|| ShardCommand::CloseAll);
        let dir_paths: Vec<PathBuf> = self.dirs.iter().map(|d| d.path().to_path_buf()).collect();
        let dirs = self.dirs.clone();
        Box::pin(async move {
            let mut entries = Vec::new();
            let mut failed = Vec::new();
            for reply in replies.await {
                if let ShardReply::Closed {
                    entries: mut part,
                    failed_dirs,
                } = reply?
                {
                    entries.append(&mut part);
                    failed.extend(failed_dirs);
                }
            }
            // A directory with a partition that failed to close is left
            // without the marker, so its next start recovers.
            let mark_clean: Vec<bool> = dir_paths.iter().map(|p| !failed.contains(p)).collect();
            tokio::task::spawn_blocking(move || {
                write_checkpoint_files(&dirs, &entries, &mark_clean)
            })
            .await
            .map_err(|_| LogActorError::Stopped)?
        })
    }
}
