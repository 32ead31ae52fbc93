//! Request-frame buffers, kept for reuse once every slice of a frame is
//! dropped.
//!
//! A produce request's record batches go to the log straight from the
//! buffer the frame was read into, so the buffer lives until the shard has
//! written them, on another thread. Freed there and allocated afresh for
//! the next frame, a 1 MiB buffer comes back from the OS as new pages that
//! the kernel zeroes on first touch: a tenth of the broker's CPU when
//! producing 1 KiB records. Kept here instead, its pages stay mapped.
//!
//! Buffers come in power-of-two sizes between [`MIN_KEPT_BYTES`] and
//! [`MAX_KEPT_BYTES`], and at most [`MAX_RETAINED_BYTES`] are kept in all,
//! so the memory held while idle is bounded. `queued.max.request.bytes`
//! counts a frame's length, not the up to twice as large buffer it is read
//! into, nor the buffers kept here. It must never hand out a
//! buffer that a frame still uses: only the frame's owner gives it back,
//! when the last `Bytes` of it is dropped.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::OwnedSemaphorePermit;

/// Frames below this are cheap to allocate; not kept.
pub const MIN_KEPT_BYTES: usize = 64 * 1024;
/// Frames above this are rare; not kept.
pub const MAX_KEPT_BYTES: usize = 16 * 1024 * 1024;
/// The most kept in all, across every connection.
pub const MAX_RETAINED_BYTES: usize = 32 * 1024 * 1024;

const CLASSES: usize =
    (MAX_KEPT_BYTES.trailing_zeros() - MIN_KEPT_BYTES.trailing_zeros() + 1) as usize;

/// The broker's shelf of spare frame buffers, shared by every connection.
#[derive(Debug, Default)]
pub struct FrameBuffers {
    shelves: Mutex<Shelves>,
}

#[derive(Debug, Default)]
struct Shelves {
    by_class: [Vec<Vec<u8>>; CLASSES],
    retained: usize,
}

impl FrameBuffers {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The capacity a frame of `length` bytes is read into when its buffer
    /// may be kept: `length` rounded up to a power of two. `None` when
    /// frames of that length are not kept.
    pub fn kept_capacity(length: usize) -> Option<usize> {
        (MIN_KEPT_BYTES..=MAX_KEPT_BYTES)
            .contains(&length)
            .then(|| length.next_power_of_two())
    }

    /// An empty kept buffer of `capacity` bytes (a `kept_capacity`), if
    /// one is spare.
    pub fn take(&self, capacity: usize) -> Option<Vec<u8>> {
        let class = class_of(capacity)?;
        let mut shelves = self.shelves.lock().ok()?;
        let buffer = shelves.by_class[class].pop()?;
        shelves.retained -= buffer.capacity();
        Some(buffer)
    }

    /// Keep `buffer` for a later frame, or free it when it is not of a
    /// kept size or the shelves are full.
    pub fn give_back(&self, mut buffer: Vec<u8>) {
        let Some(class) = class_of(buffer.capacity()) else {
            return;
        };
        let Ok(mut shelves) = self.shelves.lock() else {
            return;
        };
        if shelves.retained + buffer.capacity() > MAX_RETAINED_BYTES {
            return;
        }
        buffer.clear();
        shelves.retained += buffer.capacity();
        shelves.by_class[class].push(buffer);
    }

    /// The bytes kept now.
    #[cfg(test)]
    fn retained_bytes(&self) -> usize {
        self.shelves.lock().map(|s| s.retained).unwrap_or(0)
    }

}

/// Which shelf a buffer of exactly `capacity` bytes goes on.
fn class_of(capacity: usize) -> Option<usize> {
    (capacity.is_power_of_two() && (MIN_KEPT_BYTES..=MAX_KEPT_BYTES).contains(&capacity))
        .then(|| (capacity.trailing_zeros() - MIN_KEPT_BYTES.trailing_zeros()) as usize)
}

/// A request frame's memory as `Bytes` (zero-copy): its buffer goes back
/// to `home` (when it is of a kept size), and its share of
/// `queued.max.request.bytes` is given back, when the last slice of it is
/// dropped.
pub(super) fn frame_bytes(
    frame: Vec<u8>,
    home: Option<&Arc<FrameBuffers>>,
    share: Option<OwnedSemaphorePermit>,
) -> Bytes {
    if home.is_none() && share.is_none() {
        return Bytes::from(frame);
    }
    Bytes::from_owner(FrameOwner {
        buffer: frame,
        home: home.cloned(),
        _share: share,
    })
}

struct FrameOwner {
    buffer: Vec<u8>,
    home: Option<Arc<FrameBuffers>>,
    _share: Option<OwnedSemaphorePermit>,
}

impl AsRef<[u8]> for FrameOwner {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for FrameOwner {
    fn drop(&mut self) {
        if let Some(home) = &self.home {
            home.give_back(std::mem::take(&mut self.buffer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_buffer_comes_back_only_after_its_last_slice_is_dropped() {
        let buffers = FrameBuffers::new();
        let length = 300 * 1024;
        let capacity = FrameBuffers::kept_capacity(length).expect("kept size");
        assert_eq!(capacity, 512 * 1024);
        let mut buffer = Vec::with_capacity(capacity);
        buffer.resize(length, 7u8);
        let address = buffer.as_ptr();
        let frame = frame_bytes(buffer, Some(&buffers), None);
        let slice = frame.slice(1000..2000);
        drop(frame);
        assert!(buffers.take(capacity).is_none(), "a slice still uses it");
        drop(slice);
        assert_eq!(buffers.retained_bytes(), capacity);
        let again = buffers.take(capacity).expect("given back");
        assert_eq!(again.as_ptr(), address, "the same memory");
        assert!(again.is_empty());
        assert_eq!(buffers.retained_bytes(), 0);
    }

    #[test]
    fn only_kept_sizes_are_kept_and_never_past_the_bound() {
        let buffers = FrameBuffers::new();
        assert_eq!(FrameBuffers::kept_capacity(MIN_KEPT_BYTES - 1), None);
        assert_eq!(FrameBuffers::kept_capacity(MAX_KEPT_BYTES + 1), None);
        buffers.give_back(Vec::with_capacity(1000));
        buffers.give_back(Vec::with_capacity(MIN_KEPT_BYTES + 1));
        assert_eq!(buffers.retained_bytes(), 0);
        for _ in 0..(MAX_RETAINED_BYTES / MAX_KEPT_BYTES + 3) {
            buffers.give_back(Vec::with_capacity(MAX_KEPT_BYTES));
        }
        assert_eq!(buffers.retained_bytes(), MAX_RETAINED_BYTES);
        // A smaller frame does not take a larger class's buffer.
        assert!(buffers.take(MIN_KEPT_BYTES).is_none());
        assert!(buffers.take(MAX_KEPT_BYTES).is_some());
        assert!(buffers.take(MAX_KEPT_BYTES - 1).is_none(), "not a kept size");
    }
}
