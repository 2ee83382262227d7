//! One RV32IM hart: registers, counters, the interpreter loop and the halt
//! model.
//!
//! The loop runs until a cycle limit, a halt, a store to the watched address
//! (`tohost`) or a bus request to yield. Its state lives in locals; fetch is
//! one indexed load from the predecoded cache; RAM loads and stores are
//! inline bounds checks on L1; everything else (the second RAM window, MMIO,
//! decoding, faults) is on out-of-line slow paths.
//!
//! Halts are precise: the PC stays on the offending instruction, which is not
//! retired and costs no cycles. There is no trap handling (no `mtvec`): an
//! exception halts the hart with its reason. Misaligned loads and stores are
//! not emulated: they halt with [`HaltReason::MisalignedLoad`]/`Store`.

use crate::csr;
use crate::decode::{Decoded, Op, X0_SINK};
use crate::history::BranchHistory;
use crate::icache::ICache;
use crate::l0cache::L0Cache;
use crate::memory::Memory;
use crate::timing::{self, L1Stores, LOAD_CYCLES, MUL_CYCLES, TAKEN_PENALTY};
use std::fmt;

/// A non-RAM access the bus could not serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessFault {
    /// Nothing is mapped there (or not for this access size).
    Unmapped,
    /// A device register refused the access (e.g. an invalid NOC command).
    Rejected(&'static str),
    /// The address is part of the chip that cqlab does not model (the
    /// Tensix coprocessor, the NOC overlay, ...): named, never silent.
    NotModelled(&'static str),
    /// A NOC request (`NOC_CMD_CTRL` written) the chip refuses: why, and
    /// the coordinates it named.
    BadRequest(&'static str, cqlab_abi::noc::Coord),
}

/// What a bus store asks of the hart afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreEffect {
    /// Keep running.
    Continue,
    /// End the run slice after this instruction (the scheduler must act,
    /// e.g. on a NOC command or a soft reset).
    Yield,
}

/// A value loaded from the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loaded {
    pub value: u32,
    /// The register may read another value without anything being stored
    /// (a busy flag that clears with time, a clock): such a load counts as
    /// a side effect, so idle fast-forward never parks a loop polling it.
    pub volatile: bool,
}

/// Where accesses outside RAM go (core MMIO, in the chip). Generic, so the
/// interpreter is monomorphised per bus and never dispatches dynamically.
pub trait Bus {
    /// Load `size` (1, 2 or 4) bytes at `addr`; `now` is the hart's cycle.
    /// One call decodes the address once: the value and its volatility.
    fn load(&mut self, mem: &mut Memory, addr: u32, size: u32, now: u64) -> Result<Loaded, AccessFault>;
    /// Store the low `size` bytes of `value` at `addr`.
    fn store(
        &mut self,
        mem: &mut Memory,
        addr: u32,
        size: u32,
        value: u32,
        now: u64,
    ) -> Result<StoreEffect, AccessFault>;
    /// A word store of `value` at `addr` when `addr` is a register that
    /// only holds what is stored (an NIU command-buffer register other than
    /// `NOC_CMD_CTRL`, `NOC_NODE_ID`, `NOC_ENDPOINT_ID` and
    /// `NOC_CLEAR_OUTSTANDING_REQ_CNT`): stored, and true; false sends it
    /// to [`Bus::store`]. The
    /// same state change as `store` there, without its fault and request
    /// handling: a hand-off writes ten such registers a packet.
    #[inline(always)]
    fn store_plain_register(&mut self, _addr: u32, _value: u32) -> bool {
        false
    }
    /// A word load at `addr` when `addr` is a register whose read has no
    /// effect and is never refused (an NIU counter, a command buffer's
    /// registers and busy flag): what [`Bus::load`] gives; `None` sends it
    /// there. The firmware's waits poll NIU counters and command buffers:
    /// most device loads are these.
    #[inline(always)]
    fn load_plain_register(&mut self, _addr: u32, _now: u64) -> Option<Loaded> {
        None
    }
}

/// A bus with nothing on it: every non-RAM access faults.
pub struct NoBus;

impl Bus for NoBus {
    fn load(&mut self, _: &mut Memory, _: u32, _: u32, _: u64) -> Result<Loaded, AccessFault> {
        Err(AccessFault::Unmapped)
    }
    fn store(&mut self, _: &mut Memory, _: u32, _: u32, _: u32, _: u64) -> Result<StoreEffect, AccessFault> {
        Err(AccessFault::Unmapped)
    }
}

/// Why a hart stopped for good (until reset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaltReason {
    Ecall,
    Ebreak,
    IllegalInstruction {
        word: u32,
    },
    /// A taken branch or jump to an address that is not 4-byte aligned.
    MisalignedFetch {
        target: u32,
    },
    MisalignedLoad {
        addr: u32,
    },
    MisalignedStore {
        addr: u32,
    },
    /// The PC left RAM.
    FetchFault,
    LoadFault {
        addr: u32,
    },
    StoreFault {
        addr: u32,
    },
    /// A device register refused the access.
    Rejected {
        addr: u32,
        reason: &'static str,
    },
    /// An access to something cqlab does not model.
    NotModelled {
        addr: u32,
        what: &'static str,
    },
    /// A NOC request the chip refused (at its `NOC_CMD_CTRL` store).
    BadNocRequest {
        addr: u32,
        reason: &'static str,
        coord: cqlab_abi::noc::Coord,
    },
}

