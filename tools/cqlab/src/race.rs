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
use crate::out::{diagln, outln};
use crate::usage::{ensure, UsageError};
use anyhow::{Context, Result};
use args::{variant, TWO_QUEUE_ONLY};
pub use args::{Args, WorkloadKind};
use cqlab_driver::{Device, DeviceConfig, DriverError};
use cqlab_sim::config::{Schedule, SimConfig};
use failure::Failure;
use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

pub fn validate(a: &Args, given: &crate::cli::Given<'_>) -> Result<()> {
    if a.workload != WorkloadKind::TwoQueue {
        given.refuse(&TWO_QUEUE_ONLY, || {
            format!("only shape the two-queue workload; --workload {} draws its layout per seed", a.workload.name())
        })?;
    }
    if a.pct_depth == 0 {
        given.refuse(&["pct_steps"], || "needs --pct-depth above 0 (PCT is off)".into())?;
    }
    a.host.validate(given, None)?;
    // `--jobs` children append through their parent; a resumed shard is one process.
    ensure(!(a.records.resume && a.jobs > 1), || "--resume runs a shard in one process: drop --jobs".into())?;
    Plan::new(a.clone())?;
    Ok(())
}

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
    /// Checks everything but what only the device can say (see
    /// [`Plan::preflight`]); touches nothing.
    pub fn new(args: Args) -> Result<Self, UsageError> {
        let a = &args;
        a.chip.validate()?;
        let max = crate::cli::MAX_SEED;
        ensure(a.seed_base.checked_add(a.seeds - 1).is_some_and(|last| last <= max), || {
            format!("--seed-base {} + --seeds {} runs past the largest seed {max} (2^53 - 1)", a.seed_base, a.seeds)
        })?;
        // A queue command names a page of the copied buffer in 16 bits.
        ensure(a.bytes.div_ceil(a.page_size) <= args::MAX_PAGES, || {
            format!(
                "--bytes {} in --page-size {} pages is {} pages; a copy holds at most {}",
                a.bytes,
                a.page_size,
                a.bytes.div_ceil(a.page_size),
                args::MAX_PAGES
            )
        })?;
        let faults = faults::Faults::parse(&a.faults)?;
        faults::check_latencies(a, &faults)?;
        // A stall probability whose stalls outrun the clock leaves every core
        // behind forever: the device could never boot (`--faults stall` is
        // checked where it is parsed).
        faults::check_stall("--core-stall", a.core_stall, faults::CORE_STALL_CYCLES)?;
        if a.exact_time {
            faults::check_exact_time(a.core_stall, &faults)?;
        }
        ensure(!faults.read_passes_unsent || a.reads_pass_unsent, || {
            "--faults read-passes-unsent with --reads-pass-unsent false: the fault is the model's default since \
             2026-12-01; give one of them"
                .to_owned()
        })?;
        let cq_firmware = match (&a.variant, &a.firmware) {
            (Some(v), _) if v == "none" => None,
            (Some(v), _) => Some(v.clone()),
            (None, Some(f)) if Path::new(f).is_dir() => {
                for elf in ["prefetch", "dispatch"] {
                    let p = Path::new(f).join(elf);
                    ensure(p.exists(), || format!("--firmware {f}: no {elf} ELF in it ({} is missing)", p.display()))?;
                }
                let abs = std::fs::canonicalize(f).map_err(|e| UsageError(format!("--firmware {f}: {e}")))?;
                Some(abs.to_string_lossy().into_owned())
            }
            (None, Some(f)) => {
                variant(f).map_err(|e| UsageError(format!("--firmware {f}: not a directory, and {e}")))?;
                (f != "none").then(|| f.clone())
            }
            (None, None) => None,
        };
        let shard = Shard::resolve(a.records.shard.as_deref())?;
        let plan = Plan { args, faults, cq_firmware, shard };
        // A slowed core must be on the device: the programs workload draws
        // harvesting per seed (a core a seed's chip lacks is not slowed),
        // the others run on the chip as given.
        if plan.args.workload != WorkloadKind::Programs {
            let (_, cfg) = plan.configs(plan.args.seed_base);
            let chip = chip_of(&cfg)?;
            if let Some(name) = plan.faults.missing_on(&chip) {
                return Err(UsageError(format!(
                    "--faults slow: {name} is not on the device ({} {}, a {}x{} compute grid, {} queues)",
                    chip.board(),
                    chip.harvesting(),
                    chip.cols(),
                    chip.rows(),
                    chip.num_cqs()
                )));
            }
        }
        {
            // Every image loaded as a boot would load it (its ABI and chip
            // checked), so a bad one is refused before any seed rather than
            // failing every seed.
            let (sim, cfg) = plan.configs(plan.args.seed_base);
            let arch = sim.board.arch();
            let kernels: &[&str] = if plan.args.workload == WorkloadKind::Programs {
                &cqlab_workloads::program_stream::KERNELS
            } else {
                &[]
            };
            cfg.check_firmware(arch)
                .and_then(|()| cfg.check_kernels(arch, kernels.iter().copied()))
                .map_err(|e| UsageError(format!("the firmware: {e}")))?;
        }
        if plan.args.workload == WorkloadKind::TwoQueue {
            // The queue layout is the user's: the device's own limits, now.
            let (_, cfg) = plan.configs(plan.args.seed_base);
            cfg.validate().map_err(|e| UsageError(format!("the device refuses this configuration: {e}")))?;
        }
        let a = &plan.args;
        if let Some(d) = &a.dump_dir {
            crate::output::check("--dump-dir", d, crate::output::Kind::Dir, &[])?;
        }
        if let Some(j) = &a.records.jsonl {
            crate::output::check("--jsonl", j, crate::output::Kind::File, &[])?;
        }
        if let (Some(d), Some(j)) = (&a.dump_dir, &a.records.jsonl) {
            crate::output::distinct(&[("--jsonl", j.as_path()), ("--dump-dir", d.as_path())])?;
        }
        Ok(plan)
    }

    /// Boots the device of the first seed: a queue size the device refuses or
    /// firmware that is missing is a usage error before any seed runs.
    pub fn preflight(&self) -> Result<(), UsageError> {
        let seed = self.args.seed_base;
        let (sim, cfg) = self.configs(seed);
        let config_error = |e: DriverError| UsageError(format!("the device refuses this configuration: {e}"));
        let mut dev = Device::embedded(sim, cfg).map_err(config_error)?;
        match dev.boot() {
            // What only a seed's own run can say (a boot that hangs under
            // its faults) is that seed's result, not a refusal.
            Err(
                e @ (DriverError::Invalid(_) | DriverError::Chip(_) | DriverError::NotBuilt(_) | DriverError::Io(_)),
            ) => return Err(config_error(e)),
            Err(_) => return Ok(()),
            Ok(()) => {}
        }
        if self.args.workload == WorkloadKind::TwoQueue {
            two_queue::preflight(&self.args, &mut dev).map_err(config_error)?;
        }
        Ok(())
    }

    /// The simulator and device configuration of one seed.
    pub fn configs(&self, seed: u64) -> (SimConfig, DeviceConfig) {
        let a = &self.args;
        let mut cfg = DeviceConfig {
            firmware_variant: self.cq_firmware.clone(),
            stall_timeout_cycles: a.timeout_cycles + a.delay as u64,
            kernel_timeout_cycles: Some(a.timeout_cycles),
            issue_size: a.issue_size,
            completion_size: a.completion_size,
            ring_pages: a.ring_pages,
            worker_kernel: "spin".into(),
            host_schedule: self.host_schedule(seed),
            // Named by seed: `--jobs` children share the terminal.
            wait_progress: Some(crate::cli::wait_lines_of(Some(format!("seed {seed}")))),
            ..Default::default()
        };
        a.chip.apply(&mut cfg).expect("--chip and --harvest checked by Plan::new");
        let mut sim = cqlab_driver::backend::spec::sim_config(&cfg, seed);
        sim.faults.noc_jitter_cycles = a.jitter;
        sim.faults.reorder = a.reorder;
        sim.pcie.read_latency_cycles = a.pcie_read_latency;
        if a.core_stall > 0.0 {
            (sim.faults.core_stall_prob, sim.faults.core_stall_cycles) = (a.core_stall, faults::CORE_STALL_CYCLES);
        }
        if a.pct_depth > 0 {
            sim.schedule = Schedule::Pct { depth: a.pct_depth, steps: a.pct_steps };
        }
        match a.workload {
            WorkloadKind::Random => random::configure(seed, &mut sim, &mut cfg),
            WorkloadKind::Programs => programs::configure(seed, a.chip.harvest.is_none(), &mut sim, &mut cfg),
            WorkloadKind::TwoQueue => match self.seed_variation(seed) {
                Some(SeedVariation::SliceJitter(q)) => sim.quantum_jitter = q,
                Some(SeedVariation::NocJitter(j)) => sim.faults.noc_jitter_cycles = j,
                None => {}
            },
        }
        // A drawn harvesting: an invalid one is a bug of the draw, found by
        // the device at boot, so the default stands in here.
        if let Ok(chip) = chip_of(&cfg) {
            self.faults.apply(&mut sim, &chip);
        }
        self.faults.apply_device(&mut cfg);
        a.model().apply(&mut sim);
        if a.exact_time {
            // Exact time fixes the slices (to the lookahead between
            // tiles): the workloads' drawn slice jitter has nothing to vary
            // (the user's is refused).
            sim.quantum_jitter = 0;
        }
        (sim, cfg)
    }

    /// What `two-queue` varies on `seed` when nothing the user gave does:
    /// its shape is fixed, so a seed with no host jitter and no amplifier
    /// ran the same schedule as every other such seed (helper-23: 10 of 20
    /// "failed" seeds were one run). Such a seed draws slice jitter (as
    /// `random` does), or under exact time, which fixes the slices, NOC
    /// jitter. Its replay line names it (`replay_argv`).
    pub fn seed_variation(&self, seed: u64) -> Option<SeedVariation> {
        let a = &self.args;
        let varied = a.jitter > 0
            || a.core_stall > 0.0
            || a.pct_depth > 0
            || !a.faults.is_empty()
            || a.host.host_pct > 0
            || self.host_schedule(seed).jitter_cycles > 0;
        if a.workload != WorkloadKind::TwoQueue || varied {
            return None;
        }
        Some(if a.exact_time {
            SeedVariation::NocJitter(TWO_QUEUE_NOC_JITTER)
        } else {
            SeedVariation::SliceJitter(TWO_QUEUE_SLICE_JITTER)
        })
    }

    /// The board every seed runs on, and its harvesting (`None`: the
    /// `programs` workload draws one per seed).
    pub fn chip_names(&self) -> (&'static str, Option<String>) {
        let (_, cfg) = self.configs(self.args.seed_base);
        let drawn = self.args.workload == WorkloadKind::Programs && self.args.chip.harvest.is_none();
        (cfg.sim_board().name(), (!drawn).then(|| cfg.sim_harvesting().to_string()))
    }

    /// What the campaign's seeds that nothing else varies draw, if any
    /// does (looked for among its first 64 seeds).
    pub fn drawn_variation(&self) -> Option<SeedVariation> {
        (0..self.args.seeds.min(64)).find_map(|i| self.seed_variation(self.args.seed_base + i))
    }

    /// The host's schedule for `seed`: `--host-jitter` as given, or by
    /// default [`RACE_HOST_JITTER`] on about half the seeds (drawn from the
    /// seed) and none on the others. A stalling host is what exposes
    /// host-side ordering bugs, and what hides device-side windows that need
    /// a host quick to follow up (a known-bug variant's event read right
    /// behind its record): a campaign hunts both.
    ///
    /// [`RACE_HOST_JITTER`]: crate::cli::RACE_HOST_JITTER
    pub fn host_schedule(&self, seed: u64) -> cqlab_driver::HostSchedule {
        let drawn = || if host_jitter_drawn(seed) { crate::cli::RACE_HOST_JITTER } else { 0 };
        let jitter = self.args.host.host_jitter.unwrap_or_else(drawn);
        cqlab_driver::HostSchedule { jitter_cycles: jitter, ..self.args.host.schedule(0) }
    }

    /// The options that shape a run, every one written out, so the line
    /// replays the run whatever the defaults become.
    pub fn shape_argv(&self) -> Vec<String> {
        let a = &self.args;
        let mut v: Vec<String> = vec!["race".into(), "--workload".into(), a.workload.name().into()];
        v.extend(a.chip.argv());
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
        opt("exact-time", a.exact_time.to_string());
        opt("blocking-loads", a.blocking_loads.to_string());
        opt("link-contention", a.link_contention.to_string());
        opt("icache", a.icache.to_string());
        // What ran: on Wormhole, which has none, `false` whatever was asked
        // (the report's `l0_cache`; both values run the same there).
        opt("l0-cache", a.model().on(a.chip.sim_board().arch()).l0_cache.to_string());
        opt("reads-pass-unsent", a.reads_pass_unsent.to_string());
        if a.workload == WorkloadKind::TwoQueue {
            // The random workload draws these per seed.
            opt("copies", a.copies.to_string());
            opt("buffers", a.buffers.to_string());
            opt("depth", a.depth.to_string());
            opt("trace-kernels", a.trace_kernels.to_string());
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
        if a.pct_depth > 0 {
            // Without PCT there are no PCT steps (the option is refused).
            opt("pct-steps", a.pct_steps.to_string());
        }
        // Without --host-jitter each seed draws its own (see `replay_argv`).
        v.extend(a.host.argv(0));
        for f in &a.faults {
            v.extend(["--faults".to_owned(), f.clone()]);
        }
        v
    }

    /// `cqlab ...` arguments that replay exactly `seed`.
    pub fn replay_argv(&self, seed: u64) -> Vec<String> {
        let mut v = self.shape_argv();
        if self.args.host.host_jitter.is_none() {
            v.extend(["--host-jitter".into(), self.host_schedule(seed).jitter_cycles.to_string()]);
        }
        // Given, it is what the line runs whatever the default becomes.
        match self.seed_variation(seed) {
            Some(SeedVariation::SliceJitter(_)) => v.extend(["--faults".into(), crate::campaign::drawn_faults()]),
            Some(SeedVariation::NocJitter(j)) => {
                let at = v.iter().position(|o| o == "--jitter").expect("shape_argv names --jitter") + 1;
                v[at] = j.to_string();
            }
            None => {}
        }
        v.extend(["--seed-base".into(), seed.to_string(), "--seeds".into(), "1".into()]);
        v
    }

    /// Where this process's runs sit in their campaign (its records say so).
    pub fn membership(&self) -> crate::campaign::Membership {
        let (sim, cfg) = self.configs(self.args.seed_base);
        let kernels: &[&str] = match self.args.workload {
            WorkloadKind::Programs => &cqlab_workloads::program_stream::KERNELS,
            _ => &[],
        };
        let firmware = crate::campaign::build::firmware_digest(&cfg, sim.board.arch(), kernels.iter().copied());
        crate::campaign::Membership {
            until_first: self.args.until_first,
            ..crate::campaign::Membership::new(self.args.seeds, self.shard, firmware)
        }
    }

    /// Campaign positions this process runs.
    fn owned(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let step = usize::try_from(self.shard.count).unwrap_or(usize::MAX);
        (self.shard.index..self.args.seeds).step_by(step).map(|i| (i, self.args.seed_base + i))
    }

    /// How many runs this process owns (without walking them).
    fn owned_count(&self) -> u64 {
        self.shard.count_in(self.args.seeds)
    }
}

