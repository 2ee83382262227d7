//! A stack of LRU cache levels between the compute core and DRAM, counting every byte.
//!
//! Level 0 is nearest the core (for example L2), the last level nearest DRAM (for example
//! L3). Policy, chosen to be simple and to never lose a byte:
//!
//! - **Write-back, write-allocate, non-inclusive.** A miss fetches the tile from the level
//!   below (or DRAM) and installs it; a level below keeps its own copy if it had one.
//! - **One dirty copy.** When a dirty tile is fetched upward, the dirty flag moves with it
//!   (the copy below becomes clean), so a partial sum is written back once per eviction,
//!   not once per level that ever held it.
//! - **Evicting a dirty tile writes it to the level below** (installing it there, dirty), or
//!   to DRAM from the last level. A partial-sum C tile that later comes back is fetched again
//!   and both transfers count.
//! - **A whole-tile write needs no fetch**; stale copies further down are dropped.
//! - **Streaming.** A tile larger than a level's capacity bypasses that level: it is fetched
//!   straight through, and if dirty, written straight through.
//! - **Flush at the end.** Remaining dirty tiles are written down level by level to DRAM, so
//!   every finished C tile reaches DRAM.

use crate::problem::{PerTensor, Tensor, TileGrid};
use crate::strategy::{Access, AccessKind};
use crate::{error::ScheduleError, lru::Lru};
use serde::Serialize;

/// A cache level: a name for reports and a capacity in bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LevelSpec {
    /// For example "L2" or "L3".
    pub name: String,
    /// Capacity in bytes.
    pub capacity: u64,
}

impl LevelSpec {
    /// A named level with a capacity in bytes.
    pub fn new(name: impl Into<String>, capacity: u64) -> Self {
        LevelSpec { name: name.into(), capacity }
    }
}

/// Bytes one tensor moves to and from DRAM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TensorTraffic {
    /// Bytes read from DRAM.
    pub read_bytes: u64,
    /// Bytes written to DRAM.
    pub write_bytes: u64,
}

impl TensorTraffic {
    /// Read plus written bytes.
    pub fn moved(&self) -> u64 {
        self.read_bytes + self.write_bytes
    }
}

/// What one level saw of one tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LevelStats {
    /// Requests from above (or from the core) found in this level.
    pub hits: u64,
    /// Requests from above not found (whole-tile writes included: they allocate without a fetch).
    pub misses: u64,
    /// Tiles pushed out to make room.
    pub evictions: u64,
    /// Evictions of dirty tiles (each one a write-back to the level below).
    pub dirty_evictions: u64,
    /// Tiles too large for this level that passed straight through.
    pub bypasses: u64,
    /// Bytes brought in from below on misses.
    pub fill_bytes: u64,
    /// Bytes written down to the level below (evictions and the final flush).
    pub writeback_bytes: u64,
}

impl LevelStats {
    /// `hits / (hits + misses)`, or `None` without requests.
    pub fn hit_rate(&self) -> Option<f64> {
        let n = self.hits + self.misses;
        (n > 0).then(|| self.hits as f64 / n as f64)
    }

    /// Sum of two records.
    pub fn plus(&self, o: &LevelStats) -> LevelStats {
        LevelStats {
            hits: self.hits + o.hits,
            misses: self.misses + o.misses,
            evictions: self.evictions + o.evictions,
            dirty_evictions: self.dirty_evictions + o.dirty_evictions,
            bypasses: self.bypasses + o.bypasses,
            fill_bytes: self.fill_bytes + o.fill_bytes,
            writeback_bytes: self.writeback_bytes + o.writeback_bytes,
        }
    }
}

struct Level {
    lru: Lru,
    stats: PerTensor<LevelStats>,
}

/// The cache stack fed by an access stream.
pub struct Hierarchy<'g> {
    grid: &'g TileGrid,
    levels: Vec<Level>,
    dram: PerTensor<TensorTraffic>,
}

impl<'g> Hierarchy<'g> {
    /// Empty caches with the given capacities, level 0 nearest the core.
    pub fn new(grid: &'g TileGrid, specs: &[LevelSpec]) -> Result<Self, ScheduleError> {
        let levels = specs
            .iter()
            .map(|s| {
                if s.capacity == 0 {
                    return Err(ScheduleError::ZeroCapacity { level: s.name.clone() });
                }
                Ok(Level { lru: Lru::new(grid.total_tiles(), s.capacity), stats: PerTensor::default() })
            })
            .collect::<Result<_, _>>()?;
        Ok(Hierarchy { grid, levels, dram: PerTensor::default() })
    }

    /// Serve one request of the compute core.
    #[inline]
    pub fn access(&mut self, a: Access) {
        let (id, bytes) = self.grid.locate(a.tensor, a.row, a.col);
        match a.kind {
            AccessKind::Read => {
                self.demand(0, id, bytes, a.tensor, false);
            }
            AccessKind::Update => {
                self.demand(0, id, bytes, a.tensor, true);
            }
            AccessKind::Write => self.write_whole(id, bytes, a.tensor),
        }
    }

