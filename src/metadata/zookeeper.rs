//! The metadata store over a real ZooKeeper ensemble (`zookeeper.connect`),
//! through the `zookeeper-async` client. It owns the client, its session,
//! the chroot, and the translation between ZooKeeper's errors and events and
//! the [`MetadataStore`] contract, so the controller code runs unchanged over
//! it and over the embedded store. It never blocks a thread: every call is
//! one request on the client's connection task.
//!
//! What it must never do: hide a session change. When the session expires
//! every pending watch receiver is dropped and [`MetadataStore::sessions`]
//! moves on, so the owners of ephemeral znodes re-create them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use zookeeper_async::{
    Acl, CheckVersionRequest, CreateMode as ZkCreateMode, CreateRequest, DeleteRequest, MultiOp,
    MultiResult, SetDataRequest, WatchedEventType, ZkError, ZkState, ZooKeeper,
};

use super::store::{
    check_size, validate_path, CreateMode, MetadataError, MetadataStore, Stat, StoreFuture,
    StoreOp, WatchedEvent,
};

/// How long the client waits before reconnecting after a refused
/// connection (zookeeper-async's default of 0 spins).
const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

/// How many times an operation that hit `ConnectionLoss` is sent again
/// while the client reconnects (Kafka's `retryRequestsUntilConnected`),
/// spaced by [`RECONNECT_BACKOFF`] doubling up to one second.
const CONNECTION_LOSS_RETRIES: u32 = 20;

/// `zookeeper.connect` split into the servers and the chroot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    /// `host:port,host:port`.
    pub servers: String,
    /// `/kafka`, or empty for none.
    pub chroot: String,
}

impl ConnectString {
    pub fn parse(connect: &str) -> Result<ConnectString, MetadataError> {
        let (servers, chroot) = match connect.find('/') {
            Some(i) => (&connect[..i], &connect[i..]),
            None => (connect, ""),
        };
        let chroot = if chroot == "/" { "" } else { chroot };
        if !chroot.is_empty() {
            validate_path(chroot)?;
        }
        if servers.trim().is_empty() {
            return Err(MetadataError::InvalidPath(connect.to_owned()));
        }
        Ok(ConnectString {
            servers: servers.to_owned(),
            chroot: chroot.to_owned(),
        })
    }
}

/// The metadata store backed by ZooKeeper.
pub struct ZooKeeperStore {
    client: ZooKeeper,
    connect: ConnectString,
    watches: Arc<Mutex<Watches>>,
    sessions: watch::Receiver<u64>,
}

/// Pending watch receivers, and which ZooKeeper watches are armed, per
/// path. At most one data and one child watch per path are registered with
/// the client at a time however often a path is watched, so the client's
/// watch table stays bounded.
#[derive(Default)]
struct Watches {
    /// Bumped on session expiry; a callback from an older session is stale.
    session: u64,
    paths: HashMap<String, PathWatches>,
}

#[derive(Default)]
struct PathWatches {
    waiting: Vec<oneshot::Sender<WatchedEvent>>,
    data_armed: bool,
    child_armed: bool,
}

impl Watches {
    /// A ZooKeeper watch fired: wake everyone waiting on the path.
    fn fired(&mut self, session: u64, path: &str, event: Option<WatchedEvent>, child: bool) {
        if session != self.session {
            return;
        }
        let Some(entry) = self.paths.get_mut(path) else {
            return;
        };
        match &event {
            // A deletion fires (and so disarms) both kinds.
            Some(WatchedEvent::NodeDeleted(_)) => {
                entry.data_armed = false;
                entry.child_armed = false;
            }
            _ if child => entry.child_armed = false,
            _ => entry.data_armed = false,
        }
        if let Some(event) = event {
            for sender in entry.waiting.drain(..) {
                let _ = sender.send(event.clone());
            }
        }
        if entry.waiting.is_empty() && !entry.data_armed && !entry.child_armed {
            self.paths.remove(path);
        }
    }

    /// The session ended, or the connection was replaced: the server
    /// forgot every watch; drop the waiters so they arm again and re-read.
    fn expire(&mut self) {
        self.session += 1;
        self.paths.clear();
    }
}

