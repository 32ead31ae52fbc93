//! The ACL authorizer (`authorizer.class.name=kafka.security.authorizer.
//! AclAuthorizer`) against real clients: librdkafka (through the rdkafka
//! crate) and raw requests encoded by kafka-protocol. PLAINTEXT clients are
//! `User:ANONYMOUS`, so the ACLs here name that principal.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{create_topic, Cluster};
use common::{client_config, raw_request, BrokerProcess, RawConnection};
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
    LeaderAndIsrResponse, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest,
    MetadataResponse, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse, StopReplicaRequest, StopReplicaResponse, TopicName,
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
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const ANY: i8 = 1;
const ALL: i8 = 2;
const READ: i8 = 3;
const WRITE: i8 = 4;
const CREATE: i8 = 5;
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

/// ListOffsets v7 for the end of `topic`'s partition 0, as a consumer asks.
fn latest_offset_request(topic: &str) -> ListOffsetsRequest {
    ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(text(topic)))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-1)])])
}

fn end_offset(bootstrap: &str, topic: &str) -> (i16, i64) {
    let response: ListOffsetsResponse = raw_request(
        bootstrap,
        ApiKey::ListOffsets,
        7,
        &latest_offset_request(topic),
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

// ---------------------------------------------------------------------
// SASL/PLAIN on a SASL_PLAINTEXT listener.

const JAAS: &str = r#"listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";"#;

fn sasl_broker(dir: &std::path::Path, extra: &[&str]) -> BrokerProcess {
    let mut overrides = vec![
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN",
        JAAS,
    ];
    overrides.extend_from_slice(extra);
    BrokerProcess::start(dir, &overrides)
}

fn sasl_config(bootstrap: &str, user: &str, password: &str) -> rdkafka::config::ClientConfig {
    let mut config = client_config(bootstrap);
    config
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "PLAIN")
        .set("sasl.username", user)
        .set("sasl.password", password);
    config
}

/// The SASL exchange by hand, as a client runs it: SaslAuthenticate v2
/// after a v1 handshake, the bare token after a v0 one.
trait SaslRequests {
    fn handshake(&mut self, version: i16, mechanism: &str) -> Option<SaslHandshakeResponse>;
    fn authenticate(&mut self, token: &[u8]) -> Option<SaslAuthenticateResponse>;
    fn metadata(&mut self) -> Option<MetadataResponse>;
}

impl SaslRequests for RawConnection {
    fn handshake(&mut self, version: i16, mechanism: &str) -> Option<SaslHandshakeResponse> {
        self.request(
            ApiKey::SaslHandshake,
            version,
            &SaslHandshakeRequest::default().with_mechanism(text(mechanism)),
        )
    }

    fn authenticate(&mut self, token: &[u8]) -> Option<SaslAuthenticateResponse> {
        self.request(
            ApiKey::SaslAuthenticate,
            2,
            &SaslAuthenticateRequest::default()
                .with_auth_bytes(bytes::Bytes::copy_from_slice(token)),
        )
    }

    fn metadata(&mut self) -> Option<MetadataResponse> {
        self.request(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
    }
}

/// SASL/PLAIN as Kafka runs it: the right password authenticates (v1
/// handshake + SaslAuthenticate, and v0's bare token); a wrong password or
/// an unknown user answers SASL_AUTHENTICATION_FAILED and closes; an
/// unsupported mechanism answers UNSUPPORTED_SASL_MECHANISM with the
/// enabled list and closes; any other request before authentication, a
/// truncated token, or a second handshake closes the connection; and the
/// broker keeps serving the others.
#[test]
fn sasl_plain_authenticates_as_kafka_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = sasl_broker(dir.path(), &[]);
    broker.wait_for_line(
        "passwords cross the network in clear text",
        Duration::from_secs(5),
    );
    let bootstrap = broker.bootstrap.clone();

    let mut good = RawConnection::open(&bootstrap);
    // ApiVersions comes first, as clients send it (kafka-python's v4, one
    // version past ferrolog's, is answered so it retries an older one).
    let versions: kafka_protocol::messages::ApiVersionsResponse = good
        .request(
            ApiKey::ApiVersions,
            3,
            &kafka_protocol::messages::ApiVersionsRequest::default(),
        )
        .expect("ApiVersions before authentication");
    assert!(versions
        .api_keys
        .iter()
        .any(|k| k.api_key == ApiKey::SaslAuthenticate as i16 && k.max_version == 2));
    let handshake = good.handshake(1, "PLAIN").expect("handshake answered");
    assert_eq!(handshake.error_code, 0);
    assert_eq!(handshake.mechanisms, vec![text("PLAIN")]);
    let auth = good
        .authenticate(b"\0alice\0alice-secret")
        .expect("answered");
    assert_eq!(auth.error_code, 0);
    assert!(
        good.metadata().is_some(),
        "authenticated: requests are served"
    );
    // After authentication another handshake is out of place.
    assert_eq!(
        good.handshake(1, "PLAIN").expect("answered").error_code,
        ResponseError::IllegalSaslState.code()
    );

    for token in [
        &b"\0alice\0wrong"[..],
        b"\0mallory\0alice-secret",
        b"admin\0alice\0alice-secret",
    ] {
        let mut bad = RawConnection::open(&bootstrap);
        assert_eq!(bad.handshake(1, "PLAIN").expect("answered").error_code, 0);
        let refused = bad.authenticate(token).expect("answered");
        assert_eq!(
            refused.error_code,
            ResponseError::SaslAuthenticationFailed.code()
        );
        assert!(
            refused
                .error_message
                .as_deref()
                .unwrap_or("")
                .starts_with("Authentication failed"),
            "{:?}",
            refused.error_message
        );
        assert!(
            bad.metadata().is_none(),
            "closed after a failed authentication"
        );
    }

    let mut scram = RawConnection::open(&bootstrap);
    let answer = scram.handshake(1, "SCRAM-SHA-512").expect("answered");
    assert_eq!(
        answer.error_code,
        ResponseError::UnsupportedSaslMechanism.code()
    );
    assert_eq!(answer.mechanisms, vec![text("PLAIN")]);
    assert!(
        scram.metadata().is_none(),
        "closed after an unsupported mechanism"
    );

    let mut early = RawConnection::open(&bootstrap);
    assert!(
        early.metadata().is_none(),
        "Metadata before authentication closes"
    );
    let mut early = RawConnection::open(&bootstrap);
    assert!(
        early.authenticate(b"\0alice\0alice-secret").is_none(),
        "no handshake first"
    );
    let mut truncated = RawConnection::open(&bootstrap);
    assert_eq!(
        truncated
            .handshake(1, "PLAIN")
            .expect("answered")
            .error_code,
        0
    );
    assert_eq!(
        truncated
            .authenticate(b"\0alice")
            .expect("answered")
            .error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );

    // Kafka's v0 exchange: after the handshake, the bare token.
    let mut v0 = RawConnection::open(&bootstrap);
    assert_eq!(v0.handshake(0, "PLAIN").expect("answered").error_code, 0);
    v0.send_bytes(b"\0bob\0bob-secret");
    assert_eq!(v0.receive().expect("the bare answer").len(), 0);
    assert!(v0.metadata().is_some());
    let mut v0_bad = RawConnection::open(&bootstrap);
    assert_eq!(
        v0_bad.handshake(0, "PLAIN").expect("answered").error_code,
        0
    );
    v0_bad.send_bytes(b"\0bob\0nope");
    assert!(v0_bad.receive().is_none(), "v0: a failure closes");

    // Still serving the authenticated connection.
    assert!(good.metadata().is_some());
    assert!(broker.is_running());
}

/// librdkafka and kafka-python authenticate with SASL/PLAIN, and the ACLs
/// apply to the user they authenticated as: alice may write and read
/// "orders", bob may not (TOPIC_AUTHORIZATION_FAILED, nothing written),
/// admin is a super user, and a wrong password gets no metadata at all.
#[test]
fn sasl_users_are_the_principals_acls_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = sasl_broker(dir.path(), &[AUTHORIZER, "super.users=User:admin"]);
    let bootstrap = broker.bootstrap.clone();
    // admin (a super user) creates the topic and alice's ACLs.
    let admin_client: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
        sasl_config(&bootstrap, "admin", "admin-secret")
            .create()
            .expect("admin client");
    let created = common::block_on(admin_client.create_topics(
        &[rdkafka::admin::NewTopic::new(
            "orders",
            1,
            rdkafka::admin::TopicReplication::Fixed(1),
        )],
        &common::admin_options(TIMEOUT),
    ))
    .expect("CreateTopics answered");
    assert!(created[0].is_ok(), "{created:?}");
    let mut admin = RawConnection::open(&bootstrap);
    assert_eq!(admin.handshake(1, "PLAIN").expect("answered").error_code, 0);
    assert_eq!(
        admin
            .authenticate(b"\0admin\0admin-secret")
            .expect("answered")
            .error_code,
        0
    );
    let created: CreateAclsResponse = admin
        .request(
            ApiKey::CreateAcls,
            3,
            &CreateAclsRequest::default().with_creations(vec![
                acl(TOPIC, "orders", LITERAL, "User:alice", WRITE, ALLOW),
                acl(TOPIC, "orders", LITERAL, "User:alice", READ, ALLOW),
                // kafka-python's consumer group-less assign needs no group ACL;
                // a group ACL for alice anyway, as a consumer would need.
                acl(GROUP, "orders-readers", LITERAL, "User:alice", READ, ALLOW),
            ]),
        )
        .expect("answered");
    assert_eq!(
        created
            .results
            .iter()
            .map(|r| r.error_code)
            .collect::<Vec<_>>(),
        vec![0, 0, 0]
    );

    // librdkafka as alice: written at 0..3 and read back.
    let producer: FutureProducer = sasl_config(&bootstrap, "alice", "alice-secret")
        .set("message.timeout.ms", "20000")
        .create()
        .expect("producer");
    let offsets: Vec<i64> = common::block_on(async {
        let mut offsets = Vec::new();
        for i in 0..3 {
            let payload = format!("alice-{i}");
            let delivered = producer
                .send(
                    FutureRecord::<(), _>::to("orders").payload(&payload),
                    Duration::from_secs(20),
                )
                .await
                .map(|d| d.offset)
                .map_err(|(e, _)| e);
            offsets.push(delivered.expect("alice may write"));
        }
        offsets
    });
    assert_eq!(offsets, vec![0, 1, 2]);
    // librdkafka as bob: refused, nothing written.
    let bob: FutureProducer = sasl_config(&bootstrap, "bob", "bob-secret")
        .set("message.timeout.ms", "20000")
        .create()
        .expect("producer");
    let refused = common::block_on(bob.send(
        FutureRecord::<(), _>::to("orders").payload("bob-0"),
        Duration::from_secs(20),
    ));
    assert!(
        matches!(
            &refused,
            Err((
                KafkaError::MessageProduction(RDKafkaErrorCode::TopicAuthorizationFailed),
                _
            ))
        ),
        "{refused:?}"
    );
    // A wrong password: no metadata.
    let wrong: BaseConsumer = sasl_config(&bootstrap, "alice", "wrong")
        .create()
        .expect("consumer");
    assert!(wrong
        .fetch_metadata(Some("orders"), Duration::from_secs(10))
        .is_err());

    // kafka-python as alice: acknowledged at 3..5 after librdkafka's three.
    let python = |user: &str, password: &str| {
        std::process::Command::new(common::require_tool("python3"))
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/python/sasl_plain.py"
            ))
            .args([
                "--bootstrap",
                &bootstrap,
                "--user",
                user,
                "--password",
                password,
                "--count",
                "2",
            ])
            .arg("orders")
            .output()
            .expect("python3 runs")
    };
    let out = python("alice", "alice-secret");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.lines().any(|l| l == "OK 3 4"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l == "READ alice-0 alice-1"),
        "{stdout}"
    );
    let out = python("bob", "bob-secret");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !out.status.success() && stdout.contains("FAILED: TopicAuthorizationFailedError"),
        "{stdout}"
    );
    let out = python("alice", "wrong");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !out.status.success() && stdout.contains("FAILED"),
        "{stdout}"
    );
    // KafkaJS as alice: one request of 3 at offset 5; as bob, refused.
    let node = |user: &str, password: &str| {
        std::process::Command::new(common::require_tool("node"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node"))
            .args(["sasl_plain.js", &bootstrap, user, password, "orders", "3"])
            .output()
            .expect("node runs")
    };
    let out = node("alice", "alice-secret");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "OK 5"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = node("bob", "bob-secret");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !out.status.success() && stdout.to_lowercase().contains("authoriz"),
        "{stdout}"
    );
    let out = node("bob", "wrong");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!out.status.success() && stdout.contains("SASL"), "{stdout}");
    assert_eq!(end_offset_as(&mut admin, "orders"), 8);
}

