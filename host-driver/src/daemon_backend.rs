//! The simulator daemon backend (`sim:PATH`): attach to a device that
//! `cqlab sim serve --dev PATH` runs in another, long-lived process.
//!
//! Files under PATH:
//! - `sock`: Unix socket. BAR reads and writes (through TLB windows the
//!   client configures with the chip's TLB registers, [`crate::tlb`]), polls,
//!   core debug views, reset and stop travel over it in the length-prefixed binary protocol of
//!   [`proto`] (the simulator crate's, with the server), one request then
//!   one reply. The daemon, not this client, enforces who may do what
//!   (`cqlab_sim::daemon::server`).
//! - `sysmem`: host sysmem. The daemon's chip and the client both map this
//!   file shared (memmap2), so the host polls its completion queues in local
//!   memory, as with real pinned sysmem, and the device reaches it at the
//!   PCIe endpoint.
//! - `lock`: one owner per device (the daemon enforces it too). A client takes `flock(LOCK_EX|LOCK_NB)` on
//!   it for as long as it is attached and records its pid in it; a second
//!   opener gets "device PATH is held by pid N" at once, or waits when its
//!   spec says so: `sim:PATH?wait` (up to [`DEFAULT_LOCK_WAIT`]) or
//!   `sim:PATH?wait=SECS`.
//! - `pid`: the daemon's pid.
//!
//! Device memory (L1, DRAM, registers) lives in the daemon and survives
//! clients. The device advances only while a client polls (each poll runs
//! [`DEFAULT_POLL_CYCLES`](crate::backend::DEFAULT_POLL_CYCLES) device
//! cycles and returns the clock); with no client attached it idles. So one
//! client's run against a fresh or reset daemon is as deterministic as the
//! embedded simulator. Every attach starts from a quiet device: the daemon
//! holds every core in reset, delivers the NOC transactions still in flight
//! and zeroes the semaphores, keeping L1, DRAM and sysmem. So a client
//! killed mid-enqueue leaves nothing that disturbs the next one's `boot`;
//! the next HELLO reports the killed client's pid (`recovered_from`).
//!
//! Sysmem is shared between two processes without locks; this is sound
//! because of the protocol: the daemon touches sysmem only while it serves a
//! request, and the one attached client waits for the reply before it looks
//! at sysmem again (the socket round trip orders the accesses).

use crate::backend::model::Model;
use crate::backend::{
    check_sysmem, claim_slice, snapshot_read, snapshot_u32, Backend, CoreDebug, DramTraffic, Introspect, L0CacheStats,
    StaleRead, DEFAULT_POLL_CYCLES,
};
use crate::config::{DeviceConfig, HostSchedule};
use crate::error::{DriverError, Result};
use crate::geometry::CoreId;
use crate::host_clock::{Access, HostClock};
use crate::process_state::{self, ProcessState};
use crate::tlb::{RegisterWindows, TlbBar, Windows};
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::tlb::TlbConfig;
use cqlab_abi::arch::ArchParams;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::{Board, Harvesting};
use memmap2::MmapMut;
use nix::fcntl::{Flock, FlockArg};
use std::fs::File;
use std::io::{Seek, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long `sim:PATH?wait` waits for the device's owner to let go.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(60);
/// How long an attach that holds the lock retries a HELLO the daemon
/// refuses because its previous owner is still closing.
const HELLO_RETRY: Duration = Duration::from_secs(2);
/// How long a connect refused by a socket whose daemon (per its pid file)
/// is alive is retried, and how often.
const CONNECT_RETRY: Duration = Duration::from_secs(2);
const CONNECT_RETRY_INTERVAL: Duration = Duration::from_millis(10);
/// How long a client waits for the daemon to answer one request.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a connect waits for room in the socket's backlog (a daemon
/// that stopped accepting, e.g. under SIGSTOP, with thousands of clients
/// queued).
const BACKLOG_WAIT: Duration = Duration::from_secs(10);

use cqlab_sim::daemon::files;
pub use cqlab_sim::daemon::files::DevicePaths;
pub use cqlab_sim::daemon::proto;
use proto::{ChipInfo, CoreView, L0View, Reply, Request};

/// How `sim:PATH` waits for a device another process holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockWait {
    /// Fail at once with "held by pid N".
    No,
    /// Retry for up to this long, then fail naming the holder.
    Upto(Duration),
}

/// A client of a `cqlab sim serve` daemon. Dropping it detaches.
pub struct DaemonBackend {
    link: Link,
    sysmem: MmapMut,
    _lock: Flock<File>,
    info: ChipInfo,
    /// The daemon's board and harvesting, parsed from `info`.
    board: Board,
    harvesting: Harvesting,
    regs: RegisterWindows,
    windows: Windows,
    poll_cycles: u64,
    /// The host's scheduling points at their modelled costs, as the
    /// embedded simulator charges them (no jitter or PCT: the daemon's
    /// schedule is not the run's seed), so the same program reaches the same
    /// device state and time through either.
    clock: HostClock,
}

/// The connection: requests and the device time their replies carry.
struct Link {
    paths: DevicePaths,
    stream: UnixStream,
    now: u64,
    /// The pid of the daemon that accepted HELLO: the one a lost reply is
    /// told of, whatever the pid file says by then (helper-78: after a
    /// restart the error blamed the new daemon).
    served_by: u32,
    /// Why the connection is no longer usable: a request whose reply did
    /// not come (a late reply would answer the next request) or a stream
    /// that broke. Later requests fail with it at once.
    broken: Option<String>,
}

impl Link {
    fn request(&mut self, req: &Request) -> Result<Vec<u8>> {
        if let Some(why) = &self.broken {
            return Err(DriverError::Backend(format!("{why} (the connection is not used again)")));
        }
        match exchange(&self.stream, &self.paths, Some(self.served_by), req) {
            Ok((now, body)) => {
                self.now = now;
                Ok(body)
            }
            Err(Failed::Lost(e)) => {
                self.broken = Some(e.to_string());
                Err(e)
            }
            Err(Failed::Refused(e)) => Err(e),
        }
    }

    /// BAR_WRITE, in requests of at most [`proto::MAX_DATA`] bytes.
    fn bar_write(&mut self, bar: u8, offset: u64, data: &[u8]) -> Result<()> {
        for (i, part) in data.chunks(proto::MAX_DATA).enumerate() {
            let at = offset + (i * proto::MAX_DATA) as u64;
            self.request(&Request::BarWrite { bar, offset: at, data: part.to_vec() })?;
        }
        Ok(())
    }

