//! Reads: a consumer's (never above the high watermark, or a follower's
//! own under KIP-392) and a follower's replica fetch (up to the log end,
//! counted once the read succeeded).

use super::*;

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
    type Result = Result<PartitionRead, PartitionError>;
}

impl Handler<ReadRecords> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<PartitionRead, PartitionError>>;

    fn handle(&mut self, msg: ReadRecords, ctx: &mut Context<Self>) -> Self::Result {
        let serves = match &self.role {
            Role::Follower { leader_epoch, .. } if msg.follower_may_serve => {
                match self.offline_error() {
                    Some(e) => Err(e.into()),
                    None => ReplicationError::check_epoch(msg.current_leader_epoch, *leader_epoch)
                        .map_err(PartitionError::from),
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
    pub(super) fn read(
        &mut self,
        offset: i64,
        max_bytes: u64,
        committed_only: bool,
    ) -> ResponseActFuture<Self, Result<PartitionRead, PartitionError>> {
        let shard = self.shard.clone();
        let tp = self.tp.clone();
        Box::pin(
            fut::wrap_future::<_, Self>(async {})
                .then(move |(), actor: &mut Self, _ctx| {
                    // After a reopen the state is fresh only now.
                    let state = actor.state;
                    let read = log_manager::Read {
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
    /// The follower's own log start offset (-1: not said).
    pub log_start_offset: i64,
}

impl Message for ReplicaFetch {
    type Result = Result<PartitionRead, PartitionError>;
}

impl Handler<ReplicaFetch> for PartitionActor {
    type Result = ResponseActFuture<Self, Result<PartitionRead, PartitionError>>;

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
                // Kafka: with an epoch the pair (replica, epoch) is not
                // known yet (a reassignment in flight), and it retries.
                let refusal = if msg.current_leader_epoch >= 0 {
                    ReplicationError::UnknownLeaderEpoch {
                        requested: msg.current_leader_epoch,
                        current: leader.leader_epoch,
                    }
                } else {
                    ReplicationError::NotLeaderOrFollower
                };
                return Box::pin(fut::ready(Err(refusal.into())));
            }
        }
        let log_end_offset = self.state.log_end_offset;
        if !LeaderState::fetch_offset_valid(msg.offset, self.state.log_start_offset, log_end_offset)
        {
            // Never counted: a follower whose log runs past this leader's
            // truncates to its end, then fetches again.
            return Box::pin(fut::ready(Err(PartitionError::from(
                crate::storage::LogError::OffsetOutOfRange {
                    offset: msg.offset,
                    log_start_offset: self.state.log_start_offset,
                    log_end_offset,
                },
            ))));
        }
        self.ensure_log_online(ctx);
        let (replica_id, offset, log_start) = (msg.replica_id, msg.offset, msg.log_start_offset);
        // The follower's position counts only once the read succeeded, as
        // in Kafka (a log start moved by retention fails the read).
        Box::pin(
            self.read(msg.offset, msg.max_bytes, false)
                .map(move |result, actor, ctx| {
                    let read = result?;
                    actor.record_replica_fetch(replica_id, offset, ctx);
                    actor.record_replica_log_start(replica_id, log_start, ctx);
                    Ok(read)
                }),
        )
    }
}

impl PartitionActor {
    /// As leader: a follower fetched from `offset`, inside the log. Its
    /// position may grow the ISR and move the high watermark.
    pub(super) fn record_replica_fetch(
        &mut self,
        replica_id: i32,
        offset: i64,
        ctx: &mut Context<Self>,
    ) {
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

    /// As leader: a follower's fetch said where its log starts; a
    /// DeleteRecords waiting for it may be answered.
    pub(super) fn record_replica_log_start(
        &mut self,
        replica_id: i32,
        log_start_offset: i64,
        _ctx: &mut Context<Self>,
    ) {
        if let Role::Leader(leader) = &mut self.role {
            leader.record_log_start(replica_id, log_start_offset);
        }
        self.complete_delayed_deletes();
    }
}
