//! Campaigns: many runs of one configuration, one JSONL record per run,
//! and a report computed from those records alone, so a campaign split into
//! shards (processes, Slurm array tasks, Kubernetes indexed jobs) merges into
//! the very report a single machine gives.

pub mod build;
pub mod cli;
pub mod complete;
pub mod sbatch;
pub mod shard;
pub mod wait;

use crate::out::outln;
use crate::usage::UsageError;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub use shard::Shard;

/// Record and shard options every campaign tool (`race`, `stress restart`) takes.
#[derive(clap::Args, Clone, Debug)]
pub struct RecordArgs {
    /// Append one JSON record per run to this file.
    #[arg(long)]
    pub jsonl: Option<std::path::PathBuf>,
    /// Run only shard I of N (run i belongs to shard i % N); also taken from
    /// SLURM_ARRAY_TASK_ID/COUNT or JOB_COMPLETION_INDEX/CQLAB_SHARD_COUNT.
    #[arg(long)]
    pub shard: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Resume this shard from its --jsonl file: a record cut short at its
    /// end is dropped, and the runs it records are not run again (what an
    /// array task requeued, preempted or rerun does). The file must hold
    /// records of this campaign and shard only.
    #[arg(long, requires = "jsonl")]
    pub resume: bool,
}

impl RecordArgs {
    /// The `--jsonl` file, opened for appending (records of earlier runs stay).
    pub fn open_jsonl(&self) -> Result<Option<Jsonl>> {
        let Some(p) = &self.jsonl else { return Ok(None) };
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .with_context(|| format!("opening --jsonl {}", p.display()))?;
        Ok(Some(Jsonl { out: std::io::BufWriter::new(f), path: p.clone() }))
    }
}

impl RecordArgs {
    /// With `--resume`: the records of this campaign's shard (`m`) the
    /// `--jsonl` file already holds, each run once, after cutting off a
    /// record its end holds only part of (helper-80: a rerun appended onto
    /// the cut line, and every run again). `tool` and `argv` (any run's
    /// command line) are what the records must say; anything else in the
    /// file is refused (exit 2), as another campaign's.
    pub fn resume(&self, tool: &str, m: &Membership, argv: &[String]) -> Result<Vec<SeedRecord>> {
        let (true, Some(path)) = (self.resume, &self.jsonl) else { return Ok(Vec::new()) };
        // A device or a pipe (`/dev/stdout`) holds nothing to resume, and
        // reading one may not end (`/dev/full`).
        if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            return Ok(Vec::new());
        }
        let mut text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_context(|| format!("reading --jsonl {} to resume", path.display())),
        };
        // The partial record at its end, if any, is cut off only once every
        // whole line has proved the file this shard's (helper-83: another
        // campaign's file was cut before it was refused).
        let whole = if text.ends_with(b"\n") {
            text.len()
        } else {
            text.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1)
        };
        let partial = text.len() - whole;
        text.truncate(whole);
        let text = String::from_utf8(text)
            .map_err(|e| UsageError(format!("--resume: {}: not UTF-8 ({e})", path.display())))?;
        let mut records: Vec<SeedRecord> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let at = format!("{} line {}", path.display(), n + 1);
            let r: SeedRecord = serde_json::from_str(line)
                .map_err(|e| UsageError(format!("--resume: {at}: not a campaign record ({e})")))?;
            r.check().map_err(|e| UsageError(format!("--resume: {at}: not a record cqlab wrote: {e}")))?;
            let other = |what: String| {
                UsageError(format!(
                    "--resume: {at}: a record of another campaign ({what}): resume a shard from its own file, or \
                     write this campaign's records elsewhere"
                ))
            };
            if r.tool != tool {
                return Err(other(format!("a {} record, this is {tool}", r.tool)).into());
            }
            let (shard, runs) = (r.campaign.as_ref().map(|c| c.shard), r.campaign.as_ref().map(|c| c.runs));
            if shard != Some(m.shard) || runs != Some(m.runs) {
                let theirs = r
                    .campaign
                    .as_ref()
                    .map_or("no campaign size".into(), |c| format!("shard {} of {} runs", c.shard, c.runs));
                return Err(other(format!("{theirs}; this is shard {} of {} runs", m.shard, m.runs)).into());
            }
            if let Some((key, theirs, ours)) = membership_difference(r.campaign.as_ref(), Some(m)) {
                return Err(other(format!("{key} {theirs}; this campaign has {ours}")).into());
            }
            if let Some((key, theirs, ours)) = argv_difference(&r.argv, argv) {
                return Err(other(format!("{key} {theirs}; this campaign has {ours}")).into());
            }
            if seen.insert(r.index) {
                records.push(r);
            }
        }
        if partial > 0 {
            let f = std::fs::OpenOptions::new().write(true).open(path);
            f.and_then(|f| f.set_len(whole as u64))
                .with_context(|| format!("cutting the partial record off the end of --jsonl {}", path.display()))?;
            crate::out::diagln!(
                "warning: --resume: {} ended inside a record ({partial} bytes after its last whole line): cut off, \
                 the run runs again",
                path.display()
            );
        }
        if !records.is_empty() {
            crate::out::diagln!(
                "--resume: {} holds {} of this shard's runs: they are not run again",
                path.display(),
                records.len()
            );
        }
        Ok(records)
    }
}

