//! The broker's metrics, named as the Prometheus JMX exporter's standard
//! Kafka rules name Kafka's MBeans (`kafka.server<type=BrokerTopicMetrics,
//! name=MessagesInPerSec, topic=t><>Count` is
//! `kafka_server_brokertopicmetrics_messagesin_total{topic="t"}`), so
//! dashboards and alerts written for Kafka read ferrolog unchanged.
//!
//! Two kinds: counters and latencies the request path bumps as it goes
//! (atomics, cached per topic and per API so the hot path never takes a
//! write lock), kept here; and gauges read off the broker's state when
//! scraped (`scrape`): partition counts, ISR health, controller figures,
//! log end offsets, the process.

mod latency;
pub mod scrape;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

pub use latency::Latency;

/// Label sets as the exporter gives them: `topic`, `request`, `version`.
type Labels = Vec<(String, String)>;

/// Every counter and latency the broker bumps, and the registry that
/// encodes them.
#[derive(Debug)]
pub struct BrokerMetrics {
    registry: Registry,
    pub topics: BrokerTopicStats,
    pub requests: RequestMetrics,
    /// `kafka_server_replicamanager_isrshrinks_total` / `isrexpands_total`.
    pub isr_shrinks: Counter,
    pub isr_expands: Counter,
    /// Kafka's ControllerStats LeaderElectionRateAndTimeMs: each election
    /// the active controller wrote after brokers came or went.
    pub leader_elections: Arc<Latency>,
    /// Each followed partition's lag behind its leader.
    pub fetcher_lag: FetcherLag,
}

impl Default for BrokerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl BrokerMetrics {
    pub fn new() -> BrokerMetrics {
        let mut registry = Registry::default();
        let topics = BrokerTopicStats::register(&mut registry);
        let requests = RequestMetrics::register(&mut registry);
        let isr_shrinks = Counter::default();
        registry.register(
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks of partitions this broker leads",
            isr_shrinks.clone(),
        );
        let isr_expands = Counter::default();
        registry.register(
            "kafka_server_replicamanager_isrexpands",
            "ISR expansions of partitions this broker leads",
            isr_expands.clone(),
        );
        let leader_elections = Arc::new(Latency::default());
        registry.register_collector(Box::new(latency::LatencyCollector {
            name: "kafka_controller_controllerstats_leaderelectionrateandtimems",
            help: "Milliseconds each leader election took, recent quantiles",
            label: None,
            series: Arc::new(RwLock::new(HashMap::from([(
                String::new(),
                leader_elections.clone(),
            )]))),
        }));
        BrokerMetrics {
            fetcher_lag: FetcherLag::default(),
            leader_elections,
            registry,
            topics,
            requests,
            isr_shrinks,
            isr_expands,
        }
    }

    /// The counters and latencies in the text exposition format, without
    /// the closing `# EOF` (the scrape appends its gauges first).
    pub fn encode_into(&self, out: &mut String) -> std::fmt::Result {
        prometheus_client::encoding::text::encode_registry(out, &self.registry)
    }
}

/// How far behind its leader each partition this broker follows is, in
/// records: the fetchers set it after each append and forget a partition
/// they stop following; a scrape reports the largest.
#[derive(Debug, Clone, Default)]
pub struct FetcherLag(Arc<RwLock<HashMap<crate::topic_partition::TopicPartition, i64>>>);

impl FetcherLag {
    pub fn set(&self, tp: &crate::topic_partition::TopicPartition, lag: i64) {
        let mut map = self.0.write().unwrap_or_else(|p| p.into_inner());
        match map.get_mut(tp) {
            Some(held) => *held = lag,
            None => {
                map.insert(tp.clone(), lag);
            }
        }
    }

    pub fn forget(&self, tp: &crate::topic_partition::TopicPartition) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).remove(tp);
    }

    /// The largest lag now (0 when following nothing).
    pub fn max(&self) -> i64 {
        let map = self.0.read().unwrap_or_else(|p| p.into_inner());
        map.values().copied().max().unwrap_or(0)
    }
}

/// One topic's BrokerTopicMetrics (or the broker-wide one, no label).
#[derive(Debug, Clone, Default)]
pub struct TopicStats {
    pub messages_in: Counter,
    pub bytes_in: Counter,
    pub bytes_out: Counter,
    pub replication_bytes_out: Counter,
    pub total_produce_requests: Counter,
    pub total_fetch_requests: Counter,
    pub failed_produce_requests: Counter,
    pub failed_fetch_requests: Counter,
}

