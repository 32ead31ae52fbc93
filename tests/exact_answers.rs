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

/// Produce one v2 batch of records with these timestamps; the partition's
/// answer (Produce v9, so `record_errors` is on the wire).
fn produce_at(
    bootstrap: &str,
    topic: &str,
    timestamps: &[i64],
) -> kafka_protocol::messages::produce_response::PartitionProduceResponse {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
    let records: Vec<_> = timestamps
        .iter()
        .enumerate()
        .map(|(i, &ts)| {
            ferrolog::storage::records::data_record(
                i,
                ts,
                None,
                Some(bytes::Bytes::from(format!("v{i}"))),
                Default::default(),
            )
        })
        .collect();
    let batch = ferrolog::storage::records::encode_records(&records).expect("batch");
    let response: ProduceResponse = raw_request(
        bootstrap,
        ApiKey::Produce,
        9,
        &ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch))])]),
        TIMEOUT,
    );
    response.responses[0].partition_responses[0].clone()
}

/// `message.timestamp.before.max.ms` / `after.max.ms` (topic and broker
/// level, KIP-937) and the deprecated `difference.max.ms`: a CreateTime
/// record outside the window fails its batch with INVALID_TIMESTAMP,
/// naming the record in `record_errors` (Produce v8+), and nothing of the
/// batch is written; LogAppendTime topics are not checked.
#[test]
fn message_timestamp_bounds_are_enforced_per_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &["log.message.timestamp.after.max.ms=60000"]);
    let hour = 3_600_000;
    let topics = [
        NewTopic::new("bounded", 1, TopicReplication::Fixed(1))
            .set("message.timestamp.before.max.ms", "3600000"),
        NewTopic::new("legacy-bound", 1, TopicReplication::Fixed(1))
            .set("message.timestamp.difference.max.ms", "3600000"),
        NewTopic::new("broker-bound", 1, TopicReplication::Fixed(1)),
        NewTopic::new("appended", 1, TopicReplication::Fixed(1))
            .set("message.timestamp.type", "LogAppendTime"),
    ];
    for result in block_on(admin(&broker.bootstrap).create_topics(&topics, &admin_options(TIMEOUT)))
        .expect("CreateTopics answered")
    {
        result.expect("created");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;

    let refused = produce_at(&broker.bootstrap, "bounded", &[now, now - 2 * hour, now]);
    assert_eq!(refused.error_code, ResponseError::InvalidTimestamp.code());
    assert_eq!(refused.record_errors.len(), 1);
    assert_eq!(refused.record_errors[0].batch_index, 1);
    let message = refused.record_errors[0]
        .batch_index_error_message
        .as_ref()
        .map(|m| m.to_string())
        .unwrap_or_default();
    assert!(message.contains("is out of range"), "{message}");
    assert!(refused.error_message.is_some());
    let accepted = produce_at(&broker.bootstrap, "bounded", &[now, now - hour / 2]);
    assert_eq!(accepted.error_code, 0);
    assert_eq!(
        accepted.base_offset, 0,
        "the refused batch left nothing behind"
    );

    // The deprecated key bounds both sides.
    let future = produce_at(&broker.bootstrap, "legacy-bound", &[now + 2 * hour]);
    assert_eq!(future.error_code, ResponseError::InvalidTimestamp.code());
    assert_eq!(future.record_errors[0].batch_index, 0);
    assert_eq!(
        produce_at(&broker.bootstrap, "legacy-bound", &[now - hour / 2]).error_code,
        0
    );

    // The broker default applies to topics without their own.
    let ahead = produce_at(&broker.bootstrap, "broker-bound", &[now, now + hour]);
    assert_eq!(ahead.error_code, ResponseError::InvalidTimestamp.code());
    assert_eq!(ahead.record_errors[0].batch_index, 1);
    assert_eq!(
        produce_at(&broker.bootstrap, "broker-bound", &[now - 100 * hour]).error_code,
        0,
        "no bound behind"
    );

    // LogAppendTime replaces the producer's timestamps: nothing to check.
    assert_eq!(
        produce_at(&broker.bootstrap, "appended", &[now + 10 * hour]).error_code,
        0
    );
}