/// A `--jsonl` file records are appended to, one whole line at a time.
pub struct Jsonl {
    out: std::io::BufWriter<std::fs::File>,
    path: std::path::PathBuf,
}

impl Jsonl {
    /// Appends one record line and flushes it: a campaign stopped later
    /// keeps every record written so far.
    pub fn append(&mut self, line: &str) -> Result<()> {
        use std::io::Write;
        writeln!(self.out, "{line}")
            .and_then(|()| self.out.flush())
            .with_context(|| format!("appending a record to --jsonl {}", self.path.display()))
    }
}

/// The metric that marks a record of a run `stress restart` SIGKILLed on
/// purpose (not a result).
pub const KILLED: &str = "killed_after_s";

/// One run (one seed) of a campaign.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedRecord {
    /// Which tool wrote it: `race` or `stress`.
    pub tool: String,
    pub seed: u64,
    /// Position in the campaign (0-based), the order reports use.
    pub index: u64,
    /// Whether the run passed; false for a run killed on purpose too, which
    /// is no result either way (`killed`).
    pub ok: bool,
    /// `stress restart --kill-rate` killed the run on purpose: reports
    /// leave it out (helper-31: killed runs read `"ok": true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub killed: bool,
    /// Of a stress run: whether it came right after one killed on purpose,
    /// in the same sequence of runs (a shard's), and so met what the kill
    /// left. In the record so that `campaign merge` counts failures after a
    /// kill as the campaign did; absent from race records and from stress
    /// records before 2026-12-01, which do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_kill: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<crate::race::failure::Classified>,
    /// Device cycles when the run ended (bit-for-bit replay checks this).
    pub device_cycles: u64,
    /// Host seconds the run took.
    pub seconds: f64,
    /// Workload metrics (stress: throughput and the like).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
    /// The arguments that replay exactly this run (`cqlab <argv...>`).
    pub argv: Vec<String>,
    /// Why this failing run's `--dump-dir` files could not be written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dump_error: Option<String>,
    /// The campaign the run is of: how many runs it has and which shard
    /// ran this one, so a merge knows the runs it has no record of (absent
    /// from records before 2026-12-02, which do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub campaign: Option<Membership>,
}

