//! The examples in `examples/` work as documented, each run as a real
//! process: `embedded_broker` brings a broker up in-process and prints its
//! address, `producer` sends records to it, `consumer` reads them back and
//! prints them, and the broker stops cleanly (exit 0, clean-shutdown marker
//! written) on SIGTERM or when its `--seconds` are up.
//!
//! Integration tests do not get example binaries, so the first test to need
//! one builds the examples once (`cargo build --example ...
//! --offline`, same target dir and profile as this test binary) and runs
//! them from `target/<profile>/examples/`.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

const EXAMPLES: [&str; 6] = [
    "embedded_broker",
    "producer",
    "consumer",
    "stream_tap",
    "topic_counter",
    "file_sink",
];

/// `target/<profile>`, found from this test binary (`target/<profile>/deps/examples-*`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/<profile>/deps")
        .to_path_buf()
}

/// The path of example `name`, building all three examples the first time.
fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let profile_dir = profile_dir();
    let built = BUILT.get_or_init(|| {
        let target_dir = profile_dir.parent().expect("target/<profile> has a parent");
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("debug")
            .to_string();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
        let mut command = Command::new(cargo);
        command
            .arg("build")
            .arg("--offline")
            .arg("--quiet")
            .arg("--manifest-path")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir);
        match profile.as_str() {
            "debug" => {}
            "release" => {
                command.arg("--release");
            }
            other => {
                command.args(["--profile", other]);
            }
        }
        for name in EXAMPLES {
            command.args(["--example", name]);
        }
        // Building may wait for another cargo holding the lock: generous, but bounded.
        let run = run_bounded(&mut command, Duration::from_secs(1800));
        if run.status.success() {
            Ok(())
        } else {
            Err(format!(
                "building the examples failed ({}): {}",
                run.status, run.stderr
            ))
        }
    });
    if let Err(e) = built {
        panic!("{e}");
    }
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// What a finished process said.
struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Run `command` to completion, killing it (and failing) after `timeout`.
fn run_bounded(command: &mut Command, timeout: Duration) -> Run {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting works") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} did not finish within {timeout:?}; stderr: {}",
                stderr.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A running broker example (`embedded_broker`, `stream_tap`,
/// `topic_counter`); dropping it SIGKILLs the process.
struct EmbeddedBroker {
    child: Child,
    address: String,
    stderr: mpsc::Receiver<String>,
}

impl EmbeddedBroker {
    /// Start it and wait (bounded) for its `listening on <addr>` line.
    fn start(log_dir: &Path, extra: &[&str]) -> EmbeddedBroker {
        Self::start_example("embedded_broker", log_dir, extra)
    }

    fn start_example(name: &str, log_dir: &Path, extra: &[&str]) -> EmbeddedBroker {
        let mut child = Command::new(example(name))
            .arg("--log-dir")
            .arg(log_dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("embedded_broker starts");
        let (stdout_tx, stdout_rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = stdout_tx.send(line);
            }
        });
        let (stderr_tx, stderr_rx) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = stderr_tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let address = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "embedded_broker never said where it listens"
            );
            match stdout_rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    if let Some(address) = line.strip_prefix("listening on ") {
                        break address.trim().to_string();
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        let said: Vec<String> = stderr_rx.try_iter().collect();
                        panic!("embedded_broker exited ({status}) before listening: {said:?}");
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = child.wait();
                    let said: Vec<String> = stderr_rx.try_iter().collect();
                    panic!("embedded_broker closed stdout before listening: {said:?}");
                }
            }
        };
        EmbeddedBroker {
            child,
            address,
            stderr: stderr_rx,
        }
    }

    /// Wait (bounded) for the process to exit by itself; returns its status
    /// and everything it logged.
    fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, Vec<String>) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting works") {
                // The reader thread ends at EOF; collect what is left.
                let mut lines = Vec::new();
                while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
                    lines.push(line);
                }
                return (status, lines);
            }
            assert!(
                Instant::now() < deadline,
                "embedded_broker still running after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait (bounded) for a stderr line containing `needle`; answers it.
    fn wait_for_line(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no line with {needle:?} within {timeout:?}"
            );
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("no line with {needle:?}: {e}"),
            }
        }
    }

    /// SIGKILL, as a crash.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn terminate(&mut self) -> (ExitStatus, Vec<String>) {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        self.wait_exit(Duration::from_secs(30))
    }
}

