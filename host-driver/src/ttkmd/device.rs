//! `TtKmdDevice`: one open tt-kmd device (through a [`Kernel`]), its BARs mapped as asked for, owned
//! exclusively, its driver version known.
#![allow(unsafe_code)] // BAR/mmap layer: docs/design.md, "Where `unsafe` lives"

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use nix::errno::Errno;

use super::error::{Result, TtKmdError};
use super::ioctl::{self as sys, DriverVersion, Feature, IoctlArg, NocTlbConfig};
use super::kernel::{DeviceFile, Kernel, Locator, OpenFlags};
use super::window::{Caching, MmioWindow};
use crate::sysmem::PageKind;

/// The LOCK_CTL resource lock cqlab takes to own a device. tt-kmd gives indices 0..=15 to
/// ERISC cores by convention; cqlab uses the last one.
pub const CQLAB_LOCK_INDEX: u8 = sys::RESOURCE_LOCK_COUNT - 1;

/// Spare bytes after every ioctl argument, in case a driver writes more than the header we
/// mirror says (older tt-kmd copies its whole `out` struct regardless of `output_size_bytes`).
const GUARD_BYTES: usize = 64;

/// The kernel interface and what must be undone when the last user (device, TLB window,
/// pinning) goes.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) kernel: Box<dyn Kernel>,
    /// Whether we hold LOCK_CTL index [`CQLAB_LOCK_INDEX`] (drivers without LOCK_CTL: flock only).
    lock_ctl_held: bool,
}

impl Inner {
    fn path(&self) -> PathBuf {
        self.kernel.path().to_owned()
    }

    /// Runs one tt-kmd ioctl on `arg`, retrying on EINTR.
    pub(crate) fn call<T: IoctlArg>(&self, arg: &mut T) -> std::result::Result<(), Errno> {
        let n = size_of::<T>();
        let mut buf = vec![0u8; n + GUARD_BYTES];
        buf[..n].copy_from_slice(arg.as_bytes());
        loop {
            match self.kernel.ioctl(T::REQUEST, &mut buf) {
                Err(Errno::EINTR) => continue,
                r => {
                    *arg = T::read_from_bytes(&buf[..n]).expect("sized buffer");
                    return r;
                }
            }
        }
    }

    fn err(&self, ioctl: &'static str, errno: Errno, context: impl Into<String>) -> TtKmdError {
        let context = context.into();
        let context = if context.is_empty() { context } else { format!(" ({context})") };
        TtKmdError::Ioctl { path: self.path(), ioctl, errno, context }
    }

    fn lock_ctl(&self, flags: u32) -> std::result::Result<u8, Errno> {
        let mut arg = sys::LockCtl {
            input: sys::LockCtlIn {
                output_size_bytes: size_of::<sys::LockCtlOut>() as u32,
                flags,
                index: CQLAB_LOCK_INDEX,
                reserved: [0; 3],
            },
            output: sys::LockCtlOut::default(),
        };
        self.call(&mut arg)?;
        Ok(arg.output.value)
    }

    fn free_tlb(&self, id: u32) -> Result<()> {
        let mut arg = sys::FreeTlb { input: sys::FreeTlbIn { id }, output: sys::FreeTlbOut {} };
        self.call(&mut arg).map_err(|e| self.err("FREE_TLB", e, format!("TLB id {id}")))
    }

    fn unpin(&self, addr: u64, size: u64) -> Result<()> {
        let mut arg = sys::UnpinPages {
            input: sys::UnpinPagesIn { virtual_address: addr, size, reserved: 0 },
            output: sys::UnpinPagesOut {},
        };
        self.call(&mut arg).map_err(|e| self.err("UNPIN_PAGES", e, format!("{size:#x} bytes at {addr:#x}")))
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.lock_ctl_held {
            // The driver also releases it when the fd closes; this only makes it explicit.
            let _ = self.lock_ctl(sys::LOCK_CTL_RELEASE);
        }
    }
}

/// PCI identity of the device, from GET_DEVICE_INFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub vendor_id: u16,
    pub device_id: u16,
    pub subsystem_vendor_id: u16,
    pub subsystem_id: u16,
    pub bus: u8,
    pub device: u8,
    pub function: u8,
    /// `None` from drivers older than 1.23, which do not report it.
    pub pci_domain: Option<u16>,
    pub max_dma_buf_size_log2: u16,
}

impl DeviceInfo {
    /// The PCI address as sysfs names it (`dddd:bb:dd.f`; domain 0 where the driver does
    /// not report one).
    pub fn pci_address(&self) -> String {
        let domain = self.pci_domain.unwrap_or(0);
        format!("{domain:04x}:{:02x}:{:02x}.{:x}", self.bus, self.device, self.function)
    }
}

/// One mappable resource reported by QUERY_MAPPINGS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceMapping {
    /// tt-kmd resource index 0, 1, 2 (PCI BAR 0, 2, 4).
    pub resource: u8,
    pub caching: Caching,
    /// Offset to pass to mmap on the device fd.
    pub mmap_offset: u64,
    pub size: u64,
}

impl ResourceMapping {
    fn from_raw(m: &sys::Mapping) -> Option<Self> {
        let (resource, caching) = match m.mapping_id {
            sys::MAPPING_RESOURCE0_UC => (0, Caching::Uc),
            sys::MAPPING_RESOURCE0_WC => (0, Caching::Wc),
            sys::MAPPING_RESOURCE1_UC => (1, Caching::Uc),
            sys::MAPPING_RESOURCE1_WC => (1, Caching::Wc),
            sys::MAPPING_RESOURCE2_UC => (2, Caching::Uc),
            sys::MAPPING_RESOURCE2_WC => (2, Caching::Wc),
            _ => return None, // unused slot, or an id newer than the header we mirror
        };
        (m.mapping_size > 0).then_some(Self { resource, caching, mmap_offset: m.mapping_base, size: m.mapping_size })
    }

    fn name(&self) -> String {
        let c = match self.caching {
            Caching::Uc => "UC",
            Caching::Wc => "WC",
        };
        format!("resource{} (PCI BAR{}, {c})", self.resource, 2 * self.resource)
    }
}

/// Which RESET_DEVICE operation (`tenstorrent_reset_device_in.flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetKind {
    /// Legacy: restore saved PCI state and re-initialise the chip (after a reset done elsewhere).
    RestoreState,
    /// Legacy: hot-reset the PCIe link, then restore state.
    ResetPcieLink,
    /// Legacy: the driver's config-write reset.
    ConfigWrite,
    /// 2.4.0+: announces a reset that something else (a BMC) performs: the driver only marks
    /// the device (`set_reset_marker`); POST_RESET fails until that reset clears the mark.
    UserReset,
    /// 2.4.0+: ASIC reset (the driver marks the device and asks ARC to reset the chip); needs
    /// POST_RESET once the chip's reset cleared the mark.
    AsicReset,
    /// 2.4.0+: ASIC and DMC reset; as [`Self::AsicReset`].
    AsicDmcReset,
    /// 2.4.0+: completes a reset sequence (re-initialises the hardware) when the mark is clear.
    PostReset,
}

impl ResetKind {
    pub(crate) fn flags(self) -> u32 {
        match self {
            Self::RestoreState => sys::RESET_DEVICE_RESTORE_STATE,
            Self::ResetPcieLink => sys::RESET_DEVICE_RESET_PCIE_LINK,
            Self::ConfigWrite => sys::RESET_DEVICE_CONFIG_WRITE,
            Self::UserReset => sys::RESET_DEVICE_USER_RESET,
            Self::AsicReset => sys::RESET_DEVICE_ASIC_RESET,
            Self::AsicDmcReset => sys::RESET_DEVICE_ASIC_DMC_RESET,
            Self::PostReset => sys::RESET_DEVICE_POST_RESET,
        }
    }

