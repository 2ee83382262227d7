//! The images cores run: 32-bit little-endian RISC-V ELF executables. One
//! validator, shared by the simulator (which boots any such image) and the
//! driver (which loads firmware and kernels through the BAR), so both accept
//! and refuse the same files for the same reasons.
//!
//! [`Rv32Executable::parse`] checks the identification, machine and type,
//! that every table and `PT_LOAD` segment lies inside the file, that no
//! segment has more file than memory bytes or wraps the address space, and
//! that the entry point is in an executable segment. Where an image may be
//! placed (the memory map) is the caller's rule. No allocation: a view of
//! the caller's bytes.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `e_ident` magic.
pub const MAGIC: [u8; 4] = *b"\x7fELF";
/// `e_ident[EI_CLASS]` of a 32-bit file.
pub const CLASS_32: u8 = 1;
/// `e_ident[EI_DATA]` of a little-endian file.
pub const DATA_LSB: u8 = 1;
/// `e_machine` of RISC-V (`EM_RISCV`).
pub const MACHINE_RISCV: u16 = 243;
/// `e_type` of an executable (`ET_EXEC`).
pub const TYPE_EXEC: u16 = 2;
/// `p_type` of a loadable segment (`PT_LOAD`).
pub const PT_LOAD: u32 = 1;
/// `p_flags` bit of an executable segment (`PF_X`).
pub const PF_X: u32 = 1;

/// The ELF32 file header (System V ABI, "ELF Header").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Elf32Header {
    pub e_ident: [u8; 16],
    pub e_type: u16,
    pub e_machine: u16,
    pub e_version: u32,
    pub e_entry: u32,
    pub e_phoff: u32,
    pub e_shoff: u32,
    pub e_flags: u32,
    pub e_ehsize: u16,
    pub e_phentsize: u16,
    pub e_phnum: u16,
    pub e_shentsize: u16,
    pub e_shnum: u16,
    pub e_shstrndx: u16,
}
assert_layout!(Elf32Header, 52, e_ident => 0, e_type => 16, e_machine => 18, e_version => 20, e_entry => 24,
    e_phoff => 28, e_shoff => 32, e_flags => 36, e_ehsize => 40, e_phentsize => 42, e_phnum => 44,
    e_shentsize => 46, e_shnum => 48, e_shstrndx => 50);

/// An ELF32 program header (System V ABI, "Program Header").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Elf32ProgramHeader {
    pub p_type: u32,
    pub p_offset: u32,
    pub p_vaddr: u32,
    pub p_paddr: u32,
    pub p_filesz: u32,
    pub p_memsz: u32,
    pub p_flags: u32,
    pub p_align: u32,
}
assert_layout!(Elf32ProgramHeader, 32, p_type => 0, p_offset => 4, p_vaddr => 8, p_paddr => 12, p_filesz => 16,
    p_memsz => 20, p_flags => 24, p_align => 28);

/// A part of the file, for [`ElfError::Truncated`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfPart {
    Identification,
    Header,
    ProgramHeaders,
    SectionHeaders,
    /// The file bytes of program header `n`'s segment.
    Segment(usize),
}

impl core::fmt::Display for ElfPart {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Identification => write!(f, "ELF identification"),
            Self::Header => write!(f, "ELF header"),
            Self::ProgramHeaders => write!(f, "program header table"),
            Self::SectionHeaders => write!(f, "section header table"),
            Self::Segment(n) => write!(f, "segment {n}"),
        }
    }
}

/// Why bytes are not an RV32 executable: what was expected, what was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file: expected magic 7f 45 4c 46, found {}", FileStart(&found[..*len as usize]))]
    NotElf {
        found: [u8; 4],
        /// Bytes of `found` the file has (fewer than four when it is shorter).
        len: u8,
    },
    #[error("not a 32-bit ELF: expected class 1 (ELFCLASS32), found {found}{}", if *found == 2 { " (64-bit)" } else { "" })]
    WrongClass { found: u8 },
    #[error("not a little-endian ELF: expected data encoding 1 (LSB), found {found}")]
    WrongEndian { found: u8 },
    #[error("not a RISC-V ELF: expected e_machine {MACHINE_RISCV} (EM_RISCV), found {found}")]
    WrongMachine { found: u16 },
    #[error("not an executable: expected e_type {TYPE_EXEC} (ET_EXEC), found {found}")]
    NotExecutable { found: u16 },
    #[error("truncated ELF: {what} needs bytes {start}..{end} but the file has {len}")]
    Truncated { what: ElfPart, start: u64, end: u64, len: usize },
    #[error("malformed ELF: program headers of {found} bytes (ELF32's are 32)")]
    ProgramHeaderSize { found: u16 },
    #[error("malformed ELF: segment {index}: file size {file} exceeds memory size {mem}")]
    FileExceedsMemory { index: usize, file: u32, mem: u32 },
    #[error("malformed ELF: segment {index} at {addr:#010x} with size {size} wraps the 32-bit address space")]
    Wraps { index: usize, addr: u32, size: u32 },
    #[error("ELF has no loadable segment")]
    NoSegments,
    #[error("entry point {entry:#010x} is not inside an executable segment")]
    BadEntry { entry: u32 },
}

