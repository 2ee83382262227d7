//! `cqlab run WORKLOAD`: a named workload over one or more queue counts,
//! with latency percentiles, throughput, per-command device cycles, stall
//! and wait totals, queue occupancy, queue-switch overhead and scaling
//! efficiency. The workloads themselves live in
//! `cqlab_workloads` so other tools (race, sweeps) can run them.

mod progress;

use crate::cli::MAX_RUN_CQS;
use crate::out::{diagln, outln};
use crate::trace_file::TraceWriter;
use anyhow::Result;
use cqlab_abi::noc::Coord;
use cqlab_abi::trace::TraceRecord;
use cqlab_driver::backend::spec::Spec;
use cqlab_driver::backend::StaleRead;
use cqlab_driver::{DeviceConfig, Topology};
use cqlab_workloads::collect::RecordSink;
use cqlab_workloads::kinds::{Kind, Knobs};
use cqlab_workloads::runner::{
    self, IterationSample, LaunchInfo, Observer, OccupancySample, PointReport, RunSpec, Stopped, SyncMode,
};
use serde_json::{json, Value};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// copy_stress, dispatch_latency, tiny_kernels, matmul_peak, large_gemm or hetero.
    pub workload: String,
    /// Device: embedded[:seed=N][,slow][,exact][,blocking][,no-contention][,icache][,no-l0][,reads-wait-unsent]
    /// (the run's --seed applies when it names none; `slow`: slow dispatch
    /// through the BAR; `exact`: effects between tiles at their cycle;
    /// docs/cli.md has the others), sim:PATH[?wait[=SECS]], ttkmd-sim:PATH,
    /// ttsim:LIBRARY or /dev/tenstorrent/N.
    #[arg(long, default_value = "embedded")]
    pub device: String,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
    #[command(flatten)]
    pub host: crate::cli::HostArgs,
    /// Command queues, or a sweep: `1,2,4` (1..=8; real parts have 2).
    #[arg(long, default_value = "2")]
    pub cqs: String,
    /// Timed iterations (1..=1000000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub iters: u32,
    /// Untimed iterations first (0..=1000000).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub warmup: u32,
    #[command(flatten)]
    pub limits: crate::cli::Limits,
    #[arg(long, default_value_t = 1, value_parser = crate::cli::seed)]
    pub seed: u64,
    /// per-iter: wait for every iteration; end: only after the last.
    #[arg(long, default_value = "per-iter", value_parser = ["per-iter", "end"])]
    pub sync: String,
    /// Write the JSON report here (`-` = stdout; a file is replaced whole
    /// when the run ends).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the run's trace (JSON Lines, see `cqlab trace`) as it runs; a
    /// sweep of queue counts writes one file per count, FILE with `-cqsN`
    /// before its extension (`--trace run.jsonl --cqs 1,2` writes
    /// run-cqs1.jsonl and run-cqs2.jsonl).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Skip checking results (matmul: C bit for bit; copy_stress: read-backs).
    #[arg(long)]
    pub skip_validation: bool,
    /// copy_stress: copies per iteration on each copy queue (1..=10000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub copies: Option<u32>,
    /// copy_stress: buffers the copies rotate over (1..=64).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub buffers: Option<u32>,
    /// copy_stress: copies enqueued before their read-backs are awaited (1..=10000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub depth: Option<u32>,
    /// copy_stress: kernel launches in CQ0's trace (1..=1000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trace_kernels: Option<u32>,
    /// copy_stress: bytes per copy, whole 1024-byte DRAM pages (1024..=67108864).
    #[arg(long, value_parser = copy_bytes)]
    pub bytes: Option<u32>,
    /// tiny_kernels: programs per queue per iteration; hetero: kernels per iteration (1..=10000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub programs: Option<u32>,
    /// copy_stress, tiny_kernels, hetero: cycles a tiny kernel spins (0..=10000000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=MAX_SPIN as i64))]
    pub tiny_cycles: Option<u32>,
    /// hetero: cycles a large kernel spins (0..=10000000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=MAX_SPIN as i64))]
    pub large_cycles: Option<u32>,
    /// hetero: kernels a queue issues in a row before the next queue takes over (1..=10000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub burst: Option<u32>,
    /// matmul_peak, large_gemm: dimensions (C is m x n, the inner dimension
    /// k; 1..=1024, multiples of --tile) and tile edge (4, 8, 12 or 16).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=crate::matmul::MAX_DIM as i64))]
    pub m: Option<u32>,
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=crate::matmul::MAX_DIM as i64))]
    pub n: Option<u32>,
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=crate::matmul::MAX_DIM as i64))]
    pub k: Option<u32>,
    #[arg(long, value_parser = clap::value_parser!(u32).range(4..=16))]
    pub tile: Option<u32>,
}

