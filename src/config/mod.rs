//! Broker configuration: turns a Kafka-style `server.properties` file plus
//! `--override key=value` arguments into a typed, validated [`BrokerConfig`],
//! using Kafka's key names, defaults and value ranges so that an existing Kafka
//! config file works unchanged. It also owns the topic-level config names
//! (`retention.ms`, `segment.bytes`, ...) and how they override the broker's
//! log defaults. It must never do I/O other than reading the one file handed
//! to [`BrokerConfig::load`], never start or talk to actors (it knows nothing
//! of actix), and never silently accept a value Kafka would reject: a bad value
//! is an error naming the key, an unknown key is a warning. The broker keys
//! themselves are the table in `keys.rs`; this file reads files, parses the
//! keys that need more than one line (aliases, lists, fallbacks) and checks
//! combinations.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use java_properties::{LineContent, PropertiesIter};

mod http;
mod keys;
mod replica_selector;
mod security;
mod ssl;

crate::internal_modules! {
    mod dynamic;
    mod topic;
}

// The public API is `BrokerConfig`, `ConfigError`, `ConfigWarning` and
// `Listener`; the rest is for the crate (and its tests).
pub use http::HttpListener;
pub use keys::BrokerConfig;
crate::internal_use!(keys::{broker_key, java_double, BrokerKeyDef, KeyValue, Rule, BROKER_KEYS});
crate::internal_use!(replica_selector::ReplicaSelector);
pub use security::{
    AuthorizerClass, ConnectionOverrides, InterBrokerLogin, SaslMechanisms, SecurityProtocol,
    SuperUsers,
};
pub use ssl::{ClientAuth, Password, SslConfig, StoreType};
crate::internal_use!(ssl::{is_ssl_key, SSL_KEYS});
crate::internal_use!(crate::storage::config::{CleanupPolicy, CompressionType});
use crate::storage::config::{LogConfig, TimestampType};

/// Kafka refuses smaller segments: one must hold at least a v0 record's overhead.
const MIN_SEGMENT_BYTES: i64 = 14;
/// An offset index smaller than one entry could never index anything.
const MIN_INDEX_BYTES: i64 = 4;

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        #[source]
        /// Why not.
        source: std::io::Error,
    },
    #[error("malformed properties: {reason}")]
    /// The file is not a valid properties file.
    Parse {
        /// What is wrong, and where.
        reason: String,
    },
    #[error("invalid --override '{arg}': {reason}")]
    /// An `--override` is not `key=value`.
    Override {
        /// The argument given.
        arg: String,
        /// What is wrong with it.
        reason: String,
    },
    #[error("invalid value '{value}' for {key}: {reason}")]
    /// A value Kafka would refuse.
    InvalidValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: String,
    },
}

/// Something worth telling the operator that does not stop the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// The key concerned.
    pub key: String,
    /// What is wrong with it.
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
    /// Upper-cased, as Kafka normalises listener names.
    pub name: String,
    /// From `listener.security.protocol.map`.
    pub security_protocol: SecurityProtocol,
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

