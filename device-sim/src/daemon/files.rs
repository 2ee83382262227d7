//! The daemon's device directory: its files, who may own them, how they
//! are created, and the shared sysmem mapping.
//!
//! A device directory is private to one user: the daemon creates it 0700
//! and its files 0600 whatever the umask, refuses a directory that another
//! user owns (they could swap its files under us), and creates each file
//! with `O_CREAT|O_EXCL|O_NOFOLLOW`, so a planted symlink (`sysmem ->
//! victim.txt`) is an error instead of a file the daemon truncates.
#![allow(unsafe_code)] // simulator memory: docs/design.md, "Where `unsafe` lives"

use memmap2::{MmapMut, MmapOptions, MmapRaw};
use nix::unistd::Uid;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of the device directory.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file in it (socket included).
pub const FILE_MODE: u32 = 0o600;
/// Longest socket path `bind` accepts (`sun_path` is 108 bytes with its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Paths of the files under a daemon's device directory.
#[derive(Clone, Debug)]
pub struct DevicePaths {
    pub dir: PathBuf,
}

impl DevicePaths {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DevicePaths { dir: dir.into() }
    }
    /// Unix socket: requests and replies.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("sock")
    }
    /// Where the daemon binds and starts listening before it publishes the
    /// socket as [`DevicePaths::socket`] (so that name appears only once it
    /// accepts). Short, to stay within [`MAX_SOCKET_PATH`] like `sock`.
    pub fn staging_socket(&self) -> PathBuf {
        self.dir.join("sock.new")
    }
    /// Host sysmem, mapped shared by the daemon and its client.
    pub fn sysmem(&self) -> PathBuf {
        self.dir.join("sysmem")
    }
    /// Clients take `flock` on it while attached and record their pid.
    pub fn lock(&self) -> PathBuf {
        self.dir.join("lock")
    }
    /// The daemon's pid.
    pub fn pid(&self) -> PathBuf {
        self.dir.join("pid")
    }
}

/// Fails if the daemon's socket under `paths.dir` would be longer than
/// `bind` takes: checked before the directory is touched.
pub fn check_socket_path(paths: &DevicePaths) -> Result<(), FileError> {
    // The socket is bound under its staging name, the longer one.
    let sock = paths.staging_socket();
    let len = sock.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(FileError::refused(
            &sock,
            format!("a socket path of {len} bytes; Unix sockets allow at most {MAX_SOCKET_PATH}: use a shorter --dev"),
        ));
    }
    Ok(())
}

/// A refusal or failure with the path it concerns.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: {reason}")]
    Refused { path: String, reason: String },
    #[error("{what} {path}: {source}")]
    Io { what: &'static str, path: String, source: io::Error },
}

impl FileError {
    fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> FileError + 'a {
        move |source| FileError::Io { what, path: path.display().to_string(), source }
    }
    fn refused(path: &Path, reason: String) -> FileError {
        FileError::Refused { path: path.display().to_string(), reason }
    }
}

/// Makes `dir` a private device directory of the calling user. Returns
/// whether it was created (so a failed start can remove it).
///
/// Missing: created 0700 (parents as by `mkdir -p`). Present: it must pass
/// [`check_dir`] first, and only then is a looser mode tightened to 0700,
/// so a refused directory is left as it was.
pub fn prepare_dir(dir: &Path) -> Result<bool, FileError> {
    if check_dir(dir)? {
        let m = std::fs::metadata(dir).map_err(FileError::io("inspecting", dir))?;
        if m.mode() & 0o777 != DIR_MODE {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
                .map_err(FileError::io("setting the mode of", dir))?;
        }
        return Ok(false);
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(FileError::io("creating the parent of", dir))?;
    }
    match std::fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
        // Another start made it between the look and the make: it is
        // present now, and checked as such.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return prepare_dir(dir).map(|_| false),
        r => r.map_err(FileError::io("creating device directory", dir))?,
    }
    // The umask may have removed bits from DIR_MODE; never added any.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
        .map_err(FileError::io("setting the mode of", dir))?;
    Ok(true)
}

