//! `cqlab campaign sbatch`: a Slurm array job, one array task per shard.
//! Each task runs `cqlab <campaign args> --shard $SLURM_ARRAY_TASK_ID/N
//! --jsonl DIR/shard-$SLURM_ARRAY_TASK_ID.jsonl --resume`, then succeeds
//! when `cqlab campaign merge --check` finds a record of every run of its
//! shard; `cqlab campaign merge DIR` then gives the whole campaign's report. (sbatch options: Slurm's sbatch(1).)

use crate::out::outln;
use crate::shell::quote;
use crate::usage::{ensure, UsageError};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

/// The script's name in `--dir`.
const SCRIPT: &str = "campaign.sbatch";

#[derive(clap::Args)]
pub struct Args {
    /// Shards (array tasks; 1..=10000).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub shards: u32,
    /// Where the script, the shard JSONL and the Slurm logs go (created if
    /// missing; it must hold no campaign's script or shard records yet).
    #[arg(long)]
    pub dir: PathBuf,
    /// Slurm partition (default: the cluster's default).
    #[arg(long, value_parser = partition)]
    pub partition: Option<String>,
    /// Per-task time limit, in Slurm's format: MINUTES, MM:SS, HH:MM:SS,
    /// D-HH, D-HH:MM, D-HH:MM:SS, or UNLIMITED.
    #[arg(long, default_value = "30:00", value_parser = slurm_time)]
    pub time: String,
    /// Submit with `sbatch --parsable` after writing the script.
    #[arg(long)]
    pub submit: bool,
    /// With --submit: follow the job until every task has ended (progress
    /// on stderr), then check the records: exit 6 when runs have none.
    #[arg(long, requires = "submit")]
    pub wait: bool,
    /// The campaign: `race ...` or `stress ...` arguments (after `--`).
    #[arg(last = true, required = true)]
    pub campaign: Vec<String>,
}

/// A Slurm partition name: letters, digits, `_.-` (comma-separated list).
fn partition(s: &str) -> Result<String, String> {
    let ok = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.-,".contains(c));
    ok.then(|| s.to_owned())
        .ok_or_else(|| format!("expected a Slurm partition name (letters, digits, _ . - ,), found {s:?}"))
}

/// A Slurm time limit (sbatch(1) `--time`).
fn slurm_time(s: &str) -> Result<String, String> {
    let bad = || format!("expected MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED, found {s:?}");
    if matches!(s, "UNLIMITED" | "unlimited" | "infinite" | "INFINITE") {
        return Ok(s.to_owned());
    }
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, s),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let numbers = |v: &[&str]| v.iter().all(|p| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit()));
    let fields_ok = match days {
        Some(d) => numbers(&[d]) && (1..=3).contains(&parts.len()),
        None => (1..=3).contains(&parts.len()),
    };
    (fields_ok && numbers(&parts)).then(|| s.to_owned()).ok_or_else(bad)
}

/// The script text.
pub fn script(args: &Args, exe: &str, firmware_dir: Option<&str>) -> String {
    let dir = args.dir.to_string_lossy();
    let mut s = String::from("#!/bin/bash\n");
    s += "#SBATCH --job-name=cqlab-campaign\n";
    s += &format!("#SBATCH --array=0-{}\n", args.shards - 1);
    s += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
    s += &format!("#SBATCH --time={}\n", args.time);
    s += &format!("#SBATCH --output={}/slurm-%A_%a.out\n", quote(&dir));
    if let Some(p) = &args.partition {
        s += &format!("#SBATCH --partition={p}\n");
    }
    s += "set -euo pipefail\n";
    if let Some(fw) = firmware_dir {
        s += &format!("export CQLAB_FIRMWARE_DIR={}\n", quote(fw));
    }
    let campaign: Vec<String> = args.campaign.iter().map(|a| quote(a)).collect();
    let (exe, n) = (quote(exe), args.shards);
    s += &format!("shard=\"$SLURM_ARRAY_TASK_ID/{n}\"\nrecords={}/shard-\"$SLURM_ARRAY_TASK_ID\".jsonl\n", quote(&dir));
    // The campaign's own status is its runs' failure class (data for the
    // merge), but 1 is also an I/O error (a full disk) or a device it
    // could not have (helper-80: such a task read as finished). The task
    // succeeds when its shard's file holds a record of every run of the
    // shard (`campaign merge --check`, exit 6 when not).
    s += &format!("rc=0\n{exe} {} --shard \"$shard\" --jsonl \"$records\" --resume || rc=$?\n", campaign.join(" "));
    s += &format!("check=0\n{exe} campaign merge --check --shard \"$shard\" \"$records\" || check=$?\n");
    s += "if [ \"$check\" -eq 0 ]; then exit 0; fi\n";
    s += "echo \"cqlab campaign: shard $shard: the campaign exited $rc and its records are incomplete (campaign merge \
          --check exited $check); run the task again to resume it\" >&2\n";
    s += "if [ \"$rc\" -ne 0 ]; then exit \"$rc\"; fi\nexit \"$check\"\n";
    s
}

