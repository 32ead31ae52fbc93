//! TLS listeners (SSL, SASL_SSL) with real clients: librdkafka
//! (confluent-kafka), kafka-python and KafkaJS producing and reading over
//! TLS; keystores as operators make them (PEM files, an encrypted PKCS#8
//! key, inline PEM, PKCS12 from openssl, a truststore from keytool);
//! mutual TLS with the certificate's subject mapped to the principal the
//! ACLs name; a keystore replaced on disk picked up by AlterConfigs; and
//! what is not TLS on a TLS port (clear-text requests, garbage, mangled
//! handshakes) closing that connection only.

mod common;

use std::path::Path;
use std::time::Duration;

use common::tls::{server_certificate_der, tls_client_config, tls_connect, TestCa};
use common::{raw_request, BrokerProcess, RawConnection};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest,
    MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const TIMEOUT: Duration = Duration::from_secs(30);

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Runs tests/python/tls_clients.py as `client` against `bootstrap`,
/// trusting `ca`; its stdout line and whether it passed.
fn python(client: &str, bootstrap: &str, ca: &str, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(common::require_tool("python3"))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/tls_clients.py"
        ))
        .args(["--client", client, "--bootstrap", bootstrap, "--ca", ca])
        .args(args)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (
        out.status.success(),
        format!("{stdout} (stderr: {})", stderr.lines().last().unwrap_or("")),
    )
}

/// Runs tests/node/sasl_plain.js (`BOOTSTRAP USER PASSWORD TOPIC COUNT
/// MECHANISM CA`, USER `-` for no SASL); its stdout line and whether it
/// passed.
fn kafkajs(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(common::require_tool("node"))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/node/sasl_plain.js"
        ))
        .args(args)
        .output()
        .expect("node runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
    )
}

fn owned(overrides: &[String]) -> Vec<&str> {
    overrides.iter().map(String::as_str).collect()
}

/// The latest offset of partition 0 of `topic`, asked over PLAINTEXT.
fn end_offset(bootstrap: &str, topic: &str) -> i64 {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let response: ListOffsetsResponse = raw_request(
        bootstrap,
        ApiKey::ListOffsets,
        5,
        &ListOffsetsRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(text(topic)))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)])]),
        TIMEOUT,
    );
    response.topics[0].partitions[0].offset
}

/// Whether a TLS connection (`config`) to `address` gets ApiVersions
/// answered: a refused handshake or client certificate does not.
fn tls_answered(address: &str, config: std::sync::Arc<rustls::ClientConfig>) -> bool {
    match tls_connect(address, config) {
        Ok(stream) => RawConnection::over(stream).api_versions_answered(),
        Err(_) => false,
    }
}

/// The common name of a DER certificate's subject.
fn common_name(der: &[u8]) -> String {
    use x509_parser::prelude::FromDer;
    let (_, certificate) =
        x509_parser::certificate::X509Certificate::from_der(der).expect("certificate parses");
    let name = certificate
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .expect("a CN")
        .to_string();
    name
}

/// A broker with PLAINTEXT and an SSL listener on a PEM keystore (a
/// certificate for localhost and 127.0.0.1 from a new CA in `dir`): the
/// CA, the broker, and its PLAINTEXT and SSL addresses.
fn pem_ssl_broker(dir: &Path) -> (TestCa, BrokerProcess, String, String) {
    let ca = TestCa::new(&dir.join("ca"));
    let keystore = ca.issue("broker", "/CN=localhost");
    let overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0".to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", keystore.display()),
    ];
    let mut broker = BrokerProcess::start(&dir.join("logs"), &owned(&overrides));
    let plaintext = broker.bootstrap.clone();
    let ssl = broker.listener_address("SSL");
    (ca, broker, plaintext, ssl)
}

