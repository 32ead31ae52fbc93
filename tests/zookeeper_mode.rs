//! `zookeeper.connect` set: the broker keeps its metadata in a real
//! ZooKeeper server (Debian's package) in Kafka's znode layout, under the
//! chroot, and serves real clients from it. Registration follows Kafka's
//! rules: a live duplicate broker id is refused, a crashed broker's old
//! registration is waited out, a clean stop removes it at once.

mod common;

use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::zookeeper::ZooKeeperServer;
use common::{admin, admin_options, block_on, client_config, BrokerProcess};
use ferrolog::metadata::{MetadataStore, ZooKeeperStore};
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::Message;
use serde_json::Value;

const SESSION_MS: &str = "zookeeper.session.timeout.ms=4000";

/// A ZooKeeper handle for the test's own reads, on a runtime of its own
/// (the client's I/O tasks live as long as the runtime does).
struct ZkView {
    runtime: tokio::runtime::Runtime,
    store: Arc<ZooKeeperStore>,
}

impl ZkView {
    fn get(&self, path: &str) -> Option<(Vec<u8>, ferrolog::metadata::Stat)> {
        self.runtime.block_on(self.store.get(path)).expect("get")
    }

    fn children(&self, path: &str) -> Vec<String> {
        self.runtime
            .block_on(self.store.children(path))
            .expect("children")
    }

    fn create(&self, path: &str, data: &str) {
        self.runtime
            .block_on(self.store.create_recursive(
                path,
                data.as_bytes().to_vec(),
                ferrolog::metadata::CreateMode::Persistent,
            ))
            .unwrap_or_else(|e| panic!("create {path}: {e}"));
    }

