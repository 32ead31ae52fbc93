//! The embedded metadata store: the znode tree kept in this process, used
//! when `zookeeper.connect` is not set. It owns the in-memory tree, its one
//! JSON file (under the first log dir) and the watches registered on it.
//! Every persistent change rewrites the file atomically (temp file, fsync,
//! rename, fsync of the directory) before the call returns or any watch
//! fires, so what a caller saw acknowledged survives a crash; if the write
//! fails the change is undone and the caller gets `Persist`. Ephemeral znodes
//! belong to this process's "session" and are never written, so they vanish
//! on restart exactly as they would when a ZooKeeper session ends.
//!
//! Reads (`get`, `children`, `watch`) are answered from memory at once.
//! Changes that must reach the file run on tokio's blocking pool, so no
//! actor thread ever waits on an fsync; the file is written under the tree
//! lock, which keeps it in the same order as the acknowledgements. `multi`
//! applies a batch of changes atomically with one file write: the
//! controller writes a whole topic (config, assignment, every partition
//! state) that way, so creating a P-partition topic costs one write, not
//! 3P. The file is a full snapshot, so a write costs the size of the tree;
//! a metadata log with snapshots (KRaft's shape) would make it
//! proportional to the change, and is the way to go past ~100k znodes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::store::{
    check_size, node_name, parent_path, validate_path, CreateMode, MetadataError, MetadataStore,
    Stat, StoreFuture, StoreOp, WatchedEvent,
};

/// The file name the broker uses for the embedded store inside its first
/// log dir. A plain file, so the log dir's partition scan ignores it.
pub const EMBEDDED_STORE_FILE_NAME: &str = "ferrolog-metadata.json";

/// Outstanding (unfired, still listened to) watches allowed on one path.
/// A caller that re-registers in a loop without awaiting would otherwise
/// grow the list without bound.
pub const MAX_WATCHES_PER_PATH: usize = 10_000;

/// Distinct watched paths allowed at once, for the same reason across paths.
pub const MAX_WATCHED_PATHS: usize = 100_000;

/// The file layout version this code writes and reads.
const FILE_FORMAT_VERSION: u32 = 1;

