//! A mixed-fault soak behind a flag: ZooKeeper and three `ferrolog`
//! brokers, each in a network namespace of its own (`tests/common/netns.rs`,
//! root only), three topics (RF 3, min.insync.replicas=2; one of them
//! durable, `flush.messages=1`) under continuous idempotent acks=all
//! producers, and a fault scheduler with a seeded RNG that, one fault at a
//! time and each healed before the next, picks: a broker SIGKILLed and
//! restarted, a broker SIGSTOPped for a few seconds (sometimes past its
//! ZooKeeper session) and SIGCONTed, a broker cut off by the network (from
//! everything, from ZooKeeper only, from both other brokers, or from one)
//! and healed, ZooKeeper SIGKILLed for 10 to 30 s and restarted on its
//! data, or a controlled shutdown (SIGTERM) and a restart.
//!
//! After every fault the soak waits (bounded) for every broker to answer
//! Metadata with every ISR whole and for every partition to acknowledge
//! again, and records how long that took. At the end, everything healed
//! and the ISRs whole, the producers stop and `acks::verify` reads every
//! partition from the beginning: it fails on an acknowledged record
//! missing, read at another offset than acknowledged, or stored twice.
//! The soak also fails when a recovery or the final healing times out (a
//! hang), when the replicas do not end byte-identical on disk, when a
//! producer hits a fatal (idempotence) error, when a controlled shutdown
//! does not end in a clean exit, or when failed deliveries are absurd
//! (more than a tenth of what was sent). It prints a timeline (faults and
//! acknowledgements per interval) and the figures: records acknowledged,
//! failed deliveries, faults by kind, the longest gaps between
//! acknowledgements, and each fault's recovery time.
//!
//! Skipped (returns at once) unless `FERROLOG_SOAK=1`:
//! `FERROLOG_SOAK=1 cargo test --release --test soak -- --nocapture`.
//! Knobs: `FERROLOG_SOAK_MINUTES` (fault phase length, default 30; a
//! fraction is fine), `FERROLOG_SOAK_SEED` (replays a schedule: the same
//! faults, targets and durations in the same order; the timing of the
//! cluster itself differs run to run), `FERROLOG_SOAK_INTERVAL_SECS`
//! (fault starts at least this far apart, default 20),
//! `FERROLOG_SOAK_FAULTS` (a comma list of kill, pause, partition,
//! zookeeper, shutdown; default all), `FERROLOG_SOAK_BUCKET_SECS` (the
//! timeline's interval, default 10), `FERROLOG_SOAK_RATE` (records a
//! second per topic, default 200). Every log, the timeline and the report
//! are written to a directory the run names.
//!
//! The producer is the soak's own: `acks::AckedProducer` stops by itself
//! after 300 s, shorter than a soak. It keeps the same settings and
//! records its acknowledgements in an `acks::Timeline` per topic, so the
//! verification is `acks::verify` itself.

mod common;

#[path = "common/acks.rs"]
mod acks;
#[path = "common/netns.rs"]
mod netns;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use acks::{id_of, Timeline};
use netns::{NetCluster, Node};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::ClientContext;

const BROKERS: i32 = 3;
/// A topic's configs at creation.
type Configs = &'static [(&'static str, &'static str)];
/// (name, partitions, topic configs).
const TOPICS: &[(&str, i32, Configs)] = &[
    ("soak-six", 6, &[]),
    ("soak-durable", 3, &[("flush.messages", "1")]),
    ("soak-one", 1, &[]),
];
const SESSION: Duration = Duration::from_millis(6_000);
const LAG: Duration = Duration::from_millis(5_000);
/// How long librdkafka retries one record: longer than any fault.
const MESSAGE_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest a fault's recovery (every ISR whole, every partition
/// acknowledging) may take before the soak calls it a hang. The slowest
/// legitimate case measured by the network-partition tests is a fetch
/// stuck on a dead connection: 30.2 s + replica.lag.time.max.ms + 5 s.
const RECOVERY_BOUND: Duration = Duration::from_secs(120);
/// Failed deliveries above this share of what was sent are absurd.
const ABSURD_FAILURES: f64 = 0.10;
/// How long after a heal every partition must acknowledge again before
/// the soak calls it a hang: librdkafka's own retry bound for a record
/// (past it, what was sent during the fault fails anyway).
const ACKS_BACK_BOUND: Duration = MESSAGE_TIMEOUT;
/// A recovery slower than this is listed in the verdict (not a failure).
const SLOW_RECOVERY: Duration = Duration::from_secs(20);

fn broker_settings() -> Vec<String> {
    vec![
        format!("zookeeper.session.timeout.ms={}", SESSION.as_millis()),
        format!("replica.lag.time.max.ms={}", LAG.as_millis()),
        "min.insync.replicas=2".into(),
        "default.replication.factor=3".into(),
        "replica.fetch.backoff.ms=500".into(),
        "replica.fetch.wait.max.ms=200".into(),
        // Controlled shutdown is one of the faults; quick retries.
        "controlled.shutdown.enable=true".into(),
        "controlled.shutdown.retry.backoff.ms=1000".into(),
        // Preferred leaders come back during the soak too.
        "auto.leader.rebalance.enable=true".into(),
        "leader.imbalance.check.interval.seconds=30".into(),
    ]
}

// ---------------------------------------------------------------------------
// Settings and the seeded schedule.
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Kill,
    Pause,
    Partition,
    ZooKeeper,
    Shutdown,
}

impl Kind {
    const ALL: [Kind; 5] = [
        Kind::Kill,
        Kind::Pause,
        Kind::Partition,
        Kind::ZooKeeper,
        Kind::Shutdown,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill",
            Kind::Pause => "pause",
            Kind::Partition => "partition",
            Kind::ZooKeeper => "zookeeper",
            Kind::Shutdown => "shutdown",
        }
    }
}

struct Settings {
    minutes: f64,
    seed: u64,
    interval: Duration,
    kinds: Vec<Kind>,
    bucket: Duration,
    rate: u64,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value:?} does not parse")),
        Err(_) => default,
    }
}

