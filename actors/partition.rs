//! A partition actor: one per partition this broker leads. It owns the
//! partition's offsets as the protocol sees them: log end offset, high
//! watermark (equal to the log end offset until replication exists) and log
//! start offset. Produce and fetch for the partition go through it; it
//! persists through the shared log actor and announces every new high
//! watermark on a `watch` channel, which is how parked fetches wake up.
//!
//! It runs under a supervisor: when it stops it is restarted after a
//! backoff and rebuilds its offsets from the log; past its restart budget it
//! stays up but offline (every request gets KAFKA_STORAGE_ERROR) rather than
//! restarting in a loop.
//!
//! It never touches a file, and never serves records above the high
//! watermark to consumers.

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::watch;

use crate::storage::{AppendInfo, LogConfig, ReadInfo};
use crate::topic_partition::TopicPartition;

use super::log::{self as log_actor, GetLogOffsets, LogActor, LogActorError};
use super::log_shard::LogOffsets;
use super::supervisor::RestartBudget;

/// A partition's offsets, as the partition actor last knew them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionState {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
}

/// Where to reach a partition: its actor, and its high watermark feed.
#[derive(Clone)]
pub struct PartitionHandle {
    pub addr: Addr<PartitionActor>,
    pub high_watermark: watch::Receiver<i64>,
}

pub struct PartitionActor {
    tp: TopicPartition,
    log: Addr<LogActor>,
    state: PartitionState,
    high_watermark: watch::Sender<i64>,
    restarts: RestartBudget,
    /// Why the partition no longer serves, once its restart budget is spent
    /// or its log cannot be read back.
    offline: Option<String>,
}

impl PartitionActor {
    /// Start the actor for a log already loaded or created by the log actor.
    pub fn start(tp: TopicPartition, log: Addr<LogActor>, offsets: LogOffsets) -> PartitionHandle {
        let (sender, receiver) = watch::channel(offsets.log_end_offset);
        let actor = PartitionActor {
            tp,
            log,
            state: PartitionState {
                log_start_offset: offsets.log_start_offset,
                log_end_offset: offsets.log_end_offset,
                high_watermark: offsets.log_end_offset,
            },
            high_watermark: sender,
            restarts: RestartBudget::default(),
            offline: None,
        };
        PartitionHandle {
            addr: actix::Supervisor::start(move |_| actor),
            high_watermark: receiver,
        }
    }

    fn offline_error(&self) -> Option<LogActorError> {
        self.offline
            .as_ref()
            .map(|reason| LogActorError::PartitionOffline {
                tp: self.tp.clone(),
                reason: reason.clone(),
            })
    }

    fn advance(&mut self, log_end_offset: i64, log_start_offset: i64) {
        self.state.log_end_offset = self.state.log_end_offset.max(log_end_offset);
        self.state.log_start_offset = self.state.log_start_offset.max(log_start_offset);
        // Single replica: everything written is committed.
        if self.state.log_end_offset > self.state.high_watermark {
            self.state.high_watermark = self.state.log_end_offset;
            self.high_watermark.send_replace(self.state.high_watermark);
        }
    }
}

impl Actor for PartitionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
        log::debug!("partition {} is online at {:?}", self.tp, self.state);
    }
}

impl actix::Supervised for PartitionActor {
    fn restarting(&mut self, ctx: &mut Context<Self>) {
        if self.offline.is_some() {
            // Stopped on purpose (or already given up on): stay down.
            return;
        }
        if !self.restarts.record_restart(std::time::Instant::now()) {
            log::error!("partition {} keeps failing; it stays offline", self.tp);
            self.offline = Some("restarted too often".into());
            return;
        }
        let backoff = self.restarts.backoff();
        log::warn!(
            "partition {} restarts in {backoff:?} and rebuilds its state from the log",
            self.tp
        );
        let offsets = self.log.send(GetLogOffsets {
            tp: self.tp.clone(),
        });
        let rebuild = async move {
            tokio::time::sleep(backoff).await;
            offsets.await
        };
        // Nothing is served until the state is rebuilt.
        ctx.wait(
            rebuild
                .into_actor(self)
                .map(|result, actor, _ctx| match result {
                    Ok(Ok(offsets)) => {
                        actor.state = PartitionState {
                            log_start_offset: offsets.log_start_offset,
                            log_end_offset: offsets.log_end_offset,
                            high_watermark: offsets.log_end_offset,
                        };
                        actor.high_watermark.send_replace(offsets.log_end_offset);
                    }
                    Ok(Err(e)) => actor.offline = Some(e.to_string()),
                    Err(_) => actor.offline = Some("the log actor is gone".into()),
                }),
        );
    }
}

