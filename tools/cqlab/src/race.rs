//! `cqlab race`: a workload over many seeds, each seed a different schedule
//! (and, for the random workload, a different command mix and queue layout),
//! with amplifiers that widen race windows. Each seed gives one JSONL record;
//! the report (failure rate with its 95% interval, distinct failure
//! signatures with count and first seed, time and seeds to first failure)
//! is computed from the records alone, so `--jobs` and `--shard` give the
//! same report as one process. Every failure names the command that replays
//! it exactly (`cqlab replay RECORD` does so from the JSONL line).

mod args;
pub mod failure;
pub mod faults;
pub mod programs;
pub mod random;
pub mod trace_export;
pub mod two_queue;

use crate::campaign::{Report, SeedRecord, Shard};
use crate::usage::{ensure, UsageError};
use anyhow::{Context, Result};
pub use args::{Args, WorkloadKind};
use args::{MAX_BYTES, MAX_LATENCY, MAX_TIMEOUT};
use cqlab_driver::{Device, DeviceConfig, DriverError};
use cqlab_sim::config::{Schedule, SimConfig};
use failure::Failure;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

/// Everything one seed needs, checked once.
#[derive(Clone, Debug)]
pub struct Plan {
    pub args: Args,
    pub faults: faults::Faults,
    /// CQ firmware: a known-bug variant name or an absolute directory.
    pub cq_firmware: Option<String>,
    pub shard: Shard,
}

impl Plan {
    pub fn new(args: Args) -> Result<Self, UsageError> {
        let a = &args;
        ensure(a.seeds > 0, || "--seeds must be at least 1".into())?;
        ensure(a.seed_base.checked_add(a.seeds - 1).is_some(), || {
            format!("--seed-base {} + --seeds {} runs past the largest seed {}", a.seed_base, a.seeds, u64::MAX)
        })?;
        ensure((1..=MAX_BYTES).contains(&a.bytes), || format!("--bytes {} (1..={MAX_BYTES})", a.bytes))?;
        ensure((1..=1_000_000).contains(&a.iterations), || format!("--iterations {} (1..=1000000)", a.iterations))?;
        ensure(a.copies <= 10_000, || format!("--copies {} (0..=10000)", a.copies))?;
        ensure(a.jitter <= MAX_LATENCY, || format!("--jitter {} cycles (0..={MAX_LATENCY})", a.jitter))?;
        ensure((1..=MAX_LATENCY).contains(&a.pcie_read_latency), || {
            format!("--pcie-read-latency {} cycles (1..={MAX_LATENCY})", a.pcie_read_latency)
        })?;
        ensure(a.core_stall.is_finite() && (0.0..=1.0).contains(&a.core_stall), || {
            format!("--core-stall {} is a probability in 0..=1", a.core_stall)
        })?;
        let min_timeout = cqlab_driver::wait::PROGRESS_CHECK_CYCLES;
        ensure((min_timeout..=MAX_TIMEOUT).contains(&a.timeout_cycles), || {
            format!(
                "--timeout-cycles {} ({min_timeout}..={MAX_TIMEOUT}: the driver checks progress every {min_timeout} cycles)",
                a.timeout_cycles
            )
        })?;
        ensure(a.pct_depth <= 64, || format!("--pct-depth {} (0..=64)", a.pct_depth))?;
        ensure(a.pct_depth == 0 || a.pct_steps > 0, || "--pct-steps must be at least 1".into())?;
        ensure((1..=256).contains(&a.jobs), || format!("--jobs {} (1..=256)", a.jobs))?;
        let faults = faults::Faults::parse(&a.faults)?;
        let cq_firmware = match (&a.variant, &a.firmware) {
            (Some(v), _) => Some(v.clone()),
            (None, Some(f)) if Path::new(f).is_dir() => {
                let abs = std::fs::canonicalize(f).map_err(|e| UsageError(format!("--firmware {f}: {e}")))?;
                Some(abs.to_string_lossy().into_owned())
            }
            (None, Some(f)) => Some(f.clone()),
            (None, None) => None,
        };
        let shard = Shard::resolve(a.records.shard.as_deref())?;
        let plan = Plan { args, faults, cq_firmware, shard };
        plan.preflight()?;
        Ok(plan)
    }

