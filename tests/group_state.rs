//! The consumer-group state machine (`ferrolog::group::state`) against
//! Kafka's classic-protocol behaviour: joins, syncs, heartbeats, leaves,
//! timers, static membership, the error codes, and a property test running
//! random request sequences for up to five members while checking the
//! group's invariants and that every parked request is answered exactly once.
//!
//! No clock: every call gets `now_ms`, and `advance` runs the group's timers
//! at the times they fall due, as the owning actor does.

use std::collections::{HashMap, HashSet};

use bytes::{BufMut, Bytes, BytesMut};
use ferrolog::group::state::{
    Effect, Group, GroupConfig, GroupError, GroupSnapshot, GroupState, JoinOutcome, JoinRequest,
    JoinResult, MemberSnapshot, SyncOutcome, SyncRequest, SyncResult,
};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::ConsumerProtocolSubscription;
use kafka_protocol::protocol::{Encodable, StrBytes};
#[path = "common/seed.rs"]
mod seed;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Start of every scenario.
const T0: i64 = 1_700_000_000_000;
const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 30_000;
const INITIAL_DELAY_MS: i64 = 3_000;

const NONE: i16 = 0;

/// The state machine's typed answers as the Kafka codes a client sees
/// (what these tests assert).
trait AsCodes {
    type Codes;
    fn codes(self) -> Self::Codes;
}

impl AsCodes for Result<(), GroupError> {
    type Codes = Result<(), i16>;
    fn codes(self) -> Self::Codes {
        self.map_err(GroupError::code)
    }
}

impl AsCodes for (Result<(), GroupError>, Vec<Effect>) {
    type Codes = (i16, Vec<Effect>);
    fn codes(self) -> Self::Codes {
        (GroupError::code_of(self.0), self.1)
    }
}

impl AsCodes for (Vec<Result<(), GroupError>>, Vec<Effect>) {
    type Codes = (Vec<i16>, Vec<Effect>);
    fn codes(self) -> Self::Codes {
        (
            self.0.into_iter().map(GroupError::code_of).collect(),
            self.1,
        )
    }
}

fn kafka<T: AsCodes>(answer: T) -> T::Codes {
    answer.codes()
}

fn code(error: ResponseError) -> i16 {
    error.code()
}

fn config() -> GroupConfig {
    GroupConfig {
        initial_rebalance_delay_ms: INITIAL_DELAY_MS,
        min_session_timeout_ms: 6_000,
        max_session_timeout_ms: 1_800_000,
        max_size: 10,
    }
}

/// A consumer's subscription metadata as Kafka's clients write it: the
/// version, then the ConsumerProtocolSubscription of that version.
fn subscription(topics: &[&str]) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(1);
    ConsumerProtocolSubscription::default()
        .with_topics(
            topics
                .iter()
                .map(|t| StrBytes::from_string(t.to_string()))
                .collect(),
        )
        .encode(&mut buf, 1)
        .expect("encodable subscription");
    buf.freeze()
}

fn join_request(member_id: &str, client_id: &str) -> JoinRequest {
    JoinRequest {
        member_id: member_id.to_string(),
        group_instance_id: None,
        client_id: client_id.to_string(),
        client_host: "/127.0.0.1".to_string(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        protocol_type: "consumer".to_string(),
        protocols: vec![("range".to_string(), subscription(&["orders"]))],
        require_known_member_id: false,
    }
}

fn static_request(member_id: &str, instance_id: &str) -> JoinRequest {
    JoinRequest {
        group_instance_id: Some(instance_id.to_string()),
        ..join_request(member_id, instance_id)
    }
}

fn sync_request(
    member_id: &str,
    generation_id: i32,
    assignments: Vec<(String, Bytes)>,
) -> SyncRequest {
    SyncRequest {
        member_id: member_id.to_string(),
        group_instance_id: None,
        generation_id,
        protocol_type: Some("consumer".to_string()),
        protocol_name: Some("range".to_string()),
        assignments,
    }
}

fn assignment_for(member_id: &str) -> Bytes {
    Bytes::from(format!("assignment of {member_id}"))
}

fn wait_id(outcome: JoinOutcome) -> String {
    match outcome {
        JoinOutcome::Wait { member_id } => member_id,
        JoinOutcome::Respond(result) => panic!("expected the join to wait, got {result:?}"),
    }
}

fn responded(outcome: JoinOutcome) -> JoinResult {
    match outcome {
        JoinOutcome::Respond(result) => result,
        JoinOutcome::Wait { member_id } => panic!("expected a response, {member_id} was parked"),
    }
}

fn sync_responded(outcome: SyncOutcome) -> SyncResult {
    match outcome {
        SyncOutcome::Respond(result) => result,
        SyncOutcome::Wait { member_id } => panic!("expected a response, {member_id} was parked"),
    }
}

fn join_responses(effects: &[Effect]) -> HashMap<String, JoinResult> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::JoinResponse { member_id, result } => Some((member_id.clone(), result.clone())),
            _ => None,
        })
        .collect()
}

fn sync_responses(effects: &[Effect]) -> HashMap<String, SyncResult> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::SyncResponse { member_id, result } => Some((member_id.clone(), result.clone())),
            _ => None,
        })
        .collect()
}

/// Runs every timer due up to `to`, each at the time it falls due, then
/// ticks at `to`: what the actor does with `next_deadline`.
fn advance(group: &mut Group, to: i64) -> Vec<Effect> {
    let mut effects = Vec::new();
    for _ in 0..10_000 {
        match group.next_deadline() {
            Some(deadline) if deadline <= to => {
                effects.extend(group.tick(deadline));
                if let Some(next) = group.next_deadline() {
                    assert!(next > deadline, "tick({deadline}) left {next} due");
                }
            }
            _ => {
                effects.extend(group.tick(to));
                return effects;
            }
        }
    }
    panic!("timers never settled");
}

/// `n` dynamic members join an Empty group at T0 and the first generation
/// completes after the initial delay; returns the group, the member ids in
/// join order (the first leads) and the time.
fn completing_group(n: usize) -> (Group, Vec<String>, i64) {
    let mut group = Group::new("g".to_string(), config());
    let ids: Vec<String> = (0..n)
        .map(|i| {
            let (outcome, effects) = group.join(join_request("", &format!("c{i}")), T0);
            assert!(effects.is_empty());
            wait_id(outcome)
        })
        .collect();
    // One window, plus one more because members joined during the first.
    let done = if n > 1 {
        T0 + 2 * INITIAL_DELAY_MS
    } else {
        T0 + INITIAL_DELAY_MS
    };
    let responses = join_responses(&advance(&mut group, done));
    assert_eq!(responses.len(), n);
    assert_eq!(group.state(), GroupState::CompletingRebalance);
    (group, ids, done)
}

/// `completing_group`, then every member syncs (the leader last, assigning
/// `assignment_for(id)` to each): a Stable group at generation 1.
fn stable_group(n: usize) -> (Group, Vec<String>, i64) {
    let (mut group, ids, now) = completing_group(n);
    for id in &ids[1..] {
        let (outcome, effects) = group.sync(sync_request(id, 1, vec![]), now);
        assert_eq!(
            outcome,
            SyncOutcome::Wait {
                member_id: id.clone()
            }
        );
        assert!(effects.is_empty());
    }
    let assignments = ids
        .iter()
        .map(|id| (id.clone(), assignment_for(id)))
        .collect();
    let (outcome, effects) = group.sync(sync_request(&ids[0], 1, assignments), now);
    assert_eq!(
        outcome,
        SyncOutcome::Wait {
            member_id: ids[0].clone()
        }
    );
    assert_eq!(sync_responses(&effects).len(), n);
    assert_eq!(group.state(), GroupState::Stable);
    (group, ids, now)
}

