//! Client quota entities where Kafka's ZooKeeper mode keeps them, and
//! DescribeClientQuotas / AlterClientQuotas over them (KIP-546), with the
//! semantics of Kafka's `ZkAdminManager`: `/config/users/<user>`,
//! `/config/clients/<client-id>`, `/config/users/<user>/clients/<client-id>`
//! and `/config/ips/<ip>`, `<default>` for the default entity, names
//! sanitized as Kafka's `Sanitizer` does, a `/config/changes` notification
//! after each write. A user's znode also holds its SCRAM credentials; only
//! the quota keys are touched here.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::error::ResponseError;

use crate::metadata::entity_config::{self, UpdateError};
use crate::metadata::store::{MetadataError, MetadataStore};
use crate::metadata::znodes::ConfigType;
use crate::security::scram::{desanitize_user as desanitize, sanitize_user as sanitize};

/// The znode name of a default entity.
pub const DEFAULT_ENTITY: &str = "<default>";

/// One component's name: a named entity or the default one (`null` on
/// the wire, `<default>` in ZooKeeper).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityName {
    /// `<default>`.
    Default,
    /// A named user, client id or address.
    Named(String),
}

impl EntityName {
    fn from_wire(name: Option<&str>) -> EntityName {
        match name {
            None => EntityName::Default,
            Some(name) => EntityName::Named(name.to_string()),
        }
    }

    /// The wire form (`None` for the default).
    pub fn wire(&self) -> Option<&str> {
        match self {
            EntityName::Default => None,
            EntityName::Named(name) => Some(name),
        }
    }

    fn znode(&self) -> String {
        match self {
            EntityName::Default => DEFAULT_ENTITY.to_string(),
            EntityName::Named(name) => sanitize(name),
        }
    }

    fn from_znode(name: &str) -> EntityName {
        if name == DEFAULT_ENTITY {
            EntityName::Default
        } else {
            EntityName::Named(desanitize(name))
        }
    }
}

/// A quota entity: a user, a client id, both, or an address.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaEntity {
    /// `/config/users/<user>`.
    User(EntityName),
    /// `/config/clients/<client-id>`.
    Client(EntityName),
    /// `/config/users/<user>/clients/<client-id>`.
    UserClient(EntityName, EntityName),
    /// `/config/ips/<ip>`.
    Ip(EntityName),
}

/// The wire's entity types.
pub const USER: &str = "user";
/// See [`USER`].
pub const CLIENT_ID: &str = "client-id";
/// See [`USER`].
pub const IP: &str = "ip";

/// Kafka's quota keys and their types (`DynamicConfig.User`/`Client`/`Ip`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Long,
    Int,
    Double,
}

const USER_CLIENT_KEYS: &[(&str, KeyType)] = &[
    ("producer_byte_rate", KeyType::Long),
    ("consumer_byte_rate", KeyType::Long),
    ("request_percentage", KeyType::Double),
    ("controller_mutation_rate", KeyType::Double),
];

const IP_KEYS: &[(&str, KeyType)] = &[("connection_creation_rate", KeyType::Int)];

/// A request-level failure: Kafka's code and message.
pub type QuotaError = (i16, String);

fn invalid(message: impl Into<String>) -> QuotaError {
    (ResponseError::InvalidRequest.code(), message.into())
}

