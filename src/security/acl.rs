//! Kafka's ACL vocabulary (`org.apache.kafka.common.acl` and `.resource`)
//! and the ZooKeeper-era `AclAuthorizer`'s decisions, as pure code: an
//! [`AclCache`] of resource patterns and their entries answers
//! [`AclCache::authorize`], [`AclCache::authorize_by_resource_type`] and the
//! filters of DescribeAcls/DeleteAcls. Where the cache comes from (znodes,
//! change notifications) is `security::authorizer`'s business.
//!
//! The rules, after `AclAuthorizer.authorizeAction`: a super user may do
//! anything; a resource with no matching ACL at all is allowed only with
//! `allow.everyone.if.no.acl.found`; otherwise a matching DENY wins, and an
//! ALLOW must match. READ, WRITE, DELETE and ALTER imply DESCRIBE;
//! ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL matches every operation.
//! ACLs on a resource are those of its literal name, of the literal `*` and
//! of every prefixed pattern the name starts with.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// `ResourcePattern.WILDCARD_RESOURCE` and `AclEntry.WILDCARD_HOST`.
pub const WILDCARD: &str = "*";
/// `User:*`, the principal every principal matches.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The only name of the cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// Defines a Kafka enum with its wire code and its Pascal-case name (the
/// name in znodes, `SecurityUtils.toPascalCase`).
macro_rules! kafka_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $code:literal, $text:literal;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $(
                #[doc = concat!("`", $text, "` (code ", stringify!($code), ").")]
                $variant,
            )*
        }

        impl $name {
            /// The wire code.
            pub fn code(self) -> i8 {
                match self {
                    $($name::$variant => $code,)*
                }
            }

            /// The variant of a wire code; `None` for codes Kafka does not know.
            pub fn from_code(code: i8) -> Option<$name> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }

            /// Kafka's Pascal-case name (`IdempotentWrite`).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// Kafka's `SecurityUtils` lookup: the Pascal-case name, or any
            /// case of it with or without underscores (`IDEMPOTENT_WRITE`).
            pub fn from_name(name: &str) -> Option<$name> {
                let wanted: String = name.chars().filter(|c| *c != '_').collect();
                [$($name::$variant),*]
                    .into_iter()
                    .find(|v| v.name().eq_ignore_ascii_case(&wanted))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

kafka_enum! {
    /// `org.apache.kafka.common.resource.ResourceType`.
    ResourceType {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        Topic = 2, "Topic";
        Group = 3, "Group";
        Cluster = 4, "Cluster";
        TransactionalId = 5, "TransactionalId";
        DelegationToken = 6, "DelegationToken";
        User = 7, "User";
    }
}

kafka_enum! {
    /// `org.apache.kafka.common.resource.PatternType`.
    PatternType {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        Match = 2, "Match";
        Literal = 3, "Literal";
        Prefixed = 4, "Prefixed";
    }
}

kafka_enum! {
    /// `org.apache.kafka.common.acl.AclOperation`.
    AclOperation {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        All = 2, "All";
        Read = 3, "Read";
        Write = 4, "Write";
        Create = 5, "Create";
        Delete = 6, "Delete";
        Alter = 7, "Alter";
        Describe = 8, "Describe";
        ClusterAction = 9, "ClusterAction";
        DescribeConfigs = 10, "DescribeConfigs";
        AlterConfigs = 11, "AlterConfigs";
        IdempotentWrite = 12, "IdempotentWrite";
        CreateTokens = 13, "CreateTokens";
        DescribeTokens = 14, "DescribeTokens";
    }
}

kafka_enum! {
    /// `org.apache.kafka.common.acl.AclPermissionType`.
    AclPermissionType {
        Unknown = 0, "Unknown";
        Any = 1, "Any";
        Deny = 2, "Deny";
        Allow = 3, "Allow";
    }
}

impl ResourceType {
    /// The operations an ACL on this type can grant
    /// (`AclEntry.supportedOperations`), the set the KIP-430
    /// `authorized_operations` fields are computed over.
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Unknown | ResourceType::Any => &[],
        }
    }

    /// A type an ACL can be stored for (not a filter's `Any`/`Unknown`).
    pub fn is_specific(self) -> bool {
        !matches!(self, ResourceType::Any | ResourceType::Unknown)
    }
}