/// One broker with PLAINTEXT and an SSL listener on a PEM keystore:
/// librdkafka, kafka-python and KafkaJS produce and read over TLS, every
/// acknowledged offset in order and read back once; clear-text requests,
/// garbage and a handshake cut short close only their own connection.
#[test]
fn ssl_listeners_serve_kafka_clients_and_close_what_is_not_tls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, mut broker, plaintext, ssl) = pem_ssl_broker(dir.path());
    let ca_pem = ca.ca_pem();
    let ca_arg = ca_pem.to_str().expect("path");

    // By hand: the handshake, then Metadata names the SSL listener.
    let stream = tls_connect(&ssl, tls_client_config(&ca_pem, None)).expect("handshake");
    assert_eq!(common_name(&server_certificate_der(&stream)), "localhost");
    let mut connection = RawConnection::over(stream);
    let metadata: MetadataResponse = connection
        .request(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(Some(Vec::new())),
        )
        .expect("metadata over TLS");
    let ssl_port: i32 = ssl
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    assert_eq!(
        metadata.brokers.iter().map(|b| b.port).collect::<Vec<_>>(),
        vec![ssl_port]
    );

    // Clear text on the TLS port: that connection closes, with a log line.
    assert!(!RawConnection::open(&ssl).api_versions_answered());
    broker.wait_for_line("TLS handshake failed", TIMEOUT);
    // A ClientHello cut short, then the client goes away.
    {
        use std::io::Write;
        let hello = client_hello(&ca_pem);
        let mut socket = std::net::TcpStream::connect(&ssl).expect("connect");
        socket
            .write_all(&hello[..hello.len() / 2])
            .expect("half a hello");
    }
    // ... and neither hurt the others.
    assert!(RawConnection::open(&plaintext).api_versions_answered());
    assert!(tls_answered(&ssl, tls_client_config(&ca_pem, None)));

    // Real clients: every acknowledged offset, read back in order.
    let (ok, line) = python(
        "confluent",
        &ssl,
        ca_arg,
        &["--count", "3", "--tag", "rdkafka", "events"],
    );
    assert!(ok, "confluent-kafka over SSL: {line}");
    assert!(
        line.starts_with("OK produced 0 1 2 consumed 0 1 2"),
        "{line}"
    );
    let (ok, line) = python(
        "kafka-python",
        &ssl,
        ca_arg,
        &["--count", "3", "--tag", "kp", "events"],
    );
    assert!(ok, "kafka-python over SSL: {line}");
    assert!(
        line.starts_with("OK produced 3 4 5 consumed 3 4 5"),
        "{line}"
    );
    let (ok, line) = kafkajs(&[&ssl, "-", "-", "events", "4", "plain", ca_arg]);
    assert!(ok, "KafkaJS over SSL: {line}");
    assert_eq!(line, "OK 6");
    assert_eq!(end_offset(&plaintext, "events"), 10);
}

/// The first flight of a real TLS client, for mangling.
fn client_hello(ca: &Path) -> Vec<u8> {
    let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let mut connection =
        rustls::ClientConnection::new(tls_client_config(ca, None), name).expect("client");
    let mut hello = Vec::new();
    while connection.wants_write() {
        connection.write_tls(&mut hello).expect("hello");
    }
    hello
}

fn create_acls(bootstrap: &str, creations: Vec<AclCreation>) {
    let response: CreateAclsResponse = raw_request(
        bootstrap,
        ApiKey::CreateAcls,
        3,
        &CreateAclsRequest::default().with_creations(creations),
        TIMEOUT,
    );
    assert!(response.results.iter().all(|r| r.error_code == 0));
}

fn allow(principal: &str, resource_type: i8, name: &str, operation: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(text(name))
        .with_resource_pattern_type(3)
        .with_principal(text(principal))
        .with_host(text("*"))
        .with_operation(operation)
        .with_permission_type(3)
}

