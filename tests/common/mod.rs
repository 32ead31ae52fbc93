//! Test fixtures shared by the integration tests: a real `ferrolog` broker
//! process on 127.0.0.1 with a port of its own and a temporary `log.dirs`,
//! that tests can SIGKILL, SIGTERM and restart on the same data.
#![allow(dead_code)]

pub mod cluster;
pub mod idempotence;
pub mod tls;
pub mod zookeeper;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A broker process. Dropping it SIGKILLs the process.
pub struct BrokerProcess {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub bootstrap: String,
    pub log_dir: PathBuf,
    /// Every stderr line so far (the broker logs there).
    lines: mpsc::Receiver<String>,
    pub seen: Vec<String>,
    overrides: Vec<String>,
}

impl BrokerProcess {
    /// Start a broker on `log_dir` with `overrides` (`key=value`) on top of
    /// the shipped `config/server.properties`.
    pub fn start(log_dir: &Path, overrides: &[&str]) -> BrokerProcess {
        Self::start_with_env(log_dir, overrides, &[])
    }

    /// `start` with extra environment variables (`FAILPOINTS`, for one).
    pub fn start_with_env(
        log_dir: &Path,
        overrides: &[&str],
        env: &[(&str, &str)],
    ) -> BrokerProcess {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Self::start_owned(log_dir, overrides, env, None)
    }

    /// `start` with the soft open-file limit (RLIMIT_NOFILE) set to `soft`,
    /// as a shell's `ulimit -Sn` would.
    pub fn start_with_nofile(log_dir: &Path, overrides: &[&str], soft: u64) -> BrokerProcess {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Self::start_owned(log_dir, overrides, &[], Some((soft, None)))
    }

    /// `start` with both open-file limits lowered to `limit` (the hard one
    /// too, so the broker cannot raise it), as `ulimit -n` would.
    pub fn start_with_hard_nofile(log_dir: &Path, overrides: &[&str], limit: u64) -> BrokerProcess {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Self::start_owned(log_dir, overrides, &[], Some((limit, Some(limit))))
    }