/// Longest spin of a workload kernel, in cycles.
const MAX_SPIN: u32 = 10_000_000;
/// copy_stress's DRAM page (`cqlab_workloads::kinds`): a copy is
/// whole pages, at most 65536 of them.
const COPY_PAGE: u32 = 1024;

fn copy_bytes(s: &str) -> Result<u32, String> {
    let max = COPY_PAGE * 65536;
    match s.parse::<u32>() {
        Ok(v) if (COPY_PAGE..=max).contains(&v) && v % COPY_PAGE == 0 => Ok(v),
        _ => Err(format!("expected a multiple of {COPY_PAGE} in {COPY_PAGE}..={max} (whole DRAM pages), found {s:?}")),
    }
}

/// The knobs each workload reads; any other knob given is refused.
fn knobs_of(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::CopyStress => &["copies", "buffers", "depth", "trace_kernels", "bytes", "tiny_cycles"],
        Kind::DispatchLatency => &[],
        Kind::TinyKernels => &["programs", "tiny_cycles"],
        Kind::Hetero => &["programs", "tiny_cycles", "large_cycles", "burst"],
        Kind::MatmulPeak | Kind::LargeGemm => &["m", "n", "k", "tile"],
    }
}

const ALL_KNOBS: [&str; 13] = [
    "copies",
    "buffers",
    "depth",
    "trace_kernels",
    "bytes",
    "programs",
    "tiny_cycles",
    "large_cycles",
    "burst",
    "m",
    "n",
    "k",
    "tile",
];

fn kind_of(name: &str) -> Result<Kind, crate::cli::Usage> {
    Kind::from_name(name).ok_or_else(|| {
        let names: Vec<_> = Kind::ALL.iter().map(|k| k.name()).collect();
        crate::cli::Usage(format!("unknown workload {name:?}: one of {}", names.join(", ")))
    })
}

/// The files a run writes: the trace file of each queue count, and the
/// JSON report (unless on stdout).
fn outputs(a: &Args, sweep: &[u8]) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = Vec::new();
    if let Some(t) = &a.trace {
        for &cqs in sweep {
            v.push(("--trace".into(), trace_path(t, cqs, sweep.len() > 1)));
        }
    }
    if let Some(j) = a.json.as_deref().filter(|j| *j != Path::new("-")) {
        v.push(("--json".into(), j.to_owned()));
    }
    v
}