/// Whether `dir` may become a device directory, changing nothing: `Ok(false)`
/// when it is missing (a start creates it), `Ok(true)` when it is a real
/// directory (not a symlink) of the calling user that holds nothing but what
/// a stopped simulator of either kind leaves there ([`Leftover`]). A start
/// deletes or replaces those files, so any other entry refuses the whole
/// directory, naming the first by name (a `pid` or `sysmem` of the user's
/// own was deleted without a word).
pub fn check_dir(dir: &Path) -> Result<bool, FileError> {
    let m = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(FileError::Io { what: "inspecting", path: dir.display().to_string(), source: e }),
        Ok(m) => m,
    };
    if m.file_type().is_symlink() {
        return Err(FileError::refused(dir, "is a symbolic link; a device directory must be a real directory".into()));
    }
    if !m.is_dir() {
        return Err(FileError::refused(dir, "exists and is not a directory".into()));
    }
    let me = Uid::effective().as_raw();
    if m.uid() != me {
        return Err(FileError::refused(
            dir,
            format!(
                "is owned by uid {}, not by this user (uid {me}): refusing a device directory another user \
                 controls (they could replace its files); use a directory of your own",
                m.uid()
            ),
        ));
    }
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).map_err(FileError::io("reading", dir))? {
        names.push(e.map_err(FileError::io("reading", dir))?.file_name());
    }
    names.sort();
    for name in names {
        if let Err(what) = leftover(&dir.join(&name), &name.to_string_lossy(), me) {
            return Err(FileError::refused(
                dir,
                format!(
                    "holds {what}: a start reuses only a directory that a stopped `cqlab sim serve` or `cqlab sim \
                     ttkmd` left (it deletes or replaces their files), so nothing here is touched; use a new or \
                     empty directory"
                ),
            ));
        }
    }
    Ok(true)
}

/// What a stopped simulator leaves in its directory, by name.
#[derive(Clone, Copy)]
enum Leftover {
    /// `sock`, `sock.new`: the daemon's socket.
    Socket,
    /// `pid`, `lock`, `lock-ctl-N` (a tt-kmd client's LOCK_CTL), `fds` (its
    /// open's admission), `tlb-N` (its TLB windows): empty, or the process id
    /// the daemon or a client recorded.
    Pid,
    /// `sysmem`, `ctl`, `l1`, `regs`, `dram`: mapped memory, whole pages
    /// (empty when a start was killed before sizing it).
    Mapped,
}

impl Leftover {
    fn of(name: &str) -> Option<Leftover> {
        match name {
            "sock" | "sock.new" => Some(Leftover::Socket),
            // `runner`: the lock file `sim ttkmd` held before 2026-12-01,
            // left in the directories of the simulators it ran.
            "pid" | "lock" | "runner" | "fds" => Some(Leftover::Pid),
            "sysmem" | "ctl" | "l1" | "regs" | "dram" => Some(Leftover::Mapped),
            // As `format!("lock-ctl-{index}")` spells a u8, `format!("tlb-{id}")` a u32.
            _ => None
                .or(name.strip_prefix("lock-ctl-").filter(|i| i.parse::<u8>().is_ok_and(|v| v.to_string() == *i)))
                .or(name.strip_prefix("tlb-").filter(|i| i.parse::<u32>().is_ok_and(|v| v.to_string() == *i)))
                .map(|_| Leftover::Pid),
        }
    }
}

