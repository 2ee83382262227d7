//! Firmware ELF images: parsed once, checked against the memory map, loaded
//! segment by segment through the BAR.

use crate::error::{DriverError, Result};
use cqlab_abi::memory_map::{CODE, DATA, ENTRY_POINT};
use object::{Architecture, Object, ObjectKind, ObjectSegment};
use std::path::Path;

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

    /// Parses and checks an image: a 32-bit little-endian RISC-V executable
    /// whose entry is `ENTRY_POINT` and whose segments lie in CODE or DATA.
    pub fn parse(name: &str, bytes: &[u8]) -> std::result::Result<Self, String> {
        let elf = parse_rv32_executable(bytes)?;
        if elf.entry() != ENTRY_POINT as u64 {
            return Err(format!("entry point {:#x}, the memory map says {:#x}", elf.entry(), ENTRY_POINT));
        }
        let mut segments = Vec::new();
        for seg in elf.segments() {
            let data = seg.data().map_err(|e| format!("segment at {:#x} is truncated ({e})", seg.address()))?;
            if seg.size() == 0 {
                continue;
            }
            let (addr, size) = (seg.address(), seg.size());
            let fits = [CODE, DATA].iter().any(|r| addr >= r.base as u64 && addr + size <= r.end() as u64);
            if !fits {
                return Err(format!("segment {addr:#x}..{:#x} lies outside the CODE and DATA regions", addr + size));
            }
            if (data.len() as u64) > size {
                return Err(format!("segment at {addr:#x} has more file bytes than memory bytes"));
            }
            segments.push(Segment {
                addr: addr as u32,
                data: data.to_vec(),
                zeroes: (size - data.len() as u64) as u32,
            });
        }
        if segments.is_empty() {
            return Err("no loadable segments".into());
        }
        Ok(Self { name: name.to_owned(), entry: elf.entry() as u32, segments })
    }
}

pub(crate) fn bad(path: &Path, reason: String) -> DriverError {
    DriverError::BadElf { path: path.display().to_string(), reason }
}

/// Reads `path` and parses it with `parse`; every failure names the file.
pub(crate) fn load_with<T>(
    path: &Path,
    parse: impl FnOnce(&str, &[u8]) -> std::result::Result<T, String>,
) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|e| bad(path, format!("cannot read: {e}")))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    parse(&name, &bytes).map_err(|reason| bad(path, reason))
}

/// What every image the device runs must be: a 32-bit little-endian RISC-V
/// executable (firmware and kernels add their own placement rules).
pub(crate) fn parse_rv32_executable(bytes: &[u8]) -> std::result::Result<object::File<'_>, String> {
    let elf = object::File::parse(bytes).map_err(|e| format!("not a valid ELF ({e})"))?;
    if elf.architecture() != Architecture::Riscv32 || elf.is_64() || !elf.is_little_endian() {
        return Err(format!("expected a 32-bit little-endian RISC-V ELF, found {:?}", elf.architecture()));
    }
    if elf.kind() != ObjectKind::Executable {
        return Err(format!("expected an executable, found {:?}", elf.kind()));
    }
    Ok(elf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncated_elfs_are_rejected_with_a_reason() {
        assert!(FirmwareImage::parse("x", b"not an elf").unwrap_err().contains("not a valid ELF"));
        let mut elf = vec![0x7f, b'E', b'L', b'F', 1, 1, 1, 0];
        elf.resize(20, 0);
        assert!(FirmwareImage::parse("x", &elf).unwrap_err().contains("not a valid ELF"));
    }

    #[test]
    fn host_executables_are_rejected() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let err = FirmwareImage::parse("self", &me).unwrap_err();
        assert!(err.contains("expected a 32-bit little-endian RISC-V ELF"), "{err}");
    }
}