impl Drop for EmbeddedBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole tour: `embedded_broker` comes up on a free port of 127.0.0.1
/// and prints it; `producer` delivers 1000 records to an auto-created
/// one-partition topic and says so; `consumer` reads the 1000 back from the
/// beginning and prints exactly `message-0` .. `message-999` in order;
/// SIGTERM then stops the broker with exit 0 after a clean shutdown (its
/// log line, and the `.kafka_cleanshutdown` marker in the log dir).
#[test]
fn embedded_broker_producer_consumer() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = EmbeddedBroker::start(
        dir.path(),
        &["--seconds", "600", "--set", "num.partitions=1"],
    );
    assert!(
        broker.address.starts_with("127.0.0.1:"),
        "{}",
        broker.address
    );

    let produced = run_bounded(
        Command::new(example("producer")).args([
            "--bootstrap",
            &broker.address,
            "--topic",
            "tour",
            "--count",
            "1000",
            "--timeout",
            "60",
        ]),
        Duration::from_secs(120),
    );
    assert!(
        produced.status.success(),
        "producer failed ({}): {}",
        produced.status,
        produced.stderr
    );
    assert_eq!(produced.stdout.trim(), "delivered 1000");

    let consumed = run_bounded(
        Command::new(example("consumer")).args([
            "--bootstrap",
            &broker.address,
            "--topic",
            "tour",
            "--count",
            "1000",
            "--timeout",
            "60",
        ]),
        Duration::from_secs(120),
    );
    assert!(
        consumed.status.success(),
        "consumer failed ({}): {}",
        consumed.status,
        consumed.stderr
    );
    let expected: Vec<String> = (0..1000).map(|i| format!("message-{i}")).collect();
    let got: Vec<&str> = consumed.stdout.lines().collect();
    assert_eq!(got, expected);

    let (status, said) = broker.terminate();
    assert!(
        status.success(),
        "embedded_broker exited {status}: {said:?}"
    );
    assert!(
        said.iter().any(|l| l.contains("shut down cleanly")),
        "{said:?}"
    );
    assert!(
        dir.path().join(".kafka_cleanshutdown").exists(),
        "no clean-shutdown marker after SIGTERM"
    );
}

/// `--seconds N` is a bounded run: the broker stops by itself after N
/// seconds, cleanly and with exit 0, without any signal.
#[test]
fn embedded_broker_stops_after_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = EmbeddedBroker::start(dir.path(), &["--seconds", "1"]);
    let (status, said) = broker.wait_exit(Duration::from_secs(60));
    assert!(
        status.success(),
        "embedded_broker exited {status}: {said:?}"
    );
    assert!(said.iter().any(|l| l.contains("time is up")), "{said:?}");
    assert!(dir.path().join(".kafka_cleanshutdown").exists());
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

fn client(bootstrap: &str) -> rdkafka::config::ClientConfig {
    let mut config = rdkafka::config::ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4");
    config
}

fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    create_replicated_topic(bootstrap, name, partitions, 1);
}

fn create_replicated_topic(bootstrap: &str, name: &str, partitions: i32, replicas: i32) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<_> = client(bootstrap).create().expect("admin client");
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let topic = NewTopic::new(name, partitions, TopicReplication::Fixed(replicas));
    let results = block_on(admin.create_topics([&topic], &options)).expect("CreateTopics answers");
    assert_eq!(results, vec![Ok(name.to_string())]);
}

/// Send `key-i`/`value` pairs to `topic`, partition `i % partitions`; waits
/// for every acknowledgement.
fn produce(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    range: std::ops::Range<usize>,
    value: impl Fn(usize) -> String,
) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let producer: BaseProducer = client(bootstrap).create().expect("producer");
    for i in range {
        let key = format!("key-{i}");
        let payload = value(i);
        let mut record = BaseRecord::to(topic)
            .key(key.as_str())
            .payload(payload.as_str())
            .partition(i as i32 % partitions);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, back)) => {
                    record = back;
                    producer.poll(Duration::from_millis(10));
                }
            }
        }
    }
    producer
        .flush(Duration::from_secs(60))
        .expect("all acknowledged");
}

/// (partition, key, value, headers) of a consumed record, as text.
type Consumed = (i32, String, String, Vec<(String, String)>);

