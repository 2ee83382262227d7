//! The chip: a grid of cores (workers, a prefetcher and a dispatcher per CQ)
//! with L1 and MMIO each, DRAM banks and the PCIe endpoint to a sysmem buffer
//! the simulator owns or borrows (a shared file mapping in daemon mode, see
//! [`crate::memory::Sysmem`]); a deterministic single-threaded scheduler;
//! and the host-side access a driver uses.
//!
//! Time advances only in [`Chip::advance`] / [`Chip::run_until`]: the host
//! hands control to the device when it waits, so seed + config + host
//! program fix the whole run. The scheduler cuts time into slices of
//! `quantum_cycles` (plus seeded jitter); each core runs to the slice end in a
//! seeded rotation order, then NOC events due by then are delivered in
//! (time, issue order). Host reads and writes take effect immediately and
//! cost no simulated time. A core that has writes leaving its L1 runs in
//! segments that end where one of its packets has left, so its last flit
//! reads the source exactly then (see `noc` for the model and the ordering
//! rules).

use crate::config::{ConfigError, Schedule, SimConfig};
use crate::core_mmio::{reg_offset, semaphore_index, CoreBus, CoreMmio, NocIssue, TargetCheck};
use crate::debug::CoreDebug;
use crate::digest::Digest;
use crate::dram::Dram;
use crate::elf::{ElfError, ElfImage, Window};
use crate::fastforward::{probe, FfState, Probe};
use crate::hart::{Hart, Stop};
use crate::memory::{Memory, Ram, Sysmem};
use crate::noc::{farthest, flits_by, last_flit, trip, Departing, Endpoints, Event, EventKind, Landing, Route, Routes};
use crate::pct::{Pct, Slice};
use crate::rng::Streams;
use cqlab_abi::memory_map::ENTRY_POINT;
use cqlab_abi::mmio::{self, NocCmd, MMIO_BASE, MMIO_SIZE};
use cqlab_abi::noc::{self, endpoint, Coord, Endpoint, NocAddr, MAX_COORD};
use std::collections::{BTreeMap, BinaryHeap};
use thiserror::Error;

/// A host access or boot step the chip cannot perform.
#[derive(Debug, Error, PartialEq)]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("no endpoint at {coord} (NOC address {addr:#018x})")]
    NoEndpoint { coord: Coord, addr: u64 },
    #[error("{what} at {coord}: {len} bytes at local address {local:#x} are out of range")]
    OutOfRange { what: &'static str, coord: Coord, local: u64, len: usize },
    #[error("MMIO at {coord} offset {offset:#x}: {reason}")]
    Mmio { coord: Coord, offset: u64, reason: &'static str },
    #[error("loading an ELF onto {coord}: {source}")]
    Elf { coord: Coord, source: ElfError },
    #[error("condition not met within {budget} cycles (device time {now})")]
    Timeout { budget: u64, now: u64 },
    #[error("sysmem storage of {found} bytes does not match sysmem_size {expected}")]
    SysmemSize { expected: usize, found: usize },
}

/// One core: its hart (with L1) and its registers.
pub struct Core {
    pub coord: Coord,
    pub hart: Hart,
    pub mmio: CoreMmio,
    ff: FfState,
    /// `faults.slow_cores` factor (1.0: full speed).
    slowdown: f64,
}

impl Core {
    /// Device cycles this core spent parked by idle fast-forward.
    pub fn fast_forwarded_cycles(&self) -> u64 {
        self.ff.skipped_cycles
    }
}

/// Which cores exist, for validating NOC targets.
struct Grid {
    index: Vec<u16>,
    l1_size: u32,
    dram: Dram,
    sysmem_size: usize,
}

const NO_CORE: u16 = u16::MAX;
const GRID_SIDE: usize = MAX_COORD as usize + 1;

impl Grid {
    fn core(&self, c: Coord) -> Option<usize> {
        match self.index.get(c.y as usize * GRID_SIDE + c.x as usize) {
            Some(&i) if i != NO_CORE => Some(i as usize),
            _ => None,
        }
    }

    /// Checks that `len` bytes at `addr` exist (on every core of a multicast).
    fn check_range(&self, addr: NocAddr, len: u64) -> Result<(), &'static str> {
        let local = addr.local();
        if addr.is_multicast() {
            let (a, b) = (addr.coord(), addr.mcast_end());
            if a.x > b.x || a.y > b.y {
                return Err("multicast rectangle corners are reversed");
            }
            for y in a.y..=b.y {
                for x in a.x..=b.x {
                    if self.core(Coord::new(x, y)).is_none() {
                        return Err("multicast rectangle includes a coordinate with no core");
                    }
                }
            }
            return self.check_core_range(local, len);
        }
        match endpoint(addr.coord()) {
            Endpoint::Pcie => match local.checked_add(len) {
                Some(end) if end <= self.sysmem_size as u64 => Ok(()),
                _ => Err("sysmem range out of bounds"),
            },
            Endpoint::Dram { bank } => {
                if self.dram.contains(bank as u32, local, len) {
                    Ok(())
                } else {
                    Err("DRAM bank or range does not exist")
                }
            }
            _ => match self.core(addr.coord()) {
                Some(_) => self.check_core_range(local, len),
                None => Err("no endpoint at the target coordinates"),
            },
        }
    }

    fn check_core_range(&self, local: u64, len: u64) -> Result<(), &'static str> {
        if local + len <= self.l1_size as u64 || reg_offset(local, len).is_some() {
            Ok(())
        } else {
            Err("target is neither inside L1 nor a 32-bit MMIO register")
        }
    }
}

impl TargetCheck for Grid {
    fn check(&self, target: NocAddr, len: u32, _cmd: NocCmd) -> Result<(), &'static str> {
        self.check_range(target, len as u64)
    }
}

/// A statistical profile (`Chip::set_pc_sampling`): the PC of each sampled
/// core at every slice end, weighted by the slice's cycles, per (core
/// index, PC).
#[derive(Debug, Default)]
struct PcSampling {
    cores: Vec<usize>,
    cycles: BTreeMap<(usize, u32), u64>,
}

