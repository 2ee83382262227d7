# Loads and stores: byte/half sign and zero extension, sub-word stores that
# leave neighbouring bytes alone, positive and negative offsets.
test_main:
    la x10, buf
    li x1, 0x80817f02
    sw x1, 0(x10)
    lw x14, 0(x10)
    CHECK 1, x14, 0x80817f02
    lb x14, 0(x10)
    CHECK 2, x14, 0x00000002
    lb x14, 1(x10)
    CHECK 3, x14, 0x0000007f
    lb x14, 2(x10)
    CHECK 4, x14, 0xffffff81         # sign-extended
    lbu x14, 3(x10)
    CHECK 5, x14, 0x00000080         # zero-extended
    lb x14, 3(x10)
    CHECK 6, x14, 0xffffff80
    lh x14, 0(x10)
    CHECK 7, x14, 0x00007f02
    lh x14, 2(x10)
    CHECK 8, x14, 0xffff8081
    lhu x14, 2(x10)
    CHECK 9, x14, 0x00008081

    # Sub-word stores touch only their bytes.
    li x1, 0x11223344
    sw x1, 4(x10)
    li x2, 0xaabbccdd
    sb x2, 5(x10)
    lw x14, 4(x10)
    CHECK 10, x14, 0x1122dd44
    sh x2, 6(x10)
    lw x14, 4(x10)
    CHECK 11, x14, 0xccdddd44
    sb x0, 4(x10)
    lw x14, 4(x10)
    CHECK 12, x14, 0xccdddd00
    sh x0, 4(x10)
    lw x14, 4(x10)
    CHECK 13, x14, 0xccdd0000

    # Negative offsets from a base past the data.
    addi x11, x10, 16
    li x1, 0xdeadbeef
    sw x1, -8(x11)
    lw x14, 8(x10)
    CHECK 20, x14, 0xdeadbeef
    lhu x14, -6(x11)
    CHECK 21, x14, 0xdead
    lbu x14, -8(x11)
    CHECK 22, x14, 0xef

    # Loads into x0 are discarded.
    lw x0, 0(x10)
    CHECK 23, x0, 0

    # .data is loaded with its initial value.
    la x12, initial
    lw x14, 0(x12)
    CHECK 30, x14, 0x600dcafe
    j pass

    .data
    .align 2
initial: .word 0x600dcafe
    .bss
    .align 4
buf: .space 32
