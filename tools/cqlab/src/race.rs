//! `cqlab race`: the two-queue stall/dispatch race of the field notes, run
//! over many seeds. CQ0 replays a trace (kernels on every worker) and records
//! an event each iteration; CQ1 waits for that event, then does `copies`
//! write/read-back pairs, each read a dispatcher WAIT plus prefetcher STALL
//! (the stall point). Knobs amplify the race: more copies and iterations,
//! NOC/PCIe jitter, core stalls, dispatcher DELAYs before each read. Every
//! failure names its seed and the command that replays it exactly.

use anyhow::Result;
use cqlab_driver::{CoreRange, Device, DeviceConfig, DriverError};
use cqlab_sim::config::SimConfig;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args, Clone)]
pub struct Args {
    /// Known-bug firmware variant to run (see README), or none for the normal firmware.
    #[arg(long)]
    pub variant: Option<String>,
    /// Seeds to run: seed-base .. seed-base + seeds.
    #[arg(long, default_value_t = 20)]
    pub seeds: u64,
    #[arg(long, default_value_t = 1)]
    pub seed_base: u64,
    #[arg(long, default_value_t = 10)]
    pub iterations: u32,
    /// Write/read-back pairs (stall points) per iteration on CQ1.
    #[arg(long, default_value_t = 3)]
    pub copies: u32,
    /// Bytes per copy.
    #[arg(long, default_value_t = 4096)]
    pub bytes: u32,
    /// DRAM page size of the copied buffer (a read relays it page by page
    /// through the prefetcher's relay scratch).
    #[arg(long, default_value_t = 1024)]
    pub page_size: u32,
    /// Seeded extra latency, up to this many cycles, on every NOC/PCIe transaction.
    #[arg(long, default_value_t = 0)]
    pub jitter: u64,
    /// What-if beyond the hardware: drop the NOC/PCIe ordering rules, so
    /// jitter may reorder same-route transactions (see README).
    #[arg(long)]
    pub reorder: bool,
    /// Probability per scheduling slice that a core stalls 2000 cycles.
    #[arg(long, default_value_t = 0.0)]
    pub core_stall: f64,
    /// Dispatcher DELAY (cycles) on CQ0 before it stamps the marker and
    /// records its event: a slow producer widens the cross-queue window.
    #[arg(long, default_value_t = 0)]
    pub delay: u32,
    /// Dispatcher ring pages per CQ (4 KiB each; fewer means more credit pressure).
    #[arg(long, default_value_t = cqlab_abi::memory_map::DEFAULT_RING_PAGES)]
    pub ring_pages: u32,
    /// Device read latency of host memory over PCIe, in cycles.
    #[arg(long, default_value_t = 750)]
    pub pcie_read_latency: u64,
    /// Issue-queue bytes per CQ (smaller fills and wraps it sooner).
    #[arg(long, default_value_t = cqlab_abi::sysmem::DEFAULT_ISSUE_QUEUE_SIZE)]
    pub issue_size: u32,
    /// Completion-queue bytes per CQ.
    #[arg(long, default_value_t = cqlab_abi::sysmem::DEFAULT_COMPLETION_QUEUE_SIZE)]
    pub completion_size: u32,
    /// Device cycles without progress before a wait gives up.
    #[arg(long, default_value_t = 5_000_000)]
    pub timeout_cycles: u64,
    #[arg(long)]
    pub json: bool,
}

