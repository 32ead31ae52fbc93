//! Consumer groups end to end, with real clients against a real `ferrolog`
//! process on 127.0.0.1: librdkafka (the rdkafka crate) and kafka-python
//! (`tests/python/groups_consumer.py`, a separate process) subscribe,
//! rebalance, commit and resume; the admin APIs list, describe and delete
//! groups and offsets; raw requests (kafka-protocol over a TcpStream) check
//! what no client exposes (OffsetDelete, per-partition errors, DescribeGroups
//! outside Stable).
//!
//! Every test starts its own broker (so they may run in parallel), keeps
//! `group.initial.rebalance.delay.ms` at 0 unless it needs members to land
//! in one first rebalance, and bounds every wait with a deadline: members are
//! "pumped" (polled, or their stdout drained) in one loop until a condition
//! holds.
//!
//! Exactly-once claims rest on one rule: records are consumed only while the
//! group's split is stable (checked before producing, and the member
//! rebalance counters are checked unchanged afterwards), or the group forms
//! in one rebalance (the initial delay) before any record is returned.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::{require_tool, BrokerProcess};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

/// Every client call that can block is bounded by this.
const TIMEOUT: Duration = Duration::from_secs(30);
/// How long a group may take to reach an expected split.
const SETTLE: Duration = Duration::from_secs(40);
/// How long consuming a batch of records may take.
const CONSUME: Duration = Duration::from_secs(90);
/// heartbeat.interval.ms of every member: rebalances are noticed quickly.
const HEARTBEAT_MS: u64 = 500;

// ---------------------------------------------------------------------------
// Fixtures: broker, topics, producer
// ---------------------------------------------------------------------------

/// A broker with fast group settings plus `extra` overrides.
fn start_broker(dir: &Path, extra: &[&str]) -> BrokerProcess {
    BrokerProcess::start(dir, &overrides(extra))
}

fn overrides<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec![
        "group.initial.rebalance.delay.ms=0",
        "group.min.session.timeout.ms=1000",
    ];
    all.extend_from_slice(extra);
    all
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

use common::{admin, client_config};

fn admin_options() -> AdminOptions {
    common::admin_options(TIMEOUT)
}

fn create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    let admin = admin(bootstrap);
    let results = block_on(admin.create_topics(
        &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
        &admin_options(),
    ))
    .expect("CreateTopics is answered");
    for result in results {
        result.unwrap_or_else(|e| panic!("creating {topic}: {e:?}"));
    }
}

/// Counts delivery reports.
#[derive(Default)]
struct Deliveries {
    delivered: AtomicUsize,
    failed: AtomicUsize,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.delivered.fetch_add(1, Ordering::Relaxed),
            Err((e, _)) => {
                eprintln!("delivery failed: {e}");
                self.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    }
}

/// Produce `values` to `topic`, record `i` to partition `i % partitions`,
/// and wait until every one is acknowledged.
fn produce(bootstrap: &str, topic: &str, partitions: i32, values: &[String]) {
    let producer: BaseProducer<Deliveries> = client_config(bootstrap)
        .set("linger.ms", "5")
        .set("acks", "all")
        .create_with_context(Deliveries::default())
        .expect("the producer is created");
    let deadline = Instant::now() + TIMEOUT;
    for (i, value) in values.iter().enumerate() {
        let mut record = BaseRecord::<(), str>::to(topic)
            .payload(value.as_str())
            .partition(i as i32 % partitions);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    assert!(Instant::now() < deadline, "the producer queue stays full");
                    record = back;
                    producer.poll(Duration::from_millis(50));
                }
                Err((e, _)) => panic!("producing to {topic}: {e}"),
            }
        }
        producer.poll(Duration::ZERO);
    }
    producer.flush(TIMEOUT).expect("every record is flushed");
    let context = producer.context();
    assert_eq!(context.failed.load(Ordering::Relaxed), 0);
    assert_eq!(context.delivered.load(Ordering::Relaxed), values.len());
}

fn values(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

// ---------------------------------------------------------------------------
// Members: librdkafka consumers in this process, kafka-python in another
// ---------------------------------------------------------------------------

/// What a librdkafka consumer's rebalance callbacks saw.
#[derive(Default)]
struct Tracker {
    assignment: Option<BTreeSet<i32>>,
    assigns: usize,
    revokes: usize,
    /// Every callback in order, with the partitions it was given (for the
    /// cooperative protocol: the increment, which may be empty).
    events: Vec<RebalanceEvent>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum RebalanceEvent {
    Assign(BTreeSet<i32>),
    Revoke(BTreeSet<i32>),
}

struct TrackingContext(Arc<Mutex<Tracker>>);

impl ClientContext for TrackingContext {}

impl ConsumerContext for TrackingContext {
    fn post_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let mut tracker = self.0.lock().expect("tracker lock");
        match rebalance {
            Rebalance::Assign(tpl) => {
                let partitions: BTreeSet<i32> =
                    tpl.elements().iter().map(|e| e.partition()).collect();
                tracker.assigns += 1;
                tracker.assignment = Some(partitions.clone());
                tracker.events.push(RebalanceEvent::Assign(partitions));
            }
            Rebalance::Revoke(tpl) => {
                let partitions = tpl.elements().iter().map(|e| e.partition()).collect();
                tracker.revokes += 1;
                tracker.assignment = None;
                tracker.events.push(RebalanceEvent::Revoke(partitions));
            }
            Rebalance::Error(e) => eprintln!("rebalance error: {e}"),
        }
    }
}

type RdConsumer = BaseConsumer<TrackingContext>;

enum Kind {
    Rd {
        consumer: Option<RdConsumer>,
        tracker: Arc<Mutex<Tracker>>,
    },
    Py {
        child: Child,
        stdin: Option<ChildStdin>,
        lines: mpsc::Receiver<String>,
        closed: bool,
    },
}

/// One consumer-group member, whichever client it is.
struct Member {
    name: String,
    kind: Kind,
    /// The current assignment; None before the first and during a rebalance
    /// (eager protocols revoke everything first).
    assignment: Option<BTreeSet<i32>>,
    /// Assignments received so far (one per completed rebalance).
    assigns: usize,
    revokes: usize,
    /// (partition, offset, value) of every record received.
    records: Vec<(i32, i64, String)>,
}

fn rd_config(bootstrap: &str, name: &str, group: &str, settings: &[(&str, &str)]) -> ClientConfig {
    let mut config = client_config(bootstrap);
    config
        .set("group.id", group)
        .set("client.id", name)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "10000")
        .set("heartbeat.interval.ms", HEARTBEAT_MS.to_string())
        // Also the rebalance timeout: bounds how long a rebalance can wait.
        .set("max.poll.interval.ms", "30000")
        .set("fetch.wait.max.ms", "100")
        .set("partition.assignment.strategy", "range");
    for (key, value) in settings {
        config.set(*key, *value);
    }
    config
}

