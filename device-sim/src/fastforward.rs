//! Idle fast-forward: a core spinning in a loop that nothing can change is
//! parked and its time accounted arithmetically, without changing results.
//!
//! Why it is exact: inside a scheduling slice nothing outside a core touches
//! its L1 or registers (NOC deliveries and host accesses happen between
//! slices). A *pure* loop — one that returns to the same PC with the same
//! registers without storing anything or reading a time counter — therefore
//! repeats identically, every `period_cycles`, until something from outside
//! reaches the core. Such a core is parked at a known state `S` at cycle
//! `since`; before anything could observe or change it (a delivery to it, the
//! end of `Chip::advance`), it is materialised: whole periods are added to
//! its counters and it then runs normally up to the current time, landing
//! exactly where step-by-step execution would have.
//!
//! Detection single-steps up to [`PROBE_STEPS`] instructions, at the start
//! of a core's slice and right after it issues a NOC command (the typical
//! moment a core starts waiting); the loop may begin after a few straight-line
//! instructions (the first backward jump marks its head). Failed probes back
//! off exponentially so compute-bound cores pay almost nothing; the first
//! probe after a wake-up is not counted as a failure (the core is expected
//! to leave its loop then). The
//! branch history behind "last retired PCs" is not replayed: after a skip
//! its older entries may differ from an unskipped run (memory, registers,
//! counters and timing do not).

use crate::hart::{Bus, Hart, Stop};

/// Longest loop (in instructions) detection looks for.
pub const PROBE_STEPS: u32 = 64;
/// Most slices to wait between probes after repeated failures.
const MAX_BACKOFF: u32 = 64;

/// A parked core: in state `S` at cycle `since`, repeating every period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleLoop {
    pub since: u64,
    pub period_cycles: u64,
    pub period_instrs: u64,
}

/// Per-core fast-forward bookkeeping.
#[derive(Clone, Debug, Default)]
pub struct FfState {
    pub idle: Option<IdleLoop>,
    wait: u32,
    backoff: u32,
    /// Unparked since the last probe: its next probe failing is expected.
    woken: bool,
    /// Cycles accounted without executing.
    pub skipped_cycles: u64,
}

impl FfState {
    /// True if a probe should run this slice (counts down the backoff).
    pub fn probe_due(&mut self) -> bool {
        if self.wait > 0 {
            self.wait -= 1;
            return false;
        }
        true
    }

    pub fn probe_failed(&mut self) {
        if std::mem::take(&mut self.woken) {
            return;
        }
        self.backoff = (self.backoff * 2).clamp(1, MAX_BACKOFF);
        self.wait = self.backoff;
    }

    pub fn parked(&mut self, l: IdleLoop) {
        self.idle = Some(l);
        self.backoff = 0;
        self.wait = 0;
        self.woken = false;
    }

    /// Unparks: adds the whole periods that fit before `t` to `hart`. The
    /// caller then runs the hart normally up to `t`.
    pub fn unpark(&mut self, hart: &mut Hart, t: u64) {
        if let Some(l) = self.idle.take() {
            debug_assert_eq!(hart.cycle(), l.since, "a parked hart sits at its parked state");
            let periods = t.saturating_sub(l.since) / l.period_cycles;
            hart.fast_forward(periods * l.period_cycles, periods * l.period_instrs);
            self.skipped_cycles += periods * l.period_cycles;
            self.woken = true;
        }
    }
}

