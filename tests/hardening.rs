//! Defects found in review of the single broker, each shown with the
//! scenario that exposed it, against a real broker process and real
//! clients.

mod common;

use std::time::{Duration, Instant};

use common::{admin, admin_options, block_on, client_config, BrokerProcess};
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

/// Create `name` with `partitions` (one replica), asserting it worked.
fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    let created = block_on(admin(bootstrap).create_topics(
        [&NewTopic::new(name, partitions, TopicReplication::Fixed(1))],
        &admin_options(Duration::from_secs(30)),
    ))
    .unwrap();
    assert_eq!(created, vec![Ok(name.to_string())]);
}

/// Make `__consumer_offsets` exist and load, as a client's first
/// FindCoordinator for `group` does.
fn load_offsets_topic(bootstrap: &str, group: &str) {
    let _ = client_config(bootstrap)
        .set("group.id", group)
        .create::<BaseConsumer>()
        .unwrap()
        .committed_offsets(rdkafka::TopicPartitionList::new(), Duration::from_secs(10));
}

/// Ask again while the answer is COORDINATOR_LOAD_IN_PROGRESS (14): the
/// group's `__consumer_offsets` partition is still loading (bounded, 30 s).
fn until_loaded<T>(mut ask: impl FnMut() -> T, code: impl Fn(&T) -> i16) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = ask();
        if code(&answer) != 14 || Instant::now() >= deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One raw OffsetCommit v7 of `offset` for `topic`-0 by `group`; its
/// partition's error code, once the group's partition has loaded.
fn raw_commit(
    bootstrap: &str,
    group: &'static str,
    member_id: &'static str,
    generation: i32,
    topic: &'static str,
    offset: i64,
) -> i16 {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{
        ApiKey, GroupId, OffsetCommitRequest, OffsetCommitResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(StrBytes::from_static_str(member_id))
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(topic)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    let response: OffsetCommitResponse = until_loaded(
        || {
            common::raw_request(
                bootstrap,
                ApiKey::OffsetCommit,
                7,
                &request,
                Duration::from_secs(10),
            )
        },
        |r: &OffsetCommitResponse| r.topics[0].partitions[0].error_code,
    );
    response.topics[0].partitions[0].error_code
}

/// Retention deletes old segments and moves the log start offset in the
/// shard; the partition actor must follow, or ListOffsets EARLIEST answers
/// a deleted offset and a consumer with `auto.offset.reset=earliest` resets
/// to it forever. Here: 1 s retention, tiny segments, a retention check
/// every second; after the old segments are gone, a new group reading from
/// the earliest offset receives exactly the records still in the log.
#[test]
fn consumers_resetting_to_earliest_follow_retention() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["log.retention.check.interval.ms=1000"]);
    let topic = NewTopic::new("retained", 1, TopicReplication::Fixed(1))
        .set("retention.ms", "1000")
        .set("segment.bytes", "1000");
    let created = block_on(
        admin(&broker.bootstrap).create_topics([&topic], &admin_options(Duration::from_secs(30))),
    )
    .unwrap();
    assert_eq!(created, vec![Ok("retained".to_string())]);
    let producer: BaseProducer = client_config(&broker.bootstrap)
        .set("linger.ms", "0")
        .create()
        .unwrap();
    let send = |from: usize, to: usize| {
        for i in from..to {
            let value = format!("record-{i:04}-{}", "x".repeat(100));
            producer
                .send(BaseRecord::<(), str>::to("retained").payload(value.as_str()))
                .unwrap();
            // One batch per record: many small segments.
            producer.flush(Duration::from_secs(10)).unwrap();
        }
    };
    send(0, 40);
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "watermarks")
        .create()
        .unwrap();
    // Wait (bounded) for retention to delete the old segments.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (low, _) = consumer
            .fetch_watermarks("retained", 0, Duration::from_secs(5))
            .unwrap();
        if low > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "retention never moved the log start offset"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    send(40, 45);
    let (low, high) = consumer
        .fetch_watermarks("retained", 0, Duration::from_secs(5))
        .unwrap();
    assert!(low > 0 && high == 45, "low {low}, high {high}");
    let reader: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "from-earliest")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    reader.subscribe(&["retained"]).unwrap();
    let mut offsets = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Retention keeps running: read until the last record, however many
    // older ones it deletes meanwhile.
    while offsets.last() != Some(&(high - 1)) && Instant::now() < deadline {
        if let Some(Ok(m)) = reader.poll(Duration::from_millis(200)) {
            offsets.push(m.offset());
        }
    }
    let first = *offsets.first().expect("the reader got records");
    assert!(
        first >= low,
        "first offset {first} below the log start {low}"
    );
    assert_eq!(offsets.last(), Some(&44));
}

/// JoinGroup v0–v6 have no nullable `protocol_name`; an error answer from
/// the group (here INVALID_SESSION_TIMEOUT, 26) must carry "" there, as
/// Kafka sends, not null (Java clients up to 2.4 cannot parse a null).
#[test]
fn join_group_errors_carry_an_empty_protocol_name_before_v7() {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::{ApiKey, GroupId, JoinGroupRequest, JoinGroupResponse};
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    load_offsets_topic(&broker.bootstrap, "nullable");
    let request = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("nullable")))
        .with_session_timeout_ms(1)
        .with_rebalance_timeout_ms(1000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(bytes::Bytes::new())]);
    let response: JoinGroupResponse = until_loaded(
        || {
            common::raw_request(
                &broker.bootstrap,
                ApiKey::JoinGroup,
                5,
                &request,
                Duration::from_secs(10),
            )
        },
        |r: &JoinGroupResponse| r.error_code,
    );
    assert_eq!(response.error_code, 26);
    assert_eq!(response.protocol_name, Some(StrBytes::default()));
}

