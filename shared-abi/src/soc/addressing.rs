//! How requests name tiles with NOC translation on, per NOC, and the
//! `NocMap` the host writes for firmware.
//!
//! The chip translates a request's coordinates before routing it
//! (`NIU_CFG_0.NOC_ID_TRANSLATE_EN`; tt-isa `WormholeB0/NoC/Coordinates.md`,
//! `BlackholeA0/NoC/Coordinates.md`):
//! - Wormhole translates each axis through a 32-entry table: entries 16 and
//!   up are the translated Tensix and Ethernet coordinates, entries 0..15
//!   map to themselves, i.e. to the NOC's *own* physical coordinates. So a
//!   DRAM, PCIe or ARC tile is named by its NOC0 coordinates on NOC0 and by
//!   its NOC1 coordinates on NOC1.
//! - Blackhole translates Tensix, DRAM, the PCIe tile in use and the
//!   unharvested Ethernet tiles to fixed translated coordinates, the same on
//!   both NOCs; rows 0 and 1 (ARC, the other PCIe tile, router tiles) and the
//!   DRAM columns keep physical coordinates, the requesting NOC's own.

use std::vec::Vec;

use crate::arch::{Arch, Noc};
use crate::memory_map::MAX_DRAM_BANKS;
use crate::noc::{Coord, NocAddr, MAX_CQS};
use crate::noc_map::{NocMap, MAGIC, MAX_GRID_COLS, MAX_GRID_ROWS};

use super::dispatch::Placement;
use super::layout::{ChipLayout, LayoutError, Tile};
use super::tile::{HarvestedUnit, TileKind};

/// Wormhole's translation tables cover values 16 and up; below, values
/// name a NOC's own physical coordinates (tt-umd `wormhole_implementation.hpp`
/// translated_coordinate_start_x/y 16).
const WH_TRANSLATED_FROM: u8 = 16;

impl ChipLayout {
    /// Whether the chip translates requests to `tile` (module docs): a
    /// translated tile is named by its translated coordinates on both
    /// NOCs, any other by the requesting NOC's physical coordinates.
    pub fn is_translated(&self, tile: &Tile) -> bool {
        match self.arch() {
            Arch::Wormhole => matches!(
                tile.kind,
                TileKind::Tensix
                    | TileKind::Eth { .. }
                    | TileKind::Harvested(HarvestedUnit::Tensix)
                    | TileKind::Harvested(HarvestedUnit::Eth { .. })
            ),
            Arch::Blackhole => tile.translated != tile.noc0 || matches!(tile.kind, TileKind::Tensix),
        }
    }

    /// The coordinates a request on `noc` names the tile at NOC0 `c` by.
    pub fn noc_coord(&self, noc: Noc, c: Coord) -> Option<Coord> {
        let tile = self.tile(c)?;
        Some(match (self.is_translated(tile), noc) {
            (true, _) => tile.translated,
            (false, Noc::Noc0) => tile.noc0,
            (false, Noc::Noc1) => tile.noc1,
        })
    }

