//! The records consumer groups persist in `__consumer_offsets`, in Kafka's
//! key and value schemas (`OffsetCommitKey`/`OffsetCommitValue`,
//! `GroupMetadataKey`/`GroupMetadataValue` from Kafka's group-coordinator
//! module; `kafka-protocol` does not ship these, so this file carries their
//! small fixed layouts). Writes use the versions Kafka 3.x writes (offset key
//! v1, offset value v3, group key v2, group value v3); reads accept values
//! v0-3. A null value is a tombstone.
//!
//! Decoding never trusts a length: every read is bounds-checked and an
//! error, never a panic.

use bytes::{BufMut, Bytes, BytesMut};

use super::state::{GroupSnapshot, MemberSnapshot};
use crate::storage::records::{self as batch, NewRecord};
use crate::topic_partition::TopicPartition;

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
}

/// One decoded `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupRecord {
    Offset {
        group: String,
        tp: TopicPartition,
        /// None: the offset was deleted (tombstone).
        value: Option<OffsetAndMetadata>,
    },
    Group {
        group: String,
        /// None: the group was deleted (tombstone).
        value: Option<GroupSnapshot>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("record is cut short at byte {0}")]
    Truncated(usize),
    #[error("unknown {what} version {version}")]
    UnknownVersion { what: &'static str, version: i16 },
    #[error("string at byte {0} is not UTF-8")]
    NotUtf8(usize),
    #[error("record has no key")]
    NoKey,
    #[error("batch cannot be decoded: {0}")]
    Batch(String),
}

/// Key and value bytes of an offset commit (value None = tombstone).
pub fn offset_record(
    group: &str,
    tp: &TopicPartition,
    value: Option<&OffsetAndMetadata>,
) -> (Bytes, Option<Bytes>) {
    let mut key = BytesMut::new();
    key.put_i16(1);
    put_string(&mut key, group);
    put_string(&mut key, &tp.topic);
    key.put_i32(tp.partition);
    let value = value.map(|v| {
        let mut out = BytesMut::new();
        out.put_i16(3);
        out.put_i64(v.offset);
        out.put_i32(v.leader_epoch);
        put_string(&mut out, &v.metadata);
        out.put_i64(v.commit_timestamp_ms);
        out.freeze()
    });
    (key.freeze(), value)
}

/// Key and value bytes of a group's metadata (value None = tombstone).
pub fn group_record(group: &str, value: Option<&GroupSnapshot>) -> (Bytes, Option<Bytes>) {
    let mut key = BytesMut::new();
    key.put_i16(2);
    put_string(&mut key, group);
    let value = value.map(|g| {
        let mut out = BytesMut::new();
        out.put_i16(3);
        put_string(&mut out, g.protocol_type.as_deref().unwrap_or(""));
        out.put_i32(g.generation_id);
        put_nullable_string(&mut out, g.protocol_name.as_deref());
        put_nullable_string(&mut out, g.leader.as_deref());
        out.put_i64(g.current_state_timestamp_ms);
        out.put_i32(g.members.len() as i32);
        for m in &g.members {
            put_string(&mut out, &m.member_id);
            put_nullable_string(&mut out, m.group_instance_id.as_deref());
            put_string(&mut out, &m.client_id);
            put_string(&mut out, &m.client_host);
            out.put_i32(m.rebalance_timeout_ms);
            out.put_i32(m.session_timeout_ms);
            put_bytes(&mut out, &m.subscription);
            put_bytes(&mut out, &m.assignment);
        }
        out.freeze()
    });
    (key.freeze(), value)
}

/// One v2 record batch holding `records` (key, value), stamped `now_ms`.
pub fn encode_batch(records: &[(Bytes, Option<Bytes>)], now_ms: i64) -> Result<Bytes, RecordError> {
    let records: Vec<NewRecord> = records
        .iter()
        .map(|(key, value)| NewRecord {
            key: Some(key.clone()),
            value: value.clone(),
            headers: Vec::new(),
        })
        .collect();
    batch::encode_batch(&records, now_ms).map_err(|e| RecordError::Batch(e.to_string()))
}

/// Decode every group record in a run of log entries (as a fetch returns
/// them; a trailing partial entry is ignored). Records with unknown key
/// versions are skipped, as Kafka skips them. Also returns the last offset
/// of the last whole entry, so a reader knows where to continue.
pub fn decode_records(entries: &[u8]) -> Result<(Vec<GroupRecord>, Option<i64>), RecordError> {
    let (records, last_offset) =
        batch::decode_entries(entries).map_err(|e| RecordError::Batch(e.to_string()))?;
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        // A record that does not decode is skipped with a log line (as
        // Kafka's loader does): one bad record must not keep every group of
        // the partition from loading.
        match decode_record(record.key.as_deref(), record.value.as_deref()) {
            Ok(Some(decoded)) => out.push(decoded),
            Ok(None) => {}
            Err(e) => log::warn!(
                "skipping an undecodable group record at offset {}: {e}",
                record.offset
            ),
        }
    }
    Ok((out, last_offset))
}

