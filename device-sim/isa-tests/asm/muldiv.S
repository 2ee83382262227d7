# RV32M: products (low and all three high-word forms), division and
# remainder with division by zero and signed overflow (no traps).
test_main:
    TEST_RR 1, mul, 0x00000000, 0, 0x12345678
    TEST_RR 2, mul, 0x00000006, 2, 3
    TEST_RR 3, mul, 0xfffffffa, 2, -3
    TEST_RR 4, mul, 0x00000001, 0xffffffff, 0xffffffff
    TEST_RR 5, mul, 0x92345678, 0x12345678, 0x10000001
    TEST_RR 10, mulh, 0x00000000, 0xffffffff, 0xffffffff   # -1 * -1
    TEST_RR 11, mulh, 0x40000000, 0x80000000, 0x80000000
    TEST_RR 12, mulh, 0xc0000000, 0x80000000, 0x7fffffff
    TEST_RR 13, mulh, 0xffffffff, 0xffffffff, 1
    TEST_RR 20, mulhu, 0xfffffffe, 0xffffffff, 0xffffffff
    TEST_RR 21, mulhu, 0x00000000, 0xffffffff, 1
    TEST_RR 22, mulhu, 0x40000000, 0x80000000, 0x80000000
    TEST_RR 30, mulhsu, 0xffffffff, 0xffffffff, 0xffffffff # -1 * (2^32 - 1)
    TEST_RR 31, mulhsu, 0xc0000000, 0x80000000, 0x80000000
    TEST_RR 32, mulhsu, 0x7ffffffe, 0x7fffffff, 0xffffffff
    TEST_RR 33, mulhsu, 0x00000000, 1, 0xffffffff
    TEST_RR 40, div, 3, 20, 6
    TEST_RR 41, div, -3, -20, 6                               # rounds toward zero
    TEST_RR 42, div, -3, 20, -6
    TEST_RR 43, div, 3, -20, -6
    TEST_RR 44, div, -1, 7, 0                                 # by zero: all ones
    TEST_RR 45, div, 0x80000000, 0x80000000, -1               # overflow: MIN
    TEST_RR 46, divu, 3, 20, 6
    TEST_RR 47, divu, 0x2aaaaaa7, -20, 6
    TEST_RR 48, divu, 0xffffffff, 7, 0                        # by zero: all ones
    TEST_RR 49, divu, 0, 0x80000000, 0xffffffff
    TEST_RR 50, rem, 2, 20, 6
    TEST_RR 51, rem, -2, -20, 6                               # sign of the dividend
    TEST_RR 52, rem, 2, 20, -6
    TEST_RR 53, rem, 7, 7, 0                                  # by zero: the dividend
    TEST_RR 54, rem, 0, 0x80000000, -1                        # overflow: zero
    TEST_RR 55, remu, 2, 20, 6
    TEST_RR 56, remu, 2, -20, 6
    TEST_RR 57, remu, 0xfffffff9, -7, 0                       # by zero: the dividend
    TEST_RR 58, remu, 0x80000000, 0x80000000, 0xffffffff
    TEST_RR_SRC1_EQ_DEST 60, mul, 143, 11, 13
    TEST_RR_SRC1_EQ_DEST 61, div, 3, 20, 6
    j pass
