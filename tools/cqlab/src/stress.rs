//! `cqlab stress restart`: reference 000/001's restart fuzzing. N fresh
//! processes one after another, each a workload with a recorded random seed,
//! under the device lock (a `sim:PATH` daemon admits one owner; `?wait`
//! queues the next run behind it), each with a hard timeout (a run that
//! hangs is killed and counted). A seeded fraction of runs can be SIGKILLed
//! mid-enqueue (`--kill-rate`); the runs after a kill must boot clean. One
//! JSONL record per run, a summary (failures with seed, signature and the
//! command that replays them) and drift statistics of every metric.

use crate::campaign::{Report, SeedRecord, Shard};
use crate::device::{open_for_campaign, Opened};
use crate::exit::{Exit, FailureClass};
use crate::out::{diagln, outln};
use crate::race::failure::Failure;
use crate::sweep::Knobs;
use crate::usage::{ensure, UsageError};
use anyhow::{Context, Result};
use cqlab_abi::soc::{Board, Harvesting};
use cqlab_driver::backend::spec::{Model, Spec};
use cqlab_sim::rng::Rng;
use cqlab_workloads::kinds::Kind;
use cqlab_workloads::runner::{RunSpec, SyncMode};
use cqlab_workloads::stats;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Run a workload in N fresh processes, one after another.
    Restart(RestartArgs),
    /// One run (what `restart` starts; also its replay command).
    #[command(hide = true)]
    RunOne(OneArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Reset {
    /// Reset the device before every run.
    Every,
    /// Reset before the first run of each phase (--phase-runs runs).
    Phase,
    /// Never: every run boots the device as the last one left it.
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// Write a buffer, enqueue --depth reads before collecting, check them.
    #[value(name = "copy_stress")]
    CopyStress,
    /// The race tool's random protocol workload (--iterations x 12 commands).
    Random,
    /// The race tool's random program streams (--iterations x 25 programs).
    Programs,
    /// `run matmul_peak`: --iterations timed iterations, no warmup, the
    /// matrices drawn from the run's seed, the product checked; GFLOPS per run.
    #[value(name = "matmul_peak")]
    MatmulPeak,
}

/// Most runs of one campaign.
pub const MAX_RUNS: u64 = 100_000;

/// What shapes one run (shared by `restart` and `run-one`).
#[derive(clap::Args, Clone, Debug)]
pub struct WorkloadArgs {
    #[arg(long, value_enum, default_value = "copy_stress")]
    pub workload: Workload,
    /// Device: embedded[:slow][,exact][,blocking][,no-contention][,icache][,no-l0][,reads-wait-unsent]
    /// (a fresh simulator per run, seeded by the run's seed; `slow` with
    /// matmul_peak only) or sim:PATH[?wait[=SECS]] (a `cqlab sim serve`
    /// daemon; runs take its lock, ?wait queues behind another holder).
    #[arg(long, default_value = "embedded")]
    pub device: String,
    /// copy_stress: reads enqueued before collecting any (1..=1000000).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=MAX_DEPTH))]
    pub depth: u64,
    /// copy_stress: bytes per read (1..=1048576).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub bytes: u64,
    /// random: iterations (12 commands each); programs: iterations (25
    /// programs each), both on the device's default queue layout;
    /// matmul_peak: timed iterations (1..=1000000).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub iterations: u32,
    /// Device cycles without progress before a wait gives up (1000000..=1000000000000).
    #[arg(long, default_value_t = 5_000_000,
          value_parser = clap::value_parser!(u64).range(cqlab_driver::wait::PROGRESS_CHECK_CYCLES..=1_000_000_000_000))]
    pub timeout_cycles: u64,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
    #[command(flatten)]
    pub host: crate::cli::HostArgs,
}

#[derive(clap::Args, Clone, Debug)]
pub struct RestartArgs {
    /// Runs of the campaign (1..=100000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_RUNS))]
    pub runs: u64,
    /// Hard per-run timeout in seconds: a run still going is killed and
    /// counted (0.001 to 86400).
    #[arg(long, default_value_t = 60.0, value_parser = timeout_seconds)]
    pub timeout: f64,
    #[arg(long, value_enum, default_value = "never")]
    pub reset: Reset,
    /// Runs per phase for --reset phase (1..=100000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=MAX_RUNS))]
    pub phase_runs: u64,
    /// Fraction of runs SIGKILLed mid-enqueue (seeded; 0 up to, not
    /// including, 1: some runs must complete).
    #[arg(long, default_value_t = 0.0, value_parser = |s: &str| crate::args::real_below(s, 0.0, 1.0))]
    pub kill_rate: f64,
    /// Seed of the campaign: run i uses a seed drawn from it (recorded).
    #[arg(long, default_value_t = 1, value_parser = crate::cli::seed)]
    pub seed: u64,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub records: crate::campaign::RecordArgs,
}

