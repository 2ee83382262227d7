//! Campaigns split into shards merge into the report of one unsharded run:
//! shards run by hand, and a 4-shard array job on a single-node Slurm
//! cluster (tools/slurm/single-node.sh installs slurm-wlm and munge with
//! apt-get and starts munged, slurmctld and slurmd as root). Where that
//! cannot run (not root, no apt, packages not installable) the Slurm test
//! prints why and skips.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::{firmware_dir, CQLAB};

fn cqlab(args: &[&str]) -> (i32, String, String) {
    let out = support::cqlab(args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// A campaign small enough for a test, with failures to merge.
const CAMPAIGN: [&str; 9] =
    ["race", "--workload", "random", "--firmware", "release-before-ack", "--seeds", "8", "--iterations", "2"];

/// The parts of a report that do not depend on host timing.
fn deterministic(v: &serde_json::Value) -> serde_json::Value {
    let keys = [
        "runs",
        "failures",
        "failure_rate",
        "failure_rate_95",
        "signatures",
        "runs_to_first_failure",
        "first_failing_seed",
    ];
    keys.iter().map(|k| (k.to_string(), v[k].clone())).collect::<serde_json::Map<_, _>>().into()
}

fn unsharded() -> serde_json::Value {
    let (code, out, err) = cqlab(&[&CAMPAIGN[..], &["--json"]].concat());
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert!(code != 0 && code == support::exit_of_report(&report), "the variant fails some of its 8 seeds: {out}{err}");
    report
}

fn merged(dir: &Path) -> serde_json::Value {
    let (code, out, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap(), "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert!(code != 0 && code == support::exit_of_report(&report), "{out}{err}");
    report
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cqlab-campaign-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn shards_run_by_hand_merge_into_the_unsharded_report() {
    let dir = temp("hand");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..4 {
        let jsonl = dir.join(format!("shard-{i}.jsonl"));
        let shard = format!("{i}/4");
        let (code, out, err) =
            cqlab(&[&CAMPAIGN[..], &["--shard", &shard, "--jsonl", jsonl.to_str().unwrap(), "--json"]].concat());
        let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        assert_eq!(code, support::exit_of_report(&report), "{out}{err}");
    }
    assert_eq!(deterministic(&merged(&dir)), deterministic(&unsharded()));
    // Shards lost are named, not silently merged away.
    let (code, _, err) = cqlab(&["campaign", "merge", dir.join("shard-1.jsonl").to_str().unwrap()]);
    assert!(err.contains("warning: 3 of 4 shards wrote no record: shards 0, 2, 3 (of 4; 6 runs of 8)"), "{err}");
    assert_eq!(code, 6, "an incomplete campaign: {err}");
    // Records of another campaign are refused, not merged into one report:
    // shard 1's records with `from` made `to`, beside shard 0's.
    let mixed = temp("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    std::fs::copy(dir.join("shard-0.jsonl"), mixed.join("a.jsonl")).unwrap();
    let refused = |from: &str, to: &str| {
        let other = std::fs::read_to_string(dir.join("shard-1.jsonl")).unwrap();
        assert!(other.contains(from), "the campaign's records hold {from}");
        std::fs::write(mixed.join("b.jsonl"), other.replace(from, to)).unwrap();
        let (code, _, err) = cqlab(&["campaign", "merge", mixed.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("records of two campaigns mixed?"), "{err}");
        err
    };
    // Another workload.
    let err = refused(r#""--workload","random""#, r#""--workload","two-queue""#);
    assert!(err.contains("has --workload two-queue"), "{err}");
    // Other knobs (any option but what a seed draws).
    let err = refused(r#""--iterations","2""#, r#""--iterations","3""#);
    assert!(err.contains("has --iterations 3") && err.contains("had 2"), "{err}");
    // Faults the others lack (only the slice jitter race draws for a seed
    // is a seed's own).
    let err = refused(r#""--pct-depth""#, r#""--faults","jitter=5","--pct-depth""#);
    assert!(err.contains("has --faults jitter=5"), "{err}");
    let _ = std::fs::remove_dir_all(&mixed);
    // A record cut short by a killed task is left out; the others stand.
    let whole = std::fs::read_to_string(dir.join("shard-2.jsonl")).unwrap();
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, &whole[..whole.len() - 20]).unwrap();
    let (_, out, err) = cqlab(&["campaign", "merge", cut.to_str().unwrap(), "--json"]);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(report["runs"], 1, "{out}");
    assert!(err.contains("cut short") && err.contains("left out"), "{err}");
    std::fs::remove_file(&cut).unwrap();
    // A run recorded again (a task requeued or rerun: same seed, same
    // command line) counts once, with a warning (helper-80: the merge
    // refused it as two campaigns).
    std::fs::copy(dir.join("shard-0.jsonl"), dir.join("shard-0-again.jsonl")).unwrap();
    let (code, out, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap(), "--json"]);
    let again: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(code, support::exit_of_report(&again), "{err}");
    assert_eq!(deterministic(&again), deterministic(&unsharded()));
    assert!(err.contains("warning: 2 runs were recorded again with the same seed and command line"), "{err}");
    // The same run recorded with another outcome is no rerun to count once
    // (helper-83: the first was kept without a word): refused, naming both.
    let failed = (0..4)
        .flat_map(|i| {
            std::fs::read_to_string(dir.join(format!("shard-{i}.jsonl")))
                .unwrap()
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .map(|l| serde_json::from_str::<serde_json::Value>(&l).unwrap())
        .find(|r| r["ok"] == false)
        .expect("a failed run to record again as passed");
    let mut passed = failed.clone();
    passed["ok"] = true.into();
    passed["failure"] = serde_json::Value::Null;
    std::fs::write(dir.join("shard-0-again.jsonl"), format!("{passed}\n")).unwrap();
    let (code, _, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is recorded twice with different outcomes (") && err.contains("passed"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the campaign's shards `0..n` by hand into `dir`, as array tasks would.
fn run_shards(dir: &Path, n: u32) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        let jsonl = dir.join(format!("shard-{i}.jsonl"));
        let shard = format!("{i}/{n}");
        let (code, out, err) =
            cqlab(&[&CAMPAIGN[..], &["--shard", &shard, "--jsonl", jsonl.to_str().unwrap(), "--json"]].concat());
        let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        assert_eq!(code, support::exit_of_report(&report), "{out}{err}");
    }
}

/// helper-80: a campaign whose tasks hit the time limit merged as missing
/// only the runs below the highest index found, and exited as complete.
#[test]
fn a_merge_names_every_shard_and_run_without_a_record_and_exits_6() {
    let dir = temp("incomplete");
    run_shards(&dir, 4);
    // Shard 3 (runs 3 and 7) lost; shard 1 stopped after run 1 (run 5 is
    // its last, and the campaign's: no record above it tells of it).
    std::fs::remove_file(dir.join("shard-3.jsonl")).unwrap();
    let one = std::fs::read_to_string(dir.join("shard-1.jsonl")).unwrap();
    std::fs::write(dir.join("shard-1.jsonl"), format!("{}\n", one.lines().next().unwrap())).unwrap();
    let (code, out, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 6, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(v["missing_runs"], 3, "{v}");
    assert_eq!(v["campaign_runs"], 8, "{v}");
    assert_eq!(v["missing_shards"], serde_json::json!([3]), "{v}");
    let shards: Vec<(String, serde_json::Value)> = v["incomplete_shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["shard"].as_str().unwrap().to_owned(), g["runs"].clone()))
        .collect();
    assert_eq!(shards, [("1/4".into(), serde_json::json!([[5, 5]])), ("3/4".into(), serde_json::json!([[3, 7]]))]);
    assert!(
        err.contains("shard 3 (of 4; 2 runs of 8)")
            && err.contains("shard 1/4 has no record of 1 of its 2 runs: run 5"),
        "{err}"
    );
    // The text report: its header first, then what is missing.
    let (code, out, _) = cqlab(&["campaign", "merge", dir.to_str().unwrap()]);
    assert_eq!(code, 6);
    assert!(out.starts_with("campaign "), "{out}");
    assert!(
        out.trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("incomplete: 3 of the campaign's 8 runs have no record: the report covers the 5 runs present"),
        "{out}"
    );
    // A shard judged alone (what an array task checks).
    let shard1 = dir.join("shard-1.jsonl");
    let (code, _, err) = cqlab(&["campaign", "merge", "--check", "--shard", "1/4", shard1.to_str().unwrap()]);
    assert_eq!(code, 6, "{err}");
    let shard0 = dir.join("shard-0.jsonl");
    let (code, _, err) = cqlab(&["campaign", "merge", "--check", "--shard", "0/4", shard0.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// helper-80: a task requeued, preempted or rerun appended every run
/// again (the merge refused the shard as two campaigns), and after a kill
/// mid-record appended onto the cut line ("not a campaign record").
/// `--resume` (what each array task passes) cuts the partial record off
/// and runs only the runs the file lacks.
#[test]
fn a_rerun_shard_resumes_from_its_file_and_the_campaign_merges() {
    let dir = temp("resume");
    run_shards(&dir, 4);
    let file = dir.join("shard-1.jsonl");
    let whole = std::fs::read_to_string(&file).unwrap();
    let first = whole.lines().next().unwrap().to_owned();
    // Killed while writing its second record.
    std::fs::write(&file, format!("{first}\n{}", &whole.lines().nth(1).unwrap()[..40])).unwrap();
    let rerun = |shard: &str| {
        cqlab(&[&CAMPAIGN[..], &["--shard", shard, "--jsonl", file.to_str().unwrap(), "--resume", "--json"]].concat())
    };
    let (code, out, err) = rerun("1/4");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(code, support::exit_of_report(&report), "{out}{err}");
    assert_eq!(report["runs"], 2, "the shard's report covers the run resumed too: {report}");
    assert!(err.contains("ended inside a record") && err.contains("holds 1 of this shard's runs"), "{err}");
    let lines: Vec<String> = std::fs::read_to_string(&file).unwrap().lines().map(String::from).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0], first, "the recorded run is not run again");
    // Run again once complete: nothing runs, nothing is appended.
    let (_, _, err) = rerun("1/4");
    assert_eq!(std::fs::read_to_string(&file).unwrap().lines().count(), 2, "{err}");
    let (code, out, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap(), "--json"]);
    let merged: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(code, support::exit_of_report(&merged), "{out}{err}");
    assert_eq!(deterministic(&merged), deterministic(&unsharded()));
    // Another shard's file is another campaign's: refused, not resumed,
    // and left as it was, a cut last record too (helper-83: it was cut
    // before the refusal).
    let cut = format!("{}{}", std::fs::read_to_string(&file).unwrap(), &first[..40]);
    std::fs::write(&file, &cut).unwrap();
    let (code, _, err) = rerun("2/4");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a record of another campaign (shard 1/4 of 8 runs; this is shard 2/4 of 8 runs)"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), cut, "a refused file is left as it was");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same for `stress restart`.
#[test]
fn a_rerun_stress_shard_resumes_from_its_file() {
    let dir = temp("resume-stress");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shard-0.jsonl");
    let args = |resume: bool| {
        let mut a = vec!["stress", "restart", "--runs", "4", "--seed", "3", "--timeout", "30", "--workload", "random"];
        a.extend(["--iterations", "1", "--jsonl", file.to_str().unwrap(), "--json"]);
        if resume {
            a.push("--resume");
        }
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |resume: bool| {
        let a = args(resume);
        cqlab(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (code, out, err) = run(false);
    assert_eq!(code, 0, "{out}{err}");
    let whole = std::fs::read_to_string(&file).unwrap();
    let kept: Vec<&str> = whole.lines().take(2).collect();
    std::fs::write(&file, format!("{}\n{}", kept.join("\n"), &whole.lines().nth(2).unwrap()[..30])).unwrap();
    let (code, out, err) = run(true);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(v["runs"], 4, "{v}");
    let again = std::fs::read_to_string(&file).unwrap();
    assert_eq!(again.lines().count(), 4, "{again}");
    assert_eq!(again.lines().take(2).collect::<Vec<_>>(), kept);
    let (code, out, err) = cqlab(&["campaign", "merge", file.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// helper-80: records of another campaign merged silently when they
/// differed outside the run's command line: other firmware ELFs (another
/// CQLAB_FIRMWARE_DIR), another cqlab build, another `stress restart`
/// --seed, --timeout, --kill-rate or --reset.
#[test]
fn records_of_other_firmware_builds_or_stress_options_are_refused() {
    let dir = temp("other-build");
    std::fs::create_dir_all(&dir).unwrap();
    let shard = |i: u32, firmware: &Path| {
        let jsonl = dir.join(format!("shard-{i}.jsonl"));
        let out = Command::new(CQLAB)
            .env("CQLAB_FIRMWARE_DIR", firmware)
            .args(CAMPAIGN)
            .args(["--shard", &format!("{i}/2"), "--jsonl", jsonl.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.code().is_some_and(|c| c != 2), "{}", support::text(&out));
    };
    shard(0, &firmware_dir());
    // The same firmware but for one worker ELF, one byte longer.
    let other = temp("other-firmware");
    let copied = Command::new("cp").arg("-r").arg(firmware_dir()).arg(&other).status().unwrap();
    assert!(copied.success());
    let mut worker = std::fs::read(other.join("wormhole/worker")).unwrap();
    worker.push(0);
    std::fs::write(other.join("wormhole/worker"), worker).unwrap();
    shard(1, &other);
    let (code, _, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("firmware (a digest of its ELFs)") && err.contains("records of two campaigns mixed?"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&other);
    // Another cqlab build (its records as that build would write them).
    std::fs::remove_file(dir.join("shard-1.jsonl")).unwrap();
    shard(1, &firmware_dir());
    let text = std::fs::read_to_string(dir.join("shard-1.jsonl")).unwrap();
    std::fs::write(dir.join("shard-1.jsonl"), text.replace(r#""cqlab":""#, r#""cqlab":"0.0.0 "#)).unwrap();
    let (code, _, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has cqlab build 0.0.0 "), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    // stress restart's own options: another --seed is another campaign.
    let dir = temp("other-stress");
    std::fs::create_dir_all(&dir).unwrap();
    for (file, seed) in [("a.jsonl", "3"), ("b.jsonl", "4")] {
        let jsonl = dir.join(file);
        let (code, out, err) = cqlab(&[
            "stress",
            "restart",
            "--runs",
            "2",
            "--seed",
            seed,
            "--timeout",
            "30",
            "--workload",
            "random",
            "--iterations",
            "1",
            "--shard",
            &format!("{}/2", u32::from(file == "b.jsonl")),
            "--jsonl",
            jsonl.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let (code, _, err) = cqlab(&["campaign", "merge", dir.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has --seed 4") && err.contains("had 3"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs array task `task` of the script in `dir` as Slurm would start it.
fn task(dir: &Path, task: u32, count: u32) -> (i32, String) {
    let out = Command::new("bash")
        .arg(dir.join("campaign.sbatch"))
        .env("SLURM_ARRAY_TASK_ID", task.to_string())
        .env("SLURM_ARRAY_TASK_COUNT", count.to_string())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), support::text(&out))
}

/// helper-80: an array task took the campaign's exit 1 as a finished
/// shard, though 1 is also an I/O error (`--jsonl` on a full disk) or a
/// device it could not have. A task succeeds when its shard's file holds a
/// record of every run of the shard, whatever the runs' failures.
#[test]
fn an_array_task_fails_unless_its_shard_has_every_record() {
    let dir = temp("task");
    let (code, out, err) = cqlab(
        &[&["campaign", "sbatch", "--shards", "4", "--dir", dir.to_str().unwrap(), "--"][..], &CAMPAIGN].concat(),
    );
    assert_eq!(code, 0, "{out}{err}");
    // Task 1 owns seeds 2 and 6, which fail (exit 4): data, a finished task.
    let (code, text) = task(&dir, 1, 4);
    assert_eq!(code, 0, "{text}");
    assert_eq!(std::fs::read_to_string(dir.join("shard-1.jsonl")).unwrap().lines().count(), 2);
    // Task 2's records go to a full disk: the campaign exits 1, the task fails.
    std::os::unix::fs::symlink("/dev/full", dir.join("shard-2.jsonl")).unwrap();
    let (code, text) = task(&dir, 2, 4);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("No space left on device") && text.contains("its records are incomplete"), "{text}");
    // Task 3's file lost a record (cut by hand): run again, it resumes.
    let (code, text) = task(&dir, 3, 4);
    assert_eq!(code, 0, "{text}");
    let whole = std::fs::read_to_string(dir.join("shard-3.jsonl")).unwrap();
    std::fs::write(dir.join("shard-3.jsonl"), format!("{}\n", whole.lines().next().unwrap())).unwrap();
    let shard3 = dir.join("shard-3.jsonl");
    let (code, _, _) = cqlab(&["campaign", "merge", "--check", "--shard", "3/4", shard3.to_str().unwrap()]);
    assert_eq!(code, 6);
    let (code, text) = task(&dir, 3, 4);
    assert_eq!(code, 0, "{text}");
    let again = std::fs::read_to_string(&shard3).unwrap();
    assert_eq!((again.lines().count(), again.lines().next()), (2, whole.lines().next()), "{again}");
    // A second campaign into the same directory, while the first's tasks
    // may pend, is refused (helper-80: only *.jsonl was looked for).
    let fresh = temp("task-again");
    let sbatch = |dir: &Path| {
        cqlab(&[&["campaign", "sbatch", "--shards", "2", "--dir", dir.to_str().unwrap(), "--"][..], &CAMPAIGN].concat())
    };
    assert_eq!(sbatch(&fresh).0, 0);
    let (code, _, err) = sbatch(&fresh);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("already holds another campaign's script"), "{err}");
    let _ = std::fs::remove_dir_all(&fresh);
    // More shards than runs: a task with no run would fail its check.
    let (code, _, err) = cqlab(
        &[&["campaign", "sbatch", "--shards", "9", "--dir", temp("task9").to_str().unwrap(), "--"][..], &CAMPAIGN]
            .concat(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--shards 9 for a campaign of 8 runs"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_batch_system_index_selects_the_shard() {
    let out = Command::new(CQLAB)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .env("SLURM_ARRAY_TASK_ID", "1")
        .env("SLURM_ARRAY_TASK_COUNT", "4")
        .args(CAMPAIGN)
        .arg("--json")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["shard"], "1/4");
    assert_eq!(v["runs"], 2, "seeds 2 and 6 of 1..=8");
}

/// The cluster script with the test's own state directory and ports.
fn slurm(script: &Path, state: &Path) -> Command {
    let mut c = Command::new(script);
    c.env("CQLAB_SLURM_DIR", state).env("CQLAB_SLURM_CTLD_PORT", "16827").env("CQLAB_SLURM_SLURMD_PORT", "16828");
    c
}

/// Stops the test's cluster when the test ends, pass or fail.
struct Cluster {
    script: PathBuf,
    state: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = slurm(&self.script, &self.state).arg("stop").status();
    }
}

#[test]
fn a_four_shard_slurm_array_job_merges_into_the_unsharded_report() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../slurm/single-node.sh");
    let state = std::env::temp_dir().join("cqlab-slurm-test");
    let started = slurm(&script, &state).arg("start").output().unwrap();
    let why = String::from_utf8_lossy(&started.stderr);
    if started.status.code() == Some(3) {
        eprintln!("NOTICE: Slurm campaign test skipped: {}", why.trim());
        eprintln!("NOTICE: run it as root where apt-get can install slurm-wlm and munge (README, Campaigns)");
        return;
    }
    assert!(started.status.success(), "starting the cluster: {why}");
    let _cluster = Cluster { script, state: state.clone() };
    let dir = temp("slurm");
    let conf = state.join("slurm.conf");
    let out = Command::new(CQLAB)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .env("SLURM_CONF", &conf)
        .env("PATH", format!("{}:/usr/sbin:/sbin", std::env::var("PATH").unwrap_or_default()))
        .args(["campaign", "sbatch", "--shards", "4", "--time", "5:00", "--submit", "--wait", "--dir"])
        .arg(&dir)
        .arg("--")
        .args(CAMPAIGN)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // The job id and its logs at once, progress while it runs, and the
    // merge line (helper-80: `--wait` was silent until the job ended).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("submitted job") && text.contains(": 4 array tasks, logs "), "{text}");
    assert!(text.contains("merge with: cqlab campaign merge"), "{text}");
    assert!(err.contains("COMPLETED"), "{err}");
    for i in 0..4 {
        assert!(dir.join(format!("shard-{i}.jsonl")).exists(), "shard {i} wrote no records: {text}");
    }
    assert_eq!(deterministic(&merged(&dir)), deterministic(&unsharded()));
    let _ = std::fs::remove_dir_all(&dir);
}
