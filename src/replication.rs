//! What a partition leader knows of its replicas (Kafka's `Partition` and
//! `Replica` bookkeeping), as plain data: each follower's log end offset and
//! when it was last caught up, the in-sync replica set, the high watermark
//! rule (the smallest log end offset in the ISR), and when the ISR should
//! shrink or grow.
//!
//! It decides; it never acts. The partition actor applies its answers:
//! writes an ISR change to the metadata store, completes acks=all produces.
//! No clock is read here: time comes in as `now_ms`.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;

/// Why a partition replica refused a request, each one of Kafka's errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicationError {
    #[error("this broker does not lead the partition")]
    NotLeaderOrFollower,
    #[error("the ISR has {isr} replica(s), min.insync.replicas is {min}")]
    NotEnoughReplicas { isr: usize, min: usize },
    #[error("written, but the ISR shrank below min.insync.replicas before it was replicated")]
    NotEnoughReplicasAfterAppend,
    #[error("the in-sync replicas did not confirm in time")]
    RequestTimedOut,
    #[error("leader epoch {requested} is older than the current {current}")]
    FencedLeaderEpoch { requested: i32, current: i32 },
    #[error("leader epoch {requested} is newer than the current {current}")]
    UnknownLeaderEpoch { requested: i32, current: i32 },
    #[error(
        "a new leader's high watermark {high_watermark} is below its epoch's start \
         {epoch_start_offset}"
    )]
    OffsetNotAvailable {
        high_watermark: i64,
        epoch_start_offset: i64,
    },
}

impl ReplicationError {
    pub fn code(&self) -> i16 {
        match self {
            ReplicationError::NotLeaderOrFollower => ResponseError::NotLeaderOrFollower.code(),
            ReplicationError::NotEnoughReplicas { .. } => ResponseError::NotEnoughReplicas.code(),
            ReplicationError::NotEnoughReplicasAfterAppend => {
                ResponseError::NotEnoughReplicasAfterAppend.code()
            }
            ReplicationError::RequestTimedOut => ResponseError::RequestTimedOut.code(),
            ReplicationError::FencedLeaderEpoch { .. } => ResponseError::FencedLeaderEpoch.code(),
            ReplicationError::UnknownLeaderEpoch { .. } => ResponseError::UnknownLeaderEpoch.code(),
            ReplicationError::OffsetNotAvailable { .. } => ResponseError::OffsetNotAvailable.code(),
        }
    }

    /// Kafka's check of a request's `current_leader_epoch` (-1: none).
    pub fn check_epoch(requested: i32, current: i32) -> Result<(), ReplicationError> {
        if requested < 0 || requested == current {
            Ok(())
        } else if requested < current {
            Err(ReplicationError::FencedLeaderEpoch { requested, current })
        } else {
            Err(ReplicationError::UnknownLeaderEpoch { requested, current })
        }
    }
}

/// One follower as its leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// The offset it asked for last: everything below is on its log.
    pub log_end_offset: i64,
    /// The last time its log reached the leader's log end offset (or the
    /// leader's log end offset at its previous fetch), Kafka's
    /// `lastCaughtUpTimeMs`.
    pub last_caught_up_ms: i64,
    last_fetch_leader_log_end_offset: i64,
    last_fetch_ms: i64,
    /// The log start offset its last fetch reported (-1: not heard from in
    /// this leadership, Kafka's `UnknownOffset`): DeleteRecords waits for
    /// it (the low watermark).
    pub log_start_offset: i64,
}

/// A leader's view of its partition's replicas in one leader epoch.
#[derive(Debug, Clone)]
pub struct LeaderState {
    pub broker_id: i32,
    pub leader_epoch: i32,
    /// The ISR as the metadata store holds it.
    pub isr: BTreeSet<i32>,
    /// An ISR change written but not yet confirmed: until it is, the high
    /// watermark counts the larger of both sets (KIP-497's maximal ISR), so
    /// it never moves on the strength of a replica the store does not yet
    /// call in sync, nor forgets one it still does.
    pub pending_isr: Option<BTreeSet<i32>>,
    /// The partition state znode's version, for conditional ISR writes.
    pub zk_version: i32,
    /// The log end offset when this epoch began: a follower joins the ISR
    /// only once it has everything from earlier epochs.
    pub epoch_start_offset: i64,
    followers: BTreeMap<i32, FollowerState>,
}

impl LeaderState {
    pub fn new(
        broker_id: i32,
        leader_epoch: i32,
        isr: &[i32],
        replicas: &[i32],
        zk_version: i32,
        epoch_start_offset: i64,
        now_ms: i64,
    ) -> LeaderState {
        let mut isr: BTreeSet<i32> = isr.iter().copied().collect();
        // A leader is always in its own ISR.
        isr.insert(broker_id);
        let followers = replicas
            .iter()
            .filter(|&&id| id != broker_id)
            .map(|&id| {
                // Followers in the ISR start as caught up now (Kafka resets
                // them on becoming leader), so they get a full lag period.
                let caught_up = if isr.contains(&id) { now_ms } else { 0 };
                (
                    id,
                    FollowerState {
                        log_end_offset: -1,
                        last_caught_up_ms: caught_up,
                        last_fetch_leader_log_end_offset: -1,
                        last_fetch_ms: caught_up,
                        log_start_offset: -1,
                    },
                )
            })
            .collect();
        LeaderState {
            broker_id,
            leader_epoch,
            isr,
            pending_isr: None,
            zk_version,
            epoch_start_offset,
            followers,
        }
    }

