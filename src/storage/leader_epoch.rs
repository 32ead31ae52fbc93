//! The leader epoch cache of one partition (KIP-101, KIP-279): which leader
//! epoch began at which offset, kept in the partition directory's
//! `leader-epoch-checkpoint` in Kafka's format. It answers "where does my
//! epoch end?" (OffsetForLeaderEpoch), which is how a follower or a
//! returning leader finds where its log diverged from the new leader's.
//!
//! It never guesses: an epoch it does not know answers Kafka's undefined
//! values, and every change is on disk (written whole, renamed, its
//! directory synced) before the caller goes on.

use std::fs;
use std::path::{Path, PathBuf};

use super::LogError;

pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
/// Kafka's `EpochEndOffset` (OffsetForLeaderEpoch's answer for one
/// partition): the largest epoch at most the one asked, and the offset
/// where the epoch after it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub leader_epoch: i32,
    pub end_offset: i64,
}

impl EpochEndOffset {
    /// No such epoch here.
    pub const UNDEFINED: EpochEndOffset = EpochEndOffset {
        leader_epoch: UNDEFINED_EPOCH,
        end_offset: UNDEFINED_EPOCH_OFFSET,
    };

    pub const fn new(leader_epoch: i32, end_offset: i64) -> Self {
        EpochEndOffset {
            leader_epoch,
            end_offset,
        }
    }
}

/// Kafka's `UNDEFINED_EPOCH` and `UNDEFINED_EPOCH_OFFSET`.
pub const UNDEFINED_EPOCH: i32 = -1;
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// One epoch and the first offset written in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

