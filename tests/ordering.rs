//! Order guarantees under pipelining, against a real broker process with
//! raw requests written back to back on one socket (as the Java client,
//! kafka-python and KafkaJS pipeline up to 5 multi-topic requests):
//! - appends to a partition follow request order on a connection, even
//!   when an earlier request is slowed by a big batch for another topic;
//! - commits of one group are written in the order they were received, so
//!   the last commit wins;
//! - clients cannot produce to `__consumer_offsets`
//!   (INVALID_TOPIC_EXCEPTION), so they cannot break group loading;
//! - a connection's pipelined requests are bounded: the broker stops
//!   reading until answers go out.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use bytes::Bytes;
use common::{admin, admin_options, block_on, client_config, BrokerProcess};
use ferrolog::storage::records::{encode_batch, NewRecord};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, GroupId, OffsetCommitRequest, ProduceRequest, ProduceResponse, RequestHeader,
    ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::Compression;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

fn create(bootstrap: &str, names: &[&str]) {
    let admin = admin(bootstrap);
    // Room for the 2 MB batches of the ordering test.
    let topics: Vec<NewTopic> = names
        .iter()
        .map(|n| {
            NewTopic::new(n, 1, TopicReplication::Fixed(1)).set("max.message.bytes", "4194304")
        })
        .collect();
    let results = block_on(admin.create_topics(&topics, &admin_options(Duration::from_secs(30))))
        .expect("CreateTopics answers");
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

/// Write every request on one connection before reading any response;
/// the responses, decoded, in order.
fn pipeline<Req, Resp>(bootstrap: &str, api: ApiKey, version: i16, requests: &[Req]) -> Vec<Resp>
where
    Req: Encodable + HeaderVersion,
    Resp: Decodable + HeaderVersion,
{
    let mut stream = std::net::TcpStream::connect(bootstrap).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut bytes = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let header = RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(i as i32)
            .with_client_id(Some(StrBytes::from_static_str("ordering-test")));
        bytes.extend(ferrolog::protocol::encode_request(&header, api, request).expect("encodes"));
    }
    stream.write_all(&bytes).expect("send");
    (0..requests.len())
        .map(|i| {
            let mut prefix = [0u8; 4];
            stream.read_exact(&mut prefix).expect("response length");
            let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
            stream.read_exact(&mut body).expect("response body");
            let mut buf = Bytes::from(body);
            let header =
                ResponseHeader::decode(&mut buf, api.response_header_version(version)).unwrap();
            assert_eq!(
                header.correlation_id, i as i32,
                "responses in request order"
            );
            Resp::decode(&mut buf, version).expect("response decodes")
        })
        .collect()
}

fn topic_data(topic: &str, batch: Bytes) -> TopicProduceData {
    TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_partition_data(vec![PartitionProduceData::default()
            .with_index(0)
            .with_records(Some(batch))])
}

fn one_record(value: String) -> Bytes {
    encode_batch(
        &[NewRecord {
            key: None,
            value: Some(Bytes::from(value)),
            headers: Vec::new(),
        }],
        1_000,
    )
    .unwrap()
}

/// 50 pairs of pipelined Produce v3 requests on one socket: request 2i is
/// [big: 2,000 records of 1 KB, seq: record 2i], request 2i+1 is [seq:
/// record 2i+1]. `seq` must hold 0..100 in order: the small request may not
/// overtake the big one's append to `seq`. (Before the fix: 13–16
/// inversions in 100 records.)
#[test]
fn pipelined_produce_keeps_per_partition_order() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create(&broker.bootstrap, &["big", "seq"]);
    let big = ferrolog::storage::testing::batch_v2(2000, 1000, Compression::None);
    let mut requests = Vec::new();
    for i in 0..50 {
        requests.push(
            ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(30_000)
                .with_topic_data(vec![
                    topic_data("big", big.clone()),
                    topic_data("seq", one_record((2 * i).to_string())),
                ]),
        );
        requests.push(
            ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(30_000)
                .with_topic_data(vec![topic_data("seq", one_record((2 * i + 1).to_string()))]),
        );
    }
    // Pipelined in windows of 5, as the Java client does.
    for window in requests.chunks(5) {
        let responses: Vec<ProduceResponse> =
            pipeline(&broker.bootstrap, ApiKey::Produce, 3, window);
        for response in responses {
            for topic in response.responses {
                for partition in topic.partition_responses {
                    assert_eq!(partition.error_code, 0);
                }
            }
        }
    }
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "ordering-check")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition_offset("seq", 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&list).unwrap();
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while seen.len() < 100 && std::time::Instant::now() < deadline {
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
            let value: u32 = std::str::from_utf8(m.payload().unwrap())
                .unwrap()
                .parse()
                .unwrap();
            seen.push(value);
        }
    }
    let expected: Vec<u32> = (0..100).collect();
    let inversions = seen.windows(2).filter(|w| w[0] > w[1]).count();
    assert_eq!(seen, expected, "{inversions} inversion(s)");
}

