//! The tt-kmd [`Backend`]: command queues on a device reached through tt-kmd, on a card
//! (`/dev/tenstorrent/N`) or against the simulator (`ttkmd-sim:PATH`), with the same code.
//!
//! - Sysmem is host memory from the kernel side (huge pages when available), pinned with
//!   PIN_PAGES for NOC DMA; the device reaches it at the NOC address PIN_PAGES returns.
//! - BAR access goes through TLB windows (ALLOCATE_TLB, CONFIGURE_TLB) of
//!   [`TLB_WINDOW_SIZE`] bytes, kept in a small cache ([`WINDOW_CACHE`] windows, least
//!   recently used reconfigured first).
//! - Words (fetch-queue doorbells, registers, mailbox words) are volatile 32-bit stores through
//!   the uncached (UC) view; bulk data goes through the write-combining (WC) view, and a fence
//!   orders pending WC stores before the next UC store or read (a doorbell must not overtake
//!   the data it announces).
//! - Open runs a reset sequence (USER_RESET, POST_RESET) where the driver has one (2.3+): the
//!   device is quiet before `boot`, whatever the previous owner left running.

use std::time::{Duration, Instant};

use cqlab_abi::memory_map::TLB_WINDOW_SIZE;
use cqlab_abi::mmio::{MMIO_BASE, SOFT_RESET};
use cqlab_abi::noc::{endpoint, Coord, Endpoint, NocAddr};
use cqlab_abi::sysmem::CqSysmemLayout;

use super::device::{PinFlags, PinnedMemory, ResetKind, TlbWindow, TtKmdDevice};
use super::ioctl::{Feature, NocTlbConfig};
use crate::backend::Backend;
use crate::config::DeviceConfig;
use crate::error::{DriverError, Result};

/// TLB windows kept configured at once.
pub const WINDOW_CACHE: usize = 4;
/// How long `poll` pauses (the device runs on its own).
const POLL_PAUSE: Duration = Duration::from_micros(20);
/// A simulated clock that stands still this long means the simulator died.
const CLOCK_STALL: Duration = Duration::from_secs(5);

fn be(e: super::TtKmdError) -> DriverError {
    DriverError::Backend(e.to_string())
}

struct Cached {
    tlb: TlbWindow,
    /// (core, window base) it points at.
    target: (Coord, u64),
    last_use: u64,
}

/// Command queues over tt-kmd.
pub struct TtKmdBackend {
    dev: TtKmdDevice,
    sysmem: PinnedMemory,
    windows: Vec<Cached>,
    uses: u64,
    /// WC stores issued since the last fence.
    wc_pending: bool,
    opened: Instant,
    /// Last simulated clock seen and when it last moved.
    clock: (u64, Instant),
}

impl TtKmdBackend {
    /// Takes `dev` over for `cfg`'s command queues: reset sequence, sysmem pinned.
    pub fn new(mut dev: TtKmdDevice, cfg: &DeviceConfig) -> Result<Self> {
        dev.require(Feature::TlbWindows, "command queues (TLB windows)").map_err(be)?;
        if dev.version().has(Feature::ResetSequence) {
            dev.reset_sequence(ResetKind::UserReset).map_err(be)?;
        }
        let need = CqSysmemLayout::for_cq(cfg.num_cqs - 1, cfg.issue_size, cfg.completion_size).end();
        let len = (need as usize).next_multiple_of(TLB_WINDOW_SIZE as usize);
        let sysmem = dev.alloc_pinned(len, PinFlags::NOC_DMA).map_err(be)?;
        if sysmem.noc_address().is_none() {
            return Err(DriverError::Backend(format!("{}: PIN_PAGES returned no NOC address", dev.path().display())));
        }
        Ok(Self {
            dev,
            sysmem,
            windows: Vec::new(),
            uses: 0,
            wc_pending: false,
            opened: Instant::now(),
            clock: (0, Instant::now()),
        })
    }

    /// The device underneath.
    pub fn device(&self) -> &TtKmdDevice {
        &self.dev
    }

