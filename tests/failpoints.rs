//! Faults injected into real broker processes through named fail points
//! (the `fail` crate; built only with `--features failpoints`, armed with
//! the `FAILPOINTS` environment variable at start-up). Each test proves a
//! supervision promise against a real client:
//! - a panic in one partition actor while librdkafka produces to 8
//!   partitions: every record is acknowledged, once, in order, and the
//!   other 7 partitions never see an error; the failed one is back at once;
//! - a partition panicking on every append: bounded restarts, then offline
//!   with KAFKA_STORAGE_ERROR, the rest of the broker unaffected;
//! - a panic in a consumer-group actor: the member rejoins and consumes on,
//!   and the group's committed offsets are all there;
//! - a panic in a log shard command and in the controller: the broker
//!   keeps serving; a controller failing past its budget shuts the broker
//!   down cleanly (exit 1, the clean-shutdown marker written);
//! - lost produce acknowledgements (written, then the connection dropped):
//!   librdkafka's idempotent producer retries and every record is stored
//!   once, in order;
//! - one of two log dirs runs out of space, or becomes unwritable: its
//!   partitions go offline, the other dir's keep working, and they come
//!   back once space is freed or the dir is writable again.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{admin, admin_options, block_on, client_config, BrokerProcess};
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

const STORAGE_ERROR: i16 = 56;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;

/// Create `name` with `partitions`; the per-topic results.
fn create_topics(bootstrap: &str, names: &[&str], partitions: i32) -> Vec<Result<String, String>> {
    let admin = admin(bootstrap);
    let topics: Vec<NewTopic> = names
        .iter()
        .map(|n| NewTopic::new(n, partitions, TopicReplication::Fixed(1)))
        .collect();
    block_on(admin.create_topics(&topics, &admin_options(Duration::from_secs(30))))
        .expect("CreateTopics gets an answer")
        .into_iter()
        .map(|r| r.map_err(|(topic, code)| format!("{topic}: {code:?}")))
        .collect()
}

#[derive(Default)]
struct Acks {
    acked: Mutex<Vec<(i32, i64, u64)>>,
    failed: Mutex<Vec<String>>,
}

#[derive(Clone, Default)]
struct Tracker(Arc<Acks>);

impl ClientContext for Tracker {}

impl ProducerContext for Tracker {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, seq: usize) {
        match result {
            Ok(m) => self
                .0
                .acked
                .lock()
                .unwrap()
                .push((m.partition(), m.offset(), seq as u64)),
            Err((e, _)) => self.0.failed.lock().unwrap().push(format!("{seq}: {e}")),
        }
    }
}

/// One raw Produce v7 (acks=1) of `records` records; the error code.
fn raw_produce(bootstrap: &str, topic: &str, partition: i32, records: usize) -> i16 {
    common::produce_batch(bootstrap, topic, partition, records, 1)
}

/// Create `topic` with 2 partitions on a broker with two log dirs, one
/// partition in each: (the partition in `second`, the other one).
fn partition_per_dir(bootstrap: &str, topic: &str, second: &std::path::Path) -> (i32, i32) {
    assert_eq!(
        create_topics(bootstrap, &[topic], 2),
        vec![Ok(topic.to_string())]
    );
    let in_second = if second.join(format!("{topic}-0")).exists() {
        0
    } else {
        1
    };
    assert!(second.join(format!("{topic}-{in_second}")).exists());
    (in_second, 1 - in_second)
}

/// `offline` of `topic` has gone offline: it keeps refusing writes with
/// KAFKA_STORAGE_ERROR while `online`, on the other log dir, takes them.
fn offline_while_the_other_serves(
    broker: &mut BrokerProcess,
    topic: &str,
    offline: i32,
    online: i32,
) {
    broker.wait_for_line(
        &format!("partition {topic}-{offline} is now offline"),
        Duration::from_secs(5),
    );
    for _ in 0..5 {
        assert_eq!(raw_produce(&broker.bootstrap, topic, online, 10), 0);
        assert_eq!(
            raw_produce(&broker.bootstrap, topic, offline, 10),
            STORAGE_ERROR
        );
    }
}

/// Waits (bounded) for `partition` of `topic` to come back online, writes
/// 10 records to it, and returns its watermarks.
fn back_online_and_writable(broker: &mut BrokerProcess, topic: &str, partition: i32) -> (i64, i64) {
    broker.wait_for_line(
        &format!("partition {topic}-{partition} is back online"),
        Duration::from_secs(30),
    );
    assert_eq!(raw_produce(&broker.bootstrap, topic, partition, 10), 0);
    watermarks(&broker.bootstrap, topic, partition)
}

