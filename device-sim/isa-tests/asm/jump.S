# jal and jalr: link register values, targets, jalr clearing bit 0 of the
# target, rd == rs1, and links into x0 being discarded.
test_main:
    li gp, 1
    jal x1, 1f
0:  j fail
1:  la x7, 0b
    bne x1, x7, fail                 # link = address after the jal

    li gp, 2
    la x2, 2f
    jalr x5, 0(x2)
3:  j fail
2:  la x7, 3b
    bne x5, x7, fail

    li gp, 3                         # target bit 0 is cleared
    la x2, 4f
    addi x2, x2, 1
    jalr x6, 0(x2)
    j fail
4:
    li gp, 4                         # offset added before clearing bit 0
    la x2, 5f
    addi x2, x2, -3
    jalr x0, 4(x2)                   # (5f - 3 + 4) & ~1 = 5f
    j fail
5:
    li gp, 5                         # rd == rs1: the old value is the base
    la x8, 6f
    jalr x8, 0(x8)
7:  j fail
6:  la x7, 7b
    bne x8, x7, fail

    li gp, 6                         # backward jal, link into x0 discarded
    j 9f
8:  CHECK 7, x0, 0
    j 10f
9:  jal x0, 8b
    j fail
10:
    li gp, 8                         # call/ret through ra
    call callee
    j pass
callee:
    li x14, 1
    CHECK 9, x14, 1
    ret
