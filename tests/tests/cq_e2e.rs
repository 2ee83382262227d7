//! End to end on the embedded simulator: the driver, the simulator and the real firmware ELFs.
//! The tests themselves are `cqlab_tests::e2e`'s (shared with the other backends); the ones
//! here need the embedded simulator's fault injection.

use cqlab_driver::CoreRange;
use cqlab_tests::Kind;

macro_rules! on_embedded {
    ($($name:ident),* $(,)?) => {
        $(#[test]
        fn $name() {
            cqlab_tests::e2e::$name(Kind::Embedded)
        })*
    };
}

cqlab_tests::every_e2e_test!(on_embedded);

#[test]
fn a_trace_replayed_right_after_capture_under_jitter_sees_its_upload() {
    // Found by `cqlab race` (seed 3 with every amplifier on): EXEC_BUF read
    // the trace before the dispatcher's upload writes had landed.
    for seed in 1..=6 {
        let mut sim = cqlab_sim::config::SimConfig { seed, ..Default::default() };
        sim.faults.noc_jitter_cycles = 5000;
        let cfg = cqlab_driver::DeviceConfig { firmware_dir: cqlab_tests::firmware_dir(), ..Default::default() };
        let mut dev = cqlab_driver::Device::embedded(sim, cfg).unwrap();
        dev.boot().unwrap();
        let mut cq = dev.cq(0).unwrap();
        cq.begin_trace().unwrap();
        cq.launch(CoreRange::new((0, 0), (7, 7)), &[]).unwrap();
        let trace = cq.end_trace().unwrap();
        cq.execute_trace(&trace).unwrap();
        cq.finish().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}
