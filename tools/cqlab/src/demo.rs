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

/// What a demo has done so far: the report's rows and figures, and, when
/// it fails, where (what a failure's `--json` record says).
#[derive(Default)]
struct Seen {
    rows: Vec<Row>,
    verified: u64,
    /// The round under way; none before the first and after the last.
    round: Option<u32>,
    /// The operation under way (its row's name).
    operation: Option<&'static str>,
    chip: Option<DemoChip>,
    /// Device cycles from the demo's start to the end of its last
    /// operation that completed (a failure's dump names its own cycle).
    device_cycles: u64,
}

fn timed<T>(
    dev: &mut Device,
    seen: &mut Seen,
    started: u64,
    what: &'static str,
    count: u64,
    bytes: u64,
    f: impl FnOnce(&mut Device) -> Result<T>,
) -> Result<T> {
    let (c0, t0) = (dev.now(), Instant::now());
    seen.operation = Some(what);
    let v = f(dev).with_context(|| what)?;
    (seen.operation, seen.device_cycles) = (None, dev.now() - started);
    seen.rows.push(Row { what, count, bytes, cycles: dev.now() - c0, host_us: t0.elapsed().as_secs_f64() * 1e6 });
    Ok(v)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let mut seen = Seen::default();
    match demo(&args, &mut seen) {
        Ok(()) => {
            print_table(&seen, args.json, &seed_of(&args), None)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            // `--json` still says what ran and how it failed, as `run`'s
            // `failed_point` does; arguments refused before any work (exit
            // 2) write nothing, as every command's.
            if args.json && crate::exit::of_error(&e) != crate::exit::Exit::Usage {
                print_table(&seen, true, &seed_of(&args), Some(&e))?;
            }
            Err(e)
        }
    }
}

fn demo(args: &Args, seen: &mut Seen) -> Result<()> {
    let mut cfg = DeviceConfig::default();
    args.chip.apply_for(&mut cfg, crate::device::made_here(&args.device))?;
    args.limits.apply(&mut cfg);
    let mut dev = crate::device::open(&args.device, args.seed, args.noc_jitter, cfg)?;
    // A daemon's clock runs on from its earlier clients: this run's time is
    // from here.
    let started = dev.now();
    let all = dev.chip().grid();
    seen.chip = Some(DemoChip {
        board: dev.chip().board().to_string(),
        harvesting: dev.chip().harvesting().to_string(),
        grid: (all.end.0 + 1, all.end.1 + 1),
        clock_hz: dev.chip().layout().clock_hz(),
    });
    let progress = crate::cli::progress(args.rounds as u64, "demo rounds");
    let ncores = all.count() as u64;
    timed(&mut dev, seen, started, "boot (2 CQs + workers)", ncores + 4, 0, |d| Ok(d.boot()?))?;
    let size = 256 * 1024u32;
    let buf = dev.alloc_dram(size, 4096)?;
    for round in 0..args.rounds {
        seen.round = Some(round);
        let data: Vec<u8> = (0..size).map(|i| (i as u8) ^ (round as u8).wrapping_mul(77)).collect();
        let ev0 = timed(&mut dev, seen, started, "CQ0 enqueue: launch noop x4 + event", 4 * ncores, 0, |d| {
            let mut cq0 = d.cq(0)?;
            for _ in 0..4 {
                cq0.launch(all, &[round])?;
            }
            Ok(cq0.record_event()?)
        })?;
        timed(&mut dev, seen, started, "CQ1 enqueue: write 256 KiB (paged)", 1, size as u64, |d| {
            Ok(d.cq(1)?.write_buffer(&buf, 0, &data)?)
        })?;
        let back = timed(&mut dev, seen, started, "CQ1 wait CQ0 event, read back (all run)", 1, size as u64, |d| {
            let mut cq1 = d.cq(1)?;
            cq1.wait_for_event(ev0)?;
            Ok(cq1.read_buffer(&buf, 0, size)?)
        })?;
        if back != data {
            // Exit 5, naming the seed the simulator ran on (where known).
            let seed = cqlab_workloads::runner::device_seed(&args.device, args.seed)
                .map_or(format!("device {}", args.device), |s| format!("seed {s}"));
            let why = format!("round {round}: read-back differs from what was written ({seed})");
            seen.operation = Some(VERIFY);
            return Err(cqlab_driver::DriverError::Mismatch(why).into());
        }
        seen.verified += size as u64;
        progress.inc(1);
    }
    seen.round = None;
    progress.finish_and_clear();
    timed(&mut dev, seen, started, "finish both CQs", 2, 0, |d| {
        d.cq(0)?.finish()?;
        Ok(d.cq(1)?.finish()?)
    })?;
    Ok(())
}

/// The operation a failed read-back comparison names (no row of its own:
/// it takes no device time).
const VERIFY: &str = "verify read-back";

/// The demo's seed and what it means for the figures.
fn seed_of(args: &Args) -> DemoSeed {
    // The simulator's seed, where the client knows it (as `run`'s
    // `device_seed`): an embedded spec's `seed=` or `--seed`; a daemon's or
    // a library's is its own.
    let seed = cqlab_workloads::runner::device_seed(&args.device, args.seed);
    let note = match seed {
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
    DemoSeed { seed, noc_jitter: args.noc_jitter, note }
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

/// The report: text, or one JSON object. `failed`: the error the demo
/// ended in, for a `--json` record of a failed demo (rows and figures as
/// far as it got, and where and how it failed under `failed`; null when
/// it passed).
fn print_table(seen: &Seen, json: bool, seed: &DemoSeed, failed: Option<&anyhow::Error>) -> Result<()> {
    let (verified, total_cycles) = (seen.verified, seen.device_cycles);
    // Merge rows of the same operation.
    let mut merged: Vec<Row> = Vec::new();
    for r in &seen.rows {
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
        let failed = failed.map(|e| {
            let mut f = serde_json::Map::new();
            f.insert("round".into(), seen.round.into());
            f.insert("operation".into(), seen.operation.into());
            f.extend(crate::cli::failure_fields(e));
            f
        });
        // A device that did not open has no chip to name.
        let chip = seen.chip.as_ref();
        outln!(
            "{}",
            serde_json::json!({"chip": chip.map(|c| &c.board), "harvesting": chip.map(|c| &c.harvesting),
                               "grid": chip.map(|c| [c.grid.0, c.grid.1]), "clock_hz": chip.map(|c| c.clock_hz),
                               "rows": v, "verified_bytes": verified,
                               "device_cycles": total_cycles, "seed": seed.seed, "noc_jitter": seed.noc_jitter,
                               "seed_note": seed.note, "failed": failed})
        );
        return Ok(());
    }
    let chip = seen.chip.as_ref().context("a demo that ran names its chip")?;
    let clock_hz = chip.clock_hz;
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
