//! ELF images for the harts: parse, check, place.
//!
//! Accepts 32-bit little-endian RISC-V executables (`ET_EXEC`) and nothing
//! else, so a wrong file is rejected up front with what was expected and what
//! was found, never half-loaded. Segments are placed at their physical
//! address (`p_paddr`; equal to `p_vaddr` for our linker scripts) and must
//! each lie inside one RAM window.

use crate::memory::Memory;
use object::elf::{FileHeader32, ProgramHeader32, EM_RISCV, ET_EXEC, PF_X, PT_LOAD};
use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::{Endianness, Object, ObjectSymbol};
use std::collections::BTreeMap;
use thiserror::Error;

const ELF_MAGIC: [u8; 4] = *b"\x7fELF";
const EI_CLASS: usize = 4;
const EI_DATA: usize = 5;
const ELFCLASS32: u8 = 1;
const ELFDATA2LSB: u8 = 1;

/// Why an ELF cannot run on a core.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ElfError {
    #[error("not an ELF file: expected magic 7f 45 4c 46, found {found:02x?}")]
    NotElf { found: Vec<u8> },
    #[error("not a 32-bit ELF: expected class 1 (ELFCLASS32), found {found}{}", if *found == 2 { " (64-bit)" } else { "" })]
    WrongClass { found: u8 },
    #[error("not a little-endian ELF: expected data encoding 1 (LSB), found {found}")]
    WrongEndian { found: u8 },
    #[error("not a RISC-V ELF: expected e_machine {EM_RISCV} (EM_RISCV), found {found}")]
    WrongMachine { found: u16 },
    #[error("not an executable: expected e_type {ET_EXEC} (ET_EXEC), found {found}")]
    NotExecutable { found: u16 },
    #[error("truncated ELF: {what} needs bytes {start}..{end} but the file has {len}")]
    Truncated { what: String, start: u64, end: u64, len: usize },
    #[error("malformed ELF: {0}")]
    Malformed(String),
    #[error("ELF has no loadable segment")]
    NoSegments,
    #[error("segment {index} (0x{start:08x}..0x{end:08x}) does not fit in {windows}")]
    DoesNotFit { index: usize, start: u64, end: u64, windows: String },
    #[error("entry point 0x{entry:08x} is not inside an executable segment")]
    BadEntry { entry: u32 },
}

/// One `PT_LOAD` segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Load address (`p_paddr`).
    pub addr: u32,
    /// File bytes (`p_filesz`); the rest up to `mem_size` is zero.
    pub data: Vec<u8>,
    pub mem_size: u32,
    pub executable: bool,
}

impl Segment {
    pub fn end(&self) -> u64 {
        self.addr as u64 + self.mem_size as u64
    }
}

/// A RAM window an image may be placed in, for [`ElfImage::check_fits`].
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub name: &'static str,
    pub base: u32,
    pub size: u32,
}

/// A parsed, validated executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfImage {
    pub entry: u32,
    pub segments: Vec<Segment>,
    /// Defined symbols by name (value = address).
    pub symbols: BTreeMap<String, u32>,
}

fn truncated(what: impl Into<String>, start: u64, size: u64, len: usize) -> ElfError {
    ElfError::Truncated { what: what.into(), start, end: start + size, len }
}