pub fn validate(a: &Args, given: &crate::cli::Given<'_>) -> Result<()> {
    let kind = kind_of(&a.workload)?;
    a.chip.validate_for(crate::device::made_here(&a.device))?;
    let unused: Vec<&str> = ALL_KNOBS.iter().copied().filter(|k| !knobs_of(kind).contains(k)).collect();
    given.refuse(&unused, || format!("not read by {} (its knobs: {})", kind.name(), knob_list(kind)))?;
    let sweep = parse_cqs(&a.cqs)?;
    // Refused here, not after the device booted (helper-53: exit 1 then).
    if let (Ok(Spec::Embedded { slow: true, .. }), Some(why)) = (Spec::parse(&a.device), kind.needs_fast_dispatch()) {
        return Err(crate::cli::Usage(format!(
            "--device {}: {} needs fast dispatch ({why}; leave out `slow`)",
            a.device,
            kind.name()
        ))
        .into());
    }
    if matches!(cqlab_driver::backend::spec::Spec::parse(&a.device), Ok(Spec::Embedded { .. })) {
        // A simulator made here is the chip `--chip`/`--harvest` name, so
        // every queue count is checked against it before any point runs
        // (a device that exists: `run`, once it has opened it).
        for &n in &sweep {
            let chip = Topology::for_board(a.chip.sim_board(), a.chip.harvesting()?, n)
                .map_err(|e| crate::cli::Usage(format!("--cqs {n}: {e}")))?;
            check_rows(n, &chip)?;
        }
    }
    let knobs = knobs(a, kind);
    match cqlab_workloads::kinds::build(kind, &knobs, a.seed) {
        Err(cqlab_driver::DriverError::Invalid(why)) => return Err(crate::cli::Usage(why).into()),
        Err(e) => return Err(e.into()),
        Ok(_) => {}
    }
    if let Some(t) = a.tile {
        // A t x t f32 tile is whole 64-byte DRAM pages when 4 divides t.
        crate::cli::check(t % 4 == 0, || format!("--tile {t}: 4, 8, 12 or 16 (tiles fill whole 64-byte DRAM pages)"))?;
    }
    crate::device::validate(&a.device, 0)?;
    a.host.validate(given, Some(&a.device))?;
    let outs = outputs(a, &sweep);
    for (what, p) in &outs {
        crate::output::check(what, p, crate::output::Kind::File, &[])?;
    }
    let named: Vec<(&str, &Path)> = outs.iter().map(|(w, p)| (w.as_str(), p.as_path())).collect();
    crate::output::distinct(&named)?;
    Ok(())
}

fn knob_list(kind: Kind) -> String {
    match knobs_of(kind) {
        [] => "none".into(),
        k => k.iter().map(|k| format!("--{}", k.replace('_', "-"))).collect::<Vec<_>>().join(", "),
    }
}

/// Each queue takes a worker row of its own: `n` queues on `chip` (placed
/// for `n`, whose queue cores may take compute lines) need `n` rows.
fn check_rows(n: u8, chip: &Topology) -> Result<()> {
    crate::cli::check(n <= chip.rows(), || {
        format!(
            "--cqs {n}: this {} ({}) {} (each queue needs a worker row of its own)",
            chip.board(),
            chip.harvesting(),
            crate::cli::run_queue_limit(chip)
        )
    })
}

fn parse_cqs(s: &str) -> Result<Vec<u8>, crate::cli::Usage> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let usage = |why: String| crate::cli::Usage(format!("--cqs {s:?}: {why}"));
        let n: u8 = part.trim().parse().map_err(|_| usage(format!("{part:?} is not a number")))?;
        if n == 0 || n > MAX_RUN_CQS {
            return Err(usage(format!("{n} is outside 1..={MAX_RUN_CQS}")));
        }
        if out.contains(&n) {
            return Err(usage(format!("{n} appears twice")));
        }
        out.push(n);
    }
    Ok(out)
}

fn knobs(a: &Args, kind: Kind) -> Knobs {
    let mut k = Knobs::defaults(kind);
    let set = |slot: &mut u32, v: Option<u32>| {
        if let Some(v) = v {
            *slot = v;
        }
    };
    set(&mut k.copies, a.copies);
    set(&mut k.buffers, a.buffers);
    set(&mut k.depth, a.depth);
    set(&mut k.trace_kernels, a.trace_kernels);
    set(&mut k.bytes, a.bytes);
    set(&mut k.programs, a.programs);
    set(&mut k.tiny_cycles, a.tiny_cycles);
    set(&mut k.large_cycles, a.large_cycles);
    set(&mut k.burst, a.burst);
    set(&mut k.m, a.m);
    set(&mut k.n, a.n);
    set(&mut k.k, a.k);
    set(&mut k.tile, a.tile);
    k
}

/// Forwards a run to an optional trace writer and the progress bar.
struct CliObserver {
    trace: Option<TraceWriter<BufWriter<std::fs::File>>>,
    progress: progress::Progress,
    /// Where the run stopped, if it failed (for the trace's `end` line).
    stopped: Option<Stopped>,
}

impl RecordSink for CliObserver {
    fn records(&mut self, core: Coord, records: &[TraceRecord]) -> cqlab_driver::Result<()> {
        match &mut self.trace {
            Some(t) => t.records(core, records),
            None => Ok(()),
        }
    }
}

