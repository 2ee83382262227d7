//! Same seed, same program: bit-identical device state, on a Wormhole and a
//! Blackhole.

use cqlab_tests::{booted, on_both_chips, TestChip};

fn digest_after(chip: &TestChip, seed: u64) -> u64 {
    let mut dev = booted(chip, seed, |_| {});
    let buf = dev.alloc_dram(8192, 1024).unwrap();
    let grid = dev.chip().grid();
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &[3u8; 8192]).unwrap();
    cq.launch(grid, &[9]).unwrap();
    let ev = cq.record_event().unwrap();
    let mut cq1 = dev.cq(1).unwrap();
    cq1.wait_for_event(ev).unwrap();
    cq1.read_buffer(&buf, 0, 8192).unwrap();
    cq1.finish().unwrap();
    dev.backend().introspect().expect("the simulator has introspection").digest().unwrap()
}

on_both_chips! {
    fn same_seed_gives_identical_device_state(chip) {
        assert_eq!(digest_after(chip, 21), digest_after(chip, 21), "{} seed 21 replayed differently", chip.name());
    }
}