impl ElfImage {
    /// Parses and validates `bytes` as an RV32 executable.
    pub fn parse(bytes: &[u8]) -> Result<Self, ElfError> {
        if bytes.len() < 4 || bytes[..4] != ELF_MAGIC {
            return Err(ElfError::NotElf { found: bytes.iter().take(4).copied().collect() });
        }
        let hdr_size = std::mem::size_of::<FileHeader32<Endianness>>();
        if bytes.len() < EI_DATA + 1 {
            return Err(truncated("ELF identification", 0, 16, bytes.len()));
        }
        if bytes[EI_CLASS] != ELFCLASS32 {
            return Err(ElfError::WrongClass { found: bytes[EI_CLASS] });
        }
        if bytes[EI_DATA] != ELFDATA2LSB {
            return Err(ElfError::WrongEndian { found: bytes[EI_DATA] });
        }
        if bytes.len() < hdr_size {
            return Err(truncated("ELF header", 0, hdr_size as u64, bytes.len()));
        }
        let header = FileHeader32::<Endianness>::parse(bytes).map_err(|e| ElfError::Malformed(e.to_string()))?;
        let endian = Endianness::Little;
        let machine = header.e_machine(endian).0;
        if machine != EM_RISCV.0 {
            return Err(ElfError::WrongMachine { found: machine });
        }
        let etype = header.e_type(endian).0;
        if etype != ET_EXEC.0 {
            return Err(ElfError::NotExecutable { found: etype });
        }
        let phoff = header.e_phoff(endian) as u64;
        let phsize = header.e_phnum(endian) as u64 * header.e_phentsize(endian) as u64;
        if phoff + phsize > bytes.len() as u64 {
            return Err(truncated("program header table", phoff, phsize, bytes.len()));
        }
        let phdrs = header.program_headers(endian, bytes).map_err(|e| ElfError::Malformed(e.to_string()))?;
        let mut segments = Vec::new();
        for (i, ph) in phdrs.iter().enumerate() {
            if ph.p_type(endian) != PT_LOAD {
                continue;
            }
            segments.push(Self::segment(i, ph, bytes)?);
        }
        if segments.iter().all(|s| s.mem_size == 0) {
            return Err(ElfError::NoSegments);
        }
        let entry = header.e_entry(endian);
        if !segments.iter().any(|s| s.executable && entry >= s.addr && (entry as u64) < s.end()) {
            return Err(ElfError::BadEntry { entry });
        }
        let shoff = header.e_shoff(endian) as u64;
        let shsize = header.e_shnum(endian) as u64 * header.e_shentsize(endian) as u64;
        if shoff != 0 && shoff + shsize > bytes.len() as u64 {
            return Err(truncated("section header table", shoff, shsize, bytes.len()));
        }
        let file = ElfFile32::<Endianness>::parse(bytes).map_err(|e| ElfError::Malformed(e.to_string()))?;
        let symbols = file
            .symbols()
            .filter(|s| s.is_definition() || s.address() != 0)
            .filter_map(|s| Some((s.name().ok()?.to_owned(), s.address() as u32)))
            .filter(|(n, _)| !n.is_empty())
            .collect();
        Ok(ElfImage { entry, segments, symbols })
    }

    fn segment(index: usize, ph: &ProgramHeader32<Endianness>, bytes: &[u8]) -> Result<Segment, ElfError> {
        let e = Endianness::Little;
        let (offset, filesz, memsz) = (ph.p_offset(e) as u64, ph.p_filesz(e), ph.p_memsz(e));
        let addr = ph.p_paddr(e);
        if offset + filesz as u64 > bytes.len() as u64 {
            return Err(truncated(format!("segment {index}"), offset, filesz as u64, bytes.len()));
        }
        if filesz > memsz {
            return Err(ElfError::Malformed(format!(
                "segment {index}: file size {filesz} exceeds memory size {memsz}"
            )));
        }
        if addr as u64 + memsz as u64 > 1 << 32 {
            return Err(ElfError::Malformed(format!(
                "segment {index} at 0x{addr:08x} with size {memsz} wraps the 32-bit address space"
            )));
        }
        Ok(Segment {
            addr,
            data: bytes[offset as usize..offset as usize + filesz as usize].to_vec(),
            mem_size: memsz,
            executable: ph.p_flags(e).0 & PF_X.0 != 0,
        })
    }

    /// Address of symbol `name`, if defined.
    pub fn symbol(&self, name: &str) -> Option<u32> {
        self.symbols.get(name).copied()
    }

    /// Checks that every segment lies inside one of `windows`.
    pub fn check_fits(&self, windows: &[Window]) -> Result<(), ElfError> {
        for (index, s) in self.segments.iter().enumerate() {
            if s.mem_size == 0 {
                continue;
            }
            let fits = windows.iter().any(|w| s.addr >= w.base && s.end() <= w.base as u64 + w.size as u64);
            if !fits {
                let windows = windows
                    .iter()
                    .map(|w| format!("{} 0x{:08x}..0x{:08x}", w.name, w.base, w.base as u64 + w.size as u64))
                    .collect::<Vec<_>>()
                    .join(" or ");
                return Err(ElfError::DoesNotFit { index, start: s.addr as u64, end: s.end(), windows });
            }
        }
        Ok(())
    }

