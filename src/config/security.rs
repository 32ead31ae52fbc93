//! The authorizer keys: `authorizer.class.name` (only Kafka's ZooKeeper-era
//! `AclAuthorizer` can be named; Java classes cannot be loaded) and
//! `super.users` (`User:alice;User:bob`, Kafka's semicolon-separated list).

use std::collections::BTreeSet;

use super::ConfigError;

/// Which authorizer the broker runs (`authorizer.class.name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthorizerClass {
    /// Kafka's default (empty): no authorizer, every request is allowed.
    #[default]
    None,
    /// `kafka.security.authorizer.AclAuthorizer`: ACLs in the metadata store.
    AclAuthorizer,
}

impl AuthorizerClass {
    /// Kafka's ZooKeeper-era authorizer class.
    pub const ACL_AUTHORIZER_CLASS: &'static str = "kafka.security.authorizer.AclAuthorizer";

    pub(super) fn parse(raw: &str) -> Result<AuthorizerClass, ConfigError> {
        match raw.trim() {
            "" => Ok(AuthorizerClass::None),
            Self::ACL_AUTHORIZER_CLASS => Ok(AuthorizerClass::AclAuthorizer),
            other => Err(ConfigError::InvalidValue {
                key: "authorizer.class.name".into(),
                value: other.into(),
                reason: format!(
                    "Java classes cannot be loaded; the built-in authorizer is {}",
                    Self::ACL_AUTHORIZER_CLASS
                ),
            }),
        }
    }

    /// The class name as the config says it ("" for none).
    pub fn class_name(self) -> &'static str {
        match self {
            AuthorizerClass::None => "",
            AuthorizerClass::AclAuthorizer => Self::ACL_AUTHORIZER_CLASS,
        }
    }
}

/// `super.users`: principals (`Type:name`) allowed everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SuperUsers(pub BTreeSet<String>);

impl SuperUsers {
    pub(super) fn parse(raw: &str) -> Result<SuperUsers, ConfigError> {
        let mut users = BTreeSet::new();
        for entry in raw.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            match entry.split_once(':') {
                Some((kind, _)) if !kind.is_empty() => {
                    users.insert(entry.to_string());
                }
                _ => {
                    return Err(ConfigError::InvalidValue {
                        key: "super.users".into(),
                        value: raw.into(),
                        reason: format!(
                            "{entry} is not a principal of the form principalType:principalName"
                        ),
                    })
                }
            }
        }
        Ok(SuperUsers(users))
    }

    /// The list as Kafka writes it, `;`-separated.
    pub fn text(&self) -> String {
        self.0.iter().cloned().collect::<Vec<_>>().join(";")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_as_kafka_reads_them() {
        assert_eq!(AuthorizerClass::parse("").ok(), Some(AuthorizerClass::None));
        assert_eq!(
            AuthorizerClass::parse("kafka.security.authorizer.AclAuthorizer").ok(),
            Some(AuthorizerClass::AclAuthorizer)
        );
        assert!(
            AuthorizerClass::parse("org.apache.kafka.metadata.authorizer.StandardAuthorizer")
                .is_err()
        );
        let users = SuperUsers::parse("User:admin; User:broker;").expect("parses");
        assert_eq!(users.text(), "User:admin;User:broker");
        assert!(SuperUsers::parse("admin").is_err());
    }
}
