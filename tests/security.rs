//! The ACL authorizer (`authorizer.class.name=kafka.security.authorizer.
//! AclAuthorizer`) against real clients: librdkafka (through the rdkafka
//! crate) and raw requests encoded by kafka-protocol. PLAINTEXT clients are
//! `User:ANONYMOUS`, so the ACLs here name that principal.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{create_topic, Cluster};
use common::{client_config, raw_request, BrokerProcess};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::stop_replica_request::{
    StopReplicaPartitionState, StopReplicaTopicState,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse, FetchRequest, FetchResponse, LeaderAndIsrRequest,
    LeaderAndIsrResponse, ListOffsetsRequest, ListOffsetsResponse, StopReplicaRequest,
    StopReplicaResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;

const TIMEOUT: Duration = Duration::from_secs(30);
const AUTHORIZER: &str = "authorizer.class.name=kafka.security.authorizer.AclAuthorizer";

// Kafka's codes (org.apache.kafka.common.acl / .resource).
const TOPIC: i8 = 2;
const CLUSTER: i8 = 4;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const ANY: i8 = 1;
const ALL: i8 = 2;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DESCRIBE: i8 = 8;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn acl(
    resource_type: i8,
    name: &str,
    pattern: i8,
    principal: &str,
    op: i8,
    perm: i8,
) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(text(name))
        .with_resource_pattern_type(pattern)
        .with_principal(text(principal))
        .with_host(text("*"))
        .with_operation(op)
        .with_permission_type(perm)
}

fn create_acls(bootstrap: &str, creations: Vec<AclCreation>) -> Vec<i16> {
    let response: CreateAclsResponse = raw_request(
        bootstrap,
        ApiKey::CreateAcls,
        3,
        &CreateAclsRequest::default().with_creations(creations),
        TIMEOUT,
    );
    response.results.iter().map(|r| r.error_code).collect()
}

fn describe_all_acls(bootstrap: &str) -> DescribeAclsResponse {
    raw_request(
        bootstrap,
        ApiKey::DescribeAcls,
        3,
        // kafka-protocol's defaults are "" filters, not nulls.
        &DescribeAclsRequest::default()
            .with_resource_name_filter(None)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_resource_type_filter(ANY)
            .with_pattern_type_filter(ANY)
            .with_operation(ANY)
            .with_permission_type(ANY),
        TIMEOUT,
    )
}

fn delete_acls_on(bootstrap: &str, resource_type: i8, name: &str) -> DeleteAclsResponse {
    raw_request(
        bootstrap,
        ApiKey::DeleteAcls,
        3,
        &DeleteAclsRequest::default().with_filters(vec![DeleteAclsFilter::default()
            .with_resource_type_filter(resource_type)
            .with_resource_name_filter(Some(text(name)))
            .with_pattern_type_filter(LITERAL)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(ANY)
            .with_permission_type(ANY)]),
        TIMEOUT,
    )
}

/// Produces `count` records through librdkafka; each send's outcome.
fn produce(bootstrap: &str, topic: &str, count: usize) -> Vec<Result<i64, KafkaError>> {
    let producer: FutureProducer = client_config(bootstrap)
        .set("message.timeout.ms", "20000")
        .create()
        .expect("producer");
    common::block_on(async {
        let mut outcomes = Vec::new();
        for i in 0..count {
            let payload = format!("{topic}-{i}");
            let sent = producer
                .send(
                    FutureRecord::<(), _>::to(topic).payload(&payload),
                    Duration::from_secs(20),
                )
                .await;
            outcomes.push(sent.map(|d| d.offset).map_err(|(e, _)| e));
        }
        outcomes
    })
}

fn is_topic_authorization_failed(result: &Result<i64, KafkaError>) -> bool {
    matches!(
        result,
        Err(KafkaError::MessageProduction(
            RDKafkaErrorCode::TopicAuthorizationFailed
        ))
    )
}

fn end_offset(bootstrap: &str, topic: &str) -> (i16, i64) {
    let response: ListOffsetsResponse = raw_request(
        bootstrap,
        ApiKey::ListOffsets,
        7,
        &ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(text(topic)))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)])]),
        TIMEOUT,
    );
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.offset)
}

fn fetch_code(bootstrap: &str, topic: &str, replica_id: i32) -> i16 {
    let response: FetchResponse = raw_request(
        bootstrap,
        ApiKey::Fetch,
        12,
        &FetchRequest::default()
            .with_replica_id(BrokerId(replica_id))
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(text(topic)))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])]),
        TIMEOUT,
    );
    response.responses[0].partitions[0].error_code
}

fn listed_topics(bootstrap: &str) -> Vec<String> {
    let consumer: BaseConsumer = client_config(bootstrap).create().expect("consumer");
    let metadata = consumer
        .fetch_metadata(None, TIMEOUT)
        .expect("metadata answered");
    let mut names: Vec<String> = metadata
        .topics()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    names.sort();
    names
}

fn consume_all(bootstrap: &str, topic: &str, expected: usize) -> Vec<String> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", format!("reader-{topic}"))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribed");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut values = Vec::new();
    while values.len() < expected && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(500)) {
            let message = message.expect("a record, not an error");
            values
                .push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned());
        }
    }
    values
}

