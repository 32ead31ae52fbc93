//! A consumer-group actor: one per group this broker coordinates. A thin
//! shell around the pure state machine (`group::state::Group`): it feeds in
//! requests and timer ticks, parks JoinGroup/SyncGroup callers until the
//! state machine answers them, persists group metadata and committed offsets
//! as records in its `__consumer_offsets` partition (through that
//! partition's actor, like any produce), and keeps the committed offsets.
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
    Effect, Group, GroupSnapshot, GroupState, JoinOutcome, JoinRequest, JoinResult, MemberSnapshot,
    SyncOutcome, SyncRequest, SyncResult,
};
use crate::topic_partition::TopicPartition;

use super::partition::{AppendRecords, PartitionHandle};

const TICK: Duration = Duration::from_millis(100);
/// Kafka's `offset.metadata.max.bytes` default.
const OFFSET_METADATA_MAX_BYTES: usize = 4096;

/// Everything a group can be asked.
#[derive(Debug)]
pub enum GroupCommand {
    Join(JoinRequest),
    Sync(SyncRequest),
    Heartbeat {
        member_id: String,
        group_instance_id: Option<String>,
        generation_id: i32,
    },
    Leave {
        members: Vec<(String, Option<String>)>,
    },
    CommitOffsets {
        member_id: String,
        group_instance_id: Option<String>,
        generation_id: i32,
        offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
    },
    /// None: every committed offset.
    FetchOffsets {
        partitions: Option<Vec<TopicPartition>>,
    },
    Describe,
    Delete,
    DeleteOffsets {
        partitions: Vec<TopicPartition>,
    },
}

/// A group as DescribeGroups/ListGroups show it.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub state: GroupState,
    pub protocol_type: String,
    pub protocol_name: String,
    pub members: Vec<MemberSnapshot>,
}

#[derive(Debug)]
pub enum GroupReply {
    Join(JoinResult),
    Sync(SyncResult),
    Code(i16),
    Codes(Vec<i16>),
    Offsets(Vec<(TopicPartition, Option<OffsetAndMetadata>, i16)>),
    Described(GroupDescription),
}

impl Message for GroupCommand {
    type Result = GroupReply;
}

/// Restores a group at load time.
pub struct LoadedGroup {
    pub snapshot: Option<GroupSnapshot>,
    pub offsets: HashMap<TopicPartition, OffsetAndMetadata>,
}

pub struct ConsumerGroup {
    group: Group,
    /// Its `__consumer_offsets` partition.
    log: PartitionHandle,
    offsets: HashMap<TopicPartition, OffsetAndMetadata>,
    pending_joins: HashMap<String, oneshot::Sender<JoinResult>>,
    pending_syncs: HashMap<String, oneshot::Sender<SyncResult>>,
    clock: SharedClock,
    retention: OffsetRetention,
}

/// `offsets.retention.minutes` (as ms) and `offsets.retention.check.interval.ms`.
#[derive(Debug, Clone, Copy)]
pub struct OffsetRetention {
    pub retention_ms: i64,
    pub check_interval_ms: u64,
}