/// `Ok` if `path` (named `name`) is a file a simulator of uid `me` leaves, as
/// it leaves it; else what it is instead ("\"notes.txt\", which no simulator
/// makes"). A user's file of a simulator's name is told apart by its kind,
/// owner, mode (the simulators make theirs 0600 whatever the umask) and
/// contents, so that it is not deleted for a stale device file.
fn leftover(path: &Path, name: &str, me: u32) -> Result<(), String> {
    let Some(kind) = Leftover::of(name) else { return Err(format!("{name:?}, which no simulator makes")) };
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        // Gone since the listing: a simulator starting here renamed or
        // removed it (its lock refuses this start next), no user's file.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{name:?}, which cannot be inspected ({e})")),
    };
    let t = m.file_type();
    if t.is_symlink() {
        return Err(format!("{name:?}, a symbolic link"));
    }
    match kind {
        Leftover::Socket if !t.is_socket() => return Err(format!("{name:?}, which is not a socket")),
        Leftover::Pid | Leftover::Mapped if !t.is_file() => {
            return Err(format!("{name:?}, which is not a regular file"))
        }
        _ => {}
    }
    if m.uid() != me {
        return Err(format!("{name:?}, owned by uid {}", m.uid()));
    }
    match kind {
        // A socket holds no data; one a daemon died binding still has the umask's mode.
        Leftover::Socket => Ok(()),
        _ if m.mode() & 0o777 & !FILE_MODE != 0 => {
            Err(format!("{name:?} of mode {:04o} (a simulator's files are {FILE_MODE:04o})", m.mode() & 0o777))
        }
        Leftover::Mapped if m.len() % 4096 == 0 => Ok(()),
        Leftover::Mapped => Err(format!("{name:?} of {} bytes, not whole 4096-byte pages", m.len())),
        Leftover::Pid => {
            // A pid is at most 10 digits; anything longer is not one.
            let text = (m.len() <= 20)
                .then(|| {
                    OpenOptions::new()
                        .read(true)
                        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
                        .open(path)
                        .and_then(|mut f| {
                            let mut s = String::new();
                            io::Read::read_to_string(&mut f, &mut s).map(|_| s)
                        })
                        // Removed since it was inspected: as above.
                        .or_else(|e| if e.kind() == io::ErrorKind::NotFound { Ok(String::new()) } else { Err(e) })
                        .ok()
                })
                .flatten();
            match text {
                Some(s) if s.trim().is_empty() || s.trim().parse::<u32>().is_ok() => Ok(()),
                _ => Err(format!("{name:?}, which holds no process id")),
            }
        }
    }
}

/// The two simulators that serve a device directory: `cqlab sim serve` (a
/// daemon, clients `sim:PATH`) and `cqlab sim ttkmd` (shared files, clients
/// `ttkmd-sim:PATH`). Both create `sysmem` (and `lock`) there, so a
/// directory holds one of either kind: both take [`lock_dir`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Simulator {
    Serve,
    Ttkmd,
}

impl Simulator {
    const ALL: [Simulator; 2] = [Simulator::Serve, Simulator::Ttkmd];

    /// Its command, as people type it.
    pub fn command(self) -> &'static str {
        match self {
            Simulator::Serve => "`cqlab sim serve`",
            Simulator::Ttkmd => "`cqlab sim ttkmd`",
        }
    }

    /// What it is, for messages: "a `cqlab sim serve` daemon".
    pub fn describe(self) -> &'static str {
        match self {
            Simulator::Serve => "a `cqlab sim serve` daemon",
            Simulator::Ttkmd => "a `cqlab sim ttkmd` simulator",
        }
    }

    /// The subcommand words in its command line.
    fn words(self) -> [&'static [u8]; 2] {
        match self {
            Simulator::Serve => [b"sim", b"serve"],
            Simulator::Ttkmd => [b"sim", b"ttkmd"],
        }
    }
}

/// Who holds a device directory's lock, as far as this host can tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// From `/proc/locks`; `None` where it cannot be read.
    pub pid: Option<u32>,
    /// From the holder's command line (or, for one exiting, its records).
    pub kind: Option<Simulator>,
}

impl std::fmt::Display for Holder {
    /// "pid 42, a `cqlab sim serve` daemon".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "pid {pid}")?,
            None => f.write_str("a process that /proc/locks does not name")?,
        }
        match (self.kind, self.pid) {
            (Some(k), _) => write!(f, ", {}", k.describe()),
            (None, Some(_)) => f.write_str(" (by its command line neither `cqlab sim serve` nor `cqlab sim ttkmd`)"),
            (None, None) => Ok(()),
        }
    }
}

