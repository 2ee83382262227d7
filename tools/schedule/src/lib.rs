//! GEMM dataflow schedules and the DRAM traffic they cause.
//!
//! For `C[M x N] = A[M x K] x B[K x N]` cut into tiles, this crate walks the tile access
//! stream of a loop order ([`Strategy`]: weight-, input- or output-stationary) through a
//! stack of LRU cache levels (for example an L2 and an L3) and counts, per tensor, the bytes
//! read from and written to DRAM, each level's hits, misses and evictions, and the
//! *overfetch*: bytes moved divided by the minimum (each input read once, C written once).
//!
//! ```
//! use cqlab_schedule::{simulate, Gemm, LevelSpec, Strategy, Tiling};
//! let gemm = Gemm::new(1024, 512, 256, 4)?;
//! let report = simulate(&gemm, &Tiling::default(), Strategy::WeightStationary, &[LevelSpec::new("L3", 1 << 20)])?;
//! assert!(report.overfetch.b >= 1.0);
//! # Ok::<(), cqlab_schedule::ScheduleError>(())
//! ```
//!
//! # Accounting
//!
//! The figures are meant to be compared with DRAM counters, so nothing is left out:
//!
//! - **Partial sums count.** With k outermost, a C tile is incomplete between k steps. If it
//!   leaves the last cache level it is written to DRAM, and read back when the next k step
//!   needs it; both transfers are counted. The final result is written once more (or for
//!   the first time) when the caches are flushed at the end.
//! - **Tiles are keyed by `(tensor, tile row, tile column)`**, mapped to a dense index per
//!   tensor, so two different tiles can never be mistaken for one another.
//! - **Big tensors stream.** Nothing assumes a tensor fits a level: tiles enter and leave by
//!   LRU; a single tile larger than a level bypasses it.
//! - **C starts from zero** (`C = A x B`, no `beta * C` term): the first k step writes a C
//!   tile whole without reading it. Inputs are never written.
//! - **Edge tiles carry their true size** when a dimension is not a multiple of the tile.
//! - **Stationary operands are requested once** per middle-loop iteration (the core keeps
//!   them in its L1); see [`for_each_access`] and [`Strategy`] for the exact streams.
//!
//! A public reference simulator of the same question (an L3 overfetch analysis in an
//! open-source KPU simulator) takes two shortcuts that this crate does not:
//!
//! 1. It loads each C tile once per `(i, j)` and never again, and counts exactly one write
//!    of C, whatever the cache size. Under k-outer orders (WS, IS) every k step touches every
//!    C tile, so partial sums that do not fit the cache really go to DRAM and come back;
//!    ignoring that hides the dominant cost of those orders.
//! 2. It keys cached regions by a byte offset computed from tile indices and tile sizes
//!    alone, without the tensor's row pitch, so distinct tiles (for example `A[i, k]` and
//!    `A[i + 1, k']` for suitable `k'`) get the same key. Aliased tiles "hit" though they
//!    were never loaded, which is how it can report an input overfetch below 1x, something
//!    impossible when every byte of an input has to be read at least once.
//!
//! It also sizes edge tiles as full tiles. Our figures are therefore larger for WS and IS
//! (partial sums) and never below 1x.
//!
//! # Comparing with a measurement
//!
//! [`simulate`] gives the predicted DRAM bytes per tensor ([`Report::dram`]);
//! [`Report::compare`] sets them against measured figures (for example from the device
//! simulator running the same schedule via [`for_each_access`]) and gives relative errors.

mod error;
mod hierarchy;
mod lru;
mod problem;
mod report;
mod size;
mod strategy;

pub use error::{Result, ScheduleError};
pub use hierarchy::{Hierarchy, LevelSpec, LevelStats, TensorTraffic};
pub use lru::{Evicted, Lru};
pub use problem::{Gemm, PerTensor, Tensor, TileGrid, Tiling, MAX_STEPS, MAX_TILES};
pub use report::{Comparison, Deviation, LevelReport, Report};
pub use size::{format_gb, format_size, parse_size, parse_size_list};
pub use strategy::{for_each_access, Access, AccessKind, Strategy};

/// Simulate one strategy: walk its tile stream through `levels` (nearest the core first),
/// flush, and report DRAM traffic and per-level statistics.
pub fn simulate(gemm: &Gemm, tiling: &Tiling, strategy: Strategy, levels: &[LevelSpec]) -> Result<Report> {
    let grid = TileGrid::new(gemm, tiling)?;
    let mut caches = Hierarchy::new(&grid, levels)?;
    for_each_access(strategy, &grid, |a| caches.access(a));
    caches.flush();
    let level_reports =
        levels.iter().zip(caches.level_stats()).map(|(spec, stats)| LevelReport::new(spec, stats)).collect();
    Ok(Report::new(strategy, *gemm, *tiling, level_reports, caches.dram()))
}

/// Simulate every strategy, in [`Strategy::ALL`] order.
pub fn simulate_all(gemm: &Gemm, tiling: &Tiling, levels: &[LevelSpec]) -> Result<Vec<Report>> {
    Strategy::ALL.iter().map(|&s| simulate(gemm, tiling, s, levels)).collect()
}

/// The report with the least total DRAM traffic; ties go to the earlier one.
pub fn least_traffic(reports: &[Report]) -> Option<&Report> {
    reports.iter().fold(None, |best: Option<&Report>, r| match best {
        Some(b) if b.total_bytes <= r.total_bytes => Some(b),
        _ => Some(r),
    })
}

/// The `auto` strategy: simulate all and keep the one with the least total DRAM traffic.
pub fn auto(gemm: &Gemm, tiling: &Tiling, levels: &[LevelSpec]) -> Result<Report> {
    let mut all = simulate_all(gemm, tiling, levels)?;
    let best = least_traffic(&all).map(|b| b.strategy);
    let idx = all.iter().position(|r| Some(r.strategy) == best).unwrap_or(0);
    Ok(all.swap_remove(idx))
}