/// Three members joining an Empty group form one generation: each gets
/// generation 1 with the same leader (the first to join) and protocol; only
/// the leader gets the members, all three with their metadata.
#[test]
fn three_members_join_one_generation() {
    let mut group = Group::new("g".to_string(), config());
    let ids: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|client| wait_id(group.join(join_request("", client), T0).0))
        .collect();
    assert!(
        ids[0].starts_with("a-"),
        "member id is <client id>-<uuid>: {}",
        ids[0]
    );
    assert_eq!(group.state(), GroupState::PreparingRebalance);

    let effects = advance(&mut group, T0 + 2 * INITIAL_DELAY_MS);
    let responses = join_responses(&effects);
    assert_eq!(
        effects.len(),
        3,
        "three join responses, nothing else: {effects:?}"
    );
    for id in &ids {
        let r = &responses[id];
        assert_eq!(r.error_code(), NONE);
        assert_eq!(r.generation_id, 1);
        assert_eq!(r.leader, ids[0]);
        assert_eq!(r.member_id, *id);
        assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
        assert_eq!(r.protocol_name.as_deref(), Some("range"));
        assert!(!r.skip_assignment);
    }
    let leader_view = &responses[&ids[0]].members;
    assert_eq!(leader_view.len(), 3);
    for member in leader_view {
        assert!(ids.contains(&member.member_id));
        assert_eq!(member.metadata, subscription(&["orders"]));
    }
    assert!(responses[&ids[1]].members.is_empty());
    assert!(responses[&ids[2]].members.is_empty());
    assert_eq!(group.state(), GroupState::CompletingRebalance);
    assert_eq!(group.generation_id(), 1);
    assert_eq!(group.leader(), Some(ids[0].as_str()));
}

/// The leader's SyncGroup hands every parked member its assignment (members
/// the leader left out get an empty one) after a PersistGroup, and makes the
/// group Stable; a SyncGroup in Stable is answered at once.
#[test]
fn leader_sync_hands_out_assignments() {
    let (mut group, ids, now) = completing_group(3);
    let (outcome, effects) = group.sync(sync_request(&ids[1], 1, vec![]), now);
    assert_eq!(
        outcome,
        SyncOutcome::Wait {
            member_id: ids[1].clone()
        }
    );
    assert!(effects.is_empty());
    assert_eq!(group.state(), GroupState::CompletingRebalance);

    // The leader assigns to itself and ids[1] only.
    let assignments = vec![
        (ids[0].clone(), assignment_for(&ids[0])),
        (ids[1].clone(), assignment_for(&ids[1])),
        ("not-a-member".to_string(), Bytes::from_static(b"ignored")),
    ];
    let (outcome, effects) = group.sync(sync_request(&ids[0], 1, assignments), now);
    assert_eq!(
        outcome,
        SyncOutcome::Wait {
            member_id: ids[0].clone()
        }
    );
    assert_eq!(
        effects[0],
        Effect::PersistGroup,
        "responses wait for the persist"
    );
    let responses = sync_responses(&effects);
    assert_eq!(effects.len(), 3);
    assert_eq!(responses[&ids[0]].assignment, assignment_for(&ids[0]));
    assert_eq!(responses[&ids[1]].assignment, assignment_for(&ids[1]));
    assert_eq!(responses[&ids[1]].protocol_name.as_deref(), Some("range"));
    assert_eq!(group.state(), GroupState::Stable);

    // The snapshot persisted holds every assignment (the missing one empty).
    let snapshot = group.snapshot(now);
    assert_eq!(snapshot.generation_id, 1);
    assert_eq!(snapshot.leader.as_deref(), Some(ids[0].as_str()));
    assert_eq!(snapshot.members.len(), 3);
    let stored: HashMap<_, _> = snapshot
        .members
        .iter()
        .map(|m| (m.member_id.clone(), m.assignment.clone()))
        .collect();
    assert_eq!(stored[&ids[2]], Bytes::new());

    // The third member syncs late: Stable answers at once.
    let result = sync_responded(group.sync(sync_request(&ids[2], 1, vec![]), now + 10).0);
    assert_eq!(result.error_code(), NONE);
    assert_eq!(result.assignment, Bytes::new());
    assert_eq!(result.protocol_type.as_deref(), Some("consumer"));
}

/// A fourth member joining a Stable group starts a rebalance: the others'
/// heartbeats get REBALANCE_IN_PROGRESS; once all three rejoin, the join
/// completes at once (no waiting for the timeout) with generation 2 and four
/// members, the old leader still leading.
#[test]
fn fourth_member_rebalances_the_group() {
    let (mut group, ids, now) = stable_group(3);
    let d = wait_id(group.join(join_request("", "d"), now).0);
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    for id in &ids {
        assert_eq!(
            kafka(group.heartbeat(id, None, 1, now + 100)).0,
            code(ResponseError::RebalanceInProgress)
        );
    }
    // A sync now is told to rejoin too.
    let r = sync_responded(group.sync(sync_request(&ids[1], 1, vec![]), now + 100).0);
    assert_eq!(r.error_code(), code(ResponseError::RebalanceInProgress));

    let mut effects = Vec::new();
    for id in &ids[..2] {
        let (outcome, fx) = group.join(join_request(id, "x"), now + 200);
        assert_eq!(wait_id(outcome), *id);
        assert!(fx.is_empty());
    }
    let (outcome, fx) = group.join(join_request(&ids[2], "x"), now + 300);
    let last = responded(outcome);
    effects.extend(fx);
    let mut responses = join_responses(&effects);
    responses.insert(ids[2].clone(), last);
    assert_eq!(responses.len(), 4);
    assert_eq!(group.generation_id(), 2);
    assert_eq!(group.state(), GroupState::CompletingRebalance);
    assert_eq!(
        responses[&ids[0]].members.len(),
        4,
        "the leader sees all four"
    );
    assert_eq!(responses[&d].leader, ids[0]);
    assert!(responses
        .values()
        .all(|r| r.generation_id == 2 && r.error_code() == NONE));
    // The old generation is over.
    assert_eq!(
        kafka(group.heartbeat(&ids[1], None, 1, now + 400)).0,
        code(ResponseError::IllegalGeneration)
    );
    assert_eq!(kafka(group.heartbeat(&ids[1], None, 2, now + 400)).0, NONE);
}

/// A member leaving a Stable group of four starts a rebalance; the three
/// left rejoin and form generation 2 without it.
#[test]
fn leaving_member_rebalances_the_rest() {
    let (mut group, ids, now) = stable_group(4);
    let (errors, effects) = kafka(group.leave(vec![(ids[2].clone(), None)], now));
    assert_eq!(errors, vec![NONE]);
    assert!(effects.is_empty());
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    assert!(!group.is_member(&ids[2]));

    let rest: Vec<&String> = ids.iter().filter(|id| **id != ids[2]).collect();
    let mut responses = HashMap::new();
    for id in &rest {
        let (outcome, fx) = group.join(join_request(id, "x"), now + 10);
        responses.extend(join_responses(&fx));
        if let JoinOutcome::Respond(r) = outcome {
            responses.insert(r.member_id.clone(), r);
        }
    }
    assert_eq!(responses.len(), 3);
    assert_eq!(responses[ids[0].as_str()].members.len(), 3);
    assert_eq!(group.generation_id(), 2);
    // Leaving again: unknown.
    assert_eq!(
        kafka(group.leave(vec![(ids[2].clone(), None)], now + 20)).0,
        vec![code(ResponseError::UnknownMemberId)]
    );
}

/// A member silent past its session timeout is removed by `tick` exactly at
/// its deadline (the others heartbeat), and the group rebalances without it.
#[test]
fn session_expiry_removes_member() {
    let (mut group, ids, now) = stable_group(3);
    let deadline = now + i64::from(SESSION_MS);
    assert_eq!(group.next_deadline(), Some(deadline));
    for id in [&ids[0], &ids[2]] {
        assert_eq!(kafka(group.heartbeat(id, None, 1, now + 5_000)).0, NONE);
    }
    assert_eq!(
        group.next_deadline(),
        Some(deadline),
        "ids[1] is the first due"
    );
    assert!(group.tick(deadline - 1).is_empty());
    assert!(group.is_member(&ids[1]));
    let effects = group.tick(deadline);
    assert!(effects.is_empty());
    assert!(!group.is_member(&ids[1]));
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    assert_eq!(
        kafka(group.heartbeat(&ids[1], None, 1, deadline)).0,
        code(ResponseError::UnknownMemberId)
    );

    wait_id(group.join(join_request(&ids[0], "x"), deadline + 1).0);
    let r = responded(group.join(join_request(&ids[2], "x"), deadline + 2).0);
    assert_eq!(r.generation_id, 2);
    assert_eq!(group.members().len(), 2);
}

