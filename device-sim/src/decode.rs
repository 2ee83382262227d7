//! RV32IM (+ Zicsr) instruction decoding into the compact form the
//! interpreter's predecoded cache stores: one 8-byte `Decoded` per code word.
//!
//! Decoding happens once per code word; the hot loop only matches on `Op`.
//! Two tricks keep the loop tight:
//! - a destination of `x0` is rewritten to the sink register [`X0_SINK`], so
//!   no instruction needs an `rd != 0` test (reads of `x0` still see 0);
//! - the all-zero `Decoded` is [`Op::NotDecoded`], so a freshly zeroed (lazily
//!   committed) cache means "decode me" and invalidation is a zero store.

use zerocopy::{FromZeros, Immutable, IntoBytes, KnownLayout};

/// Register index that absorbs writes to `x0`; the register file has 64
/// slots so `& 63` indexing needs no bounds check.
pub const X0_SINK: u8 = 32;

/// Every operation the interpreter executes, one per instruction form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromZeros, IntoBytes, Immutable, KnownLayout)]
#[repr(u8)]
pub enum Op {
    /// Cache slot not decoded yet (or invalidated by a store).
    NotDecoded = 0,
    /// Not a valid RV32IM/Zicsr instruction; `imm` holds the raw word.
    Illegal,
    Lui,
    Auipc,
    Jal,
    Jalr,
    Beq,
    Bne,
    Blt,
    Bge,
    Bltu,
    Bgeu,
    Lb,
    Lh,
    Lw,
    Lbu,
    Lhu,
    Sb,
    Sh,
    Sw,
    Addi,
    Slti,
    Sltiu,
    Xori,
    Ori,
    Andi,
    Slli,
    Srli,
    Srai,
    Add,
    Sub,
    Sll,
    Slt,
    Sltu,
    Xor,
    Srl,
    Sra,
    Or,
    And,
    Mul,
    Mulh,
    Mulhsu,
    Mulhu,
    Div,
    Divu,
    Rem,
    Remu,
    /// `fence` and `fence.i`: no-ops (single in-order hart; stores into
    /// decoded code invalidate the cache themselves).
    Fence,
    Ecall,
    Ebreak,
    /// CSR ops: `imm` = CSR number; for the `*i` forms `rs1` is the 5-bit
    /// immediate. `rs1` (or the immediate) being 0 means "no write".
    Csrrw,
    Csrrs,
    Csrrc,
    Csrrwi,
    Csrrsi,
    Csrrci,
}

/// One predecoded instruction. `rd` is already remapped to [`X0_SINK`] when
/// it names `x0`; `imm` is the sign-extended immediate (as u32).
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromZeros, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct Decoded {
    pub op: Op,
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
    pub imm: u32,
}

const _: () = assert!(core::mem::size_of::<Decoded>() == 8);

impl Decoded {
    pub const NOT_DECODED: Decoded = Decoded { op: Op::NotDecoded, rd: 0, rs1: 0, rs2: 0, imm: 0 };

    const fn new(op: Op, rd: u32, rs1: u32, rs2: u32, imm: u32) -> Self {
        let rd = if rd == 0 { X0_SINK } else { rd as u8 };
        Decoded { op, rd, rs1: rs1 as u8, rs2: rs2 as u8, imm }
    }

    const fn illegal(word: u32) -> Self {
        Decoded { op: Op::Illegal, rd: X0_SINK, rs1: 0, rs2: 0, imm: word }
    }

    /// Architectural destination register (0 when the write is discarded).
    pub const fn arch_rd(&self) -> u8 {
        if self.rd == X0_SINK {
            0
        } else {
            self.rd
        }
    }
}

const fn imm_i(w: u32) -> u32 {
    ((w as i32) >> 20) as u32
}

const fn imm_s(w: u32) -> u32 {
    ((((w as i32) >> 25) << 5) as u32) | ((w >> 7) & 0x1f)
}

const fn imm_b(w: u32) -> u32 {
    let sign = (((w as i32) >> 31) << 12) as u32;
    sign | ((w & 0x80) << 4) | ((w >> 20) & 0x7e0) | ((w >> 7) & 0x1e)
}

const fn imm_u(w: u32) -> u32 {
    w & 0xffff_f000
}

const fn imm_j(w: u32) -> u32 {
    let sign = (((w as i32) >> 31) << 20) as u32;
    sign | (w & 0x000f_f000) | ((w >> 9) & 0x800) | ((w >> 20) & 0x7fe)
}

