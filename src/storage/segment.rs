//! One segment of a partition log: `<base offset>.log` with its `.index` and
//! `.timeindex`. It appends validated entries, finds the byte position of an
//! offset, hands out file regions for zero-copy reads, and recovers itself by
//! re-reading and CRC-checking its log.
//!
//! A segment never decides when to roll or delete itself; the partition log
//! does. Its indexes are rebuilt from the log whenever they look wrong.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::batch::{self, AssignedRecords, EntryHeader, HEADER_PEEK_LEN};
use super::config::LogConfig;
use super::error::LogError;
use super::index::{OffsetIndex, TimeIndex};

const SCAN_CHUNK_BYTES: usize = 1 << 20;

/// A byte range of a segment file. Holding it keeps the file open, so a read
/// in flight survives the segment being deleted by retention.
#[derive(Debug, Clone)]
pub struct FileRegion {
    pub file: Arc<File>,
    pub position: u64,
    pub length: u64,
}

impl FileRegion {
    /// Copy the region into memory (tests, and clients that cannot take
    /// sendfile). Fewer bytes come back if the file was truncated since.
    pub fn read_to_vec(&self) -> io::Result<Vec<u8>> {
        let mut out = vec![0u8; self.length as usize];
        let mut done = 0;
        while done < out.len() {
            let n = self
                .file
                .read_at(&mut out[done..], self.position + done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        out.truncate(done);
        Ok(out)
    }
}

/// The entry holding an offset, and the last offset before it.
#[derive(Debug, Clone, Copy)]
pub struct EntryLookup {
    /// Position and header of the first entry whose last offset is at or past
    /// the offset looked up.
    pub found: Option<(u64, EntryHeader)>,
    pub previous_last_offset: Option<i64>,
}

/// What a recovery scan of one segment found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentRecovery {
    pub valid_bytes: u64,
    pub truncated_bytes: u64,
    pub entries: u64,
    /// Why the scan stopped early, when it did.
    pub stopped_at: Option<String>,
}

#[cfg(any(test, feature = "internals"))]
pub fn log_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.log")
}

fn file_path(dir: &Path, base_offset: i64, extension: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}.{extension}"))
}

/// `<dir>/<base offset>.<extension>`; the extension may carry a suffix
/// (`log.cleaned`).
pub fn segment_file(dir: &Path, base_offset: i64, extension: &str) -> PathBuf {
    file_path(dir, base_offset, extension)
}

/// The files of one segment, log last (what a swap renames last).
pub const SEGMENT_EXTENSIONS: [&str; 3] = ["index", "timeindex", "log"];

/// The last offset in a log file, scanning every entry; None when it holds
/// none. Stops at the first entry that fails its checks.
pub fn last_offset_in_file(path: &Path) -> Result<Option<i64>, LogError> {
    let file = File::open(path).map_err(|e| LogError::io(path, e))?;
    let len = file.metadata().map_err(|e| LogError::io(path, e))?.len();
    let mut scanner = EntryScanner::new(&file, 0, len);
    let mut last = None;
    while let ScanStep::Entry { header, .. } =
        scanner.next_verified().map_err(|e| LogError::io(path, e))?
    {
        last = Some(header.last_offset);
    }
    Ok(last)
}

#[derive(Debug)]
pub struct Segment {
    base_offset: i64,
    dir: PathBuf,
    log: Arc<File>,
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    next_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    bytes_since_last_index_entry: u64,
    index_interval_bytes: u64,
    /// When the segment was created or loaded, for `segment.ms`.
    created_ms: i64,
    /// Bytes written since the last fsync.
    dirty: bool,
}

