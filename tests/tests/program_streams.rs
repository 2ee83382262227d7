//! Random program streams (`cqlab_workloads::program_stream`):
//! many kernels (more builds than a queue has text slots), random
//! rectangles, unique and common args of random sizes, traces captured and
//! replayed in between, on one or two queues; every core must end with the
//! store of the last program that wrote each word. Nothing in the stream is
//! chosen to hit a known case: the tests are for the residency, ring-reuse
//! and replay bugs nobody thought of. `cqlab race --workload programs` runs
//! the same streams over many seeds, queue layouts and faults. Every test
//! runs on a Wormhole and a Blackhole.

use cqlab_abi::arch::Arch;
use cqlab_driver::Device;
use cqlab_tests::{booted, booted_with_faults, on_both_chips, TestChip};
use cqlab_workloads::program_stream;

/// `programs` random programs spread over `cqs` queues, with traces.
fn run_stream(chip: &TestChip, seed: u64, cqs: u8, programs: u32) {
    run_stream_on(chip, booted(chip, seed, |cfg| cfg.num_cqs = cqs), seed, programs);
}

fn run_stream_on(chip: &TestChip, mut dev: Device, seed: u64, programs: u32) {
    if let Err(e) = program_stream::run(&mut dev, seed, programs) {
        let (cols, rows, cqs) = (dev.chip().cols(), dev.chip().rows(), dev.num_cqs());
        let harvesting = chip.harvesting();
        panic!("{} ({harvesting}, {cols}x{rows} grid, {cqs} queues) seed {seed}: {e}", chip.name());
    }
}

on_both_chips! {
    fn random_program_streams_on_one_queue_leave_every_store_of_the_last_writer(chip) {
        for seed in [1, 2] {
            run_stream(chip, seed, 1, 250);
        }
    }

    fn random_program_streams_on_two_queues_leave_every_store_of_the_last_writer(chip) {
        for seed in [3, 4] {
            run_stream(chip, seed, 2, 250);
        }
    }

    /// The same under timing faults (core stalls, NOC jitter, late doorbells)
    /// with a small issue queue and three fetch slots, so rings wrap and the
    /// host waits for space in the middle of programs and traces.
    fn random_program_streams_under_timing_faults_and_tight_queues_leave_every_store_of_the_last_writer(chip) {
        for (seed, cqs) in [(5, 1), (6, 2)] {
            let faults = cqlab_sim::config::Faults {
                core_stall_prob: 0.05,
                core_stall_cycles: 700,
                noc_jitter_cycles: 300,
                host_write_delay_cycles: 3000,
                ..Default::default()
            };
            let dev = booted_with_faults(chip, seed, faults, |cfg| {
                (cfg.num_cqs, cfg.issue_size, cfg.fetch_entries) = (cqs, 96 << 10, 3)
            });
            run_stream_on(chip, dev, seed, 250);
        }
    }

    /// Slow dispatch (every program written through the BAR once the one
    /// before has finished) runs the same streams, traces left out.
    fn random_program_streams_under_slow_dispatch_leave_every_store_of_the_last_writer(chip) {
        for (seed, cqs) in [(7, 1), (8, 2)] {
            run_stream_on(chip, booted(chip, seed, |cfg| (cfg.num_cqs, cfg.slow_dispatch) = (cqs, true)), seed, 150);
        }
    }

    /// Other harvestings and queue counts: a grid of one line (a row on
    /// Wormhole, a column on Blackhole), narrow ones, up to four queues, and
    /// the full board's grid (the largest, where a program's args for every
    /// core are several times those of the test chip's).
    fn random_program_streams_on_other_grids_leave_every_store_of_the_last_writer(chip) {
        let board = chip.board;
        let other = |harvest| TestChip { board, harvest: Some(harvest) };
        // (seed, chip, queues, compute grid)
        let shapes = match board.arch() {
            // NOC0 Tensix rows 1..=5 and 7..=11; the queues take the last ones.
            Arch::Wormhole => [
                (9, other("rows=1,2,3,4,5,7,8,9"), 1u8, (8u8, 1u8)),
                (10, other("rows=1,2,3,4,5,7,8"), 2, (8, 2)),
                (11, other("rows=1,2,3,4,5"), 4, (8, 4)),
                (13, TestChip::full(board), 2, (8, 8)),
            ],
            // NOC0 Tensix columns 1..=7 and 10..=16; the queues take the last ones.
            Arch::Blackhole => [
                (9, other("cols=3,4,5,6,7,10,11,12,13,14,15,16"), 1, (1, 10)),
                (10, other("cols=4,5,6,7,10,11,12,13,14,15,16"), 2, (2, 10)),
                (11, other("cols=1,2,3,4,5,6,7,10,11,12"), 4, (3, 10)),
                (13, TestChip::full(board), 2, (11, 10)),
            ],
        };
        for (seed, chip, cqs, grid) in shapes {
            let dev = booted(&chip, seed, |cfg| cfg.num_cqs = cqs);
            assert_eq!((dev.chip().cols(), dev.chip().rows()), grid, "{} ({})", chip.name(), chip.harvesting());
            run_stream_on(&chip, dev, seed, 100);
        }
    }

    /// The same with write back-pressure: every NOC write waits up to 1,000
    /// cycles in its core's interface before it leaves, so a chunk buffer or a
    /// ring page reused before the writes reading it have left shows (the
    /// second stream through a dispatcher ring of 8 pages, which the
    /// prefetcher fills and waits on).
    fn random_program_streams_under_write_back_pressure_leave_every_store_of_the_last_writer(chip) {
        for (seed, cqs, pages) in [(14, 1, 64), (15, 2, 8)] {
            let faults = cqlab_sim::config::Faults { write_backpressure_cycles: 1000, ..Default::default() };
            let dev = booted_with_faults(chip, seed, faults, |cfg| {
                (cfg.num_cqs, cfg.ring_pages, cfg.kernel_timeout_cycles) = (cqs, pages, Some(20_000_000))
            });
            run_stream_on(chip, dev, seed, 250);
        }
    }
}
