//! The address map a Tensix RISC-V core sees, so the simulator can say what
//! an access touched, and report Tensix-coprocessor accesses (not modelled)
//! by name.
//!
//! Ranges: tt-isa `WormholeB0/TensixTile/BabyRISCV/README.md` and
//! `BlackholeA0/TensixTile/BabyRISCV/README.md`, "Memory map" (the symbol in
//! the table is named beside each range). Ends are inclusive.

use super::noc_id::Noc;
use super::tensix::Processor;

/// What an address range holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// `MEM_L1_BASE`: the tile's L1.
    L1,
    /// `MEM_LOCAL_BASE`: the accessing core's own data RAM (size per core in
    /// `TensixParams::local_mem`).
    LocalMem,
    /// Blackhole: another path to a core's data RAM, reachable by any core
    /// and over the NOC.
    LocalMemAlias(Processor),
    /// `RISCV_TDMA_REGS_START_ADDR`: TDMA-RISC (the mover).
    TdmaRisc,
    /// `RISCV_DEBUG_REGS_START_ADDR`: tile control / debug / status (soft
    /// reset, wall clock, Blackhole reset PCs).
    DebugRegs,
    /// PIC configuration and status (Blackhole: `RISC_PIC_BASE`, followed by
    /// the PC snapshots).
    Pic,
    /// `NOC0_REGS_START_ADDR` / `NOC1_REGS_START_ADDR`.
    Niu(Noc),
    /// `NOC_OVERLAY_START_ADDR`: the NOC overlay (streams).
    Overlay,
    /// `MEM_NCRISC_IRAM_BASE` (Wormhole): NCRISC instruction RAM, fetch only.
    NcriscIram,
    /// `TENSIX_MOP_CFG_BASE`: MOP expander configuration (TRISCs).
    TensixMopCfg,
    /// Blackhole: the Tensix `Dst` register file seen from the TRISCs.
    TensixDst,
    /// `REGFILE_BASE`: Tensix GPRs.
    TensixGpr,
    /// `INSTRN_BUF_BASE`, `INSTRN1_BUF_BASE`, `INSTRN2_BUF_BASE`: push a
    /// Tensix instruction.
    TensixInstrPush,
    /// `PC_BUF_BASE`, `PC1_BUF_BASE`, `PC2_BUF_BASE`: PCBufs, TTSync, Tensix
    /// semaphores.
    TensixPcBuf,
    /// `TENSIX_MAILBOX0_BASE`..`TENSIX_MAILBOX3_BASE`.
    TensixMailbox,
    /// `TENSIX_CFG_BASE`: Tensix backend configuration (on Wormhole it also
    /// holds the TRISC/NCRISC reset-PC registers, see `tensix::WORMHOLE`).
    TensixConfig,
}

impl Region {
    /// Part of the Tensix coprocessor, which cqlab does not model: an access
    /// is reported as an error naming the address.
    pub const fn is_tensix_coprocessor(self) -> bool {
        matches!(
            self,
            Region::TensixMopCfg
                | Region::TensixDst
                | Region::TensixGpr
                | Region::TensixInstrPush
                | Region::TensixPcBuf
                | Region::TensixMailbox
                | Region::TensixConfig
        )
    }

    pub const fn name(self) -> &'static str {
        match self {
            Region::L1 => "L1",
            Region::LocalMem => "local data RAM",
            Region::LocalMemAlias(_) => "local data RAM (shared path)",
            Region::TdmaRisc => "TDMA-RISC",
            Region::DebugRegs => "tile debug registers",
            Region::Pic => "PIC",
            Region::Niu(Noc::Noc0) => "NOC0 NIU",
            Region::Niu(Noc::Noc1) => "NOC1 NIU",
            Region::Overlay => "NOC overlay",
            Region::NcriscIram => "NCRISC IRAM",
            Region::TensixMopCfg => "Tensix MOP expander config",
            Region::TensixDst => "Tensix Dst",
            Region::TensixGpr => "Tensix GPRs",
            Region::TensixInstrPush => "Tensix instruction push",
            Region::TensixPcBuf => "Tensix PCBuf/TTSync/semaphores",
            Region::TensixMailbox => "Tensix mailboxes",
            Region::TensixConfig => "Tensix backend config",
        }
    }
}

/// An inclusive address range and what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: u32,
    pub end: u32,
    pub region: Region,
}

const fn r(start: u32, end: u32, region: Region) -> Range {
    Range { start, end, region }
}

/// The region `addr` falls in, or `None` for an unmapped address (a load
/// from which hangs a real core: tt-isa `BabyRISCV/README.md` "Faults").
pub const fn region_of(map: &[Range], addr: u32) -> Option<Region> {
    let mut i = 0;
    while i < map.len() {
        if addr >= map[i].start && addr <= map[i].end {
            return Some(map[i].region);
        }
        i += 1;
    }
    None
}

