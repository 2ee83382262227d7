//! Core-local MMIO register map. Each core sees its own block at `MMIO_BASE`;
//! the host and other cores reach it through the NOC at the same local
//! address on that core's coordinates.

/// Base of the core-local register block.
pub const MMIO_BASE: u32 = 0xFFB0_0000;
/// Size of the register block.
pub const MMIO_SIZE: u32 = 0x1000;

/// Read-only: this core's coordinates, `x | y << 8`.
pub const CORE_ID: u32 = 0x000;
/// 1 holds the hart in reset; the host writes 0 to release it.
pub const SOFT_RESET: u32 = 0x004;

// One NOC command buffer. Fill the fields, then write the command kind to
// `NOC_CMD` to issue. Issue is immediate; completion shows in the counters.
/// Target NOC address, low and high word (see `noc::NocAddr`).
pub const NOC_TARGET_LO: u32 = 0x100;
pub const NOC_TARGET_HI: u32 = 0x104;
/// Local L1 address: source of a write, destination of a read.
pub const NOC_LOCAL_ADDR: u32 = 0x108;
/// Transfer length in bytes (at most `NOC_MAX_PACKET` per command).
pub const NOC_LEN: u32 = 0x10C;
/// Increment for `NocCmd::AtomicInc`.
pub const NOC_ATOMIC_VALUE: u32 = 0x110;
/// Writing a `NocCmd` value issues the command.
pub const NOC_CMD: u32 = 0x114;
/// Transaction id (below `NOC_READ_IDS`, 0 at reset) of the reads the
/// command buffer issues: a read's landing also counts in its id's
/// `noc_reads_acked_id` counter, so firmware can wait for some reads while
/// others stay in flight, as tt-metal's `noc_async_read_barrier_with_trid`
/// waits on the NOC's per-transaction-id outstanding-request counters.
pub const NOC_READ_ID: u32 = 0x118;
/// Read transaction ids: 16, as Wormhole's NOC (tt-metal's
/// `wormhole/noc/noc_parameters.h`: `NOC_MAX_TRANSACTION_ID 0xF`).
pub const NOC_READ_IDS: u32 = 16;

// Transaction counters (read-only, wrapping u32). A barrier waits until
// acked == issued; a flush (source reusable) until sent == issued.
pub const NOC_READS_ISSUED: u32 = 0x140;
pub const NOC_READS_ACKED: u32 = 0x144;
pub const NOC_WRITES_ISSUED: u32 = 0x148;
pub const NOC_WRITES_ACKED: u32 = 0x14C;
pub const NOC_ATOMICS_ISSUED: u32 = 0x150;
pub const NOC_ATOMICS_ACKED: u32 = 0x154;
/// Writes whose last byte has left this core's L1: their source may be
/// reused (they may still be in flight). tt-metal calls waiting for this
/// `noc_async_writes_flushed`, waiting for `NOC_WRITES_ACKED` a barrier.
pub const NOC_WRITES_SENT: u32 = 0x158;
/// Writes and atomics issued and not acknowledged yet (issued - acked of
/// both, wrapping): one load for a barrier instead of four, as tt-metal
/// compares one acknowledgement register with a count it keeps itself.
pub const NOC_UNACKED: u32 = 0x15C;
/// Reads of transaction id 0 that have landed; the counter of id `i`
/// follows at `noc_reads_acked_id(i)`.
pub const NOC_READS_ACKED_ID: u32 = 0x160;
/// Offset of the landed-reads counter of transaction id `id`.
pub const fn noc_reads_acked_id(id: u32) -> u32 {
    NOC_READS_ACKED_ID + 4 * id
}
/// The last read-only counter.
pub const NOC_COUNTERS_END: u32 = noc_reads_acked_id(NOC_READ_IDS - 1);
const _: () = assert!(NOC_UNACKED < NOC_READS_ACKED_ID && NOC_COUNTERS_END < SEMAPHORE_BASE);

/// Semaphores: `SEMAPHORE_COUNT` u32 registers, readable and writable by the
/// core, incremented remotely by NOC atomics.
pub const SEMAPHORE_BASE: u32 = 0x200;
pub const SEMAPHORE_COUNT: u32 = 16;

/// Offset of semaphore `index`.
pub const fn semaphore(index: u32) -> u32 {
    SEMAPHORE_BASE + 4 * index
}

/// Largest single NOC transfer.
pub const NOC_MAX_PACKET: u32 = 8192;

id_table! {
    /// NOC command kinds written to `NOC_CMD`.
    pub enum NocCmd: u32 { from_u32, name } {
        /// Read `NOC_LEN` bytes at the target into local L1.
        Read = 1, "read";
        /// Write `NOC_LEN` bytes of local L1 to the target (unicast or multicast).
        Write = 2, "write";
        /// Add `NOC_ATOMIC_VALUE` to the u32 at the target (unicast; it reads
        /// neither `NOC_LOCAL_ADDR` nor `NOC_LEN`).
        AtomicInc = 3, "atomic-inc";
    }
}

/// Semaphore roles in the command-queue protocol.
pub mod sem {
    /// On a dispatcher: incremented by each worker when it finishes.
    pub const WORKERS_DONE: u32 = 0;
    /// On a prefetcher: incremented by its dispatcher to release a STALL.
    pub const STALL_RELEASE: u32 = 1;
    /// On a prefetcher: dispatcher ring pages the dispatcher has freed.
    pub const RING_PAGES_FREED: u32 = 2;
    /// On a dispatcher: 16-byte units of ring data the prefetcher has written.
    pub const RING_UNITS_FILLED: u32 = 3;
    /// On a dispatcher: `LAUNCH_DONE + s` counts worker completions of the
    /// launches that used launch-ring entry `s` (see `program::launch_done_sem`).
    pub const LAUNCH_DONE: u32 = 4;
}

const _: () = assert!(semaphore(SEMAPHORE_COUNT - 1) < MMIO_SIZE);
