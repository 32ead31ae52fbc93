//! One partition's log: an ordered list of segments in `<topic>-<partition>/`.
//! It assigns offsets, rolls segments, answers reads with file regions,
//! enforces retention, flushes by policy and recovers after a crash.
//!
//! It is single-threaded by design: its owner (a log shard of the log manager)
//! serialises every call, so it needs no locks. It never reads a clock; the
//! caller passes `now_ms`. It never knows about other partitions.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use bytes::Bytes;

use super::batch;
use super::cleaner::{
    CleanOutcome, CleanTask, Cleanable, SourceSegment, CLEANED_SUFFIX, SWAP_SUFFIX,
};
use super::config::LogConfig;
use super::error::LogError;
use super::leader_epoch::{EpochEndOffset, LeaderEpochCache};
use super::partition_metadata;
use super::producer_state::{LogHistory, ProducerBatch, ProducerCheck, ProducerStateManager};
use super::segment::{segment_file, FileRegion, Segment, SegmentRecovery, SEGMENT_EXTENSIONS};
use crate::topic_partition::TopicPartition;

/// Offsets inside a segment are stored relative to its base in 32 bits.
const MAX_RELATIVE_OFFSET: i64 = i32::MAX as i64;
/// Bytes read at a time when replaying batches into the producer state.
const PRODUCER_REPLAY_READ_BYTES: u64 = 1 << 20;

/// Where a load starts from, as the log directory's checkpoints say.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Offsets below this were flushed; their segments are trusted.
    pub recovery_point: i64,
    pub log_start_offset: i64,
    /// The directory holds a clean-shutdown marker: nothing is re-read.
    pub clean_shutdown: bool,
    /// The high watermark last checkpointed (`replication-offset-checkpoint`).
    pub high_watermark: i64,
    /// Where the dirty part of a compacted log starts
    /// (`cleaner-offset-checkpoint`); 0 when never cleaned.
    pub cleaner_offset: i64,
}

/// What loading found and repaired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    pub segments: usize,
    pub recovered_segments: usize,
    pub truncated_bytes: u64,
    pub deleted_segments: usize,
    pub bytes_scanned: u64,
}

/// The result of an append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    pub log_end_offset: i64,
    pub record_count: u64,
    /// Set when the topic stamps LogAppendTime.
    pub log_append_time: Option<i64>,
    /// An idempotent producer's retry of a batch already written: nothing
    /// was appended, the offsets are the original's.
    pub duplicate: bool,
    /// The flush policy (`flush.messages`) asks for a flush that
    /// `append_deferring_flush` left to its caller.
    pub flush_due: bool,
}

/// The result of a read: at most one region, from one segment, as Kafka does.
#[derive(Debug, Clone)]
pub struct ReadInfo {
    pub region: Option<FileRegion>,
    pub log_start_offset: i64,
    /// The log end offset when read.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // tests read it
    pub log_end_offset: i64,
}

/// The fsyncs a roll leaves to another thread, so the shard thread (and
/// every partition on it) never waits on them: the closed segments' files
/// and the partition directory. Once done, the recovery point may move to
/// `up_to` (`PartitionLog::roll_flushed`), as Kafka's asynchronous
/// `flushUptoOffsetExclusive` after a roll.
#[derive(Debug)]
pub struct RollFlush {
    pub tp: TopicPartition,
    pub dir: PathBuf,
    /// Closed segments' log files (open: a segment deleted meanwhile is
    /// still synced harmlessly) and index paths.
    pub logs: Vec<Arc<fs::File>>,
    pub indexes: Vec<PathBuf>,
    pub up_to: i64,
    /// Which log this is for: a topic deleted and created again under the
    /// same name gets a new log, which this flush says nothing about.
    pub incarnation: u64,
}

impl RollFlush {
    /// fsync everything named; blocking.
    pub fn run(&self) -> Result<(), LogError> {
        for file in &self.logs {
            file.sync_data().map_err(|e| LogError::io(&self.dir, e))?;
        }
        for path in &self.indexes {
            match fs::File::open(path).and_then(|f| f.sync_data()) {
                Ok(()) => {}
                // Deleted by retention or a cleaning meanwhile.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(path, e)),
            }
        }
        sync_dir(&self.dir)
    }
}

/// What a retention pass removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub deleted_segments: usize,
    pub deleted_bytes: u64,
    pub log_start_offset: i64,
}

#[derive(Debug)]
pub struct PartitionLog {
    tp: TopicPartition,
    dir: PathBuf,
    config: LogConfig,
    /// Sorted by base offset, never empty; the last one is active.
    segments: Vec<Segment>,
    log_start_offset: i64,
    recovery_point: i64,
    unflushed_messages: u64,
    last_flush_ms: i64,
    /// Directory entries not yet fsynced: a segment file created since the
    /// last flush (`Partition`), or the partition directory itself in its
    /// log dir (`LogDir`, a new log). Kafka's `LocalLog.flush` syncs the
    /// directory too, so a flushed record cannot vanish with its file.
    unsynced_dirs: UnsyncedDirs,
    /// Directory fsyncs done (tests check the durability promise with it).
    dir_syncs: u64,
    /// Which leader epoch began where (`leader-epoch-checkpoint`).
    leader_epochs: LeaderEpochCache,
    /// The high watermark as the partition actor last reported it, for
    /// `replication-offset-checkpoint`. Never above the log end offset.
    high_watermark: i64,
    /// Idempotent producers' epochs and sequences (`<offset>.snapshot`).
    producers: ProducerStateManager,
    /// Offsets below this were compacted by the cleaner
    /// (`cleaner-offset-checkpoint`).
    first_dirty_offset: i64,
    /// fsyncs a roll left for another thread (`take_roll_flush`).
    pending_roll_flush: Option<RollFlush>,
    /// Unique per log opened in this process (`RollFlush::incarnation`).
    incarnation: u64,
}