    /// BAR_READ, in requests of at most [`proto::MAX_DATA`] bytes.
    fn bar_read(&mut self, bar: u8, offset: u64, buf: &mut [u8]) -> Result<()> {
        for (i, part) in buf.chunks_mut(proto::MAX_DATA).enumerate() {
            let at = offset + (i * proto::MAX_DATA) as u64;
            let body = self.request(&Request::BarRead { bar, offset: at, len: part.len() as u32 })?;
            if body.len() != part.len() {
                return Err(DriverError::Backend(format!(
                    "simulator daemon at {}: BAR_READ of {} bytes at BAR{bar} {at:#x} returned {}",
                    self.paths.dir.display(),
                    part.len(),
                    body.len()
                )));
            }
            part.copy_from_slice(&body);
        }
        Ok(())
    }
}

/// The daemon's BAR0 as the window manager drives it: TLB registers and
/// windows written and read with BAR_WRITE and BAR_READ.
struct DaemonBar<'a> {
    link: &'a mut Link,
    regs: &'a RegisterWindows,
}

impl TlbBar for DaemonBar<'_> {
    fn windows(&self) -> usize {
        self.regs.count()
    }
    fn configure(&mut self, w: usize, cfg: &TlbConfig) -> Result<()> {
        let (at, words) = self.regs.config_write(w, cfg)?;
        self.link.bar_write(0, at, &words)
    }
    fn write(&mut self, w: usize, offset: u64, data: &[u8]) -> Result<()> {
        let (bar, at) = self.regs.data_at(w, offset);
        self.link.bar_write(bar, at, data)
    }
    fn read(&mut self, w: usize, offset: u64, buf: &mut [u8]) -> Result<()> {
        let (bar, at) = self.regs.data_at(w, offset);
        self.link.bar_read(bar, at, buf)
    }
}

/// The board and harvesting a daemon announces.
fn chip_of(paths: &DevicePaths, info: &ChipInfo) -> Result<(Board, Harvesting)> {
    let bad = |what: &str, e: String| {
        DriverError::Backend(format!("simulator daemon at {}: its {what} {e}", paths.dir.display()))
    };
    let board: Board = info.board.parse().map_err(|e: cqlab_abi::soc::UnknownBoard| bad("board", e.to_string()))?;
    let harvesting =
        info.harvesting.parse().map_err(|e: cqlab_abi::soc::HarvestError| bad("harvesting", e.to_string()))?;
    Ok((board, harvesting))
}

fn no_daemon(paths: &DevicePaths, why: String) -> DriverError {
    // `sim serve` would be refused there: say who serves it instead.
    if let Some(e) = held_by_ttkmd(paths) {
        return e;
    }
    DriverError::Backend(format!(
        "no simulator daemon at {}: {why}; start one with `cqlab sim serve --dev {}`",
        paths.dir.display(),
        paths.dir.display()
    ))
}

/// The refusal for a directory a `cqlab sim ttkmd` simulator holds (the
/// device directory's lock, [`files::lock_dir`], which both simulators
/// take): its `lock` and `sysmem` are that simulator's clients', so a
/// daemon client (`sim:`, `reset`, `sim stop`, `sim bar`) touches nothing
/// there.
fn held_by_ttkmd(paths: &DevicePaths) -> Option<DriverError> {
    let holder = files::dir_holder(&paths.dir).filter(|h| h.kind == Some(files::Simulator::Ttkmd))?;
    Some(DriverError::Backend(format!(
        "no simulator daemon at {dir}: the directory is held by {holder} (a device directory holds one simulator \
         of either kind); open it with ttkmd-sim:{dir}, or stop that simulator first",
        dir = paths.dir.display()
    )))
}

/// Reads the pid a lock holder recorded, for the "held by" message.
fn holder(lock: &Path) -> String {
    match std::fs::read_to_string(lock) {
        Ok(s) if s.trim().parse::<u32>().is_ok() => format!("pid {}", s.trim()),
        _ => format!("another process (no pid recorded in {} yet)", lock.display()),
    }
}

/// Takes the device's ownership lock, waiting as `wait` says, and records
/// our pid in the lock file.
pub fn lock_device(paths: &DevicePaths, wait: LockWait) -> Result<Flock<File>> {
    let lock = paths.lock();
    let start = Instant::now();
    loop {
        // The daemon creates the lock file; O_NOFOLLOW refuses a planted symlink.
        let file = files::open_existing(&lock).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => no_daemon(paths, format!("no lock file {}", lock.display())),
            _ => DriverError::Backend(format!("opening lock file {}: {e}", lock.display())),
        })?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut held) => {
                held.set_len(0)?;
                held.rewind()?;
                write!(held, "{}", std::process::id())?;
                return Ok(held);
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                let waited = start.elapsed();
                match wait {
                    LockWait::Upto(limit) if waited < limit => std::thread::sleep(Duration::from_millis(10)),
                    LockWait::Upto(limit) => {
                        return Err(DriverError::Busy {
                            path: paths.dir.display().to_string(),
                            holder: format!("{} (gave up waiting after {:.1} s)", holder(&lock), limit.as_secs_f64()),
                        })
                    }
                    LockWait::No => {
                        return Err(DriverError::Busy { path: paths.dir.display().to_string(), holder: holder(&lock) })
                    }
                }
            }
            Err((_, errno)) => {
                return Err(DriverError::Backend(format!("flock on {}: {errno}", lock.display())));
            }
        }
    }
}

/// The pid in the device's pid file, if that process is alive and, where
/// `/proc` says, a `sim serve` (a pid reused by another process is not).
fn live_daemon_pid(paths: &DevicePaths) -> Option<i32> {
    let pid: i32 = std::fs::read_to_string(paths.pid()).ok()?.trim().parse().ok().filter(|&p: &i32| p > 0)?;
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) | Err(nix::errno::Errno::EPERM) => {}
        Err(_) => return None,
    }
    // A zombie answers `kill(pid, 0)` but serves nothing: it has exited.
    if process_state::of(pid as u32) == ProcessState::Exited {
        return None;
    }
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        // A daemon exiting right now has none: still taken for one.
        Ok(cmdline) if cmdline.is_empty() => Some(pid),
        Ok(cmdline) => {
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            args.windows(2).any(|w| w == [&b"sim"[..], &b"serve"[..]]).then_some(pid)
        }
        // No /proc to ask: alive is all that is known.
        Err(_) => Some(pid),
    }
}

/// The pid holding the device's ownership lock (`flock` on PATH/lock),
/// read from `/proc/locks` without touching the lock; `None` when nobody
/// holds it or it cannot be told.
pub fn lock_holder(dir: &Path) -> Option<u32> {
    let meta = std::fs::metadata(DevicePaths::new(dir).lock()).ok()?;
    cqlab_sim::daemon::files::flock_holder_of(&meta)
}

