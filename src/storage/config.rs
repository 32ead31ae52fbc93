//! Per-partition log settings: the broker's `log.*` defaults with topic-level
//! overrides already applied. Plain data; parsing lives in `crate::config`.

/// Whether a batch keeps the producer's timestamp or gets the broker's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's spelling, as `message.timestamp.type` takes it.
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
}

/// `cleanup.policy`: what happens to old segments. `delete` removes them by
/// retention; `compact` keeps the latest record of every key (the log
/// cleaner); both may be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// Delete segments past retention.
    pub delete: bool,
    /// Keep the latest record of each key.
    pub compact: bool,
}

impl CleanupPolicy {
    /// `cleanup.policy=delete`, the default.
    pub const DELETE: CleanupPolicy = CleanupPolicy {
        delete: true,
        compact: false,
    };
    /// `cleanup.policy=compact`.
    pub const COMPACT: CleanupPolicy = CleanupPolicy {
        delete: false,
        compact: true,
    };

    /// Kafka's spelling: `delete`, `compact` or `compact,delete`.
    pub fn name(self) -> &'static str {
        match (self.compact, self.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            _ => "delete",
        }
    }
}

/// `compression.type`: the codec the leader re-compresses v2 batches with,
/// or `Producer` to keep whatever the producer sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionType {
    /// Keep the producer's codec.
    Producer,
    /// Store uncompressed.
    Uncompressed,
    /// gzip.
    Gzip,
    /// snappy.
    Snappy,
    /// lz4.
    Lz4,
    /// zstd.
    Zstd,
}

impl CompressionType {
    /// The Kafka config spelling, e.g. for DescribeConfigs.
    pub fn name(self) -> &'static str {
        match self {
            CompressionType::Producer => "producer",
            CompressionType::Uncompressed => "uncompressed",
            CompressionType::Gzip => "gzip",
            CompressionType::Snappy => "snappy",
            CompressionType::Lz4 => "lz4",
            CompressionType::Zstd => "zstd",
        }
    }
}

impl CompressionType {
    /// The codec batches are stored with; `None` keeps the producer's.
    pub fn codec(self) -> Option<kafka_protocol::records::Compression> {
        use kafka_protocol::records::Compression;
        match self {
            CompressionType::Producer => None,
            CompressionType::Uncompressed => Some(Compression::None),
            CompressionType::Gzip => Some(Compression::Gzip),
            CompressionType::Snappy => Some(Compression::Snappy),
            CompressionType::Lz4 => Some(Compression::Lz4),
            CompressionType::Zstd => Some(Compression::Zstd),
        }
    }
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
    /// `message.timestamp.difference.max.ms` (deprecated by KIP-937): the
    /// bound on both sides when the two below are left at their default.
    pub message_timestamp_difference_max_ms: i64,
    /// `message.timestamp.before.max.ms`: how far behind the broker's clock
    /// a CreateTime record may be.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far ahead of it.
    pub message_timestamp_after_max_ms: i64,
    /// `flush.messages` / `log.flush.interval.messages`: fsync after this many messages.
    pub flush_messages: u64,
    /// `flush.ms` / `log.flush.interval.ms`: fsync when the last flush is older than this.
    pub flush_ms: i64,
    /// `producer.id.expiration.ms` (broker only): forget an idempotent
    /// producer whose last batch is older than this.
    pub producer_id_expiration_ms: i64,
    /// `cleanup.policy` / `log.cleanup.policy`.
    pub cleanup_policy: CleanupPolicy,
    /// `delete.retention.ms` / `log.cleaner.delete.retention.ms`: how long
    /// a tombstone stays once its segment has been cleaned.
    pub delete_retention_ms: i64,
    /// `min.cleanable.dirty.ratio` / `log.cleaner.min.cleanable.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms` / `log.cleaner.min.compaction.lag.ms`:
    /// records younger than this are never compacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` / `log.cleaner.max.compaction.lag.ms`:
    /// dirty records older than this are compacted whatever the ratio.
    pub max_compaction_lag_ms: i64,
    /// `compression.type` / broker `compression.type`.
    pub compression_type: CompressionType,
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
            message_timestamp_difference_max_ms: i64::MAX,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            flush_messages: i64::MAX as u64,
            flush_ms: i64::MAX,
            producer_id_expiration_ms: 24 * 60 * 60 * 1000,
            cleanup_policy: CleanupPolicy::DELETE,
            delete_retention_ms: 24 * 60 * 60 * 1000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            compression_type: CompressionType::Producer,
        }
    }
}

impl LogConfig {
    /// The window a CreateTime record's timestamp must fall in, as
    /// (before, after) the broker's clock, or `None` when unbounded (the
    /// default, so appends skip the per-record check). KIP-937: an explicit
    /// `before`/`after` wins, otherwise `difference` applies.
    pub fn timestamp_bounds(&self) -> Option<(i64, i64)> {
        if self.message_timestamp_type != TimestampType::CreateTime {
            return None;
        }
        let pick = |explicit: i64| {
            if explicit == i64::MAX {
                self.message_timestamp_difference_max_ms
            } else {
                explicit
            }
        };
        let bounds = (
            pick(self.message_timestamp_before_max_ms),
            pick(self.message_timestamp_after_max_ms),
        );
        (bounds != (i64::MAX, i64::MAX)).then_some(bounds)
    }
}
