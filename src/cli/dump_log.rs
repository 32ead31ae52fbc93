//! `ferrolog dump-log`: decode a partition's `.log`, `.index` and
//! `.timeindex` files as Kafka's `kafka-dump-log` does, reading the files
//! only (no broker needed). `--verify` checks every batch's CRC and every
//! index entry, and exits 1 at the first bad one, naming it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::connection::CliError;
use crate::storage::batch::{validate_entry, EntryHeader, HEADER_PEEK_LEN};

/// `ferrolog dump-log`'s arguments.
#[derive(clap::Args, Debug)]
pub struct DumpLogArgs {
    /// The files, comma-separated (`.log`, `.index`, `.timeindex`).
    #[arg(long, value_delimiter = ',', required = true)]
    files: Vec<PathBuf>,
    /// Check every CRC and index entry; exit 1 at the first bad one.
    #[arg(long)]
    verify: bool,
    /// Print JSON instead of Kafka's lines.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct BatchView {
    position: usize,
    base_offset: i64,
    last_offset: i64,
    count: i64,
    size: usize,
    magic: i8,
    compresscodec: &'static str,
    max_timestamp: i64,
    partition_leader_epoch: i32,
    isvalid: bool,
}

#[derive(Serialize)]
struct IndexEntryView {
    offset: i64,
    /// `.index`: the batch's byte position; `.timeindex`: the timestamp.
    value: i64,
}

fn codec(id: u8) -> &'static str {
    match id {
        0 => "none",
        1 => "gzip",
        2 => "snappy",
        3 => "lz4",
        4 => "zstd",
        _ => "unknown",
    }
}

/// The base offset Kafka names a segment's files by.
fn base_offset(path: &Path) -> Result<i64, CliError> {
    path.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "{}: not a segment file (20-digit base offset)",
                path.display()
            ))
        })
}

pub fn run(args: &DumpLogArgs) -> Result<(), CliError> {
    for path in &args.files {
        let bytes =
            std::fs::read(path).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
        println!("Dumping {}", path.display());
        match path.extension().and_then(|e| e.to_str()) {
            Some("log") => dump_log(&bytes, args)?,
            Some("index") => dump_index(path, &bytes, 8, args)?,
            Some("timeindex") => dump_index(path, &bytes, 12, args)?,
            _ => {
                return Err(CliError::Usage(format!(
                    "{}: dump-log reads .log, .index and .timeindex files",
                    path.display()
                )))
            }
        }
    }
    Ok(())
}

fn dump_log(bytes: &[u8], args: &DumpLogArgs) -> Result<(), CliError> {
    let mut position = 0;
    let mut batches = Vec::new();
    while position < bytes.len() {
        let rest = &bytes[position..];
        let header = match EntryHeader::parse(&rest[..rest.len().min(HEADER_PEEK_LEN)], position) {
            Ok(header) => header,
            Err(e) => {
                // A torn tail is what a crash leaves; the broker truncates it.
                if args.verify {
                    return Err(CliError::Refused(format!("at position {position}: {e}")));
                }
                println!("position {position}: {e} (the rest is not a batch)");
                break;
            }
        };
        let valid = validate_entry(rest, position);
        if let (true, Err(e)) = (args.verify, &valid) {
            return Err(CliError::Refused(format!(
                "batch at offset {} (position {position}): {e}",
                header.offset_field
            )));
        }
        let view = BatchView {
            position,
            base_offset: header.offset_field,
            last_offset: header.last_offset,
            count: header.last_offset - header.offset_field + 1,
            size: header.size,
            magic: header.magic,
            compresscodec: codec(header.compression),
            max_timestamp: header.max_timestamp,
            partition_leader_epoch: header.partition_leader_epoch,
            isvalid: valid.is_ok(),
        };
        if !args.json {
            println!(
                "baseOffset: {} lastOffset: {} count: {} position: {} size: {} magic: {} \
                 compresscodec: {} maxTimestamp: {} partitionLeaderEpoch: {} isvalid: {}",
                view.base_offset,
                view.last_offset,
                view.count,
                view.position,
                view.size,
                view.magic,
                view.compresscodec,
                view.max_timestamp,
                view.partition_leader_epoch,
                view.isvalid
            );
        }
        batches.push(view);
        position += header.size.max(1);
    }
    if args.json {
        super::print(true, &batches, String::new);
    }
    Ok(())
}

/// An offset index (8-byte entries: relative offset, position) or a time
/// index (12-byte: timestamp, relative offset). Preallocated zero entries
/// past the last one end it, as Kafka reads them.
fn dump_index(path: &Path, bytes: &[u8], width: usize, args: &DumpLogArgs) -> Result<(), CliError> {
    let base = base_offset(path)?;
    let mut entries: Vec<IndexEntryView> = Vec::new();
    for (i, entry) in bytes.chunks_exact(width).enumerate() {
        let (relative, value) = if width == 8 {
            let relative = i32::from_be_bytes([entry[0], entry[1], entry[2], entry[3]]);
            let position = i32::from_be_bytes([entry[4], entry[5], entry[6], entry[7]]);
            (relative, position as i64)
        } else {
            let mut timestamp = [0u8; 8];
            timestamp.copy_from_slice(&entry[..8]);
            let relative = i32::from_be_bytes([entry[8], entry[9], entry[10], entry[11]]);
            (relative, i64::from_be_bytes(timestamp))
        };
        if i > 0 && relative == 0 && value == 0 {
            break;
        }
        let offset = base + relative as i64;
        if let (true, Some(last)) = (args.verify, entries.last()) {
            if offset < last.offset || (width == 8 && value <= last.value) {
                return Err(CliError::Refused(format!(
                    "{} entry {i}: offset {offset} at {value} does not follow offset {} at {}",
                    path.display(),
                    last.offset,
                    last.value
                )));
            }
        }
        if !args.json {
            let what = if width == 8 { "position" } else { "timestamp" };
            println!("offset: {offset} {what}: {value}");
        }
        entries.push(IndexEntryView { offset, value });
    }
    if args.verify && !bytes.len().is_multiple_of(width) {
        return Err(CliError::Refused(format!(
            "{}: {} bytes is not a whole number of {width}-byte entries",
            path.display(),
            bytes.len()
        )));
    }
    if args.json {
        super::print(true, &entries, String::new);
    }
    Ok(())
}