/// At least a millisecond: below it no run can start, and 1e-300 was
/// printed as a 300-digit "still running after" (helper-65).
fn timeout_seconds(s: &str) -> Result<f64, String> {
    let range = || format!("{s} is not a timeout: at least 0.001, at most 86400 seconds");
    match crate::args::real(s, 0.001..=86_400.0) {
        Ok(v) => Ok(v),
        // Out of range: this range's words, not `real`'s.
        Err(_) if s.trim().parse::<f64>().is_ok_and(f64::is_finite) => Err(range()),
        Err(e) => Err(e),
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct OneArgs {
    #[arg(long, value_parser = crate::cli::seed)]
    pub seed: u64,
    /// Reset the device before booting.
    #[arg(long)]
    pub reset_first: bool,
    /// Stop once the workload has enqueued its n-th step (copy_stress's
    /// reads, random's operations, programs' programs, matmul_peak's
    /// iterations) and wait for the SIGKILL the campaign planned there,
    /// saying so on stdout (`enqueued N`): the kill lands
    /// at that point whatever the machine's load, where a run that went on
    /// could finish before it (helper-31's test run lost every kill so),
    /// and the same seed kills at the same point.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=u32::MAX as u64))]
    pub hold_after_enqueued: Option<u64>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
}

/// Checks a run's shape before any process starts.
fn validate_workload(w: &WorkloadArgs, given: &crate::cli::Given<'_>) -> Result<(), UsageError> {
    w.chip.validate_for(crate::device::made_here(&w.device))?;
    match w.workload {
        Workload::CopyStress => {
            given.refuse(&["iterations"], || "applies to --workload random, programs or matmul_peak".into())?;
            // Each read lands in one L1 buffer of a worker: its user region
            // (the same on every chip) bounds it.
            let user = cqlab_abi::memory_map::USER.size as u64;
            ensure(w.bytes <= user, || {
                format!("--bytes {}: a read lands in one worker's L1 user region, {user} bytes", w.bytes)
            })?
        }
        Workload::Random | Workload::Programs | Workload::MatmulPeak => {
            given.refuse(&["depth", "bytes"], || "applies to --workload copy_stress only".into())?
        }
    }
    crate::device::validate(&w.device, 0)?;
    w.host.validate(given, Some(&w.device))?;
    let embedded = embedded_spec(&w.device)?;
    ensure(embedded.is_some() || w.device.starts_with("sim:"), || {
        format!("--device {}: stress runs on embedded[:WORDS] or sim:PATH[?wait[=SECS]]", w.device)
    })?;
    ensure(!embedded.is_some_and(|(slow, _)| slow) || w.workload == Workload::MatmulPeak, || {
        format!(
            "--device {}: slow dispatch launches kernels through the BAR, with no command queues for --workload {} \
             (matmul_peak only)",
            w.device,
            workload_name(w.workload)
        )
    })?;
    // Every image a run boots, checked once (a daemon's chip is known here
    // only when --chip names it), so a bad file is refused rather than
    // failing every run.
    if embedded.is_some() || w.chip.chip.is_some() {
        let (cfg, arch) = (run_config(w)?, w.chip.sim_board().arch());
        let kernels: &[&str] =
            if w.workload == Workload::Programs { &cqlab_workloads::program_stream::KERNELS } else { &[] };
        cfg.check_firmware(arch)
            .and_then(|()| cfg.check_kernels(arch, kernels.iter().copied()))
            .map_err(|e| UsageError(format!("the firmware: {e}")))?;
        if crate::device::made_here(&w.device) {
            queues_fit(w, cfg.sim_board(), cfg.sim_harvesting())?;
        }
    }
    Ok(())
}

/// A matmul_peak run gives each of its queues a worker row, as `run`
/// does: a chip with fewer is refused before the first run (helper-66:
/// every run of a campaign failed on one row).
fn queues_fit(w: &WorkloadArgs, board: Board, harvesting: Harvesting) -> Result<(), UsageError> {
    let Some(spec) = matmul_spec(w, 0)? else { return Ok(()) };
    let chip = cqlab_driver::Topology::for_board(board, Some(harvesting.clone()), spec.cqs)
        .map_err(|e| UsageError(format!("--workload matmul_peak: {e}")))?;
    ensure(spec.cqs <= chip.rows(), || {
        format!(
            "--workload matmul_peak runs {} queues, each on a worker row of its own, and {board} ({harvesting}) has {} \
             worker row{}",
            spec.cqs,
            chip.rows(),
            if chip.rows() == 1 { "" } else { "s" }
        )
    })
}

pub fn validate(cmd: &Command, given: &crate::cli::Given<'_>) -> Result<()> {
    match cmd {
        Command::Restart(a) => {
            validate_workload(&a.workload, given)?;
            if a.reset != Reset::Phase {
                given.refuse(&["phase_runs"], || "applies to --reset phase only".into())?;
            }
            Shard::resolve(a.records.shard.as_deref())?;
            if let Some(j) = &a.records.jsonl {
                crate::output::check("--jsonl", j, crate::output::Kind::File, &[])?;
            }
        }
        Command::RunOne(a) => validate_workload(&a.workload, given)?,
    }
    Ok(())
}

/// What a run prints on stdout when it ends.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    pub failure: Option<crate::race::failure::Classified>,
    pub device_cycles: u64,
    pub metrics: BTreeMap<String, f64>,
    /// The run could not have the device (another process holds it, or no
    /// daemon serves it): not a result, the campaign stops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// Printed on stdout by a run held for a kill, `enqueued N` once it holds
/// after step N ([`kill_steps`]): where the kill lands.
const ENQUEUED: &str = "enqueued ";
/// The most reads a copy_stress run enqueues (`--depth`), and so the
/// latest read a kill is planned after.
const MAX_DEPTH: u64 = 1_000_000;

/// An embedded spec's slow dispatch and timing model (`None`: not
/// embedded). A run's seed is its own: a spec's `seed=` is refused.
fn embedded_spec(spec: &str) -> Result<Option<(bool, Model)>, UsageError> {
    let words = match spec.strip_prefix("embedded") {
        Some("") => return Ok(Some((false, Model::default()))),
        Some(rest) => rest.strip_prefix(':'),
        None => None,
    };
    let Some(words) = words else { return Ok(None) };
    ensure(!words.split(',').any(|w| w.starts_with("seed=")), || {
        format!("--device {spec}: each run draws its seed from --seed (recorded): no seed= here")
    })?;
    match Spec::parse(spec).map_err(|e| UsageError(format!("--device {spec}: {e}")))? {
        Spec::Embedded { slow, model, .. } => Ok(Some((slow, model))),
        _ => Ok(None),
    }
}

/// The board and harvesting a campaign's runs boot, as `--chip` and
/// `--harvest` name them (a simulator made here: its default; a daemon:
/// its own, none here, where the options leave it open).
fn chip_of(w: &WorkloadArgs) -> (Option<String>, Option<String>) {
    let here = crate::device::made_here(&w.device);
    let harvest = w.chip.harvesting().ok().flatten();
    match (w.chip.chip, harvest) {
        (None, _) if !here => (None, None),
        (Some(board), None) if !here => (Some(board.to_string()), None),
        _ => match run_config(w) {
            Ok(cfg) => (Some(cfg.sim_board().to_string()), Some(cfg.sim_harvesting().to_string())),
            Err(_) => (None, None),
        },
    }
}

/// [`chip_of`] as the text header says it.
fn chip_text(w: &WorkloadArgs) -> String {
    match chip_of(w) {
        (None, _) => "the daemon's".into(),
        (Some(board), None) => format!("{board} with the daemon's harvesting"),
        (Some(board), Some(harvesting)) => format!("{board} harvested {harvesting}"),
    }
}

/// `--reset`'s value as the command line takes it.
fn reset_name(r: Reset) -> String {
    clap::ValueEnum::to_possible_value(&r).expect("no variant is skipped").get_name().to_owned()
}

fn workload_name(w: Workload) -> &'static str {
    match w {
        Workload::CopyStress => "copy_stress",
        Workload::Random => "random",
        Workload::Programs => "programs",
        Workload::MatmulPeak => "matmul_peak",
    }
}

/// The knobs of a run of `w`.
fn knobs(w: &WorkloadArgs) -> Knobs {
    Knobs { depth: w.depth, bytes: w.bytes, ..Default::default() }
}

/// A matmul_peak run of `w` as `cqlab run` runs it: `--iterations` timed
/// iterations, no warmup, the matrices drawn from `seed`, the product
/// checked (`None` for the other workloads).
fn matmul_spec(w: &WorkloadArgs, seed: u64) -> Result<Option<RunSpec>, UsageError> {
    if w.workload != Workload::MatmulPeak {
        return Ok(None);
    }
    let base_config = run_config(w)?;
    Ok(Some(RunSpec {
        kind: Kind::MatmulPeak,
        knobs: cqlab_workloads::kinds::Knobs::defaults(Kind::MatmulPeak),
        device: w.device.clone(),
        cqs: base_config.num_cqs,
        iters: w.iterations,
        warmup: 0,
        seed,
        sync: SyncMode::End,
        skip_validation: false,
        base_config,
    }))
}

/// The device configuration of a run of `w`.
fn run_config(w: &WorkloadArgs) -> Result<cqlab_driver::DeviceConfig, UsageError> {
    let k = knobs(w);
    let mut cfg = k.device_config(w.timeout_cycles, None);
    match w.workload {
        Workload::CopyStress => {}
        // The race workloads' kernels store their results (as `race` boots them).
        Workload::Random | Workload::Programs => cfg.worker_kernel = "spin".into(),
        Workload::MatmulPeak => cfg.worker_kernel = Kind::MatmulPeak.worker_kernel().into(),
    }
    if let Some((slow, _)) = embedded_spec(&w.device)? {
        cfg.slow_dispatch = slow;
    }
    w.chip.apply_for(&mut cfg, crate::device::made_here(&w.device))?;
    cfg.host_schedule = w.host.schedule(0);
    Ok(cfg)
}

fn run_one(a: OneArgs) -> Result<ExitCode> {
    let w = &a.workload;
    let k = knobs(w);
    let matmul = matmul_spec(w, a.seed)?;
    let mut cfg = match &matmul {
        Some(spec) => cqlab_workloads::runner::device_config(spec),
        None => run_config(w)?,
    };
    // On stderr, which `restart` reads as the run goes and passes on.
    cfg.wait_progress = Some(crate::cli::wait_lines());
    let mut sim = cqlab_driver::backend::spec::sim_config(&cfg, a.seed);
    let mut device = w.device.as_str();
    if let Some((_, model)) = embedded_spec(device)? {
        model.apply(&mut sim);
        device = "embedded";
    }
    let mut dev = match open_for_campaign(device, sim, cfg, a.reset_first) {
        Ok(d) => d,
        Err(Opened::Refused(e)) => return Err(e.into()),
        Err(Opened::Unavailable(why)) => {
            outln!("{}", serde_json::to_string(&RunResult { unavailable: Some(why), ..Default::default() })?);
            return Ok(Exit::Failed.into());
        }
    };
    let start = Instant::now();
    let mut gflops = None;
    // The runner boots the device itself.
    let booted = if matmul.is_some() { Ok(()) } else { dev.boot().map_err(Failure::from) };
    let mut enqueued = |n: u64| {
        // A run held for a kill says where it holds, and only the
        // campaign's SIGKILL ends it there.
        if a.hold_after_enqueued.is_some_and(|hold| n >= hold) {
            outln!("{ENQUEUED}{n}");
            loop {
                std::thread::park();
            }
        }
    };
    let outcome = booted.and_then(|()| {
        let t0 = dev.now();
        let out = match w.workload {
            Workload::CopyStress => crate::sweep::copy_stress_with(&mut dev, &k, &mut enqueued),
            Workload::Random => {
                crate::race::random::run_with(w.iterations, a.seed, &mut dev, &mut |n| enqueued(u64::from(n)))
            }
            Workload::Programs => {
                crate::race::programs::run_with(w.iterations, a.seed, &mut dev, &mut |n| enqueued(u64::from(n)))
            }
            Workload::MatmulPeak => {
                let spec = matmul.as_ref().expect("built for matmul_peak");
                let point = cqlab_workloads::runner::run_on(&mut dev, spec, &mut IterationsEnqueued(&mut enqueued))
                    .map_err(Failure::from)?;
                gflops = point.matmul.as_ref().map(|m| m.gflops);
                return Ok(point.timed_cycles);
            }
        };
        out.map(|()| dev.now() - t0)
    });
    let mut metrics = BTreeMap::new();
    metrics.insert("host_seconds".to_owned(), start.elapsed().as_secs_f64());
    if let Ok(cycles) = &outcome {
        metrics.insert("workload_cycles".to_owned(), *cycles as f64);
        if let Some(g) = gflops {
            metrics.insert("gflops".to_owned(), g);
        }
        if w.workload == Workload::CopyStress {
            metrics.insert("cycles_per_read".to_owned(), *cycles as f64 / w.depth as f64);
            let secs = metrics["host_seconds"].max(1e-9);
            metrics.insert("host_MB_per_s".to_owned(), (w.depth * w.bytes) as f64 / secs / 1e6);
        }
    }
    let r = RunResult {
        failure: outcome.as_ref().err().map(Failure::classify),
        device_cycles: dev.now(),
        metrics,
        unavailable: None,
    };
    if let Err(f) = &outcome {
        diagln!("{}", f.full_text());
    }
    outln!("{}", serde_json::to_string(&r)?);
    Ok(crate::exit::of_failures(outcome.as_ref().err().map(Failure::class)).into())
}

/// A matmul_peak run's observer: each iteration enqueued is a step.
struct IterationsEnqueued<'a>(&'a mut dyn FnMut(u64));

