//! `cqlab race`: failure rates over seeds, configuration errors refused up
//! front, signatures, parallel jobs, dumps, and replay commands that replay.

mod support;

use support::{cqlab, exit_of_report, EXIT_DEVICE_ERROR, EXIT_HANG, EXIT_MISMATCH};

fn race(args: &[&str]) -> (i32, serde_json::Value) {
    support::cqlab_json(&[&["race"], args].concat())
}

#[test]
fn the_normal_firmware_survives_every_amplifier() {
    let (code, v) = race(&[
        "--seeds",
        "3",
        "--iterations",
        "4",
        "--jitter",
        "800",
        "--delay",
        "5000",
        "--ring-pages",
        "4",
        "--faults",
        "strong",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["failure_rate"], 0.0);
    assert_eq!(v["faults"], serde_json::json!(["strong"]), "the report says which faults it ran under: {v}");
}

#[test]
fn a_known_bug_fails_and_its_replay_command_reproduces_it() {
    let (code, v) = race(&["--variant", "event-zero-signalled", "--seeds", "2", "--iterations", "2"]);
    assert_eq!(code, EXIT_MISMATCH, "the marker read back differs: {v}");
    assert_eq!(v["signatures"][0]["class"], "mismatch", "{v}");
    assert_eq!(v["failures"], 2);
    let sig = &v["signatures"][0];
    let replay = sig["replay"].as_str().unwrap();
    assert!(replay.starts_with("cqlab race --workload two-queue --firmware event-zero-signalled"), "{replay}");
    assert!(replay.contains("--timeout-cycles 5000000"), "the replay line carries every option: {replay}");
    let words: Vec<&str> = replay.split_whitespace().skip(2).collect();
    let (code, again) = race(&words);
    assert_eq!(code, EXIT_MISMATCH);
    assert_eq!(again["signatures"][0]["signature"], sig["signature"], "the replay fails the same way");
    assert_eq!(again["signatures"][0]["error"], sig["error"]);
}

/// Issue 14: configuration errors are usage errors (exit 2) before any seed
/// runs, never "N of N seeds failed"; nothing panics.
#[test]
fn configuration_errors_are_usage_errors_not_seed_failures() {
    for bad in [
        &["--seed-base", "18446744073709551615", "--seeds", "2"][..],
        &["--bytes", "0"],
        &["--bytes", "4294967295"],
        &["--ring-pages", "0"],
        &["--issue-size", "1"],
        &["--variant", "bogus"],
        &["--timeout-cycles", "0"],
        &["--timeout-cycles", "1"],
        &["--timeout-cycles", "1000"],
        &["--jitter", "18446744073709551615"],
        &["--core-stall", "NaN"],
        &["--faults", "stall=7"],
        &["--jobs", "0"],
    ] {
        let out = cqlab(&[&["race", "--seeds", "1"][..], bad].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        let refused = ["usage:", "invalid value", "cannot be used multiple times"];
        assert!(refused.iter().any(|r| stderr.contains(r)), "{bad:?}: {stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("failed"), "{bad:?} ran seeds");
    }
}

/// Issue 14: the last seed may be the largest (no wrap), and a run counts
/// only seeds that ran. The largest is 2^53 - 1, which a JSON reader's
/// double keeps (`cli::MAX_SEED`).
#[test]
fn the_largest_seed_runs_and_counts() {
    let (code, v) = race(&["--seed-base", "9007199254740991", "--seeds", "1", "--iterations", "1"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["runs"], 1);
}

/// Issue 14: a slow producer (a DELAY longer than the no-progress limit) is
/// not a hang: the limit grows by the delay.
#[test]
fn a_slow_producer_is_not_a_race_failure() {
    let (code, v) = race(&["--seeds", "1", "--iterations", "1", "--delay", "10000000"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn random_workload_passes_on_the_normal_firmware_and_finds_each_known_bug() {
    let (code, v) = race(&["--workload", "random", "--seeds", "6", "--faults", "strong"]);
    assert_eq!(code, 0, "{v}");
    // Each variant is known to fail within the first twelve seeds
    // (measured; the README lists rates over 50 seeds).
    for variant in [
        "stall-release-early",
        "release-before-ack",
        "early-fetch-release",
        "completion-no-toggle",
        "event-zero-signalled",
    ] {
        let (code, v) = race(&["--workload", "random", "--firmware", variant, "--seeds", "12", "--until-first"]);
        assert!(code != 0 && code == exit_of_report(&v), "{variant}: exit {code}: {v}");
        assert!(v["runs_to_first_failure"].as_u64().unwrap() <= 12, "{variant}: {v}");
    }
}

/// Variant 6 shows when a relayed page's NOC writes are still leaving as
/// the next page is read into the same scratch: the write back-pressure the
/// workload draws per seed holds them back (without it, 3 of 100 seeds
/// failed, each with 32 KiB pages on large queues).
#[test]
fn random_workload_finds_relay_scratch_reuse_without_options() {
    let (code, v) =
        race(&["--workload", "random", "--firmware", "relay-reuse-before-sent", "--seeds", "16", "--until-first"]);
    assert_eq!(code, EXIT_MISMATCH, "{v}");
    assert!(v["runs_to_first_failure"].as_u64().unwrap() <= 16, "{v}");
    assert!(v.to_string().contains("read-back differs"), "{v}");
}

/// Program streams (uploads, args, traces, read-backs and cross-queue
/// events on both queues) under every amplifier pass on the normal
/// firmware, and find a planted bug on their own; the replay line of its
/// signature reproduces it.
#[test]
fn the_programs_workload_passes_the_normal_firmware_and_finds_a_planted_bug() {
    let (code, v) = race(&["--workload", "programs", "--seeds", "4", "--iterations", "4", "--faults", "strong"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["workload"], "programs", "{v}");
    let (code, v) =
        race(&["--workload", "programs", "--firmware", "completion-no-toggle", "--seeds", "8", "--until-first"]);
    assert_eq!(code, EXIT_DEVICE_ERROR, "a corrupt completion record is a device error: {v}");
    let sig = &v["signatures"][0];
    assert!(sig["signature"].as_str().unwrap().starts_with("corrupt-completion"), "{v}");
    let replay = sig["replay"].as_str().unwrap();
    assert!(replay.starts_with("cqlab race --workload programs --firmware completion-no-toggle"), "{replay}");
    let words: Vec<&str> = replay.split_whitespace().skip(2).collect();
    let (code, again) = race(&words);
    assert_eq!(code, EXIT_DEVICE_ERROR);
    assert_eq!(again["signatures"][0]["signature"], sig["signature"], "the replay fails the same way");
}

/// `race --workload programs` over seeds 1 and 2 with `--OPTION VALUE`:
/// each seed's device cycles, after checking the report says VALUE.
fn model_cycles(option: &str, value: &str) -> Vec<u64> {
    let jsonl = std::env::temp_dir().join(format!("cqlab-race-{option}-{value}-{}.jsonl", std::process::id()));
    let path = jsonl.to_str().unwrap();
    let flag = format!("--{option}");
    let args = ["--workload", "programs", "--seeds", "2", "--iterations", "2", &flag, value, "--jsonl", path];
    let (code, v) = race(&args);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v[option.replace('-', "_")], value == "true", "the report says which model it raced: {v}");
    let records = std::fs::read_to_string(&jsonl).unwrap();
    std::fs::remove_file(&jsonl).unwrap();
    let cycles: Vec<u64> = records
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["device_cycles"].as_u64().unwrap())
        .collect();
    assert_eq!(cycles.len(), 2, "{records}");
    cycles
}

/// A known bug (`relay-reuse-before-sent` on `random`) is found with
/// `--OPTION VALUE`, its replay line says `--OPTION VALUE`, and the line
/// fails the same way.
fn known_bug_replays_with(option: &str, value: &str) {
    let flag = format!("--{option}");
    let args = [
        "--workload",
        "random",
        "--firmware",
        "relay-reuse-before-sent",
        "--seeds",
        "16",
        "--until-first",
        &flag,
        value,
    ];
    let (code, v) = race(&args);
    assert_eq!(code, EXIT_MISMATCH, "{v}");
    let sig = &v["signatures"][0];
    let replay = sig["replay"].as_str().unwrap();
    assert!(replay.contains(&format!("{flag} {value}")), "{replay}");
    let words: Vec<&str> = replay.split_whitespace().skip(2).collect();
    let (code, again) = race(&words);
    assert_eq!(code, EXIT_MISMATCH, "{again}");
    assert_eq!(again["signatures"][0]["signature"], sig["signature"], "the replay fails the same way");
}

/// `--OPTION BEFORE` races the model before `--OPTION`'s default changed:
/// seeds take other device cycles on it (`every` seed, or at least one),
/// the report says which model ran, and a failure's replay line names it,
/// so the line replays the failure whatever the default is.
fn races_the_model_before(option: &str, default: &str, before: &str, every: bool) {
    let (now, then) = (model_cycles(option, default), model_cycles(option, before));
    let differ: Vec<bool> = now.iter().zip(&then).map(|(a, b)| a != b).collect();
    let moved = if every { differ.iter().all(|&d| d) } else { differ.iter().any(|&d| d) };
    assert!(moved, "--{option} {before} runs another timing: {now:?} {then:?}");
    known_bug_replays_with(option, before);
}

/// Wormhole has no L0 data caches, so `--l0-cache` changes nothing there:
/// the report's `l0_cache` and the replay lines say what ran (`false`),
/// `l0_cache_requested` what was asked, and either replays the same
/// failure (the report said false while the replay lines said
/// `--l0-cache true`). On Blackhole both say what was asked.
#[test]
fn l0_cache_is_reported_and_replayed_as_it_ran_on_each_chip() {
    let bug = ["--workload", "random", "--firmware", "relay-reuse-before-sent", "--seeds", "16", "--until-first"];
    let mut first = None;
    for asked in ["true", "false"] {
        let (code, v) = race(&[&bug[..], &support::SMALL_WORMHOLE, &["--l0-cache", asked]].concat());
        assert_eq!(code, EXIT_MISMATCH, "{v}");
        assert_eq!((v["l0_cache"].as_bool(), v["l0_cache_requested"].as_bool()), (Some(false), Some(asked == "true")));
        let sig = &v["signatures"][0];
        let replay = sig["replay"].as_str().unwrap();
        assert!(replay.contains("--l0-cache false") && !replay.contains("--l0-cache true"), "{replay}");
        // Both values run the same seeds the same way.
        let found = (sig["first_seed"].clone(), sig["signature"].clone(), v["runs"].clone());
        assert_eq!(first.get_or_insert_with(|| found.clone()), &found, "--l0-cache {asked}: {v}");
        let words: Vec<&str> = replay.split_whitespace().skip(2).collect();
        let (code, again) = race(&words);
        assert_eq!(code, EXIT_MISMATCH, "{again}");
        assert_eq!(again["signatures"][0]["signature"], sig["signature"], "the replay fails the same way");
        assert_eq!(again["l0_cache"], false, "{again}");
    }
    let (code, v) = race(&[&bug[..], &support::SMALL_BLACKHOLE, &["--l0-cache", "true"]].concat());
    assert_eq!(code, EXIT_MISMATCH, "{v}");
    assert_eq!((v["l0_cache"].as_bool(), v["l0_cache_requested"].as_bool()), (Some(true), Some(true)));
    assert!(v["signatures"][0]["replay"].as_str().unwrap().contains("--l0-cache true"), "{v}");
}

/// `--faults strong` costs many times the host time per seed: a user is
/// told up front, once (not by each `--jobs` process), on stderr; `--json`
/// output is the report alone, and a race without it says nothing.
#[test]
fn strong_faults_say_up_front_that_seeds_take_longer() {
    let note = "note: --faults strong takes about";
    let run = |extra: &[&str]| {
        let args = [&["race", "--seeds", "2", "--iterations", "2"][..], &support::SMALL_WORMHOLE, extra].concat();
        let out = cqlab(&args);
        assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (_, err) = run(&["--faults", "strong"]);
    assert_eq!(err.matches(note).count(), 1, "{err}");
    assert!(err.starts_with(note), "before the first seed: {err}");
    let (_, err) = run(&["--faults", "lazy-drain=20,strong", "--jobs", "2"]);
    assert_eq!(err.matches(note).count(), 1, "{err}");
    let (out, err) = run(&["--faults", "strong", "--json"]);
    assert!(!err.contains(note), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("stdout is the JSON report alone");
    assert_eq!(v["faults"], serde_json::json!(["strong"]), "{v}");
    let (_, err) = run(&["--faults", "stall=0.01:2000"]);
    assert!(!err.contains(note), "{err}");
}

/// `--blocking-loads`: the model before loads in flight became the default
/// (2026-11-30); every seed's timing moves.
#[test]
fn blocking_loads_race_the_model_before_and_replay_with_it() {
    races_the_model_before("blocking-loads", "false", "true", true);
}

/// `--link-contention false`: the model before link contention between
/// routers became the default (2026-11-30); the links' queues move at
/// least one seed's timing.
#[test]
fn no_link_contention_races_the_model_before_and_replays_with_it() {
    races_the_model_before("link-contention", "true", "false", false);
}

/// `--icache`: instruction caches, an option (their miss cost is
/// unpublished). Every seed's timing moves, the report says so, and a
/// known bug found with them replays with them.
#[test]
fn icache_races_another_timing_and_replays_with_it() {
    let (without, with) = (model_cycles("icache", "false"), model_cycles("icache", "true"));
    assert!(without.iter().zip(&with).all(|(a, b)| a != b), "{without:?} {with:?}");
    known_bug_replays_with("icache", "true");
}

/// `--exact-time` races the exact-time model: the same seeds run other
/// schedules (hand-offs no longer wait for a slice's end), a known bug is
/// found there too and its replay line carries the setting and reproduces
/// it; what acts per slice is refused with it.
#[test]
fn exact_time_races_other_schedules_finds_a_known_bug_and_replays_it() {
    let (sliced, exact) = (model_cycles("exact-time", "false"), model_cycles("exact-time", "true"));
    assert!(sliced.iter().zip(&exact).all(|(s, e)| s != e), "each seed runs another schedule: {sliced:?} {exact:?}");
    known_bug_replays_with("exact-time", "true");
    for per_slice in [&["--faults", "strong"][..], &["--core-stall", "0.001"], &["--faults", "quantum-jitter=8"]] {
        let out = cqlab(&[&["race", "--seeds", "1", "--exact-time"][..], per_slice].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{per_slice:?}: {stderr}");
        assert!(stderr.contains("--exact-time with"), "{per_slice:?}: {stderr}");
    }
}

#[test]
fn parallel_jobs_give_the_report_of_one_process_and_records_replay() {
    let dir = std::env::temp_dir().join(format!("cqlab-race-jobs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let jsonl = dir.join("one.jsonl");
    let common = ["--workload", "random", "--firmware", "release-before-ack", "--seeds", "8", "--iterations", "4"];
    let (c1, one) =
        race(&[&common[..], &["--jsonl", jsonl.to_str().unwrap(), "--dump-dir", dir.to_str().unwrap()]].concat());
    let (c2, two) = race(&[&common[..], &["--jobs", "2"]].concat());
    assert_eq!(c1, c2);
    for key in ["runs", "failures", "signatures", "runs_to_first_failure", "first_failing_seed", "failure_rate_95"] {
        assert_eq!(one[key], two[key], "{key}");
    }
    let lines = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(lines.lines().count(), 8);
    let seed = one["first_failing_seed"].as_u64().expect("the variant fails within 8 seeds");
    for ext in ["txt", "json", "trace.json"] {
        let f = dir.join(format!("seed-{seed}.{ext}"));
        assert!(f.metadata().is_ok_and(|m| m.len() > 0), "{} missing", f.display());
    }
    // The dump's JSON names each core `{"x": .., "y": ..}` (it was the
    // string "(18,18)").
    let dump: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("seed-{seed}.json"))).unwrap())
            .expect("seed-N.json is JSON");
    let cores = dump["dump"]["cores"].as_array().unwrap_or_else(|| panic!("seed {seed}: {dump}"));
    assert!(!cores.is_empty(), "seed {seed}: {dump}");
    for c in cores {
        let xy = c["core"].as_object().is_some_and(|o| o.len() == 2 && o["x"].is_u64() && o["y"].is_u64());
        assert!(xy, "seed {seed}: {c}");
    }
    // Every failing seed's text holds its hang dump, a device error's too
    // (it held the error's one line).
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "txt") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains("hang dump at device cycle") && text.contains("wait-for chain"), "{text}");
        }
    }
    // The failing record replays to the same signature and device cycle, twice;
    // so does a passing one.
    let failing = lines.lines().find(|l| l.contains(&format!("\"seed\":{seed},"))).unwrap();
    let passing = lines.lines().find(|l| l.contains("\"ok\":true"));
    for record in [Some(failing), Some(failing), passing].into_iter().flatten() {
        let out = cqlab(&["replay", record, "--out", dir.join("replay").to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("identical"), "{text}");
    }
    // A record whose class was edited does not replay as identical (the
    // class is the exit code a gate reads).
    let class = |r: &str| serde_json::from_str::<serde_json::Value>(r).unwrap()["failure"]["class"].clone();
    let (was, now) = (class(failing), if class(failing) == "hang" { "mismatch" } else { "hang" });
    let edited = failing.replace(&format!("\"class\":{was}"), &format!("\"class\":\"{now}\""));
    assert_ne!(edited, failing, "the record names its class");
    let out = cqlab(&["replay", &edited, "--out", dir.join("replay").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("recorded: class"), "the verdict says why");
    // A record from before classes (none named) still replays by its kind
    // and signature.
    let old = failing.replace(&format!("\"class\":{was},"), "");
    assert_ne!(old, failing);
    let out = cqlab(&["replay", &old, "--out", dir.join("replay").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let _ = std::fs::remove_dir_all(&dir);
}

/// An explicit `--host-jitter 0` reaches `--jobs` children and replay
/// lines: without it each seed would draw its own jitter there (0 or 2000),
/// and seeds that fail at 0 would pass in a child or a replay.
#[test]
fn an_explicit_host_jitter_of_0_holds_in_jobs_and_replay_lines() {
    let common = ["--variant", "event-zero-signalled", "--seeds", "6", "--iterations", "2", "--host-jitter", "0"];
    let (c1, one) = race(&common);
    let (c2, two) = race(&[&common[..], &["--jobs", "2"]].concat());
    assert_eq!((c1, one["failures"].as_u64()), (c2, two["failures"].as_u64()), "{one}\n{two}");
    assert_eq!(one["signatures"], two["signatures"]);
    let replay = one["signatures"][0]["replay"].as_str().expect("the variant fails at host jitter 0");
    assert!(replay.contains("--host-jitter 0"), "{replay}");
}

/// A bug that only seeds without host jitter show (early-fetch-release
/// here, shaped as the field walkthrough ran it) fails exactly those seeds
/// under race's default draw: each seed's progress line names its host
/// jitter, and the report, text and JSON, counts the failures per draw, as
/// `campaign merge` does from the records (helper-72: "3 of 6 failed" hid
/// that no seed with host jitter did). The text header names the
/// two-queue knobs, as the replay line does.
#[test]
fn failures_are_counted_per_host_jitter_draw() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("race.jsonl");
    let shape = ["--copies", "10", "--depth", "8", "--issue-size", "8192"];
    let common = [&["--firmware", "early-fetch-release", "--iterations", "30", "--seeds", "6"][..], &shape].concat();
    let (code, v) = race(&[&common[..], &["--jsonl", jsonl.to_str().unwrap()]].concat());
    assert_eq!(code, EXIT_DEVICE_ERROR, "{v}");
    let split = serde_json::json!({"with": {"failures": 0, "runs": 3}, "without": {"failures": 3, "runs": 3}});
    assert_eq!(v["failures_by_host_jitter"], split, "seeds 1-3 draw no host jitter, 4-6 draw 2000: {v}");
    let (_, merged) = support::cqlab_json(&["campaign", "merge", jsonl.to_str().unwrap()]);
    assert_eq!(merged["failures_by_host_jitter"], split, "{merged}");

    let o = cqlab(&[&["race"][..], &common].concat());
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("\nby host jitter: 0 of 3 runs with host jitter failed, 3 of 3 without\n"), "{stdout}");
    assert!(
        stderr.contains("[1/6] seed 1 (host jitter 0): FAIL")
            && stderr.contains("[4/6] seed 4 (host jitter 2000): pass")
    );
    let header = stdout.lines().next().unwrap();
    let knobs =
        "copies 10, depth 8, buffers 1, issue size 8192, trace kernels 1, bytes 4096, page size 1024, ring pages 64";
    assert!(header.contains(knobs), "{header}");

    // Given on the command line, one host jitter for every seed: no split.
    let (_, one) = race(&[&common[..], &["--host-jitter", "2000"]].concat());
    assert_eq!((one["failures"].as_u64(), one.get("failures_by_host_jitter")), (Some(0), None), "{one}");
}

/// Two-queue seeds that nothing varies (no host jitter, no amplifier)
/// draw slice jitter, or NOC jitter under exact time, so they are not one
/// run counted many times (every such seed ran the same schedule), and each
/// record's line replays it.
#[test]
fn two_queue_seeds_with_nothing_to_vary_are_not_one_schedule() {
    let dir = std::env::temp_dir().join(format!("cqlab-race-vary-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (model, drawn) in [(&[][..], "quantum-jitter=64"), (&["--exact-time"][..], "--jitter 200")] {
        let jsonl = dir.join(format!("{}.jsonl", model.len()));
        let common = ["--seeds", "6", "--iterations", "3", "--host-jitter", "0", "--jsonl", jsonl.to_str().unwrap()];
        let (code, v) = race(&[&common[..], model].concat());
        assert_eq!(code, 0, "{v}");
        let records: Vec<serde_json::Value> =
            std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let cycles: std::collections::BTreeSet<u64> =
            records.iter().map(|r| r["device_cycles"].as_u64().unwrap()).collect();
        // (Before, one: every such seed ran the same schedule.)
        assert!(cycles.len() >= 3, "{model:?}: 6 seeds, {} schedules: {cycles:?}", cycles.len());
        let argv: Vec<String> =
            records[2]["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
        assert!(argv.join(" ").contains(drawn), "{model:?}: {argv:?}");
        let replayed = dir.join(format!("{}-replay.jsonl", model.len()));
        let o = support::cqlab(
            &[&argv.iter().map(String::as_str).collect::<Vec<_>>()[..], &["--jsonl", replayed.to_str().unwrap()]]
                .concat(),
        );
        assert!(o.status.success(), "{}", support::text(&o));
        let r: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&replayed).unwrap().trim()).unwrap();
        assert_eq!(r["device_cycles"], records[2]["device_cycles"], "{model:?}: the line replays its seed");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reference 000's amplifiers on the two-queue workload: copies over
/// several buffers, enqueued several deep before their read-backs are
/// awaited, and a larger CQ0 trace. The normal firmware passes every
/// check; a known bug is still found and its line replays with them.
#[test]
fn two_queue_buffers_depth_and_trace_kernels_shape_the_race() {
    let knobs = ["--copies", "6", "--depth", "3", "--buffers", "2", "--trace-kernels", "4"];
    let (code, v) = race(&[&["--seeds", "3", "--iterations", "3"][..], &knobs].concat());
    assert_eq!((code, v["failures"].as_u64()), (0, Some(0)), "{v}");
    // The JSON has the text header's values (helper-31: half were text only).
    let header = serde_json::json!({"firmware": "normal", "seed_base": 1, "seeds": 3, "until_first": false,
        "jitter": 0, "delay": 0, "pct_depth": 0, "host_jitter": 2000, "host_jitter_seeds": "half", "host_pct": 0,
        "faults": []});
    for (key, want) in header.as_object().unwrap() {
        assert_eq!(&v[key], want, "{key}: {v}");
    }
    let bug = ["--variant", "release-before-ack", "--ring-pages", "4", "--bytes", "32768", "--seeds", "1"];
    let (code, v) = race(&[&bug[..], &knobs].concat());
    assert_ne!(code, 0, "{v}");
    let replay = v["signatures"][0]["replay"].as_str().unwrap();
    for k in ["--depth 3", "--buffers 2", "--trace-kernels 4"] {
        assert!(replay.contains(k), "{k}: {replay}");
    }
    // The report names the chip the seeds ran on (it did not) and the knobs.
    assert_eq!((v["chip"].as_str(), v["harvesting"].as_str()), (Some("wormhole-n150"), Some("rows=8")), "{v}");
    assert_eq!((v["two_queue"]["depth"].as_u64(), v["two_queue"]["buffers"].as_u64()), (Some(3), Some(2)), "{v}");
    // Only two-queue reads them.
    let o = support::cqlab(&["race", "--workload", "random", "--depth", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", support::text(&o));
}

/// `--until-first` with jobs stops where one process stops: at the lowest
/// failing seed, with every seed before it run. Here the first seed passes
/// slower than the second fails, so a report of the first failure to
/// finish would count one run, not two.
#[test]
fn until_first_with_jobs_stops_at_the_lowest_failing_seed() {
    let dir = std::env::temp_dir().join(format!("cqlab-race-until-first-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let common = ["--workload", "random", "--firmware", "release-before-ack", "--seeds", "8", "--until-first"];
    let mut seeds_run = Vec::new();
    let mut reports = Vec::new();
    for jobs in ["1", "2"] {
        let jsonl = dir.join(format!("jobs-{jobs}.jsonl"));
        let (code, v) = race(&[&common[..], &["--jobs", jobs, "--jsonl", jsonl.to_str().unwrap()]].concat());
        assert_eq!(code, exit_of_report(&v), "{v}");
        let lines = std::fs::read_to_string(&jsonl).unwrap();
        let seeds: Vec<u64> = lines
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["seed"].as_u64().unwrap())
            .collect();
        seeds_run.push(seeds);
        reports.push(v);
    }
    assert_eq!(reports[0]["runs_to_first_failure"], 2, "seed 1 passes, seed 2 fails: {}", reports[0]);
    for key in ["runs", "failures", "runs_to_first_failure", "first_failing_seed", "signatures"] {
        assert_eq!(reports[0][key], reports[1][key], "{key}");
    }
    assert_eq!(seeds_run[0], seeds_run[1], "the records, in seed order");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's options find each known-bug variant with the two-queue
/// workload on its first seeds, and each failing record replays to the same
/// signature and device cycle twice.
#[test]
fn each_known_bug_is_found_with_the_readme_options_and_replays() {
    let dir = std::env::temp_dir().join(format!("cqlab-race-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (variant, options) in [
        ("event-zero-signalled", &[][..]),
        ("stall-release-early", &[]),
        ("completion-no-toggle", &["--completion-size", "8192"]),
        ("release-before-ack", &["--ring-pages", "4", "--bytes", "32768"]),
        ("early-fetch-release", &["--issue-size", "2048", "--pcie-read-latency", "4000"]),
    ] {
        let jsonl = dir.join(format!("{variant}.jsonl"));
        let args = [
            &["--firmware", variant, "--seeds", "3", "--until-first", "--jsonl", jsonl.to_str().unwrap()][..],
            options,
        ]
        .concat();
        let (code, v) = race(&args);
        assert!(code != 0 && code == exit_of_report(&v), "{variant}: exit {code}: {v}");
        let record = std::fs::read_to_string(&jsonl).unwrap();
        let failing = record.lines().find(|l| l.contains("\"ok\":false")).unwrap();
        for _ in 0..2 {
            let out = cqlab(&["replay", failing, "--out", dir.join("replay").to_str().unwrap()]);
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(0), "{variant}: {text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A corrupted launch can leave a kernel spinning on garbage args: a race
/// seed must fail within its timeout then, not wait out the driver's
/// default kernel limit (10^11 cycles: minutes of host time). Seed 52 of
/// `release-before-ack` on the programs workload (Wormhole n150) ends so
/// today (52 since a read of host memory passes the writes still queued in
/// its NIU; 9 since the firmware images carry their id after a jump at their
/// entry; 43 since link contention became the default; 9 since the
/// workload draws write back-pressure of up to 10,000 cycles; 17 since the dispatcher's packed writes keep the command buffer's
/// registers, 11 on ABI 5 before that, 3 since a range's args went
/// in one write, 9 before that, 3 before a DRAM tile's two GDDR6 channels
/// streamed apart, 6 before the host's accesses became scheduling points); if the
/// streams or the firmware's timing change, pick another seed whose
/// signature is a kernel timeout (`--jsonl` shows each seed's).
#[test]
fn a_kernel_spinning_on_corrupted_args_fails_its_seed_within_the_timeout() {
    let (code, v) =
        race(&["--workload", "programs", "--firmware", "release-before-ack", "--seed-base", "52", "--seeds", "1"]);
    assert_eq!(code, EXIT_HANG, "a kernel timeout is a hang: {v}");
    let error = v["signatures"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("(kernel timeout 5000000 cycles;"), "{v}");
}

/// Issue 24: a stall probability whose stalls outrun the clock, or take
/// more than nine tenths of it, is refused before the run, with the
/// reason; at the limit the normal firmware passes (helper-66: 0.0249 was
/// taken and every seed timed out, and 0.0225 wedged the device for good:
/// each slice cut short by a host step drew the whole probability).
#[test]
fn a_stall_probability_past_the_limit_is_refused_and_one_at_it_passes() {
    for (p, says) in [("0.1", "can never boot"), ("0.0249", "run under a tenth of the time")] {
        let out = cqlab(&["race", "--seeds", "1", "--core-stall", p]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{p}: {err}");
        assert!(err.contains(says) && err.contains("at most 0.0225"), "{p}: {err}");
    }
    let (code, v) = race(&["--seeds", "2", "--iterations", "2", "--core-stall", "0.0225"]);
    assert_eq!(code, 0, "{v}");
}

/// A read of host memory passes the writes still queued in its NIU by
/// default since 2026-12-01, and the model before is `--reads-pass-unsent
/// false`: seed 8 of `early-fetch-release` on `random` (Wormhole n150)
/// fails only on the model before (its reads of the issue queue waited
/// behind the prefetcher's own queued pointer writes, which widened the
/// bug's window). The fault that asked for the default still runs (older
/// command lines), and asking for both is refused with the reason.
#[test]
fn reads_passing_unsent_writes_are_the_default_and_the_model_before_still_runs() {
    let seed8 = ["--workload", "random", "--firmware", "early-fetch-release", "--seed-base", "8", "--seeds", "1"];
    let (code, v) = race(&seed8);
    assert_eq!((code, &v["reads_pass_unsent"]), (0, &serde_json::json!(true)), "{v}");
    let (code, v) = race(&[&seed8[..], &["--reads-pass-unsent", "false"]].concat());
    assert_ne!(code, 0, "the model before fails this seed: {v}");
    assert_eq!(v["reads_pass_unsent"], false, "{v}");
    let replay = v["signatures"][0]["replay"].as_str().unwrap_or_default();
    assert!(replay.contains("--reads-pass-unsent false"), "the replay line names the model: {replay}");
    let (code, v) = race(&["--seeds", "1", "--iterations", "2", "--faults", "read-passes-unsent"]);
    assert_eq!((code, &v["reads_pass_unsent"]), (0, &serde_json::json!(true)), "{v}");
    let out = cqlab(&["race", "--seeds", "1", "--reads-pass-unsent", "false", "--faults", "read-passes-unsent"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the fault is the model's default since 2026-12-01"), "{err}");
}

/// What a user does with records and replay lines beyond one campaign run
/// (helper-49): a file appended to twice replays a seed; a `--jobs` file
/// replays the report's first failure by default; the printed line of a
/// campaign whose firmware path has a space runs as printed; a record from
/// before the model options existed replays on the model it ran on; and a
/// merge of two campaigns with different seed bases is refused.
#[test]
fn records_and_replay_lines_replay_as_users_keep_them() {
    let dir = support::scratch("race-records");
    let fw = dir.join("my fw");
    std::fs::create_dir_all(&fw).unwrap();
    for elf in ["prefetch", "dispatch"] {
        let variant = support::firmware_dir().join("wormhole/variants/release-before-ack").join(elf);
        std::fs::copy(variant, fw.join(elf)).unwrap();
    }
    let (jsonl, jobs) = (dir.join("twice.jsonl"), dir.join("jobs.jsonl"));
    let shape = ["--workload", "random", "--firmware", fw.to_str().unwrap(), "--iterations", "4"];
    let common = [&shape[..], &["--seeds", "8"]].concat();
    let (_, one) = race(&[&common[..], &["--jsonl", jsonl.to_str().unwrap()]].concat());
    race(&[&common[..], &["--jsonl", jsonl.to_str().unwrap()]].concat());
    let seed = one["first_failing_seed"].as_u64().expect("the variant fails within 8 seeds");
    let out = cqlab(&["replay", jsonl.to_str().unwrap(), "--seed", &seed.to_string(), "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    race(&[&common[..], &["--jsonl", jobs.to_str().unwrap(), "--jobs", "2"]].concat());
    let out = cqlab(&["replay", jobs.to_str().unwrap(), "--out", dir.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("replay of seed {seed}:")),
        "{}",
        support::text(&out)
    );
    // The printed line, through a shell.
    let line = one["signatures"][0]["replay"].as_str().unwrap();
    assert!(line.contains("'"), "the path with a space is quoted: {line}");
    let exe = std::path::Path::new(support::CQLAB);
    let shell_line = line.replacen("cqlab", &exe.display().to_string(), 1) + " --json";
    let out = std::process::Command::new("sh")
        .args(["-c", &shell_line])
        .env("CQLAB_FIRMWARE_DIR", support::firmware_dir())
        .output()
        .unwrap();
    let again: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", support::text(&out)));
    assert_eq!(again["signatures"][0]["signature"], one["signatures"][0]["signature"]);
    // Another seed base is another campaign.
    let other = dir.join("merge");
    std::fs::create_dir_all(&other).unwrap();
    race(&[&shape[..], &["--jsonl", other.join("a.jsonl").to_str().unwrap(), "--seeds", "2"]].concat());
    let b = other.join("b.jsonl");
    race(&[&shape[..], &["--jsonl", b.to_str().unwrap(), "--seeds", "2", "--seed-base", "100"]].concat());
    let out = cqlab(&["campaign", "merge", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("seed base 100"), "{}", support::text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A record written before the model options existed names none of them,
/// and ran on the model before each: replay adds them and says so (it
/// replayed on today's model and read DIFFERS).
#[test]
fn a_record_from_before_the_model_options_replays_on_its_model() {
    let dir = support::scratch("race-old-record");
    std::fs::create_dir_all(&dir).unwrap();
    let jsonl = dir.join("old.jsonl");
    let old_model = ["--reads-pass-unsent", "false", "--blocking-loads", "true", "--link-contention", "false"];
    let args = ["--workload", "random", "--firmware", "early-fetch-release", "--seed-base", "8", "--seeds", "1"];
    let (_, report) = race(&[&args[..], &old_model, &["--jsonl", jsonl.to_str().unwrap()]].concat());
    assert_eq!(report["failures"], 1, "seed 8 fails on the model before: {report}");
    let mut record: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&jsonl).unwrap().trim()).unwrap();
    let argv: Vec<String> = serde_json::from_value(record["argv"].clone()).unwrap();
    let named = ["--reads-pass-unsent", "--blocking-loads", "--link-contention", "--l0-cache"];
    let mut stripped = Vec::new();
    let mut words = argv.iter();
    while let Some(w) = words.next() {
        if named.contains(&w.as_str()) {
            words.next();
        } else {
            stripped.push(w.clone());
        }
    }
    record["argv"] = stripped.into();
    let out = cqlab(&["replay", &record.to_string(), "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("identical"), "{}", support::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--reads-pass-unsent false (the model before 2026-12-01)"), "{err}");
    // One that raced `--faults read-passes-unsent` ran today's rule already:
    // nothing is added that the fault would be refused beside (helper-51).
    let faulted = dir.join("faulted.jsonl");
    let (_, report) =
        race(&[&args[..], &["--faults", "read-passes-unsent", "--jsonl", faulted.to_str().unwrap()]].concat());
    assert!(report["runs"] == 1, "{report}");
    let mut record: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&faulted).unwrap().trim()).unwrap();
    let argv: Vec<String> = serde_json::from_value(record["argv"].clone()).unwrap();
    let at = argv.iter().position(|w| w == "--reads-pass-unsent").unwrap();
    record["argv"] = [&argv[..at], &argv[at + 2..]].concat().into();
    let out = cqlab(&["replay", &record.to_string(), "--out", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("--reads-pass-unsent false"), "{}", support::text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A replay on other firmware than its record's says so: a DIFFERS there
/// is the code's, not the seed's (helper-94: it read DIFFERS with no word
/// why). A record naming other firmware than what replays it, identical
/// all the same, gets the note but keeps its verdict.
#[test]
fn a_replay_on_other_firmware_than_its_record_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("race.jsonl");
    let args = ["--variant", "event-zero-signalled", "--seeds", "1", "--iterations", "2"];
    let (code, v) = race(&[&args[..], &["--jsonl", jsonl.to_str().unwrap()]].concat());
    assert_eq!(code, EXIT_MISMATCH, "{v}");
    let record = std::fs::read_to_string(&jsonl).unwrap();
    let record = record.trim();
    let out_dir = dir.path().join("replay");
    let replay = |firmware: &std::path::Path, record: &str| {
        std::process::Command::new(support::CQLAB)
            .env("CQLAB_FIRMWARE_DIR", firmware)
            .args(["replay", record, "--out", out_dir.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let out = replay(&support::firmware_dir(), record);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("other code"), "{}", support::text(&out));

    // The record says it ran other firmware: noted, still identical.
    let digest = serde_json::from_str::<serde_json::Value>(record).unwrap()["campaign"]["firmware"].clone();
    let digest = digest.as_str().expect("a record names its firmware's digest").to_owned();
    let edited = record.replace(&digest, "0123456789abcdef");
    let out = replay(&support::firmware_dir(), &edited);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("the firmware (its ELFs' digest now {digest}, recorded 0123456789abcdef)")), "{err}");

    // The variant's ELFs replaced by the normal firmware's: it passes, and
    // the verdict says the firmware differs.
    let firmware = dir.path().join("firmware");
    let copy = std::process::Command::new("cp").arg("-r").arg(support::firmware_dir()).arg(&firmware).status();
    assert!(copy.unwrap().success());
    for elf in ["prefetch", "dispatch"] {
        let wormhole = firmware.join("wormhole");
        std::fs::copy(wormhole.join(elf), wormhole.join("variants/event-zero-signalled").join(elf)).unwrap();
    }
    let out = replay(&firmware, record);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", support::text(&out));
    assert!(stdout.contains("DIFFERS (the firmware differs from the record's, which may be why)"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("note: this replay runs other code than the record: the firmware"));
}
