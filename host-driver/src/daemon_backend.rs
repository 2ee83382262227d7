//! The simulator daemon backend (`sim:PATH`): attach to a device that
//! `cqlab sim serve --dev PATH` runs in another, long-lived process.
//!
//! Files under PATH:
//! - `sock`: Unix socket. BAR reads and writes, polls, core debug views,
//!   reset and stop travel over it in the length-prefixed binary protocol of
//!   [`proto`], one request then one reply.
//! - `sysmem`: host sysmem. The daemon's chip and the client both map this
//!   file shared (memmap2), so the host polls its completion queues in local
//!   memory, as with real pinned sysmem, and the device reaches it at the
//!   PCIe endpoint.
//! - `lock`: one owner per device. A client takes `flock(LOCK_EX|LOCK_NB)` on
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

use crate::backend::{check_sysmem, Backend, CoreDebug, DramTraffic, Introspect, DEFAULT_POLL_CYCLES};
use crate::config::DeviceConfig;
use crate::error::{DriverError, Result};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::sysmem::CqSysmemLayout;
use memmap2::{MmapMut, MmapOptions};
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long `sim:PATH?wait` waits for the device's owner to let go.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(60);
/// How long a client waits for the daemon to answer one request.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// Paths of the files under a daemon's device directory.
#[derive(Clone, Debug)]
pub struct DevicePaths {
    pub dir: PathBuf,
}

impl DevicePaths {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DevicePaths { dir: dir.into() }
    }
    pub fn socket(&self) -> PathBuf {
        self.dir.join("sock")
    }
    pub fn sysmem(&self) -> PathBuf {
        self.dir.join("sysmem")
    }
    pub fn lock(&self) -> PathBuf {
        self.dir.join("lock")
    }
    pub fn pid(&self) -> PathBuf {
        self.dir.join("pid")
    }
}

/// The mmap layer: maps `len` bytes of the file at `path` shared, read and
/// write. With `create` the file is created (or resized) to `len` bytes,
/// sparse; without, its length must already be `len`.
pub fn map_shared(path: &Path, len: usize, create: bool) -> Result<MmapMut> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
        .map_err(|e| DriverError::Backend(format!("opening sysmem file {}: {e}", path.display())))?;
    let found = file.metadata()?.len();
    if create {
        file.set_len(len as u64)?;
    } else if found != len as u64 {
        return Err(DriverError::Backend(format!(
            "sysmem file {} holds {found} bytes, the daemon announced {len}",
            path.display()
        )));
    }
    // SAFETY: the mapping is of a regular file we keep at `len` bytes (never
    // truncated while mapped: only `cqlab sim serve` resizes it, before it
    // maps). Other processes write the same pages, so Rust's exclusive-access
    // assumption holds only by protocol: the daemon accesses sysmem only
    // while serving a request, the single flock-holding client only between
    // requests (module docs), so no access overlaps another process's write.
    let map = unsafe { MmapOptions::new().len(len).map_mut(&file) }
        .map_err(|e| DriverError::Backend(format!("mapping sysmem file {}: {e}", path.display())))?;
    Ok(map)
}

/// The wire protocol between `cqlab sim serve` and its clients.
///
/// Every message is a frame: a little-endian `u32` payload length, then the
/// payload. A request payload is an opcode byte and its fields (integers
/// little-endian). A reply payload is a status byte (0 ok, 1 error), the
/// device time (`u64`), then the body (ok) or a UTF-8 message (error).
///
/// | op | request fields | ok body |
/// |---|---|---|
/// | 1 HELLO | version u32, client pid u32 | [`ChipInfo`] |
/// | 2 WRITE | NOC address u64, data (rest) | — |
/// | 3 READ | NOC address u64, length u32 | data |
/// | 4 POLL | cycles u64 | — (the time is in every reply) |
/// | 5 CORE_DEBUG | packed coordinates u32 | present u8, pc u32, halt (present u8, len u32, UTF-8), n u32, n x pc u32 |
/// | 6 DETACH | — | — |
/// | 7 RESET | — | — (power-on state) |
/// | 8 STOP | — | — (the daemon exits after replying) |
/// | 9 DIGEST | — | device-state digest u64 |
/// | 10 DRAM_TRAFFIC | reset u8 | read bytes u64, written bytes u64 (before a reset) |
pub mod proto {
    use std::io::{self, Read, Write};

