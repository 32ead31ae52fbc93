//! `authorizer.class.name=kafka.security.authorizer.AclAuthorizer`: ACLs
//! kept in the metadata store exactly as Kafka's ZooKeeper-era authorizer
//! keeps them (`/kafka-acl/<Type>/<name>`, prefixed patterns under
//! `/kafka-acl-extended/prefixed/`, a sequential notification per change
//! under `/kafka-acl-changes` or `/kafka-acl-extended-changes`), so ACLs
//! written by Kafka's `kafka-acls` tool, by another broker or by this one
//! apply on every broker. Decisions read an in-memory [`AclCache`]
//! snapshot and never wait on the store; `actors::acl_change_listener`
//! feeds the notifications in.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};

use super::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclCache, AclOperation, AuthorizerPolicy,
    InvalidAcl, PatternType, ResourcePattern, ResourceType,
};
use super::Session;
use crate::metadata::store::{CreateMode, MetadataError, MetadataStore};
use crate::metadata::znodes::{AclChangeNotification, AclZNode};

/// Why an ACL change failed, with the Kafka code its result carries.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AclError {
    /// INVALID_REQUEST (42).
    #[error("Failed to create ACL: {0}")]
    Invalid(#[from] InvalidAcl),
    /// UNKNOWN_SERVER_ERROR (-1): the store failed.
    #[error("the metadata store failed: {0}")]
    Store(String),
    /// UNKNOWN_SERVER_ERROR (-1): other writers kept changing the znode.
    #[error("the ACL of {0} kept changing; try again")]
    Contended(ResourcePattern),
}

impl From<MetadataError> for AclError {
    fn from(e: MetadataError) -> AclError {
        AclError::Store(e.to_string())
    }
}

impl AclError {
    /// The Kafka error code a result carries.
    pub fn code(&self) -> i16 {
        match self {
            AclError::Invalid(_) => InvalidAcl::CODE,
            AclError::Store(_) | AclError::Contended(_) => -1,
        }
    }
}

/// Conditional updates of one ACL znode tried before giving up (Kafka
/// retries without bound; a bound keeps a request from hanging).
const UPDATE_ATTEMPTS: usize = 20;

/// The authorizer: the policy from the broker config, the cache, and the
/// store it reads and writes.
#[derive(Debug)]
pub struct AclAuthorizer {
    policy: AuthorizerPolicy,
    store: Arc<dyn MetadataStore>,
    /// Replaced whole on every change, so a decision reads one consistent
    /// snapshot (Kafka's `@volatile aclCache`).
    cache: RwLock<Arc<AclCache>>,
    /// The highest notification sequence handled, per change path.
    handled: Mutex<BTreeMap<&'static str, i64>>,
    /// This broker's writes one at a time (Kafka's `lock`); other brokers'
    /// are ordered by the znodes' versions.
    writes: tokio::sync::Mutex<()>,
}

