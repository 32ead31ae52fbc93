//! Broker configuration: turns a Kafka-style `server.properties` file plus
//! `--override key=value` arguments into a typed, validated [`BrokerConfig`],
//! using Kafka's key names, defaults and value ranges so that an existing Kafka
//! config file works unchanged. It also owns the topic-level config names
//! (`retention.ms`, `segment.bytes`, ...) and how they override the broker's
//! log defaults. It must never do I/O other than reading the one file handed
//! to [`BrokerConfig::load`], never start or talk to actors (it knows nothing
//! of actix), and never silently accept a value Kafka would reject: a bad value
//! is an error naming the key, an unknown key is a warning.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use java_properties::{LineContent, PropertiesIter};

pub use crate::storage::config::CleanupPolicy;
use crate::storage::config::{LogConfig, TimestampType};

/// Every broker key [`BrokerConfig::from_properties`] understands; anything
/// else in a file or override is reported as a [`ConfigWarning`].
pub use crate::storage::config::CompressionType;

pub const BROKER_CONFIG_KEYS: &[&str] = &[
    "broker.id",
    "broker.rack",
    "log.dirs",
    "log.dir",
    "zookeeper.connect",
    "zookeeper.session.timeout.ms",
    "zookeeper.connection.timeout.ms",
    "listeners",
    "advertised.listeners",
    "num.network.threads",
    "num.io.threads",
    "queued.max.requests",
    "queued.max.request.bytes",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "socket.request.max.bytes",
    "connections.max.idle.ms",
    "max.connections",
    "message.max.bytes",
    "num.partitions",
    "create.topic.max.partitions",
    "default.replication.factor",
    "auto.create.topics.enable",
    "delete.topic.enable",
    "min.insync.replicas",
    "log.segment.bytes",
    "log.roll.ms",
    "log.roll.hours",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "log.retention.bytes",
    "log.retention.check.interval.ms",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "producer.id.expiration.ms",
    "transactional.id.expiration.ms",
    "log.flush.scheduler.interval.ms",
    "log.flush.offset.checkpoint.interval.ms",
    "log.flush.start.offset.checkpoint.interval.ms",
    "log.message.timestamp.type",
    "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms",
    "log.cleanup.policy",
    "log.cleaner.enable",
    "log.cleaner.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.backoff.ms",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms",
    "compression.type",
    "num.recovery.threads.per.data.dir",
    "num.replica.fetchers",
    "replica.fetch.max.bytes",
    "fetch.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.fetch.min.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.backoff.ms",
    "replica.lag.time.max.ms",
    "replica.high.watermark.checkpoint.interval.ms",
    "unclean.leader.election.enable",
    "replica.selector.class",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    "auto.leader.rebalance.enable",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    "offsets.topic.segment.bytes",
    "offsets.retention.minutes",
    "offsets.retention.check.interval.ms",
    "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
];

/// Kafka refuses smaller segments: one must hold at least a v0 record's overhead.
const MIN_SEGMENT_BYTES: i64 = 14;
/// An offset index smaller than one entry could never index anything.
const MIN_INDEX_BYTES: i64 = 4;

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("malformed properties: {reason}")]
    Parse { reason: String },
    #[error("invalid --override '{arg}': {reason}")]
    Override { arg: String, reason: String },
    #[error("invalid value '{value}' for {key}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
}

/// Which replica a consumer is told to fetch from (`replica.selector.class`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// Kafka's default (no selector): always the leader.
    LeaderOnly,
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`: an
    /// in-sync replica in the consumer's `client.rack`, if there is one.
    RackAware,
}

impl ReplicaSelector {
    pub const RACK_AWARE_CLASS: &'static str =
        "org.apache.kafka.common.replica.RackAwareReplicaSelector";

    fn parse(raw: &str) -> Result<ReplicaSelector, ConfigError> {
        match raw.trim() {
            "" => Ok(ReplicaSelector::LeaderOnly),
            Self::RACK_AWARE_CLASS => Ok(ReplicaSelector::RackAware),
            other => Err(ConfigError::InvalidValue {
                key: "replica.selector.class".into(),
                value: other.into(),
                reason: format!(
                    "Java classes cannot be loaded; the built-in selector is {}",
                    Self::RACK_AWARE_CLASS
                ),
            }),
        }
    }
}

/// Something worth telling the operator that does not stop the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// One `NAME://host:port` entry of `listeners` / `advertised.listeners`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Upper-cased, as Kafka normalises listener names; only `PLAINTEXT` for now.
    pub name: String,
    /// Without IPv6 brackets. Empty binds every interface (in `listeners`) or
    /// means "this machine's canonical host name" (in `advertised.listeners`).
    pub host: String,
    /// 0 asks the OS for an ephemeral port, as in Kafka.
    pub port: u16,
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.name, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.name, self.host, self.port)
        }
    }
}

/// The broker's configuration, one field per Kafka key (aliases such as
/// `log.retention.hours`/`.minutes`/`.ms` are resolved into one field).
///
/// Types follow how a value is used rather than Kafka's Java type: counts of
/// in-process things are `usize`; ids, partition counts and replica counts
/// keep the wire protocol's `i32`/`i16`; sizes and durations are `u64`,
/// except where a negative value means something (then `i64`/`i32`, noted on
/// the field) or where the value feeds [`LogConfig`], whose types it mirrors.
/// Ranges are still Kafka's: an `INT` key never exceeds `i32::MAX`.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerConfig {
    /// `broker.id`; -1 asks the cluster to generate one.
    pub broker_id: i32,
    /// `log.dirs`, else `log.dir`.
    pub log_dirs: Vec<PathBuf>,
    /// `zookeeper.connect`: `host:port,host:port[/chroot]`; `None` runs the
    /// embedded metadata store.
    pub zookeeper_connect: Option<String>,
    /// `broker.rack`: written into the broker's registration.
    pub broker_rack: Option<String>,
    /// The keys the file or `--override`s set, with their raw values:
    /// DescribeConfigs tells a static broker setting from a default.
    pub set_keys: std::collections::BTreeMap<String, String>,
    pub zookeeper_session_timeout_ms: u64,
    /// Falls back to `zookeeper_session_timeout_ms` when unset.
    pub zookeeper_connection_timeout_ms: u64,
    pub listeners: Vec<Listener>,
    /// Falls back to `listeners` when unset.
    pub advertised_listeners: Vec<Listener>,
    pub num_network_threads: usize,
    pub num_io_threads: usize,
    pub queued_max_requests: usize,
    /// Request bytes read and not yet released, broker-wide, before no more
    /// requests are read; -1: unbounded (Kafka's default).
    pub queued_max_request_bytes: i64,
    /// -1 leaves the OS default.
    pub socket_send_buffer_bytes: i32,
    /// -1 leaves the OS default.
    pub socket_receive_buffer_bytes: i32,
    pub socket_request_max_bytes: u64,
    /// Negative never closes idle connections.
    pub connections_max_idle_ms: i64,
    pub max_connections: usize,
    pub message_max_bytes: u64,
    pub num_partitions: i32,
    /// ferrolog's bound on one topic's partition count (CreateTopics,
    /// CreatePartitions): larger asks get INVALID_PARTITIONS before
    /// anything is allocated. Kafka has no such key.
    pub create_topic_max_partitions: i32,
    pub default_replication_factor: i16,
    pub auto_create_topics_enable: bool,
    pub delete_topic_enable: bool,
    pub min_insync_replicas: i32,
    pub log_segment_bytes: u64,
    /// `log.roll.ms`, else `log.roll.hours`.
    pub log_roll_ms: i64,
    pub log_index_interval_bytes: u64,
    pub log_index_size_max_bytes: u64,
    /// `log.retention.ms`, else `.minutes`, else `.hours`; -1 keeps segments forever.
    pub log_retention_ms: i64,
    /// -1 means no size limit.
    pub log_retention_bytes: i64,
    pub log_retention_check_interval_ms: u64,
    pub log_flush_interval_messages: u64,
    /// Falls back to `log_flush_scheduler_interval_ms` when unset.
    pub log_flush_interval_ms: i64,
    pub log_flush_scheduler_interval_ms: i64,
    /// An idempotent producer silent this long is forgotten (checked with
    /// retention, every `log.retention.check.interval.ms`).
    pub producer_id_expiration_ms: i64,
    /// Accepted for compatibility: transactions are not served yet.
    pub transactional_id_expiration_ms: i64,
    pub log_flush_offset_checkpoint_interval_ms: u64,
    pub log_flush_start_offset_checkpoint_interval_ms: u64,
    pub log_message_timestamp_type: TimestampType,
    pub log_message_timestamp_difference_max_ms: i64,
    pub log_message_timestamp_before_max_ms: i64,
    pub log_message_timestamp_after_max_ms: i64,
    pub log_cleanup_policy: CleanupPolicy,
    /// The log cleaner (compaction) runs at all.
    pub log_cleaner_enable: bool,
    /// Cleanings run at once (each on a blocking thread).
    pub log_cleaner_threads: usize,
    /// Memory for the key -> offset map, shared by the cleaner threads.
    pub log_cleaner_dedupe_buffer_size: u64,
    /// Read and write buffer of one cleaning.
    pub log_cleaner_io_buffer_size: u64,
    /// How full the key map may get before a cleaning stops early.
    pub log_cleaner_io_buffer_load_factor: f64,
    /// Pause between cleaner passes when nothing needs cleaning.
    pub log_cleaner_backoff_ms: u64,
    /// Read throttle of each cleaning (bytes per second).
    pub log_cleaner_io_max_bytes_per_second: f64,
    pub log_cleaner_delete_retention_ms: i64,
    pub log_cleaner_min_cleanable_ratio: f64,
    pub log_cleaner_min_compaction_lag_ms: i64,
    pub log_cleaner_max_compaction_lag_ms: i64,
    pub compression_type: CompressionType,
    pub num_recovery_threads_per_data_dir: usize,
    pub num_replica_fetchers: usize,
    pub replica_fetch_max_bytes: u64,
    /// The most a consumer Fetch response carries (all partitions), whatever
    /// the request asks; only a first batch larger than it gets out whole.
    pub fetch_max_bytes: u64,
    pub replica_fetch_wait_max_ms: u64,
    pub replica_fetch_min_bytes: u64,
    pub replica_fetch_response_max_bytes: u64,
    pub replica_fetch_backoff_ms: u64,
    pub replica_lag_time_max_ms: u64,
    pub replica_high_watermark_checkpoint_interval_ms: u64,
    pub unclean_leader_election_enable: bool,
    /// `replica.selector.class`: whether consumers may be sent to a
    /// closer replica than the leader (KIP-392).
    pub replica_selector: ReplicaSelector,
    /// On SIGTERM in a cluster, ask the controller to move this broker's
    /// leaderships away before stopping.
    pub controlled_shutdown_enable: bool,
    pub controlled_shutdown_max_retries: u32,
    pub controlled_shutdown_retry_backoff_ms: u64,
    /// The active controller gives partitions back to their preferred
    /// replica when a broker's share of lost leaderships is too high.
    pub auto_leader_rebalance_enable: bool,
    pub leader_imbalance_check_interval_seconds: u64,
    pub leader_imbalance_per_broker_percentage: u32,
    pub offsets_topic_num_partitions: i32,
    pub offsets_topic_replication_factor: i16,
    /// `segment.bytes` of `__consumer_offsets` (only whole segments are
    /// compacted, so smaller ones compact sooner).
    pub offsets_topic_segment_bytes: u64,
    pub offsets_retention_minutes: u64,
    pub offsets_retention_check_interval_ms: u64,
    pub group_initial_rebalance_delay_ms: u64,
    pub group_min_session_timeout_ms: u64,
    pub group_max_session_timeout_ms: u64,
    pub group_max_size: i32,
}