/// The low and high watermarks of `partition` of `topic`.
fn watermarks(bootstrap: &str, topic: &str, partition: i32) -> (i64, i64) {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", format!("{topic}-check"))
        .create()
        .unwrap();
    consumer
        .fetch_watermarks(topic, partition, Duration::from_secs(10))
        .unwrap()
}

/// `partition.append.fp-3` panics on its 51st append while a librdkafka
/// producer sends 4,000 records round robin over 8 partitions, flushing
/// every 8 so that each partition sees 500 appends. Every record is acknowledged exactly once and is stored
/// in send order; only partition 3 ever failed, once, and it was restarted
/// (one "restarting" line); the broker logged no other failure.
#[test]
fn a_panicking_partition_restarts_while_the_others_keep_acknowledging() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &[],
        &[("FAILPOINTS", "partition.append.fp-3=50*off->1*panic")],
    );
    assert_eq!(
        create_topics(&broker.bootstrap, &["fp"], 8),
        vec![Ok("fp".to_string())]
    );
    let tracker = Tracker::default();
    let producer: BaseProducer<Tracker> = client_config(&broker.bootstrap)
        .set("linger.ms", "0")
        .set("acks", "1")
        .set("retry.backoff.ms", "50")
        .set("max.in.flight.requests.per.connection", "1")
        .create_with_context(tracker.clone())
        .expect("producer");
    let total = 4000usize;
    for seq in 0..total {
        let partition = (seq % 8) as i32;
        let value = seq.to_string();
        let mut record: BaseRecord<'_, (), str, usize> = BaseRecord::with_opaque_to("fp", seq)
            .payload(value.as_str())
            .partition(partition);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(_), back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(5));
                }
                Err((e, _)) => panic!("send: {e}"),
            }
        }
        if seq % 8 == 7 {
            producer.flush(Duration::from_secs(60)).expect("flushed");
        }
    }
    producer.flush(Duration::from_secs(120)).expect("flushed");
    assert!(
        tracker.0.failed.lock().unwrap().is_empty(),
        "{:?}",
        tracker.0.failed
    );
    assert_eq!(tracker.0.acked.lock().unwrap().len(), total);
    let stored = common::drain_ids(&broker.bootstrap, "fp", 8, total, Duration::ZERO);
    for partition in 0..8 {
        let expected: Vec<u64> = (0..total as u64)
            .filter(|s| s % 8 == partition as u64)
            .collect();
        assert_eq!(
            stored.get(&partition),
            Some(&expected),
            "partition {partition}"
        );
    }
    assert_eq!(broker.count_lines("partition fp-3 failed (panic"), 1);
    assert_eq!(broker.count_lines("restarting in"), 1);
    assert_eq!(broker.count_lines(" failed ("), 1, "no other actor failed");
}

/// A fail point that panics on every append to `storm-0`: raw produces get
/// NOT_LEADER_OR_FOLLOWER (retriable) while it restarts, then, past its
/// budget of 5 restarts, KAFKA_STORAGE_ERROR with no further panic: six
/// panics in all, however many requests follow. Another topic works
/// throughout.
#[test]
fn a_partition_panicking_on_every_append_goes_offline_without_a_storm() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &[],
        &[("FAILPOINTS", "partition.append.storm-0=panic")],
    );
    let created = create_topics(&broker.bootstrap, &["storm", "calm"], 1);
    assert!(created.iter().all(|r| r.is_ok()), "{created:?}");
    let mut codes = Vec::new();
    for _ in 0..60 {
        let code = raw_produce(&broker.bootstrap, "storm", 0, 3);
        codes.push(code);
        if code == STORAGE_ERROR {
            break;
        }
        assert_eq!(code, NOT_LEADER_OR_FOLLOWER, "{codes:?}");
        assert_eq!(raw_produce(&broker.bootstrap, "calm", 0, 3), 0);
    }
    assert_eq!(codes.last(), Some(&STORAGE_ERROR), "{codes:?}");
    for _ in 0..20 {
        assert_eq!(raw_produce(&broker.bootstrap, "storm", 0, 3), STORAGE_ERROR);
    }
    assert_eq!(raw_produce(&broker.bootstrap, "calm", 0, 3), 0);
    // Five panics restarted within the budget, the sixth escalated.
    assert_eq!(broker.count_lines("partition storm-0 failed (panic"), 5);
    assert_eq!(broker.count_lines("escalating"), 1);
    assert_eq!(
        broker.count_lines("panic on thread"),
        6,
        "no panic after escalation"
    );
    assert!(broker.is_running());
}