/// A single broker whose config keeps Kafka's default
/// `offsets.topic.replication.factor=3`: consumer groups still work (the
/// internal topic is created with one replica) and one warning says so.
#[test]
fn a_minimal_config_gives_working_groups() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start(dir.path(), &["offsets.topic.replication.factor=3"]);
    assert_eq!(broker.count_lines("cannot be met by a single broker"), 1);
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "minimal")
        .create()
        .unwrap();
    create_topic(&broker.bootstrap, "m", 1);
    let mut list = rdkafka::TopicPartitionList::new();
    list.add_partition_offset("m", 0, rdkafka::Offset::Offset(3))
        .unwrap();
    consumer
        .commit(&list, rdkafka::consumer::CommitMode::Sync)
        .expect("the commit succeeds");
}

/// A Metadata request naming `__consumer_offsets` before any
/// FindCoordinator auto-creates it with `offsets.topic.num.partitions` (7
/// here), not `num.partitions` (1), so groups map to partitions that exist.
#[test]
fn metadata_creates_the_offsets_topic_with_its_own_settings() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(
        dir.path(),
        &["offsets.topic.num.partitions=7", "num.partitions=1"],
    );
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("allow.auto.create.topics", "true")
        .create()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metadata = consumer
            .fetch_metadata(Some("__consumer_offsets"), Duration::from_secs(10))
            .unwrap();
        let topic = &metadata.topics()[0];
        if topic.error().is_none() && !topic.partitions().is_empty() {
            assert_eq!(topic.partitions().len(), 7);
            break;
        }
        assert!(Instant::now() < deadline, "never created");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Deleting a topic forgets every group's committed offsets for it, with
/// tombstones (Kafka's `onPartitionsDeleted`): after the topic is
/// re-created, the group has no offset there, also after a restart that
/// reloads `__consumer_offsets`.
#[test]
fn deleting_a_topic_forgets_its_committed_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["offsets.topic.num.partitions=1"]);
    let admin_client = admin(&broker.bootstrap);
    let options = admin_options(Duration::from_secs(30));
    let topic = NewTopic::new("recreated", 1, TopicReplication::Fixed(1));
    block_on(admin_client.create_topics([&topic], &options)).unwrap();
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "forgetful")
        .create()
        .unwrap();
    let mut list = rdkafka::TopicPartitionList::new();
    list.add_partition_offset("recreated", 0, rdkafka::Offset::Offset(42))
        .unwrap();
    consumer
        .commit(&list, rdkafka::consumer::CommitMode::Sync)
        .unwrap();
    let committed = |consumer: &BaseConsumer| {
        let mut list = rdkafka::TopicPartitionList::new();
        list.add_partition("recreated", 0);
        consumer
            .committed_offsets(list, Duration::from_secs(10))
            .unwrap()
            .find_partition("recreated", 0)
            .unwrap()
            .offset()
    };
    assert_eq!(committed(&consumer), rdkafka::Offset::Offset(42));
    block_on(admin_client.delete_topics(&["recreated"], &options)).unwrap();
    block_on(admin_client.create_topics([&topic], &options)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while committed(&consumer) != rdkafka::Offset::Invalid {
        assert!(Instant::now() < deadline, "the old offset survived");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(consumer);
    let dir_path = broker.terminate();
    let broker = BrokerProcess::restart_on(&dir_path, &["offsets.topic.num.partitions=1"]);
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "forgetful")
        .create()
        .unwrap();
    assert_eq!(committed(&consumer), rdkafka::Offset::Invalid);
}

/// A malformed recovery-point checkpoint does not stop the broker: it logs
/// it, recovers every partition from the start, and serves every record.
/// A second broker on the same log dir says the dir is in use.
#[test]
fn a_malformed_checkpoint_means_recovery_not_a_dead_broker() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "kept", 1);
    let producer: BaseProducer = client_config(&broker.bootstrap).create().unwrap();
    for i in 0..20 {
        producer
            .send(BaseRecord::<(), str>::to("kept").payload(&format!("v{i}")))
            .unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
    let path = broker.terminate();
    std::fs::write(
        path.join("recovery-point-offset-checkpoint"),
        "0\n5\ngarbage",
    )
    .unwrap();
    let mut broker = BrokerProcess::restart_on(&path, &[]);
    assert!(broker.count_lines("recovery-point-offset-checkpoint is malformed") >= 1);
    let consumer: BaseConsumer = client_config(&broker.bootstrap).create().unwrap();
    let (low, high) = consumer
        .fetch_watermarks("kept", 0, Duration::from_secs(10))
        .unwrap();
    assert_eq!((low, high), (0, 20));
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args([
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties"),
        ])
        .args(["--override", &format!("log.dirs={}", path.display())])
        .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .args(["--override", "http.listener=http://127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("is in use by another process"), "{said}");
}

/// A well-formed batch whose record count does not match its offsets is
/// Kafka's INVALID_RECORD (87), which clients do not retry; damaged bytes
/// (a CRC mismatch) stay CORRUPT_MESSAGE (2).
#[test]
fn batches_that_do_not_add_up_are_invalid_records() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "checked", 1);
    let produce = |batch: Vec<u8>| -> i16 {
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("checked")))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(bytes::Bytes::from(batch)))])]);
        let response: ProduceResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::Produce,
            8,
            &request,
            Duration::from_secs(10),
        );
        response.responses[0].partition_responses[0].error_code
    };
    let good =
        ferrolog::storage::testing::batch_v2(3, 10, kafka_protocol::records::Compression::None);
    // The v2 header's record count (bytes 57..61) says 5 for offsets 0..=2;
    // the CRC32C (bytes 17..21, over bytes 21..) is made to match.
    let mut miscounted = good.to_vec();
    miscounted[57..61].copy_from_slice(&5i32.to_be_bytes());
    let crc = crc32c::crc32c(&miscounted[21..]);
    miscounted[17..21].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(produce(miscounted), 87);
    let mut damaged = good.to_vec();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    assert_eq!(produce(damaged), 2);
    assert_eq!(produce(good.to_vec()), 0);
}

