//! The daemon's server: one device thread owns the [`Chip`] and serves
//! requests one at a time in arrival order; one thread accepts connections
//! and one per connection decodes frames and forwards them. The caller
//! (`cqlab sim serve`) decides when to stop: a signal, or STOP on the wire.
//!
//! Who may do what is decided here, not by clients:
//! - a peer of another uid is refused before any frame is read
//!   (`SO_PEERCRED`);
//! - the connection whose HELLO was accepted owns the device until it
//!   DETACHes or closes; a HELLO from any other connection meanwhile is
//!   refused and changes nothing; WRITE, READ, POLL and RESET come from the
//!   owner only; STOP from the owner, from anyone while nobody owns the
//!   device, or with the force flag (`cqlab sim stop --force`);
//! - read-only requests (CORE_DEBUG, STATUS, PEEK) need no ownership and
//!   change nothing, so `cqlab status` can look at a device in the middle of
//!   another client's run without disturbing it;
//! - frames are capped at [`proto::MAX_FRAME`] bytes and open connections at
//!   [`MAX_CONNECTIONS`]; on a connection that does not own the device a
//!   frame must arrive whole within the idle timeout of its first byte, and
//!   the connection is closed after that long without a request, so silent
//!   connections cannot fill the cap and lock everyone out (`sim stop
//!   --force` included). The owner may stay silent, between frames or in
//!   the middle of one: a client between runs, or stopped in a debugger or
//!   by SIGSTOP while it sends, is legitimate, and its death closes the
//!   socket.
//!
//! The device advances only when the owner polls; with no owner it idles,
//! keeping its memory. Every accepted HELLO starts from a quiet device: the
//! device thread holds every core in reset, delivers every NOC transaction
//! still in flight and zeroes the cores' semaphores (the firmware counts them
//! from zero after boot), keeping L1, DRAM, sysmem and each core's last PC
//! for post-mortems. A previous owner that ended without DETACH is logged and
//! reported in HELLO's `recovered_from`.
//!
//! A panic of the device thread (a simulator bug) takes the device with it:
//! its message and place are logged once, and from then on every request of
//! every connection, those open at the time and any later one, is answered
//! with that panic instead of a bare closed connection. The daemon keeps its
//! socket to say so rather than exiting: a client that found no daemon would
//! read "start one with `cqlab sim serve`" and never learn why it went (a
//! campaign of a thousand runs would fail a thousand times without a cause).
//! Any STOP then ends it, and [`Server::wait`] reports the panic, so `cqlab
//! sim serve` exits 1 having removed its files as a normal stop does.
//!
//! The accept thread ending (a panic, or a listener that fails for good:
//! EBADF, EINVAL, ENOTSOCK, EOPNOTSUPP, EFAULT; a full descriptor table and
//! the like are retried) stops the daemon at once: logged, then
//! [`Server::wait`] returns and reports it, and `cqlab sim serve` exits 1
//! with its files removed. No client could connect to be told, and a daemon
//! that kept its socket without accepting left every new client waiting.

use super::files::{self, DevicePaths, FileError};
use super::proto::{self, ChipInfo, CoreView, L0View, Reply, Request, Status};
use crate::chip::CoreId;
use crate::chip::{Chip, SimError};
use crate::config::SimConfig;
use crate::memory::Sysmem;
use cqlab_abi::arch::tensix::{self, Processor};
use cqlab_abi::noc::{Coord, NocAddr};
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
use std::cell::RefCell;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A line on the daemon's stderr ([`super::log`]): a closed or full
/// stderr drops the line, never stops the daemon.
macro_rules! log {
    ($($t:tt)*) => {
        super::log::line(format!($($t)*))
    };
}

/// Most cycles one POLL may ask for (a client cannot stall the daemon).
pub const MAX_POLL_CYCLES: u64 = 100_000_000;
/// Budget for draining NOC transactions when quiescing for a new owner.
const QUIESCE_BUDGET_CYCLES: u64 = 10_000_000;
/// Most connections open at once; more are told so and closed.
pub const MAX_CONNECTIONS: usize = 16;
/// How long the daemon waits before accepting again after accept failed.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);
/// The default of [`ServeOptions::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// How a daemon serves, besides its chip.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Do not log attaches, resets, recoveries and closed connections.
    pub quiet: bool,
    /// How long a connection that does not own the device may stay silent
    /// before it is closed, and how long a frame may take to arrive once its
    /// first byte has.
    pub idle_timeout: Duration,
    /// Tests only: the device thread panics while it serves a POLL of this
    /// many cycles, so that a test can see what a panic does to clients and
    /// to the daemon (nothing else makes the device thread panic on
    /// purpose, and no build outside this crate's tests has the field).
    #[cfg(test)]
    pub panic_on_poll_cycles: Option<u64>,
    /// Tests only: the device thread panics while it serves a STOP (a STOP
    /// queued when the device thread panics).
    #[cfg(test)]
    pub panic_on_stop: bool,
    /// Tests only: the accept thread panics once it has accepted this
    /// many connections.
    #[cfg(test)]
    pub panic_on_accept: Option<u64>,
    /// Tests only: the accept thread shuts its listener down (shutdown(2))
    /// once it has accepted this many connections, so that its next accept
    /// fails with EINVAL, as on a listener broken under it.
    #[cfg(test)]
    pub shut_listener_after: Option<u64>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            quiet: false,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            #[cfg(test)]
            panic_on_poll_cycles: None,
            #[cfg(test)]
            panic_on_stop: false,
            #[cfg(test)]
            panic_on_accept: None,
            #[cfg(test)]
            shut_listener_after: None,
        }
    }
}

/// A panic of one of the daemon's threads (the device thread, the accept
/// thread): where, and what it said.
#[derive(Clone, Debug)]
pub struct ThreadPanic {
    /// `panicked at FILE:LINE:COL: MESSAGE`.
    pub what: String,
    /// The backtrace, when `RUST_BACKTRACE` asks for one (for the log only).
    pub backtrace: Option<String>,
}

/// Set once, by the device thread's panic, and read by every connection.
type DeviceFailure = Arc<OnceLock<ThreadPanic>>;

/// Where the device thread's panic goes: the log (which names `dir`) and
/// the [`DeviceFailure`] every connection reads.
#[derive(Clone)]
struct PanicSink {
    failure: DeviceFailure,
    dir: PathBuf,
}

