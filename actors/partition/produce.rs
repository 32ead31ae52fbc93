//! Produce as leader: append, then answer per `acks` (the leader's log;
//! or every ISR member, through the purgatory), after a group flush when
//! the topic's flush policy asks for one.

use super::*;

/// How many replicas must have a produce before it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// acks=0 or 1: the leader's log.
    Leader,
    /// acks=all: every ISR member, with at least the partition's
    /// `min.insync.replicas` in the ISR, within `timeout`.
    All { timeout: Duration },
}

/// A partition's append, answered (the produce response's offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Produced {
    pub info: AppendInfo,
    /// The partition's log start offset after the append.
    pub log_start_offset: i64,
}

/// Append a producer's records as leader.
#[derive(Debug)]
pub struct AppendRecords {
    pub records: Bytes,
    pub acks: Acks,
    /// The leader epoch the appender believes in (-1: unchecked, as every
    /// Produce): an extension that learned the log's end in one epoch
    /// appends only while it holds (FENCED_LEADER_EPOCH after a move).
    pub current_leader_epoch: i32,
}

impl Message for AppendRecords {
    type Result = Result<Produced, PartitionError>;
}

impl Handler<AppendRecords> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<Produced, PartitionError>>;

    fn handle(&mut self, msg: AppendRecords, ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.check_leader(msg.current_leader_epoch) {
            return Box::pin(fut::ready(Err(e)));
        }
        let acks = msg.acks;
        let min_insync_replicas = self.effective_min_insync_replicas();
        if let (Acks::All { .. }, Role::Leader(leader)) = (acks, &self.role) {
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
        let term_at_append = self.leadership_term;
        let append = self.dispatch(
            log_manager::AppendDeferringFlush {
                tp: self.tp.clone(),
                records: msg.records,
                leader_epoch: self.leader_epoch(),
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
                        actor.flush_waiters.park(info.last_offset + 1, reply);
                        actor.request_group_flush(ctx);
                        flushed
                    });
                    info.flush_due = false;
                    actor.uncommitted.push(info.log_end_offset, bytes);
                    actor.set_log_end_offset(info.log_end_offset.max(actor.state.log_end_offset));
                    actor.maybe_advance_high_watermark();
                    let log_start = actor.state.log_start_offset;
                    let Acks::All { timeout } = acks else {
                        return Ok((info, log_start, flushed, None));
                    };
                    let (reply, confirmed) = oneshot::channel();
                    let pending = DelayedProduce {
                        required_offset: info.last_offset + 1,
                        min_insync_replicas,
                        reply,
                    };
                    match actor.purgatory.park(pending) {
                        Err(full) => {
                            let _ = full
                                .reply
                                .send(Err(ReplicationError::NotEnoughReplicasAfterAppend));
                        }
                        // Already committed (an ISR of one): answered now.
                        Ok(()) => actor.maybe_advance_high_watermark(),
                    }
                    Ok((info, log_start, flushed, Some((confirmed, timeout))))
                })
                .then(|result: Result<_, PartitionError>, _actor, _ctx| {
                    fut::wrap_future(async move {
                        let (info, log_start, flushed, wait) = result?;
                        if let Some(flushed) = flushed {
                            flushed.await.map_err(|_| PartitionError::Stopped)??;
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
                        Ok(Produced {
                            info,
                            log_start_offset: log_start,
                        })
                    })
                }),
        )
    }
}

impl PartitionActor {
    /// The `min.insync.replicas` an acks=all write needs: the topic's
    /// override, else the broker's (dynamic) default, and, as Kafka 3.9's
    /// effective minimum, never more than the replicas there are, or a
    /// topic with RF below it could never take an acks=all write.
    pub(super) fn effective_min_insync_replicas(&self) -> usize {
        let configured = self
            .min_insync_replicas
            .unwrap_or_else(|| self.replica.broker_config.current().min_insync_replicas)
            .max(1) as usize;
        match &self.role {
            Role::Leader(leader) => configured.min(leader.replica_count()),
            Role::Follower { .. } => configured,
        }
    }
}
