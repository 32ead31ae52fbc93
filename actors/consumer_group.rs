//! A consumer-group actor: one per group this broker coordinates. A thin
//! shell around the pure state machine (`group::state::Group`): it feeds in
//! requests and timer ticks, parks JoinGroup/SyncGroup callers until the
//! state machine answers them, persists group metadata and committed offsets
//! as records in its `__consumer_offsets` partition (through that
//! partition's actor, like any produce), and keeps the committed offsets.
//!
//! It runs under the common supervisor: after a panic it restarts and
//! reloads the group's metadata and committed offsets from its
//! `__consumer_offsets` partition (never starting empty); callers parked in
//! JoinGroup/SyncGroup get COORDINATOR_NOT_AVAILABLE and rejoin. Past its
//! restart budget it answers COORDINATOR_NOT_AVAILABLE to everything.
//! Completed rebalances and emptied groups are published on the event bus.
//!
//! It never answers a caller before what the answer depends on is written,
//! and never touches files or other groups.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use actix::prelude::*;
use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use tokio::sync::oneshot;

use crate::clock::SharedClock;
use crate::group::records::{encode_batch, group_record, offset_record, OffsetAndMetadata};
use crate::group::state::{
    Effect, Group, GroupError, GroupSnapshot, GroupState, JoinOutcome, JoinRequest, JoinResult,
    MemberSnapshot, SyncOutcome, SyncRequest, SyncResult,
};
use crate::topic_partition::TopicPartition;

use super::event_bus::{BrokerEvent, EventBus};
use super::partition::{Acks, AppendRecords, GetState, PartitionHandle, ReadRecords};

/// Kafka's `offsets.commit.timeout.ms` default.
const GROUP_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
use super::supervisor::{supervise, ChildSpec, Escalation, SupervisorLink};
use crate::group::records::{decode_records, GroupRecord};
use crate::group::state::GroupConfig;

/// The longest a group sleeps before looking at its deadlines again (a
/// guard against a clock that jumps; deadlines themselves wake it).
const MAX_SLEEP: Duration = Duration::from_secs(60);
/// Kafka's `offset.metadata.max.bytes` default.
pub const OFFSET_METADATA_MAX_BYTES: usize = 4096;

// One message per request, each with its typed answer. `Err` is a
// group-level error (the group is unavailable past its restart budget);
// per-partition or per-member outcomes are Kafka codes inside `Ok`, as the
// responses carry them.

/// JoinGroup: answered when the rebalance completes.
#[derive(Debug, Message)]
#[rtype(result = "Result<JoinResult, ResponseError>")]
pub struct JoinGroup(pub JoinRequest);

/// SyncGroup: answered when the leader's assignment is in.
#[derive(Debug, Message)]
#[rtype(result = "Result<SyncResult, ResponseError>")]
pub struct SyncGroup(pub SyncRequest);

/// Heartbeat: `Ok(code)`, the heartbeat's error code (0: none).
#[derive(Debug, Message)]
#[rtype(result = "Result<i16, ResponseError>")]
pub struct Heartbeat {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
}

/// LeaveGroup: one code per member, in request order.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<i16>, ResponseError>")]
pub struct LeaveGroup {
    pub members: Vec<(String, Option<String>)>,
}

/// OffsetCommit: one code per partition.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<(TopicPartition, i16)>, ResponseError>")]
pub struct CommitOffsets {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    pub offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
}

/// OffsetFetch: the committed offset of each asked partition (`None`:
/// every partition with one).
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, ResponseError>")]
pub struct FetchOffsets {
    pub partitions: Option<Vec<TopicPartition>>,
}

/// DescribeGroups, ListGroups.
#[derive(Debug, Message)]
#[rtype(result = "Result<GroupDescription, ResponseError>")]
pub struct DescribeGroup;

/// DeleteGroups: `Ok(code)` (NON_EMPTY_GROUP when it has members).
#[derive(Debug, Message)]
#[rtype(result = "Result<i16, ResponseError>")]
pub struct DeleteGroup;

/// OffsetDelete: one code per partition.
#[derive(Debug, Message)]
#[rtype(result = "Result<Vec<(TopicPartition, i16)>, ResponseError>")]
pub struct DeleteOffsets {
    pub partitions: Vec<TopicPartition>,
}

