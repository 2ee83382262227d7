//! What every subcommand shares at the command-line edge: usage errors,
//! which options the user set, CSV rows, and progress. Exit codes are in
//! `crate::exit` (and `cqlab --help`).

use cqlab_driver::config::{MAX_HOST_JITTER_CYCLES, MAX_HOST_PCT_POINTS, MAX_HOST_PCT_STEPS};
use cqlab_driver::wait::PROGRESS_CHECK_CYCLES;
use cqlab_driver::{DeviceConfig, HostPct, HostSchedule};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// The two limits of every host wait, for every command that runs work.
#[derive(clap::Args, Clone, Debug)]
pub struct Limits {
    /// Device cycles a wait may go without progress of the queue machinery,
    /// while no kernel runs, before it is reported as a hang with its
    /// wait-for chain (at least 1000000: progress is checked every 1000000
    /// cycles). Ten of them in which only the CQ cores record while no
    /// queue advances are a livelock, also a hang: a longer chain of DELAYs
    /// or kernel-free replay needs a longer timeout.
    #[arg(long, value_name = "CYCLES", default_value_t = DeviceConfig::default().stall_timeout_cycles,
          value_parser = stall_timeout)]
    pub stall_timeout: u64,
    /// Device cycles a kernel may run while the host waits behind it before
    /// "kernel on (x,y) still running after N cycles"; 0: no limit.
    /// Default: 100000000000 (100 s) on a card, 1000000000 (1 s of device
    /// time, minutes of host time) on a simulator.
    #[arg(long, value_name = "CYCLES", value_parser = kernel_timeout)]
    pub kernel_timeout: Option<u64>,
}

/// Host time a wait runs before its first progress line, and between lines.
pub const WAIT_LINE_EVERY: Duration = Duration::from_secs(10);

/// Prints a line on stderr now and then while a wait goes on: what it
/// waits for, the device cycle reached and the timeout it runs towards
/// (helper-86's audit: a hung kernel on a simulator waited hours in
/// silence). Lines are timed by host time; what they say, by device time.
pub fn wait_lines() -> cqlab_driver::wait_progress::WaitProgressSink {
    wait_lines_of(None)
}

/// [`wait_lines`] of one of several runs whose lines may interleave (a
/// seed of a `race --jobs` campaign): `note: WHO: still waiting for ...`.
pub fn wait_lines_of(who: Option<String>) -> cqlab_driver::wait_progress::WaitProgressSink {
    let pacer = std::sync::Mutex::new(WaitLinePacer::default());
    let who = who.map_or(String::new(), |w| format!("{w}: "));
    cqlab_driver::wait_progress::WaitProgressSink::new(move |p| {
        let mut pacer = pacer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if pacer.due(p.device_cycle - p.waited_cycles, std::time::Instant::now()) {
            above_bars(|| crate::out::diagln!("{NOTE}{who}{p}"));
        }
    })
}

/// Prints each of the driver's notes (a choice that costs the run
/// something, such as staging off on a card) as a `note:` line on stderr.
pub fn note_lines() -> cqlab_driver::notes::NoteSink {
    cqlab_driver::notes::NoteSink::new(|n| above_bars(|| crate::out::diagln!("note: {n}")))
}

/// How a note line starts on stderr.
pub const NOTE: &str = "note: ";

/// When a wait's next progress line is due.
#[derive(Debug, Default)]
pub struct WaitLinePacer {
    /// The device cycle the wait being reported began at (each wait has
    /// its own), when this first heard of it (host time), and its last line.
    wait: Option<(u64, std::time::Instant)>,
    last_line: Option<std::time::Instant>,
}

impl WaitLinePacer {
    /// Whether a report of the wait that began at device cycle `began`,
    /// made at host time `now`, prints a line: [`WAIT_LINE_EVERY`] after
    /// that wait's first report, then every [`WAIT_LINE_EVERY`]. Short
    /// waits one after another print nothing.
    pub fn due(&mut self, began: u64, now: std::time::Instant) -> bool {
        let first = match self.wait {
            Some((b, first)) if b == began => first,
            _ => {
                (self.wait, self.last_line) = (Some((began, now)), None);
                now
            }
        };
        let due = now.duration_since(self.last_line.unwrap_or(first)) >= WAIT_LINE_EVERY;
        if due {
            self.last_line = Some(now);
        }
        due
    }
}

fn stall_timeout(s: &str) -> Result<u64, String> {
    let v: u64 = s.parse().map_err(|_| format!("expected a number of cycles, found {s:?}"))?;
    if v < PROGRESS_CHECK_CYCLES {
        return Err(format!("{v} is below {PROGRESS_CHECK_CYCLES} (the progress-check interval): at least that"));
    }
    Ok(v)
}