impl Segment {
    /// A new, empty segment starting at `base_offset`.
    pub fn create(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Segment, LogError> {
        Self::create_with_suffix(dir, base_offset, config, now_ms, "")
    }

    /// A new segment whose files carry `suffix` (`00..0.log.cleaned`): the
    /// cleaner writes one, the log renames its files into place. An empty
    /// suffix is a plain segment.
    pub fn create_with_suffix(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        suffix: &str,
    ) -> Result<Segment, LogError> {
        let suffix = if suffix.is_empty() {
            String::new()
        } else {
            format!(".{suffix}")
        };
        let log_path = file_path(dir, base_offset, &format!("log{suffix}"));
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&log_path)
            .map_err(|e| LogError::io(&log_path, e))?;
        let index_path = file_path(dir, base_offset, &format!("index{suffix}"));
        let time_path = file_path(dir, base_offset, &format!("timeindex{suffix}"));
        Ok(Segment {
            base_offset,
            dir: dir.to_path_buf(),
            log: Arc::new(log),
            size: 0,
            offset_index: OffsetIndex::create(&index_path, base_offset, config.segment_index_bytes)
                .map_err(|e| LogError::io(&index_path, e))?,
            time_index: TimeIndex::create(&time_path, base_offset, config.segment_index_bytes)
                .map_err(|e| LogError::io(&time_path, e))?,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            bytes_since_last_index_entry: 0,
            index_interval_bytes: config.index_interval_bytes,
            created_ms: now_ms,
            dirty: false,
        })
    }

    /// Open a segment that was cleanly written (or lies below the recovery
    /// point). Indexes that fail their checks are rebuilt by a recovery scan.
    pub fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Segment, LogError> {
        let log_path = file_path(dir, base_offset, "log");
        let log = open_rw(&log_path)?;
        let size = log
            .metadata()
            .map_err(|e| LogError::io(&log_path, e))?
            .len();
        let offset_index = match OffsetIndex::open(
            &file_path(dir, base_offset, "index"),
            base_offset,
            config.segment_index_bytes,
            size,
        ) {
            Ok(index) => index,
            Err(e) => return Self::rebuild(dir, base_offset, config, now_ms, &e.to_string()),
        };
        let tail = match scan_tail(&log, &log_path, size, base_offset, &offset_index) {
            Ok(tail) => tail,
            Err(e) => return Self::rebuild(dir, base_offset, config, now_ms, &e.to_string()),
        };
        let mut segment = Segment {
            base_offset,
            dir: dir.to_path_buf(),
            log: Arc::new(log),
            size,
            offset_index,
            time_index: match TimeIndex::open(
                &file_path(dir, base_offset, "timeindex"),
                base_offset,
                config.segment_index_bytes,
                tail.next_offset,
            ) {
                Ok(time_index) => time_index,
                Err(e) => return Self::rebuild(dir, base_offset, config, now_ms, &e.to_string()),
            },
            next_offset: tail.next_offset,
            max_timestamp: tail.max_timestamp,
            offset_of_max_timestamp: tail.offset_of_max_timestamp,
            bytes_since_last_index_entry: tail.bytes_since_last_index_entry,
            index_interval_bytes: config.index_interval_bytes,
            created_ms: now_ms,
            dirty: false,
        };
        if let Some(ts) = segment.time_index.max_timestamp() {
            if ts > segment.max_timestamp {
                segment.max_timestamp = ts;
            }
        }
        Ok(segment)
    }

    fn rebuild(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        reason: &str,
    ) -> Result<Segment, LogError> {
        log::warn!(
            "rebuilding indexes of {} because {reason}",
            file_path(dir, base_offset, "log").display()
        );
        Self::recover(dir, base_offset, config, now_ms).map(|(segment, _)| segment)
    }

