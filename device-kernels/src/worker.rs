//! The resident worker firmware (like tt-metal's `brisc`, `ncrisc` and
//! `trisc` firmware): BRISC waits until the next entry of the
//! launch-message ring carries the next launch count (the dispatcher's
//! GO), starts each subordinate core (NCRISC, TRISC0-2) that has a kernel
//! in the group holding this tile with one store, runs its own, waits for
//! the subordinates to finish and reports done with one pair of atomic
//! increments on the dispatcher's semaphores. Each subordinate core waits
//! for its `go` byte, reads its kernel and args from the group itself, runs
//! the kernel and clears the byte (`mailbox::SubordinateRun`, tt-metal's
//! `subordinate_sync`).
//!
//! The kernels themselves are separate images (`kernel!`), linked for the
//! kernel text address and called through `run`; their bodies live here and
//! in `kernels`.

use crate::platform::Platform;
use crate::report::{wait_until, waypoint};
use crate::trace::core_kind;
use core::mem::size_of;
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{
    self, run_sync_byte, run_sync_shift, ALIVE_MAGIC, RUN_GROUP, RUN_INDEX, RUN_SEQ, RUN_SYNC_DONE, RUN_SYNC_GO,
};
use cqlab_abi::noc::{Coord, NocAddr, MAX_CQS};
use cqlab_abi::program::{
    config_addr, group_kernel, group_offset, launch_done_sem, launch_entry, rect_index, unique_args, KernelCtx,
    KernelGroup, LaunchHeader, GROUP_KERNEL_ID, KERNEL_ARGS, KERNEL_COUNTS, KERNEL_ENTRY, LAUNCH_TAG,
    MAX_KERNEL_GROUPS, NO_KERNEL, NO_RECT,
};
use cqlab_abi::semaphore;
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{BOOT, GOW, RUN, SUBA, SUBW};

/// Processor indices of a worker tile's subordinate cores.
const SUBORDINATES: core::ops::RangeInclusive<usize> = 1..=4;

/// BRISC of a worker tile boots: checks the `NocMap`, clears the
/// subordinates' alive magic and their `SubordinateRun` word, has `release` start
/// the four subordinate cores (`hal::release_subordinates` on the device),
/// waits until each has published its alive record, then publishes
/// BRISC's: a host that sees it knows the whole tile runs.
pub fn boot_brisc<P: Platform>(p: &mut P, build_id: u32, release: impl FnOnce(&mut P)) {
    waypoint(p, BOOT);
    crate::places::check(p);
    for i in SUBORDINATES {
        p.write_u32(mailbox::subordinate(i), 0);
    }
    p.write_u32(mailbox::SUBORDINATE_RUN, 0);
    release(p);
    wait_until(p, SUBA, |p| SUBORDINATES.clone().all(|i| p.read_u32(mailbox::subordinate(i)) == ALIVE_MAGIC));
    let cycle = p.cycle();
    crate::boot::announce(p, FirmwareId::Worker, p.core_xy(), build_id, cycle);
}

