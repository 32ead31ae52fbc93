//! The rdkafka crate (librdkafka 2.x, a production Kafka client written by
//! others) against a real `ferrolog` process on 127.0.0.1: produce with every
//! codec and consume back byte for byte (also with fetch limits smaller than
//! a batch), seek by offset and by timestamp, acks=0 and acks=1, the broker
//! and topic size limits, LogAppendTime topics, topic auto-creation (on and
//! off), the admin APIs (create/delete topics, describe/alter configs,
//! create partitions, delete records, each also across a restart) and a
//! SIGKILL losing no acknowledged record.
//!
//! Consumers use manual `assign()` only and never commit: this file is about
//! the data path and the admin APIs, not consumer groups. librdkafka demands
//! a `group.id` before `assign()`, so one is set and never used.
//!
//! `FERROLOG_TEST_RECORDS` (default 100000) sets how many records each codec
//! round trip sends.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::BrokerProcess;
use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, ConfigSource, NewPartitions, NewTopic,
    ResourceSpecifier, TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{
    BaseProducer, BaseRecord, FutureProducer, FutureRecord, Producer, ProducerContext,
};
use rdkafka::{ClientContext, Offset, Timestamp, TopicPartitionList};

/// Every client call that can block is bounded by this.
const TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

fn record_count() -> usize {
    std::env::var("FERROLOG_TEST_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis() as i64
}

use common::{admin, client_config};

fn admin_options() -> AdminOptions {
    common::admin_options(TIMEOUT)
}

/// A consumer that never joins a group and never commits. librdkafka
/// refuses `assign()` without a `group.id`, so one is set, but nothing here
/// subscribes or commits, so the group is never used.
fn consumer(bootstrap: &str) -> BaseConsumer {
    consumer_with(bootstrap, &[])
}

fn consumer_with(bootstrap: &str, settings: &[(&str, &str)]) -> BaseConsumer {
    let mut config = client_config(bootstrap);
    config
        .set("group.id", "ferrolog-tests-no-group")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("fetch.wait.max.ms", "100");
    for (key, value) in settings {
        config.set(*key, *value);
    }
    config.create().expect("the consumer is created")
}

/// Assign `topic`/`partition` at `start` (out-of-range offsets reset to the
/// earliest) and return the offset of the first record polled, after
/// checking it is exactly its `records[seq]`. Bounded.
fn first_offset_from(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    start: Offset,
    records: &[TestRecord],
) -> i64 {
    let consumer = consumer_with(bootstrap, &[("auto.offset.reset", "earliest")]);
    assign(&consumer, topic, &[partition], start);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(
            Instant::now() < deadline,
            "nothing consumed from {topic}/{partition} at {start:?}"
        );
        match consumer.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => panic!("consuming {topic}/{partition} at {start:?} failed: {e}"),
            Some(Ok(m)) => {
                assert_same(&m, &records[seq_of_key(m.key().unwrap())]);
                return m.offset();
            }
        }
    }
}

fn create_topic(
    admin: &AdminClient<DefaultClientContext>,
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) {
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (key, value) in configs {
        topic = topic.set(key, value);
    }
    let results = block_on(admin.create_topics([&topic], &admin_options()))
        .expect("CreateTopics gets an answer");
    assert_eq!(results, vec![Ok(name.to_string())], "creating {name}");
}

/// Assign `partitions` of `topic` at `offset`.
fn assign(consumer: &BaseConsumer, topic: &str, partitions: &[i32], offset: Offset) {
    let mut list = TopicPartitionList::new();
    for &partition in partitions {
        list.add_partition_offset(topic, partition, offset)
            .expect("a valid offset");
    }
    consumer.assign(&list).expect("assign");
}

/// One record as sent and as expected back.
#[derive(Debug, Clone)]
struct TestRecord {
    seq: usize,
    key: String,
    value: Vec<u8>,
    timestamp: i64,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

impl TestRecord {
    fn owned_headers(&self) -> OwnedHeaders {
        let mut headers = OwnedHeaders::new_with_capacity(self.headers.len());
        for (key, value) in &self.headers {
            headers = headers.insert(Header {
                key: key.as_str(),
                value: value.as_deref(),
            });
        }
        headers
    }
}

/// `n` records tagged `tag`: unique keys `key-<seq>`, values embedding the
/// sequence number (varied length, compressible filler, some binary bytes),
/// two or three headers (one sometimes null) and timestamps `base_ts + seq`.
fn test_records(tag: &str, n: usize, base_ts: i64) -> Vec<TestRecord> {
    (0..n)
        .map(|seq| {
            let mut value = format!("{tag}|{seq:08}|").into_bytes();
            value.extend((0..seq % 97).map(|i| b"abcdefgh\x00\xff"[i % 10]));
            let mut headers = vec![
                ("seq".to_string(), Some(seq.to_le_bytes().to_vec())),
                ("tag".to_string(), Some(tag.as_bytes().to_vec())),
            ];
            if seq % 7 == 0 {
                headers.push(("nothing".to_string(), None));
            }
            TestRecord {
                seq,
                key: format!("key-{seq:08}"),
                value,
                timestamp: base_ts + seq as i64,
                headers,
            }
        })
        .collect()
}

/// The sequence number a record's key carries.
fn seq_of_key(key: &[u8]) -> usize {
    std::str::from_utf8(key)
        .ok()
        .and_then(|k| k.strip_prefix("key-"))
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("unexpected key {:?}", String::from_utf8_lossy(key)))
}

/// Panics unless `message` is exactly `expected`: key, value, headers (order,
/// names, values, nulls) and the CreateTime timestamp.
fn assert_same<M: Message>(message: &M, expected: &TestRecord) {
    let at = format!(
        "partition {} offset {} (seq {})",
        message.partition(),
        message.offset(),
        expected.seq
    );
    assert_eq!(message.key(), Some(expected.key.as_bytes()), "key at {at}");
    assert_eq!(
        message.payload(),
        Some(expected.value.as_slice()),
        "value at {at}"
    );
    assert_eq!(
        message.timestamp(),
        Timestamp::CreateTime(expected.timestamp),
        "timestamp at {at}"
    );
    let headers = message.headers().expect("the record has headers");
    let got: Vec<(String, Option<Vec<u8>>)> = (0..headers.count())
        .map(|i| {
            let h = headers.get(i);
            (h.key.to_string(), h.value.map(|v| v.to_vec()))
        })
        .collect();
    assert_eq!(got, expected.headers, "headers at {at}");
}