/// At the rebalance timeout, dynamic members that did not rejoin are removed
/// and get nothing; the rejoined ones form the next generation. A parked
/// member is not expired by its session timeout meanwhile.
#[test]
fn rebalance_timeout_removes_stragglers() {
    let (mut group, ids, now) = stable_group(3);
    // The leader rejoining forces a rebalance.
    wait_id(group.join(join_request(&ids[0], "a"), now).0);
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    wait_id(group.join(join_request(&ids[1], "b"), now + 1_000).0);
    // ids[2] keeps heartbeating but never rejoins.
    for t in [8_000, 16_000, 24_000] {
        assert!(advance(&mut group, now + t).is_empty());
        assert_eq!(
            kafka(group.heartbeat(&ids[2], None, 1, now + t)).0,
            code(ResponseError::RebalanceInProgress)
        );
    }
    let timeout = now + i64::from(REBALANCE_MS);
    assert_eq!(group.next_deadline(), Some(timeout));
    let effects = advance(&mut group, timeout);
    let responses = join_responses(&effects);
    assert_eq!(responses.len(), 2);
    assert!(!responses.contains_key(&ids[2]));
    assert!(!group.is_member(&ids[2]));
    assert_eq!(responses[&ids[0]].members.len(), 2);
    assert_eq!(group.generation_id(), 2);
    assert_eq!(
        kafka(group.heartbeat(&ids[2], None, 2, timeout)).0,
        code(ResponseError::UnknownMemberId)
    );
}

/// The initial delay holds the first generation: even a lone member waits
/// `initial_rebalance_delay_ms`; a member joining during a window earns one
/// more window; and the windows never add up past the rebalance timeout.
#[test]
fn initial_delay_holds_first_generation() {
    // A lone member: everyone has joined, still the delay holds.
    let mut group = Group::new("g".to_string(), config());
    let a = wait_id(group.join(join_request("", "a"), T0).0);
    assert_eq!(group.next_deadline(), Some(T0 + INITIAL_DELAY_MS));
    assert!(advance(&mut group, T0 + INITIAL_DELAY_MS - 1).is_empty());
    let responses = join_responses(&advance(&mut group, T0 + INITIAL_DELAY_MS));
    assert_eq!(responses[&a].generation_id, 1);

    // Members keep arriving: one window more each time.
    let mut group = Group::new("g".to_string(), config());
    wait_id(group.join(join_request("", "a"), T0).0);
    wait_id(group.join(join_request("", "b"), T0 + 1_000).0);
    assert!(
        advance(&mut group, T0 + 3_000).is_empty(),
        "b joined: extended"
    );
    assert_eq!(group.next_deadline(), Some(T0 + 6_000));
    wait_id(group.join(join_request("", "c"), T0 + 5_000).0);
    assert!(
        advance(&mut group, T0 + 6_000).is_empty(),
        "c joined: extended"
    );
    assert_eq!(group.next_deadline(), Some(T0 + 9_000));
    let responses = join_responses(&advance(&mut group, T0 + 9_000));
    assert_eq!(responses.len(), 3);
    assert_eq!(group.generation_id(), 1);

    // Capped by the rebalance timeout (5 s here).
    let mut group = Group::new("g".to_string(), config());
    let short = |member: &str, client: &str| JoinRequest {
        rebalance_timeout_ms: 5_000,
        ..join_request(member, client)
    };
    wait_id(group.join(short("", "a"), T0).0);
    wait_id(group.join(short("", "b"), T0 + 1_000).0);
    assert!(advance(&mut group, T0 + 3_000).is_empty());
    assert_eq!(
        group.next_deadline(),
        Some(T0 + 5_000),
        "only 2 s were left"
    );
    wait_id(group.join(short("", "c"), T0 + 4_000).0);
    let responses = join_responses(&advance(&mut group, T0 + 5_000));
    assert_eq!(responses.len(), 3, "no time left: completes despite c");
}

/// JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED with
/// an id (`<client id>-<uuid>`) and is only pending; its rejoin with that id
/// adds it. While pending it holds a rebalance back; a pending member that
/// never returns expires after its session timeout.
#[test]
fn member_id_required_flow() {
    let mut group = Group::new("g".to_string(), config());
    let request = JoinRequest {
        require_known_member_id: true,
        ..join_request("", "app")
    };
    let r = responded(group.join(request.clone(), T0).0);
    assert_eq!(r.error_code(), code(ResponseError::MemberIdRequired));
    assert_eq!(r.generation_id, -1);
    assert!(r.member_id.starts_with("app-"));
    assert_eq!(group.state(), GroupState::Empty);
    assert!(!group.is_member(&r.member_id));
    assert_eq!(group.next_deadline(), Some(T0 + i64::from(SESSION_MS)));

    let id = wait_id(
        group
            .join(
                JoinRequest {
                    member_id: r.member_id.clone(),
                    ..request.clone()
                },
                T0 + 10,
            )
            .0,
    );
    assert_eq!(id, r.member_id);
    assert!(group.is_member(&id));
    let responses = join_responses(&advance(&mut group, T0 + 10 + INITIAL_DELAY_MS));
    assert_eq!(responses[&id].generation_id, 1);

    // A pending member holds the next rebalance back until it comes back...
    let now = T0 + 10_000;
    group.sync(sync_request(&id, 1, vec![]), now);
    assert_eq!(group.state(), GroupState::Stable);
    assert_eq!(kafka(group.heartbeat(&id, None, 1, now)).0, NONE);
    let other = responded(
        group
            .join(
                JoinRequest {
                    client_id: "other".into(),
                    ..request.clone()
                },
                now,
            )
            .0,
    );
    assert_eq!(other.error_code(), code(ResponseError::MemberIdRequired));
    wait_id(
        group
            .join(
                JoinRequest {
                    member_id: id.clone(),
                    ..request.clone()
                },
                now,
            )
            .0,
    );
    assert_eq!(
        group.state(),
        GroupState::PreparingRebalance,
        "waits for the pending member"
    );
    let r = responded(
        group
            .join(
                JoinRequest {
                    member_id: other.member_id.clone(),
                    ..request.clone()
                },
                now + 5,
            )
            .0,
    );
    assert_eq!(r.generation_id, 2);
    assert_eq!(group.members().len(), 2);

    // ...or until it expires.
    let now = now + 100;
    let ghost = responded(
        group
            .join(
                JoinRequest {
                    client_id: "ghost".into(),
                    ..request.clone()
                },
                now,
            )
            .0,
    );
    let ids: Vec<String> = group.members().into_iter().map(|m| m.member_id).collect();
    let leader = group.leader().unwrap().to_string();
    group.sync(sync_request(&leader, 2, vec![]), now);
    assert_eq!(group.state(), GroupState::Stable);
    for member in &ids {
        assert_eq!(kafka(group.heartbeat(member, None, 2, now)).0, NONE);
    }
    wait_id(
        group
            .join(
                JoinRequest {
                    member_id: leader.clone(),
                    ..request.clone()
                },
                now,
            )
            .0,
    );
    let follower = ids.iter().find(|m| **m != leader).unwrap();
    wait_id(
        group
            .join(
                JoinRequest {
                    member_id: follower.clone(),
                    ..request.clone()
                },
                now,
            )
            .0,
    );
    let expiry = now + i64::from(SESSION_MS);
    assert_eq!(group.next_deadline(), Some(expiry));
    let responses = join_responses(&advance(&mut group, expiry));
    assert_eq!(responses.len(), 2);
    assert_eq!(group.generation_id(), 3);
    let late = responded(
        group
            .join(
                JoinRequest {
                    member_id: ghost.member_id,
                    ..request
                },
                expiry + 1,
            )
            .0,
    );
    assert_eq!(late.error_code(), code(ResponseError::UnknownMemberId));
}