    /// Write every dirty tile down to DRAM; call once after the stream.
    pub fn flush(&mut self) {
        for lvl in 0..self.levels.len() {
            let dirty: Vec<(u32, u64)> = {
                let lru = &self.levels[lvl].lru;
                lru.iter_lru().filter_map(|id| lru.dirty_bytes(id).map(|b| (id, b))).collect()
            };
            // Writing below never evicts from this level, so each tile is still here.
            for (id, bytes) in dirty {
                let t = self.grid.tensor_of(id);
                self.levels[lvl].lru.set_dirty(id, false);
                self.levels[lvl].stats[t].writeback_bytes += bytes;
                self.write_back(lvl + 1, id, bytes, t);
            }
        }
    }

    /// Bytes moved to and from DRAM so far.
    pub fn dram(&self) -> PerTensor<TensorTraffic> {
        self.dram
    }

    /// Per-level, per-tensor statistics so far.
    pub fn level_stats(&self) -> Vec<PerTensor<LevelStats>> {
        self.levels.iter().map(|l| l.stats).collect()
    }

    /// A request from the level above `lvl` (or the core, for `lvl == 0`). Returns whether
    /// dirty ownership travels up with the tile. `modify` marks the core's copy dirty.
    fn demand(&mut self, lvl: usize, id: u32, bytes: u64, t: Tensor, modify: bool) -> bool {
        if lvl == self.levels.len() {
            self.dram[t].read_bytes += bytes;
            if lvl == 0 && modify {
                // No caches at all: the core's modified tile goes straight back.
                self.dram[t].write_bytes += bytes;
            }
            return false;
        }
        let level = &mut self.levels[lvl];
        if level.lru.contains(id) {
            level.stats[t].hits += 1;
            level.lru.touch(id);
            if lvl == 0 {
                if modify {
                    level.lru.set_dirty(id, true);
                }
                return false;
            }
            let was_dirty = level.lru.is_dirty(id);
            level.lru.set_dirty(id, false);
            return was_dirty;
        }
        level.stats[t].misses += 1;
        level.stats[t].fill_bytes += bytes;
        let carried = self.demand(lvl + 1, id, bytes, t, false);
        if lvl == 0 {
            self.install(0, id, bytes, t, carried || modify);
            false
        } else {
            // Installed clean: the level above takes the dirty copy.
            self.install(lvl, id, bytes, t, false);
            carried
        }
    }

    /// The core writes a whole tile: no fetch; copies further down are stale and dropped.
    fn write_whole(&mut self, id: u32, bytes: u64, t: Tensor) {
        for level in self.levels.iter_mut().skip(1) {
            level.lru.remove(id);
        }
        let Some(top) = self.levels.first_mut() else {
            self.dram[t].write_bytes += bytes;
            return;
        };
        if top.lru.contains(id) {
            top.stats[t].hits += 1;
            top.lru.touch(id);
            top.lru.set_dirty(id, true);
        } else {
            top.stats[t].misses += 1;
            self.install(0, id, bytes, t, true);
        }
    }

    /// A dirty tile arrives at `lvl` from above.
    fn write_back(&mut self, lvl: usize, id: u32, bytes: u64, t: Tensor) {
        if lvl == self.levels.len() {
            self.dram[t].write_bytes += bytes;
            return;
        }
        let lru = &mut self.levels[lvl].lru;
        if lru.contains(id) {
            lru.touch(id);
            lru.set_dirty(id, true);
        } else {
            self.install(lvl, id, bytes, t, true);
        }
    }

