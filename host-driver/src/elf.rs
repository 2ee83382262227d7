//! Firmware ELF images: checked by the ABI's validator (shared with the
//! simulator) and against the memory map, loaded segment by segment through
//! the BAR.

use crate::error::{DriverError, Result};
use cqlab_abi::elf::Rv32Executable;
use cqlab_abi::memory_map::{CODE, DATA, ENTRY_POINT};
use std::path::Path;

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

/// One loadable piece of an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub addr: u32,
    /// File bytes followed by `zeroes` zero bytes (bss tail).
    pub data: Vec<u8>,
    pub zeroes: u32,
}

/// A checked firmware image.
#[derive(Clone, Debug)]
pub struct FirmwareImage {
    pub name: String,
    pub entry: u32,
    pub segments: Vec<Segment>,
}

impl FirmwareImage {
    pub fn load(path: &Path) -> Result<Self> {
        load_with(path, Self::parse)
    }

    /// Parses and checks an image: an RV32 executable whose entry is
    /// `ENTRY_POINT` and whose segments lie in CODE or DATA.
    pub fn parse(name: &str, bytes: &[u8]) -> std::result::Result<Self, ImageError> {
        let elf = Rv32Executable::parse(bytes)?;
        if elf.entry() != ENTRY_POINT {
            return Err(ImageError::Entry { found: elf.entry(), expected: ENTRY_POINT, rule: "the memory map" });
        }
        let mut segments = Vec::new();
        for seg in elf.segments().filter(|s| s.mem_size > 0) {
            let (start, end) = (seg.addr as u64, seg.end());
            if ![CODE, DATA].iter().any(|r| start >= r.base as u64 && end <= r.end() as u64) {
                return Err(ImageError::Placement { start, end, allowed: "the CODE and DATA regions" });
            }
            segments.push(Segment {
                addr: seg.addr,
                data: seg.data.to_vec(),
                zeroes: seg.mem_size - seg.data.len() as u32,
            });
        }
        Ok(Self { name: name.to_owned(), entry: elf.entry(), segments })
    }
}

/// Reads `path` and parses it with `parse`; every failure names the file.
pub(crate) fn load_with<T>(
    path: &Path,
    parse: impl FnOnce(&str, &[u8]) -> std::result::Result<T, ImageError>,
) -> Result<T> {
    let bad = |reason| DriverError::BadElf { path: path.display().to_string(), reason };
    let bytes = std::fs::read(path).map_err(|e| bad(ImageError::Read(e)))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    parse(&name, &bytes).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::elf::ElfError;

    #[test]
    fn garbage_and_truncated_elfs_are_rejected_with_a_reason() {
        let err = FirmwareImage::parse("x", b"not an elf").unwrap_err();
        assert!(matches!(err, ImageError::Elf(ElfError::NotElf { .. })), "{err}");
        let mut elf = vec![0x7f, b'E', b'L', b'F', 1, 1, 1, 0];
        elf.resize(20, 0);
        let err = FirmwareImage::parse("x", &elf).unwrap_err();
        assert!(matches!(err, ImageError::Elf(ElfError::Truncated { .. })), "{err}");
    }

    #[test]
    fn host_executables_are_rejected() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let err = FirmwareImage::parse("self", &me).unwrap_err();
        assert!(matches!(err, ImageError::Elf(ElfError::WrongClass { found: 2 })), "{err}");
    }
}