/// Where a run sits in its campaign: written into every record, so that
/// `campaign merge` can name each run and shard without a record, runs
/// after the highest index it finds included (helper-80: a campaign whose
/// tasks hit the time limit merged as "6 runs have no record" of 1,250).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Membership {
    /// Runs in the whole campaign (race's `--seeds`, stress's `--runs`).
    pub runs: u64,
    /// The shard that ran this run (`--jobs` children write their parent's).
    pub shard: Shard,
    /// `race --until-first`: each shard stops at its first failure, so the
    /// runs after it have no record by design.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub until_first: bool,
    /// The cqlab build that ran it ([`build::cqlab_build`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cqlab: String,
    /// A digest of the firmware ELFs its boots load ([`build::firmware_digest`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub firmware: String,
    /// The campaign's options no run's command line holds (`stress
    /// restart`'s `--seed`, `--timeout`, `--kill-rate`, `--reset`,
    /// `--phase-runs`), by option.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

impl Membership {
    /// Shard `shard` of a campaign of `runs` runs, run by this cqlab build
    /// with firmware of digest `firmware`.
    pub fn new(runs: u64, shard: Shard, firmware: String) -> Self {
        Membership { runs, shard, until_first: false, cqlab: build::cqlab_build(), firmware, options: BTreeMap::new() }
    }
}

/// The longest a run's `seconds` may say: a year (helper-44: 1e300 and
/// -5 were reported as host time).
const MAX_RUN_SECONDS: f64 = 366.0 * 86_400.0;

/// The largest a record's metric may say: far above any count, rate or
/// time a run measures, far enough below f64's range that sums and
/// squares over a campaign stay finite.
const MAX_METRIC: f64 = 1e30;

impl SeedRecord {
    /// What no record cqlab writes can say: another tool, a verdict its
    /// failure contradicts, a host time that is no duration. A report of
    /// such records would contradict itself ("4 of 4 failed" beside three
    /// failures).
    pub fn check(&self) -> Result<(), String> {
        if self.tool != "race" && self.tool != "stress" {
            return Err(format!("tool {:?}: records are written by race or stress", self.tool));
        }
        if self.killed && (self.ok || self.failure.is_some()) {
            return Err("a run killed on purpose has ok false and no failure".into());
        }
        if !self.killed && self.ok != self.failure.is_none() {
            let names = if self.failure.is_some() { "names a failure" } else { "names no failure" };
            return Err(format!("seed {}: the record says ok {}, yet {names}", self.seed, self.ok));
        }
        if !(0.0..=MAX_RUN_SECONDS).contains(&self.seconds) {
            return Err(format!("seconds {:?}: not a run's host time (0..={MAX_RUN_SECONDS})", self.seconds));
        }
        // A race run i is seed base + i (`race` keeps it below 2^53): a
        // seed under its index has no base, which a merge printed wrapped
        // around (helper-65).
        if self.tool == "race" && self.seed < self.index {
            return Err(format!("run {} is seed {}: a race run i is seed base + i", self.index, self.seed));
        }
        if let Some(m) = &self.campaign {
            if self.index >= m.runs {
                return Err(format!("run {} of a campaign of {} runs", self.index, m.runs));
            }
            if !m.shard.owns(self.index) {
                return Err(format!(
                    "run {} written by shard {}, which owns runs i with i % {} == {}",
                    self.index, m.shard, m.shard.count, m.shard.index
                ));
            }
        }
        // Every metric is a count, a rate or a time: finite and not
        // negative (helper-65: -1e308 made a merge's stddev inf).
        if let Some((name, v)) = self.metrics.iter().find(|(_, v)| !(0.0..=MAX_METRIC).contains(*v)) {
            return Err(format!("metric {name} {v:?}: not a count, rate or time (0..={MAX_METRIC:e})"));
        }
        Ok(())
    }

    /// The line that replays this run, as a shell takes it.
    pub fn replay_command(&self) -> String {
        crate::shell::cqlab_line(&self.argv)
    }

    /// A run killed on purpose (records from before `killed` say so by
    /// their metric alone).
    pub fn killed_on_purpose(&self) -> bool {
        self.killed || self.metrics.contains_key(KILLED)
    }

    /// The host jitter the run had, as its command line names it (`race`
    /// writes every seed's, drawn or given).
    pub fn host_jitter(&self) -> Option<u64> {
        let at = self.argv.iter().position(|a| a == "--host-jitter")?;
        self.argv.get(at + 1)?.parse().ok()
    }
}

