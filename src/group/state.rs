//! Kafka's classic consumer-group protocol as a pure state machine: one
//! [`Group`] per group id is fed JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit checks and timer ticks, and answers with a result plus the
//! [`Effect`]s the caller must carry out, in order. It follows Kafka's
//! `GroupCoordinator` / `GroupMetadata` (classic protocol, 3.x) decision by
//! decision; where it departs, the comment says why.
//!
//! No actix, no I/O, no clock: time comes in as `now_ms`. The owning actor
//! parks the JoinGroup/SyncGroup requests the group answers later
//! ([`JoinOutcome::Wait`], [`SyncOutcome::Wait`]), persists the group's
//! [`GroupSnapshot`] when told ([`Effect::PersistGroup`]) and calls
//! [`Group::tick`] at [`Group::next_deadline`]. Kafka's purgatories become
//! plain deadlines here:
//!
//! - every member has a heartbeat deadline (session timeout; five minutes for
//!   a member whose first rebalance has not completed). Like Kafka, a member
//!   parked in JoinGroup or SyncGroup is not expired, except a new member;
//! - every pending member (one that got MEMBER_ID_REQUIRED) has one;
//! - a rebalancing group has a join deadline (Kafka's `DelayedJoin`, or
//!   `InitialDelayedJoin` when it started Empty);
//! - after a join completes, the group has a sync deadline by which every
//!   member must have sent SyncGroup (Kafka's `DelayedSync`).

use std::collections::BTreeSet;

use bytes::Bytes;
pub use super::error::GroupError;
use kafka_protocol::messages::ConsumerProtocolSubscription;
use kafka_protocol::protocol::Decodable;

/// Kafka's `GroupCoordinator.NewMemberJoinTimeoutMs`: a new member whose
/// first rebalance has not completed after this long is dropped (its parked
/// JoinGroup gets UNKNOWN_MEMBER_ID and it retries), so clients that gave up
/// on a long rebalance do not pile up as defunct members.
pub const NEW_MEMBER_JOIN_TIMEOUT_MS: i64 = 5 * 60 * 1000;

/// The protocol type of Kafka's consumers; only their metadata is decoded.
const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Bound on the events one `tick` handles; every event makes progress, so
/// this is a guard against a bug, never reached in practice.
const MAX_EVENTS_PER_TICK: usize = 100_000;

#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// group.initial.rebalance.delay.ms (3000)
    pub initial_rebalance_delay_ms: i64,
    /// group.min.session.timeout.ms (6000)
    pub min_session_timeout_ms: i64,
    /// group.max.session.timeout.ms (1800000)
    pub max_session_timeout_ms: i64,
    /// group.max.size
    pub max_size: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// Kafka's name for the state, as DescribeGroups and ListGroups show it.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

#[derive(Debug, Clone)]
pub struct JoinRequest {
    /// "" for a new member.
    pub member_id: String,
    /// Static membership (KIP-345).
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    /// JoinGroup v0 has none: the caller passes session_timeout_ms.
    pub rebalance_timeout_ms: i32,
    /// "consumer" for Kafka's consumers.
    pub protocol_type: String,
    /// (name, metadata) in the member's preference order.
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED
    /// with its id.
    pub require_known_member_id: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Bytes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JoinResult {
    pub error: Option<GroupError>,
    /// -1 on error.
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    /// Always false (KIP-814 not used).
    pub skip_assignment: bool,
    pub member_id: String,
    /// Only for the leader: every member with the metadata of the chosen
    /// protocol.
    pub members: Vec<JoinedMember>,
}

impl JoinResult {
    /// The response's error code (0: none).
    pub fn error_code(&self) -> i16 {
        self.error.map_or(0, GroupError::code)
    }

    /// Kafka's `JoinGroupResult(memberId, error)`: no generation, protocol
    /// or leader.
    pub fn error(member_id: &str, error: GroupError) -> JoinResult {
        JoinResult {
            error: Some(error),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub generation_id: i32,
    /// v5+: must match or INCONSISTENT_GROUP_PROTOCOL.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// Only the leader sends these.
    pub assignments: Vec<(String, Bytes)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SyncResult {
    pub error: Option<GroupError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResult {
    /// The response's error code (0: none).
    pub fn error_code(&self) -> i16 {
        self.error.map_or(0, GroupError::code)
    }

    /// Kafka's `SyncGroupResult(error)`: no protocol, empty assignment.
    pub fn error(error: GroupError) -> SyncResult {
        SyncResult {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// What the caller must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Answer the JoinGroup the caller parked under `member_id` (see
    /// [`JoinOutcome::Wait`]).
    JoinResponse {
        member_id: String,
        result: JoinResult,
    },
    /// Answer the SyncGroup the caller parked under `member_id`.
    SyncResponse {
        member_id: String,
        result: SyncResult,
    },
    /// Persist the group's metadata (GroupMetadataValue from
    /// [`Group::snapshot`], taken before the next call into the group);
    /// responses after it in the same Vec must only be sent once it is
    /// durable.
    PersistGroup,
}

/// How to treat a JoinGroup.
///
/// `Wait` means: park the request under `member_id` (replacing any request
/// already parked under that id: Kafka keeps only the latest), then carry out
/// the effects; an `Effect::JoinResponse` for that id, in these effects or a
/// later call's, answers it. These effects hold the answer only behind a
/// `PersistGroup` (a static member replacing itself in a Stable group): an
/// answer not held back by a persist is returned as `Respond` instead.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinOutcome {
    Respond(JoinResult),
    Wait { member_id: String },
}

/// How to treat a SyncGroup: as [`JoinOutcome`], with `Effect::SyncResponse`.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncOutcome {
    Respond(SyncResult),
    Wait { member_id: String },
}

/// One member as DescribeGroups shows it and as the metadata record stores
/// it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberSnapshot {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// Metadata of the chosen protocol (or of the first one when none is
    /// chosen or the member does not support it).
    pub subscription: Bytes,
    pub assignment: Bytes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupSnapshot {
    pub protocol_type: Option<String>,
    pub generation_id: i32,
    pub protocol_name: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp_ms: i64,
    pub members: Vec<MemberSnapshot>,
}

/// Kafka's `MemberMetadata`. The parked callbacks become two flags: the
/// caller holds the requests themselves.
#[derive(Debug, Clone)]
struct Member {
    member_id: String,
    group_instance_id: Option<String>,
    client_id: String,
    client_host: String,
    rebalance_timeout_ms: i32,
    session_timeout_ms: i32,
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    /// A JoinGroup of this member is parked.
    awaiting_join: bool,
    /// A SyncGroup of this member is parked.
    awaiting_sync: bool,
    /// Added since the last completed join: expires even while parked.
    is_new: bool,
    heartbeat_deadline_ms: i64,
}

impl Member {
    fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|(name, _)| name == protocol)
    }

    fn metadata(&self, protocol: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata)
    }

    /// Kafka's `MemberMetadata.matches`: same protocols, same order, same
    /// metadata.
    fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols.as_slice() == protocols
    }