/// An exclusive lock on the device directory itself, held by its simulator
/// (`sim serve` or `sim ttkmd`, the same lock for both) from before it
/// touches a file there until it exits: a second simulator of either kind
/// is refused before it changes anything (it would replace `sysmem` under
/// the first one's clients, and a failed start removes what it made, which
/// would be the first one's files). The directory, not a file in it, so
/// that a refused start creates nothing. Clients lock `lock`, not this.
pub fn lock_dir(dir: &Path, me: Simulator) -> Result<nix::fcntl::Flock<File>, FileError> {
    use nix::fcntl::{Flock, FlockArg};
    let f = File::open(dir).map_err(FileError::io("opening", dir))?;
    Flock::lock(f, FlockArg::LockExclusiveNonblock).map_err(|(f, errno)| match errno {
        nix::errno::Errno::EWOULDBLOCK => {
            let holder = f.metadata().ok().map_or(Holder { pid: None, kind: None }, |m| holder_of(dir, &m));
            FileError::refused(dir, refusal(dir, me, &holder))
        }
        e => FileError::Io { what: "locking", path: dir.display().to_string(), source: io::Error::from(e) },
    })
}

/// Why `me` may not start on `dir`, which `holder` holds. The wording for a
/// holder of the same kind is what each command said before they shared
/// the lock.
fn refusal(dir: &Path, me: Simulator, holder: &Holder) -> String {
    let stop = match (holder.kind, holder.pid) {
        (Some(Simulator::Serve), _) => format!("stop it with `cqlab sim stop --dev {}`", dir.display()),
        (_, Some(pid)) => format!("stop it with Ctrl-C or `kill {pid}`"),
        (_, None) => "stop it first".into(),
    };
    let pid = holder.pid.map_or_else(|| holder.to_string(), |p| format!("pid {p}"));
    match (me, holder.kind) {
        (Simulator::Serve, Some(Simulator::Serve)) => format!(
            "held by {pid}: another `cqlab sim serve` is starting or serving this directory ({stop}, or use \
             another --dev)"
        ),
        (Simulator::Ttkmd, Some(Simulator::Ttkmd)) => {
            format!("held by {pid}: another `cqlab sim ttkmd` serves this device ({stop}, or use another --dev)")
        }
        _ => format!(
            "held by {holder}: a device directory holds one simulator of either kind, so {} cannot serve it too \
             ({stop}, or use another --dev)",
            me.command()
        ),
    }
}

/// Who holds `dir`'s lock ([`lock_dir`]), read without touching the lock:
/// `None` when nobody does, or when `/proc/locks` cannot tell.
pub fn dir_holder(dir: &Path) -> Option<Holder> {
    let meta = std::fs::metadata(dir).ok()?;
    let holder = holder_of(dir, &meta);
    holder.pid.is_some().then_some(holder)
}

/// The holder of the flock on the inode `meta` describes (`dir`'s).
fn holder_of(dir: &Path, meta: &std::fs::Metadata) -> Holder {
    let pid = flock_holder_of(meta);
    Holder { pid, kind: pid.and_then(|p| kind_of(dir, p)) }
}

/// The pid holding a flock on the file `meta` describes, from
/// `/proc/locks`, without touching the lock: the daemon's directory lock
/// here, a client's `lock` in the driver (`daemon_backend::lock_holder`).
pub fn flock_holder_of(meta: &std::fs::Metadata) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let (major, minor) = (nix::sys::stat::major(meta.dev()), nix::sys::stat::minor(meta.dev()));
    flock_holder(&locks, major, minor, meta.ino())
}

/// The pid of the granted FLOCK on (`major`, `minor`, `ino`) in `/proc/locks`
/// text: `1: FLOCK  ADVISORY  WRITE 4242 fe:00:10010815 0 EOF` (device in hex,
/// inode in decimal); waiters (`->`) are skipped.
fn flock_holder(locks: &str, major: u64, minor: u64, ino: u64) -> Option<u32> {
    locks.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) != Some(&"FLOCK") {
            return None;
        }
        let mut id = f.get(5)?.split(':');
        let maj = u64::from_str_radix(id.next()?, 16).ok()?;
        let min = u64::from_str_radix(id.next()?, 16).ok()?;
        let inode: u64 = id.next()?.parse().ok()?;
        (maj == major && min == minor && inode == ino).then(|| f.get(4)?.parse().ok()).flatten()
    })
}

