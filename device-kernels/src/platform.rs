//! Everything CQ firmware needs from its core, as a trait: L1, the NOC,
//! semaphores, the cycle counter. `hal::Device` implements it on RISC-V; the
//! logic above it is plain Rust.

use crate::memory::Memory;
use cqlab_abi::noc::NocAddr;

pub trait Platform: Memory {
    /// `mcycle`.
    fn cycle(&self) -> u64;
    /// The low word of `mcycle`: one CSR read, for intervals under 2^32 cycles.
    fn cycle_lo(&self) -> u32 {
        self.cycle() as u32
    }
    /// This core's coordinates (`Coord::packed`).
    fn core_xy(&self) -> u32;
    fn semaphore(&self, index: u32) -> u32;
    fn set_semaphore(&mut self, index: u32, value: u32);
    /// Starts reading `len` bytes at `src` into local L1 `local`.
    fn noc_read(&mut self, src: NocAddr, local: u32, len: u32);
    /// [`Platform::noc_read`] with transaction id `id` (1 up to
    /// `mmio::NOC_READ_IDS`; plain reads carry 0): its landing also counts in
    /// [`Platform::reads_acked_id`] of `id`.
    fn noc_read_with_id(&mut self, src: NocAddr, local: u32, len: u32, id: u32);
    /// Reads of transaction id `id` that have landed (wrapping).
    fn reads_acked_id(&self, id: u32) -> u32;
    /// Starts writing `len` bytes of local L1 `local` to `dst` (unicast or multicast).
    fn noc_write(&mut self, local: u32, dst: NocAddr, len: u32);
    /// Starts adding `value` to the u32 at `dst`.
    fn noc_atomic_inc(&mut self, dst: NocAddr, value: u32);
    /// Starts adding `value` to the u32 at `a`, then to the one at `b`
    /// (issued in that order). The HAL rewrites only the command-buffer
    /// fields that differ for the second.
    fn noc_atomic_inc_both(&mut self, a: NocAddr, b: NocAddr, value: u32) {
        self.noc_atomic_inc(a, value);
        self.noc_atomic_inc(b, value);
    }
    /// All issued reads have landed in L1.
    fn reads_done(&self) -> bool;
    /// All issued writes and atomics have been acknowledged (landed).
    fn writes_done(&self) -> bool;
    /// All issued writes have left L1: their sources may be reused (tt-metal:
    /// `noc_async_writes_flushed`). They may still be in flight.
    fn writes_sent(&self) -> bool;
    /// Writes issued so far (wrapping count of NOC write packets): the mark
    /// a later [`Platform::writes_sent_count`] must reach for every write
    /// issued up to now to have left L1.
    fn writes_issued(&self) -> u32;
    /// Writes that have left L1 so far (wrapping; counts up to `writes_issued`).
    fn writes_sent_count(&self) -> u32;
    /// Stops the core for good.
    fn halt(&mut self) -> !;
}
