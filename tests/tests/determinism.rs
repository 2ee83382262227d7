//! Same seed, same program: bit-identical device state, on a Wormhole and a
//! Blackhole; with the host's accesses interleaved by a host schedule
//! (jitter and PCT points) too, and whether the simulator fast-forwards
//! idle time or not.

use cqlab_driver::{Device, HostPct, HostSchedule};
use cqlab_tests::{booted, config, on_both_chips, reference_program, TestChip};

fn digest_after(chip: &TestChip, seed: u64) -> u64 {
    let mut dev = booted(chip, seed, |_| {});
    reference_program(&mut dev, &format!("{} seed {seed}", chip.name()));
    dev.backend().introspect().expect("the simulator has introspection").digest().unwrap()
}

/// The reference program under host schedule `host`: the device state's
/// digest and the device time at the end.
fn run_scheduled(chip: &TestChip, seed: u64, host: HostSchedule, fast_forward: bool) -> (u64, u64) {
    run_with(chip, host, cqlab_sim::config::SimConfig { fast_forward, ..chip.sim(seed) })
}

/// The reference program on a simulator configured as `sim`: digest and
/// device time at the end.
fn run_with(chip: &TestChip, host: HostSchedule, sim: cqlab_sim::config::SimConfig) -> (u64, u64) {
    let (seed, fast_forward) = (sim.seed, sim.fast_forward);
    let cfg = cqlab_driver::DeviceConfig { host_schedule: host, ..config(chip) };
    let mut dev = Device::embedded(sim, cfg).expect("simulator starts");
    let what = format!("{} seed {seed} host {host:?} fast-forward {fast_forward}", chip.name());
    dev.boot().unwrap_or_else(|e| panic!("{what}: boot: {e}"));
    reference_program(&mut dev, &what);
    let digest = dev.backend().introspect().expect("the simulator has introspection").digest().unwrap();
    (digest, dev.now())
}

/// Runs `seed` under host jitter and PCT with a model option `set` on:
/// twice with fast-forward and once without, which must agree bit for bit.
/// Returns that run and one with the option off, (digest, device time) each.
fn replays_with_option(
    chip: &TestChip,
    seed: u64,
    what: &str,
    set: impl Fn(&mut cqlab_sim::config::SimConfig, bool),
) -> ((u64, u64), (u64, u64)) {
    let run = |on, fast_forward| {
        let mut sim = cqlab_sim::config::SimConfig { fast_forward, ..chip.sim(seed) };
        set(&mut sim, on);
        run_with(chip, JITTER_AND_PCT, sim)
    };
    let first = run(true, true);
    assert_eq!(first, run(true, true), "{}: seed {seed} with {what} replayed differently", chip.name());
    assert_eq!(first, run(true, false), "{}: fast-forward changed a run with {what}", chip.name());
    (first, run(false, true))
}

const JITTER_AND_PCT: HostSchedule =
    HostSchedule { jitter_cycles: 5_000, pct: Some(HostPct { points: 3, steps: 400 }) };

on_both_chips! {
    fn same_seed_gives_identical_device_state(chip) {
        assert_eq!(digest_after(chip, 21), digest_after(chip, 21), "{} seed 21 replayed differently", chip.name());
    }

    fn a_host_schedule_replays_bit_for_bit_with_and_without_fast_forward(chip) {
        let run = |seed, ff| run_scheduled(chip, seed, JITTER_AND_PCT, ff);
        let first = run(21, true);
        assert_eq!(first, run(21, true), "{}: seed 21 under host jitter and PCT replayed differently", chip.name());
        assert_eq!(first, run(21, false), "{}: fast-forward changed the run under a host schedule", chip.name());
        // The schedule is not a no-op: the device ran longer, and a seed
        // draws its own schedule.
        let plain = run_scheduled(chip, 21, HostSchedule::default(), true);
        assert!(first.1 > plain.1 + 3 * cqlab_driver::config::HOST_PCT_RUN_CYCLES, "{}: {first:?} vs {plain:?}", chip.name());
        assert_ne!(run(22, true).1, first.1, "{}: seeds 21 and 22 drew the same host schedule", chip.name());
    }

    fn pipelined_loads_replay_bit_for_bit_with_and_without_fast_forward(chip) {
        let (on, off) = replays_with_option(chip, 23, "pipelined loads", |sim, on| sim.pipelined_loads = on);
        // The option is not a no-op (the host's polls set when the run
        // ends; `cli::pipelined_loads_make_dispatch_cheaper` shows the gain).
        assert_ne!(on.0, off.0, "{}: pipelined loads changed nothing", chip.name());
    }

    fn instruction_caches_replay_bit_for_bit_with_and_without_fast_forward(chip) {
        let (on, off) = replays_with_option(chip, 24, "instruction caches", |sim, on| sim.icache = on);
        // The option is not a no-op (`cli::instruction_caches_make_dispatch_cost_more`
        // shows the cost).
        assert_ne!(on.0, off.0, "{}: instruction caches changed nothing", chip.name());
    }

    fn reads_waiting_for_unsent_writes_replay_bit_for_bit_with_and_without_fast_forward(chip) {
        // The model before 2026-12-01 (`reads_pass_unsent` off) replays as
        // the default does; whether this program's reads ever meet a queued
        // write is not asserted (the race finder's test shows the rule matters).
        replays_with_option(chip, 31, "reads waiting for unsent writes", |sim, on| sim.noc.reads_pass_unsent = !on);
    }

    fn link_contention_replays_bit_for_bit_with_and_without_fast_forward(chip) {
        replays_with_option(chip, 29, "link contention", |sim, on| sim.noc.link_contention = on);
        // Not checked here that the option changes timing: this program's
        // packets never wait for a link (the run ends at the same cycle;
        // its digest differs by the bookings alone).
        // `chip::noc_tests::read_responses_queue_on_a_shared_link_only_with_link_contention` checks it.
    }
}