/// The simulated device.
pub struct Chip {
    /// PC samples being taken, if any (not device state: not in the digest).
    sampling: Option<PcSampling>,
    cfg: SimConfig,
    cores: Vec<Core>,
    grid: Grid,
    sysmem: Sysmem,
    now: u64,
    events: BinaryHeap<Event>,
    seq: u64,
    /// One random stream per concern (scheduler, jitter, stalls, doorbells,
    /// back-pressure).
    rng: Streams,
    issued: Vec<NocIssue>,
    /// Ordering rules as arrival clamps (off with `faults.reorder`).
    routes: Routes,
    /// Writes still reading their source, in issue order.
    departing: Vec<Departing>,
    /// Reads whose data is landing.
    landing: Vec<Landing>,
    /// Write payloads by id, filled as their flits leave, taken on arrival.
    payloads: BTreeMap<u64, Vec<u8>>,
    /// Per core: first cycle its NOC interface is free to send a packet.
    niu_free: Vec<u64>,
    /// The PCIe link's two directions.
    endpoints: Endpoints,
    /// Ids of writes and reads.
    transfers: u64,
    /// PCT state when `cfg.schedule` is `Pct`.
    pct: Option<Pct>,
    /// Posted host writes not yet landed (late doorbell).
    posted: usize,
    /// Landing time of the last posted host write (they land in order).
    last_posted_at: u64,
    /// Bytes cores moved to and from DRAM over the NOC (host BAR access excluded).
    dram_traffic: DramTraffic,
    /// Cores the slice loop must visit (outside PCT), ascending: out of
    /// reset, not halted, and not parked (parked ones too when stalls are
    /// drawn per core). Cores left out keep their counters lazily; they are
    /// brought to device time at the end of `advance` and on release.
    active: Vec<usize>,
    /// Scratch copy of `active` for one slice.
    order: Vec<usize>,
    /// Host time spent on BAR writes not yet handed to the device (see
    /// [`crate::bar`]): charged at the host's next BAR read or poll.
    host_busy: u64,
}

/// L1s (one per core, in [`Chip::cores`] order) and DRAM a chip computes
/// on without owning them (see [`Chip::with_memories`]).
pub struct Memories {
    pub l1: Vec<Ram>,
    pub dram: Dram,
}

/// DRAM bytes moved by NOC transactions since power-on or the last reset of
/// the counters: what a workload costs in memory traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DramTraffic {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

fn is_dram(target: NocAddr) -> bool {
    matches!(cqlab_abi::noc::endpoint(target.coord()), cqlab_abi::noc::Endpoint::Dram { .. })
}

impl Chip {
    /// A powered-on chip: memories zeroed, every core held in reset.
    pub fn new(cfg: SimConfig) -> Result<Self, SimError> {
        let sysmem = Sysmem::owned(cfg.sysmem_size);
        Self::with_sysmem(cfg, sysmem)
    }

    /// A powered-on chip whose host sysmem is `sysmem`: an owned buffer
    /// (assumed zeroed) or an external mapping such as the daemon's shared
    /// file (zeroed here). Its length must be `cfg.sysmem_size`.
    pub fn with_sysmem(cfg: SimConfig, sysmem: Sysmem) -> Result<Self, SimError> {
        Self::with_memories(cfg, sysmem, None)
    }

    /// [`Chip::with_sysmem`] whose L1s and DRAM are `memories` (regions of a
    /// shared mapping, see [`crate::shared`]) instead of its own. `None`:
    /// its own, zeroed.
    pub fn with_memories(cfg: SimConfig, mut sysmem: Sysmem, memories: Option<Memories>) -> Result<Self, SimError> {
        cfg.validate()?;
        let found = sysmem.len();
        if found != cfg.sysmem_size {
            return Err(SimError::SysmemSize { expected: cfg.sysmem_size, found });
        }
        if !matches!(sysmem, Sysmem::Owned(_)) {
            sysmem.zero();
        }
        let mut coords = Vec::new();
        for row in 0..cfg.worker_rows {
            for col in 0..cfg.worker_cols {
                coords.push(noc::worker(col, row));
            }
        }
        for cq in 0..cfg.num_cqs {
            coords.push(noc::prefetcher(cq));
            coords.push(noc::dispatcher(cq));
        }
        let (mut l1s, dram) = match memories {
            Some(m) => {
                assert_eq!(m.l1.len(), coords.len(), "one L1 per core, in Chip::cores order");
                (m.l1.into_iter().map(Some).collect::<Vec<_>>(), m.dram)
            }
            None => ((0..coords.len()).map(|_| None).collect(), Dram::new(cfg.dram_banks, cfg.dram_bank_size)),
        };
        let mut index = vec![NO_CORE; GRID_SIDE * GRID_SIDE];
        let cores = coords
            .iter()
            .enumerate()
            .map(|(i, &coord)| {
                index[coord.y as usize * GRID_SIDE + coord.x as usize] = i as u16;
                let l1 = l1s[i].take().unwrap_or_else(|| Ram::new(0, cfg.l1_size));
                let hart = Hart::new(Memory::new(l1, None).with_local_mem(), coord.packed(), ENTRY_POINT);
                Core { coord, hart, mmio: CoreMmio::new(coord), ff: FfState::default(), slowdown: 1.0 }
            })
            .collect::<Vec<Core>>();
        let mut cores = cores;
        for s in &cfg.faults.slow_cores {
            let i = index
                .get(s.core.y as usize * GRID_SIDE + s.core.x as usize)
                .filter(|&&i| i != NO_CORE)
                .ok_or(ConfigError::NoSuchCore { core: s.core })?;
            cores[*i as usize].slowdown = s.factor;
        }
        let grid = Grid { index, l1_size: cfg.l1_size, dram, sysmem_size: cfg.sysmem_size };
        let mut rng = Streams::new(cfg.seed);
        let pct = match cfg.schedule {
            Schedule::Slices => None,
            Schedule::Pct { depth, steps } => Some(Pct::new(depth, steps, cores.len(), &mut rng.scheduler)),
        };
        Ok(Chip {
            sysmem,
            rng,
            routes: Routes::default(),
            departing: Vec::new(),
            landing: Vec::new(),
            payloads: BTreeMap::new(),
            niu_free: vec![0; cores.len()],
            endpoints: Endpoints::default(),
            transfers: 0,
            pct,
            posted: 0,
            last_posted_at: 0,
            dram_traffic: DramTraffic::default(),
            active: Vec::new(),
            order: Vec::new(),
            host_busy: 0,
            sampling: None,
            cfg,
            cores,
            grid,
            now: 0,
            events: BinaryHeap::new(),
            seq: 0,
            issued: Vec::new(),
        })
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Back to power-on state (time 0, memories and sysmem zeroed, cores in
    /// reset, nothing in flight, the seed's streams restarted), keeping the
    /// sysmem storage (so a shared mapping stays shared).
    pub fn power_on_reset(&mut self) -> Result<(), SimError> {
        let mut sysmem = std::mem::replace(&mut self.sysmem, Sysmem::Owned(Box::default()));
        sysmem.zero();
        *self = Chip::with_sysmem(self.cfg.clone(), sysmem)?;
        Ok(())
    }

    /// DRAM bytes read and written by NOC transactions so far.
    pub fn dram_traffic(&self) -> DramTraffic {
        self.dram_traffic
    }

    /// Zeroes the DRAM traffic counters (e.g. after loading inputs).
    pub fn reset_dram_traffic(&mut self) {
        self.dram_traffic = DramTraffic::default();
    }

    /// Device time in cycles.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Every core's coordinates (workers row by row, then prefetcher and
    /// dispatcher of each CQ).
    pub fn cores(&self) -> impl Iterator<Item = Coord> + '_ {
        self.cores.iter().map(|c| c.coord)
    }

    /// Direct access to a core (tests, tools). `None` if it does not exist.
    pub fn core(&self, c: Coord) -> Option<&Core> {
        self.grid.core(c).map(|i| &self.cores[i])
    }

    /// Host sysmem as the device sees it at the PCIe endpoint (a copy when
    /// it is a shared region the host writes concurrently).
    pub fn sysmem(&self) -> std::borrow::Cow<'_, [u8]> {
        self.sysmem.snapshot()
    }