/// Everything the script would run with, checked here first: the campaign
/// arguments as one of its array tasks will see them, and the directory.
pub fn validate(args: &Args) -> Result<()> {
    let tool = args.campaign.first().map(String::as_str);
    ensure(matches!(tool, Some("race" | "stress")), || match tool {
        Some(t) => format!("the campaign after `--` is `race ...` or `stress ...`, not `{t} ...`"),
        None => "the campaign after `--` is `race ...` or `stress ...`, and there is none".into(),
    })?;
    ensure(!args.campaign.iter().any(|a| ["--shard", "--jsonl", "--jobs", "--resume"].contains(&a.as_str())), || {
        "the campaign must not set --shard, --jsonl, --jobs or --resume: each array task is one shard, resumed \
         from its file when Slurm runs it again"
            .into()
    })?;
    let task = ["cqlab"].into_iter().map(String::from).chain(args.campaign.iter().cloned()).chain([
        "--shard".into(),
        format!("0/{}", args.shards),
        "--jsonl".into(),
        "shard-0.jsonl".into(),
        "--resume".into(),
    ]);
    if let crate::Verdict::Refused { message, .. } = crate::check(task.map(Into::into)) {
        return Err(UsageError(format!(
            "the campaign `{}` would be refused by every array task: {}",
            args.campaign.join(" "),
            message.trim().trim_start_matches("error: ")
        ))
        .into());
    }
    // Each task must own a run: a task with none would write no record
    // and fail its check.
    let argv = ["cqlab"].into_iter().map(String::from).chain(args.campaign.iter().cloned());
    if let Some(runs) = crate::campaign_runs(argv.map(Into::into)) {
        ensure(u64::from(args.shards) <= runs, || {
            format!("--shards {} for a campaign of {runs} runs: shards {runs}.. would own no run", args.shards)
        })?;
    }
    crate::output::check("--dir", &args.dir, crate::output::Kind::Dir, &[])?;
    if args.dir.is_dir() {
        // Another campaign's script (its tasks may still pend, helper-80)
        // or records: this one's would mix with them.
        let stale = std::fs::read_dir(&args.dir)
            .with_context(|| format!("reading --dir {}", args.dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "jsonl") || p.file_name().is_some_and(|n| n == SCRIPT));
        if let Some(p) = stale {
            let what = if p.file_name().is_some_and(|n| n == SCRIPT) {
                "another campaign's script (its tasks may still be pending)"
            } else {
                "shard records"
            };
            return Err(UsageError(format!(
                "--dir {} already holds {what} ({}): use an empty directory for each campaign",
                args.dir.display(),
                p.display()
            ))
            .into());
        }
    }
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode> {
    validate(&args)?;
    crate::output::create_dir("--dir", &args.dir)?;
    let dir = std::fs::canonicalize(&args.dir)?;
    let args = Args { dir, ..args };
    let exe = std::env::current_exe().context("locating the cqlab binary")?;
    let fw = std::env::var("CQLAB_FIRMWARE_DIR").ok();
    let text = script(&args, &exe.to_string_lossy(), fw.as_deref());
    let path = args.dir.join(SCRIPT);
    crate::output::write("the script", &path, text.as_bytes())?;
    outln!("wrote {}", path.display());
    if !args.submit {
        return Ok(ExitCode::SUCCESS);
    }
    // Submitted without `--wait`, so the job id is known at once; the wait
    // follows it (`wait`).
    let out = std::process::Command::new("sbatch")
        .arg("--parsable")
        .arg(&path)
        .output()
        .context("running sbatch (is Slurm installed and on PATH?)")?;
    anyhow::ensure!(
        out.status.success(),
        "sbatch {} failed ({}): {}",
        path.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    // `--parsable` prints `ID` or `ID;CLUSTER`.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let id = stdout.trim().split(';').next().unwrap_or_default().to_owned();
    outln!("submitted job {id}: {} array tasks, logs {}/slurm-{id}_*.out", args.shards, args.dir.display());
    let merge = format!("merge with: cqlab campaign merge {}", crate::shell::quote(&args.dir.to_string_lossy()));
    if !args.wait {
        outln!("{merge}");
        return Ok(ExitCode::SUCCESS);
    }
    let ended = super::wait::until_ended(&id);
    let verdict = ended.and_then(|tasks| {
        super::wait::say_failed(&id, &tasks);
        // The records say whether the campaign is whole, whatever Slurm says.
        let records = super::read_records(&args.dir)?;
        if records.is_empty() {
            crate::out::diagln!("job {id}: no shard wrote a record (see the logs)");
            return Ok(crate::exit::Exit::Incomplete);
        }
        let coverage = super::complete::Coverage::of(&records, None)?;
        coverage.warn();
        Ok(if coverage.incomplete() { crate::exit::Exit::Incomplete } else { crate::exit::Exit::Success })
    });
    // Whatever became of the job, the records there merge.
    outln!("{merge}");
    let verdict = verdict?;
    if verdict == crate::exit::Exit::Incomplete {
        outln!("job {id} ended with runs of the campaign unrecorded: rerun the tasks named above (they resume)");
    }
    Ok(verdict.into())
}
