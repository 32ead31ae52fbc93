//! Loads the shipped `config/server.properties` through the public API and
//! checks the loader's contract from the outside.

use std::path::{Path, PathBuf};

use ferrolog::config::topic::TopicConfig;
use ferrolog::config::{BrokerConfig, ConfigError, Listener, BROKER_KEYS};

fn apply_topic_overrides(
    base: &LogConfig,
    overrides: &[(String, String)],
) -> Result<LogConfig, ConfigError> {
    TopicConfig::from_overrides(base, overrides).map(|config| config.log)
}
use ferrolog::storage::config::LogConfig;

fn shipped_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/server.properties")
}

fn shipped_text() -> String {
    std::fs::read_to_string(shipped_path()).expect("config/server.properties is readable")
}

fn parse(text: &str, overrides: &[&str]) -> Result<BrokerConfig, ConfigError> {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    BrokerConfig::from_properties(text, &overrides).map(|(config, _)| config)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The shipped file loads and sets the single-node values, with no ZooKeeper.
#[test]
fn shipped_file_loads() {
    let config = BrokerConfig::load(&shipped_path(), &[]).expect("shipped config loads");
    assert_eq!(config.broker_id, 0);
    assert_eq!(config.log_dirs, vec![PathBuf::from("/tmp/ferrolog-logs")]);
    let local = Listener {
        name: "PLAINTEXT".to_string(),
        security_protocol: ferrolog::config::SecurityProtocol::Plaintext,
        host: "127.0.0.1".to_string(),
        port: 9092,
    };
    assert_eq!(config.listeners, vec![local.clone()]);
    assert_eq!(config.advertised_listeners, vec![local]);
    assert_eq!(config.zookeeper_connect, None);
}

/// Apart from the single-node values, the shipped file is exactly the defaults, with no warnings.
#[test]
fn shipped_file_is_defaults_plus_single_node_values() {
    let (config, warnings) =
        BrokerConfig::from_properties(&shipped_text(), &[]).expect("shipped config parses");
    assert!(warnings.is_empty(), "{warnings:?}");
    let expected = BrokerConfig {
        broker_id: config.broker_id,
        log_dirs: config.log_dirs.clone(),
        listeners: config.listeners.clone(),
        advertised_listeners: config.advertised_listeners.clone(),
        // One broker can hold one replica of __consumer_offsets (Kafka's own
        // sample file sets 1 too).
        offsets_topic_replication_factor: 1,
        // The kernel's buffer autotuning beats Kafka's fixed 100 KiB.
        socket_send_buffer_bytes: -1,
        socket_receive_buffer_bytes: -1,
        // What the file sets, as it sets it (DescribeConfigs' sources).
        set_keys: config.set_keys.clone(),
        ..BrokerConfig::default()
    };
    assert_eq!(config, expected);
}

/// The shipped file mentions every supported key, set or commented out.
#[test]
fn shipped_file_lists_every_key() {
    let text = shipped_text();
    let mentioned: Vec<&str> = text
        .lines()
        .map(|line| line.trim_start_matches('#'))
        .filter_map(|line| line.split_once('=').map(|(key, _)| key.trim()))
        .collect();
    for key in BROKER_KEYS.iter().map(|def| def.name) {
        assert!(
            mentioned.contains(&key),
            "{key} missing from server.properties"
        );
    }
}

/// Loading a missing file is an Io error naming the path.
#[test]
fn missing_file_is_io_error() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/does-not-exist.properties");
    let err = BrokerConfig::load(&path, &[]).expect_err("missing file fails");
    assert!(matches!(err, ConfigError::Io { .. }), "{err:?}");
    assert!(
        err.to_string().contains("does-not-exist.properties"),
        "{err}"
    );
}

/// With nothing set, every value is Kafka's default.
#[test]
fn defaults() {
    let config = parse("", &[]).expect("empty config parses");
    assert_eq!(config, BrokerConfig::default());
    assert_eq!(config.broker_id, -1);
    assert_eq!(config.log_dirs, vec![PathBuf::from("/tmp/kafka-logs")]);
    assert_eq!(config.listeners[0].to_string(), "PLAINTEXT://:9092");
    assert_eq!(config.num_partitions, 1);
    assert_eq!(config.log_retention_ms, 168 * 60 * 60 * 1000);
    assert_eq!(config.offsets_topic_num_partitions, 50);
    assert_eq!(config.log_config(), LogConfig::default());
}

/// log.retention.ms wins over .minutes, which wins over .hours.
#[test]
fn retention_unit_precedence() {
    let hours = parse("log.retention.hours=1", &[]).expect("parses");
    assert_eq!(hours.log_retention_ms, 3_600_000);
    let minutes = parse("log.retention.hours=1\nlog.retention.minutes=2", &[]).expect("parses");
    assert_eq!(minutes.log_retention_ms, 120_000);
    let ms = parse(
        "log.retention.hours=1\nlog.retention.minutes=2\nlog.retention.ms=3",
        &[],
    )
    .expect("parses");
    assert_eq!(ms.log_retention_ms, 3);
}

/// An invalid value fails with a message naming the key and the reason.
#[test]
fn invalid_value_names_key() {
    let err = parse("log.segment.bytes=abc", &[]).expect_err("garbage rejected");
    assert_eq!(
        err.to_string(),
        "invalid value 'abc' for log.segment.bytes: not an integer"
    );
    let err = parse("num.partitions=0", &[]).expect_err("zero partitions rejected");
    assert!(err.to_string().contains("num.partitions"), "{err}");
}

