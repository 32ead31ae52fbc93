//! What a scrape reads off the broker's state rather than counting as it
//! goes: Kafka's gauges (`...><>Value` through the exporter), built fresh
//! each scrape into a registry of their own and written after the
//! counters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::{BrokerMetrics, Labels};
use crate::actors::group_coordinator::{CommittedOffsets, GroupOffsets};
use crate::actors::log_manager::DescribeLogDirs;
use crate::actors::partition::PartitionRegistry;
use crate::broker_state::{BrokerState, SharedBrokerState};
use crate::cluster::MetadataCache;
use crate::config::dynamic::DynamicBrokerConfig;

/// Where a scrape reads the broker's state.
#[derive(Clone)]
pub struct ScrapeSources {
    pub broker_id: i32,
    pub metadata: MetadataCache,
    pub partitions: PartitionRegistry,
    pub dynamic: DynamicBrokerConfig,
    pub state: SharedBrokerState,
    pub log_dirs: actix::Recipient<DescribeLogDirs>,
    pub groups: actix::Recipient<CommittedOffsets>,
    pub metrics: Arc<BrokerMetrics>,
    pub started: SystemTime,
}

impl ScrapeSources {
    /// Ready for traffic: running, and this broker is in its own metadata
    /// (registered, and the controller's view has reached it). The reason
    /// when not.
    pub fn readiness(&self) -> Result<(), String> {
        let state = self.state.get();
        if state != BrokerState::RunningAsBroker {
            return Err(format!("the broker is {}", state.name()));
        }
        let known = self
            .metadata
            .read(|m| m.brokers.contains_key(&self.broker_id));
        if !known {
            return Err("the broker's metadata has not loaded yet".to_string());
        }
        Ok(())
    }
}

/// The whole exposition: counters, then gauges, then `# EOF`.
pub async fn scrape(sources: &ScrapeSources) -> String {
    // Asked before anything is encoded: the log manager answers from its
    // shards' threads.
    let logs = match sources.log_dirs.send(DescribeLogDirs).await {
        Ok(Ok(dirs)) => Some(dirs),
        Ok(Err(e)) => {
            log::warn!("metrics: describing the log dirs failed: {e}");
            None
        }
        Err(_) => None,
    };
    // A deleted topic's series go (a topic created since is back at its
    // first append).
    let known: std::collections::HashSet<String> =
        sources.metadata.read(|m| m.topics.keys().cloned().collect());
    sources.metrics.topics.retain_topics(|t| known.contains(t));
    let gauges = Gauges::default();
    gauges.replica_manager(sources);
    gauges.controller(sources);
    if let Some(dirs) = &logs {
        for replica in dirs.iter().flat_map(|d| &d.replicas) {
            let labels = vec![
                ("topic".to_string(), replica.tp.topic.clone()),
                ("partition".to_string(), replica.tp.partition.to_string()),
            ];
            gauges.log_size.get_or_create(&labels).set(replica.size_bytes as i64);
            gauges
                .log_start_offset
                .get_or_create(&labels)
                .set(replica.log_start_offset);
            gauges
                .log_end_offset
                .get_or_create(&labels)
                .set(replica.log_end_offset);
            gauges
                .log_segments
                .get_or_create(&labels)
                .set(replica.segments as i64);
        }
        let offline = dirs.iter().filter(|d| d.error.is_some()).count();
        gauges.offline_log_dirs.set(offline as i64);
    }
    if let Ok(groups) = sources.groups.send(CommittedOffsets).await {
        gauges.consumer_groups(sources, &groups);
    }
    gauges.broker_state.set(sources.state.get() as i64);
    gauges
        .max_lag
        .get_or_create(&vec![("clientid".to_string(), "Replica".to_string())])
        .set(sources.metrics.fetcher_lag.max());
    process(&gauges, sources.started);
    let mut out = String::with_capacity(16 * 1024);
    let encoded = sources
        .metrics
        .encode_into(&mut out)
        .and_then(|()| prometheus_client::encoding::text::encode_registry(&mut out, &gauges.registry()))
        .and_then(|()| prometheus_client::encoding::text::encode_eof(&mut out));
    if let Err(e) = encoded {
        log::warn!("metrics: encoding failed: {e}");
    }
    out
}

