//! Client quotas (KIP-546 APIs, Kafka's throttling) against a real broker
//! process: AlterClientQuotas/DescribeClientQuotas with Kafka's entity
//! rules, and producers and consumers over `producer_byte_rate` and
//! `consumer_byte_rate` that are delayed (`throttle_time_ms`, a muted
//! connection) but never refused and never lose or repeat a record.
//! Kafka 3.9's kafka-configs runs against the same APIs in the Java suite
//! (`QuotaTest`).

mod common;

use std::time::{Duration, Instant};

use common::{client_config, raw_request, BrokerProcess, RawConnection};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;

const TIMEOUT: Duration = Duration::from_secs(30);
/// Short windows so a breach shows within seconds: the rate counts over
/// at least 2 s.
const WINDOWS: &[&str] = &["quota.window.num=3", "quota.window.size.seconds=1"];

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// AlterClientQuotas of one entity; its error code and message.
fn alter(
    bootstrap: &str,
    entity: &[(&str, Option<&str>)],
    ops: &[(&str, Option<f64>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let request = AlterClientQuotasRequest::default()
        .with_validate_only(validate_only)
        .with_entries(vec![EntryData::default()
            .with_entity(
                entity
                    .iter()
                    .map(|(t, n)| {
                        EntityData::default()
                            .with_entity_type(text(t))
                            .with_entity_name(n.map(text))
                    })
                    .collect(),
            )
            .with_ops(
                ops.iter()
                    .map(|(key, value)| {
                        OpData::default()
                            .with_key(text(key))
                            .with_value(value.unwrap_or(0.0))
                            .with_remove(value.is_none())
                    })
                    .collect(),
            )]);
    let response: AlterClientQuotasResponse =
        raw_request(bootstrap, ApiKey::AlterClientQuotas, 1, &request, TIMEOUT);
    let entry = &response.entries[0];
    (
        entry.error_code,
        entry.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// DescribeClientQuotas: (entity type, match type, name) components.
fn describe(
    bootstrap: &str,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> DescribeClientQuotasResponse {
    let request = DescribeClientQuotasRequest::default()
        .with_strict(strict)
        .with_components(
            components
                .iter()
                .map(|(t, m, n)| {
                    ComponentData::default()
                        .with_entity_type(text(t))
                        .with_match_type(*m)
                        .with_match(n.map(text))
                })
                .collect(),
        );
    raw_request(
        bootstrap,
        ApiKey::DescribeClientQuotas,
        1,
        &request,
        TIMEOUT,
    )
}

/// Each described entity as "type=name,..." with its values.
fn entries(response: &DescribeClientQuotasResponse) -> Vec<(String, Vec<(String, f64)>)> {
    assert_eq!(response.error_code, 0, "{:?}", response.error_message);
    let mut found: Vec<_> = response
        .entries
        .iter()
        .flatten()
        .map(|e| {
            let mut entity: Vec<String> = e
                .entity
                .iter()
                .map(|c| {
                    format!(
                        "{}={}",
                        c.entity_type,
                        c.entity_name
                            .as_ref()
                            .map_or("<default>".into(), |n| n.to_string())
                    )
                })
                .collect();
            entity.sort();
            let values = e
                .values
                .iter()
                .map(|v| (v.key.to_string(), v.value))
                .collect();
            (entity.join(","), values)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Kafka's entity and value rules, filters, validate_only and removal.
#[test]
fn quotas_are_altered_and_described_as_kafka_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    let b = broker.bootstrap.as_str();
    let ok = (0, None);
    assert_eq!(
        alter(
            b,
            &[("client-id", Some("app"))],
            &[("producer_byte_rate", Some(1024.0))],
            false
        ),
        ok
    );
    assert_eq!(
        alter(
            b,
            &[("user", Some("alice")), ("client-id", None)],
            &[("request_percentage", Some(12.5))],
            false
        ),
        ok
    );
    assert_eq!(
        alter(
            b,
            &[("user", None)],
            &[("consumer_byte_rate", Some(2048.0))],
            false
        ),
        ok
    );
    assert_eq!(
        alter(
            b,
            &[("ip", Some("10.0.0.1"))],
            &[("connection_creation_rate", Some(5.0))],
            false
        ),
        ok
    );
    let invalid = ResponseError::InvalidRequest.code();
    for (entity, op) in [
        (
            vec![("client-id", Some("app"))],
            ("producer_byte_rate", Some(1.5)),
        ),
        (
            vec![("client-id", Some("app"))],
            ("retention.ms", Some(1.0)),
        ),
        (
            vec![("client-id", Some(""))],
            ("producer_byte_rate", Some(1.0)),
        ),
        (
            vec![("user", Some("a")), ("ip", Some("10.0.0.1"))],
            ("producer_byte_rate", Some(1.0)),
        ),
        (
            vec![("ip", Some("not-an-address"))],
            ("connection_creation_rate", Some(1.0)),
        ),
        (
            vec![("ip", Some("10.0.0.1"))],
            ("producer_byte_rate", Some(1.0)),
        ),
    ] {
        assert_eq!(
            alter(b, &entity, &[op], false).0,
            invalid,
            "{entity:?} {op:?}"
        );
    }
    let everything = entries(&describe(b, &[], false));
    assert_eq!(
        everything,
        vec![
            (
                "client-id=<default>,user=alice".to_string(),
                vec![("request_percentage".to_string(), 12.5)]
            ),
            (
                "client-id=app".to_string(),
                vec![("producer_byte_rate".to_string(), 1024.0)]
            ),
            (
                "ip=10.0.0.1".to_string(),
                vec![("connection_creation_rate".to_string(), 5.0)]
            ),
            (
                "user=<default>".to_string(),
                vec![("consumer_byte_rate".to_string(), 2048.0)]
            ),
        ]
    );
    // Exact, default and any matches; strict leaves out larger entities.
    assert_eq!(
        entries(&describe(b, &[("client-id", 0, Some("app"))], true)).len(),
        1
    );
    assert_eq!(
        entries(&describe(b, &[("user", 1, None)], true))[0].0,
        "user=<default>"
    );
    assert_eq!(entries(&describe(b, &[("user", 2, None)], false)).len(), 2);
    assert_eq!(entries(&describe(b, &[("user", 2, None)], true)).len(), 1);
    assert_eq!(entries(&describe(b, &[("ip", 2, None)], false)).len(), 1);
    assert_eq!(
        describe(b, &[("user", 2, None), ("ip", 2, None)], false).error_code,
        invalid
    );
    // validate_only changes nothing; removing the last key drops the entity.
    assert_eq!(
        alter(
            b,
            &[("client-id", Some("app"))],
            &[("producer_byte_rate", Some(4096.0))],
            true
        ),
        ok
    );
    assert_eq!(
        entries(&describe(b, &[("client-id", 0, Some("app"))], true))[0].1,
        vec![("producer_byte_rate".to_string(), 1024.0)]
    );
    assert_eq!(
        alter(
            b,
            &[("client-id", Some("app"))],
            &[("producer_byte_rate", None)],
            false
        ),
        ok
    );
    assert!(entries(&describe(b, &[("client-id", 0, Some("app"))], true)).is_empty());
}

fn produce_request(topic: &str, records: bytes::Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(text(topic)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])])
}

/// Raw Produce v7 on `connection`: (error code, base offset, throttle ms).
fn produce_on(
    connection: &mut RawConnection,
    topic: &str,
    records: usize,
    value_len: usize,
) -> (i16, i64, i32) {
    let batch = ferrolog::storage::testing::batch_v2(
        records,
        value_len,
        kafka_protocol::records::Compression::None,
    );
    let response: ProduceResponse = connection
        .request(ApiKey::Produce, 7, &produce_request(topic, batch))
        .expect("a produce response");
    let partition = &response.responses[0].partition_responses[0];
    (
        partition.error_code,
        partition.base_offset,
        response.throttle_time_ms,
    )
}

/// Until the auto-created topic takes writes: the offset of a first record.
fn first_write(bootstrap: &str, topic: &str) -> i64 {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut connection = RawConnection::open(bootstrap);
        let (code, offset, _) = produce_on(&mut connection, topic, 1, 10);
        if code == 0 {
            return offset;
        }
        assert!(
            Instant::now() < deadline,
            "{topic} never took a write: {code}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A producer over `producer_byte_rate`: its produce is written and
/// acknowledged with a `throttle_time_ms` that Kafka's formula gives, the
/// next request on that connection waits the delay out, another client id
/// is not delayed, and librdkafka under the quota gets every record
/// acknowledged once, in order.
#[test]
fn a_producer_over_its_quota_is_throttled_never_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), WINDOWS);
    let b = broker.bootstrap.as_str();
    assert_eq!(first_write(b, "quota-produce"), 0);
    assert_eq!(
        alter(
            b,
            &[("client-id", Some("throttled"))],
            &[("producer_byte_rate", Some(100_000.0))],
            false
        )
        .0,
        0
    );
    // The broker applies the quota once it has read the notification.
    let mut throttled = RawConnection::try_open(b, "throttled", TIMEOUT).expect("connect");
    // 500 records of 1,000 bytes: ~500 kB against 100 kB/s over a 2 s
    // window is 250 kB/s, a delay of (250 - 100) / 100 * 2 s = 3 s.
    let deadline = Instant::now() + TIMEOUT;
    let mut next = 1i64;
    let throttle_ms = loop {
        let (code, offset, throttle) = produce_on(&mut throttled, "quota-produce", 500, 1000);
        assert_eq!(
            (code, offset),
            (0, next),
            "written and acknowledged, never refused"
        );
        next += 500;
        if throttle > 0 {
            break throttle;
        }
        assert!(Instant::now() < deadline, "never throttled");
    };
    assert!(
        (1_000..=6_000).contains(&throttle_ms),
        "throttle_time_ms {throttle_ms}"
    );
    // Another client id is not delayed.
    let mut free = RawConnection::try_open(b, "free", TIMEOUT).expect("connect");
    let (code, offset, throttle) = produce_on(&mut free, "quota-produce", 1, 10);
    assert_eq!((code, offset, throttle), (0, next, 0));
    next += 1;
    // The throttled connection is muted: its next request waits.
    let sent = Instant::now();
    let (code, offset, _) = produce_on(&mut throttled, "quota-produce", 1, 10);
    assert_eq!((code, offset), (0, next));
    next += 1;
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_millis(throttle_ms as u64 * 8 / 10),
        "answered after {waited:?}, throttled for {throttle_ms} ms"
    );
    // librdkafka under a quota: every record acknowledged, once, in order.
    assert_eq!(
        alter(
            b,
            &[("client-id", Some("rd-throttled"))],
            &[("producer_byte_rate", Some(200_000.0))],
            false
        )
        .0,
        0
    );
    let producer: FutureProducer = client_config(b)
        .set("client.id", "rd-throttled")
        .set("message.timeout.ms", "120000")
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    let payload = vec![b'q'; 1000];
    let started = Instant::now();
    let offsets: Vec<i64> = common::block_on(async {
        let sends: Vec<_> = (0..2000)
            .map(|_| {
                producer.send(
                    FutureRecord::<(), _>::to("quota-produce").payload(&payload),
                    Duration::from_secs(120),
                )
            })
            .collect();
        let mut offsets = Vec::new();
        for send in sends {
            offsets.push(send.await.expect("acknowledged").offset);
        }
        offsets
    });
    let elapsed = started.elapsed();
    let expected: Vec<i64> = (next..next + 2000).collect();
    assert_eq!(offsets, expected, "each record acknowledged once, in order");
    // 2 MB at 200 kB/s with a 400 kB allowance up front takes about 8 s.
    assert!(
        elapsed >= Duration::from_secs(3),
        "2 MB under 200 kB/s took {elapsed:?}"
    );
}

fn fetch_request(topic: &str, offset: i64) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(100)
        .with_min_bytes(1)
        .with_max_bytes(50 * 1024 * 1024)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(text(topic)))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(10 * 1024 * 1024)])])
}

