//! Dispatch commands: what the dispatcher consumes from its ring.
//!
//! Each is a 16-byte header followed by its payload padded to `L1_ALIGNMENT`.
//! The payload of a write may arrive inline (in the same `RELAY_INLINE`) or
//! from a following `RELAY_LINEAR`/`RELAY_PAGED`: the dispatcher sees one
//! stream either way.

use bitflags::bitflags;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

id_table! {
    /// First byte of a dispatch command.
    pub enum DispatchCmdId: u8 { from_u8, name } {
        /// Write the payload to one NOC address or a multicast rectangle.
        WriteLinear = 0x21, "WRITE_LINEAR";
        /// Write whole pages to an interleaved buffer.
        WritePaged = 0x22, "WRITE_PAGED";
        /// Write to many cores at one L1 address (sub-commands name the cores).
        WritePacked = 0x23, "WRITE_PACKED";
        /// Write a completion record (data or event) to the host.
        WriteHost = 0x24, "WRITE_HOST";
        /// Wait for memory, a counter, or write acks.
        Wait = 0x25, "WAIT";
        /// Write the GO signal to workers' launch mailboxes.
        Go = 0x26, "GO";
        /// Offset added to later WRITE_LINEAR / WRITE_PAGED destinations.
        SetWriteOffset = 0x27, "SET_WRITE_OFFSET";
        /// Spin for a number of cycles (race amplification).
        Delay = 0x28, "DELAY";
        /// Payload with a checksum, verified by the dispatcher.
        Debug = 0x29, "DEBUG";
        /// Stop the dispatcher cleanly.
        Terminate = 0x2A, "TERMINATE";
        /// Write a launch message into the next launch-ring entry of every worker
        /// of a rectangle, then multicast the launch count to their GO word.
        Launch = 0x2B, "LAUNCH";
    }
}

/// `WRITE_LINEAR`: `length` payload bytes to `dst` (a `noc::NocAddr`, unicast
/// or multicast rectangle).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct WriteLinearCmd {
    pub id: u8,
    pub _pad: [u8; 3],
    pub length: u32,
    pub dst: u64,
}
assert_layout!(WriteLinearCmd, 16, id => 0, length => 4, dst => 8);

/// `WRITE_PAGED`: `pages * page_size` payload bytes to pages
/// `start_page..start_page + pages` of the interleaved buffer at `base_addr`.
/// Same layout as `prefetch::RelayPagedCmd`.
pub type WritePagedCmd = crate::prefetch::RelayPagedCmd;

bitflags! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct PackedFlags: u8 {
        /// One data block shared by every destination (else one block each).
        const SHARED_DATA = 1 << 0;
    }
}

/// `WRITE_PACKED`: `count` `PackedSubCmd`s (padded to 16 bytes), then either
/// one data block (`SHARED_DATA`) or `count` blocks, each `size` bytes padded
/// to 16, written to L1 address `addr` on each named core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct WritePackedCmd {
    pub id: u8,
    /// `PackedFlags`.
    pub flags: u8,
    pub count: u16,
    pub size: u32,
    pub addr: u32,
    pub _reserved: u32,
}
assert_layout!(WritePackedCmd, 16, id => 0, flags => 1, count => 2, size => 4, addr => 8);

/// Most destinations one packed write may name (a full 16x16 worker grid).
pub const MAX_PACKED_DESTS: u16 = 256;

/// Largest block a packed write may carry: more than any chip's L1
/// (Blackhole's 1.5 MiB), and small enough that `MAX_PACKED_DESTS` blocks
/// of it, padded, add up without overflowing 32 bits, as the firmware adds
/// them.
pub const MAX_PACKED_SIZE: u32 = 2 << 20;
const _: () = assert!((MAX_PACKED_DESTS as u64) * (MAX_PACKED_SIZE as u64 + 16) < 1 << 32);

/// One destination of a packed write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct PackedSubCmd {
    /// `noc::Coord::packed` of the destination core.
    pub noc_xy: u32,
}
assert_layout!(PackedSubCmd, 4, noc_xy => 0);

