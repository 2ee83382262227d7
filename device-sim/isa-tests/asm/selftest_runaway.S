# Harness self-test: never reports, so --max-cycles must stop it (exit 3, a hang).
test_main:
    li x1, 0
1:  addi x1, x1, 1
    j 1b
