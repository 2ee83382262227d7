# RV32I integer register-register and register-immediate arithmetic/logic,
# and writes to x0 being discarded.
test_main:
    TEST_RR 1, add, 0x00000003, 1, 2
    TEST_RR 2, add, 0x00000000, 0xffffffff, 1
    TEST_RR 3, add, 0x80000000, 0x7fffffff, 1          # wraps, no trap
    TEST_RR 4, sub, 0xfffffffe, 1, 3
    TEST_RR 5, sub, 0x7fffffff, 0x80000000, 1
    TEST_RR 6, slt, 1, 0xffffffff, 0                      # -1 < 0
    TEST_RR 7, slt, 0, 0, 0xffffffff
    TEST_RR 8, slt, 0, 5, 5
    TEST_RR 9, sltu, 0, 0xffffffff, 0
    TEST_RR 10, sltu, 1, 0, 0xffffffff
    TEST_RR 11, xor, 0x0ff00ff0, 0xff00ff00, 0xf0f0f0f0
    TEST_RR 12, or, 0xfff0fff0, 0xff00ff00, 0xf0f0f0f0
    TEST_RR 13, and, 0xf000f000, 0xff00ff00, 0xf0f0f0f0
    TEST_RR_SRC1_EQ_DEST 14, add, 24, 11, 13

    TEST_RI 20, addi, 0x00000000, 0x00000001, -1
    TEST_RI 21, addi, 0x800007fe, 0x7fffffff, 0x7ff
    TEST_RI 22, addi, 0x7ffff800, 0x80000000, -2048
    TEST_RI 23, slti, 1, 0xfffffff0, -1
    TEST_RI 24, slti, 0, 0, -1
    TEST_RI 25, sltiu, 1, 5, -1                           # imm sign-extends to 0xffffffff
    TEST_RI 26, sltiu, 0, 0xffffffff, 5
    TEST_RI 27, xori, 0xffff0f0f, 0x0000f0f0, -1
    TEST_RI 28, ori, 0xfffff8f0, 0x0000f0f0, -0x710
    TEST_RI 29, andi, 0x000000f0, 0x0000f0f0, 0x0ff
    TEST_RI 30, andi, 0x0000f000, 0x0000f0f0, -0x100

    # x0 stays zero whatever is written to it.
    li x1, 0x12345678
    addi x0, x1, 1
    add x0, x1, x1
    lui x0, 0xfffff
    CHECK 40, x0, 0
    mv x14, x0
    CHECK 41, x14, 0
    # x0 as a source reads zero.
    add x14, x0, x1
    CHECK 42, x14, 0x12345678
    j pass
