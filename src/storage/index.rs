//! The two sparse indexes of a segment, in Kafka's on-disk entry layouts:
//! `.index` maps a relative offset (4 bytes) to a byte position (4 bytes);
//! `.timeindex` maps a timestamp (8 bytes) to a relative offset (4 bytes).
//!
//! Entries are read into memory when first used, written through on flush,
//! and dropped from memory again when idle. An index is a
//! cache of its log: it is checked on load and rebuilt from the log whenever
//! it looks wrong, so it must never be the only copy of anything.

use std::cell::{Cell, Ref, RefCell};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One fixed-size entry of an index file.
pub trait IndexEntry: Copy + std::fmt::Debug {
    const SIZE: usize;
    /// The entry's offset, relative to its segment's base offset.
    fn relative_offset(&self) -> u32;
    fn encode(&self, out: &mut [u8]);
    fn decode(bytes: &[u8]) -> Self;
}

/// `.index` entry: offset relative to the segment base, byte position in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    pub relative_offset: u32,
    pub position: u32,
}

impl IndexEntry for OffsetPosition {
    const SIZE: usize = 8;
    fn relative_offset(&self) -> u32 {
        self.relative_offset
    }
    fn encode(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&self.relative_offset.to_be_bytes());
        out[4..8].copy_from_slice(&self.position.to_be_bytes());
    }
    fn decode(bytes: &[u8]) -> Self {
        OffsetPosition {
            relative_offset: u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            position: u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        }
    }
}

/// `.timeindex` entry: a timestamp and the relative offset holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub timestamp: i64,
    pub relative_offset: u32,
}

impl IndexEntry for TimestampOffset {
    const SIZE: usize = 12;
    fn relative_offset(&self) -> u32 {
        self.relative_offset
    }
    fn encode(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.timestamp.to_be_bytes());
        out[8..12].copy_from_slice(&self.relative_offset.to_be_bytes());
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&bytes[..8]);
        TimestampOffset {
            timestamp: i64::from_be_bytes(ts),
            relative_offset: u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
        }
    }
}

/// Why an index file on disk cannot be trusted.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("index {path} cannot be read: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("index {path} is corrupt: {reason}")]
    Corrupt { path: PathBuf, reason: String },
}

/// An index file and its entries in memory. Entries past `persisted` have not
/// reached the file yet. No file descriptor is kept: the entries are read
/// when first used, and the file is opened only to write pending entries or
/// to shrink it, so a segment holds one open file (its log), not three, and
/// a broker with tens of thousands of segments stays inside its open-file
/// limit. Entries that are all on disk and unused since the last
/// [`IndexFile::evict_if_idle`] leave memory, so what stays in memory is
/// the indexes in use, not every index of every segment.
#[derive(Debug)]
pub struct IndexFile<E: IndexEntry> {
    path: PathBuf,
    /// `None`: evicted (or not read yet); read from the file on next use.
    entries: RefCell<Option<Vec<E>>>,
    /// Read since the last `evict_if_idle`.
    used: Cell<bool>,
    len: usize,
    persisted: usize,
    max_entries: usize,
}

