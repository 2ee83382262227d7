//! How a Tensix tile boots, as tt-metal boots it (tt-umd `cluster.cpp`
//! `deassert_risc_reset`; tt-metal `tt_metal/hw/firmware/src/tt-1xx/brisc.cc`):
//!
//! 1. Power-on: every core of the tile is held in soft reset
//!    (`arch::tensix::SOFT_RESET_0` = `SOFT_RESET_ALL`). The host writes,
//!    through BAR0 TLB windows: each core's firmware image into its own code
//!    and data regions (`memory_map::code`, `memory_map::data`); the BRISC
//!    reset jump at L1 address 0 ([`reset_jal`] to the BRISC image's entry:
//!    BRISC's reset PC is hard-wired to 0); the `noc_map::NocMap` (every
//!    tile) and the `mailbox::CqConfig` (CQ tiles); and zeroes the mailboxes
//!    it will poll (`ALIVE`, the semaphores, a worker's launch-ring tags).
//! 2. The host writes `SOFT_RESET_0` = `SOFT_RESET_BRISC_ONLY_RUN`: BRISC
//!    runs, the other four stay held.
//! 3. A worker's BRISC firmware zeroes the subordinate mailboxes and
//!    `mailbox::SubordinateRun`, points
//!    each subordinate's reset PC at its image's entry (the override
//!    registers of `arch::tensix::ResetPcRegs`: on Wormhole Tensix
//!    configuration words only BRISC and the TRISCs can write, on Blackhole
//!    debug registers) and clears their `SOFT_RESET_0` bits. Each
//!    subordinate writes its alive record (`mailbox::SubordinateMailbox`);
//!    BRISC waits for all four, then writes its own (`mailbox::ALIVE`), so a
//!    host that sees BRISC alive knows the whole tile is.
//! 4. A prefetcher's or dispatcher's BRISC writes its alive record at once;
//!    its subordinates stay in reset.
//!
//! Every image checks the `NocMap` (and a CQ core its `CqConfig`) before it
//! does anything else and halts with an error record if it is missing.

use crate::memory_map::RESET_JAL;

/// RISC-V `jal x0` opcode (J-type, `rd` = 0).
const JAL: u32 = 0x6F;

/// The word at L1 address 0 that sends BRISC from its hard-wired reset PC
/// to `entry`: `jal x0, entry` (tt-metal `generate_risc_startup_addr`).
/// `entry` must be within the jump's reach (1 MiB) and 4-aligned, as every
/// `memory_map::firmware_entry` is.
pub const fn reset_jal(entry: u32) -> u32 {
    let off = entry.wrapping_sub(RESET_JAL);
    assert!(off % 4 == 0 && off < 1 << 20, "the reset jump reaches 1 MiB");
    (off >> 20 & 1) << 31 | (off >> 1 & 0x3FF) << 21 | (off >> 11 & 1) << 20 | (off >> 12 & 0xFF) << 12 | JAL
}

/// Where a `jal x0` word at `at` jumps, if it is one (for checks and dumps).
pub const fn jal_target(at: u32, word: u32) -> Option<u32> {
    if word & 0xFFF != JAL {
        return None;
    }
    let imm = (word >> 31 & 1) << 20 | (word >> 21 & 0x3FF) << 1 | (word >> 20 & 1) << 11 | (word >> 12 & 0xFF) << 12;
    // Sign-extend the 21-bit offset.
    let off = ((imm << 11) as i32 >> 11) as u32;
    Some(at.wrapping_add(off))
}

/// Every firmware image names what it was built for in [`IMAGE_ID_WORDS`]
/// words right after its first instruction (a `j` over them): the host
/// refuses an image of another ABI, chip or role before it loads anything,
/// instead of booting code that faults on another chip's registers (or a
/// worker loop where the prefetcher belongs, which halted at its first
/// command without naming the file).
/// The words: [`IMAGE_MAGIC`], `ABI_VERSION`, [`image_arch_code`], the
/// image's `FirmwareId`.
pub const IMAGE_ID_OFFSET: u32 = 4;
pub const IMAGE_ID_WORDS: usize = 4;
/// A kernel's id: the first [`KERNEL_ID_WORDS`] of a firmware image's (a
/// kernel has no role of its own).
pub const KERNEL_ID_WORDS: usize = 3;
/// "CQFW", little-endian.
pub const IMAGE_MAGIC: u32 = u32::from_le_bytes(*b"CQFW");

/// Every kernel image carries [`KERNEL_ID_WORDS`] words
/// ([`IMAGE_MAGIC`], `ABI_VERSION`, [`image_arch_code`]) in an ELF
/// section of this name that is not allocated: no loaded byte of a kernel
/// moves for it (its first byte is its entry, `linker/kernel.x`), and the
/// host reads it from the file and refuses a kernel of another ABI or chip
/// before anything is uploaded. The name is written out in `kernel!`
/// (device-kernels/src/rt.rs) and linker/kernel.x, which cannot import
/// it; the driver's tests load every built kernel by this name.
pub const KERNEL_ID_SECTION: &str = ".cqlab.image_id";

/// The image-id word naming `arch` (0 names none).
pub const fn image_arch_code(arch: crate::arch::Arch) -> u32 {
    match arch {
        crate::arch::Arch::Wormhole => 1,
        crate::arch::Arch::Blackhole => 2,
    }
}

/// The architecture an image-id word names.
pub fn image_arch(code: u32) -> Option<crate::arch::Arch> {
    crate::arch::Arch::ALL.into_iter().find(|&a| image_arch_code(a) == code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::tensix::Processor;
    use crate::memory_map::firmware_entry;

    #[test]
    fn the_reset_jump_reaches_every_entry() {
        // `jal x0, 0x2000` as an assembler encodes it.
        assert_eq!(reset_jal(0x2000), 0x0000_206F);
        // `jal x0, 0x800` sets imm[11].
        assert_eq!(reset_jal(0x800), 0x0010_006F);
        for p in Processor::ALL {
            let e = firmware_entry(p);
            assert_eq!(jal_target(RESET_JAL, reset_jal(e)), Some(e));
        }
        assert_eq!(jal_target(0, 0x0000_0013), None, "nop is no jump");
    }
}