/// A resource pattern (`ResourcePattern`): the type, a name and how the
/// name matches (literal, `*` included, or prefixed).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourcePattern {
    // Ordered type, pattern type, name: a type's prefixed patterns are
    // one range of the cache.
    /// The kind of resource.
    pub resource_type: ResourceType,
    /// Literal (with `*`) or prefixed.
    pub pattern_type: PatternType,
    /// The resource's name, or the prefix.
    pub name: String,
}

impl ResourcePattern {
    /// A literal pattern (`*` for every resource of the type).
    pub fn literal(resource_type: ResourceType, name: impl Into<String>) -> ResourcePattern {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type: PatternType::Literal,
        }
    }

    /// A prefixed pattern.
    pub fn prefixed(resource_type: ResourceType, name: impl Into<String>) -> ResourcePattern {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type: PatternType::Prefixed,
        }
    }
}

impl fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type.name().to_ascii_uppercase(),
            self.name,
            self.pattern_type.name().to_ascii_uppercase()
        )
    }
}

/// One entry of a resource's ACL (`AccessControlEntry`): who, from where,
/// which operation, allowed or denied. The principal is kept as Kafka keeps
/// it, `Type:name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccessControlEntry {
    /// `Type:name`, or `User:*` for everyone.
    pub principal: String,
    /// The client address, or `*`.
    pub host: String,
    /// The operation allowed or denied.
    pub operation: AclOperation,
    /// Allow or deny.
    pub permission: AclPermissionType,
}

/// A pattern with one of its entries (`AclBinding`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AclBinding {
    /// Which resources.
    pub pattern: ResourcePattern,
    /// Who may or may not do what.
    pub entry: AccessControlEntry,
}

/// Why an ACL cannot be created (CreateAcls answers INVALID_REQUEST, 42,
/// with this message, as Kafka's `AclApis` does).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAcl {
    #[error("ACL binding contains unknown elements")]
    /// An ANY or UNKNOWN element.
    Unknown,
    #[error("Invalid empty resource name")]
    /// No resource name.
    EmptyName,
    #[error("The only valid name for the CLUSTER resource is {CLUSTER_NAME}")]
    /// A cluster resource not named `kafka-cluster`.
    ClusterName,
    #[error("Invalid principal {0}: expected a string in format principalType:principalName")]
    /// A principal not of the form `Type:name`.
    Principal(String),
}

impl InvalidAcl {
    /// INVALID_REQUEST.
    pub const CODE: i16 = 42;
}

impl AclBinding {
    /// Kafka's checks on a binding to store: every element specific, a
    /// name, `kafka-cluster` for the cluster, a `Type:name` principal.
    pub fn validate(&self) -> Result<(), InvalidAcl> {
        let specific = self.pattern.resource_type.is_specific()
            && matches!(
                self.pattern.pattern_type,
                PatternType::Literal | PatternType::Prefixed
            )
            && !matches!(
                self.entry.operation,
                AclOperation::Any | AclOperation::Unknown
            )
            && !matches!(
                self.entry.permission,
                AclPermissionType::Any | AclPermissionType::Unknown
            );
        if !specific {
            return Err(InvalidAcl::Unknown);
        }
        if self.pattern.name.is_empty() {
            return Err(InvalidAcl::EmptyName);
        }
        if self.pattern.resource_type == ResourceType::Cluster && self.pattern.name != CLUSTER_NAME
        {
            return Err(InvalidAcl::ClusterName);
        }
        match self.entry.principal.split_once(':') {
            Some((kind, _)) if !kind.is_empty() => Ok(()),
            _ => Err(InvalidAcl::Principal(self.entry.principal.clone())),
        }
    }
}

/// Which patterns a DescribeAcls or DeleteAcls filter selects
/// (`ResourcePatternFilter`). `name: None` matches every name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePatternFilter {
    /// The type, or `Any`.
    pub resource_type: ResourceType,
    /// The name; `None` matches every name.
    pub name: Option<String>,
    /// The pattern type, `Any`, or `Match`.
    pub pattern_type: PatternType,
}