/// DescribeConfigs as kafka-configs and admin UIs read it: every topic key
/// Kafka 3.9 lists, each with its type (v3+), its source (the topic's
/// override, a static broker setting, or Kafka's default) and, when asked,
/// its synonyms; keys ferrolog does not honour yet are accepted (by type)
/// and described, not refused; unknown keys and ill-typed values are.
#[test]
fn describe_configs_answers_sources_types_and_synonyms() {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &["log.segment.bytes=1048576"]);
    let topic = NewTopic::new("described", 1, TopicReplication::Fixed(1))
        .set("retention.ms", "1000")
        .set("preallocate", "true")
        .set("compression.type", "lz4");
    for result in
        block_on(admin(&broker.bootstrap).create_topics([&topic], &admin_options(TIMEOUT)))
            .expect("CreateTopics answered")
    {
        result.expect("created, unhonoured keys included");
    }
    let describe = |version: i16, resource_type: i8, name: &str| -> DescribeConfigsResponse {
        raw_request(
            &broker.bootstrap,
            ApiKey::DescribeConfigs,
            version,
            &DescribeConfigsRequest::default()
                .with_include_synonyms(version >= 1)
                .with_include_documentation(version >= 3)
                .with_resources(vec![DescribeConfigsResource::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(StrBytes::from_string(name.to_string()))
                    .with_configuration_keys(None)]),
            TIMEOUT,
        )
    };
    let described = describe(4, 2, "described");
    let configs = &described.results[0].configs;
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    for def in ferrolog::config::topic::TOPIC_CONFIGS {
        assert!(names.contains(&def.name), "{} is not listed", def.name);
    }
    let entry = |name: &str| {
        configs
            .iter()
            .find(|c| c.name.as_str() == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let synonyms = |name: &str| -> Vec<(String, String, i8)> {
        entry(name)
            .synonyms
            .iter()
            .map(|s| {
                (
                    s.name.to_string(),
                    s.value.as_ref().map(|v| v.to_string()).unwrap_or_default(),
                    s.source,
                )
            })
            .collect()
    };
    const DYNAMIC_TOPIC: i8 = 1;
    const STATIC_BROKER: i8 = 4;
    const DEFAULT: i8 = 5;
    const LONG: i8 = 5;
    const INT: i8 = 3;
    const BOOLEAN: i8 = 1;

    let retention = entry("retention.ms");
    assert_eq!(
        retention.value.as_ref().map(|v| v.to_string()).as_deref(),
        Some("1000")
    );
    assert_eq!(
        (retention.config_source, retention.config_type),
        (DYNAMIC_TOPIC, LONG)
    );
    assert_eq!(
        synonyms("retention.ms")[0],
        ("retention.ms".into(), "1000".into(), DYNAMIC_TOPIC)
    );

    let segment = entry("segment.bytes");
    assert_eq!(
        segment.value.as_ref().map(|v| v.to_string()).as_deref(),
        Some("1048576")
    );
    assert_eq!(
        (segment.config_source, segment.config_type),
        (STATIC_BROKER, INT)
    );
    assert_eq!(
        synonyms("segment.bytes"),
        vec![
            ("log.segment.bytes".into(), "1048576".into(), STATIC_BROKER),
            ("log.segment.bytes".into(), "1073741824".into(), DEFAULT),
        ]
    );

    let preallocate = entry("preallocate");
    assert_eq!(
        preallocate.value.as_ref().map(|v| v.to_string()).as_deref(),
        Some("true")
    );
    assert_eq!(
        (preallocate.config_source, preallocate.config_type),
        (DYNAMIC_TOPIC, BOOLEAN)
    );
    let delete_retention = entry("delete.retention.ms");
    assert_eq!(
        delete_retention
            .value
            .as_ref()
            .map(|v| v.to_string())
            .as_deref(),
        Some("86400000")
    );
    assert_eq!(delete_retention.config_source, DEFAULT);
    assert!(
        configs.iter().all(|c| !c.read_only),
        "topic configs are alterable"
    );

    // v0 has is_default instead of a source.
    let v0 = describe(0, 2, "described");
    let is_default = |name: &str| {
        v0.results[0]
            .configs
            .iter()
            .find(|c| c.name.as_str() == name)
            .map(|c| c.is_default)
    };
    assert_eq!(is_default("delete.retention.ms"), Some(true));
    assert_eq!(is_default("retention.ms"), Some(false));

    // The broker: static settings, typed; log.segment.bytes is one of the
    // keys Kafka changes at run time (KIP-226), so not read-only.
    let broker_configs = describe(4, 4, "0");
    let segment = broker_configs.results[0]
        .configs
        .iter()
        .find(|c| c.name.as_str() == "log.segment.bytes")
        .expect("log.segment.bytes");
    assert_eq!(
        (
            segment.config_source,
            segment.config_type,
            segment.read_only
        ),
        (STATIC_BROKER, INT, false)
    );
    // Every key of the broker's table is described, from the same table:
    // its value (null for an unset key without a default), its source, its
    // documentation, and Kafka's default as the last synonym.
    let broker_entry = |name: &str| {
        broker_configs.results[0]
            .configs
            .iter()
            .find(|c| c.name.as_str() == name)
            .unwrap_or_else(|| panic!("broker key {name} is not described"))
    };
    for def in ferrolog::config::BROKER_KEYS {
        let described = broker_entry(def.name);
        assert_eq!(described.config_type, def.kind as i8, "{}", def.name);
        assert_eq!(
            described.read_only,
            !ferrolog::config::dynamic::is_dynamic(def.name),
            "{} is read-only exactly when it cannot change at run time",
            def.name
        );
        assert!(
            described
                .documentation
                .as_ref()
                .is_some_and(|d| !d.is_empty()),
            "{} has no documentation",
            def.name
        );
    }
    // Set neither by the shipped file nor by the test.
    let fetch_max = broker_entry("replica.fetch.max.bytes");
    assert!(fetch_max.read_only);
    let unset = broker_entry("log.cleaner.threads");
    assert_eq!(
        (
            unset.value.as_ref().map(|v| v.to_string()),
            unset.config_source
        ),
        (Some("1".to_string()), DEFAULT)
    );
    assert_eq!(
        broker_entry("log.segment.bytes")
            .synonyms
            .iter()
            .map(|s| (s.value.as_ref().map(|v| v.to_string()), s.source))
            .collect::<Vec<_>>(),
        vec![
            (Some("1048576".to_string()), STATIC_BROKER),
            (Some("1073741824".to_string()), DEFAULT)
        ]
    );
    assert_eq!(broker_entry("zookeeper.connect").value, None);
    assert_eq!(
        broker_entry("log.cleaner.min.cleanable.ratio")
            .value
            .as_ref()
            .map(|v| v.to_string())
            .as_deref(),
        Some("0.5")
    );

    // Unhonoured keys alter like any other; unknown keys and bad values do
    // not. (Raw requests: rust-rdkafka's alter_configs drops per-resource
    // errors.)
    let alter = |key: &str, value: &str| -> i16 {
        use kafka_protocol::messages::alter_configs_request::{
            AlterConfigsResource, AlterableConfig,
        };
        use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};
        let response: AlterConfigsResponse = raw_request(
            &broker.bootstrap,
            ApiKey::AlterConfigs,
            1,
            &AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("described"))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(StrBytes::from_string(key.to_string()))
                    .with_value(Some(StrBytes::from_string(value.to_string())))])]),
            TIMEOUT,
        );
        response.responses[0].error_code
    };
    assert_eq!(alter("compression.type", "gzip"), 0);
    assert_eq!(
        alter("retention.hours", "1"),
        ResponseError::InvalidConfig.code()
    );
    assert_eq!(
        alter("preallocate", "yes"),
        ResponseError::InvalidConfig.code()
    );
    assert_eq!(
        alter("compression.type", "brotli"),
        ResponseError::InvalidConfig.code()
    );
}

