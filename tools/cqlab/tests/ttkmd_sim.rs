//! The tt-kmd backend against the simulator, as processes: `cqlab sim ttkmd` runs the chip on
//! shared files, host processes open `ttkmd-sim:DIR` (the tt-kmd backend, its kernel calls
//! answered by the simulator, its TLB windows and sysmem real shared mappings). Not
//! deterministic: host timing is whatever the host does. Every wait is bounded and named.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{firmware_dir, kill_after_boot, mode, root_or_skip, text, CQLAB, NOBODY, SMALL_CHIPS, SMALL_WORMHOLE};

const PROCESS_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `cqlab sim ttkmd` (a small harvested chip); killed and its files removed on drop.
struct Sim {
    child: Child,
    dir: PathBuf,
}

fn sim_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cqlab-ttkmd-sim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

impl Sim {
    fn start(name: &str) -> Sim {
        Self::start_in(sim_dir(name), "exec")
    }

    /// The small Wormhole or Blackhole (`support::SMALL_CHIPS`).
    fn start_chip(name: &str, chip: &[&str]) -> Sim {
        Self::start_with(sim_dir(name), "exec", chip)
    }

    /// Starts `cqlab sim ttkmd --dev dir` under `sh -c "LAUNCH cqlab ..."`
    /// (`exec`, `umask 000; exec`, or `exec setpriv ...` to run as another user).
    fn start_in(dir: PathBuf, launch: &str) -> Sim {
        Self::start_with(dir, launch, &SMALL_WORMHOLE)
    }

    fn start_with(dir: PathBuf, launch: &str, chip: &[&str]) -> Sim {
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!("{launch} \"$0\" \"$@\""))
            .arg(CQLAB)
            .args(["sim", "ttkmd", "--sysmem-mib", "16"])
            .args(chip)
            .arg("--dev")
            .arg(&dir)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning cqlab sim ttkmd");
        let s = Sim { child, dir };
        let ctl = s.dir.join("ctl");
        let start = Instant::now();
        // The magic word is written last: once the ctl page has it, the device is complete.
        while std::fs::read(&ctl).map_or(true, |b| b.len() < 8 || b[..8] != cqlab_sim::shared::MAGIC.to_le_bytes()) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timeout waiting for the device files in {}",
                s.dir.display()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        s
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(c: Command) -> Output {
    support::run_within(c, PROCESS_TIMEOUT)
}

fn client_job(dir: &Path, seed: u64, rounds: u32) -> Command {
    let mut c = Command::new(CQLAB);
    c.args(["sim", "client-job", "--ttkmd", "--cqs", "2", "--bytes", "2048", "--seed"])
        .arg(seed.to_string())
        .args(["--rounds", &rounds.to_string(), "--dev"])
        .arg(dir);
    c
}

#[test]
fn the_demo_runs_through_ttkmd_against_the_simulator_on_each_chip() {
    for chip in SMALL_CHIPS {
        let s = Sim::start_chip(&format!("demo-{}", chip[1]), &chip);
        let mut c = Command::new(CQLAB);
        c.args(["demo", "--rounds", "2", "--device"]).arg(format!("ttkmd-sim:{}", s.dir.display()));
        let o = run(c);
        assert!(o.status.success(), "{}: {}", chip[1], text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("verified 524288 bytes read back"), "{}", text(&o));
        assert!(out.contains(&format!("chip: {} ({})", chip[1], chip[3])), "{}", text(&o));
    }
}

#[test]
fn a_process_killed_mid_enqueue_leaves_a_device_the_next_one_boots_clean() {
    const SEED: u64 = 0x7e57_0c0a;
    let s = Sim::start("crash");
    let mut rng = SEED;
    for i in 0..6u64 {
        let replay = format!("(process {i}, test seed {SEED:#x})");
        // Killed mid-enqueue: many rounds, SIGKILL a seeded 0-15 ms after boot is reported.
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let delay = Duration::from_micros((rng >> 33) % 15_000);
        kill_after_boot(client_job(&s.dir, i, 100_000), delay, PROCESS_TIMEOUT, &format!("process {i} {replay}"));
        // The next process: reset sequence, boot, verified rounds.
        let o = run(client_job(&s.dir, 100 + i, 3));
        assert!(o.status.success(), "the process after kill {i} failed {replay}\n{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("3 rounds of 2048 bytes verified"), "{}", text(&o));
    }
}

/// A client job that has booted the device and holds it for a long run.
fn booted_holder(dir: &Path) -> Child {
    let mut holder = client_job(dir, 1, 100_000)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("booted"), "{line}");
    holder
}

#[test]
fn a_second_opener_is_told_who_holds_the_device() {
    let s = Sim::start("held");
    let mut holder = booted_holder(&s.dir);
    let o = run(client_job(&s.dir, 2, 1));
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("held by pid {}", holder.id())), "{}", text(&o));
}