    /// Index of a window onto (`core`, `base`), configuring one if none is.
    fn window(&mut self, core: Coord, base: u64) -> Result<usize> {
        self.uses += 1;
        if let Some(i) = self.windows.iter().position(|w| w.target == (core, base)) {
            self.windows[i].last_use = self.uses;
            return Ok(i);
        }
        let i = if self.windows.len() < WINDOW_CACHE {
            let tlb = self.dev.allocate_tlb(TLB_WINDOW_SIZE).map_err(be)?;
            self.windows.push(Cached { tlb, target: (core, u64::MAX), last_use: 0 });
            self.windows.len() - 1
        } else {
            let (i, _) = self.windows.iter().enumerate().min_by_key(|(_, w)| w.last_use).expect("a full cache");
            i
        };
        // Stores still combining in the WC buffer belong to the old target.
        self.fence();
        let cfg = NocTlbConfig::unicast(core.x as u16, core.y as u16, base, 0);
        self.dev.configure_tlb(&self.windows[i].tlb, &cfg).map_err(be)?;
        self.windows[i].target = (core, base);
        self.windows[i].last_use = self.uses;
        Ok(i)
    }

    /// Orders every WC store before what follows (the fence write-combining needs).
    fn fence(&mut self) {
        if self.wc_pending {
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            self.wc_pending = false;
        }
    }