/// A halt: the reason and the PC of the instruction that caused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Halt {
    pub pc: u32,
    pub reason: HaltReason,
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pc = self.pc;
        match self.reason {
            HaltReason::Ecall => write!(f, "ecall at pc 0x{pc:08x}"),
            HaltReason::Ebreak => write!(f, "ebreak at pc 0x{pc:08x}"),
            HaltReason::IllegalInstruction { word } => write!(f, "illegal instruction 0x{word:08x} at pc 0x{pc:08x}"),
            HaltReason::MisalignedFetch { target } => {
                write!(f, "jump to misaligned address 0x{target:08x} from pc 0x{pc:08x}")
            }
            HaltReason::MisalignedLoad { addr } => write!(f, "misaligned load from 0x{addr:08x} at pc 0x{pc:08x}"),
            HaltReason::MisalignedStore { addr } => write!(f, "misaligned store to 0x{addr:08x} at pc 0x{pc:08x}"),
            HaltReason::FetchFault => write!(f, "instruction fetch outside RAM at pc 0x{pc:08x}"),
            HaltReason::LoadFault { addr } => write!(f, "load from unmapped address 0x{addr:08x} at pc 0x{pc:08x}"),
            HaltReason::StoreFault { addr } => write!(f, "store to unmapped address 0x{addr:08x} at pc 0x{pc:08x}"),
            HaltReason::Rejected { addr, reason } => {
                write!(f, "device register 0x{addr:08x} refused the access at pc 0x{pc:08x}: {reason}")
            }
            HaltReason::NotModelled { addr, what } => {
                write!(f, "access to 0x{addr:08x} at pc 0x{pc:08x}: {what} is not modelled by cqlab")
            }
            HaltReason::BadNocRequest { addr, reason, coord } => {
                write!(f, "NOC request (store to 0x{addr:08x} at pc 0x{pc:08x}) naming {coord} refused: {reason}")
            }
        }
    }
}

/// Why [`Hart::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The cycle counter reached the limit.
    CycleLimit,
    /// The hart is halted (now or earlier).
    Halted(Halt),
    /// A store hit the watched address; `value` is the word there
    /// afterwards, `old` the word before it.
    Watch { addr: u32, value: u32, old: u32 },
    /// The bus asked the hart to yield after an MMIO store.
    Yield,
}

/// What [`Hart::run_observed`] tells an observer (the idle-loop probe).
pub(crate) trait Observer {
    /// False for [`Unobserved`]: every hook is compiled out.
    const ON: bool;
    /// The instruction at `pc`, an `op`, is about to execute. False stops
    /// the run before it.
    fn fetched(&mut self, pc: u32, op: Op) -> bool;
    /// It loads `len` bytes at `addr`.
    fn loaded(&mut self, addr: u32, len: u32);
    /// It loads from outside the core's own memories (a device register).
    /// False stops the run before it.
    fn may_load_device(&mut self) -> bool;
    /// It retired; `back`: it jumped to its own address or before it;
    /// `effects`: [`Hart::effects`] after it. True stops the run there.
    fn retired(&mut self, back: bool, effects: u64) -> bool;
}

/// No observer: [`Hart::run`].
pub(crate) struct Unobserved;

impl Observer for Unobserved {
    const ON: bool = false;
    fn fetched(&mut self, _pc: u32, _op: Op) -> bool {
        true
    }
    fn loaded(&mut self, _addr: u32, _len: u32) {}
    fn may_load_device(&mut self) -> bool {
        true
    }
    fn retired(&mut self, _back: bool, _effects: u64) -> bool {
        false
    }
}

/// Register-file slots: 32 architectural plus the `x0` write sink, padded to
/// 64 so `& 63` indexing is provably in bounds.
const REG_SLOTS: usize = 64;

/// Entries of the retire-order queue (tt-isa
/// `WormholeB0/TensixTile/BabyRISCV/MemoryOrdering.md`: "an eight-entry
/// retire-order queue"; Blackhole's page says the same): at most eight L1
/// loads wait for their data. The queue never fills behind a waiting load
/// otherwise: instructions take at least a cycle each, so the eighth after
/// a load issues no earlier than the load's data is back.
const RETIRE_QUEUE: usize = 8;
const _: () = assert!(LOAD_CYCLES <= RETIRE_QUEUE as u64);

/// L1 loads whose data is not back yet, oldest first, when loads are
/// pipelined ([`Hart::set_pipelined_loads`]). From the same page: a load
/// leaves the Load/Store Unit only with its read-response, at the head of
/// the retire-order queue, and an instruction enters the Integer Unit only
/// once its register operands are available. So a load costs one cycle and
/// the hart goes on until an instruction needs its register (or writes it:
/// registers are written in order).
#[derive(Clone, Copy, Debug, Default)]
struct LoadQueue {
    on: bool,
    n: usize,
    /// The cycle every waiting load's data is back by (0: none waiting).
    until: u64,
    /// Per waiting load: when its data is back and its register.
    ready: [u64; RETIRE_QUEUE],
    rd: [u8; RETIRE_QUEUE],
    /// With two loads or more waiting (only then: a lone load, a polling
    /// loop's, pays nothing for them), summaries of the `n`, so that an
    /// instruction that needs none of their registers, issued before any
    /// is back, is let through without a look at each (the firmware's
    /// loops keep several loads waiting): their registers ([`reg_bit`]),
    /// and the cycle the first is back.
    regs: u64,
    soonest: u64,
}

/// A register's bit in a mask of registers: [`LoadQueue::regs`] never
/// holds the sink of `x0`'s (no instruction reads it), so an instruction's
/// mask may.
#[inline(always)]
fn reg_bit(r: u8) -> u64 {
    1 << (r & 63)
}

