//! Log compaction of one partition (Kafka's `Cleaner`): map every key to
//! its latest offset over the dirty part of the log, then copy the closed
//! segments, group by group, into `<base>.log.cleaned` segments keeping only
//! what the map calls latest, tombstones younger than `delete.retention.ms`,
//! control batches, and each idempotent producer's last batch (so its state
//! can be rebuilt from the log).
//!
//! It reads the source segments through their open files and writes new
//! files only: it never touches the live segment list, so produce and fetch
//! go on while it runs. `PartitionLog::swap_cleaned` swaps the result in
//! after checking the sources are still the ones cleaned. Offsets never
//! change: a kept record keeps its offset, and readers step over the gaps.
//! Plain Rust, no clock: it may run on any thread.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::records::{Compression, Record};

use super::batch::{self, EntryHeader};
use super::config::LogConfig;
use super::error::LogError;
use super::segment::{segment_file, Segment};
use crate::topic_partition::TopicPartition;

/// The suffix of a cleaned segment's files before they are swapped in.
pub const CLEANED_SUFFIX: &str = "cleaned";
/// The suffix of a cleaned segment committed to replace its sources.
pub const SWAP_SUFFIX: &str = "swap";
/// Bytes the key map is charged per key, beyond the key itself.
const MAP_ENTRY_OVERHEAD: u64 = 48;
/// v2 batch layout: CRC, attributes.
const V2_CRC_POS: usize = 17;
const V2_ATTRIBUTES_POS: usize = 21;
const LOG_APPEND_TIME_BIT: u8 = 0x08;
const CONTROL_BIT: u8 = 0x20;

/// The cleaner's resources (`log.cleaner.*`), per cleaning.
#[derive(Debug, Clone)]
pub struct CleanerLimits {
    /// `log.cleaner.dedupe.buffer.size` / threads: memory for the key map.
    pub dedupe_buffer_bytes: u64,
    /// `log.cleaner.io.buffer.load.factor`: how full the map may get.
    pub load_factor: f64,
    /// `log.cleaner.io.buffer.size`: bytes read and written at a time.
    pub io_buffer_bytes: usize,
    /// `log.cleaner.io.max.bytes.per.second`: read throttle.
    pub max_bytes_per_second: f64,
}

impl Default for CleanerLimits {
    fn default() -> Self {
        CleanerLimits {
            dedupe_buffer_bytes: 128 * 1024 * 1024,
            load_factor: 0.9,
            io_buffer_bytes: 512 * 1024,
            max_bytes_per_second: f64::MAX,
        }
    }
}

/// How dirty a compacted log is (what the cleaner picks logs by).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cleanable {
    /// Dirty bytes over all cleanable bytes.
    pub dirty_ratio: f64,
    pub dirty_bytes: u64,
    /// `max.compaction.lag.ms` has passed for the oldest dirty records.
    pub must_clean: bool,
}

impl Cleanable {
    /// Which of two logs the cleaner takes first: one past
    /// `max.compaction.lag.ms`, then the dirtier.
    pub fn priority(&self, other: &Cleanable) -> std::cmp::Ordering {
        (self.must_clean, self.dirty_ratio)
            .partial_cmp(&(other.must_clean, other.dirty_ratio))
            .unwrap_or(std::cmp::Ordering::Equal)
    }
}

/// A closed segment as the cleaner reads it.
#[derive(Debug, Clone)]
pub struct SourceSegment {
    pub base_offset: i64,
    /// Where the next segment starts (a closed segment always has one).
    pub end_offset: i64,
    pub size: u64,
    /// Its largest record timestamp (tombstone expiry).
    pub largest_timestamp: i64,
    pub file: Arc<File>,
}

