//! The only layer that touches hardware: volatile L1 and MMIO access, the NOC
//! command buffer and CSRs.

use crate::memory::Memory;
use crate::platform::Platform;
use core::ptr::NonNull;
use cqlab_abi::memory_map::L1_DEFAULT_SIZE;
use cqlab_abi::mmio::{self, NocCmd, NOC_MAX_PACKET};
use cqlab_abi::noc::NocAddr;
use volatile::access::{Access, ReadOnly, ReadWrite, WriteOnly};
use volatile::VolatilePtr;

/// The L1 word at `addr` (4-aligned, below the L1 size).
#[inline(always)]
fn l1_word(addr: u32) -> VolatilePtr<'static, u32, ReadWrite> {
    debug_assert!(addr % 4 == 0 && addr < L1_DEFAULT_SIZE);
    // SAFETY: every 4-aligned address below the L1 size is mapped L1 on every
    // core, for the firmware's whole life (hence 'static), and never null in
    // use (callers address mailboxes and buffer regions, never the DATA/STACK
    // regions holding Rust objects, and never address 0's vector).
    unsafe { VolatilePtr::new(NonNull::new_unchecked(addr as usize as *mut u32)) }
}

/// Register `offset` (an `mmio` constant) of this core, with access kind `A`.
#[inline(always)]
fn reg<A: Access>(access: A, offset: u32) -> VolatilePtr<'static, u32, A> {
    // SAFETY: MMIO_BASE..MMIO_BASE+MMIO_SIZE is the core's register block,
    // mapped for the firmware's whole life; accesses have no side effects
    // beyond those the ABI documents.
    unsafe {
        VolatilePtr::new_restricted(access, NonNull::new_unchecked((mmio::MMIO_BASE + offset) as usize as *mut u32))
    }
}

/// This core, as the firmware sees it.
pub struct Device;

impl Memory for Device {
    #[inline(always)]
    fn read_u32(&self, addr: u32) -> u32 {
        l1_word(addr).read()
    }
    #[inline(always)]
    fn write_u32(&mut self, addr: u32, value: u32) {
        l1_word(addr).write(value)
    }
}

/// Reads core-local register `offset` (an `mmio` constant).
#[inline(always)]
pub fn read_reg(offset: u32) -> u32 {
    reg(ReadOnly, offset).read()
}

/// Writes core-local register `offset` (an `mmio` constant).
#[inline(always)]
pub fn write_reg(offset: u32, value: u32) {
    // Register writes are how the ABI drives the NOC.
    reg(WriteOnly, offset).write(value)
}

fn issue(cmd: NocCmd, target: NocAddr, local: u32, len: u32) {
    let (lo, hi) = target.words();
    write_reg(mmio::NOC_TARGET_LO, lo);
    write_reg(mmio::NOC_TARGET_HI, hi);
    write_reg(mmio::NOC_LOCAL_ADDR, local);
    write_reg(mmio::NOC_LEN, len);
    write_reg(mmio::NOC_CMD, cmd as u32);
}

/// Splits a transfer into NOC packets.
fn transfer(cmd: NocCmd, target: NocAddr, local: u32, len: u32) {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(NOC_MAX_PACKET);
        issue(cmd, target.offset(done as u64), local + done, n);
        done += n;
    }
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

/// Calls the kernel image whose entry is `entry` with `ctx` (C ABI).
pub fn call_kernel(entry: u32, ctx: &cqlab_abi::program::KernelCtx) {
    debug_assert!(cqlab_abi::memory_map::KERNEL_TEXT.contains(entry, 4));
    // SAFETY: `entry` comes from a launch message the host built: the first
    // byte of a kernel text slot holding an image it loaded and relocated
    // for that slot, whose entry (`kernel!`) has exactly this signature.
    let kernel: extern "C" fn(&cqlab_abi::program::KernelCtx) =
        unsafe { core::mem::transmute::<usize, _>(entry as usize) };
    kernel(ctx)
}

/// Stops this hart for good. `ecall` halts it on the simulator; the loop
/// keeps it parked should anything resume it.
pub fn halt() -> ! {
    loop {
        // SAFETY: ecall transfers control to the environment, which halts the hart.
        unsafe { core::arch::asm!("ecall", options(nomem, nostack)) };
    }
}

impl Platform for Device {
    fn cycle(&self) -> u64 {
        cycle()
    }
    fn cycle_lo(&self) -> u32 {
        let lo: u32;
        // SAFETY: reading the mcycle CSR has no side effects.
        unsafe { core::arch::asm!("csrr {0}, mcycle", out(reg) lo, options(nomem, nostack)) };
        lo
    }
    fn core_xy(&self) -> u32 {
        read_reg(mmio::CORE_ID)
    }
    fn semaphore(&self, index: u32) -> u32 {
        read_reg(mmio::semaphore(index))
    }
    fn set_semaphore(&mut self, index: u32, value: u32) {
        write_reg(mmio::semaphore(index), value)
    }
    fn noc_read(&mut self, src: NocAddr, local: u32, len: u32) {
        transfer(NocCmd::Read, src, local, len)
    }
    fn noc_read_with_id(&mut self, src: NocAddr, local: u32, len: u32, id: u32) {
        write_reg(mmio::NOC_READ_ID, id);
        transfer(NocCmd::Read, src, local, len);
        // Plain reads carry id 0.
        write_reg(mmio::NOC_READ_ID, 0);
    }
    fn reads_acked_id(&self, id: u32) -> u32 {
        read_reg(mmio::noc_reads_acked_id(id))
    }
    fn noc_write(&mut self, local: u32, dst: NocAddr, len: u32) {
        transfer(NocCmd::Write, dst, local, len)
    }
    fn noc_atomic_inc(&mut self, dst: NocAddr, value: u32) {
        // An atomic reads neither the local address nor the length
        // (`NocCmd::AtomicInc`): value, target and command only.
        write_reg(mmio::NOC_ATOMIC_VALUE, value);
        let (lo, hi) = dst.words();
        write_reg(mmio::NOC_TARGET_LO, lo);
        write_reg(mmio::NOC_TARGET_HI, hi);
        write_reg(mmio::NOC_CMD, NocCmd::AtomicInc as u32);
    }
    fn noc_atomic_inc_both(&mut self, a: NocAddr, b: NocAddr, value: u32) {
        self.noc_atomic_inc(a, value);
        let ((lo_a, hi_a), (lo_b, hi_b)) = (a.words(), b.words());
        // The command buffer keeps its fields: the value is already set.
        if hi_a != hi_b {
            write_reg(mmio::NOC_TARGET_HI, hi_b);
        }
        if lo_a != lo_b {
            write_reg(mmio::NOC_TARGET_LO, lo_b);
        }
        write_reg(mmio::NOC_CMD, NocCmd::AtomicInc as u32);
    }
    fn reads_done(&self) -> bool {
        read_reg(mmio::NOC_READS_ISSUED) == read_reg(mmio::NOC_READS_ACKED)
    }
    fn writes_done(&self) -> bool {
        read_reg(mmio::NOC_UNACKED) == 0
    }
    fn writes_sent(&self) -> bool {
        read_reg(mmio::NOC_WRITES_ISSUED) == read_reg(mmio::NOC_WRITES_SENT)
    }
    fn writes_issued(&self) -> u32 {
        read_reg(mmio::NOC_WRITES_ISSUED)
    }
    fn writes_sent_count(&self) -> u32 {
        read_reg(mmio::NOC_WRITES_SENT)
    }
    fn halt(&mut self) -> ! {
        halt()
    }
}