/// The largest seed a command takes: 2^53 - 1, the largest integer a JSON
/// reader's double holds exactly (jq, JavaScript), so a seed in a record or
/// report replays as written (helper-31: stress drew seeds from all of u64,
/// and `jq .seed` gave another).
pub const MAX_SEED: u64 = (1 << 53) - 1;

/// Largest queue count `cqlab run` accepts (the chip model allows more; see
/// README): also what a trace file's header may say.
pub const MAX_RUN_CQS: u8 = 8;

/// "places at most N queues": the most `cqlab run` places on `chip`'s
/// board as harvested. Each queue needs a worker row of its own, and the
/// queue cores of a larger count may take compute lines (an n150 has 8
/// rows at 2 queues, 7 at 8), so the rows at one count do not say it.
pub fn run_queue_limit(chip: &cqlab_driver::Topology) -> String {
    let fits = |n: u8| {
        cqlab_driver::Topology::for_board(chip.board(), Some(chip.harvesting().clone()), n).is_ok_and(|t| n <= t.rows())
    };
    match (1..=MAX_RUN_CQS).rev().find(|&n| fits(n)) {
        Some(1) => "places at most 1 queue".into(),
        Some(n) => format!("places at most {n} queues"),
        None => "places no queue".into(),
    }
}

/// A `--seed` (or `--seed-base`) value: at most [`MAX_SEED`].
pub fn seed(s: &str) -> Result<u64, String> {
    let v: u64 = s.parse().map_err(|_| format!("expected a seed (0..={MAX_SEED}), found {s:?}"))?;
    if v > MAX_SEED {
        return Err(format!("{v} is above {MAX_SEED} (2^53 - 1), the largest seed JSON readers keep exactly"));
    }
    Ok(v)
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
        // Unset: the device's backend picks it (a card's or a simulator's).
        cfg.kernel_timeout_cycles = self.kernel_timeout;
        cfg.wait_progress = Some(wait_lines());
        cfg.notes = Some(note_lines());
    }
}

/// How the host's own accesses interleave with device time on the
/// embedded simulator (`cqlab_driver::host_clock`), for every command that
/// runs work on it: `race`, `stress`, `run`, `sweep`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct HostArgs {
    /// Host jitter: before each host access to the device (a BAR read or
    /// write, a sysmem read or write) takes effect, the device runs a
    /// seeded 0..=N cycles beyond the access's modelled cost (0..=10000;
    /// default 0; `race` draws 2000 or 0 per seed and writes the seed's
    /// into its replay line). Embedded simulator only.
    #[arg(long, value_name = "CYCLES",
          value_parser = clap::value_parser!(u64).range(0..=MAX_HOST_JITTER_CYCLES))]
    pub host_jitter: Option<u64>,
    /// Host PCT: this many host accesses, drawn per seed from the first
    /// --host-pct-steps, where the device runs 50000 cycles ahead while the
    /// host holds still (0 = off; 0..=64). Embedded simulator only.
    #[arg(long, value_name = "POINTS", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=MAX_HOST_PCT_POINTS as i64))]
    pub host_pct: u32,
    /// Host accesses the --host-pct points are drawn from (1..=1000000000).
    #[arg(long, value_name = "ACCESSES", default_value_t = DEFAULT_HOST_PCT_STEPS,
          value_parser = clap::value_parser!(u64).range(1..=MAX_HOST_PCT_STEPS))]
    pub host_pct_steps: u64,
}

/// A host schedule as reports and trace headers name it (`host`).
pub fn schedule_json(s: &HostSchedule) -> serde_json::Value {
    serde_json::json!({"jitter_cycles": s.jitter_cycles, "pct_points": s.pct.map_or(0, |p| p.points),
                       "pct_steps": s.pct.map(|p| p.steps)})
}

/// `--host-jitter` of `race` on the seeds that draw host jitter (about
/// half, when the option is not given): its workloads hunt bugs on both
/// sides of the protocol.
pub const RACE_HOST_JITTER: u64 = 2000;
/// Default `--host-pct-steps`: about the host accesses of one seed of the
/// race workloads at their default sizes.
pub const DEFAULT_HOST_PCT_STEPS: u64 = 20_000;

impl HostArgs {
    /// The schedule a report was measured under, `--host-jitter`
    /// defaulting to `default_jitter` (`compare` notes a difference:
    /// jitter alone moves throughput).
    pub fn report(&self, default_jitter: u64) -> serde_json::Value {
        schedule_json(&self.schedule(default_jitter))
    }

