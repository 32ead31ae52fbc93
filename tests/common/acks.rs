//! The acknowledgement checker of the network-partition tests: a
//! librdkafka producer (acks=all, `enable.idempotence=true`) sends unique
//! ids from a thread of its own and records, from each delivery report,
//! where every ACKNOWLEDGED id was stored (partition, offset) and every
//! failed delivery; a [`Timeline`] holds those beside the fault events the
//! harness logs. [`verify`] then reads every partition from the beginning
//! with a fresh consumer and fails when an acknowledged id is missing, is
//! read at another (partition, offset) than its acknowledgement said, or
//! when any id is stored twice; its panic message carries the timeline.
//!
//! Self-contained (no `common` helpers), so a test can include it with
//! `#[path = "common/acks.rs"] mod acks;`.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::ClientContext;

/// At most this many failed deliveries are kept one by one (all are
/// counted).
const KEPT_FAILURES: usize = 2_000;
/// The sender stops by itself after this many ids or this long, whichever
/// comes first, even if nobody calls [`AckedProducer::finish`].
const MAX_IDS: u64 = 1_000_000;
const MAX_SENDING: Duration = Duration::from_secs(300);

/// Locks `mutex`, also after a panic elsewhere poisoned it (the data is
/// plain bookkeeping, still worth printing).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Time-stamped fault events (from the harness and the test) and the
/// producer's acknowledgements and failures, rendered together.
pub struct Timeline {
    start: Instant,
    events: Mutex<Vec<(Duration, String)>>,
    acks: Mutex<Vec<Ack>>,
    failures: Mutex<Failures>,
}

/// One acknowledged id and where the broker said it stored it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub id: u64,
    pub partition: i32,
    pub offset: i64,
    /// Since the timeline started.
    pub at: Duration,
}

/// One failed delivery (librdkafka gave up on the id).
#[derive(Clone, Debug)]
pub struct Failure {
    pub id: u64,
    pub partition: i32,
    pub error: String,
    pub at: Duration,
}

#[derive(Default)]
struct Failures {
    count: usize,
    kept: Vec<Failure>,
}

impl Timeline {
    pub fn new() -> Arc<Timeline> {
        Arc::new(Timeline {
            start: Instant::now(),
            events: Mutex::new(Vec::new()),
            acks: Mutex::new(Vec::new()),
            failures: Mutex::new(Failures::default()),
        })
    }

    /// Time since the timeline started.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Records (and prints, for a live view with `--nocapture`) an event.
    pub fn event(&self, text: impl Into<String>) {
        let at = self.now();
        let text = text.into();
        eprintln!("[{:>8.3}s] {text}", at.as_secs_f64());
        lock(&self.events).push((at, text));
    }

    /// Records an acknowledgement (the producer's delivery reports call
    /// it; a test of the checker itself may too).
    pub fn ack(&self, id: u64, partition: i32, offset: i64) {
        let at = self.now();
        lock(&self.acks).push(Ack {
            id,
            partition,
            offset,
            at,
        });
    }

    fn failure(&self, id: u64, partition: i32, error: String) {
        let at = self.now();
        let mut failures = lock(&self.failures);
        failures.count += 1;
        if failures.kept.len() < KEPT_FAILURES {
            failures.kept.push(Failure {
                id,
                partition,
                error,
                at,
            });
        }
    }

    /// Every acknowledgement so far, in arrival order.
    pub fn acks(&self) -> Vec<Ack> {
        lock(&self.acks).clone()
    }

    pub fn ack_count(&self) -> usize {
        lock(&self.acks).len()
    }

    /// Acknowledgements per partition that arrived at or after `since`.
    pub fn acks_since(&self, since: Duration) -> BTreeMap<i32, usize> {
        let mut counts = BTreeMap::new();
        for ack in lock(&self.acks).iter().filter(|a| a.at >= since) {
            *counts.entry(ack.partition).or_insert(0) += 1;
        }
        counts
    }

    /// (failures counted, the first ones kept).
    pub fn failures(&self) -> (usize, Vec<Failure>) {
        let failures = lock(&self.failures);
        (failures.count, failures.kept.clone())
    }

