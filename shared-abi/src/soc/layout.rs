//! A board's chip as it is at run time: every tile with its kind in NOC0,
//! NOC1 and translated coordinates, harvesting applied.

use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::vec::Vec;

use crate::arch::tensix::Processor;
use crate::arch::{noc_addr, Arch, ArchParams, GridSize, Noc};
use crate::noc::Coord;

use super::board::Board;
use super::descriptor::SocDescriptor;
use super::dram::{self, DramBank};
use super::error::HarvestError;
use super::harvest::Harvesting;
use super::tile::{HarvestedUnit, TileKind};
use super::translate;

/// A chip layout, placement or lookup that cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("{board}: {error}")]
    Harvest { board: Board, error: HarvestError },
    #[error(
        "{board} ({harvesting}): {cqs} command queues need {needed} dispatch {axis}s of {per_line} cores \
         (a prefetcher and a dispatcher per queue), but only {available} {axis}s exist and one must stay for \
         workers; at most {max} command queues fit"
    )]
    TooManyCqs {
        board: Board,
        harvesting: String,
        cqs: usize,
        needed: usize,
        per_line: usize,
        available: usize,
        axis: &'static str,
        max: usize,
    },
    #[error("{board}: tile {coord} is outside the {width}x{height} grid")]
    OutOfGrid { board: Board, coord: Coord, width: u8, height: u8 },
    #[error("{board} ({harvesting}): tile {coord} is {what}, not a worker Tensix")]
    NotAWorker { board: Board, harvesting: String, coord: Coord, what: String },
    #[error("{board}: {found} {what} do not fit the NOC map, which holds at most {max}")]
    NocMapCapacity { board: Board, what: &'static str, found: usize, max: usize },
}

/// One tile of the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tile {
    pub noc0: Coord,
    pub noc1: Coord,
    /// Its coordinates with NOC translation on (NOC0 view).
    pub translated: Coord,
    pub kind: TileKind,
    /// Logical (x, y) in the worker grid, for unharvested Tensix tiles.
    pub logical: Option<Coord>,
}

/// A board's chip with its harvesting applied.
#[derive(Clone, Debug)]
pub struct ChipLayout {
    board: Board,
    params: &'static ArchParams,
    desc: &'static SocDescriptor,
    harvesting: Harvesting,
    /// NOC0 row-major.
    tiles: Vec<Tile>,
    /// Logical column -> NOC0 x, logical row -> NOC0 y.
    logical_cols: Vec<u8>,
    logical_rows: Vec<u8>,
    from_translated: BTreeMap<Coord, Coord>,
    /// Wormhole's hardware translation tables (NOC0 terms).
    wh_tables: Option<([u8; 32], [u8; 32])>,
    dram_banks: Vec<DramBank>,
}

impl ChipLayout {
    /// `board`'s chip with `harvesting` (see [`Board::default_harvesting`]).
    pub fn new(board: Board, harvesting: Harvesting) -> Result<ChipLayout, LayoutError> {
        let desc = SocDescriptor::builtin(board.arch());
        harvesting.validate(desc).map_err(|error| LayoutError::Harvest { board, error })?;
        let kinds = kinds(desc, &harvesting, board.pcie_tile());
        let translated = translate::translated(desc, &harvesting, &kinds);
        let worker = |c: &Coord| kinds.get(c) == Some(&TileKind::Tensix);
        let mut logical_cols: Vec<u8> = desc.tensix.iter().filter(|c| worker(c)).map(|c| c.x).collect();
        let mut logical_rows: Vec<u8> = desc.tensix.iter().filter(|c| worker(c)).map(|c| c.y).collect();
        for v in [&mut logical_cols, &mut logical_rows] {
            v.sort_unstable();
            v.dedup();
        }
        let grid = desc.grid;
        let mut tiles = Vec::with_capacity(grid.x as usize * grid.y as usize);
        for y in 0..grid.y {
            for x in 0..grid.x {
                let noc0 = Coord::new(x, y);
                let kind = kinds[&noc0];
                let logical = (kind == TileKind::Tensix).then(|| {
                    let lx = logical_cols.iter().position(|&c| c == x).unwrap_or_default();
                    let ly = logical_rows.iter().position(|&r| r == y).unwrap_or_default();
                    Coord::new(lx as u8, ly as u8)
                });
                let noc1 = Coord::new(desc.noc0_x_to_noc1_x[x as usize], desc.noc0_y_to_noc1_y[y as usize]);
                tiles.push(Tile { noc0, noc1, translated: translated[&noc0], kind, logical });
            }
        }
        let from_translated = tiles.iter().map(|t| (t.translated, t.noc0)).collect();
        Ok(ChipLayout {
            board,
            params: board.arch().params(),
            desc,
            dram_banks: dram::banks(desc, &harvesting),
            tiles,
            logical_cols,
            logical_rows,
            from_translated,
            wh_tables: (board.arch() == Arch::Wormhole).then(|| translate::wormhole_tables(desc, &harvesting)),
            harvesting,
        })
    }

