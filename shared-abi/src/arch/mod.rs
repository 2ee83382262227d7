//! The two real chips, register for register: Wormhole B0 and Blackhole.
//!
//! One type, [`ArchParams`], holds every per-architecture fact that the
//! firmware, the simulator and the driver share; [`WORMHOLE`] and
//! [`BLACKHOLE`] are its two instances. Firmware names one of them in a
//! `const` and the compiler folds every field; host code picks one at run
//! time with [`Arch::params`]. Facts that are the same on both chips (NOC_CTRL
//! bits, counter indices, the 64-bit NOC address layout) are plain `const`s in
//! the topic modules.
//!
//! ```
//! use cqlab_abi::arch::{niu::cmd_buf, ArchParams, Noc, WORMHOLE};
//!
//! // Firmware: the chip is a compile-time choice, every address a constant.
//! const CHIP: &ArchParams = &WORMHOLE;
//! const READ_CMD_CTRL: u32 = CHIP.niu.cmd_buf_reg(Noc::Noc0, cmd_buf::READ, CHIP.niu.regs.cmd_ctrl);
//! assert_eq!(READ_CMD_CTRL, 0xFFB2_0428);
//!
//! // Host: the chip is known at run time.
//! let chip = cqlab_abi::arch::Arch::Blackhole.params();
//! assert_eq!(chip.niu.cmd_buf_reg(Noc::Noc0, cmd_buf::READ, chip.niu.regs.cmd_ctrl), 0xFFB2_0840);
//! ```
//!
//! No `std`, no alloc. Every constant cites its public source beside it. The
//! citations name the repository, the file and the symbol; the revision each
//! file was read at is:
//!
//! | short name in a citation | repository, path @ revision read |
//! |---|---|
//! | tt-umd `wormhole_implementation.hpp` | tenstorrent/tt-umd `device/api/umd/device/arch/wormhole_implementation.hpp` @3ed9cb6d |
//! | tt-umd `blackhole_implementation.hpp` | tenstorrent/tt-umd `device/api/umd/device/arch/blackhole_implementation.hpp` @3ed9cb6d |
//! | tt-umd `*_coordinate_manager.cpp` | tenstorrent/tt-umd `device/coordinates/{wormhole,blackhole}_coordinate_manager.cpp` @3ed9cb6d |
//! | tt-metal wh `noc_parameters.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/wormhole/noc/noc_parameters.h` @22f21522 |
//! | tt-metal bh `noc_parameters.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/blackhole/noc/noc_parameters.h` @22f21522 |
//! | tt-metal wh `noc_nonblocking_api.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/wormhole/noc_nonblocking_api.h` @00b0fa3f |
//! | tt-metal bh `noc_nonblocking_api.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/blackhole/noc_nonblocking_api.h` @032d7e7c |
//! | tt-metal wh `dev_mem_map.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/wormhole/dev_mem_map.h` @009581cb |
//! | tt-metal bh `dev_mem_map.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/blackhole/dev_mem_map.h` @0079e942 |
//! | tt-metal wh `tensix.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/wormhole/tensix.h` @77fb6cb7 |
//! | tt-metal bh `tensix.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/blackhole/tensix.h` @923559eb |
//! | tt-metal wh `cfg_defines.h` | tenstorrent/tt-metal `tt_metal/hw/inc/internal/tt-1xx/wormhole/wormhole_b0_defines/cfg_defines.h` @47ad2f56 |
//! | tt-isa `WormholeB0/…` | tenstorrent/tt-isa-documentation `WormholeB0/…` @39304719 |
//! | tt-isa `BlackholeA0/…` | tenstorrent/tt-isa-documentation `BlackholeA0/…` @2c2c43b3 (PCIe pages: the jasondavies fork @e739ac02) |
//! | tt-kmd `wormhole.c` / `blackhole.c` / `ioctl.h` | tenstorrent/tt-kmd @4af71921 |
//! | blackhole-py `hw.py` / `device.py` / `dram.py` | boopdotpng/tenstorrent-python-driver @06b001ee |
//!
//! The research notes behind these (with the conflicts between sources) are
//! in the issue-25 research files; the open questions are listed in each
//! module's docs.

pub mod address_map;
pub mod arc;
pub mod bar;
pub mod niu;
pub mod noc_addr;
pub mod noc_cmd;
mod noc_id;
pub mod tensix;
pub mod tlb;
pub mod translate;

pub use noc_id::Noc;

/// A chip architecture cqlab models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// Wormhole B0 (n150, and the PCIe-attached chip of an n300).
    Wormhole,
    /// Blackhole (p100a, p150a).
    Blackhole,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::Wormhole, Arch::Blackhole];

    /// The architecture's facts, for code that picks the chip at run time.
    pub const fn params(self) -> &'static ArchParams {
        match self {
            Arch::Wormhole => &WORMHOLE,
            Arch::Blackhole => &BLACKHOLE,
        }
    }

    /// Lower-case name used in messages and file names.
    pub const fn name(self) -> &'static str {
        match self {
            Arch::Wormhole => "wormhole_b0",
            Arch::Blackhole => "blackhole",
        }
    }

    /// The short name of firmware build directories and features
    /// (`target/<triple>/firmware/<short_name>/`, cargo feature
    /// `arch-<short_name>` of cqlab-kernels).
    pub const fn short_name(self) -> &'static str {
        match self {
            Arch::Wormhole => "wormhole",
            Arch::Blackhole => "blackhole",
        }
    }

    /// The `arch_name` value of a tt-umd SoC descriptor (tt-umd
    /// `device/soc_arch_descriptor.cpp` `SocArchDescriptor::load_from_yaml`,
    /// schema `docs/yaml_schemas/soc_descriptor.yaml`).
    pub const fn umd_arch_name(self) -> &'static str {
        match self {
            Arch::Wormhole => "WORMHOLE_B0",
            Arch::Blackhole => "BLACKHOLE",
        }
    }
}