    /// Boots the device of the first seed: a queue size the device refuses or
    /// firmware that is missing is a usage error before any seed runs.
    fn preflight(&self) -> Result<(), UsageError> {
        let seed = self.args.seed_base;
        let (sim, cfg) = self.configs(seed);
        let config_error = |e: DriverError| UsageError(format!("the device refuses this configuration: {e}"));
        let mut dev = Device::embedded(sim, cfg).map_err(config_error)?;
        dev.boot().map_err(config_error)?;
        if self.args.workload == WorkloadKind::TwoQueue {
            two_queue::preflight(&self.args, &mut dev).map_err(config_error)?;
        }
        Ok(())
    }

    /// The simulator and device configuration of one seed.
    pub fn configs(&self, seed: u64) -> (SimConfig, DeviceConfig) {
        let a = &self.args;
        let cfg = DeviceConfig {
            firmware_variant: self.cq_firmware.clone(),
            stall_timeout_cycles: a.timeout_cycles + a.delay as u64,
            kernel_timeout_cycles: a.timeout_cycles,
            issue_size: a.issue_size,
            completion_size: a.completion_size,
            ring_pages: a.ring_pages,
            worker_kernel: "spin".into(),
            ..Default::default()
        };
        let mut sim = SimConfig { seed, ..Default::default() };
        sim.faults.noc_jitter_cycles = a.jitter;
        sim.faults.reorder = a.reorder;
        sim.pcie.read_latency_cycles = a.pcie_read_latency;
        if a.core_stall > 0.0 {
            (sim.faults.core_stall_prob, sim.faults.core_stall_cycles) = (a.core_stall, 2000);
        }
        if a.pct_depth > 0 {
            sim.schedule = Schedule::Pct { depth: a.pct_depth, steps: a.pct_steps };
        }
        let mut cfg = cfg;
        match a.workload {
            WorkloadKind::Random => random::configure(seed, &mut sim, &mut cfg),
            WorkloadKind::Programs => programs::configure(seed, &mut sim, &mut cfg),
            WorkloadKind::TwoQueue => {}
        }
        self.faults.apply(&mut sim);
        self.faults.apply_device(&mut cfg);
        (sim, cfg)
    }

    /// The options that shape a run, every one written out, so the line
    /// replays the run whatever the defaults become.
    pub fn shape_argv(&self) -> Vec<String> {
        let a = &self.args;
        let mut v: Vec<String> = vec!["race".into(), "--workload".into(), a.workload.name().into()];
        let mut opt = |k: &str, val: String| {
            v.push(format!("--{k}"));
            v.push(val);
        };
        if let Some(fw) = &self.cq_firmware {
            opt("firmware", fw.clone());
        }
        opt("iterations", a.iterations.to_string());
        opt("jitter", a.jitter.to_string());
        opt("core-stall", a.core_stall.to_string());
        opt("reorder", a.reorder.to_string());
        if a.workload == WorkloadKind::TwoQueue {
            // The random workload draws these per seed.
            opt("copies", a.copies.to_string());
            opt("bytes", a.bytes.to_string());
            opt("page-size", a.page_size.to_string());
            opt("delay", a.delay.to_string());
            opt("ring-pages", a.ring_pages.to_string());
            opt("pcie-read-latency", a.pcie_read_latency.to_string());
            opt("issue-size", a.issue_size.to_string());
            opt("completion-size", a.completion_size.to_string());
        }
        opt("timeout-cycles", a.timeout_cycles.to_string());
        opt("pct-depth", a.pct_depth.to_string());
        opt("pct-steps", a.pct_steps.to_string());
        for f in &a.faults {
            opt("faults", f.clone());
        }
        v
    }