    /// Re-read the whole log: every entry must fit in the file, pass its CRC
    /// and continue the offsets. The log is cut at the first entry that does
    /// not, and both indexes are rebuilt from what remains.
    pub fn recover(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<(Segment, SegmentRecovery), LogError> {
        let log_path = file_path(dir, base_offset, "log");
        let log = open_rw(&log_path)?;
        let file_len = log
            .metadata()
            .map_err(|e| LogError::io(&log_path, e))?
            .len();
        let mut segment = Segment::create_indexes_for(dir, base_offset, config, log, now_ms)?;
        let log = Arc::clone(&segment.log);
        let mut scanner = EntryScanner::new(&log, 0, file_len);
        let mut outcome = SegmentRecovery::default();
        let mut expected_next = base_offset;
        loop {
            let step = scanner
                .next_verified()
                .map_err(|e| LogError::io(&log_path, e))?;
            let (position, header) = match step {
                ScanStep::End => break,
                ScanStep::Invalid { reason, .. } => {
                    outcome.stopped_at = Some(reason);
                    break;
                }
                ScanStep::Entry { position, header } => (position, header),
            };
            let first = header.first_offset().unwrap_or(header.last_offset);
            if first < expected_next || header.last_offset < first {
                outcome.stopped_at = Some(format!(
                    "entry at byte {position} has offsets {first}..={} but {expected_next} was next",
                    header.last_offset
                ));
                break;
            }
            segment.index_entry(position, &header);
            segment.size = position + header.size as u64;
            expected_next = header.last_offset + 1;
            outcome.entries += 1;
        }
        segment.next_offset = expected_next;
        outcome.valid_bytes = segment.size;
        outcome.truncated_bytes = file_len - segment.size;
        if outcome.truncated_bytes > 0 {
            segment
                .log
                .set_len(segment.size)
                .map_err(|e| LogError::io(&log_path, e))?;
            segment
                .log
                .sync_all()
                .map_err(|e| LogError::io(&log_path, e))?;
        }
        segment.flush_indexes(true)?;
        Ok((segment, outcome))
    }

    fn create_indexes_for(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        log: File,
        now_ms: i64,
    ) -> Result<Segment, LogError> {
        let index_path = file_path(dir, base_offset, "index");
        let time_path = file_path(dir, base_offset, "timeindex");
        Ok(Segment {
            base_offset,
            dir: dir.to_path_buf(),
            log: Arc::new(log),
            size: 0,
            offset_index: OffsetIndex::create(&index_path, base_offset, config.segment_index_bytes)
                .map_err(|e| LogError::io(&index_path, e))?,
            time_index: TimeIndex::create(&time_path, base_offset, config.segment_index_bytes)
                .map_err(|e| LogError::io(&time_path, e))?,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            bytes_since_last_index_entry: 0,
            index_interval_bytes: config.index_interval_bytes,
            created_ms: now_ms,
            dirty: false,
        })
    }

    /// Parse the entry header at `position`; None at the end of the file.
    fn read_header_at(&self, position: u64) -> Result<Option<EntryHeader>, LogError> {
        read_header_at(&self.log, &self.log_path(), self.size, position)
    }

    fn index_entry(&mut self, position: u64, header: &EntryHeader) {
        if header.max_timestamp > self.max_timestamp {
            self.max_timestamp = header.max_timestamp;
            self.offset_of_max_timestamp = header.last_offset;
        }
        self.index_at(position, header.size as u64, header.last_offset);
    }

    fn index_at(&mut self, position: u64, size: u64, last_offset: i64) {
        if self.bytes_since_last_index_entry > 0
            && self.bytes_since_last_index_entry >= self.index_interval_bytes
        {
            self.offset_index.append(last_offset, position);
            self.time_index
                .maybe_append(self.max_timestamp, self.offset_of_max_timestamp);
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += size;
    }

    /// Append entries that [`batch::assign_offsets`] accepted.
    pub fn append(
        &mut self,
        records: &AssignedRecords,
        config: &LogConfig,
    ) -> Result<(), LogError> {
        let position = self.size;
        let prefixes = records.prefixes();
        write_all_vectored_at(&self.log, records.chunks(&prefixes), position)
            .map_err(|e| LogError::io(&self.log_path(), e))?;
        self.index_interval_bytes = config.index_interval_bytes;
        for entry in &records.entries {
            if entry.max_timestamp > self.max_timestamp {
                self.max_timestamp = entry.max_timestamp;
                self.offset_of_max_timestamp = entry.last_offset;
            }
            self.index_at(
                position + entry.position as u64,
                entry.size as u64,
                entry.last_offset,
            );
        }
        self.size += records.bytes.len() as u64;
        self.next_offset = records.last_offset + 1;
        self.dirty = true;
        Ok(())
    }

    /// Append entries whose offsets were assigned elsewhere (a leader), as
    /// long as they continue this segment.
    pub fn append_verified(&mut self, bytes: &[u8], config: &LogConfig) -> Result<(), LogError> {
        let mut entries = Vec::new();
        let mut position = 0;
        let mut next = self.next_offset;
        while position < bytes.len() {
            let header = batch::validate_entry(&bytes[position..], position)?;
            let first = header.first_offset().unwrap_or(header.last_offset);
            if first < next {
                return Err(LogError::NonMonotonicOffset {
                    offset: first,
                    expected: next,
                });
            }
            entries.push(batch::EntryMeta {
                position,
                size: header.size,
                offset_field: header.offset_field,
                last_offset: header.last_offset,
                max_timestamp: header.max_timestamp,
                magic: header.magic,
            });
            next = header.last_offset + 1;
            position += header.size;
        }
        let records = AssignedRecords {
            bytes: bytes::Bytes::copy_from_slice(bytes),
            first_offset: self.next_offset,
            last_offset: next - 1,
            record_count: (next - self.next_offset) as u64,
            log_append_time: None,
            entries,
            partition_leader_epoch: None,
        };
        self.append(&records, config)
    }

    /// The first entry whose last offset is at or past `offset`, with its
    /// position, and the last offset of the entry before it.
    pub fn find_entry(&self, offset: i64) -> Result<EntryLookup, LogError> {
        // Start at an entry ending before `offset`, so the scan always sees
        // the entry before the one found (`previous_last_offset`).
        let (indexed_offset, mut position) = self.offset_index.lookup(offset.saturating_sub(1));
        let mut previous_last = None;
        if position > 0 {
            match self.read_header_at(position) {
                Ok(Some(h)) if h.last_offset == indexed_offset => {}
                other => {
                    // A damaged index must cost time, never correctness.
                    log::warn!(
                        "index of {} disagrees with its log at byte {position} ({other:?}); scanning from the start",
                        self.log_path().display()
                    );
                    position = 0;
                }
            }
        }
        while position < self.size {
            let header = match self.read_header_at(position)? {
                Some(h) => h,
                None => break,
            };
            if header.last_offset >= offset {
                return Ok(EntryLookup {
                    found: Some((position, header)),
                    previous_last_offset: previous_last,
                });
            }
            previous_last = Some(header.last_offset);
            position += header.size as u64;
        }
        Ok(EntryLookup {
            found: None,
            previous_last_offset: previous_last,
        })
    }

    /// Byte position where `offset`'s entry starts, or the segment size when
    /// the offset lies past this segment.
    pub fn position_of(&self, offset: i64) -> Result<u64, LogError> {
        Ok(match self.find_entry(offset)?.found {
            Some((position, _)) => position,
            None => self.size,
        })
    }

    /// A region from `position`, at most `max_bytes` long and ending before
    /// `end_position`, but never shorter than `min_bytes` (the first entry).
    pub fn region(
        &self,
        position: u64,
        max_bytes: u64,
        min_bytes: u64,
        end_position: u64,
    ) -> FileRegion {
        let available = end_position.min(self.size).saturating_sub(position);
        let mut length = max_bytes.max(min_bytes).min(available);
        if length < available {
            // Cut at an entry boundary when the index knows one past the
            // first entry: a partial entry at the end would be sent again by
            // the next fetch (Kafka sends it anyway; clients drop it).
            if let Some((offset, boundary)) = self.offset_index.floor_position(position + length) {
                // The index is a cache: cut only where its entry really starts.
                let verified = boundary >= position + min_bytes
                    && boundary > position
                    && matches!(self.read_header_at(boundary), Ok(Some(h)) if h.last_offset == offset);
                if verified {
                    length = boundary - position;
                }
            }
        }
        FileRegion {
            file: Arc::clone(&self.log),
            position,
            length,
        }
    }

    /// Drop every entry holding `offset` or later. Returns the new end offset.
    pub fn truncate_to(&mut self, offset: i64) -> Result<i64, LogError> {
        let EntryLookup {
            found,
            previous_last_offset: previous_last,
        } = self.find_entry(offset)?;
        let Some((position, _)) = found else {
            return Ok(self.next_offset);
        };
        let new_next = previous_last.map_or(self.base_offset, |last| last + 1);
        let log_path = self.log_path();
        self.log
            .set_len(position)
            .map_err(|e| LogError::io(&log_path, e))?;
        self.size = position;
        self.offset_index
            .truncate_to(new_next)
            .map_err(|e| LogError::io(&log_path, e))?;
        self.time_index
            .truncate_to(new_next)
            .map_err(|e| LogError::io(&log_path, e))?;
        let tail = scan_tail(
            &self.log,
            &log_path,
            self.size,
            self.base_offset,
            &self.offset_index,
        )?;
        self.max_timestamp = tail
            .max_timestamp
            .max(self.time_index.max_timestamp().unwrap_or(-1));
        self.offset_of_max_timestamp = tail.offset_of_max_timestamp;
        self.bytes_since_last_index_entry = tail.bytes_since_last_index_entry;
        self.next_offset = new_next;
        self.dirty = true;
        Ok(new_next)
    }

    /// First record at or after `timestamp` in this segment: its offset and
    /// timestamp.
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: i64,
        log_start_offset: i64,
    ) -> Result<Option<(i64, i64)>, LogError> {
        if self.max_timestamp < timestamp {
            return Ok(None);
        }
        let start_offset = self.time_index.lookup(timestamp).max(log_start_offset);
        let lookup = self.find_entry(start_offset)?;
        let Some((mut position, _)) = lookup.found else {
            return Ok(None);
        };
        // Offsets are contiguous: an entry starts right after the previous
        // one ends (what a legacy compressed wrapper does not say itself).
        let mut next_first = lookup
            .previous_last_offset
            .map_or(self.base_offset, |last| last + 1);
        while position < self.size {
            let Some(header) = self.read_header_at(position)? else {
                break;
            };
            if header.max_timestamp >= timestamp && header.last_offset >= log_start_offset {
                let mut entry = vec![0u8; header.size];
                self.log
                    .read_exact_at(&mut entry, position)
                    .map_err(|e| LogError::io(&self.log_path(), e))?;
                return Ok(first_record_at_or_after(
                    &entry,
                    &header,
                    next_first,
                    timestamp,
                    log_start_offset,
                ));
            }
            next_first = header.last_offset + 1;
            position += header.size as u64;
        }
        Ok(None)
    }

    pub fn flush(&mut self) -> Result<(), LogError> {
        if self.dirty {
            self.log
                .sync_data()
                .map_err(|e| LogError::io(&self.log_path(), e))?;
            self.dirty = false;
        }
        self.flush_indexes(true)
    }

    /// Write the index entries still in memory, without an fsync (a roll:
    /// the fsync follows on another thread, `RollFlush`).
    pub fn write_indexes(&mut self) -> Result<(), LogError> {
        self.flush_indexes(false)
    }

    /// Another thread fsynced everything written so far (`RollFlush`).
    pub fn mark_flushed(&mut self) {
        self.dirty = false;
    }

    /// The index files' paths.
    pub fn index_paths(&self) -> [PathBuf; 2] {
        [
            file_path(&self.dir, self.base_offset, "index"),
            file_path(&self.dir, self.base_offset, "timeindex"),
        ]
    }

    fn flush_indexes(&mut self, sync: bool) -> Result<(), LogError> {
        let path = self.log_path();
        self.offset_index
            .flush(sync)
            .map_err(|e| LogError::io(&path, e))?;
        self.time_index
            .flush(sync)
            .map_err(|e| LogError::io(&path, e))
    }

    /// Remove the segment's files. Open regions keep reading the old bytes.
    pub fn delete(self) -> Result<(), LogError> {
        for extension in ["log", "index", "timeindex"] {
            let path = file_path(&self.dir, self.base_offset, extension);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io(&path, e)),
            }
        }
        Ok(())
    }

    /// The open log file (the cleaner reads closed segments through it).
    pub fn file(&self) -> Arc<File> {
        Arc::clone(&self.log)
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }
    pub fn created_ms(&self) -> i64 {
        self.created_ms
    }
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }
    /// Drop both indexes from memory if unused since the previous call
    /// (they are read back on next use); how many were dropped.
    pub fn evict_idle_indexes(&mut self) -> usize {
        usize::from(self.offset_index.evict_if_idle())
            + usize::from(self.time_index.evict_if_idle())
    }

    /// Drop both indexes from memory (all their entries are on disk).
    pub fn evict_indexes(&mut self) {
        self.offset_index.evict();
        self.time_index.evict();
    }

    /// How many of the two indexes are in memory now.
    #[cfg(any(test, feature = "internals"))]
    pub fn indexes_in_memory(&self) -> usize {
        usize::from(self.offset_index.is_loaded()) + usize::from(self.time_index.is_loaded())
    }

    pub fn indexes_full(&self) -> bool {
        self.offset_index.is_full() || self.time_index.is_full()
    }
    pub fn log_path(&self) -> PathBuf {
        file_path(&self.dir, self.base_offset, "log")
    }
}

