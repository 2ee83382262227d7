//! Device configuration: the chip, queue sizes and the firmware, all
//! overridable.

use crate::elf::{BootImages, FirmwareImage};
use crate::error::{DriverError, Result};
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::Arch;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::memory_map::{DEFAULT_RING_PAGES, DEFAULT_RING_PAGE_SIZE};
use cqlab_abi::noc::{self, DEFAULT_CQS};
use cqlab_abi::soc::{Board, Harvesting};
use cqlab_abi::sysmem::{CqSysmemLayout, DEFAULT_COMPLETION_QUEUE_SIZE, DEFAULT_ISSUE_QUEUE_SIZE};
use std::path::{Path, PathBuf};

/// Default [`DeviceConfig::kernel_timeout_cycles`] on silicon (a card,
/// `/dev/tenstorrent/N`): 100 s of device time at 1 GHz, and of host time.
pub const DEFAULT_KERNEL_TIMEOUT_CYCLES: u64 = 100_000_000_000;

/// Default [`DeviceConfig::kernel_timeout_cycles`] on a simulator (every
/// other backend): 1 s of device time at 1 GHz. A simulator runs a chip of
/// spinning kernels at about 2 M cycles a second of host time, so the
/// silicon default made a hung kernel wait some 14 hours (helper-86's
/// audit: `demo` on an `addi; j` kernel, about 8 hours); this one about 8
/// minutes, 50 times the longest kernel a test or demo here runs (the
/// tests' spins go to 20 M cycles). A workload sized past the defaults can
/// need more (`large_gemm` at 1024 cubed is some 2.8 G cycles a core): the
/// timeout's error says how to give it more, and long waits print progress.
pub const DEFAULT_SIM_KERNEL_TIMEOUT_CYCLES: u64 = 1_000_000_000;

/// Default [`DeviceConfig::stage_min_bytes`]: blobs smaller than this are
/// copied inline. Gathering one costs the prefetcher more than copying saves
/// the host below about 8-12 KiB, and from 4 KiB no `cqlab bench dispatch`
/// point's host enqueue exceeds 1 us.
pub const DEFAULT_STAGE_MIN_BYTES: u32 = 4096;

