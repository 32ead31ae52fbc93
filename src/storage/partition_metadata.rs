//! `partition.metadata`: the file in each partition directory that names
//! the topic id the log belongs to (KIP-516), in Kafka's text format:
//!
//! ```text
//! version: 0
//! topic_id: <16 bytes, URL-safe base64 without padding>
//! ```
//!
//! A topic deleted and created again under the same name gets a new id, so
//! a log left behind by the old one (a replica that was offline during the
//! deletion) is recognised instead of served as the new topic's.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine;

use super::LogError;

pub const PARTITION_METADATA_FILE: &str = "partition.metadata";

/// The only version Kafka writes.
const VERSION: i32 = 0;

/// A Kafka `Uuid` as it prints: URL-safe base64 without padding.
pub fn topic_id_text(topic_id: &[u8; 16]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(topic_id)
}

fn path_in(dir: &Path) -> PathBuf {
    dir.join(PARTITION_METADATA_FILE)
}

/// The topic id recorded in `dir`, `None` when there is no file (a log
/// written before topic ids, or by a broker that never learned one).
pub fn read(dir: &Path) -> Result<Option<[u8; 16]>, LogError> {
    let path = path_in(dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io(&path, e)),
    };
    parse(&text)
        .map(Some)
        .map_err(|reason| LogError::Corrupt { path, reason })
}

fn parse(text: &str) -> Result<[u8; 16], String> {
    let mut lines = text.lines();
    let version = lines
        .next()
        .and_then(|l| l.strip_prefix("version: "))
        .ok_or("no `version:` line")?;
    if version.trim().parse::<i32>() != Ok(VERSION) {
        return Err(format!("unknown version {version:?}"));
    }
    let id = lines
        .next()
        .and_then(|l| l.strip_prefix("topic_id: "))
        .ok_or("no `topic_id:` line")?;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(id.trim())
        .ok()
        .and_then(|bytes| <[u8; 16]>::try_from(bytes).ok())
        .ok_or_else(|| format!("topic_id {id:?} is not a Kafka Uuid"))
}

/// Records `topic_id` in `dir`: written to a temporary file, fsynced, then
/// renamed over the old one, as Kafka does.
pub fn write(dir: &Path, topic_id: &[u8; 16]) -> Result<(), LogError> {
    let path = path_in(dir);
    let tmp = dir.join(format!("{PARTITION_METADATA_FILE}.tmp"));
    let text = format!("version: {VERSION}\ntopic_id: {}\n", topic_id_text(topic_id));
    let written = std::fs::File::create(&tmp).and_then(|mut file| {
        file.write_all(text.as_bytes())?;
        file.sync_all()
    });
    written.map_err(|e| LogError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| LogError::io(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_kafka_writes_it_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), None);
        let id = [7u8; 16];
        write(dir.path(), &id).unwrap();
        let text = std::fs::read_to_string(dir.path().join(PARTITION_METADATA_FILE)).unwrap();
        assert_eq!(text, "version: 0\ntopic_id: BwcHBwcHBwcHBwcHBwcHBw\n");
        assert_eq!(read(dir.path()).unwrap(), Some(id));
    }

    #[test]
    fn a_damaged_file_is_corrupt_not_a_missing_id() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["", "version: 1\ntopic_id: BwcHBwcHBwcHBwcHBwcHBw\n", "version: 0\ntopic_id: xyz\n"] {
            std::fs::write(dir.path().join(PARTITION_METADATA_FILE), bad).unwrap();
            assert!(matches!(read(dir.path()), Err(LogError::Corrupt { .. })), "{bad:?}");
        }
    }
}
