# Documented behaviour: a misaligned store halts the hart before writing.
test_main:
    la x10, buf
    sw x0, 0(x10)
    sh x0, 2(x10)
    sb x0, 1(x10)
    li gp, 1
    sh x0, 1(x10)                    # halts here
    li gp, 2
    j fail

    .bss
    .align 4
buf: .space 16
