//! DescribeConfigs (key 32, v0-4), AlterConfigs (key 33, v0-2) and
//! IncrementalAlterConfigs (key 44, v0-1) for topics and brokers. Topic
//! changes go to the controller, which validates them with the same rules
//! as topic creation; broker changes are Kafka's dynamic broker configs
//! (KIP-226, `config::dynamic`), for this broker (resource name = its id)
//! or the cluster default (empty name).

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResourceResponse;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::BrokerContext;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::Session;
use crate::actors::controller::{AlterBrokerConfigs, AlterTopicConfigs, ControllerError};
use crate::cluster::TopicMetadata;
use crate::config::dynamic::{is_dynamic, DynamicBrokerConfig, DynamicLayers};
use crate::config::{broker_key, java_double, BrokerConfig, BROKER_KEYS};
use crate::storage::LogConfig;
use crate::config::topic::{apply_incremental, apply_incremental_op, ConfigKind, TOPIC_CONFIGS};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
/// Kafka's ConfigSource values.
const SOURCE_DYNAMIC_TOPIC: i8 = 1;
const SOURCE_DYNAMIC_BROKER: i8 = 2;
const SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;

/// One config as DescribeConfigs shows it.
#[derive(Debug, Clone)]
pub struct ConfigEntry {
    pub name: String,
    /// `None` is Kafka's null (an unset key without a default).
    pub value: Option<String>,
    pub source: i8,
    /// Kafka's `ConfigType` code (DescribeConfigs v3+), 0 when unknown.
    pub kind: i8,
    /// Cannot be changed while the broker runs.
    pub read_only: bool,
    /// DescribeConfigs v3+ with `include_documentation`.
    pub documentation: Option<&'static str>,
    /// Where the value could come from, most specific first (name, value,
    /// source), as `include_synonyms` asks.
    pub synonyms: Vec<(String, String, i8)>,
}

/// The synonyms of broker key `key`, most specific first, as Kafka orders
/// them: this broker's dynamic value (when `per_broker`), the cluster
/// default's, server.properties', Kafka's default.
fn broker_synonyms(
    key: &str,
    static_config: &BrokerConfig,
    layers: &DynamicLayers,
    per_broker: bool,
) -> Vec<(String, String, i8)> {
    let mut synonyms = Vec::new();
    if per_broker {
        if let Some(value) = layers.per_broker.get(key) {
            synonyms.push((key.to_string(), value.clone(), SOURCE_DYNAMIC_BROKER));
        }
    }
    if let Some(value) = layers.cluster_default.get(key) {
        synonyms.push((key.to_string(), value.clone(), SOURCE_DYNAMIC_DEFAULT_BROKER));
    }
    if let Some(value) = static_config.set_keys.get(key) {
        synonyms.push((key.to_string(), value.clone(), SOURCE_STATIC_BROKER));
    }
    synonyms
}

/// Every topic config Kafka lists, with its effective value, where it
/// comes from, and its synonyms: the topic's override, then the broker
/// key's dynamic and static values, then Kafka's default.
pub fn topic_config_entries(topic: &TopicMetadata, dynamic: &DynamicBrokerConfig) -> Vec<ConfigEntry> {
    let broker = dynamic.current();
    let broker = broker.as_ref();
    let layers = dynamic.layers();
    TOPIC_CONFIGS
        .iter()
        .map(|def| {
            let mut synonyms = Vec::new();
            if let Some(value) = topic.configs.get(def.name) {
                synonyms.push((def.name.to_string(), value.clone(), SOURCE_DYNAMIC_TOPIC));
            }
            if let Some(broker_key) = def.broker_key {
                synonyms.extend(broker_synonyms(broker_key, broker, &layers, true));
                synonyms.push((
                    broker_key.to_string(),
                    def.default.to_string(),
                    SOURCE_DEFAULT,
                ));
            }
            let source = synonyms.first().map_or(SOURCE_DEFAULT, |s| s.2);
            // The override; else what the log config makes of it; else, for
            // keys kept outside the log config, the first synonym's value.
            let value = match topic.configs.get(def.name) {
                Some(value) => value.clone(),
                None => def
                    .honoured()
                    .then(|| effective_value(def.name, &topic.config.log, broker))
                    .flatten()
                    .or_else(|| synonyms.first().map(|s| s.1.clone()))
                    .unwrap_or_else(|| def.default.to_string()),
            };
            ConfigEntry {
                name: def.name.to_string(),
                value: Some(value),
                source,
                kind: def.kind as i8,
                read_only: false,
                documentation: None,
                synonyms,
            }
        })
        .collect()
}

