//! What every firmware does first: say who it is and that it is alive.

use crate::memory::Memory;
use crate::trace;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{self, AliveRecord, ALIVE, ALIVE_MAGIC, WAYPOINT};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{Waypoint, BOOT};
use cqlab_abi::ABI_VERSION;
use zerocopy::IntoBytes;

pub fn set_waypoint(mem: &mut impl Memory, w: Waypoint) {
    mem.write_u32(WAYPOINT, w.0);
}

/// BRISC: initialises the trace ring, records a boot event and publishes
/// the alive record (last, so the host never sees an alive core with a stale
/// ring).
pub fn announce(mem: &mut impl Memory, firmware: FirmwareId, core_xy: u32, build_id: u32, cycle: u64) {
    set_waypoint(mem, BOOT);
    trace::init(mem);
    trace::record(mem, core_xy as u16, cycle, TraceKind::Boot, firmware as u32, ABI_VERSION);
    publish(mem, ALIVE, firmware, core_xy, build_id, cycle);
}

/// A subordinate core of a worker tile (processor index 1..=4): publishes
/// its alive record in its mailbox (the trace ring is BRISC's).
pub fn announce_subordinate(
    mem: &mut impl Memory,
    processor: usize,
    firmware: FirmwareId,
    core_xy: u32,
    build_id: u32,
    cycle: u64,
) {
    let at = mailbox::subordinate(processor);
    mem.write_u32(at + mailbox::SUB_WAYPOINT, BOOT.0);
    publish(mem, at, firmware, core_xy, build_id, cycle);
}

/// Writes an alive record at `at`, its magic last: a host (or BRISC)
/// polling the record never sees it complete before every other field is.
fn publish(mem: &mut impl Memory, at: u32, firmware: FirmwareId, core_xy: u32, build_id: u32, cycle: u64) {
    let alive = AliveRecord {
        magic: 0,
        firmware_id: firmware as u32,
        abi_version: ABI_VERSION,
        build_id,
        core_xy,
        _reserved: 0,
        boot_cycle: cycle,
    };
    mem.write_words(at, alive.as_bytes());
    mem.write_u32(at, ALIVE_MAGIC);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::TestL1;
    use zerocopy::FromBytes;

    #[test]
    fn announce_writes_alive_record_and_boot_waypoint() {
        let mut l1 = TestL1::default();
        announce(&mut l1, FirmwareId::Dispatch, 0x0112, 0xabcd, 77);
        let alive = AliveRecord::read_from_bytes(l1.bytes(ALIVE, 32)).unwrap();
        assert_eq!(alive.magic, ALIVE_MAGIC);
        assert_eq!(alive.firmware_id, FirmwareId::Dispatch as u32);
        assert_eq!(alive.abi_version, ABI_VERSION);
        assert_eq!((alive.build_id, alive.core_xy, alive.boot_cycle), (0xabcd, 0x0112, 77));
        assert_eq!(l1.read_u32(WAYPOINT), BOOT.0);
    }
}
