//! A partition actor: one per partition replica on this broker, leader or
//! follower. It owns the partition's offsets as the protocol sees them: log
//! end offset, high watermark and log start offset; as leader, what it knows
//! of its followers (`replication::LeaderState`: their log end offsets, the
//! ISR, the high watermark rule) and the acks=all produces waiting for the
//! ISR (its purgatory). It persists by sending to its log shard directly (a
//! `ShardLink` from the shared log manager) and announces every new high
//! watermark and log end offset on `watch` channels, which is how parked
//! consumer and replica fetches wake up.
//!
//! As leader it answers produces, consumer fetches (never above the high
//! watermark) and replica fetches (up to the log end offset, recording the
//! follower's position); it shrinks the ISR when a follower lags longer than
//! `replica.lag.time.max.ms` and grows it when one catches up, each change
//! written to the partition state znode conditionally on its version, with a
//! `/isr_change_notification` for the controller. As follower it only takes
//! what its replica fetcher copies from the leader.
//!
//! It runs under the common supervisor (`actors/supervisor.rs`): a panic or
//! an error stop restarts it after a backoff, and it rebuilds its offsets
//! from the log; past its budget it stays up but offline (every request gets
//! KAFKA_STORAGE_ERROR) rather than restarting in a loop. When its log went
//! offline with a disk fault, it asks again before each request and comes
//! back by itself once the log manager has reopened the log.
//!
//! It never touches a file, never elects a leader (the controller does),
//! and never acknowledges an acks=all produce before every ISR member has it.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::{oneshot, watch};

use crate::clock::SharedClock;
use crate::config::dynamic::DynamicBrokerConfig;
use crate::config::topic::TopicConfig;
use crate::metadata::znodes::{
    IsrChangeNotificationZNode, LeaderAndIsr, LogDirEventNotificationZNode,
    TopicPartitionStateZNode,
};
use crate::metadata::{MetadataError, MetadataStore};
use crate::replication::{
    is_own_write, DelayedDeleteRecords, DelayedFlushes, DelayedProduce, DelayedProduces,
    InEpochUpdate, LeaderAndIsrView, LeaderState, ReadReplica, ReplicationError,
    UncommittedAppends,
};
use crate::storage::{AppendInfo, ReadInfo};
use crate::topic_partition::TopicPartition;

use super::event_bus::{BrokerEvent, EventBus};
use super::log_manager::shard::LogShard;
use super::log_manager::{
    self as log_manager, GetLogOffsets, LogManagerError, LogOffsets, LogShards, ShardLink,
    ShardReply,
};
use super::pool::ActorPool;
use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};

mod append;
mod error;
mod fetch;
mod isr;
mod produce;
mod queries;
mod replica;

pub use append::{ProduceError, ProducePath, RequiredAcks};
pub use error::PartitionError;
pub use fetch::{PartitionRead, ReadRecords, ReplicaFetch};
pub use produce::{Acks, AppendRecords, Produced};
pub use queries::{
    DeleteRecordsBefore, GetState, LeaderOffsets, OffsetForTimestamp, StopPartition, UpdateConfig,
};
// Extensions (`ExtensionContext::leadership`), tests and embedders read a
// replica's role.
pub use queries::GetReplicaState;
#[cfg(any(test, feature = "internals"))]
pub use queries::ReplicaState;
pub use replica::{
    AppendAsFollower, ApplyAssignment, EndOffsetForLeaderEpoch, LocalLogOffsets, TruncateReplica,
};

/// The most acks=all produces one partition keeps waiting; past it a
/// produce is written but answered NOT_ENOUGH_REPLICAS_AFTER_APPEND at once.
const PURGATORY_CAPACITY: usize = 10_000;

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
            high_watermark: offsets
                .high_watermark
                .clamp(offsets.log_start_offset, offsets.log_end_offset),
        }
    }
}

/// Who leads a partition and who is in sync, as the controller decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionAssignment {
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    pub replicas: Vec<i32>,
    /// The partition state znode's version (LeaderAndIsr's `partition_epoch`).
    pub zk_version: i32,
    pub controller_epoch: i32,
}