/// The [`LoadQueue::regs`] of loads into `rds`.
#[inline(always)]
fn loads_regs(rds: &[u8]) -> u64 {
    rds.iter().fold(0, |m, &r| m | reg_bit(r)) & !reg_bit(X0_SINK)
}

impl LoadQueue {
    /// A load issued at `cycle`. Loads whose data was back before it are
    /// forgotten first: a hart that stopped (a run's end, a stall) with
    /// loads waiting resumes past them without looking at the queue.
    fn push(&mut self, cycle: u64, ready: u64, rd: u8) {
        if self.until <= cycle {
            self.n = 0;
        }
        debug_assert!(self.n < RETIRE_QUEUE, "the retire-order queue overflows");
        (self.ready[self.n], self.rd[self.n]) = (ready, rd);
        match self.n {
            0 => {}
            1 => (self.regs, self.soonest) = (loads_regs(&self.rd[..2]), self.ready[0].min(ready)),
            _ => (self.regs, self.soonest) = (self.regs | loads_regs(&[rd]), self.soonest.min(ready)),
        }
        self.n += 1;
        self.until = self.until.max(ready);
    }

    /// The cycle instruction `d` may issue at, no earlier than `cycle`;
    /// forgets the loads whose data is back by then. (Unused register
    /// fields of a decoded instruction are 0, never a load's register.)
    #[inline(always)]
    fn issue_at(&mut self, d: &Decoded, cycle: u64) -> u64 {
        // Mostly one load waits (a polling loop's, or a load and its use):
        // the general case's two passes, for it alone.
        if self.n == 1 {
            let (rd, ready) = (self.rd[0], self.ready[0]);
            let needs = rd != X0_SINK && (d.rs1 == rd || d.rs2 == rd || d.rd == rd);
            let at = if needs { ready.max(cycle) } else { cycle };
            if ready <= at {
                (self.n, self.until) = (0, 0);
            }
            return at;
        }
        self.issue_at_many(d, cycle)
    }

    /// [`LoadQueue::issue_at`] with two loads or more waiting.
    #[cold]
    #[inline(never)]
    fn issue_at_many(&mut self, d: &Decoded, cycle: u64) -> u64 {
        debug_assert!(self.n >= 2, "one load waiting is issue_at's");
        // Needs none of them, and none is back: it issues now and the queue
        // stays as it is (what the passes below would find).
        if self.regs & (reg_bit(d.rs1) | reg_bit(d.rs2) | reg_bit(d.rd)) == 0 && cycle < self.soonest {
            return cycle;
        }
        let mut at = cycle;
        for k in 0..self.n {
            let rd = self.rd[k];
            if rd != X0_SINK && (d.rs1 == rd || d.rs2 == rd || d.rd == rd) {
                at = at.max(self.ready[k]);
            }
        }
        let mut kept = 0;
        for k in 0..self.n {
            if self.ready[k] > at {
                (self.ready[kept], self.rd[kept]) = (self.ready[k], self.rd[k]);
                kept += 1;
            }
        }
        self.n = kept;
        self.until = self.ready[..kept].iter().copied().max().unwrap_or(0);
        self.soonest = self.ready[..kept].iter().copied().min().unwrap_or(0);
        self.regs = loads_regs(&self.rd[..kept]);
        at
    }
}

/// A hart's architectural state without its memory ([`Hart::checkpoint`]).
pub(crate) struct Checkpoint {
    pc: u32,
    regs: [u32; 32],
    cycle: u64,
    instret: u64,
    halt: Option<Halt>,
    history: BranchHistory,
    store_queue: StoreQueue,
    loads: LoadQueue,
    icache: ICache,
    l0: L0Cache,
    effects: u64,
}

/// The hart's L1 store queue (see [`L1Stores`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StoreQueue {
    timing: L1Stores,
    /// The cycle the queue has written every store it holds.
    drained: u64,
    /// The address of the last store queued.
    last: u32,
}

impl StoreQueue {
    /// Queues a store to L1 `addr` issued at `cycle`: the cycle the hart
    /// goes on at (later than `cycle` when the queue was full).
    #[inline(always)]
    fn push(&mut self, cycle: u64, addr: u32) -> u64 {
        // Drained: the store takes a slot at once and joins nothing (no
        // store is queued to join). Most stores meet an empty queue; this
        // spares them the full rule below (`sim bench`'s `mem` loop).
        if cycle >= self.drained {
            (self.drained, self.last) = (cycle + self.timing.interval, addr);
            return cycle;
        }
        self.push_queued(cycle, addr)
    }

    /// [`StoreQueue::push`] while stores are still queued.
    fn push_queued(&mut self, cycle: u64, addr: u32) -> u64 {
        let t = self.timing;
        // Coalesced: the same aligned 16-byte block, starting within 4 bytes
        // of the store before (tt-isa `BlackholeA0/TensixTile/BabyRISCV/README.md`,
        // "Load/Store Unit").
        let joins = addr & !15 == self.last & !15 && addr.abs_diff(self.last) <= 4;
        self.last = addr;
        if t.coalesce && joins && self.drained > cycle {
            return cycle;
        }
        let at = cycle.max(self.drained.saturating_sub(t.interval * (t.queue - 1)));
        self.drained = self.drained.max(at) + t.interval;
        at
    }
}