impl Settings {
    fn from_env() -> Settings {
        let seed = std::env::var("FERROLOG_SOAK_SEED")
            .ok()
            .map(|v| v.trim().parse().expect("FERROLOG_SOAK_SEED is a u64"))
            .unwrap_or_else(|| {
                use std::hash::BuildHasher;
                std::collections::hash_map::RandomState::new()
                    .hash_one(std::time::SystemTime::now())
            });
        let kinds = match std::env::var("FERROLOG_SOAK_FAULTS") {
            Ok(list) => list
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| {
                    *Kind::ALL
                        .iter()
                        .find(|k| k.name() == s)
                        .unwrap_or_else(|| panic!("FERROLOG_SOAK_FAULTS: unknown kind {s:?}"))
                })
                .collect(),
            Err(_) => Kind::ALL.to_vec(),
        };
        assert!(!kinds.is_empty(), "FERROLOG_SOAK_FAULTS names no fault");
        let minutes: f64 = env_or("FERROLOG_SOAK_MINUTES", 30.0);
        assert!(
            minutes > 0.0 && minutes < 24.0 * 60.0,
            "FERROLOG_SOAK_MINUTES out of range"
        );
        let rate: u64 = env_or("FERROLOG_SOAK_RATE", 200);
        assert!(
            (1..=5_000).contains(&rate),
            "FERROLOG_SOAK_RATE out of range"
        );
        Settings {
            minutes,
            seed,
            interval: Duration::from_secs(env_or("FERROLOG_SOAK_INTERVAL_SECS", 20u64)),
            kinds,
            bucket: Duration::from_secs(env_or("FERROLOG_SOAK_BUCKET_SECS", 10u64).max(1)),
            rate,
        }
    }
}

/// SplitMix64: small, seedable, good enough for a schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.range(lo, hi))
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---------------------------------------------------------------------------
// The producers.
// ---------------------------------------------------------------------------

/// Failed deliveries of one producer, counted.
#[derive(Default)]
struct Failures {
    count: usize,
    by_error: BTreeMap<String, usize>,
    /// Since the timeline started, in whole seconds.
    by_second: BTreeMap<u64, usize>,
    first: Vec<String>,
}

/// The producer's context: acknowledgements go to the topic's timeline
/// (where `acks::verify` reads them), failures are counted here.
#[derive(Clone)]
struct Reports {
    topic: String,
    timeline: Arc<Timeline>,
    failures: Arc<Mutex<Failures>>,
}

impl Reports {
    fn failure(&self, id: Option<u64>, partition: i32, error: String) {
        let at = self.timeline.now();
        let mut failures = lock(&self.failures);
        failures.count += 1;
        *failures.by_second.entry(at.as_secs()).or_insert(0) += 1;
        *failures.by_error.entry(error.clone()).or_insert(0) += 1;
        if failures.first.len() < 20 {
            failures.first.push(format!(
                "{}/{partition} id {id:?} at {:.3}s: {error}",
                self.topic,
                at.as_secs_f64()
            ));
        }
    }
}

impl ClientContext for Reports {}

impl ProducerContext for Reports {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(message) => match id_of(message.payload()) {
                Some(id) => self.timeline.ack(id, message.partition(), message.offset()),
                None => self.failure(
                    None,
                    message.partition(),
                    "acknowledged a payload that is not an id".into(),
                ),
            },
            Err((error, message)) => self.failure(
                id_of(message.payload()),
                message.partition(),
                error.to_string(),
            ),
        }
    }
}

/// One topic's producer: ids 0, 1, 2, ... at a steady rate, id `i` to
/// partition `i % partitions`, acks=all with idempotence on, the settings
/// of `acks::AckedProducer`, until told to stop. A fatal error (which an
/// idempotent producer raises when the broker's sequence bookkeeping
/// contradicts its own) is recorded and the producer created again, the
/// ids going on.
struct SoakProducer {
    topic: String,
    partitions: i32,
    timeline: Arc<Timeline>,
    failures: Arc<Mutex<Failures>>,
    fatal: Arc<Mutex<Vec<String>>>,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    sender: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl SoakProducer {
    fn start(
        bootstrap: &str,
        topic: &str,
        partitions: i32,
        rate: u64,
        timeline: Arc<Timeline>,
        events: Arc<Timeline>,
    ) -> SoakProducer {
        let failures = Arc::new(Mutex::new(Failures::default()));
        let fatal = Arc::new(Mutex::new(Vec::new()));
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let reports = Reports {
            topic: topic.to_string(),
            timeline: timeline.clone(),
            failures: failures.clone(),
        };
        let (bootstrap, name) = (bootstrap.to_string(), topic.to_string());
        let (sent_by_thread, stop_seen, fatal_seen) = (sent.clone(), stop.clone(), fatal.clone());
        let sender = std::thread::spawn(move || {
            let create = || -> Result<ThreadedProducer<Reports>, String> {
                acks::client_config(&bootstrap)
                    .set("acks", "all")
                    .set("enable.idempotence", "true")
                    .set(
                        "message.timeout.ms",
                        MESSAGE_TIMEOUT.as_millis().to_string(),
                    )
                    .set("request.timeout.ms", "5000")
                    .set("retry.backoff.ms", "100")
                    .set("retry.backoff.max.ms", "1000")
                    .set("topic.metadata.refresh.interval.ms", "2000")
                    .set("linger.ms", "5")
                    .create_with_context(reports.clone())
                    .map_err(|e| format!("creating the {name} producer: {e}"))
            };
            let mut producer = create()?;
            // Bursts of 10 records, paced to `rate` a second.
            let burst = 10u64;
            let pace = Duration::from_micros(1_000_000 * burst / rate);
            let mut id = 0u64;
            let mut next = Instant::now();
            while !stop_seen.load(Ordering::SeqCst) {
                for _ in 0..burst {
                    let payload = id.to_string();
                    let partition = (id % partitions as u64) as i32;
                    let waited = Instant::now();
                    loop {
                        let record = BaseRecord::<(), _>::to(&name)
                            .partition(partition)
                            .payload(&payload);
                        match producer.send(record) {
                            Ok(()) => break,
                            Err((
                                KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull),
                                _,
                            )) if waited.elapsed() < MESSAGE_TIMEOUT => {
                                std::thread::sleep(Duration::from_millis(5))
                            }
                            // Refused before queueing (librdkafka was told
                            // the topic or partition does not exist): a
                            // failure, counted; the same id again shortly.
                            Err((KafkaError::MessageProduction(code), _))
                                if !stop_seen.load(Ordering::SeqCst)
                                    && matches!(
                                        code,
                                        RDKafkaErrorCode::UnknownTopic
                                            | RDKafkaErrorCode::UnknownPartition
                                            | RDKafkaErrorCode::UnknownTopicOrPartition
                                    ) =>
                            {
                                reports.failure(
                                    Some(id),
                                    partition,
                                    format!("refused by the client before sending: {code:?}"),
                                );
                                std::thread::sleep(Duration::from_millis(200));
                            }
                            Err((e, _)) => return Err(format!("{name}: sending id {id}: {e}")),
                        }
                    }
                    sent_by_thread.fetch_add(1, Ordering::SeqCst);
                    id += 1;
                }
                if let Some((code, reason)) = producer.client().fatal_error() {
                    let what = format!(
                        "FATAL producer error on {name} after id {}: {code:?}: {reason}",
                        id - 1
                    );
                    events.event(what.clone());
                    let count = {
                        let mut fatal = lock(&fatal_seen);
                        fatal.push(what);
                        fatal.len()
                    };
                    let _ = producer.flush(Duration::from_secs(5));
                    drop(producer);
                    if count > 5 {
                        return Err(format!("{name}: more than 5 fatal producer errors"));
                    }
                    producer = create()?;
                    events.event(format!("{name}: producer created again"));
                }
                next += pace;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else if now - next > Duration::from_secs(1) {
                    // Behind (a queue-full wait): do not burst to catch up.
                    next = now;
                }
            }
            producer
                .flush(MESSAGE_TIMEOUT + Duration::from_secs(15))
                .map_err(|e| format!("{name}: flushing the producer: {e}"))
        });
        SoakProducer {
            topic: topic.to_string(),
            partitions,
            timeline,
            failures,
            fatal,
            sent,
            stop,
            sender: Some(sender),
        }
    }

    fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }

    fn failed(&self) -> usize {
        lock(&self.failures).count
    }

    /// Stops sending and waits (bounded by the flush) for the last reports.
    fn finish(&mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        match self.sender.take() {
            Some(sender) => sender
                .join()
                .unwrap_or_else(|_| Err(format!("{}: the sender thread panicked", self.topic))),
            None => Ok(()),
        }
    }
}

impl Drop for SoakProducer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------
// ZooKeeper restarts.
// ---------------------------------------------------------------------------

/// Stops and restarts the cluster's ZooKeeper: `NetZooKeeper` can be
/// killed but not started again, so the soak reads the server's command
/// line (from `/proc`) once and starts the same server, on the same data,
/// port and log file, in ZooKeeper's namespace again.
struct ZooKeeperControl {
    args: Vec<String>,
    log: PathBuf,
    address: String,
    /// The server this soak started (after the first restart).
    child: Option<Child>,
    down: bool,
}

impl ZooKeeperControl {
    fn new(cluster: &NetCluster) -> ZooKeeperControl {
        let namespace = cluster
            .net
            .namespace(Node::ZooKeeper)
            .expect("ZooKeeper has a namespace");
        let pids = Command::new("ip")
            .args(["netns", "pids", &namespace])
            .output()
            .expect("ip netns pids runs");
        let args = String::from_utf8_lossy(&pids.stdout)
            .split_whitespace()
            .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
            .map(|cmdline| {
                cmdline
                    .split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
            })
            .find(|args| args.iter().any(|a| a.contains("QuorumPeerMain")))
            .expect("the ZooKeeper server runs in its namespace");
        let config = PathBuf::from(args.last().expect("zoo.cfg is the last argument"));
        let log = config
            .parent()
            .expect("zoo.cfg lies in the server's directory")
            .join("server.log");
        ZooKeeperControl {
            args,
            log,
            address: cluster.zk.address.clone(),
            child: None,
            down: false,
        }
    }

    fn kill(&mut self, cluster: &mut NetCluster) {
        match self.child.take() {
            Some(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            None => cluster.zk.kill(),
        }
        self.down = true;
        cluster.timeline.event("KILL -9 zookeeper");
    }

    /// Starts the server again and waits (bounded) until it listens.
    fn restart(&mut self, cluster: &NetCluster) {
        assert!(self.down, "ZooKeeper runs already");
        let log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log)
            .expect("ZooKeeper's log file");
        let mut command = cluster.net.command(Node::ZooKeeper, &self.args[0]);
        command
            .args(&self.args[1..])
            .stdout(Stdio::from(log.try_clone().expect("the log file")))
            .stderr(Stdio::from(log));
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe, the only call between fork
            // and exec. The server dies with this thread, as netns's do.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        self.child = Some(command.spawn().expect("java runs in the namespace"));
        self.down = false;
        let target: SocketAddr = self.address.parse().expect("an address");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect_timeout(&target, Duration::from_millis(500)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the restarted ZooKeeper did not listen on {} within 60 s",
                self.address
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        cluster.timeline.event(format!(
            "zookeeper restarted, listening on {}",
            self.address
        ));
    }
}

impl Drop for ZooKeeperControl {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ---------------------------------------------------------------------------
// The soak.
// ---------------------------------------------------------------------------

/// One injected fault and what followed.
struct Fault {
    n: usize,
    kind: Kind,
    what: String,
    started: Duration,
    /// When the heal was done (the broker restarted or resumed, the
    /// network healed, ZooKeeper listening again).
    healed: Duration,
    /// Since `healed`: every broker answers every ISR whole.
    isr_whole: Option<Duration>,
    /// Since `healed`: every partition acknowledged a record.
    acks_back: Option<Duration>,
    /// When the recovery wait ended.
    ended: Duration,
}

struct Soak {
    settings: Settings,
    rng: Rng,
    /// Dropped first: its ZooKeeper goes before the cluster's Drop saves
    /// logs and deletes the namespaces.
    zookeeper: Option<ZooKeeperControl>,
    producers: Vec<SoakProducer>,
    cluster: NetCluster,
    timeline: Arc<Timeline>,
    faults: Vec<Fault>,
    problems: Vec<String>,
    notes: Vec<String>,
    faults_started: Duration,
    faults_ended: Duration,
}

impl Soak {
    fn start(settings: Settings) -> Soak {
        let timeline = Timeline::new();
        // Each topic's acknowledgements go to a timeline of their own (what
        // `acks::verify` checks), started with the soak's so that their
        // times compare.
        let ack_timelines: Vec<Arc<Timeline>> = TOPICS.iter().map(|_| Timeline::new()).collect();
        let config = broker_settings();
        let refs: Vec<&str> = config.iter().map(String::as_str).collect();
        let cluster = NetCluster::start("soak", BROKERS, &refs, timeline.clone());
        let rng = Rng(settings.seed);
        let mut soak = Soak {
            settings,
            rng,
            zookeeper: None,
            producers: Vec::new(),
            cluster,
            timeline,
            faults: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            faults_started: Duration::ZERO,
            faults_ended: Duration::ZERO,
        };
        soak.zookeeper = Some(ZooKeeperControl::new(&soak.cluster));
        soak.create_topics();
        if let Err(why) = soak.wait_for_whole_isrs(Duration::from_secs(60)) {
            panic!("the topics' first ISRs were never whole: {why}");
        }
        soak.timeline.event("every ISR whole");
        let bootstrap = soak.cluster.bootstrap();
        for (&(topic, partitions, _), acked) in TOPICS.iter().zip(ack_timelines) {
            soak.producers.push(SoakProducer::start(
                &bootstrap,
                topic,
                partitions,
                soak.settings.rate,
                acked,
                soak.timeline.clone(),
            ));
        }
        let since = soak.timeline.now();
        if let Err(silent) = soak.wait_for_acks_since(since, Duration::from_secs(30)) {
            panic!("no acknowledgement within 30 s of the start on {silent}");
        }
        soak.timeline
            .event("the producers are acknowledged on every partition");
        soak
    }