/// Decode one record; None for key versions this broker does not know.
pub fn decode_record(
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<Option<GroupRecord>, RecordError> {
    let key = key.ok_or(RecordError::NoKey)?;
    let mut k = Reader::new(key);
    let key_version = k.i16()?;
    match key_version {
        0 | 1 => {
            let group = k.string()?;
            let topic = k.string()?;
            let partition = k.i32()?;
            let value = value.map(decode_offset_value).transpose()?;
            Ok(Some(GroupRecord::Offset {
                group,
                tp: TopicPartition::new(topic, partition),
                value,
            }))
        }
        2 => {
            let group = k.string()?;
            let value = value.map(decode_group_value).transpose()?;
            Ok(Some(GroupRecord::Group { group, value }))
        }
        _ => Ok(None),
    }
}

fn decode_offset_value(bytes: &[u8]) -> Result<OffsetAndMetadata, RecordError> {
    let mut r = Reader::new(bytes);
    let version = r.i16()?;
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.string()?;
    let commit_timestamp_ms = r.i64()?;
    match version {
        0..=3 => Ok(OffsetAndMetadata {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp_ms,
        }),
        _ => Err(RecordError::UnknownVersion {
            what: "offset commit value",
            version,
        }),
    }
}

fn decode_group_value(bytes: &[u8]) -> Result<GroupSnapshot, RecordError> {
    let mut r = Reader::new(bytes);
    let version = r.i16()?;
    if !(0..=3).contains(&version) {
        return Err(RecordError::UnknownVersion {
            what: "group metadata value",
            version,
        });
    }
    let protocol_type = r.string()?;
    let generation_id = r.i32()?;
    let protocol_name = r.nullable_string()?;
    let leader = r.nullable_string()?;
    let current_state_timestamp_ms = if version >= 2 { r.i64()? } else { -1 };
    let count = r.i32()?;
    let mut members = Vec::new();
    for _ in 0..count.max(0) {
        let member_id = r.string()?;
        let group_instance_id = if version >= 3 {
            r.nullable_string()?
        } else {
            None
        };
        let client_id = r.string()?;
        let client_host = r.string()?;
        let rebalance_timeout_ms = if version >= 1 { Some(r.i32()?) } else { None };
        let session_timeout_ms = r.i32()?;
        let subscription = r.bytes()?;
        let assignment = r.bytes()?;
        members.push(MemberSnapshot {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms: rebalance_timeout_ms.unwrap_or(session_timeout_ms),
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    Ok(GroupSnapshot {
        protocol_type: (!protocol_type.is_empty()).then_some(protocol_type),
        generation_id,
        protocol_name,
        leader,
        current_state_timestamp_ms,
        members,
    })
}

fn put_string(out: &mut BytesMut, s: &str) {
    out.put_i16(s.len().min(i16::MAX as usize) as i16);
    out.put_slice(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
}

fn put_nullable_string(out: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_string(out, s),
        None => out.put_i16(-1),
    }
}

fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_i32(b.len() as i32);
    out.put_slice(b);
}

/// A bounds-checked reader over a record's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(RecordError::Truncated(self.at))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn i16(&mut self) -> Result<i16, RecordError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, RecordError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64, RecordError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    fn nullable_string(&mut self) -> Result<Option<String>, RecordError> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let at = self.at;
        let b = self.take(len as usize)?;
        String::from_utf8(b.to_vec())
            .map(Some)
            .map_err(|_| RecordError::NotUtf8(at))
    }

    fn string(&mut self) -> Result<String, RecordError> {
        Ok(self.nullable_string()?.unwrap_or_default())
    }

    fn bytes(&mut self) -> Result<Bytes, RecordError> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(Bytes::new());
        }
        Ok(Bytes::copy_from_slice(self.take(len as usize)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> GroupSnapshot {
        GroupSnapshot {
            protocol_type: Some("consumer".into()),
            generation_id: 7,
            protocol_name: Some("range".into()),
            leader: Some("m-1".into()),
            current_state_timestamp_ms: 1234,
            members: vec![MemberSnapshot {
                member_id: "m-1".into(),
                group_instance_id: Some("i-1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300000,
                session_timeout_ms: 45000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"asg"),
            }],
        }
    }

    /// Offset and group records survive a batch round trip; tombstones too.
    #[test]
    fn round_trip_through_a_batch() {
        let tp = TopicPartition::new("orders", 3);
        let offset = OffsetAndMetadata {
            offset: 42,
            leader_epoch: 5,
            metadata: "meta".into(),
            commit_timestamp_ms: 99,
        };
        let batch = encode_batch(
            &[
                offset_record("g", &tp, Some(&offset)),
                group_record("g", Some(&snapshot())),
                offset_record("g", &tp, None),
                group_record("g", None),
            ],
            1000,
        )
        .unwrap();
        let mut entry = batch.to_vec();
        entry[..8].copy_from_slice(&100i64.to_be_bytes());
        let (records, last_offset) = decode_records(&entry).unwrap();
        assert_eq!(last_offset, Some(103));
        assert_eq!(
            records,
            vec![
                GroupRecord::Offset {
                    group: "g".into(),
                    tp: tp.clone(),
                    value: Some(offset)
                },
                GroupRecord::Group {
                    group: "g".into(),
                    value: Some(snapshot())
                },
                GroupRecord::Offset {
                    group: "g".into(),
                    tp,
                    value: None
                },
                GroupRecord::Group {
                    group: "g".into(),
                    value: None
                },
            ]
        );
    }

    /// Kafka's exact bytes for an offset key v1 and value v3.
    #[test]
    fn offset_layout_is_kafkas() {
        let (key, value) = offset_record(
            "g",
            &TopicPartition::new("t", 1),
            Some(&OffsetAndMetadata {
                offset: 2,
                leader_epoch: -1,
                metadata: String::new(),
                commit_timestamp_ms: 3,
            }),
        );
        assert_eq!(&key[..], &[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 1]);
        assert_eq!(
            &value.unwrap()[..],
            &[0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]
        );
    }

    /// Kafka's exact bytes for a group metadata key v2 and value v3, the
    /// versions Kafka 3.x writes (fields as in Kafka's
    /// `GroupMetadataValue.json`: v3 is the last non-flexible version).
    #[test]
    fn group_layout_is_kafkas() {
        let group = GroupSnapshot {
            protocol_type: Some("consumer".into()),
            generation_id: 1,
            protocol_name: Some("range".into()),
            leader: Some("m".into()),
            current_state_timestamp_ms: 5,
            members: vec![MemberSnapshot {
                member_id: "m".into(),
                group_instance_id: None,
                client_id: "c".into(),
                client_host: "/h".into(),
                rebalance_timeout_ms: 10,
                session_timeout_ms: 20,
                subscription: Bytes::from_static(b"s"),
                assignment: Bytes::new(),
            }],
        };
        let (key, value) = group_record("g", Some(&group));
        assert_eq!(&key[..], &[0, 2, 0, 1, b'g']);
        let mut expected: Vec<u8> = vec![0, 3, 0, 8];
        expected.extend_from_slice(b"consumer");
        expected.extend_from_slice(&[0, 0, 0, 1, 0, 5]);
        expected.extend_from_slice(b"range");
        expected.extend_from_slice(&[0, 1, b'm', 0, 0, 0, 0, 0, 0, 0, 5]);
        // One member: id, null instance id, client id, host, timeouts,
        // subscription, empty assignment.
        expected.extend_from_slice(&[0, 0, 0, 1, 0, 1, b'm', 255, 255, 0, 1, b'c', 0, 2]);
        expected.extend_from_slice(b"/h");
        expected.extend_from_slice(&[0, 0, 0, 10, 0, 0, 0, 20, 0, 0, 0, 1, b's', 0, 0, 0, 0]);
        assert_eq!(&value.unwrap()[..], &expected[..]);

        // An Empty group: no protocol, no leader (null strings), no members.
        let empty = GroupSnapshot {
            protocol_type: Some("consumer".into()),
            generation_id: 2,
            protocol_name: None,
            leader: None,
            current_state_timestamp_ms: 6,
            members: Vec::new(),
        };
        let (_, value) = group_record("g", Some(&empty));
        let mut expected: Vec<u8> = vec![0, 3, 0, 8];
        expected.extend_from_slice(b"consumer");
        expected.extend_from_slice(&[
            0, 0, 0, 2, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0,
        ]);
        assert_eq!(&value.unwrap()[..], &expected[..]);
    }

    /// Every prefix of a valid record is an error, never a panic.
    #[test]
    fn truncation_is_an_error() {
        let (key, value) = group_record("group", Some(&snapshot()));
        let value = value.unwrap();
        for cut in 0..value.len() {
            assert!(decode_record(Some(&key), Some(&value[..cut])).is_err());
        }
        for cut in 0..key.len() {
            let _ = decode_record(Some(&key[..cut]), None);
        }
        assert!(decode_record(None, None).is_err());
    }
}

#[cfg(test)]
mod loading_tests {
    use super::*;

    /// A record that is not a group record (no key, here, as a client's
    /// produce would have written before internal topics were protected) is
    /// skipped; the records around it still load.
    #[test]
    fn undecodable_records_are_skipped() {
        let commit = offset_record(
            "g",
            &TopicPartition::new("t", 0),
            Some(&OffsetAndMetadata {
                offset: 5,
                leader_epoch: -1,
                metadata: String::new(),
                commit_timestamp_ms: 1,
            }),
        );
        let records = vec![
            NewRecord {
                key: Some(commit.0.clone()),
                value: commit.1.clone(),
                headers: Vec::new(),
            },
            NewRecord {
                key: None,
                value: Some(Bytes::from_static(b"junk")),
                headers: Vec::new(),
            },
            NewRecord {
                key: Some(commit.0),
                value: commit.1,
                headers: Vec::new(),
            },
        ];
        let batch = batch::encode_batch(&records, 1).unwrap();
        let (decoded, last) = decode_records(&batch).unwrap();
        assert_eq!(decoded.len(), 2);
        assert_eq!(last, Some(2));
    }
}