impl ZooKeeperStore {
    /// Connects to `connect` (`host:port,...[/chroot]`), creating the
    /// chroot if it is missing, as Kafka does. Fails when no session is
    /// established within `connection_timeout` (zookeeper-async alone would
    /// retry forever).
    pub async fn connect(
        connect: &str,
        session_timeout: Duration,
        connection_timeout: Duration,
    ) -> Result<Arc<ZooKeeperStore>, MetadataError> {
        Self::connect_as(connect, session_timeout, connection_timeout, None).await
    }

    /// Like [`ZooKeeperStore::connect`], joining the existing session
    /// `(id, password)` instead of starting one: tests use it to expire a
    /// broker's session as ZooKeeper's own test tools do (a second handle on
    /// the same session, then closed).
    pub async fn connect_as(
        connect: &str,
        session_timeout: Duration,
        connection_timeout: Duration,
        resume: Option<(i64, Vec<u8>)>,
    ) -> Result<Arc<ZooKeeperStore>, MetadataError> {
        let connect = ConnectString::parse(connect)?;
        let joined = resume.is_some();
        let unreachable = || {
            MetadataError::ConnectionLoss(format!(
                "no ZooKeeper session with {} within zookeeper.connection.timeout.ms ({} ms)",
                connect.servers,
                connection_timeout.as_millis()
            ))
        };
        let (state_tx, mut state_rx) = watch::channel(ZkState::Connecting);
        let (sessions_tx, sessions) = watch::channel(1u64);
        let watches = Arc::new(Mutex::new(Watches::default()));
        let established = tokio::time::timeout(connection_timeout, async {
            let client = ZooKeeper::connect_with_session(
                &connect.servers,
                session_timeout,
                |_event: zookeeper_async::WatchedEvent| {},
                RECONNECT_BACKOFF,
                resume,
            )
            .await
            .map_err(|e| MetadataError::ConnectionLoss(e.to_string()))?;
            let listener_watches = watches.clone();
            let expired = std::sync::atomic::AtomicBool::new(false);
            client.add_listener(move |state| {
                use std::sync::atomic::Ordering::SeqCst;
                #[allow(deprecated)] // the variant zookeeper-async uses for expiry
                match state {
                    // zookeeper-async reports an expired session as
                    // NotConnected, then opens a new one.
                    ZkState::NotConnected | ZkState::Closed if !expired.swap(true, SeqCst) => {
                        if state == ZkState::Closed {
                            log::info!("the ZooKeeper session is closed");
                        } else {
                            log::warn!("the ZooKeeper session expired");
                        }
                        if let Ok(mut w) = listener_watches.lock() {
                            w.expire();
                        }
                    }
                    ZkState::Connected | ZkState::ConnectedReadOnly if expired.load(SeqCst) => {
                        expired.store(false, SeqCst);
                        sessions_tx.send_modify(|n| *n += 1);
                        log::info!("a new ZooKeeper session is established");
                    }
                    // A new connection in the same session (ZooKeeper
                    // restarted, or another server of the ensemble): the
                    // server keeps watches per connection, and
                    // zookeeper-async sends no SetWatches on reconnect as
                    // the Java client does, so every watch is gone. Wake
                    // every waiter so that it arms its watch again and
                    // re-reads (nothing changed meanwhile is missed).
                    ZkState::Connected | ZkState::ConnectedReadOnly => {
                        if let Ok(mut w) = listener_watches.lock() {
                            if !w.paths.is_empty() {
                                log::info!(
                                    "reconnected to ZooKeeper in the same session: arming {} \
                                     watch(es) again",
                                    w.paths.len()
                                );
                            }
                            w.expire();
                        }
                    }
                    _ => {}
                }
                let _ = state_tx.send(state);
            });
            // The handshake may have finished before the listener existed:
            // a round trip proves a session either way.
            loop {
                match client.exists("/", false).await {
                    Ok(_) => break,
                    Err(ZkError::ConnectionLoss) => {
                        let _ = tokio::time::timeout(RECONNECT_BACKOFF, state_rx.changed()).await;
                    }
                    Err(e) => return Err(MetadataError::ConnectionLoss(e.to_string())),
                }
            }
            Ok::<_, MetadataError>(client)
        })
        .await
        .map_err(|_| unreachable())??;
        let store = Arc::new(ZooKeeperStore {
            client: established,
            connect,
            watches,
            sessions,
        });
        // A handle joining another's session leaves the tree alone.
        if !store.connect.chroot.is_empty() && !joined {
            store.create_chroot().await?;
        }
        Ok(store)
    }

