//! Log entries as bytes: the record batch v2 (magic 2, CRC32C) and the legacy
//! message sets v0/v1 (magic 0/1, CRC32). This module reads their fixed
//! headers in place, checks them, and assigns offsets by patching the bytes a
//! producer sent, so the same bytes go producer -> disk -> consumer.
//!
//! It never decodes the records inside a batch on the hot path; only lookups
//! by timestamp go through `kafka-protocol`'s decoder. A legacy v1
//! compressed wrapper is decompressed (bounded) once on append, to check and
//! count its inner messages; its inner offsets are relative, so only the
//! wrapper's offset changes. A legacy v0 compressed wrapper carries absolute
//! inner offsets, so, as Kafka does, it is decompressed, given its offsets
//! and re-compressed with the same codec. It does no I/O.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{Record, RecordBatchDecoder};

use super::config::TimestampType;

/// Every entry starts with an 8-byte offset and a 4-byte size.
pub const LOG_OVERHEAD: usize = 12;
/// Fixed header of a v2 record batch, log overhead included.
pub const V2_HEADER_LEN: usize = 61;
/// Bytes to read to learn everything [`EntryHeader`] holds about any entry.
pub const HEADER_PEEK_LEN: usize = V2_HEADER_LEN;

// Smallest message body (after the log overhead): crc, magic, attributes,
// [timestamp], key length, value length.
const V0_MIN_BODY: usize = 4 + 1 + 1 + 4 + 4;
const V1_MIN_BODY: usize = V0_MIN_BODY + 8;
const V2_MIN_BODY: usize = V2_HEADER_LEN - LOG_OVERHEAD;

// Field positions inside an entry.
const V2_PARTITION_LEADER_EPOCH_POS: usize = 12;
const MAGIC_POS: usize = 16;
const V2_CRC_POS: usize = 17;
const V2_ATTRIBUTES_POS: usize = 21;
const V2_LAST_OFFSET_DELTA_POS: usize = 23;
const V2_MAX_TIMESTAMP_POS: usize = 35;
const V2_RECORDS_COUNT_POS: usize = 57;
const V2_PRODUCER_ID_POS: usize = 43;
const V2_PRODUCER_EPOCH_POS: usize = 51;
const V2_BASE_SEQUENCE_POS: usize = 53;
const TRANSACTIONAL_BIT: u8 = 1 << 4;
const CONTROL_BIT: u8 = 1 << 5;
const LEGACY_CRC_POS: usize = 12;
const LEGACY_ATTRIBUTES_POS: usize = 17;
const V1_TIMESTAMP_POS: usize = 18;

const TIMESTAMP_TYPE_BIT: u8 = 1 << 3;
const COMPRESSION_MASK: u8 = 0x07;

/// Why a sequence of bytes is not a valid run of log entries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("empty record set")]
    Empty,
    #[error("entry at byte {position} is cut short: needs {needed} bytes, {available} left")]
    Truncated {
        position: usize,
        needed: usize,
        available: usize,
    },
    #[error("entry at byte {position} declares an impossible size {size}")]
    InvalidSize { position: usize, size: i64 },
    #[error("entry at byte {position} has unknown magic {magic}")]
    UnknownMagic { position: usize, magic: i8 },
    #[error("entry at byte {position} failed its CRC check (stored {stored:#010x}, computed {computed:#010x})")]
    CrcMismatch {
        position: usize,
        stored: u32,
        computed: u32,
    },
    #[error("record batch at byte {position} holds {count} records but its offsets span {span}")]
    InvalidRecordCount {
        position: usize,
        count: i32,
        span: i64,
    },
    #[error("entry of {size} bytes is larger than max.message.bytes ({max})")]
    TooLarge { size: usize, max: u64 },
    #[error("entry at byte {position} cannot be decoded: {reason}")]
    Undecodable { position: usize, reason: String },
    #[error("compressed magic {magic} message at byte {position}: only uncompressed v0/v1 message sets are accepted")]
    UnsupportedLegacyCompression { position: usize, magic: i8 },
    /// Kafka's "Compacted topic cannot accept message without key"
    /// (INVALID_RECORD, with the record's index in Produce v8's
    /// `record_errors`).
    #[error("Compacted topic cannot accept message without key in topic partition (record {record_index})")]
    MissingKey { record_index: usize },
    /// Kafka's RecordValidationException for a CreateTime timestamp out of
    /// `message.timestamp.before.max.ms`/`after.max.ms`; `record_index` is
    /// the record's index in its batch (Produce v8's `batch_index`).
    #[error(
        "Timestamp {timestamp} of message with offset {offset} is out of range. \
         The timestamp should be within [{earliest}, {latest}]"
    )]
    InvalidTimestamp {
        record_index: usize,
        timestamp: i64,
        offset: i64,
        earliest: i64,
        latest: i64,
    },
}

