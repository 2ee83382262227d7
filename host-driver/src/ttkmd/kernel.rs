//! The kernel-facing calls of the tt-kmd backend — open, ioctl, mmap, flock, and the host
//! memory the device may DMA — behind one small trait, [`Kernel`], with two implementations:
//!
//! - [`DeviceFile`]: the real `/dev/tenstorrent/N` (system calls on its fd);
//! - `sim_kernel::SimKernel` (feature `sim`): the simulator answers the same ioctls the way
//!   tt-kmd documents them, and its mmaps are real shared mappings of the simulator's L1,
//!   registers, DRAM and sysmem.
//!
//! Everything above this trait ([`super::TtKmdDevice`], the command-queue backend) is the same
//! code on a card and in CI.
#![allow(unsafe_code)] // BAR/mmap layer: docs/design.md, "Where `unsafe` lives"

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::{MmapOptions, MmapRaw};
use nix::errno::Errno;
use nix::fcntl::Flock;
use nix::sys::ioctl::ioctl_num_type;

use super::error::{Result, TtKmdError};

/// Where tt-kmd creates its device nodes.
pub const DEVICE_DIR: &str = "/dev/tenstorrent";

/// How to open the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFlags {
    /// Power-aware open (`O_APPEND`, tt-kmd 2.6.0+): the fd starts at power state 0 and asks for
    /// power with SET_POWER_STATE. Older drivers ignore the flag (a legacy open).
    pub power_aware: bool,
    /// Exclusive open (`O_EXCL`, tt-kmd 2.10.0+): refused with EAGAIN while any other
    /// fd is open. Older drivers ignore it (the flock still makes us the only owner).
    pub exclusive: bool,
}

impl Default for OpenFlags {
    fn default() -> Self {
        Self { power_aware: true, exclusive: false }
    }
}

impl OpenFlags {
    /// The `open(2)` flags these ask for (with `O_RDWR`). Always `O_NONBLOCK`: tt-kmd 2.10.0
    /// admits an open like a reader/writer lock (`admit_chardev_open`, `chardev.c` at
    /// ttkmd-2.10.0): a plain open waits while another fd holds the device with `O_EXCL`, an
    /// `O_EXCL` open waits until no other fd is open, and `O_NONBLOCK` turns either wait into
    /// EAGAIN, which [`DeviceFile::open`] reports with the holders' pids. tt-kmd reads no
    /// other use of the flag (`f_flags` is read only at open), and older drivers ignore it.
    pub fn open_flags(self) -> libc::c_int {
        let mut f = libc::O_CLOEXEC | libc::O_NONBLOCK;
        if self.power_aware {
            f |= libc::O_APPEND;
        }
        if self.exclusive {
            f |= libc::O_EXCL;
        }
        f
    }

    /// The error for an open tt-kmd refused with EAGAIN (see [`Self::open_flags`]), naming the
    /// processes that hold the device: `holders` says who, and from where.
    pub(crate) fn refused(self, path: PathBuf, holders: String) -> TtKmdError {
        if self.exclusive {
            TtKmdError::OpenElsewhere { path, holders }
        } else {
            TtKmdError::HeldExclusively { path, holders }
        }
    }
}

/// tt-kmd's list of the processes with the device open: `/proc/driver/tenstorrent/N/pids`, one
/// pid per open fd (`pids_proc_show`, `enumerate.c`; created in `chardev.c` since
/// ttkmd-2.5.0), N the number of the device node (`/dev/tenstorrent/N`).
pub fn pids_file(node: &Path) -> Option<PathBuf> {
    let node = std::fs::canonicalize(node).unwrap_or_else(|_| node.to_owned());
    let n: u32 = node.file_name()?.to_str()?.parse().ok()?;
    Some(Path::new("/proc/driver/tenstorrent").join(n.to_string()).join("pids"))
}