    /// Polls (bounded) until `done` holds.
    fn wait_until(&self, what: &str, done: impl Fn(&ZkView) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn root_store(zk: &ZooKeeperServer) -> ZkView {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let store = runtime
        .block_on(ZooKeeperStore::connect(
            &zk.connect_string(),
            Duration::from_secs(10),
            Duration::from_secs(20),
        ))
        .expect("connect to ZooKeeper");
    ZkView { runtime, store }
}

fn json(store: &ZkView, path: &str) -> Value {
    let (bytes, _) = store
        .get(path)
        .unwrap_or_else(|| panic!("{path} is missing"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn text(store: &ZkView, path: &str) -> String {
    let (bytes, _) = store
        .get(path)
        .unwrap_or_else(|| panic!("{path} is missing"));
    String::from_utf8(bytes).expect("utf-8")
}

fn owner(store: &ZkView, path: &str) -> Option<i64> {
    store.get(path).map(|(_, stat)| stat.ephemeral_owner)
}

fn create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    let results = block_on(admin(bootstrap).create_topics(
        &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
        &admin_options(Duration::from_secs(30)),
    ))
    .expect("CreateTopics answered");
    for result in results {
        result.expect("topic created");
    }
}

fn produce(bootstrap: &str, topic: &str, count: usize) {
    let producer: BaseProducer = client_config(bootstrap)
        .set("acks", "all")
        .create()
        .expect("producer");
    for i in 0..count {
        let payload = format!("record-{i}");
        let key = i.to_string();
        producer
            .send(BaseRecord::to(topic).key(&key).payload(&payload))
            .expect("queued");
    }
    producer
        .flush(Duration::from_secs(30))
        .expect("every record acknowledged");
}

fn consume_all(bootstrap: &str, topic: &str, expected: usize) -> Vec<String> {
    let consumer: BaseConsumer = client_config(bootstrap)
        // A fresh group each time: an earlier one committed its position.
        .set("group.id", format!("zk-{topic}-{}", uuid::Uuid::new_v4()))
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.len() < expected && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            let message = message.expect("no consumer error");
            seen.push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned());
        }
    }
    seen.sort();
    seen
}

/// Runs the broker binary to its exit (bounded), for start-ups that must fail.
fn run_to_exit(log_dir: &std::path::Path, overrides: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferrolog"));
    command
        .args([
            "--config",
            concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties"),
        ])
        .args(["--override", &format!("log.dirs={}", log_dir.display())])
        .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
        .args(["--override", "http.listener=http://127.0.0.1:0"]);
    for o in overrides {
        command.args(["--override", o]);
    }
    let mut child = command
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the broker starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the broker did not exit within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// The znodes a Kafka operator expects, with Kafka's JSON, under the
/// chroot (created by the broker); clients produce and consume; a clean
/// stop removes the registration at once; a restart is a new controller
/// epoch over the same topics.
#[test]
fn broker_keeps_kafkas_layout_in_zookeeper_and_serves_clients() {
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/kafka/prod", zk.connect_string());
    let overrides = [connect.as_str(), "broker.rack=rack-a", SESSION_MS];
    let broker = BrokerProcess::start(dir.path(), &overrides);
    let port: i64 = broker
        .bootstrap
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    let zk_root = root_store(&zk);

    assert_eq!(zk_root.children("/kafka/prod/brokers/ids"), ["0"]);
    let registration = json(&zk_root, "/kafka/prod/brokers/ids/0");
    assert_eq!(registration["version"], 5);
    assert_eq!(registration["host"], "127.0.0.1");
    assert_eq!(registration["port"], port);
    assert_eq!(registration["jmx_port"], -1);
    assert_eq!(registration["rack"], "rack-a");
    assert_eq!(
        registration["endpoints"],
        serde_json::json!([format!("PLAINTEXT://127.0.0.1:{port}")])
    );
    assert_eq!(
        registration["listener_security_protocol_map"],
        serde_json::json!({"PLAINTEXT": "PLAINTEXT"})
    );
    let registered_at: i64 = registration["timestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("timestamp is a number in a string, as Kafka writes it");
    assert!(registered_at > 1_600_000_000_000);
    assert_ne!(
        owner(&zk_root, "/kafka/prod/brokers/ids/0"),
        Some(0),
        "ephemeral"
    );

    let controller = json(&zk_root, "/kafka/prod/controller");
    assert_eq!(
        (
            controller["version"].clone(),
            controller["brokerid"].clone(),
            controller["kraftControllerEpoch"].clone()
        ),
        (2.into(), 0.into(), (-1).into())
    );
    assert_eq!(text(&zk_root, "/kafka/prod/controller_epoch"), "1");
    let cluster = json(&zk_root, "/kafka/prod/cluster/id");
    assert_eq!(cluster["version"], "1");
    assert!(cluster["id"].as_str().is_some_and(|id| id.len() == 22));
    for path in [
        "/kafka/prod/admin/delete_topics",
        "/kafka/prod/isr_change_notification",
        "/kafka/prod/config/topics",
    ] {
        assert!(zk_root.get(path).is_some(), "{path}");
    }
    // Nothing outside the chroot.
    assert!(zk_root.get("/brokers").is_none());

    create_topic(&broker.bootstrap, "orders", 3);
    let assignment = json(&zk_root, "/kafka/prod/brokers/topics/orders");
    assert_eq!(assignment["version"], 3);
    let topic_id = assignment["topic_id"]
        .as_str()
        .expect("a topic id")
        .to_owned();
    assert_eq!(topic_id.len(), 22, "a Kafka Uuid in URL-safe base64");
    assert_eq!(
        assignment["partitions"],
        serde_json::json!({"0": [0], "1": [0], "2": [0]})
    );
    let state = json(
        &zk_root,
        "/kafka/prod/brokers/topics/orders/partitions/1/state",
    );
    assert_eq!(state["leader"], 0);
    assert_eq!(state["isr"], serde_json::json!([0]));
    assert_eq!(state["controller_epoch"], 1);
    produce(&broker.bootstrap, "orders", 30);
    assert_eq!(consume_all(&broker.bootstrap, "orders", 30).len(), 30);

    // A clean stop closes the session: the registration and the controller
    // claim go at once, not after the session timeout.
    let log_dir = broker.terminate();
    assert!(zk_root.children("/kafka/prod/brokers/ids").is_empty());
    assert!(zk_root.get("/kafka/prod/controller").is_none());

    let broker = BrokerProcess::restart_on(&log_dir, &overrides);
    assert_eq!(text(&zk_root, "/kafka/prod/controller_epoch"), "2");
    let mut seen = consume_all(&broker.bootstrap, "orders", 30);
    seen.dedup();
    assert_eq!(
        seen.len(),
        30,
        "every record is still there after the restart"
    );
}

/// A second broker with a broker.id that a live broker holds is refused
/// with one clear line and exit 1, after waiting one session timeout (the
/// holder might have been a crashed process), and the holder's
/// registration is left alone.
#[test]
fn a_live_duplicate_broker_id_is_refused() {
    let zk = ZooKeeperServer::start();
    let first_dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}", zk.connect_string());
    let overrides = [connect.as_str(), SESSION_MS];
    let _first = BrokerProcess::start(first_dir.path(), &overrides);
    let zk_root = root_store(&zk);
    let holder = owner(&zk_root, "/brokers/ids/0");

    let second_dir = tempfile::tempdir().expect("tempdir");
    let output = run_to_exit(second_dir.path(), &overrides);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(!said.contains("panic"), "{said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    assert!(
        errors[0].contains("broker.id 0 is already registered by another live broker"),
        "{said}"
    );
    assert_eq!(
        owner(&zk_root, "/brokers/ids/0"),
        holder,
        "the holder kept its registration"
    );
}

/// SIGKILL leaves the registration to ZooKeeper's session expiry; a broker
/// restarted at once waits it out instead of failing with NodeExists, then
/// registers on its new session and becomes controller with a new epoch.
#[test]
fn a_broker_restarted_after_sigkill_waits_out_its_old_session() {
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}", zk.connect_string());
    let overrides = [connect.as_str(), SESSION_MS];
    let broker = BrokerProcess::start(dir.path(), &overrides);
    create_topic(&broker.bootstrap, "kept", 1);
    produce(&broker.bootstrap, "kept", 5);
    let zk_root = root_store(&zk);
    let old = owner(&zk_root, "/brokers/ids/0").expect("registered");

    let log_dir = broker.kill();
    let mut broker = BrokerProcess::restart_on(&log_dir, &overrides);
    assert!(
        broker
            .log_lines()
            .iter()
            .any(|l| l.contains("/brokers/ids/0 is held by ZooKeeper session")),
        "the restart found the old registration and waited"
    );
    let new = owner(&zk_root, "/brokers/ids/0").expect("registered again");
    assert_ne!(new, old);
    assert_eq!(owner(&zk_root, "/controller"), Some(new));
    assert_eq!(text(&zk_root, "/controller_epoch"), "2");
    assert_eq!(consume_all(&broker.bootstrap, "kept", 5).len(), 5);
}

/// Brokers started at the same moment on a fresh ZooKeeper race to create
/// `/cluster/id`; as Kafka's `createOrGetClusterId` does, the losers read
/// the winner's id instead of failing with NodeExists, and all three serve
/// one cluster (the 3-broker benchmark starts its brokers so).
#[test]
fn brokers_started_at_once_on_a_fresh_zookeeper_agree_on_one_cluster_id() {
    use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse};
    let zk = ZooKeeperServer::start();
    let connect = format!("zookeeper.connect={}", zk.connect_string());
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let brokers: Vec<BrokerProcess> = std::thread::scope(|scope| {
        let starting: Vec<_> = dirs
            .iter()
            .enumerate()
            .map(|(id, dir)| {
                let connect = connect.clone();
                scope.spawn(move || {
                    let id = format!("broker.id={id}");
                    BrokerProcess::start(dir.path(), &[connect.as_str(), id.as_str(), SESSION_MS])
                })
            })
            .collect();
        starting
            .into_iter()
            .map(|handle| handle.join().expect("every broker starts"))
            .collect()
    });
    let zk_root = root_store(&zk);
    let id = json(&zk_root, "/cluster/id")["id"]
        .as_str()
        .expect("an id")
        .to_string();
    for broker in &brokers {
        let metadata: MetadataResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::Metadata,
            9,
            &MetadataRequest::default(),
            Duration::from_secs(10),
        );
        assert_eq!(
            metadata.cluster_id.as_deref(),
            Some(id.as_str()),
            "every broker reports the one cluster id"
        );
    }
    zk_root.wait_until("three registrations", |view| {
        view.children("/brokers/ids").len() == 3
    });
}