    pub const VERSION: u32 = 1;
    /// Largest payload either side accepts.
    pub const MAX_FRAME: usize = 1 << 28;

    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Request {
        Hello { version: u32, pid: u32 },
        Write { addr: u64, data: Vec<u8> },
        Read { addr: u64, len: u32 },
        Poll { cycles: u64 },
        CoreDebug { core: u32 },
        Detach,
        Reset,
        Stop,
        Digest,
        DramTraffic { reset: bool },
    }

    impl Request {
        /// Name for error messages.
        pub fn name(&self) -> &'static str {
            match self {
                Request::Hello { .. } => "HELLO",
                Request::Write { .. } => "WRITE",
                Request::Read { .. } => "READ",
                Request::Poll { .. } => "POLL",
                Request::CoreDebug { .. } => "CORE_DEBUG",
                Request::Detach => "DETACH",
                Request::Reset => "RESET",
                Request::Stop => "STOP",
                Request::Digest => "DIGEST",
                Request::DramTraffic { .. } => "DRAM_TRAFFIC",
            }
        }

        pub fn encode(&self) -> Vec<u8> {
            let mut b = Vec::with_capacity(16);
            match self {
                Request::Hello { version, pid } => {
                    b.push(1);
                    b.extend(version.to_le_bytes());
                    b.extend(pid.to_le_bytes());
                }
                Request::Write { addr, data } => {
                    b.reserve(data.len());
                    b.push(2);
                    b.extend(addr.to_le_bytes());
                    b.extend_from_slice(data);
                }
                Request::Read { addr, len } => {
                    b.push(3);
                    b.extend(addr.to_le_bytes());
                    b.extend(len.to_le_bytes());
                }
                Request::Poll { cycles } => {
                    b.push(4);
                    b.extend(cycles.to_le_bytes());
                }
                Request::CoreDebug { core } => {
                    b.push(5);
                    b.extend(core.to_le_bytes());
                }
                Request::Detach => b.push(6),
                Request::Reset => b.push(7),
                Request::Stop => b.push(8),
                Request::Digest => b.push(9),
                Request::DramTraffic { reset } => {
                    b.push(10);
                    b.push(*reset as u8);
                }
            }
            b
        }