#[derive(Clone, Debug)]
pub struct DeviceConfig {
    /// The board: the one to simulate (the embedded simulator; a Wormhole
    /// n150 when `None`), or the one expected of a device that exists (a
    /// daemon, a card: `None` takes whatever ARC says it is).
    pub board: Option<Board>,
    /// Its harvesting: `None` is the board's usual harvesting for a
    /// simulator made here, whatever ARC reports for a device that exists.
    pub harvesting: Option<Harvesting>,
    pub num_cqs: u8,
    pub issue_size: u32,
    pub completion_size: u32,
    /// Fetch-queue slots per CQ.
    pub fetch_entries: u32,
    pub ring_page_size: u32,
    pub ring_pages: u32,
    /// A wait gives up after this many device cycles without progress of
    /// the queue machinery (no core recorded a trace event) while no kernel
    /// runs: a hang, reported with its wait-for chain.
    pub stall_timeout_cycles: u64,
    /// A wait behind a kernel that is still running is not a hang: it gives
    /// up only when that kernel has run this many device cycles ("kernel on
    /// (x,y) still running after N cycles"); 0 waits for it forever. `None`
    /// takes the backend's default, set when the device opens:
    /// [`DEFAULT_KERNEL_TIMEOUT_CYCLES`] on silicon,
    /// [`DEFAULT_SIM_KERNEL_TIMEOUT_CYCLES`] on a simulator.
    pub kernel_timeout_cycles: Option<u64>,
    /// Where waits report how far they have got, at each progress check
    /// (`None`: nowhere). The CLI prints a line on stderr now and then.
    pub wait_progress: Option<crate::wait_progress::WaitProgressSink>,
    /// Where the driver says what it chose that costs something, as it
    /// chooses (`None`: nowhere). The CLI prints a `note:` line on stderr.
    pub notes: Option<crate::notes::NoteSink>,
    /// Where the firmware ELFs are: one directory per chip under it
    /// (`<firmware_dir>/<arch short name>/`, as `cargo xtask firmware`
    /// builds them: [`DeviceConfig::chip_firmware_dir`]).
    pub firmware_dir: PathBuf,
    /// Kernel image (in the chip's firmware directory) that `CommandQueue::launch` runs;
    /// every worker runs the resident `worker` firmware.
    pub worker_kernel: String,
    /// Known-bug variant of the prefetcher and dispatcher (a folder under
    /// `<chip firmware dir>/variants/`), or `None` for the normal firmware.
    pub firmware_variant: Option<String>,
    /// Slow dispatch: no CQ firmware; the host writes buffers, launch
    /// messages and GO signals through the BAR and polls completion.
    pub slow_dispatch: bool,
    /// A known host-side bug to re-create (`None`: the correct driver).
    pub host_bug: Option<HostBug>,
    /// Kernel binaries and unique-arg blocks of at least this many bytes
    /// are staged in sysmem once and sent by reference (`crate::staging`);
    /// 0 copies everything into the issue queue.
    pub stage_min_bytes: u32,
    /// While it waits, the host reads completion records only every this
    /// many polls (0 and 1: every poll), and at least at every progress
    /// check of the wait, as a host thread busy elsewhere does: the completion queue fills, and the dispatcher must wait for
    /// room rather than overwrite records not yet read. A race amplifier
    /// (`race --faults lazy-drain=N`); direct drains (`event_query`,
    /// `event_cycle`) are not delayed.
    pub drain_every_polls: u32,
    /// How the host's own accesses interleave with device time on the
    /// embedded simulator (`crate::host_clock`): extra seeded jitter and
    /// PCT points. Off by default (each access still costs its modelled
    /// host time); other backends refuse it.
    pub host_schedule: HostSchedule,
    /// A host mutant (`crate::queue::mutant::MUTANTS`) this device's driver
    /// runs with, chosen at run time (tests; `None`: the correct driver).
    #[cfg(feature = "mutants")]
    pub host_mutant: Option<&'static str>,
}

/// Largest [`HostSchedule::jitter_cycles`]: 10 us at 1 GHz, longer than
/// every device-side latency the protocol's windows are made of (a device
/// read of host memory: 750-4,000 cycles in the race workloads; a write to
/// it: 260 and up). Longer host stalls are what PCT points are for; jitter
/// beyond this only costs simulation time (the device runs idle).
pub const MAX_HOST_JITTER_CYCLES: u64 = 10_000;
/// Most [`HostPct::points`].
pub const MAX_HOST_PCT_POINTS: u32 = 64;
/// Most [`HostPct::steps`].
pub const MAX_HOST_PCT_STEPS: u64 = 1_000_000_000;
/// Device cycles the device runs ahead at a host PCT point: 50 us, long
/// enough for every PCIe round trip and for a dispatcher to fill a
/// completion queue, while the host holds still.
pub const HOST_PCT_RUN_CYCLES: u64 = 50_000;

/// The host's part of the seeded schedule: at each host access to
/// device-visible state (BAR reads and writes, sysmem reads and claims),
/// the embedded simulator's device first runs for the modelled host time
/// since the last access, plus what this says. Its random numbers come from
/// streams of their own, forked from the simulator's seed, so turning it on
/// does not reshuffle the device's other streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostSchedule {
    /// A seeded `0..=jitter_cycles` more at every access (0: none).
    pub jitter_cycles: u64,
    /// PCT for the host: chosen accesses where the device runs far ahead.
    pub pct: Option<HostPct>,
}

/// PCT host points: `points` distinct accesses drawn uniformly from the
/// first `steps` host accesses of the run; before each the device runs
/// [`HOST_PCT_RUN_CYCLES`] (the host is the lowest-priority thread there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPct {
    pub points: u32,
    pub steps: u64,
}

impl HostSchedule {
    /// Whether it asks for anything beyond the modelled costs.
    pub fn is_active(&self) -> bool {
        self.jitter_cycles > 0 || self.pct.is_some()
    }