/// A topic was deleted: forget this group's offsets for it, with
/// tombstones (Kafka's `onPartitionsDeleted`), so a topic re-created under
/// the same name does not resume at old offsets.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct TopicDeleted {
    pub topic: String,
}

/// A group as DescribeGroups/ListGroups show it.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    pub protocol_name: String,
    pub members: Vec<MemberSnapshot>,
}

pub struct ConsumerGroup {
    group: Group,
    config: GroupConfig,
    /// Its `__consumer_offsets` partition.
    log: PartitionHandle,
    offsets: HashMap<TopicPartition, OffsetAndMetadata>,
    pending_joins: HashMap<String, oneshot::Sender<JoinResult>>,
    pending_syncs: HashMap<String, oneshot::Sender<SyncResult>>,
    clock: SharedClock,
    retention: OffsetRetention,
    events: EventBus,
    link: SupervisorLink,
    /// Set past the restart budget: every request answers this.
    unavailable: bool,
    /// Commits are numbered as handled; per partition, the number of the
    /// one in `offsets`.
    commit_sequence: u64,
    applied_commits: HashMap<TopicPartition, u64>,
    /// The timer for the group's next deadline, and when it is due.
    timer: Option<(SpawnHandle, i64)>,
}

/// `offsets.retention.minutes` (as ms) and `offsets.retention.check.interval.ms`.
#[derive(Debug, Clone, Copy)]
pub struct OffsetRetention {
    pub retention_ms: i64,
    pub check_interval_ms: u64,
}

/// What a group actor needs besides its state.
#[derive(Clone)]
pub struct GroupRuntime {
    pub config: GroupConfig,
    pub clock: SharedClock,
    pub retention: OffsetRetention,
    pub events: EventBus,
}

impl ConsumerGroup {
    /// Start the group's actor under supervision, on `arbiter` when given.
    pub fn start(
        group: Group,
        log: PartitionHandle,
        offsets: HashMap<TopicPartition, OffsetAndMetadata>,
        runtime: GroupRuntime,
        arbiter: Option<&ArbiterHandle>,
    ) -> Addr<ConsumerGroup> {
        let link = SupervisorLink::default();
        let spec = ChildSpec::new(format!("group {}", group.group_id()), Escalation::Degrade);
        let actor = ConsumerGroup {
            group,
            config: runtime.config,
            log,
            offsets,
            pending_joins: HashMap::new(),
            pending_syncs: HashMap::new(),
            clock: runtime.clock,
            retention: runtime.retention,
            events: runtime.events,
            link: link.clone(),
            unavailable: false,
            commit_sequence: 0,
            applied_commits: HashMap::new(),
            timer: None,
        };
        supervise(arbiter, spec, link, move |_| actor)
    }

    /// Wake at the group's next deadline (session, rebalance, sync,
    /// pending member), not on a fixed tick: an idle group costs nothing.
    /// A timer that fires early (its deadline moved later) just re-arms.
    fn reschedule(&mut self, ctx: &mut Context<Self>) {
        let next = self.group.next_deadline();
        if let Some((handle, at)) = self.timer {
            if Some(at) == next {
                return;
            }
            ctx.cancel_future(handle);
            self.timer = None;
        }
        let Some(at) = next else {
            return;
        };
        let delay = Duration::from_millis((at - self.now()).max(0) as u64).min(MAX_SLEEP);
        let handle = ctx.run_later(delay, |actor, ctx| {
            actor.timer = None;
            let before = actor.mark();
            let effects = actor.group.tick(actor.now());
            actor.apply(effects, ctx);
            actor.publish_transition(before);
            actor.reschedule(ctx);
        });
        self.timer = Some((handle, at));
    }