/// One broker with `allow.everyone.if.no.acl.found=true`, so topics and
/// ACLs can be set up before the ACLs close things. Then, for
/// User:ANONYMOUS: a DENY on WRITE refuses every librdkafka send with
/// TOPIC_AUTHORIZATION_FAILED and writes nothing; READ-only keeps reading
/// and refuses writes; a topic with ACLs for someone else is not listed
/// and answers TOPIC_AUTHORIZATION_FAILED by name; the controller's APIs
/// and a replica's Fetch are refused once the cluster has an ACL; and the
/// ACLs are what DescribeAcls lists and DeleteAcls removes.
#[test]
fn acls_decide_what_a_plaintext_client_may_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(
        dir.path(),
        &[AUTHORIZER, "allow.everyone.if.no.acl.found=true"],
    );
    let bootstrap = broker.bootstrap.clone();
    for topic in ["public", "secret", "readonly", "hidden"] {
        create_topic(&bootstrap, topic, 1);
    }
    assert!(produce(&bootstrap, "readonly", 5).iter().all(Result::is_ok));

    let codes = create_acls(
        &bootstrap,
        vec![
            acl(TOPIC, "secret", LITERAL, "User:ANONYMOUS", WRITE, DENY),
            acl(TOPIC, "readonly", LITERAL, "User:ANONYMOUS", READ, ALLOW),
            acl(TOPIC, "hid", PREFIXED, "User:alice", DESCRIBE, ALLOW),
            // Refused as Kafka refuses them: an ANY operation, a cluster
            // resource not named kafka-cluster.
            acl(TOPIC, "x", LITERAL, "User:ANONYMOUS", ANY, ALLOW),
            acl(CLUSTER, "other", LITERAL, "User:ANONYMOUS", ALL, ALLOW),
        ],
    );
    assert_eq!(codes, vec![0, 0, 0, 42, 42]);
    let described = describe_all_acls(&bootstrap);
    assert_eq!(described.error_code, 0);
    let mut resources: Vec<(String, i8, usize)> = described
        .resources
        .iter()
        .map(|r| (r.resource_name.to_string(), r.pattern_type, r.acls.len()))
        .collect();
    resources.sort();
    assert_eq!(
        resources,
        vec![
            ("hid".to_string(), PREFIXED, 1),
            ("readonly".to_string(), LITERAL, 1),
            ("secret".to_string(), LITERAL, 1),
        ]
    );

    // Denied WRITE: every send refused, nothing written.
    let refused = produce(&bootstrap, "secret", 10);
    assert!(
        refused.iter().all(is_topic_authorization_failed),
        "{refused:?}"
    );
    // READ only: writes refused, the 5 earlier records still read.
    let refused = produce(&bootstrap, "readonly", 3);
    assert!(
        refused.iter().all(is_topic_authorization_failed),
        "{refused:?}"
    );
    let read = consume_all(&bootstrap, "readonly", 5);
    assert_eq!(
        read,
        (0..5).map(|i| format!("readonly-{i}")).collect::<Vec<_>>()
    );
    // No ACL at all: open, as allow.everyone.if.no.acl.found says.
    let written = produce(&bootstrap, "public", 4);
    assert_eq!(
        written
            .iter()
            .map(|r| r.as_ref().ok().copied())
            .collect::<Vec<_>>(),
        vec![Some(0), Some(1), Some(2), Some(3)]
    );
    // Neither "secret" (no ALLOW) nor "hidden" (alice's) is listed or
    // described to ANONYMOUS; asked by name, it is refused.
    // (__consumer_offsets has no ACL: open, as in Kafka.)
    assert_eq!(
        listed_topics(&bootstrap),
        vec![
            "__consumer_offsets".to_string(),
            "public".to_string(),
            "readonly".to_string()
        ]
    );
    assert_eq!(
        end_offset(&bootstrap, "hidden").0,
        ResponseError::TopicAuthorizationFailed.code()
    );
    assert_eq!(
        fetch_code(&bootstrap, "secret", -1),
        ResponseError::TopicAuthorizationFailed.code()
    );

    // Lifting the DENY shows nothing was written to "secret".
    let deleted = delete_acls_on(&bootstrap, TOPIC, "secret");
    assert_eq!(deleted.filter_results[0].error_code, 0);
    assert_eq!(deleted.filter_results[0].matching_acls.len(), 1);
    assert_eq!(end_offset(&bootstrap, "secret"), (0, 0));
    assert_eq!(end_offset(&bootstrap, "public"), (0, 4));

    // An ACL on the cluster for someone else closes it to ANONYMOUS: the
    // controller's APIs, a replica's Fetch and ACL changes are refused,
    // and the partition they aimed at keeps serving.
    assert_eq!(
        create_acls(
            &bootstrap,
            vec![acl(
                CLUSTER,
                "kafka-cluster",
                LITERAL,
                "User:admin",
                ALL,
                ALLOW
            )]
        ),
        vec![0]
    );
    let stop: StopReplicaResponse = raw_request(
        &bootstrap,
        ApiKey::StopReplica,
        3,
        &StopReplicaRequest::default()
            .with_controller_id(BrokerId(0))
            .with_controller_epoch(i32::MAX)
            .with_broker_epoch(-1)
            .with_topic_states(vec![StopReplicaTopicState::default()
                .with_topic_name(TopicName(text("public")))
                .with_partition_states(vec![StopReplicaPartitionState::default()
                    .with_partition_index(0)
                    .with_leader_epoch(i32::MAX - 1)
                    .with_delete_partition(true)])]),
        TIMEOUT,
    );
    assert_eq!(
        stop.error_code,
        ResponseError::ClusterAuthorizationFailed.code()
    );
    let leader_and_isr: LeaderAndIsrResponse = raw_request(
        &bootstrap,
        ApiKey::LeaderAndIsr,
        5,
        &LeaderAndIsrRequest::default()
            .with_controller_id(BrokerId(0))
            .with_controller_epoch(i32::MAX)
            .with_broker_epoch(-1),
        TIMEOUT,
    );
    assert_eq!(
        leader_and_isr.error_code,
        ResponseError::ClusterAuthorizationFailed.code()
    );
    assert_eq!(
        fetch_code(&bootstrap, "public", 1),
        ResponseError::TopicAuthorizationFailed.code()
    );
    assert_eq!(
        create_acls(
            &bootstrap,
            vec![acl(TOPIC, "public", LITERAL, "User:ANONYMOUS", ALL, ALLOW)]
        ),
        vec![ResponseError::ClusterAuthorizationFailed.code()]
    );
    assert_eq!(
        describe_all_acls(&bootstrap).error_code,
        ResponseError::ClusterAuthorizationFailed.code()
    );
    assert_eq!(end_offset(&bootstrap, "public"), (0, 4));
    assert_eq!(fetch_code(&bootstrap, "public", -1), 0);
    let read = consume_all(&bootstrap, "public", 4);
    assert_eq!(read.len(), 4);
}

