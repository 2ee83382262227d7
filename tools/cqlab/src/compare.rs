//! `cqlab compare BASE.json TEST.json [--threshold 5%]`: compares two
//! `cqlab run --json` reports. Points are paired by the values of their
//! sweep parameters (a point's `params` object, every key of it; reports
//! without one pair by `cqs`), never by position. Throughput must not drop,
//! and neither a latency statistic (mean, p50, p95, p99) nor the
//! queue-switch overhead may rise, by more than the threshold. Exit 0: no
//! regression; 1: a regression (also when stdout closes early); 2:
//! unusable input, including two reports that share no sweep point.

use crate::cli::Usage;
use crate::exit::Exit;
use crate::out::{diagln, outln};
use anyhow::Result;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The baseline: a `cqlab run --json` report.
    pub base: PathBuf,
    /// The report compared with it (points paired by their sweep values).
    pub test: PathBuf,
    /// Largest tolerated worsening, in percent (`5%` or `5`; 0..=1000).
    #[arg(long, default_value = "5%", value_parser = parse_threshold)]
    pub threshold: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Which direction is better for a metric.
#[derive(Clone, Copy, PartialEq)]
enum Better {
    Higher,
    Lower,
}

/// A figure compare reads of each point.
struct Metric {
    name: &'static str,
    /// Where a point holds it.
    path: &'static [&'static str],
    better: Better,
    /// Whether it may be below 0: a difference, not a count or a time.
    signed: bool,
    /// The base figure its change is a percentage of, where its own base
    /// may be near 0 or below (a difference of two gaps); its own base
    /// otherwise, or where the base has no such figure.
    scale: Option<&'static [&'static str]>,
    /// Reported by some workloads only: no row where neither report has it.
    some_workloads: bool,
}

const METRICS: [Metric; 6] = [
    Metric {
        name: "throughput",
        path: &["throughput", "value"],
        better: Better::Higher,
        signed: false,
        scale: None,
        some_workloads: false,
    },
    Metric {
        name: "latency mean",
        path: &["latency_cycles", "mean"],
        better: Better::Lower,
        signed: false,
        scale: None,
        some_workloads: false,
    },
    Metric {
        name: "latency p50",
        path: &["latency_cycles", "p50"],
        better: Better::Lower,
        signed: false,
        scale: None,
        some_workloads: false,
    },
    Metric {
        name: "latency p95",
        path: &["latency_cycles", "p95"],
        better: Better::Lower,
        signed: false,
        scale: None,
        some_workloads: false,
    },
    Metric {
        name: "latency p99",
        path: &["latency_cycles", "p99"],
        better: Better::Lower,
        signed: false,
        scale: None,
        some_workloads: false,
    },
    // Reference 004's headline figure: the cross-queue kernel gap minus the
    // same-queue one, below 0 when switching queues happens to be quicker;
    // its change is judged against the cross-queue gap (a rise from -5 to 0
    // cycles is no 100 % regression).
    Metric {
        name: "switch overhead",
        path: &["switch_overhead", "overhead_cycles"],
        better: Better::Lower,
        signed: true,
        scale: Some(&["switch_overhead", "cross_cq_gap_cycles", "mean"]),
        some_workloads: true,
    },
];

/// `5%` or `5`: a percentage in 0..=1000.
pub fn parse_threshold(s: &str) -> Result<f64, String> {
    let s = s.trim();
    crate::args::real(s.strip_suffix('%').unwrap_or(s), 0.0..=1000.0)
        .map_err(|e| format!("expected a percentage like 5%: {e}"))
}

pub fn validate(a: &Args) -> Result<()> {
    crate::input::check_file("BASE", &a.base)?;
    crate::input::check_file("TEST", &a.test)?;
    Ok(())
}

fn load(what: &str, path: &Path) -> Result<Value> {
    let text = crate::input::read_text(what, path, crate::input::MAX_REPORT_BYTES)?;
    let v: Value = serde_json::from_str(&text).map_err(|e| not_json(what, path, &text, e))?;
    if v["tool"] != "cqlab run" || !v["points"].is_array() {
        return Err(
            Usage(format!("{what} {} is not a `cqlab run --json` report (no \"points\")", path.display())).into()
        );
    }
    check_points(&v).map_err(|why| Usage(format!("{what} {}: {why}", path.display())))?;
    Ok(v)
}

/// Why `text` is no report: of JSON Lines (a run trace, its first line a
/// JSON value on its own) the parser said only "trailing characters at
/// line 2", so that case is named with what compare takes instead.
fn not_json(what: &str, path: &Path, text: &str, e: serde_json::Error) -> Usage {
    let first = text.lines().find(|l| !l.trim().is_empty()).and_then(|l| serde_json::from_str::<Value>(l).ok());
    let is_trace = |v: &Value| v["format"] == crate::trace_file::FORMAT;
    match first {
        Some(v) if e.line() > 1 => Usage(format!(
            "{what} {} is JSON Lines ({}), not one JSON report: compare takes the reports `cqlab run --json FILE` \
             writes",
            path.display(),
            if is_trace(&v) { "a `cqlab run --trace` trace" } else { "one JSON value a line" }
        )),
        _ => Usage(format!("{what} {} is not JSON: {e}", path.display())),
    }
}