impl Observer for CliObserver {
    fn started(&mut self, chip: &Topology, cores: &[Coord], spec: &RunSpec) -> cqlab_driver::Result<()> {
        self.trace.as_mut().map_or(Ok(()), |t| t.started(chip, cores, spec))
    }
    fn launch(&mut self, l: &LaunchInfo) -> cqlab_driver::Result<()> {
        self.trace.as_mut().map_or(Ok(()), |t| t.launch(l))
    }
    fn iteration(&mut self, it: &IterationSample) -> cqlab_driver::Result<()> {
        self.trace.as_mut().map_or(Ok(()), |t| t.iteration(it))
    }
    fn occupancy(&mut self, o: &OccupancySample) -> cqlab_driver::Result<()> {
        self.trace.as_mut().map_or(Ok(()), |t| t.occupancy(o))
    }
    fn progress(&mut self, done: u32, total: u32) {
        self.progress.update(done, total);
    }
    fn failed(&mut self, at: &Stopped) {
        self.stopped = Some(at.clone());
    }
}

fn trace_path(base: &Path, cqs: u8, sweep: bool) -> PathBuf {
    if !sweep {
        return base.to_owned();
    }
    let stem = base.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match base.extension() {
        Some(ext) => format!("{stem}-cqs{cqs}.{}", ext.to_string_lossy()),
        None => format!("{stem}-cqs{cqs}"),
    };
    base.with_file_name(name)
}

/// Throughput relative to the smallest queue count, per queue; where it stops scaling.
pub fn scaling(points: &[PointReport]) -> Value {
    let mut pts: Vec<&PointReport> = points.iter().filter(|p| p.throughput.is_some()).collect();
    pts.sort_by_key(|p| p.cqs);
    // Null, not a note in the figure's place: it needs a sweep of queue
    // counts (--cqs 1,2,4).
    if pts.len() < 2 {
        return Value::Null;
    }
    let base = pts[0];
    let tb = base.throughput.as_ref().map_or(0.0, |t| t.value);
    let mut rows = Vec::new();
    let mut stops = Value::Null;
    let mut prev = tb;
    for p in &pts {
        let t = p.throughput.as_ref().map_or(0.0, |t| t.value);
        let speedup = t / tb;
        let eff = speedup / (p.cqs as f64 / base.cqs as f64);
        rows.push(json!({"cqs": p.cqs, "throughput": t, "speedup": speedup, "efficiency": eff}));
        if p.cqs != base.cqs && stops.is_null() && t < prev * 1.05 {
            stops = json!(p.cqs);
        }
        prev = t;
    }
    json!({"baseline_cqs": base.cqs, "points": rows, "stops_scaling_at": stops,
           "definition": "efficiency = (throughput / baseline throughput) / (cqs / baseline cqs); stops_scaling_at = \
                          first queue count gaining under 5% over the previous one (null: every step gained)"})
}