    /// Sysmem to write in place; `None` when it is shared with a running host.
    pub fn sysmem_mut(&mut self) -> Option<&mut [u8]> {
        self.sysmem.bytes_mut()
    }

    fn core_or_err(&self, addr: NocAddr) -> Result<usize, SimError> {
        self.grid.core(addr.coord()).ok_or(SimError::NoEndpoint { coord: addr.coord(), addr: addr.0 })
    }

    /// Host write through a BAR window, no simulated cost. Reaches core L1
    /// (invalidating decoded code), core registers (SOFT_RESET, semaphores),
    /// DRAM and sysmem; multicast writes every core of the rectangle.
    /// Immediate, unless `faults.host_write_delay_cycles` posts it (late
    /// doorbell): then it is checked now and lands later, in order.
    pub fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<(), SimError> {
        self.grid.check_range(addr, data.len() as u64).map_err(|reason| self.range_error(addr, data.len(), reason))?;
        let local = addr.local();
        if !matches!(endpoint(addr.coord()), Endpoint::Pcie | Endpoint::Dram { .. }) && local >= self.cfg.l1_size as u64
        {
            let off = (local - MMIO_BASE as u64) as u32;
            if off != mmio::SOFT_RESET && semaphore_index(off).is_none() {
                return Err(SimError::Mmio {
                    coord: addr.coord(),
                    offset: off as u64,
                    reason: "the host may write SOFT_RESET and semaphores only",
                });
            }
        }
        let delay = self.cfg.faults.host_write_delay_cycles;
        if delay > 0 && !matches!(endpoint(addr.coord()), Endpoint::Pcie) {
            let at = (self.now + self.rng.doorbells.upto(delay)).max(self.last_posted_at);
            self.last_posted_at = at;
            self.posted += 1;
            self.push(at, EventKind::HostWrite { target: addr, data: data.to_vec() });
            return Ok(());
        }
        self.apply_write(addr, data)
    }

    /// Lands every posted host write now, in order (PCIe: a read does not
    /// pass posted writes). A no-op without late doorbells.
    pub fn land_posted_writes(&mut self) {
        if self.posted == 0 {
            return;
        }
        let (mut mine, rest): (Vec<Event>, Vec<Event>) =
            std::mem::take(&mut self.events).into_iter().partition(|e| matches!(e.kind, EventKind::HostWrite { .. }));
        self.events = rest.into();
        mine.sort_by_key(|e| (e.time, e.seq));
        for e in mine {
            self.deliver(e);
        }
        self.last_posted_at = self.now;
    }

    /// Host read that first lands posted host writes: what a driver's BAR
    /// read sees on silicon. [`Chip::read`] is the side-effect-free peek.
    pub fn host_read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<(), SimError> {
        self.land_posted_writes();
        self.read(addr, buf)
    }

    /// A host write through a BAR window, as a driver does it: [`Chip::write`]
    /// plus the host time it takes ([`crate::bar::BarTiming`]), which the
    /// device gets to run at the host's next [`Chip::bar_read`] or
    /// [`Chip::host_poll`] (writes are posted).
    pub fn bar_write(&mut self, addr: NocAddr, data: &[u8]) -> Result<(), SimError> {
        self.write(addr, data)?;
        self.host_busy += self.cfg.bar.write_cycles(data.len());
        Ok(())
    }

    /// A host read through a BAR window, as a driver does it: the device
    /// runs for the host time of earlier posted writes and of this read's
    /// round trip, then the read lands posted writes and samples memory
    /// ([`Chip::host_read`]).
    pub fn bar_read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<(), SimError> {
        let busy = std::mem::take(&mut self.host_busy) + self.cfg.bar.read_cycles(buf.len());
        self.advance(busy);
        self.host_read(addr, buf)
    }

    /// The host waits: the device runs `cycles` plus the host time of posted
    /// BAR writes not yet charged. Returns the device time.
    pub fn host_poll(&mut self, cycles: u64) -> u64 {
        let busy = std::mem::take(&mut self.host_busy);
        self.advance(cycles.saturating_add(busy))
    }

