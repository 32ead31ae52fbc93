//! The idempotent producer against real broker processes: InitProducerId
//! and Kafka's answers to a retried batch, a gap and an old epoch (raw
//! requests, exact codes), the state surviving a SIGKILL, transactions
//! refused clearly, and librdkafka with `enable.idempotence=true` producing
//! through a broker SIGKILL with nothing lost, duplicated or reordered.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::cluster::create_topic;
use common::idempotence::{assert_exactly_once_in_order, IdempotentProducer};
use common::{raw_request, BrokerProcess};
use ferrolog::storage::testing::batch_v2_idempotent;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, InitProducerIdRequest,
    InitProducerIdResponse, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};

const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const UNSUPPORTED_VERSION: i16 = 35;

fn init_producer_id(bootstrap: &str, transactional_id: Option<&str>) -> InitProducerIdResponse {
    raw_request(
        bootstrap,
        ApiKey::InitProducerId,
        1,
        &InitProducerIdRequest::default()
            .with_transactional_id(
                transactional_id.map(|id| TransactionalId(StrBytes::from_string(id.into()))),
            )
            .with_transaction_timeout_ms(60_000),
        Duration::from_secs(10),
    )
}

/// Produce v7 of `batch` to `topic`-0 with acks=1: (error code, base offset).
fn produce(bootstrap: &str, topic: &str, batch: Bytes) -> (i16, i64) {
    let partition = common::produce_records(bootstrap, topic, 0, batch, 1);
    (partition.error_code, partition.base_offset)
}

/// A retry gets the original offsets and is not written again; a gap, or
/// an unknown producer starting past 0 in a whole log, is
/// OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch INVALID_PRODUCER_EPOCH, as
/// Kafka answers. After a SIGKILL the broker still knows the last batch
/// (replayed from the log), and hands out producer ids from a new block.
/// Transactional ids and the transaction coordinator are refused with
/// UNSUPPORTED_VERSION.
#[test]
fn kafkas_answers_to_retries_gaps_and_old_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topic = "idem";
    create_topic(&broker.bootstrap, topic, 1);
    let init = init_producer_id(&broker.bootstrap, None);
    assert_eq!(init.error_code, 0);
    assert_eq!(init.producer_epoch, 0);
    let pid = init.producer_id.0;
    assert!(pid >= 0);

    // Nothing was ever deleted from this log, so a producer it does not
    // know must start at 0: a later batch first means the earlier ones
    // were refused (the Java client retries it after them).
    let ahead = batch_v2_idempotent(3, pid, 0, 3);
    assert_eq!(
        produce(&broker.bootstrap, topic, ahead).0,
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    let first = batch_v2_idempotent(3, pid, 0, 0);
    assert_eq!(produce(&broker.bootstrap, topic, first.clone()), (0, 0));
    assert_eq!(produce(&broker.bootstrap, topic, first), (0, 0), "a retry");
    let next = batch_v2_idempotent(2, pid, 0, 3);
    assert_eq!(produce(&broker.bootstrap, topic, next), (0, 3));
    let gap = batch_v2_idempotent(1, pid, 0, 9);
    assert_eq!(
        produce(&broker.bootstrap, topic, gap).0,
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    let new_epoch = batch_v2_idempotent(1, pid, 1, 0);
    assert_eq!(produce(&broker.bootstrap, topic, new_epoch.clone()), (0, 5));
    let old_epoch = batch_v2_idempotent(1, pid, 0, 5);
    assert_eq!(
        produce(&broker.bootstrap, topic, old_epoch).0,
        INVALID_PRODUCER_EPOCH
    );

    let log_dir = broker.kill();
    let broker = BrokerProcess::restart_on(&log_dir, &[]);
    assert_eq!(
        produce(&broker.bootstrap, topic, new_epoch),
        (0, 5),
        "a retry after the crash"
    );
    assert_eq!(
        produce(&broker.bootstrap, topic, batch_v2_idempotent(1, pid, 1, 1)),
        (0, 6)
    );
    let after_restart = init_producer_id(&broker.bootstrap, None).producer_id.0;
    assert!(
        after_restart >= 1000,
        "a restart claims a new block: {after_restart}"
    );

    let transactional = init_producer_id(&broker.bootstrap, Some("orders"));
    assert_eq!(transactional.error_code, UNSUPPORTED_VERSION);
    let coordinator: FindCoordinatorResponse = raw_request(
        &broker.bootstrap,
        ApiKey::FindCoordinator,
        3,
        &FindCoordinatorRequest::default()
            .with_key(StrBytes::from_static_str("orders"))
            .with_key_type(1),
        Duration::from_secs(10),
    );
    assert_eq!(coordinator.error_code, UNSUPPORTED_VERSION);
    assert!(coordinator
        .error_message
        .is_some_and(|m| m.contains("transactions")));
}

/// librdkafka's idempotent producer streams ids to 3 partitions while the
/// broker is SIGKILLed and restarted on the same address, three times:
/// every record is acknowledged, and stored exactly once, in order. The
/// topic fsyncs before acknowledging (`flush.messages=1`), which widens
/// the window in which a batch is written but not yet acknowledged, so
/// kills land there: the client retries those batches and the restarted
/// broker (its producer state replayed from the log) recognises them.
#[test]
fn an_idempotent_producer_survives_broker_kills() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start(dir.path(), &[]);
    let address = broker.bootstrap.clone();
    let topic = "idem-kill";
    let admin = common::admin(&address);
    let created = common::block_on(admin.create_topics(
        &[NewTopic::new(topic, 3, TopicReplication::Fixed(1)).set("flush.messages", "1")],
        &common::admin_options(Duration::from_secs(30)),
    ))
    .expect("create");
    assert!(created.iter().all(|r| r.is_ok()), "{created:?}");
    let records = 30_000;
    let producer = IdempotentProducer::start(&address, topic, 3, records);
    let listener = format!("listeners=PLAINTEXT://{address}");
    for kill in 1..=3u64 {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while producer.acked() < kill * records / 4 {
            assert!(std::time::Instant::now() < deadline, "no progress");
            std::thread::sleep(Duration::from_millis(2));
        }
        let log_dir = broker.kill();
        broker = BrokerProcess::restart_on(&log_dir, &[&listener]);
    }
    assert_eq!(producer.finish(), records);
    assert_exactly_once_in_order(&broker.bootstrap, topic, 3, records);
}