impl Member {
    /// A librdkafka consumer subscribed to `topic` in `group`.
    fn rdkafka(
        bootstrap: &str,
        name: &str,
        group: &str,
        topic: &str,
        settings: &[(&str, &str)],
    ) -> Member {
        let tracker = Arc::new(Mutex::new(Tracker::default()));
        let consumer: RdConsumer = rd_config(bootstrap, name, group, settings)
            .create_with_context(TrackingContext(tracker.clone()))
            .expect("the consumer is created");
        consumer.subscribe(&[topic]).expect("subscribe");
        Member::new(
            name,
            Kind::Rd {
                consumer: Some(consumer),
                tracker,
            },
        )
    }

    /// A kafka-python consumer process subscribed to `topic` in `group`.
    fn python(
        bootstrap: &str,
        name: &str,
        group: &str,
        topic: &str,
        assignor: &str,
        session_timeout_ms: u64,
    ) -> Member {
        require_python_module("kafka");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/groups_consumer.py"
        );
        let mut child = Command::new("python3")
            .arg("-u")
            .arg(script)
            .args(["--bootstrap", bootstrap, "--topic", topic, "--group", group])
            .args(["--assignor", assignor, "--client-id", name])
            .args(["--session-timeout-ms", &session_timeout_ms.to_string()])
            .args(["--heartbeat-interval-ms", &HEARTBEAT_MS.to_string()])
            .args(["--max-seconds", "240"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Member::new(
            name,
            Kind::Py {
                child,
                stdin,
                lines,
                closed: false,
            },
        )
    }

    fn new(name: &str, kind: Kind) -> Member {
        Member {
            name: name.to_string(),
            kind,
            assignment: None,
            assigns: 0,
            revokes: 0,
            records: Vec::new(),
        }
    }

    /// A librdkafka member's rebalance callbacks so far.
    fn events(&self) -> Vec<RebalanceEvent> {
        match &self.kind {
            Kind::Rd { tracker, .. } => tracker.lock().expect("tracker lock").events.clone(),
            Kind::Py { .. } => panic!("{} is not a librdkafka consumer", self.name),
        }
    }

    fn rd(&self) -> &RdConsumer {
        match &self.kind {
            Kind::Rd {
                consumer: Some(consumer),
                ..
            } => consumer,
            _ => panic!("{} is not an open librdkafka consumer", self.name),
        }
    }

    /// Serve callbacks and take what arrived; returns quickly (about 10 ms
    /// for a librdkafka member with nothing to do).
    fn pump(&mut self) {
        match &mut self.kind {
            Kind::Rd { consumer, tracker } => {
                if let Some(consumer) = consumer {
                    let mut wait = Duration::from_millis(10);
                    for _ in 0..1000 {
                        match consumer.poll(wait) {
                            None => break,
                            Some(Ok(message)) => {
                                let value = message
                                    .payload_view::<str>()
                                    .and_then(Result::ok)
                                    .unwrap_or_default()
                                    .to_string();
                                self.records
                                    .push((message.partition(), message.offset(), value));
                            }
                            Some(Err(e)) => eprintln!("{}: {e}", self.name),
                        }
                        wait = Duration::ZERO;
                    }
                }
                let tracker = tracker.lock().expect("tracker lock");
                self.assignment = tracker.assignment.clone();
                self.assigns = tracker.assigns;
                self.revokes = tracker.revokes;
            }
            Kind::Py { lines, closed, .. } => {
                while let Ok(line) = lines.try_recv() {
                    let (event, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
                    match event {
                        "ASSIGNED" => {
                            self.assigns += 1;
                            self.assignment = Some(parse_partitions(rest));
                        }
                        "REVOKED" => {
                            self.revokes += 1;
                            self.assignment = None;
                        }
                        "REC" => {
                            let mut parts = rest.splitn(3, ' ');
                            let partition = parts.next().and_then(|p| p.parse().ok());
                            let offset = parts.next().and_then(|o| o.parse().ok());
                            let value = parts.next().unwrap_or("").to_string();
                            match (partition, offset) {
                                (Some(p), Some(o)) => self.records.push((p, o, value)),
                                _ => panic!("{}: bad line {line:?}", self.name),
                            }
                        }
                        "CLOSED" => *closed = true,
                        _ => {}
                    }
                }
            }
        }
    }

    /// Close cleanly: librdkafka's close (LeaveGroup unless the member is
    /// static), or STOP to the python process (kafka-python's close sends
    /// LeaveGroup), waited for with a deadline.
    fn close(mut self) {
        let name = self.name.clone();
        match &mut self.kind {
            Kind::Rd { consumer, .. } => {
                drop(consumer.take());
                return;
            }
            Kind::Py { stdin, child, .. } => {
                if let Some(mut stdin) = stdin.take() {
                    let _ = stdin.write_all(b"STOP\n");
                }
                let deadline = Instant::now() + TIMEOUT;
                loop {
                    if let Ok(Some(status)) = child.try_wait() {
                        assert!(status.success(), "{name} exited with {status}");
                        break;
                    }
                    assert!(Instant::now() < deadline, "{name} did not stop");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        // The reader thread may still hold the last lines: wait for CLOSED.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            self.pump();
            if matches!(self.kind, Kind::Py { closed: true, .. }) {
                return;
            }
            assert!(Instant::now() < deadline, "{name} exited without closing");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL the python process: no LeaveGroup, the session must expire.
    fn kill(mut self) {
        match &mut self.kind {
            Kind::Py { child, .. } => {
                child.kill().expect("SIGKILL the python consumer");
                let _ = child.wait();
            }
            Kind::Rd { .. } => panic!("{} runs in this process", self.name),
        }
    }

    fn describe(&self) -> String {
        format!(
            "{}: assignment {:?}, {} assigns, {} revokes, {} records",
            self.name,
            self.assignment,
            self.assigns,
            self.revokes,
            self.records.len()
        )
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if let Kind::Py { child, .. } = &mut self.kind {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn parse_partitions(text: &str) -> BTreeSet<i32> {
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().expect("a partition number"))
        .collect()
}

fn require_python_module(module: &str) {
    require_tool("python3");
    let output = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "python module {module} is missing; run ./scripts/test.sh (pip install kafka-python): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn describe_all(members: &[Member]) -> String {
    members
        .iter()
        .map(Member::describe)
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Pump every member until `condition` holds; returns how long it took.
/// Panics after `timeout` with every member's state.
fn pump_until(
    members: &mut [Member],
    timeout: Duration,
    what: &str,
    condition: impl Fn(&[Member]) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        for member in members.iter_mut() {
            member.pump();
        }
        if condition(members) {
            return start.elapsed();
        }
        if start.elapsed() > timeout {
            panic!(
                "waited {timeout:?} for {what}:\n  {}",
                describe_all(members)
            );
        }
        if members.iter().all(|m| matches!(m.kind, Kind::Py { .. })) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Pump every member for `period` (to see whether anything else happens).
fn pump_for(members: &mut [Member], period: Duration) {
    let start = Instant::now();
    while start.elapsed() < period {
        for member in members.iter_mut() {
            member.pump();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Every member holds an assignment, they are disjoint, cover partitions
/// 0..partitions, and their sizes (largest first) are `sizes`.
fn split_is(members: &[Member], partitions: i32, sizes: &[usize]) -> bool {
    let mut got = Vec::new();
    let mut all = BTreeSet::new();
    let mut total = 0;
    for member in members {
        let Some(assignment) = &member.assignment else {
            return false;
        };
        got.push(assignment.len());
        total += assignment.len();
        all.extend(assignment.iter().copied());
    }
    got.sort_unstable_by(|a, b| b.cmp(a));
    got == sizes && total == partitions as usize && all == (0..partitions).collect()
}

fn wait_for_split(members: &mut [Member], partitions: i32, sizes: &[usize]) -> Duration {
    pump_until(
        members,
        SETTLE,
        &format!("the split {sizes:?} of {partitions} partitions"),
        |m| split_is(m, partitions, sizes),
    )
}

fn total_records(members: &[Member]) -> usize {
    members.iter().map(|m| m.records.len()).sum()
}

/// Pump until the members together hold at least `expected.len()` records,
/// then a little longer (a duplicate would show up), and check every
/// expected value arrived exactly once and nothing else did.
fn consume_exactly_once(members: &mut [Member], expected: &[String]) {
    pump_until(
        members,
        CONSUME,
        &format!("{} records", expected.len()),
        |m| total_records(m) >= expected.len(),
    );
    pump_for(members, Duration::from_millis(500));
    assert_exactly_once(members, expected);
}

fn assert_exactly_once(members: &[Member], expected: &[String]) {
    let mut seen: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for member in members {
        for (_, _, value) in &member.records {
            seen.entry(value.as_str())
                .or_default()
                .push(member.name.as_str());
        }
    }
    let duplicates: Vec<_> = seen
        .iter()
        .filter(|(_, who)| who.len() > 1)
        .take(5)
        .collect();
    assert!(
        duplicates.is_empty(),
        "records seen more than once (value, members): {duplicates:?}\n  {}",
        describe_all(members)
    );
    let expected_set: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    let seen_set: BTreeSet<&str> = seen.keys().copied().collect();
    let missing: Vec<_> = expected_set.difference(&seen_set).take(5).collect();
    let unexpected: Vec<_> = seen_set.difference(&expected_set).take(5).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty(),
        "missing {missing:?}, unexpected {unexpected:?}\n  {}",
        describe_all(members)
    );
}

/// Every record a member received came from a partition it was assigned.
fn assert_records_from_assignment(members: &[Member]) {
    for member in members {
        let assignment = member.assignment.clone().unwrap_or_default();
        for (partition, _, value) in &member.records {
            assert!(
                assignment.contains(partition),
                "{} got {value} from partition {partition}, assigned {assignment:?}",
                member.name
            );
        }
    }
}

fn assigns(members: &[Member]) -> Vec<usize> {
    members.iter().map(|m| m.assigns).collect()
}

// ---------------------------------------------------------------------------
// Admin views and raw requests
// ---------------------------------------------------------------------------

/// (state, protocol type, protocol, members as (client id, assigned
/// partitions of `topic`)) from librdkafka's ListGroups + DescribeGroups.
struct GroupView {
    state: String,
    protocol_type: String,
    protocol: String,
    members: Vec<(String, BTreeSet<i32>)>,
    member_ids: Vec<String>,
}

fn describe_group(admin: &AdminClient<DefaultClientContext>, group: &str) -> GroupView {
    let list = admin
        .inner()
        .fetch_group_list(Some(group), TIMEOUT)
        .expect("DescribeGroups is answered");
    let info = list
        .groups()
        .iter()
        .find(|g| g.name() == group)
        .unwrap_or_else(|| panic!("{group} is not described"));
    GroupView {
        state: info.state().to_string(),
        protocol_type: info.protocol_type().to_string(),
        protocol: info.protocol().to_string(),
        members: info
            .members()
            .iter()
            .map(|m| {
                (
                    m.client_id().to_string(),
                    decode_assignment(m.assignment().unwrap_or_default()),
                )
            })
            .collect(),
        member_ids: info.members().iter().map(|m| m.id().to_string()).collect(),
    }
}

/// Every listed group: name -> (protocol type, state).
fn list_groups(admin: &AdminClient<DefaultClientContext>) -> BTreeMap<String, (String, String)> {
    let list = admin
        .inner()
        .fetch_group_list(None, TIMEOUT)
        .expect("ListGroups is answered");
    list.groups()
        .iter()
        .map(|g| {
            (
                g.name().to_string(),
                (g.protocol_type().to_string(), g.state().to_string()),
            )
        })
        .collect()
}

/// The partitions in a ConsumerProtocolAssignment (version prefix, then the
/// v0 layout every version keeps).
fn decode_assignment(bytes: &[u8]) -> BTreeSet<i32> {
    if bytes.len() < 2 {
        return BTreeSet::new();
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    let mut body = bytes::Bytes::copy_from_slice(&bytes[2..]);
    let assignment = ConsumerProtocolAssignment::decode(&mut body, version.clamp(0, 3))
        .expect("the member assignment decodes");
    assignment
        .assigned_partitions
        .iter()
        .flat_map(|t| t.partitions.iter().copied())
        .collect()
}

/// One request/response on a fresh connection to the (only) broker.
fn raw<Req, Resp>(bootstrap: &str, api: ApiKey, version: i16, request: &Req) -> Resp
where
    Req: Encodable + HeaderVersion,
    Resp: Decodable + HeaderVersion,
{
    common::raw_request(bootstrap, api, version, request, TIMEOUT)
}

/// OffsetFetch v7: the committed offset of each partition (-1: none).
fn fetch_offsets(bootstrap: &str, group: &str, topic: &str, partitions: &[i32]) -> Vec<i64> {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_indexes(partitions.to_vec())]));
    let response: OffsetFetchResponse = raw(bootstrap, ApiKey::OffsetFetch, 7, &request);
    assert_eq!(response.error_code, 0, "OffsetFetch {group}: {response:?}");
    partitions
        .iter()
        .map(|p| {
            let partition = response
                .topics
                .iter()
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| t.partitions.iter())
                .find(|q| q.partition_index == *p)
                .unwrap_or_else(|| panic!("OffsetFetch answers {topic}-{p}: {response:?}"));
            assert_eq!(partition.error_code, 0, "{response:?}");
            partition.committed_offset
        })
        .collect()
}

/// OffsetDelete v0: (top-level error, per-partition errors).
fn delete_offsets(
    bootstrap: &str,
    group: &str,
    topic: &str,
    partitions: &[i32],
) -> (i16, Vec<i16>) {
    let request = OffsetDeleteRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_topics(vec![OffsetDeleteRequestTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(
                partitions
                    .iter()
                    .map(|&p| OffsetDeleteRequestPartition::default().with_partition_index(p))
                    .collect(),
            )]);
    let response: OffsetDeleteResponse = raw(bootstrap, ApiKey::OffsetDelete, 0, &request);
    let codes = partitions
        .iter()
        .map(|p| {
            response
                .topics
                .iter()
                .filter(|t| t.name.0.as_str() == topic)
                .flat_map(|t| t.partitions.iter())
                .find(|q| q.partition_index == *p)
                .map(|q| q.error_code)
                .unwrap_or(i16::MIN)
        })
        .collect();
    (response.error_code, codes)
}

fn delete_group(
    admin: &AdminClient<DefaultClientContext>,
    group: &str,
) -> Result<(), RDKafkaErrorCode> {
    let results = block_on(admin.delete_groups(&[group], &admin_options()))
        .expect("DeleteGroups is answered");
    assert_eq!(results.len(), 1);
    match &results[0] {
        Ok(name) => {
            assert_eq!(name, group);
            Ok(())
        }
        Err((name, code)) => {
            assert_eq!(name, group);
            Err(*code)
        }
    }
}

/// kafka-python's KafkaAdminClient view: `groups_admin.py` prints one JSON
/// object with `list` and `describe`.
fn python_admin(bootstrap: &str, groups: &[&str]) -> serde_json::Value {
    require_python_module("kafka");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/groups_admin.py");
    let output = Command::new("timeout")
        .arg("60")
        .arg("python3")
        .arg(script)
        .args(["--bootstrap", bootstrap])
        .args(groups)
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "groups_admin.py failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("groups_admin.py prints JSON")
}

/// What a client does before its first group request: FindCoordinator
/// (which creates `__consumer_offsets`) until it answers, then wait until
/// the group's partition is loaded (OffsetFetch no longer answers
/// COORDINATOR_LOAD_IN_PROGRESS). Bounded.
fn coordinator_ready(bootstrap: &str, group: &str) {
    let deadline = Instant::now() + TIMEOUT;
    let find = FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.to_string()));
    loop {
        let response: FindCoordinatorResponse = raw(bootstrap, ApiKey::FindCoordinator, 3, &find);
        if response.error_code == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "FindCoordinator: {response:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let fetch = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_topics(Some(vec![]));
    loop {
        let response: OffsetFetchResponse = raw(bootstrap, ApiKey::OffsetFetch, 7, &fetch);
        if response.error_code == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "OffsetFetch: {response:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A consumer-protocol payload: the version (i16) then `message` at it.
fn versioned<M: Encodable>(message: &M, version: i16) -> bytes::Bytes {
    let mut out = bytes::BytesMut::new();
    out.extend_from_slice(&version.to_be_bytes());
    message.encode(&mut out, version).expect("encodes");
    out.freeze()
}

fn describe_raw(
    bootstrap: &str,
    group: &str,
) -> kafka_protocol::messages::describe_groups_response::DescribedGroup {
    let request = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(StrBytes::from_string(group.to_string()))]);
    let response: DescribeGroupsResponse = raw(bootstrap, ApiKey::DescribeGroups, 5, &request);
    assert_eq!(response.groups.len(), 1, "{response:?}");
    response.groups.into_iter().next().unwrap()
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

/// Three librdkafka consumers subscribed to a 6-partition topic in one group
/// get two partitions each (checked on every client's rebalance callback:
/// disjoint, covering all six); 6000 records produced after the split is
/// stable are each consumed exactly once across the three, each member only
/// from its own partitions, and no rebalance happens meanwhile.
#[test]
fn three_members_split_six_partitions_and_consume_each_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "split", 6);

    let mut members: Vec<Member> = (0..3)
        .map(|i| Member::rdkafka(&bootstrap, &format!("split-{i}"), "g-split", "split", &[]))
        .collect();
    wait_for_split(&mut members, 6, &[2, 2, 2]);
    pump_for(&mut members, Duration::from_millis(2 * HEARTBEAT_MS));
    assert!(
        split_is(&members, 6, &[2, 2, 2]),
        "{}",
        describe_all(&members)
    );
    let before = assigns(&members);

    let expected = values("split", 6000);
    produce(&bootstrap, "split", 6, &expected);
    consume_exactly_once(&mut members, &expected);
    assert_records_from_assignment(&members);
    for member in &members {
        assert_eq!(member.records.len(), 2000, "{}", member.describe());
    }
    assert_eq!(assigns(&members), before, "no rebalance while consuming");

    let admin = admin(&bootstrap);
    let view = describe_group(&admin, "g-split");
    assert_eq!(view.state, "Stable");
    assert_eq!(view.members.len(), 3);
    for member in members {
        member.close();
    }
}

/// Rebalances as a surviving member sees them. Baseline: three librdkafka
/// members split 2/2/2. Then (1) a fourth joins -> 2/2/1/1; (2) it closes
/// cleanly (LeaveGroup) -> 2/2/2 again, well before its 10 s session could
/// expire; (3) a kafka-python member in another process joins -> 2/2/1/1;
/// (4) it is SIGKILLed (no LeaveGroup) -> 2/2/2 again, but only once its
/// 3 s session timeout passed. Each of the four changes is exactly one
/// rebalance for every survivor: their assignment counts grow by 4.
#[test]
fn rebalances_on_join_clean_leave_and_crash() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "rebalance", 6);

    let mut members: Vec<Member> = (0..3)
        .map(|i| {
            Member::rdkafka(
                &bootstrap,
                &format!("survivor-{i}"),
                "g-rebalance",
                "rebalance",
                &[],
            )
        })
        .collect();
    wait_for_split(&mut members, 6, &[2, 2, 2]);
    // Let any rebalance already under way finish before taking the baseline.
    pump_for(&mut members, Duration::from_millis(2 * HEARTBEAT_MS));
    assert!(
        split_is(&members, 6, &[2, 2, 2]),
        "{}",
        describe_all(&members)
    );
    let baseline = assigns(&members);

    // (1) A fourth member joins.
    members.push(Member::rdkafka(
        &bootstrap,
        "joiner",
        "g-rebalance",
        "rebalance",
        &[],
    ));
    wait_for_split(&mut members, 6, &[2, 2, 1, 1]);

    // (2) It closes: LeaveGroup, so the others rebalance at once.
    let joiner = members.pop().unwrap();
    let closed_at = Instant::now();
    joiner.close();
    wait_for_split(&mut members, 6, &[2, 2, 2]);
    let after_leave = closed_at.elapsed();
    eprintln!("clean leave -> 2/2/2 in {after_leave:?}");
    assert!(
        after_leave < Duration::from_secs(6),
        "a clean leave took {after_leave:?}: it looks like a session expiry (10 s)"
    );

    // (3) A kafka-python member in another process joins.
    members.push(Member::python(
        &bootstrap,
        "python-victim",
        "g-rebalance",
        "rebalance",
        "range",
        3000,
    ));
    wait_for_split(&mut members, 6, &[2, 2, 1, 1]);

    // (4) SIGKILL: no LeaveGroup; evicted when its session (3 s) expires.
    let victim = members.pop().unwrap();
    let killed_at = Instant::now();
    victim.kill();
    wait_for_split(&mut members, 6, &[2, 2, 2]);
    let after_kill = killed_at.elapsed();
    eprintln!("SIGKILL -> 2/2/2 in {after_kill:?}");
    assert!(
        after_kill >= Duration::from_millis(2000),
        "the killed member was evicted after {after_kill:?}, before its 3 s session timeout"
    );
    assert!(
        after_kill < Duration::from_millis(3000 + 6000),
        "the killed member was evicted only after {after_kill:?}"
    );

    // Nothing else is pending.
    pump_for(&mut members, Duration::from_millis(3 * HEARTBEAT_MS));
    let expected: Vec<usize> = baseline.iter().map(|n| n + 4).collect();
    assert_eq!(
        assigns(&members),
        expected,
        "each survivor saw exactly 4 rebalances after the baseline:\n  {}",
        describe_all(&members)
    );
    for member in members {
        member.close();
    }
}

/// Committed offsets: two members consume 1000 records, commit
/// (`enable.auto.commit=false`, `commit_consumer_state(Sync)`; OffsetFetch
/// then shows each partition's end) and close. 1000 more records are
/// produced; two new members in the same group read exactly those (none of
/// the first 1000 again, none missed). They commit and close, the broker is
/// SIGKILLed and restarted on the same log dir, 1000 more are produced, and
/// two new members again read exactly the new ones: the commits survived in
/// `__consumer_offsets`. Members join within the initial rebalance delay
/// (4 s: generous, as members start slowly on 2 loaded cores), so each
/// phase is one rebalance before any record is read.
#[test]
fn committed_offsets_resume_after_members_and_broker_restart() {
    let dir = tempfile::tempdir().unwrap();
    let extra = ["group.initial.rebalance.delay.ms=4000"];
    let mut broker = start_broker(dir.path(), &extra);
    let mut bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "commits", 4);

    let mut total = 0i64;
    for (phase, prefix) in ["first", "second", "third"].into_iter().enumerate() {
        if phase == 2 {
            let log_dir = broker.kill();
            broker = BrokerProcess::restart_on(&log_dir, &overrides(&extra));
            bootstrap = broker.bootstrap.clone();
        }
        let expected = values(prefix, 1000);
        produce(&bootstrap, "commits", 4, &expected);
        total += 1000;
        let mut members: Vec<Member> = (0..2)
            .map(|i| {
                Member::rdkafka(
                    &bootstrap,
                    &format!("{prefix}-{i}"),
                    "g-commits",
                    "commits",
                    &[],
                )
            })
            .collect();
        consume_exactly_once(&mut members, &expected);
        assert!(split_is(&members, 4, &[2, 2]), "{}", describe_all(&members));
        for member in &members {
            assert_eq!(member.assigns, 1, "one rebalance: {}", member.describe());
            member
                .rd()
                .commit_consumer_state(CommitMode::Sync)
                .expect("the commit succeeds");
        }
        // Every partition holds total/4 records: the commits point at its end.
        let committed = fetch_offsets(&bootstrap, "g-commits", "commits", &[0, 1, 2, 3]);
        assert_eq!(committed, vec![total / 4; 4], "after the {prefix} phase");
        for member in members {
            member.close();
        }
    }
}

/// Two groups on one topic each receive every record: group one has a
/// single member, group two has two; 3000 records produced once both
/// groups are stable reach each group exactly once.
#[test]
fn two_groups_each_receive_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "shared", 3);

    let mut members = vec![
        Member::rdkafka(&bootstrap, "one-0", "g-one", "shared", &[]),
        Member::rdkafka(&bootstrap, "two-0", "g-two", "shared", &[]),
        Member::rdkafka(&bootstrap, "two-1", "g-two", "shared", &[]),
    ];
    pump_until(&mut members, SETTLE, "both groups stable", |m| {
        split_is(&m[0..1], 3, &[3]) && split_is(&m[1..3], 3, &[2, 1])
    });
    pump_for(&mut members, Duration::from_millis(2 * HEARTBEAT_MS));
    let before = assigns(&members);
    let expected = values("shared", 3000);
    produce(&bootstrap, "shared", 3, &expected);
    pump_until(
        &mut members,
        CONSUME,
        "both groups have every record",
        |m| total_records(&m[0..1]) >= 3000 && total_records(&m[1..3]) >= 3000,
    );
    pump_for(&mut members, Duration::from_millis(500));
    assert_exactly_once(&members[0..1], &expected);
    assert_exactly_once(&members[1..3], &expected);
    assert_eq!(assigns(&members), before, "no rebalance while consuming");
    for member in members {
        member.close();
    }
}

/// The group admin APIs. Groups `g-admin-a` and `g-admin-b` each have one
/// librdkafka member on topic `admin` and commit offsets (`g-admin-a` also
/// commits `admin-other`, which it does not subscribe to).
/// - ListGroups (librdkafka and kafka-python): both listed, protocol type
///   "consumer", Stable; DescribeGroups: the member, its client id and its
///   decoded assignment (all 3 partitions), protocol "range".
/// - DeleteGroups on a group with members: NON_EMPTY_GROUP.
/// - OffsetDelete of a subscribed topic: GROUP_SUBSCRIBED_TO_TOPIC, offsets
///   kept; of an unsubscribed topic: success, OffsetFetch then shows -1.
/// - After the members leave: both Empty without members; DeleteGroups
///   succeeds, the group is no longer listed, its offsets are gone (-1) and
///   deleting it again is GROUP_ID_NOT_FOUND; OffsetDelete on the Empty
///   group's subscribed topic now succeeds.
#[test]
fn admin_lists_describes_and_deletes_groups_and_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "admin", 3);
    create_topic(&bootstrap, "admin-other", 1);
    let expected = values("admin", 300);
    produce(&bootstrap, "admin", 3, &expected);
    produce(&bootstrap, "admin-other", 1, &values("other", 10));

