//! A Tensix tile's registers as its five cores, the NOC and the host see
//! them: the two NIUs (`niu`), `RISCV_DEBUG_REG_SOFT_RESET_0`, the reset-PC
//! overrides (Wormhole: Tensix configuration words only BRISC and the
//! TRISCs may write; Blackhole: debug registers anyone may write), the wall
//! clock; and the [`TileBus`] a core's hart sends its non-RAM accesses to.
//!
//! Every other address of the tile's map (`arch::address_map`) that the
//! model does not hold halts the core with an error naming the region: the
//! Tensix coprocessor above all, but also the NOC overlay, TDMA-RISC, the
//! PIC, NCRISC's IRAM and Blackhole's shared path to local memory.

use crate::hart::{AccessFault, Bus, Loaded, StoreEffect};
use crate::memory::Memory;
use crate::niu::{Kind, Niu};
use crate::noc::Target;
use crate::request::{Issued, Resolver};
use cqlab_abi::arch::address_map::{region_of, Region};
use cqlab_abi::arch::niu::{CmdBufReg, NiuReg};
use cqlab_abi::arch::tensix::{self, Processor, ResetPcWriters};
use cqlab_abi::arch::{ArchParams, Noc};
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::ChipLayout;

/// A core of a Tensix tile: the tile's translated coordinates and which of
/// its five cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoreId {
    pub tile: Coord,
    pub processor: Processor,
}

impl std::fmt::Display for CoreId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.tile, self.processor)
    }
}

/// The reset-PC override registers' values, in `ResetPcRegs` order:
/// TRISC0..2 PC, TRISC override enables, NCRISC PC, NCRISC override enable.
const RESET_PC_REGS: usize = 6;

/// The registers of one Tensix tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensixRegs {
    pub soft_reset: u32,
    reset_pc: [u32; RESET_PC_REGS],
    pub niu: [Niu; 2],
    /// `WALL_CLOCK_H` as latched by the last read of `WALL_CLOCK_L`.
    wall_high: u32,
}

/// What an access to a tile register found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegAccess {
    SoftReset,
    ResetPc(usize),
    WallClockLow,
    WallClockHighLive,
    WallClockHigh,
}

impl TensixRegs {
    /// At power-on: every core held (`SOFT_RESET_ALL`), no override.
    pub fn new(layout: &ChipLayout, noc0: Coord) -> Self {
        TensixRegs {
            soft_reset: tensix::SOFT_RESET_ALL,
            reset_pc: [0; RESET_PC_REGS],
            niu: [Niu::new(layout, Noc::Noc0, noc0), Niu::new(layout, Noc::Noc1, noc0)],
            wall_high: 0,
        }
    }

    /// The PC core `p` starts at when released: BRISC 0 (hard-wired), the
    /// others their override when its enable bit is set, else their default.
    pub fn reset_pc(&self, chip: &ArchParams, p: Processor) -> u32 {
        let regs = chip.tensix.reset_pc;
        match regs.for_processor(p) {
            None => tensix::BRISC_RESET_PC,
            Some((pc, enable, bit)) => {
                let v = |a: u32| self.reset_pc[reset_pc_index(chip, a).expect("a reset-PC register")];
                if v(enable) & bit != 0 {
                    v(pc)
                } else {
                    chip.tensix.default_reset_pc(p)
                }
            }
        }
    }

    /// The debug or reset-PC register at `addr`, if cqlab models it.
    pub fn decode(chip: &ArchParams, addr: u32) -> Option<RegAccess> {
        Some(match addr {
            tensix::SOFT_RESET_0 => RegAccess::SoftReset,
            tensix::WALL_CLOCK_L => RegAccess::WallClockLow,
            tensix::WALL_CLOCK_H_LIVE => RegAccess::WallClockHighLive,
            tensix::WALL_CLOCK_H => RegAccess::WallClockHigh,
            _ => RegAccess::ResetPc(reset_pc_index(chip, addr)?),
        })
    }

    /// Reads register `r` at cycle `now`.
    pub fn read(&mut self, r: RegAccess, now: u64) -> u32 {
        match r {
            RegAccess::SoftReset => self.soft_reset,
            RegAccess::ResetPc(i) => self.reset_pc[i],
            RegAccess::WallClockLow => {
                self.wall_high = (now >> 32) as u32;
                now as u32
            }
            RegAccess::WallClockHighLive => (now >> 32) as u32,
            RegAccess::WallClockHigh => self.wall_high,
        }
    }

