//! Where work runs: rectangles of worker cores and the grid they lie on.

use cqlab_abi::noc::{self, Coord, NocAddr};

/// A rectangle of worker cores, inclusive, in logical (col, row) coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreRange {
    pub start: (u8, u8),
    pub end: (u8, u8),
}

impl CoreRange {
    pub fn new(start: (u8, u8), end: (u8, u8)) -> Self {
        Self { start, end }
    }
    pub fn single(col: u8, row: u8) -> Self {
        Self { start: (col, row), end: (col, row) }
    }
    pub fn count(&self) -> u32 {
        (self.end.0 - self.start.0 + 1) as u32 * (self.end.1 - self.start.1 + 1) as u32
    }
    /// Its cores, row by row, as (col, row).
    pub fn cores(&self) -> impl Iterator<Item = (u8, u8)> {
        let (start, end) = (self.start, self.end);
        (start.1..=end.1).flat_map(move |row| (start.0..=end.0).map(move |col| (col, row)))
    }
    /// Whether it holds core `(col, row)`.
    pub fn contains(&self, (col, row): (u8, u8)) -> bool {
        (self.start.0..=self.end.0).contains(&col) && (self.start.1..=self.end.1).contains(&row)
    }
    /// Whether it shares a core with `other`.
    pub fn overlaps(&self, other: &CoreRange) -> bool {
        self.start.0 <= other.end.0
            && other.start.0 <= self.end.0
            && self.start.1 <= other.end.1
            && other.start.1 <= self.end.1
    }
    /// Whether it is non-empty and lies on a `cols` x `rows` grid.
    pub fn fits(&self, cols: u8, rows: u8) -> bool {
        self.start.0 <= self.end.0 && self.start.1 <= self.end.1 && self.end.0 < cols && self.end.1 < rows
    }
    /// L1 address `local` on every core of the range: one NOC write reaches them all.
    pub fn noc(&self, local: u32) -> NocAddr {
        let (s, e) = (noc::worker(self.start.0, self.start.1), noc::worker(self.end.0, self.end.1));
        if s == e {
            NocAddr::unicast(s, local as u64)
        } else {
            NocAddr::multicast(s, e, local as u64)
        }
    }
    /// Every worker of a `cols` x `rows` grid.
    pub fn grid(cols: u8, rows: u8) -> Self {
        Self::new((0, 0), (cols - 1, rows - 1))
    }
}

/// The workers of a `cols` x `rows` grid, row by row.
pub fn workers(cols: u8, rows: u8) -> impl Iterator<Item = Coord> {
    (0..rows).flat_map(move |r| (0..cols).map(move |c| noc::worker(c, r)))
}

/// Every core firmware runs on: each queue's prefetcher and dispatcher, then the workers.
pub fn all_cores(cqs: u8, cols: u8, rows: u8) -> impl Iterator<Item = Coord> {
    (0..cqs).flat_map(|q| [noc::prefetcher(q), noc::dispatcher(q)]).chain(workers(cols, rows))
}
