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

pub fn serve(dev: &Path, cfg: SimConfig) -> anyhow::Result<()> {
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
    let mut runner = Runner::create(dev, cfg.clone()).map_err(anyhow::Error::msg).context("creating the device")?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        let _ = signals.wait();
        flag.store(true, Ordering::Relaxed);
    })?;
    diagln!(
        "cqlab sim ttkmd: device at {} (pid {}, seed {}, {} harvested {}{}); open it with ttkmd-sim:{}; stop \
         with Ctrl-C",
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