/// A topic key's value as the log config holds it; `None` for a key the
/// log config does not hold.
fn effective_value(key: &str, config: &LogConfig, broker: &BrokerConfig) -> Option<String> {
    Some(match key {
        "retention.ms" => config.retention_ms.to_string(),
        "retention.bytes" => config.retention_bytes.to_string(),
        "segment.bytes" => config.segment_bytes.to_string(),
        "segment.ms" => config.segment_ms.to_string(),
        "segment.index.bytes" => config.segment_index_bytes.to_string(),
        "index.interval.bytes" => config.index_interval_bytes.to_string(),
        "max.message.bytes" => config.max_message_bytes.to_string(),
        "message.timestamp.type" => config.message_timestamp_type.name().to_string(),
        "message.timestamp.difference.max.ms" => {
            config.message_timestamp_difference_max_ms.to_string()
        }
        "message.timestamp.before.max.ms" => config.message_timestamp_before_max_ms.to_string(),
        "message.timestamp.after.max.ms" => config.message_timestamp_after_max_ms.to_string(),
        "flush.messages" => config.flush_messages.to_string(),
        "flush.ms" => config.flush_ms.to_string(),
        "cleanup.policy" => config.cleanup_policy.name().to_string(),
        "delete.retention.ms" => config.delete_retention_ms.to_string(),
        "min.cleanable.dirty.ratio" => java_double(config.min_cleanable_dirty_ratio),
        "min.compaction.lag.ms" => config.min_compaction_lag_ms.to_string(),
        "max.compaction.lag.ms" => config.max_compaction_lag_ms.to_string(),
        // Not a log setting: the broker's `min.insync.replicas`.
        "min.insync.replicas" => broker.min_insync_replicas.to_string(),
        _ => return None,
    })
}

/// Every broker key of the table, with its value now, where it comes
/// from, and its synonyms down to Kafka's default; read-only unless it
/// can change at run time (`config::dynamic`).
fn broker_config_entries(ctx: &BrokerContext) -> Vec<ConfigEntry> {
    let current = ctx.dynamic.current();
    let layers = ctx.dynamic.layers();
    let defaults = BrokerConfig::default();
    BROKER_KEYS
        .iter()
        .map(|def| {
            let mut synonyms = broker_synonyms(def.name, &current, &layers, true);
            if let Some(default) = defaults.value_of(def.name) {
                synonyms.push((def.name.to_string(), default, SOURCE_DEFAULT));
            }
            let source = synonyms.first().map_or(SOURCE_DEFAULT, |s| s.2);
            ConfigEntry {
                name: def.name.to_string(),
                value: current.value_of(def.name),
                source,
                kind: def.kind as i8,
                read_only: !is_dynamic(def.name),
                documentation: Some(def.doc.trim()),
                synonyms,
            }
        })
        .collect()
}

/// The cluster default resource (an empty broker name): the dynamic
/// defaults set, each DYNAMIC_DEFAULT_BROKER_CONFIG, as Kafka lists them.
fn default_broker_config_entries(ctx: &BrokerContext) -> Vec<ConfigEntry> {
    let current = ctx.dynamic.current();
    let layers = ctx.dynamic.layers();
    let defaults = BrokerConfig::default();
    layers
        .cluster_default
        .iter()
        .map(|(name, value)| {
            let def = broker_key(name);
            let mut synonyms = broker_synonyms(name, &current, &layers, false);
            if let Some(default) = defaults.value_of(name) {
                synonyms.push((name.clone(), default, SOURCE_DEFAULT));
            }
            ConfigEntry {
                name: name.clone(),
                value: Some(value.clone()),
                source: SOURCE_DYNAMIC_DEFAULT_BROKER,
                kind: def.map_or(0, |d| d.kind as i8),
                read_only: false,
                documentation: def.map(|d| d.doc.trim()),
                synonyms,
            }
        })
        .collect()
}

