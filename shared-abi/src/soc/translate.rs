//! Translated coordinates: where each tile appears once firmware turns NOC
//! translation on, harvesting applied.
//!
//! Wormhole (tt-umd `wormhole_coordinate_manager.cpp`
//! `fill_tensix_noc0_translated_mapping`, `fill_eth_noc0_translated_mapping`;
//! tt-isa `WormholeB0/NoC/Coordinates.md`): Tensix x = 18 + logical x; the
//! unharvested rows get y = 18, 19, ... top to bottom and the harvested rows
//! follow; Ethernet x = 18 + index of its column among the Tensix columns,
//! y = 16 (row 0) or 17 (row 6); DRAM, PCIe, ARC and router tiles keep their
//! NOC0 coordinates.
//!
//! Blackhole (tt-umd `blackhole_coordinate_manager.cpp`
//! `fill_tensix_noc0_translated_mapping`, `fill_dram_noc0_translated_mapping`,
//! `fill_pcie_noc0_translated_mapping`, `fill_eth_noc0_translated_mapping`;
//! blackhole-py `hw.py` `build_bank_noc_table`): Tensix y unchanged; the
//! unharvested columns, left to right, take the Tensix x values 1..7, 10..;
//! the harvested ones take the highest (16, 15, ...) in die order. DRAM
//! banks stack three ports high in x = 17 and 18 from y = 12, the harvested
//! bank at (18, 21..23). The PCIe tile in use is (19, 24); unharvested
//! Ethernet channel k (counting unharvested ones) is (20 + k, 25); ARC,
//! L2CPU, security, router, harvested Ethernet and the unused PCIe tile keep
//! their NOC0 coordinates.

use std::collections::BTreeMap;
use std::vec::Vec;

use crate::arch::Arch;
use crate::noc::Coord;

use super::descriptor::SocDescriptor;
use super::harvest::Harvesting;
use super::tile::TileKind;

/// Wormhole's translation tables start at 16 (tt-umd
/// `wormhole_implementation.hpp` translated_coordinate_start_x/y 16; tt-isa
/// `WormholeB0/NoC/Coordinates.md`: 16 and 17 are the non-Tensix columns 0
/// and 5, and rows 0 and 6).
const WH_TABLE_START: u8 = 16;

/// Translated coordinates of every tile, keyed by NOC0.
pub(super) fn translated(
    desc: &SocDescriptor,
    h: &Harvesting,
    kinds: &BTreeMap<Coord, TileKind>,
) -> BTreeMap<Coord, Coord> {
    let mut m: BTreeMap<Coord, Coord> = kinds.keys().map(|&c| (c, c)).collect();
    match desc.arch {
        Arch::Wormhole => wormhole(desc, h, &mut m),
        Arch::Blackhole => blackhole(desc, h, kinds, &mut m),
    }
    m
}

