//! The known host-bug classes (`HostBug`) beside the firmware's: each shows
//! its symptom on the workload that exposes it, and the correct driver runs
//! the same workload on the same seed. `no-drain` has its symptom test with
//! `cqlab sweep` (tools/cqlab/tests/sweep.rs), `staged-reuse-early` in
//! programs.rs.

use cqlab_driver::dump::{HostSide, Link};
use cqlab_driver::{CoreRange, Device, DriverError, HostBug};
use cqlab_tests::{booted, on_both_chips, TestChip};

/// Device cycles without progress before a wait gives up: short, the hangs
/// below are for good.
const STALL: u64 = 2_000_000;

fn device(
    chip: &TestChip,
    seed: u64,
    bug: Option<HostBug>,
    tweak: impl FnOnce(&mut cqlab_driver::DeviceConfig),
) -> Device {
    booted(chip, seed, |c| {
        c.host_bug = bug;
        c.stall_timeout_cycles = STALL;
        tweak(c);
    })
}

/// The host-loop link of a timeout's wait-for chain: what the device waits
/// for from the host, with what the host had published.
fn host_side(e: &DriverError) -> HostSide {
    let DriverError::Timeout { dump, .. } = e else { panic!("not a timeout: {e}") };
    assert!(dump.deadlock, "the chain closes on the host: {e}");
    match dump.chain.last() {
        Some(Link::HostLoop(Some(side))) => side.clone(),
        other => panic!("the chain ends at {other:?}, not at the host: {e}"),
    }
}

/// Reads round trips through a 2 KiB completion queue: 480-byte read-backs,
/// four records a lap, many laps.
fn completion_laps(chip: &TestChip, bug: Option<HostBug>) -> Result<(), DriverError> {
    let mut dev = device(chip, 7, bug, |c| c.completion_size = 2048);
    let buf = dev.alloc_l1(1, 1, 480).unwrap();
    let mut cq = dev.cq(0).unwrap();
    for round in 0..24u8 {
        let data = vec![round; 480];
        cq.write_buffer(&buf, 0, &data)?;
        assert_eq!(cq.read_buffer(&buf, 0, 480)?, data, "round {round}");
    }
    Ok(())
}

/// Launches and writes through a 4 KiB issue queue with four fetch slots,
/// without waiting: the host waits for issue space and fetch slots again
/// and again.
fn full_issue_queue(chip: &TestChip, bug: Option<HostBug>) -> Result<(), DriverError> {
    let mut dev = device(chip, 10, bug, |c| {
        c.fetch_entries = 4;
        c.issue_size = 4096;
    });
    let buf = dev.alloc_l1(1, 1, 1024).unwrap();
    let mut cq = dev.cq(0).unwrap();
    for i in 0..64u32 {
        cq.launch(CoreRange::single(0, 0), &[i])?;
        cq.write_buffer(&buf, 0, &[i as u8; 1024])?;
    }
    cq.finish()?;
    assert_eq!(cq.read_buffer(&buf, 0, 1024)?, vec![63u8; 1024]);
    Ok(())
}

on_both_chips! {
    /// The completion read pointer written back without its wrap toggle:
    /// from the second lap the dispatcher reads the ring as full and waits
    /// for room the host has freed, while the host waits for the record.
    fn completion_rd_without_toggle_deadlocks_on_the_second_lap(chip) {
        completion_laps(chip, None).unwrap_or_else(|e| panic!("the correct driver, seed 7: {e}"));
        let e = completion_laps(chip, Some(HostBug::CompletionRdWithoutToggle)).expect_err("a deadlock");
        let HostSide::CompletionRoom { cq: 0, wr, published, consumed: Some(consumed) } = host_side(&e) else {
            panic!("the dispatcher does not wait for completion room: {e}");
        };
        // The host consumed up to the dispatcher's write pointer and said so,
        // but without the lap's toggle: the dispatcher sees a full ring.
        assert_eq!(consumed, wr, "{e}");
        assert_eq!(published.offset_bytes(), wr.offset_bytes(), "{e}");
        assert_ne!(published, wr, "the published pointer lacks the toggle: {e}");
    }

    /// The device's read pointer and fetch count loaded once per wait (a
    /// hoisted, non-volatile load): once the issue queue fills, the host
    /// spins on the stale value while the prefetcher, having run everything
    /// rung, waits for the next entry.
    fn hoisted_pointer_load_spins_on_a_full_issue_queue(chip) {
        full_issue_queue(chip, None).unwrap_or_else(|e| panic!("the correct driver, seed 10: {e}"));
        let e = full_issue_queue(chip, Some(HostBug::HoistedPointerLoad)).expect_err("a hang");
        let DriverError::Timeout { wait, dump, .. } = &e else { panic!("not a timeout: {e}") };
        assert!(wait.to_string().contains("issue"), "the host waits for issue space: {e}");
        // The host saw less than the prefetcher had consumed: the dump shows
        // the space the host did not see.
        let host = dump.host.iter().find(|h| h.cq == 0).expect("the host's CQ0 in the dump");
        let device = dump.queues.iter().find(|q| q.cq == 0).expect("CQ0's pointers in the dump");
        assert_ne!(host.fetched_seen, device.fetch_consumed, "{e}");
        assert_eq!(host_side(&e), HostSide::FetchEntry { cq: 0, consumed: host.fetch_rung, rung: Some(host.fetch_rung) });
    }
}