/// Counts delivery reports of a `BaseProducer`; the opaque is the record's seq.
#[derive(Default)]
struct Deliveries {
    /// (seq, partition, offset) of each success.
    acked: Mutex<Vec<(usize, i32, i64)>>,
    failed: Mutex<Vec<(usize, String)>>,
}

#[derive(Clone, Default)]
struct Tracker(Arc<Deliveries>);

impl ClientContext for Tracker {}

impl ProducerContext for Tracker {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, seq: usize) {
        match result {
            Ok(message) => {
                self.0
                    .acked
                    .lock()
                    .unwrap()
                    .push((seq, message.partition(), message.offset()))
            }
            Err((e, _)) => self.0.failed.lock().unwrap().push((seq, e.to_string())),
        }
    }
}

fn tracked_producer(bootstrap: &str, settings: &[(&str, &str)]) -> BaseProducer<Tracker> {
    let mut config = client_config(bootstrap);
    for (key, value) in settings {
        config.set(*key, *value);
    }
    config
        .create_with_context(Tracker::default())
        .expect("the producer is created")
}

/// Send every record (to `partition`, or where the partitioner puts it),
/// retrying on a full local queue, then flush. Bounded in time.
fn send_all(
    producer: &BaseProducer<Tracker>,
    topic: &str,
    records: &[TestRecord],
    partition: Option<i32>,
) {
    let deadline = Instant::now() + Duration::from_secs(120);
    for record in records {
        let mut base = BaseRecord::with_opaque_to(topic, record.seq)
            .key(record.key.as_str())
            .payload(record.value.as_slice())
            .timestamp(record.timestamp)
            .headers(record.owned_headers());
        if let Some(partition) = partition {
            base = base.partition(partition);
        }
        loop {
            match producer.send(base) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    assert!(Instant::now() < deadline, "the local queue never drained");
                    base = back;
                    producer.poll(Duration::from_millis(10));
                }
                Err((e, _)) => panic!("enqueueing seq {} failed: {e}", record.seq),
            }
        }
        if record.seq % 1000 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .expect("every record is delivered or failed within 120 s");
}

/// Consume `topic`'s `partitions` from their beginning until `expected`
/// records arrived (bounded). Returns (partition, offset, seq) in arrival
/// order, after checking each record is exactly its `records[seq]`.
fn consume_and_check(
    bootstrap: &str,
    topic: &str,
    partitions: &[i32],
    records: &[TestRecord],
    expected: usize,
) -> Vec<(i32, i64, usize)> {
    let consumer = consumer(bootstrap);
    assign(&consumer, topic, partitions, Offset::Beginning);
    let mut seen = Vec::with_capacity(expected);
    let deadline = Instant::now() + Duration::from_secs(120);
    while seen.len() < expected {
        assert!(
            Instant::now() < deadline,
            "only {} of {expected} records consumed within 120 s",
            seen.len()
        );
        match consumer.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => panic!("consuming {topic} failed: {e}"),
            Some(Ok(message)) => {
                let seq = seq_of_key(message.key().expect("every record has a key"));
                assert!(seq < records.len(), "seq {seq} was never sent");
                assert_same(&message, &records[seq]);
                seen.push((message.partition(), message.offset(), seq));
            }
        }
    }
    seen
}

/// Each seq exactly once; within each partition offsets and seqs increase.
fn assert_complete_and_ordered(seen: &[(i32, i64, usize)], n: usize) {
    let mut count = vec![0u32; n];
    for &(_, _, seq) in seen {
        count[seq] += 1;
    }
    let missing: Vec<usize> = (0..n).filter(|&s| count[s] == 0).take(10).collect();
    let doubled: Vec<usize> = (0..n).filter(|&s| count[s] > 1).take(10).collect();
    assert!(
        missing.is_empty(),
        "records never consumed, e.g. {missing:?}"
    );
    assert!(
        doubled.is_empty(),
        "records consumed twice, e.g. {doubled:?}"
    );
    let mut last: HashMap<i32, (i64, usize)> = HashMap::new();
    for &(partition, offset, seq) in seen {
        if let Some(&(prev_offset, prev_seq)) = last.get(&partition) {
            assert!(
                offset > prev_offset,
                "partition {partition}: offset {offset} after {prev_offset}"
            );
            assert!(
                seq > prev_seq,
                "partition {partition}: seq {seq} (offset {offset}) after seq {prev_seq}: not in produce order"
            );
        }
        last.insert(partition, (offset, seq));
    }
}

fn metadata_partitions(bootstrap: &str, topic: &str) -> Result<usize, RDKafkaErrorCode> {
    let consumer = consumer(bootstrap);
    let metadata = consumer
        .fetch_metadata(Some(topic), TIMEOUT)
        .expect("Metadata gets an answer");
    let entry = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .expect("the topic asked about is in the answer");
    match entry.error() {
        Some(e) => Err(RDKafkaErrorCode::from(e)),
        None => Ok(entry.partitions().len()),
    }
}

fn all_topic_names(bootstrap: &str) -> Vec<String> {
    let consumer = consumer(bootstrap);
    let metadata = consumer
        .fetch_metadata(None, TIMEOUT)
        .expect("Metadata gets an answer");
    metadata
        .topics()
        .iter()
        .map(|t| t.name().to_string())
        .collect()
}

