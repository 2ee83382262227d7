//! Where each chip puts its tiles in translated coordinates, the coordinates
//! software uses once firmware has turned NOC translation on
//! (`NIU_CFG_0.NOC_ID_TRANSLATE_EN`). The full mapping, which depends on
//! harvesting, is built by `soc::ChipLayout` (feature `std`); these are the
//! fixed starting points.

/// The translated-coordinate starting points of one chip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TranslateParams {
    /// Translated (x, y) of logical Tensix (0, 0).
    pub tensix_start: (u8, u8),
    /// Translated (x, y) of the first Ethernet tile.
    pub eth_start: (u8, u8),
    /// Translated (x, y) of DRAM bank 0 port 0, where DRAM is translated.
    pub dram_start: Option<(u8, u8)>,
    /// Translated (x, y) of the PCIe tile in use, where PCIe is translated.
    pub pcie: Option<(u8, u8)>,
    /// The die order of the harvestable Tensix rows (Wormhole) or columns
    /// (Blackhole): bit i of a raw ARC harvesting mask is this NOC0 y or x.
    pub harvest_die_order: &'static [u8],
}

/// Wormhole B0.
pub const WORMHOLE: TranslateParams = TranslateParams {
    // tt-umd `wormhole_implementation.hpp` tensix_translated_coordinate_start_x/y
    // 18; tt-metal wh `noc_parameters.h` VIRTUAL_TENSIX_START_X/Y 18.
    tensix_start: (18, 18),
    // tt-umd `wormhole_implementation.hpp` eth_translated_coordinate_start_x 18,
    // eth_translated_coordinate_start_y 16.
    eth_start: (18, 16),
    // tt-umd `wormhole_coordinate_manager.cpp` fill_dram_noc0_translated_mapping
    // and fill_pcie_noc0_translated_mapping: not translated.
    dram_start: None,
    pcie: None,
    // tt-umd `wormhole_implementation.hpp` HARVESTING_NOC_LOCATIONS.
    harvest_die_order: &[11, 1, 10, 2, 9, 3, 8, 4, 7, 5],
};

/// Blackhole.
pub const BLACKHOLE: TranslateParams = TranslateParams {
    // tt-metal bh `noc_parameters.h` VIRTUAL_TENSIX_START_X 1, _Y 2.
    tensix_start: (1, 2),
    // tt-umd `blackhole_implementation.hpp` eth_translated_coordinate_start_x 20,
    // eth_translated_coordinate_start_y 25.
    eth_start: (20, 25),
    // tt-umd `blackhole_implementation.hpp` dram_translated_coordinate_start_x 17,
    // dram_translated_coordinate_start_y 12.
    dram_start: Some((17, 12)),
    // tt-umd `blackhole_implementation.hpp` pcie_translated_coordinate_start_x 19,
    // pcie_translated_coordinate_start_y 24; blackhole-py `hw.py`
    // Sysmem.PCIE_NOC_XY = (24 << 6) | 19.
    pcie: Some((19, 24)),
    // tt-umd `blackhole_implementation.hpp` HARVESTING_NOC_LOCATIONS.
    harvest_die_order: &[1, 16, 2, 15, 3, 14, 4, 13, 5, 12, 6, 11, 7, 10],
};
