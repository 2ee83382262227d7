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

pub struct EmbeddedSim {
    chip: Chip,
    poll_cycles: u64,
}

impl EmbeddedSim {
    pub fn new(cfg: SimConfig) -> Result<Self> {
        let chip = Chip::new(cfg).map_err(|e| DriverError::Backend(format!("simulator: {e}")))?;
        Ok(Self { chip, poll_cycles: DEFAULT_POLL_CYCLES })
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
        self.chip.write(addr, data).map_err(sim_err)
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        self.chip.read(addr, buf).map_err(sim_err)
    }
    fn sysmem(&mut self) -> &mut [u8] {
        self.chip.sysmem_mut()
    }
    fn poll(&mut self) -> Result<u64> {
        Ok(self.chip.advance(self.poll_cycles))
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
