//! tt-kmd against the simulator: a [`Kernel`] whose ioctls are answered the way tt-kmd 2.10.1
//! (`ioctl.h` at 4af71921) documents them, for a device that is a `cqlab_sim::shared` device
//! directory (`cqlab sim ttkmd --dev PATH` runs the chip on it). Its mmaps are real shared
//! mappings of the simulator's memory files, so the tt-kmd backend's stores land straight in
//! simulated L1, registers and DRAM, and the device's writes to sysmem land in the host's
//! pinned buffer.
//!
//! | ioctl | answer |
//! |---|---|
//! | GET_DRIVER_INFO | API 2, tt-kmd 2.10.1, or the version the device's `ctl` page names ([`set_driver_version`]: the kernel then behaves as that version where the rows below say so) |
//! | GET_DEVICE_INFO | vendor 0x1e52 (Tenstorrent), the simulated chip's PCI device id (Wormhole 0x401e, Blackhole 0xb140), bus 0 |
//! | QUERY_MAPPINGS | no BAR resources (device memory is reached through TLB windows; ARC is not mapped, so the board and harvesting come from the device's `ctl` page: [`Kernel::board`]) |
//! | ALLOCATE_TLB / CONFIGURE_TLB / FREE_TLB | [`WINDOW_SIZE`] (2 MiB) unicast windows from the chip's pool, shared by every process (Wormhole 10, Blackhole 201; ENOMEM when none is free), on either NOC, onto a Tensix tile's L1 (local 0), the 2 MiB piece holding its debug-register page (local `DEBUG_REGS_BASE` rounded down: that page is mapped at its offset, the rest of the window is `PROT_NONE`, so a stray access faults instead of landing nowhere), or any 2 MiB of a DRAM channel (the tile's coordinates as the chip translates them); a reconfigured window is re-mmapped in place onto its new target |
//! | PIN_PAGES / UNPIN_PAGES | memory from [`Kernel::alloc_dma_memory`] (the `sysmem` file), placed at its top: IOVA and NOC address = offset in sysmem, the local address at the PCIe endpoint, not 0 whenever sysmem has room (as on a card where others pinned first) |
//! | LOCK_CTL | per-index flock on `lock-ctl-N` (ACQUIRE, RELEASE, TEST, ACQUIRE_BLOCKING) |
//! | RESET_DEVICE | as `ioctl_reset_device` in `chardev.c` at ttkmd-2.10.0: USER/ASIC/ASIC_DMC_RESET bump the reset generation (every other fd, in any process, answers ENODEV for good, mmap too; as 2.6.0 to 2.9.x, `chardev.c` at ttkmd-2.8.0, the fd that sent the reset too, since they move the generation without it; as 2.4.x and 2.5.x, which have no reset generation, no fd), zap this fd's window mappings (they point at nothing; the windows stay allocated), set the reset marker (`ctl::RESET_MARKER`, PCI_COMMAND's parity bit on a card: `set_reset_marker`, `pcie.c`) and the device's `needs_hw_init` (every fd's ioctls but info and reset answer ENODEV). ASIC_RESET and ASIC_DMC_RESET also ask the simulator to reset the chip (cores held, NOC drained; L1 and DRAM kept), which clears the marker when done, as a card's reset clears its config space; USER_RESET does not (on a card a BMC resets the chip), so the marker stays set. POST_RESET clears `needs_hw_init` (before 2.6.0 only with the marker clear) and succeeds only if the marker is clear (`is_reset_marker_zero`). RESTORE_STATE is a no-op. As 2.3.x and older (`chardev.c` at ttkmd-2.3.0), USER/ASIC/ASIC_DMC_RESET and POST_RESET answer EINVAL |
//! | SET_POWER_STATE | argument checked, state kept |
//! | open(2) | admitted as `admit_chardev_open` (`chardev.c` at ttkmd-2.10.0) admits it: a plain open waits while an `O_EXCL` fd is open, an `O_EXCL` open until no other fd is; `O_NONBLOCK` makes either EAGAIN (a flock on the device's `fds` file, its holders from `/proc/locks`, the stand-in for tt-kmd's `pids` file). As a driver before 2.10.0, `O_EXCL` is ignored |
//!
//! What it cannot catch: multicast TLB windows (a store into one mapping cannot land in many
//! cores: CONFIGURE_TLB answers EOPNOTSUPP), ordering or write-combining effects of a real PCIe
//! link (host stores are visible to the simulator in program order), timing (host time is
//! whatever the host does), and ALLOCATE_DMA_BUF, MAP_PEER_BAR, SET_NOC_CLEANUP and
//! EXPORT_TLB_DMABUF (EOPNOTSUPP).
#![allow(unsafe_code)] // BAR/mmap layer: docs/design.md, "Where `unsafe` lives"

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cqlab_abi::arch::Noc;
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::{Board, ChipLayout, Harvesting, TileKind};
use cqlab_sim::shared::{ctl, Ctl, Paths, Shape, REGS_PAGE, REGS_WINDOW_BASE, WINDOW_SIZE};
use memmap2::{MmapOptions, MmapRaw};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::ioctl::ioctl_num_type;
use zerocopy::{FromBytes, IntoBytes};

use super::error::{Result, TtKmdError};
use super::ioctl::{self as sys, IoctlArg};
use super::kernel::{describe_pids, Kernel, OpenFlags};

const TENSTORRENT_VENDOR_ID: u16 = cqlab_abi::arch::bar::PCI_VENDOR_ID;
/// The tt-kmd version the simulator answers as, unless the device names another
/// ([`set_driver_version`]).
pub const SIM_DRIVER_VERSION: (u8, u8, u8) = (2, 10, 1);

/// Makes the simulated device at `dir` answer and behave as tt-kmd `version` for every open
/// from now on (its `ctl` page keeps it): how a reset treats the fd that sent it, and whether
/// `O_EXCL` is honoured, differ between versions (module docs).
pub fn set_driver_version(dir: &Path, version: (u8, u8, u8)) -> std::io::Result<()> {
    let (word, v) = driver_version_word(version);
    Ctl::open(&Paths::new(dir).ctl())?.store(word, v);
    Ok(())
}

/// The `ctl` word (index, value) that names `version` ([`set_driver_version`]), for a device
/// being created (`cqlab_sim::shared::Runner::create_with`): set before any open can happen.
pub fn driver_version_word(version: (u8, u8, u8)) -> (usize, u64) {
    let (a, b, c) = version;
    (ctl::DRIVER_VERSION, (a as u64) << 16 | (b as u64) << 8 | c as u64)
}

/// The tt-kmd versions the simulated kernel can answer as: from 2.0.0, the first release to
/// report a semantic version beside ioctl API 2 (this kernel always answers API 2 with one, so
/// it cannot pass for a 1.x driver), to [`SIM_DRIVER_VERSION`], whose `ioctl.h` is the one
/// mirrored (`ioctl.rs`): what later releases change is not known here.
pub const SIM_DRIVER_VERSIONS: std::ops::RangeInclusive<(u8, u8, u8)> = (2, 0, 0)..=SIM_DRIVER_VERSION;

/// The tt-kmd version the device's `ctl` page names ([`set_driver_version`]), or the default.
fn driver_version(ctl: &Ctl) -> (u8, u8, u8) {
    match ctl.load(ctl::DRIVER_VERSION) {
        0 => SIM_DRIVER_VERSION,
        v => ((v >> 16) as u8, (v >> 8) as u8, v as u8),
    }
}

/// tt-kmd 2.4.0 brought USER_RESET, ASIC_RESET, ASIC_DMC_RESET and POST_RESET (`ioctl.h` at
/// ttkmd-2.4.0); before it `ioctl_reset_device` knows RESTORE_STATE, RESET_PCIE_LINK and
/// CONFIG_WRITE only and answers EINVAL to any other flag (`chardev.c` at ttkmd-2.3.0).
const RESET_SEQUENCE_SINCE: (u8, u8, u8) = (2, 4, 0);
/// tt-kmd 2.6.0 brought the reset generation (`reset_gen`, `chardev.c` at ttkmd-2.6.0): fds
/// opened before a reset answer ENODEV, and while the device waits for POST_RESET only info and
/// reset ioctls pass.
const RESET_GEN_SINCE: (u8, u8, u8) = (2, 6, 0);
/// tt-kmd 2.7.0 checks the reset generation in mmap too (`tt_cdev_mmap`, `chardev.c` at
/// ttkmd-2.7.0; not at ttkmd-2.6.0).
const MMAP_RESET_GEN_SINCE: (u8, u8, u8) = (2, 7, 0);
/// tt-kmd 2.10.0 keeps the fd that sent a reset valid (`bump_reset_gen`, `chardev.c` at
/// ttkmd-2.10.0) and honours `O_EXCL` (`admit_chardev_open`).
const RESETTER_KEEPS_FD_SINCE: (u8, u8, u8) = (2, 10, 0);
/// How long a register write waits for the simulator to take it.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// One mmap of a TLB window: where it is, so CONFIGURE_TLB can re-mmap it in place.
#[derive(Debug, Clone, Copy)]
struct View {
    addr: usize,
    len: usize,
}