    /// Publish what a request or a tick changed.
    fn publish_transition(&self, before: (GroupState, i32)) {
        let now = (self.group.state(), self.group.generation_id());
        if now == before {
            return;
        }
        let group_id = self.group.group_id().to_string();
        match now.0 {
            GroupState::Stable => self.events.publish(BrokerEvent::GroupRebalanced {
                group_id,
                generation_id: now.1,
                members: self.group.members().len(),
            }),
            GroupState::Empty if before.0 != GroupState::Empty => {
                self.events.publish(BrokerEvent::GroupEmptied { group_id })
            }
            _ => {}
        }
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Carry out effects: responses wait for a persist that precedes them.
    fn apply(&mut self, effects: Vec<Effect>, ctx: &mut Context<Self>) {
        // The state machine just ran: its next deadline may have moved.
        self.reschedule(ctx);
        if effects.is_empty() {
            return;
        }
        let persist = effects.iter().any(|e| matches!(e, Effect::PersistGroup));
        if !persist {
            self.deliver(effects);
            return;
        }
        let now = self.now();
        let snapshot = self.group.snapshot(now);
        let record = group_record(self.group.group_id(), Some(&snapshot));
        let append = self.append(vec![record], now);
        ctx.wait(append.into_actor(self).map(move |result, actor, _ctx| {
            let effects = match result {
                Ok(()) => effects,
                // The group's record is not written: Kafka answers the
                // parked requests COORDINATOR_NOT_AVAILABLE (its
                // `storeGroup` callback), and they retry.
                Err(_) => effects
                    .into_iter()
                    .map(|e| with_error(e, GroupError::CoordinatorNotAvailable))
                    .collect(),
            };
            actor.deliver(effects);
        }));
    }

    fn deliver(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::JoinResponse { member_id, result } => {
                    if let Some(tx) = self.pending_joins.remove(&member_id) {
                        let _ = tx.send(result);
                    }
                }
                Effect::SyncResponse { member_id, result } => {
                    if let Some(tx) = self.pending_syncs.remove(&member_id) {
                        let _ = tx.send(result);
                    }
                }
                Effect::PersistGroup => {}
            }
        }
    }

    /// Append records to this group's `__consumer_offsets` partition. The
    /// append is enqueued now, so the group's writes reach the log in the
    /// order it handled them (a later commit never lands before an earlier
    /// one); the future only waits for the answer.
    fn append(
        &self,
        records: Vec<(Bytes, Option<Bytes>)>,
        now: i64,
    ) -> impl std::future::Future<Output = Result<(), i16>> + 'static {
        let request = match encode_batch(&records, now) {
            // A fresh sender is never parked: this enqueues now.
            // Kafka's offsets.commit.required.acks=-1: a commit or a group
            // state is answered once every ISR member has it.
            Ok(batch) => Ok(self.log.addr.clone().send(AppendRecords {
                current_leader_epoch: -1,
                records: batch,
                acks: Acks::All {
                    timeout: GROUP_WRITE_TIMEOUT,
                },
            })),
            Err(e) => {
                log::error!("cannot encode group records: {e}");
                Err(ResponseError::UnknownServerError.code())
            }
        };
        async move {
            match request?.await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => {
                    log::error!("writing group records failed: {e}");
                    Err(ResponseError::CoordinatorNotAvailable.code())
                }
                Err(_) => Err(ResponseError::CoordinatorNotAvailable.code()),
            }
        }
    }

    fn expire_offsets(&mut self, ctx: &mut Context<Self>) {
        // Kafka 2.1+: offsets of an Empty group expire `offsets.retention.minutes`
        // after it became Empty; a group that never had members (standalone
        // commits) expires each offset that long after its commit.
        let now = self.now();
        if self.group.state() != GroupState::Empty {
            return;
        }
        if self.offsets.is_empty() {
            self.remove_if_unused(ctx);
            return;
        }
        // A group that never changed state has no timestamp; with -1 as
        // "now" the snapshot reports that as -1, and commit times decide.
        let empty_since = self.group.snapshot(-1).current_state_timestamp_ms;
        let retention_ms = self.retention.retention_ms;
        let expired: Vec<TopicPartition> = self
            .offsets
            .iter()
            .filter(|(_, o)| now - empty_since.max(o.commit_timestamp_ms) >= retention_ms)
            .map(|(tp, _)| tp.clone())
            .collect();
        if expired.is_empty() {
            return;
        }
        let records = expired
            .iter()
            .map(|tp| offset_record(self.group.group_id(), tp, None))
            .collect();
        log::info!(
            "group {}: {} committed offset(s) expired",
            self.group.group_id(),
            expired.len()
        );
        let append = self.append(records, now);
        ctx.wait(append.into_actor(self).map(move |result, actor, ctx| {
            if result.is_ok() {
                for tp in expired {
                    actor.offsets.remove(&tp);
                }
                actor.remove_if_unused(ctx);
            }
        }));
    }

    /// Kafka's `cleanupGroupMetadata`: an Empty group with no committed
    /// offsets left is written off (a group tombstone), becomes Dead and
    /// its actor stops, so idle groups do not pile up.
    fn remove_if_unused(&mut self, ctx: &mut Context<Self>) {
        let unused = self.group.state() == GroupState::Empty
            && self.offsets.is_empty()
            && self.pending_joins.is_empty()
            && self.pending_syncs.is_empty();
        if !unused {
            return;
        }
        let group_id = self.group.group_id().to_string();
        let append = self.append(vec![group_record(&group_id, None)], self.now());
        ctx.wait(append.into_actor(self).map(move |result, actor, ctx| {
            if result.is_ok() && actor.group.delete().is_ok() {
                log::info!("group {group_id} is empty with no offsets left: removed");
                actor.link.stop();
                ctx.stop();
            }
        }));
    }
}