/// What the fixed header of one entry says, without touching its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// The offset field: a v2 batch's base offset, or a legacy message's
    /// (wrapper) offset, which is the last offset it holds.
    pub offset_field: i64,
    /// Total bytes of the entry, log overhead included.
    pub size: usize,
    pub magic: i8,
    /// Last offset in the entry.
    pub last_offset: i64,
    /// Largest timestamp in the entry, -1 when it has none (v0).
    pub max_timestamp: i64,
    /// Compression codec id from the attributes (0 = none).
    pub compression: u8,
    /// Whether the timestamps are LogAppendTime.
    pub log_append_time: bool,
    /// The leader epoch a v2 batch was appended in (-1: none, legacy).
    pub partition_leader_epoch: i32,
}

impl EntryHeader {
    /// First offset of the entry when it is known from the header alone.
    /// Legacy compressed wrappers only name their last offset.
    pub fn first_offset(&self) -> Option<i64> {
        match self.magic {
            2 => Some(self.offset_field),
            _ if self.compression == 0 => Some(self.offset_field),
            _ => None,
        }
    }

    /// Parse the header of the entry at the start of `bytes`. `bytes` holds at
    /// least [`HEADER_PEEK_LEN`] bytes or everything that is left;
    /// `position` only labels errors. The body (and so the CRC) is not checked.
    pub fn parse(bytes: &[u8], position: usize) -> Result<EntryHeader, BatchError> {
        if bytes.len() < LOG_OVERHEAD + 5 {
            return Err(BatchError::Truncated {
                position,
                needed: LOG_OVERHEAD + 5,
                available: bytes.len(),
            });
        }
        let offset_field = read_i64(bytes, 0);
        let declared = read_i32(bytes, 8);
        let magic = bytes[MAGIC_POS] as i8;
        let min_body = match magic {
            0 => V0_MIN_BODY,
            1 => V1_MIN_BODY,
            2 => V2_MIN_BODY,
            _ => return Err(BatchError::UnknownMagic { position, magic }),
        };
        if declared < 0 || (declared as usize) < min_body {
            return Err(BatchError::InvalidSize {
                position,
                size: declared as i64,
            });
        }
        let size = LOG_OVERHEAD + declared as usize;
        let needed_for_header = if magic == 2 {
            V2_HEADER_LEN
        } else {
            LOG_OVERHEAD + min_body
        };
        if bytes.len() < needed_for_header {
            return Err(BatchError::Truncated {
                position,
                needed: needed_for_header,
                available: bytes.len(),
            });
        }
        let header = match magic {
            2 => {
                let attributes = read_i16(bytes, V2_ATTRIBUTES_POS) as u16;
                let last_offset_delta = read_i32(bytes, V2_LAST_OFFSET_DELTA_POS);
                EntryHeader {
                    offset_field,
                    size,
                    magic,
                    last_offset: offset_field.saturating_add(last_offset_delta as i64),
                    max_timestamp: read_i64(bytes, V2_MAX_TIMESTAMP_POS),
                    compression: (attributes as u8) & COMPRESSION_MASK,
                    log_append_time: (attributes as u8) & TIMESTAMP_TYPE_BIT != 0,
                    partition_leader_epoch: read_i32(bytes, V2_PARTITION_LEADER_EPOCH_POS),
                }
            }
            _ => {
                let attributes = bytes[LEGACY_ATTRIBUTES_POS];
                EntryHeader {
                    offset_field,
                    size,
                    magic,
                    last_offset: offset_field,
                    max_timestamp: if magic == 1 {
                        read_i64(bytes, V1_TIMESTAMP_POS)
                    } else {
                        -1
                    },
                    compression: attributes & COMPRESSION_MASK,
                    log_append_time: magic == 1 && attributes & TIMESTAMP_TYPE_BIT != 0,
                    partition_leader_epoch: -1,
                }
            }
        };
        Ok(header)
    }
}

