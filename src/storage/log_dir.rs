//! One entry of `log.dirs`: its lock, its checkpoint files, its clean-shutdown
//! marker, and the partition directories it holds.
//!
//! The marker is removed as soon as the directory is opened, so a crash at any
//! later point is seen as unclean on the next start.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::checkpoint::{
    OffsetCheckpointFile, CLEANER_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
};
use super::error::LogError;
use super::log::LoadOptions;
use crate::topic_partition::TopicPartition;

/// Kafka's name for the clean-shutdown marker.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
const LOCK_FILE: &str = ".lock";

/// An opened log directory. Holding it holds the directory's lock.
#[derive(Debug)]
pub struct LogDir {
    path: PathBuf,
    _lock: File,
    /// One writer at a time for the checkpoint files and the marker: they
    /// are written from timers and from shutdown, on different threads, and
    /// share their temporary file names.
    writing: Mutex<()>,
    pub clean_shutdown: bool,
    pub recovery_points: BTreeMap<TopicPartition, i64>,
    pub log_start_offsets: BTreeMap<TopicPartition, i64>,
    pub high_watermarks: BTreeMap<TopicPartition, i64>,
    pub cleaner_offsets: BTreeMap<TopicPartition, i64>,
    /// Partition directories found, with their paths.
    pub partitions: Vec<(TopicPartition, PathBuf)>,
}

impl LogDir {
    /// Create if needed, lock (a second broker on the same directory fails
    /// here), read the checkpoints and consume the clean-shutdown marker.
    pub fn open(path: &Path) -> Result<LogDir, LogError> {
        fs::create_dir_all(path).map_err(|e| LogError::io(path, e))?;
        let lock_path = path.join(LOCK_FILE);
        let lock = File::create(&lock_path).map_err(|e| LogError::io(&lock_path, e))?;
        // SAFETY: flock on a descriptor we own; no memory is shared.
        let locked = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked != 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::WouldBlock {
                return Err(LogError::DirInUse {
                    path: path.to_path_buf(),
                });
            }
            return Err(LogError::io(&lock_path, error));
        }
        let marker = path.join(CLEAN_SHUTDOWN_FILE);
        let mut clean_shutdown = marker.exists();
        // Kafka's answer to a malformed checkpoint: log it and recover from
        // scratch (recovery point 0; log start offsets from the segments).
        let mut read_checkpoint = |name: &str| match OffsetCheckpointFile::new(path, name).read() {
            Ok(offsets) => offsets,
            Err(e) => {
                log::warn!(
                    "{e}; ignoring it: every partition in {} is recovered",
                    path.display()
                );
                clean_shutdown = false;
                BTreeMap::new()
            }
        };
        let recovery_points = read_checkpoint(RECOVERY_POINT_CHECKPOINT);
        let log_start_offsets = read_checkpoint(LOG_START_OFFSET_CHECKPOINT);
        let high_watermarks = read_checkpoint(REPLICATION_OFFSET_CHECKPOINT);
        let cleaner_offsets = read_checkpoint(CLEANER_OFFSET_CHECKPOINT);
        if clean_shutdown {
            fs::remove_file(&marker).map_err(|e| LogError::io(&marker, e))?;
            sync_dir(path)?;
        }
        let mut partitions = Vec::new();
        for entry in fs::read_dir(path).map_err(|e| LogError::io(path, e))? {
            let entry = entry.map_err(|e| LogError::io(path, e))?;
            if !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            match TopicPartition::from_dir_name(&name) {
                Some(tp) => partitions.push((tp, entry.path())),
                None => log::warn!(
                    "ignoring {}: not a partition directory",
                    entry.path().display()
                ),
            }
        }
        partitions.sort();
        Ok(LogDir {
            path: path.to_path_buf(),
            _lock: lock,
            writing: Mutex::new(()),
            clean_shutdown,
            recovery_points,
            log_start_offsets,
            high_watermarks,
            cleaner_offsets,
            partitions,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How to load `tp`: from its checkpointed offsets, or from scratch.
    pub fn load_options(&self, tp: &TopicPartition) -> LoadOptions {
        LoadOptions {
            recovery_point: self.recovery_points.get(tp).copied().unwrap_or(0),
            log_start_offset: self.log_start_offsets.get(tp).copied().unwrap_or(0),
            clean_shutdown: self.clean_shutdown,
            high_watermark: self.high_watermarks.get(tp).copied().unwrap_or(0),
            cleaner_offset: self.cleaner_offsets.get(tp).copied().unwrap_or(0),
        }
    }

    /// Write the checkpoint files for the partitions in this directory:
    /// recovery points, log start offsets and high watermarks.
    pub fn write_checkpoints(
        &self,
        recovery_points: &BTreeMap<TopicPartition, i64>,
        log_start_offsets: &BTreeMap<TopicPartition, i64>,
        high_watermarks: &BTreeMap<TopicPartition, i64>,
        cleaner_offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<(), LogError> {
        let _one_writer = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        OffsetCheckpointFile::new(&self.path, RECOVERY_POINT_CHECKPOINT).write(recovery_points)?;
        OffsetCheckpointFile::new(&self.path, LOG_START_OFFSET_CHECKPOINT)
            .write(log_start_offsets)?;
        OffsetCheckpointFile::new(&self.path, REPLICATION_OFFSET_CHECKPOINT)
            .write(high_watermarks)?;
        OffsetCheckpointFile::new(&self.path, CLEANER_OFFSET_CHECKPOINT).write(cleaner_offsets)
    }

    /// Leave the marker that lets the next start skip recovery. Call only
    /// after every log here was flushed and the checkpoints written.
    pub fn mark_clean_shutdown(&self) -> Result<(), LogError> {
        let _one_writer = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let marker = self.path.join(CLEAN_SHUTDOWN_FILE);
        File::create(&marker)
            .and_then(|f| f.sync_all())
            .map_err(|e| LogError::io(&marker, e))?;
        sync_dir(&self.path)
    }
}

fn sync_dir(path: &Path) -> Result<(), LogError> {
    File::open(path)
        .and_then(|d| d.sync_all())
        .map_err(|e| LogError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Checkpoints are written from timers and from shutdown, on different
    /// threads, through one temporary name per file: two writers at once
    /// must both succeed and a reader must never see a torn file.
    #[test]
    fn concurrent_checkpoint_writers_never_tear_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let log_dir = Arc::new(LogDir::open(dir.path()).unwrap());
        let offsets = |n: usize| -> BTreeMap<TopicPartition, i64> {
            (0..n)
                .map(|i| {
                    (
                        TopicPartition::new(format!("topic-{i}"), i as i32),
                        i as i64,
                    )
                })
                .collect()
        };
        let writers: Vec<_> = [1usize, 200]
            .into_iter()
            .map(|size| {
                let log_dir = log_dir.clone();
                let wanted = offsets(size);
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        log_dir
                            .write_checkpoints(&wanted, &wanted, &wanted, &wanted)
                            .unwrap();
                    }
                })
            })
            .collect();
        let reader = {
            let path = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let file = OffsetCheckpointFile::new(&path, RECOVERY_POINT_CHECKPOINT);
                for _ in 0..500 {
                    let read = file.read().unwrap();
                    assert!(read.is_empty() || read.len() == 1 || read.len() == 200);
                }
            })
        };
        for writer in writers {
            writer.join().unwrap();
        }
        reader.join().unwrap();
    }
}