/// Control requests are fenced (Kafka's controller epoch, KIP-380's broker
/// epoch): one stamped with an older controller epoch answers
/// STALE_CONTROLLER_EPOCH, one with an older broker epoch
/// STALE_BROKER_EPOCH, and neither changes what the broker serves.
#[test]
fn control_requests_from_the_past_are_fenced() {
    use kafka_protocol::messages::{
        BrokerId, LeaderAndIsrRequest, LeaderAndIsrResponse, UpdateMetadataRequest,
        UpdateMetadataResponse,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    // Restarted twice: the controller epoch is 3 by now.
    drop(BrokerProcess::start(dir.path(), &[]).terminate());
    drop(BrokerProcess::start(dir.path(), &[]).terminate());
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "fenced");
    let stale_controller: UpdateMetadataResponse = raw_request(
        &broker.bootstrap,
        ApiKey::UpdateMetadata,
        7,
        &UpdateMetadataRequest::default()
            .with_controller_id(BrokerId(7))
            .with_controller_epoch(1)
            .with_broker_epoch(-1),
        TIMEOUT,
    );
    assert_eq!(
        stale_controller.error_code,
        ResponseError::StaleControllerEpoch.code()
    );
    let stale_broker: LeaderAndIsrResponse = raw_request(
        &broker.bootstrap,
        ApiKey::LeaderAndIsr,
        5,
        &LeaderAndIsrRequest::default()
            .with_controller_id(BrokerId(7))
            .with_controller_epoch(1000)
            .with_broker_epoch(1),
        TIMEOUT,
    );
    assert_eq!(
        stale_broker.error_code,
        ResponseError::StaleBrokerEpoch.code()
    );
    // Without ZooKeeper no other controller can exist: even a newer
    // controller epoch is refused, and the broker stays the controller.
    let newer_controller: UpdateMetadataResponse = raw_request(
        &broker.bootstrap,
        ApiKey::UpdateMetadata,
        7,
        &UpdateMetadataRequest::default()
            .with_controller_id(BrokerId(7))
            .with_controller_epoch(1000)
            .with_broker_epoch(-1),
        TIMEOUT,
    );
    assert_eq!(
        newer_controller.error_code,
        ResponseError::StaleControllerEpoch.code()
    );
    // The broker's own view is untouched: it is still the controller and
    // still serves the topic.
    let view = metadata(
        &broker.bootstrap,
        9,
        &MetadataRequest::default().with_topics(None),
    );
    assert_eq!(view.controller_id.0, 0);
    assert_eq!(view.brokers.len(), 1);
    assert_eq!(view.topics.len(), 1);
}