/// One hart with its RAM.
pub struct Hart {
    regs: [u32; REG_SLOTS],
    pc: u32,
    cycle: u64,
    instret: u64,
    hartid: u32,
    halt: Option<Halt>,
    pub mem: Memory,
    history: BranchHistory,
    /// Stores and counter-CSR reads executed: anything that makes a loop
    /// depend on more than its registers and unchanged memory. Idle
    /// fast-forward only skips loops during which this does not move.
    effects: u64,
    store_queue: StoreQueue,
    loads: LoadQueue,
    /// Its instruction cache's tags ([`Hart::set_icache`]; off unless set).
    icache: ICache,
    /// Its L0 data cache ([`Hart::set_l0_cache`]; off unless set).
    l0: L0Cache,
    /// Cycles a taken branch or jump adds (`timing::taken_penalty`).
    taken_penalty: u64,
}

impl Hart {
    /// A hart at `entry` with zeroed registers.
    pub fn new(mem: Memory, hartid: u32, entry: u32) -> Self {
        let mut h = Hart {
            regs: [0; REG_SLOTS],
            pc: 0,
            cycle: 0,
            instret: 0,
            hartid,
            halt: None,
            mem,
            history: Default::default(),
            effects: 0,
            store_queue: StoreQueue { timing: L1Stores::WORMHOLE, drained: 0, last: u32::MAX },
            loads: LoadQueue::default(),
            icache: ICache::OFF,
            l0: L0Cache::OFF,
            taken_penalty: TAKEN_PENALTY,
        };
        h.reset(entry);
        h
    }

    /// Architectural reset: registers, PC and halt state. Memory and the
    /// counters are kept (counters count since power-on, as on silicon).
    /// The instruction cache, if on, is emptied and its first fetch misses:
    /// the hart starts that many cycles later.
    pub fn reset(&mut self, entry: u32) {
        self.regs = [0; REG_SLOTS];
        self.pc = entry;
        self.halt = None;
        self.loads = LoadQueue { on: self.loads.on, ..LoadQueue::default() };
        self.history = BranchHistory::default();
        self.history.record(u32::MAX, entry);
        self.cycle += self.icache.reset(entry);
        self.l0.flush();
    }

    /// Gives the hart L0 data cache `c` ([`L0Cache::OFF`] for none).
    pub fn set_l0_cache(&mut self, c: L0Cache) {
        self.l0 = c;
    }

    /// Its L0 data cache (hits, stale hits).
    pub fn l0_cache(&self) -> &L0Cache {
        &self.l0
    }

    /// An L1 load through the L0 data cache (out of line: the interpreter's
    /// loads without one stay small): the bytes and the latency.
    #[inline(never)]
    fn l0_load<const N: usize>(&mut self, pc: u32, addr: u32, fresh: [u8; N], cycle: u64) -> ([u8; N], u64) {
        let l1 = &self.mem.l1;
        let (got, hit) = self.l0.load::<N>(addr, fresh, (cycle, pc), |at| {
            l1.load::<{ crate::l0cache::LINE_BYTES as usize }>(at).expect("a line of L1")
        });
        if !hit {
            return (got, LOAD_CYCLES);
        }
        // A hit may differ from L1 and may flush: the loop it is in is not
        // a pure repeat (idle fast-forward must not skip it).
        self.effects += 1;
        (got, crate::l0cache::HIT_CYCLES)
    }

    /// A store to L1 drops its line from the L0 data cache.
    #[inline(never)]
    fn l0_drop_line(&mut self, addr: u32) {
        self.l0.drop_line(addr);
    }

    /// Gives the hart instruction cache `c` (empty; [`ICache::OFF`] for
    /// none). The line it is in is not charged: it counts as fetched.
    pub fn set_icache(&mut self, c: ICache) {
        self.icache = c;
        self.icache.clear(self.pc);
    }

    /// Its instruction cache (misses so far, size).
    pub fn icache(&self) -> &ICache {
        &self.icache
    }

    /// True if a write to `[addr, addr + len)` would drop lines of its
    /// instruction cache (see [`Hart::icache_drop_written`]).
    pub(crate) fn icache_holds_any(&self, addr: u32, len: u32) -> bool {
        self.icache.holds_any(self.pc, addr, len)
    }

    /// Drops the lines a write to `[addr, addr + len)` lands on (a NOC or
    /// host write: `icache` says why).
    pub(crate) fn icache_drop_written(&mut self, addr: u32, len: u32) {
        self.icache.drop_written(self.pc, addr, len);
    }

    /// Empties the instruction cache, if on (code written behind the chip's
    /// back).
    pub(crate) fn icache_clear(&mut self) {
        if self.icache.on {
            self.icache.clear(self.pc);
        }
    }

    /// Pipelines L1 loads ([`LoadQueue`]); off, a load from L1 stalls the
    /// hart for all of `LOAD_CYCLES`.
    pub fn set_pipelined_loads(&mut self, on: bool) {
        self.loads.on = on;
    }

    /// No load is waiting for its data: the hart's state is its PC and
    /// registers alone (what idle fast-forward compares).
    pub(crate) fn loads_settled(&self) -> bool {
        self.loads.until <= self.cycle
    }

    /// Sets how fast L1 takes this hart's stores (Wormhole's unless told).
    pub fn set_l1_stores(&mut self, timing: L1Stores) {
        self.store_queue.timing = timing;
    }

    /// Sets what a taken branch or jump costs on top of its cycle
    /// (`timing::taken_penalty`).
    pub fn set_taken_penalty(&mut self, cycles: u64) {
        self.taken_penalty = cycles;
    }

