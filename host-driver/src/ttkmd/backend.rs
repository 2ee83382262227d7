//! The tt-kmd [`Backend`]: command queues on a device reached through tt-kmd, on a card
//! (`/dev/tenstorrent/N`) or against the simulator (`ttkmd-sim:PATH`), with the same code.
//!
//! - Sysmem is host memory from the kernel side (huge pages when available), pinned with
//!   PIN_PAGES for NOC DMA; the device reaches it at the NOC address PIN_PAGES returns.
//! - The chip is the one the PCI device id names; the board and harvesting come from ARC's
//!   telemetry (`crate::arc`), or from the simulator where tt-kmd runs against it.
//! - BAR access goes through 2 MiB TLB windows (ALLOCATE_TLB, CONFIGURE_TLB) managed by the
//!   driver's window manager ([`crate::tlb::Windows`]: a few kept configured, the least
//!   recently used reconfigured first), multicast ones where the kernel side offers them.
//! - Words (fetch-queue doorbells, registers, mailbox words) are volatile 32-bit stores through
//!   the uncached (UC) view; bulk data goes through the write-combining (WC) view, and a fence
//!   orders pending WC stores before the next UC store or read (a doorbell must not overtake
//!   the data it announces).
//! - Open resets no chip: it holds every Tensix core in soft reset through the windows (as a
//!   host does when it takes a chip over, and the simulator daemon does for a new client)
//!   before any host memory is pinned, so nothing a previous owner left running reaches the
//!   new sysmem, and `boot` starts from cores that are held. tt-kmd's RESET_DEVICE is no way
//!   to do that: USER_RESET only marks the device for a reset a BMC performs, so POST_RESET
//!   fails, and every reset invalidates every other process's fd and mappings
//!   (`ioctl_reset_device`, `chardev.c` at ttkmd-2.10.0). A whole chip reset is
//!   [`TtKmdDevice::reset_sequence`]'s job, asked for explicitly.

use std::time::{Duration, Instant};

use cqlab_abi::arch::tensix::{SOFT_RESET_0, SOFT_RESET_ALL};
use cqlab_abi::arch::tlb::TlbConfig;
use cqlab_abi::arch::{Arch, ArchParams};
use cqlab_abi::noc::NocAddr;
use cqlab_abi::soc::{Board, ChipLayout, Harvesting, TileKind};
use nix::errno::Errno;

use super::device::{PinFlags, PinnedMemory, TlbWindow, TtKmdDevice};
use super::error::TtKmdError;
use super::ioctl::{Feature, NocTlbConfig};
use super::window::Caching;
use crate::backend::Backend;
use crate::config::DeviceConfig;
use crate::error::{DriverError, Result};
use crate::tlb::{TlbBar, Windows, WINDOW_CACHE, WINDOW_LOG2, WINDOW_SIZE};

/// How long `poll` pauses (the device runs on its own).
const POLL_PAUSE: Duration = Duration::from_micros(20);
/// A simulated clock that stands still this long, its simulator running,
/// means the simulator hung.
const CLOCK_STALL: Duration = Duration::from_secs(5);
/// How long a stopped simulator (SIGSTOP, a debugger) is waited for, as a
/// `sim:PATH` client waits for its daemon's reply.
const PAUSED_LIMIT: Duration = Duration::from_secs(60);
/// A clock still this long is looked into (a look reads `/proc`).
const CLOCK_LOOK: Duration = Duration::from_millis(100);

fn be(e: super::TtKmdError) -> DriverError {
    DriverError::Backend(e.to_string())
}

/// The chip a PCI device id names (`arch::bar::BarLayout::pci_device_id`).
pub fn arch_of(device_id: u16) -> Option<Arch> {
    Arch::ALL.into_iter().find(|a| a.params().bar.pci_device_id == device_id)
}

/// The TLB windows tt-kmd hands out (ALLOCATE_TLB, CONFIGURE_TLB), 2 MiB each, all allocated
/// at open ([`KmdWindows::allocate`]).
struct KmdWindows {
    dev: TtKmdDevice,
    tlbs: Vec<TlbWindow>,
    /// NOC address each window shows from (for the register read-back).
    bases: Vec<u64>,
    /// WC stores issued since the last fence.
    wc_pending: bool,
    /// Whether a soft-reset write returns before the device has acted on it (the caller
    /// settles once after many: [`Bar::hold_cores`]).
    defer_settle: bool,
}

