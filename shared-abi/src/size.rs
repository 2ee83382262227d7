//! Command sizes, as `const fn`s of what a command carries: the bytes each
//! [`crate::encode`] call adds to its buffer, so a chunk is sized before it
//! is written (as tt-metal's `DeviceCommandCalculator` sizes a command from
//! `sizeof` and alignment), never guessed.
//!
//! [`ChunkSize`] adds up the prefetch commands of a chunk, [`DispatchSize`]
//! the dispatch commands inside one `RELAY_INLINE`:
//!
//! ```
//! use cqlab_abi::size::{ChunkSize, DispatchSize};
//! let payload = DispatchSize::new().wait().write_linear(100);
//! let chunk = ChunkSize::new().relay_inline(payload).stall();
//! assert_eq!(chunk.bytes(), 192 + 64);
//! ```

use crate::completion::EventRecord;
use crate::dispatch::PackedSubCmd;
use crate::{CMD_HEADER_SIZE, L1_ALIGNMENT, PCIE_ALIGNMENT};

const fn align(n: usize, to: usize) -> usize {
    n.next_multiple_of(to)
}

/// A dispatch command: its header, then `payload` inline bytes padded to 16.
pub const fn dispatch_cmd(payload: usize) -> usize {
    CMD_HEADER_SIZE + align(payload, L1_ALIGNMENT)
}

/// `WRITE_PACKED` to `dests` cores of `size` bytes each, with one shared
/// block or one block per core.
pub const fn write_packed(dests: usize, size: usize, shared: bool) -> usize {
    let subs = align(dests * core::mem::size_of::<PackedSubCmd>(), L1_ALIGNMENT);
    let blocks = if shared { 1 } else { dests };
    CMD_HEADER_SIZE + subs + blocks * align(size, L1_ALIGNMENT)
}

/// A prefetch command with no inline payload (`RELAY_LINEAR`, `RELAY_PAGED`,
/// `STALL`, `EXEC_BUF_END`, `TERMINATE`): one PCIe line.
pub const PREFETCH_HEADER_ONLY: usize = PCIE_ALIGNMENT;

/// `RELAY_INLINE` of `payload` bytes of dispatch commands.
pub const fn relay_inline(payload: usize) -> usize {
    align(CMD_HEADER_SIZE + payload, PCIE_ALIGNMENT)
}

/// `EXEC_BUF` carrying `head` trace bytes inline (a multiple of the PCIe
/// alignment).
pub const fn exec_buf(head: usize) -> usize {
    PCIE_ALIGNMENT + head
}

/// Prefetch `DEBUG` of `payload` bytes.
pub const fn prefetch_debug(payload: usize) -> usize {
    align(CMD_HEADER_SIZE + payload, PCIE_ALIGNMENT)
}

/// Largest dispatch payload one `RELAY_INLINE` of at most `chunk` bytes
/// carries (a multiple of 16), the inverse of [`relay_inline`].
pub const fn relay_inline_room(chunk: usize) -> usize {
    (chunk - chunk % PCIE_ALIGNMENT).saturating_sub(CMD_HEADER_SIZE)
}

/// Largest data one `WRITE_PAGED` (or `WRITE_LINEAR`: both are a header
/// and their data) inside one `RELAY_INLINE` of at most `chunk` bytes
/// carries: a paged write sends whole pages, so no page of a buffer
/// written through the queue is larger.
pub const fn paged_write_room(chunk: usize) -> usize {
    relay_inline_room(chunk).saturating_sub(CMD_HEADER_SIZE) & !(L1_ALIGNMENT - 1)
}

/// Bytes of the dispatch commands one `RELAY_INLINE` carries, added up
/// command by command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DispatchSize(usize);

