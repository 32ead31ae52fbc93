//! The shared log manager: the one door to persistence. It starts the log
//! shards (`shard.rs`: blocking threads that own the partition logs), places
//! new partitions on the `log.dirs` entry holding the fewest, and runs the
//! periodic duties: retention, time-based flushes, checkpoint files, and
//! retrying partitions a disk fault took offline. Partition actors get a
//! `ShardLink` from it and send their appends and reads straight to their
//! shard; the controller's `LogAdmin` requests (offsets, topic id, config)
//! are forwarded, and tests use `GetShards` too. Every send goes through
//! the shard's bounded in-flight window.
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
use kafka_protocol::error::ResponseError;
use tokio::sync::Semaphore;

use crate::clock::SharedClock;
use crate::storage::log_dir::LogDir;
use crate::storage::{LogConfig, LogError, RetentionReport};
use crate::topic_partition::TopicPartition;

pub mod shard;

#[cfg(any(test, feature = "internals"))]
pub use shard::{Append, Roll};
pub use shard::{
    AppendAsFollower, AppendDeferringFlush, AssignLeaderEpoch, AssignTopicId, CheckpointEntry,
    DeleteRecordsBefore, EndOffsetForEpoch, Flush, GetLogOffsets, LogOffsets, OffsetForTimestamp,
    Read, ReplicaLog, SetHighWatermark, SwapCleaned, TakeCleanable, Truncate, TruncateFully,
    UpdateLogConfig,
};
use shard::{
    CloseAll, ClosedLogs, CollectCheckpoints, CreateShardLog, DeleteShardLog, DescribeShardLogs,
    EnforceRetention, FlushDueLogs, LogShard, OpenLog, PartitionRequest, Permitted, ReopenOffline,
};

use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};

#[derive(Debug, thiserror::Error)]
pub enum LogManagerError {
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
    #[error("a log shard panicked during {what}: {reason}")]
    ShardPanic { what: &'static str, reason: String },
    #[error("the log manager is not running")]
    Stopped,
}

impl LogManagerError {
    /// Kafka's error code for this error.
    pub fn code(&self) -> i16 {
        match self {
            LogManagerError::UnknownPartition(_) => ResponseError::UnknownTopicOrPartition.code(),
            LogManagerError::PartitionOffline { .. } => ResponseError::KafkaStorageError.code(),
            LogManagerError::PartitionExists(_) => ResponseError::UnknownServerError.code(),
            LogManagerError::Log(e) => e.code(),
            LogManagerError::ShardGone(_)
            | LogManagerError::ShardPanic { .. }
            | LogManagerError::Stopped => ResponseError::KafkaStorageError.code(),
        }
    }
}

/// How the log manager runs; built from the broker config.
#[derive(Debug, Clone)]
pub struct LogManagerConfig {
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
    /// How often offline partitions are tried again (a full disk freed, a
    /// remount): ferrolog's own setting, Kafka needs a restart for this.
    pub offline_retry_interval_ms: u64,
}

impl LogManagerConfig {
    pub fn new(log_dirs: Vec<PathBuf>, default_config: LogConfig) -> Self {
        LogManagerConfig {
            log_dirs,
            default_config,
            topic_configs: HashMap::new(),
            shards: 2,
            max_in_flight_per_shard: 256,
            retention_check_interval_ms: 300_000,
            flush_scheduler_interval_ms: u64::MAX,
            checkpoint_interval_ms: 60_000,
            offline_retry_interval_ms: 10_000,
        }
    }

