//! Zero-copy responses. A fetch handler puts a *placeholder* in each
//! partition's `records` field: a slice of a static, never-touched buffer,
//! exactly as long as the file region it stands for. `kafka-protocol` then
//! encodes the response normally (length prefixes included); when it writes
//! record bytes with `put_slice`, [`SplicingBuf`] sees the placeholder's
//! address, notes a splice point and writes nothing. The frame becomes
//! encoded chunks with file regions between them, which the network layer
//! sends with `sendfile(2)`.
//!
//! It never reads the placeholder (its pages are never even mapped in) and
//! never copies record bytes.

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use std::sync::OnceLock;
use kafka_protocol::protocol::buf::ByteBufMut;

use super::ProtocolError;
use crate::storage::FileRegion;

/// The longest region one placeholder can stand for. Longer regions are
/// copied into memory instead (see [`placeholder`]).
pub const MAX_PLACEHOLDER_BYTES: usize = 256 * 1024 * 1024;

/// The placeholders' backing bytes: allocated zeroed (calloc maps zero
/// pages lazily, and nothing writes them, so they cost no memory), not a
/// `static` array, which would put 256 MiB of zeros into every binary.
fn placeholder_bytes() -> &'static [u8] {
    static PLACEHOLDER: OnceLock<&'static [u8]> = OnceLock::new();
    PLACEHOLDER.get_or_init(|| Box::leak(vec![0u8; MAX_PLACEHOLDER_BYTES].into_boxed_slice()))
}

/// A stand-in for `len` record bytes, or None when too long to splice.
pub fn placeholder(len: usize) -> Option<Bytes> {
    (len <= MAX_PLACEHOLDER_BYTES).then(|| Bytes::from_static(&placeholder_bytes()[..len]))
}

/// One piece of an outgoing frame.
#[derive(Debug, Clone)]
pub enum ResponseChunk {
    Bytes(Bytes),
    Region(FileRegion),
}

/// A whole response frame, length prefix included.
#[derive(Debug, Clone)]
pub struct ResponseFrame {
    pub chunks: Vec<ResponseChunk>,
}

#[cfg(any(test, feature = "internals"))]
impl ResponseFrame {
    /// Total bytes on the wire.
    pub fn len(&self) -> usize {
        self.chunks
            .iter()
            .map(|chunk| match chunk {
                ResponseChunk::Bytes(bytes) => bytes.len(),
                ResponseChunk::Region(region) => region.length as usize,
            })
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copy everything into one buffer (tests).
    pub fn to_bytes(&self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        for chunk in &self.chunks {
            match chunk {
                ResponseChunk::Bytes(bytes) => out.extend_from_slice(bytes),
                ResponseChunk::Region(region) => out.extend_from_slice(&region.read_to_vec()?),
            }
        }
        Ok(out)
    }
}

/// A `BytesMut` that turns placeholder slices into splice points.
pub struct SplicingBuf {
    inner: BytesMut,
    regions: std::vec::IntoIter<FileRegion>,
    /// (position in `inner`, region) in order.
    splices: Vec<(usize, FileRegion)>,
    spliced_bytes: usize,
    mismatch: Option<String>,
}

impl SplicingBuf {
    pub fn new(regions: Vec<FileRegion>) -> Self {
        SplicingBuf {
            inner: BytesMut::with_capacity(256),
            regions: regions.into_iter(),
            splices: Vec::new(),
            spliced_bytes: 0,
            mismatch: None,
        }
    }

    /// Leave room for the 4-byte frame length.
    pub fn reserve_prefix(&mut self) {
        self.inner.extend_from_slice(&[0; 4]);
    }

