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
    /// How the host tells that ARC is up.
    pub ready: ArcReady,
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

/// ARC address of Wormhole's CSM (tt-isa `WormholeB0/ARCTile/README.md`).
const WORMHOLE_CSM: u32 = 0x1000_0000;

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
    // Reset unit + 0x74, SCRATCH[5] (ARC_RESET_SCRATCH_STATUS_OFFSET; tt-umd
    // `device/tt_device/wormhole_tt_device.cpp` wait_arc_core_start; tt-isa
    // `WormholeB0/ARCTile/ResetUnit.md`), read as tt-umd reads it.
    ready: ArcReady { status: 0x8003_0074, rule: ReadyRule::WormholeStatus },
    // APB 0x50000 / 0x58000: ARC's NOC0 and NOC1 NIU registers (tt-isa
    // `WormholeB0/ARCTile/README.md`; tt-umd `wormhole_implementation.hpp`
    // NIU_CFG_NOC0_BAR_ARC_ADDR = BAR0 0x1FF50000, the NOC0 NIU's base;
    // `WormholeTTDevice::get_noc_translation_enabled` reads NIU_CFG_0 at
    // APB 0x50000 + 0x100; APB + 0x5002C is the hang probe of
    // `get_read_checking_offset`).
    niu_apb: Some([0x5_0000, 0x5_8000]),
    // ARC_CSM_BAR0_XBAR_OFFSET_START 0x1FE80000 = ARC address 0x1000_0000
    // (tt-isa `WormholeB0/ARCTile/README.md`: CSM RAM at 0x1000_0000).
    csm: Some((0x1FE8_0000, WORMHOLE_CSM)),
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
    // `BlackholeTTDevice::wait_arc_core_start`: `(status & 0x7) == 0x5`;
    // tt-kmd `blackhole.c` tests bit 0 alone, ARC_BOOT_STATUS_READY_FOR_MSG,
    // which 5 also sets). The higher bits are not looked at.
    ready: ArcReady { status: 0x8003_0408, rule: ReadyRule::LowBits { mask: 0x7, value: 5 } },
    // The host reads Blackhole's NOC translation flag from the PCIe tile's
    // NIU instead (tt-umd `blackhole_implementation.hpp`
    // NIU_CFG_NOC0_BAR_PCIE_ADDR).
    niu_apb: None,
    csm: None,
};

/// The word a host reads to tell whether ARC is up, and how it reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArcReady {
    /// ARC address of the status word.
    pub status: u32,
    pub rule: ReadyRule,
}

/// How a chip's ARC status word says ARC is up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadyRule {
    /// Up when `status & mask == value` (Blackhole).
    LowBits { mask: u32, value: u32 },
    /// Wormhole's status codes, as tt-umd `WormholeTTDevice::wait_arc_core_start`
    /// reads them (its constants; see [`ArcReady::judge`]).
    WormholeStatus,
}

