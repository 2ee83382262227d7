//! The firmware ELFs are what the ABI's memory map says they are.

use cqlab_abi::memory_map::{CODE, DATA, ENTRY_POINT, FIRMWARE_STACK_TOP};
use cqlab_abi::program::{KERNEL_SLOT_SIZE, KERNEL_TEXT_ADDR};
use cqlab_driver::KernelImage;
use cqlab_tests::firmware_elf;
use object::{Architecture, BinaryFormat, Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind};

const FIRMWARE: [&str; 3] = ["prefetch", "dispatch", "worker"];
const KERNELS: [&str; 8] = ["noop", "spin", "copy", "matmul", "noop-256", "noop-1k", "noop-4k", "noop-12k"];

#[test]
fn firmware_elfs_are_riscv32_executables_placed_by_the_memory_map() {
    for name in FIRMWARE {
        let path = firmware_elf(name);
        let bytes = std::fs::read(&path).unwrap();
        let elf = object::File::parse(&*bytes).unwrap_or_else(|e| panic!("{name}: not an object file: {e}"));
        assert_eq!(elf.format(), BinaryFormat::Elf, "{name}");
        assert_eq!(elf.architecture(), Architecture::Riscv32, "{name}: not 32-bit RISC-V");
        assert!(!elf.is_64(), "{name}");
        assert!(elf.is_little_endian(), "{name}");
        assert_eq!(elf.kind(), ObjectKind::Executable, "{name}: not an executable");
        assert_eq!(elf.entry(), ENTRY_POINT as u64, "{name}: entry point");

        let mut text_seen = false;
        for s in elf.sections() {
            if s.size() == 0 || s.address() == 0 {
                continue; // symbol tables, comments: not loaded
            }
            let (addr, end) = (s.address(), s.address() + s.size());
            let region = match s.kind() {
                SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => CODE,
                SectionKind::Data | SectionKind::UninitializedData => DATA,
                other => panic!("{name}: unexpected loaded section {:?} ({other:?})", s.name()),
            };
            assert!(
                addr >= region.base as u64 && end <= region.end() as u64,
                "{name}: section {:?} at {addr:#x}..{end:#x} outside {} {:#x}..{:#x}",
                s.name(),
                region.name,
                region.base,
                region.end()
            );
            text_seen |= s.kind() == SectionKind::Text && addr == CODE.base as u64;
        }
        assert!(text_seen, "{name}: no text at the start of CODE");
        for seg in elf.segments() {
            let (a, e) = (seg.address(), seg.address() + seg.size());
            let inside = [CODE, DATA].iter().any(|r| a >= r.base as u64 && e <= r.end() as u64);
            assert!(inside, "{name}: loadable segment {a:#x}..{e:#x} outside CODE and DATA");
        }
        // The start-up code puts the stack in local memory.
        let stack_top = elf.symbols().find(|s| s.name() == Ok("__stack_top")).map(|s| s.address());
        assert_eq!(stack_top, Some(FIRMWARE_STACK_TOP as u64), "{name}: __stack_top");
    }
}

#[test]
fn kernels_are_linked_for_the_kernel_text_address_and_relocatable() {
    let mut sizes = Vec::new();
    for name in KERNELS {
        let k = KernelImage::load(&firmware_elf(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(k.len() <= KERNEL_SLOT_SIZE, "{name}: {} bytes", k.len());
        let bytes = std::fs::read(firmware_elf(name)).unwrap();
        let elf = object::File::parse(&*bytes).unwrap();
        assert_eq!(elf.entry(), KERNEL_TEXT_ADDR as u64, "{name}: entry point");
        sizes.push((name, k.len()));
    }
    // The padded noops have about the sizes their names say.
    for (name, want) in [("noop-256", 256), ("noop-1k", 1024), ("noop-4k", 4096), ("noop-12k", 12 * 1024)] {
        let got = sizes.iter().find(|s| s.0 == name).unwrap().1;
        assert!(got >= want && got <= want + 64, "{name}: {got} bytes");
    }
}
