//! `cqlab demo`: the main job, end to end on the embedded simulator: boot,
//! copies on CQ1 while CQ0 launches kernels, cross-queue events, read-back
//! verified, and a table of what ran.

use crate::out::outln;
use anyhow::{Context, Result};
use cqlab_driver::{Device, DeviceConfig};
use std::process::ExitCode;
use std::time::Instant;

/// Most rounds one demo runs (each moves 256 KiB each way).
pub const MAX_ROUNDS: u32 = 10_000;

#[derive(clap::Args)]
pub struct Args {
    /// Simulator seed. It picks the scheduler's rotation order, and with
    /// --noc-jitter the jitter of every NOC and PCIe transaction. Without
    /// jitter the demo's queues are timing-independent, so every seed gives
    /// the same figures (the demo says so).
    #[arg(long, default_value_t = 1, value_parser = crate::cli::seed)]
    pub seed: u64,
    /// Extra latency, uniform in 0..=CYCLES and drawn from the seed, on
    /// every NOC and PCIe transaction: makes the seed matter (0..=100000).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub noc_jitter: u64,
    /// Copy/launch rounds (1..=10000).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=MAX_ROUNDS as i64))]
    pub rounds: u32,
    /// Device to run on: embedded (the default, seeded by --seed), or any
    /// device spec such as sim:PATH or ttkmd-sim:PATH (seeded their own way).
    #[arg(long, default_value = "embedded")]
    pub device: String,
    #[command(flatten)]
    pub limits: crate::cli::Limits,
    /// Print the table as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
}

pub fn validate(a: &Args) -> anyhow::Result<()> {
    a.chip.validate_for(crate::device::made_here(&a.device))?;
    Ok(crate::device::validate(&a.device, a.noc_jitter)?)
}

struct Row {
    what: &'static str,
    count: u64,
    bytes: u64,
    cycles: u64,
    host_us: f64,
}

fn timed<T>(
    dev: &mut Device,
    rows: &mut Vec<Row>,
    what: &'static str,
    count: u64,
    bytes: u64,
    f: impl FnOnce(&mut Device) -> Result<T>,
) -> Result<T> {
    let (c0, t0) = (dev.now(), Instant::now());
    let v = f(dev).with_context(|| what)?;
    rows.push(Row { what, count, bytes, cycles: dev.now() - c0, host_us: t0.elapsed().as_secs_f64() * 1e6 });
    Ok(v)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let mut cfg = DeviceConfig::default();
    args.chip.apply_for(&mut cfg, crate::device::made_here(&args.device))?;
    args.limits.apply(&mut cfg);
    let mut dev = crate::device::open(&args.device, args.seed, args.noc_jitter, cfg)?;
    // A daemon's clock runs on from its earlier clients: this run's time is
    // from here.
    let started = dev.now();
    let progress = crate::cli::progress(args.rounds as u64, "demo rounds");
    let mut rows = Vec::new();
    let all = dev.chip().grid();
    let ncores = all.count() as u64;
    timed(&mut dev, &mut rows, "boot (2 CQs + workers)", ncores + 4, 0, |d| Ok(d.boot()?))?;
    let size = 256 * 1024u32;
    let buf = dev.alloc_dram(size, 4096)?;
    let mut verified = 0u64;
    for round in 0..args.rounds {
        let data: Vec<u8> = (0..size).map(|i| (i as u8) ^ (round as u8).wrapping_mul(77)).collect();
        let ev0 = timed(&mut dev, &mut rows, "CQ0 enqueue: launch noop x4 + event", 4 * ncores, 0, |d| {
            let mut cq0 = d.cq(0)?;
            for _ in 0..4 {
                cq0.launch(all, &[round])?;
            }
            Ok(cq0.record_event()?)
        })?;
        timed(&mut dev, &mut rows, "CQ1 enqueue: write 256 KiB (paged)", 1, size as u64, |d| {
            Ok(d.cq(1)?.write_buffer(&buf, 0, &data)?)
        })?;
        let back = timed(&mut dev, &mut rows, "CQ1 wait CQ0 event, read back (all run)", 1, size as u64, |d| {
            let mut cq1 = d.cq(1)?;
            cq1.wait_for_event(ev0)?;
            Ok(cq1.read_buffer(&buf, 0, size)?)
        })?;
        if back != data {
            // Exit 5, naming the seed the simulator ran on (where known).
            let seed = cqlab_workloads::runner::device_seed(&args.device, args.seed)
                .map_or(format!("device {}", args.device), |s| format!("seed {s}"));
            let why = format!("round {round}: read-back differs from what was written ({seed})");
            return Err(cqlab_driver::DriverError::Mismatch(why).into());
        }
        verified += size as u64;
        progress.inc(1);
    }
    progress.finish_and_clear();
    timed(&mut dev, &mut rows, "finish both CQs", 2, 0, |d| {
        d.cq(0)?.finish()?;
        Ok(d.cq(1)?.finish()?)
    })?;
    // The simulator's seed, where the client knows it (as `run`'s
    // `device_seed`): an embedded spec's `seed=` or `--seed`; a daemon's or
    // a library's is its own.
    let seed = cqlab_workloads::runner::device_seed(&args.device, args.seed);
    let seed_note = match seed {
        None if args.noc_jitter != 0 => {
            format!("device {}: its own seed, with NOC/PCIe jitter 0..={} cycles", args.device, args.noc_jitter)
        }
        None => format!("device {}: its seed was fixed when it started", args.device),
        Some(seed) if args.noc_jitter == 0 => format!(
            "seed {seed}: without --noc-jitter nothing in this run depends on timing, so every seed gives these \
             figures; add --noc-jitter CYCLES to make the seed matter"
        ),
        Some(seed) => format!("seed {seed} with NOC/PCIe jitter 0..={} cycles", args.noc_jitter),
    };
    let chip = DemoChip {
        board: dev.chip().board().to_string(),
        harvesting: dev.chip().harvesting().to_string(),
        grid: (all.end.0 + 1, all.end.1 + 1),
        clock_hz: dev.chip().layout().clock_hz(),
    };
    let seed = DemoSeed { seed, noc_jitter: args.noc_jitter, note: seed_note };
    print_table(&rows, args.json, verified, dev.now() - started, &chip, &seed)?;
    Ok(ExitCode::SUCCESS)
}

