//! Mailboxes at fixed L1 addresses of every core (inside
//! `memory_map::MAILBOXES`): how host and firmware hand each other work,
//! configuration and status.

use crate::memory_map::MAILBOXES;
use core::mem::size_of;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Semaphores (`semaphore`): `semaphore::COUNT` words.
pub const SEMAPHORES: u32 = crate::semaphore::BASE;
/// `AliveRecord` of BRISC, written once its firmware runs (a worker's
/// BRISC writes it after every subordinate core has written its own).
pub const ALIVE: u32 = MAILBOXES.base + 0x40;
/// BRISC's current `waypoint::Waypoint` (u32).
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

/// `noc_map::NocMap`, written by the host into every tile before release.
pub const NOC_MAP: u32 = MAILBOXES.base + 0x200;

/// One `SubordinateMailbox` per subordinate core of a worker tile (NCRISC,
/// TRISC0, TRISC1, TRISC2, in `arch::tensix::Processor::ALL` order after BRISC).
pub const SUBORDINATES: u32 = MAILBOXES.base + 0x400;
/// Subordinate cores of a Tensix tile.
pub const SUBORDINATE_COUNT: u32 = 4;

/// Address of the last-event word for queue `cq`.
pub const fn last_event(cq: u8) -> u32 {
    LAST_EVENT + 4 * cq as u32
}

/// Address of the mailbox of the subordinate core with processor index
/// `processor` (1..=4: `arch::tensix::Processor::index`).
pub const fn subordinate(processor: usize) -> u32 {
    SUBORDINATES + (processor as u32 - 1) * core::mem::size_of::<SubordinateMailbox>() as u32
}

/// A subordinate core's own words: its alive record and waypoint, which
/// the host reads. BRISC zeroes the record's magic before it releases the
/// core (the host zeroed the whole mailbox before BRISC ran).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct SubordinateMailbox {
    pub alive: AliveRecord,
    /// The subordinate's current `waypoint::Waypoint`.
    pub waypoint: u32,
    pub _reserved: [u32; 23],
}
assert_layout!(SubordinateMailbox, 128, alive => 0, waypoint => 32);

/// Offset of a `SubordinateMailbox`'s waypoint.
pub const SUB_WAYPOINT: u32 = core::mem::offset_of!(SubordinateMailbox, waypoint) as u32;

/// `SubordinateRun` of a worker tile.
pub const SUBORDINATE_RUN: u32 = SUBORDINATES + SUBORDINATE_COUNT * size_of::<SubordinateMailbox>() as u32;

/// How a worker tile's BRISC starts its subordinate cores on a launch and
/// learns they finished, in the shape of tt-metal's `subordinate_sync`
/// (tt-metal `tt_metal/hw/inc/dev_msgs.h`, `RUN_SYNC_MSG_GO` / `_DONE`):
/// BRISC writes the launch (`group`, `index`, `seq`), then the one word
/// `sync` whose byte `k` is [`RUN_SYNC_GO`] for each subordinate (processor
/// index `k + 1`) with a kernel in the group. Each such subordinate reads
/// its kernel and args from the group itself, runs it, and once its NOC
/// writes have landed stores [`RUN_SYNC_DONE`] to its own byte. BRISC waits
/// for the word to read 0 and writes nothing here until then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct SubordinateRun {
    /// One byte per subordinate: `RUN_SYNC_GO` or `RUN_SYNC_DONE`.
    pub sync: u32,
    /// L1 address of the launch's `program::KernelGroup` holding this tile.
    pub group: u32,
    /// This tile's index in the group's rectangle (`KernelCtx::index`).
    pub index: u32,
    /// The launch's `LaunchHeader::seq`.
    pub seq: u32,
}
assert_layout!(SubordinateRun, 16, sync => 0, group => 4, index => 8, seq => 12);

/// A subordinate's `SubordinateRun::sync` byte: run the launch (tt-metal
/// `RUN_SYNC_MSG_GO`).
pub const RUN_SYNC_GO: u8 = 0x80;
/// ... and finished it (tt-metal `RUN_SYNC_MSG_DONE`).
pub const RUN_SYNC_DONE: u8 = 0;

/// Where the `SubordinateRun::sync` byte of the subordinate core with
/// processor index `processor` (1..=4) sits in the word (a shift: the
/// cores are little-endian).
pub const fn run_sync_shift(processor: usize) -> u32 {
    8 * (processor as u32 - 1)
}

/// The address of that byte.
pub const fn run_sync_byte(processor: usize) -> u32 {
    SUBORDINATE_RUN + run_sync_shift(processor) / 8
}

/// Offsets in the `SubordinateRun`.
pub const RUN_GROUP: u32 = core::mem::offset_of!(SubordinateRun, group) as u32;
pub const RUN_INDEX: u32 = core::mem::offset_of!(SubordinateRun, index) as u32;
pub const RUN_SEQ: u32 = core::mem::offset_of!(SubordinateRun, seq) as u32;

