//! The only layer that touches hardware: volatile L1 and MMIO access and CSRs.

use crate::memory::Memory;
use cqlab_abi::memory_map::L1_DEFAULT_SIZE;
use cqlab_abi::mmio;

/// This core's L1, accessed with volatile loads and stores (the host and the
/// NOC change it behind the compiler's back).
pub struct L1;

impl Memory for L1 {
    #[inline(always)]
    fn read_u32(&self, addr: u32) -> u32 {
        debug_assert!(addr % 4 == 0 && addr < L1_DEFAULT_SIZE);
        // SAFETY: every 4-aligned address below the L1 size is mapped L1 on
        // every core; the memory map reserves no part of it for Rust objects
        // the compiler tracks except DATA/STACK, which callers never address.
        unsafe { core::ptr::read_volatile(addr as usize as *const u32) }
    }
    #[inline(always)]
    fn write_u32(&mut self, addr: u32, value: u32) {
        debug_assert!(addr % 4 == 0 && addr < L1_DEFAULT_SIZE);
        // SAFETY: as in `read_u32`; writes target mailbox and buffer regions only.
        unsafe { core::ptr::write_volatile(addr as usize as *mut u32, value) }
    }
}

/// Reads core-local register `offset` (an `mmio` constant).
#[inline(always)]
pub fn read_reg(offset: u32) -> u32 {
    // SAFETY: MMIO_BASE..MMIO_BASE+MMIO_SIZE is the core's register block;
    // reads have no side effects beyond those the ABI documents.
    unsafe { core::ptr::read_volatile((mmio::MMIO_BASE + offset) as usize as *const u32) }
}

/// Writes core-local register `offset` (an `mmio` constant).
#[inline(always)]
pub fn write_reg(offset: u32, value: u32) {
    // SAFETY: as in `read_reg`; register writes are how the ABI drives the NOC.
    unsafe { core::ptr::write_volatile((mmio::MMIO_BASE + offset) as usize as *mut u32, value) }
}

/// This core's coordinates, packed `x | y << 8`.
pub fn core_xy() -> u32 {
    read_reg(mmio::CORE_ID)
}

/// 64-bit cycle counter, read consistently across the two halves.
pub fn cycle() -> u64 {
    loop {
        let (hi, lo, hi2): (u32, u32, u32);
        // SAFETY: reading the mcycle CSRs has no side effects.
        unsafe {
            core::arch::asm!("csrr {0}, mcycleh", "csrr {1}, mcycle", "csrr {2}, mcycleh",
                out(reg) hi, out(reg) lo, out(reg) hi2, options(nomem, nostack));
        }
        if hi == hi2 {
            return (hi as u64) << 32 | lo as u64;
        }
    }
}

/// Stops this hart for good. `ecall` halts it on the simulator; the loop
/// keeps it parked should anything resume it.
pub fn halt() -> ! {
    loop {
        // SAFETY: ecall transfers control to the environment, which halts the hart.
        unsafe { core::arch::asm!("ecall", options(nomem, nostack)) };
    }
}