impl PartitionAssignment {
    #[cfg(any(test, feature = "internals"))]
    /// A partition with one replica, this broker (embedded mode, tests).
    pub fn sole_replica(broker_id: i32) -> PartitionAssignment {
        PartitionAssignment {
            leader: broker_id,
            leader_epoch: 0,
            isr: vec![broker_id],
            replicas: vec![broker_id],
            zk_version: 0,
            controller_epoch: 0,
        }
    }
}

/// How a partition actor starts: its assignment and the topic's settings
/// the partition owns. An assignment alone starts it with the broker's
/// defaults.
#[derive(Debug, Clone)]
pub struct PartitionStart {
    pub assignment: PartitionAssignment,
    /// The topic's `min.insync.replicas` override.
    pub min_insync_replicas: Option<i32>,
}

impl From<PartitionAssignment> for PartitionStart {
    fn from(assignment: PartitionAssignment) -> Self {
        PartitionStart {
            assignment,
            min_insync_replicas: None,
        }
    }
}

/// What a partition actor needs besides its log: who it is, where the
/// partition state lives, and its replication settings.
#[derive(Clone)]
pub struct ReplicaContext {
    pub broker_id: i32,
    pub store: Option<Arc<dyn MetadataStore>>,
    /// Which brokers are alive (the brokers UpdateMetadata lists): a
    /// follower on a dead broker does not hold DeleteRecords back. `None`
    /// (a lone broker) counts every replica.
    pub live_brokers: Option<crate::cluster::MetadataCache>,
    pub clock: SharedClock,
    pub replica_lag_time_max_ms: i64,
    pub high_watermark_checkpoint_interval_ms: u64,
    /// The broker's config now (KIP-226): its `min.insync.replicas` is the
    /// default of a topic without an override.
    pub broker_config: DynamicBrokerConfig,
    /// Where ISR shrinks and expansions are counted.
    pub metrics: Arc<crate::metrics::BrokerMetrics>,
}

impl ReplicaContext {
    #[cfg(any(test, feature = "internals"))]
    /// A lone broker's replicas: no metadata store to write ISRs to (an
    /// embedder's or a test's partition actor).
    pub fn standalone(broker_id: i32, clock: SharedClock) -> ReplicaContext {
        ReplicaContext {
            broker_id,
            store: None,
            live_brokers: None,
            clock,
            replica_lag_time_max_ms: 30_000,
            high_watermark_checkpoint_interval_ms: 5_000,
            broker_config: DynamicBrokerConfig::new(crate::config::BrokerConfig::default()),
            metrics: Default::default(),
        }
    }
}

/// Where to reach a partition: its actor, its high watermark and log end
/// offset feeds.
#[derive(Clone)]
pub struct PartitionHandle {
    pub addr: Addr<PartitionActor>,
    pub high_watermark: watch::Receiver<i64>,
    pub log_end_offset: watch::Receiver<i64>,
}

enum Role {
    Leader(LeaderState),
    Follower { leader: i32, leader_epoch: i32 },
}

/// Answers an acks=all produce once the ISR has it.
type AckReply = oneshot::Sender<Result<(), ReplicationError>>;

/// Answers a DeleteRecords once every live replica dropped the records.
type DeleteRecordsReply = oneshot::Sender<Result<i64, PartitionError>>;

/// Answers a produce once its records are flushed (`flush.messages`).
type FlushReply = oneshot::Sender<Result<(), LogManagerError>>;

