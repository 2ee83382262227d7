//! Trace records: each core appends fixed-size records to its L1
//! `TRACE_RING`; the host merges the rings of all cores into one timeline.
//!
//! The ring overwrites its oldest records. Each record carries a sequence
//! number, so a reader that finds a gap knows how many records were lost.

use crate::memory_map::TRACE_RING;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Sits at `TRACE_RING.base`; records follow it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct TraceRingHeader {
    /// Sequence number the next record will get (= records ever written).
    pub next_seq: u32,
    /// Capacity of the ring in records.
    pub capacity: u32,
    pub record_size: u32,
    pub _reserved: u32,
}
assert_layout!(TraceRingHeader, 16, next_seq => 0, capacity => 4, record_size => 8);

/// One event on one core.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct TraceRecord {
    /// `mcycle` when the event happened.
    pub cycle: u64,
    /// Position in this core's stream (0, 1, 2, ...).
    pub seq: u32,
    /// `noc::Coord::packed` of the core.
    pub core: u16,
    /// `TraceKind`.
    pub kind: u16,
    pub arg0: u32,
    pub arg1: u32,
}
assert_layout!(TraceRecord, 24, cycle => 0, seq => 8, core => 12, kind => 14, arg0 => 16, arg1 => 20);

/// Address of the first record.
pub const RECORDS_BASE: u32 = TRACE_RING.base + core::mem::size_of::<TraceRingHeader>() as u32;
/// Records the ring holds.
pub const CAPACITY: u32 = (TRACE_RING.size - 16) / core::mem::size_of::<TraceRecord>() as u32;

/// L1 address of the record with sequence number `seq`.
pub const fn record_addr(seq: u32) -> u32 {
    RECORDS_BASE + (seq % CAPACITY) * core::mem::size_of::<TraceRecord>() as u32
}

id_table! {
    /// What a trace record describes. `arg0`/`arg1` meanings are documented per kind.
    pub enum TraceKind: u16 { from_u16, label } {
        /// Firmware started: arg0 = `FirmwareId`, arg1 = ABI version.
        Boot = 1, "boot";
        /// Command started: arg0 = command id, arg1 = size in bytes.
        CmdStart = 2, "cmd";
        /// Command finished: arg0 = command id, arg1 = size in bytes.
        CmdEnd = 3, "cmd_end";
        /// Fetch-queue entry consumed: arg0 = raw entry, arg1 = slot index.
        FetchConsumed = 4, "fetch";
        /// Prefetcher stall began: arg0 = release count awaited, arg1 = observed.
        StallBegin = 5, "stall";
        /// Prefetcher stall ended: arg0 = release count awaited, arg1 = observed.
        StallEnd = 6, "stall_end";
        /// Wait began: arg0 = target value, arg1 = observed value.
        WaitBegin = 7, "wait";
        /// Wait ended: arg0 = target value, arg1 = observed value.
        WaitEnd = 8, "wait_end";
        /// Ring credits acquired: arg0 = pages, arg1 = total acquired so far.
        CreditsAcquired = 9, "credits_acq";
        /// Ring credits released: arg0 = pages, arg1 = total released so far.
        CreditsReleased = 10, "credits_rel";
        /// Worker kernel started: arg0 = program seq, arg1 = kernel id (`program::KernelGroup`).
        KernelStart = 11, "kernel";
        /// Worker kernel finished: arg0 = program seq, arg1 = kernel id.
        KernelEnd = 12, "kernel_end";
        /// Event signalled: arg0 = event id, arg1 = CQ.
        Event = 13, "event";
        /// Completion record written: arg0 = bytes, arg1 = write pointer after.
        CompletionWrite = 14, "completion";
        /// Bad command: arg0 = `DeviceError`, arg1 = offending value.
        Error = 15, "error";
        /// Clean exit on TERMINATE: arg0 = commands executed.
        Exit = 16, "exit";
        /// What a wait watches, emitted before `WaitBegin`: arg0 = `WaitFlags`,
        /// arg1 = L1 address or semaphore index.
        WaitTarget = 17, "wait_target";
    }
}