/// Which simulator `pid` is: its command line names the subcommand. One
/// whose command line is gone (exiting) is known by the pid it recorded in
/// `dir` (the daemon's `pid` file, `sim ttkmd`'s `ctl` page).
fn kind_of(dir: &Path, pid: u32) -> Option<Simulator> {
    if let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) {
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if let Some(k) = Simulator::ALL.into_iter().find(|k| args.windows(2).any(|w| w == k.words())) {
            return Some(k);
        }
        if !cmdline.is_empty() {
            return None;
        }
    }
    let daemon = std::fs::read_to_string(dir.join("pid")).ok().and_then(|s| s.trim().parse::<u32>().ok());
    let at = crate::shared::ctl::PID * 8;
    let runner =
        std::fs::read(dir.join("ctl")).ok().and_then(|b| Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?)));
    if daemon == Some(pid) {
        Some(Simulator::Serve)
    } else if runner == Some(u64::from(pid)) {
        Some(Simulator::Ttkmd)
    } else {
        None
    }
}

/// What sits at `path` before we create a file there.
fn existing(path: &Path) -> Result<Option<std::fs::Metadata>, FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileError::Io { what: "inspecting", path: path.display().to_string(), source: e }),
    }
}

/// Fails unless `m` (of `path`) is a plain file or socket this user owns.
fn check_ours(path: &Path, m: &std::fs::Metadata, socket: bool) -> Result<(), FileError> {
    let t = m.file_type();
    if t.is_symlink() {
        return Err(FileError::refused(path, "is a symbolic link: refusing to follow it".into()));
    }
    let kind_ok = if socket { t.is_socket() } else { t.is_file() };
    if !kind_ok {
        let want = if socket { "a socket" } else { "a regular file" };
        return Err(FileError::refused(path, format!("exists and is not {want}")));
    }
    let me = Uid::effective().as_raw();
    if m.uid() != me {
        return Err(FileError::refused(path, format!("is owned by uid {}, not by this user (uid {me})", m.uid())));
    }
    Ok(())
}

/// Creates `path` afresh, 0600, with `O_CREAT|O_EXCL|O_NOFOLLOW`. A stale
/// regular file of ours is removed first; anything else there (a symlink,
/// another user's file, a directory) is refused.
pub fn create_private(path: &Path) -> Result<File, FileError> {
    if let Some(m) = existing(path)? {
        check_ours(path, &m, false)?;
        std::fs::remove_file(path).map_err(FileError::io("removing stale", path))?;
    }
    open_new(path)
}

/// Opens `path` if it is a regular file of ours, or creates it (0600,
/// `O_EXCL|O_NOFOLLOW`). Keeps an existing file's contents and inode.
pub fn open_or_create_private(path: &Path) -> Result<File, FileError> {
    match existing(path)? {
        Some(m) => {
            check_ours(path, &m, false)?;
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(path)
                .map_err(FileError::io("opening", path))?;
            f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
                .map_err(FileError::io("setting the mode of", path))?;
            Ok(f)
        }
        None => open_new(path),
    }
}

fn open_new(path: &Path) -> Result<File, FileError> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(FileError::io("creating", path))?;
    // The umask may have removed bits; set exactly FILE_MODE.
    f.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
        .map_err(FileError::io("setting the mode of", path))?;
    Ok(f)
}

/// Removes a stale socket of ours at `path` (a daemon that died), refusing
/// anything else found there.
pub fn remove_stale_socket(path: &Path) -> Result<(), FileError> {
    if let Some(m) = existing(path)? {
        check_ours(path, &m, true)?;
        std::fs::remove_file(path).map_err(FileError::io("removing stale socket", path))?;
    }
    Ok(())
}

/// Opens an existing file for a client (`O_NOFOLLOW`: a symlink planted in
/// the device directory is an error, not a file we write).
pub fn open_existing(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).custom_flags(nix::libc::O_NOFOLLOW).open(path)
}

