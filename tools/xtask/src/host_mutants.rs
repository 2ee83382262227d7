//! `cargo xtask mutants --host`: builds the `cqlab` tool once per host
//! mutant (one host step of the CQ protocol reordered or loosened in the
//! driver, `cqlab_driver::queue::mutant`, chosen by `$CQLAB_HOST_MUTANT`)
//! and races each with `cqlab race` at its default options, host jitter
//! 2000 on every seed, until a workload catches it: the race finder measured on host-side
//! ordering bugs, as `cargo xtask mutants` measures it on the firmware's.

use crate::{cargo, firmware, run};
use anyhow::{bail, Context, Result};
use cqlab_driver::queue::mutant::{Mutant, MUTANTS};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str = "usage: cargo xtask mutants --host [--seeds N] [--jobs J] [--only NAME,...] [--workloads W,...] \
                     [--tests] [--json FILE] [--list]";

/// `--host-jitter` of every seed raced.
const HOST_JITTER: &str = "2000";

/// Workloads tried in turn, cheapest first.
const WORKLOADS: &[&str] = &["two-queue", "random", "programs"];

struct Options {
    seeds: u64,
    jobs: u32,
    only: Vec<String>,
    workloads: Vec<String>,
    tests: bool,
    json: Option<PathBuf>,
}

/// What racing one host mutant found.
struct Outcome {
    mutant: &'static Mutant,
    /// The workload that caught it, seeds run to its first failure, the
    /// first failing seed, that failure's signature and replay line.
    caught: Option<(String, u64, u64, String, String)>,
    seeds_run: u64,
    /// With `--tests`: the tests that failed on it.
    failed_tests: Option<Vec<String>>,
}

pub fn command(root: &Path, args: &[String]) -> Result<()> {
    let mut o = Options {
        seeds: 200,
        jobs: 2,
        only: Vec::new(),
        workloads: WORKLOADS.iter().map(|w| w.to_string()).collect(),
        tests: false,
        json: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value ({USAGE})"));
        match a.as_str() {
            "--list" => {
                let list: String = MUTANTS.iter().map(|m| format!("{:40} {}\n", m.name, m.changes)).collect();
                print_out(&list);
                return Ok(());
            }
            "--seeds" => o.seeds = value()?.parse().ok().filter(|&n| n > 0).context("--seeds: a positive number")?,
            "--jobs" => o.jobs = value()?.parse().ok().filter(|j| (1..=256).contains(j)).context("--jobs: 1..=256")?,
            "--only" => o.only = value()?.split(',').map(str::to_owned).collect(),
            "--workloads" => o.workloads = value()?.split(',').map(str::to_owned).collect(),
            "--json" => o.json = Some(PathBuf::from(value()?)),
            "--tests" => o.tests = true,
            other => bail!("unknown argument {other:?} ({USAGE})"),
        }
    }
    for name in &o.only {
        if !MUTANTS.iter().any(|m| m.name == name) {
            bail!("--only {name}: no such host mutant (`cargo xtask mutants --host --list`)");
        }
    }
    for w in &o.workloads {
        if !WORKLOADS.contains(&w.as_str()) {
            bail!("--workloads {w}: one of {}", WORKLOADS.join(", "));
        }
    }
    let selected: Vec<&'static Mutant> =
        MUTANTS.iter().filter(|m| o.only.is_empty() || o.only.iter().any(|n| n == m.name)).collect();

    // The normal firmware: the mutants are the host's.
    firmware::build(root)?;
    let firmware_dir = firmware::output_dir(root);
    let mut outcomes = Vec::new();
    for (i, m) in selected.iter().enumerate() {
        eprintln!("xtask: host mutant {}/{}: {} ({})", i + 1, selected.len(), m.name, m.changes);
        let cqlab = build_mutant(root, m)?;
        let mut outcome = race(&cqlab, &firmware_dir, m, &o)?;
        if o.tests {
            outcome.failed_tests = Some(failing_tests(root, m, &firmware_dir)?);
        }
        outcomes.push(outcome);
    }
    print_out(&table(&outcomes, &o));
    if let Some(path) = &o.json {
        std::fs::write(path, serde_json::to_string_pretty(&to_json(&outcomes, &o))? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let survived = |x: &&Outcome| x.caught.is_none() && x.failed_tests.as_ref().is_none_or(|t| t.is_empty());
    let survivors = outcomes.iter().filter(survived).count();
    if survivors > 0 {
        bail!("{survivors} of {} host mutants survived (see the table)", outcomes.len());
    }
    Ok(())
}

/// Writes to stdout; a reader that went away (`| head -1`) is not an error.
fn print_out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// Where the mutants build: a target dir of their own, shared by them (only
/// the driver and what uses it rebuild between two mutants).
fn mutant_target(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target")).join("host-mutants")
}

/// Builds `cqlab` with host mutant `m`; returns its copy,
/// `target/host-mutants/bin/cqlab-NAME`.
fn build_mutant(root: &Path, m: &Mutant) -> Result<PathBuf> {
    let target = mutant_target(root);
    let mut cmd = cargo();
    cmd.env("CARGO_TARGET_DIR", &target).env("CQLAB_HOST_MUTANT", m.name);
    cmd.args(["build", "--release", "--quiet", "-p", "cqlab"]);
    run(&mut cmd).with_context(|| format!("building host mutant {}", m.name))?;
    let bin = target.join("bin");
    std::fs::create_dir_all(&bin)?;
    let copy = bin.join(format!("cqlab-{}", m.name));
    std::fs::copy(target.join("release").join("cqlab"), &copy)
        .with_context(|| format!("copying the cqlab of {}", m.name))?;
    Ok(copy)
}

/// Runs every test with the driver built as mutant `m` (a test build of
/// its own); the names of those that failed.
fn failing_tests(root: &Path, m: &Mutant, firmware_dir: &Path) -> Result<Vec<String>> {
    let out = cargo()
        .env("CARGO_TARGET_DIR", mutant_target(root).join("tests"))
        .env("CQLAB_HOST_MUTANT", m.name)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir)
        .args(["nextest", "run", "--workspace", "--no-fail-fast", "--color", "never"])
        .output()
        .context("running cargo nextest (is cargo-nextest installed?)")?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let mut failed: Vec<String> = log
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("FAIL ["))
        .filter_map(|rest| rest.split_once(") ").map(|(_, name)| name.trim().to_owned()))
        .collect();
    failed.sort();
    failed.dedup();
    if failed.is_empty() && !out.status.success() {
        bail!("the tests did not run with host mutant {}:\n{log}", m.name);
    }
    eprintln!("xtask:   tests: {} failed", failed.len());
    Ok(failed)
}

