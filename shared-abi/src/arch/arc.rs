//! The little of ARC (the management core) a host reads when it opens a
//! card: is ARC up, where its telemetry table is, and from the table the board
//! id (hence the board type) and the harvesting.
//!
//! Telemetry (tt-umd `device/arc/arc_telemetry_reader.cpp`
//! `ArcTelemetryReader::initialize_telemetry`): two ARC-address pointers give
//! the table and the data array. The table is `[version, entry_count,
//! entry_count words of tag (low 16) | data index (high 16)]`; the value of a
//! tag is the data word at its index. ARC addresses become NOC addresses on
//! the ARC tile by adding [`ArcParams::noc_offset`].

/// One chip's ARC facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArcParams {
    /// NOC address on the ARC tile = `noc_offset` + ARC address.
    pub noc_offset: u64,
    /// ARC address of the reset unit (both chips: APB 0x8000_0000 + 0x30000).
    pub reset_unit: u32,
    /// ARC address of the post-code scratch register.
    pub post_code: u32,
    /// ARC address of the word holding the telemetry table's ARC address.
    pub telemetry_table_ptr: u32,
    /// ARC address of the word holding the telemetry data array's address.
    pub telemetry_data_ptr: u32,
    /// BAR0 offset of the ARC APB window (ARC address 0x8000_0000), where the
    /// host can use it.
    pub bar0_apb: Option<u32>,
    /// The word a host polls until ARC is up, and the value that says so.
    pub ready: (u32, u32),
    /// APB offsets (from [`APB_BASE`]) of the ARC tile's NOC0 and NOC1 NIU
    /// register blocks, where a host reads them (Wormhole: its hang probe and
    /// the NOC translation flag).
    pub niu_apb: Option<[u32; 2]>,
    /// BAR0 offset and ARC address of ARC's CSM (its RAM), where the host
    /// sees it.
    pub csm: Option<(u32, u32)>,
}

/// ARC address of the APB peripherals, seen through [`ArcParams::bar0_apb`].
pub const APB_BASE: u32 = 0x8000_0000;

/// Wormhole B0.
pub const WORMHOLE: ArcParams = ArcParams {
    // tt-umd `wormhole_implementation.hpp` ARC_NOC_ADDRESS_START 0x800000000.
    noc_offset: 0x8_0000_0000,
    // ARC_APB_NOC_XBAR_OFFSET_START 0x80000000 + ARC_RESET_UNIT_OFFSET 0x30000
    // (ARC_NOC_RESET_UNIT_BASE_ADDR 0x880030000).
    reset_unit: 0x8003_0000,
    // ARC_RESET_SCRATCH_OFFSET = reset unit + 0x60 (SCRATCH[0], the post code;
    // tt-isa `WormholeB0/ARCTile/ResetUnit.md`).
    post_code: 0x8003_0060,
    // NOC_NODEID_X_0 0x1D0 and NOC_NODEID_Y_0 0x1D4 on the reset unit: the
    // telemetry table and data pointers (tt-umd
    // `device/arc/wormhole_arc_telemetry_reader.cpp`; tt-kmd `wormhole.c`
    // ARC_TELEMETRY_PTR, ARC_TELEMETRY_DATA).
    telemetry_table_ptr: 0x8003_01D0,
    telemetry_data_ptr: 0x8003_01D4,
    // ARC_APB_BAR0_XBAR_OFFSET_START 0x1FF00000.
    bar0_apb: Some(0x1FF0_0000),
    // Reset unit + 0x74, SCRATCH[5] (ARC_RESET_SCRATCH_STATUS_OFFSET): 1 once
    // ARC is up (tt-umd `device/tt_device/wormhole_tt_device.cpp`
    // wait_arc_core_start; tt-isa `WormholeB0/ARCTile/ResetUnit.md`).
    ready: (0x8003_0074, 1),
    // APB 0x50000 / 0x58000: ARC's NOC0 and NOC1 NIU registers (tt-isa
    // `WormholeB0/ARCTile/README.md`; tt-umd `wormhole_implementation.hpp`
    // NIU_CFG_NOC0_BAR_ARC_ADDR = BAR0 0x1FF50100 for NIU_CFG_0, read by
    // `get_noc_translation_enabled`; APB + 0x5002C is the hang probe of
    // `get_read_checking_offset`).
    niu_apb: Some([0x5_0000, 0x5_8000]),
    // ARC_CSM_BAR0_XBAR_OFFSET_START 0x1FE80000 = ARC address 0x1000_0000
    // (tt-isa `WormholeB0/ARCTile/README.md`: CSM RAM at 0x1000_0000).
    csm: Some((0x1FE8_0000, 0x1000_0000)),
};