/// Numbers each log opened in this process.
static INCARNATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_incarnation() -> u64 {
    INCARNATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnsyncedDirs {
    None,
    Partition,
    PartitionAndLogDir,
}

impl PartitionLog {
    /// A new, empty log in `<log_dir>/<topic>-<partition>`.
    pub fn create(
        log_dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        now_ms: i64,
    ) -> Result<PartitionLog, LogError> {
        let dir = log_dir.join(tp.dir_name());
        fs::create_dir_all(&dir).map_err(|e| LogError::io(&dir, e))?;
        let segment = Segment::create(&dir, 0, &config, now_ms)?;
        let mut leader_epochs = LeaderEpochCache::load(&dir)?;
        // A directory left behind by a deleted topic of the same name.
        leader_epochs.clear()?;
        let mut producers = ProducerStateManager::new(&dir);
        producers.clear()?;
        let stale_topic_id = dir.join(partition_metadata::PARTITION_METADATA_FILE);
        match fs::remove_file(&stale_topic_id) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&stale_topic_id, e)),
        }
        Ok(PartitionLog {
            tp,
            dir,
            config,
            segments: vec![segment],
            log_start_offset: 0,
            recovery_point: 0,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            unsynced_dirs: UnsyncedDirs::PartitionAndLogDir,
            dir_syncs: 0,
            leader_epochs,
            high_watermark: 0,
            producers,
            first_dirty_offset: 0,
            pending_roll_flush: None,
            incarnation: next_incarnation(),
        })
    }

    /// Open the log in `dir`, re-reading every segment from the one holding
    /// the recovery point unless the shutdown was clean.
    pub fn load(
        dir: &Path,
        tp: TopicPartition,
        config: LogConfig,
        options: LoadOptions,
        now_ms: i64,
    ) -> Result<(PartitionLog, LoadReport), LogError> {
        let bases = list_segments(dir)?;
        let mut report = LoadReport::default();
        let recover_from = if options.clean_shutdown {
            bases.len()
        } else {
            bases
                .partition_point(|&base| base <= options.recovery_point)
                .saturating_sub(1)
        };
        let mut segments: Vec<Segment> = Vec::with_capacity(bases.len());
        for (i, &base) in bases.iter().enumerate() {
            let previous_end = segments.last().map(Segment::next_offset);
            if previous_end.is_some_and(|end| base < end) {
                log::warn!(
                    "{tp}: segment {base} overlaps the previous one ending at {previous_end:?}; deleting it and all later segments"
                );
                delete_segment_files(dir, &bases[i..], &mut report)?;
                break;
            }
            if i < recover_from {
                segments.push(Segment::open(dir, base, &config, now_ms)?);
                continue;
            }
            let (segment, outcome) = Segment::recover(dir, base, &config, now_ms)?;
            report.recovered_segments += 1;
            report.bytes_scanned += outcome.valid_bytes;
            segments.push(segment);
            if let Some(reason) = cut_short(&outcome) {
                report.truncated_bytes += outcome.truncated_bytes;
                log::warn!(
                    "{tp}: recovery cut segment {base} at byte {} ({} bytes dropped): {reason}",
                    outcome.valid_bytes,
                    outcome.truncated_bytes
                );
                delete_segment_files(dir, &bases[i + 1..], &mut report)?;
                break;
            }
        }
        if segments.is_empty() {
            let base = options.log_start_offset.max(0);
            segments.push(Segment::create(dir, base, &config, now_ms)?);
        }
        let mut log = PartitionLog {
            tp,
            dir: dir.to_path_buf(),
            config,
            segments,
            log_start_offset: 0,
            recovery_point: 0,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            // Loading may have created a segment (an empty log).
            unsynced_dirs: UnsyncedDirs::Partition,
            dir_syncs: 0,
            leader_epochs: LeaderEpochCache::load(dir)?,
            high_watermark: 0,
            producers: ProducerStateManager::new(dir),
            first_dirty_offset: 0,
            pending_roll_flush: None,
            incarnation: next_incarnation(),
        };
        let leo = log.log_end_offset();
        log.log_start_offset = options
            .log_start_offset
            .max(log.segments[0].base_offset())
            .min(leo);
        // Recovery may have cut records whose epochs the cache still names.
        log.leader_epochs.truncate_from_end(leo)?;
        log.leader_epochs
            .truncate_from_start(log.log_start_offset)?;
        log.recovery_point = leo;
        log.high_watermark = options.high_watermark.clamp(log.log_start_offset, leo);
        log.first_dirty_offset = options.cleaner_offset.clamp(log.log_start_offset, leo);
        log.rebuild_producer_state()?;
        // Sealed segments' indexes are read back when a fetch needs them.
        let sealed = log.segments.len() - 1;
        for segment in &mut log.segments[..sealed] {
            segment.evict_indexes();
        }
        report.segments = log.segments.len();
        if report.recovered_segments > 0 {
            log.flush(now_ms)?;
            let level = if report.bytes_scanned > 0 || report.truncated_bytes > 0 {
                log::Level::Info
            } else {
                log::Level::Debug
            };
            log::log!(
                level,
                "{}: recovered {} segment(s), {} bytes scanned, {} bytes truncated, log end offset {leo}",
                log.tp,
                report.recovered_segments,
                report.bytes_scanned,
                report.truncated_bytes
            );
        }
        Ok((log, report))
    }

    /// Validate a producer's record set, give it offsets and append it;
    /// flush first if the flush policy says so.
    // The broker appends through `append_as_leader`; tests and benches here.
    #[cfg(any(test, feature = "internals"))]
    pub fn append(
        &mut self,
        records: impl Into<Bytes>,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        let mut info = self.append_deferring_flush(records, now_ms)?;
        if info.flush_due {
            self.flush(now_ms)?;
            info.flush_due = false;
        }
        Ok(info)
    }

    /// As `append`, but a flush the policy asks for is only reported
    /// (`flush_due`): the caller flushes once for several appends (group
    /// commit) and holds their acknowledgements until then.
    // The broker appends through `append_as_leader`; tests and benches here.
    #[cfg(any(test, feature = "internals"))]
    pub fn append_deferring_flush(
        &mut self,
        records: impl Into<Bytes>,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.append_as_leader(records, None, now_ms)
    }

    /// As `append_deferring_flush`, for a leader in `leader_epoch` (Kafka's
    /// `appendAsLeader`): the batches are stamped with the epoch in force,
    /// which the cache records if it is new. `None`: the cache's latest.
    pub fn append_as_leader(
        &mut self,
        records: impl Into<Bytes>,
        leader_epoch: Option<i32>,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        let records: Bytes = records.into();
        if let Some((before, after)) = self.config.timestamp_bounds() {
            batch::check_timestamps(&records, now_ms, before, after)?;
        }
        if self.config.cleanup_policy.compact {
            batch::check_keys(&records)?;
        }
        let records = match self.config.compression_type.codec() {
            Some(codec) => batch::recompress(records, codec)?,
            None => records,
        };
        let mut assigned = batch::assign_offsets(
            records,
            self.log_end_offset(),
            now_ms,
            self.config.message_timestamp_type,
            self.config.max_message_bytes,
        )?;
        assigned.partition_leader_epoch = leader_epoch.or(self.leader_epochs.latest_epoch());
        if let Some(epoch) = leader_epoch {
            if self
                .leader_epochs
                .latest_epoch()
                .is_none_or(|latest| epoch > latest)
            {
                self.leader_epochs.assign(epoch, self.log_end_offset())?;
            }
        }
        let producer_batches = producer_batches(&assigned);
        if !producer_batches.is_empty() {
            let history = if self.log_start_offset() == 0 {
                LogHistory::Whole
            } else {
                LogHistory::Truncated
            };
            let checked = self.producers.check(&producer_batches, history)?;
            if let ProducerCheck::Duplicate(original) = checked {
                log::debug!(
                    "{}: a retried batch of producer {} is answered with offsets {}..={}",
                    self.tp,
                    producer_batches[0].producer_id,
                    original.first_offset,
                    original.last_offset
                );
                return Ok(AppendInfo {
                    first_offset: original.first_offset,
                    last_offset: original.last_offset,
                    log_end_offset: self.log_end_offset(),
                    record_count: 0,
                    log_append_time: None,
                    duplicate: true,
                    // The original's acknowledgement waits for the same flush.
                    flush_due: original.last_offset >= self.recovery_point
                        && self.unflushed_messages >= self.config.flush_messages,
                });
            }
        }
        self.maybe_roll(assigned.bytes.len() as u64, assigned.last_offset, now_ms)?;
        let last = self.segments.len() - 1;
        self.segments[last].append(&assigned, &self.config)?;
        for batch in &producer_batches {
            self.producers.update(batch);
        }
        self.unflushed_messages += assigned.record_count;
        Ok(AppendInfo {
            first_offset: assigned.first_offset,
            last_offset: assigned.last_offset,
            log_end_offset: self.log_end_offset(),
            record_count: assigned.record_count,
            log_append_time: assigned.log_append_time,
            duplicate: false,
            flush_due: self.unflushed_messages >= self.config.flush_messages,
        })
    }

    /// Append entries that already carry offsets (a follower copying its
    /// leader). They must start at or after the log end offset.
    pub fn append_as_follower(&mut self, entries: &[u8], now_ms: i64) -> Result<i64, LogError> {
        let Some(last_offset) = last_offset_of(entries)? else {
            return Ok(self.log_end_offset());
        };
        let before = self.log_end_offset();
        self.maybe_roll(entries.len() as u64, last_offset, now_ms)?;
        let active = self.segments.len() - 1;
        self.segments[active].append_verified(entries, &self.config)?;
        // The leader's epochs come with its batches.
        let mut position = 0;
        while position < entries.len() {
            let header = batch::EntryHeader::parse(&entries[position..], position)?;
            if header.magic == 2 {
                self.leader_epochs
                    .assign(header.partition_leader_epoch, header.offset_field)?;
            }
            let entry = &entries[position..(position + header.size).min(entries.len())];
            if let Some(fields) = batch::producer_fields(entry).filter(|f| !f.control) {
                self.producers
                    .update(&ProducerBatch::new(&fields, header.offset_field));
            }
            position += header.size;
        }
        self.after_append((last_offset + 1 - before).max(0) as u64, now_ms)?;
        Ok(self.log_end_offset())
    }

    fn after_append(&mut self, records: u64, now_ms: i64) -> Result<(), LogError> {
        self.unflushed_messages += records;
        if self.unflushed_messages >= self.config.flush_messages {
            self.flush(now_ms)?;
        }
        Ok(())
    }

    fn maybe_roll(&mut self, incoming: u64, last_offset: i64, now_ms: i64) -> Result<(), LogError> {
        let active = self.active();
        let should_roll = !active.is_empty()
            && (active.size() + incoming > self.config.segment_bytes
                || now_ms - active.created_ms() >= self.config.segment_ms
                || active.indexes_full()
                || last_offset - active.base_offset() > MAX_RELATIVE_OFFSET);
        if should_roll {
            self.roll(now_ms)?;
        }
        Ok(())
    }

    /// Close the active segment and start a new one at the log end offset.
    /// The closed segment is flushed, so the recovery point moves past it.
    pub fn roll(&mut self, now_ms: i64) -> Result<(), LogError> {
        let base = self.log_end_offset();
        if self.active().is_empty() {
            return Ok(());
        }
        // The fsyncs go to another thread (`take_roll_flush`); the
        // recovery point moves when they are done (`roll_flushed`).
        self.active_mut().write_indexes()?;
        let (log_file, index_paths) = (self.active().file(), self.active().index_paths());
        let (tp, dir, incarnation) = (self.tp.clone(), self.dir.clone(), self.incarnation);
        let flush = self.pending_roll_flush.get_or_insert_with(|| RollFlush {
            tp,
            dir,
            logs: Vec::new(),
            indexes: Vec::new(),
            up_to: base,
            incarnation,
        });
        flush.logs.push(log_file);
        flush.indexes.extend(index_paths);
        flush.up_to = base;
        // Kafka's snapshot at each roll: a restart replays from here.
        self.producers.take_snapshot(base)?;
        let segment = Segment::create(&self.dir, base, &self.config, now_ms)?;
        self.segments.push(segment);
        self.unsynced_dirs = UnsyncedDirs::Partition;
        log::debug!("{}: rolled a new segment at offset {base}", self.tp);
        Ok(())
    }

    /// The fsyncs left by rolls since the last call, for another thread.
    pub fn take_roll_flush(&mut self) -> Option<RollFlush> {
        self.pending_roll_flush.take()
    }

    /// A `RollFlush` of this log (`incarnation`) up to `up_to` is done:
    /// the segments below it are on disk, and so the recovery point may
    /// move there. A flush of an earlier log of the same name is ignored.
    pub fn roll_flushed(&mut self, incarnation: u64, up_to: i64) {
        if incarnation != self.incarnation {
            return;
        }
        let up_to = up_to.min(self.log_end_offset());
        for segment in &mut self.segments {
            if segment.next_offset() <= up_to && segment.base_offset() < up_to {
                segment.mark_flushed();
            }
        }
        self.recovery_point = self.recovery_point.max(up_to);
    }

    /// Read from `offset` up to `max_bytes`, never past `max_offset` (the high
    /// watermark for consumers), always including the whole first batch.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: u64,
        max_offset: Option<i64>,
    ) -> Result<ReadInfo, LogError> {
        let log_end_offset = self.log_end_offset();
        let mut info = ReadInfo {
            region: None,
            log_start_offset: self.log_start_offset,
            log_end_offset,
        };
        if offset < self.log_start_offset || offset > log_end_offset {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset,
            });
        }
        let upper = max_offset.unwrap_or(log_end_offset).min(log_end_offset);
        if offset >= upper {
            return Ok(info);
        }
        let first = self.segment_index_for(offset);
        for segment in &self.segments[first..] {
            let Some((position, header)) = segment.find_entry(offset)?.found else {
                continue;
            };
            let end_position = if upper < segment.next_offset() {
                segment.position_of(upper)?
            } else {
                segment.size()
            };
            if position < end_position {
                info.region =
                    Some(segment.region(position, max_bytes, header.size as u64, end_position));
            }
            break;
        }
        Ok(info)
    }

    /// The first offset whose record timestamp is at or after `timestamp`,
    /// with that timestamp; None when every record is older.
    /// The record with the largest timestamp (the first one holding it):
    /// ListOffsets' MAX_TIMESTAMP (-3), as Kafka 3.x answers it.
    pub fn offset_of_max_timestamp(&self) -> Result<Option<(i64, i64)>, LogError> {
        let max = self
            .segments
            .iter()
            .filter(|s| s.next_offset() > self.log_start_offset)
            .map(|s| s.max_timestamp())
            .max()
            .unwrap_or(-1);
        if max < 0 {
            return Ok(None);
        }
        self.offset_for_timestamp(max)
    }

    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>, LogError> {
        for segment in &self.segments {
            if segment.max_timestamp() < timestamp || segment.next_offset() <= self.log_start_offset
            {
                continue;
            }
            if let Some(found) =
                segment.find_offset_by_timestamp(timestamp, self.log_start_offset)?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Remove every record at `offset` or later (a follower diverging from
    /// its leader). Whole batches go: the end may land below `offset`.
    pub fn truncate_to(&mut self, offset: i64, now_ms: i64) -> Result<(), LogError> {
        if offset >= self.log_end_offset() {
            // No record goes, but an epoch this replica assigned at its log
            // end as leader, without appending, must (Kafka's `truncateTo`):
            // the new leader's epochs decide from here.
            return self.leader_epochs.truncate_from_end(self.log_end_offset());
        }
        if offset <= self.segments[0].base_offset() {
            return self.truncate_fully_and_start_at(offset, now_ms);
        }
        // Whether `offset` lies in a gap compaction left (no entry holds it
        // or starts below it in the entry found): then the log must still
        // end at `offset`, as Kafka's `truncateTo` sets it, so no offset a
        // consumer has seen is given out again.
        let in_gap = {
            let segment = &self.segments[self.segment_index_for(offset)];
            let lookup = segment.find_entry(offset)?;
            match lookup.found {
                Some((_, header)) => {
                    let first = header
                        .first_offset()
                        .or(lookup.previous_last_offset.map(|last| last + 1))
                        .unwrap_or(segment.base_offset());
                    first > offset
                }
                None => true,
            }
        };
        // A segment starting at `offset` stays, emptied: its base keeps the
        // log end offset where it was cut.
        while self.segments.len() > 1 && self.active().base_offset() > offset {
            if let Some(segment) = self.segments.pop() {
                segment.delete()?;
            }
        }
        self.active_mut().truncate_to(offset)?;
        if in_gap && self.log_end_offset() < offset {
            let segment = Segment::create(&self.dir, offset, &self.config, now_ms)?;
            self.segments.push(segment);
            self.unsynced_dirs = UnsyncedDirs::Partition;
        }
        let leo = self.log_end_offset();
        self.log_start_offset = self.log_start_offset.min(leo);
        self.recovery_point = self.recovery_point.min(leo);
        self.high_watermark = self.high_watermark.min(leo);
        self.leader_epochs.truncate_from_end(leo)?;
        self.rebuild_producer_state()?;
        log::info!("{}: truncated to offset {leo}", self.tp);
        Ok(())
    }

    /// Replace the whole log by an empty one starting at `offset` (a
    /// follower whose leader no longer has what it would fetch next).
    pub fn truncate_fully_and_start_at(
        &mut self,
        offset: i64,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let doomed: Vec<Segment> = self.segments.drain(..).collect();
        for segment in doomed {
            segment.delete()?;
        }
        let base = offset.max(0);
        self.segments
            .push(Segment::create(&self.dir, base, &self.config, now_ms)?);
        self.log_start_offset = base;
        self.recovery_point = base;
        self.high_watermark = base;
        self.unsynced_dirs = UnsyncedDirs::Partition;
        self.leader_epochs.clear()?;
        self.producers.clear()?;
        log::info!("{}: emptied; the log starts again at {base}", self.tp);
        Ok(())
    }

    /// This broker leads from now on in `epoch`: its appends carry it.
    pub fn assign_leader_epoch(&mut self, epoch: i32) -> Result<(), LogError> {
        let leo = self.log_end_offset();
        self.leader_epochs.assign(epoch, leo)
    }

    /// OffsetForLeaderEpoch: the largest epoch at most `epoch` known here
    /// and where it ends.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> EpochEndOffset {
        self.leader_epochs
            .end_offset_for(epoch, self.log_end_offset())
    }

    pub fn latest_leader_epoch(&self) -> Option<i32> {
        self.leader_epochs.latest_epoch()
    }

    /// Raise the log start offset to `offset` (DeleteRecords) and drop the
    /// segments wholly below it. Returns the new log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, LogError> {
        let leo = self.log_end_offset();
        if offset < 0 || offset > leo {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: leo,
            });
        }
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            self.delete_segments_while(|log, i| log.segments[i + 1].base_offset() <= offset)?;
            self.leader_epochs
                .truncate_from_start(self.log_start_offset)?;
        }
        Ok(self.log_start_offset)
    }

    /// Drop from memory the indexes of sealed segments unused since the
    /// previous call; how many were dropped. The active segment's stay.
    pub fn evict_idle_indexes(&mut self) -> usize {
        let sealed = self.segments.len() - 1;
        self.segments[..sealed]
            .iter_mut()
            .map(Segment::evict_idle_indexes)
            .sum()
    }

    #[cfg(any(test, feature = "internals"))]
    /// How many segment indexes (two per segment) are in memory now.
    pub fn indexes_in_memory(&self) -> usize {
        self.segments.iter().map(Segment::indexes_in_memory).sum()
    }

    /// Delete the segments that retention (`retention.ms`, `retention.bytes`,
    /// the log start offset) no longer needs. The active one always stays.
    pub fn enforce_retention(&mut self, now_ms: i64) -> Result<RetentionReport, LogError> {
        let mut report = RetentionReport::default();
        let start = self.log_start_offset;
        self.delete_segments_while_into(&mut report, |log, i| {
            log.segments[i + 1].base_offset() <= start
        })?;
        let delete = self.config.cleanup_policy.delete;
        if delete && self.config.retention_ms >= 0 {
            let cutoff = now_ms - self.config.retention_ms;
            self.delete_segments_while_into(&mut report, |log, i| {
                largest_timestamp(&log.segments[i]) < cutoff
            })?;
        }
        if delete && self.config.retention_bytes >= 0 {
            let mut excess = self.size_in_bytes() as i64 - self.config.retention_bytes;
            self.delete_segments_while_into(&mut report, |log, i| {
                let size = log.segments[i].size() as i64;
                let delete = excess - size >= 0;
                if delete {
                    excess -= size;
                }
                delete
            })?;
        }
        report.log_start_offset = self.log_start_offset;
        if report.deleted_segments > 0 {
            self.leader_epochs
                .truncate_from_start(self.log_start_offset)?;
        }
        let expired = self
            .producers
            .remove_expired(now_ms, self.config.producer_id_expiration_ms);
        if expired > 0 {
            log::info!(
                "{}: forgot {expired} idempotent producer(s) silent for producer.id.expiration.ms",
                self.tp
            );
        }
        Ok(report)
    }

    /// How much of this compacted log is dirty, over the closed segments
    /// the cleaner may take now; None when it has nothing to clean.
    pub fn cleanable(&self, now_ms: i64) -> Option<Cleanable> {
        if !self.config.cleanup_policy.compact {
            return None;
        }
        let segments = self.cleanable_segments(now_ms);
        let first_dirty = self.first_dirty_offset.max(self.log_start_offset);
        let mut clean_bytes = 0u64;
        let mut dirty_bytes = 0u64;
        let mut first_dirty_timestamp = None;
        for (i, segment) in segments.iter().enumerate() {
            // Closed segments always have a successor.
            let end = self.segments[i + 1].base_offset();
            if end <= first_dirty {
                clean_bytes += segment.size();
            } else {
                dirty_bytes += segment.size();
                first_dirty_timestamp.get_or_insert_with(|| largest_timestamp(segment));
            }
        }
        if dirty_bytes == 0 {
            return None;
        }
        let dirty_ratio = dirty_bytes as f64 / (clean_bytes + dirty_bytes) as f64;
        let must_clean = first_dirty_timestamp.is_some_and(|timestamp| {
            self.config.max_compaction_lag_ms < i64::MAX
                && timestamp <= now_ms.saturating_sub(self.config.max_compaction_lag_ms)
        });
        (dirty_ratio >= self.config.min_cleanable_dirty_ratio || must_clean).then_some(Cleanable {
            dirty_ratio,
            dirty_bytes,
            must_clean,
        })
    }

    /// The closed segments the cleaner may take: from the start, up to the
    /// first holding records above the high watermark or younger than
    /// `min.compaction.lag.ms`.
    fn cleanable_segments(&self, now_ms: i64) -> &[Segment] {
        let closed = &self.segments[..self.segments.len() - 1];
        let lag_cutoff = now_ms.saturating_sub(self.config.min_compaction_lag_ms);
        let count = closed
            .iter()
            .take_while(|segment| {
                segment.next_offset() <= self.high_watermark
                    && (self.config.min_compaction_lag_ms == 0
                        || largest_timestamp(segment) <= lag_cutoff)
            })
            .count();
        &closed[..count]
    }

    /// What the cleaner needs to clean this log off its owner's thread.
    pub fn clean_task(&self, now_ms: i64) -> Option<CleanTask> {
        self.cleanable(now_ms)?;
        Some(CleanTask {
            tp: self.tp.clone(),
            dir: self.dir.clone(),
            config: self.config.clone(),
            first_dirty_offset: self.first_dirty_offset.max(self.log_start_offset),
            segments: self
                .cleanable_segments(now_ms)
                .iter()
                .enumerate()
                .map(|(i, segment)| SourceSegment {
                    base_offset: segment.base_offset(),
                    // Closed segments always have a successor.
                    end_offset: self.segments[i + 1].base_offset(),
                    size: segment.size(),
                    largest_timestamp: largest_timestamp(segment),
                    file: segment.file(),
                })
                .collect(),
            producer_last_offsets: self.producers.last_offsets(),
            now_ms,
        })
    }

    /// Swap in what the cleaner wrote, each cleaned segment only if its
    /// sources are still exactly those it read (retention, truncation or
    /// DeleteRecords may have moved on meanwhile; then it is discarded).
    /// Answers how many segments were swapped in.
    ///
    /// Crash safety, as Kafka's: the `.cleaned` files are renamed `.swap`
    /// (the commit point, after a directory fsync), the sources deleted,
    /// then the `.swap` files renamed into place, log last. A crash before
    /// the commit leaves the old segments (the `.cleaned` files are
    /// removed at load); after it, the load completes the swap.
    pub fn swap_cleaned(&mut self, outcome: &CleanOutcome, now_ms: i64) -> Result<usize, LogError> {
        let mut swapped = 0;
        for cleaned in &outcome.cleaned {
            let sources = cleaned.sources.len();
            let first = self
                .segments
                .iter()
                .position(|s| s.base_offset() == cleaned.base_offset);
            let unchanged = first.is_some_and(|first| {
                first + sources < self.segments.len()
                    && self.segments[first..first + sources]
                        .iter()
                        .zip(&cleaned.sources)
                        .all(|(segment, &(base, size))| {
                            segment.base_offset() == base && segment.size() == size
                        })
            });
            match first {
                Some(first) if unchanged => {
                    self.swap_in(first, sources, cleaned.base_offset, now_ms)?;
                    swapped += 1;
                }
                _ => {
                    log::info!(
                        "{}: discarding cleaned segment {}: its sources changed while it was cleaned",
                        self.tp,
                        cleaned.base_offset
                    );
                    discard_cleaned(&self.dir, cleaned.base_offset)?;
                }
            }
        }
        if swapped == outcome.cleaned.len() {
            self.first_dirty_offset = self.first_dirty_offset.max(outcome.first_dirty_offset);
        }
        Ok(swapped)
    }

    fn swap_in(
        &mut self,
        first: usize,
        count: usize,
        base: i64,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let rename = |from: &str, to: &str| -> Result<(), LogError> {
            for extension in SEGMENT_EXTENSIONS {
                let source = segment_file(&self.dir, base, &format!("{extension}{from}"));
                let target = segment_file(&self.dir, base, &format!("{extension}{to}"));
                fs::rename(&source, &target).map_err(|e| LogError::io(&source, e))?;
            }
            sync_dir(&self.dir)
        };
        rename(&format!(".{CLEANED_SUFFIX}"), &format!(".{SWAP_SUFFIX}"))?;
        fail::fail_point!(
            "cleaner.swap.committed",
            |_| crate::crash_for_test()
        );
        let sources: Vec<Segment> = self.segments.drain(first..first + count).collect();
        for source in sources {
            source.delete()?;
        }
        fail::fail_point!("cleaner.swap.sources_deleted", |_| {
            crate::crash_for_test()
        });
        rename(&format!(".{SWAP_SUFFIX}"), "")?;
        let segment = Segment::open(&self.dir, base, &self.config, now_ms)?;
        self.segments.insert(first, segment);
        fail::fail_point!("cleaner.swap.done", |_| crate::crash_for_test());
        Ok(())
    }

    fn delete_segments_while(
        &mut self,
        predicate: impl FnMut(&PartitionLog, usize) -> bool,
    ) -> Result<RetentionReport, LogError> {
        let mut report = RetentionReport::default();
        self.delete_segments_while_into(&mut report, predicate)?;
        Ok(report)
    }

    /// Delete leading non-active segments while `predicate(self, index)`
    /// holds. The list is replaced first, then files are unlinked: regions
    /// handed out earlier keep their open files and stay readable.
    fn delete_segments_while_into(
        &mut self,
        report: &mut RetentionReport,
        mut predicate: impl FnMut(&PartitionLog, usize) -> bool,
    ) -> Result<(), LogError> {
        let mut count = 0;
        while count + 1 < self.segments.len() && predicate(self, count) {
            count += 1;
        }
        if count == 0 {
            return Ok(());
        }
        let doomed: Vec<Segment> = self.segments.drain(..count).collect();
        self.log_start_offset = self.log_start_offset.max(self.segments[0].base_offset());
        self.producers
            .delete_snapshots_before(self.segments[0].base_offset())?;
        for segment in doomed {
            report.deleted_segments += 1;
            report.deleted_bytes += segment.size();
            log::info!(
                "{}: deleting segment {} ({} bytes); log start offset is now {}",
                self.tp,
                segment.base_offset(),
                segment.size(),
                self.log_start_offset
            );
            segment.delete()?;
        }
        Ok(())
    }

    /// fsync every segment with unwritten data; the recovery point becomes
    /// the log end offset.
    pub fn flush(&mut self, now_ms: i64) -> Result<(), LogError> {
        for segment in self.segments.iter_mut().filter(|s| s.is_dirty()) {
            segment.flush()?;
        }
        self.sync_dirs()?;
        self.recovery_point = self.log_end_offset();
        self.unflushed_messages = 0;
        self.last_flush_ms = now_ms;
        Ok(())
    }

    /// fsyncs the directories holding entries created since the last
    /// flush: the partition directory, and for a new log its log dir.
    fn sync_dirs(&mut self) -> Result<(), LogError> {
        if self.unsynced_dirs == UnsyncedDirs::None {
            return Ok(());
        }
        sync_dir(&self.dir)?;
        self.dir_syncs += 1;
        if self.unsynced_dirs == UnsyncedDirs::PartitionAndLogDir {
            if let Some(log_dir) = self.dir.parent() {
                sync_dir(log_dir)?;
                self.dir_syncs += 1;
            }
        }
        self.unsynced_dirs = UnsyncedDirs::None;
        Ok(())
    }

    #[cfg(any(test, feature = "internals"))]
    /// How many directory fsyncs this log has done.
    pub fn directory_syncs(&self) -> u64 {
        self.dir_syncs
    }

    /// Flush when `flush.ms` has passed since the last flush.
    pub fn maybe_flush(&mut self, now_ms: i64) -> Result<bool, LogError> {
        let due = self.unflushed_messages > 0
            && now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms;
        if due {
            self.flush(now_ms)?;
        }
        Ok(due)
    }

    /// Flush everything; the log can be loaded again without recovery,
    /// and its producer state without replay.
    pub fn close(mut self, now_ms: i64) -> Result<(), LogError> {
        self.flush(now_ms)?;
        self.producers.take_snapshot(self.log_end_offset())
    }

    /// Rebuild the producer state for the log as it now ends: the newest
    /// snapshot at or below the log end offset, then every batch after it.
    /// Without a snapshot, as Kafka does, only the last two segments are
    /// replayed (a log written before snapshots existed).
    fn rebuild_producer_state(&mut self) -> Result<(), LogError> {
        let log_end_offset = self.log_end_offset();
        let from = match self.producers.truncate_and_load(log_end_offset)? {
            Some(offset) => offset,
            None => self.segments[self.segments.len().saturating_sub(2)].base_offset(),
        }
        .max(self.log_start_offset);
        let mut offset = from;
        let mut replayed = 0u64;
        while offset < log_end_offset {
            let Some(region) = self.read(offset, PRODUCER_REPLAY_READ_BYTES, None)?.region else {
                break;
            };
            let bytes = region
                .read_to_vec()
                .map_err(|e| LogError::io(&self.dir, e))?;
            let mut position = 0;
            let mut next = offset;
            while bytes.len() - position >= batch::LOG_OVERHEAD {
                let header = batch::EntryHeader::parse(&bytes[position..], position)?;
                let Some(entry) = bytes.get(position..position + header.size) else {
                    break;
                };
                if let Some(fields) = batch::producer_fields(entry).filter(|f| !f.control) {
                    self.producers
                        .update(&ProducerBatch::new(&fields, header.offset_field));
                    replayed += 1;
                }
                next = header.last_offset + 1;
                position += header.size;
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
        if replayed > 0 {
            log::info!(
                "{}: producer state rebuilt from offset {from}: {replayed} batch(es) replayed, {} producer(s)",
                self.tp,
                self.producers.producer_count()
            );
        }
        Ok(())
    }

    #[cfg(any(test, feature = "internals"))]
    /// An idempotent producer's epoch and last sequence here.
    pub fn producer_last_sequence(&self, producer_id: i64) -> Option<(i16, i32)> {
        self.producers.last_sequence_of(producer_id)
    }

    /// Remove the whole partition directory (topic deletion).
    pub fn delete(self) -> Result<(), LogError> {
        fs::remove_dir_all(&self.dir).map_err(|e| LogError::io(&self.dir, e))
    }

    pub fn update_config(&mut self, config: LogConfig) {
        self.config = config;
    }

    /// Unique per log opened in this process.
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    pub fn tp(&self) -> &TopicPartition {
        &self.tp
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// KIP-516: ties the log to `topic_id`, writing `partition.metadata` if
    /// the log has none yet. A log that names another id belongs to an
    /// earlier topic of the same name: INCONSISTENT_TOPIC_ID, and the file
    /// is left as it is.
    pub fn assign_topic_id(&mut self, topic_id: &[u8; 16]) -> Result<(), LogError> {
        match partition_metadata::read(&self.dir)? {
            Some(found) if found == *topic_id => Ok(()),
            Some(found) => Err(LogError::InconsistentTopicId {
                path: self.dir.clone(),
                expected: partition_metadata::topic_id_text(topic_id),
                found: partition_metadata::topic_id_text(&found),
            }),
            None => partition_metadata::write(&self.dir, topic_id),
        }
    }
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }
    /// The first dirty offset of a compacted log, for
    /// `cleaner-offset-checkpoint`; None for logs that are not compacted.
    pub fn cleaner_checkpoint(&self) -> Option<i64> {
        self.config
            .cleanup_policy
            .compact
            .then_some(self.first_dirty_offset.max(self.log_start_offset))
    }

    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }
    /// Note the partition's high watermark for the next checkpoint.
    pub fn set_high_watermark(&mut self, high_watermark: i64) {
        self.high_watermark = high_watermark.clamp(0, self.log_end_offset());
    }
    /// Kafka's NumLogSegments.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
    #[cfg(any(test, feature = "internals"))]
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.iter().map(Segment::base_offset).collect()
    }
    pub fn size_in_bytes(&self) -> u64 {
        self.segments.iter().map(Segment::size).sum()
    }

    fn active(&self) -> &Segment {
        // The list is never empty: load and truncation always leave one.
        &self.segments[self.segments.len() - 1]
    }

    fn active_mut(&mut self) -> &mut Segment {
        let last = self.segments.len() - 1;
        &mut self.segments[last]
    }

    fn segment_index_for(&self, offset: i64) -> usize {
        self.segments
            .partition_point(|s| s.base_offset() <= offset)
            .saturating_sub(1)
    }
}