    fn start_owned(
        log_dir: &Path,
        overrides: Vec<String>,
        env: &[(&str, &str)],
        nofile: Option<(u64, Option<u64>)>,
    ) -> BrokerProcess {
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/config/server.properties");
        let mut command = Command::new(env!("CARGO_BIN_EXE_ferrolog"));
        command
            .args(["--config", config])
            .args(["--override", &format!("log.dirs={}", log_dir.display())])
            .args(["--override", "listeners=PLAINTEXT://127.0.0.1:0"])
            // Brokers run side by side: none may take http.listener's 9644.
            .args(["--override", "http.listener=http://127.0.0.1:0"]);
        for o in &overrides {
            command.args(["--override", o]);
        }
        command.envs(env.iter().copied());
        if let Some((soft, hard)) = nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let mut limit = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
                    if let Some(hard) = hard {
                        limit.rlim_max = hard.min(limit.rlim_max);
                    }
                    limit.rlim_cur = soft.min(limit.rlim_max);
                    libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
                    Ok(())
                });
            }
        }
        let mut child = command
            .env(
                "RUST_LOG",
                std::env::var("FERROLOG_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the ferrolog binary starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var("FERROLOG_TEST_ECHO").is_ok() {
                    eprintln!("[broker] {line}");
                }
                // Keep draining even when nobody listens any more.
                let _ = tx.send(line);
            }
        });
        let mut broker = BrokerProcess {
            child,
            bootstrap: String::new(),
            log_dir: log_dir.to_path_buf(),
            lines,
            seen: Vec::new(),
            overrides,
        };
        let line = broker.wait_for_line("started: listening on", Duration::from_secs(60));
        let address = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .expect("the start line names the address");
        broker.bootstrap = address.to_string();
        broker
    }

    /// Wait (bounded) for a stderr line containing `needle`.
    pub fn wait_for_line(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        if let Some(line) = self.seen.iter().find(|l| l.contains(needle)) {
            return line.clone();
        }
        while Instant::now() < deadline {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        panic!(
                            "the broker exited ({status}) before logging {needle:?}: {:?}",
                            self.seen
                        );
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!(
            "the broker did not log {needle:?} within {timeout:?}: {:?}",
            self.seen
        );
    }

    /// The address listener `name` is bound to, from the broker's
    /// "listener NAME (PROTOCOL) bound to ADDRESS" line.
    pub fn listener_address(&mut self, name: &str) -> String {
        let line = self.wait_for_line(&format!("listener {name} ("), Duration::from_secs(30));
        line.rsplit("bound to ")
            .next()
            .map(|address| address.trim().to_string())
            .expect("the line names the address")
    }

    /// Lines logged so far.
    pub fn log_lines(&mut self) -> Vec<String> {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen.clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, as a crash.
    pub fn kill(mut self) -> PathBuf {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log_dir.clone()
    }

    /// SIGTERM and wait for a clean exit; panics if the exit is not 0.
    pub fn terminate(mut self) -> PathBuf {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(
                    status.success(),
                    "broker exited with {status}: {:?}",
                    self.log_lines()
                );
                return self.log_dir.clone();
            }
            assert!(
                Instant::now() < deadline,
                "broker did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Start again on the same log dir with the same overrides.
    pub fn restart_on(log_dir: &Path, overrides: &[&str]) -> BrokerProcess {
        Self::start(log_dir, overrides)
    }

    /// Peak resident memory (VmHWM) and current (VmRSS), in KiB.
    pub fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmHWM:"), field("VmRSS:"))
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Wait (bounded) for the process to exit by itself; its status.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the broker did not exit within {timeout:?}: {:?}",
                self.log_lines()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Log lines so far that contain `needle`.
    pub fn count_lines(&mut self, needle: &str) -> usize {
        self.log_lines()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fail loudly when a tool the tests rely on is missing: scripts/test.sh
/// installs them, so a missing one is a broken setup, not a reason to skip.
pub fn require_tool(tool: &str) -> PathBuf {
    let output = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .expect("sh runs");
    let path = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "{tool} is not installed; run ./scripts/test.sh, which installs it"
    );
    PathBuf::from(path)
}

/// Reads `topic` from the beginning of its `partitions` with a fresh,
/// assigned consumer whose record values are decimal ids: partition ->
/// ids in offset order. Stops at `expected` records, or with a `linger`,
/// once that long has passed without a record after `expected` (to see
/// duplicates); bounded by two minutes.
pub fn drain_ids(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    expected: usize,
    linger: Duration,
) -> std::collections::BTreeMap<i32, Vec<u64>> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::Message;
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", format!("drain-{topic}-{}", std::process::id()))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut assignment = rdkafka::TopicPartitionList::new();
    for p in 0..partitions {
        assignment
            .add_partition_offset(topic, p, rdkafka::Offset::Beginning)
            .expect("assign");
    }
    consumer.assign(&assignment).expect("assign");
    let mut seen: std::collections::BTreeMap<i32, Vec<u64>> = Default::default();
    let mut total = 0;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline {
        if total >= expected && (linger.is_zero() || quiet_since.elapsed() > linger) {
            break;
        }
        if let Some(Ok(m)) = consumer.poll(Duration::from_millis(200)) {
            let id = String::from_utf8_lossy(m.payload().unwrap_or_default())
                .parse::<u64>()
                .expect("payloads are ids");
            seen.entry(m.partition()).or_default().push(id);
            total += 1;
            quiet_since = Instant::now();
        }
    }
    seen
}

/// One raw Produce v7 of a batch of `records` records to `topic`-`partition`
/// with `acks`; answers the partition's error code.
pub fn produce_batch(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    records: usize,
    acks: i16,
) -> i16 {
    let batch = ferrolog::storage::testing::batch_v2(
        records,
        20,
        kafka_protocol::records::Compression::None,
    );
    produce_records(bootstrap, topic, partition, batch, acks).error_code
}

/// One raw Produce v7 of `records` (a record set) to `topic`-`partition`
/// with `acks`; answers the partition's response.
pub fn produce_records(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    records: bytes::Bytes,
    acks: i16,
) -> kafka_protocol::messages::produce_response::PartitionProduceResponse {
    produce_records_at(7, bootstrap, topic, partition, records, acks)
}

/// `produce_records` as Produce `version` (v0-2 carry legacy message sets).
pub fn produce_records_at(
    version: i16,
    bootstrap: &str,
    topic: &str,
    partition: i32,
    records: bytes::Bytes,
    acks: i16,
) -> kafka_protocol::messages::produce_response::PartitionProduceResponse {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])]);
    let response: ProduceResponse = raw_request(
        bootstrap,
        ApiKey::Produce,
        version,
        &request,
        Duration::from_secs(30),
    );
    response.responses[0].partition_responses[0].clone()
}

/// One request and its response on a fresh connection, encoded and decoded
/// with kafka-protocol (no client library in between).
pub fn raw_request<Req, Resp>(
    bootstrap: &str,
    api: kafka_protocol::messages::ApiKey,
    version: i16,
    request: &Req,
    timeout: Duration,
) -> Resp
where
    Req: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
    Resp: kafka_protocol::protocol::Decodable + kafka_protocol::protocol::HeaderVersion,
{
    try_raw_request(bootstrap, api, version, request, timeout)
        .unwrap_or_else(|e| panic!("{api:?} v{version} to {bootstrap}: {e}"))
}