impl cqlab_workloads::collect::RecordSink for IterationsEnqueued<'_> {
    fn records(&mut self, _: cqlab_abi::noc::Coord, _: &[cqlab_abi::trace::TraceRecord]) -> cqlab_driver::Result<()> {
        Ok(())
    }
}

impl cqlab_workloads::runner::Observer for IterationsEnqueued<'_> {
    fn iteration(&mut self, it: &cqlab_workloads::runner::IterationSample) -> cqlab_driver::Result<()> {
        (self.0)(u64::from(it.index) + 1);
        Ok(())
    }
}

/// The steps of a run of `w` a kill may be planned after, in the
/// workload's own unit: copy_stress's reads, random's operations,
/// programs' programs, matmul_peak's iterations (each counted once
/// enqueued).
fn kill_steps(w: &WorkloadArgs) -> u64 {
    let iterations = u64::from(w.iterations);
    match w.workload {
        Workload::CopyStress => w.depth,
        Workload::Random => iterations * u64::from(crate::race::random::OPS_PER_ITERATION),
        Workload::Programs => iterations * u64::from(crate::race::programs::PROGRAMS_PER_ITERATION),
        Workload::MatmulPeak => iterations,
    }
}

fn one_argv(w: &WorkloadArgs, seed: u64, reset_first: bool) -> Vec<String> {
    let mut v: Vec<String> = vec!["stress".into(), "run-one".into(), "--seed".into(), seed.to_string()];
    if reset_first {
        v.push("--reset-first".into());
    }
    v.extend(["--workload".into(), workload_name(w.workload).into(), "--device".into(), w.device.clone()]);
    v.extend(w.chip.argv());
    // Only the options the workload reads (the others are refused).
    match w.workload {
        Workload::CopyStress => {
            v.extend(["--depth".into(), w.depth.to_string(), "--bytes".into(), w.bytes.to_string()]);
        }
        Workload::Random | Workload::Programs | Workload::MatmulPeak => {
            v.extend(["--iterations".into(), w.iterations.to_string()])
        }
    }
    v.extend(["--timeout-cycles".into(), w.timeout_cycles.to_string()]);
    v.extend(w.host.argv(0));
    v
}

