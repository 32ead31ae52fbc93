//! acks=all against min.insync.replicas, with kcat (librdkafka) over the
//! wire: with one replica and `min.insync.replicas=2`, acks=all is refused
//! with NOT_ENOUGH_REPLICAS while acks=1 goes through, as in Kafka.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{require_tool, BrokerProcess};

fn kcat_produce(bootstrap: &str, topic: &str, acks: &str) -> (bool, String) {
    let mut child = Command::new(require_tool("kcat"))
        .args([
            "-b",
            bootstrap,
            "-t",
            topic,
            "-P",
            "-X",
            &format!("acks={acks}"),
        ])
        .args([
            "-X",
            "message.send.max.retries=0",
            "-X",
            "message.timeout.ms=5000",
        ])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"one\ntwo\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// See the module doc. kcat exits non-zero and names the error when a
/// delivery fails.
#[test]
fn acks_all_needs_min_insync_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["min.insync.replicas=2"]);
    let (ok, stderr) = kcat_produce(&broker.bootstrap, "strict", "all");
    assert!(
        !ok,
        "acks=all must fail with one replica and min.insync.replicas=2"
    );
    assert!(
        stderr.to_lowercase().contains("not enough") || stderr.contains("NOT_ENOUGH_REPLICAS"),
        "{stderr}"
    );
    let (ok, stderr) = kcat_produce(&broker.bootstrap, "strict", "1");
    assert!(ok, "acks=1 succeeds: {stderr}");
    broker.terminate();
}