/// Check one whole entry: header, exact size and CRC. `entry` must be exactly
/// the entry's bytes or start with them.
pub fn validate_entry(entry: &[u8], position: usize) -> Result<EntryHeader, BatchError> {
    let header = EntryHeader::parse(entry, position)?;
    if entry.len() < header.size {
        return Err(BatchError::Truncated {
            position,
            needed: header.size,
            available: entry.len(),
        });
    }
    let entry = &entry[..header.size];
    let (stored, computed) = match header.magic {
        2 => (
            read_u32(entry, V2_CRC_POS),
            crc32c::crc32c(&entry[V2_ATTRIBUTES_POS..]),
        ),
        _ => (
            read_u32(entry, LEGACY_CRC_POS),
            crc32fast::hash(&entry[MAGIC_POS..]),
        ),
    };
    if stored != computed {
        return Err(BatchError::CrcMismatch {
            position,
            stored,
            computed,
        });
    }
    if header.magic == 2 {
        let count = read_i32(entry, V2_RECORDS_COUNT_POS);
        let span = header.last_offset - header.offset_field + 1;
        if count < 1 || count as i64 != span {
            return Err(BatchError::InvalidRecordCount {
                position,
                count,
                span,
            });
        }
    }
    Ok(header)
}

/// A v2 batch's producer fields (the idempotent producer's), read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerFields {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_offset_delta: i32,
    pub max_timestamp: i64,
    pub transactional: bool,
    pub control: bool,
}

/// The producer fields of the v2 batch starting `entry`, when it names a
/// producer (`producer_id` >= 0). Legacy entries have none.
pub fn producer_fields(entry: &[u8]) -> Option<ProducerFields> {
    if entry.len() < V2_HEADER_LEN || entry[MAGIC_POS] as i8 != 2 {
        return None;
    }
    let producer_id = read_i64(entry, V2_PRODUCER_ID_POS);
    if producer_id < 0 {
        return None;
    }
    let attributes = entry[V2_ATTRIBUTES_POS + 1];
    Some(ProducerFields {
        producer_id,
        producer_epoch: read_i16(entry, V2_PRODUCER_EPOCH_POS),
        base_sequence: read_i32(entry, V2_BASE_SEQUENCE_POS),
        last_offset_delta: read_i32(entry, V2_LAST_OFFSET_DELTA_POS),
        max_timestamp: read_i64(entry, V2_MAX_TIMESTAMP_POS),
        transactional: attributes & TRANSACTIONAL_BIT != 0,
        control: attributes & CONTROL_BIT != 0,
    })
}

/// Where one entry of an appended record set landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryMeta {
    /// Byte position inside the record set.
    pub position: usize,
    pub size: usize,
    /// What the entry's first 8 bytes (its offset field) must say on disk.
    pub offset_field: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub magic: i8,
}

/// A producer's record set after validation and offset assignment.
///
/// The offsets are not written into `bytes` (which may be shared with the
/// request buffer): whoever writes the entries puts each entry's prefix
/// (its `offset_field`, and for a v2 batch stamped by a leader its length
/// and partition leader epoch) in place of its first bytes. See
/// [`AssignedRecords::chunks`].
#[derive(Debug, Clone)]
pub struct AssignedRecords {
    pub bytes: Bytes,
    pub first_offset: i64,
    pub last_offset: i64,
    pub record_count: u64,
    /// The broker's clock, when the log stamped LogAppendTime.
    pub log_append_time: Option<i64>,
    pub entries: Vec<EntryMeta>,
    /// The leader epoch stamped into each v2 batch (KIP-101); `None` keeps
    /// the batches' own (a follower copying its leader).
    pub partition_leader_epoch: Option<i32>,
}

/// The first bytes of an entry as they go to disk.
#[derive(Debug, Clone, Copy)]
pub struct EntryPrefix {
    bytes: [u8; V2_PARTITION_LEADER_EPOCH_POS + 4],
    len: usize,
}