/// The mmap layer: maps `len` bytes of `file` shared, read and write. Its
/// length must already be `len`.
pub fn map_shared(file: &File, path: &Path, len: usize) -> Result<MmapMut, FileError> {
    let found = file.metadata().map_err(FileError::io("inspecting", path))?.len();
    if found != len as u64 {
        return Err(FileError::refused(path, format!("holds {found} bytes, the daemon announced {len}")));
    }
    // SAFETY: the mapping is of a regular file kept at `len` bytes (never
    // truncated while mapped: only `cqlab sim serve` sizes it, before it
    // maps). Other processes write the same pages, so Rust's
    // exclusive-access assumption holds only by protocol: the daemon accesses
    // sysmem only while serving a request of the owning client, the owner
    // only between requests, so no access overlaps another process's write.
    unsafe { MmapOptions::new().len(len).map_mut(file) }.map_err(FileError::io("mapping", path))
}

/// A private copy-on-write view of `len` bytes of `file`, for read-only
/// observers (`cqlab status`), which must not disturb the owner's sysmem.
/// Its pages show the file's current contents, which the owner may be
/// writing while we read: so the view is never lent out as a slice, only
/// copied from with volatile reads ([`ObserverView::read`]).
pub fn map_observer(file: &File, path: &Path, len: usize) -> Result<ObserverView, FileError> {
    let found = file.metadata().map_err(FileError::io("inspecting", path))?.len();
    if found != len as u64 {
        return Err(FileError::refused(path, format!("holds {found} bytes, the daemon announced {len}")));
    }
    // SAFETY: a MAP_PRIVATE mapping of a regular file of `len` bytes; our
    // writes would never reach the file, and `ObserverView` reads it only
    // through volatile copies, making no reference to pages another
    // process may write.
    let map = unsafe { MmapOptions::new().len(len).map_copy(file) }.map_err(FileError::io("mapping", path))?;
    Ok(ObserverView { map: MmapRaw::from(map) })
}

/// Another process's sysmem, seen by an observer ([`map_observer`]).
#[derive(Debug)]
pub struct ObserverView {
    map: MmapRaw,
}