/// [`raw_request`] to a broker that may die or close the connection before
/// it answers: the failure as text.
pub fn try_raw_request<Req, Resp>(
    bootstrap: &str,
    api: kafka_protocol::messages::ApiKey,
    version: i16,
    request: &Req,
    timeout: Duration,
) -> Result<Resp, String>
where
    Req: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
    Resp: kafka_protocol::protocol::Decodable + kafka_protocol::protocol::HeaderVersion,
{
    RawConnection::try_open(bootstrap, "ferrolog-test", timeout)?.try_request(api, version, request)
}

/// One client connection speaking kafka-protocol's encoding by hand:
/// several requests in turn, raw frames, and the moment the broker closes.
pub struct RawConnection {
    stream: Box<dyn ClientStream>,
    correlation_id: i32,
    client_id: String,
}

/// What a [`RawConnection`] speaks over: a socket or a TLS stream.
pub trait ClientStream: std::io::Read + std::io::Write + Send {}

impl<S: std::io::Read + std::io::Write + Send> ClientStream for S {}

impl RawConnection {
    /// Requests over `stream` (a TLS stream, handshake done).
    pub fn over(stream: impl ClientStream + 'static) -> RawConnection {
        RawConnection {
            stream: Box::new(stream),
            correlation_id: 0,
            client_id: "ferrolog-test".to_string(),
        }
    }

    /// Connects as client id `ferrolog-test`, with a 30 s read timeout.
    pub fn open(bootstrap: &str) -> RawConnection {
        Self::try_open(bootstrap, "ferrolog-test", Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{bootstrap}: {e}"))
    }

    /// Connects as `client_id`; the failure as text.
    pub fn try_open(
        bootstrap: &str,
        client_id: &str,
        timeout: Duration,
    ) -> Result<RawConnection, String> {
        let stream =
            std::net::TcpStream::connect(bootstrap).map_err(|e| format!("connect: {e}"))?;
        stream
            .set_read_timeout(Some(timeout))
            .map_err(|e| format!("timeout: {e}"))?;
        Ok(RawConnection {
            stream: Box::new(stream),
            correlation_id: 0,
            client_id: client_id.to_string(),
        })
    }

    /// Connects from `source` (another loopback address, 127.0.0.2), so a
    /// test can be a second client address.
    pub fn open_from(bootstrap: &str, source: std::net::IpAddr) -> Option<RawConnection> {
        let target: std::net::SocketAddr = bootstrap.parse().ok()?;
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(target),
            socket2::Type::STREAM,
            None,
        )
        .ok()?;
        socket
            .bind(&std::net::SocketAddr::new(source, 0).into())
            .ok()?;
        socket.connect(&target.into()).ok()?;
        let stream: std::net::TcpStream = socket.into();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .ok()?;
        Some(RawConnection {
            stream: Box::new(stream),
            correlation_id: 0,
            client_id: "ferrolog-test".to_string(),
        })
    }

    /// Whether the broker answers ApiVersions on this connection (a
    /// connection closed for a limit does not).
    pub fn api_versions_answered(&mut self) -> bool {
        self.request::<_, kafka_protocol::messages::ApiVersionsResponse>(
            kafka_protocol::messages::ApiKey::ApiVersions,
            3,
            &kafka_protocol::messages::ApiVersionsRequest::default(),
        )
        .is_some()
    }

    /// Sends `body` as one length-prefixed frame.
    pub fn send_bytes(&mut self, body: &[u8]) {
        use std::io::Write;
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body);
        self.stream.write_all(&frame).expect("send");
    }

    /// The next frame's bytes; `None` once the broker closed the connection.
    pub fn receive(&mut self) -> Option<bytes::Bytes> {
        self.try_receive().ok()
    }

    fn try_receive(&mut self) -> Result<bytes::Bytes, String> {
        use std::io::Read;
        let mut prefix = [0u8; 4];
        self.stream
            .read_exact(&mut prefix)
            .map_err(|e| format!("response length: {e}"))?;
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        self.stream
            .read_exact(&mut body)
            .map_err(|e| format!("response body: {e}"))?;
        Ok(bytes::Bytes::from(body))
    }

    /// One request and its response; `None` if the broker closed the
    /// connection instead of answering.
    pub fn request<Req, Resp>(
        &mut self,
        api: kafka_protocol::messages::ApiKey,
        version: i16,
        request: &Req,
    ) -> Option<Resp>
    where
        Req: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
        Resp: kafka_protocol::protocol::Decodable + kafka_protocol::protocol::HeaderVersion,
    {
        self.try_request(api, version, request).ok()
    }

    /// [`RawConnection::request`] with the failure as text.
    pub fn try_request<Req, Resp>(
        &mut self,
        api: kafka_protocol::messages::ApiKey,
        version: i16,
        request: &Req,
    ) -> Result<Resp, String>
    where
        Req: kafka_protocol::protocol::Encodable + kafka_protocol::protocol::HeaderVersion,
        Resp: kafka_protocol::protocol::Decodable + kafka_protocol::protocol::HeaderVersion,
    {
        use kafka_protocol::messages::{RequestHeader, ResponseHeader};
        use kafka_protocol::protocol::{Decodable, StrBytes};
        use std::io::Write;
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_string(self.client_id.clone())));
        let frame = ferrolog::protocol::encode_request(&header, api, request)
            .map_err(|e| format!("encode: {e}"))?;
        self.stream
            .write_all(&frame)
            .map_err(|e| format!("send: {e}"))?;
        let mut body = self.try_receive()?;
        let response_header =
            ResponseHeader::decode(&mut body, api.response_header_version(version))
                .map_err(|e| format!("response header: {e}"))?;
        if response_header.correlation_id != self.correlation_id {
            return Err(format!(
                "correlation id {} answered {}",
                self.correlation_id, response_header.correlation_id
            ));
        }
        Resp::decode(&mut body, version).map_err(|e| format!("response body decodes: {e}"))
    }
}

