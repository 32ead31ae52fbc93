//! Kafka's znode catalogue, typed: one type per znode with its `path`, and
//! `encode`/`decode` in the exact JSON (or plain text) Kafka writes, after
//! `kafka.zk.ZkData`, so a ZooKeeper shared with Kafka's own tools reads the
//! same. This is the only module that knows those layouts; it does no I/O
//! except [`ensure_paths`], which goes through a [`MetadataStore`]. Decoding
//! tolerates fields Kafka versions added later and fails with
//! [`MetadataError::Corrupt`] naming the znode, never with a panic.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::store::{CreateMode, MetadataError, MetadataStore};
use crate::security::acl::{
    AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
};
use crate::topic_partition::TopicPartition;

/// The persistent paths a cluster needs before brokers use it, in Kafka's
/// `ZkData.PersistentZkPaths` order (config entity types last).
pub fn persistent_paths() -> &'static [&'static str] {
    &[
        ConsumerPathZNode::PATH,
        BrokerIdsZNode::PATH,
        TopicsZNode::PATH,
        ConfigEntityChangeNotificationZNode::PATH,
        DeleteTopicsZNode::PATH,
        BrokerSequenceIdZNode::PATH,
        IsrChangeNotificationZNode::PATH,
        ProducerIdBlockZNode::PATH,
        LogDirEventNotificationZNode::PATH,
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
    ]
}