/// A static member restarting within its session timeout (JoinGroup with
/// member id "" and its instance id) gets a new member id, the current
/// generation and its old assignment, with no rebalance; its answer waits
/// for the persist of the new id; the old member id is fenced. Being the
/// leader, it is told the old leader id so it does not run an assignment.
#[test]
fn static_member_restart_does_not_rebalance() {
    let mut group = Group::new("g".to_string(), config());
    let s1 = wait_id(group.join(static_request("", "i1"), T0).0);
    let s2 = wait_id(group.join(static_request("", "i2"), T0).0);
    assert!(
        s1.starts_with("i1-"),
        "static member id is <instance id>-<uuid>"
    );
    let now = T0 + 2 * INITIAL_DELAY_MS;
    assert_eq!(join_responses(&advance(&mut group, now)).len(), 2);
    let sync = |member: &str, instance: &str, generation: i32, assignments| SyncRequest {
        group_instance_id: Some(instance.to_string()),
        ..sync_request(member, generation, assignments)
    };
    group.sync(sync(&s2, "i2", 1, vec![]), now);
    let assignments = vec![
        (s1.clone(), assignment_for("i1")),
        (s2.clone(), assignment_for("i2")),
    ];
    group.sync(sync(&s1, "i1", 1, assignments), now);
    assert_eq!(group.state(), GroupState::Stable);
    assert_eq!(group.leader(), Some(s1.as_str()));

    // s1 restarts 2 s later.
    let synced_at = now;
    let now = now + 2_000;
    let (outcome, effects) = group.join(static_request("", "i1"), now);
    let new_id = wait_id(outcome);
    assert_ne!(new_id, s1);
    assert_eq!(
        effects[0],
        Effect::PersistGroup,
        "the new id is durable before the answer"
    );
    let r = &join_responses(&effects)[&new_id];
    assert_eq!(r.error_code(), NONE);
    assert_eq!(r.generation_id, 1);
    assert_eq!(
        r.leader, s1,
        "the old leader id: the restarted leader does not assign"
    );
    assert!(r.members.is_empty());
    assert_eq!(group.state(), GroupState::Stable);
    assert_eq!(group.generation_id(), 1);
    assert_eq!(group.leader(), Some(new_id.as_str()));
    assert!(group.is_member(&new_id) && !group.is_member(&s1));

    let result = sync_responded(group.sync(sync(&new_id, "i1", 1, vec![]), now).0);
    assert_eq!(result.assignment, assignment_for("i1"));

    // The old incarnation is fenced everywhere.
    let fenced = code(ResponseError::FencedInstanceId);
    assert_eq!(kafka(group.heartbeat(&s1, Some("i1"), 1, now)).0, fenced);
    assert_eq!(
        kafka(group.validate_offset_commit(&s1, Some("i1"), 1, now)),
        Err(fenced)
    );
    assert_eq!(
        sync_responded(group.sync(sync(&s1, "i1", 1, vec![]), now).0).error_code(),
        fenced
    );
    assert_eq!(
        responded(group.join(static_request(&s1, "i1"), now).0).error_code(),
        fenced
    );
    assert_eq!(
        kafka(group.leave(vec![(s1.clone(), Some("i1".into()))], now)).0,
        vec![fenced]
    );
    assert_eq!(group.state(), GroupState::Stable);

    // A static member that stops is removed only at its session timeout.
    assert_eq!(
        kafka(group.heartbeat(&new_id, Some("i1"), 1, now + 5_000)).0,
        NONE
    );
    let s2_deadline = synced_at + i64::from(SESSION_MS); // s2 was last heard at its sync
    assert_eq!(group.next_deadline(), Some(s2_deadline));
    advance(&mut group, s2_deadline - 1);
    assert!(group.is_member(&s2));
    advance(&mut group, s2_deadline);
    assert!(!group.is_member(&s2));
    assert_eq!(group.state(), GroupState::PreparingRebalance);
}

/// A static member leaving by instance id alone (LeaveGroup v3+, member id
/// "") is removed and the group rebalances; an unknown instance is
/// UNKNOWN_MEMBER_ID.
#[test]
fn static_member_leaves_by_instance_id() {
    let mut group = Group::new("g".to_string(), config());
    let s1 = wait_id(group.join(static_request("", "i1"), T0).0);
    let s2 = wait_id(group.join(static_request("", "i2"), T0).0);
    advance(&mut group, T0 + 2 * INITIAL_DELAY_MS);
    let (errors, _) = kafka(group.leave(
        vec![
            (String::new(), Some("i2".into())),
            (String::new(), Some("nobody".into())),
        ],
        T0 + 7_000,
    ));
    assert_eq!(errors, vec![NONE, code(ResponseError::UnknownMemberId)]);
    assert!(!group.is_member(&s2));
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    let r = responded(group.join(static_request(&s1, "i1"), T0 + 7_001).0);
    assert_eq!(r.generation_id, 2);
}

/// INCONSISTENT_GROUP_PROTOCOL: an empty protocol type or list, a protocol
/// type other than the group's, protocols sharing nothing with every member,
/// or a SyncGroup naming another protocol.
#[test]
fn inconsistent_group_protocol() {
    let inconsistent = code(ResponseError::InconsistentGroupProtocol);
    let mut group = Group::new("g".to_string(), config());
    let empty_list = JoinRequest {
        protocols: vec![],
        ..join_request("", "x")
    };
    assert_eq!(
        responded(group.join(empty_list.clone(), T0).0).error_code(),
        inconsistent
    );
    let empty_type = JoinRequest {
        protocol_type: String::new(),
        ..join_request("", "x")
    };
    assert_eq!(
        responded(group.join(empty_type, T0).0).error_code(),
        inconsistent
    );
    assert_eq!(group.state(), GroupState::Empty);

    let (mut group, ids, now) = stable_group(2);
    let connect = JoinRequest {
        protocol_type: "connect".into(),
        ..join_request("", "x")
    };
    let r = responded(group.join(connect, now).0);
    assert_eq!(
        (r.error_code(), r.member_id.as_str(), r.generation_id),
        (inconsistent, "", -1)
    );
    let other = JoinRequest {
        protocols: vec![("roundrobin".into(), subscription(&["orders"]))],
        ..join_request("", "x")
    };
    assert_eq!(
        responded(group.join(other, now).0).error_code(),
        inconsistent
    );
    assert_eq!(
        responded(group.join(empty_list, now).0).error_code(),
        inconsistent
    );
    // A known member too.
    let r = responded(
        group
            .join(
                JoinRequest {
                    protocols: vec![],
                    ..join_request(&ids[1], "x")
                },
                now,
            )
            .0,
    );
    assert_eq!(
        (r.error_code(), r.member_id.as_str()),
        (inconsistent, ids[1].as_str())
    );
    // Sharing one protocol is enough.
    let both = JoinRequest {
        protocols: vec![
            ("roundrobin".into(), subscription(&["orders"])),
            ("range".into(), subscription(&["orders"])),
        ],
        ..join_request("", "x")
    };
    wait_id(group.join(both, now).0);

    let (mut group, ids, now) = stable_group(2);
    let wrong_name = SyncRequest {
        protocol_name: Some("roundrobin".into()),
        ..sync_request(&ids[1], 1, vec![])
    };
    assert_eq!(
        sync_responded(group.sync(wrong_name, now).0).error_code(),
        inconsistent
    );
    let wrong_type = SyncRequest {
        protocol_type: Some("connect".into()),
        ..sync_request(&ids[1], 1, vec![])
    };
    assert_eq!(
        sync_responded(group.sync(wrong_type, now).0).error_code(),
        inconsistent
    );
    let unnamed = SyncRequest {
        protocol_type: None,
        protocol_name: None,
        ..sync_request(&ids[1], 1, vec![])
    };
    assert_eq!(
        sync_responded(group.sync(unnamed, now).0).error_code(),
        NONE
    );
}

/// The protocol is the one every member supports that most members list
/// first.
#[test]
fn protocol_is_chosen_by_votes() {
    let mut group = Group::new("g".to_string(), config());
    let prefs = |first: &str, second: &str| {
        vec![
            (first.to_string(), Bytes::from(first.to_string())),
            (second.to_string(), Bytes::from(second.to_string())),
        ]
    };
    for (client, protocols) in [
        ("a", prefs("range", "roundrobin")),
        ("b", prefs("roundrobin", "range")),
        ("c", prefs("roundrobin", "range")),
    ] {
        wait_id(
            group
                .join(
                    JoinRequest {
                        protocols,
                        ..join_request("", client)
                    },
                    T0,
                )
                .0,
        );
    }
    let responses = join_responses(&advance(&mut group, T0 + 2 * INITIAL_DELAY_MS));
    assert!(responses
        .values()
        .all(|r| r.protocol_name.as_deref() == Some("roundrobin")));
    let leader = group.leader().unwrap();
    assert!(responses[leader]
        .members
        .iter()
        .all(|m| m.metadata == "roundrobin"));
}

