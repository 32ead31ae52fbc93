//! One contract, two backends: every check here runs against the embedded
//! store and against a real ZooKeeper server (Debian's package) through
//! `ZooKeeperStore`, so the controller code that runs over one runs over
//! the other. ZooKeeper-only behaviour (chroot, session expiry, an
//! unreachable ensemble) is tested at the end.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::zookeeper::ZooKeeperServer;
use ferrolog::metadata::{
    CreateMode, EmbeddedStore, MetadataError, MetadataStore, StoreOp, WatchedEvent, ZooKeeperStore,
};
use tokio::sync::oneshot;

const P: CreateMode = CreateMode::Persistent;
const E: CreateMode = CreateMode::Ephemeral;
const SESSION: Duration = Duration::from_secs(6);
const CONNECT: Duration = Duration::from_secs(20);

/// A watch that must fire (generous: CI machines are loaded).
async fn fired(rx: &mut oneshot::Receiver<WatchedEvent>) -> Option<WatchedEvent> {
    tokio::time::timeout(Duration::from_secs(10), rx)
        .await
        .ok()
        .and_then(Result::ok)
}

/// A watch that must stay quiet.
async fn quiet(rx: &mut oneshot::Receiver<WatchedEvent>) -> bool {
    tokio::time::timeout(Duration::from_millis(300), rx)
        .await
        .is_err()
}

async fn zk_store(zk: &ZooKeeperServer, chroot: &str) -> Arc<ZooKeeperStore> {
    ZooKeeperStore::connect(
        &format!("{}{chroot}", zk.connect_string()),
        SESSION,
        CONNECT,
    )
    .await
    .expect("connect to ZooKeeper")
}

/// Runs `check` on the embedded store, then on ZooKeeper under a chroot.
macro_rules! both_backends {
    ($($name:ident => $check:ident;)*) => {$(
        #[tokio::test(flavor = "current_thread")]
        async fn $name() {
            $check(EmbeddedStore::in_memory()).await;
            let zk = ZooKeeperServer::start();
            $check(zk_store(&zk, "/ferrolog").await).await;
        }
    )*};
}

both_backends! {
    versions_and_bad_version => check_versions;
    errors_and_recursive_helpers => check_errors;
    children_are_sorted_names => check_children;
    watches_fire_once_for_every_kind_of_change => check_watches;
    multi_is_all_or_nothing => check_multi;
    creation_zxid_and_ephemeral_owner => check_stat;
    sequential_znodes_count_up => check_sequential;
}

async fn check_sequential(store: Arc<impl MetadataStore>) {
    store
        .create_recursive("/config/changes", vec![], P)
        .await
        .expect("parent");
    let first = store
        .create_sequential("/config/changes/config_change_", b"1".to_vec())
        .await
        .expect("first");
    let second = store
        .create_sequential("/config/changes/config_change_", b"2".to_vec())
        .await
        .expect("second");
    assert_eq!(first, "/config/changes/config_change_0000000000");
    assert_eq!(second, "/config/changes/config_change_0000000001");
    assert_eq!(
        store.get(&second).await.expect("get").expect("created").0,
        b"2".to_vec()
    );
    assert!(matches!(
        store.create_sequential("/missing/c_", vec![]).await,
        Err(MetadataError::NoNode(_))
    ));
}

async fn check_versions(store: Arc<impl MetadataStore>) {
    store.create("/a", b"0".to_vec(), P).await.expect("create");
    assert_eq!(store.get("/a").await.expect("get").expect("a").1.version, 0);
    let stat = store.set("/a", b"1".to_vec(), Some(0)).await.expect("set");
    assert_eq!(stat.version, 1);
    assert_eq!(
        store
            .set("/a", b"2".to_vec(), None)
            .await
            .expect("set")
            .version,
        2
    );
    match store.set("/a", b"x".to_vec(), Some(1)).await {
        Err(MetadataError::BadVersion {
            path,
            expected,
            actual,
        }) => {
            assert_eq!((path.as_str(), expected, actual), ("/a", 1, 2))
        }
        other => panic!("expected BadVersion, got {other:?}"),
    }
    assert!(matches!(
        store.delete("/a", Some(0)).await,
        Err(MetadataError::BadVersion { .. })
    ));
    assert_eq!(
        store.get("/a").await.expect("get").expect("a").0,
        b"2".to_vec()
    );
    store
        .delete("/a", Some(2))
        .await
        .expect("delete at version");
    assert_eq!(store.get("/a").await.expect("get"), None);
}