/// The sample `config/zookeeper.properties` parses without warnings.
#[test]
fn the_zookeeper_sample_config_parses() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/zookeeper.properties"
    ))
    .expect("sample");
    let (config, warnings) =
        ferrolog::config::BrokerConfig::from_properties(&text, &[]).expect("parses");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        config.zookeeper_connect.as_deref(),
        Some("127.0.0.1:2181/ferrolog")
    );
    assert_eq!(config.broker_rack.as_deref(), Some("rack-a"));
}

/// `zookeeper.connection.timeout.ms` bounds start-up against an ensemble
/// that is not there: one line naming `zookeeper.connect`, exit 1.
#[test]
fn unreachable_zookeeper_fails_start_up_with_one_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect=127.0.0.1:{port}");
    let started = Instant::now();
    let output = run_to_exit(
        dir.path(),
        &[connect.as_str(), "zookeeper.connection.timeout.ms=1500"],
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    let errors: Vec<&str> = said.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    assert!(
        errors[0].contains(&format!("zookeeper.connect=127.0.0.1:{port}")),
        "{said}"
    );
    assert!(
        errors[0].contains("zookeeper.connection.timeout.ms"),
        "{said}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// A produce to an unknown topic does not hold the connection's turn while
/// the controller auto-creates it: with ZooKeeper frozen (creation cannot
/// finish), a pipelined Produce to an unknown topic and then one to a known
/// topic are both answered at once, UNKNOWN_TOPIC_OR_PARTITION (the client
/// retries, as Kafka's producer does) and a written offset; the creation
/// goes on in the background and the topic exists once ZooKeeper is back.
#[test]
fn a_produce_to_an_unknown_topic_does_not_wait_for_its_creation() {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{
        ApiKey, ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader, TopicName,
    };
    use kafka_protocol::protocol::{Decodable, StrBytes};
    use std::io::{Read, Write};

    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}", zk.connect_string());
    let broker = BrokerProcess::start(
        dir.path(),
        &[connect.as_str(), "zookeeper.session.timeout.ms=30000"],
    );
    let batch =
        || ferrolog::storage::testing::batch_v2(1, 20, kafka_protocol::records::Compression::None);
    // The known topic, created and led before ZooKeeper freezes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::produce_batch(&broker.bootstrap, "known", 0, 1, 1) != 0 {
        assert!(Instant::now() < deadline, "known never accepted a produce");
        std::thread::sleep(Duration::from_millis(100));
    }
    zk.freeze();
    let produce = |correlation_id: i32, topic: &str| {
        let header = RequestHeader::default()
            .with_request_api_key(ApiKey::Produce as i16)
            .with_request_api_version(7)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("ferrolog-test")));
        let request = ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch()))])]);
        ferrolog::protocol::encode_request(&header, ApiKey::Produce, &request).expect("encodes")
    };
    let mut stream = std::net::TcpStream::connect(&broker.bootstrap).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    stream.write_all(&produce(1, "fresh")).expect("sends");
    stream.write_all(&produce(2, "known")).expect("sends");
    let mut answers = Vec::new();
    for expected in [1, 2] {
        let mut prefix = [0u8; 4];
        let read = stream.read_exact(&mut prefix);
        if read.is_err() {
            zk.thaw();
        }
        read.unwrap_or_else(|e| {
            panic!("response {expected} not answered within 5 s while ZooKeeper is frozen: {e}")
        });
        let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
        stream.read_exact(&mut body).expect("response body");
        let mut buf = bytes::Bytes::from(body);
        let header = ResponseHeader::decode(&mut buf, 0).expect("header");
        assert_eq!(header.correlation_id, expected, "answered in request order");
        let response = ProduceResponse::decode(&mut buf, 7).expect("decodes");
        answers.push(response.responses[0].partition_responses[0].clone());
    }
    zk.thaw();
    assert_eq!(
        answers[0].error_code, 3,
        "UNKNOWN_TOPIC_OR_PARTITION: {:?}",
        answers[0]
    );
    assert_eq!(answers[1].error_code, 0, "{:?}", answers[1]);
    assert!(answers[1].base_offset >= 1, "{:?}", answers[1]);
    // The creation it started finishes once ZooKeeper is back.
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::produce_batch(&broker.bootstrap, "fresh", 0, 1, 1) != 0 {
        assert!(Instant::now() < deadline, "fresh was never created");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// An embedder matches on why start-up failed: `BrokerError::kind()`,
/// with the underlying error as its `source()`.
#[test]
fn start_up_errors_carry_a_kind_an_embedder_can_match() {
    use ferrolog::broker::{Broker, BrokerErrorKind};
    use std::error::Error as _;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    let taken_port = taken.local_addr().expect("address").port();
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let start = |properties: String| {
        let (config, _) =
            ferrolog::config::BrokerConfig::from_properties(&properties, &[]).expect("parses");
        actix_rt::System::new().block_on(async move {
            match Broker::start(config).await {
                Ok(broker) => {
                    let _ = broker.shutdown().await;
                    None
                }
                Err(e) => Some(e),
            }
        })
    };
    let busy = start(format!(
        "listeners=PLAINTEXT://127.0.0.1:{taken_port}\nlog.dirs={}\n",
        dir.path().join("busy").display()
    ))
    .expect("a taken port fails start-up");
    assert_eq!(busy.kind(), BrokerErrorKind::Listen, "{busy}");
    assert!(busy.source().is_some(), "{busy:?}");
    assert!(busy.to_string().contains(&taken_port.to_string()), "{busy}");

    let unreachable = start(format!(
        "listeners=PLAINTEXT://127.0.0.1:0\nhttp.listener=http://127.0.0.1:0\nlog.dirs={}\n\
         zookeeper.connect=127.0.0.1:{free_port}\nzookeeper.connection.timeout.ms=1000\n",
        dir.path().join("zk").display()
    ))
    .expect("an absent ensemble fails start-up");
    assert_eq!(
        unreachable.kind(),
        BrokerErrorKind::ZooKeeperUnreachable,
        "{unreachable}"
    );
    assert!(unreachable.source().is_some(), "{unreachable:?}");
    drop(taken);
}

/// A session expiry (forced from outside on a running broker) costs the
/// registration and the controller claim; the broker claims both again on
/// its new session, with a new controller epoch, keeps serving, and then
/// stays put: no NodeExists loop, no churn (KAFKA-7165, KAFKA-14845).
#[test]
fn session_expiry_re_registers_and_re_elects_once() {
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = zk.connect_string();
    let config = ferrolog::config::BrokerConfig::from_properties(
        &format!(
            "log.dirs={}\nlisteners=PLAINTEXT://127.0.0.1:0\nhttp.listener=http://127.0.0.1:0\noffsets.topic.replication.factor=1\n\
             zookeeper.connect={connect}\nzookeeper.session.timeout.ms=4000\n",
            dir.path().display()
        ),
        &[],
    )
    .expect("config")
    .0;
    actix_rt::System::new().block_on(async move {
        let store =
            ZooKeeperStore::connect(&connect, Duration::from_secs(4), Duration::from_secs(20))
                .await
                .expect("connect");
        let broker = ferrolog::broker::Broker::builder(config)
            .with_metadata_store(store.clone())
            .start()
            .await
            .expect("the broker starts");
        let registration = |store: Arc<ZooKeeperStore>| async move {
            store
                .get("/brokers/ids/0")
                .await
                .expect("get")
                .map(|(_, stat)| stat.ephemeral_owner)
        };
        let first = registration(store.clone()).await.expect("registered");
        assert_eq!(first, store.session_id());

        common::zookeeper::expire_session(&connect, &store).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut owner = None;
        while Instant::now() < deadline {
            owner = registration(store.clone()).await;
            if owner.is_some_and(|o| o != first) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            owner,
            Some(store.session_id()),
            "registered again on the new session"
        );
        let epoch = |store: Arc<ZooKeeperStore>| async move {
            let (bytes, _) = store
                .get("/controller_epoch")
                .await
                .expect("get")
                .expect("epoch");
            String::from_utf8(bytes).expect("utf-8")
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while epoch(store.clone()).await != "2" && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(epoch(store.clone()).await, "2");
        let controller = store
            .get("/controller")
            .await
            .expect("get")
            .expect("a controller");
        assert_eq!(controller.1.ephemeral_owner, store.session_id());

        // Still serving: a real client creates, produces and reads back,
        // from a thread of its own (its calls block).
        let bootstrap = broker.bound.to_string();
        let client = std::thread::spawn(move || {
            create_topic(&bootstrap, "after-expiry", 1);
            produce(&bootstrap, "after-expiry", 10);
            consume_all(&bootstrap, "after-expiry", 10).len()
        });
        let consumed = tokio::task::spawn_blocking(move || client.join().expect("client"))
            .await
            .expect("join");
        assert_eq!(consumed, 10);

        // And it settles: the same registration and epoch a while later.
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(registration(store.clone()).await, Some(store.session_id()));
        assert_eq!(epoch(store.clone()).await, "2");
        broker.shutdown().await.expect("clean shutdown");
    });
}

/// ZooKeeper down for 10 s (SIGKILL, then restarted on its data) within
/// the session timeout: the broker stays up and keeps serving clients
/// meanwhile, reconnects on the same session, and nothing churns: same
/// registration, same controller epoch.
#[test]
fn zookeeper_down_for_ten_seconds_changes_nothing() {
    let mut zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}", zk.connect_string());
    let mut broker = BrokerProcess::start(
        dir.path(),
        &[connect.as_str(), "zookeeper.session.timeout.ms=30000"],
    );
    create_topic(&broker.bootstrap, "steady", 1);
    let owner_before = {
        let zk_root = root_store(&zk);
        owner(&zk_root, "/brokers/ids/0").expect("registered")
    };

    zk.kill();
    let down = Instant::now();
    produce(&broker.bootstrap, "steady", 20);
    let remaining = Duration::from_secs(10).saturating_sub(down.elapsed());
    std::thread::sleep(remaining);
    zk.resume();

    let zk_root = root_store(&zk);
    assert!(broker.is_running(), "the broker stayed up");
    assert_eq!(
        owner(&zk_root, "/brokers/ids/0"),
        Some(owner_before),
        "same session, same registration"
    );
    assert_eq!(text(&zk_root, "/controller_epoch"), "1", "no re-election");
    produce(&broker.bootstrap, "steady", 20);
    assert_eq!(consume_all(&broker.bootstrap, "steady", 40).len(), 40);
    // Give a late re-registration the chance to show up: none does.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(owner(&zk_root, "/brokers/ids/0"), Some(owner_before));
    assert_eq!(
        broker.count_lines("registered again"),
        0,
        "{:?}",
        broker.log_lines()
    );
}

/// A ZooKeeper server keeps a connection's watches only, and
/// zookeeper-async does not send them again on reconnect (the Java
/// client's SetWatches): a watch armed before ZooKeeper restarts, within
/// the session, must still wake its waiter, and a watch armed after the
/// reconnect must fire on the next change. Before the fix neither did, and
/// a controller after a short ZooKeeper outage followed no broker change
/// or ISR notification for the rest of its session (found by the soak).
#[test]
fn watches_survive_a_zookeeper_restart_within_the_session() {
    let mut zk = ZooKeeperServer::start();
    let view = root_store(&zk);
    view.create("/watched", "");
    let before = view
        .runtime
        .block_on(view.store.watch("/watched"))
        .expect("watch");
    zk.kill();
    std::thread::sleep(Duration::from_secs(1));
    zk.resume();
    view.wait_until("the session to be back", |v| {
        v.runtime.block_on(v.store.get("/watched")).is_ok()
    });
    view.create("/watched/a", "");
    let woke = view
        .runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), before).await });
    assert!(
        woke.is_ok(),
        "a watch armed before the restart wakes its waiter"
    );
    // Armed again (as every follow loop does after a wake), the watch
    // fires on the next change. A wake without an event (the connection
    // reset) means: arm again.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut n = 0;
    let event = loop {
        assert!(
            Instant::now() < deadline,
            "no watch fired after the reconnect"
        );
        let armed = view
            .runtime
            .block_on(view.store.watch("/watched"))
            .expect("watch");
        n += 1;
        view.create(&format!("/watched/b{n}"), "");
        match view
            .runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), armed).await })
        {
            Ok(Ok(event)) => break event,
            Ok(Err(_)) => continue,
            Err(_) => panic!("a watch armed after the reconnect never fired"),
        }
    };
    eprintln!("fired after the reconnect: {event:?}");
}