    pub fn from_broker(config: &crate::config::BrokerConfig) -> Self {
        let mut actor = LogManagerConfig::new(config.log_dirs.clone(), config.log_config());
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
    /// The partition.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // tests read it
    pub tp: TopicPartition,
    pub offsets: Result<LogOffsets, LogManagerError>,
    /// Segments re-read and checked because they were past the recovery
    /// point of a directory not shut down cleanly.
    pub recovered_segments: usize,
}

/// A partition's way to its shard: partition actors send their appends and
/// reads here directly, without a hop through the log manager. Every send
/// waits for room in the shard's in-flight window first.
#[derive(Clone)]
pub struct ShardLink {
    index: usize,
    addr: Addr<LogShard>,
    in_flight: Arc<Semaphore>,
}

/// A message already enqueued at its shard; resolves to the shard's answer.
pub type ShardReply<T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, LogManagerError>>>>;

impl ShardLink {
    /// Enqueue `msg` now if the in-flight window has room (so messages sent
    /// one after the other arrive in that order); the message back if not.
    pub fn try_dispatch<M, T>(&self, msg: M) -> Result<ShardReply<T>, M>
    where
        M: Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
    {
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            return Err(msg);
        };
        Ok(self.enqueue(msg, permit))
    }

    /// Wait for room in the window, then enqueue `msg`; resolves once it is
    /// enqueued, to its answer's future.
    pub async fn dispatch_when_room<M, T>(&self, msg: M) -> ShardReply<T>
    where
        M: Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
    {
        match self.in_flight.clone().acquire_owned().await {
            Ok(permit) => self.enqueue(msg, permit),
            Err(_) => {
                let index = self.index;
                Box::pin(async move { Err(LogManagerError::ShardGone(index)) })
            }
        }
    }

    fn enqueue<M, T>(&self, msg: M, permit: tokio::sync::OwnedSemaphorePermit) -> ShardReply<T>
    where
        M: Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
    {
        let index = self.index;
        let (reply, answered) = tokio::sync::oneshot::channel();
        // `do_send` enqueues now and in order (the window is the bound).
        // The shard answers through `reply` and gives the place in the
        // window back as it does, whether or not the sender polls for the
        // answer: a partition actor waiting for room (`ctx.wait`) does not
        // poll its earlier answers, and would wait forever on places only
        // they could free. A shard that is gone drops the message, and
        // with it the permit and the reply.
        self.addr
            .do_send::<Permitted>(Permitted(Box::new(move |shard, ctx| {
                let answer = <LogShard as Handler<M>>::handle(shard, msg, ctx);
                // The sender may have stopped waiting: the answer is unread.
                let _ = reply.send(answer);
                drop(permit);
            })));
        Box::pin(async move {
            answered
                .await
                .unwrap_or(Err(LogManagerError::ShardGone(index)))
        })
    }

    /// Send `msg` without waiting for its answer, enqueued now when the
    /// window has room (so it stays in order with the sender's earlier
    /// messages), else once there is room, from a task of its own. The
    /// shard handles it either way: its answer is simply not read.
    pub fn send_detached<M, T>(&self, msg: M)
    where
        M: Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
    {
        match self.try_dispatch(msg) {
            Ok(_unread) => {}
            Err(msg) => {
                let link = self.clone();
                actix_rt::spawn(async move {
                    let _ = link.send(msg).await;
                });
            }
        }
    }

    /// Send `msg` to the shard, within its in-flight window.
    pub async fn send<M, T>(&self, msg: M) -> Result<T, LogManagerError>
    where
        M: Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
    {
        self.dispatch_when_room(msg).await.await
    }
}

/// Every shard, and which one owns a partition.
#[derive(Clone)]
pub struct LogShards(Arc<Vec<ShardLink>>);

impl LogShards {
    pub fn for_partition(&self, tp: &TopicPartition) -> ShardLink {
        // Never empty: `start` makes at least one shard.
        self.0[shard_of(tp, self.0.len())].clone()
    }

    /// Send a list-valued message to every shard; one list of every
    /// answer, or the first error.
    pub(crate) fn gather<M, T>(
        &self,
        make: impl Fn() -> M,
    ) -> impl std::future::Future<Output = Result<Vec<T>, LogManagerError>> + 'static
    where
        M: Message<Result = Result<Vec<T>, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<Vec<T>, LogManagerError>>,
    {
        let replies = self.broadcast(make);
        async move {
            let mut all = Vec::new();
            for reply in replies.await {
                all.append(&mut reply?);
            }
            Ok(all)
        }
    }