    /// Writes every segment into `mem` (zero-filling `.bss` parts). Call
    /// [`check_fits`](Self::check_fits) first for a descriptive error.
    pub fn load(&self, mem: &mut Memory) -> Result<(), ElfError> {
        for (index, s) in self.segments.iter().enumerate() {
            let err =
                || ElfError::DoesNotFit { index, start: s.addr as u64, end: s.end(), windows: "the core's RAM".into() };
            let ram = mem.ram_for_mut(s.addr, s.mem_size as u64).ok_or_else(err)?;
            ram.write(s.addr, &s.data).map_err(|_| err())?;
            let bss = s.addr + s.data.len() as u32;
            ram.fill_zero(bss, (s.mem_size as usize) - s.data.len()).map_err(|_| err())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testelf::{self, SegmentSpec};

    fn good() -> Vec<u8> {
        testelf::program(0x1000, &[crate::asm::ECALL], true)
    }

    #[test]
    fn parses_segments_entry_and_symbols() {
        let img = ElfImage::parse(&good()).unwrap();
        assert_eq!(img.entry, 0x1000);
        assert_eq!(img.segments.len(), 1);
        assert_eq!(img.segments[0].addr, 0x1000);
        assert!(img.segments[0].executable);
        assert_eq!(img.symbol("tohost"), Some(0x1004));
    }

    #[test]
    fn rejects_what_is_not_an_rv32_executable() {
        assert!(matches!(ElfImage::parse(b"hello"), Err(ElfError::NotElf { .. })));
        let mut e = good();
        e[4] = 2;
        let err = ElfImage::parse(&e).unwrap_err();
        assert_eq!(err, ElfError::WrongClass { found: 2 });
        assert!(err.to_string().contains("64-bit"));
        let mut e = good();
        e[5] = 2;
        assert_eq!(ElfImage::parse(&e), Err(ElfError::WrongEndian { found: 2 }));
        let mut e = good();
        e[18] = 62; // EM_X86_64
        assert_eq!(ElfImage::parse(&e), Err(ElfError::WrongMachine { found: 62 }));
        let mut e = good();
        e[16] = 3; // ET_DYN
        assert_eq!(ElfImage::parse(&e), Err(ElfError::NotExecutable { found: 3 }));
    }

    #[test]
    fn rejects_truncated_files() {
        let e = good();
        assert!(matches!(ElfImage::parse(&e[..40]), Err(ElfError::Truncated { .. })));
        assert!(matches!(ElfImage::parse(&e[..60]), Err(ElfError::Truncated { .. })));
        // Cut inside the code segment (which starts after the one program header).
        let err = ElfImage::parse(&e[..86]).unwrap_err();
        assert!(matches!(&err, ElfError::Truncated { what, .. } if what == "segment 0"), "{err}");
    }

    #[test]
    fn rejects_an_entry_outside_code() {
        let code = crate::asm::to_bytes(&[crate::asm::ECALL]);
        let e = testelf::build(0x2000, &[SegmentSpec { addr: 0x1000, data: &code, mem_size: 4, exec: true }], &[]);
        assert_eq!(ElfImage::parse(&e), Err(ElfError::BadEntry { entry: 0x2000 }));
    }

    #[test]
    fn loads_data_and_zeroes_bss() {
        use crate::memory::{Memory, Ram};
        let e = testelf::build(
            0x1000,
            &[
                SegmentSpec { addr: 0x1000, data: &[0x73, 0, 0, 0], mem_size: 4, exec: true },
                SegmentSpec { addr: 0x2000, data: &[1, 2], mem_size: 8, exec: false },
            ],
            &[],
        );
        let img = ElfImage::parse(&e).unwrap();
        let mut mem = Memory::new(Ram::new(0, 0x4000), None);
        mem.write(0x2000, &[0xff; 8]).unwrap();
        img.load(&mut mem).unwrap();
        let mut b = [0; 8];
        mem.read(0x2000, &mut b).unwrap();
        assert_eq!(b, [1, 2, 0, 0, 0, 0, 0, 0]);
    }
}
