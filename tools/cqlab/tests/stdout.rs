//! Every subcommand with its standard output closed (`cqlab ... | head -0`)
//! and on a full disk (`cqlab ... > /dev/full`): a closed pipe ends the
//! command quietly with the status it would have had (a `compare`
//! regression stays 1); a full disk is exit 1 with an error naming stdout.
//! Never a panic.

mod support;

use cqlab_abi::encode::Encoder;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use support::{firmware_dir, run_within, text, wait_for_exit, Daemon, CQLAB};

const LIMIT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
enum Out {
    /// A pipe whose reader is gone before the command writes.
    Closed,
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
}

fn closed_pipe() -> OwnedFd {
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    write
}

fn stdout(out: Out) -> Stdio {
    match out {
        Out::Closed => Stdio::from(closed_pipe()),
        Out::Full => Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap()),
    }
}

fn command(args: &[&str], out: Out) -> Command {
    let mut c = Command::new(CQLAB);
    c.args(args).stdout(stdout(out));
    c
}

fn run(args: &[&str], out: Out) -> Output {
    let mut c = command(args, out);
    let what = format!("{args:?} with stdout {out:?}");
    c.env("CQLAB_FIRMWARE_DIR", firmware_dir()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    wait_for_exit(&mut child, LIMIT, &what);
    child.wait_with_output().unwrap()
}

/// `args` run both ways. `status` is what the command exits with when its
/// output is read; `prints` whether it writes to stdout at all.
fn both_ways(args: &[&str], status: i32, prints: bool) {
    closed(args, status);
    full(args, status, prints);
}

/// `args` with stdout closed: `status`, quietly.
fn closed(args: &[&str], status: i32) {
    let o = run(args, Out::Closed);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(status), "{args:?}, closed stdout: {}", text(&o));
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe") && !err.contains("writing to stdout"),
        "{args:?}, closed stdout, not quiet: {}",
        text(&o)
    );
}