impl ResourcePatternFilter {
    /// `ResourcePatternFilter.matches`: ANY with a name matches that exact
    /// name whatever its pattern type; MATCH selects the patterns that
    /// would apply to the named resource (its literal, `*`, prefixes).
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != pattern.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == pattern.pattern_type {
            return *name == pattern.name;
        }
        match pattern.pattern_type {
            PatternType::Literal => *name == pattern.name || pattern.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&pattern.name),
            _ => false,
        }
    }

    /// `matchesAtMostOne`: the filter names one stored pattern exactly.
    pub fn matches_at_most_one(&self) -> bool {
        self.resource_type.is_specific()
            && self.name.is_some()
            && matches!(
                self.pattern_type,
                PatternType::Literal | PatternType::Prefixed
            )
    }

    /// The one pattern a `matches_at_most_one` filter names.
    pub fn exact_pattern(&self) -> Option<ResourcePattern> {
        if !self.matches_at_most_one() {
            return None;
        }
        Some(ResourcePattern {
            resource_type: self.resource_type,
            name: self.name.clone()?,
            pattern_type: self.pattern_type,
        })
    }
}

/// Which entries a filter selects (`AccessControlEntryFilter`); `None`
/// principal or host matches any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryFilter {
    /// `None` matches every principal.
    pub principal: Option<String>,
    /// `None` matches every host.
    pub host: Option<String>,
    /// The operation, or `Any`.
    pub operation: AclOperation,
    /// The permission, or `Any`.
    pub permission: AclPermissionType,
}

impl EntryFilter {
    /// Whether the entry passes the filter.
    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        self.principal
            .as_ref()
            .is_none_or(|p| *p == entry.principal)
            && self.host.as_ref().is_none_or(|h| *h == entry.host)
            && (self.operation == AclOperation::Any || self.operation == entry.operation)
            && (self.permission == AclPermissionType::Any || self.permission == entry.permission)
    }
}

/// A DescribeAcls or DeleteAcls filter (`AclBindingFilter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclBindingFilter {
    /// Which patterns.
    pub pattern: ResourcePatternFilter,
    /// Which of their entries.
    pub entry: EntryFilter,
}

impl AclBindingFilter {
    /// Whether the binding passes the filter.
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }
}

/// The settings the decisions depend on: `super.users` (principals as
/// `Type:name`) and `allow.everyone.if.no.acl.found`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerPolicy {
    /// `super.users`, as `Type:name`.
    pub super_users: BTreeSet<String>,
    /// `allow.everyone.if.no.acl.found`.
    pub allow_everyone_if_no_acl_found: bool,
}

/// Who asks and from where: a principal (`User:alice`) and the client's
/// address as text (`127.0.0.1`), as Kafka compares hosts.
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    /// `Type:name`.
    pub principal: &'a str,
    /// The client's address.
    pub host: &'a str,
}

/// Every stored ACL, by pattern (Kafka's `aclCache`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclCache {
    acls: BTreeMap<ResourcePattern, BTreeSet<AccessControlEntry>>,
}

impl AclCache {
    /// The entries stored for `pattern`.
    pub fn get(&self, pattern: &ResourcePattern) -> Option<&BTreeSet<AccessControlEntry>> {
        self.acls.get(pattern)
    }

    /// Replaces the entries of `pattern` (none removes it), as a reload
    /// of its znode does.
    pub fn set(&mut self, pattern: ResourcePattern, entries: BTreeSet<AccessControlEntry>) {
        if entries.is_empty() {
            self.acls.remove(&pattern);
        } else {
            self.acls.insert(pattern, entries);
        }
    }

    /// Every stored pattern.
    pub fn patterns(&self) -> impl Iterator<Item = &ResourcePattern> {
        self.acls.keys()
    }

    /// The bindings a filter selects, in pattern order.
    pub fn bindings(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        self.acls
            .iter()
            .filter(|(pattern, _)| filter.pattern.matches(pattern))
            .flat_map(|(pattern, entries)| {
                entries.iter().map(|entry| AclBinding {
                    pattern: pattern.clone(),
                    entry: entry.clone(),
                })
            })
            .filter(|binding| filter.entry.matches(&binding.entry))
            .collect()
    }

