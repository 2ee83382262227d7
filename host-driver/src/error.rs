//! Driver errors: each says what was expected, what was found, and where.
//! A leaf below everything but the dump's data ([`crate::dump`]) and the
//! chip's geometry ([`crate::geometry`]).

use crate::dump::{ErrorReport, HangDump, Wait};
use crate::geometry::TopologyError;
use cqlab_abi::noc::Coord;
use cqlab_abi::waypoint::Waypoint;

pub type Result<T, E = DriverError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// A firmware or kernel image that cannot be loaded.
    #[error("ELF image {path}: {reason}")]
    BadElf { path: String, reason: ImageError },
    #[error("firmware on core {core}: {reason}")]
    BootFailed { core: Coord, reason: BootProblem },
    #[error(
        "firmware on core {core} was built for ABI version {found}, this driver speaks version {expected}: \
         rebuild the firmware (cargo xtask firmware)"
    )]
    AbiMismatch { core: Coord, expected: u32, found: u32 },
    #[error("{what} out of range: {detail}")]
    OutOfRange { what: &'static str, detail: String },
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A run ended but a result read back differs from the host's
    /// reference (a workload's validation).
    #[error("{0}")]
    Mismatch(String),
    /// The chip cannot be set up as asked, or a core named is not a compute core.
    #[error(transparent)]
    Chip(#[from] TopologyError),
    /// An operation the device or the queue cannot do in its present state.
    #[error("{0}")]
    State(#[from] StateError),
    #[error("encoding a command: {0}")]
    Encode(#[from] cqlab_abi::encode::EncodeError),
    /// The device reported a failure of its own: a firmware error record, a
    /// halted CQ core, a corrupt completion record. Shown with its core's
    /// role and its hang dump, as a timeout is (it was one line, and the
    /// dump taken for it was lost).
    #[error("device error on {}: {fault}\n{dump}", dump.who(*core))]
    Device { core: Coord, fault: DeviceFault, dump: Box<HangDump> },
    #[error("timeout waiting for {wait} after {cycles} device cycles without progress\n{dump}")]
    Timeout { wait: Wait, cycles: u64, dump: Box<HangDump> },
    #[error(
        "kernel on {} still running after {cycles} cycles (kernel timeout {limit} cycles; a kernel that needs \
         longer runs with a larger `--kernel-timeout CYCLES`, 0 for none) while the host waited for {wait}\n{dump}",
        dump.who(*core)
    )]
    KernelTimeout { core: Coord, cycles: u64, limit: u64, wait: Wait, dump: Box<HangDump> },
    /// The CQ cores went on recording while no queue advanced
    /// (`wait::LIVELOCK_STALLS` stall timeouts): a loop that records as it
    /// goes and gets nowhere.
    #[error(
        "livelock while waiting for {wait}: the CQ cores recorded {records} trace records in {cycles} device cycles \
         ({core} the most), but no queue pointer moved, no worker recorded and no kernel ran\n{dump}"
    )]
    Livelock { wait: Wait, core: Coord, cycles: u64, records: u64, dump: Box<HangDump> },
    #[error("device {path} is held by {holder}")]
    Busy { path: String, holder: String },
    #[error("backend: {0}")]
    Backend(String),
    /// A libttsim library (`ttsim:PATH`) that cannot serve as a device.
    #[error("libttsim library {library}: {problem}")]
    Library { library: String, problem: LibraryProblem },
    #[error("{0} is not built yet")]
    NotBuilt(&'static str),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Why a libttsim library cannot serve as a device.
#[derive(Debug, thiserror::Error)]
pub enum LibraryProblem {
    #[error("cannot be loaded: {0}")]
    Load(String),
    #[error(
        "has no symbol `{symbol}`: not a libttsim library, or not one with the C API tt-umd loads \
         (the driver needs {needed})"
    )]
    MissingSymbol { symbol: &'static str, needed: String },
    #[error("is open already in this process: a libttsim library holds one simulator per process")]
    InUse,
    #[error("{open} libttsim libraries are open in this process already, the most it drives at once")]
    TooMany { open: usize },
    #[error(
        "its PCI configuration space reads vendor {vendor:#06x}, device {device:#06x}: not a Tenstorrent \
         Wormhole (0x1e52:0x401e) or Blackhole (0x1e52:0xb140)"
    )]
    UnknownDevice { vendor: u16, device: u16 },
    #[error("{call} failed: {reason}")]
    Call { call: String, reason: String },
}

impl DriverError {
    /// The hang dump the error carries, if it has one.
    pub fn dump(&self) -> Option<&HangDump> {
        match self {
            DriverError::Device { dump, .. }
            | DriverError::Timeout { dump, .. }
            | DriverError::KernelTimeout { dump, .. }
            | DriverError::Livelock { dump, .. } => Some(dump),
            _ => None,
        }
    }

    /// A stable name of the variant, for grouping failures.
    pub fn kind(&self) -> &'static str {
        match self {
            DriverError::BadElf { .. } => "bad-elf",
            DriverError::BootFailed { .. } => "boot-failed",
            DriverError::AbiMismatch { .. } => "abi-mismatch",
            DriverError::OutOfRange { .. } => "out-of-range",
            DriverError::Invalid(_) => "invalid",
            DriverError::Mismatch(_) => "mismatch",
            DriverError::Chip(_) => "chip",
            DriverError::State(_) => "state",
            DriverError::Encode(_) => "encode",
            DriverError::Device { .. } => "device-error",
            DriverError::Timeout { .. } => "timeout",
            DriverError::KernelTimeout { .. } => "kernel-timeout",
            DriverError::Livelock { .. } => "livelock",
            DriverError::Busy { .. } => "busy",
            DriverError::Backend(_) => "backend",
            DriverError::Library { .. } => "library",
            DriverError::NotBuilt(_) => "not-built",
            DriverError::Io(_) => "io",
        }
    }
}

