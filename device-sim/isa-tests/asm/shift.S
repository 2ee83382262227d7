# Shifts: immediate and register forms, arithmetic sign fill, and register
# shift amounts masked to their low 5 bits (shifting by >= 32).
test_main:
    TEST_RR 1, sll, 0x00000002, 1, 1
    TEST_RR 2, sll, 0x80000000, 1, 31
    TEST_RR 3, sll, 0x00000002, 1, 33                     # 33 & 31 = 1
    TEST_RR 4, sll, 0x00000001, 1, 32                     # 32 & 31 = 0
    TEST_RR 5, sll, 0x00000004, 1, 0xffffffe2             # low 5 bits = 2
    TEST_RR 6, srl, 0x40000000, 0x80000000, 1
    TEST_RR 7, srl, 0x00000001, 0x80000000, 31
    TEST_RR 8, srl, 0x40000000, 0x80000000, 33
    TEST_RR 9, srl, 0x80000000, 0x80000000, 64
    TEST_RR 10, sra, 0xc0000000, 0x80000000, 1
    TEST_RR 11, sra, 0xffffffff, 0x80000000, 31
    TEST_RR 12, sra, 0xc0000000, 0x80000000, 0x21
    TEST_RR 13, sra, 0x3fffffff, 0x7fffffff, 1
    TEST_RR 14, sra, 0x80000000, 0x80000000, 0xffffffe0
    TEST_RI 20, slli, 0x00000080, 1, 7
    TEST_RI 21, slli, 0x80000000, 1, 31
    TEST_RI 22, slli, 0x00000000, 0x80000000, 1
    TEST_RI 23, srli, 0x01000000, 0x80000000, 7
    TEST_RI 24, srli, 0x00000001, 0xffffffff, 31
    TEST_RI 25, srai, 0xff000000, 0x80000000, 7
    TEST_RI 26, srai, 0xffffffff, 0xffffffff, 31
    TEST_RI 27, srai, 0x00ffffff, 0x7fffffff, 7
    TEST_RI 28, srli, 0x12345678, 0x12345678, 0
    j pass
