//! Feeds arbitrary bytes to the ELF loaders (the simulator's `ElfImage`,
//! the driver's `FirmwareImage` and `KernelImage`): each accepts or
//! refuses, never panics.
//! (The check itself: `fuzz/checks.rs`, shared with the corpus replay.)
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::elf(data));