        pub fn decode(p: &[u8]) -> Result<Self, String> {
            let mut r = Reader::new(p);
            let op = r.u8("opcode")?;
            let req = match op {
                1 => Request::Hello { version: r.u32("version")?, pid: r.u32("pid")? },
                2 => Request::Write { addr: r.u64("address")?, data: r.rest().to_vec() },
                3 => Request::Read { addr: r.u64("address")?, len: r.u32("length")? },
                4 => Request::Poll { cycles: r.u64("cycles")? },
                5 => Request::CoreDebug { core: r.u32("core")? },
                6 => Request::Detach,
                7 => Request::Reset,
                8 => Request::Stop,
                9 => Request::Digest,
                10 => Request::DramTraffic { reset: r.u8("reset")? != 0 },
                _ => return Err(format!("unknown opcode {op} (expected 1..=10)")),
            };
            r.end()?;
            Ok(req)
        }
    }

    /// What the daemon simulates (HELLO's answer).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct ChipInfo {
        pub version: u32,
        pub daemon_pid: u32,
        pub seed: u64,
        pub worker_cols: u8,
        pub worker_rows: u8,
        pub num_cqs: u8,
        pub dram_banks: u32,
        pub sysmem_size: u64,
        /// Pid of the previous client if it ended without DETACH (killed),
        /// else 0.
        pub recovered_from: u32,
    }

    impl ChipInfo {
        pub fn encode(&self) -> Vec<u8> {
            let mut b = Vec::new();
            b.extend(self.version.to_le_bytes());
            b.extend(self.daemon_pid.to_le_bytes());
            b.extend(self.seed.to_le_bytes());
            b.extend([self.worker_cols, self.worker_rows, self.num_cqs, 0]);
            b.extend(self.dram_banks.to_le_bytes());
            b.extend(self.sysmem_size.to_le_bytes());
            b.extend(self.recovered_from.to_le_bytes());
            b
        }

        pub fn decode(p: &[u8]) -> Result<Self, String> {
            let mut r = Reader::new(p);
            let info = ChipInfo {
                version: r.u32("version")?,
                daemon_pid: r.u32("daemon pid")?,
                seed: r.u64("seed")?,
                worker_cols: r.u8("worker cols")?,
                worker_rows: r.u8("worker rows")?,
                num_cqs: r.u8("CQs")?,
                dram_banks: {
                    r.u8("padding")?;
                    r.u32("DRAM banks")?
                },
                sysmem_size: r.u64("sysmem size")?,
                recovered_from: r.u32("recovered pid")?,
            };
            r.end()?;
            Ok(info)
        }
    }

    /// A core's debug view on the wire.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct CoreView {
        pub pc: u32,
        pub halt: Option<String>,
        pub last_pcs: Vec<u32>,
    }

    impl CoreView {
        pub fn encode(view: Option<&CoreView>) -> Vec<u8> {
            let mut b = Vec::new();
            let Some(v) = view else {
                b.push(0);
                return b;
            };
            b.push(1);
            b.extend(v.pc.to_le_bytes());
            match &v.halt {
                Some(h) => {
                    b.push(1);
                    b.extend((h.len() as u32).to_le_bytes());
                    b.extend(h.as_bytes());
                }
                None => b.push(0),
            }
            b.extend((v.last_pcs.len() as u32).to_le_bytes());
            for pc in &v.last_pcs {
                b.extend(pc.to_le_bytes());
            }
            b
        }

        pub fn decode(p: &[u8]) -> Result<Option<CoreView>, String> {
            let mut r = Reader::new(p);
            if r.u8("present")? == 0 {
                r.end()?;
                return Ok(None);
            }
            let pc = r.u32("pc")?;
            let halt = match r.u8("halt present")? {
                0 => None,
                _ => {
                    let n = r.u32("halt length")? as usize;
                    Some(String::from_utf8_lossy(r.bytes(n, "halt reason")?).into_owned())
                }
            };
            let n = r.u32("pc count")? as usize;
            let last_pcs = (0..n).map(|_| r.u32("pc")).collect::<Result<_, _>>()?;
            r.end()?;
            Ok(Some(CoreView { pc, halt, last_pcs }))
        }
    }

    /// A reply: `Ok(body)` or `Err(message)`, with the device time.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Reply {
        pub now: u64,
        pub result: Result<Vec<u8>, String>,
    }

    impl Reply {
        pub fn encode(&self) -> Vec<u8> {
            let (status, body) = match &self.result {
                Ok(b) => (0u8, b.as_slice()),
                Err(m) => (1u8, m.as_bytes()),
            };
            let mut b = Vec::with_capacity(9 + body.len());
            b.push(status);
            b.extend(self.now.to_le_bytes());
            b.extend_from_slice(body);
            b
        }

        pub fn decode(p: &[u8]) -> Result<Self, String> {
            let mut r = Reader::new(p);
            let status = r.u8("status")?;
            let now = r.u64("device time")?;
            let body = r.rest();
            let result = match status {
                0 => Ok(body.to_vec()),
                1 => Err(String::from_utf8_lossy(body).into_owned()),
                s => return Err(format!("reply status {s} (expected 0 or 1)")),
            };
            Ok(Reply { now, result })
        }
    }

    /// Writes one frame.
    pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
        let len = u32::try_from(payload.len()).ok().filter(|&n| n as usize <= MAX_FRAME).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("frame of {} bytes > {MAX_FRAME}", payload.len()))
        })?;
        w.write_all(&len.to_le_bytes())?;
        w.write_all(payload)?;
        w.flush()
    }

    /// Reads one frame; `Ok(None)` on a clean end of stream before a frame.
    pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
        let mut len = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match r.read(&mut len[got..])? {
                0 if got == 0 => return Ok(None),
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => got += n,
            }
        }
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_FRAME {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes > {MAX_FRAME}")));
        }
        let mut payload = vec![0u8; len];
        r.read_exact(&mut payload)?;
        Ok(Some(payload))
    }

    struct Reader<'a> {
        p: &'a [u8],
        at: usize,
    }

    impl<'a> Reader<'a> {
        fn new(p: &'a [u8]) -> Self {
            Reader { p, at: 0 }
        }
        fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
            let s = self.p.get(self.at..self.at + n).ok_or_else(|| {
                format!(
                    "message truncated: {what} needs {n} bytes at offset {}, {} left",
                    self.at,
                    self.p.len() - self.at
                )
            })?;
            self.at += n;
            Ok(s)
        }
        fn u8(&mut self, what: &str) -> Result<u8, String> {
            Ok(self.bytes(1, what)?[0])
        }
        fn u32(&mut self, what: &str) -> Result<u32, String> {
            Ok(u32::from_le_bytes(self.bytes(4, what)?.try_into().expect("4 bytes")))
        }
        fn u64(&mut self, what: &str) -> Result<u64, String> {
            Ok(u64::from_le_bytes(self.bytes(8, what)?.try_into().expect("8 bytes")))
        }
        fn rest(&mut self) -> &'a [u8] {
            let s = &self.p[self.at..];
            self.at = self.p.len();
            s
        }
        fn end(&self) -> Result<(), String> {
            match self.p.len() - self.at {
                0 => Ok(()),
                n => Err(format!("{n} unexpected bytes at the end of the message (offset {})", self.at)),
            }
        }
    }
}