fn partition_dirs(log_dir: &Path, topic: &str) -> Vec<String> {
    let prefix = format!("{topic}-");
    std::fs::read_dir(log_dir)
        .expect("the log dir is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|name| name.starts_with(&prefix))
        .collect()
}

/// How many stored batches of `topic` use each compression codec (the low
/// three bits of a v2 batch's attributes), read straight from the segment
/// files under `log_dir`.
fn stored_codecs(log_dir: &Path, topic: &str) -> BTreeMap<i16, usize> {
    let mut codecs = BTreeMap::new();
    for partition in partition_dirs(log_dir, topic) {
        for entry in std::fs::read_dir(log_dir.join(&partition)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            let mut at = 0;
            while at + 23 <= bytes.len() {
                let length = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
                assert_eq!(bytes[at + 16], 2, "a v2 batch at {at} of {path:?}");
                let attributes = i16::from_be_bytes([bytes[at + 21], bytes[at + 22]]);
                *codecs.entry(attributes & 0x7).or_insert(0) += 1;
                at += 12 + length as usize;
            }
        }
    }
    codecs
}

// ---------------------------------------------------------------------------
// Produce and consume with every codec
// ---------------------------------------------------------------------------

fn round_trip(codec: &str) {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = format!("codec-{codec}");
    create_topic(&admin(&broker.bootstrap), &topic, 8, &[]);
    let n = record_count();
    let records = test_records(codec, n, now_ms() - 10 * n as i64);
    let producer = tracked_producer(
        &broker.bootstrap,
        &[
            ("compression.codec", codec),
            ("linger.ms", "5"),
            ("queue.buffering.max.messages", "200000"),
        ],
    );
    send_all(&producer, &topic, &records, None);
    let deliveries = producer.context().0.clone();
    let failed = deliveries.failed.lock().unwrap();
    assert!(
        failed.is_empty(),
        "failed deliveries, e.g. {:?}",
        &failed[..failed.len().min(5)]
    );
    assert_eq!(deliveries.acked.lock().unwrap().len(), n);
    drop(failed);

    let partitions: Vec<i32> = (0..8).collect();
    let seen = consume_and_check(&broker.bootstrap, &topic, &partitions, &records, n);
    assert_complete_and_ordered(&seen, n);
    // The offsets the broker acknowledged are where the records are.
    let at: HashMap<usize, (i32, i64)> = seen.iter().map(|&(p, o, s)| (s, (p, o))).collect();
    for &(seq, partition, offset) in deliveries.acked.lock().unwrap().iter() {
        assert_eq!(
            at[&seq],
            (partition, offset),
            "seq {seq} is where its ack said"
        );
    }
    // More than one partition got records (the key hash spreads them).
    let used: std::collections::HashSet<i32> = seen.iter().map(|s| s.0).collect();
    assert!(used.len() > 1 || n < 100, "all records landed in {used:?}");
    // The batches really were stored with the codec (compression.type=producer
    // keeps them as sent; librdkafka may send a batch that does not shrink
    // uncompressed, hence "most").
    let id = match codec {
        "none" => 0,
        "gzip" => 1,
        "snappy" => 2,
        "lz4" => 3,
        "zstd" => 4,
        other => panic!("unknown codec {other}"),
    };
    let codecs = stored_codecs(dir.path(), &topic);
    let total: usize = codecs.values().sum();
    let with_codec = codecs.get(&id).copied().unwrap_or(0);
    assert!(
        with_codec * 10 >= total * 9 && with_codec > 0,
        "stored batches by codec: {codecs:?}"
    );
}

/// Uncompressed: `record_count()` records with keys, values, headers (one
/// null) and explicit CreateTime timestamps to an 8-partition topic made
/// with AdminClient; all 8 partitions consumed from the beginning give every
/// record back exactly once, byte-identical, at the offset its delivery
/// report named, and in produce order within each partition.
#[test]
fn codec_none_round_trip() {
    round_trip("none");
}

/// As `codec_none_round_trip`, with gzip batches.
#[test]
fn codec_gzip_round_trip() {
    round_trip("gzip");
}

/// As `codec_none_round_trip`, with snappy batches.
#[test]
fn codec_snappy_round_trip() {
    round_trip("snappy");
}

/// As `codec_none_round_trip`, with lz4 batches.
#[test]
fn codec_lz4_round_trip() {
    round_trip("lz4");
}

/// As `codec_none_round_trip`, with zstd batches.
#[test]
fn codec_zstd_round_trip() {
    round_trip("zstd");
}

/// Fetch limits smaller than a batch (KIP-74): partition 0 holds a 200 KB
/// record between small ones, partitions 1 and 2 hold 2000 records each; a
/// consumer with `fetch.max.bytes=5000` and `max.partition.fetch.bytes=1000`
/// still gets every record of all three partitions exactly, because the
/// first batch of a response always comes out whole and later partitions'
/// data is cut to the response budget.
#[test]
fn fetch_limits_smaller_than_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = "limits-small";
    create_topic(&admin(&broker.bootstrap), topic, 3, &[]);
    let mut records = test_records("small", 4011, now_ms() - 100_000);
    records[5].value = (0..200 * 1024).map(|i| (i % 251) as u8).collect();
    let producer = tracked_producer(&broker.bootstrap, &[("linger.ms", "5")]);
    send_all(&producer, topic, &records[..11], Some(0));
    send_all(&producer, topic, &records[11..2011], Some(1));
    send_all(&producer, topic, &records[2011..], Some(2));
    assert!(producer.context().0.failed.lock().unwrap().is_empty());
    assert_eq!(producer.context().0.acked.lock().unwrap().len(), 4011);

    let consumer = consumer_with(
        &broker.bootstrap,
        &[
            ("fetch.max.bytes", "5000"),
            ("max.partition.fetch.bytes", "1000"),
            ("message.max.bytes", "1000"),
        ],
    );
    assign(&consumer, topic, &[0, 1, 2], Offset::Beginning);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.len() < records.len() {
        assert!(Instant::now() < deadline, "only {} records", seen.len());
        match consumer.poll(Duration::from_millis(200)) {
            None => {}
            Some(Err(e)) => panic!("consuming failed: {e}"),
            Some(Ok(m)) => {
                let seq = seq_of_key(m.key().unwrap());
                assert_same(&m, &records[seq]);
                seen.push((m.partition(), m.offset(), seq));
            }
        }
    }
    assert_complete_and_ordered(&seen, records.len());
}

// ---------------------------------------------------------------------------
// Seeking
// ---------------------------------------------------------------------------

/// A one-partition topic `seek` holding 1000 records in lz4 batches of many
/// records (so seek targets fall inside batches), record `seq` at offset
/// `seq` with timestamp `base + 10 * seq`. Returns the records and `base`.
fn seek_fixture(broker: &BrokerProcess, null_headers: bool) -> (Vec<TestRecord>, i64) {
    create_topic(&admin(&broker.bootstrap), "seek", 1, &[]);
    let base = now_ms() - 100_000;
    let mut records = test_records("seek", 1000, 0);
    for r in &mut records {
        r.timestamp = base + 10 * r.seq as i64;
        if !null_headers {
            r.headers.retain(|(_, value)| value.is_some());
        }
    }
    let producer = tracked_producer(
        &broker.bootstrap,
        &[("compression.codec", "lz4"), ("linger.ms", "20")],
    );
    send_all(&producer, "seek", &records, Some(0));
    assert!(producer.context().0.failed.lock().unwrap().is_empty());
    // Single partition, one producer: record seq is at offset seq.
    for &(seq, _, offset) in producer.context().0.acked.lock().unwrap().iter() {
        assert_eq!(offset, seq as i64);
    }
    (records, base)
}