    /// Performs a checked host write now.
    fn apply_write(&mut self, addr: NocAddr, data: &[u8]) -> Result<(), SimError> {
        if addr.is_multicast() {
            let (a, b) = (addr.coord(), addr.mcast_end());
            for y in a.y..=b.y {
                for x in a.x..=b.x {
                    self.apply_write(NocAddr::unicast(Coord::new(x, y), addr.local()), data)?;
                }
            }
            return Ok(());
        }
        let local = addr.local();
        match endpoint(addr.coord()) {
            Endpoint::Pcie => self.sysmem.write(local as usize, data),
            Endpoint::Dram { bank } => self.grid.dram.write(bank as u32, local, data),
            _ => {
                let i = self.core_or_err(addr)?;
                if local < self.cfg.l1_size as u64 {
                    self.cores[i]
                        .hart
                        .mem
                        .l1
                        .write(local as u32, data)
                        .map_err(|_| self.range_error(addr, data.len(), "L1"))?;
                } else {
                    let v = u32::from_le_bytes(data.try_into().expect("checked: one register"));
                    self.host_write_reg(i, local, v)?;
                }
            }
        }
        Ok(())
    }

    fn range_error(&self, addr: NocAddr, len: usize, reason: &'static str) -> SimError {
        let coord = addr.coord();
        match endpoint(coord) {
            Endpoint::Nothing => SimError::NoEndpoint { coord, addr: addr.0 },
            _ if self.grid.core(coord).is_none()
                && !matches!(endpoint(coord), Endpoint::Pcie | Endpoint::Dram { .. }) =>
            {
                SimError::NoEndpoint { coord, addr: addr.0 }
            }
            _ => SimError::OutOfRange { what: reason, coord, local: addr.local(), len },
        }
    }

    fn host_write_reg(&mut self, i: usize, local: u64, v: u32) -> Result<(), SimError> {
        let core = &mut self.cores[i];
        let off = (local - MMIO_BASE as u64) as u32;
        if off == mmio::SOFT_RESET {
            let hold = v != 0;
            if core.mmio.in_reset && !hold {
                // Release: the hart starts at the entry point with zeroed
                // registers, its cycle counter at device time.
                core.hart.skip_cycles(self.now.saturating_sub(core.hart.cycle()));
                core.hart.reset(ENTRY_POINT);
            }
            core.mmio.in_reset = hold;
            self.refresh_active(i);
            return Ok(());
        }
        match core.mmio.semaphore_mut(off) {
            Some(s) => {
                *s = v;
                Ok(())
            }
            None => Err(SimError::Mmio {
                coord: core.coord,
                offset: off as u64,
                reason: "the host may write SOFT_RESET and semaphores only",
            }),
        }
    }