/// Why `dir` is no device directory: missing, or something else there.
fn missing_dir(dir: &Path) -> String {
    match std::fs::metadata(dir) {
        Ok(_) => "it is not a directory (a daemon's device is the directory `cqlab sim serve --dev` made)".into(),
        Err(_) => "the directory does not exist".into(),
    }
}

/// Connects to the daemon's socket with a clear error when none runs.
fn connect(paths: &DevicePaths) -> Result<UnixStream> {
    connect_within(paths, BACKLOG_WAIT)
}

/// One connect that never blocks: a blocking connect to a socket whose
/// backlog is full waits until the daemon accepts, for ever if it is
/// stopped (helper-33); this one fails with `WouldBlock` instead.
fn connect_now(sock: &Path) -> std::io::Result<UnixStream> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType, UnixAddr};
    use std::os::fd::AsRawFd;
    let flags = SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC;
    let fd = socket(AddressFamily::Unix, SockType::Stream, flags, None)?;
    nix::sys::socket::connect(fd.as_raw_fd(), &UnixAddr::new(sock)?)?;
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Fails unless `paths` has a daemon's socket: the socket itself, not a
/// link to another directory's (helper-48: a `sock` symlink reached another
/// daemon, which ran this directory's client on its own sysmem).
fn check_socket(paths: &DevicePaths) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    if !paths.dir.is_dir() {
        return Err(no_daemon(paths, missing_dir(&paths.dir)));
    }
    let sock = paths.socket();
    match std::fs::symlink_metadata(&sock) {
        Ok(m) if m.file_type().is_socket() => Ok(()),
        Ok(m) => {
            let what = if m.file_type().is_symlink() { "a symbolic link" } else { "no socket" };
            Err(no_daemon(paths, format!("{} is {what}, not a daemon's own socket", sock.display())))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(no_daemon(paths, format!("no socket {}", sock.display())))
        }
        Err(e) => Err(no_daemon(paths, format!("{}: {e}", sock.display()))),
    }
}

/// [`connect`], waiting at most `backlog_wait` for room in a full backlog.
fn connect_within(paths: &DevicePaths, backlog_wait: Duration) -> Result<UnixStream> {
    check_socket(paths)?;
    let sock = paths.socket();
    // The daemon publishes `sock` only once it listens, so a refusal means
    // no daemon behind it, unless the daemon named in the pid file is alive
    // (e.g. one restarting on this directory): then retry for a bounded time.
    let start = Instant::now();
    let stream = loop {
        match connect_now(&sock) {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() >= backlog_wait {
                    return Err(DriverError::Backend(format!(
                        "simulator daemon at {}: {} kept its backlog of connections full for {:.1} s{}",
                        paths.dir.display(),
                        sock.display(),
                        backlog_wait.as_secs_f64(),
                        daemon_state(paths, None)
                    )));
                }
                std::thread::sleep(CONNECT_RETRY_INTERVAL);
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                let Some(pid) = live_daemon_pid(paths) else {
                    // A pid file naming a zombie: say the daemon exited.
                    let exited = daemon_pid(paths)
                        .filter(|&p| process_state::of(p) == ProcessState::Exited)
                        .map_or(String::new(), |p| format!(" (its daemon, pid {p}, has exited: {ZOMBIE})"));
                    return Err(no_daemon(
                        paths,
                        format!(
                            "{} refuses connections and no live daemon pid is in {}{exited}",
                            sock.display(),
                            paths.pid().display()
                        ),
                    ));
                };
                if start.elapsed() >= CONNECT_RETRY {
                    return Err(DriverError::Backend(format!(
                        "simulator daemon at {} (pid {pid}, running): {} refused connections for {:.1} s",
                        paths.dir.display(),
                        sock.display(),
                        CONNECT_RETRY.as_secs_f64()
                    )));
                }
                std::thread::sleep(CONNECT_RETRY_INTERVAL);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(no_daemon(paths, format!("no socket {}", sock.display())))
            }
            Err(e) => return Err(no_daemon(paths, format!("connecting to {}: {e}", sock.display()))),
        }
    };
    stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
    stream.set_write_timeout(Some(REPLY_TIMEOUT))?;
    Ok(stream)
}

/// How a request failed: the daemon answered with a refusal (the
/// connection goes on), or the exchange itself was lost.
enum Failed {
    Refused(DriverError),
    Lost(DriverError),
}

/// One request, one reply, over `stream`.
fn call(stream: &UnixStream, paths: &DevicePaths, req: &Request) -> Result<(u64, Vec<u8>)> {
    exchange(stream, paths, None, req).map_err(|(Failed::Refused(e) | Failed::Lost(e))| e)
}

/// Whether the daemon at `dir` is stopped (SIGSTOP, a debugger): the note
/// for a run that timed out on it, or `None` while it runs or is gone.
pub fn stopped_daemon(dir: &Path) -> Option<String> {
    let pid = daemon_pid(&DevicePaths::new(dir))?;
    (process_state::of(pid) == ProcessState::Stopped)
        .then(|| format!("the daemon, pid {pid}, is stopped: SIGSTOP or a debugger?"))
}

fn daemon_pid(paths: &DevicePaths) -> Option<u32> {
    std::fs::read_to_string(paths.pid()).ok().and_then(|p| p.trim().parse::<u32>().ok())
}

/// What an exited daemon whose pid still shows is.
const ZOMBIE: &str = "a zombie its parent has not reaped, dead";

/// What the daemon's process is doing, for a timeout's message (helper-33:
/// a SIGSTOPped daemon read as a plain timeout). `served_by`: the pid of
/// the daemon this connection talks to, if known.
fn daemon_state(paths: &DevicePaths, served_by: Option<u32>) -> String {
    let now = daemon_pid(paths);
    if let Some(ours) = served_by.filter(|&p| p != 0 && now != Some(p)) {
        let gone = match process_state::of(ours) {
            ProcessState::Gone => "is gone",
            ProcessState::Stopped => "is stopped, its files taken over",
            ProcessState::Exited => "has exited",
            ProcessState::Running => "no longer serves the directory",
        };
        return match now {
            Some(new) => format!(
                " (the daemon this run attached to, pid {ours}, {gone}; pid {new} serves the directory now: a \
                 restarted daemon starts from a fresh device)"
            ),
            None => format!(" (the daemon this run attached to, pid {ours}, {gone})"),
        };
    }
    let Some(pid) = now else { return String::new() };
    match process_state::of(pid) {
        ProcessState::Stopped => format!(" (the daemon, pid {pid}, is stopped: SIGSTOP or a debugger?)"),
        ProcessState::Running => format!(" (the daemon, pid {pid}, is running but did not answer)"),
        ProcessState::Exited => format!(" (the daemon, pid {pid}, has exited: {ZOMBIE})"),
        ProcessState::Gone => format!(" (no process {pid}: the daemon is gone)"),
    }
}

