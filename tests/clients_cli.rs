//! Real Kafka clients against the real `ferrolog` binary: kcat (librdkafka),
//! kafka-python (modern, message format v1 and v0) and confluent-kafka
//! (librdkafka from Python). Each test starts its own broker on 127.0.0.1,
//! drives a client process with a bounded run time and checks that what
//! comes back is exactly what went in, and how it was stored on disk.
//!
//! The tools are installed by scripts/test.sh; a missing one fails the test.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{require_tool, BrokerProcess};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, CreateTopicsResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// Output of a finished client process.
struct Output {
    stdout: Vec<u8>,
    stderr: String,
    success: bool,
}

/// Run `command` to completion within `timeout`, draining both pipes on
/// threads (consumers print more than a pipe buffer). Panics on timeout.
fn run_bounded(mut command: Command, timeout: Duration) -> Output {
    let description = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err_thread.join().unwrap_or_default();
            panic!("{description} did not finish within {timeout:?}; stderr: {stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        stdout: out_thread.join().unwrap_or_default(),
        stderr: err_thread.join().unwrap_or_default(),
        success: status.success(),
    }
}

/// kcat with its own (system) librdkafka: cargo puts the librdkafka that
/// rdkafka-sys builds first on LD_LIBRARY_PATH, which kcat would otherwise
/// load instead. (Modern librdkafka is covered by confluent-kafka's.)
fn kcat(bootstrap: &str, args: &[&str]) -> Output {
    let mut command = Command::new(require_tool("kcat"));
    command
        .env_remove("LD_LIBRARY_PATH")
        .args(["-b", bootstrap])
        .args(args);
    run_bounded(command, CLIENT_TIMEOUT)
}

/// Create `topic` with `partitions` partitions through CreateTopics v4.
fn create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    let version = 4;
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::CreateTopics as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("clients_cli")));
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_num_partitions(partitions)
            .with_replication_factor(1)]);
    let frame = ferrolog::protocol::encode_request(&header, ApiKey::CreateTopics, &request)
        .expect("CreateTopics encodes");
    let mut stream = TcpStream::connect(bootstrap).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(&frame).expect("send CreateTopics");
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).expect("response length");
    let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut body).expect("response body");
    let mut buf = bytes::Bytes::from(body);
    let header_version = ApiKey::CreateTopics.response_header_version(version);
    let response_header = ResponseHeader::decode(&mut buf, header_version).expect("header");
    assert_eq!(response_header.correlation_id, 1);
    let response = CreateTopicsResponse::decode(&mut buf, version).expect("CreateTopics body");
    assert_eq!(response.topics.len(), 1);
    assert_eq!(
        response.topics[0].error_code, 0,
        "creating {topic}: {response:?}"
    );
}

/// Path of the first segment of `topic`'s partition `partition`.
fn first_segment(log_dir: &Path, topic: &str, partition: i32) -> PathBuf {
    log_dir
        .join(format!("{topic}-{partition}"))
        .join(format!("{:020}.log", 0))
}

/// (magic, compression codec) of every entry stored in the partition's
/// first segment, in order.
fn entry_formats(log_dir: &Path, topic: &str, partition: i32) -> Vec<(i8, u8)> {
    let bytes = std::fs::read(first_segment(log_dir, topic, partition)).expect("segment exists");
    let mut formats = Vec::new();
    let mut position = 0;
    while position + 23 <= bytes.len() {
        let size = i32::from_be_bytes(bytes[position + 8..position + 12].try_into().unwrap());
        assert!(size > 0, "{topic}: bad entry size {size} at {position}");
        let magic = bytes[position + 16] as i8;
        let codec = match magic {
            2 => bytes[position + 22] & 0x07,
            _ => bytes[position + 17] & 0x07,
        };
        formats.push((magic, codec));
        position += 12 + size as usize;
    }
    assert_eq!(position, bytes.len(), "{topic}: segment ends mid-entry");
    assert!(!formats.is_empty(), "{topic}: nothing stored");
    formats
}

/// `count` distinct, non-empty lines of varying length.
fn lines(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("line {i:05} {}", "abcdefghij".repeat(i % 13)))
        .collect()
}

fn write_lines(dir: &Path, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.join(name);
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(&path, text).expect("write the input file");
    path
}