/// Serves launches forever; `run(p, entry, ctx)` calls the kernel at `entry`.
///
/// Kernel-bound dispatch is paced by this loop: between two kernels a worker
/// runs nothing else, so its cost is what a program costs on top of its
/// kernel. The hot path is laid out straight (the waits, a tile outside the
/// first group, and the trace ring's wrap are out of line), and it reads
/// only the words it needs from L1: the tag, the first group's rectangle,
/// the five cores' entries, BRISC's counts and args words, the kernel id,
/// the sequence number, and the NIU's ack counters for the barrier before
/// "done".
pub fn serve<P: Platform>(p: &mut P, mut run: impl FnMut(&mut P, u32, &KernelCtx)) -> ! {
    let core = p.core_xy();
    let grid = crate::places::grid(p);
    let (col, row) = grid.logical(Coord::unpack(core)).unwrap_or((u8::MAX, u8::MAX));
    // One launch ring per command queue (the host wrote how many).
    let cqs = crate::places::num_cqs(p).clamp(1, MAX_CQS as u32);
    let mut dispatchers = [Coord::new(0, 0); MAX_CQS as usize];
    for (q, d) in dispatchers.iter_mut().enumerate().take(cqs as usize) {
        *d = crate::places::dispatcher(p, q as u32);
    }
    // This loop is the trace ring's only writer from here on: records cost
    // their stores only (the per-launch work is what a kernel pays on top).
    let mut worker = Worker {
        started: core_kind(core as u16, TraceKind::KernelStart),
        ended: core_kind(core as u16, TraceKind::KernelEnd),
        col,
        row,
        dispatchers,
        records: crate::trace::Cursor::take(p),
    };
    // Shown whenever the worker is not waiting: every wait puts it back.
    waypoint(p, RUN);
    if cqs == 1 {
        // One queue (the usual case): its next entry only. Launches
        // started so far; the dispatcher's first LAUNCH is number 1.
        let mut n = 0u32;
        loop {
            n = n.wrapping_add(1);
            let entry = launch_entry(0, n);
            // The dispatcher wrote the entry: it and the tag are read from
            // L1, not L0 copies of the launch eight before (wait_tag looks
            // again the same way).
            p.invalidate_l1();
            if p.read_u32(entry + LAUNCH_TAG) != n {
                wait_tag(p, entry, n);
            }
            worker.launch(p, 0, n, entry, &mut run);
        }
    }
    // Launches started per queue.
    let mut started = [0u32; MAX_CQS as usize];
    let mut first = 0;
    loop {
        // The next tagged entry of any queue, looking at each in turn.
        let mut q = first;
        wait_until(p, GOW, |p| {
            let mut c = first;
            for _ in 0..cqs {
                let n = started[c as usize % MAX_CQS as usize].wrapping_add(1);
                if p.read_u32(launch_entry(c, n) + LAUNCH_TAG) == n {
                    q = c;
                    return true;
                }
                c = if c + 1 == cqs { 0 } else { c + 1 };
            }
            false
        });
        first = if q + 1 == cqs { 0 } else { q + 1 };
        let n = started[q as usize % MAX_CQS as usize].wrapping_add(1);
        started[q as usize % MAX_CQS as usize] = n;
        worker.launch(p, q, n, launch_entry(q, n), &mut run);
    }
}

/// Waits until ring entry `entry` carries tag `n` (the GO of launch `n`);
/// out of line, as the dispatcher usually has written it ahead.
#[cold]
#[inline(never)]
fn wait_tag(p: &mut impl Platform, entry: u32, n: u32) {
    wait_until(p, GOW, |p| p.read_u32(entry + LAUNCH_TAG) == n);
}

/// The kernel's NOC writes and atomics have landed (`report::wait_writes`),
/// with the wait out of line: most kernels' writes have landed by the time
/// they return.
#[inline(always)]
fn kernel_writes_landed(p: &mut impl Platform) {
    if !const { crate::mutant::dropped("worker-done-before-writes-landed") } && !p.writes_done() {
        wait_writes(p);
    }
}

#[cold]
#[inline(never)]
fn wait_writes(p: &mut impl Platform) {
    crate::report::wait_writes(p);
}

/// What the loop keeps between launches (in registers or local memory).
struct Worker {
    /// Trace record words of this tile's `KernelStart` and `KernelEnd`.
    started: u32,
    ended: u32,
    col: u8,
    row: u8,
    /// Each queue's dispatcher, from the `NocMap`.
    dispatchers: [Coord; MAX_CQS as usize],
    records: crate::trace::Cursor,
}

impl Worker {
    /// Runs launch `n` of queue `q` (ring entry `entry`, its tag seen): the
    /// kernels of the first group whose rectangle holds this tile, if any,
    /// then "done" to the queue's dispatcher.
    #[inline(always)]
    fn launch<P: Platform>(
        &mut self,
        p: &mut P,
        q: u32,
        n: u32,
        entry: u32,
        run: &mut impl FnMut(&mut P, u32, &KernelCtx),
    ) {
        let at = entry + group_offset(0);
        let rect = p.read_u32(at);
        // Almost always the first group; the others (and `NO_RECT`) out of line.
        match rect_index(rect, self.col, self.row) {
            Some(index) => {
                self.run_group(p, entry, at, rect, index, run);
                self.done(p, q, n);
            }
            None => self.later_group(p, q, n, entry, at, rect, run),
        }
    }

