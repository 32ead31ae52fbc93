//! Topic-level configs, one table: Kafka 3.9's topic keys with their type,
//! Kafka's default, the broker key that supplies the default (its
//! DescribeConfigs synonym), and, for each key ferrolog honours, how a
//! value sets the typed [`TopicConfig`]; keys without one are accepted,
//! validated by type, stored and described, but change nothing yet (the
//! README lists them). Topic creation, AlterConfigs, DescribeConfigs and
//! the README test all read the table, so adding a key is one row here
//! (plus, once honoured, its field). It knows nothing of the wire.

use super::{
    invalid, parse_bool, parse_cleanup_policy, parse_compression_type, parse_double, parse_int,
    parse_timestamp_type, unlimited_if_negative, ConfigError, JavaInt, MIN_INDEX_BYTES,
    MIN_SEGMENT_BYTES,
};
use crate::storage::config::LogConfig;

/// A topic's config, typed: the broker's log defaults with the topic's
/// overrides applied, and the replication settings it overrides. Built
/// once when the topic or its config changes, never re-parsed per request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopicConfig {
    /// What the log reads: segments, retention, compaction, timestamps.
    pub log: LogConfig,
    /// `min.insync.replicas`, when the topic overrides it (otherwise the
    /// broker's dynamic default applies at each produce).
    pub min_insync_replicas: Option<i32>,
    /// `unclean.leader.election.enable`, when the topic overrides it.
    pub unclean_leader_election_enable: Option<bool>,
}

impl TopicConfig {
    /// `overrides` (Kafka topic config names) applied in order over the
    /// broker's log defaults `base`, so a later duplicate wins. Unknown keys
    /// and bad values are errors, as Kafka answers them with INVALID_CONFIG.
    pub fn from_overrides(
        base: &LogConfig,
        overrides: &[(String, String)],
    ) -> Result<TopicConfig, ConfigError> {
        let mut config = TopicConfig {
            log: base.clone(),
            ..TopicConfig::default()
        };
        for (key, value) in overrides {
            match topic_config(key) {
                Some(TopicConfigDef {
                    apply: Some(apply), ..
                }) => apply(&mut config, key, value)?,
                // Kafka's key, not honoured yet: checked against its type.
                Some(def) => {
                    validate_unhonoured(def, value).map_err(|e| invalid(key, value, e.to_string()))?
                }
                None => return Err(invalid(key, value, "unknown or unsupported topic config")),
            }
        }
        Ok(config)
    }
}

/// How a honoured key's value sets its field (`key`, `value` for errors).
pub type ApplyValue = fn(&mut TopicConfig, &str, &str) -> Result<(), ConfigError>;

/// One topic config key.
#[derive(Debug, Clone, Copy)]
pub struct TopicConfigDef {
    pub name: &'static str,
    pub kind: ConfigKind,
    /// Kafka's default, as DescribeConfigs prints it.
    pub default: &'static str,
    /// The broker key whose value a topic without an override takes.
    pub broker_key: Option<&'static str>,
    /// How a value sets [`TopicConfig`]; `None`: accepted, validated by
    /// type, stored and described, but it changes nothing yet.
    pub apply: Option<ApplyValue>,
}

impl TopicConfigDef {
    /// Whether ferrolog acts on the key (the README lists those it does not).
    pub fn honoured(&self) -> bool {
        self.apply.is_some()
    }
}

const fn key(
    name: &'static str,
    kind: ConfigKind,
    default: &'static str,
    broker_key: Option<&'static str>,
    apply: Option<ApplyValue>,
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        kind,
        default,
        broker_key,
        apply,
    }
}

use ConfigKind::{Boolean, Double, Int, List, Long, String as Str};

const LONG_MAX: &str = "9223372036854775807";

