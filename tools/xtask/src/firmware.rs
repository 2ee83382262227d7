//! `cargo xtask firmware`: builds every firmware ELF for riscv32im in the
//! size-optimised `firmware` profile, once per chip, and reports their
//! sizes. The images of chip `a` land in `firmware/<a.short_name()>/`
//! (`target/riscv32im-unknown-none-elf/firmware/{wormhole,blackhole}/`), its
//! known-bug variants in `<that>/variants/<name>/`; the ISA test programs,
//! which do not depend on the chip, in `firmware/` itself.

use crate::toolchain::{self, Toolchain, TARGET};
use crate::{cargo, run};
use anyhow::{Context, Result};
use cqlab_abi::arch::Arch;
use object::{Object, ObjectSection, SectionKind};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The firmware images proper (whose sizes are reported), per chip.
const FIRMWARE: &[&str] = &[
    "prefetch",
    "dispatch",
    "worker",
    "worker-ncrisc",
    "worker-trisc0",
    "worker-trisc1",
    "worker-trisc2",
    "noop",
    "spin",
    "copy",
    "matmul",
    "noop-256",
    "noop-1k",
    "noop-4k",
    "noop-12k",
];

/// Known-bug variants of the CQ firmware, each built into
/// `<chip>/variants/<name>/` beside the normal images.
pub use cqlab_abi::firmware::KNOWN_BUG_VARIANTS as VARIANTS;

/// Where the ELFs end up (tests and the driver look here).
pub fn output_dir(root: &Path) -> PathBuf {
    target_dir(root).join(TARGET).join("firmware")
}

/// Where chip `arch`'s ELFs end up.
pub fn arch_dir(root: &Path, arch: Arch) -> PathBuf {
    output_dir(root).join(arch.short_name())
}

pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

/// The cqlab-kernels features of chip `arch`'s images, plus `extra`.
pub fn features(arch: Arch, extra: &str) -> String {
    format!("rt,arch-{}{extra}", arch.short_name())
}

/// Builds all firmware for every chip; returns the ELF paths.
pub fn build(root: &Path) -> Result<Vec<PathBuf>> {
    let toolchain = toolchain::ensure()?;
    let mut elfs = Vec::new();
    for arch in Arch::ALL {
        elfs.extend(build_arch(root, &toolchain, arch)?);
    }
    // The ISA tests run on one bare hart: the same programs for every chip.
    let tag = Some(SHARED_BUILD);
    let mut cmd = build_command(&toolchain, root, tag);
    riscv_args(&mut cmd, "build", "cqlab-isa-tests", "riscv");
    run(&mut cmd).context("building firmware package cqlab-isa-tests")?;
    // The last chip's images are beside them: only the ISA tests' go.
    copy_elfs(&built_dir(root, &toolchain, tag), &output_dir(root), |name| name.starts_with(ISA_TEST_PREFIX))?;
    Ok(elfs)
}

/// The target dir (`target/firmware-builds`) every chip's images and
/// variants build in, one after the other: their dependencies build once (a
/// target dir per build built them 16 times, ~15 of each build's ~21 s on
/// a 2-core machine like CI's). Nothing boots from it: each build's images are copied out
/// (to [`arch_dir`]) before the next build starts, so a campaign booting
/// meanwhile never races the wrong firmware, as it did when the images
/// were booted where they were built (found by `cqlab replay`: 51 failures
/// of the correct firmware under `cargo xtask test`, none of which
/// replayed). Cargo puts a build's own images in place even when nothing
/// needed compiling.
const SHARED_BUILD: &str = "builds";

/// How every ISA test image's name begins (`cqlab-isa-tests`' bins), which
/// tells them from the chips' images in [`SHARED_BUILD`].
const ISA_TEST_PREFIX: &str = "isa-";

/// Builds chip `arch`'s images and known-bug variants (see [`SHARED_BUILD`]).
fn build_arch(root: &Path, toolchain: &Toolchain, arch: Arch) -> Result<Vec<PathBuf>> {
    let out = arch_dir(root, arch);
    let tag = Some(SHARED_BUILD);
    for variant in VARIANTS {
        let mut cmd = build_command(toolchain, root, tag);
        let features = features(arch, &format!(",bug-{variant}"));
        cmd.args(["build", "-p", "cqlab-kernels", "--features", &features, "--bin", "prefetch", "--bin", "dispatch"]);
        cmd.args(["--target", TARGET, "--profile", "firmware"]);
        run(&mut cmd).with_context(|| format!("building {arch} firmware variant {variant}"))?;
        let dir = out.join("variants").join(variant);
        std::fs::create_dir_all(&dir)?;
        let built = built_dir(root, toolchain, tag);
        for name in ["prefetch", "dispatch"] {
            std::fs::copy(built.join(name), dir.join(name))
                .with_context(|| format!("copying {arch} {variant}/{name}"))?;
        }
    }
    let mut cmd = build_command(toolchain, root, tag);
    riscv_args(&mut cmd, "build", "cqlab-kernels", &features(arch, ""));
    run(&mut cmd).with_context(|| format!("building the {arch} firmware"))?;
    copy_elfs(&built_dir(root, toolchain, tag), &out, |name| !name.starts_with(ISA_TEST_PREFIX))?;
    Ok(FIRMWARE.iter().map(|b| out.join(b)).collect())
}

