//! Blackhole's per-core L0 data caches (`SimConfig::l0_data_cache`, on by
//! default on Blackhole; Wormhole has none): what each hart's tiny cache in front of L1 holds, so a
//! load it hits costs [`HIT_CYCLES`] and, above all, returns what the cache
//! holds, which need not be what L1 holds now.
//!
//! The source is tt-isa-documentation `BlackholeA0/TensixTile/BabyRISCV/README.md`
//! ("L0 Data Cache" and "Load/Store Unit"):
//! - 64 bytes a core: [`LINES`] lines of [`LINE_BYTES`];
//! - not coherent: a write to L1 by the NOC, the host or another core of the
//!   tile leaves every other core's copy as it was;
//! - flushed whole by any `fence` (or atomic; cqlab's cores are RV32IM and
//!   have none), and by a hit with a ~0.8 % chance ([`FLUSH_PER_MILLE`];
//!   `cfg0.DisLowCachePeriodicFlush`, which turns that off, is not modelled);
//! - a store to L1 drops its line (the cache is never dirty);
//! - a hit's load latency is 2 cycles, a miss's the L1 load's >= 8.
//!
//! tt-metal's answer is `invalidate_l1_cache()`, a `fence` on Blackhole,
//! before each read of a word another agent writes (`risc_common.h`); a
//! firmware that polls without it reads its first copy until a periodic
//! flush, and may take stale data for fresh. [`L0Cache::stale_hits`] counts
//! the loads that returned bytes L1 no longer holds.
//!
//! Model choices where the page is silent: fully associative, lines
//! replaced first in first out (from the first slot again after a flush),
//! empty after reset; the periodic flush drawn per hit from the chip's seed
//! and the core (so a run replays bit for bit), 8 hits in 1,000.

/// Lines a cache holds.
pub const LINES: usize = 4;
/// Bytes a line holds.
pub const LINE_BYTES: u32 = 16;
/// A hit's load latency (README: "L0 data cache hit", 2 cycles).
pub const HIT_CYCLES: u64 = 2;
/// Hits in 1,000 that flush the whole cache (README: "~0.8%").
pub const FLUSH_PER_MILLE: u64 = 8;

/// A line slot holding nothing.
const NONE: u32 = u32::MAX;

/// One hart's L0 data cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L0Cache {
    /// Off, the hart never calls in (Wormhole has no such cache).
    pub(crate) on: bool,
    /// The line (address / [`LINE_BYTES`]) each slot holds, or [`NONE`].
    tags: [u32; LINES],
    data: [[u8; LINE_BYTES as usize]; LINES],
    /// The slot the next miss fills.
    next: u8,
    /// Draws the periodic flush: the chip's seed mixed with the core.
    seed: u64,
    hits: u64,
    stale_hits: u64,
    /// The cycle, PC and address of the first stale hit, for finding the
    /// read.
    first_stale: Option<(u64, u32, u32)>,
}

/// What of a cache decides its future: its lines, their copies and the
/// next slot a miss fills (idle fast-forward compares it: a turn that
/// changed it is no repeat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct L0State {
    tags: [u32; LINES],
    data: [[u8; LINE_BYTES as usize]; LINES],
    next: u8,
}

impl L0State {
    /// The state as bytes (for the chip's digest).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b: Vec<u8> = self.tags.iter().flat_map(|t| t.to_le_bytes()).collect();
        b.extend(self.data.iter().flatten());
        b.push(self.next);
        b
    }
}

impl L0Cache {
    /// No cache: every load goes to L1.
    pub const OFF: L0Cache = L0Cache {
        on: false,
        tags: [NONE; LINES],
        data: [[0; LINE_BYTES as usize]; LINES],
        next: 0,
        seed: 0,
        hits: 0,
        stale_hits: 0,
        first_stale: None,
    };

    /// An empty cache whose periodic flushes are drawn from `seed`.
    pub fn new(seed: u64) -> L0Cache {
        L0Cache { on: true, seed, ..L0Cache::OFF }
    }

    /// Loads that hit.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Hits that returned bytes other than what L1 held at the load: reads
    /// a firmware would have taken stale on silicon.
    pub fn stale_hits(&self) -> u64 {
        self.stale_hits
    }

    /// The cycle, PC and address of the first stale hit: the read that
    /// needed a `fence` before it.
    pub fn first_stale(&self) -> Option<(u64, u32, u32)> {
        self.first_stale
    }

