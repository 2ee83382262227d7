//! Feeds arbitrary bytes to the ELF loaders (the simulator's `ElfImage`,
//! the driver's `FirmwareImage` and `KernelImage`): each accepts or
//! refuses, never panics.
#![no_main]

use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::Arch;
use cqlab_driver::elf::FirmwareImage;
use cqlab_driver::KernelImage;
use cqlab_sim::elf::ElfImage;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(image) = ElfImage::parse(data) {
        let _ = image.symbol("tohost");
    }
    // Each core's image is checked against its own code and data regions.
    for p in Processor::ALL {
        for arch in Arch::ALL {
            let _ = FirmwareImage::parse("fuzz", data, p, arch);
        }
    }
    // A kernel: its id section, segments and relocations.
    for arch in Arch::ALL {
        let _ = KernelImage::parse("fuzz", data, arch);
    }
});
