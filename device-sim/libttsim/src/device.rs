//! One simulated chip behind the libttsim calls: a `cqlab_sim::chip::Chip`
//! whose host memory is the host's (the DMA callbacks, through the iATU),
//! its PCI configuration space, its BARs at the physical addresses the
//! configuration space reports, and its counters.
//!
//! - BAR0 and BAR4 are the chip's (`Chip::bar_read`/`bar_write`: TLB
//!   windows, TLB configuration registers, the PCIe tile's NIU, ARC), with
//!   the chip's BAR timing: a read lets the device run for its round trip.
//! - BAR2 holds the outbound iATU ([`crate::iatu`]).
//! - Tile and DRAM access is the direct path (`Chip::write`,
//!   `Chip::host_read`): no TLB, no device time.
//! - `clock(n)` is the host waiting `n` cycles (`Chip::host_poll`: the
//!   device also gets the host time of earlier posted BAR writes).

use crate::config_space::{self, BAR0_BASE, BAR2_BASE, BAR4_BASE};
use crate::dma::{Callbacks, DmaPort};
use crate::error::ApiError;
use crate::iatu::Iatu;
use crate::settings::{host_window, Settings};
use crate::stats::Stats;
use cqlab_abi::arch::{Arch, ArchParams, Noc};
use cqlab_abi::noc::{Coord, NocAddr, BH_PCIE_FLAG, LOCAL_ADDR_MASK};
use cqlab_abi::soc::TileKind;
use cqlab_sim::chip::Chip;
use cqlab_sim::memory::Sysmem;
use std::sync::{Arc, Mutex};

/// Which BAR a physical address is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bar {
    Bar0,
    Bar2,
    Bar4,
}

pub struct Device {
    pub id: u32,
    pub chip: Chip,
    iatu: Arc<Mutex<Iatu>>,
    pub stats: Arc<Stats>,
}

impl Device {
    /// Chip `id` as `settings` configure it, its host memory behind `callbacks`.
    pub fn new(id: u32, settings: &Settings, callbacks: Option<Callbacks>) -> Result<Device, ApiError> {
        let cfg = settings.chip_config(id);
        let arch = cfg.board.arch();
        let iatu = Arc::new(Mutex::new(Iatu::new(arch.params().bar.iatu)));
        let stats = Arc::new(Stats::default());
        let port = DmaPort { chip: id, len: host_window(arch), callbacks, iatu: iatu.clone(), stats: stats.clone() };
        let chip = Chip::with_sysmem(cfg, Sysmem::Host(Box::new(port)))?;
        Ok(Device { id, chip, iatu, stats })
    }