impl From<cqlab_abi::soc::LayoutError> for DriverError {
    fn from(e: cqlab_abi::soc::LayoutError) -> Self {
        DriverError::Chip(TopologyError::Layout(e))
    }
}

/// Why an operation cannot be done now: what the device or queue is, or is
/// doing, that rules it out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("command queue {q} (device has {count})")]
    NoSuchQueue { q: u8, count: u8 },
    #[error("the device is not booted (no kernel loaded)")]
    NotBooted,
    #[error("{what} need fast dispatch (this device uses slow dispatch)")]
    NeedsFastDispatch { what: &'static str },
    #[error("a trace is already being captured")]
    AlreadyCapturing,
    #[error("end_trace without begin_trace")]
    NotCapturing,
    #[error("{what} cannot be captured in a trace")]
    NotCapturable { what: &'static str },
    #[error("a trace cannot replay a trace (nested EXEC_BUF)")]
    NestedReplay,
}

/// What the device did wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceFault {
    /// A core halted after writing an error record: a CQ core on a bad
    /// command (`!CMD`), a worker on bad kernel arguments.
    #[error("{0}")]
    BadCommand(ErrorReport),
    /// A CQ core halted (a panic, or no error record) while the host waited.
    #[error("halted with waypoint {waypoint} while the host waited for {wait}")]
    Halted { waypoint: Waypoint, wait: Wait },
    /// A core of a booting tile halted before its tile was alive (a crash:
    /// seen through the simulator's core view).
    #[error("{processor:?} halted while its tile booted: {reason}")]
    BootHalted { processor: cqlab_abi::arch::tensix::Processor, reason: String },
    /// A core halted while the queues ran (a crash: seen through the
    /// simulator's core view).
    #[error("{processor:?} halted: {reason}")]
    Crashed { processor: cqlab_abi::arch::tensix::Processor, reason: String },
    /// The completion queue held a record that is not the next one.
    #[error(
        "corrupt completion record at offset {offset} of CQ{cq}: kind {kind} cq {record_cq} length {length} seq {seq} \
         (expected seq {expected_seq})"
    )]
    CorruptCompletion { cq: u8, offset: u32, kind: u8, record_cq: u16, length: u32, seq: u32, expected_seq: u32 },
    /// A well-formed record that is not the one the queue owes next: a tag,
    /// length or event nobody waits for (a corrupt tag was stored unseen,
    /// and its read then waited out as a deadlock).
    #[error("unexpected completion record at offset {offset} of CQ{cq}: {found}, where the host waits for {expected}")]
    UnexpectedCompletion { cq: u8, offset: u32, found: String, expected: String },
}

/// Why a core's alive record is not the one expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BootProblem {
    #[error("expected firmware {expected}, alive record says id {found}")]
    WrongFirmware { expected: &'static str, found: u32 },
    #[error("alive record names core {0}")]
    WrongCore(Coord),
}

/// Why a file is not an image the driver can load.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    /// The chip's firmware directory is missing (not built, or a wrong
    /// `$CQLAB_FIRMWARE_DIR`): said once, with where the root comes from.
    #[error(
        "no firmware directory {dir} (the firmware root is $CQLAB_FIRMWARE_DIR when set, else the workspace's \
         target/riscv32im-unknown-none-elf/firmware; `cargo xtask firmware` builds it)"
    )]
    NoFirmwareDir { dir: String },
    #[error("holds more than {limit} bytes; no image for one core is that large")]
    TooLarge { limit: u64 },
    #[error(transparent)]
    Elf(#[from] cqlab_abi::elf::ElfError),
    #[error("entry point {found:#x}, {rule} says {expected:#x}")]
    Entry { found: u32, expected: u32, rule: &'static str },
    #[error("segment {start:#x}..{end:#x} lies outside {allowed}")]
    Placement { start: u64, end: u64, allowed: &'static str },
    #[error("malformed ELF: {0}")]
    Object(#[from] object::read::Error),
    #[error("relocation at {offset:#x} {problem}")]
    Relocation { offset: u64, problem: RelocationProblem },
    #[error("no relocations kept: kernels must be linked with --emit-relocs (linker/kernel.x)")]
    NoRelocations,
    #[error("no cqlab firmware id after its first instruction (not cqlab firmware, or built before ids)")]
    NoImageId,
    #[error(
        "no cqlab kernel id (ELF section {section}): not a cqlab kernel, or one built before kernels named \
         their ABI and chip (rebuild the firmware: cargo xtask firmware)"
    )]
    NoKernelId { section: &'static str },
    #[error("built against ABI version {found}, this driver speaks {expected} (rebuild the firmware)")]
    ImageAbi { found: u32, expected: u32 },
    #[error("built for {found}, the device is a {expected} (use the {expected} firmware directory)")]
    ImageArch { found: String, expected: &'static str },
    #[error("built as the {found} firmware, loaded as the {expected} (a file of another role in its place?)")]
    ImageRole { found: String, expected: &'static str },
}

/// What is wrong with one relocation of a kernel.
#[derive(Debug, thiserror::Error)]
pub enum RelocationProblem {
    #[error("is not an ELF relocation")]
    NotElf,
    #[error("names a missing symbol or section: {0}")]
    Target(object::read::Error),
    #[error("lies outside the image")]
    Outside,
    #[error("(type {r_type}, target {target:#x}) cannot move with the kernel")]
    CannotMove { r_type: u32, target: u64 },
}
