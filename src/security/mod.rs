//! Who a request comes from and what it may do: principals, Kafka's ACL
//! model ([`acl`]) and the ZooKeeper-era `AclAuthorizer` over the metadata
//! store ([`authorizer`]).

pub mod acl;
pub mod authorizer;

use std::fmt;
use std::net::IpAddr;

pub use authorizer::{AclAuthorizer, AclError};

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