    /// The schedule these options ask for, `--host-jitter` defaulting to
    /// `default_jitter`.
    pub fn schedule(&self, default_jitter: u64) -> HostSchedule {
        HostSchedule {
            jitter_cycles: self.host_jitter.unwrap_or(default_jitter),
            pct: (self.host_pct > 0).then_some(HostPct { points: self.host_pct, steps: self.host_pct_steps }),
        }
    }

    /// Refuses what does not go together: PCT steps without PCT, more
    /// points than steps, any of them on a device other than the embedded
    /// simulator (`device`, when the command takes one).
    pub fn validate(&self, given: &Given<'_>, device: Option<&str>) -> Result<(), Usage> {
        if self.host_pct == 0 {
            given.refuse(&["host_pct_steps"], || "needs --host-pct above 0 (host PCT is off)".into())?;
        }
        crate::usage::ensure(self.host_pct as u64 <= self.host_pct_steps, || {
            format!(
                "--host-pct {} needs as many distinct accesses: --host-pct-steps {}",
                self.host_pct, self.host_pct_steps
            )
        })?;
        if let Some(spec) = device.filter(|d| !(*d == "embedded" || d.starts_with("embedded:"))) {
            given.refuse(&["host_jitter", "host_pct", "host_pct_steps"], || {
                format!(
                    "needs the embedded simulator (--device {spec} runs the device on its own clock, not by a seed)"
                )
            })?;
        }
        Ok(())
    }

    /// The options, written out so a replay line runs the same schedule
    /// whatever the defaults become (none for a command whose default is
    /// off and that runs it off: it may run on a device without a seed). A
    /// jitter given, 0 too, is written: where none is given a command may
    /// draw one per seed (`race`), so leaving out `--host-jitter 0` would
    /// run its replay, or a `--jobs` child, on another schedule.
    pub fn argv(&self, default_jitter: u64) -> Vec<String> {
        let s = self.schedule(default_jitter);
        let mut v = Vec::new();
        if s.jitter_cycles > 0 || default_jitter > 0 || self.host_jitter.is_some() {
            v.extend(["--host-jitter".to_owned(), s.jitter_cycles.to_string()]);
        }
        if let Some(p) = s.pct {
            v.extend(["--host-pct".to_owned(), p.points.to_string(), "--host-pct-steps".into(), p.steps.to_string()]);
        }
        v
    }
}

/// The one usage error type lives in `usage.rs`.
pub use crate::usage::UsageError as Usage;

pub use crate::out::report;

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
    /// `why` is said of one option ("applies to ..."): with several set,
    /// of each.
    pub fn refuse(&self, ids: &[&str], why: impl Fn() -> String) -> Result<(), Usage> {
        let set: Vec<String> =
            ids.iter().filter(|id| self.set(id)).map(|id| format!("--{}", id.replace('_', "-"))).collect();
        crate::usage::ensure(set.is_empty(), || match set.len() {
            1 => format!("{} {}", set[0], why()),
            _ => format!("{}: each {}", set.join(", "), why()),
        })
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

/// An error's first line, with its causes (`{:#}`): what a JSON report
/// keeps of it, since a driver error's text goes on with its hang dump
/// (kept in fields of its own where a report wants it).
pub fn error_headline(e: &anyhow::Error) -> String {
    format!("{e:#}").lines().next().unwrap_or_default().to_owned()
}

/// What a `--json` report says of the error a run ended in: its exit
/// code, its first line, and a driver error's kind, failing core (with its
/// role) and hang dump as values (`run`'s `failed_point`, `demo`'s
/// `failed`).
pub fn failure_fields(e: &anyhow::Error) -> serde_json::Map<String, serde_json::Value> {
    let driver = e.chain().find_map(|c| c.downcast_ref::<cqlab_driver::DriverError>());
    let v = serde_json::json!({"exit": crate::exit::of_error(e).code(), "error": error_headline(e),
        "kind": driver.map(cqlab_driver::DriverError::kind),
        "core": driver.and_then(failing_core),
        "dump": driver.and_then(cqlab_driver::DriverError::dump)});
    match v {
        serde_json::Value::Object(m) => m,
        _ => unreachable!("a JSON object literal"),
    }
}

/// The core a failure names, with its role (`{"x", "y", "role"}`), where
/// the error names one: a device error's core, a kernel timeout's worker.
fn failing_core(e: &cqlab_driver::DriverError) -> Option<serde_json::Value> {
    use cqlab_driver::DriverError::{Device, KernelTimeout};
    let (Device { core, dump, .. } | KernelTimeout { core, dump, .. }) = e else { return None };
    let role = dump.core(*core).map(|c| c.role.to_string());
    Some(serde_json::json!({"x": core.x, "y": core.y, "role": role}))
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
    drawn(bar)
}

/// A spinner for work of unknown length (same rules as [`progress`]).
pub fn spinner(what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, target());
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]").expect("valid template"));
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    drawn(bar)
}