    /// `board`'s chip with its usual harvesting.
    pub fn for_board(board: Board) -> Result<ChipLayout, LayoutError> {
        ChipLayout::new(board, board.default_harvesting())
    }

    pub fn board(&self) -> Board {
        self.board
    }

    pub fn arch(&self) -> Arch {
        self.params.arch
    }

    pub fn params(&self) -> &'static ArchParams {
        self.params
    }

    pub fn descriptor(&self) -> &'static SocDescriptor {
        self.desc
    }

    pub fn harvesting(&self) -> &Harvesting {
        &self.harvesting
    }

    pub fn grid(&self) -> GridSize {
        self.desc.grid
    }

    /// Every tile, NOC0 row by row.
    pub fn tiles(&self) -> &[Tile] {
        &self.tiles
    }

    /// The tile at NOC0 `c`.
    pub fn tile(&self, c: Coord) -> Option<&Tile> {
        let g = self.grid();
        (c.x < g.x && c.y < g.y).then(|| &self.tiles[c.y as usize * g.x as usize + c.x as usize])
    }

    /// The tile at `c` in `noc`'s own coordinates.
    pub fn tile_on(&self, noc: Noc, c: Coord) -> Option<&Tile> {
        self.tile(self.to_noc0(noc, c)?)
    }

    /// `c` (NOC0) in `noc`'s coordinates: NOC1 = (W-1-x, H-1-y), from the
    /// descriptor's tables.
    pub fn from_noc0(&self, noc: Noc, c: Coord) -> Option<Coord> {
        let t = self.tile(c)?;
        Some(match noc {
            Noc::Noc0 => t.noc0,
            Noc::Noc1 => t.noc1,
        })
    }

    /// `c` in `noc`'s coordinates back to NOC0.
    pub fn to_noc0(&self, noc: Noc, c: Coord) -> Option<Coord> {
        match noc {
            Noc::Noc0 => self.tile(c).map(|t| t.noc0),
            Noc::Noc1 => {
                let x = self.desc.noc0_x_to_noc1_x.iter().position(|&v| v == c.x)?;
                let y = self.desc.noc0_y_to_noc1_y.iter().position(|&v| v == c.y)?;
                Some(Coord::new(x as u8, y as u8))
            }
        }
    }

    /// The translated coordinates of NOC0 `c`.
    pub fn translated(&self, c: Coord) -> Option<Coord> {
        self.tile(c).map(|t| t.translated)
    }

    /// The NOC0 tile a packet addressed to translated `t` reaches.
    ///
    /// Wormhole: the hardware's per-axis tables ([`Self::translation_tables`]),
    /// so identity coordinates below 16 work too. Blackhole: the translated
    /// coordinates this layout gives every tile, plus the coordinates the
    /// hardware leaves untranslated: rows 0 and 1 (tt-isa
    /// `BlackholeA0/NoC/Coordinates.md`) and the DRAM columns' NOC0
    /// coordinates (blackhole-py `dram.py` addresses DRAM by NOC0 x = 0 / 9
    /// with translation on). Other Blackhole coordinates give `None`.
    pub fn from_translated(&self, t: Coord) -> Option<Coord> {
        if let Some((xs, ys)) = &self.wh_tables {
            let c = Coord::new(*xs.get(t.x as usize)?, *ys.get(t.y as usize)?);
            return self.tile(c).map(|tile| tile.noc0);
        }
        self.from_translated.get(&t).copied().or_else(|| {
            let tile = self.tile(t)?;
            let dram = matches!(tile.kind, TileKind::Dram { .. } | TileKind::Harvested(HarvestedUnit::Dram { .. }));
            (t.y <= 1 || dram).then_some(t)
        })
    }

    /// Wormhole's X and Y translation tables as firmware programs them
    /// (`NOC_X_ID_TRANSLATE_TABLE_*`, `NOC_Y_ID_TRANSLATE_TABLE_*`), in NOC0
    /// terms: entry `t` is the NOC0 x (or y) of translated `t`. `None` on
    /// Blackhole, whose translation cqlab describes per tile only.
    pub fn translation_tables(&self) -> Option<([u8; 32], [u8; 32])> {
        self.wh_tables
    }

    /// Size of the logical worker grid (unharvested Tensix), columns x rows.
    pub fn tensix_grid(&self) -> GridSize {
        GridSize { x: self.logical_cols.len() as u8, y: self.logical_rows.len() as u8 }
    }

    /// NOC0 coordinates of logical worker (`l.x`, `l.y`).
    pub fn tensix_at_logical(&self, l: Coord) -> Option<Coord> {
        Some(Coord::new(*self.logical_cols.get(l.x as usize)?, *self.logical_rows.get(l.y as usize)?))
    }

    /// Every unharvested Tensix tile (NOC0), logical row by row.
    pub fn workers(&self) -> Vec<Coord> {
        let mut out = Vec::with_capacity(self.logical_cols.len() * self.logical_rows.len());
        for &y in &self.logical_rows {
            out.extend(self.logical_cols.iter().map(|&x| Coord::new(x, y)));
        }
        out
    }

    /// The tile at NOC0 `c`, if it is an unharvested Tensix tile; otherwise
    /// an error naming what it is (a launch on it is refused).
    pub fn worker(&self, c: Coord) -> Result<&Tile, LayoutError> {
        let g = self.grid();
        let tile =
            self.tile(c).ok_or(LayoutError::OutOfGrid { board: self.board, coord: c, width: g.x, height: g.y })?;
        if tile.kind == TileKind::Tensix {
            return Ok(tile);
        }
        Err(LayoutError::NotAWorker {
            board: self.board,
            harvesting: self.harvesting.to_string(),
            coord: c,
            what: tile.kind.describe(),
        })
    }

    /// tt-metal's DRAM banks, harvested channels left out.
    pub fn dram_banks(&self) -> &[DramBank] {
        &self.dram_banks
    }

    /// NOC0 coordinates of the PCIe tile the host is attached through.
    pub fn pcie_tile(&self) -> Coord {
        self.board.pcie_tile()
    }

    /// The NOC address of host-memory offset 0 as firmware writes it with
    /// translation on: the PCIe tile's translated coordinates and the chip's
    /// host-memory base (Wormhole (0, 3) + 0x8_0000_0000; Blackhole (19, 24)
    /// + bit 60). OR a host offset into it.
    pub fn host_mem_noc_base(&self) -> u64 {
        let pcie = self.tile(self.pcie_tile()).map_or(self.pcie_tile(), |t| t.translated);
        noc_addr::unicast(pcie.x, pcie.y, 0) | self.params.bar.host_mem_base
    }

    /// NOC0 coordinates of the ARC tile.
    pub fn arc_tile(&self) -> Coord {
        self.desc.arc[0]
    }

    pub fn l1_size(&self) -> u32 {
        self.params.l1_size
    }

    pub fn local_mem_size(&self, p: Processor) -> u32 {
        self.params.tensix.local_mem_size(p)
    }

    pub fn clock_hz(&self) -> u64 {
        self.params.clock_hz
    }

    pub fn max_packet(&self) -> u32 {
        self.params.noc.max_packet
    }
}