/// OffsetFetch v0/v1 have no top-level error field: a coordinator error
/// (here NOT_COORDINATOR, 16, before `__consumer_offsets` exists) goes on
/// every requested partition, as Kafka does, instead of an empty answer
/// that a client (kafka-python, v1) reads as "nothing committed".
#[test]
fn offset_fetch_v1_puts_coordinator_errors_on_every_partition() {
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use kafka_protocol::messages::{
        ApiKey, GroupId, OffsetFetchRequest, OffsetFetchResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("early")))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_indexes(vec![0, 1])]));
    let response: OffsetFetchResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::OffsetFetch,
        1,
        &request,
        Duration::from_secs(10),
    );
    assert_eq!(response.topics.len(), 1);
    let partitions = &response.topics[0].partitions;
    assert_eq!(partitions.len(), 2);
    for partition in partitions {
        assert_eq!(partition.error_code, 16);
        assert_eq!(partition.committed_offset, -1);
    }
}

/// CreateTopics asking for 2^31-1 partitions (validate-only or not) is
/// refused with INVALID_PARTITIONS (37) before anything is allocated for
/// them; the broker's memory stays small and it keeps serving.
#[test]
fn absurd_partition_counts_are_refused_up_front() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    for validate_only in [true, false] {
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_validate_only(validate_only)
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("huge")))
                .with_num_partitions(i32::MAX)
                .with_replication_factor(1)]);
        let response: CreateTopicsResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::CreateTopics,
            5,
            &request,
            Duration::from_secs(10),
        );
        assert_eq!(
            response.topics[0].error_code, 37,
            "validate_only={validate_only}"
        );
    }
    let (peak_kib, _) = broker.memory_kib();
    assert!(peak_kib < 200 * 1024, "peak RSS {peak_kib} KiB");
    block_on(admin(&broker.bootstrap).create_topics(
        [&NewTopic::new("normal", 3, TopicReplication::Fixed(1))],
        &admin_options(Duration::from_secs(30)),
    ))
    .unwrap()
    .into_iter()
    .for_each(|r| assert!(r.is_ok(), "{r:?}"));
}

/// A fetch that finds less than `min_bytes` parks until data arrives: a
/// Fetch with a 20 s `max_wait_ms` at the log end returns with the record
/// produced 300 ms later, long before its wait is up; one that gets no data
/// returns empty once its (short) wait is over.
#[test]
fn parked_fetches_wake_on_new_data_and_end_at_max_wait() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "parked", 1);
    let fetch = |max_wait_ms: i32| {
        FetchRequest::default()
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("parked")))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])])
    };
    let started = Instant::now();
    let empty: FetchResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::Fetch,
        4,
        &fetch(500),
        Duration::from_secs(30),
    );
    assert!(started.elapsed() >= Duration::from_millis(500));
    let records = empty.responses[0].partitions[0].records.clone();
    assert!(records.is_none_or(|r| r.is_empty()));
    let bootstrap = broker.bootstrap.clone();
    let producer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let producer: BaseProducer = client_config(&bootstrap).create().unwrap();
        producer
            .send(BaseRecord::<(), str>::to("parked").payload("wake up"))
            .unwrap();
        producer.flush(Duration::from_secs(10)).unwrap();
    });
    let started = Instant::now();
    let woken: FetchResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::Fetch,
        4,
        &fetch(20_000),
        Duration::from_secs(30),
    );
    producer.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "woken by the data, not by the end of the wait"
    );
    let partition = &woken.responses[0].partitions[0];
    assert_eq!(partition.high_watermark, 1);
    assert!(partition.records.as_ref().is_some_and(|r| !r.is_empty()));
}

/// The response-wide `max_bytes` holds across partitions: a librdkafka
/// consumer with `fetch.max.bytes` 1,000,000 and `max.partition.fetch.bytes`
/// 20,000,000 (and a 2 MB receive limit) reads 3 partitions of 900 KiB
/// records. Kafka fills partitions in order up to `max_bytes`, letting only
/// the first batch exceed it; before, one response carried ~19 MB and the
/// client dropped the connection ("Invalid response size").
#[test]
fn fetch_max_bytes_holds_across_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "wide", 3);
    let producer: BaseProducer = client_config(&broker.bootstrap).create().unwrap();
    let value = vec![b'w'; 900 * 1024];
    for i in 0..30 {
        producer
            .send(
                BaseRecord::<(), [u8]>::to("wide")
                    .payload(&value[..])
                    .partition(i % 3),
            )
            .unwrap();
        producer.poll(Duration::ZERO);
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "wide-reader")
        .set("fetch.max.bytes", "1000000")
        .set("max.partition.fetch.bytes", "20000000")
        .set("receive.message.max.bytes", "2000000")
        .create()
        .unwrap();
    let mut list = rdkafka::TopicPartitionList::new();
    for p in 0..3 {
        list.add_partition_offset("wide", p, rdkafka::Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&list).unwrap();
    let mut received = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while received < 30 && Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                assert_eq!(m.payload().map(|p| p.len()), Some(900 * 1024));
                received += 1;
            }
            Some(Err(e)) => panic!("the consumer failed: {e}"),
            None => {}
        }
    }
    assert_eq!(received, 30);
}

