# Shared start-up, reporting and check macros of the ISA tests.
#
# Conventions (as riscv-tests): gp (x3) holds the number of the check in
# progress; a failing check jumps to `fail`, which stores (gp << 1) | 1 to
# `tohost`; reaching `pass` stores 1. Both then spin, so a simulator that
# ignored the store would run into --max-cycles rather than report success.
# Checks use x1/x2 as operands, x14 as result and x7 as the expected value.
# (No braces anywhere: this text goes through Rust's global_asm! formatter.)

    .section .text.init, "ax"
    .globl _start
_start:
    la sp, __stack_top
    li gp, 0
    j test_main

    .text
pass:
    fence
    li t0, 1
    la t1, tohost
    sw t0, 0(t1)
1:  j 1b

fail:
    fence
    bnez gp, 2f
    li gp, 0x7ff            # a failure before any check must not read as a pass
2:  slli t0, gp, 1
    ori t0, t0, 1
    la t1, tohost
    sw t0, 0(t1)
3:  j 3b

    .section .tohost, "aw", @progbits
    .align 3
    .globl tohost
tohost: .word 0, 0
    .globl fromhost
fromhost: .word 0, 0

    .text

# Fails check \num unless register \reg equals \value.
.macro CHECK num, reg, value
    li gp, \num
    li x7, \value
    bne \reg, x7, fail
.endm

# x14 = \inst x1, x2 with x1 = \a, x2 = \b; expects \result.
.macro TEST_RR num, inst, result, a, b
    li x1, \a
    li x2, \b
    \inst x14, x1, x2
    CHECK \num, x14, \result
.endm

# x14 = \inst x1, \imm with x1 = \a; expects \result.
.macro TEST_RI num, inst, result, a, imm
    li x1, \a
    \inst x14, x1, \imm
    CHECK \num, x14, \result
.endm

# Destination equal to a source: x1 = \inst x1, x2.
.macro TEST_RR_SRC1_EQ_DEST num, inst, result, a, b
    li x1, \a
    li x2, \b
    \inst x1, x1, x2
    CHECK \num, x1, \result
.endm

# Branch \inst x1, x2 with x1 = \a, x2 = \b must (\taken = 1) or must not
# (\taken = 0) be taken.
.macro TEST_BR num, inst, taken, a, b
    li gp, \num
    li x1, \a
    li x2, \b
    li x14, 0
    \inst x1, x2, 4f
    li x14, 1               # fall-through path
4:  li x7, 1 - \taken
    bne x14, x7, fail
.endm
