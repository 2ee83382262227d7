# Harness self-test: fails check 5 on purpose, so the harness can prove it
# reports failures (exit 5, "test 5").
test_main:
    TEST_RR 1, add, 3, 1, 2
    TEST_RR 5, add, 4, 1, 2          # wrong on purpose
    j pass