    /// Calls `f(window, offset in window, piece)` for each window-sized piece of `len` bytes at
    /// `addr` (unicast; multicast is written core by core by the caller).
    fn pieces(
        &mut self,
        addr: NocAddr,
        len: usize,
        mut f: impl FnMut(&mut Self, usize, usize, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        if matches!(endpoint(addr.coord()), Endpoint::Pcie) {
            return Err(DriverError::Invalid(format!(
                "BAR access to the PCIe endpoint ({:#x}): sysmem is host memory, use it directly",
                addr.0
            )));
        }
        let mut done = 0;
        while done < len {
            let local = addr.local() + done as u64;
            let base = local & !(TLB_WINDOW_SIZE - 1);
            let off = (local - base) as usize;
            let n = (len - done).min(TLB_WINDOW_SIZE as usize - off);
            let w = self.window(addr.coord(), base)?;
            f(self, w, off, done..done + n)?;
            done += n;
        }
        Ok(())
    }

    fn write_unicast(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.pieces(addr, data.len(), |me, w, off, r| {
            let local = addr.local() + r.start as u64;
            let piece = &data[r];
            if off % 4 == 0 && piece.len() == 4 {
                // A word: doorbell, register, mailbox. Uncached, after any pending WC data.
                me.fence();
                let v = u32::from_le_bytes(piece.try_into().expect("4 bytes"));
                let uc = me.windows[w].tlb.uc();
                uc.word_wo(off).map_err(be)?.write(v);
                if local == (MMIO_BASE + SOFT_RESET) as u64 {
                    // A soft-reset write takes effect before we go on (nothing the host writes
                    // next may reach a core that is still running): the read-back lands it on
                    // a PCIe link; the simulator applies it at its next slice.
                    uc.read_u32(off).map_err(be)?;
                    me.dev
                        .kernel()
                        .settle()
                        .map_err(|e| DriverError::Backend(format!("{}: {e}", me.dev.path().display())))?;
                }
                return Ok(());
            }
            // Bulk: aligned middle through WC; ragged edges read-modify-write through UC.
            let head = (4 - off % 4) % 4;
            let head = head.min(piece.len());
            let body = (piece.len() - head) / 4 * 4;
            if head > 0 {
                me.fence();
                me.patch(w, off, &piece[..head])?;
            }
            if body > 0 {
                me.windows[w].tlb.wc().write_block(off + head, &piece[head..head + body]).map_err(be)?;
                me.wc_pending = true;
            }
            if head + body < piece.len() {
                me.fence();
                me.patch(w, off + head + body, &piece[head + body..])?;
            }
            Ok(())
        })
    }

    /// Writes fewer than 4 bytes at `off` inside one word, through UC.
    fn patch(&mut self, w: usize, off: usize, bytes: &[u8]) -> Result<()> {
        let word = off & !3;
        let uc = self.windows[w].tlb.uc();
        let mut b = uc.read_u32(word).map_err(be)?.to_le_bytes();
        b[off - word..off - word + bytes.len()].copy_from_slice(bytes);
        uc.write_u32(word, u32::from_le_bytes(b)).map_err(be)
    }

    fn check_clock(&mut self) -> Result<()> {
        if let Some(now) = self.kernel_clock() {
            if now != self.clock.0 {
                self.clock = (now, Instant::now());
            } else if self.clock.1.elapsed() > CLOCK_STALL {
                return Err(DriverError::Backend(format!(
                    "{}: the simulated clock stood still at cycle {now} for {} s (the simulator stopped?)",
                    self.dev.path().display(),
                    CLOCK_STALL.as_secs()
                )));
            }
        }
        Ok(())
    }

    fn kernel_clock(&self) -> Option<u64> {
        self.dev.kernel().device_clock()
    }
}

impl Backend for TtKmdBackend {
    fn name(&self) -> String {
        format!("tt-kmd {} ({})", self.dev.path().display(), self.dev.version())
    }

    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        if !addr.is_multicast() {
            return self.write_unicast(addr, data);
        }
        let (a, b) = (addr.coord(), addr.mcast_end());
        for y in a.y..=b.y {
            for x in a.x..=b.x {
                self.write_unicast(NocAddr::unicast(Coord::new(x, y), addr.local()), data)?;
            }
        }
        Ok(())
    }

    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        if addr.is_multicast() {
            return Err(DriverError::Invalid(format!("a BAR read cannot be multicast ({:#x})", addr.0)));
        }
        // A read must see what was written before it.
        self.fence();
        let len = buf.len();
        self.pieces(addr, len, |me, w, off, r| {
            let uc = me.windows[w].tlb.uc();
            let out = &mut buf[r];
            let (first, last) = (off & !3, (off + out.len()).next_multiple_of(4));
            let mut words = vec![0u8; last - first];
            uc.read_block(first, &mut words).map_err(be)?;
            out.copy_from_slice(&words[off - first..off - first + out.len()]);
            Ok(())
        })
    }

    fn sysmem_len(&self) -> usize {
        self.sysmem.len()
    }

    fn sysmem_noc_base(&self) -> u64 {
        self.sysmem.noc_address().expect("checked at open")
    }

    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        self.sysmem.read(offset, buf).map_err(be)
    }

    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]> {
        self.sysmem.claim(offset, len).map_err(be)
    }

    /// One whole-word load: the device may be writing this pointer right now.
    fn sysmem_read_u32(&mut self, offset: usize) -> Result<u32> {
        self.sysmem.read_u32(offset).map_err(be)
    }

    fn poll(&mut self) -> Result<u64> {
        self.fence();
        std::thread::sleep(POLL_PAUSE);
        self.check_clock()?;
        Ok(self.now())
    }

    /// The simulator's clock, or on a card wall time since open in nanoseconds (1 cycle at 1 GHz).
    fn now(&self) -> u64 {
        self.kernel_clock().unwrap_or_else(|| self.opened.elapsed().as_nanos() as u64)
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
    let kernel = super::sim_kernel::SimKernel::open(std::path::Path::new(path)).map_err(be)?;
    let s = kernel.shape();
    let ours = (cfg.worker_cols, cfg.worker_rows, cfg.num_cqs, cfg.dram_banks);
    let theirs = (s.worker_cols, s.worker_rows, s.num_cqs, s.dram_banks);
    if ours != theirs {
        return Err(DriverError::Invalid(format!(
            "the simulated device at {path} has {}x{} workers, {} CQs, {} DRAM banks; the device configuration asks \
             for {}x{} workers, {} CQs, {} DRAM banks",
            theirs.0, theirs.1, theirs.2, theirs.3, ours.0, ours.1, ours.2, ours.3
        )));
    }
    let dev = TtKmdDevice::with_kernel(Box::new(kernel), super::kernel::OpenFlags::default()).map_err(be)?;
    Ok(Box::new(TtKmdBackend::new(dev, cfg)?))
}