impl Default for BrokerConfig {
    /// Kafka's defaults.
    fn default() -> Self {
        let log = LogConfig::default();
        BrokerConfig {
            broker_id: -1,
            log_dirs: vec![PathBuf::from("/tmp/kafka-logs")],
            zookeeper_connect: None,
            broker_rack: None,
            set_keys: std::collections::BTreeMap::new(),
            zookeeper_session_timeout_ms: 18_000,
            zookeeper_connection_timeout_ms: 18_000,
            listeners: vec![default_listener()],
            advertised_listeners: vec![default_listener()],
            num_network_threads: 3,
            num_io_threads: 8,
            queued_max_requests: 500,
            queued_max_request_bytes: -1,
            socket_send_buffer_bytes: 100 * 1024,
            socket_receive_buffer_bytes: 100 * 1024,
            socket_request_max_bytes: 100 * 1024 * 1024,
            connections_max_idle_ms: 10 * 60 * 1000,
            max_connections: 2_147_483_647,
            message_max_bytes: log.max_message_bytes,
            num_partitions: 1,
            create_topic_max_partitions: 100_000,
            default_replication_factor: 1,
            auto_create_topics_enable: true,
            delete_topic_enable: true,
            min_insync_replicas: 1,
            log_segment_bytes: log.segment_bytes,
            log_roll_ms: log.segment_ms,
            log_index_interval_bytes: log.index_interval_bytes,
            log_index_size_max_bytes: log.segment_index_bytes,
            log_retention_ms: log.retention_ms,
            log_retention_bytes: log.retention_bytes,
            log_retention_check_interval_ms: 5 * 60 * 1000,
            log_flush_interval_messages: log.flush_messages,
            log_flush_interval_ms: log.flush_ms,
            log_flush_scheduler_interval_ms: i64::MAX,
            producer_id_expiration_ms: log.producer_id_expiration_ms,
            transactional_id_expiration_ms: 7 * 24 * 60 * 60 * 1000,
            log_flush_offset_checkpoint_interval_ms: 60_000,
            log_flush_start_offset_checkpoint_interval_ms: 60_000,
            log_message_timestamp_type: log.message_timestamp_type,
            log_message_timestamp_difference_max_ms: log.message_timestamp_difference_max_ms,
            log_message_timestamp_before_max_ms: log.message_timestamp_before_max_ms,
            log_message_timestamp_after_max_ms: log.message_timestamp_after_max_ms,
            log_cleanup_policy: log.cleanup_policy,
            log_cleaner_enable: true,
            log_cleaner_threads: 1,
            log_cleaner_dedupe_buffer_size: 128 * 1024 * 1024,
            log_cleaner_io_buffer_size: 512 * 1024,
            log_cleaner_io_buffer_load_factor: 0.9,
            log_cleaner_backoff_ms: 15_000,
            log_cleaner_io_max_bytes_per_second: f64::MAX,
            log_cleaner_delete_retention_ms: log.delete_retention_ms,
            log_cleaner_min_cleanable_ratio: log.min_cleanable_dirty_ratio,
            log_cleaner_min_compaction_lag_ms: log.min_compaction_lag_ms,
            log_cleaner_max_compaction_lag_ms: log.max_compaction_lag_ms,
            compression_type: CompressionType::Producer,
            num_recovery_threads_per_data_dir: 1,
            num_replica_fetchers: 1,
            replica_fetch_max_bytes: 1024 * 1024,
            fetch_max_bytes: 55 * 1024 * 1024,
            replica_fetch_wait_max_ms: 500,
            replica_fetch_min_bytes: 1,
            replica_fetch_response_max_bytes: 10 * 1024 * 1024,
            replica_fetch_backoff_ms: 1_000,
            replica_lag_time_max_ms: 30_000,
            replica_high_watermark_checkpoint_interval_ms: 5_000,
            unclean_leader_election_enable: false,
            replica_selector: ReplicaSelector::LeaderOnly,
            controlled_shutdown_enable: true,
            controlled_shutdown_max_retries: 3,
            controlled_shutdown_retry_backoff_ms: 5_000,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_seconds: 300,
            leader_imbalance_per_broker_percentage: 10,
            offsets_topic_num_partitions: 50,
            offsets_topic_replication_factor: 3,
            offsets_topic_segment_bytes: 104_857_600,
            offsets_retention_minutes: 7 * 24 * 60,
            offsets_retention_check_interval_ms: 600_000,
            group_initial_rebalance_delay_ms: 3_000,
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 30 * 60 * 1000,
            group_max_size: i32::MAX,
        }
    }
}

fn default_listener() -> Listener {
    Listener {
        name: "PLAINTEXT".to_string(),
        host: String::new(),
        port: 9092,
    }
}

impl BrokerConfig {
    /// Parse properties text, then apply `overrides` ("key=value" strings, as
    /// given to `--override`), later wins.
    pub fn from_properties(
        text: &str,
        overrides: &[String],
    ) -> Result<(BrokerConfig, Vec<ConfigWarning>), ConfigError> {
        let mut warnings = Vec::new();
        let mut values: HashMap<String, String> = HashMap::new();
        let mut set_on_line: HashMap<String, usize> = HashMap::new();

        for entry in parse_properties(text)? {
            if !BROKER_CONFIG_KEYS.contains(&entry.key.as_str()) {
                warnings.push(ConfigWarning {
                    key: entry.key,
                    message: format!("line {}: unknown or unsupported key, ignored", entry.line),
                });
                continue;
            }
            // Java's Properties silently keeps the last one; a repeated key is
            // usually an edit that missed the original line, so say so.
            if let Some(previous) = set_on_line.insert(entry.key.clone(), entry.line) {
                warnings.push(ConfigWarning {
                    key: entry.key.clone(),
                    message: format!(
                        "line {}: also set on line {previous}; the last value wins",
                        entry.line
                    ),
                });
            }
            values.insert(entry.key, entry.value);
        }

        for arg in overrides {
            let (key, value) = split_override(arg)?;
            if BROKER_CONFIG_KEYS.contains(&key) {
                values.insert(key.to_string(), value.to_string());
            } else {
                warnings.push(ConfigWarning {
                    key: key.to_string(),
                    message: "--override of an unknown or unsupported key, ignored".to_string(),
                });
            }
        }

        let props = Props { values };
        let mut config = BrokerConfig::from_props(&props, &mut warnings)?;
        config.set_keys = props.values.into_iter().collect();
        Ok((config, warnings))
    }

