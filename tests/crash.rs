//! Crash safety with a real process: a writer appends through the broker's
//! log manager and prints each acknowledged offset; the test SIGKILLs it
//! mid-append, starts a broker on the same directory (which recovers, since
//! no clean-shutdown marker was left) and checks that every acknowledged
//! batch is there, byte for byte, and that the log ends on a whole batch.
//! Three kill/restart rounds run on the same log.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use ferrolog::actors::log_manager::{Append, CreateLog, GetShards, Read};
use ferrolog::broker::Broker;
use ferrolog::config::BrokerConfig;
use ferrolog::storage::batch::{validate_entry, EntryHeader};
use ferrolog::storage::testing::records;
use ferrolog::storage::LogConfig;
use ferrolog::topic_partition::TopicPartition;
use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};

const CHILD_ENV: &str = "FERROLOG_CRASH_WRITER_DIR";
const MAX_APPENDS: usize = 200_000;

fn broker_config(dir: &str) -> BrokerConfig {
    BrokerConfig::from_properties(
        &format!("log.dirs={dir}\nlog.segment.bytes=65536\nnum.io.threads=2\nlisteners=PLAINTEXT://127.0.0.1:0\nhttp.listener=http://127.0.0.1:0\n"),
        &[],
    )
    .unwrap()
    .0
}

fn tp() -> TopicPartition {
    TopicPartition::new("crash", 0)
}

/// Batch number `n`: five records whose values all hold the byte `n % 251`,
/// so a read can tell which append it came from.
fn batch(n: usize) -> BytesMut {
    let mut recs = records(5, 64);
    for r in &mut recs {
        r.value = Some(bytes::Bytes::from(vec![(n % 251) as u8; 64]));
    }
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, recs.iter(), &options).unwrap();
    buf
}

/// Not a test on its own: the writer process the crash test starts and kills.
#[test]
#[ignore = "run by crash_test_kills_a_writer_mid_append as a child process"]
fn writer_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    actix_rt::System::new().block_on(async move {
        let broker = Broker::start(broker_config(&dir)).await.unwrap();
        if broker.loaded().is_empty() {
            broker
                .log()
                .send(CreateLog {
                    tp: tp(),
                    config: LogConfig {
                        segment_bytes: 65536,
                        ..LogConfig::default()
                    },
                })
                .await
                .unwrap()
                .unwrap();
        }
        let start = broker
            .loaded()
            .first()
            .and_then(|l| l.offsets.as_ref().ok())
            .map_or(0, |o| o.log_end_offset);
        let shard = broker
            .log()
            .send(GetShards)
            .await
            .unwrap()
            .for_partition(&tp());
        let mut out = std::io::stdout().lock();
        let deadline = Instant::now() + Duration::from_secs(60);
        for i in 0..MAX_APPENDS {
            let n = (start / 5) as usize + i;
            let info = shard
                .send(Append {
                    tp: tp(),
                    records: batch(n).freeze(),
                })
                .await
                .unwrap();
            assert_eq!(info.first_offset, n as i64 * 5);
            writeln!(out, "ACK {} {}", info.first_offset, info.last_offset).unwrap();
            out.flush().unwrap();
            if Instant::now() > deadline {
                break;
            }
        }
    });
}

/// Starts the writer, waits for `acks` acknowledgements, SIGKILLs it, and
/// returns the last acknowledged offset.
fn run_and_kill(dir: &str, acks: usize) -> i64 {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "writer_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut last_ack = -1;
    let mut seen = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen < acks && Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.strip_prefix("ACK ") {
            last_ack = rest.split(' ').nth(1).unwrap().parse().unwrap();
            seen += 1;
        }
    }
    assert_eq!(
        seen, acks,
        "the writer acknowledged too little before the deadline"
    );
    child.kill().unwrap(); // SIGKILL
                           // Acks printed before the kill landed still count.
    for line in lines.map_while(Result::ok) {
        if let Some(rest) = line.strip_prefix("ACK ") {
            last_ack = rest.split(' ').nth(1).unwrap().parse().unwrap();
        }
    }
    child.wait().unwrap();
    last_ack
}

/// Reads the whole log through a freshly started (recovering) broker and
/// checks every batch; returns the log end offset.
fn verify(dir: &str, last_ack: i64) -> i64 {
    actix_rt::System::new().block_on(async move {
        let broker = Broker::start(broker_config(dir)).await.unwrap();
        let loaded = broker.loaded();
        assert_eq!(loaded.len(), 1);
        let leo = loaded[0].offsets.as_ref().unwrap().log_end_offset;
        assert!(
            leo > last_ack,
            "acknowledged offset {last_ack} lost: log ends at {leo}"
        );
        assert_eq!(leo % 5, 0, "the log must end on a whole batch");
        let shard = broker
            .log()
            .send(GetShards)
            .await
            .unwrap()
            .for_partition(&tp());
        let mut offset = 0;
        while offset < leo {
            let read = shard
                .send(Read {
                    tp: tp(),
                    offset,
                    max_bytes: 1 << 20,
                    max_offset: None,
                })
                .await
                .unwrap();
            let bytes = read
                .region
                .expect("data below the log end")
                .read_to_vec()
                .unwrap();
            let before = offset;
            let mut position = 0;
            while position + 61 <= bytes.len() {
                let Ok(header) = EntryHeader::parse(&bytes[position..], position) else {
                    break;
                };
                if position + header.size > bytes.len() {
                    break;
                }
                validate_entry(&bytes[position..position + header.size], position).unwrap();
                assert_eq!(header.offset_field, offset, "batches are contiguous");
                let n = (offset / 5) as usize;
                let expected = batch(n);
                assert_eq!(
                    &bytes[position + 8..position + header.size],
                    &expected[8..],
                    "batch {n} differs"
                );
                offset = header.last_offset + 1;
                position += header.size;
            }
            // Bounded: a read that brings no whole batch fails the test
            // instead of being asked again forever.
            assert!(
                offset > before,
                "a read at {before} returned no whole batch"
            );
        }
        broker.shutdown().await.unwrap();
        leo
    })
}

/// See the module doc.
#[test]
fn crash_test_kills_a_writer_mid_append() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_str().unwrap().to_string();
    let mut previous_end = 0;
    for round in 0..3 {
        let last_ack = run_and_kill(&dir, 300);
        assert!(
            last_ack >= previous_end,
            "round {round}: the writer resumed at the log end"
        );
        // verify() shuts down cleanly, so each round's writer starts without
        // recovery and its crash is what the following start repairs.
        previous_end = verify(&dir, last_ack);
    }
    assert!(previous_end >= 3 * 300 * 5);
}
