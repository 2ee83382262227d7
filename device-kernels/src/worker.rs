//! The resident worker firmware loop (like tt-metal's `brisc` firmware): wait
//! for the GO word to move past the launches started, take the next entry of
//! the launch-message ring, run the kernel of the group this core is in, and
//! report done with an atomic increment on the dispatcher's semaphore.
//!
//! The kernels themselves are separate images (`kernel!`), linked for the
//! kernel text address and called through `run`; their bodies live here and
//! in `kernels`.

use crate::platform::Platform;
use crate::report::{trace, wait_until, waypoint};
use cqlab_abi::mmio;
use cqlab_abi::noc::{worker_index, Coord, NocAddr};
use cqlab_abi::program::{
    group_offset, launch_entry, rect_index, KernelCtx, KernelGroup, LaunchHeader, GO_WORD, MAX_KERNEL_GROUPS,
};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{GOW, RUN};

/// Serves launches forever; `run(p, entry, ctx)` calls the kernel at `entry`.
pub fn serve<P: Platform>(p: &mut P, mut run: impl FnMut(&mut P, u32, &KernelCtx)) -> ! {
    let (col, row) = worker_index(Coord::unpack(p.core_xy())).unwrap_or((u8::MAX, u8::MAX));
    // Launches started; the dispatcher's first GO writes 1.
    let mut started = 0u32;
    loop {
        wait_until(p, GOW, |p| p.read_u32(GO_WORD) != started);
        started = started.wrapping_add(1);
        waypoint(p, RUN);
        let entry = launch_entry(started);
        let header: LaunchHeader = p.read_struct(entry);
        for g in 0..header.ngroups.min(MAX_KERNEL_GROUPS as u32) {
            let at = entry + group_offset(g);
            let Some(index) = rect_index(p.read_u32(at), col, row) else { continue };
            let group: KernelGroup = p.read_struct(at);
            let ctx = KernelCtx {
                seq: header.seq,
                index,
                unique_addr: group.unique_addr,
                unique_count: group.unique_count,
                common_addr: group.common_addr,
                common_count: group.common_count,
                rect: group.rect,
                kernel_id: group.kernel_id,
            };
            trace(p, TraceKind::KernelStart, header.seq, group.kernel_id);
            run(p, group.entry, &ctx);
            // The kernel's own writes complete before the dispatcher hears "done".
            crate::report::wait_writes(p);
            trace(p, TraceKind::KernelEnd, header.seq, group.kernel_id);
            break;
        }
        let done = NocAddr::unicast(Coord::unpack(header.done_xy), (mmio::MMIO_BASE + mmio::semaphore(header.done_sem)) as u64);
        p.noc_atomic_inc(done, 1);
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

/// `spin` kernel: busy-waits `args[0]` cycles (common args); with three
/// arguments it then stores `args[2]` at its L1 address `args[1]` (an
/// observable result, for ordering tests). With no common args it takes the
/// same three from its unique args.
pub fn spin(p: &mut impl Platform, ctx: &KernelCtx) {
    let from_unique = ctx.common_count == 0;
    let view = if from_unique {
        KernelCtx { common_addr: ctx.unique_addr, common_count: ctx.unique_count, ..*ctx }
    } else {
        *ctx
    };
    let [cycles, addr, value] = common_args::<3>(p, &view);
    let start = p.cycle();
    while p.cycle().wrapping_sub(start) < cycles as u64 {}
    if view.common_count >= 3 && cqlab_abi::memory_map::USER.contains(addr, 4) && addr % 4 == 0 {
        p.write_u32(addr, value);
    }
}
