# Documented behaviour: a misaligned load halts the hart ("misaligned load"),
# it is not emulated. Aligned and byte accesses before it must work; if the
# simulator carried on, the test would report failure 2.
test_main:
    la x10, buf
    lw x14, 0(x10)
    lh x14, 2(x10)
    lb x14, 3(x10)
    li gp, 1
    lw x14, 2(x10)                   # halts here
    li gp, 2
    j fail

    .bss
    .align 4
buf: .space 16