/// What a comparison reads of each point is what `cqlab run` writes: every
/// metric absent, null (no samples) or a finite number, at least 0 unless
/// it is a difference, and no two points at the same parameters (which one
/// would pair is a guess).
fn check_points(v: &Value) -> Result<(), String> {
    let points = v["points"].as_array().into_iter().flatten();
    let mut seen = Vec::new();
    for (i, p) in points.enumerate() {
        let at = || format!("point {} ({})", i + 1, params(p).as_ref().map_or("no params".into(), label));
        for m in &METRICS {
            let value = m.path.iter().try_fold(p, |v, k| v.get(k));
            match value {
                None | Some(Value::Null) => {}
                Some(x) if x.as_f64().is_some_and(|f| f.is_finite() && (m.signed || f >= 0.0)) => {}
                Some(x) if m.signed => return Err(format!("{}: {} is {x}, not a number", at(), m.name)),
                Some(x) => return Err(format!("{}: {} is {x}, not a number of at least 0", at(), m.name)),
            }
        }
        if let Some(k) = params(p).map(|k| k.to_string()) {
            if seen.contains(&k) {
                return Err(format!("{}: a second point at the same parameters", at()));
            }
            seen.push(k);
        }
    }
    Ok(())
}

/// The throughput unit of a report's points (`programs/s`, `GB/s`, ...),
/// if they name one.
fn throughput_unit(v: &Value) -> Option<&str> {
    v["points"].as_array()?.iter().find_map(|p| p["throughput"]["unit"].as_str())
}

fn get(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k)).and_then(Value::as_f64)
}

/// A point's sweep parameters: its `params` object, or `{"cqs": N}` for
/// reports written before points carried one. Keys sort (serde_json maps
/// are ordered), so equal values give equal keys.
fn params(p: &Value) -> Option<Value> {
    match p.get("params") {
        Some(v @ Value::Object(m)) if !m.is_empty() => Some(v.clone()),
        _ => p.get("cqs").filter(|c| c.is_u64()).map(|c| json!({ "cqs": c })),
    }
}

