//! The only layer that touches hardware: volatile L1 access, the NIU
//! registers of the core's NOC, the tile's debug registers, local memory
//! and CSRs. Every address comes from `cqlab_abi::arch` for [`crate::CHIP`],
//! a compile-time choice, so each register access is one store or load.
//!
//! The NOC is driven exactly as tt-metal's dedicated-NOC firmware drives it
//! (tt-metal wh and bh `noc_nonblocking_api.h`: `noc_init`,
//! `ncrisc_noc_fast_read`, `ncrisc_noc_fast_write`,
//! `noc_fast_atomic_increment`; `dataflow_api.h` barriers): one command
//! buffer per kind (`arch::niu::cmd_buf`: write 0, read 1, atomic 3), wait
//! for `NOC_CMD_CTRL` to read ready, write the address registers (split as
//! the chip splits them, `arch::noc_addr::AddrSplit`) and the length, then
//! `NOC_CMD_CTRL` = 1; count the request in software ([`NocState`]), and
//! compare the count with the NIU's `NIU_MST_*` counters for barriers.
#![allow(unsafe_code)] // firmware HAL: docs/design.md, "Where `unsafe` lives"

use crate::memory::Memory;
use crate::platform::Platform;
use crate::CHIP;
use core::ptr::NonNull;
use cqlab_abi::arch::niu::{cmd_buf, counter};
use cqlab_abi::arch::noc_addr::{AddrWords, CoordField};
use cqlab_abi::arch::noc_cmd::{atomic, cmd_ctrl, ctrl, packet_tag};
use cqlab_abi::arch::tensix::{self, Processor};
use cqlab_abi::arch::Noc;
use cqlab_abi::mailbox::{self, DeviceError};
use cqlab_abi::memory_map::{noc_state, NOC_ATOMIC_RET};
use cqlab_abi::noc::{Coord, NocAddr};
use volatile::access::{Access, ReadOnly, ReadWrite, WriteOnly};
use volatile::VolatilePtr;

/// The L1 word at `addr` (4-aligned, below the L1 size).
#[inline(always)]
fn l1_word(addr: u32) -> VolatilePtr<'static, u32, ReadWrite> {
    debug_assert!(addr % 4 == 0 && addr < CHIP.l1_size);
    // SAFETY: every 4-aligned address below the L1 size is mapped L1 on every
    // Tensix tile, for the firmware's whole life (hence 'static), and never
    // null in use: callers address mailboxes and buffer regions, never
    // address 0's reset jump; the one address a host gives (a WAIT on
    // memory) is refused at 0 by the decoder and past L1 by the dispatcher.
    unsafe { VolatilePtr::new(NonNull::new_unchecked(addr as usize as *mut u32)) }
}

/// The L1 byte at `addr` (below the L1 size).
#[inline(always)]
fn l1_byte(addr: u32) -> VolatilePtr<'static, u8, ReadWrite> {
    debug_assert!(addr < CHIP.l1_size);
    // SAFETY: as `l1_word`: every address below the L1 size is mapped L1 on
    // every Tensix tile for the firmware's whole life, and callers address
    // mailboxes, never address 0.
    unsafe { VolatilePtr::new(NonNull::new_unchecked(addr as usize as *mut u8)) }
}

/// The register at `addr` (an `arch` constant), with access kind `A`.
#[inline(always)]
fn reg<A: Access>(access: A, addr: u32) -> VolatilePtr<'static, u32, A> {
    // SAFETY: `addr` is a register of this tile's NIU or debug block, or a
    // Tensix configuration word (`arch::address_map`; `arch::tensix`),
    // mapped for the firmware's whole life; an access has no effect beyond
    // those the chip documents for that register.
    unsafe { VolatilePtr::new_restricted(access, NonNull::new_unchecked(addr as usize as *mut u32)) }
}

#[inline(always)]
fn read_reg(addr: u32) -> u32 {
    reg(ReadOnly, addr).read()
}

#[inline(always)]
fn write_reg(addr: u32, value: u32) {
    reg(WriteOnly, addr).write(value)
}