/// A start-up failure is one clear line and a non-zero exit, no panic:
/// with the listener's port taken, the broker says so once and exits 1
/// (before, a supervised actor restarted during teardown and panicked with
/// "there is no reactor running").
#[test]
fn a_taken_port_is_one_clear_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args([
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties"),
        ])
        .args(["--override", &format!("log.dirs={}", dir.path().display())])
        .args([
            "--override",
            &format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!said.contains("panic"), "{said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    assert!(errors[0].contains("Address already in use"), "{said}");
}

/// Creates `topic` with `partitions` partitions and has each of
/// `written` take one acknowledged record.
fn create_and_produce_to(bootstrap: &str, topic: &str, partitions: i32, written: &[i32]) {
    let created = block_on(admin(bootstrap).create_topics(
        [&NewTopic::new(
            topic,
            partitions,
            TopicReplication::Fixed(1),
        )],
        &admin_options(Duration::from_secs(120)),
    ))
    .unwrap();
    assert_eq!(created, vec![Ok(topic.to_string())]);
    let producer: BaseProducer = client_config(bootstrap).create().unwrap();
    for &p in written {
        producer
            .send(BaseRecord::<(), str>::to(topic).payload("x").partition(p))
            .unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

/// A broker started with a soft open-file limit of 1024 raises it to the
/// hard limit at start, so a 600-partition topic is created and served.
/// Before, every creation past the limit failed with "Too many open
/// files". (Segments also hold one open file each now, not three: see
/// `a_segment_holds_one_open_file`.)
#[test]
fn the_open_file_limit_is_raised_at_start() {
    let hard = {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: a plain syscall on a struct we own.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        limit.rlim_max
    };
    assert!(
        hard >= 4096,
        "this test needs a hard open-file limit of at least 4096 (it is {hard})"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_nofile(dir.path(), &[], 1024);
    assert_eq!(broker.count_lines("open file limit raised from 1024"), 1);
    create_and_produce_to(&broker.bootstrap, "many", 600, &[0, 299, 599]);
    assert_eq!(broker.count_lines("Too many open files"), 0);
}

/// Kafka holds about one open file per segment; so does ferrolog: a
/// segment keeps its log file open, its two indexes live in memory and
/// their files are opened only to write them. 1,000 single-segment
/// partitions leave fewer than 1,300 files open (three per segment, as
/// before, would be over 3,000).
#[test]
fn a_segment_holds_one_open_file() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_and_produce_to(&broker.bootstrap, "files", 1000, &[0, 499, 999]);
    let open = std::fs::read_dir(format!("/proc/{}/fd", broker.pid()))
        .unwrap()
        .count();
    assert!(
        (1000..1300).contains(&open),
        "{open} files open for 1,000 segments"
    );
}

/// A creation that would run the broker out of open files is refused
/// before anything is created (POLICY_VIOLATION, saying why), instead of
/// failing half-way with "Too many open files": under a hard limit of 800,
/// a 1,000-partition topic (and 1,000 more partitions for a topic) is
/// refused and leaves no partition directory; 100 partitions still fit.
#[test]
fn a_creation_past_the_open_file_limit_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_hard_nofile(dir.path(), &[], 800);
    let refused = block_on(admin(&broker.bootstrap).create_topics(
        [&NewTopic::new("too-many", 1000, TopicReplication::Fixed(1))],
        &admin_options(Duration::from_secs(60)),
    ))
    .unwrap();
    assert_eq!(
        refused,
        vec![Err((
            "too-many".to_string(),
            rdkafka::types::RDKafkaErrorCode::PolicyViolation
        ))]
    );
    assert!(
        !dir.path().join("too-many-0").exists(),
        "nothing was created"
    );
    let created = block_on(admin(&broker.bootstrap).create_topics(
        [&NewTopic::new("fits", 100, TopicReplication::Fixed(1))],
        &admin_options(Duration::from_secs(60)),
    ))
    .unwrap();
    assert_eq!(created, vec![Ok("fits".to_string())]);
    let grown = block_on(admin(&broker.bootstrap).create_partitions(
        [&rdkafka::admin::NewPartitions::new("fits", 1100)],
        &admin_options(Duration::from_secs(60)),
    ))
    .unwrap();
    assert_eq!(
        grown,
        vec![Err((
            "fits".to_string(),
            rdkafka::types::RDKafkaErrorCode::PolicyViolation
        ))]
    );
    assert!(!dir.path().join("fits-100").exists());
    assert_eq!(broker.count_lines("Too many open files"), 0);
}

/// Static members (`group.instance.id`) that stop heartbeating without
/// leaving (librdkafka closes a static member without LeaveGroup) are
/// removed when their `session.timeout.ms` expires, and a group left
/// without members is Empty, so DeleteGroups succeeds: three groups of one
/// static member each, `session.timeout.ms=5000`, consumers closed, then
/// every group deletes within 15 s.
#[test]
fn expired_static_members_leave_their_groups_empty() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(
        dir.path(),
        &[
            "group.initial.rebalance.delay.ms=0",
            "group.min.session.timeout.ms=1000",
        ],
    );
    create_topic(&broker.bootstrap, "statics", 1);
    let groups = ["static-a", "static-b", "static-c"];
    for group in groups {
        let consumer: BaseConsumer = client_config(&broker.bootstrap)
            .set("group.id", group)
            .set("group.instance.id", format!("{group}-instance"))
            .set("session.timeout.ms", "5000")
            .set("heartbeat.interval.ms", "500")
            .create()
            .unwrap();
        consumer.subscribe(&["statics"]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while consumer.assignment().map(|a| a.count()).unwrap_or(0) == 0 {
            assert!(
                Instant::now() < deadline,
                "{group} never got its assignment"
            );
            consumer.poll(Duration::from_millis(100));
        }
        drop(consumer);
    }
    let admin_client = admin(&broker.bootstrap);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut waiting: Vec<&str> = groups.to_vec();
    while !waiting.is_empty() {
        let results =
            block_on(admin_client.delete_groups(&waiting, &admin_options(Duration::from_secs(10))))
                .unwrap();
        for result in &results {
            match result {
                Ok(group) => waiting.retain(|g| g != group),
                Err((_, rdkafka::types::RDKafkaErrorCode::NonEmptyGroup)) => {}
                Err(other) => panic!("unexpected DeleteGroups answer {other:?}"),
            }
        }
        assert!(
            waiting.is_empty() || Instant::now() < deadline,
            "groups still not deletable after their members' session timeout: {results:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Groups die (Kafka's `cleanupGroupMetadata`): a group whose members left
/// and whose committed offsets were all deleted is removed at the next
/// offsets check: it disappears from ListGroups and its actor stops.
#[test]
fn empty_groups_without_offsets_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(
        dir.path(),
        &[
            "offsets.retention.check.interval.ms=300",
            "group.initial.rebalance.delay.ms=0",
        ],
    );
    create_topic(&broker.bootstrap, "short-lived", 1);
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "ephemeral")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    consumer.subscribe(&["short-lived"]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while consumer.assignment().map(|a| a.count()).unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "never assigned");
        consumer.poll(Duration::from_millis(100));
    }
    let mut list = rdkafka::TopicPartitionList::new();
    list.add_partition_offset("short-lived", 0, rdkafka::Offset::Offset(1))
        .unwrap();
    consumer
        .commit(&list, rdkafka::consumer::CommitMode::Sync)
        .unwrap();
    drop(consumer);
    let listed = |consumer: &BaseConsumer| -> bool {
        consumer
            .fetch_group_list(Some("ephemeral"), Duration::from_secs(10))
            .map(|groups| groups.groups().iter().any(|g| g.name() == "ephemeral"))
            .unwrap_or(false)
    };
    let observer: BaseConsumer = client_config(&broker.bootstrap).create().unwrap();
    // With its offset it stays (Empty groups keep their offsets).
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        listed(&observer),
        "the group went away while it still had an offset"
    );
    {
        use kafka_protocol::messages::offset_delete_request::{
            OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
        };
        use kafka_protocol::messages::{
            ApiKey, GroupId, OffsetDeleteRequest, OffsetDeleteResponse, TopicName,
        };
        use kafka_protocol::protocol::StrBytes;
        let request = OffsetDeleteRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("ephemeral")))
            .with_topics(vec![OffsetDeleteRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("short-lived")))
                .with_partitions(vec![
                    OffsetDeleteRequestPartition::default().with_partition_index(0)
                ])]);
        let response: OffsetDeleteResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::OffsetDelete,
            0,
            &request,
            Duration::from_secs(10),
        );
        assert_eq!(response.error_code, 0);
        assert_eq!(response.topics[0].partitions[0].error_code, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while listed(&observer) {
        assert!(
            Instant::now() < deadline,
            "the empty group was never removed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// DescribeConfigs reports a topic's real `min.insync.replicas`: the
/// broker's value when the topic has no override (it was hard-coded "1").
#[test]
fn describe_configs_reports_the_real_min_insync_replicas() {
    use rdkafka::admin::{OwnedResourceSpecifier, ResourceSpecifier};
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["min.insync.replicas=2"]);
    let admin_client = admin(&broker.bootstrap);
    let options = admin_options(Duration::from_secs(30));
    block_on(admin_client.create_topics(
        [&NewTopic::new("isr", 1, TopicReplication::Fixed(1))],
        &options,
    ))
    .unwrap();
    let described =
        block_on(admin_client.describe_configs([&ResourceSpecifier::Topic("isr")], &options))
            .unwrap();
    let resource = described[0].as_ref().expect("described");
    assert_eq!(
        resource.specifier,
        OwnedResourceSpecifier::Topic("isr".to_string())
    );
    let entry = resource
        .get("min.insync.replicas")
        .expect("min.insync.replicas is listed");
    assert_eq!(entry.value.as_deref(), Some("2"));
}

/// acks=0 has no response to carry an error: as Kafka does, a failed
/// acks=0 produce closes the connection (the client notices and refreshes
/// its metadata); a successful one leaves it open.
#[test]
fn a_failed_acks_zero_produce_closes_the_connection() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{
        ApiKey, ApiVersionsRequest, ProduceRequest, RequestHeader, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["auto.create.topics.enable=false"]);
    create_topic(&broker.bootstrap, "exists", 1);
    let produce = |topic: &str| {
        let request = ProduceRequest::default()
            .with_acks(0)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(ferrolog::storage::testing::batch_v2(
                        2,
                        10,
                        kafka_protocol::records::Compression::None,
                    )))])]);
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::Produce as i16)
            .with_request_api_version(7)
            .with_correlation_id(1);
        ferrolog::protocol::encode_request(&header, ApiKey::Produce, &request).unwrap()
    };
    let api_versions = {
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::ApiVersions as i16)
            .with_request_api_version(0)
            .with_correlation_id(2);
        ferrolog::protocol::encode_request(
            &header,
            ApiKey::ApiVersions,
            &ApiVersionsRequest::default(),
        )
        .unwrap()
    };
    // Success: no response to the produce, and the connection still serves.
    let mut stream = std::net::TcpStream::connect(&broker.bootstrap).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(&produce("exists")).unwrap();
    stream.write_all(&api_versions).unwrap();
    let mut prefix = [0u8; 4];
    stream
        .read_exact(&mut prefix)
        .expect("the ApiVersions answer");
    let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).unwrap();
    assert_eq!(i32::from_be_bytes([body[0], body[1], body[2], body[3]]), 2);
    // Failure (unknown topic, no auto-creation): the broker closes it.
    let mut stream = std::net::TcpStream::connect(&broker.bootstrap).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(&produce("missing")).unwrap();
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the connection stayed open: {other:?}"),
    }
}

