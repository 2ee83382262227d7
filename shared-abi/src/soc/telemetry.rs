//! The board information in ARC's telemetry table, both ways: the entries a
//! chip of a given layout reports (the simulator's ARC serves them) and the
//! board and harvesting a host makes of a table it read at open (as tt-umd
//! does in `device/tt_device/*_tt_device.cpp` from
//! `device/arc/arc_telemetry_reader.cpp`). Tags and board ids are
//! [`crate::arch::arc`]'s.
//!
//! - Board: `BOARD_ID_HIGH << 32 | BOARD_ID_LOW`, its UPI naming the board
//!   ([`Board::from_board_id`]).
//! - Wormhole harvesting: `HARVESTING_STATE`, bit i set = the Tensix row at
//!   NOC0 y `harvest_die_order[i]` is off (tt-umd
//!   `wormhole_implementation.hpp` HARVESTING_NOC_LOCATIONS).
//! - Blackhole harvesting: `ENABLED_TENSIX_COL` (bit i set = the column at
//!   NOC0 x `harvest_die_order[i]` is on), `ENABLED_GDDR` (bit b = DRAM
//!   bank b on), `ENABLED_ETH` (bit c = Ethernet channel c on; none on =
//!   every channel off, as a p100a reports).

use std::vec::Vec;

use crate::arch::arc::tag;
use crate::arch::Arch;

use super::board::Board;
use super::harvest::{EthHarvest, Harvesting};
use super::layout::ChipLayout;
use super::tile::TileKind;

/// Why a telemetry table names no chip cqlab can drive.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TelemetryError {
    #[error("ARC telemetry has no tag {tag} ({what})")]
    Missing { tag: u16, what: &'static str },
    #[error("ARC telemetry board id {board_id:#x} (board type {upi:#x}) is no board cqlab models")]
    UnknownBoard { board_id: u64, upi: u32 },
    #[error("ARC telemetry names a {board}, but the device is a {arch} chip")]
    WrongArch { board: Board, arch: Arch },
    #[error(
        "ARC telemetry PCIE_USAGE {usage:#x}: the card is not a PCIe endpoint through PCIe 0 (NOC0 2-0), the only \
         PCIe tile cqlab models on Blackhole (PCIe 1, 11-0, is not built yet)"
    )]
    PcieTile { usage: u32 },
}

/// A `PCIE_USAGE` field (two bits a PCIe tile) of a tile the host is
/// attached through (tt-umd `blackhole_tt_device.cpp` pcie_usage_endpoint).
const PCIE_ENDPOINT: u32 = 1;

/// The board and harvesting entries of a chip laid out as `layout`, as
/// (tag, value), plus AICLK (MHz) and the NOC translation flag (1: on).
pub fn entries(layout: &ChipLayout) -> Vec<(u16, u32)> {
    let board = layout.board();
    // Board id: the UPI in bits 55:36 (`arc::upi::of_board_id`), serial 1.
    let board_id = (board.upi() as u64) << 36 | 1;
    let mut t = Vec::from([
        (tag::BOARD_ID_HIGH, (board_id >> 32) as u32),
        (tag::BOARD_ID_LOW, board_id as u32),
        (tag::AICLK, (layout.clock_hz() / 1_000_000) as u32),
        (tag::NOC_TRANSLATION, 1),
    ]);
    let h = layout.harvesting();
    let die = layout.params().translate.harvest_die_order;
    let bits = |on: &dyn Fn(usize) -> bool, n: usize| (0..n).filter(|&i| on(i)).fold(0u32, |m, i| m | 1 << i);
    match layout.arch() {
        Arch::Wormhole => {
            let off = |i: usize| h.tensix_rows().contains(&die[i]);
            t.push((tag::HARVESTING_STATE, bits(&off, die.len())));
        }
        Arch::Blackhole => {
            let on = |i: usize| !h.tensix_cols().contains(&die[i]);
            t.push((tag::ENABLED_TENSIX_COL, bits(&on, die.len())));
            let gddr = |b: usize| !h.dram_harvested(b);
            t.push((tag::ENABLED_GDDR, bits(&gddr, layout.descriptor().dram.len())));
            let eth = |c: usize| !h.eth_harvested(c);
            t.push((tag::ENABLED_ETH, bits(&eth, layout.descriptor().eth.len())));
            // PCIE_USAGE: bits 1:0 PCIe 0 (2-0), 3:2 PCIe 1 (11-0); 1 = in use.
            let pcies = &layout.descriptor().pcie;
            let usage = pcies.iter().enumerate().fold(0, |m, (i, c)| {
                let used = layout.tile(*c).is_some_and(|t| t.kind == TileKind::Pcie);
                m | if used { PCIE_ENDPOINT } else { 0 } << (2 * i)
            });
            t.push((tag::PCIE_USAGE, usage));
        }
    }
    t
}