/// The software side of a core's NOC bookkeeping, at `memory_map::noc_state`
/// in its local memory (shared with the kernels it calls): what was issued,
/// to compare with what the NIU's counters say arrived.
#[repr(C)]
struct NocState {
    /// Read packets issued: `NIU_MST_RD_RESP_RECEIVED` reaches it when all landed.
    reads_issued: u32,
    /// Non-posted write packets issued: `NIU_MST_NONPOSTED_WR_REQ_SENT`
    /// reaches it when all have left L1.
    writes_issued: u32,
    /// Acks expected (one per receiver): `NIU_MST_WR_ACK_RECEIVED`.
    writes_acked: u32,
    /// Atomic responses expected: `NIU_MST_ATOMIC_RESP_RECEIVED`.
    atomics_acked: u32,
}
const _: () = assert!(core::mem::size_of::<NocState>() as u32 <= cqlab_abi::memory_map::NOC_STATE_SIZE);
const READS_ISSUED: usize = core::mem::offset_of!(NocState, reads_issued);
const WRITES_ISSUED: usize = core::mem::offset_of!(NocState, writes_issued);
const WRITES_ACKED: usize = core::mem::offset_of!(NocState, writes_acked);
const ATOMICS_ACKED: usize = core::mem::offset_of!(NocState, atomics_acked);

/// Core `P` of a Tensix tile (`Processor::index`), as its firmware sees it
/// (`Brisc::default()` etc.: the type aliases below name the cores).
#[derive(Default)]
pub struct Device<const P: usize>;

/// BRISC: the CQ firmware and the worker loop; NOC0.
pub type Brisc = Device<0>;
/// NCRISC: NOC1.
pub type Ncrisc = Device<1>;
/// The TRISCs: no NOC.
pub type Trisc0 = Device<2>;
pub type Trisc1 = Device<3>;
pub type Trisc2 = Device<4>;

impl<const P: usize> Device<P> {
    /// The core this device is.
    pub const PROCESSOR: Processor = Processor::ALL[P];
    /// BRISC uses NOC0 and NCRISC NOC1 (tt-metal's default data-movement
    /// assignment); the TRISCs none.
    const NOC_OF: Option<Noc> = match P {
        0 => Some(Noc::Noc0),
        1 => Some(Noc::Noc1),
        _ => None,
    };
    const NIU: Noc = match Self::NOC_OF {
        Some(n) => n,
        None => Noc::Noc0,
    };
    const STATE: u32 = noc_state(CHIP, Self::PROCESSOR).base;

    /// Address of register `offset` (a `CmdBufRegs` field) of command buffer `buf`.
    const fn cmd(buf: u32, offset: u32) -> u32 {
        CHIP.niu.cmd_buf_reg(Self::NIU, buf, offset)
    }

    const fn status(index: u32) -> u32 {
        CHIP.niu.status_reg(Self::NIU, index)
    }

