//! `cqlab sim serve`: the simulated device as a long-lived process.
//!
//! The protocol, the device directory and the server are the simulator
//! crate's (`cqlab_sim::daemon`); this front adds the stop signals: SIGINT,
//! SIGTERM and SIGHUP are blocked in every thread and read from a signalfd,
//! so a Ctrl-C or a closed terminal removes the socket and pid file like
//! `cqlab sim stop` does (under `nohup` SIGHUP is ignored, and the daemon
//! outlives the terminal).

use crate::out::diagln;
use anyhow::Context;
use cqlab_sim::config::SimConfig;
use cqlab_sim::daemon::server::{ServeOptions, Server};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::SignalFd;

/// Runs the daemon until a signal or `cqlab sim stop`; fails (exit 1) if
/// its device thread panicked meanwhile.
pub fn serve(dev: &std::path::Path, cfg: SimConfig, opts: ServeOptions) -> anyhow::Result<()> {
    // Block the stop signals before any thread starts, so every thread
    // inherits the mask and only the signalfd sees them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    // A SIGHUP killed the daemon and left its socket and pid file (helper-33).
    signals.add(Signal::SIGHUP);
    signals.thread_block().context("blocking SIGINT/SIGTERM/SIGHUP")?;
    let sfd = SignalFd::new(&signals).context("creating a signalfd")?;
    let server = Server::start(dev, cfg.clone(), opts)
        .with_context(|| format!("starting the simulator daemon at {}", dev.display()))?;
    let signal_stop = server.stopper();
    std::thread::Builder::new().name("signals".into()).spawn(move || match sfd.read_signal() {
        Ok(Some(si)) => {
            let name = Signal::try_from(si.ssi_signo as i32).map_or("a signal", |s| s.as_str());
            let _ = signal_stop.send(name.to_string());
        }
        Ok(None) | Err(_) => {
            let _ = signal_stop.send("a failed signalfd read".into());
        }
    })?;
    diagln!(
        "cqlab sim serve: device at {} (pid {}, seed {}, {} harvested {}, sysmem {} MiB{}); attach with \
         sim:{}; stop with Ctrl-C or `cqlab sim stop --dev {}`",
        dev.display(),
        std::process::id(),
        cfg.seed,
        cfg.board,
        cfg.harvesting,
        cfg.sysmem_size >> 20,
        cqlab_driver::backend::spec::Model::of_daemon(
            cqlab_sim::daemon::proto::TimingModel::of(&cfg),
            cfg.board.arch()
        )
        .describe(),
        dev.display(),
        dev.display()
    );
    let sock = server.paths().socket();
    let stopped = server.wait();
    // Through the daemon's log, not waited for: a stderr nobody reads must
    // not keep a stopped daemon from exiting (helper-33).
    cqlab_sim::daemon::log::last_line(format!(
        "cqlab sim serve: stopped by {}; removed {}",
        stopped.why,
        sock.display()
    ));
    // A daemon whose device thread panicked served nothing but that error
    // since: it failed, and says so in its status too.
    match stopped.device_panic {
        Some(panic) => anyhow::bail!("the simulator daemon at {}: its device thread {}", dev.display(), panic.what),
        None => Ok(()),
    }
}