/// The znode tree in memory, optionally backed by a file.
pub struct EmbeddedStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` for [`EmbeddedStore::in_memory`].
    file: Option<PathBuf>,
    state: Mutex<Tree>,
    /// See [`MetadataStore::sessions`].
    sessions: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct Tree {
    nodes: BTreeMap<String, Node>,
    watches: HashMap<String, Vec<oneshot::Sender<WatchedEvent>>>,
    file_writes: u64,
    /// The last transaction id handed out (see [`Stat::creation_zxid`]).
    zxid: i64,
    /// This process's session; a new one after [`EmbeddedStore::expire_session`].
    session_id: i64,
}

#[derive(Debug, Clone)]
struct Node {
    data: Vec<u8>,
    version: i32,
    ephemeral: bool,
    creation_zxid: i64,
    /// Names of the children, kept beside the node so `children` and the
    /// `NotEmpty` check do not scan the whole subtree.
    children: BTreeSet<String>,
}

impl Node {
    fn new(data: Vec<u8>, ephemeral: bool, creation_zxid: i64) -> Self {
        Node {
            data,
            version: 0,
            ephemeral,
            creation_zxid,
            children: BTreeSet::new(),
        }
    }

    fn stat(&self, session_id: i64) -> Stat {
        Stat {
            version: self.version,
            creation_zxid: self.creation_zxid,
            ephemeral_owner: if self.ephemeral { session_id } else { 0 },
        }
    }
}

/// The file: `{"version":1,"nodes":{"/path":{"data":"...","version":0}}}`.
#[derive(Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    nodes: BTreeMap<String, FileNode>,
}

/// One persistent znode in the file. Kafka's znodes hold UTF-8 JSON, kept
/// readable in `data`; anything else goes to `data_hex` so no bytes are lost.
#[derive(Serialize, Deserialize)]
struct FileNode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data_hex: Option<String>,
    version: i32,
}

impl EmbeddedStore {
    /// Opens (or creates) the store backed by `file`. A leftover
    /// `<file>.tmp` from a write interrupted before its rename is discarded:
    /// the file itself still holds the last complete state. The file is
    /// written once here so an unwritable location fails at start-up rather
    /// than on the first metadata change.
    pub fn open(file: &Path) -> Result<Arc<EmbeddedStore>, MetadataError> {
        let tmp = tmp_path(file);
        match fs::remove_file(&tmp) {
            Ok(()) => log::warn!(
                "discarded {}, left by an interrupted metadata write",
                tmp.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(MetadataError::Persist { path: tmp, source }),
        }
        let nodes = match fs::read(file) {
            Ok(bytes) => load(file, &bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => empty_tree(),
            Err(source) => {
                return Err(MetadataError::Persist {
                    path: file.to_owned(),
                    source,
                })
            }
        };
        write_atomically(file, &snapshot(&nodes)?)?;
        Ok(Self::with(Some(file.to_owned()), nodes))
    }

    /// A store that keeps nothing on disk, for tests.
    #[cfg(any(test, feature = "internals"))]
    pub fn in_memory() -> Arc<EmbeddedStore> {
        Self::with(None, empty_tree())
    }

    fn with(file: Option<PathBuf>, nodes: BTreeMap<String, Node>) -> Arc<EmbeddedStore> {
        Arc::new(EmbeddedStore {
            inner: Arc::new(Inner {
                file,
                sessions: tokio::sync::watch::Sender::new(1),
                state: Mutex::new(Tree {
                    nodes,
                    // Zxids are not kept in the file: starting from the wall
                    // clock keeps creation zxids (and so broker epochs)
                    // growing across restarts.
                    zxid: crate::clock::Clock::now_ms(&crate::clock::SystemClock),
                    session_id: 1,
                    ..Tree::default()
                }),
            }),
        })
    }

    /// The backing file, if any.
    #[cfg(any(test, feature = "internals"))]
    pub fn file(&self) -> Option<&Path> {
        self.inner.file.as_deref()
    }

    /// How many times the file has been written since open (one per
    /// successful change that touched a persistent znode, `multi` included).
    #[cfg(any(test, feature = "internals"))]
    pub fn file_writes(&self) -> u64 {
        self.inner
            .state
            .lock()
            .map(|tree| tree.file_writes)
            .unwrap_or(0)
    }

    /// Ends this process's session as ZooKeeper would on expiry: every
    /// ephemeral znode is deleted and its watchers (and its parent's) fire.
    /// Lets tests play a broker dying without restarting the process.
    #[cfg(any(test, feature = "internals"))]
    pub fn expire_session(&self) -> Result<(), MetadataError> {
        let mut tree = self.inner.lock()?;
        let ephemerals: Vec<String> = tree
            .nodes
            .iter()
            .filter(|(_, node)| node.ephemeral)
            .map(|(path, _)| path.clone())
            .collect();
        for path in ephemerals {
            tree.remove(&path);
            tree.fire_delete(&path);
        }
        tree.session_id += 1;
        let session = tree.session_id;
        drop(tree);
        self.inner.sessions.send_replace(session as u64);
        Ok(())
    }

    /// Run `ops` as one transaction. When the file must be written, the
    /// work runs on tokio's blocking pool so no actor thread waits on an
    /// fsync; `single` ops on the in-memory store run inline.
    fn transact(&self, ops: Vec<StoreOp>) -> StoreFuture<'_, Vec<Stat>> {
        let inner = self.inner.clone();
        if inner.file.is_none() || ops.iter().all(|op| matches!(op, StoreOp::Check { .. })) {
            return Box::pin(std::future::ready(inner.apply(ops)));
        }
        Box::pin(async move {
            tokio::task::spawn_blocking(move || inner.apply(ops))
                .await
                .map_err(|e| MetadataError::Corrupt {
                    what: "embedded metadata store".to_owned(),
                    reason: format!("a metadata write did not finish: {e}"),
                })?
        })
    }

    fn get_now(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>, MetadataError> {
        validate_path(path)?;
        let tree = self.inner.lock()?;
        Ok(tree
            .nodes
            .get(path)
            .map(|node| (node.data.clone(), node.stat(tree.session_id))))
    }

    fn children_now(&self, path: &str) -> Result<Vec<String>, MetadataError> {
        validate_path(path)?;
        let tree = self.inner.lock()?;
        let node = tree
            .nodes
            .get(path)
            .ok_or_else(|| MetadataError::NoNode(path.to_owned()))?;
        Ok(node.children.iter().cloned().collect())
    }

    fn watch_now(&self, path: &str) -> Result<oneshot::Receiver<WatchedEvent>, MetadataError> {
        validate_path(path)?;
        let mut tree = self.inner.lock()?;
        let (tx, rx) = oneshot::channel();
        if !tree.watches.contains_key(path) && tree.watches.len() >= MAX_WATCHED_PATHS {
            // Abandoned receivers leave dead senders behind; sweep them
            // before refusing.
            tree.watches.retain(|_, senders| {
                senders.retain(|s| !s.is_closed());
                !senders.is_empty()
            });
            if tree.watches.len() >= MAX_WATCHED_PATHS {
                return Err(MetadataError::TooManyWatches {
                    path: path.to_owned(),
                    limit: MAX_WATCHED_PATHS,
                });
            }
        }
        let senders = tree.watches.entry(path.to_owned()).or_default();
        if senders.len() >= MAX_WATCHES_PER_PATH {
            senders.retain(|s| !s.is_closed());
            if senders.len() >= MAX_WATCHES_PER_PATH {
                return Err(MetadataError::TooManyWatches {
                    path: path.to_owned(),
                    limit: MAX_WATCHES_PER_PATH,
                });
            }
        }
        senders.push(tx);
        Ok(rx)
    }
}

/// How to undo one applied op when a later one (or the file write) fails.
enum Undo {
    Created(String),
    Set {
        path: String,
        data: Vec<u8>,
        version: i32,
    },
    Deleted(String, Node),
}

impl Inner {
    fn lock(&self) -> Result<MutexGuard<'_, Tree>, MetadataError> {
        // A panic while the lock was held may have left the tree half
        // changed; refuse to serve it rather than guess.
        self.state.lock().map_err(|_| MetadataError::Corrupt {
            what: "embedded metadata store".to_owned(),
            reason: "an earlier operation panicked while changing the tree".to_owned(),
        })
    }

    /// Apply every op or none: each is checked against the tree as the
    /// earlier ops left it; on the first failure, or if the file cannot be
    /// written, everything is undone. The file is written once, and watches
    /// fire only after it is.
    fn apply(&self, ops: Vec<StoreOp>) -> Result<Vec<Stat>, MetadataError> {
        for op in &ops {
            validate_path(op.path())?;
            match op {
                StoreOp::Create { path, data, .. } | StoreOp::Set { path, data, .. } => {
                    check_size(path, data)?
                }
                StoreOp::Delete { path, .. } if path == "/" => {
                    return Err(MetadataError::InvalidPath(path.clone()))
                }
                _ => {}
            }
        }
        let mut tree = self.lock()?;
        // One zxid per transaction, as ZooKeeper gives a `multi`.
        tree.zxid += 1;
        let mut undo = Vec::with_capacity(ops.len());
        let mut events = Vec::new();
        let mut stats = Vec::with_capacity(ops.len());
        let mut persistent = false;
        for op in ops {
            match tree.apply_one(op, &mut undo, &mut events) {
                Ok((stat, touches_file)) => {
                    stats.push(stat);
                    persistent |= touches_file;
                }
                Err(e) => {
                    tree.undo(undo);
                    return Err(e);
                }
            }
        }
        if persistent {
            if let Some(file) = &self.file {
                if let Err(e) = snapshot(&tree.nodes).and_then(|b| write_atomically(file, &b)) {
                    tree.undo(undo);
                    return Err(e);
                }
                tree.file_writes += 1;
            }
        }
        for event in events {
            let path = event.path().to_owned();
            tree.fire(&path, event);
        }
        Ok(stats)
    }
}

impl Tree {
    /// Apply one op to the tree (paths and sizes already checked); the
    /// resulting stat and whether it changed a persistent znode. Records
    /// how to undo it and which watches it fires.
    fn apply_one(
        &mut self,
        op: StoreOp,
        undo: &mut Vec<Undo>,
        events: &mut Vec<WatchedEvent>,
    ) -> Result<(Stat, bool), MetadataError> {
        match op {
            StoreOp::Create { path, data, mode } => {
                if self.nodes.contains_key(&path) {
                    return Err(MetadataError::NodeExists(path));
                }
                // Only the root has no parent, and the root always exists.
                let parent = parent_path(&path)
                    .ok_or_else(|| MetadataError::NodeExists(path.clone()))?
                    .to_owned();
                match self.nodes.get(&parent) {
                    None => return Err(MetadataError::NoNode(parent)),
                    Some(p) if p.ephemeral => {
                        return Err(MetadataError::NoChildrenForEphemerals(parent))
                    }
                    Some(_) => {}
                }
                let ephemeral = mode == CreateMode::Ephemeral;
                let node = Node::new(data, ephemeral, self.zxid);
                let stat = node.stat(self.session_id);
                self.insert(&path, node);
                events.push(WatchedEvent::NodeCreated(path.clone()));
                events.push(WatchedEvent::NodeChildrenChanged(parent));
                undo.push(Undo::Created(path));
                Ok((stat, !ephemeral))
            }
            StoreOp::Set {
                path,
                data,
                expected_version,
            } => {
                let node = self
                    .nodes
                    .get_mut(&path)
                    .ok_or_else(|| MetadataError::NoNode(path.clone()))?;
                check_version(&path, node.version, expected_version)?;
                // ZooKeeper's dataVersion is a wrapping 32-bit counter.
                let old_version = node.version;
                node.version = old_version.wrapping_add(1);
                let old_data = std::mem::replace(&mut node.data, data);
                let stat = node.stat(self.session_id);
                let persistent = !node.ephemeral;
                events.push(WatchedEvent::NodeDataChanged(path.clone()));
                undo.push(Undo::Set {
                    path,
                    data: old_data,
                    version: old_version,
                });
                Ok((stat, persistent))
            }
            StoreOp::Delete {
                path,
                expected_version,
            } => {
                let node = self
                    .nodes
                    .get(&path)
                    .ok_or_else(|| MetadataError::NoNode(path.clone()))?;
                check_version(&path, node.version, expected_version)?;
                if !node.children.is_empty() {
                    return Err(MetadataError::NotEmpty(path));
                }
                let stat = node.stat(self.session_id);
                let Some(removed) = self.remove(&path) else {
                    return Err(MetadataError::NoNode(path));
                };
                let persistent = !removed.ephemeral;
                events.push(WatchedEvent::NodeDeleted(path.clone()));
                if let Some(parent) = parent_path(&path) {
                    events.push(WatchedEvent::NodeChildrenChanged(parent.to_owned()));
                }
                undo.push(Undo::Deleted(path, removed));
                Ok((stat, persistent))
            }
            StoreOp::Check { path, version } => {
                let node = self
                    .nodes
                    .get(&path)
                    .ok_or_else(|| MetadataError::NoNode(path.clone()))?;
                check_version(&path, node.version, Some(version))?;
                Ok((node.stat(self.session_id), false))
            }
        }
    }

    /// Undo applied ops, latest first.
    fn undo(&mut self, undo: Vec<Undo>) {
        for step in undo.into_iter().rev() {
            match step {
                Undo::Created(path) => {
                    self.remove(&path);
                }
                Undo::Set {
                    path,
                    data,
                    version,
                } => {
                    if let Some(node) = self.nodes.get_mut(&path) {
                        node.data = data;
                        node.version = version;
                    }
                }
                Undo::Deleted(path, node) => self.insert(&path, node),
            }
        }
    }

    /// Inserts a node whose parent exists and links it into the parent.
    fn insert(&mut self, path: &str, node: Node) {
        if let Some(parent) = parent_path(path).and_then(|p| self.nodes.get_mut(p)) {
            parent.children.insert(node_name(path).to_owned());
        }
        self.nodes.insert(path.to_owned(), node);
    }

    /// Removes a node (which has no children) and unlinks it from its parent.
    fn remove(&mut self, path: &str) -> Option<Node> {
        if let Some(parent) = parent_path(path).and_then(|p| self.nodes.get_mut(p)) {
            parent.children.remove(node_name(path));
        }
        self.nodes.remove(path)
    }

    /// Fires, and so forgets, every watch on `path`.
    fn fire(&mut self, path: &str, event: WatchedEvent) {
        if let Some(senders) = self.watches.remove(path) {
            for sender in senders {
                // A dropped receiver just means nobody is listening any more.
                let _ = sender.send(event.clone());
            }
        }
    }

    #[cfg(any(test, feature = "internals"))]
    fn fire_delete(&mut self, path: &str) {
        self.fire(path, WatchedEvent::NodeDeleted(path.to_owned()));
        if let Some(parent) = parent_path(path) {
            self.fire(parent, WatchedEvent::NodeChildrenChanged(parent.to_owned()));
        }
    }
}

impl fmt::Debug for EmbeddedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("EmbeddedStore");
        d.field("file", &self.inner.file);
        if let Ok(tree) = self.inner.state.try_lock() {
            d.field("znodes", &tree.nodes.len())
                .field("watched_paths", &tree.watches.len());
        }
        d.finish()
    }
}

/// The one stat of a single-op transaction.
fn single(stats: Vec<Stat>) -> Stat {
    stats.into_iter().next().unwrap_or(Stat {
        version: 0,
        creation_zxid: 0,
        ephemeral_owner: 0,
    })
}

impl MetadataStore for EmbeddedStore {
    fn create(&self, path: &str, data: Vec<u8>, mode: CreateMode) -> StoreFuture<'_, ()> {
        let op = StoreOp::Create {
            path: path.to_owned(),
            data,
            mode,
        };
        let done = self.transact(vec![op]);
        Box::pin(async move { done.await.map(|_| ()) })
    }

    fn get(&self, path: &str) -> StoreFuture<'_, Option<(Vec<u8>, Stat)>> {
        Box::pin(std::future::ready(self.get_now(path)))
    }

    fn set(
        &self,
        path: &str,
        data: Vec<u8>,
        expected_version: Option<i32>,
    ) -> StoreFuture<'_, Stat> {
        let op = StoreOp::Set {
            path: path.to_owned(),
            data,
            expected_version,
        };
        let done = self.transact(vec![op]);
        Box::pin(async move { done.await.map(single) })
    }

    fn delete(&self, path: &str, expected_version: Option<i32>) -> StoreFuture<'_, ()> {
        let op = StoreOp::Delete {
            path: path.to_owned(),
            expected_version,
        };
        let done = self.transact(vec![op]);
        Box::pin(async move { done.await.map(|_| ()) })
    }

    fn children(&self, path: &str) -> StoreFuture<'_, Vec<String>> {
        Box::pin(std::future::ready(self.children_now(path)))
    }

    fn watch(&self, path: &str) -> StoreFuture<'_, oneshot::Receiver<WatchedEvent>> {
        Box::pin(std::future::ready(self.watch_now(path)))
    }

    fn create_sequential(&self, prefix: &str, data: Vec<u8>) -> StoreFuture<'_, String> {
        let prefix = prefix.to_owned();
        Box::pin(async move {
            validate_path(&prefix)?;
            let parent = parent_path(&prefix)
                .ok_or_else(|| MetadataError::InvalidPath(prefix.clone()))?
                .to_owned();
            // ZooKeeper numbers by the parent's child-creation count; the
            // children's highest number + 1 is the same while nothing else
            // creates under the parent, and never repeats a live name.
            let next = {
                let tree = self.inner.lock()?;
                let node = tree
                    .nodes
                    .get(&parent)
                    .ok_or_else(|| MetadataError::NoNode(parent.clone()))?;
                node.children
                    .iter()
                    .filter_map(|c| c.get(c.len().saturating_sub(10)..))
                    .filter_map(|digits| digits.parse::<i64>().ok())
                    .max()
                    .map_or(0, |n| n + 1)
            };
            let path = format!("{prefix}{next:010}");
            self.create(&path, data, CreateMode::Persistent).await?;
            Ok(path)
        })
    }

    fn sessions(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.sessions.subscribe()
    }

    fn session_id(&self) -> i64 {
        self.inner.state.lock().map(|t| t.session_id).unwrap_or(0)
    }

    fn multi(&self, ops: Vec<StoreOp>) -> StoreFuture<'_, Vec<Stat>> {
        self.transact(ops)
    }
}

fn check_version(path: &str, actual: i32, expected: Option<i32>) -> Result<(), MetadataError> {
    match expected {
        Some(expected) if expected != actual => Err(MetadataError::BadVersion {
            path: path.to_owned(),
            expected,
            actual,
        }),
        _ => Ok(()),
    }
}

fn empty_tree() -> BTreeMap<String, Node> {
    let mut nodes = BTreeMap::new();
    nodes.insert("/".to_owned(), Node::new(Vec::new(), false, 0));
    nodes
}

fn tmp_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    file.with_file_name(name)
}

/// The persistent znodes as the file's bytes.
fn snapshot(nodes: &BTreeMap<String, Node>) -> Result<Vec<u8>, MetadataError> {
    let file = StoreFile {
        version: FILE_FORMAT_VERSION,
        nodes: nodes
            .iter()
            .filter(|(_, node)| !node.ephemeral)
            .map(|(path, node)| {
                let (data, data_hex) = match std::str::from_utf8(&node.data) {
                    Ok(text) => (Some(text.to_owned()), None),
                    Err(_) => (None, Some(to_hex(&node.data))),
                };
                let entry = FileNode {
                    data,
                    data_hex,
                    version: node.version,
                };
                (path.clone(), entry)
            })
            .collect(),
    };
    serde_json::to_vec_pretty(&file).map_err(|e| MetadataError::Corrupt {
        what: "embedded metadata snapshot".to_owned(),
        reason: e.to_string(),
    })
}

/// Parses and checks the file: known format version, valid paths, every
/// znode's parent present, one form of data per znode.
fn load(file: &Path, bytes: &[u8]) -> Result<BTreeMap<String, Node>, MetadataError> {
    let corrupt = |reason: String| MetadataError::Corrupt {
        what: file.display().to_string(),
        reason,
    };
    let parsed: StoreFile = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    if parsed.version != FILE_FORMAT_VERSION {
        return Err(corrupt(format!(
            "file format version {} (this build reads {FILE_FORMAT_VERSION})",
            parsed.version
        )));
    }
    let mut nodes = BTreeMap::new();
    for (path, entry) in &parsed.nodes {
        validate_path(path).map_err(|e| corrupt(e.to_string()))?;
        if let Some(parent) = parent_path(path) {
            if !parsed.nodes.contains_key(parent) && parent != "/" {
                return Err(corrupt(format!("znode {path} has no parent {parent}")));
            }
        }
        if entry.version < 0 {
            return Err(corrupt(format!(
                "znode {path} has negative version {}",
                entry.version
            )));
        }
        let data = match (&entry.data, &entry.data_hex) {
            (Some(text), None) => text.clone().into_bytes(),
            (None, Some(hex)) => from_hex(hex)
                .ok_or_else(|| corrupt(format!("znode {path} has malformed data_hex")))?,
            _ => {
                return Err(corrupt(format!(
                    "znode {path} needs exactly one of data and data_hex"
                )))
            }
        };
        let mut node = Node::new(data, false, 0);
        node.version = entry.version;
        nodes.insert(path.clone(), node);
    }
    nodes
        .entry("/".to_owned())
        .or_insert_with(|| Node::new(Vec::new(), false, 0));
    // Link children only now: the BTreeMap order puts "/a-b" between "/a"
    // and "/a/b", so parents are not always seen before their children.
    let paths: Vec<String> = nodes.keys().cloned().collect();
    for path in paths {
        if let Some(parent) = parent_path(&path).and_then(|p| nodes.get_mut(p)) {
            parent.children.insert(node_name(&path).to_owned());
        }
    }
    Ok(nodes)
}

/// Temp file, fsync, rename over `file`, fsync of the directory: a crash at
/// any point leaves either the old file or the new one, never a mix.
fn write_atomically(file: &Path, bytes: &[u8]) -> Result<(), MetadataError> {
    let tmp = tmp_path(file);
    let err = |path: &Path| {
        let path = path.to_owned();
        move |source| MetadataError::Persist { path, source }
    };
    let mut out = File::create(&tmp).map_err(err(&tmp))?;
    out.write_all(bytes).map_err(err(&tmp))?;
    out.sync_all().map_err(err(&tmp))?;
    drop(out);
    fs::rename(&tmp, file).map_err(err(file))?;
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(err(dir))?;
    Ok(())
}

fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let hi = char::from(pair[0]).to_digit(16)?;
            let lo = char::from(pair[1]).to_digit(16)?;
            u8::try_from(hi * 16 + lo).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(f)
    }

    /// Hex round-trips every byte value and rejects odd or non-hex input.
    #[test]
    fn hex_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(from_hex(&to_hex(&all)), Some(all));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
    }

    /// Children are linked even when a sibling sorts between a parent and its
    /// child in the file ("/a-b" sorts between "/a" and "/a/b").
    #[test]
    fn load_links_children_regardless_of_sort_order() {
        let json = br#"{"version":1,"nodes":{"/a":{"data":"","version":0},
            "/a-b":{"data":"","version":0},"/a/b":{"data":"x","version":3}}}"#;
        let nodes = load(Path::new("f"), json).expect("loads");
        assert_eq!(nodes["/"].children.iter().collect::<Vec<_>>(), ["a", "a-b"]);
        assert_eq!(nodes["/a"].children.iter().collect::<Vec<_>>(), ["b"]);
        assert_eq!(nodes["/a/b"].version, 3);
    }

    /// A file with an orphan, an unknown format version or both data forms
    /// is Corrupt, never half loaded.
    #[test]
    fn load_rejects_inconsistent_files() {
        for json in [
            &br#"{"version":1,"nodes":{"/a/b":{"data":"","version":0}}}"#[..],
            br#"{"version":2,"nodes":{}}"#,
            br#"{"version":1,"nodes":{"/a":{"data":"","data_hex":"00","version":0}}}"#,
            br#"{"version":1,"nodes":{"/a":{"version":0}}}"#,
            br#"{"version":1,"nodes":{"a":{"data":"","version":0}}}"#,
            br#"{"version":1,"nodes":{"/a":{"data":"","version":-1}}}"#,
            b"not json",
        ] {
            assert!(
                matches!(
                    load(Path::new("f"), json),
                    Err(MetadataError::Corrupt { .. })
                ),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
    }

    /// Ephemeral znodes cannot have children, and the root can be neither
    /// created nor deleted.
    #[test]
    fn ephemeral_parents_and_the_root() {
        let store = EmbeddedStore::in_memory();
        block_on(store.create("/e", vec![], CreateMode::Ephemeral)).expect("create");
        assert!(matches!(
            block_on(store.create("/e/c", vec![], CreateMode::Persistent)),
            Err(MetadataError::NoChildrenForEphemerals(p)) if p == "/e"
        ));
        assert!(matches!(
            block_on(store.create("/", vec![], CreateMode::Persistent)),
            Err(MetadataError::NodeExists(_))
        ));
        assert!(matches!(
            block_on(store.delete("/", None)),
            Err(MetadataError::InvalidPath(_))
        ));
    }

    /// Data over ZooKeeper's jute.maxbuffer is refused on create and set.
    #[test]
    fn data_size_is_bounded() {
        let store = EmbeddedStore::in_memory();
        let big = vec![b'x'; crate::metadata::store::MAX_DATA_BYTES + 1];
        assert!(matches!(
            block_on(store.create("/a", big.clone(), CreateMode::Persistent)),
            Err(MetadataError::DataTooLarge { .. })
        ));
        block_on(store.create("/a", vec![], CreateMode::Persistent)).expect("create");
        assert!(matches!(
            block_on(store.set("/a", big, None)),
            Err(MetadataError::DataTooLarge { .. })
        ));
    }

    /// Watches on one path are bounded; dropped receivers are swept so they
    /// do not count against the bound.
    #[test]
    fn watches_per_path_are_bounded() {
        let store = EmbeddedStore::in_memory();
        let mut held = Vec::new();
        for _ in 0..MAX_WATCHES_PER_PATH {
            held.push(block_on(store.watch("/w")).expect("watch"));
        }
        assert!(matches!(
            block_on(store.watch("/w")),
            Err(MetadataError::TooManyWatches { .. })
        ));
        held.truncate(10);
        block_on(store.watch("/w")).expect("room again after dropped receivers are swept");
    }

    /// A failed file write undoes the change: the caller sees Persist and the
    /// tree is as before.
    #[test]
    fn failed_persist_rolls_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("sub").join("meta.json");
        fs::create_dir(dir.path().join("sub")).expect("mkdir");
        let store = EmbeddedStore::open(&file).expect("open");
        block_on(store.create("/a", b"1".to_vec(), CreateMode::Persistent)).expect("create");
        // Make the next write fail: a directory where the temp file goes.
        fs::create_dir(tmp_path(&file)).expect("block tmp");
        assert!(matches!(
            block_on(store.set("/a", b"2".to_vec(), None)),
            Err(MetadataError::Persist { .. })
        ));
        assert!(matches!(
            block_on(store.create("/b", vec![], CreateMode::Persistent)),
            Err(MetadataError::Persist { .. })
        ));
        assert!(matches!(
            block_on(store.delete("/a", None)),
            Err(MetadataError::Persist { .. })
        ));
        let (data, stat) = block_on(store.get("/a"))
            .expect("get")
            .expect("still there");
        assert_eq!((data, stat.version), (b"1".to_vec(), 0));
        assert_eq!(block_on(store.get("/b")).expect("get"), None);
        assert_eq!(block_on(store.children("/")).expect("children"), ["a"]);
    }
}