    /// The current session's id and password (see [`Self::connect_as`]).
    #[cfg(any(test, feature = "internals"))]
    pub fn session_credentials(&self) -> (i64, Vec<u8>) {
        self.client.session()
    }

    async fn create_chroot(&self) -> Result<(), MetadataError> {
        let chroot = self.connect.chroot.clone();
        let mut prefix = String::new();
        for segment in chroot.trim_start_matches('/').split('/') {
            prefix.push('/');
            prefix.push_str(segment);
            match self
                .client
                .create(
                    &prefix,
                    Vec::new(),
                    Acl::open_unsafe().clone(),
                    ZkCreateMode::Persistent,
                )
                .await
            {
                Ok(_) => log::info!("created the ZooKeeper chroot path {prefix}"),
                Err(ZkError::NodeExists) => {}
                Err(e) => return Err(zk_error(&prefix, e)),
            }
        }
        Ok(())
    }

    /// The server-side path of a store path.
    fn full(&self, path: &str) -> Result<String, MetadataError> {
        validate_path(path)?;
        Ok(match (self.connect.chroot.as_str(), path) {
            ("", _) => path.to_owned(),
            (chroot, "/") => chroot.to_owned(),
            (chroot, _) => format!("{chroot}{path}"),
        })
    }

    /// Runs `op` again while the connection is being re-established.
    async fn retrying<T, F, Fut>(&self, path: &str, mut op: F) -> Result<T, MetadataError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, ZkError>>,
    {
        let mut backoff = RECONNECT_BACKOFF;
        for _ in 0..CONNECTION_LOSS_RETRIES {
            match op().await {
                Err(ZkError::ConnectionLoss) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
                other => return other.map_err(|e| zk_error(path, e)),
            }
        }
        Err(MetadataError::ConnectionLoss(format!(
            "{path}: still disconnected after {CONNECTION_LOSS_RETRIES} attempts"
        )))
    }

    /// Registers the data watch, and the child watch when the znode
    /// exists, unless they are armed already.
    async fn arm(&self, path: &str, full: &str) -> Result<(), MetadataError> {
        let (session, need_data, need_child) = {
            let mut w = self.watches()?;
            let session = w.session;
            let entry = w.paths.entry(path.to_owned()).or_default();
            let need = (!entry.data_armed, !entry.child_armed);
            entry.data_armed = true;
            entry.child_armed = true;
            (session, need.0, need.1)
        };
        let mut exists = true;
        if need_data {
            let watches = self.watches.clone();
            let owned = path.to_owned();
            let result = self
                .client
                .exists_w(full, move |event| {
                    let event = translate(&owned, event.event_type);
                    if let Ok(mut w) = watches.lock() {
                        w.fired(session, &owned, event, false);
                    }
                })
                .await;
            match result {
                Ok(stat) => exists = stat.is_some(),
                Err(e) => {
                    self.disarm(path, true, need_child);
                    return Err(zk_error(path, e));
                }
            }
        }
        if need_child {
            if !exists {
                // No child watch on a missing znode; its creation fires the
                // data watch, and the caller re-arms then.
                self.disarm(path, false, true);
                return Ok(());
            }
            let watches = self.watches.clone();
            let owned = path.to_owned();
            let result = self
                .client
                .get_children_w(full, move |event| {
                    let event = translate(&owned, event.event_type);
                    if let Ok(mut w) = watches.lock() {
                        w.fired(session, &owned, event, true);
                    }
                })
                .await;
            match result {
                Ok(_) => {}
                // Deleted in between: the data watch reports it.
                Err(ZkError::NoNode) => self.disarm(path, false, true),
                Err(e) => {
                    self.disarm(path, false, true);
                    return Err(zk_error(path, e));
                }
            }
        }
        Ok(())
    }

