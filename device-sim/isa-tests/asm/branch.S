# Every conditional branch, taken and not taken, signed versus unsigned
# comparisons, and a backward branch loop.
test_main:
    TEST_BR 1, beq, 1, 5, 5
    TEST_BR 2, beq, 0, 5, 6
    TEST_BR 3, beq, 1, 0xffffffff, 0xffffffff
    TEST_BR 10, bne, 1, 5, 6
    TEST_BR 11, bne, 0, 5, 5
    TEST_BR 20, blt, 1, 0xffffffff, 0              # -1 < 0
    TEST_BR 21, blt, 0, 0, 0xffffffff
    TEST_BR 22, blt, 0, 7, 7
    TEST_BR 23, blt, 1, 0x80000000, 0x7fffffff
    TEST_BR 30, bge, 1, 0, 0xffffffff
    TEST_BR 31, bge, 0, 0xffffffff, 0
    TEST_BR 32, bge, 1, 7, 7
    TEST_BR 40, bltu, 1, 0, 0xffffffff
    TEST_BR 41, bltu, 0, 0xffffffff, 0
    TEST_BR 42, bltu, 0, 7, 7
    TEST_BR 43, bltu, 0, 0x80000000, 0x7fffffff
    TEST_BR 50, bgeu, 1, 0xffffffff, 0
    TEST_BR 51, bgeu, 0, 0, 0xffffffff
    TEST_BR 52, bgeu, 1, 7, 7
    # Backward branch: count 10 iterations.
    li x14, 0
    li x1, 10
5:  addi x14, x14, 1
    addi x1, x1, -1
    bnez x1, 5b
    CHECK 60, x14, 10
    j pass