/// Outcome of one child process.
enum Ended {
    Done(RunResult),
    Killed {
        after: Duration,
        /// The steps the run had enqueued (programs may pass the planned
        /// one by a trace or a burst).
        at_step: u64,
    },
    HardTimeout,
    Crashed(String),
    /// The run refused its arguments or configuration (exit 2): the
    /// campaign's own usage error, reported once.
    Refused(String),
}

/// A run's wait-progress line as the campaign prints it, naming the run
/// (`who`); none for the run's other stderr.
fn named_wait_line(line: &str, who: &str) -> Option<String> {
    use cqlab_driver::wait_progress::STILL_WAITING;
    let rest = line.strip_prefix(crate::cli::NOTE).filter(|r| r.starts_with(STILL_WAITING))?;
    Some(format!("{}{who}: {rest}", crate::cli::NOTE))
}

/// Runs `cqlab ARGV`, one run of the campaign, named `who` in the lines of
/// its waits passed on as they come.
fn spawn_run(argv: &[String], who: String, timeout: Duration, kill_after: Option<u64>) -> Result<Ended> {
    let exe = std::env::current_exe().context("locating the cqlab binary")?;
    let mut child = std::process::Command::new(exe).args(argv).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err_reader = std::thread::spawn(move || {
        // A wait that goes on is said now, not when the run ends, and is
        // no error line of the run's.
        let mut s = String::new();
        // Split on bytes: a line that is no UTF-8 must not stop the reading
        // (a run blocks once its stderr pipe is full).
        for line in std::io::BufReader::new(stderr).split(b'\n').map_while(Result::ok) {
            let line = String::from_utf8_lossy(&line);
            match named_wait_line(&line, &who) {
                Some(named) => crate::cli::above_bars(|| diagln!("{named}")),
                None => {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        }
        s
    });
    let start = Instant::now();
    let watch = || -> Result<Ended> {
        let mut enqueued = 0u64;
        let mut last = None;
        let ended = loop {
            // Lines are handled as they come (a kill lands within microseconds
            // of the progress line it waits for).
            match rx.recv_timeout(Duration::from_millis(5)) {
                Ok(line) if line.starts_with(ENQUEUED) => {
                    enqueued = line[ENQUEUED.len()..].parse().context("a held run's progress line")?
                }
                Ok(line) => last = Some(line),
                Err(_) => {}
            }
            if kill_after.is_some_and(|n| enqueued >= n) {
                child.kill()?; // SIGKILL
                child.wait()?;
                break Ended::Killed { after: start.elapsed(), at_step: enqueued };
            }
            if let Some(status) = child.try_wait()? {
                let _ = reader.join();
                while let Ok(line) = rx.try_recv() {
                    if !line.starts_with(ENQUEUED) {
                        last = Some(line);
                    }
                }
                let stderr = err_reader.join().unwrap_or_default();
                // The error line (clap ends its own with a hint to try --help).
                let why = stderr.lines().rev().find(|l| l.starts_with("error: ")).or(stderr.lines().last());
                let why = why.unwrap_or("no output").trim_start_matches("error: ").to_owned();
                break match last.as_deref().map(serde_json::from_str::<RunResult>) {
                    Some(Ok(r)) if crate::exit::ran(status.code()) => Ended::Done(r),
                    _ if status.code() == Some(i32::from(Exit::Usage.code())) => Ended::Refused(why),
                    _ => Ended::Crashed(format!("{status}: {why}")),
                };
            }
            if start.elapsed() >= timeout {
                child.kill()?;
                child.wait()?;
                break Ended::HardTimeout;
            }
        };
        Ok(ended)
    };
    let ended = watch();
    if ended.is_err() {
        // Never leave a run behind: a held one would keep the device.
        let _ = child.kill();
        let _ = child.wait();
    }
    ended
}

/// A digest of the firmware ELFs a run of `w` loads
/// ([`crate::campaign::build::firmware_digest`]).
pub fn firmware_digest(w: &WorkloadArgs) -> Result<String, UsageError> {
    let cfg = run_config(w)?;
    let kernels: &[&str] = match w.workload {
        Workload::Programs => &cqlab_workloads::program_stream::KERNELS,
        _ => &[],
    };
    let arch = w.chip.sim_board().arch();
    Ok(crate::campaign::build::firmware_digest(&cfg, arch, kernels.iter().copied()))
}

/// Where a run of `a`'s campaign sits in it, with what ran it and the
/// options no run's command line holds.
fn membership(a: &RestartArgs, shard: Shard) -> Result<crate::campaign::Membership, UsageError> {
    let mut m = crate::campaign::Membership::new(a.runs, shard, firmware_digest(&a.workload)?);
    m.options.insert("--seed".into(), a.seed.to_string());
    m.options.insert("--timeout".into(), a.timeout.to_string());
    m.options.insert("--kill-rate".into(), a.kill_rate.to_string());
    m.options.insert("--reset".into(), reset_name(a.reset));
    if a.reset == Reset::Phase {
        m.options.insert("--phase-runs".into(), a.phase_runs.to_string());
    }
    Ok(m)
}

fn restart(a: RestartArgs) -> Result<ExitCode> {
    if embedded_spec(&a.workload.device)?.is_some() && (a.kill_rate > 0.0 || a.reset != Reset::Never) {
        // Said, not refused: the kill and reset machinery is what such a
        // campaign exercises cheaply, but not the device (helper-23).
        diagln!(
            "note: --device embedded starts a fresh simulator for every run, so a kill or a reset leaves nothing \
             for the next run to meet; a device that outlives its runs is a daemon (`cqlab sim serve --dev PATH`, \
             then --device sim:PATH)"
        );
    }
    // A daemon's chip is its own: checked before the first run.
    if let Some((board, harvesting, ..)) = crate::device::daemon_chip(&a.workload.device)? {
        queues_fit(&a.workload, board, harvesting)?;
    }
    let shard = Shard::resolve(a.records.shard.as_deref())?;
    if a.records.shard.is_none() {
        shard.warn_if_empty(a.runs);
    }
    let membership = membership(&a, shard)?;
    // `--resume`: the runs the shard's file records already, by index.
    let mut done: BTreeMap<u64, SeedRecord> = a
        .records
        .resume("stress", &membership, &one_argv(&a.workload, 0, false))?
        .into_iter()
        .map(|r| (r.index, r))
        .collect();
    let mut jsonl = a.records.open_jsonl()?;
    let timeout = Duration::from_secs_f64(a.timeout);
    // Per-run seed, kill decision and kill step: one stream forked from the
    // campaign seed, drawn for every run index so shards agree.
    let mut rng = Rng::new(a.seed);
    let steps = kill_steps(&a.workload);
    let plan: Vec<(u64, Option<u64>)> = (0..a.runs)
        .map(|_| {
            // Seeds below 2^53: JSON readers keep them exactly (`cli::MAX_SEED`).
            let seed = rng.next_u64() & crate::cli::MAX_SEED;
            let (kill, point) = (rng.chance(a.kill_rate), rng.next_u64());
            (seed, kill.then_some(1 + point % steps))
        })
        .collect();
    let mut records = Vec::new();
    let mut after_kill = false;
    for (index, &(seed, kill_after)) in plan.iter().enumerate() {
        let index = index as u64;
        if !shard.owns(index) {
            continue;
        }
        if let Some(r) = done.remove(&index) {
            // Recorded before: the next run meets what this one left.
            after_kill = r.killed_on_purpose();
            records.push(r);
            continue;
        }
        let reset_first = match a.reset {
            Reset::Every => true,
            Reset::Phase => index % a.phase_runs == 0,
            Reset::Never => false,
        };
        let argv = one_argv(&a.workload, seed, reset_first);
        let mut run_argv = argv.clone();
        if let Some(n) = kill_after {
            run_argv.extend(["--hold-after-enqueued".into(), n.to_string()]);
        }
        let start = Instant::now();
        let ended = spawn_run(&run_argv, format!("run {index} (seed {seed})"), timeout, kill_after)?;
        let seconds = start.elapsed().as_secs_f64();
        let mut record = SeedRecord {
            tool: "stress".into(),
            seed,
            index,
            ok: true,
            killed: false,
            after_kill: Some(after_kill),
            failure: None,
            device_cycles: 0,
            seconds,
            metrics: BTreeMap::new(),
            argv,
            dump_error: None,
            campaign: Some(membership.clone()),
        };
        let verdict = match ended {
            Ended::Killed { after, at_step } => {
                after_kill = true;
                (record.ok, record.killed) = (false, true);
                record.metrics.insert(crate::campaign::KILLED.into(), after.as_secs_f64());
                // Where the held run was killed: the same for the same seed.
                record.metrics.insert("killed_after_step".into(), at_step as f64);
                format!("SIGKILLed after step {at_step}, {:.0} ms into the run", after.as_secs_f64() * 1e3)
            }
            Ended::Refused(why) => return Err(UsageError(format!("run {index} (seed {seed}) refused: {why}")).into()),
            Ended::Done(RunResult { unavailable: Some(why), .. }) => anyhow::bail!(
                "run {index} (seed {seed}) could not have the device, so the campaign stops after {} runs: {why} \
                 (sim:PATH?wait queues behind another holder)",
                records.len()
            ),
            Ended::Done(r) => {
                record.device_cycles = r.device_cycles;
                record.metrics = r.metrics;
                record.ok = r.failure.is_none();
                record.failure = r.failure;
                after_kill = false;
                record.failure.as_ref().map_or("pass".into(), |f| format!("FAIL {}", f.error))
            }
            Ended::HardTimeout => {
                record.ok = false;
                // A daemon that stands still stops every run on it: say so
                // rather than blame the host (helper-33).
                let daemon = a.workload.device.strip_prefix("sim:").and_then(|rest| {
                    let (dir, _) = cqlab_driver::daemon_backend::DaemonBackend::parse_spec(rest).ok()?;
                    cqlab_driver::daemon_backend::stopped_daemon(&dir)
                });
                let root = match &daemon {
                    Some(state) => format!("host (the process did not end: {state})"),
                    None => "host (the process did not end)".into(),
                };
                record.failure = Some(crate::race::failure::Classified {
                    // The process never ended: liveness, like a wait that timed out.
                    class: FailureClass::Hang,
                    kind: HARD_TIMEOUT.into(),
                    root,
                    signature: format!("hard-timeout: still running after {} s", a.timeout),
                    // Wall-clock time: the device's cycles do not say where
                    // it stopped, so its replay runs the seed whole.
                    error: format!(
                        "killed after the {} s per-run timeout (host time: a replay runs the seed to its end, \
                         which may pass)",
                        a.timeout
                    ),
                });
                after_kill = false;
                format!("HARD TIMEOUT after {} s: killed", a.timeout)
            }
            Ended::Crashed(why) => {
                record.ok = false;
                record.failure = Some(crate::race::failure::Classified {
                    // The host process died, not the device.
                    class: FailureClass::Other,
                    kind: "crash".into(),
                    root: "host process".into(),
                    signature: "crash: the run exited without a result".into(),
                    error: why,
                });
                after_kill = false;
                "CRASH".into()
            }
        };
        if !a.records.json {
            diagln!("[{}/{}] seed {seed}: {verdict}", index + 1, a.runs);
        }
        if let Some(f) = &mut jsonl {
            f.append(&serde_json::to_string(&record)?)?;
        }
        records.push(record);
    }
    let summary = Summary::of(&records);
    if a.records.json {
        let (chip, harvesting) = chip_of(&a.workload);
        let mut v = summary.to_json();
        v["workload"] = workload_name(a.workload.workload).into();
        v["device"] = a.workload.device.clone().into();
        v["chip"] = chip.into();
        v["harvesting"] = harvesting.into();
        // The campaign's own options, so the report says what ran
        // (helper-72: only the workload and device were in it).
        v["seed"] = a.seed.into();
        v["campaign_runs"] = a.runs.into();
        v["shard"] = shard.to_string().into();
        v["timeout_seconds"] = a.timeout.into();
        v["kill_rate"] = a.kill_rate.into();
        v["reset"] = reset_name(a.reset).into();
        v["phase_runs"] = (a.reset == Reset::Phase).then_some(a.phase_runs).into();
        v["timeout_cycles"] = a.workload.timeout_cycles.into();
        v["host"] = a.workload.host.report(0);
        v["knobs"] = match a.workload.workload {
            Workload::CopyStress => serde_json::json!({"depth": a.workload.depth, "bytes": a.workload.bytes}),
            Workload::Random | Workload::Programs | Workload::MatmulPeak => {
                serde_json::json!({"iterations": a.workload.iterations})
            }
        };
        outln!("{v}");
    } else {
        let header = format!(
            "stress restart {} ({}, seed {}, timeout {} s, kill rate {}, reset {}, device {}, chip {})",
            workload_name(a.workload.workload),
            summary.counts(),
            a.seed,
            a.timeout,
            a.kill_rate,
            reset_name(a.reset),
            a.workload.device,
            chip_text(&a.workload)
        );
        summary.print(&header, &format!("--kill-rate {}", a.kill_rate));
    }
    Ok(summary.report.exit_code())
}

/// What a stress campaign's records say, the same whether one `stress
/// restart` ran them all or `campaign merge` gathers its shards: the
/// report of the runs not killed on purpose, the kills, the failures that
/// followed a kill, the hard timeouts and the drift of every metric.
pub struct Summary {
    pub report: Report,
    pub runs: usize,
    pub completed: usize,
    pub killed: usize,
    /// `None` where a record does not say whether it followed a kill
    /// (written before 2026-12-01).
    pub failures_after_kill: Option<usize>,
    pub hard_timeouts: usize,
    pub drift: BTreeMap<String, stats::Drift>,
}

impl Summary {
    pub fn of(records: &[SeedRecord]) -> Self {
        let completed: Vec<SeedRecord> = records.iter().filter(|r| !r.killed_on_purpose()).cloned().collect();
        Summary {
            report: Report::from_records(&completed),
            runs: records.len(),
            completed: completed.len(),
            killed: records.len() - completed.len(),
            failures_after_kill: completed
                .iter()
                .map(|r| r.after_kill.map(|after| usize::from(after && !r.ok)))
                .sum::<Option<usize>>(),
            hard_timeouts: completed
                .iter()
                .filter(|r| r.failure.as_ref().is_some_and(|f| f.kind == HARD_TIMEOUT))
                .count(),
            drift: drift_of(&completed),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"report": self.report, "runs": self.runs, "completed": self.completed,
                           "killed": self.killed, "failures_after_kill": self.failures_after_kill,
                           "hard_timeouts": self.hard_timeouts, "drift": self.drift})
    }

    /// "N runs, K killed on purpose, M measured of which H past the hard
    /// timeout", for a header.
    pub fn counts(&self) -> String {
        // Every run not killed on purpose is measured, those the hard
        // timeout killed too (as failures).
        format!(
            "{} runs, {} killed on purpose, {} measured of which {} past the hard timeout",
            self.runs, self.killed, self.completed, self.hard_timeouts
        )
    }

    /// The report under `header`, the kill and timeout counts and the drift
    /// table; `kills`: what killed the runs, for a campaign whose runs were
    /// all killed.
    pub fn print(&self, header: &str, kills: &str) {
        if self.completed == 0 {
            outln!("{header}: no run completed: all {} were killed on purpose ({kills})", self.runs);
        } else {
            self.report.print(header);
        }
        let after = self.failures_after_kill.map_or_else(
            || "unknown (records from before 2026-12-01 do not say which runs followed a kill)".to_owned(),
            |n| n.to_string(),
        );
        outln!("failures after a kill: {after}; hard timeouts: {}", self.hard_timeouts);
        outln!(
            "{:<18} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "metric",
            "mean",
            "stddev",
            "first-10",
            "last-10",
            "slope/run"
        );
        for (name, d) in &self.drift {
            outln!(
                "{name:<18} {:>12.4} {:>12.4} {:>12.4} {:>12.4} {:>12.6}",
                d.mean,
                d.stddev,
                d.first10,
                d.last10,
                d.slope
            );
        }
    }
}

/// The failure kind of a run the hard timeout killed.
const HARD_TIMEOUT: &str = "hard-timeout";

/// Drift of every metric over the completed runs, in run order.
pub fn drift_of(records: &[SeedRecord]) -> BTreeMap<String, stats::Drift> {
    let mut sorted: Vec<&SeedRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.index);
    let names: std::collections::BTreeSet<&String> = sorted.iter().flat_map(|r| r.metrics.keys()).collect();
    names
        .into_iter()
        .filter_map(|n| {
            let v: Vec<f64> = sorted.iter().filter_map(|r| r.metrics.get(n).copied()).collect();
            stats::drift(&v).map(|d| (n.clone(), d))
        })
        .collect()
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    match cmd {
        Command::Restart(a) => restart(a),
        Command::RunOne(a) => run_one(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::race::failure::Classified;

    /// A run's wait-progress line is passed on naming the run; its other
    /// stderr (its error line) is kept for the record.
    #[test]
    fn a_runs_wait_lines_are_passed_on_naming_the_run() {
        let line = "note: still waiting for completion queue of CQ0: device cycle 5, 4 cycles into the wait; ...";
        assert_eq!(
            named_wait_line(line, "run 3 (seed 7)").as_deref(),
            Some("note: run 3 (seed 7): still waiting for completion queue of CQ0: device cycle 5, 4 cycles into the wait; ...")
        );
        assert_eq!(named_wait_line("error: timeout waiting for completion queue of CQ0", "run 3"), None);
        assert_eq!(named_wait_line("note: the device was reset", "run 3"), None);
        // A line as a run prints it, from the driver's report.
        use cqlab_driver::wait_progress::{WaitLimit, WaitProgress};
        let p = WaitProgress {
            wait: cqlab_driver::dump::Wait::Event { cq: 0, id: 2 },
            device_cycle: 9,
            waited_cycles: 4,
            limit: WaitLimit::Stall { stalled: 4, limit: 100 },
        };
        let named = named_wait_line(&format!("{}{p}", crate::cli::NOTE), "run 3").expect("a wait line");
        assert_eq!(named, format!("note: run 3: {p}"));
    }

    fn record(index: u64, ok: bool) -> SeedRecord {
        SeedRecord {
            tool: "stress".into(),
            seed: index + 100,
            index,
            ok,
            killed: false,
            after_kill: Some(false),
            failure: None,
            device_cycles: 0,
            seconds: 1.0,
            metrics: BTreeMap::from([("cycles".to_owned(), 10.0 + index as f64)]),
            argv: Vec::new(),
            dump_error: None,
            campaign: None,
        }
    }

    fn failed(index: u64, kind: &str) -> SeedRecord {
        let mut r = record(index, false);
        r.failure = Some(Classified {
            class: FailureClass::Hang,
            kind: kind.into(),
            root: "host".into(),
            signature: kind.into(),
            error: kind.into(),
        });
        r
    }

    /// The counts come from the records alone, so `campaign merge` of a
    /// campaign's shards reads what its single run printed.
    #[test]
    fn a_summary_counts_kills_their_aftermath_and_hard_timeouts_from_records() {
        let mut killed = record(1, false);
        killed.killed = true;
        let mut after = failed(2, "mismatch");
        after.after_kill = Some(true);
        let mut passed_after = record(4, true);
        passed_after.after_kill = Some(true);
        let records = [record(0, true), killed, after, failed(3, HARD_TIMEOUT), passed_after];
        let s = Summary::of(&records);
        assert_eq!((s.runs, s.completed, s.killed), (5, 4, 1));
        assert_eq!(s.failures_after_kill, Some(1), "a pass after a kill is none");
        assert_eq!(s.hard_timeouts, 1);
        assert_eq!(s.report.failures, 2);
        assert!(s.drift.contains_key("cycles"), "drift of the completed runs' metrics");
        // Records that do not say (before after_kill) make the count unknown.
        let mut old = records.clone();
        old.iter_mut().for_each(|r| r.after_kill = None);
        assert_eq!(Summary::of(&old).failures_after_kill, None);
        let v = s.to_json();
        assert_eq!(
            (v["runs"].as_u64(), v["killed"].as_u64(), v["hard_timeouts"].as_u64()),
            (Some(5), Some(1), Some(1))
        );
    }
}