fn with_error(effect: Effect, error: GroupError) -> Effect {
    match effect {
        Effect::JoinResponse {
            member_id,
            mut result,
        } => {
            result.error = Some(error);
            Effect::JoinResponse { member_id, result }
        }
        Effect::SyncResponse {
            member_id,
            mut result,
        } => {
            result.error = Some(error);
            Effect::SyncResponse { member_id, result }
        }
        other => other,
    }
}

/// Read a whole `__consumer_offsets` partition and fold it into groups: the
/// latest record per key wins, tombstones delete. The partition is
/// compacted, so this reads what the cleaner kept plus the dirty tail.
pub async fn read_groups(
    handle: &PartitionHandle,
) -> Result<(BTreeMap<String, LoadedGroupState>, Scanned), GroupLoadError> {
    let mut scanned = Scanned::default();
    let mut groups: BTreeMap<String, LoadedGroupState> = BTreeMap::new();
    let state = handle
        .addr
        .send(GetState)
        .await
        .map_err(|_| GroupLoadError::PartitionStopped)?;
    let mut offset = state.log_start_offset;
    // Bounded: every round advances past at least one whole batch.
    while offset < state.log_end_offset {
        let read = handle
            .addr
            .send(ReadRecords {
                to_log_end: true,
                ..ReadRecords::committed(offset, 1 << 20)
            })
            .await
            .map_err(|_| GroupLoadError::PartitionStopped)??;
        let Some(region) = read.read.region else {
            break;
        };
        // A file read: off the actor threads.
        let bytes = tokio::task::spawn_blocking(move || region.read_to_vec())
            .await
            .map_err(|_| GroupLoadError::PartitionStopped)??;
        let (records, last) = decode_records(&bytes)?;
        scanned.bytes += bytes.len() as u64;
        scanned.records += records.len() as u64;
        for record in records {
            match record {
                GroupRecord::Offset { group, tp, value } => {
                    let entry = groups.entry(group).or_default();
                    match value {
                        Some(value) => {
                            entry.offsets.insert(tp, value);
                        }
                        None => {
                            entry.offsets.remove(&tp);
                        }
                    }
                }
                GroupRecord::Group { group, value } => match value {
                    Some(snapshot) => groups.entry(group).or_default().snapshot = Some(snapshot),
                    None => {
                        groups.remove(&group);
                    }
                },
            }
        }
        match last {
            Some(last) if last >= offset => offset = last + 1,
            _ => break,
        }
    }
    groups.retain(|_, g| g.snapshot.is_some() || !g.offsets.is_empty());
    Ok((groups, scanned))
}

/// Why a group partition could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum GroupLoadError {
    #[error("the partition actor stopped")]
    PartitionStopped,
    #[error("{0} is not led here")]
    NotLeader(TopicPartition),
    #[error(transparent)]
    Read(#[from] super::partition::PartitionError),
    #[error("reading the log: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Records(#[from] crate::group::records::RecordError),
}

