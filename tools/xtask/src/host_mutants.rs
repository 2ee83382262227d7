//! `cargo xtask mutants --host`: builds the `cqlab` tool once per host
//! mutant (one host step of the CQ protocol reordered or loosened in the
//! driver, `cqlab_driver::queue::mutant`, chosen by `$CQLAB_HOST_MUTANT`)
//! and races each with `cqlab race` at its default options (which draw
//! host jitter per seed) until a workload catches it: the race finder
//! measured on host-side ordering bugs, as `cargo xtask mutants` measures
//! it on the firmware's.

use crate::mutant_race::{failed_tests, print_out, race_until_caught, row_json, write_json, Caught, Options};
use crate::{cargo, firmware, run};
use anyhow::{bail, Context, Result};
use cqlab_driver::queue::mutant::{Mutant, MUTANTS};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const USAGE: &str = "usage: cargo xtask mutants --host [--seeds N] [--jobs J] [--only NAME,...] [--workloads W,...] \
                     [--tests] [--jitter CYCLES] [--backpressure CYCLES] [--reads-wait-unsent] [--exact-time] [--blocking-loads] [--no-link-contention] [--icache] [--json FILE] [--list]";

/// What racing one host mutant found.
struct Outcome {
    mutant: &'static Mutant,
    caught: Option<Caught>,
    seeds_run: u64,
    /// With `--tests`: the tests that failed on it.
    failed_tests: Option<Vec<String>>,
}

pub fn command(root: &Path, args: &[String]) -> Result<()> {
    let names: Vec<&str> = MUTANTS.iter().map(|m| m.name).collect();
    let list = || MUTANTS.iter().map(|m| format!("{:40} {}\n", m.name, m.changes)).collect();
    let Some(o) = Options::parse(args, 200, &names, list, USAGE)? else { return Ok(()) };
    let selected: Vec<&'static Mutant> = MUTANTS.iter().filter(|m| o.selects(m.name)).collect();

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
    write_json(&o, &to_json(&outcomes, &o))?;
    let survived = |x: &&Outcome| x.caught.is_none() && x.failed_tests.as_ref().is_none_or(|t| t.is_empty());
    let survivors = outcomes.iter().filter(survived).count();
    if survivors > 0 {
        bail!("{survivors} of {} host mutants survived (see the table)", outcomes.len());
    }
    Ok(())
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

/// A nextest filter: every test but those that fail on a build that is
/// one mutant by design. The symptom tests of the other mutants
/// (`cqlab::host_mutants`, `cqlab-tests::slow_mutant`: each chooses its
/// mutant per device, which the build's mutant overrides) and the test
/// that tests build the correct driver. Counted, they made every host
/// mutant "caught by the tests". Mutant `m`'s own symptom test stays (its
/// name starts with `m`'s, `host-` and dashes dropped): on `m`'s build
/// its "correct driver" half shows the symptom.
fn tests_for(m: &Mutant) -> String {
    let own = m.name.trim_start_matches("host-").replace('-', "_");
    format!(
        "not (((binary_id(cqlab::host_mutants) | binary_id(cqlab-tests::slow_mutant)) & not test(/^{own}/)) \
         | test(=queue::mutant::tests::every_mutant_is_named_once_and_changes_one_place))"
    )
}

/// Runs the tests of [`tests_for`] `m` with the driver built as mutant `m`
/// (a test build of its own); the names of those that failed.
fn failing_tests(root: &Path, m: &Mutant, firmware_dir: &Path) -> Result<Vec<String>> {
    // The libttsim tests load the libraries from their target directory.
    let target = mutant_target(root).join("tests");
    crate::libttsim::build_in(root, &target)?;
    let out = cargo()
        .env("CARGO_TARGET_DIR", &target)
        .env("CQLAB_HOST_MUTANT", m.name)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir)
        .args(["nextest", "run", "--workspace", "--no-fail-fast", "--color", "never", "-E", &tests_for(m)])
        .output()
        .context("running cargo nextest (is cargo-nextest installed?)")?;
    failed_tests(&out, &format!("host mutant {}", m.name))
}

/// Races the `cqlab` of mutant `m` with each workload in turn, at its
/// default options, until one fails.
fn race(cqlab: &Path, firmware_dir: &Path, m: &'static Mutant, o: &Options) -> Result<Outcome> {
    let (caught, seeds_run) = race_until_caught(m.name, o, |w| {
        let mut c = Command::new(cqlab);
        c.env("CQLAB_FIRMWARE_DIR", firmware_dir);
        c.args(["race", "--workload", w]);
        c
    })?;
    Ok(Outcome { mutant: m, caught, seeds_run, failed_tests: None })
}

/// The result table, as printed.
fn table(outcomes: &[Outcome], o: &Options) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "host mutants: {} built, each raced with {} {} ({} seeds each, until the first failure)",
        outcomes.len(),
        o.workloads.join(", then "),
        o.race_options(),
        o.seeds
    );
    let _ = writeln!(t, "{:40} {:10} {:>6} {:>6} {:>6}  signature", "mutant", "caught by", "seeds", "seed", "tests");
    for x in outcomes {
        let tests = x.failed_tests.as_ref().map_or("-".into(), |t| t.len().to_string());
        let _ = match &x.caught {
            Some(c) => writeln!(
                t,
                "{:40} {:10} {:>6} {:>6} {:>6}  {}",
                x.mutant.name, c.workload, c.seeds, c.seed, tests, c.signature
            ),
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
            let fields = serde_json::json!({
                "mutant": x.mutant.name,
                "changes": x.mutant.changes,
                "seeds_run": x.seeds_run,
                "failed_tests": x.failed_tests,
            });
            row_json(fields, x.caught.as_ref())
        })
        .collect();
    serde_json::json!({
        "seeds_per_workload": o.seeds,
        "workloads": o.workloads,
        "jitter": o.jitter,
        "backpressure": o.backpressure,
        "reads_pass_unsent": !o.reads_wait_unsent,
        "exact_time": o.exact_time, "blocking_loads": o.blocking_loads, "link_contention": !o.no_link_contention, "icache": o.icache,
        "host_mutants": rows,
    })
}
