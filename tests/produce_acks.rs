//! acks=all against min.insync.replicas, with kcat (librdkafka) over the
//! wire. Kafka 3.9 caps the minimum at the replicas there are
//! (`Partition.effectiveMinIsr`): with one replica and
//! `min.insync.replicas=2`, acks=all goes through, as acks=1 does. A
//! refusal with NOT_ENOUGH_REPLICAS needs more replicas than are in sync:
//! `replication.rs::acks_all_needs_min_insync_replicas`.

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
fn acks_all_takes_the_smaller_of_min_insync_replicas_and_the_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &["min.insync.replicas=2"]);
    let (ok, stderr) = kcat_produce(&broker.bootstrap, "strict", "all");
    assert!(
        ok,
        "acks=all with one replica and min.insync.replicas=2 is taken: {stderr}"
    );
    let (ok, stderr) = kcat_produce(&broker.bootstrap, "strict", "1");
    assert!(ok, "acks=1 succeeds: {stderr}");
    broker.terminate();
}