/// What loading a partition read (the cost of loading without compaction).
#[derive(Debug, Default)]
pub struct Scanned {
    pub records: u64,
    pub bytes: u64,
}

#[derive(Debug, Default)]
pub struct LoadedGroupState {
    pub snapshot: Option<GroupSnapshot>,
    pub offsets: HashMap<TopicPartition, OffsetAndMetadata>,
}

impl actix::Supervised for ConsumerGroup {
    fn restarting(&mut self, ctx: &mut Context<Self>) {
        // Callers parked in Join/Sync are answered COORDINATOR_NOT_AVAILABLE
        // (their senders drop) and rejoin.
        self.pending_joins.clear();
        self.pending_syncs.clear();
        let group_id = self.group.group_id().to_string();
        if let Some(cause) = self.link.escalated() {
            log::error!("group {group_id} is unavailable: {cause}");
            self.unavailable = true;
            return;
        }
        log::warn!("group {group_id} restarts and reloads from its __consumer_offsets partition");
        let log = self.log.clone();
        // Nothing is served until the group is reloaded.
        ctx.wait(async move { read_groups(&log).await }.into_actor(self).map(
            move |result, actor, ctx| match result {
                Ok((mut groups, _)) => {
                    let loaded = groups.remove(&group_id).unwrap_or_default();
                    let now = actor.now();
                    actor.group = match loaded.snapshot {
                        Some(snapshot) => {
                            Group::restore(group_id, actor.config.clone(), snapshot, now)
                        }
                        None => Group::new(group_id, actor.config.clone()),
                    };
                    actor.offsets = loaded.offsets;
                    actor.timer = None;
                    actor.reschedule(ctx);
                }
                Err(e) => {
                    log::error!("group {group_id} cannot reload ({e}); it is unavailable");
                    actor.unavailable = true;
                }
            },
        ));
    }
}

impl Actor for ConsumerGroup {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // A restart cleared the old timer with the rest of the context.
        self.timer = None;
        self.reschedule(ctx);
        let check = Duration::from_millis(self.retention.check_interval_ms.max(1));
        ctx.run_interval(check, |actor, ctx| actor.expire_offsets(ctx));
    }
}

impl ConsumerGroup {
    /// The group-level error every request gets past the restart budget.
    fn available(&self) -> Result<(), ResponseError> {
        if self.unavailable {
            Err(ResponseError::CoordinatorNotAvailable)
        } else {
            Ok(())
        }
    }

    fn mark(&self) -> (GroupState, i32) {
        (self.group.state(), self.group.generation_id())
    }
}

type Answer<T> = ResponseActFuture<ConsumerGroup, Result<T, ResponseError>>;

fn answer<T: 'static>(result: Result<T, ResponseError>) -> Answer<T> {
    Box::pin(fut::ready(result))
}

impl Handler<JoinGroup> for ConsumerGroup {
    type Result = Answer<JoinResult>;

    fn handle(&mut self, msg: JoinGroup, ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.available() {
            return answer(Err(e));
        }
        let before = self.mark();
        let (outcome, effects) = self.group.join(msg.0, self.now());
        let reply = match outcome {
            JoinOutcome::Respond(result) => answer(Ok(result)),
            JoinOutcome::Wait { member_id } => {
                let (tx, rx) = oneshot::channel();
                self.pending_joins.insert(member_id.clone(), tx);
                Box::pin(
                    async move {
                        // Dropped: the actor restarted under this caller.
                        Ok(rx.await.unwrap_or_else(|_| {
                            JoinResult::error(&member_id, GroupError::CoordinatorNotAvailable)
                        }))
                    }
                    .into_actor(self),
                )
            }
        };
        self.apply(effects, ctx);
        self.publish_transition(before);
        reply
    }
}

impl Handler<SyncGroup> for ConsumerGroup {
    type Result = Answer<SyncResult>;

