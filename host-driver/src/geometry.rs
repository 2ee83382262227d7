//! Where work runs: rectangles of worker cores ([`CoreRange`], logical
//! coordinates) and the chip they lie on ([`Topology`]: the board and its
//! harvesting, where the command queues sit, the compute grid and how its
//! logical coordinates become the translated coordinates requests carry).
//!
//! Logical coordinates are tt-metal's: `(col, row)` of the compute grid,
//! harvested lines and the command-queue lines left out, so `(0, 0)` is
//! the first compute core whatever the chip. Every coordinate that goes
//! into a command, a `CqConfig`, a launch message or a BAR access is a
//! translated one, from [`Topology`] (`cqlab_abi::noc` module docs).

use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::{Arch, ArchParams};
use cqlab_abi::noc::{Coord, NocAddr, MAX_CQS};
use cqlab_abi::noc_map::{NocMap, MAX_GRID_COLS, MAX_GRID_ROWS};
use cqlab_abi::soc::{Board, ChipLayout, Harvesting, LayoutError, TileKind};

/// A rectangle of worker cores, inclusive, in logical (col, row) coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// Every worker of a `cols` x `rows` grid.
    pub fn grid(cols: u8, rows: u8) -> Self {
        Self::new((0, 0), (cols - 1, rows - 1))
    }
}

impl std::fmt::Display for CoreRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.start == self.end {
            write!(f, "({},{})", self.start.0, self.start.1)
        } else {
            write!(f, "({},{})..=({},{})", self.start.0, self.start.1, self.end.0, self.end.1)
        }
    }
}

/// One RISC-V core: a Tensix tile (translated coordinates) and which of
/// its five cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CoreId {
    pub tile: Coord,
    pub processor: Processor,
}

impl CoreId {
    /// BRISC of `tile`: the core that runs a tile's CQ or worker loop.
    pub fn brisc(tile: Coord) -> Self {
        Self { tile, processor: Processor::Brisc }
    }
}

impl std::fmt::Display for CoreId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.tile, self.processor.name())
    }
}

/// What a tile is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Prefetcher {
        cq: u8,
    },
    Dispatcher {
        cq: u8,
    },
    /// A compute tile at logical `(col, row)`.
    Worker {
        col: u8,
        row: u8,
    },
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Prefetcher { cq } => write!(f, "CQ{cq} prefetcher"),
            Role::Dispatcher { cq } => write!(f, "CQ{cq} dispatcher"),
            Role::Worker { col, row } => write!(f, "worker ({col},{row})"),
        }
    }
}

/// Why a chip cannot be set up as asked, or a core is not a compute core.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(
        "{board} ({harvesting}): the compute grid is {cols}x{rows} logical cores ({why}); {what} {range} lies \
         outside it"
    )]
    OffGrid { board: Board, harvesting: String, cols: u8, rows: u8, why: String, what: &'static str, range: CoreRange },
    #[error("{board} ({harvesting}): NOC0 tile {tile} is {is}, not a compute core")]
    NotCompute { board: Board, harvesting: String, tile: Coord, is: String },
    #[error(
        "{board}: a compute grid of {cols}x{rows} does not fit the NOC map's {max_cols}x{max_rows} (harvest more lines)"
    )]
    GridTooLarge { board: Board, cols: u8, rows: u8, max_cols: usize, max_rows: usize },
}

/// The chip as the driver drives it: its layout (board and harvesting), the
/// command-queue cores placed as tt-metal places them
/// (`ChipLayout::placement`), the compute grid beside them and the
/// `NocMap` every tile that runs firmware gets.
#[derive(Clone, Debug)]
pub struct Topology {
    layout: ChipLayout,
    /// Translated x of each logical column, y of each logical row.
    xs: Vec<u8>,
    ys: Vec<u8>,
    /// Per queue: (prefetcher, dispatcher), translated.
    cqs: Vec<(Coord, Coord)>,
    noc_map: NocMap,
    /// NOC0 address of each DRAM bank's byte 0 (the worker endpoint).
    banks: Vec<NocAddr>,
}