    /// The operation as tt-kmd's `ioctl.h` names it (`ASIC_RESET`).
    pub fn name(self) -> &'static str {
        match self {
            Self::RestoreState => "RESTORE_STATE",
            Self::ResetPcieLink => "RESET_PCIE_LINK",
            Self::ConfigWrite => "CONFIG_WRITE",
            Self::UserReset => "USER_RESET",
            Self::AsicReset => "ASIC_RESET",
            Self::AsicDmcReset => "ASIC_DMC_RESET",
            Self::PostReset => "POST_RESET",
        }
    }

    /// Whether the kernel waits for POST_RESET after this one.
    pub fn needs_post_reset(self) -> bool {
        matches!(self, Self::UserReset | Self::AsicReset | Self::AsicDmcReset)
    }
}

/// PIN_PAGES flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinFlags(pub u32);

impl PinFlags {
    /// The caller attests the buffer is physically contiguous (e.g. one huge page); required by
    /// drivers running without an IOMMU.
    pub const CONTIGUOUS: Self = Self(sys::PIN_PAGES_CONTIGUOUS);
    /// Also map the buffer into the device's NOC address space; returns a NOC address.
    pub const NOC_DMA: Self = Self(sys::PIN_PAGES_NOC_DMA);
    /// With NOC_DMA: allocate the NOC window top-down.
    pub const NOC_TOP_DOWN: Self = Self(sys::PIN_PAGES_NOC_TOP_DOWN);

    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for PinFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// An open tt-kmd device: driver and PCI info, the BAR resources it offers (each mapped only
/// when first asked for: [`Self::map_bar`]), and exclusive ownership (flock on the fd, plus
/// LOCK_CTL where the driver has it).
///
/// Everything is released on drop: mappings are unmapped, LOCK_CTL is released and closing the
/// fd drops the flock (and any pinning or TLB the driver still tracks for it).
#[derive(Debug)]
pub struct TtKmdDevice {
    /// The resources mapped so far. Dropped first (fields drop in order): the BARs are
    /// unmapped while this process still owns the device, before `inner` closes its fd and
    /// releases the owner's lock.
    bars: Vec<(ResourceMapping, MmioWindow)>,
    /// What QUERY_MAPPINGS offers.
    resources: Vec<ResourceMapping>,
    inner: Arc<Inner>,
    version: DriverVersion,
    power: PowerMode,
    info: DeviceInfo,
}

/// How the device's power was set up at open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerMode {
    /// Power-aware open (tt-kmd 2.6.0+): this fd asked for full power with SET_POWER_STATE.
    Aware,
    /// Legacy open (or a driver before 2.6.0): the driver powers the device for every fd
    /// (`chardev.c` at ttkmd-2.10.0: everything but the maximum AI clock).
    Legacy,
}

/// Full power: max AI clock, PHY awake, Tensix and L2CPU enabled (four valid flags).
fn full_power() -> sys::PowerState {
    sys::PowerState {
        argsz: size_of::<sys::PowerState>() as u32,
        validity: sys::power_validity(4, 0),
        power_flags: sys::POWER_FLAG_MAX_AI_CLK
            | sys::POWER_FLAG_MRISC_PHY_WAKEUP
            | sys::POWER_FLAG_TENSIX_ENABLE
            | sys::POWER_FLAG_L2CPU_ENABLE,
        ..Default::default()
    }
}

