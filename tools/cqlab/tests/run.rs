//! `cqlab run`, `compare` and `trace export / summary` end to end on the
//! embedded simulator (deterministic: fixed seeds, device-cycle figures).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn firmware_dir() -> PathBuf {
    std::env::var_os("CQLAB_FIRMWARE_DIR").map(Into::into).unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
        target.join("riscv32im-unknown-none-elf/firmware")
    })
}

fn cqlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cqlab")).env("CQLAB_FIRMWARE_DIR", firmware_dir()).args(args).output().unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cqlab-run-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
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
        if w.contains("matmul") || w.contains("gemm") {
            for p in points {
                assert_eq!(p["validation"]["mismatches"], 0, "{w}: bit-for-bit");
                assert!(p["validation"]["checked"].as_u64().unwrap() > 0);
                let m = &p["matmul"];
                assert!(m["tflops"].as_f64().unwrap() > 0.0);
                let u = m["utilization"].as_f64().unwrap();
                assert!(u > 0.0 && u <= 1.0, "{w}: utilization {u}");
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

#[test]
fn eight_queues_and_end_sync() {
    let r = run("dispatch_latency", &["--cqs", "8", "--iters", "3", "--warmup", "1", "--sync", "end"]);
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
    assert!(std::fs::metadata(&trace).unwrap().len() > 0);
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
    // Reordered sweep points pair by queue count, not position.
    let mut reordered = base.clone();
    reordered["points"].as_array_mut().unwrap().reverse();
    write(&tp, &reordered);
    let (code, c) = compare(&bp, &tp);
    assert_eq!(code, 0, "{c}");
    for r in c["rows"].as_array().unwrap() {
        assert_eq!(r["base"], r["test"], "{r}");
    }
    // Unusable input is exit 2.
    std::fs::write(&tp, "not json").unwrap();
    assert_eq!(cqlab(&["compare", bp.to_str().unwrap(), tp.to_str().unwrap()]).status.code(), Some(2));
}

/// Every event has ph/ts/pid/tid; B/E nest per track; every flow end has a start.
fn check_perfetto(v: &Value) -> (usize, usize) {
    use std::collections::{HashMap, HashSet};
    let events = v["traceEvents"].as_array().expect("traceEvents");
    let mut stacks: HashMap<(u64, u64), Vec<(String, f64)>> = HashMap::new();
    let mut named: HashSet<u64> = HashSet::new();
    let mut sliced: HashSet<u64> = HashSet::new();
    let (mut starts, mut ends) = (HashSet::new(), Vec::new());
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
            }
            "E" => {
                let (name, start) = stacks.get_mut(&(pid, tid)).and_then(|s| s.pop()).expect("E without B");
                assert_eq!(e["name"].as_str().unwrap(), name, "E closes another slice on track {tid}");
                assert!(ts >= start, "slice {name} ends before it starts");
            }
            "s" => {
                starts.insert(e["id"].as_u64().unwrap());
            }
            "f" => ends.push(e["id"].as_u64().unwrap()),
            _ => {}
        }
    }
    assert!(stacks.values().all(|s| s.is_empty()), "unclosed slices");
    assert!(ends.iter().all(|id| starts.contains(id)), "a flow end without its start");
    assert!(sliced.is_subset(&named), "a track with slices but no name");
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
    let pf = tmp("hetero.perfetto.json");
    let out = cqlab(&["trace", "export", trace.to_str().unwrap(), "--perfetto", pf.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&std::fs::read(&pf).unwrap()).unwrap();
    let (tracks, flows) = check_perfetto(&v);
    // Active cores: 2 prefetchers, 2 dispatchers, 64 workers, plus the host track.
    assert_eq!(tracks, 2 + 2 + 64 + 1);
    assert!(flows >= 64, "GO -> kernel flows: {flows}");
    for (w, extra) in [("hetero", vec![]), ("copy_stress", vec!["--bytes", "4096"]), ("dispatch_latency", vec![])] {
        let trace = tmp(&format!("{w}.jsonl"));
        let mut args = vec!["run", w, "--cqs", "2", "--iters", "3", "--trace", trace.to_str().unwrap()];
        args.extend(extra);
        assert!(cqlab(&args).status.success());
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
    }
}

#[test]
fn a_million_record_export_stays_under_200_mib() {
    use std::io::Write;
    // A synthetic run trace: a dispatcher's GO and 64 workers' kernels, over and over.
    let path = tmp("million.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(f, r#"{{"format":"cqlab-trace","version":1,"workload":"synthetic","cqs":1,"seed":0,"sync":"end","clock_hz":1000000000,"cores":[{{"x":18,"y":1,"role":"CQ0 dispatcher"}}]}}"#).unwrap();
    let (mut n, mut cycle, mut seq) = (0u64, 0u64, 0u32);
    while n < 1_000_000 {
        writeln!(f, r#"{{"launch":{{"seq":{seq},"cq":0,"cores":[0,0,7,7],"label":"k"}}}}"#).unwrap();
        writeln!(f, r#"{{"rec":[18,1,{cycle},0,2,39,16]}}"#).unwrap();
        writeln!(f, r#"{{"rec":[18,1,{},0,3,39,16]}}"#, cycle + 10).unwrap();
        n += 2;
        for w in 0..64u64 {
            let (x, y) = (1 + w % 8, 1 + w / 8);
            writeln!(f, r#"{{"rec":[{x},{y},{},0,11,{seq},3]}}"#, cycle + 40).unwrap();
            writeln!(f, r#"{{"rec":[{x},{y},{},0,12,{seq},3]}}"#, cycle + 90).unwrap();
            n += 2;
        }
        cycle += 100;
        seq += 1;
    }
    drop(f);
    let out = tmp("million.perfetto.json");
    let status = Command::new(env!("CARGO_BIN_EXE_cqlab"))
        .args(["trace", "export", path.to_str().unwrap(), "--perfetto", out.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    // Peak RSS of the export (the only child that has exited so far), in KiB.
    let rss_kib =
        nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap().max_rss() as u64;
    assert!(rss_kib < 200 * 1024, "export of {n} records peaked at {rss_kib} KiB");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&out);
}