impl KmdWindows {
    /// `dev`'s windows: [`WINDOW_CACHE`] of them allocated now, or as many as are free if
    /// fewer (the window manager reuses fewer as well, reconfiguring more often). tt-kmd's
    /// 2 MiB windows are one pool per card shared by every process with it open, 10 on a
    /// Wormhole (`tenstorrent_device_allocate_tlb`, `tlb.c`; `wormhole.c` at ttkmd-2.10.0), so
    /// a run that allocated them as it went could fail mid-run with ENOMEM once other
    /// processes held the rest; now a card with none free is refused here, saying who has it
    /// open.
    fn allocate(dev: TtKmdDevice, params: &ArchParams) -> Result<Self> {
        let mut tlbs = Vec::with_capacity(WINDOW_CACHE);
        while tlbs.len() < WINDOW_CACHE {
            match dev.allocate_tlb(WINDOW_SIZE) {
                Ok(tlb) => tlbs.push(tlb),
                Err(TtKmdError::Ioctl { errno: Errno::ENOMEM, .. }) if !tlbs.is_empty() => break,
                Err(TtKmdError::Ioctl { errno: Errno::ENOMEM, .. }) => {
                    return Err(DriverError::Backend(format!(
                    "{}: no 2 MiB TLB window is free (ALLOCATE_TLB answered ENOMEM). tt-kmd hands out {} per {} card, \
                         shared by every process with it open, and other processes hold them all: the card is open \
                         in {}; this process is pid {}. A process's windows are freed when it closes the card.",
                    dev.path().display(),
                    params.bar.driver_windows(WINDOW_LOG2),
                    params.arch.short_name(),
                    dev.kernel().holders(),
                    std::process::id()
                )))
                }
                Err(e) => return Err(be(e)),
            }
        }
        let bases = vec![0; tlbs.len()];
        Ok(Self { dev, tlbs, bases, wc_pending: false, defer_settle: false })
    }

    /// Returns once the device has acted on every register store so far ([`super::kernel::Kernel::settle`]).
    fn settle(&self) -> Result<()> {
        self.dev.kernel().settle().map_err(|e| DriverError::Backend(format!("{}: {e}", self.dev.path().display())))
    }

    /// Orders every WC store before what follows (the fence write-combining needs).
    fn fence(&mut self) {
        if self.wc_pending {
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            self.wc_pending = false;
        }
    }

    /// Writes fewer than 4 bytes at `off` inside one word of window `w`, through UC.
    fn patch(&mut self, w: usize, off: usize, bytes: &[u8]) -> Result<()> {
        let word = off & !3;
        let uc = self.tlbs[w].uc();
        let mut b = uc.read_u32(word).map_err(be)?.to_le_bytes();
        b[off - word..off - word + bytes.len()].copy_from_slice(bytes);
        uc.write_u32(word, u32::from_le_bytes(b)).map_err(be)
    }
}

impl TlbBar for KmdWindows {
    fn windows(&self) -> usize {
        self.tlbs.len()
    }

    fn configure(&mut self, w: usize, cfg: &TlbConfig) -> Result<()> {
        // Stores still combining in the WC buffer belong to the old target.
        self.fence();
        let kmd = NocTlbConfig {
            addr: cfg.local_offset << WINDOW_LOG2,
            x_end: cfg.x_end as u16,
            y_end: cfg.y_end as u16,
            x_start: cfg.x_start as u16,
            y_start: cfg.y_start as u16,
            noc: cfg.noc_sel.index() as u8,
            mcast: cfg.mcast as u8,
            ordering: cfg.ordering.bits() as u8,
            linked: cfg.linked as u8,
            static_vc: cfg.static_vc as u8,
            ..NocTlbConfig::default()
        };
        self.dev.configure_tlb(&self.tlbs[w], &kmd).map_err(be)?;
        self.bases[w] = kmd.addr;
        Ok(())
    }