    /// Runs the kernels of the group at `at` (rectangle `rect`, this tile's
    /// index in it `index`) of the launch at `entry`: the subordinates'
    /// first (they run while BRISC runs its own), then BRISC's, then it
    /// waits for the subordinates it started.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn run_group<P: Platform>(
        &mut self,
        p: &mut P,
        entry: u32,
        at: u32,
        rect: u32,
        index: u32,
        run: &mut impl FnMut(&mut P, u32, &KernelCtx),
    ) {
        let kernel_id = p.read_u32(at + GROUP_KERNEL_ID);
        let seq = p.read_u32(entry + core::mem::offset_of!(LaunchHeader, seq) as u32);
        let cycle = p.cycle();
        self.records.record_word(p, self.started, cycle, seq, kernel_id);
        let base = KernelCtx { seq, index, rect, kernel_id, ..KernelCtx::default() };
        let mut go = 0u32;
        for i in SUBORDINATES {
            if p.read_u32(at + group_kernel(i) + KERNEL_ENTRY) != NO_KERNEL {
                go |= (RUN_SYNC_GO as u32) << run_sync_shift(i);
            }
        }
        if go != 0 {
            start_subordinates(p, go, at, index, seq);
        }
        let kernel = p.read_u32(at + group_kernel(0) + KERNEL_ENTRY);
        if kernel != NO_KERNEL {
            let ctx = ctx_for(p, at, 0, base);
            run(p, kernel, &ctx);
            // The kernel's own writes complete before the dispatcher hears "done".
            kernel_writes_landed(p);
        }
        if go != 0 {
            wait_subordinates(p);
        }
        let cycle = p.cycle();
        self.records.record_word(p, self.ended, cycle, seq, kernel_id);
    }

    /// The group after the first (at `at`, rectangle `rect`) whose
    /// rectangle holds this tile, run; none at the first `NO_RECT` or after
    /// `MAX_KERNEL_GROUPS`.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn later_group<P: Platform>(
        &mut self,
        p: &mut P,
        q: u32,
        n: u32,
        entry: u32,
        mut at: u32,
        mut rect: u32,
        run: &mut impl FnMut(&mut P, u32, &KernelCtx),
    ) {
        for _ in 1..MAX_KERNEL_GROUPS {
            if rect == NO_RECT {
                break;
            }
            at += size_of::<KernelGroup>() as u32;
            rect = p.read_u32(at);
            if let Some(index) = rect_index(rect, self.col, self.row) {
                self.run_group(p, entry, at, rect, index, run);
                break;
            }
        }
        self.done(p, q, n);
    }

    /// Launch `n` of queue `q` is done on this tile: one increment of the
    /// dispatcher's semaphore for its ring entry and one of its `WORKERS_DONE`.
    #[inline(always)]
    fn done(&self, p: &mut impl Platform, q: u32, n: u32) {
        let d = self.dispatchers[q as usize % MAX_CQS as usize];
        let sem_addr = |s: u32| NocAddr::unicast(d, semaphore::addr(s) as u64);
        p.noc_atomic_inc_both(sem_addr(launch_done_sem(n)), sem_addr(semaphore::WORKERS_DONE), 1);
    }
}

/// The `KernelCtx` of core `i`'s kernel in the group at `at`: `base` with
/// that kernel's args placed for this tile.
#[inline(always)]
fn ctx_for(p: &impl Platform, at: u32, i: usize, base: KernelCtx) -> KernelCtx {
    let counts = p.read_u32(at + group_kernel(i) + KERNEL_COUNTS);
    let args = p.read_u32(at + group_kernel(i) + KERNEL_ARGS);
    let (unique_addr, unique_count) = unique_args(counts, args, base.index);
    KernelCtx {
        unique_addr,
        unique_count,
        common_addr: config_addr((args >> 16) as u16),
        common_count: counts >> 16,
        processor: i as u32,
        ..base
    }
}

/// Starts the subordinates whose byte of `go` is `RUN_SYNC_GO` on the group
/// at `at`: the launch first, the one `sync` word last.
#[inline(always)]
fn start_subordinates(p: &mut impl Platform, go: u32, at: u32, index: u32, seq: u32) {
    let run = mailbox::SUBORDINATE_RUN;
    p.write_u32(run + RUN_GROUP, at);
    p.write_u32(run + RUN_INDEX, index);
    p.write_u32(run + RUN_SEQ, seq);
    p.write_u32(run, go);
}

/// Waits until every subordinate it started has cleared its `sync` byte.
#[cold]
#[inline(never)]
fn wait_subordinates<P: Platform>(p: &mut P) {
    wait_until(p, SUBW, |p| p.read_u32(mailbox::SUBORDINATE_RUN) == 0);
}

