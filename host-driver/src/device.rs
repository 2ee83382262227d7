//! A device: its backend, its configuration, the chip it is (board and
//! harvesting from ARC, queues placed: [`Topology`]), its command queues
//! and allocators; boot. Work goes through [`Device::cq`], waits through
//! `crate::wait`.

use crate::backend::{read_struct, Backend};
use crate::buffer::{Allocator, Buffer};
use crate::config::DeviceConfig;
use crate::dump::{QueuePointers, Wait};
use crate::elf::{BootImages, FirmwareImage};
use crate::error::{BootProblem, DriverError, Result, StateError};
use crate::events::Event;
use crate::geometry::{CoreId, Topology};
use crate::kernel::KernelImage;
use crate::notes::Note;
use crate::queue::{CommandQueue, NoArena, PendingRead, Queues, Staging};
use crate::trace_reader::CoreTrace;
use cqlab_abi::arch::tensix::{Processor, SOFT_RESET_0, SOFT_RESET_ALL, SOFT_RESET_BRISC_ONLY_RUN};
use cqlab_abi::boot::reset_jal;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{AliveRecord, CqConfig, ALIVE, ALIVE_MAGIC, COMPLETION_RD_PTR, CQ_CONFIG, NOC_MAP};
use cqlab_abi::memory_map::{firmware_entry, FETCH_QUEUE, MAILBOXES, RESET_JAL, TRACE_RING};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::semaphore;
use cqlab_abi::soc::ChipLayout;
use cqlab_abi::sysmem::CqSysmemLayout;
use cqlab_abi::trace::{TraceRingHeader, CAPACITY};
use cqlab_abi::ABI_VERSION;
use std::path::PathBuf;
use std::sync::Arc;
use zerocopy::IntoBytes;

pub struct Device {
    backend: Box<dyn Backend>,
    cfg: DeviceConfig,
    /// The chip (from ARC at open), its queues placed.
    chip: Arc<Topology>,
    queues: Queues,
    allocator: Allocator,
    /// `DeviceConfig::worker_kernel`, loaded at boot, run by `launch`.
    default_kernel: Option<Arc<KernelImage>>,
}

impl Device {
    /// Wraps a backend; call [`Device::boot`] before use. The chip is what
    /// ARC says it is (`Backend::identify`); a configuration that names
    /// another board or harvesting is refused.
    pub fn with_backend(mut backend: Box<dyn Backend>, mut cfg: DeviceConfig) -> Result<Self> {
        cfg.validate()?;
        #[cfg(feature = "mutants")]
        crate::queue::mutant::check(&cfg)?;
        let (board, harvesting) = backend.identify()?;
        if let Some(want) = cfg.board.filter(|&b| b != board) {
            return Err(DriverError::Invalid(format!(
                "{} is a {board} ({harvesting}), the configuration asks for a {want}",
                backend.name()
            )));
        }
        if let Some(want) = cfg.harvesting.as_ref().filter(|&h| *h != harvesting) {
            return Err(DriverError::Invalid(format!(
                "{} is a {board} harvested {harvesting}, the configuration asks for {want}",
                backend.name()
            )));
        }
        let chip = Arc::new(Topology::new(ChipLayout::new(board, harvesting.clone())?, cfg.num_cqs)?);
        (cfg.board, cfg.harvesting) = (Some(board), Some(harvesting));
        // A kernel timeout of device time suited to what the device is: a
        // simulator's cycles cost far more host time than a card's.
        cfg.kernel_timeout_cycles.get_or_insert(if backend.silicon() {
            crate::config::DEFAULT_KERNEL_TIMEOUT_CYCLES
        } else {
            crate::config::DEFAULT_SIM_KERNEL_TIMEOUT_CYCLES
        });
        let queues = Queues::new(&cfg, chip.clone());
        Ok(Self { backend, cfg, chip, queues, allocator: Allocator::default(), default_kernel: None })
    }

