//! Per-partition log settings: the broker's `log.*` defaults with topic-level
//! overrides already applied. Plain data; parsing lives in `crate::config`.

/// Whether a batch keeps the producer's timestamp or gets the broker's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// Settings one partition log runs with. Field names follow Kafka's topic
/// config keys (`segment.bytes` -> `segment_bytes`); units are in the name.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes` / `log.segment.bytes`: roll when the active segment would exceed this.
    pub segment_bytes: u64,
    /// `segment.ms` / `log.roll.ms` (`log.roll.hours`): roll when the active segment is older.
    pub segment_ms: i64,
    /// `segment.index.bytes` / `log.index.size.max.bytes`: roll when the offset index is this big.
    pub segment_index_bytes: u64,
    /// `index.interval.bytes` / `log.index.interval.bytes`: bytes between sparse index entries.
    pub index_interval_bytes: u64,
    /// `retention.ms` / `log.retention.ms`; -1 keeps segments forever.
    pub retention_ms: i64,
    /// `retention.bytes` / `log.retention.bytes`; -1 means no size limit.
    pub retention_bytes: i64,
    /// `max.message.bytes` / `message.max.bytes`: largest batch accepted, log overhead included.
    pub max_message_bytes: u64,
    /// `message.timestamp.type` / `log.message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `flush.messages` / `log.flush.interval.messages`: fsync after this many messages.
    pub flush_messages: u64,
    /// `flush.ms` / `log.flush.interval.ms`: fsync when the last flush is older than this.
    pub flush_ms: i64,
}

impl Default for LogConfig {
    /// Kafka's defaults.
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 168 * 60 * 60 * 1000,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            retention_ms: 168 * 60 * 60 * 1000,
            retention_bytes: -1,
            max_message_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            flush_messages: i64::MAX as u64,
            flush_ms: i64::MAX,
        }
    }
}
