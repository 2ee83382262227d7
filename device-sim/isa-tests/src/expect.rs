//! Expected outcome of every ISA test binary. Plain `core`-only Rust with no
//! dependencies, so the harness in tools/cqlab/tests/isa.rs can include this
//! file directly (`#[path]`) and both sides share one list.

/// What `cqlab sim exec` must report for a test binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Exit 0: every check passed.
    Pass,
    /// Exit 5 (a mismatch: a self-test's result differs), naming this failing test number.
    Fail(u32),
    /// Exit 4 (the core crashed: halted) with this text in the message.
    Halt(&'static str),
    /// Exit with this code (`ecall` without `tohost`).
    Exit(u8),
    /// Exit 3 (a hang: no answer) under `--max-cycles`.
    Runaway,
}

/// Every test binary and its expected outcome.
pub const TESTS: &[(&str, Expect)] = &[
    ("isa-alu", Expect::Pass),
    ("isa-shift", Expect::Pass),
    ("isa-upper", Expect::Pass),
    ("isa-muldiv", Expect::Pass),
    ("isa-branch", Expect::Pass),
    ("isa-jump", Expect::Pass),
    ("isa-mem", Expect::Pass),
    ("isa-csr", Expect::Pass),
    ("isa-smc", Expect::Pass),
    ("isa-misaligned-load", Expect::Halt("misaligned load from 0x")),
    ("isa-misaligned-store", Expect::Halt("misaligned store to 0x")),
    ("isa-misaligned-jump", Expect::Halt("jump to misaligned address 0x")),
    ("isa-illegal-csr", Expect::Halt("illegal instruction 0xb0001073")),
    ("isa-ecall-exit", Expect::Exit(42)),
    ("isa-selftest-fail", Expect::Fail(5)),
    ("isa-selftest-runaway", Expect::Runaway),
];