    fn write(&mut self, w: usize, off: u64, piece: &[u8]) -> Result<()> {
        let off = off as usize;
        if off % 4 == 0 && piece.len() == 4 {
            // A word: doorbell, register, mailbox. Uncached, after any pending WC data.
            self.fence();
            let v = u32::from_le_bytes(piece.try_into().expect("4 bytes"));
            let uc = self.tlbs[w].uc();
            uc.word_wo(off).map_err(be)?.write(v);
            if self.bases[w] + off as u64 == SOFT_RESET_0 as u64 {
                // A soft-reset write takes effect before we go on (nothing the host writes
                // next may reach a core that is still running): the read-back lands it on
                // a PCIe link; the simulator applies it at its next slice.
                uc.read_u32(off).map_err(be)?;
                if !self.defer_settle {
                    self.settle()?;
                }
            }
            return Ok(());
        }
        // Bulk: aligned middle through WC; ragged edges read-modify-write through UC.
        let head = ((4 - off % 4) % 4).min(piece.len());
        let body = (piece.len() - head) / 4 * 4;
        if head > 0 {
            self.fence();
            self.patch(w, off, &piece[..head])?;
        }
        if body > 0 {
            self.tlbs[w].wc().write_block(off + head, &piece[head..head + body]).map_err(be)?;
            self.wc_pending = true;
        }
        if head + body < piece.len() {
            self.fence();
            self.patch(w, off + head + body, &piece[head + body..])?;
        }
        Ok(())
    }

    fn read(&mut self, w: usize, off: u64, out: &mut [u8]) -> Result<()> {
        // A read must see what was written before it.
        self.fence();
        let off = off as usize;
        let uc = self.tlbs[w].uc();
        let (first, last) = (off & !3, (off + out.len()).next_multiple_of(4));
        let mut words = vec![0u8; last - first];
        uc.read_block(first, &mut words).map_err(be)?;
        out.copy_from_slice(&words[off - first..off - first + out.len()]);
        Ok(())
    }

    fn multicast(&self) -> bool {
        self.dev.kernel().multicast_tlbs()
    }
}

/// The chip's NOC address space (through the windows) and BAR0: all that open needs before
/// it pins host memory.
struct Bar {
    kmd: KmdWindows,
    windows: Windows,
    params: &'static ArchParams,
}

impl Bar {
    fn name(&self) -> String {
        format!("tt-kmd {} ({})", self.kmd.dev.path().display(), self.kmd.dev.version())
    }

    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.windows.write(&mut self.kmd, addr, data)
    }

    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        self.windows.read(&mut self.kmd, addr, buf)
    }

    /// Through BAR0's uncached mapping (QUERY_MAPPINGS), where tt-kmd maps it, mapped at the
    /// first read (ARC's registers on a Wormhole; no other BAR mapping is used).
    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        let name = self.name();
        let bar = self.kmd.dev.map_bar(0, Caching::Uc).map_err(be)?.ok_or_else(|| {
            DriverError::Backend(format!("{name}: BAR0 is not mapped (QUERY_MAPPINGS offered no BAR0 resource)"))
        })?;
        bar.read_block(offset as usize, buf).map_err(be)
    }

    /// The board the simulator announces (tt-kmd against the simulator maps no ARC), else
    /// what ARC's telemetry says.
    fn identify(&mut self) -> Result<(Board, Harvesting)> {
        match self.kmd.dev.kernel().board() {
            Some(known) => Ok(known),
            None => crate::arc::identify(self),
        }
    }

    /// Holds every Tensix core of `layout` in soft reset (`SOFT_RESET_0`, every RISC-V), each
    /// store read back, then waits once for the device to have acted on all of them.
    fn hold_cores(&mut self, layout: &ChipLayout) -> Result<()> {
        let tiles: Vec<_> =
            layout.tiles().iter().filter(|t| t.kind == TileKind::Tensix).map(|t| t.translated).collect();
        self.kmd.defer_settle = true;
        let held = tiles
            .iter()
            .try_for_each(|&t| self.write(NocAddr::unicast(t, SOFT_RESET_0 as u64), &SOFT_RESET_ALL.to_le_bytes()));
        self.kmd.defer_settle = false;
        held?;
        self.kmd.settle()
    }
}

impl crate::arc::ArcBus for Bar {
    fn name(&self) -> String {
        Bar::name(self)
    }

    fn params(&self) -> &'static ArchParams {
        self.params
    }

    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        Bar::read(self, addr, buf)
    }

    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        Bar::bar0_read(self, offset, buf)
    }
}

