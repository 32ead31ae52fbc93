//! Sockets: reading length-prefixed request frames and writing response
//! frames, file regions included, with `sendfile(2)` (or copied through
//! TLS on SSL listeners).
//!
//! It knows nothing of Kafka messages (that is `protocol`; `client` only
//! sends typed ones to another broker, `coordinator_client` a group's
//! OffsetFetch and OffsetCommit through it) nor of actors (that is
//! `actors/connection.rs`). A declared frame length is checked
//! against `socket.request.max.bytes` before anything is allocated, and
//! memory then follows the bytes that actually arrive (at most 16 times
//! them, so a large frame is not grown and copied chunk by chunk).

pub mod client;
pub mod connection_quotas;
pub mod coordinator_client;
pub mod http;
pub mod inter_broker;
mod frame_buffers;

pub use frame_buffers::FrameBuffers;
use frame_buffers::frame_bytes;

use std::io;
use std::os::unix::io::AsRawFd;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;

use crate::protocol::{ResponseChunk, ResponseFrame};

const READ_CHUNK_BYTES: usize = 64 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("peer closed the connection")]
    Closed,
    #[error("frame length {0} is negative")]
    NegativeLength(i32),
    #[error("frame length {length} exceeds socket.request.max.bytes ({max})")]
    TooLarge { length: usize, max: usize },
    #[error("connection closed in the middle of a frame ({got} of {expected} bytes)")]
    Truncated { got: usize, expected: usize },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Apply `socket.send.buffer.bytes` / `socket.receive.buffer.bytes` to a
/// connection; -1 leaves the OS default, as in Kafka.
pub fn set_socket_buffers(
    stream: &std::net::TcpStream,
    send_bytes: i32,
    receive_bytes: i32,
) -> io::Result<()> {
    let socket = socket2::SockRef::from(stream);
    if let Ok(bytes) = usize::try_from(send_bytes) {
        socket.set_send_buffer_size(bytes)?;
    }
    if let Ok(bytes) = usize::try_from(receive_bytes) {
        socket.set_recv_buffer_size(bytes)?;
    }
    Ok(())
}

/// Read one frame (without its length prefix). `Closed` when the peer
/// closed cleanly between frames.
#[cfg(test)]
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_bytes: usize,
) -> Result<Vec<u8>, FrameError> {
    let length = read_length(reader, max_bytes).await?;
    read_body(reader, length, Vec::new(), length).await
}

/// A frame's length prefix, checked against `max_bytes` before anything
/// is allocated.
async fn read_length<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_bytes: usize,
) -> Result<usize, FrameError> {
    let mut prefix = [0u8; 4];
    match reader.read_exact(&mut prefix).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(e.into()),
    }
    let declared = i32::from_be_bytes(prefix);
    if declared < 0 {
        return Err(FrameError::NegativeLength(declared));
    }
    let length = declared as usize;
    if length > max_bytes {
        return Err(FrameError::TooLarge {
            length,
            max: max_bytes,
        });
    }
    Ok(length)
}

/// A frame body of `length` bytes, read into `frame` (empty, perhaps with
/// capacity already) whose capacity ends at `target` (at least `length`).
/// Memory follows the bytes that actually arrive, at most
/// [`FRAME_AMPLIFICATION`] times them: a new buffer starts at one read
/// chunk, doubles while little has arrived, and takes `target` at once when
/// that is within the bound. So a peer that declares a large frame and
/// trickles it cannot make the broker hold much more than it sent, while a
/// typical 1 MiB produce request is copied once more than necessary only
/// for its first 64 KiB, not grown (and copied) five times.
async fn read_body<R: AsyncRead + Unpin>(
    reader: &mut R,
    length: usize,
    mut frame: Vec<u8>,
    target: usize,
) -> Result<Vec<u8>, FrameError> {
    if frame.capacity() < length {
        frame.reserve_exact(target.min(READ_CHUNK_BYTES));
    }
    while frame.len() < length {
        if frame.len() == frame.capacity() {
            frame.reserve_exact(next_frame_capacity(frame.len(), target) - frame.len());
        }
        let want = (length - frame.len()).min(frame.capacity() - frame.len());
        let n = (&mut *reader)
            .take(want as u64)
            .read_buf(&mut frame)
            .await?;
        if n == 0 {
            return Err(FrameError::Truncated {
                got: frame.len(),
                expected: length,
            });
        }
    }
    Ok(frame)
}

/// The most a frame's buffer exceeds the bytes that arrived, as a factor.
const FRAME_AMPLIFICATION: usize = 16;

/// The capacity a frame buffer full at `received` bytes grows to, on its
/// way to `target`.
fn next_frame_capacity(received: usize, target: usize) -> usize {
    if target <= received.saturating_mul(FRAME_AMPLIFICATION) {
        target
    } else {
        received.saturating_mul(2).max(READ_CHUNK_BYTES).min(target)
    }
}

