//! The libttsim backend (`ttsim:PATH`): any shared library with the
//! libttsim C API that tt-umd and tt-metal load (cqlab's own,
//! `cargo xtask libttsim`, or Tenstorrent's ttsim), driven as the other
//! backends drive a chip.
//!
//! - The chip is what its PCI configuration space says (device id 0x401e
//!   Wormhole, 0xb140 Blackhole), then what ARC says through BAR0
//!   ([`crate::arc::identify`]), as on a card.
//! - Host accesses go through BAR0's TLB windows ([`crate::tlb`]): the
//!   chip's TLB configuration registers and windows, written and read with
//!   `libttsim_pci_mem_{wr,rd}_bytes` at the BAR addresses the
//!   configuration space gives.
//! - Sysmem is host memory in this process; the device reaches it through
//!   the DMA callbacks ([`host_memory`]), through BAR2's outbound iATU
//!   region 0, programmed as tt-umd programs it (identity: device offset =
//!   host address).
//! - Time passes only when the host lets it: `poll` calls
//!   `libttsim_clock(n)`, as the embedded simulator's host poll does, so a
//!   run is as deterministic as the library.
//!
//! cqlab's library adds calls of its own, used when present: settings for
//! the next `libttsim_init` (`cqlab_ttsim_set`: the configuration's board
//! and harvesting, a seed), its error channel (every call the library
//! refused comes back as an error here), the device clock and the state
//! digest. Another library's chip is whatever it simulates; the device
//! then refuses a configuration that names another board or harvesting.
//!
//! The unsafe code of the backend is in [`library`] (the calls) and
//! [`host_memory`] (the callbacks).
#![allow(unsafe_code)] // BAR/mmap layer: docs/design.md, "Where `unsafe` lives"

pub mod host_memory;
pub mod library;

use crate::backend::{
    check_sysmem, claim_slice, snapshot_read, snapshot_u32, Backend, CoreDebug, DramTraffic, Introspect,
    DEFAULT_POLL_CYCLES,
};
use crate::config::{DeviceConfig, HostSchedule};
use crate::error::{DriverError, LibraryProblem, Result};
use crate::geometry::CoreId;
use crate::host_clock::{Access, HostClock};
use crate::tlb::{RegisterWindows, TlbBar, Windows};
use cqlab_abi::arch::bar::{config_space, iatu, PCI_VENDOR_ID};
use cqlab_abi::arch::tlb::TlbConfig;
use cqlab_abi::arch::{Arch, ArchParams};
use cqlab_abi::noc::NocAddr;
use host_memory::Slot;
use library::Loaded;
use memmap2::MmapMut;
use std::path::Path;

/// Bytes of sysmem the backend lends the device (as the embedded simulator's default).
pub const SYSMEM_BYTES: usize = 64 << 20;

/// The BARs' physical addresses, from the configuration space.
#[derive(Clone, Copy, Debug)]
struct Bars {
    bar0: u64,
    bar2: u64,
    bar4: u64,
}

/// The library's BAR0 as the window manager drives it, and its errors.
struct LibBar {
    lib: Started,
    regs: RegisterWindows,
    bars: Bars,
    slot: Slot,
    /// cqlab's library: errors it had reported when last checked.
    errors_seen: u64,
}

impl LibBar {
    /// Fails if the library reported an error since the last check (cqlab's
    /// library), or a DMA callback an access outside sysmem.
    fn check(&mut self, call: impl FnOnce() -> String) -> Result<()> {
        if let Some(fault) = self.slot.take_fault() {
            return Err(self.lib.failed(call(), fault));
        }
        if let Some(n) = self.lib.error_count() {
            if n != self.errors_seen {
                self.errors_seen = n;
                return Err(self.lib.failed(call(), self.lib.last_error().unwrap_or_default()));
            }
        }
        Ok(())
    }

    fn bar_base(&self, bar: u8) -> u64 {
        match bar {
            0 => self.bars.bar0,
            2 => self.bars.bar2,
            _ => self.bars.bar4,
        }
    }

