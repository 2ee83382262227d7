//! `cqlab replay RECORD`: re-runs one run of a campaign from its JSONL
//! record, bit for bit (same seed, same options, same device cycle count),
//! writes its hang dump and trace, and checks the outcome matches.

use crate::campaign::SeedRecord;
use crate::exit::FailureClass;
use crate::out::outln;
use crate::race::failure::Classified;
use crate::race::{self, failure::Failure};
use crate::usage::UsageError;
use anyhow::{Context, Result};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// A JSONL record (the line itself, starting with `{`), or a file of records.
    pub record: String,
    /// With a file: the record of this seed (default: the first failing one, else the first not killed on purpose).
    #[arg(long, value_parser = crate::cli::seed)]
    pub seed: Option<u64>,
    /// Directory for the dump and trace of a race record (a stress run
    /// writes neither; default: replay-seed-N; created if missing, its
    /// parent must exist).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn inline(args: &Args) -> bool {
    args.record.trim_start().starts_with('{')
}

pub fn validate(args: &Args) -> Result<()> {
    if inline(args) {
        crate::usage::ensure(args.seed.is_none(), || {
            "--seed picks a record of a file; RECORD here is one record already".into()
        })?;
    } else {
        crate::input::check_file("RECORD", Path::new(&args.record))?;
    }
    if let Some(out) = &args.out {
        let inputs: Vec<&Path> = if inline(args) { vec![] } else { vec![Path::new(&args.record)] };
        crate::output::check("--out", out, crate::output::Kind::Dir, &inputs)?;
    }
    Ok(())
}

/// The argument vector of a record, parsed as the CLI would.
#[derive(Parser)]
#[command(name = "cqlab")]
struct Line {
    #[command(subcommand)]
    tool: Tool,
}

#[derive(clap::Subcommand)]
enum Tool {
    Race(race::Args),
    #[command(subcommand)]
    Stress(crate::stress::Command),
}

fn load(args: &Args) -> Result<SeedRecord> {
    if inline(args) {
        let r: SeedRecord = serde_json::from_str(&args.record)
            .map_err(|e| UsageError(format!("RECORD is not a campaign record: {e}")))?;
        r.check().map_err(|e| UsageError(format!("RECORD is not a record cqlab wrote: {e}")))?;
        return Ok(r);
    }
    let mut records = crate::campaign::read_any_records(Path::new(&args.record))?;
    // In run order, as the report names its first failure: `--jobs` writes
    // records as they finish (helper-49: the default was another seed).
    records.sort_by_key(|r| r.index);
    let pick = match args.seed {
        Some(s) => records.iter().find(|r| r.seed == s),
        // A killed run is no failure (and nothing to replay).
        None => records
            .iter()
            .find(|r| !r.ok && !r.killed_on_purpose())
            .or(records.iter().find(|r| !r.killed_on_purpose()))
            .or(records.first()),
    };
    pick.cloned().ok_or_else(|| {
        let which = args.seed.map(|s| format!(" of seed {s}")).unwrap_or_default();
        UsageError(format!("{}: no record{which}", args.record)).into()
    })
}

