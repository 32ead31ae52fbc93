//! Metadata (key 3), v0-12: brokers, controller, cluster id and topics with
//! their partitions. Unknown topics are auto-created when
//! `auto.create.topics.enable` and the request (v4+) allow it.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::create_topics::auto_create_topic;
use super::BrokerContext;
use crate::cluster::{validate_topic_name, TopicMetadata};

const OPERATIONS_OMITTED: i32 = i32::MIN;

pub async fn handle(
    ctx: &BrokerContext,
    request: MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let requested: Option<Vec<String>> = match request.topics {
        // v0 has no null: an empty list means every topic.
        Some(topics) if version == 0 && topics.is_empty() => None,
        None => None,
        Some(topics) => Some(
            topics
                .into_iter()
                .filter_map(|t| t.name.map(|n| n.0.to_string()))
                .collect(),
        ),
    };
    let allow_auto_create = version < 4 || request.allow_auto_topic_creation;
    let mut topics = Vec::new();
    match requested {
        None => {
            for topic in ctx.metadata.snapshot().topics.values() {
                topics.push(topic_response(topic, version));
            }
        }
        Some(names) => {
            for name in names {
                topics.push(requested_topic(ctx, &name, allow_auto_create, version).await);
            }
        }
    }
    let cluster = ctx.metadata.snapshot();
    let mut response = MetadataResponse::default()
        .with_brokers(
            cluster
                .brokers
                .values()
                .map(|b| {
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(b.id))
                        .with_host(StrBytes::from_string(b.host.clone()))
                        .with_port(b.port as i32)
                        .with_rack(b.rack.clone().map(StrBytes::from_string))
                })
                .collect(),
        )
        .with_controller_id(BrokerId(cluster.controller_id))
        .with_topics(topics);
    if version >= 2 {
        response =
            response.with_cluster_id(Some(StrBytes::from_string(cluster.cluster_id.clone())));
    }
    if (8..=10).contains(&version) {
        response = response.with_cluster_authorized_operations(OPERATIONS_OMITTED);
    }
    response
}

async fn requested_topic(
    ctx: &BrokerContext,
    name: &str,
    allow_auto_create: bool,
    version: i16,
) -> MetadataResponseTopic {
    if let Some(topic) = ctx.metadata.topic(name) {
        return topic_response(&topic, version);
    }
    let error = |code: i16| {
        MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
            .with_error_code(code)
    };
    if validate_topic_name(name).is_err() {
        return error(ResponseError::InvalidTopicException.code());
    }
    if !(allow_auto_create && ctx.config.auto_create_topics_enable) {
        return error(ResponseError::UnknownTopicOrPartition.code());
    }
    match auto_create_topic(ctx, name).await {
        Ok(topic) => topic_response(&topic, version),
        Err(e) => error(e.code()),
    }
}

fn topic_response(topic: &TopicMetadata, version: i16) -> MetadataResponseTopic {
    let mut response = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_is_internal(topic.is_internal)
        .with_partitions(
            topic
                .partitions
                .iter()
                .map(|(&index, p)| {
                    MetadataResponsePartition::default()
                        .with_partition_index(index)
                        .with_leader_id(BrokerId(p.leader))
                        .with_leader_epoch(p.leader_epoch)
                        .with_replica_nodes(p.replicas.iter().map(|&r| BrokerId(r)).collect())
                        .with_isr_nodes(p.isr.iter().map(|&r| BrokerId(r)).collect())
                })
                .collect(),
        );
    if version >= 10 {
        response = response.with_topic_id(uuid::Uuid::from_bytes(topic.topic_id));
    }
    if version >= 8 {
        response = response.with_topic_authorized_operations(OPERATIONS_OMITTED);
    }
    response
}
