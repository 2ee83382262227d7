//! Standalone execution: one bare RV32IM ELF on one core, run to an answer.
//!
//! Follows the riscv-tests / HTIF convention: a non-zero store `v` to the
//! ELF symbol `tohost` ends the run; `v == 1` is a pass, any other `v` is the
//! failure of test number `v >> 1` (a zero store is HTIF's "no message" and
//! is ignored). Without `tohost`, `ecall` ends the run with exit code `a0`.
//!
//! The core has its L1 at address 0 (as in the chip) plus, for programs
//! linked the riscv-tests way, a DRAM window at [`DRAM_WINDOW_BASE`]. There is
//! no MMIO: the chip's registers need the chip (a standalone access to them
//! halts with an access fault). `sp` starts at the ABI's `STACK_TOP`.

use crate::disasm::Disasm;
use crate::elf::{ElfError, ElfImage, Window};
use crate::hart::{Halt, HaltReason, Hart, NoBus, Stop};
use crate::memory::{Memory, Ram};
use cqlab_abi::memory_map;
use std::io::Write;
use thiserror::Error;

/// Base of the standalone DRAM window: where riscv-tests-style programs are
/// linked. Simulator-specific (the chip reaches DRAM over the NOC only), so it
/// lives here rather than in `cqlab-abi`.
pub const DRAM_WINDOW_BASE: u32 = 0x8000_0000;
/// Default size of the standalone DRAM window (committed lazily).
pub const DEFAULT_DRAM_WINDOW_SIZE: u32 = 256 << 20;
/// ABI register numbers used by the convention.
const REG_SP: usize = 2;
const REG_A0: usize = 10;

/// How to run.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// End the run once the hart has used this many cycles.
    pub max_cycles: u64,
    /// L1 size of the core (at address 0).
    pub l1_size: u32,
    /// Size of the DRAM window at [`DRAM_WINDOW_BASE`] (0: none).
    pub dram_window_size: u32,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            max_cycles: u64::MAX,
            // The larger L1 of the chips (Blackhole's 1536 KiB).
            l1_size: cqlab_abi::arch::BLACKHOLE.l1_size,
            dram_window_size: DEFAULT_DRAM_WINDOW_SIZE,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `tohost` = 1.
    Pass,
    /// `tohost` = `value` != 1: test number `value >> 1` failed.
    Fail { test: u32, value: u32 },
    /// `ecall` without a `tohost` symbol: exit code `a0`.
    Exit { code: u32 },
    /// `max_cycles` reached; the report's `pc` is where the hart was.
    MaxCycles,
    /// The hart halted without giving an answer (illegal instruction, fault,
    /// `ebreak`, or `ecall` in a program that reports through `tohost`).
    Halted(Halt),
}

/// Result of a run with the hart's final state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecReport {
    pub outcome: Outcome,
    pub pc: u32,
    pub cycles: u64,
    pub instret: u64,
    pub regs: [u32; 32],
    /// The most recently retired PCs, newest first.
    pub last_pcs: Vec<u32>,
}

#[derive(Debug, Error)]
pub enum ExecError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error("writing the instruction trace: {0}")]
    Trace(#[from] std::io::Error),
}

/// RAM windows a standalone program may use under `opts`.
pub fn windows(opts: &ExecOptions) -> Vec<Window> {
    let mut w = vec![Window { name: "L1", base: 0, size: opts.l1_size }];
    if opts.dram_window_size > 0 {
        w.push(Window { name: "the DRAM window", base: DRAM_WINDOW_BASE, size: opts.dram_window_size });
    }
    w
}

/// Builds a hart with `image` loaded, ready at its entry point.
pub fn load(image: &ElfImage, opts: &ExecOptions) -> Result<Hart, ElfError> {
    image.check_fits(&windows(opts))?;
    let window = (opts.dram_window_size > 0).then(|| Ram::new(DRAM_WINDOW_BASE, opts.dram_window_size));
    let mut mem = Memory::new(Ram::new(0, opts.l1_size), window);
    image.load(&mut mem)?;
    mem.set_watch(image.symbol("tohost"));
    let mut hart = Hart::new(mem, 0, image.entry);
    hart.set_reg(REG_SP, memory_map::STACK_TOP);
    Ok(hart)
}