/// `cqlab reset --device ttkmd-SPEC`, with `--json` if asked.
fn reset(dir: &Path, json: bool) -> Output {
    let mut c = Command::new(CQLAB);
    c.args(["reset", "--device"]).arg(format!("ttkmd-sim:{}", dir.display()));
    if json {
        c.arg("--json");
    }
    run(c)
}

/// tt-kmd's reset generation, as the simulated kernel keeps it in the device's `ctl` page.
fn reset_generation(dir: &Path) -> u64 {
    let ctl = std::fs::read(dir.join("ctl")).unwrap();
    let at = cqlab_sim::shared::ctl::RESET_GEN * 8;
    u64::from_le_bytes(ctl[at..at + 8].try_into().unwrap())
}

/// `cqlab reset` on tt-kmd is the whole-chip reset (ASIC_RESET, the wait for the reset
/// marker, POST_RESET from a new open): it reports what it did and how long it took, it moves
/// the device's reset generation (so that an fd opened before it would answer ENODEV for good:
/// the simulated kernel's unit tests show it; here no other fd may be open, or the reset is
/// refused), and the chip it leaves runs the next job.
#[test]
fn a_reset_through_ttkmd_moves_the_reset_generation_and_leaves_the_chip_usable() {
    let s = Sim::start("reset");
    let generation = reset_generation(&s.dir);

    let o = reset(&s.dir, false);
    assert!(o.status.success(), "{}", text(&o));
    let line = String::from_utf8_lossy(&o.stdout);
    for part in ["reset ttkmd-sim:", "ASIC_RESET sent", "cleared its reset marker", "POST_RESET", "s in all"] {
        assert!(line.contains(part), "{part:?} in {}", text(&o));
    }
    assert!(reset_generation(&s.dir) > generation, "the reset generation did not move: {}", text(&o));

    let o = reset(&s.dir, true);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json is JSON");
    assert_eq!(report["backend"], "tt-kmd", "{report}");
    assert_eq!(report["reset"], "ASIC_RESET", "{report}");
    assert_eq!(
        report["steps"],
        serde_json::json!(["ASIC_RESET", "wait for the chip to clear the reset marker", "POST_RESET"])
    );
    let (waited, took) = (report["waited_for_chip_seconds"].as_f64().unwrap(), report["seconds"].as_f64().unwrap());
    // A Wormhole's marker is first read half a second after ASIC_RESET, as tt-kmd's tools/reset.c does.
    assert!(waited >= 0.5 && took >= waited, "{report}");

    let o = run(client_job(&s.dir, 3, 2));
    assert!(o.status.success(), "the job after the reset failed: {}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 rounds of 2048 bytes verified"), "{}", text(&o));
}

/// A reset of a device another process holds is refused before any ioctl, naming the
/// holder: the holder's fd keeps working (no reset generation moved).
#[test]
fn a_reset_of_a_held_device_names_the_holder_and_resets_nothing() {
    let s = Sim::start("reset-held");
    let mut holder = booted_holder(&s.dir);
    let generation = reset_generation(&s.dir);
    let o = reset(&s.dir, false);
    let still_running = holder.try_wait().unwrap().is_none();
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("resetting ttkmd-sim:{}", s.dir.display())), "{}", text(&o));
    // As tt-kmd 2.10 (the simulator's default) refuses the reset's O_EXCL open while the
    // holder's fd is open.
    assert!(err.contains(&format!("is open in pid {}", holder.id())), "{}", text(&o));
    assert!(o.stdout.is_empty(), "{}", text(&o));
    assert_eq!(reset_generation(&s.dir), generation, "a refused reset moved the reset generation");
    assert!(still_running, "the holder did not survive the refused reset");
}

