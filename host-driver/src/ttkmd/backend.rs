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
//! - Every window is mapped uncached (UC) alone (`TtKmdDevice::allocate_tlb` says why not
//!   also write-combining); words and bulk data are volatile 32-bit stores through it.
//! - The I/O write barrier (`super::io_barrier`) runs before a word store, a read or a window's
//!   reconfiguration whenever stores are pending: bytes landed in pinned sysmem, or a run of
//!   words through a window. So a fetch-queue entry comes after the issue-ring bytes it names,
//!   and a write's last word after the rest of it and everything before (a launch message's
//!   tag after its kernel, args and message).
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
    /// Stores issued since the last I/O write barrier that a later store may publish: bytes
    /// landed in pinned sysmem, or runs of words through a window. (Word stores themselves
    /// leave nothing pending: uncached stores to the card reach it in program order.)
    unordered_stores: bool,
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
        Ok(Self { dev, tlbs, bases, unordered_stores: false, defer_settle: false })
    }

    /// Returns once the device has acted on every register store so far ([`super::kernel::Kernel::settle`]).
    fn settle(&self) -> Result<()> {
        self.dev.kernel().settle().map_err(|e| DriverError::Backend(format!("{}: {e}", self.dev.path().display())))
    }

    /// Orders every pending store before what follows ([`Self::unordered_stores`]).
    fn order_stores(&mut self) {
        if self.unordered_stores {
            super::io_barrier::io_write_barrier();
            self.unordered_stores = false;
        }
    }

    /// Stores the word `bytes` at `off` (4-aligned) of window `w`, after every pending store: a
    /// word may publish what came before it (a doorbell, a launch message's tag).
    fn store_word(&mut self, w: usize, off: usize, bytes: &[u8]) -> Result<()> {
        self.order_stores();
        let v = u32::from_le_bytes(bytes.try_into().expect("4 bytes"));
        let uc = self.tlbs[w].uc();
        uc.write_u32(off, v).map_err(be)?;
        if self.bases[w] + off as u64 == SOFT_RESET_0 as u64 {
            // A soft-reset write takes effect before we go on (nothing the host writes
            // next may reach a core that is still running): the read-back lands it on
            // a PCIe link; the simulator applies it at its next slice.
            uc.read_u32(off).map_err(be)?;
            if !self.defer_settle {
                self.settle()?;
            }
        }
        Ok(())
    }

    /// Writes fewer than 4 bytes at `off` inside one word of window `w`: the word read (after
    /// every pending store), patched and stored.
    fn patch(&mut self, w: usize, off: usize, bytes: &[u8]) -> Result<()> {
        self.order_stores();
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
        // Stores still on their way belong to the old target.
        self.order_stores();
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

    /// Ragged edges read-modify-write; the aligned words between as a run, but for the last,
    /// stored alone after the barrier: a write's last word lands after the rest of it (the slow
    /// dispatcher's launch message is one write whose last word, its tag, is the GO).
    fn write(&mut self, w: usize, off: u64, piece: &[u8]) -> Result<()> {
        let off = off as usize;
        let head = ((4 - off % 4) % 4).min(piece.len());
        let words_end = head + (piece.len() - head) / 4 * 4;
        if head > 0 {
            self.patch(w, off, &piece[..head])?;
        }
        if words_end - head > 4 {
            let run = &piece[head..words_end - 4];
            self.tlbs[w].uc().write_block(off + head, run).map_err(be)?;
            self.unordered_stores = true;
        }
        // A ragged tail goes before the last whole word: that word is the
        // store that publishes the write (`Backend::write`).
        let tail = &piece[words_end..];
        if !tail.is_empty() {
            self.patch(w, off + words_end, tail)?;
        }
        if words_end > head {
            self.store_word(w, off + words_end - 4, &piece[words_end - 4..words_end])?;
        }
        Ok(())
    }

    fn read(&mut self, w: usize, off: u64, out: &mut [u8]) -> Result<()> {
        // A read must see what was written before it.
        self.order_stores();
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

/// A pinned buffer's NOC address from PIN_PAGES as an offset in the chip's host-memory range
/// (an address below the range's base is taken as that offset already, as the simulated tt-kmd
/// gives it).
fn in_host_range(noc: u64, params: &ArchParams) -> u64 {
    noc.checked_sub(params.bar.host_mem_base).unwrap_or(noc)
}

/// Whether the firmware can reach `len` bytes pinned at NOC address `noc`: through the chip's
/// PCIe tile, which forwards only `host_mem_size` bytes of its host range (each chip's figure
/// cited in `arch::bar`). A buffer past them would leave every queue out of reach, a hang at
/// boot.
fn reachable(noc: u64, len: usize, params: &ArchParams) -> std::result::Result<(), String> {
    let (at, reach) = (in_host_range(noc, params), params.bar.host_mem_size);
    if at.checked_add(len as u64).is_some_and(|end| end <= reach) {
        return Ok(());
    }
    Err(format!(
        "PIN_PAGES put the queues' {len} bytes at NOC address {noc:#x}, {at:#x} bytes into the chip's \
         host-memory range, past the {reach:#x} bytes its PCIe tile forwards: the firmware could not \
         reach them (free host memory other processes have pinned for the card, or reload tt-kmd)"
    ))
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
        let Some(noc) = sysmem.noc_address() else {
            return Err(DriverError::Backend(format!("{}: PIN_PAGES returned no NOC address", dev.path().display())));
        };
        reachable(noc, len, params).map_err(|why| DriverError::Backend(format!("{}: {why}", dev.path().display())))?;
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
        let Some(offset) = self.claimed.take() else { return Ok(()) };
        self.sysmem.write(offset, &self.staging).map_err(be)?;
        // The next store to the card may publish these bytes (a fetch-queue entry naming them).
        self.bar.kmd.unordered_stores = true;
        Ok(())
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

    /// A card: its kernel side has no clock of its own (a simulator behind
    /// tt-kmd's interface, `ttkmd-sim:`, has one).
    fn silicon(&self) -> bool {
        self.bar.kmd.dev.kernel().device_clock().is_none()
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
        in_host_range(self.sysmem.noc_address().expect("checked at open"), self.bar.params)
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
        self.bar.kmd.order_stores();
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

    /// The pinned buffer must end within what the chip's PCIe tile forwards, to the byte, on
    /// each chip, whether PIN_PAGES gives the NOC address with the range's base or without.
    #[test]
    fn a_pinned_buffer_must_end_within_what_the_chip_forwards() {
        for arch in [Arch::Wormhole, Arch::Blackhole] {
            let params = arch.params();
            let (base, reach) = (params.bar.host_mem_base, params.bar.host_mem_size);
            let len = 4 << 20;
            let last = reach - len as u64;
            for noc in [last, base + last] {
                assert_eq!(reachable(noc, len, params), Ok(()), "{arch:?} at {noc:#x}");
                let err = reachable(noc + 4096, len, params).unwrap_err();
                assert!(err.contains(&format!("past the {reach:#x} bytes its PCIe tile forwards")), "{err}");
            }
            assert!(reachable(base + u64::MAX / 2, len, params).is_err(), "{arch:?}: no overflow");
        }
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

    use super::super::io_barrier::order_log::{self, Access};
    use cqlab_abi::noc::Coord;

    /// A Tensix tile's L1 on the scripted Wormhole, through a window.
    const L1: NocAddr = NocAddr::unicast(Coord::new(18, 18), 0x1000);

    /// Publishing path 1, a fetch-queue entry after the issue-ring bytes it names: the bytes
    /// claimed of sysmem land in pinned memory, then the I/O write barrier runs, then the entry
    /// is stored; a word with nothing stored before it runs no barrier.
    #[test]
    fn a_doorbell_lands_the_claimed_sysmem_then_the_barrier_then_its_word() {
        let mut backend = open(Script::default()).unwrap();
        order_log::take();
        backend.sysmem_claim(0x1000, 64).unwrap().fill(0xab);
        backend.write_u32(L1, 0x1234).unwrap();
        assert_eq!(order_log::take(), [Access::HostMemory, Access::Barrier, Access::DeviceWord]);
        let mut landed = [0u8; 64];
        backend.sysmem_read(0x1000, &mut landed).unwrap();
        assert_eq!(landed, [0xab; 64]);
        backend.write_u32(L1, 0x1235).unwrap();
        assert_eq!(order_log::take(), [Access::DeviceWord], "uncached words reach the card in order");
    }

    /// Publishing path 2, a launch after its kernel and args: each write's last word is stored
    /// alone, after the barrier, so the slow launch message's tag (its last word, the GO) lands
    /// after the message, and the message after the kernel and args written before it.
    #[test]
    fn a_writes_last_word_is_stored_after_the_barrier_behind_the_rest() {
        let mut backend = open(Script::default()).unwrap();
        order_log::take();
        let kernel: Vec<u8> = (0..256u32).map(|i| i as u8).collect();
        backend.write(L1, &kernel).unwrap();
        backend.write(L1.offset(0x400), &[7; 32]).unwrap();
        use Access::{Barrier, DeviceBlock, DeviceWord};
        let expected = [DeviceBlock(252), Barrier, DeviceWord, DeviceBlock(28), Barrier, DeviceWord];
        assert_eq!(order_log::take(), expected);
        let mut back = vec![0u8; 256];
        backend.read(L1, &mut back).unwrap();
        assert_eq!(back, kernel);
        // Ragged ends are read, patched and stored after any pending store: nothing here
        // leaves a block unordered before a word.
        backend.write(L1.offset(0x802), &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]).unwrap();
        let log = order_log::take();
        assert!(!log.windows(2).any(|w| matches!(w, [DeviceBlock(_), DeviceWord])), "{log:?}");
        let mut back = [0u8; 16];
        backend.read(L1.offset(0x800), &mut back).unwrap();
        assert_eq!(back, [0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0]);
    }

    /// The queues' own publishing path on this backend (no firmware needed: a fresh ring has
    /// room): each write into L1 is a chunk in the issue ring and a fetch-queue entry, and
    /// every store to the card that follows bytes landed in sysmem, or a run of words, follows
    /// the barrier too.
    #[test]
    fn the_queues_doorbells_follow_the_barrier() {
        let cfg = DeviceConfig { num_cqs: 1, ..DeviceConfig::default() };
        let dev = TtKmdDevice::with_kernel(Box::new(Scripted::new(Script::default())), OpenFlags::default()).unwrap();
        let backend = TtKmdBackend::new(dev, &cfg).unwrap();
        let mut device = crate::device::Device::with_backend(Box::new(backend), cfg).unwrap();
        let buf = device.alloc_l1(0, 0, 4096).unwrap();
        order_log::take();
        let mut cq = device.cq(0).unwrap();
        cq.write_buffer(&buf, 0, &[0x5a; 64]).unwrap();
        cq.write_buffer(&buf, 0, &[0xa5; 4096]).unwrap();
        let log = order_log::take();
        let published = log.windows(2).filter(|w| w == &[Access::Barrier, Access::DeviceWord]).count();
        assert!(published >= 2 && log.contains(&Access::HostMemory), "{log:?}");
        for (i, pair) in log.windows(2).enumerate() {
            let unordered = matches!(pair, [Access::HostMemory | Access::DeviceBlock(_), Access::DeviceWord]);
            assert!(!unordered, "a store to the card right after {:?} (access {i} of {log:?})", pair[0]);
        }
    }

    /// A queue pointer the device wrote is loaded whole and followed by the I/O read barrier,
    /// before the records it publishes are read or the ring space it frees is written.
    #[test]
    fn a_device_written_pointer_is_followed_by_the_read_barrier() {
        let mut backend = open(Script::default()).unwrap();
        order_log::take();
        backend.sysmem_read_u32(0x40).unwrap();
        assert_eq!(order_log::take(), [Access::DeviceWrittenWord, Access::ReadBarrier]);
    }

    /// An issue-ring chunk that wraps is two claims, the ring's end then its start (as
    /// `Queue::copy_to_issue_at` makes them): each lands whole and nothing around it moves,
    /// at odd offsets and lengths.
    #[test]
    fn claims_either_side_of_a_ring_wrap_land_whole() {
        let mut backend = open(Script::default()).unwrap();
        let (ring, size) = (0x2000usize, 0x100usize);
        let chunk: Vec<u8> = (0..77u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for start in [size - 1, size - 5, size - 8, size - 13, size - 76] {
            backend.sysmem_claim(ring - 8, size + 16).unwrap().fill(0xee);
            let first = size - start;
            backend.sysmem_claim(ring + start, first).unwrap().copy_from_slice(&chunk[..first]);
            backend.sysmem_claim(ring, chunk.len() - first).unwrap().copy_from_slice(&chunk[first..]);
            let mut all = vec![0u8; size + 16];
            backend.sysmem_read(ring - 8, &mut all).unwrap();
            let ring_bytes = &all[8..8 + size];
            assert_eq!(&ring_bytes[start..], &chunk[..first], "the end, from {start}");
            assert_eq!(&ring_bytes[..chunk.len() - first], &chunk[first..], "the start, from {start}");
            assert!(ring_bytes[chunk.len() - first..start].iter().all(|&b| b == 0xee), "between, from {start}");
            assert!(all[..8].iter().chain(&all[8 + size..]).all(|&b| b == 0xee), "outside, from {start}");
        }
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
