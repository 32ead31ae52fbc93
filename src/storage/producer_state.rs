//! Idempotent producers' state in one partition, Kafka's
//! `ProducerStateManager`: for each producer id, its epoch and the sequence
//! ranges and offsets of its last five batches. With it a retried batch is
//! answered with the offsets it got the first time instead of being written
//! twice, a gap in the sequence is refused (OUT_OF_ORDER_SEQUENCE_NUMBER),
//! and so is an older epoch (INVALID_PRODUCER_EPOCH).
//!
//! The state is rebuilt from batch headers, and kept across restarts in
//! Kafka's `<offset>.snapshot` files beside the segments (written at each
//! segment roll and at clean shutdown; after a crash the log is replayed
//! from the latest snapshot at or below its end). A snapshot keeps only each
//! producer's last batch, as Kafka's does. This module reads and writes
//! only snapshot files; the log feeds it batches.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

use super::batch::ProducerFields;
use super::checkpoint::write_bytes_durably;
use super::error::{LogError, ProducerStateError};

pub const NO_PRODUCER_EPOCH: i16 = -1;
const NO_SEQUENCE: i32 = -1;
/// Batches remembered per producer for duplicate detection (Kafka's
/// `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`, the most a producer keeps
/// in flight with idempotence).
const BATCHES_TO_RETAIN: usize = 5;
const SNAPSHOT_SUFFIX: &str = ".snapshot";
const SNAPSHOT_VERSION: i16 = 1;
/// Each snapshot entry: producer id, epoch, last sequence, last offset,
/// offset delta, timestamp, coordinator epoch, current transaction's first
/// offset.
const SNAPSHOT_ENTRY_LEN: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;
/// Version, CRC, entry count.
const SNAPSHOT_HEADER_LEN: usize = 2 + 4 + 4;

/// One batch of a producer, with the offsets it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

impl ProducerBatch {
    /// The batch whose header says `fields`, placed at `first_offset`.
    pub fn new(fields: &ProducerFields, first_offset: i64) -> ProducerBatch {
        let delta = fields.last_offset_delta.max(0);
        ProducerBatch {
            producer_id: fields.producer_id,
            producer_epoch: fields.producer_epoch,
            first_sequence: fields.base_sequence,
            last_sequence: if fields.base_sequence == NO_SEQUENCE {
                NO_SEQUENCE
            } else {
                increment_sequence(fields.base_sequence, delta)
            },
            first_offset,
            last_offset: first_offset + i64::from(delta),
            max_timestamp: fields.max_timestamp,
        }
    }
}

/// Sequences wrap from `i32::MAX` to 0 (Kafka's `incrementSequence`).
fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX - (decrement - sequence) + 1
    } else {
        sequence - decrement
    }
}

fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// What a producer appended last, as the offsets it got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ProducerEntry {
    producer_epoch: i16,
    /// Oldest first; at most `BATCHES_TO_RETAIN`.
    batches: VecDeque<BatchMetadata>,
    /// The newest batch's max timestamp (expiry counts from it).
    last_timestamp: i64,
    coordinator_epoch: i32,
}

impl ProducerEntry {
    fn empty() -> ProducerEntry {
        ProducerEntry {
            producer_epoch: NO_PRODUCER_EPOCH,
            batches: VecDeque::new(),
            last_timestamp: -1,
            coordinator_epoch: -1,
        }
    }

    fn last_sequence(&self) -> i32 {
        self.batches.back().map_or(NO_SEQUENCE, |b| b.last_sequence)
    }

    fn add(&mut self, batch: &ProducerBatch) {
        if batch.producer_epoch != self.producer_epoch {
            self.batches.clear();
            self.producer_epoch = batch.producer_epoch;
        }
        if self.batches.len() == BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(BatchMetadata {
            first_sequence: batch.first_sequence,
            last_sequence: batch.last_sequence,
            first_offset: batch.first_offset,
            last_offset: batch.last_offset,
            max_timestamp: batch.max_timestamp,
        });
        self.last_timestamp = batch.max_timestamp;
    }

