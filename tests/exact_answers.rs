//! Kafka's exact answers to admin-tool requests, checked with raw requests
//! against a real broker process: authorized operations when asked for
//! (Kafka without an authorizer answers every supported operation),
//! Metadata by topic id (v12), ListGroups' type filter (v5).

mod common;

use std::time::Duration;

use common::{admin, admin_options, block_on, raw_request, BrokerProcess};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, DescribeClusterRequest, DescribeClusterResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, GroupId, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};

const TIMEOUT: Duration = Duration::from_secs(30);

fn create_topic(bootstrap: &str, name: &str) {
    for result in block_on(admin(bootstrap).create_topics(
        &[NewTopic::new(name, 2, TopicReplication::Fixed(1))],
        &admin_options(TIMEOUT),
    ))
    .expect("CreateTopics answered")
    {
        result.expect("created");
    }
}

fn metadata(bootstrap: &str, version: i16, request: &MetadataRequest) -> MetadataResponse {
    raw_request(bootstrap, ApiKey::Metadata, version, request, TIMEOUT)
}

/// Metadata, DescribeCluster and DescribeGroups answer Kafka's operation
/// sets when asked (topic 3576, cluster 8096, group 328) and `i32::MIN`
/// when not.
#[test]
fn authorized_operations_are_answered_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "ops");
    let topic = |name: &str| {
        MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.into()))))
    };
    let asked = metadata(
        &broker.bootstrap,
        10,
        &MetadataRequest::default()
            .with_topics(Some(vec![topic("ops")]))
            .with_include_cluster_authorized_operations(true)
            .with_include_topic_authorized_operations(true),
    );
    assert_eq!(asked.topics[0].topic_authorized_operations, 3576);
    assert_eq!(asked.cluster_authorized_operations, 8096);
    let not_asked = metadata(
        &broker.bootstrap,
        10,
        &MetadataRequest::default().with_topics(Some(vec![topic("ops")])),
    );
    assert_eq!(not_asked.topics[0].topic_authorized_operations, i32::MIN);
    assert_eq!(not_asked.cluster_authorized_operations, i32::MIN);

    let cluster: DescribeClusterResponse = raw_request(
        &broker.bootstrap,
        ApiKey::DescribeCluster,
        0,
        &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
        TIMEOUT,
    );
    assert_eq!(cluster.cluster_authorized_operations, 8096);

    let groups: DescribeGroupsResponse = raw_request(
        &broker.bootstrap,
        ApiKey::DescribeGroups,
        5,
        &DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(StrBytes::from_static_str("nobody"))])
            .with_include_authorized_operations(true),
        TIMEOUT,
    );
    assert_eq!(groups.groups[0].authorized_operations, 328);
}

/// Metadata v12 by topic id: a known id answers its topic with the name;
/// an unknown one answers UNKNOWN_TOPIC_ID with a null name and creates
/// nothing; v11 may not name topics by id (INVALID_REQUEST).
#[test]
fn metadata_v12_finds_topics_by_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "by-id");
    let by_name = metadata(
        &broker.bootstrap,
        12,
        &MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str("by-id"))))])),
    );
    let id = by_name.topics[0].topic_id;
    assert!(!id.is_nil());

    let unknown = uuid::Uuid::new_v4();
    let by_id = metadata(
        &broker.bootstrap,
        12,
        &MetadataRequest::default()
            .with_allow_auto_topic_creation(true)
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_topic_id(id),
                MetadataRequestTopic::default().with_topic_id(unknown),
            ])),
    );
    assert_eq!(by_id.topics.len(), 2);
    let found = &by_id.topics[0];
    assert_eq!(found.error_code, 0);
    assert_eq!(found.name.as_ref().map(|n| n.0.as_str()), Some("by-id"));
    assert_eq!(found.topic_id, id);
    assert_eq!(found.partitions.len(), 2);
    let missing = &by_id.topics[1];
    assert_eq!(missing.error_code, ResponseError::UnknownTopicId.code());
    assert_eq!(missing.topic_id, unknown);
    assert!(missing.name.is_none(), "{:?}", missing.name);

    let old = metadata(
        &broker.bootstrap,
        11,
        &MetadataRequest::default().with_topics(Some(vec![
            MetadataRequestTopic::default().with_topic_id(id)
        ])),
    );
    assert_eq!(
        old.topics[0].error_code,
        ResponseError::InvalidRequest.code()
    );
    let all = metadata(
        &broker.bootstrap,
        12,
        &MetadataRequest::default().with_topics(None),
    );
    assert_eq!(
        all.topics.len(),
        1,
        "nothing was created for the unknown id"
    );
}

/// ListGroups v5 (KIP-848): each group says its type, "classic" here, and
/// the type filter keeps only the types asked for, case-insensitively.
#[test]
fn list_groups_v5_filters_by_type() {
    use kafka_protocol::messages::{ListGroupsRequest, ListGroupsResponse};
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "typed");
    // A group with a committed offset and no members: classic, Empty.
    let consumer: BaseConsumer = common::client_config(&broker.bootstrap)
        .set("group.id", "typed-group")
        .create()
        .expect("consumer");
    let mut offsets = rdkafka::TopicPartitionList::new();
    offsets
        .add_partition_offset("typed", 0, rdkafka::Offset::Offset(0))
        .expect("offset");
    consumer.commit(&offsets, CommitMode::Sync).expect("commit");
    let list = |types: &[&str]| -> ListGroupsResponse {
        raw_request(
            &broker.bootstrap,
            ApiKey::ListGroups,
            5,
            &ListGroupsRequest::default().with_types_filter(
                types
                    .iter()
                    .map(|t| StrBytes::from_string(t.to_string()))
                    .collect(),
            ),
            TIMEOUT,
        )
    };
    let names = |response: &ListGroupsResponse| -> Vec<(String, String)> {
        response
            .groups
            .iter()
            .map(|g| (g.group_id.0.to_string(), g.group_type.to_string()))
            .collect()
    };
    let expected = vec![("typed-group".to_string(), "classic".to_string())];
    assert_eq!(names(&list(&[])), expected);
    assert_eq!(names(&list(&["classic"])), expected);
    assert_eq!(names(&list(&["CLASSIC", "consumer"])), expected);
    assert!(names(&list(&["consumer"])).is_empty());
}