impl PanicSink {
    /// Logs `panic`, then makes it what every request is answered with: in
    /// that order, so a client told of the panic can find it in the log.
    fn record(&self, panic: ThreadPanic) {
        log!(
            "cqlab sim serve: the device thread {}; the simulated device is gone. Every client is answered with this \
             panic until `cqlab sim stop --dev {}` (or Ctrl-C) ends the daemon, which then exits 1.{}",
            panic.what,
            self.dir.display(),
            panic.backtrace.as_ref().map_or_else(String::new, |b| format!("\n{b}"))
        );
        let _ = self.failure.set(panic);
    }
}

thread_local! {
    /// Where a panic of this thread goes, for the daemon's threads that
    /// record theirs (the device thread's [`PanicSink`], the accept
    /// thread's): called by [`record_thread_panics`]' hook as the panic
    /// happens, before unwinding drops the device thread's reply channels,
    /// so a connection that sees its channel close can already read why.
    static THREAD_PANIC: RefCell<Option<PanicTo>> = const { RefCell::new(None) };
}

/// What a thread's recorded panic is handed to ([`THREAD_PANIC`]).
type PanicTo = Rc<dyn Fn(ThreadPanic)>;

/// Installs, once per process, a panic hook that hands a daemon thread's
/// panic to its sink ([`THREAD_PANIC`]) instead of printing it: the default
/// hook writes to stderr and could block there (a stderr nobody reads),
/// where the daemon's log never waits ([`super::log`]). Panics of any other
/// thread go to the hook that was there before.
fn record_thread_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let sink = THREAD_PANIC.try_with(|d| d.borrow().clone()).ok().flatten();
            let Some(sink) = sink else { return previous(info) };
            let place = info.location().map_or_else(|| "an unknown place".into(), |l| l.to_string());
            let backtrace = std::backtrace::Backtrace::capture();
            sink(ThreadPanic {
                what: format!("panicked at {place}: {}", panic_text(info.payload())),
                backtrace: (backtrace.status() == std::backtrace::BacktraceStatus::Captured)
                    .then(|| backtrace.to_string()),
            });
        }));
    });
}

/// A panic's message (`panic!`'s text, or what its payload is).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic payload that is not text".into(),
    }
}

/// What every request gets once the device thread has panicked.
fn device_gone(panic: &ThreadPanic, dir: &Path) -> String {
    format!(
        "the daemon's device thread {}: the simulated device is gone (a simulator bug; the daemon's log has the \
         details); stop this daemon with `cqlab sim stop --dev {}` and start a new one",
        panic.what,
        dir.display()
    )
}

