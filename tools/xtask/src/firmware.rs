//! `cargo xtask firmware`: builds every firmware ELF for riscv32im in the
//! size-optimised `firmware` profile and reports their sizes.

use crate::toolchain::{self, Toolchain, TARGET};
use crate::{cargo, run};
use anyhow::{Context, Result};
use object::{Object, ObjectSection, SectionKind};
use std::path::{Path, PathBuf};
use std::process::Command;

/// RISC-V packages: (package, feature that enables its RISC-V binaries).
const PACKAGES: &[(&str, &str)] = &[("cqlab-kernels", "rt"), ("cqlab-isa-tests", "riscv")];
/// The firmware images proper (whose sizes are reported).
const FIRMWARE: &[&str] =
    &["prefetch", "dispatch", "worker", "noop", "spin", "copy", "matmul", "noop-256", "noop-1k", "noop-4k", "noop-12k"];

/// Known-bug variants of the CQ firmware (cargo features of cqlab-kernels),
/// each built into `variants/<name>/` beside the normal images.
pub const VARIANTS: &[&str] = &[
    "stall-release-early",
    "release-before-ack",
    "early-fetch-release",
    "completion-no-toggle",
    "event-zero-signalled",
    "relay-reuse-before-sent",
];

/// Where the ELFs end up (tests and the driver look here).
pub fn output_dir(root: &Path) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    target.join(TARGET).join("firmware")
}

/// Builds all firmware; returns the ELF paths.
pub fn build(root: &Path) -> Result<Vec<PathBuf>> {
    let toolchain = toolchain::ensure()?;
    let out = output_dir(root);
    let built = match toolchain {
        Toolchain::Rustup => out.clone(),
        Toolchain::Debian { .. } => root.join("target/debian-fallback").join(TARGET).join("firmware"),
    };
    // Variants build in a target dir of their own: in a shared one each
    // variant build overwrote the normal CQ images until the normal build
    // ran last, and a campaign booting from them meanwhile raced known-bug
    // firmware (found by `cqlab replay`: 51 failures of the correct firmware
    // under `cargo xtask test`, none of which replayed).
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let variant_target = target.join("firmware-variants");
    let variant_built = variant_target.join(TARGET).join("firmware");
    for variant in VARIANTS {
        let mut cmd = build_command(&toolchain, root);
        cmd.env("CARGO_TARGET_DIR", &variant_target);
        let features = format!("rt,bug-{variant}");
        cmd.args(["build", "-p", "cqlab-kernels", "--features", &features, "--bin", "prefetch", "--bin", "dispatch"]);
        cmd.args(["--target", TARGET, "--profile", "firmware"]);
        run(&mut cmd).with_context(|| format!("building firmware variant {variant}"))?;
        let dir = out.join("variants").join(variant);
        std::fs::create_dir_all(&dir)?;
        for name in ["prefetch", "dispatch"] {
            std::fs::copy(variant_built.join(name), dir.join(name))
                .with_context(|| format!("copying {variant}/{name}"))?;
        }
    }
    for (package, feature) in PACKAGES {
        let mut cmd = build_command(&toolchain, root);
        riscv_args(&mut cmd, "build", package, feature);
        run(&mut cmd).with_context(|| format!("building firmware package {package}"))?;
    }
    if let Toolchain::Debian { .. } = toolchain {
        // The fallback builds in its own target dir (another compiler version);
        // copy the ELFs to where everything else looks for them.
        std::fs::create_dir_all(&out)?;
        for entry in std::fs::read_dir(&built)? {
            let path = entry?.path();
            let is_elf = std::fs::read(&path).map(|b| b.starts_with(b"\x7fELF")).unwrap_or(false);
            if path.is_file() && is_elf {
                let name = path.file_name().expect("file");
                std::fs::copy(&path, out.join(name)).with_context(|| format!("copying {}", path.display()))?;
            }
        }
    }
    Ok(FIRMWARE.iter().map(|b| out.join(b)).collect())
}

/// `cargo <sub> -p <package> --features <features> --bins` for the device, firmware profile.
fn riscv_args(cmd: &mut Command, sub: &str, package: &str, features: &str) {
    cmd.args([sub, "-p", package, "--features", features, "--bins", "--target", TARGET, "--profile", "firmware"]);
}

fn build_command(toolchain: &Toolchain, root: &Path) -> Command {
    let mut cmd = match toolchain {
        Toolchain::Rustup => cargo(),
        Toolchain::Debian { cargo, rustc, linker } => {
            let mut cmd = Command::new(cargo);
            cmd.current_dir(root)
                .env("RUSTC", rustc)
                .env("RUSTC_BOOTSTRAP", "1")
                .env("CARGO_TARGET_RISCV32IM_UNKNOWN_NONE_ELF_LINKER", linker)
                .env("CARGO_TARGET_DIR", root.join("target/debian-fallback"))
                .arg("-Zbuild-std=core");
            cmd
        }
    };
    cmd.env("CQLAB_BUILD_ID", build_id(root));
    cmd
}

/// Short git commit hash, the firmware's build id ("0" outside git).
fn build_id(root: &Path) -> String {
    Command::new("git")
        .args(["rev-parse", "--short=8", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "0".into())
}

/// clippy over the firmware as built for the device (host clippy cannot see
/// the RISC-V-only code). Skipped on the Debian fallback, which has no clippy.
pub fn clippy(root: &Path) -> Result<()> {
    if !matches!(toolchain::ensure()?, Toolchain::Rustup) {
        eprintln!("xtask: firmware clippy skipped (Debian fallback toolchain has no clippy)");
        return Ok(());
    }
    for (package, feature) in PACKAGES {
        let mut cmd = cargo();
        riscv_args(cmd.current_dir(root), "clippy", package, feature);
        run(cmd.args(["--", "-D", "warnings"]))?;
    }
    Ok(())
}

/// Sizes of one ELF: code (text + rodata), initialised data, zeroed data.
pub struct ElfSizes {
    pub file: u64,
    pub code: u64,
    pub data: u64,
    pub bss: u64,
    pub entry: u64,
}

pub fn sizes(path: &Path) -> Result<ElfSizes> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let elf = object::File::parse(&*bytes).with_context(|| format!("parsing {}", path.display()))?;
    let mut s = ElfSizes { file: bytes.len() as u64, code: 0, data: 0, bss: 0, entry: elf.entry() };
    for section in elf.sections() {
        match section.kind() {
            SectionKind::Text | SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => s.code += section.size(),
            SectionKind::Data => s.data += section.size(),
            SectionKind::UninitializedData => s.bss += section.size(),
            _ => {}
        }
    }
    Ok(s)
}

pub fn print_sizes(elfs: &[PathBuf]) {
    println!("{:<10} {:>8} {:>8} {:>8} {:>8} {:>10}", "firmware", "file", "code", "data", "bss", "entry");
    for path in elfs {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        match sizes(path) {
            Ok(s) => println!("{:<10} {:>8} {:>8} {:>8} {:>8} {:>#10x}", name, s.file, s.code, s.data, s.bss, s.entry),
            Err(e) => println!("{name:<10} unreadable: {e:#}"),
        }
    }
}
