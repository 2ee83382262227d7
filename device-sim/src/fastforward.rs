//! Idle fast-forward: a core spinning in a loop that nothing can change is
//! parked and its time accounted arithmetically, without changing results.
//!
//! Why it is exact: inside a scheduling slice nothing outside a core touches
//! its L1 or registers (NOC deliveries and host accesses happen between
//! slices). A *pure* loop — one that returns to the same PC with the same
//! registers without storing anything or reading a time counter — therefore
//! repeats identically, every `period_cycles`, until something from outside
//! reaches the core. Such a core is parked at a known state `S` at cycle
//! `since`; before anything could observe or change it (a delivery to what
//! it reads, a register write to its tile, a reader of its state:
//! `Chip::settle`), it is materialised: whole periods are added to its
//! counters and it then runs normally up to the current time, landing
//! exactly where step-by-step execution would have. Parked cores stay
//! parked across the host's steps: a host access that touches nothing they
//! read costs them nothing.
//!
//! Detection runs up to [`PROBE_STEPS`] instructions, at the start of a
//! core's slice and right after it issues a NOC command (the typical moment
//! a core starts waiting), at full speed between the points where a loop
//! can close: after a backward jump and back at the first PC. The loop may
//! begin after a few straight-line instructions, and may hold inner loops
//! (a wait over several queues): there the probe compares the state with
//! its start and its last [`HEADS`] loop heads (targets of backward jumps).
//! A loop whose period is longer than what is left of the slice is found by going on
//! past the slice's end with pure instructions only (no store, no counter,
//! nothing read outside the core's own memories); it is parked at its
//! head's earlier visit, before the end, or the hart is put back where the
//! run's end left it. Failed probes back off exponentially so compute-bound
//! cores pay almost nothing. A parked core is woken only by a change to
//! what its loop reads (its loads and its code), or, with instruction
//! caches, by a write over lines its cache holds; other deliveries land
//! while it stays parked. After a wake by a change its loop reads the
//! start-of-slice probe is skipped (the core is about to leave its loop);
//! the probe after its next NOC command finds where it waits next. With
//! instruction caches a loop is parked only after a turn in which its
//! cache did not change (every fetch hit), so its period holds no miss.
//! The branch history behind "last
//! retired PCs" is not replayed: after a skip its older entries may differ
//! from an unskipped run (memory, registers, counters and timing do not).

use crate::decode::Op;
use crate::hart::{Bus, Hart, Observer, Stop};
use crate::l0cache::L0State;

/// Longest loop (in instructions) detection looks for.
pub const PROBE_STEPS: u32 = 64;
/// Most slices to wait between probes after repeated failures.
const MAX_BACKOFF: u32 = 64;
/// The most while a core has failed at most [`EAGER_FAILURES`] probes since
/// it last parked: a core that waits now and then is found waiting sooner,
/// one that computes for long pays the full backoff (measured in
/// docs/performance.md).
const EAGER_BACKOFF: u32 = 8;
const EAGER_FAILURES: u32 = 10;

/// Most distinct byte ranges a parked loop's body may read (its code
/// counts as one) before any change to the core wakes it.
pub const MAX_LOOP_READS: usize = 8;

/// A parked core: in state `S` at cycle `since`, repeating every period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleLoop {
    pub since: u64,
    pub period_cycles: u64,
    pub period_instrs: u64,
    /// What the loop's body reads, as `(address, length)` in the core's
    /// address space (L1 or MMIO): its loads and its own code. A change
    /// anywhere else cannot alter a pure loop, so it need not wake the core.
    reads: [(u32, u32); MAX_LOOP_READS],
    /// Entries used in `reads`; `u8::MAX` if the loop read more than fit
    /// (then every change wakes it).
    n_reads: u8,
}

impl IdleLoop {
    /// True if changing bytes `[addr, addr + len)` of this core could change
    /// what the loop does.
    pub fn reads_any(&self, addr: u64, len: u64) -> bool {
        if self.n_reads == u8::MAX {
            return true;
        }
        self.reads[..self.n_reads as usize].iter().any(|&(a, n)| addr < a as u64 + n as u64 && (a as u64) < addr + len)
    }