    /// Read FILE, call from_properties, log each warning with log::warn!.
    pub fn load(path: &Path, overrides: &[String]) -> Result<BrokerConfig, ConfigError> {
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            // Java reads .properties as ISO-8859-1, so a file written for
            // Kafka may legitimately not be UTF-8; Latin-1 maps byte for char.
            Err(not_utf8) => not_utf8.into_bytes().into_iter().map(char::from).collect(),
        };
        let (config, warnings) = BrokerConfig::from_properties(&text, overrides)?;
        for warning in &warnings {
            log::warn!("{}: {warning}", path.display());
        }
        Ok(config)
    }

    /// The broker-wide log defaults as a storage LogConfig.
    pub fn log_config(&self) -> LogConfig {
        LogConfig {
            segment_bytes: self.log_segment_bytes,
            segment_ms: self.log_roll_ms,
            segment_index_bytes: self.log_index_size_max_bytes,
            index_interval_bytes: self.log_index_interval_bytes,
            retention_ms: self.log_retention_ms,
            retention_bytes: self.log_retention_bytes,
            max_message_bytes: self.message_max_bytes,
            message_timestamp_type: self.log_message_timestamp_type,
            message_timestamp_difference_max_ms: self.log_message_timestamp_difference_max_ms,
            message_timestamp_before_max_ms: self.log_message_timestamp_before_max_ms,
            message_timestamp_after_max_ms: self.log_message_timestamp_after_max_ms,
            flush_messages: self.log_flush_interval_messages,
            flush_ms: self.log_flush_interval_ms,
            producer_id_expiration_ms: self.producer_id_expiration_ms,
            cleanup_policy: self.log_cleanup_policy,
            delete_retention_ms: self.log_cleaner_delete_retention_ms,
            min_cleanable_dirty_ratio: self.log_cleaner_min_cleanable_ratio,
            min_compaction_lag_ms: self.log_cleaner_min_compaction_lag_ms,
            max_compaction_lag_ms: self.log_cleaner_max_compaction_lag_ms,
            compression_type: self.compression_type,
        }
    }

    /// The `host[:port]` servers of `zookeeper.connect`, without the chroot.
    pub fn zookeeper_servers(&self) -> Vec<&str> {
        match &self.zookeeper_connect {
            Some(connect) => split_chroot(connect).0.split(',').map(str::trim).collect(),
            None => Vec::new(),
        }
    }

    /// The chroot path of `zookeeper.connect` (e.g. `/kafka`), if any.
    pub fn zookeeper_chroot(&self) -> Option<&str> {
        self.zookeeper_connect
            .as_deref()
            .and_then(|connect| split_chroot(connect).1)
    }

    fn from_props(
        p: &Props,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<BrokerConfig, ConfigError> {
        use JavaInt::{Int, Long, Short};
        let d = BrokerConfig::default();

        let log_dir = p.raw("log.dir");
        let log_dirs = match p.raw("log.dirs") {
            Some(dirs) => {
                shadowed(p, warnings, "log.dir", "log.dirs");
                parse_log_dirs("log.dirs", dirs)?
            }
            None => match log_dir {
                Some(dir) => parse_log_dirs("log.dir", dir)?,
                None => d.log_dirs,
            },
        };

        let zookeeper_connect = match p.raw("zookeeper.connect").map(str::trim) {
            Some("") | None => None,
            Some(connect) => {
                validate_zookeeper_connect(connect)?;
                Some(connect.to_string())
            }
        };
        let zookeeper_session_timeout_ms = p.int(
            "zookeeper.session.timeout.ms",
            Int,
            1,
            d.zookeeper_session_timeout_ms,
        )?;
        let zookeeper_connection_timeout_ms = p
            .opt_int("zookeeper.connection.timeout.ms", Int, 1)?
            .unwrap_or(zookeeper_session_timeout_ms);

        let listeners = match p.raw("listeners") {
            Some(raw) => parse_listeners("listeners", raw)?,
            None => d.listeners,
        };
        let advertised_listeners = match p.raw("advertised.listeners") {
            Some(raw) => parse_advertised_listeners(raw, &listeners)?,
            None => listeners.clone(),
        };

        // Every alias is parsed even when shadowed, as Kafka does, so a typo
        // in an unused line still fails loudly instead of lurking.
        let roll_ms: Option<i64> = p.opt_int("log.roll.ms", Long, 1)?;
        let roll_hours: i64 = p.int("log.roll.hours", Int, 1, 168)?;
        let log_roll_ms = match roll_ms {
            Some(ms) => {
                shadowed(p, warnings, "log.roll.hours", "log.roll.ms");
                ms
            }
            None => roll_hours * HOUR_MS,
        };

        let retention_ms: Option<i64> = p.opt_int("log.retention.ms", Long, -1)?;
        let retention_minutes: Option<i64> = p.opt_int("log.retention.minutes", Int, -1)?;
        let retention_hours: i64 = p.int("log.retention.hours", Int, -1, 168)?;
        let log_retention_ms = if let Some(ms) = retention_ms {
            shadowed(p, warnings, "log.retention.minutes", "log.retention.ms");
            shadowed(p, warnings, "log.retention.hours", "log.retention.ms");
            ms
        } else if let Some(minutes) = retention_minutes {
            shadowed(p, warnings, "log.retention.hours", "log.retention.minutes");
            unlimited_or_scaled(minutes, MINUTE_MS)
        } else {
            unlimited_or_scaled(retention_hours, HOUR_MS)
        };

        let log_flush_scheduler_interval_ms = p.int(
            "log.flush.scheduler.interval.ms",
            Long,
            0,
            d.log_flush_scheduler_interval_ms,
        )?;
        let log_flush_interval_ms = p
            .opt_int("log.flush.interval.ms", Long, 0)?
            .unwrap_or(log_flush_scheduler_interval_ms);

        let config = BrokerConfig {
            broker_id: p.int("broker.id", Int, -1, d.broker_id)?,
            log_dirs,
            zookeeper_connect,
            broker_rack: p
                .raw("broker.rack")
                .map(str::trim)
                .filter(|rack| !rack.is_empty())
                .map(str::to_owned),
            set_keys: std::collections::BTreeMap::new(),
            zookeeper_session_timeout_ms,
            zookeeper_connection_timeout_ms,
            listeners,
            advertised_listeners,
            num_network_threads: p.int("num.network.threads", Int, 1, d.num_network_threads)?,
            num_io_threads: p.int("num.io.threads", Int, 1, d.num_io_threads)?,
            queued_max_requests: p.int("queued.max.requests", Int, 1, d.queued_max_requests)?,
            queued_max_request_bytes: p.int(
                "queued.max.request.bytes",
                Long,
                -1,
                d.queued_max_request_bytes,
            )?,
            socket_send_buffer_bytes: p.int(
                "socket.send.buffer.bytes",
                Int,
                -1,
                d.socket_send_buffer_bytes,
            )?,
            socket_receive_buffer_bytes: p.int(
                "socket.receive.buffer.bytes",
                Int,
                -1,
                d.socket_receive_buffer_bytes,
            )?,
            socket_request_max_bytes: p.int(
                "socket.request.max.bytes",
                Int,
                1,
                d.socket_request_max_bytes,
            )?,
            connections_max_idle_ms: p.int(
                "connections.max.idle.ms",
                Long,
                -1,
                d.connections_max_idle_ms,
            )?,
            max_connections: p.int("max.connections", Int, 0, d.max_connections)?,
            message_max_bytes: p.int("message.max.bytes", Int, 0, d.message_max_bytes)?,
            num_partitions: p.int("num.partitions", Int, 1, d.num_partitions)?,
            create_topic_max_partitions: p.int(
                "create.topic.max.partitions",
                Int,
                1,
                d.create_topic_max_partitions,
            )?,
            default_replication_factor: p.int(
                "default.replication.factor",
                Short,
                1,
                d.default_replication_factor,
            )?,
            auto_create_topics_enable: p
                .bool("auto.create.topics.enable", d.auto_create_topics_enable)?,
            delete_topic_enable: p.bool("delete.topic.enable", d.delete_topic_enable)?,
            min_insync_replicas: p.int("min.insync.replicas", Int, 1, d.min_insync_replicas)?,
            log_segment_bytes: p.int(
                "log.segment.bytes",
                Int,
                MIN_SEGMENT_BYTES,
                d.log_segment_bytes,
            )?,
            log_roll_ms,
            log_index_interval_bytes: p.int(
                "log.index.interval.bytes",
                Int,
                0,
                d.log_index_interval_bytes,
            )?,
            log_index_size_max_bytes: p.int(
                "log.index.size.max.bytes",
                Int,
                MIN_INDEX_BYTES,
                d.log_index_size_max_bytes,
            )?,
            log_retention_ms,
            log_retention_bytes: unlimited_if_negative(p.int(
                "log.retention.bytes",
                Long,
                i64::MIN,
                d.log_retention_bytes,
            )?),
            log_retention_check_interval_ms: p.int(
                "log.retention.check.interval.ms",
                Long,
                1,
                d.log_retention_check_interval_ms,
            )?,
            log_flush_interval_messages: p.int(
                "log.flush.interval.messages",
                Long,
                1,
                d.log_flush_interval_messages,
            )?,
            log_flush_interval_ms,
            log_flush_scheduler_interval_ms,
            producer_id_expiration_ms: p.int(
                "producer.id.expiration.ms",
                Int,
                1,
                d.producer_id_expiration_ms,
            )?,
            transactional_id_expiration_ms: p.int(
                "transactional.id.expiration.ms",
                Int,
                1,
                d.transactional_id_expiration_ms,
            )?,
            log_flush_offset_checkpoint_interval_ms: p.int(
                "log.flush.offset.checkpoint.interval.ms",
                Int,
                0,
                d.log_flush_offset_checkpoint_interval_ms,
            )?,
            log_flush_start_offset_checkpoint_interval_ms: p.int(
                "log.flush.start.offset.checkpoint.interval.ms",
                Int,
                0,
                d.log_flush_start_offset_checkpoint_interval_ms,
            )?,
            log_message_timestamp_type: match p.raw("log.message.timestamp.type") {
                Some(raw) => parse_timestamp_type("log.message.timestamp.type", raw)?,
                None => d.log_message_timestamp_type,
            },
            log_message_timestamp_difference_max_ms: p.int(
                "log.message.timestamp.difference.max.ms",
                Long,
                0,
                d.log_message_timestamp_difference_max_ms,
            )?,
            log_message_timestamp_before_max_ms: p.int(
                "log.message.timestamp.before.max.ms",
                Long,
                0,
                d.log_message_timestamp_before_max_ms,
            )?,
            log_message_timestamp_after_max_ms: p.int(
                "log.message.timestamp.after.max.ms",
                Long,
                0,
                d.log_message_timestamp_after_max_ms,
            )?,
            log_cleanup_policy: match p.raw("log.cleanup.policy") {
                Some(raw) => parse_cleanup_policy("log.cleanup.policy", raw)?,
                None => d.log_cleanup_policy,
            },
            log_cleaner_enable: p.bool("log.cleaner.enable", d.log_cleaner_enable)?,
            log_cleaner_threads: p.int("log.cleaner.threads", Int, 0, d.log_cleaner_threads)?,
            log_cleaner_dedupe_buffer_size: p.int(
                "log.cleaner.dedupe.buffer.size",
                Long,
                0,
                d.log_cleaner_dedupe_buffer_size,
            )?,
            log_cleaner_io_buffer_size: p.int(
                "log.cleaner.io.buffer.size",
                Int,
                0,
                d.log_cleaner_io_buffer_size,
            )?,
            log_cleaner_io_buffer_load_factor: p.double(
                "log.cleaner.io.buffer.load.factor",
                0.0,
                1.0,
                d.log_cleaner_io_buffer_load_factor,
            )?,
            log_cleaner_backoff_ms: p.int(
                "log.cleaner.backoff.ms",
                Long,
                0,
                d.log_cleaner_backoff_ms,
            )?,
            log_cleaner_io_max_bytes_per_second: p.double(
                "log.cleaner.io.max.bytes.per.second",
                f64::MIN_POSITIVE,
                f64::MAX,
                d.log_cleaner_io_max_bytes_per_second,
            )?,
            log_cleaner_delete_retention_ms: p.int(
                "log.cleaner.delete.retention.ms",
                Long,
                0,
                d.log_cleaner_delete_retention_ms,
            )?,
            log_cleaner_min_cleanable_ratio: p.double(
                "log.cleaner.min.cleanable.ratio",
                0.0,
                1.0,
                d.log_cleaner_min_cleanable_ratio,
            )?,
            log_cleaner_min_compaction_lag_ms: p.int(
                "log.cleaner.min.compaction.lag.ms",
                Long,
                0,
                d.log_cleaner_min_compaction_lag_ms,
            )?,
            log_cleaner_max_compaction_lag_ms: p.int(
                "log.cleaner.max.compaction.lag.ms",
                Long,
                1,
                d.log_cleaner_max_compaction_lag_ms,
            )?,
            compression_type: match p.raw("compression.type") {
                Some(raw) => parse_compression_type("compression.type", raw)?,
                None => d.compression_type,
            },
            num_recovery_threads_per_data_dir: p.int(
                "num.recovery.threads.per.data.dir",
                Int,
                1,
                d.num_recovery_threads_per_data_dir,
            )?,
            num_replica_fetchers: p.int("num.replica.fetchers", Int, 1, d.num_replica_fetchers)?,
            replica_fetch_max_bytes: p.int(
                "replica.fetch.max.bytes",
                Int,
                0,
                d.replica_fetch_max_bytes,
            )?,
            fetch_max_bytes: p.int("fetch.max.bytes", Int, 1024, d.fetch_max_bytes)?,
            replica_fetch_wait_max_ms: p.int(
                "replica.fetch.wait.max.ms",
                Int,
                0,
                d.replica_fetch_wait_max_ms,
            )?,
            replica_fetch_min_bytes: p.int(
                "replica.fetch.min.bytes",
                Int,
                1,
                d.replica_fetch_min_bytes,
            )?,
            replica_fetch_response_max_bytes: p.int(
                "replica.fetch.response.max.bytes",
                Int,
                0,
                d.replica_fetch_response_max_bytes,
            )?,
            replica_fetch_backoff_ms: p.int(
                "replica.fetch.backoff.ms",
                Int,
                0,
                d.replica_fetch_backoff_ms,
            )?,
            replica_lag_time_max_ms: p.int(
                "replica.lag.time.max.ms",
                Long,
                1,
                d.replica_lag_time_max_ms,
            )?,
            replica_high_watermark_checkpoint_interval_ms: p.int(
                "replica.high.watermark.checkpoint.interval.ms",
                Long,
                1,
                d.replica_high_watermark_checkpoint_interval_ms,
            )?,
            unclean_leader_election_enable: p.bool(
                "unclean.leader.election.enable",
                d.unclean_leader_election_enable,
            )?,
            replica_selector: p
                .raw("replica.selector.class")
                .map_or(Ok(d.replica_selector), ReplicaSelector::parse)?,
            controlled_shutdown_enable: p
                .bool("controlled.shutdown.enable", d.controlled_shutdown_enable)?,
            controlled_shutdown_max_retries: p.int(
                "controlled.shutdown.max.retries",
                Int,
                0,
                d.controlled_shutdown_max_retries,
            )?,
            controlled_shutdown_retry_backoff_ms: p.int(
                "controlled.shutdown.retry.backoff.ms",
                Long,
                0,
                d.controlled_shutdown_retry_backoff_ms,
            )?,
            auto_leader_rebalance_enable: p.bool(
                "auto.leader.rebalance.enable",
                d.auto_leader_rebalance_enable,
            )?,
            leader_imbalance_check_interval_seconds: p.int(
                "leader.imbalance.check.interval.seconds",
                Long,
                1,
                d.leader_imbalance_check_interval_seconds,
            )?,
            leader_imbalance_per_broker_percentage: p.int(
                "leader.imbalance.per.broker.percentage",
                Int,
                0,
                d.leader_imbalance_per_broker_percentage,
            )?,
            offsets_topic_num_partitions: p.int(
                "offsets.topic.num.partitions",
                Int,
                1,
                d.offsets_topic_num_partitions,
            )?,
            offsets_topic_replication_factor: p.int(
                "offsets.topic.replication.factor",
                Short,
                1,
                d.offsets_topic_replication_factor,
            )?,
            offsets_topic_segment_bytes: p.int(
                "offsets.topic.segment.bytes",
                Int,
                1,
                d.offsets_topic_segment_bytes,
            )?,
            offsets_retention_minutes: p.int(
                "offsets.retention.minutes",
                Int,
                1,
                d.offsets_retention_minutes,
            )?,
            offsets_retention_check_interval_ms: p.int(
                "offsets.retention.check.interval.ms",
                Long,
                1,
                d.offsets_retention_check_interval_ms,
            )?,
            group_initial_rebalance_delay_ms: p.int(
                "group.initial.rebalance.delay.ms",
                Int,
                0,
                d.group_initial_rebalance_delay_ms,
            )?,
            group_min_session_timeout_ms: p.int(
                "group.min.session.timeout.ms",
                Int,
                0,
                d.group_min_session_timeout_ms,
            )?,
            group_max_session_timeout_ms: p.int(
                "group.max.session.timeout.ms",
                Int,
                0,
                d.group_max_session_timeout_ms,
            )?,
            group_max_size: p.int("group.max.size", Int, 1, d.group_max_size)?,
        };
        config.validate_combinations()?;
        Ok(config)
    }

    fn validate_combinations(&self) -> Result<(), ConfigError> {
        // Kafka's rule: a request as large as allowed must fit in the pool.
        if self.queued_max_request_bytes > 0
            && (self.queued_max_request_bytes as u64) < self.socket_request_max_bytes
        {
            return Err(invalid(
                "queued.max.request.bytes",
                &self.queued_max_request_bytes.to_string(),
                format!(
                    "must be -1 or at least socket.request.max.bytes ({})",
                    self.socket_request_max_bytes
                ),
            ));
        }
        // Kafka refuses this too: a follower whose fetch may legitimately wait
        // longer than the lag limit would keep dropping out of the ISR.
        if self.replica_fetch_wait_max_ms > self.replica_lag_time_max_ms {
            return Err(invalid(
                "replica.fetch.wait.max.ms",
                &self.replica_fetch_wait_max_ms.to_string(),
                format!(
                    "must not exceed replica.lag.time.max.ms ({})",
                    self.replica_lag_time_max_ms
                ),
            ));
        }
        // With min > max every JoinGroup would be rejected, which looks like a
        // client bug rather than a config mistake; catch it at startup.
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms {
            return Err(invalid(
                "group.min.session.timeout.ms",
                &self.group_min_session_timeout_ms.to_string(),
                format!(
                    "must not exceed group.max.session.timeout.ms ({})",
                    self.group_max_session_timeout_ms
                ),
            ));
        }
        Ok(())
    }
}

