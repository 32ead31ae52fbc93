//! CreateTopics (key 19), v0-7, and the auto-creation Metadata and Produce
//! use. Every topic goes to the controller; results come back per topic.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::actors::controller::{CreateTopic, ControllerError};
use crate::actors::group_coordinator::{offsets_topic, CoordinatorConfig};
use crate::cluster::TopicMetadata;

pub async fn handle(
    ctx: &BrokerContext,
    request: CreateTopicsRequest,
    version: i16,
) -> CreateTopicsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
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

/// Create `name` with the broker defaults, as auto-creation does. A topic
/// that exists already is answered from this broker's cache, or with
/// LEADER_NOT_AVAILABLE while the cache lacks it (Kafka's answer).
pub async fn auto_create_topic(
    ctx: &BrokerContext,
    name: &str,
) -> Result<TopicMetadata, ControllerError> {
    let request = auto_create_request(ctx, name);
    let outcome = ctx
        .controller
        .send(request)
        .await
        .unwrap_or(Err(ControllerError::Stopped));
    match outcome {
        // Kafka's ZkAutoTopicCreationManager: another broker (or an earlier
        // life of this one) created it; the clients retry.
        Err(ControllerError::AlreadyExists(_)) => ctx
            .metadata
            .topic(name)
            .ok_or_else(|| ControllerError::LeaderNotAvailable(name.to_string())),
        other => other,
    }
}

/// What auto-creating `name` asks the controller for. Internal topics are
/// only ever created with their own settings.
fn auto_create_request(ctx: &BrokerContext, name: &str) -> CreateTopic {
    if name == crate::group::OFFSETS_TOPIC {
        offsets_topic(&CoordinatorConfig::from_broker(&ctx.config))
    } else {
        CreateTopic {
            name: name.to_string(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: BTreeMap::new(),
            configs: Vec::new(),
            validate_only: false,
        }
    }
}

/// Kafka's AutoTopicCreationManager for Produce: the creation is asked of
/// the controller and not waited for (the request answers
/// UNKNOWN_TOPIC_OR_PARTITION and the client retries), so a connection's
/// later requests do not queue behind it. A topic already being created is
/// not asked for again, so a producer retrying every 100 ms does not
/// queue a CreateTopic each time.
#[derive(Debug, Default, Clone)]
pub struct AutoTopicCreations {
    in_flight: Arc<Mutex<HashSet<String>>>,
}

impl AutoTopicCreations {
    /// Start creating `name` in the background unless that is under way.
    pub fn start(&self, ctx: &BrokerContext, name: &str) {
        if !self.in_flight().insert(name.to_string()) {
            return;
        }
        let request = auto_create_request(ctx, name);
        let controller = ctx.controller.clone();
        let creations = self.clone();
        let name = name.to_string();
        actix_rt::spawn(async move {
            match controller.send(request).await {
                Ok(Ok(_)) => log::info!("auto-created topic {name} for a produce"),
                Ok(Err(ControllerError::AlreadyExists(_))) => {}
                Ok(Err(e)) => log::debug!("auto-creation of {name} failed: {e}"),
                Err(_) => log::debug!("auto-creation of {name}: the controller is gone"),
            }
            creations.in_flight().remove(&name);
        });
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // A panic while holding it leaves a plain set behind: keep using it.
        self.in_flight
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
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
