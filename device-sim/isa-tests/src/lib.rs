//! RV32IM instruction tests for the cqlab simulator.
//!
//! Each binary in `src/bin` is one bare RISC-V program written in assembly
//! (`asm/*.S`, shared macros in `asm/common.S`), built only with the `riscv`
//! feature for `riscv32im-unknown-none-elf`. A test reports the riscv-tests
//! way: it stores 1 to `tohost` on success or `(n << 1) | 1` when check `n`
//! fails; `cqlab sim exec` turns that into exit 0 / exit 5.
//!
//! Some programs check behaviour that ends a run differently (a documented
//! halt, `ecall` without `tohost`, a runaway loop); [`TESTS`] says what each
//! one must produce so the harness (tools/cqlab/tests/isa.rs) can assert it.
#![no_std]

mod expect;
pub use expect::{Expect, TESTS};