/// ZooKeeper-era tools write znodes instead of calling the broker:
/// `kafka-topics.sh --zookeeper --create` writes `/config/topics/<t>` and a
/// version-1 `/brokers/topics/<t>`; `--delete` writes
/// `/admin/delete_topics/<t>`. The controller's watches take both up: the
/// topic gets partition states and a topic id and serves clients; the
/// marked topic is deleted, marker included.
#[test]
fn topics_written_by_zookeeper_era_tools_are_taken_up_and_deleted() {
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/tools", zk.connect_string());
    let broker = BrokerProcess::start(
        dir.path(),
        &[
            connect.as_str(),
            SESSION_MS,
            "auto.create.topics.enable=false",
        ],
    );
    let zk_root = root_store(&zk);
    zk_root.create(
        "/tools/config/topics/legacy",
        r#"{"version":1,"config":{"retention.ms":"86400000"}}"#,
    );
    zk_root.create(
        "/tools/brokers/topics/legacy",
        r#"{"version":1,"partitions":{"0":[0],"1":[0]}}"#,
    );
    zk_root.wait_until("the partition states", |zk| {
        zk.get("/tools/brokers/topics/legacy/partitions/1/state")
            .is_some()
    });
    let assignment = json(&zk_root, "/tools/brokers/topics/legacy");
    assert_eq!(assignment["version"], 3, "rewritten with a topic id");
    assert!(assignment["topic_id"].as_str().is_some());
    produce(&broker.bootstrap, "legacy", 10);
    assert_eq!(consume_all(&broker.bootstrap, "legacy", 10).len(), 10);

    zk_root.create("/tools/admin/delete_topics/legacy", "");
    zk_root.wait_until("the deletion", |zk| {
        zk.get("/tools/brokers/topics/legacy").is_none()
            && zk.get("/tools/admin/delete_topics/legacy").is_none()
            && zk.get("/tools/config/topics/legacy").is_none()
    });
    let consumer: BaseConsumer = client_config(&broker.bootstrap).create().expect("client");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metadata = consumer
            .fetch_metadata(None, Duration::from_secs(10))
            .expect("metadata");
        if metadata.topics().iter().all(|t| t.name() != "legacy") {
            break;
        }
        assert!(Instant::now() < deadline, "legacy is still listed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// OffsetCommit v0 and OffsetFetch v0 on a ZooKeeper broker use the legacy
/// consumer znodes, `/consumers/<group>/offsets/<topic>/<partition>`
/// (decimal text), as Kafka 0.8.2 and every ZooKeeper-mode Kafka do; later
/// versions use `__consumer_offsets`, so the two do not mix.
#[test]
fn offset_commit_v0_lives_in_zookeeper() {
    use kafka_protocol::error::ResponseError;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use kafka_protocol::messages::{
        ApiKey, GroupId, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
        OffsetFetchResponse, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}", zk.connect_string());
    let broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    create_topic(&broker.bootstrap, "legacy-offsets", 2);
    let name = |t: &str| TopicName(StrBytes::from_string(t.to_string()));
    let commit = |topic: &str, offset: i64| -> i16 {
        let response: OffsetCommitResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::OffsetCommit,
            0,
            &OffsetCommitRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("old-consumer")))
                .with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset)])]),
            Duration::from_secs(30),
        );
        response.topics[0].partitions[0].error_code
    };
    let fetch = |version: i16| -> Vec<i64> {
        let response: OffsetFetchResponse = common::raw_request(
            &broker.bootstrap,
            ApiKey::OffsetFetch,
            version,
            &OffsetFetchRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("old-consumer")))
                .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                    .with_name(name("legacy-offsets"))
                    .with_partition_indexes(vec![0, 1])])),
            Duration::from_secs(30),
        );
        response.topics[0]
            .partitions
            .iter()
            .map(|p| p.committed_offset)
            .collect()
    };
    assert_eq!(commit("legacy-offsets", 42), 0);
    assert_eq!(
        commit("missing-topic", 1),
        ResponseError::UnknownTopicOrPartition.code()
    );
    let zk_root = root_store(&zk);
    assert_eq!(
        text(&zk_root, "/consumers/old-consumer/offsets/legacy-offsets/0"),
        "42"
    );
    // A ZooKeeper-era tool writes partition 1 directly.
    zk_root.create("/consumers/old-consumer/offsets/legacy-offsets/1", "7");
    assert_eq!(fetch(0), vec![42, 7]);
    // v1 reads __consumer_offsets, where nothing was committed.
    assert_eq!(fetch(1), vec![-1, -1]);
}

