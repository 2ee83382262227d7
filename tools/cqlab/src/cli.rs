//! What every subcommand shares at the command-line edge: exit codes,
//! usage errors, output that survives a closed pipe, and progress.
//!
//! Exit codes are in `crate::exit` (and `cqlab --help`).

use cqlab_driver::config::DEFAULT_KERNEL_TIMEOUT_CYCLES;
use cqlab_driver::wait::PROGRESS_CHECK_CYCLES;
use cqlab_driver::DeviceConfig;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// The two limits of every host wait, for every command that runs work.
#[derive(clap::Args, Clone, Debug)]
pub struct Limits {
    /// Device cycles a wait may go without progress of the queue machinery,
    /// while no kernel runs, before it is reported as a hang with its
    /// wait-for chain (at least 1000000: progress is checked every 1000000
    /// cycles).
    #[arg(long, value_name = "CYCLES", default_value_t = DeviceConfig::default().stall_timeout_cycles,
          value_parser = clap::value_parser!(u64).range(PROGRESS_CHECK_CYCLES..))]
    pub stall_timeout: u64,
    /// Device cycles a kernel may run while the host waits behind it before
    /// "kernel on (x,y) still running after N cycles"; 0: no limit.
    #[arg(long, value_name = "CYCLES", default_value_t = DEFAULT_KERNEL_TIMEOUT_CYCLES,
          value_parser = kernel_timeout)]
    pub kernel_timeout: u64,
}

fn kernel_timeout(s: &str) -> Result<u64, String> {
    let v: u64 = s.parse().map_err(|_| format!("expected a number of cycles, found {s:?}"))?;
    if v != 0 && v < PROGRESS_CHECK_CYCLES {
        return Err(format!("0 (no limit) or at least {PROGRESS_CHECK_CYCLES} (the progress-check interval)"));
    }
    Ok(v)
}

impl Limits {
    pub fn apply(&self, cfg: &mut DeviceConfig) {
        cfg.stall_timeout_cycles = self.stall_timeout;
        cfg.kernel_timeout_cycles = self.kernel_timeout;
    }
}

/// The one usage error type (and its exit code) lives in `usage.rs`.
pub use crate::usage::UsageError as Usage;

/// The help text's list of exit codes.
pub const EXIT_CODES_HELP: &str = "Exit codes: 0 success; 1 the run failed for another reason (I/O, driver error, \
     failures of several classes, a compare regression); 2 usage error (a bad argument or malformed input, refused \
     before any work); 3 hang (a wait timed out); 4 device error (a firmware error record, a corrupt completion \
     record, a crashed core); 5 mismatch (a result differs from the host reference). See docs/cli.md.";

/// A worker grid `COLSxROWS` (`8x8`), for `--grid`.
pub fn parse_grid(s: &str) -> Result<(u8, u8), String> {
    let bad = || format!("expected COLSxROWS such as 8x8, found {s:?}");
    let (c, r) = s.split_once('x').ok_or_else(bad)?;
    Ok((c.parse().map_err(|_| bad())?, r.parse().map_err(|_| bad())?))
}

/// `rows` as CSV text, a header line first (the field names of a row).
pub fn csv<R: serde::Serialize>(rows: impl IntoIterator<Item = R>) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for row in rows {
        w.serialize(row)?;
    }
    Ok(String::from_utf8(w.into_inner().map_err(|e| e.into_error())?)?)
}

/// Fails with a [`Usage`] error unless `ok`.
pub fn check(ok: bool, message: impl FnOnce() -> String) -> anyhow::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Usage(message()).into())
    }
}

/// True when `e` comes from writing to a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// A progress bar of `len` steps on stderr, drawn only when stderr is a
/// terminal (hidden in pipes, logs and tests).
pub fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), target());
    bar.set_style(
        ProgressStyle::with_template("{msg} [{elapsed_precise}] {bar:30} {pos}/{len} (eta {eta})")
            .expect("valid template"),
    );
    bar.set_message(what.to_owned());
    bar
}

/// A spinner for work of unknown length (same rules as [`progress`]).
pub fn spinner(what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target());
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]").expect("valid template"));
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}
