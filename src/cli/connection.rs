//! A tool's connection to the cluster: `--bootstrap-server` and
//! `--command-config` made into a client that finds the controller.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

use super::ConnectionArgs;
use crate::config::{InterBrokerLogin, Password, SecurityProtocol};
use crate::net::client::BrokerClient;
use crate::net::inter_broker::InterBrokerSecurity;

const IO_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RESPONSE_BYTES: usize = 100 * 1024 * 1024;

/// Why a tool failed, each with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line or `--command-config` (exit 2).
    #[error("{0}")]
    Usage(String),
    /// No broker answered (exit 3).
    #[error("{0}")]
    Unreachable(String),
    /// The cluster refused or failed the operation (exit 1).
    #[error("{0}")]
    Refused(String),
}

impl CliError {
    /// The process's exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Refused(_) => 1,
            CliError::Usage(_) => 2,
            CliError::Unreachable(_) => 3,
        }
    }
}

/// Kafka's name for an error code, and its code, with the broker's
/// message when it sent one.
pub fn refusal(what: &str, code: i16, message: Option<&str>) -> CliError {
    CliError::Refused(format!(
        "{what}: {}{}",
        error_name(code),
        message.map(|m| format!(": {m}")).unwrap_or_default()
    ))
}

/// Kafka's name for an error code, and its code.
pub fn error_name(code: i16) -> String {
    match kafka_protocol::error::ResponseError::try_from_code(code) {
        Some(e) => format!("{e:?} ({code})"),
        None => format!("error {code}"),
    }
}

/// Clients to the cluster's brokers, as one tool run needs them.
pub struct Cluster {
    security: Arc<InterBrokerSecurity>,
}

impl Cluster {
    /// Reads `--command-config` and reaches the first bootstrap broker
    /// that answers Metadata.
    pub async fn connect(args: &ConnectionArgs) -> Result<(Cluster, MetadataResponse), CliError> {
        let Some(bootstrap) = &args.bootstrap_server else {
            return Err(CliError::Usage(
                "--bootstrap-server HOST:PORT is required".into(),
            ));
        };
        let security = security(args)?;
        let mut last = String::new();
        for address in bootstrap.split(',').map(str::trim) {
            if address.is_empty() {
                continue;
            }
            let mut client = client(address, &security);
            match client
                .call::<_, MetadataResponse>(ApiKey::Metadata, 12, &all_topics())
                .await
            {
                Ok(metadata) => return Ok((Cluster { security }, metadata)),
                Err(e) => last = e.to_string(),
            }
        }
        Err(CliError::Unreachable(format!(
            "no broker of --bootstrap-server {bootstrap} answered: {last}"
        )))
    }

