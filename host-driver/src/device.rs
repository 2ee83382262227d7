//! A device: its backend, its configuration, its command queues and
//! allocators; boot. Work goes through [`Device::cq`], waits through
//! `crate::wait`.

use crate::backend::{read_struct, Backend};
use crate::buffer::{Allocator, Buffer};
use crate::config::DeviceConfig;
use crate::dump::{QueuePointers, Wait};
use crate::elf::FirmwareImage;
use crate::error::{BootProblem, DriverError, Result, StateError};
use crate::events::Event;
use crate::kernel::KernelImage;
use crate::queue::{CommandQueue, PendingRead, Queues};
use crate::trace_reader::CoreTrace;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{AliveRecord, CqConfig, ALIVE, ALIVE_MAGIC, COMPLETION_RD_PTR, CQ_CONFIG};
use cqlab_abi::memory_map::{FETCH_QUEUE, MAILBOXES, TRACE_RING};
use cqlab_abi::mmio::{self, MMIO_BASE, SOFT_RESET};
use cqlab_abi::noc::{self, Coord, NocAddr};
use cqlab_abi::sysmem::CqSysmemLayout;
use cqlab_abi::trace::{TraceRingHeader, CAPACITY};
use cqlab_abi::ABI_VERSION;
use std::sync::Arc;
use zerocopy::IntoBytes;

pub struct Device {
    backend: Box<dyn Backend>,
    cfg: DeviceConfig,
    queues: Queues,
    allocator: Allocator,
    /// `DeviceConfig::worker_kernel`, loaded at boot, run by `launch`.
    default_kernel: Option<Arc<KernelImage>>,
}

impl Device {
    /// Wraps a backend; call [`Device::boot`] before use.
    pub fn with_backend(backend: Box<dyn Backend>, cfg: DeviceConfig) -> Result<Self> {
        cfg.validate()?;
        #[cfg(feature = "mutants")]
        crate::queue::mutant::check(&cfg)?;
        let queues = Queues::new(&cfg);
        Ok(Self { backend, cfg, queues, allocator: Allocator::default(), default_kernel: None })
    }

    /// A read-only view of a live device that another process drives, for
    /// `cqlab status` and `cqlab dump`: `sim:PATH` only (an embedded device
    /// lives inside the process that runs it). Takes no lock and changes
    /// nothing. The queue sizes are the owner's, read from CQ0's prefetcher
    /// configuration mailbox; the grid is the daemon's.
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
        let chip = &status.chip;
        let base = DeviceConfig {
            worker_cols: chip.worker_cols,
            worker_rows: chip.worker_rows,
            num_cqs: chip.num_cqs,
            dram_banks: chip.dram_banks,
            ..Default::default()
        };
        let qc: CqConfig = read_struct(&mut obs, NocAddr::unicast(noc::prefetcher(0), CQ_CONFIG as u64))?;
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
    /// `embedded:seed=N[,slow]` (in-process simulator), `sim:PATH[?wait[=SECS]]`
    /// (simulator daemon), `/dev/tenstorrent/N` (tt-kmd on a card),
    /// `ttkmd-sim:PATH` (the tt-kmd backend against the simulator).
    pub fn open(spec: &str, mut cfg: DeviceConfig) -> Result<Self> {
        let backend = crate::backend::spec::open(spec, &mut cfg)?;
        Self::with_backend(backend, cfg)
    }

    /// An in-process simulated chip shaped like `cfg`.
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

    /// Every worker core of the configured grid.
    pub fn workers(&self) -> impl Iterator<Item = Coord> {
        self.cfg.workers()
    }

    /// CQ cores, then workers.
    pub fn all_cores(&self) -> impl Iterator<Item = Coord> {
        self.cfg.all_cores()
    }