/// Apply topic-level overrides (Kafka topic config names) on top of a base
/// LogConfig, in order, so a later duplicate wins. `cleanup.policy`,
/// `min.insync.replicas` and `unclean.leader.election.enable` are validated
/// but not stored in LogConfig. Unknown
/// topic keys are errors, as Kafka answers them with INVALID_CONFIG.
pub fn apply_topic_overrides(
    base: &LogConfig,
    overrides: &[(String, String)],
) -> Result<LogConfig, ConfigError> {
    use JavaInt::{Int, Long};
    let mut config = base.clone();
    for (key, value) in overrides {
        match key.as_str() {
            "retention.ms" => config.retention_ms = parse_int(key, value, Long, -1)?,
            "retention.bytes" => {
                config.retention_bytes =
                    unlimited_if_negative(parse_int(key, value, Long, i64::MIN)?)
            }
            "segment.bytes" => {
                config.segment_bytes = parse_int(key, value, Int, MIN_SEGMENT_BYTES)?
            }
            "segment.ms" => config.segment_ms = parse_int(key, value, Long, 1)?,
            "segment.index.bytes" => {
                config.segment_index_bytes = parse_int(key, value, Int, MIN_INDEX_BYTES)?
            }
            "index.interval.bytes" => config.index_interval_bytes = parse_int(key, value, Int, 0)?,
            "max.message.bytes" => config.max_message_bytes = parse_int(key, value, Int, 0)?,
            "message.timestamp.type" => {
                config.message_timestamp_type = parse_timestamp_type(key, value)?
            }
            "message.timestamp.difference.max.ms" => {
                config.message_timestamp_difference_max_ms = parse_int(key, value, Long, 0)?
            }
            "message.timestamp.before.max.ms" => {
                config.message_timestamp_before_max_ms = parse_int(key, value, Long, 0)?
            }
            "message.timestamp.after.max.ms" => {
                config.message_timestamp_after_max_ms = parse_int(key, value, Long, 0)?
            }
            // Kafka allows 0 here (unlike the broker-wide key): flush on every append.
            "flush.messages" => config.flush_messages = parse_int(key, value, Long, 0)?,
            "flush.ms" => config.flush_ms = parse_int(key, value, Long, 0)?,
            "cleanup.policy" => config.cleanup_policy = parse_cleanup_policy(key, value)?,
            "compression.type" => config.compression_type = parse_compression_type(key, value)?,
            "delete.retention.ms" => config.delete_retention_ms = parse_int(key, value, Long, 0)?,
            "min.cleanable.dirty.ratio" => {
                config.min_cleanable_dirty_ratio = parse_double(key, value, 0.0, 1.0)?
            }
            "min.compaction.lag.ms" => {
                config.min_compaction_lag_ms = parse_int(key, value, Long, 0)?
            }
            "max.compaction.lag.ms" => {
                config.max_compaction_lag_ms = parse_int(key, value, Long, 1)?
            }
            "min.insync.replicas" => {
                let _: i32 = parse_int(key, value, Int, 1)?;
            }
            // Read by the controller from the topic's configs when it elects.
            "unclean.leader.election.enable" => {
                if !value.eq_ignore_ascii_case("true") && !value.eq_ignore_ascii_case("false") {
                    return Err(invalid(key, value, "must be true or false"));
                }
            }
            _ => match crate::topic_config::topic_config(key) {
                // Kafka's key, not honoured yet: stored and described,
                // checked against its type (see `topic_config`).
                Some(def) if !def.honoured => crate::topic_config::validate_unhonoured(def, value)
                    .map_err(|reason| invalid(key, value, &reason))?,
                _ => return Err(invalid(key, value, "unknown or unsupported topic config")),
            },
        }
    }
    Ok(config)
}