/// Consume partition 0 of `topic` from the beginning to its end with kcat.
fn kcat_consume(bootstrap: &str, topic: &str) -> Vec<String> {
    let output = kcat(
        bootstrap,
        &["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"],
    );
    assert!(output.success, "kcat -C failed: {}", output.stderr);
    String::from_utf8(output.stdout)
        .expect("utf-8 output")
        .lines()
        .map(str::to_string)
        .collect()
}

fn kcat_produce_file(bootstrap: &str, topic: &str, file: &Path, extra: &[&str]) {
    let file = file.to_str().expect("utf-8 path");
    let mut args = vec!["-P", "-t", topic, "-p", "0", "-l", file];
    args.extend_from_slice(extra);
    let output = kcat(bootstrap, &args);
    assert!(
        output.success && !output.stderr.contains("failed"),
        "kcat -P {extra:?} failed: {}",
        output.stderr
    );
}

/// `kcat -L` sees the broker at its advertised address, as the controller,
/// and a topic created through CreateTopics with its three partitions led by
/// broker 0: proves Metadata as librdkafka reads it.
#[test]
fn kcat_lists_broker_and_created_topic() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "listed", 3);
    let output = kcat(&broker.bootstrap, &["-L", "-J"]);
    assert!(output.success, "kcat -L failed: {}", output.stderr);
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("kcat -L -J prints JSON");
    assert_eq!(metadata["controllerid"], 0, "{metadata}");
    let brokers = metadata["brokers"].as_array().expect("brokers");
    assert_eq!(brokers.len(), 1, "{metadata}");
    assert_eq!(brokers[0]["id"], 0);
    assert_eq!(brokers[0]["name"], broker.bootstrap.as_str());
    let topic = metadata["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .find(|t| t["topic"] == "listed")
        .unwrap_or_else(|| panic!("topic 'listed' missing: {metadata}"));
    let partitions = topic["partitions"].as_array().expect("partitions");
    assert_eq!(partitions.len(), 3, "{topic}");
    for (i, p) in partitions.iter().enumerate() {
        assert_eq!(p["partition"], i as i64);
        assert_eq!(p["leader"], 0);
        assert!(p.get("error").is_none(), "{p}");
    }
}

/// 10,000 lines produced with `kcat -P -l FILE` uncompressed, with gzip and
/// with zstd come back from `kcat -C -o beginning -e` identical and in order;
/// every stored batch is a v2 batch kept as the producer sent it
/// (compression.type=producer: its codec, or none where librdkafka found
/// compressing not worth it).
#[test]
fn kcat_round_trips_ten_thousand_lines_per_codec() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let expected = lines(10_000);
    let file = write_lines(work.path(), "lines.txt", &expected);
    for (codec, id) in [("none", 0u8), ("gzip", 1), ("zstd", 4)] {
        let topic = format!("kcat-{codec}");
        create_topic(&broker.bootstrap, &topic, 1);
        let extra: &[&str] = if codec == "none" { &[] } else { &["-z", codec] };
        kcat_produce_file(&broker.bootstrap, &topic, &file, extra);
        let got = kcat_consume(&broker.bootstrap, &topic);
        assert_eq!(got.len(), expected.len(), "{codec}: record count");
        assert!(got == expected, "{codec}: content differs");
        // librdkafka sends a batch uncompressed when compressing would
        // not make it smaller (a small first batch): the broker keeps
        // each batch as sent, never with another codec.
        let formats = entry_formats(dir.path(), &topic, 0);
        assert!(
            formats.iter().all(|&f| f == (2, id) || f == (2, 0)),
            "{codec}: stored formats {formats:?}"
        );
        assert!(
            formats.contains(&(2, id)),
            "{codec}: no batch kept the producer's codec: {formats:?}"
        );
    }
}

/// Fail loudly when the Python client libraries are missing.
fn require_python_module(module: &str) {
    require_tool("python3");
    let output = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "python module {module} is missing; run ./scripts/test.sh (pip install kafka-python lz4 confluent-kafka): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn python_script(script: &str, bootstrap: &str, args: &[&str]) -> Output {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/");
    let mut command = Command::new("python3");
    command
        .env_remove("LD_LIBRARY_PATH")
        .arg(format!("{path}{script}"))
        .args(["--bootstrap", bootstrap])
        .args(args);
    let output = run_bounded(command, CLIENT_TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.success && stdout.starts_with("OK"),
        "{script} {args:?} failed:\nstdout: {stdout}\nstderr: {}",
        output.stderr
    );
    output
}

