//! The broker's config keys, each declared once: its Kafka name, the
//! `BrokerConfig` field it sets, Rust type, Kafka's default, how a value is
//! checked, a line of documentation, and whether ferrolog honours it yet.
//! The `BrokerConfig` struct, its `Default`, the parser, the key list and
//! what DescribeConfigs shows are all generated from this one table, so
//! adding a key is one row. Keys whose value is computed from several
//! lines (aliases such as `log.retention.hours`, listener lists, fallbacks)
//! are declared in the `by_hand` section and parsed in `mod.rs`.
//! Nothing here does I/O.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::security::{
    default_protocol_map, AuthorizerClass, ConnectionOverrides, SaslMechanisms, SecurityProtocol,
    SuperUsers,
};
use super::topic::ConfigKind;
use super::{
    default_listener, invalid, parse_bool, parse_cleanup_policy, parse_compression_type,
    parse_double, parse_int, parse_timestamp_type, ConfigError, JavaInt, Listener, Props,
    ReplicaSelector, HOUR_MS, MIN_INDEX_BYTES, MIN_SEGMENT_BYTES,
};
use crate::storage::config::{CleanupPolicy, CompressionType, LogConfig, TimestampType};

/// How a key's text is checked, beyond its Rust type.
#[derive(Debug, Clone, Copy)]
pub enum Rule {
    /// Kafka `SHORT`/`INT`/`LONG` at least the given value.
    Short(i64),
    /// Kafka `INT` at least the given value.
    Int(i64),
    /// Kafka `LONG` at least the given value.
    Long(i64),
    /// Kafka `DOUBLE` in `[min, max]`.
    Double(f64, f64),
    /// Kafka `BOOLEAN`.
    Boolean,
    /// A name the value's type knows (codec, timestamp type, ...).
    Str,
    /// A comma-separated list of names the value's type knows.
    List,
    /// A Java class name; only the ones ferrolog has built in are accepted.
    Class,
}

impl Rule {
    /// The Kafka config type DescribeConfigs reports.
    pub const fn kind(self) -> ConfigKind {
        match self {
            Rule::Short(_) => ConfigKind::Short,
            Rule::Int(_) => ConfigKind::Int,
            Rule::Long(_) => ConfigKind::Long,
            Rule::Double(..) => ConfigKind::Double,
            Rule::Boolean => ConfigKind::Boolean,
            Rule::Str => ConfigKind::String,
            Rule::List => ConfigKind::List,
            Rule::Class => ConfigKind::Class,
        }
    }

    fn java_int(self) -> Option<(JavaInt, i64)> {
        match self {
            Rule::Short(min) => Some((JavaInt::Short, min)),
            Rule::Int(min) => Some((JavaInt::Int, min)),
            Rule::Long(min) => Some((JavaInt::Long, min)),
            _ => None,
        }
    }
}

/// One broker key as the table declares it.
#[derive(Debug, Clone, Copy)]
pub struct BrokerKeyDef {
    /// Kafka's name of the key.
    pub name: &'static str,
    /// Its Kafka config type.
    pub kind: ConfigKind,
    /// One line for operators (DescribeConfigs `documentation`).
    pub doc: &'static str,
    /// `Some(why)`: accepted and checked, but it changes nothing yet; the
    /// broker says so at start-up when a file sets it.
    pub ignored: Option<&'static str>,
}

/// The declared key named `name`.
pub fn broker_key(name: &str) -> Option<&'static BrokerKeyDef> {
    BROKER_KEYS.iter().find(|def| def.name == name)
}

/// A value type a key can have: parsed from the file's text under a
/// [`Rule`], and printed back as Kafka prints it.
pub trait KeyValue: Sized {
    /// Parse `raw`, the value of `key`, under `rule`.
    fn parse(key: &str, raw: &str, rule: Rule) -> Result<Self, ConfigError>;
    /// The value as Kafka prints it.
    fn text(&self) -> String;
}

fn misdeclared(key: &str, raw: &str) -> ConfigError {
    invalid(
        key,
        raw,
        "the key's rule does not fit its type (a ferrolog bug)",
    )
}

/// A double as Java prints it (`0.5`, `1.0`, `1.7976931348623157E308`).
pub fn java_double(value: f64) -> String {
    if value == f64::MAX {
        "1.7976931348623157E308".to_string()
    } else if value.fract() == 0.0 && value.abs() < 1e16 {
        format!("{value:.1}")
    } else {
        value.to_string()
    }
}

