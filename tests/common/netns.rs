//! Real network partitions for cluster tests: a ZooKeeper server and
//! broker processes, each in a Linux network namespace of its own, joined
//! by veth pairs to a bridge in a hub namespace; the test process (the
//! clients) is attached to the same bridge from the root namespace.
//!
//! Addresses: `10.77.<n>.0/24`, `n` taken per cluster under a lock
//! directory (`/tmp/ferrolog-netns/<n>`, holding the owner's pid), so that
//! clusters of parallel tests and of parallel test binaries never share
//! names or addresses; a lock whose owner died is taken over and its
//! leftovers deleted. Client `.1`, ZooKeeper `.2`, broker `id` `.10+id`.
//!
//! A cut drops packets silently, as a real partition does (connects time
//! out, established connections stall and resume after the heal): each
//! node's interface has an HTB qdisc whose class `1:2` ends in a
//! `blackhole` qdisc, and cutting `a -> b` adds a u32 filter on `a`'s
//! interface sending packets for `b`'s address there (iptables and tc
//! actions are not available on every test machine; these are). A
//! symmetric cut filters on both sides.
//!
//! Dropping a [`NetCluster`] SIGKILLs its processes and deletes its
//! namespaces and links, also when the test panics; a panicking test (or
//! any, with `FERROLOG_NETNS_KEEP_LOGS=1`) also gets every process's log
//! and the timeline written to a directory it names.
//!
//! Needs root, `ip` and `tc`. Include with
//! `#[path = "common/netns.rs"] mod netns;` beside
//! `#[path = "common/acks.rs"] mod acks;` (the timeline).
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::acks::Timeline;

/// Debian's ZooKeeper; its manifest names the jars it needs.
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
pub const ZOOKEEPER_PORT: u16 = 2181;
pub const BROKER_PORT: u16 = 9092;
/// The chroot every broker of a cluster uses.
pub const CHROOT: &str = "/ferrolog";
const LOCKS: &str = "/tmp/ferrolog-netns";

/// One endpoint of the test network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Node {
    /// The test process itself (librdkafka clients), in the root namespace.
    Client,
    ZooKeeper,
    Broker(i32),
}

impl Node {
    fn host(self) -> u8 {
        match self {
            Node::Client => 1,
            Node::ZooKeeper => 2,
            Node::Broker(id) => {
                assert!((0..100).contains(&id), "broker ids 0..100 only");
                10 + id as u8
            }
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Client => write!(f, "client"),
            Node::ZooKeeper => write!(f, "zookeeper"),
            Node::Broker(id) => write!(f, "broker {id}"),
        }
    }
}

/// Runs `ip`/`tc` (or any command); its combined output on failure.
fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} {}: {e}", args.join(" ")))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {} failed ({}): {}{}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn must(program: &str, args: &[&str]) {
    if let Err(e) = run(program, args) {
        panic!("{e}");
    }
}

/// The namespaces, links and cuts of one cluster.
pub struct Network {
    subnet: u8,
    lock: PathBuf,
    nodes: Vec<Node>,
    /// Directed cuts in force: packets from `.0` to `.1` are dropped.
    cuts: BTreeSet<(Node, Node)>,
    timeline: Arc<Timeline>,
}

impl Network {
    /// Creates the hub, one namespace per broker and ZooKeeper, and the
    /// client's link. Panics (after cleaning up) if any step fails.
    pub fn create(brokers: i32, timeline: Arc<Timeline>) -> Network {
        let (subnet, lock) = take_subnet();
        let mut nodes = vec![Node::Client, Node::ZooKeeper];
        nodes.extend((0..brokers).map(Node::Broker));
        let network = Network {
            subnet,
            lock,
            nodes,
            cuts: BTreeSet::new(),
            timeline,
        };
        network.build();
        network.timeline.event(format!(
            "network 10.77.{subnet}.0/24 up: client .1, zookeeper .2, brokers .10..{}",
            10 + brokers - 1
        ));
        network
    }

    fn hub(&self) -> String {
        prefix(self.subnet) + "h"
    }

    /// The namespace of `node`; `None` for the client (root namespace).
    pub fn namespace(&self, node: Node) -> Option<String> {
        let prefix = prefix(self.subnet);
        match node {
            Node::Client => None,
            Node::ZooKeeper => Some(prefix + "z"),
            Node::Broker(id) => Some(format!("{prefix}b{id}")),
        }
    }

