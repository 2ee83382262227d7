//! `cargo xtask`: builds the firmware and runs the project's checks.
//!
//! - `cargo xtask firmware` builds every firmware ELF for riscv32im and prints sizes.
//! - `cargo xtask test` runs fmt, clippy, the firmware build, every test
//!   (the fuzz targets' checks over their corpus among them) and the
//!   libttsim libraries' pytest suite through tt-umd.
//! - `cargo xtask fuzz [--seconds N]` runs every fuzz target N seconds.
//! - `cargo xtask demo` runs the main job on the embedded simulator.
//! - `cargo xtask cycles` fails on an import cycle between the modules of any crate.
//! - `cargo xtask links` fails on a README or `docs/` link that does not resolve.
//! - `cargo xtask libttsim [test [pytest args]]` builds the libttsim libraries
//!   into `target/libttsim/<arch>/` (and runs their pytest suite through tt-umd).
//! - `cargo xtask mutants [--seeds N] [--only NAME,...]` builds each firmware
//!   mutant (one ordering wait left out) and races it until caught; with
//!   `--host`, each host mutant (one host step reordered or loosened).

mod cycles;
mod demo;
mod firmware;
mod fuzz;
mod host_mutants;
mod libttsim;
mod links;
mod mutant_race;
mod mutants;
mod toolchain;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("firmware") => firmware::build(&workspace_root()).map(|elfs| firmware::print_sizes(&elfs)),
        Some("test") => test(&args[1..]),
        Some("demo") => demo::run_demo(&workspace_root()),
        Some("cycles") => cycles::check(&workspace_root()),
        Some("links") => links::check(&workspace_root()),
        Some("fuzz") => fuzz::command(&workspace_root(), &args[1..]),
        Some("mutants") => mutants::command(&workspace_root(), &args[1..]),
        Some("libttsim") => libttsim::command(&workspace_root(), &args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <firmware|test|demo|cycles|links|fuzz [--seconds N]|mutants [--list] [--seeds N]|libttsim [test]>"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

/// The workspace root (parent of `tools/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root exists")
}

/// Runs `cmd`, echoing it; fails with the command line if it does not succeed.
pub fn run(cmd: &mut Command) -> Result<()> {
    let line = format!("{cmd:?}");
    eprintln!("xtask: $ {}", line.replace('"', ""));
    let status = cmd.status().with_context(|| format!("could not start {line}"))?;
    if !status.success() {
        bail!("{line} failed with {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(workspace_root());
    if std::env::var_os("CI").is_some() {
        // A CI build starts clean and never rebuilds: incremental state would
        // only add gigabytes to the target directory.
        cmd.env("CARGO_INCREMENTAL", "0");
    }
    cmd
}

/// How long each stage of `cargo xtask test` took (its build included), so
/// a slow run says where the time went.
#[derive(Default)]
struct Stages(Vec<(&'static str, std::time::Duration)>);

impl Stages {
    fn time(&mut self, name: &'static str, stage: impl FnOnce() -> Result<()>) -> Result<()> {
        let start = std::time::Instant::now();
        let result = stage();
        self.0.push((name, start.elapsed()));
        if result.is_err() {
            eprintln!("xtask: stages: {}", self.summary());
        }
        result
    }

    fn summary(&self) -> String {
        self.0.iter().map(|(name, took)| format!("{name} {:.0} s", took.as_secs_f64())).collect::<Vec<_>>().join(", ")
    }
}

/// Free bytes a clean `cargo xtask test` needs in the target directory's
/// file system, with room to spare (measured on a fresh clone with `CI` set:
/// 992 MiB in `target/`; before the fuzz smoke run left the suite, another
/// 511 MiB in `fuzz/target/`).
const TEST_DISK_BYTES: u64 = 3 << 30;

/// Says so up front when the disk is nearly full: the linker otherwise dies
/// with SIGBUS part-way through, which reads like a toolchain bug.
fn check_free_disk(root: &std::path::Path) -> Result<()> {
    let target = root.join("target");
    std::fs::create_dir_all(&target).with_context(|| format!("creating {}", target.display()))?;
    let stat = nix::sys::statvfs::statvfs(&target).with_context(|| format!("statvfs {}", target.display()))?;
    let free = stat.blocks_available() as u64 * stat.fragment_size() as u64;
    if free < TEST_DISK_BYTES {
        eprintln!(
            "xtask: WARNING: only {} MiB free under {}; a clean build and test run needs about {} MiB. \
             Builds may fail (a linker killed by SIGBUS means the disk filled up).",
            free >> 20,
            target.display(),
            TEST_DISK_BYTES >> 20
        );
    }
    Ok(())
}

/// fmt check, clippy (host, the driver's hardware path alone, firmware), firmware build, every
/// test.
fn test(extra: &[String]) -> Result<()> {
    let start = std::time::Instant::now();
    let root = workspace_root();
    check_free_disk(&root)?;
    let mut stages = Stages::default();
    stages.time("checks", || {
        cycles::check(&root)?;
        links::check(&root)?;
        run(cargo().args(["fmt", "--all", "--", "--check"])).context("formatting differs: run `cargo fmt --all`")
    })?;
    stages.time("clippy", || {
        run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
        // The hardware path alone, without the simulator (cqlab-driver's `ttkmd` feature).
        run(cargo().args([
            "clippy",
            "-p",
            "cqlab-driver",
            "--no-default-features",
            "--features",
            "ttkmd",
            "--",
            "-D",
            "warnings",
        ]))
        .context("cqlab-driver with only the ttkmd feature")
    })?;
    stages.time("firmware", || {
        let elfs = firmware::build(&root)?;
        firmware::print_sizes(&elfs);
        firmware::clippy(&root)
    })?;
    // tt-umd from PyPI drives both libttsim libraries (needs the firmware).
    stages.time("libttsim", || libttsim::build(&root).map(drop))?;
    stages.time("pytest", || libttsim::pytest(&root, &[]))?;
    let nextest = cargo().args(["nextest", "--version"]).output().map(|o| o.status.success()).unwrap_or(false);
    if nextest {
        // Doc tests first: nextest's summary should be the last word.
        stages.time("doc tests", || run(cargo().args(["test", "--workspace", "--doc", "--quiet"])))?;
        stages
            .time("nextest", || run(cargo().args(["nextest", "run", "--workspace", "--no-fail-fast"]).args(extra)))?;
    } else {
        eprintln!("xtask: cargo-nextest not installed; using cargo test");
        stages.time("tests", || run(cargo().args(["test", "--workspace", "--no-fail-fast"]).args(extra)))?;
    }
    eprintln!("xtask: stages: {}", stages.summary());
    eprintln!("xtask: all checks passed in {:.0?}", start.elapsed());
    Ok(())
}