/// Distinct failure: how often, and where first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SignatureCount {
    pub signature: String,
    /// Its exit code's class (see `crate::exit`).
    #[serde(default)]
    pub class: crate::exit::FailureClass,
    pub kind: String,
    pub count: u64,
    pub first_seed: u64,
    /// Root of the wait-for chain of the first occurrence (core and state).
    pub root: String,
    pub error: String,
    pub replay: String,
}

/// The campaign's result, computed from its records only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub runs: u64,
    pub failures: u64,
    pub failure_rate: f64,
    /// 95% Wilson score interval of the failure rate.
    pub failure_rate_95: (f64, f64),
    pub signatures: Vec<SignatureCount>,
    /// Runs up to and including the first failing one, in campaign order.
    pub runs_to_first_failure: Option<u64>,
    pub first_failing_seed: Option<u64>,
    /// Host seconds of the runs up to and including the first failure (the
    /// sum of their times, so sharded and single-machine runs agree).
    pub seconds_to_first_failure: Option<f64>,
    pub seconds: f64,
    /// Present when some runs had host jitter and others none (`race`'s
    /// default draws it on about half the seeds): a failure only one draw
    /// shows reads as a plain rate otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures_by_host_jitter: Option<HostJitterSplit>,
}

/// Failures among the runs with host jitter and among those without.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostJitterSplit {
    pub with: FailureCount,
    pub without: FailureCount,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FailureCount {
    pub failures: u64,
    pub runs: u64,
}

impl HostJitterSplit {
    fn failures(&self) -> u64 {
        self.with.failures + self.without.failures
    }

    /// The split of `records`, when they drew both (their command lines
    /// name a host jitter above 0 and one of 0).
    fn of(records: &[&SeedRecord]) -> Option<Self> {
        let mut split = HostJitterSplit { with: FailureCount::default(), without: FailureCount::default() };
        for r in records {
            let count = match r.host_jitter() {
                Some(0) => &mut split.without,
                Some(_) => &mut split.with,
                None => continue,
            };
            count.runs += 1;
            count.failures += u64::from(!r.ok);
        }
        (split.with.runs > 0 && split.without.runs > 0).then_some(split)
    }
}

impl Report {
    pub fn from_records(records: &[SeedRecord]) -> Self {
        let mut sorted: Vec<&SeedRecord> = records.iter().collect();
        sorted.sort_by_key(|r| r.index);
        let runs = sorted.len() as u64;
        let failures = sorted.iter().filter(|r| !r.ok).count() as u64;
        let mut signatures: Vec<SignatureCount> = Vec::new();
        for r in &sorted {
            let Some(f) = &r.failure else { continue };
            match signatures.iter_mut().find(|s| s.signature == f.signature) {
                Some(s) => s.count += 1,
                None => signatures.push(SignatureCount {
                    signature: f.signature.clone(),
                    class: f.class,
                    kind: f.kind.clone(),
                    count: 1,
                    first_seed: r.seed,
                    root: f.root.clone(),
                    error: f.error.clone(),
                    replay: r.replay_command(),
                }),
            }
        }
        signatures.sort_by(|a, b| b.count.cmp(&a.count).then(a.first_seed.cmp(&b.first_seed)));
        let first = sorted.iter().position(|r| !r.ok);
        let rate = if runs == 0 { 0.0 } else { failures as f64 / runs as f64 };
        Report {
            runs,
            failures,
            failure_rate: rate,
            failure_rate_95: cqlab_workloads::stats::wilson(failures, runs),
            signatures,
            runs_to_first_failure: first.map(|i| i as u64 + 1),
            first_failing_seed: first.map(|i| sorted[i].seed),
            // Folded from +0.0: an empty `sum` of floats is -0.0 (a shard
            // with no seeds printed "-0.0 s").
            seconds_to_first_failure: first.map(|i| sorted[..=i].iter().fold(0.0, |s, r| s + r.seconds)),
            seconds: sorted.iter().fold(0.0, |s, r| s + r.seconds),
            failures_by_host_jitter: HostJitterSplit::of(&sorted),
        }
    }