    /// Kafka's `ProducerAppendInfo.checkProducerEpoch` and `checkSequence`
    /// for a client's batch, with one rule of ferrolog's: in a whole log an
    /// unknown producer starts at sequence 0 (see `LogHistory`).
    fn check(&self, batch: &ProducerBatch, history: LogHistory) -> Result<(), ProducerStateError> {
        if batch.producer_epoch < self.producer_epoch {
            return Err(ProducerStateError::InvalidProducerEpoch {
                producer_id: batch.producer_id,
                epoch: batch.producer_epoch,
                current: self.producer_epoch,
            });
        }
        if batch.producer_epoch != self.producer_epoch {
            let unknown = self.producer_epoch == NO_PRODUCER_EPOCH;
            if batch.first_sequence != 0 && unknown && history == LogHistory::Whole {
                return Err(ProducerStateError::OutOfOrderSequence {
                    producer_id: batch.producer_id,
                    first_sequence: batch.first_sequence,
                    last_sequence: -1,
                });
            }
            if batch.first_sequence != 0 && !unknown {
                return Err(ProducerStateError::InvalidSequenceForNewEpoch {
                    producer_id: batch.producer_id,
                    epoch: batch.producer_epoch,
                    first_sequence: batch.first_sequence,
                });
            }
            return Ok(());
        }
        let last_sequence = self.last_sequence();
        // No batches known for this epoch (all removed by retention):
        // Kafka accepts any sequence.
        if self.batches.is_empty() || in_sequence(last_sequence, batch.first_sequence) {
            return Ok(());
        }
        Err(ProducerStateError::OutOfOrderSequence {
            producer_id: batch.producer_id,
            first_sequence: batch.first_sequence,
            last_sequence,
        })
    }

    fn duplicate_of(&self, batch: &ProducerBatch) -> Option<BatchMetadata> {
        if batch.producer_epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| {
                b.first_sequence == batch.first_sequence && b.last_sequence == batch.last_sequence
            })
            .copied()
    }
}

/// How much of a partition's history its log still holds, which says
/// whether a producer unknown to its state may be one whose state was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogHistory {
    /// Nothing was ever deleted from the log's start (log start offset 0):
    /// the state has every producer that wrote here, so an unknown
    /// producer's first batch must have sequence 0. A later one means its
    /// earlier batches were refused (say, sent to this leader just before
    /// it became one): OUT_OF_ORDER_SEQUENCE_NUMBER, which clients retry
    /// after the earlier batch, instead of a log that starts mid-sequence
    /// and a client retrying its sequence 0 forever. Kafka accepts any
    /// sequence here, and has that race.
    Whole,
    /// Records were deleted from the start (retention, DeleteRecords):
    /// Kafka 2.5+'s rule, any first sequence (KIP-360), as the producer's
    /// state may have gone with them.
    Truncated,
}

/// A producer batch's fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerCheck {
    /// Write it.
    Append,
    /// Already written (a retry): answer with these offsets, write nothing.
    Duplicate(BatchMetadata),
}

#[derive(Debug)]
pub struct ProducerStateManager {
    dir: PathBuf,
    producers: HashMap<i64, ProducerEntry>,
}

impl ProducerStateManager {
    pub fn new(dir: &Path) -> ProducerStateManager {
        ProducerStateManager {
            dir: dir.to_path_buf(),
            producers: HashMap::new(),
        }
    }

    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// Each producer's last batch, by its last offset: compaction keeps
    /// these batches so the state can be rebuilt from the log.
    pub fn last_offsets(&self) -> HashMap<i64, i64> {
        self.producers
            .iter()
            .filter_map(|(&id, entry)| entry.batches.back().map(|b| (id, b.last_offset)))
            .collect()
    }

    #[cfg(any(test, feature = "internals"))]
    /// The producer's epoch and last sequence (tests, admin).
    pub fn last_sequence_of(&self, producer_id: i64) -> Option<(i16, i32)> {
        self.producers
            .get(&producer_id)
            .map(|e| (e.producer_epoch, e.last_sequence()))
    }

    /// Check a client's batches, in order, as if each before it had been
    /// written. A duplicate answers for the whole append (Kafka stops at
    /// the first one it finds).
    pub fn check(
        &self,
        batches: &[ProducerBatch],
        history: LogHistory,
    ) -> Result<ProducerCheck, ProducerStateError> {
        let mut staged: HashMap<i64, ProducerEntry> = HashMap::new();
        for batch in batches {
            let entry = staged
                .get(&batch.producer_id)
                .or_else(|| self.producers.get(&batch.producer_id));
            if let Some(duplicate) = entry.and_then(|e| e.duplicate_of(batch)) {
                return Ok(ProducerCheck::Duplicate(duplicate));
            }
            let mut entry = entry.cloned().unwrap_or_else(ProducerEntry::empty);
            entry.check(batch, history)?;
            entry.add(batch);
            staged.insert(batch.producer_id, entry);
        }
        Ok(ProducerCheck::Append)
    }