/// kafka-python with `api_version` = `version` produces 1000 keyed records
/// and reads them back, byte for byte, with an assigned group-less consumer;
/// the stored entries have message format `magic`.
fn kafka_python_round_trip(version: &str, magic: i8) {
    kafka_python_round_trip_with(version, magic, None);
}

/// Round trip with kafka-python at `version`, optionally compressed with
/// `(codec name, codec id)`; every stored entry must have `magic` and that
/// codec.
fn kafka_python_round_trip_with(version: &str, magic: i8, compression: Option<(&str, u8)>) {
    require_python_module("kafka");
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let codec_name = compression.map_or("none", |(name, _)| name);
    let topic = format!("kafka-python-{}-{codec_name}", version.replace('.', "_"));
    create_topic(&broker.bootstrap, &topic, 1);
    let mut args = vec![
        "--topic",
        &topic,
        "--count",
        "1000",
        "--api-version",
        version,
    ];
    if let Some((name, _)) = compression {
        args.extend(["--compression", name]);
    }
    python_script("kafka_python_roundtrip.py", &broker.bootstrap, &args);
    let codec = compression.map_or(0, |(_, id)| id);
    let formats = entry_formats(dir.path(), &topic, 0);
    assert_compressed_as_sent(&formats, magic, codec);
}

/// Every stored entry has `magic`, and is compressed with `codec` except
/// where kafka-python sent it uncompressed because compressing did not
/// shrink it (its `_maybe_compress`); at least one entry carries `codec`.
fn assert_compressed_as_sent(formats: &[(i8, u8)], magic: i8, codec: u8) {
    assert!(
        formats
            .iter()
            .all(|&(m, c)| m == magic && (c == codec || c == 0)),
        "stored formats {formats:?}"
    );
    assert!(
        formats.iter().any(|&(_, c)| c == codec),
        "no entry stored with codec {codec}: {formats:?}"
    );
}

/// kafka-python at `api_version=(0, 10)` with gzip: message format v1
/// compressed wrappers are stored as sent (magic 1, codec 1) with the
/// offset of their last inner message, and 1000 keyed records read back
/// exactly.
#[test]
fn kafka_python_message_format_v1_gzip_round_trip() {
    kafka_python_round_trip_with("0.10", 1, Some(("gzip", 1)));
}

/// kafka-python at `api_version=(0, 9)` with gzip: message format v0
/// compressed wrappers carry absolute inner offsets, so the broker rebuilds
/// each wrapper (as Kafka does) with the offsets it assigns; 1000 keyed
/// records read back exactly and the stored entries are v0 gzip.
#[test]
fn kafka_python_message_format_v0_gzip_round_trip() {
    kafka_python_round_trip_with("0.9", 0, Some(("gzip", 1)));
}

/// The same with lz4 (magic 1 uses standard LZ4 frames).
#[test]
fn kafka_python_message_format_v1_lz4_round_trip() {
    require_python_module("lz4");
    kafka_python_round_trip_with("0.10", 1, Some(("lz4", 3)));
}

/// kafka-python negotiating versions through ApiVersions (record batches v2):
/// 1000 keyed records round-trip exactly.
#[test]
fn kafka_python_negotiated_round_trip() {
    kafka_python_round_trip("auto", 2);
}

/// kafka-python pinned to `api_version=(0, 10)`: produce v2 / fetch v2 with
/// message format v1 (timestamps, CRC32); 1000 keyed records round-trip.
#[test]
fn kafka_python_message_format_v1_round_trip() {
    kafka_python_round_trip("0.10", 1);
}

/// kafka-python pinned to `api_version=(0, 9)`: produce v1 / fetch v1 with
/// message format v0; 1000 keyed records round-trip.
#[test]
fn kafka_python_message_format_v0_round_trip() {
    kafka_python_round_trip("0.9", 0);
}

