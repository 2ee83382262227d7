//! The daemon's stderr lines, written by a thread of their own: a daemon
//! outlives the terminal it was started from, and a stderr nobody drains
//! (`sim serve 2>&1 | less` left paused, a harness reading its pipe only
//! at the end) must not stop it. Lines queue up to [`QUEUED_LINES`];
//! beyond that they are dropped and counted, never waited for (helper-33:
//! a full pipe wedged the device thread, every client timed out, and
//! SIGTERM left a process that could not exit).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Lines a stalled stderr may have waiting before new ones are dropped.
pub const QUEUED_LINES: usize = 1024;

/// A queue of lines and the thread that writes them.
pub struct LineLog {
    queue: SyncSender<String>,
    dropped: Arc<AtomicU64>,
    /// Lines queued, and lines the thread has written (or failed to).
    queued: AtomicU64,
    written: Arc<AtomicU64>,
}

impl LineLog {
    /// A log writing to `out` from a thread of its own; a failed write
    /// (a closed stderr) drops the line. Panics if the thread cannot be
    /// started ([`Self::try_new`] says so instead).
    pub fn new(out: impl Write + Send + 'static, capacity: usize) -> Self {
        Self::try_new(out, capacity).expect("spawning the log thread")
    }

    /// [`Self::new`], failing if the thread cannot be started.
    pub fn try_new(mut out: impl Write + Send + 'static, capacity: usize) -> std::io::Result<Self> {
        let (queue, lines) = sync_channel::<String>(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        let seen = Arc::clone(&dropped);
        let written = Arc::new(AtomicU64::new(0));
        let done = Arc::clone(&written);
        std::thread::Builder::new().name("log".into()).spawn(move || {
            let mut told = 0;
            for line in lines {
                let now = seen.load(Ordering::Relaxed);
                if now > told {
                    let _ = writeln!(out, "({} lines dropped: stderr was not read)", now - told);
                    told = now;
                }
                let _ = writeln!(out, "{line}");
                done.fetch_add(1, Ordering::Release);
            }
        })?;
        Ok(Self { queue, dropped, queued: AtomicU64::new(0), written })
    }

    /// Queues `line`, or drops it when the queue is full. Never blocks.
    pub fn line(&self, line: String) {
        match self.queue.try_send(line) {
            Ok(()) => {
                self.queued.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Waits up to `limit` for the queued lines to be written: before the
    /// process exits, which would lose them, but never for ever.
    pub fn settle(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.written.load(Ordering::Acquire) < self.queued.load(Ordering::Relaxed) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Lines dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The process's [`LineLog`] on stderr, once [`start`]ed.
static STDERR: OnceLock<LineLog> = OnceLock::new();

/// Starts the process's log (its thread), if it has not started yet. The
/// daemon starts it before any of its threads can log
/// (`Server::start`), so no line ever starts it: the first line could be
/// the device thread's panic hook's, and a start that panicked there (no
/// thread to be had) would re-enter the hook, and the log's
/// initialisation within itself, which deadlocks.
pub fn start() -> std::io::Result<()> {
    if STDERR.get().is_none() {
        // Two starts at once: one log is kept; the other's thread ends as
        // its queue is dropped.
        let _ = STDERR.set(LineLog::try_new(std::io::stderr(), QUEUED_LINES)?);
    }
    Ok(())
}

/// Whether [`start`] has started the log.
pub fn started() -> bool {
    STDERR.get().is_some()
}

/// The process's log, started now if it was not (never panicking: a log
/// that cannot start is `None`, and the line is dropped).
fn stderr() -> Option<&'static LineLog> {
    let _ = start();
    STDERR.get()
}

/// A line on the daemon's stderr ([`LineLog`] of the process).
pub fn line(text: String) {
    #[cfg(test)]
    LOGGED.lock().expect("not poisoned").push(text.clone());
    if let Some(log) = stderr() {
        log.line(text);
    }
}

/// Every line this process logged, for the tests that check what the
/// daemon said (its stderr is the test runner's).
#[cfg(test)]
static LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

#[cfg(test)]
pub(crate) fn logged() -> Vec<String> {
    LOGGED.lock().expect("not poisoned").clone()
}

/// The last line of a daemon that stops: written, or given up on after a
/// second.
pub fn last_line(text: String) {
    if let Some(log) = stderr() {
        log.line(text);
        log.settle(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Receiver};

    /// A writer that stands still until told to go on: a pipe nobody reads.
    struct Stalled(Receiver<()>);

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.recv();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_writer_drops_lines_and_never_blocks_the_caller() {
        let (_go, stalled) = channel();
        let log = LineLog::new(Stalled(stalled), 4);
        let start = Instant::now();
        for i in 0..100 {
            log.line(format!("line {i}"));
        }
        assert!(start.elapsed() < Duration::from_secs(5), "a line waited for the writer");
        // The thread holds one line, the queue four: the rest are dropped.
        assert!((95..=96).contains(&log.dropped()), "{}", log.dropped());
        // Settling gives up on a writer that stands still.
        let start = Instant::now();
        log.settle(Duration::from_millis(50));
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn settling_waits_for_the_lines_to_be_written() {
        let (tx, rx) = channel::<String>();
        struct Lines(std::sync::mpsc::Sender<String>);
        impl Write for Lines {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_millis(2));
                let _ = self.0.send(String::from_utf8_lossy(buf).into_owned());
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let log = LineLog::new(Lines(tx), 16);
        for i in 0..10 {
            log.line(format!("line {i}"));
        }
        log.settle(Duration::from_secs(10));
        let got: String = rx.try_iter().collect();
        assert_eq!(got.lines().count(), 10, "{got}");
    }
}
