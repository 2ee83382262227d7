//! The worker loop shared by every kernel: wait for GO, run, report done.

use crate::platform::Platform;
use crate::report::{trace, wait_until, waypoint};
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{LaunchMsg, GO_SIGNAL, LAUNCH};
use cqlab_abi::mmio;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{GOW, RUN};

/// Runs `kernel` once per GO signal, then increments the dispatcher's
/// completion semaphore named in the launch message.
pub fn serve<P: Platform>(p: &mut P, firmware: FirmwareId, mut kernel: impl FnMut(&mut P, &LaunchMsg)) -> ! {
    loop {
        wait_until(p, GOW, |p| p.read_u32(LAUNCH) == GO_SIGNAL);
        let msg: LaunchMsg = p.read_struct(LAUNCH);
        p.write_u32(LAUNCH, 0);
        waypoint(p, RUN);
        trace(p, TraceKind::KernelStart, msg.seq, firmware as u32);
        kernel(p, &msg);
        // The kernel's own writes complete before the dispatcher hears "done".
        crate::report::wait_writes(p);
        trace(p, TraceKind::KernelEnd, msg.seq, firmware as u32);
        let done =
            NocAddr::unicast(Coord::unpack(msg.done_xy), (mmio::MMIO_BASE + mmio::semaphore(msg.done_sem)) as u64);
        p.noc_atomic_inc(done, 1);
    }
}

/// `noop` kernel: nothing; a launch costs only its dispatch.
pub fn noop(_: &mut impl Platform, _: &LaunchMsg) {}

/// `spin` kernel: busy-waits `args[0]` cycles; with three arguments it then
/// stores `args[2]` at its L1 address `args[1]` (an observable result, for
/// ordering tests).
pub fn spin(p: &mut impl Platform, msg: &LaunchMsg) {
    let start = p.cycle();
    let cycles = msg.args[0] as u64;
    while p.cycle().wrapping_sub(start) < cycles {}
    let addr = msg.args[1];
    if msg.nargs >= 3 && cqlab_abi::memory_map::USER.contains(addr, 4) && addr % 4 == 0 {
        p.write_u32(addr, msg.args[2]);
    }
}