    #[cfg(test)]
    pub fn follower(&self, id: i32) -> Option<&FollowerState> {
        self.followers.get(&id)
    }

    /// The partition's replicas, the leader included.
    pub fn replica_count(&self) -> usize {
        self.followers.len() + 1
    }

    pub fn is_replica(&self, id: i32) -> bool {
        self.followers.contains_key(&id)
    }

    /// The set the high watermark and acks=all wait for.
    pub fn maximal_isr(&self) -> BTreeSet<i32> {
        match &self.pending_isr {
            Some(pending) => self.isr.union(pending).copied().collect(),
            None => self.isr.clone(),
        }
    }

    /// A follower's fetch reported its log start offset (Fetch's
    /// `log_start_offset`; -1 from a follower that does not say).
    pub fn record_log_start(&mut self, follower: i32, log_start_offset: i64) {
        if let Some(state) = self.followers.get_mut(&follower) {
            state.log_start_offset = log_start_offset;
        }
    }

    /// Kafka's `lowWatermarkIfLeader`: the smallest log start offset over
    /// the leader and every follower on a live broker (`is_live`). A live
    /// follower not heard from in this leadership holds it at -1, so a
    /// DeleteRecords waits until every live replica has dropped the records.
    pub fn low_watermark(&self, leader_log_start_offset: i64, is_live: impl Fn(i32) -> bool) -> i64 {
        self.followers
            .iter()
            .filter(|(id, _)| is_live(**id))
            .map(|(_, f)| f.log_start_offset)
            .fold(leader_log_start_offset, i64::min)
    }

    /// Kafka's high watermark: the smallest log end offset over the
    /// (maximal) ISR, the leader's own included. A follower not heard
    /// from yet holds it at its last known position, never above. A
    /// follower outside the ISR that is caught up (at the leader's log end,
    /// or caught up within `lag_time_max_ms`) holds it too, as Kafka 3.x's
    /// `maybeIncrementLeaderHW` does: otherwise, under steady writes to an
    /// ISR of one, the high watermark runs with the log end and the
    /// follower never reaches it to join.
    pub fn high_watermark(
        &self,
        leader_log_end_offset: i64,
        now_ms: i64,
        lag_time_max_ms: i64,
    ) -> i64 {
        let maximal = self.maximal_isr();
        let in_sync = maximal
            .iter()
            .map(|id| {
                if *id == self.broker_id {
                    leader_log_end_offset
                } else {
                    self.followers
                        .get(id)
                        .map_or(leader_log_end_offset, |f| f.log_end_offset.max(0))
                }
            })
            .min()
            .unwrap_or(leader_log_end_offset);
        self.followers
            .iter()
            .filter(|(id, _)| !maximal.contains(id))
            .filter(|(_, f)| {
                f.log_end_offset >= 0
                    && (f.log_end_offset == leader_log_end_offset
                        || now_ms - f.last_caught_up_ms <= lag_time_max_ms)
            })
            .map(|(_, f)| f.log_end_offset)
            .fold(in_sync, i64::min)
    }

