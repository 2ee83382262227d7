//! `cqlab race --workload programs`: random program streams
//! (`cqlab_workloads::program_stream`: kernels uploaded and
//! evicted, args of random sizes, traces captured and replayed, on both
//! queues, mixed with DRAM read-backs and cross-queue events) on a queue layout and timing drawn per seed, so the kernel-config
//! ring, the launch ring, the issue and completion queues and the
//! dispatcher ring wrap and fill at different points in each run. Every
//! store a kernel makes is checked against the last program that made it.

use super::failure::Failure;
use cqlab_abi::arch::Arch;
use cqlab_abi::soc::Harvesting;
use cqlab_abi::PCIE_ALIGNMENT;
use cqlab_driver::{Device, DeviceConfig};
use cqlab_sim::config::SimConfig;
use cqlab_sim::rng::Rng;
use cqlab_workloads::program_stream::{self, StreamFailure};

/// Programs per seed = `--iterations` x this.
pub const PROGRAMS_PER_ITERATION: u32 = 25;

/// This workload's stream of layout choices, forked from the seed.
const STREAM: u64 = 0x7072_6f67_7261_6d73;

fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[rng.upto(items.len() as u64 - 1) as usize]
}

/// Harvestings a seed may draw, per chip: about half the compute grid
/// fused off, and all but one compute line (NOC0 lines, as `--harvest`
/// takes them; the board's usual harvesting is the other half of the seeds).
fn harvestings(arch: Arch) -> [&'static str; 2] {
    match arch {
        Arch::Wormhole => ["rows=1,2,3,4,5,7", "rows=1,2,3,4,5,7,8,9"],
        Arch::Blackhole => ["cols=5,6,7,10,11,12,13,14,15,16", "cols=3,4,5,6,7,10,11,12,13,14,15,16"],
    }
}

/// The seed's queue layout, timing and grid, drawn before the device is
/// built. The issue queue always holds the largest program (a few tens of
/// KiB of args); everything else may be as small as the device allows.
/// With `draw_harvesting` (no `--harvest` given), half the seeds run on a
/// chip with more lines harvested than the board's usual.
pub fn configure(seed: u64, draw_harvesting: bool, sim: &mut SimConfig, cfg: &mut DeviceConfig) {
    let mut rng = Rng::new(seed ^ STREAM);
    let align = PCIE_ALIGNMENT as u32;
    cfg.issue_size = pick(&mut rng, &[96 << 10, 256 << 10, 1 << 20]);
    cfg.completion_size = pick(&mut rng, &[16 * align, 64 * align, 256 << 10]);
    cfg.fetch_entries = pick(&mut rng, &[3, 4, 16, 128]);
    super::random::ring_and_timing(&mut rng, sim, cfg);
    // Half the seeds on the board's usual grid, the others on a smaller one.
    if rng.upto(1) == 1 && draw_harvesting {
        let text = pick(&mut rng, &harvestings(cfg.sim_board().arch()));
        let h = Harvesting::parse(text).expect("a valid harvesting");
        sim.harvesting = h.clone();
        cfg.harvesting = Some(h);
        cfg.board = Some(cfg.sim_board());
    }
    // Large binaries and arg blocks sent by reference from sysmem (gathered
    // fetch entries) or copied inline; half the seeds with a staging arena
    // a few blobs deep, so that it laps while blobs are still being read.
    cfg.stage_min_bytes = pick(&mut rng, &[0, 256, 4096]);
    if rng.upto(1) == 1 {
        let end = cqlab_abi::sysmem::CqSysmemLayout::for_cq(cfg.num_cqs, cfg.issue_size, cfg.completion_size).base;
        sim.sysmem_size = end as usize + cfg.num_cqs as usize * pick(&mut rng, &[64 << 10, 160 << 10]);
    }
    // A host that reads completions late, as for `random`.
    cfg.drain_every_polls = pick(&mut rng, &[1, 1, 20]);
}

/// Runs `iterations` x `PROGRAMS_PER_ITERATION` programs of stream `seed`.
pub fn run(iterations: u32, seed: u64, dev: &mut Device) -> Result<(), Failure> {
    run_with(iterations, seed, dev, &mut |_| {})
}

/// [`run`], calling `enqueued(n)` once its first n programs are enqueued
/// ([`program_stream::run_with`]).
pub fn run_with(iterations: u32, seed: u64, dev: &mut Device, enqueued: &mut dyn FnMut(u32)) -> Result<(), Failure> {
    let programs = iterations.saturating_mul(PROGRAMS_PER_ITERATION);
    program_stream::run_with(dev, seed, programs, enqueued).map_err(|e| match e {
        StreamFailure::Driver(e) => Failure::Driver(e),
        mismatch @ StreamFailure::Mismatch { .. } => {
            Failure::Check { check: "program store differs", detail: mismatch.to_string() }
        }
        read_back @ StreamFailure::ReadBack { .. } => {
            Failure::Check { check: "read-back differs", detail: read_back.to_string() }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_harvestings_are_valid_on_every_board() {
        for board in cqlab_abi::soc::Board::ALL {
            for text in harvestings(board.arch()) {
                let h = Harvesting::parse(text).unwrap();
                let chip = cqlab_driver::Topology::for_board(board, Some(h), 2).unwrap();
                assert!(chip.worker_count() >= 1, "{board} {text}");
            }
        }
    }
}