    /// Send a message to every shard and gather the answers.
    fn broadcast<M, T>(
        &self,
        make: impl Fn() -> M,
    ) -> impl std::future::Future<Output = Vec<Result<T, LogManagerError>>> + 'static
    where
        M: Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
    {
        let sends: Vec<_> = self
            .0
            .iter()
            .map(|shard| {
                let shard = shard.clone();
                let msg = make();
                async move { shard.send(msg).await }
            })
            .collect();
        futures_util::future::join_all(sends)
    }
}

pub struct LogManager {
    config: LogManagerConfig,
    shards: LogShards,
    dirs: Vec<Arc<LogDir>>,
    /// Which `dirs` entry holds each partition.
    placement: HashMap<TopicPartition, usize>,
    link: SupervisorLink,
}

impl LogManager {
    #[cfg(any(test, feature = "internals"))]
    /// Open the log directories, start the shards, load every partition found
    /// (recovering those not shut down cleanly, shards in parallel), then
    /// start the actor under a supervisor. Must run inside an actix system.
    pub async fn start(
        config: LogManagerConfig,
        clock: SharedClock,
    ) -> Result<(Addr<LogManager>, Vec<LoadedLog>), LogManagerError> {
        Self::start_supervised(config, clock, Escalation::Degrade).await
    }

    /// `start`, with what happens when the actor keeps failing.
    pub async fn start_supervised(
        config: LogManagerConfig,
        clock: SharedClock,
        escalation: Escalation,
    ) -> Result<(Addr<LogManager>, Vec<LoadedLog>), LogManagerError> {
        let mut dirs = Vec::with_capacity(config.log_dirs.len());
        for path in &config.log_dirs {
            let path = path.clone();
            let dir = tokio::task::spawn_blocking(move || LogDir::open(&path))
                .await
                .map_err(|_| LogManagerError::Stopped)??;
            dirs.push(Arc::new(dir));
        }
        let shards = LogShards(Arc::new(
            (0..config.shards.max(1))
                .map(|index| {
                    let clock = clock.clone();
                    ShardLink {
                        index,
                        addr: SyncArbiter::start(1, move || LogShard::new(index, clock.clone())),
                        in_flight: Arc::new(Semaphore::new(config.max_in_flight_per_shard.max(1))),
                    }
                })
                .collect(),
        ));
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
                let open = OpenLog {
                    tp: tp.clone(),
                    dir: path.clone(),
                    config: config.config_for(tp),
                    options: dir.load_options(tp),
                };
                let shard = shards.for_partition(tp);
                let tp = tp.clone();
                pending.push(async move {
                    match shard.send(open).await {
                        Ok((offsets, report)) => LoadedLog {
                            tp,
                            offsets: Ok(offsets),
                            recovered_segments: report.recovered_segments,
                        },
                        Err(e) => LoadedLog {
                            tp,
                            offsets: Err(e),
                            recovered_segments: 0,
                        },
                    }
                });
            }
        }
        let loaded = futures_util::future::join_all(pending).await;
        let link = SupervisorLink::default();
        let actor = LogManager {
            config,
            shards,
            dirs,
            placement,
            link: link.clone(),
        };
        let addr = supervise(
            None,
            ChildSpec::new("the log manager", escalation),
            link,
            move |_| actor,
        );
        Ok((addr, loaded))
    }

    /// Send a partition's request to its shard.
    fn forward<M, T>(
        &self,
        msg: M,
    ) -> impl std::future::Future<Output = Result<T, LogManagerError>> + 'static
    where
        M: PartitionRequest + Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
    {
        let shard = self.shards.for_partition(msg.tp());
        async move { shard.send(msg).await }
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
                let retention = actor.shards.broadcast(|| EnforceRetention);
                ctx.spawn(fut::wrap_future(async move {
                    log_retention(retention.await);
                }));
            });
        }
        if let Some(every) = interval(self.config.flush_scheduler_interval_ms) {
            ctx.run_interval(every, |actor, ctx| {
                let flush = actor.shards.broadcast(|| FlushDueLogs);
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
        if let Some(every) = interval(self.config.offline_retry_interval_ms) {
            ctx.run_interval(every, |actor, ctx| {
                let reopen = actor.shards.broadcast(|| ReopenOffline);
                ctx.spawn(fut::wrap_future(async move {
                    log_failures("reopening offline partitions", reopen.await);
                }));
            });
        }
    }

    fn checkpoint(
        &self,
    ) -> impl std::future::Future<Output = Result<(), LogManagerError>> + 'static {
        let collect = self.shards.broadcast(|| CollectCheckpoints);
        let dirs = self.dirs.clone();
        async move {
            let mut entries = Vec::new();
            for reply in collect.await {
                entries.append(&mut reply?);
            }
            let mark_clean = vec![false; dirs.len()];
            tokio::task::spawn_blocking(move || {
                write_checkpoint_files(&dirs, &entries, &mark_clean)
            })
            .await
            .map_err(|_| LogManagerError::Stopped)?
        }
    }
}