    fn handle(&mut self, msg: SyncGroup, ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.available() {
            return answer(Err(e));
        }
        let before = self.mark();
        let (outcome, effects) = self.group.sync(msg.0, self.now());
        let reply = match outcome {
            SyncOutcome::Respond(result) => answer(Ok(result)),
            SyncOutcome::Wait { member_id } => {
                let (tx, rx) = oneshot::channel();
                self.pending_syncs.insert(member_id, tx);
                Box::pin(
                    async move {
                        Ok(rx.await.unwrap_or_else(|_| {
                            SyncResult::error(GroupError::CoordinatorNotAvailable)
                        }))
                    }
                    .into_actor(self),
                )
            }
        };
        self.apply(effects, ctx);
        self.publish_transition(before);
        reply
    }
}

impl Handler<Heartbeat> for ConsumerGroup {
    type Result = Result<i16, ResponseError>;

    fn handle(&mut self, msg: Heartbeat, ctx: &mut Context<Self>) -> Self::Result {
        self.available()?;
        fail::fail_point!(&format!("group.heartbeat.{}", self.group.group_id()));
        let before = self.mark();
        let (answer, effects) = self.group.heartbeat(
            &msg.member_id,
            msg.group_instance_id.as_deref(),
            msg.generation_id,
            self.now(),
        );
        self.apply(effects, ctx);
        self.publish_transition(before);
        Ok(GroupError::code_of(answer))
    }
}

impl Handler<LeaveGroup> for ConsumerGroup {
    type Result = Result<Vec<i16>, ResponseError>;

    fn handle(&mut self, msg: LeaveGroup, ctx: &mut Context<Self>) -> Self::Result {
        self.available()?;
        let before = self.mark();
        let (answers, effects) = self.group.leave(msg.members, self.now());
        self.apply(effects, ctx);
        self.publish_transition(before);
        Ok(answers.into_iter().map(GroupError::code_of).collect())
    }
}

impl Handler<CommitOffsets> for ConsumerGroup {
    type Result = Answer<Vec<(TopicPartition, i16)>>;

    fn handle(&mut self, msg: CommitOffsets, _ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.available() {
            return answer(Err(e));
        }
        let now = self.now();
        if let Err(error) = self.group.validate_offset_commit(
            &msg.member_id,
            msg.group_instance_id.as_deref(),
            msg.generation_id,
            now,
        ) {
            return answer(Ok(msg
                .offsets
                .into_iter()
                .map(|(tp, _)| (tp, error.code()))
                .collect()));
        }
        let (accepted, refused): (Vec<_>, Vec<_>) = msg
            .offsets
            .into_iter()
            .partition(|(_, o)| o.metadata.len() <= OFFSET_METADATA_MAX_BYTES);
        let group_id = self.group.group_id().to_string();
        let records = accepted
            .iter()
            .map(|(tp, o)| offset_record(&group_id, tp, Some(o)))
            .collect::<Vec<_>>();
        let append = self.append(records, now);
        // Appends complete in any order; the commit handled last must win.
        self.commit_sequence += 1;
        let sequence = self.commit_sequence;
        Box::pin(append.into_actor(self).map(move |result, actor, _| {
            let mut codes = Vec::new();
            for (tp, offset) in accepted {
                match result {
                    Ok(()) => {
                        let newest = actor.applied_commits.get(&tp).is_none_or(|s| *s < sequence);
                        if newest {
                            actor.applied_commits.insert(tp.clone(), sequence);
                            actor.offsets.insert(tp.clone(), offset);
                        }
                        codes.push((tp, 0));
                    }
                    Err(code) => codes.push((tp, code)),
                }
            }
            for (tp, _) in refused {
                codes.push((tp, ResponseError::OffsetMetadataTooLarge.code()));
            }
            Ok(codes)
        }))
    }
}

impl Handler<FetchOffsets> for ConsumerGroup {
    type Result = Result<Vec<(TopicPartition, Option<OffsetAndMetadata>)>, ResponseError>;

    fn handle(&mut self, msg: FetchOffsets, _ctx: &mut Context<Self>) -> Self::Result {
        self.available()?;
        Ok(match msg.partitions {
            Some(tps) => tps
                .into_iter()
                .map(|tp| {
                    let offset = self.offsets.get(&tp).cloned();
                    (tp, offset)
                })
                .collect(),
            None => {
                let sorted: BTreeMap<_, _> = self.offsets.iter().collect();
                sorted
                    .into_iter()
                    .map(|(tp, o)| (tp.clone(), Some(o.clone())))
                    .collect()
            }
        })
    }
}