/// A reset of a device another program has open (tt-metal, tt-umd: an fd of the device, no
/// cqlab lock) is refused before any ioctl, naming it, and the other program's fd keeps
/// working: on tt-kmd 2.10 (the simulator's default) by the reset's `O_EXCL` open, which
/// tt-kmd refuses while another fd is open; on 2.8, which ignores `O_EXCL`, by the pids
/// file (here the simulator's `fds` flock). The other program is `flock -s DIR/fds`, which
/// holds the device's admission as an open fd would. (The reset used to proceed.)
#[test]
fn a_reset_of_a_device_another_program_has_open_is_refused_on_each_driver_version() {
    let s = Sim::start("reset-other");
    for version in [(2, 10, 1), (2, 8, 0)] {
        cqlab_driver::ttkmd::sim_kernel::set_driver_version(&s.dir, version).unwrap();
        // One process holds it: the shell opens the file, `flock` locks that open file
        // description, and the shell becomes `sleep`, so killing it releases the lock.
        let mut other = Command::new("sh")
            .arg("-c")
            .arg("exec 9<>\"$0\" && flock --shared 9 && echo holding && exec sleep 60")
            .arg(s.dir.join("fds"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawning sh and flock");
        let mut line = String::new();
        BufReader::new(other.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "holding");
        let generation = reset_generation(&s.dir);
        let o = reset(&s.dir, false);
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(o.status.code(), Some(1), "{version:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        let says = if version >= (2, 10, 0) { "is open in pid" } else { "a reset would invalidate their fds" };
        assert!(err.contains(says), "{version:?}: {says:?} in {}", text(&o));
        assert_eq!(reset_generation(&s.dir), generation, "{version:?}: a refused reset moved the reset generation");
    }
    // With the other program gone, the reset runs (on 2.8: POST_RESET from a new open).
    let o = reset(&s.dir, true);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json is JSON");
    assert_eq!(report["driver"], "tt-kmd 2.8.0 (ioctl API 2)", "{report}");
    assert_eq!(report["other_fds_invalidated"], true, "{report}");
    assert_eq!(report["node"], s.dir.display().to_string(), "{report}");
    let o = run(client_job(&s.dir, 4, 2));
    assert!(o.status.success(), "the job after the reset failed: {}", text(&o));
}

/// `sim ttkmd --driver-version` makes the simulated kernel answer and behave as that tt-kmd
/// release from the first open (it was settable only from the library): a reset reports 2.8.0
/// and, as 2.8.0 does, invalidates the resetting fd too; on 2.3.0, which has no reset
/// sequence, the reset is refused naming 2.4.0. A malformed version, or one the simulated
/// kernel cannot be, is refused naming the range before any file is made (exit 2).
#[test]
fn the_driver_version_the_simulator_answers_as_is_an_option() {
    for (version, says) in [
        ("2.8", "expected a tt-kmd version MAJOR.MINOR.PATCH"),
        ("2.8.x", "expected a tt-kmd version MAJOR.MINOR.PATCH"),
        ("1.34.0", "tt-kmd 1.34.0 is not one the simulated kernel can answer as: 2.0.0 through 2.10.1"),
        ("2.11.0", "tt-kmd 2.11.0 is not one the simulated kernel can answer as: 2.0.0 through 2.10.1"),
    ] {
        let dir = sim_dir("bad-version");
        let o = run({
            let mut c = Command::new(CQLAB);
            c.args(["sim", "ttkmd", "--driver-version", version, "--dev"]).arg(&dir);
            c
        });
        assert_eq!(o.status.code(), Some(2), "{version}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(says), "{version}: {}", text(&o));
        assert!(!dir.exists(), "{version}: {} was made", dir.display());
    }
    let with = |version: &'static str| [&SMALL_WORMHOLE[..], &["--driver-version", version]].concat();
    let s = Sim::start_with(sim_dir("version-2.8"), "exec", &with("2.8.0"));
    let o = reset(&s.dir, true);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json is JSON");
    assert_eq!(report["driver"], "tt-kmd 2.8.0 (ioctl API 2)", "{report}");
    assert_eq!(report["other_fds_invalidated"], true, "{report}");
    drop(s);
    let s = Sim::start_with(sim_dir("version-2.3"), "exec", &with("2.3.0"));
    let o = reset(&s.dir, false);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("needs tt-kmd 2.4.0 (ioctl API 2) or later; the driver is tt-kmd 2.3.0"), "{}", text(&o));
    // Jobs run on it all the same.
    let o = run(client_job(&s.dir, 2, 1));
    assert!(o.status.success(), "{}", text(&o));
}

/// A simulator stopped with SIGSTOP is named as stopped, with how to resume
/// it (helper-33: it read "does not exist").
#[test]
fn a_stopped_simulator_is_named_as_stopped() {
    let s = Sim::start("stopped");
    let pid = s.child.id().to_string();
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    let o = run(client_job(&s.dir, 1, 1));
    let _ = Command::new("kill").args(["-CONT", &pid]).status();
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("does not answer") && err.contains(&format!("`kill -CONT {pid}` resumes it")), "{}", text(&o));
}

/// A simulator stopped mid-run (Ctrl-C) fails its client at once, naming
/// why, and one paused a moment (SIGSTOP, then SIGCONT) does not fail it
/// (helper-59: both waited 5 s of a still clock, then failed guessing
/// "the simulator stopped?").
#[test]
fn a_simulator_that_ends_mid_run_is_named_and_a_paused_one_waited_for() {
    let s = Sim::start("ends");
    let pid = s.child.id().to_string();
    let mut job = client_job(&s.dir, 2, 100_000);
    job.env("CQLAB_FIRMWARE_DIR", firmware_dir()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut job = job.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(job.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("booted"), "{line:?}");
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    std::thread::sleep(Duration::from_millis(200));
    assert!(job.try_wait().unwrap().is_none(), "the client gave up on a simulator paused 1.5 s");
    let stopped = Instant::now();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    while job.try_wait().unwrap().is_none() {
        assert!(stopped.elapsed() < PROCESS_TIMEOUT, "the client did not notice its simulator end");
        std::thread::sleep(Duration::from_millis(10));
    }
    let waited = stopped.elapsed();
    let o = job.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && (err.contains("stopped serving") || err.contains("is gone")), "{}", text(&o));
    assert!(waited < Duration::from_secs(4), "{waited:?} to notice: {}", text(&o));
}

// ---- Security and ownership (issue 24): the daemon's protections ---------

use std::os::unix::fs::{MetadataExt, PermissionsExt};

/// `cqlab ARGS` (or any program) as nobody.
fn as_nobody(program: &str, args: &[&str]) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]).args(args);
    run(c)
}

