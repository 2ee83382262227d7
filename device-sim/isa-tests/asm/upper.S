# lui and auipc: upper immediates, low bits cleared, PC-relative results.
test_main:
    lui x14, 0
    CHECK 1, x14, 0
    lui x14, 0xfffff
    CHECK 2, x14, 0xfffff000
    lui x14, 0x80000
    CHECK 3, x14, 0x80000000
    lui x14, 0x12345
    CHECK 4, x14, 0x12345000
    # auipc: the result is relative to its own address.
1:  auipc x14, 0
    la x7, 1b
    li gp, 5
    bne x14, x7, fail
2:  auipc x14, 1
    la x7, 2b
    sub x14, x14, x7
    CHECK 6, x14, 0x1000
3:  auipc x14, 0xfffff
    la x7, 3b
    sub x14, x14, x7
    CHECK 7, x14, 0xfffff000
    j pass