impl EntryPrefix {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// One v2 record batch (`entry`, log overhead included) written again with
/// `compression`: every record and its batch fields (producer id, epoch and
/// sequence, transactional and control flags, timestamps) kept; offsets
/// are assigned afterwards as for any append. The error is the codec's.
fn recompress_batch(
    entry: &[u8],
    compression: kafka_protocol::records::Compression,
) -> Result<Bytes, String> {
    let mut bytes = Bytes::copy_from_slice(entry);
    let set = RecordBatchDecoder::decode(&mut bytes).map_err(|e| e.to_string())?;
    let mut buf = BytesMut::new();
    kafka_protocol::records::RecordBatchEncoder::encode(
        &mut buf,
        set.records.iter(),
        &kafka_protocol::records::RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| e.to_string())?;
    Ok(buf.freeze())
}

/// The entries of `records` as the topic's `compression.type` wants them
/// stored (Kafka's LogValidator): a v2 batch with another codec is written
/// again with `target`; legacy (v0/v1) entries are kept as sent. Answers
/// `records` itself when nothing changes.
pub fn recompress(
    records: Bytes,
    target: kafka_protocol::records::Compression,
) -> Result<Bytes, BatchError> {
    let target_id = target as u8;
    let mut changed = false;
    let mut out = BytesMut::with_capacity(records.len());
    let mut position = 0;
    while position < records.len() {
        let header = EntryHeader::parse(&records[position..], position)?;
        let end = position + header.size;
        let entry = records.get(position..end).ok_or(BatchError::Truncated {
            position,
            needed: header.size,
            available: records.len() - position,
        })?;
        if header.magic == 2 && header.compression != target_id {
            let written = recompress_batch(entry, target).map_err(|reason| {
                BatchError::Undecodable { position, reason }
            })?;
            out.extend_from_slice(&written);
            changed = true;
        } else {
            out.extend_from_slice(entry);
        }
        position = end;
    }
    Ok(if changed { out.freeze() } else { records })
}

/// Validate every entry of a produced record set, then give its records the
/// offsets `next_offset..`, stamping LogAppendTime when the topic asks for it.
pub fn assign_offsets(
    records: impl Into<Bytes>,
    next_offset: i64,
    now_ms: i64,
    timestamp_type: TimestampType,
    max_message_bytes: u64,
) -> Result<AssignedRecords, BatchError> {
    let records: Bytes = records.into();
    if records.is_empty() {
        return Err(BatchError::Empty);
    }
    let append_time = (timestamp_type == TimestampType::LogAppendTime).then_some(now_ms);
    // Only LogAppendTime rewrites bytes inside the CRC; then, and only then,
    // the record set is copied.
    let mut stamped: Option<BytesMut> = append_time.map(|_| BytesMut::from(&records[..]));
    let mut position = 0;
    let mut offset = next_offset;
    let mut entries = Vec::new();
    // v0 compressed wrappers rebuilt with new inner offsets, by entry index.
    let mut rebuilt: Vec<(usize, Vec<u8>)> = Vec::new();
    while position < records.len() {
        let header = validate_entry(&records[position..], position)?;
        if header.size as u64 > max_message_bytes {
            return Err(BatchError::TooLarge {
                size: header.size,
                max: max_message_bytes,
            });
        }
        let count = match header.magic {
            2 => {
                if let (Some(now), Some(copy)) = (append_time, stamped.as_mut()) {
                    stamp_v2_append_time(&mut copy[position..position + header.size], now);
                }
                header.last_offset - header.offset_field + 1
            }
            _ if header.compression == 0 => {
                if let (Some(now), Some(copy), 1) = (append_time, stamped.as_mut(), header.magic) {
                    stamp_v1_append_time(&mut copy[position..position + header.size], now);
                }
                1
            }
            1 => {
                let entry = &records[position..position + header.size];
                let count = legacy_inner_count(entry, header.compression, position)?;
                if let (Some(now), Some(copy)) = (append_time, stamped.as_mut()) {
                    stamp_v1_append_time(&mut copy[position..position + header.size], now);
                }
                count
            }
            _ => {
                let entry = &records[position..position + header.size];
                let (count, wrapper) =
                    reencode_v0_wrapper(entry, header.compression, offset, position)?;
                rebuilt.push((entries.len(), wrapper));
                count
            }
        };
        let entry_ts = match (append_time, header.magic) {
            (Some(now), 1..=2) => now,
            _ => header.max_timestamp,
        };
        let last_offset = offset + count - 1;
        entries.push(EntryMeta {
            position,
            size: header.size,
            // A legacy message's offset field is its (last) offset.
            offset_field: if header.magic == 2 {
                offset
            } else {
                last_offset
            },
            last_offset,
            max_timestamp: entry_ts,
            magic: header.magic,
        });
        offset += count;
        position += header.size;
    }
    let source = stamped.map_or(records, BytesMut::freeze);
    let bytes = if rebuilt.is_empty() {
        source
    } else {
        splice_rebuilt(&source, &mut entries, rebuilt)
    };
    Ok(AssignedRecords {
        bytes,
        first_offset: next_offset,
        last_offset: offset - 1,
        record_count: (offset - next_offset) as u64,
        log_append_time: append_time,
        entries,
        partition_leader_epoch: None,
    })
}

impl AssignedRecords {
    /// The bytes to write, in order: for each entry its new prefix, then
    /// the rest of the entry, borrowed from `bytes` (no copy).
    pub fn chunks<'a>(&'a self, prefixes: &'a [EntryPrefix]) -> Vec<&'a [u8]> {
        let mut chunks = Vec::with_capacity(self.entries.len() * 2);
        for (entry, prefix) in self.entries.iter().zip(prefixes) {
            chunks.push(prefix.as_slice());
            chunks.push(&self.bytes[entry.position + prefix.len..entry.position + entry.size]);
        }
        chunks
    }