/// `/config/changes` does not grow without bound: every AlterConfigs
/// leaves a notification, and the controller keeps the newest 100 (Kafka
/// purges them by age, 15 minutes). The newest stays, so the configs
/// every broker applies are the last ones written.
#[test]
fn config_change_notifications_are_purged() {
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/purge", zk.connect_string());
    let broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    let zk_root = root_store(&zk);
    create_topic(&broker.bootstrap, "configured", 1);
    for i in 0..110 {
        common::alter_retention(
            &broker.bootstrap,
            "configured",
            &(1_000_000 + i).to_string(),
        );
    }
    zk_root.wait_until("the oldest notifications purged", |zk| {
        zk.children("/purge/config/changes").len() == 100
    });
    let mut names = zk_root.children("/purge/config/changes");
    names.sort();
    let newest = names.last().expect("a notification").clone();
    let newest_topic = json(&zk_root, &format!("/purge/config/changes/{newest}"));
    assert_eq!(newest_topic["entity_path"], "topics/configured");
    assert_eq!(
        common::described_retention(&broker.bootstrap, "configured").as_deref(),
        Some("1000109")
    );
}

/// One CreateTopics of `name` (1 partition, 1 replica) as a raw request,
/// so that an error comes back as it is: a client library would retry
/// NOT_CONTROLLER.
fn raw_create_topic(bootstrap: &str, name: &str) -> kafka_protocol::messages::CreateTopicsResponse {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;
    common::raw_request(
        bootstrap,
        ApiKey::CreateTopics,
        5,
        &CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(name.to_owned())))
                .with_num_partitions(1)
                .with_replication_factor(1)]),
        Duration::from_secs(20),
    )
}

