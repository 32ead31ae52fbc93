//! A cluster of real broker processes over a real ZooKeeper server, and
//! the librdkafka helpers cluster tests share.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::Message;

use super::zookeeper::ZooKeeperServer;
use super::{admin, admin_options, block_on, client_config, BrokerProcess};

pub const SESSION_MS: &str = "zookeeper.session.timeout.ms=4000";

pub struct Cluster {
    pub zk: ZooKeeperServer,
    pub dirs: Vec<tempfile::TempDir>,
    pub brokers: BTreeMap<i32, BrokerProcess>,
    pub racks: Vec<&'static str>,
    /// Extra `key=value` overrides every broker gets.
    pub extra: Vec<String>,
    /// Environment every broker process gets (`FAILPOINTS`, for one).
    pub env: Vec<(String, String)>,
    /// Each broker's address: a restarted broker listens there again, as
    /// a real one does (clients and followers know it by it).
    pub addresses: BTreeMap<i32, String>,
}

impl Cluster {
    pub fn start(size: i32) -> Cluster {
        Self::start_in_racks(size, &[])
    }

    /// `size` brokers, each with `extra` overrides.
    pub fn start_with(size: i32, extra: &[&str]) -> Cluster {
        Self::start_configured(size, &[], extra)
    }

    /// `racks[id]` is broker `id`'s `broker.rack` (none when missing).
    pub fn start_in_racks(size: i32, racks: &[&'static str]) -> Cluster {
        Self::start_configured(size, racks, &[])
    }

    /// `size` brokers in `racks` (as `start_in_racks`), each with `extra`
    /// overrides.
    pub fn start_configured(size: i32, racks: &[&'static str], extra: &[&str]) -> Cluster {
        Self::start_with_env(size, racks, extra, &[])
    }

    /// `start_configured`, every broker process with `env` set.
    pub fn start_with_env(
        size: i32,
        racks: &[&'static str],
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Cluster {
        let zk = ZooKeeperServer::start();
        let mut cluster = Cluster {
            zk,
            dirs: Vec::new(),
            brokers: BTreeMap::new(),
            racks: racks.to_vec(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            addresses: BTreeMap::new(),
        };
        for id in 0..size {
            cluster.dirs.push(tempfile::tempdir().expect("tempdir"));
            cluster.start_broker(id);
        }
        cluster
    }

    pub fn overrides(&self, id: i32) -> Vec<String> {
        let mut overrides = vec![
            format!("zookeeper.connect={}/cluster", self.zk.connect_string()),
            format!("broker.id={id}"),
            SESSION_MS.to_string(),
        ];
        if let Some(rack) = self.racks.get(id as usize) {
            overrides.push(format!("broker.rack={rack}"));
        }
        overrides.extend(self.extra.iter().cloned());
        overrides
    }

    /// Each partition's replicas, as broker `id` answers Metadata.
    pub fn replicas(&self, id: i32, topic: &str) -> BTreeMap<i32, Vec<i32>> {
        let client: BaseConsumer = client_config(&self.bootstrap(id)).create().expect("client");
        let metadata = client
            .fetch_metadata(Some(topic), Duration::from_secs(10))
            .expect("metadata");
        metadata
            .topics()
            .iter()
            .filter(|t| t.name() == topic)
            .flat_map(|t| {
                t.partitions()
                    .iter()
                    .map(|p| (p.id(), p.replicas().to_vec()))
            })
            .collect()
    }

    /// Each partition's ISR (sorted) as broker `id` answers Metadata;
    /// empty when it does not answer.
    pub fn isrs(&self, id: i32, topic: &str) -> BTreeMap<i32, Vec<i32>> {
        let client: BaseConsumer = client_config(&self.bootstrap(id)).create().expect("client");
        let Ok(metadata) = client.fetch_metadata(Some(topic), Duration::from_secs(10)) else {
            return BTreeMap::new();
        };
        metadata
            .topics()
            .iter()
            .filter(|t| t.name() == topic)
            .flat_map(|t| {
                t.partitions().iter().map(|p| {
                    let mut isr = p.isr().to_vec();
                    isr.sort();
                    (p.id(), isr)
                })
            })
            .collect()
    }

    /// Reads each of `paths` on a fresh session to the cluster's ZooKeeper
    /// chroot: its data, or `None` where there is no such znode.
    pub fn read_znodes(&self, paths: &[String]) -> Vec<Option<Vec<u8>>> {
        use ferrolog::metadata::MetadataStore;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let store = ferrolog::metadata::ZooKeeperStore::connect(
                &format!("{}/cluster", self.zk.connect_string()),
                Duration::from_secs(10),
                Duration::from_secs(20),
            )
            .await
            .expect("connect to ZooKeeper");
            let mut found = Vec::with_capacity(paths.len());
            for path in paths {
                found.push(store.get(path).await.expect("get").map(|(bytes, _)| bytes));
            }
            let _ = store.close().await;
            found
        })
    }

    pub fn start_broker(&mut self, id: i32) {
        let mut overrides = self.overrides(id);
        if let Some(address) = self.addresses.get(&id) {
            overrides.push(format!(
                "listeners={}://{address}",
                self.bootstrap_listener()
            ));
        }
        let refs: Vec<&str> = overrides.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let broker = BrokerProcess::start_with_env(self.dirs[id as usize].path(), &refs, &env);
        self.addresses.insert(id, broker.bootstrap.clone());
        self.brokers.insert(id, broker);
    }

    /// The listener a broker's bootstrap address belongs to: the only one
    /// of an overridden `listeners` line, else PLAINTEXT.
    fn bootstrap_listener(&self) -> String {
        self.extra
            .iter()
            .rev()
            .find_map(|line| line.strip_prefix("listeners="))
            .filter(|listeners| !listeners.contains(','))
            .and_then(|listener| listener.split("://").next())
            .unwrap_or("PLAINTEXT")
            .to_string()
    }

    pub fn bootstrap(&self, id: i32) -> String {
        self.brokers[&id].bootstrap.clone()
    }

    /// (leader per partition, broker count, controller id) as broker `id`
    /// answers Metadata.
    pub fn view(&self, id: i32, topic: &str) -> (BTreeMap<i32, i32>, usize, i32) {
        let client: BaseConsumer = client_config(&self.bootstrap(id)).create().expect("client");
        let metadata = client
            .fetch_metadata(Some(topic), Duration::from_secs(10))
            .expect("metadata");
        let leaders = metadata
            .topics()
            .iter()
            .filter(|t| t.name() == topic && t.error().is_none())
            .flat_map(|t| t.partitions().iter().map(|p| (p.id(), p.leader())))
            .collect();
        let controller = {
            use kafka_protocol::messages::{ApiKey, MetadataRequest, MetadataResponse};
            let response: MetadataResponse = super::raw_request(
                &self.bootstrap(id),
                ApiKey::Metadata,
                9,
                &MetadataRequest::default().with_topics(Some(Vec::new())),
                Duration::from_secs(10),
            );
            response.controller_id.0
        };
        (leaders, metadata.brokers().len(), controller)
    }

    /// Waits (bounded) until every broker in `asked` sees `topic` with
    /// `partitions` partitions satisfying `ok`.
    pub fn wait_for(
        &self,
        asked: &[i32],
        topic: &str,
        what: &str,
        ok: impl Fn(&BTreeMap<i32, i32>, usize, i32) -> bool,
    ) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for &id in asked {
            loop {
                let (leaders, brokers, controller) = self.view(id, topic);
                if ok(&leaders, brokers, controller) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "broker {id} never showed {what}: leaders {leaders:?}, {brokers} brokers, controller {controller}"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) {
    create_replicated_topic(bootstrap, topic, partitions, 1);
}

pub fn create_replicated_topic(bootstrap: &str, topic: &str, partitions: i32, replication: i32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let result = block_on(admin(bootstrap).create_topics(
            &[NewTopic::new(
                topic,
                partitions,
                TopicReplication::Fixed(replication),
            )],
            &admin_options(Duration::from_secs(30)),
        ))
        .expect("CreateTopics answered")
        .remove(0);
        match result {
            Ok(_) => return,
            Err((_, code)) if Instant::now() < deadline => {
                eprintln!("create {topic}: {code:?}, retrying");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err((_, code)) => panic!("create {topic}: {code:?}"),
        }
    }
}

pub fn produce(bootstrap: &str, topic: &str, range: std::ops::Range<usize>) {
    let producer: BaseProducer = client_config(bootstrap)
        .set("acks", "all")
        .set("message.timeout.ms", "60000")
        .create()
        .expect("producer");
    for i in range {
        let key = i.to_string();
        let payload = format!("record-{i}");
        loop {
            match producer.send(BaseRecord::to(topic).key(&key).payload(&payload)) {
                Ok(()) => break,
                Err((_, _)) => {
                    producer.poll(Duration::from_millis(50));
                }
            }
        }
    }
    producer
        .flush(Duration::from_secs(60))
        .expect("every record acknowledged");
}

pub fn consume(bootstrap: &str, topic: &str, expected: usize) -> Vec<String> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", format!("cluster-{}", uuid::Uuid::new_v4()))
        .set("auto.offset.reset", "earliest")
        .create()
        .expect("consumer");
    consumer.subscribe(&[topic]).expect("subscribe");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < expected && Instant::now() < deadline {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(200)) {
            seen.push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned());
        }
    }
    seen.sort();
    seen.dedup();
    seen
}

/// ElectLeaders (v2; `election_type` 0 preferred, 1 unclean) for
/// `topic`'s `partitions` at `bootstrap`: the top-level error code and
/// each partition's; `Err` when the broker does not answer.
pub fn elect_leaders(
    bootstrap: &str,
    election_type: i8,
    topic: &str,
    partitions: &[i32],
) -> Result<(i16, BTreeMap<i32, i16>), String> {
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use kafka_protocol::messages::{ApiKey, ElectLeadersRequest, ElectLeadersResponse, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let response: ElectLeadersResponse = super::try_raw_request(
        bootstrap,
        ApiKey::ElectLeaders,
        2,
        &ElectLeadersRequest::default()
            .with_election_type(election_type)
            .with_timeout_ms(30_000)
            .with_topic_partitions(Some(vec![TopicPartitions::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partitions(partitions.to_vec())])),
        Duration::from_secs(60),
    )?;
    let results = response
        .replica_election_results
        .iter()
        .flat_map(|t| {
            t.partition_result
                .iter()
                .map(|p| (p.partition_id, p.error_code))
        })
        .collect();
    Ok((response.error_code, results))
}
