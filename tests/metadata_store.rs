//! What only the embedded metadata store does: it survives a restart with
//! exactly its persistent znodes, writes its file once per transaction and
//! off the calling thread, plays a session expiry for tests; and the znode
//! catalogue writes Kafka's bytes. The contract it shares with ZooKeeper
//! (versions, errors, sorted children, one-shot watches, `multi`) is checked
//! against both backends in `tests/metadata_backends.rs`.

use std::fs;
use std::time::Duration;

use ferrolog::metadata::znodes::TopicPartitionStateZNode;
use ferrolog::metadata::{
    CreateMode, EmbeddedStore, LeaderAndIsr, MetadataError, MetadataStore, WatchedEvent,
};
use ferrolog::topic_partition::TopicPartition;
use tokio::sync::oneshot;

const P: CreateMode = CreateMode::Persistent;
const E: CreateMode = CreateMode::Ephemeral;

/// Waits briefly for a watch; `None` if it did not fire.
async fn fired(rx: &mut oneshot::Receiver<WatchedEvent>) -> Option<WatchedEvent> {
    tokio::time::timeout(Duration::from_millis(50), rx)
        .await
        .ok()
        .and_then(Result::ok)
}

/// Persistent znodes (data and version) survive reopening the file;
/// ephemeral ones vanish, as when a ZooKeeper session ends.
#[tokio::test(flavor = "current_thread")]
async fn persistent_znodes_survive_reopen_and_ephemeral_ones_do_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("meta.json");
    {
        let store = EmbeddedStore::open(&file).expect("open");
        store
            .create_recursive("/brokers/topics/t", b"{}".to_vec(), P)
            .await
            .expect("topic");
        store
            .set("/brokers/topics/t", b"{\"v\":1}".to_vec(), None)
            .await
            .expect("set");
        store.create("/brokers/ids", vec![], P).await.expect("ids");
        store
            .create("/brokers/ids/0", b"reg".to_vec(), E)
            .await
            .expect("ephemeral");
        store
            .create("/binary", vec![0xff, 0x00, 0x80], P)
            .await
            .expect("binary");
    }
    let store = EmbeddedStore::open(&file).expect("reopen");
    let (data, stat) = store
        .get("/brokers/topics/t")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!((data.as_slice(), stat.version), (&b"{\"v\":1}"[..], 1));
    assert_eq!(store.get("/brokers/ids/0").await.expect("get"), None);
    assert!(store
        .children("/brokers/ids")
        .await
        .expect("ids")
        .is_empty());
    assert_eq!(
        store.children("/brokers").await.expect("brokers"),
        ["ids", "topics"]
    );
    let (binary, _) = store.get("/binary").await.expect("get").expect("kept");
    assert_eq!(binary, [0xff, 0x00, 0x80]);
    let text = fs::read_to_string(&file).expect("read file");
    assert!(text.contains("\"/brokers/topics/t\""), "{text}");
    assert!(!text.contains("/brokers/ids/0"), "{text}");
}

/// Expiring the session deletes ephemeral znodes and fires their watches,
/// as a broker's registration disappearing does for the controller.
#[tokio::test(flavor = "current_thread")]
async fn session_expiry_removes_ephemerals_and_fires_watches() {
    let store = EmbeddedStore::in_memory();
    store
        .create_recursive("/brokers/ids/1", b"r".to_vec(), E)
        .await
        .expect("register");
    let mut ids = store.watch("/brokers/ids").await.expect("watch");
    store.expire_session().expect("expire");
    assert_eq!(
        fired(&mut ids).await,
        Some(WatchedEvent::NodeChildrenChanged("/brokers/ids".to_owned()))
    );
    assert!(store
        .children("/brokers/ids")
        .await
        .expect("ids")
        .is_empty());
}

/// A leftover temp file from an interrupted write is discarded on open and
/// the last complete file is what loads.
#[tokio::test(flavor = "current_thread")]
async fn leftover_tmp_file_does_not_break_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("meta.json");
    {
        let store = EmbeddedStore::open(&file).expect("open");
        store
            .create("/kept", b"1".to_vec(), P)
            .await
            .expect("create");
    }
    let tmp = dir.path().join("meta.json.tmp");
    fs::write(&tmp, b"{\"version\":1,\"nodes\":{\"/half").expect("torn tmp");
    let store = EmbeddedStore::open(&file).expect("open despite tmp");
    assert!(store.get("/kept").await.expect("get").is_some());
    assert!(!tmp.exists());
}

/// A corrupt store file is refused with Corrupt naming the file, not
/// replaced by an empty tree.
#[tokio::test(flavor = "current_thread")]
async fn corrupt_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("meta.json");
    fs::write(&file, b"{\"version\":1,\"nodes\":").expect("write");
    match EmbeddedStore::open(&file) {
        Err(MetadataError::Corrupt { what, .. }) => assert!(what.contains("meta.json")),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(
        fs::read(&file).expect("read"),
        b"{\"version\":1,\"nodes\":",
        "left untouched"
    );
}