/// `offsets_for_times` (ListOffsets by timestamp) for partition 0 of `topic`.
fn offset_for_time(bootstrap: &str, topic: &str, timestamp: i64) -> Offset {
    let consumer = consumer(bootstrap);
    let mut list = TopicPartitionList::new();
    list.add_partition_offset(topic, 0, Offset::Offset(timestamp))
        .unwrap();
    let found = consumer
        .offsets_for_times(list, TIMEOUT)
        .expect("ListOffsets by timestamp gets an answer");
    let element = found
        .find_partition(topic, 0)
        .expect("partition 0 answered");
    element.error().expect("no error for partition 0");
    element.offset()
}

/// Seek by offset and by timestamp on `seek_fixture`'s 1000 records
/// (headers without null values; see the next test): assigning at
/// `Offset::Offset(n)` makes `n` the first offset seen, also inside a
/// compressed batch; `offsets_for_times(t)` answers the first offset whose
/// timestamp is >= t (an exact hit, between two records, before all, the
/// last) and End when every record is older than t; consuming from a
/// looked-up offset starts at that record.
#[test]
fn seek_by_offset_and_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let (records, base) = seek_fixture(&broker, false);
    let topic = "seek";

    let first_at = |offset: Offset| {
        let consumer = consumer(&broker.bootstrap);
        assign(&consumer, topic, &[0], offset);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            assert!(Instant::now() < deadline, "nothing consumed at {offset:?}");
            match consumer.poll(Duration::from_millis(200)) {
                None => {}
                Some(Err(e)) => panic!("consuming at {offset:?} failed: {e}"),
                Some(Ok(m)) => {
                    let seq = seq_of_key(m.key().unwrap());
                    assert_same(&m, &records[seq]);
                    return (m.offset(), seq);
                }
            }
        }
    };
    for n in [0i64, 1, 2, 333, 500, 998, 999] {
        assert_eq!(first_at(Offset::Offset(n)), (n, n as usize), "seek to {n}");
    }

    let lookup = |timestamp: i64| offset_for_time(&broker.bootstrap, topic, timestamp);
    assert_eq!(
        lookup(base - 1_000),
        Offset::Offset(0),
        "before every record"
    );
    assert_eq!(lookup(base), Offset::Offset(0), "the first timestamp");
    assert_eq!(
        lookup(base + 3_330),
        Offset::Offset(333),
        "an exact timestamp"
    );
    assert_eq!(
        lookup(base + 3_325),
        Offset::Offset(333),
        "between 332 and 333"
    );
    assert_eq!(lookup(base + 3_331), Offset::Offset(334), "just after 333");
    assert_eq!(
        lookup(base + 9_990),
        Offset::Offset(999),
        "the last timestamp"
    );
    assert_eq!(lookup(base + 9_991), Offset::End, "after every record");
    assert_eq!(first_at(lookup(base + 5_005)), (501, 501));
}

/// ListOffsets by timestamp over batches holding a record header with a
/// null value (legal: Kafka encodes it as length -1, and librdkafka sends
/// it): the answer must still be the first record with timestamp >= t.
#[test]
fn offsets_for_times_with_null_header_values() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let (_records, base) = seek_fixture(&broker, true);
    let lookup = |timestamp: i64| offset_for_time(&broker.bootstrap, "seek", timestamp);
    assert_eq!(
        lookup(base - 1_000),
        Offset::Offset(0),
        "before every record"
    );
    assert_eq!(
        lookup(base + 3_330),
        Offset::Offset(333),
        "an exact timestamp"
    );
    assert_eq!(
        lookup(base + 3_325),
        Offset::Offset(333),
        "between 332 and 333"
    );
    assert_eq!(lookup(base + 9_991), Offset::End, "after every record");
}

// ---------------------------------------------------------------------------
// acks
// ---------------------------------------------------------------------------

/// acks=0: the broker sends no response (a stray one would desynchronise
/// librdkafka's correlation ids); all 5000 records still arrive, checked by
/// consuming until the count is reached (bounded). The records go out in
/// two flushes, so the connection is reused after fire-and-forget requests.
#[test]
fn acks_zero_all_records_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = "acks0";
    create_topic(&admin(&broker.bootstrap), topic, 3, &[]);
    let records = test_records("acks0", 5000, now_ms() - 100_000);
    let producer = tracked_producer(&broker.bootstrap, &[("acks", "0"), ("linger.ms", "5")]);
    send_all(&producer, topic, &records[..2500], None);
    send_all(&producer, topic, &records[2500..], None);
    assert!(producer.context().0.failed.lock().unwrap().is_empty());
    let seen = consume_and_check(&broker.bootstrap, topic, &[0, 1, 2], &records, 5000);
    assert_complete_and_ordered(&seen, 5000);
}

/// acks=1 through `FutureProducer`: every one of 5000 sends resolves with a
/// partition and offset, and consuming finds each record at that offset.
#[test]
fn acks_one_every_record_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = "acks1";
    create_topic(&admin(&broker.bootstrap), topic, 3, &[]);
    let records = test_records("acks1", 5000, now_ms() - 100_000);
    let producer: FutureProducer = client_config(&broker.bootstrap)
        .set("acks", "1")
        .set("linger.ms", "5")
        .create()
        .expect("the producer is created");
    let acked = block_on(async {
        let futures: Vec<_> = records
            .iter()
            .map(|r| {
                let record = FutureRecord::to(topic)
                    .key(r.key.as_str())
                    .payload(r.value.as_slice())
                    .timestamp(r.timestamp)
                    .headers(r.owned_headers());
                producer.send(record, TIMEOUT)
            })
            .collect();
        let mut acked = Vec::new();
        for (r, outcome) in records
            .iter()
            .zip(futures_util::future::join_all(futures).await)
        {
            match outcome {
                Ok(delivery) => acked.push((r.seq, delivery.partition, delivery.offset)),
                Err((e, _)) => panic!("seq {} not acknowledged: {e}", r.seq),
            }
        }
        acked
    });
    let seen = consume_and_check(&broker.bootstrap, topic, &[0, 1, 2], &records, 5000);
    assert_complete_and_ordered(&seen, 5000);
    let at: HashMap<usize, (i32, i64)> = seen.iter().map(|&(p, o, s)| (s, (p, o))).collect();
    for (seq, partition, offset) in acked {
        assert_eq!(at[&seq], (partition, offset), "seq {seq}");
    }
}

// ---------------------------------------------------------------------------
// Limits and auto-creation
// ---------------------------------------------------------------------------