/// Who holds the device at `node`, for a refused open: its pids from tt-kmd's `pids` file, or
/// why they are unknown.
fn holders_of(node: &Path) -> String {
    let Some(file) = pids_file(node) else {
        return "another process (its pid is unknown: the node is not named /dev/tenstorrent/N)".into();
    };
    match std::fs::read_to_string(&file) {
        Ok(text) => {
            let mut pids: Vec<u32> = text.split_whitespace().filter_map(|p| p.parse().ok()).collect();
            pids.sort_unstable();
            pids.dedup();
            describe_pids(&pids, &file.display().to_string())
        }
        Err(e) => format!(
            "another process (its pid is unknown: {} cannot be read, {e}; tt-kmd 2.5.0 and later keep it)",
            file.display()
        ),
    }
}

/// The pids of a `pids` file's text but this process's, sorted, each once.
pub(crate) fn other_pids_in(text: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut pids: Vec<u32> = text.split_whitespace().filter_map(|p| p.parse().ok()).filter(|&p| p != me).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// "pid 42 (from SOURCE)", "pids 42, 43 (from SOURCE)", or "another process" if none is listed.
pub(crate) fn describe_pids(pids: &[u32], source: &str) -> String {
    let list = pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    match pids.len() {
        0 => format!("another process (none listed in {source})"),
        1 => format!("pid {list} (from {source})"),
        _ => format!("pids {list} (from {source})"),
    }
}

/// Why a device's clock stands still.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClockStop {
    /// It may move again: its process is stopped (SIGSTOP, a debugger).
    Paused(String),
    /// It will not: its process ended or stopped serving.
    Ended(String),
}

