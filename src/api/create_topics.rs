//! CreateTopics (key 19), v0-7. Every topic goes to the controller;
//! results come back per topic. Off the active controller each topic is
//! NOT_CONTROLLER, as in Kafka. Auto-creation for Metadata and Produce is
//! `crate::auto_topic_creation`.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::error::ResponseError;
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::controller::{ControllerError, CreateTopic, TopicRequester};
use crate::cluster::TopicMetadata;

pub async fn handle(
    ctx: &BrokerContext,
    session: &Session,
    request: CreateTopicsRequest,
    version: i16,
) -> CreateTopicsResponse {
    // CREATE on the cluster covers every topic; else CREATE on each.
    let cluster_create = ctx.authorize_cluster(session, AclOperation::Create);
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        if !cluster_create
            && !ctx.authorize(session, AclOperation::Create, ResourceType::Topic, &topic.name.0)
        {
            results.push(
                CreatableTopicResult::default()
                    .with_name(topic.name.clone())
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
                    .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                    .with_error_message(Some(StrBytes::from_static_str(
                        "Authorization failed.",
                    ))),
            );
            continue;
        }
        let assignments: BTreeMap<i32, Vec<i32>> = topic
            .assignments
            .iter()
            .map(|a| {
                (
                    a.partition_index,
                    a.broker_ids.iter().map(|b| b.0).collect(),
                )
            })
            .collect();
        let configs = topic
            .configs
            .iter()
            .filter_map(|c| {
                c.value
                    .as_ref()
                    .map(|v| (c.name.to_string(), v.to_string()))
            })
            .collect();
        let outcome = ctx
            .controller
            .send(CreateTopic {
                name: topic.name.0.to_string(),
                num_partitions: topic.num_partitions,
                replication_factor: topic.replication_factor,
                assignments,
                configs,
                validate_only: request.validate_only,
                requester: TopicRequester::CreateTopicsRequest,
            })
            .await
            .unwrap_or(Err(ControllerError::Stopped));
        let mut result = CreatableTopicResult::default()
            .with_name(topic.name.clone())
            .with_num_partitions(-1)
            .with_replication_factor(-1);
        match outcome {
            Ok(created) => {
                result = result
                    .with_topic_id(uuid::Uuid::from_bytes(created.topic_id))
                    .with_num_partitions(created.partitions.len() as i32)
                    .with_replication_factor(
                        created
                            .partitions
                            .values()
                            .next()
                            .map_or(0, |p| p.replicas.len()) as i16,
                    );
                if version >= 5 {
                    result = result.with_configs(Some(described_configs(&created, &ctx.dynamic)));
                }
            }
            Err(e) => {
                log::info!("create topic {} refused: {e}", topic.name.0);
                result = result
                    .with_error_code(e.code())
                    .with_error_message(Some(StrBytes::from_string(e.to_string())));
            }
        }
        results.push(result);
    }
    CreateTopicsResponse::default().with_topics(results)
}

fn described_configs(
    topic: &TopicMetadata,
    broker: &crate::config::dynamic::DynamicBrokerConfig,
) -> Vec<CreatableTopicConfigs> {
    super::configs::topic_config_entries(topic, broker)
        .into_iter()
        .map(|entry| {
            CreatableTopicConfigs::default()
                .with_name(StrBytes::from_string(entry.name))
                .with_value(entry.value.map(StrBytes::from_string))
                .with_config_source(entry.source)
                .with_is_sensitive(false)
                .with_read_only(false)
        })
        .collect()
}