/// The device thread: [`device_loop`], and if it panics, the panic logged
/// and left in `shared.failure` for every connection to answer with.
fn run_device(
    chip: Chip,
    info: ChipInfo,
    jobs: Receiver<Job>,
    open: Arc<AtomicUsize>,
    opts: ServeOptions,
    shared: Shared,
) {
    let Shared { stop, failure, dir } = shared;
    let sink = PanicSink { failure, dir };
    THREAD_PANIC.with(|d| {
        let sink = sink.clone();
        *d.borrow_mut() = Some(Rc::new(move |panic| sink.record(panic)));
    });
    // Nothing of the loop's state is used after a panic: the device is
    // declared gone, and only `failure` is read.
    let served =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| device_loop(chip, info, jobs, stop, open, opts)));
    // The hook recorded the panic, unless another hook has replaced ours.
    if let (Err(payload), None) = (served, sink.failure.get()) {
        sink.record(ThreadPanic { what: format!("panicked: {}", panic_text(&*payload)), backtrace: None });
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Files(#[from] FileError),
    #[error("powering on the chip: {0}")]
    Chip(#[from] SimError),
    #[error("{0}")]
    Refused(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

/// A request for the device thread, with where its reply goes.
enum Job {
    Request {
        conn: u64,
        pid: u32,
        req: Request,
        reply: Sender<Reply>,
        /// A handle on the connection, with HELLO (the owner's, to notice
        /// its death), STOP and RESET (not carried out for a client that
        /// gave up waiting while they queued).
        stream: Option<UnixStream>,
    },
    /// The connection closed (or failed); its ownership, if any, ends.
    Closed { conn: u64 },
}

/// The connection that owns the device.
struct Owner {
    conn: u64,
    pid: u32,
    /// A handle on its socket, to notice a dead owner whose close is still
    /// on its way to the device thread.
    stream: UnixStream,
}

/// Files this start created, removed again if the start fails.
struct Cleanup {
    files: Vec<PathBuf>,
    dir: Option<PathBuf>,
}

impl Cleanup {
    fn undo(&mut self) {
        for f in self.files.drain(..).rev() {
            let _ = std::fs::remove_file(f);
        }
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// A running daemon. [`Server::wait`] returns when it is told to stop.
pub struct Server {
    /// The directory's lock ([`files::lock_dir`]), held while it serves.
    _serving: nix::fcntl::Flock<std::fs::File>,
    paths: DevicePaths,
    stop_tx: Sender<String>,
    stop_rx: Receiver<String>,
    failure: DeviceFailure,
    /// Why the accept thread ended, once it has ([`run_accept`]).
    accept_ended: Arc<OnceLock<String>>,
}

/// How a daemon ended ([`Server::wait`]).
#[derive(Debug)]
pub struct Stopped {
    /// What stopped it: a signal's name, `` `cqlab sim stop` ``.
    pub why: String,
    /// The device thread's panic, if it had panicked: the daemon answered
    /// every request with it since, and failed.
    pub device_panic: Option<ThreadPanic>,
    /// Why the accept thread ended (its panic, or its listener's error), if
    /// that stopped the daemon: it failed.
    pub accept_ended: Option<String>,
}

impl Server {
    /// Prepares the device directory (see [`files`]), powers on the chip and
    /// starts serving. On failure everything this call created is removed.
    pub fn start(dev: &Path, cfg: SimConfig, opts: ServeOptions) -> Result<Server, ServeError> {
        // Before any thread of the daemon can log: see `log::start`.
        super::log::start().map_err(|source| ServeError::Io { what: "starting the log thread".into(), source })?;
        let paths = DevicePaths::new(dev);
        files::check_socket_path(&paths)?;
        let mut cleanup = Cleanup { files: Vec::new(), dir: None };
        match Self::start_inner(&paths, cfg, opts, &mut cleanup) {
            Ok(s) => Ok(s),
            Err(e) => {
                cleanup.undo();
                Err(e)
            }
        }
    }

    fn start_inner(
        paths: &DevicePaths,
        cfg: SimConfig,
        opts: ServeOptions,
        cleanup: &mut Cleanup,
    ) -> Result<Self, ServeError> {
        let dev = &paths.dir;
        if files::prepare_dir(dev)? {
            cleanup.dir = Some(dev.clone());
        }
        // Refused: the directory is another simulator's now (even if this
        // start made it), so nothing of it is removed.
        let serving = files::lock_dir(dev, files::Simulator::Serve).inspect_err(|_| cleanup.dir = None)?;
        let sock = paths.socket();
        if std::fs::symlink_metadata(&sock).is_ok() {
            if UnixStream::connect(&sock).is_ok() {
                let pid = std::fs::read_to_string(paths.pid()).unwrap_or_default();
                return Err(ServeError::Refused(format!(
                    "a daemon already serves {} (pid {}); stop it with `cqlab sim stop --dev {}`",
                    dev.display(),
                    pid.trim(),
                    dev.display()
                )));
            }
            files::remove_stale_socket(&sock)?;
        }
        let sysmem_path = paths.sysmem();
        let sysmem = files::create_private(&sysmem_path)?;
        cleanup.files.push(sysmem_path.clone());
        sysmem.set_len(cfg.sysmem_size as u64).map_err(|source| ServeError::Io {
            what: format!("sizing {} to {} bytes", sysmem_path.display(), cfg.sysmem_size),
            source,
        })?;
        let map = files::map_shared(&sysmem, &sysmem_path, cfg.sysmem_size)?;
        // The lock file is kept if present (a client may be waiting on it).
        let lock = paths.lock();
        let had_lock = std::fs::symlink_metadata(&lock).is_ok();
        files::open_or_create_private(&lock)?;
        if !had_lock {
            cleanup.files.push(lock);
        }
        let chip = Chip::with_sysmem(cfg.clone(), Sysmem::External(Box::new(map)))?;
        // The pid file first, then the socket: whoever sees `sock` can read
        // the pid of the daemon behind it.
        let pid_path = paths.pid();
        let mut pid_file = files::create_private(&pid_path)?;
        cleanup.files.push(pid_path.clone());
        std::io::Write::write_all(&mut pid_file, std::process::id().to_string().as_bytes())
            .map_err(|source| ServeError::Io { what: format!("writing {}", pid_path.display()), source })?;
        // `bind` creates the socket file before `listen` lets it accept, and
        // a connect in between is refused (ECONNREFUSED) as if the daemon
        // had died. So bind and listen under a private name, and publish the
        // socket under `sock` only once it accepts: `sock` existing means
        // ready. A hard link publishes without replacing: a daemon started
        // concurrently on the same directory fails here instead of hiding
        // the other's socket.
        let staging = paths.staging_socket();
        files::remove_stale_socket(&staging)?;
        let listener = UnixListener::bind(&staging)
            .map_err(|source| ServeError::Io { what: format!("binding {}", staging.display()), source })?;
        cleanup.files.push(staging.clone());
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(files::FILE_MODE))
            .map_err(|source| ServeError::Io { what: format!("setting the mode of {}", staging.display()), source })?;
        std::fs::hard_link(&staging, &sock).map_err(|source| match source.kind() {
            std::io::ErrorKind::AlreadyExists => ServeError::Refused(format!(
                "{} appeared while this daemon started: another daemon serves {}",
                sock.display(),
                dev.display()
            )),
            _ => ServeError::Io { what: format!("publishing {} as {}", staging.display(), sock.display()), source },
        })?;
        cleanup.files.push(sock.clone());
        std::fs::remove_file(&staging)
            .map_err(|source| ServeError::Io { what: format!("removing {}", staging.display()), source })?;
        cleanup.files.retain(|f| *f != staging);

        let info = ChipInfo {
            version: proto::VERSION,
            daemon_pid: std::process::id(),
            seed: cfg.seed,
            board: cfg.board.name().to_string(),
            harvesting: cfg.harvesting.to_string(),
            sysmem_size: cfg.sysmem_size as u64,
            recovered_from: 0,
            model: proto::TimingModel::of(&cfg),
        };
        let (stop_tx, stop_rx) = channel::<String>();
        let (job_tx, job_rx) = channel::<Job>();
        let open = Arc::new(AtomicUsize::new(0));
        let failure = DeviceFailure::default();
        let accept_ended = Arc::new(OnceLock::new());
        record_thread_panics();
        let spawn_err = |source| ServeError::Io { what: "starting a daemon thread".into(), source };
        let shared = Shared { stop: stop_tx.clone(), failure: failure.clone(), dir: dev.clone() };
        std::thread::Builder::new()
            .name("device".into())
            .spawn({
                let (open, opts, shared) = (open.clone(), opts.clone(), shared.clone());
                move || run_device(chip, info, job_rx, open, opts, shared)
            })
            .map_err(spawn_err)?;
        std::thread::Builder::new()
            .name("accept".into())
            .spawn({
                let ended = accept_ended.clone();
                move || run_accept(listener, job_tx, shared, open, opts, &ended)
            })
            .map_err(spawn_err)?;
        cleanup.files.clear();
        cleanup.dir = None;
        Ok(Server { _serving: serving, paths: paths.clone(), stop_tx, stop_rx, failure, accept_ended })
    }

    /// A handle that stops the daemon (for a signal thread).
    pub fn stopper(&self) -> Sender<String> {
        self.stop_tx.clone()
    }

    /// The device directory.
    pub fn paths(&self) -> &DevicePaths {
        &self.paths
    }

    /// Waits for a stop, removes the socket and pid file, and says why it
    /// stopped, whether its device thread had panicked and whether its
    /// accept thread had ended.
    pub fn wait(self) -> Stopped {
        let why = self.stop_rx.recv().unwrap_or_else(|_| "every sender gone".into());
        let _ = std::fs::remove_file(self.paths.socket());
        let _ = std::fs::remove_file(self.paths.pid());
        Stopped { why, device_panic: self.failure.get().cloned(), accept_ended: self.accept_ended.get().cloned() }
    }
}

/// What the device thread and every connection share: a way to stop the
/// daemon, and the device thread's panic once it has panicked.
#[derive(Clone)]
struct Shared {
    stop: Sender<String>,
    failure: DeviceFailure,
    /// The device directory, for messages.
    dir: PathBuf,
}

impl Shared {
    /// The reply to `req` once the device thread has panicked (`None`
    /// while it runs): the panic, or for STOP, the stop (the device has no
    /// owner left to refuse it for).
    fn answer_without_device(&self, req: &Request) -> Option<Reply> {
        let panic = self.failure.get()?;
        Some(self.reply_after_panic(panic, matches!(req, Request::Stop { .. })))
    }

    /// The reply once the device thread has `panic`ked: the panic, or for a
    /// STOP (`stop`), the stop.
    fn reply_after_panic(&self, panic: &ThreadPanic, stop: bool) -> Reply {
        let result = if stop {
            let _ = self.stop.send(format!("`cqlab sim stop` after the device thread {}", panic.what));
            Ok(Vec::new())
        } else {
            Err(device_gone(panic, &self.dir))
        };
        Reply { now: 0, result }
    }
}

/// The accept thread: [`accept_loop`], which ends only when its listener
/// fails for good, or a panic. Either way no client can connect any more:
/// logged, left in `ended` for [`Server::wait`], and the daemon stopped.
fn run_accept(
    listener: UnixListener,
    jobs: Sender<Job>,
    shared: Shared,
    open: Arc<AtomicUsize>,
    opts: ServeOptions,
    ended: &OnceLock<String>,
) {
    let (stop, dir) = (shared.stop.clone(), shared.dir.clone());
    let panicked = Rc::new(OnceLock::new());
    THREAD_PANIC.with(|d| {
        let panicked = panicked.clone();
        *d.borrow_mut() = Some(Rc::new(move |panic: ThreadPanic| {
            let _ = panicked.set(panic);
        }));
    });
    let served =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| accept_loop(listener, jobs, shared, open, opts)));
    let (what, backtrace) = match (served, panicked.get()) {
        (Ok(e), _) => (format!("stopped: its listener failed ({e})"), None),
        (Err(_), Some(p)) => (p.what.clone(), p.backtrace.clone()),
        // The hook recorded nothing: another hook has replaced ours.
        (Err(payload), None) => (format!("panicked: {}", panic_text(&*payload)), None),
    };
    log!(
        "cqlab sim serve: the accept thread {what}; no client can connect any more, so the daemon at {} stops and \
         exits 1.{}",
        dir.display(),
        backtrace.map_or_else(String::new, |b| format!("\n{b}"))
    );
    // Before the stop: `Server::wait` reads it once stopped.
    let _ = ended.set(what.clone());
    let _ = stop.send(format!("the accept thread's end (it {what})"));
}

/// Whether an accept error is the listener's own (it will fail every time
/// from now on), rather than one of the moment (out of descriptors or
/// memory, a connection aborted before it was taken) that a retry outlives.
fn listener_broken(e: &std::io::Error) -> bool {
    use nix::errno::Errno;
    e.raw_os_error().is_some_and(|c| {
        [Errno::EBADF, Errno::EINVAL, Errno::ENOTSOCK, Errno::EOPNOTSUPP, Errno::EFAULT].contains(&Errno::from_raw(c))
    })
}

/// Accepts connections until the listener fails for good; returns that error.
fn accept_loop(
    listener: UnixListener,
    jobs: Sender<Job>,
    shared: Shared,
    open: Arc<AtomicUsize>,
    opts: ServeOptions,
) -> std::io::Error {
    let me = nix::unistd::Uid::effective().as_raw();
    // The last accept error logged, so a persistent one (out of file
    // descriptors) is said once, not at every retry.
    let mut failing: Option<std::io::ErrorKind> = None;
    let mut conn = 0u64;
    loop {
        conn += 1;
        let stream = match listener.accept() {
            Ok((s, _)) => {
                failing = None;
                s
            }
            Err(e) if listener_broken(&e) => return e,
            Err(e) => {
                // A pending connection stays queued while accept fails
                // (EMFILE, ENFILE, ENOBUFS): retrying at once spun a core
                // (helper-78). Back off, and say why once.
                if failing != Some(e.kind()) {
                    failing = Some(e.kind());
                    let hint = if e.raw_os_error().is_some_and(|c| {
                        [nix::errno::Errno::EMFILE, nix::errno::Errno::ENFILE].contains(&nix::errno::Errno::from_raw(c))
                    }) {
                        " (out of file descriptors: raise `ulimit -n`, or close clients); retrying every \
                         50 ms"
                    } else {
                        "; retrying every 50 ms"
                    };
                    log!("cqlab sim serve: cannot accept a connection: {e}{hint}");
                }
                std::thread::sleep(ACCEPT_RETRY);
                continue;
            }
        };
        #[cfg(test)]
        {
            if opts.panic_on_accept == Some(conn) {
                panic!("the test's panic, asked for on accepting connection {conn}");
            }
            if opts.shut_listener_after == Some(conn) {
                use std::os::fd::AsRawFd;
                let _ = nix::sys::socket::shutdown(listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
            }
        }
        let refuse = |stream: &UnixStream, why: String| {
            let mut w = stream;
            let _ = proto::write_frame(&mut w, &Reply { now: 0, result: Err(why) }.encode());
        };
        let cred = match getsockopt(&stream.as_fd(), PeerCredentials) {
            Ok(c) => c,
            Err(e) => {
                refuse(&stream, format!("cannot read the peer's credentials (SO_PEERCRED): {e}"));
                continue;
            }
        };
        if cred.uid() != me {
            refuse(
                &stream,
                format!("connection refused: peer uid {} is not the daemon's uid {me} (SO_PEERCRED)", cred.uid()),
            );
            continue;
        }
        if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            refuse(
                &stream,
                format!(
                    "connection refused: {MAX_CONNECTIONS} {} (one that does not hold the device is closed after \
                     {} s without a request: retry)",
                    proto::CONNECTION_CAP_REFUSAL,
                    opts.idle_timeout.as_secs_f64()
                ),
            );
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (jobs, shared, open) = (jobs.clone(), shared.clone(), open.clone());
        let pid = u32::try_from(cred.pid()).unwrap_or(0);
        let spawned = std::thread::Builder::new().name(format!("conn-{conn}")).spawn({
            let open = open.clone();
            let opts = opts.clone();
            move || {
                serve_connection(conn, pid, stream, &jobs, &shared, &opts);
                let _ = jobs.send(Job::Closed { conn });
                open.fetch_sub(1, Ordering::SeqCst);
            }
        });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Decodes one connection's frames and forwards them to the device thread.
fn serve_connection(conn: u64, pid: u32, stream: UnixStream, jobs: &Sender<Job>, shared: &Shared, opts: &ServeOptions) {
    // Whether this connection owns the device, as its replies said: HELLO
    // accepted until DETACH accepted. Only a non-owner's silence is bounded.
    let mut owner = false;
    loop {
        match wait_readable(&stream, (!owner).then_some(opts.idle_timeout)) {
            Readable::Yes => {}
            Readable::Failed => return,
            Readable::TimedOut => {
                // Said as a reply: a client that sends a request later reads
                // why its connection is gone.
                let why = format!(
                    "connection closed by the daemon: no request for {} s from a connection that does not hold \
                     the device",
                    opts.idle_timeout.as_secs_f64()
                );
                let mut w = &stream;
                let _ = proto::write_frame(&mut w, &Reply { now: 0, result: Err(why) }.encode());
                if !opts.quiet {
                    log!(
                        "cqlab sim serve: closed connection {conn} (pid {pid}): silent for {} s without holding \
                         the device",
                        opts.idle_timeout.as_secs_f64()
                    );
                }
                return;
            }
        }
        // The owner's frames have no deadline (module doc): one cut off
        // for a SIGSTOP in the middle of a large WRITE lost the device
        // (helper-78).
        let mut r = Deadline { stream: &stream, until: (!owner).then(|| Instant::now() + opts.idle_timeout) };
        let reply = match proto::read_frame(&mut r) {
            Ok(None) => return,
            Ok(Some(frame)) => match Request::decode(&frame) {
                Ok(req) => {
                    // A client that closed before its request was read (the
                    // daemon was stopped, or busy past the client's timeout)
                    // has reported failure: carrying the request out now
                    // would act for nobody (a forced STOP 67 s late).
                    if peer_gone(&stream) {
                        if !opts.quiet {
                            log!(
                                "cqlab sim serve: dropped {} from connection {conn} (pid {pid}): its client closed \
                                 before it was served",
                                req.name()
                            );
                        }
                        return;
                    }
                    if let Some(reply) = shared.answer_without_device(&req) {
                        reply
                    } else {
                        let (reply_tx, reply_rx) = channel();
                        let handle = match req {
                            Request::Hello { .. } | Request::Stop { .. } | Request::Reset => match stream.try_clone() {
                                Ok(h) => Some(h),
                                Err(_) => return,
                            },
                            _ => None,
                        };
                        let (hello, detach) = (matches!(req, Request::Hello { .. }), matches!(req, Request::Detach));
                        let stop = matches!(req, Request::Stop { .. });
                        let name = req.name();
                        let sent = jobs.send(Job::Request { conn, pid, req, reply: reply_tx, stream: handle });
                        match sent.ok().and_then(|()| reply_rx.recv().ok()) {
                            Some(r) => {
                                if r.result.is_ok() && (hello || detach) {
                                    owner = hello;
                                }
                                r
                            }
                            // The device thread is gone: it panicked (with this
                            // request queued, or serving it), and its hook has
                            // recorded why. A STOP that was on its way stops
                            // the daemon, as one sent after the panic does (it
                            // was answered "stop this daemon with `cqlab sim
                            // stop`", the command its client had just run).
                            None => match shared.failure.get() {
                                Some(panic) => shared.reply_after_panic(panic, stop),
                                None => {
                                    log!(
                                        "cqlab sim serve: dropped connection {conn} (pid {pid}): the device thread \
                                         ended while serving its {name}"
                                    );
                                    return;
                                }
                            },
                        }
                    }
                }
                Err(e) => Reply { now: 0, result: Err(format!("bad request: {e}")) },
            },
            Err(e) => {
                // Oversized, cut or too slow a frame: say why, then drop the
                // connection (the stream is no longer at a frame boundary).
                let why = match e.kind() {
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                        format!("bad frame: not complete {} s after its first byte", opts.idle_timeout.as_secs_f64())
                    }
                    _ => format!("bad frame: {e}"),
                };
                // Said here too: an owner's end then reads "without
                // detaching", and this is why (helper-33).
                if !opts.quiet {
                    log!("cqlab sim serve: dropped connection {conn} (pid {pid}): {why}");
                }
                let mut w = &stream;
                let _ = proto::write_frame(&mut w, &Reply { now: 0, result: Err(why) }.encode());
                return;
            }
        };
        // A non-owner that stops reading its reply must not hold a
        // connection either; the owner's client may sit in a debugger.
        let write_limit = (!owner).then_some(opts.idle_timeout);
        if stream.set_write_timeout(write_limit).is_err() {
            return;
        }
        let mut w = &stream;
        if proto::write_frame(&mut w, &reply.encode()).is_err() {
            return;
        }
    }
}

enum Readable {
    Yes,
    TimedOut,
    Failed,
}

/// Waits until `stream` has a byte (or its end) to read, at most `limit`
/// (forever with `None`).
fn wait_readable(stream: &UnixStream, limit: Option<Duration>) -> Readable {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let deadline = limit.map(|l| Instant::now() + l);
    loop {
        let timeout = match deadline {
            None => PollTimeout::NONE,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now()).as_millis();
                PollTimeout::try_from(left.min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX)
            }
        };
        let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) => return Readable::TimedOut,
            Ok(_) => return Readable::Yes,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return Readable::Failed,
        }
    }
}

/// A stream read against one deadline for a whole frame: each read may
/// wait only for what is left of it (a per-read timeout alone would let a
/// byte every few seconds hold a connection forever). `None`: no deadline.
struct Deadline<'a> {
    stream: &'a UnixStream,
    until: Option<Instant>,
}