/// `group.heartbeat.g-panic` panics on the group's 31st heartbeat, after
/// the member consumed and committed 500 records. The group actor restarts
/// and reloads; the member rejoins (COORDINATOR_NOT_AVAILABLE or a
/// rebalance, then a new generation) and consumes 500 more; a fresh
/// client's OffsetFetch sees the final commit.
#[test]
fn a_panicking_group_keeps_its_committed_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &[],
        &[("FAILPOINTS", "group.heartbeat.g-panic=30*off->1*panic")],
    );
    assert_eq!(
        create_topics(&broker.bootstrap, &["gp"], 1),
        vec![Ok("gp".to_string())]
    );
    let bootstrap = broker.bootstrap.clone();
    let produce = |from: usize, to: usize| {
        let producer: BaseProducer = client_config(&bootstrap).create().unwrap();
        for seq in from..to {
            let value = seq.to_string();
            producer
                .send(
                    BaseRecord::<(), str>::to("gp")
                        .payload(value.as_str())
                        .partition(0),
                )
                .unwrap();
        }
        producer.flush(Duration::from_secs(30)).unwrap();
    };
    produce(0, 500);
    let consumer: BaseConsumer = client_config(&bootstrap)
        .set("group.id", "g-panic")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("heartbeat.interval.ms", "100")
        .set("session.timeout.ms", "6000")
        .create()
        .unwrap();
    consumer.subscribe(&["gp"]).unwrap();
    let consume_until = |last: i64| {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut next = -1;
        while next < last && Instant::now() < deadline {
            if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                let seq: i64 = std::str::from_utf8(m.payload().unwrap())
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(seq, m.offset(), "one record per offset, in order");
                next = m.offset() + 1;
                if next % 100 == 0 {
                    consumer.commit_consumer_state(CommitMode::Sync).unwrap();
                }
            }
        }
        assert_eq!(next, last, "consumed up to {last}");
    };
    consume_until(500);
    broker.wait_for_line("group g-panic failed (panic", Duration::from_secs(30));
    broker.wait_for_line("group g-panic restarts and reloads", Duration::from_secs(5));
    produce(500, 1000);
    consume_until(1000);
    let fresh: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "g-panic")
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition("gp", 0);
    let committed = fresh
        .committed_offsets(list, Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        committed.find_partition("gp", 0).unwrap().offset(),
        Offset::Offset(1000)
    );
    assert_eq!(broker.count_lines("group g-panic failed"), 1);
}

/// `shard.create` panics once: that CreateTopics fails, the shard thread
/// and every partition on it live on, and the next creation works.
#[test]
fn a_panic_in_a_shard_command_costs_one_request() {
    one_panicking_creation_then_serving(
        &["num.io.threads=1"],
        "shard.create=1*panic",
        "log shard 0: create panicked",
    );
}

/// The acceptor panics on the first connection it accepts: that client's
/// connection is closed, the acceptor restarts under its supervisor on the
/// same listening socket, and the next clients are served.
#[test]
fn a_panicking_acceptor_restarts_and_accepts_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &[],
        &[("FAILPOINTS", "acceptor.accepted=1*panic")],
    );
    let mut first = std::net::TcpStream::connect(&broker.bootstrap).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut byte = [0u8; 1];
    let read = std::io::Read::read(&mut first, &mut byte).map_err(|e| e.kind());
    assert!(
        matches!(read, Ok(0) | Err(std::io::ErrorKind::ConnectionReset)),
        "the connection the acceptor panicked on is closed: {read:?}"
    );
    broker.wait_for_line(
        "the acceptor restarts and listens again",
        Duration::from_secs(5),
    );
    assert_eq!(
        create_topics(&broker.bootstrap, &["after"], 1),
        vec![Ok("after".to_string())]
    );
    assert_eq!(raw_produce(&broker.bootstrap, "after", 0, 5), 0);
    assert!(broker.is_running());
}

