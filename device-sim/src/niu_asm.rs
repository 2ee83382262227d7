//! Instruction sequences that drive a Tensix tile's NIU the way tt-metal's
//! dataflow API does (tt-metal wh and bh `noc_nonblocking_api.h`
//! `ncrisc_noc_fast_read`, `ncrisc_noc_fast_write`,
//! `noc_fast_atomic_increment`; `dataflow_api.h` barriers), for hand-written
//! RV32 programs: the simulator's tests and benchmarks. Each sequence waits
//! for its command buffer to read ready (`NOC_CMD_CTRL` == 0), writes the
//! address registers as the chip splits a 64-bit NOC address
//! (`arch::noc_addr::AddrSplit`), the length or atomic word, and issues.
//!
//! Register use: `base` holds a command buffer's (or the counter's) address,
//! `tmp` the values stored; both are clobbered. Every address comes from
//! `cqlab_abi::arch`.

use crate::asm::{add, addi, bne, li, lw, sw};
use cqlab_abi::arch::niu::cmd_buf;
use cqlab_abi::arch::noc_addr::CoordField;
use cqlab_abi::arch::noc_cmd::{atomic, cmd_ctrl, ctrl, packet_tag};
use cqlab_abi::arch::tensix::LOCAL_MEM_BASE;
use cqlab_abi::arch::{ArchParams, Noc};
use cqlab_abi::noc::{Coord, NocAddr};

/// Emits NIU sequences for one NOC of one chip.
#[derive(Clone, Copy)]
pub struct NiuAsm {
    pub chip: &'static ArchParams,
    pub noc: Noc,
    /// Scratch registers the sequences clobber.
    pub base: u32,
    pub tmp: u32,
}

impl NiuAsm {
    fn store(&self, p: &mut Vec<u32>, offset: u32, value: u32) {
        p.extend(li(self.tmp, value));
        p.push(sw(self.tmp, self.base, offset as i32));
    }

    /// Points `base` at command buffer `buf` and waits until it reads ready.
    fn ready(&self, p: &mut Vec<u32>, buf: u32) {
        p.extend(li(self.base, self.chip.niu.cmd_buf_base(self.noc, buf)));
        p.push(lw(self.tmp, self.base, self.chip.niu.regs.cmd_ctrl as i32));
        p.push(bne(self.tmp, 0, -4));
    }

    /// The address registers' words of `addr` (corners swapped for a NOC1 multicast).
    fn words(&self, addr: NocAddr) -> cqlab_abi::arch::noc_addr::AddrWords {
        let hw = if addr.is_multicast() && self.noc == Noc::Noc1 {
            let (s, e) = addr.rect();
            NocAddr::multicast(e, s, addr.local()).hw()
        } else {
            addr.hw()
        };
        self.chip.noc.split.split(hw)
    }

    fn addr_regs(&self, p: &mut Vec<u32>, (lo, mid, hi): (u32, u32, u32), addr: NocAddr) {
        let w = self.words(addr);
        self.store(p, lo, w.lo);
        self.store(p, mid, w.mid);
        if self.chip.noc.split.uses_hi() {
            self.store(p, hi, w.hi);
        }
    }

    fn targ(&self) -> (u32, u32, u32) {
        let r = self.chip.niu.regs;
        (r.targ_addr_lo, r.targ_addr_mid, r.targ_addr_hi)
    }

    fn ret(&self) -> (u32, u32, u32) {
        let r = self.chip.niu.regs;
        (r.ret_addr_lo, r.ret_addr_mid, r.ret_addr_hi)
    }

    /// This tile's own coordinate words for the local side of a request.
    fn own(&self, p: &mut Vec<u32>, regs: (u32, u32, u32), me: Coord, local: u32) {
        let w = self.chip.noc.split.words(local as u64, CoordField::unicast(me.x, me.y));
        self.store(p, regs.0, w.lo);
        self.store(p, regs.1, w.mid);
        if self.chip.noc.split.uses_hi() {
            self.store(p, regs.2, w.hi);
        }
    }

    /// `noc_async_read`: `len` bytes at `src` into this tile's (`me`, its
    /// translated coordinates) L1 at `local`, transaction id `tid`.
    pub fn read(&self, me: Coord, src: NocAddr, local: u32, len: u32, tid: u32) -> Vec<u32> {
        let r = self.chip.niu.regs;
        let mut p = Vec::new();
        self.ready(&mut p, cmd_buf::READ);
        self.store(&mut p, r.ctrl, ctrl::READ);
        self.store(&mut p, r.packet_tag, packet_tag::transaction_id(tid));
        self.own(&mut p, self.ret(), me, local);
        self.addr_regs(&mut p, self.targ(), src);
        self.store(&mut p, r.at_len_be, len);
        self.store(&mut p, r.cmd_ctrl, cmd_ctrl::SEND_REQ);
        p
    }