impl QuotaEntity {
    /// The entity a wire entity (type, name) list names.
    pub fn from_wire(components: &[(String, Option<String>)]) -> Result<QuotaEntity, QuotaError> {
        if components.is_empty() {
            return Err(invalid("Invalid empty client quota entity"));
        }
        let (mut user, mut client, mut ip) = (None, None, None);
        for (entity_type, name) in components {
            if name.as_deref() == Some("") {
                return Err(invalid(format!("Empty {entity_type} not supported")));
            }
            let name = EntityName::from_wire(name.as_deref());
            match entity_type.as_str() {
                USER => user = Some(name),
                CLIENT_ID => client = Some(name),
                IP => ip = Some(name),
                other => {
                    return Err(invalid(format!(
                        "Unhandled client quota entity type: {other}"
                    )))
                }
            }
        }
        match (user, client, ip) {
            (Some(u), Some(c), None) => Ok(QuotaEntity::UserClient(u, c)),
            (Some(u), None, None) => Ok(QuotaEntity::User(u)),
            (None, Some(c), None) => Ok(QuotaEntity::Client(c)),
            (None, None, Some(ip)) => {
                if let EntityName::Named(name) = &ip {
                    if name.parse::<std::net::IpAddr>().is_err() {
                        return Err(invalid(format!(
                            "{name} is not a valid IP or resolvable host."
                        )));
                    }
                }
                Ok(QuotaEntity::Ip(ip))
            }
            (_, _, Some(_)) => Err(invalid(
                "Invalid quota entity combination, IP entity should not be used with user/client ID entity.",
            )),
            _ => Err(invalid("Invalid client quota entity")),
        }
    }

    /// The wire form: (type, name) pairs.
    pub fn wire(&self) -> Vec<(&'static str, Option<&str>)> {
        match self {
            QuotaEntity::User(u) => vec![(USER, u.wire())],
            QuotaEntity::Client(c) => vec![(CLIENT_ID, c.wire())],
            QuotaEntity::UserClient(u, c) => vec![(USER, u.wire()), (CLIENT_ID, c.wire())],
            QuotaEntity::Ip(ip) => vec![(IP, ip.wire())],
        }
    }

    fn config_type(&self) -> ConfigType {
        match self {
            QuotaEntity::User(_) | QuotaEntity::UserClient(..) => ConfigType::User,
            QuotaEntity::Client(_) => ConfigType::Client,
            QuotaEntity::Ip(_) => ConfigType::Ip,
        }
    }

    /// The name under `/config/<type>` (`alice/clients/app` for both).
    fn znode_name(&self) -> String {
        match self {
            QuotaEntity::User(u) => u.znode(),
            QuotaEntity::Client(c) => c.znode(),
            QuotaEntity::UserClient(u, c) => format!("{}/clients/{}", u.znode(), c.znode()),
            QuotaEntity::Ip(ip) => ip.znode(),
        }
    }

    fn keys(&self) -> &'static [(&'static str, KeyType)] {
        match self {
            QuotaEntity::Ip(_) => IP_KEYS,
            _ => USER_CLIENT_KEYS,
        }
    }

    /// The entity of a `/config/changes` notification, if it names one.
    pub fn from_notification(config_type: ConfigType, name: &str) -> Option<QuotaEntity> {
        let parts: Vec<&str> = name.split('/').collect();
        match (config_type, parts.as_slice()) {
            (ConfigType::User, [u]) => Some(QuotaEntity::User(EntityName::from_znode(u))),
            (ConfigType::User, [u, "clients", c]) => Some(QuotaEntity::UserClient(
                EntityName::from_znode(u),
                EntityName::from_znode(c),
            )),
            (ConfigType::Client, [c]) => Some(QuotaEntity::Client(EntityName::from_znode(c))),
            (ConfigType::Ip, [ip]) => Some(QuotaEntity::Ip(EntityName::from_znode(ip))),
            _ => None,
        }
    }
}

/// One filter component of DescribeClientQuotas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// match_type 0: this name.
    Exact(String),
    /// match_type 1: the default entity.
    Default,
    /// match_type 2: any name, the default included.
    Any,
}

/// An entity's quota values.
pub type QuotaValues = BTreeMap<String, f64>;

/// One AlterClientQuotas operation: set `key` to `value`, or remove it.
#[derive(Debug, Clone)]
pub struct QuotaOp {
    /// The quota key.
    pub key: String,
    /// `None` removes it.
    pub value: Option<f64>,
}

/// Reads and writes quota entities in the metadata store.
#[derive(Debug)]
pub struct ClientQuotaConfigs {
    store: Arc<dyn MetadataStore>,
}