/// Races the `cqlab` of mutant `m` with each workload in turn, at its
/// default options, until one fails.
fn race(cqlab: &Path, firmware_dir: &Path, m: &'static Mutant, o: &Options) -> Result<Outcome> {
    let mut seeds_run = 0;
    for w in &o.workloads {
        let out = Command::new(cqlab)
            .env("CQLAB_FIRMWARE_DIR", firmware_dir)
            // Every seed with host jitter (race draws it for half of them
            // by default): the mutants are the host's.
            .args(["race", "--workload", w, "--host-jitter", HOST_JITTER])
            .args(["--seeds", &o.seeds.to_string(), "--jobs", &o.jobs.to_string(), "--until-first", "--json"])
            .output()
            .with_context(|| format!("running {}", cqlab.display()))?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
            format!("cqlab race --workload {w} with {}: {}", m.name, String::from_utf8_lossy(&out.stderr).trim())
        })?;
        seeds_run += v["runs"].as_u64().unwrap_or(0);
        if v["failures"].as_u64().unwrap_or(0) > 0 {
            let first = v["runs_to_first_failure"].as_u64().unwrap_or(0);
            let seed = v["first_failing_seed"].as_u64().unwrap_or(0);
            let sig = &v["signatures"][0];
            let signature = sig["signature"].as_str().unwrap_or("").to_owned();
            let replay = sig["replay"].as_str().unwrap_or("").to_owned();
            eprintln!("xtask:   caught by {w} after {first} seeds, first at seed {seed}: {signature}");
            let caught = Some((w.clone(), first, seed, signature, replay));
            return Ok(Outcome { mutant: m, caught, seeds_run, failed_tests: None });
        }
        eprintln!("xtask:   {w}: 0 of {} seeds failed", o.seeds);
    }
    Ok(Outcome { mutant: m, caught: None, seeds_run, failed_tests: None })
}

/// The result table, as printed.
fn table(outcomes: &[Outcome], o: &Options) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "host mutants: {} built, each raced with {} at default options and --host-jitter {HOST_JITTER} ({} seeds each, \
         until the first failure)",
        outcomes.len(),
        o.workloads.join(", then "),
        o.seeds
    );
    let _ = writeln!(t, "{:40} {:10} {:>6} {:>6} {:>6}  signature", "mutant", "caught by", "seeds", "seed", "tests");
    for x in outcomes {
        let tests = x.failed_tests.as_ref().map_or("-".into(), |t| t.len().to_string());
        let _ = match &x.caught {
            Some((w, first, seed, sig, _)) => {
                writeln!(t, "{:40} {:10} {:>6} {:>6} {:>6}  {}", x.mutant.name, w, first, seed, tests, sig)
            }
            None => writeln!(
                t,
                "{:40} {:10} {:>6} {:>6} {:>6}  not caught: {}",
                x.mutant.name, "-", x.seeds_run, "-", tests, x.mutant.changes
            ),
        };
    }
    let caught = outcomes.iter().filter(|x| x.caught.is_some()).count();
    let _ = writeln!(t, "caught by a race workload: {caught} of {}", outcomes.len());
    t
}

fn to_json(outcomes: &[Outcome], o: &Options) -> serde_json::Value {
    let rows: Vec<_> = outcomes
        .iter()
        .map(|x| {
            let (workload, first, seed, signature, replay) = match &x.caught {
                Some((w, f, seed, s, r)) => (Some(w.clone()), Some(*f), Some(*seed), Some(s.clone()), Some(r.clone())),
                None => (None, None, None, None, None),
            };
            serde_json::json!({
                "mutant": x.mutant.name,
                "changes": x.mutant.changes,
                "caught": x.caught.is_some(),
                "workload": workload,
                "seeds_to_first_failure": first,
                "first_failing_seed": seed,
                "seeds_run": x.seeds_run,
                "signature": signature,
                "replay": replay,
                "failed_tests": x.failed_tests,
            })
        })
        .collect();
    serde_json::json!({ "seeds_per_workload": o.seeds, "workloads": o.workloads, "host_mutants": rows })
}
