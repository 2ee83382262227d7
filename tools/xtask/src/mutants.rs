//! `cargo xtask mutants`: builds each firmware mutant (one ordering wait
//! left out, `cqlab_kernels::mutant`) and races it with `cqlab race` until
//! a workload catches it, to measure the race finder on bugs nobody planted.
//!
//! A mutant that survives every workload is a finding either way: a wait
//! nothing in the protocol needs, or a window the finder cannot reach.

use crate::toolchain::{self, TARGET};
use crate::{cargo, firmware, run};
use anyhow::{bail, Context, Result};
use cqlab_abi::arch::Arch;
use cqlab_abi::soc::Board;
use cqlab_kernels::mutant::{Mutant, MUTANTS};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str =
    "usage: cargo xtask mutants [--seeds N] [--jobs J] [--only NAME,...] [--workloads W,...] [--tests] \
                     [--json FILE] [--list]";

/// Workloads tried in turn, cheapest first.
const WORKLOADS: &[&str] = &["two-queue", "random", "programs"];

struct Options {
    seeds: u64,
    jobs: u32,
    only: Vec<String>,
    workloads: Vec<String>,
    /// Also run the whole test suite on each mutant.
    tests: bool,
    json: Option<PathBuf>,
}

/// What racing one mutant found.
struct Outcome {
    mutant: &'static Mutant,
    /// The chip it was built for and raced on.
    arch: Arch,
    /// The workload that caught it, seeds run to the first failure, and
    /// that failure's signature and replay line.
    caught: Option<(String, u64, String, String)>,
    seeds_run: u64,
    /// With `--tests`: the tests that failed on it.
    failed_tests: Option<Vec<String>>,
}

pub fn command(root: &Path, args: &[String]) -> Result<()> {
    let mut o = Options {
        seeds: 30,
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
                let list: String = MUTANTS.iter().map(|m| format!("{:44} {}\n", m.name, m.drops)).collect();
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
            bail!("--only {name}: no such mutant (`cargo xtask mutants --list`)");
        }
    }
    for w in &o.workloads {
        if !WORKLOADS.contains(&w.as_str()) {
            bail!("--workloads {w}: one of {}", WORKLOADS.join(", "));
        }
    }
    let selected: Vec<&'static Mutant> =
        MUTANTS.iter().filter(|m| o.only.is_empty() || o.only.iter().any(|n| n == m.name)).collect();

    // The normal images (kernels, worker) and the race tool first.
    firmware::build(root)?;
    run(cargo().args(["build", "--release", "--quiet", "-p", "cqlab"]))?;
    let target = target_dir(root);
    let cqlab = target.join("release").join("cqlab");

    let firmware_dir = firmware::output_dir(root);
    let mut outcomes = Vec::new();
    for arch in Arch::ALL {
        for (i, m) in selected.iter().enumerate() {
            eprintln!("xtask: {arch} mutant {}/{}: {} (drops {})", i + 1, selected.len(), m.name, m.drops);
            let dir = build_mutant(root, m, arch)?;
            let mut outcome = race(&cqlab, &firmware_dir, &dir.join(arch.short_name()), m, arch, &o)?;
            if o.tests {
                outcome.failed_tests = Some(failing_tests(&dir)?);
            }
            outcomes.push(outcome);
        }
    }
    print_out(&table(&outcomes, &o));
    if let Some(path) = &o.json {
        std::fs::write(path, serde_json::to_string_pretty(&to_json(&outcomes, &o))? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let survived = |x: &&Outcome| x.caught.is_none() && x.failed_tests.as_ref().is_none_or(|t| t.is_empty());
    let survivors = outcomes.iter().filter(survived).count();
    if survivors > 0 {
        bail!("{survivors} of {} mutants survived (see the table)", outcomes.len());
    }
    Ok(())
}

/// Writes to stdout; a reader that went away (`| head -1`) is not an error.
fn print_out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

/// Builds the CQ and worker firmware of mutant `m` for chip `arch` (a
/// target dir of its own per chip, shared by the mutants: only
/// cqlab-kernels rebuilds between them) into `firmware/mutants/<name>/<chip>/`;
/// returns `firmware/mutants/<name>/`, a firmware root like `firmware/`.
fn build_mutant(root: &Path, m: &Mutant, arch: Arch) -> Result<PathBuf> {
    if !matches!(toolchain::ensure()?, toolchain::Toolchain::Rustup) {
        bail!("mutants need the rustup riscv32im target (the Debian fallback builds the normal firmware only)");
    }
    let mutant_target = target_dir(root).join(format!("firmware-mutants-{}", arch.short_name()));
    let mut cmd = cargo();
    cmd.env("CARGO_TARGET_DIR", &mutant_target).env("CQLAB_MUTANT", m.name);
    cmd.args(["build", "--quiet", "-p", "cqlab-kernels", "--features", &firmware::features(arch, "")]);
    cmd.args([
        "--bin",
        "prefetch",
        "--bin",
        "dispatch",
        "--bin",
        "worker",
        "--target",
        TARGET,
        "--profile",
        "firmware",
    ]);
    run(&mut cmd).with_context(|| format!("building {arch} mutant {}", m.name))?;
    let built = mutant_target.join(TARGET).join("firmware");
    // A whole firmware directory (the normal kernels and known-bug variants
    // beside the mutant's three images), so the tests can boot from it too.
    let normal = firmware::arch_dir(root, arch);
    let mutant_root = firmware::output_dir(root).join("mutants").join(m.name);
    let dir = mutant_root.join(arch.short_name());
    copy_dir(&normal.join("variants"), &dir.join("variants"))?;
    for entry in std::fs::read_dir(&normal)? {
        let path = entry?.path();
        if path.is_file() {
            std::fs::copy(&path, dir.join(path.file_name().expect("a file")))?;
        }
    }
    for name in ["prefetch", "dispatch", "worker"] {
        std::fs::copy(built.join(name), dir.join(name)).with_context(|| format!("copying {}/{name}", m.name))?;
    }
    Ok(mutant_root)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        let dest = to.join(path.file_name().expect("an entry"));
        if path.is_dir() {
            copy_dir(&path, &dest)?;
        } else {
            std::fs::copy(&path, &dest)?;
        }
    }
    Ok(())
}