    /// The bounding range `[lo, hi)` of everything the loop reads (all of
    /// the address space when it read more than it could list).
    pub fn bounds(&self) -> (u64, u64) {
        if self.n_reads == u8::MAX {
            return (0, u64::MAX);
        }
        self.reads[..self.n_reads as usize]
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), &(a, n)| (lo.min(a as u64), hi.max(a as u64 + n as u64)))
    }

    /// The bounding range `[lo, hi)` of what the loop reads below `end`
    /// (its L1), or all of `[0, end)` when it read more than it could list.
    pub fn bounds_below(&self, end: u32) -> Option<(u32, u32)> {
        if self.n_reads == u8::MAX {
            return Some((0, end));
        }
        self.reads[..self.n_reads as usize].iter().filter(|&&(a, _)| a < end).fold(None, |acc, &(a, n)| {
            let hi = (a as u64 + n as u64).min(end as u64) as u32;
            Some(acc.map_or((a, hi), |(lo, h): (u32, u32)| (lo.min(a), h.max(hi))))
        })
    }
}

/// The byte ranges a loop body reads, collected while probing.
#[derive(Default)]
struct Reads {
    list: [(u32, u32); MAX_LOOP_READS],
    n: usize,
    overflow: bool,
    code: Option<(u32, u32)>,
}

impl Reads {
    fn add(&mut self, addr: u32, len: u32) {
        if self.list[..self.n].contains(&(addr, len)) {
            return;
        }
        // One slot stays free for the code range.
        if self.n + 1 >= MAX_LOOP_READS {
            self.overflow = true;
        } else {
            self.list[self.n] = (addr, len);
            self.n += 1;
        }
    }

    fn fetched(&mut self, pc: u32) {
        self.code = Some(match self.code {
            Some((lo, hi)) => (lo.min(pc), hi.max(pc + 4)),
            None => (pc, pc + 4),
        });
    }

    fn finish(mut self) -> ([(u32, u32); MAX_LOOP_READS], u8) {
        if let Some((lo, hi)) = self.code {
            self.list[self.n] = (lo, hi - lo);
            self.n += 1;
        }
        (self.list, if self.overflow { u8::MAX } else { self.n as u8 })
    }
}

/// Per-core fast-forward bookkeeping.
#[derive(Clone, Debug, Default)]
pub struct FfState {
    pub idle: Option<IdleLoop>,
    wait: u32,
    backoff: u32,
    /// Probes failed since the core last parked.
    failures: u32,
    /// Woken by a change its loop reads: it is about to leave the loop, so
    /// the next slice-start probe is skipped (it would fail).
    changed: bool,
    /// Cycles accounted without executing.
    pub skipped_cycles: u64,
    /// The period of the loop it last parked in (0: none yet).
    last_period: u64,
    /// The parked loop's spans, kept from when it parked: a tile's parked
    /// ranges are refreshed at every park and wake of its cores.
    spans: ParkedSpans,
}

/// What a parked loop reads, as bounding ranges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParkedSpans {
    /// [`IdleLoop::bounds`].
    pub all: (u64, u64),
    /// [`IdleLoop::bounds_below`] the core's L1 end: `(start, end)`, `None`
    /// if it reads nothing in L1.
    pub l1: Option<(u32, u32)>,
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

    /// Like `probe_due`, for the probe at the start of a run: skipped once
    /// after [`FfState::changed`].
    pub fn start_probe_due(&mut self) -> bool {
        !std::mem::take(&mut self.changed) && self.probe_due()
    }

    /// The core was woken because something its loop reads changed.
    pub fn changed(&mut self) {
        self.changed = true;
    }

    pub fn probe_failed(&mut self) {
        self.failures = self.failures.saturating_add(1);
        let most = if self.failures > EAGER_FAILURES { MAX_BACKOFF } else { EAGER_BACKOFF };
        self.backoff = (self.backoff * 2).clamp(1, most);
        self.wait = self.backoff;
    }

    /// Like `probe_due`, for a probe in the middle of a run, at cycle `now`
    /// of a run ending at `end`: not when the loop the core last parked in
    /// would not come round before the end (the probe would find it past
    /// the end, be cut, and the next run's first probe would do the same
    /// work again).
    pub fn mid_run_probe_due(&mut self, now: u64, end: u64) -> bool {
        end.saturating_sub(now) >= self.last_period && self.probe_due()
    }

    /// Parks the core in loop `l`; `l1_end`: the end of its L1 (for the
    /// loop's bounds in L1, [`FfState::parked_spans`]).
    pub fn parked(&mut self, l: IdleLoop, l1_end: u32) {
        self.spans = ParkedSpans { all: l.bounds(), l1: l.bounds_below(l1_end) };
        self.last_period = l.period_cycles;
        self.idle = Some(l);
        self.failures = 0;
        self.backoff = 0;
        self.wait = 0;
        self.changed = false;
    }

    /// The parked loop's spans; `None` when not parked.
    pub fn parked_spans(&self) -> Option<ParkedSpans> {
        self.idle.as_ref().map(|_| self.spans)
    }

    /// Unparks: adds the whole periods that fit before `t` to `hart`. The
    /// caller then runs the hart normally up to `t`.
    pub fn unpark(&mut self, hart: &mut Hart, t: u64) {
        if let Some(l) = self.idle.take() {
            debug_assert_eq!(hart.cycle(), l.since, "a parked hart sits at its parked state");
            let periods = t.saturating_sub(l.since) / l.period_cycles;
            hart.fast_forward(periods * l.period_cycles, periods * l.period_instrs);
            self.skipped_cycles += periods * l.period_cycles;
        }
    }
}

