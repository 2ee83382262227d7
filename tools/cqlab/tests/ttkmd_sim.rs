//! The tt-kmd backend against the simulator, as processes: `cqlab sim ttkmd` runs the chip on
//! shared files, host processes open `ttkmd-sim:DIR` (the tt-kmd backend, its kernel calls
//! answered by the simulator, its TLB windows and sysmem real shared mappings). Not
//! deterministic: host timing is whatever the host does. Every wait is bounded and named.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{firmware_dir, kill_after_boot, text, CQLAB};

const PROCESS_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `cqlab sim ttkmd` (2x2 workers, 2 CQs); killed and its files removed on drop.
struct Sim {
    child: Child,
    dir: PathBuf,
}

impl Sim {
    fn start(name: &str) -> Sim {
        let dir = std::env::temp_dir().join(format!("cqlab-ttkmd-sim-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let child = Command::new(CQLAB)
            .args(["sim", "ttkmd", "--grid", "2x2", "--cqs", "2", "--sysmem-mib", "16", "--dev"])
            .arg(&dir)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning cqlab sim ttkmd");
        let s = Sim { child, dir };
        let ctl = s.dir.join("ctl");
        let start = Instant::now();
        // The magic word is written last: once the ctl page has it, the device is complete.
        while std::fs::read(&ctl).map_or(true, |b| b.len() < 8 || &b[..8] != b"CQLTTKM1") {
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
    c.args(["sim", "client-job", "--ttkmd", "--grid", "2x2", "--cqs", "2", "--bytes", "2048", "--seed"])
        .arg(seed.to_string())
        .args(["--rounds", &rounds.to_string(), "--dev"])
        .arg(dir);
    c
}

#[test]
fn the_demo_runs_through_ttkmd_against_the_simulator() {
    let s = Sim::start("demo");
    let mut c = Command::new(CQLAB);
    c.args(["demo", "--grid", "2x2", "--rounds", "2", "--device"]).arg(format!("ttkmd-sim:{}", s.dir.display()));
    let o = run(c);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("verified 524288 bytes read back"), "{}", text(&o));
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

#[test]
fn a_second_opener_is_told_who_holds_the_device() {
    let s = Sim::start("held");
    let mut holder = client_job(&s.dir, 1, 100_000)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("booted"), "{line}");
    let o = run(client_job(&s.dir, 2, 1));
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("held by pid {}", holder.id())), "{}", text(&o));
}
