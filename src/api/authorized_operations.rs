//! The `*_authorized_operations` fields of Metadata, DescribeCluster and
//! DescribeGroups. ferrolog has no authorizer yet, and Kafka without one
//! authorizes everything: it answers every operation the resource type
//! supports (`AclEntry.supportedOperations`), as a bit field indexed by
//! `AclOperation` code. Not asked for, the field is `i32::MIN`.
//! Once ACLs land, the authorizer filters these sets; callers stay as they are.

/// Kafka's "authorized operations not requested" marker.
pub const OMITTED: i32 = i32::MIN;

/// The resource types these APIs describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Cluster,
    Topic,
    Group,
}

// `org.apache.kafka.common.acl.AclOperation` codes.
const READ: u8 = 3;
const WRITE: u8 = 4;
const CREATE: u8 = 5;
const DELETE: u8 = 6;
const ALTER: u8 = 7;
const DESCRIBE: u8 = 8;
const CLUSTER_ACTION: u8 = 9;
const DESCRIBE_CONFIGS: u8 = 10;
const ALTER_CONFIGS: u8 = 11;
const IDEMPOTENT_WRITE: u8 = 12;

impl Resource {
    fn supported(self) -> &'static [u8] {
        match self {
            Resource::Cluster => &[
                CREATE,
                CLUSTER_ACTION,
                DESCRIBE_CONFIGS,
                ALTER_CONFIGS,
                IDEMPOTENT_WRITE,
                ALTER,
                DESCRIBE,
            ],
            Resource::Topic => &[
                READ,
                WRITE,
                CREATE,
                DESCRIBE,
                DELETE,
                ALTER,
                DESCRIBE_CONFIGS,
                ALTER_CONFIGS,
            ],
            Resource::Group => &[READ, DESCRIBE, DELETE],
        }
    }
}

/// The field's value: every supported operation when `requested`.
pub fn authorized_operations(resource: Resource, requested: bool) -> i32 {
    if !requested {
        return OMITTED;
    }
    resource
        .supported()
        .iter()
        .fold(0, |bits, &operation| bits | 1 << operation)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values a Kafka 3.x broker without an authorizer answers.
    #[test]
    fn kafka_values() {
        assert_eq!(authorized_operations(Resource::Topic, true), 3576);
        assert_eq!(authorized_operations(Resource::Cluster, true), 8096);
        assert_eq!(authorized_operations(Resource::Group, true), 328);
        assert_eq!(authorized_operations(Resource::Topic, false), i32::MIN);
    }
}