/// Decodes one 32-bit instruction word. Never fails: anything that is not a
/// valid RV32IM/Zicsr encoding becomes [`Op::Illegal`] carrying the word.
pub const fn decode(w: u32) -> Decoded {
    let rd = (w >> 7) & 0x1f;
    let rs1 = (w >> 15) & 0x1f;
    let rs2 = (w >> 20) & 0x1f;
    let f3 = (w >> 12) & 7;
    let f7 = w >> 25;
    // Compressed instructions (low bits != 0b11) are not supported (no C).
    if w & 3 != 3 {
        return Decoded::illegal(w);
    }
    let op = match w & 0x7f {
        0x37 => return Decoded::new(Op::Lui, rd, 0, 0, imm_u(w)),
        0x17 => return Decoded::new(Op::Auipc, rd, 0, 0, imm_u(w)),
        0x6f => return Decoded::new(Op::Jal, rd, 0, 0, imm_j(w)),
        0x67 => {
            if f3 != 0 {
                return Decoded::illegal(w);
            }
            return Decoded::new(Op::Jalr, rd, rs1, 0, imm_i(w));
        }
        0x63 => {
            let op = match f3 {
                0 => Op::Beq,
                1 => Op::Bne,
                4 => Op::Blt,
                5 => Op::Bge,
                6 => Op::Bltu,
                7 => Op::Bgeu,
                _ => return Decoded::illegal(w),
            };
            return Decoded::new(op, 0, rs1, rs2, imm_b(w));
        }
        0x03 => {
            let op = match f3 {
                0 => Op::Lb,
                1 => Op::Lh,
                2 => Op::Lw,
                4 => Op::Lbu,
                5 => Op::Lhu,
                _ => return Decoded::illegal(w),
            };
            return Decoded::new(op, rd, rs1, 0, imm_i(w));
        }
        0x23 => {
            let op = match f3 {
                0 => Op::Sb,
                1 => Op::Sh,
                2 => Op::Sw,
                _ => return Decoded::illegal(w),
            };
            return Decoded::new(op, 0, rs1, rs2, imm_s(w));
        }
        0x13 => match f3 {
            0 => Op::Addi,
            2 => Op::Slti,
            3 => Op::Sltiu,
            4 => Op::Xori,
            6 => Op::Ori,
            7 => Op::Andi,
            // Shifts by immediate: shamt is 5 bits on RV32; imm[11:5] selects
            // the kind and any other value is reserved.
            1 if f7 == 0 => return Decoded::new(Op::Slli, rd, rs1, 0, rs2),
            5 if f7 == 0 => return Decoded::new(Op::Srli, rd, rs1, 0, rs2),
            5 if f7 == 0x20 => return Decoded::new(Op::Srai, rd, rs1, 0, rs2),
            _ => return Decoded::illegal(w),
        },
        0x33 => {
            let op = match (f7, f3) {
                (0, 0) => Op::Add,
                (0x20, 0) => Op::Sub,
                (0, 1) => Op::Sll,
                (0, 2) => Op::Slt,
                (0, 3) => Op::Sltu,
                (0, 4) => Op::Xor,
                (0, 5) => Op::Srl,
                (0x20, 5) => Op::Sra,
                (0, 6) => Op::Or,
                (0, 7) => Op::And,
                (1, 0) => Op::Mul,
                (1, 1) => Op::Mulh,
                (1, 2) => Op::Mulhsu,
                (1, 3) => Op::Mulhu,
                (1, 4) => Op::Div,
                (1, 5) => Op::Divu,
                (1, 6) => Op::Rem,
                (1, 7) => Op::Remu,
                _ => return Decoded::illegal(w),
            };
            return Decoded::new(op, rd, rs1, rs2, 0);
        }
        0x0f => {
            // fence (f3 0) and fence.i (f3 1); fm/pred/succ are ignored.
            if f3 > 1 {
                return Decoded::illegal(w);
            }
            return Decoded::new(Op::Fence, 0, 0, 0, 0);
        }
        0x73 => {
            let csr = w >> 20;
            let op = match f3 {
                0 => {
                    if rd != 0 || rs1 != 0 {
                        return Decoded::illegal(w);
                    }
                    return match csr {
                        0 => Decoded::new(Op::Ecall, 0, 0, 0, 0),
                        1 => Decoded::new(Op::Ebreak, 0, 0, 0, 0),
                        // mret, wfi, ...: no privileged architecture here.
                        _ => Decoded::illegal(w),
                    };
                }
                1 => Op::Csrrw,
                2 => Op::Csrrs,
                3 => Op::Csrrc,
                5 => Op::Csrrwi,
                6 => Op::Csrrsi,
                7 => Op::Csrrci,
                _ => return Decoded::illegal(w),
            };
            return Decoded::new(op, rd, rs1, 0, csr);
        }
        _ => return Decoded::illegal(w),
    };
    Decoded::new(op, rd, rs1, 0, imm_i(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::*;

    #[test]
    fn immediates_round_trip_through_the_encoder() {
        for imm in [-2048, -1, 0, 1, 2047, 0x555, -0x556] {
            assert_eq!(decode(addi(5, 6, imm)), Decoded::new(Op::Addi, 5, 6, 0, imm as u32));
            assert_eq!(decode(sw(7, 8, imm)), Decoded::new(Op::Sw, 0, 8, 7, imm as u32));
        }
        for off in [-4096, -2, 0, 2, 4094, 0x7fe, -0x802] {
            assert_eq!(decode(beq(1, 2, off)).imm, off as u32, "branch offset {off}");
        }
        for off in [-(1 << 20), -2, 0, 2, (1 << 20) - 2, 0x5_5556, -0x5_5556] {
            assert_eq!(decode(jal(1, off)).imm, off as u32, "jal offset {off}");
        }
        assert_eq!(decode(lui(3, 0xfffff)).imm, 0xffff_f000);
        assert_eq!(decode(auipc(3, 0x12345)).imm, 0x1234_5000);
    }

    #[test]
    fn x0_destination_goes_to_the_sink() {
        let d = decode(addi(0, 1, 5));
        assert_eq!(d.rd, X0_SINK);
        assert_eq!(d.arch_rd(), 0);
        assert_eq!(decode(addi(1, 0, 5)).rs1, 0);
    }

    #[test]
    fn every_register_register_form_decodes() {
        let cases: [(u32, u32, Op); 18] = [
            (0, 0, Op::Add),
            (0x20, 0, Op::Sub),
            (0, 1, Op::Sll),
            (0, 2, Op::Slt),
            (0, 3, Op::Sltu),
            (0, 4, Op::Xor),
            (0, 5, Op::Srl),
            (0x20, 5, Op::Sra),
            (0, 6, Op::Or),
            (0, 7, Op::And),
            (1, 0, Op::Mul),
            (1, 1, Op::Mulh),
            (1, 2, Op::Mulhsu),
            (1, 3, Op::Mulhu),
            (1, 4, Op::Div),
            (1, 5, Op::Divu),
            (1, 6, Op::Rem),
            (1, 7, Op::Remu),
        ];
        for (f7, f3, op) in cases {
            let d = decode(r_type(0x33, f7, f3, 3, 4, 5));
            assert_eq!((d.op, d.rd, d.rs1, d.rs2), (op, 3, 4, 5));
        }
        assert_eq!(decode(r_type(0x33, 0x20, 1, 3, 4, 5)).op, Op::Illegal);
        assert_eq!(decode(r_type(0x33, 2, 0, 3, 4, 5)).op, Op::Illegal);
    }

    #[test]
    fn loads_stores_branches_and_system() {
        assert_eq!(decode(i_type(0x03, 0, 1, 2, 0)).op, Op::Lb);
        assert_eq!(decode(i_type(0x03, 1, 1, 2, 0)).op, Op::Lh);
        assert_eq!(decode(i_type(0x03, 2, 1, 2, 0)).op, Op::Lw);
        assert_eq!(decode(i_type(0x03, 4, 1, 2, 0)).op, Op::Lbu);
        assert_eq!(decode(i_type(0x03, 5, 1, 2, 0)).op, Op::Lhu);
        assert_eq!(decode(i_type(0x03, 3, 1, 2, 0)).op, Op::Illegal, "ld is RV64 only");
        assert_eq!(decode(s_type(0, 1, 2, 0)).op, Op::Sb);
        assert_eq!(decode(s_type(1, 1, 2, 0)).op, Op::Sh);
        assert_eq!(decode(s_type(2, 1, 2, 0)).op, Op::Sw);
        assert_eq!(decode(s_type(3, 1, 2, 0)).op, Op::Illegal);
        for (f3, op) in [(0, Op::Beq), (1, Op::Bne), (4, Op::Blt), (5, Op::Bge), (6, Op::Bltu), (7, Op::Bgeu)] {
            assert_eq!(decode(b_type(f3, 1, 2, 8)).op, op);
        }
        assert_eq!(decode(b_type(2, 1, 2, 8)).op, Op::Illegal);
        assert_eq!(decode(ECALL).op, Op::Ecall);
        assert_eq!(decode(EBREAK).op, Op::Ebreak);
        assert_eq!(decode(0x3020_0073).op, Op::Illegal, "mret");
        assert_eq!(decode(0x0ff0_000f).op, Op::Fence);
        assert_eq!(decode(csrrs(5, 0xb00, 0)), Decoded::new(Op::Csrrs, 5, 0, 0, 0xb00));
        assert_eq!(decode(i_type(0x73, 4, 1, 2, 0xb00)).op, Op::Illegal, "funct3 4 is reserved");
        assert_eq!(decode(i_type(0x67, 1, 1, 2, 0)).op, Op::Illegal, "jalr needs funct3 0");
    }

    #[test]
    fn shift_immediates_reject_reserved_bits() {
        assert_eq!(decode(slli(1, 2, 31)), Decoded::new(Op::Slli, 1, 2, 0, 31));
        assert_eq!(decode(srai(1, 2, 7)), Decoded::new(Op::Srai, 1, 2, 0, 7));
        // shamt[5] set: reserved on RV32.
        assert_eq!(decode(i_type(0x13, 1, 1, 2, 32)).op, Op::Illegal);
        assert_eq!(decode(i_type(0x13, 5, 1, 2, 0x420)).op, Op::Illegal);
    }

    #[test]
    fn garbage_is_illegal_and_keeps_the_word() {
        for w in [0u32, 0xffff_ffff, 0x0000_0001, 0x0000_007f] {
            let d = decode(w);
            assert_eq!((d.op, d.imm), (Op::Illegal, w));
        }
    }
}