fn default_listener() -> Listener {
    Listener {
        name: "PLAINTEXT".to_string(),
        security_protocol: SecurityProtocol::Plaintext,
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
            if broker_key(&entry.key).is_none()
                && !security::is_jaas_key(&entry.key)
                && !ssl::is_ssl_key(&entry.key)
            {
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
            if broker_key(key).is_some() || security::is_jaas_key(key) || ssl::is_ssl_key(key) {
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

    /// This config with `layers` (dynamic configs, later wins) set over
    /// what the file set; `set_keys` stays the file's.
    pub fn with_layers(
        &self,
        layers: &[&BTreeMap<String, String>],
    ) -> Result<BrokerConfig, ConfigError> {
        let mut values: HashMap<String, String> = self.set_keys.clone().into_iter().collect();
        for layer in layers {
            for (key, value) in layer.iter() {
                values.insert(key.clone(), value.clone());
            }
        }
        let mut config = BrokerConfig::from_props(&Props { values }, &mut Vec::new())?;
        config.set_keys = self.set_keys.clone();
        Ok(config)
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
        let mut config = BrokerConfig::parse_keys(p)?;
        config.parse_by_hand(p, warnings)?;
        config.validate_combinations()?;
        Ok(config)
    }

    /// The keys of the table's `by_hand` section: aliases, lists and
    /// fallbacks, each needing more than one line of the file.
    fn parse_by_hand(
        &mut self,
        p: &Props,
        warnings: &mut Vec<ConfigWarning>,
    ) -> Result<(), ConfigError> {
        use JavaInt::{Int, Long};

        if let Some(dirs) = p.raw("log.dirs") {
            shadowed(p, warnings, "log.dir", "log.dirs");
            self.log_dirs = parse_log_dirs("log.dirs", dirs)?;
        } else if let Some(dir) = p.raw("log.dir") {
            self.log_dirs = parse_log_dirs("log.dir", dir)?;
        }

        self.zookeeper_connect = match p.raw("zookeeper.connect").map(str::trim) {
            Some("") | None => None,
            Some(connect) => {
                validate_zookeeper_connect(connect)?;
                Some(connect.to_string())
            }
        };
        self.zookeeper_connection_timeout_ms = p
            .opt_int("zookeeper.connection.timeout.ms", Int, 1)?
            .unwrap_or(self.zookeeper_session_timeout_ms);
        self.broker_rack = p
            .raw("broker.rack")
            .map(str::trim)
            .filter(|rack| !rack.is_empty())
            .map(str::to_owned);

        self.listener_security_protocol_map = security::parse_protocol_map(
            p.raw("listener.security.protocol.map")
                .unwrap_or(security::DEFAULT_PROTOCOL_MAP),
        )?;
        if let Some(raw) = p.raw("listeners") {
            self.listeners = parse_listeners("listeners", raw)?;
        }
        self.advertised_listeners = match p.raw("advertised.listeners") {
            Some(raw) => parse_advertised_listeners(raw, &self.listeners)?,
            None => self.listeners.clone(),
        };
        for listener in self
            .listeners
            .iter_mut()
            .chain(self.advertised_listeners.iter_mut())
        {
            listener.security_protocol = *self
                .listener_security_protocol_map
                .get(&listener.name)
                .ok_or_else(|| {
                invalid(
                    "listeners",
                    &listener.to_string(),
                    format!(
                        "listener {} is not in listener.security.protocol.map",
                        listener.name
                    ),
                )
            })?;
        }
        self.inter_broker_listener_name = p
            .raw("inter.broker.listener.name")
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_ascii_uppercase);
        if let Some(raw) = p.raw("security.inter.broker.protocol") {
            if self.inter_broker_listener_name.is_some() {
                return Err(invalid(
                    "security.inter.broker.protocol",
                    raw,
                    "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
                ));
            }
            self.security_inter_broker_protocol =
                SecurityProtocol::parse(raw.trim()).ok_or_else(|| {
                    invalid(
                        "security.inter.broker.protocol",
                        raw,
                        "not a security protocol",
                    )
                })?;
        }
        self.sasl_jaas_configs = p
            .values
            .iter()
            .filter(|(key, _)| security::is_jaas_key(key))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        self.ssl_configs = ssl::ssl_lines(p.values.iter());

        // Every alias is parsed even when shadowed, as Kafka does, so a typo
        // in an unused line still fails loudly instead of lurking.
        let roll_ms: Option<i64> = p.opt_int("log.roll.ms", Long, 1)?;
        let roll_hours: i64 = p.int("log.roll.hours", Int, 1, 168)?;
        self.log_roll_ms = match roll_ms {
            Some(ms) => {
                shadowed(p, warnings, "log.roll.hours", "log.roll.ms");
                ms
            }
            None => roll_hours * HOUR_MS,
        };

        let retention_ms: Option<i64> = p.opt_int("log.retention.ms", Long, -1)?;
        let retention_minutes: Option<i64> = p.opt_int("log.retention.minutes", Int, -1)?;
        let retention_hours: i64 = p.int("log.retention.hours", Int, -1, 168)?;
        self.log_retention_ms = if let Some(ms) = retention_ms {
            shadowed(p, warnings, "log.retention.minutes", "log.retention.ms");
            shadowed(p, warnings, "log.retention.hours", "log.retention.ms");
            ms
        } else if let Some(minutes) = retention_minutes {
            shadowed(p, warnings, "log.retention.hours", "log.retention.minutes");
            unlimited_or_scaled(minutes, MINUTE_MS)
        } else {
            unlimited_or_scaled(retention_hours, HOUR_MS)
        };
        self.log_retention_bytes = unlimited_if_negative(self.log_retention_bytes);

        self.log_flush_interval_ms = p
            .opt_int("log.flush.interval.ms", Long, 0)?
            .unwrap_or(self.log_flush_scheduler_interval_ms);

        for key in p.values.keys() {
            if let Some(why) = broker_key(key).and_then(|def| def.ignored) {
                warnings.push(ConfigWarning {
                    key: key.clone(),
                    message: format!("accepted but not honoured: {why}"),
                });
            }
        }
        Ok(())
    }

    /// A key's value as DescribeConfigs shows it: the effective value, or
    /// for an alias what the file set (Kafka's default when unset); `None`
    /// for an unset key Kafka shows as null, or an unknown key.
    pub fn value_of(&self, key: &str) -> Option<String> {
        if let Some(value) = self.table_value(key) {
            return Some(value);
        }
        let join = |listeners: &[Listener]| {
            listeners
                .iter()
                .map(Listener::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        match key {
            "log.dirs" => Some(
                self.log_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            "zookeeper.connect" => self.zookeeper_connect.clone(),
            "zookeeper.connection.timeout.ms" => {
                Some(self.zookeeper_connection_timeout_ms.to_string())
            }
            "broker.rack" => self.broker_rack.clone(),
            "listeners" => Some(join(&self.listeners)),
            "listener.security.protocol.map" => Some(
                self.set_keys
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| security::DEFAULT_PROTOCOL_MAP.to_string()),
            ),
            "advertised.listeners" => Some(join(&self.advertised_listeners)),
            "inter.broker.listener.name" => self.inter_broker_listener_name.clone(),
            "security.inter.broker.protocol" => {
                Some(self.security_inter_broker_protocol.name().to_string())
            }
            "log.roll.ms" => Some(self.log_roll_ms.to_string()),
            "log.retention.ms" => Some(self.log_retention_ms.to_string()),
            "log.flush.interval.ms" => Some(self.log_flush_interval_ms.to_string()),
            "log.dir" => Some(
                self.set_keys
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| "/tmp/kafka-logs".into()),
            ),
            "log.roll.hours" | "log.retention.hours" => Some(
                self.set_keys
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| "168".into()),
            ),
            "log.retention.minutes" => self.set_keys.get(key).cloned(),
            _ => None,
        }
    }

    /// The name of the listener brokers use among themselves:
    /// `inter.broker.listener.name`, else the listener named after
    /// `security.inter.broker.protocol` (`PLAINTEXT`), as in Kafka.
    pub fn inter_broker_listener_name(&self) -> String {
        self.inter_broker_listener_name
            .clone()
            .unwrap_or_else(|| self.security_inter_broker_protocol.name().to_string())
    }

    /// The advertised inter-broker listener, if it is one of this broker's.
    pub fn inter_broker_listener(&self) -> Option<&Listener> {
        let name = self.inter_broker_listener_name();
        self.advertised_listeners.iter().find(|l| l.name == name)
    }

    fn validate_combinations(&self) -> Result<(), ConfigError> {
        self.validate_listener_security()?;
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
    let value = raw.trim();
    [TimestampType::CreateTime, TimestampType::LogAppendTime]
        .into_iter()
        .find(|t| t.name() == value)
        .ok_or_else(|| invalid(key, value, "expected CreateTime or LogAppendTime"))
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
        let listener = parse_listener(entry).map_err(|e| invalid(key, value, e.to_string()))?;
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

/// Why one `listeners` entry is not `NAME://host:port`.
#[derive(Debug, thiserror::Error)]
enum ListenerError {
    #[error("not of the form NAME://host:port")]
    NotNameHostPort,
    #[error("'{0}' is not a listener name (letters, digits and _)")]
    BadName(String),
    #[error("an unclosed '['")]
    UnclosedBracket,
    #[error("no port")]
    NoPort,
    #[error("'{0}' is not a valid host name or address")]
    BadHost(String),
    #[error("'{0}' is not a port number (0-65535)")]
    BadPort(String),
}

fn parse_listener(entry: &str) -> Result<Listener, ListenerError> {
    let (name, address) = entry
        .split_once("://")
        .ok_or(ListenerError::NotNameHostPort)?;
    let name = name.trim().to_ascii_uppercase();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(ListenerError::BadName(name));
    }
    let (host, port) = match address.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed
                .split_once(']')
                .ok_or(ListenerError::UnclosedBracket)?;
            let port = rest.strip_prefix(':').ok_or(ListenerError::NoPort)?;
            (host, port)
        }
        None => address.rsplit_once(':').ok_or(ListenerError::NoPort)?,
    };
    if !host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '%' | '.' | '_' | ':'))
    {
        return Err(ListenerError::BadHost(host.to_string()));
    }
    let port: u16 = port
        .parse()
        .map_err(|_| ListenerError::BadPort(port.to_string()))?;
    Ok(Listener {
        name,
        // Resolved through listener.security.protocol.map once it is read.
        security_protocol: SecurityProtocol::Plaintext,
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
        topic::TopicConfig::from_overrides(&LogConfig::default(), &pairs).map(|c| c.log)
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
        let (config, warnings) = parse("ssl.keystore.nonsense=/k\nbroker.id=1\nbroker.id=2");
        assert_eq!(config.broker_id, 2);
        assert_eq!(warnings.len(), 2);
        assert_eq!(warnings[0].key, "ssl.keystore.nonsense");
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
                security_protocol: SecurityProtocol::Plaintext,
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
        // A TLS listener needs a keystore ferrolog can read.
        assert_invalid(
            parse_err("listeners=SSL://:9093"),
            "ssl.keystore.type",
            "JKS is Java's own format",
        );
        assert_invalid(
            parse_err("listeners=SSL://:9093\nssl.keystore.type=PEM"),
            "listener.name.ssl.ssl.keystore.location",
            "has no keystore",
        );
        assert_invalid(
            parse_err(
                "listeners=SSL://:9093\nssl.keystore.type=PKCS12\nssl.keystore.location=/k.p12",
            ),
            "listener.name.ssl.ssl.keystore.password",
            "needs ssl.keystore.password",
        );
        assert_invalid(
            parse_err(
                "listeners=SSL://:9093\nssl.keystore.type=PEM\nssl.keystore.location=/k.pem\n\
                 ssl.principal.mapping.rules=RULE:broken",
            ),
            "listener.name.ssl.ssl.principal.mapping.rules",
            "Invalid rule",
        );
        assert_invalid(
            parse_err(
                "listeners=SSL://:9093\nssl.keystore.type=PEM\nssl.keystore.location=/k.pem\n\
                 ssl.keystore.key=x\nssl.keystore.certificate.chain=y",
            ),
            "listener.name.ssl.ssl.keystore.location",
            "not both",
        );
        assert_invalid(
            parse_err(
                "listeners=SSL://:9093\nssl.keystore.type=PEM\nssl.keystore.location=/k.pem\n\
                 ssl.client.auth=required",
            ),
            "listener.name.ssl.ssl.client.auth",
            "needs a truststore",
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
        use super::topic::{ConfigKind, TOPIC_CONFIGS};
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

    /// Every key in BROKER_KEYS is handled (parsed or rejected by name),
    /// never "unknown", and only an ignored key warns.
    #[test]
    fn broker_key_list_is_complete() {
        for def in BROKER_KEYS {
            let key = def.name;
            match BrokerConfig::from_properties(&format!("{key}=x"), &[]) {
                Ok((_, warnings)) => assert!(
                    warnings.is_empty() || def.ignored.is_some(),
                    "{key}: {warnings:?}"
                ),
                Err(ConfigError::InvalidValue { key: named, .. }) => assert_eq!(named, key),
                Err(other) => panic!("{key}: {other:?}"),
            }
        }
    }

    /// Each key's default, printed as DescribeConfigs prints it, parses back
    /// to the same config: the printing and each key's rule agree with its
    /// type (a rule that does not fit would fail here, not in production).
    #[test]
    fn every_key_round_trips_through_its_printed_default() {
        let defaults = BrokerConfig::default();
        for def in BROKER_KEYS {
            let printed = defaults.value_of(def.name);
            let Some(text) = printed else {
                assert!(
                    matches!(
                        def.name,
                        "zookeeper.connect"
                            | "broker.rack"
                            | "log.retention.minutes"
                            | "inter.broker.listener.name"
                    ),
                    "{} has no printed value",
                    def.name
                );
                continue;
            };
            if text.is_empty() {
                continue;
            }
            let (parsed, _) = BrokerConfig::from_properties(&format!("{}={text}", def.name), &[])
                .unwrap_or_else(|e| panic!("{}={text}: {e}", def.name));
            let parsed = BrokerConfig {
                set_keys: defaults.set_keys.clone(),
                ..parsed
            };
            assert_eq!(parsed, defaults, "{}={text}", def.name);
        }
    }

    /// The table is sorted, each name once, and every doc line is filled in.
    #[test]
    fn broker_key_table_is_sorted_and_documented() {
        for pair in BROKER_KEYS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} / {}",
                pair[0].name,
                pair[1].name
            );
        }
        for def in BROKER_KEYS {
            assert!(!def.doc.trim().is_empty(), "{} has no doc", def.name);
        }
    }

    /// A key that is accepted but changes nothing says so once at start-up.
    #[test]
    fn an_ignored_key_is_reported() {
        let (config, warnings) = parse("transactional.id.expiration.ms=1000\nnum.partitions=2\n");
        assert_eq!(config.transactional_id_expiration_ms, 1000);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].key, "transactional.id.expiration.ms");
        assert!(
            warnings[0].message.contains("accepted but not honoured"),
            "{warnings:?}"
        );
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