/// A session timeout outside [group.min.session.timeout.ms,
/// group.max.session.timeout.ms] is INVALID_SESSION_TIMEOUT; the bounds
/// themselves are fine.
#[test]
fn invalid_session_timeout() {
    let mut group = Group::new("g".to_string(), config());
    for (timeout, expected) in [
        (5_999, code(ResponseError::InvalidSessionTimeout)),
        (1_800_001, code(ResponseError::InvalidSessionTimeout)),
    ] {
        let r = responded(
            group
                .join(
                    JoinRequest {
                        session_timeout_ms: timeout,
                        ..join_request("", "x")
                    },
                    T0,
                )
                .0,
        );
        assert_eq!((r.error_code(), r.generation_id), (expected, -1));
    }
    assert_eq!(group.state(), GroupState::Empty);
    for timeout in [6_000, 1_800_000] {
        wait_id(
            group
                .join(
                    JoinRequest {
                        session_timeout_ms: timeout,
                        ..join_request("", "x")
                    },
                    T0,
                )
                .0,
        );
    }
}

/// group.max.size: a new member joining a full group gets
/// GROUP_MAX_SIZE_REACHED (member id ""), members already in it rejoin
/// fine; while rebalancing, the limit counts members that rejoined.
#[test]
fn group_max_size_reached() {
    let full = code(ResponseError::GroupMaxSizeReached);
    let mut group = Group::new(
        "g".to_string(),
        GroupConfig {
            max_size: 2,
            ..config()
        },
    );
    let a = wait_id(group.join(join_request("", "a"), T0).0);
    let b = wait_id(group.join(join_request("", "b"), T0).0);
    let r = responded(group.join(join_request("", "c"), T0).0);
    assert_eq!((r.error_code(), r.member_id.as_str()), (full, ""));
    advance(&mut group, T0 + 2 * INITIAL_DELAY_MS);
    assert_eq!(group.members().len(), 2);
    let now = T0 + 7_000;
    assert_eq!(
        responded(group.join(join_request("", "c"), now).0).error_code(),
        full
    );
    assert_eq!(
        responded(
            group
                .join(
                    JoinRequest {
                        require_known_member_id: true,
                        ..join_request("", "c")
                    },
                    now
                )
                .0
        )
        .error_code(),
        full
    );
    // b rejoining (same metadata, CompletingRebalance) is accepted.
    assert_eq!(
        responded(group.join(join_request(&b, "b"), now).0).generation_id,
        1
    );
    // a rejoins with new metadata: a rebalance, where the limit counts
    // rejoined members. c takes the second slot, so b, rejoining last, is
    // shed, and the rebalance completes with a and c.
    let changed = JoinRequest {
        protocols: vec![("range".into(), subscription(&["orders", "refunds"]))],
        ..join_request(&a, "a")
    };
    wait_id(group.join(changed, now).0);
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    let c = wait_id(group.join(join_request("", "c"), now).0);
    let (outcome, effects) = group.join(join_request(&b, "b"), now);
    assert_eq!(responded(outcome).error_code(), full);
    assert!(!group.is_member(&b));
    let responses = join_responses(&effects);
    assert_eq!(responses[&a].generation_id, 2);
    assert_eq!(responses[&c].generation_id, 2);
}

/// A generation other than the group's is ILLEGAL_GENERATION for
/// Heartbeat, SyncGroup and OffsetCommit.
#[test]
fn illegal_generation() {
    let illegal = code(ResponseError::IllegalGeneration);
    let (mut group, ids, now) = stable_group(2);
    assert_eq!(kafka(group.heartbeat(&ids[1], None, 0, now)).0, illegal);
    assert_eq!(kafka(group.heartbeat(&ids[1], None, 2, now)).0, illegal);
    assert_eq!(
        sync_responded(group.sync(sync_request(&ids[1], 7, vec![]), now).0).error_code(),
        illegal
    );
    assert_eq!(
        kafka(group.validate_offset_commit(&ids[1], None, 0, now)),
        Err(illegal)
    );
    // Unknown members are told so first.
    assert_eq!(
        kafka(group.heartbeat("nobody", None, 0, now)).0,
        code(ResponseError::UnknownMemberId)
    );
}

/// OffsetCommit: a simple commit (generation -1) only while the group is
/// Empty, whatever member id it names (Kafka's `validateOffsetCommit`: an
/// admin client or a consumer without group management); a member needs
/// the current generation; refused while
/// CompletingRebalance, allowed while PreparingRebalance (as Kafka: the
/// consumer commits before it rejoins); a commit keeps the member alive.
#[test]
fn offset_commit_rules() {
    let mut group = Group::new("g".to_string(), config());
    assert_eq!(
        kafka(group.validate_offset_commit("", None, -1, T0)),
        Ok(())
    );
    assert_eq!(
        kafka(group.validate_offset_commit("x", None, -1, T0)),
        Ok(())
    );
    assert_eq!(
        kafka(group.validate_offset_commit("x", None, 0, T0)),
        Err(code(ResponseError::UnknownMemberId))
    );

    let (mut group, ids, now) = completing_group(2);
    assert_eq!(
        kafka(group.validate_offset_commit(&ids[0], None, 1, now)),
        Err(code(ResponseError::RebalanceInProgress))
    );
    assert_eq!(
        kafka(group.validate_offset_commit("", None, -1, now)),
        Err(code(ResponseError::UnknownMemberId))
    );

    let (mut group, ids, now) = stable_group(2);
    assert_eq!(
        kafka(group.validate_offset_commit(&ids[1], None, 1, now)),
        Ok(())
    );
    assert_eq!(
        kafka(group.validate_offset_commit("nobody", None, 1, now)),
        Err(code(ResponseError::UnknownMemberId))
    );
    assert_eq!(
        kafka(group.validate_offset_commit("", None, -1, now)),
        Err(code(ResponseError::UnknownMemberId))
    );
    // Commits refresh the session like heartbeats.
    for t in [8_000, 16_000] {
        for id in &ids {
            assert_eq!(
                kafka(group.validate_offset_commit(id, None, 1, now + t)),
                Ok(())
            );
        }
    }
    advance(&mut group, now + 20_000);
    assert_eq!(group.state(), GroupState::Stable);
    assert_eq!(group.members().len(), 2);

    // PreparingRebalance: the current generation may still commit.
    let now = now + 20_000;
    wait_id(group.join(join_request("", "c"), now).0);
    assert_eq!(
        kafka(group.validate_offset_commit(&ids[1], None, 1, now)),
        Ok(())
    );

    // Everyone leaves: Empty again, simple commits allowed.
    let leaving = group
        .members()
        .into_iter()
        .map(|m| (m.member_id, None))
        .collect();
    let (_, effects) = kafka(group.leave(leaving, now));
    assert!(effects.contains(&Effect::PersistGroup));
    assert_eq!(group.state(), GroupState::Empty);
    assert_eq!(
        kafka(group.validate_offset_commit("", None, -1, now)),
        Ok(())
    );
    assert!(kafka(group.delete()).is_ok());
    assert_eq!(
        kafka(group.validate_offset_commit("", None, -1, now)),
        Err(code(ResponseError::CoordinatorNotAvailable))
    );
}

/// DeleteGroups: refused with NON_EMPTY_GROUP while the group has members;
/// an Empty group becomes Dead (no timers, joins refused); deleting it
/// again is GROUP_ID_NOT_FOUND.
#[test]
fn delete_rules() {
    let (mut group, ids, now) = stable_group(1);
    assert_eq!(
        kafka(group.delete()),
        Err(code(ResponseError::NonEmptyGroup))
    );
    wait_id(group.join(join_request("", "b"), now).0);
    assert_eq!(
        kafka(group.delete()),
        Err(code(ResponseError::NonEmptyGroup))
    );

    let mut group = Group::new("g".to_string(), config());
    // A pending member does not make the group non-empty.
    let pending = JoinRequest {
        require_known_member_id: true,
        ..join_request("", "p")
    };
    responded(group.join(pending, T0).0);
    assert_eq!(kafka(group.delete()), Ok(()));
    assert_eq!(group.state(), GroupState::Dead);
    assert_eq!(group.next_deadline(), None);
    assert_eq!(
        kafka(group.delete()),
        Err(code(ResponseError::GroupIdNotFound))
    );
    let r = responded(group.join(join_request("", "x"), T0).0);
    assert_eq!(r.error_code(), code(ResponseError::CoordinatorNotAvailable));
    assert_eq!(
        kafka(group.heartbeat(&ids[0], None, 1, T0)).0,
        code(ResponseError::CoordinatorNotAvailable)
    );
}

