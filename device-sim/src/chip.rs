//! The chip: a real Wormhole B0 or Blackhole, from its description
//! (`soc::ChipLayout`: a board and its harvesting). Every Tensix tile has
//! L1, five RV32IM cores (BRISC, NCRISC, TRISC0-2) with their local memories
//! and reset PCs, two NIUs (`niu`) and its debug registers (`tensix`); the
//! DRAM tiles serve their channels; the PCIe tile forwards the chip's
//! host-memory range to a sysmem buffer the simulator owns or borrows (a
//! shared file mapping in daemon mode), or to the host's own memory access
//! by access (libttsim's DMA callbacks; see [`crate::memory::Sysmem`]); ARC
//! answers what a host reads at open (`arc`). Ethernet, router-only,
//! security, L2CPU and harvested tiles refuse every access with an error
//! naming the tile and the address. A deterministic single-threaded
//! scheduler runs the cores; the host reaches the chip through BAR0 and
//! BAR4 as the chip lays them out (`bar`), or directly by NOC address.
//!
//! Time advances only in [`Chip::advance`] / [`Chip::run_until`]: the host
//! hands control to the device when it waits, so seed + config + host
//! program fix the whole run. The scheduler cuts time into slices of
//! `quantum_cycles` (plus seeded jitter); each core runs to the slice end in a
//! seeded rotation order, then NOC events due by then are delivered in
//! (time, issue order). With `exact_time` a slice lasts at most the NOC's
//! lookahead (the least time a request takes to its first effect) and
//! ends early at the next due NOC event (`Chip::slice_end_from`), so an
//! effect between tiles lands exactly at the cycle it is due, before any
//! core runs that cycle. Host reads and writes take effect immediately and
//! cost no simulated time (the `bar_*` and `timed_*` accesses charge BAR
//! time). A tile that has writes leaving its L1 runs its cores in segments
//! that end where one of its packets has left, so the last flit reads the
//! source exactly then (see `noc` for the model and the ordering rules).
//!
//! The five cores of a tile share its L1: a core runs with the tile's L1
//! lent to it (and keeps it until a sibling runs, so a tile whose one core
//! runs never moves it; everything else reaches it through `Chip::l1`),
//! and cores of a slice run one after the other, so a store is
//! seen by the siblings that run after the storing core in the slice's
//! rotation and by the others from the next slice on. A store to a word a
//! parked sibling polls ends the core's run (a watched range) and brings
//! the sibling to exactly that state (`Chip::sibling_stored`), so idle
//! fast-forward stays exact across cores of one tile.

use crate::arc::Arc;
use crate::bar::{self, BarTarget, Tlbs};
use crate::config::{ConfigError, Schedule, SimConfig};
use crate::debug::CoreDebug;
use crate::digest::Digest;
use crate::dram::Dram;
use crate::elf::{ElfError, ElfImage, Window};
use crate::fastforward::{probe_with, FfState, Probe, ProbeScratch};
use crate::hart::{Halt, Hart, Stop};
use crate::links::{Class, Mesh, Packet};
use crate::memory::{Memory, Ram, Sysmem};
use crate::niu::Kind;
use crate::noc::{
    self, flits_by, last_flit, packet_flits, trip, Departing, EndpointKind, Endpoints, Event, EventKind, Landing,
    Route, Routes, Source, Target,
};
use crate::pct::{Pct, Slice};
use crate::request::{Issued, Refusal, Resolver};
use crate::rng::{self, Stream, Streams};
pub use crate::tensix::CoreId;
use crate::tensix::{remote_reg, RegAccess, TensixRegs, TileBus};
use cqlab_abi::arch::niu::counter;
use cqlab_abi::arch::noc_addr::CoordField;
use cqlab_abi::arch::tensix::{self, Processor};
use cqlab_abi::arch::{ArchParams, Noc};
use cqlab_abi::memory_map::local_mem;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::{ChipLayout, TileKind};
use std::collections::{BTreeMap, BinaryHeap};
use thiserror::Error;