fn cut_short(outcome: &SegmentRecovery) -> Option<&str> {
    outcome.stopped_at.as_deref()
}

/// The largest timestamp in a segment; its file's mtime when its records
/// carry none (magic 0), as Kafka does.
fn largest_timestamp(segment: &Segment) -> i64 {
    if segment.max_timestamp() >= 0 {
        return segment.max_timestamp();
    }
    fs::metadata(segment.log_path())
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(i64::MAX, |d| d.as_millis() as i64)
}

/// The idempotent producers' batches of an append, with their offsets.
fn producer_batches(assigned: &batch::AssignedRecords) -> Vec<ProducerBatch> {
    assigned
        .entries
        .iter()
        .filter(|e| e.magic == 2)
        .filter_map(|e| {
            let entry = assigned.bytes.get(e.position..e.position + e.size)?;
            let fields = batch::producer_fields(entry).filter(|f| !f.control)?;
            Some(ProducerBatch::new(&fields, e.offset_field))
        })
        .collect()
}

fn last_offset_of(entries: &[u8]) -> Result<Option<i64>, LogError> {
    let mut position = 0;
    let mut last = None;
    while position < entries.len() {
        let header = batch::validate_entry(&entries[position..], position)?;
        last = Some(header.last_offset);
        position += header.size;
    }
    Ok(last)
}

