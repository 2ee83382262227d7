//! Kernel images: RISC-V ELFs linked for kernel text slot 0
//! (`program::KERNEL_TEXT_ADDR`, `linker/kernel.x`) with their relocations
//! kept (`--emit-relocs`), flattened into one contiguous image and
//! relocated for whichever slot the host puts them in.
//!
//! Slots differ by multiples of 4 KiB, so moving an image by `delta` adds
//! `delta` to absolute words (`R_RISCV_32`) and to the upper immediates of
//! absolute `lui`s (`R_RISCV_HI20`) that point into the image; their low
//! twelve bits and every PC-relative reference stay as they are. Any other
//! relocation into the image is refused: such a kernel cannot move.
//!
//! A kernel names the ABI and chip it was built for in a section it does
//! not load (`cqlab_abi::boot::KERNEL_ID_SECTION`, emitted by `kernel!`):
//! one of another ABI or chip, or with no id, is refused before anything
//! is uploaded, as a firmware image is by the words after its entry.

use crate::elf::{check_id_words, load_with, ImageError, RelocationProblem};
use crate::error::Result;
use cqlab_abi::arch::Arch;
use cqlab_abi::boot::KERNEL_ID_SECTION;
use cqlab_abi::elf::Rv32Executable;
use cqlab_abi::program::{kernel_slot, KERNEL_SLOTS, KERNEL_SLOT_SIZE, KERNEL_TEXT_ADDR};
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};
use std::path::Path;

// RISC-V ELF relocation types (RISC-V ELF psABI, "Relocations").
use object::elf::{
    R_RISCV_32, R_RISCV_ALIGN, R_RISCV_BRANCH, R_RISCV_CALL, R_RISCV_CALL_PLT, R_RISCV_HI20, R_RISCV_JAL,
    R_RISCV_LO12_I, R_RISCV_LO12_S, R_RISCV_PCREL_HI20, R_RISCV_PCREL_LO12_I, R_RISCV_PCREL_LO12_S, R_RISCV_RELAX,
    R_RISCV_RVC_BRANCH, R_RISCV_RVC_JUMP,
};

/// How one image word moves with the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fixup {
    /// A 32-bit absolute address: add the delta.
    Word,
    /// A `lui` of an absolute address's upper bits: add the delta to the
    /// instruction (its immediate is bits 31..12, the delta a multiple of 4 KiB).
    Hi20,
}

/// A checked, flattened kernel image.
#[derive(Clone, Debug)]
pub struct KernelImage {
    pub name: String,
    /// Bytes from `KERNEL_TEXT_ADDR` (bss included, as zeroes).
    pub image: Vec<u8>,
    /// Identity: a hash of the name and image, the same for the same build.
    pub build_id: u64,
    /// The largest stack frame one of its functions allocates (`addi sp,
    /// sp, -N` in its executable code): a lower bound of the stack it needs
    /// on top of the firmware that calls it.
    pub max_frame: u32,
    fixups: Vec<(u32, Fixup)>,
}

/// `addi sp, sp, imm` without its immediate (I-type, opcode 0x13, funct3 0,
/// rd = rs1 = x2).
const ADDI_SP_SP: u32 = 2 << 15 | 2 << 7 | 0x13;

/// The largest frame `addi sp, sp, -N` allocates in the RV32 code `text`.
fn max_frame(text: &[u8]) -> u32 {
    text.chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
        .filter(|&w| w & 0xF_FFFF == ADDI_SP_SP)
        .map(|w| (w as i32) >> 20)
        .filter(|&imm| imm < 0)
        .map(|imm| imm.unsigned_abs())
        .max()
        .unwrap_or(0)
}

impl KernelImage {
    /// Loads the kernel of an `arch` chip at `path`.
    pub fn load(path: &Path, arch: Arch) -> Result<Self> {
        load_with(path, |name, bytes| Self::parse(name, bytes, arch))
    }