    /// A follower fetched from `fetch_offset`. Returns the ISR to write if
    /// it should join now (caught up to the high watermark and past this
    /// epoch's start), else `None`.
    pub fn record_fetch(
        &mut self,
        follower: i32,
        fetch_offset: i64,
        leader_log_end_offset: i64,
        high_watermark: i64,
        now_ms: i64,
    ) -> Option<BTreeSet<i32>> {
        let state = self.followers.get_mut(&follower)?;
        if fetch_offset >= leader_log_end_offset {
            state.last_caught_up_ms = state.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= state.last_fetch_leader_log_end_offset {
            state.last_caught_up_ms = state.last_caught_up_ms.max(state.last_fetch_ms);
        }
        state.log_end_offset = fetch_offset;
        state.last_fetch_leader_log_end_offset = leader_log_end_offset;
        state.last_fetch_ms = now_ms;
        let joins = !self.maximal_isr().contains(&follower)
            && self.pending_isr.is_none()
            && fetch_offset >= high_watermark
            && fetch_offset >= self.epoch_start_offset;
        joins.then(|| {
            let mut grown = self.isr.clone();
            grown.insert(follower);
            grown
        })
    }

    /// A LeaderAndIsr that names this broker leader again in the leader
    /// epoch it already leads (Kafka's `Partition.makeLeader` when the
    /// leader epoch is not new). The controller builds those from its
    /// cache, which learns of this leader's own ISR writes only later: a
    /// request whose partition state version (`zk_version`, LeaderAndIsr's
    /// partition epoch) is older than the one this leader wrote is skipped,
    /// so the leader never falls back to an ISR ZooKeeper no longer holds.
    /// A current or newer one is taken without resetting what the leader
    /// knows of its followers, as Kafka keeps replica state within an epoch.
    pub fn update_in_epoch(
        &mut self,
        isr: &[i32],
        replicas: &[i32],
        zk_version: i32,
        now_ms: i64,
    ) -> InEpochUpdate {
        if zk_version < self.zk_version {
            return InEpochUpdate::Stale {
                requested: zk_version,
                current: self.zk_version,
            };
        }
        // Replicas added keep no lag history; replicas removed are gone.
        self.followers
            .retain(|id, _| replicas.contains(id) && *id != self.broker_id);
        for &id in replicas {
            if id != self.broker_id {
                self.followers.entry(id).or_insert(FollowerState {
                    log_end_offset: -1,
                    last_caught_up_ms: now_ms,
                    last_fetch_leader_log_end_offset: -1,
                    last_fetch_ms: now_ms,
                    log_start_offset: -1,
                });
            }
        }
        if zk_version == self.zk_version {
            return InEpochUpdate::Current;
        }
        let mut isr: BTreeSet<i32> = isr.iter().copied().collect();
        isr.insert(self.broker_id);
        self.isr = isr;
        self.zk_version = zk_version;
        InEpochUpdate::Newer
    }

    /// The outcome of an ISR write this leader started (`written`, at
    /// `pending`'s ISR): the write is no longer pending, and a version
    /// newer than the one known makes its ISR the one in force. An older
    /// version (a LeaderAndIsr already brought a newer state) changes
    /// nothing. Returns whether the written ISR is now in force.
    pub fn complete_isr_write(&mut self, written: &BTreeSet<i32>, version: Option<i32>) -> bool {
        self.pending_isr = None;
        match version {
            Some(version) if version > self.zk_version => {
                self.isr = written.clone();
                self.zk_version = version;
                true
            }
            _ => false,
        }
    }

    /// Whether a follower's fetch at `fetch_offset` may count at all:
    /// Kafka updates a follower's state only after a read that succeeded,
    /// so an offset outside the leader's log (a follower whose log runs
    /// past the leader's after an unclean election) never counts as
    /// caught up.
    pub fn fetch_offset_valid(
        fetch_offset: i64,
        log_start_offset: i64,
        leader_log_end_offset: i64,
    ) -> bool {
        fetch_offset >= log_start_offset && fetch_offset <= leader_log_end_offset
    }

    /// The in-sync followers a consumer at `fetch_offset` could read from
    /// instead of this leader (KIP-392): those whose log reaches it.
    pub fn read_replicas(&self, fetch_offset: i64, now_ms: i64) -> Vec<ReadReplica> {
        self.isr
            .iter()
            .filter(|&&id| id != self.broker_id)
            .filter_map(|id| self.followers.get(id).map(|f| (*id, f)))
            .filter(|(_, f)| f.log_end_offset >= fetch_offset)
            .map(|(broker_id, f)| ReadReplica {
                broker_id,
                log_end_offset: f.log_end_offset,
                caught_up_ago_ms: now_ms.saturating_sub(f.last_caught_up_ms).max(0),
            })
            .collect()
    }

    /// Followers in the ISR that have not caught up for longer than
    /// `lag_time_max_ms`; the ISR to write without them, or `None`. The
    /// leader always stays.
    pub fn shrink(&self, now_ms: i64, lag_time_max_ms: i64) -> Option<BTreeSet<i32>> {
        if self.pending_isr.is_some() {
            return None;
        }
        let lagging: Vec<i32> = self
            .isr
            .iter()
            .copied()
            .filter(|&id| id != self.broker_id)
            .filter(|id| {
                self.followers
                    .get(id)
                    .is_some_and(|f| now_ms - f.last_caught_up_ms > lag_time_max_ms)
            })
            .collect();
        if lagging.is_empty() {
            return None;
        }
        Some(
            self.isr
                .iter()
                .copied()
                .filter(|id| !lagging.contains(id))
                .collect(),
        )
    }
}

/// What [`LeaderState::update_in_epoch`] made of a same-epoch LeaderAndIsr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InEpochUpdate {
    /// Older than the state this leader wrote: skipped.
    Stale { requested: i32, current: i32 },
    /// The state already in force (the replica set may have changed).
    Current,
    /// A newer state (the controller wrote the znode since): taken.
    Newer,
}