fn exchange(
    stream: &UnixStream,
    paths: &DevicePaths,
    served_by: Option<u32>,
    req: &Request,
) -> std::result::Result<(u64, Vec<u8>), Failed> {
    let lost = |e: std::io::Error| {
        let what = match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => format!(
                "timeout after {} s waiting for the reply to {}{}",
                REPLY_TIMEOUT.as_secs(),
                req.name(),
                daemon_state(paths, served_by)
            ),
            // A reset or broken pipe is mostly a daemon that died: say so
            // (helper-48: only the timeout said whether it was gone).
            _ => format!("{} failed: {e}{}", req.name(), daemon_state(paths, served_by)),
        };
        Failed::Lost(DriverError::Backend(format!("simulator daemon at {}: {what}", paths.dir.display())))
    };
    let refused = |e: DriverError| Failed::Refused(e);
    let mut s = stream;
    if let Err(e) = proto::write_frame(&mut s, &req.encode()) {
        // A daemon that refuses a connection (another uid, too many open)
        // says why and closes: read that reason if it is there.
        if let Ok(Some(Ok(Reply { result: Err(m), .. }))) =
            proto::read_frame(&mut s).map(|f| f.map(|f| Reply::decode(&f)))
        {
            return Err(Failed::Lost(DriverError::Backend(format!(
                "simulator daemon at {}: {}: {m}",
                paths.dir.display(),
                req.name()
            ))));
        }
        return Err(lost(e));
    }
    let frame = proto::read_frame(&mut s)
        .map_err(lost)?
        .ok_or_else(|| lost(std::io::Error::other("the daemon closed the connection (stopped?)")))?;
    let reply = Reply::decode(&frame).map_err(|e| {
        Failed::Lost(DriverError::Backend(format!(
            "simulator daemon at {}: bad reply to {}: {e}",
            paths.dir.display(),
            req.name()
        )))
    })?;
    match reply.result {
        Ok(body) => Ok((reply.now, body)),
        Err(m) => Err(refused(DriverError::Backend(format!(
            "simulator daemon at {}: {}: {m}",
            paths.dir.display(),
            req.name()
        )))),
    }
}

/// Opens the daemon's sysmem file, checking the size it announced.
fn open_sysmem(paths: &DevicePaths, len: u64) -> Result<(std::fs::File, usize)> {
    let path = paths.sysmem();
    let file = files::open_existing(&path)
        .map_err(|e| DriverError::Backend(format!("opening sysmem file {}: {e}", path.display())))?;
    let len = usize::try_from(len)
        .map_err(|_| DriverError::Backend(format!("the daemon announced a sysmem of {len} bytes")))?;
    Ok((file, len))
}

/// Maps the daemon's sysmem file, shared: the owner's.
fn map_sysmem(paths: &DevicePaths, len: u64) -> Result<MmapMut> {
    let (file, len) = open_sysmem(paths, len)?;
    files::map_shared(&file, &paths.sysmem(), len).map_err(|e| DriverError::Backend(e.to_string()))
}

/// A private view of the owner's sysmem, for an observer.
fn observe_sysmem(paths: &DevicePaths, len: u64) -> Result<files::ObserverView> {
    let (file, len) = open_sysmem(paths, len)?;
    files::map_observer(&file, &paths.sysmem(), len).map_err(|e| DriverError::Backend(e.to_string()))
}

fn hello(stream: &UnixStream, paths: &DevicePaths) -> Result<ChipInfo> {
    let req = Request::Hello { version: proto::VERSION, pid: std::process::id() };
    let (_, body) = match call(stream, paths, &req) {
        Ok(r) => r,
        // The daemon enforces one owner; the flock normally says so first.
        Err(DriverError::Backend(m)) if m.contains("device held by pid") => {
            let holder = m.rsplit("device held by ").next().unwrap_or(&m).split(':').next().unwrap_or(&m).to_owned();
            return Err(DriverError::Busy { path: paths.dir.display().to_string(), holder });
        }
        Err(e) => return Err(e),
    };
    let info = ChipInfo::decode(&body)
        .map_err(|e| DriverError::Backend(format!("simulator daemon at {}: HELLO: {e}", paths.dir.display())))?;
    if info.version != proto::VERSION {
        return Err(DriverError::Backend(format!(
            "simulator daemon at {} speaks protocol version {}, this driver {}",
            paths.dir.display(),
            info.version,
            proto::VERSION
        )));
    }
    Ok(info)
}

impl DaemonBackend {
    /// Attaches to the daemon at `path`, failing at once if another process
    /// holds the device.
    pub fn attach(path: impl AsRef<Path>) -> Result<Self> {
        Self::attach_with(path, LockWait::No)
    }

    /// Parses the part of a device spec after `sim:`: `PATH`,
    /// `PATH?wait` or `PATH?wait=SECS`.
    pub fn parse_spec(rest: &str) -> Result<(PathBuf, LockWait)> {
        let (path, opt) = match rest.split_once('?') {
            Some((p, o)) => (p, Some(o)),
            None => (rest, None),
        };
        if path.is_empty() {
            return Err(DriverError::Invalid("sim: needs a path: sim:PATH[?wait[=SECS]]".into()));
        }
        let wait = match opt {
            None => LockWait::No,
            Some("wait") => LockWait::Upto(DEFAULT_LOCK_WAIT),
            Some(o) => match o.strip_prefix("wait=").map(|s| s.parse::<f64>().map(Duration::try_from_secs_f64)) {
                Some(Ok(Ok(d))) => LockWait::Upto(d),
                // Found by the device_spec fuzz target: wait=4.4e22 overflowed
                // Duration::from_secs_f64 and panicked.
                Some(_) => {
                    return Err(DriverError::Invalid(format!(
                        "sim: option {o:?}: wait=SECS takes a non-negative number of seconds that fits a duration"
                    )))
                }
                None => {
                    return Err(DriverError::Invalid(format!("unknown sim: option {o:?} (known: wait, wait=SECS)")))
                }
            },
        };
        Ok((PathBuf::from(path), wait))
    }

