//! Model-based tests of `PartitionLog`, in the style of sled's model tests.
//!
//! A [`Model`] keeps, in memory, what the log must hold: every entry still on
//! disk with the exact bytes the log should have written for it (the bytes
//! the producer sent, with the 8-byte base offset field replaced by the
//! assigned offset), the segment base offsets, the log start offset and the
//! recovery point. A random sequence of [`Op`]s runs against a real log in a
//! temporary directory and against the model; after every op the log, its
//! files and its reads must agree with the model.
//!
//! The model predicts rolls (`segment.bytes`), retention and truncation
//! itself, so the segment list is checked too, not just offsets and bytes.
//! Crashes drop the log without closing it and then damage the files the way
//! a crash or a bad disk would; the model says exactly which entries survive.

use std::fs::{self, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use ferrolog::storage::batch::EntryHeader;
use ferrolog::storage::testing::{batch_v2, legacy_message_set};
use ferrolog::storage::{LoadOptions, LoadReport, LogConfig, LogError, PartitionLog};
use ferrolog::topic_partition::TopicPartition;
use kafka_protocol::records::Compression;
#[path = "common/seed.rs"]
mod seed;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use tempfile::TempDir;

/// The log never reads a clock; every call gets this one.
const NOW: i64 = 1_700_000_000_000;
/// Large enough for a whole segment: a scan read never cuts an entry.
const SCAN_BYTES: u64 = 1 << 20;

type Res<T = ()> = Result<T, TestCaseError>;

/// A small config: rolls and index entries happen within a few appends;
/// nothing expires by time, rolls by time or flushes by itself.
fn log_config(segment_bytes: u64, index_interval_bytes: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes,
        segment_ms: i64::MAX,
        retention_ms: -1,
        retention_bytes: -1,
        ..LogConfig::default()
    }
}

fn ok<T>(result: Result<T, LogError>, what: &str) -> Res<T> {
    result.map_err(|e| TestCaseError::fail(format!("{what} failed: {e}")))
}

fn io<T>(result: std::io::Result<T>, what: &str) -> Res<T> {
    result.map_err(|e| TestCaseError::fail(format!("{what}: {e}")))
}

/// Compare bytes without dumping kilobytes into the failure message.
fn same_bytes(got: &[u8], expected: &[u8], what: &str) -> Res {
    if got == expected {
        return Ok(());
    }
    let first_diff = got
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(expected.len()));
    Err(TestCaseError::fail(format!(
        "{what}: got {} bytes, expected {}; first difference at byte {first_diff}",
        got.len(),
        expected.len()
    )))
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// One log entry (a v2 batch, or one legacy message) as it must be on disk.
#[derive(Clone)]
struct Entry {
    first: i64,
    last: i64,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}..={} ({} bytes)",
            self.first,
            self.last,
            self.bytes.len()
        )
    }
}

/// What the log must hold.
#[derive(Debug)]
struct Model {
    /// Every entry still in some segment, in offset order, without gaps;
    /// entries below the log start offset stay until their segment goes.
    entries: Vec<Entry>,
    /// Segment base offsets; the last one is the active segment.
    segments: Vec<i64>,
    log_start: i64,
    /// Everything below was fsynced: it survives losing unflushed writes.
    recovery_point: i64,
}

impl Model {
    fn new() -> Model {
        Model {
            entries: Vec::new(),
            segments: vec![0],
            log_start: 0,
            recovery_point: 0,
        }
    }

    fn active_base(&self) -> i64 {
        *self.segments.last().expect("a log always has a segment")
    }

    fn active(&self) -> usize {
        self.segments.len() - 1
    }

    fn leo(&self) -> i64 {
        let base = self.active_base();
        self.entries.last().map_or(base, |e| (e.last + 1).max(base))
    }

    /// Indices into `entries` of the entries of segment `i`.
    fn segment_range(&self, i: usize) -> Range<usize> {
        let start = self.entries.partition_point(|e| e.first < self.segments[i]);
        let end = match self.segments.get(i + 1) {
            Some(&next) => self.entries.partition_point(|e| e.first < next),
            None => self.entries.len(),
        };
        start..end
    }

    fn segment_size(&self, i: usize) -> u64 {
        self.entries[self.segment_range(i)]
            .iter()
            .map(|e| e.bytes.len() as u64)
            .sum()
    }

    fn total_size(&self) -> u64 {
        self.entries.iter().map(|e| e.bytes.len() as u64).sum()
    }

    fn segment_of(&self, offset: i64) -> usize {
        self.segments
            .partition_point(|&base| base <= offset)
            .saturating_sub(1)
    }

    /// The index of the entry holding `offset`.
    fn entry_of(&self, offset: i64) -> Option<usize> {
        let i = self.entries.partition_point(|e| e.last < offset);
        (i < self.entries.len() && self.entries[i].first <= offset).then_some(i)
    }

    /// What a read at `offset` may return: the segment's bytes from the
    /// start of the entry holding `offset`, at most the first entry or
    /// `max_bytes` long (whichever is longer) and never past the segment's
    /// end; with the lengths at which an entry ends, where the log may cut
    /// the read shorter (never shorter than the first entry).
    fn expected_read(&self, offset: i64, max_bytes: u64) -> (Vec<u8>, Vec<usize>) {
        let first = self.entry_of(offset).expect("offset is inside the log");
        let end = self.segment_range(self.segment_of(offset)).end;
        let wanted = max_bytes.max(self.entries[first].bytes.len() as u64);
        let mut out = Vec::new();
        let mut entry_ends = Vec::new();
        for entry in &self.entries[first..end] {
            if out.len() as u64 >= wanted {
                break;
            }
            out.extend_from_slice(&entry.bytes);
            entry_ends.push(out.len());
        }
        out.truncate(wanted.min(out.len() as u64) as usize);
        (out, entry_ends)
    }