/// Creates every [`persistent_paths`] entry that is missing (with its
/// parents), as Kafka's `createTopLevelPaths` does at start-up. Safe to run
/// concurrently from several brokers.
pub async fn ensure_paths(store: &dyn MetadataStore) -> Result<(), MetadataError> {
    for path in persistent_paths() {
        match store
            .create_recursive(path, Vec::new(), CreateMode::Persistent)
            .await
        {
            Ok(()) | Err(MetadataError::NodeExists(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `/controller`: the ephemeral claim of the active controller.
#[derive(Debug)]
pub struct ControllerZNode;

impl ControllerZNode {
    pub const PATH: &'static str = "/controller";

    pub fn path() -> &'static str {
        Self::PATH
    }

    /// `{"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}`,
    /// as a Kafka 3.9 ZooKeeper-mode controller writes it (version 2 came
    /// with KIP-866's migration; -1: not a KRaft controller). Version 1,
    /// without the epoch, still decodes.
    pub fn encode(broker_id: i32, timestamp_ms: i64) -> Vec<u8> {
        to_json(&ControllerJson {
            version: 2,
            brokerid: broker_id,
            timestamp: timestamp_ms.to_string(),
            kraft_controller_epoch: -1,
        })
    }

    /// The controller's broker id (all Kafka reads from it).
    pub fn decode(bytes: &[u8]) -> Result<i32, MetadataError> {
        let json: ControllerIdJson = parse(Self::PATH, bytes)?;
        Ok(json.brokerid)
    }
}

#[derive(Serialize)]
struct ControllerJson {
    version: i32,
    brokerid: i32,
    timestamp: String,
    #[serde(rename = "kraftControllerEpoch")]
    kraft_controller_epoch: i32,
}

#[derive(Deserialize)]
struct ControllerIdJson {
    brokerid: i32,
}

/// `/controller_epoch`: how many times the controller changed, as a plain
/// decimal; a controller with an older epoch is fenced.
#[derive(Debug)]
pub struct ControllerEpochZNode;

impl ControllerEpochZNode {
    pub const PATH: &'static str = "/controller_epoch";

    pub fn path() -> &'static str {
        Self::PATH
    }

    pub fn encode(epoch: i32) -> Vec<u8> {
        epoch.to_string().into_bytes()
    }

    pub fn decode(bytes: &[u8]) -> Result<i32, MetadataError> {
        parse_text(Self::PATH, bytes)
    }
}

/// `/brokers/ids`: one ephemeral child per live broker.
#[derive(Debug)]
pub struct BrokerIdsZNode;

impl BrokerIdsZNode {
    pub const PATH: &'static str = "/brokers/ids";
}

/// `/brokers/seqid`: Kafka's counter for generated broker ids.
#[derive(Debug)]
pub struct BrokerSequenceIdZNode;

impl BrokerSequenceIdZNode {
    pub const PATH: &'static str = "/brokers/seqid";
}

/// A broker's registration, the content of `/brokers/ids/<id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub id: i32,
    /// The top-level `host`/`port` older clients read: Kafka puts the first
    /// PLAINTEXT endpoint here, or `null`/-1 when there is none (an empty
    /// `host` here).
    pub host: String,
    pub port: i32,
    /// Advertised listeners as `NAME://host:port`.
    pub endpoints: Vec<String>,
    /// `listener_security_protocol_map`: each listener's protocol name;
    /// empty means Kafka's default (listener names are protocol names).
    pub protocols: BTreeMap<String, String>,
    pub rack: Option<String>,
    /// Registration time, milliseconds since the epoch; -1 when a decoded
    /// registration carried none (Kafka itself never reads it).
    pub timestamp_ms: i64,
}

/// The security protocols whose names are also listener names in Kafka's
/// default `listener.security.protocol.map`.
const SECURITY_PROTOCOLS: [&str; 4] = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];

/// `/brokers/ids/<id>`: an ephemeral broker registration.
#[derive(Debug)]
pub struct BrokerIdZNode;

impl BrokerIdZNode {
    /// The registration layout this broker writes (Kafka 2.7+).
    pub const VERSION: i32 = 5;

    pub fn path(id: i32) -> String {
        format!("{}/{id}", BrokerIdsZNode::PATH)
    }

    /// `{"version":5,"host":"h","port":9092,"jmx_port":-1,"timestamp":"...",
    /// "endpoints":["PLAINTEXT://h:9092"],
    /// "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"features":{}}`,
    /// with `"rack":"r"` before `features` when the broker has a rack: the
    /// fields Kafka 3.9 writes (`ZnodeLayoutTest` compares them with a real
    /// Kafka's).
    /// The protocol map is `protocols`, else each endpoint whose listener
    /// name is a security protocol name (Kafka's default map).
    pub fn encode(broker: &BrokerInfo) -> Vec<u8> {
        let listener_security_protocol_map = if broker.protocols.is_empty() {
            broker
                .endpoints
                .iter()
                .filter_map(|endpoint| endpoint.split_once("://").map(|(name, _)| name))
                .filter(|name| SECURITY_PROTOCOLS.contains(name))
                .map(|name| (name.to_owned(), name.to_owned()))
                .collect()
        } else {
            broker.protocols.clone()
        };
        to_json(&BrokerJsonOut {
            version: Self::VERSION,
            // Kafka writes null when the broker has no PLAINTEXT endpoint.
            host: Some(broker.host.as_str()).filter(|host| !host.is_empty()),
            port: broker.port,
            // JMX is not served; -1 is Kafka's value for "none".
            jmx_port: -1,
            timestamp: broker.timestamp_ms.to_string(),
            endpoints: &broker.endpoints,
            listener_security_protocol_map,
            rack: broker.rack.as_deref(),
            features: BTreeMap::new(),
        })
    }

    /// Reads registrations of every Kafka version: version 1 has only
    /// `host`/`port` (a PLAINTEXT endpoint), later ones list `endpoints`.
    pub fn decode(id: i32, bytes: &[u8]) -> Result<BrokerInfo, MetadataError> {
        let path = Self::path(id);
        let json: BrokerJsonIn = parse(&path, bytes)?;
        let corrupt = |reason: String| MetadataError::Corrupt {
            what: path.clone(),
            reason,
        };
        let host = json.host.unwrap_or_default();
        let port = json.port.unwrap_or(-1);
        let endpoints = match json.version {
            v if v < 1 => return Err(corrupt(format!("unsupported registration version {v}"))),
            1 => {
                if host.is_empty() || port < 0 {
                    return Err(corrupt("version 1 needs host and port".to_owned()));
                }
                vec![format!("PLAINTEXT://{}:{port}", bracket_ipv6(&host))]
            }
            _ => json
                .endpoints
                .ok_or_else(|| corrupt("no endpoints".to_owned()))?,
        };
        let timestamp_ms = match json.timestamp {
            None => -1,
            Some(StringOrNumber::Number(ms)) => ms,
            Some(StringOrNumber::String(text)) => text
                .parse()
                .map_err(|_| corrupt(format!("timestamp {text:?} is not a number")))?,
        };
        Ok(BrokerInfo {
            id,
            host,
            port,
            endpoints,
            protocols: json.listener_security_protocol_map.unwrap_or_default(),
            rack: json.rack,
            timestamp_ms,
        })
    }
}

impl BrokerInfo {
    /// Each advertised endpoint with its protocol (an endpoint whose
    /// listener has no known protocol, or that does not parse, is left out).
    pub fn listener_endpoints(&self) -> Vec<crate::cluster::ListenerEndpoint> {
        self.endpoints
            .iter()
            .filter_map(|endpoint| {
                let (name, address) = endpoint.split_once("://")?;
                let (host, port) = address.rsplit_once(':')?;
                let protocol = self.protocols.get(name).map_or(name, String::as_str);
                Some(crate::cluster::ListenerEndpoint {
                    name: name.to_owned(),
                    security_protocol: crate::config::SecurityProtocol::parse(protocol)?,
                    host: host.trim_start_matches('[').trim_end_matches(']').to_owned(),
                    port: port.parse().ok()?,
                })
            })
            .collect()
    }
}

fn bracket_ipv6(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

#[derive(Serialize)]
struct BrokerJsonOut<'a> {
    version: i32,
    host: Option<&'a str>,
    port: i32,
    jmx_port: i32,
    timestamp: String,
    endpoints: &'a [String],
    listener_security_protocol_map: BTreeMap<String, String>,
    /// Kafka writes `rack` only when the broker has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    rack: Option<&'a str>,
    /// Version 5's supported features (KIP-584): none in ZooKeeper mode,
    /// `{}` as Kafka 3.9 writes it.
    features: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct BrokerJsonIn {
    version: i32,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    port: Option<i32>,
    #[serde(default)]
    timestamp: Option<StringOrNumber>,
    #[serde(default)]
    endpoints: Option<Vec<String>>,
    #[serde(default)]
    listener_security_protocol_map: Option<BTreeMap<String, String>>,
    #[serde(default)]
    rack: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StringOrNumber {
    Number(i64),
    String(String),
}

/// `/brokers/topics`: one child per topic.
#[derive(Debug)]
pub struct TopicsZNode;

impl TopicsZNode {
    pub const PATH: &'static str = "/brokers/topics";

    pub fn path() -> &'static str {
        Self::PATH
    }
}

/// `/brokers/topics/<topic>`: the replica assignment, partition -> broker
/// ids with the preferred leader first.
#[derive(Debug)]
pub struct TopicZNode;

impl TopicZNode {
    /// The layout written (Kafka 2.8+: with the topic id).
    pub const VERSION: i32 = 3;

    pub fn path(topic: &str) -> String {
        format!("{}/{topic}", TopicsZNode::PATH)
    }

    /// `{"version":3,"topic_id":"...","partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}`.
    pub fn encode(assignment: &BTreeMap<i32, Vec<i32>>, topic_id: [u8; 16]) -> Vec<u8> {
        to_json(&TopicJsonOut {
            version: Self::VERSION,
            topic_id: base64_url_no_pad(&topic_id),
            partitions: assignment,
            // No reassignment is ever in progress here: written empty, as
            // Kafka does when there is none.
            adding_replicas: BTreeMap::new(),
            removing_replicas: BTreeMap::new(),
        })
    }

    /// The `partitions` map of versions 1 to 3 and the topic id, which
    /// versions before 3 lack (reassignment state is not kept).
    pub fn decode(topic: &str, bytes: &[u8]) -> Result<TopicAssignment, MetadataError> {
        let path = Self::path(topic);
        let json: TopicJsonIn = parse(&path, bytes)?;
        let corrupt = |reason: String| MetadataError::Corrupt {
            what: path.clone(),
            reason,
        };
        if !(1..=3).contains(&json.version) {
            return Err(corrupt(format!(
                "unsupported assignment version {}",
                json.version
            )));
        }
        if let Some(partition) = json.partitions.keys().find(|&&p| p < 0) {
            return Err(corrupt(format!("negative partition id {partition}")));
        }
        let topic_id = match json.topic_id {
            None => None,
            Some(text) => Some(
                uuid_from_base64(&text)
                    .ok_or_else(|| corrupt(format!("topic_id {text:?} is not a Kafka Uuid")))?,
            ),
        };
        Ok(TopicAssignment {
            partitions: json.partitions,
            topic_id,
        })
    }
}

/// What `/brokers/topics/<topic>` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicAssignment {
    /// Partition -> replicas, the preferred leader first.
    pub partitions: BTreeMap<i32, Vec<i32>>,
    /// `None` in znodes written before Kafka 2.8.
    pub topic_id: Option<[u8; 16]>,
}

#[derive(Serialize)]
struct TopicJsonOut<'a> {
    version: i32,
    topic_id: String,
    partitions: &'a BTreeMap<i32, Vec<i32>>,
    adding_replicas: BTreeMap<i32, Vec<i32>>,
    removing_replicas: BTreeMap<i32, Vec<i32>>,
}