    /// Record a written batch (a client's after `check`, or one a follower
    /// copied, or one replayed from the log).
    pub fn update(&mut self, batch: &ProducerBatch) {
        self.producers
            .entry(batch.producer_id)
            .or_insert_with(ProducerEntry::empty)
            .add(batch);
    }

    /// Forget producers whose last batch is older than `expiration_ms`
    /// (`producer.id.expiration.ms`).
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, e| now_ms.saturating_sub(e.last_timestamp) < expiration_ms);
        before - self.producers.len()
    }

    /// Forget everything, snapshots included (the log was emptied).
    pub fn clear(&mut self) -> Result<(), LogError> {
        self.producers.clear();
        for offset in self.snapshot_offsets()? {
            self.delete_snapshot(offset)?;
        }
        Ok(())
    }

    /// Write the state as of `offset` (the log end offset) to
    /// `<offset>.snapshot`.
    pub fn take_snapshot(&self, offset: i64) -> Result<(), LogError> {
        let mut body = Vec::with_capacity(4 + self.producers.len() * SNAPSHOT_ENTRY_LEN);
        body.extend_from_slice(&(self.producers.len() as i32).to_be_bytes());
        let mut ids: Vec<&i64> = self.producers.keys().collect();
        ids.sort();
        for id in ids {
            let Some(entry) = self.producers.get(id) else {
                continue;
            };
            let last = entry.batches.back();
            body.extend_from_slice(&id.to_be_bytes());
            body.extend_from_slice(&entry.producer_epoch.to_be_bytes());
            body.extend_from_slice(&last.map_or(NO_SEQUENCE, |b| b.last_sequence).to_be_bytes());
            body.extend_from_slice(&last.map_or(-1i64, |b| b.last_offset).to_be_bytes());
            let delta = last.map_or(0, |b| (b.last_offset - b.first_offset) as i32);
            body.extend_from_slice(&delta.to_be_bytes());
            body.extend_from_slice(&entry.last_timestamp.to_be_bytes());
            body.extend_from_slice(&entry.coordinator_epoch.to_be_bytes());
            // No transaction is ever open (transactions are not served).
            body.extend_from_slice(&(-1i64).to_be_bytes());
        }
        let mut bytes = Vec::with_capacity(6 + body.len());
        bytes.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
        bytes.extend_from_slice(&crc32c::crc32c(&body).to_be_bytes());
        bytes.extend_from_slice(&body);
        write_bytes_durably(&self.snapshot_path(offset), &bytes)
    }

    /// Drop snapshots above `log_end_offset`, then load the newest one left.
    /// Returns its offset (replay the log from there), or `None` with an
    /// empty state. A corrupt snapshot is deleted with a warning and the
    /// next older one tried, as Kafka does.
    pub fn truncate_and_load(&mut self, log_end_offset: i64) -> Result<Option<i64>, LogError> {
        self.producers.clear();
        let mut offsets = self.snapshot_offsets()?;
        while let Some(offset) = offsets.pop() {
            if offset > log_end_offset {
                self.delete_snapshot(offset)?;
                continue;
            }
            let path = self.snapshot_path(offset);
            let bytes = fs::read(&path).map_err(|e| LogError::io(&path, e))?;
            match parse_snapshot(&bytes) {
                Ok(producers) => {
                    self.producers = producers;
                    return Ok(Some(offset));
                }
                Err(reason) => {
                    log::warn!(
                        "producer snapshot {} is corrupt ({reason}); deleting it",
                        path.display()
                    );
                    self.delete_snapshot(offset)?;
                }
            }
        }
        Ok(None)
    }

    /// Delete snapshots below `offset` (their segments are gone).
    pub fn delete_snapshots_before(&self, offset: i64) -> Result<(), LogError> {
        for old in self.snapshot_offsets()?.into_iter().filter(|&o| o < offset) {
            self.delete_snapshot(old)?;
        }
        Ok(())
    }

    /// The offsets of the snapshot files present, ascending.
    pub fn snapshot_offsets(&self) -> Result<Vec<i64>, LogError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(LogError::io(&self.dir, e)),
        };
        let mut offsets = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| LogError::io(&self.dir, e))?;
            let name = entry.file_name();
            let Some(offset) = name
                .to_str()
                .and_then(|n| n.strip_suffix(SNAPSHOT_SUFFIX))
                .and_then(|n| n.parse::<i64>().ok())
            else {
                continue;
            };
            offsets.push(offset);
        }
        offsets.sort_unstable();
        Ok(offsets)
    }

    fn snapshot_path(&self, offset: i64) -> PathBuf {
        self.dir.join(format!("{offset:020}{SNAPSHOT_SUFFIX}"))
    }

    fn delete_snapshot(&self, offset: i64) -> Result<(), LogError> {
        let path = self.snapshot_path(offset);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(LogError::io(&path, e)),
        }
    }
}