/// Without `authorizer.class.name` the ACL APIs answer SECURITY_DISABLED,
/// as Kafka's do, and everything stays open.
#[test]
fn without_an_authorizer_acl_apis_answer_security_disabled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    assert_eq!(
        create_acls(
            &broker.bootstrap,
            vec![acl(TOPIC, "t", LITERAL, "User:ANONYMOUS", READ, DENY)]
        ),
        vec![ResponseError::SecurityDisabled.code()]
    );
    assert_eq!(
        describe_all_acls(&broker.bootstrap).error_code,
        ResponseError::SecurityDisabled.code()
    );
}

/// A 2-broker ZooKeeper cluster: an ACL created at one broker is enforced
/// at the other within seconds (its znode and change notification), and
/// its removal likewise; the znodes are Kafka's.
#[test]
fn acls_created_at_one_broker_apply_at_every_broker() {
    let cluster = Cluster::start_with(2, &[AUTHORIZER, "allow.everyone.if.no.acl.found=true"]);
    let (one, two) = (cluster.bootstrap(0), cluster.bootstrap(1));
    common::cluster::create_replicated_topic(&one, "shared", 1, 2);
    assert!(produce(&two, "shared", 2).iter().all(Result::is_ok));
    assert_eq!(
        create_acls(
            &one,
            vec![acl(TOPIC, "shared", LITERAL, "User:ANONYMOUS", WRITE, DENY)]
        ),
        vec![0]
    );
    let znodes = cluster.read_znodes(&["/kafka-acl/Topic/shared".to_string()]);
    let json = String::from_utf8(znodes[0].clone().expect("the ACL znode")).expect("utf8");
    assert!(
        json.contains(
            r#""principal":"User:ANONYMOUS","permissionType":"Deny","operation":"Write","host":"*""#
        ),
        "{json}"
    );
    // Both brokers refuse the write soon (the other one through the
    // notification), whichever leads the partition.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let refused: Vec<bool> = [&one, &two]
            .iter()
            .map(|b| fetch_code(b, "shared", -1) == ResponseError::TopicAuthorizationFailed.code())
            .collect();
        if refused == [true, true] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not enforced everywhere: {refused:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let refused = produce(&two, "shared", 3);
    assert!(
        refused.iter().all(is_topic_authorization_failed),
        "{refused:?}"
    );
    assert_eq!(
        delete_acls_on(&two, TOPIC, "shared").filter_results[0]
            .matching_acls
            .len(),
        1
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while [&one, &two]
        .iter()
        .any(|b| fetch_code(b, "shared", -1) == ResponseError::TopicAuthorizationFailed.code())
    {
        assert!(
            Instant::now() < deadline,
            "the deletion did not reach every broker"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(cluster.read_znodes(&["/kafka-acl/Topic/shared".to_string()])[0].is_none());
    assert!(produce(&one, "shared", 2).iter().all(Result::is_ok));
    assert_eq!(
        end_offset(&one, "shared")
            .1
            .max(end_offset(&two, "shared").1),
        4
    );
}