    /// The entries that apply to one named resource: its literal name,
    /// the literal `*`, and every prefix pattern it starts with.
    fn matching<'a>(
        &'a self,
        resource_type: ResourceType,
        name: &'a str,
    ) -> impl Iterator<Item = &'a AccessControlEntry> + 'a {
        let wildcard = self
            .acls
            .get(&ResourcePattern::literal(resource_type, WILDCARD));
        let literal = self
            .acls
            .get(&ResourcePattern::literal(resource_type, name));
        let prefixed = self
            .acls
            .range(ResourcePattern::prefixed(resource_type, "")..)
            .take_while(move |(p, _)| {
                p.resource_type == resource_type && p.pattern_type == PatternType::Prefixed
            })
            .filter(move |(p, _)| name.starts_with(p.name.as_str()))
            .flat_map(|(_, entries)| entries.iter());
        wildcard
            .into_iter()
            .chain(literal)
            .flat_map(|entries| entries.iter())
            .chain(prefixed)
    }

    /// `AclAuthorizer.authorizeAction` for a literal resource.
    pub fn authorize(
        &self,
        policy: &AuthorizerPolicy,
        requester: Requester<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if policy.super_users.contains(requester.principal) {
            return true;
        }
        let mut any = false;
        let mut allowed = false;
        for entry in self.matching(resource_type, name) {
            any = true;
            if !applies_to(entry, requester) {
                continue;
            }
            match entry.permission {
                AclPermissionType::Deny
                    if entry.operation == operation || entry.operation == AclOperation::All =>
                {
                    return false;
                }
                AclPermissionType::Allow if grants(entry.operation, operation) => allowed = true,
                _ => {}
            }
        }
        if !any {
            return policy.allow_everyone_if_no_acl_found;
        }
        allowed
    }

    /// `AclAuthorizer.authorizeByResourceType`: may the requester do
    /// `operation` on at least one resource of the type (InitProducerId of
    /// an idempotent producer asks this of WRITE on topics)?
    pub fn authorize_by_resource_type(
        &self,
        policy: &AuthorizerPolicy,
        requester: Requester<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if policy.super_users.contains(requester.principal) {
            return true;
        }
        let names = |permission: AclPermissionType, pattern_type: PatternType| {
            self.acls
                .iter()
                .filter(|(p, _)| p.resource_type == resource_type && p.pattern_type == pattern_type)
                .filter(|(_, entries)| {
                    entries.iter().any(|e| {
                        e.permission == permission
                            && applies_to(e, requester)
                            && (e.operation == operation || e.operation == AclOperation::All)
                    })
                })
                .map(|(p, _)| p.name.as_str())
                .collect::<BTreeSet<&str>>()
        };
        let deny_literals = names(AclPermissionType::Deny, PatternType::Literal);
        if deny_literals.contains(WILDCARD) {
            return false;
        }
        if policy.allow_everyone_if_no_acl_found {
            return true;
        }
        let deny_prefixes = names(AclPermissionType::Deny, PatternType::Prefixed);
        let allow_literals = names(AclPermissionType::Allow, PatternType::Literal);
        let allow_prefixes = names(AclPermissionType::Allow, PatternType::Prefixed);
        // A prefixed DENY that is a prefix of the name covers it.
        let dominated = |name: &str| {
            (1..=name.len())
                .filter(|end| name.is_char_boundary(*end))
                .any(|end| deny_prefixes.contains(&name[..end]))
        };
        allow_prefixes.iter().any(|prefix| !dominated(prefix))
            || allow_literals.iter().any(|literal| {
                *literal == WILDCARD || (!deny_literals.contains(literal) && !dominated(literal))
            })
    }

    /// The KIP-430 bit field of the operations the requester may do on a
    /// resource, over the type's supported operations.
    pub fn authorized_operations(
        &self,
        policy: &AuthorizerPolicy,
        requester: Requester<'_>,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        resource_type
            .supported_operations()
            .iter()
            .filter(|op| self.authorize(policy, requester, **op, resource_type, name))
            .fold(0, |bits, op| bits | 1 << op.code())
    }
}

/// Whether the entry names this principal (or `User:*`) and host (or `*`).
fn applies_to(entry: &AccessControlEntry, requester: Requester<'_>) -> bool {
    (entry.principal == requester.principal || entry.principal == WILDCARD_PRINCIPAL)
        && (entry.host == requester.host || entry.host == WILDCARD)
}