/// DescribeGroups shows each member's real address as `client_host`
/// (Kafka's "/<ip>"): a member that joins from 127.0.0.2 is "/127.0.0.2"
/// (it was always "/127.0.0.1").
#[test]
fn describe_groups_shows_the_members_real_address() {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::{
        ApiKey, DescribeGroupsRequest, DescribeGroupsResponse, GroupId, JoinGroupRequest,
        JoinGroupResponse, RequestHeader, ResponseHeader,
    };
    use kafka_protocol::protocol::{Decodable, StrBytes};
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["group.initial.rebalance.delay.ms=0"]);
    load_offsets_topic(&broker.bootstrap, "addressed");
    let bootstrap: std::net::SocketAddr = broker.bootstrap.parse().unwrap();
    let mut stream = block_on(async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        socket.connect(bootstrap).await.unwrap().into_std().unwrap()
    });
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("addressed")))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(bytes::Bytes::new())]);
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::JoinGroup as i16)
        .with_request_api_version(3)
        .with_correlation_id(1);
    let response = until_loaded(
        || {
            stream
                .write_all(
                    &ferrolog::protocol::encode_request(&header, ApiKey::JoinGroup, &join).unwrap(),
                )
                .unwrap();
            let mut prefix = [0u8; 4];
            stream.read_exact(&mut prefix).unwrap();
            let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
            stream.read_exact(&mut body).unwrap();
            let mut buf = bytes::Bytes::from(body);
            ResponseHeader::decode(&mut buf, ApiKey::JoinGroup.response_header_version(3)).unwrap();
            JoinGroupResponse::decode(&mut buf, 3).unwrap()
        },
        |r| r.error_code,
    );
    assert_eq!(response.error_code, 0);
    let described: DescribeGroupsResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::DescribeGroups,
        0,
        &DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(StrBytes::from_static_str("addressed"))]),
        Duration::from_secs(10),
    );
    let members = &described.groups[0].members;
    assert_eq!(members.len(), 1);
    assert_eq!(members[0].client_host.to_string(), "/127.0.0.2");
}

