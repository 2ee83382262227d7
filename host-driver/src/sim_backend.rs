//! The embedded simulator backend: the chip runs in this process and only
//! advances inside the host's calls, so seed + configuration + host program
//! give a bit-identical run. BAR access costs are the chip model's own
//! ([`cqlab_sim::bar`]), so the daemon charges the same device time. Every
//! BAR access and every sysmem read or claim is a scheduling point of the
//! host's clock ([`crate::host_clock`]): the device runs before it takes
//! effect, for the host time since the last one and what the host schedule
//! adds.

use crate::backend::{check_sysmem, Backend, CoreDebug, DramTraffic, Introspect, DEFAULT_POLL_CYCLES};
use crate::config::HostSchedule;
use crate::error::{DriverError, Result};
use crate::host_clock::{Access, HostClock};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_sim::chip::Chip;
use cqlab_sim::config::SimConfig;

pub struct EmbeddedSim {
    chip: Chip,
    poll_cycles: u64,
    clock: HostClock,
}

impl EmbeddedSim {
    /// A chip whose sysmem is host memory from [`crate::sysmem::alloc`]
    /// (huge pages when available), lent to the simulator; the host's
    /// accesses interleave with it as `host` says, from the chip's seed.
    pub fn new(cfg: SimConfig, host: HostSchedule) -> Result<Self> {
        host.validate()?;
        let (map, _) = crate::sysmem::alloc(cfg.sysmem_size)?;
        let sysmem = cqlab_sim::memory::Sysmem::External(Box::new(map));
        let clock = HostClock::new(cfg.seed, host);
        let chip = Chip::with_sysmem(cfg, sysmem).map_err(sim_err)?;
        Ok(Self { chip, poll_cycles: DEFAULT_POLL_CYCLES, clock })
    }
    /// The host's clock: its schedule and what it has done.
    pub fn host_clock(&self) -> &HostClock {
        &self.clock
    }
    /// A scheduling point: the device runs what the host's clock says
    /// before access `a` takes effect (the one hook into the chip's
    /// scheduler: [`Chip::host_poll`], which also charges posted BAR time).
    fn host_access(&mut self, a: Access) {
        if let Some(cycles) = self.clock.before(a) {
            self.chip.host_poll(cycles);
        }
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
        self.host_access(Access::BarWrite);
        self.chip.bar_write(addr, data).map_err(sim_err)
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        self.host_access(Access::BarRead);
        self.chip.bar_read(addr, buf).map_err(sim_err)
    }
    fn sysmem_len(&self) -> usize {
        self.chip.config().sysmem_size
    }
    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        let r = check_sysmem(offset, buf.len(), self.sysmem_len())?;
        // The device runs only inside our calls: after the point, a plain
        // copy is a snapshot.
        self.host_access(Access::SysmemRead(buf.len()));
        buf.copy_from_slice(&self.chip.sysmem()[r]);
        Ok(())
    }
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]> {
        let r = check_sysmem(offset, len, self.sysmem_len())?;
        // The host's stores into the claimed bytes all land at this point.
        self.host_access(Access::SysmemWrite(len));
        let bytes = self.chip.sysmem_mut().expect("the embedded simulator's sysmem is not shared");
        Ok(&mut bytes[r])
    }
    fn poll(&mut self) -> Result<u64> {
        let owed = self.clock.take_owed();
        Ok(self.chip.host_poll(self.poll_cycles + owed))
    }
    fn now(&self) -> u64 {
        self.chip.now()
    }
    fn introspect(&mut self) -> Option<&mut dyn Introspect> {
        Some(self)
    }
}

impl Introspect for EmbeddedSim {
    fn core_debug(&mut self, core: Coord) -> Result<Option<CoreDebug>> {
        Ok(self.chip.core_debug(core).map(|d| CoreDebug {
            pc: d.pc,
            halt: d.halt.map(|h| h.to_string()),
            last_pcs: d.last_pcs,
        }))
    }
    fn digest(&mut self) -> Result<u64> {
        Ok(self.chip.digest())
    }
    fn dram_traffic(&mut self) -> Result<DramTraffic> {
        let t = self.chip.dram_traffic();
        Ok(DramTraffic { read_bytes: t.read_bytes, write_bytes: t.write_bytes })
    }
    fn reset_dram_traffic(&mut self) -> Result<()> {
        self.chip.reset_dram_traffic();
        Ok(())
    }
    fn peek(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<bool> {
        self.chip.read(addr, buf).map_err(sim_err)?;
        Ok(true)
    }
    fn run_cycles(&mut self, cycles: u64) -> Result<u64> {
        let owed = self.clock.take_owed();
        Ok(self.chip.host_poll(cycles.saturating_add(owed)))
    }
    fn set_pc_sampling(&mut self, cores: &[Coord]) -> Result<()> {
        self.chip.set_pc_sampling(cores).map_err(sim_err)
    }
    fn pc_samples(&mut self) -> Result<Vec<(Coord, u32, u64)>> {
        Ok(self.chip.pc_samples())
    }
}