/// The chip a demo ran on, as its report names it.
struct DemoChip {
    board: String,
    harvesting: String,
    /// Compute cores: columns, rows.
    grid: (u8, u8),
    clock_hz: u64,
}

/// The demo's seed (none where a device spec's simulator has its own) and
/// what it means for the figures.
struct DemoSeed {
    seed: Option<u64>,
    noc_jitter: u64,
    note: String,
}

fn print_table(
    rows: &[Row],
    json: bool,
    verified: u64,
    total_cycles: u64,
    chip: &DemoChip,
    seed: &DemoSeed,
) -> Result<()> {
    let clock_hz = chip.clock_hz;
    // Merge rows of the same operation.
    let mut merged: Vec<Row> = Vec::new();
    for r in rows {
        match merged.iter_mut().find(|m| m.what == r.what) {
            Some(m) => {
                m.count += r.count;
                m.bytes += r.bytes;
                m.cycles += r.cycles;
                m.host_us += r.host_us;
            }
            None => merged.push(Row { ..*r }),
        }
    }
    if json {
        let v: Vec<_> = merged
            .iter()
            .map(|r| {
                serde_json::json!({"operation": r.what, "count": r.count, "bytes": r.bytes,
                                         "device_cycles": r.cycles, "host_us": r.host_us})
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({"chip": chip.board, "harvesting": chip.harvesting, "grid": [chip.grid.0, chip.grid.1],
                               "clock_hz": clock_hz, "rows": v, "verified_bytes": verified,
                               "device_cycles": total_cycles, "seed": seed.seed, "noc_jitter": seed.noc_jitter,
                               "seed_note": seed.note})
        );
        return Ok(());
    }
    outln!("{:<40} {:>8} {:>10} {:>14} {:>12}", "operation", "count", "bytes", "device cycles", "host ms");
    for r in &merged {
        outln!("{:<40} {:>8} {:>10} {:>14} {:>12.1}", r.what, r.count, r.bytes, r.cycles, r.host_us / 1e3);
    }
    outln!(
        "verified {verified} bytes read back; device time {total_cycles} cycles ({:.3} ms at {:.2} GHz)",
        total_cycles as f64 * 1e3 / clock_hz as f64,
        clock_hz as f64 / 1e9
    );
    outln!("chip: {} ({}), {}x{} compute cores", chip.board, chip.harvesting, chip.grid.0, chip.grid.1);
    outln!("{}", seed.note);
    Ok(())
}