#[derive(Deserialize)]
struct TopicJsonIn {
    version: i32,
    #[serde(default)]
    topic_id: Option<String>,
    #[serde(default)]
    partitions: BTreeMap<i32, Vec<i32>>,
}

/// `/brokers/topics/<topic>/partitions`.
#[derive(Debug)]
pub struct TopicPartitionsZNode;

impl TopicPartitionsZNode {
    pub fn path(topic: &str) -> String {
        format!("{}/partitions", TopicZNode::path(topic))
    }
}

/// `/brokers/topics/<topic>/partitions/<partition>`.
#[derive(Debug)]
pub struct TopicPartitionZNode;

impl TopicPartitionZNode {
    pub fn path(tp: &TopicPartition) -> String {
        format!("{}/{}", TopicPartitionsZNode::path(&tp.topic), tp.partition)
    }
}

/// A partition's leader, ISR and the epochs that fence stale writers: the
/// content of `.../partitions/<n>/state` (Kafka's
/// `LeaderIsrAndControllerEpoch`; the znode's `Stat::version` is its
/// `zkVersion`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderAndIsr {
    /// Broker id of the leader, [`LeaderAndIsr::NO_LEADER`] when offline.
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
    /// Epoch of the controller that wrote this state.
    pub controller_epoch: i32,
}

impl LeaderAndIsr {
    /// Kafka's `LeaderAndIsr.NoLeader`.
    pub const NO_LEADER: i32 = -1;
}

/// `/brokers/topics/<topic>/partitions/<partition>/state`.
#[derive(Debug)]
pub struct TopicPartitionStateZNode;

impl TopicPartitionStateZNode {
    pub fn path(tp: &TopicPartition) -> String {
        format!("{}/state", TopicPartitionZNode::path(tp))
    }

    /// `{"controller_epoch":9,"leader":5,"version":1,"leader_epoch":26,"isr":[5]}`,
    /// keys in the order Kafka's brokers write them.
    pub fn encode(state: &LeaderAndIsr) -> Vec<u8> {
        to_json(&PartitionStateJsonOut {
            controller_epoch: state.controller_epoch,
            leader: state.leader,
            version: 1,
            leader_epoch: state.leader_epoch,
            isr: &state.isr,
        })
    }

    /// Ignores fields added by later Kafka versions
    /// (`leader_recovery_state`).
    pub fn decode(tp: &TopicPartition, bytes: &[u8]) -> Result<LeaderAndIsr, MetadataError> {
        let json: PartitionStateJsonIn = parse(&Self::path(tp), bytes)?;
        Ok(LeaderAndIsr {
            leader: json.leader,
            leader_epoch: json.leader_epoch,
            isr: json.isr,
            controller_epoch: json.controller_epoch,
        })
    }
}

#[derive(Serialize)]
struct PartitionStateJsonOut<'a> {
    controller_epoch: i32,
    leader: i32,
    version: i32,
    leader_epoch: i32,
    isr: &'a [i32],
}

#[derive(Deserialize)]
struct PartitionStateJsonIn {
    controller_epoch: i32,
    leader: i32,
    leader_epoch: i32,
    isr: Vec<i32>,
}

/// The kinds of entity with dynamic config under `/config` (Kafka's
/// `ConfigType`). Topics and brokers (KIP-226) carry dynamic configs;
/// clients and users name Kafka's layout for what comes with quotas and
/// SCRAM credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Topic,
    Client,
    User,
    Broker,
    /// `/config/ips/<ip>`: connection-rate quotas (KIP-612).
    Ip,
}

impl ConfigType {
    /// The znode name under `/config`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigType::Topic => "topics",
            ConfigType::Client => "clients",
            ConfigType::User => "users",
            ConfigType::Broker => "brokers",
            ConfigType::Ip => "ips",
        }
    }
}

/// `/config/changes`: sequential change notifications.
#[derive(Debug)]
pub struct ConfigEntityChangeNotificationZNode;

impl ConfigEntityChangeNotificationZNode {
    pub const PATH: &'static str = "/config/changes";
}

/// `/config/changes/config_change_<seq>`: "entity X's config changed",
/// `{"version":2,"entity_path":"topics/<topic>"}`, as Kafka 2.x+ writes it.
#[derive(Debug)]
pub struct ConfigChangeNotification;

impl ConfigChangeNotification {
    pub const PREFIX: &'static str = "/config/changes/config_change_";

    pub fn encode_topic(topic: &str) -> Vec<u8> {
        Self::encode(ConfigType::Topic, topic)
    }

    /// `{"version":2,"entity_path":"<type>/<name>"}`, e.g. `brokers/<default>`.
    pub fn encode(config_type: ConfigType, name: &str) -> Vec<u8> {
        to_json(&ConfigChangeJson {
            version: 2,
            entity_path: format!("{}/{name}", config_type.as_str()),
        })
    }

    /// The entity a notification names: its type and name; `None` for a
    /// type ferrolog does not follow.
    pub fn decode(path: &str, bytes: &[u8]) -> Result<Option<(ConfigType, String)>, MetadataError> {
        let json: ConfigChangeJson = parse(path, bytes)?;
        let Some((kind, name)) = json.entity_path.split_once('/') else {
            return Ok(None);
        };
        let kind = match kind {
            "topics" => ConfigType::Topic,
            "brokers" => ConfigType::Broker,
            "clients" => ConfigType::Client,
            "users" => ConfigType::User,
            "ips" => ConfigType::Ip,
            _ => return Ok(None),
        };
        Ok(Some((kind, name.to_owned())))
    }