    /// CreateTopics (RF 3) once every broker knows the controller and the
    /// three brokers, retried on any error, bounded.
    fn create_topics(&mut self) {
        use rdkafka::admin::{NewTopic, TopicReplication};
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let known = (0..BROKERS).all(|id| {
                self.cluster
                    .metadata(id, TOPICS[0].0)
                    .is_some_and(|m| m.controller >= 0 && m.brokers.len() == BROKERS as usize)
            });
            if known {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the brokers never all knew the controller and each other"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let bootstrap = self.cluster.bootstrap();
        for &(topic, partitions, configs) in TOPICS {
            loop {
                let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(3));
                for (key, value) in configs {
                    new = new.set(key, value);
                }
                let answer = common::block_on(
                    common::admin(&bootstrap)
                        .create_topics(&[new], &common::admin_options(Duration::from_secs(10))),
                );
                let error = match answer.map(|mut results| results.remove(0)) {
                    Ok(Ok(_)) | Ok(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => break,
                    Ok(Err((_, code))) => format!("{code:?}"),
                    Err(e) => e.to_string(),
                };
                assert!(
                    Instant::now() < deadline,
                    "CreateTopics {topic} kept failing: {error}"
                );
                self.timeline
                    .event(format!("CreateTopics {topic}: {error}; retrying"));
                std::thread::sleep(Duration::from_millis(500));
            }
            self.timeline.event(format!(
                "created {topic}: {partitions} partitions, RF 3 {configs:?}"
            ));
        }
    }

    /// Why the cluster is not whole now (every broker answering Metadata
    /// with 3 brokers, a controller, and every partition of every topic
    /// led with ISR [0, 1, 2]: each broker's differences, listed), or `Ok`.
    fn whole(&self) -> Result<(), String> {
        let all: Vec<i32> = (0..BROKERS).collect();
        let mut wrong = Vec::new();
        for id in 0..BROKERS {
            let mut mine = Vec::new();
            for &(topic, partitions, _) in TOPICS {
                let Some(m) = self.cluster.metadata(id, topic) else {
                    mine.push("no Metadata answer".to_string());
                    break;
                };
                if (m.controller < 0 || m.brokers.len() != BROKERS as usize) && mine.is_empty() {
                    mine.push(format!(
                        "controller {}, brokers {:?}",
                        m.controller, m.brokers
                    ));
                }
                if m.partitions.len() != partitions as usize {
                    mine.push(format!("{topic}: {} partitions", m.partitions.len()));
                }
                for (p, view) in &m.partitions {
                    if view.isr != all || view.leader < 0 || view.error != 0 {
                        mine.push(format!(
                            "{topic}/{p} leader {} ISR {:?}{}",
                            view.leader,
                            view.isr,
                            if view.error != 0 {
                                format!(" error {}", view.error)
                            } else {
                                String::new()
                            }
                        ));
                    }
                }
            }
            if !mine.is_empty() {
                wrong.push(format!("broker {id}: {}", mine.join(", ")));
            }
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("; "))
        }
    }