/// One seed's run: `Err` carries the first line of what went wrong.
fn run_seed(args: &Args, seed: u64) -> Result<(), String> {
    let cfg = DeviceConfig {
        firmware_variant: args.variant.clone(),
        stall_timeout_cycles: args.timeout_cycles,
        issue_size: args.issue_size,
        completion_size: args.completion_size,
        ring_pages: args.ring_pages,
        ..Default::default()
    };
    let mut sim = SimConfig { seed, ..Default::default() };
    sim.faults.noc_jitter_cycles = args.jitter;
    sim.faults.reorder = args.reorder;
    sim.pcie.read_latency_cycles = args.pcie_read_latency;
    if args.core_stall > 0.0 {
        (sim.faults.core_stall_prob, sim.faults.core_stall_cycles) = (args.core_stall, 2000);
    }
    let first_line = |e: DriverError| e.to_string().lines().next().unwrap_or_default().to_owned();
    let mut dev = Device::embedded(sim, cfg).map_err(first_line)?;
    dev.boot().map_err(first_line)?;
    let all = CoreRange::new((0, 0), (dev.config().worker_cols - 1, dev.config().worker_rows - 1));
    let buf = dev.alloc_dram(args.bytes.next_multiple_of(args.page_size), args.page_size).map_err(first_line)?;
    // CQ0 stamps the iteration here before its event; CQ1 checks it after waiting.
    let marker = dev.alloc_l1(0, 0, 16).map_err(first_line)?;
    let trace = {
        let mut cq0 = dev.cq(0).map_err(first_line)?;
        cq0.begin_trace().map_err(first_line)?;
        cq0.launch(all, &[]).map_err(first_line)?;
        // No finish here: CQ0 must not have completed an event before the
        // first iteration (an unwritten event word is part of the race).
        cq0.end_trace().map_err(first_line)?
    };
    for it in 0..args.iterations {
        let ev = {
            let mut cq0 = dev.cq(0).map_err(first_line)?;
            cq0.execute_trace(&trace).map_err(first_line)?;
            if args.delay > 0 {
                cq0.delay(args.delay).map_err(first_line)?;
            }
            cq0.write_buffer(&marker, 0, &[it as u8 + 1; 16]).map_err(first_line)?;
            cq0.record_event().map_err(first_line)?
        };
        let mut cq1 = dev.cq(1).map_err(first_line)?;
        cq1.wait_for_event(ev).map_err(first_line)?;
        let seen = cq1.read_buffer(&marker, 0, 16).map_err(first_line)?;
        if seen != [it as u8 + 1; 16] {
            return Err(format!("iteration {it}: CQ1 ran past CQ0's event (marker {}, expected {})", seen[0], it + 1));
        }
        for c in 0..args.copies {
            // Not periodic in the page size: a page landing in another's place shows.
            let data: Vec<u8> =
                (0..buf.size).map(|i| (i ^ i >> 8 ^ i >> 16) as u8 ^ (it as u8).wrapping_mul(31) ^ (c as u8)).collect();
            cq1.write_buffer(&buf, 0, &data).map_err(first_line)?;
            if cq1.read_buffer(&buf, 0, buf.size).map_err(first_line)? != data {
                return Err(format!("iteration {it} copy {c}: read-back differs from what was written"));
            }
        }
    }
    dev.cq(0).and_then(|mut q| q.finish()).map_err(first_line)?;
    dev.cq(1).and_then(|mut q| q.finish()).map_err(first_line)
}

fn replay_command(args: &Args, seed: u64) -> String {
    let mut cmd = format!(
        "cqlab race --seed-base {seed} --seeds 1 --iterations {} --copies {} --bytes {} --issue-size {} --completion-size {}",
        args.iterations, args.copies, args.bytes, args.issue_size, args.completion_size
    );
    if let Some(v) = &args.variant {
        cmd += &format!(" --variant {v}");
    }
    for (flag, on, value) in [
        ("--jitter", args.jitter > 0, args.jitter.to_string()),
        ("--reorder", args.reorder, String::new()),
        ("--core-stall", args.core_stall > 0.0, args.core_stall.to_string()),
        ("--delay", args.delay > 0, args.delay.to_string()),
        ("--page-size", args.page_size != 1024, args.page_size.to_string()),
        ("--ring-pages", args.ring_pages != cqlab_abi::memory_map::DEFAULT_RING_PAGES, args.ring_pages.to_string()),
        ("--pcie-read-latency", args.pcie_read_latency != 750, args.pcie_read_latency.to_string()),
    ] {
        if on {
            cmd += &format!(" {flag}");
            if !value.is_empty() {
                cmd += &format!(" {value}");
            }
        }
    }
    cmd
}

pub fn run(args: Args) -> Result<ExitCode> {
    anyhow::ensure!(args.seeds > 0, "--seeds must be positive");
    anyhow::ensure!((0.0..=1.0).contains(&args.core_stall), "--core-stall is a probability in 0..=1");
    let start = Instant::now();
    let mut failures = Vec::new();
    for (n, seed) in (args.seed_base..args.seed_base + args.seeds).enumerate() {
        let outcome = run_seed(&args, seed);
        if let Err(e) = &outcome {
            failures.push((seed, e.clone()));
        }
        if !args.json {
            let verdict = outcome.as_ref().map_or_else(|e| format!("FAIL {e}"), |()| "pass".into());
            eprintln!("[{}/{}] seed {seed}: {verdict}", n + 1, args.seeds);
        }
    }
    let rate = failures.len() as f64 / args.seeds as f64;
    if args.json {
        let f: Vec<_> = failures
            .iter()
            .map(|(s, e)| serde_json::json!({"seed": s, "error": e, "replay": replay_command(&args, *s)}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"variant": args.variant, "seeds": args.seeds, "failures": failures.len(),
                               "failure_rate": rate, "failed": f, "seconds": start.elapsed().as_secs_f64()})
        );
    } else {
        println!(
            "{} of {} seeds failed ({:.0}%) in {:.1?}: variant {}, {} iterations x {} copies, jitter {}, delay {}",
            failures.len(),
            args.seeds,
            rate * 100.0,
            start.elapsed(),
            args.variant.as_deref().unwrap_or("none"),
            args.iterations,
            args.copies,
            args.jitter,
            args.delay
        );
        for (seed, e) in &failures {
            println!("  seed {seed}: {e}\n    replay: {}", replay_command(&args, *seed));
        }
    }
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