impl ConsumerGroup {
    pub fn new(
        group: Group,
        log: PartitionHandle,
        offsets: HashMap<TopicPartition, OffsetAndMetadata>,
        clock: SharedClock,
        retention: OffsetRetention,
    ) -> Self {
        ConsumerGroup {
            group,
            log,
            offsets,
            pending_joins: HashMap::new(),
            pending_syncs: HashMap::new(),
            clock,
            retention,
        }
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Carry out effects: responses wait for a persist that precedes them.
    fn apply(&mut self, effects: Vec<Effect>, ctx: &mut Context<Self>) {
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
                Err(code) => effects.into_iter().map(|e| with_error(e, code)).collect(),
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

    /// Append records to this group's `__consumer_offsets` partition.
    fn append(
        &self,
        records: Vec<(Bytes, Option<Bytes>)>,
        now: i64,
    ) -> impl std::future::Future<Output = Result<(), i16>> + 'static {
        let addr = self.log.addr.clone();
        let batch = encode_batch(&records, now);
        async move {
            let batch = batch.map_err(|e| {
                log::error!("cannot encode group records: {e}");
                ResponseError::UnknownServerError.code()
            })?;
            match addr.send(AppendRecords { records: batch }).await {
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
        if self.group.state() != GroupState::Empty || self.offsets.is_empty() {
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
        ctx.wait(append.into_actor(self).map(move |result, actor, _| {
            if result.is_ok() {
                for tp in expired {
                    actor.offsets.remove(&tp);
                }
            }
        }));
    }
}

fn with_error(effect: Effect, code: i16) -> Effect {
    match effect {
        Effect::JoinResponse {
            member_id,
            mut result,
        } => {
            result.error_code = code;
            Effect::JoinResponse { member_id, result }
        }
        Effect::SyncResponse {
            member_id,
            mut result,
        } => {
            result.error_code = code;
            Effect::SyncResponse { member_id, result }
        }
        other => other,
    }
}

impl Actor for ConsumerGroup {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(1024);
        ctx.run_interval(TICK, |actor, ctx| {
            let now = actor.now();
            let effects = actor.group.tick(now);
            actor.apply(effects, ctx);
        });
        let check = Duration::from_millis(self.retention.check_interval_ms.max(1));
        ctx.run_interval(check, |actor, ctx| actor.expire_offsets(ctx));
    }
}

impl Handler<GroupCommand> for ConsumerGroup {
    type Result = ResponseActFuture<Self, GroupReply>;

    fn handle(&mut self, command: GroupCommand, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.now();
        let ready = |reply: GroupReply| -> Self::Result { Box::pin(fut::ready(reply)) };
        match command {
            GroupCommand::Join(request) => {
                let (outcome, effects) = self.group.join(request, now);
                let reply: Self::Result = match outcome {
                    JoinOutcome::Respond(result) => ready(GroupReply::Join(result)),
                    JoinOutcome::Wait { member_id } => {
                        let (tx, rx) = oneshot::channel();
                        self.pending_joins.insert(member_id.clone(), tx);
                        Box::pin(
                            async move {
                                rx.await.unwrap_or_else(|_| JoinResult {
                                    error_code: ResponseError::UnknownMemberId.code(),
                                    generation_id: -1,
                                    protocol_type: None,
                                    protocol_name: None,
                                    leader: String::new(),
                                    skip_assignment: false,
                                    member_id,
                                    members: Vec::new(),
                                })
                            }
                            .into_actor(self)
                            .map(|result, _, _| GroupReply::Join(result)),
                        )
                    }
                };
                self.apply(effects, ctx);
                reply
            }
            GroupCommand::Sync(request) => {
                let (outcome, effects) = self.group.sync(request, now);
                let reply: Self::Result = match outcome {
                    SyncOutcome::Respond(result) => ready(GroupReply::Sync(result)),
                    SyncOutcome::Wait { member_id } => {
                        let (tx, rx) = oneshot::channel();
                        self.pending_syncs.insert(member_id, tx);
                        Box::pin(
                            async move {
                                rx.await.unwrap_or_else(|_| SyncResult {
                                    error_code: ResponseError::UnknownMemberId.code(),
                                    protocol_type: None,
                                    protocol_name: None,
                                    assignment: Bytes::new(),
                                })
                            }
                            .into_actor(self)
                            .map(|result, _, _| GroupReply::Sync(result)),
                        )
                    }
                };
                self.apply(effects, ctx);
                reply
            }
            GroupCommand::Heartbeat {
                member_id,
                group_instance_id,
                generation_id,
            } => {
                let (code, effects) = self.group.heartbeat(
                    &member_id,
                    group_instance_id.as_deref(),
                    generation_id,
                    now,
                );
                self.apply(effects, ctx);
                ready(GroupReply::Code(code))
            }
            GroupCommand::Leave { members } => {
                let (codes, effects) = self.group.leave(members, now);
                self.apply(effects, ctx);
                ready(GroupReply::Codes(codes))
            }
            GroupCommand::CommitOffsets {
                member_id,
                group_instance_id,
                generation_id,
                offsets,
            } => {
                if let Err(code) = self.group.validate_offset_commit(
                    &member_id,
                    group_instance_id.as_deref(),
                    generation_id,
                    now,
                ) {
                    let codes = offsets
                        .into_iter()
                        .map(|(tp, _)| (tp, None, code))
                        .collect();
                    return ready(GroupReply::Offsets(codes));
                }
                let (accepted, refused): (Vec<_>, Vec<_>) = offsets
                    .into_iter()
                    .partition(|(_, o)| o.metadata.len() <= OFFSET_METADATA_MAX_BYTES);
                let group_id = self.group.group_id().to_string();
                let records = accepted
                    .iter()
                    .map(|(tp, o)| offset_record(&group_id, tp, Some(o)))
                    .collect::<Vec<_>>();
                let append = self.append(records, now);
                Box::pin(append.into_actor(self).map(move |result, actor, _| {
                    let mut codes = Vec::new();
                    for (tp, offset) in accepted {
                        match result {
                            Ok(()) => {
                                actor.offsets.insert(tp.clone(), offset);
                                codes.push((tp, None, 0));
                            }
                            Err(code) => codes.push((tp, None, code)),
                        }
                    }
                    for (tp, _) in refused {
                        codes.push((tp, None, ResponseError::OffsetMetadataTooLarge.code()));
                    }
                    GroupReply::Offsets(codes)
                }))
            }
            GroupCommand::FetchOffsets { partitions } => {
                let offsets = match partitions {
                    Some(tps) => tps
                        .into_iter()
                        .map(|tp| {
                            let offset = self.offsets.get(&tp).cloned();
                            (tp, offset, 0)
                        })
                        .collect(),
                    None => {
                        let sorted: BTreeMap<_, _> = self.offsets.iter().collect();
                        sorted
                            .into_iter()
                            .map(|(tp, o)| (tp.clone(), Some(o.clone()), 0))
                            .collect()
                    }
                };
                ready(GroupReply::Offsets(offsets))
            }
            GroupCommand::Describe => ready(GroupReply::Described(GroupDescription {
                state: self.group.state(),
                protocol_type: self.group.protocol_type().unwrap_or("").to_string(),
                protocol_name: self.group.protocol_name().unwrap_or("").to_string(),
                members: self.group.members(),
            })),
            GroupCommand::Delete => {
                if let Err(code) = self.group.delete() {
                    return ready(GroupReply::Code(code));
                }
                let group_id = self.group.group_id().to_string();
                let mut records: Vec<_> = self
                    .offsets
                    .keys()
                    .map(|tp| offset_record(&group_id, tp, None))
                    .collect();
                records.push(group_record(&group_id, None));
                let append = self.append(records, now);
                Box::pin(
                    append
                        .into_actor(self)
                        .map(|result, actor, ctx| match result {
                            Ok(()) => {
                                actor.offsets.clear();
                                ctx.stop();
                                GroupReply::Code(0)
                            }
                            Err(code) => GroupReply::Code(code),
                        }),
                )
            }
            GroupCommand::DeleteOffsets { partitions } => {
                let subscribed = self.group.subscribed_topics();
                let group_id = self.group.group_id().to_string();
                let mut codes = Vec::new();
                let mut deletable = Vec::new();
                let active = self.group.state() != GroupState::Empty;
                let consumer = self.group.protocol_type().is_none_or(|p| p == "consumer");
                for tp in partitions {
                    if active && !consumer {
                        // Kafka can only tell what a "consumer" group reads.
                        codes.push((tp, None, ResponseError::NonEmptyGroup.code()));
                    } else if active && subscribed.contains(&tp.topic) {
                        codes.push((tp, None, ResponseError::GroupSubscribedToTopic.code()));
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
                    codes.extend(deletable.into_iter().map(|tp| (tp, None, 0)));
                    return ready(GroupReply::Offsets(codes));
                }
                let append = self.append(records, now);
                Box::pin(append.into_actor(self).map(move |result, actor, _| {
                    for tp in deletable {
                        match result {
                            Ok(()) => {
                                actor.offsets.remove(&tp);
                                codes.push((tp, None, 0));
                            }
                            Err(code) => codes.push((tp, None, code)),
                        }
                    }
                    GroupReply::Offsets(codes)
                }))
            }
        }
    }
}