    /// Waits (bounded) until [`Soak::whole`]; how long it took, or the
    /// last reason it was not.
    fn wait_for_whole_isrs(&mut self, timeout: Duration) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            match self.whole() {
                Ok(_) => return Ok(started.elapsed()),
                Err(why) if started.elapsed() >= timeout => return Err(why),
                Err(_) => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    /// Partitions (as `topic/p`) with no acknowledgement at or after
    /// `since`.
    fn silent_since(&self, since: Duration) -> Vec<String> {
        let mut silent = Vec::new();
        for producer in &self.producers {
            let acked = producer.timeline.acks_since(since);
            for p in 0..producer.partitions {
                if acked.get(&p).copied().unwrap_or(0) == 0 {
                    silent.push(format!("{}/{p}", producer.topic));
                }
            }
        }
        silent
    }

    /// Waits (bounded) until every partition has an acknowledgement at or
    /// after `since`; how long it took (from the call), or the silent ones.
    fn wait_for_acks_since(
        &mut self,
        since: Duration,
        timeout: Duration,
    ) -> Result<Duration, String> {
        let started = Instant::now();
        loop {
            let silent = self.silent_since(since);
            if silent.is_empty() {
                return Ok(started.elapsed());
            }
            if started.elapsed() >= timeout {
                return Err(silent.join(", "));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The controller and how many partitions `id` leads, as the first
    /// answering broker says (for the fault's description).
    fn role(&self, id: i32) -> String {
        for asked in 0..BROKERS {
            let mut led = 0;
            let mut controller = None;
            for &(topic, _, _) in TOPICS {
                if let Some(m) = self.cluster.metadata(asked, topic) {
                    controller = Some(m.controller);
                    led += m.partitions.values().filter(|p| p.leader == id).count();
                }
            }
            if let Some(controller) = controller {
                let role = if controller == id {
                    ", the controller"
                } else {
                    ""
                };
                return format!("broker {id} (leads {led} partitions{role})");
            }
        }
        format!("broker {id}")
    }

    fn sleep(&self, length: Duration) {
        std::thread::sleep(length);
    }

    /// The fault phase: faults one at a time until the soak's length has
    /// passed, each healed and recovered from (bounded) before the next.
    fn run_faults(&mut self) {
        let length = Duration::from_secs_f64(self.settings.minutes * 60.0);
        // A little steady traffic before the first fault.
        self.sleep(Duration::from_secs(5));
        self.faults_started = self.timeline.now();
        let end = self.faults_started + length;
        let mut next_start = self.faults_started;
        while self.timeline.now() < end {
            while self.timeline.now() < next_start.min(end) {
                self.sleep(Duration::from_millis(100));
            }
            if self.timeline.now() >= end {
                break;
            }
            let started = self.timeline.now();
            let n = self.faults.len() + 1;
            let kind = self.rng.pick(&self.settings.kinds.clone());
            let target = self.rng.range(0, BROKERS as u64 - 1) as i32;
            let what = self.inject(n, kind, target);
            let healed = self.timeline.now();
            self.timeline
                .event(format!("#{n} {} healed: {what}", kind.name()));
            let isr_whole = match self.wait_for_whole_isrs(RECOVERY_BOUND) {
                Ok(took) => Some(took),
                Err(why) => {
                    self.problems.push(format!(
                        "HANG: after fault #{n} ({what}), healed at {:.1}s, the ISRs were not \
                         whole within {RECOVERY_BOUND:?}: {why}",
                        healed.as_secs_f64()
                    ));
                    None
                }
            };
            let acks_back = match self.wait_for_acks_since(healed, ACKS_BACK_BOUND) {
                Ok(_) => Some(self.timeline.now().saturating_sub(healed)),
                Err(silent) => {
                    self.problems.push(format!(
                        "HANG: after fault #{n} ({what}), healed at {:.1}s, no acknowledgement \
                         within {ACKS_BACK_BOUND:?} of the heal on {silent}",
                        healed.as_secs_f64()
                    ));
                    None
                }
            };
            let ended = self.timeline.now();
            let recovered = isr_whole.is_some() && acks_back.is_some();
            let slowest = isr_whole.max(acks_back).unwrap_or_default();
            if recovered && slowest > SLOW_RECOVERY {
                self.notes.push(format!(
                    "SLOW recovery after fault #{n} ({what}), healed at {:.1}s: ISRs whole {} \
                     and every partition acknowledging {} after the heal",
                    healed.as_secs_f64(),
                    seconds(isr_whole),
                    seconds(acks_back)
                ));
            }
            self.timeline.event(format!(
                "#{n} {} recovered: ISRs whole {} and every partition acknowledging {} after \
                 the heal",
                kind.name(),
                seconds(isr_whole),
                seconds(acks_back)
            ));
            self.faults.push(Fault {
                n,
                kind,
                what,
                started,
                healed,
                isr_whole,
                acks_back,
                ended,
            });
            if !recovered {
                self.timeline
                    .event("the cluster did not recover: no more faults");
                break;
            }
            let quiet = self.rng.millis(3_000, 8_000);
            next_start = (started + self.settings.interval).max(ended + quiet);
        }
        self.faults_ended = self.timeline.now();
    }

    /// Injects fault `n` of `kind` on `target` (a broker, for the kinds
    /// that take one), holds it, and heals it; its description.
    fn inject(&mut self, n: usize, kind: Kind, target: i32) -> String {
        let role = self.role(target);
        match kind {
            Kind::Kill => {
                let down = self.rng.millis(1_000, 10_000);
                let what = format!("SIGKILL {role}, restarted {:.1}s later", secs(down));
                self.timeline.event(format!("#{n} kill: {what}"));
                self.cluster.kill(target);
                self.sleep(down);
                self.cluster.restart(target);
                what
            }
            Kind::Pause => {
                let held = self.rng.millis(2_000, 12_000);
                let what = format!(
                    "SIGSTOP {role} for {:.1}s (session timeout {:.0}s), then SIGCONT",
                    secs(held),
                    secs(SESSION)
                );
                self.timeline.event(format!("#{n} pause: {what}"));
                self.signal(target, libc::SIGSTOP);
                self.sleep(held);
                self.signal(target, libc::SIGCONT);
                what
            }
            Kind::Partition => {
                let held = self.rng.millis(5_000, 25_000);
                let others: Vec<i32> = (0..BROKERS).filter(|&b| b != target).collect();
                let variant = self.rng.range(0, 3);
                let broker = Node::Broker(target);
                let what = match variant {
                    0 => format!("{role} isolated from every node and the clients"),
                    1 => format!("{role} cut from ZooKeeper"),
                    2 => format!("{role} cut from both other brokers"),
                    _ => format!("{role} cut from broker {}", others[0]),
                };
                let what = format!("{what} for {:.1}s", secs(held));
                self.timeline.event(format!("#{n} partition: {what}"));
                match variant {
                    0 => self.cluster.isolate(broker),
                    1 => self.cluster.cut(broker, Node::ZooKeeper),
                    2 => {
                        for &other in &others {
                            self.cluster.cut(broker, Node::Broker(other));
                        }
                    }
                    _ => self.cluster.cut(broker, Node::Broker(others[0])),
                }
                self.sleep(held);
                self.cluster.net.heal_all();
                what
            }
            Kind::ZooKeeper => {
                let down = self.rng.millis(10_000, 30_000);
                let what = format!("ZooKeeper SIGKILLed for {:.1}s, restarted", secs(down));
                self.timeline.event(format!("#{n} zookeeper: {what}"));
                let mut zookeeper = self.zookeeper.take().expect("the ZooKeeper control");
                zookeeper.kill(&mut self.cluster);
                self.sleep(down);
                zookeeper.restart(&self.cluster);
                self.zookeeper = Some(zookeeper);
                what
            }
            Kind::Shutdown => {
                let down = self.rng.millis(1_000, 10_000);
                self.timeline.event(format!(
                    "#{n} shutdown: SIGTERM {role} (controlled shutdown)"
                ));
                let outcome = self.controlled_shutdown(target);
                self.sleep(down);
                self.cluster.restart(target);
                format!(
                    "SIGTERM {role}: {outcome}; restarted {:.1}s later",
                    secs(down)
                )
            }
        }
    }

    fn signal(&mut self, id: i32, signal: i32) {
        let pid = self.cluster.brokers[&id].pid().expect("the broker runs") as i32;
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(pid, signal) };
        let name = if signal == libc::SIGSTOP {
            "SIGSTOP"
        } else {
            "SIGCONT"
        };
        self.timeline.event(format!("{name} broker {id}"));
    }

    /// SIGTERM broker `id` and wait (bounded) for it to exit; what its
    /// log says of the controlled shutdown. A stop that does not log a
    /// clean shutdown, or does not happen, is a problem.
    fn controlled_shutdown(&mut self, id: i32) -> String {
        let before = self
            .cluster
            .brokers
            .get_mut(&id)
            .expect("a broker")
            .log_lines()
            .len();
        self.signal_term(id);
        let deadline = Instant::now() + Duration::from_secs(120);
        let broker = self.cluster.brokers.get_mut(&id).expect("a broker");
        while broker.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let exited = !broker.is_running();
        // The reader thread's last lines arrive by EOF.
        std::thread::sleep(Duration::from_millis(200));
        let lines: Vec<String> = broker.log_lines().split_off(before);
        let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
        let controlled = if has("controlled shutdown of broker") {
            "controlled shutdown succeeded"
        } else if has("proceeding with an unclean shutdown") {
            "controlled shutdown GAVE UP"
        } else {
            "no controlled-shutdown outcome logged"
        };
        let clean = has("shut down cleanly");
        let outcome = format!(
            "{controlled}, {}",
            match (exited, clean) {
                (true, true) => "exited cleanly",
                (true, false) => "EXITED WITHOUT A CLEAN SHUTDOWN",
                (false, _) => "DID NOT EXIT within 120 s",
            }
        );
        if !exited || !clean {
            let tail: Vec<String> = lines.iter().rev().take(30).rev().cloned().collect();
            self.problems.push(format!(
                "broker {id} after SIGTERM: {outcome}; its last lines:\n    {}",
                tail.join("\n    ")
            ));
        }
        if controlled != "controlled shutdown succeeded" {
            self.notes
                .push(format!("broker {id} after SIGTERM: {outcome}"));
        }
        self.timeline
            .event(format!("broker {id} after SIGTERM: {outcome}"));
        // Bookkeeping (the process is gone, or is now SIGKILLed): the
        // harness logs it as a kill.
        self.cluster.kill(id);
        outcome
    }

    fn signal_term(&mut self, id: i32) {
        let pid = self.cluster.brokers[&id].pid().expect("the broker runs") as i32;
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        self.timeline.event(format!("SIGTERM broker {id}"));
    }

    /// Everything healed and whole, the producers stopped, every topic
    /// verified, the replicas byte-identical.
    fn finish(&mut self) -> Vec<(String, acks::Verified)> {
        if !self.cluster.net.cuts().is_empty() {
            self.cluster.net.heal_all();
        }
        // Once a recovery hung, the end waits less: the figures matter more.
        let hung = !self.problems.is_empty();
        let bound = Duration::from_secs(if hung { 30 } else { 180 });
        self.timeline.event("final: waiting for every ISR whole");
        match self.wait_for_whole_isrs(bound) {
            Ok(took) => self.timeline.event(format!(
                "final: every ISR whole after {:.1}s",
                took.as_secs_f64()
            )),
            Err(why) => self.problems.push(format!(
                "HANG: at the end the ISRs were not whole within {bound:?}: {why}"
            )),
        }
        let since = self.timeline.now();
        let bound = Duration::from_secs(if hung { 10 } else { 60 });
        if let Err(silent) = self.wait_for_acks_since(since, bound) {
            self.problems.push(format!(
                "HANG: at the end no acknowledgement within {bound:?} on {silent}"
            ));
        }
        self.sleep(Duration::from_secs(2));
        self.timeline.event("final: stopping the producers");
        for producer in &mut self.producers {
            if let Err(e) = producer.finish() {
                self.problems.push(format!("producer: {e}"));
            }
            let fatal = lock(&producer.fatal).clone();
            for f in fatal {
                self.problems.push(f);
            }
        }
        let sent: u64 = self.producers.iter().map(SoakProducer::sent).sum();
        let failed: usize = self.producers.iter().map(SoakProducer::failed).sum();
        self.timeline.event(format!(
            "final: producers stopped: {sent} sent, {failed} failed deliveries"
        ));
        if failed as f64 > ABSURD_FAILURES * sent as f64 {
            self.problems.push(format!(
                "absurd failed deliveries: {failed} of {sent} sent (more than {:.0}%)",
                ABSURD_FAILURES * 100.0
            ));
        }
        let bootstrap = self.verify_bootstrap();
        let mut verified = Vec::new();
        for producer in &self.producers {
            let (topic, partitions, timeline) = (
                producer.topic.clone(),
                producer.partitions,
                producer.timeline.clone(),
            );
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                acks::verify(&bootstrap, &topic, partitions, &timeline)
            }));
            match outcome {
                Ok(v) => {
                    self.timeline.event(format!(
                        "verified {topic}: {} acknowledged, {} read, every acknowledged record \
                         once at its offset",
                        v.acknowledged, v.read
                    ));
                    verified.push((topic, v));
                }
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    // The checker's findings come first, its timeline after.
                    let findings: String = message
                        .split("timeline (acks and failures")
                        .next()
                        .unwrap_or_default()
                        .chars()
                        .take(6_000)
                        .collect();
                    self.problems
                        .push(format!("acks::verify({topic}) failed: {findings}"));
                }
            }
        }
        self.check_identical_replicas();
        verified
    }