/// Stop and restart this partition actor, rebuilding its state from the
/// log (an operator's or a test's way to exercise supervision).
#[derive(Debug)]
pub struct Restart;

impl Message for Restart {
    type Result = ();
}

impl Handler<Restart> for PartitionActor {
    type Result = ();

    fn handle(&mut self, _msg: Restart, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

/// Append a producer's records (acks 0, 1 or all: all behaves as 1 until
/// replication exists).
#[derive(Debug)]
pub struct AppendRecords {
    pub records: Bytes,
}

impl Message for AppendRecords {
    type Result = Result<(AppendInfo, i64), LogActorError>;
}

impl Handler<AppendRecords> for PartitionActor {
    /// The append and the log start offset after it.
    type Result = ResponseActFuture<Self, Result<(AppendInfo, i64), LogActorError>>;

    fn handle(&mut self, msg: AppendRecords, _ctx: &mut Context<Self>) -> Self::Result {
        if let Some(e) = self.offline_error() {
            return Box::pin(fut::ready(Err(e)));
        }
        let append = self.log.send(log_actor::Append {
            tp: self.tp.clone(),
            records: msg.records,
        });
        Box::pin(
            async move { append.await.map_err(|_| LogActorError::Stopped)? }
                .into_actor(self)
                .map(|result, actor, _ctx| {
                    let info = result?;
                    actor.advance(info.log_end_offset, actor.state.log_start_offset);
                    Ok((info, actor.state.log_start_offset))
                }),
        )
    }
}

/// Read for a consumer: from `offset`, up to `max_bytes` (but the whole
/// first batch), never above the high watermark.
#[derive(Debug)]
pub struct ReadRecords {
    pub offset: i64,
    pub max_bytes: u64,
}

/// The read and the partition's offsets at the time of the read.
#[derive(Debug)]
pub struct PartitionRead {
    pub read: ReadInfo,
    pub state: PartitionState,
}

impl Message for ReadRecords {
    type Result = Result<PartitionRead, LogActorError>;
}

impl Handler<ReadRecords> for PartitionActor {
    type Result = ResponseFuture<Result<PartitionRead, LogActorError>>;

    fn handle(&mut self, msg: ReadRecords, _ctx: &mut Context<Self>) -> Self::Result {
        if let Some(e) = self.offline_error() {
            return Box::pin(async move { Err(e) });
        }
        let state = self.state;
        let read = self.log.send(log_actor::Read {
            tp: self.tp.clone(),
            offset: msg.offset,
            max_bytes: msg.max_bytes,
            max_offset: Some(state.high_watermark),
        });
        Box::pin(async move {
            let read = read.await.map_err(|_| LogActorError::Stopped)??;
            Ok(PartitionRead { read, state })
        })
    }
}

/// The partition's offsets now.
#[derive(Debug)]
pub struct GetState;

impl Message for GetState {
    type Result = PartitionState;
}

impl Handler<GetState> for PartitionActor {
    type Result = MessageResult<GetState>;

    fn handle(&mut self, _msg: GetState, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.state)
    }
}

/// First offset with a timestamp at or after `timestamp` (ListOffsets).
#[derive(Debug)]
pub struct OffsetForTimestamp {
    pub timestamp: i64,
}

impl Message for OffsetForTimestamp {
    type Result = Result<Option<(i64, i64)>, LogActorError>;
}

impl Handler<OffsetForTimestamp> for PartitionActor {
    type Result = ResponseFuture<Result<Option<(i64, i64)>, LogActorError>>;

