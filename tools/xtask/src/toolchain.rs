//! Finding a compiler for riscv32im-unknown-none-elf.
//!
//! Normal path: rustup's prebuilt standard library for the target. Where
//! rustup cannot download it, Debian's `rustc-web`, `cargo-web` and
//! `rust-web-src` (compiler and library source of one version) build `core`
//! from source with `-Zbuild-std=core`, linked by `rust-lld` or Debian's `lld`.

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const TARGET: &str = "riscv32im-unknown-none-elf";

/// How the firmware will be built.
pub enum Toolchain {
    /// The rustup toolchain running this xtask, with the target installed.
    Rustup,
    /// Debian's compiler building `core` from its own source.
    Debian { cargo: PathBuf, rustc: PathBuf, linker: PathBuf },
}

const DEBIAN_RUSTC: &str = "/usr/bin/rustc";
const DEBIAN_CARGO: &str = "/usr/bin/cargo";
const DEBIAN_PACKAGES: [&str; 4] = ["rustc-web", "cargo-web", "rust-web-src", "lld"];

pub fn ensure() -> Result<Toolchain> {
    let forced = std::env::var("CQLAB_FIRMWARE_TOOLCHAIN").ok();
    if forced.as_deref() != Some("debian") {
        if rustup_has_target() {
            return Ok(Toolchain::Rustup);
        }
        eprintln!("xtask: installing the {TARGET} target with rustup");
        let added = Command::new("rustup").args(["target", "add", TARGET]).status().map(|s| s.success());
        if added.unwrap_or(false) && rustup_has_target() {
            return Ok(Toolchain::Rustup);
        }
        eprintln!("xtask: rustup could not install {TARGET}; trying Debian's rustc-web with -Zbuild-std=core");
    }
    debian()
}

fn rustup_has_target() -> bool {
    Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == TARGET))
        .unwrap_or(false)
}

fn debian() -> Result<Toolchain> {
    if !debian_ready() {
        let is_root = Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0")).unwrap_or(false);
        if is_root && Path::new("/usr/bin/apt-get").exists() {
            eprintln!("xtask: installing {}", DEBIAN_PACKAGES.join(" "));
            let _ = Command::new("apt-get").args(["update", "-qq"]).status();
            let _ = Command::new("apt-get").args(["install", "-y", "-qq"]).args(DEBIAN_PACKAGES).status();
        }
    }
    if !debian_ready() {
        bail!(
            "no compiler for {TARGET}. Run either\n  rustup target add {TARGET}\nor\n  \
             sudo apt-get install -y {}\nand try again",
            DEBIAN_PACKAGES.join(" ")
        );
    }
    let Some(linker) = find_linker() else {
        bail!("no RISC-V linker: run `sudo apt-get install -y lld` (or install rustup's rust-lld)");
    };
    Ok(Toolchain::Debian { cargo: DEBIAN_CARGO.into(), rustc: DEBIAN_RUSTC.into(), linker })
}

/// Debian's compiler and the matching library source are both present.
fn debian_ready() -> bool {
    if !Path::new(DEBIAN_RUSTC).exists() || !Path::new(DEBIAN_CARGO).exists() {
        return false;
    }
    let Ok(out) = Command::new(DEBIAN_RUSTC).args(["--print", "sysroot"]).output() else { return false };
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").exists()
}

/// rustup's `rust-lld` if there is one, else Debian's `ld.lld`.
fn find_linker() -> Option<PathBuf> {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let host = Command::new("rustc").args(["-vV"]).output().ok()?;
    let host = String::from_utf8_lossy(&host.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .unwrap_or_default();
    let rust_lld = sysroot.join("lib/rustlib").join(host).join("bin/rust-lld");
    if rust_lld.exists() {
        return Some(rust_lld);
    }
    ["/usr/bin/ld.lld", "/usr/bin/ld.lld-14"].into_iter().map(PathBuf::from).find(|p| p.exists())
}