/// The target dir of the build tagged `tag` (`None`: the workspace's own).
fn build_target(root: &Path, toolchain: &Toolchain, tag: Option<&str>) -> PathBuf {
    let base = match toolchain {
        Toolchain::Rustup => target_dir(root),
        // The fallback builds in target dirs of its own (another compiler version).
        Toolchain::Debian { .. } => root.join("target/debian-fallback"),
    };
    match tag {
        Some(t) => base.join(format!("firmware-{t}")),
        None => base,
    }
}

/// Where the build tagged `tag` leaves its ELFs.
fn built_dir(root: &Path, toolchain: &Toolchain, tag: Option<&str>) -> PathBuf {
    build_target(root, toolchain, tag).join(TARGET).join("firmware")
}

/// Copies every ELF file of `from` whose name passes `wanted` into `to`.
fn copy_elfs(from: &Path, to: &Path, wanted: impl Fn(&str) -> bool) -> Result<()> {
    if from == to {
        return Ok(());
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        let name = path.file_name().expect("a directory entry has a name");
        if !wanted(&name.to_string_lossy()) {
            continue;
        }
        let is_elf = std::fs::read(&path).map(|b| b.starts_with(b"\x7fELF")).unwrap_or(false);
        if path.is_file() && is_elf {
            std::fs::copy(&path, to.join(name)).with_context(|| format!("copying {}", path.display()))?;
        }
    }
    Ok(())
}

/// `cargo <sub> -p <package> --features <features> --bins` for the device, firmware profile.
fn riscv_args(cmd: &mut Command, sub: &str, package: &str, features: &str) {
    cmd.args([sub, "-p", package, "--features", features, "--bins", "--target", TARGET, "--profile", "firmware"]);
}

/// A cargo command for the device, building in the target dir of `tag`.
fn build_command(toolchain: &Toolchain, root: &Path, tag: Option<&str>) -> Command {
    let mut cmd = match toolchain {
        Toolchain::Rustup => cargo(),
        Toolchain::Debian { cargo, rustc, linker } => {
            let mut cmd = Command::new(cargo);
            cmd.current_dir(root)
                .env("RUSTC", rustc)
                .env("RUSTC_BOOTSTRAP", "1")
                .env("CARGO_TARGET_RISCV32IM_UNKNOWN_NONE_ELF_LINKER", linker)
                .arg("-Zbuild-std=core");
            cmd
        }
    };
    if tag.is_some() || matches!(toolchain, Toolchain::Debian { .. }) {
        cmd.env("CARGO_TARGET_DIR", build_target(root, toolchain, tag));
    }
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
    for arch in Arch::ALL {
        let mut cmd = cargo();
        cmd.env("CARGO_TARGET_DIR", build_target(root, &Toolchain::Rustup, Some(SHARED_BUILD)));
        riscv_args(cmd.current_dir(root), "clippy", "cqlab-kernels", &features(arch, ""));
        run(cmd.args(["--", "-D", "warnings"]))?;
    }
    let mut cmd = cargo();
    cmd.env("CARGO_TARGET_DIR", build_target(root, &Toolchain::Rustup, Some(SHARED_BUILD)));
    riscv_args(cmd.current_dir(root), "clippy", "cqlab-isa-tests", "riscv");
    run(cmd.args(["--", "-D", "warnings"]))?;
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
    println!("{:<24} {:>8} {:>8} {:>8} {:>8} {:>10}", "firmware", "file", "code", "data", "bss", "entry");
    for path in elfs {
        // `<chip>/<image>`.
        let chip = path.parent().and_then(Path::file_name).unwrap_or_default().to_string_lossy();
        let name = format!("{chip}/{}", path.file_name().unwrap_or_default().to_string_lossy());
        match sizes(path) {
            Ok(s) => println!("{:<24} {:>8} {:>8} {:>8} {:>8} {:>#10x}", name, s.file, s.code, s.data, s.bss, s.entry),
            Err(e) => println!("{name:<24} unreadable: {e:#}"),
        }
    }
}
