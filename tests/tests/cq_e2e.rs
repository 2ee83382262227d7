//! End to end on the embedded simulator: the driver, the simulator and the real firmware ELFs.
//! The tests themselves are `cqlab_tests::e2e`'s (shared with the other backends); the ones
//! here need the embedded simulator's fault injection.

use cqlab_tests::{on_both_chips, Kind};

macro_rules! on_embedded {
    ($($name:ident),* $(,)?) => {
        on_both_chips! {
            $(fn $name(chip) {
                cqlab_tests::e2e::$name(Kind::Embedded, chip)
            })*
        }
    };
}

cqlab_tests::every_e2e_test!(on_embedded);

on_both_chips! {
    fn a_trace_replayed_right_after_capture_under_jitter_sees_its_upload(chip) {
        // Found by `cqlab race` (seed 3 with every amplifier on): EXEC_BUF read
        // the trace before the dispatcher's upload writes had landed.
        for seed in 1..=6 {
            let mut sim = chip.sim(seed);
            sim.faults.noc_jitter_cycles = 5000;
            let mut dev = cqlab_driver::Device::embedded(sim, cqlab_tests::config(chip)).unwrap();
            dev.boot().unwrap();
            let grid = dev.chip().grid();
            let mut cq = dev.cq(0).unwrap();
            cq.begin_trace().unwrap();
            cq.launch(grid, &[]).unwrap();
            let trace = cq.end_trace().unwrap();
            cq.execute_trace(&trace).unwrap();
            cq.finish().unwrap_or_else(|e| panic!("{}: seed {seed}: {e}", chip.name()));
        }
    }
}
