//! The `*_authorized_operations` fields of Metadata, DescribeCluster and
//! DescribeGroups (KIP-430): the operations the session may do on the
//! resource, over those its type supports (`AclEntry.supportedOperations`),
//! as a bit field indexed by `AclOperation` code. Without an authorizer
//! Kafka answers every supported operation. Not asked for, the field is
//! `i32::MIN`.

use super::BrokerContext;
use crate::security::acl::ResourceType;
use crate::security::Session;

/// Kafka's "authorized operations not requested" marker.
pub const OMITTED: i32 = i32::MIN;

/// The field's value for one resource.
pub fn authorized_operations(
    ctx: &BrokerContext,
    session: &Session,
    resource_type: ResourceType,
    name: &str,
    requested: bool,
) -> i32 {
    if !requested {
        return OMITTED;
    }
    ctx.authorized_operations(session, resource_type, name)
}

#[cfg(test)]
mod tests {
    use crate::security::acl::{AclCache, AuthorizerPolicy, Requester, ResourceType};

    /// The values a Kafka 3.x broker without an authorizer answers (a
    /// super user's are the same).
    #[test]
    fn kafka_values() {
        let policy = AuthorizerPolicy {
            super_users: ["User:admin".to_string()].into(),
            ..Default::default()
        };
        let admin = Requester {
            principal: "User:admin",
            host: "127.0.0.1",
        };
        let bits = |t| AclCache::default().authorized_operations(&policy, admin, t, "x");
        assert_eq!(bits(ResourceType::Topic), 3576);
        assert_eq!(bits(ResourceType::Cluster), 8096);
        assert_eq!(bits(ResourceType::Group), 328);
    }
}