    fn write(&mut self, bar: u8, offset: u64, data: &[u8]) -> Result<()> {
        let paddr = self.bar_base(bar) + offset;
        self.lib.mem_write(paddr, data);
        self.check(|| format!("libttsim_pci_mem_wr_bytes(BAR{bar} + {offset:#x}, {} bytes)", data.len()))
    }

    fn read(&mut self, bar: u8, offset: u64, buf: &mut [u8]) -> Result<()> {
        let paddr = self.bar_base(bar) + offset;
        self.lib.mem_read(paddr, buf);
        self.check(|| format!("libttsim_pci_mem_rd_bytes(BAR{bar} + {offset:#x}, {} bytes)", buf.len()))
    }
}

impl TlbBar for LibBar {
    fn windows(&self) -> usize {
        self.regs.count()
    }
    fn configure(&mut self, w: usize, cfg: &TlbConfig) -> Result<()> {
        let (at, words) = self.regs.config_write(w, cfg)?;
        LibBar::write(self, 0, at, &words)
    }
    fn write(&mut self, w: usize, offset: u64, data: &[u8]) -> Result<()> {
        let (bar, at) = self.regs.data_at(w, offset);
        LibBar::write(self, bar, at, data)
    }
    fn read(&mut self, w: usize, offset: u64, buf: &mut [u8]) -> Result<()> {
        let (bar, at) = self.regs.data_at(w, offset);
        LibBar::read(self, bar, at, buf)
    }
}

/// A device behind a libttsim library. Dropping it stops the simulator
/// (`libttsim_exit`) and unloads the library.
pub struct TtSim {
    // Drop order: the library (`exit`, then unloaded), its slot, then the
    // memory the slot lent.
    bar: LibBar,
    windows: Windows,
    params: &'static ArchParams,
    sysmem: MmapMut,
    /// Cycles the host let pass (`libttsim_clock`), the clock of a library
    /// that does not report its own.
    clocked: u64,
    /// The host's scheduling points at their modelled costs, as the
    /// embedded simulator charges them (no jitter or PCT), each a
    /// `libttsim_clock`: the same program reaches the same device time
    /// through cqlab's library as embedded.
    host: HostClock,
}

impl TtSim {
    /// Loads the library at `path` and starts its chip, configured by `cfg`
    /// where the library is cqlab's (board, harvesting).
    pub fn open(path: &Path, cfg: &DeviceConfig) -> Result<TtSim> {
        Self::open_with(path, cfg, &[])
    }

    /// [`TtSim::open`] with more settings for cqlab's library (`(name,
    /// value)`, e.g. `("CQLAB_TTSIM_SEED", "7")`); another library refuses them.
    pub fn open_with(path: &Path, cfg: &DeviceConfig, settings: &[(&str, &str)]) -> Result<TtSim> {
        cfg.check_sysmem(SYSMEM_BYTES as u64, "the libttsim backend")?;
        let library = |problem| DriverError::Library { library: path.display().to_string(), problem };
        let canonical = path.canonicalize().map_err(|e| library(LibraryProblem::Load(e.to_string())))?;
        let slot = Slot::claim(&canonical)?;
        let lib = Loaded::load(path)?;
        let (mut sysmem, _) = crate::sysmem::alloc(SYSMEM_BYTES)?;
        // SAFETY: `sysmem` is a mapping (its pages never move with the
        // value), kept in the `TtSim` beside the slot, which drops first
        // (field order); on an early return the library has exited, or was
        // never given the callbacks, before `sysmem` is unmapped. The host
        // touches it only between library calls, and the callbacks run only
        // within them.
        unsafe { slot.lend(&mut sysmem) };
        Self::configure(&lib, cfg, settings)?;
        let errors_seen = lib.error_count().unwrap_or(0);
        let (read, write) = slot.callbacks();
        lib.set_callbacks(read, write);
        lib.init();
        // From here on, dropping `lib` calls `libttsim_exit` first (after a
        // failed init too: exit mends a library an init left broken).
        let lib = Started(lib);
        // Checked at once: the calls after a failed init fail too, and the
        // last error would be theirs ("not running"), not why init failed.
        if lib.error_count().is_some_and(|n| n != errors_seen) {
            return Err(lib.failed("libttsim_init()".into(), lib.last_error().unwrap_or_default()));
        }
        lib.select_chip0();
        let ids = lib.config_read32(config_space::IDS);
        let (vendor, device) = (ids as u16, (ids >> 16) as u16);
        let arch = Arch::ALL.into_iter().find(|a| a.params().bar.pci_device_id == device);
        // A 64-bit BAR n: its low half in register n, its high half in n + 1.
        let bar64 = |n: u32| {
            let (lo, hi) = (config_space::bar(n), config_space::bar(n + 1));
            (lib.config_read32(hi) as u64) << 32 | (lib.config_read32(lo) & !config_space::BAR_FLAGS) as u64
        };
        let bars = Bars { bar0: bar64(0), bar2: bar64(2), bar4: bar64(4) };
        let mut bar = LibBar { lib, regs: RegisterWindows::new(&cqlab_abi::arch::WORMHOLE), bars, slot, errors_seen };
        bar.check(|| "libttsim_init()".into())?;
        let params = match arch {
            Some(a) if vendor == PCI_VENDOR_ID => a.params(),
            _ => return Err(library(LibraryProblem::UnknownDevice { vendor, device })),
        };
        bar.regs = RegisterWindows::new(params);
        let windows = Windows::new(bar.regs.count());
        let mut dev =
            TtSim { bar, windows, params, sysmem, clocked: 0, host: HostClock::new(0, HostSchedule::default()) };
        dev.map_sysmem()?;
        Ok(dev)
    }