/// Parses, loads and runs an ELF. `trace` receives one line per retired
/// instruction (slow: single-steps); where it breaks (`BrokenPipe`: its
/// reader left) the run goes on untraced, at full speed, to the outcome it
/// would have had.
pub fn run_elf(bytes: &[u8], opts: &ExecOptions, trace: Option<&mut dyn Write>) -> Result<ExecReport, ExecError> {
    let image = ElfImage::parse(bytes)?;
    let has_tohost = image.symbol("tohost").is_some();
    let mut hart = load(&image, opts)?;
    let outcome = match trace {
        None => run_fast(&mut hart, opts.max_cycles, has_tohost),
        Some(out) => run_traced(&mut hart, opts.max_cycles, has_tohost, out)?,
    };
    Ok(ExecReport {
        outcome,
        pc: hart.pc(),
        cycles: hart.cycle(),
        instret: hart.instret(),
        regs: hart.regs(),
        last_pcs: hart.last_retired_pcs(16),
    })
}

/// Maps a run stop to an outcome; `None` = keep running.
fn judge(hart: &Hart, stop: Stop, has_tohost: bool) -> Option<Outcome> {
    match stop {
        Stop::CycleLimit => Some(Outcome::MaxCycles),
        Stop::Watch { value: 0, .. } | Stop::Yield => None,
        Stop::Watch { value: 1, .. } => Some(Outcome::Pass),
        Stop::Watch { value, .. } => Some(Outcome::Fail { test: value >> 1, value }),
        Stop::Halted(Halt { reason: HaltReason::Ecall, .. }) if !has_tohost => {
            Some(Outcome::Exit { code: hart.reg(REG_A0) })
        }
        Stop::Halted(h) => Some(Outcome::Halted(h)),
    }
}

fn run_fast(hart: &mut Hart, max_cycles: u64, has_tohost: bool) -> Outcome {
    loop {
        let stop = hart.run(&mut NoBus, max_cycles);
        if let Some(o) = judge(hart, stop, has_tohost) {
            return o;
        }
    }
}

fn run_traced(hart: &mut Hart, max_cycles: u64, has_tohost: bool, out: &mut dyn Write) -> std::io::Result<Outcome> {
    loop {
        if hart.cycle() >= max_cycles {
            return Ok(Outcome::MaxCycles);
        }
        let (pc, cycle) = (hart.pc(), hart.cycle());
        let peek = hart.peek();
        let stop = hart.step(&mut NoBus);
        if let Some((word, d)) = peek {
            if hart.halted().is_none() {
                let text = Disasm { pc, d }.to_string();
                let written = match d.arch_rd() {
                    0 => writeln!(out, "{cycle:>10} {pc:08x}: {word:08x}  {text:<28}"),
                    rd => writeln!(
                        out,
                        "{cycle:>10} {pc:08x}: {word:08x}  {text:<28} x{rd}=0x{:08x}",
                        hart.reg(rd as usize)
                    ),
                };
                if let Err(e) = written {
                    if e.kind() != std::io::ErrorKind::BrokenPipe {
                        return Err(e);
                    }
                    // Nobody reads on: the outcome without the trace's cost
                    // (an hour of formatting at the default cycle limit).
                    return Ok(step_outcome(hart, stop, max_cycles, has_tohost)
                        .unwrap_or_else(|| run_fast(hart, max_cycles, has_tohost)));
                }
            }
        }
        if let Some(o) = step_outcome(hart, stop, max_cycles, has_tohost) {
            return Ok(o);
        }
    }
}