    /// `node`'s interface name (in its own namespace).
    fn device(&self, node: Node) -> String {
        match node {
            Node::Client => prefix(self.subnet) + "c",
            _ => "eth0".into(),
        }
    }

    /// The bridge port of `node` (in the hub).
    fn port(node: Node) -> String {
        match node {
            Node::Client => "c".into(),
            Node::ZooKeeper => "z".into(),
            Node::Broker(id) => format!("b{id}"),
        }
    }

    pub fn ip(&self, node: Node) -> String {
        format!("10.77.{}.{}", self.subnet, node.host())
    }

    /// Runs `program args` inside `node`'s namespace.
    fn exec_in(&self, node: Node, program: &str, args: &[&str]) -> Result<(), String> {
        match self.namespace(node) {
            None => run(program, args),
            Some(ns) => {
                let mut all = vec!["netns", "exec", ns.as_str(), program];
                all.extend_from_slice(args);
                run("ip", &all)
            }
        }
    }

    /// A command running `program` inside `node`'s namespace.
    pub fn command(&self, node: Node, program: &str) -> Command {
        match self.namespace(node) {
            None => Command::new(program),
            Some(ns) => {
                let mut command = Command::new("ip");
                command.args(["netns", "exec", &ns, program]);
                command
            }
        }
    }

    fn build(&self) {
        let hub = self.hub();
        must("ip", &["netns", "add", &hub]);
        must("ip", &["-n", &hub, "link", "set", "lo", "up"]);
        must("ip", &["-n", &hub, "link", "add", "br0", "type", "bridge"]);
        must("ip", &["-n", &hub, "link", "set", "br0", "up"]);
        let pid = std::process::id().to_string();
        for &node in &self.nodes {
            let port = Self::port(node);
            let device = self.device(node);
            let address = format!("{}/24", self.ip(node));
            match self.namespace(node) {
                Some(ns) => {
                    must("ip", &["netns", "add", &ns]);
                    must("ip", &["-n", &ns, "link", "set", "lo", "up"]);
                    must(
                        "ip",
                        &[
                            "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name",
                            &device, "netns", &ns,
                        ],
                    );
                    must("ip", &["-n", &ns, "addr", "add", &address, "dev", &device]);
                    must("ip", &["-n", &ns, "link", "set", &device, "up"]);
                }
                None => {
                    // The peer goes to this process's (the root) namespace.
                    must(
                        "ip",
                        &[
                            "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name",
                            &device, "netns", &pid,
                        ],
                    );
                    must("ip", &["addr", "add", &address, "dev", &device]);
                    must("ip", &["link", "set", &device, "up"]);
                }
            }
            must("ip", &["-n", &hub, "link", "set", &port, "master", "br0"]);
            must("ip", &["-n", &hub, "link", "set", &port, "up"]);
            // Egress: class 1:1 (the default) passes, class 1:2 drops.
            for args in [
                "qdisc add dev DEV root handle 1: htb default 1",
                "class add dev DEV parent 1: classid 1:1 htb rate 10gbit quantum 60000",
                "class add dev DEV parent 1: classid 1:2 htb rate 10gbit quantum 60000",
                "qdisc add dev DEV parent 1:2 handle 2: blackhole",
            ] {
                let args: Vec<&str> = args
                    .split(' ')
                    .map(|a| if a == "DEV" { device.as_str() } else { a })
                    .collect();
                if let Err(e) = self.exec_in(node, "tc", &args) {
                    panic!("{node}: {e}");
                }
            }
        }
    }

    /// Drops every packet `from` sends to `to` (one direction only).
    pub fn cut_one_way(&mut self, from: Node, to: Node) {
        assert_ne!(from, to);
        if !self.cuts.insert((from, to)) {
            return;
        }
        let device = self.device(from);
        let prio = (100 + to.host() as u32).to_string();
        let dst = format!("{}/32", self.ip(to));
        let args = [
            "filter", "add", "dev", &device, "parent", "1:", "protocol", "ip", "prio", &prio,
            "u32", "match", "ip", "dst", &dst, "flowid", "1:2",
        ];
        if let Err(e) = self.exec_in(from, "tc", &args) {
            panic!("cutting {from} -> {to}: {e}");
        }
    }

