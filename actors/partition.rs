//! A partition actor: one per partition replica on this broker, leader or
//! follower. It owns the partition's offsets as the protocol sees them: log
//! end offset, high watermark and log start offset; as leader, what it knows
//! of its followers (`replication::LeaderState`: their log end offsets, the
//! ISR, the high watermark rule) and the acks=all produces waiting for the
//! ISR (its purgatory). It persists by sending to its log shard directly (a
//! `ShardLink` from the shared log actor) and announces every new high
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
//! back by itself once the log actor has reopened the log.
//!
//! It never touches a file, never elects a leader (the controller does),
//! and never acknowledges an acks=all produce before every ISR member has it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use tokio::sync::{oneshot, watch};

use crate::clock::SharedClock;
use crate::metadata::znodes::{IsrChangeNotificationZNode, LeaderAndIsr, TopicPartitionStateZNode};
use crate::metadata::{MetadataError, MetadataStore};
use crate::replication::{
    is_own_write, InEpochUpdate, LeaderAndIsrView, LeaderState, ReadReplica, ReplicationError,
};
use crate::storage::{AppendInfo, LogConfig, ReadInfo};
use crate::topic_partition::TopicPartition;

use super::event_bus::{BrokerEvent, EventBus};
use super::log::shard::LogShard;
use super::log::{
    self as log_actor, GetLogOffsets, LogActorError, LogOffsets, LogShards, ShardLink, ShardReply,
};
use super::pool::ActorPool;
use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};

/// The most acks=all produces one partition keeps waiting; past it a
/// produce is written but answered NOT_ENOUGH_REPLICAS_AFTER_APPEND at once.
const PURGATORY_CAPACITY: usize = 10_000;

/// How long a leader waits before writing an ISR change again whose
/// outcome it could not learn (the store's connection dropped).
const ISR_WRITE_RETRY: Duration = Duration::from_millis(500);

/// Attempts at leaving an ISR change notification for the controller.
const NOTIFICATION_ATTEMPTS: usize = 3;

/// What became of a conditional ISR write.
enum IsrWrite {
    /// In the store, at this version.
    Written(i32),
    /// Refused: another writer moved the state on.
    Refused(MetadataError),
    /// Not known (the connection dropped; a retry will tell).
    Unknown(MetadataError),
}

/// Writes a leader's `state` to the partition state znode, conditionally on
/// `version`. A refusal is read back: when the znode holds this very state,
/// the write landed and only its reply was lost (the client retried it
/// against the version it had just moved), and it counts as written.
async fn write_leader_and_isr(
    store: &dyn MetadataStore,
    tp: &TopicPartition,
    state: &LeaderAndIsr,
    version: i32,
) -> IsrWrite {
    let path = TopicPartitionStateZNode::path(tp);
    let refusal = match store
        .set(
            &path,
            TopicPartitionStateZNode::encode(state),
            Some(version),
        )
        .await
    {
        Ok(stat) => return IsrWrite::Written(stat.version),
        Err(e @ (MetadataError::BadVersion { .. } | MetadataError::NoNode(_))) => e,
        Err(e) => return IsrWrite::Unknown(e),
    };
    match store.get(&path).await {
        Ok(Some((bytes, stat))) => match TopicPartitionStateZNode::decode(tp, &bytes) {
            Ok(read) => {
                let ours = is_own_write(&view(&read), &view(state));
                if ours {
                    log::info!(
                        "partition {tp}: the ISR write at version {version} landed although its \
                         reply was lost (the state is at version {})",
                        stat.version
                    );
                    IsrWrite::Written(stat.version)
                } else {
                    IsrWrite::Refused(refusal)
                }
            }
            Err(_) => IsrWrite::Refused(refusal),
        },
        Ok(None) => IsrWrite::Refused(refusal),
        Err(e) => IsrWrite::Unknown(e),
    }
}

fn view(state: &LeaderAndIsr) -> LeaderAndIsrView<'_> {
    LeaderAndIsrView {
        leader: state.leader,
        leader_epoch: state.leader_epoch,
        isr: &state.isr,
        controller_epoch: state.controller_epoch,
    }
}