    let mut a = vec![Member::rdkafka(
        &bootstrap,
        "admin-a",
        "g-admin-a",
        "admin",
        &[],
    )];
    let mut b = vec![Member::rdkafka(
        &bootstrap,
        "admin-b",
        "g-admin-b",
        "admin",
        &[],
    )];
    consume_exactly_once(&mut a, &expected);
    consume_exactly_once(&mut b, &expected);
    for member in a.iter().chain(b.iter()) {
        member
            .rd()
            .commit_consumer_state(CommitMode::Sync)
            .expect("commit");
    }
    let mut other = TopicPartitionList::new();
    other
        .add_partition_offset("admin-other", 0, Offset::Offset(5))
        .unwrap();
    a[0].rd()
        .commit(&other, CommitMode::Sync)
        .expect("commit an unsubscribed topic");
    assert_eq!(
        fetch_offsets(&bootstrap, "g-admin-a", "admin", &[0, 1, 2]),
        vec![100; 3]
    );
    assert_eq!(
        fetch_offsets(&bootstrap, "g-admin-a", "admin-other", &[0]),
        vec![5]
    );
    assert_eq!(
        fetch_offsets(&bootstrap, "g-admin-b", "admin", &[0, 1, 2]),
        vec![100; 3]
    );

    // List and describe while Stable.
    let admin = admin(&bootstrap);
    let listed = list_groups(&admin);
    for group in ["g-admin-a", "g-admin-b"] {
        assert_eq!(
            listed.get(group),
            Some(&("consumer".to_string(), "Stable".to_string())),
            "{listed:?}"
        );
        let view = describe_group(&admin, group);
        assert_eq!(view.state, "Stable");
        assert_eq!(view.protocol_type, "consumer");
        assert_eq!(view.protocol, "range");
        let client = group.replace("g-", "");
        assert_eq!(view.members, vec![(client, (0..3).collect())]);
    }
    let python = python_admin(&bootstrap, &["g-admin-a", "g-admin-b"]);
    for group in ["g-admin-a", "g-admin-b"] {
        assert_eq!(
            python["list"][group]["protocol_type"], "consumer",
            "{python}"
        );
        assert_eq!(python["describe"][group]["state"], "Stable", "{python}");
        assert_eq!(python["describe"][group]["members"], 1, "{python}");
    }