    fn disarm(&self, path: &str, data: bool, child: bool) {
        if let Ok(mut w) = self.watches.lock() {
            if let Some(entry) = w.paths.get_mut(path) {
                entry.data_armed &= !data;
                entry.child_armed &= !child;
            }
        }
    }

    fn watches(&self) -> Result<std::sync::MutexGuard<'_, Watches>, MetadataError> {
        self.watches.lock().map_err(|_| MetadataError::Corrupt {
            what: "ZooKeeper watch table".to_owned(),
            reason: "a watch callback panicked".to_owned(),
        })
    }

    /// The actual version of `path`, for a `BadVersion` error.
    async fn actual_version(&self, path: &str, full: &str) -> i32 {
        match self.client.exists(full, false).await {
            Ok(Some(stat)) => stat.version,
            _ => {
                log::debug!("{path}: no version to report after BadVersion");
                -1
            }
        }
    }

    async fn bad_version(
        &self,
        error: MetadataError,
        full: &str,
        expected: Option<i32>,
    ) -> MetadataError {
        match error {
            MetadataError::BadVersion { path, .. } => {
                let actual = self.actual_version(&path, full).await;
                MetadataError::BadVersion {
                    path,
                    expected: expected.unwrap_or(-1),
                    actual,
                }
            }
            other => other,
        }
    }
}

fn translate(path: &str, event: WatchedEventType) -> Option<WatchedEvent> {
    let path = path.to_owned();
    match event {
        WatchedEventType::NodeCreated => Some(WatchedEvent::NodeCreated(path)),
        WatchedEventType::NodeDeleted => Some(WatchedEvent::NodeDeleted(path)),
        WatchedEventType::NodeDataChanged => Some(WatchedEvent::NodeDataChanged(path)),
        WatchedEventType::NodeChildrenChanged => Some(WatchedEvent::NodeChildrenChanged(path)),
        _ => None,
    }
}

fn zk_error(path: &str, error: ZkError) -> MetadataError {
    let path = path.to_owned();
    match error {
        ZkError::NoNode => MetadataError::NoNode(path),
        ZkError::NodeExists => MetadataError::NodeExists(path),
        ZkError::BadVersion => MetadataError::BadVersion {
            path,
            expected: -1,
            actual: -1,
        },
        ZkError::NotEmpty => MetadataError::NotEmpty(path),
        ZkError::NoChildrenForEphemerals => MetadataError::NoChildrenForEphemerals(path),
        ZkError::SessionExpired => MetadataError::SessionExpired,
        ZkError::BadArguments => MetadataError::InvalidPath(path),
        ZkError::ConnectionLoss | ZkError::OperationTimeout => {
            MetadataError::ConnectionLoss(format!("{path}: {error}"))
        }
        other => MetadataError::ZooKeeper {
            path,
            reason: other.to_string(),
        },
    }
}

fn stat(stat: &zookeeper_async::Stat) -> Stat {
    Stat {
        version: stat.version,
        creation_zxid: stat.czxid,
        ephemeral_owner: stat.ephemeral_owner,
    }
}

fn zk_mode(mode: CreateMode) -> ZkCreateMode {
    match mode {
        CreateMode::Persistent => ZkCreateMode::Persistent,
        CreateMode::Ephemeral => ZkCreateMode::Ephemeral,
    }
}