    /// The `NocState` word at byte `offset` (an `offset_of!`).
    #[inline(always)]
    fn state(offset: usize) -> VolatilePtr<'static, u32, ReadWrite> {
        // SAFETY: `noc_state` is this core's own local memory (never on the
        // NOC, never written by another core), reserved above the stack for
        // the firmware's whole life, 4-aligned, and holds a `NocState`
        // whose u32 field starts at `offset`.
        unsafe { VolatilePtr::new(NonNull::new_unchecked((Self::STATE as usize + offset) as *mut u32)) }
    }

    #[inline(always)]
    fn bump(offset: usize, by: u32) {
        let w = Self::state(offset);
        w.write(w.read().wrapping_add(by));
    }

    /// A NOC operation on a core without a NOC: a firmware or kernel bug,
    /// reported, never silent.
    #[cold]
    #[inline(never)]
    fn no_noc(&mut self) -> ! {
        crate::report::fail(self, DeviceError::NoNoc, 0, P as u32, 0, 0)
    }

    /// Waits until command buffer `buf` accepts a new request.
    #[inline(always)]
    fn wait_ready(&mut self, buf: u32) {
        let ctrl = Self::cmd(buf, CHIP.niu.regs.cmd_ctrl);
        if read_reg(ctrl) != cmd_ctrl::STATUS_READY {
            crate::report::wait_until(self, cqlab_abi::waypoint::NCBW, |_| read_reg(ctrl) == cmd_ctrl::STATUS_READY);
        }
    }

    /// [`Device::wait_ready`] with the wait out of line: in a loop that
    /// issues a request a core, the usual case (ready) costs a load and a
    /// branch not taken. (Made the only form, it cost untraced programs
    /// ~13 %: `bench dispatch` 1 unique arg, 1,065 -> 1,205 cycles a
    /// program, for a reason not looked into.)
    #[inline(always)]
    fn wait_ready_in_loop(&mut self, buf: u32) {
        let ctrl = Self::cmd(buf, CHIP.niu.regs.cmd_ctrl);
        if read_reg(ctrl) != cmd_ctrl::STATUS_READY {
            self.wait_ready_slow(ctrl);
        }
    }

    #[cold]
    #[inline(never)]
    fn wait_ready_slow(&mut self, ctrl: u32) {
        crate::report::wait_until(self, cqlab_abi::waypoint::NCBW, |_| read_reg(ctrl) == cmd_ctrl::STATUS_READY);
    }

    /// Writes a NOC address to the address registers at `lo`/`mid`/`hi`
    /// offsets of buffer `buf` (only those the chip uses).
    #[inline(always)]
    fn write_addr(buf: u32, (lo, mid, hi): (u32, u32, u32), w: AddrWords) {
        write_reg(Self::cmd(buf, lo), w.lo);
        write_reg(Self::cmd(buf, mid), w.mid);
        if CHIP.noc.split.uses_hi() {
            write_reg(Self::cmd(buf, hi), w.hi);
        }
    }

    const TARG: (u32, u32, u32) = (CHIP.niu.regs.targ_addr_lo, CHIP.niu.regs.targ_addr_mid, CHIP.niu.regs.targ_addr_hi);
    const RET: (u32, u32, u32) = (CHIP.niu.regs.ret_addr_lo, CHIP.niu.regs.ret_addr_mid, CHIP.niu.regs.ret_addr_hi);

    /// The register words of `a` as the chip splits them. A multicast on
    /// NOC1 names its rectangle from the far corner (NOC1 runs towards -x
    /// and -y; tt-isa `NoC/Coordinates.md`), so its corners are swapped.
    #[inline(always)]
    fn words(a: NocAddr) -> AddrWords {
        let hw = if a.is_multicast() && matches!(Self::NIU, Noc::Noc1) {
            let (s, e) = a.rect();
            NocAddr::multicast(e, s, a.local()).hw() | a.flags()
        } else {
            a.hw()
        };
        CHIP.noc.split.split(hw)
    }

    /// This tile's own coordinate field (for the local side of requests).
    fn own_coords() -> CoordField {
        let c = Coord::unpack(own_xy());
        CoordField::unicast(c.x, c.y)
    }

    /// Programs this core's NOC as tt-metal's `noc_init` does and loads the
    /// software counters from the NIU's (`noc_local_state_init`): the
    /// counters run freely across resets. Once, at boot, with the NOC idle.
    pub fn noc_init(&mut self) {
        if Self::NOC_OF.is_none() {
            return;
        }
        let own = CHIP.noc.split.words(0, Self::own_coords());
        // Writes: TARG is the source, on this tile.
        Self::write_addr(cmd_buf::WRITE, Self::TARG, own);
        // Reads: RET is the destination, on this tile; the request word is fixed.
        Self::write_addr(cmd_buf::READ, Self::RET, own);
        write_reg(Self::cmd(cmd_buf::READ, CHIP.niu.regs.ctrl), ctrl::READ);
        write_reg(Self::cmd(cmd_buf::READ, CHIP.niu.regs.packet_tag), 0);
        // Atomics: the old value returns to `NOC_ATOMIC_RET` here; the
        // request word is fixed (non-posted, the unicast-write VC).
        let ret = CHIP.noc.split.words(NOC_ATOMIC_RET as u64, Self::own_coords());
        Self::write_addr(cmd_buf::ATOMIC, Self::RET, ret);
        write_reg(Self::cmd(cmd_buf::ATOMIC, CHIP.niu.regs.ctrl), ctrl::ATOMIC);
        for (field, c) in [
            (READS_ISSUED, counter::NIU_MST_RD_RESP_RECEIVED),
            (WRITES_ISSUED, counter::NIU_MST_NONPOSTED_WR_REQ_SENT),
            (WRITES_ACKED, counter::NIU_MST_WR_ACK_RECEIVED),
            (ATOMICS_ACKED, counter::NIU_MST_ATOMIC_RESP_RECEIVED),
        ] {
            Self::state(field).write(read_reg(Self::status(c)));
        }
    }

    /// Issues reads of `len` bytes, packet by packet, with transaction id `id`.
    #[inline(always)]
    fn read(&mut self, src: NocAddr, local: u32, len: u32, id: u32) {
        if Self::NOC_OF.is_none() {
            self.no_noc();
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHIP.noc.max_packet);
            self.wait_ready(cmd_buf::READ);
            write_reg(Self::cmd(cmd_buf::READ, CHIP.niu.regs.packet_tag), packet_tag::transaction_id(id));
            write_reg(Self::cmd(cmd_buf::READ, CHIP.niu.regs.ret_addr_lo), local + done);
            Self::write_addr(cmd_buf::READ, Self::TARG, Self::words(src.offset(done as u64)));
            write_reg(Self::cmd(cmd_buf::READ, CHIP.niu.regs.at_len_be), n);
            write_reg(Self::cmd(cmd_buf::READ, CHIP.niu.regs.cmd_ctrl), cmd_ctrl::SEND_REQ);
            Self::bump(READS_ISSUED, 1);
            done += n;
        }
    }

    /// Issues writes of `len` bytes, packet by packet, each acked by `acks` receivers.
    #[inline(always)]
    fn write(&mut self, local: u32, dst: NocAddr, len: u32, acks: u32) {
        if Self::NOC_OF.is_none() {
            self.no_noc();
        }
        let request = ctrl::write(dst.is_multicast());
        let mut done = 0;
        while done < len {
            let n = (len - done).min(CHIP.noc.max_packet);
            self.wait_ready(cmd_buf::WRITE);
            write_reg(Self::cmd(cmd_buf::WRITE, CHIP.niu.regs.ctrl), request);
            write_reg(Self::cmd(cmd_buf::WRITE, CHIP.niu.regs.targ_addr_lo), local + done);
            Self::write_addr(cmd_buf::WRITE, Self::RET, Self::words(dst.offset(done as u64)));
            write_reg(Self::cmd(cmd_buf::WRITE, CHIP.niu.regs.at_len_be), n);
            write_reg(Self::cmd(cmd_buf::WRITE, CHIP.niu.regs.cmd_ctrl), cmd_ctrl::SEND_REQ);
            Self::bump(WRITES_ISSUED, 1);
            Self::bump(WRITES_ACKED, acks);
            done += n;
        }
    }
}