    // Delete with members.
    assert_eq!(
        delete_group(&admin, "g-admin-b"),
        Err(RDKafkaErrorCode::NonEmptyGroup)
    );

    // OffsetDelete while a member subscribes to "admin".
    let subscribed = delete_offsets(&bootstrap, "g-admin-a", "admin", &[0, 1, 2]);
    assert_eq!(subscribed, (0, vec![86; 3]), "GROUP_SUBSCRIBED_TO_TOPIC");
    assert_eq!(
        fetch_offsets(&bootstrap, "g-admin-a", "admin", &[0, 1, 2]),
        vec![100; 3]
    );
    assert_eq!(
        delete_offsets(&bootstrap, "g-admin-a", "admin-other", &[0]),
        (0, vec![0])
    );
    assert_eq!(
        fetch_offsets(&bootstrap, "g-admin-a", "admin-other", &[0]),
        vec![-1]
    );

    // The members leave.
    for member in a.into_iter().chain(b) {
        member.close();
    }
    for group in ["g-admin-a", "g-admin-b"] {
        let view = describe_group(&admin, group);
        assert_eq!(view.state, "Empty");
        assert!(view.members.is_empty());
    }
    let listed = list_groups(&admin);
    assert_eq!(
        listed.get("g-admin-b"),
        Some(&("consumer".to_string(), "Empty".to_string())),
        "{listed:?}"
    );
    let python = python_admin(&bootstrap, &["g-admin-b"]);
    assert_eq!(
        python["describe"]["g-admin-b"]["state"], "Empty",
        "{python}"
    );
    assert_eq!(python["describe"]["g-admin-b"]["members"], 0, "{python}");

