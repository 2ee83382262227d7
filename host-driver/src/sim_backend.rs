//! The embedded simulator backend: the chip runs in this process and only
//! advances inside the host's calls, so seed + configuration + host program
//! give a bit-identical run. The host reaches it as it reaches a card:
//! through BAR0, its TLB windows configured with the chip's TLB registers
//! ([`crate::tlb`]). BAR access costs are the chip model's own
//! ([`cqlab_sim::bar`]), so the daemon charges the same device time. Every
//! BAR access and every sysmem read or claim is a scheduling point of the
//! host's clock ([`crate::host_clock`]): the device runs before it takes
//! effect, for the host time since the last one and what the host schedule
//! adds.

use crate::backend::{
    check_sysmem, claim_slice, snapshot_read, snapshot_u32, Backend, CoreDebug, DramTraffic, Introspect, L0CacheStats,
    StaleRead, DEFAULT_POLL_CYCLES,
};
use crate::config::HostSchedule;
use crate::error::{DriverError, Result};
use crate::geometry::CoreId;
use crate::host_clock::{Access, HostClock};
use crate::tlb::{RegisterWindows, TlbBar, Windows};
use cqlab_abi::arch::tlb::TlbConfig;
use cqlab_abi::arch::ArchParams;
use cqlab_abi::noc::NocAddr;
use cqlab_sim::chip::Chip;
use cqlab_sim::config::SimConfig;

pub struct EmbeddedSim {
    chip: SimBar,
    windows: Windows,
    poll_cycles: u64,
    clock: HostClock,
}

/// The chip's BAR0 as the window manager drives it.
struct SimBar {
    chip: Chip,
    regs: RegisterWindows,
}

impl TlbBar for SimBar {
    fn windows(&self) -> usize {
        self.regs.count()
    }
    fn configure(&mut self, w: usize, cfg: &TlbConfig) -> Result<()> {
        let (at, words) = self.regs.config_write(w, cfg)?;
        self.chip.bar_write(0, at, &words).map_err(sim_err)
    }
    fn write(&mut self, w: usize, offset: u64, data: &[u8]) -> Result<()> {
        let (bar, at) = self.regs.data_at(w, offset);
        self.chip.bar_write(bar, at, data).map_err(sim_err)
    }
    fn read(&mut self, w: usize, offset: u64, buf: &mut [u8]) -> Result<()> {
        let (bar, at) = self.regs.data_at(w, offset);
        self.chip.bar_read(bar, at, buf).map_err(sim_err)
    }
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
        let regs = RegisterWindows::new(chip.arch());
        let windows = Windows::new(regs.count());
        Ok(Self { chip: SimBar { chip, regs }, windows, poll_cycles: DEFAULT_POLL_CYCLES, clock })
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
            let (c0, t0) = (self.chip.chip.now(), std::time::Instant::now());
            self.chip.chip.host_poll(cycles);
            self.clock.ran(self.chip.chip.now() - c0, t0.elapsed());
        }
    }
    pub fn chip(&self) -> &Chip {
        &self.chip.chip
    }
    pub fn chip_mut(&mut self) -> &mut Chip {
        &mut self.chip.chip
    }
    /// TLB window configurations issued so far.
    pub fn tlb_configurations(&self) -> u64 {
        self.windows.configured()
    }
}

fn sim_err(e: impl std::fmt::Display) -> DriverError {
    DriverError::Backend(format!("simulator: {e}"))
}

