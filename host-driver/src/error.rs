//! Driver errors: each says what was expected, what was found, and where.

use crate::dump::HangDump;
use cqlab_abi::noc::Coord;

pub type Result<T, E = DriverError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("firmware ELF {path}: {reason}")]
    BadElf { path: String, reason: crate::elf::ImageError },
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
