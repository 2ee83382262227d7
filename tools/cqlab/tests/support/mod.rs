//! What the CLI's integration tests share: the `cqlab` binary, the
//! firmware it runs, and running it with a deadline. Each test file uses a
//! part of it (hence `dead_code`: every file compiles its own copy).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const CQLAB: &str = env!("CARGO_BIN_EXE_cqlab");

/// `$CQLAB_FIRMWARE_DIR`, else where `cargo xtask firmware` puts the ELFs.
pub fn firmware_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CQLAB_FIRMWARE_DIR") {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("riscv32im-unknown-none-elf/firmware")
}

/// Small harvested real chips for fast CLI tests: the real register
/// interface and coordinates with all but two Tensix lines fused off (a
/// Wormhole n150 with rows 10 and 11: one row of queues, an 8x1 compute
/// grid; a Blackhole p150a with columns 1 and 2: a 1x10 compute grid).
pub const SMALL_WORMHOLE: [&str; 4] = ["--chip", "wormhole-n150", "--harvest", "rows=1,2,3,4,5,7,8,9"];
pub const SMALL_BLACKHOLE: [&str; 4] =
    ["--chip", "blackhole-p150a", "--harvest", "cols=3,4,5,6,7,10,11,12,13,14,15,16"];
/// Both, for tests that run on each chip.
pub const SMALL_CHIPS: [[&str; 4]; 2] = [SMALL_WORMHOLE, SMALL_BLACKHOLE];

/// Exit codes of the failure classes (`cqlab --help`, docs/cli.md).
pub const EXIT_FAILED: i32 = 1;
pub const EXIT_HANG: i32 = 3;
pub const EXIT_DEVICE_ERROR: i32 = 4;
pub const EXIT_MISMATCH: i32 = 5;

/// The exit a campaign report's failures call for: 0 without failures,
/// their one class's code, or 1 when their classes differ.
pub fn exit_of_report(report: &serde_json::Value) -> i32 {
    let code = |class: &serde_json::Value| match class.as_str() {
        Some("hang") => EXIT_HANG,
        Some("device-error") => EXIT_DEVICE_ERROR,
        Some("mismatch") => EXIT_MISMATCH,
        _ => EXIT_FAILED,
    };
    let codes: Vec<i32> = report["signatures"].as_array().into_iter().flatten().map(|s| code(&s["class"])).collect();
    match codes.first() {
        None => 0,
        Some(&c) if codes.iter().all(|&o| o == c) => c,
        Some(_) => EXIT_FAILED,
    }
}

/// `cqlab ARGS` with the firmware directory set, to completion.
pub fn cqlab(args: &[&str]) -> Output {
    Command::new(CQLAB).env("CQLAB_FIRMWARE_DIR", firmware_dir()).args(args).output().unwrap()
}