/// A host access or boot step the chip cannot perform.
#[derive(Debug, Error, PartialEq)]
pub enum SimError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{noc:?} request to {coord} (tile address {addr:#x}): {reason}{}", tile.map_or(String::new(), |t| format!(" (NOC0 tile {t})")))]
    Refused { noc: Noc, coord: Coord, tile: Option<Coord>, addr: u64, reason: &'static str },
    /// `tile` translated (as requests name it), `noc0` its NOC0 coordinates.
    #[error("tile {tile} (NOC0 tile {noc0}): register {addr:#010x}: {reason}")]
    Register { tile: Coord, noc0: Coord, addr: u32, reason: &'static str },
    #[error("ARC: {0}")]
    Arc(String),
    #[error("loading an ELF onto {coord}: {source}")]
    Elf { coord: Coord, source: ElfError },
    #[error("condition not met within {budget} cycles (device time {now})")]
    Timeout { budget: u64, now: u64 },
    #[error("sysmem storage of {found} bytes does not match sysmem_size {expected}")]
    SysmemSize { expected: usize, found: usize },
    #[error("{0}")]
    Bar(String),
    #[error("{what}: {got}")]
    NotATile { what: &'static str, got: String },
}

/// One core: its hart (with its local memory) and where it sits.
pub struct Core {
    pub id: CoreId,
    /// Index of its tile in the chip (NOC0 row-major).
    tile: usize,
    pub hart: Hart,
    /// Held by `SOFT_RESET_0`.
    pub in_reset: bool,
    ff: FfState,
    /// `faults.slow_cores` factor (1.0: full speed).
    slowdown: f64,
    /// In [`Chip::active`] (kept beside it so the slice loop's check after
    /// each run is one comparison, not a search).
    listed: bool,
    /// The end of the last slice it drew a core stall in: one draw a
    /// slice, also when a sibling's store runs it again in the slice.
    stall_drawn_for: u64,
}

impl Core {
    /// Device cycles this core spent parked by idle fast-forward.
    pub fn fast_forwarded_cycles(&self) -> u64 {
        self.ff.skipped_cycles
    }
}

/// A Tensix tile's shared state.
struct Tensix {
    /// Its L1, unless lent to a core (`l1_holder`): a core that runs holds
    /// it, and keeps it until a sibling runs, so a tile whose one core runs
    /// slice after slice never moves it. Reached through [`Chip::l1`].
    l1_home: Ram,
    /// The core (index in [`Chip::cores`]) whose hart holds the L1.
    l1_holder: Option<usize>,
    regs: TensixRegs,
    /// Its cores' indices in [`Chip::cores`], `Processor::ALL` order.
    cores: [usize; 5],
    /// `[lo, hi)` bounding what its parked cores' loops read (empty when
    /// none is parked): most changes to a tile miss it, and are then known
    /// to wake no one without asking each core (`Chip::wake_tile_if_read`).
    parked_reads: (u64, u64),
    /// The L1 bytes its parked cores poll, `(start, length)` of their
    /// bounding range (`(0, 0)` for none): a running core's stores there
    /// must end its run so they are woken.
    parked_l1: (u32, u32),
    /// Its writes still leaving its L1, in issue order.
    departing: Vec<Departing>,
    /// No write of `departing` reads more of its source before this cycle
    /// (most runs of a core find nothing to read: packets queued behind
    /// others or held back), and the earliest cycle one finishes leaving.
    departing_quiet_until: u64,
    departing_next_left: Option<u64>,
    /// None of the reads it issued lands more flits before this cycle
    /// (`u64::MAX` when none is landing): most runs of a core find none.
    landing_quiet_until: u64,
    /// The earliest of its requests to itself due inside the slice being
    /// run (`u64::MAX` when none; [`Chip::settle_own`]).
    own_due: u64,
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
    layout: ChipLayout,
    chip: &'static ArchParams,
    /// Tensix tiles by tile index (NOC0 row-major); `None` for the others.
    tiles: Vec<Option<Tensix>>,
    cores: Vec<Core>,
    dram: Dram,
    sysmem: Sysmem,
    arc: Arc,
    tlbs: Tlbs,
    now: u64,
    events: BinaryHeap<Event>,
    seq: u64,
    /// One random stream per concern (scheduler, jitter, stalls, doorbells,
    /// back-pressure).
    rng: Streams,
    issued: Vec<Issued>,
    /// Ordering rules as arrival clamps (off with `faults.reorder`).
    routes: Routes,
    /// Writes still reading their source (each tile holds its own).
    departing_writes: usize,
    /// Tiles that may hold leaving writes (every tile that does).
    departing_tiles: Vec<usize>,
    /// Reads whose data is landing.
    landing: Vec<Landing>,
    /// Write payloads by id, filled as their flits leave, taken on arrival.
    payloads: BTreeMap<u64, Vec<u8>>,
    /// Old values of atomics whose response is on its way, `(id, old)` by
    /// ascending id (a few at a time: a sorted vector beats a map).
    atomic_old: Vec<(u64, u32)>,
    /// Per NIU (`Source::index`): first cycle it is free to send a packet.
    niu_free: Vec<u64>,
    /// Per NIU (as `niu_free`): its last write was a linked multicast, so
    /// the next multicast keeps the path (`noc.linked_multicast_bytes_per_cycle`).
    niu_linked: Vec<bool>,
    /// The PCIe link's two directions.
    endpoints: Endpoints,
    /// The links between routers, with `noc.link_contention` (else `None`:
    /// no cost beyond a branch).
    mesh: Option<Mesh>,
    /// Ids of writes, reads and atomics.
    transfers: u64,
    /// PCT state when `cfg.schedule` is `Pct`.
    pct: Option<Pct>,
    /// Posted host writes not yet landed (late doorbell).
    posted: usize,
    /// Landing time of the last posted host write (they land in order).
    last_posted_at: u64,
    /// Bytes cores moved to and from DRAM over the NOC (host access excluded).
    dram_traffic: DramTraffic,
    /// Cores the slice loop must visit (outside PCT), ascending: out of
    /// reset, not halted, and not parked (parked ones too when stalls are
    /// drawn per core). Cores left out keep their counters lazily; they are
    /// brought to device time at the end of `advance` and on release.
    active: Vec<usize>,
    /// Scratch copy of `active` for one slice.
    order: Vec<usize>,
    /// Scratch: the tiles an exact-time delivery touches
    /// ([`Chip::touched_tiles`]).
    touched: Vec<usize>,
    /// Host time spent on BAR writes not yet handed to the device (see
    /// [`crate::bar`]): charged at the host's next BAR read or poll.
    host_busy: u64,
    /// The slice being run: its end and the core its rotation starts at
    /// (transient scheduling state, not device state).
    slice_end: u64,
    slice_first: usize,
    /// The slice's length over a whole slice's: a core stall is drawn with
    /// `faults.core_stall_prob` times it, so a slice cut short where a host
    /// step ends draws its share (helper-66: each cut slice drew the whole
    /// probability, and `--core-stall` at 90 % of the cores' time wedged
    /// the device for good).
    slice_share: f64,
    /// Keys each slice's rotation by its start cycle (`rng::at`).
    rotation_key: u64,
    /// Cores woken during the slice by a sibling's store that come after
    /// the storing core in its rotation: they run in this slice still.
    late: Vec<usize>,
    /// The event being delivered, while the transfers before it move on
    /// (kept here so a host-memory access that unwinds does not lose it).
    delivering: Option<Event>,
    /// With exact time outside PCT, the end of the slice being run (0
    /// otherwise): an event due before it is a tile's request to itself,
    /// kept in `own` and delivered inside the slice ([`Chip::settle_own`]).
    own_until: u64,
    /// Those events (a few at most; none between slices).
    own: Vec<Event>,
    /// Working memory of the idle-loop probe (scheduling state).
    probe_scratch: Box<ProbeScratch>,
}

/// L1s (one per Tensix tile, in [`Chip::tensix_tiles`] order) and DRAM a
/// chip computes on without owning them (see [`Chip::with_memories`]).
pub struct Memories {
    pub l1: Vec<Ram>,
    pub dram: Dram,
}

/// What the cores' L0 data caches did ([`Chip::l0_cache`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct L0Summary {
    pub hits: u64,
    pub stale_hits: u64,
    /// The first stale hit in device time.
    pub first_stale: Option<StaleHit>,
}

/// A load that hit a copy in a core's L0 data cache that L1 no longer held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleHit {
    pub core: CoreId,
    /// The device cycle of the load.
    pub cycle: u64,
    pub pc: u32,
    pub addr: u32,
}

/// DRAM bytes moved by NOC transactions since power-on or the last reset of
/// the counters: what a workload costs in memory traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DramTraffic {
    pub read_bytes: u64,
    pub write_bytes: u64,
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
        let layout = cfg.layout()?;
        let chip = layout.params();
        let found = sysmem.len();
        if found != cfg.sysmem_size {
            return Err(SimError::SysmemSize { expected: cfg.sysmem_size, found });
        }
        if !matches!(sysmem, Sysmem::Owned(_)) {
            sysmem.zero();
        }
        let desc = layout.descriptor();
        let tensix: Vec<Coord> = layout.tiles().iter().filter(|t| t.kind == TileKind::Tensix).map(|t| t.noc0).collect();
        let (mut l1s, dram) = match memories {
            Some(m) => {
                assert_eq!(m.l1.len(), tensix.len(), "one L1 per Tensix tile, in Chip::tensix_tiles order");
                (m.l1.into_iter().map(Some).collect::<Vec<_>>(), m.dram)
            }
            None => ((0..tensix.len()).map(|_| None).collect(), Dram::new(desc.dram.len(), desc.dram_bank_size)),
        };
        let g = layout.grid();
        let mut tiles: Vec<Option<Tensix>> = (0..g.x as usize * g.y as usize).map(|_| None).collect();
        let mut cores = Vec::with_capacity(5 * tensix.len());
        let l1_stores = crate::timing::L1Stores::of(cfg.board.arch());
        for (k, &c) in tensix.iter().enumerate() {
            let t = c.y as usize * g.x as usize + c.x as usize;
            let translated = layout.tile(c).expect("a tile").translated;
            let mut ids = [0usize; 5];
            for p in Processor::ALL {
                let local = local_mem(chip, p);
                let mem = Memory::new(Ram::new(0, 0), None).with_local_mem(local.base, local.size);
                ids[p.index()] = cores.len();
                cores.push(Core {
                    id: CoreId { tile: translated, processor: p },
                    tile: t,
                    hart: {
                        let mut h = Hart::new(mem, p.index() as u32, chip.tensix.default_reset_pc(p));
                        h.set_l1_stores(l1_stores);
                        h.set_taken_penalty(crate::timing::taken_penalty(cfg.board.arch()));
                        h.set_pipelined_loads(cfg.pipelined_loads);
                        if cfg.icache {
                            let bytes = crate::icache::capacity(cfg.board.arch(), p);
                            h.set_icache(crate::icache::ICache::new(bytes, cfg.icache_miss_cycles));
                        }
                        if cfg.l0_data_cache {
                            let seed = crate::rng::Rng::fork(cfg.seed, crate::rng::Stream::L0Flush).next_u64()
                                ^ crate::rng::at(cores.len() as u64, 0);
                            h.set_l0_cache(crate::l0cache::L0Cache::new(seed));
                        }
                        h
                    },
                    in_reset: true,
                    ff: FfState::default(),
                    slowdown: 1.0,
                    listed: false,
                    stall_drawn_for: 0,
                });
            }
            let l1 = l1s[k].take().unwrap_or_else(|| Ram::new(0, chip.l1_size));
            tiles[t] = Some(Tensix {
                l1_home: l1,
                l1_holder: None,
                regs: TensixRegs::new(&layout, c),
                cores: ids,
                parked_reads: (0, 0),
                parked_l1: (0, 0),
                departing: Vec::new(),
                departing_quiet_until: u64::MAX,
                departing_next_left: None,
                landing_quiet_until: u64::MAX,
                own_due: u64::MAX,
            });
        }
        for s in &cfg.faults.slow_cores {
            let t = layout
                .resolve(Noc::Noc0, s.core)
                .filter(|&c| layout.tile(c).is_some_and(|t| t.kind == TileKind::Tensix))
                .ok_or(ConfigError::NoSuchCore { core: s.core })?;
            let t = t.y as usize * g.x as usize + t.x as usize;
            for &i in &tiles[t].as_ref().expect("a Tensix tile").cores {
                cores[i].slowdown = s.factor;
            }
        }
        let mut rng = Streams::new(cfg.seed);
        let pct = match cfg.schedule {
            Schedule::Slices => None,
            Schedule::Pct { depth, steps } => Some(Pct::new(depth, steps, cores.len(), &mut rng.scheduler)),
        };
        Ok(Chip {
            sysmem,
            rng,
            routes: Routes::default(),
            departing_writes: 0,
            departing_tiles: Vec::new(),
            landing: Vec::new(),
            payloads: BTreeMap::new(),
            atomic_old: Vec::new(),
            niu_free: vec![0; 2 * tiles.len()],
            niu_linked: vec![false; 2 * tiles.len()],
            endpoints: Endpoints::default(),
            mesh: cfg.noc.link_contention.then(|| Mesh::new(&layout, cfg.noc.hop_cycles)),
            transfers: 0,
            pct,
            posted: 0,
            last_posted_at: 0,
            dram_traffic: DramTraffic::default(),
            active: Vec::new(),
            order: Vec::new(),
            touched: Vec::new(),
            host_busy: 0,
            slice_end: 0,
            slice_first: 0,
            slice_share: 1.0,
            rotation_key: rng::Rng::fork(cfg.seed, Stream::Scheduler).next_u64(),
            late: Vec::new(),
            probe_scratch: Box::default(),
            delivering: None,
            own_until: 0,
            own: Vec::new(),
            sampling: None,
            arc: Arc::new(&layout),
            tlbs: Tlbs::new(&chip.bar),
            dram,
            chip,
            layout,
            cfg,
            tiles,
            cores,
            now: 0,
            events: BinaryHeap::new(),
            seq: 0,
            issued: Vec::new(),
        })
    }

    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The chip's tiles, coordinates and harvesting.
    pub fn layout(&self) -> &ChipLayout {
        &self.layout
    }

    /// The chip's architecture facts.
    pub fn arch(&self) -> &'static ArchParams {
        self.chip
    }

    /// Back to power-on state (time 0, memories and sysmem zeroed, cores in
    /// reset, nothing in flight, TLBs cleared, the seed's streams restarted),
    /// keeping the sysmem storage (so a shared mapping stays shared).
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

    /// The cores' L0 data caches (`SimConfig::l0_data_cache`), summed:
    /// loads that hit, hits that returned bytes L1 no longer held, and the
    /// first stale hit in device time (the lowest core on a tie): its core,
    /// cycle, PC and address. `None` when the model has none.
    pub fn l0_cache(&self) -> Option<L0Summary> {
        self.cfg.l0_data_cache.then(|| {
            let mut s = L0Summary::default();
            let mut first: Option<u64> = None;
            for c in &self.cores {
                let l0 = c.hart.l0_cache();
                s.hits += l0.hits();
                s.stale_hits += l0.stale_hits();
                if let Some((cycle, pc, addr)) = l0.first_stale() {
                    if first.is_none_or(|f| cycle < f) {
                        first = Some(cycle);
                        s.first_stale = Some(StaleHit { core: c.id, cycle, pc, addr });
                    }
                }
            }
            s
        })
    }

    /// Zeroes the DRAM traffic counters (e.g. after loading inputs).
    pub fn reset_dram_traffic(&mut self) {
        self.dram_traffic = DramTraffic::default();
    }

    /// Device time in cycles.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Every unharvested Tensix tile by its translated coordinates, NOC0
    /// row by row.
    pub fn tensix_tiles(&self) -> impl Iterator<Item = Coord> + '_ {
        self.tiles.iter().flatten().map(|t| self.cores[t.cores[0]].id.tile)
    }

    /// Every core: each Tensix tile's five, tile by tile.
    pub fn cores(&self) -> impl Iterator<Item = CoreId> + '_ {
        self.cores.iter().map(|c| c.id)
    }

    /// The tile index of the Tensix tile at translated `c`.
    fn tensix_index(&self, c: Coord) -> Option<usize> {
        let t = self.layout.resolve(Noc::Noc0, c)?;
        let i = t.y as usize * self.layout.grid().x as usize + t.x as usize;
        self.tiles.get(i)?.as_ref().map(|_| i)
    }

    fn core_index(&self, id: CoreId) -> Option<usize> {
        let t = self.tensix_index(id.tile)?;
        Some(self.tiles[t].as_ref()?.cores[id.processor.index()])
    }

    /// Direct access to a core (tests, tools), settled to device time.
    /// `None` if it does not exist.
    pub fn core(&mut self, id: CoreId) -> Option<&Core> {
        let i = self.core_index(id)?;
        self.wake(i);
        Some(&self.cores[i])
    }

    /// Why core `id` halted, if it did (a parked core never has: no need
    /// to settle it). `None` also if it does not exist.
    pub fn halt_of(&self, id: CoreId) -> Option<Halt> {
        self.core_index(id).and_then(|i| self.cores[i].hart.halted())
    }

    /// Host sysmem as the device sees it through the PCIe tile (a copy when
    /// it is a shared region the host writes concurrently).
    ///
    /// # Panics
    /// When sysmem is the host's, reached access by access
    /// ([`Sysmem::Host`], a libttsim host's memory): the chip holds no copy.
    pub fn sysmem(&self) -> std::borrow::Cow<'_, [u8]> {
        self.sysmem
            .snapshot()
            .expect("Chip::sysmem: this chip's host memory is the host's (Sysmem::Host); it holds no copy")
    }

    /// Sysmem to write in place; `None` when it is shared with a running host.
    pub fn sysmem_mut(&mut self) -> Option<&mut [u8]> {
        self.sysmem.bytes_mut()
    }

    fn resolver(&self) -> Resolver<'_> {
        Resolver {
            layout: &self.layout,
            chip: self.chip,
            dram_channel_size: self.dram.channel_size(),
            sysmem_size: self.cfg.sysmem_size as u64,
            arc: &self.arc,
        }
    }

    /// The target of a host access of `len` bytes at NOC address `addr`
    /// on `noc`.
    fn host_target(&self, noc: Noc, addr: NocAddr, len: usize) -> Result<Target, SimError> {
        let split = self.chip.noc.split;
        let words = split.split(addr.hw());
        let (coords, tile_addr) = (split.coords(words), split.tile_addr(words));
        self.host_target_at(noc, coords, tile_addr, addr.is_multicast(), len)
    }

    fn host_target_at(
        &self,
        noc: Noc,
        coords: CoordField,
        tile_addr: u64,
        multicast: bool,
        len: usize,
    ) -> Result<Target, SimError> {
        let refused =
            |r: Refusal| SimError::Refused { noc, coord: r.coord, tile: r.tile, addr: tile_addr, reason: r.reason };
        // Registers are checked when read or written.
        let (target, _, _) =
            self.resolver().resolve(noc, coords, tile_addr, len as u64, multicast, None).map_err(refused)?;
        Ok(target)
    }

    /// Translated coordinates of tile index `t`.
    fn tile_coord(&self, t: usize) -> Coord {
        let noc0 = self.noc0_coord(t);
        self.layout.tile(noc0).map_or(noc0, |tile| tile.translated)
    }

    /// Tile index `t`'s NOC0 coordinates.
    fn noc0_coord(&self, t: usize) -> Coord {
        let g = self.layout.grid();
        Coord::new((t % g.x as usize) as u8, (t / g.x as usize) as u8)
    }

    /// Host write by NOC address (NOC0, translated coordinates, as a TLB
    /// window on NOC0 reaches it), no simulated cost. Reaches Tensix L1 and
    /// registers (`SOFT_RESET_0`, Blackhole's reset PCs), DRAM, host memory
    /// through the PCIe tile; a multicast writes every Tensix tile of the
    /// rectangle. Immediate, unless `faults.host_write_delay_cycles` posts
    /// it (late doorbell): then it is checked now and lands later, in order.
    pub fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<(), SimError> {
        self.write_on(Noc::Noc0, addr, data)
    }

    /// [`Chip::write`] as a request on `noc` (NOC1 names untranslated tiles
    /// by their NOC1 coordinates).
    pub fn write_on(&mut self, noc: Noc, addr: NocAddr, data: &[u8]) -> Result<(), SimError> {
        let target = self.host_target(noc, addr, data.len())?;
        self.host_write_target(target, data)
    }

    fn host_write_target(&mut self, target: Target, data: &[u8]) -> Result<(), SimError> {
        if let Target::Arc { addr } = target {
            return Err(SimError::Arc(format!("ARC address {addr:#010x} is read-only to the host in cqlab's model")));
        }
        if let Target::Reg { tile, addr } = &target {
            self.check_reg_write(*tile, *addr)?;
        }
        let delay = self.cfg.faults.host_write_delay_cycles;
        if delay > 0 && !matches!(target, Target::Host { .. }) {
            let at = (self.now + self.rng.doorbells.upto(delay)).max(self.last_posted_at);
            self.last_posted_at = at;
            self.posted += 1;
            self.push(at, EventKind::HostWrite { target, data: data.to_vec() });
            return Ok(());
        }
        self.apply_write(&target, data, self.now);
        Ok(())
    }

    fn check_reg_write(&self, tile: usize, addr: u32) -> Result<(), SimError> {
        remote_reg(self.chip, addr, true).map_err(|reason| SimError::Register {
            tile: self.tile_coord(tile),
            noc0: self.noc0_coord(tile),
            addr,
            reason,
        })
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
        let target = self.host_target(Noc::Noc0, addr, buf.len())?;
        self.read_target(&target, buf)
    }

    /// A host write through a TLB window onto NOC address `addr` (NOC0), as
    /// tt-umd's tile writes do: [`Chip::write`] plus the host time it takes
    /// ([`crate::bar::BarTiming`]), which the device gets to run at the
    /// host's next timed read or [`Chip::host_poll`] (writes are posted).
    pub fn timed_write(&mut self, addr: NocAddr, data: &[u8]) -> Result<(), SimError> {
        self.write(addr, data)?;
        self.host_busy += self.cfg.bar.write_cycles(data.len());
        Ok(())
    }

    /// A host read through a TLB window: the device runs for the host time
    /// of earlier posted writes and of this read's round trip, then the
    /// read lands posted writes and samples memory ([`Chip::host_read`]).
    pub fn timed_read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<(), SimError> {
        // Resolved first: a refused read changes nothing, device time included.
        if addr.is_multicast() {
            return Err(SimError::Refused {
                noc: Noc::Noc0,
                coord: addr.coord(),
                tile: None,
                addr: addr.local(),
                reason: "reads cannot be multicast",
            });
        }
        let target = self.host_target(Noc::Noc0, addr, buf.len())?;
        self.check_readable(&target, buf.len())?;
        self.charge_read(buf.len());
        self.land_posted_writes();
        self.read_target(&target, buf)
    }

    /// Refuses a host read of `len` bytes at `target` that would fail, before
    /// it costs any time: a multicast, a register or ARC word not modelled.
    fn check_readable(&self, target: &Target, len: usize) -> Result<(), SimError> {
        match target {
            Target::Multicast { .. } => Err(SimError::Bar("reads cannot be multicast".into())),
            Target::Reg { tile, addr } => self.peek_reg(*tile, *addr).map(drop),
            Target::Arc { addr } => self.arc.read(*addr, &mut vec![0; len]).map_err(SimError::Arc),
            Target::L1 { .. } | Target::Dram { .. } | Target::Host { .. } => Ok(()),
        }
    }

    fn charge_read(&mut self, len: usize) {
        let busy = std::mem::take(&mut self.host_busy) + self.cfg.bar.read_cycles(len);
        self.advance(busy);
    }

    /// Whether the host reaches ARC through BAR0 (Blackhole: only through
    /// PCIe 1, tile 11-0; tt-isa `BlackholeA0/PCIExpressTile/README.md`).
    fn arc_over_bar(&self) -> bool {
        match self.chip.arch {
            cqlab_abi::arch::Arch::Wormhole => true,
            cqlab_abi::arch::Arch::Blackhole => self.layout.pcie_tile() != Coord::new(2, 0),
        }
    }

    /// A host write of `data` at byte `offset` of BAR `bar` (0 or 4), as the
    /// chip lays the BARs out (`arch::bar`): into a TLB window (reaching the
    /// tile its configuration register names), a TLB configuration
    /// register, or an error naming what is there. Charged as
    /// [`Chip::timed_write`].
    pub fn bar_write(&mut self, bar: u8, offset: u64, data: &[u8]) -> Result<(), SimError> {
        match bar::decode(self.chip, self.arc_over_bar(), bar, offset, data.len()).map_err(SimError::Bar)? {
            BarTarget::Window { index, offset: at } => {
                let target = self.window_target(index, at, data.len())?;
                self.host_write_target(target, data)?;
            }
            BarTarget::TlbConfig { index, byte } => {
                self.tlbs.write(&self.chip.bar, index, byte, data).map_err(SimError::Bar)?
            }
            BarTarget::PcieNiu { noc, offset } => {
                return Err(SimError::Bar(format!(
                    "BAR0: the PCIe tile's {noc:?} NIU registers (offset {offset:#x}) are read-only in cqlab's model"
                )))
            }
            BarTarget::Arc { addr } => {
                return Err(SimError::Arc(format!(
                    "ARC address {addr:#010x} is read-only to the host in cqlab's model"
                )))
            }
        }
        self.host_busy += self.cfg.bar.write_cycles(data.len());
        Ok(())
    }

    /// A host read of `buf.len()` bytes at byte `offset` of BAR `bar`,
    /// charged as [`Chip::timed_read`].
    pub fn bar_read(&mut self, bar: u8, offset: u64, buf: &mut [u8]) -> Result<(), SimError> {
        let at = bar::decode(self.chip, self.arc_over_bar(), bar, offset, buf.len()).map_err(SimError::Bar)?;
        // Resolved and checked before the read is charged: a refused read
        // changes nothing, device time included (docs/libttsim.md).
        let window = match at {
            BarTarget::Window { index, offset: at } => {
                let target = self.window_target(index, at, buf.len())?;
                self.check_readable(&target, buf.len()).map_err(|e| match e {
                    SimError::Bar(why) => SimError::Bar(format!("TLB window {index}: {why}")),
                    other => other,
                })?;
                Some(target)
            }
            BarTarget::TlbConfig { index, byte } => {
                self.tlbs.read(&self.chip.bar, index, byte, buf).map_err(SimError::Bar)?;
                None
            }
            BarTarget::PcieNiu { noc, offset } => {
                fill_words(buf, self.pcie_niu(noc, offset)?)?;
                None
            }
            BarTarget::Arc { addr } => {
                self.arc.read(addr, buf).map_err(SimError::Arc)?;
                None
            }
        };
        self.charge_read(buf.len());
        self.land_posted_writes();
        // TLB configuration, the PCIe NIU and ARC words do not move with
        // device time: read above.
        match window {
            Some(target) => self.read_target(&target, buf),
            None => Ok(()),
        }
    }

    /// The PCIe tile's NIU register at `offset` of `noc`'s block: its
    /// `NOC_NODE_ID` and `NIU_CFG_0` (translation on) are modelled.
    fn pcie_niu(&self, noc: Noc, offset: u32) -> Result<u32, SimError> {
        let n = &self.chip.niu;
        let pcie = self.layout.tile(self.layout.pcie_tile()).expect("the PCIe tile");
        let own = if noc == Noc::Noc0 { pcie.noc0 } else { pcie.noc1 };
        let g = self.chip.grid;
        if offset == n.regs.node_id {
            return Ok(cqlab_abi::arch::niu::node_id::encode(own.x, own.y, g.x, g.y, noc));
        }
        if offset == n.cfg_base + 4 * n.cfg.niu_cfg_0 {
            return Ok(cqlab_abi::arch::niu::niu_cfg_0::NOC_ID_TRANSLATE_EN);
        }
        Err(SimError::Bar(format!(
            "BAR0: PCIe tile {noc:?} NIU register at offset {offset:#x} is not modelled (cqlab models its NOC_NODE_ID \
             and NIU_CFG_0)"
        )))
    }

    /// What byte `at` (and `len` bytes on) of TLB window `index` reaches.
    fn window_target(&self, index: u32, at: u64, len: usize) -> Result<Target, SimError> {
        let (c, size_log2) = self.tlbs.config(&self.chip.bar, index).map_err(SimError::Bar)?;
        let addr = (c.local_offset << size_log2) | at;
        let coords = if c.mcast {
            CoordField::multicast(c.x_start, c.y_start, c.x_end, c.y_end)
        } else {
            CoordField::unicast(c.x_end, c.y_end)
        };
        self.host_target_at(c.noc_sel, coords, addr, c.mcast, len).map_err(|e| match e {
            SimError::Refused { noc, coord, tile, addr, reason } => SimError::Bar(format!(
                "TLB window {index} (configured for {coord} on {noc:?}, address {addr:#x}): {reason}{}",
                tile.map_or(String::new(), |t| format!(" (NOC0 tile {t})"))
            )),
            other => other,
        })
    }

    /// The host waits: the device runs `cycles` plus the host time of posted
    /// BAR writes not yet charged. Returns the device time.
    pub fn host_poll(&mut self, cycles: u64) -> u64 {
        let busy = std::mem::take(&mut self.host_busy);
        self.advance(cycles.saturating_add(busy))
    }

    /// Host read by NOC address (NOC0, translated coordinates): immediate,
    /// no simulated cost. It sees device memory as it is: writes still
    /// posted by a late doorbell are not in it (see [`Chip::host_read`]).
    pub fn read(&self, addr: NocAddr, buf: &mut [u8]) -> Result<(), SimError> {
        self.read_on(Noc::Noc0, addr, buf)
    }

    /// [`Chip::read`] as a request on `noc`.
    pub fn read_on(&self, noc: Noc, addr: NocAddr, buf: &mut [u8]) -> Result<(), SimError> {
        if addr.is_multicast() {
            return Err(SimError::Refused {
                noc,
                coord: addr.coord(),
                tile: None,
                addr: addr.local(),
                reason: "reads cannot be multicast",
            });
        }
        let target = self.host_target(noc, addr, buf.len())?;
        self.peek_target(&target, buf)
    }

    pub fn read_u32(&self, addr: NocAddr) -> Result<u32, SimError> {
        let mut b = [0; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn write_u32(&mut self, addr: NocAddr, v: u32) -> Result<(), SimError> {
        self.write(addr, &v.to_le_bytes())
    }

    /// Reads `target` without side effects (registers: their value as of
    /// device time; the wall clock is not latched).
    fn peek_target(&self, target: &Target, buf: &mut [u8]) -> Result<(), SimError> {
        match target {
            Target::L1 { tile, addr } => {
                self.l1(*tile).read(*addr, buf).expect("resolved within L1");
            }
            Target::Reg { tile, addr } => {
                let v = self.peek_reg(*tile, *addr)?;
                buf.copy_from_slice(&v.to_le_bytes());
            }
            Target::Dram { channel, offset } => self.dram.read(*channel, *offset, buf),
            Target::Host { offset } => self.sysmem.read(*offset as usize, buf),
            Target::Arc { addr } => self.arc.read(*addr, buf).map_err(SimError::Arc)?,
            Target::Multicast { .. } => unreachable!("reads are unicast"),
        }
        Ok(())
    }

    /// Reads `target` as the host does (the wall clock latches).
    fn read_target(&mut self, target: &Target, buf: &mut [u8]) -> Result<(), SimError> {
        if let Target::Reg { tile, addr } = target {
            let v = self.reg_read(*tile, *addr)?;
            buf.copy_from_slice(&v.to_le_bytes());
            return Ok(());
        }
        self.peek_target(target, buf)
    }

    fn peek_reg(&self, tile: usize, addr: u32) -> Result<u32, SimError> {
        let err =
            |reason| SimError::Register { tile: self.tile_coord(tile), noc0: self.noc0_coord(tile), addr, reason };
        remote_reg(self.chip, addr, false).map_err(err)?;
        let regs = &self.tensix(tile).regs;
        if let Some((noc, reg)) = self.chip.niu.decode(addr) {
            let niu = &regs.niu[noc.index() as usize];
            return niu.read(reg, self.now).map_err(|_| err("this NIU register is not modelled"));
        }
        let mut r = regs.clone();
        Ok(r.read(TensixRegs::decode(self.chip, addr).expect("checked"), self.now))
    }

    fn reg_read(&mut self, tile: usize, addr: u32) -> Result<u32, SimError> {
        let v = self.peek_reg(tile, addr)?;
        if let Some(r @ RegAccess::WallClockLow) = TensixRegs::decode(self.chip, addr) {
            let now = self.now;
            self.tensix_mut(tile).regs.read(r, now);
        }
        Ok(v)
    }

    fn tensix(&self, t: usize) -> &Tensix {
        self.tiles[t].as_ref().expect("a Tensix tile")
    }

    fn tensix_mut(&mut self, t: usize) -> &mut Tensix {
        self.tiles[t].as_mut().expect("a Tensix tile")
    }

    /// Tile `t`'s L1, wherever it is.
    fn l1(&self, t: usize) -> &Ram {
        tile_l1(&self.tiles, &self.cores, t)
    }

    fn l1_mut(&mut self, t: usize) -> &mut Ram {
        let tile = self.tiles[t].as_mut().expect("a Tensix tile");
        match tile.l1_holder {
            Some(i) => &mut self.cores[i].hart.mem.l1,
            None => &mut tile.l1_home,
        }
    }

    /// Boot helper: writes `image`'s segments (and zeroed `.bss`) into the
    /// L1 of the Tensix tile at translated `tile` through the host path.
    /// The cores stay as they are (held in reset at power-on).
    pub fn load_elf(&mut self, tile: Coord, image: &ElfImage) -> Result<(), SimError> {
        self.tensix_index(tile)
            .ok_or_else(|| SimError::NotATile { what: "load_elf needs a Tensix tile", got: format!("{tile}") })?;
        image
            .check_fits(&[Window { name: "L1", base: 0, size: self.chip.l1_size }])
            .map_err(|source| SimError::Elf { coord: tile, source })?;
        for s in &image.segments {
            let mut bytes = s.data.clone();
            bytes.resize(s.mem_size as usize, 0);
            self.write(NocAddr::unicast(tile, s.addr as u64), &bytes)?;
        }
        Ok(())
    }

    /// Writes `SOFT_RESET_0` of the Tensix tile at translated `tile`, as a
    /// host write through the BAR: set bits hold cores
    /// (`arch::tensix::SOFT_RESET_BRISC_ONLY_RUN` releases BRISC).
    pub fn set_soft_reset(&mut self, tile: Coord, value: u32) -> Result<(), SimError> {
        self.write_u32(NocAddr::unicast(tile, tensix::SOFT_RESET_0 as u64), value)
    }

    /// Applies tile `t`'s `SOFT_RESET_0` to its cores at cycle `at`: a core
    /// whose bit clears starts at its reset PC with zeroed registers, its
    /// cycle counter at `at` (or where it is, if later); one whose bit sets
    /// stops where it is.
    fn apply_soft_reset(&mut self, t: usize, at: u64) {
        let (value, ids) = {
            let tile = self.tensix(t);
            (tile.regs.soft_reset, tile.cores)
        };
        for p in Processor::ALL {
            let i = ids[p.index()];
            let hold = value & p.soft_reset_mask() != 0;
            if self.cores[i].in_reset == hold {
                continue;
            }
            self.wake(i);
            if !hold {
                let pc = self.tensix(t).regs.reset_pc(self.chip, p);
                let hart = &mut self.cores[i].hart;
                hart.skip_cycles(at.saturating_sub(hart.cycle()));
                hart.reset(pc);
            }
            self.cores[i].in_reset = hold;
            self.refresh_active(i);
        }
    }

    /// Lets the device run `cycles` cycles. Returns the new device time.
    pub fn advance(&mut self, cycles: u64) -> u64 {
        let end = self.now.saturating_add(cycles);
        let exact = self.cfg.exact_time;
        if exact {
            // Anything the host left due by now lands before a core runs.
            self.deliver_until(self.now);
        }
        while self.now < end {
            let n = self.cores.len();
            let (slice_end, first) = if exact {
                // The rotation is a function of the slice's start, so a run
                // that skips slices in which nothing runs (fast-forward)
                // still orders every slice it runs as a run without skips.
                let first = (rng::at(self.rotation_key, self.now) % n as u64) as usize;
                let slice_end = self.slice_end_from(self.now, end);
                self.slice_share = (slice_end - self.now) as f64 / self.cfg.quantum_cycles as f64;
                (slice_end, first)
            } else {
                let q = self.cfg.quantum_cycles + self.rng.scheduler.upto(self.cfg.quantum_jitter);
                let slice_end = (self.now + q).min(end);
                self.slice_share = (slice_end - self.now) as f64 / q as f64;
                (slice_end, self.rng.scheduler.upto(n as u64 - 1) as usize)
            };
            (self.slice_first, self.slice_end) = (first, slice_end);
            let own = exact && self.pct.is_none();
            if own {
                self.own_until = slice_end;
                self.deliver_within(first, slice_end);
            }
            if self.pct.is_some() {
                // PCT visits every core in rotation order anyway.
                self.pct_slice(first, slice_end);
                self.late.clear();
            } else {
                self.run_rotation(first, slice_end, None);
            }
            if own {
                self.finish_own(slice_end);
                self.own_until = 0;
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
        // Idle cores (in reset, halted) and parked ones are left where they
        // are: every reader of a core's state wakes it first ([`Chip::wake`]
        // brings an idle core's counters to device time), and whatever
        // changes what a parked core reads wakes it. Touching all ~360
        // cores at every host step cost more than the host's work.
        self.now
    }

    /// Runs the cores that can do anything (the others would only count
    /// cycles) to `limit`, in rotation order from `first`: all of them, or
    /// only those of `tiles` (ascending).
    #[inline(always)]
    fn run_rotation(&mut self, first: usize, limit: u64, tiles: Option<&[usize]>) {
        let n = self.cores.len();
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        let p = self.active.partition_point(|&i| i < first);
        match tiles {
            None => {
                order.extend_from_slice(&self.active[p..]);
                order.extend_from_slice(&self.active[..p]);
            }
            Some(tiles) => {
                let cores = &self.cores;
                let wanted = |i: &&usize| tiles.binary_search(&cores[**i].tile).is_ok();
                order.extend(self.active[p..].iter().filter(wanted));
                order.extend(self.active[..p].iter().filter(wanted));
            }
        }
        let mut k = 0;
        while k < order.len() {
            let i = order[k];
            self.run_core(i, limit);
            self.refresh_active(i);
            // Siblings it woke that come after it run in this slice,
            // at their place in the rotation.
            while let Some(j) = self.late.pop() {
                let rest = &order[k + 1..];
                if !rest.contains(&j) {
                    let rot = |x: usize| (x + n - first) % n;
                    let at = k + 1 + rest.partition_point(|&x| rot(x) < rot(j));
                    order.insert(at, j);
                }
            }
            k += 1;
        }
        self.order = order;
    }

    /// With `exact_time`, outside PCT: delivers each event due inside the
    /// slice `[now, slice_end)` at its cycle, once the cores of the tiles
    /// it touches ([`Chip::touched_tiles`]) have run to it; the other cores
    /// run the slice in one go afterwards. Nothing issued in the slice
    /// lands on another tile before its end (the slice is at most the
    /// lookahead between tiles; a tile's requests to itself:
    /// [`Chip::settle_own`]), and a core sees only its own tile and what
    /// deliveries bring it, so each
    /// core meets every delivery to its tile at the cycle it is due, as if
    /// the slice had ended there, without the whole chip stopping for it.
    fn deliver_within(&mut self, first: usize, slice_end: u64) {
        let start = self.now;
        loop {
            let e = match self.delivering.take() {
                Some(e) => e,
                None if self.events.peek().is_some_and(|e| e.time < slice_end) => self.events.pop().expect("peeked"),
                None => break,
            };
            let at = e.time.max(start);
            let mut tiles = std::mem::take(&mut self.touched);
            self.touched_tiles(&e.kind, &mut tiles);
            // Not lost if running the cores or moving the transfers
            // unwinds out of host memory (`HostMemory`).
            self.delivering = Some(e);
            self.slice_end = at;
            self.run_rotation(first, at, Some(&tiles));
            // Their own requests due by then land first, in order.
            for &t in &tiles {
                self.settle_own(t, at);
            }
            self.drain_late(at);
            self.now = at;
            for &t in &tiles {
                self.transfers_of_to(t, at);
            }
            self.touched = tiles;
            let e = self.delivering.take().expect("the event being delivered");
            self.deliver(e);
            self.now = start;
        }
        self.slice_end = slice_end;
    }

    /// The Tensix tiles whose cores must stand at an event's cycle when it
    /// is delivered, ascending: those it changes (its targets; its source,
    /// whose counters, leaving writes or L1 it moves); and, where it writes
    /// memory a read in flight reads from, that read's tiles (the reader's
    /// landed flits read the memory as it was before, and the reads of a
    /// tile's L1 see what its cores stored by then).
    /// Into `tiles` (cleared first: a buffer kept between deliveries).
    fn touched_tiles(&self, kind: &EventKind, tiles: &mut Vec<usize>) {
        let tiles_of = |t: &Target, tiles: &mut Vec<usize>| match t {
            Target::L1 { tile, .. } | Target::Reg { tile, .. } => tiles.push(*tile),
            Target::Multicast { tiles: m, .. } => tiles.extend_from_slice(m),
            Target::Dram { .. } | Target::Host { .. } | Target::Arc { .. } => {}
        };
        tiles.clear();
        // What it writes: a target, or the source's own L1.
        let (written, src_l1) = match kind {
            EventKind::WriteArrive { src, target, .. } => {
                tiles.extend(src.map(|s| s.tile));
                (Some(target), None)
            }
            EventKind::WriteAck { src, .. } => {
                tiles.push(src.tile);
                (None, None)
            }
            EventKind::AtomicResp { src, .. } => {
                tiles.push(src.tile);
                (None, Some(src.tile))
            }
            EventKind::AtomicArrive { src, target, .. } => {
                tiles.push(src.tile);
                (Some(target), None)
            }
            EventKind::ReadComplete { src, target, .. } => {
                tiles.push(src.tile);
                tiles_of(target, tiles);
                (None, Some(src.tile))
            }
            EventKind::HostWrite { target, .. } => (Some(target), None),
        };
        if let Some(t) = written {
            tiles_of(t, tiles);
        }
        let writes_l1 = |tile: usize| {
            src_l1 == Some(tile)
                || match written {
                    Some(Target::L1 { tile: t, .. }) => *t == tile,
                    Some(Target::Multicast { tiles, .. }) => tiles.contains(&tile),
                    _ => false,
                }
        };
        for l in &self.landing {
            let reads_written = match &l.target {
                Target::L1 { tile, .. } => writes_l1(*tile),
                Target::Dram { channel, .. } => {
                    matches!(written, Some(Target::Dram { channel: c, .. }) if c == channel)
                }
                Target::Host { .. } => matches!(written, Some(Target::Host { .. })),
                Target::Reg { .. } | Target::Arc { .. } | Target::Multicast { .. } => false,
            };
            if reads_written {
                tiles.push(l.src.tile);
                tiles_of(&l.target, tiles);
            }
        }
        tiles.sort_unstable();
        tiles.dedup();
    }

    /// With `exact_time`: where the slice starting at `now` ends (at most
    /// `end`). Slices end on a grid of [`Chip::slice_cap`] cycles; under
    /// PCT, which runs every core a slice, also at the next due delivery
    /// (otherwise [`Chip::deliver_within`] delivers inside the slice). The
    /// cap is at most the least time from a core's request to its effect
    /// on another tile, so whatever a core issues in a slice lands on
    /// another tile at or after its end (a tile's requests to itself:
    /// [`Chip::settle_own`]): every effect between cores of different
    /// tiles is delivered at the cycle it is due, before any core of the
    /// tiles it touches runs that cycle. When no core can run (all parked,
    /// halted or in reset) and nothing is in flight but events, nothing
    /// can happen before the next event: the slice runs to it.
    fn slice_end_from(&self, now: u64, end: u64) -> u64 {
        let due = self.events.peek().map_or(u64::MAX, |e| e.time).max(now + 1);
        let idle =
            self.active.is_empty() && self.pct.is_none() && self.landing.is_empty() && self.departing_writes == 0;
        if idle {
            return due.min(end);
        }
        let cap = self.slice_cap();
        let grid = (now / cap + 1) * cap;
        if self.pct.is_none() {
            // Deliveries inside the slice: `Chip::deliver_within`.
            return grid.min(end);
        }
        grid.min(due).min(end)
    }

    /// The longest exact-time slice: `quantum_cycles`, capped at the NOC's
    /// lookahead.
    fn slice_cap(&self) -> u64 {
        // Outside PCT a tile's requests to itself, the only ones a slice
        // longer than the lookahead may see land inside it, land there at
        // their cycle (`Chip::settle_own`): the bound is the least trip
        // between two tiles.
        let lookahead =
            if self.pct.is_none() { noc::lookahead_between_tiles(&self.cfg) } else { noc::lookahead(&self.cfg) };
        self.cfg.quantum_cycles.min(lookahead).max(1)
    }

    /// Delivers tile `t`'s requests to itself due by `upto` ([`Chip::own`]),
    /// each at its cycle with the tile's transfers moved on to it; the
    /// cores a delivery wakes or releases go on `late`, to run on in this
    /// slice.
    fn settle_own(&mut self, t: usize, upto: u64) {
        while self.tensix(t).own_due <= upto {
            let at = self.tensix(t).own_due;
            let cores = self.tensix(t).cores;
            let idle = cores.map(|j| self.cores[j].ff.idle.is_some() || self.cores[j].in_reset);
            let start = self.now;
            self.now = at.max(start);
            // The transfers first, the event still listed: a host-memory
            // access that unwinds does not lose it, and a core they wake
            // meets it in order (delivering it itself, hence the check).
            self.transfers_of_to(t, at);
            if self.tensix(t).own_due == at {
                let k = (0..self.own.len())
                    .filter(|&k| own_tile(&self.own[k].kind) == t)
                    .min_by_key(|&k| (self.own[k].time, self.own[k].seq))
                    .expect("`own_due` stands for an event of `own`");
                let e = self.own.swap_remove(k);
                let next = self.own.iter().filter(|e| own_tile(&e.kind) == t).map(|e| e.time).min();
                self.tensix_mut(t).own_due = next.unwrap_or(u64::MAX);
                self.deliver(e);
            }
            self.now = start;
            for (k, &j) in cores.iter().enumerate() {
                let c = &self.cores[j];
                let runs = !c.in_reset && c.hart.halted().is_none() && c.ff.idle.is_none();
                if idle[k] && runs {
                    self.late.push(j);
                }
            }
        }
    }

    /// Moves tile `t`'s landing reads and leaving writes on to cycle `at`
    /// (as [`Chip::advance_transfers`] does every tile's).
    fn transfers_of_to(&mut self, t: usize, at: u64) {
        if !self.landing.is_empty() {
            self.land_reads(at, Some(t));
        }
        self.read_sources(at, Some(t));
    }

    /// Runs the cores on `late` to `limit` (outside the rotation).
    fn drain_late(&mut self, limit: u64) {
        while let Some(j) = self.late.pop() {
            self.run_core(j, limit);
            self.refresh_active(j);
        }
    }

    /// At a slice's end: delivers the requests to themselves of tiles
    /// whose cores all stopped before them (parked, halted), waking them
    /// there and running them on to the slice's end.
    fn finish_own(&mut self, slice_end: u64) {
        while let Some(t) = self.own.first().map(|e| own_tile(&e.kind)) {
            self.settle_own(t, slice_end);
            self.drain_late(slice_end);
        }
    }

    /// Brings every parked core to device time, exactly where running it
    /// would have left it: what a reader of core state needs first.
    pub fn settle(&mut self) {
        for i in 0..self.cores.len() {
            self.wake(i);
        }
    }

    /// One slice under PCT: every core visited in rotation order.
    fn pct_slice(&mut self, first: usize, slice_end: u64) {
        let n = self.cores.len();
        let slice = match &mut self.pct {
            Some(pct) => {
                let cores = &self.cores;
                pct.begin_slice(|i| !cores[i].in_reset && cores[i].hart.halted().is_none())
            }
            None => Slice::Free,
        };
        for k in 0..n {
            let i = (first + k) % n;
            match (slice, &mut self.pct) {
                (Slice::Run(chosen), Some(pct)) => {
                    if chosen != Some(i) && !pct.is_waiting(i) {
                        // Held by a higher priority: stalled for the slice,
                        // from where it really is (a parked core's state may
                        // lie whole periods behind).
                        self.wake(i);
                        let hart = &mut self.cores[i].hart;
                        hart.skip_cycles(slice_end.saturating_sub(hart.cycle()));
                        continue;
                    }
                    // An L0 hit counts as an effect (for fast-forward: it may
                    // differ from L1 and may flush), but a loop of hits is a
                    // poll still: it waits.
                    let progress = |h: &Hart| h.effects() - h.l0_cache().hits();
                    let before = progress(&self.cores[i].hart);
                    self.run_core(i, slice_end);
                    let c = &self.cores[i];
                    let runs = !c.in_reset && c.hart.halted().is_none();
                    let waiting = runs && progress(&c.hart) == before;
                    self.pct.as_mut().expect("PCT").set_waiting(i, waiting);
                }
                _ => self.run_core(i, slice_end),
            }
        }
    }

    /// Puts core `i` in or out of the slice loop's `active` list.
    #[inline(always)]
    fn refresh_active(&mut self, i: usize) {
        let c = &self.cores[i];
        let keep_parked = self.cfg.faults.core_stall_prob > 0.0;
        let want = !c.in_reset && c.hart.halted().is_none() && (keep_parked || c.ff.idle.is_none());
        if want == c.listed {
            return;
        }
        self.cores[i].listed = want;
        match self.active.binary_search(&i) {
            Err(at) if want => self.active.insert(at, i),
            Ok(at) if !want => {
                self.active.remove(at);
            }
            _ => unreachable!("`listed` says whether core {i} is in `active`"),
        }
    }

    /// Brings core `i` to the current device time: unparks it (if
    /// idle-parked) exactly where normal execution would be, or moves an
    /// idle core's counters (in reset, halted) to device time. Must precede
    /// any read of or change to the core.
    fn wake(&mut self, i: usize) {
        self.wake_to(i, self.now);
        let core = &mut self.cores[i];
        if core.in_reset || core.hart.halted().is_some() {
            core.hart.skip_cycles(self.now.saturating_sub(core.hart.cycle()));
        }
    }

    /// [`Chip::wake`] to cycle `t` (at or after its parked state).
    fn wake_to(&mut self, i: usize, t: u64) {
        if self.cores[i].ff.idle.is_some() {
            let core = &mut self.cores[i];
            core.ff.unpark(&mut core.hart, t);
            let tile = core.tile;
            self.refresh_parked_reads(tile);
            self.run_hart(i, t, false);
            self.refresh_active(i);
        }
    }

    /// Recomputes tile `t`'s [`Tensix::parked_reads`] and
    /// [`Tensix::parked_l1`] after one of its cores parked or woke.
    fn refresh_parked_reads(&mut self, t: usize) {
        let (mut lo, mut hi) = (u64::MAX, 0);
        let mut l1: Option<(u32, u32)> = None;
        for j in self.tensix(t).cores {
            if let Some(spans) = self.cores[j].ff.parked_spans() {
                let (a, b) = spans.all;
                (lo, hi) = (lo.min(a), hi.max(b));
                if let Some((x, y)) = spans.l1 {
                    l1 = Some(l1.map_or((x, y), |(p, q)| (p.min(x), q.max(y))));
                }
            }
        }
        let tile = self.tensix_mut(t);
        tile.parked_reads = if lo < hi { (lo, hi) } else { (0, 0) };
        tile.parked_l1 = l1.map_or((0, 0), |(lo, hi)| (lo, hi - lo));
    }

    /// Core `i` of tile `t` stored to word `addr` (which held `old`) that
    /// parked siblings poll. Each such sibling is brought to where running
    /// it would have left it: a sibling before `i` in this slice's rotation
    /// ran the whole slice before the store, so it reaches the slice end on
    /// the old word; one after `i` runs in this slice after it, so it is
    /// brought to the slice start (on the old word, its past) and runs
    /// later in this slice, seeing the new one.
    fn sibling_stored(&mut self, i: usize, t: usize, addr: u32, old: u32) {
        let reads = |c: &Core| c.ff.idle.is_some_and(|l| l.reads_any(addr as u64, 4));
        let woken: Vec<usize> = self.tensix(t).cores.into_iter().filter(|&j| j != i && reads(&self.cores[j])).collect();
        if woken.is_empty() {
            return;
        }
        let new = self.l1(t).read_u32(addr).expect("a watched word of L1");
        self.l1_mut(t).write_u32(addr, old).expect("a watched word of L1");
        let (n, first) = (self.cores.len(), self.slice_first);
        let rot = |x: usize| (x + n - first) % n;
        for j in woken {
            if rot(j) < rot(i) {
                self.wake_to(j, self.slice_end);
            } else {
                self.wake(j);
                self.late.push(j);
            }
            self.cores[j].ff.changed();
        }
        self.l1_mut(t).write_u32(addr, new).expect("a watched word of L1");
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
        if core.in_reset || core.hart.halted().is_some() {
            // Idle cores keep their counters at device time.
            core.hart.skip_cycles(slice_end.saturating_sub(core.hart.cycle()));
            return;
        }
        let p = self.cfg.faults.core_stall_prob;
        let draws = p > 0.0 && self.cores[i].stall_drawn_for != slice_end;
        if draws {
            self.cores[i].stall_drawn_for = slice_end;
        }
        if draws && self.rng.stalls.chance((p * self.slice_share).min(1.0)) {
            // The stall delays the core from where it really is: a parked
            // core is first brought to the slice start (its parked state may
            // lie whole periods behind).
            self.wake(i);
            self.cores[i].hart.stall(self.cfg.faults.core_stall_cycles);
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
    /// starts and after each NOC request the core issues, and parks it there.
    /// While its tile has writes leaving L1 the core runs in segments ending
    /// where each packet has left (so the packet reads its source exactly
    /// then), and it is not parked.
    fn run_hart(&mut self, i: usize, limit: u64, may_park: bool) {
        if self.cores[i].in_reset {
            return;
        }
        let t = self.cores[i].tile;
        let mut try_probe = may_park && self.cores[i].ff.start_probe_due();
        loop {
            // Its tile's reads land, then its leaving packets read their
            // source, as of where the core is now.
            let now_i = self.cores[i].hart.cycle();
            // Only exact time has requests due inside a slice (the tile is
            // not looked at otherwise: most runs never need it).
            let own_due = if self.own_until == 0 { u64::MAX } else { self.tensix(t).own_due };
            if now_i >= own_due {
                self.settle_own(t, now_i);
            }
            if !self.landing.is_empty() && now_i >= self.tensix(t).landing_quiet_until {
                self.land_reads(now_i, Some(t));
            }
            let leaving = self.read_sources(now_i, Some(t));
            let mut seg = leaving.map_or(limit, |left| left.min(limit));
            if own_due != u64::MAX {
                seg = seg.min(self.tensix(t).own_due);
            }
            // It runs, so the tile's parked cores are its siblings.
            debug_assert!(self.cores[i].ff.idle.is_none(), "a parked core does not run");
            let watch = self.tensix(t).parked_l1;
            let resolver = Resolver {
                layout: &self.layout,
                chip: self.chip,
                dram_channel_size: self.dram.channel_size(),
                sysmem_size: self.cfg.sysmem_size as u64,
                arc: &self.arc,
            };
            let Chip { cores, tiles, issued, chip, cfg, probe_scratch, .. } = self;
            let tile = tiles[t].as_mut().expect("a Tensix tile");
            if tile.l1_holder != Some(i) {
                if let Some(j) = tile.l1_holder {
                    std::mem::swap(&mut tile.l1_home, &mut cores[j].hart.mem.l1);
                }
                std::mem::swap(&mut tile.l1_home, &mut cores[i].hart.mem.l1);
                tile.l1_holder = Some(i);
            }
            let core = &mut cores[i];
            core.hart.mem.set_watch_range(watch);
            let mut reset_written = false;
            let me = resolver.layout.tiles()[t].noc0;
            let mut bus = TileBus {
                chip,
                processor: core.id.processor,
                tile: t,
                me,
                regs: &mut tile.regs,
                resolver: &resolver,
                issued,
                accept_cycles: cfg.noc.interface_cycles,
                reset_written: &mut reset_written,
            };
            let mut done = false;
            let mut parked = false;
            let mut watched = None;
            'step: {
                if try_probe && leaving.is_none() {
                    match probe_with(&mut core.hart, &mut bus, seg, probe_scratch) {
                        Probe::Idle(l) => {
                            core.ff.parked(l, chip.l1_size);
                            parked = true;
                            done = true;
                            break 'step;
                        }
                        // It just issued a NOC request: the moment it may
                        // start waiting, so look again at once if still due.
                        Probe::Yielded => {
                            core.ff.probe_failed();
                            try_probe = core.ff.mid_run_probe_due(core.hart.cycle(), limit);
                            break 'step;
                        }
                        // It stored to a word a parked sibling polls.
                        Probe::Watched { addr, old } => {
                            core.ff.probe_failed();
                            watched = Some((addr, old));
                            break 'step;
                        }
                        Probe::NotIdle => {
                            core.ff.probe_failed();
                            try_probe = false;
                        }
                        // The run ended inside what may be a loop: the
                        // next run looks again.
                        Probe::Cut => try_probe = false,
                    }
                }
                match core.hart.run(&mut bus, seg) {
                    Stop::CycleLimit => {
                        done = core.hart.cycle() >= limit;
                        // A packet has left: the core may wait next.
                        try_probe |= !done && may_park && core.ff.mid_run_probe_due(core.hart.cycle(), limit);
                    }
                    Stop::Halted(_) => {
                        let behind = limit.saturating_sub(core.hart.cycle());
                        core.hart.skip_cycles(behind);
                        done = true;
                    }
                    Stop::Yield => try_probe = may_park && core.ff.mid_run_probe_due(core.hart.cycle(), limit),
                    Stop::Watch { addr, old, .. } => watched = Some((addr, old)),
                }
            }
            core.hart.mem.set_watch_range((0, 0));
            let at = core.hart.cycle();
            if parked {
                self.refresh_parked_reads(t);
            }
            if !self.issued.is_empty() {
                let mut issued = std::mem::take(&mut self.issued);
                for issue in issued.drain(..) {
                    self.schedule(issue);
                }
                self.issued = issued;
            }
            if reset_written {
                self.apply_soft_reset(t, at);
            }
            if let Some((addr, old)) = watched {
                self.sibling_stored(i, t, addr, old);
            }
            if done || self.cores[i].in_reset {
                // Stopped before its tile's own requests (parked, halted):
                // they land at their cycle, waking it there.
                if self.own_until != 0 && self.tensix(t).own_due < limit {
                    self.settle_own(t, limit);
                }
                return;
            }
        }
    }

    /// Reads the flits of leaving writes (of tile `only`, or all) that have
    /// left by cycle `t` from their source L1, and counts the writes whose
    /// last flit has left as sent. Returns the earliest cycle after `t` at
    /// which a packet of `only` finishes leaving, if one is still leaving.
    #[inline(always)]
    fn read_sources(&mut self, t: u64, only: Option<usize>) -> Option<u64> {
        // Checked here, inline: most runs have nothing leaving. The
        // chip-wide count first spares a run the look at its tile.
        if self.departing_writes == 0 || only.is_some_and(|t| self.tensix(t).departing.is_empty()) {
            return None;
        }
        self.read_leaving(t, only)
    }

    #[inline(never)]
    fn read_leaving(&mut self, t: u64, only: Option<usize>) -> Option<u64> {
        if let Some(tile) = only {
            return self.read_leaving_of(tile, t);
        }
        // Each tile's writes on their own: what one sends moves only its
        // NIU's counters. A tile listed while this runs is kept (none is
        // today: the counters wake cores only to catch up on a pure loop,
        // which issues nothing).
        let mut tiles = std::mem::take(&mut self.departing_tiles);
        for &tile in &tiles {
            self.read_leaving_of(tile, t);
        }
        tiles.retain(|&tile| !self.tensix(tile).departing.is_empty());
        for tile in std::mem::replace(&mut self.departing_tiles, tiles) {
            if !self.departing_tiles.contains(&tile) {
                self.departing_tiles.push(tile);
            }
        }
        None
    }

    /// [`Chip::read_leaving`] for tile `tile`'s writes.
    fn read_leaving_of(&mut self, tile: usize, t: u64) -> Option<u64> {
        let quiet = self.tensix(tile);
        if t < quiet.departing_quiet_until {
            return quiet.departing_next_left;
        }
        let bpc = self.cfg.noc.bytes_per_cycle;
        let mut departing = std::mem::take(&mut self.tensix_mut(tile).departing);
        let Chip { payloads, tiles, cores, .. } = self;
        let l1 = tile_l1(tiles, cores, tile);
        let mut next: Option<u64> = None;
        let mut quiet_until = u64::MAX;
        let mut sent = Vec::new();
        departing.retain_mut(|d| {
            let by = flits_by(d.start, d.len, d.rate, t);
            if by > d.read {
                let buf = payloads.get_mut(&d.id).expect("a leaving write has a payload");
                l1.read(d.local + d.read, &mut buf[d.read as usize..by as usize]).expect("validated at issue");
                d.read = by;
            }
            if d.read == d.len {
                sent.push((d.src, d.tid, d.posted, (d.len as u64).div_ceil(bpc) as i32));
                return false;
            }
            let left = last_flit(d.start, d.len, d.rate);
            next = Some(next.map_or(left, |n| n.min(left)));
            // `flits_by` passes `read` from this cycle on.
            quiet_until = quiet_until.min(d.start + (d.read as u64 / d.rate));
            true
        });
        self.departing_writes -= sent.len();
        let me = self.tensix_mut(tile);
        me.departing = departing;
        (me.departing_quiet_until, me.departing_next_left) = (quiet_until, next);
        for (src, tid, posted, flits) in sent {
            let (req, words) = if posted {
                (counter::NIU_MST_POSTED_WR_REQ_SENT, counter::NIU_MST_POSTED_WR_DATA_WORD_SENT)
            } else {
                (counter::NIU_MST_NONPOSTED_WR_REQ_SENT, counter::NIU_MST_NONPOSTED_WR_DATA_WORD_SENT)
            };
            self.bump(src, req, 1);
            self.bump(src, words, flits);
            self.bump(src, counter::write_reqs_outgoing_id(tid), -1);
        }
        next
    }

    /// Lands the flits of arriving reads (issued by tile `only`, or all)
    /// that have arrived by cycle `t`.
    fn land_reads(&mut self, t: u64, only: Option<usize>) {
        let bpc = self.cfg.noc.bytes_per_cycle;
        for k in 0..self.landing.len() {
            let l = &self.landing[k];
            let by = flits_by(l.start, l.len, bpc, t);
            if only.is_some_and(|c| c != l.src.tile) {
                continue;
            }
            if by <= l.done {
                continue;
            }
            let (src, target, local, from) = (l.src.tile, l.target.clone(), l.local, l.done);
            let n = (by - from) as usize;
            self.before_l1_write(src, ((local + from) as u64, n as u64));
            // Landed before the source is read: host memory may unwind
            // (`HostMemory`), and the flits then count as landed with the
            // destination left as it was, rather than being read again.
            self.landing[k].done = by;
            let mut buf = vec![0; n];
            self.noc_read(&target.offset(from as u64), &mut buf);
            self.l1_mut(src).write(local + from, &buf).expect("validated at issue");
        }
        // Elsewhere each tile's cycle stays a lower bound: flits only land.
        if let Some(tile) = only {
            let quiet = self
                .landing
                .iter()
                .filter(|l| l.src.tile == tile && l.done < l.len)
                // `flits_by` passes `done` from this cycle on.
                .map(|l| l.start + l.done as u64 / bpc)
                .min()
                .unwrap_or(u64::MAX);
            self.tensix_mut(tile).landing_quiet_until = quiet;
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
        if time < self.own_until {
            let t = own_tile(&kind);
            debug_assert!(
                match &kind {
                    EventKind::WriteArrive { target, .. }
                    | EventKind::AtomicArrive { target, .. }
                    | EventKind::ReadComplete { target, .. } => match target {
                        Target::L1 { tile, .. } | Target::Reg { tile, .. } => *tile == t,
                        Target::Multicast { tiles, .. } => tiles[..] == [t],
                        _ => false,
                    },
                    _ => true,
                },
                "only a tile's request to itself lands inside a slice: {kind:?}"
            );
            self.seq += 1;
            self.own.push(Event { time, seq: self.seq, kind });
            let me = self.tensix_mut(t);
            me.own_due = me.own_due.min(time);
            return;
        }
        // With exact time nothing else lands inside a slice being run:
        // its cap is the lookahead between tiles (under PCT, the lookahead).
        debug_assert!(
            !self.cfg.exact_time || time >= self.slice_end,
            "an event due at {time} inside the slice ending at {}",
            self.slice_end
        );
        self.seq += 1;
        self.events.push(Event { time, seq: self.seq, kind });
    }

    fn jitter(&mut self) -> u64 {
        self.rng.jitter.upto(self.cfg.faults.noc_jitter_cycles)
    }

    /// Moves counter `index` of NIU `src` by `by`, waking cores polling it.
    fn bump(&mut self, src: Source, index: u32, by: i32) {
        if by == 0 {
            return;
        }
        // Parked pollers first catch up on the value they saw until now.
        let addr = self.chip.niu.status_reg(src.noc, index);
        self.wake_tile_if_read(src.tile, (addr as u64, 4));
        self.tensix_mut(src.tile).regs.niu[src.noc.index() as usize].bump(index, by);
    }

    /// Counters of the receiving NIU(s) of a request at `target` on `noc`.
    fn bump_slave(&mut self, target: &Target, noc: Noc, counters: &[(u32, i32)]) {
        let tiles: &[usize] = match target {
            Target::L1 { tile, .. } | Target::Reg { tile, .. } => std::slice::from_ref(tile),
            Target::Multicast { tiles, .. } => tiles,
            _ => return,
        };
        for &t in tiles {
            for &(c, by) in counters {
                self.bump(Source { tile: t, noc }, c, by);
            }
        }
    }

    fn schedule(&mut self, issue: Issued) {
        let ordered = !self.cfg.faults.reorder;
        let (iface, bpc) = (self.cfg.noc.interface_cycles, self.cfg.noc.bytes_per_cycle);
        self.transfers += 1;
        let id = self.transfers;
        let (src, tid, hops) = (issue.src, issue.tid, issue.hops);
        let route = Route::of(src, issue.dst_key, issue.vc);
        let endpoint = issue.target.endpoint();
        self.bump(src, counter::NIU_MST_CMD_ACCEPTED, 1);
        match issue.kind {
            Kind::Read => {
                self.bump(src, counter::NIU_MST_RD_REQ_STARTED, 1);
                self.bump(src, counter::NIU_MST_RD_REQ_SENT, 1);
                self.bump(src, counter::reqs_outstanding_id(tid), 1);
                let request = Packet { head: issue.time + iface, hold: 1 };
                let mut served = issue.time + trip(&self.cfg, hops, 0) + self.jitter();
                served += self.link_wait(src, issue.dst_key, true, request);
                if ordered && endpoint == EndpointKind::Pcie {
                    // PCIe: a read does not pass this NIU's earlier posted
                    // writes that had left it (with `reads_pass_unsent` off,
                    // the model before 2026-12-01: none of them).
                    let route = Route::of(src, issue.dst_key, issue.vc);
                    let before = if self.cfg.noc.reads_pass_unsent {
                        self.routes.sent_landed(route, issue.time)
                    } else {
                        self.routes.posted_landed(route)
                    };
                    served = served.max(before);
                }
                let now = self.now;
                let ready = self.endpoints.done(&self.cfg, &issue.target, served, issue.len, true, now);
                // The data leaves the responder's NIU one packet at a time.
                let responder = (issue.dst_key, src.noc.index() as u8);
                let leave = self.endpoints.respond(&self.cfg, responder, served, ready, issue.len, now);
                let hold = noc::response_cycles(&self.cfg, issue.len);
                let slower = hold - packet_flits(issue.len, bpc);
                let response = Packet { head: leave + iface, hold };
                let done = leave
                    + trip(&self.cfg, hops, issue.len)
                    + slower
                    + self.link_wait(src, issue.dst_key, false, response);
                if !matches!(issue.target, Target::Reg { .. } | Target::Arc { .. }) {
                    let start = done + 1 - (issue.len as u64).div_ceil(bpc).max(1);
                    let (local, len, target) = (issue.local, issue.len, issue.target.clone());
                    self.landing.push(Landing { id, src, target, local, len, start, done: 0 });
                    let me = self.tensix_mut(src.tile);
                    me.landing_quiet_until = me.landing_quiet_until.min(start);
                }
                let (local, len, target) = (issue.local, issue.len, issue.target);
                self.push(done, EventKind::ReadComplete { src, id, target, local, len, tid });
            }
            Kind::Write { posted, multicast, linked, .. } => {
                let started = if posted {
                    counter::NIU_MST_POSTED_WR_REQ_STARTED
                } else {
                    counter::NIU_MST_NONPOSTED_WR_REQ_STARTED
                };
                self.bump(src, started, 1);
                let receivers = match &issue.target {
                    Target::Multicast { tiles, .. } => tiles.len() as u32,
                    _ => 1,
                };
                // A multicast's data leaves at the multicast rate, or the
                // linked rate on a path a linked packet kept set up.
                let held = std::mem::replace(&mut self.niu_linked[src.index()], multicast && linked);
                let rate = match (multicast, held) {
                    (true, true) => self.cfg.noc.linked_multicast_bytes_per_cycle,
                    (true, false) => self.cfg.noc.multicast_bytes_per_cycle,
                    (false, _) => bpc,
                };
                if !posted {
                    self.bump(src, counter::reqs_outstanding_id(tid), receivers as i32);
                }
                self.bump(src, counter::write_reqs_outgoing_id(tid), 1);
                // One packet at a time through the NIU.
                let backpressure = self.rng.backpressure.upto(self.cfg.faults.write_backpressure_cycles);
                // Its header flit leaves first, then the data.
                let start = (issue.time + iface).max(self.niu_free[src.index()]) + backpressure + 1;
                let left = last_flit(start, issue.len, rate);
                self.niu_free[src.index()] = left + 1;
                let hop_cycles = hops as u64 * self.cfg.noc.hop_cycles;
                let now = self.now;
                // The header left at `start - 1`; the packet holds each
                // link as long as it takes to leave the NIU.
                let packet = Packet { head: start - 1, hold: left + 2 - start };
                let reach = left + 1 + iface + hop_cycles + self.write_wait(&issue, packet);
                let mut arrive =
                    self.endpoints.done(&self.cfg, &issue.target, reach, issue.len, false, now) + self.jitter();
                if ordered {
                    arrive = self.routes.write(route, issue.time, left, arrive);
                }
                self.payloads.insert(id, vec![0; issue.len as usize]);
                let (local, len) = (issue.local, issue.len);
                if self.tensix(src.tile).departing.is_empty() && !self.departing_tiles.contains(&src.tile) {
                    self.departing_tiles.push(src.tile);
                }
                self.departing_writes += 1;
                let leaving = Departing { id, src, tid, posted, local, len, start, rate, read: 0 };
                let me = self.tensix_mut(src.tile);
                me.departing.push(leaving);
                me.departing_quiet_until = me.departing_quiet_until.min(start);
                me.departing_next_left = Some(me.departing_next_left.map_or(left, |n| n.min(left)));
                self.push(arrive, EventKind::WriteArrive { src: Some(src), target: issue.target, id, len, posted });
                if !posted {
                    let mut ack = arrive + trip(&self.cfg, hops, 0);
                    if !multicast {
                        // A multicast's acks (one per receiver) are not booked.
                        let back = Packet { head: arrive + iface, hold: 1 };
                        ack += self.link_wait(src, issue.dst_key, false, back);
                    }
                    self.push(ack, EventKind::WriteAck { src, tid, count: receivers });
                }
            }
            Kind::AtomicIncr { wrap, resp, .. } => {
                if resp {
                    self.bump(src, counter::NIU_MST_NONPOSTED_ATOMIC_STARTED, 1);
                    self.bump(src, counter::NIU_MST_NONPOSTED_ATOMIC_SENT, 1);
                    self.bump(src, counter::reqs_outstanding_id(tid), 1);
                } else {
                    self.bump(src, counter::NIU_MST_POSTED_ATOMIC_SENT, 1);
                }
                let now = self.now;
                let flits = packet_flits(4, bpc);
                let there_at = Packet { head: issue.time + iface, hold: flits };
                let reach = issue.time + trip(&self.cfg, hops, 4) + self.link_wait(src, issue.dst_key, true, there_at);
                let mut arrive = self.endpoints.done(&self.cfg, &issue.target, reach, 4, false, now) + self.jitter();
                if ordered {
                    arrive = self.routes.atomic(route, issue.time, arrive);
                }
                let value = issue.value;
                self.push(arrive, EventKind::AtomicArrive { src, id, target: issue.target, value, wrap, resp });
                if resp {
                    let resp_at = Packet { head: arrive + iface, hold: flits };
                    let back = arrive + trip(&self.cfg, hops, 4) + self.link_wait(src, issue.dst_key, false, resp_at);
                    self.push(back, EventKind::AtomicResp { src, id, tid, ret: Some(issue.local) });
                }
            }
        }
    }

    /// NOC0 coordinates of tile index `t`.
    fn noc0(&self, t: usize) -> Coord {
        self.layout.tiles()[t].noc0
    }

    /// Cycles `p` waits for links between routers on its way from NIU
    /// `src` to the unicast destination `dst_key` (`Issued::dst_key`), or
    /// back when not `outward`, on `src`'s NOC: 0 unless
    /// `noc.link_contention`.
    fn link_wait(&mut self, src: Source, dst_key: u64, outward: bool, p: Packet) -> u64 {
        if self.mesh.is_none() {
            return 0;
        }
        let (me, there) = (self.noc0(src.tile), Coord::unpack(dst_key as u32));
        let mesh = self.mesh.as_mut().expect("checked");
        if outward {
            mesh.pass(src.noc, Class::Request, me, there, p, self.now)
        } else {
            mesh.pass(src.noc, Class::Response, there, me, p, self.now)
        }
    }

    /// [`Chip::link_wait`] of a write packet, unicast or multicast (its
    /// tree: `links` module doc).
    fn write_wait(&mut self, issue: &Issued, p: Packet) -> u64 {
        if self.mesh.is_none() {
            return 0;
        }
        let (noc, me) = (issue.src.noc, self.noc0(issue.src.tile));
        let tiles_noc0 = self.layout.tiles();
        let mesh = self.mesh.as_mut().expect("checked");
        match &issue.target {
            Target::Multicast { tiles, .. } => {
                // The key holds the rectangle's corners (`request::Resolver`):
                // the start corner, in NOC0 coordinates, is its first column.
                let first = Coord::unpack((issue.dst_key >> 16) as u32 & 0xFFFF);
                let receivers = tiles.iter().map(|&t| tiles_noc0[t].noc0);
                mesh.multicast(noc, me, first.x, receivers, p, self.now)
            }
            _ => mesh.pass(noc, Class::Request, me, Coord::unpack(issue.dst_key as u32), p, self.now),
        }
    }

    fn deliver_until(&mut self, t: u64) {
        loop {
            // An event whose delivery a host-memory access unwound out of
            // (`HostMemory`) is first in line.
            let e = match self.delivering.take() {
                Some(e) if e.time <= t => e,
                // Due later (`Chip::deliver_within` was bringing cores to
                // it): back in line.
                Some(e) => {
                    self.events.push(e);
                    continue;
                }
                None if self.events.peek().is_some_and(|e| e.time <= t) => self.events.pop().expect("peeked"),
                None => break,
            };
            // Flits leave and land in time order with the deliveries. A
            // landing read may unwind out of host memory: the event waits
            // in `delivering` meanwhile, not lost.
            let time = e.time;
            self.delivering = Some(e);
            self.advance_transfers(time);
            let e = self.delivering.take().expect("the event being delivered");
            self.deliver(e);
        }
        self.advance_transfers(t);
    }

    fn deliver(&mut self, e: Event) {
        // Targets were validated at issue and memories never shrink, so
        // deliveries cannot fail.
        let at = e.time;
        match e.kind {
            EventKind::HostWrite { target, data } => {
                self.posted -= 1;
                self.apply_write(&target, &data, at);
            }
            EventKind::WriteArrive { src, target, id, len, posted } => {
                debug_assert!(
                    src.is_none_or(|s| self.tensix(s.tile).departing.iter().all(|d| d.id != id)),
                    "a write lands only after it has left"
                );
                let data = self.payloads.remove(&id).expect("a write in flight has a payload");
                if matches!(target, Target::Dram { .. }) {
                    self.dram_traffic.write_bytes += len as u64;
                }
                if let Some(src) = src {
                    let flits = (len as u64).div_ceil(self.cfg.noc.bytes_per_cycle) as i32;
                    let (req, words) = if posted {
                        (counter::NIU_SLV_POSTED_WR_REQ_RECEIVED, counter::NIU_SLV_POSTED_WR_DATA_WORD_RECEIVED)
                    } else {
                        (counter::NIU_SLV_NONPOSTED_WR_REQ_RECEIVED, counter::NIU_SLV_NONPOSTED_WR_DATA_WORD_RECEIVED)
                    };
                    let ack = if posted { 0 } else { 1 };
                    let counters = [
                        (counter::NIU_SLV_REQ_ACCEPTED, 1),
                        (req, 1),
                        (words, flits),
                        (counter::NIU_SLV_WR_ACK_SENT, ack),
                    ];
                    self.bump_slave(&target, src.noc, &counters);
                }
                self.apply_write(&target, &data, at);
            }
            EventKind::WriteAck { src, tid, count } => {
                self.bump(src, counter::NIU_MST_WR_ACK_RECEIVED, count as i32);
                self.bump(src, counter::reqs_outstanding_id(tid), -(count as i32));
            }
            EventKind::AtomicArrive { src, id, target, value, wrap, resp } => {
                let Target::L1 { tile, addr } = target else { unreachable!("atomics act on L1 words") };
                let old = self.l1(tile).read_u32(addr).expect("validated at issue");
                let keep = if wrap >= 31 { u32::MAX } else { (1u32 << (wrap + 1)) - 1 };
                let new = (old & !keep) | (old.wrapping_add(value) & keep);
                let counters = [
                    (counter::NIU_SLV_REQ_ACCEPTED, 1),
                    (
                        if resp {
                            counter::NIU_SLV_NONPOSTED_ATOMIC_RECEIVED
                        } else {
                            counter::NIU_SLV_POSTED_ATOMIC_RECEIVED
                        },
                        1,
                    ),
                    (counter::NIU_SLV_ATOMIC_RESP_SENT, resp as i32),
                ];
                self.bump_slave(&target, src.noc, &counters);
                self.apply_write(&target, &new.to_le_bytes(), at);
                if resp {
                    let slot = self.atomic_old.partition_point(|&(other, _)| other < id);
                    self.atomic_old.insert(slot, (id, old));
                }
            }
            EventKind::AtomicResp { src, id, tid, ret } => {
                let slot = self.atomic_old.binary_search_by_key(&id, |&(id, _)| id);
                let (_, old) = self.atomic_old.remove(slot.expect("an atomic's old value before its response"));
                if let Some(ret) = ret {
                    self.before_l1_write(src.tile, (ret as u64, 4));
                    self.l1_mut(src.tile).write_u32(ret, old).expect("validated at issue");
                }
                self.bump(src, counter::NIU_MST_ATOMIC_RESP_RECEIVED, 1);
                self.bump(src, counter::reqs_outstanding_id(tid), -1);
            }
            EventKind::ReadComplete { src, id, target, local, len, tid } => {
                if matches!(target, Target::Dram { .. }) {
                    self.dram_traffic.read_bytes += len as u64;
                }
                if let Some(k) = self.landing.iter().position(|l| l.id == id) {
                    // Landed flit by flit (all of it by now).
                    debug_assert_eq!(self.landing[k].done, len);
                    self.landing.remove(k);
                } else {
                    let mut buf = vec![0; len as usize];
                    self.noc_read(&target, &mut buf);
                    self.before_l1_write(src.tile, (local as u64, len as u64));
                    self.l1_mut(src.tile).write(local, &buf).expect("validated at issue");
                }
                let flits = (len as u64).div_ceil(self.cfg.noc.bytes_per_cycle) as i32;
                let counters = [
                    (counter::NIU_SLV_REQ_ACCEPTED, 1),
                    (counter::NIU_SLV_RD_REQ_RECEIVED, 1),
                    (counter::NIU_SLV_RD_RESP_SENT, 1),
                    (counter::NIU_SLV_RD_DATA_WORD_SENT, flits),
                ];
                self.bump_slave(&target, src.noc, &counters);
                self.bump(src, counter::NIU_MST_RD_RESP_RECEIVED, 1);
                self.bump(src, counter::NIU_MST_RD_DATA_WORD_RECEIVED, flits);
                self.bump(src, counter::reqs_outstanding_id(tid), -1);
            }
        }
    }

    /// Performs a checked write at device time `at`, waking the cores a
    /// change reaches.
    fn apply_write(&mut self, target: &Target, data: &[u8], at: u64) {
        match target {
            Target::L1 { tile, addr } => {
                self.before_l1_write(*tile, (*addr as u64, data.len() as u64));
                self.l1_mut(*tile).write(*addr, data).expect("resolved within L1");
            }
            Target::Multicast { tiles, addr } => {
                for &t in tiles {
                    self.before_l1_write(t, (*addr as u64, data.len() as u64));
                    self.l1_mut(t).write(*addr, data).expect("resolved within L1");
                }
            }
            Target::Reg { tile, addr } => {
                let v = u32::from_le_bytes(data.try_into().expect("one register"));
                self.reg_write(*tile, *addr, v, at);
            }
            Target::Dram { channel, offset } => self.dram.write(*channel, *offset, data),
            Target::Host { offset } => self.sysmem.write(*offset as usize, data),
            Target::Arc { .. } => unreachable!("ARC writes are refused when resolved"),
        }
    }

    /// A register write from the NOC or the host (checked already).
    fn reg_write(&mut self, tile: usize, addr: u32, v: u32, at: u64) {
        let r = TensixRegs::decode(self.chip, addr).expect("a writable register, checked");
        for &j in &self.tensix(tile).cores.clone() {
            self.wake(j);
        }
        self.tensix_mut(tile).regs.write(r, v).expect("a writable register, checked");
        if r == RegAccess::SoftReset {
            self.apply_soft_reset(tile, at.max(self.now));
        }
    }

    fn noc_read(&self, target: &Target, buf: &mut [u8]) {
        match target {
            Target::Reg { tile, addr } => {
                let v = self.peek_reg(*tile, *addr).expect("validated at issue");
                buf.copy_from_slice(&v.to_le_bytes());
            }
            _ => self.peek_target(target, buf).expect("validated at issue"),
        }
    }

    /// Before bytes `[addr, addr + len)` of tile `t`'s L1 change (a NOC or
    /// host write): wakes the cores whose parked loop reads them, and drops
    /// the lines they land on from the cores' instruction caches (`icache`
    /// says why), a parked core woken first.
    fn before_l1_write(&mut self, t: usize, (addr, len): (u64, u64)) {
        self.wake_tile_if_read(t, (addr, len));
        if !self.cfg.icache {
            return;
        }
        let Some(tile) = self.tiles[t].as_ref() else { return };
        let (addr, len) = (addr as u32, len as u32);
        for j in tile.cores {
            if self.cores[j].hart.icache_holds_any(addr, len) {
                self.wake(j);
                self.cores[j].hart.icache_drop_written(addr, len);
            }
        }
    }

    /// Wakes the cores of tile `t` whose parked loop reads `[addr, addr + len)`.
    /// Inline up to the tile's span of parked reads: every landing write
    /// and NIU counter bump asks, and mostly nothing there is parked.
    #[inline]
    fn wake_tile_if_read(&mut self, t: usize, (addr, len): (u64, u64)) {
        let Some(tile) = self.tiles[t].as_ref() else { return };
        let (lo, hi) = tile.parked_reads;
        if addr >= hi || addr + len <= lo {
            return;
        }
        self.wake_cores_reading(t, (addr, len));
    }

    #[inline(never)]
    fn wake_cores_reading(&mut self, t: usize, range: (u64, u64)) {
        for j in self.tensix(t).cores {
            self.wake_if_read(j, range);
        }
    }

    fn wake_if_read(&mut self, i: usize, (addr, len): (u64, u64)) {
        if self.cores[i].ff.idle.is_some_and(|l| l.reads_any(addr, len)) {
            self.wake(i);
            self.cores[i].ff.changed();
        }
    }

    /// Forgets every decoded instruction of the tile at translated `tile`,
    /// and empties its cores' instruction caches, for code written into its
    /// L1 behind the chip's back (a host's stores into a shared mapping).
    pub fn invalidate_code(&mut self, tile: Coord) -> Result<(), SimError> {
        let t = self.tensix_index(tile).ok_or_else(|| SimError::NotATile {
            what: "invalidate_code needs a Tensix tile",
            got: format!("{tile}"),
        })?;
        for j in self.tensix(t).cores {
            self.wake(j);
            self.cores[j].hart.icache_clear();
        }
        self.l1_mut(t).invalidate_all();
        Ok(())
    }

    /// Hang-dump view of a core; `None` if there is no such core.
    pub fn core_debug(&mut self, id: CoreId) -> Option<CoreDebug> {
        let i = self.core_index(id)?;
        self.wake(i);
        let c = &self.cores[i];
        let tile = self.tensix(c.tile);
        Some(CoreDebug::of(c.id, &c.hart, c.in_reset, self.l1(c.tile), &tile.regs, crate::HISTORY_LEN))
    }

    /// Samples the PC of each of `cores` at the end of every scheduling
    /// slice from now on, a statistical profile: each sample stands for the
    /// slice's device time (`quantum_cycles` plus jitter, or less where a
    /// host step ends the slice early), spent at or around that PC. Earlier
    /// samples are dropped; an empty list stops sampling. Sampling reads
    /// only: a run is the same with it or without.
    pub fn set_pc_sampling(&mut self, cores: &[CoreId]) -> Result<(), SimError> {
        let mut indices = Vec::with_capacity(cores.len());
        for &c in cores {
            let i = self.core_index(c).ok_or_else(|| SimError::NotATile {
                what: "PC sampling needs cores of Tensix tiles",
                got: format!("{c}"),
            })?;
            indices.push(i);
        }
        self.sampling = (!indices.is_empty()).then(|| PcSampling { cores: indices, cycles: BTreeMap::new() });
        Ok(())
    }

    /// The samples taken since `set_pc_sampling`: (core, PC, cycles of the
    /// slices that ended there), most cycles first. Each core's cycles add
    /// up to the device time since sampling started.
    pub fn pc_samples(&self) -> Vec<(CoreId, u32, u64)> {
        let mut v: Vec<_> =
            self.sampling.iter().flat_map(|s| &s.cycles).map(|(&(i, pc), &n)| (self.cores[i].id, pc, n)).collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
        v
    }

    /// NOC transactions issued but not yet delivered or acknowledged.
    pub fn in_flight(&self) -> usize {
        self.events.len() + self.delivering.is_some() as usize + self.own.len()
    }

    /// A 64-bit digest of the whole device state (memories, registers,
    /// counters, sysmem unless it is the host's, DRAM, TLBs, pending events,
    /// time, host BAR time not yet charged), hashed as bytes (see
    /// [`crate::digest`]). Equal digests mean (up to hash collisions)
    /// bit-identical runs.
    pub fn digest(&mut self) -> u64 {
        self.settle();
        let mut h = Digest::default();
        h.u64(self.now);
        h.u64(self.host_busy);
        for c in &self.cores {
            h.u64(c.id.tile.packed() as u64);
            h.u64(c.id.processor.index() as u64);
            h.u64(c.in_reset as u64);
            h.u64(c.hart.pc() as u64);
            h.u64(c.hart.cycle());
            h.u64(c.hart.instret());
            for r in c.hart.regs() {
                h.u64(r as u64);
            }
            h.halt(c.hart.halted());
            h.bytes(&c.hart.mem.local.bytes());
            // The L0 data cache decides what later loads return and when
            // it flushes (its draws count hits).
            let l0 = c.hart.l0_cache();
            h.u64(l0.hits());
            h.bytes(&l0.state().to_bytes());
        }
        for (t, tile) in self.tiles.iter().enumerate() {
            let Some(tile) = tile else { continue };
            h.tensix(&tile.regs);
            h.bytes(&self.l1(t).bytes());
        }
        for (ch, off, bytes) in self.dram.touched() {
            h.u64(ch as u64);
            h.u64(off);
            h.bytes(&bytes);
        }
        // Host memory behind a `HostMemory` is the host's, not device state:
        // what the device read from it is in L1 already.
        if let Some(bytes) = self.sysmem.snapshot() {
            h.bytes(&bytes);
        }
        for w in self.tlbs.words() {
            h.u64(w as u64);
        }
        let mut pending: Vec<&Event> = self.events.iter().chain(&self.delivering).chain(&self.own).collect();
        pending.sort_by_key(|e| (e.time, e.seq));
        for e in pending {
            h.event(e);
        }
        // In issue order (ids grow with it), whichever tile they leave.
        let mut departing: Vec<&Departing> = self.tiles.iter().flatten().flat_map(|tile| &tile.departing).collect();
        departing.sort_by_key(|d| d.id);
        for d in departing {
            h.departing(d);
        }
        for l in &self.landing {
            h.landing(l);
        }
        for &t in &self.niu_free {
            h.u64(t);
        }
        for &(id, old) in &self.atomic_old {
            h.u64(id);
            h.u64(old as u64);
        }
        let mesh = self.mesh.iter().flat_map(Mesh::links);
        for link in self.endpoints.links().chain(mesh) {
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

/// The tile an event due inside a slice belongs to: a tile's request to
/// itself (zero hops: its own L1, registers or counters).
fn own_tile(kind: &EventKind) -> usize {
    match kind {
        EventKind::WriteArrive { src: Some(src), .. }
        | EventKind::WriteAck { src, .. }
        | EventKind::AtomicArrive { src, .. }
        | EventKind::AtomicResp { src, .. }
        | EventKind::ReadComplete { src, .. } => src.tile,
        EventKind::WriteArrive { src: None, .. } | EventKind::HostWrite { .. } => {
            unreachable!("the host writes between slices")
        }
    }
}

/// Tile `t`'s L1: at home, or in the hart of the core holding it.
fn tile_l1<'a>(tiles: &'a [Option<Tensix>], cores: &'a [Core], t: usize) -> &'a Ram {
    let tile = tiles[t].as_ref().expect("a Tensix tile");
    match tile.l1_holder {
        Some(i) => &cores[i].hart.mem.l1,
        None => &tile.l1_home,
    }
}

/// Fills `buf` (whole words) with `v`'s bytes; one register is 4 bytes.
fn fill_words(buf: &mut [u8], v: u32) -> Result<(), SimError> {
    if buf.len() != 4 {
        return Err(SimError::Bar("registers are read 4 bytes at a time".into()));
    }
    buf.copy_from_slice(&v.to_le_bytes());
    Ok(())
}

#[cfg(test)]
#[path = "chip_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "chip_noc_tests.rs"]
mod noc_tests;

#[cfg(test)]
#[path = "chip_host_tests.rs"]
mod host_tests;

#[cfg(test)]
#[path = "chip_arch_tests.rs"]
mod arch_tests;