impl DispatchSize {
    pub const fn new() -> Self {
        Self(0)
    }
    /// `WRITE_LINEAR` of `len` inline bytes.
    pub const fn write_linear(self, len: usize) -> Self {
        Self(self.0 + dispatch_cmd(len))
    }
    /// `WRITE_PAGED` of `len` inline bytes (whole pages).
    pub const fn write_paged(self, len: usize) -> Self {
        Self(self.0 + dispatch_cmd(len))
    }
    /// `WRITE_PACKED` (see [`write_packed`]).
    pub const fn write_packed(self, dests: usize, size: usize, shared: bool) -> Self {
        Self(self.0 + write_packed(dests, size, shared))
    }
    /// `WRITE_HOST` with `len` inline bytes (0: its data follows by a relay).
    pub const fn write_host(self, len: usize) -> Self {
        Self(self.0 + dispatch_cmd(len))
    }
    /// `WRITE_HOST` of an event record.
    pub const fn write_event(self) -> Self {
        Self(self.0 + dispatch_cmd(core::mem::size_of::<EventRecord>()))
    }
    /// A command with no payload: `WAIT`, `GO`, `SET_WRITE_OFFSET`, `DELAY`,
    /// `TERMINATE`, or a write's header whose data follows by a relay.
    pub const fn header(self) -> Self {
        Self(self.0 + CMD_HEADER_SIZE)
    }
    /// `WAIT`.
    pub const fn wait(self) -> Self {
        self.header()
    }
    /// `LAUNCH` of a `msg`-byte launch message.
    pub const fn launch(self, msg: usize) -> Self {
        Self(self.0 + dispatch_cmd(msg))
    }
    /// Dispatch `DEBUG` of `payload` bytes.
    pub const fn debug(self, payload: usize) -> Self {
        Self(self.0 + dispatch_cmd(payload))
    }
    /// `n` times the commands `other` adds up.
    pub const fn times(other: Self, n: usize) -> Self {
        Self(other.0 * n)
    }
    /// These commands followed by `other`'s.
    pub const fn then(self, other: Self) -> Self {
        Self(self.0 + other.0)
    }
    pub const fn bytes(self) -> usize {
        self.0
    }
}

/// Bytes of a chunk of prefetch commands (one fetch-queue entry), added up
/// command by command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkSize(usize);

impl ChunkSize {
    pub const fn new() -> Self {
        Self(0)
    }
    /// `RELAY_INLINE` carrying `payload`.
    pub const fn relay_inline(self, payload: DispatchSize) -> Self {
        Self(self.0 + relay_inline(payload.0))
    }
    /// `RELAY_LINEAR`.
    pub const fn relay_linear(self) -> Self {
        Self(self.0 + PREFETCH_HEADER_ONLY)
    }
    /// `RELAY_PAGED`.
    pub const fn relay_paged(self) -> Self {
        Self(self.0 + PREFETCH_HEADER_ONLY)
    }
    /// `STALL`.
    pub const fn stall(self) -> Self {
        Self(self.0 + PREFETCH_HEADER_ONLY)
    }
    /// `EXEC_BUF` with `head` inline trace bytes.
    pub const fn exec_buf(self, head: usize) -> Self {
        Self(self.0 + exec_buf(head))
    }
    /// `EXEC_BUF_END`.
    pub const fn exec_buf_end(self) -> Self {
        Self(self.0 + PREFETCH_HEADER_ONLY)
    }
    /// Prefetch `DEBUG` of `payload` bytes.
    pub const fn debug(self, payload: usize) -> Self {
        Self(self.0 + prefetch_debug(payload))
    }
    /// `TERMINATE`.
    pub const fn terminate(self) -> Self {
        Self(self.0 + PREFETCH_HEADER_ONLY)
    }
    pub const fn bytes(self) -> usize {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paged_write_of_its_room_fills_at_most_the_chunk() {
        for chunk in [128, 4096, 4100, crate::memory_map::MAX_CHUNK as usize] {
            let room = paged_write_room(chunk);
            let size = |len| ChunkSize::new().relay_inline(DispatchSize::new().write_paged(len)).bytes();
            assert!(size(room) <= chunk, "{chunk}");
            assert!(size(room + L1_ALIGNMENT) > chunk, "{chunk}");
        }
    }

    #[test]
    fn room_is_the_inverse_of_the_relay_size() {
        for chunk in [64, 100, 128, 4096, 4100, 32 * 1024] {
            let room = relay_inline_room(chunk);
            assert!(relay_inline(room) <= chunk, "{chunk}");
            assert!(relay_inline(room + 16) > chunk, "{chunk}");
        }
    }
}
