//! Semaphores: L1 words of every Tensix tile (in `memory_map::MAILBOXES`),
//! incremented from other tiles by NOC atomics (`NOC_CMD_AT` with
//! `INCR_GET`, wrap 31: a full 32-bit add, as tt-metal's `noc_semaphore_inc`
//! issues it through `noc_fast_atomic_increment`), read and set by the
//! owning core with plain L1 loads and stores (as tt-metal's
//! `noc_semaphore_wait` and `noc_semaphore_set`).
//!
//! A word's address is all the NOC needs: an atomic names a 16-byte L1 line
//! and the word in it (`arch::noc_cmd::atomic::incr_get`).

use crate::memory_map::MAILBOXES;

/// L1 address of semaphore 0; semaphore `i` is the word `4 * i` after it.
pub const BASE: u32 = MAILBOXES.base;
/// Semaphores per tile.
pub const COUNT: u32 = 16;

/// L1 address of semaphore `index`.
pub const fn addr(index: u32) -> u32 {
    BASE + 4 * index
}

/// The semaphore at L1 address `addr`, if it is one.
pub const fn index_of(addr: u32) -> Option<u32> {
    if addr >= BASE && addr < addr_end() && addr % 4 == 0 {
        Some((addr - BASE) / 4)
    } else {
        None
    }
}

const fn addr_end() -> u32 {
    BASE + 4 * COUNT
}

/// The semaphores' L1 bytes.
pub const END: u32 = addr_end();

/// Semaphore roles in the command-queue protocol.
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

const _: () = assert!(BASE % 16 == 0, "atomics address 16-byte lines");