/// Every topic key Kafka 3.9 accepts, sorted by name.
pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    key(
        "cleanup.policy",
        List,
        "delete",
        Some("log.cleanup.policy"),
        Some(|c, k, v| {
            c.log.cleanup_policy = parse_cleanup_policy(k, v)?;
            Ok(())
        }),
    ),
    key(
        "compression.gzip.level",
        Int,
        "-1",
        Some("compression.gzip.level"),
        None,
    ),
    key(
        "compression.lz4.level",
        Int,
        "9",
        Some("compression.lz4.level"),
        None,
    ),
    key(
        "compression.type",
        Str,
        "producer",
        Some("compression.type"),
        Some(|c, k, v| {
            c.log.compression_type = parse_compression_type(k, v)?;
            Ok(())
        }),
    ),
    key(
        "compression.zstd.level",
        Int,
        "3",
        Some("compression.zstd.level"),
        None,
    ),
    key(
        "delete.retention.ms",
        Long,
        "86400000",
        Some("log.cleaner.delete.retention.ms"),
        Some(|c, k, v| {
            c.log.delete_retention_ms = parse_int(k, v, JavaInt::Long, 0)?;
            Ok(())
        }),
    ),
    key(
        "file.delete.delay.ms",
        Long,
        "60000",
        Some("log.segment.delete.delay.ms"),
        None,
    ),
    key(
        "flush.messages",
        Long,
        LONG_MAX,
        Some("log.flush.interval.messages"),
        Some(|c, k, v| {
            c.log.flush_messages = parse_int(k, v, JavaInt::Long, 0)?;
            Ok(())
        }),
    ),
    key(
        "flush.ms",
        Long,
        LONG_MAX,
        Some("log.flush.interval.ms"),
        Some(|c, k, v| {
            c.log.flush_ms = parse_int(k, v, JavaInt::Long, 0)?;
            Ok(())
        }),
    ),
    key(
        "follower.replication.throttled.replicas",
        List,
        "",
        Some("follower.replication.throttled.replicas"),
        None,
    ),
    key(
        "index.interval.bytes",
        Int,
        "4096",
        Some("log.index.interval.bytes"),
        Some(|c, k, v| {
            c.log.index_interval_bytes = parse_int(k, v, JavaInt::Int, 0)?;
            Ok(())
        }),
    ),
    key(
        "leader.replication.throttled.replicas",
        List,
        "",
        Some("leader.replication.throttled.replicas"),
        None,
    ),
    key(
        "local.retention.bytes",
        Long,
        "-2",
        Some("log.local.retention.bytes"),
        None,
    ),
    key(
        "local.retention.ms",
        Long,
        "-2",
        Some("log.local.retention.ms"),
        None,
    ),
    key(
        "max.compaction.lag.ms",
        Long,
        LONG_MAX,
        Some("log.cleaner.max.compaction.lag.ms"),
        Some(|c, k, v| {
            c.log.max_compaction_lag_ms = parse_int(k, v, JavaInt::Long, 1)?;
            Ok(())
        }),
    ),
    key(
        "max.message.bytes",
        Int,
        "1048588",
        Some("message.max.bytes"),
        Some(|c, k, v| {
            c.log.max_message_bytes = parse_int(k, v, JavaInt::Int, 0)?;
            Ok(())
        }),
    ),
    key(
        "message.downconversion.enable",
        Boolean,
        "true",
        Some("log.message.downconversion.enable"),
        None,
    ),
    key(
        "message.format.version",
        Str,
        "3.0-IV1",
        Some("log.message.format.version"),
        None,
    ),
    key(
        "message.timestamp.after.max.ms",
        Long,
        LONG_MAX,
        Some("log.message.timestamp.after.max.ms"),
        Some(|c, k, v| {
            c.log.message_timestamp_after_max_ms = parse_int(k, v, JavaInt::Long, 0)?;
            Ok(())
        }),
    ),
    key(
        "message.timestamp.before.max.ms",
        Long,
        LONG_MAX,
        Some("log.message.timestamp.before.max.ms"),
        Some(|c, k, v| {
            c.log.message_timestamp_before_max_ms = parse_int(k, v, JavaInt::Long, 0)?;
            Ok(())
        }),
    ),
    key(
        "message.timestamp.difference.max.ms",
        Long,
        LONG_MAX,
        Some("log.message.timestamp.difference.max.ms"),
        Some(|c, k, v| {
            c.log.message_timestamp_difference_max_ms = parse_int(k, v, JavaInt::Long, 0)?;
            Ok(())
        }),
    ),
    key(
        "message.timestamp.type",
        Str,
        "CreateTime",
        Some("log.message.timestamp.type"),
        Some(|c, k, v| {
            c.log.message_timestamp_type = parse_timestamp_type(k, v)?;
            Ok(())
        }),
    ),
    key(
        "min.cleanable.dirty.ratio",
        Double,
        "0.5",
        Some("log.cleaner.min.cleanable.ratio"),
        Some(|c, k, v| {
            c.log.min_cleanable_dirty_ratio = parse_double(k, v, 0.0, 1.0)?;
            Ok(())
        }),
    ),
    key(
        "min.compaction.lag.ms",
        Long,
        "0",
        Some("log.cleaner.min.compaction.lag.ms"),
        Some(|c, k, v| {
            c.log.min_compaction_lag_ms = parse_int(k, v, JavaInt::Long, 0)?;
            Ok(())
        }),
    ),
    key(
        "min.insync.replicas",
        Int,
        "1",
        Some("min.insync.replicas"),
        Some(|c, k, v| {
            c.min_insync_replicas = Some(parse_int(k, v, JavaInt::Int, 1)?);
            Ok(())
        }),
    ),
    key(
        "preallocate",
        Boolean,
        "false",
        Some("log.preallocate"),
        None,
    ),
    key(
        "remote.log.copy.disable",
        Boolean,
        "false",
        None,
        None,
    ),
    key(
        "remote.log.delete.on.disable",
        Boolean,
        "false",
        None,
        None,
    ),
    key(
        "remote.storage.enable",
        Boolean,
        "false",
        None,
        None,
    ),
    key(
        "retention.bytes",
        Long,
        "-1",
        Some("log.retention.bytes"),
        Some(|c, k, v| {
            c.log.retention_bytes = unlimited_if_negative(parse_int(k, v, JavaInt::Long, i64::MIN)?);
            Ok(())
        }),
    ),
    key(
        "retention.ms",
        Long,
        "604800000",
        Some("log.retention.ms"),
        Some(|c, k, v| {
            c.log.retention_ms = parse_int(k, v, JavaInt::Long, -1)?;
            Ok(())
        }),
    ),
    key(
        "segment.bytes",
        Int,
        "1073741824",
        Some("log.segment.bytes"),
        Some(|c, k, v| {
            c.log.segment_bytes = parse_int(k, v, JavaInt::Int, MIN_SEGMENT_BYTES)?;
            Ok(())
        }),
    ),
    key(
        "segment.index.bytes",
        Int,
        "10485760",
        Some("log.index.size.max.bytes"),
        Some(|c, k, v| {
            c.log.segment_index_bytes = parse_int(k, v, JavaInt::Int, MIN_INDEX_BYTES)?;
            Ok(())
        }),
    ),
    key(
        "segment.jitter.ms",
        Long,
        "0",
        Some("log.roll.jitter.ms"),
        None,
    ),
    key(
        "segment.ms",
        Long,
        "604800000",
        Some("log.roll.ms"),
        Some(|c, k, v| {
            c.log.segment_ms = parse_int(k, v, JavaInt::Long, 1)?;
            Ok(())
        }),
    ),
    key(
        "unclean.leader.election.enable",
        Boolean,
        "false",
        Some("unclean.leader.election.enable"),
        Some(|c, k, v| {
            c.unclean_leader_election_enable = Some(parse_bool(k, v)?);
            Ok(())
        }),
    ),
];