    /// Queue `q` (0-based).
    pub fn cq(&mut self, q: u8) -> Result<CommandQueue<'_>> {
        let kernel = self.default_kernel.clone();
        CommandQueue::new(&mut *self.backend, &self.cfg, &mut self.queues, &mut self.allocator, kernel, q)
    }

    /// Where the CQ firmware (`prefetch`, `dispatch`) comes from: the
    /// firmware directory or its known-bug variant.
    fn cq_firmware_dir(&self) -> std::path::PathBuf {
        match &self.cfg.firmware_variant {
            Some(v) => self.cfg.firmware_dir.join("variants").join(v),
            None => self.cfg.firmware_dir.clone(),
        }
    }

    /// The resident worker firmware: the variant's own when its directory
    /// holds one (a mutant of `cargo xtask mutants` may change it), else
    /// the firmware directory's.
    fn worker_elf(&self) -> std::path::PathBuf {
        let name = FirmwareId::Worker.name();
        let own = self.cq_firmware_dir().join(name);
        if self.cfg.firmware_variant.is_some() && own.is_file() {
            own
        } else {
            self.cfg.firmware_dir.join(name)
        }
    }

    /// The ELF of the firmware `core` boots (its symbols name the PCs a
    /// profile samples), or `None` when no firmware runs there.
    pub fn firmware_elf(&self, core: Coord) -> Option<std::path::PathBuf> {
        let cq = (0..self.cfg.num_cqs).find(|&q| noc::prefetcher(q) == core || noc::dispatcher(q) == core);
        match cq {
            // Slow dispatch holds the CQ cores in reset.
            Some(_) if self.cfg.slow_dispatch => None,
            Some(q) if noc::prefetcher(q) == core => Some(self.cq_firmware_dir().join("prefetch")),
            Some(_) => Some(self.cq_firmware_dir().join("dispatch")),
            None => self.workers().any(|w| w == core).then(|| self.worker_elf()),
        }
    }

    /// Loads the firmware through the BAR, releases reset and waits for every
    /// core's alive record.
    pub fn boot(&mut self) -> Result<()> {
        let cq_dir = self.cq_firmware_dir();
        let (prefetch, dispatch) =
            (FirmwareImage::load(&cq_dir.join("prefetch"))?, FirmwareImage::load(&cq_dir.join("dispatch"))?);
        let worker = FirmwareImage::load(&self.worker_elf())?;
        self.default_kernel = Some(Arc::new(self.load_kernel(&self.cfg.worker_kernel.clone())?));
        // Nothing is resident or in flight on freshly booted workers, and
        // the firmware starts its queues from zero: so does the host.
        let arenas = if self.cfg.stage_min_bytes > 0 && !self.cfg.slow_dispatch {
            let end = self.cfg.queue_layout(self.cfg.num_cqs).base;
            crate::queue::arenas(end, self.backend.sysmem_len() as u64, self.cfg.num_cqs)
        } else {
            Vec::new()
        };
        self.queues.reboot(&self.cfg, arenas);
        let mut expect = Vec::new();
        for q in 0..self.cfg.num_cqs {
            let layout = self.cfg.queue_layout(q);
            // The CQ cores are held in reset (or not yet loaded): the device does not touch the header.
            let header = (layout.issue_base() - layout.header()) as usize;
            self.backend.sysmem_claim(layout.header() as usize, header)?.fill(0);
            // The issue queue is written now, so its pages are resident from
            // the start, as in pinned memory: an enqueue never takes a page
            // fault on its first lap (normal pages fault on first write).
            self.backend.sysmem_claim(layout.issue_base() as usize, layout.issue_size as usize)?.fill(0);
            let base = self.cq_config(q, layout);
            let pcfg = CqConfig { peer_xy: noc::dispatcher(q).packed(), ..base };
            let dcfg = CqConfig { peer_xy: noc::prefetcher(q).packed(), ..base };
            if self.cfg.slow_dispatch {
                // No CQ firmware: hold both cores in reset and count worker
                // completions on the dispatcher's semaphore from its value now.
                self.set_reset(noc::prefetcher(q), true)?;
                self.set_reset(noc::dispatcher(q), true)?;
                let done =
                    NocAddr::unicast(noc::dispatcher(q), (MMIO_BASE + mmio::semaphore(mmio::sem::WORKERS_DONE)) as u64);
                let count = self.backend.read_u32(done)?;
                self.queues.set_slow_expected(q, count);
                continue;
            }
            self.load(noc::prefetcher(q), &prefetch, Some(&pcfg))?;
            self.load(noc::dispatcher(q), &dispatch, Some(&dcfg))?;
            expect.push((noc::prefetcher(q), FirmwareId::Prefetch));
            expect.push((noc::dispatcher(q), FirmwareId::Dispatch));
        }
        for w in self.cfg.workers() {
            // Workers only read `num_cqs`: how many launch rings to serve.
            let wcfg = CqConfig { num_cqs: self.cfg.num_cqs as u32, ..Default::default() };
            self.load(w, &worker, Some(&wcfg))?;
            expect.push((w, FirmwareId::Worker));
        }
        for &(core, _) in &expect {
            self.set_reset(core, false)?;
        }
        for (core, fw) in expect {
            self.wait_alive(core, fw)?;
        }
        Ok(())
    }

    /// Loads kernel image `name` from the firmware directory.
    pub fn load_kernel(&self, name: &str) -> Result<KernelImage> {
        KernelImage::load(&self.cfg.firmware_dir.join(name))
    }

    fn cq_config(&self, q: u8, layout: CqSysmemLayout) -> CqConfig {
        CqConfig {
            sysmem_base: layout.base + self.backend.sysmem_noc_base(),
            issue_size: layout.issue_size,
            completion_size: layout.completion_size,
            cq_id: q as u32,
            num_cqs: self.cfg.num_cqs as u32,
            fetch_entries: self.cfg.fetch_entries,
            cmd_buffer_size: cqlab_abi::memory_map::CHUNK_AREA.size,
            ring_page_size: self.cfg.ring_page_size,
            ring_pages: self.cfg.ring_pages,
            peer_xy: 0,
            dram_banks: self.cfg.dram_banks,
            _reserved: [0; 4],
        }
    }

    fn set_reset(&mut self, core: Coord, held: bool) -> Result<()> {
        self.backend.write_u32(NocAddr::unicast(core, (MMIO_BASE + SOFT_RESET) as u64), held as u32)
    }

    /// Holds `core` in reset, clears its mailboxes, fetch queue and trace
    /// ring, writes the image and (for CQ cores) its configuration.
    fn load(&mut self, core: Coord, image: &FirmwareImage, cfg: Option<&CqConfig>) -> Result<()> {
        self.set_reset(core, true)?;
        let at = |a: u32| NocAddr::unicast(core, a as u64);
        // Semaphores survive a soft reset: a device that outlives host
        // processes would hand the new firmware stale credits and counts.
        for i in 0..mmio::SEMAPHORE_COUNT {
            self.backend.write_u32(at(MMIO_BASE + mmio::semaphore(i)), 0)?;
        }
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
        for seg in &image.segments {
            self.backend.write(at(seg.addr), &seg.data)?;
            if seg.zeroes > 0 {
                self.backend.write(at(seg.addr + seg.data.len() as u32), &vec![0u8; seg.zeroes as usize])?;
            }
        }
        if let Some(cfg) = cfg {
            self.backend.write(at(CQ_CONFIG), cfg.as_bytes())?;
            self.backend.write_u32(at(COMPLETION_RD_PTR), 0)?;
        }
        Ok(())
    }

    fn wait_alive(&mut self, core: Coord, fw: FirmwareId) -> Result<()> {
        let mut alive = AliveRecord::default();
        crate::wait::until(
            &mut *self.backend,
            &self.cfg,
            &mut self.queues,
            || Wait::Alive { core, firmware: fw },
            |backend, _| {
                alive = read_struct(backend, NocAddr::unicast(core, ALIVE as u64))?;
                Ok(alive.magic == ALIVE_MAGIC)
            },
        )?;
        if alive.abi_version != ABI_VERSION {
            return Err(DriverError::AbiMismatch { core, expected: ABI_VERSION, found: alive.abi_version });
        }
        if alive.firmware_id != fw as u32 {
            let reason = BootProblem::WrongFirmware { expected: fw.name(), found: alive.firmware_id };
            return Err(DriverError::BootFailed { core, reason });
        }
        if alive.core_xy != core.packed() {
            return Err(DriverError::BootFailed { core, reason: BootProblem::WrongCore(Coord::unpack(alive.core_xy)) });
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
        self.allocator.dram(size, page_size, self.cfg.dram_banks)
    }

    pub fn alloc_l1(&mut self, col: u8, row: u8, size: u32) -> Result<Buffer> {
        if col >= self.cfg.worker_cols || row >= self.cfg.worker_rows {
            return Err(DriverError::OutOfRange { what: "core", detail: format!("({col},{row})") });
        }
        self.allocator.l1(noc::worker(col, row), size)
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
        Ok(*crate::wait::dump(&mut *self.backend, &self.cfg, &mut self.queues, wait)?)
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