    /// Host read through a BAR window: immediate, no simulated cost. It sees
    /// device memory as it is: writes still posted by a late doorbell are not
    /// in it (see [`Chip::host_read`]).
    pub fn read(&self, addr: NocAddr, buf: &mut [u8]) -> Result<(), SimError> {
        if addr.is_multicast() {
            return Err(SimError::Mmio {
                coord: addr.coord(),
                offset: addr.local(),
                reason: "reads cannot be multicast",
            });
        }
        self.grid.check_range(addr, buf.len() as u64).map_err(|reason| self.range_error(addr, buf.len(), reason))?;
        let local = addr.local();
        match endpoint(addr.coord()) {
            Endpoint::Pcie => self.sysmem.read(local as usize, buf),
            Endpoint::Dram { bank } => self.grid.dram.read(bank as u32, local, buf),
            _ => {
                let core = &self.cores[self.core_or_err(addr)?];
                if local < self.cfg.l1_size as u64 {
                    core.hart.mem.l1.read(local as u32, buf).map_err(|_| self.range_error(addr, buf.len(), "L1"))?;
                } else {
                    let off = (local - MMIO_BASE as u64) as u32;
                    let v = core.mmio.read(off).ok_or(SimError::Mmio {
                        coord: core.coord,
                        offset: off as u64,
                        reason: "no register there",
                    })?;
                    buf.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        Ok(())
    }

    pub fn read_u32(&self, addr: NocAddr) -> Result<u32, SimError> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn write_u32(&mut self, addr: NocAddr, v: u32) -> Result<(), SimError> {
        self.write(addr, &v.to_le_bytes())
    }

    /// Boot helper: writes `image`'s segments (and zeroed `.bss`) into the
    /// L1 of `core` through the host path. The core stays as it is (held in
    /// reset at power-on); release it with [`Chip::set_reset`].
    pub fn load_elf(&mut self, core: Coord, image: &ElfImage) -> Result<(), SimError> {
        self.core_or_err(NocAddr::unicast(core, 0))?;
        image
            .check_fits(&[Window { name: "L1", base: 0, size: self.cfg.l1_size }])
            .map_err(|source| SimError::Elf { coord: core, source })?;
        for s in &image.segments {
            let mut bytes = s.data.clone();
            bytes.resize(s.mem_size as usize, 0);
            self.write(NocAddr::unicast(core, s.addr as u64), &bytes)?;
        }
        Ok(())
    }

    /// Holds (`true`) or releases (`false`) a core's soft reset, exactly as a
    /// host write of SOFT_RESET through the BAR.
    pub fn set_reset(&mut self, core: Coord, hold: bool) -> Result<(), SimError> {
        self.write_u32(NocAddr::unicast(core, (MMIO_BASE + mmio::SOFT_RESET) as u64), hold as u32)
    }

    /// Lets the device run `cycles` cycles. Returns the new device time.
    pub fn advance(&mut self, cycles: u64) -> u64 {
        let end = self.now.saturating_add(cycles);
        while self.now < end {
            let q = self.cfg.quantum_cycles + self.rng.scheduler.upto(self.cfg.quantum_jitter);
            let slice_end = (self.now + q).min(end);
            let n = self.cores.len();
            let first = self.rng.scheduler.upto(n as u64 - 1) as usize;
            if self.pct.is_some() {
                self.pct_slice(first, slice_end);
            } else {
                // Rotation order from `first`, visiting only the cores that
                // can do anything (the others would only count cycles).
                let mut order = std::mem::take(&mut self.order);
                order.clear();
                let p = self.active.partition_point(|&i| i < first);
                order.extend_from_slice(&self.active[p..]);
                order.extend_from_slice(&self.active[..p]);
                for &i in &order {
                    self.run_core(i, slice_end);
                    self.refresh_active(i);
                }
                self.order = order;
            }
            let slice = slice_end - self.now;
            self.now = slice_end;
            self.deliver_until(slice_end);
            if let Some(sampling) = &mut self.sampling {
                // Slices are cut short where a host step ends (a poll, a
                // BAR access): each sample counts the cycles it stands for.
                for &i in &sampling.cores {
                    *sampling.cycles.entry((i, self.cores[i].hart.pc())).or_default() += slice;
                }
            }
        }
        // The host may look at anything now: bring parked cores up to date
        // and idle cores' counters to device time.
        for i in 0..self.cores.len() {
            self.wake(i);
            let core = &mut self.cores[i];
            if core.mmio.in_reset || core.hart.halted().is_some() {
                core.hart.skip_cycles(self.now.saturating_sub(core.hart.cycle()));
            }
        }
        self.now
    }

    /// One slice under PCT: every core visited in rotation order.
    fn pct_slice(&mut self, first: usize, slice_end: u64) {
        let n = self.cores.len();
        let slice = match &mut self.pct {
            Some(pct) => {
                let cores = &self.cores;
                pct.begin_slice(|i| !cores[i].mmio.in_reset && cores[i].hart.halted().is_none())
            }
            None => Slice::Free,
        };
        for k in 0..n {
            let i = (first + k) % n;
            match (slice, &mut self.pct) {
                (Slice::Run(chosen), Some(pct)) => {
                    if chosen != Some(i) && !pct.is_waiting(i) {
                        // Held by a higher priority: stalled for the slice.
                        let hart = &mut self.cores[i].hart;
                        hart.skip_cycles(slice_end.saturating_sub(hart.cycle()));
                        continue;
                    }
                    let before = self.cores[i].hart.effects();
                    self.run_core(i, slice_end);
                    let c = &self.cores[i];
                    let runs = !c.mmio.in_reset && c.hart.halted().is_none();
                    let waiting = runs && c.hart.effects() == before;
                    self.pct.as_mut().expect("PCT").set_waiting(i, waiting);
                }
                _ => self.run_core(i, slice_end),
            }
        }
    }

    /// Puts core `i` in or out of the slice loop's `active` list.
    fn refresh_active(&mut self, i: usize) {
        let c = &self.cores[i];
        let keep_parked = self.cfg.faults.core_stall_prob > 0.0;
        let want = !c.mmio.in_reset && c.hart.halted().is_none() && (keep_parked || c.ff.idle.is_none());
        match (self.active.binary_search(&i), want) {
            (Err(at), true) => self.active.insert(at, i),
            (Ok(at), false) => {
                self.active.remove(at);
            }
            _ => {}
        }
    }

    /// Unparks core `i` (if idle-parked) to the current device time, exactly
    /// where normal execution would be. Must precede any change to the core.
    fn wake(&mut self, i: usize) {
        if self.cores[i].ff.idle.is_some() {
            let now = self.now;
            let core = &mut self.cores[i];
            core.ff.unpark(&mut core.hart, now);
            self.run_hart(i, now, false);
            self.refresh_active(i);
        }
    }

    /// Runs until `done(self)` holds, checking at every slice end, for at
    /// most `budget` cycles. Returns the device time when it held.
    pub fn run_until(&mut self, mut done: impl FnMut(&Chip) -> bool, budget: u64) -> Result<u64, SimError> {
        let deadline = self.now.saturating_add(budget);
        loop {
            if done(self) {
                return Ok(self.now);
            }
            if self.now >= deadline {
                return Err(SimError::Timeout { budget, now: self.now });
            }
            let step = self.cfg.quantum_cycles.min(deadline - self.now);
            self.advance(step);
        }
    }

    fn run_core(&mut self, i: usize, slice_end: u64) {
        let core = &mut self.cores[i];
        if core.mmio.in_reset || core.hart.halted().is_some() {
            // Idle cores keep their counters at device time.
            core.hart.skip_cycles(slice_end.saturating_sub(core.hart.cycle()));
            return;
        }
        let p = self.cfg.faults.core_stall_prob;
        if p > 0.0 && self.rng.stalls.chance(p) {
            // The stall delays the core from where it really is: a parked
            // core is first brought to the slice start (its parked state may
            // lie whole periods behind).
            self.wake(i);
            self.cores[i].hart.skip_cycles(self.cfg.faults.core_stall_cycles);
        }
        let core = &mut self.cores[i];
        if core.ff.idle.is_some() {
            return;
        }
        if core.slowdown > 1.0 {
            // Runs its share of the slice, then sits stalled. Never parked:
            // a parked loop's period would not follow the slowed pace.
            let start = core.hart.cycle().min(slice_end);
            let share = ((slice_end - start) as f64 / core.slowdown).ceil() as u64;
            self.run_hart(i, start + share, false);
            let hart = &mut self.cores[i].hart;
            hart.skip_cycles(slice_end.saturating_sub(hart.cycle()));
            return;
        }
        self.run_hart(i, slice_end, self.cfg.fast_forward);
    }

    /// Runs core `i` normally until `limit` and schedules what it issued.
    /// With `may_park`, looks for an idle loop (see `fastforward`) when it
    /// starts and after each NOC command the core issues, and parks it there.
    /// While the core has writes leaving its L1 it runs in segments ending
    /// where each packet has left (so the packet reads its source exactly
    /// then), and it is not parked.
    fn run_hart(&mut self, i: usize, limit: u64, may_park: bool) {
        if self.cores[i].mmio.in_reset {
            return;
        }
        let mut try_probe = may_park && self.cores[i].ff.start_probe_due();
        loop {
            // Its own reads land, then its leaving packets read their source,
            // as of where the core is now.
            let now_i = self.cores[i].hart.cycle();
            if !self.landing.is_empty() {
                self.land_reads(now_i, Some(i));
            }
            let leaving = self.read_sources(now_i, Some(i));
            let seg = leaving.map_or(limit, |left| left.min(limit));
            let Chip { cores, grid, issued, .. } = self;
            let core = &mut cores[i];
            let mut bus = CoreBus { mmio: &mut core.mmio, issued, targets: &*grid };
            let mut done = false;
            loop {
                if try_probe && leaving.is_none() {
                    match probe(&mut core.hart, &mut bus, seg) {
                        Probe::Idle(l) => {
                            core.ff.parked(l);
                            done = true;
                            break;
                        }
                        // It just issued a NOC command: the moment it may
                        // start waiting, so look again at once if still due.
                        Probe::Yielded => {
                            core.ff.probe_failed();
                            try_probe = core.ff.probe_due();
                            break;
                        }
                        Probe::NotIdle => {
                            core.ff.probe_failed();
                            try_probe = false;
                        }
                    }
                }
                match core.hart.run(&mut bus, seg) {
                    Stop::CycleLimit => {
                        done = core.hart.cycle() >= limit;
                        // A packet has left: the core may wait next.
                        try_probe |= !done && may_park && core.ff.probe_due();
                        break;
                    }
                    Stop::Halted(_) => {
                        let behind = limit.saturating_sub(core.hart.cycle());
                        core.hart.skip_cycles(behind);
                        done = true;
                        break;
                    }
                    Stop::Yield => {
                        try_probe = may_park && core.ff.probe_due();
                        break;
                    }
                    Stop::Watch { .. } => {}
                }
            }
            let from = core.coord;
            if !self.issued.is_empty() {
                let mut issued = std::mem::take(&mut self.issued);
                for issue in issued.drain(..) {
                    self.schedule(i, from, issue);
                }
                self.issued = issued;
            }
            if done {
                return;
            }
        }
    }

    /// Reads the flits of leaving writes (of core `only`, or all) that have
    /// left by cycle `t` from their source L1, and counts the writes whose
    /// last flit has left as sent. Returns the earliest cycle after `t` at
    /// which a packet of `only` finishes leaving, if one is still leaving.
    fn read_sources(&mut self, t: u64, only: Option<usize>) -> Option<u64> {
        if self.departing.is_empty() {
            return None;
        }
        let bpc = self.cfg.noc.bytes_per_cycle;
        let Chip { departing, payloads, cores, .. } = self;
        let mut next: Option<u64> = None;
        departing.retain_mut(|d| {
            if only.is_some_and(|c| c != d.src) {
                return true;
            }
            let by = flits_by(d.start, d.len, bpc, t);
            if by > d.read {
                let buf = payloads.get_mut(&d.id).expect("a leaving write has a payload");
                cores[d.src]
                    .hart
                    .mem
                    .l1
                    .read(d.local + d.read, &mut buf[d.read as usize..by as usize])
                    .expect("validated at issue");
                d.read = by;
            }
            if d.read == d.len {
                // No wake needed: a parked core never has writes leaving (see
                // `run_hart`), so it cannot be polling this counter.
                debug_assert!(cores[d.src].ff.idle.is_none(), "a parked core has a write leaving");
                let c = &mut cores[d.src].mmio.counters;
                c.writes_sent = c.writes_sent.wrapping_add(1);
                return false;
            }
            let left = last_flit(d.start, d.len, bpc);
            next = Some(next.map_or(left, |n| n.min(left)));
            true
        });
        next
    }

    /// Lands the flits of arriving reads (issued by core `only`, or all)
    /// that have arrived by cycle `t`.
    fn land_reads(&mut self, t: u64, only: Option<usize>) {
        let bpc = self.cfg.noc.bytes_per_cycle;
        for k in 0..self.landing.len() {
            let l = &self.landing[k];
            let by = flits_by(l.start, l.len, bpc, t);
            if only.is_some_and(|c| c != l.src) {
                continue;
            }
            if by <= l.done {
                continue;
            }
            let (src, target, local, from) = (l.src, l.target, l.local, l.done);
            let n = (by - from) as usize;
            self.wake_if_read(src, ((local + from) as u64, n as u64));
            let mut buf = vec![0; n];
            self.noc_read(target.offset(from as u64), &mut buf);
            self.cores[src].hart.mem.l1.write(local + from, &buf).expect("validated at issue");
            self.landing[k].done = by;
        }
    }

    /// Moves landing reads and leaving writes on to cycle `t` (landing
    /// first: a flit leaving in the same step sees what landed).
    fn advance_transfers(&mut self, t: u64) {
        if !self.landing.is_empty() {
            self.land_reads(t, None);
        }
        self.read_sources(t, None);
    }

    fn push(&mut self, time: u64, kind: EventKind) {
        self.seq += 1;
        self.events.push(Event { time, seq: self.seq, kind });
    }

    fn jitter(&mut self) -> u64 {
        self.rng.jitter.upto(self.cfg.faults.noc_jitter_cycles)
    }

    fn schedule(&mut self, src: usize, from: Coord, issue: NocIssue) {
        let to = farthest(from, issue.target);
        let target = issue.target;
        let ordered = !self.cfg.faults.reorder;
        let (iface, bpc) = (self.cfg.noc.interface_cycles, self.cfg.noc.bytes_per_cycle);
        self.transfers += 1;
        let id = self.transfers;
        match issue.cmd {
            NocCmd::Read => {
                let mut served = issue.time + trip(&self.cfg, from, to, 0) + self.jitter();
                if ordered && endpoint(to) == Endpoint::Pcie {
                    // PCIe: a read does not pass this core's earlier posted writes.
                    served = served.max(self.routes.posted_landed(Route::of(src, target)));
                }
                let now = self.now;
                let out = self.endpoints.done(&self.cfg, to, served, issue.len, true, now);
                let done = out + trip(&self.cfg, to, from, issue.len);
                let in_memory = matches!(endpoint(to), Endpoint::Pcie | Endpoint::Dram { .. })
                    || target.local() < self.cfg.l1_size as u64;
                if in_memory {
                    let start = done + 1 - (issue.len as u64).div_ceil(bpc).max(1);
                    let (local, len) = (issue.local, issue.len);
                    self.landing.push(Landing { id, src, target, local, len, start, done: 0 });
                }
                let (local, len, trid) = (issue.local, issue.len, issue.read_id);
                self.push(done, EventKind::ReadComplete { id, src, target, local, len, trid });
            }
            NocCmd::Write => {
                // One packet at a time through the core's NOC interface.
                let backpressure = self.rng.backpressure.upto(self.cfg.faults.write_backpressure_cycles);
                let start = (issue.time + iface).max(self.niu_free[src]) + backpressure;
                let left = last_flit(start, issue.len, bpc);
                self.niu_free[src] = left + 1;
                let hops = from.hops(to) as u64 * self.cfg.noc.hop_cycles;
                let now = self.now;
                let mut arrive =
                    self.endpoints.done(&self.cfg, to, left + 1 + iface + hops, issue.len, false, now) + self.jitter();
                if ordered {
                    arrive = self.routes.write(Route::of(src, target), issue.time, left, arrive);
                }
                let ack = arrive + trip(&self.cfg, to, from, 0);
                self.payloads.insert(id, vec![0; issue.len as usize]);
                let (local, len) = (issue.local, issue.len);
                self.departing.push(Departing { id, src, local, len, start, read: 0 });
                self.push(arrive, EventKind::WriteArrive { target, id, len });
                self.push(ack, EventKind::WriteAck { src });
            }
            NocCmd::AtomicInc => {
                let now = self.now;
                let reach = issue.time + trip(&self.cfg, from, to, 4);
                let mut arrive = self.endpoints.done(&self.cfg, to, reach, 4, false, now) + self.jitter();
                if ordered {
                    arrive = self.routes.atomic(Route::of(src, target), issue.time, arrive);
                }
                let ack = arrive + trip(&self.cfg, to, from, 0);
                self.push(arrive, EventKind::AtomicArrive { target, value: issue.value });
                self.push(ack, EventKind::AtomicAck { src });
            }
        }
    }

    fn deliver_until(&mut self, t: u64) {
        while self.events.peek().is_some_and(|e| e.time <= t) {
            let e = self.events.pop().expect("peeked");
            // Flits leave and land in time order with the deliveries.
            self.advance_transfers(e.time);
            self.deliver(e);
        }
        self.advance_transfers(t);
    }

    fn deliver(&mut self, e: Event) {
        // Targets were validated at issue and memories never shrink, so
        // deliveries cannot fail.
        self.wake_for(&e.kind);
        match e.kind {
            EventKind::HostWrite { target, data } => {
                self.posted -= 1;
                self.apply_write(target, &data).expect("validated when posted");
            }
            EventKind::WriteArrive { target, id, len } => {
                debug_assert!(self.departing.iter().all(|d| d.id != id), "a write lands only after it has left");
                let data = self.payloads.remove(&id).expect("a write in flight has a payload");
                if is_dram(target) {
                    self.dram_traffic.write_bytes += len as u64;
                }
                self.noc_write(target, &data)
            }
            EventKind::WriteAck { src } => {
                let c = &mut self.cores[src].mmio.counters;
                c.writes_acked = c.writes_acked.wrapping_add(1);
            }
            EventKind::AtomicArrive { target, value } => self.noc_atomic(target, value),
            EventKind::AtomicAck { src } => {
                let c = &mut self.cores[src].mmio.counters;
                c.atomics_acked = c.atomics_acked.wrapping_add(1);
            }
            EventKind::ReadComplete { id, src, target, local, len, trid } => {
                if is_dram(target) {
                    self.dram_traffic.read_bytes += len as u64;
                }
                if let Some(k) = self.landing.iter().position(|l| l.id == id) {
                    // Landed flit by flit (all of it by now).
                    debug_assert_eq!(self.landing[k].done, len);
                    self.landing.remove(k);
                } else {
                    let mut buf = vec![0; len as usize];
                    self.noc_read(target, &mut buf);
                    self.cores[src].hart.mem.l1.write(local, &buf).expect("validated at issue");
                }
                let c = &mut self.cores[src].mmio.counters;
                c.reads_acked = c.reads_acked.wrapping_add(1);
                let by_id = &mut c.reads_acked_id[trid as usize];
                *by_id = by_id.wrapping_add(1);
            }
        }
    }

    /// Unparks every core an event is about to change in a way its parked
    /// loop could notice (what the loop reads: see `IdleLoop::reads_any`).
    /// A change elsewhere lands while the core stays parked.
    fn wake_for(&mut self, kind: &EventKind) {
        let counter = |off: u32| ((MMIO_BASE + off) as u64, 4);
        match kind {
            EventKind::WriteAck { src } => {
                self.wake_if_read(*src, counter(mmio::NOC_WRITES_ACKED));
                self.wake_if_read(*src, counter(mmio::NOC_UNACKED));
            }
            EventKind::AtomicAck { src } => {
                self.wake_if_read(*src, counter(mmio::NOC_ATOMICS_ACKED));
                self.wake_if_read(*src, counter(mmio::NOC_UNACKED));
            }
            EventKind::ReadComplete { src, local, len, trid, .. } => {
                self.wake_if_read(*src, counter(mmio::NOC_READS_ACKED));
                self.wake_if_read(*src, counter(mmio::noc_reads_acked_id(*trid as u32)));
                self.wake_if_read(*src, (*local as u64, *len as u64));
            }
            EventKind::WriteArrive { target, len, .. } => self.wake_targets(*target, *len as u64, false),
            EventKind::AtomicArrive { target, .. } => self.wake_targets(*target, 4, false),
            EventKind::HostWrite { target, data } => self.wake_targets(*target, data.len() as u64, true),
        }
    }

    fn wake_targets(&mut self, target: NocAddr, len: u64, always: bool) {
        let (a, b) = (target.coord(), target.mcast_end());
        for y in a.y..=b.y {
            for x in a.x..=b.x {
                if let Some(i) = self.grid.core(Coord::new(x, y)) {
                    if always {
                        self.wake(i);
                    } else {
                        self.wake_if_read(i, (target.local(), len));
                    }
                }
            }
        }
    }

    fn wake_if_read(&mut self, i: usize, (addr, len): (u64, u64)) {
        if self.cores[i].ff.idle.is_some_and(|l| l.reads_any(addr, len)) {
            self.wake(i);
            self.cores[i].ff.changed();
        }
    }

    /// A NOC write: like a host write, except that to MMIO it may set any
    /// semaphore (and nothing else).
    fn noc_write(&mut self, target: NocAddr, data: &[u8]) {
        if target.local() >= MMIO_BASE as u64 && !target.is_multicast() {
            if let Some(i) = self.grid.core(target.coord()) {
                let off = (target.local() - MMIO_BASE as u64) as u32;
                if let Some(s) = self.cores[i].mmio.semaphore_mut(off) {
                    *s = u32::from_le_bytes(data.try_into().expect("one register"));
                }
                return;
            }
        }
        self.apply_write(target, data).expect("validated at issue");
    }

    fn noc_read(&self, target: NocAddr, buf: &mut [u8]) {
        self.read(target, buf).expect("validated at issue");
    }

    fn noc_atomic(&mut self, target: NocAddr, value: u32) {
        let local = target.local();
        if (MMIO_BASE as u64..(MMIO_BASE + MMIO_SIZE) as u64).contains(&local) {
            if let Some(i) = self.grid.core(target.coord()) {
                let off = (local - MMIO_BASE as u64) as u32;
                if let Some(s) = self.cores[i].mmio.semaphore_mut(off) {
                    *s = s.wrapping_add(value);
                }
                return;
            }
        }
        let old = self.read_u32(target).expect("validated at issue");
        self.apply_write(target, &old.wrapping_add(value).to_le_bytes()).expect("validated at issue");
    }

    /// Forgets every decoded instruction of `core`, for code written into
    /// its L1 behind the chip's back (a host's stores into a shared mapping).
    pub fn invalidate_code(&mut self, core: Coord) -> Result<(), SimError> {
        let i = self.core_or_err(NocAddr::unicast(core, 0))?;
        self.wake(i);
        self.cores[i].hart.mem.l1.invalidate_all();
        Ok(())
    }

    /// Hang-dump view of one core; `None` if there is no core there.
    pub fn core_debug(&self, coord: Coord) -> Option<CoreDebug> {
        self.core(coord).map(|c| CoreDebug::of(c.coord, &c.hart, &c.mmio, crate::HISTORY_LEN))
    }

    /// Samples the PC of each of `cores` at the end of every scheduling
    /// slice from now on, a statistical profile: each sample stands for the
    /// slice's device time (`quantum_cycles` plus jitter, or less where a
    /// host step ends the slice early), spent at or around that PC. Earlier
    /// samples are dropped; an empty list stops sampling. Sampling reads
    /// only: a run is the same with it or without.
    pub fn set_pc_sampling(&mut self, cores: &[Coord]) -> Result<(), SimError> {
        let mut indices = Vec::with_capacity(cores.len());
        for &c in cores {
            let i = self.core_or_err(NocAddr::unicast(c, 0))?;
            indices.push(i);
        }
        self.sampling = (!indices.is_empty()).then(|| PcSampling { cores: indices, cycles: BTreeMap::new() });
        Ok(())
    }

    /// The samples taken since `set_pc_sampling`: (core, PC, cycles of the
    /// slices that ended there), most cycles first. Each core's cycles add
    /// up to the device time since sampling started.
    pub fn pc_samples(&self) -> Vec<(Coord, u32, u64)> {
        let mut v: Vec<_> =
            self.sampling.iter().flat_map(|s| &s.cycles).map(|(&(i, pc), &n)| (self.cores[i].coord, pc, n)).collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.packed().cmp(&b.0.packed())).then(a.1.cmp(&b.1)));
        v
    }

    /// NOC transactions issued but not yet delivered or acknowledged.
    pub fn in_flight(&self) -> usize {
        self.events.len()
    }

    /// A 64-bit digest of the whole device state (memories, registers,
    /// counters, sysmem, DRAM, pending events, time, host BAR time not yet
    /// charged), hashed as bytes (see [`crate::digest`]). Equal digests
    /// mean (up to hash collisions) bit-identical runs.
    pub fn digest(&self) -> u64 {
        let mut h = Digest::default();
        h.u64(self.now);
        h.u64(self.host_busy);
        for c in &self.cores {
            h.u64(c.coord.packed() as u64);
            h.u64(c.hart.pc() as u64);
            h.u64(c.hart.cycle());
            h.u64(c.hart.instret());
            for r in c.hart.regs() {
                h.u64(r as u64);
            }
            h.halt(c.hart.halted());
            // Every register the block maps, by offset (unmapped ones: a tag).
            for off in (0..MMIO_SIZE).step_by(4) {
                h.u64(c.mmio.read(off).map_or(u64::MAX, u64::from));
            }
            h.bytes(&c.hart.mem.l1.bytes());
        }
        for (bank, bytes) in self.grid.dram.touched() {
            h.u64(bank as u64);
            h.bytes(&bytes);
        }
        h.bytes(&self.sysmem.snapshot());
        let mut pending: Vec<&Event> = self.events.iter().collect();
        pending.sort_by_key(|e| (e.time, e.seq));
        for e in pending {
            h.event(e);
        }
        for d in &self.departing {
            h.departing(d);
        }
        for l in &self.landing {
            h.landing(l);
        }
        for &t in &self.niu_free {
            h.u64(t);
        }
        let links = [&self.endpoints.pcie_read, &self.endpoints.pcie_write];
        for link in links {
            // Only what still matters (bookings drop lazily).
            let live = link.busy().iter().filter(|&&(_, e)| e > self.now);
            h.u64(live.clone().count() as u64);
            for &(s, e) in live {
                h.u64(s);
                h.u64(e);
            }
        }
        for (id, bytes) in &self.payloads {
            h.u64(*id);
            h.bytes(bytes);
        }
        h.finish()
    }
}

#[cfg(test)]
#[path = "chip_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "chip_noc_tests.rs"]
mod noc_tests;
