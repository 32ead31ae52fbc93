//! Metadata (key 3), v0-12: brokers, controller, cluster id and topics with
//! their partitions. Unknown topics are auto-created when
//! `auto.create.topics.enable` and the request (v4+) allow it. From v12 a
//! request may name topics by id instead (KIP-516); as in Kafka, any id in
//! the request makes it a request by ids, and unknown ids answer
//! UNKNOWN_TOPIC_ID.
//!
//! With an authorizer, as Kafka's `handleTopicMetadataRequest`: a request
//! for every topic lists only those the principal may DESCRIBE; a named
//! topic it may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED, and one
//! it may not CREATE (on the cluster or the topic) is not auto-created but
//! answers TOPIC_AUTHORIZATION_FAILED too.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::authorized_operations::authorized_operations;
use super::BrokerContext;
use crate::auto_topic_creation::auto_create_topic;
use crate::cluster::{validate_topic_name, TopicMetadata};
use crate::security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use crate::security::Session;

/// CREATE on the cluster or on the topic: what auto-creation needs.
pub fn may_create(ctx: &BrokerContext, session: &Session, topic: &str) -> bool {
    ctx.authorize_cluster(session, AclOperation::Create)
        || ctx.authorize(session, AclOperation::Create, ResourceType::Topic, topic)
}

fn may_describe(ctx: &BrokerContext, session: &Session, topic: &str) -> bool {
    ctx.authorize(session, AclOperation::Describe, ResourceType::Topic, topic)
}

/// What the request asks for.
enum Requested {
    All,
    Names(Vec<String>),
    Ids(Vec<uuid::Uuid>),
    /// A v10/v11 request with a null name or a topic id, which only v12
    /// allows (Kafka: InvalidRequestException for every topic).
    Invalid(Vec<MetadataRequestTopic>),
}

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: MetadataRequest,
    version: i16,
    listener: &str,
) -> MetadataResponse {
    let requested = match request.topics {
        // v0 has no null: an empty list means every topic.
        Some(topics) if version == 0 && topics.is_empty() => Requested::All,
        None => Requested::All,
        Some(topics)
            if version < 12
                && topics
                    .iter()
                    .any(|t| t.name.is_none() || !t.topic_id.is_nil()) =>
        {
            Requested::Invalid(topics)
        }
        Some(topics) if topics.iter().any(|t| !t.topic_id.is_nil()) => Requested::Ids(
            topics
                .into_iter()
                .map(|t| t.topic_id)
                .filter(|id| !id.is_nil())
                .collect(),
        ),
        Some(topics) => Requested::Names(
            topics
                .into_iter()
                .filter_map(|t| t.name.map(|n| n.0.to_string()))
                .collect(),
        ),
    };
    let allow_auto_create = version < 4 || request.allow_auto_topic_creation;
    let operations = version >= 8 && request.include_topic_authorized_operations;
    let mut topics = Vec::new();
    match requested {
        Requested::All => {
            for topic in ctx.metadata.snapshot().topics.values() {
                if may_describe(ctx, session, &topic.name) {
                    topics.push(topic_response(ctx, session, topic, version, operations));
                }
            }
        }
        Requested::Names(names) => {
            for name in names {
                topics.push(
                    requested_topic(ctx, session, &name, allow_auto_create, version, operations)
                        .await,
                );
            }
        }
        Requested::Ids(ids) => {
            let cluster = ctx.metadata.snapshot();
            for id in ids {
                let found = cluster
                    .topics
                    .values()
                    .find(|t| t.topic_id == *id.as_bytes());
                topics.push(match found {
                    // Ids are not secret: the id comes back, the name not.
                    Some(topic) if !may_describe(ctx, session, &topic.name) => {
                        MetadataResponseTopic::default()
                            .with_name(None)
                            .with_topic_id(id)
                            .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                    }
                    Some(topic) => topic_response(ctx, session, topic, version, operations),
                    None => MetadataResponseTopic::default()
                        .with_name(None)
                        .with_topic_id(id)
                        .with_error_code(ResponseError::UnknownTopicId.code()),
                });
            }
        }
        Requested::Invalid(requested) => {
            for topic in requested {
                topics.push(
                    MetadataResponseTopic::default()
                        .with_name(topic.name)
                        .with_topic_id(topic.topic_id)
                        .with_error_code(ResponseError::InvalidRequest.code()),
                );
            }
        }
    }
    let cluster = ctx.metadata.snapshot();
    let mut response = MetadataResponse::default()
        .with_brokers(
            cluster
                .brokers
                .values()
                // Each broker as reached on the client's listener; brokers
                // without it are left out, as Kafka does.
                .filter_map(|b| {
                    let (host, port) = b.on_listener(listener)?;
                    Some(
                        MetadataResponseBroker::default()
                            .with_node_id(BrokerId(b.id))
                            .with_host(StrBytes::from_string(host.to_string()))
                            .with_port(port as i32)
                            .with_rack(b.rack.clone().map(StrBytes::from_string)),
                    )
                })
                .collect(),
        )
        .with_controller_id(BrokerId(cluster.advertised_controller_id()))
        .with_topics(topics);
    if version >= 2 {
        response =
            response.with_cluster_id(Some(StrBytes::from_string(cluster.cluster_id.clone())));
    }
    if (8..=10).contains(&version) {
        response = response.with_cluster_authorized_operations(authorized_operations(
            ctx,
            session,
            ResourceType::Cluster,
            CLUSTER_NAME,
            request.include_cluster_authorized_operations,
        ));
    }
    response
}

async fn requested_topic(
    ctx: &BrokerContext,
    session: &Session,
    name: &str,
    allow_auto_create: bool,
    version: i16,
    operations: bool,
) -> MetadataResponseTopic {
    let error = |code: i16| {
        MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
            .with_error_code(code)
    };
    if !may_describe(ctx, session, name) {
        return error(ResponseError::TopicAuthorizationFailed.code());
    }
    if let Some(topic) = ctx.metadata.topic(name) {
        return topic_response(ctx, session, &topic, version, operations);
    }
    if validate_topic_name(name).is_err() {
        return error(ResponseError::InvalidTopicException.code());
    }
    if !(allow_auto_create && ctx.config.auto_create_topics_enable) {
        return error(ResponseError::UnknownTopicOrPartition.code());
    }
    if !may_create(ctx, session, name) {
        return error(ResponseError::TopicAuthorizationFailed.code());
    }
    match auto_create_topic(ctx, name).await {
        Ok(topic) => topic_response(ctx, session, &topic, version, operations),
        Err(e) => error(e.code()),
    }
}

fn topic_response(
    ctx: &BrokerContext,
    session: &Session,
    topic: &TopicMetadata,
    version: i16,
    operations: bool,
) -> MetadataResponseTopic {
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
        response = response.with_topic_authorized_operations(authorized_operations(
            ctx,
            session,
            ResourceType::Topic,
            &topic.name,
            operations,
        ));
    }
    response
}
