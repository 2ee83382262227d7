//! Runs every RV32IM instruction-test ELF (device-sim/isa-tests) through the
//! real `cqlab sim exec` and checks the outcome each one must produce: pass,
//! a documented halt, an ecall exit code, and — for the harness self-tests —
//! a reported failure (exit 5, a mismatch, naming the test) and a runaway
//! stopped by `--max-cycles` (exit 3, a hang); a halt is exit 4 (a device
//! error). The codes are the CLI's one table (docs/cli.md).

mod support;

use std::path::PathBuf;
use std::process::{Command, Output};
use support::{firmware_dir, CQLAB};

// The list of test binaries and their expected outcomes, shared with the
// isa-tests crate (a plain file, so no dependency is needed).
#[path = "../../../device-sim/isa-tests/src/expect.rs"]
mod expect;
use expect::{Expect, TESTS};

const FIRMWARE_TARGET: &str = "riscv32im-unknown-none-elf";
/// Generous for every test (the largest needs a few hundred cycles), small
/// enough that a simulator bug that loops fails fast.
const MAX_CYCLES: &str = "1000000";

fn elf(name: &str) -> PathBuf {
    let path = firmware_dir().join(name);
    assert!(
        path.is_file(),
        "ISA test ELF {} not found: run `cargo xtask firmware` (or directly: cargo build -p cqlab-isa-tests \
         --features riscv --target {FIRMWARE_TARGET} --profile firmware)",
        path.display()
    );
    path
}

fn sim_exec(args: &[&str], elf: &PathBuf) -> Output {
    Command::new(CQLAB).args(["sim", "exec"]).args(args).arg(elf).output().expect("running cqlab")
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn check(name: &str, expect: Expect) {
    let path = elf(name);
    let out = sim_exec(&["--max-cycles", MAX_CYCLES], &path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    let ok = match expect {
        Expect::Pass => code == Some(0) && stderr.contains("PASS"),
        Expect::Fail(n) => code == Some(5) && stderr.contains(&format!("test {n} failed")),
        Expect::Halt(text) => code == Some(4) && stderr.contains(text),
        Expect::Exit(c) => code == Some(c as i32),
        Expect::Runaway => code == Some(3) && stderr.contains(&format!("--max-cycles {MAX_CYCLES} at pc 0x")),
    };
    assert!(ok, "{name}: expected {expect:?}, got {}", describe(&out));
}

#[test]
fn every_isa_test_elf_gives_its_expected_outcome() {
    for &(name, expect) in TESTS {
        check(name, expect);
    }
}

#[test]
fn a_failing_elf_reports_its_test_number() {
    let out = sim_exec(&[], &elf("isa-selftest-fail"));
    assert_eq!(out.status.code(), Some(5), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("test 5 failed"), "{}", describe(&out));
}

#[test]
fn a_runaway_elf_stops_at_max_cycles_with_exit_3() {
    let out = sim_exec(&["--max-cycles", "5000"], &elf("isa-selftest-runaway"));
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--max-cycles 5000 at pc 0x0000"), "{}", describe(&out));
}

#[test]
fn trace_lists_retired_instructions() {
    let out = sim_exec(&["--trace"], &elf("isa-ecall-exit"));
    assert_eq!(out.status.code(), Some(42), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", describe(&out));
    assert!(lines[0].contains("addi x10, x0, 40") && lines[0].ends_with("x10=0x00000028"), "{stdout}");
    assert!(lines[1].contains("addi x10, x10, 2") && lines[1].ends_with("x10=0x0000002a"), "{stdout}");
}

#[test]
fn a_file_that_is_not_an_rv32_elf_is_a_clear_error() {
    // The host binary itself: a 64-bit x86/arm ELF.
    let host = PathBuf::from(env!("CARGO_BIN_EXE_cqlab"));
    let out = sim_exec(&[], &host);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a 32-bit ELF"), "{}", describe(&out));
    let out = sim_exec(&[], &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an ELF file"), "{}", describe(&out));
}