impl TtKmdDevice {
    /// Opens `path` (normally `/dev/tenstorrent/N`) power-aware and takes exclusive ownership.
    ///
    /// Fails at once, without waiting, if the node is missing (no card or no driver), is not a
    /// tt-kmd device, or is held by another process ("device held by pid N").
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with_flags(path, OpenFlags::default())
    }

    /// [`Self::open`] with explicit open flags (legacy or power-aware, exclusive or not).
    pub fn open_with_flags(path: impl AsRef<Path>, flags: OpenFlags) -> Result<Self> {
        let kernel = DeviceFile::open(path.as_ref(), flags)?;
        Self::with_kernel(Box::new(kernel), flags)
    }

    /// Takes ownership of a device opened through `kernel` (a real device file, or the
    /// simulator's): flock, driver and device info, power, LOCK_CTL, the BAR resources offered
    /// (none mapped yet).
    pub fn with_kernel(kernel: Box<dyn Kernel>, flags: OpenFlags) -> Result<Self> {
        kernel.lock_exclusive()?;
        let mut inner = Inner { kernel, lock_ctl_held: false };

        // GET_DRIVER_INFO first: the call that tells a tt-kmd node from anything else, and the
        // driver's version from everything it has.
        let mut drv = sys::GetDriverInfo {
            input: sys::GetDriverInfoIn { output_size_bytes: size_of::<sys::GetDriverInfoOut>() as u32 },
            output: Default::default(),
        };
        inner.call(&mut drv).map_err(|errno| match errno {
            Errno::ENOTTY | Errno::EINVAL | Errno::EOPNOTSUPP => {
                TtKmdError::NotTtKmd { path: inner.path(), ioctl: "GET_DRIVER_INFO", errno }
            }
            e => inner.err("GET_DRIVER_INFO", e, ""),
        })?;
        if drv.output.output_size_bytes < sys::GET_DRIVER_INFO_OUT_V1_SIZE {
            return Err(TtKmdError::Unexpected {
                path: inner.path(),
                ioctl: "GET_DRIVER_INFO",
                expected: format!("output_size_bytes >= {}", sys::GET_DRIVER_INFO_OUT_V1_SIZE),
                found: drv.output.output_size_bytes.to_string(),
            });
        }
        let version = DriverVersion::from_out(&drv.output);

        let info = get_device_info(&inner)?;

        // A power-aware fd starts with everything off: ask for full power. Drivers before 2.6.0
        // ignore O_APPEND and power every fd (legacy).
        let power = if flags.power_aware && version.has(Feature::PowerAware) {
            let mut p = full_power();
            inner.call(&mut p).map_err(|e| inner.err("SET_POWER_STATE", e, "full power"))?;
            PowerMode::Aware
        } else {
            PowerMode::Legacy
        };

        // Device-wide ownership through the driver, on top of the flock.
        match inner.lock_ctl(sys::LOCK_CTL_ACQUIRE) {
            Ok(1) => inner.lock_ctl_held = true,
            Ok(_) => {
                return Err(TtKmdError::Held { path: inner.path(), how: "tt-kmd LOCK_CTL resource lock taken" });
            }
            // Drivers before LOCK_CTL reject the unknown request: the flock alone owns the device.
            Err(Errno::EINVAL | Errno::ENOTTY) => {}
            Err(e) => return Err(inner.err("LOCK_CTL", e, format!("ACQUIRE index {CQLAB_LOCK_INDEX}"))),
        }
        let resources = query_mappings(&inner)?;
        Ok(Self { inner: Arc::new(inner), version, power, info, bars: Vec::new(), resources })
    }

    /// The device node this was opened from.
    pub fn path(&self) -> &Path {
        self.inner.kernel.path()
    }

    /// The kernel interface underneath.
    pub fn kernel(&self) -> &dyn Kernel {
        &*self.inner.kernel
    }

    /// The driver's version from GET_DRIVER_INFO.
    pub fn version(&self) -> DriverVersion {
        self.version
    }

    /// `driver_version` (the ioctl API version) from GET_DRIVER_INFO.
    pub fn driver_version(&self) -> u32 {
        self.version.api
    }

    /// How power was set up at open.
    pub fn power_mode(&self) -> PowerMode {
        self.power
    }

    /// PCI identity from GET_DEVICE_INFO.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Whether device ownership includes tt-kmd's LOCK_CTL (else the flock alone).
    pub fn holds_lock_ctl(&self) -> bool {
        self.inner.lock_ctl_held
    }

    /// Every resource the driver offers (mapped or not).
    pub fn mappings(&self) -> impl Iterator<Item = &ResourceMapping> {
        self.resources.iter()
    }

    /// The window of tt-kmd resource `resource` (0, 1, 2 = PCI BAR 0, 2, 4), if mapped.
    pub fn bar(&self, resource: u8, caching: Caching) -> Option<&MmioWindow> {
        self.bars.iter().find(|(m, _)| m.resource == resource && m.caching == caching).map(|(_, w)| w)
    }

    /// The window of tt-kmd resource `resource` with `caching`, mapped now if it was not yet;
    /// `None` if the driver offers no such resource. Nothing is mapped that is not asked for:
    /// a Blackhole's BAR4 alone is 32 GiB of address space.
    pub fn map_bar(&mut self, resource: u8, caching: Caching) -> Result<Option<&MmioWindow>> {
        let wanted = |m: &ResourceMapping| m.resource == resource && m.caching == caching;
        if let Some(i) = self.bars.iter().position(|(m, _)| wanted(m)) {
            return Ok(Some(&self.bars[i].1));
        }
        let Some(m) = self.resources.iter().copied().find(wanted) else { return Ok(None) };
        let window = MmioWindow::map(&*self.inner.kernel, m.name(), m.mmap_offset, m.size)?;
        self.bars.push((m, window));
        Ok(self.bars.last().map(|(_, w)| w))
    }

    /// Fails unless the driver has `f`, naming the version that brought it.
    pub fn require(&self, f: Feature, what: &'static str) -> Result<()> {
        if self.version.has(f) {
            return Ok(());
        }
        let (a, b, c) = f.since();
        Err(TtKmdError::Unsupported {
            path: self.path().to_owned(),
            what,
            found: self.version.to_string(),
            needs: format!("tt-kmd {a}.{b}.{c} (ioctl API {}) or later", f.api()),
        })
    }

    /// Allocates a TLB window of `size` bytes (a size the chip supports, e.g. 1 MiB, 2 MiB,
    /// 16 MiB on Wormhole) and maps it uncached, once. Point it somewhere with
    /// [`Self::configure_tlb`].
    ///
    /// Not also write-combining, though ALLOCATE_TLB offers both offsets: tt-kmd maps either
    /// with `io_remap_pfn_range` over the same BAR pages, the UC offset with `pgprot_device`,
    /// the WC one with `pgprot_writecombine` (`map_tlb_window` and `tenstorrent_mmap`,
    /// `memory.c` at ttkmd-2.10.0), and nothing in tt-kmd keeps two views of one window apart.
    /// On x86 the kernel's PAT tracking then gives the second mapping the first one's memory
    /// type (`reserve_pfn_range`, arch/x86/mm/pat/memtype.c, "We allow returning different
    /// type than the one requested in non strict case"): mapped UC first, as this did, the WC
    /// view was uncached (UC-) all along; mapped WC first, the doorbells would be
    /// write-combined. On arm64, two views of one page with different attributes lose the
    /// architecture's ordering and coherence guarantees ("mismatched memory attributes").
    /// tt-umd likewise maps each window it allocates in one mode (`TlbHandle`). A
    /// write-combining path would need windows of its own.
    pub fn allocate_tlb(&self, size: u64) -> Result<TlbWindow> {
        let mut arg = sys::AllocateTlb {
            input: sys::AllocateTlbIn { size, reserved: 0 },
            output: sys::AllocateTlbOut::default(),
        };
        self.require(Feature::TlbWindows, "TLB windows")?;
        self.inner.call(&mut arg).map_err(|e| self.inner.err("ALLOCATE_TLB", e, format!("size {size:#x}")))?;
        let id = arg.output.id;
        // From here on, dropping `alloc` frees the TLB (after the windows are unmapped).
        let alloc = TlbAllocation { inner: self.inner.clone(), id, freed: false };
        let k = &*self.inner.kernel;
        let uc = MmioWindow::map(k, format!("TLB {id} (UC)"), arg.output.mmap_offset_uc, size)?;
        Ok(TlbWindow { id, size, uc, alloc })
    }

    /// Points TLB window `tlb` at a NOC target.
    pub fn configure_tlb(&self, tlb: &TlbWindow, config: &NocTlbConfig) -> Result<()> {
        let mut arg = sys::ConfigureTlb {
            input: sys::ConfigureTlbIn { id: tlb.id, reserved: 0, config: *config },
            output: sys::ConfigureTlbOut::default(),
        };
        self.inner.call(&mut arg).map_err(|e| {
            let c = config;
            let ctx = format!(
                "TLB {} -> noc{} ({},{}) addr {:#x} mcast {}",
                tlb.id, c.noc, c.x_end, c.y_end, c.addr, c.mcast
            );
            self.inner.err("CONFIGURE_TLB", e, ctx)
        })
    }

    /// Unmaps and frees `tlb`, reporting the driver's answer (dropping it does the same silently).
    pub fn free_tlb(&self, tlb: TlbWindow) -> Result<()> {
        tlb.free()
    }

    /// Pins `buf` for device DMA and returns its IOVA (or physical address without an IOMMU).
    ///
    /// `buf` must start on a page boundary and span whole pages. The borrow keeps the memory
    /// alive while pinned; unpin with [`PinnedPages::unpin`] (or drop). The device may write the
    /// buffer at any time while pinned: read it with volatile or atomic accesses.
    pub fn pin_pages<'a>(&self, buf: &'a mut [u8], flags: PinFlags) -> Result<PinnedPages<'a>> {
        let page = page_size();
        let addr = buf.as_ptr() as usize;
        if buf.is_empty() || addr % page != 0 || buf.len() % page != 0 {
            return Err(TtKmdError::PinUnaligned { path: self.path().to_owned(), addr, len: buf.len(), page });
        }
        let mut arg = sys::PinPagesExtended {
            input: sys::PinPagesIn {
                output_size_bytes: size_of::<sys::PinPagesOutExtended>() as u32,
                flags: flags.0,
                virtual_address: addr as u64,
                size: buf.len() as u64,
            },
            output: Default::default(),
        };
        self.inner.call(&mut arg).map_err(|e| {
            self.inner.err("PIN_PAGES", e, format!("{:#x} bytes at {addr:#x}, flags {:#x}", buf.len(), flags.0))
        })?;
        // NOC_TOP_DOWN implies NOC DMA: the kernel returns a NOC address for either.
        let noc_dma = flags.contains(PinFlags::NOC_DMA) || flags.contains(PinFlags::NOC_TOP_DOWN);
        let noc_address = noc_dma.then_some(arg.output.noc_address);
        Ok(PinnedPages { inner: self.inner.clone(), buf, iova: arg.output.physical_address, noc_address, pinned: true })
    }

    /// `len` bytes of host memory the device can reach once pinned (one 1 GiB huge page when the
    /// system has one free; in simulation, the simulator's sysmem), pinned for NOC DMA: the
    /// device reaches it at the returned NOC address. Without IOMMU translation tt-kmd pins
    /// only physically contiguous memory: the error then says how to get it.
    pub fn alloc_pinned(&self, len: usize, flags: PinFlags) -> Result<PinnedMemory> {
        let page = page_size();
        if len == 0 || len % page != 0 {
            return Err(TtKmdError::PinUnaligned { path: self.path().to_owned(), addr: 0, len, page });
        }
        let memory = self.inner.kernel.alloc_dma_memory(len).map_err(|source| TtKmdError::Map {
            path: self.path().to_owned(),
            what: "host memory for DMA".into(),
            offset: 0,
            len: len as u64,
            source,
        })?;
        let (map, pages) = (memory.map, memory.pages);
        let addr = map.as_ptr() as usize;
        let mut arg = sys::PinPagesExtended {
            input: sys::PinPagesIn {
                output_size_bytes: size_of::<sys::PinPagesOutExtended>() as u32,
                flags: flags.0,
                virtual_address: addr as u64,
                size: len as u64,
            },
            output: Default::default(),
        };
        self.inner.call(&mut arg).map_err(|e| {
            // Without IOMMU translation tt-kmd pins only physically contiguous pages and
            // answers EINVAL for any others (`ioctl_pin_pages`, memory.c at ttkmd-2.10.0).
            let pci = self.info.pci_address();
            let iommu = self.inner.kernel.iommu(&pci);
            if e == Errno::EINVAL && pages != PageKind::Huge1G && iommu.needs_contiguous() != Some(false) {
                return TtKmdError::PinNeedsContiguous {
                    path: self.path().to_owned(),
                    len,
                    pages: pages.describe(),
                    iommu: format!("PCI device {pci}: {iommu}"),
                };
            }
            self.inner.err("PIN_PAGES", e, format!("{len:#x} bytes at {addr:#x}, flags {:#x}", flags.0))
        })?;
        let noc_dma = flags.contains(PinFlags::NOC_DMA) || flags.contains(PinFlags::NOC_TOP_DOWN);
        Ok(PinnedMemory {
            inner: self.inner.clone(),
            map,
            len,
            iova: arg.output.physical_address,
            noc_address: noc_dma.then_some(arg.output.noc_address),
        })
    }

    /// One RESET_DEVICE operation. After USER_RESET, ASIC_RESET or ASIC_DMC_RESET the driver
    /// refuses everything but info and reset ioctls, on every fd, until
    /// [`ResetKind::PostReset`]; POST_RESET fails while the reset marker is set. tt-kmd 2.6.0
    /// to 2.9.x also answer ENODEV, for good, to the fd that sent the reset (it moves the reset
    /// generation without that fd: `ioctl_reset_device`, `chardev.c` at ttkmd-2.8.0; 2.10.0's
    /// `bump_reset_gen` keeps it), so POST_RESET must come from a new open. Prefer
    /// [`Self::reset_sequence`], which does the whole sequence that way.
    pub fn reset(&self, kind: ResetKind) -> Result<()> {
        if kind.needs_post_reset() || kind == ResetKind::PostReset {
            self.require(Feature::ResetSequence, "USER/ASIC resets and POST_RESET")?;
        }
        send_reset(&self.inner, kind)
    }

    /// A whole reset of the chip, as tt-kmd's own `tools/reset.c` does it (the same at every
    /// tag from ttkmd-2.4.0 to ttkmd-2.10.0): `kind` (ASIC_RESET, or ASIC_DMC_RESET to reset
    /// the board controller too), which marks the device (PCI_COMMAND's parity bit:
    /// `set_reset_marker`, `pcie.c`) and asks ARC to reset the chip (`wormhole_reset` /
    /// `blackhole_reset`); then this device is closed, its mappings with it; a wait until the
    /// chip's reset has cleared the mark (or the card, gone from the bus, is back); then a new
    /// open of the node that shows the device's PCI address (a card that re-enumerated may be
    /// another `/dev/tenstorrent/N`) and POST_RESET there, which re-initialises the device and
    /// succeeds only with the mark clear (`is_reset_marker_zero`, `ioctl_reset_device` in
    /// `chardev.c`).
    ///
    /// POST_RESET is never sent on this fd: tt-kmd 2.6.0 to 2.9.x answer ENODEV to it after the
    /// reset (see [`Self::reset`]), which left the device waiting for POST_RESET, every later
    /// open of it failing, until `tt-smi -r`. The new open is raw (no flock, LOCK_CTL or
    /// SET_POWER_STATE, which tt-kmd refuses with ENODEV until POST_RESET).
    ///
    /// Every other fd of the device, in any process, is invalid for good afterwards (2.6.0 and
    /// later), and every mapping was zapped. Open the device again ([`ResetDone::node`]) to
    /// use it.
    ///
    /// USER_RESET is refused: tt-kmd only marks the device for a reset that something else
    /// performs (a BMC), so POST_RESET fails until that has happened.
    pub fn reset_sequence(self, kind: ResetKind) -> Result<ResetDone> {
        self.reset_sequence_with_progress(kind, &mut |_| {})
    }

    /// [`Self::reset_sequence`], telling `progress` each step as it starts and, while the
    /// chip resets (seconds on a card), how long it has been waited for.
    pub fn reset_sequence_with_progress(
        self,
        kind: ResetKind,
        progress: &mut dyn FnMut(ResetStep),
    ) -> Result<ResetDone> {
        if !matches!(kind, ResetKind::AsicReset | ResetKind::AsicDmcReset) {
            return Err(TtKmdError::Unexpected {
                path: self.path().to_owned(),
                ioctl: "RESET_DEVICE",
                expected: "ASIC_RESET or ASIC_DMC_RESET to reset the chip (USER_RESET only marks the device for a \
                           reset a BMC performs: POST_RESET fails until it has)"
                    .into(),
                found: kind.name().into(),
            });
        }
        let what = match kind {
            ResetKind::AsicDmcReset => "ASIC_DMC_RESET (the chip and its board's management controller) and POST_RESET",
            _ => "ASIC_RESET and POST_RESET",
        };
        self.require(Feature::ResetSequence, what)?;
        let start = std::time::Instant::now();
        let (path, pci) = (self.path().to_owned(), self.info.pci_address());
        let wormhole = self.info.device_id == cqlab_abi::arch::Arch::Wormhole.params().bar.pci_device_id;
        let locator = self.inner.kernel.locator();
        progress(ResetStep::Requested(kind));
        self.reset(kind)?;
        // As `tools/reset.c` closes its fd after the reset: on 2.6.0 to 2.9.x it answers
        // nothing more, and its mappings show nothing since the reset zapped them.
        drop(self);
        let waited = wait_reset_done(&*locator, &path, &pci, kind, wormhole, progress)?;
        progress(ResetStep::PostReset);
        let node = post_reset_by_pci(&*locator, &path, &pci)?;
        Ok(ResetDone { kind, waited_for_chip: waited, took: start.elapsed(), node })
    }

    /// Refuses, naming them, other processes with the device open: a reset would invalidate
    /// their fds and zap their mappings. An exclusive open ([`OpenFlags::exclusive`]) on
    /// tt-kmd 2.10.0 or later has already made sure (tt-kmd admitted no other fd); before
    /// 2.10.0 tt-kmd ignores `O_EXCL`, and its `pids` file (2.5.0 and later) says who has the
    /// device open. Where neither can tell (2.4.x keeps no `pids` file), nothing is refused and
    /// `Ok(false)` says the check could not be made.
    pub fn refuse_other_users(&self, opened_exclusive: bool) -> Result<bool> {
        if opened_exclusive && self.version.has(Feature::DmabufAndExclusiveOpen) {
            return Ok(true);
        }
        match self.inner.kernel.other_pids() {
            Ok(pids) if pids.is_empty() => Ok(true),
            Ok(_) => Err(TtKmdError::InUse { path: self.path().to_owned(), holders: self.inner.kernel.holders() }),
            Err(_) => Ok(false),
        }
    }
}