const _: () = assert!(SUBORDINATE_RUN + size_of::<SubordinateRun>() as u32 <= MAILBOXES.end());
const _: () = assert!(last_event(crate::noc::MAX_CQS) <= SCRATCH);

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
    /// Byte offset of this CQ's sysmem region (`sysmem::CqSysmemLayout`)
    /// in the chip's host-memory range: the region's offset in the pinned
    /// buffer plus where the buffer sits in that range.
    pub sysmem_base: u64,
    pub issue_size: u32,
    pub completion_size: u32,
    pub cq_id: u32,
    pub _reserved0: u32,
    /// Fetch-queue slots in use (<= `fetch_queue::MAX_ENTRIES`).
    pub fetch_entries: u32,
    /// Prefetcher command-buffer bytes in use (<= `CMD_BUFFER.size`).
    pub cmd_buffer_size: u32,
    /// Dispatcher ring page size and page count (<= `DISPATCH_RING.size`).
    pub ring_page_size: u32,
    pub ring_pages: u32,
    /// The other core of this CQ (`noc::Coord::packed`, translated).
    pub peer_xy: u32,
    /// This queue's staging arena in sysmem (`fetch_queue` module docs):
    /// `staged_units` units of `fetch_queue::SIZE_UNIT` bytes from unit
    /// `staged_from`, in the terms of a fetch slot's source word. The
    /// prefetcher reads a gathered chunk's staged piece only from there;
    /// 0 units: the queue stages nothing.
    pub staged_from: u32,
    pub staged_units: u32,
    pub _reserved: [u32; 3],
}
assert_layout!(CqConfig, 64, sysmem_base => 0, issue_size => 8, completion_size => 12, cq_id => 16,
    fetch_entries => 24, cmd_buffer_size => 28, ring_page_size => 32, ring_pages => 36, peer_xy => 40,
    staged_from => 44, staged_units => 48);

impl CqConfig {
    /// Whether `units` units from sysmem unit `source` (a fetch slot's
    /// source word) lie inside the staging arena. Without overflow for
    /// any words: the prefetcher checks a source the host may have
    /// written wrong.
    #[inline(always)]
    pub const fn stages(&self, source: u32, units: u32) -> bool {
        let into = source.wrapping_sub(self.staged_from);
        into <= self.staged_units && units <= self.staged_units - into
    }
}

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
        BadDestination = 12, "bad-destination", "destination is not memory the command may write (a multicast's: not worker cores)";
        TooLarge = 13, "too-large", "larger than the buffer it must pass through";
        BadKernelArgs = 14, "bad-kernel-args", "invalid kernel runtime arguments";
        NoNoc = 15, "no-noc", "NOC access from a core that has none (TRISCs run plain RISC-V code)";
        BadNocMap = 16, "bad-noc-map", "the NOC map is missing or invalid";
        BadSource = 17, "bad-source", "source is not memory the command may read";
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
    assert!(ALIVE >= crate::semaphore::END);
    assert!(WAYPOINT >= ALIVE + 32);
    assert!(CQ_CONFIG >= WAYPOINT + 4);
    assert!(ERROR >= CQ_CONFIG + 64);
    assert!(EXIT >= ERROR + 64);
    assert!(COMPLETION_RD_PTR >= EXIT + 16);
    assert!(LAST_EVENT >= COMPLETION_RD_PTR + 4);
    assert!(SCRATCH >= last_event(crate::noc::MAX_CQS));
    assert!(NOC_MAP >= SCRATCH + SCRATCH_SIZE);
    assert!(SUBORDINATES >= NOC_MAP + core::mem::size_of::<crate::noc_map::NocMap>() as u32);
    assert!(subordinate(4) + 128 <= MAILBOXES.end());
    assert!(NOC_MAP % 16 == 0 && SUBORDINATES % 16 == 0);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_piece_must_lie_inside_the_staging_arena() {
        let cfg = CqConfig { staged_from: 0x1000, staged_units: 0x100, ..Default::default() };
        assert!(cfg.stages(0x1000, 0x100), "the whole arena");
        assert!(cfg.stages(0x10ff, 1) && cfg.stages(0x1100, 0), "its last unit, and nothing at its end");
        assert!(!cfg.stages(0x10ff, 2), "one unit past its end");
        assert!(!cfg.stages(0xfff, 1), "one unit before it");
        assert!(!cfg.stages(0xffff_fff0, 0x40000 >> 16), "the audit's source word");
        assert!(!cfg.stages(0x1000 + 0x80, u32::MAX), "no overflow");
        let none = CqConfig::default();
        assert!(!none.stages(0, 1), "a queue without an arena stages nothing");
    }
}