    /// Attaches: takes the device's lock (see [`LockWait`]), connects,
    /// learns the chip's shape and maps sysmem.
    pub fn attach_with(path: impl AsRef<Path>, wait: LockWait) -> Result<Self> {
        let paths = DevicePaths::new(path.as_ref());
        if !paths.dir.is_dir() {
            return Err(no_daemon(&paths, missing_dir(&paths.dir)));
        }
        // Before the lock: `lock` is also the name of a `sim ttkmd` device's owner lock.
        if let Some(e) = held_by_ttkmd(&paths) {
            return Err(e);
        }
        // Before the lock too, whose file gets our pid: a directory no
        // daemon serves loses nothing (helper-48: a `lock` file of notes
        // was overwritten).
        check_socket(&paths)?;
        // `?wait=SECS` bounds the whole attach, the lock's wait included.
        let asked = Instant::now();
        let lock = lock_device(&paths, wait)?;
        // We hold the lock, so an owner the daemon still sees is a client
        // that is exiting (its socket closes just after its lock) or one
        // that bypassed the lock: retry briefly, then report the holder.
        let start = Instant::now();
        let patience = match wait {
            LockWait::Upto(limit) => limit.max(HELLO_RETRY),
            LockWait::No => HELLO_RETRY,
        };
        let (stream, info) = 'attach: loop {
            let stream = connect(&paths)?;
            loop {
                match hello(&stream, &paths) {
                    Err(DriverError::Busy { .. }) if start.elapsed() < patience => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    // `?wait` waits out a full connection cap too: idle
                    // connections close within the daemon's idle timeout
                    // (helper-48: it gave up in 6 ms).
                    Err(DriverError::Backend(m))
                        if m.contains(proto::CONNECTION_CAP_REFUSAL)
                            && matches!(wait, LockWait::Upto(limit) if asked.elapsed() < limit) =>
                    {
                        std::thread::sleep(Duration::from_millis(50));
                        continue 'attach;
                    }
                    r => break 'attach (stream, r?),
                }
            }
        };
        let sysmem = map_sysmem(&paths, info.sysmem_size)?;
        let (board, harvesting) = chip_of(&paths, &info)?;
        let regs = RegisterWindows::new(board.arch().params());
        let windows = Windows::new(regs.count());
        Ok(DaemonBackend {
            link: Link { paths, stream, now: 0, served_by: info.daemon_pid, broken: None },
            sysmem,
            _lock: lock,
            info,
            board,
            harvesting,
            regs,
            windows,
            poll_cycles: DEFAULT_POLL_CYCLES,
            clock: HostClock::new(0, HostSchedule::default()),
        })
    }

    /// What the daemon simulates.
    pub fn info(&self) -> &ChipInfo {
        &self.info
    }

    /// Holds the device up to `limit` without a request, watching the
    /// connection: true if the daemon closed it meanwhile (a forced stop, a
    /// crash). The daemon sends nothing unasked, so any byte or end read is
    /// the connection ending.
    pub fn closed_within(&self, limit: Duration) -> bool {
        use std::io::Read;
        let deadline = Instant::now() + limit;
        let mut s = &self.link.stream;
        let closed = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            if s.set_read_timeout(Some(left)).is_err() {
                break true;
            }
            match s.read(&mut [0u8; 1]) {
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Ok(_) | Err(_) => break true,
            }
        };
        let _ = s.set_read_timeout(Some(REPLY_TIMEOUT));
        closed
    }

    /// Fails unless the daemon's chip is the one `cfg` names (if it names
    /// one) and has room in sysmem for its queues.
    pub fn check_config(&self, cfg: &DeviceConfig) -> Result<()> {
        let dir = &self.link.paths.dir;
        check_chip(dir, self.board, &self.harvesting, cfg)?;
        cfg.check_sysmem(self.info.sysmem_size, &format!("the daemon at {}", dir.display()))
    }

    /// Restores the device's power-on state (`cqlab reset`). The TLB
    /// registers are back at power-on too: every window is forgotten.
    pub fn reset(&mut self) -> Result<()> {
        self.link.request(&Request::Reset)?;
        self.windows = Windows::new(self.regs.count());
        Ok(())
    }

    fn request(&mut self, req: &Request) -> Result<Vec<u8>> {
        self.link.request(req)
    }

    /// A scheduling point: the device runs what the host's clock says
    /// before access `a` takes effect.
    fn host_access(&mut self, a: Access) -> Result<()> {
        match self.clock.before(a) {
            Some(cycles) => self.request(&Request::Poll { cycles }).map(drop),
            None => Ok(()),
        }
    }

    fn bar(&mut self) -> (&mut Windows, DaemonBar<'_>) {
        (&mut self.windows, DaemonBar { link: &mut self.link, regs: &self.regs })
    }
}

impl Drop for DaemonBackend {
    fn drop(&mut self) {
        // A clean detach; if it fails the daemon sees a vanished client and
        // quiesces, which is also fine. Not on a connection whose last
        // request went unanswered: that would wait out a second timeout.
        if self.link.broken.is_none() {
            let _ = call(&self.link.stream, &self.link.paths, &Request::Detach);
        }
    }
}