/// The kind of every tile.
fn kinds(desc: &SocDescriptor, h: &Harvesting, pcie_in_use: Coord) -> BTreeMap<Coord, TileKind> {
    let mut k = BTreeMap::new();
    for &c in &desc.tensix {
        let kind = if h.tensix_harvested(c) { TileKind::Harvested(HarvestedUnit::Tensix) } else { TileKind::Tensix };
        k.insert(c, kind);
    }
    for (bank, ports) in desc.dram.iter().enumerate() {
        for (port, &c) in ports.iter().enumerate() {
            let (bank, port) = (bank as u8, port as u8);
            let kind = if h.dram_harvested(bank as usize) {
                TileKind::Harvested(HarvestedUnit::Dram { bank, port })
            } else {
                TileKind::Dram { bank, port }
            };
            k.insert(c, kind);
        }
    }
    for (channel, &c) in desc.eth.iter().enumerate() {
        let ch = channel as u8;
        let kind = if h.eth_harvested(channel) {
            TileKind::Harvested(HarvestedUnit::Eth { channel: ch })
        } else {
            TileKind::Eth { channel: ch }
        };
        k.insert(c, kind);
    }
    for &c in &desc.pcie {
        k.insert(c, if c == pcie_in_use { TileKind::Pcie } else { TileKind::Harvested(HarvestedUnit::Pcie) });
    }
    let fixed = [
        (&desc.arc, TileKind::Arc),
        (&desc.router_only, TileKind::RouterOnly),
        (&desc.security, TileKind::Security),
        (&desc.l2cpu, TileKind::L2Cpu),
    ];
    for (list, kind) in fixed {
        k.extend(list.iter().map(|&c| (c, kind)));
    }
    k
}