    /// Writes register `r`; `Err` for the read-only clock.
    pub fn write(&mut self, r: RegAccess, value: u32) -> Result<(), &'static str> {
        match r {
            RegAccess::SoftReset => self.soft_reset = value,
            RegAccess::ResetPc(i) => self.reset_pc[i] = value,
            RegAccess::WallClockLow | RegAccess::WallClockHighLive | RegAccess::WallClockHigh => {
                return Err("the wall clock is read-only")
            }
        }
        Ok(())
    }
}

/// Index of reset-PC register `addr` in `TensixRegs::reset_pc`.
fn reset_pc_index(chip: &ArchParams, addr: u32) -> Option<usize> {
    let r = chip.tensix.reset_pc;
    [r.trisc_pc[0], r.trisc_pc[1], r.trisc_pc[2], r.trisc_override, r.ncrisc_pc, r.ncrisc_override]
        .iter()
        .position(|&a| a == addr)
}

/// Whether agent `who` (a core of the tile, or `None` for the NOC and the
/// host) may access the reset-PC registers on `chip`.
pub fn may_write_reset_pc(chip: &ArchParams, who: Option<Processor>) -> Result<(), &'static str> {
    match (chip.tensix.reset_pc.writers, who) {
        (ResetPcWriters::Anyone, _) => Ok(()),
        (ResetPcWriters::BriscAndTriscs, Some(Processor::Ncrisc)) => {
            Err("NCRISC cannot reach the Tensix configuration that holds Wormhole's reset PCs")
        }
        (ResetPcWriters::BriscAndTriscs, Some(_)) => Ok(()),
        (ResetPcWriters::BriscAndTriscs, None) => {
            Err("Wormhole's reset-PC registers are Tensix configuration, not reachable over the NOC")
        }
    }
}

/// Whether the NOC or the host may read (or write) tile register `addr`:
/// `SOFT_RESET_0`, the wall clock (read), Blackhole's reset PCs, and the
/// NIUs' configuration and counters (read).
pub fn remote_reg(chip: &ArchParams, addr: u32, write: bool) -> Result<(), &'static str> {
    match TensixRegs::decode(chip, addr) {
        Some(RegAccess::ResetPc(_)) => may_write_reset_pc(chip, None),
        Some(RegAccess::WallClockLow | RegAccess::WallClockHigh | RegAccess::WallClockHighLive) if write => {
            Err("the wall clock is read-only")
        }
        Some(_) => Ok(()),
        None => match chip.niu.decode(addr) {
            Some((_, NiuReg::Cfg(_) | NiuReg::Status(_))) if !write => Ok(()),
            Some(_) => Err(
                "an NIU's command buffers belong to the tile's cores; the NOC reads its NOC_CFG and NOC_STATUS only",
            ),
            None => {
                Err("cqlab models SOFT_RESET_0, the wall clock, the reset PCs and the NIU registers of a tile only")
            }
        },
    }
}

/// The name of the region holding `addr` for an access cqlab does not
/// model, or `None` for an unmapped address.
pub fn unmodelled(chip: &ArchParams, addr: u32) -> Option<&'static str> {
    region_of(chip.address_map, addr).map(|r| match r {
        Region::TensixConfig => "the Tensix backend configuration (Tensix coprocessor)",
        Region::TensixMopCfg => "the Tensix MOP expander configuration (Tensix coprocessor)",
        Region::TensixDst => "the Tensix Dst register file (Tensix coprocessor)",
        Region::TensixGpr => "the Tensix GPRs (Tensix coprocessor)",
        Region::TensixInstrPush => "the Tensix instruction push (Tensix coprocessor)",
        Region::TensixPcBuf => "the Tensix PCBufs, TTSync and semaphores (Tensix coprocessor)",
        Region::TensixMailbox => "the Tensix mailboxes (Tensix coprocessor)",
        Region::DebugRegs => "this tile debug register (cqlab models SOFT_RESET_0, the wall clock and the reset PCs)",
        Region::LocalMemAlias(_) => "Blackhole's shared path to a core's local data RAM",
        Region::TdmaRisc => "TDMA-RISC",
        Region::Pic => "the PIC",
        Region::Overlay => "the NOC overlay",
        Region::NcriscIram => "NCRISC's instruction RAM",
        Region::Niu(_) => "this NIU register",
        Region::L1 | Region::LocalMem => "this memory range",
    })
}