/// A client that sends requests and stops reading would hold its responses
/// and the segment files they splice from forever: once a response cannot
/// be written for `connections.max.idle.ms` (2 s here), the broker closes
/// the connection with a log line, and serves other clients throughout.
#[test]
fn a_client_that_stops_reading_is_disconnected() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{ApiKey, FetchRequest, RequestHeader, TopicName};
    use kafka_protocol::protocol::StrBytes;
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start(dir.path(), &["connections.max.idle.ms=2000"]);
    create_topic(&broker.bootstrap, "heavy", 1);
    let producer: BaseProducer = client_config(&broker.bootstrap).create().unwrap();
    let value = vec![b'h'; 512 * 1024];
    for _ in 0..8 {
        producer
            .send(BaseRecord::<(), [u8]>::to("heavy").payload(&value[..]))
            .unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(8 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str("heavy")))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(8 << 20)])]);
    let mut stream = std::net::TcpStream::connect(&broker.bootstrap).unwrap();
    for i in 0..40 {
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::Fetch as i16)
            .with_request_api_version(4)
            .with_correlation_id(i);
        stream
            .write_all(
                &ferrolog::protocol::encode_request(&header, ApiKey::Fetch, &request).unwrap(),
            )
            .unwrap();
    }
    // Never read. The broker gives up on the writes and closes.
    broker.wait_for_line("it read nothing for 2000 ms", Duration::from_secs(30));
    let consumer: BaseConsumer = client_config(&broker.bootstrap).create().unwrap();
    let (_, high) = consumer
        .fetch_watermarks("heavy", 0, Duration::from_secs(10))
        .unwrap();
    assert_eq!(high, 8);
    drop(stream);
}

/// ListOffsets by timestamp walks the records of the batch it lands in:
/// one batch holds timestamps 1234 (offset 0) and 1999999999 (offset 1;
/// kafka-protocol's encoder keeps deltas within 32 bits); a lookup for
/// 1999999999 answers offset 1, one for 1000 answers 0, and one past every
/// record answers -1. After a later record with an older timestamp (the
/// test batches stamp 1,000,000), MAX_TIMESTAMP (-3) still answers offset 1.
#[test]
fn list_offsets_by_timestamp_finds_records_inside_a_batch() {
    use ferrolog::storage::records::{data_record, encode_records};
    use kafka_protocol::indexmap::IndexMap;
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{
        ApiKey, ListOffsetsRequest, ListOffsetsResponse, ProduceRequest, ProduceResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::Compression;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "stamped", 1);
    let records: Vec<_> = [1234i64, 1_999_999_999]
        .iter()
        .enumerate()
        .map(|(i, &timestamp)| {
            data_record(
                i,
                timestamp,
                None,
                Some(bytes::Bytes::from_static(b"v")),
                IndexMap::new(),
            )
        })
        .collect();
    let batch = encode_records(&records).unwrap();
    let produce = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("stamped")))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(batch))])]);
    let produced: ProduceResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::Produce,
        7,
        &produce,
        Duration::from_secs(10),
    );
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    let produce_more = || {
        let later = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("stamped")))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(ferrolog::storage::testing::batch_v2(
                        1,
                        5,
                        Compression::None,
                    )))])]);
        let produced: ProduceResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::Produce,
            7,
            &later,
            Duration::from_secs(10),
        );
        assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    };
    let lookup = |timestamp: i64| -> (i64, i64) {
        let request = ListOffsetsRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("stamped")))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(timestamp)])]);
        let response: ListOffsetsResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::ListOffsets,
            7,
            &request,
            Duration::from_secs(10),
        );
        let partition = &response.topics[0].partitions[0];
        assert_eq!(partition.error_code, 0);
        (partition.offset, partition.timestamp)
    };
    assert_eq!(lookup(1_999_999_999), (1, 1_999_999_999));
    assert_eq!(lookup(1000), (0, 1234));
    assert_eq!(lookup(2_000_000_000), (-1, -1));
    // MAX_TIMESTAMP (-3): the record with the largest timestamp, not the
    // last offset.
    produce_more();
    assert_eq!(lookup(-3), (1, 1_999_999_999));
}

/// The same through librdkafka, whose batches may hold timestamps further
/// apart than 32 bits (the batch format's deltas are varlongs): records at
/// 1234 and 999999999999 sent in one batch; a lookup for 999999999999
/// answers offset 1.
#[test]
fn list_offsets_by_timestamp_handles_wide_batches() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "wide-stamps", 1);
    let producer: BaseProducer = client_config(&broker.bootstrap)
        .set("linger.ms", "200")
        .create()
        .unwrap();
    for timestamp in [1234i64, 999_999_999_999] {
        producer
            .send(
                BaseRecord::<(), str>::to("wide-stamps")
                    .payload("v")
                    .partition(0)
                    .timestamp(timestamp),
            )
            .unwrap();
    }
    producer.flush(Duration::from_secs(10)).unwrap();
    let consumer: BaseConsumer = client_config(&broker.bootstrap).create().unwrap();
    let mut query = rdkafka::TopicPartitionList::new();
    query
        .add_partition_offset("wide-stamps", 0, rdkafka::Offset::Offset(999_999_999_999))
        .unwrap();
    let found = consumer
        .offsets_for_times(query, Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        found.find_partition("wide-stamps", 0).unwrap().offset(),
        rdkafka::Offset::Offset(1)
    );
}

