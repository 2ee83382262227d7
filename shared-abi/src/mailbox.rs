//! Mailboxes at fixed L1 addresses of every core (inside
//! `memory_map::MAILBOXES`): how host and firmware hand each other work,
//! configuration and status.

use crate::memory_map::MAILBOXES;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Reserved (launch messages live in the worker's launch ring, see `program`).
pub const RESERVED: u32 = MAILBOXES.base;
/// `AliveRecord`, written by firmware once it runs.
pub const ALIVE: u32 = MAILBOXES.base + 0x40;
/// Current `waypoint::Waypoint` (u32).
pub const WAYPOINT: u32 = MAILBOXES.base + 0x60;
/// `CqConfig` of a prefetcher or dispatcher, written by the host before reset release.
pub const CQ_CONFIG: u32 = MAILBOXES.base + 0x80;
/// `ErrorRecord`, written by firmware before it halts on a bad command.
pub const ERROR: u32 = MAILBOXES.base + 0xC0;
/// `ExitRecord`, written on TERMINATE.
pub const EXIT: u32 = MAILBOXES.base + 0x100;
/// Dispatcher: completion-queue read pointer (`ring::RingPtr`), written by the host.
pub const COMPLETION_RD_PTR: u32 = MAILBOXES.base + 0x120;
/// Dispatcher: last completed event id of each CQ (`MAX_CQS` u32 words),
/// written by every dispatcher when an event completes.
pub const LAST_EVENT: u32 = MAILBOXES.base + 0x140;

/// Firmware scratch: the source words of small outgoing NOC writes (pointer
/// publication, GO signals, completion headers).
pub const SCRATCH: u32 = MAILBOXES.base + 0x180;
pub const SCRATCH_SIZE: u32 = 0x80;

/// Address of the last-event word for queue `cq`.
pub const fn last_event(cq: u8) -> u32 {
    LAST_EVENT + 4 * cq as u32
}

const _: () = assert!(last_event(crate::noc::MAX_CQS) <= MAILBOXES.end());

/// `AliveRecord::magic`.
pub const ALIVE_MAGIC: u32 = u32::from_le_bytes(*b"ALIV");
/// `ErrorRecord::magic`: the same bytes as the `!CMD` waypoint.
pub const ERROR_MAGIC: u32 = u32::from_le_bytes(*b"!CMD");
/// `ExitRecord::magic`.
pub const EXIT_MAGIC: u32 = u32::from_le_bytes(*b"EXIT");
/// Proof of life: firmware writes it first thing after boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct AliveRecord {
    pub magic: u32,
    /// `firmware::FirmwareId`.
    pub firmware_id: u32,
    /// `ABI_VERSION` the firmware was built against.
    pub abi_version: u32,
    /// Build identifier of the firmware image.
    pub build_id: u32,
    /// The core's own coordinates (`noc::Coord::packed`).
    pub core_xy: u32,
    pub _reserved: u32,
    /// `mcycle` when the record was written.
    pub boot_cycle: u64,
}
assert_layout!(AliveRecord, 32, magic => 0, firmware_id => 4, abi_version => 8, build_id => 12, core_xy => 16, boot_cycle => 24);

/// Configuration of a prefetcher or dispatcher core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct CqConfig {
    /// Byte offset of this CQ's sysmem region (`sysmem::CqSysmemLayout`).
    pub sysmem_base: u64,
    pub issue_size: u32,
    pub completion_size: u32,
    pub cq_id: u32,
    pub num_cqs: u32,
    /// Fetch-queue slots in use (<= `fetch_queue::MAX_ENTRIES`).
    pub fetch_entries: u32,
    /// Prefetcher command-buffer bytes in use (<= `CMD_BUFFER.size`).
    pub cmd_buffer_size: u32,
    /// Dispatcher ring page size and page count (<= `DISPATCH_RING.size`).
    pub ring_page_size: u32,
    pub ring_pages: u32,
    /// The other core of this CQ (`noc::Coord::packed`).
    pub peer_xy: u32,
    pub dram_banks: u32,
    pub _reserved: [u32; 4],
}
assert_layout!(CqConfig, 64, sysmem_base => 0, issue_size => 8, completion_size => 12, cq_id => 16,
    num_cqs => 20, fetch_entries => 24, cmd_buffer_size => 28, ring_page_size => 32, ring_pages => 36,
    peer_xy => 40, dram_banks => 44);

id_table! {
    /// Why firmware stopped on a bad command: a short name (for signatures
    /// and logs) and what it means.
    pub enum DeviceError: u32 { from_u32, name, describe } {
        UnknownCommand = 1, "unknown-command", "unknown command id";
        ZeroFetchEntry = 2, "zero-fetch-entry", "zero-size fetch-queue entry";
        LengthOverrun = 3, "length-overrun", "command length runs past its buffer";
        Misaligned = 4, "misaligned", "misaligned command header";
        BadSize = 5, "bad-size", "invalid size field";
        BadChecksum = 6, "bad-checksum", "DEBUG command checksum mismatch";
        ExecBufWithoutStall = 7, "exec-buf-without-stall", "EXEC_BUF in a chunk without the stall flag";
        NestedExecBuf = 8, "nested-exec-buf", "EXEC_BUF inside an executing trace";
        BadConfig = 9, "bad-config", "invalid CQ configuration";
        UnexpectedExecBufEnd = 10, "unexpected-exec-buf-end", "EXEC_BUF_END outside a replayed trace";
        BadFlags = 11, "bad-flags", "unsupported flags";
        BadDestination = 12, "bad-destination", "destination is not a worker core";
        TooLarge = 13, "too-large", "larger than the buffer it must pass through";
        BadKernelArgs = 14, "bad-kernel-args", "invalid kernel runtime arguments";
    }
}

/// Number of offending bytes an error record keeps.
pub const ERROR_BYTES: usize = 32;

/// Written by firmware before halting with waypoint `!CMD`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct ErrorRecord {
    pub magic: u32,
    /// `DeviceError`.
    pub code: u32,
    /// L1 address of the offending bytes.
    pub addr: u32,
    /// The offending value (command id, size, ...).
    pub value: u32,
    /// The core's read and write pointers when it stopped (meaning per core).
    pub rd_ptr: u32,
    pub wr_ptr: u32,
    /// Low word of `mcycle` at the error.
    pub cycle_lo: u32,
    /// Valid bytes in `bytes`.
    pub nbytes: u32,
    /// The offending bytes, from `addr`.
    pub bytes: [u8; ERROR_BYTES],
}
assert_layout!(ErrorRecord, 64, magic => 0, code => 4, addr => 8, value => 12, rd_ptr => 16, wr_ptr => 20,
    cycle_lo => 24, nbytes => 28, bytes => 32);

/// Written on TERMINATE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct ExitRecord {
    pub magic: u32,
    /// Commands executed before TERMINATE.
    pub commands: u32,
    pub cycle: u64,
}
assert_layout!(ExitRecord, 16, magic => 0, commands => 4, cycle => 8);

const _: () = {
    assert!(ALIVE >= RESERVED + 64);
    assert!(WAYPOINT >= ALIVE + 32);
    assert!(CQ_CONFIG >= WAYPOINT + 4);
    assert!(ERROR >= CQ_CONFIG + 64);
    assert!(EXIT >= ERROR + 64);
    assert!(COMPLETION_RD_PTR >= EXIT + 16);
    assert!(LAST_EVENT >= COMPLETION_RD_PTR + 4);
    assert!(SCRATCH >= last_event(crate::noc::MAX_CQS));
    assert!(SCRATCH + SCRATCH_SIZE <= MAILBOXES.end());
};