/// Base offsets of the segments in `dir`, sorted. Leftovers of interrupted
/// operations (`.tmp`, `.deleted`, `.cleaned`) are removed, and a cleaning
/// interrupted after it was committed (`.log.swap`) is completed.
/// Retention for a log that is offline (its disk failed or filled up): it
/// deletes whole closed segments from file metadata alone, without loading
/// the log, so that a disk this log filled can free itself and the log
/// come back. A segment's age is its `.log` file's modification time
/// (Kafka's fallback for a segment without timestamps); sizes are file
/// sizes. Raises `options.log_start_offset` past what it deleted. It never
/// writes a byte.
pub fn enforce_retention_offline(
    dir: &Path,
    config: &LogConfig,
    options: &mut LoadOptions,
    now_ms: i64,
) -> Result<RetentionReport, LogError> {
    let mut report = RetentionReport {
        log_start_offset: options.log_start_offset,
        ..RetentionReport::default()
    };
    if !config.cleanup_policy.delete {
        return Ok(report);
    }
    // (base offset, bytes, modified at, ms)
    let mut segments: Vec<(i64, u64, i64)> = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        let name = entry.file_name();
        let Some(base) = name
            .to_string_lossy()
            .strip_suffix(".log")
            .and_then(parse_base)
        else {
            continue;
        };
        let path = entry.path();
        let metadata = entry.metadata().map_err(|e| LogError::io(&path, e))?;
        let modified = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(i64::MAX, |d| d.as_millis() as i64);
        segments.push((base, metadata.len(), modified));
    }
    segments.sort_unstable();
    let total: i64 = segments.iter().map(|&(_, size, _)| size as i64).sum();
    let mut excess = (config.retention_bytes >= 0).then(|| total - config.retention_bytes);
    let cutoff = (config.retention_ms >= 0).then(|| now_ms - config.retention_ms);
    // The last segment is the active one: it always stays.
    for pair in segments.windows(2) {
        let ((base, size, modified), next_base) = (pair[0], pair[1].0);
        let below_start = next_base <= options.log_start_offset;
        let expired = cutoff.is_some_and(|cutoff| modified < cutoff);
        let oversized = excess.is_some_and(|excess| excess - size as i64 >= 0);
        if !(below_start || expired || oversized) {
            break;
        }
        // Indexes first: a `.log` left without them is re-indexed on load.
        for extension in SEGMENT_EXTENSIONS {
            let path = segment_file(dir, base, extension);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&path, e)),
            }
        }
        if let Some(excess) = excess.as_mut() {
            *excess -= size as i64;
        }
        report.deleted_segments += 1;
        report.deleted_bytes += size;
        options.log_start_offset = options.log_start_offset.max(next_base);
    }
    report.log_start_offset = options.log_start_offset;
    Ok(report)
}