/// What a `two-queue` seed with nothing else to vary draws ([`Plan::seed_variation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedVariation {
    /// `SimConfig::quantum_jitter`, cycles.
    SliceJitter(u64),
    /// NOC jitter, cycles (under exact time).
    NocJitter(u64),
}

/// The slice jitter `random` and `programs` draw on half their seeds.
const TWO_QUEUE_SLICE_JITTER: u64 = crate::campaign::DRAWN_SLICE_JITTER;
/// The least NOC jitter `random` and `programs` draw.
const TWO_QUEUE_NOC_JITTER: u64 = 200;

/// Whether `seed` runs with host jitter when `--host-jitter` is not given:
/// a bit of the seed's SplitMix64 hash, independent of every stream the
/// simulator forks from the seed.
fn host_jitter_drawn(seed: u64) -> bool {
    let mut z = seed ^ 0x686f_7374_6a69_7474; // "hostjitt"
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & 1 == 1
}

/// The chip a seed's configuration runs on (its queues placed).
fn chip_of(cfg: &DeviceConfig) -> Result<cqlab_driver::Topology, UsageError> {
    cqlab_driver::Topology::for_board(cfg.sim_board(), Some(cfg.sim_harvesting()), cfg.num_cqs)
        .map_err(|e| UsageError(format!("the device refuses this configuration: {e}")))
}