/// What a probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    Idle(IdleLoop),
    /// The core issued a NOC command (or otherwise asked the scheduler to
    /// act) during the probe: not idle yet, but it may be right after.
    Yielded,
    /// The core stored to a watched word (one a parked sibling polls):
    /// its address and the word before the store.
    Watched {
        addr: u32,
        old: u32,
    },
    /// The run's end came before a loop could be parked: past it the next
    /// instruction is not pure, or the loop closed on a head past it. The
    /// hart is back where a run to the end leaves it. Not a failure (the
    /// next run's probe starts before the loop and may park it).
    Cut,
    NotIdle,
}

impl Probe {
    pub fn idle(self) -> Option<IdleLoop> {
        match self {
            Probe::Idle(l) => Some(l),
            _ => None,
        }
    }
}

/// Loop heads kept besides the start: enough for a loop nested in another
/// (the outer head, the inner head) with room to spare.
pub const HEADS: usize = 4;

/// A state the probe may come back to (the start, or a loop head: the
/// target of a backward jump), and the step it was reached at.
#[derive(Clone, Copy)]
struct Head {
    pc: u32,
    regs: [u32; 32],
    cycle: u64,
    instret: u64,
    step: usize,
    /// No load was waiting for its data: the state is the PC and registers.
    settled: bool,
    /// `ICache::changes` then: where it has not moved since, every fetch
    /// hit and the cache is as it was, so the loop's next turn costs the
    /// same (a loop that misses every turn is never parked).
    icache: u64,
    /// The L0 data cache's lines and copies then: a turn that filled a
    /// line it did not hold is no repeat (its next turn would hit).
    l0: L0State,
}

impl Head {
    fn of(hart: &Hart, step: usize) -> Head {
        let (pc, regs, cycle, instret) = (hart.pc(), hart.regs(), hart.cycle(), hart.instret());
        Head {
            pc,
            regs,
            cycle,
            instret,
            step,
            settled: hart.loads_settled(),
            icache: hart.icache().changes(),
            l0: hart.l0_cache().state(),
        }
    }
}

/// One probed step: the PC it fetched and the bytes it loaded (length 0
/// for none).
#[derive(Clone, Copy, Default)]
struct Step {
    pc: u32,
    load: (u32, u32),
}

/// Runs `hart` looking for a pure loop: a return to an earlier state (PC
/// and registers) without any side effect since the probe began. The
/// states it may return to are the start and the last [`HEADS`] loop heads
/// (targets of backward jumps, one per PC), so a poll nested in another
/// loop is found at its outer period. The hart runs at full speed between
/// the points where the states are compared: after a backward jump, and
/// back at the first PC.
///
/// No instruction is started at or after `limit` unless it is pure (see
/// [`Recorder`]): past the limit the probe only looks for the period.
/// A loop that closes there is parked at its head's earlier visit, before
/// the limit (the same state, the counters set back); otherwise the hart
/// is restored to where it stood at the limit.
///
/// On success the hart is in the loop's state; the straight-line
/// instructions before the head were executed for real (they had no side
/// effect either).
pub fn probe<B: Bus>(hart: &mut Hart, bus: &mut B, limit: u64) -> Probe {
    probe_with(hart, bus, limit, &mut ProbeScratch::default())
}

/// A probe's working memory, kept between probes so that starting one does
/// not fill ~1.6 KiB (measured in docs/performance.md). Only what a probe
/// has written is ever read back.
pub struct ProbeScratch {
    /// `heads[0]` is the start; the others are loop heads, replaced in turn.
    heads: [Head; HEADS + 1],
    steps: [Step; PROBE_STEPS as usize],
}