pub struct PartitionActor {
    tp: TopicPartition,
    shard: ShardLink,
    state: PartitionState,
    high_watermark: watch::Sender<i64>,
    log_end_offset: watch::Sender<i64>,
    link: SupervisorLink,
    /// Why the partition no longer serves, once its restart budget is spent
    /// or it was stopped.
    offline: Option<String>,
    /// The log went offline under it (a disk fault): ask the shard again
    /// before serving, the log manager may have reopened it.
    log_offline: bool,
    events: EventBus,
    replica: ReplicaContext,
    role: Role,
    /// The epoch and ISR as assigned, for a restart to take up again.
    assignment: PartitionAssignment,
    /// In append order, so in order of `required_offset`: the high
    /// watermark answers a prefix.
    purgatory: DelayedProduces<AckReply>,
    /// Appends above the high watermark, so HighWatermarkAdvanced can say
    /// what became committed (bounded like the purgatory).
    uncommitted: UncommittedAppends,
    /// The high watermark the shard last heard (for its checkpoint).
    reported_high_watermark: i64,
    /// An ISR write was refused for a stale znode version: wait for the
    /// controller's next LeaderAndIsr instead of retrying.
    isr_fenced: bool,
    /// In append order: the next flush answers a prefix.
    flush_waiters: DelayedFlushes<FlushReply>,
    /// DeleteRecords waiting for the followers' log starts (the low
    /// watermark).
    delayed_deletes: DelayedDeleteRecords<DeleteRecordsReply>,
    /// At most one `Flush` at the shard; appends queued behind it share
    /// the next one (group commit).
    flush_in_flight: bool,
    /// A follower served a consumer (logged once).
    served_consumers: bool,
    /// Counts the times this replica became leader from follower. An
    /// append sent to the shard in one term is answered in it only: a
    /// follower in between may have truncated it away. A new leader epoch
    /// of the same leader (the controller shrinking the ISR) is the same
    /// term, and the append goes on, as in Kafka.
    leadership_term: u64,
    /// The topic's `min.insync.replicas` override, set when the actor
    /// starts and by each config change (`UpdateConfig`).
    min_insync_replicas: Option<i32>,
}

impl PartitionActor {
    /// Start the actor, under supervision, for a log already loaded or
    /// created by the log manager; on `arbiter` when given.
    pub fn start(
        tp: TopicPartition,
        shard: ShardLink,
        offsets: LogOffsets,
        events: EventBus,
        replica: ReplicaContext,
        start: impl Into<PartitionStart>,
        arbiter: Option<&ArbiterHandle>,
    ) -> PartitionHandle {
        let PartitionStart {
            assignment,
            min_insync_replicas,
        } = start.into();
        let state = PartitionState::from_log(offsets);
        let (high_watermark, high_watermark_feed) = watch::channel(state.high_watermark);
        let (log_end_offset, log_end_offset_feed) = watch::channel(state.log_end_offset);
        let link = SupervisorLink::default();
        let spec = ChildSpec::new(format!("partition {tp}"), Escalation::Degrade);
        let actor = PartitionActor {
            tp,
            shard,
            state,
            high_watermark,
            log_end_offset,
            link: link.clone(),
            offline: None,
            log_offline: false,
            events,
            role: Role::Follower {
                leader: -1,
                leader_epoch: -1,
            },
            reported_high_watermark: offsets.high_watermark,
            replica,
            assignment,
            purgatory: DelayedProduces::new(PURGATORY_CAPACITY),
            uncommitted: UncommittedAppends::new(PURGATORY_CAPACITY),
            isr_fenced: false,
            flush_waiters: DelayedFlushes::default(),
            delayed_deletes: DelayedDeleteRecords::default(),
            flush_in_flight: false,
            served_consumers: false,
            leadership_term: 0,
            min_insync_replicas,
        };
        PartitionHandle {
            addr: supervise(arbiter, spec, link.clone(), move |_| actor),
            high_watermark: high_watermark_feed,
            log_end_offset: log_end_offset_feed,
        }
    }

    fn offline_error(&self) -> Option<LogManagerError> {
        self.offline
            .as_ref()
            .map(|reason| LogManagerError::PartitionOffline {
                tp: self.tp.clone(),
                reason: reason.clone(),
            })
    }

    fn leader_epoch(&self) -> i32 {
        match &self.role {
            Role::Leader(leader) => leader.leader_epoch,
            Role::Follower { leader_epoch, .. } => *leader_epoch,
        }
    }

    fn now_ms(&self) -> i64 {
        self.replica.clock.now_ms()
    }

    /// Serving as leader, for a request carrying `current_leader_epoch`.
    fn check_leader(&self, current_leader_epoch: i32) -> Result<(), PartitionError> {
        if let Some(e) = self.offline_error() {
            return Err(e.into());
        }
        match &self.role {
            Role::Leader(leader) => {
                ReplicationError::check_epoch(current_leader_epoch, leader.leader_epoch)?;
                Ok(())
            }
            Role::Follower { .. } => Err(ReplicationError::NotLeaderOrFollower.into()),
        }
    }

    fn set_log_end_offset(&mut self, log_end_offset: i64) {
        if log_end_offset != self.state.log_end_offset {
            self.state.log_end_offset = log_end_offset;
            self.log_end_offset.send_replace(log_end_offset);
        }
    }

