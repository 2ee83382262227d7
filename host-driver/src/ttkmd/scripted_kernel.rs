//! Tests only: a [`Kernel`] that answers tt-kmd's ioctls from a script (a driver version, how
//! many TLB windows are free, what PIN_PAGES says, which BAR resources QUERY_MAPPINGS offers)
//! and records what it was asked: the cases a card would show that the simulator's kernel does
//! not (an old driver, a pool of TLB windows other processes emptied, no IOMMU).
//!
//! Its mmaps are anonymous memory of at most [`MAP_CAP`] bytes (a test reads what it wrote, and
//! a 32 GiB BAR is recorded, not mapped).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use memmap2::{MmapMut, MmapRaw};
use nix::errno::Errno;
use nix::sys::ioctl::ioctl_num_type;

use super::error::Result;
use super::ioctl::{self as sys, IoctlArg};
use super::kernel::{DmaMemory, Iommu, Kernel, Locator};
use cqlab_abi::soc::{Board, Harvesting};

/// Largest anonymous mapping an mmap hands out.
pub const MAP_CAP: usize = 4 << 20;

/// What the scripted driver answers.
#[derive(Clone, Debug)]
pub struct Script {
    /// `driver_version` (the ioctl API) and the semantic version, if the driver reports one.
    pub api: u32,
    pub semver: Option<(u8, u8, u8)>,
    pub board: Board,
    /// 2 MiB TLB windows still free: ALLOCATE_TLB answers ENOMEM once they are gone, as
    /// `tenstorrent_device_allocate_tlb` does (`tlb.c` at ttkmd-2.10.0).
    pub free_tlbs: usize,
    /// PIN_PAGES fails with this.
    pub pin_error: Option<Errno>,
    /// What the host's IOMMU does for the card.
    pub iommu: Iommu,
    /// QUERY_MAPPINGS' answer: (mapping id, size).
    pub mappings: Vec<(u32, u64)>,
    /// The PCI bus GET_DEVICE_INFO reports (device and function 0, domain 0).
    pub bus: u8,
    /// Other processes with the device open (its `pids` file), or why unknown.
    pub other_pids: std::result::Result<Vec<u32>, String>,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            api: 2,
            semver: Some((2, 10, 0)),
            board: Board::WormholeN150,
            free_tlbs: 10,
            pin_error: None,
            iommu: Iommu::Translated("DMA-FQ".into()),
            mappings: Vec::new(),
            bus: 1,
            other_pids: Ok(Vec::new()),
        }
    }
}

/// The scripted kernel.
#[derive(Debug)]
pub struct Scripted {
    path: PathBuf,
    script: Script,
    state: Arc<Mutex<State>>,
    /// Where the device is found again after a reset (default: here, marker clear).
    locator: Option<Arc<dyn Locator + Sync>>,
}

/// What was asked of it.
#[derive(Debug, Default)]
pub struct State {
    /// Ioctls by name, in order.
    pub ioctls: Vec<&'static str>,
    /// (mmap offset, length) of every mmap.
    pub mmaps: Vec<(u64, usize)>,
    pub tlbs_taken: usize,
    next_tlb: u32,
    /// RESET_DEVICE flags, in order.
    pub resets: Vec<u32>,
}

impl Scripted {
    pub fn new(script: Script) -> Self {
        Self::at(PathBuf::from("/dev/tenstorrent/scripted"), script)
    }

    /// A scripted device at `path`.
    pub fn at(path: PathBuf, script: Script) -> Self {
        Self { path, script, state: Default::default(), locator: None }
    }

    /// Found again after a reset through `locator`.
    pub fn with_locator(mut self, locator: Arc<dyn Locator + Sync>) -> Self {
        self.locator = Some(locator);
        self
    }

    /// What it is asked, readable after the kernel went into a device.
    pub fn log(&self) -> Arc<Mutex<State>> {
        self.state.clone()
    }
}