    /// Lets packets `from` -> `to` pass again.
    pub fn heal_one_way(&mut self, from: Node, to: Node) {
        if !self.cuts.remove(&(from, to)) {
            return;
        }
        let device = self.device(from);
        let prio = (100 + to.host() as u32).to_string();
        let args = [
            "filter", "del", "dev", &device, "parent", "1:", "protocol", "ip", "prio", &prio,
        ];
        if let Err(e) = self.exec_in(from, "tc", &args) {
            panic!("healing {from} -> {to}: {e}");
        }
    }

    /// A symmetric partition between `a` and `b`.
    pub fn cut(&mut self, a: Node, b: Node) {
        self.cut_one_way(a, b);
        self.cut_one_way(b, a);
        self.timeline.event(format!("CUT {a} <-> {b}"));
    }

    pub fn heal(&mut self, a: Node, b: Node) {
        self.heal_one_way(a, b);
        self.heal_one_way(b, a);
        self.timeline.event(format!("HEAL {a} <-> {b}"));
    }

    /// `node` cut from every other node, the clients included.
    pub fn isolate(&mut self, node: Node) {
        for other in self.nodes.clone() {
            if other != node {
                self.cut_one_way(node, other);
                self.cut_one_way(other, node);
            }
        }
        self.timeline
            .event(format!("ISOLATE {node} (from every node and the clients)"));
    }

    /// Undoes every cut to and from `node`.
    pub fn rejoin(&mut self, node: Node) {
        for (from, to) in self.cuts.clone() {
            if from == node || to == node {
                self.heal_one_way(from, to);
            }
        }
        self.timeline.event(format!("REJOIN {node}"));
    }

    pub fn heal_all(&mut self) {
        for (from, to) in self.cuts.clone() {
            self.heal_one_way(from, to);
        }
        self.timeline.event("HEAL everything");
    }

    /// The directed cuts in force.
    pub fn cuts(&self) -> Vec<(Node, Node)> {
        self.cuts.iter().copied().collect()
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        delete_leftovers(self.subnet);
        let _ = std::fs::remove_dir_all(&self.lock);
    }
}

fn prefix(subnet: u8) -> String {
    format!("flp{subnet}")
}

/// Deletes the client link and every namespace of subnet `subnet`
/// (whatever exists of them), first SIGKILLing, by pid, any process still
/// running in one (a broker or ZooKeeper of a test binary that was itself
/// killed before its Drop ran).
fn delete_leftovers(subnet: u8) {
    let prefix = prefix(subnet);
    let _ = run("ip", &["link", "del", &format!("{prefix}c")]);
    let namespaces = std::fs::read_dir("/run/netns")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for ns in namespaces {
        let owned = ns.strip_prefix(&prefix).is_some_and(|rest| {
            rest == "h"
                || rest == "z"
                || rest
                    .strip_prefix('b')
                    .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        });
        if !owned {
            continue;
        }
        let pids = Command::new("ip")
            .args(["netns", "pids", &ns])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for pid in pids
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            // SAFETY: signalling a process of this harness by its pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = run("ip", &["netns", "del", &ns]);
    }
}

/// Whether the lock directory `lock` belongs to no live process: its
/// owner's pid is gone, or it has had no pid file for a minute.
fn stale(lock: &Path) -> bool {
    match std::fs::read_to_string(lock.join("pid")) {
        Ok(pid) => pid
            .trim()
            .parse::<u32>()
            .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()),
        Err(_) => std::fs::metadata(lock)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(60)),
    }
}

/// A subnet number no live process holds, and its lock directory. Locks
/// of dead owners are reaped first (their processes, links and
/// namespaces), so a killed test run leaves nothing behind for long.
fn take_subnet() -> (u8, PathBuf) {
    std::fs::create_dir_all(LOCKS).expect("the netns lock directory");
    let locks: Vec<PathBuf> = std::fs::read_dir(LOCKS)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    for lock in locks.iter().take(256) {
        let subnet = lock
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u8>().ok());
        if let Some(subnet) = subnet.filter(|_| stale(lock)) {
            delete_leftovers(subnet);
            let _ = std::fs::remove_dir_all(lock);
        }
    }
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let seed = std::process::id()
        .wrapping_mul(7)
        .wrapping_add(NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
    for attempt in 0..500u32 {
        let subnet = ((seed.wrapping_add(attempt)) % 250 + 1) as u8;
        let lock = Path::new(LOCKS).join(subnet.to_string());
        match std::fs::create_dir(&lock) {
            Ok(()) => {
                std::fs::write(lock.join("pid"), std::process::id().to_string())
                    .expect("the lock's pid file");
                // Ours now: whatever an owner without a lock left goes.
                delete_leftovers(subnet);
                return (subnet, lock);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if stale(&lock) {
                    delete_leftovers(subnet);
                    let _ = std::fs::remove_dir_all(&lock);
                }
            }
            Err(e) => panic!("{}: {e}", lock.display()),
        }
    }
    panic!("no free 10.77.<n>.0/24 subnet under {LOCKS}");
}