    /// A roll closes (and fsyncs) a non-empty active segment.
    fn roll(&mut self) {
        if self.segment_size(self.active()) > 0 {
            let leo = self.leo();
            self.recovery_point = self.recovery_point.max(leo);
            self.segments.push(leo);
        }
    }

    /// Whole entries holding `offset` or later go; below the first segment
    /// the log starts afresh at `offset`.
    fn truncate(&mut self, offset: i64) {
        if offset >= self.leo() {
            return;
        }
        if offset <= self.segments[0] {
            self.entries.clear();
            self.segments = vec![offset.max(0)];
            self.log_start = offset.max(0);
        } else {
            // A segment starting at `offset` stays, emptied.
            while self.segments.len() > 1 && self.active_base() > offset {
                self.segments.pop();
            }
            let keep = self.entries.partition_point(|e| e.last < offset);
            self.entries.truncate(keep);
        }
        let leo = self.leo();
        self.log_start = self.log_start.min(leo);
        self.recovery_point = self.recovery_point.min(leo);
    }

    /// Delete leading non-active segments while `doomed(self, index)`; returns
    /// how many segments and bytes went.
    fn delete_leading_segments(
        &mut self,
        mut doomed: impl FnMut(&Model, usize) -> bool,
    ) -> (usize, u64) {
        let mut count = 0;
        while count + 1 < self.segments.len() && doomed(self, count) {
            count += 1;
        }
        if count == 0 {
            return (0, 0);
        }
        let bytes = (0..count).map(|i| self.segment_size(i)).sum();
        let new_first = self.segments[count];
        self.entries.retain(|e| e.first >= new_first);
        self.segments.drain(..count);
        self.log_start = self.log_start.max(self.segments[0]);
        (count, bytes)
    }

    /// `enforce_retention` with `retention.ms` off.
    fn enforce_retention(&mut self, retention_bytes: i64) -> (usize, u64) {
        let start = self.log_start;
        let (mut count, mut bytes) =
            self.delete_leading_segments(|m, i| m.segments[i + 1] <= start);
        if retention_bytes >= 0 {
            let mut excess = self.total_size() as i64 - retention_bytes;
            let (c, b) = self.delete_leading_segments(|m, i| {
                let size = m.segment_size(i) as i64;
                let delete = excess - size >= 0;
                if delete {
                    excess -= size;
                }
                delete
            });
            count += c;
            bytes += b;
        }
        (count, bytes)
    }
}

// ---------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------

/// A record set as a producer sends it.
#[derive(Debug, Clone)]
enum Payload {
    /// One v2 batch.
    V2 {
        records: usize,
        value_len: usize,
        compression: Compression,
    },
    /// An uncompressed legacy message set: one entry per message.
    Legacy { magic: i8, records: usize },
}

impl Payload {
    fn build(&self) -> Bytes {
        match *self {
            Payload::V2 {
                records,
                value_len,
                compression,
            } => batch_v2(records, value_len, compression),
            Payload::Legacy { magic, records } => {
                legacy_message_set(magic, records, Compression::None)
            }
        }
    }
}

/// How a crash (or a bad disk) damages the files before the next load.
#[derive(Debug, Clone)]
enum Damage {
    /// The OS loses what was not fsynced: the active `.log` goes back to
    /// its length at the recovery point.
    LoseUnflushed,
    /// The active `.log` is cut at a random byte.
    CutActive(Index),
    /// Random bytes after the end of the active `.log`.
    GarbageAfterActive(Vec<u8>),
    /// The last K bytes of the active `.log` are zeroed (K random, >= 1).
    ZeroActiveTail(Index),
    /// One index file of a random segment is damaged; no log bytes are.
    BreakIndex {
        segment: Index,
        time_index: bool,
        how: IndexDamage,
    },
}

#[derive(Debug, Clone)]
enum IndexDamage {
    Delete,
    /// Cut (or grow) to a length that is not a whole number of entries.
    OddLength(Index),
    /// Overwrite with random bytes at a random position.
    Scribble(Index, Vec<u8>),
}

#[derive(Debug, Clone)]
enum Op {
    Append(Payload),
    /// Read at an offset in `[log_start, leo]` (picked by the index).
    Read {
        at: Index,
        max_bytes: u64,
    },
    Roll,
    Flush,
    /// Truncate to an offset in `[0, leo + 1]`.
    Truncate(Index),
    /// DeleteRecords to an offset in `[0, leo + 1]`, then retention.
    DeleteRecordsBefore(Index),
    /// Retention with `retention.bytes` in `[0, size]`.
    RetainBytes(Index),
    CleanRestart,
    Crash(Damage),
}

fn compression() -> impl Strategy<Value = Compression> {
    prop_oneof![
        4 => Just(Compression::None),
        1 => Just(Compression::Gzip),
        1 => Just(Compression::Snappy),
        1 => Just(Compression::Lz4),
        1 => Just(Compression::Zstd),
    ]
}

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        8 => (1..=8usize, 0..=200usize, compression()).prop_map(
            |(records, value_len, compression)| Payload::V2 {
                records,
                value_len,
                compression,
            }
        ),
        1 => (0..=1i8, 1..=5usize).prop_map(|(magic, records)| Payload::Legacy { magic, records }),
    ]
}