/// Sends one RESET_DEVICE operation on `inner`'s fd.
fn send_reset(inner: &Inner, kind: ResetKind) -> Result<()> {
    let mut arg = sys::ResetDevice {
        input: sys::ResetDeviceIn { output_size_bytes: size_of::<sys::ResetDeviceOut>() as u32, flags: kind.flags() },
        output: Default::default(),
    };
    inner.call(&mut arg).map_err(|e| inner.err("RESET_DEVICE", e, kind.name()))?;
    match arg.output.result {
        0 => Ok(()),
        result => Err(TtKmdError::ResetFailed {
            path: inner.path(),
            kind: kind.name(),
            result,
            why: if kind == ResetKind::PostReset {
                " (tt-kmd's POST_RESET fails while the reset marker in PCI config space is set: a USER_RESET \
                 leaves it set until something else resets the chip)"
            } else {
                ""
            },
        }),
    }
}

/// Waits for the chip's reset to clear tt-kmd's reset marker, as `tools/reset.c` does
/// (ttkmd-2.4.0 to ttkmd-2.10.0): half a second first on Wormhole (it reads the marker too
/// early otherwise), then polling, for at most 5 s more (10 s with the DMC). A card that leaves
/// the bus meanwhile (it re-enumerates) is done once it is back, whatever its marker (its
/// config space is new). Returns how long it waited, the half second included.
fn wait_reset_done(
    locator: &dyn Locator,
    path: &Path,
    pci: &str,
    kind: ResetKind,
    wormhole: bool,
    progress: &mut dyn FnMut(ResetStep),
) -> Result<std::time::Duration> {
    let limit = if kind == ResetKind::AsicDmcReset { RESET_DMC_LIMIT } else { RESET_LIMIT };
    let settle = if wormhole { RESET_WORMHOLE_SETTLE } else { std::time::Duration::ZERO };
    let start = std::time::Instant::now();
    let waiting = |waited| ResetStep::WaitingForChip { pci: pci.to_owned(), waited, limit: settle + limit };
    progress(waiting(start.elapsed()));
    std::thread::sleep(settle);
    let mut left_bus = false;
    loop {
        let marker = locator.reset_marker(pci).map_err(|source| TtKmdError::ResetMarker {
            path: path.to_owned(),
            pci: pci.to_owned(),
            source,
        })?;
        match marker {
            Some(false) => return Ok(start.elapsed()),
            Some(true) if left_bus => return Ok(start.elapsed()),
            Some(true) => {}
            None => left_bus = true,
        }
        if start.elapsed() >= settle + limit {
            let (path, pci, secs) = (path.to_owned(), pci.to_owned(), (settle + limit).as_secs_f64());
            return Err(if left_bus {
                TtKmdError::ResetReenumerated { path, pci, secs }
            } else {
                TtKmdError::ResetTimeout { path, kind: kind.name(), pci, secs }
            });
        }
        std::thread::sleep(RESET_POLL);
        progress(waiting(start.elapsed()));
    }
}