/// An unknown key is a warning naming it, not an error.
#[test]
fn unknown_key_warns() {
    let (config, warnings) =
        BrokerConfig::from_properties("transaction.state.log.min.isr=1\nbroker.id=9", &[])
            .expect("unknown key is not fatal");
    assert_eq!(config.broker_id, 9);
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].key, "transaction.state.log.min.isr");
}

/// --override values beat the file's.
#[test]
fn overrides_win() {
    let config = parse(
        &shipped_text(),
        &["broker.id=42", "listeners=PLAINTEXT://:19092"],
    )
    .expect("overrides apply");
    assert_eq!(config.broker_id, 42);
    assert_eq!(config.listeners[0].port, 19092);
    assert_eq!(config.listeners[0].host, "");
}

/// Listener lists parse into typed entries; a TLS listener without a
/// keystore ferrolog can read is refused.
#[test]
fn listener_parsing() {
    let config = parse(
        "listeners=PLAINTEXT://0.0.0.0:9092\nadvertised.listeners=PLAINTEXT://kafka-1:9092",
        &[],
    )
    .expect("parses");
    assert_eq!(config.listeners[0].host, "0.0.0.0");
    assert_eq!(config.advertised_listeners[0].host, "kafka-1");
    assert_eq!(config.advertised_listeners[0].port, 9092);
    let err = parse("listeners=SASL_SSL://:9094", &[]).expect_err("JKS keystore");
    assert!(
        matches!(&err, ConfigError::InvalidValue { key, .. } if key == "ssl.keystore.type"),
        "{err:?}"
    );
}

/// Topic-level keys override the broker's log defaults field by field.
#[test]
fn topic_overrides() {
    let base = parse("log.retention.hours=1", &[])
        .expect("parses")
        .log_config();
    let topic = apply_topic_overrides(
        &base,
        &pairs(&[("retention.ms", "1000"), ("segment.bytes", "4096")]),
    )
    .expect("valid topic overrides");
    assert_eq!(topic.retention_ms, 1000);
    assert_eq!(topic.segment_bytes, 4096);
    assert_eq!(topic.segment_ms, base.segment_ms);
    let err = apply_topic_overrides(&base, &pairs(&[("retention.hours", "1")]))
        .expect_err("unknown topic key rejected");
    assert!(matches!(&err, ConfigError::InvalidValue { key, .. } if key == "retention.hours"));
}

/// cleanup.policy takes delete, compact or both, at topic and broker level;
/// anything else is refused.
#[test]
fn cleanup_policies_parse() {
    let compact = apply_topic_overrides(
        &LogConfig::default(),
        &pairs(&[("cleanup.policy", "compact,delete")]),
    )
    .expect("compact,delete accepted");
    assert!(compact.cleanup_policy.compact && compact.cleanup_policy.delete);
    let broker = parse("log.cleanup.policy=compact", &[]).expect("broker-level compact");
    assert!(broker.log_config().cleanup_policy.compact);
    assert!(!broker.log_config().cleanup_policy.delete);
    let err = parse("log.cleanup.policy=shred", &[]).expect_err("unknown policy");
    assert!(
        err.to_string().contains("expected delete, compact or both"),
        "{err}"
    );
}

/// The README names every topic key that is accepted but not honoured yet,
/// so an operator is never surprised by one that silently does nothing.
#[test]
fn readme_lists_every_unhonoured_topic_key() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    for def in ferrolog::config::topic::TOPIC_CONFIGS {
        let listed = readme.contains(&format!("`{}`", def.name));
        if !def.honoured() {
            assert!(
                listed,
                "{} is accepted but not honoured: list it in the README",
                def.name
            );
        }
    }
}

/// Every broker key that is accepted but not honoured is named in the README.
#[test]
fn readme_lists_every_unhonoured_broker_key() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    for def in BROKER_KEYS.iter().filter(|def| def.ignored.is_some()) {
        assert!(
            readme.contains(&format!("`{}`", def.name)),
            "{} is accepted but not honoured: list it in the README",
            def.name
        );
    }
}

/// Kafka 3.9's own `config/server.properties` (ZooKeeper mode) loads with
/// no unknown key: each key it sets is honoured, or said at start-up to be
/// accepted but not honoured.
#[test]
fn kafkas_stock_server_properties_loads() {
    let stock = "\
broker.id=0
#listeners=PLAINTEXT://:9092
#advertised.listeners=PLAINTEXT://your.host.name:9092
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kafka-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
#log.flush.interval.messages=10000
#log.flush.interval.ms=1000
log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000
group.initial.rebalance.delay.ms=0
";
    let (config, warnings) = BrokerConfig::from_properties(stock, &[]).expect("stock file parses");
    assert_eq!(config.zookeeper_connect.as_deref(), Some("localhost:2181"));
    assert_eq!(config.group_initial_rebalance_delay_ms, 0);
    let mut warned: Vec<&str> = warnings
        .iter()
        .map(|w| {
            assert!(w.message.contains("accepted but not honoured"), "{w}");
            w.key.as_str()
        })
        .collect();
    warned.sort_unstable();
    assert_eq!(
        warned,
        [
            "num.recovery.threads.per.data.dir",
            "transaction.state.log.min.isr",
            "transaction.state.log.replication.factor"
        ]
    );
}
