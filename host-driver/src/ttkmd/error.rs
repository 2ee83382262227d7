//! Errors of the tt-kmd backend: each says which device, which call, and what came back.

use std::path::PathBuf;

use nix::errno::Errno;

/// Everything that can go wrong talking to tt-kmd.
#[derive(Debug, thiserror::Error)]
pub enum TtKmdError {
    /// The device node does not exist: no card, or the tt-kmd module is not loaded.
    #[error("no Tenstorrent device/driver present: {path} does not exist ({detail})")]
    NotPresent { path: PathBuf, detail: String },

    /// A simulated device whose simulator does not run (stopped, or gone):
    /// its files are there (helper-33: it read "does not exist").
    #[error("the simulated device at {path} does not answer: {detail}")]
    NotRunning { path: PathBuf, detail: String },

    /// `open(2)` of the device node failed for another reason (permissions, ...).
    #[error("cannot open {path} read-write: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The first ioctl was refused: the path is not a tt-kmd character device.
    #[error(
        "{path} is not a tt-kmd device: ioctl TENSTORRENT_IOCTL_{ioctl} failed with {errno} \
         (expected a /dev/tenstorrent/N character device)"
    )]
    NotTtKmd { path: PathBuf, ioctl: &'static str, errno: Errno },

    /// An ioctl failed.
    #[error("ioctl TENSTORRENT_IOCTL_{ioctl} on {path} failed: {errno}{context}")]
    Ioctl { path: PathBuf, ioctl: &'static str, errno: Errno, context: String },

    /// Another process owns the device and its pid is known (from /proc/locks).
    #[error("device {path} held by pid {pid}")]
    HeldByPid { path: PathBuf, pid: u32 },

    /// Another process owns the device (tt-kmd LOCK_CTL, or a flock whose owner is not visible).
    #[error("device {path} held by another process ({how})")]
    Held { path: PathBuf, how: &'static str },

    /// tt-kmd refused the open (EAGAIN): another fd holds the device with O_EXCL.
    #[error(
        "device {path} is held exclusively (O_EXCL) by {holders}: tt-kmd admits no other open until that \
         process closes it"
    )]
    HeldExclusively { path: PathBuf, holders: String },

    /// tt-kmd refused our exclusive open (EAGAIN): other fds of the device are open.
    #[error("device {path} is open in {holders}: an exclusive (O_EXCL) open needs every other fd closed")]
    OpenElsewhere { path: PathBuf, holders: String },

    /// `flock(2)` failed for a reason other than contention.
    #[error("cannot lock {path}: flock(LOCK_EX|LOCK_NB) failed with {errno}")]
    Flock { path: PathBuf, errno: Errno },

    /// Mapping a BAR resource or a TLB window through the fd failed.
    #[error("cannot mmap {what} of {path} (mmap offset {offset:#x}, {len:#x} bytes): {source}")]
    Map {
        path: PathBuf,
        what: String,
        offset: u64,
        len: u64,
        #[source]
        source: std::io::Error,
    },

    /// The driver answered, but with something this backend cannot use.
    #[error("TENSTORRENT_IOCTL_{ioctl} on {path}: expected {expected}, found {found}")]
    Unexpected { path: PathBuf, ioctl: &'static str, expected: String, found: String },

    /// A buffer to pin is not page aligned in address or length.
    #[error(
        "cannot pin {len:#x} bytes at {addr:#x} on {path}: address and length must be non-zero \
         multiples of the page size ({page:#x})"
    )]
    PinUnaligned { path: PathBuf, addr: usize, len: usize, page: usize },

    /// PIN_PAGES refused memory that is not physically contiguous, with no IOMMU translating.
    #[error(
        "cannot pin {len:#x} bytes of {pages} for {path}: tt-kmd answered EINVAL, and without an IOMMU \
         translating the card's DMA it pins only physically contiguous memory ({iommu}). Give cqlab 1 GiB huge \
         pages, one per card open at once (one holds all of this): `echo 1 | sudo tee \
         /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages` (this can find no free gigabyte once memory \
         is fragmented: then boot with `hugepagesz=1G hugepages=1`), or turn on IOMMU translation \
         (`intel_iommu=on` or `amd_iommu=on`, without `iommu=pt`)"
    )]
    PinNeedsContiguous { path: PathBuf, len: usize, pages: &'static str, iommu: String },

    /// RESET_DEVICE ran and the driver reported failure.
    #[error("reset of {path} ({kind}) failed: driver reported result {result}{why}")]
    ResetFailed { path: PathBuf, kind: &'static str, result: u32, why: &'static str },

    /// The chip's reset did not clear tt-kmd's reset marker in time.
    #[error(
        "reset of {path} ({kind}): the reset marker (PCI_COMMAND's parity bit of PCI device {pci}) is still \
         set {secs} s after the reset: the chip did not reset, and POST_RESET would fail"
    )]
    ResetTimeout { path: PathBuf, kind: &'static str, pci: String, secs: f64 },

    /// The card left the bus during its reset and did not come back in time.
    #[error(
        "reset of {path}: PCI device {pci} left the bus during the reset (it re-enumerates) and was not back \
         {secs} s after the reset: POST_RESET was not sent; once it is back, tt-kmd's tools/reset.c or \
         `tt-smi -r` completes the reset"
    )]
    ResetReenumerated { path: PathBuf, pci: String, secs: f64 },

    /// The chip reset, but no device node showed its PCI address to send POST_RESET on.
    #[error(
        "reset of {path}: the chip reset, but no node in /dev/tenstorrent showed PCI device {pci} within {secs} s \
         after it{last}: POST_RESET was not sent, and tt-kmd refuses the device's use until it is (tt-kmd's \
         tools/reset.c or `tt-smi -r` completes the reset)"
    )]
    ResetNodeNotFound { path: PathBuf, pci: String, secs: f64, last: String },

    /// Other processes have the device open: a reset would invalidate their fds.
    #[error(
        "device {path} is open in {holders}: a reset would invalidate their fds and zap their mappings; close \
         them first"
    )]
    InUse { path: PathBuf, holders: String },

    /// The reset marker could not be read.
    #[error("reset of {path}: cannot read the reset marker of PCI device {pci}: {source}")]
    ResetMarker {
        path: PathBuf,
        pci: String,
        #[source]
        source: std::io::Error,
    },

    /// The driver is too old for something asked of it.
    #[error("{what} on {path} needs {needs}; the driver is {found}")]
    Unsupported { path: PathBuf, what: &'static str, found: String, needs: String },

    /// An MMIO access outside a mapped window.
    #[error("{window}: access of {len} bytes at offset {offset:#x} is outside the window ({size:#x} bytes)")]
    OutOfBounds { window: String, offset: usize, len: usize, size: usize },

    /// An MMIO access not aligned to 4 bytes (offset or length).
    #[error("{window}: access of {len} bytes at offset {offset:#x} is not 4-byte aligned")]
    Misaligned { window: String, offset: usize, len: usize },
}

pub type Result<T, E = TtKmdError> = std::result::Result<T, E>;