/// With `failpoint` set to panic once on a topic creation's way: that
/// CreateTopics fails, `restarted` is logged, the broker lives on, and the
/// next topic is created, led here and written.
fn one_panicking_creation_then_serving(settings: &[&str], failpoint: &str, restarted: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut broker =
        BrokerProcess::start_with_env(dir.path(), settings, &[("FAILPOINTS", failpoint)]);
    let first = create_topics(&broker.bootstrap, &["doomed"], 1);
    assert!(first[0].is_err(), "{first:?}");
    broker.wait_for_line(restarted, Duration::from_secs(5));
    assert_eq!(
        create_topics(&broker.bootstrap, &["fine"], 1),
        vec![Ok("fine".to_string())]
    );
    assert_eq!(raw_produce(&broker.bootstrap, "fine", 0, 5), 0);
    assert!(broker.is_running());
}

/// The controller panics on its first CreateTopic: that request fails, the
/// controller restarts (reloading topics from the store), the retry works.
#[test]
fn a_panicking_controller_restarts_and_serves_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &[],
        &[("FAILPOINTS", "controller.CreateTopic=1*panic")],
    );
    let first = create_topics(&broker.bootstrap, &["later"], 1);
    assert!(first[0].is_err(), "{first:?}");
    broker.wait_for_line(
        "the controller restarts and reloads",
        Duration::from_secs(5),
    );
    assert_eq!(
        create_topics(&broker.bootstrap, &["later"], 1),
        vec![Ok("later".to_string())]
    );
    assert_eq!(raw_produce(&broker.bootstrap, "later", 0, 5), 0);
}

/// The replica manager panics on the controller's first decision about
/// this broker's replicas: that CreateTopics fails, the replica manager
/// restarts under its supervisor (its epochs and fetchers kept), and the
/// next topic is created, led here and written.
#[test]
fn a_panicking_replica_manager_restarts_and_serves_again() {
    one_panicking_creation_then_serving(
        &[],
        "replica_manager.BecomeLeaderOrFollower=1*panic",
        "the replica manager restarts",
    );
}

/// A controller that panics on every CreateTopic: past its budget the
/// broker shuts itself down cleanly (exit 1, a log line naming the cause,
/// the clean-shutdown marker written so the next start skips recovery).
#[test]
fn a_controller_failing_past_its_budget_shuts_the_broker_down_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &[],
        &[("FAILPOINTS", "controller.CreateTopic=panic")],
    );
    for _ in 0..6 {
        let _ = create_topics(&broker.bootstrap, &["never"], 1);
        if !broker.is_running() {
            break;
        }
    }
    let status = broker.wait_for_exit(Duration::from_secs(60));
    assert_eq!(status.code(), Some(1));
    assert_eq!(
        broker.count_lines("shutting down: the controller failed 5 times"),
        1
    );
    assert!(dir.path().join(".kafka_cleanshutdown").exists());
}

/// Mount a tmpfs of `size` at `path` (root only, as CI runs).
fn mount_tmpfs(path: &std::path::Path, size: &str) {
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(path)
        .status()
        .expect("mount runs");
    assert!(
        status.success(),
        "this test mounts a small tmpfs to fill it: run it as root (CI does)"
    );
}

struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// Two log dirs, the second a 4 MiB tmpfs (unmounted when the guard
/// drops), and the `log.dirs` override naming both.
fn big_and_small_log_dirs() -> (tempfile::TempDir, tempfile::TempDir, Unmount, String) {
    let big = tempfile::tempdir().unwrap();
    let small = tempfile::tempdir().unwrap();
    mount_tmpfs(small.path(), "4m");
    let unmount = Unmount(small.path().to_path_buf());
    let dirs = format!(
        "log.dirs={},{}",
        big.path().display(),
        small.path().display()
    );
    (big, small, unmount, dirs)
}