    // Delete the Empty group: its offsets go with it.
    assert_eq!(delete_group(&admin, "g-admin-b"), Ok(()));
    assert_eq!(
        fetch_offsets(&bootstrap, "g-admin-b", "admin", &[0, 1, 2]),
        vec![-1; 3]
    );
    let listed = list_groups(&admin);
    assert!(!listed.contains_key("g-admin-b"), "{listed:?}");
    assert!(listed.contains_key("g-admin-a"), "{listed:?}");
    assert_eq!(
        delete_group(&admin, "g-admin-b"),
        Err(RDKafkaErrorCode::GroupIdNotFound)
    );

    // OffsetDelete on the Empty group's formerly subscribed topic.
    assert_eq!(
        delete_offsets(&bootstrap, "g-admin-a", "admin", &[0, 1, 2]),
        (0, vec![0; 3])
    );
    assert_eq!(
        fetch_offsets(&bootstrap, "g-admin-a", "admin", &[0, 1, 2]),
        vec![-1; 3]
    );
}

/// kafka-python and librdkafka members (two of each) in one group on a
/// 6-partition topic, all offering only `assignor`: they agree on it (the
/// group's protocol), split 2/2/1/1 in that assignor's shape (range:
/// contiguous partitions; roundrobin: partitions 4 apart), and 6000 records
/// produced once the split is stable are consumed exactly once between them,
/// each member only from its own partitions.
fn mixed_clients_share_a_group(assignor: &str) {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    let topic = format!("mixed-{assignor}");
    let group = format!("g-mixed-{assignor}");
    create_topic(&bootstrap, &topic, 6);

    let strategy = [("partition.assignment.strategy", assignor)];
    let mut members = vec![
        Member::python(&bootstrap, "py-0", &group, &topic, assignor, 10000),
        Member::rdkafka(&bootstrap, "rd-0", &group, &topic, &strategy),
        Member::python(&bootstrap, "py-1", &group, &topic, assignor, 10000),
        Member::rdkafka(&bootstrap, "rd-1", &group, &topic, &strategy),
    ];
    wait_for_split(&mut members, 6, &[2, 2, 1, 1]);
    pump_for(&mut members, Duration::from_millis(2 * HEARTBEAT_MS));
    assert!(
        split_is(&members, 6, &[2, 2, 1, 1]),
        "{}",
        describe_all(&members)
    );
    for member in &members {
        let partitions: Vec<i32> = member.assignment.clone().unwrap().into_iter().collect();
        let shaped = partitions.windows(2).all(|w| match assignor {
            "range" => w[1] - w[0] == 1,
            _ => w[1] - w[0] == 4,
        });
        assert!(shaped, "{assignor} gave {}: {partitions:?}", member.name);
    }
    let admin = admin(&bootstrap);
    let view = describe_group(&admin, &group);
    assert_eq!(
        (view.state.as_str(), view.protocol.as_str()),
        ("Stable", assignor)
    );
    assert_eq!(view.members.len(), 4);

    let before = assigns(&members);
    let expected = values(assignor, 6000);
    produce(&bootstrap, &topic, 6, &expected);
    consume_exactly_once(&mut members, &expected);
    assert_records_from_assignment(&members);
    for member in &members {
        assert!(!member.records.is_empty(), "{}", member.describe());
    }
    assert_eq!(assigns(&members), before, "no rebalance while consuming");
    for member in members {
        member.close();
    }
}