    /// The entries' prefixes: the offset field, big-endian; with a leader
    /// epoch to stamp, a v2 batch's length and partition leader epoch too
    /// (outside its CRC, so nothing else changes).
    pub fn prefixes(&self) -> Vec<EntryPrefix> {
        self.entries
            .iter()
            .map(|e| {
                let mut bytes = [0u8; V2_PARTITION_LEADER_EPOCH_POS + 4];
                bytes[..8].copy_from_slice(&e.offset_field.to_be_bytes());
                match self.partition_leader_epoch {
                    Some(epoch) if e.magic == 2 => {
                        bytes[8..12].copy_from_slice(&self.bytes[e.position + 8..e.position + 12]);
                        bytes[12..].copy_from_slice(&epoch.to_be_bytes());
                        EntryPrefix {
                            bytes,
                            len: V2_PARTITION_LEADER_EPOCH_POS + 4,
                        }
                    }
                    _ => EntryPrefix { bytes, len: 8 },
                }
            })
            .collect()
    }

    /// The entries exactly as they go to disk (tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn to_vec(&self) -> Vec<u8> {
        let prefixes = self.prefixes();
        self.chunks(&prefixes).concat()
    }
}

/// Refuses the first record whose CreateTime timestamp lies more than
/// `before_max_ms` behind or `after_max_ms` ahead of `now_ms` (Kafka's
/// `LogValidator.validateTimestamp`). It decodes every record, so appends
/// call it only when a topic sets those bounds; v0 records have no
/// timestamp and pass.
pub fn check_timestamps(
    records: &[u8],
    now_ms: i64,
    before_max_ms: i64,
    after_max_ms: i64,
) -> Result<(), BatchError> {
    let earliest = now_ms.saturating_sub(before_max_ms);
    let latest = now_ms.saturating_add(after_max_ms);
    let mut position = 0;
    while position < records.len() {
        let header = validate_entry(&records[position..], position)?;
        if header.magic > 0 {
            let entry = &records[position..position + header.size];
            for (record_index, record) in decode_entry(entry, position)?.iter().enumerate() {
                if record.timestamp < earliest || record.timestamp > latest {
                    return Err(BatchError::InvalidTimestamp {
                        record_index,
                        timestamp: record.timestamp,
                        offset: record.offset,
                        earliest,
                        latest,
                    });
                }
            }
        }
        position += header.size;
    }
    Ok(())
}

/// Every record of a compacted topic needs a key (Kafka's LogValidator).
/// Control batches carry their own keys and are not checked.
pub fn check_keys(records: &[u8]) -> Result<(), BatchError> {
    let mut position = 0;
    while position < records.len() {
        let header = validate_entry(&records[position..], position)?;
        let entry = &records[position..position + header.size];
        let control = header.magic == 2
            && entry
                .get(V2_ATTRIBUTES_POS + 1)
                .is_some_and(|attributes| attributes & CONTROL_BIT != 0);
        if !control {
            if let Some(record_index) = decode_entry(entry, position)?
                .iter()
                .position(|record| record.key.is_none())
            {
                return Err(BatchError::MissingKey { record_index });
            }
        }
        position += header.size;
    }
    Ok(())
}

/// Decode every record of one entry (any magic, any codec). Used for lookups
/// by timestamp and for timestamp bounds, never on the default produce path
/// or the fetch path.
pub fn decode_entry(entry: &[u8], position: usize) -> Result<Vec<Record>, BatchError> {
    let mut buf = Bytes::copy_from_slice(entry);
    RecordBatchDecoder::decode(&mut buf)
        .map(|set| set.records)
        .map_err(|e| BatchError::Undecodable {
            position,
            reason: e.to_string(),
        })
}

/// The record set with rebuilt entries in place of the originals; entry
/// positions and sizes follow.
fn splice_rebuilt(
    source: &Bytes,
    entries: &mut [EntryMeta],
    rebuilt: Vec<(usize, Vec<u8>)>,
) -> Bytes {
    let mut replacements: std::collections::HashMap<usize, Vec<u8>> = rebuilt.into_iter().collect();
    let mut out = BytesMut::with_capacity(source.len());
    for (i, entry) in entries.iter_mut().enumerate() {
        let at = out.len();
        match replacements.remove(&i) {
            Some(bytes) => out.extend_from_slice(&bytes),
            None => out.extend_from_slice(&source[entry.position..entry.position + entry.size]),
        }
        entry.position = at;
        entry.size = out.len() - at;
    }
    out.freeze()
}

