//! The firmware ELFs of each chip are what the ABI's memory map says they
//! are: one image per core, linked for that core's code and data regions,
//! its stack at the top of that chip's local memory for that core.

use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::memory_map::{code, data, firmware_entry, firmware_stack_top};
use cqlab_abi::program::{KERNEL_SLOT_SIZE, KERNEL_TEXT_ADDR};
use cqlab_driver::KernelImage;
use cqlab_tests::{firmware_elf, on_both_chips};
use object::{Architecture, BinaryFormat, Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind};

const KERNELS: [&str; 8] = ["noop", "spin", "copy", "matmul", "noop-256", "noop-1k", "noop-4k", "noop-12k"];

on_both_chips! {
    fn firmware_elfs_are_riscv32_executables_placed_by_the_memory_map(chip) {
        let params = chip.board.arch().params();
        for id in FirmwareId::ALL {
            let (name, p) = (id.name(), id.processor());
            let name = &format!("{}/{name}", chip.name());
            let (code, data) = (code(p), data(p));
            let path = firmware_elf(chip, id.name());
            // Its id names this ABI and chip, and no other chip.
            let arch = chip.board.arch();
            assert!(cqlab_driver::elf::FirmwareImage::load(&path, p, arch).is_ok(), "{name}");
            for other in cqlab_abi::arch::Arch::ALL.into_iter().filter(|&a| a != arch) {
                assert!(cqlab_driver::elf::FirmwareImage::load(&path, p, other).is_err(), "{name} on {other:?}");
            }
            let bytes = std::fs::read(&path).unwrap();
            let elf = object::File::parse(&*bytes).unwrap_or_else(|e| panic!("{name}: not an object file: {e}"));
            assert_eq!(elf.format(), BinaryFormat::Elf, "{name}");
            assert_eq!(elf.architecture(), Architecture::Riscv32, "{name}: not 32-bit RISC-V");
            assert!(!elf.is_64(), "{name}");
            assert!(elf.is_little_endian(), "{name}");
            assert_eq!(elf.kind(), ObjectKind::Executable, "{name}: not an executable");
            assert_eq!(elf.entry(), firmware_entry(p) as u64, "{name}: entry point of a {} image", p.name());

            let mut text_seen = false;
            for s in elf.sections() {
                if s.size() == 0 || s.address() == 0 {
                    continue; // symbol tables, comments: not loaded
                }
                let (addr, end) = (s.address(), s.address() + s.size());
                let region = match s.kind() {
                    SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => code,
                    SectionKind::Data | SectionKind::UninitializedData => data,
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
                text_seen |= s.kind() == SectionKind::Text && addr == code.base as u64;
            }
            assert!(text_seen, "{name}: no text at the start of {}", code.name);
            for seg in elf.segments() {
                let (a, e) = (seg.address(), seg.address() + seg.size());
                let inside = [code, data].iter().any(|r| a >= r.base as u64 && e <= r.end() as u64);
                assert!(inside, "{name}: loadable segment {a:#x}..{e:#x} outside {} and {}", code.name, data.name);
            }
            // The start-up code puts the stack in the core's local memory,
            // below the NOC state, at the chip's size for that core.
            let stack_top = elf.symbols().find(|s| s.name() == Ok("__stack_top")).map(|s| s.address());
            assert_eq!(stack_top, Some(firmware_stack_top(params, p) as u64), "{name}: __stack_top");
        }
    }

    fn kernels_are_linked_for_the_kernel_text_address_and_relocatable(chip) {
        let mut sizes = Vec::new();
        for name in KERNELS {
            let path = firmware_elf(chip, name);
            let name = format!("{}/{name}", chip.name());
            let k = KernelImage::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(k.len() <= KERNEL_SLOT_SIZE, "{name}: {} bytes", k.len());
            let bytes = std::fs::read(&path).unwrap();
            let elf = object::File::parse(&*bytes).unwrap();
            assert_eq!(elf.entry(), KERNEL_TEXT_ADDR as u64, "{name}: entry point");
            sizes.push((path.file_name().unwrap().to_string_lossy().into_owned(), k.len()));
        }
        // The padded noops have about the sizes their names say.
        for (name, want) in [("noop-256", 256), ("noop-1k", 1024), ("noop-4k", 4096), ("noop-12k", 12 * 1024)] {
            let got = sizes.iter().find(|s| s.0 == name).unwrap().1;
            assert!(got >= want && got <= want + 64, "{}/{name}: {got} bytes", chip.name());
        }
    }
}
