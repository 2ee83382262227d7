//! `cargo xtask mutants`: builds each firmware mutant (one ordering wait
//! left out, `cqlab_kernels::mutant`) and races it with `cqlab race` until
//! a workload catches it, to measure the race finder on bugs nobody planted.
//!
//! A mutant that survives every workload is a finding either way: a wait
//! nothing in the protocol needs, or a window the finder cannot reach.

use crate::mutant_race::{failed_tests, print_out, race_until_caught, row_json, write_json, Caught, Options};
use crate::toolchain::{self, TARGET};
use crate::{cargo, firmware, run};
use anyhow::{bail, Context, Result};
use cqlab_abi::arch::Arch;
use cqlab_abi::soc::Board;
use cqlab_kernels::mutant::{Mutant, MUTANTS};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str =
    "usage: cargo xtask mutants [--host] [--seeds N] [--jobs J] [--only NAME,...] [--workloads W,...] [--tests] \
                     [--jitter CYCLES] [--backpressure CYCLES] [--reads-wait-unsent] [--exact-time] [--blocking-loads] [--no-link-contention] [--icache] [--json FILE] [--list]";

/// What racing one mutant found.
struct Outcome {
    mutant: &'static Mutant,
    /// The chip it was built for and raced on.
    arch: Arch,
    caught: Option<Caught>,
    seeds_run: u64,
    /// With `--tests`: the tests that failed on it.
    failed_tests: Option<Vec<String>>,
}

pub fn command(root: &Path, args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--host") {
        let rest: Vec<String> = args.iter().filter(|a| *a != "--host").cloned().collect();
        return crate::host_mutants::command(root, &rest);
    }
    let names: Vec<&str> = MUTANTS.iter().map(|m| m.name).collect();
    let list = || MUTANTS.iter().map(|m| format!("{:44} {}\n", m.name, m.drops)).collect();
    let Some(o) = Options::parse(args, 30, &names, list, USAGE)? else { return Ok(()) };
    let selected: Vec<&'static Mutant> = MUTANTS.iter().filter(|m| o.selects(m.name)).collect();

    // The normal images (kernels, worker) and the race tool first.
    firmware::build(root)?;
    run(cargo().args(["build", "--release", "--quiet", "-p", "cqlab"]))?;
    let target = target_dir(root);
    let cqlab = target.join("release").join("cqlab");

    let firmware_dir = firmware::output_dir(root);
    if o.tests {
        // The libttsim tests load the libraries (built on the normal firmware).
        crate::libttsim::build(root)?;
    }
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
    write_json(&o, &to_json(&outcomes, &o))?;
    let survived = |x: &&Outcome| x.caught.is_none() && x.failed_tests.as_ref().is_none_or(|t| t.is_empty());
    let survivors = outcomes.iter().filter(survived).count();
    if survivors > 0 {
        bail!("{survivors} of {} mutants survived (see the table)", outcomes.len());
    }
    Ok(())
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

/// Builds the CQ and worker firmware of mutant `m` for chip `arch` (a
/// target dir of its own per chip, shared by the mutants: only
/// cqlab-kernels rebuilds between them) and returns
/// `firmware/mutants/<name>/<chip>/`: a whole firmware root like
/// `firmware/` (every chip's normal images, the known-bug variants and the
/// ISA tests), with the mutant's three images in place of chip `arch`'s,
/// so that `--tests` fails only where the mutant does.
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
    let normal = firmware::output_dir(root);
    let mutant_root = normal.join("mutants").join(m.name).join(arch.short_name());
    copy_dir(&normal, &mutant_root, "mutants")?;
    let dir = mutant_root.join(arch.short_name());
    for name in ["prefetch", "dispatch", "worker"] {
        std::fs::copy(built.join(name), dir.join(name)).with_context(|| format!("copying {}/{name}", m.name))?;
    }
    Ok(mutant_root)
}

/// Copies directory `from` into `to`, but its entries named `skip`.
fn copy_dir(from: &Path, to: &Path, skip: &str) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        let name = path.file_name().expect("an entry");
        if name == skip {
            continue;
        }
        let dest = to.join(name);
        if path.is_dir() {
            copy_dir(&path, &dest, skip)?;
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
    failed_tests(&out, &dir.display().to_string())
}

/// Races mutant `m` (its ELFs in `dir`) on a board of chip `arch` with
/// each workload in turn until one fails.
fn race(cqlab: &Path, firmware_dir: &Path, dir: &Path, m: &'static Mutant, arch: Arch, o: &Options) -> Result<Outcome> {
    let chip = match arch {
        Arch::Wormhole => Board::WormholeN150,
        Arch::Blackhole => Board::BlackholeP150a,
    };
    let (caught, seeds_run) = race_until_caught(m.name, o, |w| {
        let mut c = Command::new(cqlab);
        c.env("CQLAB_FIRMWARE_DIR", firmware_dir);
        c.args(["race", "--chip", chip.name(), "--workload", w, "--firmware"]).arg(dir);
        c
    })?;
    Ok(Outcome { mutant: m, arch, caught, seeds_run, failed_tests: None })
}

/// The result table, as printed.
fn table(outcomes: &[Outcome], o: &Options) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "mutants: {} built, each raced with {} {} ({} seeds each, until the first failure)",
        outcomes.len(),
        o.workloads.join(", then "),
        o.race_options(),
        o.seeds
    );
    let _ = writeln!(t, "{:44} {:10} {:10} {:>6} {:>6}  signature", "mutant", "chip", "caught by", "seeds", "tests");
    for x in outcomes {
        let tests = x.failed_tests.as_ref().map_or("-".into(), |t| t.len().to_string());
        let chip = x.arch.short_name();
        let _ = match &x.caught {
            Some(c) => writeln!(
                t,
                "{:44} {:10} {:10} {:>6} {:>6}  {}",
                x.mutant.name, chip, c.workload, c.seeds, tests, c.signature
            ),
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
            let fields = serde_json::json!({
                "mutant": x.mutant.name,
                "chip": x.arch.short_name(),
                "drops": x.mutant.drops,
                "seeds_run": x.seeds_run,
                "failed_tests": x.failed_tests,
            });
            row_json(fields, x.caught.as_ref())
        })
        .collect();
    serde_json::json!({ "seeds_per_workload": o.seeds, "workloads": o.workloads, "jitter": o.jitter, "backpressure": o.backpressure, "reads_pass_unsent": !o.reads_wait_unsent, "exact_time": o.exact_time, "blocking_loads": o.blocking_loads, "link_contention": !o.no_link_contention, "icache": o.icache, "mutants": rows })
}
