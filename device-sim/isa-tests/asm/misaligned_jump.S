# Documented behaviour (no C extension): a jump to an address that is not
# 4-byte aligned halts on the jump.
test_main:
    la x10, target
    addi x10, x10, 2
    li gp, 1
    jalr x0, 0(x10)                  # halts here
    li gp, 2
    j fail
target:
    nop
    li gp, 3
    j fail