/// Parse the entry header at `position` of a log of `size` bytes; None at the end.
fn read_header_at(
    log: &File,
    path: &Path,
    size: u64,
    position: u64,
) -> Result<Option<EntryHeader>, LogError> {
    if position >= size {
        return Ok(None);
    }
    let mut buf = [0u8; HEADER_PEEK_LEN];
    let want = ((size - position) as usize).min(HEADER_PEEK_LEN);
    log.read_exact_at(&mut buf[..want], position)
        .map_err(|e| LogError::io(path, e))?;
    EntryHeader::parse(&buf[..want], position as usize)
        .map(Some)
        .map_err(|e| LogError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
}

/// The end of a segment as learnt from its headers after the last index entry.
struct Tail {
    next_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    bytes_since_last_index_entry: u64,
}

/// Walk the headers after the last index entry of a trusted segment. Err
/// carries why the walk failed; the caller then recovers the segment.
fn scan_tail(
    log: &File,
    path: &Path,
    size: u64,
    base_offset: i64,
    offset_index: &OffsetIndex,
) -> Result<Tail, LogError> {
    let corrupt = |reason: String| LogError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let (mut offset, mut position) = offset_index.lookup(i64::MAX);
    let mut tail = Tail {
        next_offset: base_offset,
        max_timestamp: -1,
        offset_of_max_timestamp: base_offset,
        bytes_since_last_index_entry: 0,
    };
    if position > 0 {
        tail.next_offset = offset + 1;
        match read_header_at(log, path, size, position) {
            Ok(Some(h)) if h.last_offset == offset => {}
            other => {
                return Err(corrupt(format!(
                    "index entry ({offset}, {position}) is wrong: {other:?}"
                )))
            }
        }
    }
    while position < size {
        let header = match read_header_at(log, path, size, position) {
            Ok(Some(h)) => h,
            Ok(None) => return Err(corrupt(format!("no entry at byte {position}"))),
            Err(e) => return Err(e),
        };
        if position + header.size as u64 > size || header.last_offset < offset {
            return Err(corrupt(format!("entry at byte {position} is out of place")));
        }
        if header.max_timestamp > tail.max_timestamp {
            tail.max_timestamp = header.max_timestamp;
            tail.offset_of_max_timestamp = header.last_offset;
        }
        offset = header.last_offset;
        tail.next_offset = header.last_offset + 1;
        position += header.size as u64;
        tail.bytes_since_last_index_entry += header.size as u64;
    }
    Ok(tail)
}

/// `pwritev` every slice, in order, at `position`: one syscall for many
/// entries and their new offset fields, without gathering them first.
fn write_all_vectored_at(file: &File, mut slices: Vec<&[u8]>, mut position: u64) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // The kernel takes at most IOV_MAX (1024 on Linux) slices per call.
    const IOV_MAX: usize = 1024;
    slices.retain(|s| !s.is_empty());
    let mut first = 0;
    while first < slices.len() {
        let last = (first + IOV_MAX).min(slices.len());
        let iovecs: Vec<libc::iovec> = slices[first..last]
            .iter()
            .map(|s| libc::iovec {
                iov_base: s.as_ptr() as *mut libc::c_void,
                iov_len: s.len(),
            })
            .collect();
        // SAFETY: every iovec points into a live slice for the whole call;
        // the descriptor is open.
        let written = unsafe {
            libc::pwritev(
                file.as_raw_fd(),
                iovecs.as_ptr(),
                iovecs.len() as libc::c_int,
                position as libc::off_t,
            )
        };
        if written < 0 {
            let error = io::Error::last_os_error();
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        if written == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "pwritev wrote nothing",
            ));
        }
        position += written as u64;
        let mut left = written as usize;
        while left > 0 && first < slices.len() {
            if left >= slices[first].len() {
                left -= slices[first].len();
                first += 1;
            } else {
                slices[first] = &slices[first][left..];
                left = 0;
            }
        }
    }
    Ok(())
}