    /// `cqlab ...` arguments that replay exactly `seed`.
    pub fn replay_argv(&self, seed: u64) -> Vec<String> {
        let mut v = self.shape_argv();
        v.extend(["--seed-base".into(), seed.to_string(), "--seeds".into(), "1".into()]);
        v
    }

    /// Campaign positions this process runs.
    fn owned(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.args.seeds).filter(|&i| self.shard.owns(i)).map(|i| (i, self.args.seed_base + i))
    }
}

/// Runs one seed on a fresh embedded device. Returns the outcome and the
/// device (for dumps and traces), if it was built.
pub fn run_seed(plan: &Plan, seed: u64) -> (Result<(), Failure>, Option<Device>) {
    let (sim, cfg) = plan.configs(seed);
    let mut dev = match Device::embedded(sim, cfg) {
        Ok(d) => d,
        Err(e) => return (Err(e.into()), None),
    };
    let outcome = dev.boot().map_err(Failure::from).and_then(|()| match plan.args.workload {
        WorkloadKind::TwoQueue => two_queue::run(&plan.args, &mut dev),
        WorkloadKind::Random => random::run(plan.args.iterations, seed, &mut dev),
        WorkloadKind::Programs => programs::run(plan.args.iterations, seed, &mut dev),
    });
    (outcome, Some(dev))
}

/// Runs `seed` and makes its record; writes its dump files on failure.
pub fn record_seed(plan: &Plan, index: u64, seed: u64) -> Result<SeedRecord> {
    let start = Instant::now();
    let (outcome, mut dev) = run_seed(plan, seed);
    let seconds = start.elapsed().as_secs_f64();
    let device_cycles = dev.as_ref().map_or(0, |d| d.now());
    if let Err(Failure::Driver(e @ (DriverError::Invalid(_) | DriverError::OutOfRange { .. }))) = &outcome {
        // The device refused what this configuration asks: not a race.
        return Err(UsageError(format!("seed {seed}: the workload's configuration is refused: {e}")).into());
    }
    let failure = outcome.as_ref().err().map(Failure::classify);
    if let (Err(f), Some(dir)) = (&outcome, &plan.args.dump_dir) {
        write_dump(dir, seed, f, dev.as_mut())?;
    }
    Ok(SeedRecord {
        tool: "race".into(),
        seed,
        index,
        ok: outcome.is_ok(),
        failure,
        device_cycles,
        seconds,
        metrics: Default::default(),
        argv: plan.replay_argv(seed),
    })
}

/// `DIR/seed-N.txt` (the whole error with its hang dump), `seed-N.json`
/// (the dump as JSON) and `seed-N.trace.json` (every core's trace ring,
/// Chrome/Perfetto JSON).
pub fn write_dump(dir: &Path, seed: u64, f: &Failure, dev: Option<&mut Device>) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let base = dir.join(format!("seed-{seed}"));
    std::fs::write(base.with_extension("txt"), f.full_text() + "\n")?;
    let json = serde_json::json!({"seed": seed, "failure": f.classify(), "detail": f.full_text(), "dump": f.dump()});
    std::fs::write(base.with_extension("json"), serde_json::to_string_pretty(&json)? + "\n")?;
    if let Some(dev) = dev {
        let trace = trace_export::chrome_trace(dev)?;
        std::fs::write(base.with_extension("trace.json"), serde_json::to_string(&trace)? + "\n")?;
    }
    Ok(())
}

fn run_serial(plan: &Plan, sink: &mut dyn FnMut(&SeedRecord) -> Result<()>) -> Result<()> {
    let total = plan.owned().count();
    for (n, (index, seed)) in plan.owned().enumerate() {
        let r = record_seed(plan, index, seed)?;
        if !plan.args.child && !plan.args.records.json {
            let verdict = r.failure.as_ref().map_or_else(|| "pass".into(), |f| format!("FAIL {}", f.error));
            eprintln!("[{}/{total}] seed {seed}: {verdict}", n + 1);
        }
        sink(&r)?;
        if !r.ok && plan.args.until_first {
            break;
        }
    }
    Ok(())
}