/// `args` with stdout on /dev/full: exit 1 saying so when it prints, else `status`.
fn full(args: &[&str], status: i32, prints: bool) {
    let o = run(args, Out::Full);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{args:?} on /dev/full: {}", text(&o));
    if prints {
        assert_eq!(o.status.code(), Some(1), "{args:?} on /dev/full: {}", text(&o));
        assert!(err.contains("writing to stdout: No space left on device"), "{args:?} on /dev/full: {}", text(&o));
    } else {
        assert_eq!(o.status.code(), Some(status), "{args:?} on /dev/full: {}", text(&o));
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("stdout-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `cqlab ARGS` read normally; panics unless it exits `status`.
fn make(args: &[&str], status: i32) {
    let mut c = Command::new(CQLAB);
    c.args(args);
    let o = run_within(c, LIMIT);
    assert_eq!(o.status.code(), Some(status), "{args:?}: {}", text(&o));
}

#[test]
fn report_commands_end_quietly_on_a_closed_pipe_and_fail_on_a_full_disk() {
    let d = scratch("reports");
    both_ways(&["--help"], 0, true);
    both_ways(&["demo", "--rounds", "1", "--chip", "wormhole-n150", "--harvest", "rows=1,2,3,4,5,7,8,9"], 0, true);
    both_ways(&["bench", "dispatch", "--axis", "base", "--programs", "4"], 0, true);
    both_ways(&["perf", "--programs", "4"], 0, true);
    both_ways(&["driver-bench"], 0, true);
    both_ways(&["matmul", "--m", "16", "--n", "16", "--k", "16", "--strategy", "os"], 0, true);
    both_ways(&["race", "--seeds", "2", "--iterations", "1"], 0, true);
    both_ways(&["race", "--seeds", "1", "--iterations", "1", "--variant", "none", "--json"], 0, true);
    both_ways(&["stress", "restart", "--runs", "1", "--depth", "4"], 0, true);
    both_ways(&["stress", "run-one", "--seed", "3", "--depth", "4"], 0, true);
    both_ways(&["sweep", "copy_stress", "--param", "depth=1,2"], 0, true);
    both_ways(&["schedule", "--m", "256", "--n", "256", "--k", "256"], 0, true);
    both_ways(&["sim", "bench", "--iters", "1000", "--chip-cycles", "1000"], 0, true);
    both_ways(&["sim", "bench", "--iters", "1000", "--chip-cycles", "1000", "--json"], 0, true);
    let elf = firmware_dir().join("isa-ecall-exit");
    both_ways(&["sim", "exec", "--trace", s(&elf)], 42, true);
    // A runaway's trace, its reader gone: the run goes on untraced to its
    // status, in a second (traced to the end it took ~7 minutes; helper-59).
    let runaway = firmware_dir().join("isa-selftest-runaway");
    both_ways(&["sim", "exec", "--trace", "--max-cycles", "1000000000", s(&runaway)], 3, true);

    // Inputs for the readers: a run report and its trace, campaign records.
    let (report, trace) = (d.join("run.json"), d.join("run.jsonl"));
    make(
        &[
            "run",
            "dispatch_latency",
            "--cqs",
            "1",
            "--iters",
            "2",
            "--warmup",
            "0",
            "--json",
            s(&report),
            "--trace",
            s(&trace),
        ],
        0,
    );
    both_ways(&["run", "dispatch_latency", "--cqs", "1", "--iters", "2", "--warmup", "0"], 0, true);
    both_ways(&["compare", s(&report), s(&report)], 0, true);
    // A regression beyond the threshold keeps its status 1 with stdout gone.
    let mut worse: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let tp = &mut worse["points"][0]["throughput"]["value"];
    *tp = serde_json::json!(tp.as_f64().unwrap() / 2.0);
    let worse_path = d.join("worse.json");
    std::fs::write(&worse_path, worse.to_string()).unwrap();
    both_ways(&["compare", s(&report), s(&worse_path)], 1, true);
    both_ways(&["trace", "summary", s(&trace)], 0, true);
    both_ways(&["trace", "export", s(&trace), "--perfetto", s(&d.join("perfetto.json"))], 0, false);
    let records = d.join("records.jsonl");
    make(&["race", "--seeds", "2", "--iterations", "1", "--jsonl", s(&records)], 0);
    both_ways(&["campaign", "merge", s(&records)], 0, true);
    both_ways(&["replay", s(&records), "--out", s(&d.join("replay"))], 0, true);
    // One directory is one campaign's: each way writes its own.
    let sbatch = |dir: &str| {
        ["campaign", "sbatch", "--shards", "2", "--dir", dir, "--", "race", "--seeds", "4"].map(String::from)
    };
    closed(&sbatch(s(&d.join("sbatch-closed"))).each_ref().map(String::as_str), 0);
    full(&sbatch(s(&d.join("sbatch-full"))).each_ref().map(String::as_str), 0, true);
    // An issue-queue dump of many commands.
    let mut buf = vec![0u8; 1 << 16];
    let mut enc = Encoder::new(&mut buf);
    while enc.stall().is_ok() {}
    let n = enc.len();
    buf.truncate(n);
    let dump = d.join("issue.bin");
    std::fs::write(&dump, &buf).unwrap();
    both_ways(&["decode", s(&dump)], 0, true);
    both_ways(&["decode", s(&dump), "--json"], 0, true);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn device_commands_end_quietly_on_a_closed_pipe_and_fail_on_a_full_disk() {
    let d = Daemon::start("stdout-devices", &[], Stdio::null());
    let spec = d.spec();
    make(&["run", "dispatch_latency", "--device", &spec, "--cqs", "2", "--iters", "2", "--warmup", "0"], 0);
    both_ways(&["status", "--device", &spec], 0, true);
    both_ways(&["dump", "--device", &spec], 0, true);
    both_ways(&["decode", "--device", &spec, "--kind", "completion", "--cq", "1"], 0, true);
    both_ways(&["decode", "--device", &spec, "--kind", "trace", "--core", "19,26"], 0, true);
    both_ways(&["sim", "bar", "--dev", s(&d.dir), "--worker", "1,1", "--addr", "0x40"], 0, true);
    both_ways(&["sim", "client-job", "--dev", s(&d.dir), "--rounds", "1", "--cqs", "2"], 0, true);
    both_ways(&["reset", "--dev", s(&d.dir)], 0, true);
    both_ways(&["reset", "--device", &spec, "--json"], 0, true);
}

#[test]
fn servers_start_and_stop_with_stdout_closed_or_full() {
    for out in [Out::Closed, Out::Full] {
        // sim serve and sim stop write to stderr only.
        let mut d = Daemon::start("stdout-server", &[], stdout(out));
        let stop = run(&["sim", "stop", "--dev", s(&d.dir)], out);
        assert_eq!(stop.status.code(), Some(0), "{out:?}: {}", text(&stop));
        let status = wait_for_exit(&mut d.child, Duration::from_secs(10), "sim serve after sim stop");
        assert_eq!(status.code(), Some(0), "sim serve with stdout {out:?}");
        // sim ttkmd until SIGINT.
        let dir = scratch("ttkmd");
        let mut sim =
            command(&["sim", "ttkmd", "--harvest", "rows=1,2,3,4,5,7,8,9", "--sysmem-mib", "8", "--dev", s(&dir)], out)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
        let start = Instant::now();
        while std::fs::read(dir.join("ctl"))
            .map_or(true, |b| b.len() < 8 || b[..8] != cqlab_sim::shared::MAGIC.to_le_bytes())
        {
            assert!(start.elapsed() < Duration::from_secs(20), "timeout waiting for sim ttkmd");
            std::thread::sleep(Duration::from_millis(10));
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(sim.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
        wait_for_exit(&mut sim, Duration::from_secs(10), "sim ttkmd after SIGINT");
        let o = sim.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "sim ttkmd with stdout {out:?}: {}", text(&o));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