/// kafka-python (`enable_idempotence=True`, which packs several partitions
/// into one request) and confluent-kafka (`enable.idempotence=true`) produce
/// through InitProducerId and sequence numbers; every id lands once, in
/// order.
#[test]
fn python_clients_produce_idempotently() {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    for client in ["kafka-python", "confluent"] {
        let topic = format!("idem-{client}");
        create_topic(&broker.bootstrap, &topic, 3);
        let records = 3_000u64;
        let output = std::process::Command::new("python3")
            .env_remove("LD_LIBRARY_PATH")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/python/idempotent_producer.py"
            ))
            .args(["--bootstrap", &broker.bootstrap, "--topic", &topic])
            .args(["--partitions", "3", "--count", &records.to_string()])
            .args(["--client", client])
            .output()
            .expect("python3 runs; ./scripts/test.sh installs the clients");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.starts_with("OK"),
            "{client}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_exactly_once_in_order(&broker.bootstrap, &topic, 3, records);
    }
}

/// KafkaJS (`idempotent: true`) packs two topics into every Produce request
/// through one producer id; every id lands once, in order, in both.
#[test]
fn kafkajs_produces_idempotently_to_two_topics_per_request() {
    let node_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node");
    assert!(
        std::path::Path::new(node_dir)
            .join("node_modules/kafkajs")
            .is_dir(),
        "KafkaJS is missing; run ./scripts/test.sh (npm install in tests/node)"
    );
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(dir.path(), &[]);
    let topics = ["idem-js-a", "idem-js-b"];
    for topic in topics {
        create_topic(&broker.bootstrap, topic, 2);
    }
    let records = 2_000u64;
    let output = std::process::Command::new(common::require_tool("node"))
        .current_dir(node_dir)
        .arg("idempotent_producer.js")
        .args([&broker.bootstrap, "2", &records.to_string()])
        .args(topics)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.starts_with("OK"),
        "KafkaJS: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for topic in topics {
        assert_exactly_once_in_order(&broker.bootstrap, topic, 2, records);
    }
}