/// One cleaning's input, taken from the log on its owner's thread.
#[derive(Debug, Clone)]
pub struct CleanTask {
    pub tp: TopicPartition,
    pub dir: PathBuf,
    pub config: LogConfig,
    /// Offsets below this were cleaned before.
    pub first_dirty_offset: i64,
    /// The closed segments that may be cleaned: from the log start up to the
    /// first one holding records above the high watermark or younger than
    /// `min.compaction.lag.ms`.
    pub segments: Vec<SourceSegment>,
    /// Each idempotent producer's last batch, by its last offset.
    pub producer_last_offsets: HashMap<i64, i64>,
    pub now_ms: i64,
}

/// A cleaned segment written as `.cleaned` files, and what it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanedSegment {
    pub base_offset: i64,
    /// The source segments' base offsets and sizes, in order.
    pub sources: Vec<(i64, u64)>,
    pub size: u64,
}

/// What a cleaning did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanerStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_read: u64,
    pub records_kept: u64,
    pub tombstones_removed: u64,
    pub keys_mapped: u64,
    pub batches_rewritten: u64,
}

/// A finished cleaning, ready to be swapped in.
#[derive(Debug, Clone)]
pub struct CleanOutcome {
    pub tp: TopicPartition,
    pub cleaned: Vec<CleanedSegment>,
    /// Where the next cleaning's dirty part starts.
    pub first_dirty_offset: i64,
    pub stats: CleanerStats,
}

/// Each key's latest offset in the dirty part, within a memory budget.
struct OffsetMap {
    offsets: HashMap<Box<[u8]>, i64>,
    bytes: u64,
    limit: u64,
}

impl OffsetMap {
    fn new(limits: &CleanerLimits) -> Self {
        OffsetMap {
            offsets: HashMap::new(),
            bytes: 0,
            limit: (limits.dedupe_buffer_bytes as f64 * limits.load_factor) as u64,
        }
    }

    /// False when the key would not fit: the map is full.
    fn put(&mut self, key: &[u8], offset: i64) -> bool {
        if let Some(latest) = self.offsets.get_mut(key) {
            *latest = offset;
            return true;
        }
        let cost = key.len() as u64 + MAP_ENTRY_OVERHEAD;
        if self.bytes + cost > self.limit {
            return false;
        }
        self.bytes += cost;
        self.offsets.insert(key.into(), offset);
        true
    }

    fn get(&self, key: &[u8]) -> Option<i64> {
        self.offsets.get(key).copied()
    }
}

/// Reads a segment file entry by entry through one buffer, throttled.
struct EntryReader<'a> {
    file: &'a File,
    size: u64,
    buf: Vec<u8>,
    buf_start: u64,
    buf_len: usize,
    position: u64,
    throttle: &'a mut Throttle,
    path: PathBuf,
}

impl<'a> EntryReader<'a> {
    fn new(
        source: &'a SourceSegment,
        io_bytes: usize,
        throttle: &'a mut Throttle,
        dir: &Path,
    ) -> Self {
        EntryReader {
            file: &source.file,
            size: source.size,
            buf: vec![0; io_bytes.max(batch::HEADER_PEEK_LEN)],
            buf_start: 0,
            buf_len: 0,
            position: 0,
            throttle,
            path: segment_file(dir, source.base_offset, "log"),
        }
    }

    /// The next entry, or None at the end. The segment is closed and was
    /// checked when written or recovered; a bad entry is corruption.
    fn next_entry(&mut self) -> Result<Option<(EntryHeader, &[u8])>, LogError> {
        if self.position >= self.size {
            return Ok(None);
        }
        let peek = ((self.size - self.position) as usize).min(batch::HEADER_PEEK_LEN);
        self.fill(peek)?;
        let at = (self.position - self.buf_start) as usize;
        let header = EntryHeader::parse(&self.buf[at..at + peek], self.position as usize)
            .map_err(|e| self.corrupt(e.to_string()))?;
        if self.position + header.size as u64 > self.size {
            return Err(self.corrupt(format!(
                "entry at byte {} runs past the segment end",
                self.position
            )));
        }
        self.fill(header.size)?;
        let at = (self.position - self.buf_start) as usize;
        self.position += header.size as u64;
        Ok(Some((header, &self.buf[at..at + header.size])))
    }