/// Whether a partition state read back after a refused conditional write
/// is that write itself: the first attempt landed but its reply was lost,
/// and the client's retry met the version it had just moved (Kafka 2.6's
/// `checkLeaderAndIsrZkData`). The znode's version is not compared: the
/// caller takes the one read.
pub fn is_own_write(read: &LeaderAndIsrView<'_>, written: &LeaderAndIsrView<'_>) -> bool {
    let sorted = |isr: &[i32]| {
        let mut isr = isr.to_vec();
        isr.sort_unstable();
        isr
    };
    read.leader == written.leader
        && read.leader_epoch == written.leader_epoch
        && read.controller_epoch == written.controller_epoch
        && sorted(read.isr) == sorted(written.isr)
}

/// The fields of a partition state that identify a write (borrowed, so
/// this module needs no metadata types).
#[derive(Debug, Clone, Copy)]
pub struct LeaderAndIsrView<'a> {
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: &'a [i32],
    pub controller_epoch: i32,
}

/// Kafka's DelayedProduce for one partition: the acks=all produces waiting
/// for the high watermark, in append order (so in order of
/// `required_offset`: a high watermark answers a prefix), bounded. `R` is
/// whatever answers a produce (the actor's reply channel); this type only
/// decides who is answered and how.
#[derive(Debug)]
pub struct DelayedProduces<R> {
    waiting: std::collections::VecDeque<DelayedProduce<R>>,
    capacity: usize,
}

/// One acks=all produce: answered once the high watermark reaches
/// `required_offset`, with an error if the ISR is then below
/// `min_insync_replicas`.
#[derive(Debug)]
pub struct DelayedProduce<R> {
    pub required_offset: i64,
    pub min_insync_replicas: usize,
    pub reply: R,
}

impl<R> DelayedProduces<R> {
    pub fn new(capacity: usize) -> Self {
        DelayedProduces {
            waiting: std::collections::VecDeque::new(),
            capacity,
        }
    }

    /// Parks `produce`; a full purgatory gives it back (Kafka answers it
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND: it is written, but not waited on).
    pub fn park(&mut self, produce: DelayedProduce<R>) -> Result<(), DelayedProduce<R>> {
        if self.waiting.len() >= self.capacity {
            return Err(produce);
        }
        self.waiting.push_back(produce);
        Ok(())
    }

    /// The produces the high watermark now covers, each with its answer:
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR (`isr_size`) is below
    /// its `min.insync.replicas`.
    pub fn complete(
        &mut self,
        high_watermark: i64,
        isr_size: usize,
    ) -> Vec<(R, Result<(), ReplicationError>)> {
        let mut done = Vec::new();
        while self
            .waiting
            .front()
            .is_some_and(|p| p.required_offset <= high_watermark)
        {
            let Some(p) = self.waiting.pop_front() else {
                break;
            };
            let answer = if isr_size < p.min_insync_replicas {
                Err(ReplicationError::NotEnoughReplicasAfterAppend)
            } else {
                Ok(())
            };
            done.push((p.reply, answer));
        }
        done
    }

    /// Every waiting produce (leadership went: each is answered
    /// NOT_LEADER_OR_FOLLOWER by the caller).
    pub fn drain(&mut self) -> impl Iterator<Item = R> + '_ {
        self.waiting.drain(..).map(|p| p.reply)
    }

    /// Keeps only the produces whose reply `keep` accepts (drops those
    /// whose requester gave up).
    pub fn retain(&mut self, keep: impl Fn(&R) -> bool) {
        self.waiting.retain(|p| keep(&p.reply));
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// How many produces wait (tests and admin read it).
    pub fn len(&self) -> usize {
        self.waiting.len()
    }
}

/// Kafka's DelayedDeleteRecords for one partition: DeleteRecords requests
/// waiting for the low watermark (every live replica's log start) to reach
/// their offset, each until its deadline (the request's `timeout_ms`).
#[derive(Debug)]
pub struct DelayedDeleteRecords<R> {
    waiting: Vec<DelayedDeleteRecord<R>>,
}

#[derive(Debug)]
struct DelayedDeleteRecord<R> {
    required_offset: i64,
    deadline_ms: i64,
    reply: R,
}

impl<R> Default for DelayedDeleteRecords<R> {
    fn default() -> Self {
        DelayedDeleteRecords {
            waiting: Vec::new(),
        }
    }
}

impl<R> DelayedDeleteRecords<R> {
    /// Waits until the low watermark reaches `required_offset`, at most
    /// until `deadline_ms`.
    pub fn park(&mut self, required_offset: i64, deadline_ms: i64, reply: R) {
        self.waiting.push(DelayedDeleteRecord {
            required_offset,
            deadline_ms,
            reply,
        });
    }

    /// The requests `low_watermark` satisfies (answered with it), and
    /// those past their deadline at `now_ms` (answered REQUEST_TIMED_OUT),
    /// in that order of precedence: one satisfied at its deadline succeeds.
    pub fn complete(
        &mut self,
        low_watermark: i64,
        now_ms: i64,
    ) -> Vec<(R, Result<i64, ReplicationError>)> {
        let mut done = Vec::new();
        let mut kept = Vec::with_capacity(self.waiting.len());
        for waiting in self.waiting.drain(..) {
            if waiting.required_offset <= low_watermark {
                done.push((waiting.reply, Ok(low_watermark)));
            } else if now_ms >= waiting.deadline_ms {
                done.push((waiting.reply, Err(ReplicationError::RequestTimedOut)));
            } else {
                kept.push(waiting);
            }
        }
        self.waiting = kept;
        done
    }

