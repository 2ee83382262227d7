//! `cqlab sim ttkmd --dev PATH`: the chip as shared memory for the tt-kmd simulator mode
//! (`ttkmd-sim:PATH`). The device files and their protocol are `cqlab_sim::shared`'s; host
//! processes open the device through the tt-kmd backend, whose kernel calls the simulator
//! answers (`cqlab_driver::ttkmd::sim_kernel`). The chip runs free until SIGINT or SIGTERM.

use anyhow::Context;
use cqlab_sim::config::SimConfig;
use cqlab_sim::shared::Runner;
use nix::sys::signal::{SigSet, Signal};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub fn serve(dev: &Path, cfg: SimConfig) -> anyhow::Result<()> {
    // Block the stop signals before any thread starts; one thread waits for them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("blocking SIGINT/SIGTERM")?;
    let mut runner = Runner::create(dev, cfg.clone()).map_err(anyhow::Error::msg).context("creating the device")?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        let _ = signals.wait();
        flag.store(true, Ordering::Relaxed);
    })?;
    eprintln!(
        "cqlab sim ttkmd: device at {} (pid {}, seed {}, {}x{} workers, {} CQs); open it with ttkmd-sim:{}; stop \
         with Ctrl-C",
        dev.display(),
        std::process::id(),
        cfg.seed,
        cfg.worker_cols,
        cfg.worker_rows,
        cfg.num_cqs,
        dev.display()
    );
    let now = runner.run(&stop);
    eprintln!("cqlab sim ttkmd: stopped at device cycle {now}");
    Ok(())
}
