//! The `ferrolog` daemon as an operator runs it: the real binary, a real
//! properties file, real signals.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn ferrolog() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ferrolog"))
}

/// Waits (bounded) until the daemon logs that it started; returns the
/// stderr lines seen so far.
fn wait_started(child: &mut Child) -> Vec<String> {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Keep draining after the test stops listening: a closed pipe would
        // fail the daemon's own log writes at shutdown.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut lines = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            let started = line.contains("started:");
            lines.push(line);
            if started {
                return lines;
            }
        }
    }
    panic!("the daemon did not start: {lines:?}");
}

fn sigterm(child: &Child) {
    // SAFETY: sending a signal to our own child process.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(rc, 0);
}

/// An invalid value stops start-up with a non-zero exit and a message naming
/// the key and the reason.
#[test]
fn bad_config_exits_non_zero_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.properties");
    std::fs::write(&file, "log.segment.bytes=lots\n").unwrap();
    let out = ferrolog().arg("--config").arg(&file).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("log.segment.bytes"), "{stderr}");
    let out = ferrolog()
        .arg("--config")
        .arg(&file)
        .args([
            "--override",
            "log.segment.bytes=1048576",
            "--override",
            "num.io.threads=zero",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("num.io.threads"));
}

/// The shipped config/server.properties starts the daemon (log.dirs moved to
/// a temp dir); SIGTERM flushes, writes checkpoints and the clean-shutdown
/// marker and exits 0; the next start sees the marker and skips recovery.
#[test]
fn sigterm_shuts_down_cleanly_and_restart_skips_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties");
    let start = || {
        ferrolog()
            .args(["--config", shipped, "--override"])
            .arg(format!("log.dirs={}", logs.display()))
            .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
            .args(["--override", "http.listener=http://127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // A partition left by an unclean stop (no marker): the first start
    // recovers it, the second one must not.
    let partition = logs.join("orders-0");
    std::fs::create_dir_all(&partition).unwrap();
    let batch =
        ferrolog::storage::testing::batch_v2(3, 10, kafka_protocol::records::Compression::None);
    std::fs::write(partition.join("00000000000000000000.log"), &batch).unwrap();

    let mut child = start();
    let lines = wait_started(&mut child);
    assert!(
        lines.iter().any(|l| l.contains("recovered 1 segment")),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.ends_with(" 1 segment(s) recovered")),
        "{lines:?}"
    );
    sigterm(&child);
    assert!(child.wait().unwrap().success());
    assert!(logs.join(".kafka_cleanshutdown").exists());
    let checkpoint =
        std::fs::read_to_string(logs.join("recovery-point-offset-checkpoint")).unwrap();
    assert_eq!(checkpoint, "0\n1\norders 0 3\n");

    let mut child = start();
    let lines = wait_started(&mut child);
    // A fact, not a missing line: the start line counts the segments
    // recovery re-read.
    assert!(
        lines.iter().any(|l| l.ends_with(" 0 segment(s) recovered")),
        "{lines:?}"
    );
    assert!(
        !logs.join(".kafka_cleanshutdown").exists(),
        "consumed at start"
    );
    sigterm(&child);
    assert!(child.wait().unwrap().success());
}

/// As Kafka does, the broker creates `log.dirs` that do not exist yet (the
/// README's first command, on a fresh machine, points at one), including
/// the one holding the embedded metadata store.
#[test]
fn missing_log_dirs_are_created_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let log_dir = dir.path().join("not/there/yet");
    let mut child = ferrolog()
        .args([
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties"),
        ])
        .args(["--override", &format!("log.dirs={}", log_dir.display())])
        .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .args(["--override", "http.listener=http://127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_started(&mut child);
    sigterm(&child);
    assert!(child.wait().unwrap().success());
    assert!(log_dir.join("ferrolog-metadata.json").is_file());
    assert!(log_dir.join("recovery-point-offset-checkpoint").is_file());
}