    /// Put an absent tile into `lvl`, evicting least recently used tiles as needed.
    fn install(&mut self, lvl: usize, id: u32, bytes: u64, t: Tensor, dirty: bool) {
        if bytes > self.levels[lvl].lru.capacity() {
            self.levels[lvl].stats[t].bypasses += 1;
            if dirty {
                self.levels[lvl].stats[t].writeback_bytes += bytes;
                self.write_back(lvl + 1, id, bytes, t);
            }
            return;
        }
        while !self.levels[lvl].lru.fits(bytes) {
            let Some(ev) = self.levels[lvl].lru.pop_lru() else { break };
            let vt = self.grid.tensor_of(ev.id);
            let stats = &mut self.levels[lvl].stats[vt];
            stats.evictions += 1;
            if ev.dirty {
                stats.dirty_evictions += 1;
                stats.writeback_bytes += ev.bytes;
                self.write_back(lvl + 1, ev.id, ev.bytes, vt);
            }
        }
        self.levels[lvl].lru.insert(id, bytes, dirty);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{Gemm, Tiling};

    /// 2 x 2 x 2 problem, 1 x 1 tiles of 4 bytes.
    fn grid() -> TileGrid {
        TileGrid::new(&Gemm::new(2, 2, 2, 4).unwrap(), &Tiling::square(1).unwrap()).unwrap()
    }

    fn acc(tensor: Tensor, row: u32, col: u32, kind: AccessKind) -> Access {
        Access { tensor, row, col, kind }
    }

    #[test]
    fn evicted_partial_sum_is_written_back_and_read_again() {
        let g = grid();
        let mut h = Hierarchy::new(&g, &[LevelSpec::new("L3", 8)]).unwrap();
        h.access(acc(Tensor::C, 0, 0, AccessKind::Write)); // allocate, no fetch
        h.access(acc(Tensor::A, 0, 0, AccessKind::Read));
        h.access(acc(Tensor::A, 0, 1, AccessKind::Read)); // evicts dirty C: write 4
        assert_eq!(h.dram().c, TensorTraffic { read_bytes: 0, write_bytes: 4 });
        h.access(acc(Tensor::C, 0, 0, AccessKind::Update)); // reload: read 4
        assert_eq!(h.dram().c, TensorTraffic { read_bytes: 4, write_bytes: 4 });
        h.flush(); // the finished tile: write 4
        assert_eq!(h.dram().c, TensorTraffic { read_bytes: 4, write_bytes: 8 });
        assert_eq!(h.dram().a, TensorTraffic { read_bytes: 8, write_bytes: 0 });
        let s = h.level_stats()[0];
        assert_eq!((s.c.hits, s.c.misses, s.c.evictions, s.c.dirty_evictions), (0, 2, 1, 1));
        assert_eq!((s.a.misses, s.a.evictions), (2, 1));
        assert_eq!(s.c.writeback_bytes, 8);
        // A second flush finds nothing dirty.
        h.flush();
        assert_eq!(h.dram().c.write_bytes, 8);
    }

    #[test]
    fn dirty_ownership_moves_up_so_two_levels_write_once() {
        let g = grid();
        let mut h = Hierarchy::new(&g, &[LevelSpec::new("L2", 4), LevelSpec::new("L3", 16)]).unwrap();
        h.access(acc(Tensor::C, 0, 0, AccessKind::Write));
        h.access(acc(Tensor::A, 0, 0, AccessKind::Read)); // L2 evicts C to L3 (dirty there)
        h.access(acc(Tensor::C, 0, 0, AccessKind::Update)); // L3 hit; dirt moves to L2
        h.access(acc(Tensor::A, 0, 0, AccessKind::Read)); // L2 evicts C to L3 again
        h.flush();
        assert_eq!(h.dram().c, TensorTraffic { read_bytes: 0, write_bytes: 4 });
        assert_eq!(h.dram().a, TensorTraffic { read_bytes: 4, write_bytes: 0 });
        let [l2, l3] = h.level_stats()[..] else { panic!("two levels") };
        assert_eq!((l2.c.misses, l2.c.dirty_evictions), (2, 2));
        assert_eq!((l3.c.hits, l3.c.misses), (1, 0));
        assert_eq!((l3.a.hits, l3.a.misses), (1, 1));
        assert_eq!(l3.c.writeback_bytes, 4);
    }

    #[test]
    fn tiles_larger_than_a_level_stream_through_it() {
        let g = TileGrid::new(&Gemm::new(4, 4, 4, 1).unwrap(), &Tiling::square(4).unwrap()).unwrap();
        let mut h = Hierarchy::new(&g, &[LevelSpec::new("L2", 8), LevelSpec::new("L3", 64)]).unwrap();
        for _ in 0..3 {
            h.access(acc(Tensor::B, 0, 0, AccessKind::Read));
        }
        h.access(acc(Tensor::C, 0, 0, AccessKind::Write));
        h.access(acc(Tensor::C, 0, 0, AccessKind::Update));
        h.flush();
        // L3 holds the 16-byte tiles; L2 (8 bytes) is bypassed every time.
        assert_eq!(h.dram().b.read_bytes, 16);
        assert_eq!(h.dram().c, TensorTraffic { read_bytes: 0, write_bytes: 16 });
        let [l2, l3] = h.level_stats()[..] else { panic!("two levels") };
        assert_eq!((l2.b.misses, l2.b.bypasses, l2.b.hits), (3, 3, 0));
        assert_eq!((l3.b.hits, l3.b.misses), (2, 1));
        assert_eq!(l2.c.bypasses, 2);
    }

    #[test]
    fn zero_capacity_is_an_error() {
        let g = grid();
        assert!(matches!(Hierarchy::new(&g, &[LevelSpec::new("L2", 0)]), Err(ScheduleError::ZeroCapacity { .. })));
    }

    #[test]
    fn without_caches_everything_goes_to_dram() {
        let g = grid();
        let mut h = Hierarchy::new(&g, &[]).unwrap();
        h.access(acc(Tensor::C, 1, 1, AccessKind::Write));
        h.access(acc(Tensor::C, 1, 1, AccessKind::Update));
        h.access(acc(Tensor::B, 1, 0, AccessKind::Read));
        h.flush();
        assert_eq!(h.dram().c, TensorTraffic { read_bytes: 4, write_bytes: 8 });
        assert_eq!(h.dram().b.read_bytes, 4);
    }
}