    /// Make `want` bytes from `position` available in the buffer.
    fn fill(&mut self, want: usize) -> Result<(), LogError> {
        let end = self.buf_start + self.buf_len as u64;
        if self.position >= self.buf_start && self.position + want as u64 <= end {
            return Ok(());
        }
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let length = (self.buf.len() as u64).min(self.size - self.position) as usize;
        self.file
            .read_exact_at(&mut self.buf[..length], self.position)
            .map_err(|e| LogError::io(&self.path, e))?;
        self.throttle.consumed(length as u64);
        self.buf_start = self.position;
        self.buf_len = length;
        Ok(())
    }

    fn corrupt(&self, reason: String) -> LogError {
        LogError::Corrupt {
            path: self.path.clone(),
            reason,
        }
    }
}

/// `log.cleaner.io.max.bytes.per.second`: sleeps when reads run ahead.
struct Throttle {
    started: Instant,
    bytes: u64,
    max_bytes_per_second: f64,
}

impl Throttle {
    fn consumed(&mut self, bytes: u64) {
        self.bytes += bytes;
        if self.max_bytes_per_second >= f64::MAX {
            return;
        }
        let due = Duration::from_secs_f64(self.bytes as f64 / self.max_bytes_per_second);
        if let Some(ahead) = due.checked_sub(self.started.elapsed()) {
            std::thread::sleep(ahead);
        }
    }
}

/// Clean `task`'s log: write `.cleaned` segments into its directory.
/// Nothing live is changed; an error leaves at most `.cleaned` files, which
/// the next load removes.
pub fn clean(task: &CleanTask, limits: &CleanerLimits) -> Result<CleanOutcome, LogError> {
    let mut stats = CleanerStats::default();
    let mut throttle = Throttle {
        started: Instant::now(),
        bytes: 0,
        max_bytes_per_second: limits.max_bytes_per_second,
    };
    let mut map = OffsetMap::new(limits);
    let end_offset = build_offset_map(task, limits, &mut map, &mut throttle, &mut stats)?;
    stats.keys_mapped = map.offsets.len() as u64;
    // Tombstones go once the segment holding them is older than the last
    // cleaned segment by `delete.retention.ms` (Kafka's delete horizon).
    let delete_horizon = task
        .segments
        .iter()
        .take_while(|s| s.base_offset < task.first_dirty_offset)
        .filter(|s| s.end_offset <= task.first_dirty_offset)
        .last()
        .map_or(i64::MIN, |s| {
            s.largest_timestamp
                .saturating_sub(task.config.delete_retention_ms)
        });
    let to_clean: Vec<&SourceSegment> = task
        .segments
        .iter()
        .filter(|s| s.base_offset < end_offset)
        .collect();
    let mut cleaned = Vec::new();
    for group in group_segments(task, &to_clean) {
        cleaned.push(clean_group(
            task,
            limits,
            &group,
            &map,
            delete_horizon,
            &mut throttle,
            &mut stats,
        )?);
    }
    Ok(CleanOutcome {
        tp: task.tp.clone(),
        cleaned,
        first_dirty_offset: end_offset,
        stats,
    })
}