/// Kafka's `BrokerTopicStats`: per topic and for all topics.
#[derive(Debug)]
pub struct BrokerTopicStats {
    families: [Family<Labels, Counter>; 8],
    all: TopicStats,
    by_topic: RwLock<HashMap<String, Arc<TopicStats>>>,
}

/// The MBean names after `name=` (less `PerSec`), in `TopicStats` order.
const TOPIC_METRICS: [(&str, &str); 8] = [
    ("messagesin", "Records appended by producers"),
    ("bytesin", "Record bytes appended by producers"),
    ("bytesout", "Record bytes sent to consumers"),
    ("replicationbytesout", "Record bytes sent to followers"),
    ("totalproducerequests", "Partition appends asked for"),
    ("totalfetchrequests", "Partition reads asked for"),
    ("failedproducerequests", "Partition appends the log refused"),
    ("failedfetchrequests", "Partition reads that failed"),
];

impl BrokerTopicStats {
    fn register(registry: &mut Registry) -> BrokerTopicStats {
        let families: [Family<Labels, Counter>; 8] = Default::default();
        for ((name, help), family) in TOPIC_METRICS.iter().zip(&families) {
            registry.register(
                format!("kafka_server_brokertopicmetrics_{name}"),
                *help,
                family.clone(),
            );
        }
        let all = Self::stats_for(&families, Vec::new());
        BrokerTopicStats {
            families,
            all,
            by_topic: RwLock::new(HashMap::new()),
        }
    }

    fn stats_for(families: &[Family<Labels, Counter>; 8], labels: Labels) -> TopicStats {
        let counter = |i: usize| families[i].get_or_create_owned(&labels);
        TopicStats {
            messages_in: counter(0),
            bytes_in: counter(1),
            bytes_out: counter(2),
            replication_bytes_out: counter(3),
            total_produce_requests: counter(4),
            total_fetch_requests: counter(5),
            failed_produce_requests: counter(6),
            failed_fetch_requests: counter(7),
        }
    }

    /// `topic`'s stats, created at first use.
    pub fn topic(&self, topic: &str) -> Arc<TopicStats> {
        if let Some(stats) = read(&self.by_topic, topic) {
            return stats;
        }
        insert(&self.by_topic, topic.to_string(), || {
            Arc::new(Self::stats_for(
                &self.families,
                vec![("topic".to_string(), topic.to_string())],
            ))
        })
    }

    /// Bumps `pick` of `topic` and of all topics by `by`.
    pub fn add(&self, topic: &str, by: u64, pick: impl Fn(&TopicStats) -> &Counter) {
        pick(&self.topic(topic)).inc_by(by);
        pick(&self.all).inc_by(by);
    }

}

impl BrokerTopicStats {
    /// Drops the series of topics `exists` says are gone, as Kafka removes
    /// a deleted topic's BrokerTopicMetrics (a scrape calls it with the
    /// metadata's topics).
    pub fn retain_topics(&self, exists: impl Fn(&str) -> bool) {
        let gone: Vec<String> = {
            let map = self.by_topic.read().unwrap_or_else(|p| p.into_inner());
            map.keys().filter(|t| !exists(t)).cloned().collect()
        };
        if gone.is_empty() {
            return;
        }
        let mut map = self.by_topic.write().unwrap_or_else(|p| p.into_inner());
        for topic in gone {
            map.remove(&topic);
            let labels = vec![("topic".to_string(), topic)];
            for family in &self.families {
                family.remove(&labels);
            }
        }
    }
}

/// Kafka's `RequestMetrics`: requests by API and version, and how long
/// each API's requests spent where. Cached by API key and version, so
/// counting a request takes a read lock and an atomic add per figure.
#[derive(Debug)]
pub struct RequestMetrics {
    requests: Family<Labels, Counter>,
    counters: RwLock<HashMap<(i16, i16), Counter>>,
    times: [TimeFamily; 5],
}

