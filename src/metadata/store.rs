//! The one interface every metadata backend implements: ZooKeeper's data
//! model (a tree of znodes addressed by absolute paths, each holding bytes and
//! a data version, persistent or ephemeral, with one-shot watches) reduced to
//! the operations Kafka's controller and brokers use. The embedded store
//! implements it today; the ZooKeeper client will implement it unchanged, so
//! every method is async and every error is one a ZooKeeper server could
//! return. This file also owns the path rules, so both backends reject the
//! same paths.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use tokio::sync::oneshot;

/// What every store method returns: a boxed future, so the trait stays
/// object-safe (`Arc<dyn MetadataStore>`) without an async-trait macro.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, MetadataError>> + Send + 'a>>;

/// The largest znode payload accepted: ZooKeeper's default `jute.maxbuffer`
/// (0xfffff bytes). Enforced in the embedded store too, so data that works
/// without ZooKeeper keeps working with it.
pub const MAX_DATA_BYTES: usize = 0xfffff;

/// How a znode outlives its creator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Stays until deleted.
    Persistent,
    /// Vanishes when the creating session ends (a broker registration, the
    /// controller claim). Ephemeral znodes cannot have children.
    Ephemeral,
}

/// The part of ZooKeeper's `Stat` that Kafka relies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// ZooKeeper's `dataVersion`: 0 on create, +1 per `set`. Conditional
    /// writes (`expected_version`) compare against it; Kafka keeps it as the
    /// partition state's `zkVersion`.
    pub version: i32,
    /// ZooKeeper's `czxid`: the transaction that created the znode, which
    /// only grows. Kafka takes a broker registration's as the broker epoch
    /// (KIP-380).
    pub creation_zxid: i64,
    /// ZooKeeper's `ephemeralOwner`: the session that owns an ephemeral
    /// znode, 0 for a persistent one.
    pub ephemeral_owner: i64,
}

/// What a one-shot watch reports, named as ZooKeeper's `EventType`s; each
/// carries the path of the znode it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // ZooKeeper's own event names
pub enum WatchedEvent {
    NodeCreated(String),
    NodeDeleted(String),
    NodeDataChanged(String),
    NodeChildrenChanged(String),
}

impl WatchedEvent {
    /// The znode the event concerns.
    pub fn path(&self) -> &str {
        match self {
            WatchedEvent::NodeCreated(p)
            | WatchedEvent::NodeDeleted(p)
            | WatchedEvent::NodeDataChanged(p)
            | WatchedEvent::NodeChildrenChanged(p) => p,
        }
    }
}

/// One operation of a `multi` transaction, as ZooKeeper's `Op`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOp {
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
    },
    Set {
        path: String,
        data: Vec<u8>,
        expected_version: Option<i32>,
    },
    Delete {
        path: String,
        expected_version: Option<i32>,
    },
    /// Fails the transaction unless `path` is at `version` (Kafka's
    /// controller-epoch guard).
    Check { path: String, version: i32 },
}

impl StoreOp {
    pub fn path(&self) -> &str {
        match self {
            StoreOp::Create { path, .. }
            | StoreOp::Set { path, .. }
            | StoreOp::Delete { path, .. }
            | StoreOp::Check { path, .. } => path,
        }
    }

    /// A persistent create.
    pub fn create(path: impl Into<String>, data: Vec<u8>) -> StoreOp {
        StoreOp::Create {
            path: path.into(),
            data,
            mode: CreateMode::Persistent,
        }
    }
}

/// Every way a metadata operation fails. The first group mirrors ZooKeeper's
/// `KeeperException` codes so callers handle both backends alike.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("znode {0} does not exist")]
    NoNode(String),
    #[error("znode {0} already exists")]
    NodeExists(String),
    #[error("znode {path} is at version {actual}, not the expected version {expected}")]
    BadVersion {
        path: String,
        expected: i32,
        actual: i32,
    },
    #[error("znode {0} has children")]
    NotEmpty(String),
    #[error("znode {0} is ephemeral and cannot have children")]
    NoChildrenForEphemerals(String),
    #[error(
        "invalid znode path {0:?}: paths are absolute, '/'-separated, without a trailing '/', \
         empty, '.' or '..' segments, or control characters (and '/' cannot be created or deleted)"
    )]
    InvalidPath(String),
    #[error("data for znode {path} is {size} bytes, over the {max}-byte limit")]
    DataTooLarge {
        path: String,
        size: usize,
        max: usize,
    },
    #[error("too many outstanding watches on {path} (limit {limit})")]
    TooManyWatches { path: String, limit: usize },
    /// The ZooKeeper connection dropped; the outcome of the operation is
    /// unknown. Never returned by the embedded store.
    #[error("lost the connection to ZooKeeper: {0}")]
    ConnectionLoss(String),
    /// The ZooKeeper session ended; its ephemeral znodes are gone. Never
    /// returned by the embedded store.
    #[error("the ZooKeeper session expired")]
    SessionExpired,
    /// Any other error a ZooKeeper server returned.
    #[error("ZooKeeper refused an operation on {path}: {reason}")]
    ZooKeeper { path: String, reason: String },
    #[error("cannot persist metadata to {path}: {source}")]
    Persist {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Stored bytes that do not decode: a znode's JSON or the embedded
    /// store's file. `what` names the znode path or file.
    #[error("corrupt {what}: {reason}")]
    Corrupt { what: String, reason: String },
}