async fn check_errors(store: Arc<impl MetadataStore>) {
    assert!(matches!(
        store.create("/a/b", vec![], P).await,
        Err(MetadataError::NoNode(_))
    ));
    assert!(matches!(
        store.set("/a", vec![], None).await,
        Err(MetadataError::NoNode(_))
    ));
    assert!(matches!(
        store.delete("/a", None).await,
        Err(MetadataError::NoNode(_))
    ));
    assert!(matches!(
        store.children("/a").await,
        Err(MetadataError::NoNode(_))
    ));
    store
        .create_recursive("/a/b/c", b"c".to_vec(), P)
        .await
        .expect("recursive");
    assert_eq!(
        store.get("/a/b").await.expect("get").expect("parent").0,
        Vec::<u8>::new()
    );
    assert!(matches!(
        store.create("/a/b/c", vec![], P).await,
        Err(MetadataError::NodeExists(_))
    ));
    assert!(matches!(
        store.delete("/a/b", None).await,
        Err(MetadataError::NotEmpty(_))
    ));
    store.create("/e", vec![], E).await.expect("ephemeral");
    assert!(matches!(
        store.create("/e/child", vec![], P).await,
        Err(MetadataError::NoChildrenForEphemerals(_))
    ));
    for bad in ["a", "/a/", "//a", "/a/../b"] {
        assert!(
            matches!(store.get(bad).await, Err(MetadataError::InvalidPath(_))),
            "{bad}"
        );
    }
    // ZooKeeper would drop the connection on an oversized packet: refused
    // before it is sent, and the store keeps working.
    let big = vec![b'x'; ferrolog::metadata::store::MAX_DATA_BYTES + 1];
    assert!(matches!(
        store.set("/a", big, None).await,
        Err(MetadataError::DataTooLarge { .. })
    ));
    store.delete_recursive("/a").await.expect("delete subtree");
    assert_eq!(store.get("/a").await.expect("get"), None);
    store
        .delete_recursive("/a")
        .await
        .expect("already gone is fine");
}

async fn check_children(store: Arc<impl MetadataStore>) {
    store.create("/ids", vec![], P).await.expect("ids");
    for id in ["10", "2", "1", "b", "a"] {
        store
            .create(&format!("/ids/{id}"), vec![], E)
            .await
            .expect("child");
    }
    assert_eq!(
        store.children("/ids").await.expect("children"),
        ["1", "10", "2", "a", "b"]
    );
}

async fn check_watches(store: Arc<impl MetadataStore>) {
    let mut created = store.watch("/w").await.expect("watch");
    store.create("/w", vec![], P).await.expect("create");
    assert_eq!(
        fired(&mut created).await,
        Some(WatchedEvent::NodeCreated("/w".into()))
    );

    let mut data = store.watch("/w").await.expect("watch");
    store.set("/w", b"1".to_vec(), None).await.expect("set");
    assert_eq!(
        fired(&mut data).await,
        Some(WatchedEvent::NodeDataChanged("/w".into()))
    );

    let mut children = store.watch("/w").await.expect("watch");
    store.create("/w/c", vec![], E).await.expect("child");
    assert_eq!(
        fired(&mut children).await,
        Some(WatchedEvent::NodeChildrenChanged("/w".into()))
    );

    // Many waiters on one path all wake, once.
    let mut waiters = Vec::new();
    for _ in 0..50 {
        waiters.push(store.watch("/w").await.expect("watch"));
    }
    store.set("/w", b"2".to_vec(), None).await.expect("set");
    for w in &mut waiters {
        assert_eq!(
            fired(w).await,
            Some(WatchedEvent::NodeDataChanged("/w".into()))
        );
    }

    let mut child_gone = store.watch("/w/c").await.expect("watch");
    let mut parent = store.watch("/w").await.expect("watch");
    store.delete("/w/c", None).await.expect("delete child");
    assert_eq!(
        fired(&mut child_gone).await,
        Some(WatchedEvent::NodeDeleted("/w/c".into()))
    );
    assert_eq!(
        fired(&mut parent).await,
        Some(WatchedEvent::NodeChildrenChanged("/w".into()))
    );

    let mut deleted = store.watch("/w").await.expect("watch");
    let mut unrelated = store.watch("/other").await.expect("watch");
    store.delete("/w", None).await.expect("delete");
    assert_eq!(
        fired(&mut deleted).await,
        Some(WatchedEvent::NodeDeleted("/w".into()))
    );
    assert!(quiet(&mut unrelated).await);

    // A failed operation fires nothing.
    store.create("/f", vec![], P).await.expect("create");
    let mut rx = store.watch("/f").await.expect("watch");
    assert!(store.set("/f", vec![], Some(7)).await.is_err());
    assert!(store.create("/f", vec![], P).await.is_err());
    assert!(quiet(&mut rx).await);
}