/// Read one request frame, as `read_frame`; with a `pool`
/// (`queued.max.request.bytes`), the frame's length is taken from it
/// before its body is read (waiting while the pool is spent, so overload
/// stops reading instead of growing memory, as Kafka's memory pool does),
/// and given back when the last slice of the frame is dropped. A frame of
/// a size `buffers` keeps is read into a spare buffer when there is one,
/// and its buffer goes back there when the last slice is dropped.
pub async fn read_request_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_bytes: usize,
    pool: Option<&std::sync::Arc<tokio::sync::Semaphore>>,
    buffers: &std::sync::Arc<FrameBuffers>,
) -> Result<Bytes, FrameError> {
    let length = read_length(reader, max_bytes).await?;
    let share = match pool {
        None => None,
        Some(pool) => {
            // `max_bytes` (an i32 setting) keeps this within u32, and the
            // pool is at least `max_bytes` (checked at start-up), so the
            // wait ends.
            let wanted = u32::try_from(length).unwrap_or(u32::MAX);
            let share = pool
                .clone()
                .acquire_many_owned(wanted)
                .await
                .map_err(|_| FrameError::Closed)?;
            Some(share)
        }
    };
    let (spare, target, home) = match FrameBuffers::kept_capacity(length) {
        Some(capacity) => (buffers.take(capacity).unwrap_or_default(), capacity, Some(buffers)),
        None => (Vec::new(), length, None),
    };
    let frame = read_body(reader, length, spare, target).await?;
    Ok(frame_bytes(frame, home, share))
}

/// Where a connection's responses go: a plain socket, whose file regions
/// go out with `sendfile(2)` straight from the page cache, or a TLS
/// stream, which must encrypt them, so they are read (from the page
/// cache, in chunks) and written through it, as Kafka does on SSL.
pub enum ResponseWriter {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<tokio_rustls::server::TlsStream<tokio::net::TcpStream>>),
}

/// The chunk a file region is copied through on a TLS connection.
const TLS_COPY_CHUNK_BYTES: usize = 64 * 1024;

/// Write a whole response frame, then flush it (TLS holds records back
/// until flushed).
pub async fn write_frame(writer: &mut ResponseWriter, frame: &ResponseFrame) -> io::Result<()> {
    for chunk in &frame.chunks {
        match (chunk, &mut *writer) {
            (ResponseChunk::Bytes(bytes), ResponseWriter::Plain(w)) => w.write_all(bytes).await?,
            (ResponseChunk::Bytes(bytes), ResponseWriter::Tls(w)) => w.write_all(bytes).await?,
            (ResponseChunk::Region(region), ResponseWriter::Plain(w)) => {
                send_file_region(w, region).await?
            }
            (ResponseChunk::Region(region), ResponseWriter::Tls(w)) => {
                copy_file_region(w, region).await?
            }
        }
    }
    match writer {
        ResponseWriter::Plain(_) => Ok(()),
        ResponseWriter::Tls(w) => w.flush().await,
    }
}

/// A file region through an encrypting writer, one chunk at a time.
async fn copy_file_region<W: tokio::io::AsyncWrite + Unpin>(
    writer: &mut W,
    region: &crate::storage::FileRegion,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let end = region.position + region.length;
    let mut position = region.position;
    let mut chunk = vec![0u8; TLS_COPY_CHUNK_BYTES.min(region.length as usize)];
    while position < end {
        let want = ((end - position) as usize).min(chunk.len());
        let n = region.file.read_at(&mut chunk[..want], position)?;
        if n == 0 {
            // The file shrank under us (truncation): the frame can no
            // longer be completed honestly.
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file region ended early",
            ));
        }
        writer.write_all(&chunk[..n]).await?;
        position += n as u64;
    }
    Ok(())
}