impl Default for ProbeScratch {
    fn default() -> Self {
        let head = Head {
            pc: 0,
            regs: [0; 32],
            cycle: 0,
            instret: 0,
            step: 0,
            settled: false,
            icache: 0,
            l0: L0State::default(),
        };
        ProbeScratch { heads: [head; HEADS + 1], steps: [Step::default(); PROBE_STEPS as usize] }
    }
}

/// [`probe`] in `scratch`.
pub fn probe_with<B: Bus>(hart: &mut Hart, bus: &mut B, limit: u64, scratch: &mut ProbeScratch) -> Probe {
    if hart.cycle() >= limit {
        return Probe::NotIdle;
    }
    let effects0 = hart.effects();
    let ProbeScratch { heads, steps } = scratch;
    heads[0] = Head::of(hart, 0);
    let (mut n_heads, mut next_slot) = (1, 1);
    // Steps taken.
    let mut k = 0;
    let mut at_limit = None;
    while k < PROBE_STEPS as usize {
        if at_limit.is_none() && hart.cycle() >= limit {
            at_limit = Some(hart.checkpoint());
        }
        // Before the limit the hart runs at full speed, recording its
        // steps, up to a backward jump: loop heads are only found there (or
        // at the start), so nothing between needs looking at. Past it, the
        // same, but only through pure instructions (see [`Recorder`]).
        let pure_only = at_limit.is_some();
        let mut rec = Recorder {
            steps,
            k,
            from: k,
            start: heads[0].pc,
            back: false,
            effects: effects0,
            pure_only,
            impure: false,
        };
        let stop = hart.run_observed(bus, if pure_only { u64::MAX } else { limit }, &mut rec);
        let (back, impure) = (rec.back, rec.impure);
        k = rec.k;
        match stop {
            Stop::CycleLimit => {}
            Stop::Yield => return Probe::Yielded,
            Stop::Watch { addr, old, .. } => return Probe::Watched { addr, old },
            Stop::Halted(_) => {
                if let Some(c) = &at_limit {
                    hart.restore(c);
                }
                return Probe::NotIdle;
            }
        }
        if impure {
            hart.restore(at_limit.as_ref().expect("pure only past the limit"));
            return Probe::Cut;
        }
        if hart.effects() != effects0 {
            // Past the limit only pure instructions run, but an L0 hit is
            // an effect too: the hart goes back to the run's end.
            if let Some(c) = &at_limit {
                hart.restore(c);
            }
            return Probe::NotIdle;
        }
        let pc = hart.pc();
        let same_pc = |h: &Head| h.pc == pc;
        if heads[..n_heads].iter().any(same_pc) {
            let regs = hart.regs();
            let (settled, icache, l0) = (hart.loads_settled(), hart.icache().changes(), hart.l0_cache().state());
            let same =
                |h: &&Head| h.pc == pc && h.regs == regs && h.settled && settled && h.icache == icache && h.l0 == l0;
            if let Some(h) = heads[..n_heads].iter().find(same) {
                if h.cycle >= limit {
                    // A loop, but its head lies past the run's end: the
                    // next run's probe starts before it and parks there.
                    hart.restore(at_limit.as_ref().expect("past the limit"));
                    return Probe::Cut;
                }
                let mut reads = Reads::default();
                for s in &steps[h.step..k] {
                    reads.fetched(s.pc);
                    if s.load.1 > 0 {
                        reads.add(s.load.0, s.load.1);
                    }
                }
                let (reads, n_reads) = reads.finish();
                let (period_cycles, period_instrs) = (hart.cycle() - h.cycle, hart.instret() - h.instret);
                if at_limit.is_some() {
                    // Parked at the head's earlier visit, before the limit:
                    // the same state, so the same future.
                    hart.rewind(h.cycle, h.instret);
                }
                return Probe::Idle(IdleLoop { since: hart.cycle(), period_cycles, period_instrs, reads, n_reads });
            }
        }
        // A backward jump marks a loop head.
        if back {
            let slot = match heads[1..n_heads].iter().position(same_pc) {
                Some(i) => i + 1,
                None if n_heads <= HEADS => {
                    n_heads += 1;
                    n_heads - 1
                }
                None => {
                    let s = next_slot;
                    next_slot = next_slot % HEADS + 1;
                    s
                }
            };
            heads[slot] = Head::of(hart, k);
        }
    }
    if let Some(c) = &at_limit {
        hart.restore(c);
    }
    Probe::NotIdle
}

