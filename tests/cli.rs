//! `ferrolog topics` and `ferrolog cluster`, the binary's own tools, run as
//! processes against real brokers: what they create, grow and delete is
//! checked with librdkafka's Metadata; their JSON parses; failures exit
//! with the documented codes (1 refused with Kafka's error, 2 usage, 3
//! unreachable); `--command-config` logs in over SASL_PLAINTEXT; and on a
//! 3-broker cluster with a follower SIGKILLed, `cluster` names the
//! under-replicated partitions. (Against Kafka 3.9 itself: the Java suite's
//! CliTest.)

mod common;

use std::time::{Duration, Instant};

use common::cluster::{create_replicated_topic, Cluster};
use common::BrokerProcess;
use rdkafka::consumer::{BaseConsumer, Consumer};

/// Exit code, stdout, stderr of `ferrolog args...`.
fn ferrolog(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The partition count of `topic` as librdkafka sees it (None: no topic).
fn partitions(bootstrap: &str, topic: &str) -> Option<usize> {
    let client: BaseConsumer = common::client_config(bootstrap).create().expect("client");
    let metadata = client
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("metadata");
    metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
        .map(|t| t.partitions().len())
}

/// Create, list, describe, grow and delete a topic on one broker; each
/// step checked with librdkafka, and each failure's exit code and message.
#[test]
fn topics_are_created_grown_listed_and_deleted_with_kafkas_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &["auto.create.topics.enable=false"]);
    let b = broker.bootstrap.as_str();
    let (code, out, err) = ferrolog(&[
        "topics",
        "create",
        "--topic",
        "tooled",
        "--partitions",
        "3",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "Created topic tooled.");
    assert_eq!(partitions(b, "tooled"), Some(3));

    let (code, _, err) = ferrolog(&[
        "topics",
        "create",
        "--topic",
        "tooled",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("TopicAlreadyExists (36)"), "{err}");

    let (code, out, err) = ferrolog(&["topics", "list", "--json", "--bootstrap-server", b]);
    assert_eq!(code, 0, "{err}");
    let names: Vec<String> = serde_json::from_str(&out).expect("a JSON list");
    assert_eq!(
        names,
        vec!["tooled".to_string()],
        "internal topics left out"
    );

    let (code, out, err) = ferrolog(&[
        "topics",
        "alter",
        "--topic",
        "tooled",
        "--partitions",
        "5",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(partitions(b, "tooled"), Some(5));
    let (code, out, err) = ferrolog(&[
        "topics",
        "describe",
        "--topic",
        "tooled",
        "--json",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{err}");
    let described: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let described = &described[0];
    assert_eq!(described["name"], "tooled");
    assert_eq!(described["partitions"].as_array().map(Vec::len), Some(5));
    for p in described["partitions"].as_array().expect("partitions") {
        assert_eq!(p["leader"], 0);
        assert_eq!(p["isr"], serde_json::json!([0]));
    }
    let (code, table, _) = ferrolog(&["topics", "describe", "--bootstrap-server", b]);
    assert_eq!(code, 0);
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|h| h.contains("PARTITION")),
        "{table}"
    );
    assert_eq!(
        table.lines().filter(|l| l.contains("tooled")).count(),
        5,
        "{table}"
    );

    let (code, out, err) = ferrolog(&[
        "topics",
        "delete",
        "--topic",
        "tooled",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while partitions(b, "tooled").is_some() {
        assert!(Instant::now() < deadline, "the topic stayed");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (code, _, err) = ferrolog(&[
        "topics",
        "describe",
        "--topic",
        "tooled",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 1, "{err}");

    // Usage: no bootstrap server, an unreadable command config.
    assert_eq!(ferrolog(&["topics", "list"]).0, 2);
    assert_eq!(
        ferrolog(&[
            "topics",
            "list",
            "--command-config",
            "/nonexistent",
            "--bootstrap-server",
            b
        ])
        .0,
        2
    );
    // Nothing listening.
    let (code, _, err) = ferrolog(&["cluster", "--bootstrap-server", "127.0.0.1:1"]);
    assert_eq!(code, 3, "{err}");
}

/// `--command-config` with Kafka's client keys logs in over SASL_PLAINTEXT
/// (PLAIN); a wrong password does not get in.
#[test]
fn command_config_logs_in_with_sasl() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jaas = r#"listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#;
    let mut broker = BrokerProcess::start(
        dir.path(),
        &[
            "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms=PLAIN",
            jaas,
        ],
    );
    let sasl = broker.listener_address("SASL_PLAINTEXT");
    let config = |password: &str| {
        let path = dir.path().join(format!("client-{password}.properties"));
        std::fs::write(
            &path,
            format!(
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n\
                 sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"{password}\";\n"
            ),
        )
        .expect("write");
        path.display().to_string()
    };
    let good = config("alice-secret");
    let (code, out, err) = ferrolog(&[
        "topics",
        "create",
        "--topic",
        "secured",
        "--command-config",
        &good,
        "--bootstrap-server",
        &sasl,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(broker.count_lines("authenticated as User:alice on SASL_PLAINTEXT") >= 1);
    let bad = config("wrong");
    let (code, _, err) = ferrolog(&[
        "topics",
        "list",
        "--command-config",
        &bad,
        "--bootstrap-server",
        &sasl,
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("SASL PLAIN"), "{err}");
}

/// Three brokers: `cluster --json` lists them with one controller; with a
/// follower SIGKILLed it names the under-replicated partitions.
#[test]
fn cluster_names_brokers_controller_and_under_replicated_partitions() {
    let mut cluster = Cluster::start_with(3, &["replica.lag.time.max.ms=2000"]);
    let bootstrap = cluster.bootstrap(0);
    create_replicated_topic(&bootstrap, "watched", 2, 3);
    let view = |bootstrap: &str| -> serde_json::Value {
        let (code, out, err) = ferrolog(&["cluster", "--json", "--bootstrap-server", bootstrap]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).expect("JSON")
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = view(&bootstrap);
        let brokers = v["brokers"].as_array().map(Vec::len).unwrap_or(0);
        let under = v["under_replicated"].as_array().map(Vec::len).unwrap_or(99);
        if brokers == 3 && under == 0 {
            let controllers = v["brokers"]
                .as_array()
                .expect("brokers")
                .iter()
                .filter(|b| b["controller"] == true)
                .count();
            assert_eq!(controllers, 1, "{v}");
            break;
        }
        assert!(Instant::now() < deadline, "never 3 brokers in sync: {v}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let leaders = cluster.view(0, "watched").0;
    let victim = (0..3)
        .find(|id| !leaders.values().any(|l| l == id))
        .unwrap_or(2);
    let asked = if victim == 0 { 1 } else { 0 };
    cluster.brokers.remove(&victim).expect("running").kill();
    let bootstrap = cluster.bootstrap(asked);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = view(&bootstrap);
        let under: Vec<String> = v["under_replicated"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| p.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if under == ["watched-0", "watched-1"] {
            break;
        }
        assert!(Instant::now() < deadline, "never under-replicated: {v}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let (_, table, _) = ferrolog(&["cluster", "--bootstrap-server", &bootstrap]);
    assert!(
        table.contains("under-replicated: watched-0 watched-1"),
        "{table}"
    );
}

/// A group that committed offsets: `groups list` finds it and `groups
/// describe` gives each partition's committed offset, log end offset and
/// lag (6 and 4 records written, 3 and 1 committed); an unknown group is
/// refused with exit 1. `reset-offsets` moves the inactive group (a dry
/// run first), and `delete` removes it.
#[test]
fn groups_are_listed_and_described_with_their_lag() {
    use rdkafka::consumer::CommitMode;
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    let b = broker.bootstrap.as_str();
    create_replicated_topic(b, "eaten", 2, 1);
    let producer: BaseProducer = common::client_config(b).create().expect("producer");
    for (partition, count) in [(0, 6), (1, 4)] {
        for i in 0..count {
            let payload = format!("record-{i}");
            producer
                .send(
                    BaseRecord::<(), _>::to("eaten")
                        .partition(partition)
                        .payload(&payload),
                )
                .expect("queued");
        }
    }
    producer
        .flush(Duration::from_secs(30))
        .expect("acknowledged");
    let group: BaseConsumer = common::client_config(b)
        .set("group.id", "eaters")
        .create()
        .expect("consumer");
    let mut committed = rdkafka::TopicPartitionList::new();
    for (partition, offset) in [(0, 3), (1, 1)] {
        committed
            .add_partition_offset("eaten", partition, rdkafka::Offset::Offset(offset))
            .expect("offset");
    }
    group
        .commit(&committed, CommitMode::Sync)
        .expect("committed");

    let (code, out, err) = ferrolog(&["groups", "list", "--json", "--bootstrap-server", b]);
    assert_eq!(code, 0, "{err}");
    let listed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(
        listed
            .as_array()
            .is_some_and(|a| a.iter().any(|g| g["group"] == "eaters")),
        "{listed}"
    );
    let (code, out, err) = ferrolog(&[
        "groups",
        "describe",
        "--group",
        "eaters",
        "--json",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{err}");
    let described: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(described["coordinator"], 0);
    let offsets: Vec<(i64, i64, i64, i64)> = described["offsets"]
        .as_array()
        .expect("offsets")
        .iter()
        .map(|o| {
            let n = |k: &str| o[k].as_i64().unwrap_or(-99);
            (
                n("partition"),
                n("current_offset"),
                n("log_end_offset"),
                n("lag"),
            )
        })
        .collect();
    assert_eq!(offsets, vec![(0, 3, 6, 3), (1, 1, 4, 3)], "{described}");
    let (code, table, _) = ferrolog(&[
        "groups",
        "describe",
        "--group",
        "eaters",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0);
    assert!(table.contains("LOG-END-OFFSET"), "{table}");
    let (code, _, err) = ferrolog(&[
        "groups",
        "describe",
        "--group",
        "nobody",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 1, "{err}");

    // reset-offsets: a dry run changes nothing; --execute commits; an
    // offset past the end is kept within each partition's range.
    let committed_now = || -> Vec<(i64, i64)> {
        let (code, out, err) = ferrolog(&[
            "groups",
            "describe",
            "--group",
            "eaters",
            "--json",
            "--bootstrap-server",
            b,
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        v["offsets"]
            .as_array()
            .expect("offsets")
            .iter()
            .map(|o| {
                (
                    o["current_offset"].as_i64().unwrap_or(-9),
                    o["lag"].as_i64().unwrap_or(-9),
                )
            })
            .collect()
    };
    let reset = |target: &[&str], execute: bool| -> serde_json::Value {
        let mut args = vec![
            "groups",
            "reset-offsets",
            "--group",
            "eaters",
            "--topic",
            "eaten",
            "--json",
        ];
        args.extend_from_slice(target);
        if execute {
            args.push("--execute");
        }
        args.extend_from_slice(&["--bootstrap-server", b]);
        let (code, out, err) = ferrolog(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).expect("JSON")
    };
    assert_eq!(
        reset(&["--to-earliest"], false),
        serde_json::json!([[0, 0], [1, 0]])
    );
    assert_eq!(
        committed_now(),
        [(3, 3), (1, 3)],
        "a dry run commits nothing"
    );
    reset(&["--to-earliest"], true);
    assert_eq!(committed_now(), [(0, 6), (0, 4)]);
    assert_eq!(
        reset(&["--to-offset", "100"], true),
        serde_json::json!([[0, 6], [1, 4]])
    );
    assert_eq!(committed_now(), [(6, 0), (4, 0)]);
    let no_target = [
        "groups",
        "reset-offsets",
        "--group",
        "eaters",
        "--topic",
        "eaten",
        "--bootstrap-server",
        b,
    ];
    assert_eq!(ferrolog(&no_target).0, 2);

    let (code, _, err) = ferrolog(&[
        "groups",
        "delete",
        "--group",
        "eaters",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = ferrolog(&["groups", "list", "--json", "--bootstrap-server", b]);
    assert!(!out.contains("\"eaters\""), "{out}");
}

/// `configs alter` sets and deletes a topic's configs and a broker's
/// dynamic one; `configs describe` shows each with Kafka's source names,
/// and `--overrides-only` just what was set; a key Kafka does not know is
/// refused with INVALID_CONFIG (exit 1).
#[test]
fn configs_are_described_and_altered_for_topics_and_brokers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    let b = broker.bootstrap.as_str();
    create_replicated_topic(b, "configured", 1, 1);
    let describe = |entity: &[&str], extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["configs", "describe", "--json", "--bootstrap-server", b];
        args.extend_from_slice(entity);
        args.extend_from_slice(extra);
        let (code, out, err) = ferrolog(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).expect("JSON")
    };
    let find = |configs: &serde_json::Value, name: &str| -> serde_json::Value {
        configs
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == name).cloned())
            .unwrap_or(serde_json::Value::Null)
    };
    let topic = ["--entity-type", "topics", "--entity-name", "configured"];
    let before = describe(&topic, &[]);
    assert_eq!(find(&before, "retention.ms")["source"], "DEFAULT_CONFIG");
    let mut alter = vec!["configs", "alter", "--bootstrap-server", b];
    alter.extend_from_slice(&topic);
    alter.extend_from_slice(&[
        "--add-config",
        "retention.ms=60000",
        "--add-config",
        "cleanup.policy=compact",
    ]);
    let (code, out, err) = ferrolog(&alter);
    assert_eq!(code, 0, "{out}{err}");
    let after = describe(&topic, &[]);
    assert_eq!(find(&after, "retention.ms")["value"], "60000");
    assert_eq!(
        find(&after, "retention.ms")["source"],
        "DYNAMIC_TOPIC_CONFIG"
    );
    let set = describe(&topic, &["--overrides-only"]);
    let names: Vec<&str> = set
        .as_array()
        .expect("configs")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["cleanup.policy", "retention.ms"]);
    let mut delete = vec!["configs", "alter", "--bootstrap-server", b];
    delete.extend_from_slice(&topic);
    delete.extend_from_slice(&["--delete-config", "retention.ms"]);
    assert_eq!(ferrolog(&delete).0, 0);
    assert_eq!(
        find(&describe(&topic, &[]), "retention.ms")["source"],
        "DEFAULT_CONFIG"
    );
    let mut bad = vec!["configs", "alter", "--bootstrap-server", b];
    bad.extend_from_slice(&topic);
    bad.extend_from_slice(&["--add-config", "no.such.key=1"]);
    let (code, _, err) = ferrolog(&bad);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("InvalidConfig (40)"), "{err}");

    // A broker's dynamic config (KIP-226).
    let brokers = ["--entity-type", "brokers", "--entity-name", "0"];
    let mut alter = vec!["configs", "alter", "--bootstrap-server", b];
    alter.extend_from_slice(&brokers);
    alter.extend_from_slice(&["--add-config", "log.retention.ms=7200000"]);
    let (code, out, err) = ferrolog(&alter);
    assert_eq!(code, 0, "{out}{err}");
    let config = find(&describe(&brokers, &[]), "log.retention.ms");
    assert_eq!(config["value"], "7200000");
    assert_eq!(config["source"], "DYNAMIC_BROKER_CONFIG");
}

/// `dump-log` reads a real segment the broker wrote: each batch with its
/// offsets and `isvalid: true`, the offset index's entries; `--verify`
/// passes; a flipped byte in a batch makes `--verify` exit 1 naming that
/// batch's offset.
#[test]
fn dump_log_decodes_and_verifies_a_segment() {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &["log.index.interval.bytes=100"]);
    let b = broker.bootstrap.clone();
    create_replicated_topic(&b, "dumped", 1, 1);
    let producer: BaseProducer = common::client_config(&b)
        .set("linger.ms", "0")
        .create()
        .expect("producer");
    for i in 0..20 {
        let payload = format!("record-{i}-{}", "x".repeat(100));
        producer
            .send(
                BaseRecord::<(), _>::to("dumped")
                    .partition(0)
                    .payload(&payload),
            )
            .expect("queued");
        producer
            .flush(Duration::from_secs(30))
            .expect("acknowledged");
    }
    drop(producer);
    // A clean shutdown writes the indexes out, as Kafka's does.
    broker.terminate();
    let segment = dir.path().join("dumped-0").join("00000000000000000000.log");
    let index = segment.with_extension("index");
    let files = format!("{},{}", segment.display(), index.display());
    let (code, out, err) = ferrolog(&["dump-log", "--files", &files, "--verify"]);
    assert_eq!(code, 0, "{out}{err}");
    let batches: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("baseOffset:"))
        .collect();
    assert_eq!(batches.len(), 20, "{out}");
    assert!(batches[0].starts_with("baseOffset: 0 lastOffset: 0 count: 1 position: 0"));
    assert!(
        batches.iter().all(|l| l.ends_with("isvalid: true")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("offset: ")),
        "index entries: {out}"
    );
    let (code, out, _) = ferrolog(&[
        "dump-log",
        "--files",
        &segment.display().to_string(),
        "--json",
    ]);
    assert_eq!(code, 0);
    let json: serde_json::Value =
        serde_json::from_str(out.split_once('\n').map_or("", |(_, rest)| rest)).expect("JSON");
    assert_eq!(json.as_array().map(Vec::len), Some(20));
    // Corrupt a byte inside the 6th batch's records.
    let mut bytes = std::fs::read(&segment).expect("segment");
    let position = json[5]["position"].as_u64().expect("position") as usize;
    let size = json[5]["size"].as_u64().expect("size") as usize;
    bytes[position + size - 5] ^= 0xff;
    std::fs::write(&segment, &bytes).expect("write");
    let (code, out, err) = ferrolog(&[
        "dump-log",
        "--files",
        &segment.display().to_string(),
        "--verify",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("batch at offset 5"), "{err}");
    assert!(err.contains("CRC"), "{err}");
}

/// `tail --from-beginning` prints every record with the format's fields;
/// without it only records written after it started, until
/// `--max-messages`.
#[test]
fn tail_prints_a_topic_from_the_beginning_or_what_comes_next() {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    let b = broker.bootstrap.clone();
    create_replicated_topic(&b, "tailed", 2, 1);
    let producer: BaseProducer = common::client_config(&b).create().expect("producer");
    let send = |from: usize, to: usize| {
        for i in from..to {
            let (key, value) = (format!("k{i}"), format!("v{i}"));
            producer
                .send(
                    BaseRecord::to("tailed")
                        .partition((i % 2) as i32)
                        .key(&key)
                        .payload(&value),
                )
                .expect("queued");
        }
        producer
            .flush(Duration::from_secs(30))
            .expect("acknowledged");
    };
    send(0, 10);
    let (code, out, err) = ferrolog(&[
        "tail",
        "--topic",
        "tailed",
        "--from-beginning",
        "--max-messages",
        "10",
        "--format",
        "%p:%o:%k=%v",
        "--bootstrap-server",
        &b,
    ]);
    assert_eq!(code, 0, "{err}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    let mut expected: Vec<String> = (0..10)
        .map(|i| format!("{}:{}:k{i}=v{i}", i % 2, i / 2))
        .collect();
    expected.sort();
    assert_eq!(lines, expected);

    // From the end: only what is written once it runs (records keep
    // coming until it has printed 4, so its start-up time does not matter).
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"))
        .args([
            "tail",
            "--topic",
            "tailed",
            "--max-messages",
            "4",
            "--timeout-ms",
            "60000",
        ])
        .args(["--bootstrap-server", &b])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("tail runs");
    let mut next = 10;
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "tail never printed 4 records");
        send(next, next + 1);
        next += 1;
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = child.wait_with_output().expect("tail ends");
    assert!(out.status.success());
    let values: Vec<usize> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_start_matches('v').parse().expect("a value"))
        .collect();
    assert_eq!(values.len(), 4, "{values:?}");
    assert!(
        values.iter().all(|&v| v >= 10),
        "old records printed: {values:?}"
    );
    let distinct: std::collections::BTreeSet<_> = values.iter().collect();
    assert_eq!(distinct.len(), 4, "{values:?}");
}

/// `users add` makes a SCRAM-SHA-512 user (the salted password computed by
/// the tool); `users list` shows it with its iterations; the tool itself
/// then logs in as that user over SASL_PLAINTEXT with SCRAM; after `users
/// delete` it cannot.
#[test]
fn users_are_added_listed_used_and_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = BrokerProcess::start(
        dir.path(),
        &[
            "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms=SCRAM-SHA-512",
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
        ],
    );
    let plain = broker.bootstrap.clone();
    let sasl = broker.listener_address("SASL_PLAINTEXT");
    let (code, out, err) = ferrolog(&[
        "users",
        "add",
        "--user",
        "carol",
        "--password",
        "carol-secret",
        "--bootstrap-server",
        &plain,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = ferrolog(&["users", "list", "--json", "--bootstrap-server", &plain]);
    assert_eq!(code, 0, "{err}");
    let users: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        users,
        serde_json::json!([{ "user": "carol", "credentials": [["SCRAM-SHA-512", 4096]] }])
    );
    let config = dir.path().join("carol.properties");
    std::fs::write(
        &config,
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n\
         sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"carol\" password=\"carol-secret\";\n",
    )
    .expect("write");
    let config = config.display().to_string();
    let as_carol = || {
        ferrolog(&[
            "topics",
            "list",
            "--command-config",
            &config,
            "--bootstrap-server",
            &sasl,
        ])
    };
    let (code, _, err) = as_carol();
    assert_eq!(code, 0, "{err}");
    assert!(broker.count_lines("authenticated as User:carol on SASL_PLAINTEXT") >= 1);
    let (code, _, err) = ferrolog(&[
        "users",
        "delete",
        "--user",
        "carol",
        "--bootstrap-server",
        &plain,
    ]);
    assert_eq!(code, 0, "{err}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while as_carol().0 == 0 {
        assert!(Instant::now() < deadline, "carol still logs in");
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(as_carol().0, 3);
}

/// `acls add` stores literal and prefixed ACLs that `acls list` then shows
/// with Kafka's names; `acls remove` removes exactly the ones named; a bad
/// operation is a usage error (exit 2).
#[test]
fn acls_are_added_listed_and_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(
        dir.path(),
        &[
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found=true",
        ],
    );
    let b = broker.bootstrap.as_str();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--bootstrap-server", b]);
        ferrolog(&all)
    };
    let (code, out, err) = run(&[
        "acls",
        "add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--topic",
        "logs",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "Added 2 ACLs on logs.");
    let (code, _, err) = run(&[
        "acls",
        "add",
        "--deny-principal",
        "User:bob",
        "--operation",
        "WRITE",
        "--topic",
        "logs-",
        "--resource-pattern-type",
        "prefixed",
    ]);
    assert_eq!(code, 0, "{err}");
    let list = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["acls", "list", "--json"];
        args.extend_from_slice(extra);
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        let acls: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        acls.as_array()
            .expect("a list")
            .iter()
            .map(|a| {
                format!(
                    "{} {} {} {} {} {}",
                    a["resource_type"],
                    a["pattern_type"],
                    a["resource_name"],
                    a["principal"],
                    a["operation"],
                    a["permission"]
                )
                .replace('"', "")
            })
            .collect()
    };
    assert_eq!(
        list(&[]),
        [
            "Topic Literal logs User:alice Describe Allow",
            "Topic Literal logs User:alice Read Allow",
            "Topic Prefixed logs- User:bob Write Deny",
        ]
    );
    assert_eq!(list(&["--topic", "logs"]).len(), 2);
    let (code, out, err) = run(&[
        "acls",
        "remove",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--topic",
        "logs",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "Removed 1 ACLs on logs.");
    assert_eq!(
        list(&[]),
        [
            "Topic Literal logs User:alice Describe Allow",
            "Topic Prefixed logs- User:bob Write Deny",
        ]
    );
    let (code, _, _) = run(&[
        "acls",
        "add",
        "--allow-principal",
        "User:x",
        "--operation",
        "Fly",
        "--topic",
        "t",
    ]);
    assert_eq!(code, 2);
}

/// `perf produce` writes exactly the records it reports (librdkafka's
/// watermarks add up to them) and `perf consume` reads them all back, each
/// with its figures.
#[test]
fn perf_produces_and_consumes_what_it_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = BrokerProcess::start(dir.path(), &[]);
    let b = broker.bootstrap.as_str();
    create_replicated_topic(b, "loaded", 2, 1);
    let (code, out, err) = ferrolog(&[
        "perf",
        "produce",
        "--topic",
        "loaded",
        "--num-records",
        "5000",
        "--record-size",
        "100",
        "--batch-records",
        "700",
        "--acks",
        "-1",
        "--json",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{err}");
    let produced: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(produced["records"], 5000);
    assert_eq!(produced["bytes"], 500_000);
    assert!(produced["records_per_sec"]
        .as_f64()
        .is_some_and(|r| r > 0.0));
    assert!(produced["request_latency_ms"]["p99"]
        .as_f64()
        .is_some_and(|p| p > 0.0));
    let client: BaseConsumer = common::client_config(b).create().expect("client");
    let written: i64 = (0..2)
        .map(|p| {
            client
                .fetch_watermarks("loaded", p, Duration::from_secs(10))
                .expect("watermarks")
                .1
        })
        .sum();
    assert_eq!(written, 5000);
    let (code, out, err) = ferrolog(&[
        "perf",
        "consume",
        "--topic",
        "loaded",
        "--num-records",
        "5000",
        "--json",
        "--bootstrap-server",
        b,
    ]);
    assert_eq!(code, 0, "{err}");
    let consumed: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(consumed["records"], 5000);
    assert_eq!(
        ferrolog(&[
            "perf",
            "produce",
            "--topic",
            "loaded",
            "--num-records",
            "1",
            "--acks",
            "0",
            "--bootstrap-server",
            b
        ])
        .0,
        2
    );
}