/// `ssl.client.auth=required` on PKCS12 stores (the keystore from
/// `openssl pkcs12 -export`, the truststore from keytool): the
/// certificate's subject, through `ssl.principal.mapping.rules`, is the
/// principal the ACLs name; a client without a certificate, or with one
/// from another CA, cannot connect.
#[test]
fn mutual_tls_names_the_principal_the_acls_authorize() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new(&dir.path().join("ca"));
    ca.issue("broker", "/CN=localhost");
    let alice = ca.issue("alice", "/O=ferrolog/OU=eng/CN=Alice");
    let bob = ca.issue("bob", "/O=ferrolog/OU=eng/CN=bob");
    let strangers = TestCa::new(&dir.path().join("other-ca"));
    let mallory = strangers.issue("mallory", "/O=ferrolog/OU=eng/CN=alice");
    let keystore = ca.pkcs12_keystore("broker", "store-secret");
    let truststore = ca.pkcs12_truststore("trust-secret");
    let overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0".to_string(),
        "ssl.keystore.type=PKCS12".to_string(),
        format!("ssl.keystore.location={}", keystore.display()),
        "ssl.keystore.password=store-secret".to_string(),
        "ssl.truststore.type=PKCS12".to_string(),
        format!("ssl.truststore.location={}", truststore.display()),
        "ssl.truststore.password=trust-secret".to_string(),
        "ssl.client.auth=required".to_string(),
        "ssl.principal.mapping.rules=RULE:^CN=(.*?),OU=eng,O=ferrolog$/$1/L,DEFAULT".to_string(),
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer".to_string(),
        // PLAINTEXT sets the test up.
        "super.users=User:ANONYMOUS".to_string(),
    ];
    let mut broker = BrokerProcess::start(&dir.path().join("logs"), &owned(&overrides));
    let plaintext = broker.bootstrap.clone();
    let ssl = broker.listener_address("SSL");
    // Topic (2) WRITE (4), READ (3), DESCRIBE (8) for alice only; the
    // topic exists (creating it would need CREATE).
    common::cluster::create_topic(&plaintext, "secured", 1);
    create_acls(
        &plaintext,
        [4, 3, 8]
            .into_iter()
            .map(|op| allow("User:alice", 2, "secured", op))
            .chain([allow("User:alice", 3, "tls-alice", 3)])
            .collect(),
    );
    let ca_pem = ca.ca_pem();
    let ca_arg = ca_pem.to_str().expect("path");
    let as_client = |name: &str| {
        let dir = &ca.dir;
        let cert = dir.join(format!("{name}.pem"));
        let key = dir.join(format!("{name}.key"));
        python(
            "confluent",
            &ssl,
            ca_arg,
            &[
                "--cert",
                cert.to_str().expect("path"),
                "--key",
                key.to_str().expect("path"),
                "--count",
                "2",
                "--tag",
                name,
                "secured",
            ],
        )
    };
    // CN=Alice maps to alice (lower-cased): allowed.
    let (ok, line) = as_client("alice");
    assert!(ok, "alice over mutual TLS: {line}");
    assert!(line.starts_with("OK produced 0 1 consumed 0 1"), "{line}");
    // kafka-python as alice too.
    let (ok, line) = python(
        "kafka-python",
        &ssl,
        ca_arg,
        &[
            "--cert",
            ca.dir.join("alice.pem").to_str().expect("path"),
            "--key",
            ca.dir.join("alice.key").to_str().expect("path"),
            "--count",
            "2",
            "--tag",
            "alice-kp",
            "secured",
        ],
    );
    assert!(ok, "kafka-python as alice: {line}");
    assert!(line.starts_with("OK produced 2 3 consumed 2 3"), "{line}");
    // bob is authenticated but not authorized.
    let (ok, line) = as_client("bob");
    assert!(!ok, "bob has no ACL: {line}");
    assert!(
        line.contains("TOPIC_AUTHORIZATION_FAILED") || line.contains("Authorization"),
        "{line}"
    );
    assert_eq!(end_offset(&plaintext, "secured"), 4, "bob wrote nothing");
    // No certificate, or one from a CA the broker does not trust.
    assert!(!tls_answered(&ssl, tls_client_config(&ca_pem, None)));
    let mallory_config = tls_client_config(&ca_pem, Some(&mallory));
    assert!(!tls_answered(&ssl, mallory_config));
    broker.wait_for_line("TLS handshake failed", TIMEOUT);
    // The raw client with alice's keystore still gets in.
    assert!(tls_answered(&ssl, tls_client_config(&ca_pem, Some(&alice))));
    let _ = bob;
}