fn list_segments(dir: &Path) -> Result<Vec<i64>, LogError> {
    let mut bases = Vec::new();
    let mut swaps = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| LogError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if let Some(base) = name.strip_suffix(".log.swap").and_then(parse_base) {
            swaps.push(base);
            continue;
        }
        if [".tmp", ".deleted", ".cleaned", ".swap"]
            .iter()
            .any(|suffix| name.ends_with(suffix))
        {
            let path = entry.path();
            fs::remove_file(&path).map_err(|e| LogError::io(&path, e))?;
            continue;
        }
        if let Some(base) = name.strip_suffix(".log").and_then(parse_base) {
            bases.push(base);
        }
    }
    bases.sort_unstable();
    swaps.sort_unstable();
    for base in swaps {
        complete_swap(dir, base, &mut bases)?;
    }
    Ok(bases)
}

/// Remove a cleaned segment that will not be swapped in.
fn discard_cleaned(dir: &Path, base: i64) -> Result<(), LogError> {
    for extension in SEGMENT_EXTENSIONS {
        let path = segment_file(dir, base, &format!("{extension}.{CLEANED_SUFFIX}"));
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io(&path, e)),
        }
    }
    Ok(())
}

fn parse_base(stem: &str) -> Option<i64> {
    (stem.len() == 20).then(|| stem.parse().ok()).flatten()
}