/// The last member leaving empties the group: generation + 1, no protocol,
/// and the Empty group is persisted.
#[test]
fn last_member_leaving_empties_the_group() {
    let (mut group, ids, now) = stable_group(2);
    let (errors, effects) =
        kafka(group.leave(ids.iter().map(|id| (id.clone(), None)).collect(), now));
    assert_eq!(errors, vec![NONE, NONE]);
    assert_eq!(effects, vec![Effect::PersistGroup]);
    assert_eq!(group.state(), GroupState::Empty);
    assert_eq!(group.generation_id(), 2);
    assert_eq!(group.protocol_name(), None);
    assert_eq!(group.protocol_type(), Some("consumer"));
    assert_eq!(group.leader(), None);
    assert_eq!(group.next_deadline(), None);
    let snapshot = group.snapshot(now + 5);
    assert!(snapshot.members.is_empty());
    assert_eq!(snapshot.current_state_timestamp_ms, now);
}

/// The leader leaving hands leadership to another member, and the next
/// generation is led by a member that rejoined.
#[test]
fn leader_leaving_hands_over_leadership() {
    let (mut group, ids, now) = stable_group(3);
    kafka(group.leave(vec![(ids[0].clone(), None)], now));
    let leader = group.leader().unwrap().to_string();
    assert!(group.is_member(&leader));
    // Only ids[2] rejoins before the timeout: it must lead.
    wait_id(group.join(join_request(&ids[2], "c"), now).0);
    for t in [8_000, 16_000, 24_000] {
        advance(&mut group, now + t);
        kafka(group.heartbeat(&ids[1], None, 1, now + t));
    }
    let responses = join_responses(&advance(&mut group, now + i64::from(REBALANCE_MS)));
    assert_eq!(responses[&ids[2]].leader, ids[2]);
    assert_eq!(group.leader(), Some(ids[2].as_str()));
    assert_eq!(group.members().len(), 1);
}

/// A parked JoinGroup of a member removed by LeaveGroup is answered with
/// UNKNOWN_MEMBER_ID, as is a new member whose first rebalance takes longer
/// than five minutes.
#[test]
fn parked_requests_of_removed_members_are_answered() {
    let (mut group, ids, now) = stable_group(2);
    // Changed metadata: rebalance; ids[1] parked.
    let changed = JoinRequest {
        protocols: vec![("range".into(), subscription(&["orders", "refunds"]))],
        ..join_request(&ids[1], "b")
    };
    wait_id(group.join(changed, now).0);
    let (_, effects) = kafka(group.leave(vec![(ids[1].clone(), None)], now));
    assert_eq!(
        join_responses(&effects)[&ids[1]].error_code(),
        code(ResponseError::UnknownMemberId)
    );

    // A static member never rejoins, so the rebalance outlives the new
    // member's five minutes: it is dropped, its join answered.
    let mut group = Group::new(
        "g".to_string(),
        GroupConfig {
            max_session_timeout_ms: 3_600_000,
            ..config()
        },
    );
    let long = |member: &str, instance: &str| JoinRequest {
        session_timeout_ms: 3_600_000,
        rebalance_timeout_ms: 3_600_000,
        ..static_request(member, instance)
    };
    let s = wait_id(group.join(long("", "s"), T0).0);
    advance(&mut group, T0 + INITIAL_DELAY_MS);
    group.sync(
        SyncRequest {
            group_instance_id: Some("s".into()),
            ..sync_request(&s, 1, vec![])
        },
        T0 + INITIAL_DELAY_MS,
    );
    assert_eq!(group.state(), GroupState::Stable);
    let newcomer = wait_id(group.join(join_request("", "n"), T0 + 4_000).0);
    let effects = advance(&mut group, T0 + 4_000 + 300_000);
    assert_eq!(
        join_responses(&effects)[&newcomer].error_code(),
        code(ResponseError::UnknownMemberId)
    );
    assert!(!group.is_member(&newcomer));
}

/// Members that never send SyncGroup within the rebalance timeout after the
/// join completed are removed, and the group rebalances without them.
#[test]
fn sync_timeout_removes_silent_members() {
    let (mut group, ids, now) = completing_group(3);
    group.sync(sync_request(&ids[1], 1, vec![]), now + 1);
    let (_, effects) = group.sync(sync_request(&ids[0], 1, vec![]), now + 2);
    assert_eq!(sync_responses(&effects).len(), 2);
    assert_eq!(group.state(), GroupState::Stable);
    // ids[2] heartbeats but never syncs.
    for t in [8_000, 16_000, 24_000] {
        advance(&mut group, now + t);
        for id in &ids {
            kafka(group.heartbeat(id, None, 1, now + t));
        }
    }
    let deadline = now + i64::from(REBALANCE_MS);
    assert_eq!(group.next_deadline(), Some(deadline));
    advance(&mut group, deadline);
    assert!(!group.is_member(&ids[2]));
    assert_eq!(group.state(), GroupState::PreparingRebalance);
}

/// An unchanged follower rejoining a Stable group gets the current
/// generation at once; rejoining with the same metadata in
/// CompletingRebalance repeats that generation's answer (with the members
/// for the leader).
#[test]
fn unchanged_rejoin_gets_current_generation() {
    let (mut group, ids, now) = completing_group(2);
    let r = responded(group.join(join_request(&ids[0], "a"), now).0);
    assert_eq!((r.generation_id, r.members.len()), (1, 2));
    let r = responded(group.join(join_request(&ids[1], "b"), now).0);
    assert_eq!((r.generation_id, r.members.len()), (1, 0));

    let (mut group, ids, now) = stable_group(2);
    let r = responded(group.join(join_request(&ids[1], "b"), now).0);
    assert_eq!(
        (r.error_code(), r.generation_id, r.leader.as_str()),
        (NONE, 1, ids[0].as_str())
    );
    assert_eq!(group.state(), GroupState::Stable);
}

/// `next_deadline` is exact: ticking a millisecond early does nothing,
/// ticking at it does something, and afterwards nothing is due.
#[test]
fn next_deadline_is_exact() {
    let mut group = Group::new("g".to_string(), config());
    assert_eq!(group.next_deadline(), None);
    let (mut group, ids, mut now) = {
        let a = wait_id(group.join(join_request("", "a"), T0).0);
        wait_id(group.join(join_request("", "b"), T0 + 500).0);
        (group, vec![a], T0)
    };
    let mut steps = 0;
    while let Some(deadline) = group.next_deadline() {
        let before = format!("{:?}", group);
        assert!(group.tick(deadline - 1).is_empty());
        assert_eq!(format!("{:?}", group), before, "nothing happens early");
        group.tick(deadline);
        assert_ne!(format!("{:?}", group), before, "something happens on time");
        assert!(group.next_deadline().is_none_or(|next| next > deadline));
        now = deadline;
        steps += 1;
        assert!(steps < 20);
    }
    // Initial window, extension, then both sessions expire (no heartbeats),
    // emptying the group after a rebalance.
    assert_eq!(group.state(), GroupState::Empty);
    assert!(!group.is_member(&ids[0]));
    assert!(now > T0);
}