fn damage() -> impl Strategy<Value = Damage> {
    let index_damage = prop_oneof![
        Just(IndexDamage::Delete),
        any::<Index>().prop_map(IndexDamage::OddLength),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..40))
            .prop_map(|(at, bytes)| IndexDamage::Scribble(at, bytes)),
    ];
    prop_oneof![
        Just(Damage::LoseUnflushed),
        any::<Index>().prop_map(Damage::CutActive),
        prop::collection::vec(any::<u8>(), 1..64).prop_map(Damage::GarbageAfterActive),
        any::<Index>().prop_map(Damage::ZeroActiveTail),
        (any::<Index>(), any::<bool>(), index_damage).prop_map(|(segment, time_index, how)| {
            Damage::BreakIndex {
                segment,
                time_index,
                how,
            }
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let max_bytes = prop_oneof![Just(0u64), 1..64u64, 64..20_000u64];
    prop_oneof![
        14 => payload().prop_map(Op::Append),
        4 => (any::<Index>(), max_bytes).prop_map(|(at, max_bytes)| Op::Read { at, max_bytes }),
        2 => Just(Op::Roll),
        2 => Just(Op::Flush),
        1 => any::<Index>().prop_map(Op::Truncate),
        1 => any::<Index>().prop_map(Op::DeleteRecordsBefore),
        1 => any::<Index>().prop_map(Op::RetainBytes),
        1 => Just(Op::CleanRestart),
        3 => damage().prop_map(Op::Crash),
    ]
}

// ---------------------------------------------------------------------------
// The harness: a real log next to its model
// ---------------------------------------------------------------------------

struct Harness {
    _tmp: TempDir,
    /// The partition directory.
    dir: PathBuf,
    tp: TopicPartition,
    config: LogConfig,
    log: Option<PartitionLog>,
    model: Model,
    /// An index file was damaged in this case (it may have been accepted).
    index_damaged: bool,
}

impl Harness {
    fn new(config: LogConfig) -> Harness {
        let tmp = tempfile::tempdir().expect("temp dir");
        let tp = TopicPartition::new("model", 0);
        let log =
            PartitionLog::create(tmp.path(), tp.clone(), config.clone(), NOW).expect("create log");
        Harness {
            dir: log.dir().to_path_buf(),
            _tmp: tmp,
            tp,
            config,
            log: Some(log),
            model: Model::new(),
            index_damaged: false,
        }
    }

    fn log(&mut self) -> &mut PartitionLog {
        self.log.as_mut().expect("the log is open")
    }

    fn file(&self, base: i64, extension: &str) -> PathBuf {
        self.dir.join(format!("{base:020}.{extension}"))
    }

    fn apply(&mut self, op: &Op) -> Res {
        match op {
            Op::Append(payload) => self.append(&payload.build())?,
            Op::Read { at, max_bytes } => {
                let (lso, leo) = (self.model.log_start, self.model.leo());
                let offset = lso + at.index((leo - lso + 1) as usize) as i64;
                self.check_read(offset, *max_bytes)?;
            }
            Op::Roll => {
                ok(self.log().roll(NOW), "roll")?;
                self.model.roll();
            }
            Op::Flush => {
                ok(self.log().flush(NOW), "flush")?;
                self.model.recovery_point = self.model.leo();
            }
            Op::Truncate(at) => {
                let offset = at.index(self.model.leo() as usize + 2) as i64;
                ok(self.log().truncate_to(offset, NOW), "truncate_to")?;
                self.model.truncate(offset);
            }
            Op::DeleteRecordsBefore(at) => {
                let offset = at.index(self.model.leo() as usize + 2) as i64;
                self.delete_records_before(offset)?;
            }
            Op::RetainBytes(at) => {
                let limit = at.index(self.model.total_size() as usize + 1) as i64;
                self.retain_bytes(limit)?;
            }
            Op::CleanRestart => {
                let options = self.shut_down(true)?;
                let report = self.load(options)?;
                prop_assert_eq!(
                    report,
                    LoadReport {
                        segments: self.model.segments.len(),
                        ..LoadReport::default()
                    }
                );
            }
            Op::Crash(damage) => self.crash(damage)?,
        }
        // As the shard does: a roll's fsyncs run (on its flusher thread),
        // then the recovery point moves.
        if let Some(log) = self.log.as_mut() {
            if let Some(flush) = log.take_roll_flush() {
                ok(flush.run(), "roll flush")?;
                log.roll_flushed(flush.incarnation, flush.up_to);
            }
        }
        self.check()
    }

    fn append(&mut self, records: &[u8]) -> Res {
        let active_size = self.model.segment_size(self.model.active());
        if active_size > 0 && active_size + records.len() as u64 > self.config.segment_bytes {
            self.model.roll();
        }
        let info = ok(self.log().append(BytesMut::from(records), NOW), "append")?;
        let first = self.model.leo();
        let mut next = first;
        let mut position = 0;
        while position < records.len() {
            let header = EntryHeader::parse(&records[position..], position)
                .map_err(|e| TestCaseError::fail(format!("test batch: {e}")))?;
            let count = match header.magic {
                2 => header.last_offset - header.offset_field + 1,
                _ => 1,
            };
            let mut bytes = records[position..position + header.size].to_vec();
            bytes[..8].copy_from_slice(&next.to_be_bytes());
            self.model.entries.push(Entry {
                first: next,
                last: next + count - 1,
                bytes,
            });
            next += count;
            position += header.size;
        }
        prop_assert_eq!(
            (
                info.first_offset,
                info.last_offset,
                info.log_end_offset,
                info.record_count
            ),
            (first, next - 1, next, (next - first) as u64),
            "append info"
        );
        Ok(())
    }

    fn delete_records_before(&mut self, offset: i64) -> Res {
        let leo = self.model.leo();
        let result = self.log().delete_records_before(offset);
        if offset > leo {
            prop_assert!(
                matches!(result, Err(LogError::OffsetOutOfRange { .. })),
                "delete_records_before({offset}) past leo {leo}: {result:?}"
            );
            return Ok(());
        }
        let new_start = ok(result, "delete_records_before")?;
        prop_assert_eq!(new_start, self.model.log_start.max(offset), "new log start");
        if offset > self.model.log_start {
            self.model.log_start = offset;
            self.model
                .delete_leading_segments(|m, i| m.segments[i + 1] <= offset);
        }
        let report = ok(self.log().enforce_retention(NOW), "enforce_retention")?;
        let (count, bytes) = self.model.enforce_retention(-1);
        prop_assert_eq!(
            (
                report.deleted_segments,
                report.deleted_bytes,
                report.log_start_offset
            ),
            (count, bytes, self.model.log_start),
            "retention after DeleteRecords"
        );
        Ok(())
    }

    fn retain_bytes(&mut self, limit: i64) -> Res {
        let mut config = self.config.clone();
        config.retention_bytes = limit;
        self.log().update_config(config);
        let report = ok(self.log().enforce_retention(NOW), "enforce_retention");
        let original = self.config.clone();
        self.log().update_config(original);
        let report = report?;
        let (count, bytes) = self.model.enforce_retention(limit);
        prop_assert_eq!(
            (
                report.deleted_segments,
                report.deleted_bytes,
                report.log_start_offset
            ),
            (count, bytes, self.model.log_start),
            "retention.bytes = {}",
            limit
        );
        Ok(())
    }

    /// Close the log (clean) or drop it without flushing (crash), and say
    /// what the checkpoints would hold for the next load.
    fn shut_down(&mut self, clean: bool) -> Res<LoadOptions> {
        let log = self.log.take().expect("the log is open");
        let options = LoadOptions {
            recovery_point: if clean {
                log.log_end_offset()
            } else {
                log.recovery_point()
            },
            log_start_offset: log.log_start_offset(),
            clean_shutdown: clean,
            high_watermark: 0,
            cleaner_offset: 0,
        };
        if clean {
            ok(log.close(NOW), "close")?;
        } else {
            // Nothing flushes on drop: this is the state a crash leaves.
            std::mem::drop(log);
        }
        Ok(options)
    }

    /// Load the log again. The model's segments and entries must already
    /// say what survives.
    fn load(&mut self, options: LoadOptions) -> Res<LoadReport> {
        let (log, report) = ok(
            PartitionLog::load(
                &self.dir,
                self.tp.clone(),
                self.config.clone(),
                options,
                NOW,
            ),
            "load",
        )?;
        self.log = Some(log);
        let leo = self.model.leo();
        self.model.log_start = options.log_start_offset.min(leo);
        self.model.recovery_point = leo;
        Ok(report)
    }

    fn crash(&mut self, damage: &Damage) -> Res {
        let options = self.shut_down(false)?;
        let active = self.model.segment_range(self.model.active());
        let image: Vec<u8> = self.model.entries[active.clone()]
            .iter()
            .flat_map(|e| e.bytes.iter().copied())
            .collect();
        let mut damaged = image.clone();
        match damage {
            Damage::LoseUnflushed => {
                let flushed: usize = self.model.entries[active.clone()]
                    .iter()
                    .filter(|e| e.last < options.recovery_point)
                    .map(|e| e.bytes.len())
                    .sum();
                damaged.truncate(flushed);
            }
            Damage::CutActive(at) => damaged.truncate(at.index(image.len() + 1)),
            Damage::GarbageAfterActive(garbage) => damaged.extend_from_slice(garbage),
            Damage::ZeroActiveTail(k) => {
                if !image.is_empty() {
                    let from = image.len() - 1 - k.index(image.len());
                    damaged[from..].fill(0);
                }
            }
            Damage::BreakIndex {
                segment,
                time_index,
                how,
            } => {
                let base = self.model.segments[segment.index(self.model.segments.len())];
                let (extension, entry_size) = if *time_index {
                    ("timeindex", 12)
                } else {
                    ("index", 8)
                };
                break_index(&self.file(base, extension), entry_size, how)?;
                self.index_damaged = true;
            }
        }
        let report = self.crash_load(options, &damaged)?;
        let kept_bytes: usize = self.model.entries[self.model.segment_range(self.model.active())]
            .iter()
            .map(|e| e.bytes.len())
            .sum();
        prop_assert_eq!(
            report.truncated_bytes,
            (damaged.len() - kept_bytes) as u64,
            "bytes cut by recovery"
        );
        Ok(())
    }

    /// Write `damaged` as the active segment's log, drop from the model the
    /// active entries that no longer match it byte for byte, and load.
    fn crash_load(&mut self, options: LoadOptions, damaged: &[u8]) -> Res<LoadReport> {
        let path = self.file(self.model.active_base(), "log");
        let on_disk = io(fs::read(&path), "read the active segment")?;
        let active = self.model.segment_range(self.model.active());
        let expected: Vec<u8> = self.model.entries[active.clone()]
            .iter()
            .flat_map(|e| e.bytes.iter().copied())
            .collect();
        same_bytes(&on_disk, &expected, "active segment before the crash")?;
        if damaged != on_disk {
            io(fs::write(&path, damaged), "damage the active segment")?;
        }
        let mut position = 0;
        let mut keep = active.start;
        for entry in &self.model.entries[active.clone()] {
            let end = position + entry.bytes.len();
            if end > damaged.len() || damaged[position..end] != entry.bytes[..] {
                break;
            }
            keep += 1;
            position = end;
        }
        self.model.entries.truncate(keep);
        let report = self.load(options)?;
        prop_assert!(
            report.recovered_segments >= 1,
            "the active segment is recovered: {report:?}"
        );
        Ok(report)
    }

    /// Everything the log says must match the model.
    fn check(&mut self) -> Res {
        let log = self.log.as_ref().expect("the log is open");
        let m = &self.model;
        let (lso, leo) = (m.log_start, m.leo());
        prop_assert_eq!(log.log_end_offset(), leo, "log end offset");
        prop_assert_eq!(log.log_start_offset(), lso, "log start offset");
        prop_assert_eq!(log.recovery_point(), m.recovery_point, "recovery point");
        prop_assert_eq!(log.segment_base_offsets(), m.segments.clone(), "segments");
        prop_assert_eq!(log.size_in_bytes(), m.total_size(), "size in bytes");

        // Exactly the segments' files, each .log as long as its entries,
        // and producer snapshots only within the log (from the first
        // segment's base to the log end offset).
        let mut files: Vec<String> = io(fs::read_dir(&self.dir), "list the partition dir")?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        files.sort();
        let first_base = m.segments.first().copied().unwrap_or(0);
        for snapshot in files.iter().filter_map(|f| f.strip_suffix(".snapshot")) {
            let offset: i64 = snapshot
                .parse()
                .map_err(|_| TestCaseError::fail(format!("snapshot file {snapshot}.snapshot")))?;
            prop_assert!(
                (first_base..=leo).contains(&offset),
                "snapshot {} outside [{}, {}]",
                offset,
                first_base,
                leo
            );
        }
        files.retain(|f| !f.ends_with(".snapshot"));
        let mut expected: Vec<String> = m
            .segments
            .iter()
            .flat_map(|b| ["log", "index", "timeindex"].map(|x| format!("{b:020}.{x}")))
            .collect();
        expected.sort();
        prop_assert_eq!(files, expected, "files in the partition dir");
        for (i, &base) in m.segments.iter().enumerate() {
            let len = io(fs::metadata(self.file(base, "log")), "stat a segment")?.len();
            prop_assert_eq!(len, m.segment_size(i), "size of segment {}", base);
        }

        // Every entry alone, by its first readable offset.
        for entry in &m.entries {
            if entry.last < lso {
                let result = log.read(entry.first, 1, None);
                prop_assert!(
                    matches!(result, Err(LogError::OffsetOutOfRange { .. })),
                    "read({}) below log start {lso}: {:?}",
                    entry.first,
                    result.map(|r| r.region.map(|r| r.length))
                );
                continue;
            }
            let offset = entry.first.max(lso);
            let got = read_bytes(log, offset, 1)?;
            same_bytes(
                &got,
                &entry.bytes,
                &format!("read({offset}, max_bytes = 1)"),
            )?;
        }

        // Out of range on both sides.
        for offset in [lso - 1, leo + 1] {
            if offset >= 0 {
                let result = log.read(offset, SCAN_BYTES, None);
                prop_assert!(
                    matches!(result, Err(LogError::OffsetOutOfRange { .. })),
                    "read({offset}) outside [{lso}, {leo}]"
                );
            }
        }
        let at_end = ok(log.read(leo, SCAN_BYTES, None), "read at the log end")?;
        prop_assert!(
            at_end.region.is_none(),
            "read at the log end returns nothing"
        );

        // A consumer's scan from the log start sees the model's entries.
        let mut next = m.entry_of(lso).unwrap_or(m.entries.len());
        let mut offset = lso;
        while offset < leo {
            let bytes = read_bytes(log, offset, SCAN_BYTES)?;
            prop_assert!(!bytes.is_empty(), "scan read at {offset} returned nothing");
            let mut position = 0;
            while position < bytes.len() {
                let header = EntryHeader::parse(&bytes[position..], position)
                    .map_err(|e| TestCaseError::fail(format!("scan at {offset}: {e}")))?;
                prop_assert!(position + header.size <= bytes.len(), "scan cut an entry");
                prop_assert!(next < m.entries.len(), "scan read past the model's entries");
                let entry = &m.entries[next];
                prop_assert_eq!(
                    (header.first_offset(), header.last_offset),
                    (Some(entry.first), entry.last),
                    "scan entry offsets"
                );
                same_bytes(
                    &bytes[position..position + header.size],
                    &entry.bytes,
                    &format!("scan entry {}", entry.first),
                )?;
                prop_assert!(header.last_offset >= offset, "scan went backwards");
                offset = header.last_offset + 1;
                position += header.size;
                next += 1;
            }
        }
        prop_assert_eq!(next, m.entries.len(), "scan saw every entry");
        Ok(())
    }

    /// A read in `[log_start, leo]` must return what the model says.
    fn check_read(&mut self, offset: i64, max_bytes: u64) -> Res {
        let log = self.log.as_ref().expect("the log is open");
        let m = &self.model;
        let info = ok(log.read(offset, max_bytes, None), "read")?;
        prop_assert_eq!(
            (info.log_start_offset, info.log_end_offset),
            (m.log_start, m.leo()),
            "offsets in the read info"
        );
        if offset == m.leo() {
            prop_assert!(info.region.is_none(), "read at the log end returns nothing");
            return Ok(());
        }
        let region = info
            .region
            .ok_or_else(|| TestCaseError::fail(format!("read({offset}) returned no region")))?;
        let got = io(region.read_to_vec(), "read the region")?;
        let what = format!("read({offset}, max_bytes = {max_bytes})");
        let (longest, entry_ends) = m.expected_read(offset, max_bytes);
        prop_assert!(
            got.len() >= entry_ends[0] && got.len() <= longest.len(),
            "{what}: {} bytes, not in [{}, {}]",
            got.len(),
            entry_ends[0],
            longest.len()
        );
        same_bytes(&got, &longest[..got.len()], &what)?;
        // A read cut short of max_bytes stops at an entry boundary. The log
        // takes boundaries from its offset index, which is only checked
        // loosely on load, so this holds only while no index was damaged.
        if got.len() < longest.len() && !self.index_damaged {
            prop_assert!(
                entry_ends.contains(&got.len()),
                "{what}: cut short at {} bytes, inside an entry (ends at {entry_ends:?})",
                got.len()
            );
        }
        Ok(())
    }
}

fn read_bytes(log: &PartitionLog, offset: i64, max_bytes: u64) -> Res<Vec<u8>> {
    let info = ok(
        log.read(offset, max_bytes, None),
        &format!("read({offset})"),
    )?;
    let region = info
        .region
        .ok_or_else(|| TestCaseError::fail(format!("read({offset}) returned no region")))?;
    io(region.read_to_vec(), "read the region")
}

fn break_index(path: &Path, entry_size: u64, how: &IndexDamage) -> Res {
    match how {
        IndexDamage::Delete => match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(TestCaseError::fail(
                format!("delete {}: {e}", path.display()),
            )),
            _ => Ok(()),
        },
        IndexDamage::OddLength(at) => {
            let file = io(OpenOptions::new().write(true).open(path), "open an index")?;
            let len = io(file.metadata(), "stat an index")?.len();
            let mut new_len = at.index((len + entry_size) as usize) as u64;
            if new_len.is_multiple_of(entry_size) {
                new_len += 1;
            }
            io(file.set_len(new_len), "resize an index")
        }
        IndexDamage::Scribble(at, bytes) => {
            let file = io(OpenOptions::new().write(true).open(path), "open an index")?;
            let len = io(file.metadata(), "stat an index")?.len();
            let position = at.index(len as usize + 1) as u64;
            io(file.write_all_at(bytes, position), "scribble on an index")
        }
    }
}

/// `PROPTEST_CASES` overrides the case count, as proptest documents.
fn proptest_config() -> ProptestConfig {
    let defaults = ProptestConfig::default();
    let from_env = std::env::var_os("PROPTEST_CASES").is_some();
    seed::seeded(ProptestConfig {
        cases: if from_env { defaults.cases } else { 256 },
        max_shrink_iters: 4096,
        // Failures are printed, not persisted: no regressions file appears
        // next to the tests.
        failure_persistence: None,
        ..defaults
    })
}

fn run(segment_bytes: u64, index_interval_bytes: u64, ops: &[Op]) -> Res {
    let mut harness = Harness::new(log_config(segment_bytes, index_interval_bytes));
    harness.check()?;
    for op in ops {
        harness.apply(op)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config())]

    /// Proves that appends (v2 with every codec, legacy v0/v1), reads of any
    /// size at any offset, rolls, flushes, truncation, DeleteRecords,
    /// size-based retention, clean restarts and crashes that damage the files
    /// leave the log exactly as the in-memory model says: same offsets, same
    /// bytes, same segments, same files. How: a random sequence of up to 40
    /// ops runs against a real log in a temp dir and against the model, and
    /// every observable is compared after each op; proptest shrinks any
    /// failure to a minimal sequence.
    #[test]
    fn partition_log_matches_model(
        segment_bytes in 600u64..4096,
        index_interval_bytes in 1u64..512,
        ops in prop::collection::vec(op(), 1..40),
    ) {
        run(segment_bytes, index_interval_bytes, &ops)?;
    }
}