fn open_rw(path: &Path) -> Result<File, LogError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| LogError::io(path, e))
}

fn first_record_at_or_after(
    entry: &[u8],
    header: &EntryHeader,
    first_offset: i64,
    timestamp: i64,
    log_start_offset: i64,
) -> Option<(i64, i64)> {
    if header.log_append_time && header.magic == 2 {
        return Some((
            header.offset_field.max(log_start_offset),
            header.max_timestamp,
        ));
    }
    let records = match batch::decode_entry(entry, 0) {
        Ok(records) => records,
        Err(e) => {
            // Never answer "no such offset" for a batch we cannot open: its
            // max timestamp reaches the target, so its first offset does too.
            log::warn!("cannot decode a batch for a timestamp lookup: {e}");
            let first = header.first_offset().unwrap_or(first_offset);
            return Some((first.max(log_start_offset), header.max_timestamp));
        }
    };
    let count = records.len() as i64;
    records.iter().enumerate().find_map(|(i, record)| {
        // Legacy compressed wrappers carry relative inner offsets.
        let offset = match header.first_offset() {
            Some(_) => record.offset,
            None => header.last_offset - (count - 1) + i as i64,
        };
        (record.timestamp >= timestamp && offset >= log_start_offset)
            .then_some((offset, record.timestamp))
    })
}