fn sorted_distinct(v: impl Iterator<Item = u8>) -> Vec<u8> {
    let mut v: Vec<u8> = v.collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn index_of(list: &[u8], v: u8) -> u8 {
    list.iter().position(|&e| e == v).unwrap_or_default() as u8
}

/// Wormhole's Tensix rows in translated order: unharvested top to bottom,
/// then harvested top to bottom.
fn wormhole_row_order(desc: &SocDescriptor, h: &Harvesting) -> Vec<u8> {
    let rows = sorted_distinct(desc.tensix.iter().map(|c| c.y));
    let (harvested, kept): (Vec<u8>, Vec<u8>) = rows.into_iter().partition(|y| h.tensix_rows().contains(y));
    kept.into_iter().chain(harvested).collect()
}

fn wormhole(desc: &SocDescriptor, h: &Harvesting, m: &mut BTreeMap<Coord, Coord>) {
    let p = Arch::Wormhole.params().translate;
    let cols = sorted_distinct(desc.tensix.iter().map(|c| c.x));
    let rows = wormhole_row_order(desc, h);
    let eth_rows = sorted_distinct(desc.eth.iter().map(|c| c.y));
    for &c in &desc.tensix {
        m.insert(c, Coord::new(p.tensix_start.0 + index_of(&cols, c.x), p.tensix_start.1 + index_of(&rows, c.y)));
    }
    for &c in &desc.eth {
        m.insert(c, Coord::new(p.eth_start.0 + index_of(&cols, c.x), p.eth_start.1 + index_of(&eth_rows, c.y)));
    }
}

/// Wormhole's X and Y translation tables, NOC0 terms (tt-isa
/// `WormholeB0/NoC/Coordinates.md`): 0..15 map to themselves; 16 and 17 to
/// the non-Tensix columns (0, 5) and rows (0, 6); 18.. to the Tensix columns
/// and to the rows in translated order; the rest to 0.
pub(super) fn wormhole_tables(desc: &SocDescriptor, h: &Harvesting) -> ([u8; 32], [u8; 32]) {
    let cols = sorted_distinct(desc.tensix.iter().map(|c| c.x));
    let rows = wormhole_row_order(desc, h);
    let other_cols: Vec<u8> = (0..desc.grid.x).filter(|x| !cols.contains(x)).collect();
    let other_rows: Vec<u8> = (0..desc.grid.y).filter(|y| !rows.contains(y)).collect();
    let table = |others: &[u8], lines: &[u8]| {
        let mut t = [0u8; 32];
        for (i, e) in t.iter_mut().enumerate().take(WH_TABLE_START as usize) {
            *e = i as u8;
        }
        let order = others.iter().chain(lines);
        for (e, &v) in t.iter_mut().skip(WH_TABLE_START as usize).zip(order) {
            *e = v;
        }
        t
    };
    (table(&other_cols, &cols), table(&other_rows, &rows))
}

fn blackhole(desc: &SocDescriptor, h: &Harvesting, kinds: &BTreeMap<Coord, TileKind>, m: &mut BTreeMap<Coord, Coord>) {
    let p = Arch::Blackhole.params().translate;
    // Tensix columns.
    let cols = sorted_distinct(desc.tensix.iter().map(|c| c.x));
    let die_index = |x: u8| p.harvest_die_order.iter().position(|&d| d == x).unwrap_or(usize::MAX);
    let mut harvested: Vec<u8> = cols.iter().copied().filter(|x| h.tensix_cols().contains(x)).collect();
    harvested.sort_by_key(|&x| die_index(x));
    let kept = cols.iter().copied().filter(|x| !h.tensix_cols().contains(x));
    let mut x_map = BTreeMap::new();
    for (i, x) in kept.enumerate() {
        x_map.insert(x, cols[i]);
    }
    for (k, &x) in harvested.iter().enumerate() {
        x_map.insert(x, cols[cols.len() - 1 - k]);
    }
    for &c in &desc.tensix {
        m.insert(c, Coord::new(x_map[&c.x], c.y));
    }
    // DRAM banks.
    if let Some((x0, y0)) = p.dram_start {
        for (x_off, i, bank) in dram_slots(desc.dram.len(), h) {
            for (port, &c) in desc.dram[bank].iter().enumerate() {
                let ports = desc.dram[bank].len() as u8;
                m.insert(c, Coord::new(x0 + x_off, y0 + ports * i + port as u8));
            }
        }
    }
    // The PCIe tile in use.
    if let Some((x, y)) = p.pcie {
        for (&c, _) in kinds.iter().filter(|(_, k)| **k == TileKind::Pcie) {
            m.insert(c, Coord::new(x, y));
        }
    }
    // Unharvested Ethernet channels, in channel order.
    for (k, &c) in desc.eth.iter().enumerate().filter(|&(ch, _)| !h.eth_harvested(ch)).map(|(_, c)| c).enumerate() {
        m.insert(c, Coord::new(p.eth_start.0 + k as u8, p.eth_start.1));
    }
}

/// Blackhole's DRAM slots: (column offset from x = 17, slot index from
/// y = 12 in units of a bank's ports, physical bank). Without harvesting the
/// first half of the banks fill column 17 and the rest column 18. With bank
/// `hb` harvested the rest are numbered logically (skipping `hb`); the
/// "mirror" of `hb` moves to the last slot of its column and `hb` itself
/// takes the last slot of column 18 (tt-umd
/// `blackhole_coordinate_manager.cpp` `fill_dram_noc0_translated_mapping`;
/// blackhole-py `hw.py` `build_bank_noc_table`).
fn dram_slots(banks: usize, h: &Harvesting) -> Vec<(u8, u8, usize)> {
    let half = banks / 2;
    let Some(&hb) = h.dram_banks().first() else {
        return (0..banks).map(|b| ((b / half) as u8, (b % half) as u8, b)).collect();
    };
    let hb = hb as usize;
    let logical: Vec<usize> = (0..banks).filter(|&b| b != hb).collect();
    let (column_17, column_18): (Vec<usize>, Vec<usize>) = if hb < half {
        let mirror = hb + half - 1;
        let west: Vec<usize> = (half - 1..banks - 1).filter(|&l| l != mirror).chain([mirror]).collect();
        (west, (0..half - 1).collect())
    } else {
        let mirror = hb - half;
        let west: Vec<usize> = (0..half).filter(|&l| l != mirror).chain([mirror]).collect();
        (west, (half..banks - 1).collect())
    };
    let mut slots: Vec<(u8, u8, usize)> = Vec::with_capacity(banks);
    slots.extend(column_17.iter().enumerate().map(|(i, &l)| (0, i as u8, logical[l])));
    slots.extend(column_18.iter().enumerate().map(|(i, &l)| (1, i as u8, logical[l])));
    slots.push((1, column_18.len() as u8, hb));
    slots
}