/// An encrypted PKCS#8 key with `ssl.key.password`, and a second listener
/// whose key and chain are inline (`ssl.keystore.key`,
/// `ssl.keystore.certificate.chain`) with `ssl.client.auth=requested`:
/// a client without a certificate is let in (as User:ANONYMOUS), one with
/// a trusted certificate too. A wrong key password stops the broker at
/// start-up with the reason.
#[test]
fn encrypted_and_inline_pem_keystores_load() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new(&dir.path().join("ca"));
    ca.issue("broker", "/CN=localhost");
    let alice = ca.issue("alice", "/CN=alice");
    let encrypted = ca.encrypted_keystore("broker", "key-secret");
    let key = std::fs::read_to_string(ca.dir.join("broker.key")).expect("key");
    let chain = std::fs::read_to_string(ca.dir.join("broker.pem")).expect("chain");
    let ca_text = std::fs::read_to_string(ca.ca_pem()).expect("ca");
    let base = vec![
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,INLINE://127.0.0.1:0".to_string(),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,INLINE:SSL".to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!(
            "listener.name.ssl.ssl.keystore.location={}",
            encrypted.display()
        ),
        format!("listener.name.inline.ssl.keystore.key={key}"),
        format!("listener.name.inline.ssl.keystore.certificate.chain={chain}"),
        "listener.name.inline.ssl.truststore.type=PEM".to_string(),
        format!("listener.name.inline.ssl.truststore.certificates={ca_text}"),
        "listener.name.inline.ssl.client.auth=requested".to_string(),
    ];
    let mut overrides = base.clone();
    overrides.push("ssl.key.password=key-secret".to_string());
    let mut broker = BrokerProcess::start(&dir.path().join("logs"), &owned(&overrides));
    let ssl = broker.listener_address("SSL");
    let inline = broker.listener_address("INLINE");
    let ca_pem = ca.ca_pem();
    assert!(tls_answered(&ssl, tls_client_config(&ca_pem, None)));
    assert!(tls_answered(&inline, tls_client_config(&ca_pem, None)));
    assert!(tls_answered(
        &inline,
        tls_client_config(&ca_pem, Some(&alice))
    ));
    drop(broker);

    // The wrong password: the broker does not start, and says why.
    let mut wrong = base;
    wrong.push("ssl.key.password=not-it".to_string());
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"));
    command.args([
        "--config",
        concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties"),
    ]);
    command.args([
        "--override",
        &format!("log.dirs={}", dir.path().join("logs2").display()),
        "--override",
        "http.listener=http://127.0.0.1:0",
    ]);
    for o in &wrong {
        command.args(["--override", o]);
    }
    let out = command.output().expect("ferrolog runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot be decrypted with ssl.key.password"),
        "{stderr}"
    );
}

fn alter_broker(bootstrap: &str, key: &str, value: &str) -> (i16, Option<String>) {
    let response: IncrementalAlterConfigsResponse = raw_request(
        bootstrap,
        ApiKey::IncrementalAlterConfigs,
        1,
        &IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(text("0"))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(text(key))
                    .with_config_operation(0)
                    .with_value(Some(text(value)))]),
        ]),
        TIMEOUT,
    );
    let result = &response.responses[0];
    (
        result.error_code,
        result.error_message.as_ref().map(|m| m.to_string()),
    )
}

