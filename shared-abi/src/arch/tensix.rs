//! The five RISC-V cores of a Tensix tile: their soft-reset bits, reset PCs,
//! local data memories, and the tile's debug registers (soft reset, wall
//! clock).
//!
//! Reset (tt-isa `WormholeB0/TensixTile/SoftReset.md`,
//! `BlackholeA0/TensixTile/SoftReset.md`): `RISCV_DEBUG_REG_SOFT_RESET_0` holds
//! one bit per core; a set bit holds the core in reset. BRISC always starts at
//! address 0 (tt-metal writes a `jal` to its firmware there). The others start
//! at a default PC unless an override bit is set, then at a PC register. On
//! Wormhole those registers are Tensix backend-configuration words that only
//! BRISC and the TRISCs can write (not NCRISC, not the NOC); on Blackhole they
//! are debug registers anyone can write.

/// A RISC-V core of a Tensix tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Processor {
    /// RISCV B, tt-metal's DM0.
    Brisc,
    /// RISCV NC, tt-metal's DM1.
    Ncrisc,
    /// RISCV T0 (unpack).
    Trisc0,
    /// RISCV T1 (math).
    Trisc1,
    /// RISCV T2 (pack).
    Trisc2,
}

impl Processor {
    /// In tt-metal's order (tt-metal `core_config.h` `TensixProcessorTypes`
    /// DM0 = 0, DM1 = 1, MATH0..2 = 2..4).
    pub const ALL: [Processor; 5] =
        [Processor::Brisc, Processor::Ncrisc, Processor::Trisc0, Processor::Trisc1, Processor::Trisc2];
    /// The three TRISCs, which one compute kernel runs on with one set of
    /// runtime args (tt-metal `tt_metal/hw/inc/dev_msgs.h`: runtime-arg
    /// offsets are kept per processor class, `DISPATCH_CLASS_TENSIX_DM0`,
    /// `DM1` and `COMPUTE`).
    pub const COMPUTE: [Processor; 3] = [Processor::Trisc0, Processor::Trisc1, Processor::Trisc2];

    /// Index in [`ALL`](Self::ALL).
    pub const fn index(self) -> usize {
        match self {
            Processor::Brisc => 0,
            Processor::Ncrisc => 1,
            Processor::Trisc0 => 2,
            Processor::Trisc1 => 3,
            Processor::Trisc2 => 4,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Processor::Brisc => "brisc",
            Processor::Ncrisc => "ncrisc",
            Processor::Trisc0 => "trisc0",
            Processor::Trisc1 => "trisc1",
            Processor::Trisc2 => "trisc2",
        }
    }

    /// Its bit number in `RISCV_DEBUG_REG_SOFT_RESET_0` (tt-umd
    /// `wormhole_implementation.hpp` and `blackhole_implementation.hpp`
    /// SOFT_RESET_BRISC 1 << 11, SOFT_RESET_TRISC0..2 1 << 12..14,
    /// SOFT_RESET_NCRISC 1 << 18).
    pub const fn soft_reset_bit(self) -> u32 {
        match self {
            Processor::Brisc => 11,
            Processor::Trisc0 => 12,
            Processor::Trisc1 => 13,
            Processor::Trisc2 => 14,
            Processor::Ncrisc => 18,
        }
    }

    pub const fn soft_reset_mask(self) -> u32 {
        1 << self.soft_reset_bit()
    }

    /// Index among the TRISCs (0..=2), for the reset-PC registers.
    pub const fn trisc_index(self) -> Option<usize> {
        match self {
            Processor::Trisc0 => Some(0),
            Processor::Trisc1 => Some(1),
            Processor::Trisc2 => Some(2),
            Processor::Brisc | Processor::Ncrisc => None,
        }
    }
}