impl std::io::Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = match self.until {
            Some(until) => {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                Some(left)
            }
            None => None,
        };
        self.stream.set_read_timeout(left)?;
        let mut s = self.stream;
        s.read(buf)
    }
}

/// True when the peer of `stream` has closed (or the socket failed): Linux
/// reports POLLHUP on a Unix stream socket once its peer is fully closed.
fn peer_gone(stream: &UnixStream) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(stream.as_fd(), PollFlags::empty())];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => false,
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL)),
        Err(_) => true,
    }
}

fn device_loop(
    mut chip: Chip,
    mut info: ChipInfo,
    jobs: Receiver<Job>,
    stop: Sender<String>,
    open: Arc<AtomicUsize>,
    opts: ServeOptions,
) {
    let quiet = opts.quiet;
    let mut owner: Option<Owner> = None;
    // Pid of an owner that closed without DETACH, for the next HELLO.
    let mut vanished = 0u32;
    while let Ok(job) = jobs.recv() {
        let (conn, pid, req, reply, stream) = match job {
            Job::Closed { conn } => {
                if owner.as_ref().is_some_and(|o| o.conn == conn) {
                    let o = owner.take().expect("checked");
                    vanished = o.pid;
                    if !quiet {
                        log!("cqlab sim serve: client pid {} ended without detaching (killed?)", o.pid);
                    }
                }
                continue;
            }
            Job::Request { conn, pid, req, reply, stream } => (conn, pid, req, reply, stream),
        };
        // Checked again here: a STOP or RESET may have queued behind a long
        // POLL past its client's timeout.
        if matches!(req, Request::Stop { .. } | Request::Reset) && stream.as_ref().is_some_and(peer_gone) {
            if !quiet {
                log!(
                    "cqlab sim serve: dropped {} from connection {conn} (pid {pid}): its client closed before it was \
                     served",
                    req.name()
                );
            }
            continue;
        }
        // An owner whose socket is closed no longer owns the device, even if
        // its Closed job is still queued behind this request.
        if owner.as_ref().is_some_and(|o| o.conn != conn && peer_gone(&o.stream)) {
            let o = owner.take().expect("checked");
            vanished = o.pid;
            if !quiet {
                log!("cqlab sim serve: client pid {} ended without detaching (killed?)", o.pid);
            }
        }
        let held_by_other = owner.as_ref().filter(|o| o.conn != conn).map(|o| o.pid);
        let is_owner = owner.as_ref().is_some_and(|o| o.conn == conn);
        let refuse = |why: String| Err(why);
        let mut stopping = false;
        let result = match req {
            Request::Hello { version, .. } if version != proto::VERSION => refuse(format!(
                "protocol version {version} requested, this daemon speaks {}: refused, device untouched",
                proto::VERSION
            )),
            Request::Hello { .. } => match (held_by_other, stream) {
                (Some(holder), _) => refuse(format!("device held by pid {holder}: refused, device untouched")),
                (None, None) => refuse("HELLO arrived without its connection handle: refused".into()),
                (None, Some(stream)) => {
                    info.recovered_from = std::mem::take(&mut vanished);
                    let (drained, cycles) = quiesce(&mut chip);
                    let left = chip.in_flight();
                    if left > 0 {
                        log!(
                            "cqlab sim serve: quiescing: {left} NOC transactions still in flight after \
                             {QUIESCE_BUDGET_CYCLES} cycles"
                        );
                    }
                    if !quiet {
                        log!(
                            "cqlab sim serve: client pid {pid} attached (connection {conn}); quiesced: cores held \
                             in reset, {drained} NOC transactions drained in {cycles} cycles, semaphores zeroed"
                        );
                    }
                    owner = Some(Owner { conn, pid, stream });
                    Ok(info.encode())
                }
            },
            Request::Stop { force } => match held_by_other {
                #[cfg(test)]
                _ if opts.panic_on_stop => panic!("the test's panic, asked for on STOP"),
                Some(holder) if !force => refuse(format!(
                    "device held by pid {holder}: only its owner may stop the daemon (`cqlab sim stop --force` stops \
                     it anyway)"
                )),
                _ => {
                    stopping = true;
                    if let (Some(holder), false) = (held_by_other, quiet) {
                        log!("cqlab sim serve: forced stop while pid {holder} holds the device");
                    }
                    Ok(Vec::new())
                }
            },
            Request::Status => Ok(Status {
                chip: info.clone(),
                owner_pid: owner.as_ref().map_or(0, |o| o.pid),
                connections: open.load(Ordering::SeqCst) as u32,
            }
            .encode()),
            Request::Peek { addr, len } => {
                let mut buf = vec![0u8; len as usize];
                chip.read(NocAddr(addr), &mut buf).map(|()| buf).map_err(|e| e.to_string())
            }
            Request::Digest => Ok(chip.digest().to_le_bytes().to_vec()),
            Request::L0Cache => {
                let view = chip.l0_cache().map(|s| L0View {
                    hits: s.hits,
                    stale_hits: s.stale_hits,
                    first_stale: s
                        .first_stale
                        .map(|h| (h.core.tile.packed(), h.core.processor.index() as u8, h.pc, h.addr, h.cycle)),
                });
                Ok(L0View::encode(view.as_ref()))
            }
            Request::CoreDebug { tile, processor } => {
                let id = Processor::ALL
                    .get(processor as usize)
                    .map(|&processor| CoreId { tile: Coord::unpack(tile), processor });
                let view = id.and_then(|id| chip.core_debug(id)).map(|d| CoreView {
                    pc: d.pc,
                    halt: d.halt.map(|h| h.to_string()),
                    last_pcs: d.last_pcs,
                    in_reset: d.in_reset,
                });
                Ok(CoreView::encode(view.as_ref()))
            }
            req if !is_owner => refuse(match held_by_other {
                Some(holder) => format!("{} refused: the device is held by pid {holder}", req.name()),
                None => format!("{} refused: this connection has not attached (send HELLO first)", req.name()),
            }),
            Request::Detach => {
                owner = None;
                Ok(Vec::new())
            }
            Request::Write { addr, data } => {
                chip.timed_write(NocAddr(addr), &data).map(|()| Vec::new()).map_err(|e| e.to_string())
            }
            Request::Read { addr, len } => {
                let mut buf = vec![0u8; len as usize];
                chip.timed_read(NocAddr(addr), &mut buf).map(|()| buf).map_err(|e| e.to_string())
            }
            Request::BarWrite { bar, offset, data } => {
                chip.bar_write(bar, offset, &data).map(|()| Vec::new()).map_err(|e| e.to_string())
            }
            Request::BarRead { bar, offset, len } => {
                let mut buf = vec![0u8; len as usize];
                chip.bar_read(bar, offset, &mut buf).map(|()| buf).map_err(|e| e.to_string())
            }
            Request::Poll { cycles } => {
                #[cfg(test)]
                if opts.panic_on_poll_cycles == Some(cycles) {
                    panic!("the test's panic, asked for with a POLL of {cycles} cycles");
                }
                chip.host_poll(cycles.min(MAX_POLL_CYCLES));
                Ok(Vec::new())
            }
            Request::DramTraffic { reset } => {
                let t = chip.dram_traffic();
                if reset {
                    chip.reset_dram_traffic();
                }
                Ok([t.read_bytes.to_le_bytes(), t.write_bytes.to_le_bytes()].concat())
            }
            Request::Reset => {
                if !quiet {
                    log!("cqlab sim serve: power-on reset");
                }
                info.recovered_from = 0;
                chip.power_on_reset().map(|()| Vec::new()).map_err(|e| e.to_string())
            }
        };
        let _ = reply.send(Reply { now: chip.now(), result });
        if stopping {
            let _ = stop.send("`cqlab sim stop`".into());
        }
    }
}