// ---------------------------------------------------------------------------
// Specific scenarios
// ---------------------------------------------------------------------------

fn v2(records: usize, value_len: usize) -> Op {
    Op::Append(Payload::V2 {
        records,
        value_len,
        compression: Compression::None,
    })
}

fn must(result: Res) {
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A harness whose log has at least `segments` segments and a few entries
/// in the active one, all flushed. Each batch is about 180 bytes.
fn log_with_segments(segment_bytes: u64, index_interval_bytes: u64, segments: usize) -> Harness {
    let mut h = Harness::new(log_config(segment_bytes, index_interval_bytes));
    while h.model.segments.len() < segments || h.model.segment_range(h.model.active()).len() < 2 {
        must(h.apply(&v2(2, 40)));
    }
    must(h.apply(&Op::Flush));
    h
}

/// (bytes, mtime) of each file of segment `base`.
fn snapshot(h: &Harness, base: i64) -> Vec<(Vec<u8>, SystemTime)> {
    ["log", "index", "timeindex"]
        .iter()
        .map(|x| {
            let path = h.file(base, x);
            let bytes = fs::read(&path).expect("read a segment file");
            let mtime = fs::metadata(&path)
                .and_then(|m| m.modified())
                .expect("mtime");
            (bytes, mtime)
        })
        .collect()
}

/// Proves that a write torn in the middle of the last entry of a
/// three-segment log costs exactly that entry: the two closed segments stay
/// byte for byte, the log end offset drops to that entry's first offset and
/// every remaining entry reads back. How: cut the active `.log` halfway
/// through its last entry after dropping the log unclosed, then load with
/// the recovery point the log had.
#[test]
fn torn_tail_of_three_segment_log() {
    let mut h = log_with_segments(1024, 128, 3);
    must(h.apply(&v2(2, 50)));
    let closed: Vec<i64> = h.model.segments[..2].to_vec();
    let before: Vec<_> = closed.iter().map(|&b| snapshot(&h, b)).collect();
    let last = h.model.entries.last().cloned().expect("entries");
    let options = h.shut_down(false).expect("crash");
    let active = h.model.segment_range(h.model.active());
    let mut damaged: Vec<u8> = h.model.entries[active]
        .iter()
        .flat_map(|e| e.bytes.iter().copied())
        .collect();
    damaged.truncate(damaged.len() - last.bytes.len() / 2);
    let report = h.crash_load(options, &damaged).expect("load");
    must(h.check());
    assert_eq!(h.log().log_end_offset(), last.first);
    assert_eq!(report.recovered_segments, 1, "{report:?}");
    assert_eq!(
        report.truncated_bytes,
        (last.bytes.len() - last.bytes.len() / 2) as u64
    );
    for (base, old) in closed.iter().zip(&before) {
        let now = snapshot(&h, *base);
        for ((old_bytes, _), (new_bytes, _)) in old.iter().zip(&now) {
            assert_eq!(old_bytes, new_bytes, "segment {base} changed");
        }
    }
}

/// Proves what a clean load checks and what it trusts. Garbage after the
/// last entry cannot be parsed as an entry header, so the tail walk of a
/// clean load notices it and cuts it: nothing is lost. A flipped byte inside
/// the last entry's CRC-covered body leaves its header intact: a clean load
/// trusts it (the log end offset is unchanged and the flipped bytes are
/// served), while an unclean load of the same files checks the CRC and cuts
/// that entry. How: close the log cleanly, damage the active `.log`, load.
#[test]
fn clean_load_walks_headers_but_trusts_bodies() {
    let mut h = log_with_segments(1 << 20, 128, 1);
    let leo = h.model.leo();
    let active_log = h.file(h.model.active_base(), "log");
    let length = fs::metadata(&active_log).unwrap().len();

    // Garbage after a clean shutdown: cut by the tail walk.
    let options = h.shut_down(true).unwrap();
    let file = OpenOptions::new().write(true).open(&active_log).unwrap();
    file.write_all_at(b"this is not a record batch", length)
        .unwrap();
    drop(file);
    let report = h.load(options).unwrap();
    must(h.check());
    assert_eq!(h.log().log_end_offset(), leo);
    assert_eq!(
        fs::metadata(&active_log).unwrap().len(),
        length,
        "garbage cut"
    );
    assert_eq!(
        report.recovered_segments, 0,
        "a clean load recovers nothing"
    );

    // A flipped body byte after a clean shutdown: trusted.
    let options = h.shut_down(true).unwrap();
    let last = h.model.entries.len() - 1;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&active_log)
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, length - 1).unwrap();
    file.write_all_at(&[byte[0] ^ 0xff], length - 1).unwrap();
    drop(file);
    if let Some(b) = h.model.entries[last].bytes.last_mut() {
        *b ^= 0xff;
    }
    h.load(options).unwrap();
    must(h.check());
    assert_eq!(
        h.log().log_end_offset(),
        leo,
        "a clean load trusts entry bodies"
    );

    // The same files after a crash: the CRC check cuts the entry.
    let options = h.shut_down(false).unwrap();
    let corrupt = h
        .model
        .entries
        .pop()
        .expect("the corrupt entry is modelled");
    let report = h.load(options).unwrap();
    must(h.check());
    assert_eq!(h.log().log_end_offset(), corrupt.first);
    assert_eq!(report.recovered_segments, 1, "{report:?}");
    assert_eq!(report.truncated_bytes, corrupt.bytes.len() as u64);
}

