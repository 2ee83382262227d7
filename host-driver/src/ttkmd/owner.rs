//! One owner per device: an exclusive, non-blocking `flock` on the device fd, and the lookup of
//! the current holder's pid in `/proc/locks` for the error message.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use super::error::{Result, TtKmdError};

/// Takes `flock(LOCK_EX | LOCK_NB)` on `file`'s open file description, through a duplicate of
/// its fd held by the returned guard. The lock lasts until the guard drops (or every fd of the
/// description closes): the caller keeps it as long as it owns the device.
pub(crate) fn lock_exclusive(file: &File, path: &Path) -> Result<Flock<File>> {
    let dup = file.try_clone().map_err(|e| TtKmdError::Flock { path: path.to_owned(), errno: io_errno(&e) })?;
    match Flock::lock(dup, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(lock),
        Err((_, Errno::EWOULDBLOCK)) => Err(match holder_pid(file) {
            Some(pid) => TtKmdError::HeldByPid { path: path.to_owned(), pid },
            None => TtKmdError::Held { path: path.to_owned(), how: "flock held" },
        }),
        Err((_, errno)) => Err(TtKmdError::Flock { path: path.to_owned(), errno }),
    }
}

fn io_errno(e: &std::io::Error) -> Errno {
    e.raw_os_error().map_or(Errno::EIO, Errno::from_raw)
}

/// The pid holding a FLOCK on the same inode as `file`, from `/proc/locks`, if visible and not us.
fn holder_pid(file: &File) -> Option<u32> {
    let meta = file.metadata().ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let (major, minor) = (nix::sys::stat::major(meta.dev()), nix::sys::stat::minor(meta.dev()));
    find_flock_holder(&locks, major, minor, meta.ino())
}

/// Every pid holding a FLOCK (shared or exclusive) on the same inode as `file`, from
/// `/proc/locks`, sorted, each once (the simulated kernel's stand-in for tt-kmd's `pids` file).
#[cfg(feature = "sim")]
pub(crate) fn flock_holders(file: &File) -> Vec<u32> {
    let (Ok(meta), Ok(locks)) = (file.metadata(), std::fs::read_to_string("/proc/locks")) else {
        return Vec::new();
    };
    let (major, minor) = (nix::sys::stat::major(meta.dev()), nix::sys::stat::minor(meta.dev()));
    let mut pids: Vec<u32> = locks.lines().filter_map(|l| flock_line(l, major, minor, meta.ino())).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Parses `/proc/locks` lines such as
/// `3: FLOCK  ADVISORY  WRITE 4242 00:1a:12345 0 EOF` (device major:minor in hex, inode in
/// decimal) and returns the pid of the first granted FLOCK on (`major`, `minor`, `ino`).
/// Waiters (lines with `->`) are skipped.
pub(crate) fn find_flock_holder(locks: &str, major: u64, minor: u64, ino: u64) -> Option<u32> {
    locks.lines().find_map(|line| flock_line(line, major, minor, ino))
}

/// The pid of one `/proc/locks` line if it is a granted FLOCK on (`major`, `minor`, `ino`).
fn flock_line(line: &str, major: u64, minor: u64, ino: u64) -> Option<u32> {
    let mut fields = line.split_whitespace();
    fields.next()?; // "N:"
    let kind = fields.next()?;
    if kind != "FLOCK" {
        return None; // "->" waiters, POSIX and OFD locks
    }
    let _mode = fields.next()?;
    let _access = fields.next()?;
    let pid: u32 = fields.next()?.parse().ok()?;
    let mut id = fields.next()?.split(':');
    let maj = u64::from_str_radix(id.next()?, 16).ok()?;
    let min = u64::from_str_radix(id.next()?, 16).ok()?;
    let inode: u64 = id.next()?.parse().ok()?;
    (maj == major && min == minor && inode == ino).then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_locks() {
        let text = "1: POSIX  ADVISORY  WRITE 100 00:1a:77 0 EOF\n\
                    2: FLOCK  ADVISORY  WRITE 4242 103:02:77 0 EOF\n\
                    2: -> FLOCK  ADVISORY  WRITE 555 103:02:77 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 99 00:1a:77 0 EOF\n";
        assert_eq!(find_flock_holder(text, 0x103, 0x02, 77), Some(4242));
        assert_eq!(find_flock_holder(text, 0, 0x1a, 77), Some(99));
        assert_eq!(find_flock_holder(text, 0, 0x1a, 78), None);
        assert_eq!(find_flock_holder("garbage\n\n", 0, 0, 0), None);
    }
}