    pub fn pc(&self) -> u32 {
        self.pc
    }
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
    pub fn instret(&self) -> u64 {
        self.instret
    }
    pub fn hartid(&self) -> u32 {
        self.hartid
    }
    pub fn halted(&self) -> Option<Halt> {
        self.halt
    }
    /// Architectural register `i` (0..32).
    pub fn reg(&self, i: usize) -> u32 {
        assert!(i < 32, "x{i} is not a register");
        self.regs[i]
    }
    pub fn set_reg(&mut self, i: usize, v: u32) {
        assert!(i < 32, "x{i} is not a register");
        if i != 0 {
            self.regs[i] = v;
        }
    }
    /// All 32 architectural registers.
    pub fn regs(&self) -> [u32; 32] {
        let mut r = [0; 32];
        r.copy_from_slice(&self.regs[..32]);
        r
    }

    /// Lets simulated time pass without executing (a held or idle core).
    pub fn skip_cycles(&mut self, n: u64) {
        self.cycle += n;
    }

    /// The core stalls `n` cycles from where it can go on: if the next
    /// instruction waits for a load, from when its data is back. A run that
    /// stopped at that instruction leaves the hart either before the wait
    /// or after it, depending on where the run's limit fell (a parked core
    /// brought to a slice start stops before it; a core run to a delivery
    /// inside the slice may stop after it): both stall to the same cycle.
    pub fn stall(&mut self, n: u64) {
        if self.loads.on && self.cycle < self.loads.until {
            if let Some(d) = self.mem.fetch_slow(self.pc) {
                self.cycle = self.loads.issue_at(&d, self.cycle);
            }
        }
        self.cycle += n;
    }

    /// Count of stores and counter-CSR reads so far (see `fastforward`).
    pub fn effects(&self) -> u64 {
        self.effects
    }

    /// Accounts for `instrs` instructions over `cycles` cycles of a loop that
    /// returns to the current state (idle fast-forward).
    pub(crate) fn fast_forward(&mut self, cycles: u64, instrs: u64) {
        self.cycle += cycles;
        self.instret += instrs;
    }