/// One open tt-kmd device as user space sees it.
pub trait Kernel: Send + Sync + std::fmt::Debug {
    /// The device this was opened from (for messages).
    fn path(&self) -> &Path;
    /// `ioctl(fd, request, arg)`: `arg` holds the request's in/out struct, followed by spare
    /// bytes in case a driver writes more than the struct we mirror.
    fn ioctl(&self, request: ioctl_num_type, arg: &mut [u8]) -> std::result::Result<(), Errno>;
    /// `mmap(len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset)`.
    fn mmap(&self, offset: u64, len: usize) -> std::io::Result<MmapRaw>;
    /// `flock(fd, LOCK_EX | LOCK_NB)`: one owner per device, held until the device file is
    /// dropped; says who holds it otherwise.
    fn lock_exclusive(&self) -> Result<()>;
    /// Every process with the device open, for messages ("pids 4242, 4343 (from SOURCE)"):
    /// tt-kmd's `pids` file on a card.
    fn holders(&self) -> String;
    /// The pids other than this process's with the device open (tt-kmd's `pids` file on a
    /// card), or why they cannot be known (the message says, for a refusal).
    fn other_pids(&self) -> std::result::Result<Vec<u32>, String>;
    /// How to find the device again once this fd is closed: its reset marker, and its node
    /// ([`Locator`]). A reset sequence closes the fd that sent the reset first.
    fn locator(&self) -> Box<dyn Locator>;
    /// At least `len` bytes of host memory for the device to reach after PIN_PAGES (one 1 GiB
    /// huge page when the system has one, [`crate::sysmem::alloc_contiguous`]; the
    /// simulator's sysmem file in simulation). Contents unspecified.
    fn alloc_dma_memory(&self, len: usize) -> std::io::Result<DmaMemory>;
    /// How the host's IOMMU treats the DMA of the device at PCI address `pci`, which decides
    /// what PIN_PAGES can pin.
    fn iommu(&self, pci: &str) -> Iommu;
    /// The board and harvesting, where the kernel side knows them without ARC (the
    /// simulator's device names them); `None` on a card, where ARC's telemetry says.
    fn board(&self) -> Option<(cqlab_abi::soc::Board, cqlab_abi::soc::Harvesting)> {
        None
    }
    /// Whether CONFIGURE_TLB takes multicast windows (a card does).
    fn multicast_tlbs(&self) -> bool {
        true
    }
    /// The device's own clock in cycles, where the kernel side can know it (the simulator's);
    /// `None` on hardware, where the backend estimates device time from wall time.
    fn device_clock(&self) -> Option<u64> {
        None
    }
    /// Why the device's clock stands still, where the kernel side can tell
    /// (the simulator's process stopped or ended); `None` where it cannot.
    fn clock_stop(&self) -> Option<ClockStop> {
        None
    }
    /// Returns once the device has acted on every store made so far to its registers. On a
    /// card the backend's read-back of the register does that (a non-posted read lands posted
    /// writes), so there is nothing more to wait for; the simulator applies register stores
    /// only between slices, so this waits for the next one.
    fn settle(&self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A device found again after a reset that closed it, as tt-kmd's `tools/reset.c` finds it
/// (ttkmd-2.4.0 to ttkmd-2.10.0): by its PCI address, never by the fd that sent the reset.
pub trait Locator: Send + std::fmt::Debug {
    /// Whether tt-kmd's reset marker is set on the device at PCI address `pci`
    /// (`dddd:bb:dd.f`): PCI_COMMAND's parity bit, which tt-kmd sets when a reset starts
    /// (`set_reset_marker`, `pcie.c` at ttkmd-2.10.0) and the chip's reset clears. `None` while
    /// the device is off the bus (a reset that re-enumerates the card).
    fn reset_marker(&self, pci: &str) -> std::io::Result<Option<bool>>;
    /// The nodes that may show the device now, the one it was opened from first (a card that
    /// re-enumerated may come back as another `/dev/tenstorrent/N`).
    fn nodes(&self) -> Vec<PathBuf>;
    /// `node` opened as `tools/reset.c` opens it (`O_RDWR | O_APPEND`; here also
    /// `O_NONBLOCK`), nothing else: no flock and no ioctl, so a device that waits for
    /// POST_RESET (whose LOCK_CTL and SET_POWER_STATE answer ENODEV) can be opened.
    fn open_raw(&self, node: &Path) -> Result<Box<dyn Kernel>>;
}

/// A card's [`Locator`]: sysfs for the marker, `/dev/tenstorrent` for the nodes.
#[derive(Debug)]
struct CardLocator {
    node: PathBuf,
}

impl Locator for CardLocator {
    fn reset_marker(&self, pci: &str) -> std::io::Result<Option<bool>> {
        sysfs_reset_marker(pci)
    }

    fn nodes(&self) -> Vec<PathBuf> {
        let mut nodes = vec![self.node.clone()];
        let mut numbered: Vec<(u32, PathBuf)> = std::fs::read_dir(DEVICE_DIR)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
            .collect();
        numbered.sort();
        nodes.extend(numbered.into_iter().map(|(_, p)| p).filter(|p| *p != self.node));
        nodes
    }

    fn open_raw(&self, node: &Path) -> Result<Box<dyn Kernel>> {
        Ok(Box::new(DeviceFile::open(node, OpenFlags { power_aware: true, exclusive: false })?))
    }
}

/// Host memory for DMA ([`Kernel::alloc_dma_memory`]): `map` may be longer than asked (a
/// whole huge page).
#[derive(Debug)]
pub struct DmaMemory {
    pub map: MmapRaw,
    pub pages: crate::sysmem::PageKind,
}

/// Whether an IOMMU translates a device's DMA. tt-kmd pins any pages when one does, and only
/// physically contiguous ones otherwise, passthrough (an identity domain) included
/// (`is_iommu_translated` and `ioctl_pin_pages`, `memory.c` at ttkmd-2.10.0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Iommu {
    /// Translated: the sysfs group type (`DMA`, `DMA-FQ`, ...).
    Translated(String),
    /// An identity domain (`iommu=pt`): addresses pass untranslated.
    Passthrough,
    /// The device is in no IOMMU group: no IOMMU.
    Absent,
    /// Unknown (sysfs could not say; the simulator's device).
    Unknown(String),
}

impl Iommu {
    /// Whether tt-kmd needs physically contiguous memory to pin (`None`: unknown).
    pub fn needs_contiguous(&self) -> Option<bool> {
        match self {
            Self::Translated(_) => Some(false),
            Self::Passthrough | Self::Absent => Some(true),
            Self::Unknown(_) => None,
        }
    }
}

impl std::fmt::Display for Iommu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Translated(t) => write!(f, "an IOMMU translates its DMA (group type {t})"),
            Self::Passthrough => f.write_str("its IOMMU group is in passthrough (identity), which translates nothing"),
            Self::Absent => f.write_str("it is in no IOMMU group: no IOMMU translates its DMA"),
            Self::Unknown(why) => write!(f, "whether an IOMMU translates its DMA is unknown ({why})"),
        }
    }
}