const MINUTE_MS: i64 = 60 * 1000;
const HOUR_MS: i64 = 60 * MINUTE_MS;

/// The Java integer type Kafka declares a key with; it bounds the accepted
/// range even where the Rust field is wider.
#[derive(Debug, Clone, Copy)]
enum JavaInt {
    Short,
    Int,
    Long,
}

impl JavaInt {
    fn max(self) -> i64 {
        match self {
            JavaInt::Short => i64::from(i16::MAX),
            JavaInt::Int => i64::from(i32::MAX),
            JavaInt::Long => i64::MAX,
        }
    }
}

fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn parse_int<T: TryFrom<i64>>(
    key: &str,
    raw: &str,
    java: JavaInt,
    min: i64,
) -> Result<T, ConfigError> {
    // Java's Properties keeps trailing blanks in values and Kafka trims them
    // before parsing; without this `broker.id=0 ` would be rejected.
    let value = raw.trim();
    let number: i64 = value.parse().map_err(|e: std::num::ParseIntError| {
        use std::num::IntErrorKind::{NegOverflow, PosOverflow};
        match e.kind() {
            PosOverflow | NegOverflow => {
                invalid(key, value, format!("out of range (at most {})", java.max()))
            }
            _ => invalid(key, value, "not an integer"),
        }
    })?;
    if number < min {
        return Err(invalid(key, value, format!("must be at least {min}")));
    }
    if number > java.max() {
        return Err(invalid(
            key,
            value,
            format!("must be at most {}", java.max()),
        ));
    }
    T::try_from(number).map_err(|_| invalid(key, value, "out of range"))
}

fn parse_bool(key: &str, raw: &str) -> Result<bool, ConfigError> {
    let value = raw.trim();
    if value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid(
            key,
            value,
            "not a boolean (expected true or false)",
        ))
    }
}

fn parse_timestamp_type(key: &str, raw: &str) -> Result<TimestampType, ConfigError> {
    match raw.trim() {
        "CreateTime" => Ok(TimestampType::CreateTime),
        "LogAppendTime" => Ok(TimestampType::LogAppendTime),
        other => Err(invalid(key, other, "expected CreateTime or LogAppendTime")),
    }
}

fn parse_cleanup_policy(key: &str, raw: &str) -> Result<CleanupPolicy, ConfigError> {
    let value = raw.trim();
    let mut policy = CleanupPolicy {
        delete: false,
        compact: false,
    };
    for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "delete" => policy.delete = true,
            "compact" => policy.compact = true,
            _ => return Err(invalid(key, value, "expected delete, compact or both")),
        }
    }
    if !policy.delete && !policy.compact {
        return Err(invalid(key, value, "expected delete, compact or both"));
    }
    Ok(policy)
}

/// A Java double in `[min, max]`.
fn parse_double(key: &str, raw: &str, min: f64, max: f64) -> Result<f64, ConfigError> {
    let value = raw.trim();
    let number: f64 = value
        .parse()
        .map_err(|_| invalid(key, value, "not a number"))?;
    if !number.is_finite() && number != f64::MAX || number < min || number > max {
        return Err(invalid(key, value, format!("must be in [{min}, {max}]")));
    }
    Ok(number)
}

fn parse_compression_type(key: &str, raw: &str) -> Result<CompressionType, ConfigError> {
    let value = raw.trim();
    [
        CompressionType::Producer,
        CompressionType::Uncompressed,
        CompressionType::Gzip,
        CompressionType::Snappy,
        CompressionType::Lz4,
        CompressionType::Zstd,
    ]
    .into_iter()
    .find(|codec| codec.name() == value)
    .ok_or_else(|| {
        invalid(
            key,
            value,
            "expected one of producer, uncompressed, gzip, snappy, lz4, zstd",
        )
    })
}

/// Kafka treats any negative retention size as "no limit"; storage only knows -1.
fn unlimited_if_negative(value: i64) -> i64 {
    value.max(-1)
}

fn unlimited_or_scaled(value: i64, unit_ms: i64) -> i64 {
    if value < 0 {
        -1
    } else {
        value.saturating_mul(unit_ms)
    }
}

fn shadowed(p: &Props, warnings: &mut Vec<ConfigWarning>, ignored: &str, winner: &str) {
    if p.raw(ignored).is_some() {
        warnings.push(ConfigWarning {
            key: ignored.to_string(),
            message: format!("ignored because {winner} is set"),
        });
    }
}

fn parse_log_dirs(key: &str, raw: &str) -> Result<Vec<PathBuf>, ConfigError> {
    let value = raw.trim();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in value.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        // Two partitions' logs in one directory would each treat the other's
        // files as their own during recovery.
        if dirs.contains(&dir) {
            return Err(invalid(
                key,
                value,
                format!("duplicate log directory {}", dir.display()),
            ));
        }
        dirs.push(dir);
    }
    if dirs.is_empty() {
        return Err(invalid(
            key,
            value,
            "at least one log directory is required",
        ));
    }
    Ok(dirs)
}

fn parse_listeners(key: &str, raw: &str) -> Result<Vec<Listener>, ConfigError> {
    let value = raw.trim();
    let mut listeners: Vec<Listener> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let listener = parse_listener(entry).map_err(|reason| invalid(key, value, reason))?;
        if listeners.iter().any(|l| l.name == listener.name) {
            return Err(invalid(
                key,
                value,
                format!("listener name {} is used twice", listener.name),
            ));
        }
        listeners.push(listener);
    }
    if listeners.is_empty() {
        return Err(invalid(key, value, "at least one listener is required"));
    }
    Ok(listeners)
}

fn parse_advertised_listeners(
    raw: &str,
    listeners: &[Listener],
) -> Result<Vec<Listener>, ConfigError> {
    const KEY: &str = "advertised.listeners";
    let value = raw.trim();
    let advertised = parse_listeners(KEY, value)?;
    for listener in &advertised {
        if !listeners.iter().any(|l| l.name == listener.name) {
            return Err(invalid(
                KEY,
                value,
                format!("listener {} is not in listeners", listener.name),
            ));
        }
        // Clients would dial the wildcard address and reach themselves.
        if listener.host == "0.0.0.0" || listener.host == "::" {
            return Err(invalid(
                KEY,
                value,
                format!("{listener} advertises a wildcard address clients cannot connect to"),
            ));
        }
    }
    Ok(advertised)
}

fn parse_listener(entry: &str) -> Result<Listener, String> {
    let (name, address) = entry
        .split_once("://")
        .ok_or_else(|| format!("'{entry}' is not of the form NAME://host:port"))?;
    let name = name.trim().to_ascii_uppercase();
    if name != "PLAINTEXT" {
        return Err(format!(
            "listener {name} is not supported yet; only PLAINTEXT is"
        ));
    }
    let (host, port) = match address.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed
                .split_once(']')
                .ok_or_else(|| format!("'{entry}' has an unclosed '['"))?;
            let port = rest
                .strip_prefix(':')
                .ok_or_else(|| format!("'{entry}' has no port"))?;
            (host, port)
        }
        None => address
            .rsplit_once(':')
            .ok_or_else(|| format!("'{entry}' has no port"))?,
    };
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '%' | '.' | '_' | ':'))
    {
        return Err(format!(
            "'{host}' in '{entry}' is not a valid host name or address"
        ));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| format!("'{port}' in '{entry}' is not a port number (0-65535)"))?;
    Ok(Listener {
        name,
        host: host.to_string(),
        port,
    })
}

/// Splits `h:p,h:p/chroot`; a bare `/` chroot means none, as in ZooKeeper.
fn split_chroot(connect: &str) -> (&str, Option<&str>) {
    match connect.find('/') {
        Some(slash) => {
            let chroot = &connect[slash..];
            (&connect[..slash], (chroot != "/").then_some(chroot))
        }
        None => (connect, None),
    }
}

fn validate_zookeeper_connect(connect: &str) -> Result<(), ConfigError> {
    const KEY: &str = "zookeeper.connect";
    let (servers, chroot) = split_chroot(connect);
    for server in servers.split(',').map(str::trim) {
        let (host, port) = match server.strip_prefix('[') {
            Some(bracketed) => match bracketed.split_once(']') {
                Some((host, rest)) => (host, rest.strip_prefix(':')),
                None => {
                    return Err(invalid(
                        KEY,
                        connect,
                        format!("'{server}' has an unclosed '['"),
                    ))
                }
            },
            None => match server.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (server, None),
            },
        };
        if host.is_empty() {
            return Err(invalid(
                KEY,
                connect,
                "expected host:port[,host:port...][/chroot]",
            ));
        }
        if let Some(port) = port {
            if !matches!(port.parse::<u16>(), Ok(p) if p > 0) {
                return Err(invalid(
                    KEY,
                    connect,
                    format!("'{port}' is not a port number (1-65535)"),
                ));
            }
        }
    }
    if let Some(chroot) = chroot {
        // ZooKeeper rejects these paths only when the broker first connects;
        // failing here points at the config line instead.
        let bad_segment = chroot[1..]
            .split('/')
            .any(|segment| segment.is_empty() || segment == "." || segment == "..");
        if bad_segment {
            return Err(invalid(
                KEY,
                connect,
                format!(
                    "chroot '{chroot}' must be an absolute path without empty, \
                     '.' or '..' parts or a trailing '/'"
                ),
            ));
        }
    }
    Ok(())
}