pub fn run(a: Args) -> Result<ExitCode> {
    let kind = kind_of(&a.workload)?;
    let sync = SyncMode::from_name(&a.sync)
        .ok_or_else(|| crate::cli::Usage(format!("--sync {:?}: per-iter or end", a.sync)))?;
    let sweep = parse_cqs(&a.cqs)?;
    let knobs = knobs(&a, kind);
    let json_stdout = a.json.as_deref() == Some(Path::new("-"));
    if let Some((board, harvesting, sysmem, path)) = crate::device::daemon_chip(&a.device)? {
        // Every cycle of a run as the daemon's second client would come
        // later than the same seed's embedded run.
        let refused = |e| match e {
            cqlab_driver::DriverError::Invalid(m) => crate::cli::Usage(format!("--device {}: {m}", a.device)),
            e => crate::cli::Usage(format!("--device {}: {e}", a.device)),
        };
        for &n in &sweep {
            let mut cfg = DeviceConfig { num_cqs: n, ..DeviceConfig::default() };
            a.limits.apply(&mut cfg);
            a.chip.apply_for(&mut cfg, false)?;
            cqlab_driver::daemon_backend::check_chip(&path, board, &harvesting, &cfg).map_err(refused)?;
            // Refused before any point, as on the embedded simulator (exit 2).
            let chip = Topology::for_board(board, Some(harvesting.clone()), n)
                .map_err(|e| crate::cli::Usage(format!("--cqs {n}: {e}")))?;
            check_rows(n, &chip)?;
            cfg.check_sysmem(sysmem as u64, &format!("the daemon at {}", path.display())).map_err(refused)?;
        }
    } else if !matches!(cqlab_driver::backend::spec::Spec::parse(&a.device), Ok(Spec::Embedded { .. })) {
        // A device that exists is known once opened: looked at before the
        // first point, so a sweep's last count is not refused after the
        // others have run.
        for &n in &sweep {
            let mut cfg = DeviceConfig { num_cqs: n, ..DeviceConfig::default() };
            a.limits.apply(&mut cfg);
            a.chip.apply_for(&mut cfg, false)?;
            let dev = crate::device::open(&a.device, a.seed, 0, cfg)?;
            check_rows(n, dev.chip())?;
        }
    }
    let mut points = Vec::new();
    for (i, &cqs) in sweep.iter().enumerate() {
        let started = std::time::Instant::now();
        let spec = RunSpec {
            kind,
            knobs: knobs.clone(),
            device: a.device.clone(),
            cqs,
            iters: a.iters,
            warmup: a.warmup,
            seed: a.seed,
            sync,
            skip_validation: a.skip_validation,
            base_config: {
                let mut cfg = DeviceConfig::default();
                a.limits.apply(&mut cfg);
                a.chip.apply_for(&mut cfg, crate::device::made_here(&a.device))?;
                cfg.host_schedule = a.host.schedule(0);
                cfg
            },
        };
        let trace = match &a.trace {
            Some(p) => Some(TraceWriter::create(&trace_path(p, cqs, sweep.len() > 1))?),
            None => None,
        };
        let label = format!("{} --cqs {cqs}", kind.name());
        let mut obs = CliObserver { trace, progress: progress::Progress::new(label, json_stdout), stopped: None };
        let point = match runner::run(&spec, &mut obs) {
            Ok(point) => point,
            Err(e) => {
                let e = anyhow::Error::from(e).context(format!("{} with {cqs} queues", kind.name()));
                let driver = e.chain().find_map(|c| c.downcast_ref::<cqlab_driver::DriverError>());
                let headline = crate::cli::error_headline(&e);
                if let Some(t) = obs.trace.take() {
                    // The trace says the run failed, where, and why, instead
                    // of ending without an `end` line (read as interrupted).
                    let failed = crate::trace_file::Failed {
                        iteration: obs.stopped.as_ref().and_then(|s| s.iteration),
                        cycle: obs.stopped.as_ref().map(|s| s.cycle),
                        exit: crate::exit::of_error(&e).code(),
                        kind: driver.map(|d| d.kind().to_owned()),
                        error: headline.clone(),
                    };
                    if let Err(w) = t.fail(obs.stopped.as_ref(), &failed) {
                        diagln!("warning: ending the trace of the failed run: {w:#}");
                    }
                }
                // A `--json` report still holds the points that ran and
                // says which failed and how (helper-31: a failing sweep
                // wrote nothing, and lost the points before it).
                if let Some(path) = &a.json {
                    // The error's first line (its dump follows it on
                    // stderr), and the dump itself in fields: a device
                    // error's as a hang's.
                    let mut failed = serde_json::Map::from_iter([("cqs".to_owned(), json!(cqs))]);
                    failed.extend(crate::cli::failure_fields(&e));
                    let mut r = report(&a, kind, &knobs, sync, &points)?;
                    r["failed_point"] = failed.into();
                    write_json(path, &r)?;
                }
                return Err(e);
            }
        };
        if let Some(t) = obs.trace.take() {
            t.finish(point.timed_cycles, point.trace.lost)?;
        }
        if sweep.len() > 1 {
            // Each point as it ends (helper-74: a sweep said nothing until
            // its last point); one point's result follows at once.
            diagln!("{}", progress_line(i, sweep.len(), &point, started.elapsed().as_secs_f64()));
        }
        points.push(point);
    }
    let report = report(&a, kind, &knobs, sync, &points)?;
    match &a.json {
        Some(p) => {
            write_json(p, &report)?;
            if p != Path::new("-") {
                print_text(&report);
            }
        }
        None => print_text(&report),
    }
    Ok(ExitCode::SUCCESS)
}