/// Map the dirty segments' keys; answers where the mapped part ends (the
/// end of the last segment, or earlier if the map filled up).
fn build_offset_map(
    task: &CleanTask,
    limits: &CleanerLimits,
    map: &mut OffsetMap,
    throttle: &mut Throttle,
    stats: &mut CleanerStats,
) -> Result<i64, LogError> {
    let mut mapped_to = task.first_dirty_offset;
    for source in &task.segments {
        let end = source.end_offset;
        if end <= task.first_dirty_offset {
            continue;
        }
        let mut reader = EntryReader::new(source, limits.io_buffer_bytes, throttle, &task.dir);
        while let Some((header, entry)) = reader.next_entry()? {
            stats.bytes_read += entry.len() as u64;
            if header.last_offset < task.first_dirty_offset || is_control(&header, entry) {
                continue;
            }
            let records = match batch::decode_entry(entry, 0) {
                Ok(records) => records,
                Err(e) => {
                    log::warn!(
                        "{}: cleaner cannot decode a batch, it is kept: {e}",
                        task.tp
                    );
                    continue;
                }
            };
            let count = records.len() as i64;
            for (i, record) in records.iter().enumerate() {
                let offset = record_offset(&header, record, i as i64, count);
                if offset < task.first_dirty_offset {
                    continue;
                }
                let Some(key) = &record.key else { continue };
                if !map.put(key, offset) {
                    log::info!(
                        "{}: cleaner key map is full at offset {offset} (log.cleaner.dedupe.buffer.size); cleaning up to there",
                        task.tp
                    );
                    return Ok(offset);
                }
            }
            mapped_to = header.last_offset + 1;
        }
        mapped_to = mapped_to.max(end);
    }
    Ok(mapped_to)
}

/// A record's absolute offset: legacy compressed wrappers hold relative
/// inner offsets and name only their last.
fn record_offset(header: &EntryHeader, record: &Record, index: i64, count: i64) -> i64 {
    match header.first_offset() {
        Some(_) => record.offset,
        None => header.last_offset - (count - 1) + index,
    }
}

fn is_control(header: &EntryHeader, entry: &[u8]) -> bool {
    header.magic == 2
        && entry.len() > V2_ATTRIBUTES_POS + 1
        && entry[V2_ATTRIBUTES_POS + 1] & CONTROL_BIT != 0
}

/// Consecutive segments whose total fits one segment (`segment.bytes`)
/// and whose offsets fit its 32-bit relative index.
fn group_segments<'a>(
    task: &CleanTask,
    segments: &[&'a SourceSegment],
) -> Vec<Vec<&'a SourceSegment>> {
    let mut groups: Vec<Vec<&SourceSegment>> = Vec::new();
    let mut size = 0u64;
    for &segment in segments {
        let fits = groups.last().is_some_and(|group| {
            size + segment.size <= task.config.segment_bytes
                && segment.end_offset.saturating_sub(group[0].base_offset) <= i64::from(i32::MAX)
        });
        if fits {
            size += segment.size;
            if let Some(group) = groups.last_mut() {
                group.push(segment);
            }
        } else {
            size = segment.size;
            groups.push(vec![segment]);
        }
    }
    groups
}

#[allow(clippy::too_many_arguments)]
fn clean_group(
    task: &CleanTask,
    limits: &CleanerLimits,
    group: &[&SourceSegment],
    map: &OffsetMap,
    delete_horizon: i64,
    throttle: &mut Throttle,
    stats: &mut CleanerStats,
) -> Result<CleanedSegment, LogError> {
    let base_offset = group[0].base_offset;
    let mut cleaned = Segment::create_with_suffix(
        &task.dir,
        base_offset,
        &task.config,
        task.now_ms,
        CLEANED_SUFFIX,
    )?;
    let mut out: Vec<u8> = Vec::with_capacity(limits.io_buffer_bytes);
    for source in group {
        let remove_tombstones = source.largest_timestamp <= delete_horizon;
        let mut reader = EntryReader::new(source, limits.io_buffer_bytes, throttle, &task.dir);
        while let Some((header, entry)) = reader.next_entry()? {
            stats.bytes_read += entry.len() as u64;
            let kept = filter_entry(task, &header, entry, map, remove_tombstones, stats)?;
            match kept {
                Kept::All => out.extend_from_slice(entry),
                Kept::None => {}
                Kept::Rewritten(bytes) => {
                    stats.batches_rewritten += 1;
                    out.extend_from_slice(&bytes);
                }
            }
            if out.len() >= limits.io_buffer_bytes {
                cleaned.append_verified(&out, &task.config)?;
                stats.bytes_written += out.len() as u64;
                out.clear();
            }
        }
    }
    if !out.is_empty() {
        cleaned.append_verified(&out, &task.config)?;
        stats.bytes_written += out.len() as u64;
    }
    cleaned.flush()?;
    Ok(CleanedSegment {
        base_offset,
        sources: group.iter().map(|s| (s.base_offset, s.size)).collect(),
        size: cleaned.size(),
    })
}