impl Topology {
    /// `layout` with `num_cqs` command queues placed (at least 1: slow
    /// dispatch places them too and counts completions on a dispatcher's
    /// semaphore).
    pub fn new(layout: ChipLayout, num_cqs: u8) -> Result<Self, TopologyError> {
        let placement = layout.placement(num_cqs.clamp(1, MAX_CQS) as usize)?;
        let g = placement.compute_grid;
        if g.x as usize > MAX_GRID_COLS || g.y as usize > MAX_GRID_ROWS {
            return Err(TopologyError::GridTooLarge {
                board: layout.board(),
                cols: g.x,
                rows: g.y,
                max_cols: MAX_GRID_COLS,
                max_rows: MAX_GRID_ROWS,
            });
        }
        let noc_map = layout.noc_map(&placement)?;
        let t = |c: Coord| layout.translated(c).expect("a placed tile is on the chip");
        let cqs = placement.cqs.iter().map(|q| (t(q.prefetcher), t(q.dispatcher))).collect();
        let noc0 = cqlab_abi::arch::Noc::Noc0.index() as usize;
        let banks = (0..noc_map.dram_banks).map(|b| noc_map.dram_addr(b, noc0, 0)).collect();
        Ok(Self {
            xs: noc_map.grid.x[..g.x as usize].to_vec(),
            ys: noc_map.grid.y[..g.y as usize].to_vec(),
            cqs,
            noc_map,
            banks,
            layout,
        })
    }

    /// `board` with `harvesting` (the board's usual one when `None`) and
    /// `num_cqs` queues.
    pub fn for_board(board: Board, harvesting: Option<Harvesting>, num_cqs: u8) -> Result<Self, TopologyError> {
        let h = harvesting.unwrap_or_else(|| board.default_harvesting());
        Self::new(ChipLayout::new(board, h)?, num_cqs)
    }

