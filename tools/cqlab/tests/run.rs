//! `cqlab run`, `compare` and `trace export / summary` end to end on the
//! embedded simulator (deterministic: fixed seeds, device-cycle figures).

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use support::cqlab;
use tempfile::TempPath;

/// A scratch file ending in `name` (its extension picks formats), removed
/// when the test drops it.
fn tmp(name: &str) -> TempPath {
    tempfile::Builder::new().prefix("cqlab-run-test-").suffix(&format!("-{name}")).tempfile().unwrap().into_temp_path()
}

/// Runs a workload with `--json -` and returns the report.
fn run(workload: &str, extra: &[&str]) -> Value {
    let mut args = vec!["run", workload, "--json", "-", "--seed", "5"];
    args.extend_from_slice(extra);
    let out = cqlab(&args);
    assert!(out.status.success(), "cqlab {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// Small knobs so every workload runs in a second or two in the dev profile.
fn small(workload: &str) -> Vec<&'static str> {
    let mut v = vec!["--cqs", "1,2,4", "--iters", "4", "--warmup", "1"];
    match workload {
        "matmul_peak" => v.extend(["--m", "32", "--n", "32", "--k", "8", "--tile", "4"]),
        "large_gemm" => v.extend(["--m", "16", "--n", "16", "--k", "32", "--tile", "4"]),
        "hetero" => v.extend(["--programs", "4", "--large-cycles", "5000"]),
        "tiny_kernels" => v.extend(["--programs", "4"]),
        "copy_stress" => v.extend(["--bytes", "4096"]),
        _ => {}
    }
    v
}

fn check_point(w: &str, p: &Value, iters: u64) {
    let ctx = format!("{w} cqs {}", p["cqs"]);
    let l = &p["latency_cycles"];
    assert_eq!(l["samples"], iters, "{ctx}: {l}");
    let (p50, p95, p99) = (l["p50"].as_f64().unwrap(), l["p95"].as_f64().unwrap(), l["p99"].as_f64().unwrap());
    assert!(
        l["min"].as_f64().unwrap() <= p50 && p50 <= p95 && p95 <= p99 && p99 <= l["max"].as_f64().unwrap(),
        "{ctx}"
    );
    assert!(p50 > 0.0, "{ctx}");
    // 1 GHz: one cycle is a nanosecond.
    assert!((p["latency_us"]["p50"].as_f64().unwrap() - p50 / 1000.0).abs() < 1e-9, "{ctx}");
    assert!(l["stddev"].as_f64().unwrap() >= 0.0, "{ctx}");
    assert!(p["throughput"]["value"].as_f64().unwrap() > 0.0, "{ctx}");
    assert!(p["throughput"]["unit"].as_str().unwrap().contains('/') || p["throughput"]["unit"] == "TFLOPS", "{ctx}");
    assert!(!p["commands"].as_array().unwrap().is_empty(), "{ctx}: per-command cycles from the rings");
    assert!(p["commands"].as_array().unwrap().iter().all(|c| c["count"].as_u64().unwrap() > 0), "{ctx}");
    assert_eq!(p["occupancy"].as_array().unwrap().len() as u64, p["cqs"].as_u64().unwrap(), "{ctx}");
    assert_eq!(p["trace"]["lost"], 0, "{ctx}");
    assert_eq!(p["trace"]["through_bar"], false, "{ctx}");
    let so = &p["switch_overhead"];
    for k in ["same_cq_samples", "cross_cq_samples"] {
        assert!(so[k].is_u64(), "{ctx}: {k} in {so}");
    }
    // No samples is null ("no samples"), never 0.
    let none = so["same_cq_samples"] == 0 || so["cross_cq_samples"] == 0;
    assert_eq!(so["overhead_cycles"].is_null(), none, "{ctx}: {so}");
}

#[test]
fn every_workload_runs_on_1_2_and_4_queues() {
    for w in ["dispatch_latency", "tiny_kernels", "copy_stress", "hetero", "matmul_peak", "large_gemm"] {
        let r = run(w, &small(w));
        assert_eq!(r["workload"], w);
        let points = r["points"].as_array().unwrap();
        let cqs: Vec<u64> = points.iter().map(|p| p["cqs"].as_u64().unwrap()).collect();
        assert_eq!(cqs, [1, 2, 4], "{w}");
        for p in points {
            check_point(w, p, 4);
        }
        assert_eq!(r["scaling"]["points"].as_array().unwrap().len(), 3, "{w}");
        assert!(r["scaling"].get("stops_scaling_at").is_some(), "{w}");
        // `validated` only where a point checked something; the embedded
        // simulator's seed is the run's.
        let checked = points.iter().any(|p| !p["validation"].is_null());
        assert_eq!((r["validated"].as_bool(), r["device_seed"].as_u64()), (Some(checked), Some(5)), "{w}");
        assert_eq!(checked, !["dispatch_latency", "tiny_kernels", "hetero"].contains(&w), "{w}");
        // The knobs it reads, and no other.
        let knobs: Vec<&str> = r["knobs"].as_object().unwrap().keys().map(String::as_str).collect();
        let reads: &[&str] = match w {
            "dispatch_latency" => &[],
            "tiny_kernels" => &["programs", "tiny_cycles"],
            "copy_stress" => &["buffers", "bytes", "copies", "depth", "tiny_cycles", "trace_kernels"],
            "hetero" => &["burst", "large_cycles", "programs", "tiny_cycles"],
            _ => &["k", "m", "n", "tile"],
        };
        assert_eq!(knobs, reads, "{w}");
        if w.contains("matmul") || w.contains("gemm") {
            for p in points {
                assert_eq!(p["validation"]["mismatches"], 0, "{w}: bit-for-bit");
                assert!(p["validation"]["checked"].as_u64().unwrap() > 0);
                let m = &p["matmul"];
                assert!(m["tflops"].as_f64().unwrap() > 0.0);
                let u = m["utilization"].as_f64().unwrap();
                assert!(u > 0.0 && u <= 1.0, "{w}: utilization {u}");
                // The peak counts the workers with an output tile (small():
                // 8x8 tiles, 4x4 for large_gemm, fewer than the grid's workers).
                let tiles = if w == "matmul_peak" { 64 } else { 16 };
                assert!(m["workers"].as_u64().unwrap() <= tiles, "{w}: {m}");
            }
        }
        if w == "copy_stress" {
            assert_eq!(points[1]["validation"]["mismatches"], 0);
        }
        if w == "hetero" {
            let one = &points[0]["switch_overhead"];
            assert_eq!(one["cross_cq_samples"], 0, "one queue never switches: {one}");
            assert!(one["overhead_cycles"].is_null());
            let four = &points[2]["switch_overhead"];
            assert!(four["cross_cq_samples"].as_u64().unwrap() > 0 && four["same_cq_samples"].as_u64().unwrap() > 0);
            assert!(four["overhead_cycles"].as_f64().unwrap() > 0.0, "hetero --cqs 4: {four}");
        }
    }
}

/// The header and the JSON `description` say whether the matmul was
/// checked: under `--skip-validation` they claimed "validated bit for bit"
/// beside `validated: false`.
#[test]
fn matmul_peak_says_it_was_not_validated_when_validation_is_skipped() {
    for (skip, validated) in [(false, true), (true, false)] {
        let json = tmp("matmul.json");
        let mut args =
            vec!["run", "matmul_peak", "--m", "16", "--n", "16", "--k", "16", "--tile", "16", "--iters", "1"];
        args.extend(["--warmup", "0", "--json", json.to_str().unwrap()]);
        if skip {
            args.push("--skip-validation");
        }
        let out = cqlab(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let header = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_owned();
        let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(r["validated"], validated, "{r}");
        let description = r["description"].as_str().unwrap();
        assert!(header.contains(description), "{header}");
        let claims = ("validated bit for bit", "not validated (--skip-validation)");
        let (says, not) = if validated { claims } else { (claims.1, claims.0) };
        assert!(description.contains(says) && !description.contains(not), "--skip-validation {skip}: {description}");
    }
}

#[test]
fn eight_queues_and_end_sync() {
    // Eight queues need a compute row each: a Blackhole p150a has ten rows
    // (its queues take two of its columns).
    let eight = ["--chip", "blackhole-p150a", "--cqs", "8", "--iters", "3", "--warmup", "1", "--sync", "end"];
    let r = run("dispatch_latency", &eight);
    let p = &r["points"][0];
    assert_eq!(p["cqs"], 8);
    assert_eq!(p["latency_cycles"]["samples"], 3);
    let bad = cqlab(&["run", "dispatch_latency", "--cqs", "9"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("1..=8"));
}

#[test]
fn same_seed_same_report_with_or_without_a_trace() {
    let args = ["--cqs", "2", "--iters", "2", "--programs", "4", "--large-cycles", "3000"];
    let a = run("hetero", &args);
    let trace = tmp("determinism.jsonl");
    let mut traced = args.to_vec();
    traced.extend(["--trace", trace.to_str().unwrap()]);
    let b = run("hetero", &traced);
    // Draining the rings (untimed on the embedded simulator) changes nothing.
    assert_eq!(a["points"], b["points"]);
    // One queue count: no scaling figure (null, not a note in its place).
    assert!(a["scaling"].is_null(), "{}", a["scaling"]);
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);
}

/// A sweep of queue counts says each point as it ends, on stderr, in every
/// output mode, and leaves stdout as it was (helper-74: nothing until the
/// last point); a single point's result follows at once, with no line.
#[test]
fn a_sweep_prints_a_progress_line_per_point_on_stderr_only() {
    let json_file = tmp("progress.json");
    let base = ["run", "dispatch_latency", "--cqs", "1,2", "--iters", "2", "--warmup", "0"];
    for mode in [vec![], vec!["--json", json_file.to_str().unwrap()], vec!["--json", "-"]] {
        let out = cqlab(&[&base[..], &mode].concat());
        assert!(out.status.success(), "{mode:?}: {}", support::text(&out));
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("point ")).collect();
        assert_eq!(lines.len(), 2, "{mode:?}: {stderr}");
        assert!(lines[0].starts_with("point 1/2: cqs=1, ") && lines[1].starts_with("point 2/2: cqs=2, "), "{lines:?}");
        assert!(lines.iter().all(|l| l.contains(" programs/s, latency p50 ") && l.ends_with(" s)")), "{lines:?}");
        assert!(!stdout.contains("point 1/2"), "{mode:?}: stdout unchanged: {stdout}");
        if mode.last() == Some(&"-") {
            serde_json::from_str::<Value>(&stdout).unwrap_or_else(|e| panic!("stdout is the report alone: {e}"));
        }
    }
    let one = cqlab(&["run", "dispatch_latency", "--cqs", "2", "--iters", "2", "--warmup", "0"]);
    assert!(!String::from_utf8_lossy(&one.stderr).contains("point 1/1"), "{}", support::text(&one));
}

/// Percentiles all equal are said to be the simulator's determinism, with
/// the option that adds spread (helper-74: p50 = p95 = p99 = max read as a
/// measured flat distribution); with host jitter they spread and no note.
#[test]
fn equal_percentiles_are_explained_in_the_text_with_the_option_that_spreads_them() {
    let text = |extra: &[&str]| {
        let out = cqlab(&[&["run", "dispatch_latency", "--cqs", "1,2", "--iters", "3"][..], extra].concat());
        assert!(out.status.success(), "{}", support::text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let flat = text(&[]);
    let note = "note: p50 = p95 = p99 = max at cqs 1, 2: the simulator is deterministic: without host jitter every \
                iteration took the same cycles; --host-jitter CYCLES adds spread";
    assert!(flat.contains(note), "{flat}");
    let spread = text(&["--host-jitter", "2000"]);
    assert!(!spread.contains("p50 = p95"), "{spread}");
    // The option the note names is the run's own.
    let help = String::from_utf8_lossy(&cqlab(&["run", "--help"]).stdout).into_owned();
    assert!(help.contains("--host-jitter <CYCLES>"), "{help}");
}

fn write(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string(v).unwrap()).unwrap();
}

fn compare(a: &Path, b: &Path) -> (i32, Value) {
    let out = cqlab(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--threshold", "5%", "--json"]);
    (out.status.code().unwrap(), serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn compare_flags_a_planted_regression_and_pairs_by_value() {
    let base = run("dispatch_latency", &["--cqs", "1,2", "--iters", "3", "--warmup", "1"]);
    let (bp, tp) = (tmp("base.json"), tmp("test.json"));
    write(&bp, &base);
    // Identical runs pass.
    write(&tp, &base);
    assert_eq!(compare(&bp, &tp).0, 0);
    // 20% lower throughput at 2 queues is a regression.
    let mut slow = base.clone();
    let t = slow["points"][1]["throughput"]["value"].as_f64().unwrap();
    slow["points"][1]["throughput"]["value"] = (t * 0.8).into();
    write(&tp, &slow);
    let (code, c) = compare(&bp, &tp);
    assert_eq!(code, 1, "{c}");
    assert_eq!(c["regressions"], 1);
    let row = c["rows"].as_array().unwrap().iter().find(|r| r["verdict"] == "REGRESSION").unwrap();
    assert_eq!((row["cqs"].as_u64(), row["metric"].as_str()), (Some(2), Some("throughput")));
    // 20% higher p99 latency too.
    let mut laggy = base.clone();
    let p99 = laggy["points"][0]["latency_cycles"]["p99"].as_f64().unwrap();
    laggy["points"][0]["latency_cycles"]["p99"] = (p99 * 1.2).into();
    write(&tp, &laggy);
    assert_eq!(compare(&bp, &tp).0, 1);
    // A test report without the figures the base has is no pass (it was:
    // every row "no samples", exit 0).
    let mut stripped = base.clone();
    for key in ["throughput", "latency_cycles", "latency_us"] {
        stripped["points"][0].as_object_mut().unwrap().remove(key);
    }
    write(&tp, &stripped);
    let (code, c) = compare(&bp, &tp);
    assert_eq!(code, 1, "{c}");
    let lost = |r: &&Value| r["verdict"] == "REGRESSION" && r["note"] == "no samples in the test";
    assert!(c["rows"].as_array().unwrap().iter().any(|r| lost(&r)), "{c}");
    // From a base of 0 a figure has a direction, not "no samples": latency
    // rising from 0 regresses, throughput rising from 0 improves.
    let (mut zero, mut risen) = (base.clone(), base.clone());
    zero["points"][0]["latency_cycles"]["p99"] = 0.0.into();
    zero["points"][0]["throughput"]["value"] = 0.0.into();
    risen["points"][0]["latency_cycles"]["p99"] = 10.0.into();
    risen["points"][0]["throughput"]["value"] = 10.0.into();
    write(&bp, &zero);
    write(&tp, &risen);
    let (code, c) = compare(&bp, &tp);
    let verdict = |metric: &str| {
        let rows = c["rows"].as_array().unwrap();
        let row = rows.iter().find(|r| r["cqs"] == base["points"][0]["cqs"] && r["metric"] == metric).unwrap();
        (row["verdict"].as_str().unwrap().to_owned(), row["delta_pct"].is_null())
    };
    assert_eq!(
        (code, verdict("throughput"), verdict("latency p99")),
        (1, ("improved".into(), true), ("REGRESSION".into(), true)),
        "{c}"
    );
    write(&bp, &base);
    // Reordered sweep points pair by queue count, not position.
    let mut reordered = base.clone();
    reordered["points"].as_array_mut().unwrap().reverse();
    write(&tp, &reordered);
    let (code, c) = compare(&bp, &tp);
    assert_eq!(code, 0, "{c}");
    for r in c["rows"].as_array().unwrap() {
        assert_eq!(r["base"], r["test"], "{r}");
    }
    // A test sweep that stopped at a failing point (a hang at 2 queues, as
    // `run --json` writes it) is a regression, not a point "only in base"
    // (helper-44: exit 0); when it failed at its first point, not exit 2.
    let mut hung = base.clone();
    hung["points"].as_array_mut().unwrap().truncate(1);
    hung["failed_point"] = serde_json::json!({"cqs": 2, "exit": 3, "error": "timeout waiting for ..."});
    write(&tp, &hung);
    let (code, c) = compare(&bp, &tp);
    assert_eq!((code, c["test_failed_point"]["cqs"].as_u64()), (1, Some(2)), "{c}");
    hung["points"].as_array_mut().unwrap().clear();
    hung["failed_point"]["cqs"] = 1.into();
    write(&tp, &hung);
    let (code, c) = compare(&bp, &tp);
    assert_eq!((code, c["regressions"].as_u64()), (1, Some(1)), "{c}");
    // A base that failed is a note, no regression of the test.
    let mut short = base.clone();
    short["failed_point"] = serde_json::json!({"cqs": 4, "exit": 4, "error": "device error"});
    write(&bp, &short);
    write(&tp, &base);
    let (code, c) = compare(&bp, &tp);
    assert_eq!((code, c["base_failed_point"]["cqs"].as_u64()), (0, Some(4)), "{c}");
    write(&bp, &base);
    // Unusable input is exit 2.
    std::fs::write(&tp, "not json").unwrap();
    assert_eq!(cqlab(&["compare", bp.to_str().unwrap(), tp.to_str().unwrap()]).status.code(), Some(2));
}

/// The queue-switch overhead (reference 004's headline figure) is compared
/// as latency is: lower is better, the same threshold, in text and JSON. A
/// negative one (switching quicker than staying) is a figure, not bad input.
/// Being a difference of two gaps, its change is a percentage of the base's
/// cross-queue gap: a few cycles around 0 are no 100 % regression.
#[test]
fn compare_checks_the_switch_overhead_lower_is_better() {
    let base = run("hetero", &["--cqs", "2", "--iters", "2", "--programs", "4", "--large-cycles", "3000"]);
    let so = &base["points"][0]["switch_overhead"];
    let overhead = so["overhead_cycles"].as_f64().expect("hetero on 2 queues");
    let gap = so["cross_cq_gap_cycles"]["mean"].as_f64().expect("a cross-queue gap");
    assert!(gap > 100.0, "{so}");
    let (bp, tp) = (tmp("switch-base.json"), tmp("switch-test.json"));
    write(&bp, &base);
    let compared = |b: f64, t: f64| {
        let with = |v: f64| {
            let mut r = base.clone();
            r["points"][0]["switch_overhead"]["overhead_cycles"] = v.into();
            r
        };
        write(&bp, &with(b));
        write(&tp, &with(t));
        let (code, c) = compare(&bp, &tp);
        let row = c["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "switch overhead").cloned();
        (code, row.unwrap_or_else(|| panic!("no switch overhead row: {c}")))
    };
    let (code, row) = compared(overhead, overhead + 0.2 * gap);
    assert_eq!((code, row["verdict"].as_str()), (1, Some("REGRESSION")), "{row}");
    assert!((row["delta_pct"].as_f64().unwrap() - 20.0).abs() < 1e-6, "20 % of the cross-queue gap: {row}");
    let (code, row) = compared(overhead, overhead + 0.04 * gap);
    assert_eq!((code, row["verdict"].as_str()), (0, Some("ok")), "within 5%: {row}");
    let (code, row) = compared(overhead, overhead - 0.2 * gap);
    assert_eq!((code, row["verdict"].as_str()), (0, Some("improved")), "{row}");
    let (code, row) = compared(overhead, -overhead);
    assert_eq!(code, 0, "{row}");
    // From -5 to 0 cycles: nothing on a gap of thousands (it read +100 %).
    let (code, row) = compared(-5.0, 0.0);
    assert_eq!((code, row["verdict"].as_str()), (0, Some("ok")), "{row}");
    // The text table names the row.
    write(&bp, &base);
    let out = cqlab(&["compare", bp.to_str().unwrap(), bp.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("cqs=2") && l.contains(" switch overhead "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with("+0.0%  ok"), "{line}");
    assert!(text.contains("latency and switch overhead in device cycles lower is better"), "{text}");
    // A workload without the figure has no row for it.
    let one = run("dispatch_latency", &["--cqs", "1", "--iters", "2", "--warmup", "1"]);
    let op = tmp("switch-none.json");
    write(&op, &one);
    let (_, c) = compare(&op, &op);
    assert!(c["rows"].as_array().unwrap().iter().all(|r| r["metric"] != "switch overhead"), "{c}");
}

/// Points pair by the value of every sweep parameter in `params`, not just
/// the queue count; reports that share no point are unusable (exit 2), not
/// a silent pass.
#[test]
fn compare_pairs_any_swept_parameter_by_value() {
    let base = run("dispatch_latency", &["--cqs", "1,2", "--iters", "3", "--warmup", "1"]);
    assert_eq!(base["points"][1]["params"], serde_json::json!({"cqs": 2}), "run writes each point's params");
    // Two points at the same queue count, swept over another parameter.
    let mut swept = base.clone();
    for (i, depth) in [(0, 1), (1, 4)] {
        let p = &mut swept["points"][i];
        p["cqs"] = 2.into();
        p["params"] = serde_json::json!({"cqs": 2, "depth": depth});
        p["throughput"]["value"] = (1000.0 * depth as f64).into();
    }
    let (bp, tp) = (tmp("swept-base.json"), tmp("swept-test.json"));
    write(&bp, &swept);
    let mut reordered = swept.clone();
    reordered["points"].as_array_mut().unwrap().reverse();
    write(&tp, &reordered);
    let (code, c) = compare(&bp, &tp);
    assert_eq!(code, 0, "{c}");
    for r in c["rows"].as_array().unwrap() {
        assert_eq!(r["base"], r["test"], "{r}");
    }
    // 20% lower throughput at depth 4 only.
    reordered["points"][0]["throughput"]["value"] = 3200.0.into();
    write(&tp, &reordered);
    let (code, c) = compare(&bp, &tp);
    assert_eq!(code, 1, "{c}");
    let row = c["rows"].as_array().unwrap().iter().find(|r| r["verdict"] == "REGRESSION").unwrap();
    assert_eq!(row["params"]["depth"], 4, "{row}");
    // No point in common: nothing compared is exit 2.
    let mut other = swept.clone();
    for (p, depth) in other["points"].as_array_mut().unwrap().iter_mut().zip([16, 17]) {
        p["params"]["depth"] = depth.into();
    }
    write(&tp, &other);
    let out = cqlab(&["compare", bp.to_str().unwrap(), tp.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing compared"));
}

/// `cqlab trace export TRACE --perfetto` into a scratch file, parsed.
fn export_perfetto(trace: &Path, name: &str) -> Value {
    let pf = tmp(&format!("{name}.perfetto.json"));
    let out = cqlab(&["trace", "export", trace.to_str().unwrap(), "--perfetto", pf.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&std::fs::read(&pf).unwrap()).unwrap()
}

/// Every event has ph/ts/pid/tid; B/E nest per track; every flow end has a
/// start; every counter track's values are in time order.
fn check_perfetto(v: &Value) -> (usize, usize) {
    use std::collections::{HashMap, HashSet};
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let mut stacks: HashMap<(u64, u64), Vec<(String, f64)>> = HashMap::new();
    let mut named: HashSet<u64> = HashSet::new();
    let mut sliced: HashSet<u64> = HashSet::new();
    // Flow starts by id -> (track, ts); flow ends -> (id, ts); GO slice starts per track.
    let (mut starts, mut ends) = (HashMap::new(), Vec::new());
    let mut go_starts: HashSet<(u64, u64)> = HashSet::new();
    // A counter track is its process and name: its latest ts.
    let mut counters: HashMap<(u64, String), f64> = HashMap::new();
    for e in events {
        for k in ["ph", "ts", "pid", "tid"] {
            assert!(e.get(k).is_some(), "event without {k}: {e}");
        }
        let (pid, tid, ts) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap());
        match e["ph"].as_str().unwrap() {
            "M" if e["name"] == "thread_name" => {
                assert!(named.insert(tid), "track {tid} named twice");
            }
            "B" => {
                let s = stacks.entry((pid, tid)).or_default();
                if let Some((_, last)) = s.last() {
                    assert!(ts >= *last, "B before its parent's start on track {tid}");
                }
                s.push((e["name"].as_str().unwrap().to_owned(), ts));
                sliced.insert(tid);
                // Programs start their workers with a LAUNCH (its multicast is the GO).
                if e["name"] == "GO" || e["name"] == "LAUNCH" {
                    go_starts.insert((tid, ts.to_bits()));
                }
            }
            "E" => {
                let (name, start) = stacks.get_mut(&(pid, tid)).and_then(|s| s.pop()).expect("E without B");
                assert_eq!(e["name"].as_str().unwrap(), name, "E closes another slice on track {tid}");
                assert!(ts >= start, "slice {name} ends before it starts");
            }
            "s" => {
                assert!(starts.insert(e["id"].as_u64().unwrap(), (tid, ts)).is_none(), "flow id reused: {e}");
            }
            "f" => {
                // Binds to the slice that starts at its ts (the kernel), not the next one.
                assert_eq!(e["bp"], "e", "flow end without bp=e: {e}");
                ends.push((e["id"].as_u64().unwrap(), ts));
            }
            "C" => {
                let name = e["name"].as_str().unwrap().to_owned();
                if let Some(last) = counters.insert((pid, name.clone()), ts) {
                    assert!(ts >= last, "counter {name} goes back in time: {last} us, then {ts} us");
                }
            }
            _ => {}
        }
    }
    assert!(stacks.values().all(|s| s.is_empty()), "unclosed slices");
    for (id, ts) in &ends {
        let (tid, start) = starts.get(id).unwrap_or_else(|| panic!("flow end {id} without its start"));
        assert!(start <= ts, "flow {id} goes back in time: GO at {start} us, kernel at {ts} us");
        assert!(go_starts.contains(&(*tid, start.to_bits())), "flow {id} does not start at a GO slice on track {tid}");
    }
    assert!(sliced.is_subset(&named), "a track with slices but no name");
    assert!(!counters.is_empty(), "no counter tracks");
    (named.len(), ends.len())
}

#[test]
fn trace_export_is_strict_perfetto_and_summary_attributes_95_percent() {
    let trace = tmp("hetero.jsonl");
    let out = cqlab(&[
        "run",
        "hetero",
        "--cqs",
        "2",
        "--iters",
        "3",
        "--programs",
        "4",
        "--large-cycles",
        "4000",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = export_perfetto(&trace, "hetero");
    let (tracks, flows) = check_perfetto(&v);
    // Active cores: 2 prefetchers, 2 dispatchers, 64 workers, plus the host track.
    assert_eq!(tracks, 2 + 2 + 64 + 1);
    assert!(flows >= 64, "GO -> kernel flows: {flows}");
    for (w, extra) in [("hetero", vec![]), ("copy_stress", vec!["--bytes", "4096"]), ("dispatch_latency", vec![])] {
        let (trace, report) = (tmp(&format!("{w}.jsonl")), tmp(&format!("{w}.json")));
        let mut args = vec!["run", w, "--cqs", "2", "--iters", "3", "--trace", trace.to_str().unwrap()];
        args.extend(["--json", report.to_str().unwrap()]);
        args.extend(extra);
        assert!(cqlab(&args).status.success());
        let point = serde_json::from_slice::<Value>(&std::fs::read(&report).unwrap()).unwrap()["points"][0].clone();
        let out = cqlab(&["trace", "summary", trace.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let s: Value = serde_json::from_slice(&out.stdout).unwrap();
        let timed: Vec<&Value> = s["iterations"].as_array().unwrap().iter().filter(|i| i["timed"] == true).collect();
        assert_eq!(timed.len(), 3, "{w}");
        for i in timed {
            let f = i["attributed_fraction"].as_f64().unwrap();
            assert!(f >= 0.95, "{w} iteration {}: {f}", i["iteration"]);
            assert!(!i["critical_path"].as_array().unwrap().is_empty());
        }
        assert!(!s["top_waits"].as_array().unwrap().is_empty(), "{w}");
        // The summary's waits and the run's totals both cover the timed
        // iterations (warmup and boot left out of both): equal.
        let waits = s["top_waits"].as_array().unwrap();
        let total = |psw: bool| -> u64 {
            // A wait's waypoint is its code, as in the glossary and `run`'s waits.
            let named = |x: &&Value| x["kind"] == "wait" && (x["waypoint"] == "PSW") == psw;
            waits.iter().filter(named).map(|x| x["total_cycles"].as_u64().unwrap()).sum()
        };
        assert_eq!(total(true), point["stall_total_cycles"].as_u64().unwrap(), "{w}: PSW");
        assert_eq!(total(false), point["wait_total_cycles"].as_u64().unwrap(), "{w}: other waits");
        // Per iteration the windows are the host's own: the run's figure.
        assert_eq!((&s["timed_cycles"], &s["run_timed_cycles"]), (&point["timed_cycles"], &point["timed_cycles"]));
    }
}

/// With `--sync end` the summary's windows end at the last event's record,
/// and it gives the run's own timed cycles beside them, which run on to
/// when the host saw the event (helper-67: the two disagreed unlabelled).
#[test]
fn a_sync_end_summary_gives_the_runs_timed_cycles_beside_its_windows() {
    let (trace, report) = (tmp("sync-end.jsonl"), tmp("sync-end.json"));
    let args = ["run", "tiny_kernels", "--cqs", "1", "--iters", "4", "--programs", "6", "--sync", "end"];
    let out = cqlab(&[&args[..], &["--trace", trace.to_str().unwrap(), "--json", report.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let point = serde_json::from_slice::<Value>(&std::fs::read(&report).unwrap()).unwrap()["points"][0].clone();
    let out = cqlab(&["trace", "summary", trace.to_str().unwrap(), "--json"]);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = point["timed_cycles"].as_u64().unwrap();
    assert_eq!(s["run_timed_cycles"].as_u64(), Some(run), "{s}");
    let windows = s["timed_cycles"].as_u64().unwrap();
    assert!(windows < run && run - windows < 10_000, "windows {windows}, run {run}");
    let text = String::from_utf8_lossy(&cqlab(&["trace", "summary", trace.to_str().unwrap()]).stdout).to_string();
    assert!(text.contains(&format!("the run's timed_cycles, to the host seeing the last event: {run}")), "{text}");
}

/// Several GOs per drain block (tiny_kernels): each kernel's flow must come
/// from the GO that started it, not from the last GO read.
#[test]
fn perfetto_flows_start_at_the_go_that_launched_the_kernel() {
    let trace = tmp("tiny-flows.jsonl");
    let out = cqlab(&[
        "run",
        "tiny_kernels",
        "--cqs",
        "2",
        "--iters",
        "2",
        "--warmup",
        "0",
        "--programs",
        "4",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = export_perfetto(&trace, "tiny-flows");
    let (_, flows) = check_perfetto(&v);
    // 2 iterations x 2 queues x 4 programs x 32 workers per queue.
    assert_eq!(flows, 2 * 2 * 4 * 32);
}

#[test]
fn a_million_record_export_stays_under_200_mib() {
    use std::io::Write;
    // A synthetic run trace: a dispatcher's GO and 64 workers' kernels, over and over.
    let path = tmp("million.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(f, r#"{{"format":"cqlab-trace","version":2,"workload":"synthetic","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","seed":0,"sync":"end","clock_hz":1000000000,"cores":[{{"x":19,"y":26,"role":"CQ0 dispatcher"}}]}}"#).unwrap();
    let (mut n, mut cycle, mut seq) = (0u64, 0u64, 0u32);
    // Each core's records numbered in order, as a ring numbers them.
    let (mut dispatcher, mut worker) = (0u32, 0u32);
    while n < 1_000_000 {
        writeln!(f, r#"{{"launch":{{"seq":{seq},"cq":0,"cores":[0,0,7,7],"label":"k"}}}}"#).unwrap();
        writeln!(f, r#"{{"rec":[19,26,{cycle},{dispatcher},2,39,16]}}"#).unwrap();
        writeln!(f, r#"{{"rec":[19,26,{},{},3,39,16]}}"#, cycle + 10, dispatcher + 1).unwrap();
        dispatcher += 2;
        n += 2;
        for w in 0..64u64 {
            let (x, y) = (18 + w % 8, 18 + w / 8);
            writeln!(f, r#"{{"rec":[{x},{y},{},{worker},11,{seq},3]}}"#, cycle + 40).unwrap();
            writeln!(f, r#"{{"rec":[{x},{y},{},{},12,{seq},3]}}"#, cycle + 90, worker + 1).unwrap();
            n += 2;
        }
        worker += 2;
        cycle += 100;
        seq += 1;
    }
    drop(f);
    let out = tmp("million.perfetto.json");
    let mut export = Command::new(env!("CARGO_BIN_EXE_cqlab"));
    export.args(["trace", "export", path.to_str().unwrap(), "--perfetto", out.to_str().unwrap()]);
    let (o, rss_kib) = support::peak_rss_kib(export);
    assert!(o.status.success(), "{}", support::text(&o));
    assert!(rss_kib < 200 * 1024, "export of {n} records peaked at {rss_kib} KiB");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&out);
}

/// The critical path is a dependency chain across cores: contiguous steps
/// covering the iteration, each naming its core, and for hetero it crosses
/// queues (a kernel waits for the other queue's event) and runs through
/// workers' kernels; for dispatch_latency it runs through the prefetcher's
/// fetch and relay into the dispatcher.
#[test]
fn trace_summary_critical_path_walks_back_through_the_cores() {
    for (w, extra) in [("hetero", vec!["--programs", "4", "--large-cycles", "4000"]), ("dispatch_latency", vec![])] {
        let trace = tmp(&format!("cp-{w}.jsonl"));
        let mut args =
            vec!["run", w, "--cqs", "2", "--iters", "2", "--warmup", "1", "--trace", trace.to_str().unwrap()];
        args.extend(extra);
        assert!(cqlab(&args).status.success());
        let out = cqlab(&["trace", "summary", trace.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let s: Value = serde_json::from_slice(&out.stdout).unwrap();
        let timed: Vec<&Value> = s["iterations"].as_array().unwrap().iter().filter(|i| i["timed"] == true).collect();
        assert_eq!(timed.len(), 2, "{w}: --iters 2 times two iterations: {s}");
        for i in timed {
            let path = i["critical_path"].as_array().unwrap();
            let (start, end) = (i["start"].as_u64().unwrap(), i["end"].as_u64().unwrap());
            assert_eq!(path.first().unwrap()["from"], start, "{w}: {i}");
            assert_eq!(path.last().unwrap()["to"], end, "{w}: {i}");
            for pair in path.windows(2) {
                assert_eq!(pair[0]["to"], pair[1]["from"], "{w}: steps are contiguous: {pair:?}");
            }
            assert!(i["critical_path_attributed_fraction"].as_f64().unwrap() >= 0.95, "{w}: {i}");
            let on = |role: &str, phase: &str| {
                path.iter().any(|s| s["role"].as_str().unwrap().starts_with(role) && s["phase"] == phase)
            };
            // Each step names its core as {"x", "y"} beside its role, the
            // host none.
            for s in path {
                let core = &s["core"];
                let named = core.as_object().is_some_and(|c| c.len() == 2 && c["x"].is_u64() && c["y"].is_u64());
                assert!(named || (core.is_null() && s["role"] == "host"), "{w}: {s}");
            }
            // Ends with the host seeing the event the dispatcher wrote.
            assert_eq!(path.last().unwrap()["role"], "host");
            if w == "hetero" {
                assert!(on("worker", "kernel"), "{w}: {i}");
                assert!(
                    on("CQ0 dispatcher", "dispatch") && on("CQ1 dispatcher", "dispatch"),
                    "{w}: crosses queues: {i}"
                );
            } else {
                assert!(on("CQ", "fetch (PCIe)") && on("CQ", "relay") && on("CQ", "dispatch"), "{w}: {i}");
            }
        }
        assert!(s["phase_kinds"]["kernel"] == "work" || w != "hetero", "{}", s["phase_kinds"]);
    }
}

/// `--sync end` runs ahead of the device; the final synchronisation drains
/// the rings per iteration, so no record is lost and every timed iteration
/// has a latency sample.
#[test]
fn sync_end_loses_no_records_and_samples_every_iteration() {
    let r = run("tiny_kernels", &["--cqs", "1", "--sync", "end", "--iters", "30", "--warmup", "1"]);
    let p = &r["points"][0];
    assert_eq!(p["trace"]["lost"], 0, "{}", p["trace"]);
    assert_eq!(p["latency_cycles"]["samples"], 30);
}

/// Rings lapped before the drain read them (300 zero-cycle programs in one
/// iteration on an 8x1 grid): the text report says records were lost and
/// what that makes its trace figures, as `trace summary` does (helper-53:
/// only the JSON's `trace.lost` said so); a run that lost none says nothing.
#[test]
fn the_text_report_notes_lost_trace_records() {
    let json = tmp("lost.json");
    let mut args = vec!["run", "tiny_kernels", "--cqs", "1", "--iters", "1", "--warmup", "0", "--tiny-cycles", "0"];
    args.extend(support::SMALL_WORMHOLE);
    args.extend(["--json", json.to_str().unwrap()]);
    for (programs, lossy) in [("300", true), ("4", false)] {
        let out = cqlab(&[&args[..], &["--programs", programs]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let lost = serde_json::from_slice::<Value>(&std::fs::read(&json).unwrap()).unwrap()["points"][0]["trace"]
            ["lost"]
            .as_u64()
            .unwrap();
        assert_eq!(lost > 0, lossy, "--programs {programs}: {lost} lost");
        let text = String::from_utf8_lossy(&out.stdout);
        let note = format!("note: cqs 1: {lost} trace records were overwritten before they were read");
        assert_eq!(text.contains(&note), lossy, "--programs {programs}:\n{text}");
        assert_eq!(text.contains("are lower bounds"), lossy, "--programs {programs}:\n{text}");
    }
}

/// `trace summary` of a `--sync end` trace holds one iteration's records
/// at a time: 32 iterations of 32k records each summarise in far less than
/// the whole trace would take (about 46 MiB when every record's span was kept).
#[test]
fn sync_end_summary_of_a_million_records_stays_small() {
    use std::io::Write;
    let path = tmp("million-end.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(f, r#"{{"format":"cqlab-trace","version":2,"workload":"synthetic","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","seed":0,"sync":"end","clock_hz":1000000000,"cores":[{{"x":19,"y":26,"role":"CQ0 dispatcher"}}]}}"#).unwrap();
    let (mut n, mut cycle, mut seq) = (0u64, 0u64, 0u32);
    const LAUNCHES: u32 = 250;
    // Each core's records numbered in order, as a ring numbers them.
    let mut dispatcher = 0u64;
    for it in 0..32u32 {
        let ev = it + 1;
        writeln!(f, r#"{{"iter":{{"index":{it},"warmup":false,"start":{cycle},"enqueued":{cycle},"end":null,"events":[{ev}]}}}}"#).unwrap();
        for k in 0..LAUNCHES {
            writeln!(f, r#"{{"launch":{{"seq":{},"cq":0,"cores":[0,0,7,7],"label":"k"}}}}"#, seq + k).unwrap();
        }
        // The dispatcher's GOs, then each worker's kernels (drain order), then the event.
        for k in 0..LAUNCHES as u64 {
            writeln!(f, r#"{{"rec":[19,26,{},{dispatcher},2,39,16]}}"#, cycle + 100 * k + 1).unwrap();
            writeln!(f, r#"{{"rec":[19,26,{},{},3,39,16]}}"#, cycle + 100 * k + 10, dispatcher + 1).unwrap();
            dispatcher += 2;
        }
        for w in 0..64u64 {
            let (x, y) = (18 + w % 8, 18 + w / 8);
            for k in 0..LAUNCHES as u64 {
                let s = seq as u64 + k;
                let r = 2 * s;
                writeln!(f, r#"{{"rec":[{x},{y},{},{r},11,{s},3]}}"#, cycle + 100 * k + 40).unwrap();
                writeln!(f, r#"{{"rec":[{x},{y},{},{},12,{s},3]}}"#, cycle + 100 * k + 90, r + 1).unwrap();
            }
        }
        cycle += 100 * LAUNCHES as u64;
        writeln!(f, r#"{{"rec":[19,26,{},{dispatcher},13,{ev},0]}}"#, cycle - 5).unwrap();
        dispatcher += 1;
        n += (2 + 128) * LAUNCHES as u64 + 1;
        seq += LAUNCHES;
    }
    writeln!(f, r#"{{"end":{{"timed_cycles":{cycle},"lost":0}}}}"#).unwrap();
    drop(f);
    let mut summary = Command::new(env!("CARGO_BIN_EXE_cqlab"));
    summary.args(["trace", "summary", path.to_str().unwrap(), "--json"]);
    let (out, rss_kib) = support::peak_rss_kib(summary);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_file(&path);
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["iterations"].as_array().unwrap().len(), 32);
    assert!(n > 1_000_000);
    assert!(rss_kib < 24 * 1024, "summary of {n} records peaked at {rss_kib} KiB");
}

/// Zero, oversized and overflowing knobs are refused up front (exit 2) with
/// the flag and the limit in the message, never clamped or panicking.
#[test]
fn run_refuses_zero_and_oversized_knobs_clearly() {
    // Every knob is checked before a device boots: a usage error (exit 2,
    // issue 14), iteration counts by the argument parser, the rest by the
    // workload built once up front.
    for (args, says) in [
        (vec!["run", "tiny_kernels", "--programs", "0"], "0 is not in 1..=10000"),
        (vec!["run", "hetero", "--burst", "0"], "0 is not in 1..=10000"),
        (vec!["run", "copy_stress", "--copies", "0"], "0 is not in 1..=10000"),
        (vec!["run", "copy_stress", "--bytes", "0"], "multiple of 1024 in 1024..=67108864"),
        (vec!["run", "copy_stress", "--bytes", "4000000000"], "multiple of 1024 in 1024..=67108864"),
        (vec!["run", "copy_stress", "--bytes", "4294967295"], "multiple of 1024 in 1024..=67108864"),
        (vec!["run", "matmul_peak", "--tile", "0"], "0 is not in 4..=16"),
        (vec!["run", "dispatch_latency", "--cqs", "0"], "outside 1..=8"),
        (vec!["run", "dispatch_latency", "--cqs", "1,x"], "is not a number"),
        (vec!["run", "dispatch_latency", "--iters", "4294967295", "--warmup", "1"], "not in 1..=1000000"),
        (vec!["run", "dispatch_latency", "--iters", "0"], "not in 1..=1000000"),
    ] {
        let out = cqlab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("booted") && !err.contains("queues:"), "{args:?} ran before refusing: {err}");
    }
}

/// `cqlab trace summary RUN --json | head -1`: the command ends quietly
/// (exit 0) when its reader closes the pipe, instead of panicking.
#[test]
fn report_output_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, Write};
    let path = tmp("pipe.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(f, r#"{{"format":"cqlab-trace","version":2,"workload":"synthetic","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","seed":0,"sync":"end","clock_hz":1000000000,"cores":[]}}"#).unwrap();
    // Enough iterations that the JSON outgrows a pipe buffer.
    for it in 0..3000u64 {
        let c = it * 100;
        writeln!(
            f,
            r#"{{"iter":{{"index":{it},"warmup":false,"start":{c},"enqueued":{c},"end":null,"events":[{}]}}}}"#,
            it + 1
        )
        .unwrap();
        // The dispatcher's records numbered in order, as its ring numbers them.
        writeln!(f, r#"{{"rec":[19,26,{},{},2,39,16]}}"#, c + 1, 3 * it).unwrap();
        writeln!(f, r#"{{"rec":[19,26,{},{},3,39,16]}}"#, c + 10, 3 * it + 1).unwrap();
        writeln!(f, r#"{{"rec":[19,26,{},{},13,{},0]}}"#, c + 95, 3 * it + 2, it + 1).unwrap();
    }
    drop(f);
    let mut child = Command::new(env!("CARGO_BIN_EXE_cqlab"))
        .args(["trace", "summary", path.to_str().unwrap(), "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert_eq!(first.trim(), "{");
    // The reader is gone (dropped above); the rest of the output hits a closed pipe.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Occupancy is a series over device time: a point at every fetch-queue
/// entry the prefetcher takes and every completion record the dispatcher
/// writes (at the record's cycle), plus the host's samples; no point
/// exceeds what the ring could hold.
#[test]
fn occupancy_is_a_device_timed_series() {
    let trace = tmp("occ.jsonl");
    let json = tmp("occ.json");
    let out = cqlab(&[
        "run",
        "copy_stress",
        "--cqs",
        "2",
        "--iters",
        "4",
        "--bytes",
        "4096",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    // Device records in the trace: fetches per prefetcher, completion writes per dispatcher.
    let text = std::fs::read_to_string(&trace).unwrap();
    let (mut fetches, mut writes) = (std::collections::HashMap::new(), std::collections::HashMap::new());
    let mut device_occ = std::collections::HashSet::new();
    // The report's series covers the timed iterations, from the first one's start.
    let mut timed_from = None;
    // Whose queue each CQ core is, from the header's cores ("CQ1 dispatcher").
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let queue_of: std::collections::HashMap<(u64, u64), u64> = header["cores"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| {
            let q = c["role"].as_str()?.strip_prefix("CQ")?.split(' ').next()?.parse().ok()?;
            Some(((c["x"].as_u64()?, c["y"].as_u64()?), q))
        })
        .collect();
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["iter"]["warmup"] == false && timed_from.is_none() {
            timed_from = v["iter"]["start"].as_u64();
        }
        if let Some(rec) = v["rec"].as_array() {
            let (x, y, cycle, kind) = (
                rec[0].as_u64().unwrap(),
                rec[1].as_u64().unwrap(),
                rec[2].as_u64().unwrap(),
                rec[4].as_u64().unwrap(),
            );
            let Some(&cq) = queue_of.get(&(x, y)) else { continue };
            if kind == 4 {
                fetches.entry(cq).or_insert_with(Vec::new).push(cycle);
            } else if kind == 14 {
                writes.entry(cq).or_insert_with(Vec::new).push(cycle);
            }
        } else if v["occ"]["source"] == "device" {
            device_occ.insert((v["occ"]["cq"].as_u64().unwrap(), v["occ"]["cycle"].as_u64().unwrap()));
        }
    }
    for (cq, cycles) in fetches.iter().chain(writes.iter()) {
        for c in cycles {
            assert!(device_occ.contains(&(*cq, *c)), "CQ{cq}: no occupancy point at the device record at {c}");
        }
    }
    let timed_from = timed_from.expect("a timed iteration");
    let timed = |c: Option<&Vec<u64>>| c.map_or(0, |c| c.iter().filter(|&&c| c >= timed_from).count());
    for o in r["points"][0]["occupancy"].as_array().unwrap() {
        let cq = o["cq"].as_u64().unwrap();
        let n = timed(fetches.get(&cq)) + timed(writes.get(&cq));
        assert!(n > 4, "CQ{cq}: {n} device records");
        assert_eq!(o["device_points"].as_u64().unwrap() as usize, n, "{o}");
        let series = o["series"].as_array().unwrap();
        let cycles: Vec<u64> = series.iter().map(|p| p[0].as_u64().unwrap()).collect();
        assert!(cycles.windows(2).all(|w| w[0] <= w[1]), "CQ{cq}: series in time order");
        // copy_stress reads back: completion records were queued at some point,
        // and never more than a fraction of the 256 KiB ring.
        let max = o["completion_bytes_max"].as_u64().unwrap();
        assert!(max > 0 && max < 256 * 1024, "CQ{cq}: {o}");
    }
}

/// `--host-jitter` and `--host-pct` reach the device: the same seed gives
/// the same report, and the device time grows with the host's stalls.
#[test]
fn host_jitter_and_pct_replay_and_cost_device_time() {
    let args = ["--cqs", "1", "--iters", "2", "--warmup", "0", "--programs", "4", "--large-cycles", "3000"];
    let scheduled: Vec<&str> = args.iter().copied().chain(["--host-jitter", "3000", "--host-pct", "2"]).collect();
    let (plain, a, b) = (run("hetero", &args), run("hetero", &scheduled), run("hetero", &scheduled));
    assert_eq!(a["points"], b["points"], "the same seed replays under a host schedule");
    let cycles = |v: &Value| v["points"][0]["timed_cycles"].as_u64().expect("timed_cycles");
    assert!(cycles(&a) > cycles(&plain), "host stalls cost device time: {} vs {}", cycles(&a), cycles(&plain));
}

/// A report and its trace name what they ran on: the device with its own
/// seed and the host schedule, so a rerun from either is the same run, and
/// `compare` notes reports measured under another host schedule.
#[test]
fn the_report_and_trace_name_the_device_seed_and_host_schedule() {
    let trace = tmp("named.jsonl");
    let args = ["run", "hetero", "--iters", "1", "--programs", "4", "--large-cycles", "3000", "--host-jitter", "500"];
    let mut c = Command::new(support::CQLAB);
    c.env("CQLAB_FIRMWARE_DIR", support::firmware_dir()).args(args).args([
        "--device",
        "embedded:seed=5",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("device embedded:seed=5") && text.contains("host jitter 500"), "{text}");
    let header: Value = serde_json::from_str(std::fs::read_to_string(&trace).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(
        (header["device"].as_str(), header["host"]["jitter_cycles"].as_u64()),
        (Some("embedded:seed=5"), Some(500))
    );
    // Jitter alone moves throughput: compare says the schedules differ.
    let jittered =
        run("hetero", &["--iters", "1", "--programs", "4", "--large-cycles", "3000", "--host-jitter", "500"]);
    let plain = run("hetero", &["--iters", "1", "--programs", "4", "--large-cycles", "3000"]);
    assert_eq!(jittered["host"]["jitter_cycles"], 500);
    let (a, b) = (tmp("jittered.json"), tmp("plain.json"));
    write(&a, &jittered);
    write(&b, &plain);
    let out = cqlab(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--threshold", "50%"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("note: host differs"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Another chip: its cycles are another clock's, and compare says so.
    let blackhole =
        run("hetero", &["--iters", "1", "--programs", "4", "--large-cycles", "3000", "--chip", "blackhole-p150a"]);
    let c = tmp("blackhole.json");
    write(&c, &blackhole);
    let out = cqlab(&["compare", b.to_str().unwrap(), c.to_str().unwrap(), "--threshold", "1000%"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("note: chip differs (\"wormhole-n150\" at 1.00 GHz vs \"blackhole-p150a\" at 1.35 GHz)"),
        "{err}"
    );
}

/// A failing run still writes its `--json` report: the points that ran and
/// the one that failed, with its exit code and error (it wrote nothing).
#[test]
fn a_failing_run_reports_the_point_that_failed() {
    let json = tmp("failed.json");
    let path = json.to_str().unwrap();
    let args =
        ["run", "hetero", "--cqs", "2", "--large-cycles", "3000000", "--kernel-timeout", "1000000", "--iters", "1"];
    let out = cqlab(&[&args[..], &["--warmup", "0", "--json", path]].concat());
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let failed = &v["failed_point"];
    assert_eq!((failed["cqs"].as_u64(), failed["exit"].as_u64()), (Some(2), Some(3)), "{v}");
    assert!(failed["error"].as_str().is_some_and(|e| e.contains("still running") && !e.contains('\n')), "{v}");
    // What the text's dump says, in fields: the kind, the core with its
    // role, and the dump (helper-86's audit: only the first line was kept).
    assert_eq!(failed["kind"], "kernel-timeout", "{v}");
    assert!(failed["core"]["role"].as_str().is_some_and(|r| r.starts_with("worker (")), "{v}");
    assert!(failed["dump"]["chain"].as_array().is_some_and(|c| c.len() >= 2), "{v}");
    assert_eq!(v["points"], serde_json::json!([]), "{v}");
}

/// Every GO arrow of an exported trace starts at its own launch's GO: the
/// n-th GO (or LAUNCH) command the queue's dispatcher recorded starts the
/// n-th launch the host enqueued on that queue, and the kernel the arrow
/// ends at names its launch (`args.seq`). Returns (arrows, mismatches).
fn arrows_from_another_launch(trace: &Path, perfetto: &Value) -> (usize, Vec<String>) {
    use cqlab_abi::dispatch::DispatchCmdId;
    use cqlab_abi::trace::TraceKind;
    use std::collections::HashMap;
    let text = std::fs::read_to_string(trace).unwrap();
    let mut lines = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = lines.next().unwrap();
    let clock_hz = header["clock_hz"].as_f64().unwrap();
    let dispatcher: HashMap<(u64, u64), u64> = header["cores"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| {
            let role = c["role"].as_str().unwrap();
            let cq = role.strip_prefix("CQ")?.strip_suffix(" dispatcher")?.parse().ok()?;
            Some(((c["x"].as_u64().unwrap(), c["y"].as_u64().unwrap()), cq))
        })
        .collect();
    let (mut launches, mut gos): (HashMap<u64, Vec<u64>>, HashMap<u64, Vec<f64>>) = Default::default();
    let go_ids = [DispatchCmdId::Go as u64, DispatchCmdId::Launch as u64];
    for l in lines {
        if let Some(l) = l.get("launch") {
            assert!(!l["enqueued"].is_null(), "a captured launch: GO order does not apply");
            launches.entry(l["cq"].as_u64().unwrap()).or_default().push(l["seq"].as_u64().unwrap());
        } else if let Some(r) = l.get("rec") {
            let r: Vec<u64> = r.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            if let Some(&cq) = dispatcher.get(&(r[0], r[1])) {
                if r[4] == TraceKind::CmdStart as u64 && go_ids.contains(&r[5]) {
                    gos.entry(cq).or_default().push(r[2] as f64 * 1e6 / clock_hz);
                }
            }
        }
    }
    let mut go_of: HashMap<u64, f64> = HashMap::new();
    for (cq, seqs) in &launches {
        assert_eq!(seqs.len(), gos.get(cq).map_or(0, Vec::len), "CQ{cq}: one GO per launch");
        go_of.extend(seqs.iter().copied().zip(gos[cq].iter().copied()));
    }
    let events = perfetto["traceEvents"].as_array().unwrap();
    let kernel_at: HashMap<(u64, u64), u64> = events
        .iter()
        .filter(|e| e["ph"] == "B" && e["name"].as_str().unwrap().starts_with("kernel"))
        .map(|e| {
            ((e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap().to_bits()), e["args"]["seq"].as_u64().unwrap())
        })
        .collect();
    let from: HashMap<u64, f64> = events
        .iter()
        .filter(|e| e["ph"] == "s")
        .map(|e| (e["id"].as_u64().unwrap(), e["ts"].as_f64().unwrap()))
        .collect();
    let (mut arrows, mut wrong) = (0, Vec::new());
    for f in events.iter().filter(|e| e["ph"] == "f") {
        let seq = kernel_at[&(f["tid"].as_u64().unwrap(), f["ts"].as_f64().unwrap().to_bits())];
        let start = from[&f["id"].as_u64().unwrap()];
        arrows += 1;
        if go_of.get(&seq) != Some(&start) {
            wrong.push(format!("launch {seq}: arrow from {start} us, its GO at {:?} us", go_of.get(&seq)));
        }
    }
    (arrows, wrong)
}

/// `hetero` convoys: a worker takes its next GO while its large kernel
/// still runs, so the GO latest before a kernel's start is often another
/// launch's. Each arrow starts at the kernel's own launch (helper-94: 1600
/// of 2560 arrows of this run came from another launch's LAUNCH).
#[test]
fn every_go_arrow_starts_at_its_own_launch() {
    let trace = tmp("hetero-go.jsonl");
    let o = cqlab(&["run", "hetero", "--cqs", "1", "--iters", "3", "--trace", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = export_perfetto(&trace, "hetero-go");
    let (arrows, wrong) = arrows_from_another_launch(&trace, &v);
    assert!(arrows >= 2000, "{arrows} arrows");
    assert!(wrong.is_empty(), "{} of {arrows} arrows start at another launch's GO, e.g. {}", wrong.len(), wrong[0]);
}

/// A failed `--sync end` run: only the iteration the device never finished
/// runs until the host gave up; the ones enqueued after it do not count that
/// time again (helper-99: 9.7 M timed cycles for a 3.25 M-cycle run).
#[test]
fn a_failed_sync_end_runs_summary_counts_its_time_once() {
    let trace = tmp("hang-sync-end.jsonl");
    let o = cqlab(&[
        "run",
        "large_gemm",
        "--iters",
        "3",
        "--warmup",
        "0",
        "--sync",
        "end",
        "--kernel-timeout",
        "1000000",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    let last = std::fs::read_to_string(&trace).unwrap().lines().last().unwrap().to_owned();
    let failed_at = serde_json::from_str::<Value>(&last).unwrap()["end"]["failed"]["cycle"].as_u64().unwrap();
    let o = cqlab(&["trace", "summary", trace.to_str().unwrap(), "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let timed = v["timed_cycles"].as_u64().unwrap();
    assert!(timed > 1_000_000 && timed <= failed_at, "timed {timed} of a run that failed at {failed_at}");
}

/// A run that fails mid-iteration (a kernel runs past `--kernel-timeout`:
/// exit 3) ends its trace with what the device recorded up to the
/// failure, the iteration as far as it got and an `end` line saying where
/// and why; `trace summary` and `trace export` say the run failed there,
/// not that the trace was interrupted (helper-94: the trace held the
/// boot's records only, no `end` line, and the summary 0 device cycles).
#[test]
fn a_failed_runs_trace_ends_with_the_failing_iteration() {
    let (trace, report) = (tmp("hang.jsonl"), tmp("hang.json"));
    #[rustfmt::skip]
    let o = cqlab(&["run", "hetero", "--cqs", "2", "--iters", "2", "--warmup", "0", "--large-cycles", "5000000",
                    "--kernel-timeout", "1000000", "--trace", trace.to_str().unwrap(), "--json", report.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kernel_starts = lines.iter().filter(|l| l["rec"][4] == cqlab_abi::trace::TraceKind::KernelStart as u64).count();
    assert!(kernel_starts > 0, "no kernel records in the failed run's trace");
    let iters: Vec<&Value> = lines.iter().filter_map(|l| l.get("iter")).collect();
    assert_eq!(iters.len(), 1, "{iters:?}");
    let failed = &lines.last().unwrap()["end"]["failed"];
    let point = &serde_json::from_slice::<Value>(&std::fs::read(&report).unwrap()).unwrap()["failed_point"];
    assert_eq!(
        (&failed["iteration"], &failed["exit"], &failed["kind"]),
        (&iters[0]["index"], &Value::from(3), &point["kind"])
    );
    assert_eq!(failed["error"], point["error"], "the same first line as the report's");
    assert_eq!(iters[0]["end"], failed["cycle"], "a --sync per-iter host gave up at the failure");

    let o = cqlab(&["trace", "summary", trace.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["complete"], true, "{s}");
    assert!(s["failed"].as_str().unwrap().contains("the run failed at iteration 0 (exit 3, kernel-timeout): hetero"));
    let w = &s["iterations"][0];
    assert_eq!((&w["failed"], &w["end"]), (&Value::Bool(true), &failed["cycle"]), "{w}");
    assert!(s["phases"]["kernel"].as_u64().unwrap() > 1_000_000, "the hung kernel's time: {}", s["phases"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("the run failed at iteration 0") && !stderr.contains("interrupted"), "{stderr}");

    let pf = tmp("hang.perfetto.json");
    let o = cqlab(&["trace", "export", trace.to_str().unwrap(), "--perfetto", pf.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && stderr.contains("the run failed at iteration 0"), "{stderr}");
    assert!(!stderr.contains("the end is missing"), "{stderr}");
    let v: Value = serde_json::from_slice(&std::fs::read(&pf).unwrap()).unwrap();
    check_perfetto(&v);
    // The hung kernels last until the host gave up, not zero wide at their start.
    let events = v["traceEvents"].as_array().unwrap();
    let gave_up = events.iter().find(|e| e["name"] == "run failed").expect("the failure's instant")["ts"].clone();
    assert!(events.iter().any(|e| e["ph"] == "E" && e["ts"] == gave_up), "no slice closes where the run failed");
}