/// A `stress` run: the same `stress run-one` process again.
fn replay_stress(record: &SeedRecord) -> Result<ExitCode> {
    // The record's arguments are checked as the command line they are
    // before a process runs them.
    let argv = std::iter::once("cqlab".into()).chain(record.argv.iter().map(Into::into));
    crate::usage::ensure(record.argv.starts_with(&["stress".into(), "run-one".into()]), || {
        format!("a stress record runs `stress run-one ...`, this one `{}`", record.argv.join(" "))
    })?;
    if let crate::Verdict::Refused { message, .. } = crate::check(argv) {
        return Err(UsageError(format!("the record's arguments are refused: {}", message.trim())).into());
    }
    let line = Line::try_parse_from(std::iter::once("cqlab").chain(record.argv.iter().map(String::as_str)))
        .map_err(|e| UsageError(format!("the record's arguments do not parse: {}", e.render().to_string().trim())))?;
    let Tool::Stress(crate::stress::Command::RunOne(one)) = line.tool else {
        unreachable!("checked above: the record runs `stress run-one`")
    };
    let provenance = Provenance::of(record, &crate::stress::firmware_digest(&one.workload)?);
    // A run that holds for its planned kill would wait for ever: the
    // campaign passes that option to the killed runs only, never records it.
    crate::usage::ensure(!record.argv.iter().any(|a| a == "--hold-after-enqueued"), || {
        "the record's arguments hold the run for a kill (--hold-after-enqueued): not a record cqlab wrote".into()
    })?;
    // Bounded: a run that never ends would make a replay that never ends
    // (helper-33). Ten times the recorded run's host time and a minute:
    // a hard-timeout record's run gets ten of its timeouts to pass.
    let limit = Duration::from_secs_f64((record.seconds * 10.0 + 60.0).min(86_400.0));
    let Some((status, stdout, stderr)) = run_bounded(&record.argv, limit)? else {
        let reproduced = record.failure.as_ref().is_some_and(|f| f.kind == "hard-timeout");
        outln!(
            "replay of stress seed {}: still running after {:.0} s (the recorded run took {:.1} s), killed: {}",
            record.seed,
            limit.as_secs_f64(),
            record.seconds,
            if reproduced { "identical (a hard timeout again)" } else { "DIFFERS" }
        );
        return Ok(if reproduced { ExitCode::SUCCESS } else { crate::exit::Exit::Failed.into() });
    };
    let last = stdout.lines().rfind(|l| l.starts_with('{')).unwrap_or_default();
    let got: crate::stress::RunResult =
        serde_json::from_str(last).with_context(|| format!("the run printed no result ({status}): {stderr}"))?;
    // The run's notes and progress stay diagnostics; stdout is the verdict.
    crate::out::diag(format_args!("{stderr}"));
    // No device, no replay: not a pass at cycle 0 (helper-44), but what
    // the campaign does, which stops on it.
    if let Some(why) = got.unavailable {
        anyhow::bail!("replay of stress seed {}: the run could not have its device: {why}", record.seed);
    }
    let want_sig = record.failure.as_ref().map(|f| f.signature.as_str());
    let got_sig = got.failure.as_ref().map(|f| f.signature.as_str());
    // Only the embedded simulator is cycle-deterministic across processes;
    // a daemon's device carries time over from earlier clients.
    let embedded = record.argv.windows(2).any(|w| w[0] == "--device" && w[1].starts_with("embedded"));
    let same = same_failure(record.failure.as_ref(), got.failure.as_ref())
        && (!embedded || got.device_cycles == record.device_cycles);
    outln!(
        "replay of stress seed {}: {}, the run ending at device cycle {} (recorded: {}, ending at {}): {}{}{}",
        record.seed,
        got_sig.unwrap_or("pass"),
        got.device_cycles,
        want_sig.unwrap_or("pass"),
        record.device_cycles,
        if same { "identical" } else { "DIFFERS" },
        class_note(record.failure.as_ref(), got.failure.as_ref()),
        provenance.verdict_note(same)
    );
    if record.failure.as_ref().is_some_and(|f| f.kind == "hard-timeout") {
        // Still DIFFERS (docs/cli.md: only a hard timeout again is
        // identical), but the difference is the limit, not the seed.
        outln!(
            "note: the recorded run was cut off by a host-time limit (stress restart --timeout, after {:.2} s), which \
             a replay does not reproduce: it allows {:.0} s, and here the run ended (the record has no device cycle: \
             0)",
            record.seconds,
            limit.as_secs_f64()
        );
    }
    Ok(if same { ExitCode::SUCCESS } else { crate::exit::Exit::Failed.into() })
}

/// Runs `cqlab ARGV` with its output collected, killed after `limit`:
/// its status, stdout and stderr, or `None` when it was killed.
fn run_bounded(argv: &[String], limit: Duration) -> Result<Option<(std::process::ExitStatus, String, String)>> {
    use std::io::Read;
    use std::process::Stdio;
    let exe = std::env::current_exe().context("locating the cqlab binary")?;
    let mut child = std::process::Command::new(exe).args(argv).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // Both pipes drained as the run goes, so neither fills and stops it.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            child.kill()?;
            child.wait()?;
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = |t: std::thread::JoinHandle<String>| t.join().unwrap_or_default();
    Ok(Some((status, text(out), text(err))))
}

