//! The four boards cqlab models, and what differs between boards of one
//! chip: the board id, the PCIe tile in use and the usual harvesting.

use std::string::{String, ToString};

use crate::arch::{arc, Arch};
use crate::noc::Coord;

/// A card, named as `--chip` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Board {
    /// Wormhole n150: one Wormhole B0.
    WormholeN150,
    /// Wormhole n300: cqlab models its PCIe-attached (local) chip only.
    WormholeN300,
    /// Blackhole p100a.
    BlackholeP100a,
    /// Blackhole p150a.
    BlackholeP150a,
}

/// A `--chip` value that names no board.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown chip `{given}`; expected one of: {}", Board::ALL.map(Board::both_names).join(", "))]
pub struct UnknownBoard {
    pub given: String,
}

impl Board {
    pub const ALL: [Board; 4] =
        [Board::WormholeN150, Board::WormholeN300, Board::BlackholeP100a, Board::BlackholeP150a];

    /// The `--chip` spelling, the one cqlab prints (reports, replay
    /// lines, trace headers, the daemon's protocol).
    pub const fn name(self) -> &'static str {
        match self {
            Board::WormholeN150 => "wormhole-n150",
            Board::WormholeN300 => "wormhole-n300",
            Board::BlackholeP100a => "blackhole-p100a",
            Board::BlackholeP150a => "blackhole-p150a",
        }
    }

    /// The card's own name (`n300`), as the docs and Tenstorrent's tools
    /// write it; parsing takes it as an alias of [`Board::name`].
    pub const fn short_name(self) -> &'static str {
        match self {
            Board::WormholeN150 => "n150",
            Board::WormholeN300 => "n300",
            Board::BlackholeP100a => "p100a",
            Board::BlackholeP150a => "p150a",
        }
    }

    /// `wormhole-n300 (n300)`: both names, for a message listing the boards.
    fn both_names(self) -> String {
        std::format!("{} ({})", self.name(), self.short_name())
    }

    pub const fn arch(self) -> Arch {
        match self {
            Board::WormholeN150 | Board::WormholeN300 => Arch::Wormhole,
            Board::BlackholeP100a | Board::BlackholeP150a => Arch::Blackhole,
        }
    }

    /// The board type field of its board id (tt-umd
    /// `cluster_descriptor_types.hpp` board_upi_map).
    pub const fn upi(self) -> u32 {
        match self {
            Board::WormholeN150 => arc::upi::N150,
            Board::WormholeN300 => arc::upi::N300,
            Board::BlackholeP100a => arc::upi::P100A,
            Board::BlackholeP150a => arc::upi::P150A,
        }
    }

    /// The board a board id names, if cqlab models it: by its UPI, or one
    /// tt-umd maps to the same board type (`arc::upi::P100_OTHERS`,
    /// `P150_OTHERS`).
    pub fn from_board_id(board_id: u64) -> Option<Board> {
        let upi = arc::upi::of_board_id(board_id);
        if let Some(b) = Board::ALL.into_iter().find(|b| b.upi() == upi) {
            return Some(b);
        }
        if arc::upi::P100_OTHERS.contains(&upi) {
            Some(Board::BlackholeP100a)
        } else if arc::upi::P150_OTHERS.contains(&upi) {
            Some(Board::BlackholeP150a)
        } else {
            None
        }
    }

    /// NOC0 coordinates of the PCIe tile the host is attached through.
    ///
    /// Wormhole has one (tt-umd `wormhole_implementation.hpp`
    /// PCIE_CORES_NOC0 {0, 3}). Blackhole has two; both boards' tt-umd
    /// examples use 2-0 with 11-0 harvested (tt-umd
    /// `tests/cluster_descriptor_examples/blackhole_P100.yaml` and
    /// `blackhole_P150.yaml`, pcie_harvesting_mask 2). The ISA docs say a
    /// p100 uses PCIe 1 (11-0); tt-umd says p100 comes in both variants.
    pub const fn pcie_tile(self) -> Coord {
        match self {
            Board::WormholeN150 | Board::WormholeN300 => Coord::new(0, 3),
            Board::BlackholeP100a | Board::BlackholeP150a => Coord::new(2, 0),
        }
    }
}

impl core::fmt::Display for Board {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for Board {
    type Err = UnknownBoard;

    /// A board by its name or its short name (`wormhole-n300` or `n300`).
    fn from_str(s: &str) -> Result<Board, UnknownBoard> {
        Board::ALL
            .into_iter()
            .find(|b| b.name() == s || b.short_name() == s)
            .ok_or_else(|| UnknownBoard { given: s.to_string() })
    }
}
