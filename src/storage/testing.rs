//! Builders for test data: real record batches made with `kafka-protocol`'s
//! encoder, so tests, benches and fuzzers store what real clients send.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

/// Records with keys `k<i>`, values of `value_len` bytes and timestamps
/// `1_000_000 + i`.
pub fn records(count: usize, value_len: usize) -> Vec<Record> {
    records_at(count, value_len, 1_000_000)
}

pub fn records_at(count: usize, value_len: usize, first_timestamp: i64) -> Vec<Record> {
    (0..count)
        .map(|i| {
            let mut headers = IndexMap::new();
            headers.insert(
                StrBytes::from_static_str("h"),
                Some(Bytes::from_static(b"v")),
            );
            super::records::data_record(
                i,
                first_timestamp + i as i64,
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(vec![(i % 251) as u8; value_len])),
                headers,
            )
        })
        .collect()
}

/// One v2 record batch as a producer sends it (base offset 0).
pub fn batch_v2(count: usize, value_len: usize, compression: Compression) -> Bytes {
    encode(&records(count, value_len), 2, compression)
}

/// A v2 batch with timestamps starting at `first_timestamp`.
pub fn batch_v2_at(count: usize, value_len: usize, first_timestamp: i64) -> Bytes {
    encode(
        &records_at(count, value_len, first_timestamp),
        2,
        Compression::None,
    )
}

/// A v2 batch of `count` records from an idempotent producer, with
/// sequences from `base_sequence`.
pub fn batch_v2_idempotent(
    count: usize,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
) -> Bytes {
    let mut records = records(count, 16);
    for (i, record) in records.iter_mut().enumerate() {
        record.producer_id = producer_id;
        record.producer_epoch = producer_epoch;
        record.sequence = base_sequence.wrapping_add(i as i32);
    }
    encode(&records, 2, Compression::None)
}

/// A legacy message set (magic 0 or 1), compressed into one wrapper or not.
pub fn legacy_message_set(magic: i8, count: usize, compression: Compression) -> Bytes {
    let mut records = records(count, 16);
    for record in &mut records {
        // Headers arrived with magic 2.
        record.headers.clear();
    }
    encode(&records, magic, compression)
}

fn encode(records: &[Record], version: i8, compression: Compression) -> Bytes {
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version,
        compression,
    };
    match RecordBatchEncoder::encode(&mut buf, records.iter(), &options) {
        Ok(()) => buf.freeze(),
        // Only reachable with a codec feature switched off: a bug in the caller.
        Err(e) => panic!("test batch could not be encoded: {e}"),
    }
}

/// One v2 batch of keyed records (`None` values are tombstones) with
/// timestamps from `first_timestamp`.
pub fn keyed_batch(
    entries: &[(&str, Option<&str>)],
    first_timestamp: i64,
    compression: Compression,
) -> Bytes {
    let records: Vec<Record> = entries
        .iter()
        .enumerate()
        .map(|(i, (key, value))| {
            super::records::data_record(
                i,
                first_timestamp + i as i64,
                Some(Bytes::copy_from_slice(key.as_bytes())),
                value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
                IndexMap::new(),
            )
        })
        .collect();
    encode(&records, 2, compression)
}
