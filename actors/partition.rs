//! A partition actor: one per partition this broker leads. It owns the
//! partition's offsets as the protocol sees them: log end offset, high
//! watermark (equal to the log end offset until replication exists) and log
//! start offset. Produce and fetch for the partition go through it; it
//! persists by sending to its log shard directly (a `ShardLink` from the
//! shared log actor) and announces every new high watermark on a `watch`
//! channel, which is how parked fetches wake up.
//!
//! It runs under the common supervisor (`actors/supervisor.rs`): a panic or
//! an error stop restarts it after a backoff, and it rebuilds its offsets
//! from the log; past its budget it stays up but offline (every request gets
//! KAFKA_STORAGE_ERROR) rather than restarting in a loop. When its log went
//! offline with a disk fault, it asks again before each request and comes
//! back by itself once the log actor has reopened the log.
//!
//! It never touches a file, and never serves records above the high
//! watermark to consumers.

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::watch;

use crate::storage::{AppendInfo, LogConfig, ReadInfo};
use crate::topic_partition::TopicPartition;

use super::event_bus::{BrokerEvent, EventBus};
use super::log::shard::LogShard;
use super::log::{
    self as log_actor, GetLogOffsets, LogActorError, LogOffsets, LogShards, ShardLink, ShardReply,
};
use super::pool::ActorPool;
use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};

/// A partition's offsets, as the partition actor last knew them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionState {
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub high_watermark: i64,
}

impl PartitionState {
    fn from_log(offsets: LogOffsets) -> Self {
        PartitionState {
            log_start_offset: offsets.log_start_offset,
            log_end_offset: offsets.log_end_offset,
            // Single replica: everything written is committed.
            high_watermark: offsets.log_end_offset,
        }
    }
}

/// Where to reach a partition: its actor, its high watermark feed, and its
/// supervision record.
#[derive(Clone)]
pub struct PartitionHandle {
    pub addr: Addr<PartitionActor>,
    pub high_watermark: watch::Receiver<i64>,
    pub supervision: SupervisorLink,
}

pub struct PartitionActor {
    tp: TopicPartition,
    shard: ShardLink,
    state: PartitionState,
    high_watermark: watch::Sender<i64>,
    link: SupervisorLink,
    /// Why the partition no longer serves, once its restart budget is spent
    /// or it was stopped.
    offline: Option<String>,
    /// The log went offline under it (a disk fault): ask the shard again
    /// before serving, the log actor may have reopened it.
    log_offline: bool,
    events: EventBus,
}