/// Leaves `/isr_change_notification/isr_change_<n>` for the controller,
/// retried a few times: without it the controller learns of the change only
/// from its next read of the state.
async fn notify_isr_change(store: &dyn MetadataStore, tp: &TopicPartition) {
    let notice = IsrChangeNotificationZNode::encode(std::slice::from_ref(tp));
    for attempt in 1..=NOTIFICATION_ATTEMPTS {
        match store
            .create_sequential(IsrChangeNotificationZNode::PREFIX, notice.clone())
            .await
        {
            Ok(_) => return,
            Err(e) if attempt == NOTIFICATION_ATTEMPTS => {
                log::warn!("partition {tp}: the ISR change notification failed: {e}");
            }
            Err(_) => tokio::time::sleep(ISR_WRITE_RETRY).await,
        }
    }
}

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

/// What a partition actor needs besides its log: who it is, where the
/// partition state lives, and its replication settings.
#[derive(Clone)]
pub struct ReplicaContext {
    pub broker_id: i32,
    pub store: Option<Arc<dyn MetadataStore>>,
    pub clock: SharedClock,
    pub replica_lag_time_max_ms: i64,
    pub high_watermark_checkpoint_interval_ms: u64,
}

impl ReplicaContext {
    #[cfg(any(test, feature = "internals"))]
    /// A lone broker's replicas: no metadata store to write ISRs to (an
    /// embedder's or a test's partition actor).
    pub fn standalone(broker_id: i32, clock: SharedClock) -> ReplicaContext {
        ReplicaContext {
            broker_id,
            store: None,
            clock,
            replica_lag_time_max_ms: 30_000,
            high_watermark_checkpoint_interval_ms: 5_000,
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

/// An acks=all produce waiting for the ISR to reach `required_offset`.
struct PendingAck {
    required_offset: i64,
    min_insync_replicas: usize,
    reply: oneshot::Sender<Result<(), ReplicationError>>,
}

/// A produce whose records wait for the next group flush (`flush.messages`).
struct PendingFlush {
    required_offset: i64,
    reply: oneshot::Sender<Result<(), LogActorError>>,
}

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
    /// before serving, the log actor may have reopened it.
    log_offline: bool,
    events: EventBus,
    replica: ReplicaContext,
    role: Role,
    /// The epoch and ISR as assigned, for a restart to take up again.
    assignment: PartitionAssignment,
    /// In append order, so in order of `required_offset`: the high
    /// watermark answers a prefix.
    purgatory: VecDeque<PendingAck>,
    /// Appends above the high watermark: (their end offset, their bytes),
    /// so HighWatermarkAdvanced can say what became committed.
    uncommitted: VecDeque<(i64, u64)>,
    /// The high watermark the shard last heard (for its checkpoint).
    reported_high_watermark: i64,
    /// An ISR write was refused for a stale znode version: wait for the
    /// controller's next LeaderAndIsr instead of retrying.
    isr_fenced: bool,
    /// In append order: the next flush answers a prefix.
    flush_waiters: VecDeque<PendingFlush>,
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
}

impl PartitionActor {
    /// Start the actor, under supervision, for a log already loaded or
    /// created by the log actor; on `arbiter` when given.
    pub fn start(
        tp: TopicPartition,
        shard: ShardLink,
        offsets: LogOffsets,
        events: EventBus,
        replica: ReplicaContext,
        assignment: PartitionAssignment,
        arbiter: Option<&ArbiterHandle>,
    ) -> PartitionHandle {
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
            purgatory: VecDeque::new(),
            uncommitted: VecDeque::new(),
            isr_fenced: false,
            flush_waiters: VecDeque::new(),
            flush_in_flight: false,
            served_consumers: false,
            leadership_term: 0,
        };
        PartitionHandle {
            addr: supervise(arbiter, spec, link.clone(), move |_| actor),
            high_watermark: high_watermark_feed,
            log_end_offset: log_end_offset_feed,
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
    fn check_leader(&self, current_leader_epoch: i32) -> Result<(), LogActorError> {
        if let Some(e) = self.offline_error() {
            return Err(e);
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
        let isr_size = leader.isr.len();
        let before = self.state.high_watermark;
        if candidate > before {
            self.set_high_watermark(candidate);
            let mut bytes = 0;
            while let Some(&(end, size)) = self.uncommitted.front() {
                if end > candidate {
                    break;
                }
                bytes += size;
                self.uncommitted.pop_front();
            }
            self.events.publish(BrokerEvent::HighWatermarkAdvanced {
                tp: self.tp.clone(),
                high_watermark: candidate,
                records: candidate - before,
                bytes,
            });
        }
        let high_watermark = self.state.high_watermark;
        while self
            .purgatory
            .front()
            .is_some_and(|p| p.required_offset <= high_watermark)
        {
            let Some(pending) = self.purgatory.pop_front() else {
                break;
            };
            let answer = if isr_size < pending.min_insync_replicas {
                Err(ReplicationError::NotEnoughReplicasAfterAppend)
            } else {
                Ok(())
            };
            let _ = pending.reply.send(answer);
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
            log_actor::Flush {
                tp: self.tp.clone(),
            },
            ctx,
        );
        ctx.spawn(flush.into_actor(self).map(|result, actor, ctx| {
            actor.flush_in_flight = false;
            actor.observe(&result);
            match result {
                Ok(recovery_point) => {
                    let mut produces = 0;
                    while actor
                        .flush_waiters
                        .front()
                        .is_some_and(|w| w.required_offset <= recovery_point)
                    {
                        if let Some(waiter) = actor.flush_waiters.pop_front() {
                            let _ = waiter.reply.send(Ok(()));
                            produces += 1;
                        }
                    }
                    actor.events.publish(BrokerEvent::LogFlushed {
                        tp: actor.tp.clone(),
                        recovery_point,
                        produces,
                    });
                }
                Err(e) => {
                    let reason = format!("flush failed: {e}");
                    for waiter in actor.flush_waiters.drain(..) {
                        let _ = waiter.reply.send(Err(LogActorError::PartitionOffline {
                            tp: actor.tp.clone(),
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
        for pending in self.purgatory.drain(..) {
            let _ = pending
                .reply
                .send(Err(ReplicationError::NotLeaderOrFollower));
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
        let assign = log_actor::AssignLeaderEpoch {
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

    /// As leader: write `isr` to the partition state znode (conditionally
    /// on its version) and leave a notification for the controller. Until
    /// the write's outcome is known the high watermark counts both ISRs
    /// (`pending_isr`); an outcome that stays unknown (the connection to
    /// the store dropped) is retried.
    fn change_isr(&mut self, isr: std::collections::BTreeSet<i32>, ctx: &mut Context<Self>) {
        if self.replica.store.is_none() {
            return;
        }
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        if self.isr_fenced || leader.pending_isr.is_some() {
            return;
        }
        leader.pending_isr = Some(isr.clone());
        self.write_isr(isr, ctx);
    }

    fn write_isr(&mut self, isr: std::collections::BTreeSet<i32>, ctx: &mut Context<Self>) {
        let Some(store) = self.replica.store.clone() else {
            return;
        };
        let Role::Leader(leader) = &self.role else {
            return;
        };
        let state = LeaderAndIsr {
            leader: self.replica.broker_id,
            leader_epoch: leader.leader_epoch,
            isr: isr.iter().copied().collect(),
            controller_epoch: self.assignment.controller_epoch,
        };
        let epoch = leader.leader_epoch;
        let version = leader.zk_version;
        let tp = self.tp.clone();
        ctx.spawn(
            async move {
                let outcome = write_leader_and_isr(store.as_ref(), &tp, &state, version).await;
                if matches!(outcome, IsrWrite::Written(_)) {
                    notify_isr_change(store.as_ref(), &tp).await;
                }
                outcome
            }
            .into_actor(self)
            .map(move |outcome, actor, ctx| {
                let Role::Leader(leader) = &mut actor.role else {
                    return;
                };
                if leader.leader_epoch != epoch {
                    return;
                }
                match outcome {
                    IsrWrite::Written(written) => {
                        let before = leader.isr.clone();
                        if leader.complete_isr_write(&isr, Some(written)) {
                            log::info!("partition {}: ISR {before:?} -> {isr:?}", actor.tp);
                            actor.assignment.isr = isr.iter().copied().collect();
                            actor.assignment.zk_version = written;
                        }
                    }
                    IsrWrite::Refused(e) => {
                        leader.complete_isr_write(&isr, None);
                        // Fenced only while no newer state has arrived since.
                        if leader.zk_version == version {
                            log::warn!(
                                "partition {}: writing ISR {isr:?} was refused ({e}); waiting for \
                                 the controller",
                                actor.tp
                            );
                            actor.isr_fenced = true;
                        }
                    }
                    IsrWrite::Unknown(e) => {
                        log::warn!(
                            "partition {}: the outcome of writing ISR {isr:?} is unknown ({e}); \
                             retrying in {} ms",
                            actor.tp,
                            ISR_WRITE_RETRY.as_millis()
                        );
                        ctx.run_later(ISR_WRITE_RETRY, move |actor, ctx| {
                            let Role::Leader(leader) = &mut actor.role else {
                                return;
                            };
                            if leader.leader_epoch != epoch
                                || leader.pending_isr.as_ref() != Some(&isr)
                            {
                                return;
                            }
                            if leader.zk_version != version {
                                // A LeaderAndIsr brought a newer state: decide again.
                                leader.complete_isr_write(&isr, None);
                                actor.maybe_advance_high_watermark();
                                return;
                            }
                            actor.write_isr(isr, ctx);
                        });
                        return;
                    }
                }
                actor.maybe_advance_high_watermark();
            }),
        );
    }

    /// The periodic checks: shrink the ISR, drop timed-out produces, report
    /// the high watermark for the checkpoint.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        self.purgatory.retain(|p| !p.reply.is_closed());
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
        let report = log_actor::SetHighWatermark {
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
        ctx.set_mailbox_capacity(1024);
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

/// How many replicas must have a produce before it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// acks=0 or 1: the leader's log.
    Leader,
    /// acks=all: every ISR member, with at least `min_insync_replicas` in
    /// the ISR, within `timeout`.
    All {
        min_insync_replicas: usize,
        timeout: Duration,
    },
}

/// Append a producer's records as leader.
#[derive(Debug)]
pub struct AppendRecords {
    pub records: Bytes,
    pub acks: Acks,
}

impl Message for AppendRecords {
    type Result = Result<(AppendInfo, i64), LogActorError>;
}

impl Handler<AppendRecords> for PartitionActor {
    /// The append and the log start offset after it.
    type Result = ResponseActFuture<Self, Result<(AppendInfo, i64), LogActorError>>;

    fn handle(&mut self, msg: AppendRecords, ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.check_leader(-1) {
            return Box::pin(fut::ready(Err(e)));
        }
        if let (
            Acks::All {
                min_insync_replicas,
                ..
            },
            Role::Leader(leader),
        ) = (msg.acks, &self.role)
        {
            if leader.isr.len() < min_insync_replicas {
                return Box::pin(fut::ready(Err(ReplicationError::NotEnoughReplicas {
                    isr: leader.isr.len(),
                    min: min_insync_replicas,
                }
                .into())));
            }
        }
        fail::fail_point!(&format!("partition.append.{}", self.tp));
        self.ensure_log_online(ctx);
        let bytes = msg.records.len() as u64;
        let acks = msg.acks;
        let term_at_append = self.leadership_term;
        let append = self.dispatch(
            log_actor::AppendDeferringFlush {
                tp: self.tp.clone(),
                records: msg.records,
            },
            ctx,
        );
        Box::pin(
            append
                .into_actor(self)
                .map(move |result, actor, ctx| {
                    actor.observe(&result);
                    let mut info = result?;
                    // Leadership moved while the append was on the shard:
                    // the purgatory was already failed, and no follower will
                    // ever confirm this append.
                    if !matches!(actor.role, Role::Leader(_))
                        || actor.leadership_term != term_at_append
                    {
                        actor.set_log_end_offset(
                            info.log_end_offset.max(actor.state.log_end_offset),
                        );
                        return Err(ReplicationError::NotLeaderOrFollower.into());
                    }
                    let flushed = info.flush_due.then(|| {
                        let (reply, flushed) = oneshot::channel();
                        actor.flush_waiters.push_back(PendingFlush {
                            required_offset: info.last_offset + 1,
                            reply,
                        });
                        actor.request_group_flush(ctx);
                        flushed
                    });
                    info.flush_due = false;
                    actor.uncommitted.push_back((info.log_end_offset, bytes));
                    actor.set_log_end_offset(info.log_end_offset.max(actor.state.log_end_offset));
                    actor.maybe_advance_high_watermark();
                    let log_start = actor.state.log_start_offset;
                    let Acks::All {
                        min_insync_replicas,
                        timeout,
                    } = acks
                    else {
                        return Ok((info, log_start, flushed, None));
                    };
                    let (reply, confirmed) = oneshot::channel();
                    let pending = PendingAck {
                        required_offset: info.last_offset + 1,
                        min_insync_replicas,
                        reply,
                    };
                    if actor.purgatory.len() >= PURGATORY_CAPACITY {
                        let _ = pending
                            .reply
                            .send(Err(ReplicationError::NotEnoughReplicasAfterAppend));
                    } else {
                        actor.purgatory.push_back(pending);
                        // Already committed (an ISR of one): answered now.
                        actor.maybe_advance_high_watermark();
                    }
                    Ok((info, log_start, flushed, Some((confirmed, timeout))))
                })
                .then(|result: Result<_, LogActorError>, _actor, _ctx| {
                    fut::wrap_future(async move {
                        let (info, log_start, flushed, wait) = result?;
                        if let Some(flushed) = flushed {
                            flushed.await.map_err(|_| LogActorError::Stopped)??;
                        }
                        if let Some((confirmed, timeout)) = wait {
                            match tokio::time::timeout(timeout, confirmed).await {
                                Ok(Ok(answer)) => answer?,
                                Ok(Err(_)) => {
                                    return Err(ReplicationError::NotLeaderOrFollower.into())
                                }
                                Err(_) => return Err(ReplicationError::RequestTimedOut.into()),
                            }
                        }
                        Ok((info, log_start))
                    })
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
    /// The leader epoch the client believes in (-1: unchecked).
    pub current_leader_epoch: i32,
    /// Read past the high watermark, to the log end (a new coordinator
    /// loading its groups: acknowledged commits may lie above a new
    /// leader's high watermark until its followers fetch again, and Kafka
    /// loads them to the log end too).
    pub to_log_end: bool,
    /// A consumer's Fetch v11+ (KIP-392): a follower serves it too, up to
    /// its own high watermark.
    pub follower_may_serve: bool,
    /// As leader, also list the in-sync followers the consumer could read
    /// from instead (`PartitionRead::read_replicas`).
    pub list_read_replicas: bool,
}

impl ReadRecords {
    /// Committed records only, as consumers see them.
    pub fn committed(offset: i64, max_bytes: u64) -> ReadRecords {
        ReadRecords {
            offset,
            max_bytes,
            current_leader_epoch: -1,
            to_log_end: false,
            follower_may_serve: false,
            list_read_replicas: false,
        }
    }
}

/// The read and the partition's offsets at the time of the read.
#[derive(Debug)]
pub struct PartitionRead {
    pub read: ReadInfo,
    pub state: PartitionState,
    /// Followers the consumer could read from, when asked (KIP-392).
    pub read_replicas: Vec<ReadReplica>,
}

impl Message for ReadRecords {
    type Result = Result<PartitionRead, LogActorError>;
}

impl Handler<ReadRecords> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<PartitionRead, LogActorError>>;

    fn handle(&mut self, msg: ReadRecords, ctx: &mut Context<Self>) -> Self::Result {
        let serves = match &self.role {
            Role::Follower { leader_epoch, .. } if msg.follower_may_serve => {
                match self.offline_error() {
                    Some(e) => Err(e),
                    None => ReplicationError::check_epoch(msg.current_leader_epoch, *leader_epoch)
                        .map_err(LogActorError::from),
                }
            }
            _ => self.check_leader(msg.current_leader_epoch),
        };
        if let Err(e) = serves {
            return Box::pin(fut::ready(Err(e)));
        }
        let read_replicas = match &self.role {
            Role::Leader(leader) if msg.list_read_replicas => {
                leader.read_replicas(msg.offset, self.now_ms())
            }
            Role::Leader(_) => Vec::new(),
            Role::Follower { .. } => {
                if !self.served_consumers {
                    self.served_consumers = true;
                    log::info!(
                        "partition {}: serving consumer fetches as a follower (KIP-392)",
                        self.tp
                    );
                }
                Vec::new()
            }
        };
        fail::fail_point!(&format!("partition.read.{}", self.tp));
        self.ensure_log_online(ctx);
        Box::pin(self.read(msg.offset, msg.max_bytes, !msg.to_log_end).map(
            move |result, _actor, _ctx| {
                result.map(|read| PartitionRead {
                    read_replicas,
                    ..read
                })
            },
        ))
    }
}

impl PartitionActor {
    /// Read from the shard once any pending reopen is done; consumers stop
    /// at the high watermark, followers at the log end.
    fn read(
        &mut self,
        offset: i64,
        max_bytes: u64,
        committed_only: bool,
    ) -> ResponseActFuture<Self, Result<PartitionRead, LogActorError>> {
        let shard = self.shard.clone();
        let tp = self.tp.clone();
        Box::pin(
            fut::wrap_future::<_, Self>(async {})
                .then(move |(), actor: &mut Self, _ctx| {
                    // After a reopen the state is fresh only now.
                    let state = actor.state;
                    let read = log_actor::Read {
                        tp,
                        offset,
                        max_bytes,
                        max_offset: committed_only.then_some(state.high_watermark),
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
                    Ok(PartitionRead {
                        read,
                        state,
                        read_replicas: Vec::new(),
                    })
                }),
        )
    }
}

/// A follower's fetch (Fetch with `replica_id` set): records its position,
/// which may move the ISR and the high watermark, then reads up to the log
/// end offset.
#[derive(Debug)]
pub struct ReplicaFetch {
    pub replica_id: i32,
    pub offset: i64,
    pub max_bytes: u64,
    pub current_leader_epoch: i32,
}

impl Message for ReplicaFetch {
    type Result = Result<PartitionRead, LogActorError>;
}

impl Handler<ReplicaFetch> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<PartitionRead, LogActorError>>;

    fn handle(&mut self, msg: ReplicaFetch, ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.check_leader(msg.current_leader_epoch) {
            return Box::pin(fut::ready(Err(e)));
        }
        if let Role::Leader(leader) = &self.role {
            if !leader.is_replica(msg.replica_id) {
                log::warn!(
                    "partition {}: broker {} fetched as a replica but is not one",
                    self.tp,
                    msg.replica_id
                );
                return Box::pin(fut::ready(
                    Err(ReplicationError::NotLeaderOrFollower.into()),
                ));
            }
        }
        let log_end_offset = self.state.log_end_offset;
        if !LeaderState::fetch_offset_valid(msg.offset, self.state.log_start_offset, log_end_offset)
        {
            // Never counted: a follower whose log runs past this leader's
            // truncates to its end, then fetches again.
            return Box::pin(fut::ready(Err(LogActorError::Log(
                crate::storage::LogError::OffsetOutOfRange {
                    offset: msg.offset,
                    log_start_offset: self.state.log_start_offset,
                    log_end_offset,
                },
            ))));
        }
        self.ensure_log_online(ctx);
        let (replica_id, offset) = (msg.replica_id, msg.offset);
        // The follower's position counts only once the read succeeded, as
        // in Kafka (a log start moved by retention fails the read).
        Box::pin(
            self.read(msg.offset, msg.max_bytes, false)
                .map(move |result, actor, ctx| {
                    let read = result?;
                    actor.record_replica_fetch(replica_id, offset, ctx);
                    Ok(read)
                }),
        )
    }
}

impl PartitionActor {
    /// As leader: a follower fetched from `offset`, inside the log. Its
    /// position may grow the ISR and move the high watermark.
    fn record_replica_fetch(&mut self, replica_id: i32, offset: i64, ctx: &mut Context<Self>) {
        let now = self.now_ms();
        let log_end_offset = self.state.log_end_offset;
        let high_watermark = self.state.high_watermark;
        let Role::Leader(leader) = &mut self.role else {
            return;
        };
        let grown = leader.record_fetch(
            replica_id,
            offset.min(log_end_offset),
            log_end_offset,
            high_watermark,
            now,
        );
        if let Some(isr) = grown {
            log::info!(
                "partition {}: broker {replica_id} caught up; growing the ISR to {isr:?}",
                self.tp
            );
            self.change_isr(isr, ctx);
        }
        self.maybe_advance_high_watermark();
    }
}

/// Take up a new assignment from the controller. Refused when its leader
/// epoch is older than the one in force (a stale controller's).
#[derive(Debug)]
pub struct ApplyAssignment(pub PartitionAssignment);

impl Message for ApplyAssignment {
    type Result = Result<LogOffsets, LogActorError>;
}

impl Handler<ApplyAssignment> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, LogActorError>>;

    fn handle(&mut self, msg: ApplyAssignment, ctx: &mut Context<Self>) -> Self::Result {
        let current = self.leader_epoch();
        if msg.0.leader_epoch < current {
            return Box::pin(fut::ready(Err(ReplicationError::FencedLeaderEpoch {
                requested: msg.0.leader_epoch,
                current,
            }
            .into())));
        }
        self.apply_assignment(msg.0, ctx);
        let offsets = self.dispatch(
            GetLogOffsets {
                tp: self.tp.clone(),
            },
            ctx,
        );
        Box::pin(offsets.into_actor(self))
    }
}

/// As follower: append what the replica fetcher copied from the leader,
/// and take the leader's high watermark (never above this log's end).
#[derive(Debug)]
pub struct AppendAsFollower {
    pub records: Bytes,
    pub leader_epoch: i32,
    pub leader_high_watermark: i64,
    pub leader_log_start_offset: i64,
}

impl Message for AppendAsFollower {
    type Result = Result<LogOffsets, LogActorError>;
}

impl Handler<AppendAsFollower> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, LogActorError>>;

    fn handle(&mut self, msg: AppendAsFollower, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(e) = self.offline_error() {
            return Box::pin(fut::ready(Err(e)));
        }
        match self.role {
            Role::Follower { leader_epoch, .. } if leader_epoch == msg.leader_epoch => {}
            _ => {
                return Box::pin(fut::ready(
                    Err(ReplicationError::NotLeaderOrFollower.into()),
                ))
            }
        }
        self.ensure_log_online(ctx);
        // The shard keeps it at most the log end offset after the append.
        let append = self.dispatch(
            log_actor::AppendAsFollower {
                tp: self.tp.clone(),
                records: msg.records,
                high_watermark: msg.leader_high_watermark,
            },
            ctx,
        );
        let leader_log_start = msg.leader_log_start_offset;
        let leader_high_watermark = msg.leader_high_watermark;
        Box::pin(append.into_actor(self).map(move |result, actor, _ctx| {
            actor.observe(&result);
            let offsets = result?;
            actor.set_log_end_offset(offsets.log_end_offset);
            actor.set_high_watermark(leader_high_watermark.min(offsets.log_end_offset));
            actor.note_log_start(leader_log_start.min(offsets.log_end_offset));
            actor.reported_high_watermark = offsets.high_watermark;
            Ok(offsets)
        }))
    }
}

/// As follower: cut the log at `offset` (where it diverges from the
/// leader's), or with `start_over` replace it by an empty log starting at
/// `offset` (the leader no longer has what it would fetch next).
#[derive(Debug)]
pub struct TruncateReplica {
    pub offset: i64,
    pub start_over: bool,
}

impl Message for TruncateReplica {
    type Result = Result<LogOffsets, LogActorError>;
}

impl Handler<TruncateReplica> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, LogActorError>>;

    fn handle(&mut self, msg: TruncateReplica, ctx: &mut Context<Self>) -> Self::Result {
        if matches!(self.role, Role::Leader(_)) {
            return Box::pin(fut::ready(
                Err(ReplicationError::NotLeaderOrFollower.into()),
            ));
        }
        let tp = self.tp.clone();
        let reply: ShardReply<LogOffsets> = if msg.start_over {
            self.dispatch(
                log_actor::TruncateFully {
                    tp,
                    offset: msg.offset,
                },
                ctx,
            )
        } else {
            self.dispatch(
                log_actor::Truncate {
                    tp,
                    offset: msg.offset,
                },
                ctx,
            )
        };
        let start_over = msg.start_over;
        Box::pin(reply.into_actor(self).map(move |result, actor, _ctx| {
            actor.observe(&result);
            let offsets = result?;
            if start_over {
                actor.state.log_start_offset = offsets.log_start_offset;
                actor.state.high_watermark = offsets.log_end_offset;
            }
            actor.reset(offsets);
            Ok(offsets)
        }))
    }
}

/// OffsetForLeaderEpoch: where `leader_epoch` ends in this replica's log,
/// as `(epoch, end offset)`. `as_leader`: only a leader answers (requests
/// from other brokers and clients); a follower asks its own log freely.
#[derive(Debug)]
pub struct EndOffsetForLeaderEpoch {
    pub leader_epoch: i32,
    pub current_leader_epoch: i32,
    pub as_leader: bool,
}

impl Message for EndOffsetForLeaderEpoch {
    type Result = Result<(i32, i64), LogActorError>;
}

impl Handler<EndOffsetForLeaderEpoch> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<(i32, i64), LogActorError>>;

    fn handle(&mut self, msg: EndOffsetForLeaderEpoch, ctx: &mut Context<Self>) -> Self::Result {
        if msg.as_leader {
            if let Err(e) = self.check_leader(msg.current_leader_epoch) {
                return Box::pin(fut::ready(Err(e)));
            }
        }
        let reply = self.dispatch(
            log_actor::EndOffsetForEpoch {
                tp: self.tp.clone(),
                epoch: msg.leader_epoch,
            },
            ctx,
        );
        Box::pin(reply.into_actor(self))
    }
}

/// The log's own offsets and latest leader epoch, asked of the shard in
/// order with this partition's other requests (a follower's fetcher).
#[derive(Debug)]
pub struct LocalLogOffsets;

impl Message for LocalLogOffsets {
    type Result = Result<LogOffsets, LogActorError>;
}

impl Handler<LocalLogOffsets> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, LogActorError>>;

    fn handle(&mut self, _msg: LocalLogOffsets, ctx: &mut Context<Self>) -> Self::Result {
        let reply = self.dispatch(
            GetLogOffsets {
                tp: self.tp.clone(),
            },
            ctx,
        );
        Box::pin(reply.into_actor(self))
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

/// The offsets ListOffsets answers from, as leader only: checked against
/// the client's `current_leader_epoch` (-1: unchecked). A consumer's
/// (`for_replica` false) is refused OFFSET_NOT_AVAILABLE while a new
/// leader's high watermark is below the start of its epoch (KIP-207): it
/// would answer an offset older than what it may have acknowledged.
#[derive(Debug)]
pub struct LeaderOffsets {
    pub current_leader_epoch: i32,
    pub for_replica: bool,
}

impl Message for LeaderOffsets {
    type Result = Result<PartitionState, LogActorError>;
}

impl Handler<LeaderOffsets> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<PartitionState, LogActorError>>;

    fn handle(&mut self, msg: LeaderOffsets, ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.check_leader(msg.current_leader_epoch) {
            return Box::pin(fut::ready(Err(e)));
        }
        let offsets = self.dispatch(
            GetLogOffsets {
                tp: self.tp.clone(),
            },
            ctx,
        );
        let for_replica = msg.for_replica;
        Box::pin(offsets.into_actor(self).map(move |offsets, actor, _ctx| {
            actor.observe(&offsets);
            actor.note_log_start(offsets?.log_start_offset);
            if let Role::Leader(leader) = &actor.role {
                if !for_replica && leader.epoch_start_offset > actor.state.high_watermark {
                    return Err(ReplicationError::OffsetNotAvailable {
                        high_watermark: actor.state.high_watermark,
                        epoch_start_offset: leader.epoch_start_offset,
                    }
                    .into());
                }
            }
            Ok(actor.state)
        }))
    }
}

/// Whether this replica leads, and its ISR (tests, admin).
#[derive(Debug)]
pub struct GetReplicaState;

/// A replica's role as its partition actor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaState {
    pub leader: i32,
    pub leader_epoch: i32,
    /// As leader, the ISR in force; as follower, empty.
    pub isr: Vec<i32>,
    pub offsets: PartitionState,
}

impl Message for GetReplicaState {
    type Result = ReplicaState;
}

impl Handler<GetReplicaState> for PartitionActor {
    type Result = MessageResult<GetReplicaState>;

    fn handle(&mut self, _msg: GetReplicaState, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(match &self.role {
            Role::Leader(leader) => ReplicaState {
                leader: self.replica.broker_id,
                leader_epoch: leader.leader_epoch,
                isr: leader.isr.iter().copied().collect(),
                offsets: self.state,
            },
            Role::Follower {
                leader,
                leader_epoch,
            } => ReplicaState {
                leader: *leader,
                leader_epoch: *leader_epoch,
                isr: Vec::new(),
                offsets: self.state,
            },
        })
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
        if let Err(e) = self.check_leader(-1) {
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
        if let Err(e) = self.check_leader(-1) {
            return Box::pin(fut::ready(Err(e)));
        }
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

/// Stop serving (topic deletion, shutdown, or the replica moved away).
#[derive(Debug)]
pub struct StopPartition;

impl Message for StopPartition {
    type Result = ();
}

impl Handler<StopPartition> for PartitionActor {
    type Result = ();

    fn handle(&mut self, _msg: StopPartition, ctx: &mut Context<Self>) {
        self.fail_purgatory();
        // The checkpoint written at shutdown should hold the latest.
        self.report_high_watermark();
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
    pub replica: ReplicaContext,
}

impl PartitionRuntime {
    /// Start `tp`'s actor on its arbiter, in `assignment`'s role, and
    /// register it.
    pub fn start(
        &self,
        tp: &TopicPartition,
        offsets: LogOffsets,
        assignment: PartitionAssignment,
    ) -> PartitionHandle {
        let handle = PartitionActor::start(
            tp.clone(),
            self.shards.for_partition(tp),
            offsets,
            self.events.clone(),
            self.replica.clone(),
            assignment,
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
