//! A device: its backend, its command queues, boot, and the one place where
//! the host waits for the device (progress-aware, with hang dumps).

use crate::backend::read_struct;
use crate::backend::Backend;
use crate::command_queue::CqHost;
use crate::config::DeviceConfig;
use crate::elf::FirmwareImage;
use crate::error::{DriverError, Result};
use crate::hang_dump::HangDump;
use crate::kernel::KernelImage;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{
    AliveRecord, CqConfig, ErrorRecord, ALIVE, ALIVE_MAGIC, COMPLETION_RD_PTR, CQ_CONFIG, ERROR, ERROR_MAGIC, WAYPOINT,
};
use cqlab_abi::memory_map::{FETCH_QUEUE, MAILBOXES, TRACE_RING};
use cqlab_abi::mmio::{self, MMIO_BASE, SOFT_RESET};
use cqlab_abi::noc::{self, Coord, NocAddr};
use cqlab_abi::sysmem::CqSysmemLayout;
use cqlab_abi::trace::{TraceKind, TraceRingHeader};
use cqlab_abi::waypoint::{self, Waypoint};
use cqlab_abi::ABI_VERSION;
use std::sync::Arc;
use zerocopy::IntoBytes;

/// Device cycles between progress checks while waiting: the resolution of
/// the stall and kernel timeouts.
pub const PROGRESS_CHECK_CYCLES: u64 = 1_000_000;

pub struct Device {
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) cfg: DeviceConfig,
    pub(crate) cqs: Vec<CqHost>,
    /// Next event id (ids start at 1, shared by all queues).
    pub(crate) next_event: u32,
    /// Sequence number of the next worker launch (unique across queues).
    pub(crate) next_launch_seq: u32,
    pub(crate) allocator: crate::buffer::Allocator,
    /// What the workers hold for each queue's programs (its slots and config ring share).
    pub(crate) programs: Vec<crate::program_state::ProgramState>,
    /// `DeviceConfig::worker_kernel`, loaded at boot, run by `launch`.
    pub(crate) default_kernel: Option<Arc<KernelImage>>,
    /// A read-only view of a device another process drives
    /// ([`Device::observe`]): host-side queue state is derived from the device.
    pub(crate) observer: bool,
    /// Polls of waits since the host last read completions in one
    /// (`DeviceConfig::drain_every_polls`).
    pub(crate) polls_since_drain: u32,
}

impl Device {
    /// Wraps a backend; call [`Device::boot`] before use.
    pub fn with_backend(backend: Box<dyn Backend>, cfg: DeviceConfig) -> Result<Self> {
        validate(&cfg)?;
        let cqs = (0..cfg.num_cqs)
            .map(|q| CqHost::new(CqSysmemLayout::for_cq(q, cfg.issue_size, cfg.completion_size)))
            .collect();
        let programs = program_states(&cfg);
        Ok(Self {
            backend,
            cfg,
            cqs,
            next_event: 1,
            next_launch_seq: 0,
            allocator: Default::default(),
            programs,
            default_kernel: None,
            observer: false,
            polls_since_drain: 0,
        })
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
        let cfg = if validate(&owners).is_ok() { owners } else { base };
        let mut dev = Self::with_backend(Box::new(obs), cfg)?;
        dev.observer = true;
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
        self.next_launch_seq
    }

