//! cqlab device firmware.
//!
//! The command-queue logic is plain `no_std` Rust over the [`memory::Memory`]
//! trait, so it builds and is unit-tested on the host; only [`hal`] (MMIO,
//! CSRs) and [`rt`] (entry point, panic handler) are RISC-V specific.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod boot;
pub mod memory;
pub mod trace;

#[cfg(target_arch = "riscv32")]
pub mod hal;
#[cfg(all(target_arch = "riscv32", feature = "rt"))]
pub mod rt;

/// Build identifier baked into the alive record: `$CQLAB_BUILD_ID` (hex) at
/// build time, else 0.
pub fn build_id() -> u32 {
    parse_hex(option_env!("CQLAB_BUILD_ID").unwrap_or("0"))
}

fn parse_hex(s: &str) -> u32 {
    s.bytes().filter_map(|b| (b as char).to_digit(16)).take(8).fold(0, |acc, d| acc << 4 | d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn build_id_parses_hex_prefix() {
        assert_eq!(super::parse_hex("1a2b3c4d5e"), 0x1a2b_3c4d);
        assert_eq!(super::parse_hex("0"), 0);
    }
}