/// Kafka's `ConfigAdminManager` rule: a topic's configs need `operation`
/// on the topic (TOPIC_AUTHORIZATION_FAILED), a broker's on the cluster
/// (CLUSTER_AUTHORIZATION_FAILED); other types are refused later.
fn config_authorization(
    ctx: &BrokerContext,
    session: &Session,
    operation: AclOperation,
    resource_type: i8,
    name: &str,
) -> Option<i16> {
    match resource_type {
        RESOURCE_TOPIC => (!ctx.authorize(session, operation, ResourceType::Topic, name))
            .then(|| ResponseError::TopicAuthorizationFailed.code()),
        RESOURCE_BROKER => (!ctx.authorize_cluster(session, operation))
            .then(|| ResponseError::ClusterAuthorizationFailed.code()),
        _ => None,
    }
}

pub fn describe(
    ctx: &BrokerContext,
    session: &Session,
    request: DescribeConfigsRequest,
    version: i16,
) -> DescribeConfigsResponse {
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            if let Some(code) = config_authorization(
                ctx,
                session,
                AclOperation::DescribeConfigs,
                resource.resource_type,
                &name,
            ) {
                return result.with_error_code(code);
            }
            let entries = match resource.resource_type {
                RESOURCE_TOPIC => match ctx.metadata.topic(&name) {
                    Some(topic) => topic_config_entries(&topic, &ctx.dynamic),
                    None => {
                        return result
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "unknown topic '{name}'"
                            ))))
                    }
                },
                RESOURCE_BROKER if name.is_empty() => default_broker_config_entries(ctx),
                RESOURCE_BROKER if name == ctx.broker_id.to_string() => broker_config_entries(ctx),
                _ => {
                    return result
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "resource type {} '{name}' is not described by this broker",
                            resource.resource_type
                        ))))
                }
            };
            let wanted = resource
                .configuration_keys
                .map(|keys| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>());
            result.with_configs(
                entries
                    .into_iter()
                    .filter(|e| wanted.as_ref().is_none_or(|w| w.contains(&e.name)))
                    .map(|e| {
                        let mut config = DescribeConfigsResourceResult::default()
                            .with_name(StrBytes::from_string(e.name))
                            .with_value(e.value.map(StrBytes::from_string))
                            .with_read_only(e.read_only)
                            .with_is_sensitive(false);
                        if version >= 3 {
                            config = config.with_config_type(e.kind);
                            if request.include_documentation {
                                config = config.with_documentation(
                                    e.documentation.map(StrBytes::from_static_str),
                                );
                            }
                        }
                        if version == 0 {
                            config = config.with_is_default(e.source == SOURCE_DEFAULT);
                        } else {
                            config = config.with_config_source(e.source);
                        }
                        if version >= 1 && request.include_synonyms {
                            config = config.with_synonyms(
                                e.synonyms
                                    .into_iter()
                                    .map(|(name, value, source)| {
                                        DescribeConfigsSynonym::default()
                                            .with_name(StrBytes::from_string(name))
                                            .with_value(Some(StrBytes::from_string(value)))
                                            .with_source(source)
                                    })
                                    .collect(),
                            );
                        }
                        config
                    })
                    .collect(),
            )
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

pub async fn alter(
    ctx: &BrokerContext,
    session: &Session,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        if let Some(code) = config_authorization(
            ctx,
            session,
            AclOperation::AlterConfigs,
            resource.resource_type,
            &name,
        ) {
            responses.push(
                AlterConfigsResourceResponse::default()
                    .with_resource_type(resource.resource_type)
                    .with_resource_name(resource.resource_name.clone())
                    .with_error_code(code),
            );
            continue;
        }
        let response = AlterConfigsResourceResponse::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name.clone());
        if resource.resource_type != RESOURCE_TOPIC && resource.resource_type != RESOURCE_BROKER {
            responses.push(
                response
                    .with_error_code(ResponseError::InvalidRequest.code())
                    .with_error_message(Some(StrBytes::from_string(format!(
                        "configs of resource type {} cannot be altered",
                        resource.resource_type
                    )))),
            );
            continue;
        }
        // AlterConfigs replaces the whole set of overrides.
        let configs: BTreeMap<String, String> = resource
            .configs
            .iter()
            .filter_map(|c| {
                c.value
                    .as_ref()
                    .map(|v| (c.name.to_string(), v.to_string()))
            })
            .collect();
        let outcome = if resource.resource_type == RESOURCE_BROKER {
            match broker_entity(&name) {
                Ok(broker) => send_alter_broker(ctx, broker, configs, request.validate_only).await,
                Err(e) => Err(e),
            }
        } else {
            send_alter(ctx, name, configs, request.validate_only).await
        };
        responses.push(with_outcome(response, outcome));
    }
    AlterConfigsResponse::default().with_responses(responses)
}

