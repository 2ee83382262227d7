//! Per-core instruction caches, an option (`SimConfig::icache`, off by
//! default): which lines of code each hart holds, so that a taken branch or
//! jump to a line it does not hold costs a miss. Timing only: the hart always
//! executes what L1 holds now (the decoded-instruction cache in `memory`
//! keeps that exact), where silicon could run stale lines.
//!
//! The sources (tt-isa-documentation
//! `WormholeB0/TensixTile/BabyRISCV/InstructionCache.md`): each core has its
//! own cache between it and L1 ([`capacity`]); "a hardware prefetcher also
//! tries to pull things in ahead of them being required"; the cache is
//! cleared when the core leaves soft reset and by writes to
//! `RISCV_IC_INVALIDATE_InvalidateAll` (Tensix backend configuration), not
//! by `fence.i` and not by writes to L1. A fetch into the cache is one
//! 128-bit L1 read yielding four instructions (`WormholeB0/TensixTile/L1.md`,
//! "Maximum theoretical bandwidth"): [`LINE_BYTES`]. NCRISC's 16 KiB
//! instruction RAM on Wormhole bypasses the cache; the simulator maps no code
//! there, so every fetch it models is from L1. The miss cost is unpublished:
//! `SimConfig::icache_miss_cycles`.
//!
//! Modelled, where the sources are silent, in the simplest way they allow:
//! - direct-mapped [`LINE_BYTES`] lines (associativity and replacement are
//!   not published; one line per set is the most conflict-prone choice);
//! - the prefetcher as next-line: entering a line brings in the next one in
//!   time, so straight-line code never misses and only a taken branch or
//!   jump to a line the cache does not hold costs a miss (on top of
//!   `timing::TAKEN_PENALTY`), as does the first fetch after reset;
//! - no work per instruction: between two taken transfers a hart runs
//!   consecutive words (as `history` relies on), so the lines of that
//!   straight run are filled in one go at the transfer that ends it, or
//!   before anything drops lines. The tags are then what filling line by
//!   line would have left.
//!
//! Not modelled: the prefetcher's in-flight limit, its limit address and
//! any fetch past a taken branch; speculative fetches of the branch
//! predictor; L1 port contention of fetches; `.ttinsn` fusion on the TRISCs.
//!
//! Dropped lines: all of them when the core leaves soft reset
//! (`WormholeB0/TensixTile/SoftReset.md`) and at `Chip::invalidate_code`;
//! the written ones at every NOC or host write into L1, where the decoded
//! cache drops them too. Silicon keeps those, and would run stale code from
//! them unless firmware wrote `RISCV_IC_INVALIDATE_InvalidateAll`, which
//! cqlab cannot take (it does not model the Tensix backend configuration):
//! dropping exactly the written lines stands in for that write and costs the
//! misses it would, while a write of data costs nothing. A hart's own stores
//! drop nothing, as on silicon (no firmware writes code with stores).

use cqlab_abi::arch::tensix::{self, Processor};
use cqlab_abi::arch::Arch;

/// Bytes per line: one fetch from L1 (`cqlab_abi::arch::tensix::ICACHE_FETCH_BYTES`).
pub const LINE_BYTES: u32 = tensix::ICACHE_FETCH_BYTES;

/// Bytes of processor `p`'s instruction cache on `arch` (sizes and sources:
/// `cqlab_abi::arch::tensix::TensixParams::icache`). Wormhole's NCRISC also
/// has its 16 KiB instruction RAM; Blackhole has none (its README: code is
/// fetched from L1 only).
pub const fn capacity(arch: Arch, p: Processor) -> u32 {
    arch.params().tensix.icache_size(p)
}

/// Lines of the largest cache.
pub const MAX_LINES: usize = 2048 / LINE_BYTES as usize;

/// A set holding no line.
const NONE: u32 = u32::MAX;

/// One hart's instruction cache: its tags and its pending straight run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ICache {
    /// Off, the hart never calls in: one branch per taken transfer.
    pub(crate) on: bool,
    /// Lines it holds, a power of two: sets of one line each.
    lines: u32,
    miss_cycles: u64,
    /// The line (address / [`LINE_BYTES`]) each set holds, or [`NONE`].
    tags: [u32; MAX_LINES],
    /// First line of the straight run the hart is in whose lines (up to
    /// the one it is in, and the next) are not filled yet.
    run: u32,
    misses: u64,
    /// Tags changed (filled, dropped). Over a loop during which this does
    /// not move every fetch hit, and the next turn hits again: what idle
    /// fast-forward needs to park the loop.
    changes: u64,
}