    /// The sequence number of a notification's name or path.
    pub fn sequence(name: &str) -> Option<i64> {
        name.rsplit("config_change_").next()?.parse().ok()
    }
}

#[derive(Serialize, Deserialize)]
struct ConfigChangeJson {
    version: i32,
    entity_path: String,
}

/// `/config/<type>/<name>`: an entity's config overrides, e.g.
/// `/config/topics/<topic>` or `/config/brokers/<id>`.
#[derive(Debug)]
pub struct ConfigEntityZNode;

impl ConfigEntityZNode {
    pub fn path(config_type: ConfigType, name: &str) -> String {
        format!("/config/{}/{name}", config_type.as_str())
    }

    /// `{"version":1,"config":{"retention.ms":"1000"}}`.
    pub fn encode(config: &BTreeMap<String, String>) -> Vec<u8> {
        to_json(&ConfigJsonOut { version: 1, config })
    }

    /// A znode without `config` means no overrides, as in Kafka; so does
    /// an empty one (a parent created on the way to
    /// `/config/users/<user>/clients/<client-id>`).
    pub fn decode(
        config_type: ConfigType,
        name: &str,
        bytes: &[u8],
    ) -> Result<BTreeMap<String, String>, MetadataError> {
        if bytes.is_empty() {
            return Ok(BTreeMap::new());
        }
        let json: ConfigJsonIn = parse(&Self::path(config_type, name), bytes)?;
        Ok(json.config)
    }
}

#[derive(Serialize)]
struct ConfigJsonOut<'a> {
    version: i32,
    config: &'a BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct ConfigJsonIn {
    #[serde(default)]
    config: BTreeMap<String, String>,
}

/// `/kafka-acl/<Type>/<name>` (literal patterns) and
/// `/kafka-acl-extended/prefixed/<Type>/<name>`: one resource pattern's
/// ACL, `{"version":1,"acls":[{"principal":"User:alice",
/// "permissionType":"Allow","operation":"Write","host":"*"}]}`, as Kafka's
/// `ResourceZNode` and `AclEntry` write it.
#[derive(Debug)]
pub struct AclZNode;

impl AclZNode {
    pub const LITERAL_ROOT: &'static str = "/kafka-acl";
    pub const EXTENDED_ROOT: &'static str = "/kafka-acl-extended";
    /// The roots `AclAuthorizer` creates at start-up.
    pub const ROOTS: [&'static str; 4] = [
        Self::LITERAL_ROOT,
        AclChangeNotification::LITERAL_PATH,
        Self::EXTENDED_ROOT,
        AclChangeNotification::EXTENDED_PATH,
    ];

    /// The root holding one pattern type's resources (`None`: a type
    /// that is never stored).
    pub fn root(pattern_type: PatternType) -> Option<String> {
        match pattern_type {
            PatternType::Literal => Some(Self::LITERAL_ROOT.to_string()),
            PatternType::Prefixed => Some(format!("{}/prefixed", Self::EXTENDED_ROOT)),
            _ => None,
        }
    }

    /// `None` for a pattern type that is never stored.
    pub fn path(pattern: &ResourcePattern) -> Option<String> {
        Some(format!(
            "{}/{}/{}",
            Self::root(pattern.pattern_type)?,
            pattern.resource_type.name(),
            pattern.name
        ))
    }

    pub fn encode(entries: &BTreeSet<AccessControlEntry>) -> Vec<u8> {
        let acls = entries
            .iter()
            .map(|e| AclEntryJson {
                principal: e.principal.clone(),
                permission_type: e.permission.name().to_string(),
                operation: e.operation.name().to_string(),
                host: e.host.clone(),
            })
            .collect();
        to_json(&AclsJson { version: 1, acls })
    }

    /// Empty data means no entries (Kafka's `AclEntry.fromBytes`); an
    /// entry naming an operation or permission Kafka does not know is
    /// corrupt.
    pub fn decode(
        pattern: &ResourcePattern,
        bytes: &[u8],
    ) -> Result<BTreeSet<AccessControlEntry>, MetadataError> {
        if bytes.is_empty() {
            return Ok(BTreeSet::new());
        }
        let path = Self::path(pattern).unwrap_or_default();
        let json: AclsJson = parse(&path, bytes)?;
        let corrupt = |reason: String| MetadataError::Corrupt {
            what: format!("znode {path}"),
            reason,
        };
        json.acls
            .into_iter()
            .map(|e| {
                let operation = AclOperation::from_name(&e.operation)
                    .ok_or_else(|| corrupt(format!("unknown operation {}", e.operation)))?;
                let permission = AclPermissionType::from_name(&e.permission_type).ok_or_else(
                    || corrupt(format!("unknown permission type {}", e.permission_type)),
                )?;
                Ok(AccessControlEntry {
                    principal: e.principal,
                    host: e.host,
                    operation,
                    permission,
                })
            })
            .collect()
    }
}

#[derive(Serialize, Deserialize)]
struct AclsJson {
    version: i32,
    #[serde(default)]
    acls: Vec<AclEntryJson>,
}

#[derive(Serialize, Deserialize)]
struct AclEntryJson {
    principal: String,
    #[serde(rename = "permissionType")]
    permission_type: String,
    operation: String,
    host: String,
}

/// `/kafka-acl-changes/acl_changes_<seq>` ("TOPIC:orders", a literal
/// pattern) and `/kafka-acl-extended-changes/acl_changes_<seq>`
/// (`{"version":1,"resourceType":"TOPIC","name":"orders-",
/// "patternType":"PREFIXED"}`): "this pattern's ACL changed", which every
/// broker's authorizer follows.
#[derive(Debug)]
pub struct AclChangeNotification;

impl AclChangeNotification {
    pub const LITERAL_PATH: &'static str = "/kafka-acl-changes";
    pub const EXTENDED_PATH: &'static str = "/kafka-acl-extended-changes";
    /// `ZkAclChangeStore.SequenceNumberPrefix`.
    pub const PREFIX: &'static str = "acl_changes_";