/// Decompress a v0 wrapper, give its inner messages the absolute offsets
/// `first_offset..`, re-compress with the same codec and rebuild the wrapper
/// (new value, size and CRC). Returns the count and the new entry.
fn reencode_v0_wrapper(
    entry: &[u8],
    codec: u8,
    first_offset: i64,
    position: usize,
) -> Result<(i64, Vec<u8>), BatchError> {
    use kafka_protocol::compression::{Compressor, Gzip, Lz4, Snappy};
    let undecodable = |reason: String| BatchError::Undecodable { position, reason };
    let (key_field, value) =
        legacy_key_and_value(entry).ok_or_else(|| undecodable("wrapper has no value".into()))?;
    let mut inner = decompress_legacy(value, codec).map_err(undecodable)?;
    let mut at = 0;
    let mut count = 0i64;
    while at < inner.len() {
        let header = validate_entry(&inner[at..], position)?;
        if header.magic != 0 || header.compression != 0 {
            return Err(undecodable(format!(
                "inner message {count} has magic {} and codec {}",
                header.magic, header.compression
            )));
        }
        // The offset field lies outside the message CRC.
        write_i64(&mut inner[at..], 0, first_offset + count);
        count += 1;
        at += header.size;
    }
    if count == 0 {
        return Err(undecodable("compressed wrapper holds no messages".into()));
    }
    let mut compressed = BytesMut::new();
    let fill = |tmp: &mut BytesMut| {
        tmp.extend_from_slice(&inner);
        Ok(())
    };
    match codec {
        1 => Gzip::compress(&mut compressed, fill),
        2 => Snappy::compress(&mut compressed, fill),
        3 => Lz4::compress(&mut compressed, fill),
        other => return Err(undecodable(format!("unknown codec {other}"))),
    }
    .map_err(|e| undecodable(e.to_string()))?;
    let mut body = Vec::with_capacity(compressed.len() + key_field.len() + 6);
    body.push(0); // magic
    body.push(entry[LEGACY_ATTRIBUTES_POS]);
    body.extend_from_slice(key_field);
    body.extend_from_slice(&(compressed.len() as i32).to_be_bytes());
    body.extend_from_slice(&compressed);
    let mut wrapper = Vec::with_capacity(body.len() + LOG_OVERHEAD + 4);
    wrapper.extend_from_slice(&(first_offset + count - 1).to_be_bytes());
    wrapper.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    wrapper.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    wrapper.extend_from_slice(&body);
    Ok((count, wrapper))
}

/// Check and count the inner messages of a v1 compressed wrapper.
fn legacy_inner_count(entry: &[u8], codec: u8, position: usize) -> Result<i64, BatchError> {
    let undecodable = |reason: String| BatchError::Undecodable { position, reason };
    let value = legacy_value(entry).ok_or_else(|| undecodable("wrapper has no value".into()))?;
    let inner = decompress_legacy(value, codec).map_err(undecodable)?;
    let mut at = 0;
    let mut count = 0i64;
    while at < inner.len() {
        let header = validate_entry(&inner[at..], position)?;
        if header.magic != 1 || header.compression != 0 {
            return Err(undecodable(format!(
                "inner message {count} has magic {} and codec {}",
                header.magic, header.compression
            )));
        }
        count += 1;
        at += header.size;
    }
    if count == 0 {
        return Err(undecodable("compressed wrapper holds no messages".into()));
    }
    Ok(count)
}

/// The value bytes of a legacy message (after crc, magic, attributes, the
/// v1 timestamp and the key).
fn legacy_value(entry: &[u8]) -> Option<&[u8]> {
    legacy_key_and_value(entry).map(|(_, value)| value)
}

/// The key field (length prefix included) and the value bytes of a legacy
/// message.
fn legacy_key_and_value(entry: &[u8]) -> Option<(&[u8], &[u8])> {
    let timestamp_len = if entry.get(MAGIC_POS) == Some(&1) {
        8
    } else {
        0
    };
    let key_start = V1_TIMESTAMP_POS + timestamp_len;
    let key_len = read_i32(entry.get(key_start..key_start + 4)?, 0);
    let value_start = key_start + 4 + key_len.max(0) as usize;
    let key_field = entry.get(key_start..value_start)?;
    let value_len = read_i32(entry.get(value_start..value_start + 4)?, 0);
    let at = value_start + 4;
    let value = (value_len >= 0)
        .then(|| entry.get(at..at + value_len as usize))
        .flatten()?;
    Some((key_field, value))
}

/// Java's and kafka-python's legacy snappy: a header, then length-prefixed
/// raw snappy blocks.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];