/// See `mixed_clients_share_a_group`: the "range" assignor.
#[test]
fn mixed_clients_share_a_group_with_range() {
    mixed_clients_share_a_group("range");
}

/// See `mixed_clients_share_a_group`: the "roundrobin" assignor.
#[test]
fn mixed_clients_share_a_group_with_roundrobin() {
    mixed_clients_share_a_group("roundrobin");
}

/// Cooperative-sticky rebalancing as Kafka 3.9 does it, callback by
/// callback (librdkafka's 0113 tests count these). With
/// `group.initial.rebalance.delay.ms=0` the first member's join completes
/// at once and it takes all four partitions; a second member then costs two
/// rounds: the first revokes two partitions from member 1 (and assigns
/// nothing to anyone), the second gives them to member 2. Kafka 3.9 makes
/// exactly these calls (measured with librdkafka against it: assign(4),
/// revoke(2), assign(), assign() and assign(), assign(2)). Before 17effd6
/// ferrolog woke its group actors every 100 ms, which let a second member
/// that subscribed within 100 ms into the first generation, so 0113's
/// `l_unsubscribe` passed against ferrolog with delay 0 and failed against
/// Kafka; it passes against both with Kafka's default delay of 3 s, which
/// `cooperative_members_joining_within_the_initial_delay_share_one_generation`
/// checks.
#[test]
fn cooperative_sticky_second_member_costs_two_rounds_as_in_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "coop", 4);
    let cooperative = [("partition.assignment.strategy", "cooperative-sticky")];
    let mut members = vec![Member::rdkafka(
        &bootstrap,
        "coop-1",
        "g-coop",
        "coop",
        &cooperative,
    )];
    pump_until(
        &mut members,
        SETTLE,
        "member 1 holds every partition",
        |m| m[0].assignment.as_ref().is_some_and(|a| a.len() == 4),
    );
    members.push(Member::rdkafka(
        &bootstrap,
        "coop-2",
        "g-coop",
        "coop",
        &cooperative,
    ));
    pump_until(&mut members, SETTLE, "two partitions each", |m| {
        m[1].events()
            .iter()
            .any(|e| matches!(e, RebalanceEvent::Assign(p) if p.len() == 2))
    });
    // Nothing more happens after that: no third round.
    pump_for(&mut members, Duration::from_millis(4 * HEARTBEAT_MS));
    let (first, second) = (members[0].events(), members[1].events());
    let moved = match second.last() {
        Some(RebalanceEvent::Assign(moved)) => moved.clone(),
        other => panic!("member 2 ends with {other:?}: {second:?}"),
    };
    let all: BTreeSet<i32> = (0..4).collect();
    assert_eq!(
        first,
        vec![
            RebalanceEvent::Assign(all),
            RebalanceEvent::Revoke(moved.clone()),
            RebalanceEvent::Assign(BTreeSet::new()),
            RebalanceEvent::Assign(BTreeSet::new()),
        ],
        "member 1's callbacks"
    );
    assert_eq!(
        second,
        vec![
            RebalanceEvent::Assign(BTreeSet::new()),
            RebalanceEvent::Assign(moved)
        ],
        "member 2's callbacks"
    );
    for member in members {
        member.close();
    }
}