/// The board and harvesting a table read from a chip of architecture
/// `arch` names; `value(tag)` looks a tag up. The harvesting is checked
/// against the chip by [`ChipLayout::new`].
pub fn identify(arch: Arch, value: impl Fn(u16) -> Option<u32>) -> Result<(Board, Harvesting), TelemetryError> {
    let get = |t: u16, what: &'static str| value(t).ok_or(TelemetryError::Missing { tag: t, what });
    let board_id = (get(tag::BOARD_ID_HIGH, "board id, high word")? as u64) << 32
        | get(tag::BOARD_ID_LOW, "board id, low word")? as u64;
    let board = Board::from_board_id(board_id)
        .ok_or(TelemetryError::UnknownBoard { board_id, upi: crate::arch::arc::upi::of_board_id(board_id) })?;
    if board.arch() != arch {
        return Err(TelemetryError::WrongArch { board, arch });
    }
    let die = arch.params().translate.harvest_die_order;
    let set = |mask: u32, i: usize| mask >> i & 1 != 0;
    let harvesting = match arch {
        Arch::Wormhole => {
            let raw = get(tag::HARVESTING_STATE, "harvested Tensix rows")?;
            let rows: Vec<u8> = (0..die.len()).filter(|&i| set(raw, i)).map(|i| die[i]).collect();
            Harvesting::rows(&rows)
        }
        Arch::Blackhole => {
            let desc = super::SocDescriptor::builtin(arch);
            let cols_on = get(tag::ENABLED_TENSIX_COL, "enabled Tensix columns")?;
            let cols: Vec<u8> = (0..die.len()).filter(|&i| !set(cols_on, i)).map(|i| die[i]).collect();
            let gddr = get(tag::ENABLED_GDDR, "enabled DRAM banks")?;
            let dram: Vec<u8> = (0..desc.dram.len()).filter(|&b| !set(gddr, b)).map(|b| b as u8).collect();
            let eth_on = get(tag::ENABLED_ETH, "enabled Ethernet channels")?;
            let eth = if eth_on == 0 {
                EthHarvest::All
            } else {
                EthHarvest::Channels((0..desc.eth.len()).filter(|&c| !set(eth_on, c)).map(|c| c as u8).collect())
            };
            // tt-umd `BlackholeTTDevice` (chip info): a field of 1 is an
            // endpoint; a table without the tag names none (as tt-umd, which
            // then harvests neither).
            if let Some(usage) = value(tag::PCIE_USAGE) {
                if usage & 0x3 != PCIE_ENDPOINT {
                    return Err(TelemetryError::PcieTile { usage });
                }
            }
            Harvesting::cols(&cols).with_dram(&dram).with_eth(eth)
        }
    };
    Ok((board, harvesting))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn every_board_and_harvesting_survives_the_round_trip() {
        let small_wh = "rows=1,2,3,4,5,7,8".parse::<Harvesting>().unwrap();
        let small_bh = "cols=3,4,5,6,7,10,11,12,13,14,15".parse::<Harvesting>().unwrap();
        let cases = Board::ALL
            .into_iter()
            .map(|b| (b, b.default_harvesting()))
            .chain([(Board::WormholeN150, small_wh), (Board::BlackholeP150a, small_bh)]);
        for (board, h) in cases {
            let layout = ChipLayout::new(board, h.clone()).unwrap();
            let t: BTreeMap<u16, u32> = entries(&layout).into_iter().collect();
            assert_eq!(identify(board.arch(), |tag| t.get(&tag).copied()), Ok((board, h)), "{board}");
        }
    }

    /// A Blackhole card attached through PCIe 1 is refused naming why, not
    /// driven with host memory addressed through the wrong tile.
    #[test]
    fn a_blackhole_on_pcie_1_is_refused() {
        let layout = ChipLayout::for_board(Board::BlackholeP150a).unwrap();
        let mut t: BTreeMap<u16, u32> = entries(&layout).into_iter().collect();
        assert_eq!(t[&tag::PCIE_USAGE], 0b0001);
        t.insert(tag::PCIE_USAGE, 0b0100);
        let e = identify(Arch::Blackhole, |tag| t.get(&tag).copied()).unwrap_err();
        assert_eq!(e, TelemetryError::PcieTile { usage: 0b0100 });
        assert!(std::format!("{e}").contains("PCIe 1, 11-0, is not built yet"), "{e}");
        t.remove(&tag::PCIE_USAGE);
        assert!(identify(Arch::Blackhole, |tag| t.get(&tag).copied()).is_ok(), "no tag: as tt-umd, no harvesting");
    }

    #[test]
    fn a_table_of_the_other_chip_or_an_unknown_board_is_refused() {
        let layout = ChipLayout::for_board(Board::BlackholeP100a).unwrap();
        let t: BTreeMap<u16, u32> = entries(&layout).into_iter().collect();
        let e = identify(Arch::Wormhole, |tag| t.get(&tag).copied()).unwrap_err();
        assert_eq!(e, TelemetryError::WrongArch { board: Board::BlackholeP100a, arch: Arch::Wormhole });
        let e = identify(Arch::Blackhole, |tag| if tag == tag::BOARD_ID_HIGH { Some(0x70) } else { Some(0) });
        assert!(matches!(e, Err(TelemetryError::UnknownBoard { upi: 0x7, .. })), "{e:?}");
        let e = identify(Arch::Blackhole, |_| None).unwrap_err();
        assert_eq!(e, TelemetryError::Missing { tag: tag::BOARD_ID_HIGH, what: "board id, high word" });
    }
}