/// Command queues over tt-kmd.
pub struct TtKmdBackend {
    bar: Bar,
    /// The board and harvesting, found at open.
    identity: (Board, Harvesting),
    sysmem: PinnedMemory,
    /// The range the host last claimed to fill ([`Backend::sysmem_claim`]), held here and
    /// copied to pinned memory before the backend does anything else: the host never holds a
    /// slice of memory the device shares.
    claimed: Option<usize>,
    /// The claimed range's bytes (kept between claims, to reuse its allocation).
    staging: Vec<u8>,
    opened: Instant,
    /// Last simulated clock seen and when it last moved.
    clock: (u64, Instant),
}

/// The host memory the backend pins for `cfg`'s queues: what they need, in
/// whole TLB windows (what `cqlab sim ttkmd --sysmem-mib` must hold).
pub fn pinned_sysmem_len(cfg: &DeviceConfig) -> usize {
    (cfg.sysmem_needed() as usize).next_multiple_of(WINDOW_SIZE as usize)
}

impl TtKmdBackend {
    /// Takes `dev` over for `cfg`'s command queues: the chip identified, its Tensix cores held
    /// in soft reset, then sysmem pinned. The chip is the one its PCI device id names. No
    /// RESET_DEVICE: other processes' fds and mappings of the device stay valid.
    pub fn new(dev: TtKmdDevice, cfg: &DeviceConfig) -> Result<Self> {
        let id = dev.info().device_id;
        let params = arch_of(id).map(Arch::params).ok_or_else(|| {
            DriverError::Backend(format!(
                "{}: PCI device id {id:#06x} is no chip cqlab drives (Wormhole {:#06x}, Blackhole {:#06x})",
                dev.path().display(),
                Arch::Wormhole.params().bar.pci_device_id,
                Arch::Blackhole.params().bar.pci_device_id
            ))
        })?;
        dev.require(Feature::TlbWindows, "command queues (TLB windows)").map_err(be)?;
        let kmd = KmdWindows::allocate(dev, params)?;
        let mut bar = Bar { kmd, windows: Windows::new(WINDOW_CACHE), params };
        let identity = bar.identify()?;
        // Before any pinning: a core a previous owner left running may still write to host
        // memory, at NOC addresses the pinning below may hand out again.
        bar.hold_cores(&ChipLayout::new(identity.0, identity.1.clone())?)?;
        let dev = &bar.kmd.dev;
        let len = pinned_sysmem_len(cfg);
        let sysmem = dev.alloc_pinned(len, PinFlags::NOC_DMA).map_err(be)?;
        if sysmem.noc_address().is_none() {
            return Err(DriverError::Backend(format!("{}: PIN_PAGES returned no NOC address", dev.path().display())));
        }
        Ok(Self {
            bar,
            identity,
            sysmem,
            claimed: None,
            staging: Vec::new(),
            opened: Instant::now(),
            clock: (0, Instant::now()),
        })
    }

    /// The device underneath.
    pub fn device(&self) -> &TtKmdDevice {
        &self.bar.kmd.dev
    }

    /// Fails once the simulated clock has stood still too long: at once
    /// for a simulator that ended, after [`PAUSED_LIMIT`] for a stopped one
    /// (it may be resumed), after [`CLOCK_STALL`] for one that runs.
    fn check_clock(&mut self) -> Result<()> {
        let Some(now) = self.kernel_clock() else { return Ok(()) };
        if now != self.clock.0 {
            self.clock = (now, Instant::now());
            return Ok(());
        }
        let still = self.clock.1.elapsed();
        if still < CLOCK_LOOK {
            return Ok(());
        }
        use super::kernel::ClockStop;
        let (limit, why) = match self.bar.kmd.dev.kernel().clock_stop() {
            Some(ClockStop::Ended(why)) => (Duration::ZERO, why),
            Some(ClockStop::Paused(why)) => (PAUSED_LIMIT, why),
            None => (CLOCK_STALL, "the simulator runs but its clock does not".into()),
        };
        if still <= limit {
            return Ok(());
        }
        Err(DriverError::Backend(format!(
            "{}: the simulated clock stood still at cycle {now} for {:.1} s: {why}",
            self.bar.kmd.dev.path().display(),
            still.as_secs_f64()
        )))
    }

    fn kernel_clock(&self) -> Option<u64> {
        self.bar.kmd.dev.kernel().device_clock()
    }

