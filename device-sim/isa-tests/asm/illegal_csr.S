# Documented behaviour: every implemented CSR is read-only; writing mcycle is
# an illegal instruction, which halts the hart with its PC and word.
test_main:
    csrr x1, mcycle                  # reading is fine
    li gp, 1
    csrw mcycle, x0                  # halts here (word 0xb0001073)
    li gp, 2
    j fail