/// One step of a sequential scan over a log file.
enum ScanStep {
    Entry { position: u64, header: EntryHeader },
    Invalid { reason: String },
    End,
}

/// Reads a log file front to back in large chunks, checking each entry.
struct EntryScanner<'a> {
    file: &'a File,
    file_len: u64,
    buf: Vec<u8>,
    /// File position of `buf[0]`.
    buf_start: u64,
    cursor: usize,
}

impl<'a> EntryScanner<'a> {
    fn new(file: &'a File, start: u64, file_len: u64) -> Self {
        EntryScanner {
            file,
            file_len,
            buf: Vec::new(),
            buf_start: start,
            cursor: 0,
        }
    }

    /// Make `want` bytes available from the cursor; false at end of file.
    fn fill(&mut self, want: usize) -> io::Result<bool> {
        if self.buf.len() - self.cursor >= want {
            return Ok(true);
        }
        let position = self.buf_start + self.cursor as u64;
        if position + want as u64 > self.file_len {
            return Ok(false);
        }
        self.buf.drain(..self.cursor);
        self.buf_start = position;
        self.cursor = 0;
        let target = want
            .max(SCAN_CHUNK_BYTES)
            .min((self.file_len - position) as usize);
        let have = self.buf.len();
        self.buf.resize(target, 0);
        self.file
            .read_exact_at(&mut self.buf[have..], position + have as u64)?;
        Ok(true)
    }

    fn next_verified(&mut self) -> io::Result<ScanStep> {
        let position = self.buf_start + self.cursor as u64;
        if position >= self.file_len {
            return Ok(ScanStep::End);
        }
        let peek = ((self.file_len - position) as usize).min(HEADER_PEEK_LEN);
        self.fill(peek)?;
        let header = match EntryHeader::parse(
            &self.buf[self.cursor..self.cursor + peek],
            position as usize,
        ) {
            Ok(h) => h,
            Err(e) => {
                return Ok(ScanStep::Invalid {
                    reason: e.to_string(),
                })
            }
        };
        if !self.fill(header.size)? {
            return Ok(ScanStep::Invalid {
                reason: format!(
                    "entry at byte {position} declares {} bytes but the file ends at {}",
                    header.size, self.file_len
                ),
            });
        }
        let entry = &self.buf[self.cursor..self.cursor + header.size];
        if let Err(e) = batch::validate_entry(entry, position as usize) {
            return Ok(ScanStep::Invalid {
                reason: e.to_string(),
            });
        }
        self.cursor += header.size;
        Ok(ScanStep::Entry { position, header })
    }
}