/// Status and both streams, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `c` (with the firmware directory set) to completion; panics naming
/// the command if it takes longer than `limit`.
pub fn run_within(mut c: Command, limit: Duration) -> Output {
    let what = format!("{c:?}");
    let mut child =
        c.env("CQLAB_FIRMWARE_DIR", firmware_dir()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("timeout after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Starts `c` (a `sim client-job` that prints "booted" once its device is
/// up), waits for that line, then SIGKILLs it `delay` later: a host process
/// killed mid-enqueue. Panics, naming `who`, if it does not boot within
/// `limit` or finishes before the kill.
pub fn kill_after_boot(mut c: Command, delay: Duration, limit: Duration, who: &str) {
    let mut child =
        c.env("CQLAB_FIRMWARE_DIR", firmware_dir()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    let booted = rx.recv_timeout(limit);
    std::thread::sleep(delay);
    let _ = child.kill(); // SIGKILL
    let status = child.wait().unwrap();
    let line = booted.unwrap_or_else(|_| panic!("timeout waiting for {who} to boot"));
    if !line.contains("booted") {
        let mut err = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut err);
        panic!("{who} did not boot: {line}{err}");
    }
    assert!(status.code().is_none(), "{who} finished before the kill: {status}");
}

/// A fresh scratch path under the temp dir, unique to this test process.
pub fn scratch(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("cqlab-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    let _ = std::fs::remove_file(&path);
    path
}

/// `cqlab ARGS --json`: the exit code and the parsed report (panics with
/// stderr when stdout is not JSON).
pub fn cqlab_json(args: &[&str]) -> (i32, serde_json::Value) {
    let out = cqlab(&[args, &["--json"]].concat());
    let v =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v)
}

/// A `cqlab sim serve` daemon on a fresh directory; killed (and the
/// directory removed) on drop.
pub struct Daemon {
    pub child: std::process::Child,
    pub dir: PathBuf,
}

impl Daemon {
    /// `cqlab sim serve --dev DIR EXTRA...` with stdout `stdout`; waits
    /// (bounded) for its socket.
    pub fn start(name: &str, extra: &[&str], stdout: Stdio) -> Daemon {
        let dir = scratch(&format!("daemon-{name}"));
        let child = Command::new(CQLAB)
            .args(["sim", "serve", "--dev"])
            .arg(&dir)
            .args(extra)
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning cqlab sim serve");
        let d = Daemon { child, dir };
        let start = Instant::now();
        while !d.dir.join("sock").exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timeout waiting for the daemon socket in {}",
                d.dir.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        d
    }

    /// `sim:DIR`.
    pub fn spec(&self) -> String {
        format!("sim:{}", self.dir.display())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A client that attaches to the daemon at `dir` and holds its device for
/// `secs` (`sim bar --hold`), returned once it has attached.
pub fn hold_device(dir: &std::path::Path, secs: u32) -> std::process::Child {
    let mut child = Command::new(CQLAB)
        .args(["sim", "bar", "--worker", "0,0", "--addr", "0x40", "--hold", &secs.to_string(), "--dev"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("0x"), "the holder did not attach: {line:?}");
    child
}

// ---- A second local user (nobody), for the device protections -----------

/// The uid `nobody` has.
pub const NOBODY: u32 = 65534;

/// The uid this test runs as.
pub fn my_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid()
}

/// Tests that need a second uid run as root (as in CI) and switch to
/// `nobody` with setpriv; elsewhere they say so and pass nothing off as run.
pub fn root_or_skip(test: &str) -> bool {
    if my_uid() == 0 {
        return true;
    }
    eprintln!("{test}: needs root to act as a second uid (nobody); not run");
    false
}

/// The permission bits of `p` (not following a symlink).
pub fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).mode() & 0o777
}

/// The attack of issue 14 and 24: `dir` made a directory of nobody's
/// holding `sysmem -> VICTIM`, a file of ours reading "precious". Returns
/// the victim's path.
pub fn plant_foreign_symlink(dir: &std::path::Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let victim = dir.with_extension("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("sysmem")).unwrap();
    std::os::unix::fs::lchown(dir, Some(NOBODY), Some(NOBODY)).unwrap();
    victim
}

/// Waits (at most `limit`) for `child` to exit; panics naming `what`.
pub fn wait_for_exit(child: &mut std::process::Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "timeout after {limit:?} waiting for {what} to exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `c` to its end and returns its output with its own peak resident
/// set in KiB: the kernel's high-water mark (`VmHWM` in /proc/PID/status),
/// read until the process exits. `getrusage(RUSAGE_CHILDREN)` would do only
/// where the test is its process's sole parent of children (nextest);
/// `cargo test` runs a binary's tests as threads of one process, and their
/// children's peaks mix.
pub fn peak_rss_kib(mut c: Command) -> (Output, u64) {
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawning the measured command");
    let status_file = format!("/proc/{}/status", child.id());
    let hwm = || -> Option<u64> {
        let s = std::fs::read_to_string(&status_file).ok()?;
        s.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.split_whitespace().next()?.parse().ok()
    };
    // Drained on threads, so a child that writes much never blocks on a pipe.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map(|_| v).unwrap_or_default()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let mut peak = 0;
    let status = loop {
        // Read before looking for the exit: a zombie has no VmHWM line, so
        // the last read is of the running process.
        peak = hwm().unwrap_or(0).max(peak);
        if let Some(s) = child.try_wait().expect("waiting for the measured command") {
            break s;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    // A peak never read would pass every "below N" check.
    assert!(peak > 0, "no VmHWM read from {status_file}");
    (Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }, peak)
}