fn with<T: IoctlArg>(
    arg: &mut [u8],
    f: impl FnOnce(&mut T) -> std::result::Result<(), Errno>,
) -> std::result::Result<(), Errno> {
    let n = size_of::<T>();
    let mut v = T::read_from_bytes(&arg[..n]).map_err(|_| Errno::EFAULT)?;
    f(&mut v)?;
    arg[..n].copy_from_slice(v.as_bytes());
    Ok(())
}

impl Kernel for Scripted {
    fn path(&self) -> &Path {
        &self.path
    }

    fn ioctl(&self, request: ioctl_num_type, arg: &mut [u8]) -> std::result::Result<(), Errno> {
        let mut st = self.state.lock().expect("not poisoned");
        let s = &self.script;
        let name = |r| match r {
            r if r == sys::req::GET_DRIVER_INFO => "GET_DRIVER_INFO",
            r if r == sys::req::GET_DEVICE_INFO => "GET_DEVICE_INFO",
            r if r == sys::req::QUERY_MAPPINGS => "QUERY_MAPPINGS",
            r if r == sys::req::LOCK_CTL => "LOCK_CTL",
            r if r == sys::req::SET_POWER_STATE => "SET_POWER_STATE",
            r if r == sys::req::ALLOCATE_TLB => "ALLOCATE_TLB",
            r if r == sys::req::CONFIGURE_TLB => "CONFIGURE_TLB",
            r if r == sys::req::FREE_TLB => "FREE_TLB",
            r if r == sys::req::PIN_PAGES => "PIN_PAGES",
            r if r == sys::req::UNPIN_PAGES => "UNPIN_PAGES",
            r if r == sys::req::RESET_DEVICE => "RESET_DEVICE",
            _ => "other",
        };
        st.ioctls.push(name(request));
        match request {
            r if r == sys::req::GET_DRIVER_INFO => with::<sys::GetDriverInfo>(arg, |a| {
                let (major, minor, patch) = s.semver.unwrap_or_default();
                a.output = sys::GetDriverInfoOut {
                    output_size_bytes: if s.semver.is_some() { 12 } else { sys::GET_DRIVER_INFO_OUT_V1_SIZE },
                    driver_version: s.api,
                    driver_version_major: major,
                    driver_version_minor: minor,
                    driver_version_patch: patch,
                    reserved0: 0,
                };
                Ok(())
            }),
            r if r == sys::req::GET_DEVICE_INFO => with::<sys::GetDeviceInfo>(arg, |a| {
                a.output = sys::GetDeviceInfoOut {
                    output_size_bytes: size_of::<sys::GetDeviceInfoOut>() as u32,
                    vendor_id: cqlab_abi::arch::bar::PCI_VENDOR_ID,
                    device_id: s.board.arch().params().bar.pci_device_id,
                    bus_dev_fn: (s.bus as u16) << 8,
                    ..Default::default()
                };
                Ok(())
            }),
            r if r == sys::req::QUERY_MAPPINGS => with::<sys::QueryMappingsBuf>(arg, |a| {
                a.mappings.fill(sys::Mapping::default());
                for (i, &(id, size)) in s.mappings.iter().enumerate() {
                    a.mappings[i] = sys::Mapping {
                        mapping_id: id,
                        reserved: 0,
                        mapping_base: (i as u64 + 1) << 40,
                        mapping_size: size,
                    };
                }
                Ok(())
            }),
            r if r == sys::req::LOCK_CTL => with::<sys::LockCtl>(arg, |a| {
                a.output.value = 1;
                Ok(())
            }),
            r if r == sys::req::SET_POWER_STATE || r == sys::req::CONFIGURE_TLB || r == sys::req::UNPIN_PAGES => Ok(()),
            r if r == sys::req::FREE_TLB => {
                st.tlbs_taken -= 1;
                Ok(())
            }
            r if r == sys::req::ALLOCATE_TLB => with::<sys::AllocateTlb>(arg, |a| {
                if st.tlbs_taken == s.free_tlbs {
                    return Err(Errno::ENOMEM);
                }
                st.tlbs_taken += 1;
                let id = st.next_tlb;
                st.next_tlb += 1;
                a.output = sys::AllocateTlbOut {
                    id,
                    mmap_offset_uc: (id as u64 * 2) << 32,
                    mmap_offset_wc: (id as u64 * 2 + 1) << 32,
                    ..Default::default()
                };
                Ok(())
            }),
            r if r == sys::req::PIN_PAGES => with::<sys::PinPagesExtended>(arg, |a| {
                if let Some(e) = s.pin_error {
                    return Err(e);
                }
                a.output = sys::PinPagesOutExtended { physical_address: 0x1_0000_0000, noc_address: 0x8_0000_0000 };
                Ok(())
            }),
            r if r == sys::req::RESET_DEVICE => with::<sys::ResetDevice>(arg, |a| {
                st.resets.push(a.input.flags);
                a.output =
                    sys::ResetDeviceOut { output_size_bytes: size_of::<sys::ResetDeviceOut>() as u32, result: 0 };
                Ok(())
            }),
            _ => Err(Errno::ENOTTY),
        }
    }