/// Whether an ALLOW of `granted` allows `asked`: itself, ALL, and the
/// implications Kafka gives DESCRIBE and DESCRIBE_CONFIGS.
fn grants(granted: AclOperation, asked: AclOperation) -> bool {
    use AclOperation::*;
    granted == asked
        || granted == All
        || (asked == Describe && matches!(granted, Read | Write | Delete | Alter))
        || (asked == DescribeConfigs && granted == AlterConfigs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(
        principal: &str,
        host: &str,
        op: AclOperation,
        perm: AclPermissionType,
    ) -> AccessControlEntry {
        AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation: op,
            permission: perm,
        }
    }

    fn cache(bindings: &[(ResourcePattern, AccessControlEntry)]) -> AclCache {
        let mut cache = AclCache::default();
        for (pattern, e) in bindings {
            let mut entries = cache.get(pattern).cloned().unwrap_or_default();
            entries.insert(e.clone());
            cache.set(pattern.clone(), entries);
        }
        cache
    }

    const ALICE: Requester<'static> = Requester {
        principal: "User:alice",
        host: "10.0.0.1",
    };
    const BOB: Requester<'static> = Requester {
        principal: "User:bob",
        host: "10.0.0.2",
    };

    use AclOperation::*;
    use AclPermissionType::{Allow, Deny};
    use ResourceType::{Cluster, Group, Topic};

    #[test]
    fn no_acl_follows_allow_everyone() {
        let empty = AclCache::default();
        let closed = AuthorizerPolicy::default();
        let open = AuthorizerPolicy {
            allow_everyone_if_no_acl_found: true,
            ..Default::default()
        };
        assert!(!empty.authorize(&closed, ALICE, Write, Topic, "t"));
        assert!(empty.authorize(&open, ALICE, Write, Topic, "t"));
        // An ACL for someone else on the topic: no longer "no ACL found".
        let c = cache(&[(
            ResourcePattern::literal(Topic, "t"),
            entry("User:bob", "*", Write, Allow),
        )]);
        assert!(!c.authorize(&open, ALICE, Write, Topic, "t"));
        assert!(c.authorize(&open, BOB, Write, Topic, "t"));
        // Other topics still have none.
        assert!(c.authorize(&open, ALICE, Write, Topic, "u"));
    }

    #[test]
    fn super_users_pass_everything() {
        let c = cache(&[(
            ResourcePattern::literal(Topic, "t"),
            entry("User:alice", "*", All, Deny),
        )]);
        let policy = AuthorizerPolicy {
            super_users: ["User:alice".to_string()].into(),
            ..Default::default()
        };
        assert!(c.authorize(&policy, ALICE, Write, Topic, "t"));
        assert!(c.authorize(&policy, ALICE, ClusterAction, Cluster, CLUSTER_NAME));
        assert!(!c.authorize(&policy, BOB, Write, Topic, "t"));
    }

    #[test]
    fn deny_beats_allow_and_wildcards_match() {
        let c = cache(&[
            (
                ResourcePattern::literal(Topic, "*"),
                entry("User:*", "*", Write, Allow),
            ),
            (
                ResourcePattern::literal(Topic, "secret"),
                entry("User:bob", "*", Write, Deny),
            ),
        ]);
        let p = AuthorizerPolicy::default();
        assert!(c.authorize(&p, ALICE, Write, Topic, "secret"));
        assert!(!c.authorize(&p, BOB, Write, Topic, "secret"));
        assert!(c.authorize(&p, BOB, Write, Topic, "public"));
        // WRITE does not grant READ, but implies DESCRIBE.
        assert!(!c.authorize(&p, BOB, Read, Topic, "public"));
        assert!(c.authorize(&p, BOB, Describe, Topic, "public"));
        // A DENY of WRITE does not deny DESCRIBE implied by another ALLOW.
        assert!(c.authorize(&p, BOB, Describe, Topic, "secret"));
    }

    #[test]
    fn hosts_are_matched_exactly_or_by_wildcard() {
        let c = cache(&[(
            ResourcePattern::literal(Topic, "t"),
            entry("User:alice", "10.0.0.1", Read, Allow),
        )]);
        let p = AuthorizerPolicy::default();
        assert!(c.authorize(&p, ALICE, Read, Topic, "t"));
        let elsewhere = Requester {
            principal: "User:alice",
            host: "10.0.0.9",
        };
        assert!(!c.authorize(&p, elsewhere, Read, Topic, "t"));
    }

    #[test]
    fn implications_follow_kafka() {
        let p = AuthorizerPolicy::default();
        for (granted, implied) in [
            (Read, Describe),
            (Write, Describe),
            (Delete, Describe),
            (Alter, Describe),
            (AlterConfigs, DescribeConfigs),
            (All, ClusterAction),
        ] {
            let c = cache(&[(
                ResourcePattern::literal(Topic, "t"),
                entry("User:alice", "*", granted, Allow),
            )]);
            assert!(
                c.authorize(&p, ALICE, implied, Topic, "t"),
                "{granted} implies {implied}"
            );
        }
        let c = cache(&[(
            ResourcePattern::literal(Topic, "t"),
            entry("User:alice", "*", Describe, Allow),
        )]);
        assert!(!c.authorize(&p, ALICE, Read, Topic, "t"));
        let c = cache(&[(
            ResourcePattern::literal(Topic, "t"),
            entry("User:alice", "*", DescribeConfigs, Allow),
        )]);
        assert!(!c.authorize(&p, ALICE, AlterConfigs, Topic, "t"));
    }

    #[test]
    fn prefixed_patterns_cover_names_that_start_with_them() {
        let c = cache(&[
            (
                ResourcePattern::prefixed(Topic, "orders-"),
                entry("User:alice", "*", Read, Allow),
            ),
            (
                ResourcePattern::prefixed(Topic, "orders-eu"),
                entry("User:alice", "*", Read, Deny),
            ),
            (
                ResourcePattern::prefixed(Group, "orders-"),
                entry("User:alice", "*", Read, Allow),
            ),
        ]);
        let p = AuthorizerPolicy::default();
        assert!(c.authorize(&p, ALICE, Read, Topic, "orders-us"));
        assert!(!c.authorize(&p, ALICE, Read, Topic, "orders-eu-1"));
        assert!(!c.authorize(&p, ALICE, Read, Topic, "order"));
        assert!(c.authorize(&p, ALICE, Read, Group, "orders-app"));
    }

    #[test]
    fn by_resource_type_follows_kafka() {
        let p = AuthorizerPolicy::default();
        let empty = AclCache::default();
        assert!(!empty.authorize_by_resource_type(&p, ALICE, Write, Topic));
        let c = cache(&[(
            ResourcePattern::literal(Topic, "t"),
            entry("User:alice", "*", Write, Allow),
        )]);
        assert!(c.authorize_by_resource_type(&p, ALICE, Write, Topic));
        assert!(!c.authorize_by_resource_type(&p, BOB, Write, Topic));
        // Denied on the literal it is allowed on: nothing left.
        let c = cache(&[
            (
                ResourcePattern::literal(Topic, "t"),
                entry("User:alice", "*", Write, Allow),
            ),
            (
                ResourcePattern::literal(Topic, "t"),
                entry("User:alice", "*", Write, Deny),
            ),
        ]);
        assert!(!c.authorize_by_resource_type(&p, ALICE, Write, Topic));
        // A prefix deny dominating the allowed literal.
        let c = cache(&[
            (
                ResourcePattern::literal(Topic, "abc"),
                entry("User:alice", "*", Write, Allow),
            ),
            (
                ResourcePattern::prefixed(Topic, "ab"),
                entry("User:alice", "*", Write, Deny),
            ),
        ]);
        assert!(!c.authorize_by_resource_type(&p, ALICE, Write, Topic));
        // A deny on the wildcard denies all, even with allow.everyone.
        let open = AuthorizerPolicy {
            allow_everyone_if_no_acl_found: true,
            ..Default::default()
        };
        let c = cache(&[(
            ResourcePattern::literal(Topic, "*"),
            entry("User:*", "*", All, Deny),
        )]);
        assert!(!c.authorize_by_resource_type(&open, ALICE, Write, Topic));
        assert!(empty.authorize_by_resource_type(&open, ALICE, Write, Topic));
    }

    #[test]
    fn filters_select_as_kafka_does() {
        let c = cache(&[
            (
                ResourcePattern::literal(Topic, "t"),
                entry("User:alice", "*", Read, Allow),
            ),
            (
                ResourcePattern::literal(Topic, "*"),
                entry("User:bob", "*", Read, Allow),
            ),
            (
                ResourcePattern::prefixed(Topic, "t"),
                entry("User:carol", "*", Write, Deny),
            ),
            (
                ResourcePattern::literal(Group, "t"),
                entry("User:alice", "*", Read, Allow),
            ),
        ]);
        let any_entry = EntryFilter {
            principal: None,
            host: None,
            operation: Any,
            permission: AclPermissionType::Any,
        };
        let select = |resource_type, name: Option<&str>, pattern_type| {
            c.bindings(&AclBindingFilter {
                pattern: ResourcePatternFilter {
                    resource_type,
                    name: name.map(String::from),
                    pattern_type,
                },
                entry: any_entry.clone(),
            })
            .len()
        };
        assert_eq!(select(ResourceType::Any, None, PatternType::Any), 4);
        assert_eq!(select(Topic, None, PatternType::Any), 3);
        assert_eq!(select(Topic, Some("t"), PatternType::Any), 2);
        assert_eq!(select(Topic, Some("t"), PatternType::Literal), 1);
        assert_eq!(select(Topic, Some("tx"), PatternType::Match), 2);
        assert_eq!(select(Topic, Some("t"), PatternType::Match), 3);
        assert_eq!(select(Topic, None, PatternType::Prefixed), 1);
        let by_principal = c.bindings(&AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: ResourceType::Any,
                name: None,
                pattern_type: PatternType::Any,
            },
            entry: EntryFilter {
                principal: Some("User:alice".into()),
                ..any_entry.clone()
            },
        });
        assert_eq!(by_principal.len(), 2);
    }

    #[test]
    fn authorized_operations_are_filtered() {
        let p = AuthorizerPolicy::default();
        let c = cache(&[(
            ResourcePattern::literal(Topic, "t"),
            entry("User:alice", "*", Read, Allow),
        )]);
        assert_eq!(
            c.authorized_operations(&p, ALICE, Topic, "t"),
            1 << Read.code() | 1 << Describe.code()
        );
        let super_user = AuthorizerPolicy {
            super_users: ["User:alice".to_string()].into(),
            ..Default::default()
        };
        // Kafka's value without an authorizer.
        assert_eq!(
            c.authorized_operations(&super_user, ALICE, Topic, "t"),
            3576
        );
    }

    #[test]
    fn validation_refuses_what_kafka_refuses() {
        let binding = |resource_type, name: &str, op, principal: &str| AclBinding {
            pattern: ResourcePattern::literal(resource_type, name),
            entry: entry(principal, "*", op, Allow),
        };
        assert_eq!(binding(Topic, "t", Read, "User:a").validate(), Ok(()));
        assert_eq!(
            binding(Topic, "t", Any, "User:a").validate(),
            Err(InvalidAcl::Unknown)
        );
        assert_eq!(
            binding(Topic, "", Read, "User:a").validate(),
            Err(InvalidAcl::EmptyName)
        );
        assert_eq!(
            binding(Cluster, "c", Alter, "User:a").validate(),
            Err(InvalidAcl::ClusterName)
        );
        assert!(matches!(
            binding(Topic, "t", Read, "alice").validate(),
            Err(InvalidAcl::Principal(_))
        ));
    }

    #[test]
    fn names_parse_as_kafka_spells_them() {
        assert_eq!(
            AclOperation::from_name("IdempotentWrite"),
            Some(IdempotentWrite)
        );
        assert_eq!(
            AclOperation::from_name("IDEMPOTENT_WRITE"),
            Some(IdempotentWrite)
        );
        assert_eq!(
            ResourceType::from_name("TRANSACTIONAL_ID"),
            Some(ResourceType::TransactionalId)
        );
        assert_eq!(ResourceType::from_name("TOPIC"), Some(Topic));
        assert_eq!(AclPermissionType::from_name("Deny"), Some(Deny));
        assert_eq!(AclOperation::from_name("Nope"), None);
        assert_eq!(AclOperation::from_code(12), Some(IdempotentWrite));
    }
}
