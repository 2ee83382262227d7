//! `cargo xtask libttsim`: builds cqlab's chip as the libttsim shared
//! libraries tt-umd loads, one directory per chip:
//! `target/libttsim/<arch>/` holds `libttsim_wh.so` (or `_bh`), the SoC
//! descriptor tt-umd reads beside it (`soc_descriptor.yaml`, a copy of
//! cqlab-abi's embedded one) and `fixtures.json` for the pytest suite.
//!
//! `cargo xtask libttsim test [pytest args]` also builds the firmware and
//! runs the pytest suite (`device-sim/libttsim/pytest`) in a virtual
//! environment (`target/venv`) with tt-umd 0.9.14 and pytest from PyPI:
//! the real client, unmodified. If the environment cannot be made, it fails
//! with the commands to run.

use crate::{cargo, firmware, run};
use anyhow::{bail, Context, Result};
use cqlab_abi::arch::Arch;
use cqlab_abi::soc::SocDescriptor;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tt-umd release the suite drives the libraries with.
const TT_UMD: &str = "tt-umd==0.9.14";
/// The wheel is built for CPython 3.11 only.
const PYTHON: &str = "python3.11";

pub fn command(root: &Path, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        None => build(root).map(drop),
        Some("test") => {
            firmware::build(root)?;
            build(root)?;
            pytest(root, &args[1..])
        }
        Some(other) => bail!("cargo xtask libttsim [test [pytest args]]: unknown `{other}`"),
    }
}

/// `target/libttsim`.
pub fn output_dir(root: &Path) -> PathBuf {
    firmware::target_dir(root).join("libttsim")
}

/// Builds both libraries and lays out their directories; returns them.
pub fn build(root: &Path) -> Result<Vec<PathBuf>> {
    build_in(root, &firmware::target_dir(root))
}

/// [`build`] in target directory `target` (into its `libttsim/`), where a
/// test run with that `CARGO_TARGET_DIR` looks for the libraries.
pub fn build_in(root: &Path, target: &Path) -> Result<Vec<PathBuf>> {
    run(cargo().env("CARGO_TARGET_DIR", target).args(["build", "-p", "libttsim-wh", "-p", "libttsim-bh"]))
        .context("building the libttsim libraries")?;
    let built = target.join("debug");
    let mut dirs = Vec::new();
    for arch in Arch::ALL {
        let dir = target.join("libttsim").join(arch.short_name());
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let name = cqlab_ttsim::library_file(arch);
        // Through a new file and a rename: a process running the old
        // library keeps its mapping intact.
        let fresh = dir.join(format!(".{name}.new"));
        std::fs::copy(built.join(name), &fresh).with_context(|| format!("copying {name}"))?;
        std::fs::rename(&fresh, dir.join(name))?;
        std::fs::write(dir.join("soc_descriptor.yaml"), SocDescriptor::yaml(arch))?;
        let fixtures = cqlab_ttsim::fixtures::json(arch, &firmware::arch_dir(root, arch))?;
        std::fs::write(dir.join("fixtures.json"), fixtures)?;
        eprintln!("xtask: {}", dir.join(name).display());
        dirs.push(dir);
    }
    Ok(dirs)
}

/// The commands that make the virtual environment, for a failure message.
fn setup_commands(venv: &Path) -> String {
    format!("{PYTHON} -m venv {v} && {v}/bin/python -m pip install '{TT_UMD}' pytest", v = venv.display())
}

/// Whether `venv` has tt-umd 0.9.14 and pytest.
fn venv_ready(python: &Path) -> bool {
    let check = format!(
        "import importlib.metadata as m, pytest, tt_umd; assert m.version('tt-umd') == '{}'",
        TT_UMD.trim_start_matches("tt-umd==")
    );
    Command::new(python).args(["-c", &check]).output().map(|o| o.status.success()).unwrap_or(false)
}

/// `target/venv` with tt-umd and pytest, made if needed; returns its python.
pub fn venv(root: &Path) -> Result<PathBuf> {
    let venv = firmware::target_dir(root).join("venv");
    let python = venv.join("bin").join("python");
    if venv_ready(&python) {
        return Ok(python);
    }
    let fix = || {
        format!("could not set up the Python environment for the libttsim tests; run:\n    {}", setup_commands(&venv))
    };
    if !python.exists() {
        run(Command::new(PYTHON).args(["-m", "venv"]).arg(&venv)).with_context(fix)?;
    }
    run(Command::new(&python).args(["-m", "pip", "install", "--quiet", TT_UMD, "pytest"])).with_context(fix)?;
    if !venv_ready(&python) {
        bail!("{}: {TT_UMD} and pytest installed but do not import", fix());
    }
    Ok(python)
}

/// Runs the pytest suite against `target/libttsim`.
pub fn pytest(root: &Path, extra: &[String]) -> Result<()> {
    let python = venv(root)?;
    let suite = root.join("device-sim/libttsim/pytest");
    run(Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&suite)
        .args(extra)
        .env("CQLAB_LIBTTSIM_DIR", output_dir(root))
        .current_dir(root))
    .context("the libttsim pytest suite failed")
}