impl core::fmt::Display for Arch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Width and height of the NOC grid, in tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GridSize {
    pub x: u8,
    pub y: u8,
}

/// Every per-architecture fact shared by firmware, simulator and driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArchParams {
    pub arch: Arch,
    /// NOC grid including every tile kind.
    pub grid: GridSize,
    /// The RISC-V / NOC / Tensix clock (AICLK busy value); the wall clock
    /// counts these cycles.
    pub clock_hz: u64,
    /// Tensix L1 bytes, mapped at address 0 of every Tensix tile.
    pub l1_size: u32,
    /// Ethernet-tile L1 bytes as tt-umd's descriptors state it.
    pub eth_l1_size: u32,
    /// The NIU register blocks of both NOCs.
    pub niu: niu::NiuLayout,
    /// Packet, flit and alignment limits, and how a 64-bit NOC address
    /// splits into the command-buffer address registers.
    pub noc: noc_addr::NocParams,
    /// Where the chip puts each tile kind in translated coordinates.
    pub translate: translate::TranslateParams,
    /// The five RISC-V cores of a Tensix tile: local memories, reset PCs.
    pub tensix: tensix::TensixParams,
    /// The RISC-V address map of a Tensix tile.
    pub address_map: &'static [address_map::Range],
    /// PCI ids, BAR layout, TLB windows, host memory seen from the PCIe tile.
    pub bar: bar::BarLayout,
    /// What a host reads from ARC at open.
    pub arc: arc::ArcParams,
    /// Bytes of one GDDR6 channel in a DRAM tile's address space: a tile
    /// (tt-umd channel) whose memory is larger holds several channels one
    /// after another, each with its own data path.
    pub gddr_channel_bytes: u64,
}

/// Wormhole B0.
pub const WORMHOLE: ArchParams = ArchParams {
    arch: Arch::Wormhole,
    // tt-umd `wormhole_implementation.hpp` GRID_SIZE {10, 12}; tt-isa
    // `WormholeB0/NoC/MemoryMap.md` NOC_NODE_ID width 10, height 12.
    grid: GridSize { x: 10, y: 12 },
    // tt-umd `wormhole_implementation.hpp` AICLK_BUSY_VAL 1000 (MHz); tt-isa
    // `WormholeB0/TensixTile/BabyRISCV/README.md` (1 GHz RISC-V cores).
    clock_hz: 1_000_000_000,
    // tt-umd `wormhole_implementation.hpp` TENSIX_L1_SIZE 1499136; tt-metal wh
    // `dev_mem_map.h` MEM_L1_SIZE (1464 * 1024).
    l1_size: 1464 * 1024,
    // tt-umd `wormhole_implementation.hpp` ETH_L1_SIZE 262144.
    eth_l1_size: 256 * 1024,
    niu: niu::WORMHOLE,
    noc: noc_addr::WORMHOLE,
    translate: translate::WORMHOLE,
    tensix: tensix::WORMHOLE,
    address_map: address_map::WORMHOLE,
    bar: bar::WORMHOLE,
    arc: arc::WORMHOLE,
    // tt-isa `WormholeB0/DRAMTile/README.md`, "NoC to DRAM tile": GDDR6
    // channel 0 at 0, channel 1 at 1 GiB (tt-metal's two banks a channel).
    gddr_channel_bytes: 1 << 30,
};

/// Blackhole.
pub const BLACKHOLE: ArchParams = ArchParams {
    arch: Arch::Blackhole,
    // tt-umd `blackhole_implementation.hpp` GRID_SIZE {17, 12}; tt-isa
    // `BlackholeA0/NoC/MemoryMap.md` NOC_NODE_ID width 17, height 12.
    grid: GridSize { x: 17, y: 12 },
    // tt-umd `blackhole_implementation.hpp` AICLK_BUSY_VAL 1350 (MHz); tt-isa
    // `BlackholeA0/TensixTile/BabyRISCV/README.md` (1.35 GHz).
    clock_hz: 1_350_000_000,
    // tt-umd `blackhole_implementation.hpp` TENSIX_L1_SIZE 1572864; tt-metal bh
    // `dev_mem_map.h` MEM_L1_SIZE (1536 * 1024).
    l1_size: 1536 * 1024,
    // tt-umd `blackhole_implementation.hpp` ETH_L1_SIZE 262144 (the hardware
    // has 512 KiB: tt-metal bh `dev_mem_map.h` MEM_ETH_SIZE; cqlab does not
    // model Ethernet tiles).
    eth_l1_size: 256 * 1024,
    niu: niu::BLACKHOLE,
    noc: noc_addr::BLACKHOLE,
    translate: translate::BLACKHOLE,
    tensix: tensix::BLACKHOLE,
    address_map: address_map::BLACKHOLE,
    bar: bar::BLACKHOLE,
    arc: arc::BLACKHOLE,
    // One GDDR6 channel a DRAM tile: 8 tiles, 8 GDDR6 channels (Blackhole
    // product overview, "8 GDDR6 channels", 32 GB), so a tile's whole
    // `dram_bank_size` (tt-umd `tests/soc_descs/blackhole_140_arch.yaml`, 4 GiB;
    // `soc_descriptors/` before tt-umd b91d5b7).
    gddr_channel_bytes: 4 << 30,
};