enum Kept {
    All,
    None,
    Rewritten(Vec<u8>),
}

fn filter_entry(
    task: &CleanTask,
    header: &EntryHeader,
    entry: &[u8],
    map: &OffsetMap,
    remove_tombstones: bool,
    stats: &mut CleanerStats,
) -> Result<Kept, LogError> {
    if is_control(header, entry) {
        return Ok(Kept::All);
    }
    let producers_last = batch::producer_fields(entry).is_some_and(|fields| {
        task.producer_last_offsets.get(&fields.producer_id) == Some(&header.last_offset)
    });
    let records = match batch::decode_entry(entry, 0) {
        Ok(records) => records,
        // Never lose what cannot be read: it stays as it is.
        Err(_) => return Ok(Kept::All),
    };
    let count = records.len() as i64;
    stats.records_read += count as u64;
    let keep: Vec<bool> = records
        .iter()
        .enumerate()
        .map(|(i, record)| {
            let offset = record_offset(header, record, i as i64, count);
            let Some(key) = &record.key else {
                // Kafka's cleaner drops records without a key.
                return false;
            };
            if map.get(key).is_some_and(|latest| offset < latest) {
                return false;
            }
            if record.value.is_none() && remove_tombstones {
                stats.tombstones_removed += 1;
                return false;
            }
            true
        })
        .collect();
    let kept = keep.iter().filter(|k| **k).count();
    // The producer's last batch stays whole: its state is rebuilt from it.
    if producers_last || kept == records.len() {
        stats.records_kept += count as u64;
        return Ok(Kept::All);
    }
    stats.records_kept += kept as u64;
    if kept == 0 {
        return Ok(Kept::None);
    }
    // A legacy entry holds one message, or a compressed wrapper kept whole
    // when any message in it stays.
    if header.magic < 2 {
        stats.records_kept += (count as usize - kept) as u64;
        return Ok(Kept::All);
    }
    let mut survivors: Vec<Record> = records
        .into_iter()
        .zip(keep)
        .filter_map(|(record, keep)| keep.then_some(record))
        .collect();
    // Without a producer the batch has no sequence (-1); the encoder takes
    // the first record's as the base, so count up from -1 from there.
    if let Some(first) = survivors.first().map(|r| r.offset) {
        for record in survivors.iter_mut().filter(|r| r.producer_id < 0) {
            record.sequence = (record.offset - first) as i32 - 1;
        }
    }
    rewrite_v2(header, &survivors).map(Kept::Rewritten)
}

/// A v2 batch holding only `records`, with the source batch's codec,
/// timestamp type and leader epoch; the records keep their offsets.
fn rewrite_v2(header: &EntryHeader, records: &[Record]) -> Result<Vec<u8>, LogError> {
    let compression = match header.compression {
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        4 => Compression::Zstd,
        _ => Compression::None,
    };
    let encoded =
        super::records::encode_records_with(records, compression).map_err(|e| {
            LogError::InvalidBatch(batch::BatchError::Undecodable {
                position: 0,
                reason: format!("re-encoding a cleaned batch: {}", e.0),
            })
        })?;
    let mut bytes = encoded.to_vec();
    if header.log_append_time && bytes.len() > V2_ATTRIBUTES_POS + 1 {
        // The encoder knows no timestamp type; LogAppendTime is a batch bit.
        bytes[V2_ATTRIBUTES_POS + 1] |= LOG_APPEND_TIME_BIT;
        let crc = crc32c::crc32c(&bytes[V2_ATTRIBUTES_POS..]);
        bytes[V2_CRC_POS..V2_CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
    }
    Ok(bytes)
}