/// The partition state znode quoted from a real cluster decodes and
/// re-encodes to the same bytes, key order included.
#[tokio::test(flavor = "current_thread")]
async fn partition_state_matches_kafka_bytes() {
    let seed = r#"{"controller_epoch":9,"leader":5,"version":1,"leader_epoch":26,"isr":[5]}"#;
    let tp = TopicPartition::new("testtopic", 0);
    let state = TopicPartitionStateZNode::decode(&tp, seed.as_bytes()).expect("decode");
    assert_eq!(
        state,
        LeaderAndIsr {
            leader: 5,
            leader_epoch: 26,
            isr: vec![5],
            controller_epoch: 9
        }
    );
    assert_eq!(TopicPartitionStateZNode::encode(&state), seed.as_bytes());

    // And it travels through the store unchanged.
    let store = EmbeddedStore::in_memory();
    let path = TopicPartitionStateZNode::path(&tp);
    store
        .create_recursive(&path, TopicPartitionStateZNode::encode(&state), P)
        .await
        .expect("create");
    let (bytes, _) = store.get(&path).await.expect("get").expect("state");
    assert_eq!(bytes, seed.as_bytes());
}

/// The store is usable as a trait object shared across tasks.
#[tokio::test(flavor = "current_thread")]
async fn usable_as_shared_trait_object() {
    let store: std::sync::Arc<dyn MetadataStore> = EmbeddedStore::in_memory();
    ferrolog::metadata::ensure_paths(store.as_ref())
        .await
        .expect("paths");
    let other = store.clone();
    let task = tokio::spawn(async move {
        other
            .create("/brokers/ids/7", b"r".to_vec(), CreateMode::Ephemeral)
            .await
    });
    task.await.expect("join").expect("create from a task");
    assert_eq!(store.children("/brokers/ids").await.expect("ids"), ["7"]);
}

/// `multi` is all or nothing: a transaction whose last op fails (a Check
/// on the wrong version) leaves no trace, fires no watch and writes no
/// file; one that succeeds applies every op, each seeing the earlier ones
/// (a create under a parent created in the same transaction), fires the
/// watches, and writes the file once, however many ops it holds. The
/// result survives a reopen.
#[tokio::test(flavor = "current_thread")]
async fn multi_is_atomic_and_writes_the_file_once() {
    use ferrolog::metadata::StoreOp;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("meta.json");
    let store = EmbeddedStore::open(&file).expect("open");
    store.create("/topics", vec![], P).await.expect("create");
    let mut watch = store.watch("/topics").await.expect("watch");
    let writes_before = store.file_writes();
    let mut ops = vec![StoreOp::create("/topics/t", b"{}".to_vec())];
    for p in 0..2000 {
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
    assert!(matches!(
        store.multi(failing).await,
        Err(MetadataError::BadVersion {
            expected: 7,
            actual: 0,
            ..
        })
    ));
    assert_eq!(store.get("/topics/t").await.expect("get"), None);
    assert!(store
        .children("/topics")
        .await
        .expect("children")
        .is_empty());
    assert_eq!(fired(&mut watch).await, None);
    assert_eq!(store.file_writes(), writes_before);

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
    assert_eq!(stats.len(), 4003);
    assert_eq!(stats[4002].version, 1);
    assert_eq!(store.file_writes(), writes_before + 1);
    assert_eq!(
        fired(&mut watch).await,
        Some(WatchedEvent::NodeChildrenChanged("/topics".into()))
    );
    assert_eq!(
        store.children("/topics/t").await.expect("children").len(),
        2000
    );
    drop(store);
    let reopened = EmbeddedStore::open(&file).expect("reopen");
    let (data, stat) = reopened.get("/topics/t").await.expect("get").expect("kept");
    assert_eq!((data.as_slice(), stat.version), (&b"{\"v\":2}"[..], 1));
    assert!(reopened
        .get("/topics/t/1999/state")
        .await
        .expect("get")
        .is_some());
}

/// Every change to a file-backed store runs off the calling thread (on the
/// blocking pool), so an actor thread never waits on an fsync: on a
/// one-thread runtime, another task keeps running while 20 writes happen
/// (inline writes would return ready futures and starve it).
#[tokio::test(flavor = "current_thread")]
async fn file_writes_run_off_the_calling_thread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = EmbeddedStore::open(&dir.path().join("meta.json")).expect("open");
    // A current-thread runtime: if the write ran inline, this task would
    // be the only thing running; a concurrent ticker proves the thread
    // stayed free while the write (an fsync) was in flight.
    let ticks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let ticker = {
        let ticks = ticks.clone();
        tokio::spawn(async move {
            loop {
                ticks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        })
    };
    for i in 0..20 {
        store
            .create(&format!("/n{i}"), vec![0; 1000], P)
            .await
            .expect("create");
    }
    ticker.abort();
    assert!(
        ticks.load(std::sync::atomic::Ordering::SeqCst) >= 20,
        "the runtime thread was blocked during the writes"
    );
}