    pub fn finish(mut self) -> Result<ResponseFrame, ProtocolError> {
        if let Some(reason) = self.mismatch {
            return Err(ProtocolError::Encode(reason));
        }
        if self.regions.next().is_some() {
            return Err(ProtocolError::Encode(
                "a file region was never spliced in".into(),
            ));
        }
        let len = self.inner.len() + self.spliced_bytes;
        let frame_len = i32::try_from(len - 4)
            .map_err(|_| ProtocolError::Encode(format!("response of {len} bytes is too large")))?;
        self.inner[..4].copy_from_slice(&frame_len.to_be_bytes());
        let mut encoded = self.inner.freeze();
        let mut chunks = Vec::with_capacity(self.splices.len() * 2 + 1);
        let mut consumed = 0;
        for (position, region) in self.splices {
            chunks.push(ResponseChunk::Bytes(encoded.split_to(position - consumed)));
            consumed = position;
            chunks.push(ResponseChunk::Region(region));
        }
        if !encoded.is_empty() {
            chunks.push(ResponseChunk::Bytes(encoded));
        }
        Ok(ResponseFrame { chunks })
    }
}

// SAFETY: every method forwards to `BytesMut`, whose implementation upholds
// `BufMut`'s contract; `put_slice` only skips writing for placeholders.
unsafe impl BufMut for SplicingBuf {
    fn remaining_mut(&self) -> usize {
        self.inner.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: forwarded with the caller's guarantee.
        unsafe { self.inner.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.inner.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        let is_placeholder = !src.is_empty() && std::ptr::eq(src.as_ptr(), placeholder_bytes().as_ptr());
        if !is_placeholder {
            self.inner.extend_from_slice(src);
            return;
        }
        match self.regions.next() {
            Some(region) if region.length as usize == src.len() => {
                self.spliced_bytes += src.len();
                self.splices.push((self.inner.len(), region));
            }
            other => {
                self.mismatch = Some(format!(
                    "placeholder of {} bytes met region {other:?}",
                    src.len()
                ));
            }
        }
    }
}

impl ByteBufMut for SplicingBuf {
    fn offset(&self) -> usize {
        self.inner.len()
    }

    fn seek(&mut self, offset: usize) {
        self.inner.resize(offset, 0);
    }

    fn range(&mut self, r: std::ops::Range<usize>) -> &mut [u8] {
        &mut self.inner[r]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::{ApiKey, FetchResponse, TopicName};
    use kafka_protocol::protocol::{Decodable, StrBytes};
    use std::io::Write;
    use std::sync::Arc;

    /// A fetch response encoded with spliced regions is byte-identical to
    /// the same response encoded with the record bytes inline.
    #[test]
    fn spliced_frame_equals_inline_encoding() {
        let mut file = tempfile::tempfile().unwrap();
        let records: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();
        file.write_all(&records).unwrap();
        let file = Arc::new(file);
        let region = |position: u64, length: u64| FileRegion {
            file: file.clone(),
            position,
            length,
        };
        for version in [4i16, 11, 12] {
            let response = |a: Bytes, b: Bytes| {
                FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
                    .with_topic(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(vec![
                        PartitionData::default()
                            .with_partition_index(0)
                            .with_records(Some(a)),
                        PartitionData::default()
                            .with_partition_index(1)
                            .with_records(Some(b)),
                    ])])
            };
            let spliced = crate::protocol::encode_response(
                ApiKey::Fetch,
                version,
                9,
                &response(placeholder(1000).unwrap(), placeholder(3000).unwrap()),
                vec![region(0, 1000), region(2000, 3000)],
            )
            .unwrap();
            assert!(
                spliced
                    .chunks
                    .iter()
                    .filter(|c| matches!(c, ResponseChunk::Region(_)))
                    .count()
                    == 2
            );
            let inline = crate::protocol::encode_response(
                ApiKey::Fetch,
                version,
                9,
                &response(
                    Bytes::copy_from_slice(&records[..1000]),
                    Bytes::copy_from_slice(&records[2000..5000]),
                ),
                Vec::new(),
            )
            .unwrap();
            let bytes = spliced.to_bytes().unwrap();
            assert_eq!(bytes, inline.to_bytes().unwrap(), "v{version}");
            assert_eq!(bytes.len(), spliced.len());
            let mut body = Bytes::from(bytes).slice(4..);
            let header_version = ApiKey::Fetch.response_header_version(version);
            kafka_protocol::messages::ResponseHeader::decode(&mut body, header_version).unwrap();
            let decoded = FetchResponse::decode(&mut body, version).unwrap();
            assert_eq!(
                decoded.responses[0].partitions[1].records.as_ref().unwrap()[..],
                records[2000..5000]
            );
        }
    }
}