/// Asks the daemon at `path` to exit (`cqlab sim stop`). Sends no HELLO
/// (it is not a session). The daemon refuses while another client owns the
/// device, unless `force` (`cqlab sim stop --force`). Returns the daemon's
/// pid from its pid file.
pub fn stop_daemon(path: &Path, force: bool) -> Result<Option<u32>> {
    let paths = DevicePaths::new(path);
    let stream = connect(&paths)?;
    let pid = std::fs::read_to_string(paths.pid()).ok().and_then(|s| s.trim().parse().ok());
    // The daemon may exit before its reply reaches us: a connection closed
    // after STOP is a success once the socket is gone.
    match call(&stream, &paths, &Request::Stop { force }) {
        Ok(_) => {}
        Err(e) if e.to_string().contains("STOP: ") => return Err(e),
        Err(e) => {
            let deadline = Instant::now() + Duration::from_secs(5);
            while paths.socket().exists() {
                if Instant::now() > deadline {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
    Ok(pid)
}

fn check_len(paths: &DevicePaths, op: &str, at: NocAddr, asked: usize, got: usize) -> Result<()> {
    // PEEK by NOC address (the observer's side-effect-free view).
    if asked == got {
        return Ok(());
    }
    Err(DriverError::Backend(format!(
        "simulator daemon at {}: {op} of {asked} bytes at {:#x} returned {got}",
        paths.dir.display(),
        at.0
    )))
}

impl Backend for DaemonBackend {
    fn name(&self) -> String {
        format!(
            "simulator daemon at {} (pid {}, seed {}{})",
            self.link.paths.dir.display(),
            self.info.daemon_pid,
            self.info.seed,
            Model::of_daemon(self.info.model, self.board.arch()).describe()
        )
    }
    fn params(&self) -> &'static ArchParams {
        self.board.arch().params()
    }
    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.host_access(Access::BarWrite)?;
        let (windows, mut bar) = self.bar();
        windows.write(&mut bar, addr, data)
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        self.host_access(Access::BarRead)?;
        let (windows, mut bar) = self.bar();
        windows.read(&mut bar, addr, buf)
    }
    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        self.host_access(Access::BarRead)?;
        self.link.bar_read(0, offset as u64, buf)
    }
    fn sysmem_len(&self) -> usize {
        self.sysmem.len()
    }
    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        check_sysmem(offset, buf.len(), self.sysmem.len())?;
        self.host_access(Access::SysmemRead(buf.len()))?;
        // The daemon touches sysmem only while serving our request (module docs).
        snapshot_read(&self.sysmem, offset, buf)
    }
    fn sysmem_peek_u32(&mut self, offset: usize) -> Result<u32> {
        snapshot_u32(&self.sysmem, offset)
    }
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]> {
        check_sysmem(offset, len, self.sysmem.len())?;
        self.host_access(Access::SysmemWrite(len))?;
        claim_slice(&mut self.sysmem, offset, len)
    }
    fn poll(&mut self) -> Result<u64> {
        let cycles = self.poll_cycles + self.clock.take_owed();
        self.request(&Request::Poll { cycles })?;
        Ok(self.link.now)
    }
    fn now(&self) -> u64 {
        self.link.now
    }
    fn introspect(&mut self) -> Option<&mut dyn Introspect> {
        Some(self)
    }
}

impl DaemonBackend {
    fn bad_body(&self, what: &str, e: impl std::fmt::Display) -> DriverError {
        DriverError::Backend(format!("simulator daemon at {}: bad {what} reply: {e}", self.link.paths.dir.display()))
    }
    fn u64s<const N: usize>(&self, what: &str, body: &[u8]) -> Result<[u64; N]> {
        if body.len() != 8 * N {
            return Err(self.bad_body(what, format!("{} bytes, expected {}", body.len(), 8 * N)));
        }
        Ok(std::array::from_fn(|i| u64::from_le_bytes(body[8 * i..8 * i + 8].try_into().expect("8 bytes"))))
    }
}

/// Fails unless the daemon at `dir`, simulating `board` harvested
/// `harvesting`, is the chip `cfg` names (if it names one).
pub fn check_chip(dir: &Path, board: Board, harvesting: &Harvesting, cfg: &DeviceConfig) -> Result<()> {
    cfg.check_harvesting_on(cfg.board.unwrap_or(board))?;
    let board_differs = cfg.board.is_some_and(|b| b != board);
    let harvest_differs = cfg.harvesting.as_ref().is_some_and(|h| h != harvesting);
    if !(board_differs || harvest_differs) {
        return Ok(());
    }
    let want_board = cfg.board.unwrap_or(board);
    let want_h = cfg.harvesting.clone().unwrap_or_else(|| want_board.default_harvesting());
    Err(DriverError::Invalid(format!(
        "the daemon at {} simulates a {board} harvested {harvesting}; the device configuration asks for a \
         {want_board} harvested {want_h} (a --harvest value replaces the whole harvesting, Ethernet channels \
         included: ask for --chip {board} --harvest {harvesting}, or restart the daemon with --chip {want_board} \
         --harvest {want_h})",
        dir.display(),
    )))
}

/// L0_CACHE's answer as a report gives it.
fn l0_stats_of(view: L0View) -> Result<L0CacheStats> {
    let first_stale = match view.first_stale {
        None => None,
        Some((tile, processor, pc, addr, cycle)) => {
            let processor = *Processor::ALL.get(processor as usize).ok_or_else(|| {
                DriverError::Backend(format!("simulator daemon: L0_CACHE reply names core {processor}"))
            })?;
            Some(StaleRead { core: Coord::unpack(tile), processor, pc, addr, cycle })
        }
    };
    Ok(L0CacheStats { hits: view.hits, stale_hits: view.stale_hits, first_stale })
}

/// A core's view as the daemon sends it.
fn core_debug_of(view: CoreView) -> CoreDebug {
    CoreDebug { pc: view.pc, halt: view.halt, last_pcs: view.last_pcs, in_reset: view.in_reset }
}

fn core_request(core: CoreId) -> Request {
    Request::CoreDebug { tile: core.tile.packed(), processor: core.processor.index() as u8 }
}