/// Kafka's group-id rules: OffsetCommit and OffsetFetch accept the empty
/// group id (backwards compatibility), JoinGroup refuses it with
/// INVALID_GROUP_ID (24); LeaveGroup v3+ on an unknown group answers NONE at
/// the top and UNKNOWN_MEMBER_ID (25) per member.
#[test]
fn group_id_rules_and_leaving_an_unknown_group() {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::leave_group_request::MemberIdentity;
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use kafka_protocol::messages::{
        ApiKey, GroupId, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
        LeaveGroupResponse, OffsetFetchRequest, OffsetFetchResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "anonymous", 1);
    load_offsets_topic(&broker.bootstrap, "warm-up");
    let empty = || GroupId(StrBytes::from_static_str(""));
    assert_eq!(raw_commit(&broker.bootstrap, "", "", -1, "anonymous", 5), 0);
    let fetched: OffsetFetchResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::OffsetFetch,
        5,
        &OffsetFetchRequest::default()
            .with_group_id(empty())
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("anonymous")))
                .with_partition_indexes(vec![0])])),
        Duration::from_secs(10),
    );
    assert_eq!(fetched.topics[0].partitions[0].committed_offset, 5);
    let joined: JoinGroupResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::JoinGroup,
        5,
        &JoinGroupRequest::default()
            .with_group_id(empty())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(bytes::Bytes::new())]),
        Duration::from_secs(10),
    );
    assert_eq!(joined.error_code, 24);
    let left: LeaveGroupResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::LeaveGroup,
        3,
        &LeaveGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("never-existed")))
            .with_members(vec![
                MemberIdentity::default().with_member_id(StrBytes::from_static_str("m-1"))
            ]),
        Duration::from_secs(10),
    );
    assert_eq!(left.error_code, 0);
    assert_eq!(left.members.len(), 1);
    assert_eq!(left.members[0].error_code, 25);
}

/// OffsetCommit naming a generation (≥ 0) of a group that does not exist
/// answers ILLEGAL_GENERATION (22), as Kafka does, and creates no group;
/// a standalone commit (generation -1) still creates it.
#[test]
fn commits_in_a_generation_of_an_unknown_group_are_illegal() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "generational", 1);
    load_offsets_topic(&broker.bootstrap, "ghost");
    let commit = |generation: i32, member_id: &'static str| {
        raw_commit(
            &broker.bootstrap,
            "ghost",
            member_id,
            generation,
            "generational",
            3,
        )
    };
    assert_eq!(commit(5, "member-1"), 22);
    assert_eq!(commit(-1, ""), 0);
}

/// A topic's own configs apply to its log after a restart too: the log
/// loaded at start-up used to keep the broker's defaults (here a 1 MB
/// `max.message.bytes` instead of the topic's 1 000 bytes).
#[test]
fn topic_configs_apply_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = NewTopic::new("small-records", 1, TopicReplication::Fixed(1))
        .set("max.message.bytes", "1000");
    let created = block_on(
        admin(&broker.bootstrap).create_topics([&topic], &admin_options(Duration::from_secs(10))),
    )
    .unwrap();
    assert_eq!(created, vec![Ok("small-records".to_string())]);
    let big = || {
        ferrolog::storage::testing::batch_v2(1, 5_000, kafka_protocol::records::Compression::None)
    };
    let too_large = 10; // MESSAGE_TOO_LARGE
    assert_eq!(
        common::produce_records(&broker.bootstrap, "small-records", 0, big(), 1).error_code,
        too_large
    );
    let log_dir = broker.terminate();
    let broker = BrokerProcess::restart_on(&log_dir, &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        let code =
            common::produce_records(&broker.bootstrap, "small-records", 0, big(), 1).error_code;
        // Not the leader yet while the controller loads the topic.
        if code != 6 && code != 3 || Instant::now() > deadline {
            break code;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, too_large);
    broker.terminate();
}

/// Issue 8, item 15's measurement (set `FERROLOG_MEASURE=1`; run with
/// `--release`): 10,000 partitions over 1,000 topics on one broker,
/// created 100 topics per CreateTopics; open files and memory after the
/// creation, a clean restart's start-up time, open files and memory after
/// it, then one record to each of 200 random partitions.
#[test]
fn measure_ten_thousand_partitions() {
    if std::env::var("FERROLOG_MEASURE").is_err() {
        eprintln!("skipped: set FERROLOG_MEASURE=1 to measure");
        return;
    }
    let open_files = |broker: &BrokerProcess| {
        std::fs::read_dir(format!("/proc/{}/fd", broker.pid()))
            .map(|entries| entries.count())
            .unwrap_or(0)
    };
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let created = Instant::now();
    for batch in 0..10 {
        let topics: Vec<String> = (0..100)
            .map(|t| format!("t{:04}", batch * 100 + t))
            .collect();
        let new: Vec<NewTopic> = topics
            .iter()
            .map(|name| NewTopic::new(name, 10, TopicReplication::Fixed(1)))
            .collect();
        let results = block_on(
            admin(&broker.bootstrap).create_topics(&new, &admin_options(Duration::from_secs(300))),
        )
        .unwrap();
        assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    }
    let creation = created.elapsed();
    let (hwm, rss) = broker.memory_kib();
    let files = open_files(&broker);
    println!(
        "10,000 partitions created in {creation:?}: {files} open files, VmRSS {rss} KiB, VmHWM {hwm} KiB"
    );
    let log_dir = broker.terminate();
    let restarted = Instant::now();
    let broker = BrokerProcess::restart_on(&log_dir, &[]);
    let start_up = restarted.elapsed();
    let (hwm, rss) = broker.memory_kib();
    let files = open_files(&broker);
    println!(
        "clean restart: started in {start_up:?}: {files} open files, VmRSS {rss} KiB, VmHWM {hwm} KiB"
    );
    let producer: BaseProducer = client_config(&broker.bootstrap).create().unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..200 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let topic = format!("t{:04}", seed % 1000);
        let partition = ((seed >> 20) % 10) as i32;
        producer
            .send(
                BaseRecord::<(), str>::to(&topic)
                    .payload("x")
                    .partition(partition),
            )
            .unwrap();
    }
    producer.flush(Duration::from_secs(120)).unwrap();
    let (hwm, rss) = broker.memory_kib();
    println!(
        "after producing to 200 random partitions: {} open files, VmRSS {rss} KiB, VmHWM {hwm} KiB",
        open_files(&broker)
    );
}