fn decompress_legacy(value: &[u8], codec: u8) -> Result<Vec<u8>, String> {
    use kafka_protocol::compression::{Decompressor, Gzip, Lz4, Snappy};
    let whole = |bytes: &[u8], codec: u8| -> Result<Vec<u8>, String> {
        let mut buf = Bytes::copy_from_slice(bytes);
        match codec {
            1 => Gzip::decompress(&mut buf, |b: &mut Bytes| Ok(b.to_vec()))
                .map_err(|e| e.to_string()),
            2 => Snappy::decompress(&mut buf, |b: &mut Bytes| Ok(b.to_vec()))
                .map_err(|e| e.to_string()),
            3 => {
                Lz4::decompress(&mut buf, |b: &mut Bytes| Ok(b.to_vec())).map_err(|e| e.to_string())
            }
            other => Err(format!("unknown codec {other}")),
        }
    };
    if codec != 2 || !value.starts_with(&XERIAL_MAGIC) {
        return whole(value, codec);
    }
    let mut out = Vec::new();
    let mut at = 16;
    while at < value.len() {
        let len = value
            .get(at..at + 4)
            .map(|b| read_i32(b, 0))
            .filter(|&l| l >= 0)
            .ok_or("bad xerial block length")? as usize;
        let block = value
            .get(at + 4..at + 4 + len)
            .ok_or("xerial block cut short")?;
        out.extend_from_slice(&whole(block, 2)?);
        if out.len() > kafka_protocol::compression::MAX_DECOMPRESSED_BYTES {
            return Err("snappy wrapper decompresses to too many bytes".into());
        }
        at += 4 + len;
    }
    Ok(out)
}

