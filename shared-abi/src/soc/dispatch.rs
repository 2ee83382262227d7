//! Where the command-queue cores go and what is left for workers, as
//! tt-metal places its dispatch cores.
//!
//! tt-metal puts the dispatch cores of one or two command queues on the last
//! logical Tensix row on Wormhole (tt-metal
//! `tt_metal/core_descriptors/wormhole_b0_80_arch.yaml`, `dispatch_cores`
//! `[x, -1]`; `tt_metal/impl/dispatch/dispatch_core_common.cpp`
//! `get_default_axis` ROW) and on the last logical column on Blackhole
//! (`tt_metal/core_descriptors/blackhole_140_arch.yaml` `[-1, y]`, axis COL),
//! and the compute grid is what remains: n150 8x8, n300 8x7, a Blackhole with
//! two harvested columns 11x10. cqlab generalises this: each queue needs two
//! cores (prefetcher and dispatcher), taken in order along the last line
//! (row or column), then the line before it, and so on; the compute grid
//! shrinks by the lines taken. Within a line, cores go in increasing
//! logical order and queue `i` gets cores `2i` (prefetcher) and `2i + 1`
//! (dispatcher), as blackhole-py places its prefetcher at (14, 2) and its
//! dispatcher at (14, 3) (blackhole-py `device.py` `_PREFETCH_CORE`,
//! `_DISPATCH_CORE`).

use std::string::ToString;
use std::vec::Vec;

use crate::arch::{Arch, GridSize};
use crate::noc::Coord;

use super::layout::{ChipLayout, LayoutError};

/// The two cores of one command queue (NOC0 coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CqCores {
    pub prefetcher: Coord,
    pub dispatcher: Coord,
}

/// Command-queue cores and the compute grid left beside them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Logical size of the compute grid (columns x rows); logical (0, 0) is
    /// its first core.
    pub compute_grid: GridSize,
    /// The compute cores (NOC0), logical row by row.
    pub compute: Vec<Coord>,
    /// Per command queue, in queue order.
    pub cqs: Vec<CqCores>,
}

impl ChipLayout {
    /// Places `cqs` command queues. Zero queues leave the whole worker grid
    /// to compute (slow dispatch).
    pub fn placement(&self, cqs: usize) -> Result<Placement, LayoutError> {
        let grid = self.tensix_grid();
        // Dispatch lines are rows on Wormhole, columns on Blackhole.
        let (axis, lines, per_line) = match self.arch() {
            Arch::Wormhole => ("row", grid.y as usize, grid.x as usize),
            Arch::Blackhole => ("column", grid.x as usize, grid.y as usize),
        };
        let needed = (2 * cqs).div_ceil(per_line);
        if needed >= lines {
            return Err(LayoutError::TooManyCqs {
                board: self.board(),
                harvesting: self.harvesting().to_string(),
                cqs,
                needed,
                per_line,
                available: lines,
                axis,
                max: (lines - 1) * per_line / 2,
            });
        }
        let logical = |line: usize, i: usize| match self.arch() {
            Arch::Wormhole => Coord::new(i as u8, line as u8),
            Arch::Blackhole => Coord::new(line as u8, i as u8),
        };
        let dispatch: Vec<Coord> = (0..needed)
            .flat_map(|k| (0..per_line).map(move |i| (lines - 1 - k, i)))
            .filter_map(|(line, i)| self.tensix_at_logical(logical(line, i)))
            .collect();
        let cq_cores =
            (0..cqs).map(|q| CqCores { prefetcher: dispatch[2 * q], dispatcher: dispatch[2 * q + 1] }).collect();
        let compute_grid = match self.arch() {
            Arch::Wormhole => GridSize { x: grid.x, y: grid.y - needed as u8 },
            Arch::Blackhole => GridSize { x: grid.x - needed as u8, y: grid.y },
        };
        let compute = (0..compute_grid.y)
            .flat_map(|y| (0..compute_grid.x).map(move |x| Coord::new(x, y)))
            .filter_map(|l| self.tensix_at_logical(l))
            .collect();
        Ok(Placement { compute_grid, compute, cqs: cq_cores })
    }
}