    /// Events, acknowledgements and failures in time order; the
    /// acknowledgements and failures summed per second and partition
    /// (offset range, error kinds), so that a run of thousands stays
    /// readable.
    pub fn render(&self) -> String {
        #[derive(Default)]
        struct Bucket {
            acks: BTreeMap<i32, (usize, i64, i64)>,
            failures: BTreeMap<i32, BTreeMap<String, usize>>,
        }
        let mut buckets: BTreeMap<u64, Bucket> = BTreeMap::new();
        for ack in lock(&self.acks).iter() {
            let entry = buckets
                .entry(ack.at.as_secs())
                .or_default()
                .acks
                .entry(ack.partition)
                .or_insert((0, i64::MAX, i64::MIN));
            entry.0 += 1;
            entry.1 = entry.1.min(ack.offset);
            entry.2 = entry.2.max(ack.offset);
        }
        for failure in lock(&self.failures).kept.iter() {
            *buckets
                .entry(failure.at.as_secs())
                .or_default()
                .failures
                .entry(failure.partition)
                .or_default()
                .entry(failure.error.clone())
                .or_insert(0) += 1;
        }
        let mut lines: Vec<(Duration, u8, String)> = Vec::new();
        for (at, text) in lock(&self.events).iter() {
            lines.push((*at, 0, format!("EVENT {text}")));
        }
        for (second, bucket) in buckets {
            let at = Duration::from_secs(second);
            if !bucket.acks.is_empty() {
                let parts: Vec<String> = bucket
                    .acks
                    .iter()
                    .map(|(p, (n, lo, hi))| format!("p{p} x{n} @{lo}..={hi}"))
                    .collect();
                lines.push((at, 1, format!("  acks   {}", parts.join(", "))));
            }
            for (partition, errors) in bucket.failures {
                let parts: Vec<String> = errors
                    .iter()
                    .map(|(error, n)| format!("{n} x {error}"))
                    .collect();
                lines.push((
                    at,
                    2,
                    format!("  FAILED p{partition}: {}", parts.join("; ")),
                ));
            }
        }
        lines.sort_by_key(|(at, kind, _)| (*at, *kind));
        let mut out = String::from("timeline (acks and failures per second of the run):\n");
        for (at, _, text) in lines {
            let _ = writeln!(out, "[{:>8.3}s] {text}", at.as_secs_f64());
        }
        let (count, _) = self.failures();
        let _ = writeln!(
            out,
            "{} acknowledged, {count} failed deliveries",
            self.ack_count()
        );
        out
    }
}

/// The producer's context: every delivery report goes to the timeline.
#[derive(Clone)]
struct Reports {
    timeline: Arc<Timeline>,
}

impl ClientContext for Reports {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        if std::env::var("FERROLOG_DUMP_LOGS").is_ok() {
            let at = self.timeline.now().as_secs_f64();
            eprintln!("[{at:>8.3}s] librdkafka {level:?} {fac}: {log_message}");
        }
    }
}

/// The record id a checker's payload carries (its decimal text).
pub fn id_of(payload: Option<&[u8]>) -> Option<u64> {
    std::str::from_utf8(payload?).ok()?.parse().ok()
}

impl ProducerContext for Reports {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(message) => match id_of(message.payload()) {
                Some(id) => self.timeline.ack(id, message.partition(), message.offset()),
                None => self.timeline.failure(
                    u64::MAX,
                    message.partition(),
                    "acknowledged a payload that is not an id".into(),
                ),
            },
            Err((error, message)) => self.timeline.failure(
                id_of(message.payload()).unwrap_or(u64::MAX),
                message.partition(),
                error.to_string(),
            ),
        }
    }
}

/// librdkafka settings of the checker's clients.
pub fn client_config(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("socket.timeout.ms", "10000")
        .set("socket.connection.setup.timeout.ms", "5000");
    if std::env::var("FERROLOG_DUMP_LOGS").is_ok() {
        config
            .set_log_level(rdkafka::config::RDKafkaLogLevel::Debug)
            .set("debug", "broker,topic,msg,eos");
    }
    config
}

/// Ids 0, 1, 2, ... sent at a steady rate (about 400 a second) from a
/// thread of its own, id `i` to partition `i % partitions`, acks=all with
/// idempotence on. Each acknowledgement and failure lands in the
/// timeline.
pub struct AckedProducer {
    timeline: Arc<Timeline>,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sender: std::thread::JoinHandle<Result<(), String>>,
}

