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

use crate::asm::{bne, li, lw, sw};
use cqlab_abi::arch::niu::cmd_buf;
use cqlab_abi::arch::noc_addr::CoordField;
use cqlab_abi::arch::noc_cmd::{atomic, cmd_ctrl, ctrl, packet_tag};
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
