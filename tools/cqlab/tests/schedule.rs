//! `cqlab schedule` end to end: machine-readable output and error handling.

use serde_json::Value;
use std::process::{Command, Output};

fn cqlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cqlab")).arg("schedule").args(args).output().expect("run cqlab")
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("expected an integer, found {v}"))
}

#[test]
fn json_reports_every_strategy_per_cache_size() {
    // A 120 KB, B 80 KB, C 240 KB (f32): 64 KiB streams them, 1 MiB holds all three.
    let out = cqlab(&["--m", "300", "--n", "200", "--k", "100", "--tile", "64", "--l3", "64KiB,1MiB", "--json"]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(u(&v["gemm"]["m"]), 300);
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    assert_eq!(u(&configs[0]["l3_bytes"]), 64 << 10);
    for cfg in configs {
        let reports = cfg["reports"].as_array().unwrap();
        let names: Vec<&str> = reports.iter().map(|r| r["strategy"].as_str().unwrap()).collect();
        assert_eq!(names, ["weight-stationary", "input-stationary", "output-stationary"]);
        let best_total = reports.iter().map(|r| u(&r["total_bytes"])).min().unwrap();
        let best = reports.iter().find(|r| r["strategy"] == cfg["best"]).unwrap();
        assert_eq!(u(&best["total_bytes"]), best_total);
        for r in reports {
            assert_eq!(u(&r["minimum"]["b"]), 100 * 200 * 4);
            assert!(u(&r["dram"]["b"]["read_bytes"]) >= 100 * 200 * 4);
            assert!(u(&r["total_bytes"]) >= u(&r["minimum_bytes"]));
            assert_eq!(r["levels"][0]["name"], "L3");
        }
    }
    // Small cache: k-outer orders re-read partial sums of C. Large cache: the minimum.
    assert!(u(&configs[0]["reports"][0]["dram"]["c"]["read_bytes"]) > 0);
    for r in configs[1]["reports"].as_array().unwrap() {
        assert_eq!(u(&r["total_bytes"]), u(&r["minimum_bytes"]), "{}", r["strategy"]);
    }
}

#[test]
fn auto_csv_and_svg() {
    let svg = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("schedule-test.svg");
    let _ = std::fs::remove_file(&svg);
    let out = cqlab(&[
        "--m",
        "257",
        "--n",
        "129",
        "--k",
        "65",
        "--tile",
        "32x64x16",
        "--l2",
        "16KiB",
        "--l3",
        "64KiB,256KiB,1MiB",
        "--strategy",
        "auto",
        "--csv",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("l2_bytes,l3_bytes,strategy,"));
    assert_eq!(lines.len(), 1 + 3, "auto reports one strategy per cache size:\n{text}");
    let columns = lines[0].split(',').count();
    for row in &lines[1..] {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells.len(), columns, "{row}");
        assert_eq!(cells[0], "16384");
        assert_eq!(*cells.last().unwrap(), "true");
    }
    let chart = std::fs::read_to_string(&svg).expect("svg written");
    assert!(chart.starts_with("<svg") && chart.contains("L2 16KiB / L3 1MiB"), "{chart}");
}

/// `--csv` and `--json` name the strategies alike, spelled out, line for
/// line in the same order.
#[test]
fn csv_and_json_name_the_strategies_alike() {
    let problem = ["--m", "300", "--n", "200", "--k", "100", "--tile", "64", "--l3", "64KiB,1MiB"];
    let run = |format: &str| {
        let out = cqlab(&[&problem[..], &[format]].concat());
        assert!(out.status.success(), "{format}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run("--json")).unwrap();
    let from_json: Vec<String> = json["configs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["reports"].as_array().unwrap().iter().map(|r| r["strategy"].as_str().unwrap().to_owned()))
        .collect();
    let csv = run("--csv");
    let mut lines = csv.lines();
    let column = lines.next().unwrap().split(',').position(|h| h == "strategy").expect("a strategy column");
    let from_csv: Vec<String> = lines.map(|l| l.split(',').nth(column).unwrap().to_owned()).collect();
    assert_eq!(from_csv, from_json);
    assert_eq!(from_csv[..3], ["weight-stationary", "input-stationary", "output-stationary"]);
}

#[test]
fn bad_input_fails_with_a_message() {
    let cases: [(&[&str], &str); 6] = [
        (&["--m", "0", "--n", "4", "--k", "4"], "0 is not in 1..=1099511627776"),
        (&["--m", "4", "--n", "4", "--k", "4", "--tile", "0"], "tile size must be at least 1"),
        (&["--m", "4", "--n", "4", "--k", "4", "--tile", "4x4"], "--tile"),
        (&["--m", "4", "--n", "4", "--k", "4", "--l3", "16QiB"], "unknown unit"),
        (&["--m", "4", "--n", "4", "--k", "4", "--l2", "0"], "positive"),
        (&["--m", "four", "--n", "4", "--k", "4"], "invalid value"),
    ];
    for (args, expected) in cases {
        let out = cqlab(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(stderr.contains(expected), "{args:?}: expected {expected:?} in stderr:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{args:?} panicked:\n{stderr}");
    }
}