fn end_offset_as(connection: &mut RawConnection, topic: &str) -> i64 {
    let response: ListOffsetsResponse = connection
        .request(ApiKey::ListOffsets, 7, &latest_offset_request(topic))
        .expect("answered");
    response.topics[0].partitions[0].offset
}

// ---------------------------------------------------------------------
// Connection limits.

/// `max.connections.per.ip`: past it a new connection from the address is
/// closed at once while the open ones keep being served quickly, even
/// through a flood of refused connections; a closed connection frees its
/// place; `max.connections.per.ip.overrides` set dynamically
/// (IncrementalAlterConfigs on the broker) raises the address's limit
/// without a restart.
#[test]
fn connections_past_max_connections_per_ip_are_closed_and_the_others_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = BrokerProcess::start(dir.path(), &["max.connections.per.ip=3"]);
    let bootstrap = broker.bootstrap.clone();
    let mut open: Vec<RawConnection> = (0..3).map(|_| RawConnection::open(&bootstrap)).collect();
    for connection in &mut open {
        assert!(connection.api_versions_answered());
    }
    let mut refused = RawConnection::open(&bootstrap);
    assert!(
        !refused.api_versions_answered(),
        "a 4th connection from 127.0.0.1 is closed"
    );
    broker.wait_for_line("max.connections.per.ip (3) reached", Duration::from_secs(5));
    // A flood of refused connections; the admitted ones answer quickly.
    let mut slowest = Duration::ZERO;
    for round in 0..100 {
        let _ = std::net::TcpStream::connect(&bootstrap);
        if round % 10 == 0 {
            let started = Instant::now();
            assert!(open[round / 10 % 3].api_versions_answered());
            slowest = slowest.max(started.elapsed());
        }
    }
    assert!(
        slowest < Duration::from_secs(2),
        "an admitted connection waited {slowest:?}"
    );
    // One closed: its place is free again (bounded wait for the actor to go).
    drop(open.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut again = RawConnection::open(&bootstrap);
        if again.api_versions_answered() {
            open.push(again);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the freed place was not given back"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The override, set without a restart, admits two more.
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    // (Over an admitted connection: a new one would be refused.)
    let altered: kafka_protocol::messages::IncrementalAlterConfigsResponse = open[0]
        .request(
            ApiKey::IncrementalAlterConfigs,
            1,
            &kafka_protocol::messages::IncrementalAlterConfigsRequest::default().with_resources(
                vec![AlterConfigsResource::default()
                    .with_resource_type(4)
                    .with_resource_name(text("0"))
                    .with_configs(vec![AlterableConfig::default()
                        .with_name(text("max.connections.per.ip.overrides"))
                        .with_config_operation(0)
                        .with_value(Some(text("127.0.0.1:5")))])],
            ),
        )
        .expect("answered");
    assert_eq!(
        altered.responses[0].error_code, 0,
        "{:?}",
        altered.responses[0].error_message
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while open.len() < 5 {
        let mut more = RawConnection::open(&bootstrap);
        if more.api_versions_answered() {
            open.push(more);
        } else {
            assert!(
                Instant::now() < deadline,
                "the override did not apply: {} open",
                open.len()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let mut sixth = RawConnection::open(&bootstrap);
    assert!(
        !sixth.api_versions_answered(),
        "the override's 5 is a limit too"
    );
    for connection in &mut open {
        assert!(connection.api_versions_answered());
    }
}

// ---------------------------------------------------------------------
// SCRAM-SHA-256 and SCRAM-SHA-512.

/// RFC 5802's client side, for the raw exchanges below.
fn scram_client_final(
    sha512: bool,
    password: &str,
    client_first_bare: &str,
    server_first: &str,
) -> String {
    use base64::Engine;
    use hmac::Mac;
    let b64 = base64::engine::general_purpose::STANDARD;
    let fields: Vec<&str> = server_first.split(',').collect();
    let nonce = &fields[0][2..];
    let salt = b64.decode(&fields[1][2..]).expect("salt");
    let iterations: u32 = fields[2][2..].parse().expect("iterations");
    let without_proof = format!("c=biws,r={nonce}");
    let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
    let (client_key, signature) = if sha512 {
        let salted =
            pbkdf2::pbkdf2_hmac_array::<sha2::Sha512, 64>(password.as_bytes(), &salt, iterations);
        let mut m = <hmac::Hmac<sha2::Sha512> as hmac::Mac>::new_from_slice(&salted).expect("key");
        m.update(b"Client Key");
        let client_key = m.finalize().into_bytes().to_vec();
        let stored = <sha2::Sha512 as sha2::Digest>::digest(&client_key);
        let mut m = <hmac::Hmac<sha2::Sha512> as hmac::Mac>::new_from_slice(&stored).expect("key");
        m.update(auth_message.as_bytes());
        (client_key, m.finalize().into_bytes().to_vec())
    } else {
        let salted =
            pbkdf2::pbkdf2_hmac_array::<sha2::Sha256, 32>(password.as_bytes(), &salt, iterations);
        let mut m = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(&salted).expect("key");
        m.update(b"Client Key");
        let client_key = m.finalize().into_bytes().to_vec();
        let stored = <sha2::Sha256 as sha2::Digest>::digest(&client_key);
        let mut m = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(&stored).expect("key");
        m.update(auth_message.as_bytes());
        (client_key, m.finalize().into_bytes().to_vec())
    };
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(k, s)| k ^ s)
        .collect();
    format!("{without_proof},p={}", b64.encode(proof))
}

/// SCRAM users are created with AlterUserScramCredentials (as Kafka's
/// `kafka-configs --bootstrap-server ... --add-config 'SCRAM-SHA-512=[...]'`
/// sends it) by the PLAIN admin, stored as Kafka stores them in
/// `/config/users/<user>`, described by DescribeUserScramCredentials, and
/// then log in: librdkafka, kafka-python and KafkaJS with SCRAM-SHA-512
/// and SCRAM-SHA-256 write to a topic alice may WRITE; a wrong password, an
/// unknown user, a tampered proof and a client-final replayed on a new
/// connection are refused with SASL_AUTHENTICATION_FAILED and closed.
#[test]
fn scram_users_created_over_the_admin_api_log_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = sasl_broker(
        dir.path(),
        &[
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            AUTHORIZER,
            "super.users=User:admin",
        ],
    );
    let bootstrap = broker.bootstrap.clone();
    let mut admin = RawConnection::open(&bootstrap);
    assert_eq!(admin.handshake(1, "PLAIN").expect("answered").error_code, 0);
    assert_eq!(
        admin
            .authenticate(b"\0admin\0admin-secret")
            .expect("answered")
            .error_code,
        0
    );
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    let upsert = |user: &str, sha512: bool, password: &str, iterations: i32| {
        let salt = format!("salt-of-{user}").into_bytes();
        let salted = if sha512 {
            pbkdf2::pbkdf2_hmac_array::<sha2::Sha512, 64>(
                password.as_bytes(),
                &salt,
                iterations as u32,
            )
            .to_vec()
        } else {
            pbkdf2::pbkdf2_hmac_array::<sha2::Sha256, 32>(
                password.as_bytes(),
                &salt,
                iterations as u32,
            )
            .to_vec()
        };
        ScramCredentialUpsertion::default()
            .with_name(text(user))
            .with_mechanism(if sha512 { 2 } else { 1 })
            .with_iterations(iterations)
            .with_salt(bytes::Bytes::from(salt))
            .with_salted_password(bytes::Bytes::from(salted))
    };
    let altered: kafka_protocol::messages::AlterUserScramCredentialsResponse = admin
        .request(
            ApiKey::AlterUserScramCredentials,
            0,
            &kafka_protocol::messages::AlterUserScramCredentialsRequest::default().with_upsertions(
                vec![
                    upsert("alice", true, "alice-scram", 4096),
                    upsert("carol", false, "carol-scram", 8192),
                    upsert("weak", true, "w", 1000),
                ],
            ),
        )
        .expect("answered");
    let codes: Vec<(String, i16)> = altered
        .results
        .iter()
        .map(|r| (r.user.to_string(), r.error_code))
        .collect();
    assert!(
        codes.contains(&("alice".into(), 0)) && codes.contains(&("carol".into(), 0)),
        "{codes:?}"
    );
    assert!(
        codes.contains(&("weak".into(), ResponseError::UnacceptableCredential.code())),
        "{codes:?}"
    );
    let described: kafka_protocol::messages::DescribeUserScramCredentialsResponse = admin
        .request(
            ApiKey::DescribeUserScramCredentials,
            0,
            &kafka_protocol::messages::DescribeUserScramCredentialsRequest::default()
                .with_users(None),
        )
        .expect("answered");
    let listed: Vec<(String, i8, i32)> = described
        .results
        .iter()
        .flat_map(|r| {
            r.credential_infos
                .iter()
                .map(move |c| (r.user.to_string(), c.mechanism, c.iterations))
        })
        .collect();
    assert_eq!(
        listed,
        vec![("alice".into(), 2, 4096), ("carol".into(), 1, 8192)]
    );
    let created: CreateAclsResponse = admin
        .request(
            ApiKey::CreateAcls,
            3,
            &CreateAclsRequest::default().with_creations(vec![
                acl(TOPIC, "ledger", LITERAL, "User:alice", WRITE, ALLOW),
                acl(TOPIC, "ledger", LITERAL, "User:alice", READ, ALLOW),
                acl(TOPIC, "ledger", LITERAL, "User:carol", WRITE, ALLOW),
                acl(TOPIC, "ledger", LITERAL, "User:carol", CREATE, ALLOW),
            ]),
        )
        .expect("answered");
    assert!(created.results.iter().all(|r| r.error_code == 0));

    // Raw SCRAM-SHA-512: the right proof, then the failures.
    let exchange = |user: &str, password: &str| {
        let mut c = RawConnection::open(&bootstrap);
        assert_eq!(
            c.handshake(1, "SCRAM-SHA-512")
                .expect("answered")
                .error_code,
            0
        );
        let first_bare = format!("n={user},r=clientnonce{user}");
        let first = c
            .authenticate(format!("n,,{first_bare}").as_bytes())
            .expect("server-first");
        assert_eq!(first.error_code, 0);
        let server_first = String::from_utf8(first.auth_bytes.to_vec()).expect("utf8");
        let last = scram_client_final(true, password, &first_bare, &server_first);
        (c, last)
    };
    let (mut good, last) = exchange("alice", "alice-scram");
    let done = good.authenticate(last.as_bytes()).expect("server-final");
    assert_eq!(done.error_code, 0);
    assert!(String::from_utf8_lossy(&done.auth_bytes).starts_with("v="));
    assert_eq!(
        end_offset_as(&mut good, "ledger"),
        -1,
        "alice is in, the topic not yet created"
    );
    // The same client-final replayed on a new exchange (new server nonce).
    let (mut replay, _) = exchange("alice", "alice-scram");
    let refused = replay.authenticate(last.as_bytes()).expect("answered");
    assert_eq!(
        refused.error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );
    assert!(replay.metadata().is_none(), "closed");
    for (user, password) in [("alice", "wrong"), ("nobody", "alice-scram")] {
        let (mut bad, last) = exchange(user, password);
        let refused = bad.authenticate(last.as_bytes()).expect("answered");
        assert_eq!(
            refused.error_code,
            ResponseError::SaslAuthenticationFailed.code(),
            "{user}"
        );
        assert!(bad.metadata().is_none(), "closed");
    }
    let (mut tampered, last) = exchange("alice", "alice-scram");
    let mut bytes = last.into_bytes();
    let at = bytes.len() - 4;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    assert_eq!(
        tampered.authenticate(&bytes).expect("answered").error_code,
        ResponseError::SaslAuthenticationFailed.code()
    );

    // Real clients: librdkafka with SCRAM-SHA-256 as carol creates the
    // topic (CREATE) and writes 0..2; kafka-python and KafkaJS with
    // SCRAM-SHA-512 as alice follow.
    // (The rdkafka crate's librdkafka is built without SCRAM; confluent-kafka's has it.)
    let confluent = |user: &str, password: &str| {
        std::process::Command::new(common::require_tool("python3"))
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/python/confluent_sasl.py"
            ))
            .args([
                "--bootstrap",
                &bootstrap,
                "--user",
                user,
                "--password",
                password,
            ])
            .args(["--mechanism", "SCRAM-SHA-256", "--count", "2", "ledger"])
            .output()
            .expect("python3 runs")
    };
    let out = confluent("carol", "carol-scram");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "OK 0 1"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = confluent("carol", "nope");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !out.status.success() && stdout.contains("FAILED"),
        "{stdout}"
    );
    let out = std::process::Command::new(common::require_tool("python3"))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/sasl_plain.py"
        ))
        .args([
            "--bootstrap",
            &bootstrap,
            "--user",
            "alice",
            "--password",
            "alice-scram",
        ])
        .args(["--mechanism", "SCRAM-SHA-512", "--count", "2", "ledger"])
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.lines().any(|l| l == "OK 2 3"), "{stdout}");
    let out = std::process::Command::new(common::require_tool("node"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node"))
        .args([
            "sasl_plain.js",
            &bootstrap,
            "alice",
            "alice-scram",
            "ledger",
            "3",
            "scram-sha-512",
        ])
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success() && stdout.lines().any(|l| l == "OK 4"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(end_offset_as(&mut good, "ledger"), 7);
}

/// KIP-368 (`connections.max.reauth.ms`): SaslAuthenticate v1+ tells the
/// session's lifetime; a client that re-authenticates on its connection as
/// the same user goes on past it, one that does not is closed at its next
/// request after it, and one that re-authenticates as someone else is
/// closed. librdkafka re-authenticates by itself: a producer sending for
/// longer than three lifetimes gets every record acknowledged, in order.
#[test]
fn sasl_sessions_past_connections_max_reauth_ms_reauthenticate_or_close() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = sasl_broker(dir.path(), &["connections.max.reauth.ms=1500"]);
    let bootstrap = broker.bootstrap.clone();
    let log_in = |connection: &mut RawConnection, user: &str, password: &str| {
        assert_eq!(
            connection
                .handshake(1, "PLAIN")
                .expect("handshake")
                .error_code,
            0
        );
        connection
            .authenticate(format!("\0{user}\0{password}").as_bytes())
            .expect("authenticated")
    };
    let mut renewing = RawConnection::open(&bootstrap);
    let answer = log_in(&mut renewing, "alice", "alice-secret");
    assert_eq!((answer.error_code, answer.session_lifetime_ms), (0, 1500));
    let mut lapsing = RawConnection::open(&bootstrap);
    log_in(&mut lapsing, "alice", "alice-secret");
    std::thread::sleep(Duration::from_millis(1000));
    log_in(&mut renewing, "alice", "alice-secret");
    broker.wait_for_line("re-authenticated as User:alice", TIMEOUT);
    std::thread::sleep(Duration::from_millis(1000));
    // 2 s after the first login, 1 s after the second.
    assert!(renewing.metadata().is_some(), "the renewed session goes on");
    assert!(lapsing.metadata().is_none(), "the lapsed one is closed");
    broker.wait_for_line("without re-authentication", TIMEOUT);
    let mut switching = RawConnection::open(&bootstrap);
    log_in(&mut switching, "alice", "alice-secret");
    assert_eq!(
        switching
            .handshake(1, "PLAIN")
            .expect("handshake")
            .error_code,
        0
    );
    let _ = switching.authenticate(b"\0bob\0bob-secret");
    assert!(switching.metadata().is_none(), "alice cannot become bob");
    broker.wait_for_line("re-authenticated as User:bob, not User:alice", TIMEOUT);

    let producer: rdkafka::producer::FutureProducer =
        sasl_config(&bootstrap, "alice", "alice-secret")
            .set("acks", "all")
            .create()
            .expect("producer");
    let offsets: Vec<i64> = common::block_on(async {
        let mut offsets = Vec::new();
        for i in 0..50 {
            let payload = format!("r{i}");
            let delivered = producer
                .send(
                    rdkafka::producer::FutureRecord::<(), _>::to("renewed").payload(&payload),
                    Duration::from_secs(30),
                )
                .await
                .expect("acknowledged across re-authentications");
            offsets.push(delivered.offset);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        offsets
    });
    assert_eq!(offsets, (0..50).collect::<Vec<i64>>());
    assert!(broker.count_lines("re-authenticated as User:alice") >= 3);
}