/// Finds the node that shows PCI device `pci` (the one it was opened from first), opens it
/// raw and sends POST_RESET there, as `tools/reset.c` does (`find_dev_id_by_bdf`, for at most
/// 10 s, ttkmd-2.4.0 to ttkmd-2.10.0). Returns the node.
fn post_reset_by_pci(locator: &dyn Locator, path: &Path, pci: &str) -> Result<PathBuf> {
    let start = std::time::Instant::now();
    let mut last_refusal = None;
    loop {
        for node in locator.nodes() {
            let kernel = match locator.open_raw(&node) {
                Ok(k) => k,
                Err(e) => {
                    last_refusal = Some(e.to_string());
                    continue;
                }
            };
            let inner = Inner { kernel, lock_ctl_held: false };
            if get_device_info(&inner).is_ok_and(|info| info.pci_address() == pci) {
                send_reset(&inner, ResetKind::PostReset)?;
                return Ok(node);
            }
        }
        if start.elapsed() >= REDISCOVER_LIMIT {
            return Err(TtKmdError::ResetNodeNotFound {
                path: path.to_owned(),
                pci: pci.to_owned(),
                secs: REDISCOVER_LIMIT.as_secs_f64(),
                last: last_refusal.map_or_else(String::new, |e| format!(" (last refusal: {e})")),
            });
        }
        std::thread::sleep(REDISCOVER_POLL);
    }
}

/// A step of [`TtKmdDevice::reset_sequence_with_progress`], said as it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResetStep {
    /// The reset ioctl (ASIC_RESET or ASIC_DMC_RESET) is sent.
    Requested(ResetKind),
    /// Waiting for the chip's reset to clear tt-kmd's reset marker of PCI device `pci`:
    /// `waited` so far, given up once it passes `limit` (5 s of polling, 10 s with the DMC,
    /// after the half second a Wormhole is first left alone).
    WaitingForChip { pci: String, waited: std::time::Duration, limit: std::time::Duration },
    /// The marker is clear: the device's node is opened again and POST_RESET re-initialises it.
    PostReset,
}

/// What a completed [`TtKmdDevice::reset_sequence`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResetDone {
    /// The reset sent (ASIC_RESET or ASIC_DMC_RESET).
    pub kind: ResetKind,
    /// From the reset ioctl's return until the marker read clear.
    pub waited_for_chip: std::time::Duration,
    /// The whole sequence, POST_RESET included.
    pub took: std::time::Duration,
    /// The node POST_RESET was sent on: the device's node now (another
    /// `/dev/tenstorrent/N` than before if the card re-enumerated).
    pub node: PathBuf,
}

/// How long a Wormhole is left alone after ASIC_RESET before its marker is read (`tools/reset.c`
/// at ttkmd-2.10.0 waits 500 ms: "20ms isn't long enough but 40ms is").
const RESET_WORMHOLE_SETTLE: std::time::Duration = std::time::Duration::from_millis(500);
/// How long the chip's reset may take to clear the marker (`tools/reset.c`: 5 s, 10 s with the DMC).
const RESET_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);
const RESET_DMC_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
/// Between two reads of the marker.
const RESET_POLL: std::time::Duration = std::time::Duration::from_millis(10);
/// How long a node showing the device is looked for after its reset, and how often
/// (`tools/reset.c`: 10 s, every 200 ms).
const REDISCOVER_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
const REDISCOVER_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// QUERY_MAPPINGS: the resources the device offers. A device may offer none (the simulator's,
/// whose device memory is reached through TLB windows only).
fn query_mappings(inner: &Inner) -> Result<Vec<ResourceMapping>> {
    let mut q = sys::QueryMappingsBuf {
        input: sys::QueryMappingsIn { output_mapping_count: sys::QUERY_MAPPINGS_CAPACITY as u32, reserved: 0 },
        mappings: Default::default(),
    };
    inner.call(&mut q).map_err(|e| inner.err("QUERY_MAPPINGS", e, ""))?;
    Ok(q.mappings.iter().filter_map(ResourceMapping::from_raw).collect())
}

fn get_device_info(inner: &Inner) -> Result<DeviceInfo> {
    let mut arg = sys::GetDeviceInfo {
        input: sys::GetDeviceInfoIn { output_size_bytes: size_of::<sys::GetDeviceInfoOut>() as u32 },
        output: Default::default(),
    };
    inner.call(&mut arg).map_err(|e| inner.err("GET_DEVICE_INFO", e, ""))?;
    let o = arg.output;
    let domain_end = std::mem::offset_of!(sys::GetDeviceInfoOut, pci_domain) + 2;
    Ok(DeviceInfo {
        vendor_id: o.vendor_id,
        device_id: o.device_id,
        subsystem_vendor_id: o.subsystem_vendor_id,
        subsystem_id: o.subsystem_id,
        bus: (o.bus_dev_fn >> 8) as u8,
        device: ((o.bus_dev_fn >> 3) & 0x1f) as u8,
        function: (o.bus_dev_fn & 0x7) as u8,
        pci_domain: (o.output_size_bytes as usize >= domain_end).then_some(o.pci_domain),
        max_dma_buf_size_log2: o.max_dma_buf_size_log2,
    })
}