/// The first bytes of a file, for a message: "an empty file" when there
/// are none (not four zeros it does not have).
struct FileStart<'a>(&'a [u8]);

impl core::fmt::Display for FileStart<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            [] => f.write_str("an empty file"),
            b => write!(f, "{b:02x?}"),
        }
    }
}

/// One `PT_LOAD` segment, placed at its physical address (`p_paddr`, equal
/// to `p_vaddr` for cqlab's linker scripts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment<'a> {
    /// Its program header's index.
    pub index: usize,
    pub addr: u32,
    /// File bytes; the rest up to `mem_size` is zero.
    pub data: &'a [u8],
    pub mem_size: u32,
    pub executable: bool,
}

impl LoadSegment<'_> {
    /// One past its last byte.
    pub fn end(&self) -> u64 {
        self.addr as u64 + self.mem_size as u64
    }
}

/// A checked RV32 executable: a view of its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Rv32Executable<'a> {
    bytes: &'a [u8],
    header: Elf32Header,
}

impl<'a> Rv32Executable<'a> {
    /// Checks `bytes` (see the module documentation).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ElfError> {
        let len = bytes.len();
        if len < 4 || bytes[..4] != MAGIC {
            let mut found = [0; 4];
            let n = len.min(4);
            found[..n].copy_from_slice(&bytes[..n]);
            return Err(ElfError::NotElf { found, len: n as u8 });
        }
        let truncated = |what, start: u64, size: u64| ElfError::Truncated { what, start, end: start + size, len };
        if len < 16 {
            return Err(truncated(ElfPart::Identification, 0, 16));
        }
        if bytes[4] != CLASS_32 {
            return Err(ElfError::WrongClass { found: bytes[4] });
        }
        if bytes[5] != DATA_LSB {
            return Err(ElfError::WrongEndian { found: bytes[5] });
        }
        let Ok((header, _)) = Elf32Header::read_from_prefix(bytes) else {
            return Err(truncated(ElfPart::Header, 0, core::mem::size_of::<Elf32Header>() as u64));
        };
        if header.e_machine != MACHINE_RISCV {
            return Err(ElfError::WrongMachine { found: header.e_machine });
        }
        if header.e_type != TYPE_EXEC {
            return Err(ElfError::NotExecutable { found: header.e_type });
        }
        let table = header.e_phnum as u64 * header.e_phentsize as u64;
        if header.e_phnum > 0 && header.e_phentsize as usize != core::mem::size_of::<Elf32ProgramHeader>() {
            return Err(ElfError::ProgramHeaderSize { found: header.e_phentsize });
        }
        if header.e_phoff as u64 + table > len as u64 {
            return Err(truncated(ElfPart::ProgramHeaders, header.e_phoff as u64, table));
        }
        let elf = Self { bytes, header };
        let mut any = false;
        for (index, ph) in elf.loads() {
            let (offset, file, mem) = (ph.p_offset as u64, ph.p_filesz, ph.p_memsz);
            if offset + file as u64 > len as u64 {
                return Err(truncated(ElfPart::Segment(index), offset, file as u64));
            }
            if file > mem {
                return Err(ElfError::FileExceedsMemory { index, file, mem });
            }
            if ph.p_paddr as u64 + mem as u64 > 1 << 32 {
                return Err(ElfError::Wraps { index, addr: ph.p_paddr, size: mem });
            }
            any |= mem > 0;
        }
        if !any {
            return Err(ElfError::NoSegments);
        }
        let sections = header.e_shnum as u64 * header.e_shentsize as u64;
        if header.e_shoff != 0 && header.e_shoff as u64 + sections > len as u64 {
            return Err(truncated(ElfPart::SectionHeaders, header.e_shoff as u64, sections));
        }
        let entry = header.e_entry;
        if !elf.segments().any(|s| s.executable && entry >= s.addr && (entry as u64) < s.end()) {
            return Err(ElfError::BadEntry { entry });
        }
        Ok(elf)
    }

    pub fn header(&self) -> &Elf32Header {
        &self.header
    }

    pub fn entry(&self) -> u32 {
        self.header.e_entry
    }

    /// The `PT_LOAD` program headers with their indices.
    fn loads(&self) -> impl Iterator<Item = (usize, Elf32ProgramHeader)> + 'a {
        let (bytes, h) = (self.bytes, self.header);
        (0..h.e_phnum as usize).filter_map(move |i| {
            let at = h.e_phoff as usize + i * core::mem::size_of::<Elf32ProgramHeader>();
            let (ph, _) = Elf32ProgramHeader::read_from_prefix(bytes.get(at..)?).ok()?;
            (ph.p_type == PT_LOAD).then_some((i, ph))
        })
    }

    /// Its loadable segments, in program-header order (empty ones included).
    pub fn segments(&self) -> impl Iterator<Item = LoadSegment<'a>> + 'a {
        let bytes = self.bytes;
        self.loads().map(move |(index, ph)| LoadSegment {
            index,
            addr: ph.p_paddr,
            data: &bytes[ph.p_offset as usize..ph.p_offset as usize + ph.p_filesz as usize],
            mem_size: ph.p_memsz,
            executable: ph.p_flags & PF_X != 0,
        })
    }
}