/// Wormhole B0. L1 ends at 1464 KiB (0x16DFFF; the ISA table prints
/// 0x16FFFF, but its own size says 1464 KiB, as does tt-metal wh
/// `dev_mem_map.h` MEM_L1_SIZE).
pub const WORMHOLE: &[Range] = &[
    r(0x0000_0000, 0x0016_DFFF, Region::L1),              // MEM_L1_BASE
    r(0xFFB0_0000, 0xFFB0_0FFF, Region::LocalMem),        // MEM_LOCAL_BASE (T0-T2: 0x7FF)
    r(0xFFB1_1000, 0xFFB1_1FFF, Region::TdmaRisc),        // RISCV_TDMA_REGS_START_ADDR
    r(0xFFB1_2000, 0xFFB1_2FFF, Region::DebugRegs),       // RISCV_DEBUG_REGS_START_ADDR
    r(0xFFB1_3000, 0xFFB1_3FFF, Region::Pic),             // PIC
    r(0xFFB2_0000, 0xFFB2_FFFF, Region::Niu(Noc::Noc0)),  // NOC0_REGS_START_ADDR
    r(0xFFB3_0000, 0xFFB3_FFFF, Region::Niu(Noc::Noc1)),  // NOC1_REGS_START_ADDR
    r(0xFFB4_0000, 0xFFB7_FFFF, Region::Overlay),         // NOC_OVERLAY_START_ADDR
    r(0xFFB8_0000, 0xFFB8_0023, Region::TensixMopCfg),    // TENSIX_MOP_CFG_BASE
    r(0xFFC0_0000, 0xFFC0_FFFF, Region::NcriscIram),      // MEM_NCRISC_IRAM_BASE
    r(0xFFE0_0000, 0xFFE0_0FFF, Region::TensixGpr),       // REGFILE_BASE
    r(0xFFE4_0000, 0xFFE6_FFFF, Region::TensixInstrPush), // INSTRN_BUF_BASE..INSTRN2_BUF_BASE
    r(0xFFE8_0000, 0xFFEA_FFFF, Region::TensixPcBuf),     // PC_BUF_BASE..PC2_BUF_BASE
    r(0xFFEC_0000, 0xFFEC_3FFF, Region::TensixMailbox),   // TENSIX_MAILBOX0..3_BASE
    r(0xFFEF_0000, 0xFFEF_FFFF, Region::TensixConfig),    // TENSIX_CFG_BASE
];

/// Blackhole.
pub const BLACKHOLE: &[Range] = &[
    r(0x0000_0000, 0x0017_FFFF, Region::L1),        // MEM_L1_BASE
    r(0xFFB0_0000, 0xFFB0_1FFF, Region::LocalMem),  // MEM_LOCAL_BASE (T0-T2: 0xFFF)
    r(0xFFB1_1000, 0xFFB1_1FFF, Region::TdmaRisc),  // RISCV_TDMA_REGS_START_ADDR
    r(0xFFB1_2000, 0xFFB1_2FFF, Region::DebugRegs), // RISCV_DEBUG_REGS_START_ADDR
    r(0xFFB1_3000, 0xFFB1_314B, Region::Pic),       // RISC_PIC_BASE + pc snapshots
    r(0xFFB1_4000, 0xFFB1_5FFF, Region::LocalMemAlias(Processor::Brisc)), // B (slow path)
    r(0xFFB1_6000, 0xFFB1_7FFF, Region::LocalMemAlias(Processor::Ncrisc)), // NC
    r(0xFFB1_8000, 0xFFB1_9FFF, Region::LocalMemAlias(Processor::Trisc0)), // T0
    r(0xFFB1_A000, 0xFFB1_BFFF, Region::LocalMemAlias(Processor::Trisc1)), // T1
    r(0xFFB1_C000, 0xFFB1_DFFF, Region::LocalMemAlias(Processor::Trisc2)), // T2
    r(0xFFB2_0000, 0xFFB2_FFFF, Region::Niu(Noc::Noc0)), // NOC0_REGS_START_ADDR
    r(0xFFB3_0000, 0xFFB3_FFFF, Region::Niu(Noc::Noc1)), // NOC1_REGS_START_ADDR
    r(0xFFB4_0000, 0xFFB7_FFFF, Region::Overlay),   // NOC_OVERLAY_START_ADDR
    r(0xFFB8_0000, 0xFFB8_0023, Region::TensixMopCfg), // TENSIX_MOP_CFG_BASE
    r(0xFFBD_8000, 0xFFBD_FFFF, Region::TensixDst), // Tensix Dst (T0-T2)
    r(0xFFE0_0000, 0xFFE0_0FFF, Region::TensixGpr), // REGFILE_BASE
    r(0xFFE4_0000, 0xFFE6_FFFF, Region::TensixInstrPush), // INSTRN_BUF_BASE..INSTRN2_BUF_BASE
    r(0xFFE8_0000, 0xFFEA_FFFF, Region::TensixPcBuf), // PC_BUF_BASE..PC2_BUF_BASE
    r(0xFFEC_0000, 0xFFEC_3FFF, Region::TensixMailbox), // TENSIX_MAILBOX0..3_BASE
    r(0xFFEF_0000, 0xFFEF_FFFF, Region::TensixConfig), // TENSIX_CFG_BASE
];