/// A keystore replaced on disk is not used until an AlterConfigs names
/// it (the same path), as Kafka does; then new connections get the new
/// certificate while open ones go on. A keystore that does not load is
/// refused with INVALID_REQUEST and the one in service stays.
#[test]
fn a_keystore_replaced_on_disk_is_reloaded_by_alter_configs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new(&dir.path().join("ca"));
    let first = ca.issue("first", "/CN=first");
    let second = ca.issue("second", "/CN=second");
    let keystore = dir.path().join("keystore.pem");
    std::fs::copy(&first, &keystore).expect("keystore");
    let overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0".to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", keystore.display()),
    ];
    let mut broker = BrokerProcess::start(&dir.path().join("logs"), &owned(&overrides));
    let plaintext = broker.bootstrap.clone();
    let ssl = broker.listener_address("SSL");
    let ca_pem = ca.ca_pem();
    let served = || {
        let stream = tls_connect(&ssl, tls_client_config(&ca_pem, None)).expect("handshake");
        common_name(&server_certificate_der(&stream))
    };
    assert_eq!(served(), "first");
    let open = tls_connect(&ssl, tls_client_config(&ca_pem, None)).expect("handshake");
    let mut open = RawConnection::over(open);

    std::fs::copy(&second, &keystore).expect("replace");
    assert_eq!(served(), "first", "not before an AlterConfigs");
    let location = keystore.to_str().expect("path");
    let (code, message) = alter_broker(
        &plaintext,
        "listener.name.ssl.ssl.keystore.location",
        location,
    );
    assert_eq!(code, 0, "{message:?}");
    broker.wait_for_line("TLS keystore and truststore reloaded", TIMEOUT);
    assert_eq!(served(), "second");
    assert!(open.api_versions_answered(), "an open connection goes on");

    std::fs::write(&keystore, "not a keystore").expect("break it");
    let (code, message) = alter_broker(
        &plaintext,
        "listener.name.ssl.ssl.keystore.location",
        location,
    );
    assert_eq!(code, 42, "INVALID_REQUEST: {message:?}");
    assert!(
        message.as_deref().unwrap_or("").contains("keystore"),
        "{message:?}"
    );
    assert_eq!(served(), "second", "the keystore in service stays");
}

/// SASL_SSL: SASL/PLAIN inside TLS, with librdkafka, kafka-python and
/// KafkaJS; a wrong password is refused.
#[test]
fn sasl_ssl_authenticates_inside_tls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new(&dir.path().join("ca"));
    let keystore = ca.issue("broker", "/CN=localhost");
    let overrides = vec![
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0".to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", keystore.display()),
        "sasl.enabled.mechanisms=PLAIN".to_string(),
        r#"listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#.to_string(),
    ];
    let mut broker = BrokerProcess::start(&dir.path().join("logs"), &owned(&overrides));
    let plaintext = broker.bootstrap.clone();
    let sasl_ssl = broker.listener_address("SASL_SSL");
    let ca_pem = ca.ca_pem();
    let ca_arg = ca_pem.to_str().expect("path");
    let sasl = |client: &str, password: &str, tag: &str| {
        python(
            client,
            &sasl_ssl,
            ca_arg,
            &[
                "--protocol",
                "SASL_SSL",
                "--user",
                "alice",
                "--password",
                password,
                "--count",
                "2",
                "--tag",
                tag,
                "signed",
            ],
        )
    };
    let (ok, line) = sasl("confluent", "alice-secret", "rdkafka");
    assert!(ok, "confluent-kafka over SASL_SSL: {line}");
    assert!(line.starts_with("OK produced 0 1 consumed 0 1"), "{line}");
    let (ok, line) = sasl("kafka-python", "alice-secret", "kp");
    assert!(ok, "kafka-python over SASL_SSL: {line}");
    assert!(line.starts_with("OK produced 2 3 consumed 2 3"), "{line}");
    let (ok, line) = kafkajs(&[
        &sasl_ssl,
        "alice",
        "alice-secret",
        "signed",
        "3",
        "plain",
        ca_arg,
    ]);
    assert!(ok, "KafkaJS over SASL_SSL: {line}");
    assert_eq!(line, "OK 4");
    let (ok, line) = sasl("confluent", "wrong", "refused");
    assert!(!ok, "a wrong password: {line}");
    broker.wait_for_line("Authentication failed", TIMEOUT);
    assert_eq!(end_offset(&plaintext, "signed"), 7);
}