/// Proves that missing or malformed index files cost time, never data: after
/// a clean shutdown, deleting both indexes of one segment and cutting the
/// offset index of another to an odd length, the load rebuilds them byte
/// for byte as they were, and every read still matches the model. How:
/// snapshot the index files, damage them, load cleanly, compare.
#[test]
fn deleted_index_is_rebuilt() {
    let mut h = log_with_segments(2048, 64, 3);
    let bases = h.model.segments.clone();
    let before: Vec<_> = bases.iter().map(|&b| snapshot(&h, b)).collect();
    assert!(
        before.iter().all(|files| !files[1].0.is_empty()),
        "every segment has offset index entries"
    );
    let options = h.shut_down(true).unwrap();
    fs::remove_file(h.file(bases[1], "index")).unwrap();
    fs::remove_file(h.file(bases[1], "timeindex")).unwrap();
    let first_index = OpenOptions::new()
        .write(true)
        .open(h.file(bases[0], "index"))
        .unwrap();
    first_index.set_len(13).unwrap();
    drop(first_index);
    h.load(options).unwrap();
    must(h.check());
    for (base, old) in bases.iter().zip(&before) {
        let now = snapshot(&h, *base);
        for (x, ((old_bytes, _), (new_bytes, _))) in ["log", "index", "timeindex"]
            .iter()
            .zip(old.iter().zip(&now))
        {
            assert_eq!(
                old_bytes, new_bytes,
                "{x} of segment {base} differs after the rebuild"
            );
        }
    }
}