/// Kafka's `ConfigDef.Type`, with the codes DescribeConfigs v3+ sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
}

/// The row for `name`, if Kafka has such a topic key.
pub fn topic_config(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|def| def.name == name)
}

/// The codecs `compression.type` names (Kafka's `BrokerCompressionType`).
const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];

/// Checks a value of a key ferrolog does not honour yet against its type,
/// so what is stored would also be valid for Kafka; `Err` says why not.
pub fn validate_unhonoured(def: &TopicConfigDef, value: &str) -> Result<(), NotOfType> {
    let value = value.trim();
    let ok = match def.kind {
        ConfigKind::Boolean => {
            value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("false")
        }
        ConfigKind::Short => value.parse::<i16>().is_ok(),
        ConfigKind::Int => value.parse::<i32>().is_ok(),
        ConfigKind::Long => value.parse::<i64>().is_ok(),
        ConfigKind::Double => value.parse::<f64>().is_ok_and(f64::is_finite),
        ConfigKind::List => true,
        ConfigKind::String if def.name == "compression.type" => {
            COMPRESSION_TYPES.contains(&value.to_ascii_lowercase().as_str())
        }
        ConfigKind::String | ConfigKind::Class => true,
    };
    if ok {
        Ok(())
    } else {
        Err(NotOfType(def.kind))
    }
}

/// A value that is not of its key's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a valid {0:?} value")]
pub struct NotOfType(pub ConfigKind);

/// IncrementalAlterConfigs' operations (`AlterConfigOp.OpType`), by the
/// codes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterOp {
    Set = 0,
    Delete = 1,
    Append = 2,
    Subtract = 3,
}

impl AlterOp {
    pub fn from_code(code: i8) -> Option<AlterOp> {
        match code {
            0 => Some(AlterOp::Set),
            1 => Some(AlterOp::Delete),
            2 => Some(AlterOp::Append),
            3 => Some(AlterOp::Subtract),
            _ => None,
        }
    }
}