impl core::fmt::Display for Processor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Base of the tile control / debug / status registers
/// (`RISCV_DEBUG_REGS_START_ADDR`, tt-metal wh and bh `tensix.h`).
pub const DEBUG_REGS_BASE: u32 = 0xFFB1_2000;
/// `RISCV_DEBUG_REG_SOFT_RESET_0` (tt-metal wh and bh `tensix.h`; tt-umd
/// `*_implementation.hpp` TENSIX_SOFT_RESET_ADDR 0xFFB121B0). Reachable over
/// the NOC at the same address.
pub const SOFT_RESET_0: u32 = 0xFFB1_21B0;
/// All five cores held (tt-metal `tensix.h` RISCV_SOFT_RESET_0_BRISC 0x800 |
/// _TRISCS 0x7000 | _NCRISC 0x40000; blackhole-py `hw.py` SOFT_RESET_ALL).
pub const SOFT_RESET_ALL: u32 = 0x4_7800;
/// All but BRISC held: BRISC runs and releases the others (blackhole-py
/// `hw.py` SOFT_RESET_BRISC_ONLY_RUN; tt-umd `cluster.cpp`
/// ALL_TENSIX & ~BRISC).
pub const SOFT_RESET_BRISC_ONLY_RUN: u32 = 0x4_7000;
/// tt-umd's "staggered start" flag, OR-ed in when BRISC is released
/// (`*_implementation.hpp` SOFT_RESET_STAGGERED_START 1 << 31); the ISA docs
/// say bits this high have no effect.
pub const SOFT_RESET_STAGGERED_START: u32 = 1 << 31;

/// `RISCV_DEBUG_REG_WALL_CLOCK_L` (tt-metal `tensix.h`): low 32 bits of the
/// 64-bit cycle counter; reading it latches the high half into
/// [`WALL_CLOCK_H`] (tt-isa `WormholeB0/TensixTile/DebugTimestamper.md`, which
/// the Blackhole docs say is unchanged). Counts AICLK cycles
/// ([`ArchParams::clock_hz`](super::ArchParams::clock_hz); blackhole-py
/// `device.py` converts it with 1350 MHz).
pub const WALL_CLOCK_L: u32 = 0xFFB1_21F0;
/// WALL_CLOCK_L + 4: the live high 32 bits (tt-isa DebugTimestamper.md).
pub const WALL_CLOCK_H_LIVE: u32 = 0xFFB1_21F4;
/// `RISCV_DEBUG_REG_WALL_CLOCK_H`: the high half latched by the last read of
/// [`WALL_CLOCK_L`].
pub const WALL_CLOCK_H: u32 = 0xFFB1_21F8;

/// Where every core's private data RAM is mapped (`MEM_LOCAL_BASE`, tt-metal
/// wh and bh `dev_mem_map.h`).
pub const LOCAL_MEM_BASE: u32 = 0xFFB0_0000;
/// BRISC's reset PC, fixed (tt-isa `TensixTile/SoftReset.md`).
pub const BRISC_RESET_PC: u32 = 0;
/// Default reset PCs of TRISC0..2 without an override (tt-isa
/// `WormholeB0/TensixTile/SoftReset.md` and `BlackholeA0/TensixTile/SoftReset.md`).
pub const TRISC_DEFAULT_RESET_PC: [u32; 3] = [0x6000, 0xA000, 0xE000];
/// NCRISC's default reset PC without an override (same source).
pub const NCRISC_DEFAULT_RESET_PC: u32 = 0x1_2000;

/// Which agents can write the reset-PC registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetPcWriters {
    /// Wormhole: Tensix backend configuration, written by `sw` from BRISC and
    /// the TRISCs only; NCRISC and the NOC cannot write it.
    BriscAndTriscs,
    /// Blackhole: debug registers, writable by every core and over the NOC.
    Anyone,
}

/// The registers that override the TRISC and NCRISC reset PCs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResetPcRegs {
    /// PC registers of TRISC0..2.
    pub trisc_pc: [u32; 3],
    /// Override enables: bit i set means TRISC i starts at `trisc_pc[i]`.
    pub trisc_override: u32,
    pub ncrisc_pc: u32,
    /// Bit 0 set means NCRISC starts at `ncrisc_pc`.
    pub ncrisc_override: u32,
    pub writers: ResetPcWriters,
}

