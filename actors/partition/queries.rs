//! Offsets, state and admin requests: ListOffsets' view, DeleteRecords,
//! config changes and stopping.

use super::*;

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
/// the client's `current_leader_epoch` (-1: unchecked). A consumer's latest
/// offset (`consumer_latest`) is refused OFFSET_NOT_AVAILABLE while a new
/// leader's high watermark is below the start of its epoch (KIP-207): it
/// would answer an offset older than what it may have acknowledged. The
/// earliest offset, and a replica's latest, are always answered.
#[derive(Debug)]
pub struct LeaderOffsets {
    pub current_leader_epoch: i32,
    pub consumer_latest: bool,
}

impl Message for LeaderOffsets {
    type Result = Result<PartitionState, PartitionError>;
}

impl Handler<LeaderOffsets> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<PartitionState, PartitionError>>;

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
        let consumer_latest = msg.consumer_latest;
        Box::pin(offsets.into_actor(self).map(move |offsets, actor, _ctx| {
            actor.observe(&offsets);
            actor.note_log_start(offsets?.log_start_offset);
            if let Role::Leader(leader) = &actor.role {
                if consumer_latest && leader.epoch_start_offset > actor.state.high_watermark {
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
    /// Whether this replica leads.
    pub leads: bool,
    pub leader: i32,
    pub leader_epoch: i32,
    /// As leader, the ISR in force; as follower, empty.
    pub isr: Vec<i32>,
    pub offsets: PartitionState,
    /// acks=all produces waiting in the purgatory.
    pub waiting_produces: usize,
}

impl Message for GetReplicaState {
    type Result = ReplicaState;
}

impl Handler<GetReplicaState> for PartitionActor {
    type Result = MessageResult<GetReplicaState>;

    fn handle(&mut self, _msg: GetReplicaState, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(match &self.role {
            Role::Leader(leader) => ReplicaState {
                leads: true,
                leader: self.replica.broker_id,
                leader_epoch: leader.leader_epoch,
                isr: leader.isr.iter().copied().collect(),
                offsets: self.state,
                waiting_produces: self.purgatory.len(),
            },
            Role::Follower {
                leader,
                leader_epoch,
            } => ReplicaState {
                leads: false,
                leader: *leader,
                leader_epoch: *leader_epoch,
                isr: Vec::new(),
                offsets: self.state,
                waiting_produces: self.purgatory.len(),
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
    type Result = Result<Option<(i64, i64)>, PartitionError>;
}

impl Handler<OffsetForTimestamp> for PartitionActor {
    type Result = ResponseFuture<Result<Option<(i64, i64)>, PartitionError>>;

    fn handle(&mut self, msg: OffsetForTimestamp, _ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.check_leader(-1) {
            return Box::pin(async move { Err(e) });
        }
        let high_watermark = self.state.high_watermark;
        let shard = self.shard.clone();
        let lookup = log_manager::OffsetForTimestamp {
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
/// Answered with the low watermark once every live replica has dropped the
/// records (Kafka's DelayedDeleteRecords), or REQUEST_TIMED_OUT after
/// `timeout_ms`.
#[derive(Debug)]
pub struct DeleteRecordsBefore {
    pub offset: i64,
    pub timeout_ms: i64,
}

impl Message for DeleteRecordsBefore {
    type Result = Result<i64, PartitionError>;
}

impl Handler<DeleteRecordsBefore> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<i64, PartitionError>>;

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
        let timeout_ms = msg.timeout_ms.max(0);
        Box::pin(
            async move {
                if offset > high_watermark || offset < 0 {
                    return Err(PartitionError::from(
                        crate::storage::LogError::OffsetOutOfRange {
                            offset,
                            log_start_offset: 0,
                            log_end_offset: high_watermark,
                        },
                    ));
                }
                Ok(shard
                    .send(log_manager::DeleteRecordsBefore { tp, offset })
                    .await?)
            }
            .into_actor(self)
            .then(move |result, actor, ctx| {
                let waited = result.map(|start| {
                    actor.note_log_start(start);
                    actor.wait_for_low_watermark(offset, timeout_ms, ctx)
                });
                async move {
                    match waited {
                        Ok(reply) => reply
                            .await
                            .unwrap_or(Err(ReplicationError::NotLeaderOrFollower.into())),
                        Err(e) => Err(e),
                    }
                }
                .into_actor(actor)
            }),
        )
    }
}

impl PartitionActor {
    /// The low watermark as leader: the smallest log start over this log
    /// and every follower on a live broker.
    fn low_watermark(&self) -> Option<i64> {
        let Role::Leader(leader) = &self.role else {
            return None;
        };
        let live = self.replica.live_brokers.as_ref();
        Some(leader.low_watermark(self.state.log_start_offset, |id| {
            live.is_none_or(|cache| cache.read(|m| m.brokers.contains_key(&id)))
        }))
    }

    /// Parks a DeleteRecords until the low watermark reaches `offset`, with
    /// a timer for its deadline; the receiver gets the answer.
    fn wait_for_low_watermark(
        &mut self,
        offset: i64,
        timeout_ms: i64,
        ctx: &mut Context<Self>,
    ) -> oneshot::Receiver<Result<i64, PartitionError>> {
        let (reply, answer) = oneshot::channel();
        let now = self.now_ms();
        self.delayed_deletes.park(offset, now + timeout_ms, reply);
        self.complete_delayed_deletes();
        if !self.delayed_deletes.is_empty() {
            ctx.run_later(
                std::time::Duration::from_millis(timeout_ms as u64),
                |actor, _ctx| actor.complete_delayed_deletes(),
            );
        }
        answer
    }

    /// Answers the DeleteRecords the low watermark now covers, and those
    /// past their deadline.
    pub(super) fn complete_delayed_deletes(&mut self) {
        if self.delayed_deletes.is_empty() {
            return;
        }
        let Some(low_watermark) = self.low_watermark() else {
            return;
        };
        let now = self.now_ms();
        for (reply, answer) in self.delayed_deletes.complete(low_watermark, now) {
            let _ = reply.send(answer.map_err(PartitionError::from));
        }
    }
}

/// A topic config change reached this partition: the log's part goes to
/// the shard, `min.insync.replicas` stays with the partition.
#[derive(Debug)]
pub struct UpdateConfig {
    pub config: TopicConfig,
}

impl Message for UpdateConfig {
    type Result = Result<(), PartitionError>;
}

impl Handler<UpdateConfig> for PartitionActor {
    type Result = ResponseFuture<Result<(), PartitionError>>;

    fn handle(&mut self, msg: UpdateConfig, _ctx: &mut Context<Self>) -> Self::Result {
        self.min_insync_replicas = msg.config.min_insync_replicas;
        let shard = self.shard.clone();
        let update = log_manager::UpdateLogConfig {
            tp: self.tp.clone(),
            config: msg.config.log,
        };
        Box::pin(async move { Ok(shard.send(update).await?) })
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
