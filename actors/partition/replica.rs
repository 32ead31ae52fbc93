//! The replica's role and its log as a follower: the controller's
//! assignment, what the fetcher copies, truncation, and the epoch end
//! offsets truncation asks for.

use super::*;

/// Take up a new assignment from the controller. Refused when its leader
/// epoch is older than the one in force (a stale controller's).
#[derive(Debug)]
pub struct ApplyAssignment(pub PartitionAssignment);

impl Message for ApplyAssignment {
    type Result = Result<LogOffsets, PartitionError>;
}

impl Handler<ApplyAssignment> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, PartitionError>>;

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
        Box::pin(Self::from_shard(offsets).into_actor(self))
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
    type Result = Result<LogOffsets, PartitionError>;
}

impl Handler<AppendAsFollower> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, PartitionError>>;

    fn handle(&mut self, msg: AppendAsFollower, ctx: &mut Context<Self>) -> Self::Result {
        if let Some(e) = self.offline_error() {
            return Box::pin(fut::ready(Err(e.into())));
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
            log_manager::AppendAsFollower {
                tp: self.tp.clone(),
                records: msg.records,
                high_watermark: msg.leader_high_watermark,
                leader_log_start_offset: msg.leader_log_start_offset,
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
    /// The leader epoch the fetcher decided the cut in: refused unless this
    /// replica still follows in it (a newer assignment may have come in
    /// while the fetcher asked the leader).
    pub leader_epoch: i32,
}

impl Message for TruncateReplica {
    type Result = Result<LogOffsets, PartitionError>;
}

impl Handler<TruncateReplica> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, PartitionError>>;

    fn handle(&mut self, msg: TruncateReplica, ctx: &mut Context<Self>) -> Self::Result {
        match self.role {
            Role::Follower { leader_epoch, .. } if leader_epoch == msg.leader_epoch => {}
            Role::Follower { leader_epoch, .. } => {
                return Box::pin(fut::ready(Err(ReplicationError::check_epoch(
                    msg.leader_epoch,
                    leader_epoch,
                )
                .err()
                .unwrap_or(ReplicationError::NotLeaderOrFollower)
                .into())));
            }
            Role::Leader(_) => {
                return Box::pin(fut::ready(
                    Err(ReplicationError::NotLeaderOrFollower.into()),
                ))
            }
        }
        let tp = self.tp.clone();
        let reply: ShardReply<LogOffsets> = if msg.start_over {
            self.dispatch(
                log_manager::TruncateFully {
                    tp,
                    offset: msg.offset,
                },
                ctx,
            )
        } else {
            self.dispatch(
                log_manager::Truncate {
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
    type Result = Result<crate::storage::EpochEndOffset, PartitionError>;
}

impl Handler<EndOffsetForLeaderEpoch> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<crate::storage::EpochEndOffset, PartitionError>>;

    fn handle(&mut self, msg: EndOffsetForLeaderEpoch, ctx: &mut Context<Self>) -> Self::Result {
        if msg.as_leader {
            if let Err(e) = self.check_leader(msg.current_leader_epoch) {
                return Box::pin(fut::ready(Err(e)));
            }
        }
        let reply = self.dispatch(
            log_manager::EndOffsetForEpoch {
                tp: self.tp.clone(),
                epoch: msg.leader_epoch,
            },
            ctx,
        );
        Box::pin(Self::from_shard(reply).into_actor(self))
    }
}

/// The log's own offsets and latest leader epoch, asked of the shard in
/// order with this partition's other requests (a follower's fetcher).
#[derive(Debug)]
pub struct LocalLogOffsets;

impl Message for LocalLogOffsets {
    type Result = Result<LogOffsets, PartitionError>;
}

impl Handler<LocalLogOffsets> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<LogOffsets, PartitionError>>;

    fn handle(&mut self, _msg: LocalLogOffsets, ctx: &mut Context<Self>) -> Self::Result {
        let reply = self.dispatch(
            GetLogOffsets {
                tp: self.tp.clone(),
            },
            ctx,
        );
        Box::pin(Self::from_shard(reply).into_actor(self))
    }
}
