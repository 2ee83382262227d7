# Self-modifying code: a store over an instruction that already ran (and sits
# in the simulator's predecoded cache) must take effect the next time.
test_main:
    li x5, 2
    li x14, 0
loop:
patch_site:
    addi x14, x14, 1                 # first pass: +1; patched to +100
    addi x5, x5, -1
    beqz x5, done
    la x1, patch_site
    la x2, replacement
    lw x3, 0(x2)
    sw x3, 0(x1)
    fence.i
    j loop
done:
    CHECK 1, x14, 101
    j pass
replacement:
    addi x14, x14, 100
