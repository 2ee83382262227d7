//! Host-side chip descriptions (feature `std`): the SoC descriptor files,
//! the boards, harvesting, and the [`ChipLayout`] built from them.
//!
//! ```
//! use cqlab_abi::soc::{Board, ChipLayout, Harvesting};
//!
//! let chip = ChipLayout::new(Board::WormholeN150, "rows=8".parse::<Harvesting>()?)?;
//! assert_eq!((chip.tensix_grid().x, chip.tensix_grid().y), (8, 9));
//! let placed = chip.placement(1)?;
//! assert_eq!((placed.compute_grid.x, placed.compute_grid.y), (8, 8));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The data lives in `shared-abi/chips/*.yaml` (tt-umd's SoC-descriptor
//! format, checked against tt-umd itself by `shared-abi/tests/umd_check.py`);
//! the fixed per-architecture register facts live in [`crate::arch`].

mod addressing;
mod board;
mod descriptor;
mod dispatch;
mod dram;
mod error;
mod harvest;
mod layout;
mod route;
pub mod telemetry;
mod tile;
mod translate;

pub use board::{Board, UnknownBoard};
pub use descriptor::{DramView, SocDescriptor, BLACKHOLE_YAML, WORMHOLE_YAML};
pub use dispatch::{CqCores, Placement};
pub use dram::DramBank;
pub use error::{HarvestError, SocError};
pub use harvest::{EthHarvest, Harvesting};
pub use layout::{ChipLayout, LayoutError, Tile};
pub use route::{hop_count, in_rect, path_links, route, torus_step, Route};
pub use tile::{HarvestedUnit, TileKind};