/// The shard that owns `tp`, stable for the life of the process.
pub fn shard_of(tp: &TopicPartition, shards: usize) -> usize {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    tp.hash(&mut hasher);
    (hasher.finish() % shards.max(1) as u64) as usize
}

fn interval(ms: u64) -> Option<Duration> {
    // Kafka uses Long.MAX_VALUE to mean "never".
    (ms > 0 && ms < i64::MAX as u64 / 2).then(|| Duration::from_millis(ms))
}

fn log_failures<T>(what: &str, replies: Vec<Result<T, LogManagerError>>) {
    for reply in replies {
        if let Err(e) = reply {
            log::error!("{what} failed on a shard: {e}");
        }
    }
}

fn log_retention(replies: Vec<Result<Vec<(TopicPartition, RetentionReport)>, LogManagerError>>) {
    for reply in replies {
        match reply {
            Err(e) => log::error!("retention failed on a shard: {e}"),
            Ok(reports) => {
                for (tp, report) in reports.iter().filter(|(_, r)| r.deleted_segments > 0) {
                    log::info!(
                        "retention deleted {} segment(s), {} bytes, of {tp}; log start offset {}",
                        report.deleted_segments,
                        report.deleted_bytes,
                        report.log_start_offset
                    );
                }
            }
        }
    }
}

fn write_checkpoint_files(
    dirs: &[Arc<LogDir>],
    entries: &[CheckpointEntry],
    mark_clean: &[bool],
) -> Result<(), LogManagerError> {
    for (i, dir) in dirs.iter().enumerate() {
        let mut recovery_points = BTreeMap::new();
        let mut log_start_offsets = BTreeMap::new();
        let mut high_watermarks = BTreeMap::new();
        let mut cleaner_offsets = BTreeMap::new();
        for entry in entries.iter().filter(|e| e.log_dir == dir.path()) {
            recovery_points.insert(entry.tp.clone(), entry.recovery_point);
            log_start_offsets.insert(entry.tp.clone(), entry.log_start_offset);
            high_watermarks.insert(entry.tp.clone(), entry.high_watermark);
            if let Some(offset) = entry.cleaner_offset {
                cleaner_offsets.insert(entry.tp.clone(), offset);
            }
        }
        dir.write_checkpoints(
            &recovery_points,
            &log_start_offsets,
            &high_watermarks,
            &cleaner_offsets,
        )?;
        if mark_clean.get(i).copied().unwrap_or(false) {
            dir.mark_clean_shutdown()?;
        }
    }
    Ok(())
}

impl Actor for LogManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.schedule(ctx);
    }
}

