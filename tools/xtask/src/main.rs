//! `cargo xtask`: builds the firmware and runs the project's checks.
//!
//! - `cargo xtask firmware` builds every firmware ELF for riscv32im and prints sizes.
//! - `cargo xtask test` runs fmt, clippy, the firmware build, every test and
//!   a short smoke run of every fuzz target.
//! - `cargo xtask fuzz [--seconds N]` runs every fuzz target N seconds.
//! - `cargo xtask demo` runs the main job on the embedded simulator.

mod demo;
mod firmware;
mod fuzz;
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
        Some("fuzz") => fuzz::command(&workspace_root(), &args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <firmware|test|demo|fuzz [--seconds N]>");
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
    cmd
}

/// fmt check, clippy (host, the driver's hardware path alone, firmware), firmware build, every
/// test.
fn test(extra: &[String]) -> Result<()> {
    let start = std::time::Instant::now();
    let root = workspace_root();
    run(cargo().args(["fmt", "--all", "--", "--check"])).context("formatting differs: run `cargo fmt --all`")?;
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
    .context("cqlab-driver with only the ttkmd feature")?;
    let elfs = firmware::build(&root)?;
    firmware::print_sizes(&elfs);
    firmware::clippy(&root)?;
    let nextest = cargo().args(["nextest", "--version"]).output().map(|o| o.status.success()).unwrap_or(false);
    if nextest {
        // Doc tests first: nextest's summary should be the last word.
        run(cargo().args(["test", "--workspace", "--doc", "--quiet"]))?;
        run(cargo().args(["nextest", "run", "--workspace", "--no-fail-fast"]).args(extra))?;
    } else {
        eprintln!("xtask: cargo-nextest not installed; using cargo test");
        run(cargo().args(["test", "--workspace", "--no-fail-fast"]).args(extra))?;
    }
    fuzz::smoke(&root)?;
    eprintln!("xtask: all checks passed in {:.0?}", start.elapsed());
    Ok(())
}