impl Backend for EmbeddedSim {
    fn name(&self) -> String {
        format!("embedded simulator (seed {})", self.chip().config().seed)
    }
    fn params(&self) -> &'static ArchParams {
        self.chip.chip.arch()
    }
    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.host_access(Access::BarWrite);
        self.windows.write(&mut self.chip, addr, data)
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        self.host_access(Access::BarRead);
        self.windows.read(&mut self.chip, addr, buf)
    }
    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        self.host_access(Access::BarRead);
        self.chip_mut().bar_read(0, offset as u64, buf).map_err(sim_err)
    }
    fn sysmem_len(&self) -> usize {
        self.chip().config().sysmem_size
    }
    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        // A bad access is refused before the device runs for it.
        check_sysmem(offset, buf.len(), self.sysmem_len())?;
        // The device runs only inside our calls: after the point, a plain
        // copy is a snapshot.
        self.host_access(Access::SysmemRead(buf.len()));
        snapshot_read(&self.chip().sysmem(), offset, buf)
    }
    fn sysmem_peek_u32(&mut self, offset: usize) -> Result<u32> {
        snapshot_u32(&self.chip().sysmem(), offset)
    }
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]> {
        check_sysmem(offset, len, self.sysmem_len())?;
        // The host's stores into the claimed bytes all land at this point.
        self.host_access(Access::SysmemWrite(len));
        let bytes = self.chip_mut().sysmem_mut().expect("the embedded simulator's sysmem is not shared");
        claim_slice(bytes, offset, len)
    }
    fn poll(&mut self) -> Result<u64> {
        let cycles = self.poll_cycles + self.clock.take_owed();
        Ok(self.chip_mut().host_poll(cycles))
    }
    fn now(&self) -> u64 {
        self.chip().now()
    }
    fn introspect(&mut self) -> Option<&mut dyn Introspect> {
        Some(self)
    }
}

impl Introspect for EmbeddedSim {
    fn host_clock(&self) -> Option<crate::host_clock::HostClockStats> {
        Some(self.clock.stats())
    }
    fn l0_cache(&mut self) -> Result<Option<L0CacheStats>> {
        Ok(self.chip.chip.l0_cache().map(|s| L0CacheStats {
            hits: s.hits,
            stale_hits: s.stale_hits,
            first_stale: s.first_stale.map(|h| StaleRead {
                core: h.core.tile,
                processor: h.core.processor,
                pc: h.pc,
                addr: h.addr,
                cycle: h.cycle,
            }),
        }))
    }
    fn core_debug(&mut self, core: CoreId) -> Result<Option<CoreDebug>> {
        let id = cqlab_sim::chip::CoreId { tile: core.tile, processor: core.processor };
        Ok(self.chip_mut().core_debug(id).map(|d| CoreDebug {
            pc: d.pc,
            halt: d.halt.map(|h| h.to_string()),
            last_pcs: d.last_pcs,
            in_reset: d.in_reset,
        }))
    }
    fn digest(&mut self) -> Result<u64> {
        Ok(self.chip_mut().digest())
    }
    fn dram_traffic(&mut self) -> Result<Option<DramTraffic>> {
        let t = self.chip().dram_traffic();
        Ok(Some(DramTraffic { read_bytes: t.read_bytes, write_bytes: t.write_bytes }))
    }
    fn reset_dram_traffic(&mut self) -> Result<()> {
        self.chip_mut().reset_dram_traffic();
        Ok(())
    }
    fn peek(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<bool> {
        self.chip().read(addr, buf).map_err(sim_err)?;
        Ok(true)
    }
    fn run_cycles(&mut self, cycles: u64) -> Result<u64> {
        let owed = self.clock.take_owed();
        Ok(self.chip_mut().host_poll(cycles.saturating_add(owed)))
    }
    fn set_pc_sampling(&mut self, cores: &[CoreId]) -> Result<()> {
        let ids: Vec<_> =
            cores.iter().map(|c| cqlab_sim::chip::CoreId { tile: c.tile, processor: c.processor }).collect();
        self.chip_mut().set_pc_sampling(&ids).map_err(sim_err)
    }
    fn pc_samples(&mut self) -> Result<Vec<(CoreId, u32, u64)>> {
        Ok(self
            .chip()
            .pc_samples()
            .into_iter()
            .map(|(c, pc, n)| (CoreId { tile: c.tile, processor: c.processor }, pc, n))
            .collect())
    }
}