/// Two log dirs, the second a 4 MiB tmpfs. A 2-partition topic gets one
/// partition on each. Filling the small dir makes its partition answer
/// KAFKA_STORAGE_ERROR while the other partition keeps taking writes;
/// deleting the filler brings the full partition back within the retry
/// interval, without a restart, with every acknowledged record readable.
#[test]
fn a_full_log_dir_takes_only_its_partitions_offline_until_space_returns() {
    let (big, small, _unmount, dirs) = big_and_small_log_dirs();
    let mut broker =
        BrokerProcess::start_with_env(big.path(), &[&dirs, "log.segment.bytes=1048576"], &[]);
    let (on_small, on_big) = partition_per_dir(&broker.bootstrap, "disk", small.path());
    // Leave about 300 KiB free on the small dir.
    let free = |path: &std::path::Path| {
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        let c = std::ffi::CString::new(path.as_os_str().to_string_lossy().as_bytes()).unwrap();
        // SAFETY: a valid C string and an out-parameter we own.
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut stat) }, 0);
        stat.f_bavail as u64 * stat.f_frsize as u64
    };
    let filler = small.path().join("filler");
    let filler_size = free(small.path()).saturating_sub(300 * 1024);
    std::fs::write(&filler, vec![0u8; filler_size as usize]).unwrap();
    let mut acked = 0;
    let mut code = 0;
    for _ in 0..200 {
        code = raw_produce(&broker.bootstrap, "disk", on_small, 200);
        if code != 0 {
            break;
        }
        acked += 200;
        assert_eq!(raw_produce(&broker.bootstrap, "disk", on_big, 10), 0);
    }
    assert_eq!(code, STORAGE_ERROR, "the full dir's partition goes offline");
    assert!(acked > 0);
    offline_while_the_other_serves(&mut broker, "disk", on_small, on_big);
    std::fs::remove_file(&filler).unwrap();
    let (low, high) = back_online_and_writable(&mut broker, "disk", on_small);
    assert_eq!(low, 0);
    assert_eq!(
        high,
        acked as i64 + 10,
        "every acknowledged record is still there"
    );
}

/// Two log dirs; a 2-partition topic gets one partition on each. The
/// second dir is made unwritable with its files open (every file and
/// directory in it immutable): its partition answers KAFKA_STORAGE_ERROR
/// while the first dir's keeps taking writes; made writable again, the
/// partition comes back within the retry interval, without a restart,
/// with every acknowledged record readable.
#[test]
fn an_unwritable_log_dir_takes_only_its_partitions_offline_until_restored() {
    let healthy = tempfile::tempdir().unwrap();
    let failing = tempfile::tempdir().unwrap();
    let dirs = format!(
        "log.dirs={},{}",
        healthy.path().display(),
        failing.path().display()
    );
    let mut broker = BrokerProcess::start_with_env(healthy.path(), &[&dirs], &[]);
    let (on_failing, on_healthy) = partition_per_dir(&broker.bootstrap, "ro", failing.path());
    assert_eq!(raw_produce(&broker.bootstrap, "ro", on_failing, 200), 0);
    assert_eq!(raw_produce(&broker.bootstrap, "ro", on_healthy, 200), 0);

    let _restore = common::Writable(failing.path().to_path_buf());
    common::chattr("+i", failing.path());
    assert_eq!(
        raw_produce(&broker.bootstrap, "ro", on_failing, 10),
        STORAGE_ERROR,
        "the first write to the unwritable dir fails and takes its partition offline"
    );
    offline_while_the_other_serves(&mut broker, "ro", on_failing, on_healthy);

    common::chattr("-i", failing.path());
    assert_eq!(
        back_online_and_writable(&mut broker, "ro", on_failing),
        (0, 210),
        "every acknowledged record is still there, and nothing refused"
    );
    assert_eq!(watermarks(&broker.bootstrap, "ro", on_healthy), (0, 250));
}

/// A partition that fills its log dir by itself goes offline, and nothing
/// else would ever free that disk: retention still runs on the offline
/// log (from file metadata), deletes its expired segments, and the
/// partition comes back by itself, without a restart, serving from its
/// raised log start offset.
#[test]
fn retention_frees_a_disk_its_offline_partition_filled() {
    let (big, small, _unmount, dirs) = big_and_small_log_dirs();
    let mut broker = BrokerProcess::start_with_env(
        big.path(),
        &[
            &dirs,
            "log.segment.bytes=524288",
            "log.retention.check.interval.ms=1000",
        ],
        &[],
    );
    let (on_small, _) = partition_per_dir(&broker.bootstrap, "filling", small.path());
    common::alter_retention(&broker.bootstrap, "filling", "8000");
    let started = std::time::Instant::now();
    let mut code = 0;
    for _ in 0..400 {
        code = common::produce_batch(&broker.bootstrap, "filling", on_small, 2000, 1);
        if code != 0 {
            break;
        }
    }
    assert_eq!(code, STORAGE_ERROR, "the partition filled its dir");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "filled within retention.ms, so retention had nothing to delete yet"
    );
    broker.wait_for_line(
        &format!("partition filling-{on_small} is now offline"),
        Duration::from_secs(5),
    );
    broker.wait_for_line(
        &format!("partition filling-{on_small} is offline; retention deleted"),
        Duration::from_secs(30),
    );
    broker.wait_for_line(
        &format!("partition filling-{on_small} is back online"),
        Duration::from_secs(30),
    );
    assert_eq!(
        common::produce_batch(&broker.bootstrap, "filling", on_small, 10, 1),
        0
    );
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "filling-check")
        .create()
        .unwrap();
    let (low, high) = consumer
        .fetch_watermarks("filling", on_small, Duration::from_secs(10))
        .unwrap();
    assert!(
        low > 0 && high > low,
        "served from a raised log start: {low}..{high}"
    );
}