/// With `message.max.bytes=10000` on the broker and the client's own limit
/// raised, a 20 KB record is refused with MessageSizeTooLarge, while small
/// records before and after it are stored at offsets 0 and 1: nothing of
/// the big one was written.
#[test]
fn oversized_record_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["message.max.bytes=10000"]);
    let topic = "limits";
    create_topic(&admin(&broker.bootstrap), topic, 1, &[]);
    let producer: FutureProducer = client_config(&broker.bootstrap)
        .set("message.max.bytes", "1000000")
        .set("compression.codec", "none")
        .set("linger.ms", "0")
        .create()
        .expect("the producer is created");
    let big = vec![b'x'; 20 * 1024];
    let send = |payload: &[u8]| {
        block_on(
            producer.send(
                FutureRecord::<str, [u8]>::to(topic)
                    .key("k")
                    .payload(payload),
                TIMEOUT,
            ),
        )
        .map_err(|(e, _)| e)
    };
    let before = send(b"small-before").expect("a small record is accepted");
    assert_eq!((before.partition, before.offset), (0, 0));
    match send(&big) {
        Err(KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge)) => {}
        other => panic!("a 20 KB record must be refused as too large, got {other:?}"),
    }
    let after = send(b"small-after").expect("the broker still accepts small records");
    assert_eq!((after.partition, after.offset), (0, 1));

    let consumer = consumer(&broker.bootstrap);
    assign(&consumer, topic, &[0], Offset::Beginning);
    let mut values = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    while values.len() < 2 {
        assert!(Instant::now() < deadline, "got only {values:?}");
        if let Some(result) = consumer.poll(Duration::from_millis(200)) {
            let m = result.expect("consuming works");
            values.push((m.offset(), m.payload().unwrap().to_vec()));
        }
    }
    assert_eq!(
        values,
        vec![(0, b"small-before".to_vec()), (1, b"small-after".to_vec())]
    );
    assert_eq!(
        consumer
            .fetch_watermarks(topic, 0, TIMEOUT)
            .expect("ListOffsets answers"),
        (0, 2)
    );
}

/// A topic's own `max.message.bytes` (5000 here, below the broker's
/// default) is enforced: a 20 KB record is MessageSizeTooLarge; raising the
/// override with AlterConfigs takes effect on the live partition and the
/// same record is then accepted at offset 1 (after the small one at 0).
#[test]
fn topic_max_message_bytes_override_and_alter() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let admin = admin(&broker.bootstrap);
    create_topic(&admin, "capped", 1, &[("max.message.bytes", "5000")]);
    let producer: FutureProducer = client_config(&broker.bootstrap)
        .set("compression.codec", "none")
        .set("linger.ms", "0")
        .create()
        .expect("the producer is created");
    let big = vec![b'y'; 20 * 1024];
    let send = |payload: &[u8]| {
        block_on(
            producer.send(
                FutureRecord::<str, [u8]>::to("capped")
                    .key("k")
                    .payload(payload),
                TIMEOUT,
            ),
        )
        .map_err(|(e, _)| e)
    };
    assert_eq!(send(b"small").expect("accepted").offset, 0);
    match send(&big) {
        Err(KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge)) => {}
        other => panic!("20 KB over a 5000-byte topic limit must be refused, got {other:?}"),
    }
    let raise =
        AlterConfig::new(ResourceSpecifier::Topic("capped")).set("max.message.bytes", "100000");
    let altered = block_on(admin.alter_configs([&raise], &admin_options())).expect("an answer");
    assert!(altered[0].is_ok(), "{altered:?}");
    let delivered = send(&big).expect("accepted once the limit is raised");
    assert_eq!((delivered.partition, delivered.offset), (0, 1));
}

/// A topic created with `message.timestamp.type=LogAppendTime`: records sent
/// with old CreateTime timestamps come back stamped LogAppendTime with the
/// broker's clock (between just before the send and just after the ack),
/// every record of a batch with the same stamp, and the delivery report
/// carries that time too.
#[test]
fn log_append_time_topic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(
        &admin(&broker.bootstrap),
        "stamped",
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    );
    let producer: FutureProducer = client_config(&broker.bootstrap)
        .create()
        .expect("the producer is created");
    let before = now_ms();
    let delivery = block_on(
        producer.send(
            FutureRecord::<str, str>::to("stamped")
                .key("k")
                .payload("v")
                .timestamp(1_000_000),
            TIMEOUT,
        ),
    )
    .expect("delivered");
    let after = now_ms();
    let stamped = match delivery.timestamp {
        Timestamp::LogAppendTime(t) => t,
        other => panic!("the delivery report should carry the append time, got {other:?}"),
    };
    assert!(
        (before..=after).contains(&stamped),
        "{before} <= {stamped} <= {after}"
    );

    let consumer = consumer(&broker.bootstrap);
    assign(&consumer, "stamped", &[0], Offset::Beginning);
    let deadline = Instant::now() + TIMEOUT;
    let got = loop {
        assert!(Instant::now() < deadline, "nothing consumed");
        if let Some(result) = consumer.poll(Duration::from_millis(200)) {
            break result.expect("consuming works").timestamp();
        }
    };
    assert_eq!(got, Timestamp::LogAppendTime(stamped));
}

/// Producing to a topic nobody created, on a broker started with
/// `num.partitions=3` and the default `auto.create.topics.enable=true`,
/// creates it: the delivery succeeds and Metadata shows 3 partitions.
#[test]
fn produce_auto_creates_topic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["num.partitions=3"]);
    let topic = "born-on-first-produce";
    let producer: FutureProducer = client_config(&broker.bootstrap)
        .create()
        .expect("the producer is created");
    let delivery = block_on(producer.send(
        FutureRecord::<str, str>::to(topic).key("k").payload("v"),
        TIMEOUT,
    ))
    .expect("the record is delivered");
    assert!((0..3).contains(&delivery.partition));
    assert_eq!(delivery.offset, 0);
    assert_eq!(metadata_partitions(&broker.bootstrap, topic), Ok(3));
    assert_eq!(partition_dirs(dir.path(), topic).len(), 3);
}

/// With `auto.create.topics.enable=false`, producing to an unknown topic
/// fails (UnknownTopicOrPartition, or the client's own timeout waiting for
/// the topic to appear) and creates nothing: Metadata still says unknown
/// and no partition directory appears.
#[test]
fn produce_without_auto_creation_fails() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["auto.create.topics.enable=false"]);
    let topic = "never-created";
    let producer: FutureProducer = client_config(&broker.bootstrap)
        .set("topic.metadata.propagation.max.ms", "1000")
        .set("message.timeout.ms", "5000")
        .create()
        .expect("the producer is created");
    let outcome = block_on(producer.send(
        FutureRecord::<str, str>::to(topic).key("k").payload("v"),
        TIMEOUT,
    ));
    match outcome {
        Err((e, _))
            if matches!(
                e.rdkafka_error_code(),
                Some(RDKafkaErrorCode::UnknownTopicOrPartition)
                    | Some(RDKafkaErrorCode::UnknownTopic)
                    | Some(RDKafkaErrorCode::MessageTimedOut)
            ) => {}
        other => panic!("producing to an unknown topic must fail, got {other:?}"),
    }
    assert_eq!(
        metadata_partitions(&broker.bootstrap, topic),
        Err(RDKafkaErrorCode::UnknownTopicOrPartition)
    );
    assert_eq!(partition_dirs(dir.path(), topic), Vec::<String>::new());
}

