//! `cqlab stress restart`: fresh processes per run, seeded kills mid-enqueue,
//! hard timeouts, drift statistics; against the embedded simulator and a
//! `cqlab sim serve` daemon (runs after a SIGKILL must boot clean).

mod support;

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use support::{firmware_dir, CQLAB, EXIT_HANG};

fn stress(args: &[&str]) -> (i32, serde_json::Value) {
    support::cqlab_json(&[&["stress", "restart"], args].concat())
}

/// Reference 001's matmul_peak restart loops (B, C, D): fresh processes,
/// a seed a run for the matrices, its figure per run, with fast and slow
/// dispatch; each run's product is checked.
#[test]
fn matmul_peak_restarts_report_gflops_drift_with_fast_and_slow_dispatch() {
    for device in ["embedded", "embedded:slow"] {
        let (code, v) = stress(&["--runs", "3", "--workload", "matmul_peak", "--iterations", "1", "--device", device]);
        assert_eq!(code, 0, "{device}: {v}");
        assert_eq!(v["report"]["runs"], 3, "{device}: {v}");
        assert_eq!(
            (v["chip"].as_str(), v["harvesting"].as_str()),
            (Some("wormhole-n150"), Some("rows=8")),
            "{device}: {v}"
        );
        let g = &v["drift"]["gflops"];
        assert!(g["mean"].as_f64().is_some_and(|m| m > 0.0), "{device}: {v}");
        assert!(v["drift"]["workload_cycles"]["mean"].as_f64().is_some_and(|c| c > 0.0), "{device}: {v}");
    }
    // Firmware that cannot boot is refused before the first run on any
    // embedded spec (it was checked for `embedded` alone).
    let mut c = std::process::Command::new(CQLAB);
    c.args(["stress", "restart", "--runs", "2", "--workload", "matmul_peak", "--device", "embedded:slow"]);
    let o = c.env("CQLAB_FIRMWARE_DIR", std::env::temp_dir().join("cqlab-no-firmware-here")).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", support::text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the firmware:"), "{}", support::text(&o));
    // Slow dispatch has no command queues for the others; a run's seed is its own.
    for (device, why) in [("embedded:slow", "matmul_peak only"), ("embedded:seed=4", "no seed= here")] {
        let o = support::cqlab(&["stress", "restart", "--runs", "1", "--device", device]);
        assert_eq!(o.status.code(), Some(2), "{}", support::text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(why), "{}", support::text(&o));
    }
}

/// Ten copy_stress runs, seed 3, 40 % killed, records appended to `jsonl`.
fn kill_campaign(jsonl: &std::path::Path) -> Vec<&str> {
    let mut args = vec!["--runs", "10", "--kill-rate", "0.4", "--seed", "3", "--depth", "16", "--jsonl"];
    args.push(jsonl.to_str().unwrap());
    args
}