/// Makes `command`'s process receive SIGKILL when the thread that spawns
/// it ends (`PR_SET_PDEATHSIG`; kept across the exec that `ip netns exec`
/// does), so a test binary killed before its Drop runs leaves no broker
/// or ZooKeeper running.
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe, the only call between fork and
    // exec.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// Lines of a child's stderr (or stdout), each prefixed with the
/// timeline's clock, drained by a thread of their own.
struct Lines {
    receiver: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    fn drain<R: Read + Send + 'static>(source: R, tag: String, timeline: Arc<Timeline>) -> Lines {
        let (tx, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(source).lines().map_while(Result::ok) {
                let line = format!("[{:>8.3}s] {line}", timeline.now().as_secs_f64());
                if std::env::var("FERROLOG_TEST_ECHO").is_ok() {
                    eprintln!("[{tag}] {line}");
                }
                let _ = tx.send(line);
            }
        });
        Lines {
            receiver,
            seen: Vec::new(),
        }
    }

    fn pump(&mut self) {
        while let Ok(line) = self.receiver.try_recv() {
            self.seen.push(line);
        }
    }
}

/// A ZooKeeper server (Debian's package, standalone) in its namespace,
/// bound to its namespace address.
pub struct NetZooKeeper {
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// `10.77.n.2:2181`.
    pub address: String,
}