// ---------------------------------------------------------------------------
// Admin
// ---------------------------------------------------------------------------

/// CreateTopics through AdminClient: a new topic is created with the asked
/// partition count (Metadata agrees); creating it again is
/// TopicAlreadyExists; an illegal name is InvalidTopic; 0 partitions is
/// InvalidPartitions; replication factor 3 on one broker is
/// InvalidReplicationFactor; a bad config value or an unknown config key
/// is InvalidConfig; validate_only creates nothing; and none of the
/// refused ones exists afterwards (Metadata by name and of all topics).
#[test]
fn admin_create_topics_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let admin = admin(&broker.bootstrap);
    create_topic(&admin, "created", 4, &[]);
    assert_eq!(metadata_partitions(&broker.bootstrap, "created"), Ok(4));
    assert_eq!(partition_dirs(dir.path(), "created").len(), 4);

    let create = |name: &str, partitions: i32| {
        let topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
        block_on(admin.create_topics([&topic], &admin_options())).expect("an answer")
    };
    assert_eq!(
        create("created", 4),
        vec![Err((
            "created".to_string(),
            RDKafkaErrorCode::TopicAlreadyExists
        ))]
    );
    assert_eq!(
        create("no/slashes!", 1),
        vec![Err((
            "no/slashes!".to_string(),
            RDKafkaErrorCode::InvalidTopic
        ))]
    );
    assert_eq!(
        create("zero-partitions", 0),
        vec![Err((
            "zero-partitions".to_string(),
            RDKafkaErrorCode::InvalidPartitions
        ))]
    );
    let create_with = |name: &str, replication: i32, configs: &[(&str, &str)]| {
        let mut topic = NewTopic::new(name, 1, TopicReplication::Fixed(replication));
        for (key, value) in configs {
            topic = topic.set(key, value);
        }
        block_on(admin.create_topics([&topic], &admin_options())).expect("an answer")
    };
    assert_eq!(
        create_with("three-replicas", 3, &[]),
        vec![Err((
            "three-replicas".to_string(),
            RDKafkaErrorCode::InvalidReplicationFactor
        ))]
    );
    assert_eq!(
        create_with("bad-value", 1, &[("retention.ms", "soon")]),
        vec![Err((
            "bad-value".to_string(),
            RDKafkaErrorCode::InvalidConfig
        ))]
    );
    assert_eq!(
        create_with("bad-key", 1, &[("no.such.config", "1")]),
        vec![Err((
            "bad-key".to_string(),
            RDKafkaErrorCode::InvalidConfig
        ))]
    );
    for refused in ["three-replicas", "bad-value", "bad-key"] {
        assert_eq!(
            metadata_partitions(&broker.bootstrap, refused),
            Err(RDKafkaErrorCode::UnknownTopicOrPartition),
            "{refused}"
        );
        assert_eq!(partition_dirs(dir.path(), refused), Vec::<String>::new());
    }

    // validate_only answers as if created, and creates nothing.
    let dry = NewTopic::new("dry-run", 2, TopicReplication::Fixed(1));
    let validated = block_on(admin.create_topics([&dry], &admin_options().validate_only(true)))
        .expect("an answer");
    assert_eq!(validated, vec![Ok("dry-run".to_string())]);
    assert_eq!(
        metadata_partitions(&broker.bootstrap, "dry-run"),
        Err(RDKafkaErrorCode::UnknownTopicOrPartition)
    );
    assert_eq!(partition_dirs(dir.path(), "dry-run"), Vec::<String>::new());

    let names = all_topic_names(&broker.bootstrap);
    assert!(names.contains(&"created".to_string()), "{names:?}");
    assert!(!names.contains(&"zero-partitions".to_string()), "{names:?}");
    assert!(!names.contains(&"no/slashes!".to_string()), "{names:?}");
}

/// DeleteTopics: the topic disappears from Metadata (listing all topics,
/// and asking for it by name says UnknownTopicOrPartition), its partition
/// directories are gone from the log dir, and deleting it again is
/// UnknownTopicOrPartition. Another topic is untouched. After a restart the
/// topic is still gone; creating it again gives fresh, empty partitions
/// whose offsets start at 0.
#[test]
fn admin_delete_topic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let admin = admin(&broker.bootstrap);
    create_topic(&admin, "doomed", 3, &[]);
    create_topic(&admin, "kept", 1, &[]);
    let producer = tracked_producer(&broker.bootstrap, &[]);
    send_all(&producer, "doomed", &test_records("d", 100, now_ms()), None);
    assert_eq!(producer.context().0.acked.lock().unwrap().len(), 100);
    drop(producer);
    assert_eq!(partition_dirs(dir.path(), "doomed").len(), 3);

    let deleted = block_on(admin.delete_topics(&["doomed"], &admin_options())).expect("an answer");
    assert_eq!(deleted, vec![Ok("doomed".to_string())]);
    let names = all_topic_names(&broker.bootstrap);
    assert!(!names.contains(&"doomed".to_string()), "{names:?}");
    assert!(names.contains(&"kept".to_string()), "{names:?}");
    assert_eq!(
        metadata_partitions(&broker.bootstrap, "doomed"),
        Err(RDKafkaErrorCode::UnknownTopicOrPartition)
    );
    assert_eq!(partition_dirs(dir.path(), "doomed"), Vec::<String>::new());
    assert_eq!(partition_dirs(dir.path(), "kept").len(), 1);

    let again = block_on(admin.delete_topics(&["doomed"], &admin_options())).expect("an answer");
    assert_eq!(
        again,
        vec![Err((
            "doomed".to_string(),
            RDKafkaErrorCode::UnknownTopicOrPartition
        ))]
    );

    // The deletion survives a restart: nothing comes back.
    drop(admin);
    let broker = BrokerProcess::restart_on(&broker.terminate(), &[]);
    assert_eq!(
        metadata_partitions(&broker.bootstrap, "doomed"),
        Err(RDKafkaErrorCode::UnknownTopicOrPartition)
    );
    assert_eq!(partition_dirs(dir.path(), "doomed"), Vec::<String>::new());

    // The name can be used again, with fresh, empty partitions.
    create_topic(&self::admin(&broker.bootstrap), "doomed", 2, &[]);
    assert_eq!(metadata_partitions(&broker.bootstrap, "doomed"), Ok(2));
    let reborn = test_records("r", 5, now_ms());
    let producer = tracked_producer(&broker.bootstrap, &[]);
    send_all(&producer, "doomed", &reborn, Some(1));
    let acked = producer.context().0.acked.lock().unwrap().clone();
    assert_eq!(
        acked.iter().map(|a| a.2).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    let consumer = consumer(&broker.bootstrap);
    assert_eq!(
        consumer.fetch_watermarks("doomed", 0, TIMEOUT).unwrap(),
        (0, 0)
    );
    assert_eq!(
        consumer.fetch_watermarks("doomed", 1, TIMEOUT).unwrap(),
        (0, 5)
    );
}