    /// The change path and data announcing a pattern's change.
    pub fn encode(pattern: &ResourcePattern) -> (String, Vec<u8>) {
        let upper = |name: &str| {
            // Java's enum names: TRANSACTIONAL_ID.
            let mut out = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(c.to_ascii_uppercase());
            }
            out
        };
        match pattern.pattern_type {
            PatternType::Literal => (
                format!("{}/{}", Self::LITERAL_PATH, Self::PREFIX),
                format!("{}:{}", upper(pattern.resource_type.name()), pattern.name).into_bytes(),
            ),
            _ => (
                format!("{}/{}", Self::EXTENDED_PATH, Self::PREFIX),
                to_json(&ExtendedAclChangeJson {
                    version: 1,
                    resource_type: upper(pattern.resource_type.name()),
                    name: pattern.name.clone(),
                    pattern_type: upper(pattern.pattern_type.name()),
                }),
            ),
        }
    }

    /// The pattern a notification under `change_path` names.
    pub fn decode(change_path: &str, bytes: &[u8]) -> Result<ResourcePattern, MetadataError> {
        let corrupt = |reason: String| MetadataError::Corrupt {
            what: format!("an ACL change notification under {change_path}"),
            reason,
        };
        if change_path == Self::LITERAL_PATH {
            let text = std::str::from_utf8(bytes).map_err(|e| corrupt(e.to_string()))?;
            let (kind, name) = text
                .split_once(':')
                .ok_or_else(|| corrupt(format!("{text:?} is not ResourceType:ResourceName")))?;
            let resource_type = ResourceType::from_name(kind)
                .filter(|t| t.is_specific())
                .ok_or_else(|| corrupt(format!("unknown resource type {kind}")))?;
            return Ok(ResourcePattern::literal(resource_type, name));
        }
        let json: ExtendedAclChangeJson = parse(change_path, bytes)?;
        if json.version > 1 {
            return Err(corrupt(format!("unsupported version {}", json.version)));
        }
        let resource_type = ResourceType::from_name(&json.resource_type)
            .filter(|t| t.is_specific())
            .ok_or_else(|| corrupt(format!("unknown resource type {}", json.resource_type)))?;
        let pattern_type = PatternType::from_name(&json.pattern_type)
            .filter(|p| matches!(p, PatternType::Literal | PatternType::Prefixed))
            .ok_or_else(|| corrupt(format!("unknown pattern type {}", json.pattern_type)))?;
        Ok(ResourcePattern {
            resource_type,
            pattern_type,
            name: json.name,
        })
    }

    /// The sequence number of a notification's name.
    pub fn sequence(name: &str) -> Option<i64> {
        name.strip_prefix(Self::PREFIX)?.parse().ok()
    }
}

#[derive(Serialize, Deserialize)]
struct ExtendedAclChangeJson {
    version: i32,
    #[serde(rename = "resourceType")]
    resource_type: String,
    name: String,
    #[serde(rename = "patternType")]
    pattern_type: String,
}

/// `/admin/delete_topics`: topics queued for deletion, one child each.
#[derive(Debug)]
pub struct DeleteTopicsZNode;

impl DeleteTopicsZNode {
    pub const PATH: &'static str = "/admin/delete_topics";

    pub fn path() -> &'static str {
        Self::PATH
    }
}

/// `/admin/delete_topics/<topic>`: a deletion request; its data is unused.
#[derive(Debug)]
pub struct DeleteTopicsTopicZNode;

impl DeleteTopicsTopicZNode {
    pub fn path(topic: &str) -> String {
        format!("{}/{topic}", DeleteTopicsZNode::PATH)
    }
}

/// `/isr_change_notification`.
#[derive(Debug)]
pub struct IsrChangeNotificationZNode;

impl IsrChangeNotificationZNode {
    pub const PATH: &'static str = "/isr_change_notification";
    /// Prefix of the sequential notification znodes.
    pub const PREFIX: &'static str = "/isr_change_notification/isr_change_";

    pub fn path(name: &str) -> String {
        format!("{}/{name}", Self::PATH)
    }

    /// `{"version":1,"partitions":[{"topic":"t","partition":0}]}`, what a
    /// leader leaves after changing ISRs.
    pub fn encode(partitions: &[TopicPartition]) -> Vec<u8> {
        to_json(&IsrChangeJson {
            version: 1,
            partitions: partitions
                .iter()
                .map(|tp| IsrChangePartition {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                })
                .collect(),
        })
    }

    pub fn decode(name: &str, bytes: &[u8]) -> Result<Vec<TopicPartition>, MetadataError> {
        let json: IsrChangeJson = parse(&Self::path(name), bytes)?;
        Ok(json
            .partitions
            .into_iter()
            .map(|p| TopicPartition::new(p.topic, p.partition))
            .collect())
    }
}

#[derive(Serialize, Deserialize)]
struct IsrChangeJson {
    version: i32,
    partitions: Vec<IsrChangePartition>,
}

#[derive(Serialize, Deserialize)]
struct IsrChangePartition {
    topic: String,
    partition: i32,
}

/// `/latest_producer_id_block`.
#[derive(Debug)]
pub struct ProducerIdBlockZNode;

impl ProducerIdBlockZNode {
    pub const PATH: &'static str = "/latest_producer_id_block";

    /// `{"version":1,"broker":0,"block_start":"0","block_end":"999"}`: the
    /// last block of producer ids claimed, by whom (Kafka writes the ids
    /// as strings).
    pub fn encode(broker_id: i32, block_start: i64, block_end: i64) -> Vec<u8> {
        to_json(&ProducerIdBlockJson {
            version: 1,
            broker: broker_id,
            block_start: block_start.to_string(),
            block_end: block_end.to_string(),
        })
    }

    /// The claimed block's last id; `None` for the empty znode made at
    /// start-up (no block claimed yet).
    pub fn decode_block_end(bytes: &[u8]) -> Result<Option<i64>, MetadataError> {
        if bytes.is_empty() {
            return Ok(None);
        }
        let json: ProducerIdBlockJson = parse(Self::PATH, bytes)?;
        parse_text(Self::PATH, json.block_end.as_bytes()).map(Some)
    }
}

#[derive(Serialize, Deserialize)]
struct ProducerIdBlockJson {
    version: i32,
    broker: i32,
    block_start: String,
    block_end: String,
}

/// `/log_dir_event_notification`.
#[derive(Debug)]
pub struct LogDirEventNotificationZNode;