    /// Parses and checks a kernel of an `arch` chip: a 32-bit
    /// little-endian RISC-V executable whose id names this ABI and `arch`
    /// (checked first: another chip's or ABI's kernel is refused for that,
    /// whatever else differs), entered at `KERNEL_TEXT_ADDR`, every
    /// segment inside one slot.
    pub fn parse(name: &str, bytes: &[u8], arch: Arch) -> std::result::Result<Self, ImageError> {
        let checked = Rv32Executable::parse(bytes)?;
        let elf = object::File::parse(bytes)?;
        check_id(&elf, arch)?;
        if checked.entry() != KERNEL_TEXT_ADDR {
            return Err(ImageError::Entry {
                found: checked.entry(),
                expected: KERNEL_TEXT_ADDR,
                rule: "the kernel text address (linker/kernel.x)",
            });
        }
        let (base, limit) = (KERNEL_TEXT_ADDR as u64, KERNEL_TEXT_ADDR as u64 + KERNEL_SLOT_SIZE as u64);
        let mut image = Vec::new();
        let mut frame = 0;
        for seg in checked.segments().filter(|s| s.mem_size > 0) {
            if seg.executable {
                frame = frame.max(max_frame(seg.data));
            }
            let (addr, size, data) = (seg.addr as u64, seg.mem_size as u64, seg.data);
            if addr < base || addr + size > limit {
                return Err(ImageError::Placement { start: addr, end: addr + size, allowed: "its kernel slot" });
            }
            let end = (addr + size - base) as usize;
            if image.len() < end {
                image.resize(end, 0);
            }
            let at = (addr - base) as usize;
            image[at..at + data.len()].copy_from_slice(data);
        }
        image.resize(image.len().next_multiple_of(16), 0);
        let in_image = |a: u64| a >= base && a < base + image.len() as u64;
        let mut fixups = Vec::new();
        let mut saw_relocations = false;
        for section in elf.sections() {
            let applies = section.address() != 0 && in_image(section.address());
            for (offset, reloc) in section.relocations() {
                saw_relocations = true;
                if !applies {
                    continue;
                }
                let bad = |problem| ImageError::Relocation { offset, problem };
                let RelocationFlags::Elf { r_type } = reloc.flags() else {
                    return Err(bad(RelocationProblem::NotElf));
                };
                let target = match reloc.target() {
                    RelocationTarget::Symbol(i) => {
                        elf.symbol_by_index(i).map_err(|e| bad(RelocationProblem::Target(e)))?.address()
                    }
                    RelocationTarget::Section(i) => {
                        elf.section_by_index(i).map_err(|e| bad(RelocationProblem::Target(e)))?.address()
                    }
                    _ => 0,
                };
                let target = target.wrapping_add(reloc.addend() as u64);
                let internal = in_image(target);
                let at = offset
                    .checked_sub(base)
                    .filter(|&o| o + 4 <= image.len() as u64)
                    .ok_or_else(|| bad(RelocationProblem::Outside))? as u32;
                match r_type {
                    R_RISCV_32 if internal => fixups.push((at, Fixup::Word)),
                    R_RISCV_HI20 if internal => fixups.push((at, Fixup::Hi20)),
                    // Low twelve bits do not change by a multiple of 4 KiB;
                    // absolute references outside the image do not move.
                    R_RISCV_32 | R_RISCV_HI20 | R_RISCV_LO12_I | R_RISCV_LO12_S => {}
                    R_RISCV_BRANCH | R_RISCV_JAL | R_RISCV_CALL | R_RISCV_CALL_PLT | R_RISCV_RVC_BRANCH
                    | R_RISCV_RVC_JUMP
                        if internal => {}
                    // PCREL_LO12 names the auipc it pairs with, never data.
                    R_RISCV_PCREL_HI20 if internal => {}
                    R_RISCV_PCREL_LO12_I | R_RISCV_PCREL_LO12_S | R_RISCV_ALIGN | R_RISCV_RELAX => {}
                    _ => return Err(bad(RelocationProblem::CannotMove { r_type: r_type.0, target })),
                }
            }
        }
        if !saw_relocations {
            return Err(ImageError::NoRelocations);
        }
        let build_id = fnv1a(name.as_bytes()) ^ fnv1a(&image).rotate_left(17);
        Ok(Self { name: name.to_owned(), image, build_id, max_frame: frame, fixups })
    }

    /// The same image under another name, as a distinct kernel (another
    /// build id): what benchmarks use to force first uploads.
    pub fn renamed(&self, name: &str) -> Self {
        let build_id = fnv1a(name.as_bytes()) ^ fnv1a(&self.image).rotate_left(17);
        Self { name: name.to_owned(), build_id, ..self.clone() }
    }

    /// Image bytes (a multiple of 16).
    pub fn len(&self) -> u32 {
        self.image.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.image.is_empty()
    }

    /// The image as it must lie in kernel text slot `slot`.
    pub fn for_slot(&self, slot: u32) -> Vec<u8> {
        let mut out = vec![0; self.image.len()];
        self.write_for_slot(slot, &mut out);
        out
    }

    /// Writes the image as it must lie in kernel text slot `slot` into `out`
    /// (`len()` bytes): one copy, then the fixups in place, so an upload
    /// relocates straight into the issue queue.
    pub fn write_for_slot(&self, slot: u32, out: &mut [u8]) {
        assert!(slot < KERNEL_SLOTS, "kernel slot {slot} of {KERNEL_SLOTS}");
        let delta = kernel_slot(slot) - KERNEL_TEXT_ADDR;
        out.copy_from_slice(&self.image);
        for &(at, _) in &self.fixups {
            let at = at as usize;
            let word = u32::from_le_bytes(out[at..at + 4].try_into().expect("4 bytes"));
            out[at..at + 4].copy_from_slice(&word.wrapping_add(delta).to_le_bytes());
        }
    }
}