    fn handle(&mut self, msg: OffsetForTimestamp, _ctx: &mut Context<Self>) -> Self::Result {
        let high_watermark = self.state.high_watermark;
        let lookup = self.log.send(log_actor::OffsetForTimestamp {
            tp: self.tp.clone(),
            timestamp: msg.timestamp,
        });
        Box::pin(async move {
            let found = lookup.await.map_err(|_| LogActorError::Stopped)??;
            Ok(found.filter(|(offset, _)| *offset < high_watermark))
        })
    }
}

/// Raise the log start offset (DeleteRecords); -1 means the high watermark.
#[derive(Debug)]
pub struct DeleteRecordsBefore {
    pub offset: i64,
}

impl Message for DeleteRecordsBefore {
    type Result = Result<i64, LogActorError>;
}

impl Handler<DeleteRecordsBefore> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<i64, LogActorError>>;

    fn handle(&mut self, msg: DeleteRecordsBefore, _ctx: &mut Context<Self>) -> Self::Result {
        let offset = if msg.offset == -1 {
            self.state.high_watermark
        } else {
            msg.offset
        };
        let high_watermark = self.state.high_watermark;
        let tp = self.tp.clone();
        let log = self.log.clone();
        Box::pin(
            async move {
                if offset > high_watermark || offset < 0 {
                    return Err(LogActorError::Log(
                        crate::storage::LogError::OffsetOutOfRange {
                            offset,
                            log_start_offset: 0,
                            log_end_offset: high_watermark,
                        },
                    ));
                }
                log.send(log_actor::DeleteRecordsBefore { tp, offset })
                    .await
                    .map_err(|_| LogActorError::Stopped)?
            }
            .into_actor(self)
            .map(|result, actor, _ctx| {
                let start = result?;
                actor.state.log_start_offset = actor.state.log_start_offset.max(start);
                Ok(actor.state.log_start_offset)
            }),
        )
    }
}

/// A topic config change reached this partition.
#[derive(Debug)]
pub struct UpdateConfig {
    pub config: LogConfig,
}

impl Message for UpdateConfig {
    type Result = Result<(), LogActorError>;
}

impl Handler<UpdateConfig> for PartitionActor {
    type Result = ResponseFuture<Result<(), LogActorError>>;

    fn handle(&mut self, msg: UpdateConfig, _ctx: &mut Context<Self>) -> Self::Result {
        let update = self.log.send(log_actor::UpdateLogConfig {
            tp: self.tp.clone(),
            config: msg.config,
        });
        Box::pin(async move { update.await.map_err(|_| LogActorError::Stopped)? })
    }
}

/// Stop serving (topic deletion or shutdown).
#[derive(Debug)]
pub struct StopPartition;

impl Message for StopPartition {
    type Result = ();
}

impl Handler<StopPartition> for PartitionActor {
    type Result = ();

    fn handle(&mut self, _msg: StopPartition, ctx: &mut Context<Self>) {
        self.offline = Some("the partition was stopped".into());
        ctx.stop();
    }
}

/// Every partition actor on this broker, by partition. The controller
/// writes it; request handlers read it on every produce and fetch.
#[derive(Clone, Default)]
pub struct PartitionRegistry(
    std::sync::Arc<std::sync::RwLock<std::collections::HashMap<TopicPartition, PartitionHandle>>>,
);

impl PartitionRegistry {
    pub fn get(&self, tp: &TopicPartition) -> Option<PartitionHandle> {
        match self.0.read() {
            Ok(map) => map.get(tp).cloned(),
            Err(poisoned) => poisoned.into_inner().get(tp).cloned(),
        }
    }

    pub fn insert(&self, tp: TopicPartition, handle: PartitionHandle) {
        match self.0.write() {
            Ok(mut map) => map.insert(tp, handle),
            Err(poisoned) => poisoned.into_inner().insert(tp, handle),
        };
    }

    pub fn remove(&self, tp: &TopicPartition) -> Option<PartitionHandle> {
        match self.0.write() {
            Ok(mut map) => map.remove(tp),
            Err(poisoned) => poisoned.into_inner().remove(tp),
        }
    }

    pub fn all(&self) -> Vec<(TopicPartition, PartitionHandle)> {
        match self.0.read() {
            Ok(map) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Err(poisoned) => poisoned
                .into_inner()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }
}