    /// The metadata DescribeGroups and the metadata record show.
    fn subscription(&self, protocol_name: Option<&str>) -> Bytes {
        protocol_name
            .and_then(|p| self.metadata(p))
            .or_else(|| self.protocols.first().map(|(_, m)| m))
            .cloned()
            .unwrap_or_default()
    }

    fn snapshot(&self, protocol_name: Option<&str>) -> MemberSnapshot {
        MemberSnapshot {
            member_id: self.member_id.clone(),
            group_instance_id: self.group_instance_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            session_timeout_ms: self.session_timeout_ms,
            subscription: self.subscription(protocol_name),
            assignment: self.assignment.clone(),
        }
    }

    /// Kafka's `hasSatisfiedHeartbeat` negated at the deadline: a parked
    /// member is alive by definition, unless it has never completed a join.
    fn expires(&self) -> bool {
        self.is_new || !(self.awaiting_join || self.awaiting_sync)
    }
}

/// The rebalance deadline of a PreparingRebalance group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JoinTimer {
    /// Kafka's `DelayedJoin`: completes early once every member rejoined.
    Delayed { deadline_ms: i64 },
    /// Kafka's `InitialDelayedJoin` (the group was Empty): never completes
    /// early; at the deadline, if a new member joined meanwhile and time is
    /// left, waits another `min(delay, remaining)`.
    Initial {
        deadline_ms: i64,
        delay_ms: i64,
        remaining_ms: i64,
    },
}

impl JoinTimer {
    fn deadline_ms(self) -> i64 {
        match self {
            JoinTimer::Delayed { deadline_ms } | JoinTimer::Initial { deadline_ms, .. } => {
                deadline_ms
            }
        }
    }
}

/// What `tick` handles next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Due {
    Join,
    Sync,
    PendingMember(String),
    Member(String),
}

/// One consumer group (Kafka's `GroupMetadata` plus the coordinator logic
/// that drives it).
#[derive(Debug, Clone)]
pub struct Group {
    group_id: String,
    config: GroupConfig,
    state: GroupState,
    /// When the state last changed (Kafka's `currentStateTimestamp`); None
    /// until the first transition of a new group.
    state_timestamp_ms: Option<i64>,
    generation_id: i32,
    protocol_type: Option<String>,
    protocol_name: Option<String>,
    leader: Option<String>,
    /// In the order they were added (Kafka's map has no order; this one makes
    /// leader succession and protocol tie-breaks deterministic).
    members: Vec<Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, with their expiry.
    pending_members: Vec<(String, i64)>,
    /// Members of the current generation that have not sent SyncGroup yet.
    pending_sync: Vec<String>,
    sync_deadline_ms: Option<i64>,
    join_timer: Option<JoinTimer>,
    /// A member was added during the first (generation 0) initial delay.
    new_member_added: bool,
}

impl Group {
    pub fn new(group_id: String, config: GroupConfig) -> Group {
        Group {
            group_id,
            config,
            state: GroupState::Empty,
            state_timestamp_ms: None,
            generation_id: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: Vec::new(),
            pending_members: Vec::new(),
            pending_sync: Vec::new(),
            sync_deadline_ms: None,
            join_timer: None,
            new_member_added: false,
        }
    }