    /// The campaign's exit: success, its failures' one class, or 1 when
    /// mixed (or when a failed run left no failure record to classify).
    pub fn exit_code(&self) -> std::process::ExitCode {
        if self.failures > 0 && self.signatures.is_empty() {
            return crate::exit::Exit::Failed.into();
        }
        crate::exit::of_failures(self.signatures.iter().map(|s| s.class)).into()
    }

    pub fn print(&self, header: &str) {
        let (lo, hi) = self.failure_rate_95;
        outln!(
            "{header}: {} of {} runs failed ({:.1}%, 95% interval {:.1}%..{:.1}%) in {:.1} s of runs",
            self.failures,
            self.runs,
            self.failure_rate * 100.0,
            lo * 100.0,
            hi * 100.0,
            self.seconds
        );
        // Only where something failed: a clean run's split says nothing.
        if let Some(HostJitterSplit { with, without }) = self.failures_by_host_jitter.filter(|s| s.failures() > 0) {
            outln!(
                "by host jitter: {} of {} {} with host jitter failed, {} of {} without",
                with.failures,
                with.runs,
                if with.runs == 1 { "run" } else { "runs" },
                without.failures,
                without.runs
            );
        }
        if let (Some(n), Some(seed), Some(s)) =
            (self.runs_to_first_failure, self.first_failing_seed, self.seconds_to_first_failure)
        {
            outln!("first failure: seed {seed}, after {n} runs and {s:.2} s");
        }
        for s in &self.signatures {
            outln!("  {}x {} (first seed {})", s.count, s.signature, s.first_seed);
            outln!("    root: {}", s.root);
            outln!("    {}", s.error);
            outln!("    replay: {}", s.replay);
        }
    }
}

/// The slice jitter `race` draws for a two-queue seed nothing else varies
/// (`race::Plan::seed_variation`; here, where `campaign merge` reads it).
pub const DRAWN_SLICE_JITTER: u64 = 64;

/// The `--faults` value such a seed's replay line carries: what `campaign
/// merge` leaves out when it compares two records' faults.
pub fn drawn_faults() -> String {
    format!("quantum-jitter={DRAWN_SLICE_JITTER}")
}

/// The options of a record's command line a seed (or a run) draws for
/// itself: they differ between the records of one campaign. `race` writes
/// a seed's host jitter, and the NOC jitter of a two-queue seed nothing
/// else varies under exact time, into `--host-jitter` and `--jitter`
/// (its slice jitter, a `--faults` value, is left out of `--faults` alone).
const PER_RUN_OPTIONS: [&str; 6] = ["--seed-base", "--seeds", "--seed", "--host-jitter", "--jitter", "--reset-first"];

/// A command line's options and their values (a flag has none), in order.
fn options(argv: &[String]) -> std::collections::BTreeMap<&str, Vec<&str>> {
    let drawn = drawn_faults();
    let mut map: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (i, a) in argv.iter().enumerate() {
        if a.starts_with("--") && !PER_RUN_OPTIONS.contains(&a.as_str()) {
            let value = argv.get(i + 1).filter(|v| !v.starts_with("--")).map_or("", String::as_str);
            if a == "--faults" && value == drawn {
                continue;
            }
            map.entry(a.as_str()).or_default().push(value);
        }
    }
    map
}

/// The first option that shapes a campaign's runs (every option but
/// [`PER_RUN_OPTIONS`]: what runs, on which chip, with which firmware and
/// knobs) whose value differs between two records' command lines:
/// (option, `a`'s value, `b`'s value).
fn campaign_difference(a: &SeedRecord, b: &SeedRecord) -> Option<(String, String, String)> {
    if let Some(d) = membership_difference(a.campaign.as_ref(), b.campaign.as_ref()) {
        return Some(d);
    }
    argv_difference(&a.argv, &b.argv)
}