impl MetadataStore for ZooKeeperStore {
    fn create(&self, path: &str, data: Vec<u8>, mode: CreateMode) -> StoreFuture<'_, ()> {
        let path = path.to_owned();
        Box::pin(async move {
            let full = self.full(&path)?;
            check_size(&path, &data)?;
            self.retrying(&path, || {
                self.client.create(
                    &full,
                    data.clone(),
                    Acl::open_unsafe().clone(),
                    zk_mode(mode),
                )
            })
            .await
            .map(|_| ())
        })
    }

    fn create_sequential(&self, prefix: &str, data: Vec<u8>) -> StoreFuture<'_, String> {
        let prefix = prefix.to_owned();
        Box::pin(async move {
            let full = self.full(&prefix)?;
            check_size(&prefix, &data)?;
            // Not retried: a retry after a lost answer would make a second
            // notification, which its readers tolerate less than an error.
            let created = self
                .client
                .create(
                    &full,
                    data,
                    Acl::open_unsafe().clone(),
                    ZkCreateMode::PersistentSequential,
                )
                .await
                .map_err(|e| zk_error(&prefix, e))?;
            Ok(created
                .strip_prefix(self.connect.chroot.as_str())
                .unwrap_or(&created)
                .to_owned())
        })
    }

    fn get(&self, path: &str) -> StoreFuture<'_, Option<(Vec<u8>, Stat)>> {
        let path = path.to_owned();
        Box::pin(async move {
            let full = self.full(&path)?;
            match self
                .retrying(&path, || self.client.get_data(&full, false))
                .await
            {
                Ok((data, s)) => Ok(Some((data, stat(&s)))),
                Err(MetadataError::NoNode(_)) => Ok(None),
                Err(e) => Err(e),
            }
        })
    }

    fn set(
        &self,
        path: &str,
        data: Vec<u8>,
        expected_version: Option<i32>,
    ) -> StoreFuture<'_, Stat> {
        let path = path.to_owned();
        Box::pin(async move {
            let full = self.full(&path)?;
            check_size(&path, &data)?;
            match self
                .retrying(&path, || {
                    self.client.set_data(&full, data.clone(), expected_version)
                })
                .await
            {
                Ok(s) => Ok(stat(&s)),
                Err(e) => Err(self.bad_version(e, &full, expected_version).await),
            }
        })
    }

    fn delete(&self, path: &str, expected_version: Option<i32>) -> StoreFuture<'_, ()> {
        let path = path.to_owned();
        Box::pin(async move {
            let full = self.full(&path)?;
            if path == "/" {
                return Err(MetadataError::InvalidPath(path));
            }
            match self
                .retrying(&path, || self.client.delete(&full, expected_version))
                .await
            {
                Ok(()) => Ok(()),
                Err(e) => Err(self.bad_version(e, &full, expected_version).await),
            }
        })
    }

    fn children(&self, path: &str) -> StoreFuture<'_, Vec<String>> {
        let path = path.to_owned();
        Box::pin(async move {
            let full = self.full(&path)?;
            let mut children = self
                .retrying(&path, || self.client.get_children(&full, false))
                .await?;
            children.sort();
            Ok(children)
        })
    }

    fn watch(&self, path: &str) -> StoreFuture<'_, oneshot::Receiver<WatchedEvent>> {
        let path = path.to_owned();
        Box::pin(async move {
            let full = self.full(&path)?;
            let (tx, rx) = oneshot::channel();
            {
                let mut w = self.watches()?;
                let entry = w.paths.entry(path.clone()).or_default();
                entry.waiting.retain(|s| !s.is_closed());
                entry.waiting.push(tx);
            }
            self.arm(&path, &full).await?;
            Ok(rx)
        })
    }

    fn multi(&self, ops: Vec<StoreOp>) -> StoreFuture<'_, Vec<Stat>> {
        Box::pin(async move {
            let mut requests = Vec::with_capacity(ops.len());
            for op in &ops {
                let full = self.full(op.path())?;
                requests.push(match op {
                    StoreOp::Create { path, data, mode } => {
                        check_size(path, data)?;
                        MultiOp::Create(CreateRequest {
                            path: full,
                            data: data.clone(),
                            acl: Acl::open_unsafe().clone(),
                            flags: zk_mode(*mode) as i32,
                        })
                    }
                    StoreOp::Set {
                        path,
                        data,
                        expected_version,
                    } => {
                        check_size(path, data)?;
                        MultiOp::SetData(SetDataRequest {
                            path: full,
                            data: data.clone(),
                            version: expected_version.unwrap_or(-1),
                        })
                    }
                    StoreOp::Delete {
                        expected_version, ..
                    } => MultiOp::Delete(DeleteRequest {
                        path: full,
                        version: expected_version.unwrap_or(-1),
                    }),
                    StoreOp::Check { version, .. } => MultiOp::Check(CheckVersionRequest {
                        path: full,
                        version: *version,
                    }),
                });
            }
            // The client takes the requests by value; rebuild them per try.
            let mut remaining = Some(requests);
            let mut backoff = RECONNECT_BACKOFF;
            for _ in 0..CONNECTION_LOSS_RETRIES {
                let Some(requests) = remaining.take() else {
                    break;
                };
                let retry = requests.clone();
                match self.client.multi(requests).await {
                    Ok(results) => {
                        return Ok(results
                            .iter()
                            .zip(&ops)
                            .map(|(result, op)| match (result, op) {
                                (MultiResult::SetData { stat: s }, _) => stat(s),
                                (_, StoreOp::Check { version, .. }) => Stat {
                                    version: *version,
                                    creation_zxid: 0,
                                    ephemeral_owner: 0,
                                },
                                _ => Stat {
                                    version: 0,
                                    creation_zxid: 0,
                                    ephemeral_owner: 0,
                                },
                            })
                            .collect())
                    }
                    Err((_, ZkError::ConnectionLoss)) => {
                        remaining = Some(retry);
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                    Err((index, e)) => {
                        let path = ops.get(index).map_or("/", |op| op.path());
                        let error = zk_error(path, e);
                        let expected = match ops.get(index) {
                            Some(StoreOp::Set {
                                expected_version, ..
                            })
                            | Some(StoreOp::Delete {
                                expected_version, ..
                            }) => *expected_version,
                            Some(StoreOp::Check { version, .. }) => Some(*version),
                            _ => None,
                        };
                        let full = self.full(path)?;
                        return Err(self.bad_version(error, &full, expected).await);
                    }
                }
            }
            Err(MetadataError::ConnectionLoss(format!(
                "multi: still disconnected after {CONNECTION_LOSS_RETRIES} attempts"
            )))
        })
    }

    fn sessions(&self) -> watch::Receiver<u64> {
        self.sessions.clone()
    }

    fn session_id(&self) -> i64 {
        self.client.session().0
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move { self.client.close().await.map_err(|e| zk_error("/", e)) })
    }
}