    /// The lines, copies and next slot (see [`L0State`]); all empty when
    /// the cache is off.
    pub fn state(&self) -> L0State {
        if !self.on {
            return L0State::default();
        }
        let mut data = [[0; LINE_BYTES as usize]; LINES];
        for (slot, d) in data.iter_mut().enumerate() {
            if self.tags[slot] != NONE {
                *d = self.data[slot];
            }
        }
        L0State { tags: self.tags, data, next: self.next }
    }

    /// Drops every line (`fence`, reset, the periodic flush); the next miss
    /// fills the first slot, so a loop that fences each turn leaves the
    /// cache the same at each turn's start.
    #[inline]
    pub fn flush(&mut self) {
        self.tags = [NONE; LINES];
        self.next = 0;
    }

    /// Drops the line of a store to `addr` (a hart's own store to L1).
    #[inline]
    pub fn drop_line(&mut self, addr: u32) {
        let line = addr / LINE_BYTES;
        for t in &mut self.tags {
            if *t == line {
                *t = NONE;
            }
        }
    }

    /// A load of `N` bytes at `addr` by the instruction at `pc`, at `cycle`
    /// (kept for the first stale hit), which L1 holds as `fresh` now, with
    /// `line` giving the 16 bytes of L1 around it (read only on a miss):
    /// the bytes the core gets, and whether they came from the cache.
    #[inline]
    pub fn load<const N: usize>(
        &mut self,
        addr: u32,
        fresh: [u8; N],
        (cycle, pc): (u64, u32),
        line: impl FnOnce(u32) -> [u8; LINE_BYTES as usize],
    ) -> ([u8; N], bool) {
        let tag = addr / LINE_BYTES;
        let at = (addr % LINE_BYTES) as usize;
        if let Some(slot) = self.tags.iter().position(|&t| t == tag) {
            let mut got = [0u8; N];
            got.copy_from_slice(&self.data[slot][at..at + N]);
            self.hits += 1;
            if got != fresh {
                self.stale_hits += 1;
                self.first_stale.get_or_insert((cycle, pc, addr));
            }
            if crate::rng::at(self.seed, self.hits) % 1000 < FLUSH_PER_MILLE {
                self.flush();
            }
            return (got, true);
        }
        let slot = self.next as usize;
        self.tags[slot] = tag;
        self.data[slot] = line(tag * LINE_BYTES);
        self.next = ((slot + 1) % LINES) as u8;
        (fresh, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l1(addr: u32) -> [u8; 16] {
        core::array::from_fn(|i| (addr as usize + i) as u8)
    }

    #[test]
    fn a_hit_returns_the_cached_copy_until_a_flush_or_own_store() {
        let mut c = L0Cache::new(1);
        let (v, hit) = c.load::<4>(0x100, [1, 2, 3, 4], (0, 0), l1);
        assert_eq!((v, hit), ([1, 2, 3, 4], false), "a miss returns L1's bytes");
        // L1 changed behind the cache (a NOC write): the copy is returned.
        let (v, hit) = c.load::<4>(0x104, [9, 9, 9, 9], (5, 0x40), l1);
        assert_eq!((v, hit), ([4, 5, 6, 7], true));
        assert_eq!((c.hits(), c.stale_hits(), c.first_stale()), (1, 1, Some((5, 0x40, 0x104))));
        c.drop_line(0x10C);
        assert!(!c.load::<4>(0x104, [9, 9, 9, 9], (0, 0), l1).1, "own store dropped the line");
        c.flush();
        assert_eq!(c.load::<2>(0x104, [7, 7], (0, 0), l1), ([7, 7], false), "fence flushed it");
    }

    #[test]
    fn four_lines_first_in_first_out() {
        let mut c = L0Cache::new(2);
        for line in 0..5u32 {
            c.load::<4>(line * 16, [0; 4], (0, 0), l1);
        }
        // Line 0 went for line 4; 1..=4 hit (no periodic flush among these
        // four draws of seed 2).
        for line in 1..5u32 {
            assert!(c.load::<4>(line * 16, [0; 4], (0, 0), l1).1, "line {line}");
        }
    }

    #[test]
    fn hits_flush_the_cache_about_eight_in_a_thousand() {
        let mut c = L0Cache::new(3);
        let mut flushes = 0;
        for _ in 0..100_000 {
            if !c.load::<4>(0, [0; 4], (0, 0), l1).1 {
                flushes += 1;
            }
        }
        assert!((600..=1000).contains(&flushes), "{flushes} refills in 100,000 loads");
    }
}