/// Blackhole.
pub const BLACKHOLE: ArcParams = ArcParams {
    // tt-umd `blackhole_implementation.hpp` ARC_NOC_XBAR_ADDRESS_START
    // 0x80000000: ARC addresses are NOC addresses on the ARC tile (tt-kmd
    // `blackhole.c` reads RESET_SCRATCH(N) = 0x80030400 + 4N over the NOC).
    noc_offset: 0,
    // ARC_RESET_UNIT_OFFSET 0x30000.
    reset_unit: 0x8003_0000,
    // ARC_RESET_SCRATCH_OFFSET = reset unit + 0x60.
    post_code: 0x8003_0060,
    // SCRATCH_RAM_13 = reset unit + 0x434 and SCRATCH_RAM_12 = + 0x430
    // (tt-umd `BlackholeArcTelemetryReader::get_telemetry_address`; tt-kmd
    // `blackhole.c` ARC_TELEMETRY_PTR, ARC_TELEMETRY_DATA; blackhole-py
    // `hw.py` Arc.SCRATCH_RAM_13).
    telemetry_table_ptr: 0x8003_0434,
    telemetry_data_ptr: 0x8003_0430,
    // ARC_APB_BAR0_XBAR_OFFSET_START 0x1FF00000, only when attached through
    // PCIe 1 (tt-isa `BlackholeA0/PCIExpressTile/README.md`); a host reads
    // ARC over the NOC otherwise.
    bar0_apb: Some(0x1FF0_0000),
    // SCRATCH_RAM_2 = reset unit + 0x408: the boot status, whose low three
    // bits read 5 once ARC is ready for messages (tt-umd
    // `BlackholeTTDevice::wait_arc_core_start`; tt-kmd `blackhole.c`).
    ready: (0x8003_0408, 5),
    // The host reads Blackhole's NOC translation flag from the PCIe tile's
    // NIU instead (tt-umd `blackhole_implementation.hpp`
    // NIU_CFG_NOC0_BAR_PCIE_ADDR).
    niu_apb: None,
    csm: None,
};

/// Telemetry tags (tt-umd `device/api/umd/device/types/telemetry.hpp`
/// TelemetryTag; the same table on both chips).
pub mod tag {
    pub const BOARD_ID_HIGH: u16 = 1;
    pub const BOARD_ID_LOW: u16 = 2;
    pub const ASIC_ID: u16 = 3;
    /// Wormhole: the raw harvesting mask.
    pub const HARVESTING_STATE: u16 = 4;
    pub const AICLK: u16 = 14;
    pub const FLASH_BUNDLE_VERSION: u16 = 28;
    /// Blackhole: enabled Tensix columns, bit i = `harvest_die_order[i]`.
    pub const ENABLED_TENSIX_COL: u16 = 34;
    /// Blackhole: enabled Ethernet channels, bit i = channel i.
    pub const ENABLED_ETH: u16 = 35;
    /// Blackhole: enabled DRAM banks, bit b = bank b.
    pub const ENABLED_GDDR: u16 = 36;
    pub const ENABLED_L2CPU: u16 = 37;
    /// Blackhole: bits `[1:0]` PCIe 0 (2-0), `[3:2]` PCIe 1 (11-0); 1 = in use.
    pub const PCIE_USAGE: u16 = 38;
    pub const NOC_TRANSLATION: u16 = 40;
}

/// Board types by UPI, `(board_id >> 36) & 0xFFFFF` (tt-umd
/// `device/api/umd/device/types/cluster_descriptor_types.hpp` board_upi_map,
/// get_board_type_from_board_id).
pub mod upi {
    pub const N150: u32 = 0x18;
    pub const N300: u32 = 0x14;
    pub const P100A: u32 = 0x43;
    pub const P150A: u32 = 0x40;

    /// The UPI of a 64-bit board id (`BOARD_ID_HIGH << 32 | BOARD_ID_LOW`).
    pub const fn of_board_id(board_id: u64) -> u32 {
        ((board_id >> 36) & 0xF_FFFF) as u32
    }
}