/// Proves that recovery starts at the segment holding the recovery point:
/// the segments before it are neither re-read nor rewritten. How: build four
/// segments, drop the log unclosed, flip a CRC-covered byte in segment 0
/// (which only a CRC check would notice), load with the recovery point at
/// the base of segment 2, and check that segments 0 and 1 keep their bytes
/// and mtimes, the flipped byte is still served, and exactly segments 2 and
/// 3 were scanned.
#[test]
fn recovery_point_in_middle_segment_leaves_earlier_segments_untouched() {
    let mut h = log_with_segments(1024, 128, 4);
    let bases = h.model.segments.clone();
    let mut options = h.shut_down(false).unwrap();
    options.recovery_point = bases[2];

    let first = h.model.entries[0].clone();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(h.file(bases[0], "log"))
        .unwrap();
    let at = first.bytes.len() as u64 - 1;
    file.write_all_at(&[first.bytes[at as usize] ^ 0xff], at)
        .unwrap();
    drop(file);
    h.model.entries[0].bytes[at as usize] ^= 0xff;
    let untouched: Vec<_> = bases[..2].iter().map(|&b| snapshot(&h, b)).collect();

    let report = h.load(options).unwrap();
    must(h.check());
    assert_eq!(report.recovered_segments, 2, "{report:?}");
    assert_eq!(
        report.bytes_scanned,
        h.model.segment_size(2) + h.model.segment_size(3)
    );
    assert_eq!(report.truncated_bytes, 0);
    for (base, old) in bases[..2].iter().zip(&untouched) {
        assert_eq!(&snapshot(&h, *base), old, "segment {base} was touched");
    }
}