fn page_size() -> usize {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(n)) if n > 0 => n as usize,
        _ => 4096,
    }
}

/// Frees its TLB when dropped; declared last in [`TlbWindow`] so it drops after the mappings.
#[derive(Debug)]
struct TlbAllocation {
    inner: Arc<Inner>,
    id: u32,
    freed: bool,
}

impl TlbAllocation {
    fn free(mut self) -> Result<()> {
        self.freed = true;
        self.inner.free_tlb(self.id)
    }
}

impl Drop for TlbAllocation {
    fn drop(&mut self) {
        if !self.freed {
            let _ = self.inner.free_tlb(self.id);
        }
    }
}

/// A TLB window allocated from tt-kmd, mapped uncached ([`TtKmdDevice::allocate_tlb`] says
/// why not also write-combining).
#[derive(Debug)]
pub struct TlbWindow {
    id: u32,
    size: u64,
    uc: MmioWindow,
    // Must stay the last field: fields drop in order, and the TLB is freed after unmapping.
    alloc: TlbAllocation,
}

impl TlbWindow {
    /// The driver's TLB id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Window size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The uncached mapping: every access, words and bulk.
    pub fn uc(&self) -> &MmioWindow {
        &self.uc
    }

    /// Unmaps the window, then frees the TLB, reporting the driver's answer.
    pub fn free(self) -> Result<()> {
        let TlbWindow { uc, alloc, .. } = self;
        drop(uc);
        alloc.free()
    }
}

/// Host memory pinned for device DMA, owned: the device may write it at any time, so it is
/// never reached through a reference the device could invalidate, only by volatile copies
/// ([`Self::read`]) and written by copies ([`Self::write`]), never lent out as a slice.
/// Unpinned on drop, then unmapped.
#[derive(Debug)]
pub struct PinnedMemory {
    inner: Arc<Inner>,
    /// The mapping, of which the first `len` bytes are pinned (the rest of a huge page is not).
    map: memmap2::MmapRaw,
    len: usize,
    iova: u64,
    noc_address: Option<u64>,
}

impl PinnedMemory {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// IOVA (or physical address without an IOMMU).
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// Where the device reaches byte 0 over the NOC (with NOC_DMA or NOC_TOP_DOWN).
    pub fn noc_address(&self) -> Option<u64> {
        self.noc_address
    }

    fn check(&self, off: usize, len: usize) -> Result<()> {
        if off.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(TtKmdError::OutOfBounds {
                window: "pinned host memory".into(),
                offset: off,
                len,
                size: self.len(),
            });
        }
        Ok(())
    }

    /// Copies `buf.len()` bytes at `off` out: a snapshot of memory the device may be writing
    /// (completion records, while the host reads those before them).
    ///
    /// Volatile loads, 8 aligned bytes at a time (single bytes at the ragged ends): the device
    /// writes this memory behind the compiler's back, so each byte is loaded once, here, and
    /// never through a reference, which would let the compiler take the memory as still. A
    /// word the device writes meanwhile may come half old and half new, as with byte loads;
    /// the queue pointers that say which bytes are whole are read with [`Self::read_u32`].
    pub fn read(&self, off: usize, buf: &mut [u8]) -> Result<()> {
        self.check(off, buf.len())?;
        // SAFETY: `check` proved `off..off + buf.len()` lies in the mapping, which is live
        // while `self` is and does not overlap `buf` (host memory of this process's own).
        unsafe { copy_out_volatile(self.map.as_ptr().add(off), buf) };
        Ok(())
    }

    /// The 32-bit word at `off` (4-aligned), read with one load. The device writes its queue
    /// pointers whole (an aligned 4-byte PCIe write lands at once); [`Self::read`], whose loads
    /// are of no promised width (bytes at its ends), may take some bytes before such a write
    /// and the rest after it, a pointer the device never wrote (a completion write pointer one
    /// ring ahead sent the host reading records not yet written). Then the I/O read barrier
    /// (`super::io_barrier`), so what the device wrote before the pointer (the records it
    /// publishes) is read after it, and the ring space it frees is written after it.
    pub fn read_u32(&self, off: usize) -> Result<u32> {
        self.check(off, 4)?;
        let at = self.map.as_ptr() as usize + off;
        if at % align_of::<AtomicU32>() != 0 {
            return Err(TtKmdError::Misaligned { window: "pinned host memory".into(), offset: off, len: 4 });
        }
        // SAFETY: in bounds of the live mapping (checked) and 4-aligned (checked); the word is
        // only ever accessed whole here, and the device's writes to it are single aligned
        // 32-bit stores, so an atomic load observes exactly one of the values it held.
        let word = unsafe { AtomicU32::from_ptr(self.map.as_mut_ptr().add(off).cast::<u32>()) };
        let value = word.load(Ordering::Relaxed);
        #[cfg(test)]
        super::io_barrier::order_log::record(super::io_barrier::order_log::Access::DeviceWrittenWord);
        super::io_barrier::io_read_barrier();
        Ok(value)
    }

    /// Copies `data` to `off`, with one `memcpy`: the device reads this range only once the host
    /// has published it (free issue-ring space before its fetch-queue entry, queue headers
    /// while the queue cores are held), so plain stores of any width and order are right, and
    /// the backend runs the I/O barrier between them and the store that publishes them
    /// (`super::io_barrier`). No reference to the memory is made: the device shares it.
    pub fn write(&mut self, off: usize, data: &[u8]) -> Result<()> {
        self.check(off, data.len())?;
        // SAFETY: `check` proved `off..off + data.len()` lies in the mapping, which is live while
        // `self` is; `data` is a slice of host memory of this process's own, so the two ranges
        // do not overlap (and `&mut self` keeps any other copy of ours out of the range).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.map.as_mut_ptr().add(off), data.len()) };
        #[cfg(test)]
        super::io_barrier::order_log::record(super::io_barrier::order_log::Access::HostMemory);
        Ok(())
    }
}

/// Copies `out.len()` bytes from `src` into `out` with volatile loads: bytes up to the first
/// 8-aligned address, aligned 8-byte words, then the bytes left ([`PinnedMemory::read`]).
///
/// # Safety
/// `src..src + out.len()` lies in one live mapping, readable, and does not overlap `out`.
unsafe fn copy_out_volatile(src: *const u8, out: &mut [u8]) {
    const WORD: usize = size_of::<u64>();
    let len = out.len();
    let head = src.align_offset(WORD).min(len);
    let words = (len - head) / WORD;
    let tail_at = head + words * WORD;
    let (head_out, rest) = out.split_at_mut(head);
    let (words_out, tail_out) = rest.split_at_mut(words * WORD);
    for (i, b) in head_out.iter_mut().enumerate() {
        // SAFETY: `i < head <= len`: in the range the caller vouches for.
        *b = unsafe { src.add(i).read_volatile() };
    }
    for (i, chunk) in words_out.chunks_exact_mut(WORD).enumerate() {
        // SAFETY: `head + (i + 1) * WORD <= tail_at <= len`, and `src + head` is 8-aligned
        // (`align_offset`), so each word is in range and aligned. Native byte order: the bytes
        // land in `out` as they lie in memory.
        let word = unsafe { src.add(head).cast::<u64>().add(i).read_volatile() };
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    for (i, b) in tail_out.iter_mut().enumerate() {
        // SAFETY: `tail_at + i < len`: in the range the caller vouches for.
        *b = unsafe { src.add(tail_at + i).read_volatile() };
    }
}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        let _ = self.inner.unpin(self.map.as_ptr() as u64, self.len as u64);
    }
}