    /// A read-only view of a live device that another process drives, for
    /// `cqlab status` and `cqlab dump`: `sim:PATH` only (an embedded device
    /// lives inside the process that runs it). Takes no lock and changes
    /// nothing. The chip is the daemon's; the queues and their sizes are
    /// the owner's, read from the NOC map and CQ0's configuration mailbox.
    #[cfg(feature = "daemon")]
    pub fn observe(spec: &str) -> Result<(Self, crate::daemon_backend::proto::Status)> {
        let Some(rest) = spec.strip_prefix("sim:") else {
            return Err(DriverError::Invalid(format!(
                "{spec:?} cannot be observed from another process: status and dump need a simulator daemon, \
                 sim:PATH (an embedded device lives inside the process that runs it)"
            )));
        };
        let (path, _) = crate::daemon_backend::DaemonBackend::parse_spec(rest)?;
        let mut obs = crate::daemon_backend::DaemonObserver::connect(path)?;
        let status = obs.status().clone();
        let (board, harvesting) = obs.identify()?;
        let layout = ChipLayout::new(board, harvesting)?;
        // CQ0's prefetcher is where it is whatever the queue count: its
        // NOC map says how many queues the owner booted.
        let first = Topology::new(layout.clone(), 1)?;
        let map: cqlab_abi::noc_map::NocMap =
            read_struct(&mut obs, NocAddr::unicast(first.prefetcher(0), NOC_MAP as u64))?;
        let num_cqs = if map.is_valid() { map.num_cqs as u8 } else { DeviceConfig::default().num_cqs };
        let chip = Topology::new(layout, num_cqs)?;
        let base = DeviceConfig { num_cqs, ..Default::default() };
        let qc: CqConfig = read_struct(&mut obs, NocAddr::unicast(chip.prefetcher(0), CQ_CONFIG as u64))?;
        let owners = DeviceConfig {
            issue_size: qc.issue_size,
            completion_size: qc.completion_size,
            fetch_entries: qc.fetch_entries,
            ring_page_size: qc.ring_page_size,
            ring_pages: qc.ring_pages,
            ..base.clone()
        };
        // Before the first boot the mailbox is empty: the defaults stand.
        let cfg = if owners.validate().is_ok() { owners } else { base };
        let mut dev = Self::with_backend(Box::new(obs), cfg)?;
        dev.queues.set_observer();
        Ok((dev, status))
    }

    /// Opens a device by spec (see [`crate::backend::spec`]): `embedded` or
    /// `embedded:seed=N[,slow]` (in-process simulator of `cfg`'s board),
    /// `sim:PATH[?wait[=SECS]]` (simulator daemon), `/dev/tenstorrent/N`
    /// (tt-kmd on a card), `ttkmd-sim:PATH` (the tt-kmd backend against the
    /// simulator), `ttsim:PATH` (a libttsim shared library).
    pub fn open(spec: &str, mut cfg: DeviceConfig) -> Result<Self> {
        let backend = crate::backend::spec::open(spec, &mut cfg)?;
        Self::with_backend(backend, cfg)
    }

    /// An in-process simulated chip: `sim`'s board and harvesting, which
    /// `cfg` must not contradict.
    #[cfg(feature = "sim")]
    pub fn embedded(sim: cqlab_sim::config::SimConfig, cfg: DeviceConfig) -> Result<Self> {
        let backend = crate::backend::spec::embedded_with(sim, &cfg)?;
        Self::with_backend(Box::new(backend), cfg)
    }