impl ObserverView {
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// Copies the `buf.len()` bytes at `offset` into `buf`, byte by byte;
    /// `None` (and `buf` untouched) when they run past the end.
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> Option<()> {
        if offset.checked_add(buf.len())? > self.map.len() {
            return None;
        }
        let base = self.map.as_ptr();
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: `offset + i` < `len` (checked above), inside the live
            // mapping; a volatile read of one byte makes no reference that
            // another process's write to it could invalidate.
            *b = unsafe { base.add(offset + i).read_volatile() };
        }
        Some(())
    }

    /// The aligned 32-bit word at `offset`, read with one load: the owner's device writes
    /// its queue pointers whole, and a byte-wise copy could take a pointer it never wrote.
    /// `None` when misaligned or past the end.
    pub fn read_u32(&self, offset: usize) -> Option<u32> {
        if offset % 4 != 0 || offset.checked_add(4)? > self.map.len() {
            return None;
        }
        // SAFETY: `offset + 4` <= `len` (checked), inside the live mapping, which starts
        // page-aligned, so the word at a 4-aligned offset is aligned; a volatile read makes no
        // reference another process's write could invalidate.
        Some(unsafe { self.map.as_ptr().add(offset).cast::<u32>().read_volatile() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cqlab-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_new_directory_and_its_files_are_private_whatever_the_umask() {
        let d = scratch("modes");
        // umask is process-wide (nextest runs each test in its own process);
        // restored before any assertion can fail.
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
        let created = prepare_dir(&d);
        let f = created.as_ref().ok().map(|_| create_private(&d.join("sysmem")));
        nix::sys::stat::umask(old);
        assert!(created.unwrap());
        f.unwrap().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!((mode(&d), mode(&d.join("sysmem"))), (DIR_MODE, FILE_MODE));
        // An existing directory of ours with a loose mode is tightened.
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!prepare_dir(&d).unwrap());
        assert_eq!(mode(&d), DIR_MODE);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A directory of the user's own that held a `pid` or `sysmem` had them
    /// deleted by a start, and its mode changed even when the start was then
    /// refused. Now only what a stopped simulator leaves is reused.
    #[test]
    fn a_directory_is_reused_only_if_it_holds_what_a_stopped_simulator_leaves() {
        let d = scratch("leftovers");
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o777;
        let put = |name: &str, bytes: &[u8], m: u32| {
            std::fs::write(d.join(name), bytes).unwrap();
            std::fs::set_permissions(d.join(name), std::fs::Permissions::from_mode(m)).unwrap();
        };
        // What a killed `sim serve` and a stopped `sim ttkmd` leave, as they leave it.
        let stopped = || {
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir(&d).unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
            drop(std::os::unix::net::UnixListener::bind(d.join("sock")).unwrap());
            std::fs::set_permissions(d.join("sock"), std::fs::Permissions::from_mode(FILE_MODE)).unwrap();
            // Killed between its bind and its chmod.
            drop(std::os::unix::net::UnixListener::bind(d.join("sock.new")).unwrap());
            std::fs::set_permissions(d.join("sock.new"), std::fs::Permissions::from_mode(0o755)).unwrap();
            put("pid", b"4242", FILE_MODE);
            put("lock", b"", FILE_MODE);
            // A `sim ttkmd` before 2026-12-01 kept its runner's pid here.
            put("runner", b"12345", FILE_MODE);
            put("lock-ctl-63", b"", 0o400);
            put("fds", b"", FILE_MODE);
            put("tlb-9", b"", FILE_MODE);
            put("sysmem", &[0; 8192], FILE_MODE);
            put("ctl", &[0; 4096], FILE_MODE);
            for f in ["l1", "regs", "dram"] {
                put(f, b"", FILE_MODE);
            }
        };
        type Tweak<'a> = &'a dyn Fn();
        let cases: [(Tweak, &str); 10] = [
            (&|| put("notes.txt", b"keep", FILE_MODE), "holds \"notes.txt\", which no simulator makes"),
            (&|| put("pid", b"my notes\n", FILE_MODE), "holds \"pid\", which holds no process id"),
            (&|| put("sysmem", b"data\n", FILE_MODE), "holds \"sysmem\" of 5 bytes, not whole 4096-byte pages"),
            (&|| put("sysmem", &[0; 4096], 0o644), "holds \"sysmem\" of mode 0644 (a simulator's files are 0600)"),
            (&|| put("lock-ctl-07", b"", FILE_MODE), "holds \"lock-ctl-07\", which no simulator makes"),
            (&|| put("tlb-01", b"", FILE_MODE), "holds \"tlb-01\", which no simulator makes"),
            (
                &|| {
                    std::fs::remove_file(d.join("sock")).unwrap();
                    put("sock", b"", FILE_MODE)
                },
                "holds \"sock\", which is not a socket",
            ),
            (
                &|| {
                    std::fs::remove_file(d.join("lock")).unwrap();
                    std::fs::create_dir(d.join("lock")).unwrap()
                },
                "holds \"lock\", which is not a regular file",
            ),
            (
                &|| {
                    std::fs::remove_file(d.join("sysmem")).unwrap();
                    symlink("/etc/passwd", d.join("sysmem")).unwrap()
                },
                "holds \"sysmem\", a symbolic link",
            ),
            // The first by name.
            (&|| ["b", "a"].map(|n| put(n, b"", FILE_MODE)).into_iter().collect(), "holds \"a\", which no"),
        ];
        for (tweak, says) in cases {
            stopped();
            tweak();
            let before: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
            let err = prepare_dir(&d).unwrap_err().to_string();
            assert!(err.starts_with(&format!("{}: {says}", d.display())), "{says}: {err}");
            assert!(err.contains("use a new or empty directory"), "{err}");
            let after: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert_eq!((before, mode(&d)), (after, 0o755), "{says}: the refused directory changed");
        }
        stopped();
        assert!(!prepare_dir(&d).unwrap(), "reused, not created");
        assert_eq!(mode(&d), DIR_MODE);
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 13, "nothing removed before the start makes its files");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A file a starting simulator renames or removes between the listing
    /// and its inspection is no user's file (a start racing another was
    /// refused for "sock.new, which cannot be inspected").
    #[test]
    fn a_leftover_gone_since_the_listing_is_no_foreign_file() {
        let d = scratch("vanished");
        std::fs::create_dir_all(&d).unwrap();
        let me = nix::unistd::getuid().as_raw();
        for name in ["sock.new", "sock", "pid", "lock", "sysmem"] {
            assert_eq!(leftover(&d.join(name), name, me), Ok(()), "{name}");
        }
        assert!(leftover(&d.join("notes.txt"), "notes.txt", me).is_err(), "a name no simulator makes");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_directory_lock_refuses_a_second_simulator_of_either_kind_naming_its_holder() {
        let d = scratch("lock");
        prepare_dir(&d).unwrap();
        assert_eq!(dir_holder(&d), None, "nobody holds it yet");
        let held = lock_dir(&d, Simulator::Serve).unwrap();
        // flock is per open file: a second open in this process conflicts.
        let me = std::process::id();
        for second in Simulator::ALL {
            let err = lock_dir(&d, second).unwrap_err().to_string();
            let expect = format!("{}: held by pid {me}", d.display());
            assert!(err.starts_with(&expect), "{err}");
            assert!(err.contains("one simulator of either kind"), "{err}");
        }
        // This test binary is neither kind by its command line; its record says.
        assert_eq!(dir_holder(&d), Some(Holder { pid: Some(me), kind: None }));
        // The wording each kind gave its own kind before they shared the lock.
        let serve = Holder { pid: Some(7), kind: Some(Simulator::Serve) };
        let r = refusal(&d, Simulator::Serve, &serve);
        assert!(r.starts_with("held by pid 7: another `cqlab sim serve` is starting or serving"), "{r}");
        let r = refusal(&d, Simulator::Ttkmd, &serve);
        assert!(r.starts_with("held by pid 7, a `cqlab sim serve` daemon: a device directory holds one"), "{r}");
        assert!(r.contains(&format!("`cqlab sim stop --dev {}`", d.display())), "{r}");
        let ttkmd = Holder { pid: Some(7), kind: Some(Simulator::Ttkmd) };
        let r = refusal(&d, Simulator::Ttkmd, &ttkmd);
        assert!(r.starts_with("held by pid 7: another `cqlab sim ttkmd` serves this device"), "{r}");
        let r = refusal(&d, Simulator::Serve, &ttkmd);
        assert!(r.starts_with("held by pid 7, a `cqlab sim ttkmd` simulator: a device directory holds one"), "{r}");
        assert!(r.contains("`kill 7`"), "{r}");
        drop(held);
        assert_eq!(dir_holder(&d), None, "released");
        lock_dir(&d, Simulator::Ttkmd).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn proc_locks_names_the_holder_of_the_inode_asked_for() {
        let text = "1: FLOCK  ADVISORY  WRITE 4242 103:02:77 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 5151 103:02:77 0 EOF\n\
                    2: POSIX  ADVISORY  WRITE 88 00:1a:78 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 99 00:1a:79 0 EOF\n";
        assert_eq!(flock_holder(text, 0x103, 0x02, 77), Some(4242));
        assert_eq!(flock_holder(text, 0, 0x1a, 78), None, "a POSIX lock is not ours");
        assert_eq!(flock_holder(text, 0, 0x1a, 79), Some(99));
        assert_eq!(flock_holder("garbage\n\n", 0, 0, 0), None);
    }

    #[test]
    fn a_planted_symlink_is_refused_and_its_target_untouched() {
        let d = scratch("symlink");
        prepare_dir(&d).unwrap();
        let victim = d.with_extension("victim");
        std::fs::write(&victim, b"precious").unwrap();
        symlink(&victim, d.join("sysmem")).unwrap();
        let err = create_private(&d.join("sysmem")).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let err = open_or_create_private(&d.join("sysmem")).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(open_existing(&d.join("sysmem")).is_err(), "O_NOFOLLOW");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        // A symlinked directory is refused too.
        let link = d.with_extension("dirlink");
        symlink(&d, &link).unwrap();
        assert!(prepare_dir(&link).unwrap_err().to_string().contains("symbolic link"));
        for p in [&victim, &link] {
            std::fs::remove_file(p).unwrap();
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