fn stamp_v2_append_time(entry: &mut [u8], now_ms: i64) {
    let attributes = read_i16(entry, V2_ATTRIBUTES_POS) as u16 | TIMESTAMP_TYPE_BIT as u16;
    entry[V2_ATTRIBUTES_POS..V2_ATTRIBUTES_POS + 2].copy_from_slice(&attributes.to_be_bytes());
    write_i64(entry, V2_MAX_TIMESTAMP_POS, now_ms);
    let crc = crc32c::crc32c(&entry[V2_ATTRIBUTES_POS..]);
    entry[V2_CRC_POS..V2_CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
}

fn stamp_v1_append_time(entry: &mut [u8], now_ms: i64) {
    entry[LEGACY_ATTRIBUTES_POS] |= TIMESTAMP_TYPE_BIT;
    write_i64(entry, V1_TIMESTAMP_POS, now_ms);
    let crc = crc32fast::hash(&entry[MAGIC_POS..]);
    entry[LEGACY_CRC_POS..LEGACY_CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
}

fn read_i64(bytes: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    i64::from_be_bytes(b)
}

fn read_i32(bytes: &[u8], at: usize) -> i32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    i32::from_be_bytes(b)
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    read_i32(bytes, at) as u32
}

fn write_i64(bytes: &mut [u8], at: usize, value: i64) {
    bytes[at..at + 8].copy_from_slice(&value.to_be_bytes());
}

fn read_i16(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([bytes[at], bytes[at + 1]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::testing::{batch_v2, legacy_message_set};
    use kafka_protocol::records::Compression;

    /// A v2 batch gets its base offset rewritten and keeps every other byte.
    #[test]
    fn assigns_offsets_to_v2_in_place() {
        let batch = batch_v2(3, 100, Compression::None);
        assert_eq!(
            EntryHeader::parse(&batch, 0).unwrap().size,
            batch.len(),
            "one batch"
        );
        let assigned = assign_offsets(
            BytesMut::from(&batch[..]),
            42,
            0,
            TimestampType::CreateTime,
            1 << 20,
        )
        .unwrap();
        assert_eq!((assigned.first_offset, assigned.last_offset), (42, 44));
        let written = assigned.to_vec();
        assert_eq!(&written[8..], &batch[8..]);
        assert_eq!(read_i64(&written, 0), 42);
        validate_entry(&written, 0).unwrap();
    }

    /// LogAppendTime rewrites the max timestamp and keeps the CRC valid.
    #[test]
    fn stamps_log_append_time() {
        let batch = batch_v2(2, 10, Compression::Gzip);
        let assigned = assign_offsets(
            BytesMut::from(&batch[..]),
            0,
            777,
            TimestampType::LogAppendTime,
            1 << 20,
        )
        .unwrap();
        let header = validate_entry(&assigned.to_vec(), 0).unwrap();
        assert!(header.log_append_time);
        assert_eq!(header.max_timestamp, 777);
    }

    /// A flipped byte anywhere in the CRC'd body is caught.
    #[test]
    fn detects_corruption() {
        let mut batch = batch_v2(2, 50, Compression::None).to_vec();
        let at = batch.len() - 3;
        batch[at] ^= 0xff;
        assert!(matches!(
            assign_offsets(
                BytesMut::from(&batch[..]),
                0,
                0,
                TimestampType::CreateTime,
                1 << 20
            ),
            Err(BatchError::CrcMismatch { .. })
        ));
    }

    /// Oversized batches are refused with the limit in the error.
    #[test]
    fn refuses_oversized() {
        let batch = batch_v2(4, 1000, Compression::None);
        let err = assign_offsets(
            BytesMut::from(&batch[..]),
            0,
            0,
            TimestampType::CreateTime,
            100,
        )
        .unwrap_err();
        assert!(matches!(err, BatchError::TooLarge { max: 100, .. }));
    }

    /// Uncompressed legacy messages get one offset each; a v1 compressed
    /// wrapper (gzip, snappy, lz4) gets the offset of its last inner message
    /// and keeps its bytes; a v0 compressed wrapper is rebuilt with absolute
    /// inner offsets and a valid CRC.
    #[test]
    fn legacy_formats_get_offsets() {
        for magic in [0, 1] {
            let set = legacy_message_set(magic, 3, Compression::None);
            let assigned = assign_offsets(
                BytesMut::from(&set[..]),
                10,
                5,
                TimestampType::CreateTime,
                1 << 20,
            )
            .unwrap();
            assert_eq!(assigned.last_offset, 12, "magic {magic}");
            let records =
                RecordBatchDecoder::decode_all(&mut Bytes::from(assigned.to_vec())).unwrap();
            let offsets: Vec<i64> = records
                .iter()
                .flat_map(|s| s.records.iter().map(|r| r.offset))
                .collect();
            assert_eq!(offsets, vec![10, 11, 12]);
        }
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let set = legacy_message_set(1, 3, codec);
            let assigned = assign_offsets(
                BytesMut::from(&set[..]),
                10,
                5,
                TimestampType::CreateTime,
                1 << 20,
            )
            .unwrap();
            assert_eq!(
                (assigned.first_offset, assigned.last_offset),
                (10, 12),
                "{codec:?}"
            );
            assert_eq!(assigned.record_count, 3);
            let written = assigned.to_vec();
            assert_eq!(
                read_i64(&written, 0),
                12,
                "the wrapper carries its last offset"
            );
            assert_eq!(&written[8..], &set[8..], "nothing else changes");
        }
        for codec in [Compression::Gzip, Compression::Snappy] {
            // v0 (gzip and snappy only): inner offsets are absolute, so the
            // wrapper is rebuilt.
            let set = legacy_message_set(0, 3, codec);
            let assigned = assign_offsets(
                BytesMut::from(&set[..]),
                10,
                5,
                TimestampType::CreateTime,
                1 << 20,
            )
            .unwrap();
            assert_eq!(
                (assigned.first_offset, assigned.last_offset),
                (10, 12),
                "{codec:?}"
            );
            let written = assigned.to_vec();
            let header = validate_entry(&written, 0).unwrap();
            assert_eq!(
                (header.magic, header.last_offset, header.size),
                (0, 12, written.len())
            );
            let inner =
                decompress_legacy(legacy_value(&written).unwrap(), header.compression).unwrap();
            let mut offsets = Vec::new();
            let mut at = 0;
            while at < inner.len() {
                let h = validate_entry(&inner[at..], at).unwrap();
                offsets.push(h.offset_field);
                at += h.size;
            }
            assert_eq!(offsets, vec![10, 11, 12], "{codec:?}");
        }
    }

    /// A valid batch whose base timestamp is i64::MAX decodes (wrapping, as
    /// Java does) instead of panicking on overflow: the fuzzer found this.
    #[test]
    fn extreme_base_timestamp_does_not_panic_the_decoder() {
        let mut batch = batch_v2(3, 10, Compression::None).to_vec();
        batch[27..35].copy_from_slice(&i64::MAX.to_be_bytes());
        let crc = crc32c::crc32c(&batch[V2_ATTRIBUTES_POS..]);
        batch[V2_CRC_POS..V2_CRC_POS + 4].copy_from_slice(&crc.to_be_bytes());
        let records = decode_entry(&batch, 0).unwrap();
        assert_eq!(records.len(), 3);
    }

    /// Garbage never panics the parser.
    #[test]
    fn garbage_is_an_error() {
        for len in 0..80 {
            let junk: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            let _ = assign_offsets(
                BytesMut::from(&junk[..]),
                0,
                0,
                TimestampType::CreateTime,
                1 << 20,
            );
        }
        let zeros = [0u8; 64];
        assert!(assign_offsets(
            BytesMut::from(&zeros[..]),
            0,
            0,
            TimestampType::CreateTime,
            1 << 20
        )
        .is_err());
    }
}
