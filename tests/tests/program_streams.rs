//! Random program streams (`cqlab_workloads::program_stream`):
//! many kernels (more builds than a queue has text slots), random
//! rectangles, unique and common args of random sizes, traces captured and
//! replayed in between, on one or two queues; every core must end with the
//! store of the last program that wrote each word. Nothing in the stream is
//! chosen to hit a known case: the tests are for the residency, ring-reuse
//! and replay bugs nobody thought of. `cqlab race --workload programs` runs
//! the same streams over many seeds, queue layouts and faults.

use cqlab_driver::Device;
use cqlab_tests::{booted, booted_with_faults};
use cqlab_workloads::program_stream;

/// `programs` random programs spread over `cqs` queues, with traces.
fn run_stream(seed: u64, cqs: u8, programs: u32) {
    run_stream_on(booted(seed, |cfg| cfg.num_cqs = cqs), seed, programs);
}

fn run_stream_on(mut dev: Device, seed: u64, programs: u32) {
    if let Err(e) = program_stream::run(&mut dev, seed, programs) {
        panic!("seed {seed}: {e}");
    }
}

#[test]
fn random_program_streams_on_one_queue_leave_every_store_of_the_last_writer() {
    for seed in [1, 2] {
        run_stream(seed, 1, 250);
    }
}

#[test]
fn random_program_streams_on_two_queues_leave_every_store_of_the_last_writer() {
    for seed in [3, 4] {
        run_stream(seed, 2, 250);
    }
}

/// The same under timing faults (core stalls, NOC jitter, late doorbells)
/// with a small issue queue and three fetch slots, so rings wrap and the
/// host waits for space in the middle of programs and traces.
#[test]
fn random_program_streams_under_timing_faults_and_tight_queues_leave_every_store_of_the_last_writer() {
    for (seed, cqs) in [(5, 1), (6, 2)] {
        let faults = cqlab_sim::config::Faults {
            core_stall_prob: 0.05,
            core_stall_cycles: 700,
            noc_jitter_cycles: 300,
            host_write_delay_cycles: 3000,
            ..Default::default()
        };
        let dev = booted_with_faults(seed, faults, |cfg| {
            (cfg.num_cqs, cfg.issue_size, cfg.fetch_entries) = (cqs, 96 << 10, 3)
        });
        run_stream_on(dev, seed, 250);
    }
}

/// Slow dispatch (every program written through the BAR once the one
/// before has finished) runs the same streams, traces left out.
#[test]
fn random_program_streams_under_slow_dispatch_leave_every_store_of_the_last_writer() {
    for (seed, cqs) in [(7, 1), (8, 2)] {
        run_stream_on(booted(seed, |cfg| (cfg.num_cqs, cfg.slow_dispatch) = (cqs, true)), seed, 150);
    }
}

/// Other grid shapes and queue counts: one core, narrow and tall grids, up
/// to four queues, and the largest grid (16x16, where a program's args for
/// every core are four times those of the 8x8 grid).
#[test]
fn random_program_streams_on_other_grids_leave_every_store_of_the_last_writer() {
    for (seed, cols, rows, cqs) in [(9, 1u8, 1u8, 1u8), (10, 3, 2, 2), (11, 16, 2, 3), (12, 2, 16, 4), (13, 16, 16, 2)]
    {
        let dev = booted(seed, |cfg| (cfg.worker_cols, cfg.worker_rows, cfg.num_cqs) = (cols, rows, cqs));
        run_stream_on(dev, seed, 100);
    }
}

/// The same with write back-pressure: every NOC write waits up to 1,000
/// cycles in its core's interface before it leaves, so a chunk buffer or a
/// ring page reused before the writes reading it have left shows (the
/// second stream through a dispatcher ring of 8 pages, which the
/// prefetcher fills and waits on).
#[test]
fn random_program_streams_under_write_back_pressure_leave_every_store_of_the_last_writer() {
    for (seed, cqs, pages) in [(14, 1, 64), (15, 2, 8)] {
        let faults = cqlab_sim::config::Faults { write_backpressure_cycles: 1000, ..Default::default() };
        let dev = booted_with_faults(seed, faults, |cfg| {
            (cfg.num_cqs, cfg.ring_pages, cfg.kernel_timeout_cycles) = (cqs, pages, 20_000_000)
        });
        run_stream_on(dev, seed, 250);
    }
}
