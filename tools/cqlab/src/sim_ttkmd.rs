//! `cqlab sim ttkmd --dev PATH`: the chip as shared memory for the tt-kmd simulator mode
//! (`ttkmd-sim:PATH`). The device files and their protocol are `cqlab_sim::shared`'s; host
//! processes open the device through the tt-kmd backend, whose kernel calls the simulator
//! answers (`cqlab_driver::ttkmd::sim_kernel`). The chip runs free until SIGINT or SIGTERM.
//!
//! The device directory gets the daemon's protections (`cqlab_sim::daemon::files`): it is
//! private to its user (0700, files 0600, whatever the umask), a directory another user owns
//! is refused, so is one holding anything but a stopped simulator's files (a start deletes
//! those: [`files::check_dir`]), every file is created afresh with
//! `O_CREAT|O_EXCL|O_NOFOLLOW` (a planted symlink is an error, never a file written
//! through), and one simulator serves a path: a second one of either kind (`sim ttkmd` or
//! `sim serve`, which take the same lock, [`files::lock_dir`]) is refused naming the
//! first's pid instead of replacing its files.

use crate::out::diagln;
use anyhow::Context;
use cqlab_sim::config::SimConfig;
use cqlab_sim::daemon::files;
use cqlab_sim::shared::{Paths, Runner};
use nix::fcntl::Flock;
use nix::sys::signal::{SigSet, Signal};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The device files the simulator creates.
fn device_files(dev: &Path) -> Vec<PathBuf> {
    let p = Paths::new(dev);
    vec![p.ctl(), p.l1(), p.regs(), p.dram(), p.sysmem(), p.lock()]
}

/// Makes `dev` a fresh device of this user: directory checked (or created), the path locked,
/// every device file created afresh. On failure, removes what it created.
fn prepare(dev: &Path) -> anyhow::Result<Flock<std::fs::File>> {
    let created = files::prepare_dir(dev)?;
    // Refused: the directory is the holder's now (even if this start made it), so nothing of
    // it is removed.
    let lock = files::lock_dir(dev, files::Simulator::Ttkmd)?;
    let undo = |e: anyhow::Error| {
        if created {
            let _ = std::fs::remove_dir_all(dev);
        }
        e
    };
    let mut made = Vec::new();
    for path in device_files(dev) {
        match files::create_private(&path) {
            Ok(_) => made.push(path),
            Err(e) => {
                for p in &made {
                    let _ = std::fs::remove_file(p);
                }
                return Err(undo(e.into()));
            }
        }
    }
    Ok(lock)
}

/// A `--driver-version`: `X.Y.Z`, a tt-kmd release the simulated kernel can answer as
/// (`sim_kernel::SIM_DRIVER_VERSIONS`).
pub fn driver_version(s: &str) -> Result<(u8, u8, u8), String> {
    use cqlab_driver::ttkmd::sim_kernel::SIM_DRIVER_VERSIONS;
    let show = |(a, b, c): (u8, u8, u8)| format!("{a}.{b}.{c}");
    let range = format!("{} through {}", show(*SIM_DRIVER_VERSIONS.start()), show(*SIM_DRIVER_VERSIONS.end()));
    // Digits only: `u8::from_str` would take `+1`.
    let part = |p: &str| p.bytes().all(|b| b.is_ascii_digit()).then(|| p.parse::<u8>().ok()).flatten();
    let parts: Vec<Option<u8>> = s.split('.').map(part).collect();
    let version = match parts[..] {
        [Some(a), Some(b), Some(c)] => (a, b, c),
        _ => return Err(format!("expected a tt-kmd version MAJOR.MINOR.PATCH (each 0..=255), found {s:?}")),
    };
    if !SIM_DRIVER_VERSIONS.contains(&version) {
        return Err(format!(
            "tt-kmd {} is not one the simulated kernel can answer as: {range} (it always reports ioctl API 2 \
             with a semantic version, as 2.0.0 and later do, and knows no release past the ioctl.h it mirrors)",
            show(version)
        ));
    }
    Ok(version)
}

/// Runs the chip at `dev` until SIGINT or SIGTERM; its simulated kernel answers as tt-kmd
/// `driver_version` (the default, `sim_kernel::SIM_DRIVER_VERSION`, if none).
pub fn serve(dev: &Path, cfg: SimConfig, driver_version: Option<(u8, u8, u8)>) -> anyhow::Result<()> {
    // Block the stop signals before any thread starts; one thread waits for them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("blocking SIGINT/SIGTERM")?;
    // Every error of `prepare` names its file.
    let _lock = prepare(dev)?;
    let model = cqlab_driver::backend::spec::Model::of_daemon(
        cqlab_sim::daemon::proto::TimingModel::of(&cfg),
        cfg.board.arch(),
    )
    .describe();
    // Set with the device, so no client opens it as another version.
    let words: Vec<_> = driver_version.map(cqlab_driver::ttkmd::sim_kernel::driver_version_word).into_iter().collect();
    let mut runner =
        Runner::create_with(dev, cfg.clone(), &words).map_err(anyhow::Error::msg).context("creating the device")?;
    let (a, b, c) = driver_version.unwrap_or(cqlab_driver::ttkmd::sim_kernel::SIM_DRIVER_VERSION);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        let _ = signals.wait();
        flag.store(true, Ordering::Relaxed);
    })?;
    diagln!(
        "cqlab sim ttkmd: device at {} (pid {}, seed {}, {} harvested {}{}, as tt-kmd {a}.{b}.{c}); open it with \
         ttkmd-sim:{}; stop with Ctrl-C",
        dev.display(),
        std::process::id(),
        cfg.seed,
        cfg.board,
        cfg.harvesting,
        model,
        dev.display()
    );
    let now = runner.run(&stop);
    diagln!("cqlab sim ttkmd: stopped at device cycle {now}");
    Ok(())
}