/// Single-steps `hart` (never starting an instruction at or after `limit`)
/// looking for a pure loop: a return to an earlier state (PC and registers)
/// without any side effect since the probe began. The reference state is
/// the starting one, then the target of each backward jump (a loop head).
/// On success the hart is in the loop's state again and the loop is
/// returned; the straight-line instructions before the head were executed
/// for real (they had no side effect either).
pub fn probe<B: Bus>(hart: &mut Hart, bus: &mut B, limit: u64) -> Option<IdleLoop> {
    let effects0 = hart.effects();
    let (mut pc0, mut regs0) = (hart.pc(), hart.regs());
    let (mut cycle0, mut instret0) = (hart.cycle(), hart.instret());
    for _ in 0..PROBE_STEPS {
        let before = hart.pc();
        if hart.cycle() >= limit || hart.step(bus) != Stop::CycleLimit || hart.effects() != effects0 {
            return None;
        }
        if hart.pc() == pc0 && hart.regs() == regs0 {
            return Some(IdleLoop {
                since: hart.cycle(),
                period_cycles: hart.cycle() - cycle0,
                period_instrs: hart.instret() - instret0,
            });
        }
        if hart.pc() <= before {
            (pc0, regs0, cycle0, instret0) = (hart.pc(), hart.regs(), hart.cycle(), hart.instret());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::*;
    use crate::hart::NoBus;
    use crate::memory::{Memory, Ram};

    fn hart(words: &[u32]) -> Hart {
        let mut mem = Memory::new(Ram::new(0, 0x4000), None);
        mem.write(0x1000, &to_bytes(words)).unwrap();
        Hart::new(mem, 0, 0x1000)
    }

    #[test]
    fn finds_a_polling_loop_and_skips_it_exactly() {
        // 0x1000: lw x7, 0x100(x0) ; 0x1004: beq x7, x0, -4
        let prog = [lw(7, 0, 0x100), beq(7, 0, -4)];
        let mut a = hart(&prog);
        let l = probe(&mut a, &mut NoBus, 1000).expect("a pure loop");
        assert_eq!((l.period_cycles, l.period_instrs), (8 + 3, 2));
        let mut ff = FfState::default();
        ff.parked(l);
        ff.unpark(&mut a, 10_000);
        a.run(&mut NoBus, 10_000);
        let mut b = hart(&prog);
        b.run(&mut NoBus, 10_000);
        assert_eq!((a.pc(), a.cycle(), a.instret(), a.regs()), (b.pc(), b.cycle(), b.instret(), b.regs()));
        assert!(ff.skipped_cycles > 9000);
    }

    #[test]
    fn a_loop_entered_after_straight_line_code_is_found_at_its_head() {
        // 0x1000: addi x8, x8, 1 ; 0x1004: lw x7, 0x100(x0) ; 0x1008: bltu x7, x8, -4
        let prog = [addi(8, 8, 1), lw(7, 0, 0x100), bltu(7, 8, -4)];
        let mut a = hart(&prog);
        let l = probe(&mut a, &mut NoBus, 1000).expect("the lw/bltu loop");
        assert_eq!((a.pc(), l.period_instrs), (0x1004, 2));
        let mut ff = FfState::default();
        ff.parked(l);
        ff.unpark(&mut a, 5000);
        a.run(&mut NoBus, 5000);
        let mut b = hart(&prog);
        b.run(&mut NoBus, 5000);
        assert_eq!((a.pc(), a.cycle(), a.instret(), a.regs()), (b.pc(), b.cycle(), b.instret(), b.regs()));
        // The first failed probe after a wake-up does not back off.
        assert!(ff.probe_due());
        ff.probe_failed();
        assert!(ff.probe_due());
        ff.probe_failed();
        assert!(!ff.probe_due());
    }

    #[test]
    fn loops_that_store_count_or_change_registers_are_not_idle() {
        assert!(probe(&mut hart(&[sw(0, 0, 0x100), jal(0, -4)]), &mut NoBus, 1000).is_none());
        assert!(probe(&mut hart(&[addi(1, 1, 1), jal(0, -4)]), &mut NoBus, 1000).is_none());
        // Reads mcycle and clobbers it before the back edge: time-dependent.
        let timed = [csrrs(5, 0xb00, 0), addi(5, 0, 0), jal(0, -8)];
        assert!(probe(&mut hart(&timed), &mut NoBus, 1000).is_none());
    }

    #[test]
    fn failed_probes_back_off() {
        let mut ff = FfState::default();
        assert!(ff.probe_due());
        ff.probe_failed();
        assert!(!ff.probe_due());
        assert!(ff.probe_due());
        ff.probe_failed();
        ff.probe_failed();
        let waited = (0..100).take_while(|_| !ff.probe_due()).count();
        assert_eq!(waited, 4);
    }
}