/// A subordinate core of a worker tile (`processor`, 1..=4): publishes its
/// alive record, then for each launch BRISC starts it on reads its kernel
/// and args from the launch's group, has `run(p, entry, ctx)` call the
/// kernel at `entry`, and once the kernel's NOC writes have landed clears
/// its `sync` byte.
pub fn subordinate<P: Platform>(
    p: &mut P,
    processor: Processor,
    build_id: u32,
    mut run: impl FnMut(&mut P, u32, &KernelCtx),
) -> ! {
    let i = processor.index();
    let cycle = p.cycle();
    let xy = p.core_xy();
    crate::boot::announce_subordinate(p, i, FirmwareId::worker(processor), xy, build_id, cycle);
    waypoint(p, RUN);
    let started = |p: &mut P| (p.read_u32(mailbox::SUBORDINATE_RUN) >> run_sync_shift(i)) as u8 == RUN_SYNC_GO;
    loop {
        // BRISC wrote the run word and the group: read L1, not L0 copies.
        p.invalidate_l1();
        if !started(p) {
            wait_until(p, GOW, started);
        }
        let at = p.read_u32(mailbox::SUBORDINATE_RUN + RUN_GROUP);
        let base = KernelCtx {
            seq: p.read_u32(mailbox::SUBORDINATE_RUN + RUN_SEQ),
            index: p.read_u32(mailbox::SUBORDINATE_RUN + RUN_INDEX),
            rect: p.read_u32(at),
            kernel_id: p.read_u32(at + GROUP_KERNEL_ID),
            ..KernelCtx::default()
        };
        let kernel = p.read_u32(at + group_kernel(i) + KERNEL_ENTRY);
        run(p, kernel, &ctx_for(p, at, i, base));
        kernel_writes_landed(p);
        p.write_u8(run_sync_byte(i), RUN_SYNC_DONE);
    }
}

/// Up to `N` common args of a launch (missing ones read as 0) and how many there are.
pub fn common_args<const N: usize>(p: &impl Platform, ctx: &KernelCtx) -> [u32; N] {
    let mut a = [0u32; N];
    for (i, v) in a.iter_mut().enumerate().take(ctx.common_count as usize) {
        *v = p.read_u32(ctx.common_addr + 4 * i as u32);
    }
    a
}

/// `noop` kernel: nothing; a launch costs only its dispatch.
pub fn noop(_: &mut impl Platform, _: &KernelCtx) {}

/// `spin` kernel: returns `args[0]` cycles after it was called, reading its
/// arguments included (common args; later when reading and digesting them
/// takes longer); with three arguments or more it then
/// stores `args[2]` XOR a digest of the arguments after the third at its L1
/// address `args[1]` (an observable result, for ordering tests, that also
/// shows any argument word received wrong:
/// `cqlab_abi::program::spin_stored_value`). With no common args it takes
/// them from its unique args.
pub fn spin(p: &mut impl Platform, ctx: &KernelCtx) {
    // The low word is enough for a u32 count (wrapping difference), and
    // one CSR read per turn keeps the overshoot small.
    let start = p.cycle_lo();
    let from_unique = ctx.common_count == 0;
    let view = if from_unique {
        KernelCtx { common_addr: ctx.unique_addr, common_count: ctx.unique_count, ..*ctx }
    } else {
        *ctx
    };
    let [cycles, addr, value] = common_args::<3>(p, &view);
    // Checked and digested before the wait, so the store follows it at once.
    let store = view.common_count >= 3 && cqlab_abi::memory_map::USER.contains(addr, 4) && addr % 4 == 0;
    let digest = if store && view.common_count > 3 { args_digest(p, &view) } else { 0 };
    while p.cycle_lo().wrapping_sub(start) < cycles {}
    if store {
        spin_store(p, addr, value ^ digest);
    }
}

/// The digest of a `spin`'s arguments after the third (read from `view`'s
/// common args), out of line: the usual spin has none.
#[cold]
#[inline(never)]
fn args_digest(p: &impl Platform, view: &KernelCtx) -> u32 {
    use cqlab_abi::program::{args_digest_step, ARGS_DIGEST_BASIS};
    (3..view.common_count).fold(ARGS_DIGEST_BASIS, |d, i| args_digest_step(d, p.read_u32(view.common_addr + 4 * i)))
}

/// `spin`'s optional store, out of line: the usual spin returns straight
/// from its loop.
#[cold]
#[inline(never)]
fn spin_store(p: &mut impl Platform, addr: u32, value: u32) {
    p.write_u32(addr, value);
}