    fn set_high_watermark(&mut self, high_watermark: i64) {
        if high_watermark != self.state.high_watermark {
            self.state.high_watermark = high_watermark;
            self.high_watermark.send_replace(high_watermark);
        }
    }

    /// As leader: move the high watermark to what the ISR has, answer the
    /// produces that waited for it, and say what became committed.
    fn maybe_advance_high_watermark(&mut self) {
        let Role::Leader(leader) = &self.role else {
            return;
        };
        let candidate = leader
            .high_watermark(
                self.state.log_end_offset,
                self.replica.clock.now_ms(),
                self.replica.replica_lag_time_max_ms,
            )
            .min(self.state.log_end_offset);
        // Kafka 3.x's `checkEnoughReplicasReachOffset` counts the maximal
        // ISR: a member being removed still confirmed the records.
        let isr_size = leader.maximal_isr().len();
        let before = self.state.high_watermark;
        if candidate > before {
            self.set_high_watermark(candidate);
            let bytes = self.uncommitted.commit(candidate);
            self.events.publish(BrokerEvent::HighWatermarkAdvanced {
                tp: self.tp.clone(),
                high_watermark: candidate,
                records: candidate - before,
                bytes,
                committed: self.uncommitted.totals(),
            });
        }
        for (reply, answer) in self.purgatory.complete(self.state.high_watermark, isr_size) {
            let _ = reply.send(answer);
        }
    }

    /// Group commit: one fsync answers every append waiting for one. At
    /// most one flush is in flight; the appends that reach the shard while
    /// it runs share the next.
    fn request_group_flush(&mut self, ctx: &mut Context<Self>) {
        if self.flush_in_flight || self.flush_waiters.is_empty() {
            return;
        }
        self.flush_in_flight = true;
        let flush = self.dispatch(
            log_manager::Flush {
                tp: self.tp.clone(),
            },
            ctx,
        );
        ctx.spawn(flush.into_actor(self).map(|result, actor, ctx| {
            actor.flush_in_flight = false;
            actor.observe(&result);
            match result {
                Ok(recovery_point) => {
                    let flushed = actor.flush_waiters.complete(recovery_point);
                    let produces = flushed.len();
                    for reply in flushed {
                        let _ = reply.send(Ok(()));
                    }
                    actor.events.publish(BrokerEvent::LogFlushed {
                        tp: actor.tp.clone(),
                        recovery_point,
                        produces,
                    });
                }
                Err(e) => {
                    let reason = format!("flush failed: {e}");
                    let tp = actor.tp.clone();
                    for reply in actor.flush_waiters.drain() {
                        let _ = reply.send(Err(LogManagerError::PartitionOffline {
                            tp: tp.clone(),
                            reason: reason.clone(),
                        }));
                    }
                }
            }
            actor.request_group_flush(ctx);
        }));
    }

    /// Leadership went: every waiting produce learns it.
    fn fail_purgatory(&mut self) {
        for reply in self.purgatory.drain() {
            let _ = reply.send(Err(ReplicationError::NotLeaderOrFollower));
        }
        for reply in self.delayed_deletes.drain() {
            let _ = reply.send(Err(ReplicationError::NotLeaderOrFollower.into()));
        }
        self.uncommitted.clear();
    }

    fn note_log_start(&mut self, log_start_offset: i64) {
        self.state.log_start_offset = self.state.log_start_offset.max(log_start_offset);
    }

    /// Take the log's offsets as the truth (after a restart, a reopen or a
    /// truncation: the log may have been cut back).
    fn reset(&mut self, offsets: LogOffsets) {
        let high_watermark = self
            .state
            .high_watermark
            .min(offsets.log_end_offset)
            .max(offsets.log_start_offset);
        self.state.log_start_offset = offsets.log_start_offset;
        self.set_log_end_offset(offsets.log_end_offset);
        self.set_high_watermark(high_watermark);
        self.maybe_advance_high_watermark();
    }