use proto::{ChipInfo, CoreView, Reply, Request};

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
    paths: DevicePaths,
    stream: UnixStream,
    sysmem: MmapMut,
    _lock: Flock<File>,
    info: ChipInfo,
    now: u64,
    poll_cycles: u64,
}

fn no_daemon(paths: &DevicePaths, why: String) -> DriverError {
    DriverError::Backend(format!(
        "no simulator daemon at {}: {why}; start one with `cqlab sim serve --dev {}`",
        paths.dir.display(),
        paths.dir.display()
    ))
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
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock)
            .map_err(|e| DriverError::Backend(format!("opening lock file {}: {e}", lock.display())))?;
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

/// Connects to the daemon's socket with a clear error when none runs.
fn connect(paths: &DevicePaths) -> Result<UnixStream> {
    if !paths.dir.is_dir() {
        return Err(no_daemon(paths, "the directory does not exist".into()));
    }
    let sock = paths.socket();
    let stream = UnixStream::connect(&sock).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => no_daemon(paths, format!("no socket {}", sock.display())),
        std::io::ErrorKind::ConnectionRefused => {
            no_daemon(paths, format!("{} refuses connections (a daemon that died?)", sock.display()))
        }
        _ => no_daemon(paths, format!("connecting to {}: {e}", sock.display())),
    })?;
    stream.set_read_timeout(Some(REPLY_TIMEOUT))?;
    stream.set_write_timeout(Some(REPLY_TIMEOUT))?;
    Ok(stream)
}

/// One request, one reply, over `stream`.
fn call(stream: &UnixStream, paths: &DevicePaths, req: &Request) -> Result<(u64, Vec<u8>)> {
    let lost = |e: std::io::Error| {
        let what = match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                format!("timeout after {} s waiting for the reply to {}", REPLY_TIMEOUT.as_secs(), req.name())
            }
            _ => format!("{} failed: {e}", req.name()),
        };
        DriverError::Backend(format!("simulator daemon at {}: {what}", paths.dir.display()))
    };
    let mut s = stream;
    proto::write_frame(&mut s, &req.encode()).map_err(lost)?;
    let frame = proto::read_frame(&mut s)
        .map_err(lost)?
        .ok_or_else(|| lost(std::io::Error::other("the daemon closed the connection (stopped?)")))?;
    let reply = Reply::decode(&frame).map_err(|e| {
        DriverError::Backend(format!("simulator daemon at {}: bad reply to {}: {e}", paths.dir.display(), req.name()))
    })?;
    match reply.result {
        Ok(body) => Ok((reply.now, body)),
        Err(m) => {
            Err(DriverError::Backend(format!("simulator daemon at {}: {}: {m}", paths.dir.display(), req.name())))
        }
    }
}

