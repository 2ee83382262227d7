//! `cargo xtask fuzz [--seconds N]`: runs every cargo-fuzz target (folder
//! `fuzz/`) for N seconds each on the nightly toolchain, installing
//! cargo-fuzz first if it is missing. `cargo xtask test` does not fuzz: it
//! replays the checked-in corpus through the same checks on stable
//! (`tools/cqlab/tests/fuzz_corpus.rs`), which costs no nightly build.
//!
//! Each target starts from its checked-in corpus (`fuzz/corpus/TARGET`, read
//! only); inputs it discovers go to `target/fuzz-corpus/TARGET` and crashes
//! to `target/fuzz-artifacts/TARGET/`, so a run never edits the repository.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;

/// Every target in `fuzz/Cargo.toml`.
pub const TARGETS: [&str; 6] = ["decode", "elf", "daemon_proto", "device_spec", "trace_ring", "cli_args"];

/// `cargo +nightly ...` through rustup (not `$CARGO`, which is this
/// build's stable cargo).
fn nightly(root: &Path) -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly").current_dir(root).env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTC");
    c
}

fn works(cmd: &mut Command) -> bool {
    cmd.output().map(|o| o.status.success()).unwrap_or(false)
}

/// Whether nightly and cargo-fuzz are usable, installing cargo-fuzz when
/// missing. `Err` carries the reason they are not.
pub fn ready(root: &Path) -> Result<()> {
    if !works(nightly(root).arg("--version")) {
        bail!("the nightly toolchain is not installed (rustup toolchain install nightly)");
    }
    if works(nightly(root).args(["fuzz", "--version"])) {
        return Ok(());
    }
    eprintln!("xtask: cargo-fuzz not found; installing it (cargo install cargo-fuzz --locked)");
    let installed = Command::new("cargo").args(["install", "cargo-fuzz", "--locked"]).status();
    match installed {
        Ok(s) if s.success() && works(nightly(root).args(["fuzz", "--version"])) => Ok(()),
        Ok(s) => bail!("`cargo install cargo-fuzz --locked` ended with {s}"),
        Err(e) => bail!("could not run `cargo install cargo-fuzz`: {e}"),
    }
}

/// Seed of the `elf` target: a 92-byte RV32 executable header with one
/// PT_LOAD segment holding `li a0, 0; ecall`, entry 0x1000.
const MINIMAL_RV32_ELF: &[u8] = &[
    0x7f, 0x45, 0x4c, 0x46, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0xf3,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x34, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x34, 0x00, 0x20, 0x00, 0x01, 0x00, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x54,
    0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x13, 0x05, 0x00, 0x00, 0x73, 0x00, 0x00, 0x00,
];

/// Runs every target for `seconds`, built optimized; fails naming the
/// target and the crash artifact when one crashes.
pub fn run_all(root: &Path, seconds: u64) -> Result<()> {
    let fuzz = |sub: &str| {
        let mut cmd = nightly(root);
        cmd.args(["fuzz", sub]);
        cmd
    };
    crate::run(&mut fuzz("build")).context("building the fuzz targets")?;
    let mut failed = Vec::new();
    for t in TARGETS {
        let work = root.join("target/fuzz-corpus").join(t);
        let artifacts = root.join("target/fuzz-artifacts").join(t);
        std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
        std::fs::create_dir_all(&artifacts).with_context(|| format!("creating {}", artifacts.display()))?;
        if t == "elf" {
            // The ELF seed lives here as bytes, not as a binary file in git.
            std::fs::write(work.join("minimal-rv32"), MINIMAL_RV32_ELF).context("writing the ELF seed")?;
        }
        let seeds = root.join("fuzz/corpus").join(t);
        let mut cmd = fuzz("run");
        cmd.arg(t).arg(&work);
        if seeds.is_dir() {
            cmd.arg(&seeds);
        }
        let result = crate::run(
            cmd.arg("--")
                .arg(format!("-max_total_time={seconds}"))
                .arg(format!("-artifact_prefix={}/", artifacts.display()))
                .arg("-print_final_stats=1"),
        );
        if let Err(e) = result {
            eprintln!("xtask: fuzz target {t} crashed: {e:#}; the input is in {}", artifacts.display());
            failed.push(t);
        }
    }
    if !failed.is_empty() {
        bail!("fuzz targets with crashes: {}", failed.join(", "));
    }
    eprintln!("xtask: {} fuzz targets ran {seconds} s each without a crash", TARGETS.len());
    Ok(())
}

/// `cargo xtask fuzz [--seconds N]` (default 60).
pub fn command(root: &Path, args: &[String]) -> Result<()> {
    let mut seconds = 60;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().context("--seconds needs a number")?;
                seconds = v.parse().ok().filter(|&s| s > 0).with_context(|| {
                    format!("--seconds {v}: expected a positive whole number of seconds per target")
                })?;
            }
            other => bail!("unknown argument {other:?} (usage: cargo xtask fuzz [--seconds N])"),
        }
    }
    ready(root)?;
    run_all(root, seconds)
}