fn split_override(arg: &str) -> Result<(&str, &str), ConfigError> {
    let (key, value) = arg.split_once('=').ok_or_else(|| ConfigError::Override {
        arg: arg.to_string(),
        reason: "expected key=value".to_string(),
    })?;
    let key = key.trim();
    if key.is_empty() {
        return Err(ConfigError::Override {
            arg: arg.to_string(),
            reason: "empty key".to_string(),
        });
    }
    Ok((key, value))
}

/// Merged key/value pairs, with typed accessors that report the key on error.
struct Props {
    values: HashMap<String, String>,
}

impl Props {
    fn raw(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    fn opt_int<T: TryFrom<i64>>(
        &self,
        key: &str,
        java: JavaInt,
        min: i64,
    ) -> Result<Option<T>, ConfigError> {
        self.raw(key)
            .map(|raw| parse_int(key, raw, java, min))
            .transpose()
    }

    fn int<T: TryFrom<i64>>(
        &self,
        key: &str,
        java: JavaInt,
        min: i64,
        default: T,
    ) -> Result<T, ConfigError> {
        Ok(self.opt_int(key, java, min)?.unwrap_or(default))
    }

    fn double(&self, key: &str, min: f64, max: f64, default: f64) -> Result<f64, ConfigError> {
        self.raw(key)
            .map_or(Ok(default), |raw| parse_double(key, raw, min, max))
    }

    fn bool(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        self.raw(key)
            .map_or(Ok(default), |raw| parse_bool(key, raw))
    }
}

struct Entry {
    key: String,
    value: String,
    line: usize,
}

fn parse_properties(text: &str) -> Result<Vec<Entry>, ConfigError> {
    let prepared = prepare_for_parser(text)?;
    let mut entries = Vec::new();
    for line in PropertiesIter::new(prepared.as_bytes()) {
        let line = line.map_err(|e| ConfigError::Parse {
            reason: e.to_string(),
        })?;
        let number = line.line_number();
        if let LineContent::KVPair(key, value) = line.consume_content() {
            entries.push(Entry {
                key,
                value,
                line: number,
            });
        }
    }
    Ok(entries)
}

/// Works around two gaps in `java_properties` while keeping its line numbers:
/// it decodes input as ISO-8859-1 (so UTF-8 text would be garbled; we pass
/// non-ASCII as `\uXXXX` escapes instead), and it unescapes comment text, so
/// a comment such as `# C:\users` would be a fatal "malformed \uxxxx" error
/// (Java ignores comments entirely; we blank them).
fn prepare_for_parser(text: &str) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut continues = false;
    for (index, line) in physical_lines(text).into_iter().enumerate() {
        // A `#` on a continuation line is data, not a comment (Java rule).
        let is_comment = !continues
            && line
                .trim_start_matches([' ', '\t', '\x0c'])
                .starts_with(['#', '!']);
        if !is_comment {
            continues = line.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1;
            escape_non_ascii(line, index + 1, &mut out)?;
        }
        out.push('\n');
    }
    Ok(out)
}

/// Splits on `\n`, `\r\n` and lone `\r`, the three terminators Java accepts.
fn physical_lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                i += if bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

fn escape_non_ascii(line: &str, line_number: usize, out: &mut String) -> Result<(), ConfigError> {
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                // `\é` means `é`; escaping the `é` alone would turn the
                // backslash into a literal one.
                Some(next) if !next.is_ascii() => push_unicode_escape(next, line_number, out)?,
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            }
        } else if c.is_ascii() {
            out.push(c);
        } else {
            push_unicode_escape(c, line_number, out)?;
        }
    }
    Ok(())
}