fn hello(stream: &UnixStream, paths: &DevicePaths) -> Result<ChipInfo> {
    let (_, body) = call(stream, paths, &Request::Hello { version: proto::VERSION, pid: std::process::id() })?;
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
            Some(o) => match o.strip_prefix("wait=").and_then(|s| s.parse::<f64>().ok()) {
                Some(secs) if secs >= 0.0 && secs.is_finite() => LockWait::Upto(Duration::from_secs_f64(secs)),
                _ => return Err(DriverError::Invalid(format!("unknown sim: option {o:?} (known: wait, wait=SECS)"))),
            },
        };
        Ok((PathBuf::from(path), wait))
    }

    /// Attaches: takes the device's lock (see [`LockWait`]), connects,
    /// learns the chip's shape and maps sysmem.
    pub fn attach_with(path: impl AsRef<Path>, wait: LockWait) -> Result<Self> {
        let paths = DevicePaths::new(path.as_ref());
        if !paths.dir.is_dir() {
            return Err(no_daemon(&paths, "the directory does not exist".into()));
        }
        let lock = lock_device(&paths, wait)?;
        let stream = connect(&paths)?;
        let info = hello(&stream, &paths)?;
        let sysmem = map_shared(&paths.sysmem(), info.sysmem_size as usize, false)?;
        Ok(DaemonBackend { paths, stream, sysmem, _lock: lock, info, now: 0, poll_cycles: DEFAULT_POLL_CYCLES })
    }

    /// What the daemon simulates.
    pub fn info(&self) -> &ChipInfo {
        &self.info
    }

    /// Fails unless the daemon's chip has the shape `cfg` expects.
    pub fn check_config(&self, cfg: &DeviceConfig) -> Result<()> {
        let i = &self.info;
        let ours = (cfg.worker_cols, cfg.worker_rows, cfg.num_cqs, cfg.dram_banks);
        let theirs = (i.worker_cols, i.worker_rows, i.num_cqs, i.dram_banks);
        if ours != theirs {
            return Err(DriverError::Invalid(format!(
                "the daemon at {} simulates {}x{} workers, {} CQs, {} DRAM banks; the device configuration asks for \
                 {}x{} workers, {} CQs, {} DRAM banks (restart the daemon with --grid {}x{} --cqs {} --dram-banks {})",
                self.paths.dir.display(),
                theirs.0,
                theirs.1,
                theirs.2,
                theirs.3,
                ours.0,
                ours.1,
                ours.2,
                ours.3,
                ours.0,
                ours.1,
                ours.2,
                ours.3
            )));
        }
        let need = CqSysmemLayout::for_cq(cfg.num_cqs - 1, cfg.issue_size, cfg.completion_size).end();
        if need > i.sysmem_size {
            return Err(DriverError::Invalid(format!(
                "the command queues need {need} bytes of sysmem, the daemon at {} has {}",
                self.paths.dir.display(),
                i.sysmem_size
            )));
        }
        Ok(())
    }

    /// Restores the device's power-on state (`cqlab reset`).
    pub fn reset(&mut self) -> Result<()> {
        self.now = call(&self.stream, &self.paths, &Request::Reset)?.0;
        Ok(())
    }

    fn request(&mut self, req: &Request) -> Result<Vec<u8>> {
        let (now, body) = call(&self.stream, &self.paths, req)?;
        self.now = now;
        Ok(body)
    }
}

impl Drop for DaemonBackend {
    fn drop(&mut self) {
        // A clean detach; if it fails the daemon sees a vanished client and
        // quiesces, which is also fine.
        let _ = call(&self.stream, &self.paths, &Request::Detach);
    }
}

