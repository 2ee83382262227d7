//! Paths on the two NOC tori and multicast rectangles.
//!
//! Each NOC is a one-way torus (tt-isa `WormholeB0/NoC/Coordinates.md`,
//! `BlackholeA0/NoC/Coordinates.md`; NOC_NODE_ID bit 28): NOC0 routes X first
//! then Y, moving +x (right) and +y (down); NOC1 routes Y first then X,
//! moving -x (left) and -y (up). Both wrap at the grid edge. Paths here are
//! in NOC0 coordinates whichever NOC carries them.

use std::vec::Vec;

use crate::arch::{GridSize, Noc};
use crate::noc::Coord;

use super::layout::ChipLayout;
use super::tile::TileKind;

/// The tiles a unicast packet passes, source and destination included, in
/// NOC0 coordinates. Consecutive tiles are joined by one link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub noc: Noc,
    pub tiles: Vec<Coord>,
}

impl Route {
    /// Router-to-router hops (links traversed).
    pub fn hops(&self) -> u32 {
        self.tiles.len().saturating_sub(1) as u32
    }

    /// The links in order, each `(from, to)`.
    pub fn links(&self) -> impl Iterator<Item = (Coord, Coord)> + '_ {
        self.tiles.windows(2).map(|w| (w[0], w[1]))
    }
}

/// Steps from `a` to `b` along one axis of size `n` moving +1 (`forward`)
/// or -1, wrapping.
fn steps(a: u8, b: u8, n: u8, forward: bool) -> u8 {
    let (a, b, n) = (a as u16, b as u16, n as u16);
    (if forward { (b + n - a) % n } else { (a + n - b) % n }) as u8
}

/// The next router coordinate after `v` on an axis of size `n`, moving +1
/// (`forward`, NOC0) or -1 (NOC1), wrapping: one hop of [`path_links`].
#[inline]
pub fn torus_step(v: u8, n: u8, forward: bool) -> u8 {
    // Compares, not `%`: the simulator walks a path per packet.
    if forward {
        if v + 1 == n {
            0
        } else {
            v + 1
        }
    } else if v == 0 {
        n - 1
    } else {
        v - 1
    }
}

/// Hops from `from` to `to` on `noc` (NOC0 coordinates).
pub fn hop_count(grid: GridSize, noc: Noc, from: Coord, to: Coord) -> u32 {
    let forward = noc == Noc::Noc0;
    steps(from.x, to.x, grid.x, forward) as u32 + steps(from.y, to.y, grid.y, forward) as u32
}

/// The path from `from` to `to` on `noc` (NOC0 coordinates).
pub fn route(grid: GridSize, noc: Noc, from: Coord, to: Coord) -> Route {
    let mut tiles = Vec::with_capacity(hop_count(grid, noc, from, to) as usize + 1);
    tiles.push(from);
    tiles.extend(path_links(grid, noc, from, to).map(|(_, next)| next));
    Route { noc, tiles }
}

/// The links of [`route`]'s path in order, each `(from, to)`, without
/// building it (the simulator books links per packet).
pub fn path_links(grid: GridSize, noc: Noc, from: Coord, to: Coord) -> impl Iterator<Item = (Coord, Coord)> {
    let forward = noc == Noc::Noc0;
    let mut c = from;
    core::iter::from_fn(move || {
        let here = c;
        let (x_left, y_left) = (c.x != to.x, c.y != to.y);
        // NOC0 walks x then y; NOC1 y then x.
        if x_left && (forward || !y_left) {
            c.x = torus_step(c.x, grid.x, forward);
        } else if y_left {
            c.y = torus_step(c.y, grid.y, forward);
        } else {
            return None;
        }
        Some((here, c))
    })
}

/// Whether `c` lies in the multicast rectangle from `start` to `end`,
/// inclusive; on an axis where start > end the range wraps around the
/// torus (tt-isa `NoC/MemoryMap.md`, NOC_TARG_ADDR multicast). All three in
/// the same coordinate system.
pub fn in_rect(start: Coord, end: Coord, c: Coord) -> bool {
    let within = |s: u8, e: u8, v: u8| if s <= e { s <= v && v <= e } else { v >= s || v <= e };
    within(start.x, end.x, c.x) && within(start.y, end.y, c.y)
}

impl ChipLayout {
    /// The path of a unicast packet on `noc`, NOC0 coordinates in and out.
    pub fn route(&self, noc: Noc, from: Coord, to: Coord) -> Route {
        route(self.grid(), noc, from, to)
    }

    /// Hops of that path.
    pub fn hop_count(&self, noc: Noc, from: Coord, to: Coord) -> u32 {
        hop_count(self.grid(), noc, from, to)
    }

    /// The tiles (NOC0) that receive a multicast on `noc` to the rectangle
    /// `start`..=`end` given in `noc`'s own coordinates: only unharvested
    /// Tensix tiles receive (firmware opts every other tile out:
    /// tt-isa `NoC/MemoryMap.md`, ROUTER_CFG broadcast masks). Whether the
    /// sender receives its own multicast (`NOC_CMD_BRCST_SRC_INCLUDE`) is
    /// the caller's to apply.
    pub fn multicast_receivers(&self, noc: Noc, start: Coord, end: Coord) -> Vec<Coord> {
        self.tiles()
            .iter()
            .filter(|t| t.kind == TileKind::Tensix)
            .filter(|t| {
                let c = match noc {
                    Noc::Noc0 => t.noc0,
                    Noc::Noc1 => t.noc1,
                };
                in_rect(start, end, c)
            })
            .map(|t| t.noc0)
            .collect()
    }
}