    /// Device time in cycles.
    pub fn now(&self) -> u64 {
        self.backend.now()
    }

    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }
    /// The chip: board, harvesting, where the queues and the workers are.
    pub fn chip(&self) -> &Topology {
        &self.chip
    }
    pub fn backend(&mut self) -> &mut dyn Backend {
        &mut *self.backend
    }
    pub fn num_cqs(&self) -> u8 {
        self.cfg.num_cqs
    }
    /// The seq the next worker launch will carry in its launch message and
    /// in its workers' kernel trace records (unique across queues).
    pub fn next_launch_seq(&self) -> u32 {
        self.queues.next_launch_seq()
    }

    /// Every compute core (translated coordinates), logical row by row.
    pub fn workers(&self) -> impl Iterator<Item = Coord> + '_ {
        self.chip.workers()
    }

    /// CQ cores, then workers.
    pub fn all_cores(&self) -> impl Iterator<Item = Coord> + '_ {
        self.chip.all_cores()
    }

    /// Logical `(col, row)` of the tile at NOC0 `tile`, or why it is not a
    /// compute core (harvested, a queue's core, DRAM, ...).
    pub fn logical_core(&self, tile: Coord) -> Result<(u8, u8)> {
        Ok(self.chip.logical_of_noc0(tile)?)
    }

    /// Queue `q` (0-based).
    pub fn cq(&mut self, q: u8) -> Result<CommandQueue<'_>> {
        let kernel = self.default_kernel.clone();
        CommandQueue::new(&mut *self.backend, &self.cfg, &self.chip, &mut self.queues, &mut self.allocator, kernel, q)
    }

    /// This chip's firmware directory.
    fn chip_firmware_dir(&self) -> PathBuf {
        self.cfg.chip_firmware_dir(self.chip.arch())
    }

    fn cq_firmware_dir(&self) -> PathBuf {
        self.cfg.cq_firmware_dir(self.chip.arch())
    }

    fn worker_elf(&self, p: Processor) -> PathBuf {
        self.cfg.worker_elf(self.chip.arch(), p)
    }

    /// The ELF of the firmware `core` boots (its symbols name the PCs a
    /// profile samples), or `None` when no firmware runs there.
    pub fn firmware_elf(&self, core: CoreId) -> Option<PathBuf> {
        match self.chip.cq_role(core.tile) {
            // Slow dispatch holds the CQ cores in reset; their subordinates always are.
            Some(_) if self.cfg.slow_dispatch || core.processor != Processor::Brisc => None,
            Some((_, true)) => Some(self.cq_firmware_dir().join(FirmwareId::Prefetch.name())),
            Some((_, false)) => Some(self.cq_firmware_dir().join(FirmwareId::Dispatch.name())),
            None => self.chip.logical(core.tile).map(|_| self.worker_elf(core.processor)),
        }
    }

    /// Loads the firmware through the BAR (TLB windows), holds and releases
    /// BRISC of each tile through `SOFT_RESET_0`, and waits for every
    /// tile's alive record (`cqlab_abi::boot` describes the sequence).
    pub fn boot(&mut self) -> Result<()> {
        let BootImages { prefetch, dispatch, workers: worker } = self.cfg.boot_images(self.chip.arch())?;
        self.default_kernel = Some(Arc::new(self.load_kernel(&self.cfg.worker_kernel.clone())?));
        // Nothing is resident or in flight on freshly booted workers, and
        // the firmware starts its queues from zero: so does the host.
        let noc_base = self.backend.sysmem_noc_base();
        let arenas = if self.cfg.stage_min_bytes > 0 && !self.cfg.slow_dispatch {
            let end = self.cfg.queue_layout(self.cfg.num_cqs).base;
            let forwarded = self.chip.arch().params().bar.host_mem_size;
            let limit = cqlab_abi::fetch_queue::staged_end_limit(forwarded);
            let arenas = crate::queue::arenas(end, self.backend.sysmem_len() as u64, self.cfg.num_cqs, noc_base, limit);
            self.note_unreachable_arenas(&arenas, noc_base, limit, limit == forwarded);
            arenas.into_iter().map(Result::ok).collect()
        } else {
            Vec::new()
        };
        // Each prefetcher reads staged pieces from its queue's arena only.
        let arena_units =
            |q: u8| arenas.get(q as usize).and_then(Option::as_ref).map_or((0, 0), |a| a.config_units(noc_base));
        let staged: Vec<(u32, u32)> = (0..self.cfg.num_cqs).map(arena_units).collect();
        self.queues.reboot(&self.cfg, arenas);
        // Every tile that will run firmware is held first: nothing written
        // below may reach a core that still runs an earlier boot's code.
        for tile in self.chip.all_cores().collect::<Vec<_>>() {
            self.set_reset(tile, SOFT_RESET_ALL)?;
        }
        let mut expect = Vec::new();
        for q in 0..self.cfg.num_cqs {
            let layout = self.cfg.queue_layout(q);
            // The CQ cores are held in reset: the device does not touch the header.
            let header = (layout.issue_base() - layout.header()) as usize;
            self.backend.sysmem_claim(layout.header() as usize, header)?.fill(0);
            // The issue queue is written now, so its pages are resident from
            // the start, as in pinned memory: an enqueue never takes a page
            // fault on its first lap (normal pages fault on first write).
            self.backend.sysmem_claim(layout.issue_base() as usize, layout.issue_size as usize)?.fill(0);
            let (pf, dp) = (self.chip.prefetcher(q), self.chip.dispatcher(q));
            if self.cfg.slow_dispatch {
                // No CQ firmware: both cores stay held, and worker
                // completions are counted on the dispatcher's semaphore
                // from its value now.
                let done = NocAddr::unicast(dp, semaphore::addr(semaphore::WORKERS_DONE) as u64);
                let count = self.backend.read_u32(done)?;
                self.queues.set_slow_expected(q, count);
                continue;
            }
            let base = self.cq_config(q, layout, staged[q as usize]);
            let pcfg = CqConfig { peer_xy: dp.packed(), ..base };
            let dcfg = CqConfig { peer_xy: pf.packed(), ..base };
            self.load(NocAddr::unicast(pf, 0), std::slice::from_ref(&prefetch), Some(&pcfg))?;
            self.load(NocAddr::unicast(dp, 0), std::slice::from_ref(&dispatch), Some(&dcfg))?;
            expect.push((pf, FirmwareId::Prefetch));
            expect.push((dp, FirmwareId::Dispatch));
        }
        // The worker images go to every compute tile at once through a
        // multicast window where the backend has one (the compute grid is
        // a rectangle of translated coordinates holding no other Tensix).
        if self.backend.multicast_windows() {
            self.load(self.chip.range_noc(&self.chip.grid(), 0), &worker, None)?;
        } else {
            for w in self.chip.workers().collect::<Vec<_>>() {
                self.load(NocAddr::unicast(w, 0), &worker, None)?;
            }
        }
        expect.extend(self.chip.workers().map(|w| (w, FirmwareId::Worker)));
        // The loads land before any core runs: a read-back flushes the
        // posted BAR writes (a PCIe read does not pass them) and returns
        // only once they have drained. Whatever an earlier boot's firmware
        // still had in flight on the NOC (the acks of its last writes to
        // host memory) lands meanwhile, before the new firmware takes its
        // NIU counters as its starting point (`hal::noc_init`): an ack
        // counted after that would leave it waiting for writes forever.
        if let Some(&(tile, _)) = expect.first() {
            self.backend.read_u32(NocAddr::unicast(tile, RESET_JAL as u64))?;
        }
        for &(tile, _) in &expect {
            self.set_reset(tile, SOFT_RESET_BRISC_ONLY_RUN)?;
        }
        for (tile, fw) in expect {
            self.wait_alive(tile, fw)?;
        }
        Ok(())
    }

    /// Says so when queues stage nothing because their arenas lie past
    /// `limit` in the chip's host-memory range (a card whose driver pinned
    /// the buffer high): every enqueue then copies its kernel images and
    /// args, where the queues' other choices are free.
    fn note_unreachable_arenas(
        &self,
        arenas: &[std::result::Result<Staging, NoArena>],
        pinned_at: u64,
        limit: u64,
        forwarded: bool,
    ) {
        let off: Vec<(u8, u64)> = (0u8..)
            .zip(arenas)
            .filter_map(|(q, a)| match a {
                Err(NoArena::Unreachable { end }) => Some((q, *end)),
                _ => None,
            })
            .collect();
        let (Some(&(_, end)), Some(sink)) = (off.first(), &self.cfg.notes) else { return };
        sink.report(&Note::StagingUnreachable {
            device: self.backend.name(),
            queues: off.iter().map(|&(q, _)| q).collect(),
            end,
            limit,
            pinned_at,
            forwarded,
        });
    }

    /// Loads kernel image `name` from the chip's firmware directory.
    pub fn load_kernel(&self, name: &str) -> Result<KernelImage> {
        KernelImage::load(&self.chip_firmware_dir().join(name), self.chip.arch())
    }

    /// Queue `q`'s configuration: its sysmem `layout` and its staging
    /// arena `(staged_from, staged_units)`.
    fn cq_config(&self, q: u8, layout: CqSysmemLayout, (staged_from, staged_units): (u32, u32)) -> CqConfig {
        CqConfig {
            sysmem_base: layout.base + self.backend.sysmem_noc_base(),
            issue_size: layout.issue_size,
            completion_size: layout.completion_size,
            cq_id: q as u32,
            fetch_entries: self.cfg.fetch_entries,
            cmd_buffer_size: cqlab_abi::memory_map::CHUNK_AREA.size,
            ring_page_size: self.cfg.ring_page_size,
            ring_pages: self.cfg.ring_pages,
            peer_xy: 0,
            staged_from,
            staged_units,
            ..Default::default()
        }
    }

    /// Writes `SOFT_RESET_0` of `tile` (a register: unicast only).
    fn set_reset(&mut self, tile: Coord, value: u32) -> Result<()> {
        self.backend.write_u32(NocAddr::unicast(tile, SOFT_RESET_0 as u64), value)
    }

    /// Writes a tile's (or every tile's of a multicast `at`) boot state,
    /// its cores held: clears what the host will poll and the firmware
    /// trusts to start from zero (semaphores, alive records, subordinate
    /// mailboxes, `LAST_EVENT`, the fetch queue, launch-ring tags, the trace
    /// ring header), writes each core's image, the NOC map and BRISC's
    /// reset `jal`, and for CQ cores their configuration.
    fn load(&mut self, at: NocAddr, images: &[FirmwareImage], cfg: Option<&CqConfig>) -> Result<()> {
        let at = |a: u32| at.with_local(a as u64);
        // Semaphores survive a soft reset (L1): a device that outlives host
        // processes would hand the new firmware stale credits and counts.
        let zeros = vec![0u8; (FETCH_QUEUE.end() - MAILBOXES.base) as usize];
        self.backend.write(at(MAILBOXES.base), &zeros)?;
        self.backend.write(at(TRACE_RING.base), TraceRingHeader::default().as_bytes())?;
        // A worker's launch count starts at 0: no ring entry may carry a
        // tag of an earlier boot.
        for q in 0..self.cfg.num_cqs as u32 {
            for n in 0..cqlab_abi::program::LAUNCH_RING_ENTRIES {
                let tag = cqlab_abi::program::launch_entry(q, n) + cqlab_abi::program::LAUNCH_TAG;
                self.backend.write_u32(at(tag), 0)?;
            }
        }
        for image in images {
            for seg in &image.segments {
                self.backend.write(at(seg.addr), &seg.data)?;
                if seg.zeroes > 0 {
                    self.backend.write(at(seg.addr + seg.data.len() as u32), &vec![0u8; seg.zeroes as usize])?;
                }
            }
        }
        self.backend.write(at(NOC_MAP), self.chip.noc_map().as_bytes())?;
        self.backend.write_u32(at(RESET_JAL), reset_jal(firmware_entry(Processor::Brisc)))?;
        if let Some(cfg) = cfg {
            self.backend.write(at(CQ_CONFIG), cfg.as_bytes())?;
            self.backend.write_u32(at(COMPLETION_RD_PTR), 0)?;
        }
        Ok(())
    }

    fn wait_alive(&mut self, tile: Coord, fw: FirmwareId) -> Result<()> {
        let mut alive = AliveRecord::default();
        crate::wait::until(
            &mut *self.backend,
            &self.cfg,
            &self.chip,
            &mut self.queues,
            || Wait::Alive { core: tile, firmware: fw },
            |backend, _| {
                alive = read_struct(backend, NocAddr::unicast(tile, ALIVE as u64))?;
                Ok(alive.magic == ALIVE_MAGIC)
            },
        )?;
        if alive.abi_version != ABI_VERSION {
            return Err(DriverError::AbiMismatch { core: tile, expected: ABI_VERSION, found: alive.abi_version });
        }
        if alive.firmware_id != fw as u32 {
            let reason = BootProblem::WrongFirmware { expected: fw.name(), found: alive.firmware_id };
            return Err(DriverError::BootFailed { core: tile, reason });
        }
        if alive.core_xy != tile.packed() {
            return Err(DriverError::BootFailed {
                core: tile,
                reason: BootProblem::WrongCore(Coord::unpack(alive.core_xy)),
            });
        }
        Ok(())
    }

    /// Waits for a pending read and returns its bytes.
    pub fn complete_read(&mut self, pending: &PendingRead) -> Result<Vec<u8>> {
        self.queues.complete_read(&mut *self.backend, &self.cfg, pending)
    }

    /// Blocks until `event` has completed.
    pub fn event_synchronize(&mut self, event: Event) -> Result<()> {
        self.queues.event_synchronize(&mut *self.backend, &self.cfg, event)
    }

    /// The device cycle at which `event` completed (the dispatcher's stamp
    /// in its completion record, after every earlier command of its queue
    /// finished), once it has; `None` while it has not, or when it is older
    /// than the last `queue::EVENT_CYCLES_KEPT` events of its queue. Drains
    /// completions, never blocks. Device time, so it does not depend on
    /// when the host looked (`event_synchronize` notices a completion up to
    /// a host poll later).
    pub fn event_cycle(&mut self, event: Event) -> Result<Option<u64>> {
        self.queues.event_cycle(&mut *self.backend, &self.cfg, event)
    }

    /// Whether `event` has completed (drains completions, never blocks).
    pub fn event_query(&mut self, event: Event) -> Result<bool> {
        self.queues.event_query(&mut *self.backend, &self.cfg, event)
    }

    pub fn alloc_dram(&mut self, size: u32, page_size: u32) -> Result<Buffer> {
        self.allocator.dram(size, page_size, self.chip.dram_banks(), self.chip.dram_bank_bytes())
    }

    /// Frees `buf`, the latest buffer still allocated in its memory (a
    /// core's L1, or DRAM), once no queued work uses it.
    pub fn free(&mut self, buf: &Buffer) -> Result<()> {
        self.allocator.free(buf, self.chip.dram_banks())
    }

    /// `size` bytes of the L1 of logical worker `(col, row)`.
    pub fn alloc_l1(&mut self, col: u8, row: u8, size: u32) -> Result<Buffer> {
        self.chip.check_range("an L1 buffer's core", &crate::geometry::CoreRange::single(col, row))?;
        let core = self.chip.worker(col, row).expect("checked");
        self.allocator.l1(core, size)
    }

    /// Queue `q`'s pointers, for hang dumps and stats (reads sysmem only,
    /// no BAR, unless observing another process's device).
    pub fn queue_pointers(&mut self, q: u8) -> Result<QueuePointers> {
        if q >= self.cfg.num_cqs {
            return Err(StateError::NoSuchQueue { q, count: self.cfg.num_cqs }.into());
        }
        self.queues.pointers_of(&mut *self.backend, &self.cfg, q)
    }

    /// A hang dump of the device now, without waiting: the chain follows `wait`'s queue.
    pub fn dump(&mut self, wait: Wait) -> Result<crate::dump::HangDump> {
        Ok(*crate::wait::dump(&mut *self.backend, &self.cfg, &self.chip, &mut self.queues, wait)?)
    }

    /// Every record still in a core's trace ring.
    pub fn read_trace(&mut self, core: Coord) -> Result<CoreTrace> {
        self.read_trace_tail(core, CAPACITY)
    }

    /// The newest `max` records of a core's ring (at most its capacity).
    pub fn read_trace_tail(&mut self, core: Coord, max: u32) -> Result<CoreTrace> {
        crate::trace_reader::read_tail(&mut *self.backend, core, max)
    }
}
