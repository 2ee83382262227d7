//! Driver errors: each says what was expected, what was found, and where.

use crate::dump::HangDump;
use cqlab_abi::noc::Coord;

pub type Result<T, E = DriverError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("firmware ELF {path}: {reason}")]
    BadElf { path: String, reason: ImageError },
    #[error("firmware on core {core}: {reason}")]
    BootFailed { core: Coord, reason: String },
    #[error(
        "firmware on core {core} was built for ABI version {found}, this driver speaks version {expected}: \
         rebuild the firmware (cargo xtask firmware)"
    )]
    AbiMismatch { core: Coord, expected: u32, found: u32 },
    #[error("{what} out of range: {detail}")]
    OutOfRange { what: &'static str, detail: String },
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("device error on core {core}: {message}")]
    Device { core: Coord, message: String, dump: Box<HangDump> },
    #[error("timeout waiting for {what} after {cycles} device cycles without progress\n{dump}")]
    Timeout { what: String, cycles: u64, dump: Box<HangDump> },
    #[error(
        "kernel on {core} still running after {cycles} cycles (kernel timeout {limit} cycles) while the host waited \
         for {what}\n{dump}"
    )]
    KernelTimeout { core: Coord, cycles: u64, limit: u64, what: String, dump: Box<HangDump> },
    #[error("device {path} is held by {holder}")]
    Busy { path: String, holder: String },
    #[error("backend: {0}")]
    Backend(String),
    #[error("{0} is not built yet")]
    NotBuilt(&'static str),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Why a file is not an image the driver can load.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
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
