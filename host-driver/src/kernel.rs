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

use crate::elf::{load_with, ImageError, RelocationProblem};
use crate::error::Result;
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
    pub fn load(path: &Path) -> Result<Self> {
        load_with(path, Self::parse)
    }

    /// Parses and checks a kernel: a 32-bit little-endian RISC-V executable
    /// entered at `KERNEL_TEXT_ADDR`, every segment inside one slot.
    pub fn parse(name: &str, bytes: &[u8]) -> std::result::Result<Self, ImageError> {
        let checked = Rv32Executable::parse(bytes)?;
        if checked.entry() != KERNEL_TEXT_ADDR {
            return Err(ImageError::Entry {
                found: checked.entry(),
                expected: KERNEL_TEXT_ADDR,
                rule: "the kernel text address (linker/kernel.x)",
            });
        }
        let elf = object::File::parse(bytes)?;
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

/// FNV-1a, 64-bit.
fn fnv1a(bytes: &[u8]) -> u64 {
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

    #[test]
    fn a_firmware_image_is_not_a_kernel() {
        let err = KernelImage::parse("x", b"not an elf").unwrap_err();
        assert!(matches!(err, ImageError::Elf(cqlab_abi::elf::ElfError::NotElf { .. })), "{err}");
    }
}