    /// Every waiting request (leadership went: each is answered
    /// NOT_LEADER_OR_FOLLOWER by the caller).
    pub fn drain(&mut self) -> impl Iterator<Item = R> + '_ {
        self.waiting.drain(..).map(|w| w.reply)
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// The produces waiting for a group flush (`flush.messages`): in append
/// order, so a flush's recovery point answers a prefix.
#[derive(Debug)]
pub struct DelayedFlushes<R> {
    waiting: std::collections::VecDeque<(i64, R)>,
}

impl<R> Default for DelayedFlushes<R> {
    fn default() -> Self {
        DelayedFlushes {
            waiting: std::collections::VecDeque::new(),
        }
    }
}

impl<R> DelayedFlushes<R> {
    /// Waits for everything below `required_offset` to be on disk.
    pub fn park(&mut self, required_offset: i64, reply: R) {
        self.waiting.push_back((required_offset, reply));
    }

    /// The produces a flush up to `recovery_point` answers.
    pub fn complete(&mut self, recovery_point: i64) -> Vec<R> {
        let mut done = Vec::new();
        while self
            .waiting
            .front()
            .is_some_and(|(required, _)| *required <= recovery_point)
        {
            if let Some((_, reply)) = self.waiting.pop_front() {
                done.push(reply);
            }
        }
        done
    }

    /// Every waiting produce (the flush failed).
    pub fn drain(&mut self) -> impl Iterator<Item = R> + '_ {
        self.waiting.drain(..).map(|(_, reply)| reply)
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// What one leadership has committed so far: running totals, so a
/// subscriber to `HighWatermarkAdvanced` that dropped events (a full
/// mailbox) still counts right from the next one it gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommittedTotals {
    /// The high watermark when this leadership began: the totals count
    /// from here (a new leadership, or a restarted actor, starts again).
    pub since_offset: i64,
    /// Records committed since `since_offset` (high watermark minus it).
    pub records: i64,
    /// Bytes of the batches this leader appended and then committed.
    /// Records it took over from an earlier leader count in `records`
    /// only: their sizes were never seen here.
    pub bytes: u64,
}

/// The leader's appends above the high watermark, as (end offset, bytes),
/// so that `HighWatermarkAdvanced` can say how many bytes became
/// committed. Bounded: past `capacity` entries (the high watermark frozen
/// under steady writes) a new append is folded into the last entry, which
/// keeps the byte count exact and only delays it to that entry's end.
#[derive(Debug)]
pub struct UncommittedAppends {
    appends: std::collections::VecDeque<(i64, u64)>,
    capacity: usize,
    totals: CommittedTotals,
}

impl UncommittedAppends {
    pub fn new(capacity: usize) -> Self {
        UncommittedAppends {
            appends: std::collections::VecDeque::new(),
            capacity: capacity.max(1),
            totals: CommittedTotals::default(),
        }
    }

    /// A leadership begins at `high_watermark`: nothing is uncommitted
    /// yet, and the totals count from there.
    pub fn begin_leadership(&mut self, high_watermark: i64) {
        self.appends.clear();
        self.totals = CommittedTotals {
            since_offset: high_watermark,
            records: 0,
            bytes: 0,
        };
    }

    /// An append ending at `end_offset` (exclusive) of `bytes`.
    pub fn push(&mut self, end_offset: i64, bytes: u64) {
        if self.appends.len() >= self.capacity {
            if let Some(last) = self.appends.back_mut() {
                last.0 = last.0.max(end_offset);
                last.1 += bytes;
                return;
            }
        }
        self.appends.push_back((end_offset, bytes));
    }

    /// The bytes of the appends the high watermark now covers; the totals
    /// move with them.
    pub fn commit(&mut self, high_watermark: i64) -> u64 {
        let mut bytes = 0;
        while let Some(&(end, size)) = self.appends.front() {
            if end > high_watermark {
                break;
            }
            bytes += size;
            self.appends.pop_front();
        }
        self.totals.records = (high_watermark - self.totals.since_offset).max(0);
        self.totals.bytes += bytes;
        bytes
    }

    /// The running totals of this leadership.
    pub fn totals(&self) -> CommittedTotals {
        self.totals
    }

    pub fn clear(&mut self) {
        self.appends.clear();
    }
}

/// A replica a consumer may read from, as its leader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadReplica {
    pub broker_id: i32,
    pub log_end_offset: i64,
    pub caught_up_ago_ms: i64,
}