/// Why an incremental change was refused (Kafka answers INVALID_CONFIG).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IncrementalAlterError {
    #[error("Config value {0} is not allowed for config key: {1}")]
    NotAList(&'static str, String),
    #[error("Null value not supported for: {0}")]
    NullValue(String),
    #[error("Unknown operation {0} for config key: {1}")]
    UnknownOperation(i8, String),
}

/// Applies one IncrementalAlterConfigs operation to a topic's overrides,
/// as Kafka's `ConfigAdminManager.prepareIncrementalConfigs` does: SET and
/// DELETE on any key; APPEND (values not there yet, at the end) and
/// SUBTRACT (every occurrence) only on LIST keys, starting from the
/// override or, without one, the key's Kafka default. Unknown keys are
/// left to the validation of the whole set.
pub fn apply_incremental(
    overrides: &mut std::collections::BTreeMap<std::string::String, std::string::String>,
    operation: i8,
    key: &str,
    value: Option<&str>,
) -> Result<(), IncrementalAlterError> {
    let list_default = topic_config(key)
        .filter(|def| def.kind == ConfigKind::List)
        .map(|def| def.default.to_string());
    apply_incremental_op(overrides, operation, key, value, list_default)
}

/// [`apply_incremental`] for any config set: `list_default` is the key's
/// Kafka default when it is a LIST key (`None`: APPEND and SUBTRACT are
/// refused for it).
pub fn apply_incremental_op(
    overrides: &mut std::collections::BTreeMap<std::string::String, std::string::String>,
    operation: i8,
    key: &str,
    value: Option<&str>,
    list_default: Option<std::string::String>,
) -> Result<(), IncrementalAlterError> {
    let Some(op) = AlterOp::from_code(operation) else {
        return Err(IncrementalAlterError::UnknownOperation(operation, key.to_string()));
    };
    let value = match (op, value) {
        (AlterOp::Delete, _) => {
            overrides.remove(key);
            return Ok(());
        }
        (_, None) => return Err(IncrementalAlterError::NullValue(key.to_string())),
        (_, Some(value)) => value,
    };
    if op == AlterOp::Set {
        overrides.insert(key.to_string(), value.to_string());
        return Ok(());
    }
    let Some(list_default) = list_default else {
        let verb = if op == AlterOp::Append { "append" } else { "subtract" };
        return Err(IncrementalAlterError::NotAList(verb, key.to_string()));
    };
    let items = |list: &str| -> Vec<std::string::String> {
        list.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut current = items(overrides.get(key).unwrap_or(&list_default));
    let given = items(value);
    if op == AlterOp::Append {
        for item in given {
            if !current.contains(&item) {
                current.push(item);
            }
        }
    } else {
        current.retain(|item| !given.contains(item));
    }
    overrides.insert(key.to_string(), current.join(","));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_and_subtract_change_list_keys_from_their_default() {
        let mut overrides = std::collections::BTreeMap::new();
        apply_incremental(&mut overrides, 2, "cleanup.policy", Some("compact")).unwrap();
        assert_eq!(overrides["cleanup.policy"], "delete,compact");
        // Appending what is there adds nothing.
        apply_incremental(&mut overrides, 2, "cleanup.policy", Some("delete")).unwrap();
        assert_eq!(overrides["cleanup.policy"], "delete,compact");
        apply_incremental(&mut overrides, 3, "cleanup.policy", Some("delete")).unwrap();
        assert_eq!(overrides["cleanup.policy"], "compact");
        // An empty default: no leading comma.
        let key = "leader.replication.throttled.replicas";
        apply_incremental(&mut overrides, 2, key, Some("0:1,1:2")).unwrap();
        assert_eq!(overrides[key], "0:1,1:2");
        apply_incremental(&mut overrides, 3, key, Some("0:1")).unwrap();
        assert_eq!(overrides[key], "1:2");
    }

    #[test]
    fn append_and_subtract_are_refused_on_other_keys() {
        let mut overrides = std::collections::BTreeMap::new();
        assert_eq!(
            apply_incremental(&mut overrides, 2, "retention.ms", Some("1")),
            Err(IncrementalAlterError::NotAList("append", "retention.ms".into()))
        );
        assert!(apply_incremental(&mut overrides, 3, "segment.ms", Some("1")).is_err());
        assert!(apply_incremental(&mut overrides, 9, "segment.ms", Some("1")).is_err());
        assert!(apply_incremental(&mut overrides, 0, "segment.ms", None).is_err());
        assert!(overrides.is_empty());
    }

    #[test]
    fn set_and_delete_take_any_key() {
        let mut overrides = std::collections::BTreeMap::new();
        apply_incremental(&mut overrides, 0, "retention.ms", Some("5")).unwrap();
        assert_eq!(overrides["retention.ms"], "5");
        apply_incremental(&mut overrides, 1, "retention.ms", None).unwrap();
        assert!(overrides.is_empty());
    }

    #[test]
    fn table_is_sorted_and_unique() {
        for pair in TOPIC_CONFIGS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} / {}",
                pair[0].name,
                pair[1].name
            );
        }
    }

    #[test]
    fn overrides_set_typed_fields_and_a_later_duplicate_wins() {
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let base = LogConfig::default();
        let config = TopicConfig::from_overrides(
            &base,
            &pairs(&[
                ("retention.ms", "1000"),
                ("min.insync.replicas", "2"),
                ("unclean.leader.election.enable", "TRUE"),
                ("retention.ms", "2000"),
                ("preallocate", "true"),
            ]),
        )
        .unwrap();
        assert_eq!(config.log.retention_ms, 2000);
        assert_eq!(config.min_insync_replicas, Some(2));
        assert_eq!(config.unclean_leader_election_enable, Some(true));
        let untouched = TopicConfig::from_overrides(&base, &[]).unwrap();
        assert_eq!(untouched.log, base);
        assert_eq!(untouched.min_insync_replicas, None);
        for bad in [
            ("min.insync.replicas", "0"),
            ("unclean.leader.election.enable", "yes"),
            ("retention.hours", "1"),
            ("preallocate", "maybe"),
            ("segment.bytes", "1"),
        ] {
            assert!(
                TopicConfig::from_overrides(&base, &pairs(&[bad])).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_honoured_key_changes_its_field() {
        // A value other than the default for each honoured key must
        // change the config: a row whose parser sets nothing fails here.
        let samples = [
            ("cleanup.policy", "compact"),
            ("compression.type", "lz4"),
            ("delete.retention.ms", "5"),
            ("flush.messages", "5"),
            ("flush.ms", "5"),
            ("index.interval.bytes", "5"),
            ("max.compaction.lag.ms", "5"),
            ("max.message.bytes", "5"),
            ("message.timestamp.after.max.ms", "5"),
            ("message.timestamp.before.max.ms", "5"),
            ("message.timestamp.difference.max.ms", "5"),
            ("message.timestamp.type", "LogAppendTime"),
            ("min.cleanable.dirty.ratio", "0.25"),
            ("min.compaction.lag.ms", "5"),
            ("min.insync.replicas", "2"),
            ("retention.bytes", "5"),
            ("retention.ms", "5"),
            ("segment.bytes", "5000"),
            ("segment.index.bytes", "5000"),
            ("segment.ms", "5"),
            ("unclean.leader.election.enable", "true"),
        ];
        let honoured: Vec<&str> = TOPIC_CONFIGS
            .iter()
            .filter(|def| def.honoured())
            .map(|def| def.name)
            .collect();
        let sampled: Vec<&str> = samples.iter().map(|(k, _)| *k).collect();
        assert_eq!(honoured, sampled, "a sample for every honoured key");
        let base = TopicConfig::from_overrides(&LogConfig::default(), &[]).unwrap();
        for (key, value) in samples {
            let changed = TopicConfig::from_overrides(
                &LogConfig::default(),
                &[(key.to_string(), value.to_string())],
            )
            .unwrap();
            assert_ne!(changed, base, "{key}={value} changed nothing");
        }
    }

    #[test]
    fn unhonoured_values_are_checked_by_type() {
        let def = |name| topic_config(name).expect("known key");
        assert!(validate_unhonoured(def("preallocate"), "TRUE").is_ok());
        assert!(validate_unhonoured(def("preallocate"), "yes").is_err());
        assert!(validate_unhonoured(def("min.cleanable.dirty.ratio"), "0.3").is_ok());
        assert!(validate_unhonoured(def("min.cleanable.dirty.ratio"), "NaN").is_err());
        assert!(validate_unhonoured(def("compression.type"), "lz4").is_ok());
        assert!(validate_unhonoured(def("compression.type"), "brotli").is_err());
        assert!(validate_unhonoured(def("delete.retention.ms"), "x").is_err());
        assert!(topic_config("retention.hours").is_none());
    }
}