impl ClientQuotaConfigs {
    /// Over `store` (ZooKeeper or the embedded store).
    pub fn new(store: Arc<dyn MetadataStore>) -> ClientQuotaConfigs {
        ClientQuotaConfigs { store }
    }

    async fn read(
        &self,
        entity: &QuotaEntity,
    ) -> Result<BTreeMap<String, String>, MetadataError> {
        let (config, _) = entity_config::read(
            self.store.as_ref(),
            entity.config_type(),
            &entity.znode_name(),
        )
        .await?;
        Ok(config)
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, MetadataError> {
        match self.store.children(path).await {
            Ok(names) => Ok(names),
            Err(MetadataError::NoNode(_)) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// The quota values of `entity` (only its quota keys, as doubles).
    pub async fn values(&self, entity: &QuotaEntity) -> Result<QuotaValues, MetadataError> {
        Ok(quota_values(entity, &self.read(entity).await?))
    }

    /// Every stored entity with quota values (for the broker's cache).
    pub async fn all(&self) -> Result<Vec<(QuotaEntity, QuotaValues)>, MetadataError> {
        let mut entities = Vec::new();
        for user in self.children("/config/users").await? {
            let user_name = EntityName::from_znode(&user);
            entities.push(QuotaEntity::User(user_name.clone()));
            for client in self
                .children(&format!("/config/users/{user}/clients"))
                .await?
            {
                entities.push(QuotaEntity::UserClient(
                    user_name.clone(),
                    EntityName::from_znode(&client),
                ));
            }
        }
        for client in self.children("/config/clients").await? {
            entities.push(QuotaEntity::Client(EntityName::from_znode(&client)));
        }
        for ip in self.children("/config/ips").await? {
            entities.push(QuotaEntity::Ip(EntityName::from_znode(&ip)));
        }
        let mut found = Vec::new();
        for entity in entities {
            let values = self.values(&entity).await?;
            if !values.is_empty() {
                found.push((entity, values));
            }
        }
        Ok(found)
    }

    /// DescribeClientQuotas: the entities matching every component (with
    /// `strict`, only entities made of exactly those components).
    pub async fn describe(
        &self,
        components: &[(String, Match)],
        strict: bool,
    ) -> Result<Result<Vec<(QuotaEntity, QuotaValues)>, QuotaError>, MetadataError> {
        let (mut user, mut client, mut ip) = (None, None, None);
        for (entity_type, matched) in components {
            let slot = match entity_type.as_str() {
                USER => &mut user,
                CLIENT_ID => &mut client,
                IP => &mut ip,
                "" => {
                    return Ok(Err(invalid(
                        "Unexpected empty filter component entity type",
                    )))
                }
                other => {
                    return Ok(Err((
                        ResponseError::UnsupportedVersion.code(),
                        format!("Custom entity type '{other}' not supported"),
                    )))
                }
            };
            if slot.is_some() {
                return Ok(Err(invalid(format!(
                    "Duplicate {entity_type} filter component entity type"
                ))));
            }
            *slot = Some(matched.clone());
        }
        if (user.is_some() || client.is_some()) && ip.is_some() {
            return Ok(Err(invalid(
                "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component.",
            )));
        }
        // A component matches a name; an absent one matches only entities
        // without that part when strict, any otherwise.
        let matches = |component: &Option<Match>, name: Option<&EntityName>| match (component, name)
        {
            (None, None) => true,
            (None, Some(_)) => !strict,
            (Some(_), None) => false,
            (Some(Match::Any), Some(_)) => true,
            (Some(Match::Default), Some(n)) => *n == EntityName::Default,
            (Some(Match::Exact(want)), Some(n)) => *n == EntityName::Named(want.clone()),
        };
        let mut found = Vec::new();
        for (entity, values) in self.all().await? {
            let keep = match &entity {
                QuotaEntity::User(u) => ip.is_none() && matches(&user, Some(u)) && matches(&client, None),
                QuotaEntity::Client(c) => ip.is_none() && matches(&user, None) && matches(&client, Some(c)),
                QuotaEntity::UserClient(u, c) => {
                    ip.is_none() && matches(&user, Some(u)) && matches(&client, Some(c))
                }
                QuotaEntity::Ip(a) => user.is_none() && client.is_none() && matches(&ip, Some(a)),
            };
            if keep {
                found.push((entity, values));
            }
        }
        Ok(Ok(found))
    }

    /// AlterClientQuotas for one entity: Kafka's checks (known keys,
    /// integral values for integer keys), then, unless `validate_only`, one
    /// write and a change notification.
    pub async fn alter(
        &self,
        entity: &QuotaEntity,
        ops: &[QuotaOp],
        validate_only: bool,
    ) -> Result<(), QuotaError> {
        let updated = entity_config::update(
            self.store.as_ref(),
            entity.config_type(),
            &entity.znode_name(),
            |config| {
                for op in ops {
                    match op.value {
                        None => {
                            config.remove(&op.key);
                        }
                        Some(value) => {
                            let Some((_, key_type)) =
                                entity.keys().iter().find(|(k, _)| *k == op.key)
                            else {
                                return Err(invalid(format!(
                                    "Invalid configuration key {}",
                                    op.key
                                )));
                            };
                            config.insert(op.key.clone(), stored_value(&op.key, *key_type, value)?);
                        }
                    }
                }
                Ok(!validate_only)
            },
        )
        .await;
        match updated {
            Ok(()) => Ok(()),
            Err(UpdateError::Refused(e)) => Err(e),
            Err(UpdateError::Store(e)) => {
                Err((ResponseError::UnknownServerError.code(), e.to_string()))
            }
        }
    }
}

/// As Kafka's `ZkAdminManager` stores a value: doubles as they are,
/// integer keys only when integral (within 1e-6).
fn stored_value(key: &str, key_type: KeyType, value: f64) -> Result<String, QuotaError> {
    const EPSILON: f64 = 1e-6;
    match key_type {
        KeyType::Double => Ok(java_double(value)),
        KeyType::Long | KeyType::Int => {
            let integral = (value + EPSILON).floor();
            let in_range = match key_type {
                KeyType::Int => (i32::MIN as f64..=i32::MAX as f64).contains(&integral),
                _ => (i64::MIN as f64..=i64::MAX as f64).contains(&integral),
            };
            if !in_range || (integral - value).abs() > EPSILON {
                let name = if key_type == KeyType::Int { "INT" } else { "LONG" };
                return Err(invalid(format!("Configuration {key} must be a {name} value")));
            }
            Ok(format!("{}", integral as i64))
        }
    }
}

/// Java's `Double.toString` for the values quotas take (`1024.0`, `12.5`).
fn java_double(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e7 {
        format!("{value:.1}")
    } else {
        format!("{value}")
    }
}

/// The quota keys of a stored config, as doubles (a value that is not a
/// number is skipped with a log line; Kafka would fail the describe).
fn quota_values(entity: &QuotaEntity, config: &BTreeMap<String, String>) -> QuotaValues {
    config
        .iter()
        .filter(|(key, _)| entity.keys().iter().any(|(k, _)| k == key))
        .filter_map(|(key, value)| match value.trim().parse::<f64>() {
            Ok(number) => Some((key.clone(), number)),
            Err(_) => {
                log::warn!("quota {key} of {entity:?} is not a number: {value}");
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::embedded::EmbeddedStore;

    fn named(name: &str) -> EntityName {
        EntityName::Named(name.into())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn quotas_are_stored_as_kafka_keeps_them_and_described_by_filter() {
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        crate::metadata::ensure_paths(store.as_ref())
            .await
            .expect("paths");
        let quotas = ClientQuotaConfigs::new(store.clone());
        let set = |key: &str, value: f64| QuotaOp {
            key: key.into(),
            value: Some(value),
        };
        let alice = QuotaEntity::User(named("alice"));
        quotas
            .alter(&alice, &[set("producer_byte_rate", 1024.0)], false)
            .await
            .expect("altered");
        let app = QuotaEntity::UserClient(named("alice"), EntityName::Default);
        quotas
            .alter(&app, &[set("request_percentage", 12.5)], false)
            .await
            .expect("altered");
        let client = QuotaEntity::Client(named("my app*"));
        quotas
            .alter(&client, &[set("consumer_byte_rate", 2048.0)], false)
            .await
            .expect("altered");
        let (bytes, _) = store
            .get("/config/users/alice")
            .await
            .expect("read")
            .expect("exists");
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            r#"{"version":1,"config":{"producer_byte_rate":"1024"}}"#
        );
        let (bytes, _) = store
            .get("/config/users/alice/clients/<default>")
            .await
            .expect("read")
            .expect("exists");
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            r#"{"version":1,"config":{"request_percentage":"12.5"}}"#
        );
        assert!(store
            .get("/config/clients/my%20app%2A")
            .await
            .expect("read")
            .is_some());
        // Kafka's checks: integer keys integral, known keys only.
        assert_eq!(
            quotas
                .alter(&alice, &[set("producer_byte_rate", 1.5)], false)
                .await
                .err()
                .map(|e| e.0),
            Some(ResponseError::InvalidRequest.code())
        );
        assert!(quotas
            .alter(&alice, &[set("retention.ms", 1.0)], false)
            .await
            .is_err());
        let everything = quotas.describe(&[], false).await.expect("read").expect("ok");
        assert_eq!(everything.len(), 3);
        let only_users = quotas
            .describe(&[(USER.into(), Match::Any)], true)
            .await
            .expect("read")
            .expect("ok");
        assert_eq!(only_users, vec![(alice.clone(), [("producer_byte_rate".to_string(), 1024.0)].into())]);
        let alice_any = quotas
            .describe(&[(USER.into(), Match::Exact("alice".into()))], false)
            .await
            .expect("read")
            .expect("ok");
        assert_eq!(alice_any.len(), 2);
        let default_clients = quotas
            .describe(&[(CLIENT_ID.into(), Match::Default)], false)
            .await
            .expect("read")
            .expect("ok");
        assert_eq!(default_clients.len(), 1);
        // Removing the last key leaves an entity with no quotas, not listed.
        quotas
            .alter(
                &alice,
                &[QuotaOp {
                    key: "producer_byte_rate".into(),
                    value: None,
                }],
                false,
            )
            .await
            .expect("removed");
        let only_users = quotas
            .describe(&[(USER.into(), Match::Any)], true)
            .await
            .expect("read")
            .expect("ok");
        assert!(only_users.is_empty());
        let notifications = store
            .children(crate::metadata::znodes::ConfigEntityChangeNotificationZNode::PATH)
            .await
            .expect("notifications");
        assert_eq!(notifications.len(), 4);
    }

    #[test]
    fn wire_entities_follow_kafkas_rules() {
        let entity = |parts: &[(&str, Option<&str>)]| {
            QuotaEntity::from_wire(
                &parts
                    .iter()
                    .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            entity(&[(USER, Some("a")), (CLIENT_ID, None)]),
            Ok(QuotaEntity::UserClient(named("a"), EntityName::Default))
        );
        assert!(entity(&[]).is_err());
        assert!(entity(&[(USER, Some(""))]).is_err());
        assert!(entity(&[(USER, Some("a")), (IP, Some("10.0.0.1"))]).is_err());
        assert!(entity(&[(IP, Some("not-an-ip"))]).is_err());
        assert!(entity(&[("group", Some("g"))]).is_err());
        assert_eq!(
            QuotaEntity::from_notification(ConfigType::User, "a%40b/clients/<default>"),
            Some(QuotaEntity::UserClient(named("a@b"), EntityName::Default))
        );
    }
}