impl actix::Supervised for LogManager {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        // Logs live in the shards and placement is rebuilt on every create,
        // so a restart loses nothing; `started` schedules the timers again.
        if let Some(cause) = self.link.escalated() {
            log::error!("the log manager keeps failing ({cause}); it serves on, degraded");
        }
    }
}

/// Declares that the log manager forwards a partition's request to its shard.
macro_rules! forwarded {
    ($($name:ident),* $(,)?) => {
        $(
            impl Handler<$name> for LogManager {
                type Result = ResponseFuture<<$name as Message>::Result>;

                fn handle(&mut self, msg: $name, _ctx: &mut Context<Self>) -> Self::Result {
                    Box::pin(self.forward(msg))
                }
            }
        )*
    };
}

// Only what the controller's `LogAdmin` sends; partition actors and tests
// send the rest straight to the partition's shard (`GetShards`).
forwarded!(GetLogOffsets, AssignTopicId, UpdateLogConfig);

/// Every shard, for actors that talk to their shard directly.
#[derive(Debug)]
pub struct GetShards;

impl Message for GetShards {
    type Result = LogShards;
}

impl Handler<GetShards> for LogManager {
    type Result = MessageResult<GetShards>;

    fn handle(&mut self, _msg: GetShards, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.shards.clone())
    }
}

/// What the controller asks of the log: a partition's offsets, a new or
/// deleted log, a topic's configs applied. Typed recipients rather than
/// the `LogManager`'s address, so that another storage (tiered, say) can
/// take its place without the controller changing.
#[derive(Clone)]
pub struct LogAdmin {
    pub create: Recipient<CreateLog>,
    pub delete: Recipient<DeleteLog>,
    pub offsets: Recipient<GetLogOffsets>,
    pub update_config: Recipient<UpdateLogConfig>,
    pub topic_id: Recipient<AssignTopicId>,
}

impl LogAdmin {
    pub fn of(log: &Addr<LogManager>) -> Self {
        LogAdmin {
            create: log.clone().recipient(),
            delete: log.clone().recipient(),
            offsets: log.clone().recipient(),
            update_config: log.clone().recipient(),
            topic_id: log.clone().recipient(),
        }
    }
}

/// Create an empty log for a new partition on the least loaded log dir.
#[derive(Debug)]
pub struct CreateLog {
    pub tp: TopicPartition,
    pub config: LogConfig,
}

impl Message for CreateLog {
    type Result = Result<LogOffsets, LogManagerError>;
}

impl Handler<CreateLog> for LogManager {
    type Result = ResponseFuture<Result<LogOffsets, LogManagerError>>;

    fn handle(&mut self, msg: CreateLog, _ctx: &mut Context<Self>) -> Self::Result {
        if self.placement.contains_key(&msg.tp) {
            return Box::pin(async move { Err(LogManagerError::PartitionExists(msg.tp)) });
        }
        let dir_index = self.least_loaded_dir();
        let Some(dir) = self.dirs.get(dir_index) else {
            return Box::pin(async move { Err(LogManagerError::Stopped) });
        };
        self.placement.insert(msg.tp.clone(), dir_index);
        let shard = self.shards.for_partition(&msg.tp);
        let create = CreateShardLog {
            tp: msg.tp,
            log_dir: dir.path().to_path_buf(),
            config: msg.config,
        };
        Box::pin(async move { shard.send(create).await })
    }
}

/// Delete a partition's log and its files (topic deletion).
#[derive(Debug)]
pub struct DeleteLog {
    pub tp: TopicPartition,
}

impl Message for DeleteLog {
    type Result = Result<(), LogManagerError>;
}

impl Handler<DeleteLog> for LogManager {
    type Result = ResponseFuture<Result<(), LogManagerError>>;

    fn handle(&mut self, msg: DeleteLog, _ctx: &mut Context<Self>) -> Self::Result {
        self.placement.remove(&msg.tp);
        let shard = self.shards.for_partition(&msg.tp);
        Box::pin(async move { shard.send(DeleteShardLog { tp: msg.tp }).await })
    }
}