    /// Enqueue `msg` at the shard in the order this actor handles its
    /// messages: now if the shard's window has room, else the actor holds
    /// its later messages until there is (so appends are never reordered).
    fn dispatch<M, T>(&mut self, msg: M, ctx: &mut Context<Self>) -> ShardReply<T>
    where
        M: Message<Result = Result<T, LogManagerError>> + Send + 'static,
        T: Send + 'static,
        LogShard: Handler<M, Result = Result<T, LogManagerError>>,
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
                        Err(_) => Err(LogManagerError::Stopped),
                    }
                })
            }
        }
    }

    /// A shard's answer, as this partition answers it.
    async fn from_shard<T>(reply: ShardReply<T>) -> Result<T, PartitionError> {
        Ok(reply.await?)
    }

    /// Note a log that went offline under this partition.
    fn observe<T>(&mut self, result: &Result<T, LogManagerError>) {
        if matches!(result, Err(LogManagerError::PartitionOffline { .. })) {
            self.mark_log_offline();
        }
    }

    /// The log went offline (a disk fault): tell the controller, once per
    /// outage, so that it moves the leadership away (Kafka's log dir
    /// failure handling).
    fn mark_log_offline(&mut self) {
        if !self.log_offline {
            self.log_offline = true;
            self.notify_log_dir_event();
        }
    }

    /// Leaves `/log_dir_event_notification/log_dir_event_<n>` naming this
    /// broker: the controller then sends it a LeaderAndIsr for all its
    /// replicas, moves leaders away from those answering
    /// KAFKA_STORAGE_ERROR and restarts the fetchers of those back online.
    fn notify_log_dir_event(&self) {
        let Some(store) = self.replica.store.clone() else {
            return;
        };
        let notice = LogDirEventNotificationZNode::encode(self.replica.broker_id);
        let tp = self.tp.clone();
        actix::spawn(async move {
            for attempt in 1..=isr::NOTIFICATION_ATTEMPTS {
                match store
                    .create_sequential(LogDirEventNotificationZNode::PREFIX, notice.clone())
                    .await
                {
                    Ok(_) => return,
                    Err(e) if attempt == isr::NOTIFICATION_ATTEMPTS => {
                        log::warn!("partition {tp}: the log dir event notification failed: {e}");
                    }
                    Err(_) => tokio::time::sleep(isr::ISR_WRITE_RETRY).await,
                }
            }
        });
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
                        // The controller takes it up again (a follower's
                        // fetcher is started by its LeaderAndIsr).
                        actor.notify_log_dir_event();
                    }
                }),
        );
    }

    /// Take up `assignment`: lead (recording the new epoch in the log
    /// first, so every append of this epoch carries it) or follow.
    fn apply_assignment(&mut self, assignment: PartitionAssignment, ctx: &mut Context<Self>) {
        if assignment.leader == self.replica.broker_id {
            if let Role::Leader(leader) = &mut self.role {
                if leader.leader_epoch == assignment.leader_epoch {
                    let now = self.replica.clock.now_ms();
                    match leader.update_in_epoch(
                        &assignment.isr,
                        &assignment.replicas,
                        assignment.zk_version,
                        now,
                    ) {
                        InEpochUpdate::Stale { requested, current } => {
                            log::info!(
                                "partition {}: skipped a LeaderAndIsr for leader epoch {} at                                  partition state version {requested}: this leader already wrote                                  version {current}",
                                self.tp,
                                assignment.leader_epoch
                            );
                        }
                        update => {
                            if update == InEpochUpdate::Newer {
                                // A newer state to write against.
                                self.isr_fenced = false;
                            }
                            self.assignment = PartitionAssignment {
                                isr: leader.isr.iter().copied().collect(),
                                zk_version: leader.zk_version,
                                ..assignment
                            };
                            self.maybe_advance_high_watermark();
                        }
                    }
                    return;
                }
            }
        }
        let was_leader = matches!(self.role, Role::Leader(_));
        if !was_leader && assignment.leader == self.replica.broker_id {
            self.leadership_term += 1;
            self.uncommitted.begin_leadership(self.state.high_watermark);
        }
        self.assignment = assignment.clone();
        self.isr_fenced = false;
        if assignment.leader != self.replica.broker_id {
            if was_leader {
                self.fail_purgatory();
            }
            self.role = Role::Follower {
                leader: assignment.leader,
                leader_epoch: assignment.leader_epoch,
            };
            return;
        }
        let leader = LeaderState::new(
            self.replica.broker_id,
            assignment.leader_epoch,
            &assignment.isr,
            &assignment.replicas,
            assignment.zk_version,
            self.state.log_end_offset,
            self.now_ms(),
        );
        self.role = Role::Leader(leader);
        let shard = self.shard.clone();
        let epoch = assignment.leader_epoch;
        let assign = log_manager::AssignLeaderEpoch {
            tp: self.tp.clone(),
            epoch,
        };
        // Nothing is appended before the epoch is on disk.
        ctx.wait(
            async move { shard.send(assign).await }
                .into_actor(self)
                .map(move |result, actor, _ctx| {
                    actor.observe(&result);
                    match result {
                        Ok(offsets) => {
                            actor.set_log_end_offset(offsets.log_end_offset);
                            // The shard recorded the epoch at its log end,
                            // after every append sent before: that is where
                            // the epoch starts, not the log end this actor
                            // had heard of when it took the assignment.
                            if let Role::Leader(leader) = &mut actor.role {
                                if leader.leader_epoch == epoch {
                                    leader.epoch_start_offset = offsets.log_end_offset;
                                }
                            }
                            actor.maybe_advance_high_watermark();
                        }
                        Err(e) => log::error!(
                            "partition {}: recording leader epoch failed: {e}",
                            actor.tp
                        ),
                    }
                }),
        );
    }

    /// The periodic checks: shrink the ISR, drop timed-out produces, report
    /// the high watermark for the checkpoint.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        self.purgatory.retain(|reply| !reply.is_closed());
        // A replica with an offline log may get no request to notice the
        // log manager reopened it (a follower whose fetcher stopped).
        self.ensure_log_online(ctx);
        let now = self.now_ms();
        let shrunk = match &self.role {
            Role::Leader(leader) => leader.shrink(now, self.replica.replica_lag_time_max_ms),
            Role::Follower { .. } => None,
        };
        if let Some(isr) = shrunk {
            log::info!(
                "partition {}: shrinking the ISR to {isr:?} (followers lag more than {} ms)",
                self.tp,
                self.replica.replica_lag_time_max_ms
            );
            self.change_isr(isr, ctx);
        }
    }

    fn report_high_watermark(&mut self) {
        if self.state.high_watermark == self.reported_high_watermark || self.log_offline {
            return;
        }
        let high_watermark = self.state.high_watermark;
        self.reported_high_watermark = high_watermark;
        let report = log_manager::SetHighWatermark {
            tp: self.tp.clone(),
            high_watermark,
        };
        // Lands before a close that follows a stop.
        self.shard.send_detached(report);
    }
}