#[cfg(test)]
impl KernelImage {
    /// A 16-byte image with no fixups, for host-side tests.
    pub(crate) fn test_image(name: &str) -> Self {
        Self {
            name: name.into(),
            image: vec![0; 16],
            build_id: fnv1a(name.as_bytes()),
            max_frame: 0,
            fixups: Vec::new(),
        }
    }
}

/// The kernel's id section (`KERNEL_ID_SECTION`): this ABI and `arch`.
fn check_id(elf: &object::File, arch: Arch) -> std::result::Result<(), ImageError> {
    let missing = || ImageError::NoKernelId { section: KERNEL_ID_SECTION };
    let section = elf.section_by_name(KERNEL_ID_SECTION).ok_or_else(missing)?;
    check_id_words(section.data()?, arch, missing())
}

/// FNV-1a, 64-bit (also what `cqlab` campaign records digest builds with).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixups_move_absolute_words_and_upper_immediates_only() {
        let mut k = KernelImage {
            name: "t".into(),
            image: vec![0; 16],
            build_id: 0,
            max_frame: 0,
            fixups: vec![(0, Fixup::Word), (4, Fixup::Hi20)],
        };
        k.image[0..4].copy_from_slice(&(KERNEL_TEXT_ADDR + 8).to_le_bytes());
        // lui a0, %hi(KERNEL_TEXT_ADDR)
        let lui = (KERNEL_TEXT_ADDR & !0xfff) | (10 << 7) | 0x37;
        k.image[4..8].copy_from_slice(&lui.to_le_bytes());
        k.image[8..12].copy_from_slice(&0x1234_5678u32.to_le_bytes());
        let moved = k.for_slot(2);
        let delta = kernel_slot(2) - KERNEL_TEXT_ADDR;
        assert_eq!(u32::from_le_bytes(moved[0..4].try_into().unwrap()), KERNEL_TEXT_ADDR + 8 + delta);
        assert_eq!(u32::from_le_bytes(moved[4..8].try_into().unwrap()), lui + delta);
        assert_eq!(moved[8..], k.image[8..]);
        assert_eq!(k.for_slot(0), k.image);
    }

    #[test]
    fn the_largest_stack_frame_is_found_in_the_code() {
        // addi sp, sp, -2032 (0x81010113), addi sp, sp, -16 (0xff010113),
        // addi sp, sp, 16 (0x01010113), and addi a0, sp, -64 (not sp).
        let words: [u32; 4] = [0xff01_0113, 0x8101_0113, 0x0101_0113, 0xfc01_0513];
        let text: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(max_frame(&text), 2032);
        assert_eq!(max_frame(&text[..4]), 16);
        assert_eq!(max_frame(&[]), 0);
    }

    /// A kernel ELF with one executable segment (a `ret` at
    /// `KERNEL_TEXT_ADDR`) and, if given, an id section (not allocated)
    /// holding `id`, built field by field (System V ABI, "ELF Header",
    /// "Program Header", "Section Header").
    fn kernel_elf(id: Option<&[u8]>) -> Vec<u8> {
        use cqlab_abi::elf::{
            Elf32Header, Elf32ProgramHeader, CLASS_32, DATA_LSB, MACHINE_RISCV, MAGIC, PF_X, PT_LOAD,
        };
        use zerocopy::IntoBytes;
        const SHT_PROGBITS: u32 = 1;
        const SHT_STRTAB: u32 = 3;
        // ELF32 section headers are ten words; the ABI has no struct for them.
        let (header, ph, sh) = (size_of::<Elf32Header>() as u32, size_of::<Elf32ProgramHeader>() as u32, 40u32);
        let text = 0x0000_8067u32.to_le_bytes(); // ret
        let names = format!("\0.shstrtab\0{KERNEL_ID_SECTION}\0");
        // Header, program header, text, names, id, then the section headers.
        let text_at = header + ph;
        let names_at = text_at + text.len() as u32;
        let id_at = names_at + names.len() as u32;
        let id_len = id.map_or(0, |b| b.len() as u32);
        let shoff = (id_at + id_len).next_multiple_of(4);
        let section = |name: u32, kind: u32, flags: u32, offset: u32, size: u32| {
            [name, kind, flags, 0, offset, size, 0, 0, 1, 0].iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>()
        };
        let mut sections = vec![section(0, 0, 0, 0, 0), section(1, SHT_STRTAB, 0, names_at, names.len() as u32)];
        if id.is_some() {
            sections.push(section(11, SHT_PROGBITS, 0, id_at, id_len));
        }
        let mut ident = [0u8; 16];
        ident[..4].copy_from_slice(&MAGIC);
        (ident[4], ident[5], ident[6]) = (CLASS_32, DATA_LSB, 1);
        let file = Elf32Header {
            e_ident: ident,
            e_type: cqlab_abi::elf::TYPE_EXEC,
            e_machine: MACHINE_RISCV,
            e_version: 1,
            e_entry: KERNEL_TEXT_ADDR,
            e_phoff: header,
            e_shoff: shoff,
            e_ehsize: header as u16,
            e_phentsize: ph as u16,
            e_phnum: 1,
            e_shentsize: sh as u16,
            e_shnum: sections.len() as u16,
            e_shstrndx: 1,
            ..Default::default()
        };
        let load = Elf32ProgramHeader {
            p_type: PT_LOAD,
            p_offset: text_at,
            p_vaddr: KERNEL_TEXT_ADDR,
            p_paddr: KERNEL_TEXT_ADDR,
            p_filesz: text.len() as u32,
            p_memsz: text.len() as u32,
            p_flags: PF_X,
            p_align: 4,
        };
        let mut bytes = [file.as_bytes(), load.as_bytes(), &text, names.as_bytes()].concat();
        bytes.extend_from_slice(id.unwrap_or_default());
        bytes.resize(shoff as usize, 0);
        bytes.extend(sections.concat());
        bytes
    }

    /// Id words as they lie in the section.
    fn id(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// A kernel names its ABI and chip in its id section: one of another
    /// chip or ABI, or with no id, is refused before the rest of it is
    /// looked at; a good id lets the checks go on (this test image then
    /// stops at its missing relocations).
    #[test]
    fn a_kernel_is_refused_by_its_id_section() {
        use cqlab_abi::boot::{image_arch_code, IMAGE_MAGIC};
        use cqlab_abi::ABI_VERSION;
        let (wh, bh) = (image_arch_code(Arch::Wormhole), image_arch_code(Arch::Blackhole));
        let parse = |elf: &[u8], arch| KernelImage::parse("k", elf, arch).unwrap_err();

        let good = kernel_elf(Some(&id(&[IMAGE_MAGIC, ABI_VERSION, wh])));
        assert!(check_id(&object::File::parse(&*good).unwrap(), Arch::Wormhole).is_ok());
        assert!(matches!(parse(&good, Arch::Wormhole), ImageError::NoRelocations));

        let err = parse(&good, Arch::Blackhole);
        assert!(matches!(&err, ImageError::ImageArch { found, expected: "blackhole" } if found == "wormhole"), "{err}");
        assert!(err.to_string().contains("built for wormhole, the device is a blackhole"), "{err}");
        let blackhole = kernel_elf(Some(&id(&[IMAGE_MAGIC, ABI_VERSION, bh])));
        let err = parse(&blackhole, Arch::Wormhole);
        assert!(err.to_string().contains("built for blackhole, the device is a wormhole"), "{err}");
        let err = parse(&kernel_elf(Some(&id(&[IMAGE_MAGIC, ABI_VERSION, 9]))), Arch::Wormhole);
        assert!(err.to_string().contains("unknown chip (code 9)"), "{err}");

        let newer = ABI_VERSION + 1;
        let err = parse(&kernel_elf(Some(&id(&[IMAGE_MAGIC, newer, wh]))), Arch::Wormhole);
        let abi = matches!(err, ImageError::ImageAbi { found, expected } if found == newer && expected == ABI_VERSION);
        assert!(abi, "{err}");

        let no_id = |err: &ImageError| matches!(err, ImageError::NoKernelId { section: KERNEL_ID_SECTION });
        let err = parse(&kernel_elf(None), Arch::Wormhole);
        assert!(no_id(&err), "{err}");
        assert!(err.to_string().contains("no cqlab kernel id (ELF section .cqlab.image_id)"), "{err}");
        // Another magic, a word short, a word long: no id either.
        for bytes in [
            id(&[0, ABI_VERSION, wh]),
            id(&[IMAGE_MAGIC, ABI_VERSION]),
            id(&[IMAGE_MAGIC, ABI_VERSION, wh, 0]),
            Vec::new(),
        ] {
            let err = parse(&kernel_elf(Some(&bytes)), Arch::Wormhole);
            assert!(no_id(&err), "{} id bytes: {err}", bytes.len());
        }
    }

    #[test]
    fn a_firmware_image_is_not_a_kernel() {
        let err = KernelImage::parse("x", b"not an elf", Arch::Wormhole).unwrap_err();
        assert!(matches!(err, ImageError::Elf(cqlab_abi::elf::ElfError::NotElf { .. })), "{err}");
    }
}