    pub fn layout(&self) -> &ChipLayout {
        &self.layout
    }
    pub fn board(&self) -> Board {
        self.layout.board()
    }
    pub fn arch(&self) -> Arch {
        self.layout.arch()
    }
    pub fn params(&self) -> &'static ArchParams {
        self.layout.params()
    }
    pub fn harvesting(&self) -> &Harvesting {
        self.layout.harvesting()
    }
    pub fn num_cqs(&self) -> u8 {
        self.cqs.len() as u8
    }
    /// Columns of the compute grid.
    pub fn cols(&self) -> u8 {
        self.xs.len() as u8
    }
    /// Rows of the compute grid.
    pub fn rows(&self) -> u8 {
        self.ys.len() as u8
    }
    /// Compute cores.
    pub fn worker_count(&self) -> u32 {
        self.cols() as u32 * self.rows() as u32
    }
    /// Every compute core as one range.
    pub fn grid(&self) -> CoreRange {
        CoreRange::grid(self.cols(), self.rows())
    }

    /// Translated coordinates of logical core `(col, row)`.
    pub fn worker(&self, col: u8, row: u8) -> Option<Coord> {
        Some(Coord::new(*self.xs.get(col as usize)?, *self.ys.get(row as usize)?))
    }

    /// Every compute core (translated), logical row by row.
    pub fn workers(&self) -> impl Iterator<Item = Coord> + '_ {
        self.ys.iter().flat_map(move |&y| self.xs.iter().map(move |&x| Coord::new(x, y)))
    }

    /// Logical `(col, row)` of translated coordinates `c`, if a compute core.
    pub fn logical(&self, c: Coord) -> Option<(u8, u8)> {
        let col = self.xs.iter().position(|&x| x == c.x)?;
        let row = self.ys.iter().position(|&y| y == c.y)?;
        Some((col as u8, row as u8))
    }

    /// Queue `q`'s prefetcher (translated).
    pub fn prefetcher(&self, q: u8) -> Coord {
        self.cqs[q as usize].0
    }
    /// Queue `q`'s dispatcher (translated).
    pub fn dispatcher(&self, q: u8) -> Coord {
        self.cqs[q as usize].1
    }
    /// The queue whose prefetcher (`true`) or dispatcher (`false`) is at `c`.
    pub fn cq_role(&self, c: Coord) -> Option<(u8, bool)> {
        self.cqs.iter().enumerate().find_map(|(q, &(p, d))| match c {
            _ if c == p => Some((q as u8, true)),
            _ if c == d => Some((q as u8, false)),
            _ => None,
        })
    }
    /// What tile `c` (translated) runs: a queue's prefetcher or dispatcher,
    /// or a compute core; `None` for a tile that runs no firmware.
    pub fn role(&self, c: Coord) -> Option<Role> {
        match (self.cq_role(c), self.logical(c)) {
            (Some((cq, true)), _) => Some(Role::Prefetcher { cq }),
            (Some((cq, false)), _) => Some(Role::Dispatcher { cq }),
            (None, Some((col, row))) => Some(Role::Worker { col, row }),
            (None, None) => None,
        }
    }
    /// Each queue's prefetcher and dispatcher, queue by queue.
    pub fn cq_cores(&self) -> impl Iterator<Item = Coord> + '_ {
        self.cqs.iter().flat_map(|&(p, d)| [p, d])
    }
    /// Every tile firmware runs on: the command-queue cores, then the workers.
    pub fn all_cores(&self) -> impl Iterator<Item = Coord> + '_ {
        self.cq_cores().chain(self.workers())
    }

    /// Local address `local` on every core of `range` (translated corners
    /// of the compute grid): one NOC write reaches them all. The range must
    /// lie on the grid ([`Topology::check_range`]).
    pub fn range_noc(&self, range: &CoreRange, local: u32) -> NocAddr {
        let at = |(c, r): (u8, u8)| self.worker(c, r).expect("a range checked against the grid");
        let (s, e) = (at(range.start), at(range.end));
        if s == e {
            NocAddr::unicast(s, local as u64)
        } else {
            NocAddr::multicast(s, e, local as u64)
        }
    }

    /// Checks that `range` (what it is for: `what`) is non-empty and on the
    /// compute grid; the refusal says why the grid is the size it is.
    pub fn check_range(&self, what: &'static str, range: &CoreRange) -> Result<(), TopologyError> {
        if range.fits(self.cols(), self.rows()) {
            return Ok(());
        }
        Err(TopologyError::OffGrid {
            board: self.board(),
            harvesting: self.harvesting().to_string(),
            cols: self.cols(),
            rows: self.rows(),
            why: self.grid_reason(),
            what,
            range: *range,
        })
    }

    /// Why the compute grid has the size it has: the chip's Tensix grid,
    /// its harvested lines, the command-queue lines.
    fn grid_reason(&self) -> String {
        let t = self.layout.tensix_grid();
        let h = self.harvesting();
        let (axis, harvested) = match self.arch() {
            Arch::Wormhole => ("row", h.tensix_rows()),
            Arch::Blackhole => ("column", h.tensix_cols()),
        };
        let lines = |v: &[u8]| v.iter().map(u8::to_string).collect::<Vec<_>>().join(", ");
        let dispatch = match self.arch() {
            Arch::Wormhole => t.y - self.rows(),
            Arch::Blackhole => t.x - self.cols(),
        };
        let mut why = format!("{}x{} unharvested Tensix", t.x, t.y);
        if !harvested.is_empty() {
            why.push_str(&format!(", harvested NOC0 {axis}s {}", lines(harvested)));
        }
        why + &format!(", {dispatch} {axis}(s) of command-queue cores")
    }

    /// Logical `(col, row)` of the tile at NOC0 `tile` (as the SoC
    /// descriptor and `--harvest` name tiles), or a clear refusal: a
    /// harvested Tensix, a command-queue core, DRAM, ...
    pub fn logical_of_noc0(&self, tile: Coord) -> Result<(u8, u8), TopologyError> {
        let refuse = |is: String| TopologyError::NotCompute {
            board: self.board(),
            harvesting: self.harvesting().to_string(),
            tile,
            is,
        };
        let t = self.layout.tile(tile).ok_or_else(|| {
            let g = self.layout.grid();
            refuse(format!("outside the {}x{} grid", g.x, g.y))
        })?;
        if let Some(l) = self.logical(t.translated).filter(|_| t.kind == TileKind::Tensix) {
            return Ok(l);
        }
        Err(refuse(match self.cq_role(t.translated).filter(|_| t.kind == TileKind::Tensix) {
            Some((q, true)) => format!("the CQ{q} prefetcher"),
            Some((q, false)) => format!("the CQ{q} dispatcher"),
            None => t.kind.describe(),
        }))
    }

    /// The NOC map of every tile that runs firmware.
    pub fn noc_map(&self) -> &NocMap {
        &self.noc_map
    }

    /// DRAM banks (tt-metal's numbering).
    pub fn dram_banks(&self) -> u32 {
        self.banks.len() as u32
    }

    /// Bytes each DRAM bank holds (the layout's banks, from the ABI's
    /// descriptors: 1 GiB on a Wormhole, whose channels hold two banks each,
    /// the second at 1 GiB; 4 GiB less 16 MiB on a Blackhole). Past it a
    /// bank's offset reaches the next bank of its channel, or nothing.
    pub fn dram_bank_bytes(&self) -> u64 {
        self.layout.dram_banks().iter().map(|b| b.size).min().unwrap_or(0)
    }

    /// NOC0 address of byte `offset` of DRAM bank `bank` (the bank's view
    /// offset in its channel included).
    pub fn dram_addr(&self, bank: u32, offset: u64) -> NocAddr {
        self.banks[bank as usize].offset(offset)
    }

    /// The NOC address of host-memory offset 0 (`ChipLayout::host_mem_noc_base`).
    pub fn host_mem_base(&self) -> u64 {
        self.layout.host_mem_noc_base()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logical_cores_map_to_translated_ones_and_skip_what_is_not_compute() {
        // n150: row 8 harvested, the last row (y 11) holds two queues.
        let t = Topology::for_board(Board::WormholeN150, None, 2).unwrap();
        assert_eq!((t.cols(), t.rows()), (8, 8));
        assert_eq!(t.worker(0, 0), Some(Coord::new(18, 18)));
        assert_eq!(t.worker(7, 7), Some(Coord::new(25, 25)));
        assert_eq!(t.logical(Coord::new(25, 25)), Some((7, 7)));
        assert_eq!(t.workers().count(), 64);
        assert!(t.cq_cores().all(|c| t.logical(c).is_none()));
        assert_eq!(t.range_noc(&t.grid(), 0x100), NocAddr::multicast(Coord::new(18, 18), Coord::new(25, 25), 0x100));
        // p150a: columns 8 and 9 are not Tensix; the last logical column
        // holds the queues.
        let t = Topology::for_board(Board::BlackholeP150a, None, 1).unwrap();
        assert_eq!((t.cols(), t.rows()), (11, 10));
        assert_eq!(t.worker(6, 0), Some(Coord::new(7, 2)));
        assert_eq!(t.worker(7, 0), Some(Coord::new(10, 2)));
        assert_eq!(t.logical(Coord::new(8, 2)), None);
        assert_eq!(t.dram_banks(), 8);
    }

    #[test]
    fn a_harvested_tile_or_an_off_grid_range_is_refused_naming_why() {
        let t = Topology::for_board(Board::WormholeN150, None, 2).unwrap();
        // NOC0 row 8 is harvested on an n150.
        let e = t.logical_of_noc0(Coord::new(1, 8)).unwrap_err().to_string();
        assert!(e.contains("harvested") && e.contains("rows=8") && e.contains("(1,8)"), "{e}");
        assert_eq!(t.logical_of_noc0(Coord::new(1, 1)), Ok((0, 0)));
        let e = t.logical_of_noc0(Coord::new(1, 11)).unwrap_err().to_string();
        assert!(e.contains("CQ0 prefetcher"), "{e}");
        let e = t.logical_of_noc0(Coord::new(0, 0)).unwrap_err().to_string();
        assert!(e.contains("DRAM"), "{e}");
        let e = t.check_range("kernel range", &CoreRange::new((0, 0), (7, 8))).unwrap_err().to_string();
        assert!(e.contains("8x8") && e.contains("harvested NOC0 rows 8") && e.contains("command-queue"), "{e}");
        assert!(t.check_range("kernel range", &t.grid()).is_ok());
        // Three Tensix rows left: two for compute at most, so 16 queues
        // (32 cores, four rows) do not fit.
        let small = "rows=1,2,3,4,5,7,8".parse().ok();
        let e = Topology::for_board(Board::WormholeN150, small, 16).unwrap_err().to_string();
        assert!(e.contains("16 command queues"), "{e}");
    }
}
