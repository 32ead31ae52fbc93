//! `ferrolog configs`: describe and alter topic and broker configs, as
//! Kafka's `kafka-configs --bootstrap-server` does (DescribeConfigs,
//! IncrementalAlterConfigs).

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, MetadataResponse,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use super::connection::{refusal, CliError, Cluster};
use super::{print, table, ConnectionArgs};

/// Kafka's ConfigResource types.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;

/// What `ferrolog configs` does.
#[derive(clap::Subcommand, Debug)]
pub enum ConfigsAction {
    /// Every config of a topic or a broker, with its source.
    Describe {
        /// Which resource.
        #[command(flatten)]
        entity: Entity,
        /// Only what was set dynamically (a topic's overrides, a broker's
        /// dynamic configs), as kafka-configs --describe shows.
        #[arg(long)]
        overrides_only: bool,
    },
    /// Set or delete configs of a topic or a broker (dynamic ones).
    Alter {
        /// Which resource.
        #[command(flatten)]
        entity: Entity,
        /// KEY=VALUE to set (repeatable).
        #[arg(long = "add-config", value_name = "KEY=VALUE")]
        add: Vec<String>,
        /// KEY to delete, back to its default (repeatable).
        #[arg(long = "delete-config", value_name = "KEY")]
        delete: Vec<String>,
    },
}

/// `--entity-type topics|brokers --entity-name N`, as kafka-configs names
/// them.
#[derive(clap::Args, Debug)]
pub struct Entity {
    /// `topics` or `brokers`.
    #[arg(long)]
    entity_type: String,
    /// The topic's name or the broker's id.
    #[arg(long)]
    entity_name: String,
}

impl Entity {
    fn resource_type(&self) -> Result<i8, CliError> {
        match self.entity_type.as_str() {
            "topics" | "topic" => Ok(TOPIC),
            "brokers" | "broker" => Ok(BROKER),
            other => Err(CliError::Usage(format!(
                "--entity-type {other}: topics or brokers"
            ))),
        }
    }
}

#[derive(Serialize)]
struct ConfigView {
    name: String,
    value: Option<String>,
    source: &'static str,
    read_only: bool,
    sensitive: bool,
}

/// Kafka's ConfigSource names.
fn source_name(source: i8) -> &'static str {
    match source {
        1 => "DYNAMIC_TOPIC_CONFIG",
        2 => "DYNAMIC_BROKER_CONFIG",
        3 => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4 => "STATIC_BROKER_CONFIG",
        5 => "DEFAULT_CONFIG",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        7 => "CLIENT_METRICS_CONFIG",
        _ => "UNKNOWN",
    }
}

/// Where a resource's config requests go: a broker's to that broker, a
/// topic's to any.
async fn ask<Req, Resp>(
    cluster: &Cluster,
    metadata: &MetadataResponse,
    entity: &Entity,
    api: ApiKey,
    version: i16,
    request: &Req,
) -> Result<Resp, CliError>
where
    Req: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
    Resp: kafka_protocol::protocol::Decodable,
{
    if entity.resource_type()? == BROKER {
        let id: i32 = entity
            .entity_name
            .parse()
            .map_err(|_| CliError::Usage(format!("broker {}: not an id", entity.entity_name)))?;
        cluster
            .ask(BrokerId(id), metadata, api, version, request)
            .await
    } else {
        cluster.ask_any(metadata, api, version, request).await
    }
}

pub async fn run(action: ConfigsAction, args: &ConnectionArgs) -> Result<(), CliError> {
    let (cluster, metadata) = Cluster::connect(args).await?;
    match action {
        ConfigsAction::Describe {
            entity,
            overrides_only,
        } => {
            let request = DescribeConfigsRequest::default().with_resources(vec![
                DescribeConfigsResource::default()
                    .with_resource_type(entity.resource_type()?)
                    .with_resource_name(StrBytes::from_string(entity.entity_name.clone()))
                    .with_configuration_keys(None),
            ]);
            let response: DescribeConfigsResponse = ask(
                &cluster,
                &metadata,
                &entity,
                ApiKey::DescribeConfigs,
                4,
                &request,
            )
            .await?;
            let Some(result) = response.results.into_iter().next() else {
                return Err(CliError::Refused("DescribeConfigs answered nothing".into()));
            };
            if result.error_code != 0 {
                return Err(refusal(
                    &format!("describing {} {}", entity.entity_type, entity.entity_name),
                    result.error_code,
                    result.error_message.as_deref(),
                ));
            }
            let mut configs: Vec<ConfigView> = result
                .configs
                .iter()
                // As kafka-configs --describe: what was set dynamically (a
                // topic's overrides; a broker's, or the brokers' default).
                .filter(|c| !overrides_only || matches!(c.config_source, 1..=3))
                .map(|c| ConfigView {
                    name: c.name.to_string(),
                    value: c.value.as_ref().map(|v| v.to_string()),
                    source: source_name(c.config_source),
                    read_only: c.read_only,
                    sensitive: c.is_sensitive,
                })
                .collect();
            configs.sort_by(|a, b| a.name.cmp(&b.name));
            print(args.json, &configs, || {
                let rows = configs
                    .iter()
                    .map(|c| {
                        vec![
                            c.name.clone(),
                            if c.sensitive {
                                "(sensitive)".to_string()
                            } else {
                                c.value.clone().unwrap_or_else(|| "null".to_string())
                            },
                            c.source.to_string(),
                        ]
                    })
                    .collect();
                table(&["CONFIG", "VALUE", "SOURCE"], rows)
            });
            Ok(())
        }
        ConfigsAction::Alter {
            entity,
            add,
            delete,
        } => {
            if add.is_empty() && delete.is_empty() {
                return Err(CliError::Usage(
                    "--add-config or --delete-config is needed".into(),
                ));
            }
            let mut configs = Vec::new();
            for pair in &add {
                let (key, value) = pair.split_once('=').ok_or_else(|| {
                    CliError::Usage(format!("--add-config {pair}: not KEY=VALUE"))
                })?;
                configs.push(
                    AlterableConfig::default()
                        .with_name(StrBytes::from_string(key.trim().to_string()))
                        .with_config_operation(0)
                        .with_value(Some(StrBytes::from_string(value.trim().to_string()))),
                );
            }
            for key in &delete {
                configs.push(
                    AlterableConfig::default()
                        .with_name(StrBytes::from_string(key.trim().to_string()))
                        .with_config_operation(1)
                        .with_value(None),
                );
            }
            let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
                AlterConfigsResource::default()
                    .with_resource_type(entity.resource_type()?)
                    .with_resource_name(StrBytes::from_string(entity.entity_name.clone()))
                    .with_configs(configs),
            ]);
            let response: IncrementalAlterConfigsResponse = ask(
                &cluster,
                &metadata,
                &entity,
                ApiKey::IncrementalAlterConfigs,
                1,
                &request,
            )
            .await?;
            if let Some(r) = response.responses.iter().find(|r| r.error_code != 0) {
                return Err(refusal(
                    &format!("altering {} {}", entity.entity_type, entity.entity_name),
                    r.error_code,
                    r.error_message.as_deref(),
                ));
            }
            let done = serde_json::json!({
                "entity_type": entity.entity_type,
                "entity_name": entity.entity_name,
                "set": add,
                "deleted": delete,
            });
            print(args.json, &done, || {
                format!(
                    "Completed updating config for {} {}.",
                    entity.entity_type, entity.entity_name
                )
            });
            Ok(())
        }
    }
}