impl AckedProducer {
    /// `message_timeout` bounds how long librdkafka retries one id (and so
    /// how long [`AckedProducer::finish`] can wait for the last reports).
    pub fn start(
        bootstrap: &str,
        topic: &str,
        partitions: i32,
        message_timeout: Duration,
        timeline: Arc<Timeline>,
    ) -> AckedProducer {
        let producer: ThreadedProducer<Reports> = client_config(bootstrap)
            .set("acks", "all")
            .set("enable.idempotence", "true")
            .set(
                "message.timeout.ms",
                message_timeout.as_millis().to_string(),
            )
            // Produce requests stuck on a cut-off leader give up (and are
            // retried with the same sequence numbers) well within a fault.
            .set("request.timeout.ms", "5000")
            .set("retry.backoff.ms", "100")
            .set("retry.backoff.max.ms", "1000")
            .set("topic.metadata.refresh.interval.ms", "2000")
            .set("linger.ms", "5")
            .create_with_context(Reports {
                timeline: timeline.clone(),
            })
            .expect("the checker's producer is created");
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let topic = topic.to_string();
        let (sent_by_thread, stop_seen, flush_timeout) = (
            sent.clone(),
            stop.clone(),
            message_timeout + Duration::from_secs(15),
        );
        let sender = std::thread::spawn(move || {
            let started = Instant::now();
            let mut id = 0;
            while id < MAX_IDS
                && started.elapsed() < MAX_SENDING
                && !stop_seen.load(Ordering::SeqCst)
            {
                let payload = id.to_string();
                let partition = (id % partitions as u64) as i32;
                // The local queue is large (100 000 messages); when it is
                // full anyway (a long outage), wait for room, bounded.
                let mut queued = false;
                for _ in 0..2_000 {
                    let record = BaseRecord::<(), _>::to(&topic)
                        .partition(partition)
                        .payload(&payload);
                    match producer.send(record) {
                        Ok(()) => {
                            queued = true;
                            break;
                        }
                        Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        Err((e, _)) => return Err(format!("sending id {id}: {e}")),
                    }
                }
                if !queued {
                    return Err(format!("id {id} found no room in the queue for 10 s"));
                }
                sent_by_thread.fetch_add(1, Ordering::SeqCst);
                id += 1;
                if id % 20 == 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            producer
                .flush(flush_timeout)
                .map_err(|e| format!("flushing the producer: {e}"))
        });
        AckedProducer {
            timeline,
            sent,
            stop,
            sender,
        }
    }

    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    /// Waits (bounded) until `count` acknowledgements arrived since
    /// `since` on each partition in `partitions`; false on timeout.
    pub fn wait_for_acks(
        &self,
        partitions: &[i32],
        count: usize,
        since: Duration,
        timeout: Duration,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let acks = self.timeline.acks_since(since);
            if partitions
                .iter()
                .all(|p| acks.get(p).copied().unwrap_or(0) >= count)
            {
                return true;
            }
            if Instant::now() >= deadline || self.sender.is_finished() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops sending and waits for the last delivery reports; the sender's
    /// error, if it had one.
    pub fn finish(self) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        let result = self
            .sender
            .join()
            .unwrap_or_else(|_| Err("the sender thread panicked".into()));
        self.timeline.event(format!(
            "producer finished: {} sent, {} acknowledged, {} failed",
            self.sent.load(Ordering::SeqCst),
            self.timeline.ack_count(),
            self.timeline.failures().0
        ));
        result
    }
}

/// What [`verify`] found.
#[derive(Debug)]
pub struct Verified {
    pub acknowledged: usize,
    /// Acknowledged by the client without an offset (see `verify`).
    pub without_offset: usize,
    pub read: usize,
    pub failed: usize,
}

/// Reads every partition of `topic` from the beginning to its high
/// watermark with a fresh consumer and checks each acknowledgement of the
/// timeline: the id must be read, exactly at the (partition, offset) it
/// was acknowledged at, and no id may be stored twice. Panics with every
/// violation (the first 20 of each kind) and the timeline.
pub fn verify(bootstrap: &str, topic: &str, partitions: i32, timeline: &Timeline) -> Verified {
    let acks = timeline.acks();
    let (failed, _) = timeline.failures();
    let read = match read_all(bootstrap, topic, partitions) {
        Ok(read) => read,
        Err(e) => panic!(
            "the verifying consumer could not read {topic}: {e}\n{}",
            timeline.render()
        ),
    };
    let mut at: HashMap<(i32, i64), u64> = HashMap::new();
    let mut places: HashMap<u64, Vec<(i32, i64)>> = HashMap::new();
    let mut not_ids = Vec::new();
    for &(partition, offset, id) in &read {
        match id {
            Some(id) => {
                at.insert((partition, offset), id);
                places.entry(id).or_default().push((partition, offset));
            }
            None => not_ids.push((partition, offset)),
        }
    }
    let mut problems: Vec<String> = Vec::new();
    let mut report = |kind: &str, list: Vec<String>| {
        if !list.is_empty() {
            problems.push(format!(
                "{} {kind}, first ones: {}",
                list.len(),
                list.iter().take(20).cloned().collect::<Vec<_>>().join("; ")
            ));
        }
    };
    let mut lost = Vec::new();
    let mut moved = Vec::new();
    let mut acked_twice = Vec::new();
    let mut without_offset = 0;
    let mut first_ack: HashMap<u64, Ack> = HashMap::new();
    for ack in &acks {
        if let Some(earlier) = first_ack.insert(ack.id, *ack) {
            acked_twice.push(format!(
                "id {} acknowledged at p{} @{} and again at p{} @{}",
                ack.id, earlier.partition, earlier.offset, ack.partition, ack.offset
            ));
        }
        match places.get(&ack.id) {
            None => lost.push(format!(
                "id {} (acknowledged at p{} @{} at {:.3}s; that offset now holds {})",
                ack.id,
                ack.partition,
                ack.offset,
                ack.at.as_secs_f64(),
                at.get(&(ack.partition, ack.offset))
                    .map_or("nothing".to_string(), |id| format!("id {id}"))
            )),
            // librdkafka acknowledges without an offset (-1001,
            // RD_KAFKA_OFFSET_INVALID) the records of an idempotent batch
            // whose answer was lost once a later batch of the same
            // partition is acknowledged ("implicit ack"): those must be
            // read in their partition, once, at whatever offset.
            Some(found) if ack.offset < 0 => {
                without_offset += 1;
                if !found.iter().any(|(p, _)| *p == ack.partition) {
                    moved.push(format!(
                        "id {} acknowledged in p{} without an offset at {:.3}s but read at {:?}",
                        ack.id,
                        ack.partition,
                        ack.at.as_secs_f64(),
                        found
                    ));
                }
            }
            Some(found) if !found.contains(&(ack.partition, ack.offset)) => moved.push(format!(
                "id {} acknowledged at p{} @{} at {:.3}s but read at {:?}",
                ack.id,
                ack.partition,
                ack.offset,
                ack.at.as_secs_f64(),
                found
            )),
            Some(_) => {}
        }
    }
    let mut duplicates: Vec<String> = places
        .iter()
        .filter(|(_, found)| found.len() > 1)
        .map(|(id, found)| format!("id {id} stored at {found:?}"))
        .collect();
    duplicates.sort();
    report("acknowledged ids missing (LOST)", lost);
    report(
        "acknowledged ids read at another (partition, offset)",
        moved,
    );
    report("ids stored more than once", duplicates);
    report("ids acknowledged twice", acked_twice);
    report(
        "records whose payload is not an id",
        not_ids.iter().map(|(p, o)| format!("p{p} @{o}")).collect(),
    );
    if acks.is_empty() {
        problems.push("nothing was acknowledged at all".into());
    }
    let summary = format!(
        "{} acknowledged ({without_offset} without an offset), {} failed deliveries, {} \
         records read from {topic}",
        acks.len(),
        failed,
        read.len()
    );
    timeline.event(format!("verified: {summary}"));
    if !problems.is_empty() {
        panic!(
            "the checker found {} problem kind(s) ({summary}):\n  {}\n{}",
            problems.len(),
            problems.join("\n  "),
            timeline.render()
        );
    }
    Verified {
        acknowledged: acks.len(),
        without_offset,
        read: read.len(),
        failed,
    }
}

/// Every record of `topic` from offset 0 to each partition's high
/// watermark (asked first, so the read has an end): (partition, offset,
/// id, when the payload is one). Bounded by 90 s.
fn read_all(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
) -> Result<Vec<(i32, i64, Option<u64>)>, String> {
    // Assigned, not subscribed (librdkafka wants a group.id anyway).
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", format!("verify-{topic}-{}", std::process::id()))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .map_err(|e| format!("consumer: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut ends = BTreeMap::new();
    for partition in 0..partitions {
        let end = loop {
            match consumer.fetch_watermarks(topic, partition, Duration::from_secs(5)) {
                Ok((0, high)) => break high,
                Ok((low, _)) => return Err(format!("p{partition} starts at {low}, not 0")),
                Err(e) if Instant::now() < deadline => {
                    eprintln!("watermarks of p{partition}: {e}, retrying");
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(e) => return Err(format!("watermarks of p{partition}: {e}")),
            }
        };
        ends.insert(partition, end);
    }
    let mut assignment = rdkafka::TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, rdkafka::Offset::Beginning)
            .map_err(|e| format!("assign: {e}"))?;
    }
    consumer
        .assign(&assignment)
        .map_err(|e| format!("assign: {e}"))?;
    let mut next: BTreeMap<i32, i64> = (0..partitions).map(|p| (p, 0)).collect();
    let mut read = Vec::new();
    while next.iter().any(|(p, offset)| *offset < ends[p]) {
        if Instant::now() > deadline {
            return Err(format!(
                "read up to {next:?} of {ends:?} within 90 s, not to the end"
            ));
        }
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                let (partition, offset) = (message.partition(), message.offset());
                if offset < ends[&partition] {
                    read.push((partition, offset, id_of(message.payload())));
                }
                next.insert(partition, offset + 1);
            }
            Some(Err(e)) => eprintln!("verifying consumer: {e}"),
            None => {}
        }
    }
    Ok(read)
}