macro_rules! integer_values {
    ($($ty:ty),*) => {$(
        impl KeyValue for $ty {
            fn parse(key: &str, raw: &str, rule: Rule) -> Result<Self, ConfigError> {
                let (java, min) = rule.java_int().ok_or_else(|| misdeclared(key, raw))?;
                parse_int(key, raw, java, min)
            }
            fn text(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
integer_values!(i16, i32, i64, u32, u64, usize);

impl KeyValue for bool {
    fn parse(key: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        parse_bool(key, raw)
    }
    fn text(&self) -> String {
        self.to_string()
    }
}

impl KeyValue for f64 {
    fn parse(key: &str, raw: &str, rule: Rule) -> Result<Self, ConfigError> {
        match rule {
            Rule::Double(min, max) => parse_double(key, raw, min, max),
            _ => Err(misdeclared(key, raw)),
        }
    }
    fn text(&self) -> String {
        java_double(*self)
    }
}

impl KeyValue for TimestampType {
    fn parse(key: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        parse_timestamp_type(key, raw)
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl KeyValue for CleanupPolicy {
    fn parse(key: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        parse_cleanup_policy(key, raw)
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl KeyValue for CompressionType {
    fn parse(key: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        parse_compression_type(key, raw)
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl KeyValue for String {
    fn parse(_: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        Ok(raw.trim().to_string())
    }
    fn text(&self) -> String {
        self.clone()
    }
}

impl KeyValue for AuthorizerClass {
    fn parse(_: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        AuthorizerClass::parse(raw)
    }
    fn text(&self) -> String {
        self.class_name().to_string()
    }
}

impl KeyValue for ConnectionOverrides {
    fn parse(_: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        ConnectionOverrides::parse(raw)
    }
    fn text(&self) -> String {
        ConnectionOverrides::text(self)
    }
}

impl KeyValue for SaslMechanisms {
    fn parse(_: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        Ok(SaslMechanisms::parse(raw))
    }
    fn text(&self) -> String {
        SaslMechanisms::text(self)
    }
}

impl KeyValue for super::HttpListener {
    fn parse(_: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        super::HttpListener::parse(raw)
    }
    fn text(&self) -> String {
        super::HttpListener::text(self)
    }
}

impl KeyValue for SuperUsers {
    fn parse(_: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        SuperUsers::parse(raw)
    }
    fn text(&self) -> String {
        SuperUsers::text(self)
    }
}

impl KeyValue for ReplicaSelector {
    fn parse(_: &str, raw: &str, _: Rule) -> Result<Self, ConfigError> {
        ReplicaSelector::parse(raw)
    }
    fn text(&self) -> String {
        match self {
            ReplicaSelector::LeaderOnly => String::new(),
            ReplicaSelector::RackAware => ReplicaSelector::RACK_AWARE_CLASS.to_string(),
        }
    }
}

macro_rules! ignored {
    () => {
        None
    };
    ($why:literal) => {
        Some($why)
    };
}

macro_rules! broker_config {
    (
        derived {
            $( $(#[doc = $ddoc:literal])* $dfield:ident: $dty:ty = $ddefault:expr; )*
        }
        by_hand {
            $( $(#[doc = $hdoc:literal])* $hkey:literal: $hkind:ident; )*
        }
        keys {
            $(
                $(#[doc = $doc:literal])*
                $key:literal => $field:ident: $ty:ty = $default:expr, $rule:expr
                    $(, ignored $why:literal)?;
            )*
        }
    ) => {
        /// The broker's configuration, one field per Kafka key (aliases such
        /// as `log.retention.hours`/`.minutes`/`.ms` are resolved into one
        /// field). Generated from the table in `config/keys.rs`.
        ///
        /// Types follow how a value is used rather than Kafka's Java type:
        /// counts of in-process things are `usize`; ids, partition counts and
        /// replica counts keep the wire protocol's `i32`/`i16`; sizes and
        /// durations are `u64`, except where a negative value means something
        /// or where the value feeds [`LogConfig`]. Ranges are still Kafka's.
        #[derive(Debug, Clone, PartialEq)]
        pub struct BrokerConfig {
            $( $(#[doc = $ddoc])* pub $dfield: $dty, )*
            $( #[doc = concat!("`", $key, "`:", $($doc),*)] pub $field: $ty, )*
        }

        impl Default for BrokerConfig {
            /// Kafka's defaults.
            fn default() -> Self {
                BrokerConfig {
                    $( $dfield: $ddefault, )*
                    $( $field: $default, )*
                }
            }
        }

        /// Every broker key the parser understands, sorted by name; any
        /// other key in a file or override is reported as a warning.
        pub const BROKER_KEYS: &[BrokerKeyDef] = &{
            let mut keys = [
                $( BrokerKeyDef {
                    name: $hkey,
                    kind: ConfigKind::$hkind,
                    doc: concat!($($hdoc),*),
                    ignored: None,
                }, )*
                $( BrokerKeyDef {
                    name: $key,
                    kind: { use Rule::*; $rule }.kind(),
                    doc: concat!($($doc),*),
                    ignored: ignored!($($why)?),
                }, )*
            ];
            sort_by_name(&mut keys);
            keys
        };

        impl BrokerConfig {
            /// The table's keys, parsed from what the file and overrides set;
            /// derived fields keep their defaults for `mod.rs` to fill in.
            pub(super) fn parse_keys(p: &Props) -> Result<BrokerConfig, ConfigError> {
                #[allow(unused_imports)]
                use Rule::*;
                let mut config = BrokerConfig::default();
                $(
                    if let Some(raw) = p.raw($key) {
                        config.$field = <$ty as KeyValue>::parse($key, raw, $rule)?;
                    }
                )*
                Ok(config)
            }

            /// The value of a key declared in the `keys` section, as Kafka prints it.
            pub(super) fn table_value(&self, key: &str) -> Option<String> {
                match key {
                    $( $key => Some(self.$field.text()), )*
                    _ => None,
                }
            }
        }
    };
}

/// A `const` insertion sort: the table reads best grouped by subject, but
/// lookups and tests want it sorted.
const fn sort_by_name<const N: usize>(keys: &mut [BrokerKeyDef; N]) {
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && str_less(keys[j].name, keys[j - 1].name) {
            let swapped = keys[j - 1];
            keys[j - 1] = keys[j];
            keys[j] = swapped;
            j -= 1;
        }
        i += 1;
    }
}

const fn str_less(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

const DAY_MS: i64 = 24 * HOUR_MS;

broker_config! {
    derived {
        /// `log.dirs`, else `log.dir`.
        log_dirs: Vec<PathBuf> = vec![PathBuf::from("/tmp/kafka-logs")];
        /// `zookeeper.connect`: `host:port,host:port[/chroot]`; `None` runs
        /// the embedded metadata store.
        zookeeper_connect: Option<String> = None;
        /// `broker.rack`: written into the broker's registration.
        broker_rack: Option<String> = None;
        /// The keys the file or `--override`s set, with their raw values:
        /// DescribeConfigs tells a static broker setting from a default.
        set_keys: BTreeMap<String, String> = BTreeMap::new();
        /// `zookeeper.connection.timeout.ms`, else `zookeeper.session.timeout.ms`.
        zookeeper_connection_timeout_ms: u64 = 18_000;
        /// `listeners`.
        listeners: Vec<Listener> = vec![default_listener()];
        /// `advertised.listeners`, else `listeners`.
        advertised_listeners: Vec<Listener> = vec![default_listener()];
        /// `listener.security.protocol.map`, names upper-cased.
        listener_security_protocol_map: BTreeMap<String, SecurityProtocol> = default_protocol_map();
        /// `inter.broker.listener.name`, upper-cased.
        inter_broker_listener_name: Option<String> = None;
        /// `security.inter.broker.protocol`: names the inter-broker listener
        /// when `inter.broker.listener.name` is unset.
        security_inter_broker_protocol: SecurityProtocol = SecurityProtocol::Plaintext;
        /// The JAAS lines (`sasl.jaas.config`,
        /// `listener.name.<l>.<mechanism>.sasl.jaas.config`), by key; never
        /// shown by DescribeConfigs.
        sasl_jaas_configs: BTreeMap<String, String> = BTreeMap::new();
        /// The `ssl.*` lines and listeners' overrides of them
        /// (`config::ssl`), by key; never shown by DescribeConfigs.
        ssl_configs: BTreeMap<String, String> = BTreeMap::new();
        /// `log.roll.ms`, else `log.roll.hours`.
        log_roll_ms: i64 = LogConfig::default().segment_ms;
        /// `log.retention.ms`, else `.minutes`, else `.hours`; -1 keeps
        /// segments forever.
        log_retention_ms: i64 = LogConfig::default().retention_ms;
        /// `log.flush.interval.ms`, else `log.flush.scheduler.interval.ms`.
        log_flush_interval_ms: i64 = LogConfig::default().flush_ms;
    }
    by_hand {
        /// Directories holding the partition logs, comma-separated.
        "log.dirs": List;
        /// The one log directory, when log.dirs is unset.
        "log.dir": String;
        /// ZooKeeper ensemble host:port list with an optional chroot; unset runs the embedded metadata store.
        "zookeeper.connect": String;
        /// How long to wait for a ZooKeeper connection (defaults to the session timeout).
        "zookeeper.connection.timeout.ms": Int;
        /// The broker's rack, for rack-aware replica placement and fetching.
        "broker.rack": String;
        /// The listeners to bind, NAME://host:port, comma-separated.
        "listeners": List;
        /// The listeners clients are told to use (defaults to listeners).
        "advertised.listeners": List;
        /// Each listener name's security protocol, NAME:PROTOCOL comma-separated.
        "listener.security.protocol.map": List;
        /// The listener brokers use among themselves (defaults to the one named by security.inter.broker.protocol).
        "inter.broker.listener.name": String;
        /// The inter-broker listener's protocol, when inter.broker.listener.name is unset.
        "security.inter.broker.protocol": String;
        /// Time after which a new segment is rolled.
        "log.roll.ms": Long;
        /// log.roll.ms in hours, when log.roll.ms is unset.
        "log.roll.hours": Int;
        /// How long segments are kept; -1 keeps them forever.
        "log.retention.ms": Long;
        /// log.retention.ms in minutes, when log.retention.ms is unset.
        "log.retention.minutes": Int;
        /// log.retention.ms in hours, when the finer keys are unset.
        "log.retention.hours": Int;
        /// Longest time a record stays unflushed (defaults to log.flush.scheduler.interval.ms).
        "log.flush.interval.ms": Long;
    }
    keys {
        /// The broker's id; -1 asks the cluster to generate one.
        "broker.id" => broker_id: i32 = -1, Int(-1);
        /// ZooKeeper session timeout.
        "zookeeper.session.timeout.ms" => zookeeper_session_timeout_ms: u64 = 18_000, Int(1);

        /// Arbiters running connections.
        "num.network.threads" => num_network_threads: usize = 3, Int(1);
        /// Arbiters running partition, group and extension actors.
        "num.io.threads" => num_io_threads: usize = 8, Int(1);
        /// Requests in flight per log shard before senders wait.
        "queued.max.requests" => queued_max_requests: usize = 500, Int(1);
        /// Request bytes read and not yet released, broker-wide; -1 is unbounded.
        "queued.max.request.bytes" => queued_max_request_bytes: i64 = -1, Long(-1);
        /// SO_SNDBUF of client connections; -1 leaves the OS default.
        "socket.send.buffer.bytes" => socket_send_buffer_bytes: i32 = 100 * 1024, Int(-1);
        /// SO_RCVBUF of client connections; -1 leaves the OS default.
        "socket.receive.buffer.bytes" => socket_receive_buffer_bytes: i32 = 100 * 1024, Int(-1);
        /// Largest request frame accepted.
        "socket.request.max.bytes" => socket_request_max_bytes: u64 = 100 * 1024 * 1024, Int(1);
        /// Idle connections are closed after this long; negative never closes them.
        "connections.max.idle.ms" => connections_max_idle_ms: i64 = 10 * 60 * 1000, Long(-1);
        /// Longest a SASL session lives before the client must re-authenticate (KIP-368); 0 never asks.
        "connections.max.reauth.ms" => connections_max_reauth_ms: i64 = 0, Long(0);
        /// Most client connections open at once.
        "max.connections" => max_connections: usize = 2_147_483_647, Int(0);
        /// Most connections from one client address; more are closed at once.
        "max.connections.per.ip" => max_connections_per_ip: usize = 2_147_483_647, Int(0);
        /// Per-address exceptions to max.connections.per.ip, address:count comma-separated.
        "max.connections.per.ip.overrides" => max_connections_per_ip_overrides: ConnectionOverrides = ConnectionOverrides::default(), Str;
        /// New connections accepted per second, broker-wide; more are closed at once.
        "max.connection.creation.rate" => max_connection_creation_rate: u64 = 2_147_483_647, Int(0);
        /// Samples kept to measure a client's rate against its quota.
        "quota.window.num" => quota_window_num: usize = 11, Int(1);
        /// Seconds one quota sample spans.
        "quota.window.size.seconds" => quota_window_size_seconds: u64 = 1, Int(1);

        /// Largest record batch a topic accepts by default.
        "message.max.bytes" => message_max_bytes: u64 = LogConfig::default().max_message_bytes, Int(0);
        /// Partitions of an auto-created topic.
        "num.partitions" => num_partitions: i32 = 1, Int(1);
        /// ferrolog's bound on one topic's partition count; larger asks get INVALID_PARTITIONS.
        "create.topic.max.partitions" => create_topic_max_partitions: i32 = 100_000, Int(1);
        /// Replication factor of an auto-created topic.
        "default.replication.factor" => default_replication_factor: i16 = 1, Short(1);
        /// Create a topic when a client asks for one that does not exist.
        "auto.create.topics.enable" => auto_create_topics_enable: bool = true, Boolean;
        /// Whether DeleteTopics deletes.
        "delete.topic.enable" => delete_topic_enable: bool = true, Boolean;
        /// In-sync replicas an acks=all produce needs.
        "min.insync.replicas" => min_insync_replicas: i32 = 1, Int(1);

        /// Size at which a new segment is rolled.
        "log.segment.bytes" => log_segment_bytes: u64 = LogConfig::default().segment_bytes, Int(MIN_SEGMENT_BYTES);
        /// Bytes between offset index entries.
        "log.index.interval.bytes" => log_index_interval_bytes: u64 = LogConfig::default().index_interval_bytes, Int(0);
        /// Largest offset index of a segment.
        "log.index.size.max.bytes" => log_index_size_max_bytes: u64 = LogConfig::default().segment_index_bytes, Int(MIN_INDEX_BYTES);
        /// Largest size of a partition's log before old segments go; any negative is unlimited.
        "log.retention.bytes" => log_retention_bytes: i64 = LogConfig::default().retention_bytes, Long(i64::MIN);
        /// How often retention runs.
        "log.retention.check.interval.ms" => log_retention_check_interval_ms: u64 = 5 * 60 * 1000, Long(1);
        /// Records appended before a partition is flushed.
        "log.flush.interval.messages" => log_flush_interval_messages: u64 = LogConfig::default().flush_messages, Long(1);
        /// How often logs are checked for a time-based flush.
        "log.flush.scheduler.interval.ms" => log_flush_scheduler_interval_ms: i64 = i64::MAX, Long(0);
        /// How often recovery points are checkpointed.
        "log.flush.offset.checkpoint.interval.ms" => log_flush_offset_checkpoint_interval_ms: u64 = 60_000, Int(0);
        /// How often log start offsets are checkpointed.
        "log.flush.start.offset.checkpoint.interval.ms" => log_flush_start_offset_checkpoint_interval_ms: u64 = 60_000, Int(0);
        /// Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).
        "log.message.timestamp.type" => log_message_timestamp_type: TimestampType = LogConfig::default().message_timestamp_type, Str;
        /// Largest distance between a CreateTime timestamp and the broker's clock.
        "log.message.timestamp.difference.max.ms" => log_message_timestamp_difference_max_ms: i64 = LogConfig::default().message_timestamp_difference_max_ms, Long(0);
        /// Largest age of a CreateTime timestamp.
        "log.message.timestamp.before.max.ms" => log_message_timestamp_before_max_ms: i64 = LogConfig::default().message_timestamp_before_max_ms, Long(0);
        /// Furthest a CreateTime timestamp may be in the future.
        "log.message.timestamp.after.max.ms" => log_message_timestamp_after_max_ms: i64 = LogConfig::default().message_timestamp_after_max_ms, Long(0);
        /// delete, compact, or both.
        "log.cleanup.policy" => log_cleanup_policy: CleanupPolicy = LogConfig::default().cleanup_policy, List;
        /// The codec the broker stores batches in; producer keeps the producer's.
        "compression.type" => compression_type: CompressionType = CompressionType::Producer, Str;
        /// An idempotent producer silent this long is forgotten.
        "producer.id.expiration.ms" => producer_id_expiration_ms: i64 = LogConfig::default().producer_id_expiration_ms, Int(1);
        /// How long an idle transactional id is kept.
        "transactional.id.expiration.ms" => transactional_id_expiration_ms: i64 = 7 * DAY_MS, Int(1),
            ignored "transactions are not served yet";
        /// Replication factor of the transaction state topic.
        "transaction.state.log.replication.factor" => transaction_state_log_replication_factor: i16 = 3, Short(1),
            ignored "transactions are not served yet";
        /// min.insync.replicas of the transaction state topic.
        "transaction.state.log.min.isr" => transaction_state_log_min_isr: i32 = 2, Int(1),
            ignored "transactions are not served yet";
        /// Threads per log dir that load logs at start-up.
        "num.recovery.threads.per.data.dir" => num_recovery_threads_per_data_dir: usize = 1, Int(1),
            ignored "logs load in parallel on the log shards, one thread each, whatever this says";

        /// Whether the log cleaner (compaction) runs.
        "log.cleaner.enable" => log_cleaner_enable: bool = true, Boolean;
        /// Cleanings run at once, each on a blocking thread.
        "log.cleaner.threads" => log_cleaner_threads: usize = 1, Int(0);
        /// Memory for the key-to-offset map, shared by the cleaner threads.
        "log.cleaner.dedupe.buffer.size" => log_cleaner_dedupe_buffer_size: u64 = 128 * 1024 * 1024, Long(0);
        /// Read and write buffer of one cleaning.
        "log.cleaner.io.buffer.size" => log_cleaner_io_buffer_size: u64 = 512 * 1024, Int(0);
        /// How full the key map may get before a cleaning stops early.
        "log.cleaner.io.buffer.load.factor" => log_cleaner_io_buffer_load_factor: f64 = 0.9, Double(0.0, 1.0);
        /// Pause between cleaner passes when nothing needs cleaning.
        "log.cleaner.backoff.ms" => log_cleaner_backoff_ms: u64 = 15_000, Long(0);
        /// Read throttle of each cleaning, bytes per second.
        "log.cleaner.io.max.bytes.per.second" => log_cleaner_io_max_bytes_per_second: f64 = f64::MAX, Double(f64::MIN_POSITIVE, f64::MAX);
        /// How long tombstones survive compaction.
        "log.cleaner.delete.retention.ms" => log_cleaner_delete_retention_ms: i64 = LogConfig::default().delete_retention_ms, Long(0);
        /// Dirty share of a log above which it is compacted.
        "log.cleaner.min.cleanable.ratio" => log_cleaner_min_cleanable_ratio: f64 = LogConfig::default().min_cleanable_dirty_ratio, Double(0.0, 1.0);
        /// Youngest a record may be to be compacted.
        "log.cleaner.min.compaction.lag.ms" => log_cleaner_min_compaction_lag_ms: i64 = LogConfig::default().min_compaction_lag_ms, Long(0);
        /// Oldest an uncompacted record may get.
        "log.cleaner.max.compaction.lag.ms" => log_cleaner_max_compaction_lag_ms: i64 = LogConfig::default().max_compaction_lag_ms, Long(1);

        /// Replica fetcher actors per source broker.
        "num.replica.fetchers" => num_replica_fetchers: usize = 1, Int(1);
        /// Bytes a follower asks for per partition.
        "replica.fetch.max.bytes" => replica_fetch_max_bytes: u64 = 1024 * 1024, Int(0);
        /// Most a consumer Fetch response carries across partitions.
        "fetch.max.bytes" => fetch_max_bytes: u64 = 55 * 1024 * 1024, Int(1024);
        /// Longest a follower's fetch waits for data.
        "replica.fetch.wait.max.ms" => replica_fetch_wait_max_ms: u64 = 500, Int(0);
        /// Bytes a follower's fetch waits for.
        "replica.fetch.min.bytes" => replica_fetch_min_bytes: u64 = 1, Int(1);
        /// Most a follower's fetch response carries.
        "replica.fetch.response.max.bytes" => replica_fetch_response_max_bytes: u64 = 10 * 1024 * 1024, Int(0);
        /// Pause after a failed follower fetch.
        "replica.fetch.backoff.ms" => replica_fetch_backoff_ms: u64 = 1_000, Int(0);
        /// A follower that has not caught up for this long leaves the ISR.
        "replica.lag.time.max.ms" => replica_lag_time_max_ms: u64 = 30_000, Long(1);
        /// How often high watermarks are checkpointed.
        "replica.high.watermark.checkpoint.interval.ms" => replica_high_watermark_checkpoint_interval_ms: u64 = 5_000, Long(1);
        /// Whether an out-of-sync replica may become leader, losing records.
        "unclean.leader.election.enable" => unclean_leader_election_enable: bool = false, Boolean;
        /// Which replica consumers may fetch from (KIP-392); only Kafka's rack-aware selector is built in.
        "replica.selector.class" => replica_selector: ReplicaSelector = ReplicaSelector::LeaderOnly, Class;

        /// The authorizer; only Kafka's kafka.security.authorizer.AclAuthorizer is built in.
        "authorizer.class.name" => authorizer_class_name: AuthorizerClass = AuthorizerClass::None, Class;
        /// Principals allowed everything, semicolon-separated (User:admin;User:broker).
        "super.users" => super_users: SuperUsers = SuperUsers::default(), Str;
        /// The SASL mechanisms SASL listeners offer; ferrolog runs PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512.
        "sasl.enabled.mechanisms" => sasl_enabled_mechanisms: SaslMechanisms = SaslMechanisms::default(), List;
        /// The SASL mechanism brokers log in to each other with on a SASL inter-broker listener (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512), as the username and password of that listener's JAAS line.
        "sasl.mechanism.inter.broker.protocol" => sasl_mechanism_inter_broker_protocol: String = "GSSAPI".to_string(), Str;
        /// Whether a resource without any ACL is open to everyone.
        "allow.everyone.if.no.acl.found" => allow_everyone_if_no_acl_found: bool = false, Boolean;

        /// Where /metrics, /healthz and /readyz are served: http://HOST:PORT, https://HOST:PORT (the broker's ssl.* keystore), or empty for none.
        "http.listener" => http_listener: super::HttpListener = super::HttpListener::default(), Str;

        /// On SIGTERM in a cluster, move this broker's leaderships away first.
        "controlled.shutdown.enable" => controlled_shutdown_enable: bool = true, Boolean;
        /// Attempts of the controlled shutdown request.
        "controlled.shutdown.max.retries" => controlled_shutdown_max_retries: u32 = 3, Int(0);
        /// Pause between controlled shutdown attempts.
        "controlled.shutdown.retry.backoff.ms" => controlled_shutdown_retry_backoff_ms: u64 = 5_000, Long(0);
        /// The controller gives leaderships back to preferred replicas.
        "auto.leader.rebalance.enable" => auto_leader_rebalance_enable: bool = true, Boolean;
        /// How often the controller checks the leader imbalance.
        "leader.imbalance.check.interval.seconds" => leader_imbalance_check_interval_seconds: u64 = 300, Long(1);
        /// Share of a broker's preferred leaderships lost before a rebalance.
        "leader.imbalance.per.broker.percentage" => leader_imbalance_per_broker_percentage: u32 = 10, Int(0);

        /// Partitions of __consumer_offsets.
        "offsets.topic.num.partitions" => offsets_topic_num_partitions: i32 = 50, Int(1);
        /// Replication factor of __consumer_offsets.
        "offsets.topic.replication.factor" => offsets_topic_replication_factor: i16 = 3, Short(1);
        /// segment.bytes of __consumer_offsets (smaller segments compact sooner).
        "offsets.topic.segment.bytes" => offsets_topic_segment_bytes: u64 = 104_857_600, Int(1);
        /// How long an empty group's offsets are kept.
        "offsets.retention.minutes" => offsets_retention_minutes: u64 = 7 * 24 * 60, Int(1);
        /// How often expired offsets are removed.
        "offsets.retention.check.interval.ms" => offsets_retention_check_interval_ms: u64 = 600_000, Long(1);
        /// How long a new group waits for more members before its first rebalance.
        "group.initial.rebalance.delay.ms" => group_initial_rebalance_delay_ms: u64 = 3_000, Int(0);
        /// Shortest session timeout a member may ask for.
        "group.min.session.timeout.ms" => group_min_session_timeout_ms: u64 = 6_000, Int(0);
        /// Longest session timeout a member may ask for.
        "group.max.session.timeout.ms" => group_max_session_timeout_ms: u64 = 30 * 60 * 1000, Int(0);
        /// Most members of one group.
        "group.max.size" => group_max_size: i32 = i32::MAX, Int(1);
    }
}