fn parse_snapshot(bytes: &[u8]) -> Result<HashMap<i64, ProducerEntry>, String> {
    if bytes.len() < SNAPSHOT_HEADER_LEN {
        return Err(format!("{} bytes is too short", bytes.len()));
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != SNAPSHOT_VERSION {
        return Err(format!("unknown version {version}"));
    }
    let stored = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    let body = &bytes[6..];
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(format!(
            "CRC mismatch (stored {stored:#010x}, computed {computed:#010x})"
        ));
    }
    let count = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
    let entries = &body[4..];
    if count < 0 || entries.len() != count as usize * SNAPSHOT_ENTRY_LEN {
        return Err(format!(
            "{count} entries do not fit {} bytes",
            entries.len()
        ));
    }
    let mut producers = HashMap::with_capacity(count as usize);
    for raw in entries.chunks_exact(SNAPSHOT_ENTRY_LEN) {
        let i64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&raw[at..at + 8]);
            i64::from_be_bytes(b)
        };
        let i32_at =
            |at: usize| i32::from_be_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]]);
        let producer_id = i64_at(0);
        let producer_epoch = i16::from_be_bytes([raw[8], raw[9]]);
        let last_sequence = i32_at(10);
        let last_offset = i64_at(14);
        let offset_delta = i32_at(22).max(0);
        let timestamp = i64_at(26);
        let coordinator_epoch = i32_at(34);
        let mut entry = ProducerEntry {
            producer_epoch,
            batches: VecDeque::new(),
            last_timestamp: timestamp,
            coordinator_epoch,
        };
        if last_offset >= 0 {
            entry.batches.push_back(BatchMetadata {
                first_sequence: decrement_sequence(last_sequence, offset_delta),
                last_sequence,
                first_offset: last_offset - i64::from(offset_delta),
                last_offset,
                max_timestamp: timestamp,
            });
        }
        producers.insert(producer_id, entry);
    }
    Ok(producers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(epoch: i16, first: i32, count: i32, first_offset: i64) -> ProducerBatch {
        ProducerBatch::new(
            &ProducerFields {
                producer_id: 7,
                producer_epoch: epoch,
                base_sequence: first,
                last_offset_delta: count - 1,
                max_timestamp: 1_000,
                transactional: false,
                control: false,
            },
            first_offset,
        )
    }

    #[test]
    fn an_unknown_producer_must_start_at_zero_in_a_whole_log() {
        // Every batch since offset 0 is in the log, so the state knows
        // every producer that wrote here: a first batch at sequence 5 means
        // its batches 0..5 never arrived (a retriable error the client
        // retries in order), not that their state was lost.
        let dir = tempfile::tempdir().unwrap();
        let state = ProducerStateManager::new(dir.path());
        assert!(matches!(
            state.check(&[batch(0, 5, 3, 0)], LogHistory::Whole),
            Err(ProducerStateError::OutOfOrderSequence {
                first_sequence: 5,
                last_sequence: -1,
                ..
            })
        ));
        assert_eq!(
            state.check(&[batch(0, 0, 3, 0)], LogHistory::Whole),
            Ok(ProducerCheck::Append)
        );
    }

    #[test]
    fn sequences_follow_kafkas_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = ProducerStateManager::new(dir.path());
        // Once records were deleted from the log's start (retention,
        // DeleteRecords), an unknown producer may start anywhere, as in
        // Kafka 2.5+ (its state may have gone with them).
        assert_eq!(
            state.check(&[batch(0, 5, 3, 0)], LogHistory::Truncated),
            Ok(ProducerCheck::Append)
        );
        state.update(&batch(0, 0, 3, 0));
        state.update(&batch(0, 3, 2, 3));
        // The next in order.
        assert_eq!(state.check(&[batch(0, 5, 1, 5)], LogHistory::Whole), Ok(ProducerCheck::Append));
        // A retry of a batch still remembered: its first offsets.
        assert_eq!(
            state.check(&[batch(0, 3, 2, 99)], LogHistory::Whole),
            Ok(ProducerCheck::Duplicate(BatchMetadata {
                first_sequence: 3,
                last_sequence: 4,
                first_offset: 3,
                last_offset: 4,
                max_timestamp: 1_000,
            }))
        );
        // A gap.
        assert!(matches!(
            state.check(&[batch(0, 7, 1, 5)], LogHistory::Whole),
            Err(ProducerStateError::OutOfOrderSequence {
                last_sequence: 4,
                ..
            })
        ));
        // Two batches in one append: the second follows the first.
        assert_eq!(
            state.check(&[batch(0, 5, 1, 5), batch(0, 6, 1, 6)], LogHistory::Whole),
            Ok(ProducerCheck::Append)
        );
        // A new epoch starts at 0; an old one is fenced.
        assert!(matches!(
            state.check(&[batch(1, 4, 1, 5)], LogHistory::Whole),
            Err(ProducerStateError::InvalidSequenceForNewEpoch { .. })
        ));
        state.update(&batch(1, 0, 1, 5));
        assert!(matches!(
            state.check(&[batch(0, 5, 1, 6)], LogHistory::Whole),
            Err(ProducerStateError::InvalidProducerEpoch { current: 1, .. })
        ));
        // Only the last five batches are remembered.
        for i in 1..=5 {
            state.update(&batch(1, i, 1, 5 + i64::from(i)));
        }
        // Sequence 0 of epoch 1 was the sixth batch back: forgotten, so a
        // retry of it is out of order, not a duplicate.
        assert!(matches!(
            state.check(&[batch(1, 0, 1, 11)], LogHistory::Whole),
            Err(ProducerStateError::OutOfOrderSequence {
                last_sequence: 5,
                ..
            })
        ));
    }

    #[test]
    fn sequences_wrap_at_i32_max() {
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
        assert!(in_sequence(i32::MAX, 0));
        let wrapped = batch(0, i32::MAX, 2, 0);
        assert_eq!(wrapped.last_sequence, 0);
    }

    #[test]
    fn snapshots_round_trip_and_truncate() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = ProducerStateManager::new(dir.path());
        state.update(&batch(2, 0, 4, 10));
        state.take_snapshot(14).unwrap();
        state.update(&batch(2, 4, 1, 14));
        state.take_snapshot(15).unwrap();
        assert!(dir.path().join("00000000000000000014.snapshot").is_file());

        let mut loaded = ProducerStateManager::new(dir.path());
        assert_eq!(loaded.truncate_and_load(20).unwrap(), Some(15));
        assert_eq!(loaded.last_sequence_of(7), Some((2, 4)));
        // The last batch is still a duplicate after a restart.
        assert!(matches!(
            loaded.check(&[batch(2, 4, 1, 30)], LogHistory::Whole),
            Ok(ProducerCheck::Duplicate(BatchMetadata {
                first_offset: 14,
                ..
            }))
        ));
        // Truncating below a snapshot drops it.
        assert_eq!(loaded.truncate_and_load(14).unwrap(), Some(14));
        assert_eq!(loaded.snapshot_offsets().unwrap(), vec![14]);
        assert_eq!(loaded.last_sequence_of(7), Some((2, 3)));
        // A corrupt snapshot is skipped (and deleted).
        let path = dir.path().join("00000000000000000014.snapshot");
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, bytes).unwrap();
        assert_eq!(loaded.truncate_and_load(14).unwrap(), None);
        assert_eq!(loaded.producer_count(), 0);
        assert!(loaded.snapshot_offsets().unwrap().is_empty());
    }

    #[test]
    fn producers_expire() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = ProducerStateManager::new(dir.path());
        state.update(&batch(0, 0, 1, 0));
        assert_eq!(state.remove_expired(1_500, 1_000), 0);
        assert_eq!(state.remove_expired(2_000, 1_000), 1);
        assert_eq!(state.producer_count(), 0);
    }
}