/// DescribeConfigs shows `retention.ms` as the broker default (604800000,
/// source Default) on a plain topic and as the override given at creation
/// (source DynamicTopic) on another; AlterConfigs changes the override and
/// DescribeConfigs shows the new value, also after a restart. A bad value
/// changes nothing, altering an unknown topic creates nothing, and broker
/// 0's configs are described. (rdkafka 0.39 drops the per-resource error
/// codes of both calls, so refusals are checked by their effect.)
#[test]
fn admin_describe_and_alter_configs() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let admin = admin(&broker.bootstrap);
    create_topic(&admin, "plain", 1, &[]);
    create_topic(&admin, "tuned", 1, &[("retention.ms", "3600000")]);

    let describe = |topic: &str| {
        let results =
            block_on(admin.describe_configs([&ResourceSpecifier::Topic(topic)], &admin_options()))
                .expect("an answer");
        assert_eq!(results.len(), 1);
        let resource = results
            .into_iter()
            .next()
            .unwrap()
            .unwrap_or_else(|e| panic!("describing {topic}: {e:?}"));
        let entry = resource
            .get("retention.ms")
            .unwrap_or_else(|| panic!("{topic} has retention.ms: {resource:?}"));
        let source = match entry.source {
            ConfigSource::Default => "default",
            ConfigSource::DynamicTopic => "topic",
            _ => "other",
        };
        (entry.value.clone(), source)
    };
    let (value, source) = describe("plain");
    assert_eq!(value.as_deref(), Some("604800000"));
    assert_eq!(source, "default");
    let (value, source) = describe("tuned");
    assert_eq!(value.as_deref(), Some("3600000"));
    assert_eq!(source, "topic");

    let alter = AlterConfig::new(ResourceSpecifier::Topic("tuned")).set("retention.ms", "7200000");
    let altered = block_on(admin.alter_configs([&alter], &admin_options())).expect("an answer");
    assert_eq!(altered.len(), 1);
    assert!(altered[0].is_ok(), "{altered:?}");
    let (value, source) = describe("tuned");
    assert_eq!(value.as_deref(), Some("7200000"));
    assert_eq!(source, "topic");
    // The other topic is untouched.
    assert_eq!(describe("plain").0.as_deref(), Some("604800000"));

    // A bad value is refused and changes nothing. (rdkafka 0.39's
    // alter_configs drops per-resource error codes, reporting every
    // resource as Ok, so only the effect can be checked.)
    let bad = AlterConfig::new(ResourceSpecifier::Topic("tuned")).set("retention.ms", "soon");
    block_on(admin.alter_configs([&bad], &admin_options())).expect("an answer");
    assert_eq!(describe("tuned").0.as_deref(), Some("7200000"));
    // Altering an unknown topic does not create it. (describe_configs also
    // drops per-resource errors: the unknown topic shows no entries.)
    let unknown = AlterConfig::new(ResourceSpecifier::Topic("nowhere")).set("retention.ms", "1");
    block_on(admin.alter_configs([&unknown], &admin_options())).expect("an answer");
    let described =
        block_on(admin.describe_configs([&ResourceSpecifier::Topic("nowhere")], &admin_options()))
            .expect("an answer");
    assert!(
        described[0].as_ref().map_or(true, |r| r.entries.is_empty()),
        "{described:?}"
    );
    assert_eq!(
        metadata_partitions(&broker.bootstrap, "nowhere"),
        Err(RDKafkaErrorCode::UnknownTopicOrPartition)
    );

    // The broker's own configs are described too.
    let described =
        block_on(admin.describe_configs([&ResourceSpecifier::Broker(0)], &admin_options()))
            .expect("an answer");
    let broker_config = described[0].as_ref().expect("broker 0 described");
    assert_eq!(
        broker_config
            .get("num.partitions")
            .and_then(|e| e.value.as_deref()),
        Some("1")
    );

    // Both survive a restart (they live in the metadata store).
    drop(admin);
    let broker = BrokerProcess::restart_on(&broker.terminate(), &[]);
    let admin = self::admin(&broker.bootstrap);
    let results = block_on(admin.describe_configs(
        [
            &ResourceSpecifier::Topic("tuned"),
            &ResourceSpecifier::Topic("plain"),
        ],
        &admin_options(),
    ))
    .expect("an answer");
    let values: Vec<Option<String>> = results
        .iter()
        .map(|r| {
            r.as_ref()
                .expect("described")
                .get("retention.ms")
                .and_then(|e| e.value.clone())
        })
        .collect();
    assert_eq!(
        values,
        vec![Some("7200000".to_string()), Some("604800000".to_string())]
    );
}