/// The IOMMU state of PCI device `pci` from sysfs (`iommu_group/type`).
fn sysfs_iommu(pci: &str) -> Iommu {
    let group = Path::new("/sys/bus/pci/devices").join(pci).join("iommu_group");
    if !Path::new("/sys/bus/pci/devices").join(pci).exists() {
        return Iommu::Unknown(format!("/sys/bus/pci/devices/{pci} does not exist"));
    }
    if !group.exists() {
        return Iommu::Absent;
    }
    match std::fs::read_to_string(group.join("type")) {
        Ok(t) if t.trim() == "identity" => Iommu::Passthrough,
        Ok(t) => Iommu::Translated(t.trim().to_owned()),
        Err(e) => Iommu::Unknown(format!("{}: {e}", group.join("type").display())),
    }
}

/// The real device file.
#[derive(Debug)]
pub struct DeviceFile {
    path: PathBuf,
    file: File,
    /// The owner's lock, once taken ([`Kernel::lock_exclusive`]).
    lock: Mutex<Option<Flock<File>>>,
}

impl DeviceFile {
    /// Opens `path` read-write with `flags`, never waiting. A missing node is
    /// [`TtKmdError::NotPresent`]; an open tt-kmd refuses because of another process's fds
    /// ([`OpenFlags::open_flags`]) says whose.
    pub fn open(path: &Path, flags: OpenFlags) -> Result<Self> {
        let path = path.to_owned();
        match File::options().read(true).write(true).custom_flags(flags.open_flags()).open(&path) {
            Ok(file) => Ok(Self { path, file, lock: Mutex::new(None) }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let detail = absence_detail(&path);
                Err(TtKmdError::NotPresent { path, detail })
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                let holders = holders_of(&path);
                Err(flags.refused(path, holders))
            }
            Err(source) => Err(TtKmdError::Open { path, source }),
        }
    }
}

impl Kernel for DeviceFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn ioctl(&self, request: ioctl_num_type, arg: &mut [u8]) -> std::result::Result<(), Errno> {
        // SAFETY: tt-kmd's requests take a pointer to their in/out struct and touch at most
        // that struct (plus what an older driver may write past our mirror); `arg` is a live,
        // exclusively borrowed buffer holding the struct with spare bytes after it (see
        // `TtKmdDevice::call`), and the fd stays open for the whole call.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), request, arg.as_mut_ptr()) };
        if rc < 0 {
            Err(Errno::last())
        } else {
            Ok(())
        }
    }

    fn mmap(&self, offset: u64, len: usize) -> std::io::Result<MmapRaw> {
        MmapOptions::new().offset(offset).len(len).map_raw(&self.file)
    }

    fn lock_exclusive(&self) -> Result<()> {
        // Checked and taken under one lock: a second guard dropped would unlock the description.
        let mut held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some(super::owner::lock_exclusive(&self.file, &self.path)?);
        }
        Ok(())
    }

    fn holders(&self) -> String {
        holders_of(&self.path)
    }

    fn other_pids(&self) -> std::result::Result<Vec<u32>, String> {
        let Some(file) = pids_file(&self.path) else {
            return Err(format!(
                "{} is not named /dev/tenstorrent/N, so its pids file is unknown",
                self.path.display()
            ));
        };
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("{} cannot be read ({e}; tt-kmd 2.5.0 and later keep it)", file.display()))?;
        Ok(other_pids_in(&text))
    }

    fn locator(&self) -> Box<dyn Locator> {
        Box::new(CardLocator { node: self.path.clone() })
    }

    fn alloc_dma_memory(&self, len: usize) -> std::io::Result<DmaMemory> {
        let (map, pages) = crate::sysmem::alloc_contiguous(len)?;
        Ok(DmaMemory { map: MmapRaw::from(map), pages })
    }

    fn iommu(&self, pci: &str) -> Iommu {
        sysfs_iommu(pci)
    }
}