    /// The tile (NOC0 coordinates) a request on `noc` addressed to `c`
    /// reaches, as the chip translates it; `None` for coordinates that
    /// name no tile.
    pub fn resolve(&self, noc: Noc, c: Coord) -> Option<Coord> {
        match self.arch() {
            Arch::Wormhole => {
                let (xs, ys) = self.translation_tables()?;
                let axis = |v: u8, table: &[u8; 32], phys: &dyn Fn(u8) -> Option<u8>| {
                    if v >= WH_TRANSLATED_FROM {
                        table.get(v as usize).copied()
                    } else {
                        phys(v)
                    }
                };
                let desc = self.descriptor();
                let phys_x = |v: u8| match noc {
                    Noc::Noc0 => (v < desc.grid.x).then_some(v),
                    Noc::Noc1 => desc.noc0_x_to_noc1_x.iter().position(|&n| n == v).map(|p| p as u8),
                };
                let phys_y = |v: u8| match noc {
                    Noc::Noc0 => (v < desc.grid.y).then_some(v),
                    Noc::Noc1 => desc.noc0_y_to_noc1_y.iter().position(|&n| n == v).map(|p| p as u8),
                };
                let t = Coord::new(axis(c.x, &xs, &phys_x)?, axis(c.y, &ys, &phys_y)?);
                // Table entries past the last line map to 0; that is a real
                // tile only where the value itself is one.
                self.tile(t).map(|tile| tile.noc0)
            }
            Arch::Blackhole => {
                if let Some(t) = self.tiles().iter().find(|t| self.is_translated(t) && t.translated == c) {
                    return Some(t.noc0);
                }
                // Physical coordinates of `noc`: rows 0 and 1 and the DRAM
                // columns are never translated, nor is a tile without
                // translated coordinates.
                let t = self.tile_on(noc, c)?;
                let dram = matches!(t.kind, TileKind::Dram { .. } | TileKind::Harvested(HarvestedUnit::Dram { .. }));
                (!self.is_translated(t) || dram || t.noc0.y <= 1).then_some(t.noc0)
            }
        }
    }

    /// The `NocMap` firmware needs on this chip with command queues placed
    /// as `placement` says.
    pub fn noc_map(&self, placement: &Placement) -> Result<NocMap, LayoutError> {
        let too_many = |what: &'static str, found: usize, max: usize| LayoutError::NocMapCapacity {
            board: self.board(),
            what,
            found,
            max,
        };
        let cqs = placement.cqs.len();
        if cqs == 0 || cqs > MAX_CQS as usize {
            return Err(too_many("command queues", cqs, MAX_CQS as usize));
        }
        let banks = self.dram_banks();
        if banks.len() > MAX_DRAM_BANKS as usize {
            return Err(too_many("DRAM banks", banks.len(), MAX_DRAM_BANKS as usize));
        }
        let g = placement.compute_grid;
        if g.x as usize > MAX_GRID_COLS {
            return Err(too_many("compute columns", g.x as usize, MAX_GRID_COLS));
        }
        if g.y as usize > MAX_GRID_ROWS {
            return Err(too_many("compute rows", g.y as usize, MAX_GRID_ROWS));
        }
        let translated = |c: Coord| self.tile(c).map_or(c, |t| t.translated);
        let mut m = NocMap { magic: MAGIC, num_cqs: cqs as u32, dram_banks: banks.len() as u32, ..NocMap::default() };
        m.grid.cols = g.x as u32;
        m.grid.rows = g.y as u32;
        let host = self.params().bar.host_mem_base;
        for noc in Noc::ALL {
            let pcie = self.noc_coord(noc, self.pcie_tile()).unwrap_or(self.pcie_tile());
            m.pcie[noc.index() as usize] = NocAddr::unicast(pcie, 0).0 | host;
            for (b, bank) in banks.iter().enumerate() {
                let end = bank.worker_endpoint_on(noc);
                let at = self.noc_coord(noc, end).unwrap_or(end);
                m.dram[b][noc.index() as usize] = NocAddr::unicast(at, bank.offset).0;
            }
        }
        // The compute grid's first row and column, logical order.
        let first_row: Vec<Coord> = placement.compute.iter().take(g.x as usize).copied().collect();
        let first_col: Vec<Coord> = placement.compute.iter().step_by(g.x as usize).copied().collect();
        for (i, c) in first_row.iter().enumerate() {
            m.grid.x[i] = translated(*c).x;
        }
        for (i, c) in first_col.iter().enumerate() {
            m.grid.y[i] = translated(*c).y;
        }
        for (q, cores) in placement.cqs.iter().enumerate() {
            m.dispatcher[q] = translated(cores.dispatcher).packed();
        }
        Ok(m)
    }
}
