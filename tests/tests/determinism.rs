//! Same seed, same program: bit-identical device state, on a Wormhole and a
//! Blackhole.

use cqlab_tests::{booted, on_both_chips, reference_program, TestChip};

fn digest_after(chip: &TestChip, seed: u64) -> u64 {
    let mut dev = booted(chip, seed, |_| {});
    reference_program(&mut dev, &format!("{} seed {seed}", chip.name()));
    dev.backend().introspect().expect("the simulator has introspection").digest().unwrap()
}

on_both_chips! {
    fn same_seed_gives_identical_device_state(chip) {
        assert_eq!(digest_after(chip, 21), digest_after(chip, 21), "{} seed 21 replayed differently", chip.name());
    }
}