/// restore() rebuilds a group from its persisted snapshot: Stable with its
/// members, generation, leader, protocol and assignments, their sessions
/// starting now; Empty without members; a group over group.max.size
/// rebalances. Snapshot -> restore -> snapshot is the identity.
#[test]
fn restore_from_snapshot() {
    let (group, ids, now) = stable_group(2);
    let snapshot = group.snapshot(now);
    let later = now + 60_000;
    let mut restored = Group::restore("g".to_string(), config(), snapshot.clone(), later);
    assert_eq!(restored.state(), GroupState::Stable);
    assert_eq!(restored.generation_id(), 1);
    assert_eq!(restored.leader(), Some(ids[0].as_str()));
    assert_eq!(restored.protocol_name(), Some("range"));
    assert_eq!(restored.protocol_type(), Some("consumer"));
    assert_eq!(restored.snapshot(later), snapshot);
    assert_eq!(
        restored.next_deadline(),
        Some(later + i64::from(SESSION_MS))
    );
    assert_eq!(kafka(restored.heartbeat(&ids[1], None, 1, later)).0, NONE);
    let r = sync_responded(restored.sync(sync_request(&ids[1], 1, vec![]), later).0);
    assert_eq!(r.assignment, assignment_for(&ids[1]));
    assert_eq!(
        restored.subscribed_topics().into_iter().collect::<Vec<_>>(),
        vec!["orders"]
    );
    // An unchanged follower rejoin gets the generation back; the leader's
    // rejoin starts generation 2.
    assert_eq!(
        responded(restored.join(join_request(&ids[1], "b"), later).0).generation_id,
        1
    );
    wait_id(restored.join(join_request(&ids[0], "a"), later).0);
    assert_eq!(
        responded(restored.join(join_request(&ids[1], "b"), later).0).generation_id,
        2
    );

    let empty = GroupSnapshot {
        protocol_type: Some("consumer".into()),
        generation_id: 4,
        protocol_name: None,
        leader: None,
        current_state_timestamp_ms: now,
        members: vec![],
    };
    let mut restored = Group::restore("g".to_string(), config(), empty, later);
    assert_eq!(restored.state(), GroupState::Empty);
    assert_eq!(restored.generation_id(), 4);
    assert_eq!(restored.next_deadline(), None);
    assert_eq!(
        kafka(restored.validate_offset_commit("", None, -1, later)),
        Ok(())
    );
    // No extensions after generation 0: one window.
    wait_id(restored.join(join_request("", "a"), later).0);
    wait_id(restored.join(join_request("", "b"), later + 1).0);
    let responses = join_responses(&advance(&mut restored, later + INITIAL_DELAY_MS));
    assert!(responses.values().all(|r| r.generation_id == 5));

    let member = |id: &str| MemberSnapshot {
        member_id: id.into(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/h".into(),
        rebalance_timeout_ms: REBALANCE_MS,
        session_timeout_ms: SESSION_MS,
        subscription: subscription(&["t"]),
        assignment: Bytes::new(),
    };
    let crowded = GroupSnapshot {
        protocol_type: Some("consumer".into()),
        generation_id: 3,
        protocol_name: Some("range".into()),
        leader: Some("gone".into()),
        current_state_timestamp_ms: now,
        members: vec![member("m1"), member("m2"), member("m3")],
    };
    let restored = Group::restore(
        "g".to_string(),
        GroupConfig {
            max_size: 2,
            ..config()
        },
        crowded,
        later,
    );
    assert_eq!(restored.state(), GroupState::PreparingRebalance);
    assert_eq!(
        restored.leader(),
        Some("m1"),
        "a leader that is no member is replaced"
    );
}

/// subscribed_topics() reads every member's "consumer" subscription for
/// the chosen protocol, of any version, skipping undecodable metadata; other
/// protocol types subscribe to nothing.
#[test]
fn subscribed_topics_of_consumers() {
    let mut group = Group::new("g".to_string(), config());
    let v3 = {
        let mut buf = BytesMut::new();
        buf.put_i16(3);
        ConsumerProtocolSubscription::default()
            .with_topics(vec![StrBytes::from_static_str("payments")])
            .with_generation_id(4)
            .encode(&mut buf, 3)
            .unwrap();
        buf.freeze()
    };
    for (client, metadata) in [
        ("a", subscription(&["orders", "refunds"])),
        ("b", v3),
        ("c", Bytes::from_static(b"\x00\x01garbage")),
    ] {
        let request = JoinRequest {
            protocols: vec![("range".into(), metadata)],
            ..join_request("", client)
        };
        wait_id(group.join(request, T0).0);
    }
    let topics: Vec<String> = group.subscribed_topics().into_iter().collect();
    assert_eq!(topics, vec!["orders", "payments", "refunds"]);

    let mut group = Group::new("g".to_string(), config());
    wait_id(
        group
            .join(
                JoinRequest {
                    protocol_type: "connect".into(),
                    ..join_request("", "a")
                },
                T0,
            )
            .0,
    );
    assert!(group.subscribed_topics().is_empty());
}

// ---- Property test ----

/// One client of the group (the property test drives five).
#[derive(Debug, Clone, Copy)]
enum Op {
    /// Join as the client's current member id, or as a new member.
    Join {
        client: usize,
        fresh: bool,
        protocols: usize,
        require_known: bool,
        bad_session: bool,
    },
    /// Sync with the generation the client knows (the leader assigns).
    Sync {
        client: usize,
        stale: bool,
    },
    Heartbeat {
        client: usize,
    },
    Commit {
        client: usize,
    },
    Leave {
        client: usize,
        by_instance: bool,
    },
    Advance {
        ms: i64,
    },
    Delete,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (
            0..5usize,
            prop::bool::weighted(0.2),
            prop_oneof![4 => Just(0usize), 1 => 1..3usize],
            any::<bool>(),
            prop::bool::weighted(0.05),
        )
            .prop_map(|(client, fresh, protocols, require_known, bad_session)| Op::Join {
                client,
                fresh,
                protocols,
                require_known,
                bad_session
            }),
        4 => (0..5usize, prop::bool::weighted(0.05))
            .prop_map(|(client, stale)| Op::Sync { client, stale }),
        4 => (0..5usize).prop_map(|client| Op::Heartbeat { client }),
        1 => (0..5usize).prop_map(|client| Op::Commit { client }),
        1 => (0..5usize, prop::bool::weighted(0.3))
            .prop_map(|(client, by_instance)| Op::Leave { client, by_instance }),
        4 => prop_oneof![9 => 0..3_000i64, 1 => 3_000..40_000i64].prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::Delete),
    ]
}

/// What one client knows: its member id and generation.
#[derive(Debug, Clone, Default)]
struct Client {
    member_id: String,
    generation_id: i32,
}

/// The test's side of the conversation: what each client was told, and
/// which requests are parked awaiting an answer.
struct Harness {
    config: GroupConfig,
    /// Every member's rebalance timeout: shorter than the session timeout,
    /// members that do not rejoin are removed at the join deadline; longer,
    /// they mostly expire first.
    rebalance_ms: i32,
    group: Group,
    now: i64,
    clients: Vec<Client>,
    /// The generation of the last successful JoinGroup answer per member id.
    joined: HashMap<String, i32>,
    parked_joins: HashSet<String>,
    parked_syncs: HashSet<String>,
    last_generation: i32,
}

type Res = Result<(), TestCaseError>;

/// Clients 0 and 1 are static members.
fn instance(client: usize) -> Option<String> {
    (client < 2).then(|| format!("instance-{client}"))
}

fn protocols(choice: usize) -> Vec<(String, Bytes)> {
    let range = ("range".to_string(), subscription(&["orders"]));
    let rr = ("roundrobin".to_string(), subscription(&["orders"]));
    match choice {
        0 => vec![range],
        1 => vec![rr],
        _ => vec![rr, range],
    }
}

impl Harness {
    fn new(config: GroupConfig, rebalance_ms: i32) -> Harness {
        Harness {
            rebalance_ms,
            group: Group::new("g".to_string(), config.clone()),
            config,
            now: T0,
            clients: vec![
                Client {
                    member_id: String::new(),
                    generation_id: -1
                };
                5
            ],
            joined: HashMap::new(),
            parked_joins: HashSet::new(),
            parked_syncs: HashSet::new(),
            last_generation: 0,
        }
    }

    fn client_of(&self, member_id: &str) -> Option<usize> {
        self.clients.iter().position(|c| c.member_id == member_id)
    }

    fn on_join_result(&mut self, client: Option<usize>, result: &JoinResult) {
        if result.error_code() == NONE {
            self.joined
                .insert(result.member_id.clone(), result.generation_id);
        }
        let Some(client) = client else { return };
        let c = &mut self.clients[client];
        if result.error_code() == NONE
            || result.error_code() == code(ResponseError::MemberIdRequired)
        {
            c.member_id = result.member_id.clone();
            c.generation_id = result.generation_id;
        } else if result.error_code() == code(ResponseError::UnknownMemberId)
            || result.error_code() == code(ResponseError::FencedInstanceId)
        {
            c.member_id.clear();
            c.generation_id = -1;
        }
    }

