//! How a core tells the host what it is doing: waypoints, trace records,
//! error and exit records.

use crate::platform::Platform;
use crate::trace;
use crate::CHIP;
use cqlab_abi::mailbox::{DeviceError, ErrorRecord, ExitRecord, ERROR, ERROR_BYTES, ERROR_MAGIC, EXIT, EXIT_MAGIC};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{self, Waypoint};
use zerocopy::IntoBytes;

/// Shows waypoint `w` in this core's waypoint word (`Platform::WAYPOINT`).
pub fn waypoint<P: Platform>(p: &mut P, w: Waypoint) {
    p.write_u32(P::WAYPOINT, w.0);
}

pub fn trace(p: &mut impl Platform, kind: TraceKind, arg0: u32, arg1: u32) {
    let (core, cycle) = (p.core_xy() as u16, p.cycle());
    trace::record(p, core, cycle, kind, arg0, arg1);
}

/// Writes the error record (with the offending bytes at `addr`), sets `!CMD`
/// and halts: a bad command never leaves a core spinning silently.
pub fn fail(p: &mut impl Platform, code: DeviceError, addr: u32, value: u32, rd_ptr: u32, wr_ptr: u32) -> ! {
    let mut rec = ErrorRecord {
        magic: ERROR_MAGIC,
        code: code as u32,
        addr,
        value,
        rd_ptr,
        wr_ptr,
        cycle_lo: p.cycle() as u32,
        ..Default::default()
    };
    let start = addr & !3;
    if start < CHIP.l1_size {
        let n = (ERROR_BYTES as u32).min(CHIP.l1_size - start) & !3;
        p.read_words(start, &mut rec.bytes[..n as usize]);
        rec.nbytes = n;
    }
    p.write_words(ERROR, rec.as_bytes());
    trace(p, TraceKind::Error, code as u32, value);
    waypoint(p, waypoint::BAD_CMD);
    p.halt()
}

/// TERMINATE: writes the exit record, sets `DONE` and halts.
pub fn exit(p: &mut impl Platform, commands: u32) -> ! {
    let rec = ExitRecord { magic: EXIT_MAGIC, commands, cycle: p.cycle() };
    p.write_words(EXIT, rec.as_bytes());
    trace(p, TraceKind::Exit, commands, 0);
    waypoint(p, waypoint::DONE);
    p.halt()
}

/// Spins until `ready` holds, with waypoint `w` showing meanwhile; the
/// waypoint shown before is restored afterwards. Free when already ready.
#[inline(always)]
pub fn wait_until<P: Platform>(p: &mut P, w: Waypoint, mut ready: impl FnMut(&mut P) -> bool) {
    // Each look reads L1, not a copy an earlier one left in the L0 data
    // cache; so do the reads of what the wait guards, after it.
    p.invalidate_l1();
    if ready(p) {
        return;
    }
    let before = p.read_u32(P::WAYPOINT);
    waypoint(p, w);
    loop {
        p.invalidate_l1();
        if ready(p) {
            break;
        }
    }
    p.write_u32(P::WAYPOINT, before);
}

/// Waits for this core's NOC reads to land.
pub fn wait_reads(p: &mut impl Platform) {
    wait_until(p, waypoint::NRW, |p| p.reads_done());
}

/// Waits for this core's NOC writes and atomics to be acknowledged (landed):
/// for ordering with a later signal to another destination.
pub fn wait_writes(p: &mut impl Platform) {
    wait_until(p, waypoint::NWW, |p| p.writes_done());
}

/// Waits for this core's NOC writes to leave L1: before reusing a source.
/// Cheaper than [`wait_writes`]: no round trip.
pub fn wait_writes_sent(p: &mut impl Platform) {
    wait_until(p, waypoint::NWSW, |p| p.writes_sent());
}

/// Waits until the write that made [`Platform::writes_issued`] read `mark`,
/// and every write before it, has left L1 (later writes may still be
/// leaving): before reusing the sources of those writes only, or before an
/// atomic that must follow them on their route.
pub fn wait_sent_until(p: &mut impl Platform, mark: u32) {
    wait_until(p, waypoint::NWSW, |p| cqlab_abi::ring::wrap_ge(p.writes_sent_count(), mark));
}