    /// Copies the last claimed range to pinned memory: before any other access, so the
    /// doorbell that publishes it, and any read of it, come after.
    fn land_claim(&mut self) -> Result<()> {
        match self.claimed.take() {
            Some(offset) => self.sysmem.write(offset, &self.staging).map_err(be),
            None => Ok(()),
        }
    }
}

impl Drop for TtKmdBackend {
    fn drop(&mut self) {
        let _ = self.land_claim();
    }
}

impl Backend for TtKmdBackend {
    fn name(&self) -> String {
        self.bar.name()
    }

    fn params(&self) -> &'static ArchParams {
        self.bar.params
    }

    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.land_claim()?;
        self.bar.write(addr, data)
    }

    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        self.land_claim()?;
        self.bar.read(addr, buf)
    }

    fn multicast_windows(&self) -> bool {
        self.bar.kmd.multicast()
    }

    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        self.land_claim()?;
        self.bar.bar0_read(offset, buf)
    }

    /// What open found (the simulator's announcement, or ARC's telemetry).
    fn identify(&mut self) -> Result<(Board, Harvesting)> {
        Ok(self.identity.clone())
    }

    fn sysmem_len(&self) -> usize {
        self.sysmem.len()
    }

    /// The pinned buffer's NOC address from PIN_PAGES, as an offset in the chip's host-memory
    /// range (the firmware adds the PCIe tile and the range's base, `NocMap::pcie`).
    fn sysmem_noc_base(&self) -> u64 {
        let noc = self.sysmem.noc_address().expect("checked at open");
        noc.checked_sub(self.bar.params.bar.host_mem_base).unwrap_or(noc)
    }

    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        self.land_claim()?;
        self.sysmem.read(offset, buf).map_err(be)
    }

    /// A copy of the range, landed in pinned memory before the backend's next access (what
    /// the caller leaves unwritten lands unchanged).
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]> {
        self.land_claim()?;
        self.staging.resize(len, 0);
        self.sysmem.read(offset, &mut self.staging).map_err(be)?;
        self.claimed = Some(offset);
        Ok(&mut self.staging)
    }

    /// One whole-word load: the device may be writing this pointer right now.
    fn sysmem_read_u32(&mut self, offset: usize) -> Result<u32> {
        self.land_claim()?;
        self.sysmem.read_u32(offset).map_err(be)
    }

    fn poll(&mut self) -> Result<u64> {
        self.land_claim()?;
        self.bar.kmd.fence();
        std::thread::sleep(POLL_PAUSE);
        self.check_clock()?;
        Ok(self.now())
    }

    /// The simulator's clock, or on a card wall time since open converted to chip cycles.
    fn now(&self) -> u64 {
        self.kernel_clock().unwrap_or_else(|| {
            (self.opened.elapsed().as_nanos() * self.bar.params.clock_hz as u128 / 1_000_000_000) as u64
        })
    }
}

/// Opens `/dev/tenstorrent/N` as a command-queue backend.
pub fn open_device(path: &str, cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    let dev = TtKmdDevice::open(path).map_err(be)?;
    Ok(Box::new(TtKmdBackend::new(dev, cfg)?))
}

/// Opens the simulated device at `path` (served by `cqlab sim ttkmd --dev PATH`) through the
/// same tt-kmd backend, its kernel calls answered by [`super::sim_kernel::SimKernel`].
#[cfg(feature = "sim")]
pub fn open_simulated(path: &str, cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    let flags = super::kernel::OpenFlags::default();
    let kernel = super::sim_kernel::SimKernel::open_with_flags(std::path::Path::new(path), flags).map_err(be)?;
    let s = kernel.shape();
    cfg.check_harvesting_on(cfg.board.unwrap_or(s.board))?;
    let board_differs = cfg.board.is_some_and(|b| b != s.board);
    if board_differs || cfg.harvesting.as_ref().is_some_and(|h| *h != s.harvesting) {
        let want = cfg.board.unwrap_or(s.board);
        let want_h = cfg.harvesting.clone().unwrap_or_else(|| want.default_harvesting());
        return Err(DriverError::Invalid(format!(
            "the simulated device at {path} is a {} harvested {}; the device configuration asks for a {want} \
             harvested {want_h} (restart it with `cqlab sim ttkmd --chip {want} --harvest {want_h}`)",
            s.board, s.harvesting
        )));
    }
    let dev = TtKmdDevice::with_kernel(Box::new(kernel), flags).map_err(be)?;
    Ok(Box::new(TtKmdBackend::new(dev, cfg)?))
}