#[derive(Debug)]
pub struct LeaderEpochCache {
    path: PathBuf,
    /// Ascending in both epoch and start offset.
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// Reads the partition's checkpoint (none yet: empty). A damaged file
    /// is a fatal error for the log, as Kafka treats it.
    pub fn load(partition_dir: &Path) -> Result<LeaderEpochCache, LogError> {
        let path = partition_dir.join(LEADER_EPOCH_CHECKPOINT);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(LogError::io(&path, e)),
        };
        let entries = if text.trim().is_empty() {
            Vec::new()
        } else {
            parse(&text).ok_or_else(|| LogError::Corrupt {
                path: path.clone(),
                reason: "not a leader epoch checkpoint".into(),
            })?
        };
        Ok(LeaderEpochCache { path, entries })
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset`, as Kafka's
    /// `LeaderEpochFileCache.assign`: the latest epoch again at or after
    /// its start changes nothing; anything else is taken, and entries it
    /// contradicts (an epoch at least as high, or a start at or past
    /// `start_offset`) go, so the cache stays monotonic in both epoch and
    /// offset. A contradiction means the log was cut without the cache
    /// (logged).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<(), LogError> {
        if epoch < 0 {
            return Ok(());
        }
        if let Some(latest) = self.entries.last() {
            if latest.epoch == epoch && start_offset >= latest.start_offset {
                return Ok(());
            }
        }
        // An epoch that started where this one starts never got a record:
        // it goes silently. A higher or equal epoch going is a contradiction.
        let contradicted = self.entries.iter().filter(|e| e.epoch >= epoch).count();
        if contradicted > 0 {
            log::warn!(
                "{}: leader epoch {epoch} at {start_offset} contradicts {contradicted} cached \
                 epoch(s) as high or higher; they are dropped",
                self.path.display()
            );
        }
        self.entries
            .retain(|e| e.epoch < epoch && e.start_offset < start_offset);
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        self.persist()
    }

    /// Kafka's `endOffsetFor`: the largest epoch at most `requested` and
    /// the offset where the next epoch starts (`log_end_offset` for the
    /// latest epoch). Unknown: [`EpochEndOffset::UNDEFINED`].
    pub fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> EpochEndOffset {
        if requested == UNDEFINED_EPOCH {
            return EpochEndOffset::UNDEFINED;
        }
        if self.latest_epoch() == Some(requested) {
            return EpochEndOffset::new(requested, log_end_offset);
        }
        let Some(higher) = self.entries.iter().find(|e| e.epoch > requested) else {
            return EpochEndOffset::UNDEFINED;
        };
        match self.entries.iter().rev().find(|e| e.epoch <= requested) {
            Some(floor) => EpochEndOffset::new(floor.epoch, higher.start_offset),
            None => EpochEndOffset::new(requested, higher.start_offset),
        }
    }

    /// The log was truncated to `end_offset`: epochs starting at or after
    /// it are gone.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<(), LogError> {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        if self.entries.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// The log now starts at `start_offset` (retention, DeleteRecords, or a
    /// follower starting over): the epoch in force there starts there.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<(), LogError> {
        let covering = self
            .entries
            .iter()
            .rposition(|e| e.start_offset <= start_offset);
        let Some(first_kept) = covering else {
            return Ok(());
        };
        if first_kept == 0 && self.entries[0].start_offset == start_offset {
            return Ok(());
        }
        self.entries.drain(..first_kept);
        self.entries[0].start_offset = start_offset;
        self.persist()
    }

    /// Forgets everything (a follower whose whole log was replaced).
    pub fn clear(&mut self) -> Result<(), LogError> {
        if self.entries.is_empty() {
            return Ok(());
        }
        self.entries.clear();
        self.persist()
    }

    fn persist(&self) -> Result<(), LogError> {
        let mut text = format!("0\n{}\n", self.entries.len());
        for e in &self.entries {
            text.push_str(&format!("{} {}\n", e.epoch, e.start_offset));
        }
        super::checkpoint::write_durably(&self.path, &text)
    }
}

/// Kafka's checkpoint format: version 0, a count, then `epoch offset` lines.
fn parse(text: &str) -> Option<Vec<EpochEntry>> {
    let mut lines = text.lines();
    if lines.next()?.trim() != "0" {
        return None;
    }
    let count: usize = lines.next()?.trim().parse().ok()?;
    let mut entries = Vec::with_capacity(count.min(4096));
    for _ in 0..count {
        let mut fields = lines.next()?.split_whitespace();
        let epoch = fields.next()?.parse().ok()?;
        let start_offset = fields.next()?.parse().ok()?;
        entries.push(EpochEntry {
            epoch,
            start_offset,
        });
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (tempfile::TempDir, LeaderEpochCache) {
        let dir = tempfile::tempdir().unwrap();
        let cache = LeaderEpochCache::load(dir.path()).unwrap();
        (dir, cache)
    }

    #[test]
    fn end_offsets_follow_kafkas_rules() {
        let (_dir, mut c) = cache();
        c.assign(1, 0).unwrap();
        c.assign(3, 10).unwrap();
        c.assign(5, 25).unwrap();
        assert_eq!(c.end_offset_for(5, 40), EpochEndOffset::new(5, 40));
        assert_eq!(c.end_offset_for(3, 40), EpochEndOffset::new(3, 25));
        // Epoch 4 was never seen here: the floor is 3, ending where 5 begins.
        assert_eq!(c.end_offset_for(4, 40), EpochEndOffset::new(3, 25));
        assert_eq!(c.end_offset_for(0, 40), EpochEndOffset::new(0, 0));
        assert_eq!(c.end_offset_for(6, 40), EpochEndOffset::new(-1, -1));
        assert_eq!(c.end_offset_for(-1, 40), EpochEndOffset::new(-1, -1));
    }

    #[test]
    fn assignments_keep_the_cache_monotonic_and_truncation_drops_entries() {
        let (dir, mut c) = cache();
        c.assign(2, 0).unwrap();
        // The latest epoch again, later: nothing changes.
        c.assign(2, 7).unwrap();
        c.assign(4, 9).unwrap();
        // An epoch started where a new one starts never got a record.
        c.assign(5, 9).unwrap();
        assert_eq!(
            c.entries(),
            &[
                EpochEntry {
                    epoch: 2,
                    start_offset: 0
                },
                EpochEntry {
                    epoch: 5,
                    start_offset: 9
                }
            ]
        );
        c.truncate_from_end(9).unwrap();
        assert_eq!(c.latest_epoch(), Some(2));
        c.assign(6, 9).unwrap();
        c.truncate_from_start(12).unwrap();
        assert_eq!(
            c.entries(),
            &[EpochEntry {
                epoch: 6,
                start_offset: 12
            }]
        );
        let reloaded = LeaderEpochCache::load(dir.path()).unwrap();
        assert_eq!(reloaded.entries(), c.entries());
        assert_eq!(
            fs::read_to_string(dir.path().join(LEADER_EPOCH_CHECKPOINT)).unwrap(),
            "0\n1\n6 12\n"
        );
    }

    /// Kafka's `maybeTruncateNonMonotonicEntries`: a lower epoch, or the
    /// latest one at an earlier offset, replaces what contradicts it
    /// instead of being ignored (which left an epoch ending where no
    /// record of it was, and OffsetForLeaderEpoch answering from it).
    #[test]
    fn a_contradicting_assignment_replaces_the_entries_it_contradicts() {
        let (_dir, mut c) = cache();
        c.assign(1, 0).unwrap();
        c.assign(3, 10).unwrap();
        c.assign(5, 20).unwrap();
        c.assign(2, 15).unwrap();
        assert_eq!(
            c.entries(),
            &[
                EpochEntry {
                    epoch: 1,
                    start_offset: 0
                },
                EpochEntry {
                    epoch: 2,
                    start_offset: 15
                }
            ]
        );
        // The latest epoch at an earlier offset moves its start back.
        c.assign(2, 12).unwrap();
        assert_eq!(
            c.entries()[1],
            EpochEntry {
                epoch: 2,
                start_offset: 12
            }
        );
        assert_eq!(c.end_offset_for(1, 30), EpochEndOffset::new(1, 12));
    }

    #[test]
    fn a_damaged_checkpoint_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(LEADER_EPOCH_CHECKPOINT), "0\n3\n1 0\n").unwrap();
        assert!(LeaderEpochCache::load(dir.path()).is_err());
    }
}