#[derive(Debug)]
struct Tlb {
    /// What the window shows, once configured.
    target: Option<Target>,
    uc: Option<View>,
    wc: Option<View>,
    /// This fd's claim on the window (`tlb-ID`), dropped when it is freed or the fd closes.
    _claim: Flock<File>,
}

/// What a configured window shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The `l1` file from this offset (one tile's 2 MiB stride).
    L1(u64),
    /// The `dram` file from this offset.
    Dram(u64),
    /// One page of the `regs` file (at `page`), `at` bytes into the window.
    Regs { page: u64, at: u64 },
}

#[derive(Debug, Default)]
struct State {
    tlbs: HashMap<u32, Tlb>,
    /// Mappings handed out by `alloc_dma_memory` (address, length, offset in sysmem): what
    /// PIN_PAGES can pin.
    dma: Vec<(usize, usize, u64)>,
    pinned: Vec<(u64, u64)>,
    locks: HashMap<u8, Flock<File>>,
    /// The device's reset generation when this fd opened or last reset (`open_reset_gen` in
    /// tt-kmd: others' resets invalidate it).
    reset_gen: u64,
    power: Option<sys::PowerState>,
}

/// The simulator's answer to tt-kmd.
#[derive(Debug)]
pub struct SimKernel {
    path: PathBuf,
    paths: Paths,
    ctl: CtlHandle,
    shape: Shape,
    layout: ChipLayout,
    /// Translated coordinates of every Tensix tile, in `l1` and `regs` order.
    tiles: Vec<Coord>,
    l1: File,
    regs: File,
    dram: File,
    sysmem: File,
    lock: File,
    /// The owner's lock on `lock`, once taken ([`Kernel::lock_exclusive`]).
    owner: Mutex<Option<Flock<File>>>,
    /// This fd's admission (`fds`, shared or exclusive): held as long as it is open.
    _admitted: Flock<File>,
    /// The tt-kmd version this fd's driver answers as and behaves like.
    driver: (u8, u8, u8),
    state: Mutex<State>,
}

/// `Ctl` with a Debug impl.
struct CtlHandle(Ctl);

impl std::fmt::Debug for CtlHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ctl")
    }
}