fn push_unicode_escape(c: char, line_number: usize, out: &mut String) -> Result<(), ConfigError> {
    let code = u32::from(c);
    // The parser rejects `\u` escapes of surrogates, so characters outside
    // the Basic Multilingual Plane have no representation it accepts.
    if code > 0xFFFF {
        return Err(ConfigError::Parse {
            reason: format!("line {line_number}: character {c:?} (U+{code:X}) is not supported"),
        });
    }
    out.push_str(&format!("\\u{code:04x}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (BrokerConfig, Vec<ConfigWarning>) {
        BrokerConfig::from_properties(text, &[]).expect("config should parse")
    }

    fn parse_err(text: &str) -> ConfigError {
        BrokerConfig::from_properties(text, &[]).expect_err("config should be rejected")
    }

    fn topic(pairs: &[(&str, &str)]) -> Result<LogConfig, ConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        apply_topic_overrides(&LogConfig::default(), &pairs)
    }

    fn assert_invalid(err: ConfigError, expected_key: &str, reason_part: &str) {
        match &err {
            ConfigError::InvalidValue { key, reason, .. } => {
                assert_eq!(key, expected_key, "{err}");
                assert!(
                    reason.contains(reason_part),
                    "reason of {err:?} lacks {reason_part:?}"
                );
            }
            other => panic!("expected InvalidValue for {expected_key}, got {other:?}"),
        }
    }

    /// An empty file yields exactly Kafka's defaults and no warnings.
    #[test]
    fn empty_text_gives_defaults() {
        let (config, warnings) = parse("");
        assert_eq!(config, BrokerConfig::default());
        assert!(warnings.is_empty());
    }

    /// Spot-checks the defaults against Kafka's documented values.
    #[test]
    fn defaults_match_kafka() {
        let d = BrokerConfig::default();
        assert_eq!(d.broker_id, -1);
        assert_eq!(d.log_dirs, vec![PathBuf::from("/tmp/kafka-logs")]);
        assert_eq!(d.listeners, vec![default_listener()]);
        assert_eq!(d.advertised_listeners, d.listeners);
        assert_eq!(
            d.zookeeper_connection_timeout_ms,
            d.zookeeper_session_timeout_ms
        );
        assert_eq!(d.log_segment_bytes, 1_073_741_824);
        assert_eq!(d.log_roll_ms, 168 * HOUR_MS);
        assert_eq!(d.log_retention_ms, 168 * HOUR_MS);
        assert_eq!(d.message_max_bytes, 1_048_588);
        assert_eq!(d.log_flush_interval_messages, 9_223_372_036_854_775_807);
        assert_eq!(d.log_flush_interval_ms, i64::MAX);
        assert_eq!(d.max_connections, 2_147_483_647);
        assert_eq!(d.offsets_retention_minutes, 10_080);
        assert_eq!(d.log_config(), LogConfig::default());
    }

    /// The properties syntax (comments, separators, continuations, escapes) is honoured.
    #[test]
    fn java_properties_syntax() {
        let text = "# comment\n! also a comment\nbroker.id : 7\nnum.partitions 3\n\
                    log.dirs = /a,\\\n    /b\nzookeeper.connect=h\\:1\n   \n";
        let (config, warnings) = parse(text);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(config.broker_id, 7);
        assert_eq!(config.num_partitions, 3);
        assert_eq!(
            config.log_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert_eq!(config.zookeeper_connect.as_deref(), Some("h:1"));
    }

    /// A backslash sequence in a comment is ignored, as Java does, instead of failing the parse.
    #[test]
    fn comments_are_not_unescaped() {
        let (config, _) = parse("# logs live in C:\\users\\kafka\nbroker.id=1\n");
        assert_eq!(config.broker_id, 1);
    }

    /// A `#` on a continuation line is part of the value, not a comment.
    #[test]
    fn hash_on_continuation_line_is_data() {
        let (config, _) = parse("log.dirs=/a\\\n#b\n");
        assert_eq!(config.log_dirs, vec![PathBuf::from("/a#b")]);
    }

    /// UTF-8 values survive, including after a backslash, and CRLF / CR line ends work.
    #[test]
    fn non_ascii_and_line_endings() {
        let (config, _) = parse("log.dirs=/d\u{e9}j\\\u{e0}\r\nbroker.id=2\rnum.partitions=4");
        assert_eq!(config.log_dirs, vec![PathBuf::from("/d\u{e9}j\u{e0}")]);
        assert_eq!(config.broker_id, 2);
        assert_eq!(config.num_partitions, 4);
    }

    /// A malformed `\u` escape in a value is a Parse error, not a panic.
    #[test]
    fn malformed_unicode_escape_is_parse_error() {
        assert!(matches!(
            parse_err("log.dirs=/x\\uzzzz\n"),
            ConfigError::Parse { .. }
        ));
    }

    /// Trailing blanks in values (kept by Java's parser) don't break numbers or booleans.
    #[test]
    fn values_are_trimmed() {
        let (config, _) = parse("broker.id=5 \t\ndelete.topic.enable=FALSE  \n");
        assert_eq!(config.broker_id, 5);
        assert!(!config.delete_topic_enable);
    }

    /// log.retention.ms beats .minutes beats .hours, and shadowed aliases are warned about.
    #[test]
    fn retention_precedence() {
        assert_eq!(
            parse("log.retention.hours=2").0.log_retention_ms,
            2 * HOUR_MS
        );
        let (config, warnings) = parse("log.retention.hours=2\nlog.retention.minutes=3");
        assert_eq!(config.log_retention_ms, 3 * MINUTE_MS);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].key, "log.retention.hours");
        let (config, warnings) =
            parse("log.retention.hours=2\nlog.retention.minutes=3\nlog.retention.ms=4");
        assert_eq!(config.log_retention_ms, 4);
        assert_eq!(warnings.len(), 2);
    }

    /// -1 in any retention unit means unlimited; below -1 is rejected.
    #[test]
    fn retention_unlimited() {
        assert_eq!(parse("log.retention.hours=-1").0.log_retention_ms, -1);
        assert_eq!(parse("log.retention.minutes=-1").0.log_retention_ms, -1);
        assert_eq!(parse("log.retention.ms=-1").0.log_retention_ms, -1);
        assert_invalid(
            parse_err("log.retention.ms=-2"),
            "log.retention.ms",
            "at least -1",
        );
        assert_eq!(parse("log.retention.bytes=-5").0.log_retention_bytes, -1);
    }

    /// A shadowed alias is still validated, so a typo there is not silently kept.
    #[test]
    fn shadowed_alias_is_still_validated() {
        assert_invalid(
            parse_err("log.retention.ms=5\nlog.retention.hours=x"),
            "log.retention.hours",
            "not an integer",
        );
    }

    /// log.roll.ms beats log.roll.hours.
    #[test]
    fn roll_precedence() {
        assert_eq!(parse("log.roll.hours=1").0.log_roll_ms, HOUR_MS);
        assert_eq!(parse("log.roll.hours=1\nlog.roll.ms=10").0.log_roll_ms, 10);
        assert_invalid(
            parse_err("log.roll.hours=0"),
            "log.roll.hours",
            "at least 1",
        );
    }

    /// log.dirs beats log.dir; log.dir alone is used; empty or duplicate dirs are rejected.
    #[test]
    fn log_dir_aliases() {
        assert_eq!(parse("log.dir=/x").0.log_dirs, vec![PathBuf::from("/x")]);
        let (config, warnings) = parse("log.dir=/x\nlog.dirs=/y, /z");
        assert_eq!(
            config.log_dirs,
            vec![PathBuf::from("/y"), PathBuf::from("/z")]
        );
        assert_eq!(warnings[0].key, "log.dir");
        assert_invalid(parse_err("log.dirs= , "), "log.dirs", "at least one");
        assert_invalid(parse_err("log.dirs=/a,/a"), "log.dirs", "duplicate");
    }

    /// Unset fallbacks follow the key they default to, including after it is changed.
    #[test]
    fn unset_keys_follow_their_fallback() {
        let (config, _) =
            parse("zookeeper.session.timeout.ms=9000\nlog.flush.scheduler.interval.ms=1000");
        assert_eq!(config.zookeeper_connection_timeout_ms, 9000);
        assert_eq!(config.log_flush_interval_ms, 1000);
        let (config, _) = parse("zookeeper.connection.timeout.ms=100\nlog.flush.interval.ms=7");
        assert_eq!(config.zookeeper_connection_timeout_ms, 100);
        assert_eq!(config.log_flush_interval_ms, 7);
    }

    /// The error for a bad value names the key, the value and the reason.
    #[test]
    fn invalid_value_message_names_key() {
        let err = parse_err("log.segment.bytes=abc");
        assert_eq!(
            err.to_string(),
            "invalid value 'abc' for log.segment.bytes: not an integer"
        );
    }

    /// Ranges follow Kafka: minimums, Java int bounds, and i64 overflow are all rejected.
    #[test]
    fn integer_ranges() {
        assert_invalid(
            parse_err("log.segment.bytes=13"),
            "log.segment.bytes",
            "at least 14",
        );
        assert_invalid(
            parse_err("log.segment.bytes=2147483648"),
            "log.segment.bytes",
            "at most 2147483647",
        );
        assert_invalid(
            parse_err("log.index.size.max.bytes=3"),
            "log.index.size.max.bytes",
            "at least 4",
        );
        assert_invalid(
            parse_err("num.io.threads=0"),
            "num.io.threads",
            "at least 1",
        );
        assert_invalid(
            parse_err("message.max.bytes=-1"),
            "message.max.bytes",
            "at least 0",
        );
        assert_invalid(parse_err("broker.id=-2"), "broker.id", "at least -1");
        assert_invalid(
            parse_err("offsets.topic.replication.factor=40000"),
            "offsets.topic.replication.factor",
            "at most 32767",
        );
        assert_invalid(
            parse_err("log.retention.ms=99999999999999999999"),
            "log.retention.ms",
            "out of range",
        );
        assert_invalid(
            parse_err("num.partitions=1.5"),
            "num.partitions",
            "not an integer",
        );
        assert_eq!(
            parse("socket.send.buffer.bytes=-1")
                .0
                .socket_send_buffer_bytes,
            -1
        );
    }

    /// Controlled shutdown and the leader rebalance take Kafka's keys and
    /// defaults; a check interval under one second is refused.
    #[test]
    fn leadership_keys() {
        let d = BrokerConfig::default();
        assert!(d.controlled_shutdown_enable && d.auto_leader_rebalance_enable);
        assert_eq!(
            (
                d.controlled_shutdown_max_retries,
                d.controlled_shutdown_retry_backoff_ms,
                d.leader_imbalance_check_interval_seconds,
                d.leader_imbalance_per_broker_percentage
            ),
            (3, 5_000, 300, 10)
        );
        let (config, warnings) = parse(
            "controlled.shutdown.enable=false\ncontrolled.shutdown.max.retries=1\n\
             controlled.shutdown.retry.backoff.ms=100\nauto.leader.rebalance.enable=false\n\
             leader.imbalance.check.interval.seconds=2\nleader.imbalance.per.broker.percentage=25",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!config.controlled_shutdown_enable && !config.auto_leader_rebalance_enable);
        assert_eq!(
            (
                config.controlled_shutdown_max_retries,
                config.controlled_shutdown_retry_backoff_ms,
                config.leader_imbalance_check_interval_seconds,
                config.leader_imbalance_per_broker_percentage
            ),
            (1, 100, 2, 25)
        );
        assert_invalid(
            parse_err("leader.imbalance.check.interval.seconds=0"),
            "leader.imbalance.check.interval.seconds",
            "",
        );
    }

    /// Booleans are case-insensitive true/false and nothing else.
    #[test]
    fn booleans() {
        assert!(
            parse("unclean.leader.election.enable=True")
                .0
                .unclean_leader_election_enable
        );
        assert_invalid(
            parse_err("auto.create.topics.enable=yes"),
            "auto.create.topics.enable",
            "boolean",
        );
    }

    /// Enumerated keys accept exactly Kafka's spellings.
    #[test]
    fn enums() {
        let (config, _) = parse("log.message.timestamp.type=LogAppendTime\ncompression.type=zstd");
        assert_eq!(
            config.log_message_timestamp_type,
            TimestampType::LogAppendTime
        );
        assert_eq!(config.compression_type, CompressionType::Zstd);
        assert_invalid(
            parse_err("compression.type=brotli"),
            "compression.type",
            "expected one of",
        );
        assert_eq!(
            parse(
                "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"
            )
            .0
            .replica_selector,
            ReplicaSelector::RackAware
        );
        assert_eq!(
            parse("replica.selector.class=").0.replica_selector,
            ReplicaSelector::LeaderOnly
        );
        assert_invalid(
            parse_err("replica.selector.class=com.example.NearestReplica"),
            "replica.selector.class",
            "RackAwareReplicaSelector",
        );
        assert_invalid(
            parse_err("log.message.timestamp.type=createtime"),
            "log.message.timestamp.type",
            "CreateTime",
        );
        assert_invalid(
            parse_err("log.cleanup.policy=shred"),
            "log.cleanup.policy",
            "expected delete",
        );
        assert_invalid(
            parse_err("log.cleaner.min.cleanable.ratio=1.5"),
            "log.cleaner.min.cleanable.ratio",
            "must be in",
        );
    }

    /// Unknown and repeated keys warn but do not fail.
    #[test]
    fn unknown_and_duplicate_keys_warn() {
        let (config, warnings) = parse("ssl.keystore.location=/k\nbroker.id=1\nbroker.id=2");
        assert_eq!(config.broker_id, 2);
        assert_eq!(warnings.len(), 2);
        assert_eq!(warnings[0].key, "ssl.keystore.location");
        assert!(warnings[0].message.contains("line 1"));
        assert_eq!(warnings[1].key, "broker.id");
        assert!(warnings[1].message.contains("line 2"));
    }

    /// Overrides beat the file and each other in order; unknown ones warn; malformed ones fail.
    #[test]
    fn overrides() {
        let overrides = vec![
            "broker.id=3".to_string(),
            "broker.id=4".to_string(),
            "log.dirs=/o=1".to_string(),
            "nope=1".to_string(),
        ];
        let (config, warnings) =
            BrokerConfig::from_properties("broker.id=1", &overrides).expect("parses");
        assert_eq!(config.broker_id, 4);
        assert_eq!(config.log_dirs, vec![PathBuf::from("/o=1")]);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].key, "nope");
        let err =
            BrokerConfig::from_properties("", &["broker.id".to_string()]).expect_err("no '='");
        assert!(matches!(err, ConfigError::Override { .. }), "{err:?}");
        let err =
            BrokerConfig::from_properties("", &["broker.id=x".to_string()]).expect_err("bad value");
        assert_invalid(err, "broker.id", "not an integer");
    }

    /// Listener lists parse hosts, IPv6 brackets, wildcard and ports, and normalise names.
    #[test]
    fn listeners_parse() {
        let (config, _) = parse("listeners=plaintext://[::1]:9093");
        assert_eq!(
            config.listeners,
            vec![Listener {
                name: "PLAINTEXT".into(),
                host: "::1".into(),
                port: 9093
            }]
        );
        assert_eq!(config.listeners[0].to_string(), "PLAINTEXT://[::1]:9093");
        assert_eq!(config.advertised_listeners, config.listeners);
        let (config, _) = parse(
            "listeners=PLAINTEXT://0.0.0.0:9092\n\
             advertised.listeners=PLAINTEXT://broker1.example.com:19092",
        );
        assert_eq!(config.listeners[0].host, "0.0.0.0");
        assert_eq!(config.advertised_listeners[0].host, "broker1.example.com");
        assert_eq!(config.advertised_listeners[0].port, 19092);
    }

    /// Unsupported protocols, bad ports, duplicates and wildcard advertised hosts are rejected.
    #[test]
    fn listeners_rejected() {
        assert_invalid(
            parse_err("listeners=SSL://:9093"),
            "listeners",
            "only PLAINTEXT",
        );
        assert_invalid(
            parse_err("listeners=PLAINTEXT://h:99999"),
            "listeners",
            "not a port",
        );
        assert_invalid(parse_err("listeners=PLAINTEXT://h"), "listeners", "no port");
        assert_invalid(
            parse_err("listeners=h:9092"),
            "listeners",
            "NAME://host:port",
        );
        assert_invalid(
            parse_err("listeners=PLAINTEXT://h/x:9092"),
            "listeners",
            "not a valid host",
        );
        assert_invalid(
            parse_err("listeners=PLAINTEXT://:1,PLAINTEXT://:2"),
            "listeners",
            "used twice",
        );
        assert_invalid(parse_err("listeners="), "listeners", "at least one");
        assert_invalid(
            parse_err("advertised.listeners=PLAINTEXT://0.0.0.0:9092"),
            "advertised.listeners",
            "wildcard",
        );
    }

    /// zookeeper.connect keeps its chroot, which the helpers split out; bad strings are rejected.
    #[test]
    fn zookeeper_connect() {
        let (config, _) = parse("zookeeper.connect=a:2181,b:2182/kafka/prod");
        assert_eq!(config.zookeeper_servers(), vec!["a:2181", "b:2182"]);
        assert_eq!(config.zookeeper_chroot(), Some("/kafka/prod"));
        let (config, _) = parse("zookeeper.connect=a/");
        assert_eq!(config.zookeeper_chroot(), None);
        assert_eq!(parse("zookeeper.connect=").0.zookeeper_connect, None);
        assert_invalid(
            parse_err("zookeeper.connect=a:2181/kafka/"),
            "zookeeper.connect",
            "chroot",
        );
        assert_invalid(
            parse_err("zookeeper.connect=a:x"),
            "zookeeper.connect",
            "port",
        );
        assert_invalid(
            parse_err("zookeeper.connect=a,,b"),
            "zookeeper.connect",
            "host:port",
        );
    }

    /// Cross-key constraints Kafka enforces at startup are enforced here too.
    #[test]
    fn combinations() {
        assert_invalid(
            parse_err("queued.max.request.bytes=1000"),
            "queued.max.request.bytes",
            "socket.request.max.bytes",
        );
        assert_eq!(
            parse("queued.max.request.bytes=104857600")
                .0
                .queued_max_request_bytes,
            104_857_600
        );
        assert_invalid(
            parse_err("replica.fetch.wait.max.ms=40000"),
            "replica.fetch.wait.max.ms",
            "replica.lag.time.max.ms",
        );
        assert_invalid(
            parse_err("group.min.session.timeout.ms=2000000"),
            "group.min.session.timeout.ms",
            "group.max.session.timeout.ms",
        );
    }

    /// log_config carries every broker-wide log.* value into the storage config.
    #[test]
    fn log_config_maps_fields() {
        let (config, _) = parse(
            "log.segment.bytes=1000\nlog.roll.ms=2000\nlog.index.size.max.bytes=3000\n\
             log.index.interval.bytes=40\nlog.retention.ms=5000\nlog.retention.bytes=6000\n\
             message.max.bytes=7000\nlog.message.timestamp.type=LogAppendTime\n\
             log.message.timestamp.difference.max.ms=10\nlog.message.timestamp.before.max.ms=11\n\
             log.message.timestamp.after.max.ms=12\n\
             log.flush.interval.messages=8\nlog.flush.interval.ms=9\n\
             producer.id.expiration.ms=14\nlog.cleanup.policy=compact,delete\n\
             log.cleaner.delete.retention.ms=15\nlog.cleaner.min.cleanable.ratio=0.25\n\
             log.cleaner.min.compaction.lag.ms=16\nlog.cleaner.max.compaction.lag.ms=17\n\
             compression.type=lz4",
        );
        let expected = LogConfig {
            segment_bytes: 1000,
            segment_ms: 2000,
            segment_index_bytes: 3000,
            index_interval_bytes: 40,
            retention_ms: 5000,
            retention_bytes: 6000,
            max_message_bytes: 7000,
            message_timestamp_type: TimestampType::LogAppendTime,
            message_timestamp_difference_max_ms: 10,
            message_timestamp_before_max_ms: 11,
            message_timestamp_after_max_ms: 12,
            flush_messages: 8,
            flush_ms: 9,
            producer_id_expiration_ms: 14,
            cleanup_policy: CleanupPolicy {
                delete: true,
                compact: true,
            },
            delete_retention_ms: 15,
            min_cleanable_dirty_ratio: 0.25,
            min_compaction_lag_ms: 16,
            max_compaction_lag_ms: 17,
            compression_type: CompressionType::Lz4,
        };
        assert_eq!(config.log_config(), expected);
    }

    /// Every supported topic key lands in the matching LogConfig field; later duplicates win.
    #[test]
    fn topic_overrides_apply() {
        let config = topic(&[
            ("retention.ms", "1"),
            ("retention.bytes", "2"),
            ("segment.bytes", "300"),
            ("segment.ms", "4"),
            ("segment.index.bytes", "500"),
            ("index.interval.bytes", "6"),
            ("max.message.bytes", "7"),
            ("message.timestamp.type", "LogAppendTime"),
            ("message.timestamp.difference.max.ms", "11"),
            ("message.timestamp.before.max.ms", "12"),
            ("message.timestamp.after.max.ms", "13"),
            ("flush.messages", "0"),
            ("flush.ms", "9"),
            ("cleanup.policy", "compact"),
            ("delete.retention.ms", "21"),
            ("min.cleanable.dirty.ratio", "0.1"),
            ("min.compaction.lag.ms", "22"),
            ("max.compaction.lag.ms", "23"),
            ("compression.type", "gzip"),
            ("min.insync.replicas", "2"),
            ("retention.ms", "10"),
        ])
        .expect("valid overrides");
        let expected = LogConfig {
            segment_bytes: 300,
            segment_ms: 4,
            segment_index_bytes: 500,
            index_interval_bytes: 6,
            retention_ms: 10,
            retention_bytes: 2,
            max_message_bytes: 7,
            message_timestamp_type: TimestampType::LogAppendTime,
            message_timestamp_difference_max_ms: 11,
            message_timestamp_before_max_ms: 12,
            message_timestamp_after_max_ms: 13,
            flush_messages: 0,
            flush_ms: 9,
            producer_id_expiration_ms: LogConfig::default().producer_id_expiration_ms,
            cleanup_policy: CleanupPolicy::COMPACT,
            delete_retention_ms: 21,
            min_cleanable_dirty_ratio: 0.1,
            min_compaction_lag_ms: 22,
            max_compaction_lag_ms: 23,
            compression_type: CompressionType::Gzip,
        };
        assert_eq!(config, expected);
        assert_eq!(topic(&[]).expect("no overrides"), LogConfig::default());
    }

    /// Topic overrides reject unknown keys, compaction and out-of-range values.
    #[test]
    fn topic_overrides_rejected() {
        assert_invalid(
            topic(&[("retention.hours", "1")]).unwrap_err(),
            "retention.hours",
            "unknown",
        );
        assert_invalid(
            topic(&[("cleanup.policy", "compact,shred")]).unwrap_err(),
            "cleanup.policy",
            "expected delete",
        );
        assert_invalid(
            topic(&[("min.cleanable.dirty.ratio", "NaN")]).unwrap_err(),
            "min.cleanable.dirty.ratio",
            "must be in",
        );
        assert_invalid(
            topic(&[("min.insync.replicas", "0")]).unwrap_err(),
            "min.insync.replicas",
            "at least 1",
        );
        assert_invalid(
            topic(&[("segment.bytes", "10")]).unwrap_err(),
            "segment.bytes",
            "at least 14",
        );
        assert_invalid(
            topic(&[("segment.ms", "0")]).unwrap_err(),
            "segment.ms",
            "at least 1",
        );
        assert_invalid(
            topic(&[("retention.ms", "-2")]).unwrap_err(),
            "retention.ms",
            "at least -1",
        );
    }

    /// Every key of Kafka's topic config table is accepted with a valid value.
    #[test]
    fn topic_key_list_is_complete() {
        use crate::topic_config::{ConfigKind, TOPIC_CONFIGS};
        for def in TOPIC_CONFIGS {
            let value = match (def.name, def.kind) {
                ("message.timestamp.type", _) => "CreateTime",
                ("cleanup.policy", _) => "delete",
                (_, ConfigKind::Boolean) => "false",
                (_, ConfigKind::String | ConfigKind::List | ConfigKind::Double) => def.default,
                _ => "100",
            };
            topic(&[(def.name, value)]).unwrap_or_else(|e| panic!("{}: {e}", def.name));
        }
    }

    /// Every key in BROKER_CONFIG_KEYS is handled (parsed or rejected by name), never "unknown".
    #[test]
    fn broker_key_list_is_complete() {
        for key in BROKER_CONFIG_KEYS {
            match BrokerConfig::from_properties(&format!("{key}=x"), &[]) {
                Ok((_, warnings)) => assert!(warnings.is_empty(), "{key}: {warnings:?}"),
                Err(ConfigError::InvalidValue { key: named, .. }) => assert_eq!(named, *key),
                Err(other) => panic!("{key}: {other:?}"),
            }
        }
    }

    /// Characters outside the BMP are a Parse error rather than garbage.
    #[test]
    fn astral_characters_rejected() {
        assert!(matches!(
            parse_err("log.dirs=/\u{1F600}"),
            ConfigError::Parse { .. }
        ));
    }
}