    fn apply(&mut self, effects: Vec<Effect>) -> Res {
        for effect in effects {
            match effect {
                Effect::JoinResponse { member_id, result } => {
                    prop_assert!(
                        self.parked_joins.remove(&member_id),
                        "answer to an unparked join of {}",
                        member_id
                    );
                    let client = self.client_of(&member_id);
                    self.on_join_result(client, &result);
                }
                Effect::SyncResponse { member_id, .. } => {
                    prop_assert!(
                        self.parked_syncs.remove(&member_id),
                        "answer to an unparked sync of {}",
                        member_id
                    );
                }
                Effect::PersistGroup => {}
            }
        }
        Ok(())
    }

    fn run(&mut self, op: Op) -> Res {
        let now = self.now;
        match op {
            Op::Join {
                client,
                fresh,
                protocols: choice,
                require_known,
                bad_session,
            } => {
                let member_id = if fresh {
                    String::new()
                } else {
                    self.clients[client].member_id.clone()
                };
                let request = JoinRequest {
                    member_id: member_id.clone(),
                    group_instance_id: instance(client),
                    client_id: format!("client-{client}"),
                    client_host: "/h".to_string(),
                    session_timeout_ms: if bad_session { 100 } else { SESSION_MS },
                    rebalance_timeout_ms: self.rebalance_ms,
                    protocol_type: "consumer".to_string(),
                    protocols: protocols(choice),
                    require_known_member_id: require_known,
                };
                let (outcome, effects) = self.group.join(request, now);
                match outcome {
                    JoinOutcome::Respond(result) => self.on_join_result(Some(client), &result),
                    JoinOutcome::Wait { member_id } => {
                        self.parked_joins.insert(member_id.clone());
                        self.clients[client].member_id = member_id;
                    }
                }
                self.apply(effects)?;
            }
            Op::Sync { client, stale } => {
                let c = self.clients[client].clone();
                let generation_id = if stale {
                    c.generation_id - 1
                } else {
                    c.generation_id
                };
                let assignments = self
                    .group
                    .members()
                    .into_iter()
                    .map(|m| (m.member_id.clone(), assignment_for(&m.member_id)))
                    .collect();
                let request = SyncRequest {
                    group_instance_id: instance(client),
                    protocol_name: None,
                    ..sync_request(&c.member_id, generation_id, assignments)
                };
                let (outcome, effects) = self.group.sync(request, now);
                if let SyncOutcome::Wait { member_id } = outcome {
                    self.parked_syncs.insert(member_id);
                }
                self.apply(effects)?;
            }
            Op::Heartbeat { client } => {
                let c = &self.clients[client];
                let (_, effects) = kafka(self.group.heartbeat(
                    &c.member_id.clone(),
                    instance(client).as_deref(),
                    c.generation_id,
                    now,
                ));
                prop_assert!(effects.is_empty());
            }
            Op::Commit { client } => {
                let c = &self.clients[client];
                let _ = kafka(self.group.validate_offset_commit(
                    &c.member_id.clone(),
                    instance(client).as_deref(),
                    c.generation_id,
                    now,
                ));
            }
            Op::Leave {
                client,
                by_instance,
            } => {
                let member_id = if by_instance {
                    String::new()
                } else {
                    self.clients[client].member_id.clone()
                };
                let (errors, effects) =
                    kafka(self.group.leave(vec![(member_id, instance(client))], now));
                prop_assert_eq!(errors.len(), 1);
                if errors[0] == NONE {
                    self.clients[client] = Client {
                        member_id: String::new(),
                        generation_id: -1,
                    };
                }
                self.apply(effects)?;
            }
            Op::Advance { ms } => {
                let to = now + ms;
                loop {
                    match self.group.next_deadline() {
                        Some(deadline) if deadline <= to => {
                            prop_assert!(deadline >= self.now, "deadline {} in the past", deadline);
                            self.now = deadline;
                            let effects = self.group.tick(deadline);
                            self.apply(effects)?;
                            if let Some(next) = self.group.next_deadline() {
                                prop_assert!(next > deadline, "tick left {} due", next);
                            }
                        }
                        _ => break,
                    }
                }
                self.now = to;
                let effects = self.group.tick(to);
                self.apply(effects)?;
            }
            Op::Delete => {
                let before = self.group.state();
                let result = kafka(self.group.delete());
                prop_assert_eq!(result.is_ok(), before == GroupState::Empty);
                if result.is_ok() {
                    prop_assert!(self.parked_joins.is_empty() && self.parked_syncs.is_empty());
                    prop_assert_eq!(self.group.next_deadline(), None);
                    // As the coordinator does: the next JoinGroup for this
                    // group id creates it afresh.
                    self.group = Group::new("g".to_string(), self.config.clone());
                    self.joined.clear();
                    self.last_generation = 0;
                }
            }
        }
        self.check()
    }

    fn check(&mut self) -> Res {
        let group = &self.group;
        let members = group.members();
        let state = group.state();
        prop_assert!(
            group.generation_id() >= self.last_generation,
            "generation went back"
        );
        self.last_generation = group.generation_id();
        if !members.is_empty() {
            let leader = group.leader();
            prop_assert!(
                leader.is_some_and(|l| group.is_member(l)),
                "leader {:?} is no member",
                leader
            );
        }
        match state {
            GroupState::Empty | GroupState::Dead => prop_assert!(members.is_empty()),
            GroupState::CompletingRebalance | GroupState::Stable => {
                prop_assert!(!members.is_empty())
            }
            GroupState::PreparingRebalance => {}
        }
        if state == GroupState::Stable {
            for m in &members {
                let joined = self.joined.get(&m.member_id).copied();
                if m.group_instance_id.is_none() {
                    prop_assert_eq!(
                        joined,
                        Some(group.generation_id()),
                        "{} in Stable",
                        m.member_id
                    );
                } else {
                    // A static member that missed the rebalance stays until
                    // its session or the sync deadline ends.
                    prop_assert!(joined.unwrap_or(0) <= group.generation_id());
                }
            }
        }
        // Every parked request belongs to a member, and is answered before
        // the state that parked it ends.
        for id in &self.parked_joins {
            prop_assert!(group.is_member(id), "parked join of non-member {}", id);
            prop_assert_eq!(
                state,
                GroupState::PreparingRebalance,
                "parked join outside a rebalance"
            );
        }
        for id in &self.parked_syncs {
            prop_assert!(group.is_member(id), "parked sync of non-member {}", id);
            prop_assert_eq!(
                state,
                GroupState::CompletingRebalance,
                "parked sync outside CompletingRebalance"
            );
        }
        if let Some(deadline) = group.next_deadline() {
            prop_assert!(
                deadline >= self.now,
                "deadline {} before now {}",
                deadline,
                self.now
            );
        }
        // Snapshots round-trip through restore for Stable and Empty groups.
        if matches!(state, GroupState::Stable | GroupState::Empty) {
            let snapshot = group.snapshot(self.now);
            let restored = Group::restore("g".to_string(), config(), snapshot.clone(), self.now);
            prop_assert_eq!(restored.snapshot(self.now), snapshot);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(seed::seeded(ProptestConfig { cases: 512, ..ProptestConfig::default() }))]

    /// Random JoinGroup / SyncGroup / Heartbeat / OffsetCommit / LeaveGroup
    /// / timer / DeleteGroups sequences from five clients (two static) never
    /// panic and keep the invariants: generations never go back; whenever
    /// there are members the leader is one; Empty iff no members outside
    /// PreparingRebalance; in Stable every dynamic member was given the
    /// current generation; every parked request is answered exactly once,
    /// before its member goes and before the state that parked it ends;
    /// `tick` leaves nothing due; snapshots round-trip through `restore`.
    #[test]
    fn random_sequences_keep_invariants(
        ops in prop::collection::vec(op(), 1..120),
        max_size in prop_oneof![1 => 1..5usize, 2 => Just(10usize)],
        initial_delay in prop_oneof![Just(0i64), Just(INITIAL_DELAY_MS)],
        rebalance_ms in prop_oneof![Just(5_000i32), Just(20_000i32)],
    ) {
        let config = GroupConfig { max_size, initial_rebalance_delay_ms: initial_delay, ..config() };
        let mut harness = Harness::new(config, rebalance_ms);
        for op in ops {
            harness.run(op)?;
        }
    }
}