/// This tile's translated coordinates from `NOC_ID_LOGICAL` (`NOC_CFG`
/// index `noc_id_logical`: x `[5:0]`, y `[11:6]`), packed `x | y << 8`.
pub fn own_xy() -> u32 {
    let v = read_reg(CHIP.niu.cfg_reg(Noc::Noc0, CHIP.niu.cfg.noc_id_logical));
    Coord::new((v & 0x3F) as u8, (v >> 6 & 0x3F) as u8).packed()
}

impl<const P: usize> Memory for Device<P> {
    #[inline(always)]
    fn read_u32(&self, addr: u32) -> u32 {
        l1_word(addr).read()
    }
    #[inline(always)]
    fn write_u32(&mut self, addr: u32, value: u32) {
        l1_word(addr).write(value)
    }
    #[inline(always)]
    fn write_u8(&mut self, addr: u32, value: u8) {
        l1_byte(addr).write(value)
    }
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

/// The tile's wall clock (`RISCV_DEBUG_REG_WALL_CLOCK_L`/`_H`): AICLK
/// cycles since power-on, the same for every core of the tile. Reading the
/// low word latches the high one.
pub fn wall_clock() -> u64 {
    let lo = read_reg(tensix::WALL_CLOCK_L);
    let hi = read_reg(tensix::WALL_CLOCK_H);
    (hi as u64) << 32 | lo as u64
}

/// Calls the kernel image whose entry is `entry` with `ctx` (C ABI).
pub fn call_kernel(entry: u32, ctx: &cqlab_abi::program::KernelCtx) {
    debug_assert!(cqlab_abi::memory_map::KERNEL_TEXT.contains(entry, 4));
    // SAFETY: `entry` comes from a launch message the host built: the first
    // byte of a kernel text slot holding an image it loaded and relocated
    // for that slot, whose entry (`kernel!`) has exactly this signature.
    // The firmware cannot check more: the host loads the kernel's code
    // itself, so a host that lies about the entry could as well load any
    // code at a true one.
    let kernel: extern "C" fn(&cqlab_abi::program::KernelCtx) =
        unsafe { core::mem::transmute::<usize, _>(entry as usize) };
    kernel(ctx)
}

/// Stops this core for good. `ecall` halts it on the simulator; the loop
/// keeps it parked should anything resume it.
pub fn halt() -> ! {
    loop {
        // SAFETY: ecall transfers control to the environment, which halts the core.
        unsafe { core::arch::asm!("ecall", options(nomem, nostack)) };
    }
}

/// BRISC of a worker tile releases the other four cores: each starts at
/// its image's entry (its reset PC overridden, as tt-metal's BRISC firmware
/// does), then its soft-reset bit is cleared. On Wormhole the reset-PC
/// registers are Tensix configuration words only BRISC and the TRISCs can
/// write; on Blackhole debug registers (`arch::tensix::ResetPcRegs`).
pub fn release_subordinates() {
    let regs = CHIP.tensix.reset_pc;
    let mut held = 0;
    for p in [Processor::Ncrisc, Processor::Trisc0, Processor::Trisc1, Processor::Trisc2] {
        if let Some((pc, enable, bit)) = regs.for_processor(p) {
            write_reg(pc, cqlab_abi::memory_map::firmware_entry(p));
            // The enables of the TRISCs share one register: set this bit too.
            write_reg(enable, read_reg(enable) | bit);
        }
        held |= p.soft_reset_mask();
    }
    let now = read_reg(tensix::SOFT_RESET_0);
    write_reg(tensix::SOFT_RESET_0, now & !held);
}

/// Drops this core's L0 data cache on Blackhole (`Platform::invalidate_l1`):
/// a `fence` flushes it whole. Wormhole has no such cache.
#[inline(always)]
pub fn invalidate_l1_cache() {
    #[cfg(all(target_arch = "riscv32", feature = "arch-blackhole"))]
    // SAFETY: `fence` orders memory accesses and flushes the L0 data cache;
    // it touches no register or memory of its own.
    unsafe {
        core::arch::asm!("fence", options(nostack, preserves_flags))
    };
}

impl<const P: usize> Platform for Device<P> {
    const NOC: usize = match Self::NOC_OF {
        Some(n) => n.index() as usize,
        None => 0,
    };
    const WAYPOINT: u32 = if P == 0 { mailbox::WAYPOINT } else { mailbox::subordinate(P) + mailbox::SUB_WAYPOINT };

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
        own_xy()
    }
    fn noc_read(&mut self, src: NocAddr, local: u32, len: u32) {
        self.read(src, local, len, 0)
    }
    fn noc_read_with_id(&mut self, src: NocAddr, local: u32, len: u32, id: u32) {
        self.read(src, local, len, id)
    }
    fn reads_landed_id(&self, id: u32) -> bool {
        Self::NOC_OF.is_none()
            || read_reg(Self::status(counter::reqs_outstanding_id(id))) & packet_tag::MAX_TRANSACTION_ID_COUNT == 0
    }
    fn noc_write(&mut self, local: u32, dst: NocAddr, len: u32) {
        self.write(local, dst, len, 1)
    }
    fn noc_write_each(&mut self, local: u32, stride: u32, dests: &[u32], addr: u32, len: u32) {
        if len == 0 || len > CHIP.noc.max_packet {
            for (i, &d) in dests.iter().enumerate() {
                self.write(local + i as u32 * stride, NocAddr::unicast(Coord::unpack(d), addr as u64), len, 1);
            }
            return;
        }
        if Self::NOC_OF.is_none() {
            self.no_noc();
        }
        // The command buffer keeps its registers between requests: the
        // request kind, the length and the address's low word are the same
        // for every destination; only the source and the coordinates change.
        let reg = |r: u32| Self::cmd(cmd_buf::WRITE, r);
        let send = |src: u32, w: AddrWords| {
            write_reg(reg(CHIP.niu.regs.targ_addr_lo), src);
            write_reg(reg(Self::RET.1), w.mid);
            if CHIP.noc.split.uses_hi() {
                write_reg(reg(Self::RET.2), w.hi);
            }
            write_reg(reg(CHIP.niu.regs.cmd_ctrl), cmd_ctrl::SEND_REQ);
        };
        let Some((&first, rest)) = dests.split_first() else {
            return;
        };
        let w = Self::words(NocAddr::unicast(Coord::unpack(first), addr as u64));
        self.wait_ready(cmd_buf::WRITE);
        write_reg(reg(CHIP.niu.regs.ctrl), ctrl::write(false));
        write_reg(reg(Self::RET.0), w.lo);
        write_reg(reg(CHIP.niu.regs.at_len_be), len);
        send(local, w);
        let mut src = local;
        for &d in rest {
            src += stride;
            self.wait_ready_in_loop(cmd_buf::WRITE);
            send(src, Self::words(NocAddr::unicast(Coord::unpack(d), addr as u64)));
        }
        Self::bump(WRITES_ISSUED, dests.len() as u32);
        Self::bump(WRITES_ACKED, dests.len() as u32);
    }
    fn noc_multicast(&mut self, local: u32, dst: NocAddr, len: u32, receivers: u32) {
        self.write(local, dst, len, receivers)
    }
    fn noc_atomic_inc(&mut self, dst: NocAddr, value: u32) {
        if Self::NOC_OF.is_none() {
            self.no_noc();
        }
        self.wait_ready(cmd_buf::ATOMIC);
        Self::write_addr(cmd_buf::ATOMIC, Self::TARG, Self::words(dst));
        write_reg(Self::cmd(cmd_buf::ATOMIC, CHIP.niu.regs.at_len_be), atomic::incr_get(dst.local()));
        write_reg(Self::cmd(cmd_buf::ATOMIC, CHIP.niu.regs.at_data), value);
        write_reg(Self::cmd(cmd_buf::ATOMIC, CHIP.niu.regs.cmd_ctrl), cmd_ctrl::SEND_REQ);
        Self::bump(ATOMICS_ACKED, 1);
    }
    fn noc_atomic_inc_both(&mut self, a: NocAddr, b: NocAddr, value: u32) {
        self.noc_atomic_inc(a, value);
        // The command buffer keeps its registers: the value is already set,
        // and two semaphores of one tile share the coordinate words.
        self.wait_ready(cmd_buf::ATOMIC);
        let (wa, wb) = (Self::words(a), Self::words(b));
        if wa.mid != wb.mid {
            write_reg(Self::cmd(cmd_buf::ATOMIC, Self::TARG.1), wb.mid);
        }
        if CHIP.noc.split.uses_hi() && wa.hi != wb.hi {
            write_reg(Self::cmd(cmd_buf::ATOMIC, Self::TARG.2), wb.hi);
        }
        write_reg(Self::cmd(cmd_buf::ATOMIC, Self::TARG.0), wb.lo);
        if atomic::incr_get(a.local()) != atomic::incr_get(b.local()) {
            write_reg(Self::cmd(cmd_buf::ATOMIC, CHIP.niu.regs.at_len_be), atomic::incr_get(b.local()));
        }
        write_reg(Self::cmd(cmd_buf::ATOMIC, CHIP.niu.regs.cmd_ctrl), cmd_ctrl::SEND_REQ);
        Self::bump(ATOMICS_ACKED, 1);
    }
    // A core without a NOC never issued anything (its NOC calls halt it):
    // its barriers hold at once.
    fn reads_done(&self) -> bool {
        Self::NOC_OF.is_none()
            || read_reg(Self::status(counter::NIU_MST_RD_RESP_RECEIVED)) == Self::state(READS_ISSUED).read()
    }
    fn writes_done(&self) -> bool {
        Self::NOC_OF.is_none()
            || read_reg(Self::status(counter::NIU_MST_WR_ACK_RECEIVED)) == Self::state(WRITES_ACKED).read()
                && read_reg(Self::status(counter::NIU_MST_ATOMIC_RESP_RECEIVED)) == Self::state(ATOMICS_ACKED).read()
    }
    fn writes_sent(&self) -> bool {
        Self::NOC_OF.is_none() || self.writes_sent_count() == self.writes_issued()
    }
    fn writes_issued(&self) -> u32 {
        Self::state(WRITES_ISSUED).read()
    }
    fn writes_sent_count(&self) -> u32 {
        read_reg(Self::status(counter::NIU_MST_NONPOSTED_WR_REQ_SENT))
    }
    fn halt(&mut self) -> ! {
        halt()
    }
    #[inline(always)]
    fn invalidate_l1(&mut self) {
        invalidate_l1_cache()
    }
    /// Semaphores are counted up by other agents' NOC atomics: each read
    /// is of L1, not an L0 copy.
    #[inline(always)]
    fn semaphore(&self, index: u32) -> u32 {
        invalidate_l1_cache();
        self.read_u32(cqlab_abi::semaphore::addr(index))
    }
}