impl std::fmt::Debug for ZooKeeperStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZooKeeperStore")
            .field("servers", &self.connect.servers)
            .field("chroot", &self.connect.chroot)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_string_splits_servers_and_chroot() {
        let c = ConnectString::parse("h1:2181,h2:2181/kafka/a").expect("parse");
        assert_eq!(c.servers, "h1:2181,h2:2181");
        assert_eq!(c.chroot, "/kafka/a");
        let c = ConnectString::parse("h1:2181/").expect("parse");
        assert_eq!(c.chroot, "");
        assert!(ConnectString::parse("h1:2181/a/").is_err());
        assert!(ConnectString::parse("/kafka").is_err());
    }

    /// Watch callbacks from an expired session, and repeated firings, wake
    /// nobody twice.
    #[test]
    fn stale_and_repeated_watch_callbacks_are_ignored() {
        let mut w = Watches::default();
        let (tx, mut rx) = oneshot::channel();
        let entry = w.paths.entry("/a".into()).or_default();
        entry.waiting.push(tx);
        entry.data_armed = true;
        w.fired(
            7,
            "/a",
            Some(WatchedEvent::NodeDataChanged("/a".into())),
            false,
        );
        assert!(rx.try_recv().is_err(), "a stale session's callback fired");
        w.fired(
            0,
            "/a",
            Some(WatchedEvent::NodeDataChanged("/a".into())),
            false,
        );
        assert_eq!(
            rx.try_recv().ok(),
            Some(WatchedEvent::NodeDataChanged("/a".into()))
        );
        assert!(w.paths.is_empty(), "a fired, unarmed path is forgotten");
        w.expire();
        assert_eq!(w.session, 1);
    }
}