pub fn run(args: Args) -> Result<ExitCode> {
    let record = load(&args)?;
    if record.tool == "stress" && record.killed_on_purpose() {
        return Err(UsageError(format!(
            "seed {}: that run was killed on purpose; there is nothing to replay",
            record.seed
        ))
        .into());
    }
    // A record that contradicts itself was refused when it was read
    // (`SeedRecord::check`): its verdict would compare against the wrong
    // thing.
    // Stress records run `--seed N`, race records `--seed-base N --seeds 1`.
    let argv_seed = record.argv.windows(2).find(|w| w[0] == "--seed" || w[0] == "--seed-base");
    crate::usage::ensure(argv_seed.is_none_or(|w| w[1] == record.seed.to_string()), || {
        let w = argv_seed.expect("found");
        format!("seed {}: its arguments run {} {}: not a record cqlab wrote", record.seed, w[0], w[1])
    })?;
    if record.tool == "stress" {
        crate::usage::ensure(args.out.is_none(), || {
            "--out: a stress run writes no dump or trace to put there (only a race record's replay does)".into()
        })?;
        return replay_stress(&record);
    }
    crate::usage::ensure(record.tool == "race", || format!("a record of tool {:?}: race or stress", record.tool))?;
    crate::usage::ensure(record.argv.first().is_some_and(|a| a == "race"), || {
        format!("a race record runs `race ...`, this one `{}`", record.argv.join(" "))
    })?;
    let argv = with_model_of_its_day(&record.argv);
    let line = Line::try_parse_from(std::iter::once("cqlab".to_owned()).chain(argv))
        .map_err(|e| UsageError(format!("the record's arguments do not parse: {}", e.render().to_string().trim())))?;
    let Tool::Race(race_args) = line.tool else { unreachable!("checked above: the record runs `race`") };
    let plan = race::Plan::new(race_args)?;
    plan.preflight()?;
    let provenance = Provenance::of(&record, &plan.membership().firmware);
    let seed = record.seed;
    let (outcome, mut dev) = race::run_seed(&plan, seed);
    let cycles = dev.as_ref().map_or(0, |d| d.now());
    let got = outcome.as_ref().err().map(Failure::classify);
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("replay-seed-{seed}")));
    if let Err(f) = &outcome {
        race::write_dump(&out, seed, f, dev.as_mut())?;
        outln!("{}", f.full_text());
        outln!("dump and trace: {}/seed-{seed}.{{txt,json,trace.json}}", out.display());
    }
    let want_sig = record.failure.as_ref().map(|f| f.signature.as_str());
    let got_sig = got.as_ref().map(|f| f.signature.as_str());
    let same = same_failure(record.failure.as_ref(), got.as_ref()) && record.device_cycles == cycles;
    // The run's end, which a replay must match, is not the failure's cycle: a failure's hang
    // dump reads every core's trace ring through the BAR, which takes device time (helper-94
    // read "at device cycle 2527356" for a failure whose dump began at 1524606).
    outln!(
        "replay of seed {seed}: {}, the run ending at device cycle {cycles} (recorded: {}, ending at {}): {}{}{}",
        got_sig.unwrap_or("pass"),
        want_sig.unwrap_or("pass"),
        record.device_cycles,
        if same { "identical" } else { "DIFFERS" },
        class_note(record.failure.as_ref(), got.as_ref()),
        provenance.verdict_note(same)
    );
    Ok(if same { ExitCode::SUCCESS } else { crate::exit::Exit::Failed.into() })
}

/// What runs a replay against what ran its record (the record's campaign
/// membership, absent before 2026-12-02): a replay on other firmware or
/// another cqlab build may differ for that reason alone (helper-94: a
/// replay on changed firmware read DIFFERS with no word why).
struct Provenance {
    /// What differs, as `what (now X, recorded Y)`.
    differs: Vec<String>,
}