/// The files a running simulator has made, each checked as a regular file.
const DEVICE_FILES: [&str; 6] = ["ctl", "l1", "regs", "dram", "sysmem", "lock"];

#[test]
fn device_files_are_private_whatever_the_umask() {
    let s = Sim::start_in(sim_dir("umask"), "umask 000; exec");
    assert_eq!(mode(&s.dir), 0o700, "device directory");
    for f in DEVICE_FILES {
        assert_eq!(mode(&s.dir.join(f)), 0o600, "{f}");
    }
    // A client's lock files are private too.
    let o = run(client_job(&s.dir, 1, 1));
    assert!(o.status.success(), "{}", text(&o));
    for e in std::fs::read_dir(&s.dir).unwrap() {
        let e = e.unwrap();
        assert_eq!(mode(&e.path()), 0o600, "{}", e.path().display());
    }
    // An existing directory of ours with a loose mode is tightened.
    drop(s);
    let dir = sim_dir("umask-existing");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let s = Sim::start_in(dir, "umask 000; exec");
    assert_eq!(mode(&s.dir), 0o700);
}

#[test]
fn a_second_simulator_on_the_same_path_is_refused_and_the_first_keeps_its_device() {
    let s = Sim::start("second");
    let sysmem = std::fs::metadata(s.dir.join("sysmem")).unwrap().ino();
    let mut c = Command::new(CQLAB);
    c.args(["sim", "ttkmd"]).args(SMALL_WORMHOLE).arg("--dev").arg(&s.dir);
    let o = run(c);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("held by pid {}", s.child.id())), "{}", text(&o));
    // The first one's files are the same files, and its device still works.
    assert_eq!(std::fs::metadata(s.dir.join("sysmem")).unwrap().ino(), sysmem, "sysmem replaced");
    let o = run(client_job(&s.dir, 5, 2));
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 rounds of 2048 bytes verified"), "{}", text(&o));
}