    /// The architectural state a probe may return the hart to: PC,
    /// registers, counters (its count of effects too), halt, branch
    /// history, caches (memory is the caller's to keep unchanged).
    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            pc: self.pc,
            regs: self.regs(),
            cycle: self.cycle,
            instret: self.instret,
            halt: self.halt,
            history: self.history.clone(),
            store_queue: self.store_queue,
            loads: self.loads,
            icache: self.icache,
            l0: self.l0,
            effects: self.effects,
        }
    }

    /// Puts back a [`Hart::checkpoint`].
    pub(crate) fn restore(&mut self, c: &Checkpoint) {
        self.pc = c.pc;
        self.regs[..32].copy_from_slice(&c.regs);
        self.cycle = c.cycle;
        self.instret = c.instret;
        self.halt = c.halt;
        self.history = c.history.clone();
        self.store_queue = c.store_queue;
        self.loads = c.loads;
        self.icache = c.icache;
        self.l0 = c.l0;
        self.effects = c.effects;
    }

    /// Sets the counters back to where they stood when the hart was last
    /// in its current state (PC and registers): the same state, earlier.
    pub(crate) fn rewind(&mut self, cycle: u64, instret: u64) {
        debug_assert!(cycle <= self.cycle && instret <= self.instret, "rewinding forwards");
        self.cycle = cycle;
        self.instret = instret;
    }

    /// Up to `n` most recently retired PCs, newest first, reconstructed
    /// from the taken-branch history (exact, as long as the history holds).
    pub fn last_retired_pcs(&self, n: usize) -> Vec<u32> {
        self.history.last_pcs(self.pc, n)
    }

    pub fn peek(&self) -> Option<(u32, Decoded)> {
        let word = self.mem.word_at(self.pc)?;
        Some((word, crate::decode::decode(word)))
    }

    #[cold]
    fn halt_at(&mut self, pc: u32, reason: HaltReason) -> Stop {
        let h = Halt { pc, reason };
        self.halt = Some(h);
        Stop::Halted(h)
    }

    #[cold]
    #[inline(never)]
    fn load_slow<B: Bus>(&mut self, bus: &mut B, addr: u32, size: u32, now: u64) -> Result<u32, AccessFault> {
        if let Some(w) = self.mem.window.as_ref() {
            if w.contains(addr, size as u64) {
                let mut b = [0u8; 4];
                w.read(addr, &mut b[..size as usize]).map_err(|_| AccessFault::Unmapped)?;
                return Ok(u32::from_le_bytes(b));
            }
        }
        let loaded = bus.load(&mut self.mem, addr, size, now)?;
        if loaded.volatile {
            self.effects += 1;
        }
        Ok(loaded.value)
    }

    /// Stores outside L1. `Ok(Some(stop))` ends the slice after the store.
    #[cold]
    #[inline(never)]
    fn store_slow<B: Bus>(
        &mut self,
        bus: &mut B,
        addr: u32,
        size: u32,
        value: u32,
        old: Option<u32>,
        now: u64,
    ) -> Result<Option<Stop>, AccessFault> {
        if let Some(w) = self.mem.window.as_mut() {
            if w.contains(addr, size as u64) {
                w.write(addr, &value.to_le_bytes()[..size as usize]).map_err(|_| AccessFault::Unmapped)?;
                return Ok(self.watch_hit(addr, old));
            }
        }
        match bus.store(&mut self.mem, addr, size, value, now)? {
            StoreEffect::Continue => Ok(None),
            StoreEffect::Yield => Ok(Some(Stop::Yield)),
        }
    }

    /// The word a store to `addr` is about to change, if `addr` is watched.
    #[inline(always)]
    fn watched_old(&self, addr: u32) -> Option<u32> {
        if self.mem.is_watched(addr) {
            return Some(self.mem.read_u32(addr & !3).unwrap_or(0));
        }
        None
    }

    /// After a store to `addr` whose word was `old` (if watched).
    #[inline(always)]
    fn watch_hit(&self, addr: u32, old: Option<u32>) -> Option<Stop> {
        let old = old?;
        let aligned = addr & !3;
        let value = self.mem.read_u32(aligned).unwrap_or(0);
        Some(Stop::Watch { addr: aligned, value, old })
    }

    /// Executes one instruction (or halts); returns why it stopped, which is
    /// `CycleLimit` after a normal instruction.
    pub fn step<B: Bus>(&mut self, bus: &mut B) -> Stop {
        let limit = self.cycle + 1;
        self.run(bus, limit)
    }

    /// Runs until `self.cycle() >= cycle_limit` or another [`Stop`].
    pub fn run<B: Bus>(&mut self, bus: &mut B, cycle_limit: u64) -> Stop {
        self.run_observed(bus, cycle_limit, &mut Unobserved)
    }

    /// [`Hart::run`], telling `obs` what each instruction fetches and
    /// loads, and stopping (with `CycleLimit`, before the limit) where `obs`
    /// asks to after an instruction. Unobserved, the hooks compile away.
    #[inline(always)]
    pub(crate) fn run_observed<B: Bus, O: Observer>(&mut self, bus: &mut B, cycle_limit: u64, obs: &mut O) -> Stop {
        if let Some(h) = self.halt {
            return Stop::Halted(h);
        }
        // Most runs have no load queue: their loop leaves out its test at
        // every instruction, and decodes a new word in its `match`.
        if self.loads.on || self.loads.until > self.cycle {
            self.run_loop::<B, O, true>(bus, cycle_limit, obs)
        } else {
            self.run_loop::<B, O, false>(bus, cycle_limit, obs)
        }
    }

    /// [`Hart::run_loop`] with every test (out of line: a plain run's way
    /// on where its loop cannot go, into code outside L1).
    #[inline(never)]
    fn run_full<B: Bus, O: Observer>(&mut self, bus: &mut B, cycle_limit: u64, obs: &mut O) -> Stop {
        self.run_loop::<B, O, true>(bus, cycle_limit, obs)
    }

    /// [`Hart::run_observed`]'s loop. `FULL`: loads may be waiting
    /// ([`LoadQueue`]), and every word is decoded before it dispatches;
    /// without it the loop assumes none waits and decodes an L1 word the
    /// first time it meets it, in its `match`.
    #[inline(always)]
    fn run_loop<B: Bus, O: Observer, const FULL: bool>(&mut self, bus: &mut B, cycle_limit: u64, obs: &mut O) -> Stop {
        let mut pc = self.pc;
        let mut cycle = self.cycle;
        let mut instret = self.instret;
        // Fixed for the run: held in registers, not reloaded after every
        // store through `self` (`sim bench`'s `mem` loop ran 14 % slower).
        let taken_penalty = self.taken_penalty;
        let l0_on = self.l0.on;
        // Observed: the instruction made a taken transfer to its own
        // address or before it.
        let mut back = false;

        macro_rules! x {
            ($i:expr) => {
                self.regs[($i as usize) & (REG_SLOTS - 1)]
            };
        }
        macro_rules! halt {
            ($reason:expr) => {
                break self.halt_at(pc, $reason)
            };
        }
        // rd = f(rs1, rs2, imm); one cycle plus `$extra`.
        macro_rules! alu {
            ($d:expr, |$a:ident, $b:ident, $i:ident| $e:expr) => {{
                let $a = x!($d.rs1);
                let $b = x!($d.rs2);
                let $i = $d.imm;
                x!($d.rd) = $e;
                pc = pc.wrapping_add(4);
            }};
        }
        // Taken branch or jump to `$t`.
        macro_rules! jump {
            ($t:expr) => {{
                let t: u32 = $t;
                if t & 3 != 0 {
                    halt!(HaltReason::MisalignedFetch { target: t });
                }
                self.history.record(pc, t);
                back = O::ON && t <= pc;
                // Off, this one branch per taken transfer is all the cache costs.
                if self.icache.on {
                    cycle += self.icache.jump(pc, t);
                }
                pc = t;
                cycle += taken_penalty;
            }};
        }
        macro_rules! branch {
            ($d:expr, $cond:expr) => {{
                if $cond {
                    jump!(pc.wrapping_add($d.imm));
                } else {
                    pc = pc.wrapping_add(4);
                }
            }};
        }
        macro_rules! load {
            ($d:expr, $n:literal, $conv:path) => {{
                let addr = x!($d.rs1).wrapping_add($d.imm);
                if misaligned(addr, $n) {
                    halt!(HaltReason::MisalignedLoad { addr });
                }
                if O::ON {
                    obs.loaded(addr, $n);
                }
                let raw: u32 = match self.mem.l1.load::<$n>(addr) {
                    Some(b) => {
                        let (b, latency) =
                            if l0_on { self.l0_load::<$n>(pc, addr, b, cycle) } else { (b, LOAD_CYCLES) };
                        let mut w = [0u8; 4];
                        w[..$n].copy_from_slice(&b);
                        if FULL && self.loads.on {
                            self.loads.push(cycle, cycle + latency, $d.rd);
                        } else {
                            cycle += latency - 1;
                        }
                        u32::from_le_bytes(w)
                    }
                    // Local data memory: one cycle, no stall.
                    None => match self.mem.local.load::<$n>(addr) {
                        Some(b) => {
                            let mut w = [0u8; 4];
                            w[..$n].copy_from_slice(&b);
                            u32::from_le_bytes(w)
                        }
                        None if O::ON && !obs.may_load_device() => break Stop::CycleLimit,
                        None => {
                            let plain = if $n == 4 && self.mem.window.is_none() {
                                bus.load_plain_register(addr, cycle)
                            } else {
                                None
                            };
                            let loaded = match plain {
                                Some(l) => {
                                    self.effects += u64::from(l.volatile);
                                    Ok(l.value)
                                }
                                None => self.load_slow(bus, addr, $n, cycle),
                            };
                            match loaded {
                                Ok(v) => {
                                    cycle += LOAD_CYCLES - 1;
                                    v
                                }
                                Err(AccessFault::Unmapped) => halt!(HaltReason::LoadFault { addr }),
                                Err(AccessFault::Rejected(reason)) => halt!(HaltReason::Rejected { addr, reason }),
                                Err(AccessFault::NotModelled(what)) => halt!(HaltReason::NotModelled { addr, what }),
                                Err(AccessFault::BadRequest(reason, coord)) => {
                                    halt!(HaltReason::BadNocRequest { addr, reason, coord })
                                }
                            }
                        }
                    },
                };
                x!($d.rd) = $conv(raw);
                pc = pc.wrapping_add(4);
            }};
        }
        macro_rules! store {
            ($d:expr, $n:literal) => {{
                let addr = x!($d.rs1).wrapping_add($d.imm);
                if misaligned(addr, $n) {
                    halt!(HaltReason::MisalignedStore { addr });
                }
                let v = x!($d.rs2);
                let bytes: [u8; 4] = v.to_le_bytes();
                let mut b = [0u8; $n];
                b.copy_from_slice(&bytes[..$n]);
                self.effects += 1;
                let old = self.watched_old(addr);
                let stop = if self.mem.l1.store::<$n>(addr, b) {
                    if l0_on {
                        self.l0_drop_line(addr);
                    }
                    cycle = self.store_queue.push(cycle, addr);
                    self.watch_hit(addr, old)
                } else if self.mem.local.store::<$n>(addr, b) {
                    None
                } else if $n == 4 && self.mem.window.is_none() && bus.store_plain_register(addr, v) {
                    None
                } else {
                    match self.store_slow(bus, addr, $n, v, old, cycle) {
                        Ok(s) => s,
                        Err(AccessFault::Unmapped) => halt!(HaltReason::StoreFault { addr }),
                        Err(AccessFault::Rejected(reason)) => halt!(HaltReason::Rejected { addr, reason }),
                        Err(AccessFault::NotModelled(what)) => halt!(HaltReason::NotModelled { addr, what }),
                        Err(AccessFault::BadRequest(reason, coord)) => {
                            halt!(HaltReason::BadNocRequest { addr, reason, coord })
                        }
                    }
                };
                pc = pc.wrapping_add(4);
                if let Some(s) = stop {
                    cycle += 1;
                    instret += 1;
                    break s;
                }
            }};
        }
        // CSR access: every implemented CSR is read-only, so csrrw/csrrwi
        // (always a write) and set/clear forms with a non-zero rs1/uimm are
        // illegal, as is any unimplemented CSR.
        macro_rules! csr {
            ($d:expr, $writes:expr) => {{
                match csr::read($d.imm, cycle, instret, self.hartid) {
                    Some(v) if !$writes => {
                        self.effects += 1;
                        x!($d.rd) = v;
                        pc = pc.wrapping_add(4);
                    }
                    _ => halt!(HaltReason::IllegalInstruction { word: self.mem.word_at(pc).unwrap_or(0) }),
                }
            }};
        }

        let stop = loop {
            if cycle >= cycle_limit {
                break Stop::CycleLimit;
            }
            let mut d = self.mem.fetch(pc);
            if (O::ON || FULL) && d.op == Op::NotDecoded {
                // First execution of this word, or code outside L1; the
                // observer and the load queue see the decoded instruction.
                match self.mem.fetch_slow(pc) {
                    Some(nd) => d = nd,
                    None => halt!(HaltReason::FetchFault),
                }
            }
            if FULL && cycle < self.loads.until {
                // Waits for a load's data; an instruction never starts at
                // or past the limit.
                cycle = self.loads.issue_at(&d, cycle);
                if cycle >= cycle_limit {
                    break Stop::CycleLimit;
                }
            }
            if O::ON && !obs.fetched(pc, d.op) {
                break Stop::CycleLimit;
            }
            if O::ON {
                back = false;
            }
            match d.op {
                // A plain run meets a word of L1 for the first time: decoded
                // into L1's cache, it runs at the next turn of the loop. Code
                // outside L1 (a window) never hits that cache: the rest of
                // the run decodes each word before it dispatches.
                Op::NotDecoded if self.mem.l1.contains(pc, 4) => match self.mem.fetch_slow(pc) {
                    Some(_) => continue,
                    None => halt!(HaltReason::FetchFault),
                },
                Op::NotDecoded => {
                    (self.pc, self.cycle, self.instret) = (pc, cycle, instret);
                    return self.run_full(bus, cycle_limit, obs);
                }
                Op::Illegal => halt!(HaltReason::IllegalInstruction { word: d.imm }),
                Op::Lui => alu!(d, |_a, _b, i| i),
                Op::Auipc => alu!(d, |_a, _b, i| pc.wrapping_add(i)),
                Op::Jal => {
                    let link = pc.wrapping_add(4);
                    jump!(pc.wrapping_add(d.imm));
                    x!(d.rd) = link;
                }
                Op::Jalr => {
                    let link = pc.wrapping_add(4);
                    jump!(x!(d.rs1).wrapping_add(d.imm) & !1);
                    x!(d.rd) = link;
                }
                Op::Beq => branch!(d, x!(d.rs1) == x!(d.rs2)),
                Op::Bne => branch!(d, x!(d.rs1) != x!(d.rs2)),
                Op::Blt => branch!(d, (x!(d.rs1) as i32) < (x!(d.rs2) as i32)),
                Op::Bge => branch!(d, (x!(d.rs1) as i32) >= (x!(d.rs2) as i32)),
                Op::Bltu => branch!(d, x!(d.rs1) < x!(d.rs2)),
                Op::Bgeu => branch!(d, x!(d.rs1) >= x!(d.rs2)),
                Op::Lb => load!(d, 1, sext8),
                Op::Lh => load!(d, 2, sext16),
                Op::Lw => load!(d, 4, core::convert::identity),
                Op::Lbu => load!(d, 1, core::convert::identity),
                Op::Lhu => load!(d, 2, core::convert::identity),
                Op::Sb => store!(d, 1),
                Op::Sh => store!(d, 2),
                Op::Sw => store!(d, 4),
                Op::Addi => alu!(d, |a, _b, i| a.wrapping_add(i)),
                Op::Slti => alu!(d, |a, _b, i| ((a as i32) < (i as i32)) as u32),
                Op::Sltiu => alu!(d, |a, _b, i| (a < i) as u32),
                Op::Xori => alu!(d, |a, _b, i| a ^ i),
                Op::Ori => alu!(d, |a, _b, i| a | i),
                Op::Andi => alu!(d, |a, _b, i| a & i),
                Op::Slli => alu!(d, |a, _b, i| a << (i & 31)),
                Op::Srli => alu!(d, |a, _b, i| a >> (i & 31)),
                Op::Srai => alu!(d, |a, _b, i| ((a as i32) >> (i & 31)) as u32),
                Op::Add => alu!(d, |a, b, _i| a.wrapping_add(b)),
                Op::Sub => alu!(d, |a, b, _i| a.wrapping_sub(b)),
                Op::Sll => alu!(d, |a, b, _i| a << (b & 31)),
                Op::Slt => alu!(d, |a, b, _i| ((a as i32) < (b as i32)) as u32),
                Op::Sltu => alu!(d, |a, b, _i| (a < b) as u32),
                Op::Xor => alu!(d, |a, b, _i| a ^ b),
                Op::Srl => alu!(d, |a, b, _i| a >> (b & 31)),
                Op::Sra => alu!(d, |a, b, _i| ((a as i32) >> (b & 31)) as u32),
                Op::Or => alu!(d, |a, b, _i| a | b),
                Op::And => alu!(d, |a, b, _i| a & b),
                Op::Mul => {
                    cycle += MUL_CYCLES - 1;
                    alu!(d, |a, b, _i| a.wrapping_mul(b))
                }
                Op::Mulh => {
                    cycle += MUL_CYCLES - 1;
                    alu!(d, |a, b, _i| ((a as i32 as i64 * b as i32 as i64) >> 32) as u32)
                }
                Op::Mulhsu => {
                    cycle += MUL_CYCLES - 1;
                    alu!(d, |a, b, _i| ((a as i32 as i64).wrapping_mul(b as i64) >> 32) as u32)
                }
                Op::Mulhu => {
                    cycle += MUL_CYCLES - 1;
                    alu!(d, |a, b, _i| ((a as u64 * b as u64) >> 32) as u32)
                }
                // Division by zero and overflow follow the ISA: no trap.
                Op::Div => {
                    cycle += timing::signed_div_cycles(x!(d.rs1), x!(d.rs2)) - 1;
                    alu!(d, |a, b, _i| if b == 0 { u32::MAX } else { (a as i32).wrapping_div(b as i32) as u32 })
                }
                Op::Divu => {
                    cycle += timing::div_cycles(x!(d.rs1), x!(d.rs2)) - 1;
                    alu!(d, |a, b, _i| a.checked_div(b).unwrap_or(u32::MAX))
                }
                Op::Rem => {
                    cycle += timing::signed_div_cycles(x!(d.rs1), x!(d.rs2)) - 1;
                    alu!(d, |a, b, _i| if b == 0 { a } else { (a as i32).wrapping_rem(b as i32) as u32 })
                }
                Op::Remu => {
                    cycle += timing::div_cycles(x!(d.rs1), x!(d.rs2)) - 1;
                    alu!(d, |a, b, _i| a.checked_rem(b).unwrap_or(a))
                }
                Op::Fence => {
                    if l0_on {
                        self.l0.flush();
                    }
                    pc = pc.wrapping_add(4)
                }
                Op::Ecall => halt!(HaltReason::Ecall),
                Op::Ebreak => halt!(HaltReason::Ebreak),
                Op::Csrrw | Op::Csrrwi => csr!(d, true),
                Op::Csrrs | Op::Csrrc | Op::Csrrsi | Op::Csrrci => csr!(d, d.rs1 != 0),
            }
            cycle += 1;
            instret += 1;
            if O::ON && obs.retired(back, self.effects) {
                break Stop::CycleLimit;
            }
        };
        self.pc = pc;
        self.cycle = cycle;
        self.instret = instret;
        stop
    }
}

fn sext8(v: u32) -> u32 {
    v as u8 as i8 as i32 as u32
}

fn sext16(v: u32) -> u32 {
    v as u16 as i16 as i32 as u32
}

#[inline(always)]
const fn misaligned(addr: u32, size: u32) -> bool {
    addr & (size - 1) != 0
}
#[cfg(test)]
#[path = "hart_tests.rs"]
mod tests;