    /// Rebuild from a persisted snapshot when loading __consumer_offsets:
    /// Empty if no members, else Stable with those members (their heartbeat
    /// deadlines start at `now_ms`), as Kafka's loading does; a group loaded
    /// over `max_size` starts a rebalance (Kafka's `onGroupLoaded`).
    pub fn restore(
        group_id: String,
        config: GroupConfig,
        snapshot: GroupSnapshot,
        now_ms: i64,
    ) -> Group {
        let mut group = Group::new(group_id, config);
        group.generation_id = snapshot.generation_id;
        group.protocol_type = snapshot.protocol_type.filter(|t| !t.is_empty());
        group.protocol_name = snapshot.protocol_name;
        group.state_timestamp_ms = Some(snapshot.current_state_timestamp_ms);
        // Members stored under the chosen protocol, as Kafka's record keeps
        // only that protocol's metadata.
        let protocol = group.protocol_name.clone().unwrap_or_default();
        for m in snapshot.members {
            let duplicate = group.find(&m.member_id).is_some()
                || m.group_instance_id
                    .as_deref()
                    .is_some_and(|iid| group.static_member_id(iid).is_some());
            if duplicate {
                continue; // a damaged record: keep the first
            }
            group.members.push(Member {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                client_id: m.client_id,
                client_host: m.client_host,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocols: vec![(protocol.clone(), m.subscription)],
                assignment: m.assignment,
                awaiting_join: false,
                awaiting_sync: false,
                is_new: false,
                heartbeat_deadline_ms: now_ms.saturating_add(i64::from(m.session_timeout_ms)),
            });
        }
        group.leader = match snapshot.leader {
            Some(leader) if group.find(&leader).is_some() => Some(leader),
            _ => group.members.first().map(|m| m.member_id.clone()),
        };
        if !group.members.is_empty() {
            group.state = GroupState::Stable;
            if group.members.len() > group.config.max_size {
                // Give the members a chance to commit, then shed the excess.
                let mut effects = Vec::new();
                group.prepare_rebalance(now_ms, &mut effects);
            }
        }
        group
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    pub fn state(&self) -> GroupState {
        self.state
    }

    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }

    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }

    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }

    #[cfg(any(test, feature = "internals"))]
    /// The member id of the group's leader, once elected.
    pub fn leader(&self) -> Option<&str> {
        self.leader.as_deref()
    }

    /// Every member, in the order they joined. `subscription` is the metadata
    /// of the chosen protocol. (Kafka's DescribeGroups shows metadata and
    /// assignments only for a Stable group: the caller filters by `state()`.)
    pub fn members(&self) -> Vec<MemberSnapshot> {
        let protocol = self.protocol_name.as_deref();
        self.members.iter().map(|m| m.snapshot(protocol)).collect()
    }

    /// The GroupMetadataValue to persist.
    pub fn snapshot(&self, now_ms: i64) -> GroupSnapshot {
        GroupSnapshot {
            protocol_type: self.protocol_type.clone(),
            generation_id: self.generation_id,
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone(),
            current_state_timestamp_ms: self.state_timestamp_ms.unwrap_or(now_ms),
            members: self.members(),
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_member(&self, member_id: &str) -> bool {
        self.find(member_id).is_some()
    }

    /// JoinGroup (Kafka's `handleJoinGroup`).
    pub fn join(&mut self, request: JoinRequest, now_ms: i64) -> (JoinOutcome, Vec<Effect>) {
        let mut effects = Vec::new();
        let mut outcome = self.do_join(request, now_ms, &mut effects);
        // The join may have completed the rebalance at once: answer directly
        // unless the answer must wait for a persist.
        if let JoinOutcome::Wait { member_id } = &outcome {
            let mut answered = None;
            for (i, effect) in effects.iter().enumerate() {
                match effect {
                    Effect::PersistGroup => break,
                    Effect::JoinResponse { member_id: id, .. } if id == member_id => {
                        answered = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            if let Some(i) = answered {
                if let Effect::JoinResponse { result, .. } = effects.remove(i) {
                    outcome = JoinOutcome::Respond(result);
                }
            }
        }
        (outcome, effects)
    }

    /// SyncGroup (Kafka's `handleSyncGroup`). The leader's sync in
    /// CompletingRebalance sets every assignment (missing ones empty), makes
    /// the group Stable and returns `PersistGroup` followed by a
    /// `SyncResponse` for every parked member, the leader included.
    pub fn sync(&mut self, request: SyncRequest, now_ms: i64) -> (SyncOutcome, Vec<Effect>) {
        let mut effects = Vec::new();
        let outcome = self.do_sync(request, now_ms, &mut effects);
        (outcome, effects)
    }

    /// Heartbeat (Kafka's `handleHeartbeat`). Never has effects today; the
    /// Vec keeps the signature uniform.
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: i64,
    ) -> (Result<(), GroupError>, Vec<Effect>) {
        if self.state == GroupState::Dead {
            return (Err(GroupError::CoordinatorNotAvailable), Vec::new());
        }
        if let Some(error) = self.validate_current_member(member_id, group_instance_id) {
            return (Err(error), Vec::new());
        }
        if generation_id != self.generation_id {
            return (Err(GroupError::IllegalGeneration), Vec::new());
        }
        let Some(idx) = self.find(member_id) else {
            return (Err(GroupError::UnknownMemberId), Vec::new());
        };
        let answer = match self.state {
            GroupState::Empty | GroupState::Dead => Err(GroupError::UnknownMemberId),
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.schedule_heartbeat(idx, now_ms);
                Ok(())
            }
            GroupState::PreparingRebalance => {
                self.schedule_heartbeat(idx, now_ms);
                Err(GroupError::RebalanceInProgress)
            }
        };
        (answer, Vec::new())
    }

    /// LeaveGroup v0-2 (one member id) and v3+ (a list of (member_id,
    /// instance_id); a member may be named by instance id alone with
    /// member_id ""). Returns per-member error codes in request order. In a
    /// Dead group every member gets COORDINATOR_NOT_AVAILABLE (Kafka's
    /// top-level error for that case).
    pub fn leave(
        &mut self,
        members: Vec<(String, Option<String>)>,
        now_ms: i64,
    ) -> (Vec<Result<(), GroupError>>, Vec<Effect>) {
        let mut effects = Vec::new();
        if self.state == GroupState::Dead {
            let dead = Err(GroupError::CoordinatorNotAvailable);
            return (vec![dead; members.len()], effects);
        }
        let mut errors = Vec::with_capacity(members.len());
        for (member_id, group_instance_id) in members {
            let error = if member_id.is_empty() {
                // Administrative removal by instance id.
                match group_instance_id
                    .as_deref()
                    .and_then(|iid| self.static_member_id(iid))
                    .map(str::to_string)
                {
                    Some(current) => {
                        self.remove_member_and_update(&current, now_ms, &mut effects);
                        Ok(())
                    }
                    None => Err(GroupError::UnknownMemberId),
                }
            } else if self.is_pending_member(&member_id) {
                self.remove_pending_member(&member_id, now_ms, &mut effects);
                Ok(())
            } else {
                match self.validate_current_member(&member_id, group_instance_id.as_deref()) {
                    Some(error) => Err(error),
                    None => {
                        self.remove_member_and_update(&member_id, now_ms, &mut effects);
                        Ok(())
                    }
                }
            };
            errors.push(error);
        }
        (errors, effects)
    }

    /// May this member commit offsets now (Kafka's `validateOffsetCommit`
    /// and `doCommitOffsets`)? Generation < 0 with member "" and no instance
    /// id is a simple (non-group) commit: allowed only when the group is
    /// Empty. Otherwise the member must exist with this generation;
    /// CompletingRebalance -> REBALANCE_IN_PROGRESS. PreparingRebalance is
    /// allowed, as in Kafka: consumers commit before they rejoin and learn of
    /// the rebalance from their heartbeat. Refreshes the member's heartbeat.
    pub fn validate_offset_commit(
        &mut self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        if self.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        // An admin client or a consumer without group management (Kafka
        // accepts any member id then).
        if generation_id < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        let group_commit =
            generation_id >= 0 || !member_id.is_empty() || group_instance_id.is_some();
        if !group_commit {
            // When the group has members, only they may commit.
            return Err(GroupError::UnknownMemberId);
        }
        if let Some(error) = self.validate_current_member(member_id, group_instance_id) {
            return Err(error);
        }
        if generation_id != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        let Some(idx) = self.find(member_id) else {
            return Err(GroupError::UnknownMemberId);
        };
        match self.state {
            GroupState::Stable | GroupState::PreparingRebalance => {
                self.schedule_heartbeat(idx, now_ms);
                Ok(())
            }
            GroupState::CompletingRebalance => Err(GroupError::RebalanceInProgress),
            // No members in these states: unreachable past the member check.
            GroupState::Empty | GroupState::Dead => Err(GroupError::UnknownMemberId),
        }
    }

    /// Timers: session expiry (members silent longer than their session
    /// timeout are removed -> rebalance or Empty), pending-member expiry,
    /// join completion (all known members rejoined, or the rebalance timeout
    /// passed: dynamic stragglers are removed and get nothing; with the
    /// initial delay when the group was Empty) and sync expiry (members that
    /// do not SyncGroup within the rebalance timeout after the join completed
    /// are removed -> rebalance). Handles every event due at `now_ms`, oldest
    /// first.
    pub fn tick(&mut self, now_ms: i64) -> Vec<Effect> {
        let mut effects = Vec::new();
        for _ in 0..MAX_EVENTS_PER_TICK {
            let Some((deadline_ms, due)) = self.next_event() else {
                break;
            };
            if deadline_ms > now_ms {
                break;
            }
            match due {
                Due::Join => self.on_join_deadline(now_ms, &mut effects),
                Due::Sync => self.on_sync_deadline(now_ms, &mut effects),
                Due::PendingMember(id) => self.remove_pending_member(&id, now_ms, &mut effects),
                Due::Member(id) => self.remove_member_and_update(&id, now_ms, &mut effects),
            }
        }
        effects
    }

    /// The next time `tick` has something to do, if any.
    pub fn next_deadline(&self) -> Option<i64> {
        self.next_event().map(|(deadline_ms, _)| deadline_ms)
    }

    /// DeleteGroups: Ok when Empty (-> Dead); NON_EMPTY_GROUP when it has
    /// members; GROUP_ID_NOT_FOUND when already Dead.
    pub fn delete(&mut self) -> Result<(), GroupError> {
        match self.state {
            GroupState::Empty => {
                self.state = GroupState::Dead;
                self.pending_members.clear();
                self.pending_sync.clear();
                self.sync_deadline_ms = None;
                self.join_timer = None;
                Ok(())
            }
            GroupState::Dead => Err(GroupError::GroupIdNotFound),
            _ => Err(GroupError::NonEmptyGroup),
        }
    }

    /// Topics the members subscribe to, for OffsetDelete's
    /// GROUP_SUBSCRIBED_TO_TOPIC check. Only for protocol type "consumer";
    /// each member's metadata (for the chosen protocol) is read as Kafka
    /// does: the version first, then the version-0 prefix every later
    /// version keeps (topics, user data). Undecodable metadata is ignored.
    pub fn subscribed_topics(&self) -> BTreeSet<String> {
        let mut topics = BTreeSet::new();
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return topics;
        }
        for member in &self.members {
            let metadata = member.subscription(self.protocol_name.as_deref());
            if let Some(subscription) = decode_subscription(metadata) {
                topics.extend(subscription.topics.iter().map(|t| t.to_string()));
            }
        }
        topics
    }

    // ---- JoinGroup ----

    fn do_join(&mut self, req: JoinRequest, now_ms: i64, effects: &mut Vec<Effect>) -> JoinOutcome {
        let session_timeout_ms = i64::from(req.session_timeout_ms);
        if session_timeout_ms < self.config.min_session_timeout_ms
            || session_timeout_ms > self.config.max_session_timeout_ms
        {
            return JoinOutcome::Respond(JoinResult::error(
                &req.member_id,
                GroupError::InvalidSessionTimeout,
            ));
        }
        let outcome = if !self.accept_joining_member(&req.member_id) {
            // An existing member that has not rejoined a full rebalancing
            // group is shed (Kafka's `group.remove` on this path).
            self.remove_member_raw(&req.member_id);
            JoinOutcome::Respond(JoinResult::error(
                "",
                GroupError::GroupMaxSizeReached,
            ))
        } else if req.member_id.is_empty() {
            self.new_member_join(req, now_ms, effects)
        } else {
            self.current_member_join(req, now_ms, effects)
        };
        self.try_complete_join(now_ms, effects);
        outcome
    }

    /// Kafka's `acceptJoiningMember`: up to `max_size` members, counted as
    /// rejoined members while rebalancing (so the last to rejoin a group over
    /// its size are the ones shed).
    fn accept_joining_member(&self, member_id: &str) -> bool {
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                self.find(member_id)
                    .is_some_and(|idx| self.members[idx].awaiting_join)
                    || self.num_awaiting_join() < self.config.max_size
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.find(member_id).is_some() || self.members.len() < self.config.max_size
            }
        }
    }

    fn new_member_join(
        &mut self,
        req: JoinRequest,
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        if self.state == GroupState::Dead {
            return JoinOutcome::Respond(JoinResult::error(
                "",
                GroupError::CoordinatorNotAvailable,
            ));
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return JoinOutcome::Respond(JoinResult::error(
                "",
                GroupError::InconsistentGroupProtocol,
            ));
        }
        // Kafka's `generateMemberId`: "<client id or instance id>-<uuid>".
        let prefix = req.group_instance_id.as_deref().unwrap_or(&req.client_id);
        let new_member_id = format!("{}-{}", prefix, uuid::Uuid::new_v4());
        match req.group_instance_id.clone() {
            Some(instance_id) => match self.static_member_id(&instance_id).map(str::to_string) {
                Some(old_member_id) => self.replace_static_member_and_rebalance(
                    req,
                    &old_member_id,
                    new_member_id,
                    now_ms,
                    effects,
                ),
                None => self.add_member_and_rebalance(req, new_member_id, now_ms, effects),
            },
            None if req.require_known_member_id => {
                let deadline_ms = now_ms.saturating_add(session_timeout(&req));
                self.pending_members
                    .push((new_member_id.clone(), deadline_ms));
                JoinOutcome::Respond(JoinResult::error(
                    &new_member_id,
                    GroupError::MemberIdRequired,
                ))
            }
            None => self.add_member_and_rebalance(req, new_member_id, now_ms, effects),
        }
    }

    fn current_member_join(
        &mut self,
        req: JoinRequest,
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        let member_id = req.member_id.clone();
        if self.state == GroupState::Dead {
            return JoinOutcome::Respond(JoinResult::error(
                &member_id,
                GroupError::CoordinatorNotAvailable,
            ));
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            return JoinOutcome::Respond(JoinResult::error(
                &member_id,
                GroupError::InconsistentGroupProtocol,
            ));
        }
        if self.is_pending_member(&member_id) {
            if req.group_instance_id.is_some() {
                // Pending ids are only handed to dynamic members; Kafka
                // throws here, which the client sees as this error.
                return JoinOutcome::Respond(JoinResult::error(
                    &member_id,
                    GroupError::PendingMemberWithInstanceId,
                ));
            }
            return self.add_member_and_rebalance(req, member_id, now_ms, effects);
        }
        if let Some(error) =
            self.validate_current_member(&member_id, req.group_instance_id.as_deref())
        {
            return JoinOutcome::Respond(JoinResult::error(&member_id, error));
        }
        let Some(idx) = self.find(&member_id) else {
            return JoinOutcome::Respond(JoinResult::error(
                &member_id,
                GroupError::UnknownMemberId,
            ));
        };
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member_and_rebalance(idx, req, now_ms, effects)
            }
            GroupState::CompletingRebalance => {
                if self.members[idx].matches(&req.protocols) {
                    // It missed its JoinGroup response: send it again.
                    let is_leader = self.is_leader(&member_id);
                    JoinOutcome::Respond(self.generation_result(&member_id, is_leader, None))
                } else {
                    self.update_member_and_rebalance(idx, req, now_ms, effects)
                }
            }
            GroupState::Stable => {
                // The leader rejoining forces a rebalance: that is how it
                // reacts to changes the metadata does not show (new
                // partitions, ...).
                if self.is_leader(&member_id) || !self.members[idx].matches(&req.protocols) {
                    self.update_member_and_rebalance(idx, req, now_ms, effects)
                } else {
                    JoinOutcome::Respond(self.generation_result(&member_id, false, None))
                }
            }
            GroupState::Empty | GroupState::Dead => JoinOutcome::Respond(JoinResult::error(
                &member_id,
                GroupError::UnknownMemberId,
            )),
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        req: JoinRequest,
        member_id: String,
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        // More members during the very first delay extend it.
        if self.state == GroupState::PreparingRebalance && self.generation_id == 0 {
            self.new_member_added = true;
        }
        if self.members.is_empty() {
            self.protocol_type = Some(req.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(member_id.clone());
        }
        self.pending_members.retain(|(id, _)| *id != member_id);
        self.members.push(Member {
            member_id: member_id.clone(),
            group_instance_id: req.group_instance_id,
            client_id: req.client_id,
            client_host: req.client_host,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocols: req.protocols,
            assignment: Bytes::new(),
            awaiting_join: true,
            awaiting_sync: false,
            is_new: true,
            heartbeat_deadline_ms: now_ms.saturating_add(NEW_MEMBER_JOIN_TIMEOUT_MS),
        });
        self.maybe_prepare_rebalance(now_ms, effects);
        JoinOutcome::Wait { member_id }
    }

    fn update_member_and_rebalance(
        &mut self,
        idx: usize,
        req: JoinRequest,
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        let member = &mut self.members[idx];
        member.protocols = req.protocols;
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        member.session_timeout_ms = req.session_timeout_ms;
        member.awaiting_join = true;
        let member_id = member.member_id.clone();
        self.maybe_prepare_rebalance(now_ms, effects);
        JoinOutcome::Wait { member_id }
    }

    /// A known static member rejoined with member id "" (it restarted): it
    /// takes over the old member under `new_member_id`, and the old id is
    /// fenced. In a Stable group whose protocol choice does not change there
    /// is no rebalance: the member gets the current generation (with the old
    /// leader id, so a restarted leader does not run an assignment nobody
    /// would see) once the new id is persisted, and its assignment through a
    /// normal SyncGroup.
    fn replace_static_member_and_rebalance(
        &mut self,
        req: JoinRequest,
        old_member_id: &str,
        new_member_id: String,
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) -> JoinOutcome {
        let Some(idx) = self.find(old_member_id) else {
            return JoinOutcome::Respond(JoinResult::error(
                "",
                GroupError::UnknownMemberId,
            ));
        };
        let current_leader = self.leader.clone().unwrap_or_default();
        // Fence whatever the old incarnation has parked.
        let member = &mut self.members[idx];
        if member.awaiting_join {
            member.awaiting_join = false;
            effects.push(Effect::JoinResponse {
                member_id: old_member_id.to_string(),
                result: JoinResult::error(old_member_id, GroupError::FencedInstanceId),
            });
        }
        if member.awaiting_sync {
            member.awaiting_sync = false;
            effects.push(Effect::SyncResponse {
                member_id: old_member_id.to_string(),
                result: SyncResult::error(GroupError::FencedInstanceId),
            });
        }
        member.member_id = new_member_id.clone();
        member.protocols = req.protocols;
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        member.session_timeout_ms = req.session_timeout_ms;
        member.awaiting_join = true;
        if self.leader.as_deref() == Some(old_member_id) {
            self.leader = Some(new_member_id.clone());
        }
        for id in self.pending_sync.iter_mut() {
            if id == old_member_id {
                *id = new_member_id.clone();
            }
        }
        self.schedule_heartbeat(idx, now_ms);

        match self.state {
            GroupState::Stable => {
                if self.select_protocol() == self.protocol_name {
                    self.members[idx].awaiting_join = false;
                    effects.push(Effect::PersistGroup);
                    let mut result = self.generation_result(&new_member_id, false, None);
                    result.leader = current_leader;
                    effects.push(Effect::JoinResponse {
                        member_id: new_member_id.clone(),
                        result,
                    });
                } else {
                    self.maybe_prepare_rebalance(now_ms, effects);
                }
            }
            // The leader may already have assigned to the old id: rebalance
            // so the new id gets an assignment.
            GroupState::CompletingRebalance => self.prepare_rebalance(now_ms, effects),
            // Its parked JoinGroup is answered when the join completes.
            GroupState::PreparingRebalance => {}
            // A static member exists, so the group has members: unreachable.
            GroupState::Empty | GroupState::Dead => self.maybe_prepare_rebalance(now_ms, effects),
        }
        JoinOutcome::Wait {
            member_id: new_member_id,
        }
    }

    /// Kafka's `supportsProtocols`: an Empty group takes any non-empty
    /// protocol type and list; otherwise the type must match and one of the
    /// member's protocols must be supported by every member.
    fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.state == GroupState::Empty {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols
                .iter()
                .any(|(name, _)| self.supported_count(name) == self.members.len())
    }

    fn supported_count(&self, protocol: &str) -> usize {
        self.members.iter().filter(|m| m.supports(protocol)).count()
    }

    /// Kafka's `selectProtocol`: among the protocols every member supports,
    /// each member votes for its first; most votes wins (ties: the one first
    /// voted for, in member order).
    fn select_protocol(&self) -> Option<String> {
        let first = self.members.first()?;
        let n = self.members.len();
        let candidates: Vec<&str> = first
            .protocols
            .iter()
            .map(|(name, _)| name.as_str())
            .filter(|name| self.supported_count(name) == n)
            .collect();
        let mut tally: Vec<(&str, usize)> = Vec::new();
        for member in &self.members {
            let vote = member
                .protocols
                .iter()
                .map(|(name, _)| name.as_str())
                .find(|name| candidates.contains(name));
            if let Some(vote) = vote {
                match tally.iter_mut().find(|(name, _)| *name == vote) {
                    Some((_, count)) => *count += 1,
                    None => tally.push((vote, 1)),
                }
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (name, count) in tally {
            if best.is_none_or(|(_, best_count)| count > best_count) {
                best = Some((name, count));
            }
        }
        best.map(|(name, _)| name.to_string())
    }

    // ---- SyncGroup ----

    fn do_sync(&mut self, req: SyncRequest, now_ms: i64, effects: &mut Vec<Effect>) -> SyncOutcome {
        if self.state == GroupState::Dead {
            return SyncOutcome::Respond(SyncResult::error(
                GroupError::CoordinatorNotAvailable,
            ));
        }
        if let Some(error) =
            self.validate_current_member(&req.member_id, req.group_instance_id.as_deref())
        {
            return SyncOutcome::Respond(SyncResult::error(error));
        }
        if req.generation_id != self.generation_id {
            return SyncOutcome::Respond(SyncResult::error(
                GroupError::IllegalGeneration,
            ));
        }
        let type_mismatch = req
            .protocol_type
            .as_ref()
            .is_some_and(|t| self.protocol_type.as_ref() != Some(t));
        let name_mismatch = req
            .protocol_name
            .as_ref()
            .is_some_and(|n| self.protocol_name.as_ref() != Some(n));
        if type_mismatch || name_mismatch {
            return SyncOutcome::Respond(SyncResult::error(
                GroupError::InconsistentGroupProtocol,
            ));
        }
        let Some(idx) = self.find(&req.member_id) else {
            return SyncOutcome::Respond(SyncResult::error(GroupError::UnknownMemberId));
        };
        match self.state {
            GroupState::Empty | GroupState::Dead => {
                SyncOutcome::Respond(SyncResult::error(GroupError::UnknownMemberId))
            }
            GroupState::PreparingRebalance => {
                SyncOutcome::Respond(SyncResult::error(GroupError::RebalanceInProgress))
            }
            GroupState::CompletingRebalance => {
                self.members[idx].awaiting_sync = true;
                self.remove_pending_sync(&req.member_id);
                if self.is_leader(&req.member_id) {
                    // Missing members get an empty assignment; unknown ids
                    // are ignored; the last entry for an id wins.
                    for member in self.members.iter_mut() {
                        member.assignment = req
                            .assignments
                            .iter()
                            .rev()
                            .find(|(id, _)| *id == member.member_id)
                            .map(|(_, assignment)| assignment.clone())
                            .unwrap_or_default();
                    }
                    self.transition(GroupState::Stable, now_ms);
                    effects.push(Effect::PersistGroup);
                    self.propagate_assignment(None, now_ms, effects);
                }
                SyncOutcome::Wait {
                    member_id: req.member_id,
                }
            }
            GroupState::Stable => {
                self.remove_pending_sync(&req.member_id);
                let result = SyncResult {
                    error: None,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment: self.members[idx].assignment.clone(),
                };
                self.schedule_heartbeat(idx, now_ms);
                SyncOutcome::Respond(result)
            }
        }
    }

    /// Answer every parked SyncGroup with its member's assignment (or the
    /// error), and restart those members' session timers.
    fn propagate_assignment(
        &mut self,
        error: Option<GroupError>,
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) {
        let (protocol_type, protocol_name) = if error.is_none() {
            (self.protocol_type.clone(), self.protocol_name.clone())
        } else {
            (None, None)
        };
        for idx in 0..self.members.len() {
            if !self.members[idx].awaiting_sync {
                continue;
            }
            self.members[idx].awaiting_sync = false;
            effects.push(Effect::SyncResponse {
                member_id: self.members[idx].member_id.clone(),
                result: SyncResult {
                    error,
                    protocol_type: protocol_type.clone(),
                    protocol_name: protocol_name.clone(),
                    assignment: self.members[idx].assignment.clone(),
                },
            });
            self.schedule_heartbeat(idx, now_ms);
        }
    }

    fn remove_pending_sync(&mut self, member_id: &str) {
        self.pending_sync.retain(|id| id != member_id);
        if self.pending_sync.is_empty() {
            self.sync_deadline_ms = None;
        }
    }

    // ---- Rebalance ----

    fn maybe_prepare_rebalance(&mut self, now_ms: i64, effects: &mut Vec<Effect>) {
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            self.prepare_rebalance(now_ms, effects);
        }
    }

    /// Kafka's `prepareRebalance`: parked SyncGroups get
    /// REBALANCE_IN_PROGRESS, the sync deadline goes, the join deadline
    /// starts (the initial delay if the group was Empty).
    fn prepare_rebalance(&mut self, now_ms: i64, effects: &mut Vec<Effect>) {
        if self.state == GroupState::CompletingRebalance {
            for member in self.members.iter_mut() {
                member.assignment = Bytes::new();
            }
            self.propagate_assignment(Some(GroupError::RebalanceInProgress), now_ms, effects);
        }
        self.pending_sync.clear();
        self.sync_deadline_ms = None;
        let rebalance_timeout_ms = self.rebalance_timeout_ms();
        self.join_timer = Some(if self.state == GroupState::Empty {
            let delay_ms = self.config.initial_rebalance_delay_ms.max(0);
            JoinTimer::Initial {
                deadline_ms: now_ms.saturating_add(delay_ms),
                delay_ms,
                remaining_ms: (rebalance_timeout_ms - delay_ms).max(0),
            }
        } else {
            JoinTimer::Delayed {
                deadline_ms: now_ms.saturating_add(rebalance_timeout_ms),
            }
        });
        self.transition(GroupState::PreparingRebalance, now_ms);
        self.try_complete_join(now_ms, effects);
    }

    /// Kafka's `tryCompleteJoin`: a rebalance completes as soon as every
    /// member and every pending member has rejoined, except during the
    /// initial delay.
    fn try_complete_join(&mut self, now_ms: i64, effects: &mut Vec<Effect>) {
        if self.state == GroupState::PreparingRebalance
            && matches!(self.join_timer, Some(JoinTimer::Delayed { .. }))
            && self.members.iter().all(|m| m.awaiting_join)
            && self.pending_members.is_empty()
        {
            self.complete_join(now_ms, effects);
        }
    }

    fn on_join_deadline(&mut self, now_ms: i64, effects: &mut Vec<Effect>) {
        match self.join_timer {
            Some(JoinTimer::Initial {
                delay_ms,
                remaining_ms,
                ..
            }) if self.new_member_added && remaining_ms != 0 => {
                self.new_member_added = false;
                let delay = self
                    .config
                    .initial_rebalance_delay_ms
                    .max(0)
                    .min(remaining_ms);
                self.join_timer = Some(JoinTimer::Initial {
                    deadline_ms: now_ms.saturating_add(delay),
                    delay_ms: delay,
                    remaining_ms: (remaining_ms - delay_ms).max(0),
                });
            }
            _ => self.complete_join(now_ms, effects),
        }
    }

    /// Kafka's `onCompleteJoin`: dynamic members that did not rejoin are
    /// removed (static ones stay until their session or sync times out), a
    /// rejoined member leads if the leader did not rejoin, the generation
    /// advances, and every parked JoinGroup is answered.
    fn complete_join(&mut self, now_ms: i64, effects: &mut Vec<Effect>) {
        self.join_timer = None;
        self.new_member_added = false;
        let stragglers: Vec<String> = self
            .members
            .iter()
            .filter(|m| !m.awaiting_join && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in stragglers {
            self.remove_member_raw(&id);
        }
        if self.state == GroupState::Dead {
            return;
        }
        if !self.maybe_elect_new_joined_leader() && !self.members.is_empty() {
            // Nobody rejoined (only absent static members are left): wait
            // again, until their sessions expire.
            let wait_ms = self.rebalance_timeout_ms().max(1);
            self.join_timer = Some(JoinTimer::Delayed {
                deadline_ms: now_ms.saturating_add(wait_ms),
            });
            return;
        }
        self.generation_id = self.generation_id.wrapping_add(1);
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition(GroupState::Empty, now_ms);
            effects.push(Effect::PersistGroup);
            return;
        }
        self.protocol_name = self.select_protocol();
        self.transition(GroupState::CompletingRebalance, now_ms);
        let member_metadata = self.current_member_metadata();
        for idx in 0..self.members.len() {
            if self.members[idx].awaiting_join {
                self.members[idx].awaiting_join = false;
                let member_id = self.members[idx].member_id.clone();
                let is_leader = self.is_leader(&member_id);
                let members = is_leader.then(|| member_metadata.clone());
                let result = self.generation_result(&member_id, is_leader, members);
                effects.push(Effect::JoinResponse { member_id, result });
            }
            self.schedule_heartbeat(idx, now_ms);
            self.members[idx].is_new = false;
        }
        self.pending_sync = self.members.iter().map(|m| m.member_id.clone()).collect();
        self.sync_deadline_ms = Some(now_ms.saturating_add(self.rebalance_timeout_ms()));
    }

    /// Kafka's `onExpirePendingSync`: members that never sent SyncGroup for
    /// this generation are removed, and the group rebalances without them.
    fn on_sync_deadline(&mut self, now_ms: i64, effects: &mut Vec<Effect>) {
        self.sync_deadline_ms = None;
        let pending = std::mem::take(&mut self.pending_sync);
        if pending.is_empty()
            || !matches!(
                self.state,
                GroupState::CompletingRebalance | GroupState::Stable
            )
        {
            return;
        }
        for id in &pending {
            self.remove_member_raw(id);
        }
        self.prepare_rebalance(now_ms, effects);
    }

    /// Kafka's `maybeElectNewJoinedLeader`: false when there is no leader or
    /// nobody rejoined.
    fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader.as_deref() else {
            return false;
        };
        if self
            .find(leader)
            .is_some_and(|idx| self.members[idx].awaiting_join)
        {
            return true;
        }
        match self.members.iter().find(|m| m.awaiting_join) {
            Some(member) => {
                self.leader = Some(member.member_id.clone());
                true
            }
            None => false,
        }
    }

    // ---- Members ----

    /// Kafka's `removeMemberAndUpdateGroup` (LeaveGroup, session expiry):
    /// a parked JoinGroup gets UNKNOWN_MEMBER_ID so the client retries; so
    /// does a parked SyncGroup (Kafka leaves that one unanswered); then the
    /// group rebalances, or the rebalance may now complete.
    fn remove_member_and_update(
        &mut self,
        member_id: &str,
        now_ms: i64,
        effects: &mut Vec<Effect>,
    ) {
        let Some(idx) = self.find(member_id) else {
            return;
        };
        let member = &self.members[idx];
        if member.awaiting_join {
            effects.push(Effect::JoinResponse {
                member_id: member_id.to_string(),
                result: JoinResult::error("", GroupError::UnknownMemberId),
            });
        }
        if member.awaiting_sync {
            effects.push(Effect::SyncResponse {
                member_id: member_id.to_string(),
                result: SyncResult::error(GroupError::UnknownMemberId),
            });
        }
        self.remove_member_raw(member_id);
        match self.state {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(now_ms, effects)
            }
            GroupState::PreparingRebalance => self.try_complete_join(now_ms, effects),
        }
    }

    /// Kafka's `GroupMetadata.remove`: forget the member; if it led, the
    /// next member leads.
    fn remove_member_raw(&mut self, member_id: &str) {
        self.members.retain(|m| m.member_id != member_id);
        if self.leader.as_deref() == Some(member_id) {
            self.leader = self.members.first().map(|m| m.member_id.clone());
        }
        self.pending_members.retain(|(id, _)| id != member_id);
        self.remove_pending_sync(member_id);
    }

    fn remove_pending_member(&mut self, member_id: &str, now_ms: i64, effects: &mut Vec<Effect>) {
        self.pending_members.retain(|(id, _)| id != member_id);
        self.try_complete_join(now_ms, effects);
    }

    fn is_pending_member(&self, member_id: &str) -> bool {
        self.pending_members.iter().any(|(id, _)| id == member_id)
    }

    /// Kafka's `validateCurrentMember`: a given instance id must map to this
    /// member id (else FENCED_INSTANCE_ID, or UNKNOWN_MEMBER_ID when the
    /// instance is unknown), and the member must exist.
    fn validate_current_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Option<GroupError> {
        if let Some(instance_id) = group_instance_id {
            match self.static_member_id(instance_id) {
                Some(current) if current != member_id => {
                    return Some(GroupError::FencedInstanceId)
                }
                Some(_) => {}
                None => return Some(GroupError::UnknownMemberId),
            }
        }
        if self.find(member_id).is_none() {
            return Some(GroupError::UnknownMemberId);
        }
        None
    }

    fn find(&self, member_id: &str) -> Option<usize> {
        self.members.iter().position(|m| m.member_id == member_id)
    }

    fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.members
            .iter()
            .find(|m| m.group_instance_id.as_deref() == Some(instance_id))
            .map(|m| m.member_id.as_str())
    }

    fn is_leader(&self, member_id: &str) -> bool {
        self.leader.as_deref() == Some(member_id)
    }

    fn num_awaiting_join(&self) -> usize {
        self.members.iter().filter(|m| m.awaiting_join).count()
    }

    /// The largest rebalance timeout of the members (Kafka's
    /// `group.rebalanceTimeoutMs`).
    fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .iter()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
            .max(0)
    }

    fn schedule_heartbeat(&mut self, idx: usize, now_ms: i64) {
        let member = &mut self.members[idx];
        member.heartbeat_deadline_ms = now_ms.saturating_add(i64::from(member.session_timeout_ms));
    }

    fn transition(&mut self, state: GroupState, now_ms: i64) {
        self.state = state;
        self.state_timestamp_ms = Some(now_ms);
    }

    /// Every member with the metadata of the chosen protocol, for the
    /// leader's JoinGroup response.
    fn current_member_metadata(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or_default();
        self.members
            .iter()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol).cloned().unwrap_or_default(),
            })
            .collect()
    }

    /// The current generation as a JoinGroup response; the leader gets the
    /// members (computed here unless given).
    fn generation_result(
        &self,
        member_id: &str,
        is_leader: bool,
        members: Option<Vec<JoinedMember>>,
    ) -> JoinResult {
        let members = if is_leader {
            members.unwrap_or_else(|| self.current_member_metadata())
        } else {
            Vec::new()
        };
        JoinResult {
            error: None,
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members,
        }
    }

    // ---- Timers ----

    /// The earliest pending timer event.
    fn next_event(&self) -> Option<(i64, Due)> {
        if self.state == GroupState::Dead {
            return None;
        }
        let mut best: Option<(i64, Due)> = None;
        let mut offer = |deadline_ms: i64, due: Due| {
            if best.as_ref().is_none_or(|(b, _)| deadline_ms < *b) {
                best = Some((deadline_ms, due));
            }
        };
        if self.state == GroupState::PreparingRebalance {
            if let Some(timer) = self.join_timer {
                offer(timer.deadline_ms(), Due::Join);
            }
        }
        if let Some(deadline_ms) = self.sync_deadline_ms {
            if !self.pending_sync.is_empty()
                && matches!(
                    self.state,
                    GroupState::CompletingRebalance | GroupState::Stable
                )
            {
                offer(deadline_ms, Due::Sync);
            }
        }
        for (id, deadline_ms) in &self.pending_members {
            offer(*deadline_ms, Due::PendingMember(id.clone()));
        }
        for member in self.members.iter().filter(|m| m.expires()) {
            offer(
                member.heartbeat_deadline_ms,
                Due::Member(member.member_id.clone()),
            );
        }
        best
    }
}

fn session_timeout(req: &JoinRequest) -> i64 {
    i64::from(req.session_timeout_ms)
}

/// A consumer's subscription: the version (an i16), then the version-0
/// prefix every version keeps. None for anything undecodable.
fn decode_subscription(metadata: Bytes) -> Option<ConsumerProtocolSubscription> {
    if metadata.len() < 2 {
        return None;
    }
    let version = i16::from_be_bytes([metadata[0], metadata[1]]);
    if version < 0 {
        return None;
    }
    let mut body = metadata.slice(2..);
    ConsumerProtocolSubscription::decode(&mut body, 0).ok()
}