/// With Kafka's default `group.initial.rebalance.delay.ms` (3 s), two
/// cooperative members that subscribe together share the first generation:
/// one assign call each, two partitions each, no revocation (the
/// precondition of librdkafka's 0113 `l_unsubscribe`).
#[test]
fn cooperative_members_joining_within_the_initial_delay_share_one_generation() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &["group.initial.rebalance.delay.ms=3000"]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "coop-delay", 4);
    let cooperative = [("partition.assignment.strategy", "cooperative-sticky")];
    let mut members = vec![
        Member::rdkafka(
            &bootstrap,
            "coop-d1",
            "g-coop-delay",
            "coop-delay",
            &cooperative,
        ),
        Member::rdkafka(
            &bootstrap,
            "coop-d2",
            "g-coop-delay",
            "coop-delay",
            &cooperative,
        ),
    ];
    wait_for_split(&mut members, 4, &[2, 2]);
    pump_for(&mut members, Duration::from_millis(4 * HEARTBEAT_MS));
    for member in &members {
        let events = member.events();
        assert!(
            matches!(events.as_slice(), [RebalanceEvent::Assign(p)] if p.len() == 2),
            "{}: {events:?}",
            member.name
        );
    }
    for member in members {
        member.close();
    }
}

/// Static membership (KIP-345): two librdkafka members with
/// `group.instance.id` split 3/3. One closes (librdkafka sends no LeaveGroup
/// for a static member) and a new consumer with the same instance id
/// subscribes within the 10 s session timeout: it gets the same partitions,
/// and the other member sees no rebalance at all (its assignment and
/// rebalance counts do not change, watched for several heartbeats). The
/// group stays Stable with two members.
#[test]
fn static_member_restart_causes_no_rebalance() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "static", 6);

    let member = |name: &str, instance: &str| {
        Member::rdkafka(
            &bootstrap,
            name,
            "g-static",
            "static",
            &[("group.instance.id", instance)],
        )
    };
    let mut members = vec![
        member("static-a", "instance-a"),
        member("static-b", "instance-b"),
    ];
    wait_for_split(&mut members, 6, &[3, 3]);
    pump_for(&mut members, Duration::from_millis(2 * HEARTBEAT_MS));
    assert!(split_is(&members, 6, &[3, 3]), "{}", describe_all(&members));
    let (a_assigns, a_revokes) = (members[0].assigns, members[0].revokes);
    let a_assignment = members[0].assignment.clone();
    let b_assignment = members[1].assignment.clone();
    let admin = admin(&bootstrap);
    let before = describe_group(&admin, "g-static");
    let id_of = |view: &GroupView, instance: &str| -> String {
        let ids: Vec<&String> = view
            .member_ids
            .iter()
            .filter(|id| id.starts_with(&format!("{instance}-")))
            .collect();
        assert_eq!(ids.len(), 1, "{instance} in {:?}", view.member_ids);
        ids[0].clone()
    };

    let old_b = members.pop().unwrap();
    old_b.close();
    members.push(member("static-b-restarted", "instance-b"));
    pump_until(
        &mut members,
        SETTLE,
        "the restarted member's assignment",
        |m| m[1].assignment.is_some(),
    );
    assert_eq!(members[1].assignment, b_assignment, "the same partitions");
    pump_for(&mut members, Duration::from_millis(4 * HEARTBEAT_MS));
    let a = &members[0];
    assert_eq!(
        (a.assigns, a.revokes, &a.assignment),
        (a_assigns, a_revokes, &a_assignment),
        "the other member saw a rebalance: {}",
        a.describe()
    );
    // Broker side: still Stable with two members; instance-a kept its
    // member id, instance-b has a new one (the old one is fenced); the
    // assignments did not move. (Like Kafka, the replaced member keeps the
    // client id it first joined with.)
    let after = describe_group(&admin, "g-static");
    assert_eq!(after.state, "Stable");
    assert_eq!(after.member_ids.len(), 2, "{:?}", after.member_ids);
    assert_eq!(id_of(&after, "instance-a"), id_of(&before, "instance-a"));
    assert_ne!(id_of(&after, "instance-b"), id_of(&before, "instance-b"));
    let mut assignments_before: Vec<_> = before.members.iter().map(|(_, a)| a.clone()).collect();
    let mut assignments_after: Vec<_> = after.members.iter().map(|(_, a)| a.clone()).collect();
    assignments_before.sort();
    assignments_after.sort();
    assert_eq!(assignments_after, assignments_before);
    for member in members {
        member.close();
    }
}