/// Records a probe's steps while the hart runs at full speed
/// ([`Hart::run_observed`]), stopping it after each backward jump, before
/// the probe's first PC, after its first effect (no pure loop then) and at
/// [`PROBE_STEPS`]; with `pure_only` (past the run's end), before any
/// instruction that is not pure: one that could change memory, read
/// anything outside the core's own L1 and local memory or read a counter.
/// Running the pure ones changes nothing a restore does not put back.
struct Recorder<'a> {
    steps: &'a mut [Step; PROBE_STEPS as usize],
    /// Steps recorded.
    k: usize,
    /// Steps recorded when this run began.
    from: usize,
    /// The probe's first PC: the run stops before it too, where the start
    /// state may come round again.
    start: u32,
    /// The last step jumped back.
    back: bool,
    /// [`Hart::effects`] when the probe began.
    effects: u64,
    pure_only: bool,
    /// Stopped before an instruction that is not pure.
    impure: bool,
}

/// Whether an instruction of kind `op` neither stores, reads a counter nor
/// traps (its loads are checked where they are made).
fn pure(op: Op) -> bool {
    !matches!(
        op,
        Op::Sb
            | Op::Sh
            | Op::Sw
            | Op::Illegal
            | Op::NotDecoded
            | Op::Ecall
            | Op::Ebreak
            | Op::Csrrw
            | Op::Csrrwi
            | Op::Csrrs
            | Op::Csrrc
            | Op::Csrrsi
            | Op::Csrrci
    )
}

