//! The host mutant no race workload reaches (they run fast dispatch):
//! `host-slow-launch-before-done`, slow dispatch writing a program's
//! binaries, args and launch through the BAR without first waiting for the
//! workers of the program before. The random program streams under slow
//! dispatch catch it on a Wormhole and a Blackhole: a launch lands while
//! the workers still run the one before and is lost, and the host waits for
//! workers that never finish. Host jitter hides it (the host is slow enough
//! that the workers finish anyway); the correct driver passes the stream.

use cqlab_driver::HostSchedule;
use cqlab_tests::{booted, on_both_chips, TestChip};
use cqlab_workloads::program_stream;

fn stream(chip: &TestChip, seed: u64, mutant: Option<&'static str>) -> Result<(), String> {
    let mut dev = booted(chip, seed, |cfg| {
        cfg.slow_dispatch = true;
        cfg.host_schedule = HostSchedule::default();
        cfg.host_mutant = mutant;
        cfg.stall_timeout_cycles = 2_000_000;
    });
    program_stream::run(&mut dev, seed, 150).map_err(|e| e.to_string())
}

on_both_chips! {
    fn slow_launch_before_done_loses_a_launch_of_the_slow_dispatch_program_streams(chip) {
        let what = format!("{} seed 7, host jitter off", chip.name());
        stream(chip, 7, None).unwrap_or_else(|e| panic!("the correct driver, {what}: {e}"));
        let e = stream(chip, 7, Some("host-slow-launch-before-done")).expect_err(&what);
        assert!(e.contains("timeout waiting for workers launched on CQ"), "{what}: {e}");
    }
}