    /// Every worker core of the configured grid.
    pub fn workers(&self) -> impl Iterator<Item = Coord> + '_ {
        (0..self.cfg.worker_rows).flat_map(move |r| (0..self.cfg.worker_cols).map(move |c| noc::worker(c, r)))
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
        // Nothing is resident or in flight on freshly booted workers.
        self.programs = program_states(&self.cfg);
        // The firmware starts its queues from zero: so does the host.
        self.next_launch_seq = 0;
        self.cqs = (0..self.cfg.num_cqs)
            .map(|q| CqHost::new(CqSysmemLayout::for_cq(q, self.cfg.issue_size, self.cfg.completion_size)))
            .collect();
        if self.cfg.stage_min_bytes > 0 && !self.cfg.slow_dispatch {
            let end = CqSysmemLayout::for_cq(self.cfg.num_cqs, self.cfg.issue_size, self.cfg.completion_size).base;
            let arenas = crate::staging::arenas(end, self.backend.sysmem_len() as u64, self.cfg.num_cqs);
            for (cq, arena) in self.cqs.iter_mut().zip(arenas) {
                cq.staging = arena;
            }
        }
        let mut expect = Vec::new();
        for q in 0..self.cfg.num_cqs {
            let layout = self.cqs[q as usize].layout;
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
                self.cqs[q as usize].slow_expected = self.backend.read_u32(done)?;
                continue;
            }
            self.load(noc::prefetcher(q), &prefetch, Some(&pcfg))?;
            self.load(noc::dispatcher(q), &dispatch, Some(&dcfg))?;
            expect.push((noc::prefetcher(q), FirmwareId::Prefetch));
            expect.push((noc::dispatcher(q), FirmwareId::Dispatch));
        }
        let workers: Vec<Coord> = self.workers().collect();
        for &w in &workers {
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

    /// The kernel `launch` runs.
    pub(crate) fn default_kernel(&self) -> Result<Arc<KernelImage>> {
        self.default_kernel
            .clone()
            .ok_or_else(|| DriverError::Invalid("the device is not booted (no kernel loaded)".into()))
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
        let what = format!("alive record of {} on core {core}", fw.name());
        let mut alive = AliveRecord::default();
        self.wait_until(
            None,
            || what.clone(),
            |dev| {
                alive = read_struct(&mut *dev.backend, NocAddr::unicast(core, ALIVE as u64))?;
                Ok(alive.magic == ALIVE_MAGIC)
            },
        )?;
        if alive.abi_version != ABI_VERSION {
            return Err(DriverError::AbiMismatch { core, expected: ABI_VERSION, found: alive.abi_version });
        }
        if alive.firmware_id != fw as u32 {
            let reason = format!("expected firmware {}, alive record says id {}", fw.name(), alive.firmware_id);
            return Err(DriverError::BootFailed { core, reason });
        }
        if alive.core_xy != core.packed() {
            let reason = format!("alive record names core {}", Coord::unpack(alive.core_xy));
            return Err(DriverError::BootFailed { core, reason });
        }
        Ok(())
    }

    /// Polls `ready` until it holds. Gives up after
    /// `stall_timeout_cycles` device cycles in which no core recorded any
    /// trace event and no kernel ran, with an error naming `what` and
    /// carrying a hang dump. While a worker runs its kernel the wait goes on
    /// until that kernel has run `kernel_timeout_cycles` (if not 0).
    pub(crate) fn wait_until(
        &mut self,
        cq: Option<u8>,
        what: impl Fn() -> String,
        mut ready: impl FnMut(&mut Device) -> Result<bool>,
    ) -> Result<()> {
        // Fast path: no device time passes and no BAR reads happen when the
        // condition already holds (the common case on enqueue).
        if ready(self)? {
            return Ok(());
        }
        // Progress is read through the BAR (slow on hardware): only at checks.
        let mut last_progress = None;
        let mut last_change = self.backend.now();
        let mut next_check = last_change + PROGRESS_CHECK_CYCLES;
        let mut first_running: Vec<(Coord, u64)> = Vec::new();
        loop {
            if ready(self)? {
                return Ok(());
            }
            let now = self.backend.poll()?;
            self.polls_since_drain = self.polls_since_drain.saturating_add(1);
            if now >= next_check {
                next_check = now + PROGRESS_CHECK_CYCLES;
                // A late-draining host still drains once per check, so its
                // lag never looks like a hang.
                self.polls_since_drain = u32::MAX;
                self.check_bad_command(&what(), cq)?;
                let progress = Some(self.progress()?);
                if progress != last_progress {
                    (last_progress, last_change) = (progress, now);
                    continue;
                }
                // No core recorded anything since `last_change`. A kernel
                // still running is not a hang: it has its own limit.
                if let Some((core, started)) = self.running_kernel()? {
                    // A worker at RUN without its KernelStart record (still
                    // booting, or its record overwritten) counts from when
                    // this wait first saw it, so the kernel limit bounds it.
                    let first = match first_running.iter().find(|(c, _)| *c == core) {
                        Some(&(_, at)) => at,
                        None => {
                            first_running.push((core, now));
                            now
                        }
                    };
                    let started = if started >= now { first } else { started };
                    let ran = now.saturating_sub(started);
                    let limit = self.cfg.kernel_timeout_cycles;
                    if limit != 0 && ran >= limit {
                        let what = what();
                        let dump = HangDump::collect(self, &what, cq)?;
                        return Err(DriverError::KernelTimeout {
                            core,
                            cycles: ran,
                            limit,
                            what,
                            dump: Box::new(dump),
                        });
                    }
                    last_change = now;
                } else if now - last_change >= self.cfg.stall_timeout_cycles {
                    let what = what();
                    let dump = HangDump::collect(self, &what, cq)?;
                    return Err(DriverError::Timeout { what, cycles: now - last_change, dump: Box::new(dump) });
                }
            }
        }
    }

    /// Fails at once when a CQ core has halted on a bad command (`!CMD`).
    fn check_bad_command(&mut self, what: &str, cq: Option<u8>) -> Result<()> {
        for q in 0..self.cfg.num_cqs {
            for core in [noc::prefetcher(q), noc::dispatcher(q)] {
                let wp = Waypoint(self.backend.read_u32(NocAddr::unicast(core, WAYPOINT as u64))?);
                if wp == waypoint::BAD_CMD || wp == waypoint::PANIC {
                    let dump = HangDump::collect(self, what, cq)?;
                    let state = dump.cores.iter().find(|c| c.core == core.to_string());
                    let message = state
                        .and_then(|c| c.error.clone())
                        .unwrap_or_else(|| format!("halted with waypoint {wp} while the host waited for {what}"));
                    return Err(DriverError::Device { core, message, dump: Box::new(dump) });
                }
            }
        }
        Ok(())
    }

    /// A worker running its kernel (waypoint RUN, not halted, no error
    /// record) and the cycle its kernel started (its last `KernelStart`
    /// trace record), the earliest-started first.
    fn running_kernel(&mut self) -> Result<Option<(Coord, u64)>> {
        let mut found: Option<(Coord, u64)> = None;
        let workers: Vec<Coord> = self.workers().collect();
        for w in workers {
            let at = |a: u32| NocAddr::unicast(w, a as u64);
            if Waypoint(self.backend.read_u32(at(WAYPOINT))?) != waypoint::RUN {
                continue;
            }
            let halted = match self.backend.introspect() {
                Some(i) => i.core_debug(w)?.is_some_and(|d| d.halt.is_some()),
                None => false,
            };
            if halted
                || self.backend.read_u32(at(ERROR + std::mem::offset_of!(ErrorRecord, magic) as u32))? == ERROR_MAGIC
            {
                continue;
            }
            let started = self
                .read_trace_tail(w, 4)?
                .records
                .iter()
                .rev()
                .find(|r| TraceKind::from_u16(r.kind) == Some(TraceKind::KernelStart))
                .map_or(self.backend.now(), |r| r.cycle);
            if found.is_none_or(|(_, s)| started < s) {
                found = Some((w, started));
            }
        }
        Ok(found)
    }

    /// Sum of every core's trace sequence number: moves whenever any core
    /// does something worth recording.
    fn progress(&mut self) -> Result<u64> {
        let mut total = 0u64;
        let cores: Vec<Coord> = self.all_cores().collect();
        for core in cores {
            let next_seq = TRACE_RING.base as u64 + std::mem::offset_of!(TraceRingHeader, next_seq) as u64;
            total += self.backend.read_u32(NocAddr::unicast(core, next_seq))? as u64;
        }
        Ok(total)
    }

    /// CQ cores, then workers.
    pub fn all_cores(&self) -> impl Iterator<Item = Coord> + '_ {
        (0..self.cfg.num_cqs).flat_map(|q| [noc::prefetcher(q), noc::dispatcher(q)]).chain(self.workers())
    }
}