impl NetZooKeeper {
    fn start(network: &Network) -> NetZooKeeper {
        assert!(
            Path::new(ZOOKEEPER_JAR).exists(),
            "ZooKeeper is not installed: run ./scripts/test.sh, which runs \
             `apt-get install zookeeper`"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        let ip = network.ip(Node::ZooKeeper);
        // A short tick allows session timeouts down to 1 s.
        std::fs::write(
            dir.path().join("zoo.cfg"),
            format!(
                "tickTime=500\ndataDir={}\nclientPort={ZOOKEEPER_PORT}\nclientPortAddress={ip}\n\
                 admin.enableServer=false\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n\
                 4lw.commands.whitelist=*\n",
                data.display()
            ),
        )
        .expect("zoo.cfg");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("log file");
        let mut command = network.command(Node::ZooKeeper, "java");
        die_with_parent(&mut command);
        let child = command
            .args([
                "-Xmx256m",
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
                &format!("/etc/zookeeper/conf:{ZOOKEEPER_JAR}"),
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            ])
            .arg(dir.path().join("zoo.cfg"))
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("java runs in the namespace");
        let server = NetZooKeeper {
            child: Some(child),
            dir,
            address: format!("{ip}:{ZOOKEEPER_PORT}"),
        };
        let target: SocketAddr = server.address.parse().expect("an address");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect_timeout(&target, Duration::from_millis(500)).is_err() {
            assert!(
                Instant::now() < deadline,
                "ZooKeeper did not listen on {} within 60 s; its log:\n{}",
                server.address,
                server.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        network
            .timeline
            .event(format!("zookeeper listening on {}", server.address));
        server
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NetZooKeeper {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One broker process in its namespace (`ip netns exec` execs the broker,
/// so the child is the broker itself), listening on its namespace address.
pub struct NetBroker {
    pub id: i32,
    child: Option<Child>,
    lines: Option<Lines>,
    /// Every line of every incarnation so far.
    past: Vec<String>,
    /// `10.77.n.(10+id):9092`.
    pub address: String,
    namespace: String,
    log_dir: PathBuf,
    overrides: Vec<String>,
    timeline: Arc<Timeline>,
}

impl NetBroker {
    fn spawn(&mut self, network: &Network) {
        assert!(self.child.is_none(), "broker {} runs already", self.id);
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties");
        let mut command = network.command(Node::Broker(self.id), env!("CARGO_BIN_EXE_ferrolog"));
        command.args(["--config", config]).args([
            "--override",
            &format!("log.dirs={}", self.log_dir.display()),
        ]);
        for o in &self.overrides {
            command.args(["--override", o]);
        }
        die_with_parent(&mut command);
        let mut child = command
            .env(
                "RUST_LOG",
                std::env::var("FERROLOG_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the ferrolog binary starts in its namespace");
        let stderr = child.stderr.take().expect("stderr is piped");
        self.lines = Some(Lines::drain(
            stderr,
            format!("broker {}", self.id),
            self.timeline.clone(),
        ));
        self.child = Some(child);
        self.wait_for_line("started: listening on", Duration::from_secs(60));
        self.timeline
            .event(format!("broker {} started on {}", self.id, self.address));
    }

    /// Waits (bounded) for a line of the current incarnation containing
    /// `needle`; panics with the log on timeout or exit.
    pub fn wait_for_line(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(lines) = self.lines.as_mut() {
                lines.pump();
                if let Some(line) = lines.seen.iter().find(|l| l.contains(needle)) {
                    return line.clone();
                }
            }
            let id = self.id;
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                let log = self.log_lines().join("\n");
                panic!("broker {id} exited ({status}) before logging {needle:?}:\n{log}");
            }
            if Instant::now() >= deadline {
                let log = self.log_lines().join("\n");
                panic!("broker {id} did not log {needle:?} within {timeout:?}:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every line so far, of every incarnation.
    pub fn log_lines(&mut self) -> Vec<String> {
        let mut all = self.past.clone();
        if let Some(lines) = self.lines.as_mut() {
            lines.pump();
            all.extend(lines.seen.iter().cloned());
        }
        all
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL (kill -9); the log is kept.
    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(mut lines) = self.lines.take() {
            // What the reader thread still holds arrives by EOF.
            std::thread::sleep(Duration::from_millis(50));
            lines.pump();
            self.past.append(&mut lines.seen);
            self.past.push("----- SIGKILL -----".into());
        }
    }
}

impl Drop for NetBroker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where partition `p` stands, as one broker answers Metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionView {
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    /// Sorted.
    pub isr: Vec<i32>,
    pub error: i16,
}

/// One broker's Metadata answer for one topic.
#[derive(Clone, Debug)]
pub struct MetadataView {
    pub controller: i32,
    pub brokers: Vec<i32>,
    pub partitions: BTreeMap<i32, PartitionView>,
}

/// ZooKeeper server, brokers and the network between them.
pub struct NetCluster {
    /// Fields drop in this order: the test's ZooKeeper client, the
    /// brokers, ZooKeeper, their data, then the network.
    zk_reader: Option<ZkReader>,
    pub brokers: BTreeMap<i32, NetBroker>,
    pub zk: NetZooKeeper,
    dirs: Vec<tempfile::TempDir>,
    pub net: Network,
    pub timeline: Arc<Timeline>,
    name: String,
}

impl NetCluster {
    /// ZooKeeper and `size` brokers (ids 0..size), each broker with
    /// `extra` overrides on top of the cluster's own (addresses, ids,
    /// `zookeeper.connect`, log dir). `name` names the log directory a
    /// panicking test leaves behind.
    pub fn start(name: &str, size: i32, extra: &[&str], timeline: Arc<Timeline>) -> NetCluster {
        let net = Network::create(size, timeline.clone());
        let zk = NetZooKeeper::start(&net);
        let mut cluster = NetCluster {
            zk_reader: None,
            brokers: BTreeMap::new(),
            zk,
            dirs: Vec::new(),
            net,
            timeline,
            name: name.to_string(),
        };
        for id in 0..size {
            let dir = tempfile::tempdir().expect("tempdir");
            let ip = cluster.net.ip(Node::Broker(id));
            let address = format!("{ip}:{BROKER_PORT}");
            let mut overrides = vec![
                format!("broker.id={id}"),
                format!("listeners=PLAINTEXT://{address}"),
                "http.listener=http://127.0.0.1:0".to_string(),
                format!("advertised.listeners=PLAINTEXT://{address}"),
                format!("zookeeper.connect={}{CHROOT}", cluster.zk.address),
            ];
            overrides.extend(extra.iter().map(|s| s.to_string()));
            let broker = NetBroker {
                id,
                child: None,
                lines: None,
                past: Vec::new(),
                address,
                namespace: cluster
                    .net
                    .namespace(Node::Broker(id))
                    .expect("a namespace"),
                log_dir: dir.path().to_path_buf(),
                overrides,
                timeline: cluster.timeline.clone(),
            };
            cluster.dirs.push(dir);
            cluster.brokers.insert(id, broker);
            cluster.restart(id);
        }
        cluster
    }

    /// Every broker's address, comma-separated.
    pub fn bootstrap(&self) -> String {
        self.brokers
            .values()
            .map(|b| b.address.clone())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn address(&self, id: i32) -> String {
        self.brokers[&id].address.clone()
    }

    /// Broker `id`'s `log.dirs` (kept across restarts).
    pub fn log_dir(&self, id: i32) -> PathBuf {
        self.brokers[&id].log_dir.clone()
    }

    pub fn cut(&mut self, a: Node, b: Node) {
        self.net.cut(a, b);
    }

    pub fn heal(&mut self, a: Node, b: Node) {
        self.net.heal(a, b);
    }

    pub fn isolate(&mut self, node: Node) {
        self.net.isolate(node);
    }

    pub fn rejoin(&mut self, node: Node) {
        self.net.rejoin(node);
    }

    /// SIGKILL broker `id` (its data stays for [`NetCluster::restart`]).
    pub fn kill(&mut self, id: i32) {
        if let Some(broker) = self.brokers.get_mut(&id) {
            broker.kill();
        }
        self.timeline.event(format!("KILL -9 broker {id}"));
    }

    /// Starts broker `id` (again) on its data and address; waits until it
    /// listens.
    pub fn restart(&mut self, id: i32) {
        let mut broker = self.brokers.remove(&id).expect("a known broker id");
        broker.spawn(&self.net);
        self.brokers.insert(id, broker);
    }

    /// Metadata (v9) for `topic` as broker `id` answers it, on a fresh
    /// connection with 3 s connect and read timeouts; `None` when it does
    /// not answer.
    pub fn metadata(&self, id: i32, topic: &str) -> Option<MetadataView> {
        metadata(&self.address(id), topic)
    }

    /// The ISR of each partition (sorted) as broker `id` answers Metadata;
    /// empty when it does not answer.
    pub fn isrs(&self, id: i32, topic: &str) -> BTreeMap<i32, Vec<i32>> {
        self.metadata(id, topic)
            .map(|m| {
                m.partitions
                    .iter()
                    .map(|(p, view)| (*p, view.isr.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn zk(&mut self) -> &ZkReader {
        if self.zk_reader.is_none() {
            self.zk_reader = Some(ZkReader::connect(&format!("{}{CHROOT}", self.zk.address)));
        }
        self.zk_reader.as_ref().expect("connected above")
    }

    /// The active controller as `/controller` says, if any.
    pub fn controller(&mut self) -> Option<i32> {
        let bytes = self.zk().get("/controller")?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        value["brokerid"].as_i64().map(|id| id as i32)
    }

    /// The broker ids registered in `/brokers/ids`.
    pub fn registered(&mut self) -> Vec<i32> {
        let mut ids: Vec<i32> = self
            .zk()
            .children("/brokers/ids")
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// `/brokers/topics/<topic>/partitions/<p>/state` (leader, epoch, ISR).
    pub fn partition_state(&mut self, topic: &str, partition: i32) -> Option<serde_json::Value> {
        let bytes = self.zk().get(&format!(
            "/brokers/topics/{topic}/partitions/{partition}/state"
        ))?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Every process's log, a line each, for a failure message.
    pub fn logs(&mut self) -> String {
        let mut out = String::new();
        for (id, broker) in self.brokers.iter_mut() {
            for line in broker.log_lines() {
                out.push_str(&format!("broker {id}: {line}\n"));
            }
        }
        out
    }

    /// Writes every broker's log, ZooKeeper's log and the timeline into a
    /// fresh directory; its path.
    pub fn save_logs(&mut self) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ferrolog-netns-{}-{}-{}",
            self.name,
            std::process::id(),
            self.timeline.now().as_millis()
        ));
        let _ = std::fs::create_dir_all(&dir);
        for (id, broker) in self.brokers.iter_mut() {
            let _ = std::fs::write(
                dir.join(format!("broker-{id}.log")),
                broker.log_lines().join("\n"),
            );
        }
        let _ = std::fs::write(dir.join("zookeeper.log"), self.zk.log());
        let _ = std::fs::write(dir.join("timeline.txt"), self.timeline.render());
        dir
    }
}

impl Drop for NetCluster {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var("FERROLOG_NETNS_KEEP_LOGS").is_ok() {
            let dir = self.save_logs();
            eprintln!(
                "the cluster's logs (brokers, zookeeper, timeline) are in {}",
                dir.display()
            );
        }
        self.zk_reader = None;
        for broker in self.brokers.values_mut() {
            broker.kill();
        }
        self.zk.kill();
        // `net` deletes the namespaces when it drops, after this.
    }
}

/// A ZooKeeper client of the test's own (in the root namespace), for
/// reading znodes.
struct ZkReader {
    runtime: tokio::runtime::Runtime,
    store: Arc<ferrolog::metadata::ZooKeeperStore>,
}

impl ZkReader {
    fn connect(connect: &str) -> ZkReader {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let store = runtime
            .block_on(ferrolog::metadata::ZooKeeperStore::connect(
                connect,
                Duration::from_secs(10),
                Duration::from_secs(20),
            ))
            .expect("the test connects to ZooKeeper");
        ZkReader { runtime, store }
    }

    fn get(&self, path: &str) -> Option<Vec<u8>> {
        use ferrolog::metadata::MetadataStore;
        let read = self.runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), self.store.get(path)).await
        });
        match read {
            Ok(Ok(Some((bytes, _)))) => Some(bytes),
            _ => None,
        }
    }

    fn children(&self, path: &str) -> Vec<String> {
        use ferrolog::metadata::MetadataStore;
        let read = self.runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), self.store.children(path)).await
        });
        match read {
            Ok(Ok(children)) => children,
            _ => Vec::new(),
        }
    }
}

/// One Metadata v9 exchange with `address`; `None` on any failure.
pub fn metadata(address: &str, topic: &str) -> Option<MetadataView> {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::{
        ApiKey, MetadataRequest, MetadataResponse, RequestHeader, ResponseHeader, TopicName,
    };
    use kafka_protocol::protocol::{Decodable, StrBytes};
    const VERSION: i16 = 9;
    let request = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
            TopicName(StrBytes::from_string(topic.to_string())),
        ))]))
        .with_allow_auto_topic_creation(false);
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::Metadata as i16)
        .with_request_api_version(VERSION)
        .with_correlation_id(7)
        .with_client_id(Some(StrBytes::from_static_str("ferrolog-netns-test")));
    let frame = ferrolog::protocol::encode_request(&header, ApiKey::Metadata, &request).ok()?;
    let target: SocketAddr = address.parse().ok()?;
    let mut stream = TcpStream::connect_timeout(&target, Duration::from_secs(3)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(3)))
        .ok()?;
    stream.write_all(&frame).ok()?;
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).ok()?;
    let length = i32::from_be_bytes(prefix);
    if !(0..64 << 20).contains(&length) {
        return None;
    }
    let mut body = vec![0u8; length as usize];
    stream.read_exact(&mut body).ok()?;
    let mut buf = bytes::Bytes::from(body);
    let response_header =
        ResponseHeader::decode(&mut buf, ApiKey::Metadata.response_header_version(VERSION)).ok()?;
    if response_header.correlation_id != 7 {
        return None;
    }
    let response = MetadataResponse::decode(&mut buf, VERSION).ok()?;
    let mut partitions = BTreeMap::new();
    for t in response
        .topics
        .iter()
        .filter(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
    {
        for p in &t.partitions {
            let mut isr: Vec<i32> = p.isr_nodes.iter().map(|b| b.0).collect();
            isr.sort_unstable();
            partitions.insert(
                p.partition_index,
                PartitionView {
                    leader: p.leader_id.0,
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                    isr,
                    error: p.error_code,
                },
            );
        }
    }
    Some(MetadataView {
        controller: response.controller_id.0,
        brokers: response.brokers.iter().map(|b| b.node_id.0).collect(),
        partitions,
    })
}