/// The outcome after one traced step that stopped with `stop`, if the run ends there.
fn step_outcome(hart: &Hart, stop: Stop, max_cycles: u64, has_tohost: bool) -> Option<Outcome> {
    match stop {
        Stop::CycleLimit if hart.cycle() < max_cycles => None,
        Stop::CycleLimit => Some(Outcome::MaxCycles),
        s => judge(hart, s, has_tohost),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::*;
    use crate::testelf;
    use cqlab_abi::memory_map::ENTRY_POINT;

    fn opts(max_cycles: u64) -> ExecOptions {
        ExecOptions { max_cycles, ..Default::default() }
    }

    /// Program that stores `value` to `tohost` (placed right after its 5 words).
    fn report(value: u32) -> Vec<u8> {
        let code = ENTRY_POINT;
        let tohost = code + 5 * 4;
        let mut w = li(1, tohost).to_vec();
        w.extend(li(2, value));
        w.push(sw(2, 1, 0));
        testelf::program(code, &w, true)
    }

    #[test]
    fn tohost_one_passes_and_other_values_name_the_test() {
        assert_eq!(run_elf(&report(1), &opts(1000), None).unwrap().outcome, Outcome::Pass);
        assert_eq!(run_elf(&report(7), &opts(1000), None).unwrap().outcome, Outcome::Fail { test: 3, value: 7 });
    }

    #[test]
    fn ecall_without_tohost_exits_with_a0() {
        let elf = testelf::program(ENTRY_POINT, &[addi(10, 0, 42), ECALL], false);
        let r = run_elf(&elf, &opts(1000), None).unwrap();
        assert_eq!(r.outcome, Outcome::Exit { code: 42 });
        assert_eq!(r.pc, ENTRY_POINT + 4);
    }

    #[test]
    fn ecall_with_tohost_is_a_halt_not_an_answer() {
        let elf = testelf::program(ENTRY_POINT, &[addi(10, 0, 0), ECALL], true);
        let r = run_elf(&elf, &opts(1000), None).unwrap();
        assert!(matches!(r.outcome, Outcome::Halted(Halt { reason: HaltReason::Ecall, .. })));
    }

    #[test]
    fn runaway_programs_stop_at_max_cycles_with_their_pc() {
        let elf = testelf::program(ENTRY_POINT, &[addi(1, 1, 1), jal(0, -4)], false);
        let r = run_elf(&elf, &opts(10_000), None).unwrap();
        assert_eq!(r.outcome, Outcome::MaxCycles);
        assert!(r.pc == ENTRY_POINT || r.pc == ENTRY_POINT + 4);
        assert!(r.cycles >= 10_000 && r.cycles < 10_003);
    }

    #[test]
    fn programs_run_from_the_dram_window() {
        let elf = testelf::program(DRAM_WINDOW_BASE, &[addi(10, 0, 3), addi(10, 10, 4), ECALL], false);
        let r = run_elf(&elf, &opts(1000), None).unwrap();
        assert_eq!(r.outcome, Outcome::Exit { code: 7 });
        assert_eq!(r.cycles, 2);
    }

    #[test]
    fn images_that_do_not_fit_are_rejected() {
        let elf = testelf::program(0x4000_0000, &[ECALL], false);
        let err = run_elf(&elf, &opts(1000), None).unwrap_err();
        assert!(matches!(err, ExecError::Elf(ElfError::DoesNotFit { index: 0, start: 0x4000_0000, .. })), "{err}");
        assert!(err.to_string().contains("L1 0x00000000..0x00180000"), "{err}");
        let small = ExecOptions { l1_size: 0x1000, dram_window_size: 0, ..opts(1000) };
        let elf = testelf::program(ENTRY_POINT, &[ECALL], false);
        assert!(matches!(run_elf(&elf, &small, None), Err(ExecError::Elf(ElfError::DoesNotFit { .. }))));
    }

    #[test]
    fn trace_prints_each_retired_instruction() {
        let elf = testelf::program(ENTRY_POINT, &[addi(10, 0, 5), addi(0, 0, 1), ECALL], false);
        let mut out = Vec::new();
        let r = run_elf(&elf, &opts(1000), Some(&mut out)).unwrap();
        assert_eq!(r.outcome, Outcome::Exit { code: 5 });
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].contains(&format!("{ENTRY_POINT:08x}"))
                && lines[0].contains("addi x10, x0, 5")
                && lines[0].ends_with("x10=0x00000005"),
            "{text}"
        );
        assert!(lines[1].contains("addi x0, x0, 1"));
    }
}
