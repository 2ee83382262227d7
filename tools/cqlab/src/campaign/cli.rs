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
    /// the report a single-machine run of the whole campaign gives. The
    /// records must be of one campaign (one tool, each run once).
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
            warn_of_missing_runs(&all);
            // Stress runs killed on purpose are not results (as in `stress restart`).
            let (killed, records): (Vec<_>, Vec<_>) = all.into_iter().partition(|r| r.killed_on_purpose());
            let report = Report::from_records(&records);
            if json {
                let mut v = serde_json::to_value(&report)?;
                v["killed"] = killed.len().into();
                outln!("{v}");
            } else {
                if !killed.is_empty() {
                    outln!("{} runs killed on purpose (--kill-rate) are left out", killed.len());
                }
                report.print(&format!("campaign {}", dir.display()));
            }
            Ok(report.exit_code())
        }
    }
}

/// Says which runs of `0..=` the highest index have no record: a shard or
/// array task lost would otherwise shrink the campaign without a word.
fn warn_of_missing_runs(records: &[super::SeedRecord]) {
    let mut present: Vec<u64> = records.iter().map(|r| r.index).collect();
    present.sort_unstable();
    let Some(&last) = present.last() else { return };
    let missing = last + 1 - present.len() as u64;
    if missing > 0 {
        let first = (0..).zip(&present).find(|&(i, &at)| i != at).map_or(last, |(i, _)| i);
        crate::out::diagln!(
            "warning: {missing} of runs 0..={last} have no record (the first: run {first}): a shard or task lost, \
             or a campaign stopped early (--until-first); the report covers the {} runs present",
            present.len()
        );
    }
}