impl ResetPcRegs {
    /// The PC register of `p` and the override register and bit that enable
    /// it; `None` for BRISC.
    pub const fn for_processor(&self, p: Processor) -> Option<(u32, u32, u32)> {
        match p {
            Processor::Brisc => None,
            Processor::Ncrisc => Some((self.ncrisc_pc, self.ncrisc_override, 1)),
            Processor::Trisc0 => Some((self.trisc_pc[0], self.trisc_override, 1 << 0)),
            Processor::Trisc1 => Some((self.trisc_pc[1], self.trisc_override, 1 << 1)),
            Processor::Trisc2 => Some((self.trisc_pc[2], self.trisc_override, 1 << 2)),
        }
    }
}

/// Local data RAM per core, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalMemSizes {
    pub brisc: u32,
    pub ncrisc: u32,
    /// Each TRISC.
    pub trisc: u32,
}

/// Per-chip facts of the Tensix tile's cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensixParams {
    pub local_mem: LocalMemSizes,
    pub reset_pc: ResetPcRegs,
    /// Blackhole: each core's local RAM also appears here, reachable from any
    /// core and over the NOC (B, NC, T0, T1, T2 in [`Processor::ALL`] order).
    pub local_mem_alias: Option<[u32; 5]>,
    /// Wormhole: NCRISC's instruction RAM (base, bytes); fetch only.
    pub ncrisc_iram: Option<(u32, u32)>,
    /// Each core's instruction cache, bytes ([`Processor::ALL`] order).
    pub icache: [u32; 5],
}

/// Bytes an instruction cache fetches from L1 at a time: "always 128-bit
/// reads against L1, though each read yields four instructions" (tt-isa
/// `WormholeB0/TensixTile/L1.md`).
pub const ICACHE_FETCH_BYTES: u32 = 16;

impl TensixParams {
    pub const fn local_mem_size(&self, p: Processor) -> u32 {
        match p {
            Processor::Brisc => self.local_mem.brisc,
            Processor::Ncrisc => self.local_mem.ncrisc,
            Processor::Trisc0 | Processor::Trisc1 | Processor::Trisc2 => self.local_mem.trisc,
        }
    }

    /// Bytes of `p`'s instruction cache.
    pub const fn icache_size(&self, p: Processor) -> u32 {
        self.icache[p.index()]
    }

    /// The PC `p` starts at when released with no override set.
    pub const fn default_reset_pc(&self, p: Processor) -> u32 {
        match p {
            Processor::Brisc => BRISC_RESET_PC,
            Processor::Ncrisc => NCRISC_DEFAULT_RESET_PC,
            Processor::Trisc0 => TRISC_DEFAULT_RESET_PC[0],
            Processor::Trisc1 => TRISC_DEFAULT_RESET_PC[1],
            Processor::Trisc2 => TRISC_DEFAULT_RESET_PC[2],
        }
    }
}