/// Moves `/controller_epoch` under `root` one on, as a successor's
/// election does; returns the epoch it held before.
fn move_controller_epoch_on(zk_root: &ZkView, root: &str) -> i32 {
    let path = format!("{root}/controller_epoch");
    let epoch: i32 = text(zk_root, &path).parse().expect("an epoch");
    let (_, stat) = zk_root.get(&path).expect("epoch znode");
    zk_root
        .runtime
        .block_on(zk_root.store.set(
            &path,
            (epoch + 1).to_string().into_bytes(),
            Some(stat.version),
        ))
        .expect("move the epoch on");
    epoch
}

/// Issue 20, hole 3: every controller write carries a check of
/// `/controller_epoch`'s version. Once a successor has moved the epoch on
/// (here the test bumps it in ZooKeeper, as a successor's election does
/// while this controller is paused or cut off), the old controller's next
/// write is refused as a whole: a topic creation answers NOT_CONTROLLER
/// and leaves no znode behind, where an unfenced controller would have
/// written the topic over its successor's head.
#[test]
fn a_controller_whose_epoch_moved_on_writes_nothing() {
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/fenced", zk.connect_string());
    let broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    let zk_root = root_store(&zk);
    create_topic(&broker.bootstrap, "before", 1);
    produce(&broker.bootstrap, "before", 10);

    move_controller_epoch_on(&zk_root, "/fenced");

    // One raw request: a client library would retry NOT_CONTROLLER.
    let answer = raw_create_topic(&broker.bootstrap, "after");
    assert_eq!(
        answer.topics[0].error_code,
        kafka_protocol::error::ResponseError::NotController.code(),
        "a fenced controller answers NOT_CONTROLLER"
    );
    assert!(
        zk_root.get("/fenced/brokers/topics/after").is_none(),
        "a fenced controller wrote a topic"
    );
}

/// Issue 20, hole 4: an active controller steps down for a control request
/// with a newer controller epoch only when `/controller_epoch` says so. A
/// forged UpdateMetadata with epoch 1,000 is answered
/// STALE_CONTROLLER_EPOCH, and the broker stays a working controller: a
/// topic created afterwards gets its leader and takes records. Unfenced,
/// the broker stepped down while holding `/controller`, and no broker was
/// a working controller any more.
#[test]
fn a_forged_newer_controller_epoch_does_not_unseat_the_controller() {
    use kafka_protocol::error::ResponseError;
    use kafka_protocol::messages::{
        ApiKey, BrokerId, UpdateMetadataRequest, UpdateMetadataResponse,
    };
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/forged", zk.connect_string());
    let broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    let zk_root = root_store(&zk);
    let forged: UpdateMetadataResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::UpdateMetadata,
        7,
        &UpdateMetadataRequest::default()
            .with_controller_id(BrokerId(7))
            .with_controller_epoch(1_000)
            .with_broker_epoch(-1),
        Duration::from_secs(10),
    );
    assert_eq!(
        forged.error_code,
        ResponseError::StaleControllerEpoch.code()
    );
    create_topic(&broker.bootstrap, "still-led", 1);
    produce(&broker.bootstrap, "still-led", 20);
    assert_eq!(consume_all(&broker.bootstrap, "still-led", 20).len(), 20);
    assert_eq!(text(&zk_root, "/forged/controller_epoch"), "1");
    let controller = json(&zk_root, "/forged/controller");
    assert_eq!(controller["brokerid"], 0);
}

