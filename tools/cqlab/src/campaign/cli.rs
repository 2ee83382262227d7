//! `cqlab campaign sbatch|merge`.

use super::{read_records, sbatch, Report};
use crate::out::outln;
use crate::usage::{ensure, UsageError};
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Write (and with --submit, submit) a Slurm array job that runs a
    /// `race` or `stress` campaign in N shards, each writing DIR/shard-I.jsonl.
    Sbatch(sbatch::Args),
    /// Merge the shard JSONL of DIR (or one JSONL file) into one report:
    /// the report a single-machine run of the whole campaign gives (race's,
    /// or stress restart's with its drift table). The records must be of
    /// one campaign (one tool, each run once).
    Merge {
        /// A directory of JSONL record files (every shard's), or one file.
        dir: PathBuf,
        /// Print the merged report as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn validate(cmd: &Command) -> Result<()> {
    match cmd {
        Command::Sbatch(a) => sbatch::validate(a),
        Command::Merge { dir, .. } => {
            std::fs::metadata(dir).map_err(|e| UsageError(format!("{}: {e}", dir.display())))?;
            Ok(())
        }
    }
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    validate(&cmd)?;
    match cmd {
        Command::Sbatch(args) => sbatch::run(args),
        Command::Merge { dir, json } => {
            let all = read_records(&dir)?;
            ensure(!all.is_empty(), || format!("{}: no campaign records (*.jsonl)", dir.display()))?;
            let missing = missing_runs(&all);
            if all[0].tool == "stress" {
                // The report `stress restart` gives, drift table included.
                let summary = crate::stress::Summary::of(&all);
                if json {
                    let mut v = summary.to_json();
                    v["missing_runs"] = missing.into();
                    outln!("{v}");
                } else {
                    say_missing(missing, all.len());
                    let header = format!("campaign {} ({})", dir.display(), summary.counts());
                    summary.print(&header, "--kill-rate");
                }
                return Ok(summary.report.exit_code());
            }
            // Race records: race's report.
            let (killed, records): (Vec<_>, Vec<_>) = all.into_iter().partition(|r| r.killed_on_purpose());
            let report = Report::from_records(&records);
            if json {
                let mut v = serde_json::to_value(&report)?;
                v["killed"] = killed.len().into();
                v["missing_runs"] = missing.into();
                outln!("{v}");
            } else {
                say_missing(missing, records.len() + killed.len());
                report.print(&format!("campaign {}", dir.display()));
            }
            Ok(report.exit_code())
        }
    }
}

/// How many runs of `0..=` the highest index have no record, warning on
/// stderr which: a shard or array task lost would otherwise shrink the
/// campaign without a word.
fn missing_runs(records: &[super::SeedRecord]) -> u64 {
    let mut present: Vec<u64> = records.iter().map(|r| r.index).collect();
    present.sort_unstable();
    let Some(&last) = present.last() else { return 0 };
    let missing = last + 1 - present.len() as u64;
    if missing > 0 {
        let first = (0..).zip(&present).find(|&(i, &at)| i != at).map_or(last, |(i, _)| i);
        crate::out::diagln!(
            "warning: {missing} of runs 0..={last} have no record (the first: run {first}): a shard or task lost, \
             or a campaign stopped early (--until-first); the report covers the {} runs present",
            present.len()
        );
    }
    missing
}

/// The report's own line on runs without a record (the warning names
/// the first of them).
fn say_missing(missing: u64, present: usize) {
    if missing > 0 {
        outln!("{missing} runs have no record: the report covers the {present} runs present");
    }
}