/// Runs every test with the mutant as the firmware; the names of those
/// that failed.
fn failing_tests(dir: &Path) -> Result<Vec<String>> {
    let out = cargo()
        .env("CQLAB_FIRMWARE_DIR", dir)
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
        bail!("the tests did not run on {}:\n{log}", dir.display());
    }
    eprintln!("xtask:   tests: {} failed", failed.len());
    Ok(failed)
}

/// Races mutant `m` (its ELFs in `dir`) on a board of chip `arch` with
/// each workload in turn until one fails.
fn race(cqlab: &Path, firmware_dir: &Path, dir: &Path, m: &'static Mutant, arch: Arch, o: &Options) -> Result<Outcome> {
    let chip = match arch {
        Arch::Wormhole => Board::WormholeN150,
        Arch::Blackhole => Board::BlackholeP150a,
    };
    let mut seeds_run = 0;
    for w in &o.workloads {
        let out = Command::new(cqlab)
            .env("CQLAB_FIRMWARE_DIR", firmware_dir)
            .args(["race", "--chip", chip.name(), "--workload", w, "--firmware"])
            .arg(dir)
            .args(["--seeds", &o.seeds.to_string(), "--jobs", &o.jobs.to_string(), "--until-first", "--json"])
            .output()
            .with_context(|| format!("running {}", cqlab.display()))?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
            format!("cqlab race --workload {w} on {}: {}", m.name, String::from_utf8_lossy(&out.stderr).trim())
        })?;
        seeds_run += v["runs"].as_u64().unwrap_or(0);
        if v["failures"].as_u64().unwrap_or(0) > 0 {
            let first = v["runs_to_first_failure"].as_u64().unwrap_or(0);
            let sig = &v["signatures"][0];
            let signature = sig["signature"].as_str().unwrap_or("").to_owned();
            let replay = sig["replay"].as_str().unwrap_or("").to_owned();
            eprintln!("xtask:   caught by {w} at seed {first}: {signature}");
            let caught = Some((w.clone(), first, signature, replay));
            return Ok(Outcome { mutant: m, arch, caught, seeds_run, failed_tests: None });
        }
        eprintln!("xtask:   {w}: 0 of {} seeds failed", o.seeds);
    }
    Ok(Outcome { mutant: m, arch, caught: None, seeds_run, failed_tests: None })
}

/// The result table, as printed.
fn table(outcomes: &[Outcome], o: &Options) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "mutants: {} built, each raced with {} ({} seeds each, until the first failure)",
        outcomes.len(),
        o.workloads.join(", then "),
        o.seeds
    );
    let _ = writeln!(t, "{:44} {:10} {:10} {:>6} {:>6}  signature", "mutant", "chip", "caught by", "seeds", "tests");
    for x in outcomes {
        let tests = x.failed_tests.as_ref().map_or("-".into(), |t| t.len().to_string());
        let chip = x.arch.short_name();
        let _ = match &x.caught {
            Some((w, first, sig, _)) => {
                writeln!(t, "{:44} {:10} {:10} {:>6} {:>6}  {}", x.mutant.name, chip, w, first, tests, sig)
            }
            None => writeln!(
                t,
                "{:44} {:10} {:10} {:>6} {:>6}  not caught: {}",
                x.mutant.name, chip, "-", x.seeds_run, tests, x.mutant.drops
            ),
        };
    }
    let caught = outcomes.iter().filter(|x| x.caught.is_some()).count();
    let _ = writeln!(t, "caught by a race workload: {caught} of {}", outcomes.len());
    if o.tests {
        let by_tests = outcomes.iter().filter(|x| x.failed_tests.as_ref().is_some_and(|t| !t.is_empty())).count();
        let either =
            outcomes.iter().filter(|x| x.caught.is_some() || x.failed_tests.as_ref().is_some_and(|t| !t.is_empty()));
        let _ = writeln!(
            t,
            "caught by the tests: {by_tests} of {}; by either: {} of {}",
            outcomes.len(),
            either.count(),
            outcomes.len()
        );
    }
    t
}

fn to_json(outcomes: &[Outcome], o: &Options) -> serde_json::Value {
    let rows: Vec<_> = outcomes
        .iter()
        .map(|x| {
            let (workload, first, signature, replay) = match &x.caught {
                Some((w, f, s, r)) => (Some(w.clone()), Some(*f), Some(s.clone()), Some(r.clone())),
                None => (None, None, None, None),
            };
            serde_json::json!({
                "mutant": x.mutant.name,
                "chip": x.arch.short_name(),
                "drops": x.mutant.drops,
                "caught": x.caught.is_some(),
                "workload": workload,
                "seeds_to_first_failure": first,
                "seeds_run": x.seeds_run,
                "signature": signature,
                "replay": replay,
                "failed_tests": x.failed_tests,
            })
        })
        .collect();
    serde_json::json!({ "seeds_per_workload": o.seeds, "workloads": o.workloads, "mutants": rows })
}