/// Where a request's time went, as Kafka's RequestMetrics splits it.
#[derive(Debug, Clone, Copy)]
pub enum RequestTime {
    /// From its frame's arrival until its handler started.
    RequestQueue = 0,
    /// Its handler's time, waits for replicas or for data included
    /// (Kafka tells those apart as RemoteTimeMs; ferrolog does not yet).
    Local = 1,
    /// From its answer being ready until the connection began writing it
    /// (answers go out in request order).
    ResponseQueue = 2,
    /// Writing its answer.
    ResponseSend = 3,
    /// From its frame's arrival until its answer was written.
    Total = 4,
}

/// The exporter's names for each figure's MBean, in `RequestTime` order.
const REQUEST_TIMES: [(&str, &str); 5] = [
    ("kafka_network_requestmetrics_requestqueuetimems", "Milliseconds from a request's arrival to its handler, recent quantiles"),
    ("kafka_network_requestmetrics_localtimems", "Milliseconds in a request's handler, waits included, recent quantiles"),
    ("kafka_network_requestmetrics_responsequeuetimems", "Milliseconds a ready answer waited for the ones before it, recent quantiles"),
    ("kafka_network_requestmetrics_responsesendtimems", "Milliseconds writing an answer, recent quantiles"),
    ("kafka_network_requestmetrics_totaltimems", "Milliseconds from a request's arrival to its answer written, recent quantiles"),
];

/// One time figure's latencies, by request name for the encoder and by
/// key for the request path.
#[derive(Debug, Default)]
struct TimeFamily {
    by_name: Arc<RwLock<HashMap<String, Arc<Latency>>>>,
    by_key: RwLock<HashMap<i16, Arc<Latency>>>,
}

/// A request as RequestMetrics names it: the API key (or a key of ours
/// for Kafka's FetchConsumer and FetchFollower) and Kafka's name for it,
/// made only the first time the key is seen.
pub struct RequestName<'a> {
    pub key: i16,
    pub name: &'a dyn Fn() -> String,
}

/// Kafka counts a Fetch under `Fetch` and under one of these.
pub const FETCH_CONSUMER_KEY: i16 = -2;
pub const FETCH_FOLLOWER_KEY: i16 = -3;

fn read<K, Q, V>(map: &RwLock<HashMap<K, V>>, key: &Q) -> Option<V>
where
    K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
    Q: std::hash::Hash + Eq + ?Sized,
    V: Clone,
{
    match map.read() {
        Ok(map) => map.get(key).cloned(),
        Err(poisoned) => poisoned.into_inner().get(key).cloned(),
    }
}

fn insert<K: std::hash::Hash + Eq, V: Clone>(
    map: &RwLock<HashMap<K, V>>,
    key: K,
    make: impl FnOnce() -> V,
) -> V {
    let mut map = match map.write() {
        Ok(map) => map,
        Err(poisoned) => poisoned.into_inner(),
    };
    map.entry(key).or_insert_with(make).clone()
}

impl RequestMetrics {
    fn register(registry: &mut Registry) -> RequestMetrics {
        let requests = Family::<Labels, Counter>::default();
        registry.register(
            "kafka_network_requestmetrics_requests",
            "Requests, by API (Kafka's names) and version",
            requests.clone(),
        );
        let times: [TimeFamily; 5] = Default::default();
        for ((name, help), family) in REQUEST_TIMES.iter().zip(&times) {
            registry.register_collector(Box::new(latency::LatencyCollector {
                name,
                help,
                label: Some("request"),
                series: family.by_name.clone(),
            }));
        }
        RequestMetrics {
            requests,
            counters: RwLock::new(HashMap::new()),
            times,
        }
    }

    /// A request `request` at `version` arrived.
    pub fn count(&self, request: &RequestName<'_>, version: i16) {
        let counter = read(&self.counters, &(request.key, version)).unwrap_or_else(|| {
            insert(&self.counters, (request.key, version), || {
                self.requests.get_or_create_owned(&vec![
                    ("request".to_string(), (request.name)()),
                    ("version".to_string(), version.to_string()),
                ])
            })
        });
        counter.inc();
    }

    /// `request` spent `took` in `time`.
    pub fn time(&self, request: &RequestName<'_>, time: RequestTime, took: Duration) {
        let family = &self.times[time as usize];
        let latency = read(&family.by_key, &request.key).unwrap_or_else(|| {
            insert(&family.by_key, request.key, || {
                insert(&family.by_name, (request.name)(), Default::default)
            })
        });
        latency.record(took);
    }
}
