//! Record batches ferrolog writes and reads itself (group metadata and
//! offsets, extension records): encode one uncompressed v2 batch, and
//! decode a run of log entries (as a read returns them) into records.
//! Both go through `kafka-protocol`'s batch codec; only the entry framing
//! comes from `batch`. Recompression on append and the cleaner's rewrite use
//! the same codec, so storage needs nothing from the wire layer.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::batch::{EntryHeader, LOG_OVERHEAD};

/// A record to write: key, value (None: a tombstone) and headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewRecord {
    /// The key, if any.
    pub key: Option<Bytes>,
    /// The value; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<(String, Option<Bytes>)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("record batch: {0}")]
pub struct RecordBatchError(pub String);

/// One uncompressed v2 batch holding `records`, stamped `now_ms` (create
/// time); offsets are relative, the log assigns the real ones.
pub fn encode_batch(records: &[NewRecord], now_ms: i64) -> Result<Bytes, RecordBatchError> {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let headers = r
                .headers
                .iter()
                .map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone()))
                .collect();
            data_record(i, now_ms, r.key.clone(), r.value.clone(), headers)
        })
        .collect();
    encode_records(&records)
}

/// The `index`th data record of a batch (no producer id, create time).
pub fn data_record(
    index: usize,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: IndexMap<StrBytes, Option<Bytes>>,
) -> Record {
    Record {
        transactional: false,
        control: false,
        partition_leader_epoch: -1,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset: index as i64,
        // One batch: kafka-protocol splits batches where offset - sequence changes.
        sequence: index as i32,
        timestamp,
        key,
        value,
        headers,
    }
}

/// `records` as one uncompressed v2 batch.
pub fn encode_records(records: &[Record]) -> Result<Bytes, RecordBatchError> {
    encode_records_with(records, Compression::None)
}

/// `records` as v2 batches compressed with `compression` (kafka-protocol
/// starts a new batch where the records' batch fields change).
pub fn encode_records_with(
    records: &[Record],
    compression: Compression,
) -> Result<Bytes, RecordBatchError> {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|e| RecordBatchError(e.to_string()))?;
    Ok(buf.freeze())
}

/// Every data record (control records skipped) of every whole entry in
/// `entries`; a trailing partial entry is left. Also the last offset of the
/// last whole entry, so a reader knows where to continue.
pub fn decode_entries(entries: &[u8]) -> Result<(Vec<Record>, Option<i64>), RecordBatchError> {
    let mut out = Vec::new();
    let mut last_offset = None;
    let mut position = 0;
    while position + LOG_OVERHEAD <= entries.len() {
        let Ok(header) = EntryHeader::parse(&entries[position..], position) else {
            break;
        };
        if position + header.size > entries.len() {
            break;
        }
        let mut bytes = Bytes::copy_from_slice(&entries[position..position + header.size]);
        let set =
            RecordBatchDecoder::decode(&mut bytes).map_err(|e| RecordBatchError(e.to_string()))?;
        out.extend(set.records.into_iter().filter(|r| !r.control));
        position += header.size;
        last_offset = Some(header.last_offset);
    }
    Ok((out, last_offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `encode_batch` writes, `decode_entries` reads back, headers and
    /// tombstones included; a cut-off trailing entry is left for later.
    #[test]
    fn round_trip_and_partial_tail() {
        let records = vec![
            NewRecord {
                key: Some(Bytes::from_static(b"k")),
                value: Some(Bytes::from_static(b"v")),
                headers: vec![("h".into(), Some(Bytes::from_static(b"x")))],
            },
            NewRecord {
                key: Some(Bytes::from_static(b"gone")),
                value: None,
                headers: vec![],
            },
        ];
        let batch = encode_batch(&records, 1234).unwrap();
        let mut two = batch.to_vec();
        two.extend_from_slice(&batch[..batch.len() - 1]);
        let (decoded, last) = decode_entries(&two).unwrap();
        assert_eq!(decoded.len(), 2);
        assert_eq!(last, Some(1));
        assert_eq!(decoded[0].value.as_deref(), Some(&b"v"[..]));
        assert_eq!(decoded[0].timestamp, 1234);
        assert_eq!(decoded[0].headers.len(), 1);
        assert_eq!(decoded[1].value, None);
    }
}