/// A buffer pinned for device DMA. Unpins on drop (or explicitly, with the result).
#[derive(Debug)]
pub struct PinnedPages<'a> {
    inner: Arc<Inner>,
    buf: &'a mut [u8],
    iova: u64,
    noc_address: Option<u64>,
    pinned: bool,
}

impl PinnedPages<'_> {
    /// Address the device uses for the buffer's first byte (IOVA, or physical without IOMMU).
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// NOC address of the buffer, when pinned with [`PinFlags::NOC_DMA`].
    pub fn noc_address(&self) -> Option<u64> {
        self.noc_address
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Never true: empty buffers cannot be pinned.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Pointer to the buffer, for volatile access while the device may write it.
    pub fn as_ptr(&self) -> *const u8 {
        self.buf.as_ptr()
    }

    /// Mutable pointer to the buffer.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr()
    }

    /// Unpins, reporting the driver's answer. Drivers without UNPIN_PAGES keep the pages pinned
    /// until the device fd closes; the error says so.
    pub fn unpin(mut self) -> Result<()> {
        self.pinned = false;
        self.inner.unpin(self.buf.as_ptr() as u64, self.buf.len() as u64)
    }
}

impl Drop for PinnedPages<'_> {
    fn drop(&mut self) {
        if self.pinned {
            let _ = self.inner.unpin(self.buf.as_ptr() as u64, self.buf.len() as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernel::DEVICE_DIR;
    use super::super::owner;
    use super::*;
    use std::fs::File;

    fn temp_file(tag: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("cqlab-ttkmd-{tag}-{}", std::process::id()));
        std::fs::write(&path, [0u8; 64]).unwrap();
        path
    }

    #[test]
    fn missing_device_node_is_a_clear_error() {
        let err = TtKmdDevice::open("/dev/tenstorrent/99").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, TtKmdError::NotPresent { .. }), "{err:?}");
        assert!(msg.contains("/dev/tenstorrent/99"), "{msg}");
        assert!(msg.contains("no Tenstorrent device/driver present"), "{msg}");
        if !Path::new(DEVICE_DIR).exists() {
            assert!(msg.contains("tt-kmd driver is not loaded"), "{msg}");
        }

        let missing = std::env::temp_dir().join(format!("cqlab-ttkmd-absent-{}", std::process::id()));
        let err = TtKmdDevice::open(&missing).unwrap_err();
        assert!(matches!(err, TtKmdError::NotPresent { .. }), "{err:?}");
        assert!(err.to_string().contains(&*missing.to_string_lossy()), "{err}");
    }

    #[test]
    fn regular_file_is_not_a_ttkmd_device() {
        let path = temp_file("regular");
        let err = TtKmdDevice::open(&path).unwrap_err();
        let msg = err.to_string();
        std::fs::remove_file(&path).unwrap();
        match err {
            TtKmdError::NotTtKmd { ioctl, errno, .. } => {
                assert_eq!(ioctl, "GET_DRIVER_INFO");
                assert_eq!(errno, Errno::ENOTTY);
            }
            other => panic!("expected NotTtKmd, got {other:?}"),
        }
        assert!(msg.contains("is not a tt-kmd device") && msg.contains("ENOTTY"), "{msg}");
        assert!(msg.contains(&*path.to_string_lossy()), "{msg}");
    }

    #[test]
    fn second_owner_is_told_who_holds_the_device() {
        let path = temp_file("held");
        // Hold the flock through a separate open file description, as another process would.
        let holder = File::options().read(true).write(true).open(&path).unwrap();
        let held = owner::lock_exclusive(&holder, &path).unwrap();

        let err = TtKmdDevice::open(&path).unwrap_err();
        let msg = err.to_string();
        match err {
            TtKmdError::HeldByPid { pid, .. } => {
                assert_eq!(pid, std::process::id());
                assert!(msg.contains(&format!("held by pid {pid}")), "{msg}");
            }
            // Only when /proc/locks cannot be read here.
            TtKmdError::Held { .. } => assert!(std::fs::read_to_string("/proc/locks").is_err(), "{msg}"),
            other => panic!("expected a held error, got {other:?}"),
        }

        // Once released, the next opener gets past the lock (and fails on the ioctl instead).
        drop((held, holder));
        let err = TtKmdDevice::open(&path).unwrap_err();
        assert!(matches!(err, TtKmdError::NotTtKmd { .. }), "{err:?}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn mapping_ids_decode_to_resources() {
        let raw = |id, size| sys::Mapping { mapping_id: id, reserved: 0, mapping_base: 1 << 32, mapping_size: size };
        let m = ResourceMapping::from_raw(&raw(sys::MAPPING_RESOURCE1_WC, 0x1000)).unwrap();
        assert_eq!((m.resource, m.caching, m.mmap_offset), (1, Caching::Wc, 1 << 32));
        assert_eq!(m.name(), "resource1 (PCI BAR2, WC)");
        assert_eq!(ResourceMapping::from_raw(&raw(sys::MAPPING_RESOURCE0_UC, 0x1000)).unwrap().caching, Caching::Uc);
        assert!(ResourceMapping::from_raw(&raw(sys::MAPPING_UNUSED, 0x1000)).is_none());
        assert!(ResourceMapping::from_raw(&raw(sys::MAPPING_RESOURCE2_UC, 0)).is_none());
        assert!(ResourceMapping::from_raw(&raw(99, 0x1000)).is_none());
    }

    fn scripted() -> (TtKmdDevice, Arc<std::sync::Mutex<super::super::scripted_kernel::State>>) {
        use super::super::scripted_kernel::{Script, Scripted};
        let kernel = Scripted::new(Script::default());
        let log = kernel.log();
        (TtKmdDevice::with_kernel(Box::new(kernel), OpenFlags::default()).unwrap(), log)
    }

    /// A TLB window is mapped once, uncached: on x86 a second, write-combining mapping of the
    /// same BAR pages would take the first one's memory type (`allocate_tlb`'s docs). The
    /// scripted driver hands out UC offsets at even multiples of 2^32, WC at odd ones.
    #[test]
    fn a_tlb_window_is_mapped_once_uncached() {
        let (dev, log) = scripted();
        let tlb = dev.allocate_tlb(2 << 20).unwrap();
        let uc = (tlb.id() as u64 * 2) << 32;
        assert_eq!(log.lock().unwrap().mmaps, [(uc, 2 << 20)]);
        tlb.uc().write_u32(0x10, 0x600d).unwrap();
        assert_eq!(tlb.uc().read_u32(0x10).unwrap(), 0x600d);
    }

    /// Pinned-memory copies keep every byte, and only those, at every alignment and length
    /// around the 8-byte words they copy in: a background pattern, then each range written
    /// with a fresh pattern and read back, at the same offset and shifted.
    #[test]
    fn pinned_copies_keep_bytes_at_every_alignment_and_length() {
        let (dev, _) = scripted();
        let page = page_size();
        let mut pinned = dev.alloc_pinned(2 * page, PinFlags::NOC_DMA).unwrap();
        let background: Vec<u8> = (0..2 * page).map(|i| (i * 7 + 3) as u8).collect();
        pinned.write(0, &background).unwrap();
        let mut expected = background.clone();
        let lengths = (0..=40).chain([63, 64, 65, 1000, page - 1, page + 9]);
        for (round, len) in lengths.enumerate() {
            for off in (0..17).chain([page - 3]).filter(|off| off + len <= 2 * page) {
                let data: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(round as u8)).collect();
                pinned.write(off, &data).unwrap();
                expected[off..off + len].copy_from_slice(&data);
                let mut back = vec![0u8; len];
                pinned.read(off, &mut back).unwrap();
                assert_eq!(back, data, "read back {len} bytes at {off}");
                for shift in [1usize, 3, 8] {
                    let at = off.saturating_sub(shift);
                    let mut around = vec![0u8; len + 2 * shift];
                    let end = (at + around.len()).min(2 * page);
                    pinned.read(at, &mut around[..end - at]).unwrap();
                    assert_eq!(&around[..end - at], &expected[at..end], "{len} bytes at {off}, read from {at}");
                }
            }
        }
        let mut all = vec![0u8; 2 * page];
        pinned.read(0, &mut all).unwrap();
        assert_eq!(all, expected);
        assert!(matches!(pinned.read(2 * page - 3, &mut [0; 4]), Err(TtKmdError::OutOfBounds { .. })));
        assert!(matches!(pinned.write(2 * page, &[1]), Err(TtKmdError::OutOfBounds { .. })));
    }

    /// A card that leaves the bus during its reset and comes back as another node: its old
    /// node now shows another card.
    #[derive(Debug)]
    struct Reenumerating {
        /// What each read of the marker finds; the last one repeats.
        markers: std::sync::Mutex<std::collections::VecDeque<Option<bool>>>,
        /// Each node and the PCI bus of the card it shows now.
        nodes: Vec<(PathBuf, u8)>,
        /// Every raw open: the node and what its fd was asked.
        opened: std::sync::Mutex<Vec<(PathBuf, Arc<std::sync::Mutex<super::super::scripted_kernel::State>>)>>,
    }

    impl Locator for Reenumerating {
        fn reset_marker(&self, _pci: &str) -> std::io::Result<Option<bool>> {
            let mut markers = self.markers.lock().unwrap();
            Ok(if markers.len() > 1 { markers.pop_front().unwrap() } else { markers[0] })
        }
        fn nodes(&self) -> Vec<PathBuf> {
            self.nodes.iter().map(|(p, _)| p.clone()).collect()
        }
        fn open_raw(&self, node: &Path) -> Result<Box<dyn Kernel>> {
            use super::super::scripted_kernel::{Script, Scripted};
            let bus = self.nodes.iter().find(|(p, _)| p == node).unwrap().1;
            let kernel = Scripted::at(node.to_owned(), Script { bus, ..Script::default() });
            self.opened.lock().unwrap().push((node.to_owned(), kernel.log()));
            Ok(Box::new(kernel))
        }
    }

    /// As tt-kmd's tools/reset.c (ttkmd-2.10.0): a card that leaves the bus during its reset
    /// is waited for, found again by its PCI address (here under another node; its old node
    /// shows another card now) and sent POST_RESET there, on a new fd; the fd that sent
    /// ASIC_RESET is sent nothing more. (It ended with "left the bus" at the first missing
    /// config-space read.)
    #[test]
    fn a_card_that_re_enumerates_is_found_by_its_pci_address_and_post_reset_there() {
        use super::super::scripted_kernel::{Script, Scripted};
        let (old, new) = (PathBuf::from("/dev/tenstorrent/0"), PathBuf::from("/dev/tenstorrent/1"));
        let locator = Arc::new(Reenumerating {
            markers: std::sync::Mutex::new([Some(true), None, None, Some(true)].into()),
            nodes: vec![(old.clone(), 2), (new.clone(), 1)],
            opened: Default::default(),
        });
        let kernel = Scripted::at(old.clone(), Script { bus: 1, ..Script::default() }).with_locator(locator.clone());
        let resetter = kernel.log();
        let dev = TtKmdDevice::with_kernel(Box::new(kernel), OpenFlags::default()).unwrap();
        assert_eq!(dev.info().pci_address(), "0000:01:00.0");
        let mut steps = Vec::new();
        let done = dev.reset_sequence_with_progress(ResetKind::AsicReset, &mut |s| steps.push(s)).unwrap();
        assert_eq!(done.node, new);
        assert_eq!(resetter.lock().unwrap().resets, [sys::RESET_DEVICE_ASIC_RESET], "the resetting fd");
        let opened = locator.opened.lock().unwrap();
        let posted: Vec<(&PathBuf, Vec<u32>)> =
            opened.iter().map(|(node, log)| (node, log.lock().unwrap().resets.clone())).collect();
        assert_eq!(posted, [(&old, vec![]), (&new, vec![sys::RESET_DEVICE_POST_RESET])]);
        assert_eq!(steps.last(), Some(&ResetStep::PostReset));
    }

    /// A Wormhole whose marker stays set is given up on after the half second it is first
    /// left alone and the 5 s of polling, and the error says 5.5 s (it said 5).
    #[test]
    fn a_wormholes_reset_timeout_names_the_whole_wait() {
        use super::super::scripted_kernel::{Script, Scripted};
        let locator = Arc::new(Reenumerating {
            markers: std::sync::Mutex::new([Some(true)].into()),
            nodes: vec![(PathBuf::from("/dev/tenstorrent/0"), 1)],
            opened: Default::default(),
        });
        let kernel = Scripted::new(Script::default()).with_locator(locator.clone());
        let dev = TtKmdDevice::with_kernel(Box::new(kernel), OpenFlags::default()).unwrap();
        let err = dev.reset_sequence(ResetKind::AsicReset).unwrap_err();
        assert!(matches!(err, TtKmdError::ResetTimeout { secs, .. } if secs == 5.5), "{err:?}");
        assert!(err.to_string().contains("is still set 5.5 s after the reset"), "{err}");
        assert!(locator.opened.lock().unwrap().is_empty(), "POST_RESET was looked for with the marker set");
    }

    /// A device other processes have open is refused before a reset: by tt-kmd's `pids`
    /// file where the open could not be exclusive (before tt-kmd 2.10.0, which ignores
    /// `O_EXCL`); a driver whose `pids` file is missing (2.4.x) cannot be checked, and says so.
    #[test]
    fn other_users_of_the_device_refuse_a_reset() {
        use super::super::scripted_kernel::{Script, Scripted};
        let open = |semver, other_pids| {
            let script = Script { semver: Some(semver), other_pids, ..Script::default() };
            TtKmdDevice::with_kernel(Box::new(Scripted::new(script)), OpenFlags::default()).unwrap()
        };
        let err = open((2, 8, 0), Ok(vec![4242])).refuse_other_users(true).unwrap_err();
        assert!(matches!(err, TtKmdError::InUse { .. }), "{err:?}");
        assert!(err.to_string().contains("a reset would invalidate their fds"), "{err}");
        assert!(open((2, 8, 0), Ok(vec![])).refuse_other_users(true).unwrap());
        assert!(!open((2, 4, 0), Err("no pids file".into())).refuse_other_users(true).unwrap());
        // tt-kmd 2.10.0 admitted the exclusive open: nobody else has it open.
        assert!(open((2, 10, 0), Ok(vec![4242])).refuse_other_users(true).unwrap());
        assert!(open((2, 10, 0), Ok(vec![4242])).refuse_other_users(false).is_err());
    }

    #[test]
    fn pin_flags_combine() {
        let f = PinFlags::NOC_DMA | PinFlags::NOC_TOP_DOWN;
        assert_eq!(f.0, 6);
        assert!(f.contains(PinFlags::NOC_DMA) && !f.contains(PinFlags::CONTIGUOUS));
    }
}
