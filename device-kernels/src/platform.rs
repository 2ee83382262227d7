//! Everything firmware needs from its core, as a trait: L1, the NOC,
//! semaphores, the cycle counter. `hal::Device` implements it on RISC-V
//! with the NIU's registers; the logic above it is plain Rust.
//!
//! The NOC operations mean what tt-metal's dataflow API means (tt-metal
//! `dataflow_api.h`): a read or write is *issued* here and completes later;
//! `reads_done` is `noc_async_read_barrier`'s condition, `writes_done`
//! `noc_async_write_barrier`'s (and the atomic barrier's), `writes_sent`
//! `noc_async_writes_flushed`'s; `reads_landed_id` is
//! `noc_async_read_barrier_with_trid`'s: the transaction id's outstanding
//! requests (`NIU_MST_REQS_OUTSTANDING_ID`) are down to zero.

use crate::memory::Memory;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::semaphore;

pub trait Platform: Memory {
    /// The NOC this core uses, as an index into the `NocMap`'s per-NOC
    /// tables (BRISC 0, NCRISC 1; a TRISC has none and reports 0).
    const NOC: usize;
    /// Where this core keeps its waypoint (BRISC: `mailbox::WAYPOINT`; a
    /// subordinate core: its `SubordinateMailbox`).
    const WAYPOINT: u32 = cqlab_abi::mailbox::WAYPOINT;

    /// `mcycle`.
    fn cycle(&self) -> u64;
    /// The low word of `mcycle`: one CSR read, for intervals under 2^32 cycles.
    fn cycle_lo(&self) -> u32 {
        self.cycle() as u32
    }
    /// This tile's translated coordinates (`Coord::packed`).
    fn core_xy(&self) -> u32;
    /// Semaphore `index` of this tile (an L1 word).
    fn semaphore(&self, index: u32) -> u32 {
        self.read_u32(semaphore::addr(index))
    }
    fn set_semaphore(&mut self, index: u32, value: u32) {
        self.write_u32(semaphore::addr(index), value)
    }
    /// Starts reading `len` bytes at `src` into local L1 `local`, in
    /// packets of at most the chip's largest, with transaction id 0.
    fn noc_read(&mut self, src: NocAddr, local: u32, len: u32);
    /// [`Platform::noc_read`] with transaction id `id` (1 up to
    /// `arch::noc_cmd::packet_tag::MAX_TRANSACTION_ID`), which
    /// [`Platform::reads_landed_id`] waits on.
    fn noc_read_with_id(&mut self, src: NocAddr, local: u32, len: u32, id: u32);
    /// Every request issued with transaction id `id` has been answered: its
    /// outstanding count is zero. Each id may have at most
    /// `packet_tag::MAX_TRANSACTION_ID_COUNT` (255) packets in flight.
    fn reads_landed_id(&self, id: u32) -> bool;
    /// Starts writing `len` bytes of local L1 `local` to the unicast `dst`.
    fn noc_write(&mut self, local: u32, dst: NocAddr, len: u32);
    /// Starts writing `len` bytes to L1 `addr` of each of `dests` (unicast;
    /// packed coordinate words, `Coord::packed`, as a packed write's
    /// sub-commands carry them), the bytes for `dests[i]` from local L1
    /// `local + i * stride`. The HAL
    /// writes the command buffer's registers that stay the same once, as
    /// tt-metal's dispatcher does for packed writes
    /// (`cq_noc_async_write_with_state`).
    fn noc_write_each(&mut self, local: u32, stride: u32, dests: &[u32], addr: u32, len: u32) {
        for (i, &d) in dests.iter().enumerate() {
            self.noc_write(local + i as u32 * stride, NocAddr::unicast(Coord::unpack(d), addr as u64), len);
        }
    }
    /// Starts writing `len` bytes of local L1 `local` to every receiver of
    /// the multicast `dst`, of which there are `receivers` (each acks).
    fn noc_multicast(&mut self, local: u32, dst: NocAddr, len: u32, receivers: u32);
    /// Starts adding `value` to the u32 at `dst` (a semaphore: an L1 word).
    fn noc_atomic_inc(&mut self, dst: NocAddr, value: u32);
    /// Starts adding `value` to the u32 at `a`, then to the one at `b`
    /// (issued in that order). The HAL rewrites only the command-buffer
    /// registers that differ for the second.
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
    /// Write packets issued so far (wrapping): the mark a later
    /// [`Platform::writes_sent_count`] must reach for every write issued up
    /// to now to have left L1.
    fn writes_issued(&self) -> u32;
    /// Write packets that have left L1 so far (wrapping; counts up to
    /// `writes_issued`): `NIU_MST_NONPOSTED_WR_REQ_SENT`.
    fn writes_sent_count(&self) -> u32;
    /// Stops the core for good.
    fn halt(&mut self) -> !;
    /// Makes the loads after it read L1 itself: Blackhole's L0 data cache
    /// keeps copies a NOC, host or other core's write to L1 does not
    /// update (tt-isa `BlackholeA0/TensixTile/BabyRISCV/README.md`, "L0
    /// Data Cache"). Called before each read of a word another agent
    /// writes, as tt-metal's `invalidate_l1_cache` is (`risc_common.h`: a
    /// `fence` on Blackhole, nothing on Wormhole).
    #[inline(always)]
    fn invalidate_l1(&mut self) {}
}