/// Each queue's empty program state.
fn program_states(cfg: &DeviceConfig) -> Vec<crate::program_state::ProgramState> {
    (0..cfg.num_cqs)
        .map(|q| crate::program_state::ProgramState::new(cfg.worker_cols, cfg.worker_rows, q, cfg.num_cqs))
        .collect()
}

/// Whether a device could be built with `cfg` (what [`Device`] checks
/// before it builds one): tools check their options with it up front.
pub fn validate(cfg: &DeviceConfig) -> Result<()> {
    let bad = |m: String| Err(DriverError::Invalid(m));
    if cfg.num_cqs == 0 || cfg.num_cqs > noc::MAX_CQS {
        return bad(format!("{} command queues (1..={})", cfg.num_cqs, noc::MAX_CQS));
    }
    let align = cqlab_abi::PCIE_ALIGNMENT as u32;
    if !CqSysmemLayout::for_cq(0, cfg.issue_size, cfg.completion_size).is_valid()
        || cfg.issue_size < 4 * align
        || cfg.completion_size < 2 * align
    {
        return bad(format!(
            "issue queue {} and completion queue {} bytes: both multiples of {align}, at least {} and {}",
            cfg.issue_size,
            cfg.completion_size,
            4 * align,
            2 * align
        ));
    }
    if cfg.fetch_entries == 0 || cfg.fetch_entries > cqlab_abi::fetch_queue::MAX_ENTRIES {
        return bad(format!("{} fetch-queue entries (1..={})", cfg.fetch_entries, cqlab_abi::fetch_queue::MAX_ENTRIES));
    }
    let ring = cfg.ring_page_size as u64 * cfg.ring_pages as u64;
    if !cfg.ring_page_size.is_power_of_two()
        || !cfg.ring_pages.is_power_of_two()
        || cfg.ring_page_size < 16
        || ring > cqlab_abi::memory_map::DISPATCH_RING.size as u64
    {
        return bad(format!("dispatcher ring {}x{} bytes", cfg.ring_pages, cfg.ring_page_size));
    }
    if cfg.worker_cols == 0
        || cfg.worker_rows == 0
        || cfg.worker_cols > noc::MAX_WORKER_COLS
        || cfg.worker_rows > noc::MAX_WORKER_ROWS
    {
        return bad(format!("worker grid {}x{}", cfg.worker_cols, cfg.worker_rows));
    }
    Ok(())
}
