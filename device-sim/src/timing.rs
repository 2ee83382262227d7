//! Cycle costs of instructions, modelled on the Wormhole and Blackhole
//! "baby" RISC-V cores (docs/design.md, "Timing"): in-order harts.
//!
//! | class | cycles |
//! |---|---|
//! | any instruction | 1 |
//! | taken branch, `jal`, `jalr` | 1 + [`taken_penalty`]: 2 on Wormhole, 4 on Blackhole |
//! | ... to code the core's instruction cache does not hold (`SimConfig::icache`, off by default) | + `SimConfig::icache_miss_cycles` ([`crate::icache`]) |
//! | load (L1, MMIO, DRAM window) | [`LOAD_CYCLES`] |
//! | load of L1 that hits Blackhole's L0 data cache (`SimConfig::l0_data_cache`) | [`crate::l0cache::HIT_CYCLES`] |
//! | load or store (local data memory) | 1 |
//! | `mul*` | [`MUL_CYCLES`] |
//! | `div*`/`rem*` | [`div_cycles`]: 6..=33, data dependent |
//!
//! Stores, CSR reads and `fence` cost 1 cycle, but L1 takes a RISC-V's
//! stores at a limited rate ([`L1Stores`]): a run of stores to L1 stalls
//! the hart once its store queue is full.
//!
//! Local data memory (`tensix::LOCAL_MEM_BASE`, `0xFFB0_0000`; tt-metal's
//! `MEM_LOCAL_BASE`, per core `TensixParams::local_mem_size`: 4/4/2 KiB for
//! BRISC/NCRISC/TRISCs on Wormhole, 8/8/4 KiB on Blackhole, from
//! `dev_mem_map.h`) is private to its hart, one cycle per load or store, not
//! reachable over the NOC or the BAR. Firmware keeps its stack there, so
//! spills, locals and the dispatcher's and prefetcher's state cost 1 cycle
//! instead of `LOAD_CYCLES`; everything shared (mailboxes, rings, buffers)
//! stays in L1 and keeps its latency. Dispatch figures depend on it: moving
//! the stack back to L1 makes every firmware command several times slower.
//!
//! Kernel-bound dispatch (`cqlab bench dispatch`, kernels of 1,000 cycles
//! and more) is paced by the worker firmware between two kernels: about
//! 190 cycles per program on top of the kernel. About a third of that is
//! [`LOAD_CYCLES`] per L1 word it must read: the launch tag, the words of
//! its kernel group and the sequence number (`program::KernelGroup` is
//! packed so that these are seven loads), and one `NOC_UNACKED` load for
//! the barrier before it reports done. The rest is instructions and 1-cycle
//! stores: two trace records, building the kernel's context in local
//! memory, the call, and the two done atomics.

/// How fast L1 takes a RISC-V's stores: the hart queues up to `queue`
/// stores and goes on; the queue writes one to L1 every `interval` cycles,
/// and a store that finds it full waits for a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L1Stores {
    /// Cycles between two stores reaching L1.
    pub interval: u64,
    /// Stores the hart may have queued.
    pub queue: u64,
    /// A store to the same aligned 16-byte block as the store before it,
    /// still queued, starting within 4 bytes of it, joins it instead of
    /// taking a slot of its own.
    pub coalesce: bool,
}

impl L1Stores {
    /// Wormhole: "Throughput of sustained stores to L1 is at most one store
    /// every five cycles" (tt-isa-documentation
    /// `WormholeB0/TensixTile/BabyRISCV/README.md`); the Load/Store Unit's
    /// four-entry store queue (same folder, `MemoryOrdering.md`).
    pub const WORMHOLE: L1Stores = L1Stores { interval: 5, queue: 4, coalesce: false };
    /// Blackhole: stores coalesce into aligned 128-bit blocks when each
    /// starts within ±4 bytes of the one before, one coalesced store every
    /// five cycles (tt-isa-documentation
    /// `BlackholeA0/TensixTile/BabyRISCV/README.md`); the queue as Wormhole's.
    pub const BLACKHOLE: L1Stores = L1Stores { interval: 5, queue: 4, coalesce: true };

    /// The chip's.
    pub fn of(arch: cqlab_abi::arch::Arch) -> L1Stores {
        match arch {
            cqlab_abi::arch::Arch::Wormhole => L1Stores::WORMHOLE,
            cqlab_abi::arch::Arch::Blackhole => L1Stores::BLACKHOLE,
        }
    }
}

/// Extra cycles for a taken branch or a jump (pipeline refill) on
/// Wormhole: a mispredicted branch's two-cycle bubble (tt-isa
/// `WormholeB0/TensixTile/BabyRISCV/README.md`, "Integer Unit"). The
/// predictor is not published; the model charges every taken transfer.
pub const TAKEN_PENALTY: u64 = 2;

/// Blackhole's: its mispredicted branch's four-cycle bubble (tt-isa
/// `BlackholeA0/TensixTile/BabyRISCV/README.md`, "EX1").
pub const BLACKHOLE_TAKEN_PENALTY: u64 = 4;

/// The taken-branch penalty of `arch`'s cores.
pub const fn taken_penalty(arch: cqlab_abi::arch::Arch) -> u64 {
    match arch {
        cqlab_abi::arch::Arch::Wormhole => TAKEN_PENALTY,
        cqlab_abi::arch::Arch::Blackhole => BLACKHOLE_TAKEN_PENALTY,
    }
}
/// Total cycles of a load from L1 (the hart stalls until data returns).
pub const LOAD_CYCLES: u64 = 8;
/// Total cycles of a multiply.
pub const MUL_CYCLES: u64 = 2;
/// Fewest and most cycles a division or remainder takes.
pub const DIV_MIN_CYCLES: u64 = 6;
pub const DIV_MAX_CYCLES: u64 = 33;

/// Cycles of a division or remainder of `a` by `b` (magnitudes as unsigned):
/// an early-out radix-2 divider. Setup costs [`DIV_MIN_CYCLES`], then one
/// cycle per quotient bit, i.e. `bits(a) - bits(b) + 1` when `a >= b`,
/// capped at [`DIV_MAX_CYCLES`]. Division by zero and a dividend smaller
/// than the divisor take the minimum.
#[inline]
pub fn div_cycles(a: u32, b: u32) -> u64 {
    if b == 0 || a < b {
        return DIV_MIN_CYCLES;
    }
    let quotient_bits = (b.leading_zeros() - a.leading_zeros() + 1) as u64;
    (DIV_MIN_CYCLES + quotient_bits).min(DIV_MAX_CYCLES)
}

/// Magnitudes used for the timing of a signed division.
#[inline]
pub fn signed_div_cycles(a: u32, b: u32) -> u64 {
    div_cycles((a as i32).unsigned_abs(), (b as i32).unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_cost_is_bounded_and_data_dependent() {
        assert_eq!(div_cycles(7, 0), 6);
        assert_eq!(div_cycles(3, 7), 6);
        assert_eq!(div_cycles(7, 7), 7);
        assert_eq!(div_cycles(100, 10), 6 + 4);
        assert_eq!(div_cycles(u32::MAX, 1), 33);
        assert_eq!(signed_div_cycles(i32::MIN as u32, -1i32 as u32), 33);
        assert_eq!(signed_div_cycles(-100i32 as u32, 10), 10);
        for a in [0u32, 1, 5, 1 << 20, u32::MAX] {
            for b in [0u32, 1, 3, 1 << 10, u32::MAX] {
                assert!((DIV_MIN_CYCLES..=DIV_MAX_CYCLES).contains(&div_cycles(a, b)));
            }
        }
    }
}