/// Cluster metadata as a ZooKeeper-shaped tree. Implementations must apply
/// each call atomically and in call order, and fire watches only after the
/// change is visible to `get`/`children`. Whether an operation starts when
/// the method is called or when its future is first polled is up to the
/// implementation, so callers await every future they create.
pub trait MetadataStore: Send + Sync + std::fmt::Debug + 'static {
    /// Creates `path` holding `data`. Fails with `NodeExists`, or `NoNode`
    /// when the parent is missing (as ZooKeeper does; see
    /// [`MetadataStore::create_recursive`]).
    fn create(&self, path: &str, data: Vec<u8>, mode: CreateMode) -> StoreFuture<'_, ()>;

    /// The znode's data and stat, `None` when it does not exist.
    fn get(&self, path: &str) -> StoreFuture<'_, Option<(Vec<u8>, Stat)>>;

    /// Replaces the data. `expected_version` `None` matches any version; a
    /// mismatch is `BadVersion`, a missing znode `NoNode`. Returns the new stat.
    fn set(
        &self,
        path: &str,
        data: Vec<u8>,
        expected_version: Option<i32>,
    ) -> StoreFuture<'_, Stat>;

    /// Deletes a znode without children (`NotEmpty` otherwise, as ZooKeeper
    /// does; see [`MetadataStore::delete_recursive`]).
    fn delete(&self, path: &str, expected_version: Option<i32>) -> StoreFuture<'_, ()>;

    /// The names (not paths) of the znode's children, sorted; `NoNode` if
    /// it is missing.
    fn children(&self, path: &str) -> StoreFuture<'_, Vec<String>>;

    /// A one-shot watch like ZooKeeper's: the receiver resolves once, on the
    /// first creation, deletion, data change or child change of `path` after
    /// registration. The path need not exist yet. Register before reading
    /// (watch, then get/children) so no change between the two is missed.
    /// The sender is dropped, without an event, if the store goes away.
    fn watch(&self, path: &str) -> StoreFuture<'_, oneshot::Receiver<WatchedEvent>>;

    /// Applies `ops` atomically, in order, each seeing the earlier ones'
    /// effects (ZooKeeper's `multi`): all succeed, or none is applied and
    /// the first failure is returned. One stat per op (Create: version 0;
    /// Set: the new version; Delete and Check: the version checked).
    fn multi(&self, ops: Vec<StoreOp>) -> StoreFuture<'_, Vec<Stat>>;

    /// Creates a persistent sequential znode: `prefix` plus ZooKeeper's
    /// 10-digit, zero-padded counter of the parent (Kafka's notification
    /// znodes, `/config/changes/config_change_0000000007`). Returns the
    /// path created. The parent must exist.
    fn create_sequential(&self, prefix: &str, data: Vec<u8>) -> StoreFuture<'_, String>;

    /// The current session's number, which changes each time the session
    /// is replaced after it expired. A new session owns none of the old
    /// one's ephemeral znodes and none of its watches (pending watch
    /// receivers are dropped): whoever created ephemerals re-creates them
    /// (Kafka's `registerStateChangeHandler`/`reinitialize`).
    fn sessions(&self) -> tokio::sync::watch::Receiver<u64>;

    /// Ends the session (ZooKeeper deletes its ephemeral znodes at once).
    /// The embedded store has nothing to end.
    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// The current session's id: what [`Stat::ephemeral_owner`] says for
    /// the ephemeral znodes this store's session created.
    fn session_id(&self) -> i64;

    /// Creates `path`, first creating any missing ancestors as persistent
    /// znodes with empty data (Kafka's `createRecursive`). An ancestor
    /// created concurrently by someone else is fine; `path` itself existing
    /// is still `NodeExists`.
    fn create_recursive(&self, path: &str, data: Vec<u8>, mode: CreateMode) -> StoreFuture<'_, ()> {
        let path = path.to_owned();
        Box::pin(async move {
            validate_path(&path)?;
            // Most calls find the parents present: try the single create
            // first, as Kafka does, and only walk the ancestors on NoNode.
            match self.create(&path, data.clone(), mode).await {
                Err(MetadataError::NoNode(_)) => {}
                other => return other,
            }
            for ancestor in ancestors(&path) {
                match self
                    .create(ancestor, Vec::new(), CreateMode::Persistent)
                    .await
                {
                    Ok(()) | Err(MetadataError::NodeExists(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            self.create(&path, data, mode).await
        })
    }

    /// Creates `path` as an empty persistent znode unless it exists
    /// (markers and containers several writers may create at once).
    fn create_if_missing(&self, path: &str) -> StoreFuture<'_, ()> {
        let path = path.to_owned();
        Box::pin(async move {
            match self.create(&path, Vec::new(), CreateMode::Persistent).await {
                Ok(()) | Err(MetadataError::NodeExists(_)) => Ok(()),
                Err(e) => Err(e),
            }
        })
    }

    /// Deletes `path` and everything below it, children first (Kafka's
    /// `deleteRecursive`). A znode that is already gone counts as deleted;
    /// children created concurrently are retried a bounded number of times.
    fn delete_recursive(&self, path: &str) -> StoreFuture<'_, ()> {
        let path = path.to_owned();
        Box::pin(async move {
            validate_path(&path)?;
            if path == "/" {
                return Err(MetadataError::InvalidPath(path));
            }
            for _ in 0..DELETE_RECURSIVE_ATTEMPTS {
                let children = match self.children(&path).await {
                    Ok(children) => children,
                    Err(MetadataError::NoNode(_)) => return Ok(()),
                    Err(e) => return Err(e),
                };
                for child in children {
                    self.delete_recursive(&join_path(&path, &child)).await?;
                }
                match self.delete(&path, None).await {
                    Ok(()) | Err(MetadataError::NoNode(_)) => return Ok(()),
                    // A child appeared after we listed them: go round again.
                    Err(MetadataError::NotEmpty(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(MetadataError::NotEmpty(path))
        })
    }
}

/// How many times [`MetadataStore::delete_recursive`] relists the children
/// of a znode that keeps gaining new ones before giving up with `NotEmpty`.
const DELETE_RECURSIVE_ATTEMPTS: usize = 10;

/// Checks ZooKeeper's path rules (`PathUtils.validatePath`): absolute, no
/// trailing '/' except the root, no empty, "." or ".." segments, and none of
/// the characters ZooKeeper refuses (NUL, control characters, surrogates and
/// the private-use and specials ranges).
pub fn validate_path(path: &str) -> Result<(), MetadataError> {
    let invalid = || MetadataError::InvalidPath(path.to_owned());
    if path == "/" {
        return Ok(());
    }
    let rest = path.strip_prefix('/').ok_or_else(invalid)?;
    for segment in rest.split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(invalid());
        }
    }
    if path.chars().any(refused_by_zookeeper) {
        return Err(invalid());
    }
    Ok(())
}

/// Refuses data over [`MAX_DATA_BYTES`]. Both backends check before
/// writing: a ZooKeeper server drops the connection on an oversized packet
/// instead of answering.
pub fn check_size(path: &str, data: &[u8]) -> Result<(), MetadataError> {
    if data.len() > MAX_DATA_BYTES {
        return Err(MetadataError::DataTooLarge {
            path: path.to_owned(),
            size: data.len(),
            max: MAX_DATA_BYTES,
        });
    }
    Ok(())
}

fn refused_by_zookeeper(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}')
}

/// The parent of a valid path; `None` for the root.
pub fn parent_path(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// The last segment of a valid path (the name `children` reports).
pub fn node_name(path: &str) -> &str {
    path.rfind('/').map_or(path, |i| &path[i + 1..])
}

/// `parent` + '/' + `child`, without doubling the root's slash.
pub fn join_path(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// The proper ancestors of a valid path below the root, outermost first:
/// `/a/b/c` -> `/a`, `/a/b`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(|(i, _)| i)
        .filter(|&i| i > 0)
        .map(move |i| &path[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZooKeeper's path rules: absolute, no trailing or doubled slashes, no
    /// relative segments, no control characters.
    #[test]
    fn path_rules_match_zookeeper() {
        for ok in ["/", "/a", "/brokers/ids/0", "/a.b/c-d_e", "/x/..y", "/ünï"] {
            assert!(validate_path(ok).is_ok(), "{ok} should be valid");
        }
        for bad in [
            "", "a", "a/b", "/a/", "//a", "/a//b", "/a/./b", "/a/..", "/a\u{0}", "/a\nb",
        ] {
            assert!(
                matches!(validate_path(bad), Err(MetadataError::InvalidPath(_))),
                "{bad:?} should be invalid"
            );
        }
    }

    /// Parent, name and join agree with each other at the root and below it.
    #[test]
    fn parent_name_and_join() {
        assert_eq!(parent_path("/"), None);
        assert_eq!(parent_path("/a"), Some("/"));
        assert_eq!(parent_path("/a/b/c"), Some("/a/b"));
        assert_eq!(node_name("/a/b/c"), "c");
        assert_eq!(node_name("/a"), "a");
        assert_eq!(join_path("/", "a"), "/a");
        assert_eq!(join_path("/a/b", "c"), "/a/b/c");
        assert_eq!(ancestors("/a/b/c").collect::<Vec<_>>(), ["/a", "/a/b"]);
        assert_eq!(ancestors("/a").count(), 0);
    }
}