async fn check_multi(store: Arc<impl MetadataStore>) {
    store.create("/topics", vec![], P).await.expect("create");
    let mut watch = store.watch("/topics").await.expect("watch");
    let mut ops = vec![StoreOp::create("/topics/t", b"{}".to_vec())];
    for p in 0..200 {
        ops.push(StoreOp::create(format!("/topics/t/{p}"), vec![]));
        ops.push(StoreOp::create(
            format!("/topics/t/{p}/state"),
            b"s".to_vec(),
        ));
    }
    let mut failing = ops.clone();
    failing.push(StoreOp::Check {
        path: "/topics".into(),
        version: 7,
    });
    match store.multi(failing).await {
        Err(MetadataError::BadVersion {
            path,
            expected: 7,
            actual: 0,
        }) => {
            assert_eq!(path, "/topics")
        }
        other => panic!("expected BadVersion on /topics, got {other:?}"),
    }
    assert_eq!(store.get("/topics/t").await.expect("get"), None);
    assert!(quiet(&mut watch).await, "a failed multi fired a watch");
    // The failing op is named, wherever it is.
    let exists = vec![
        StoreOp::create("/topics/u", vec![]),
        StoreOp::create("/topics", vec![]),
    ];
    assert!(matches!(
        store.multi(exists).await,
        Err(MetadataError::NodeExists(p)) if p == "/topics"
    ));
    assert_eq!(store.get("/topics/u").await.expect("get"), None);

    ops.push(StoreOp::Check {
        path: "/topics".into(),
        version: 0,
    });
    ops.push(StoreOp::Set {
        path: "/topics/t".into(),
        data: b"{\"v\":2}".to_vec(),
        expected_version: Some(0),
    });
    let stats = store.multi(ops).await.expect("multi");
    assert_eq!(stats.len(), 403);
    assert_eq!(stats[402].version, 1);
    assert_eq!(
        fired(&mut watch).await,
        Some(WatchedEvent::NodeChildrenChanged("/topics".into()))
    );
    assert_eq!(
        store.children("/topics/t").await.expect("children").len(),
        200
    );
    let (data, stat) = store.get("/topics/t").await.expect("get").expect("t");
    assert_eq!((data.as_slice(), stat.version), (&b"{\"v\":2}"[..], 1));
    let delete = vec![
        StoreOp::Delete {
            path: "/topics/t/0/state".into(),
            expected_version: Some(0),
        },
        StoreOp::Delete {
            path: "/topics/t/0".into(),
            expected_version: None,
        },
    ];
    store.multi(delete).await.expect("delete in a multi");
    assert_eq!(store.get("/topics/t/0").await.expect("get"), None);
}