/// Run a future (an rdkafka admin call) to completion on a fresh runtime.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// librdkafka settings every test client starts from.
pub fn client_config(bootstrap: &str) -> rdkafka::config::ClientConfig {
    let mut config = rdkafka::config::ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("socket.timeout.ms", "30000");
    config
}

/// An rdkafka admin client for `bootstrap`.
pub fn admin(
    bootstrap: &str,
) -> rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> {
    client_config(bootstrap)
        .create()
        .expect("the admin client is created")
}

/// Admin request and operation timeouts of `timeout`.
pub fn admin_options(timeout: Duration) -> rdkafka::admin::AdminOptions {
    rdkafka::admin::AdminOptions::new()
        .request_timeout(Some(timeout))
        .operation_timeout(Some(timeout))
}

/// AlterConfigs v1: `retention.ms` of `topic` set to `value`.
pub fn alter_retention(bootstrap: &str, topic: &str, value: &str) {
    alter_topic_config(bootstrap, topic, "retention.ms", value)
}

/// AlterConfigs v1 (the whole override set, as Kafka's legacy API does):
/// `topic`'s `key` set to `value`; asserts it was accepted.
pub fn alter_topic_config(bootstrap: &str, topic: &str, key: &str, value: &str) {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse, ApiKey};
    use kafka_protocol::protocol::StrBytes;
    let response: AlterConfigsResponse = raw_request(
        bootstrap,
        ApiKey::AlterConfigs,
        1,
        &AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.to_string()))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_string(key.to_string()))
                .with_value(Some(StrBytes::from_string(value.to_string())))])]),
        Duration::from_secs(30),
    );
    assert_eq!(response.responses[0].error_code, 0);
}

/// DescribeConfigs v1: `topic`'s `retention.ms`.
pub fn described_retention(bootstrap: &str, topic: &str) -> Option<String> {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};
    use kafka_protocol::protocol::StrBytes;
    let response: DescribeConfigsResponse = raw_request(
        bootstrap,
        ApiKey::DescribeConfigs,
        1,
        &DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_string(topic.to_string()))
            .with_configuration_keys(Some(vec![StrBytes::from_static_str("retention.ms")]))]),
        Duration::from_secs(30),
    );
    response.results[0]
        .configs
        .first()
        .and_then(|c| c.value.as_ref().map(|v| v.to_string()))
}

/// The records of a partition replica on disk, in offset order: its `.log`
/// segments' bytes concatenated (segment boundaries may differ between
/// replicas, the bytes may not).
pub fn replica_bytes(log_dir: &Path, topic: &str, partition: i32) -> Vec<u8> {
    let dir = log_dir.join(format!("{topic}-{partition}"));
    let mut segments: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect()
        })
        .unwrap_or_default();
    segments.sort();
    segments
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap_or_default())
        .collect()
}

/// Run `chattr -R <flag>` on `path`: `+i` makes every file and directory
/// in it immutable, so that writes through descriptors already open fail
/// (EPERM) as they would on a disk gone read-only. A read-only remount,
/// the literal fault, is refused (EBUSY) while the broker holds files
/// open for writing, and could not be undone while it holds them either.
pub fn chattr(flag: &str, path: &std::path::Path) {
    let status = std::process::Command::new("chattr")
        .args(["-R", flag])
        .arg(path)
        .status()
        .expect("chattr runs");
    assert!(
        status.success(),
        "chattr {flag} {}: run this test as root (CI does)",
        path.display()
    );
}

/// Makes a directory writable again when dropped, so that a failing test
/// leaves nothing its temporary directory cannot remove.
pub struct Writable(pub std::path::PathBuf);

impl Drop for Writable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .args(["-R", "-i"])
            .arg(&self.0)
            .status();
    }
}
