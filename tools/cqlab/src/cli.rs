//! What every subcommand shares at the command-line edge: usage errors,
//! which options the user set, CSV rows, and progress. Exit codes are in
//! `crate::exit` (and `cqlab --help`).

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

/// The one usage error type lives in `usage.rs`.
pub use crate::usage::UsageError as Usage;

/// Prints `error: MESSAGE` on stderr (never panics, even on a closed stderr).
pub fn report(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "error: {message}");
}

/// Which options the user set on the command line (not left at their
/// defaults): what conflicting-option checks look at.
pub struct Given<'a> {
    leaf: &'a clap::ArgMatches,
}

impl<'a> Given<'a> {
    /// The matches of the innermost subcommand of `m`.
    pub fn new(mut m: &'a clap::ArgMatches) -> Self {
        while let Some((_, sub)) = m.subcommand() {
            m = sub;
        }
        Given { leaf: m }
    }

    /// Whether option `id` (the field name) was given.
    pub fn set(&self, id: &str) -> bool {
        match self.leaf.try_get_raw(id) {
            Ok(_) => matches!(
                self.leaf.value_source(id),
                Some(clap::parser::ValueSource::CommandLine | clap::parser::ValueSource::EnvVariable)
            ),
            // Matches built in code know no argument at all; real ones know
            // every argument of their command, so a misspelled id is a bug.
            Err(e) => {
                debug_assert!(self.leaf.ids().next().is_none(), "option id {id:?}: {e}");
                false
            }
        }
    }

    /// Refuses each of `ids` that was given, saying `why` they do not apply.
    pub fn refuse(&self, ids: &[&str], why: impl Fn() -> String) -> Result<(), Usage> {
        let set: Vec<String> =
            ids.iter().filter(|id| self.set(id)).map(|id| format!("--{}", id.replace('_', "-"))).collect();
        crate::usage::ensure(set.is_empty(), || format!("{} {}", set.join(", "), why()))
    }
}

/// A [`Given`] in which nothing was set: for argument structs built in code
/// (a campaign record's arguments are checked with what they say).
pub fn nothing_given() -> &'static clap::ArgMatches {
    static EMPTY: std::sync::OnceLock<clap::ArgMatches> = std::sync::OnceLock::new();
    EMPTY.get_or_init(clap::ArgMatches::default)
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