/// Kafka's `RackAwareReplicaSelector`: for a consumer in `client_rack`,
/// the leader if it shares the rack (or nobody does), else the replica in
/// the rack with the most data, the most recently caught up first on a
/// tie. `None` means the leader.
pub fn preferred_read_replica(
    client_rack: &str,
    leader_rack: Option<&str>,
    followers: &[(ReadReplica, Option<String>)],
) -> Option<i32> {
    if client_rack.is_empty() || leader_rack == Some(client_rack) {
        return None;
    }
    followers
        .iter()
        .filter(|(_, rack)| rack.as_deref() == Some(client_rack))
        .map(|(replica, _)| replica)
        .max_by(|a, b| {
            a.log_end_offset
                .cmp(&b.log_end_offset)
                .then(b.caught_up_ago_ms.cmp(&a.caught_up_ago_ms))
        })
        .map(|replica| replica.broker_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leader(isr: &[i32]) -> LeaderState {
        LeaderState::new(1, 3, isr, &[1, 2, 3], 0, 0, 1_000)
    }

    #[test]
    fn high_watermark_is_the_smallest_isr_log_end_offset() {
        let mut l = leader(&[1, 2, 3]);
        // Nothing heard from the followers yet: nothing is committed.
        assert_eq!(l.high_watermark(10, 1_100, 0), 0);
        l.record_fetch(2, 10, 10, 0, 1_100);
        assert_eq!(l.high_watermark(10, 1_100, 0), 0);
        l.record_fetch(3, 7, 10, 0, 1_100);
        assert_eq!(l.high_watermark(10, 1_100, 0), 7);
        // Out of the ISR, a replica no longer holds it back.
        l.isr.remove(&3);
        assert_eq!(l.high_watermark(10, 1_100, 0), 10);
    }

    #[test]
    fn a_caught_up_follower_joins_once_past_the_epoch_start() {
        let mut l = LeaderState::new(1, 3, &[1], &[1, 2], 0, 50, 0);
        assert_eq!(l.record_fetch(2, 40, 60, 40, 10), None);
        assert_eq!(
            l.record_fetch(2, 55, 60, 50, 20),
            Some([1, 2].into_iter().collect())
        );
    }

    #[test]
    fn a_lagging_follower_leaves_but_the_leader_stays() {
        let mut l = leader(&[1, 2, 3]);
        l.record_fetch(2, 10, 10, 10, 1_000);
        l.record_fetch(3, 10, 10, 10, 1_000);
        l.record_fetch(2, 20, 20, 10, 5_000);
        // 3 reached what the leader had at its previous fetch: caught up
        // as of that fetch, not now.
        l.record_fetch(3, 12, 20, 10, 5_000);
        assert_eq!(l.follower(3).unwrap().last_caught_up_ms, 1_000);
        assert_eq!(l.shrink(10_500, 10_000), None);
        assert_eq!(l.shrink(11_500, 10_000), Some([1, 2].into_iter().collect()));
        assert_eq!(l.shrink(16_000, 10_000), Some([1].into_iter().collect()));
    }

    #[test]
    fn the_high_watermark_counts_a_pending_isr_change() {
        let mut l = leader(&[1, 2]);
        l.record_fetch(2, 10, 10, 0, 1_000);
        l.record_fetch(3, 4, 10, 0, 1_000);
        assert_eq!(l.high_watermark(10, 1_100, 0), 10);
        // 3 is being added: until confirmed, the HW waits for it too.
        l.pending_isr = Some([1, 2, 3].into_iter().collect());
        assert_eq!(l.high_watermark(10, 1_100, 0), 4);
    }

    #[test]
    fn a_caught_up_follower_outside_the_isr_holds_the_high_watermark_until_it_joins() {
        const T: i64 = 1_000_000;
        // An ISR of one under steady writes: the high watermark is the log
        // end, and the follower is always a little behind it.
        let mut l = LeaderState::new(1, 3, &[1], &[1, 2], 0, 0, T);
        assert_eq!(
            l.high_watermark(100, T, 10_000),
            100,
            "never fetched: not held"
        );
        assert_eq!(l.record_fetch(2, 90, 100, 100, T + 1_000), None);
        assert_eq!(l.record_fetch(2, 100, 110, 110, T + 1_100), None);
        // Caught up as of its previous fetch, within the lag: it holds the
        // high watermark at its position (the actor never lowers it, so it
        // stays at 110) ...
        assert_eq!(l.high_watermark(120, T + 1_200, 10_000), 100);
        // ... so its next fetch reaches it and it joins.
        assert_eq!(
            l.record_fetch(2, 110, 120, 110, T + 1_300),
            Some([1, 2].into_iter().collect())
        );
        // Lagging past the lag time, it no longer holds anything back.
        let mut l = LeaderState::new(1, 3, &[1], &[1, 2], 0, 0, T);
        l.record_fetch(2, 50, 100, 100, T + 1_000);
        assert_eq!(l.high_watermark(200, T + 20_000, 10_000), 200);
    }

    #[test]
    fn a_same_epoch_assignment_older_than_the_leaders_own_write_is_skipped() {
        let mut l = leader(&[1, 2, 3]);
        l.record_fetch(2, 10, 10, 0, 1_100);
        // The leader shrank the ISR itself: the znode is at version 1.
        let shrunk: BTreeSet<i32> = [1, 2].into_iter().collect();
        l.pending_isr = Some(shrunk.clone());
        assert!(l.complete_isr_write(&shrunk, Some(1)));
        // The controller's cache still says version 0, ISR [1, 2, 3].
        assert_eq!(
            l.update_in_epoch(&[1, 2, 3], &[1, 2, 3], 0, 2_000),
            InEpochUpdate::Stale {
                requested: 0,
                current: 1
            }
        );
        assert_eq!(l.isr, shrunk);
        assert_eq!(l.zk_version, 1);
        // The current version changes nothing, and keeps what the leader
        // knows of its followers.
        assert_eq!(
            l.update_in_epoch(&[1, 2], &[1, 2, 3], 1, 2_000),
            InEpochUpdate::Current
        );
        assert_eq!(l.follower(2).unwrap().log_end_offset, 10);
        // A newer one (the controller moved the state on) is taken.
        assert_eq!(
            l.update_in_epoch(&[1, 3], &[1, 2, 3], 2, 2_000),
            InEpochUpdate::Newer
        );
        assert_eq!(l.isr, [1, 3].into_iter().collect());
        assert_eq!(l.zk_version, 2);
        assert_eq!(l.follower(2).unwrap().log_end_offset, 10);
    }

    #[test]
    fn an_isr_write_answered_after_a_newer_state_changes_nothing() {
        let mut l = leader(&[1, 2, 3]);
        let written: BTreeSet<i32> = [1, 2].into_iter().collect();
        l.pending_isr = Some(written.clone());
        // A LeaderAndIsr at version 3 arrived while the write was out.
        assert_eq!(
            l.update_in_epoch(&[1, 3], &[1, 2, 3], 3, 2_000),
            InEpochUpdate::Newer
        );
        assert!(!l.complete_isr_write(&written, Some(1)));
        assert_eq!(l.isr, [1, 3].into_iter().collect());
        assert_eq!(l.pending_isr, None);
        // A write whose outcome is unknown leaves the ISR in force.
        l.pending_isr = Some(written.clone());
        assert!(!l.complete_isr_write(&written, None));
        assert_eq!(l.zk_version, 3);
    }

    #[test]
    fn only_a_fetch_inside_the_leaders_log_counts() {
        assert!(LeaderState::fetch_offset_valid(10, 0, 10));
        assert!(LeaderState::fetch_offset_valid(0, 0, 10));
        assert!(!LeaderState::fetch_offset_valid(11, 0, 10));
        assert!(!LeaderState::fetch_offset_valid(4, 5, 10));
    }

    #[test]
    fn a_read_back_state_is_the_own_write_whatever_the_isr_order() {
        let written = LeaderAndIsrView {
            leader: 1,
            leader_epoch: 4,
            isr: &[1, 2],
            controller_epoch: 7,
        };
        assert!(is_own_write(
            &LeaderAndIsrView {
                isr: &[2, 1],
                ..written
            },
            &written
        ));
        assert!(!is_own_write(
            &LeaderAndIsrView {
                isr: &[1, 2, 3],
                ..written
            },
            &written
        ));
        assert!(!is_own_write(
            &LeaderAndIsrView {
                leader_epoch: 5,
                ..written
            },
            &written
        ));
    }

    #[test]
    fn delayed_produces_are_answered_in_order_by_the_high_watermark() {
        let mut purgatory = DelayedProduces::new(3);
        for (offset, min) in [(5, 1), (10, 2), (15, 1)] {
            purgatory
                .park(DelayedProduce {
                    required_offset: offset,
                    min_insync_replicas: min,
                    reply: offset,
                })
                .unwrap();
        }
        let full = purgatory.park(DelayedProduce {
            required_offset: 20,
            min_insync_replicas: 1,
            reply: 20,
        });
        assert_eq!(full.map_err(|p| p.reply), Err(20));
        assert!(purgatory.complete(4, 2).is_empty());
        // The ISR shrank to one: the produce that needed two is answered
        // NOT_ENOUGH_REPLICAS_AFTER_APPEND, the other succeeds.
        assert_eq!(
            purgatory.complete(12, 1),
            vec![
                (5, Ok(())),
                (10, Err(ReplicationError::NotEnoughReplicasAfterAppend))
            ]
        );
        purgatory.retain(|reply| *reply != 15);
        assert!(purgatory.is_empty());
        purgatory
            .park(DelayedProduce {
                required_offset: 30,
                min_insync_replicas: 1,
                reply: 30,
            })
            .unwrap();
        assert_eq!(purgatory.drain().collect::<Vec<_>>(), vec![30]);
    }

    #[test]
    fn delayed_flushes_are_answered_by_the_recovery_point() {
        let mut flushes = DelayedFlushes::default();
        flushes.park(3, "a");
        flushes.park(7, "b");
        flushes.park(9, "c");
        assert_eq!(flushes.complete(7), vec!["a", "b"]);
        assert_eq!(flushes.drain().collect::<Vec<_>>(), vec!["c"]);
        assert!(flushes.is_empty());
    }

    #[test]
    fn uncommitted_appends_stay_bounded_and_count_every_byte() {
        let mut uncommitted = UncommittedAppends::new(2);
        uncommitted.push(10, 100);
        uncommitted.push(20, 100);
        // Full: folded into the last entry.
        uncommitted.push(30, 100);
        uncommitted.push(40, 100);
        assert_eq!(uncommitted.appends.len(), 2);
        assert_eq!(uncommitted.commit(15), 100);
        // The folded entry is counted once the high watermark passes its end.
        assert_eq!(uncommitted.commit(35), 0);
        assert_eq!(uncommitted.commit(40), 300);
        assert_eq!(uncommitted.commit(100), 0);
        assert_eq!(
            uncommitted.totals(),
            CommittedTotals {
                since_offset: 0,
                records: 100,
                bytes: 400
            }
        );
    }

    #[test]
    fn a_new_leadership_counts_its_totals_from_its_high_watermark() {
        let mut uncommitted = UncommittedAppends::new(8);
        uncommitted.push(10, 100);
        uncommitted.commit(10);
        // Follower, then leader again at 25: the 15 records another leader
        // wrote count in `records` only, as their sizes were never seen.
        uncommitted.begin_leadership(25);
        uncommitted.push(30, 50);
        assert_eq!(uncommitted.commit(30), 50);
        assert_eq!(
            uncommitted.totals(),
            CommittedTotals {
                since_offset: 25,
                records: 5,
                bytes: 50
            }
        );
    }

    #[test]
    fn rack_aware_selection_prefers_the_clients_rack() {
        let replica = |broker_id, log_end_offset, caught_up_ago_ms| ReadReplica {
            broker_id,
            log_end_offset,
            caught_up_ago_ms,
        };
        let followers = vec![
            (replica(2, 100, 0), Some("b".to_string())),
            (replica(3, 120, 50), Some("b".to_string())),
            (replica(4, 120, 10), Some("b".to_string())),
            (replica(5, 500, 0), Some("c".to_string())),
        ];
        // The most data in rack b, then the freshest.
        assert_eq!(preferred_read_replica("b", Some("a"), &followers), Some(4));
        // The leader's own rack, no rack, or a rack nobody is in: the leader.
        assert_eq!(preferred_read_replica("a", Some("a"), &followers), None);
        assert_eq!(preferred_read_replica("", Some("a"), &followers), None);
        assert_eq!(preferred_read_replica("z", Some("a"), &followers), None);
        // Only in-sync followers that reach the fetch offset are candidates.
        let mut leader = LeaderState::new(1, 3, &[1, 2], &[1, 2, 3], 0, 0, 1_000);
        leader.record_fetch(2, 50, 60, 50, 1_100);
        leader.record_fetch(3, 60, 60, 50, 1_100);
        let candidates = leader.read_replicas(55, 1_200);
        assert!(candidates.is_empty(), "{candidates:?}");
        assert_eq!(leader.read_replicas(40, 1_200), vec![replica(2, 50, 200)]);
    }

    #[test]
    fn the_low_watermark_waits_for_every_live_replica() {
        let mut l = leader(&[1, 2, 3]);
        // Not heard from since this leadership began: unknown, holds it.
        assert_eq!(l.low_watermark(40, |_| true), -1);
        l.record_log_start(2, 40);
        l.record_log_start(3, 10);
        assert_eq!(l.low_watermark(40, |_| true), 10);
        // A replica on a broker that is gone does not hold it (Kafka's
        // `metadataCache.hasAliveBroker`).
        assert_eq!(l.low_watermark(40, |id| id != 3), 40);
        l.record_log_start(3, 40);
        assert_eq!(l.low_watermark(40, |_| true), 40);
        // Not a replica: ignored.
        l.record_log_start(9, 0);
        assert_eq!(l.low_watermark(40, |_| true), 40);
    }

    #[test]
    fn delete_records_wait_for_the_low_watermark_or_their_deadline() {
        let mut delayed = DelayedDeleteRecords::default();
        delayed.park(40, 1_000, "a");
        delayed.park(60, 2_000, "b");
        assert!(delayed.complete(10, 500).is_empty());
        assert_eq!(delayed.complete(45, 900), vec![("a", Ok(45))]);
        // Satisfied exactly at its deadline: success wins.
        assert_eq!(delayed.complete(60, 2_000), vec![("b", Ok(60))]);
        assert!(delayed.is_empty());
        delayed.park(80, 3_000, "c");
        assert_eq!(
            delayed.complete(70, 3_000),
            vec![("c", Err(ReplicationError::RequestTimedOut))]
        );
        delayed.park(90, 4_000, "d");
        assert_eq!(delayed.drain().collect::<Vec<_>>(), vec!["d"]);
        assert!(delayed.is_empty());
    }
}