bitflags! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct WriteHostFlags: u8 {
        /// The record is an event (payload is an `EventRecord`).
        const EVENT = 1 << 0;
    }
}

/// `WRITE_HOST`: the next `length` stream bytes become one completion record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct WriteHostCmd {
    pub id: u8,
    /// `WriteHostFlags`.
    pub flags: u8,
    pub _pad: u16,
    pub length: u32,
    /// Copied into `CompletionHeader::tag`.
    pub tag: u32,
    pub _reserved: u32,
}
assert_layout!(WriteHostCmd, 16, id => 0, flags => 1, length => 4, tag => 8);

bitflags! {
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct WaitFlags: u8 {
        /// First wait until all of this dispatcher's NOC writes are acked.
        const BARRIER = 1 << 0;
        /// Afterwards, release one prefetcher STALL.
        const NOTIFY_PREFETCH = 1 << 1;
        /// Wait until the L1 word at `addr` is >= `count` (wrap-aware).
        const WAIT_MEMORY = 1 << 2;
        /// Wait until semaphore `addr` is >= `count` (wrap-aware).
        const WAIT_COUNTER = 1 << 3;
        /// Afterwards, subtract `count` from the waited word or counter.
        const CLEAR = 1 << 4;
        /// Wait until the launch `count` launches before the next one
        /// (1..=`program::LAUNCH_RING_ENTRIES`) has finished on every worker
        /// it reached; a launch further back has finished already (its ring
        /// entry was reused). Excludes `WAIT_MEMORY`, `WAIT_COUNTER`, `CLEAR`.
        const WAIT_LAUNCH = 1 << 5;
    }
}

/// `WAIT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct WaitCmd {
    pub id: u8,
    /// `WaitFlags`; `WAIT_MEMORY` and `WAIT_COUNTER` exclude each other.
    pub flags: u8,
    pub _pad: u16,
    /// L1 address (`WAIT_MEMORY`) or semaphore index (`WAIT_COUNTER`).
    pub addr: u32,
    pub count: u32,
    pub _reserved: u32,
}
assert_layout!(WaitCmd, 16, id => 0, flags => 1, addr => 4, count => 8);

/// `GO`: write the u32 `signal` to `dst` (one core or a multicast rectangle),
/// after every earlier write is acknowledged. Programs use `LAUNCH`, whose
/// GO carries the launch count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct GoCmd {
    pub id: u8,
    pub _pad: [u8; 3],
    pub signal: u32,
    pub dst: u64,
}
assert_layout!(GoCmd, 16, id => 0, signal => 4, dst => 8);

/// `SET_WRITE_OFFSET`, `DELAY`: one u32 operand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct ValueCmd {
    pub id: u8,
    pub _pad: [u8; 3],
    /// Offset in bytes (`SET_WRITE_OFFSET`) or cycles (`DELAY`).
    pub value: u32,
    pub _reserved: u64,
}
assert_layout!(ValueCmd, 16, id => 0, value => 4);

/// `LAUNCH`: the `length` payload bytes (one `program::LAUNCH_ENTRY_SIZE`
/// entry: a `program::LaunchHeader`, its `program::KernelGroup`s, padding)
/// become launch message `n` = the dispatcher's launch count + 1: once every
/// earlier write to workers is acknowledged, the dispatcher stamps `n` in
/// its `program::LAUNCH_TAG` word and multicasts it to
/// `program::launch_entry(cq, n)` on every worker of `dst` (a rectangle whose
/// local address is ignored); that write is the GO. Before reusing the
/// entry it waits until the launch that last used it has finished on every
/// worker (`program::launch_done_sem`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct LaunchCmd {
    pub id: u8,
    pub _pad: u8,
    pub length: u16,
    pub _reserved: u32,
    pub dst: u64,
}
assert_layout!(LaunchCmd, 16, id => 0, length => 2, dst => 8);