/// Issue 20, the replica manager's fence: a control request from a newer
/// controller is taken once `/controller_epoch` confirms its epoch (here the
/// test moves the epoch on, as a successor's election does while this
/// controller is paused). The replica manager applies it, answers 0 and
/// tells this broker's controller, which steps down: clients are told of
/// the new controller, and a CreateTopics sent here answers NOT_CONTROLLER
/// and writes nothing.
#[test]
fn a_confirmed_newer_controller_deposes_this_one() {
    use kafka_protocol::messages::update_metadata_request::{
        UpdateMetadataBroker, UpdateMetadataEndpoint,
    };
    use kafka_protocol::messages::{
        ApiKey, BrokerId, MetadataRequest, MetadataResponse, UpdateMetadataRequest,
        UpdateMetadataResponse,
    };
    use kafka_protocol::protocol::StrBytes;
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/deposed", zk.connect_string());
    let mut broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    let zk_root = root_store(&zk);
    let epoch = move_controller_epoch_on(&zk_root, "/deposed");
    let (host, port) = broker.bootstrap.rsplit_once(':').expect("host:port");
    let newer: UpdateMetadataResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::UpdateMetadata,
        7,
        &UpdateMetadataRequest::default()
            .with_controller_id(BrokerId(7))
            .with_controller_epoch(epoch + 1)
            .with_broker_epoch(-1)
            // A controller lists itself among the live brokers; the cache
            // names no controller that is not among them.
            .with_live_brokers(
                [(0, port.parse().expect("port")), (7, 9)]
                    .into_iter()
                    .map(|(id, port)| {
                        UpdateMetadataBroker::default()
                            .with_id(BrokerId(id))
                            .with_endpoints(vec![UpdateMetadataEndpoint::default()
                                .with_host(StrBytes::from_string(host.to_owned()))
                                .with_port(port)
                                .with_listener(StrBytes::from_static_str("PLAINTEXT"))
                                .with_security_protocol(0)])
                    })
                    .collect(),
            ),
        Duration::from_secs(10),
    );
    assert_eq!(
        newer.error_code, 0,
        "a confirmed newer controller is obeyed"
    );
    let metadata: MetadataResponse = common::raw_request(
        &broker.bootstrap,
        ApiKey::Metadata,
        9,
        &MetadataRequest::default().with_topics(Some(vec![])),
        Duration::from_secs(10),
    );
    assert_eq!(
        metadata.controller_id.0, 7,
        "clients are told of the new controller"
    );
    // The step-down reaches the controller actor after the answer.
    broker.wait_for_line("is current: this broker", Duration::from_secs(10));
    let answer = raw_create_topic(&broker.bootstrap, "after");
    // A standby answers CreateTopics NOT_CONTROLLER, as Kafka does, and
    // writes nothing; an active controller would have created the topic.
    assert_eq!(
        answer.topics[0].error_code,
        kafka_protocol::error::ResponseError::NotController.code(),
        "the deposed controller still acts as controller"
    );
    assert!(zk_root.get("/deposed/brokers/topics/after").is_none());
}

/// Issue 20, hole 4: the election is one transaction. The first controller
/// of a cluster finds no `/controller_epoch`, creates it at 0 as Kafka
/// does, and takes epoch 1 together with `/controller`; each later
/// election moves both at once.
#[test]
fn the_controller_claim_and_its_epoch_are_written_together() {
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/elect", zk.connect_string());
    let zk_root = root_store(&zk);
    let broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    assert_eq!(text(&zk_root, "/elect/controller_epoch"), "1");
    let (_, first) = zk_root.get("/elect/controller_epoch").expect("epoch");
    assert_eq!(first.version, 1, "created at 0, then moved to 1");
    let log_dir = broker.terminate();
    let broker = BrokerProcess::restart_on(&log_dir, &[connect.as_str(), SESSION_MS]);
    assert_eq!(text(&zk_root, "/elect/controller_epoch"), "2");
    assert_eq!(json(&zk_root, "/elect/controller")["brokerid"], 0);
    drop(broker);
}

/// DescribeConfigs v1 of one key: its value and ConfigSource.
fn described_config(
    bootstrap: &str,
    resource_type: i8,
    name: &str,
    key: &str,
) -> Option<(String, i8)> {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};
    use kafka_protocol::protocol::StrBytes;
    let response: DescribeConfigsResponse = common::raw_request(
        bootstrap,
        ApiKey::DescribeConfigs,
        1,
        &DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(resource_type)
            .with_resource_name(StrBytes::from_string(name.to_string()))
            .with_configuration_keys(Some(vec![StrBytes::from_string(key.to_string())]))]),
        Duration::from_secs(30),
    );
    let config = response.results[0].configs.first()?;
    Some((config.value.as_ref()?.to_string(), config.config_source))
}

/// IncrementalAlterConfigs SET of `pairs` on broker resource `name` ("" is
/// the cluster default): the resource's error code.
fn set_broker_configs(bootstrap: &str, name: &str, pairs: &[(&str, &str)]) -> i16 {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::{
        ApiKey, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    };
    use kafka_protocol::protocol::StrBytes;
    let response: IncrementalAlterConfigsResponse = common::raw_request(
        bootstrap,
        ApiKey::IncrementalAlterConfigs,
        0,
        &IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(StrBytes::from_string(name.to_string()))
                .with_configs(
                    pairs
                        .iter()
                        .map(|(k, v)| {
                            AlterableConfig::default()
                                .with_name(StrBytes::from_string(k.to_string()))
                                .with_config_operation(if v.is_empty() { 1 } else { 0 })
                                .with_value(
                                    (!v.is_empty()).then(|| StrBytes::from_string(v.to_string())),
                                )
                        })
                        .collect(),
                ),
        ]),
        Duration::from_secs(30),
    );
    response.responses[0].error_code
}