/// `cqs=2 bytes=4096` for tables.
fn label(params: &Value) -> String {
    params.as_object().into_iter().flatten().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// The comparison: rows, unpaired points and whether anything regressed.
pub fn compare(base: &Value, test: &Value, threshold_pct: f64) -> Value {
    let key = |p: &Value| params(p).map(|v| v.to_string());
    let base_pts: Vec<&Value> = base["points"].as_array().into_iter().flatten().collect();
    let test_pts: Vec<&Value> = test["points"].as_array().into_iter().flatten().collect();
    let mut rows = Vec::new();
    let mut regressions = 0;
    let mut unpaired = Vec::new();
    // In the base report's order, then points only the test report has.
    let mut keys: Vec<String> = Vec::new();
    for k in base_pts.iter().chain(&test_pts).filter_map(|p| key(p)) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut paired = 0;
    for k in keys {
        let b = base_pts.iter().find(|p| key(p).as_ref() == Some(&k));
        let t = test_pts.iter().find(|p| key(p).as_ref() == Some(&k));
        let pv: Value = serde_json::from_str(&k).unwrap_or(Value::Null);
        let (Some(b), Some(t)) = (b, t) else {
            unpaired.push(json!({"params": pv, "only_in": if b.is_some() { "base" } else { "test" }}));
            continue;
        };
        paired += 1;
        for Metric { name, path, better, scale, some_workloads, .. } in METRICS {
            let (bv, tv) = (get(b, path), get(t, path));
            if some_workloads && bv.is_none() && tv.is_none() {
                continue;
            }
            let of = scale.and_then(|s| get(b, s)).filter(|&x| x > 0.0).or(bv.map(f64::abs)).unwrap_or(0.0);
            let (delta_pct, verdict) = match (bv, tv) {
                (Some(bv), Some(tv)) if of != 0.0 => {
                    let d = (tv - bv) / of * 100.0;
                    let worse = if better == Better::Higher { -d } else { d };
                    if worse > threshold_pct {
                        regressions += 1;
                        (Some(d), "REGRESSION")
                    } else if worse < -threshold_pct {
                        (Some(d), "improved")
                    } else {
                        (Some(d), "ok")
                    }
                }
                (Some(bv), Some(tv)) if bv == tv => (Some(0.0), "ok"),
                // From 0: no percentage, but a direction (helper-32: it
                // read "no samples").
                (Some(bv), Some(tv)) if (tv > bv) == (better == Better::Higher) => (None, "improved"),
                (Some(_), Some(_)) => {
                    regressions += 1;
                    (None, "REGRESSION")
                }
                // A figure the base had and the test lost is what a gate
                // must catch (a report stripped of its metrics passed).
                (Some(_), None) => {
                    regressions += 1;
                    (None, "REGRESSION")
                }
                (None, Some(_)) => (None, "new"),
                _ => (None, "no samples"),
            };
            // The verdicts are a closed set (docs/cli.md lists it); a regression
            // by a lost figure says so in its note, not in its verdict.
            let note = (verdict == "REGRESSION" && tv.is_none()).then_some("no samples in the test");
            rows.push(json!({"params": pv, "cqs": b["cqs"], "metric": name, "base": bv, "test": tv,
                             "delta_pct": delta_pct, "verdict": verdict, "note": note}));
        }
    }
    // A point the test run failed on (a hang, a device error: `run --json`
    // keeps the points before it and names it) is a regression whatever
    // the others read (helper-44: it passed as a point "only in base").
    // One the base failed on only says the baseline is short.
    let failed = |v: &Value| (!v["failed_point"].is_null()).then(|| v["failed_point"].clone());
    let test_failed = failed(test);
    if test_failed.is_some() {
        regressions += 1;
    }
    json!({"threshold_pct": threshold_pct, "rows": rows, "unpaired": unpaired, "paired_points": paired,
           "regressions": regressions, "test_failed_point": test_failed, "base_failed_point": failed(base),
           "base_workload": base["workload"], "test_workload": test["workload"]})
}

fn fmt(v: &Value) -> String {
    match v.as_f64() {
        Some(0.0) => "0".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 0.1 => format!("{x:.3}"),
        Some(x) => format!("{x:.3e}"),
        None => "-".into(),
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let (threshold, base, test) = (a.threshold, load("BASE", &a.base)?, load("TEST", &a.test)?);
    for (what, path, v) in [("BASE", &a.base, &base), ("TEST", &a.test, &test)] {
        // `cqlab run` writes schema 1; a later one may mean other things
        // by the same keys.
        let schema = &v["schema"];
        crate::cli::check(schema.is_null() || *schema == 1, || {
            format!("{what} {}: schema {schema}; this cqlab reads schema 1", path.display())
        })?;
    }
    if let (Some(b), Some(t)) = (throughput_unit(&base), throughput_unit(&test)) {
        // A rate in one unit against another is no comparison.
        crate::cli::check(b == t, || format!("throughput in {b} (BASE) against {t} (TEST): nothing to compare"))?;
    }
    if base["workload"] != test["workload"] {
        diagln!("note: comparing different workloads ({} vs {})", base["workload"], test["workload"]);
    }
    for k in ["sync", "knobs", "iters", "warmup", "device", "host"] {
        // A report from before a key existed says nothing of it.
        if base[k] != test[k] && !base[k].is_null() && !test[k].is_null() {
            diagln!("note: {k} differs ({} vs {})", base[k], test[k]);
        }
    }
    // Latency is in each chip's own device cycles: across chips (or
    // clocks) a cycle is not the same time.
    let chip = |v: &Value| {
        let p = &v["points"][0];
        (!p["chip"].is_null())
            .then(|| format!("{} at {:.2} GHz", p["chip"], p["clock_hz"].as_f64().unwrap_or(0.0) / 1e9))
    };
    if let (Some(b), Some(t)) = (chip(&base), chip(&test)) {
        if b != t {
            diagln!("note: chip differs ({b} vs {t}): latency is in each chip's own device cycles");
        }
    }
    let c = compare(&base, &test, threshold);
    if c["paired_points"] == 0 && c["test_failed_point"].is_null() {
        return Err(Usage(format!(
            "no sweep point of {} has the same parameters as one of {}: nothing compared",
            a.base.display(),
            a.test.display()
        ))
        .into());
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        outln!(
            "{} vs {} (threshold {threshold}%; throughput higher is better, latency and switch overhead in device \
             cycles lower is better)",
            a.base.display(),
            a.test.display()
        );
        outln!("{:<16} {:<15} {:>14} {:>14} {:>9}  verdict", "point", "metric", "base", "test", "delta");
        for r in c["rows"].as_array().into_iter().flatten() {
            let d = r["delta_pct"].as_f64().map_or("-".into(), |d| format!("{d:+.1}%"));
            outln!(
                "{:<16} {:<15} {:>14} {:>14} {:>9}  {}",
                label(&r["params"]),
                r["metric"].as_str().unwrap_or(""),
                fmt(&r["base"]),
                fmt(&r["test"]),
                d,
                match r["note"].as_str() {
                    Some(note) => format!("{} ({note})", r["verdict"].as_str().unwrap_or("")),
                    None => r["verdict"].as_str().unwrap_or("").to_owned(),
                }
            );
        }
        for u in c["unpaired"].as_array().into_iter().flatten() {
            outln!("{} only in {}: not compared", label(&u["params"]), u["only_in"].as_str().unwrap_or(""));
        }
        for (which, what) in [("test", "REGRESSION"), ("base", "note")] {
            let f = &c[format!("{which}_failed_point")];
            if !f.is_null() {
                outln!(
                    "cqs={} FAILED in {which} (exit {}): {} [{what}]",
                    f["cqs"],
                    f["exit"],
                    f["error"].as_str().unwrap_or("")
                );
            }
        }
        outln!("{} regression(s) beyond {threshold}%", c["regressions"]);
    }
    Ok(if c["regressions"].as_u64().unwrap_or(0) > 0 { Exit::Failed.into() } else { ExitCode::SUCCESS })
}