    /// `noc_async_write` (non-posted; a multicast, `dst` with the cqlab
    /// multicast flag, on the multicast VC with `BRCST_PACKET`): `len`
    /// bytes of this tile's L1 at `local` to `dst`.
    pub fn write(&self, me: Coord, local: u32, dst: NocAddr, len: u32) -> Vec<u32> {
        self.write_ctrl(me, local, dst, len, ctrl::write(dst.is_multicast()))
    }

    /// [`NiuAsm::write`] with `NOC_CMD_VC_LINKED` set: a packet of a linked
    /// multicast transaction that more packets follow
    /// (`noc_async_write_multicast(..., linked = true)`).
    pub fn write_linked(&self, me: Coord, local: u32, dst: NocAddr, len: u32) -> Vec<u32> {
        self.write_ctrl(me, local, dst, len, ctrl::write(dst.is_multicast()) | ctrl::VC_LINKED)
    }

    fn write_ctrl(&self, me: Coord, local: u32, dst: NocAddr, len: u32, request: u32) -> Vec<u32> {
        let r = self.chip.niu.regs;
        let mut p = Vec::new();
        self.ready(&mut p, cmd_buf::WRITE);
        self.store(&mut p, r.ctrl, request);
        self.own(&mut p, self.targ(), me, local);
        self.addr_regs(&mut p, self.ret(), dst);
        self.store(&mut p, r.at_len_be, len);
        self.store(&mut p, r.cmd_ctrl, cmd_ctrl::SEND_REQ);
        p
    }

    /// `noc_semaphore_inc` (`noc_fast_atomic_increment`, non-posted, wrap
    /// 31): adds `value` to the L1 word at `dst`; the old value returns to
    /// this tile's L1 at `ret`.
    pub fn atomic_inc(&self, me: Coord, dst: NocAddr, value: u32, ret: u32) -> Vec<u32> {
        let r = self.chip.niu.regs;
        let mut p = Vec::new();
        self.ready(&mut p, cmd_buf::ATOMIC);
        self.own(&mut p, self.ret(), me, ret);
        self.addr_regs(&mut p, self.targ(), dst);
        self.store(&mut p, r.ctrl, ctrl::ATOMIC);
        self.store(&mut p, r.at_len_be, atomic::incr_get(dst.local()));
        self.store(&mut p, r.at_data, value);
        self.store(&mut p, r.cmd_ctrl, cmd_ctrl::SEND_REQ);
        p
    }

    /// `count` reads of `len` bytes as tt-metal's compiled data-movement
    /// requestor issues them (`for (i ...) noc_async_read(...)`): a loop
    /// whose body waits for the read command buffer, writes the local
    /// address, the source's address words, the length and `NOC_CMD_CTRL`,
    /// and counts the read in local memory (tt-metal wh and bh
    /// `noc_nonblocking_api.h` `ncrisc_noc_fast_read`,
    /// `noc_reads_num_issued`); `NOC_CTRL` and the own coordinate of the
    /// return address are written once, before the loop (tt-metal: at
    /// `noc_init`). The k-th read comes from `src + k * stride`
    /// (`count` from 1). Clobbers x8-x18 beside `base` and `tmp`.
    pub fn read_loop(&self, me: Coord, src: NocAddr, stride: u32, local: u32, len: u32, count: u32) -> Vec<u32> {
        let near = (me, local, self.ret());
        self.issue_loop(cmd_buf::READ, ctrl::READ, near, (src, self.targ()), stride, len, count)
    }

    /// [`NiuAsm::read_loop`] for unicast writes (`noc_async_write`,
    /// `ncrisc_noc_fast_write`, non-posted, `NOC_CTRL` written every time):
    /// the k-th writes `len` bytes of this tile's L1 at `local` to
    /// `dst + k * stride`; the loop counts each write issued and each ack
    /// expected in local memory.
    pub fn write_loop(&self, me: Coord, local: u32, dst: NocAddr, stride: u32, len: u32, count: u32) -> Vec<u32> {
        let near = (me, local, self.targ());
        self.issue_loop(cmd_buf::WRITE, ctrl::write(false), near, (dst, self.ret()), stride, len, count)
    }