    /// Checks its bounds.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(DriverError::Invalid(m));
        if self.jitter_cycles > MAX_HOST_JITTER_CYCLES {
            return bad(format!("host jitter of {} cycles (0..={MAX_HOST_JITTER_CYCLES})", self.jitter_cycles));
        }
        if let Some(p) = self.pct {
            if p.points == 0 || p.points > MAX_HOST_PCT_POINTS || p.steps == 0 || p.steps > MAX_HOST_PCT_STEPS {
                return bad(format!(
                    "host PCT of {} points in {} steps (points 1..={MAX_HOST_PCT_POINTS}, steps 1..={MAX_HOST_PCT_STEPS})",
                    p.points, p.steps
                ));
            }
            if p.points as u64 > p.steps {
                return bad(format!("host PCT: {} points cannot be distinct in {} steps", p.points, p.steps));
            }
        }
        Ok(())
    }
}

/// Known host-side bug classes, re-created on purpose so the campaign tools
/// are measured on bugs with a known answer (as the firmware variants are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostBug {
    /// While waiting for a fetch slot or issue space the host does not drain
    /// completions. Once the completion queue is full the dispatcher blocks,
    /// the prefetcher stops consuming, and the host waits for a slot that
    /// never frees: a deadlock at a depth fixed by the queue sizes (field
    /// notes: 301 batched runs pass, 302 fail).
    NoDrainWhileReserving,
    /// The host overwrites a staged blob (`DeviceConfig::stage_min_bytes`)
    /// without waiting for the prefetcher to take the chunks that read it:
    /// a later enqueue's binary or args land in sysmem while an earlier
    /// chunk is still to be read from there, and that chunk relays the new
    /// bytes (a kernel crashes, or stores what another program's args say).
    StagedReuseEarly,
    /// The completion read pointer the host writes back wraps without
    /// flipping its toggle (the host keeps the toggle of its first lap).
    /// From the host's second lap on, the dispatcher reads the ring as
    /// fuller than it is and waits for room the host has freed: a deadlock
    /// once the ring is more than half full behind the published pointer.
    CompletionRdWithoutToggle,
    /// The device's issue-queue read pointer and fetch count are loaded once
    /// per wait for space, as a compiler may hoist a load of memory not
    /// marked volatile out of the wait loop. Once the issue queue or the
    /// fetch queue fills, the host spins on the stale value while the
    /// prefetcher, having run everything, waits for the next entry: a
    /// deadlock whose dump shows space the host did not see.
    HoistedPointerLoad,
}

impl HostBug {
    pub const ALL: [(&'static str, HostBug); 4] = [
        ("no-drain", HostBug::NoDrainWhileReserving),
        ("staged-reuse-early", HostBug::StagedReuseEarly),
        ("completion-rd-no-toggle", HostBug::CompletionRdWithoutToggle),
        ("hoisted-pointer-load", HostBug::HoistedPointerLoad),
    ];

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|&(_, b)| b)
    }

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|&&(_, b)| b == self).map(|&(n, _)| n).expect("listed")
    }
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            board: None,
            harvesting: None,
            num_cqs: DEFAULT_CQS,
            issue_size: DEFAULT_ISSUE_QUEUE_SIZE,
            completion_size: DEFAULT_COMPLETION_QUEUE_SIZE,
            fetch_entries: 128,
            ring_page_size: DEFAULT_RING_PAGE_SIZE,
            ring_pages: DEFAULT_RING_PAGES,
            stall_timeout_cycles: 200_000_000,
            kernel_timeout_cycles: None,
            wait_progress: None,
            notes: None,
            firmware_dir: default_firmware_dir(),
            worker_kernel: "noop".into(),
            firmware_variant: None,
            slow_dispatch: false,
            host_bug: None,
            stage_min_bytes: DEFAULT_STAGE_MIN_BYTES,
            drain_every_polls: 1,
            host_schedule: HostSchedule::default(),
            #[cfg(feature = "mutants")]
            host_mutant: None,
        }
    }
}

