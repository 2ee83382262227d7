//! The host mutant no race workload reaches (they run fast dispatch):
//! `host-slow-launch-before-done`, slow dispatch writing a program's
//! binaries, args and launch through the BAR without first waiting for the
//! workers of the program before. On a Wormhole and a Blackhole: while one
//! worker runs a long kernel, more launches than its launch ring holds
//! overwrite the launch it has not read yet; it waits for that launch
//! forever and the host times out waiting for it. The correct driver waits
//! and passes. (The random slow-dispatch program streams caught it on the
//! uncalibrated timing; with the BAR's calibrated write cost the host is
//! slow enough that their short kernels finish first.)

use cqlab_abi::program::LAUNCH_RING_ENTRIES;
use cqlab_driver::{CoreRange, HostSchedule, Placement};
use cqlab_tests::{booted, on_both_chips, TestChip};

/// A 200,000-cycle kernel on worker (1, 1), then one launch more than the
/// ring holds on worker (0, 0), then one on (1, 1) whose result is read.
fn launches_past_a_long_kernel(chip: &TestChip, mutant: Option<&'static str>) -> Result<(), String> {
    let mut dev = booted(chip, 7, |cfg| {
        cfg.slow_dispatch = true;
        cfg.worker_kernel = "spin".into();
        cfg.host_schedule = HostSchedule::default();
        cfg.host_mutant = mutant;
        cfg.stall_timeout_cycles = 2_000_000;
    });
    let l1 = dev.alloc_l1(1, 1, 16).map_err(|e| e.to_string())?;
    let Placement::L1 { addr, .. } = l1.placement else { unreachable!("an L1 buffer") };
    let mut cq = dev.cq(0).map_err(|e| e.to_string())?;
    let mut launch = |core, args: &[u32]| cq.launch(core, args).map_err(|e| e.to_string());
    launch(CoreRange::single(1, 1), &[200_000, addr, 1])?;
    for k in 0..=LAUNCH_RING_ENTRIES {
        launch(CoreRange::single(0, 0), &[50, addr + 4, k])?;
    }
    launch(CoreRange::single(1, 1), &[50, addr, 2])?;
    let got = cq.read_buffer(&l1, 0, 4).map_err(|e| e.to_string())?;
    if got != 2u32.to_le_bytes() {
        return Err(format!("the last kernel's result: read {got:?}, expected 2"));
    }
    cq.finish().map_err(|e| e.to_string())
}

on_both_chips! {
    fn slow_launch_before_done_loses_a_launch_queued_behind_a_long_kernel(chip) {
        let what = format!("{} seed 7", chip.name());
        launches_past_a_long_kernel(chip, None).unwrap_or_else(|e| panic!("the correct driver, {what}: {e}"));
        let e = launches_past_a_long_kernel(chip, Some("host-slow-launch-before-done")).expect_err(&what);
        assert!(e.contains("timeout waiting for workers launched on CQ0"), "{what}: {e}");
    }
}