/// Runs one seed on a fresh embedded device. Returns the outcome and the
/// device (for dumps and traces), if it was built.
pub fn run_seed(plan: &Plan, seed: u64) -> (Result<(), Failure>, Option<Device>) {
    run_seed_with(plan, seed, |_| {})
}

/// [`run_seed`] with the seed's device configuration adjusted by `tweak`
/// (tests: a host mutant chosen at run time).
pub fn run_seed_with(
    plan: &Plan,
    seed: u64,
    tweak: impl FnOnce(&mut DeviceConfig),
) -> (Result<(), Failure>, Option<Device>) {
    let (sim, mut cfg) = plan.configs(seed);
    tweak(&mut cfg);
    let mut dev = match Device::embedded(sim, cfg) {
        Ok(d) => d,
        Err(e) => return (Err(e.into()), None),
    };
    let outcome = dev.boot().map_err(Failure::from).and_then(|()| match plan.args.workload {
        WorkloadKind::TwoQueue => two_queue::run(&plan.args, &mut dev),
        WorkloadKind::Random => random::run(plan.args.iterations, seed, &mut dev),
        WorkloadKind::Programs => programs::run(plan.args.iterations, seed, &mut dev),
    });
    // With L0 data caches, a run that passed may still have read a copy L1
    // no longer held: a missing `fence` on silicon, found even when the
    // stale value did no harm this time.
    let outcome = outcome.and_then(|()| match dev.backend().introspect().map_or(Ok(None), |i| i.l0_cache())? {
        Some(l0) if l0.stale_hits > 0 => Err(Failure::Check {
            check: "stale L0 read",
            detail: format!(
                "{} loads returned a copy in a core's L0 data cache that L1 no longer held{}",
                l0.stale_hits,
                l0.first_stale.map_or(String::new(), |f| format!("; the first: {f}"))
            ),
        }),
        _ => Ok(()),
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
    let mut dump_error = None;
    if let (Err(f), Some(dir)) = (&outcome, &plan.args.dump_dir) {
        // The record is written whatever becomes of the dump.
        let stem = format!("seed-{seed}");
        (_, dump_error) =
            crate::dump_files::write_or_warn(dir, &stem, &format!("seed {seed}"), seed_identity(seed), f, dev.as_mut());
    }
    Ok(SeedRecord {
        tool: "race".into(),
        seed,
        index,
        ok: outcome.is_ok(),
        killed: false,
        after_kill: None,
        failure,
        device_cycles,
        seconds,
        metrics: Default::default(),
        argv: plan.replay_argv(seed),
        dump_error,
        // Filled in where records are written (`run`'s sink): the same for every run.
        campaign: None,
    })
}

/// `DIR/seed-N.txt` (the whole error with its hang dump), `seed-N.json`
/// (the dump as JSON) and `seed-N.trace.json` (every core's trace ring,
/// Chrome/Perfetto JSON).
pub fn write_dump(dir: &Path, seed: u64, f: &Failure, dev: Option<&mut Device>) -> Result<()> {
    crate::dump_files::write(dir, &format!("seed-{seed}"), seed_identity(seed), f, dev).map(drop)
}

/// What a seed's dump JSON names it by.
fn seed_identity(seed: u64) -> serde_json::Map<String, serde_json::Value> {
    serde_json::Map::from_iter([("seed".to_owned(), seed.into())])
}

/// The stderr line of the `n`th of `total` seeds: its verdict, and the
/// host jitter it drew when each seed draws its own (a bug only one draw
/// shows fails exactly the seeds of that draw).
fn progress_line(plan: &Plan, n: u64, total: u64, r: &SeedRecord) -> String {
    let verdict = r.failure.as_ref().map_or_else(|| "pass".into(), |f| format!("FAIL {}", f.error));
    let drawn = match plan.args.host.host_jitter {
        Some(_) => String::new(),
        None => format!(" (host jitter {})", plan.host_schedule(r.seed).jitter_cycles),
    };
    format!("[{n}/{total}] seed {}{drawn}: {verdict}", r.seed)
}

/// Runs this shard's seeds but those in `done` (`--resume`), one by one.
fn run_serial(
    plan: &Plan,
    done: &std::collections::HashSet<u64>,
    sink: &mut dyn FnMut(&SeedRecord) -> Result<()>,
) -> Result<()> {
    let total = plan.owned_count();
    for (n, (index, seed)) in plan.owned().enumerate().filter(|(_, (index, _))| !done.contains(index)) {
        let r = record_seed(plan, index, seed)?;
        if !plan.args.child && !plan.args.records.json {
            diagln!("{}", progress_line(plan, n as u64 + 1, total, &r));
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
    let total = plan.owned_count();
    let mut n = 0;
    let mut emit = |r: &SeedRecord| -> Result<()> {
        n += 1;
        if !plan.args.records.json {
            diagln!("{}", progress_line(plan, n, total, r));
        }
        sink(r)
    };
    // `--until-first` takes records in seed order, so the first failure is
    // the lowest failing seed whichever job finishes first, as in one job.
    let mut in_order = plan.args.until_first.then(|| InOrder::new(plan.owned().map(|(index, _)| index)));
    let mut stopped = false;
    'records: for msg in rx {
        let r = msg.map_err(|e| anyhow::anyhow!("a race job wrote an unreadable record: {e}"))?;
        let ready = match &mut in_order {
            Some(o) => o.take(r),
            None => vec![r],
        };
        for r in ready {
            emit(&r)?;
            if !r.ok && plan.args.until_first {
                stopped = true;
                break 'records;
            }
        }
    }
    if let (false, Some(o)) = (stopped, &mut in_order) {
        // A job ended without some record (its exit status says why below):
        // what did arrive is kept, still in order.
        for r in o.rest() {
            emit(&r)?;
            if !r.ok {
                break;
            }
        }
    }
    if stopped {
        for c in &mut children {
            let _ = c.kill();
        }
    }
    for mut c in children {
        let status = c.wait()?;
        if !stopped && !crate::exit::ran(status.code()) {
            anyhow::bail!("a race job exited with {status}");
        }
    }
    Ok(())
}

/// Records from several jobs, released in the order of their run index.
struct InOrder<I: Iterator<Item = u64>> {
    /// The run indices still to release, in order.
    indices: std::iter::Peekable<I>,
    /// Records that arrived ahead of an earlier index.
    waiting: std::collections::BTreeMap<u64, SeedRecord>,
}

impl<I: Iterator<Item = u64>> InOrder<I> {
    fn new(indices: I) -> Self {
        InOrder { indices: indices.peekable(), waiting: Default::default() }
    }

    /// Takes `r`; returns every record now next in order.
    fn take(&mut self, r: SeedRecord) -> Vec<SeedRecord> {
        self.waiting.insert(r.index, r);
        let mut ready = Vec::new();
        while let Some(r) = self.indices.peek().and_then(|i| self.waiting.remove(i)) {
            self.indices.next();
            ready.push(r);
        }
        ready
    }

    /// The records still waiting, in order, when no more will arrive.
    fn rest(&mut self) -> Vec<SeedRecord> {
        std::mem::take(&mut self.waiting).into_values().collect()
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    let plan = Plan::new(args)?;
    plan.preflight()?;
    if plan.args.records.shard.is_none() {
        // Not a `--jobs` child (each is given its shard, and may own none).
        plan.shard.warn_if_empty(plan.args.seeds);
    }
    if !plan.args.child && !plan.args.records.json && faults::names_strong(&plan.args.faults) {
        crate::out::diagln!("{}", faults::STRONG_COST_NOTE);
    }
    if let Some(d) = &plan.args.dump_dir {
        // Before any seed: a dump directory that cannot be made stops nothing later.
        crate::output::create_dir("--dump-dir", d)?;
    }
    // `--resume`: the runs the shard's file records already (the report
    // covers them too).
    // Built once: it reads every firmware ELF.
    let membership = plan.membership();
    let resumed = plan.args.records.resume("race", &membership, &plan.replay_argv(plan.args.seed_base))?;
    let done: std::collections::HashSet<u64> = resumed.iter().map(|r| r.index).collect();
    let stopped_before = plan.args.until_first && resumed.iter().any(|r| !r.ok);
    let mut records = resumed;
    let mut jsonl = plan.args.records.open_jsonl()?;
    let child = plan.args.child;
    let mut sink = |r: &SeedRecord| -> Result<()> {
        // A `--jobs` child's record names its own share: the campaign's
        // records name the shard the user (or the array task) ran.
        let r = &SeedRecord { campaign: Some(membership.clone()), ..r.clone() };
        let line = serde_json::to_string(r)?;
        if let Some(f) = &mut jsonl {
            f.append(&line)?;
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
    } else if !stopped_before {
        run_serial(&plan, &done, &mut sink)?;
    }
    let report = Report::from_records(&records);
    if !child {
        print_report(&plan, &report)?;
    }
    if let Some(dir) = &plan.args.dump_dir {
        let lost = records.iter().filter(|r| r.dump_error.is_some()).count();
        crate::dump_files::fail_if_lost(lost, "seed(s)", dir, "their records are kept")?;
    }
    Ok(report.exit_code())
}

fn print_report(plan: &Plan, report: &Report) -> Result<()> {
    let a = &plan.args;
    if a.records.json {
        let mut v = serde_json::to_value(report)?;
        // Everything the text header says, as values (helper-31).
        v["workload"] = a.workload.name().into();
        v["firmware"] = plan.cq_firmware.as_deref().unwrap_or("normal").into();
        v["shard"] = plan.shard.to_string().into();
        v["seed_base"] = a.seed_base.into();
        v["seeds"] = a.seeds.into();
        v["until_first"] = a.until_first.into();
        v["timeout_cycles"] = a.timeout_cycles.into();
        v["jitter"] = a.jitter.into();
        v["delay"] = a.delay.into();
        v["core_stall"] = a.core_stall.into();
        v["reorder"] = a.reorder.into();
        v["pct_depth"] = a.pct_depth.into();
        // Host jitter on every seed, or the default on half of them.
        v["host_jitter"] = a.host.host_jitter.unwrap_or(crate::cli::RACE_HOST_JITTER).into();
        v["host_jitter_seeds"] = if a.host.host_jitter.is_some() { "all" } else { "half" }.into();
        v["host_pct"] = a.host.host_pct.into();
        v["faults"] = a.faults.clone().into();
        v["exact_time"] = a.exact_time.into();
        v["blocking_loads"] = a.blocking_loads.into();
        v["link_contention"] = a.link_contention.into();
        v["icache"] = a.icache.into();
        v["reads_pass_unsent"] = a.reads_pass_unsent.into();
        // What ran (Wormhole's cores have none, so false there, as the
        // replay lines say), and what was asked.
        v["l0_cache"] = a.model().on(a.chip.sim_board().arch()).l0_cache.into();
        v["l0_cache_requested"] = a.l0_cache.into();
        let (chip, harvesting) = plan.chip_names();
        v["chip"] = chip.into();
        v["harvesting"] = harvesting.into();
        v["iterations"] = a.iterations.into();
        if a.workload == WorkloadKind::TwoQueue {
            v["two_queue"] = serde_json::json!({"copies": a.copies, "buffers": a.buffers, "depth": a.depth,
                "trace_kernels": a.trace_kernels, "bytes": a.bytes, "page_size": a.page_size, "delay": a.delay,
                "ring_pages": a.ring_pages, "pcie_read_latency": a.pcie_read_latency, "issue_size": a.issue_size,
                "completion_size": a.completion_size});
            // What a seed nothing else varies draws (`Plan::seed_variation`).
            v["drawn_for_unvaried_seeds"] = match plan.drawn_variation() {
                Some(SeedVariation::SliceJitter(q)) => serde_json::json!({"slice_jitter": q}),
                Some(SeedVariation::NocJitter(j)) => serde_json::json!({"noc_jitter": j}),
                None => serde_json::Value::Null,
            };
        }
        outln!("{v}");
        return Ok(());
    }
    let host = match a.host.host_jitter {
        Some(j) => j.to_string(),
        None => format!("{} on half the seeds", crate::cli::RACE_HOST_JITTER),
    };
    // The faults as given: a rate read without them would mislead.
    let faults = if a.faults.is_empty() { String::new() } else { format!(", faults {}", a.faults.join(",")) };
    // The model, where it is not the default (Wormhole's lack of L0 data
    // caches is no departure: its replay lines say `--l0-cache false`).
    let model = a.model().describe_on(a.chip.sim_board().arch());
    // What varies a two-queue seed that nothing else varies.
    let variation = match plan.drawn_variation() {
        Some(SeedVariation::SliceJitter(q)) => format!(", slice jitter {q} on seeds with nothing else to vary"),
        Some(SeedVariation::NocJitter(j)) => format!(", NOC jitter {j} on seeds with nothing else to vary"),
        None => String::new(),
    };
    // The two-queue shape, as the JSON's `two_queue` and the replay lines
    // give it (the other workloads draw theirs per seed).
    let shape = match a.workload {
        WorkloadKind::TwoQueue => format!(
            ", copies {}, depth {}, buffers {}, issue size {}, trace kernels {}, bytes {}, page size {}, ring pages {}",
            a.copies, a.depth, a.buffers, a.issue_size, a.trace_kernels, a.bytes, a.page_size, a.ring_pages
        ),
        WorkloadKind::Random | WorkloadKind::Programs => String::new(),
    };
    let (chip, harvest) = plan.chip_names();
    let header = format!(
        "race {} on {chip} ({}) (firmware {}, shard {}, {} iterations{shape}, jitter {}, delay {}, pct depth {}, host \
         jitter {}, host pct {}{}{}{})",
        a.workload.name(),
        harvest.as_deref().unwrap_or("harvesting drawn per seed"),
        plan.cq_firmware.as_deref().unwrap_or("normal"),
        plan.shard,
        a.iterations,
        a.jitter,
        a.delay,
        a.pct_depth,
        host,
        a.host.host_pct,
        variation,
        faults,
        model
    );
    report.print(&header);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct RaceCli {
        #[command(flatten)]
        args: Args,
    }

    /// Every seed's device reports a wait that goes on (a seed hung under
    /// a large `--timeout-cycles` waited in silence), in every workload.
    #[test]
    fn every_seeds_device_reports_its_long_waits() {
        for workload in ["two-queue", "random", "programs"] {
            let cli = RaceCli::try_parse_from(["race", "--workload", workload]).expect("race options");
            let plan = Plan::new(cli.args).expect("a race plan");
            for seed in [1, 2] {
                assert!(plan.configs(seed).1.wait_progress.is_some(), "{workload} seed {seed}");
            }
        }
    }
}
