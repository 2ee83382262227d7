//! The firmware ELFs of each chip are what the ABI's memory map says they
//! are: one image per core, linked for that core's code and data regions,
//! its stack at the top of that chip's local memory for that core. Every
//! image, firmware or kernel, names its ABI and chip, and is refused on
//! another chip.

use cqlab_abi::arch::Arch;
use cqlab_abi::boot::{KERNEL_ID_SECTION, KERNEL_ID_WORDS};
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::memory_map::{code, data, firmware_entry, firmware_stack_top};
use cqlab_abi::program::{KERNEL_SLOT_SIZE, KERNEL_TEXT_ADDR};
use cqlab_driver::elf::ImageError;
use cqlab_driver::{CoreRange, Device, DeviceConfig, DriverError, KernelImage};
use cqlab_tests::{firmware_elf, on_both_chips};
use object::{
    Architecture, BinaryFormat, Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionFlags,
    SectionKind,
};

const KERNELS: [&str; 8] = ["noop", "spin", "copy", "matmul", "noop-256", "noop-1k", "noop-4k", "noop-12k"];

on_both_chips! {
    fn firmware_elfs_are_riscv32_executables_placed_by_the_memory_map(chip) {
        let params = chip.board.arch().params();
        for id in FirmwareId::ALL {
            let (name, p) = (id.name(), id.processor());
            let name = &format!("{}/{name}", chip.name());
            let (code, data) = (code(p), data(p));
            let path = firmware_elf(chip, id.name());
            // Its id names this ABI, chip and role, and no other chip or role.
            let arch = chip.board.arch();
            assert!(cqlab_driver::elf::FirmwareImage::load(&path, id, arch).is_ok(), "{name}");
            for other in cqlab_abi::arch::Arch::ALL.into_iter().filter(|&a| a != arch) {
                assert!(cqlab_driver::elf::FirmwareImage::load(&path, id, other).is_err(), "{name} on {other:?}");
            }
            for role in FirmwareId::ALL.into_iter().filter(|&r| r != id && r.processor() == p) {
                let err = cqlab_driver::elf::FirmwareImage::load(&path, role, arch).unwrap_err().to_string();
                assert!(err.contains(&format!("built as the {} firmware", id.name())), "{name} as {role:?}: {err}");
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
            let arch = chip.board.arch();
            let k = KernelImage::load(&path, arch).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(k.len() <= KERNEL_SLOT_SIZE, "{name}: {} bytes", k.len());
            let bytes = std::fs::read(&path).unwrap();
            let elf = object::File::parse(&*bytes).unwrap();
            assert_eq!(elf.entry(), KERNEL_TEXT_ADDR as u64, "{name}: entry point");
            // Its id names this ABI and chip, and no other chip; it is in
            // a section that is not allocated, so in no loaded segment.
            for other in Arch::ALL.into_iter().filter(|&a| a != arch) {
                let err = KernelImage::load(&path, other).unwrap_err();
                let refused = matches!(err, DriverError::BadElf { reason: ImageError::ImageArch { .. }, .. });
                assert!(refused, "{name}: {err}");
            }
            let id = elf.section_by_name(KERNEL_ID_SECTION).unwrap_or_else(|| panic!("{name}: no id section"));
            let SectionFlags::Elf { sh_flags, .. } = id.flags() else { unreachable!("an ELF section") };
            assert!(!sh_flags.contains(object::elf::SHF_ALLOC), "{name}: its id section is allocated");
            assert_eq!((id.address(), id.size()), (0, 4 * KERNEL_ID_WORDS as u64), "{name}: id section");
            let (at, _) = id.file_range().unwrap();
            for seg in elf.segments() {
                let (off, len) = seg.file_range();
                assert!(at < off || at >= off + len, "{name}: its id lies in a segment at {:#x}", seg.address());
            }
            sizes.push((path.file_name().unwrap().to_string_lossy().into_owned(), k.len()));
        }
        // The padded noops have about the sizes their names say.
        for (name, want) in [("noop-256", 256), ("noop-1k", 1024), ("noop-4k", 4096), ("noop-12k", 12 * 1024)] {
            let got = sizes.iter().find(|s| s.0 == name).unwrap().1;
            assert!(got >= want && got <= want + 64, "{}/{name}: {got} bytes", chip.name());
        }
    }
}

/// A firmware root holding `chip`'s images, but the other chip's `name`
/// where `chip`'s kernel `name` is expected.
fn root_with_the_other_chips(chip: &cqlab_tests::TestChip, name: &str) -> std::path::PathBuf {
    let arch = chip.board.arch();
    let other = Arch::ALL.into_iter().find(|&a| a != arch).unwrap();
    let root = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("kernel-id-{}", chip.name()));
    let dir = cqlab_tests::copy_firmware(chip, &root);
    let theirs = cqlab_driver::config::chip_dir(&cqlab_tests::firmware_dir(), other).join(name);
    std::fs::copy(theirs, dir.join(name)).unwrap();
    root
}

on_both_chips! {
    /// The other chip's `matmul` copied where this chip's belongs (the
    /// same entry and slot, code for another chip's registers) is refused
    /// by its id, naming the file: by a command's check before its first
    /// run, and by a booted device asked to load it, which stays usable.
    fn another_chips_kernel_is_refused_naming_the_file(chip) {
        let arch = chip.board.arch();
        let root = root_with_the_other_chips(chip, "matmul");
        let path = cqlab_driver::config::chip_dir(&root, arch).join("matmul");
        let expect_refused = |err: DriverError| {
            let DriverError::BadElf { path: named, reason: ImageError::ImageArch { found, expected } } = &err else {
                panic!("{}: expected a refusal by the kernel's id, got {err}", chip.name());
            };
            assert_eq!(named, &path.display().to_string());
            assert_ne!(found, expected);
            assert_eq!(*expected, arch.short_name());
            let text = err.to_string();
            let want = format!("{}: built for {found}, the device is a {expected}", path.display());
            assert!(text.contains(&want), "{text}");
        };
        let cfg = DeviceConfig { firmware_dir: root, ..cqlab_tests::config(chip) };
        cfg.check_kernels(arch, ["noop", "spin"]).unwrap();
        expect_refused(cfg.check_kernels(arch, ["noop", "matmul"]).unwrap_err());
        // A device whose default kernel it is refuses to boot.
        let sim = chip.sim(41);
        let matmul_default = DeviceConfig { worker_kernel: "matmul".into(), ..cfg.clone() };
        let mut dev = Device::embedded(sim.clone(), matmul_default).expect("simulator starts");
        expect_refused(dev.boot().unwrap_err());
        // One booted with another refuses to load it, and runs on.
        let mut dev = Device::embedded(sim, cfg).expect("simulator starts");
        dev.boot().unwrap_or_else(|e| panic!("boot failed on {} (seed 41): {e}", chip.name()));
        expect_refused(dev.load_kernel("matmul").unwrap_err());
        let mut cq = dev.cq(0).unwrap();
        cq.launch(CoreRange::new((0, 0), (0, 0)), &[]).unwrap();
        cq.finish().unwrap();
    }
}