/// Proves that truncating to the last offset of an entry the offset index
/// points at keeps every entry before it. This was a bug: `find_entry`
/// started its scan at the index entry for that very entry, so it never saw
/// the entry before it and `truncate_to` reset the end offset to the segment
/// base while the earlier bytes stayed in the file (log end offset 0 with
/// offsets 0..=1 still on disk). How: with an index entry per entry, append
/// a batch 0..=1 and two legacy messages 2 and 3, truncate to 2; the model
/// test found it as Append, Append(legacy), Truncate(2).
#[test]
fn truncate_to_an_indexed_entry_keeps_earlier_entries() {
    let mut h = Harness::new(log_config(670, 1));
    must(h.apply(&v2(2, 0)));
    must(h.apply(&Op::Append(Payload::Legacy {
        magic: 0,
        records: 2,
    })));
    ok(h.log().truncate_to(2, NOW), "truncate_to").unwrap();
    h.model.truncate(2);
    assert_eq!(h.log().log_end_offset(), 2);
    must(h.check());

    // The same with v2 batches only: 0..=1 and 2..=3, truncated to 3.
    let mut h = Harness::new(log_config(670, 1));
    must(h.apply(&v2(2, 0)));
    must(h.apply(&v2(2, 0)));
    ok(h.log().truncate_to(3, NOW), "truncate_to").unwrap();
    h.model.truncate(3);
    assert_eq!(h.log().log_end_offset(), 2);
    must(h.check());
}