/// Each stored v2 batch of `topic`-0 as (codec id, producer id), read from
/// the segment file itself.
fn stored_batches(log_dir: &std::path::Path, topic: &str) -> Vec<(u8, i64)> {
    let bytes = std::fs::read(log_dir.join(format!("{topic}-0/00000000000000000000.log")))
        .expect("the first segment");
    let mut batches = Vec::new();
    let mut at = 0;
    while at + 61 <= bytes.len() {
        let length = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let attributes = i16::from_be_bytes(bytes[at + 21..at + 23].try_into().unwrap());
        let producer_id = i64::from_be_bytes(bytes[at + 43..at + 51].try_into().unwrap());
        batches.push(((attributes & 7) as u8, producer_id));
        at += 12 + length;
    }
    batches
}

/// `compression.type` as Kafka honours it (issue 8, item 23): an lz4
/// idempotent producer's batches are stored gzip on a topic that says
/// gzip, and zstd on a topic that follows the broker's `zstd`; the
/// producer id survives the rewrite, and consumers read every record.
#[test]
fn compression_type_recompresses_stored_batches() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["compression.type=zstd"]);
    let created = block_on(
        admin(&broker.bootstrap).create_topics(
            [
                &NewTopic::new("gzipped", 1, TopicReplication::Fixed(1))
                    .set("compression.type", "gzip"),
                &NewTopic::new("broker-codec", 1, TopicReplication::Fixed(1)),
            ],
            &admin_options(Duration::from_secs(30)),
        ),
    )
    .unwrap();
    assert!(created.iter().all(|r| r.is_ok()), "{created:?}");
    let producer: BaseProducer = client_config(&broker.bootstrap)
        .set("compression.codec", "lz4")
        .set("enable.idempotence", "true")
        .set("linger.ms", "20")
        .create()
        .unwrap();
    for topic in ["gzipped", "broker-codec"] {
        for i in 0..200 {
            let payload = format!("{topic} record {i} {}", "x".repeat(100));
            producer
                .send(BaseRecord::<(), str>::to(topic).payload(&payload))
                .unwrap();
        }
    }
    producer.flush(Duration::from_secs(30)).unwrap();
    for (topic, codec) in [("gzipped", 1u8), ("broker-codec", 4u8)] {
        let batches = stored_batches(dir.path(), topic);
        assert!(!batches.is_empty());
        assert!(
            batches
                .iter()
                .all(|&(c, producer_id)| c == codec && producer_id >= 0),
            "{topic}: (codec, producer id) of each stored batch: {batches:?}"
        );
        let consumer: BaseConsumer = client_config(&broker.bootstrap)
            .set("group.id", format!("read-{topic}"))
            .set("auto.offset.reset", "earliest")
            .create()
            .unwrap();
        consumer.subscribe(&[topic]).unwrap();
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while seen.len() < 200 && Instant::now() < deadline {
            if let Some(Ok(message)) = consumer.poll(Duration::from_millis(200)) {
                seen.push(
                    String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned(),
                );
            }
        }
        let expected: Vec<String> = (0..200)
            .map(|i| format!("{topic} record {i} {}", "x".repeat(100)))
            .collect();
        assert_eq!(seen, expected, "{topic}: every record, in order");
    }
}

/// `queued.max.request.bytes` bounds the request bytes read and not yet
/// released, across connections, as Kafka's memory pool does: with it and
/// `socket.request.max.bytes` at 100,000, a connection that declares a
/// 90,000-byte request and sends only part of it holds 90,000 of them, so
/// another connection's 20 kB request is not read until the first one
/// goes; then it is answered. (Item 10.)
#[test]
fn queued_max_request_bytes_bounds_requests_read_broker_wide() {
    use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader};
    use kafka_protocol::protocol::StrBytes;
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(
        dir.path(),
        &[
            "socket.request.max.bytes=100000",
            "queued.max.request.bytes=100000",
        ],
    );
    let mut hog = std::net::TcpStream::connect(&broker.bootstrap).unwrap();
    hog.write_all(&90_000i32.to_be_bytes()).unwrap();
    hog.write_all(&[0u8; 10]).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::ApiVersions as i16)
        .with_request_api_version(0)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_string("c".repeat(20_000))));
    let request = ferrolog::protocol::encode_request(
        &header,
        ApiKey::ApiVersions,
        &ApiVersionsRequest::default(),
    )
    .unwrap();
    let mut other = std::net::TcpStream::connect(&broker.bootstrap).unwrap();
    other.write_all(&request).unwrap();
    other
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut prefix = [0u8; 4];
    let waited = other.read_exact(&mut prefix);
    assert!(
        waited.is_err(),
        "the second request was answered while the pool was spent"
    );
    drop(hog);
    other
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    other
        .read_exact(&mut prefix)
        .expect("answered once the first connection went");
    assert!(i32::from_be_bytes(prefix) > 0);
}

/// What a group keeps from a JoinGroup (a member's protocol metadata) is
/// copied out of the request frame, so membership does not pin the frame
/// and its `queued.max.request.bytes` share: after a member joins with 60
/// kB of metadata, another connection's 60 kB request is still read.
#[test]
fn group_membership_does_not_hold_request_memory() {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{
        ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, GroupId, JoinGroupRequest,
        JoinGroupResponse, MetadataRequest, MetadataResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(
        dir.path(),
        &[
            "socket.request.max.bytes=100000",
            "queued.max.request.bytes=100000",
            "group.initial.rebalance.delay.ms=0",
        ],
    );
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("pinned")))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(bytes::Bytes::from(vec![7u8; 60_000]))]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let _: FindCoordinatorResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::FindCoordinator,
            1,
            &FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("pinned")),
            Duration::from_secs(30),
        );
        let joined: JoinGroupResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::JoinGroup,
            3,
            &join,
            Duration::from_secs(30),
        );
        if joined.error_code == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "JoinGroup: error {}",
            joined.error_code
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // One ~60 kB frame: 300 unknown topic names of 200 characters.
    let topics = (0..300)
        .map(|i| {
            MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(format!("{i:0>200}")))))
        })
        .collect();
    let answered: MetadataResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::Metadata,
        4,
        &MetadataRequest::default()
            .with_topics(Some(topics))
            .with_allow_auto_topic_creation(false),
        Duration::from_secs(10),
    );
    assert_eq!(answered.topics.len(), 300);
}