#[test]
fn restarts_with_kills_report_drift_and_no_failures() {
    let jsonl = std::env::temp_dir().join(format!("cqlab-stress-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&jsonl);
    let (code, v) = stress(&kill_campaign(&jsonl));
    assert_eq!(code, 0, "{v}");
    assert!(v["killed"].as_u64().unwrap() > 0, "seed 3 kills some runs: {v}");
    assert_eq!(v["failures_after_kill"], 0);
    assert_eq!(v["report"]["runs"].as_u64().unwrap() + v["killed"].as_u64().unwrap(), 10);
    let d = &v["drift"]["cycles_per_read"];
    for key in ["mean", "stddev", "first10", "last10", "slope"] {
        assert!(d[key].is_number(), "{key}: {v}");
    }
    // A completed run replays in a fresh process to the same device cycle;
    // the merged report leaves the killed runs out, as restart does.
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(lines.lines().count(), 10);
    // A killed run is no pass: `ok` false, `killed` true (it read ok).
    let records: Vec<serde_json::Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let killed: Vec<_> = records.iter().filter(|r| r["metrics"]["killed_after_s"].is_number()).collect();
    assert_eq!(killed.len() as u64, v["killed"].as_u64().unwrap());
    assert!(killed.iter().all(|r| r["ok"] == false && r["killed"] == true), "{killed:?}");
    let done = lines.lines().find(|l| !l.contains("killed_after_s")).unwrap();
    let out = Command::new(CQLAB).env("CQLAB_FIRMWARE_DIR", firmware_dir()).args(["replay", done]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("identical"), "{text}");
    // Stdout is the verdict alone: the run's notes go to stderr.
    assert_eq!(text.lines().count(), 1, "{text}");
    // A stress run writes no dump: --out has nothing to hold.
    let out = Command::new(CQLAB).args(["replay", done, "--out", "/tmp"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a stress run writes no dump"), "{}", support::text(&out));
    // A record holding its run for a kill would replay for ever (helper-33).
    let mut held: serde_json::Value = serde_json::from_str(done).unwrap();
    held["argv"].as_array_mut().unwrap().extend(["--hold-after-enqueued".into(), "1".into()]);
    let out = Command::new(CQLAB).args(["replay", &held.to_string()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hold the run for a kill"), "{}", support::text(&out));
    let out = Command::new(CQLAB).args(["campaign", "merge", jsonl.to_str().unwrap(), "--json"]).output().unwrap();
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The merged report is restart's own (helper-45: merge gave race's
    // report, without the drift, the kills' aftermath or the timeouts).
    for key in ["report", "runs", "completed", "killed", "failures_after_kill", "hard_timeouts", "drift"] {
        assert_eq!(merged[key], v[key], "{key}: merged {merged} restart {v}");
    }
    assert_eq!(merged["missing_runs"], 0, "{merged}");
    // The whole file replays its first run that was not killed; a killed
    // one is nothing to replay (helper-32: the file's default was a killed
    // run, refused as an edited record).
    let mut replay = Command::new(CQLAB);
    let out =
        replay.env("CQLAB_FIRMWARE_DIR", firmware_dir()).args(["replay", jsonl.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    let killed_line = lines.lines().find(|l| l.contains("killed_after_s")).unwrap();
    let out = Command::new(CQLAB).args(["replay", killed_line]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("killed on purpose"), "{}", support::text(&out));
    // The same campaign seed kills the same runs at the same read.
    let kills = |records: &[serde_json::Value]| -> Vec<(u64, f64)> {
        records
            .iter()
            .filter(|r| r["killed"] == true)
            .map(|r| (r["seed"].as_u64().unwrap(), r["metrics"]["killed_after_step"].as_f64().unwrap()))
            .collect()
    };
    let (_, again) = stress(&kill_campaign(&jsonl));
    let all: Vec<serde_json::Value> =
        std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(again["killed"], v["killed"]);
    assert_eq!(kills(&all[10..]), kills(&records), "{all:?}");
    let _ = std::fs::remove_file(&jsonl);
}

#[test]
fn a_run_past_its_hard_timeout_is_killed_and_counted() {
    let (code, v) = stress(&["--runs", "1", "--timeout", "0.3", "--depth", "200000", "--bytes", "64"]);
    assert_eq!(code, EXIT_HANG, "a run that never ends is a hang: {v}");
    assert_eq!(v["hard_timeouts"], 1);
    assert_eq!(v["report"]["signatures"][0]["kind"], "hard-timeout");
}

/// `--json` carries the campaign's own options beside its results, so a
/// report says what ran (helper-72: only the workload and device did).
#[test]
fn the_json_report_names_the_campaigns_options() {
    let options = "--runs 2 --seed 9 --timeout 30 --kill-rate 0.25 --reset phase --phase-runs 3 --workload random \
                   --iterations 2 --timeout-cycles 6000000";
    let (code, v) = stress(&options.split_whitespace().collect::<Vec<_>>());
    assert_eq!(code, 0, "{v}");
    let want = serde_json::json!({"seed": 9, "campaign_runs": 2, "shard": "0/1", "timeout_seconds": 30.0,
        "kill_rate": 0.25, "reset": "phase", "phase_runs": 3, "timeout_cycles": 6000000,
        "knobs": {"iterations": 2}, "workload": "random", "device": "embedded"});
    for (key, value) in want.as_object().unwrap() {
        assert_eq!(&v[key], value, "{key}: {v}");
    }
    assert_eq!(v["host"]["jitter_cycles"], 0, "{v}");
    // A copy_stress campaign names its knobs; phase_runs only with --reset phase.
    let (_, v) = stress(&["--runs", "1", "--depth", "8", "--bytes", "256"]);
    assert_eq!((&v["knobs"], &v["phase_runs"]), (&serde_json::json!({"depth": 8, "bytes": 256}), &Value::Null));
}

/// A hard-timeout record whose run ends when replayed still DIFFERS (exit
/// 1, as docs/cli.md says), and says why: the record's cut was host time,
/// which a replay does not reproduce (helper-72: a bare DIFFERS read as a
/// seed that no longer hangs).
#[test]
fn a_replayed_hard_timeout_that_ends_says_the_limit_was_host_time() {
    let argv =
        ["stress", "run-one", "--seed", "5", "--workload", "copy_stress", "--device", "embedded", "--depth", "8"];
    let record = serde_json::json!({"tool": "stress", "seed": 5, "index": 0, "ok": false, "device_cycles": 0,
        "seconds": 0.02, "argv": argv, "failure": {"class": "hang", "kind": "hard-timeout",
        "root": "host (the process did not end)", "signature": "hard-timeout: still running after 0.02 s",
        "error": "killed after the 0.02 s per-run timeout"}});
    let out = Command::new(CQLAB)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .args(["replay", &record.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", support::text(&out));
    assert!(stdout.contains("(recorded: hard-timeout: still running after 0.02 s, ending at 0): DIFFERS"), "{stdout}");
    let note = "note: the recorded run was cut off by a host-time limit (stress restart --timeout, after 0.02 s), \
                which a replay does not reproduce";
    assert!(stdout.contains(note), "{stdout}");
}

struct Daemon {
    child: Child,
    dir: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn runs_after_a_sigkill_boot_clean_on_a_daemon() {
    let dir = std::env::temp_dir().join(format!("cqlab-stress-dev-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let child = Command::new(CQLAB).args(["sim", "serve", "--dev"]).arg(&dir).spawn().unwrap();
    let d = Daemon { child, dir };
    let start = Instant::now();
    while !d.dir.join("sock").exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "timeout waiting for the daemon socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    let device = format!("sim:{}?wait=10", d.dir.display());
    let (code, v) =
        stress(&["--runs", "12", "--kill-rate", "0.35", "--seed", "5", "--reset", "never", "--device", &device]);
    let mut d = d;
    // Once (under heavy load) a run found the socket refusing connections:
    // say whether the daemon itself had died, and how.
    assert!(d.child.try_wait().unwrap().is_none(), "the daemon exited: {:?}; {v}", d.child.try_wait());
    assert_eq!(code, 0, "{v}");
    assert!(v["killed"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["failures_after_kill"], 0, "{v}");
    // Program streams on the same device: a run killed mid-stream leaves
    // kernels resident and launches in flight that the next process, which
    // knows nothing of them, must not rely on.
    let (code, v) = stress(&[
        "--workload",
        "programs",
        "--iterations",
        "2",
        "--runs",
        "8",
        "--kill-rate",
        "0.4",
        "--seed",
        "7",
        "--reset",
        "never",
        "--device",
        &device,
    ]);
    assert!(d.child.try_wait().unwrap().is_none(), "the daemon exited: {:?}; {v}", d.child.try_wait());
    assert_eq!(code, 0, "{v}");
    assert!(v["killed"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["failures_after_kill"], 0, "{v}");
}

/// Issue 24: `stress restart --workload random` (and programs) pass on the
/// correct firmware, as `race` does with the same workloads.
#[test]
fn the_race_workloads_pass_under_stress_on_the_normal_firmware() {
    for workload in ["random", "programs"] {
        let (code, v) = stress(&["--runs", "2", "--workload", workload, "--iterations", "2"]);
        assert_eq!(code, 0, "{workload}: {v}");
        assert_eq!(v["report"]["failures"], 0, "{workload}: {v}");
        assert_eq!(v["completed"], 2, "{workload}: {v}");
    }
}

/// A kill of a random or programs run lands after a seeded step, the run
/// held there for it, so the same campaign seed kills the same runs at the
/// same step (they were killed a wall-clock 0-19 ms in).
#[test]
fn race_workload_kills_land_at_the_same_step_for_the_same_seed() {
    for (workload, steps) in [("random", 24), ("programs", 50)] {
        let jsonl = std::env::temp_dir().join(format!("cqlab-stress-{workload}-{}.jsonl", std::process::id()));
        let kills = || {
            let _ = std::fs::remove_file(&jsonl);
            let (code, v) = stress(&[
                "--runs",
                "6",
                "--workload",
                workload,
                "--iterations",
                "2",
                "--kill-rate",
                "0.5",
                "--seed",
                "11",
                "--jsonl",
                jsonl.to_str().unwrap(),
            ]);
            assert_eq!(code, 0, "{workload}: {v}");
            let killed: Vec<(u64, u64)> = std::fs::read_to_string(&jsonl)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|r| r["killed"] == true)
                .map(|r| (r["seed"].as_u64().unwrap(), r["metrics"]["killed_after_step"].as_f64().unwrap() as u64))
                .collect();
            assert_eq!(killed.len() as u64, v["killed"].as_u64().unwrap(), "{workload}: {v}");
            killed
        };
        let first = kills();
        assert!(!first.is_empty(), "{workload}: seed 11 kills some runs");
        assert!(first.iter().all(|&(_, step)| (1..=steps).contains(&step)), "{workload}: {first:?}");
        assert_eq!(kills(), first, "{workload}");
        let _ = std::fs::remove_file(&jsonl);
    }
}

/// A stress record whose replay cannot have its device (no daemon there)
/// is no pass at device cycle 0: the replay fails naming why (helper-44).
#[test]
fn a_replay_without_its_device_fails_and_says_why() {
    let record = serde_json::json!({
        "tool": "stress", "seed": 5, "index": 0, "ok": true, "device_cycles": 437361, "seconds": 0.02,
        "argv": ["stress", "run-one", "--seed", "5", "--workload", "copy_stress",
                 "--device", "sim:/nonexistent/cqlab-dev", "--depth", "64", "--bytes", "4096"],
    });
    let out = Command::new(CQLAB).args(["replay", &record.to_string()]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", support::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("could not have its device") && err.contains("/nonexistent/cqlab-dev"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("identical"), "{}", support::text(&out));
}