/// A `.log.swap` is a cleaned segment, fsynced and committed to replace the
/// segments from its base through its last offset: delete what is left of
/// those, then rename it into place (its indexes are rebuilt on open).
fn complete_swap(dir: &Path, base: i64, bases: &mut Vec<i64>) -> Result<(), LogError> {
    let swap = segment_file(dir, base, "log.swap");
    let last = super::segment::last_offset_in_file(&swap)?.unwrap_or(base);
    let replaced: Vec<i64> = bases
        .iter()
        .copied()
        .filter(|&b| b >= base && b <= last)
        .chain(std::iter::once(base))
        .collect();
    let mut report = LoadReport::default();
    delete_segment_files(dir, &replaced, &mut report)?;
    fs::rename(&swap, segment_file(dir, base, "log")).map_err(|e| LogError::io(&swap, e))?;
    sync_dir(dir)?;
    bases.retain(|b| !replaced.contains(b));
    bases.push(base);
    bases.sort_unstable();
    log::warn!(
        "{}: completed an interrupted log cleaning: segment {base} replaces {} segment(s)",
        dir.display(),
        replaced.len().saturating_sub(1).max(1)
    );
    Ok(())
}

fn delete_segment_files(
    dir: &Path,
    bases: &[i64],
    report: &mut LoadReport,
) -> Result<(), LogError> {
    for &base in bases {
        for extension in ["log", "index", "timeindex"] {
            let path = dir.join(format!("{base:020}.{extension}"));
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&path, e)),
            }
        }
        report.deleted_segments += 1;
    }
    Ok(())
}