/// Byte offset of PCI_COMMAND in a device's config space.
const PCI_COMMAND: u64 = 4;
/// PCI_COMMAND_PARITY: the bit tt-kmd uses as its reset marker (`pcie.c` at ttkmd-2.10.0;
/// its `tools/reset.c` polls bit 6 of config byte 4 the same way).
const PCI_COMMAND_PARITY: u16 = 0x40;

/// The reset marker of PCI device `pci`, read from its sysfs config space (whose first 64
/// bytes any user may read); `None` while `/sys/bus/pci/devices/BDF` is missing (off the bus,
/// as `tools/reset.c` tells it at ttkmd-2.10.0). A device in the middle of its reset may
/// answer all ones: the marker then reads set, and the caller waits on.
fn sysfs_reset_marker(pci: &str) -> std::io::Result<Option<bool>> {
    use std::os::unix::fs::FileExt;
    let path = format!("/sys/bus/pci/devices/{pci}/config");
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(std::io::Error::new(e.kind(), format!("{path}: {e}"))),
    };
    let mut word = [0u8; 2];
    file.read_exact_at(&mut word, PCI_COMMAND).map_err(|e| std::io::Error::new(e.kind(), format!("{path}: {e}")))?;
    Ok(Some(u16::from_le_bytes(word) & PCI_COMMAND_PARITY != 0))
}

/// Why a device node is missing, for the NotPresent error.
pub(crate) fn absence_detail(path: &Path) -> String {
    let dir = Path::new(DEVICE_DIR);
    if !path.starts_with(dir) {
        return "no such device node".into();
    }
    match std::fs::read_dir(dir) {
        Err(_) => {
            format!("{DEVICE_DIR} is missing: the tt-kmd driver is not loaded or no Tenstorrent card is installed")
        }
        Ok(entries) => {
            let mut present: Vec<String> =
                entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            present.sort();
            if present.is_empty() {
                format!("{DEVICE_DIR} is empty: tt-kmd is loaded but found no card")
            } else {
                format!("devices present in {DEVICE_DIR}: {}", present.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_open_is_nonblocking_and_refusals_name_ttkmds_pids_file() {
        for flags in [OpenFlags::default(), OpenFlags { power_aware: false, exclusive: true }] {
            assert_ne!(flags.open_flags() & libc::O_NONBLOCK, 0, "{flags:?}");
        }
        assert_eq!(pids_file(Path::new("/dev/tenstorrent/3")), Some(PathBuf::from("/proc/driver/tenstorrent/3/pids")));
        assert_eq!(describe_pids(&[42], "F"), "pid 42 (from F)");
        // tt-kmd writes one pid per open fd (`pids_proc_show`, enumerate.c at ttkmd-2.10.0).
        let me = std::process::id();
        assert_eq!(other_pids_in(&format!("{me}\n42\n{me}\n42\n7\n")), [7, 42]);
        assert_eq!(describe_pids(&[42, 43], "F"), "pids 42, 43 (from F)");
        let err = OpenFlags::default().refused("/dev/tenstorrent/3".into(), "pid 42 (from F)".into());
        assert_eq!(
            err.to_string(),
            "device /dev/tenstorrent/3 is held exclusively (O_EXCL) by pid 42 (from F): tt-kmd admits no other \
             open until that process closes it"
        );
    }
}