impl ICache {
    /// No cache: every fetch costs what it always did.
    pub const OFF: ICache =
        ICache { on: false, lines: 1, miss_cycles: 0, tags: [NONE; MAX_LINES], run: 0, misses: 0, changes: 0 };

    /// An empty cache of `bytes` (a power of two, at most 2 KiB); a miss
    /// costs `miss_cycles`.
    pub fn new(bytes: u32, miss_cycles: u64) -> ICache {
        let lines = bytes / LINE_BYTES;
        assert!(lines.is_power_of_two() && lines as usize <= MAX_LINES, "{bytes} B is no instruction cache size");
        ICache { on: true, lines, miss_cycles, ..ICache::OFF }
    }

    /// Bytes it holds (0 when off).
    pub fn bytes(&self) -> u32 {
        if self.on {
            self.lines * LINE_BYTES
        } else {
            0
        }
    }

    /// Misses so far.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    fn set(&self, line: u32) -> usize {
        (line & (self.lines - 1)) as usize
    }

    fn fill(&mut self, line: u32) {
        let s = self.set(line);
        if self.tags[s] != line {
            self.tags[s] = line;
            self.changes += 1;
        }
    }

    /// Fills the straight run up to the instruction at `pc`, and the line
    /// after it (prefetched); `pc`'s line starts the next pending run.
    fn fill_run(&mut self, pc: u32) {
        let (now, next) = (pc / LINE_BYTES, pc / LINE_BYTES + 1);
        // A line more than `lines` back has had its set refilled since.
        let first = self.run.min(now).max((next + 1).saturating_sub(self.lines));
        for line in first..=next {
            self.fill(line);
        }
        self.run = now;
    }

    /// The hart starts fetching at `line` after a transfer: the cycles it
    /// waits for it.
    fn enter(&mut self, line: u32) -> u64 {
        self.run = line;
        let s = self.set(line);
        if self.tags[s] == line {
            return 0;
        }
        self.tags[s] = line;
        self.misses += 1;
        self.changes += 1;
        self.miss_cycles
    }

    /// A taken branch or jump from the instruction at `from` to `to`: the
    /// extra cycles it costs. Out of line: only called when on.
    #[inline(never)]
    pub(crate) fn jump(&mut self, from: u32, to: u32) -> u64 {
        self.fill_run(from);
        self.enter(to / LINE_BYTES)
    }

    /// The core leaves soft reset at `entry`: everything dropped, and its
    /// first fetch misses. The cycles that costs (0 when off).
    pub(crate) fn reset(&mut self, entry: u32) -> u64 {
        if !self.on {
            return 0;
        }
        self.clear(entry);
        self.enter(entry / LINE_BYTES)
    }

    /// Drops every line; the hart goes on at `pc` (its line is fetched
    /// again as it goes on, unpaid: the pipeline holds the instructions
    /// after it, tt-isa `InstructionCache.md` "Cache invalidation").
    pub(crate) fn clear(&mut self, pc: u32) {
        if self.tags.iter().any(|&t| t != NONE) {
            self.changes += 1;
        }
        self.tags = [NONE; MAX_LINES];
        self.run = pc / LINE_BYTES;
    }

    /// Lines `[lo, hi]` of a write to `[addr, addr + len)` (`len` > 0).
    fn line_range(addr: u32, len: u32) -> (u32, u32) {
        (addr / LINE_BYTES, (addr as u64 + len as u64 - 1).min(u32::MAX as u64) as u32 / LINE_BYTES)
    }

    /// True if a write to `[addr, addr + len)` would drop a line the hart
    /// at `pc` holds or has fetched in its pending run.
    pub(crate) fn holds_any(&self, pc: u32, addr: u32, len: u32) -> bool {
        if !self.on || len == 0 {
            return false;
        }
        let (lo, hi) = Self::line_range(addr, len);
        let (first, last) = (self.run.min(pc / LINE_BYTES), pc / LINE_BYTES + 1);
        if first <= hi && lo <= last {
            return true;
        }
        if hi - lo >= self.lines {
            self.tags[..self.lines as usize].iter().any(|&t| t != NONE && (lo..=hi).contains(&t))
        } else {
            (lo..=hi).any(|line| self.tags[self.set(line)] == line)
        }
    }

    /// A write to `[addr, addr + len)` lands while the hart is at `pc`: the
    /// lines it has fetched so far are filled first, then the written ones
    /// dropped.
    pub(crate) fn drop_written(&mut self, pc: u32, addr: u32, len: u32) {
        if !self.on || len == 0 {
            return;
        }
        self.fill_run(pc);
        let (lo, hi) = Self::line_range(addr, len);
        for s in 0..self.lines as usize {
            if self.tags[s] != NONE && (lo..=hi).contains(&self.tags[s]) {
                self.tags[s] = NONE;
                self.changes += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_per_processor_on_both_chips() {
        let wormhole = [2048, 512, 2048, 512, 2048]; // B, NC, T0, T1, T2 (Processor::ALL)
        for arch in Arch::ALL {
            let sizes = Processor::ALL.map(|p| capacity(arch, p));
            assert_eq!(sizes, wormhole, "{arch:?}");
            for p in Processor::ALL {
                let c = ICache::new(capacity(arch, p), 8);
                assert_eq!((c.bytes(), c.lines as usize * 4), (capacity(arch, p), capacity(arch, p) as usize / 4));
            }
        }
        assert_eq!(MAX_LINES, 128);
        assert_eq!(ICache::OFF.bytes(), 0);
    }

    #[test]
    fn a_straight_run_fills_its_lines_and_the_next_at_the_transfer() {
        let mut c = ICache::new(512, 8);
        assert_eq!(c.reset(0x100), 8, "the first fetch after reset misses");
        // Runs 0x100..=0x13c, jumps back: the target was filled, hit.
        assert_eq!(c.jump(0x13c, 0x100), 0);
        // Every line of the run and the one after it are held.
        assert!((0x10..=0x14).all(|l| c.tags[c.set(l)] == l));
        assert_eq!(c.jump(0x100, 0x140), 0, "prefetched after the run");
        assert_eq!(c.jump(0x140, 0x180), 8, "never fetched");
        assert_eq!(c.misses(), 2);
    }

    #[test]
    fn conflicting_lines_evict_each_other() {
        let mut c = ICache::new(512, 8); // 32 lines: 0x000 and 0x200 share a set
        c.reset(0x000);
        assert_eq!(c.jump(0x000, 0x200), 8);
        assert_eq!(c.jump(0x200, 0x000), 8, "0x000 was evicted");
        // A run longer than the cache keeps only its last lines.
        let mut c = ICache::new(512, 8);
        c.reset(0);
        assert_eq!(c.jump(0x3fc, 0x400), 0, "prefetched");
        assert_eq!(c.jump(0x400, 0x0), 8, "overwritten by 0x200..");
        assert_eq!(c.jump(0x0, 0x3f0), 0, "the run's last lines stay");
    }

    #[test]
    fn writes_drop_the_lines_they_touch_and_nothing_else() {
        let mut c = ICache::new(2048, 8);
        c.reset(0x1000);
        c.jump(0x101c, 0x1000); // lines 0x100..=0x102 held
        assert!(c.holds_any(0x1000, 0x1010, 4) && !c.holds_any(0x1000, 0x2000, 64));
        let before = c.changes();
        c.drop_written(0x1000, 0x1010, 4);
        assert!(c.changes() > before);
        assert_eq!(c.jump(0x1004, 0x1000), 0, "its own line stays");
        assert_eq!(c.jump(0x1000, 0x1010), 0, "prefetched again with the run");
        c.drop_written(0x1010, 0x1000, 0x10000);
        assert_eq!(c.jump(0x1010, 0x1000), 8, "dropped by a write of many lines");
        // The pending run counts as held: it was fetched before the write.
        let mut c = ICache::new(2048, 8);
        c.reset(0x1000);
        assert!(c.holds_any(0x1030, 0x1020, 4));
        c.clear(0x1030);
        assert_eq!(c.jump(0x1030, 0x1000), 8, "cleared");
    }
}