/// An I/O error on an append (`shard.append` returns EIO once) takes that
/// partition's log offline: KAFKA_STORAGE_ERROR for it, the other topic
/// unaffected; the log manager's retry reopens the log (a full load with
/// recovery) and the partition serves again without a restart, holding
/// exactly the acknowledged records.
#[test]
fn an_eio_takes_one_partition_offline_until_its_log_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker =
        BrokerProcess::start_with_env(dir.path(), &[], &[("FAILPOINTS", "shard.append=1*return")]);
    let created = create_topics(&broker.bootstrap, &["eio", "fine"], 1);
    assert!(created.iter().all(|r| r.is_ok()), "{created:?}");
    assert_eq!(raw_produce(&broker.bootstrap, "eio", 0, 4), STORAGE_ERROR);
    broker.wait_for_line("partition eio-0 is now offline", Duration::from_secs(5));
    assert_eq!(raw_produce(&broker.bootstrap, "fine", 0, 4), 0);
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        match raw_produce(&broker.bootstrap, "eio", 0, 4) {
            0 => break,
            STORAGE_ERROR => {
                assert!(Instant::now() < deadline, "the partition never came back");
                std::thread::sleep(Duration::from_millis(250));
            }
            other => panic!("unexpected error {other}"),
        }
    }
    broker.wait_for_line("partition eio-0 is back online", Duration::from_secs(1));
    let consumer: BaseConsumer = client_config(&broker.bootstrap)
        .set("group.id", "eio-check")
        .create()
        .unwrap();
    let (low, high) = consumer
        .fetch_watermarks("eio", 0, Duration::from_secs(10))
        .unwrap();
    assert_eq!((low, high), (0, 4), "only the acknowledged append is there");
}

/// An offline partition keeps its checkpoint lines: a clean shutdown while
/// `eio-0` is offline (EIO on its append) still writes its recovery point
/// and log start offset, so the next start does not forget them.
#[test]
fn an_offline_partition_keeps_its_checkpoint_entries() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &["log.retention.check.interval.ms=600000"],
        &[("FAILPOINTS", "shard.append=1*return")],
    );
    let created = create_topics(&broker.bootstrap, &["eio", "fine"], 1);
    assert!(created.iter().all(|r| r.is_ok()), "{created:?}");
    assert_eq!(raw_produce(&broker.bootstrap, "eio", 0, 4), STORAGE_ERROR);
    broker.wait_for_line("partition eio-0 is now offline", Duration::from_secs(5));
    assert_eq!(raw_produce(&broker.bootstrap, "fine", 0, 4), 0);
    let log_dir = broker.terminate();
    for file in [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
    ] {
        let text = std::fs::read_to_string(log_dir.join(file)).unwrap();
        assert!(
            text.lines().any(|l| l.starts_with("eio 0 ")),
            "{file} forgot the offline partition:\n{text}"
        );
        assert!(
            text.lines().any(|l| l.starts_with("fine 0 ")),
            "{file}:\n{text}"
        );
    }
}

/// Three produces (the 2nd, 5th and 8th) are written and then answered by
/// a dropped connection (`produce.lose_response`): librdkafka's idempotent
/// producer retries the batches it never heard about, the broker answers
/// them as duplicates, and every id is stored exactly once, in order.
#[test]
fn lost_acknowledgements_are_retried_without_duplicates() {
    use common::idempotence::{assert_exactly_once_in_order, IdempotentProducer};
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start_with_env(
        dir.path(),
        &[],
        &[(
            "FAILPOINTS",
            "produce.lose_response=1*off->1*return->2*off->1*return->2*off->1*return",
        )],
    );
    let topic = "lost-acks";
    assert!(create_topics(&broker.bootstrap, &[topic], 2)
        .iter()
        .all(|r| r.is_ok()));
    let records = 20_000;
    let producer = IdempotentProducer::start(&broker.bootstrap, topic, 2, records);
    assert_eq!(producer.finish(), records);
    assert_exactly_once_in_order(&broker.bootstrap, topic, 2, records);
    assert_eq!(broker.count_lines("fail point produce.lose_response"), 3);
}