/// Mangled handshakes: every prefix class and bit flip of a real
/// ClientHello, and random bytes, each on its own connection to the TLS
/// port; afterwards the broker still serves TLS and PLAINTEXT clients.
#[test]
fn mangled_tls_handshakes_close_only_their_connection() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, mut broker, plaintext, ssl) = pem_ssl_broker(dir.path());
    let hello = client_hello(&ca.ca_pem());
    let send = |bytes: &[u8]| {
        use std::io::{Read, Write};
        let mut socket = std::net::TcpStream::connect(&ssl).expect("connect");
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let _ = socket.write_all(bytes);
        let _ = socket.shutdown(std::net::Shutdown::Write);
        // The broker answers with an alert or closes; never hangs.
        let mut sink = Vec::new();
        let _ = socket.read_to_end(&mut sink);
    };
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    let length = hello.len();
    let strategy = (
        0..length,
        any::<u8>(),
        0..length,
        prop::collection::vec(any::<u8>(), 0..512),
    );
    runner
        .run(&strategy, |(flip_at, mask, cut, random)| {
            let mut flipped = hello.clone();
            flipped[flip_at] ^= mask | 1;
            send(&flipped);
            send(&hello[..cut]);
            send(&random);
            Ok(())
        })
        .expect("every case ran");
    assert!(broker.is_running(), "the broker survived");
    assert!(tls_answered(&ssl, tls_client_config(&ca.ca_pem(), None)));
    assert!(RawConnection::open(&plaintext).api_versions_answered());
}

/// A cluster broker's lines for a SASL_SSL inter-broker listener: a PEM
/// keystore for localhost issued by `ca`, SASL/PLAIN with the users
/// `broker` (the brokers' own login) and `alice`, and the ACL authorizer
/// (everyone allowed where no ACL is found).
fn sasl_ssl_broker_lines(ca: &TestCa, listeners: &str) -> Vec<String> {
    let keystore = ca.issue("broker", "/CN=localhost");
    let jaas = r#"listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";"#;
    vec![
        listeners.to_string(),
        "inter.broker.listener.name=SASL_SSL".to_string(),
        "sasl.enabled.mechanisms=PLAIN".to_string(),
        "sasl.mechanism.inter.broker.protocol=PLAIN".to_string(),
        jaas.to_string(),
        "ssl.keystore.type=PEM".to_string(),
        format!("ssl.keystore.location={}", keystore.display()),
        "ssl.truststore.type=PEM".to_string(),
        format!("ssl.truststore.location={}", ca.ca_pem().display()),
        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer".to_string(),
        "allow.everyone.if.no.acl.found=true".to_string(),
    ]
}