/// The progress bars made so far (weak: a dropped bar is gone), so that
/// lines printed while one is drawn go above it.
static BARS: std::sync::Mutex<Vec<indicatif::WeakProgressBar>> = std::sync::Mutex::new(Vec::new());

/// `bar`, known to [`above_bars`] until it is finished or dropped. Every
/// bar the CLI draws is made through this.
pub fn drawn(bar: ProgressBar) -> ProgressBar {
    let mut bars = BARS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    bars.retain(|b| b.upgrade().is_some_and(|b| !b.is_finished()));
    bars.push(bar.downgrade());
    bar
}

/// Runs `print`, which writes whole lines on stderr, with the progress bar
/// being drawn (if any) cleared, and draws it again below them: a line
/// written while a bar is drawn lands on the bar's line, and the bar's next
/// redraw wipes it (helper-92: wait-progress lines under `demo`'s bar).
pub fn above_bars<R>(print: impl FnOnce() -> R) -> R {
    // The lock is let go before the bar is: its redraw may take a while.
    let live = {
        let bars = BARS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        bars.iter().rev().filter_map(indicatif::WeakProgressBar::upgrade).find(|b| !b.is_finished() && !b.is_hidden())
    };
    match live {
        Some(bar) => bar.suspend(print),
        None => print(),
    }
}

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    /// A terminal that keeps what is on its screen, line by line.
    #[derive(Clone, Debug, Default)]
    struct Screen(Arc<Mutex<(Vec<String>, usize)>>);

    impl Screen {
        fn shown(&self) -> String {
            self.0.lock().unwrap().0.join("\n")
        }
        fn edit(&self, f: impl FnOnce(&mut Vec<String>, &mut usize)) -> std::io::Result<()> {
            let mut s = self.0.lock().unwrap();
            let (lines, row) = &mut *s;
            if lines.len() <= *row {
                lines.resize(*row + 1, String::new());
            }
            f(lines, row);
            Ok(())
        }
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.edit(|_, row| *row = row.saturating_sub(n))
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.edit(|_, row| *row += n)
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.edit(|lines, row| {
                lines[*row].push_str(s);
                *row += 1;
            })
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            // A carriage return starts the line over.
            self.edit(|lines, row| match s.rsplit_once('\r') {
                Some((_, rest)) => lines[*row] = rest.to_owned(),
                None => lines[*row].push_str(s),
            })
        }
        fn clear_line(&self) -> std::io::Result<()> {
            self.edit(|lines, row| lines[*row].clear())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// While a line is printed above a bar the bar is off the screen, and
    /// it is drawn again after; a finished bar is left alone.
    #[test]
    fn lines_are_printed_with_the_bar_cleared_and_it_is_drawn_again() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let bar = drawn(ProgressBar::with_draw_target(Some(10), target));
        bar.set_style(ProgressStyle::with_template("{msg} {pos}/{len}").unwrap());
        bar.set_message("rounds");
        bar.set_position(3);
        bar.tick();
        assert!(screen.shown().contains("rounds 3/10"), "the bar is drawn: {:?}", screen.shown());
        let during = above_bars(|| screen.shown());
        assert!(!during.contains("rounds"), "the bar was on the screen while the line was printed: {during:?}");
        assert!(screen.shown().contains("rounds 3/10"), "the bar is drawn again: {:?}", screen.shown());
        bar.finish();
        let during = above_bars(|| screen.shown());
        assert!(during.contains("rounds 10/10"), "a finished bar stays: {during:?}");
    }

    /// A wait prints its first line `WAIT_LINE_EVERY` after its first
    /// report, then one every `WAIT_LINE_EVERY`; another wait starts over,
    /// and short waits print nothing. Host instants are made up, so the
    /// test does not depend on how fast the host runs.
    #[test]
    fn a_long_wait_prints_a_line_now_and_then_and_short_ones_none() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut p = WaitLinePacer::default();
        assert!(!p.due(100, at(0)));
        assert!(!p.due(100, at(9)));
        assert!(p.due(100, at(10)));
        assert!(!p.due(100, at(15)));
        assert!(p.due(100, at(20)));
        // Another wait (another start cycle): from its own first report.
        assert!(!p.due(5_000, at(21)));
        assert!(!p.due(5_000, at(30)));
        assert!(p.due(5_000, at(31)));
        // Short waits back to back, each reported once: never a line.
        for (i, s) in (40..100).step_by(5).enumerate() {
            assert!(!p.due(10_000 + i as u64, at(s)), "wait {i}");
        }
    }
}