/// The stderr line of the `i`th of `n` points, measured as `p` in `seconds`
/// of host time: its throughput and median latency.
fn progress_line(i: usize, n: usize, p: &PointReport, seconds: f64) -> String {
    let throughput =
        p.throughput.as_ref().map_or("no throughput".into(), |t| format!("{} {}", num(&t.value.into()), t.unit));
    let p50 = p.latency_cycles.as_ref().map_or("no samples".into(), |l| num(&l.p50.into()));
    format!("point {}/{n}: cqs={}, {throughput}, latency p50 {p50} cycles ({seconds:.1} s)", i + 1, p.cqs)
}

/// A note under the table when some point's iterations all took the same
/// time (p50 = p95 = p99 = max over two or more): the simulator is
/// deterministic, so without host jitter an iteration repeats the one
/// before it, and equal percentiles are that, not a flat distribution
/// measured (helper-74).
fn equal_percentiles_line(r: &Value) -> Option<String> {
    let flat: Vec<String> = r["points"]
        .as_array()?
        .iter()
        .filter(|p| {
            let l = &p["latency_cycles"];
            let at = |k: &str| l[k].as_f64();
            l["samples"].as_u64().is_some_and(|n| n >= 2)
                && at("p50").is_some()
                && at("p50") == at("p95")
                && at("p95") == at("p99")
                && at("p99") == at("max")
        })
        .map(|p| p["cqs"].to_string())
        .collect();
    if flat.is_empty() {
        return None;
    }
    let h = &r["host"];
    let unjittered = h["jitter_cycles"].as_u64().unwrap_or(0) == 0 && h["pct_points"].as_u64().unwrap_or(0) == 0;
    let why = if unjittered {
        "the simulator is deterministic: without host jitter every iteration took the same cycles; \
         --host-jitter CYCLES adds spread"
    } else {
        "every iteration took the same cycles, host jitter notwithstanding"
    };
    Some(format!("note: p50 = p95 = p99 = max at cqs {}: {why}", flat.join(", ")))
}

/// `--json`'s destination: stdout for `-`.
fn write_json(path: &Path, report: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    if path == Path::new("-") {
        outln!("{text}");
    } else {
        crate::output::write("--json", path, text.as_bytes())?;
    }
    Ok(())
}

/// The report of `points`, measured as `a` asks.
fn report(a: &Args, kind: Kind, knobs: &Knobs, sync: SyncMode, points: &[PointReport]) -> Result<Value> {
    // Each point names the parameter values it was measured at, so
    // `cqlab compare` pairs points by value.
    let mut point_values: Vec<Value> = Vec::new();
    for p in points {
        let mut v = serde_json::to_value(p)?;
        v["params"] = json!({ "cqs": p.cqs });
        point_values.push(v);
    }
    // The knobs the workload reads (helper-31: every knob was listed, those
    // the workload refuses too).
    let mut knobs = serde_json::to_value(knobs)?;
    if let Some(all) = knobs.as_object_mut() {
        all.retain(|name, _| knobs_of(kind).contains(&name.as_str()));
    }
    Ok(json!({
        "tool": "cqlab run", "schema": 1, "workload": kind.name(), "description": kind.describe(!a.skip_validation),
        "device": runner::device_spec(&a.device, a.seed), "seed": a.seed,
        "device_seed": runner::device_seed(&a.device, a.seed), "host": a.host.report(0),
        "sync": a.sync, "iters": a.iters,
        "warmup": a.warmup, "clock_hz": points.first().map(|p| p.clock_hz),
        "chip": points.first().map(|p| &p.chip), "harvesting": points.first().map(|p| &p.harvesting), "knobs": knobs,
        "worker_kernel": kind.worker_kernel(), "validated": points.iter().any(|p| p.validation.is_some()),
        "latency_definition": match sync {
            SyncMode::PerIter => "device cycles from the host starting to enqueue an iteration to the host seeing its end events complete",
            SyncMode::End => "device cycles between consecutive iterations' completions (dispatcher event records)",
        },
        "points": point_values, "scaling": scaling(points), "failed_point": null,
    }))
}

fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.abs() >= 100.0 || x == x.trunc() => format!("{x:.0}"),
        Some(x) if x.abs() >= 0.1 => format!("{x:.3}"),
        Some(x) => format!("{x:.3e}"),
        None => "no samples".into(),
    }
}