/// Three ZooKeeper brokers reach each other on a SASL_SSL inter-broker
/// listener: TLS checked against the truststore, SASL/PLAIN as
/// `User:broker`. Once the cluster's ACLs give CLUSTER_ACTION to
/// `User:broker` alone, replication (Fetch with a replica id) and the
/// controller's requests only work authenticated: an acks=all producer
/// over SASL_SSL gets every record acknowledged, every replica joins the
/// ISR, and the records read back in order.
#[test]
fn a_cluster_replicates_over_a_sasl_ssl_inter_broker_listener() {
    use common::cluster::{create_replicated_topic, Cluster};
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new(&dir.path().join("ca"));
    let ca_pem = ca.ca_pem();
    let extra = sasl_ssl_broker_lines(
        &ca,
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
    );
    let mut cluster = Cluster::start_with(3, &owned(&extra));
    let plaintext = cluster.bootstrap(0);
    // CLUSTER_ACTION (9) for User:broker only; ANONYMOUS may CREATE (5)
    // and DESCRIBE (8) the cluster, so the test can make its topic.
    let on_cluster = |principal: &str, operation: i8| {
        AclCreation::default()
            .with_resource_type(4)
            .with_resource_name(text("kafka-cluster"))
            .with_resource_pattern_type(3)
            .with_principal(text(principal))
            .with_host(text("*"))
            .with_operation(operation)
            .with_permission_type(3)
    };
    create_acls(
        &plaintext,
        vec![
            on_cluster("User:broker", 9),
            on_cluster("User:ANONYMOUS", 5),
            on_cluster("User:ANONYMOUS", 8),
        ],
    );
    // Every broker follows the ACL changes before the topic is made.
    for id in 0..3 {
        let bootstrap = cluster.bootstrap(id);
        let deadline = std::time::Instant::now() + TIMEOUT;
        loop {
            let response: kafka_protocol::messages::DescribeAclsResponse = raw_request(
                &bootstrap,
                ApiKey::DescribeAcls,
                3,
                &kafka_protocol::messages::DescribeAclsRequest::default()
                    .with_resource_type_filter(4)
                    .with_resource_name_filter(None)
                    .with_pattern_type_filter(1)
                    .with_principal_filter(None)
                    .with_host_filter(None)
                    .with_operation(1)
                    .with_permission_type(1),
                TIMEOUT,
            );
            let count: usize = response.resources.iter().map(|r| r.acls.len()).sum();
            if count == 3 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "broker {id} has {count} ACLs"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    create_replicated_topic(&plaintext, "guarded", 1, 3);
    let sasl_ssl = cluster
        .brokers
        .get_mut(&0)
        .expect("broker 0")
        .listener_address("SASL_SSL");
    let (ok, line) = python(
        "confluent",
        &sasl_ssl,
        ca_pem.to_str().expect("path"),
        &[
            "--protocol",
            "SASL_SSL",
            "--user",
            "alice",
            "--password",
            "alice-secret",
            "--count",
            "20",
            "--tag",
            "replicated",
            "guarded",
        ],
    );
    assert!(ok, "acks=all over SASL_SSL: {line}");
    let offsets: Vec<String> = (0..20).map(|i| i.to_string()).collect();
    assert!(
        line.starts_with(&format!(
            "OK produced {} consumed {}",
            offsets.join(" "),
            offsets.join(" ")
        )),
        "{line}"
    );
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let isrs = cluster.isrs(0, "guarded");
        if isrs.get(&0).is_some_and(|isr| isr.len() == 3) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "ISR {isrs:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    // The controller's requests and the followers' fetches came in as
    // User:broker over SASL_SSL: at every broker but the controller, which
    // nothing sends controller requests to.
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let logged = cluster
            .brokers
            .values_mut()
            .map(|b| b.count_lines("authenticated as User:broker on SASL_SSL"))
            .filter(|&n| n > 0)
            .count();
        if logged >= 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{logged} brokers saw User:broker"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Three ZooKeeper brokers with one listener, SASL_SSL, and nothing in
/// clear: clients, replica fetchers and the controller all authenticate
/// over TLS. tests/python/secure_checker.py (librdkafka, acks=all,
/// idempotent) sends ids to 3 partitions of 3 replicas while the leader of
/// partition 0, then the controller, is SIGKILLed and restarted. Every
/// acknowledged id is read back once, at its acknowledged offset, in order,
/// and every ISR fills up again after each kill.
#[test]
fn a_sasl_ssl_only_cluster_loses_nothing_when_the_leader_and_the_controller_are_killed() {
    use common::cluster::Cluster;
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = TestCa::new(&dir.path().join("ca"));
    let ca_pem = ca.ca_pem();
    let mut extra = sasl_ssl_broker_lines(&ca, "listeners=SASL_SSL://127.0.0.1:0");
    extra.push("super.users=User:broker".to_string());
    let mut cluster = Cluster::start_with(3, &owned(&extra));
    let topic = "secured";
    let mut checker = std::process::Command::new(common::require_tool("python3"))
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/secure_checker.py"
        ))
        .args(["--bootstrap", &cluster.bootstrap(1)])
        .args(["--ca", ca_pem.to_str().expect("path")])
        .args(["--user", "alice", "--password", "alice-secret", topic])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let stdout = checker.stdout.take().expect("stdout is piped");
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let acked = std::cell::Cell::new(0);
    // Reads the checker's lines until `until` holds for one, or panics.
    let next_line = |until: &dyn Fn(&str, usize) -> bool, what: &str| -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("the checker never showed {what}"));
            if let Some(n) = line.strip_prefix("ACKED ") {
                acked.set(n.parse().expect("a count"));
            }
            assert!(!line.starts_with("FAILED"), "{line}");
            if until(&line, acked.get()) {
                return line;
            }
        }
    };
    next_line(&|line, _| line == "READY", "READY");
    let state = |partition: i32| -> serde_json::Value {
        let path = format!("/brokers/topics/{topic}/partitions/{partition}/state");
        let bytes = cluster.read_znodes(&[path])[0]
            .clone()
            .expect("state znode");
        serde_json::from_slice(&bytes).expect("state JSON")
    };
    let full_isrs = |cluster: &Cluster| {
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            let paths: Vec<String> = (0..3)
                .map(|p| format!("/brokers/topics/{topic}/partitions/{p}/state"))
                .collect();
            let isrs: Vec<usize> = cluster
                .read_znodes(&paths)
                .iter()
                .map(|bytes| {
                    bytes
                        .as_deref()
                        .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
                        .and_then(|v| v["isr"].as_array().map(Vec::len))
                        .unwrap_or(0)
                })
                .collect();
            if isrs.iter().all(|&n| n == 3) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "ISR sizes {isrs:?}");
            std::thread::sleep(Duration::from_millis(300));
        }
    };
    let before = next_line(&|_, n| n >= 300, "300 acknowledgements");
    eprintln!("before the kills: {before}");
    let leader = state(0)["leader"].as_i64().expect("a leader") as i32;
    eprintln!("SIGKILL broker {leader}, the leader of {topic}-0");
    cluster.brokers.remove(&leader).expect("running").kill();
    std::thread::sleep(Duration::from_secs(5));
    cluster.start_broker(leader);
    full_isrs(&cluster);
    let at = acked.get();
    next_line(&|_, n| n >= at + 300, "progress after the leader kill");
    let controller = {
        let bytes = cluster.read_znodes(&["/controller".to_string()])[0]
            .clone()
            .expect("a controller");
        let value: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        value["brokerid"].as_i64().expect("brokerid") as i32
    };
    eprintln!("SIGKILL broker {controller}, the controller");
    cluster.brokers.remove(&controller).expect("running").kill();
    std::thread::sleep(Duration::from_secs(5));
    cluster.start_broker(controller);
    full_isrs(&cluster);
    let at = acked.get();
    next_line(&|_, n| n >= at + 300, "progress after the controller kill");
    checker
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(b"stop\n")
        .expect("the checker reads stdin");
    let verdict = next_line(&|line, _| line.starts_with("OK "), "its verdict");
    eprintln!("checker: {verdict}");
    assert!(
        verdict.contains(" lost 0 misplaced 0 duplicates 0 reordered 0"),
        "{verdict}"
    );
    assert!(checker.wait().expect("the checker exits").success());
    // Replication and the controller's requests were authenticated.
    let logged: usize = cluster
        .brokers
        .values_mut()
        .map(|b| b.count_lines("authenticated as User:broker on SASL_SSL"))
        .sum();
    assert!(logged > 0, "no broker saw User:broker");
}