/// A consumer over `consumer_byte_rate`: one response never carries more
/// than the quota's window (Kafka's cap), a fetch past the quota is
/// answered empty with the delay, and librdkafka under the quota reads
/// every record exactly once, in order.
#[test]
fn a_consumer_over_its_quota_is_throttled_and_reads_everything_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), WINDOWS);
    let b = broker.bootstrap.as_str();
    assert_eq!(first_write(b, "quota-fetch"), 0);
    let mut writer = RawConnection::open(b);
    for round in 0..4 {
        let (code, offset, _) = produce_on(&mut writer, "quota-fetch", 250, 1000);
        assert_eq!((code, offset), (0, 1 + round * 250));
    }
    for client in ["slow", "rd-slow"] {
        assert_eq!(
            alter(
                b,
                &[("client-id", Some(client))],
                &[("consumer_byte_rate", Some(200_000.0))],
                false
            )
            .0,
            0
        );
    }
    let mut slow = RawConnection::try_open(b, "slow", TIMEOUT).expect("connect");
    // The cap: 200 kB/s over (3 - 1) windows of 1 s is 400 kB.
    let (mut offset, mut throttled_ms, mut fetched) = (0i64, 0, 0usize);
    let deadline = Instant::now() + TIMEOUT;
    while throttled_ms == 0 {
        assert!(Instant::now() < deadline, "never throttled");
        let response: FetchResponse = slow
            .request(ApiKey::Fetch, 11, &fetch_request("quota-fetch", offset))
            .expect("a fetch response");
        if response.throttle_time_ms > 0 {
            assert!(
                response.responses.is_empty(),
                "a throttled fetch is answered empty"
            );
            throttled_ms = response.throttle_time_ms;
            break;
        }
        let partition = &response.responses[0].partitions[0];
        let records = partition.records.clone().unwrap_or_default();
        assert!(
            records.len() <= 400_000,
            "{} bytes in one response",
            records.len()
        );
        fetched += records.len();
        let mut buf = records;
        let batches = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut buf)
            .expect("records decode");
        let read: Vec<i64> = batches
            .iter()
            .flat_map(|set| set.records.iter().map(|r| r.offset))
            .collect();
        assert_eq!(
            read.first().copied(),
            Some(offset),
            "read from where it asked"
        );
        offset = read.last().copied().unwrap_or(offset) + 1;
    }
    assert!(
        fetched > 0 && (100..=6_000).contains(&throttled_ms),
        "{fetched} bytes, throttled {throttled_ms} ms"
    );
    // librdkafka: all 1,001 records, once, in order.
    let consumer: BaseConsumer = client_config(b)
        .set("client.id", "rd-slow")
        .set("group.id", "quota-readers")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    consumer.subscribe(&["quota-fetch"]).expect("subscribed");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(90);
    let mut offsets = Vec::new();
    while offsets.len() < 1001 && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(500)) {
            offsets.push(message.expect("a record, not an error").offset());
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(
        offsets,
        (0..1001).collect::<Vec<i64>>(),
        "every record once, in order"
    );
    // 1 MB at 200 kB/s with a 400 kB allowance: about 3 s.
    assert!(
        elapsed >= Duration::from_millis(1500),
        "1 MB under 200 kB/s took {elapsed:?}"
    );
}