impl DeviceConfig {
    /// The kernel timeout in force: [`DeviceConfig::kernel_timeout_cycles`]
    /// as the device set it when it opened (the silicon default before).
    pub fn kernel_timeout(&self) -> u64 {
        self.kernel_timeout_cycles.unwrap_or(DEFAULT_KERNEL_TIMEOUT_CYCLES)
    }

    /// The board a simulator made for this configuration simulates.
    pub fn sim_board(&self) -> Board {
        self.board.unwrap_or(Board::WormholeN150)
    }

    /// The harvesting a simulator made for this configuration has.
    pub fn sim_harvesting(&self) -> Harvesting {
        self.harvesting.clone().unwrap_or_else(|| self.sim_board().default_harvesting())
    }

    /// Chip `arch`'s firmware: `<firmware_dir>/<arch short name>`.
    pub fn chip_firmware_dir(&self, arch: Arch) -> PathBuf {
        chip_dir(&self.firmware_dir, arch)
    }

    /// Where chip `arch`'s CQ firmware (`prefetch`, `dispatch`) comes from:
    /// the chip's firmware directory or its known-bug variant.
    pub fn cq_firmware_dir(&self, arch: Arch) -> PathBuf {
        match &self.firmware_variant {
            Some(v) => self.chip_firmware_dir(arch).join("variants").join(v),
            None => self.chip_firmware_dir(arch),
        }
    }

    /// The resident worker firmware of core `p` of an `arch` chip: the
    /// variant's own when its directory holds one (a mutant of `cargo xtask
    /// mutants` may change it), else the chip's.
    pub fn worker_elf(&self, arch: Arch, p: Processor) -> PathBuf {
        let name = FirmwareId::worker(p).name();
        let own = self.cq_firmware_dir(arch).join(name);
        if self.firmware_variant.is_some() && own.is_file() {
            own
        } else {
            self.chip_firmware_dir(arch).join(name)
        }
    }

    /// Every firmware image a boot of an `arch` chip loads, read and
    /// checked (`FirmwareImage::parse`): what a command checks before any
    /// work, and what a boot writes.
    pub fn boot_images(&self, arch: Arch) -> Result<BootImages> {
        // A missing root is named with where it came from, before the
        // first image's "cannot read" (helper-65).
        let cq_dir = self.cq_firmware_dir(arch);
        let chip_dir = self.chip_firmware_dir(arch);
        if !chip_dir.is_dir() {
            return Err(DriverError::BadElf {
                path: cq_dir.join(FirmwareId::Prefetch.name()).display().to_string(),
                reason: crate::error::ImageError::NoFirmwareDir { dir: chip_dir.display().to_string() },
            });
        }
        Ok(BootImages {
            prefetch: FirmwareImage::load(&cq_dir.join(FirmwareId::Prefetch.name()), FirmwareId::Prefetch, arch)?,
            dispatch: FirmwareImage::load(&cq_dir.join(FirmwareId::Dispatch.name()), FirmwareId::Dispatch, arch)?,
            workers: Processor::ALL
                .iter()
                .map(|&p| FirmwareImage::load(&self.worker_elf(arch, p), FirmwareId::worker(p), arch))
                .collect::<Result<Vec<_>>>()?,
        })
    }

    /// Every image a boot of an `arch` chip loads ([`DeviceConfig::boot_images`])
    /// and its default worker kernel, read and checked: what a campaign
    /// checks before its first run, so a bad file is refused once rather
    /// than failing every run.
    pub fn check_firmware(&self, arch: Arch) -> Result<()> {
        self.boot_images(arch)?;
        self.check_kernels(arch, [self.worker_kernel.as_str()])
    }