impl Observer for Recorder<'_> {
    const ON: bool = true;
    fn fetched(&mut self, pc: u32, op: Op) -> bool {
        // Computed whether or not it is needed: the branchless test is
        // cheaper than the branch (callgrind, the race workload).
        let pure = pure(op);
        if self.pure_only && !pure {
            self.impure = true;
            return false;
        }
        if pc == self.start && self.k > self.from {
            return false;
        }
        self.steps[self.k] = Step { pc, load: (0, 0) };
        true
    }
    fn loaded(&mut self, addr: u32, len: u32) {
        self.steps[self.k].load = (addr, len);
    }
    fn may_load_device(&mut self) -> bool {
        self.impure |= self.pure_only;
        !self.pure_only
    }
    fn retired(&mut self, back: bool, effects: u64) -> bool {
        self.k += 1;
        self.back = back;
        back || effects != self.effects || self.k == PROBE_STEPS as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asm::*;
    use crate::hart::NoBus;
    use crate::icache::ICache;
    use crate::memory::{Memory, Ram};

    fn hart(words: &[u32]) -> Hart {
        let mut mem = Memory::new(Ram::new(0, 0x4000), None);
        mem.write(0x1000, &to_bytes(words)).unwrap();
        Hart::new(mem, 0, 0x1000)
    }

    /// What a comparison of two harts looks at.
    fn state(h: &Hart) -> (u32, u64, u64, [u32; 32]) {
        (h.pc(), h.cycle(), h.instret(), h.regs())
    }

    /// Parks `h` in `l`, wakes it at `t` and runs it to `t`: the cycles skipped.
    fn park_and_wake(h: &mut Hart, l: IdleLoop, t: u64) -> u64 {
        let mut ff = FfState::default();
        ff.parked(l, u32::MAX);
        ff.unpark(h, t);
        h.run(&mut NoBus, t);
        ff.skipped_cycles
    }

    #[test]
    fn finds_a_polling_loop_and_skips_it_exactly() {
        // 0x1000: lw x7, 0x100(x0) ; 0x1004: beq x7, x0, -4
        let prog = [lw(7, 0, 0x100), beq(7, 0, -4)];
        let mut a = hart(&prog);
        let l = probe(&mut a, &mut NoBus, 1000).idle().expect("a pure loop");
        assert_eq!((l.period_cycles, l.period_instrs), (8 + 3, 2));
        let skipped = park_and_wake(&mut a, l, 10_000);
        let mut b = hart(&prog);
        b.run(&mut NoBus, 10_000);
        assert_eq!(state(&a), state(&b));
        assert!(skipped > 9000);
    }

    /// With pipelined loads a polling loop waits for its load at the
    /// branch: the same period, parked at a head where no load is waited for.
    #[test]
    fn a_polling_loop_with_pipelined_loads_parks_and_skips_exactly() {
        // 0x1000: lw x7, 0x100(x0) ; addi x9, x0, 1 ; beq x7, x0, -8
        let prog = [lw(7, 0, 0x100), addi(9, 0, 1), beq(7, 0, -8)];
        let pipelined = |words: &[u32]| {
            let mut h = hart(words);
            h.set_pipelined_loads(true);
            h
        };
        let mut a = pipelined(&prog);
        let l = probe(&mut a, &mut NoBus, 1000).idle().expect("a pure loop");
        assert_eq!((l.period_cycles, l.period_instrs), (8 + 3, 3), "the addi hides under the load");
        assert!(a.loads_settled());
        park_and_wake(&mut a, l, 10_000);
        let mut b = pipelined(&prog);
        b.run(&mut NoBus, 10_000);
        assert_eq!(state(&a), state(&b));
        // A probe that starts while the load is waited for (a step that
        // only waits changes neither PC nor registers) parks at a settled
        // head, one period on, and skips exactly.
        let mut c = pipelined(&prog);
        c.run(&mut NoBus, 2);
        assert!(!c.loads_settled());
        let l = probe(&mut c, &mut NoBus, 1000).idle().expect("the loop, at its settled head");
        assert_eq!((l.period_cycles, l.period_instrs), (8 + 3, 3));
        park_and_wake(&mut c, l, 10_000);
        assert_eq!(state(&c), state(&b));
    }

    /// With an instruction cache a loop is parked once a turn fetched only
    /// lines the cache held: the turn that missed is not its period. A loop
    /// that misses every turn (its call evicts its own line) is never
    /// parked, and runs as it would unprobed.
    #[test]
    fn a_polling_loop_with_an_instruction_cache_parks_once_it_hits() {
        // 0x1000: lw x7, 0x100(x0) ; jal x1, f ; beq x7, x0, -8 ; f: jalr x0, 0(x1)
        let prog = |f: i32| {
            let mut h = hart(&[lw(7, 0, 0x100), jal(1, f), beq(7, 0, -8)]);
            h.mem.write(0x1004 + f as u32, &to_bytes(&[jalr(0, 1, 0)])).unwrap();
            h.set_icache(ICache::new(512, 8));
            h
        };
        let mut a = prog(0x40);
        let l = probe(&mut a, &mut NoBus, 1000).idle().expect("a pure loop that hits");
        assert_eq!((l.period_cycles, l.period_instrs), (8 + 3 + 3 + 3, 4), "no miss in the period");
        assert_eq!(a.icache().misses(), 1, "the first call");
        assert!(park_and_wake(&mut a, l, 10_000) > 9000);
        let mut b = prog(0x40);
        b.run(&mut NoBus, 10_000);
        assert_eq!((state(&a), a.icache().misses()), (state(&b), b.icache().misses()));
        // f at 0x1204 shares a set with the loop's line (32 lines of 16 B).
        let mut c = prog(0x200);
        assert_eq!(probe(&mut c, &mut NoBus, 1000), Probe::NotIdle);
        c.run(&mut NoBus, 10_000);
        let mut d = prog(0x200);
        d.run(&mut NoBus, 10_000);
        assert_eq!((state(&c), c.icache().misses()), (state(&d), d.icache().misses()));
        // Two misses a turn of 8 + (3 + 8) + (3 + 8) + 3 cycles.
        assert!(d.icache().misses() >= 2 * (10_000 / 33 - 1));
    }

    #[test]
    fn a_loop_entered_after_straight_line_code_is_found_at_its_head() {
        // 0x1000: addi x8, x8, 1 ; 0x1004: lw x7, 0x100(x0) ; 0x1008: bltu x7, x8, -4
        let prog = [addi(8, 8, 1), lw(7, 0, 0x100), bltu(7, 8, -4)];
        let mut a = hart(&prog);
        let l = probe(&mut a, &mut NoBus, 1000).idle().expect("the lw/bltu loop");
        assert_eq!((a.pc(), l.period_instrs), (0x1004, 2));
        let mut ff = FfState::default();
        ff.parked(l, u32::MAX);
        ff.unpark(&mut a, 5000);
        a.run(&mut NoBus, 5000);
        let mut b = hart(&prog);
        b.run(&mut NoBus, 5000);
        assert_eq!((a.pc(), a.cycle(), a.instret(), a.regs()), (b.pc(), b.cycle(), b.instret(), b.regs()));
        // After a change it reads, the next start-of-run probe is skipped.
        ff.changed();
        assert!(!ff.start_probe_due());
        assert!(ff.start_probe_due());
    }

    #[test]
    fn a_parked_loop_knows_what_it_reads() {
        // 0x1000: lw x7, 0x100(x0) ; lbu x8, 0x203(x0) ; beq x7, x0, -8
        let mut a = hart(&[lw(7, 0, 0x100), lbu(8, 0, 0x203), beq(7, 0, -8)]);
        let l = probe(&mut a, &mut NoBus, 1000).idle().expect("a pure loop");
        assert!(l.reads_any(0x100, 4) && l.reads_any(0x103, 1) && l.reads_any(0xfc, 8));
        assert!(l.reads_any(0x203, 1) && !l.reads_any(0x200, 3) && !l.reads_any(0x204, 4));
        assert!(l.reads_any(0x1008, 4), "its own code");
        assert!(!l.reads_any(0x104, 0xfc) && !l.reads_any(0x100c, 4));
    }

    /// A wait for work on any of three queues: an inner loop over the
    /// queues inside the outer wait (the worker firmware's shape).
    const POLL_THREE_QUEUES: [u32; 8] = [
        addi(5, 0, 0),   // 0x1000: outer head: q = 0
        slli(6, 5, 2),   // 0x1004: inner head
        lw(7, 6, 0x100), // 0x1008: queue q's word
        bne(7, 0, 20),   // 0x100c: work: leave (to 0x1020)
        addi(5, 5, 1),   // 0x1010
        addi(8, 0, 3),   // 0x1014: three queues
        bltu(5, 8, -20), // 0x1018: next queue
        jal(0, -28),     // 0x101c: wait again
    ];

    fn same_as_a_plain_run(mut parked: Hart, l: IdleLoop, until: u64) {
        let mut ff = FfState::default();
        ff.parked(l, u32::MAX);
        ff.unpark(&mut parked, until);
        parked.run(&mut NoBus, until);
        let mut plain = hart(&POLL_THREE_QUEUES);
        plain.run(&mut NoBus, until);
        let state = |h: &Hart| (h.pc(), h.cycle(), h.instret(), h.regs());
        assert_eq!(state(&parked), state(&plain));
        assert!(ff.skipped_cycles > 0);
    }

    #[test]
    fn a_poll_over_several_queues_is_found_at_its_outer_period() {
        let mut a = hart(&POLL_THREE_QUEUES);
        let l = probe(&mut a, &mut NoBus, 10_000).idle().expect("the outer wait is a pure loop");
        assert_eq!((a.pc(), l.period_instrs), (0x1000, 1 + 3 * 6 + 1));
        assert!(l.reads_any(0x108, 4) && !l.reads_any(0x10c, 4), "the three queue words");
        same_as_a_plain_run(a, l, 20_000);
    }

    #[test]
    fn a_loop_longer_than_the_run_is_parked_at_a_head_before_the_limit() {
        let free = probe(&mut hart(&POLL_THREE_QUEUES), &mut NoBus, 10_000).idle().expect("a pure loop");
        let first_visit = free.since - free.period_cycles;
        // The run ends between the head's two visits.
        let limit = first_visit + free.period_cycles / 2;
        let mut a = hart(&POLL_THREE_QUEUES);
        let l = probe(&mut a, &mut NoBus, limit).idle().expect("found past the limit");
        assert_eq!(
            (l.since, l.period_cycles, a.cycle(), a.pc()),
            (first_visit, free.period_cycles, first_visit, 0x1000)
        );
        same_as_a_plain_run(a, l, 20_000);
    }

    #[test]
    fn a_probe_past_the_limit_stops_before_a_store_where_a_run_would() {
        let prog = [addi(5, 5, 1), addi(6, 6, 1), jal(0, 4), sw(5, 0, 0x200), jal(0, -16)];
        let mut a = hart(&prog);
        assert_eq!(probe(&mut a, &mut NoBus, 1), Probe::Cut);
        let mut b = hart(&prog);
        b.run(&mut NoBus, 1);
        let state = |h: &Hart| (h.pc(), h.cycle(), h.instret(), h.regs(), h.last_retired_pcs(8), h.effects());
        assert_eq!(state(&a), state(&b));
        assert_eq!(a.mem.read_u32(0x200).unwrap(), 0, "nothing stored");
    }

    /// A probe that meets an L0 hit past its limit goes back to the limit
    /// with the hart as a run to the limit leaves it, its count of effects
    /// included: PCT tells a poll from progress by that count less the hits,
    /// and the hit's effect stayed behind after the hit itself was undone.
    #[test]
    fn a_probe_back_from_an_l0_hit_past_the_limit_leaves_no_effect_behind() {
        let prog = [lui(5, 0x2), lw(6, 5, 0), beq(6, 0, -4), ECALL];
        let polling = |start| {
            let mut h = hart(&prog);
            h.set_l0_cache(crate::l0cache::L0Cache::new(1));
            h.run(&mut NoBus, start);
            h
        };
        let mut back = 0;
        for start in 20..60 {
            for ahead in 1..12 {
                let (mut a, mut b) = (polling(start), polling(start));
                let limit = a.cycle() + ahead;
                // Only a probe sent back to the limit (one that stops before
                // it leaves the hart where the next run goes on).
                if probe(&mut a, &mut NoBus, limit) != Probe::NotIdle || a.cycle() < limit {
                    continue;
                }
                back += 1;
                b.run(&mut NoBus, limit);
                let seen = |h: &Hart| (state(h), h.effects(), h.l0_cache().hits());
                assert_eq!(seen(&a), seen(&b), "start {start} limit {limit}");
            }
        }
        assert!(back > 0, "no probe met a hit past its limit");
    }

    /// Past the run's end the probe reads nothing outside the core's own
    /// memories: a poll of a device register is left to the next run.
    #[test]
    fn a_probe_past_the_limit_stops_before_a_device_load_where_a_run_would() {
        let prog = [addi(5, 5, 1), lui(6, 0xffb00), lw(7, 6, 0), beq(7, 0, -4)];
        let mut a = hart(&prog);
        assert!(matches!(probe(&mut a, &mut NoBus, 1), Probe::Cut));
        let mut b = hart(&prog);
        b.run(&mut NoBus, 1);
        let state = |h: &Hart| (h.pc(), h.cycle(), h.instret(), h.regs(), h.last_retired_pcs(8), h.halted());
        assert_eq!(state(&a), state(&b));
    }

    #[test]
    fn loops_that_store_count_or_change_registers_are_not_idle() {
        assert!(probe(&mut hart(&[sw(0, 0, 0x100), jal(0, -4)]), &mut NoBus, 1000).idle().is_none());
        assert!(probe(&mut hart(&[addi(1, 1, 1), jal(0, -4)]), &mut NoBus, 1000).idle().is_none());
        // Reads mcycle and clobbers it before the back edge: time-dependent.
        let timed = [csrrs(5, 0xb00, 0), addi(5, 0, 0), jal(0, -8)];
        assert!(probe(&mut hart(&timed), &mut NoBus, 1000).idle().is_none());
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
        // Up to the eager cap while the core fails no more than a few
        // probes since it last parked, then up to the full one.
        let wait_after = |ff: &mut FfState| (0..1000).take_while(|_| !ff.probe_due()).count() as u32;
        let mut waits = Vec::new();
        for _ in 3..14 {
            ff.probe_failed();
            waits.push(wait_after(&mut ff));
        }
        assert_eq!(waits, [8, 8, 8, 8, 8, 8, 8, 16, 32, 64, 64]);
        ff.parked(probe(&mut hart(&[jal(0, 0)]), &mut NoBus, 100).idle().expect("a pure loop"), u32::MAX);
        ff.probe_failed();
        assert_eq!(wait_after(&mut ff), 1, "a park starts over");
    }

    /// A probe in the middle of a run needs room for the core's last loop
    /// to come round before the run ends; any probe does before a first park.
    #[test]
    fn mid_run_probes_need_room_for_the_last_loop() {
        let mut ff = FfState::default();
        assert!(ff.mid_run_probe_due(100, 100));
        // lw, bltu: a lap of a load and a taken branch.
        let mut a = hart(&[lw(9, 0, 0x100), bltu(9, 8, -4)]);
        a.set_reg(8, 1);
        let l = probe(&mut a, &mut NoBus, 1000).idle().expect("the lw/bltu loop");
        assert!(l.period_cycles > 2, "{l:?}");
        ff.parked(l, u32::MAX);
        assert!(!ff.mid_run_probe_due(101, 100 + l.period_cycles));
        assert!(ff.mid_run_probe_due(100, 100 + l.period_cycles));
    }
}
