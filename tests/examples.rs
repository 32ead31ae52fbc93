//! The examples in `examples/` work as documented, each run as a real
//! process: `embedded_broker` brings a broker up in-process and prints its
//! address, `producer` sends records to it, `consumer` reads them back and
//! prints them, and the broker stops cleanly (exit 0, clean-shutdown marker
//! written) on SIGTERM or when its `--seconds` are up.
//!
//! Integration tests do not get example binaries, so the first test to need
//! one builds the three examples once (`cargo build --example ...
//! --offline`, same target dir and profile as this test binary) and runs
//! them from `target/<profile>/examples/`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

const EXAMPLES: [&str; 3] = ["embedded_broker", "producer", "consumer"];

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

/// A running `embedded_broker`; dropping it SIGKILLs the process.
struct EmbeddedBroker {
    child: Child,
    address: String,
    stderr: mpsc::Receiver<String>,
}

impl EmbeddedBroker {
    /// Start it and wait (bounded) for its `listening on <addr>` line.
    fn start(log_dir: &Path, extra: &[&str]) -> EmbeddedBroker {
        let mut child = Command::new(example("embedded_broker"))
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
