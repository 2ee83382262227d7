//! `cqlab campaign sbatch|merge`.

use super::complete::Coverage;
use super::{read_records, sbatch, Report, Shard};
use crate::exit::Exit;
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
    /// one campaign (one tool, each run once; a run recorded again with
    /// the same seed and command line, by a task rerun, counts once). Exits
    /// 6 when runs of the campaign have no record, naming the shards and
    /// runs.
    Merge {
        /// A directory of JSONL record files (every shard's), or one file.
        dir: PathBuf,
        /// Print the merged report as JSON.
        #[arg(long)]
        json: bool,
        /// The records are shard I/N's alone: judge only its runs.
        #[arg(long)]
        shard: Option<String>,
        /// Print no report: exit 0 when every run has its record, 6 when
        /// some have none (what a Slurm task checks before it succeeds).
        #[arg(long, conflicts_with = "json")]
        check: bool,
    },
}

pub fn validate(cmd: &Command) -> Result<()> {
    match cmd {
        Command::Sbatch(a) => sbatch::validate(a),
        Command::Merge { dir, shard, .. } => {
            if let Some(s) = shard {
                Shard::parse(s)?;
            }
            std::fs::metadata(dir).map_err(|e| UsageError(format!("{}: {e}", dir.display())))?;
            Ok(())
        }
    }
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    validate(&cmd)?;
    match cmd {
        Command::Sbatch(args) => sbatch::run(args),
        Command::Merge { dir, json, shard, check } => {
            let all = read_records(&dir)?;
            let only = shard.as_deref().map(Shard::parse).transpose()?;
            if all.is_empty() && check {
                // A shard that wrote no record has all its runs missing.
                crate::out::diagln!("{}: no campaign records (*.jsonl): the shard ran none of its runs", dir.display());
                return Ok(Exit::Incomplete.into());
            }
            ensure(!all.is_empty(), || format!("{}: no campaign records (*.jsonl)", dir.display()))?;
            let coverage = Coverage::of(&all, only)?;
            coverage.warn();
            if check {
                coverage.say(all.len());
                return Ok(if coverage.incomplete() { Exit::Incomplete } else { Exit::Success }.into());
            }
            let incomplete = |code: ExitCode| if coverage.incomplete() { Exit::Incomplete.into() } else { code };
            if all[0].tool == "stress" {
                // The report `stress restart` gives, drift table included.
                let summary = crate::stress::Summary::of(&all);
                if json {
                    let mut v = summary.to_json();
                    coverage.to_json(&mut v);
                    outln!("{v}");
                } else {
                    let header = format!("campaign {} ({})", dir.display(), summary.counts());
                    summary.print(&header, "--kill-rate");
                    coverage.say(all.len());
                }
                return Ok(incomplete(summary.report.exit_code()));
            }
            // Race records: race's report.
            let present = all.len();
            let (killed, records): (Vec<_>, Vec<_>) = all.into_iter().partition(|r| r.killed_on_purpose());
            let report = Report::from_records(&records);
            if json {
                let mut v = serde_json::to_value(&report)?;
                v["killed"] = killed.len().into();
                coverage.to_json(&mut v);
                outln!("{v}");
            } else {
                report.print(&format!("campaign {}", dir.display()));
                coverage.say(present);
            }
            Ok(incomplete(report.exit_code()))
        }
    }
}
