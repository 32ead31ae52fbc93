//! Topic-level configs (`retention.ms`, `segment.bytes`, ...): how a
//! topic's overrides apply on top of the broker's log defaults.

use super::{
    invalid, parse_cleanup_policy, parse_compression_type, parse_double, parse_int,
    parse_timestamp_type, unlimited_if_negative, ConfigError, JavaInt, MIN_INDEX_BYTES,
    MIN_SEGMENT_BYTES,
};
use crate::storage::config::LogConfig;

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
                    .map_err(|e| invalid(key, value, e.to_string()))?,
                _ => return Err(invalid(key, value, "unknown or unsupported topic config")),
            },
        }
    }
    Ok(config)
}
