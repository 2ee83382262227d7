//! cqlab device firmware.
//!
//! The command-queue logic is plain `no_std` Rust over the
//! [`platform::Platform`] trait, so it builds and is unit-tested on the
//! host; only [`hal`] (the NIU and debug registers, CSRs) and [`rt`] (entry
//! points, panic handlers) are RISC-V specific.
//!
//! The firmware is built for one chip: the cargo feature `arch-wormhole` or
//! `arch-blackhole` picks [`CHIP`], so every register address and size
//! folds to a constant. Host builds (unit tests) without either take
//! Wormhole, the chip with the smaller L1 and local memories.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod boot;
pub mod cq_config;
pub mod dispatch;
pub mod kernels;
pub mod memory;
pub mod mutant;
pub mod places;
pub mod platform;
pub mod prefetch;
pub mod replay;
pub mod report;
pub mod ring;
pub mod trace;
pub mod worker;

#[cfg(test)]
mod cq_tests;
#[cfg(test)]
mod fake;
#[cfg(test)]
mod worker_tests;

#[cfg(target_arch = "riscv32")]
pub mod hal;
#[cfg(all(target_arch = "riscv32", feature = "rt"))]
pub mod rt;

use cqlab_abi::arch::ArchParams;
use cqlab_abi::decode::DecodeErrorKind;

#[cfg(all(feature = "arch-wormhole", feature = "arch-blackhole"))]
compile_error!("cqlab-kernels builds for one chip: enable arch-wormhole or arch-blackhole, not both");
#[cfg(all(target_arch = "riscv32", not(any(feature = "arch-wormhole", feature = "arch-blackhole"))))]
compile_error!("firmware builds for one chip: enable the cargo feature arch-wormhole or arch-blackhole");

/// The chip this firmware drives (see the crate docs).
#[cfg(feature = "arch-blackhole")]
pub const CHIP: &ArchParams = &cqlab_abi::arch::BLACKHOLE;
/// The chip this firmware drives (see the crate docs).
#[cfg(not(feature = "arch-blackhole"))]
pub const CHIP: &ArchParams = &cqlab_abi::arch::WORMHOLE;
use cqlab_abi::mailbox::DeviceError;

/// [`cqlab_abi::CMD_HEADER_SIZE`] as an L1 offset.
pub const CMD_HEADER: u32 = cqlab_abi::CMD_HEADER_SIZE as u32;
/// What payloads and tables are padded to in the rings ([`cqlab_abi::L1_ALIGNMENT`]).
pub const L1_ALIGN: u32 = cqlab_abi::L1_ALIGNMENT as u32;

/// Reads the 16-byte command header at 4-aligned L1 `addr`: four word
/// loads and four word stores (unrolled: every command of the prefetcher
/// and the dispatcher pays it).
#[inline(always)]
pub fn read_header(mem: &impl memory::Memory, addr: u32) -> [u8; cqlab_abi::CMD_HEADER_SIZE] {
    let w = |i: u32| mem.read_u32(addr + 4 * i).to_le();
    // Little-endian words in memory order are the header's bytes; as a
    // value (not a byte array) the words stay whole, never split into bytes.
    zerocopy::transmute!([w(0), w(1), w(2), w(3)])
}

/// The error a core reports for a header the decoder rejects.
pub fn device_error(kind: DecodeErrorKind) -> DeviceError {
    match kind {
        DecodeErrorKind::UnknownId { .. } => DeviceError::UnknownCommand,
        DecodeErrorKind::Truncated { .. } => DeviceError::LengthOverrun,
        DecodeErrorKind::Misaligned { .. } => DeviceError::Misaligned,
        DecodeErrorKind::BadSize { .. } => DeviceError::BadSize,
        DecodeErrorKind::BadFlags { .. } => DeviceError::BadFlags,
        DecodeErrorKind::BadChecksum { .. } => DeviceError::BadChecksum,
    }
}

/// Build identifier baked into the alive record: `$CQLAB_BUILD_ID` (hex) at
/// build time, else 0.
static BUILD_ID: u32 = parse_hex(option_env!("CQLAB_BUILD_ID"));

/// [`BUILD_ID`], loaded rather than folded into the code: a folded id
/// (the commit hash) changed the instructions around it, so every commit
/// moved the firmware's code layout and some dispatch figures by a cycle
/// per program; loaded, only the data word differs between builds.
pub fn build_id() -> u32 {
    *core::hint::black_box(&BUILD_ID)
}

/// The first eight hex digits of `s` (other characters skipped), 0 for none.
const fn parse_hex(s: Option<&str>) -> u32 {
    let bytes = match s {
        Some(s) => s.as_bytes(),
        None => return 0,
    };
    let (mut value, mut digits, mut i) = (0u32, 0, 0);
    while i < bytes.len() && digits < 8 {
        let d = match bytes[i] {
            b @ b'0'..=b'9' => Some(b - b'0'),
            b @ b'a'..=b'f' => Some(b - b'a' + 10),
            b @ b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        };
        if let Some(d) = d {
            value = value << 4 | d as u32;
            digits += 1;
        }
        i += 1;
    }
    value
}

#[cfg(test)]
mod tests {
    #[test]
    fn build_id_parses_hex_prefix() {
        assert_eq!(super::parse_hex(Some("1a2b3c4d5e")), 0x1a2b_3c4d);
        assert_eq!(super::parse_hex(Some("0-F")), 0xf);
        assert_eq!(super::parse_hex(None), 0);
    }
}
