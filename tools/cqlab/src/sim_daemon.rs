//! `cqlab sim serve`: the simulated device as a long-lived process.
//!
//! The protocol, the device directory and the server are the simulator
//! crate's (`cqlab_sim::daemon`); this front adds the stop signals: SIGINT,
//! SIGTERM and SIGHUP are blocked in every thread and read from a signalfd,
//! so a Ctrl-C or a closed terminal removes the socket and pid file like
//! `cqlab sim stop` does (under `nohup` SIGHUP is ignored, and the daemon
//! outlives the terminal).

use crate::exit::Exit;
use crate::out::diagln;
use anyhow::Context;
use cqlab_sim::config::SimConfig;
use cqlab_sim::daemon::server::{ServeOptions, Server, Stopped};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use std::process::ExitCode;

/// Runs the daemon until a signal, `cqlab sim stop` or the end of its
/// accept thread; exits 1 if its device thread panicked meanwhile or its
/// accept thread ended.
pub fn serve(dev: &std::path::Path, cfg: SimConfig, opts: ServeOptions) -> anyhow::Result<ExitCode> {
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
    let (lines, status) = last_words(&stopped, dev, &sock);
    // Through the daemon's log, not waited for: a stderr nobody reads must
    // not keep a stopped daemon from exiting (helper-33). The failure too:
    // returned as an error, it was written by a stderr write that waits,
    // for ever behind a paused `sim serve 2>&1 | less`.
    let (last, first) = lines.split_last().expect("at least the stop line");
    for line in first {
        cqlab_sim::daemon::log::line(line.clone());
    }
    cqlab_sim::daemon::log::last_line(last.clone());
    Ok(status)
}

/// What a stopped daemon says last, and its exit status: 1 if its device
/// thread panicked (it served nothing but that error since, and says so in
/// its status too) or its accept thread ended (it could take no client).
fn last_words(stopped: &Stopped, dev: &std::path::Path, sock: &std::path::Path) -> (Vec<String>, ExitCode) {
    let mut lines = vec![format!("cqlab sim serve: stopped by {}; removed {}", stopped.why, sock.display())];
    let failed =
        |thread: &str, what: &str| format!("error: the simulator daemon at {}: its {thread} {what}", dev.display());
    if let Some(panic) = &stopped.device_panic {
        lines.push(failed("device thread", &panic.what));
    }
    if let Some(what) = &stopped.accept_ended {
        lines.push(failed("accept thread", what));
    }
    let status = if lines.len() > 1 { Exit::Failed } else { Exit::Success };
    (lines, status.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_sim::daemon::server::ThreadPanic;

    /// A daemon whose device thread panicked exits 1 with the panic said as
    /// its last line, for the daemon's log to write (a line it never waits
    /// for); it used to return an error, which `main` writes to stderr with
    /// a write that waits for a reader.
    #[test]
    fn a_device_thread_panic_is_a_last_line_and_exit_1_not_an_error() {
        let (dev, sock) = (std::path::Path::new("/tmp/d"), std::path::Path::new("/tmp/d/sock"));
        let what = "panicked at device-sim/src/chip.rs:1:2: oops".to_owned();
        let panicked = Stopped {
            why: "SIGTERM".into(),
            device_panic: Some(ThreadPanic { what, backtrace: None }),
            accept_ended: None,
        };
        let (lines, status) = last_words(&panicked, dev, sock);
        assert_eq!(status, ExitCode::from(Exit::Failed.code()));
        assert_eq!(
            lines,
            [
                "cqlab sim serve: stopped by SIGTERM; removed /tmp/d/sock",
                "error: the simulator daemon at /tmp/d: its device thread panicked at device-sim/src/chip.rs:1:2: oops",
            ]
        );
        let clean = Stopped { why: "SIGINT".into(), device_panic: None, accept_ended: None };
        assert_eq!(last_words(&clean, dev, sock).1, ExitCode::SUCCESS);
    }

    /// A daemon whose accept thread ended (it stopped itself: no client
    /// could connect) exits 1 with why as its last line.
    #[test]
    fn an_accept_thread_end_is_a_last_line_and_exit_1() {
        let (dev, sock) = (std::path::Path::new("/tmp/d"), std::path::Path::new("/tmp/d/sock"));
        let what = "stopped: its listener failed (Invalid argument (os error 22))".to_owned();
        let why = format!("the accept thread's end (it {what})");
        let ended = Stopped { why, device_panic: None, accept_ended: Some(what) };
        let (lines, status) = last_words(&ended, dev, sock);
        assert_eq!(status, ExitCode::from(Exit::Failed.code()));
        assert_eq!(
            lines.last().map(String::as_str),
            Some(
                "error: the simulator daemon at /tmp/d: its accept thread stopped: its listener failed (Invalid \
                 argument (os error 22))"
            )
        );
    }
}