#[cfg(test)]
mod tests {
    use super::super::kernel::OpenFlags;
    use super::super::scripted_kernel::{Script, Scripted};
    use super::*;

    fn open(script: Script) -> Result<TtKmdBackend> {
        let dev = TtKmdDevice::with_kernel(Box::new(Scripted::new(script)), OpenFlags::default()).map_err(be)?;
        TtKmdBackend::new(dev, &DeviceConfig::default())
    }

    /// Of the BARs tt-kmd offers (0, 2 and 4, each uncached and write-combining; a Blackhole's
    /// BAR4 is 32 GiB) the backend maps only BAR0 uncached, and only when it first reads it
    /// (ARC's registers on a Wormhole): open maps TLB windows alone.
    #[test]
    fn only_bar0_uncached_is_mapped_and_only_when_read() {
        use super::super::ioctl as sys;
        let gib = 1u64 << 30;
        let mappings = vec![
            (sys::MAPPING_RESOURCE0_UC, 512 << 20),
            (sys::MAPPING_RESOURCE0_WC, 512 << 20),
            (sys::MAPPING_RESOURCE1_UC, 1 << 20),
            (sys::MAPPING_RESOURCE1_WC, 1 << 20),
            (sys::MAPPING_RESOURCE2_UC, 32 * gib),
            (sys::MAPPING_RESOURCE2_WC, 32 * gib),
        ];
        let kernel = Scripted::new(Script { mappings, ..Default::default() });
        let log = kernel.log();
        let dev = TtKmdDevice::with_kernel(Box::new(kernel), OpenFlags::default()).unwrap();
        let mut backend = TtKmdBackend::new(dev, &DeviceConfig::default()).unwrap();
        // The scripted kernel offers resource i at mmap offset (i + 1) << 40; TLB windows lie below.
        let bar_maps =
            || log.lock().unwrap().mmaps.iter().filter(|&&(off, _)| off >= 1 << 40).copied().collect::<Vec<_>>();
        assert_eq!(bar_maps(), [], "open maps no BAR");
        let mut word = [0u8; 4];
        backend.bar0_read(0x100, &mut word).unwrap();
        backend.bar0_read(0x200, &mut word).unwrap();
        assert_eq!(bar_maps(), [(1 << 40, 512 << 20)], "BAR0 UC, once");
    }

    /// Without an IOMMU translating, tt-kmd pins only physically contiguous memory and says
    /// EINVAL (`ioctl_pin_pages`, memory.c at ttkmd-2.10.0): the open says so and how to get
    /// such memory, instead of a bare EINVAL.
    #[test]
    fn a_pin_refused_without_an_iommu_says_to_use_1_gib_huge_pages() {
        use super::super::kernel::Iommu;
        use nix::errno::Errno;
        let script = |iommu| Script { pin_error: Some(Errno::EINVAL), iommu, ..Default::default() };
        for (iommu, why) in [(Iommu::Absent, "no IOMMU"), (Iommu::Passthrough, "passthrough (identity)")] {
            let err = open(script(iommu)).err().expect("refused").to_string();
            for part in [
                "normal pages",
                "it pins only physically contiguous memory",
                why,
                "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
                "hugepagesz=1G",
            ] {
                assert!(err.contains(part), "{part:?} in {err}");
            }
        }
        // With translation, EINVAL means something else: said as it came.
        let err = open(script(Iommu::Translated("DMA".into()))).err().expect("refused").to_string();
        assert!(err.contains("PIN_PAGES") && err.contains("EINVAL") && !err.contains("contiguous"), "{err}");
    }

    /// A 1.x driver (API 1, no semantic version; ttkmd-1.34 is one) gets no command queues and
    /// is told the release that has them, without contradicting itself.
    #[test]
    fn an_api_1_driver_is_told_command_queues_need_ttkmd_2_0() {
        let err = open(Script { api: 1, semver: None, ..Default::default() }).err().expect("refused").to_string();
        assert!(
            err.contains("needs tt-kmd 2.0.0 (ioctl API 2) or later; the driver is tt-kmd 1.x (ioctl API 1"),
            "{err}"
        );
    }
}
