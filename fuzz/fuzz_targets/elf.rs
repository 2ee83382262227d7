//! Feeds arbitrary bytes to the ELF loaders (the simulator's `ElfImage`,
//! the driver's `FirmwareImage` and `KernelImage`): each accepts or
//! refuses, never panics.
#![no_main]

use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::arch::Arch;
use cqlab_driver::elf::FirmwareImage;
use cqlab_driver::KernelImage;
use cqlab_sim::elf::ElfImage;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(image) = ElfImage::parse(data) {
        let _ = image.symbol("tohost");
    }
    // Each image is checked against its core's code and data regions.
    for id in FirmwareId::ALL {
        for arch in Arch::ALL {
            let _ = FirmwareImage::parse("fuzz", data, id, arch);
        }
    }
    // A kernel: its id section, segments and relocations.
    for arch in Arch::ALL {
        let _ = KernelImage::parse("fuzz", data, arch);
    }
});