impl AclAuthorizer {
    /// Creates the ACL roots if missing and loads every stored ACL, as
    /// `AclAuthorizer.configure`/`start` do. Notifications already present
    /// are covered by the load.
    pub async fn start(
        store: Arc<dyn MetadataStore>,
        policy: AuthorizerPolicy,
    ) -> Result<Arc<AclAuthorizer>, MetadataError> {
        for root in AclZNode::ROOTS {
            match store
                .create_recursive(root, Vec::new(), CreateMode::Persistent)
                .await
            {
                Ok(()) | Err(MetadataError::NodeExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let authorizer = AclAuthorizer {
            policy,
            store,
            cache: RwLock::new(Arc::default()),
            handled: Mutex::default(),
            writes: tokio::sync::Mutex::new(()),
        };
        for path in [
            AclChangeNotification::LITERAL_PATH,
            AclChangeNotification::EXTENDED_PATH,
        ] {
            let last = authorizer
                .store
                .children(path)
                .await?
                .iter()
                .filter_map(|name| AclChangeNotification::sequence(name))
                .max()
                .unwrap_or(-1);
            authorizer.note_handled(path, last);
        }
        authorizer.load_all().await?;
        log::info!(
            "authorizer kafka.security.authorizer.AclAuthorizer started: {} ACL binding(s), super.users={:?}, allow.everyone.if.no.acl.found={}",
            authorizer.snapshot().patterns().map(|p| authorizer.snapshot().get(p).map_or(0, |e| e.len())).sum::<usize>(),
            authorizer.policy.super_users,
            authorizer.policy.allow_everyone_if_no_acl_found
        );
        Ok(Arc::new(authorizer))
    }

    /// The cache as it is now.
    pub fn snapshot(&self) -> Arc<AclCache> {
        match self.cache.read() {
            Ok(cache) => cache.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn replace(&self, pattern: ResourcePattern, entries: BTreeSet<AccessControlEntry>) {
        let mut cache = match self.cache.write() {
            Ok(cache) => cache,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut next = AclCache::clone(&cache);
        next.set(pattern, entries);
        *cache = Arc::new(next);
    }

    fn note_handled(&self, path: &'static str, sequence: i64) {
        let mut handled = match self.handled.lock() {
            Ok(handled) => handled,
            Err(poisoned) => poisoned.into_inner(),
        };
        let last = handled.entry(path).or_insert(-1);
        *last = (*last).max(sequence);
    }

    fn last_handled(&self, path: &'static str) -> i64 {
        match self.handled.lock() {
            Ok(handled) => handled.get(path).copied().unwrap_or(-1),
            Err(poisoned) => poisoned.into_inner().get(path).copied().unwrap_or(-1),
        }
    }

    /// May this session do `operation` on the named resource?
    pub fn authorize(
        &self,
        session: &Session,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        let allowed = self.snapshot().authorize(
            &self.policy,
            session.requester(),
            operation,
            resource_type,
            name,
        );
        if !allowed {
            // Kafka's kafka.authorizer.logger logs denials at INFO.
            log::info!(
                "Principal = {} is Denied Operation = {} from host = {} on resource = {}",
                session.principal,
                operation,
                session.host,
                ResourcePattern::literal(resource_type, name)
            );
        }
        allowed
    }

    /// May this session do `operation` on some resource of the type?
    pub fn authorize_by_resource_type(
        &self,
        session: &Session,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        self.snapshot().authorize_by_resource_type(
            &self.policy,
            session.requester(),
            operation,
            resource_type,
        )
    }

    /// The KIP-430 `authorized_operations` bits for a resource.
    pub fn authorized_operations(
        &self,
        session: &Session,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        self.snapshot().authorized_operations(
            &self.policy,
            session.requester(),
            resource_type,
            name,
        )
    }

    /// DescribeAcls: the bindings the filter selects.
    pub fn describe(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        self.snapshot().bindings(filter)
    }

    /// CreateAcls: each binding's result, in order. Bindings of one
    /// pattern are written in one update of its znode.
    pub async fn create(&self, bindings: Vec<AclBinding>) -> Vec<Result<(), AclError>> {
        let _writing = self.writes.lock().await;
        let mut results: Vec<Option<Result<(), AclError>>> = Vec::new();
        let mut by_pattern: BTreeMap<ResourcePattern, Vec<(usize, AccessControlEntry)>> =
            BTreeMap::new();
        for (index, binding) in bindings.into_iter().enumerate() {
            match binding.validate() {
                Ok(()) => {
                    results.push(None);
                    by_pattern
                        .entry(binding.pattern)
                        .or_default()
                        .push((index, binding.entry));
                }
                Err(e) => results.push(Some(Err(AclError::Invalid(e)))),
            }
        }
        for (pattern, entries) in by_pattern {
            let added: Vec<AccessControlEntry> = entries.iter().map(|(_, e)| e.clone()).collect();
            let outcome = self
                .update(&pattern, |current| {
                    let mut next = current.clone();
                    next.extend(added.iter().cloned());
                    next
                })
                .await;
            for (index, _) in &entries {
                results[*index] = Some(match &outcome {
                    Ok(_) => Ok(()),
                    Err(e) => Err(e.clone()),
                });
            }
        }
        results.into_iter().map(|r| r.unwrap_or(Ok(()))).collect()
    }

    /// DeleteAcls: per filter, the bindings it deleted (or the error of
    /// the pattern they were in). A binding two filters match counts for
    /// the first, as in Kafka.
    pub async fn delete(
        &self,
        filters: &[AclBindingFilter],
    ) -> Vec<Vec<(AclBinding, Result<(), AclError>)>> {
        let _writing = self.writes.lock().await;
        let cache = self.snapshot();
        let mut patterns: BTreeSet<ResourcePattern> = cache.patterns().cloned().collect();
        // A filter naming one pattern reaches it even if this broker has
        // not heard of it yet (Kafka's `filterToResources`).
        patterns.extend(filters.iter().filter_map(|f| f.pattern.exact_pattern()));
        let mut results: Vec<Vec<(AclBinding, Result<(), AclError>)>> =
            filters.iter().map(|_| Vec::new()).collect();
        for pattern in patterns {
            let matching: Vec<usize> = filters
                .iter()
                .enumerate()
                .filter(|(_, f)| f.pattern.matches(&pattern))
                .map(|(i, _)| i)
                .collect();
            if matching.is_empty() {
                continue;
            }
            let removed: Mutex<Vec<(usize, AccessControlEntry)>> = Mutex::default();
            let outcome = self
                .update(&pattern, |current| {
                    let mut gone = Vec::new();
                    let next = current
                        .iter()
                        .filter(|entry| {
                            match matching.iter().find(|i| filters[**i].entry.matches(entry)) {
                                Some(i) => {
                                    gone.push((*i, (*entry).clone()));
                                    false
                                }
                                None => true,
                            }
                        })
                        .cloned()
                        .collect();
                    if let Ok(mut removed) = removed.lock() {
                        *removed = gone;
                    }
                    next
                })
                .await;
            let removed = removed.into_inner().unwrap_or_default();
            for (index, entry) in removed {
                let binding = AclBinding {
                    pattern: pattern.clone(),
                    entry,
                };
                let result = match &outcome {
                    Ok(_) => Ok(()),
                    Err(e) => Err(e.clone()),
                };
                results[index].push((binding, result));
            }
        }
        results
    }

    /// Reads `pattern`'s znode, applies `change`, and writes the result
    /// back conditionally on the version read (deleting the znode when no
    /// entry is left), then announces the change. Retries when another
    /// writer got in between. `Ok(false)`: nothing changed.
    async fn update<F>(&self, pattern: &ResourcePattern, change: F) -> Result<bool, AclError>
    where
        F: Fn(&BTreeSet<AccessControlEntry>) -> BTreeSet<AccessControlEntry>,
    {
        let Some(path) = AclZNode::path(pattern) else {
            return Err(AclError::Invalid(InvalidAcl::Unknown));
        };
        for _ in 0..UPDATE_ATTEMPTS {
            let (current, version) = match self.store.get(&path).await? {
                Some((bytes, stat)) => (AclZNode::decode(pattern, &bytes)?, Some(stat.version)),
                None => (BTreeSet::new(), None),
            };
            let next = change(&current);
            if next == current {
                self.replace(pattern.clone(), current);
                return Ok(false);
            }
            let written = match (next.is_empty(), version) {
                (true, Some(version)) => self.store.delete(&path, Some(version)).await,
                (true, None) => Ok(()),
                (false, Some(version)) => self
                    .store
                    .set(&path, AclZNode::encode(&next), Some(version))
                    .await
                    .map(|_| ()),
                (false, None) => {
                    self.store
                        .create_recursive(&path, AclZNode::encode(&next), CreateMode::Persistent)
                        .await
                }
            };
            match written {
                Ok(()) => {
                    self.replace(pattern.clone(), next);
                    let (prefix, data) = AclChangeNotification::encode(pattern);
                    self.store.create_sequential(&prefix, data).await?;
                    return Ok(true);
                }
                Err(
                    MetadataError::BadVersion { .. }
                    | MetadataError::NodeExists(_)
                    | MetadataError::NoNode(_)
                    | MetadataError::NotEmpty(_),
                ) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(AclError::Contended(pattern.clone()))
    }

    /// Reads every stored ACL into a fresh cache (`loadAllAcls`).
    async fn load_all(&self) -> Result<(), MetadataError> {
        let mut cache = AclCache::default();
        for pattern_type in [PatternType::Literal, PatternType::Prefixed] {
            let Some(root) = AclZNode::root(pattern_type) else {
                continue;
            };
            let types = match self.store.children(&root).await {
                Ok(types) => types,
                Err(MetadataError::NoNode(_)) => continue,
                Err(e) => return Err(e),
            };
            for type_name in types {
                let Some(resource_type) =
                    ResourceType::from_name(&type_name).filter(|t| t.is_specific())
                else {
                    log::warn!("ignoring ACLs of unknown resource type {root}/{type_name}");
                    continue;
                };
                let names = match self.store.children(&format!("{root}/{type_name}")).await {
                    Ok(names) => names,
                    Err(MetadataError::NoNode(_)) => continue,
                    Err(e) => return Err(e),
                };
                for name in names {
                    let pattern = ResourcePattern {
                        resource_type,
                        pattern_type,
                        name,
                    };
                    cache.set(pattern.clone(), self.read(&pattern).await?);
                }
            }
        }
        match self.cache.write() {
            Ok(mut current) => *current = Arc::new(cache),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(cache),
        }
        Ok(())
    }

    /// One pattern's entries as stored; a corrupt znode counts as empty
    /// with a log line (one bad znode must not open or close everything).
    async fn read(
        &self,
        pattern: &ResourcePattern,
    ) -> Result<BTreeSet<AccessControlEntry>, MetadataError> {
        let Some(path) = AclZNode::path(pattern) else {
            return Ok(BTreeSet::new());
        };
        match self.store.get(&path).await? {
            None => Ok(BTreeSet::new()),
            Some((bytes, _)) => match AclZNode::decode(pattern, &bytes) {
                Ok(entries) => Ok(entries),
                Err(e) => {
                    log::error!("ignoring the ACL of {pattern}: {e}");
                    Ok(BTreeSet::new())
                }
            },
        }
    }

    /// Handles the notifications under `change_path` not handled yet (its
    /// children, as a watch delivered them): each names a pattern whose
    /// znode is read again (`AclChangedNotificationHandler`).
    pub async fn process_changes(
        &self,
        change_path: &'static str,
        children: &[String],
    ) -> Result<(), MetadataError> {
        let last = self.last_handled(change_path);
        let mut fresh: Vec<(i64, &String)> = children
            .iter()
            .filter_map(|name| Some((AclChangeNotification::sequence(name)?, name)))
            .filter(|(sequence, _)| *sequence > last)
            .collect();
        fresh.sort();
        for (sequence, name) in fresh {
            let path = format!("{change_path}/{name}");
            if let Some((bytes, _)) = self.store.get(&path).await? {
                match AclChangeNotification::decode(change_path, &bytes) {
                    Ok(pattern) => {
                        let entries = self.read(&pattern).await?;
                        log::debug!("ACL of {pattern} changed: {} entries", entries.len());
                        self.replace(pattern, entries);
                    }
                    Err(e) => log::warn!("ignoring ACL change notification {path}: {e}"),
                }
            }
            self.note_handled(change_path, sequence);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::embedded::EmbeddedStore;
    use crate::security::acl::{AclPermissionType, EntryFilter, ResourcePatternFilter};
    use crate::security::KafkaPrincipal;

    fn session(user: &str) -> Session {
        Session {
            principal: KafkaPrincipal::user(user),
            host: "127.0.0.1".into(),
        }
    }

    fn allow(user: &str, operation: AclOperation, pattern: ResourcePattern) -> AclBinding {
        AclBinding {
            pattern,
            entry: AccessControlEntry {
                principal: format!("User:{user}"),
                host: "*".into(),
                operation,
                permission: AclPermissionType::Allow,
            },
        }
    }

    fn all() -> AclBindingFilter {
        AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: ResourceType::Any,
                name: None,
                pattern_type: PatternType::Any,
            },
            entry: EntryFilter {
                principal: None,
                host: None,
                operation: AclOperation::Any,
                permission: AclPermissionType::Any,
            },
        }
    }

    /// One broker's CreateAcls reaches another broker's authorizer through
    /// the znode and its notification; DeleteAcls likewise; a restart
    /// loads what is stored.
    #[tokio::test(flavor = "current_thread")]
    async fn acls_written_by_one_authorizer_apply_at_another() {
        let store: Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
        let one = AclAuthorizer::start(store.clone(), AuthorizerPolicy::default())
            .await
            .expect("starts");
        let two = AclAuthorizer::start(store.clone(), AuthorizerPolicy::default())
            .await
            .expect("starts");
        let orders = ResourcePattern::literal(ResourceType::Topic, "orders");
        let results = one
            .create(vec![
                allow("alice", AclOperation::Write, orders.clone()),
                allow(
                    "alice",
                    AclOperation::Read,
                    ResourcePattern::prefixed(ResourceType::Group, "app-"),
                ),
                allow("alice", AclOperation::Any, orders.clone()),
            ])
            .await;
        assert!(results[0].is_ok() && results[1].is_ok());
        assert_eq!(results[2].as_ref().map_err(|e| e.code()), Err(42));
        assert!(one.authorize(
            &session("alice"),
            AclOperation::Write,
            ResourceType::Topic,
            "orders"
        ));
        assert!(!two.authorize(
            &session("alice"),
            AclOperation::Write,
            ResourceType::Topic,
            "orders"
        ));
        for path in [
            AclChangeNotification::LITERAL_PATH,
            AclChangeNotification::EXTENDED_PATH,
        ] {
            let children = store.children(path).await.expect("notifications");
            assert_eq!(children.len(), 1, "{path}: {children:?}");
            two.process_changes(path, &children)
                .await
                .expect("processed");
        }
        assert!(two.authorize(
            &session("alice"),
            AclOperation::Write,
            ResourceType::Topic,
            "orders"
        ));
        assert!(two.authorize(
            &session("alice"),
            AclOperation::Read,
            ResourceType::Group,
            "app-1"
        ));
        assert!(!two.authorize(
            &session("bob"),
            AclOperation::Write,
            ResourceType::Topic,
            "orders"
        ));
        assert_eq!(two.describe(&all()).len(), 2);

        let mut only_write = all();
        only_write.entry.operation = AclOperation::Write;
        let deleted = two.delete(&[only_write, all()]).await;
        assert_eq!(deleted[0].len(), 1, "{deleted:?}");
        assert_eq!(deleted[1].len(), 1, "{deleted:?}");
        assert!(store
            .get("/kafka-acl/Topic/orders")
            .await
            .expect("read")
            .is_none());
        let children = store
            .children(AclChangeNotification::LITERAL_PATH)
            .await
            .expect("notifications");
        one.process_changes(AclChangeNotification::LITERAL_PATH, &children)
            .await
            .expect("processed");
        assert!(!one.authorize(
            &session("alice"),
            AclOperation::Write,
            ResourceType::Topic,
            "orders"
        ));

        // What Kafka's tool writes straight into ZooKeeper loads at start.
        store
            .create_recursive(
                "/kafka-acl/Cluster/kafka-cluster",
                br#"{"version":1,"acls":[{"principal":"User:broker","permissionType":"Allow","operation":"ClusterAction","host":"*"}]}"#.to_vec(),
                CreateMode::Persistent,
            )
            .await
            .expect("written");
        let three = AclAuthorizer::start(store, AuthorizerPolicy::default())
            .await
            .expect("starts");
        assert!(three.authorize(
            &session("broker"),
            AclOperation::ClusterAction,
            ResourceType::Cluster,
            "kafka-cluster"
        ));
        assert!(!three.authorize(
            &session("alice"),
            AclOperation::ClusterAction,
            ResourceType::Cluster,
            "kafka-cluster"
        ));
    }
}