    /// The brokers that answer Metadata with every topic whole in shape
    /// (all of them on a healthy cluster; after a hang, a broker that lost
    /// the topics would only make the verifying consumer fail on unknown
    /// partitions instead of reading what the others hold).
    fn verify_bootstrap(&self) -> String {
        let good: Vec<String> = (0..BROKERS)
            .filter(|&id| {
                TOPICS.iter().all(|&(topic, partitions, _)| {
                    self.cluster.metadata(id, topic).is_some_and(|m| {
                        m.brokers.len() == BROKERS as usize
                            && m.partitions.len() == partitions as usize
                    })
                })
            })
            .map(|id| self.cluster.address(id))
            .collect();
        if good.is_empty() || good.len() == BROKERS as usize {
            self.cluster.bootstrap()
        } else {
            self.timeline.event(format!(
                "final: verifying through {} only (the others lost the topics)",
                good.join(",")
            ));
            good.join(",")
        }
    }

    /// With the producers stopped, every partition's three replicas must
    /// become byte-identical on disk (bounded: 60 s).
    fn check_identical_replicas(&mut self) {
        let dirs: Vec<PathBuf> = (0..BROKERS).map(|id| self.cluster.log_dir(id)).collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut differing = Vec::new();
            for &(topic, partitions, _) in TOPICS {
                for p in 0..partitions {
                    let copies: Vec<Vec<u8>> = dirs
                        .iter()
                        .map(|d| common::replica_bytes(d, topic, p))
                        .collect();
                    if copies[0].is_empty() || copies.iter().any(|c| c != &copies[0]) {
                        let sizes: Vec<usize> = copies.iter().map(Vec::len).collect();
                        differing.push(format!("{topic}/{p} sizes {sizes:?}"));
                    }
                }
            }
            if differing.is_empty() {
                self.timeline
                    .event("final: every partition's replicas byte-identical on disk");
                return;
            }
            if Instant::now() >= deadline {
                self.problems.push(format!(
                    "replicas not byte-identical within 60 s of the stop: {}",
                    differing.join(", ")
                ));
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The timeline (per interval: acknowledgements per topic, failed
    /// deliveries, silent partitions; the faults between them) and the
    /// figures.
    fn report(&self, verified: &[(String, acks::Verified)]) -> String {
        let mut out = String::new();
        let bucket = self.settings.bucket;
        let acks: Vec<(String, i32, Vec<acks::Ack>)> = self
            .producers
            .iter()
            .map(|p| (p.topic.clone(), p.partitions, p.timeline.acks()))
            .collect();
        // Up to the last acknowledgement (or now, when there is none).
        let end = acks
            .iter()
            .filter_map(|(_, _, l)| l.iter().map(|a| a.at).max())
            .max()
            .unwrap_or_else(|| self.timeline.now())
            .max(self.faults_ended);
        let buckets = (end.as_secs() / bucket.as_secs() + 1) as usize;
        // counts[topic][bucket], silent partitions per bucket.
        let mut counts = vec![vec![0usize; buckets]; acks.len()];
        let mut seen = vec![vec![Vec::<bool>::new(); buckets]; acks.len()];
        for (t, (_, partitions, list)) in acks.iter().enumerate() {
            for b in seen[t].iter_mut() {
                *b = vec![false; *partitions as usize];
            }
            for a in list {
                let b = ((a.at.as_secs() / bucket.as_secs()) as usize).min(buckets - 1);
                counts[t][b] += 1;
                seen[t][b][a.partition as usize] = true;
            }
        }
        let mut failed = vec![0usize; buckets];
        for producer in &self.producers {
            for (second, n) in &lock(&producer.failures).by_second {
                failed[((second / bucket.as_secs()) as usize).min(buckets - 1)] += n;
            }
        }
        let first_ack = acks
            .iter()
            .filter_map(|(_, _, l)| l.first().map(|a| a.at))
            .min()
            .unwrap_or_default();
        let mut markers: Vec<(Duration, String)> = Vec::new();
        for f in &self.faults {
            markers.push((
                f.started,
                format!("#{} {} START: {}", f.n, f.kind.name(), f.what),
            ));
            markers.push((f.healed, format!("#{} {} healed", f.n, f.kind.name())));
            markers.push((
                f.ended,
                format!(
                    "#{} {} recovered: ISRs whole {}, acks on every partition {} after the heal",
                    f.n,
                    f.kind.name(),
                    seconds(f.isr_whole),
                    seconds(f.acks_back)
                ),
            ));
        }
        markers.sort_by_key(|(at, _)| *at);
        let _ = writeln!(
            out,
            "==== soak timeline: acknowledgements per {}s ({}), failed deliveries, partitions \
             with none ====",
            bucket.as_secs(),
            acks.iter()
                .map(|(t, _, _)| t.as_str())
                .collect::<Vec<_>>()
                .join(" / ")
        );
        let mut m = 0;
        for b in 0..buckets {
            let from = bucket * b as u32;
            let to = from + bucket;
            if to <= first_ack {
                continue;
            }
            let per: Vec<String> = (0..acks.len()).map(|t| counts[t][b].to_string()).collect();
            let total: usize = (0..acks.len()).map(|t| counts[t][b]).sum();
            let mut silent = Vec::new();
            for (t, (topic, _, _)) in acks.iter().enumerate() {
                for (p, any) in seen[t][b].iter().enumerate() {
                    if !any {
                        silent.push(format!("{topic}/{p}"));
                    }
                }
            }
            let _ = writeln!(
                out,
                "[{:>6}s..{:>6}s] acks {total:>6} ({}){}{}",
                from.as_secs(),
                to.as_secs(),
                per.join(" / "),
                if failed[b] > 0 {
                    format!("  FAILED {}", failed[b])
                } else {
                    String::new()
                },
                if silent.is_empty() {
                    String::new()
                } else if silent.len() > 8 {
                    format!("  none on {} partitions", silent.len())
                } else {
                    format!("  none on {}", silent.join(", "))
                }
            );
            while m < markers.len() && markers[m].0 < to {
                let _ = writeln!(
                    out,
                    "      [{:>9.3}s] {}",
                    markers[m].0.as_secs_f64(),
                    markers[m].1
                );
                m += 1;
            }
        }
        // The figures.
        let sent: u64 = self.producers.iter().map(SoakProducer::sent).sum();
        let acknowledged: usize = acks.iter().map(|(_, _, l)| l.len()).sum();
        let failures: usize = self.producers.iter().map(SoakProducer::failed).sum();
        let read: usize = verified.iter().map(|(_, v)| v.read).sum();
        let _ = writeln!(
            out,
            "==== soak figures: seed FERROLOG_SOAK_SEED={}, {:.1} min of faults ({:.0}s..{:.0}s), \
             {} brokers, topics {} ====",
            self.settings.seed,
            (self.faults_ended.saturating_sub(self.faults_started)).as_secs_f64() / 60.0,
            self.faults_started.as_secs_f64(),
            self.faults_ended.as_secs_f64(),
            BROKERS,
            TOPICS
                .iter()
                .map(|(t, p, c)| if c.is_empty() {
                    format!("{t} x{p}")
                } else {
                    format!("{t} x{p} {c:?}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            out,
            "records: {sent} sent, {acknowledged} acknowledged, {failures} failed deliveries \
             ({:.3}%), {read} read back from the verified topics ({} of {})",
            if sent > 0 {
                100.0 * failures as f64 / sent as f64
            } else {
                0.0
            },
            verified.len(),
            self.producers.len()
        );
        for producer in &self.producers {
            let failures = lock(&producer.failures);
            let _ = writeln!(
                out,
                "  {}: {} sent, {} acknowledged, {} failed{}",
                producer.topic,
                producer.sent(),
                producer.timeline.ack_count(),
                failures.count,
                if failures.by_error.is_empty() {
                    String::new()
                } else {
                    format!(
                        " ({})",
                        failures
                            .by_error
                            .iter()
                            .map(|(e, n)| format!("{n} x {e}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                }
            );
            for f in failures.first.iter().take(5) {
                let _ = writeln!(out, "    e.g. {f}");
            }
        }
        let mut by_kind: BTreeMap<Kind, Vec<&Fault>> = BTreeMap::new();
        for f in &self.faults {
            by_kind.entry(f.kind).or_default().push(f);
        }
        let _ = writeln!(
            out,
            "faults: {} ({})",
            self.faults.len(),
            by_kind
                .iter()
                .map(|(k, fs)| format!("{} {}", k.name(), fs.len()))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (kind, faults) in &by_kind {
            let isr: Vec<f64> = faults
                .iter()
                .filter_map(|f| f.isr_whole)
                .map(|d| d.as_secs_f64())
                .collect();
            let back: Vec<f64> = faults
                .iter()
                .filter_map(|f| f.acks_back)
                .map(|d| d.as_secs_f64())
                .collect();
            let _ = writeln!(
                out,
                "  {:<9} recovery after the heal: ISRs whole mean {} max {}; every partition \
                 acknowledging mean {} max {}",
                kind.name(),
                mean(&isr),
                max(&isr),
                mean(&back),
                max(&back)
            );
        }
        // Gaps between acknowledgements.
        let mut times: Vec<Duration> = Vec::with_capacity(acknowledged);
        let mut per_partition: Vec<(String, Vec<Duration>)> = Vec::new();
        for (topic, partitions, list) in &acks {
            for p in 0..*partitions {
                let mut at: Vec<Duration> = list
                    .iter()
                    .filter(|a| a.partition == p)
                    .map(|a| a.at)
                    .collect();
                at.sort();
                times.extend(at.iter().copied());
                per_partition.push((format!("{topic}/{p}"), at));
            }
        }
        times.sort();
        let (gap, gap_at) = max_gap(&times);
        let worst = per_partition
            .iter()
            .map(|(name, at)| (name, max_gap(at)))
            .max_by_key(|(_, (gap, _))| *gap);
        let _ = writeln!(
            out,
            "max gap between acknowledgements: {:.2}s over all records (from {:.1}s); {}",
            gap.as_secs_f64(),
            gap_at.as_secs_f64(),
            match worst {
                Some((name, (gap, at))) => format!(
                    "{:.2}s on one partition ({name}, from {:.1}s)",
                    gap.as_secs_f64(),
                    at.as_secs_f64()
                ),
                None => "no partition acknowledged anything".into(),
            }
        );
        let _ = writeln!(
            out,
            "per fault (held = start to heal; ISR/acks = after the heal; gap = the longest \
             silence of one partition overlapping the fault and its recovery):"
        );
        for f in &self.faults {
            let worst = per_partition
                .iter()
                .map(|(name, at)| (name, gap_within(at, f.started, f.ended)))
                .max_by_key(|(_, gap)| *gap);
            let _ = writeln!(
                out,
                "  #{:<3} {:>8.1}s {:<9} held {:>5.1}s  ISR {:>6}  acks {:>6}  gap {}  {}",
                f.n,
                f.started.as_secs_f64(),
                f.kind.name(),
                f.healed.saturating_sub(f.started).as_secs_f64(),
                seconds(f.isr_whole),
                seconds(f.acks_back),
                match worst {
                    Some((name, gap)) => format!("{:.1}s ({name})", gap.as_secs_f64()),
                    None => "-".into(),
                },
                f.what
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        if self.problems.is_empty() {
            let _ = writeln!(
                out,
                "verdict: PASS: nothing acknowledged lost, moved or duplicated; every fault \
                 recovered from; replicas identical"
            );
        } else {
            let _ = writeln!(out, "verdict: FAIL, {} problem(s):", self.problems.len());
            for p in &self.problems {
                let _ = writeln!(out, "  - {p}");
            }
        }
        out
    }
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn seconds(d: Option<Duration>) -> String {
    d.map_or("never".into(), |d| format!("{:.1}s", d.as_secs_f64()))
}

fn mean(values: &[f64]) -> String {
    if values.is_empty() {
        "-".into()
    } else {
        format!("{:.1}s", values.iter().sum::<f64>() / values.len() as f64)
    }
}

fn max(values: &[f64]) -> String {
    values
        .iter()
        .copied()
        .reduce(f64::max)
        .map_or("-".into(), |v| format!("{v:.1}s"))
}

/// The longest gap between consecutive (sorted) times, and where it began.
fn max_gap(times: &[Duration]) -> (Duration, Duration) {
    times
        .windows(2)
        .map(|w| (w[1] - w[0], w[0]))
        .max_by_key(|(gap, _)| *gap)
        .unwrap_or_default()
}

/// The longest gap between consecutive (sorted) `times` that overlaps
/// `from..=to`, a gap still open at the last time counting up to `to`.
fn gap_within(times: &[Duration], from: Duration, to: Duration) -> Duration {
    let start = times.partition_point(|&t| t < from);
    let mut previous = if start > 0 { times[start - 1] } else { from };
    let mut longest = Duration::ZERO;
    for &t in &times[start..] {
        longest = longest.max(t.saturating_sub(previous));
        previous = t;
        if t > to {
            return longest;
        }
    }
    longest.max(to.saturating_sub(previous))
}

/// The soak itself; see the module doc. Returns at once without
/// `FERROLOG_SOAK=1`.
#[test]
fn mixed_fault_soak() {
    if std::env::var("FERROLOG_SOAK").as_deref() != Ok("1") {
        eprintln!(
            "soak skipped: set FERROLOG_SOAK=1 to run it (FERROLOG_SOAK_MINUTES, default 30; \
             needs root)"
        );
        return;
    }
    // SAFETY: a plain syscall.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "the soak needs root (network namespaces and tc)"
    );
    let settings = Settings::from_env();
    eprintln!(
        "soak: {:.1} min of faults, FERROLOG_SOAK_SEED={} replays this schedule, faults at \
         least {}s apart, kinds {:?}, {} records/s per topic",
        settings.minutes,
        settings.seed,
        settings.interval.as_secs(),
        settings.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(),
        settings.rate
    );
    let mut soak = Soak::start(settings);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        soak.run_faults();
        soak.finish()
    }));
    let verified = match outcome {
        Ok(verified) => verified,
        Err(panic) => {
            // Figures so far, then the panic (the cluster's Drop saves
            // every log and names the directory).
            soak.problems.push("the soak panicked (see below)".into());
            eprintln!("{}", soak.report(&[]));
            std::panic::resume_unwind(panic);
        }
    };
    let report = soak.report(&verified);
    let dir = soak.cluster.save_logs();
    let _ = std::fs::write(dir.join("soak-report.txt"), &report);
    eprintln!("{report}");
    eprintln!(
        "every broker's log, ZooKeeper's, the event timeline and this report are in {}",
        dir.display()
    );
    assert!(
        soak.problems.is_empty(),
        "the soak found {} problem(s) (seed FERROLOG_SOAK_SEED={}); see the report above:\n  {}",
        soak.problems.len(),
        soak.settings.seed,
        soak.problems.join("\n  ")
    );
}
