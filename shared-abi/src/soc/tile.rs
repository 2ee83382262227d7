//! What each tile of a chip is: a leaf the layout and the coordinate
//! translation share.

use std::string::{String, ToString};

/// What a harvested tile would have been.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HarvestedUnit {
    Tensix,
    Dram {
        bank: u8,
        port: u8,
    },
    Eth {
        channel: u8,
    },
    /// The PCIe tile the host is not attached through.
    Pcie,
}

/// The kind of a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TileKind {
    Tensix,
    /// Port `port` (0..3) of DRAM channel `bank` (tt-umd's bank numbering;
    /// tt-metal's banks are [`ChipLayout::dram_banks`](crate::soc::ChipLayout::dram_banks)).
    Dram {
        bank: u8,
        port: u8,
    },
    /// The PCIe tile the host is attached through.
    Pcie,
    Arc,
    Eth {
        channel: u8,
    },
    RouterOnly,
    Security,
    L2Cpu,
    Harvested(HarvestedUnit),
}

impl TileKind {
    /// How errors and dumps name the kind.
    pub fn describe(self) -> String {
        match self {
            TileKind::Tensix => "a Tensix tile".to_string(),
            TileKind::Dram { bank, port } => std::format!("DRAM channel {bank} port {port}"),
            TileKind::Pcie => "the PCIe tile".to_string(),
            TileKind::Arc => "the ARC tile".to_string(),
            TileKind::Eth { channel } => std::format!("Ethernet channel {channel}"),
            TileKind::RouterOnly => "a router-only tile".to_string(),
            TileKind::Security => "the security tile".to_string(),
            TileKind::L2Cpu => "an L2CPU tile".to_string(),
            TileKind::Harvested(HarvestedUnit::Tensix) => "a harvested Tensix tile".to_string(),
            TileKind::Harvested(HarvestedUnit::Dram { bank, port }) => {
                std::format!("harvested DRAM channel {bank} port {port}")
            }
            TileKind::Harvested(HarvestedUnit::Eth { channel }) => std::format!("harvested Ethernet channel {channel}"),
            TileKind::Harvested(HarvestedUnit::Pcie) => "the unused PCIe tile".to_string(),
        }
    }
}