    /// cqlab's library: the configuration's chip and `extra` for the next init.
    fn configure(lib: &Loaded, cfg: &DeviceConfig, extra: &[(&str, &str)]) -> Result<()> {
        let mut settings: Vec<(String, String)> = Vec::new();
        match (cfg.board, &cfg.harvesting) {
            (Some(board), _) => {
                settings.push(("CQLAB_TTSIM_BOARD".into(), board.name().into()));
                settings.push(("CQLAB_TTSIM_HARVEST".into(), cfg.sim_harvesting().to_string()));
            }
            // `--harvest` alone harvests the library's own board.
            (None, Some(harvesting)) => settings.push(("CQLAB_TTSIM_HARVEST".into(), harvesting.to_string())),
            (None, None) => {}
        }
        // Its errors come back as errors of this backend, not also on stderr.
        if std::env::var_os("CQLAB_TTSIM_LOG").is_none() {
            settings.push(("CQLAB_TTSIM_LOG".into(), "off".into()));
        }
        settings.extend(extra.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        for (name, value) in &settings {
            match lib.set(name, value) {
                Some(r) => r?,
                None if extra.iter().any(|(n, _)| n == name) => {
                    return Err(lib.failed(
                        format!("setting {name}={value}"),
                        "not cqlab's libttsim library (it has no cqlab_ttsim_set)".into(),
                    ))
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Points BAR2's outbound iATU region 0 at sysmem, identity-mapped, in
    /// the order tt-umd writes it (`TTSimTTDevice::configure_iatu_region`).
    fn map_sysmem(&mut self) -> Result<()> {
        let layout = self.params.bar.iatu;
        let limit = self.sysmem.len() as u32 - 1;
        for (reg, value) in [
            (iatu::REGION_CTRL_2, 0),
            (iatu::REGION_CTRL_1, 0),
            (iatu::LOWER_BASE, 0),
            (iatu::UPPER_BASE, 0),
            (iatu::LOWER_LIMIT, limit),
            (iatu::LOWER_TARGET, 0),
            (iatu::UPPER_TARGET, 0),
            (iatu::REGION_CTRL_2, iatu::REGION_EN),
        ] {
            self.bar.write(2, layout.bar2_offset as u64 + reg as u64, &value.to_le_bytes())?;
        }
        Ok(())
    }

    /// The library's path.
    pub fn library(&self) -> &Path {
        self.bar.lib.path()
    }

    /// TLB window configurations issued so far.
    pub fn tlb_configurations(&self) -> u64 {
        self.windows.configured()
    }

    /// Lets `cycles` pass on the device (`libttsim_clock(0)` charges what
    /// the chip holds posted).
    fn clock(&mut self, mut cycles: u64) -> Result<u64> {
        loop {
            let n = cycles.min(u32::MAX as u64) as u32;
            self.bar.lib.clock(n);
            self.clocked += n as u64;
            cycles -= n as u64;
            self.bar.check(|| format!("libttsim_clock({n})"))?;
            if cycles == 0 {
                return Ok(self.now());
            }
        }
    }

    /// A scheduling point: the device runs what the host's clock says
    /// before access `a` takes effect.
    fn host_access(&mut self, a: Access) -> Result<()> {
        match self.host.before(a) {
            Some(cycles) => self.clock(cycles).map(drop),
            None => Ok(()),
        }
    }
}

/// A library whose simulator runs: `libttsim_exit` when dropped, before
/// the library is unloaded.
struct Started(Loaded);

impl std::ops::Deref for Started {
    type Target = Loaded;
    fn deref(&self) -> &Loaded {
        &self.0
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.0.exit();
    }
}

impl Backend for TtSim {
    fn name(&self) -> String {
        format!("libttsim {}", self.library().display())
    }
    fn params(&self) -> &'static ArchParams {
        self.params
    }
    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.host_access(Access::BarWrite)?;
        self.windows.write(&mut self.bar, addr, data)
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        self.host_access(Access::BarRead)?;
        self.windows.read(&mut self.bar, addr, buf)
    }
    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        self.host_access(Access::BarRead)?;
        self.bar.read(0, offset as u64, buf)
    }
    fn sysmem_len(&self) -> usize {
        self.sysmem.len()
    }
    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        check_sysmem(offset, buf.len(), self.sysmem.len())?;
        self.host_access(Access::SysmemRead(buf.len()))?;
        // The device writes sysmem only inside our library calls.
        snapshot_read(&self.sysmem, offset, buf)
    }
    fn sysmem_peek_u32(&mut self, offset: usize) -> Result<u32> {
        snapshot_u32(&self.sysmem, offset)
    }
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]> {
        check_sysmem(offset, len, self.sysmem.len())?;
        self.host_access(Access::SysmemWrite(len))?;
        claim_slice(&mut self.sysmem, offset, len)
    }
    fn poll(&mut self) -> Result<u64> {
        let owed = self.host.take_owed();
        self.clock(DEFAULT_POLL_CYCLES + owed)
    }
    fn now(&self) -> u64 {
        self.bar.lib.device_time().unwrap_or(self.clocked)
    }
    fn introspect(&mut self) -> Option<&mut dyn Introspect> {
        Some(self)
    }
}