/// One scrape's gauges.
#[derive(Default)]
struct Gauges {
    partition_count: Gauge,
    leader_count: Gauge,
    under_replicated: Gauge,
    under_min_isr: Gauge,
    at_min_isr: Gauge,
    active_controller: Gauge,
    offline_partitions: Gauge,
    global_partitions: Gauge,
    global_topics: Gauge,
    preferred_imbalance: Gauge,
    log_size: Family<Labels, Gauge>,
    log_start_offset: Family<Labels, Gauge>,
    log_end_offset: Family<Labels, Gauge>,
    log_segments: Family<Labels, Gauge>,
    offline_log_dirs: Gauge,
    broker_state: Gauge,
    cpu_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    resident_bytes: Gauge,
    virtual_bytes: Gauge,
    open_fds: Gauge,
    max_fds: Gauge,
    start_time: Gauge<f64, std::sync::atomic::AtomicU64>,
    threads: Gauge,
    max_lag: Family<Labels, Gauge>,
    num_groups: Gauge,
    group_offset: Family<Labels, Gauge>,
    group_lag: Family<Labels, Gauge>,
    group_lag_sum: Family<Labels, Gauge>,
}

impl Gauges {
    fn registry(&self) -> Registry {
        let mut r = Registry::default();
        let mut gauge = |name: &str, help: &str, g: &Gauge| r.register(name, help, g.clone());
        gauge(
            "kafka_server_replicamanager_partitioncount",
            "Replicas on this broker",
            &self.partition_count,
        );
        gauge(
            "kafka_server_replicamanager_leadercount",
            "Partitions this broker leads",
            &self.leader_count,
        );
        gauge(
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Partitions this broker leads whose ISR is smaller than their replica set",
            &self.under_replicated,
        );
        gauge(
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Partitions this broker leads with fewer in-sync replicas than min.insync.replicas",
            &self.under_min_isr,
        );
        gauge(
            "kafka_server_replicamanager_atminisrpartitioncount",
            "Partitions this broker leads with exactly min.insync.replicas in sync",
            &self.at_min_isr,
        );
        gauge(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller, else 0",
            &self.active_controller,
        );
        gauge(
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a leader (on the active controller)",
            &self.offline_partitions,
        );
        gauge(
            "kafka_controller_kafkacontroller_globalpartitioncount",
            "Partitions in the cluster (on the active controller)",
            &self.global_partitions,
        );
        gauge(
            "kafka_controller_kafkacontroller_globaltopiccount",
            "Topics in the cluster (on the active controller)",
            &self.global_topics,
        );
        gauge(
            "kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
            "Partitions not led by their preferred replica (on the active controller)",
            &self.preferred_imbalance,
        );
        gauge(
            "kafka_log_logmanager_offlinelogdirectorycount",
            "Log directories that cannot be read",
            &self.offline_log_dirs,
        );
        gauge(
            "kafka_server_kafkaserver_brokerstate",
            "Kafka's broker state: 1 starting, 3 running, 6 in controlled shutdown, 7 shutting down",
            &self.broker_state,
        );
        gauge(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            &self.resident_bytes,
        );
        gauge(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            &self.virtual_bytes,
        );
        gauge("process_open_fds", "Open file descriptors", &self.open_fds);
        gauge("process_max_fds", "The open file descriptor limit", &self.max_fds);
        gauge("process_threads", "OS threads", &self.threads);
        gauge(
            "kafka_coordinator_group_groupmetadatamanager_numgroups",
            "Consumer groups this broker coordinates",
            &self.num_groups,
        );
        let mut family = |name: &str, help: &str, f: &Family<Labels, Gauge>| {
            r.register(name, help, f.clone())
        };
        family("kafka_log_log_size", "Bytes of a partition's log", &self.log_size);
        family(
            "kafka_log_log_logstartoffset",
            "A partition's log start offset",
            &self.log_start_offset,
        );
        family(
            "kafka_log_log_logendoffset",
            "A partition's log end offset",
            &self.log_end_offset,
        );
        family(
            "kafka_log_log_numlogsegments",
            "A partition's log segments",
            &self.log_segments,
        );
        family(
            "kafka_server_replicafetchermanager_maxlag",
            "Records the furthest-behind followed partition lags its leader's high watermark",
            &self.max_lag,
        );
        family(
            "kafka_consumergroup_current_offset",
            "A group's committed offset in a partition",
            &self.group_offset,
        );
        family(
            "kafka_consumergroup_lag",
            "A group's lag in a partition: its high watermark less the committed offset",
            &self.group_lag,
        );
        family(
            "kafka_consumergroup_lag_sum",
            "A group's lag summed over a topic's partitions",
            &self.group_lag_sum,
        );
        r.register(
            "process_cpu_seconds",
            "User and system CPU time spent in seconds",
            self.cpu_seconds.clone(),
        );
        r.register(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch in seconds",
            self.start_time.clone(),
        );
        r
    }