/// [`campaign_difference`] of two command lines.
fn argv_difference(a: &[String], b: &[String]) -> Option<(String, String, String)> {
    let (x, y) = (options(a), options(b));
    let shown = |v: Option<&Vec<&str>>| v.map_or("(none)".to_owned(), |v| v.join(" "));
    x.keys().chain(y.keys()).find(|k| x.get(*k) != y.get(*k)).map(|k| (k.to_string(), shown(x.get(k)), shown(y.get(k))))
}

/// How two records' campaigns differ in what [`Membership`] says (the
/// shard aside: a campaign's records come from all of them).
fn membership_difference(a: Option<&Membership>, b: Option<&Membership>) -> Option<(String, String, String)> {
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (Some(a), Some(b)) => (a, b),
        (a, b) => {
            let said = |m: Option<&Membership>| {
                m.map_or("no campaign size (a record before 2026-12-02)".to_owned(), |m| format!("{} runs", m.runs))
            };
            return Some(("a campaign of".into(), said(a), said(b)));
        }
    };
    let differs = |key: &str, x: String, y: String| (x != y).then(|| (key.to_owned(), x, y));
    let shown = |v: Option<&String>| v.cloned().unwrap_or_else(|| "(none)".into());
    differs("a campaign of", format!("{} runs", a.runs), format!("{} runs", b.runs))
        .or_else(|| differs("shards", a.shard.count.to_string(), b.shard.count.to_string()))
        .or_else(|| differs("--until-first", a.until_first.to_string(), b.until_first.to_string()))
        .or_else(|| differs("cqlab build", a.cqlab.clone(), b.cqlab.clone()))
        .or_else(|| differs("firmware (a digest of its ELFs)", a.firmware.clone(), b.firmware.clone()))
        .or_else(|| {
            let keys = a.options.keys().chain(b.options.keys());
            keys.map(|k| (k, a.options.get(k), b.options.get(k)))
                .find(|(_, x, y)| x != y)
                .map(|(k, x, y)| (k.clone(), shown(x), shown(y)))
        })
}

/// Every record of the JSONL files in `dir` (or of one file), checked as
/// one campaign's: one tool, one configuration, each run once. Anything
/// else is a usage error naming the file and line.
pub fn read_records(path: &Path) -> Result<Vec<SeedRecord>> {
    read_records_checked(path, true)
}

/// The records of `path` each checked alone, for `replay`, which takes one
/// of them: a file `race --jsonl` appended to twice holds each run twice
/// (helper-49: replay refused it as two campaigns).
pub fn read_any_records(path: &Path) -> Result<Vec<SeedRecord>> {
    read_records_checked(path, false)
}