/// A point's L0 data-cache line, where the model has the caches: its
/// counts and the first stale read (`L0CacheStats` as JSON).
fn l0_line(p: &Value) -> Option<String> {
    let l0 = &p["l0_cache"];
    let (hits, stale) = (l0["hits"].as_u64()?, l0["stale_hits"].as_u64()?);
    let first = serde_json::from_value::<StaleRead>(l0["first_stale"].clone())
        .map_or(String::new(), |f| format!("; the first: {f}"));
    Some(format!(
        "cqs {}: L0 data caches {hits} hits, {stale} stale (a copy L1 no longer held: a read no fence preceded){first}",
        p["cqs"]
    ))
}

/// A point's note when its trace rings lapped before the drain read them:
/// what the report counts from the records misses the overwritten ones, as
/// `trace summary` says of its trace (the JSON's `trace.lost`; helper-53:
/// the table hid it).
fn lost_line(p: &Value) -> Option<String> {
    let lost = p["trace"]["lost"].as_u64().filter(|&n| n > 0)?;
    Some(format!(
        "note: cqs {}: {lost} trace records were overwritten before they were read: the counts and totals \
         taken from the trace (kernels, switch samples, stall+wait cycles) are lower bounds",
        p["cqs"]
    ))
}

fn print_text(r: &Value) {
    // The device when it is not simply the embedded one at the run's seed
    // (a spec's own seed or model words, a daemon, hardware).
    let device = r["device"].as_str().unwrap_or("");
    let plain = format!("embedded:seed={}", r["seed"]);
    let on = match r["device_seed"].as_u64() {
        _ if device == plain => String::new(),
        Some(_) => format!(", device {device}"),
        // The seed drew the workload's data only (helper-31: a daemon's run
        // read as run at the seed its simulator was not started with).
        None => format!(", device {device} with its own seed"),
    };
    let h = &r["host"];
    let host = match (h["jitter_cycles"].as_u64().unwrap_or(0), h["pct_points"].as_u64().unwrap_or(0)) {
        (0, 0) => String::new(),
        (j, 0) => format!(", host jitter {j}"),
        (j, p) => format!(", host jitter {j}, host PCT {p} of {}", h["pct_steps"]),
    };
    outln!(
        "{}: {} ({} timed + {} warmup iterations, sync {}, seed {}{on}{host}, worker kernel {})",
        r["workload"].as_str().unwrap_or(""),
        r["description"].as_str().unwrap_or(""),
        r["iters"],
        r["warmup"],
        r["sync"].as_str().unwrap_or(""),
        r["seed"],
        r["worker_kernel"].as_str().unwrap_or("")
    );
    outln!(
        "{:>4} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>16} {:>14}",
        "cqs",
        "throughput",
        "mean cyc",
        "p50",
        "p95",
        "p99",
        "max",
        "switch ovh cyc",
        "stall+wait cyc"
    );
    for p in r["points"].as_array().into_iter().flatten() {
        let l = &p["latency_cycles"];
        let so = &p["switch_overhead"];
        let ovh = match so["overhead_cycles"].as_f64() {
            Some(x) => format!("{x:.0} ({}/{})", so["cross_cq_samples"], so["same_cq_samples"]),
            None => "no samples".into(),
        };
        outln!(
            "{:>4} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>16} {:>14}",
            p["cqs"].as_u64().unwrap_or(0),
            num(&p["throughput"]["value"]),
            num(&l["mean"]),
            num(&l["p50"]),
            num(&l["p95"]),
            num(&l["p99"]),
            num(&l["max"]),
            ovh,
            p["stall_total_cycles"].as_u64().unwrap_or(0) + p["wait_total_cycles"].as_u64().unwrap_or(0)
        );
    }
    if let Some(line) = equal_percentiles_line(r) {
        outln!("{line}");
    }
    if let Some(p) = r["points"].as_array().and_then(|a| a.first()) {
        outln!(
            "throughput unit: {}; latency in device cycles of the {} at {:.2} GHz",
            p["throughput"]["unit"],
            p["chip"].as_str().unwrap_or("?"),
            p["clock_hz"].as_f64().unwrap_or(0.0) / 1e9
        );
        if !p["matmul"].is_null() {
            for p in r["points"].as_array().into_iter().flatten() {
                let m = &p["matmul"];
                outln!(
                    // The cycles are the peak's basis (the kernel's own cost a
                    // multiply-add, calibrated), not the measured rate (helper-67).
                    "cqs {}: {:.6} TFLOPS ({:.3} GFLOPS) on {} workers, peak {:.6} TFLOPS (at {:.1} cycles per multiply-add), utilization {:.1}%",
                    p["cqs"],
                    m["tflops"].as_f64().unwrap_or(0.0),
                    m["gflops"].as_f64().unwrap_or(0.0),
                    m["workers"],
                    m["peak_tflops"].as_f64().unwrap_or(0.0),
                    m["cycles_per_mac"].as_f64().unwrap_or(0.0),
                    m["utilization"].as_f64().unwrap_or(0.0) * 100.0
                );
            }
        }
    }
    for line in r["points"].as_array().into_iter().flatten().filter_map(lost_line) {
        outln!("{line}");
    }
    for line in r["points"].as_array().into_iter().flatten().filter_map(l0_line) {
        outln!("{line}");
    }
    for p in r["points"].as_array().into_iter().flatten() {
        let ks: Vec<String> = p["kernels"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|k| {
                let d = &k["duration"];
                let run = d["total_cycles"].as_f64().unwrap_or(0.0) / d["count"].as_f64().unwrap_or(1.0).max(1.0);
                let wait = k["launch_to_start_cycles"]["mean"]
                    .as_f64()
                    .map_or("replayed from a trace".into(), |w| format!("{w:.0} enqueue->start"));
                // The spread beside the mean: a launch's cores need not all
                // have work (a matmul's past the last output tile end at once).
                format!(
                    "{} {run:.0} run ({}..{} over {}), {wait}",
                    k["label"].as_str().unwrap_or(""),
                    d["min_cycles"],
                    d["max_cycles"],
                    d["count"]
                )
            })
            .collect();
        if !ks.is_empty() {
            outln!("cqs {} kernels (mean cycles a core, min..max over the kernels): {}", p["cqs"], ks.join("; "));
        }
    }
    let s = &r["scaling"];
    if let Some(rows) = s["points"].as_array() {
        let eff: Vec<String> =
            rows.iter().map(|x| format!("{}: {:.2}", x["cqs"], x["efficiency"].as_f64().unwrap_or(0.0))).collect();
        outln!(
            "scaling efficiency vs {} queue(s): {}; stops scaling at {}",
            s["baseline_cqs"],
            eff.join(", "),
            if s["stops_scaling_at"].is_null() {
                "none of these counts".into()
            } else {
                s["stops_scaling_at"].to_string()
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::tensix::Processor;
    use cqlab_driver::backend::L0CacheStats;

    /// `l0_cache.first_stale` is structured (it was a prose string): the
    /// core as `{"x", "y"}`, its processor, PC, address and cycle; the text
    /// line is made from it.
    #[test]
    fn the_first_stale_read_is_an_object_and_reads_back_as_text() {
        let first =
            StaleRead { core: Coord::new(1, 2), processor: Processor::Ncrisc, pc: 0x1f0, addr: 0x9000, cycle: 77 };
        let stats = L0CacheStats { hits: 10, stale_hits: 3, first_stale: Some(first) };
        let point = json!({"cqs": 1, "l0_cache": stats});
        assert_eq!(
            point["l0_cache"]["first_stale"],
            json!({"core": {"x": 1, "y": 2}, "processor": "ncrisc", "pc": 0x1f0, "addr": 0x9000, "cycle": 77})
        );
        let line = l0_line(&point).unwrap();
        assert!(line.ends_with("; the first: core (1,2) ncrisc pc 0x1f0 addr 0x9000 at cycle 77"), "{line}");
        let none = json!({"cqs": 1, "l0_cache": L0CacheStats { hits: 10, ..L0CacheStats::default() }});
        assert!(l0_line(&none).is_some_and(|l| !l.contains("the first")), "{none}");
        assert_eq!(l0_line(&json!({"cqs": 1, "l0_cache": null})), None, "a model without the caches");
    }
}
