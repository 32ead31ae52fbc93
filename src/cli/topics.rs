//! `ferrolog topics`: list, describe, create, delete, add partitions, as
//! Kafka's `kafka-topics --bootstrap-server` does.

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use super::connection::{error_name, refusal, CliError, Cluster};
use super::{print, table, ConnectionArgs};

const TIMEOUT_MS: i32 = 30_000;

/// What `ferrolog topics` does.
#[derive(clap::Subcommand, Debug)]
pub enum TopicsAction {
    /// Every topic's name (internal ones with --internal).
    List {
        /// Internal topics (`__consumer_offsets`) too.
        #[arg(long)]
        internal: bool,
    },
    /// Partitions, leaders, replicas and ISRs (of one topic, or all).
    Describe {
        /// The topic (default: every topic).
        #[arg(long)]
        topic: Option<String>,
        /// Only partitions whose ISR is smaller than their replica set.
        #[arg(long)]
        under_replicated_partitions: bool,
    },
    /// Create a topic.
    Create {
        /// The topic.
        #[arg(long)]
        topic: String,
        /// Default: the cluster's num.partitions.
        #[arg(long)]
        partitions: Option<i32>,
        /// Default: the cluster's default.replication.factor.
        #[arg(long)]
        replication_factor: Option<i16>,
        /// A topic config, KEY=VALUE (repeatable).
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// Delete a topic.
    Delete {
        /// The topic.
        #[arg(long)]
        topic: String,
    },
    /// Grow a topic to --partitions partitions.
    Alter {
        /// The topic.
        #[arg(long)]
        topic: String,
        /// The partition count it grows to.
        #[arg(long)]
        partitions: i32,
    },
}

#[derive(Serialize)]
struct PartitionView {
    partition: i32,
    leader: i32,
    leader_epoch: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    offline_replicas: Vec<i32>,
}

#[derive(Serialize)]
struct TopicView {
    name: String,
    topic_id: String,
    internal: bool,
    error: Option<String>,
    partitions: Vec<PartitionView>,
}

/// The topics of `metadata`, sorted by name.
fn topics(metadata: &MetadataResponse) -> Vec<TopicView> {
    let mut topics: Vec<TopicView> = metadata
        .topics
        .iter()
        .map(|t| {
            let mut partitions: Vec<PartitionView> = t
                .partitions
                .iter()
                .map(|p| PartitionView {
                    partition: p.partition_index,
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.iter().map(|r| r.0).collect(),
                    isr: p.isr_nodes.iter().map(|r| r.0).collect(),
                    offline_replicas: p.offline_replicas.iter().map(|r| r.0).collect(),
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            TopicView {
                name: t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                // As Kafka prints a Uuid: URL-safe base64, no padding.
                topic_id: {
                    use base64::Engine;
                    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t.topic_id.as_bytes())
                },
                internal: t.is_internal,
                error: (t.error_code != 0).then(|| error_name(t.error_code)),
                partitions,
            }
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    topics
}

fn ids(ids: &[i32]) -> String {
    ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

pub async fn run(action: TopicsAction, args: &ConnectionArgs) -> Result<(), CliError> {
    let (cluster, metadata) = Cluster::connect(args).await?;
    match action {
        TopicsAction::List { internal } => {
            let names: Vec<String> = topics(&metadata)
                .into_iter()
                .filter(|t| internal || !t.internal)
                .map(|t| t.name)
                .collect();
            print(args.json, &names, || names.join("\n"));
            Ok(())
        }
        TopicsAction::Describe {
            topic,
            under_replicated_partitions,
        } => {
            let mut views: Vec<TopicView> = topics(&metadata)
                .into_iter()
                .filter(|t| topic.as_ref().is_none_or(|name| &t.name == name))
                .collect();
            if let Some(name) = &topic {
                if views.is_empty() {
                    return Err(CliError::Refused(format!("topic {name} does not exist")));
                }
            }
            if under_replicated_partitions {
                for view in &mut views {
                    view.partitions.retain(|p| p.isr.len() < p.replicas.len());
                }
                views.retain(|v| !v.partitions.is_empty());
            }
            print(args.json, &views, || {
                let rows = views
                    .iter()
                    .flat_map(|t| {
                        t.partitions.iter().map(move |p| {
                            vec![
                                t.name.clone(),
                                p.partition.to_string(),
                                p.leader.to_string(),
                                p.leader_epoch.to_string(),
                                ids(&p.replicas),
                                ids(&p.isr),
                            ]
                        })
                    })
                    .collect();
                table(
                    &["TOPIC", "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR"],
                    rows,
                )
            });
            Ok(())
        }
        TopicsAction::Create {
            topic,
            partitions,
            replication_factor,
            configs,
        } => {
            let mut creatable = CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.clone())))
                .with_num_partitions(partitions.unwrap_or(-1))
                .with_replication_factor(replication_factor.unwrap_or(-1));
            for config in &configs {
                let (key, value) = config
                    .split_once('=')
                    .ok_or_else(|| CliError::Usage(format!("--config {config}: not KEY=VALUE")))?;
                creatable.configs.push(
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_string(key.trim().to_string()))
                        .with_value(Some(StrBytes::from_string(value.trim().to_string()))),
                );
            }
            let request = CreateTopicsRequest::default()
                .with_topics(vec![creatable])
                .with_timeout_ms(TIMEOUT_MS);
            let response: CreateTopicsResponse = cluster
                .ask_controller(&metadata, ApiKey::CreateTopics, 5, &request)
                .await?;
            if let Some(t) = response.topics.iter().find(|t| t.error_code != 0) {
                let message = t.error_message.as_deref();
                return Err(refusal(&format!("creating {topic}"), t.error_code, message));
            }
            let done = serde_json::json!({ "created": topic });
            print(args.json, &done, || format!("Created topic {topic}."));
            Ok(())
        }
        TopicsAction::Delete { topic } => {
            let request = DeleteTopicsRequest::default()
                .with_topic_names(vec![TopicName(StrBytes::from_string(topic.clone()))])
                .with_timeout_ms(TIMEOUT_MS);
            let response: DeleteTopicsResponse = cluster
                .ask_controller(&metadata, ApiKey::DeleteTopics, 4, &request)
                .await?;
            if let Some(t) = response.responses.iter().find(|t| t.error_code != 0) {
                let message = t.error_message.as_deref();
                return Err(refusal(&format!("deleting {topic}"), t.error_code, message));
            }
            let done = serde_json::json!({ "deleted": topic });
            print(args.json, &done, || format!("Deleted topic {topic}."));
            Ok(())
        }
        TopicsAction::Alter { topic, partitions } => {
            let request = CreatePartitionsRequest::default()
                .with_topics(vec![CreatePartitionsTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
                    .with_count(partitions)
                    .with_assignments(None)])
                .with_timeout_ms(TIMEOUT_MS);
            let response: CreatePartitionsResponse = cluster
                .ask_controller(&metadata, ApiKey::CreatePartitions, 1, &request)
                .await?;
            if let Some(r) = response.results.iter().find(|r| r.error_code != 0) {
                let message = r.error_message.as_deref();
                return Err(refusal(&format!("growing {topic}"), r.error_code, message));
            }
            let done = serde_json::json!({ "topic": topic, "partitions": partitions });
            print(args.json, &done, || {
                format!("Topic {topic} now has {partitions} partitions.")
            });
            Ok(())
        }
    }
}
