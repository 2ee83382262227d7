# Zicsr counters: mcycle advances by the documented costs, minstret counts
# retired instructions exactly, high halves and unprivileged aliases read
# consistently, mhartid is 0 on the standalone core, fence is a no-op.
test_main:
    # minstret: two reads separated by three instructions differ by 4.
    csrr x1, minstret
    nop
    nop
    nop
    csrr x2, minstret
    sub x14, x2, x1
    CHECK 1, x14, 4

    # mcycle: nops cost 1 cycle each.
    csrr x1, mcycle
    nop
    nop
    csrr x2, mcycle
    sub x14, x2, x1
    CHECK 2, x14, 3

    # A multiply costs 2, a load 8 (see cqlab-sim timing.rs).
    la x10, word
    csrr x1, mcycle
    mul x3, x3, x3
    lw x4, 0(x10)
    csrr x2, mcycle
    sub x14, x2, x1
    li gp, 3
    li x7, 1 + 2 + 8
    bne x14, x7, fail

    # mcycle is monotonic across a loop; the high halves are 0 this early.
    csrr x1, mcycle
    li x5, 100
1:  addi x5, x5, -1
    bnez x5, 1b
    csrr x2, mcycle
    li gp, 4
    bleu x2, x1, fail
    csrr x14, mcycleh
    CHECK 5, x14, 0
    csrr x14, minstreth
    CHECK 6, x14, 0

    # Unprivileged aliases read the same counters.
    csrr x1, minstret
    rdinstret x2
    sub x14, x2, x1
    CHECK 7, x14, 1
    rdcycle x1
    csrr x2, mcycle
    sub x14, x2, x1
    CHECK 8, x14, 1

    csrr x14, mhartid
    CHECK 9, x14, 0

    # csrrs/csrrc with x0 and the immediate forms with 0 only read.
    csrrs x14, minstret, x0
    csrrc x1, minstret, x0
    sub x14, x1, x14
    CHECK 10, x14, 1
    csrrsi x14, mhartid, 0
    CHECK 11, x14, 0
    csrrci x14, mhartid, 0
    CHECK 12, x14, 0

    fence
    fence rw, rw
    fence.i
    j pass

    .data
    .align 2
word: .word 7