/// confluent-kafka (librdkafka) produces 1000 keyed records with
/// `compression.type=lz4` and reads them back exactly through `assign` (no
/// subscribe, no commits); its all-topics `list_topics` (Metadata v12) sees
/// the topic.
///
/// librdkafka only compresses with lz4 when the broker advertises
/// FindCoordinator (its proxy for "0.8.2 or later") and silently sends the
/// batches uncompressed otherwise, so the test requires stored lz4 batches
/// exactly when `SUPPORTED_APIS` lists FindCoordinator (it does since the
/// group APIs landed). lz4 from another client is covered by
/// `kafka_python_lz4_read_by_both_clients`.
#[test]
fn confluent_kafka_lz4_round_trip() {
    require_python_module("confluent_kafka");
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    create_topic(&broker.bootstrap, "confluent-lz4", 1);
    python_script(
        "confluent_roundtrip.py",
        &broker.bootstrap,
        &[
            "--topic",
            "confluent-lz4",
            "--count",
            "1000",
            "--compression",
            "lz4",
        ],
    );
    let formats = entry_formats(dir.path(), "confluent-lz4", 0);
    assert!(
        formats.iter().all(|&f| f == (2, 3) || f == (2, 0)),
        "stored formats {formats:?}"
    );
    let advertises_find_coordinator = ferrolog::protocol::SUPPORTED_APIS
        .iter()
        .any(|&(api, _, _)| api == ApiKey::FindCoordinator);
    if advertises_find_coordinator {
        // A lone small record may still go uncompressed (lz4 would not
        // shrink it), but not all of them.
        assert!(formats.contains(&(2, 3)), "no lz4 batch: {formats:?}");
    }
}

/// kafka-python (negotiated versions) produces 1000 keyed records as lz4
/// v2 batches; the broker stores them as sent (lz4), and both kafka-python
/// and confluent-kafka read them back exactly: lz4 through storage and
/// fetch, decompressed by two independent client implementations.
#[test]
fn kafka_python_lz4_read_by_both_clients() {
    require_python_module("kafka");
    require_python_module("lz4");
    require_python_module("confluent_kafka");
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = "kafka-python-lz4";
    create_topic(&broker.bootstrap, topic, 1);
    python_script(
        "kafka_python_roundtrip.py",
        &broker.bootstrap,
        &["--topic", topic, "--count", "1000", "--compression", "lz4"],
    );
    let formats = entry_formats(dir.path(), topic, 0);
    assert_compressed_as_sent(&formats, 2, 3);
    python_script(
        "confluent_roundtrip.py",
        &broker.bootstrap,
        &["--topic", topic, "--count", "1000", "--consume-only"],
    );
}

/// Records acknowledged with acks=1 (kcat waits for every delivery report)
/// survive a SIGKILL: the restart recovers the unflushed segment (it logs
/// "recovered") and serves every record. After a SIGTERM the next start
/// trusts the clean-shutdown marker, so nothing is recovered, and every
/// record is still served.
#[test]
fn acknowledged_records_survive_kill_and_clean_restart_skips_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = "durable";
    create_topic(&broker.bootstrap, topic, 1);
    let expected = lines(10_000);
    let file = write_lines(work.path(), "lines.txt", &expected);
    kcat_produce_file(&broker.bootstrap, topic, &file, &["-X", "acks=1"]);

    let log_dir = broker.kill();
    let mut broker = BrokerProcess::restart_on(&log_dir, &[]);
    let started = broker.wait_for_line("started: listening on", Duration::from_secs(10));
    assert!(
        !started.ends_with(" 0 segment(s) recovered"),
        "the start after SIGKILL recovered nothing: {started}"
    );
    let recovered = broker
        .log_lines()
        .into_iter()
        .filter(|l| l.contains("recovered"))
        .collect::<Vec<_>>();
    assert!(
        recovered.iter().any(|l| l.contains("durable-0")),
        "the start after SIGKILL did not recover durable-0: {:?}",
        broker.log_lines()
    );
    let got = kcat_consume(&broker.bootstrap, topic);
    assert_eq!(got.len(), expected.len(), "records after SIGKILL");
    assert!(got == expected, "content after SIGKILL differs");

    let log_dir = broker.terminate();
    let mut broker = BrokerProcess::restart_on(&log_dir, &[]);
    // A fact, not a missing line: the start line counts the segments
    // recovery re-read.
    let started = broker.wait_for_line("started: listening on", Duration::from_secs(10));
    assert!(
        started.ends_with(" 0 segment(s) recovered"),
        "the start after SIGTERM ran recovery: {started}"
    );
    let got = kcat_consume(&broker.bootstrap, topic);
    assert_eq!(got.len(), expected.len(), "records after SIGTERM");
    assert!(got == expected, "content after SIGTERM differs");
    broker.terminate();
}