impl LogDirEventNotificationZNode {
    pub const PATH: &'static str = "/log_dir_event_notification";
    /// Prefix of the sequential notification znodes.
    pub const PREFIX: &'static str = "/log_dir_event_notification/log_dir_event_";
    /// Kafka's `LogDirEventNotificationHandler.LogDirFailureEvent`.
    pub const LOG_DIR_FAILURE: i32 = 1;

    pub fn path(name: &str) -> String {
        format!("{}/{name}", Self::PATH)
    }

    /// `{"version":1,"broker":<id>,"event":1}`: what a broker leaves when
    /// a log dir (here: a partition's log) fails.
    pub fn encode(broker: i32) -> Vec<u8> {
        to_json(&LogDirEventJson {
            version: 1,
            broker,
            event: Self::LOG_DIR_FAILURE,
        })
    }

    /// The broker a notification names.
    pub fn decode(name: &str, bytes: &[u8]) -> Result<i32, MetadataError> {
        let json: LogDirEventJson = parse(&Self::path(name), bytes)?;
        Ok(json.broker)
    }
}

#[derive(Serialize, Deserialize)]
struct LogDirEventJson {
    version: i32,
    broker: i32,
    event: i32,
}

/// `/consumers`: the legacy (ZooKeeper-based) consumer registry.
#[derive(Debug)]
pub struct ConsumerPathZNode;

impl ConsumerPathZNode {
    pub const PATH: &'static str = "/consumers";
}

/// `/consumers/<group>/offsets/<topic>/<partition>`: a legacy consumer's
/// committed offset as plain decimal text.
#[derive(Debug)]
pub struct ConsumerOffset;

impl ConsumerOffset {
    pub fn path(group: &str, topic: &str, partition: i32) -> String {
        format!(
            "{}/{group}/offsets/{topic}/{partition}",
            ConsumerPathZNode::PATH
        )
    }

    pub fn encode(offset: i64) -> Vec<u8> {
        offset.to_string().into_bytes()
    }

    pub fn decode(
        group: &str,
        topic: &str,
        partition: i32,
        bytes: &[u8],
    ) -> Result<i64, MetadataError> {
        parse_text(&Self::path(group, topic, partition), bytes)
    }
}

/// `/cluster/id`: the cluster id every broker reports in Metadata.
#[derive(Debug)]
pub struct ClusterIdZNode;

impl ClusterIdZNode {
    pub const PATH: &'static str = "/cluster/id";

    pub fn path() -> &'static str {
        Self::PATH
    }

    /// `{"version":"1","id":"<id>"}` (Kafka writes the version as a string
    /// here).
    pub fn encode(cluster_id: &str) -> Vec<u8> {
        to_json(&ClusterIdJsonOut {
            version: "1",
            id: cluster_id,
        })
    }

    pub fn decode(bytes: &[u8]) -> Result<String, MetadataError> {
        let json: ClusterIdJsonIn = parse(Self::PATH, bytes)?;
        Ok(json.id)
    }

    /// Kafka's `createOrGetClusterId`: writes `candidate` unless another
    /// broker got there first (brokers starting together on a fresh
    /// ZooKeeper race here), and answers the id that was kept.
    pub async fn create_or_get(
        store: &dyn MetadataStore,
        candidate: &str,
    ) -> Result<String, MetadataError> {
        match store
            .create_recursive(
                Self::PATH,
                Self::encode(candidate),
                CreateMode::Persistent,
            )
            .await
        {
            Ok(()) => Ok(candidate.to_string()),
            Err(MetadataError::NodeExists(_)) => match store.get(Self::PATH).await? {
                Some((bytes, _)) => Self::decode(&bytes),
                // Deleted between the two calls: only an operator does that.
                None => Err(MetadataError::NoNode(Self::PATH.to_string())),
            },
            Err(e) => Err(e),
        }
    }

    /// A cluster id in Kafka's form: the 16 bytes of a UUID in URL-safe
    /// base64 without padding, 22 characters. The caller supplies the
    /// randomness (this module has no random source).
    pub fn id_from_uuid(uuid: [u8; 16]) -> String {
        base64_url_no_pad(&uuid)
    }
}

#[derive(Serialize)]
struct ClusterIdJsonOut<'a> {
    version: &'a str,
    id: &'a str,
}

#[derive(Deserialize)]
struct ClusterIdJsonIn {
    id: String,
}

fn base64_url_no_pad(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A Kafka `Uuid` as it prints: 16 bytes in URL-safe base64, no padding.
fn uuid_from_base64(text: &str) -> Option<[u8; 16]> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()?
        .try_into()
        .ok()
}

/// serde_json fails only on maps with non-string keys or a failing writer;
/// every layout here has string or integer keys and writes into a `Vec`, so
/// the error arm cannot be reached. It still logs and yields bytes that
/// decode as `Corrupt` rather than panicking on a broker.
fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|e| {
        log::error!("encoding a znode failed: {e}");
        Vec::new()
    })
}

fn parse<T: DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T, MetadataError> {
    serde_json::from_slice(bytes).map_err(|e| MetadataError::Corrupt {
        what: format!("znode {path}"),
        reason: e.to_string(),
    })
}

