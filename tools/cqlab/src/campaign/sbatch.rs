//! `cqlab campaign sbatch`: a Slurm array job, one array task per shard.
//! Each task runs `cqlab <campaign args> --shard $SLURM_ARRAY_TASK_ID/N
//! --jsonl DIR/shard-$SLURM_ARRAY_TASK_ID.jsonl`; `cqlab campaign merge DIR`
//! then gives the whole campaign's report. (sbatch options: Slurm's sbatch(1).)

use crate::usage::{ensure, UsageError};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Shards (array tasks).
    #[arg(long)]
    pub shards: u32,
    /// Where the script, the shard JSONL and the Slurm logs go.
    #[arg(long)]
    pub dir: PathBuf,
    /// Slurm partition (default: the cluster's default).
    #[arg(long)]
    pub partition: Option<String>,
    /// Per-task time limit, in Slurm's format (e.g. 10:00).
    #[arg(long, default_value = "30:00")]
    pub time: String,
    /// Submit with `sbatch --parsable` after writing the script.
    #[arg(long)]
    pub submit: bool,
    /// With --submit: wait for every task to end (`sbatch --wait`).
    #[arg(long, requires = "submit")]
    pub wait: bool,
    /// The campaign: `race ...` or `stress ...` arguments (after `--`).
    #[arg(last = true, required = true)]
    pub campaign: Vec<String>,
}

fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
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
    // A campaign that ran (passed, or failed with a failure class) is data
    // for the merge, not a failed task (`crate::exit::RAN`). Usage errors
    // and crashes still fail the task.
    s += &format!(
        "rc=0\n{} {} --shard \"$SLURM_ARRAY_TASK_ID/{}\" --jsonl {}/shard-\"$SLURM_ARRAY_TASK_ID\".jsonl || rc=$?\n",
        quote(exe),
        campaign.join(" "),
        args.shards,
        quote(&dir)
    );
    let ran: Vec<String> = crate::exit::RAN.iter().map(u8::to_string).collect();
    s += &format!("case \"$rc\" in {}) exit 0 ;; esac\nexit \"$rc\"\n", ran.join("|"));
    s
}

pub fn run(args: Args) -> Result<ExitCode> {
    ensure((1..=10_000).contains(&args.shards), || format!("--shards {} (1..=10000)", args.shards))?;
    let tool = args.campaign.first().map(String::as_str);
    ensure(matches!(tool, Some("race" | "stress")), || {
        format!("the campaign after `--` is `race ...` or `stress ...`, not {:?}", args.campaign.first())
    })?;
    ensure(!args.campaign.iter().any(|a| a == "--shard" || a == "--jsonl" || a == "--jobs"), || {
        "the campaign must not set --shard, --jsonl or --jobs: each array task is one shard".into()
    })?;
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    let stale = std::fs::read_dir(&args.dir)?
        .filter_map(|e| e.ok())
        .any(|e| e.path().extension().is_some_and(|x| x == "jsonl"));
    if stale {
        return Err(
            UsageError(format!("{} already holds shard records: use an empty directory", args.dir.display())).into()
        );
    }
    let dir = std::fs::canonicalize(&args.dir)?;
    let args = Args { dir, ..args };
    let exe = std::env::current_exe().context("locating the cqlab binary")?;
    let fw = std::env::var("CQLAB_FIRMWARE_DIR").ok();
    let text = script(&args, &exe.to_string_lossy(), fw.as_deref());
    let path = args.dir.join("campaign.sbatch");
    std::fs::write(&path, &text)?;
    println!("wrote {}", path.display());
    if args.submit {
        let mut cmd = std::process::Command::new("sbatch");
        cmd.arg("--parsable");
        if args.wait {
            cmd.arg("--wait");
        }
        let out = cmd.arg(&path).output().context("running sbatch (is Slurm installed and on PATH?)")?;
        anyhow::ensure!(
            out.status.success(),
            "sbatch {} failed ({}): {}",
            path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        println!("submitted job {}", String::from_utf8_lossy(&out.stdout).trim());
        println!("merge with: cqlab campaign merge {}", args.dir.display());
    }
    Ok(ExitCode::SUCCESS)
}