/// A file region with `sendfile(2)`.
async fn send_file_region(
    writer: &mut OwnedWriteHalf,
    region: &crate::storage::FileRegion,
) -> io::Result<()> {
    let mut position = region.position as libc::off_t;
    let end = region.position + region.length;
    let stream = writer.as_ref();
    while (position as u64) < end {
        stream.writable().await?;
        let remaining = (end - position as u64) as usize;
        let sent = stream.try_io(tokio::io::Interest::WRITABLE, || {
            // SAFETY: both descriptors are open for the call; the
            // kernel writes `position` through the valid pointer.
            let n = unsafe {
                libc::sendfile(
                    stream.as_raw_fd(),
                    region.file.as_raw_fd(),
                    &mut position,
                    remaining,
                )
            };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match sent {
            Ok(0) => {
                // The file shrank under us (truncation): the frame can no
                // longer be completed honestly.
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "file region ended early",
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A frame small enough next to what arrived is taken whole at once; a
    /// large one that is still mostly missing only doubles; memory never
    /// passes 16 times the bytes received.
    #[test]
    fn frame_buffers_grow_at_once_within_the_amplification_bound() {
        use super::{next_frame_capacity, FRAME_AMPLIFICATION, READ_CHUNK_BYTES};
        let chunk = READ_CHUNK_BYTES;
        assert_eq!(next_frame_capacity(chunk, 1 << 20), 1 << 20);
        assert_eq!(next_frame_capacity(chunk, 100 << 20), 2 * chunk);
        assert_eq!(next_frame_capacity(0, 100), chunk.min(100));
        let length = 100 << 20;
        let mut received = chunk;
        let mut steps = 0;
        while received < length {
            let next = next_frame_capacity(received, length);
            assert!(next > received, "grows");
            assert!(next <= received * FRAME_AMPLIFICATION, "bounded");
            received = next;
            steps += 1;
        }
        assert!(steps <= 8, "{steps} reallocations for 100 MiB");
    }

    /// Linux doubles what is asked (for its bookkeeping) and has a floor,
    /// so compare against the OS default rather than exact numbers.
    #[test]
    fn socket_buffers_are_applied_and_minus_one_keeps_the_default() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        let _client = std::net::TcpStream::connect(address).expect("connect");
        let (accepted, _) = listener.accept().expect("accept");
        let socket = socket2::SockRef::from(&accepted);
        let default_send = socket.send_buffer_size().expect("SO_SNDBUF");
        let default_receive = socket.recv_buffer_size().expect("SO_RCVBUF");

        super::set_socket_buffers(&accepted, -1, -1).expect("leave defaults");
        assert_eq!(socket.send_buffer_size().expect("SO_SNDBUF"), default_send);
        assert_eq!(
            socket.recv_buffer_size().expect("SO_RCVBUF"),
            default_receive
        );

        super::set_socket_buffers(&accepted, 8 * 1024, 9 * 1024).expect("set");
        assert_eq!(socket.send_buffer_size().expect("SO_SNDBUF"), 16 * 1024);
        assert_eq!(socket.recv_buffer_size().expect("SO_RCVBUF"), 18 * 1024);
    }

    use super::*;

    /// Frames are read whole; bad prefixes are refused before allocating.
    #[tokio::test(flavor = "current_thread")]
    async fn reads_frames_and_refuses_bad_lengths() {
        let mut input: &[u8] = &[0, 0, 0, 3, b'a', b'b', b'c', 0, 0];
        assert_eq!(&read_frame(&mut input, 10).await.unwrap()[..], b"abc");
        assert!(matches!(
            read_frame(&mut input, 10).await,
            Err(FrameError::Closed)
        ));
        let mut huge: &[u8] = &[0x7f, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut huge, 100).await,
            Err(FrameError::TooLarge { .. })
        ));
        let mut negative: &[u8] = &[0xff, 0xff, 0xff, 0xfe];
        assert!(matches!(
            read_frame(&mut negative, 100).await,
            Err(FrameError::NegativeLength(-2))
        ));
        let mut short: &[u8] = &[0, 0, 0, 9, 1, 2];
        assert!(matches!(
            read_frame(&mut short, 100).await,
            Err(FrameError::Truncated { got: 2, .. })
        ));
    }

    /// A produce-sized frame is read into the buffer the previous one gave
    /// back, so its pages are not faulted in (and zeroed) again; a frame
    /// still in use keeps its buffer.
    #[tokio::test(flavor = "current_thread")]
    async fn request_frames_reuse_buffers_given_back() {
        let body = vec![5u8; 300 * 1024];
        let mut wire = Vec::new();
        for _ in 0..3 {
            wire.extend_from_slice(&(body.len() as i32).to_be_bytes());
            wire.extend_from_slice(&body);
        }
        let mut input: &[u8] = &wire;
        let buffers = FrameBuffers::new();
        let first = read_request_frame(&mut input, 1 << 20, None, &buffers)
            .await
            .unwrap();
        assert_eq!(&first[..], &body[..]);
        let held = first.slice(10..20);
        drop(first);
        let second = read_request_frame(&mut input, 1 << 20, None, &buffers)
            .await
            .unwrap();
        assert_ne!(second.as_ptr(), held.as_ptr().wrapping_sub(10), "in use");
        let reused = second.as_ptr();
        drop(second);
        let third = read_request_frame(&mut input, 1 << 20, None, &buffers)
            .await
            .unwrap();
        assert_eq!(third.as_ptr(), reused, "given back and taken again");
        assert_eq!(&third[..], &body[..]);
    }
}