impl Handler<DescribeGroup> for ConsumerGroup {
    type Result = Result<GroupDescription, ResponseError>;

    fn handle(&mut self, _msg: DescribeGroup, _ctx: &mut Context<Self>) -> Self::Result {
        self.available()?;
        Ok(GroupDescription {
            state: self.group.state(),
            protocol_type: self.group.protocol_type().unwrap_or("").to_string(),
            protocol_name: self.group.protocol_name().unwrap_or("").to_string(),
            members: self.group.members(),
        })
    }
}

impl Handler<DeleteGroup> for ConsumerGroup {
    type Result = Answer<i16>;

    fn handle(&mut self, _msg: DeleteGroup, _ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.available() {
            return answer(Err(e));
        }
        if let Err(error) = self.group.delete() {
            return answer(Ok(error.code()));
        }
        let group_id = self.group.group_id().to_string();
        let mut records: Vec<_> = self
            .offsets
            .keys()
            .map(|tp| offset_record(&group_id, tp, None))
            .collect();
        records.push(group_record(&group_id, None));
        let append = self.append(records, self.now());
        Box::pin(
            append
                .into_actor(self)
                .map(|result, actor, ctx| match result {
                    Ok(()) => {
                        actor.offsets.clear();
                        actor.link.stop();
                        ctx.stop();
                        Ok(0)
                    }
                    Err(code) => Ok(code),
                }),
        )
    }
}

impl Handler<DeleteOffsets> for ConsumerGroup {
    type Result = Answer<Vec<(TopicPartition, i16)>>;

    fn handle(&mut self, msg: DeleteOffsets, _ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.available() {
            return answer(Err(e));
        }
        let subscribed = self.group.subscribed_topics();
        let group_id = self.group.group_id().to_string();
        let mut codes = Vec::new();
        let mut deletable = Vec::new();
        let active = self.group.state() != GroupState::Empty;
        let consumer = self.group.protocol_type().is_none_or(|p| p == "consumer");
        for tp in msg.partitions {
            if active && !consumer {
                // Kafka can only tell what a "consumer" group reads.
                codes.push((tp, ResponseError::NonEmptyGroup.code()));
            } else if active && subscribed.contains(&tp.topic) {
                codes.push((tp, ResponseError::GroupSubscribedToTopic.code()));
            } else {
                deletable.push(tp);
            }
        }
        let records = deletable
            .iter()
            .filter(|tp| self.offsets.contains_key(*tp))
            .map(|tp| offset_record(&group_id, tp, None))
            .collect::<Vec<_>>();
        if records.is_empty() {
            codes.extend(deletable.into_iter().map(|tp| (tp, 0)));
            return answer(Ok(codes));
        }
        let append = self.append(records, self.now());
        Box::pin(append.into_actor(self).map(move |result, actor, _| {
            for tp in deletable {
                match result {
                    Ok(()) => {
                        actor.offsets.remove(&tp);
                        codes.push((tp, 0));
                    }
                    Err(code) => codes.push((tp, code)),
                }
            }
            Ok(codes)
        }))
    }
}

impl Handler<TopicDeleted> for ConsumerGroup {
    type Result = ();

    fn handle(&mut self, msg: TopicDeleted, ctx: &mut Context<Self>) {
        let gone: Vec<TopicPartition> = self
            .offsets
            .keys()
            .filter(|tp| tp.topic == msg.topic)
            .cloned()
            .collect();
        if gone.is_empty() || self.unavailable {
            return;
        }
        let group_id = self.group.group_id().to_string();
        let records = gone
            .iter()
            .map(|tp| offset_record(&group_id, tp, None))
            .collect();
        let append = self.append(records, self.now());
        ctx.wait(
            append
                .into_actor(self)
                .map(move |result, actor, _| match result {
                    Ok(()) => {
                        for tp in gone {
                            actor.offsets.remove(&tp);
                        }
                    }
                    Err(code) => log::warn!(
                        "group {}: cannot forget the offsets of deleted topic {} (error {code})",
                        actor.group.group_id(),
                        msg.topic
                    ),
                }),
        );
    }
}
