//! Kafka's offset checkpoint files (`recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `replication-offset-checkpoint`): a version
//! line, a count line, then `topic partition offset` per line.
//!
//! Writes are atomic (temp file, fsync, rename, fsync of the directory), so a
//! crash leaves either the old or the new file, never a torn one.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::LogError;
use crate::topic_partition::TopicPartition;

pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
/// Where each compacted log's dirty part starts (Kafka's `LogCleanerManager`).
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";

const VERSION: u32 = 0;

/// Replaces `path` with `text` so that a crash leaves the old file or the
/// new one, never a torn one: a fsynced temporary file renamed over it,
/// then the directory fsynced.
pub fn write_durably(path: &Path, text: &str) -> Result<(), LogError> {
    write_bytes_durably(path, text.as_bytes())
}

/// `write_durably` for bytes.
pub fn write_bytes_durably(path: &Path, bytes: &[u8]) -> Result<(), LogError> {
    let tmp = path.with_extension("tmp");
    let io_err = |e| LogError::io(path, e);
    let mut file = File::create(&tmp).map_err(io_err)?;
    file.write_all(bytes).map_err(io_err)?;
    file.sync_all().map_err(io_err)?;
    fs::rename(&tmp, path).map_err(io_err)?;
    if let Some(dir) = path.parent() {
        File::open(dir).and_then(|d| d.sync_all()).map_err(io_err)?;
    }
    Ok(())
}

/// One checkpoint file in a log directory.
#[derive(Debug, Clone)]
pub struct OffsetCheckpointFile {
    path: PathBuf,
}

impl OffsetCheckpointFile {
    pub fn new(log_dir: &Path, name: &str) -> Self {
        OffsetCheckpointFile {
            path: log_dir.join(name),
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write(&self, offsets: &BTreeMap<TopicPartition, i64>) -> Result<(), LogError> {
        let mut text = format!("{VERSION}\n{}\n", offsets.len());
        for (tp, offset) in offsets {
            text.push_str(&format!("{} {} {offset}\n", tp.topic, tp.partition));
        }
        write_durably(&self.path, &text)
    }

    /// The offsets in the file; empty when there is no file yet.
    pub fn read(&self) -> Result<BTreeMap<TopicPartition, i64>, LogError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(LogError::io(&self.path, e)),
        };
        let malformed = |line: usize, reason: &str| LogError::Checkpoint {
            path: self.path.clone(),
            line,
            reason: reason.to_string(),
        };
        let mut lines = text.lines();
        match lines.next().map(str::trim) {
            Some("0") => {}
            _ => return Err(malformed(1, "unsupported version")),
        }
        let expected: usize = lines
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| malformed(2, "bad entry count"))?;
        let mut offsets = BTreeMap::new();
        for (i, line) in lines.enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [topic, partition, offset] = fields[..] else {
                return Err(malformed(i + 3, "expected `topic partition offset`"));
            };
            let partition = partition
                .parse()
                .map_err(|_| malformed(i + 3, "bad partition"))?;
            let offset = offset.parse().map_err(|_| malformed(i + 3, "bad offset"))?;
            offsets.insert(TopicPartition::new(topic, partition), offset);
        }
        if offsets.len() != expected {
            return Err(malformed(2, "entry count does not match the entries"));
        }
        Ok(offsets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written offsets read back equal, in Kafka's exact text layout.
    #[test]
    fn round_trip_in_kafka_format() {
        let dir = tempfile::tempdir().unwrap();
        let file = OffsetCheckpointFile::new(dir.path(), RECOVERY_POINT_CHECKPOINT);
        assert!(file.read().unwrap().is_empty());
        let mut offsets = BTreeMap::new();
        offsets.insert(TopicPartition::new("orders", 0), 42);
        offsets.insert(TopicPartition::new("my-topic-2", 11), 7);
        file.write(&offsets).unwrap();
        let text = fs::read_to_string(file.path()).unwrap();
        assert_eq!(text, "0\n2\nmy-topic-2 11 7\norders 0 42\n");
        assert_eq!(file.read().unwrap(), offsets);
    }

    /// A torn or edited file is an error, not a silent zero.
    #[test]
    fn malformed_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let file = OffsetCheckpointFile::new(dir.path(), LOG_START_OFFSET_CHECKPOINT);
        for text in ["1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt x 1\n", "0\n1\nt 0\n"] {
            fs::write(file.path(), text).unwrap();
            assert!(file.read().is_err(), "{text:?}");
        }
    }
}