impl Actor for PartitionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let assignment = self.assignment.clone();
        self.apply_assignment(assignment, ctx);
        let lag = self.replica.replica_lag_time_max_ms.max(2) as u64;
        ctx.run_interval(Duration::from_millis(lag / 2), |actor, ctx| actor.tick(ctx));
        ctx.run_interval(
            Duration::from_millis(self.replica.high_watermark_checkpoint_interval_ms.max(10)),
            |actor, _ctx| actor.report_high_watermark(),
        );
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
        // The restart dropped the flush in flight with the old context.
        self.flush_in_flight = false;
        self.request_group_flush(ctx);
        let shard = self.shard.clone();
        let tp = self.tp.clone();
        // Nothing is served until the state is rebuilt.
        ctx.wait(
            async move { shard.send(GetLogOffsets { tp }).await }
                .into_actor(self)
                .map(|result, actor, _ctx| match result {
                    Ok(offsets) => actor.reset(offsets),
                    Err(LogManagerError::PartitionOffline { .. }) => actor.mark_log_offline(),
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

/// What starting a partition actor needs: where it runs, its shard, and
/// the registry request handlers find it in.
#[derive(Clone)]
pub struct PartitionRuntime {
    pub registry: PartitionRegistry,
    pub shards: LogShards,
    pub pool: ActorPool,
    pub events: EventBus,
    pub replica: ReplicaContext,
}

impl PartitionRuntime {
    /// Start `tp`'s actor on its arbiter, in `start`'s role, and register
    /// it.
    pub fn start(
        &self,
        tp: &TopicPartition,
        offsets: LogOffsets,
        start: PartitionStart,
    ) -> PartitionHandle {
        let handle = PartitionActor::start(
            tp.clone(),
            self.shards.for_partition(tp),
            offsets,
            self.events.clone(),
            self.replica.clone(),
            start,
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