/// A read cut short of `max_bytes` ends at an entry boundary even when the
/// offset index of a trusted segment lies: `Segment::region` checks that an
/// entry really starts where the index says before cutting there (a clean
/// load only checks the index for order, bounds and its last entry, so an
/// entry moved one byte forward is accepted). How: close cleanly, move the position of the second
/// `.index` entry one byte forward (order stays valid), load cleanly, read
/// from offset 0 with `max_bytes` just past the bogus position.
#[test]
fn read_cut_ignores_a_lying_index() {
    let mut h = log_with_segments(1 << 20, 64, 1);
    for _ in 0..6 {
        must(h.apply(&v2(2, 40)));
    }
    let options = h.shut_down(true).unwrap();
    let path = h.file(0, "index");
    let mut index = fs::read(&path).unwrap();
    assert!(index.len() >= 16, "the index has a second entry");
    let position = u32::from_be_bytes(index[12..16].try_into().unwrap());
    index[12..16].copy_from_slice(&(position + 1).to_be_bytes());
    fs::write(&path, &index).unwrap();
    h.load(options).unwrap();
    must(h.check_read(0, position as u64 + 10));
}

/// A roll leaves its fsyncs to the caller's other thread: the recovery
/// point moves only once they are reported done.
#[test]
fn a_roll_moves_the_recovery_point_only_after_its_flush() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = PartitionLog::create(
        dir.path(),
        TopicPartition::new("roll", 0),
        log_config(1 << 20, 4096),
        NOW,
    )
    .unwrap();
    let batch = batch_v2(5, 10, kafka_protocol::records::Compression::None);
    log.append(BytesMut::from(&batch[..]), NOW).unwrap();
    let leo = log.log_end_offset();
    log.roll(NOW).unwrap();
    assert_eq!(log.recovery_point(), 0, "not flushed yet");
    let flush = log.take_roll_flush().expect("a roll flush");
    assert_eq!(flush.up_to, leo);
    assert!(log.take_roll_flush().is_none());
    flush.run().unwrap();
    // A flush reported for another log of the same name says nothing here.
    log.roll_flushed(flush.incarnation + 1, flush.up_to);
    assert_eq!(log.recovery_point(), 0);
    log.roll_flushed(flush.incarnation, flush.up_to);
    assert_eq!(log.recovery_point(), leo);
}