/// `--jobs J`: J child processes, each a share of this shard's seeds.
fn run_parallel(plan: &Plan, argv_tail: &[String], sink: &mut dyn FnMut(&SeedRecord) -> Result<()>) -> Result<()> {
    let exe = std::env::current_exe().context("locating the cqlab binary")?;
    let jobs = plan.args.jobs as u64;
    let mut children = Vec::new();
    for k in 0..jobs {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(plan.shape_argv())
            .args(["--seed-base", &plan.args.seed_base.to_string(), "--seeds", &plan.args.seeds.to_string()])
            .args(["--shard", &plan.shard.split(k, jobs).to_string(), "--child"])
            .args(argv_tail)
            .stdout(std::process::Stdio::piped());
        children.push(cmd.spawn().context("starting a race job")?);
    }
    let (tx, rx) = std::sync::mpsc::channel::<Result<SeedRecord, String>>();
    let mut readers = Vec::new();
    for child in &mut children {
        let out = child.stdout.take().expect("piped");
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let msg =
                    line.map_err(|e| e.to_string()).and_then(|l| serde_json::from_str(&l).map_err(|e| e.to_string()));
                if tx.send(msg).is_err() {
                    return;
                }
            }
        }));
    }
    drop(tx);
    let total = plan.owned().count();
    let mut n = 0;
    for msg in rx {
        let r = msg.map_err(|e| anyhow::anyhow!("a race job wrote an unreadable record: {e}"))?;
        n += 1;
        if !plan.args.records.json {
            let verdict = r.failure.as_ref().map_or_else(|| "pass".into(), |f| format!("FAIL {}", f.error));
            eprintln!("[{n}/{total}] seed {}: {verdict}", r.seed);
        }
        sink(&r)?;
        if !r.ok && plan.args.until_first {
            for c in &mut children {
                let _ = c.kill();
            }
            break;
        }
    }
    for mut c in children {
        let status = c.wait()?;
        if !plan.args.until_first && !crate::exit::ran(status.code()) {
            anyhow::bail!("a race job exited with {status}");
        }
    }
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode> {
    let plan = Plan::new(args)?;
    let mut records = Vec::new();
    let mut jsonl = plan.args.records.open_jsonl()?;
    let child = plan.args.child;
    let mut sink = |r: &SeedRecord| -> Result<()> {
        let line = serde_json::to_string(r)?;
        if let Some(f) = &mut jsonl {
            writeln!(f, "{line}")?;
            f.flush()?;
        }
        if child {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}")?;
            out.flush()?;
        }
        records.push(r.clone());
        Ok(())
    };
    if plan.args.jobs > 1 && !child {
        let mut tail = Vec::new();
        if plan.args.until_first {
            tail.push("--until-first".to_owned());
        }
        if let Some(d) = &plan.args.dump_dir {
            tail.extend(["--dump-dir".to_owned(), d.to_string_lossy().into_owned()]);
        }
        run_parallel(&plan, &tail, &mut sink)?;
    } else {
        run_serial(&plan, &mut sink)?;
    }
    let report = Report::from_records(&records);
    if !child {
        print_report(&plan, &report)?;
    }
    Ok(report.exit_code())
}

fn print_report(plan: &Plan, report: &Report) -> Result<()> {
    let a = &plan.args;
    if a.records.json {
        let mut v = serde_json::to_value(report)?;
        v["workload"] = a.workload.name().into();
        v["firmware"] = plan.cq_firmware.clone().into();
        v["shard"] = plan.shard.to_string().into();
        println!("{v}");
        return Ok(());
    }
    let header = format!(
        "race {} (firmware {}, shard {}, {} iterations, jitter {}, delay {}, pct depth {})",
        a.workload.name(),
        plan.cq_firmware.as_deref().unwrap_or("normal"),
        plan.shard,
        a.iterations,
        a.jitter,
        a.delay,
        a.pct_depth
    );
    report.print(&header);
    Ok(())
}
