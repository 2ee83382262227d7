//! Standard output of every command.
//!
//! A reader that goes away (`cqlab ... | head -1`, a closed pipe) ends the
//! output quietly: later lines are dropped and the command keeps the exit
//! status it would have had (`compare`'s regression status included).
//! Any other write error (a full disk: `cqlab ... > /dev/full`) is kept and
//! reported once when the command ends, naming stdout, and the command
//! then exits 1. Nothing here panics.
//!
//! Diagnostics (progress, notes, warnings) go to stderr through [`diag`]:
//! a closed or failing stderr (`2>&1 | head -1`, `2>/dev/full`) drops them
//! and the run goes on to its own status.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;
use std::sync::Mutex;

/// What became of stdout.
enum State {
    Open,
    /// The reader went away (EPIPE): the rest is dropped.
    Closed,
    /// A write failed otherwise: the first error, reported at the end.
    Failed(std::io::Error),
}

static STATE: Mutex<State> = Mutex::new(State::Open);

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Writes `args` to stdout (see the module docs).
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut st = state();
    if !matches!(*st, State::Open) {
        return;
    }
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        *st = if e.kind() == ErrorKind::BrokenPipe { State::Closed } else { State::Failed(e) };
    }
}

/// Stdout as a `Write` for output streamed by other code (`sim exec
/// --trace`). A closed pipe is a `BrokenPipe` error from then on, so the
/// producer stops writing (and runs on to the status it would have had);
/// any other failure is returned (and reported by [`finish`]), so the
/// producer stops.
pub struct Stream;

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut st = state();
        if matches!(*st, State::Open) {
            if let Err(e) = std::io::stdout().lock().write_all(buf) {
                *st = if e.kind() == ErrorKind::BrokenPipe { State::Closed } else { State::Failed(e) };
            }
        }
        match &*st {
            State::Failed(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
            State::Closed => Err(ErrorKind::BrokenPipe.into()),
            State::Open => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes one line to stdout.
pub fn line(args: std::fmt::Arguments<'_>) {
    write(format_args!("{args}\n"));
}

/// Whether stdout can no longer take output (its reader left, or a write
/// failed): commands that stream output to stdout stop early.
pub fn gone() -> bool {
    !matches!(*state(), State::Open)
}

/// Flushes stdout and gives the command's exit status: `status`, or 1
/// (with the error on stderr) when stdout could not be written.
pub fn finish(status: ExitCode) -> ExitCode {
    let mut st = state();
    if matches!(*st, State::Open) {
        if let Err(e) = std::io::stdout().lock().flush() {
            *st = if e.kind() == ErrorKind::BrokenPipe { State::Closed } else { State::Failed(e) };
        }
    }
    match &*st {
        State::Failed(e) => {
            report(&format!("writing to stdout: {e}"));
            crate::exit::Exit::Failed.into()
        }
        State::Open | State::Closed => status,
    }
}

/// Writes `args` to stderr, dropping them if it cannot (see the module docs).
pub fn diag(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// An error and its causes as one line, `outer: cause: ...` (anyhow's
/// `{:#}`), each cause once: many errors show their source in their own
/// message and also hand it on as the source, which would print it twice
/// (`creating device directory /proc/x: No such file or directory: No such
/// file or directory`).
pub fn chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if text.contains(&c) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&c);
    }
    text
}

/// Prints `error: MESSAGE` on stderr (never panics, even on a closed stderr).
pub fn report(message: &str) {
    diag(format_args!("error: {message}\n"));
}

/// `eprintln!` for diagnostics (see the module docs).
macro_rules! diagln {
    ($($t:tt)*) => { $crate::out::diag(format_args!("{}\n", format_args!($($t)*))) };
}
pub(crate) use diagln;

/// `println!` for report output (see the module docs).
macro_rules! outln {
    ($($t:tt)*) => { $crate::out::line(format_args!($($t)*)) };
}
/// `print!` for report output (see the module docs).
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}
pub(crate) use {out, outln};

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("creating device directory /x: {source}")]
    struct Shown {
        source: std::io::Error,
    }

    /// A cause an error already shows is not printed again; one it does
    /// not show is.
    #[test]
    fn a_chain_names_each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(Shown { source: io() }).context("starting the daemon");
        assert_eq!(chain(&e), "starting the daemon: creating device directory /x: no such file");
        let e = anyhow::Error::new(io()).context("reading /y");
        assert_eq!(chain(&e), "reading /y: no such file");
    }
}