/// What ARC's status word says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArcState {
    Up,
    /// Not up yet, or busy: what the word says.
    NotUp(&'static str),
    /// A state that waiting does not end (tt-umd throws on it).
    Failed(&'static str),
}

/// Wormhole's status and post codes (tt-umd `wormhole_tt_device.cpp`
/// wait_arc_core_start, `wormhole_implementation.hpp`
/// ARC_CSM_ARC_PCIE_DMA_REQUEST).
pub mod wormhole_status {
    pub const NO_ACCESS: u32 = 0xFFFF_FFFF;
    pub const WATCHDOG_TRIGGERED: u32 = 0xDEAD_C0DE;
    pub const BOOT_INCOMPLETE_1: u32 = 0x0000_0060;
    pub const BOOT_INCOMPLETE_2: u32 = 0x1111_0000;
    pub const ASLEEP_2: u32 = 0x55;
    pub const INIT_DONE_1: u32 = 0x0000_0001;
    pub const INIT_DONE_2: u32 = 0xFFFF_DEAD;
    /// Status 0: the post code tells.
    pub const OLD_POST_CODE: u32 = 0;
    pub const MESSAGE_QUEUED_MASK: u32 = 0xFFFF_FF00;
    /// Also `STATUS_ASLEEP_1`.
    pub const MESSAGE_QUEUED_VAL: u32 = 0x0000_AA00;
    pub const HANDLING_MESSAGE_MASK: u32 = 0xFF00_FFFF;
    pub const HANDLING_MESSAGE_VAL: u32 = 0xAA00_0000;
    pub const MESSAGE_COMPLETE_MASK: u32 = 0x0000_FFFF;
    pub const MESSAGE_COMPLETE_MIN: u32 = 0x0000_0001;
    pub const POST_CODE_INIT_DONE: u32 = 0xC0DE_0001;
    pub const POST_CODE_MSG_HANDLE_DONE: u32 = 0xC0DE_003F;
    pub const POST_CODE_TIME_LAST: u32 = 0xC0DE_007F;
    /// CSM offset 0x784D4 at CSM's ARC address: nonzero while ARC
    /// has a PCIe DMA request pending.
    pub const PCIE_DMA_REQUEST: u32 = super::WORMHOLE_CSM + 0x784D4;
}

impl ArcReady {
    /// A status word that reads as up: what a simulator's ARC holds.
    pub const fn up_value(&self) -> u32 {
        match self.rule {
            ReadyRule::LowBits { value, .. } => value,
            ReadyRule::WormholeStatus => wormhole_status::INIT_DONE_1,
        }
    }

    /// What `status` (the word at [`ArcReady::status`]) says, reading the
    /// post code ([`ArcParams::post_code`]) or other words at ARC addresses
    /// through `read` only where the status alone does not tell.
    ///
    /// Wormhole, as tt-umd: all ones or the watchdog code fail; init done
    /// (1, 0xFFFFDEAD) is up; status 0 is up when the post code is idle
    /// (init done, or a message handled); a message queued or being handled
    /// is not up yet; a message complete is up once no PCIe DMA request is
    /// pending. Unlike tt-umd, the two boot-incomplete codes and "asleep"
    /// (0x55) read not up: tt-umd's last test counts 0x60 and 0x55 as a
    /// message complete, and telemetry read from a booting ARC is not yet
    /// there to trust.
    pub fn judge<E>(
        &self,
        status: u32,
        post_code: u32,
        read: impl FnMut(u32) -> Result<u32, E>,
    ) -> Result<ArcState, E> {
        let ReadyRule::LowBits { mask, value } = self.rule else {
            return wormhole_state(status, post_code, read);
        };
        Ok(if status & mask == value { ArcState::Up } else { ArcState::NotUp("boot status not ready") })
    }
}

/// [`ArcReady::judge`] for Wormhole's status codes.
fn wormhole_state<E>(status: u32, post_code: u32, mut read: impl FnMut(u32) -> Result<u32, E>) -> Result<ArcState, E> {
    use wormhole_status as s;
    Ok(match status {
        s::NO_ACCESS => ArcState::Failed("reads all ones: the card is not reachable"),
        s::WATCHDOG_TRIGGERED => ArcState::Failed("ARC's watchdog fired"),
        s::INIT_DONE_1 | s::INIT_DONE_2 => ArcState::Up,
        s::OLD_POST_CODE => {
            let code = read(post_code)?;
            let idle = code == s::POST_CODE_INIT_DONE
                || (s::POST_CODE_MSG_HANDLE_DONE..=s::POST_CODE_TIME_LAST).contains(&code);
            if idle {
                ArcState::Up
            } else {
                ArcState::NotUp("status 0 and a post code that is not idle")
            }
        }
        s::BOOT_INCOMPLETE_1 | s::BOOT_INCOMPLETE_2 => ArcState::NotUp("boot incomplete"),
        s::ASLEEP_2 => ArcState::NotUp("asleep"),
        _ if status & s::MESSAGE_QUEUED_MASK == s::MESSAGE_QUEUED_VAL => {
            ArcState::NotUp("a message queued (or asleep)")
        }
        _ if status & s::HANDLING_MESSAGE_MASK == s::HANDLING_MESSAGE_VAL => ArcState::NotUp("handling a message"),
        _ if status & s::MESSAGE_COMPLETE_MASK > s::MESSAGE_COMPLETE_MIN => {
            if read(s::PCIE_DMA_REQUEST)? == 0 {
                ArcState::Up
            } else {
                ArcState::NotUp("a message complete, with a PCIe DMA request pending")
            }
        }
        _ => ArcState::NotUp("an unknown status"),
    })
}

/// The telemetry table's layout (module docs): a version word at +0, the
/// entry count at +4, then one word per entry at +8 + 4i, `tag | index << 16`
/// (tt-umd `ArcTelemetryReader::initialize_telemetry`).
pub mod telemetry_table {
    /// Offset of the version word.
    pub const VERSION_OFFSET: u32 = 0;
    /// Offset of the entry count.
    pub const COUNT_OFFSET: u32 = 4;
    /// Offset of entry 0; entry i is at `ENTRIES_OFFSET + 4 * i`.
    pub const ENTRIES_OFFSET: u32 = 8;

    /// Offset of entry `i`.
    pub const fn entry_offset(i: u32) -> u32 {
        ENTRIES_OFFSET + 4 * i
    }

    /// The entry word for `tag` whose value is data word `index`.
    pub const fn entry(tag: u16, index: u16) -> u32 {
        tag as u32 | (index as u32) << 16
    }

    /// An entry word's tag and data index.
    pub const fn split(entry: u32) -> (u16, u16) {
        (entry as u16, (entry >> 16) as u16)
    }
}

/// Telemetry tags (tt-umd `device/api/umd/device/types/telemetry.hpp`
/// TelemetryTag; the same table on both chips as the table reader sees it,
/// which tt-umd uses on Wormhole firmware 18.4 and later: older firmware is
/// read through `SmBusArcTelemetryReader`'s `LegacyTelemetryTag`, not
/// modelled).
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
    /// The other UPIs tt-umd maps to the same board types (P100: 0x36; P150:
    /// 0x41, 0x42), which cqlab identifies as the boards it models.
    pub const P100_OTHERS: [u32; 1] = [0x36];
    pub const P150_OTHERS: [u32; 2] = [0x41, 0x42];

    /// The UPI of a 64-bit board id (`BOARD_ID_HIGH << 32 | BOARD_ID_LOW`).
    pub const fn of_board_id(board_id: u64) -> u32 {
        ((board_id >> 36) & 0xF_FFFF) as u32
    }
}
