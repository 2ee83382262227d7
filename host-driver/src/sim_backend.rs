//! The embedded simulator backend: the chip runs in this process and only
//! advances when the host polls, so seed + configuration + host program
//! give a bit-identical run.

use crate::backend::{Backend, CoreDebug};
use crate::error::{DriverError, Result};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_sim::chip::Chip;
use cqlab_sim::config::SimConfig;

/// Device cycles the chip runs per host poll.
pub const DEFAULT_POLL_CYCLES: u64 = 500;

/// What a host access through the BAR costs in device time (1 cycle = 1 ns),
/// from DESIGN.md's figures: writes through a write-combining window at
/// ~22 GB/s, reads of device memory at ~0.1 GB/s after a PCIe round trip.
/// The host is busy for that long, so the device runs meanwhile.
#[derive(Clone, Copy, Debug)]
pub struct BarTiming {
    pub write_bytes_per_cycle: u64,
    pub read_latency_cycles: u64,
    pub read_cycles_per_byte: u64,
}

impl Default for BarTiming {
    fn default() -> Self {
        Self { write_bytes_per_cycle: 22, read_latency_cycles: 300, read_cycles_per_byte: 10 }
    }
}

pub struct EmbeddedSim {
    chip: Chip,
    poll_cycles: u64,
    bar: BarTiming,
    /// Host time spent on BAR writes not yet handed to the device.
    pending_write_cycles: u64,
}

impl EmbeddedSim {
    /// A chip whose sysmem is host memory from [`crate::sysmem::alloc`]
    /// (huge pages when available), lent to the simulator.
    pub fn new(cfg: SimConfig) -> Result<Self> {
        let (map, _) = crate::sysmem::alloc(cfg.sysmem_size)?;
        let sysmem = cqlab_sim::memory::Sysmem::External(Box::new(map));
        let chip = Chip::with_sysmem(cfg, sysmem).map_err(|e| DriverError::Backend(format!("simulator: {e}")))?;
        Ok(Self { chip, poll_cycles: DEFAULT_POLL_CYCLES, bar: BarTiming::default(), pending_write_cycles: 0 })
    }
    pub fn chip(&self) -> &Chip {
        &self.chip
    }
    pub fn chip_mut(&mut self) -> &mut Chip {
        &mut self.chip
    }
}

fn sim_err(e: impl std::fmt::Display) -> DriverError {
    DriverError::Backend(format!("simulator: {e}"))
}

impl Backend for EmbeddedSim {
    fn name(&self) -> String {
        format!("embedded simulator (seed {})", self.chip.config().seed)
    }
    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.chip.write(addr, data).map_err(sim_err)?;
        // Posted writes: the host's time is charged at its next read or poll.
        self.pending_write_cycles += (data.len() as u64).div_ceil(self.bar.write_bytes_per_cycle);
        Ok(())
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        let cost = self.bar.read_latency_cycles + buf.len() as u64 * self.bar.read_cycles_per_byte;
        let busy = std::mem::take(&mut self.pending_write_cycles) + cost;
        self.chip.advance(busy);
        // Like a PCIe read, it does not pass posted writes (late doorbells).
        self.chip.host_read(addr, buf).map_err(sim_err)
    }
    fn sysmem(&mut self) -> &mut [u8] {
        self.chip.sysmem_mut()
    }
    fn poll(&mut self) -> Result<u64> {
        let busy = std::mem::take(&mut self.pending_write_cycles);
        Ok(self.chip.advance(self.poll_cycles + busy))
    }
    fn now(&self) -> u64 {
        self.chip.now()
    }
    fn core_debug(&self, core: Coord) -> Option<CoreDebug> {
        self.chip.core_debug(core).map(|d| CoreDebug {
            pc: d.pc,
            halt: d.halt.map(|h| h.to_string()),
            last_pcs: d.last_pcs,
        })
    }
    fn as_any(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}