/// `sim serve` and `sim ttkmd` both create `sysmem` in their directory: a second simulator of
/// the other kind used to start and replace it, cutting the first one's clients off (every
/// `sim:` run failed with device errors, even after `reset`). Now both take one lock, and the
/// second is refused naming the first before it touches a file; so are `reset` and `sim stop`
/// on a `sim ttkmd` directory. The first keeps serving.
#[test]
fn a_directory_holds_one_simulator_of_either_kind() {
    let demo = |spec: String| {
        let mut c = Command::new(CQLAB);
        c.args(["demo", "--rounds", "1"]).args(SMALL_WORMHOLE).arg("--device").arg(spec);
        run(c)
    };
    let ino = |dir: &Path| std::fs::metadata(dir.join("sysmem")).unwrap().ino();

    // A daemon first: `sim ttkmd` is refused.
    let extra = [&["--quiet", "--sysmem-mib", "4"][..], &SMALL_WORMHOLE].concat();
    let d = support::Daemon::start("either-kind", &extra, Stdio::null());
    let sysmem = ino(&d.dir);
    let mut c = Command::new(CQLAB);
    c.args(["sim", "ttkmd", "--sysmem-mib", "16"]).args(SMALL_WORMHOLE).arg("--dev").arg(&d.dir);
    let o = run(c);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let held = format!("{}: held by pid {}, a `cqlab sim serve` daemon: ", d.dir.display(), d.child.id());
    assert!(String::from_utf8_lossy(&o.stderr).contains(&held), "{held}\n{}", text(&o));
    assert_eq!(ino(&d.dir), sysmem, "sysmem replaced");
    assert!(!d.dir.join("ctl").exists(), "the refused simulator made its files");
    let o = demo(d.spec());
    assert!(o.status.success(), "{}", text(&o));
    drop(d);

    // A `sim ttkmd` first: `sim serve`, and the daemon's `reset` and `sim stop`, are refused.
    let s = Sim::start("either-kind");
    let sysmem = ino(&s.dir);
    let held = format!("held by pid {}, a `cqlab sim ttkmd` simulator", s.child.id());
    let mut c = Command::new(CQLAB);
    c.args(["sim", "serve", "--sysmem-mib", "4"]).args(SMALL_WORMHOLE).arg("--dev").arg(&s.dir);
    for (what, c) in
        [("sim serve", c), ("reset", cqlab_dev(&["reset"], &s.dir)), ("sim stop", cqlab_dev(&["sim", "stop"], &s.dir))]
    {
        let o = run(c);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(&s.dir.display().to_string()) && err.contains(&held), "{what}: {held}\n{}", text(&o));
    }
    assert_eq!(ino(&s.dir), sysmem, "sysmem replaced");
    for f in ["sock", "pid"] {
        assert!(!s.dir.join(f).exists(), "the refused daemon made {f}");
    }
    let o = demo(format!("ttkmd-sim:{}", s.dir.display()));
    assert!(o.status.success(), "{}", text(&o));
}