pub async fn incremental_alter(
    ctx: &BrokerContext,
    session: &Session,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.to_string();
        if let Some(code) = config_authorization(
            ctx,
            session,
            AclOperation::AlterConfigs,
            resource.resource_type,
            &name,
        ) {
            responses.push(
                IncrementalResourceResponse::default()
                    .with_resource_type(resource.resource_type)
                    .with_resource_name(resource.resource_name.clone())
                    .with_error_code(code),
            );
            continue;
        }
        let response = IncrementalResourceResponse::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name.clone());
        let error = |code: i16, message: String| {
            IncrementalResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone())
                .with_error_code(code)
                .with_error_message(Some(StrBytes::from_string(message)))
        };
        if resource.resource_type == RESOURCE_BROKER {
            let outcome = match broker_entity(&name) {
                Ok(broker) => {
                    let layers = ctx.dynamic.layers();
                    let mut configs = match broker {
                        Some(_) => layers.per_broker,
                        None => layers.cluster_default,
                    };
                    let mut refused = None;
                    for op in &resource.configs {
                        let value = op.value.as_ref().map(|v| v.as_str());
                        let list_default = broker_key(&op.name)
                            .filter(|def| def.kind == ConfigKind::List)
                            .map(|_| BrokerConfig::default().value_of(&op.name).unwrap_or_default());
                        if let Err(e) =
                            apply_incremental_op(&mut configs, op.config_operation, &op.name, value, list_default)
                        {
                            refused = Some(e.to_string());
                            break;
                        }
                    }
                    match refused {
                        Some(reason) => Err(ControllerError::InvalidRequest(reason)),
                        None => send_alter_broker(ctx, broker, configs, request.validate_only).await,
                    }
                }
                Err(e) => Err(e),
            };
            responses.push(match outcome {
                Ok(()) => response,
                Err(e) => error(e.code(), e.to_string()),
            });
            continue;
        }
        if resource.resource_type != RESOURCE_TOPIC {
            responses.push(error(
                ResponseError::InvalidRequest.code(),
                format!("configs of resource type {} cannot be altered", resource.resource_type),
            ));
            continue;
        }
        let Some(topic) = ctx.metadata.topic(&name) else {
            responses.push(error(
                ResponseError::UnknownTopicOrPartition.code(),
                format!("unknown topic '{name}'"),
            ));
            continue;
        };
        let mut configs = topic.configs.clone();
        let mut refused = None;
        for op in &resource.configs {
            let value = op.value.as_ref().map(|v| v.as_str());
            if let Err(e) = apply_incremental(&mut configs, op.config_operation, &op.name, value) {
                refused = Some(e.to_string());
                break;
            }
        }
        if let Some(reason) = refused {
            responses.push(error(ResponseError::InvalidConfig.code(), reason));
            continue;
        }
        let outcome = send_alter(ctx, name, configs, request.validate_only).await;
        responses.push(match outcome {
            Ok(()) => response,
            Err(e) => error(e.code(), e.to_string()),
        });
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

async fn send_alter(
    ctx: &BrokerContext,
    name: String,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ControllerError> {
    ctx.controller
        .send(AlterTopicConfigs {
            name,
            configs,
            validate_only,
        })
        .await
        .unwrap_or(Err(ControllerError::Stopped))
}

/// A broker resource's name: empty for the cluster default, else a broker
/// id.
fn broker_entity(name: &str) -> Result<Option<i32>, ControllerError> {
    if name.is_empty() {
        return Ok(None);
    }
    name.parse::<i32>()
        .map(Some)
        .map_err(|_| ControllerError::InvalidRequest(format!("'{name}' is not a broker id")))
}

async fn send_alter_broker(
    ctx: &BrokerContext,
    broker: Option<i32>,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ControllerError> {
    ctx.controller
        .send(AlterBrokerConfigs {
            broker,
            configs,
            validate_only,
        })
        .await
        .unwrap_or(Err(ControllerError::Stopped))
}

fn with_outcome(
    response: AlterConfigsResourceResponse,
    outcome: Result<(), ControllerError>,
) -> AlterConfigsResourceResponse {
    match outcome {
        Ok(()) => response,
        Err(e) => response
            .with_error_code(e.code())
            .with_error_message(Some(StrBytes::from_string(e.to_string()))),
    }
}