impl PartitionActor {
    /// Start the actor, under supervision, for a log already loaded or
    /// created by the log actor; on `arbiter` when given.
    pub fn start(
        tp: TopicPartition,
        shard: ShardLink,
        offsets: LogOffsets,
        events: EventBus,
        arbiter: Option<&ArbiterHandle>,
    ) -> PartitionHandle {
        let (sender, receiver) = watch::channel(offsets.log_end_offset);
        let link = SupervisorLink::default();
        let spec = ChildSpec::new(format!("partition {tp}"), Escalation::Degrade);
        let actor = PartitionActor {
            tp,
            shard,
            state: PartitionState::from_log(offsets),
            high_watermark: sender,
            link: link.clone(),
            offline: None,
            log_offline: false,
            events,
        };
        PartitionHandle {
            addr: supervise(arbiter, spec, link.clone(), move |_| actor),
            high_watermark: receiver,
            supervision: link,
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

    fn note_log_start(&mut self, log_start_offset: i64) {
        self.state.log_start_offset = self.state.log_start_offset.max(log_start_offset);
    }

    /// Take the log's offsets as the truth (after a restart or a reopen:
    /// recovery may have cut the log back).
    fn reset(&mut self, offsets: LogOffsets) {
        self.state = PartitionState::from_log(offsets);
        self.high_watermark.send_replace(offsets.log_end_offset);
    }

    /// Enqueue `msg` at the shard in the order this actor handles its
    /// messages: now if the shard's window has room, else the actor holds
    /// its later messages until there is (so appends are never reordered).
    fn dispatch<M, T>(&mut self, msg: M, ctx: &mut Context<Self>) -> ShardReply<T>
    where
        M: Message<Result = Result<T, LogActorError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M>,
    {
        match self.shard.try_dispatch(msg) {
            Ok(reply) => reply,
            Err(msg) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let shard = self.shard.clone();
                ctx.wait(
                    async move {
                        let _ = tx.send(shard.dispatch_when_room(msg).await);
                    }
                    .into_actor(self),
                );
                Box::pin(async move {
                    match rx.await {
                        Ok(reply) => reply.await,
                        Err(_) => Err(LogActorError::Stopped),
                    }
                })
            }
        }
    }

    /// Note a log that went offline under this partition.
    fn observe<T>(&mut self, result: &Result<T, LogActorError>) {
        if matches!(result, Err(LogActorError::PartitionOffline { .. })) {
            self.log_offline = true;
        }
    }

    /// Before serving: if the log was offline, see whether it is back.
    fn ensure_log_online(&mut self, ctx: &mut Context<Self>) {
        if !self.log_offline {
            return;
        }
        let shard = self.shard.clone();
        let tp = self.tp.clone();
        // Requests behind this one wait for the answer.
        ctx.wait(
            async move { shard.send(GetLogOffsets { tp }).await }
                .into_actor(self)
                .map(|result, actor, _ctx| {
                    if let Ok(offsets) = result {
                        log::info!("partition {} serves again from its reopened log", actor.tp);
                        actor.log_offline = false;
                        actor.reset(offsets);
                    }
                }),
        );
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
        if let Some(cause) = self.link.escalated() {
            log::error!("partition {} stays offline: {cause}", self.tp);
            self.offline = Some("restarted too often".into());
            return;
        }
        log::warn!(
            "partition {} restarts and rebuilds its state from the log",
            self.tp
        );
        let shard = self.shard.clone();
        let tp = self.tp.clone();
        // Nothing is served until the state is rebuilt.
        ctx.wait(
            async move { shard.send(GetLogOffsets { tp }).await }
                .into_actor(self)
                .map(|result, actor, _ctx| match result {
                    Ok(offsets) => actor.reset(offsets),
                    Err(LogActorError::PartitionOffline { .. }) => actor.log_offline = true,
                    Err(e) => actor.offline = Some(e.to_string()),
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

    fn handle(&mut self, msg: AppendRecords, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(e) = self.offline_error() {
            return Box::pin(fut::ready(Err(e)));
        }
        fail::fail_point!(&format!("partition.append.{}", self.tp));
        self.ensure_log_online(ctx);
        let bytes = msg.records.len() as u64;
        let append = self.dispatch(
            log_actor::Append {
                tp: self.tp.clone(),
                records: msg.records,
            },
            ctx,
        );
        Box::pin(append.into_actor(self).map(move |result, actor, _ctx| {
            actor.observe(&result);
            let info = result?;
            let before = actor.state.high_watermark;
            actor.advance(info.log_end_offset, actor.state.log_start_offset);
            if actor.state.high_watermark > before {
                actor.events.publish(BrokerEvent::HighWatermarkAdvanced {
                    tp: actor.tp.clone(),
                    high_watermark: actor.state.high_watermark,
                    records: info.record_count as i64,
                    bytes,
                });
            }
            Ok((info, actor.state.log_start_offset))
        }))
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
    type Result = ResponseActFuture<Self, Result<PartitionRead, LogActorError>>;

    fn handle(&mut self, msg: ReadRecords, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(e) = self.offline_error() {
            return Box::pin(fut::ready(Err(e)));
        }
        fail::fail_point!(&format!("partition.read.{}", self.tp));
        self.ensure_log_online(ctx);
        let shard = self.shard.clone();
        let tp = self.tp.clone();
        Box::pin(
            fut::wrap_future::<_, Self>(async {})
                .then(move |(), actor: &mut Self, _ctx| {
                    // After a reopen the state is fresh only now.
                    let state = actor.state;
                    let read = log_actor::Read {
                        tp,
                        offset: msg.offset,
                        max_bytes: msg.max_bytes,
                        max_offset: Some(state.high_watermark),
                    };
                    fut::wrap_future(async move { (shard.send(read).await, state) })
                })
                .map(|(result, mut state), actor, _ctx| {
                    actor.observe(&result);
                    let read = result?;
                    // Retention and DeleteRecords move the log start in the
                    // shard; every read brings the news.
                    actor.note_log_start(read.log_start_offset);
                    state.log_start_offset = state.log_start_offset.max(read.log_start_offset);
                    Ok(PartitionRead { read, state })
                }),
        )
    }
}

/// The partition's offsets now.
#[derive(Debug)]
pub struct GetState;

impl Message for GetState {
    type Result = PartitionState;
}

impl Handler<GetState> for PartitionActor {
    type Result = ResponseActFuture<Self, PartitionState>;

    fn handle(&mut self, _msg: GetState, ctx: &mut Context<Self>) -> Self::Result {
        if self.offline.is_some() {
            return Box::pin(fut::ready(self.state));
        }
        // The log start may have moved in the shard (retention); ask it, in
        // order with this partition's other requests.
        let offsets = self.dispatch(
            GetLogOffsets {
                tp: self.tp.clone(),
            },
            ctx,
        );
        Box::pin(offsets.into_actor(self).map(|offsets, actor, _ctx| {
            if let Ok(offsets) = offsets {
                actor.note_log_start(offsets.log_start_offset);
            }
            actor.state
        }))
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
        if let Some(e) = self.offline_error() {
            return Box::pin(async move { Err(e) });
        }
        let high_watermark = self.state.high_watermark;
        let shard = self.shard.clone();
        let lookup = log_actor::OffsetForTimestamp {
            tp: self.tp.clone(),
            timestamp: msg.timestamp,
        };
        Box::pin(async move {
            let found = shard.send(lookup).await?;
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
        let shard = self.shard.clone();
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
                shard
                    .send(log_actor::DeleteRecordsBefore { tp, offset })
                    .await
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
        let shard = self.shard.clone();
        let update = log_actor::UpdateLogConfig {
            tp: self.tp.clone(),
            config: msg.config,
        };
        Box::pin(async move { shard.send(update).await })
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
        self.link.stop();
        ctx.stop();
    }
}

/// What starting a partition actor needs: where it runs, its shard, and
/// the registry request handlers find it in.
#[derive(Clone)]
pub struct PartitionRuntime {
    pub registry: PartitionRegistry,
    pub shards: LogShards,
    pub pool: ActorPool,
    pub events: EventBus,
}

impl PartitionRuntime {
    /// Start `tp`'s actor on its arbiter and register it.
    pub fn start(&self, tp: &TopicPartition, offsets: LogOffsets) -> PartitionHandle {
        let handle = PartitionActor::start(
            tp.clone(),
            self.shards.for_partition(tp),
            offsets,
            self.events.clone(),
            Some(&self.pool.pick(tp)),
        );
        self.registry.insert(tp.clone(), handle.clone());
        handle
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
