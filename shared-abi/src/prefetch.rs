//! Prefetch commands: what the prefetcher reads from the issue queue.
//!
//! Every command starts with a 16-byte header whose first byte is its id; the
//! whole command (header, payload, zero padding) occupies a multiple of
//! `PCIE_ALIGNMENT` bytes, so commands can be read back to back.
//! Command ids are nonzero so zeroed memory is never a valid command; prefetch
//! and dispatch ids do not overlap, so a misrouted byte stream is caught.

use bitflags::bitflags;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

id_table! {
    /// First byte of a prefetch command.
    pub enum PrefetchCmdId: u8 { from_u8, name } {
        /// Relay the inline payload (dispatch commands) to the dispatcher.
        RelayInline = 0x01, "RELAY_INLINE";
        /// As `RelayInline`, but hold the data until the next relay flushes it.
        RelayInlineNoflush = 0x02, "RELAY_INLINE_NOFLUSH";
        /// Relay `length` bytes read from a NOC address (DRAM, L1).
        RelayLinear = 0x03, "RELAY_LINEAR";
        /// Relay whole pages of an interleaved DRAM or L1 buffer.
        RelayPaged = 0x04, "RELAY_PAGED";
        /// Wait until the dispatcher signals that all earlier work is done.
        Stall = 0x05, "STALL";
        /// Replay a captured command stream from interleaved DRAM pages.
        ExecBuf = 0x06, "EXEC_BUF";
        /// Ends a captured stream; returns to the issue queue.
        ExecBufEnd = 0x07, "EXEC_BUF_END";
        /// Payload with a checksum, verified by the prefetcher.
        Debug = 0x08, "DEBUG";
        /// Stop the prefetcher cleanly.
        Terminate = 0x09, "TERMINATE";
    }
}

/// `RELAY_INLINE` / `RELAY_INLINE_NOFLUSH`: `length` payload bytes follow.
/// The firmware treats the two alike: a flush is owed, not waited for (each
/// relayed piece is signalled to the dispatcher once it has left, and every
/// prefetcher wait that depends on the dispatcher or the host signals all
/// first), so the flag only records what the host asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct RelayInlineCmd {
    pub id: u8,
    pub _pad: [u8; 3],
    /// Payload bytes (a multiple of 16: whole dispatch commands).
    pub length: u32,
    /// Bytes from this header to the next command: `align_up(16 + length, 64)`.
    pub stride: u32,
    pub _reserved: u32,
}
assert_layout!(RelayInlineCmd, 16, id => 0, length => 4, stride => 8);

/// `RELAY_LINEAR`: relay `length` bytes starting at NOC address `src`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct RelayLinearCmd {
    pub id: u8,
    pub _pad: [u8; 3],
    pub length: u32,
    /// `noc::NocAddr` of the source.
    pub src: u64,
}
assert_layout!(RelayLinearCmd, 16, id => 0, length => 4, src => 8);

bitflags! {
    /// Flags of paged relays and writes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct PagedFlags: u8 {
        /// Pages interleave over DRAM banks (else over worker L1s).
        const DRAM = 1 << 0;
    }
}

/// `RELAY_PAGED`: relay `pages` pages starting at `start_page` of the
/// interleaved buffer at `base_addr` (see `memory_map::interleaved_page`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct RelayPagedCmd {
    pub id: u8,
    /// `PagedFlags`.
    pub flags: u8,
    pub start_page: u16,
    pub base_addr: u32,
    pub page_size: u32,
    pub pages: u32,
}
assert_layout!(RelayPagedCmd, 16, id => 0, flags => 1, start_page => 2, base_addr => 4, page_size => 8, pages => 12);

/// `EXEC_BUF`: run the prefetch commands stored in `pages` DRAM pages of
/// `page_size` bytes, interleaved from `base_addr`, until `EXEC_BUF_END`.
/// Only valid in a fetch entry with the stall flag.
///
/// The trace's first `head` bytes (a multiple of `PCIE_ALIGNMENT`, at most
/// [`EXEC_BUF_HEAD_MAX`]) also travel inline, after the header's
/// `PCIE_ALIGNMENT`-byte line: the prefetcher runs them from the chunk
/// while the DRAM reads of the rest are in flight, so a replay's first
/// programs do not wait for a DRAM round trip. The trace in DRAM is
/// complete (it holds the head too); the inline copy must equal it. A
/// head flagged `ExecBufFlags::WHOLE` is the whole trace, through its
/// `EXEC_BUF_END`: the prefetcher then reads nothing from DRAM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct ExecBufCmd {
    pub id: u8,
    /// `ExecBufFlags`.
    pub flags: u8,
    /// Trace bytes that follow inline (see above).
    pub head: u16,
    pub base_addr: u32,
    pub page_size: u32,
    pub pages: u32,
}
assert_layout!(ExecBufCmd, 16, id => 0, flags => 1, head => 2, base_addr => 4, page_size => 8, pages => 12);

bitflags! {
    /// Flags of `EXEC_BUF`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct ExecBufFlags: u8 {
        /// The inline head holds the whole trace, through its
        /// `EXEC_BUF_END` (a short trace): no DRAM read is needed, and a
        /// command past the head is an error, not a read.
        const WHOLE = 1 << 0;
    }
}

/// Most trace bytes an `EXEC_BUF` carries inline (`ExecBufCmd::head`): a
/// few programs' commands, enough to keep the dispatcher busy for a DRAM
/// round trip, for a few dozen more PCIe cycles on the fetch.
pub const EXEC_BUF_HEAD_MAX: u32 = 1024;
const _: () = assert!(EXEC_BUF_HEAD_MAX % crate::PCIE_ALIGNMENT as u32 == 0 && EXEC_BUF_HEAD_MAX <= u16::MAX as u32);

/// `DEBUG` (prefetch and dispatch): `length` payload bytes whose wrapping byte
/// sum must equal `checksum`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct DebugCmd {
    pub id: u8,
    pub _pad: [u8; 3],
    pub length: u32,
    pub checksum: u32,
    /// Bytes from this header to the next command.
    pub stride: u32,
}
assert_layout!(DebugCmd, 16, id => 0, length => 4, checksum => 8, stride => 12);

/// Commands with no fields: `STALL`, `EXEC_BUF_END`, `TERMINATE` (and the
/// dispatch `TERMINATE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct BareCmd {
    pub id: u8,
    pub _pad: [u8; 15],
}
assert_layout!(BareCmd, 16, id => 0);

/// Checksum of `DebugCmd` payloads.
pub fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0u32, |acc, &b| acc.wrapping_add(b as u32))
}