/// Every record of `topic` from the beginning, until `expected` arrived and
/// then a quiet second more (to catch extras): (partition, key, value, headers).
fn consume_all(bootstrap: &str, topic: &str, partitions: i32, expected: usize) -> Vec<Consumed> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::{Headers, Message};
    let consumer: BaseConsumer = client(bootstrap)
        .set("group.id", format!("check-{topic}"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut list = rdkafka::TopicPartitionList::new();
    for p in 0..partitions {
        list.add_partition_offset(topic, p, rdkafka::Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&list).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut quiet_since: Option<Instant> = None;
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let text =
                    |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).to_string();
                let headers = m
                    .headers()
                    .map(|hs| {
                        hs.iter()
                            .map(|h| (h.key.to_string(), text(h.value)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.push((m.partition(), text(m.key()), text(m.payload()), headers));
                quiet_since = None;
            }
            _ if out.len() >= expected => {
                let since = *quiet_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_secs(1) {
                    break;
                }
            }
            _ => {}
        }
    }
    out
}

/// `stream_tap` copies `words` (3 partitions) into `WORDS`, upper-cased, as
/// an extension actor inside the broker. The broker is SIGKILLed while the
/// tap is mid-copy, restarted on the same data, and more records follow:
/// the destination ends with every source record exactly once (each key
/// once, value upper-cased, in source-offset order per partition), however
/// much was copied but not yet committed at the kill.
#[test]
fn stream_tap_copies_every_record_exactly_once_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--source", "words", "--destination", "WORDS"];
    let mut broker = EmbeddedBroker::start_example("stream_tap", dir.path(), &args);
    create_topic(&broker.address, "words", 3);
    let total = 6000;
    produce(&broker.address, "words", 3, 0..3000, |i| {
        format!("word-{i}")
    });
    // Kill while copying: some but not all of the first 3000 are across.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let copied = consume_count(&broker.address, "WORDS", 3);
        if copied > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the tap never copied anything");
        std::thread::sleep(Duration::from_millis(20));
    }
    broker.kill();
    let mut broker = EmbeddedBroker::start_example("stream_tap", dir.path(), &args);
    produce(&broker.address, "words", 3, 3000..total, |i| {
        format!("word-{i}")
    });
    let copied = consume_all(&broker.address, "WORDS", 3, total);
    assert_copied_exactly_once(&copied, total);
    let (status, said) = broker.terminate();
    assert!(status.success(), "{said:?}");
}

/// `copied` (the tap's destination, read from the start) holds each of the
/// `total` source records exactly once: key and partition kept, value
/// upper-cased, in source-offset order per partition without a gap.
fn assert_copied_exactly_once(copied: &[Consumed], total: usize) {
    let mut keys = std::collections::BTreeSet::new();
    let mut last_source_offset = std::collections::HashMap::new();
    for (partition, key, value, headers) in copied {
        let i: usize = key.strip_prefix("key-").unwrap().parse().unwrap();
        assert_eq!(*partition, i as i32 % 3);
        assert_eq!(value, &format!("WORD-{i}"));
        assert!(keys.insert(i), "key-{i} copied twice");
        let source_offset: i64 = headers
            .iter()
            .find(|(k, _)| k == "ferrolog.tap.source-offset")
            .unwrap()
            .1
            .parse()
            .unwrap();
        let last = last_source_offset
            .insert(*partition, source_offset)
            .unwrap_or(-1);
        assert_eq!(
            source_offset,
            last + 1,
            "partition {partition} in order, no gap"
        );
    }
    assert_eq!(keys.len(), total, "every source record copied");
}