/// Kafka's plain-text numbers (`"1"`), parsed without trimming, as Java's
/// `toInt`/`toLong` do.
fn parse_text<T: std::str::FromStr>(path: &str, bytes: &[u8]) -> Result<T, MetadataError> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| MetadataError::Corrupt {
            what: format!("znode {path}"),
            reason: format!(
                "{:?} is not a decimal number",
                String::from_utf8_lossy(bytes)
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::embedded::EmbeddedStore;

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).expect("utf8")
    }

    /// The broker registration is written in the v5 layout with keys in the
    /// documented order, and reads back to the same BrokerInfo.
    #[test]
    fn broker_registration_layout_and_round_trip() {
        let broker = BrokerInfo {
            id: 1,
            host: "h".to_owned(),
            port: 9092,
            endpoints: vec!["PLAINTEXT://h:9092".to_owned()],
            protocols: BTreeMap::from([("PLAINTEXT".to_owned(), "PLAINTEXT".to_owned())]),
            rack: None,
            timestamp_ms: 1_700_000_000_000,
        };
        let bytes = BrokerIdZNode::encode(&broker);
        assert_eq!(
            text(bytes.clone()),
            r#"{"version":5,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1700000000000","endpoints":["PLAINTEXT://h:9092"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"features":{}}"#
        );
        assert_eq!(BrokerIdZNode::decode(1, &bytes).expect("decode"), broker);
        assert_eq!(BrokerIdZNode::path(1), "/brokers/ids/1");
    }

    /// A version 1 registration, as quoted in the seeds from a 2015 cluster,
    /// decodes to a single PLAINTEXT endpoint; Kafka 3's layout with
    /// features and no rack decodes too.
    #[test]
    fn old_and_new_broker_registrations_decode() {
        let v1 = br#"{"jmx_port":-1,"timestamp":"1435833841290","host":"kafka02-log.i.nease.net","version":1,"port":9092}"#;
        let broker = BrokerIdZNode::decode(2, v1).expect("v1");
        assert_eq!(
            broker.endpoints,
            ["PLAINTEXT://kafka02-log.i.nease.net:9092"]
        );
        assert_eq!(broker.timestamp_ms, 1_435_833_841_290);
        let v5 = br#"{"features":{},"listener_security_protocol_map":{"CLIENT":"SSL"},"endpoints":["CLIENT://h:9093"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"1"}"#;
        let broker = BrokerIdZNode::decode(3, v5).expect("v5");
        assert_eq!((broker.host.as_str(), broker.port), ("", -1));
        assert_eq!(broker.endpoints, ["CLIENT://h:9093"]);
        let rewritten = text(BrokerIdZNode::encode(&broker));
        assert!(
            rewritten.contains(r#""host":null,"port":-1"#),
            "{rewritten}"
        );
        assert!(matches!(
            BrokerIdZNode::decode(4, br#"{"version":2,"host":"h","port":1}"#),
            Err(MetadataError::Corrupt { what, .. }) if what.contains("/brokers/ids/4")
        ));
    }

    /// Topic assignments are written as version 3 with the topic id (as
    /// Kafka 2.8+ writes them) and read from versions 1 to 3, with
    /// partition keys as JSON strings.
    #[test]
    fn topic_assignment_layout() {
        let assignment = BTreeMap::from([(0, vec![1, 2]), (1, vec![2, 1])]);
        // Kafka's Uuid "vNYJpHJhRQKvAD3u5vlnGw" (from a Kafka 3.x cluster).
        let id = uuid_from_base64("vNYJpHJhRQKvAD3u5vlnGw").expect("a Kafka Uuid");
        let bytes = TopicZNode::encode(&assignment, id);
        assert_eq!(
            text(bytes.clone()),
            r#"{"version":3,"topic_id":"vNYJpHJhRQKvAD3u5vlnGw","partitions":{"0":[1,2],"1":[2,1]},"adding_replicas":{},"removing_replicas":{}}"#
        );
        let decoded = TopicZNode::decode("t", &bytes).expect("v3");
        assert_eq!(
            (decoded.partitions, decoded.topic_id),
            (assignment.clone(), Some(id))
        );
        let v1 = br#"{"version":1,"partitions":{"1":[2,1],"0":[1,2]}}"#;
        let decoded = TopicZNode::decode("t", v1).expect("v1");
        assert_eq!(
            (decoded.partitions, decoded.topic_id),
            (assignment.clone(), None)
        );
        let v2 = br#"{"version":2,"partitions":{"0":[1,2],"1":[2,1]},"adding_replicas":{},"removing_replicas":{}}"#;
        assert_eq!(
            TopicZNode::decode("t", v2).expect("v2").partitions,
            assignment
        );
        for bad in [
            &br#"{"version":3,"topic_id":"short","partitions":{}}"#[..],
            &br#"{"version":9,"partitions":{}}"#[..],
            br#"{"version":1,"partitions":{"x":[1]}}"#,
            br#"{"version":1,"partitions":{"-1":[1]}}"#,
        ] {
            assert!(matches!(
                TopicZNode::decode("t", bad),
                Err(MetadataError::Corrupt { .. })
            ));
        }
        assert_eq!(TopicZNode::path("t"), "/brokers/topics/t");
    }

    /// The partition state paths nest as Kafka's do.
    #[test]
    fn partition_paths() {
        let tp = TopicPartition::new("t", 3);
        assert_eq!(
            TopicPartitionsZNode::path("t"),
            "/brokers/topics/t/partitions"
        );
        assert_eq!(
            TopicPartitionZNode::path(&tp),
            "/brokers/topics/t/partitions/3"
        );
        assert_eq!(
            TopicPartitionStateZNode::path(&tp),
            "/brokers/topics/t/partitions/3/state"
        );
    }

    /// Config, controller, epoch, offsets and cluster id use Kafka's layouts,
    /// including the plain-text and string-version quirks.
    #[test]
    fn log_dir_event_notification_layout() {
        let bytes = LogDirEventNotificationZNode::encode(3);
        assert_eq!(text(bytes.clone()), r#"{"version":1,"broker":3,"event":1}"#);
        assert_eq!(
            LogDirEventNotificationZNode::decode("log_dir_event_0000000001", &bytes)
                .expect("event"),
            3
        );
        assert_eq!(
            LogDirEventNotificationZNode::path("log_dir_event_0000000001"),
            "/log_dir_event_notification/log_dir_event_0000000001"
        );
    }

    #[test]
    fn small_znode_layouts() {
        let config = BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned())]);
        let bytes = ConfigEntityZNode::encode(&config);
        assert_eq!(
            text(bytes.clone()),
            r#"{"version":1,"config":{"retention.ms":"1000"}}"#
        );
        assert_eq!(
            ConfigEntityZNode::decode(ConfigType::Topic, "t", &bytes).expect("config"),
            config
        );
        assert_eq!(
            ConfigEntityZNode::path(ConfigType::Broker, "0"),
            "/config/brokers/0"
        );

        let bytes = ControllerZNode::encode(0, 1_700_000_000_000);
        assert_eq!(
            text(bytes.clone()),
            r#"{"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}"#
        );
        assert_eq!(ControllerZNode::decode(&bytes).expect("controller"), 0);
        let version_1 = br#"{"version":1,"brokerid":3,"timestamp":"1700000000000"}"#;
        assert_eq!(ControllerZNode::decode(version_1).expect("v1"), 3);

        assert_eq!(ControllerEpochZNode::encode(1), b"1");
        assert_eq!(ControllerEpochZNode::decode(b"17").expect("epoch"), 17);
        assert!(ControllerEpochZNode::decode(b" 1").is_err());

        assert_eq!(
            ConsumerOffset::path("g", "t", 2),
            "/consumers/g/offsets/t/2"
        );
        assert_eq!(
            ConsumerOffset::decode("g", "t", 2, &ConsumerOffset::encode(42)).expect("offset"),
            42
        );

        let bytes = ClusterIdZNode::encode("AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(
            text(bytes.clone()),
            r#"{"version":"1","id":"AAAAAAAAAAAAAAAAAAAAAA"}"#
        );
        assert_eq!(
            ClusterIdZNode::decode(&bytes).expect("id"),
            "AAAAAAAAAAAAAAAAAAAAAA"
        );
        assert_eq!(DeleteTopicsTopicZNode::path("t"), "/admin/delete_topics/t");
    }

    /// Cluster ids are 22 characters of URL-safe base64 (RFC 4648 vectors
    /// for the short tails).
    #[test]
    fn cluster_id_encoding() {
        assert_eq!(
            ClusterIdZNode::id_from_uuid([0; 16]),
            "AAAAAAAAAAAAAAAAAAAAAA"
        );
        assert_eq!(
            ClusterIdZNode::id_from_uuid([0xff; 16]),
            "_____________________w"
        );
        assert_eq!(base64_url_no_pad(b"foob"), "Zm9vYg");
        assert_eq!(base64_url_no_pad(b"fooba"), "Zm9vYmE");
        assert_eq!(base64_url_no_pad(b"foobar"), "Zm9vYmFy");
    }

    /// `future` to its end on a runtime of its own (the store is async).
    fn run<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(future)
    }

    /// ensure_paths creates every persistent path with its parents and is
    /// idempotent.
    #[test]
    fn ensure_paths_is_idempotent() {
        let store = EmbeddedStore::in_memory();
        run(async {
            ensure_paths(store.as_ref()).await.expect("first");
            ensure_paths(store.as_ref()).await.expect("second");
            for path in persistent_paths() {
                assert!(store.get(path).await.expect("get").is_some(), "{path}");
            }
            assert_eq!(
                store.children("/config").await.expect("children"),
                ["brokers", "changes", "clients", "topics", "users"]
            );
        });
    }

    /// The first broker's id is kept; a later candidate reads it back
    /// rather than failing with NodeExists.
    #[test]
    fn the_first_cluster_id_written_is_the_one_kept() {
        let store = EmbeddedStore::in_memory();
        run(async {
            let first = ClusterIdZNode::create_or_get(store.as_ref(), "first-id")
                .await
                .expect("created");
            let second = ClusterIdZNode::create_or_get(store.as_ref(), "second-id")
                .await
                .expect("read back");
            assert_eq!((first.as_str(), second.as_str()), ("first-id", "first-id"));
        });
    }

    /// What Kafka 3.9's `kafka-acls --authorizer-properties
    /// zookeeper.connect=...` writes reads back, and ours encodes the same.
    #[test]
    fn acl_znodes_are_kafkas() {
        let pattern = ResourcePattern::literal(ResourceType::Topic, "orders");
        assert_eq!(AclZNode::path(&pattern).as_deref(), Some("/kafka-acl/Topic/orders"));
        let prefixed = ResourcePattern::prefixed(ResourceType::TransactionalId, "tx-");
        assert_eq!(
            AclZNode::path(&prefixed).as_deref(),
            Some("/kafka-acl-extended/prefixed/TransactionalId/tx-")
        );
        let kafka = br#"{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"IdempotentWrite","host":"*"},{"host":"10.0.0.1","permissionType":"Deny","operation":"Read","principal":"User:bob"}]}"#;
        let entries = AclZNode::decode(&pattern, kafka).expect("decodes");
        assert_eq!(entries.len(), 2);
        assert!(entries.iter().any(|e| e.principal == "User:alice"
            && e.operation == AclOperation::IdempotentWrite
            && e.permission == AclPermissionType::Allow
            && e.host == "*"));
        assert_eq!(AclZNode::decode(&pattern, &AclZNode::encode(&entries)).expect("round trip"), entries);
        assert!(text(AclZNode::encode(&entries)).contains(r#""permissionType":"Deny","operation":"Read","host":"10.0.0.1""#));
        assert!(AclZNode::decode(&pattern, b"").expect("empty").is_empty());
        assert!(AclZNode::decode(&pattern, br#"{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe","operation":"Read","host":"*"}]}"#).is_err());
        assert!(AclZNode::decode(&pattern, b"{not json").is_err());
    }

    #[test]
    fn acl_change_notifications_are_kafkas() {
        let literal = ResourcePattern::literal(ResourceType::TransactionalId, "a:b");
        let (path, data) = AclChangeNotification::encode(&literal);
        assert_eq!(path, "/kafka-acl-changes/acl_changes_");
        assert_eq!(text(data.clone()), "TRANSACTIONAL_ID:a:b");
        assert_eq!(AclChangeNotification::decode(AclChangeNotification::LITERAL_PATH, &data).expect("decodes"), literal);
        // Older brokers wrote the Pascal-case name.
        assert_eq!(
            AclChangeNotification::decode(AclChangeNotification::LITERAL_PATH, b"Topic:t").expect("decodes"),
            ResourcePattern::literal(ResourceType::Topic, "t")
        );
        let prefixed = ResourcePattern::prefixed(ResourceType::Group, "g-");
        let (path, data) = AclChangeNotification::encode(&prefixed);
        assert_eq!(path, "/kafka-acl-extended-changes/acl_changes_");
        assert_eq!(
            text(data.clone()),
            r#"{"version":1,"resourceType":"GROUP","name":"g-","patternType":"PREFIXED"}"#
        );
        assert_eq!(AclChangeNotification::decode(AclChangeNotification::EXTENDED_PATH, &data).expect("decodes"), prefixed);
        assert!(AclChangeNotification::decode(AclChangeNotification::LITERAL_PATH, b"no-separator").is_err());
        assert_eq!(AclChangeNotification::sequence("acl_changes_0000000012"), Some(12));
    }
}
