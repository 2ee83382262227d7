//! A tiny RV32IM encoder: enough to assemble benchmark loops and unit-test
//! programs in-process, without a cross toolchain. Argument order follows
//! assembly syntax (`addi rd, rs1, imm`; `sw rs2, imm(rs1)` is
//! `sw(rs2, rs1, imm)`). Out-of-range immediates are truncated to their field
//! (callers are tests and fixed programs, so a debug assertion suffices).

pub const ECALL: u32 = 0x0000_0073;
pub const EBREAK: u32 = 0x0010_0073;
pub const FENCE: u32 = 0x0ff0_000f;

pub const fn r_type(opcode: u32, f7: u32, f3: u32, rd: u32, rs1: u32, rs2: u32) -> u32 {
    f7 << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | rd << 7 | opcode
}

pub const fn i_type(opcode: u32, f3: u32, rd: u32, rs1: u32, imm: i32) -> u32 {
    debug_assert!(imm >= -2048 && imm < 4096);
    ((imm as u32) & 0xfff) << 20 | rs1 << 15 | f3 << 12 | rd << 7 | opcode
}

/// Store: `f3` 0/1/2 = sb/sh/sw of `rs2` at `imm(rs1)`.
pub const fn s_type(f3: u32, rs2: u32, rs1: u32, imm: i32) -> u32 {
    debug_assert!(imm >= -2048 && imm < 2048);
    let imm = imm as u32;
    ((imm >> 5) & 0x7f) << 25 | rs2 << 20 | rs1 << 15 | f3 << 12 | (imm & 0x1f) << 7 | 0x23
}

/// Branch with byte offset `off` (even, +-4 KiB).
pub const fn b_type(f3: u32, rs1: u32, rs2: u32, off: i32) -> u32 {
    debug_assert!(off % 2 == 0 && off >= -4096 && off < 4096);
    let o = off as u32;
    ((o >> 12) & 1) << 31
        | ((o >> 5) & 0x3f) << 25
        | rs2 << 20
        | rs1 << 15
        | f3 << 12
        | ((o >> 1) & 0xf) << 8
        | ((o >> 11) & 1) << 7
        | 0x63
}

pub const fn lui(rd: u32, imm20: u32) -> u32 {
    (imm20 & 0xfffff) << 12 | rd << 7 | 0x37
}
pub const fn auipc(rd: u32, imm20: u32) -> u32 {
    (imm20 & 0xfffff) << 12 | rd << 7 | 0x17
}
/// `jal rd, off` with byte offset `off` (even, +-1 MiB).
pub const fn jal(rd: u32, off: i32) -> u32 {
    debug_assert!(off % 2 == 0 && off >= -(1 << 20) && off < (1 << 20));
    let o = off as u32;
    ((o >> 20) & 1) << 31 | ((o >> 1) & 0x3ff) << 21 | ((o >> 11) & 1) << 20 | ((o >> 12) & 0xff) << 12 | rd << 7 | 0x6f
}
pub const fn jalr(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x67, 0, rd, rs1, imm)
}

pub const fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x13, 0, rd, rs1, imm)
}
pub const fn andi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x13, 7, rd, rs1, imm)
}
pub const fn xori(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x13, 4, rd, rs1, imm)
}
pub const fn slli(rd: u32, rs1: u32, shamt: u32) -> u32 {
    r_type(0x13, 0, 1, rd, rs1, shamt & 0x1f)
}
pub const fn srli(rd: u32, rs1: u32, shamt: u32) -> u32 {
    r_type(0x13, 0, 5, rd, rs1, shamt & 0x1f)
}
pub const fn srai(rd: u32, rs1: u32, shamt: u32) -> u32 {
    r_type(0x13, 0x20, 5, rd, rs1, shamt & 0x1f)
}

pub const fn add(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 0, 0, rd, rs1, rs2)
}
pub const fn sub(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 0x20, 0, rd, rs1, rs2)
}
pub const fn xor(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 0, 4, rd, rs1, rs2)
}
pub const fn sltu(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 0, 3, rd, rs1, rs2)
}
pub const fn mul(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 1, 0, rd, rs1, rs2)
}
pub const fn mulhu(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 1, 3, rd, rs1, rs2)
}
pub const fn div(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 1, 4, rd, rs1, rs2)
}
pub const fn divu(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 1, 5, rd, rs1, rs2)
}
pub const fn rem(rd: u32, rs1: u32, rs2: u32) -> u32 {
    r_type(0x33, 1, 6, rd, rs1, rs2)
}

pub const fn lb(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x03, 0, rd, rs1, imm)
}
pub const fn lh(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x03, 1, rd, rs1, imm)
}
pub const fn lw(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x03, 2, rd, rs1, imm)
}
pub const fn lbu(rd: u32, rs1: u32, imm: i32) -> u32 {
    i_type(0x03, 4, rd, rs1, imm)
}
pub const fn sb(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s_type(0, rs2, rs1, imm)
}
pub const fn sh(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s_type(1, rs2, rs1, imm)
}
pub const fn sw(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s_type(2, rs2, rs1, imm)
}

pub const fn beq(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(0, rs1, rs2, off)
}
pub const fn bne(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(1, rs1, rs2, off)
}
pub const fn blt(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(4, rs1, rs2, off)
}
pub const fn bltu(rs1: u32, rs2: u32, off: i32) -> u32 {
    b_type(6, rs1, rs2, off)
}

pub const fn csrrs(rd: u32, csr: u32, rs1: u32) -> u32 {
    i_type(0x73, 2, rd, rs1, 0) | csr << 20
}
pub const fn csrrw(rd: u32, csr: u32, rs1: u32) -> u32 {
    i_type(0x73, 1, rd, rs1, 0) | csr << 20
}

/// Little-endian bytes of a program, for loading into memory.
pub fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// `li rd, value` as `lui` + `addi` (always two words, for fixed layouts).
pub const fn li(rd: u32, value: u32) -> [u32; 2] {
    let lo = ((value << 20) as i32) >> 20;
    let hi = value.wrapping_sub(lo as u32) >> 12;
    [lui(rd, hi), addi(rd, rd, lo)]
}