/// The tap on a three-broker cluster (real ZooKeeper, RF=3,
/// min.insync.replicas=2): the broker leading `words-0` is SIGKILLed while
/// the tap copies, more records follow through the survivors, and the
/// broker comes back. Every source record is in `WORDS` exactly once and in
/// order: the new leaders' taps learn from their own logs, and a copy
/// decided in one leader epoch cannot land in another.
#[test]
fn stream_tap_copies_exactly_once_on_a_three_broker_cluster_with_a_leader_killed() {
    let zk = common::zookeeper::ZooKeeperServer::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let start = |id: usize, port: u16| {
        let settings = [
            format!("zookeeper.connect={}/tap", zk.connect_string()),
            format!("broker.id={id}"),
            "zookeeper.session.timeout.ms=4000".to_string(),
            "offsets.topic.replication.factor=3".to_string(),
            "default.replication.factor=3".to_string(),
            "min.insync.replicas=2".to_string(),
            // Preferred leaders come back soon after the restart, so each
            // destination partition is led beside its source again.
            "leader.imbalance.check.interval.seconds=2".to_string(),
            "leader.imbalance.per.broker.percentage=0".to_string(),
        ];
        let args = ["--source", "words", "--destination", "WORDS"];
        start_in_cluster("stream_tap", dirs[id].path(), port, &args, &settings)
    };
    let mut brokers: Vec<Option<EmbeddedBroker>> = (0..3).map(|id| Some(start(id, 0))).collect();
    let addresses: Vec<String> = brokers
        .iter()
        .map(|b| b.as_ref().unwrap().address.clone())
        .collect();
    let all = addresses.join(",");
    create_replicated_topic(&all, "words", 3, 3);
    let total = 6000;
    produce(&all, "words", 3, 0..3000, |i| format!("word-{i}"));
    let deadline = Instant::now() + Duration::from_secs(90);
    while consume_count(&all, "WORDS", 3) == 0 {
        assert!(Instant::now() < deadline, "the tap never copied anything");
        std::thread::sleep(Duration::from_millis(20));
    }
    let leader = leader_of(&all, "words", 0);
    brokers[leader as usize].take().unwrap().kill();
    let survivors: Vec<&str> = (0..3)
        .filter(|id| *id != leader as usize)
        .map(|id| addresses[id].as_str())
        .collect();
    produce(&survivors.join(","), "words", 3, 3000..total, |i| {
        format!("word-{i}")
    });
    let port: u16 = addresses[leader as usize]
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("host:port");
    brokers[leader as usize] = Some(start(leader as usize, port));
    let copied = consume_all(&all, "WORDS", 3, total);
    assert_copied_exactly_once(&copied, total);
}

/// `file_sink` on each broker of a 3-broker cluster: each sink writes the
/// partitions its broker leads through `subscribe_records`, whose positions
/// live in `__consumer_offsets` under one group, so two of the three
/// brokers commit at a coordinator on another broker (issue 22: before,
/// their sinks could neither read nor commit a position and wrote
/// nothing). Every record is written once, at its offset; the group's
/// committed offsets reach each partition's end; after every broker is
/// restarted (leaders move, and a sink resumes partitions another broker's
/// sink committed) more records follow and still each is written once.
#[test]
fn file_sinks_commit_their_positions_at_the_coordinator_on_every_broker() {
    let zk = common::zookeeper::ZooKeeperServer::start();
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let outs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let start = |id: usize, port: u16| {
        let settings = [
            format!("zookeeper.connect={}/sink", zk.connect_string()),
            format!("broker.id={id}"),
            "zookeeper.session.timeout.ms=4000".to_string(),
            "offsets.topic.replication.factor=3".to_string(),
            "default.replication.factor=3".to_string(),
        ];
        let out = outs[id].path().display().to_string();
        let args = ["--topic", "orders", "--out", out.as_str()];
        start_in_cluster("file_sink", dirs[id].path(), port, &args, &settings)
    };
    let mut brokers: Vec<EmbeddedBroker> = (0..3).map(|id| start(id, 0)).collect();
    let addresses: Vec<String> = brokers.iter().map(|b| b.address.clone()).collect();
    let all = addresses.join(",");
    let partitions = 6;
    create_replicated_topic(&all, "orders", partitions, 3);
    produce(&all, "orders", partitions, 0..3000, |i| {
        format!("order-{i}")
    });
    let written = wait_for_sink_lines(&outs, 3000);
    assert_written_once(&written, partitions, 3000);
    for (id, out) in outs.iter().enumerate() {
        assert!(
            std::fs::read_dir(out.path()).map_or(0, |d| d.count()) > 0,
            "broker {id}'s sink wrote nothing: it leads a partition of orders"
        );
    }
    wait_for_committed(&all, "orders", partitions, 3000 / partitions as i64);

    for (id, broker) in brokers.iter_mut().enumerate() {
        let (status, said) = broker.terminate();
        assert!(status.success(), "broker {id}: {said:?}");
    }
    let ports: Vec<u16> = addresses
        .iter()
        .map(|a| {
            a.rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("host:port")
        })
        .collect();
    brokers = (0..3).rev().map(|id| start(id, ports[id])).collect();
    produce(&all, "orders", partitions, 3000..4200, |i| {
        format!("order-{i}")
    });
    let written = wait_for_sink_lines(&outs, 4200);
    assert_written_once(&written, partitions, 4200);
    wait_for_committed(&all, "orders", partitions, 4200 / partitions as i64);
    drop(brokers);
}