impl<E: IndexEntry> IndexFile<E> {
    /// A new, empty index (an existing file is emptied).
    pub fn create(path: &Path, max_bytes: u64) -> io::Result<Self> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Self::with_entries(path, Vec::new(), max_bytes))
    }

    /// Read an existing index. A missing file or a size that is not a whole
    /// number of entries is an error; the caller rebuilds.
    pub fn open(path: &Path, max_bytes: u64) -> Result<Self, IndexError> {
        let io_err = |source| IndexError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len() as usize;
        if !len.is_multiple_of(E::SIZE) {
            return Err(IndexError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("size {len} is not a multiple of {}", E::SIZE),
            });
        }
        let entries = read_entries(&file, len / E::SIZE).map_err(io_err)?;
        let mut index = Self::with_entries(path, entries, max_bytes);
        index.persisted = index.len;
        Ok(index)
    }

    fn with_entries(path: &Path, entries: Vec<E>, max_bytes: u64) -> Self {
        IndexFile {
            path: path.to_path_buf(),
            len: entries.len(),
            entries: RefCell::new(Some(entries)),
            used: Cell::new(false),
            persisted: 0,
            max_entries: (max_bytes as usize / E::SIZE).max(1),
        }
    }

    fn open_for_writing(&self) -> io::Result<File> {
        OpenOptions::new().write(true).open(&self.path)
    }

    /// The entries, read from the file first if they were evicted. A file
    /// that cannot be read gives no entries (a scan from the segment start:
    /// an index costs time when it fails, never correctness) and is tried
    /// again on the next use.
    pub fn entries(&self) -> Ref<'_, [E]> {
        self.used.set(true);
        if self.entries.borrow().is_none() {
            match self.reload() {
                Ok(entries) => *self.entries.borrow_mut() = Some(entries),
                Err(e) => log::warn!("cannot read index {}: {e}", self.path.display()),
            }
        }
        Ref::map(self.entries.borrow(), |entries| {
            entries.as_deref().unwrap_or(&[])
        })
    }

    fn reload(&self) -> io::Result<Vec<E>> {
        read_entries(&File::open(&self.path)?, self.len)
    }

    /// The entries for a change, read first if evicted.
    fn entries_mut(&mut self) -> io::Result<&mut Vec<E>> {
        let loaded = self.entries.get_mut();
        if loaded.is_none() {
            let entries = read_entries(&File::open(&self.path)?, self.len)?;
            *loaded = Some(entries);
        }
        match loaded {
            Some(entries) => Ok(entries),
            None => Err(io::Error::other("index entries vanished while loading")),
        }
    }

    pub fn last(&self) -> Option<E> {
        self.entries().last().copied()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len >= self.max_entries
    }

    #[cfg(any(test, feature = "internals"))]
    /// Whether the entries are in memory now.
    pub fn is_loaded(&self) -> bool {
        self.entries.borrow().is_some()
    }

    pub fn corrupt(&self, reason: String) -> IndexError {
        IndexError::Corrupt {
            path: self.path.clone(),
            reason,
        }
    }

    /// Add an entry. One that cannot be added (the evicted entries cannot
    /// be read back) is dropped with a log line: lookups then scan further.
    pub fn push(&mut self, entry: E) {
        match self.entries_mut() {
            Ok(entries) => {
                entries.push(entry);
                self.len += 1;
            }
            Err(e) => log::warn!("index {} dropped an entry: {e}", self.path.display()),
        }
    }

    /// Keep the first `len` entries, on disk too.
    pub fn truncate(&mut self, len: usize) -> io::Result<()> {
        if len < self.len {
            self.entries_mut()?.truncate(len);
            self.len = len;
            if self.persisted > len {
                self.persisted = len;
                self.open_for_writing()?.set_len((len * E::SIZE) as u64)?;
            }
        }
        Ok(())
    }

    /// Write the entries not yet on disk; fsync when `sync`.
    pub fn flush(&mut self, sync: bool) -> io::Result<()> {
        let pending = self.persisted < self.len;
        if !pending && !sync {
            return Ok(());
        }
        let file = self.open_for_writing()?;
        if pending {
            let from = self.persisted;
            let entries = self.entries_mut()?;
            let pending = &entries[from..];
            let mut bytes = vec![0u8; pending.len() * E::SIZE];
            for (entry, out) in pending.iter().zip(bytes.chunks_exact_mut(E::SIZE)) {
                entry.encode(out);
            }
            file.write_all_at(&bytes, (from * E::SIZE) as u64)?;
            self.persisted = self.len;
        }
        if sync {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Drop the entries from memory when all are on disk and none was read
    /// since the previous call; `true` when they were dropped.
    pub fn evict_if_idle(&mut self) -> bool {
        let idle = !self.used.replace(false);
        self.evict_when(idle)
    }

    /// Drop the entries from memory when all are on disk.
    pub fn evict(&mut self) -> bool {
        self.evict_when(true)
    }

    fn evict_when(&mut self, idle: bool) -> bool {
        let loaded = self.entries.get_mut();
        if idle && loaded.is_some() && self.persisted == self.len {
            *loaded = None;
            return true;
        }
        false
    }
}

/// The first `count` entries of an index file.
fn read_entries<E: IndexEntry>(file: &File, count: usize) -> io::Result<Vec<E>> {
    let mut bytes = vec![0u8; count * E::SIZE];
    file.read_exact_at(&mut bytes, 0)?;
    Ok(bytes.chunks_exact(E::SIZE).map(E::decode).collect())
}

/// A sparse index of one segment: entries relative to its base offset.
#[derive(Debug)]
pub struct SparseIndex<E: IndexEntry> {
    base_offset: i64,
    file: IndexFile<E>,
}

/// The `.index` of a segment.
pub type OffsetIndex = SparseIndex<OffsetPosition>;
/// The `.timeindex` of a segment.
pub type TimeIndex = SparseIndex<TimestampOffset>;

impl<E: IndexEntry> SparseIndex<E> {
    pub fn create(path: &Path, base_offset: i64, max_bytes: u64) -> io::Result<Self> {
        Ok(SparseIndex {
            base_offset,
            file: IndexFile::create(path, max_bytes)?,
        })
    }

    /// Drop entries for offsets at or past `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> io::Result<()> {
        let target = offset - self.base_offset;
        let keep = self
            .file
            .entries()
            .partition_point(|e| i64::from(e.relative_offset()) < target);
        self.file.truncate(keep)
    }

    pub fn is_full(&self) -> bool {
        self.file.is_full()
    }

    /// See [`IndexFile::evict_if_idle`].
    pub fn evict_if_idle(&mut self) -> bool {
        self.file.evict_if_idle()
    }

    pub fn evict(&mut self) -> bool {
        self.file.evict()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_loaded(&self) -> bool {
        self.file.is_loaded()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.file.len()
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn flush(&mut self, sync: bool) -> io::Result<()> {
        self.file.flush(sync)
    }
}

impl SparseIndex<OffsetPosition> {
    /// Open and sanity-check against the log's size: offsets strictly
    /// increasing, positions increasing and inside the log.
    pub fn open(
        path: &Path,
        base_offset: i64,
        max_bytes: u64,
        log_size: u64,
    ) -> Result<Self, IndexError> {
        let file = IndexFile::<OffsetPosition>::open(path, max_bytes)?;
        let mut previous: Option<OffsetPosition> = None;
        for entry in file.entries().iter() {
            if entry.position as u64 >= log_size {
                return Err(file.corrupt(format!(
                    "entry {entry:?} points past the log end {log_size}"
                )));
            }
            if let Some(prev) = previous {
                if entry.relative_offset <= prev.relative_offset || entry.position <= prev.position
                {
                    return Err(file.corrupt(format!("entry {entry:?} is out of order")));
                }
            }
            previous = Some(*entry);
        }
        Ok(SparseIndex { base_offset, file })
    }

    pub fn append(&mut self, offset: i64, position: u64) {
        let entry = OffsetPosition {
            relative_offset: (offset - self.base_offset) as u32,
            position: position as u32,
        };
        if self
            .file
            .last()
            .is_none_or(|last| last.relative_offset < entry.relative_offset)
        {
            self.file.push(entry);
        }
    }

    /// The largest indexed offset at or below `offset`, and its position;
    /// the segment start when there is none.
    pub fn lookup(&self, offset: i64) -> (i64, u64) {
        let entries = self.file.entries();
        let target = offset - self.base_offset;
        let at = entries.partition_point(|e| (e.relative_offset as i64) <= target);
        match at.checked_sub(1).map(|i| entries[i]) {
            Some(e) => (
                self.base_offset + e.relative_offset as i64,
                e.position as u64,
            ),
            None => (self.base_offset, 0),
        }
    }

    /// The indexed entry with the largest position at or below `position`:
    /// (its last offset, its position).
    pub fn floor_position(&self, position: u64) -> Option<(i64, u64)> {
        let entries = self.file.entries();
        let at = entries.partition_point(|e| e.position as u64 <= position);
        at.checked_sub(1).map(|i| {
            (
                self.base_offset + entries[i].relative_offset as i64,
                entries[i].position as u64,
            )
        })
    }
}

impl SparseIndex<TimestampOffset> {
    /// Open and sanity-check: timestamps and offsets never go backwards, and
    /// no offset lies at or past the segment's end `next_offset`.
    pub fn open(
        path: &Path,
        base_offset: i64,
        max_bytes: u64,
        next_offset: i64,
    ) -> Result<Self, IndexError> {
        let file = IndexFile::<TimestampOffset>::open(path, max_bytes)?;
        let mut previous: Option<TimestampOffset> = None;
        for entry in file.entries().iter() {
            if base_offset + entry.relative_offset as i64 >= next_offset {
                return Err(file.corrupt(format!(
                    "entry {entry:?} points past the segment end {next_offset}"
                )));
            }
            if let Some(prev) = previous {
                if entry.timestamp <= prev.timestamp || entry.relative_offset < prev.relative_offset
                {
                    return Err(file.corrupt(format!("entry {entry:?} is out of order")));
                }
            }
            previous = Some(*entry);
        }
        Ok(SparseIndex { base_offset, file })
    }

    /// Record `timestamp` at `offset` when it is a new maximum.
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64) {
        if timestamp < 0 {
            return;
        }
        if self
            .file
            .last()
            .is_none_or(|last| last.timestamp < timestamp)
        {
            self.file.push(TimestampOffset {
                timestamp,
                relative_offset: (offset - self.base_offset) as u32,
            });
        }
    }

    /// The offset to start scanning from for the first record at or after
    /// `timestamp`: the entry just before the first one reaching it.
    pub fn lookup(&self, timestamp: i64) -> i64 {
        let entries = self.file.entries();
        let at = entries.partition_point(|e| e.timestamp < timestamp);
        match at.checked_sub(1).map(|i| entries[i]) {
            Some(e) => self.base_offset + e.relative_offset as i64,
            None => self.base_offset,
        }
    }

    pub fn max_timestamp(&self) -> Option<i64> {
        self.file.last().map(|e| e.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An evicted index is read back on use; one whose file is gone answers
    /// "no entry" (a scan from the segment start) instead of failing, and
    /// is read again once the file is back.
    #[test]
    fn an_evicted_index_reads_back_or_falls_back_to_a_scan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.index");
        let mut index = OffsetIndex::create(&path, 100, 1 << 20).unwrap();
        index.append(104, 4096);
        assert!(!index.evict(), "an entry is not on disk yet");
        index.flush(false).unwrap();
        assert!(index.evict());
        assert!(!index.is_loaded());
        assert_eq!(index.lookup(105), (104, 4096));
        assert!(index.is_loaded());

        assert!(index.evict());
        let saved = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(index.lookup(105), (100, 0), "no index: scan from the start");
        assert!(!index.is_loaded(), "a failed read is not cached");
        std::fs::write(&path, saved).unwrap();
        assert_eq!(index.lookup(105), (104, 4096));
    }

    /// Lookups return the largest entry at or below the target, and the
    /// entries survive a flush and reopen byte for byte.
    #[test]
    fn offset_index_lookup_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.index");
        let mut index = OffsetIndex::create(&path, 100, 1 << 20).unwrap();
        index.append(104, 4096);
        index.append(110, 8300);
        assert_eq!(index.lookup(99), (100, 0));
        assert_eq!(index.lookup(103), (100, 0));
        assert_eq!(index.lookup(104), (104, 4096));
        assert_eq!(index.lookup(109), (104, 4096));
        assert_eq!(index.lookup(500), (110, 8300));
        index.flush(true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 16);
        let reopened = OffsetIndex::open(&path, 100, 1 << 20, 9000).unwrap();
        assert_eq!(reopened.lookup(111), (110, 8300));
        assert!(OffsetIndex::open(&path, 100, 1 << 20, 8000).is_err());
    }

    /// Truncation drops entries at or past the offset, also from the file.
    #[test]
    fn offset_index_truncates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        let mut index = OffsetIndex::create(&path, 0, 1 << 20).unwrap();
        for i in 1..5 {
            index.append(i * 10, i as u64 * 1000);
        }
        index.flush(false).unwrap();
        index.truncate_to(30).unwrap();
        assert_eq!(index.len(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 16);
    }

    /// Files with a torn entry or entries out of order are refused.
    #[test]
    fn corrupt_indexes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.index");
        std::fs::write(&path, [0u8; 12]).unwrap();
        assert!(matches!(
            OffsetIndex::open(&path, 0, 1 << 20, 100),
            Err(IndexError::Corrupt { .. })
        ));
        let mut bytes = Vec::new();
        for (off, pos) in [(5u32, 50u32), (3, 60)] {
            bytes.extend_from_slice(&off.to_be_bytes());
            bytes.extend_from_slice(&pos.to_be_bytes());
        }
        std::fs::write(&path, &bytes).unwrap();
        assert!(OffsetIndex::open(&path, 0, 1 << 20, 100).is_err());
    }

    /// The time index keeps only new maxima and finds where a scan must start.
    #[test]
    fn time_index_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.timeindex");
        let mut index = TimeIndex::create(&path, 0, 1 << 20).unwrap();
        index.maybe_append(1000, 0);
        index.maybe_append(900, 5);
        index.maybe_append(2000, 10);
        index.maybe_append(3000, 20);
        assert_eq!(index.max_timestamp(), Some(3000));
        assert_eq!(index.lookup(500), 0);
        assert_eq!(index.lookup(1500), 0);
        assert_eq!(index.lookup(2000), 0);
        assert_eq!(index.lookup(2500), 10);
        index.flush(true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 36);
        assert!(TimeIndex::open(&path, 0, 1 << 20, 21).is_ok());
        assert!(TimeIndex::open(&path, 0, 1 << 20, 20).is_err());
    }
}