/// Holds every core in reset and delivers what is in flight (semaphores are
/// L1 words: they keep their values, as on a card). Returns the
/// transactions drained and the cycles it took.
fn quiesce(chip: &mut Chip) -> (usize, u64) {
    let tiles: Vec<Coord> = chip.tensix_tiles().collect();
    for &t in &tiles {
        chip.set_soft_reset(t, tensix::SOFT_RESET_ALL).expect("every Tensix tile has SOFT_RESET_0");
    }
    chip.land_posted_writes();
    let (drained, start) = (chip.in_flight(), chip.now());
    if drained > 0 {
        // Bounded; the caller reports what is left through in_flight().
        let _ = chip.run_until(|c| c.in_flight() == 0, QUIESCE_BUDGET_CYCLES);
    }
    chip.land_posted_writes();
    (drained, chip.now() - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that connects the moment `sock` appears is accepted: the
    /// socket is published only once it listens. (Binding `sock` directly,
    /// a connect between `bind` and `listen` was refused as if the daemon
    /// had died.) A watcher thread spins on connect while the daemon starts,
    /// many times over, to land in that window if it exists.
    #[test]
    fn the_socket_accepts_as_soon_as_it_exists() {
        let cfg = SimConfig { sysmem_size: 1 << 20, ..SimConfig::default() };
        let dir = std::env::temp_dir().join(format!("cqlab-ready-{}", std::process::id()));
        for round in 0..100 {
            let _ = std::fs::remove_dir_all(&dir);
            let sock = DevicePaths::new(&dir).socket();
            let watcher = std::thread::spawn(move || {
                let start = Instant::now();
                loop {
                    match UnixStream::connect(&sock) {
                        Ok(_) => return Ok(()),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(format!("connecting to {} as it appeared: {e}", sock.display())),
                    }
                    if start.elapsed() > Duration::from_secs(20) {
                        return Err(format!("{} did not appear within 20 s", sock.display()));
                    }
                    std::hint::spin_loop();
                }
            });
            let opts = ServeOptions { quiet: true, ..ServeOptions::default() };
            let server = Server::start(&dir, cfg.clone(), opts).expect("starting the daemon");
            let seen = watcher.join().expect("watcher thread");
            server.stopper().send("the test".into()).unwrap();
            let _ = server.wait();
            let _ = std::fs::remove_dir_all(&dir);
            if let Err(e) = seen {
                panic!("round {round}: {e}");
            }
        }
    }

    /// One request on `stream` and its reply; `None` if the daemon closed the connection
    /// instead of answering.
    fn ask(stream: &UnixStream, req: &Request) -> Option<Result<Vec<u8>, String>> {
        let mut s = stream;
        proto::write_frame(&mut s, &req.encode()).ok()?;
        let frame = proto::read_frame(&mut s).ok()??;
        Some(Reply::decode(&frame).expect("a reply").result)
    }

    /// A panic of the device thread is logged with its message and place; the client whose
    /// request it was serving, a client connected at the time and one that connects later
    /// are each answered with it (they used to see a bare closed connection); a STOP ends the
    /// daemon, which reports the panic (`cqlab sim serve` exits 1) and leaves the directory
    /// as a normal stop does: no socket, no pid file, and a new daemon starts there.
    #[test]
    fn a_device_thread_panic_is_logged_told_to_every_client_and_fails_the_daemon() {
        const PANIC_POLL: u64 = 4242;
        let cfg = SimConfig { sysmem_size: 1 << 20, ..SimConfig::default() };
        /// Removes the device directory however the test ends (a failed check included).
        struct Scratch(PathBuf);
        impl Drop for Scratch {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let scratch = Scratch(std::env::temp_dir().join(format!("cqlab-panic-{}", std::process::id())));
        let dir = scratch.0.clone();
        let _ = std::fs::remove_dir_all(&dir);
        let opts = ServeOptions { panic_on_poll_cycles: Some(PANIC_POLL), ..ServeOptions::default() };
        let server = Server::start(&dir, cfg.clone(), opts).expect("starting the daemon");
        let paths = server.paths().clone();
        let connect = || UnixStream::connect(paths.socket()).expect("connecting");
        let hello = Request::Hello { version: proto::VERSION, pid: std::process::id() };

        let owner = connect();
        assert!(matches!(ask(&owner, &hello), Some(Ok(_))), "the first HELLO is accepted");
        let watcher = connect();
        assert!(matches!(ask(&watcher, &Request::Status), Some(Ok(_))), "STATUS before the panic");
        let ours = "the test's panic, asked for with a POLL of 4242 cycles";
        let says_the_panic = |who: &str, answer: Option<Result<Vec<u8>, String>>| match answer {
            Some(Err(m)) => assert!(
                m.contains("device thread panicked at") && m.contains("server.rs") && m.contains(ours),
                "{who}: {m}"
            ),
            other => panic!("{who}: answered {other:?}, not the panic"),
        };
        says_the_panic("the request that panicked", ask(&owner, &Request::Poll { cycles: PANIC_POLL }));
        says_the_panic("the owner's next request", ask(&owner, &Request::Poll { cycles: 1 }));
        says_the_panic("a client connected before", ask(&watcher, &Request::Status));
        says_the_panic("a client connecting after", ask(&connect(), &hello));
        let logged = super::super::log::logged();
        assert!(
            logged.iter().any(|l| l.contains("the device thread panicked at") && l.contains(ours)),
            "the panic is not in the log: {logged:?}"
        );

        assert_eq!(ask(&connect(), &Request::Stop { force: false }), Some(Ok(Vec::new())), "STOP after the panic");
        let stopped = server.wait();
        let panic = stopped.device_panic.expect("the daemon reports its device thread's panic");
        assert!(panic.what.contains(ours), "{panic:?}");
        for gone in [paths.socket(), paths.pid()] {
            assert!(!gone.exists(), "{} left behind", gone.display());
        }
        let again = Server::start(&dir, cfg, ServeOptions::default()).expect("a new daemon in the same directory");
        again.stopper().send("the test".into()).unwrap();
        assert!(again.wait().device_panic.is_none());
    }

    /// A STOP the device thread panics on (queued or being served when it
    /// panics) stops the daemon, as a STOP sent after the panic does: its
    /// client is answered with the stop, not told to run `cqlab sim stop`,
    /// the command it had just run, and the daemon reports the panic.
    #[test]
    fn a_stop_queued_when_the_device_thread_panics_stops_the_daemon() {
        let cfg = SimConfig { sysmem_size: 1 << 20, ..SimConfig::default() };
        let dir = std::env::temp_dir().join(format!("cqlab-panic-stop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let opts = ServeOptions { panic_on_stop: true, quiet: true, ..ServeOptions::default() };
        let server = Server::start(&dir, cfg, opts).expect("starting the daemon");
        let client = UnixStream::connect(server.paths().socket()).expect("connecting");
        let hello = Request::Hello { version: proto::VERSION, pid: std::process::id() };
        assert!(matches!(ask(&client, &hello), Some(Ok(_))));
        let answer = ask(&client, &Request::Stop { force: false });
        if answer != Some(Ok(Vec::new())) {
            // Not stopped by it: stopped here, so the test fails rather than waits for ever.
            server.stopper().send("the test, as the STOP did not stop the daemon".into()).unwrap();
        }
        let stopped = server.wait();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(answer, Some(Ok(Vec::new())), "the STOP's answer");
        assert!(stopped.why.contains("`cqlab sim stop` after the device thread panicked"), "{}", stopped.why);
        let panic = stopped.device_panic.expect("the daemon reports its device thread's panic");
        assert!(panic.what.contains("the test's panic, asked for on STOP"), "{panic:?}");
    }

    /// A daemon whose accept thread has ended, started on `dir` with `opts`, after a client
    /// connected (the connection that ends it): how it stopped, the log, and the files it
    /// left. Stopped by the test after 20 s if it does not stop by itself, so a daemon that
    /// goes on without accepting fails the test instead of hanging it.
    fn accept_thread_end(dir: &Path, opts: ServeOptions) -> (Stopped, Vec<String>, Vec<PathBuf>) {
        let cfg = SimConfig { sysmem_size: 1 << 20, ..SimConfig::default() };
        let _ = std::fs::remove_dir_all(dir);
        let server = Server::start(dir, cfg.clone(), opts).expect("starting the daemon");
        let paths = server.paths().clone();
        let client = UnixStream::connect(paths.socket()).expect("connecting");
        let stopper = server.stopper();
        let (done_tx, done_rx) = channel::<()>();
        let watchdog = std::thread::spawn(move || {
            if done_rx.recv_timeout(Duration::from_secs(20)).is_err() {
                let _ = stopper.send("the test, 20 s on: the daemon had not stopped".into());
            }
        });
        let stopped = server.wait();
        let _ = done_tx.send(());
        watchdog.join().unwrap();
        drop(client);
        let left = [paths.socket(), paths.pid()].into_iter().filter(|f| f.exists()).collect();
        // The directory is free again: a new daemon starts there.
        let again = Server::start(dir, cfg, ServeOptions { quiet: true, ..ServeOptions::default() })
            .expect("a new daemon in the same directory");
        again.stopper().send("the test".into()).unwrap();
        let _ = again.wait();
        let _ = std::fs::remove_dir_all(dir);
        (stopped, super::super::log::logged(), left)
    }

    /// A panic of the accept thread stops the daemon: logged with its message and place,
    /// reported by `Server::wait` (`cqlab sim serve` exits 1), socket and pid file removed.
    /// It used to leave a daemon that kept its socket and accepted nobody, in silence.
    #[test]
    fn an_accept_thread_panic_is_logged_and_stops_the_daemon() {
        let dir = std::env::temp_dir().join(format!("cqlab-accept-panic-{}", std::process::id()));
        let opts = ServeOptions { panic_on_accept: Some(1), ..ServeOptions::default() };
        let (stopped, logged, left) = accept_thread_end(&dir, opts);
        let ours = "the test's panic, asked for on accepting connection 1";
        let ended = stopped.accept_ended.expect("the daemon reports its accept thread's end");
        assert!(ended.contains("panicked at") && ended.contains("server.rs") && ended.contains(ours), "{ended}");
        assert!(stopped.why.contains("the accept thread's end"), "{}", stopped.why);
        assert!(stopped.device_panic.is_none());
        assert!(
            logged.iter().any(|l| l.contains("the accept thread panicked at") && l.contains("exits 1")),
            "the panic is not in the log: {logged:?}"
        );
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    /// A listener that fails for good (here shut down under the accept thread: EINVAL at
    /// every accept) stops the daemon as a panic does; it was retried every 50 ms for ever.
    #[test]
    fn a_listener_that_fails_for_good_stops_the_daemon() {
        let dir = std::env::temp_dir().join(format!("cqlab-accept-broken-{}", std::process::id()));
        let opts = ServeOptions { shut_listener_after: Some(1), quiet: true, ..ServeOptions::default() };
        let (stopped, logged, left) = accept_thread_end(&dir, opts);
        let ended = stopped.accept_ended.expect("the daemon reports its accept thread's end");
        assert!(ended.contains("its listener failed") && ended.contains("os error 22"), "{ended}");
        assert!(
            logged.iter().any(|l| l.contains("the accept thread stopped: its listener failed")),
            "not in the log: {logged:?}"
        );
        assert!(left.is_empty(), "left behind: {left:?}");
    }

    /// The daemon's log is started by `Server::start`, before any of its
    /// threads can log: a first line from the device thread's panic hook
    /// that had to start it could deadlock (`log::start`). (Each test runs
    /// in a process of its own under nextest, where the log has not started
    /// before; under `cargo test` another test may have started it.)
    #[test]
    fn starting_a_server_starts_its_log_first() {
        let already = super::super::log::started();
        let cfg = SimConfig { sysmem_size: 1 << 20, ..SimConfig::default() };
        let dir = std::env::temp_dir().join(format!("cqlab-log-start-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let opts = ServeOptions { quiet: true, ..ServeOptions::default() };
        let server = Server::start(&dir, cfg, opts).expect("starting the daemon");
        let started = super::super::log::started();
        server.stopper().send("the test".into()).unwrap();
        let _ = server.wait();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(already || started, "Server::start left the log to its first line");
    }
}