    fn mmap(&self, offset: u64, len: usize) -> std::io::Result<MmapRaw> {
        self.state.lock().expect("not poisoned").mmaps.push((offset, len));
        Ok(MmapRaw::from(MmapMut::map_anon(len.min(MAP_CAP))?))
    }

    fn lock_exclusive(&self) -> Result<()> {
        Ok(())
    }

    fn holders(&self) -> String {
        "pid 1 (scripted)".into()
    }

    fn other_pids(&self) -> std::result::Result<Vec<u32>, String> {
        self.script.other_pids.clone()
    }

    fn locator(&self) -> Box<dyn Locator> {
        let locator = self.locator.clone().unwrap_or_else(|| {
            Arc::new(Here { path: self.path.clone(), script: self.script.clone(), log: self.state.clone() })
        });
        Box::new(SharedLocator(locator))
    }

    fn alloc_dma_memory(&self, len: usize) -> std::io::Result<DmaMemory> {
        Ok(DmaMemory { map: MmapRaw::from(MmapMut::map_anon(len)?), pages: crate::sysmem::PageKind::Normal })
    }

    fn iommu(&self, _pci: &str) -> Iommu {
        self.script.iommu.clone()
    }

    fn board(&self) -> Option<(Board, Harvesting)> {
        Some((self.script.board, self.script.board.default_harvesting()))
    }
}

/// A [`Locator`] shared with the test that scripted it.
#[derive(Debug)]
struct SharedLocator(Arc<dyn Locator + Sync>);

impl Locator for SharedLocator {
    fn reset_marker(&self, pci: &str) -> std::io::Result<Option<bool>> {
        self.0.reset_marker(pci)
    }
    fn nodes(&self) -> Vec<PathBuf> {
        self.0.nodes()
    }
    fn open_raw(&self, node: &Path) -> Result<Box<dyn Kernel>> {
        self.0.open_raw(node)
    }
}

/// The default [`Locator`]: the device at its node, its marker clear; a reopen shares the
/// first open's log.
#[derive(Debug)]
struct Here {
    path: PathBuf,
    script: Script,
    log: Arc<Mutex<State>>,
}

impl Locator for Here {
    fn reset_marker(&self, _pci: &str) -> std::io::Result<Option<bool>> {
        Ok(Some(false))
    }
    fn nodes(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }
    fn open_raw(&self, node: &Path) -> Result<Box<dyn Kernel>> {
        let mut k = Scripted::at(node.to_owned(), self.script.clone());
        k.state = self.log.clone();
        Ok(Box::new(k))
    }
}