/// A directory a stopped simulator of either kind left is reused by either kind, stale files
/// of killed ones included (`sock`, `pid`, a client's `lock-ctl-N`, `fds`, `tlb-N`): a start refuses any
/// other directory that is not empty, and these must not count as foreign.
#[test]
fn a_directory_a_stopped_simulator_left_is_reused_by_either_kind() {
    /// Kills its process on drop (the directory is the `Sim`'s to remove).
    struct Killed(Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    // Each start waits for its own files: the ones before it are still there.
    let ttkmd = |s: &Sim| {
        let start = Instant::now();
        let at = cqlab_sim::shared::ctl::PID * 8;
        let pid = || std::fs::read(s.dir.join("ctl")).ok().and_then(|b| Some(b.get(at..at + 8)?.to_vec()));
        while pid() != Some(u64::from(s.child.id()).to_le_bytes().to_vec()) {
            assert!(start.elapsed() < Duration::from_secs(20), "timeout waiting for sim ttkmd's ctl page");
            std::thread::sleep(Duration::from_millis(10));
        }
        let o = run(client_job(&s.dir, 1, 1));
        assert!(o.status.success(), "{}", text(&o));
    };
    let mut s = Sim::start("reuse");
    ttkmd(&s);
    let _ = s.child.kill();
    let _ = s.child.wait();
    let mut c = Command::new(CQLAB);
    c.args(["sim", "serve", "--quiet", "--sysmem-mib", "4"]).args(SMALL_WORMHOLE).arg("--dev").arg(&s.dir);
    let mut d = Killed(c.stderr(Stdio::null()).spawn().expect("spawning cqlab sim serve"));
    let start = Instant::now();
    while std::fs::read_to_string(s.dir.join("pid")).ok() != Some(d.0.id().to_string())
        || std::os::unix::net::UnixStream::connect(s.dir.join("sock")).is_err()
    {
        assert!(d.0.try_wait().unwrap().is_none(), "sim serve refused the directory sim ttkmd left");
        assert!(start.elapsed() < Duration::from_secs(10), "timeout waiting for the daemon");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut c = Command::new(CQLAB);
    c.args(["demo", "--rounds", "1"]).args(SMALL_WORMHOLE).arg("--device").arg(format!("sim:{}", s.dir.display()));
    let o = run(c);
    assert!(o.status.success(), "{}", text(&o));
    drop(d);
    let left: Vec<String> =
        std::fs::read_dir(&s.dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for f in ["sock", "pid", "ctl", "lock-ctl-", "fds", "tlb-"] {
        assert!(left.iter().any(|l| l.starts_with(f)), "no {f}: the simulators left less than this reuses: {left:?}");
    }
    let again = Sim::start_in(s.dir.clone(), "exec");
    ttkmd(&again);
}

/// `cqlab ARGS --dev DIR`.
fn cqlab_dev(args: &[&str], dir: &Path) -> Command {
    let mut c = Command::new(CQLAB);
    c.args(args).arg("--dev").arg(dir);
    c
}

#[test]
fn a_directory_of_another_user_is_refused_and_its_symlink_not_followed() {
    if !root_or_skip("a_directory_of_another_user_is_refused_and_its_symlink_not_followed") {
        return;
    }
    // The attack from the issue: another user's directory holding
    // `sysmem -> victim`, where root runs `sim ttkmd` (it used to zero the victim).
    let dir = sim_dir("foreign");
    let victim = support::plant_foreign_symlink(&dir);
    let serve = || {
        let mut c = Command::new(CQLAB);
        c.args(["sim", "ttkmd", "--sysmem-mib", "4"]).args(SMALL_WORMHOLE).arg("--dev").arg(&dir);
        run(c)
    };
    let o = serve();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("owned by uid 65534"), "{}", text(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "victim touched");
    // The same symlink in a directory of our own: refused, not followed.
    std::os::unix::fs::lchown(&dir, Some(0), Some(0)).unwrap();
    let o = serve();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("symbolic link"), "{}", text(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "victim touched");
    assert!(std::fs::symlink_metadata(dir.join("sysmem")).unwrap().file_type().is_symlink(), "symlink replaced");
    std::fs::remove_file(&victim).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nobody_cannot_read_follow_into_or_disturb_the_device() {
    if !root_or_skip("nobody_cannot_read_follow_into_or_disturb_the_device") {
        return;
    }
    let s = Sim::start("nobody");
    let before = run(client_job(&s.dir, 7, 1));
    assert!(before.status.success(), "{}", text(&before));
    // Read: not the sysmem, DRAM or L1 files, not even the directory.
    for f in ["sysmem", "dram", "l1"] {
        let p = s.dir.join(f);
        let o = as_nobody("head", &["-c", "16", p.to_str().unwrap()]);
        assert!(!o.status.success() && o.stdout.is_empty(), "nobody read {f}: {}", text(&o));
    }
    assert!(!as_nobody("ls", &[s.dir.to_str().unwrap()]).status.success(), "nobody listed the directory");
    // Follow into: no symlink can be planted there.
    let plant = s.dir.join("planted");
    let o = as_nobody("ln", &["-s", "/etc/passwd", plant.to_str().unwrap()]);
    assert!(!o.status.success() && std::fs::symlink_metadata(&plant).is_err(), "{}", text(&o));
    // Disturb: open the device, or start a second simulator on the path.
    let o = as_nobody(CQLAB, &["sim", "client-job", "--ttkmd", "--cqs", "2", "--dev", s.dir.to_str().unwrap()]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("owned by uid 0"), "{}", text(&o));
    let o = as_nobody(CQLAB, &["sim", "ttkmd", "--chip", "wormhole-n150", "--dev", s.dir.to_str().unwrap()]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("owned by uid 0"), "{}", text(&o));
    // The owner's device is as it was.
    let after = run(client_job(&s.dir, 8, 2));
    assert!(after.status.success(), "{}", text(&after));
}

#[test]
fn a_client_refuses_a_device_another_user_serves() {
    if !root_or_skip("a_client_refuses_a_device_another_user_serves") {
        return;
    }
    // nobody serves a device in a directory of its own; root opening it would
    // trust files nobody controls.
    let dir = sim_dir("served-by-nobody");
    let s = Sim::start_in(dir, "exec setpriv --reuid=65534 --regid=65534 --clear-groups");
    assert_eq!(std::fs::metadata(&s.dir).unwrap().uid(), NOBODY);
    let o = run(client_job(&s.dir, 1, 1));
    assert!(!o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("owned by uid 65534"), "{}", text(&o));
}

/// Over tt-kmd nothing reads the rings as an observer, so `run` reads them
/// through the BAR (the collector's other branch, untested before): it
/// still collects every core's records in order, each once, and says it
/// read them so.
#[test]
fn run_reads_the_trace_rings_through_the_bar_over_ttkmd() {
    let s = Sim::start("trace-bar");
    let (json, trace) = (s.dir.with_extension("json"), s.dir.with_extension("jsonl"));
    let mut c = Command::new(CQLAB);
    c.args(["run", "tiny_kernels", "--cqs", "1", "--iters", "3", "--warmup", "0", "--programs", "20", "--json"]);
    c.arg(&json).arg("--trace").arg(&trace).arg("--device").arg(format!("ttkmd-sim:{}", s.dir.display()));
    let o = run(c);
    let report = std::fs::read_to_string(&json).unwrap_or_default();
    let lines = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = (std::fs::remove_file(&json), std::fs::remove_file(&trace));
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_str(&report).unwrap();
    let t = &v["points"][0]["trace"];
    assert_eq!(t["through_bar"], true, "{t}");
    // Each core's records: consecutive seqs, one per line.
    let mut next: std::collections::HashMap<(u64, u64), u64> = Default::default();
    let mut records = 0;
    for line in lines.lines().filter(|l| l.starts_with("{\"rec\"")) {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let (x, y, seq) = (r["rec"][0].as_u64().unwrap(), r["rec"][1].as_u64().unwrap(), r["rec"][3].as_u64().unwrap());
        if let Some(want) = next.insert((x, y), seq + 1) {
            assert_eq!(seq, want, "core ({x},{y}): records out of order or repeated");
        }
        records += 1;
    }
    assert!(records > 100 && next.len() > 4, "{records} records from {} cores", next.len());
    assert_eq!(t["records"], records, "{t}");
    assert_eq!(t["lost"], 0, "{t}");
}