/// One acks=all record of `size` bytes to `topic`: the delivery's outcome.
fn produce_one_acks_all(
    bootstrap: &str,
    topic: &str,
    size: usize,
) -> Result<(), rdkafka::types::RDKafkaErrorCode> {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let producer: FutureProducer = client_config(bootstrap)
        .set("acks", "all")
        .set("message.timeout.ms", "3000")
        .create()
        .expect("producer");
    let payload = vec![b'v'; size];
    let delivery = block_on(producer.send(
        FutureRecord::to(topic).key("k").payload(&payload),
        Duration::from_secs(0),
    ));
    match delivery {
        Ok(_) => Ok(()),
        Err((e, _)) => Err(e
            .rdkafka_error_code()
            .unwrap_or(rdkafka::types::RDKafkaErrorCode::Fail)),
    }
}

/// Kafka's dynamic broker configs (KIP-226) in Kafka's znodes: an
/// IncrementalAlterConfigs of this broker writes `/config/brokers/0` and a
/// `brokers/0` change notification and applies at once, without a restart
/// (`message.max.bytes` refuses the next large record; the log defaults
/// reach the existing topic). A cluster default written straight
/// to ZooKeeper as Kafka's `AdminZkClient` writes it (`/config/brokers/<default>`
/// and its notification) is followed too. Keys that need a restart are
/// refused with INVALID_REQUEST.
#[test]
fn dynamic_broker_configs_live_in_kafkas_znodes_and_apply_without_a_restart() {
    use kafka_protocol::error::ResponseError;
    let zk = ZooKeeperServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let connect = format!("zookeeper.connect={}/dyn", zk.connect_string());
    let broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    let zk_root = root_store(&zk);
    create_topic(&broker.bootstrap, "dyn", 1);
    assert_eq!(produce_one_acks_all(&broker.bootstrap, "dyn", 5000), Ok(()));

    let code = set_broker_configs(
        &broker.bootstrap,
        "0",
        &[
            ("min.insync.replicas", "2"),
            ("log.retention.ms", "3600000"),
            ("message.max.bytes", "1000"),
        ],
    );
    assert_eq!(code, 0);
    let written = json(&zk_root, "/dyn/config/brokers/0");
    assert_eq!(written["version"], 1);
    assert_eq!(written["config"]["min.insync.replicas"], "2");
    assert_eq!(written["config"]["log.retention.ms"], "3600000");
    let notified = zk_root
        .children("/dyn/config/changes")
        .iter()
        .any(|n| json(&zk_root, &format!("/dyn/config/changes/{n}"))["entity_path"] == "brokers/0");
    assert!(notified, "a brokers/0 change notification");
    assert_eq!(
        described_config(&broker.bootstrap, 4, "0", "min.insync.replicas"),
        Some(("2".into(), 2)),
        "DYNAMIC_BROKER_CONFIG"
    );
    assert_eq!(
        described_config(&broker.bootstrap, 2, "dyn", "retention.ms"),
        Some(("3600000".into(), 2)),
        "the topic without an override takes the dynamic log default"
    );
    assert_eq!(
        produce_one_acks_all(&broker.bootstrap, "dyn", 5000),
        Err(rdkafka::types::RDKafkaErrorCode::MessageSizeTooLarge),
        "message.max.bytes=1000 applies to the next produce"
    );
    assert_eq!(
        set_broker_configs(&broker.bootstrap, "0", &[("message.max.bytes", "")]),
        0
    );
    assert_eq!(produce_one_acks_all(&broker.bootstrap, "dyn", 5000), Ok(()));

    // Written by another tool, as Kafka's AdminZkClient does.
    zk_root.create(
        "/dyn/config/brokers/<default>",
        r#"{"version":1,"config":{"message.max.bytes":"2000000"}}"#,
    );
    zk_root
        .runtime
        .block_on(zk_root.store.create_sequential(
            "/dyn/config/changes/config_change_",
            br#"{"version":2,"entity_path":"brokers/<default>"}"#.to_vec(),
        ))
        .expect("notification");
    let deadline = Instant::now() + Duration::from_secs(30);
    while described_config(&broker.bootstrap, 2, "dyn", "max.message.bytes")
        != Some(("2000000".into(), 3))
    {
        assert!(
            Instant::now() < deadline,
            "the cluster default was not applied"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        described_config(&broker.bootstrap, 4, "", "message.max.bytes"),
        Some(("2000000".into(), 3)),
        "the default resource lists DYNAMIC_DEFAULT_BROKER_CONFIG"
    );

    assert_eq!(
        set_broker_configs(&broker.bootstrap, "", &[("broker.id", "5")]),
        ResponseError::InvalidRequest.code(),
        "broker.id needs a restart"
    );
    assert_eq!(
        set_broker_configs(&broker.bootstrap, "7", &[("log.retention.ms", "1")]),
        ResponseError::InvalidRequest.code(),
        "another broker's configs go to that broker"
    );
    assert_eq!(
        set_broker_configs(&broker.bootstrap, "0", &[("log.segment.bytes", "12")]),
        ResponseError::InvalidRequest.code(),
        "below the key's minimum"
    );
    // Restarted, the broker starts from what the store says.
    drop(broker);
    let broker = BrokerProcess::start(dir.path(), &[connect.as_str(), SESSION_MS]);
    assert_eq!(
        described_config(&broker.bootstrap, 2, "dyn", "retention.ms"),
        Some(("3600000".into(), 2))
    );
}