impl Provenance {
    /// Compares `record`'s build and firmware with this cqlab's and
    /// `firmware` (the digest of the ELFs the replay loads), and says on
    /// stderr what differs, before the run.
    fn of(record: &SeedRecord, firmware: &str) -> Self {
        let mut differs = Vec::new();
        if let Some(m) = &record.campaign {
            if !m.firmware.is_empty() && m.firmware != firmware {
                differs.push(format!("the firmware (its ELFs' digest now {firmware}, recorded {})", m.firmware));
            }
            let build = crate::campaign::build::cqlab_build();
            if !m.cqlab.is_empty() && m.cqlab != build {
                differs.push(format!("the cqlab build (now {build}, recorded {})", m.cqlab));
            }
        }
        for d in &differs {
            crate::out::diagln!("note: this replay runs other code than the record: {d}");
        }
        Provenance { differs }
    }

    /// What the verdict line adds: why a DIFFERS may be the code's, not the
    /// seed's.
    fn verdict_note(&self, same: bool) -> String {
        match (same, self.differs.is_empty()) {
            (false, false) => {
                let what: Vec<&str> = self.differs.iter().map(|d| d.split(" (").next().unwrap_or(d)).collect();
                let verb = if what.len() == 1 { "differs" } else { "differ" };
                format!(" ({} {verb} from the record's, which may be why)", what.join(" and "))
            }
            _ => String::new(),
        }
    }
}

/// Model options race writes into every record since they exist, each with
/// the model before it (what a record without it ran on) and the day it
/// came: docs/cli.md, race's "Model" options.
const MODEL_OPTIONS_SINCE: [(&str, &str, &str); 4] = [
    ("--blocking-loads", "true", "2026-11-30"),
    ("--link-contention", "false", "2026-11-30"),
    ("--l0-cache", "false", "2026-11-30"),
    ("--reads-pass-unsent", "false", "2026-12-01"),
];

/// A race record's arguments with the model it ran on made explicit: a
/// record from before a model option existed names none, and ran on the
/// model before it (helper-49: such a record replayed on today's model and
/// read DIFFERS with no word why). Says what it added.
fn with_model_of_its_day(argv: &[String]) -> Vec<String> {
    let mut argv = argv.to_vec();
    let mut added = Vec::new();
    // A record of the day before that raced `--faults read-passes-unsent`
    // ran today's rule 4 already (helper-51: adding the old model to it was
    // refused beside that fault).
    let passes = argv.windows(2).any(|w| w[0] == "--faults" && w[1].split(',').any(|f| f == "read-passes-unsent"));
    for (option, before, since) in MODEL_OPTIONS_SINCE {
        if option == "--reads-pass-unsent" && passes {
            continue;
        }
        if !argv.iter().any(|a| a == option) {
            argv.extend([option.to_owned(), before.to_owned()]);
            added.push(format!("{option} {before} (the model before {since})"));
        }
    }
    if !added.is_empty() {
        crate::out::diagln!(
            "note: a record from before these options existed: it replays on the model it ran on, {}",
            added.join(", ")
        );
    }
    argv
}

/// Whether a replay's failure (`got`) is the recorded one (`want`): the
/// same kind and signature, and the same class (the exit code: an edited
/// class replayed as "identical"), unless the record names none (records
/// from before classes read as `other`).
fn same_failure(want: Option<&Classified>, got: Option<&Classified>) -> bool {
    match (want, got) {
        (None, None) => true,
        (Some(w), Some(g)) => {
            w.kind == g.kind && w.signature == g.signature && (w.class == FailureClass::Other || w.class == g.class)
        }
        _ => false,
    }
}

/// The classes beside the verdict when they are what differs (the
/// signatures and cycles printed agree).
fn class_note(want: Option<&Classified>, got: Option<&Classified>) -> String {
    match (want, got) {
        (Some(w), Some(g)) if (w.class, &w.kind) != (g.class, &g.kind) => {
            format!(" (class {}, kind {}; recorded: class {}, kind {})", g.class.name(), g.kind, w.class.name(), w.kind)
        }
        _ => String::new(),
    }
}