fn sync_dir(path: &Path) -> Result<(), LogError> {
    fs::File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::config::TimestampType;
    use crate::storage::error::ProducerStateError;
    use crate::storage::testing::{batch_v2, batch_v2_at, batch_v2_idempotent};
    use bytes::BytesMut;
    use kafka_protocol::records::Compression;

    fn tp() -> TopicPartition {
        TopicPartition::new("t", 0)
    }

    fn append(log: &mut PartitionLog, batch: &[u8], now_ms: i64) -> AppendInfo {
        log.append(BytesMut::from(batch), now_ms).unwrap()
    }

    /// A leader's appends carry the leader epoch in force (Kafka's
    /// `appendAsLeader(records, leaderEpoch)`), recorded in the cache if
    /// new, not whatever epoch the cache last saw; a truncation at the log
    /// end drops an epoch assigned there without a record (Kafka's
    /// `truncateTo` beyond the end).
    #[test]
    fn leader_appends_carry_the_epoch_in_force_and_a_cut_at_the_end_drops_empty_epochs() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::create(dir.path(), tp(), LogConfig::default(), 0).unwrap();
        log.assign_leader_epoch(1).unwrap();
        log.append_as_leader(batch_v2(3, 10, Compression::None), Some(4), 1)
            .unwrap();
        assert_eq!(log.latest_leader_epoch(), Some(4));
        assert_eq!(log.end_offset_for_epoch(1), EpochEndOffset::new(1, 0));
        assert_eq!(log.end_offset_for_epoch(4), EpochEndOffset::new(4, 3));
        let segment =
            std::fs::read(dir.path().join("t-0").join("00000000000000000000.log")).unwrap();
        let header = batch::EntryHeader::parse(&segment, 0).unwrap();
        assert_eq!(
            header.partition_leader_epoch, 4,
            "stamped with the epoch in force"
        );
        // Leader again in epoch 6 at the end, then a follower cut at the end.
        log.assign_leader_epoch(6).unwrap();
        assert_eq!(log.latest_leader_epoch(), Some(6));
        log.truncate_to(3, 2).unwrap();
        assert_eq!(log.latest_leader_epoch(), Some(4));
        assert_eq!(log.log_end_offset(), 3);
    }

    /// An idempotent producer's retry is answered with the original
    /// offsets and not written; a gap is refused; the state survives a
    /// crash (replayed from the log), a clean close (a snapshot at the log
    /// end, nothing replayed) and a truncation.
    #[test]
    fn idempotent_appends_are_deduplicated_and_survive_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::create(dir.path(), tp(), LogConfig::default(), 0).unwrap();
        let partition_dir = dir.path().join("t-0");
        let first = log.append(batch_v2_idempotent(3, 42, 0, 0), 1).unwrap();
        assert_eq!((first.first_offset, first.last_offset), (0, 2));
        append(&mut log, &batch_v2(2, 10, Compression::None), 1);
        let retry = log.append(batch_v2_idempotent(3, 42, 0, 0), 1).unwrap();
        assert!(retry.duplicate);
        assert_eq!((retry.first_offset, retry.last_offset), (0, 2));
        assert_eq!(log.log_end_offset(), 5);
        let gap = log.append(batch_v2_idempotent(1, 42, 0, 5), 1);
        assert!(
            matches!(
                gap,
                Err(LogError::Producer(
                    ProducerStateError::OutOfOrderSequence { .. }
                ))
            ),
            "{gap:?}"
        );
        let next = log.append(batch_v2_idempotent(2, 42, 0, 3), 1).unwrap();
        assert_eq!((next.first_offset, next.last_offset), (5, 6));
        let fenced = log.append(batch_v2_idempotent(1, 42, -1, 0), 1);
        assert!(fenced.is_err(), "{fenced:?}");

        // A crash: no snapshot, the state comes back from the log.
        drop(log);
        let crashed = LoadOptions::default();
        let (mut log, _) =
            PartitionLog::load(&partition_dir, tp(), LogConfig::default(), crashed, 2).unwrap();
        assert_eq!(log.producer_last_sequence(42), Some((0, 4)));
        let retry = log.append(batch_v2_idempotent(2, 42, 0, 3), 2).unwrap();
        assert!(retry.duplicate);
        assert_eq!(retry.first_offset, 5);

        // A clean close leaves a snapshot at the log end.
        log.close(3).unwrap();
        assert!(partition_dir
            .join("00000000000000000007.snapshot")
            .is_file());
        let clean = LoadOptions {
            recovery_point: 7,
            clean_shutdown: true,
            ..crashed
        };
        let (mut log, _) =
            PartitionLog::load(&partition_dir, tp(), LogConfig::default(), clean, 4).unwrap();
        assert_eq!(log.producer_last_sequence(42), Some((0, 4)));

        // A truncation takes the state back with the log.
        log.truncate_to(5, 5).unwrap();
        assert_eq!(log.producer_last_sequence(42), Some((0, 2)));
        assert!(!partition_dir.join("00000000000000000007.snapshot").exists());
        let again = log.append(batch_v2_idempotent(2, 42, 0, 3), 5).unwrap();
        assert!(!again.duplicate);
        assert_eq!(again.first_offset, 5);
    }

    /// Each roll leaves a producer snapshot at the new segment's base
    /// offset; deleting segments deletes the snapshots below the first one
    /// left.
    #[test]
    fn producer_snapshots_follow_rolls_and_retention() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::create(dir.path(), tp(), LogConfig::default(), 0).unwrap();
        log.append(batch_v2_idempotent(2, 9, 0, 0), 1).unwrap();
        log.roll(1).unwrap();
        log.append(batch_v2_idempotent(2, 9, 0, 2), 1).unwrap();
        log.roll(1).unwrap();
        append(&mut log, &batch_v2(1, 10, Compression::None), 1);
        let snapshots = || {
            let mut names: Vec<String> = std::fs::read_dir(dir.path().join("t-0"))
                .unwrap()
                .filter_map(|e| e.unwrap().file_name().into_string().ok())
                .filter(|n| n.ends_with(".snapshot"))
                .collect();
            names.sort();
            names
        };
        assert_eq!(
            snapshots(),
            [
                "00000000000000000002.snapshot",
                "00000000000000000004.snapshot"
            ]
        );
        log.delete_records_before(4).unwrap();
        log.enforce_retention(1).unwrap();
        assert_eq!(snapshots(), ["00000000000000000004.snapshot"]);
        assert_eq!(log.producer_last_sequence(9), Some((0, 3)));
    }

    /// `segment.ms` rolls a non-empty active segment once it is old enough;
    /// an empty one is never rolled.
    #[test]
    fn rolls_on_segment_age() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_ms: 1000,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        let batch = batch_v2(2, 10, Compression::None);
        append(&mut log, &batch, 10);
        append(&mut log, &batch, 999);
        assert_eq!(log.segment_count(), 1);
        append(&mut log, &batch, 1000);
        assert_eq!(log.segment_base_offsets(), vec![0, 4]);
        log.roll(5000).unwrap();
        log.roll(6000).unwrap();
        assert_eq!(
            log.segment_count(),
            3,
            "rolling an empty segment is a no-op"
        );
    }

    /// A full offset index rolls the segment, as Kafka does.
    #[test]
    fn rolls_when_the_index_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            index_interval_bytes: 1,
            segment_index_bytes: 8 * 4,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        let batch = batch_v2(1, 10, Compression::None);
        for _ in 0..12 {
            append(&mut log, &batch, 0);
        }
        assert!(log.segment_count() >= 2, "{:?}", log.segment_base_offsets());
    }

    /// `retention.bytes` deletes whole leading segments until the log fits,
    /// never the active one, and moves the log start offset.
    /// An offline log's retention works from files alone: segments whose
    /// `.log` is older than `retention.ms`, then beyond `retention.bytes`,
    /// go (never the active one); the log then loads from the raised log
    /// start offset.
    #[test]
    fn offline_retention_deletes_old_segments_from_file_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let batch = batch_v2(4, 200, Compression::None);
        let config = LogConfig {
            segment_bytes: batch.len() as u64 * 2,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config.clone(), 0).unwrap();
        for _ in 0..9 {
            append(&mut log, &batch, 0);
        }
        assert_eq!(log.segment_base_offsets(), vec![0, 8, 16, 24, 32]);
        let partition_dir = log.dir().to_path_buf();
        log.close(0).unwrap();
        let now_ms = 10_000_000_000_000;
        let aged = |base: i64, at_ms: i64| {
            let file = fs::File::options()
                .write(true)
                .open(segment_file(&partition_dir, base, "log"))
                .unwrap();
            file.set_modified(UNIX_EPOCH + std::time::Duration::from_millis(at_ms as u64))
                .unwrap();
        };
        aged(0, now_ms - 5_000);
        aged(8, now_ms - 5_000);
        for base in [16, 24, 32] {
            aged(base, now_ms - 10);
        }
        let mut options = LoadOptions::default();
        let by_time = LogConfig {
            retention_ms: 1_000,
            ..config.clone()
        };
        let report =
            enforce_retention_offline(&partition_dir, &by_time, &mut options, now_ms).unwrap();
        assert_eq!((report.deleted_segments, report.log_start_offset), (2, 16));
        assert!(!segment_file(&partition_dir, 8, "index").exists());
        let by_size = LogConfig {
            retention_bytes: 0,
            ..config.clone()
        };
        let report =
            enforce_retention_offline(&partition_dir, &by_size, &mut options, now_ms).unwrap();
        assert_eq!(report.deleted_segments, 2, "all but the active segment");
        assert_eq!(options.log_start_offset, 32);
        let (log, _) = PartitionLog::load(&partition_dir, tp(), config, options, now_ms).unwrap();
        assert_eq!(log.segment_base_offsets(), vec![32]);
        assert_eq!(log.log_start_offset(), 32);
        assert_eq!(log.log_end_offset(), 36);
    }

    #[test]
    fn retention_by_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let batch = batch_v2(4, 200, Compression::None);
        let config = LogConfig {
            segment_bytes: batch.len() as u64 * 2,
            retention_bytes: batch.len() as i64 * 3,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        for _ in 0..9 {
            append(&mut log, &batch, 0);
        }
        assert_eq!(log.segment_count(), 5);
        let report = log.enforce_retention(0).unwrap();
        assert_eq!(report.deleted_segments, 3);
        assert_eq!(log.log_start_offset(), 24);
        assert_eq!(log.segment_base_offsets(), vec![24, 32]);
        assert!(log.size_in_bytes() <= batch.len() as u64 * 3);
        assert!(matches!(
            log.read(0, 100, None),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert!(log.read(24, 100, None).unwrap().region.is_some());
    }

    /// Lookup by timestamp finds the first record at or after it, across
    /// segments and inside compressed batches.
    #[test]
    fn offset_for_timestamp() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 600,
            index_interval_bytes: 100,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        for i in 0..10 {
            append(&mut log, &batch_v2_at(5, 20, 10_000 + i * 100), 0);
        }
        assert!(log.segment_count() > 1);
        assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((0, 10_000)));
        assert_eq!(
            log.offset_for_timestamp(10_302).unwrap(),
            Some((17, 10_302))
        );
        assert_eq!(
            log.offset_for_timestamp(10_400).unwrap(),
            Some((20, 10_400))
        );
        assert_eq!(log.offset_for_timestamp(10_905).unwrap(), None);
    }

    /// A lookup by timestamp that lands on a legacy v1 compressed wrapper
    /// answers the wrapper's first offset (the previous entry's end), not
    /// its last: a consumer seeking by time must not skip its records.
    #[test]
    fn timestamp_lookup_on_a_legacy_compressed_wrapper() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = PartitionLog::create(dir.path(), tp(), LogConfig::default(), 0).unwrap();
        append(&mut log, &batch_v2_at(3, 10, 500), 0);
        let wrapper = crate::storage::testing::legacy_message_set(1, 3, Compression::Gzip);
        let info = append(&mut log, &wrapper, 0);
        assert_eq!((info.first_offset, info.last_offset), (3, 5));
        let (offset, _) = log.offset_for_timestamp(600).unwrap().unwrap();
        assert_eq!(offset, 3);
    }

    /// Directory entries are durable before records relying on them are
    /// counted flushed (Kafka's `LocalLog.flush`): a new log's first flush
    /// fsyncs its partition directory and its log dir; a flush with no new
    /// file syncs no directory; a roll syncs the directory of the segment it
    /// closes, and the next flush the one it opened.
    #[test]
    fn flushes_sync_the_directories_of_new_files() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 300,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        append(&mut log, &batch_v2(2, 10, Compression::None), 0);
        assert_eq!(log.directory_syncs(), 0, "nothing flushed yet");
        log.flush(1).unwrap();
        assert_eq!(log.directory_syncs(), 2, "partition dir and log dir");
        append(&mut log, &batch_v2(2, 10, Compression::None), 2);
        log.flush(3).unwrap();
        assert_eq!(log.directory_syncs(), 2, "no new file, no directory sync");
        // Fill the segment until it rolls: the roll itself needs no sync
        // (the active segment's entry is durable), the next flush does.
        let segments = log.segments.len();
        while log.segments.len() == segments {
            append(&mut log, &batch_v2(4, 50, Compression::None), 4);
        }
        assert_eq!(log.directory_syncs(), 2);
        log.flush(5).unwrap();
        assert_eq!(log.directory_syncs(), 3, "the new segment's entry");
    }

    /// LogAppendTime topics stamp the broker's clock into each batch.
    #[test]
    fn log_append_time() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            message_timestamp_type: TimestampType::LogAppendTime,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        let info = append(&mut log, &batch_v2(3, 10, Compression::Zstd), 123_456);
        assert_eq!(info.log_append_time, Some(123_456));
        assert_eq!(
            log.offset_for_timestamp(123_000).unwrap(),
            Some((0, 123_456))
        );
    }

    /// Truncation drops whole batches at or after the offset, across
    /// segments, and appends continue from the new end.
    #[test]
    fn truncate_then_append() {
        let dir = tempfile::tempdir().unwrap();
        let batch = batch_v2(4, 100, Compression::None);
        let config = LogConfig {
            segment_bytes: batch.len() as u64 * 2,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        for _ in 0..6 {
            append(&mut log, &batch, 0);
        }
        log.truncate_to(10, 0).unwrap();
        assert_eq!(
            log.log_end_offset(),
            8,
            "the batch holding offset 10 goes whole"
        );
        assert_eq!(log.segment_base_offsets(), vec![0, 8]);
        let info = append(&mut log, &batch, 0);
        assert_eq!(info.first_offset, 8);
        let read = log.read(8, 1, None).unwrap().region.unwrap();
        assert_eq!(read.length as usize, batch.len());
        log.truncate_to(0, 0).unwrap();
        assert_eq!(log.log_end_offset(), 0);
        assert_eq!(append(&mut log, &batch, 0).first_offset, 0);
    }

    /// A read cut by `max_bytes` ends on a batch boundary the index knows,
    /// so no partial batch is sent only to be fetched again.
    #[test]
    fn reads_end_on_batch_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let batch = batch_v2(4, 100, Compression::None);
        let config = LogConfig {
            index_interval_bytes: 1,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config, 0).unwrap();
        for _ in 0..10 {
            append(&mut log, &batch, 0);
        }
        let size = batch.len() as u64;
        let region = log.read(0, size * 5 / 2, None).unwrap().region.unwrap();
        assert_eq!(region.length, size * 2);
        let region = log.read(4, size / 2, None).unwrap().region.unwrap();
        assert_eq!(region.length, size, "the whole first batch, nothing more");
        let region = log.read(0, size * 100, None).unwrap().region.unwrap();
        assert_eq!(region.length, size * 10);
    }

    /// Index memory follows use, not the number of segments: a loaded log
    /// holds only its active segment's indexes; a read of an old segment
    /// reads that index back; indexes no read touched between two checks
    /// leave memory; reads and truncation stay right throughout.
    #[test]
    fn sealed_segment_indexes_leave_memory_when_idle() {
        let dir = tempfile::tempdir().unwrap();
        let partition_dir = dir.path().join("t-0");
        let batch = batch_v2(4, 100, Compression::None);
        let config = LogConfig {
            segment_bytes: batch.len() as u64 * 3,
            index_interval_bytes: 1,
            ..LogConfig::default()
        };
        let mut log = PartitionLog::create(dir.path(), tp(), config.clone(), 0).unwrap();
        for _ in 0..12 {
            append(&mut log, &batch, 0);
        }
        let segments = log.segments.len();
        assert!(segments >= 4, "{segments} segments");
        log.close(1).unwrap();

        let clean = LoadOptions {
            recovery_point: 48,
            clean_shutdown: true,
            ..LoadOptions::default()
        };
        let (mut log, _) = PartitionLog::load(&partition_dir, tp(), config, clean, 2).unwrap();
        assert_eq!(log.indexes_in_memory(), 2, "only the active segment's");

        // A read in the middle of the first segment needs its offset index.
        let region = log.read(5, 1, None).unwrap().region.unwrap();
        assert_eq!(
            (region.position, region.length),
            (batch.len() as u64, batch.len() as u64)
        );
        assert_eq!(log.indexes_in_memory(), 3);
        assert_eq!(log.evict_idle_indexes(), 0, "used since the last check");
        assert_eq!(log.evict_idle_indexes(), 1, "idle for a whole period");
        assert_eq!(log.indexes_in_memory(), 2);

        // Read back on demand, with the same answers.
        let again = log.read(5, 1, None).unwrap().region.unwrap();
        assert_eq!(
            (again.position, again.length),
            (region.position, region.length)
        );
        assert_eq!(
            log.offset_for_timestamp(0).unwrap().map(|(o, _)| o),
            Some(0)
        );

        // Truncating into an evicted segment makes it active and appendable.
        log.evict_idle_indexes();
        log.evict_idle_indexes();
        log.truncate_to(6, 2).unwrap();
        assert_eq!(log.log_end_offset(), 4);
        append(&mut log, &batch, 2);
        let tail = log.read(4, 1, None).unwrap().region.unwrap();
        assert_eq!(tail.length, batch.len() as u64);
    }

    /// Reads never go past `max_offset` (the high watermark), and an offset
    /// past the log end is out of range.
    #[test]
    fn reads_stop_at_max_offset() {
        let dir = tempfile::tempdir().unwrap();
        let batch = batch_v2(4, 100, Compression::None);
        let mut log = PartitionLog::create(dir.path(), tp(), LogConfig::default(), 0).unwrap();
        for _ in 0..3 {
            append(&mut log, &batch, 0);
        }
        let region = log.read(0, 1 << 20, Some(8)).unwrap().region.unwrap();
        assert_eq!(region.length as usize, batch.len() * 2);
        assert!(log.read(8, 1 << 20, Some(8)).unwrap().region.is_none());
        assert!(log.read(12, 1 << 20, None).unwrap().region.is_none());
        assert!(matches!(
            log.read(13, 1 << 20, None),
            Err(LogError::OffsetOutOfRange { .. })
        ));
    }
}
