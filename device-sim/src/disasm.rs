//! Text form of a decoded instruction, for `--trace` and debug views.
//! Branch and jump targets are printed as absolute addresses.

use crate::csr;
use crate::decode::{Decoded, Op};
use std::fmt;

/// `Display`s `d` as assembly, resolving PC-relative targets against `pc`.
pub struct Disasm {
    pub pc: u32,
    pub d: Decoded,
}

fn mnemonic(op: Op) -> &'static str {
    match op {
        Op::NotDecoded => "<not decoded>",
        Op::Illegal => "<illegal>",
        Op::Lui => "lui",
        Op::Auipc => "auipc",
        Op::Jal => "jal",
        Op::Jalr => "jalr",
        Op::Beq => "beq",
        Op::Bne => "bne",
        Op::Blt => "blt",
        Op::Bge => "bge",
        Op::Bltu => "bltu",
        Op::Bgeu => "bgeu",
        Op::Lb => "lb",
        Op::Lh => "lh",
        Op::Lw => "lw",
        Op::Lbu => "lbu",
        Op::Lhu => "lhu",
        Op::Sb => "sb",
        Op::Sh => "sh",
        Op::Sw => "sw",
        Op::Addi => "addi",
        Op::Slti => "slti",
        Op::Sltiu => "sltiu",
        Op::Xori => "xori",
        Op::Ori => "ori",
        Op::Andi => "andi",
        Op::Slli => "slli",
        Op::Srli => "srli",
        Op::Srai => "srai",
        Op::Add => "add",
        Op::Sub => "sub",
        Op::Sll => "sll",
        Op::Slt => "slt",
        Op::Sltu => "sltu",
        Op::Xor => "xor",
        Op::Srl => "srl",
        Op::Sra => "sra",
        Op::Or => "or",
        Op::And => "and",
        Op::Mul => "mul",
        Op::Mulh => "mulh",
        Op::Mulhsu => "mulhsu",
        Op::Mulhu => "mulhu",
        Op::Div => "div",
        Op::Divu => "divu",
        Op::Rem => "rem",
        Op::Remu => "remu",
        Op::Fence => "fence",
        Op::Ecall => "ecall",
        Op::Ebreak => "ebreak",
        Op::Csrrw => "csrrw",
        Op::Csrrs => "csrrs",
        Op::Csrrc => "csrrc",
        Op::Csrrwi => "csrrwi",
        Op::Csrrsi => "csrrsi",
        Op::Csrrci => "csrrci",
    }
}

impl fmt::Display for Disasm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.d;
        let m = mnemonic(d.op);
        let (rd, rs1, rs2) = (d.arch_rd(), d.rs1, d.rs2);
        let simm = d.imm as i32;
        let target = self.pc.wrapping_add(d.imm);
        match d.op {
            Op::NotDecoded | Op::Fence | Op::Ecall | Op::Ebreak => write!(f, "{m}"),
            Op::Illegal => write!(f, "{m} 0x{:08x}", d.imm),
            Op::Lui | Op::Auipc => write!(f, "{m} x{rd}, 0x{:x}", d.imm >> 12),
            Op::Jal => write!(f, "{m} x{rd}, 0x{target:x}"),
            Op::Jalr => write!(f, "{m} x{rd}, {simm}(x{rs1})"),
            Op::Beq | Op::Bne | Op::Blt | Op::Bge | Op::Bltu | Op::Bgeu => {
                write!(f, "{m} x{rs1}, x{rs2}, 0x{target:x}")
            }
            Op::Lb | Op::Lh | Op::Lw | Op::Lbu | Op::Lhu => write!(f, "{m} x{rd}, {simm}(x{rs1})"),
            Op::Sb | Op::Sh | Op::Sw => write!(f, "{m} x{rs2}, {simm}(x{rs1})"),
            Op::Addi | Op::Slti | Op::Sltiu | Op::Xori | Op::Ori | Op::Andi | Op::Slli | Op::Srli | Op::Srai => {
                write!(f, "{m} x{rd}, x{rs1}, {simm}")
            }
            Op::Csrrw | Op::Csrrs | Op::Csrrc | Op::Csrrwi | Op::Csrrsi | Op::Csrrci => {
                let name = csr::name(d.imm).map_or_else(|| format!("0x{:03x}", d.imm), str::to_owned);
                if matches!(d.op, Op::Csrrwi | Op::Csrrsi | Op::Csrrci) {
                    write!(f, "{m} x{rd}, {name}, {rs1}")
                } else {
                    write!(f, "{m} x{rd}, {name}, x{rs1}")
                }
            }
            _ => write!(f, "{m} x{rd}, x{rs1}, x{rs2}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm;
    use crate::decode::decode;

    fn dis(pc: u32, w: u32) -> String {
        Disasm { pc, d: decode(w) }.to_string()
    }

    #[test]
    fn prints_readable_assembly() {
        assert_eq!(dis(0, asm::addi(0, 1, -3)), "addi x0, x1, -3");
        assert_eq!(dis(0x100, asm::bne(1, 2, -8)), "bne x1, x2, 0xf8");
        assert_eq!(dis(0, asm::sw(3, 2, 12)), "sw x3, 12(x2)");
        assert_eq!(dis(0, asm::csrrs(5, 0xb00, 0)), "csrrs x5, mcycle, x0");
        assert_eq!(dis(0, asm::mul(1, 2, 3)), "mul x1, x2, x3");
        assert_eq!(dis(0, 0xffff_ffff), "<illegal> 0xffffffff");
    }
}