/// Every `(partition, offset, value)` line the sinks wrote into `outs`,
/// once at least `expected` are there (bounded), and a quiet second more.
fn wait_for_sink_lines(outs: &[tempfile::TempDir], expected: usize) -> Vec<(i32, i64, String)> {
    let read = || {
        let mut lines = Vec::new();
        for out in outs {
            let Ok(files) = std::fs::read_dir(out.path()) else {
                continue;
            };
            for file in files.flatten() {
                let name = file.file_name().to_string_lossy().to_string();
                let partition: i32 = name
                    .trim_end_matches(".txt")
                    .rsplit('-')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .expect("<topic>-<partition>.txt");
                let text = std::fs::read_to_string(file.path()).unwrap_or_default();
                for line in text.lines() {
                    let (offset, value) = line.split_once('\t').expect("offset<TAB>value");
                    lines.push((
                        partition,
                        offset.parse().expect("an offset"),
                        value.to_string(),
                    ));
                }
            }
        }
        lines
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let lines = read();
        if lines.len() >= expected {
            std::thread::sleep(Duration::from_secs(1));
            return read();
        }
        assert!(
            Instant::now() < deadline,
            "the sinks wrote {} of {expected} records",
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Record i (`order-i`, sent to partition i % partitions in order) is
/// written exactly once, at the offset i / partitions of its partition.
fn assert_written_once(written: &[(i32, i64, String)], partitions: i32, total: usize) {
    let mut seen = std::collections::BTreeMap::new();
    for (partition, offset, value) in written {
        let previous = seen.insert((*partition, *offset), value.clone());
        assert!(
            previous.is_none(),
            "{partition}/{offset} written twice: {previous:?} and {value}"
        );
    }
    assert_eq!(seen.len(), total, "records written");
    for i in 0..total {
        let at = (i as i32 % partitions, (i / partitions as usize) as i64);
        assert_eq!(seen.get(&at), Some(&format!("order-{i}")), "at {at:?}");
    }
}

/// Waits (bounded) until the sinks' group has committed `end` on every
/// partition of `topic`, as a consumer's OffsetFetch sees it.
fn wait_for_committed(bootstrap: &str, topic: &str, partitions: i32, end: i64) {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = client(bootstrap)
        .set("group.id", format!("ferrolog.extension.file-sink.{topic}"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut list = rdkafka::TopicPartitionList::new();
    for p in 0..partitions {
        list.add_partition(topic, p);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let committed: Vec<Option<i64>> =
            match consumer.committed_offsets(list.clone(), Duration::from_secs(10)) {
                Ok(found) => found
                    .elements()
                    .iter()
                    .map(|e| match e.offset() {
                        rdkafka::Offset::Offset(o) => Some(o),
                        _ => None,
                    })
                    .collect(),
                Err(_) => Vec::new(),
            };
        if committed.len() == partitions as usize && committed.iter().all(|c| *c == Some(end)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the sinks' committed positions {committed:?}, expected {end} on each partition"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Example `name` as one broker of a cluster: its own `args`, listening
/// on `port` (0: any), with each of `settings` as a `--set`.
fn start_in_cluster(
    name: &str,
    log_dir: &Path,
    port: u16,
    args: &[&str],
    settings: &[String],
) -> EmbeddedBroker {
    let port = port.to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--port", port.as_str()]);
    for setting in settings {
        all.extend(["--set", setting.as_str()]);
    }
    EmbeddedBroker::start_example(name, log_dir, &all)
}

/// The leader of `topic`-`partition` as Metadata says.
fn leader_of(bootstrap: &str, topic: &str, partition: i32) -> i32 {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = client(bootstrap).create().expect("client");
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("metadata");
    metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .and_then(|t| t.partitions().iter().find(|p| p.id() == partition))
        .map(|p| p.leader())
        .expect("the partition has a leader")
}

/// An extension's produce takes a client's path, internal-topic check
/// included: a tap pointed at `__consumer_offsets` is refused with
/// INVALID_TOPIC_EXCEPTION (it used to write its copies there, in among
/// the group coordinator's records), and no copy lands in the topic.
#[test]
fn an_extension_cannot_write_an_internal_topic() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--source", "words", "--destination", "__consumer_offsets"];
    let mut broker = EmbeddedBroker::start_example("stream_tap", dir.path(), &args);
    // A committed offset makes the coordinator create __consumer_offsets
    // before the tap can look for its destination.
    commit_an_offset(&broker.address, "made-before-the-tap");
    create_topic(&broker.address, "words", 3);
    produce(&broker.address, "words", 3, 0..30, |i| format!("word-{i}"));
    let refused = broker.wait_for_line("copying into __consumer_offsets-", Duration::from_secs(60));
    assert!(
        refused.contains("cannot append to internal topic"),
        "refused for the wrong reason: {refused}"
    );
    let offsets_partitions = 50;
    let copies: Vec<Consumed> =
        consume_all(&broker.address, "__consumer_offsets", offsets_partitions, 1)
            .into_iter()
            .filter(|(_, _, _, headers)| {
                headers
                    .iter()
                    .any(|(k, _)| k == "ferrolog.tap.source-offset")
            })
            .collect();
    assert!(
        copies.is_empty(),
        "the tap wrote into __consumer_offsets: {copies:?}"
    );
    let (status, said) = broker.terminate();
    assert!(status.success(), "{said:?}");
}

/// Commit offset 0 of `topic`-0 for group `group`, creating the topic.
fn commit_an_offset(bootstrap: &str, group: &str) {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    create_topic(bootstrap, "committed", 1);
    let consumer: BaseConsumer = client(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut list = rdkafka::TopicPartitionList::new();
    list.add_partition_offset("committed", 0, rdkafka::Offset::Offset(0))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Err(e) = consumer.commit(&list, CommitMode::Sync) {
        assert!(Instant::now() < deadline, "the commit never succeeded: {e}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Records in `topic` now (sum of high watermarks).
fn consume_count(bootstrap: &str, topic: &str, partitions: i32) -> i64 {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = client(bootstrap).create().expect("consumer");
    (0..partitions)
        .map(|p| {
            consumer
                .fetch_watermarks(topic, p, Duration::from_secs(5))
                .map(|(_, high)| high)
                .unwrap_or(0)
        })
        .sum()
}

/// `topic_counter` publishes per-topic counts as records of `topic-stats`:
/// after 1000 records of 100 bytes to `ca` and 500 to `cb`, a plain client
/// reading `topic-stats` sees `ca` at 1000 records and `cb` at 500, with
/// byte counts covering the values (and not more than twice them).
#[test]
fn topic_counter_serves_counts_as_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker =
        EmbeddedBroker::start_example("topic_counter", dir.path(), &["--interval-ms", "300"]);
    create_topic(&broker.address, "ca", 2);
    create_topic(&broker.address, "cb", 1);
    let value = |_| "v".repeat(100);
    produce(&broker.address, "ca", 2, 0..1000, value);
    produce(&broker.address, "cb", 1, 0..500, value);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut latest: std::collections::HashMap<String, String> = Default::default();
    loop {
        for (_, key, value, _) in consume_all(&broker.address, "topic-stats", 1, 1) {
            latest.insert(key, value);
        }
        let done = latest
            .get("ca")
            .is_some_and(|v| v.contains(r#""records":1000,"#))
            && latest
                .get("cb")
                .is_some_and(|v| v.contains(r#""records":500,"#));
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "counts never reached 1000/500: {latest:?}"
        );
    }
    let bytes = |topic: &str| -> u64 {
        let v = &latest[topic];
        v.split(r#""bytes":"#)
            .nth(1)
            .unwrap()
            .trim_end_matches('}')
            .parse()
            .unwrap()
    };
    assert!((100_000..200_000).contains(&bytes("ca")), "{latest:?}");
    assert!((50_000..100_000).contains(&bytes("cb")), "{latest:?}");
    assert_eq!(
        latest.get("topic-stats"),
        None,
        "its own output is not counted"
    );
    let (status, said) = broker.terminate();
    assert!(status.success(), "{said:?}");
}

/// Examples are built with the dev-dependencies, where the crate's
/// internals are visible (the `internals` feature), so the compiler cannot
/// tell whether they keep to the public API; this reads their paths.
#[test]
fn examples_use_only_the_public_api() {
    const PUBLIC: [&str; 6] = [
        "ferrolog::broker",
        "ferrolog::clock",
        "ferrolog::config",
        "ferrolog::topic_partition",
        "ferrolog::actors::extension",
        "ferrolog::actors::event_bus",
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files = vec![root.clone()];
    let mut checked = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("examples/ is readable") {
                files.push(entry.expect("a directory entry").path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("an example is readable");
        for (at, _) in text.match_indices("ferrolog::") {
            let rest = &text[at..];
            let path_text: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            assert!(
                PUBLIC.iter().any(|public| path_text.starts_with(public)),
                "{} uses {path_text}, which is not the public API",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 5,
        "only {checked} ferrolog paths found: wrong directory?"
    );
}