/// One log directory as DescribeLogDirs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirDescription {
    /// The `log.dirs` entry.
    pub path: PathBuf,
    /// The file system's size and the bytes free to this process
    /// (`statvfs`), -1 when they cannot be read.
    pub total_bytes: i64,
    pub usable_bytes: i64,
    /// Why the directory cannot be read (Kafka's KAFKA_STORAGE_ERROR).
    pub error: Option<String>,
    pub replicas: Vec<ReplicaLog>,
}

/// Every log directory with the replicas it holds (DescribeLogDirs).
#[derive(Debug)]
pub struct DescribeLogDirs;

impl Message for DescribeLogDirs {
    type Result = Result<Vec<LogDirDescription>, LogManagerError>;
}

impl Handler<DescribeLogDirs> for LogManager {
    type Result = ResponseFuture<Result<Vec<LogDirDescription>, LogManagerError>>;

    fn handle(&mut self, _msg: DescribeLogDirs, _ctx: &mut Context<Self>) -> Self::Result {
        let replicas = self.shards.gather(|| DescribeShardLogs);
        let paths: Vec<PathBuf> = self.dirs.iter().map(|d| d.path().to_path_buf()).collect();
        Box::pin(async move {
            let mut replicas = replicas.await?;
            let mut described = Vec::with_capacity(paths.len());
            for path in paths {
                let (held, rest) = replicas.into_iter().partition(|r| r.log_dir == path);
                replicas = rest;
                let space = {
                    let path = path.clone();
                    tokio::task::spawn_blocking(move || file_system_space(&path))
                        .await
                        .map_err(|_| LogManagerError::Stopped)?
                };
                let (total_bytes, usable_bytes, error) = match space {
                    Ok((total, usable)) => (total, usable, None),
                    Err(e) => (-1, -1, Some(e.to_string())),
                };
                described.push(LogDirDescription {
                    path,
                    total_bytes,
                    usable_bytes,
                    error,
                    replicas: held,
                });
            }
            Ok(described)
        })
    }
}

/// The size of the file system holding `path` and the bytes free to an
/// unprivileged writer, as Kafka's `FileStore.getTotalSpace` and
/// `getUsableSpace` give them.
fn file_system_space(path: &std::path::Path) -> std::io::Result<(i64, i64)> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statvfs writes only into `stat`, a plain C struct we own;
    // `c_path` is NUL-terminated and outlives the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let block = stat.f_frsize as i64;
    Ok((
        (stat.f_blocks as i64).saturating_mul(block),
        (stat.f_bavail as i64).saturating_mul(block),
    ))
}

/// Flush and close every log, write the checkpoints and the clean-shutdown
/// markers. Logs are closed afterwards: send nothing else but this again.
#[derive(Debug)]
pub struct Close;

impl Message for Close {
    type Result = Result<(), LogManagerError>;
}

impl Handler<Close> for LogManager {
    type Result = ResponseFuture<Result<(), LogManagerError>>;

    fn handle(&mut self, _msg: Close, _ctx: &mut Context<Self>) -> Self::Result {
        let replies = self.shards.broadcast(|| CloseAll);
        let dir_paths: Vec<PathBuf> = self.dirs.iter().map(|d| d.path().to_path_buf()).collect();
        let dirs = self.dirs.clone();
        Box::pin(async move {
            let mut entries = Vec::new();
            let mut failed = Vec::new();
            for reply in replies.await {
                let ClosedLogs {
                    entries: mut part,
                    failed_dirs,
                } = reply?;
                entries.append(&mut part);
                failed.extend(failed_dirs);
            }
            // A directory with a partition that failed to close is left
            // without the marker, so its next start recovers.
            let mark_clean: Vec<bool> = dir_paths.iter().map(|p| !failed.contains(p)).collect();
            tokio::task::spawn_blocking(move || {
                write_checkpoint_files(&dirs, &entries, &mark_clean)
            })
            .await
            .map_err(|_| LogManagerError::Stopped)?
        })
    }
}