    /// Kafka's ReplicaManager gauges, from this broker's view of the
    /// cluster (its metadata) and the replicas it runs.
    fn replica_manager(&self, sources: &ScrapeSources) {
        self.partition_count.set(sources.partitions.all().len() as i64);
        let default_min_isr = sources.dynamic.current().min_insync_replicas;
        let id = sources.broker_id;
        let (leaders, under, under_min, at_min) = sources.metadata.read(|m| {
            let mut counts = (0, 0, 0, 0);
            for topic in m.topics.values() {
                let min_isr = topic.config.min_insync_replicas.unwrap_or(default_min_isr) as usize;
                for p in topic.partitions.values().filter(|p| p.leader == id) {
                    counts.0 += 1;
                    counts.1 += (p.isr.len() < p.replicas.len()) as i64;
                    counts.2 += (p.isr.len() < min_isr) as i64;
                    counts.3 += (p.isr.len() == min_isr) as i64;
                }
            }
            counts
        });
        self.leader_count.set(leaders);
        self.under_replicated.set(under);
        self.under_min_isr.set(under_min);
        self.at_min_isr.set(at_min);
    }

    /// The group count, and each group's offsets and lag as kafka_exporter
    /// names them. Lag needs the partition's high watermark, which this
    /// broker has for the partitions it holds a replica of; the others'
    /// lag is left out rather than guessed.
    fn consumer_groups(&self, sources: &ScrapeSources, groups: &[GroupOffsets]) {
        self.num_groups.set(groups.len() as i64);
        for (group, offsets) in groups {
            let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
            for (tp, offset) in offsets {
                let labels = vec![
                    ("consumergroup".to_string(), group.clone()),
                    ("topic".to_string(), tp.topic.clone()),
                    ("partition".to_string(), tp.partition.to_string()),
                ];
                self.group_offset.get_or_create(&labels).set(*offset);
                let Some(handle) = sources.partitions.get(tp) else {
                    continue;
                };
                let lag = (*handle.high_watermark.borrow() - offset).max(0);
                self.group_lag.get_or_create(&labels).set(lag);
                *sums.entry(tp.topic.as_str()).or_default() += lag;
            }
            for (topic, lag) in sums {
                let labels = vec![
                    ("consumergroup".to_string(), group.clone()),
                    ("topic".to_string(), topic.to_string()),
                ];
                self.group_lag_sum.get_or_create(&labels).set(lag);
            }
        }
    }

    /// Kafka's KafkaController gauges: 0 on a broker that is not the
    /// active controller, as Kafka reports them.
    fn controller(&self, sources: &ScrapeSources) {
        let id = sources.broker_id;
        sources.metadata.read(|m| {
            if m.controller_id != id {
                return;
            }
            self.active_controller.set(1);
            let partitions = m.topics.values().flat_map(|t| t.partitions.values());
            let (mut total, mut offline, mut imbalanced) = (0, 0, 0);
            for p in partitions {
                total += 1;
                offline += (p.leader < 0) as i64;
                imbalanced += (p.leader >= 0 && p.replicas.first() != Some(&p.leader)) as i64;
            }
            self.global_partitions.set(total);
            self.offline_partitions.set(offline);
            self.preferred_imbalance.set(imbalanced);
            self.global_topics.set(m.topics.len() as i64);
        });
    }
}

/// The `process_*` metrics every Prometheus client library exports, from
/// `/proc/self` (Linux).
fn process(gauges: &Gauges, started: SystemTime) {
    let started = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    gauges.start_time.set(started);
    // SAFETY: sysconf has no memory effects.
    let (ticks, page) = unsafe { (libc::sysconf(libc::_SC_CLK_TCK), libc::sysconf(libc::_SC_PAGESIZE)) };
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // After the command name's closing parenthesis: state is field 3.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let field = |n: usize| -> i64 { fields.get(n - 3).and_then(|f| f.parse().ok()).unwrap_or(0) };
        if ticks > 0 {
            gauges
                .cpu_seconds
                .inc_by((field(14) + field(15)) as f64 / ticks as f64);
        }
        gauges.threads.set(field(20));
        gauges.virtual_bytes.set(field(23));
        gauges.resident_bytes.set(field(24) * page.max(0));
    }
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        gauges.open_fds.set(entries.count() as i64);
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into `limit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        gauges.max_fds.set(limit.rlim_cur.min(i64::MAX as u64) as i64);
    }
}
