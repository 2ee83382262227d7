//! ELF images for the harts: parse, check, place.
//!
//! The checks are the ABI's ([`cqlab_abi::elf::Rv32Executable`], shared with
//! the driver): 32-bit little-endian RISC-V executables (`ET_EXEC`) and
//! nothing else, so a wrong file is rejected up front with what was expected
//! and what was found, never half-loaded. Segments are placed at their
//! physical address and must each lie inside one RAM window.

use crate::memory::Memory;
use cqlab_abi::elf::Rv32Executable;
use object::read::elf::ElfFile32;
use object::{Endianness, Object, ObjectSymbol};
use std::collections::BTreeMap;
use thiserror::Error;

/// Why an ELF cannot run on a core.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ElfError {
    #[error(transparent)]
    Invalid(#[from] cqlab_abi::elf::ElfError),
    #[error("malformed ELF symbol table: {0}")]
    Symbols(String),
    #[error("segment {index} (0x{start:08x}..0x{end:08x}) does not fit in {windows}")]
    DoesNotFit { index: usize, start: u64, end: u64, windows: String },
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

impl ElfImage {
    /// Parses and validates `bytes` as an RV32 executable.
    pub fn parse(bytes: &[u8]) -> Result<Self, ElfError> {
        let elf = Rv32Executable::parse(bytes)?;
        let segments = elf
            .segments()
            .map(|s| Segment { addr: s.addr, data: s.data.to_vec(), mem_size: s.mem_size, executable: s.executable })
            .collect();
        let file = ElfFile32::<Endianness>::parse(bytes).map_err(|e| ElfError::Symbols(e.to_string()))?;
        let symbols = file
            .symbols()
            .filter(|s| s.is_definition() || s.address() != 0)
            .filter_map(|s| Some((s.name().ok()?.to_owned(), s.address() as u32)))
            .filter(|(n, _)| !n.is_empty())
            .collect();
        Ok(ElfImage { entry: elf.entry(), segments, symbols })
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
    use cqlab_abi::elf::{ElfError as Invalid, ElfPart};

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
        assert!(matches!(ElfImage::parse(b"hello"), Err(ElfError::Invalid(Invalid::NotElf { .. }))));
        // What the file starts with, as much as it has: not zeros it lacks.
        let start = |b: &[u8]| ElfImage::parse(b).unwrap_err().to_string();
        assert!(start(b"").ends_with("found an empty file"), "{}", start(b""));
        assert!(start(b"\x7fE").ends_with("found [7f, 45]"), "{}", start(b"\x7fE"));
        assert!(start(b"hello").ends_with("found [68, 65, 6c, 6c]"), "{}", start(b"hello"));
        let mut e = good();
        e[4] = 2;
        let err = ElfImage::parse(&e).unwrap_err();
        assert_eq!(err, Invalid::WrongClass { found: 2 }.into());
        assert!(err.to_string().contains("64-bit"));
        let mut e = good();
        e[5] = 2;
        assert_eq!(ElfImage::parse(&e), Err(Invalid::WrongEndian { found: 2 }.into()));
        let mut e = good();
        e[18] = 62; // EM_X86_64
        assert_eq!(ElfImage::parse(&e), Err(Invalid::WrongMachine { found: 62 }.into()));
        let mut e = good();
        e[16] = 3; // ET_DYN
        assert_eq!(ElfImage::parse(&e), Err(Invalid::NotExecutable { found: 3 }.into()));
    }

    #[test]
    fn rejects_truncated_files() {
        let e = good();
        let truncated = |n: usize| match ElfImage::parse(&e[..n]) {
            Err(ElfError::Invalid(Invalid::Truncated { what, .. })) => what,
            other => panic!("{other:?}"),
        };
        assert_eq!(truncated(40), ElfPart::Header);
        assert_eq!(truncated(60), ElfPart::ProgramHeaders);
        // Cut inside the code segment (which starts after the one program header).
        assert_eq!(truncated(86), ElfPart::Segment(0));
    }

    #[test]
    fn rejects_an_entry_outside_code() {
        let code = crate::asm::to_bytes(&[crate::asm::ECALL]);
        let e = testelf::build(0x2000, &[SegmentSpec { addr: 0x1000, data: &code, mem_size: 4, exec: true }], &[]);
        assert_eq!(ElfImage::parse(&e), Err(Invalid::BadEntry { entry: 0x2000 }.into()));
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
