//! Who a request comes from and what it may do: principals, Kafka's ACL
//! model ([`acl`]) and the ZooKeeper-era `AclAuthorizer` over the metadata
//! store ([`authorizer`]).

pub mod acl;
pub mod authorizer;
pub mod credentials;
pub mod principal;
pub mod sasl;
pub mod scram;
pub mod tls;

use std::fmt;
use std::net::IpAddr;

pub use authorizer::{AclAuthorizer, AclError};

use std::sync::Arc;

use crate::config::{BrokerConfig, ConfigError, Listener, SecurityProtocol};

/// What a listener's connections need to authenticate: its protocol and,
/// on SASL listeners, the mechanisms offered and PLAIN's users.
#[derive(Debug, Clone)]
pub struct ListenerSecurity {
    /// The listener's name (`SASL_PLAINTEXT`).
    pub listener: String,
    /// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    pub protocol: SecurityProtocol,
    /// On SSL and SASL_SSL listeners, the TLS every connection starts with.
    pub tls: Option<Arc<tls::TlsListener>>,
    /// `sasl.enabled.mechanisms`.
    pub mechanisms: Vec<String>,
    /// PLAIN's users from the listener's JAAS line.
    pub plain: sasl::PlainUsers,
    /// Where SCRAM credentials are read (`/config/users/<user>`).
    pub credentials: Option<Arc<credentials::UserScramCredentials>>,
}

impl ListenerSecurity {
    /// The security of `listener` under `config`; a TLS listener's
    /// keystore and truststore are read here.
    pub fn of(
        config: &BrokerConfig,
        listener: &Listener,
    ) -> Result<ListenerSecurity, ListenerSecurityError> {
        let sasl = listener.security_protocol.is_sasl();
        let tls = match listener.security_protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => Some(Arc::new(
                tls::TlsListener::new(config.ssl_config(listener)?)?,
            )),
            _ => None,
        };
        Ok(ListenerSecurity {
            listener: listener.name.clone(),
            protocol: listener.security_protocol,
            tls,
            mechanisms: if sasl {
                config.sasl_enabled_mechanisms.0.clone()
            } else {
                Vec::new()
            },
            plain: if sasl
                && config
                    .sasl_enabled_mechanisms
                    .0
                    .iter()
                    .any(|m| m == "PLAIN")
            {
                config.plain_users(listener)?
            } else {
                sasl::PlainUsers::default()
            },
            credentials: None,
        })
    }

    /// A PLAINTEXT listener (tests and embedders).
    pub fn plaintext() -> ListenerSecurity {
        ListenerSecurity {
            listener: "PLAINTEXT".to_string(),
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            mechanisms: Vec::new(),
            plain: sasl::PlainUsers::default(),
            credentials: None,
        }
    }
}

/// Why a listener's security could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ListenerSecurityError {
    /// The listener's settings are invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Its keystore or truststore cannot be used.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

/// A principal as Kafka writes it, `Type:name` (`User:alice`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KafkaPrincipal(String);

impl KafkaPrincipal {
    /// `User:<name>`.
    pub fn user(name: &str) -> KafkaPrincipal {
        KafkaPrincipal(format!("User:{name}"))
    }

    /// `User:ANONYMOUS`, every PLAINTEXT connection's principal.
    pub fn anonymous() -> KafkaPrincipal {
        KafkaPrincipal::user("ANONYMOUS")
    }

    /// Kafka's `SecurityUtils.parseKafkaPrincipal`: `Type:name`, both
    /// parts present.
    pub fn parse(text: &str) -> Option<KafkaPrincipal> {
        let (kind, _) = text.split_once(':')?;
        (!kind.is_empty()).then(|| KafkaPrincipal(text.to_string()))
    }

    /// `Type:name`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name without its type (`alice` of `User:alice`), as quotas
    /// name users.
    pub fn name(&self) -> &str {
        self.0
            .split_once(':')
            .map_or(self.0.as_str(), |(_, name)| name)
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A connection's identity as the authorizer sees it: its principal and
/// the client's address, as text the way Kafka compares ACL hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Who: `User:ANONYMOUS` on PLAINTEXT.
    pub principal: KafkaPrincipal,
    /// From where: the client's address (`127.0.0.1`).
    pub host: String,
}

impl Session {
    /// A PLAINTEXT client: `User:ANONYMOUS` at its address.
    pub fn anonymous(address: IpAddr) -> Session {
        Session {
            principal: KafkaPrincipal::anonymous(),
            host: address.to_canonical().to_string(),
        }
    }

    /// The view the ACL rules take of it.
    pub fn requester(&self) -> acl::Requester<'_> {
        acl::Requester {
            principal: self.principal.as_str(),
            host: &self.host,
        }
    }
}