/// Opens a device file read-write, never through a symlink (`O_NOFOLLOW`).
fn open_rw(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

/// Opens (creating it 0600 if missing) a lock file of the device, never through a symlink.
fn open_lock(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// A device directory must be a real directory of this user, as `cqlab sim ttkmd` makes it:
/// another user's directory could hold files they swap or link under us.
fn check_owner(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir)?;
    let refuse = |why: String| std::io::Error::new(std::io::ErrorKind::PermissionDenied, why);
    if m.file_type().is_symlink() {
        return Err(refuse("is a symbolic link; a device directory must be a real directory".into()));
    }
    if !m.is_dir() {
        return Err(refuse("is not a directory".into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if m.uid() != me {
        return Err(refuse(format!(
            "is owned by uid {}, not by this user (uid {me}): refusing a device another user controls",
            m.uid()
        )));
    }
    Ok(())
}

impl SimKernel {
    /// Opens the simulated device at `dir` (a directory `cqlab sim ttkmd --dev DIR` serves)
    /// with the default flags.
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_with_flags(dir, OpenFlags::default())
    }

    /// Opens the simulated device at `dir` as `open(2)` with `flags.open_flags()` would open a
    /// card: admitted as tt-kmd admits opens ([`admit`]).
    pub fn open_with_flags(dir: &Path, flags: OpenFlags) -> Result<Self> {
        let paths = Paths::new(dir);
        let absent = |detail: String| TtKmdError::NotPresent { path: dir.to_owned(), detail };
        if dir.exists() {
            check_owner(dir).map_err(|source| TtKmdError::Open { path: dir.to_owned(), source })?;
        }
        let ctl = Ctl::open(&paths.ctl()).map_err(|e| {
            #[allow(unused_mut)]
            let mut detail =
                format!("no simulated device ({e}); start one with `cqlab sim ttkmd --dev {}`", dir.display());
            // A daemon's directory holds no tt-kmd device, and starting one
            // there would be refused: say what does hold it.
            #[cfg(feature = "daemon")]
            if let Some(h) = cqlab_sim::daemon::files::dir_holder(dir) {
                detail = format!("{h} holds it (`--device sim:{}` reaches a daemon)", dir.display());
            }
            // A directory that is there is no device yet, not missing
            // (helper-44: it read "does not exist").
            if dir.is_dir() {
                TtKmdError::NotRunning { path: dir.to_owned(), detail }
            } else {
                absent(detail)
            }
        })?;
        let shape = ctl.shape().ok_or_else(|| absent("the device files are not initialised yet".into()))?;
        if ctl.load(ctl::STOPPED) != 0 || !alive(&ctl) {
            let pid = ctl.load(ctl::PID);
            // A process stopped (SIGSTOP, a debugger) is there but still;
            // one that stopped serving (`STOPPED`) is not coming back.
            use crate::process_state::{self, ProcessState};
            let paused = ctl.load(ctl::STOPPED) == 0 && process_state::of(pid as u32) == ProcessState::Stopped;
            let detail = if paused {
                format!("the simulator (pid {pid}) is stopped (SIGSTOP or a debugger?); `kill -CONT {pid}` resumes it")
            } else {
                format!(
                    "the simulator (pid {pid}) is not running; start it with `cqlab sim ttkmd --dev {}`",
                    dir.display()
                )
            };
            return Err(TtKmdError::NotRunning { path: dir.to_owned(), detail });
        }
        let file = |p: PathBuf| open_rw(&p).map_err(|source| TtKmdError::Open { path: p, source });
        let lock_path = paths.lock();
        let lock = open_lock(&lock_path).map_err(|source| TtKmdError::Open { path: lock_path, source })?;
        let reset_gen = ctl.load(ctl::RESET_GEN);
        let driver = driver_version(&ctl);
        let admitted = admit(dir, flags, driver)?;
        let layout = shape.layout().map_err(|e| absent(format!("the device's chip: {e}")))?;
        let tiles = shape.tiles();
        Ok(SimKernel {
            layout,
            tiles,
            path: dir.to_owned(),
            l1: file(paths.l1())?,
            regs: file(paths.regs())?,
            dram: file(paths.dram())?,
            sysmem: file(paths.sysmem())?,
            paths,
            ctl: CtlHandle(ctl),
            shape,
            lock,
            owner: Mutex::new(None),
            _admitted: admitted,
            driver,
            state: Mutex::new(State { reset_gen, ..Default::default() }),
        })
    }

    /// The simulated chip's shape.
    pub fn shape(&self) -> Shape {
        self.shape.clone()
    }

    /// The simulated clock (device cycles).
    pub fn device_cycles(&self) -> u64 {
        self.ctl.0.load(ctl::NOW)
    }

    /// Whether the simulator process still runs (its heartbeat moves).
    pub fn simulator_alive(&self) -> bool {
        alive(&self.ctl.0)
    }

    fn target(&self, cfg: &sys::NocTlbConfig) -> std::result::Result<Target, Errno> {
        if cfg.mcast != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let noc = Noc::from_index(cfg.noc as u32).ok_or(Errno::EINVAL)?;
        if cfg.addr % WINDOW_SIZE != 0 {
            return Err(Errno::EINVAL);
        }
        let c = Coord::new(
            u8::try_from(cfg.x_end).map_err(|_| Errno::EINVAL)?,
            u8::try_from(cfg.y_end).map_err(|_| Errno::EINVAL)?,
        );
        // The tile the chip routes these coordinates to on that NOC.
        let tile = self.layout.resolve(noc, c).and_then(|t| self.layout.tile(t)).ok_or(Errno::EINVAL)?;
        match tile.kind {
            TileKind::Dram { bank, .. } => {
                let (_, channel_size) = self.shape.dram_channels();
                if cfg.addr >= channel_size {
                    return Err(Errno::EINVAL);
                }
                Ok(Target::Dram(bank as u64 * channel_size + cfg.addr))
            }
            TileKind::Tensix => {
                let i = self.tiles.iter().position(|&t| t == tile.translated).ok_or(Errno::EINVAL)? as u64;
                let regs_window = REGS_WINDOW_BASE & !(WINDOW_SIZE - 1);
                match cfg.addr {
                    0 => Ok(Target::L1(i * WINDOW_SIZE)),
                    a if a == regs_window => Ok(Target::Regs { page: i * REGS_PAGE, at: REGS_WINDOW_BASE - a }),
                    _ => Err(Errno::EINVAL),
                }
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// Maps `len` bytes at `addr` (inside a view this kernel handed out) in place: from `fd`
    /// at `off` shared, or anonymous with protection `prot` (`fd` -1).
    fn map_fixed(
        &self,
        addr: usize,
        len: usize,
        prot: libc::c_int,
        fd: libc::c_int,
        off: u64,
    ) -> std::result::Result<(), Errno> {
        let flags = if fd < 0 { libc::MAP_PRIVATE | libc::MAP_ANONYMOUS } else { libc::MAP_SHARED };
        // SAFETY: `addr..addr + len` lies inside a live mapping this kernel handed out for a
        // TLB window (the window's MmioWindow owns it and unmaps it only before FREE_TLB, which
        // forgets the view); MAP_FIXED replaces exactly those pages, so no memory outside the
        // view changes and its owner still unmaps the same range.
        let p = unsafe {
            libc::mmap(addr as *mut libc::c_void, len, prot, flags | libc::MAP_FIXED, fd, off as libc::off_t)
        };
        if p == libc::MAP_FAILED {
            return Err(Errno::last());
        }
        Ok(())
    }

    /// Points `view` at `target` (or at fresh anonymous memory for `None`), in place.
    fn remap(&self, view: View, target: Option<Target>) -> std::result::Result<(), Errno> {
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        match target {
            None => self.map_fixed(view.addr, view.len, rw, -1, 0),
            Some(Target::L1(off)) => self.map_fixed(view.addr, view.len, rw, self.l1.as_raw_fd(), off),
            Some(Target::Dram(off)) => self.map_fixed(view.addr, view.len, rw, self.dram.as_raw_fd(), off),
            Some(Target::Regs { page, at }) => {
                self.map_fixed(view.addr, view.len, libc::PROT_NONE, -1, 0)?;
                self.map_fixed(view.addr + at as usize, REGS_PAGE as usize, rw, self.regs.as_raw_fd(), page)
            }
        }
    }

    fn answer(&self, request: ioctl_num_type, arg: &mut [u8]) -> std::result::Result<(), Errno> {
        let mut st = self.state.lock().expect("not poisoned");
        // `tt_cdev_ioctl` (chardev.c at ttkmd-2.6.0 to 2.10.0): an fd opened before the last
        // reset is invalid for good; while the device needs POST_RESET, only info and reset
        // ioctls pass. 2.4.x and 2.5.x check neither (`chardev.c` at ttkmd-2.5.0).
        if self.driver >= RESET_GEN_SINCE {
            if self.ctl.0.load(ctl::RESET_GEN) != st.reset_gen {
                return Err(Errno::ENODEV);
            }
            let info = request == sys::req::GET_DEVICE_INFO || request == sys::req::GET_DRIVER_INFO;
            if self.ctl.0.load(ctl::NEEDS_HW_INIT) != 0 && !info && request != sys::req::RESET_DEVICE {
                return Err(Errno::ENODEV);
            }
        }
        match request {
            r if r == sys::req::GET_DRIVER_INFO => with::<sys::GetDriverInfo>(arg, |a| {
                let (major, minor, patch) = self.driver;
                let out = sys::GetDriverInfoOut {
                    output_size_bytes: size_of::<sys::GetDriverInfoOut>() as u32,
                    driver_version: sys::TENSTORRENT_DRIVER_VERSION,
                    driver_version_major: major,
                    driver_version_minor: minor,
                    driver_version_patch: patch,
                    reserved0: 0,
                };
                copy_out(&mut a.output, &out, a.input.output_size_bytes);
                Ok(())
            }),
            r if r == sys::req::GET_DEVICE_INFO => with::<sys::GetDeviceInfo>(arg, |a| {
                let out = sys::GetDeviceInfoOut {
                    output_size_bytes: size_of::<sys::GetDeviceInfoOut>() as u32,
                    vendor_id: TENSTORRENT_VENDOR_ID,
                    device_id: self.shape.board.arch().params().bar.pci_device_id,
                    max_dma_buf_size_log2: 22,
                    ..Default::default()
                };
                copy_out(&mut a.output, &out, a.input.output_size_bytes);
                Ok(())
            }),
            r if r == sys::req::QUERY_MAPPINGS => with::<sys::QueryMappingsBuf>(arg, |a| {
                let n = (a.input.output_mapping_count as usize).min(a.mappings.len());
                a.mappings[..n].fill(sys::Mapping::default());
                Ok(())
            }),
            r if r == sys::req::SET_POWER_STATE => with::<sys::PowerState>(arg, |a| {
                if a.argsz as usize != size_of::<sys::PowerState>() || a.flags != 0 || a.reserved0 != 0 {
                    return Err(Errno::EINVAL);
                }
                if a.validity > sys::power_validity(15, 14) {
                    return Err(Errno::EINVAL);
                }
                st.power = Some(*a);
                Ok(())
            }),
            r if r == sys::req::LOCK_CTL => with::<sys::LockCtl>(arg, |a| {
                let index = a.input.index;
                if index >= sys::RESOURCE_LOCK_COUNT {
                    return Err(Errno::EINVAL);
                }
                let value = self.lock_ctl(&mut st, a.input.flags, index)?;
                let out = sys::LockCtlOut { value, reserved: [0; 3] };
                copy_out(&mut a.output, &out, a.input.output_size_bytes);
                Ok(())
            }),
            r if r == sys::req::ALLOCATE_TLB => with::<sys::AllocateTlb>(arg, |a| {
                if a.input.size != WINDOW_SIZE {
                    return Err(Errno::EINVAL);
                }
                let (id, claim) = self.claim_window(&st)?;
                st.tlbs.insert(id, Tlb { target: None, uc: None, wc: None, _claim: claim });
                a.output = sys::AllocateTlbOut {
                    id,
                    mmap_offset_uc: mmap_offset(id, false),
                    mmap_offset_wc: mmap_offset(id, true),
                    ..Default::default()
                };
                Ok(())
            }),
            r if r == sys::req::CONFIGURE_TLB => with::<sys::ConfigureTlb>(arg, |a| {
                let target = self.target(&a.input.config)?;
                let tlb = st.tlbs.get_mut(&a.input.id).ok_or(Errno::EINVAL)?;
                tlb.target = Some(target);
                let views = [tlb.uc, tlb.wc];
                for v in views.into_iter().flatten() {
                    self.remap(v, Some(target))?;
                }
                Ok(())
            }),
            r if r == sys::req::FREE_TLB => {
                with::<sys::FreeTlb>(arg, |a| st.tlbs.remove(&a.input.id).map(|_| ()).ok_or(Errno::EINVAL))
            }
            r if r == sys::req::PIN_PAGES => with::<sys::PinPagesExtended>(arg, |a| {
                let valid = sys::PIN_PAGES_CONTIGUOUS
                    | sys::PIN_PAGES_NOC_DMA
                    | sys::PIN_PAGES_NOC_TOP_DOWN
                    | sys::PIN_PAGES_READ_ONLY;
                let i = &a.input;
                if i.flags & !valid != 0 || i.size == 0 || i.virtual_address % 4096 != 0 || i.size % 4096 != 0 {
                    return Err(Errno::EINVAL);
                }
                if i.flags & sys::PIN_PAGES_READ_ONLY != 0 {
                    return Err(Errno::EOPNOTSUPP); // no IOMMU translation to enforce it with
                }
                if st.pinned.contains(&(i.virtual_address, i.size)) {
                    return Err(Errno::EEXIST);
                }
                // Only the simulator's sysmem is reachable by the simulated device.
                let (va, size) = (i.virtual_address as usize, i.size as usize);
                let &(base, _, at) =
                    st.dma.iter().find(|&&(b, l, _)| va >= b && va + size <= b + l).ok_or(Errno::EFAULT)?;
                let offset = at + (va - base) as u64;
                let noc = i.flags & (sys::PIN_PAGES_NOC_DMA | sys::PIN_PAGES_NOC_TOP_DOWN) != 0;
                let out =
                    sys::PinPagesOutExtended { physical_address: offset, noc_address: if noc { offset } else { 0 } };
                st.pinned.push((i.virtual_address, i.size));
                copy_out(&mut a.output, &out, a.input.output_size_bytes);
                Ok(())
            }),
            r if r == sys::req::UNPIN_PAGES => with::<sys::UnpinPages>(arg, |a| {
                let key = (a.input.virtual_address, a.input.size);
                let at = st.pinned.iter().position(|&p| p == key).ok_or(Errno::EINVAL)?;
                st.pinned.remove(at);
                Ok(())
            }),
            r if r == sys::req::RESET_DEVICE => with::<sys::ResetDevice>(arg, |a| {
                let c = &self.ctl.0;
                if self.driver < RESET_SEQUENCE_SINCE && a.input.flags > sys::RESET_DEVICE_CONFIG_WRITE {
                    return Err(Errno::EINVAL);
                }
                let ok = match a.input.flags {
                    sys::RESET_DEVICE_RESTORE_STATE => true,
                    // USER_RESET only announces a reset something else performs (a BMC):
                    // the marker is set and stays set.
                    sys::RESET_DEVICE_USER_RESET => {
                        self.begin_reset(&mut st)?;
                        c.store(ctl::NEEDS_HW_INIT, 1);
                        true
                    }
                    // `wormhole_reset` / `blackhole_reset`: the marker, then ARC's reset of the
                    // chip; the ioctl returns without waiting for it.
                    sys::RESET_DEVICE_ASIC_RESET | sys::RESET_DEVICE_ASIC_DMC_RESET => {
                        self.begin_reset(&mut st)?;
                        c.word(ctl::RESET_REQUESTED).fetch_add(1, Ordering::AcqRel);
                        c.store(ctl::NEEDS_HW_INIT, 1);
                        c.load(ctl::STOPPED) == 0
                    }
                    // Clears `needs_hw_init` whatever the marker says (before 2.6.0 only with it
                    // clear: `chardev.c` at ttkmd-2.5.0); succeeds only if it is clear.
                    sys::RESET_DEVICE_POST_RESET => {
                        let clear = c.load(ctl::RESET_MARKER) == 0;
                        if clear || self.driver >= RESET_GEN_SINCE {
                            c.store(ctl::NEEDS_HW_INIT, 0);
                        }
                        clear
                    }
                    sys::RESET_DEVICE_RESET_PCIE_LINK | sys::RESET_DEVICE_CONFIG_WRITE => {
                        return Err(Errno::EOPNOTSUPP)
                    }
                    _ => return Err(Errno::EINVAL),
                };
                let out = sys::ResetDeviceOut {
                    output_size_bytes: size_of::<sys::ResetDeviceOut>() as u32,
                    result: !ok as u32,
                };
                copy_out(&mut a.output, &out, a.input.output_size_bytes);
                Ok(())
            }),
            r if r == sys::req::ALLOCATE_DMA_BUF
                || r == sys::req::FREE_DMA_BUF
                || r == sys::req::MAP_PEER_BAR
                || r == sys::req::SET_NOC_CLEANUP
                || r == sys::req::EXPORT_TLB_DMABUF
                || r == sys::req::GET_HARVESTING =>
            {
                Err(Errno::EOPNOTSUPP)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    /// A free 2 MiB window of the device's pool, as `tenstorrent_device_allocate_tlb` finds one
    /// (`tlb.c` at ttkmd-2.10.0): the chip's windows of that size but the driver's own
    /// (Wormhole 10, Blackhole 201: `BarLayout::driver_windows`), shared by every process; the
    /// first free one is claimed (an exclusive flock on `tlb-ID`, so a process that dies frees
    /// its windows as closing the fd does), and none left is ENOMEM.
    fn claim_window(&self, st: &State) -> std::result::Result<(u32, Flock<File>), Errno> {
        let pool = self.shape.board.arch().params().bar.driver_windows(cqlab_abi::arch::bar::WINDOW_2M_LOG2);
        for id in (0..pool).filter(|id| !st.tlbs.contains_key(id)) {
            let file = open_lock(&self.paths.dir.join(format!("tlb-{id}"))).map_err(|_| Errno::EIO)?;
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(claim) => return Ok((id, claim)),
                Err((_, Errno::EWOULDBLOCK)) => {}
                Err((_, e)) => return Err(e),
            }
        }
        Err(Errno::ENOMEM)
    }

    /// What every USER/ASIC reset does first (`ioctl_reset_device`, chardev.c at ttkmd-2.10.0):
    /// a new reset generation that this fd keeps (`bump_reset_gen`: every other fd is invalid
    /// from now on), this fd's mappings zapped (the windows stay allocated, showing nothing),
    /// and the reset marker set (`set_reset_marker`, pcie.c). As 2.6.0 to 2.9.x, the new
    /// generation leaves this fd behind too (`atomic_long_inc(&reset_gen)`, chardev.c at
    /// ttkmd-2.8.0): it answers ENODEV from now on, POST_RESET included. As 2.4.x and 2.5.x,
    /// nothing moves and nothing is zapped (chardev.c at ttkmd-2.5.0).
    fn begin_reset(&self, st: &mut State) -> std::result::Result<(), Errno> {
        let c = &self.ctl.0;
        if self.driver < RESET_GEN_SINCE {
            c.store(ctl::RESET_MARKER, 1);
            return Ok(());
        }
        let generation = c.word(ctl::RESET_GEN).fetch_add(1, Ordering::AcqRel) + 1;
        if self.driver >= RESETTER_KEEPS_FD_SINCE {
            st.reset_gen = generation;
        }
        for tlb in st.tlbs.values_mut() {
            tlb.target = None;
            for v in [tlb.uc, tlb.wc].into_iter().flatten() {
                self.remap(v, None)?;
            }
        }
        c.store(ctl::RESET_MARKER, 1);
        Ok(())
    }

    fn lock_ctl(&self, st: &mut State, flags: u32, index: u8) -> std::result::Result<u8, Errno> {
        let open = || -> std::result::Result<File, Errno> {
            let p = self.paths.dir.join(format!("lock-ctl-{index}"));
            open_lock(&p).map_err(|_| Errno::EIO)
        };
        let lock = |f: File, arg| Flock::lock(f, arg).map_err(|(_, errno)| errno);
        match flags {
            sys::LOCK_CTL_ACQUIRE | sys::LOCK_CTL_ACQUIRE_BLOCKING => {
                if st.locks.contains_key(&index) {
                    return Ok(1);
                }
                let arg = if flags == sys::LOCK_CTL_ACQUIRE {
                    FlockArg::LockExclusiveNonblock
                } else {
                    FlockArg::LockExclusive
                };
                match lock(open()?, arg) {
                    Ok(held) => {
                        st.locks.insert(index, held);
                        Ok(1)
                    }
                    Err(Errno::EWOULDBLOCK) => Ok(0),
                    Err(e) => Err(e),
                }
            }
            sys::LOCK_CTL_RELEASE => Ok(st.locks.remove(&index).is_some() as u8),
            sys::LOCK_CTL_TEST => {
                if st.locks.contains_key(&index) {
                    return Ok(0b11);
                }
                // Taken and dropped at once: free if it could be taken.
                match lock(open()?, FlockArg::LockExclusiveNonblock) {
                    Ok(_) => Ok(0),
                    Err(Errno::EWOULDBLOCK) => Ok(0b10),
                    Err(e) => Err(e),
                }
            }
            _ => Err(Errno::EINVAL),
        }
    }
}

/// The simulated device's [`super::kernel::Locator`]: the marker lives in its `ctl` page, and
/// its one node is its directory (a simulated device never leaves the bus, so it cannot come
/// back as another node).
#[derive(Debug)]
struct SimLocator {
    dir: PathBuf,
}

impl super::kernel::Locator for SimLocator {
    fn reset_marker(&self, _pci: &str) -> std::io::Result<Option<bool>> {
        let ctl = Ctl::open(&Paths::new(&self.dir).ctl())?;
        Ok(Some(ctl.load(ctl::RESET_MARKER) != 0))
    }

    fn nodes(&self) -> Vec<PathBuf> {
        vec![self.dir.clone()]
    }

    fn open_raw(&self, node: &Path) -> Result<Box<dyn Kernel>> {
        Ok(Box::new(SimKernel::open_with_flags(node, OpenFlags { power_aware: true, exclusive: false })?))
    }
}

/// tt-kmd's admission of an open (`admit_chardev_open`, `chardev.c` at ttkmd-2.10.0), as a
/// flock on the device's `fds` file: a plain open is a reader (shared), an `O_EXCL` open the
/// writer (exclusive, so no other fd may be open). Without `O_NONBLOCK` in
/// `flags.open_flags()` the open waits for the lock, as tt-kmd's waits; with it, a refusal
/// names the holders from `/proc/locks` (the stand-in for tt-kmd's per-device `pids` file).
/// Drivers before 2.10.0 ignore `O_EXCL`: every open is then a reader.
fn admit(dir: &Path, flags: OpenFlags, driver: (u8, u8, u8)) -> Result<Flock<File>> {
    let path = dir.join("fds");
    let file = open_lock(&path).map_err(|source| TtKmdError::Open { path: path.clone(), source })?;
    let bits = flags.open_flags();
    let excl = bits & libc::O_EXCL != 0 && driver >= RESETTER_KEEPS_FD_SINCE;
    let nonblock = bits & libc::O_NONBLOCK != 0;
    let arg = match (excl, nonblock) {
        (true, true) => FlockArg::LockExclusiveNonblock,
        (true, false) => FlockArg::LockExclusive,
        (false, true) => FlockArg::LockSharedNonblock,
        (false, false) => FlockArg::LockShared,
    };
    match Flock::lock(file, arg) {
        Ok(admitted) => Ok(admitted),
        Err((file, Errno::EWOULDBLOCK)) => {
            let source = format!("/proc/locks on {}", path.display());
            Err(flags.refused(dir.to_owned(), describe_pids(&super::owner::flock_holders(&file), &source)))
        }
        Err((_, errno)) => Err(TtKmdError::Flock { path, errno }),
    }
}

fn alive(ctl: &Ctl) -> bool {
    let before = ctl.load(ctl::HEARTBEAT);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        if ctl.load(ctl::HEARTBEAT) != before {
            return true;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    false
}

/// mmap offset of TLB `id` (UC or WC): page aligned and distinct per window and kind.
fn mmap_offset(id: u32, wc: bool) -> u64 {
    ((id as u64) * 2 + wc as u64) << 32
}

/// Decodes `arg` as `T`, lets `f` answer, encodes it back.
fn with<T: IoctlArg>(
    arg: &mut [u8],
    f: impl FnOnce(&mut T) -> std::result::Result<(), Errno>,
) -> std::result::Result<(), Errno> {
    let n = size_of::<T>();
    let bytes = arg.get_mut(..n).ok_or(Errno::EFAULT)?;
    let mut v = T::read_from_bytes(bytes).map_err(|_| Errno::EFAULT)?;
    f(&mut v)?;
    bytes.copy_from_slice(v.as_bytes());
    Ok(())
}

/// tt-kmd's legacy out convention: clear `output_size_bytes` bytes of `out`, then copy
/// `min(output_size_bytes, size of out)`.
fn copy_out<T: IntoBytes + FromBytes + zerocopy::Immutable>(dst: &mut T, out: &T, output_size_bytes: u32) {
    let n = (output_size_bytes as usize).min(size_of::<T>());
    let d = dst.as_mut_bytes();
    d[..n].copy_from_slice(&out.as_bytes()[..n]);
}

impl Kernel for SimKernel {
    fn path(&self) -> &Path {
        &self.path
    }

    fn ioctl(&self, request: ioctl_num_type, arg: &mut [u8]) -> std::result::Result<(), Errno> {
        self.answer(request, arg)
    }

    fn mmap(&self, offset: u64, len: usize) -> std::io::Result<MmapRaw> {
        let id = (offset >> 33) as u32;
        let wc = (offset >> 32) & 1 == 1;
        let mut st = self.state.lock().expect("not poisoned");
        // `tt_cdev_mmap` (chardev.c at ttkmd-2.7.0 to 2.10.0): an fd opened before the last
        // reset maps nothing.
        if self.driver >= MMAP_RESET_GEN_SINCE && self.ctl.0.load(ctl::RESET_GEN) != st.reset_gen {
            return Err(std::io::Error::from_raw_os_error(libc::ENODEV));
        }
        let tlb = st.tlbs.get_mut(&id).filter(|_| offset & 0xffff_ffff == 0 && len as u64 == WINDOW_SIZE);
        let tlb = tlb.ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let map = MmapRaw::from(memmap2::MmapMut::map_anon(len)?);
        let view = View { addr: map.as_ptr() as usize, len };
        if let Some(target) = tlb.target {
            self.remap(view, Some(target)).map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
        }
        if wc {
            tlb.wc = Some(view);
        } else {
            tlb.uc = Some(view);
        }
        Ok(map)
    }

    fn lock_exclusive(&self) -> Result<()> {
        // Checked and taken under one lock: a second guard dropped would unlock the description.
        let mut held = self.owner.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some(super::owner::lock_exclusive(&self.lock, &self.paths.lock()).map_err(|e| match e {
                TtKmdError::HeldByPid { pid, .. } => TtKmdError::HeldByPid { path: self.path.clone(), pid },
                other => other,
            })?);
        }
        Ok(())
    }

    fn device_clock(&self) -> Option<u64> {
        Some(self.device_cycles())
    }

    /// Every process with the device open (the `fds` flock's holders).
    fn holders(&self) -> String {
        let source = format!("/proc/locks on {}", self.paths.dir.join("fds").display());
        describe_pids(&super::owner::flock_holders(&self._admitted), &source)
    }

    /// Every other process holding the `fds` flock (tt-kmd's `pids` file, simulated).
    fn other_pids(&self) -> std::result::Result<Vec<u32>, String> {
        let me = std::process::id();
        Ok(super::owner::flock_holders(&self._admitted).into_iter().filter(|&p| p != me).collect())
    }

    fn locator(&self) -> Box<dyn super::kernel::Locator> {
        Box::new(SimLocator { dir: self.path.clone() })
    }

    fn clock_stop(&self) -> Option<super::kernel::ClockStop> {
        use super::kernel::ClockStop;
        use crate::process_state::{self, ProcessState};
        let ctl = &self.ctl.0;
        let pid = ctl.load(ctl::PID);
        if ctl.load(ctl::STOPPED) != 0 {
            return Some(ClockStop::Ended(format!("the simulator (pid {pid}) stopped serving (Ctrl-C or a signal)")));
        }
        match process_state::of(pid as u32) {
            ProcessState::Stopped => Some(ClockStop::Paused(format!(
                "the simulator (pid {pid}) is stopped (SIGSTOP or a debugger?); `kill -CONT {pid}` resumes it"
            ))),
            ProcessState::Gone => Some(ClockStop::Ended(format!("the simulator (pid {pid}) is gone"))),
            ProcessState::Exited => {
                Some(ClockStop::Ended(format!("the simulator (pid {pid}) has exited (a zombie, not yet reaped)")))
            }
            ProcessState::Running => None,
        }
    }

    /// The device's `ctl` page names its board and harvesting (no ARC is mapped).
    fn board(&self) -> Option<(Board, Harvesting)> {
        Some((self.shape.board, self.shape.harvesting.clone()))
    }

    /// One mapping cannot land in many tiles' files: CONFIGURE_TLB refuses multicast.
    fn multicast_tlbs(&self) -> bool {
        false
    }

    fn settle(&self) -> std::io::Result<()> {
        // The runner reads register words at the start of a slice and bumps the heartbeat at
        // its end: two bumps from now cover a whole slice that started after our stores.
        let c = &self.ctl.0;
        let target = c.load(ctl::HEARTBEAT) + 2;
        let start = Instant::now();
        while c.load(ctl::HEARTBEAT) < target {
            if c.load(ctl::STOPPED) != 0 || start.elapsed() > SETTLE_TIMEOUT {
                return Err(std::io::Error::other(format!(
                    "the simulator at {} did not take a register write within {} s (stopped?)",
                    self.path.display(),
                    SETTLE_TIMEOUT.as_secs()
                )));
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    /// The simulated device reaches its sysmem file, whatever pages back it.
    fn iommu(&self, _pci: &str) -> super::kernel::Iommu {
        super::kernel::Iommu::Unknown("a simulated device".into())
    }

    fn alloc_dma_memory(&self, len: usize) -> std::io::Result<super::kernel::DmaMemory> {
        if len as u64 > self.shape.sysmem_size {
            return Err(std::io::Error::other(format!(
                "the simulated device reaches {} bytes of host memory (its sysmem), {len} asked",
                self.shape.sysmem_size
            )));
        }
        // At the top of sysmem, not at offset 0: the pinned buffer's NOC address is then not
        // the host range's base whenever sysmem has room, as on a card where another process
        // (tt-metal, a second cqlab) pinned first or the driver allocates its NOC window top
        // down. Every address the host gives the device must add it (`sysmem_noc_base`).
        let page = 4096;
        let offset = (self.shape.sysmem_size - len as u64) / page * page;
        let map = MmapOptions::new().offset(offset).len(len).map_raw(&self.sysmem)?;
        self.state.lock().expect("not poisoned").dma.push((map.as_ptr() as usize, len, offset));
        Ok(super::kernel::DmaMemory { map, pages: crate::sysmem::PageKind::Normal })
    }
}

#[cfg(test)]
mod tests {
    use super::super::device::{PinFlags, ResetKind, TtKmdDevice};
    use super::super::kernel::OpenFlags;
    use super::super::{PowerMode, TtKmdError};
    use super::*;
    use cqlab_sim::shared::Runner;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// A Wormhole n150 harvested to three Tensix rows (a small real chip), on a thread, on
    /// fresh files; stopped and removed on drop.
    struct Sim {
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
        dir: PathBuf,
    }

    impl Sim {
        fn start(tag: &str) -> Sim {
            let dir = std::env::temp_dir().join(format!("cqlab-simkernel-{tag}-{}", std::process::id()));
            let cfg = cqlab_sim::config::SimConfig {
                harvesting: "rows=1,2,3,4,5,7,8".parse().unwrap(),
                sysmem_size: 4 << 20,
                ..cqlab_sim::config::SimConfig::for_board(Board::WormholeN150)
            };
            let mut runner = Runner::create(&dir, cfg).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let flag = stop.clone();
            let thread = Some(std::thread::spawn(move || {
                runner.run(&flag);
            }));
            Sim { stop, thread, dir }
        }
        fn open(&self, flags: OpenFlags) -> super::super::Result<TtKmdDevice> {
            TtKmdDevice::with_kernel(Box::new(SimKernel::open_with_flags(&self.dir, flags)?), flags)
        }
    }

    impl Drop for Sim {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    #[test]
    fn answers_like_ttkmd_2_10_and_maps_windows_onto_the_simulators_memory() {
        let sim = Sim::start("ioctls");
        let legacy = sim.open(OpenFlags { power_aware: false, exclusive: false }).unwrap();
        assert_eq!(legacy.version().semver, Some(SIM_DRIVER_VERSION));
        assert_eq!(legacy.power_mode(), PowerMode::Legacy);
        assert_eq!(legacy.info().vendor_id, TENSTORRENT_VENDOR_ID);
        assert_eq!(legacy.info().device_id, 0x401E, "a Wormhole's PCI device id");
        // One owner at a time.
        let err = sim.open(OpenFlags::default()).unwrap_err();
        assert!(matches!(err, TtKmdError::HeldByPid { pid, .. } if pid == std::process::id()), "{err}");
        drop(legacy);
        let dev = sim.open(OpenFlags::default()).unwrap();
        assert_eq!(dev.power_mode(), PowerMode::Aware);

        // A window onto the first Tensix tile's L1 (translated (18, 18)): a store lands in the
        // simulator's l1 file, stride 0.
        let tiles = SimKernel::open(&sim.dir).unwrap().tiles;
        let (first, second) = (tiles[0], tiles[1]);
        assert_eq!(first, Coord::new(18, 18));
        let tlb = dev.allocate_tlb(WINDOW_SIZE).unwrap();
        dev.configure_tlb(&tlb, &sys::NocTlbConfig::unicast(first.x as u16, first.y as u16, 0, 0)).unwrap();
        tlb.uc().write_u32(0x100, 0xfeed_f00d).unwrap();
        let l1 = std::fs::read(sim.dir.join("l1")).unwrap();
        assert_eq!(&l1[0x100..0x104], &0xfeed_f00du32.to_le_bytes());
        // Re-targeted to the second tile, on NOC1 (translated coordinates are the same on
        // both NOCs): the same mapping now shows its L1.
        dev.configure_tlb(&tlb, &sys::NocTlbConfig::unicast(second.x as u16, second.y as u16, 0, 1)).unwrap();
        assert_eq!(tlb.uc().read_u32(0x100).unwrap(), 0);
        tlb.uc().write_block(0x200, &[1, 2, 3, 4]).unwrap();
        let l1 = std::fs::read(sim.dir.join("l1")).unwrap();
        assert_eq!(&l1[WINDOW_SIZE as usize + 0x200..WINDOW_SIZE as usize + 0x204], &[1, 2, 3, 4]);
        // The 2 MiB piece with the debug registers: SOFT_RESET_0 is the regs file's word.
        use cqlab_abi::arch::tensix::{DEBUG_REGS_BASE, SOFT_RESET_0};
        let base = (SOFT_RESET_0 as u64) & !(WINDOW_SIZE - 1);
        dev.configure_tlb(&tlb, &sys::NocTlbConfig::unicast(second.x as u16, second.y as u16, base, 0)).unwrap();
        tlb.uc().write_u32((SOFT_RESET_0 as u64 - base) as usize, 0x4_7000).unwrap();
        let regs = std::fs::read(sim.dir.join("regs")).unwrap();
        let at = REGS_PAGE as usize + (SOFT_RESET_0 - DEBUG_REGS_BASE) as usize;
        assert_eq!(&regs[at..at + 4], &0x4_7000u32.to_le_bytes());
        // DRAM channel 0 at NOC0 (0, 0), 2 MiB in.
        dev.configure_tlb(&tlb, &sys::NocTlbConfig::unicast(0, 0, WINDOW_SIZE, 0)).unwrap();
        tlb.uc().write_u32(8, 0x1234_5678).unwrap();
        let mut word = [0u8; 4];
        use std::os::unix::fs::FileExt;
        File::open(sim.dir.join("dram")).unwrap().read_exact_at(&mut word, WINDOW_SIZE + 8).unwrap();
        assert_eq!(u32::from_le_bytes(word), 0x1234_5678);
        // A harvested row (NOC0 y 8, translated y 27 on an n150 with these rows off), a
        // window that is neither L1 nor the register page, and multicast are refused.
        for cfg in [
            sys::NocTlbConfig::unicast(18, 27, 0, 0),
            sys::NocTlbConfig::unicast(first.x as u16, first.y as u16, WINDOW_SIZE, 0),
        ] {
            assert!(dev.configure_tlb(&tlb, &cfg).unwrap_err().to_string().contains("EINVAL"), "{cfg:?}");
        }
        let mut mc = sys::NocTlbConfig::unicast(first.x as u16, first.y as u16, 0, 0);
        mc.mcast = 1;
        assert!(dev.configure_tlb(&tlb, &mc).unwrap_err().to_string().contains("EOPNOTSUPP"));

        // Pinning: the simulator's sysmem has a NOC address; other memory is out of its reach.
        // At the top of the simulator's 4 MiB: a NOC address that is not the range's base.
        let pinned = dev.alloc_pinned(1 << 20, PinFlags::NOC_DMA).unwrap();
        assert_eq!(pinned.noc_address(), Some(3 << 20));
        let mut other = vec![0u8; 8192];
        let at = other.as_ptr().align_offset(4096);
        let err = dev.pin_pages(&mut other[at..at + 4096], PinFlags::NOC_DMA).unwrap_err();
        assert!(err.to_string().contains("EFAULT"), "{err}");

        drop(tlb);
        drop(pinned);
    }

    /// An open never waits for another process. While one holds the device with `O_EXCL`
    /// (tt-kmd 2.10.0+), tt-kmd's open of a card sleeps until that process closes it
    /// (`admit_chardev_open`, chardev.c at ttkmd-2.10.0); the backend's open asks `O_NONBLOCK`
    /// and says who holds the device instead.
    #[test]
    fn an_open_while_another_process_holds_the_device_exclusively_names_it_at_once() {
        let sim = Sim::start("excl");
        let exclusive = OpenFlags { exclusive: true, ..OpenFlags::default() };
        let holder = SimKernel::open_with_flags(&sim.dir, exclusive).unwrap();
        let dir = sim.dir.to_str().unwrap().to_owned();
        let (tx, rx) = std::sync::mpsc::channel();
        let opener = std::thread::spawn(move || {
            let cfg = crate::config::DeviceConfig { num_cqs: 1, ..Default::default() };
            let _ = tx.send(super::super::backend::open_simulated(&dir, &cfg).err().map(|e| e.to_string()));
        });
        let answer = rx.recv_timeout(Duration::from_secs(5));
        drop(holder); // lets an open that waits through, so the thread ends
        opener.join().unwrap();
        let err = answer.expect("the open answered at once instead of waiting for the holder").expect("refused");
        let me = std::process::id();
        assert!(err.contains(&format!("is held exclusively (O_EXCL) by pid {me} (from /proc/locks")), "{err}");

        // And an exclusive open of ours, while another fd is open, names that fd's process.
        let plain = SimKernel::open(&sim.dir).unwrap();
        let err = sim.open(exclusive).unwrap_err();
        assert!(matches!(err, TtKmdError::OpenElsewhere { .. }), "{err:?}");
        assert!(err.to_string().contains(&format!("is open in pid {me}")), "{err}");
        drop(plain);
        drop(sim.open(exclusive).expect("exclusive once no other fd is open"));
    }

    /// tt-kmd's 2 MiB windows are one pool per card shared by every process (10 on a
    /// Wormhole): the backend takes its windows at open, so a card whose windows others hold is
    /// refused there, naming who has it open (not mid-run, with a bare ENOMEM), and with only a
    /// few free it runs on those.
    #[test]
    fn the_backends_windows_come_from_the_cards_shared_pool_at_open() {
        use crate::backend::Backend;
        use cqlab_abi::noc::NocAddr;
        let sim = Sim::start("windows");
        let cfg = crate::config::DeviceConfig { num_cqs: 1, ..Default::default() };
        let open = || super::super::backend::TtKmdBackend::new(sim.open(OpenFlags::default()).unwrap(), &cfg);
        let other = SimKernel::open(&sim.dir).unwrap();
        let take = || {
            let mut a = sys::AllocateTlb {
                input: sys::AllocateTlbIn { size: WINDOW_SIZE, reserved: 0 },
                output: Default::default(),
            };
            call(&other, &mut a).map(|()| a.output.id)
        };
        let free = |id| call(&other, &mut sys::FreeTlb { input: sys::FreeTlbIn { id }, output: sys::FreeTlbOut {} });
        let held: Vec<u32> = std::iter::from_fn(|| take().ok()).collect();
        assert_eq!(held.len(), 10, "a Wormhole's pool");

        let err = open().err().expect("refused with no window free").to_string();
        let me = std::process::id();
        for part in ["no 2 MiB TLB window is free", "tt-kmd hands out 10 per wormhole card", &format!("pid {me} (from")]
        {
            assert!(err.contains(part), "{part:?} in {err}");
        }

        // Three free: it takes all three at open and reaches more tiles than it has windows.
        for &id in &held[..3] {
            free(id).unwrap();
        }
        let mut backend = open().expect("opens on three windows");
        assert_eq!(take(), Err(Errno::ENOMEM), "the three were taken at open");
        let tiles = &other.tiles[..6];
        for (i, &t) in tiles.iter().enumerate() {
            backend.write_u32(NocAddr::unicast(t, 0x100), i as u32).unwrap();
        }
        for (i, &t) in tiles.iter().enumerate() {
            assert_eq!(backend.read_u32(NocAddr::unicast(t, 0x100)).unwrap(), i as u32, "tile {t}");
        }
        drop(backend);
        for &id in &held[3..] {
            free(id).unwrap();
        }
        // Eight at open when all are free: two left for others.
        let backend = open().unwrap();
        assert_eq!((take().is_ok(), take().is_ok(), take()), (true, true, Err(Errno::ENOMEM)));
        drop(backend);
    }

    /// Runs one ioctl on a bare kernel (another process's fd: no cqlab device around it).
    fn call<T: IoctlArg>(k: &dyn Kernel, arg: &mut T) -> std::result::Result<(), Errno> {
        let mut bytes = arg.as_bytes().to_vec();
        k.ioctl(T::REQUEST, &mut bytes)?;
        *arg = T::read_from_bytes(&bytes).unwrap();
        Ok(())
    }

    /// Another process's fd on the device (tt-metal's, say: it takes no cqlab lock) with a
    /// window onto `tile`'s L1, mapped uncached.
    fn other_process_window(sim: &Sim, tile: Coord) -> (SimKernel, sys::ConfigureTlb, super::super::MmioWindow) {
        let other = SimKernel::open(&sim.dir).unwrap();
        let mut alloc = sys::AllocateTlb {
            input: sys::AllocateTlbIn { size: WINDOW_SIZE, reserved: 0 },
            output: Default::default(),
        };
        call(&other, &mut alloc).unwrap();
        let config = sys::NocTlbConfig::unicast(tile.x as u16, tile.y as u16, 0, 0);
        let configure = sys::ConfigureTlb {
            input: sys::ConfigureTlbIn { id: alloc.output.id, reserved: 0, config },
            output: Default::default(),
        };
        call(&other, &mut configure.clone()).unwrap();
        let window = super::super::MmioWindow::map(
            &other,
            "the other process's window".into(),
            alloc.output.mmap_offset_uc,
            WINDOW_SIZE,
        )
        .unwrap();
        (other, configure, window)
    }

    /// RESET_DEVICE as tt-kmd 2.10 answers it (`ioctl_reset_device`, chardev.c at
    /// ttkmd-2.10.0): USER_RESET only sets the reset marker, so POST_RESET reports failure;
    /// an ASIC reset resets the chip, which clears the marker, and the whole sequence
    /// completes; every fd opened before a reset is invalid for good.
    #[test]
    fn user_reset_leaves_the_marker_set_and_an_asic_reset_sequence_completes() {
        let sim = Sim::start("reset");
        let dev = sim.open(OpenFlags::default()).unwrap();
        let (other, mut configure, _window) = other_process_window(&sim, Coord::new(18, 18));

        // Between USER_RESET and POST_RESET only info and reset ioctls pass, on every fd.
        dev.reset(ResetKind::UserReset).unwrap();
        let err = dev.allocate_tlb(WINDOW_SIZE).unwrap_err();
        assert!(err.to_string().contains("ENODEV"), "{err}");
        // Nothing reset the chip: the marker is still set, and POST_RESET says so.
        let err = dev.reset(ResetKind::PostReset).unwrap_err();
        assert!(matches!(err, TtKmdError::ResetFailed { result: 1, .. }), "{err:?}");
        assert!(err.to_string().contains("reset marker"), "{err}");
        // POST_RESET cleared needs_hw_init all the same: the resetting fd works again...
        drop(dev.allocate_tlb(WINDOW_SIZE).unwrap());
        // ... the one opened before the reset does not, ever.
        assert_eq!(call(&other, &mut configure), Err(Errno::ENODEV));

        // A whole reset is an ASIC reset: USER_RESET is refused, saying why.
        let err = dev.reset_sequence(ResetKind::UserReset).unwrap_err();
        assert!(err.to_string().contains("USER_RESET only marks the device"), "{err}");
        let done = sim.open(OpenFlags::default()).unwrap().reset_sequence(ResetKind::AsicReset).unwrap();
        assert_eq!(done.node, sim.dir, "POST_RESET on the device's one node");
        let dev = sim.open(OpenFlags::default()).unwrap();
        let tlb = dev.allocate_tlb(WINDOW_SIZE).unwrap();
        dev.configure_tlb(&tlb, &sys::NocTlbConfig::unicast(18, 18, 0, 0)).unwrap();
        // The chip was reset: every core held.
        use cqlab_abi::arch::tensix::{DEBUG_REGS_BASE, SOFT_RESET_0, SOFT_RESET_ALL};
        let soft = (SOFT_RESET_0 - DEBUG_REGS_BASE) as usize;
        let regs = std::fs::read(sim.dir.join("regs")).unwrap();
        assert_eq!(&regs[soft..soft + 4], &SOFT_RESET_ALL.to_le_bytes());
    }

    /// Waits, bounded, for the simulator to serve the chip reset an ASIC_RESET asked for.
    fn wait_for_marker_clear(sim: &Sim) {
        let ctl = Ctl::open(&Paths::new(&sim.dir).ctl()).unwrap();
        let start = Instant::now();
        while ctl.load(ctl::RESET_MARKER) != 0 {
            assert!(start.elapsed() < Duration::from_secs(20), "the simulator did not reset the chip in 20 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// tt-kmd 2.6.0 to 2.9.x answer ENODEV to the fd that sent ASIC_RESET (they move the reset
    /// generation without it: `chardev.c` at ttkmd-2.8.0), so POST_RESET on that fd fails and
    /// leaves the device waiting for it: every later open fails (its SET_POWER_STATE answers
    /// ENODEV) until a new fd sends POST_RESET. The reset sequence sends POST_RESET from a new
    /// open, as tt-kmd's tools/reset.c does, so it completes on every version: 2.4.0 (no reset
    /// generation), 2.8.0 and 2.10.1 (whose resetting fd survives).
    #[test]
    fn the_reset_sequence_posts_reset_from_a_new_open_on_every_driver_version() {
        let sim = Sim::start("reset-versions");
        let needs_hw_init = || Ctl::open(&Paths::new(&sim.dir).ctl()).unwrap().load(ctl::NEEDS_HW_INIT);

        // The failure the sequence avoids, on a 2.8-like kernel: POST_RESET on the same fd.
        set_driver_version(&sim.dir, (2, 8, 0)).unwrap();
        let dev = sim.open(OpenFlags::default()).unwrap();
        assert_eq!(dev.version().semver, Some((2, 8, 0)));
        dev.reset(ResetKind::AsicReset).unwrap();
        wait_for_marker_clear(&sim);
        let err = dev.reset(ResetKind::PostReset).unwrap_err();
        assert!(err.to_string().contains("ENODEV"), "{err}");
        drop(dev);
        let err = sim.open(OpenFlags::default()).unwrap_err();
        assert!(err.to_string().contains("SET_POWER_STATE") && err.to_string().contains("ENODEV"), "{err}");
        // What gets it out: POST_RESET from a new fd.
        let raw = SimKernel::open(&sim.dir).unwrap();
        let mut post = sys::ResetDevice {
            input: sys::ResetDeviceIn {
                output_size_bytes: size_of::<sys::ResetDeviceOut>() as u32,
                flags: sys::RESET_DEVICE_POST_RESET,
            },
            output: Default::default(),
        };
        call(&raw, &mut post).unwrap();
        assert_eq!((post.output.result, needs_hw_init()), (0, 0));
        drop(raw);

        for version in [(2, 4, 0), (2, 8, 0), (2, 10, 1)] {
            set_driver_version(&sim.dir, version).unwrap();
            let dev = sim.open(OpenFlags::default()).unwrap();
            assert_eq!(dev.version().semver, Some(version));
            let done = dev.reset_sequence(ResetKind::AsicReset).unwrap_or_else(|e| panic!("{version:?}: {e}"));
            assert_eq!(done.node, sim.dir, "{version:?}");
            assert_eq!(needs_hw_init(), 0, "{version:?}: POST_RESET was not taken");
            let dev = sim.open(OpenFlags::default()).unwrap_or_else(|e| panic!("{version:?}: open after reset: {e}"));
            drop(dev.allocate_tlb(WINDOW_SIZE).unwrap());
        }
    }

    /// ASIC_DMC_RESET, as tt-kmd 2.3.0 answers it: EINVAL, nothing reset (it knows only the
    /// legacy flags); the driver refuses it before it is sent, naming the request and the
    /// version that has it. From 2.4.0 on the whole sequence completes with it.
    #[test]
    fn asic_dmc_reset_is_einval_before_2_4_0_and_a_whole_reset_after() {
        let sim = Sim::start("dmc-versions");
        let generation = || Ctl::open(&Paths::new(&sim.dir).ctl()).unwrap().load(ctl::RESET_GEN);
        set_driver_version(&sim.dir, (2, 3, 0)).unwrap();
        let before = generation();
        let raw = SimKernel::open(&sim.dir).unwrap();
        let mut dmc = sys::ResetDevice {
            input: sys::ResetDeviceIn {
                output_size_bytes: size_of::<sys::ResetDeviceOut>() as u32,
                flags: sys::RESET_DEVICE_ASIC_DMC_RESET,
            },
            output: Default::default(),
        };
        assert_eq!(call(&raw, &mut dmc), Err(Errno::EINVAL));
        drop(raw);
        assert_eq!(generation(), before, "2.3.0 reset the device");
        let dev = sim.open(OpenFlags::default()).unwrap();
        let err = dev.reset_sequence(ResetKind::AsicDmcReset).unwrap_err().to_string();
        assert!(err.contains("ASIC_DMC_RESET") && err.contains("tt-kmd 2.4.0"), "{err}");
        assert_eq!(generation(), before);

        set_driver_version(&sim.dir, (2, 4, 0)).unwrap();
        let dev = sim.open(OpenFlags::default()).unwrap();
        let done = dev.reset_sequence(ResetKind::AsicDmcReset).unwrap_or_else(|e| panic!("2.4.0: {e}"));
        assert_eq!(done.kind, ResetKind::AsicDmcReset);
        drop(sim.open(OpenFlags::default()).expect("open after the reset"));
    }

    /// Opening the backend resets nothing: another process's fd and mapping of the device
    /// survive it (a USER_RESET would have invalidated both, and its POST_RESET failed), and
    /// every Tensix core is held in soft reset before any host memory is pinned.
    #[test]
    fn the_backend_opens_without_a_reset_and_holds_every_core() {
        use cqlab_abi::arch::tensix::{DEBUG_REGS_BASE, SOFT_RESET_0, SOFT_RESET_ALL, SOFT_RESET_BRISC_ONLY_RUN};
        use std::os::unix::fs::FileExt;
        let sim = Sim::start("no-reset");
        let tiles = SimKernel::open(&sim.dir).unwrap().tiles;
        let (other, mut configure, window) = other_process_window(&sim, tiles[0]);
        window.write_u32(0x40, 0x600d_cafe).unwrap();
        // A core the previous owner left running.
        let soft = (SOFT_RESET_0 - DEBUG_REGS_BASE) as u64;
        let regs = open_rw(&sim.dir.join("regs")).unwrap();
        let last = (tiles.len() - 1) as u64 * REGS_PAGE + soft;
        regs.write_all_at(&SOFT_RESET_BRISC_ONLY_RUN.to_le_bytes(), last).unwrap();
        other.settle().unwrap();
        let mut word = [0u8; 4];
        regs.read_exact_at(&mut word, last).unwrap();
        assert_eq!(u32::from_le_bytes(word), SOFT_RESET_BRISC_ONLY_RUN, "the chip took the release");

        let cfg = crate::config::DeviceConfig { num_cqs: 1, ..Default::default() };
        let backend = super::super::backend::TtKmdBackend::new(sim.open(OpenFlags::default()).unwrap(), &cfg)
            .expect("the tt-kmd backend opens on a device another process holds open");

        assert_eq!(call(&other, &mut configure), Ok(()), "the other process's fd survives the open");
        assert_eq!(window.read_u32(0x40).unwrap(), 0x600d_cafe, "and so does its mapping");
        for i in 0..tiles.len() as u64 {
            regs.read_exact_at(&mut word, i * REGS_PAGE + soft).unwrap();
            assert_eq!(u32::from_le_bytes(word), SOFT_RESET_ALL, "tile {} is held", tiles[i as usize]);
        }
        drop(backend);
    }

    /// The completion write pointer, as the dispatcher's NOC writes land it in the `sysmem`
    /// file (the simulator's own store path) while the backend polls it: every read is a value
    /// the device wrote, never bytes of two. (Read or landed byte by byte, the wrap below once
    /// read as one ring ahead, and the host took stale payload for the next record's header.)
    /// A stress test, bounded in time.
    #[test]
    fn the_backend_reads_device_written_queue_pointers_whole() {
        use crate::backend::Backend;
        use cqlab_abi::ring::RingPtr;
        use cqlab_abi::sysmem::{CqSysmemLayout, COMPLETION_WR_PTR};
        use cqlab_sim::storage::SharedRegion;
        let sim = Sim::start("pointers");
        let cfg = crate::config::DeviceConfig { num_cqs: 1, ..Default::default() };
        let mut backend = super::super::backend::TtKmdBackend::new(sim.open(OpenFlags::default()).unwrap(), &cfg)
            .expect("the tt-kmd backend on the simulator");
        let at = (CqSysmemLayout::for_cq(0, cfg.issue_size, cfg.completion_size).header() + COMPLETION_WR_PTR as u64)
            as usize;
        // The device writes the pointer where the pinned buffer sits in the simulator's sysmem.
        let in_file = backend.sysmem_noc_base() as usize + at;
        let file = open_rw(&sim.dir.join("sysmem")).unwrap();
        let map = Arc::new(MmapOptions::new().len(in_file + 4).map_raw(&file).unwrap());
        let mut device = SharedRegion::new(&map, 0, in_file + 4);
        let (a, b) = (RingPtr::new(196_800, false).0, RingPtr::new(256, true).0);
        assert!(device.write(in_file, &a.to_le_bytes()));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let writer = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                device.write(in_file, &b.to_le_bytes());
                device.write(in_file, &a.to_le_bytes());
            }
        });
        let start = Instant::now();
        let (mut changes, mut last, mut torn) = (0u32, a, None);
        while changes < 100_000 && start.elapsed() < Duration::from_millis(500) && torn.is_none() {
            let v = backend.sysmem_read_u32(at).unwrap();
            if v != a && v != b {
                torn = Some(v);
            }
            changes += u32::from(v != last);
            last = v;
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(torn, None, "read {torn:#x?}, a mix of {a:#x} and {b:#x} ({changes} changes seen)");
    }
}