impl Introspect for DaemonBackend {
    fn core_debug(&mut self, core: CoreId) -> Result<Option<CoreDebug>> {
        let body = self.request(&core_request(core))?;
        let view = CoreView::decode(&body).map_err(|e| self.bad_body("CORE_DEBUG", e))?;
        Ok(view.map(core_debug_of))
    }
    fn digest(&mut self) -> Result<u64> {
        let body = self.request(&Request::Digest)?;
        Ok(self.u64s::<1>("DIGEST", &body)?[0])
    }
    fn dram_traffic(&mut self) -> Result<Option<DramTraffic>> {
        let body = self.request(&Request::DramTraffic { reset: false })?;
        let [read_bytes, write_bytes] = self.u64s::<2>("DRAM_TRAFFIC", &body)?;
        Ok(Some(DramTraffic { read_bytes, write_bytes }))
    }
    fn reset_dram_traffic(&mut self) -> Result<()> {
        self.request(&Request::DramTraffic { reset: true })?;
        Ok(())
    }
    fn peek(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<bool> {
        // Through the link, as every request of a session: an unanswered
        // PEEK marks the connection broken (helper-33: the DETACH after it
        // waited out a second timeout).
        for (i, part) in buf.chunks_mut(proto::MAX_DATA).enumerate() {
            let at = addr.offset((i * proto::MAX_DATA) as u64);
            let body = self.request(&Request::Peek { addr: at.0, len: part.len() as u32 })?;
            check_len(&self.link.paths, "PEEK", at, part.len(), body.len())?;
            part.copy_from_slice(&body);
        }
        Ok(true)
    }
    fn l0_cache(&mut self) -> Result<Option<L0CacheStats>> {
        let body = self.request(&Request::L0Cache)?;
        L0View::decode(&body).map_err(|e| self.bad_body("L0_CACHE", e))?.map(l0_stats_of).transpose()
    }
    fn run_cycles(&mut self, cycles: u64) -> Result<u64> {
        let owed = self.clock.take_owed();
        self.request(&Request::Poll { cycles: cycles.saturating_add(owed) })?;
        Ok(self.link.now)
    }
}

/// PEEK: reads device memory without advancing or changing the device,
/// in requests of at most [`proto::MAX_DATA`] bytes.
fn peek(stream: &UnixStream, paths: &DevicePaths, now: &mut u64, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
    for (i, part) in buf.chunks_mut(proto::MAX_DATA).enumerate() {
        let at = addr.offset((i * proto::MAX_DATA) as u64);
        let (t, body) = call(stream, paths, &Request::Peek { addr: at.0, len: part.len() as u32 })?;
        *now = t;
        check_len(paths, "PEEK", at, part.len(), body.len())?;
        part.copy_from_slice(&body);
    }
    Ok(())
}

/// A read-only view of a daemon's device (`cqlab status`, `cqlab dump`,
/// live `cqlab decode`): takes no lock and sends no HELLO, so it works while
/// another client owns the device, and changes nothing. Reads go through
/// PEEK (no device time passes, posted writes stay posted), `poll` only asks
/// the time (STATUS), sysmem is a private copy-on-write view of the owner's,
/// and writes fail.
pub struct DaemonObserver {
    paths: DevicePaths,
    stream: UnixStream,
    sysmem: files::ObserverView,
    status: proto::Status,
    board: Board,
    harvesting: Harvesting,
    now: u64,
}

impl DaemonObserver {
    /// Connects to the daemon at `path` without attaching.
    pub fn connect(path: impl AsRef<Path>) -> Result<Self> {
        let paths = DevicePaths::new(path.as_ref());
        let stream = connect(&paths)?;
        let (now, body) = call(&stream, &paths, &Request::Status)?;
        let status = proto::Status::decode(&body)
            .map_err(|e| DriverError::Backend(format!("simulator daemon at {}: STATUS: {e}", paths.dir.display())))?;
        if status.chip.version != proto::VERSION {
            return Err(DriverError::Backend(format!(
                "simulator daemon at {} speaks protocol version {}, this driver {}",
                paths.dir.display(),
                status.chip.version,
                proto::VERSION
            )));
        }
        let sysmem = observe_sysmem(&paths, status.chip.sysmem_size)?;
        let (board, harvesting) = chip_of(&paths, &status.chip)?;
        Ok(DaemonObserver { paths, stream, sysmem, status, board, harvesting, now })
    }

    /// What the daemon said when we connected: its chip, owner and connections.
    pub fn status(&self) -> &proto::Status {
        &self.status
    }

    /// Asks the daemon again (owner, device time).
    pub fn refresh(&mut self) -> Result<&proto::Status> {
        let (now, body) = call(&self.stream, &self.paths, &Request::Status)?;
        self.now = now;
        self.status = proto::Status::decode(&body).map_err(|e| {
            DriverError::Backend(format!("simulator daemon at {}: STATUS: {e}", self.paths.dir.display()))
        })?;
        Ok(&self.status)
    }

    fn read_only(&self, what: &str) -> DriverError {
        DriverError::Invalid(format!(
            "{what} through a read-only observer of {} (attach with sim:PATH to change the device)",
            self.paths.dir.display()
        ))
    }
}

impl Backend for DaemonObserver {
    fn name(&self) -> String {
        format!(
            "simulator daemon at {} (pid {}, seed {}{}), observed read-only",
            self.paths.dir.display(),
            self.status.chip.daemon_pid,
            self.status.chip.seed,
            Model::of_daemon(self.status.chip.model, self.board.arch()).describe()
        )
    }
    fn params(&self) -> &'static ArchParams {
        self.board.arch().params()
    }
    /// What the daemon announces: an observer changes nothing, so it
    /// configures no TLB window to read ARC.
    fn identify(&mut self) -> Result<(Board, Harvesting)> {
        Ok((self.board, self.harvesting.clone()))
    }
    fn write(&mut self, addr: NocAddr, _data: &[u8]) -> Result<()> {
        Err(self.read_only(&format!("write at {:#x}", addr.0)))
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        peek(&self.stream, &self.paths, &mut self.now, addr, buf)
    }
    fn sysmem_len(&self) -> usize {
        self.sysmem.len()
    }
    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        check_sysmem(offset, buf.len(), self.sysmem.len())?;
        self.sysmem.read(offset, buf).ok_or_else(|| DriverError::Backend("sysmem read past its end".into()))
    }
    /// One whole-word load: the owner's device may be writing this pointer right now.
    fn sysmem_read_u32(&mut self, offset: usize) -> Result<u32> {
        check_sysmem(offset, 4, self.sysmem.len())?;
        self.sysmem
            .read_u32(offset)
            .ok_or_else(|| DriverError::Backend(format!("sysmem word at {offset:#x} misaligned")))
    }
    fn sysmem_peek_u32(&mut self, offset: usize) -> Result<u32> {
        self.sysmem_read_u32(offset)
    }
    fn sysmem_claim(&mut self, _offset: usize, _len: usize) -> Result<&mut [u8]> {
        Err(self.read_only("claiming sysmem"))
    }
    fn poll(&mut self) -> Result<u64> {
        self.refresh()?;
        Ok(self.now)
    }
    fn now(&self) -> u64 {
        self.now
    }
    fn introspect(&mut self) -> Option<&mut dyn Introspect> {
        Some(self)
    }
}