    pub fn arch(&self) -> &'static ArchParams {
        self.chip.arch()
    }

    pub fn config_read(&self, bdf: u32, offset: u32) -> Result<u32, ApiError> {
        Stats::add(&self.stats.config_reads, 1);
        config_space::read(&self.arch().bar, bdf, offset)
    }

    /// The BAR and offset of `size` bytes at physical address `paddr`.
    fn locate(&self, paddr: u64, size: u32) -> Result<(Bar, u64), ApiError> {
        let l = &self.arch().bar;
        for (bar, n, base, len) in [
            (Bar::Bar0, 0, BAR0_BASE, l.bar0_size),
            (Bar::Bar2, 2, BAR2_BASE, l.bar2_size),
            (Bar::Bar4, 4, BAR4_BASE, l.bar4_size),
        ] {
            if (base..base + len).contains(&paddr) {
                let offset = paddr - base;
                if offset + size as u64 > len {
                    return Err(ApiError::PastBar { bar: n, offset, size, bar_size: len });
                }
                return Ok((bar, offset));
            }
        }
        Err(ApiError::NoBar { paddr, size, bar0: BAR0_BASE, bar2: BAR2_BASE, bar4: BAR4_BASE })
    }

    /// Counts a BAR0/BAR4 access by what it reaches.
    fn count_bar(&self, bar: u8, offset: u64, write: bool) {
        let l = &self.arch().bar;
        let s = &self.stats;
        let counter = if l.window_at(bar, offset).is_some() {
            if write {
                &s.tlb_window_writes
            } else {
                &s.tlb_window_reads
            }
        } else if bar == 0 && u32::try_from(offset).ok().and_then(|o| l.tlb_config_at(o)).is_some() && write {
            &s.tlb_config_writes
        } else {
            &s.bar_register_accesses
        };
        Stats::add(counter, 1);
    }

    pub fn bar_read(&mut self, paddr: u64, buf: &mut [u8]) -> Result<(), ApiError> {
        let (bar, offset) = self.locate(paddr, buf.len() as u32)?;
        match bar {
            Bar::Bar2 => {
                let size = buf.len();
                self.iatu_access(offset, |i| i.read(offset, buf), size)
            }
            Bar::Bar0 | Bar::Bar4 => {
                let n = if bar == Bar::Bar0 { 0 } else { 4 };
                self.count_bar(n, offset, false);
                Ok(self.chip.bar_read(n, offset, buf)?)
            }
        }
    }

    pub fn bar_write(&mut self, paddr: u64, data: &[u8]) -> Result<(), ApiError> {
        let (bar, offset) = self.locate(paddr, data.len() as u32)?;
        match bar {
            Bar::Bar2 => self.iatu_access(offset, |i| i.write(offset, data), data.len()),
            Bar::Bar0 | Bar::Bar4 => {
                let n = if bar == Bar::Bar0 { 0 } else { 4 };
                self.count_bar(n, offset, true);
                Ok(self.chip.bar_write(n, offset, data)?)
            }
        }
    }

    fn iatu_access(
        &self,
        offset: u64,
        f: impl FnOnce(&mut Iatu) -> Result<(), &'static str>,
        size: usize,
    ) -> Result<(), ApiError> {
        Stats::add(&self.stats.iatu_accesses, 1);
        let mut i = self.iatu.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut i).map_err(|reason| ApiError::Bar2 { offset, size: size as u32, reason })
    }

    /// The NOC address of `addr` on the tile at (`x`, `y`) (NOC0,
    /// translated coordinates as the chip resolves them).
    fn tile_addr(&self, x: u32, y: u32, addr: u64) -> Result<NocAddr, ApiError> {
        let grid = self.arch().grid;
        if x > 63 || y > 63 {
            return Err(ApiError::OffGrid { x, y, chip: self.arch().arch.name(), grid_x: grid.x, grid_y: grid.y });
        }
        let flag = match self.arch().arch {
            Arch::Blackhole => BH_PCIE_FLAG,
            Arch::Wormhole => 0,
        };
        if addr & !LOCAL_ADDR_MASK & !flag != 0 {
            let hint = if flag != 0 { " (Blackhole host memory adds bit 60)" } else { "" };
            return Err(ApiError::WideAddress { addr, hint });
        }
        Ok(NocAddr::unicast(Coord::new(x as u8, y as u8), addr & LOCAL_ADDR_MASK).with_flags(addr & flag))
    }

    pub fn tile_read(&mut self, x: u32, y: u32, addr: u64, buf: &mut [u8]) -> Result<(), ApiError> {
        Stats::add(&self.stats.tile_reads, 1);
        let a = self.tile_addr(x, y, addr)?;
        Ok(self.chip.host_read(a, buf)?)
    }

    /// `tile_read` that leaves the chip as it was: no posted host write
    /// lands, no time passes (an observer's read, as the embedded
    /// simulator's `peek`).
    pub fn tile_peek(&self, x: u32, y: u32, addr: u64, buf: &mut [u8]) -> Result<(), ApiError> {
        let a = self.tile_addr(x, y, addr)?;
        Ok(self.chip.read(a, buf)?)
    }

    pub fn tile_write(&mut self, x: u32, y: u32, addr: u64, data: &[u8]) -> Result<(), ApiError> {
        Stats::add(&self.stats.tile_writes, 1);
        let a = self.tile_addr(x, y, addr)?;
        Ok(self.chip.write(a, data)?)
    }

    /// The DRAM tile at (`x`, `y`), checked to be one.
    fn dram_tile(&self, x: u32, y: u32, addr: u64) -> Result<NocAddr, ApiError> {
        let a = self.tile_addr(x, y, addr)?;
        let layout = self.chip.layout();
        let tile = layout.resolve(Noc::Noc0, a.coord()).and_then(|c| layout.tile(c));
        match tile.map(|t| t.kind) {
            Some(TileKind::Dram { .. }) => Ok(a),
            Some(kind) => Err(ApiError::NotDram { x, y, what: format!("a {kind:?} tile") }),
            None => Err(ApiError::NotDram { x, y, what: "no tile".into() }),
        }
    }

    /// The first endpoint of DRAM channel `channel`, at `addr`.
    fn dram_channel(&self, channel: u32, addr: u64) -> Result<NocAddr, ApiError> {
        let layout = self.chip.layout();
        let channels = layout.descriptor().dram.len();
        let endpoint = layout
            .tiles()
            .iter()
            .find(|t| matches!(t.kind, TileKind::Dram { bank, port: 0 } if bank as u32 == channel))
            .and_then(|t| layout.noc_coord(Noc::Noc0, t.noc0))
            .ok_or(ApiError::NoDramChannel { channel, channels })?;
        self.tile_addr(endpoint.x as u32, endpoint.y as u32, addr)
    }

    /// A DRAM read by tile (`Some((x, y))`) or by channel.
    pub fn dram_read(&mut self, at: DramAt, addr: u64, buf: &mut [u8]) -> Result<(), ApiError> {
        Stats::add(&self.stats.dram_reads, 1);
        let a = self.dram_addr(at, addr)?;
        Ok(self.chip.host_read(a, buf)?)
    }

    pub fn dram_write(&mut self, at: DramAt, addr: u64, data: &[u8]) -> Result<(), ApiError> {
        Stats::add(&self.stats.dram_writes, 1);
        let a = self.dram_addr(at, addr)?;
        Ok(self.chip.write(a, data)?)
    }

    fn dram_addr(&self, at: DramAt, addr: u64) -> Result<NocAddr, ApiError> {
        match at {
            DramAt::Tile { x, y } => self.dram_tile(x, y, addr),
            DramAt::Channel(c) => self.dram_channel(c, addr),
        }
    }

    /// The host waits `n` cycles. Counted before they run: a DMA
    /// callback's exception may end the wait early.
    pub fn clock(&mut self, n: u64) {
        Stats::add(&self.stats.clocks, 1);
        Stats::add(&self.stats.clocked_cycles, n);
        self.chip.host_poll(n);
    }
}

/// Where a `dram_*_by_id` call points.
#[derive(Clone, Copy, Debug)]
pub enum DramAt {
    /// The DRAM tile at these (translated) coordinates.
    Tile { x: u32, y: u32 },
    /// The channel (tt-umd's DRAM "bank" numbering).
    Channel(u32),
}