/// Asks the daemon at `path` to exit (`cqlab sim stop`). Needs no lock (an
/// attached client then gets errors naming the stopped daemon) and sends no
/// HELLO (it is not a session). Returns the daemon's pid from its pid file.
pub fn stop_daemon(path: &Path) -> Result<Option<u32>> {
    let paths = DevicePaths::new(path);
    let stream = connect(&paths)?;
    let pid = std::fs::read_to_string(paths.pid()).ok().and_then(|s| s.trim().parse().ok());
    // The daemon may exit before its reply reaches us: a connection closed
    // after STOP is a success once the socket is gone.
    if let Err(e) = call(&stream, &paths, &Request::Stop) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while paths.socket().exists() {
            if std::time::Instant::now() > deadline {
                return Err(e);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    Ok(pid)
}

impl Backend for DaemonBackend {
    fn name(&self) -> String {
        format!(
            "simulator daemon at {} (pid {}, seed {})",
            self.paths.dir.display(),
            self.info.daemon_pid,
            self.info.seed
        )
    }
    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()> {
        self.request(&Request::Write { addr: addr.0, data: data.to_vec() })?;
        Ok(())
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        let len = u32::try_from(buf.len())
            .map_err(|_| DriverError::Invalid(format!("a BAR read of {} bytes is too long", buf.len())))?;
        let body = self.request(&Request::Read { addr: addr.0, len })?;
        if body.len() != buf.len() {
            return Err(DriverError::Backend(format!(
                "simulator daemon at {}: READ of {} bytes at {:#x} returned {}",
                self.paths.dir.display(),
                buf.len(),
                addr.0,
                body.len()
            )));
        }
        buf.copy_from_slice(&body);
        Ok(())
    }
    fn sysmem_len(&self) -> usize {
        self.sysmem.len()
    }
    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()> {
        // The daemon touches sysmem only while serving our request (module
        // docs): between requests a plain copy is a snapshot.
        let r = check_sysmem(offset, buf.len(), self.sysmem.len())?;
        buf.copy_from_slice(&self.sysmem[r]);
        Ok(())
    }
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]> {
        let r = check_sysmem(offset, len, self.sysmem.len())?;
        Ok(&mut self.sysmem[r])
    }
    fn poll(&mut self) -> Result<u64> {
        self.request(&Request::Poll { cycles: self.poll_cycles })?;
        Ok(self.now)
    }
    fn now(&self) -> u64 {
        self.now
    }
    fn introspect(&mut self) -> Option<&mut dyn Introspect> {
        Some(self)
    }
}

impl DaemonBackend {
    fn bad_body(&self, what: &str, e: impl std::fmt::Display) -> DriverError {
        DriverError::Backend(format!("simulator daemon at {}: bad {what} reply: {e}", self.paths.dir.display()))
    }
    fn u64s<const N: usize>(&self, what: &str, body: &[u8]) -> Result<[u64; N]> {
        if body.len() != 8 * N {
            return Err(self.bad_body(what, format!("{} bytes, expected {}", body.len(), 8 * N)));
        }
        Ok(std::array::from_fn(|i| u64::from_le_bytes(body[8 * i..8 * i + 8].try_into().expect("8 bytes"))))
    }
}

impl Introspect for DaemonBackend {
    fn core_debug(&mut self, core: Coord) -> Result<Option<CoreDebug>> {
        let body = self.request(&Request::CoreDebug { core: core.packed() })?;
        let view = CoreView::decode(&body).map_err(|e| self.bad_body("CORE_DEBUG", e))?;
        Ok(view.map(|v| CoreDebug { pc: v.pc, halt: v.halt, last_pcs: v.last_pcs }))
    }
    fn digest(&mut self) -> Result<u64> {
        let body = self.request(&Request::Digest)?;
        Ok(self.u64s::<1>("DIGEST", &body)?[0])
    }
    fn dram_traffic(&mut self) -> Result<DramTraffic> {
        let body = self.request(&Request::DramTraffic { reset: false })?;
        let [read_bytes, write_bytes] = self.u64s::<2>("DRAM_TRAFFIC", &body)?;
        Ok(DramTraffic { read_bytes, write_bytes })
    }
    fn reset_dram_traffic(&mut self) -> Result<()> {
        self.request(&Request::DramTraffic { reset: true })?;
        Ok(())
    }
    fn peek(&mut self, _: NocAddr, _: &mut [u8]) -> Result<bool> {
        // The protocol has no untimed read: the caller reads through the BAR.
        Ok(false)
    }
    fn run_cycles(&mut self, cycles: u64) -> Result<u64> {
        self.request(&Request::Poll { cycles })?;
        Ok(self.now)
    }
}

#[cfg(test)]
mod tests {
    use super::proto::*;
    use super::*;

    #[test]
    fn requests_and_replies_round_trip() {
        let reqs = [
            Request::Hello { version: VERSION, pid: 42 },
            Request::Write { addr: 0x1234_5678_9abc, data: vec![1, 2, 3] },
            Request::Read { addr: 7, len: 64 },
            Request::Poll { cycles: 500 },
            Request::CoreDebug { core: 0x0102 },
            Request::Detach,
            Request::Reset,
            Request::Stop,
            Request::Digest,
            Request::DramTraffic { reset: true },
        ];
        for r in reqs {
            assert_eq!(Request::decode(&r.encode()), Ok(r));
        }
        assert!(Request::decode(&[11]).unwrap_err().contains("unknown opcode 11"));
        assert!(Request::decode(&[3, 1, 2]).unwrap_err().contains("truncated"));
        assert!(Request::decode(&[6, 0]).unwrap_err().contains("unexpected bytes"));
        let info = ChipInfo {
            version: VERSION,
            daemon_pid: 9,
            seed: 3,
            worker_cols: 2,
            worker_rows: 2,
            num_cqs: 1,
            dram_banks: 4,
            sysmem_size: 1 << 20,
            recovered_from: 0,
        };
        assert_eq!(ChipInfo::decode(&info.encode()), Ok(info));
        let view = CoreView { pc: 0x100, halt: Some("ecall".into()), last_pcs: vec![1, 2] };
        assert_eq!(CoreView::decode(&CoreView::encode(Some(&view))), Ok(Some(view)));
        assert_eq!(CoreView::decode(&CoreView::encode(None)), Ok(None));
        for rep in [Reply { now: 5, result: Ok(vec![1]) }, Reply { now: 6, result: Err("no".into()) }] {
            assert_eq!(Reply::decode(&rep.encode()), Ok(rep));
        }
        let mut wire = Vec::new();
        write_frame(&mut wire, b"abc").unwrap();
        let mut r = &wire[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(read_frame(&mut r).unwrap(), None);
        let mut cut = &wire[..5];
        assert!(read_frame(&mut cut).is_err());
    }

    #[test]
    fn specs_parse_and_missing_daemons_say_so() {
        let (p, w) = DaemonBackend::parse_spec("/tmp/x").unwrap();
        assert_eq!((p, w), (PathBuf::from("/tmp/x"), LockWait::No));
        assert_eq!(DaemonBackend::parse_spec("/tmp/x?wait").unwrap().1, LockWait::Upto(DEFAULT_LOCK_WAIT));
        assert_eq!(DaemonBackend::parse_spec("d?wait=2.5").unwrap().1, LockWait::Upto(Duration::from_millis(2500)));
        assert!(DaemonBackend::parse_spec("d?later").is_err());
        assert!(DaemonBackend::parse_spec("").is_err());
        let err = DaemonBackend::attach("/nonexistent/cqlab-dev").err().unwrap().to_string();
        assert!(
            err.contains("no simulator daemon at /nonexistent/cqlab-dev") && err.contains("cqlab sim serve"),
            "{err}"
        );
        let dir = std::env::temp_dir().join(format!("cqlab-nodaemon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = DaemonBackend::attach(&dir).err().unwrap().to_string();
        assert!(err.contains("no socket"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_lock_names_its_holder() {
        let dir = std::env::temp_dir().join(format!("cqlab-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = DevicePaths::new(&dir);
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
}