fn read_records_checked(path: &Path, one_campaign: bool) -> Result<Vec<SeedRecord>> {
    let meta = std::fs::metadata(path).map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
    let files: Vec<std::path::PathBuf> = if meta.is_dir() {
        let mut f: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        f.sort();
        // Opening a pipe waits for its writer, for ever if none comes
        // (helper-44): a directory's records are files. One FILE argument
        // may still be a pipe (`<(...)`).
        if let Some(p) = f.iter().find(|p| !std::fs::metadata(p).is_ok_and(|m| m.is_file())) {
            return Err(UsageError(format!(
                "{}: not a regular file (a directory's records are files; a pipe is read only as the one FILE)",
                p.display()
            ))
            .into());
        }
        f
    } else {
        vec![path.to_owned()]
    };
    let mut records: Vec<SeedRecord> = Vec::new();
    // Where each run's record is in `records`.
    let mut seen: std::collections::HashMap<u64, usize> = Default::default();
    // Runs recorded again, and where the first such record is.
    let (mut reruns, mut rerun) = (0u64, None::<String>);
    let mut first_at = String::new();
    for file in files {
        let mut lines = crate::input::Lines::open("campaign records", &file, crate::input::MAX_RECORDS_BYTES)?;
        while let Some(line) = lines.next_line()? {
            if line.trim().is_empty() {
                continue;
            }
            let r: SeedRecord = match serde_json::from_str::<SeedRecord>(&line) {
                Ok(r) => {
                    r.check().map_err(|e| UsageError(format!("{}: not a record cqlab wrote: {e}", lines.at())))?;
                    r
                }
                // A task killed mid-write leaves its last record cut short:
                // the records before it stand (as trace readers keep a cut
                // trace up to its last whole line).
                Err(e) if lines.cut => {
                    crate::out::diagln!(
                        "warning: {}: cut short ({e}), left out: the file ends inside a record (an interrupted run?)",
                        lines.at()
                    );
                    continue;
                }
                Err(e) => return Err(UsageError(format!("{}: not a campaign record ({e})", lines.at())).into()),
            };
            if !one_campaign {
                records.push(r);
                continue;
            }
            if let Some(first) = records.first().filter(|f| f.tool != r.tool) {
                return Err(UsageError(format!(
                    "{}: a {} record among {} records: one merge is one campaign",
                    lines.at(),
                    r.tool,
                    first.tool
                ))
                .into());
            }
            if let Some(first) = records.first() {
                // A race campaign's run i is seed base + i: another base is
                // another campaign (helper-49: two merged into one report).
                let base = |r: &SeedRecord| r.seed.wrapping_sub(r.index);
                if r.tool == "race" && base(&r) != base(first) {
                    return Err(UsageError(format!(
                        "{}: run {} is seed {} (seed base {}), run {} ({first_at}) seed {} (base {}): records of two \
                         campaigns mixed?",
                        lines.at(),
                        r.index,
                        r.seed,
                        base(&r),
                        first.index,
                        first.seed,
                        base(first)
                    ))
                    .into());
                }
                if let Some((key, a, b)) = campaign_difference(first, &r) {
                    return Err(UsageError(format!(
                        "{}: run {} has {key} {b}, run {} ({first_at}) had {a}: records of two campaigns mixed?",
                        lines.at(),
                        r.index,
                        first.index
                    ))
                    .into());
                }
            } else {
                // Where the record every other is compared with came from.
                first_at = lines.at();
            }
            if let Some(prev) = seen.get(&r.index).map(|&at| &records[at]) {
                if prev.seed == r.seed && prev.argv == r.argv {
                    let verdict = |x: &SeedRecord| {
                        let failed = x.failure.as_ref().map_or("passed", |f| f.signature.as_str());
                        format!("{failed}{}", if x.killed { ", killed on purpose" } else { "" })
                    };
                    if verdict(prev) != verdict(&r) {
                        // The same run with another outcome: no rerun of
                        // one campaign's run, or a run whose outcome hangs
                        // on host time (a stress hard timeout). Neither may
                        // count once silently (helper-83).
                        return Err(UsageError(format!(
                            "{}: run {} (seed {}) is recorded twice with different outcomes ({} here, {} before): \
                             records of two campaigns mixed, or a rerun that ended otherwise; keep one of the two \
                             lines",
                            lines.at(),
                            r.index,
                            r.seed,
                            verdict(&r),
                            verdict(prev)
                        ))
                        .into());
                    }
                    // The same run again: a task requeued, preempted or
                    // rerun recorded it twice (helper-80). One counts.
                    if rerun.is_none() {
                        rerun = Some(lines.at());
                    }
                    reruns += 1;
                    continue;
                }
                return Err(UsageError(format!(
                    "{}: run {} (seed {}) appears twice (first as seed {}): records of two campaigns mixed?",
                    lines.at(),
                    r.index,
                    r.seed,
                    prev.seed
                ))
                .into());
            }
            seen.insert(r.index, records.len());
            records.push(r);
        }
    }
    if let Some(at) = rerun {
        crate::out::diagln!(
            "warning: {reruns} {} recorded again with the same seed and command line (the first at {at}): a task \
             rerun or requeued; each run counts once",
            if reruns == 1 { "run was" } else { "runs were" }
        );
    }
    Ok(records)
}