/// KIP-612's creation rates: the `connection_creation_rate` quota of one
/// address (set with AlterClientQuotas on an `ip` entity) closes that
/// address's connections past the rate at once, with a log line, while
/// another address connects freely; `max.connection.creation.rate` does
/// the same broker-wide.
#[test]
fn connections_past_a_creation_rate_are_closed_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = BrokerProcess::start(
        dir.path(),
        &["quota.window.num=2", "quota.window.size.seconds=1"],
    );
    let b = broker.bootstrap.clone();
    let limited: std::net::IpAddr = "127.0.0.2".parse().expect("ip");
    assert_eq!(
        alter(
            &b,
            &[("ip", Some("127.0.0.2"))],
            &[("connection_creation_rate", Some(2.0))],
            false
        ),
        (0, None)
    );
    // The quota reaches the acceptor through the change notification.
    let deadline = Instant::now() + TIMEOUT;
    let mut answered = 0;
    loop {
        let mut refused = 0;
        for _ in 0..10 {
            let served = RawConnection::open_from(&b, limited)
                .is_some_and(|mut connection| connection.api_versions_answered());
            if served {
                answered += 1;
            } else {
                refused += 1;
            }
        }
        if refused > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "127.0.0.2 was never limited");
        std::thread::sleep(Duration::from_millis(1100));
    }
    assert!(answered > 0, "the first connections were admitted");
    broker.wait_for_line(
        "connection_creation_rate (2/s) of this address reached",
        TIMEOUT,
    );
    // 127.0.0.1 has no quota: every connection is served.
    for _ in 0..10 {
        assert!(RawConnection::open(&b).api_versions_answered());
    }
    // Broker-wide, set dynamically: a burst past it is closed at once.
    let dynamic: kafka_protocol::messages::IncrementalAlterConfigsResponse = raw_request(
        &b,
        ApiKey::IncrementalAlterConfigs,
        1,
        &kafka_protocol::messages::IncrementalAlterConfigsRequest::default().with_resources(vec![
            kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(text("0"))
                .with_configs(vec![
                    kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(text("max.connection.creation.rate"))
                        .with_config_operation(0)
                        .with_value(Some(text("3"))),
                ]),
        ]),
        TIMEOUT,
    );
    assert_eq!(
        dynamic.responses[0].error_code, 0,
        "{:?}",
        dynamic.responses[0].error_message
    );
    let outcomes: Vec<bool> = (0..20)
        .map(|_| RawConnection::open(&b).api_versions_answered())
        .collect();
    assert!(
        outcomes.iter().any(|ok| !ok),
        "a burst of 20 past 3/s: {outcomes:?}"
    );
    broker.wait_for_line("max.connection.creation.rate (3/s) reached", TIMEOUT);
}