impl Introspect for DaemonObserver {
    fn core_debug(&mut self, core: CoreId) -> Result<Option<CoreDebug>> {
        let (_, body) = call(&self.stream, &self.paths, &core_request(core))?;
        let view = CoreView::decode(&body).map_err(|e| {
            DriverError::Backend(format!("simulator daemon at {}: bad CORE_DEBUG reply: {e}", self.paths.dir.display()))
        })?;
        Ok(view.map(core_debug_of))
    }
    fn digest(&mut self) -> Result<u64> {
        let (_, body) = call(&self.stream, &self.paths, &Request::Digest)?;
        let b: [u8; 8] = body.as_slice().try_into().map_err(|_| {
            DriverError::Backend(format!(
                "simulator daemon at {}: DIGEST reply of {} bytes",
                self.paths.dir.display(),
                body.len()
            ))
        })?;
        Ok(u64::from_le_bytes(b))
    }
    fn dram_traffic(&mut self) -> Result<Option<DramTraffic>> {
        Err(self.read_only("DRAM traffic counters (owner only)"))
    }
    fn reset_dram_traffic(&mut self) -> Result<()> {
        Err(self.read_only("resetting DRAM traffic counters"))
    }
    fn peek(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<bool> {
        peek(&self.stream, &self.paths, &mut self.now, addr, buf)?;
        Ok(true)
    }
    fn l0_cache(&mut self) -> Result<Option<L0CacheStats>> {
        let (_, body) = call(&self.stream, &self.paths, &Request::L0Cache)?;
        let view = L0View::decode(&body).map_err(|e| {
            DriverError::Backend(format!("simulator daemon at {}: bad L0_CACHE reply: {e}", self.paths.dir.display()))
        })?;
        view.map(l0_stats_of).transpose()
    }
    fn run_cycles(&mut self, _cycles: u64) -> Result<u64> {
        Err(self.read_only("running the device"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_missing_daemons_say_so() {
        let (p, w) = DaemonBackend::parse_spec("/tmp/x").unwrap();
        assert_eq!((p, w), (PathBuf::from("/tmp/x"), LockWait::No));
        assert_eq!(DaemonBackend::parse_spec("/tmp/x?wait").unwrap().1, LockWait::Upto(DEFAULT_LOCK_WAIT));
        assert_eq!(DaemonBackend::parse_spec("d?wait=2.5").unwrap().1, LockWait::Upto(Duration::from_millis(2500)));
        assert!(DaemonBackend::parse_spec("d?later").is_err());
        for bad in ["d?wait=4.4e22", "d?wait=-1", "d?wait=nan", "d?wait=inf", "d?wait="] {
            assert!(DaemonBackend::parse_spec(bad).is_err(), "{bad}");
        }
        assert!(DaemonBackend::parse_spec("").is_err());
        let err = DaemonBackend::attach("/nonexistent/cqlab-dev").err().unwrap().to_string();
        assert!(
            err.contains("no simulator daemon at /nonexistent/cqlab-dev") && err.contains("cqlab sim serve"),
            "{err}"
        );
        let dir = std::env::temp_dir().join(format!("cqlab-nodaemon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = DaemonBackend::attach(&dir).err().unwrap().to_string();
        assert!(err.contains("no simulator daemon") && err.contains("no socket"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A socket whose backlog stays full (a stopped daemon with many
    /// clients queued) fails the connect at its deadline, naming the
    /// daemon's state, where a blocking connect waited for ever.
    #[test]
    fn a_full_backlog_fails_the_connect_at_its_deadline() {
        use nix::sys::socket::{bind, listen, socket, AddressFamily, Backlog, SockFlag, SockType, UnixAddr};
        use std::os::fd::AsRawFd;
        let dir = std::env::temp_dir().join(format!("cqlab-backlog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let paths = DevicePaths::new(&dir);
        // A listener that never accepts, with room for one pending client.
        let listener = socket(AddressFamily::Unix, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).unwrap();
        bind(listener.as_raw_fd(), &UnixAddr::new(&paths.socket()).unwrap()).unwrap();
        listen(&listener, Backlog::new(0).unwrap()).unwrap();
        std::fs::write(paths.pid(), std::process::id().to_string()).unwrap();
        let mut queued = Vec::new();
        let start = Instant::now();
        let err = loop {
            match connect_within(&paths, Duration::from_millis(200)) {
                Ok(s) => queued.push(s),
                Err(e) => break e.to_string(),
            }
            assert!(queued.len() < 64, "the backlog never filled");
        };
        assert!(!queued.is_empty(), "the first client queues: {err}");
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        assert!(err.contains("kept its backlog of connections full for 0.2 s"), "{err}");
        assert!(err.contains("is running but did not answer"), "{err}");
        drop(listener);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A pid file naming a zombie (a daemon that exited, unreaped) is a
    /// dead daemon, not a live one to retry for (helper-86's audit: it was
    /// taken for alive and reported "running").
    #[test]
    fn a_zombie_daemon_is_reported_exited_not_alive() {
        let dir = std::env::temp_dir().join(format!("cqlab-zombie-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let paths = DevicePaths::new(&dir);
        // A socket nobody listens on any more: connections are refused.
        drop(std::os::unix::net::UnixListener::bind(paths.socket()).unwrap());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let start = Instant::now();
        while process_state::of(pid) == ProcessState::Running && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(process_state::of(pid), ProcessState::Exited, "the child is a zombie");
        std::fs::write(paths.pid(), pid.to_string()).unwrap();
        assert_eq!(live_daemon_pid(&paths), None);
        let err = connect_within(&paths, Duration::ZERO).err().unwrap().to_string();
        assert!(err.contains(&format!("its daemon, pid {pid}, has exited: a zombie")), "{err}");
        assert!(!err.contains("alive") && !err.contains("running"), "{err}");
        assert!(daemon_state(&paths, None).contains("has exited"), "{}", daemon_state(&paths, None));
        child.wait().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_lock_names_its_holder() {
        let dir = std::env::temp_dir().join(format!("cqlab-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = DevicePaths::new(&dir);
        // The daemon creates the lock file; without it there is no daemon.
        let err = lock_device(&paths, LockWait::No).err().unwrap().to_string();
        assert!(err.contains("no lock file"), "{err}");
        std::fs::write(paths.lock(), b"").unwrap();
        let held = lock_device(&paths, LockWait::No).unwrap();
        // flock locks belong to the open file description: a second open in
        // this process conflicts like another process would.
        let err = lock_device(&paths, LockWait::No).err().unwrap().to_string();
        assert!(err.contains(&format!("held by pid {}", std::process::id())), "{err}");
        let t = Instant::now();
        let err = lock_device(&paths, LockWait::Upto(Duration::from_millis(100))).err().unwrap().to_string();
        assert!(t.elapsed() >= Duration::from_millis(100) && err.contains("gave up waiting"), "{err}");
        drop(held);
        drop(lock_device(&paths, LockWait::No).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A directory no daemon serves is refused before its `lock` file gets
    /// a pid, and a `sock` that links elsewhere is no daemon's own
    /// (helper-48: notes in `lock` were overwritten; a linked socket ran on
    /// another daemon).
    #[test]
    fn a_directory_without_its_own_socket_is_refused_untouched() {
        let dir = std::env::temp_dir().join(format!("cqlab-nosock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = DevicePaths::new(&dir);
        std::fs::write(paths.lock(), b"notes\n").unwrap();
        let err = DaemonBackend::attach_with(&dir, LockWait::No).err().unwrap().to_string();
        assert!(err.contains("no socket"), "{err}");
        std::os::unix::fs::symlink("/tmp/elsewhere/sock", paths.socket()).unwrap();
        let err = DaemonBackend::attach_with(&dir, LockWait::No).err().unwrap().to_string();
        assert!(err.contains("is a symbolic link, not a daemon's own socket"), "{err}");
        assert_eq!(std::fs::read(paths.lock()).unwrap(), b"notes\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