async fn check_stat(store: Arc<impl MetadataStore>) {
    store.create("/p", vec![], P).await.expect("p");
    store.create("/e1", vec![], E).await.expect("e1");
    store.create("/e2", vec![], E).await.expect("e2");
    let p = store.get("/p").await.expect("get").expect("p").1;
    let e1 = store.get("/e1").await.expect("get").expect("e1").1;
    let e2 = store.get("/e2").await.expect("get").expect("e2").1;
    assert_eq!(p.ephemeral_owner, 0);
    assert_ne!(e1.ephemeral_owner, 0);
    assert_eq!(
        e1.ephemeral_owner, e2.ephemeral_owner,
        "one session owns both"
    );
    assert!(p.creation_zxid < e1.creation_zxid && e1.creation_zxid < e2.creation_zxid);
    // A set does not change the creation zxid.
    let set = store.set("/e1", b"x".to_vec(), None).await.expect("set");
    assert_eq!(set.creation_zxid, e1.creation_zxid);
}

/// `zookeeper.connect`'s chroot is created when missing and everything
/// lives below it: a root handle sees the store's `/x` at `/chroot/a/x`.
#[tokio::test(flavor = "current_thread")]
async fn chroot_is_created_and_honoured() {
    let zk = ZooKeeperServer::start();
    let rooted = zk_store(&zk, "/chroot/a").await;
    rooted.create("/x", b"1".to_vec(), P).await.expect("create");
    assert_eq!(rooted.children("/").await.expect("children"), ["x"]);
    let root = zk_store(&zk, "").await;
    assert_eq!(
        root.get("/chroot/a/x")
            .await
            .expect("get")
            .expect("under the chroot")
            .0,
        b"1".to_vec()
    );
    assert_eq!(root.get("/x").await.expect("get"), None);
    // A second store on the same chroot finds it in place.
    let again = zk_store(&zk, "/chroot/a").await;
    assert!(again.get("/x").await.expect("get").is_some());
}

/// Kafka's `zookeeper.connection.timeout.ms`: with nothing listening,
/// connecting fails within the timeout instead of retrying forever.
#[tokio::test(flavor = "current_thread")]
async fn unreachable_ensemble_fails_within_the_connection_timeout() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let started = Instant::now();
    let result = ZooKeeperStore::connect(
        &format!("127.0.0.1:{port}"),
        SESSION,
        Duration::from_millis(1500),
    )
    .await;
    let waited = started.elapsed();
    match result {
        Err(MetadataError::ConnectionLoss(reason)) => {
            assert!(
                reason.contains("zookeeper.connection.timeout.ms"),
                "{reason}"
            )
        }
        other => panic!("expected a connection failure, got {other:?}"),
    }
    assert!(waited < Duration::from_secs(10), "took {waited:?}");
}

/// A session expired by the server (another handle on the same session,
/// closed, as ZooKeeper's and Kafka's tests do): its ephemeral znodes go,
/// pending watch receivers are dropped rather than left hanging, the
/// session number moves on, and the store keeps working on a new session.
#[tokio::test(flavor = "current_thread")]
async fn session_expiry_is_reported_and_the_store_recovers() {
    let zk = ZooKeeperServer::start();
    let store = zk_store(&zk, "/s").await;
    let mut sessions = store.sessions();
    let first = *sessions.borrow_and_update();
    store.create("/eph", vec![], E).await.expect("ephemeral");
    store.create("/quiet", vec![], P).await.expect("persistent");
    let pending = store.watch("/quiet").await.expect("watch");

    let (id, _) = store.session_credentials();
    common::zookeeper::expire_session(&format!("{}/s", zk.connect_string()), &store).await;
    assert_ne!(*sessions.borrow(), first);
    assert!(
        tokio::time::timeout(Duration::from_secs(10), pending)
            .await
            .expect("not hung")
            .is_err(),
        "the pending watch was dropped, not fired"
    );
    assert_eq!(
        store.get("/eph").await.expect("get"),
        None,
        "the ephemeral went with the session"
    );
    store
        .create("/eph", vec![], E)
        .await
        .expect("re-created on the new session");
    let owner = store
        .get("/eph")
        .await
        .expect("get")
        .expect("eph")
        .1
        .ephemeral_owner;
    assert_eq!(owner, store.session_credentials().0);
    assert_ne!(owner, id);
    let mut watch = store
        .watch("/quiet")
        .await
        .expect("watch on the new session");
    store.set("/quiet", b"1".to_vec(), None).await.expect("set");
    assert_eq!(
        fired(&mut watch).await,
        Some(WatchedEvent::NodeDataChanged("/quiet".into()))
    );
}