/// CreatePartitions raises a topic from 3 to 5 partitions: Metadata shows
/// 5, a record produced explicitly to partition 4 is delivered there at
/// offset 0 and can be consumed back; lowering the count is
/// InvalidPartitions, an unknown topic UnknownTopicOrPartition; after a
/// restart there are still 5 partitions and
/// partition 4 still holds its records.
#[test]
fn admin_create_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let admin = admin(&broker.bootstrap);
    create_topic(&admin, "growing", 3, &[]);
    let grown =
        block_on(admin.create_partitions([&NewPartitions::new("growing", 5)], &admin_options()))
            .expect("an answer");
    assert_eq!(grown, vec![Ok("growing".to_string())]);
    assert_eq!(metadata_partitions(&broker.bootstrap, "growing"), Ok(5));
    assert_eq!(partition_dirs(dir.path(), "growing").len(), 5);

    let records = test_records("p4", 10, now_ms());
    let producer = tracked_producer(&broker.bootstrap, &[]);
    send_all(&producer, "growing", &records, Some(4));
    let acked = producer.context().0.acked.lock().unwrap().clone();
    assert!(producer.context().0.failed.lock().unwrap().is_empty());
    assert_eq!(acked.len(), 10);
    assert!(acked.iter().all(|&(_, p, _)| p == 4), "{acked:?}");
    let seen = consume_and_check(&broker.bootstrap, "growing", &[4], &records, 10);
    assert_complete_and_ordered(&seen, 10);
    assert_eq!(seen[0].1, 0);

    let shrink =
        block_on(admin.create_partitions([&NewPartitions::new("growing", 2)], &admin_options()))
            .expect("an answer");
    assert_eq!(
        shrink,
        vec![Err((
            "growing".to_string(),
            RDKafkaErrorCode::InvalidPartitions
        ))]
    );

    let unknown =
        block_on(admin.create_partitions([&NewPartitions::new("nowhere", 2)], &admin_options()))
            .expect("an answer");
    assert_eq!(
        unknown,
        vec![Err((
            "nowhere".to_string(),
            RDKafkaErrorCode::UnknownTopicOrPartition
        ))]
    );

    // The new partitions and their data survive a restart.
    drop(admin);
    let broker = BrokerProcess::restart_on(&broker.terminate(), &[]);
    assert_eq!(metadata_partitions(&broker.bootstrap, "growing"), Ok(5));
    let seen = consume_and_check(&broker.bootstrap, "growing", &[4], &records, 10);
    assert_complete_and_ordered(&seen, 10);
}

/// DeleteRecords (`AdminClient::delete_records`) before offset 40 of a
/// 100-record partition: the answer's low watermark is 40, ListOffsets
/// earliest (`fetch_watermarks`) says (40, 100) while the other partition
/// stays (0, 0); a consumer from the beginning first sees offset 40, one
/// assigned at deleted offset 10 gets OffsetOutOfRange and resets to 40,
/// one at 70 starts at 70. Deleting below the log start changes nothing,
/// beyond the high watermark is OffsetOutOfRange, the log start survives
/// a clean restart, and deleting up to Offset::End empties the partition
/// (100, 100).
#[test]
fn admin_delete_records() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let admin = admin(&broker.bootstrap);
    create_topic(&admin, "trimmed", 2, &[]);
    let records = test_records("t", 100, now_ms());
    let producer = tracked_producer(&broker.bootstrap, &[]);
    send_all(&producer, "trimmed", &records, Some(0));
    assert_eq!(producer.context().0.acked.lock().unwrap().len(), 100);

    let delete = |offset: i64| {
        let mut list = TopicPartitionList::new();
        list.add_partition_offset("trimmed", 0, Offset::Offset(offset))
            .unwrap();
        let result = block_on(admin.delete_records(&list, &admin_options())).expect("an answer");
        let element = result.find_partition("trimmed", 0).expect("partition 0");
        element.error().map(|()| element.offset())
    };
    assert_eq!(delete(40), Ok(Offset::Offset(40)));
    let consumer = consumer(&broker.bootstrap);
    assert_eq!(
        consumer.fetch_watermarks("trimmed", 0, TIMEOUT).unwrap(),
        (40, 100)
    );
    // The other partition is untouched.
    assert_eq!(
        consumer.fetch_watermarks("trimmed", 1, TIMEOUT).unwrap(),
        (0, 0)
    );
    drop(consumer);
    let first = |start: Offset| first_offset_from(&broker.bootstrap, "trimmed", 0, start, &records);
    assert_eq!(first(Offset::Beginning), 40, "from the beginning");
    // Fetching below the log start is OffsetOutOfRange, so the client resets.
    assert_eq!(first(Offset::Offset(10)), 40, "from a deleted offset");
    assert_eq!(first(Offset::Offset(70)), 70, "from a kept offset");
    // Deleting below the current log start changes nothing.
    assert_eq!(delete(20), Ok(Offset::Offset(40)));
    match delete(101) {
        Err(e) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::OffsetOutOfRange) => {}
        other => panic!("deleting past the end must be OffsetOutOfRange, got {other:?}"),
    }

    // The new log start survives a clean restart.
    drop(admin);
    let broker = BrokerProcess::restart_on(&broker.terminate(), &[]);
    assert_eq!(
        self::consumer(&broker.bootstrap)
            .fetch_watermarks("trimmed", 0, TIMEOUT)
            .unwrap(),
        (40, 100)
    );
    assert_eq!(
        first_offset_from(&broker.bootstrap, "trimmed", 0, Offset::Beginning, &records),
        40
    );

    // Offset::End (-1) means "up to the high watermark": everything goes.
    let admin = self::admin(&broker.bootstrap);
    let mut list = TopicPartitionList::new();
    list.add_partition_offset("trimmed", 0, Offset::End)
        .unwrap();
    let result = block_on(admin.delete_records(&list, &admin_options())).expect("an answer");
    let element = result.find_partition("trimmed", 0).expect("partition 0");
    assert_eq!(element.error(), Ok(()));
    assert_eq!(element.offset(), Offset::Offset(100));
    assert_eq!(
        self::consumer(&broker.bootstrap)
            .fetch_watermarks("trimmed", 0, TIMEOUT)
            .unwrap(),
        (100, 100)
    );
}

// ---------------------------------------------------------------------------
// Crash
// ---------------------------------------------------------------------------

/// Durability of acks=1 across SIGKILL: 5000 records to 4 partitions, each
/// acknowledged (every delivery report waited for), then the broker is
/// killed and restarted on the same log dir; every acknowledged record is
/// at the partition and offset its acknowledgement named, unchanged.
#[test]
fn acked_records_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = "durable";
    create_topic(&admin(&broker.bootstrap), topic, 4, &[]);
    let records = test_records("durable", 5000, now_ms() - 100_000);
    let producer = tracked_producer(&broker.bootstrap, &[("acks", "1"), ("linger.ms", "2")]);
    send_all(&producer, topic, &records, None);
    let acked = producer.context().0.acked.lock().unwrap().clone();
    assert!(producer.context().0.failed.lock().unwrap().is_empty());
    assert_eq!(acked.len(), 5000);
    drop(producer);

    let log_dir = broker.kill();
    let broker = BrokerProcess::restart_on(&log_dir, &[]);
    let seen = consume_and_check(&broker.bootstrap, topic, &[0, 1, 2, 3], &records, 5000);
    assert_complete_and_ordered(&seen, 5000);
    let at: BTreeMap<usize, (i32, i64)> = seen.iter().map(|&(p, o, s)| (s, (p, o))).collect();
    for (seq, partition, offset) in acked {
        assert_eq!(at.get(&seq), Some(&(partition, offset)), "seq {seq}");
    }
}