/// The bus a core of a Tensix tile sees beyond its L1 and local memory.
pub struct TileBus<'a> {
    pub chip: &'static ArchParams,
    pub processor: Processor,
    /// The tile: its index in the chip and its NOC0 coordinates.
    pub tile: usize,
    pub me: Coord,
    pub regs: &'a mut TensixRegs,
    /// Checks and resolves each request when it is issued.
    pub resolver: &'a Resolver<'a>,
    /// Requests issued during the run, in order.
    pub issued: &'a mut Vec<Issued>,
    /// Cycles a command buffer reads busy after `NOC_CMD_CTRL` is written.
    pub accept_cycles: u64,
    /// Set when the core wrote `SOFT_RESET_0` or a reset PC: the chip acts.
    pub reset_written: &'a mut bool,
}

impl TileBus<'_> {
    fn word(size: u32) -> Result<(), AccessFault> {
        if size == 4 {
            Ok(())
        } else {
            Err(AccessFault::Rejected("registers take aligned 32-bit accesses"))
        }
    }

    fn other(&self, addr: u32) -> AccessFault {
        match unmodelled(self.chip, addr) {
            // L1 and local memory out of range of this core: unmapped.
            Some(_) if matches!(region_of(self.chip.address_map, addr), Some(Region::L1 | Region::LocalMem)) => {
                AccessFault::Unmapped
            }
            Some(what) => AccessFault::NotModelled(what),
            None => AccessFault::Unmapped,
        }
    }
}

/// An NIU register that may read another value without a store: a command
/// buffer's `NOC_CMD_CTRL`, busy until accepted, clears with time alone.
fn is_volatile(reg: NiuReg) -> bool {
    matches!(reg, NiuReg::CmdBuf { reg: CmdBufReg::CmdCtrl, .. })
}

impl Bus for TileBus<'_> {
    #[inline(always)]
    fn load_plain_register(&mut self, addr: u32, now: u64) -> Option<Loaded> {
        let (noc, reg) = self.chip.niu.decode(addr)?;
        let value = self.regs.niu[noc.index() as usize].read_plain(reg, now)?;
        Some(Loaded { value, volatile: is_volatile(reg) })
    }

    #[inline(always)]
    fn store_plain_register(&mut self, addr: u32, value: u32) -> bool {
        match self.chip.niu.decode(addr) {
            Some((noc, NiuReg::CmdBuf { buf, reg })) => {
                self.regs.niu[noc.index() as usize].store_plain(buf, reg, value)
            }
            _ => false,
        }
    }

    fn load(&mut self, _mem: &mut Memory, addr: u32, size: u32, now: u64) -> Result<Loaded, AccessFault> {
        if let Some((noc, reg)) = self.chip.niu.decode(addr) {
            Self::word(size)?;
            let value = self.regs.niu[noc.index() as usize].read(reg, now)?;
            return Ok(Loaded { value, volatile: is_volatile(reg) });
        }
        match TensixRegs::decode(self.chip, addr) {
            Some(r) => {
                Self::word(size)?;
                if let RegAccess::ResetPc(_) = r {
                    may_write_reset_pc(self.chip, Some(self.processor)).map_err(AccessFault::Rejected)?;
                }
                let volatile =
                    matches!(r, RegAccess::WallClockLow | RegAccess::WallClockHighLive | RegAccess::WallClockHigh);
                Ok(Loaded { value: self.regs.read(r, now), volatile })
            }
            None => Err(self.other(addr)),
        }
    }

    fn store(
        &mut self,
        _mem: &mut Memory,
        addr: u32,
        size: u32,
        value: u32,
        now: u64,
    ) -> Result<StoreEffect, AccessFault> {
        if let Some((noc, reg)) = self.chip.niu.decode(addr) {
            Self::word(size)?;
            let niu = &mut self.regs.niu[noc.index() as usize];
            if let Some(request) = niu.write(reg, value, now, self.accept_cycles)? {
                let issued = self.resolver.issue(self.tile, self.me, self.processor, &request)?;
                // A request to another tile's register: only those the NOC may reach.
                if let Target::Reg { addr, .. } = issued.target {
                    let write = !matches!(issued.kind, Kind::Read);
                    remote_reg(self.chip, addr, write).map_err(AccessFault::Rejected)?;
                }
                self.issued.push(issued);
                // The scheduler may look for an idle loop after each issue.
                return Ok(StoreEffect::Yield);
            }
            return Ok(StoreEffect::Continue);
        }
        match TensixRegs::decode(self.chip, addr) {
            Some(r) => {
                Self::word(size)?;
                if let RegAccess::ResetPc(_) = r {
                    may_write_reset_pc(self.chip, Some(self.processor)).map_err(AccessFault::Rejected)?;
                }
                self.regs.write(r, value).map_err(AccessFault::Rejected)?;
                *self.reset_written = true;
                Ok(StoreEffect::Yield)
            }
            None => Err(self.other(addr)),
        }
    }
}