/// DescribeGroups shows member metadata, assignments and the protocol only
/// for a Stable group, as Kafka's `GroupMetadata.summary` does: a raw member
/// joins (JoinGroup v3) and, until it sends SyncGroup, the group is
/// CompletingRebalance with protocol "" and the member without metadata or
/// assignment; after its SyncGroup (v3, assigning itself) the group is
/// Stable and shows protocol "range", the subscription it joined with and
/// the assignment it sent; after its LeaveGroup the group is Empty.
#[test]
fn describe_shows_metadata_and_assignment_only_when_stable() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "describe", 2);
    let group = GroupId(StrBytes::from_static_str("g-describe"));
    coordinator_ready(&bootstrap, "g-describe");

    let subscription = versioned(
        &ConsumerProtocolSubscription::default()
            .with_topics(vec![StrBytes::from_static_str("describe")]),
        0,
    );
    let join = JoinGroupRequest::default()
        .with_group_id(group.clone())
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(subscription.clone())]);
    let joined: JoinGroupResponse = raw(&bootstrap, ApiKey::JoinGroup, 3, &join);
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_eq!(joined.leader, joined.member_id, "the only member leads");

    let described = describe_raw(&bootstrap, "g-describe");
    assert_eq!(described.group_state.as_str(), "CompletingRebalance");
    assert_eq!(described.protocol_type.as_str(), "consumer");
    assert_eq!(
        described.protocol_data.as_str(),
        "",
        "no protocol until Stable"
    );
    assert_eq!(described.members.len(), 1);
    assert_eq!(described.members[0].member_id, joined.member_id);
    assert!(
        described.members[0].member_metadata.is_empty()
            && described.members[0].member_assignment.is_empty(),
        "no metadata or assignment until Stable: {described:?}"
    );

    let assignment = versioned(
        &ConsumerProtocolAssignment::default().with_assigned_partitions(vec![
            kafka_protocol::messages::consumer_protocol_assignment::TopicPartition::default()
                .with_topic(TopicName(StrBytes::from_static_str("describe")))
                .with_partitions(vec![0, 1]),
        ]),
        0,
    );
    let sync = SyncGroupRequest::default()
        .with_group_id(group.clone())
        .with_generation_id(joined.generation_id)
        .with_member_id(joined.member_id.clone())
        .with_assignments(vec![SyncGroupRequestAssignment::default()
            .with_member_id(joined.member_id.clone())
            .with_assignment(assignment.clone())]);
    let synced: SyncGroupResponse = raw(&bootstrap, ApiKey::SyncGroup, 3, &sync);
    assert_eq!(synced.error_code, 0, "{synced:?}");
    assert_eq!(synced.assignment, assignment);

    let described = describe_raw(&bootstrap, "g-describe");
    assert_eq!(described.group_state.as_str(), "Stable");
    assert_eq!(described.protocol_data.as_str(), "range");
    assert_eq!(described.members.len(), 1);
    assert_eq!(described.members[0].member_metadata, subscription);
    assert_eq!(described.members[0].member_assignment, assignment);

    let leave = LeaveGroupRequest::default()
        .with_group_id(group)
        .with_members(vec![
            MemberIdentity::default().with_member_id(joined.member_id)
        ]);
    let left: LeaveGroupResponse = raw(&bootstrap, ApiKey::LeaveGroup, 3, &leave);
    assert_eq!(left.error_code, 0, "{left:?}");
    assert_eq!(left.members.len(), 1);
    assert_eq!(left.members[0].error_code, 0);
    let described = describe_raw(&bootstrap, "g-describe");
    assert_eq!(described.group_state.as_str(), "Empty");
    assert!(described.members.is_empty());
}

/// OffsetCommit refuses partitions that do not exist, as Kafka does
/// (UNKNOWN_TOPIC_OR_PARTITION per partition), for an unknown topic and for
/// a partition index past an existing topic's count, while committing the
/// valid partition in the same request; OffsetFetch then shows only that
/// one. (A simple commit: generation -1, no member, on a new group.)
/// OffsetDelete answers the same per partition and deletes the valid one.
#[test]
fn offset_commit_and_delete_refuse_unknown_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &["auto.create.topics.enable=false"]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "commit-known", 2);
    coordinator_ready(&bootstrap, "g-commit-raw");

    let partition = |index: i32| {
        OffsetCommitRequestPartition::default()
            .with_partition_index(index)
            .with_committed_offset(7)
    };
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("g-commit-raw")))
        .with_generation_id_or_member_epoch(-1)
        .with_retention_time_ms(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("commit-known")))
                .with_partitions(vec![partition(0), partition(99)]),
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("commit-unknown")))
                .with_partitions(vec![partition(0)]),
        ]);
    let response: OffsetCommitResponse = raw(&bootstrap, ApiKey::OffsetCommit, 2, &request);
    let mut codes: Vec<(String, i32, i16)> = response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.0.to_string(), p.partition_index, p.error_code))
        })
        .collect();
    codes.sort();
    assert_eq!(
        codes,
        vec![
            ("commit-known".to_string(), 0, 0),
            ("commit-known".to_string(), 99, 3),
            ("commit-unknown".to_string(), 0, 3),
        ]
    );
    assert_eq!(
        fetch_offsets(&bootstrap, "g-commit-raw", "commit-known", &[0, 1, 99]),
        vec![7, -1, -1]
    );
    // OffsetDelete checks partitions the same way.
    assert_eq!(
        delete_offsets(&bootstrap, "g-commit-raw", "commit-known", &[0, 99]),
        (0, vec![0, 3])
    );
    assert_eq!(
        delete_offsets(&bootstrap, "g-commit-raw", "commit-unknown", &[0]),
        (0, vec![3])
    );
    assert_eq!(
        fetch_offsets(&bootstrap, "g-commit-raw", "commit-known", &[0]),
        vec![-1]
    );
}

/// OffsetDelete on a group that has members but is not a "consumer" group
/// (here a raw member with protocol type "connect") answers NON_EMPTY_GROUP
/// for every partition, as Kafka does: the broker cannot tell what such a
/// group reads, so it will not delete offsets under it.
#[test]
fn offset_delete_refuses_active_groups_of_other_protocols() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path(), &[]);
    let bootstrap = broker.bootstrap.clone();
    create_topic(&bootstrap, "connect-data", 1);
    coordinator_ready(&bootstrap, "g-connect");
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("g-connect")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(StrBytes::from_static_str("connect"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("sessioned"))
            .with_metadata(bytes::Bytes::from_static(b"worker"))]);
    let joined: JoinGroupResponse = raw(&bootstrap, ApiKey::JoinGroup, 3, &join);
    assert_eq!(joined.error_code, 0, "{joined:?}");
    let (top, codes) = delete_offsets(&bootstrap, "g-connect", "connect-data", &[0]);
    assert_eq!(top, 0);
    assert_eq!(
        codes,
        vec![kafka_protocol::error::ResponseError::NonEmptyGroup.code()]
    );
}
