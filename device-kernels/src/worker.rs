//! The resident worker firmware loop (like tt-metal's `brisc` firmware): wait
//! until the next entry of the launch-message ring carries the next launch
//! count (the dispatcher's GO), run the kernel of the group this core is in, and
//! report done with an atomic increment on the dispatcher's semaphore.
//!
//! The kernels themselves are separate images (`kernel!`), linked for the
//! kernel text address and called through `run`; their bodies live here and
//! in `kernels`.

use crate::platform::Platform;
use crate::report::{wait_until, waypoint};
use core::mem::{offset_of, size_of};
use cqlab_abi::mailbox::{CqConfig, CQ_CONFIG};
use cqlab_abi::mmio;
use cqlab_abi::noc::MAX_CQS;
use cqlab_abi::noc::{dispatcher, worker_index, Coord, NocAddr};
use cqlab_abi::program::{
    config_addr, group_offset, launch_done_sem, launch_entry, rect_index, KernelCtx, KernelGroup, LaunchHeader,
    GROUP_ARGS, GROUP_COUNTS, LAUNCH_TAG, MAX_KERNEL_GROUPS, NO_RECT,
};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{GOW, RUN};

/// Serves launches forever; `run(p, entry, ctx)` calls the kernel at `entry`.
pub fn serve<P: Platform>(p: &mut P, mut run: impl FnMut(&mut P, u32, &KernelCtx)) -> ! {
    let core = p.core_xy();
    let (col, row) = worker_index(Coord::unpack(core)).unwrap_or((u8::MAX, u8::MAX));
    // One launch ring per command queue (the host wrote how many).
    let cqs = p.read_u32(CQ_CONFIG + offset_of!(CqConfig, num_cqs) as u32).clamp(1, MAX_CQS as u32);
    // Launches started per queue; each dispatcher's first LAUNCH is number 1.
    let mut started = [0u32; MAX_CQS as usize];
    // This loop is the trace ring's only writer from here on: records cost
    // their stores only (the per-launch work is what a kernel pays on top).
    let mut records = crate::trace::Cursor::take(p);
    let mut first = 0;
    loop {
        let (q, n) = if cqs == 1 {
            // One queue (the usual case): its next entry only.
            let n = started[0].wrapping_add(1);
            wait_until(p, GOW, |p| p.read_u32(launch_entry(0, n) + LAUNCH_TAG) == n);
            started[0] = n;
            (0, n)
        } else {
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
            (q, n)
        };
        let entry = launch_entry(q, n);
        waypoint(p, RUN);
        // Only the words used, one load each (L1 loads are the slow part):
        // the first group whose rectangle holds this core, up to `NO_RECT`.
        let mut at = entry + group_offset(0);
        for _ in 0..MAX_KERNEL_GROUPS {
            let rect = p.read_u32(at);
            if rect == NO_RECT {
                break;
            }
            let Some(index) = rect_index(rect, col, row) else {
                at += size_of::<KernelGroup>() as u32;
                continue;
            };
            let field = |p: &P, off: usize| p.read_u32(at + off as u32);
            let kernel = field(p, offset_of!(KernelGroup, entry));
            let counts = p.read_u32(at + GROUP_COUNTS);
            let args = p.read_u32(at + GROUP_ARGS);
            let kernel_id = field(p, offset_of!(KernelGroup, kernel_id));
            let seq = p.read_u32(entry + offset_of!(LaunchHeader, seq) as u32);
            let unique_count = counts & 0xffff;
            let ctx = KernelCtx {
                seq,
                index,
                unique_addr: config_addr(args as u16) + 4 * unique_count * index,
                unique_count,
                common_addr: config_addr((args >> 16) as u16),
                common_count: counts >> 16,
                rect,
                kernel_id,
            };
            let cycle = p.cycle();
            records.record(p, core as u16, cycle, TraceKind::KernelStart, seq, kernel_id);
            run(p, kernel, &ctx);
            // The kernel's own writes complete before the dispatcher hears "done".
            crate::report::wait_writes(p);
            let cycle = p.cycle();
            records.record(p, core as u16, cycle, TraceKind::KernelEnd, seq, kernel_id);
            break;
        }
        // Done, to the dispatcher of the queue whose ring held the launch.
        let sem_addr = |s: u32| NocAddr::unicast(dispatcher(q as u8), (mmio::MMIO_BASE + mmio::semaphore(s)) as u64);
        p.noc_atomic_inc_both(sem_addr(launch_done_sem(n)), sem_addr(mmio::sem::WORKERS_DONE), 1);
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
/// arguments included (common args); with three arguments it then stores
/// `args[2]` at its L1 address `args[1]` (an observable result, for ordering
/// tests). With no common args it takes the same three from its unique args.
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
    // Checked before the wait, so the store follows it at once.
    let store = view.common_count >= 3 && cqlab_abi::memory_map::USER.contains(addr, 4) && addr % 4 == 0;
    while p.cycle_lo().wrapping_sub(start) < cycles {}
    if store {
        p.write_u32(addr, value);
    }
}