    /// Sends `request` to broker `id` of `metadata`.
    pub async fn ask<Req, Resp>(
        &self,
        id: kafka_protocol::messages::BrokerId,
        metadata: &MetadataResponse,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp, CliError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable,
    {
        let broker = metadata
            .brokers
            .iter()
            .find(|b| b.node_id == id)
            .ok_or_else(|| CliError::Refused(format!("broker {} is not in the cluster", id.0)))?;
        let address = format!("{}:{}", broker.host, broker.port);
        client(&address, &self.security)
            .call(api, version, request)
            .await
            .map_err(|e| CliError::Unreachable(format!("broker {} at {address}: {e}", id.0)))
    }

    /// Sends `request` to the first broker of `metadata` that answers.
    pub async fn ask_any<Req, Resp>(
        &self,
        metadata: &MetadataResponse,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp, CliError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable,
    {
        let mut last = CliError::Unreachable("the cluster lists no broker".into());
        for broker in &metadata.brokers {
            match self
                .ask(broker.node_id, metadata, api, version, request)
                .await
            {
                Ok(answer) => return Ok(answer),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sends `request` to the controller `metadata` names (CreateTopics,
    /// DeleteTopics and CreatePartitions must go there in ZooKeeper mode).
    pub async fn ask_controller<Req, Resp>(
        &self,
        metadata: &MetadataResponse,
        api: ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp, CliError>
    where
        Req: Encodable + HeaderVersion,
        Resp: Decodable,
    {
        if metadata.controller_id.0 < 0 {
            return Err(CliError::Refused(
                "the cluster has no controller now".into(),
            ));
        }
        self.ask(metadata.controller_id, metadata, api, version, request)
            .await
    }
}

fn all_topics() -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false)
}

fn client(address: &str, security: &Arc<InterBrokerSecurity>) -> BrokerClient {
    BrokerClient::new(
        address.to_string(),
        "ferrolog-cli".to_string(),
        IO_TIMEOUT,
        MAX_RESPONSE_BYTES,
        security.clone(),
    )
}

/// `--command-config`'s security: PLAINTEXT, or SASL_PLAINTEXT with the
/// JAAS line's username and password.
fn security(args: &ConnectionArgs) -> Result<Arc<InterBrokerSecurity>, CliError> {
    let Some(path) = &args.command_config else {
        return Ok(InterBrokerSecurity::plaintext());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("--command-config {}: {e}", path.display())))?;
    let mut properties = std::collections::BTreeMap::new();
    java_properties::read(text.as_bytes())
        .map(|p| properties.extend(p))
        .map_err(|e| CliError::Usage(format!("--command-config {}: {e}", path.display())))?;
    let protocol = properties
        .get("security.protocol")
        .map(|p| p.trim().to_ascii_uppercase())
        .unwrap_or_else(|| "PLAINTEXT".to_string());
    match protocol.as_str() {
        "PLAINTEXT" => Ok(InterBrokerSecurity::plaintext()),
        "SASL_PLAINTEXT" => {
            let mechanism = properties
                .get("sasl.mechanism")
                .map(|m| m.trim().to_string())
                .unwrap_or_else(|| "GSSAPI".to_string());
            if !matches!(
                mechanism.as_str(),
                "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"
            ) {
                return Err(CliError::Usage(format!(
                    "sasl.mechanism={mechanism}: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
                )));
            }
            let jaas = properties
                .get("sasl.jaas.config")
                .ok_or_else(|| CliError::Usage("SASL needs sasl.jaas.config".into()))?;
            let entry = crate::security::sasl::parse_jaas(jaas)
                .map_err(|e| CliError::Usage(format!("sasl.jaas.config: {e}")))?;
            let (Some(user), Some(password)) =
                (entry.options.get("username"), entry.options.get("password"))
            else {
                return Err(CliError::Usage(
                    "sasl.jaas.config needs username and password".into(),
                ));
            };
            Ok(InterBrokerSecurity::client(
                SecurityProtocol::SaslPlaintext,
                Some(InterBrokerLogin {
                    mechanism,
                    user: user.clone(),
                    password: Password(password.clone()),
                }),
            ))
        }
        other => Err(CliError::Usage(format!(
            "security.protocol={other}: this version of the tools speaks PLAINTEXT and SASL_PLAINTEXT"
        ))),
    }
}

/// One whole batch a Fetch brought: its header and bytes.
pub struct FetchedEntry {
    pub header: crate::storage::batch::EntryHeader,
    pub bytes: bytes::Bytes,
}

impl Cluster {
    /// One Fetch of `topic`'s `partitions` (index, next offset) from
    /// `leader`: each partition's whole batches, in order (a batch cut at
    /// the end of the response is left for the next fetch).
    pub async fn fetch_entries(
        &self,
        metadata: &MetadataResponse,
        topic: &str,
        leader: i32,
        partitions: &[(i32, i64)],
    ) -> Result<Vec<(i32, Vec<FetchedEntry>)>, CliError> {
        use crate::storage::batch::{EntryHeader, HEADER_PEEK_LEN};
        use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
        use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, TopicName};
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(64 * 1024 * 1024)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(kafka_protocol::protocol::StrBytes::from_string(
                    topic.to_string(),
                )))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&(p, offset)| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_fetch_offset(offset)
                                .with_partition_max_bytes(8 * 1024 * 1024)
                        })
                        .collect(),
                )]);
        let fetched: FetchResponse = self
            .ask(BrokerId(leader), metadata, ApiKey::Fetch, 11, &request)
            .await?;
        let mut out = Vec::new();
        for t in fetched.responses {
            for p in t.partitions {
                if p.error_code != 0 {
                    return Err(CliError::Refused(format!(
                        "reading {topic}-{}: {}",
                        p.partition_index,
                        error_name(p.error_code)
                    )));
                }
                let records = p.records.unwrap_or_default();
                let mut entries = Vec::new();
                let mut at = 0;
                while at < records.len() {
                    let rest = &records[at..];
                    let Ok(header) =
                        EntryHeader::parse(&rest[..rest.len().min(HEADER_PEEK_LEN)], at)
                    else {
                        break;
                    };
                    if header.size > rest.len() {
                        break;
                    }
                    entries.push(FetchedEntry {
                        header,
                        bytes: records.slice(at..at + header.size),
                    });
                    at += header.size;
                }
                out.push((p.partition_index, entries));
            }
        }
        Ok(out)
    }
}