/// What a libttsim library shows beyond the BAR: the clock, and with
/// cqlab's library the digest. No core PCs or DRAM counters.
impl Introspect for TtSim {
    fn core_debug(&mut self, _core: CoreId) -> Result<Option<CoreDebug>> {
        Ok(None)
    }
    fn digest(&mut self) -> Result<u64> {
        let d = self.bar.lib.digest().ok_or_else(|| {
            self.bar.lib.failed("the state digest".into(), "needs cqlab's libttsim library (cqlab_ttsim_digest)".into())
        })?;
        self.bar.check(|| "cqlab_ttsim_digest()".into())?;
        Ok(d)
    }
    // The C API has no DRAM traffic counters.
    fn dram_traffic(&mut self) -> Result<Option<DramTraffic>> {
        Ok(None)
    }
    fn reset_dram_traffic(&mut self) -> Result<()> {
        Ok(())
    }
    fn peek(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<bool> {
        // Only cqlab's library reads as an observer: tile_rd_bytes lands
        // posted host writes first, so it is no peek.
        let c = addr.coord();
        match self.bar.lib.peek(c.x, c.y, addr.local(), buf) {
            Some(r) => {
                // The library counted a refused peek: `check` keeps its
                // count of errors seen in step, so the next BAR access is
                // not blamed for it.
                let call = || format!("cqlab_ttsim_peek({:#x}, {} bytes)", addr.0, buf.len());
                let checked = self.bar.check(call);
                r.and(checked).map(|()| true)
            }
            None => Ok(false),
        }
    }
    fn run_cycles(&mut self, cycles: u64) -> Result<u64> {
        let owed = self.host.take_owed();
        self.clock(cycles.saturating_add(owed))
    }
}