    /// The kernels `names` of an `arch` chip's firmware directory, read and
    /// checked (`KernelImage::parse`: another ABI's or chip's is refused by
    /// its id): what a command checks before its first run for the kernels
    /// its runs load (a cut one failed every run, or a late point).
    pub fn check_kernels<'a>(&self, arch: Arch, names: impl IntoIterator<Item = &'a str>) -> Result<()> {
        for name in names {
            crate::KernelImage::load(&self.chip_firmware_dir(arch).join(name), arch)?;
        }
        Ok(())
    }

    /// Queue `q`'s sysmem regions.
    pub fn queue_layout(&self, q: u8) -> CqSysmemLayout {
        CqSysmemLayout::for_cq(q, self.issue_size, self.completion_size)
    }

    /// The sysmem bytes the queues take: every queue's regions, from 0.
    pub fn sysmem_needed(&self) -> u64 {
        self.queue_layout(self.num_cqs).base
    }

    /// Fails unless `have` bytes of `device`'s sysmem hold the queues.
    pub fn check_sysmem(&self, have: u64, device: &str) -> Result<()> {
        let need = self.sysmem_needed();
        if need > have {
            return Err(DriverError::Invalid(format!(
                "the command queues need {need} bytes of sysmem, {device} has {have}"
            )));
        }
        Ok(())
    }

    /// Checks every size and count against what the ABI allows.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(DriverError::Invalid(m));
        if self.num_cqs == 0 || self.num_cqs > noc::MAX_CQS {
            return bad(format!("{} command queues (1..={})", self.num_cqs, noc::MAX_CQS));
        }
        let align = cqlab_abi::PCIE_ALIGNMENT as u32;
        if !self.queue_layout(0).is_valid() || self.issue_size < 4 * align || self.completion_size < 2 * align {
            return bad(format!(
                "issue queue {} and completion queue {} bytes: both multiples of {align}, at least {} and {}",
                self.issue_size,
                self.completion_size,
                4 * align,
                2 * align
            ));
        }
        if self.fetch_entries == 0 || self.fetch_entries > cqlab_abi::fetch_queue::MAX_ENTRIES {
            return bad(format!(
                "{} fetch-queue entries (1..={})",
                self.fetch_entries,
                cqlab_abi::fetch_queue::MAX_ENTRIES
            ));
        }
        let ring = self.ring_page_size as u64 * self.ring_pages as u64;
        if !self.ring_page_size.is_power_of_two()
            || !self.ring_pages.is_power_of_two()
            || self.ring_page_size < 16
            || ring > cqlab_abi::memory_map::DISPATCH_RING.size as u64
        {
            return bad(format!(
                "dispatcher ring of {} pages of {} bytes (each a power of two, pages of at least 16 bytes, at most {} \
                 bytes in all)",
                self.ring_pages,
                self.ring_page_size,
                cqlab_abi::memory_map::DISPATCH_RING.size
            ));
        }
        if let Some(board) = self.board {
            self.check_harvesting_on(board)?;
        }
        self.host_schedule.validate()
    }

    /// Refuses a `harvesting` that `board` (the device's, where the
    /// configuration names none) cannot have: a device compared with it
    /// would be told to restart with it.
    pub fn check_harvesting_on(&self, board: Board) -> Result<()> {
        match &self.harvesting {
            Some(h) => cqlab_abi::soc::ChipLayout::new(board, h.clone())
                .map(drop)
                .map_err(|e| DriverError::Invalid(format!("--harvest {h}: {e}"))),
            None => Ok(()),
        }
    }
}

/// Chip `arch`'s directory under a firmware root.
pub fn chip_dir(root: &Path, arch: Arch) -> PathBuf {
    root.join(arch.short_name())
}

/// The firmware root: `$CQLAB_FIRMWARE_DIR`, else the workspace's
/// `target/riscv32im-unknown-none-elf/firmware`. Either holds one
/// directory per chip (`wormhole/`, `blackhole/`), each with the images
/// and `variants/<bug>/`.
pub fn default_firmware_dir() -> PathBuf {
    // Set but empty is unset: the empty path read images from the working
    // directory (helper-65).
    if let Some(dir) = std::env::var_os("CQLAB_FIRMWARE_DIR").filter(|d| !d.is_empty()) {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("riscv32im-unknown-none-elf/firmware")
}