/// Wormhole B0.
pub const WORMHOLE: TensixParams = TensixParams {
    local_mem: LocalMemSizes {
        // tt-metal wh `dev_mem_map.h` MEM_BRISC_LOCAL_SIZE 4K,
        // MEM_NCRISC_LOCAL_SIZE 4K, MEM_TRISC_LOCAL_SIZE 2K; tt-isa
        // `WormholeB0/TensixTile/BabyRISCV/README.md` memory map.
        brisc: 4 * 1024,
        ncrisc: 4 * 1024,
        trisc: 2 * 1024,
    },
    // Backend configuration words at TENSIX_CFG_BASE 0xFFEF0000 + 4 * ADDR32
    // (tt-metal wh `cfg_defines.h`): TRISC_RESET_PC_SEC0_PC_ADDR32 158,
    // SEC1 159, SEC2 160, TRISC_RESET_PC_OVERRIDE_Reset_PC_Override_en_ADDR32
    // 161 (mask 0x7), NCRISC_RESET_PC_PC_ADDR32 162,
    // NCRISC_RESET_PC_OVERRIDE_Reset_PC_Override_en_ADDR32 163 (mask 0x1).
    // Who can write them: tt-isa
    // `WormholeB0/TensixTile/TensixCoprocessor/BackendConfiguration.md`.
    reset_pc: ResetPcRegs {
        trisc_pc: [0xFFEF_0278, 0xFFEF_027C, 0xFFEF_0280],
        trisc_override: 0xFFEF_0284,
        ncrisc_pc: 0xFFEF_0288,
        ncrisc_override: 0xFFEF_028C,
        writers: ResetPcWriters::BriscAndTriscs,
    },
    local_mem_alias: None,
    // tt-metal wh `dev_mem_map.h` MEM_NCRISC_IRAM_BASE 0xFFC00000,
    // MEM_NCRISC_IRAM_SIZE 16K.
    ncrisc_iram: Some((0xFFC0_0000, 16 * 1024)),
    // tt-isa `WormholeB0/TensixTile/BabyRISCV/InstructionCache.md`: B 2 KiB,
    // NC 512 B (beside its instruction RAM), T0 2 KiB, T1 512 B, T2 2 KiB.
    icache: [2048, 512, 2048, 512, 2048],
};

/// Blackhole.
pub const BLACKHOLE: TensixParams = TensixParams {
    local_mem: LocalMemSizes {
        // tt-metal bh `dev_mem_map.h` MEM_BRISC_LOCAL_SIZE 8K,
        // MEM_NCRISC_LOCAL_SIZE 8K, MEM_TRISC_LOCAL_SIZE 4K; tt-isa
        // `BlackholeA0/TensixTile/BabyRISCV/README.md` "Local Data RAM".
        brisc: 8 * 1024,
        ncrisc: 8 * 1024,
        trisc: 4 * 1024,
    },
    // tt-metal bh `tensix.h` RISCV_DEBUG_REG_TRISC0_RESET_PC 0xFFB12228,
    // TRISC1 0xFFB1222C, TRISC2 0xFFB12230, RISCV_DEBUG_REG_TRISC_RESET_PC_OVERRIDE
    // 0xFFB12234, RISCV_DEBUG_REG_NCRISC_RESET_PC 0xFFB12238,
    // RISCV_DEBUG_REG_NCRISC_RESET_PC_OVERRIDE 0xFFB1223C; tt-isa
    // `BlackholeA0/TensixTile/SoftReset.md`. blackhole-py `device.py` writes
    // them from the host before releasing BRISC.
    reset_pc: ResetPcRegs {
        trisc_pc: [0xFFB1_2228, 0xFFB1_222C, 0xFFB1_2230],
        trisc_override: 0xFFB1_2234,
        ncrisc_pc: 0xFFB1_2238,
        ncrisc_override: 0xFFB1_223C,
        writers: ResetPcWriters::Anyone,
    },
    // tt-isa `BlackholeA0/TensixTile/BabyRISCV/README.md` memory map (slow
    // access path): B 0xFFB14000, NC 0xFFB16000, T0 0xFFB18000,
    // T1 0xFFB1A000, T2 0xFFB1C000.
    local_mem_alias: Some([0xFFB1_4000, 0xFFB1_6000, 0xFFB1_8000, 0xFFB1_A000, 0xFFB1_C000]),
    // No IRAM on Blackhole (tt-metal `bh_hal.cpp` relocates local segments
    // through L1 instead).
    ncrisc_iram: None,
    // Assumed Wormhole's: tt-isa `BlackholeA0/TensixTile/BabyRISCV/README.md`
    // gives each core an "L0 instruction cache" and links a page of
    // capacities that the sources searched do not hold; a third-party
    // Blackhole emulator's notes list Wormhole's figures
    // (anuraagw.me/folder/blackhole-emulator/instruction-cache).
    icache: [2048, 512, 2048, 512, 2048],
};
