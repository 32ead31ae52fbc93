//! More than one listener: every `listeners` entry is bound with its own
//! security protocol, and Metadata, FindCoordinator and DescribeCluster
//! answer with the endpoints of the listener the client connected to, as
//! Kafka does. In a ZooKeeper cluster brokers register every listener
//! (`/brokers/ids/<id>` `endpoints` and `listener_security_protocol_map`)
//! and reach each other on the inter-broker listener while clients use
//! SASL beside it.

mod common;

use std::time::Duration;

use common::cluster::{create_replicated_topic, Cluster};
use common::{client_config, BrokerProcess, RawConnection};
use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::Message;

const JAAS: &str = r#"listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#;
const TWO_LISTENERS: &str = "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0";

fn sasl(bootstrap: &str) -> rdkafka::config::ClientConfig {
    let mut config = client_config(bootstrap);
    config
        .set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", "PLAIN")
        .set("sasl.username", "alice")
        .set("sasl.password", "alice-secret");
    config
}

/// The brokers' ports as Metadata on a PLAINTEXT connection lists them.
fn plaintext_metadata_ports(bootstrap: &str) -> Vec<u16> {
    let mut connection = RawConnection::open(bootstrap);
    let response: MetadataResponse = connection
        .request(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(Some(Vec::new())),
        )
        .expect("metadata");
    let mut ports: Vec<u16> = response.brokers.iter().map(|b| b.port as u16).collect();
    ports.sort();
    ports
}

/// The brokers' ports as librdkafka on the SASL listener sees them.
fn sasl_metadata_ports(bootstrap: &str) -> Vec<u16> {
    let client: BaseConsumer = sasl(bootstrap).create().expect("client");
    let metadata = client
        .fetch_metadata(None, Duration::from_secs(30))
        .expect("metadata over SASL");
    let mut ports: Vec<u16> = metadata.brokers().iter().map(|b| b.port() as u16).collect();
    ports.sort();
    ports
}

fn port_of(address: &str) -> u16 {
    address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("host:port")
}

/// One broker, PLAINTEXT and SASL_PLAINTEXT: each listener serves its own
/// protocol and tells clients its own port; a librdkafka producer and a
/// consumer group on the SASL listener write and read (the group's
/// coordinator, too, is found on that listener).
#[test]
fn every_listener_is_bound_and_answers_with_its_own_endpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = BrokerProcess::start(
        dir.path(),
        &[TWO_LISTENERS, "sasl.enabled.mechanisms=PLAIN", JAAS],
    );
    let plaintext = broker.bootstrap.clone();
    let sasl_address = broker.listener_address("SASL_PLAINTEXT");
    assert_ne!(plaintext, sasl_address);
    assert_eq!(
        plaintext_metadata_ports(&plaintext),
        vec![port_of(&plaintext)]
    );
    assert_eq!(
        sasl_metadata_ports(&sasl_address),
        vec![port_of(&sasl_address)]
    );
    // A request before SASL authentication on the SASL port is refused.
    let mut unauthenticated = RawConnection::open(&sasl_address);
    let refused: Option<MetadataResponse> = unauthenticated.request(
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    );
    assert!(refused.is_none(), "the SASL listener closed the connection");
    let producer: FutureProducer = sasl(&sasl_address)
        .set("message.timeout.ms", "30000")
        .create()
        .expect("producer");
    let offsets: Vec<i64> = common::block_on(async {
        let mut offsets = Vec::new();
        for i in 0..20 {
            let payload = format!("r{i}");
            let sent = producer
                .send(
                    FutureRecord::<(), _>::to("two-listeners").payload(&payload),
                    Duration::from_secs(30),
                )
                .await
                .expect("acknowledged over SASL");
            offsets.push(sent.offset);
        }
        offsets
    });
    assert_eq!(offsets, (0..20).collect::<Vec<i64>>());
    let consumer: BaseConsumer = sasl(&sasl_address)
        .set("group.id", "two-listeners-group")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&["two-listeners"]).expect("subscribed");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut read = Vec::new();
    while read.len() < 20 && std::time::Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(500)) {
            read.push(message.expect("a record").offset());
        }
    }
    assert_eq!(
        read,
        (0..20).collect::<Vec<i64>>(),
        "read once, in order, over SASL"
    );
    consumer
        .commit_consumer_state(rdkafka::consumer::CommitMode::Sync)
        .expect("committed through the coordinator found on the SASL listener");
}

/// Two ZooKeeper brokers with PLAINTEXT (inter-broker) and
/// SASL_PLAINTEXT: each registers both listeners; Metadata on either
/// listener lists both brokers at that listener's ports; an acks=all
/// producer on SASL writes a replicated topic (the follower fetches over
/// PLAINTEXT) and a consumer on SASL reads it back.
#[test]
fn a_cluster_serves_sasl_clients_beside_its_plaintext_inter_broker_listener() {
    let mut cluster =
        Cluster::start_with(2, &[TWO_LISTENERS, "sasl.enabled.mechanisms=PLAIN", JAAS]);
    let mut sasl_ports = Vec::new();
    let mut plaintext_ports = Vec::new();
    for id in 0..2 {
        let broker = cluster.brokers.get_mut(&id).expect("broker");
        sasl_ports.push(port_of(&broker.listener_address("SASL_PLAINTEXT")));
        plaintext_ports.push(port_of(&broker.bootstrap));
    }
    sasl_ports.sort();
    plaintext_ports.sort();
    let registrations = cluster.read_znodes(&["/brokers/ids/0".to_string()]);
    let registration =
        String::from_utf8(registrations[0].clone().expect("registered")).expect("utf8");
    assert!(
        registration.contains(r#""endpoints":["PLAINTEXT://127.0.0.1:"#)
            && registration.contains(",\"SASL_PLAINTEXT://127.0.0.1:")
            && registration.contains(r#""listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SASL_PLAINTEXT":"SASL_PLAINTEXT"}"#),
        "{registration}"
    );
    let sasl_bootstrap = format!("127.0.0.1:{}", sasl_ports[0]);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while sasl_metadata_ports(&sasl_bootstrap) != sasl_ports {
        assert!(
            std::time::Instant::now() < deadline,
            "both brokers never listed on SASL"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(
        plaintext_metadata_ports(&cluster.bootstrap(0)),
        plaintext_ports
    );
    create_replicated_topic(&cluster.bootstrap(0), "sasl-replicated", 2, 2);
    let producer: FutureProducer = sasl(&sasl_bootstrap)
        .set("acks", "all")
        .set("message.timeout.ms", "60000")
        .create()
        .expect("producer");
    common::block_on(async {
        for i in 0..40 {
            let payload = format!("s{i}");
            producer
                .send(
                    FutureRecord::to("sasl-replicated")
                        .key(&payload)
                        .payload(&payload),
                    Duration::from_secs(60),
                )
                .await
                .expect("acks=all over SASL");
        }
    });
    // Both replicas of each partition in the ISR: replication ran over
    // the PLAINTEXT inter-broker listener.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let isrs = cluster.isrs(0, "sasl-replicated");
        if isrs.len() == 2 && isrs.values().all(|isr| isr.len() == 2) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "ISRs {isrs:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let consumer: BaseConsumer = sasl(&sasl_bootstrap)
        .set("group.id", "sasl-readers")
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer
        .subscribe(&["sasl-replicated"])
        .expect("subscribed");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut read = Vec::new();
    while read.len() < 40 && std::time::Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(500)) {
            let message = message.expect("a record");
            read.push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned());
        }
    }
    read.sort();
    let mut expected: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
    expected.sort();
    assert_eq!(read, expected, "every record once");
}