/// 200 pipelined OffsetCommit requests for one group (a standalone
/// consumer, generation -1) with offsets 1..=200 on one connection: the
/// group ends at 200, so no later commit was written before an earlier one.
#[test]
fn pipelined_commits_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create(&broker.bootstrap, &["committed"]);
    // Make sure the coordinator exists and is loaded.
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "ordered-commits")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition_offset("committed", 0, Offset::Offset(0))
        .unwrap();
    consumer
        .commit(&list, rdkafka::consumer::CommitMode::Sync)
        .expect("first commit");
    let requests: Vec<OffsetCommitRequest> = (1..=200)
        .map(|offset| {
            OffsetCommitRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("ordered-commits")))
                .with_generation_id_or_member_epoch(-1)
                .with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("committed")))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset)])])
        })
        .collect();
    let responses: Vec<kafka_protocol::messages::OffsetCommitResponse> =
        pipeline(&broker.bootstrap, ApiKey::OffsetCommit, 7, &requests);
    assert!(responses
        .iter()
        .all(|r| r.topics[0].partitions[0].error_code == 0));
    let mut list = TopicPartitionList::new();
    list.add_partition("committed", 0);
    let committed = consumer
        .committed_offsets(list, Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        committed.find_partition("committed", 0).unwrap().offset(),
        Offset::Offset(200)
    );
}

/// A client's produce to `__consumer_offsets` is refused with
/// INVALID_TOPIC_EXCEPTION (17), and groups keep working afterwards,
/// across a restart that reloads the partition.
#[test]
fn clients_cannot_produce_to_consumer_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["offsets.topic.num.partitions=1"]);
    create(&broker.bootstrap, &["data"]);
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "protected")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition_offset("data", 0, Offset::Offset(7))
        .unwrap();
    consumer
        .commit(&list, rdkafka::consumer::CommitMode::Sync)
        .expect("commit creates __consumer_offsets");
    drop(consumer);
    let request = ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![topic_data(
            "__consumer_offsets",
            one_record("x".into()),
        )]);
    let responses: Vec<ProduceResponse> =
        pipeline(&broker.bootstrap, ApiKey::Produce, 7, &[request]);
    assert_eq!(
        responses[0].responses[0].partition_responses[0].error_code,
        17
    );
    let dir_path = broker.terminate();
    let broker = BrokerProcess::restart_on(&dir_path, &["offsets.topic.num.partitions=1"]);
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "protected")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition("data", 0);
    let committed = consumer
        .committed_offsets(list, Duration::from_secs(30))
        .unwrap();
    assert_eq!(
        committed.find_partition("data", 0).unwrap().offset(),
        Offset::Offset(7)
    );
}

/// A connection's pipelined requests are bounded (`MAX_IN_FLIGHT`, 64,
/// plus the one being written and the one waiting for room): 80 Fetch
/// long-polls of 2 s each on an empty topic, written back to back. The
/// broker takes the first ones at once and reads the rest only as answers
/// go out, so the 70th answer comes at least one long-poll after the
/// first; without the bound all 80 would wait side by side and end
/// together. (A lower bound: a slow machine only makes it later.)
#[test]
fn a_connections_pipelined_requests_are_bounded() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{BrokerId, FetchRequest};
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create(&broker.bootstrap, &["idle"]);
    let wait = Duration::from_secs(2);
    let fetch = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(wait.as_millis() as i32)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str("idle")))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])]);
    let mut stream = std::net::TcpStream::connect(&broker.bootstrap).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut bytes = Vec::new();
    for i in 0..80 {
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::Fetch as i16)
            .with_request_api_version(4)
            .with_correlation_id(i)
            .with_client_id(Some(StrBytes::from_static_str("window-test")));
        bytes.extend(ferrolog::protocol::encode_request(&header, ApiKey::Fetch, &fetch).unwrap());
    }
    stream.write_all(&bytes).expect("send");
    let mut arrivals = Vec::new();
    for i in 0..80 {
        let mut prefix = [0u8; 4];
        stream.read_exact(&mut prefix).expect("response length");
        let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
        stream.read_exact(&mut body).expect("response body");
        let header = ResponseHeader::decode(
            &mut Bytes::from(body),
            ApiKey::Fetch.response_header_version(4),
        )
        .unwrap();
        assert_eq!(header.correlation_id, i, "responses in request order");
        arrivals.push(std::time::Instant::now());
    }
    let gap = arrivals[69] - arrivals[0];
    assert!(
        gap >= wait.mul_f32(0.9),
        "the 70th answer came {gap:?} after the first: the broker read past its window"
    );
}