    /// The loop of [`NiuAsm::read_loop`] and [`NiuAsm::write_loop`] on
    /// command buffer `buf`: this tile's side (`me`, its L1 address, its
    /// address registers), whose coordinate words are written once, and
    /// the far side's address and registers.
    #[allow(clippy::too_many_arguments)]
    fn issue_loop(
        &self,
        buf: u32,
        request: u32,
        (me, local, near_regs): (Coord, u32, (u32, u32, u32)),
        (far, far_regs): (NocAddr, (u32, u32, u32)),
        stride: u32,
        len: u32,
        count: u32,
    ) -> Vec<u32> {
        let mut p = Vec::new();
        self.ready(&mut p, buf);
        let own = self.chip.noc.split.words(local as u64, CoordField::unicast(me.x, me.y));
        self.store(&mut p, near_regs.1, own.mid);
        if self.chip.noc.split.uses_hi() {
            self.store(&mut p, near_regs.2, own.hi);
        }
        let r = self.chip.niu.regs;
        let w = self.words(far);
        assert!(count > 0, "a loop of no packets");
        assert!(
            w.lo as u64 + stride as u64 * count as u64 <= u32::MAX as u64,
            "the far address's low word would carry into its middle word"
        );
        // Kept in registers, as a compiler keeps a loop's invariants: x8
        // ctrl, x9 the local low word, x10-x12 the far address words, x13
        // the length, x14 the loop count, x16 SEND_REQ, x17 the counters
        // in local memory, x18 the stride; x15 and `tmp` are scratch.
        let counters = LOCAL_MEM_BASE + 0x100;
        for (reg, value) in [
            (8, request),
            (9, own.lo),
            (10, w.lo),
            (11, w.mid),
            (12, w.hi),
            (13, len),
            (14, count),
            (16, cmd_ctrl::SEND_REQ),
            (17, counters),
            (18, stride),
        ] {
            p.extend(li(reg, value));
        }
        let read = request == ctrl::READ;
        if read {
            // Set once: tt-metal's read command buffer keeps its `NOC_CTRL`
            // from `noc_init` (`ncrisc_noc_fast_read` writes it only with
            // the dynamic NOC); a write sets it every time.
            p.push(sw(8, self.base, r.ctrl as i32));
        }
        let top = p.len();
        // The command buffer reads ready.
        p.push(lw(self.tmp, self.base, r.cmd_ctrl as i32));
        p.push(bne(self.tmp, 0, -4));
        if !read {
            p.push(sw(8, self.base, r.ctrl as i32));
        }
        p.push(sw(9, self.base, near_regs.0 as i32));
        p.push(sw(10, self.base, far_regs.0 as i32));
        p.push(sw(11, self.base, far_regs.1 as i32));
        if self.chip.noc.split.uses_hi() {
            p.push(sw(12, self.base, far_regs.2 as i32));
        }
        p.push(sw(13, self.base, r.at_len_be as i32));
        p.push(sw(16, self.base, r.cmd_ctrl as i32));
        // The issued count (and, for a write, the acks expected), kept in
        // local memory as tt-metal keeps its in globals.
        let counted = if read { 1 } else { 2 };
        for k in 0..counted {
            p.push(lw(15, 17, 4 * k));
            p.push(addi(15, 15, 1));
            p.push(sw(15, 17, 4 * k));
        }
        if stride != 0 {
            p.push(add(10, 10, 18));
        }
        p.push(addi(14, 14, -1));
        let back = -(4 * (p.len() - top) as i32);
        p.push(bne(14, 0, back));
        p
    }

    /// Spins until counter `index` (`arch::niu::counter`) reads `value`:
    /// the barriers (`noc_async_read_barrier` compares
    /// `NIU_MST_RD_RESP_RECEIVED` with the reads issued, and so on).
    pub fn wait_counter(&self, index: u32, value: u32) -> Vec<u32> {
        let mut p = Vec::new();
        p.extend(li(self.base, self.chip.niu.status_reg(self.noc, index)));
        p.extend(li(self.tmp, value));
        // x31 holds the counter while it is compared.
        p.push(lw(31, self.base, 0));
        p.push(bne(31, self.tmp, -4));
        p
    }

    /// Loads counter `index` into register `rd`.
    pub fn load_counter(&self, rd: u32, index: u32) -> Vec<u32> {
        let mut p = li(self.base, self.chip.niu.status_reg(self.noc, index)).to_vec();
        p.push(lw(rd, self.base, 0));
        p
    }
}
