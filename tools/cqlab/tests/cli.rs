//! The CLI's contract with its user (issue 14): every number is checked
//! against its range before anything runs (exit 2, a usage error), output
//! into a closed pipe ends quietly, empty input is an error, and a run says
//! whether its seed matters.

mod support;

use cqlab_abi::encode::Encoder;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{cqlab, cqlab_json, firmware_dir, text, CQLAB};

/// Exit code of a usage error (documented in `cqlab --help`).
const EXIT_USAGE: i32 = 2;

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn every_number_is_checked_before_anything_runs() {
    let cases: &[(&[&str], &str)] = &[
        (&["matmul", "--m", "4294967295"], "not in 1..=1024"),
        (&["matmul", "--m", "60"], "--m 60 is not a multiple of --tile 16"),
        (&["matmul", "--tile", "0"], "not in 4..=16"),
        (&["matmul", "--strategy", "bogus"], "invalid value 'bogus' for '--strategy"),
        (&["perf", "--programs", "4294967295"], "not in 1..=1000000"),
        (&["perf", "--programs", "0"], "not in 1..=1000000"),
        (&["perf", "--args", "257"], "not in 0..=256"),
        (&["demo", "--rounds", "4294967295"], "not in 1..=10000"),
        (&["demo", "--stall-timeout", "1000"], "1000 is below 1000000"),
        (&["demo", "--kernel-timeout", "1"], "0 (no limit) or at least 1000000"),
        (&["demo", "--noc-jitter", "5", "--device", "sim:/nonexistent"], "--noc-jitter applies to the embedded"),
        (&["demo", "--device", "bogus"], "unknown device"),
        (&["run", "copy_stress", "--iters", "0"], "not in 1..=1000000"),
        (&["run", "bogus"], "unknown workload"),
        (&["run", "copy_stress", "--kernel-timeout", "5"], "0 (no limit) or at least 1000000"),
        (&["driver-bench", "--stall-timeout", "10"], "10 is below 1000000"),
        (&["sim", "serve", "--dev", "/nonexistent/x", "--sysmem-mib", "0"], "not in 3..=4096"),
        (&["sim", "serve", "--dev", "/nonexistent/x", "--chip", "x"], "unknown chip"),
        (&["sim", "ttkmd", "--dev", "/nonexistent/x", "--sysmem-mib", "0"], "not in 4..=4096"),
        (&["sim", "ttkmd", "--dev", "/nonexistent/x", "--harvest", "rows=99"], "no Tensix row 99"),
        (&["sim", "bar", "--dev", "/x", "--worker", "0,0", "--addr", "0", "--write", "0x100000000"], "32 bits"),
        (&["sim", "bar", "--dev", "/x", "--worker", "0,0", "--addr", "0", "--hold", "inf"], "0..=3600"),
        (&["sim", "client-job", "--dev", "/x", "--bytes", "0"], "multiple of 16"),
        (&["bench", "dispatch", "--programs", "0"], "not in 1..=100000"),
        (&["bench", "dispatch", "--programs", "4294967295"], "not in 1..=100000"),
        (&["bench", "dispatch", "--axis", "bogus"], "invalid value 'bogus'"),
    ];
    for (args, expect) in cases {
        let t = Instant::now();
        let o = cqlab(args);
        assert_eq!(o.status.code(), Some(EXIT_USAGE), "{args:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(expect), "{args:?}: expected {expect:?}: {}", text(&o));
        assert!(o.stdout.is_empty(), "{args:?} ran something: {}", text(&o));
        // Refused up front, not after a run or an allocation.
        assert!(t.elapsed() < Duration::from_secs(5), "{args:?} took {:?}", t.elapsed());
    }
    let help = cqlab(&["--help"]);
    assert!(String::from_utf8_lossy(&help.stdout).contains("2 usage error"), "{}", text(&help));
}

#[test]
fn decode_of_an_empty_file_is_an_error() {
    let o = cqlab(&["decode", scratch("empty.bin", &[]).to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is empty"), "{}", text(&o));
}

#[test]
fn decode_into_a_closed_pipe_exits_quietly() {
    // `cqlab decode FILE | head -1`: many lines, the reader leaves after one.
    let mut buf = vec![0u8; 1 << 20];
    let mut enc = Encoder::new(&mut buf);
    while enc.stall().is_ok() {}
    let n = enc.len();
    buf.truncate(n);
    let path = scratch("many.bin", &buf);
    let mut child = Command::new(CQLAB)
        .args(["decode", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("STALL"), "{first}");
    // The reader is gone (its end dropped above); the writer must notice.
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && !err.contains("panicked") && err.is_empty(), "{}", text(&o));
}

/// Device cycles of every row of a one-round demo, and its seed note (the
/// JSON's seed and chip are values, its note prose).
fn demo_cycles(args: &[&str]) -> (Vec<u64>, String) {
    let mut all = vec!["demo", "--rounds", "1", "--json"];
    all.extend_from_slice(args);
    let o = cqlab(&all);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("demo --json is JSON");
    let rows = v["rows"].as_array().expect("rows").iter().map(|r| r["device_cycles"].as_u64().unwrap()).collect();
    let seed = args.iter().position(|a| *a == "--seed").map_or(1, |i| args[i + 1].parse().unwrap());
    let device = args.iter().position(|a| *a == "--device").map(|i| args[i + 1]);
    // A spec's own seed=, else the --seed (all these specs are embedded).
    let spec_seed = device.and_then(|d| d.split(['=', ',']).nth(1)).map(|s| s.parse().unwrap());
    assert_eq!(v["seed"].as_u64(), Some(spec_seed.unwrap_or(seed)), "{v}");
    assert_eq!((v["chip"].as_str(), v["grid"][0].as_u64()), (Some("wormhole-n150"), Some(8)), "{v}");
    (rows, v["seed_note"].as_str().expect("a seed note").to_owned())
}

#[test]
fn demo_says_whether_its_seed_matters() {
    let (a, note) = demo_cycles(&["--seed", "1"]);
    let (b, _) = demo_cycles(&["--seed", "2"]);
    assert_eq!(a, b, "without jitter the seed does not change the run");
    assert!(note.contains("every seed gives these figures") && note.contains("--noc-jitter"), "{note}");
    let runs: Vec<_> = ["1", "2", "3"].iter().map(|s| demo_cycles(&["--seed", s, "--noc-jitter", "500"])).collect();
    assert!(runs.iter().any(|r| r.0 != runs[0].0), "with jitter, seeds 1..=3 all gave {:?}", runs[0].0);
    assert!(runs[0].1.contains("seed 1 with NOC/PCIe jitter 0..=500"), "{}", runs[0].1);
    // A spec's own seed and model take the jitter too (it was refused,
    // "applies to the embedded simulator", of an embedded spec).
    let spec = |jitter: &str| demo_cycles(&["--device", "embedded:seed=7,exact", "--noc-jitter", jitter]);
    let (still, jittered) = (spec("0"), spec("500"));
    assert_ne!(still.0, jittered.0, "jitter changed nothing on embedded:seed=7,exact");
    assert!(jittered.1.contains("seed 7 with NOC/PCIe jitter 0..=500"), "{}", jittered.1);
}

/// A demo that fails still writes its `--json` record: the rows that ran,
/// and where and how it failed, in `run`'s `failed_point` fields (it wrote
/// nothing). A known-bug dispatcher that never toggles its completion
/// records fails the first read-back with a device error (exit 4).
#[test]
fn a_failing_demo_writes_a_json_failure_record() {
    let root = support::scratch("demo-bad-dispatch");
    std::fs::create_dir_all(root.join("wormhole")).unwrap();
    for e in std::fs::read_dir(firmware_dir().join("wormhole")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), root.join("wormhole").join(e.file_name())).unwrap();
        }
    }
    let variant = firmware_dir().join("wormhole/variants/completion-no-toggle/dispatch");
    std::fs::copy(variant, root.join("wormhole/dispatch")).unwrap();
    let o = Command::new(CQLAB)
        .args(["demo", "--rounds", "2", "--json"])
        .env("CQLAB_FIRMWARE_DIR", &root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(support::EXIT_DEVICE_ERROR), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: CQ1 wait CQ0 event") && err.contains("wait-for chain"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    let failed = &v["failed"];
    assert_eq!((failed["round"].as_u64(), failed["exit"].as_u64()), (Some(0), Some(4)), "{v}");
    assert_eq!(failed["operation"], "CQ1 wait CQ0 event, read back (all run)", "{v}");
    assert_eq!((&failed["kind"], &failed["core"]["role"]), (&"device-error".into(), &"CQ1 dispatcher".into()), "{v}");
    assert!(failed["error"].as_str().is_some_and(|e| e.contains("corrupt completion record") && !e.contains('\n')));
    assert!(failed["dump"]["chain"].as_array().is_some_and(|c| !c.is_empty()), "{v}");
    // The rows before it, and the chip it ran on.
    let ran: Vec<_> = v["rows"].as_array().unwrap().iter().map(|r| r["operation"].as_str().unwrap()).collect();
    assert_eq!(ran[0], "boot (2 CQs + workers)", "{v}");
    assert_eq!((v["chip"].as_str(), v["verified_bytes"].as_u64()), (Some("wormhole-n150"), Some(0)), "{v}");
    // A demo that passes says so in the same field.
    let o = cqlab(&["demo", "--rounds", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
    assert_eq!((o.status.code(), &v["failed"]), (Some(0), &serde_json::Value::Null), "{v}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_kernel_longer_than_the_stall_timeout_is_not_a_hang() {
    // Issue 14: `matmul --m 128 --n 128 --k 128` failed with "timeout ...
    // without progress" while the worker still ran its kernel (about 378 M
    // cycles with no trace record, past the 200 M stall timeout). The same
    // ratio at a twentieth of the cost: a 22 M-cycle kernel against the
    // smallest stall timeout (1 M). One order keeps the test short.
    let o = Command::new(CQLAB)
        .args(["matmul", "--m", "64", "--n", "64", "--k", "32", "--strategy", "os", "--stall-timeout", "1000000"])
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("result verified bit for bit"), "{}", text(&o));
}

/// `bench dispatch --json` gives one row per point with the keys scripts
/// read (issue 10), the device figures from the simulator and host figures
/// from this process; a replay of the same programs costs the device less.
#[test]
fn bench_dispatch_json_rows_carry_the_documented_keys() {
    let (code, v) = cqlab_json(&["bench", "dispatch", "--axis", "cqs", "--programs", "16"]);
    assert_eq!(code, 0, "{v}");
    let rows = v["rows"].as_array().expect("rows");
    // The base point, untraced and traced, then the axis's own points.
    assert_eq!(rows.len(), 4, "{v}");
    let keys = [
        "cores",
        "kernel_bytes",
        "cached",
        "unique_args",
        "common_args",
        "trace",
        "kernel_cycles",
        "cqs",
        "device_cycles_per_program",
        "host_enqueue_us_per_program",
        "host_seconds",
        "processors",
        "kernels",
        "exact_time",
        "pipelined_loads",
        "link_contention",
        "icache",
        "l0_cache",
        "reads_pass_unsent",
    ];
    for row in rows {
        for key in keys {
            assert!(!row[key].is_null(), "row without {key}: {row}");
        }
        assert_eq!(row["cores"].as_u64(), Some(64), "{row}");
        assert!(row["device_cycles_per_program"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["host_enqueue_us_per_program"].as_f64().unwrap() > 0.0, "{row}");
        // tt-metal publishes a golden for one CQ's points, none for two.
        let one_cq = row["cqs"] == 1;
        assert_eq!(row["golden_us"].is_number(), one_cq, "{row}");
        if one_cq {
            let (us, golden) = (row["us_per_program"].as_f64().unwrap(), row["golden_us"].as_f64().unwrap());
            let ratio = row["ratio"].as_f64().unwrap();
            assert!((ratio - us / golden).abs() < 1e-9, "{row}");
            // The case, its file and its CI environment, each a field alone.
            let case = row["golden_case"].as_str().unwrap();
            assert!(case.starts_with("BM_pgm_dispatch/all_processors_all_cores"), "{row}");
            assert!(case.ends_with("/manual_time"), "the case name alone: {row}");
            let file = if row["trace"] == true { "pgm_dispatch.json" } else { "pgm_dispatch_no_trace.json" };
            assert_eq!(row["golden_file"], file, "{row}");
            assert_eq!(row["golden_environment"], "wh_n300_perf", "{row}");
        } else {
            for key in ["ratio", "golden_case", "golden_file", "golden_environment"] {
                assert!(row[key].is_null(), "{key}: {row}");
            }
        }
        // Present on every row, null where the golden notes nothing.
        let note = row.as_object().unwrap().get("golden_note");
        assert!(note.is_some_and(|n| n.is_null() || n.is_string()), "golden_note: {row}");
    }
    let cycles = |trace: bool| {
        let row = rows.iter().find(|r| r["trace"] == trace && r["cqs"] == 2).expect("both modes on 2 CQs");
        row["device_cycles_per_program"].as_f64().unwrap()
    };
    assert!(cycles(true) < cycles(false), "traced {} untraced {}", cycles(true), cycles(false));
}

/// `sim bench --json` gives every loop and every chip scenario with the
/// figures the tables print, so builds can be compared by script: the
/// guest loops ran their instructions, and every scenario ran its device
/// cycles and made round trips.
#[test]
fn sim_bench_json_gives_every_loop_and_scenario() {
    let (code, v) = cqlab_json(&["sim", "bench", "--iters", "1000", "--chip-cycles", "20000"]);
    assert_eq!(code, 0, "{v}");
    let loops = v["loops"].as_array().expect("loops");
    assert_eq!(loops.iter().map(|l| l["name"].as_str().unwrap()).collect::<Vec<_>>(), ["alu", "mem"], "{v}");
    for l in loops {
        assert!(l["guest_instrs"].as_u64().unwrap() >= 7000, "{l}");
        assert!(l["sim_mips"].as_f64().unwrap() > 0.0 && l["native_mips"].as_f64().unwrap() > 0.0, "{l}");
    }
    let chip = &v["chip"];
    assert_eq!(chip["board"], "wormhole-n150", "{v}");
    let scenarios = chip["scenarios"].as_array().expect("scenarios");
    assert_eq!(scenarios.len(), 8, "{v}");
    for s in scenarios {
        assert_eq!(s["device_cycles"].as_u64(), Some(20_000), "{s}");
        assert!(s["round_trips"].as_u64().unwrap() > 10, "{s}");
        assert!(s["device_mcycles_per_s"].as_f64().unwrap() > 0.0, "{s}");
        let pollers = s["polling_brisc"].as_u64().unwrap();
        assert!(pollers == 0 || pollers == chip["tiles"].as_u64().unwrap() - 2, "{s}");
    }
    assert!(chip["memory"]["rss_filled"].as_u64().unwrap() > chip["memory"]["rss_booted"].as_u64().unwrap(), "{v}");
}

/// `sim bench --quantum Q` runs the chip at another slice and says so: the
/// sliced ping-pong's hand-offs round to the longer slice (fewer round
/// trips), the exact-time rows do not move (their slices end at the
/// lookahead either way), and each row gives the host time per round trip.
#[test]
fn sim_bench_runs_the_chip_at_the_slice_asked_for() {
    let scenarios = |extra: &[&str]| {
        let mut argv = vec!["sim", "bench", "--iters", "1000", "--chip-cycles", "20000"];
        argv.extend(extra);
        let (code, v) = cqlab_json(&argv);
        assert_eq!(code, 0, "{v}");
        (v["chip"]["quantum_cycles"].as_u64(), v["chip"]["scenarios"].as_array().expect("scenarios").clone())
    };
    let (q50, default) = scenarios(&[]);
    let (q200, long) = scenarios(&["--quantum", "200"]);
    assert_eq!((q50, q200), (Some(50), Some(200)));
    for (d, l) in default.iter().zip(&long) {
        let trips = |s: &serde_json::Value| s["round_trips"].as_u64().unwrap();
        if d["exact_time"] == true {
            assert_eq!(trips(d), trips(l), "{d} against {l}");
        } else {
            assert!(trips(l) < trips(d), "{d} against {l}");
        }
        assert!(l["host_ns_per_round_trip"].as_f64().unwrap() > 0.0, "{l}");
    }
}

/// `bench dispatch --axis base --programs PROGRAMS EXTRA --json`'s rows
/// (untraced and traced), the command having succeeded.
fn base_point_rows_of(programs: u32, extra: &[&str]) -> Vec<serde_json::Value> {
    let programs = programs.to_string();
    let mut argv = vec!["bench", "dispatch", "--axis", "base", "--programs", &programs];
    argv.extend(extra);
    let (code, v) = cqlab_json(&argv);
    assert_eq!(code, 0, "{v}");
    v["rows"].as_array().expect("rows").clone()
}

/// `cqlab ... 2>&1 | head -1` and `2>/dev/full`: notes, warnings and
/// progress go to stderr, and a stderr that cannot take them must not end
/// the run (`bench dispatch` and `race` panicked with 101).
#[test]
fn runs_with_stderr_closed_or_full_still_report() {
    let cases: [(&[&str], &str); 2] = [
        (&["bench", "dispatch", "--axis", "base", "--programs", "4"], "cycles/prog"),
        (&["race", "--seeds", "2", "--jobs", "1"], "0 of 2 runs failed"),
    ];
    for (argv, says) in cases {
        let mut child = Command::new(CQLAB).args(argv).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        drop(child.stderr.take());
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains(says), "{argv:?}: {}", text(&o));
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let o = Command::new(CQLAB).args(argv).stderr(full).output().unwrap();
        assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains(says), "{argv:?}: {}", text(&o));
    }
}

/// The base point's rows with model option `field` off (flags `off`) and
/// on (flags `on`), each row's `field` saying which: cycles a program,
/// (off, on), row by row. BRISC
/// alone: with five kernels a core an option's delays can reorder the
/// cores' arrivals so that a point comes out a cycle cheaper (link
/// contention over 8 programs: 1,286.6 -> 1,286.0), which says nothing
/// about the option.
fn base_point_cycles_between(programs: u32, off: &[&str], on: &[&str], field: &str) -> Vec<(f64, f64)> {
    let (off, on) = (
        base_point_rows_of(programs, &[&["--brisc-only"][..], off].concat()),
        base_point_rows_of(programs, &[&["--brisc-only"][..], on].concat()),
    );
    assert_eq!(off.len(), on.len());
    let cycles = |r: &serde_json::Value| r["device_cycles_per_program"].as_f64().unwrap();
    let pair = |(a, b): (&serde_json::Value, &serde_json::Value)| {
        assert_eq!((a[field].as_bool(), b[field].as_bool()), (Some(false), Some(true)), "{field}");
        (cycles(a), cycles(b))
    };
    off.iter().zip(&on).map(pair).collect()
}

/// `bench dispatch` runs each program's kernels on all five processors of
/// every core as tt-metal's cases create them, three kernels (BRISC,
/// NCRISC, a compute kernel on the TRISCs), and every row says so (that
/// they run with their own args: `tests/tests/programs.rs`); `--brisc-only`
/// on BRISC alone, and so does the slow-kernel axis, as tt-metal's
/// slow-kernel cases do. `--all-processors` (the default) is still taken.
#[test]
fn bench_dispatch_runs_three_kernels_on_five_processors_unless_told_and_says_so_in_every_row() {
    for (extra, processors, kernels) in
        [(&[][..], 5, 3), (&["--all-processors"][..], 5, 3), (&["--brisc-only"][..], 1, 1)]
    {
        // Two programs: the rows' fields are what is checked, not cycles.
        let rows = base_point_rows_of(2, extra);
        assert_eq!(rows.len(), 2, "traced and untraced");
        for r in rows {
            assert_eq!((&r["processors"], &r["kernels"]), (&processors.into(), &kernels.into()), "{extra:?}: {r}");
        }
    }
    let (code, v) = cqlab_json(&["bench", "dispatch", "--axis", "kernel_cycles", "--programs", "2"]);
    assert_eq!(code, 0, "{v}");
    let slow: Vec<_> = v["rows"].as_array().expect("rows").iter().filter(|r| r["kernel_cycles"] != 0).collect();
    assert!(!slow.is_empty(), "{v}");
    for r in slow {
        assert_eq!((&r["processors"], &r["kernels"]), (&1.into(), &1.into()), "the slow kernel on BRISC alone: {r}");
    }
    let out = cqlab(&["bench", "dispatch", "--all-processors", "--brisc-only"]);
    assert_eq!(out.status.code(), Some(2), "the two conflict");
}

/// Pipelined L1 loads, the default: the firmware's loads overlap with what
/// follows them, so every point costs fewer cycles than with
/// `--blocking-loads`, and rows say which ran. `--pipelined-loads` (kept for
/// older command lines) runs the default.
#[test]
fn pipelined_loads_make_dispatch_cheaper() {
    let rows = |extra: &[&str]| base_point_rows_of(8, &[&["--brisc-only"], extra].concat());
    let (blocking, pipelined, flagged) = (rows(&["--blocking-loads"]), rows(&[]), rows(&["--pipelined-loads"]));
    assert_eq!(blocking.len(), pipelined.len());
    let cycles = |r: &serde_json::Value| r["device_cycles_per_program"].as_f64().unwrap();
    for ((b, p), f) in blocking.iter().zip(&pipelined).zip(&flagged) {
        assert_eq!((b["pipelined_loads"].as_bool(), p["pipelined_loads"].as_bool()), (Some(false), Some(true)));
        assert!(cycles(p) < cycles(b), "pipelined {} cycles a program, blocking {}", cycles(p), cycles(b));
        assert_eq!(cycles(f), cycles(p), "--pipelined-loads is the default");
    }
    let out = cqlab(&["bench", "dispatch", "--pipelined-loads", "--blocking-loads"]);
    assert_eq!(out.status.code(), Some(2), "the two conflict");
}

/// `bench dispatch --icache`: the firmware's code does not fit the cores'
/// instruction caches, so the base point costs more cycles, and rows say
/// so. (Not every point: with 128 unique args a slower core can lose less
/// time to waits, docs/performance.md.)
#[test]
fn instruction_caches_make_dispatch_cost_more() {
    for (u, c) in base_point_cycles_between(8, &[], &["--icache"], "icache") {
        assert!(c > u, "with caches {c} cycles a program, without {u}");
    }
}

/// Link contention (the default since 2026-11-30; `bench dispatch
/// --no-link-contention` runs without): packets queue for the links between
/// routers, so the base point costs more, and rows say so. Not by a cycle
/// a program on every row of a short run: a packet held at a link shifts
/// when a polling core next sees the packets after it, either way. Over 8
/// programs both rows read 1.1 cycles a program less with contention (the
/// dispatcher of 2c1e0d4 on; 1.0 on ef8441b's), over 9 and 16 one row did,
/// by less; over 32 both read more (1.3 and 7.8), which is the run this
/// test takes.
#[test]
fn link_contention_costs_cycles_and_saves_none_beyond_a_cycle() {
    let rows = base_point_cycles_between(32, &["--no-link-contention"], &[], "link_contention");
    for &(f, s) in &rows {
        assert!(s >= f - 1.0, "with contention {s} cycles a program, without {f}");
    }
    assert!(rows.iter().any(|&(f, s)| s > f), "contention changed nothing: {rows:?}");
}

/// `calibrate` on each chip's default model: every built-in figure within
/// 0.85-1.15 of its published value (issue 27's bar), packet sizes from
/// 32 B to 16 KiB and DRAM from every bank at once included. The JSON is
/// one object naming the chip and the seed every benchmark ran on (it was
/// a bare array of rows, without the seed), the text header the same seed.
#[test]
fn calibrate_holds_every_listed_figure_on_both_chips() {
    for chip in ["wormhole-n150", "blackhole-p150a"] {
        let (code, v) = cqlab_json(&["calibrate", "--chip", chip]);
        assert_eq!(code, 0, "{v}");
        assert_eq!((v["chip"].as_str(), v["seed"].as_u64()), (Some(chip), Some(0)), "{v}");
        let rows = v["rows"].as_array().expect("rows");
        assert!(rows.len() >= 12, "{chip}: {} figures", rows.len());
        for row in rows {
            assert_eq!(row["calibrated"], true, "{chip}: {row}");
        }
        let benches: Vec<&str> = rows.iter().filter_map(|r| r["bench"].as_str()).collect();
        assert!(benches.iter().filter(|b| **b == "one-to-one").count() >= 4, "{chip}: {benches:?}");
    }
}

/// `calibrate --figures FILE`: a user's own figures, here through a pipe
/// (read once), are run and judged like the built-in ones; a figure the
/// benchmark cannot take is a usage error (exit 2) naming it.
#[test]
fn calibrate_takes_a_users_figures_through_a_pipe() {
    let run = |figures: &str| {
        use std::io::Write;
        let mut child = Command::new(CQLAB)
            .env("CQLAB_FIRMWARE_DIR", firmware_dir())
            .args(["calibrate", "--figures", "/dev/stdin", "--json"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(figures.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let figure = |bytes: u32| {
        format!(
            r#"{{"figures": [{{"name": "my card", "arch": "wormhole", "bench": "dram-read-all-banks",
               "bytes": {bytes}, "count": 16, "published": 250, "unit": "GB/s", "source": "my bench"}}]}}"#
        )
    };
    let o = run(&figure(8192));
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = &report["rows"];
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!((rows[0]["name"].as_str(), rows[0]["unit"].as_str()), (Some("my card"), Some("GB/s")));
    let o = run(&figure(3));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("figure 1 (my card): 3 bytes"), "{}", text(&o));
}

/// `calibrate --no-link-contention` (the model before link contention
/// became the default): every built-in figure stays within tolerance, and
/// the header says the option was given. `--link-contention`, the
/// default, is still taken, not with it.
#[test]
fn calibrate_without_link_contention_stays_calibrated() {
    let o = cqlab(&["calibrate", "--no-link-contention"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no link contention") && out.contains("25 of 25 within"), "{out}");
    assert!(out.contains("(seed 0, one run each"), "the header names the seed --json gives: {out}");
    let o = cqlab(&["calibrate", "--link-contention"]);
    assert!(o.status.success() && !String::from_utf8_lossy(&o.stdout).contains("no link contention"), "{}", text(&o));
    let o = cqlab(&["calibrate", "--link-contention", "--no-link-contention"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// `calibrate` takes the timing-model options `bench dispatch` takes, and
/// runs them: with `--icache` every JSON row says so and the figures move
/// (the read round trip pays its cold misses), while `--blocking-loads`
/// and `--pipelined-loads` (the default, still taken) exclude each other.
#[test]
fn calibrate_runs_the_timing_model_options_of_bench_dispatch() {
    let (code, default) = cqlab_json(&["calibrate"]);
    assert_eq!(code, 0, "{default}");
    let (code, cached) = cqlab_json(&["calibrate", "--icache"]);
    assert_eq!(code, 0, "{cached}");
    let (default, cached) = (default["rows"].as_array().expect("rows"), cached["rows"].as_array().expect("rows"));
    assert_eq!(default.len(), cached.len());
    assert!(default.iter().all(|r| r["icache"] == false && r["pipelined_loads"] == true), "{default:?}");
    assert!(cached.iter().all(|r| r["icache"] == true), "{cached:?}");
    let moved = default.iter().zip(cached).filter(|(d, c)| d["model"] != c["model"]).count();
    assert!(moved > 0, "--icache changed no figure");
    let o = cqlab(&["calibrate", "--blocking-loads", "--pipelined-loads"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// `bench dispatch --profile`: per point, each profiled core's device time
/// by firmware function, named from the core's ELF symbols; every profiled
/// core's cycles add up to the same sampled time, which covers the point's
/// timed run.
#[test]
fn bench_dispatch_profiles_name_firmware_functions() {
    let (code, v) =
        cqlab_json(&["bench", "dispatch", "--axis", "base", "--programs", "40", "--profile", "prefetcher0,worker0.0"]);
    assert_eq!(code, 0, "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert!(!rows.is_empty(), "no rows: {v}");
    for row in rows {
        let profile = row["profile"].as_array().unwrap_or_else(|| panic!("no profile: {row}"));
        let cycles = |core: &str| -> u64 {
            profile.iter().filter(|f| f["name"] == core).map(|f| f["cycles"].as_u64().unwrap()).sum()
        };
        let (pf, w) = (cycles("prefetcher0"), cycles("worker0.0"));
        assert_eq!(pf, w, "both cores were sampled over the same time: {row}");
        let timed = row["device_cycles_per_program"].as_f64().unwrap() * row["programs"].as_f64().unwrap();
        assert!(pf as f64 >= timed && (pf as f64) < timed + 20_000.0, "sampled {pf} cycles, timed {timed}: {row}");
        assert!(profile.iter().all(|f| f["cycles"].as_u64().unwrap() > 0), "{row}");
        // Each names its core `{"x", "y"}` beside the name `--profile` gave,
        // one core a name.
        let at = |name: &str| -> Vec<&serde_json::Value> {
            profile.iter().filter(|f| f["name"] == name).map(|f| &f["core"]).collect()
        };
        for name in ["prefetcher0", "worker0.0"] {
            let cores = at(name);
            assert!(cores.iter().all(|c| c["x"].is_u64() && c["y"].is_u64() && *c == cores[0]), "{name}: {row}");
        }
        assert_ne!(at("prefetcher0")[0], at("worker0.0")[0], "{row}");
        let named = |core: &str, part: &str| {
            profile.iter().any(|f| f["name"] == core && f["function"].as_str().unwrap().contains(part))
        };
        assert!(named("prefetcher0", "Prefetcher"), "the prefetcher's own functions: {row}");
        assert!(named("worker0.0", "worker::"), "the worker firmware's functions: {row}");
    }
    for (spec, named) in [("prefetcher0,bogus", "bogus"), ("prefetcher5", "prefetcher5"), ("worker12.3", "worker12.3")]
    {
        let out = cqlab(&["bench", "dispatch", "--axis", "base", "--profile", spec]);
        assert_eq!(out.status.code(), Some(2), "{spec}: {}", text(&out));
        assert!(String::from_utf8_lossy(&out.stderr).contains(named), "{spec}: {}", text(&out));
    }
}

// ---- Results that were wrong (issue 24) ----------------------------------

use support::Daemon;

/// `perf` on a daemon names that device, and says why its slow-dispatch
/// row is missing.
#[test]
fn perf_on_a_daemon_says_which_device_and_why_a_row_is_missing() {
    let d = Daemon::start("perf", &[], Stdio::null());
    let o = cqlab(&["perf", "--programs", "4", "--device", &d.spec()]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("device {}", d.spec())) && !out.contains("embedded simulator"), "{out}");
    assert!(out.contains("no slow-dispatch row"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("slow ")), "{out}");
    // A daemon's device time cannot be told from the host's.
    assert!(out.contains("host enqueue n/a: this device cannot tell"), "{out}");
    // Its sysmem is the daemon's: this process has no pages to name.
    assert!(!out.contains("host sysmem"), "{out}");
}

/// Which pages the sysmem got (huge or normal) matters to host time alone:
/// a command on a simulator says nothing of it (every command printed
/// "cqlab: sysmem in normal pages ..." on stderr), and `perf`, which
/// measures host time, says it in its table and its JSON.
#[test]
fn only_reports_of_host_time_say_which_pages_the_sysmem_got() {
    for args in [&["demo", "--rounds", "1"][..], &["race", "--seeds", "1", "--iterations", "2"]] {
        let o = cqlab(&[args, &support::SMALL_WORMHOLE].concat());
        assert!(o.status.success(), "{}", text(&o));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("sysmem"), "{args:?}: {}", text(&o));
    }
    let perf = [&["perf", "--programs", "4"][..], &support::SMALL_WORMHOLE].concat();
    let o = cqlab(&perf);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("sysmem"), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out.lines().find(|l| l.starts_with("host sysmem: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with(" pages") || line.ends_with("(no huge pages available)"), "{line}");
    let (code, v) = cqlab_json(&perf);
    assert_eq!(code, 0, "{v}");
    let pages = v["sysmem_pages"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(["huge-1g", "huge-2m", "normal"].contains(&pages), "{v}");
    assert_eq!(pages == "normal", line.contains("normal pages"), "{line} {v}");
}

/// `perf`'s host enqueue time is `bench dispatch`'s (`host_time`: batches
/// that fit the queues, a batch in which the host waited refused, so no
/// simulated device time counts as host time; a fixed batch of 100 did once
/// the queues filled: 6.6 us a program at 10 programs, 356 at 16). Here:
/// 16 programs, where the old batch waited, report a host time for fast
/// dispatch (a waiting batch would fail the command), none for slow, whose
/// host waits for the device by design.
#[test]
fn perf_reports_host_time_for_fast_dispatch_and_none_for_slow() {
    for programs in ["16"] {
        let o = cqlab(&["perf", "--programs", programs, "--json"]);
        assert!(o.status.success(), "{programs}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for row in v["dispatch"].as_array().unwrap() {
            let host = &row["host_enqueue_us_per_program"];
            if row["dispatch"] == "slow" {
                assert!(host.is_null(), "{row}");
            } else {
                assert!(host.as_f64().is_some_and(|us| us > 0.0), "{row}");
            }
        }
    }
}

/// Every embedded spec is the embedded simulator, not only the bare word
/// (helper-53: `embedded:seed=1` lost its slow-dispatch row and said its
/// host time could not be told): `embedded:seed=1` measures what `embedded`
/// does at seed 1, its slow row too.
#[test]
fn perf_on_any_embedded_spec_has_its_slow_dispatch_row() {
    let rows = |device: &str| {
        let (code, v) =
            cqlab_json(&[&["perf", "--programs", "4", "--device", device][..], &support::SMALL_WORMHOLE].concat());
        assert_eq!((code, &v["slow_dispatch_row"]), (0, &serde_json::json!(true)), "{device}: {v}");
        let rows = v["dispatch"].as_array().unwrap().iter();
        rows.map(|r| (r["dispatch"].to_string(), r["trace"].to_string(), r["device_cycles_per_program"].to_string()))
            .collect::<Vec<_>>()
    };
    let plain = rows("embedded");
    assert_eq!(plain.len(), 3, "{plain:?}");
    assert_eq!(rows("embedded:seed=1"), plain, "the same seed and model");
    let o =
        cqlab(&[&["perf", "--programs", "4", "--device", "embedded:seed=1"][..], &support::SMALL_WORMHOLE].concat());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().any(|l| l.starts_with("slow ")), "{out}");
    assert!(!out.contains("cannot tell") && !out.contains("no slow-dispatch row"), "{out}");
}

/// An embedded spec that names no seed runs on `--seed`, as in `run`
/// (helper-55: `embedded:exact` ran on seed 0 while the report said
/// `--seed`'s): the same device time as `embedded:seed=N,exact`, and
/// another than another seed's.
#[test]
fn an_embedded_spec_without_a_seed_runs_on_the_commands_seed() {
    let demo = |device: &str, seed: &str| {
        let (code, v) =
            cqlab_json(&["demo", "--rounds", "2", "--noc-jitter", "500", "--device", device, "--seed", seed]);
        assert_eq!(code, 0, "{device}: {v}");
        (v["seed"].as_u64().unwrap(), v["device_cycles"].as_u64().unwrap())
    };
    let (seed, cycles) = demo("embedded:exact", "7");
    assert_eq!(seed, 7);
    assert_eq!(demo("embedded:seed=7,exact", "1"), (7, cycles), "the spec's seed=7 and --seed 7 alike");
    // The demo's device time moves in steps of the host's polls, so two
    // seeds may meet (7 and 8 did): one of three others must differ.
    let others: Vec<u64> = ["8", "9", "10"].iter().map(|s| demo("embedded:exact", s).1).collect();
    assert!(others.iter().any(|&c| c != cycles), "--seed makes the jitter's draws: {cycles} and {others:?}");
}

/// The traced row replays whole 100-program traces, so `--programs 101`
/// measures 200 there: each row says how many it ran (helper-53: all said
/// 101).
#[test]
fn perf_says_how_many_programs_each_row_ran() {
    let args = [&["perf", "--programs", "101"][..], &support::SMALL_WORMHOLE].concat();
    let (code, v) = cqlab_json(&args);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["programs"], 101, "the count asked for");
    let ran: Vec<(bool, u64)> = v["dispatch"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["trace"].as_bool().unwrap(), r["programs"].as_u64().unwrap()))
        .collect();
    assert_eq!(ran, [(false, 101), (true, 200), (false, 101)]);
    let out = String::from_utf8_lossy(&cqlab(&args).stdout).into_owned();
    assert!(out.contains("(the traced row replays whole 100-program traces: 200 programs)"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("fast ") && l.split_whitespace().nth(2) == Some("200")), "{out}");
}

/// The prefetcher's table has EXEC_BUF (helper-97: `perf` paired each end
/// with the last start only, so EXEC_BUF, which stays open around the
/// commands it replays, never closed and was left out; `perf --programs 1`
/// listed 94 EXEC_BUF_END and no EXEC_BUF). Each replay ends EXEC_BUF_END
/// then EXEC_BUF, so they count alike, but for the oldest replay the ring
/// still holds, whose EXEC_BUF start it may have lapped. EXEC_BUF's cycles
/// run around its EXEC_BUF_END's.
#[test]
fn perf_counts_exec_buf_as_often_as_exec_buf_end() {
    let (code, v) = cqlab_json(&["perf", "--programs", "1"]);
    assert_eq!(code, 0, "{v}");
    let row = |name: &str| {
        let rows = v["prefetch_commands"].as_array().unwrap();
        let r = rows.iter().find(|r| r["command"] == name).unwrap_or_else(|| panic!("no {name}: {v}"));
        (r["count"].as_u64().unwrap(), r["min_cycles"].as_u64().unwrap(), r["max_cycles"].as_u64().unwrap())
    };
    let (exec_buf, end) = (row("EXEC_BUF"), row("EXEC_BUF_END"));
    assert!(exec_buf.0 > 0 && (exec_buf.0 == end.0 || exec_buf.0 + 1 == end.0), "{exec_buf:?} {end:?}");
    assert!(exec_buf.1 > end.2, "EXEC_BUF {exec_buf:?} holds EXEC_BUF_END {end:?}");
}

/// A product that differs from the host reference is exit 5, as a `run`
/// that fails validation (helper-53: `matmul` exited 1): a firmware root
/// whose `matmul` kernel is the noop one leaves C unwritten.
#[test]
fn a_matmul_that_differs_from_the_host_exits_5() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("noop-matmul-root");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("wormhole")).unwrap();
    for e in std::fs::read_dir(firmware_dir().join("wormhole")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), root.join("wormhole").join(e.file_name())).unwrap();
        }
    }
    std::fs::copy(root.join("wormhole/noop"), root.join("wormhole/matmul")).unwrap();
    let o = Command::new(CQLAB)
        .args(["matmul", "--m", "16", "--n", "16", "--k", "16", "--strategy", "os"])
        .env("CQLAB_FIRMWARE_DIR", &root)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("os: 256 of 256 elements of C differ from the host reference"), "{}", text(&o));
}

/// A device another process holds stops a stress campaign with the holder
/// named; it is not counted as a failed run.
#[test]
fn a_held_device_stops_stress_instead_of_failing_runs() {
    let d = Daemon::start("stress-held", &[], Stdio::null());
    let mut holder = support::hold_device(&d.dir, 30);
    let jsonl = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("held.jsonl");
    let _ = std::fs::remove_file(&jsonl);
    let o = cqlab(&["stress", "restart", "--runs", "3", "--device", &d.spec(), "--jsonl", jsonl.to_str().unwrap()]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("could not have the device") && err.contains(&format!("held by pid {}", holder.id())),
        "{err}"
    );
    assert!(!err.contains("CRASH"), "{err}");
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap_or_default(), "", "no run was recorded as a result");
}

/// A campaign whose dump directory fails keeps its JSONL records, and
/// says which dumps are missing.
#[test]
fn a_failing_dump_dir_keeps_the_records() {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dump-fails");
    let _ = std::fs::remove_dir_all(&base);
    let dumps = base.join("dumps");
    // Where seed 1's dump file goes, a directory: writing it fails.
    std::fs::create_dir_all(dumps.join("seed-1.txt")).unwrap();
    let jsonl = base.join("records.jsonl");
    let o = cqlab(&[
        "race",
        "--variant",
        "stall-release-early",
        "--seeds",
        "2",
        "--iterations",
        "2",
        "--dump-dir",
        dumps.to_str().unwrap(),
        "--jsonl",
        jsonl.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("have no dump"), "{}", text(&o));
    let records = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(records.lines().count(), 2, "{records}");
    assert!(records.lines().next().unwrap().contains("dump_error"), "{records}");
    // Seed 2's dump was written.
    assert!(dumps.join("seed-2.txt").is_file());
}

/// A run trace cut short (Ctrl-C) is read up to its last whole line, and
/// `trace summary` and `trace export` say the end is missing.
#[test]
fn a_cut_trace_is_summarised_as_incomplete() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cut-trace");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let whole = dir.join("whole.jsonl");
    let o = cqlab(&[
        "run",
        "dispatch_latency",
        "--cqs",
        "1",
        "--iters",
        "3",
        "--warmup",
        "0",
        "--trace",
        whole.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let text_of = std::fs::read_to_string(&whole).unwrap();
    assert!(text_of.lines().last().unwrap().starts_with("{\"end\""));
    // Cut in the middle of a line two thirds of the way in, as a kill leaves it.
    let at = text_of.len() * 2 / 3;
    let at = at + text_of[at..].find('\n').unwrap() + 5;
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, &text_of[..at]).unwrap();
    let o = cqlab(&["trace", "summary", cut.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["complete"], false, "{v}");
    assert!(v["end_missing"].as_str().unwrap().contains("the end is missing"), "{v}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("the end is missing"), "{}", text(&o));
    let o = cqlab(&["trace", "summary", cut.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("INCOMPLETE TRACE"), "{}", text(&o));
    let perfetto = dir.join("cut.perfetto.json");
    let o = cqlab(&["trace", "export", cut.to_str().unwrap(), "--perfetto", perfetto.to_str().unwrap()]);
    assert!(o.status.success() && String::from_utf8_lossy(&o.stderr).contains("the end is missing"), "{}", text(&o));
    let _: serde_json::Value = serde_json::from_slice(&std::fs::read(&perfetto).unwrap()).expect("valid JSON");
    // The whole trace says nothing of the kind.
    let o = cqlab(&["trace", "summary", whole.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["complete"], true, "{v}");
    assert!(!String::from_utf8_lossy(&o.stderr).contains("missing"), "{}", text(&o));
    // Two traces in one file, and one whose records are out of order, are
    // malformed (they read as the first trace alone, and as 65% of its
    // events: helper-25).
    let twice = dir.join("twice.jsonl");
    std::fs::write(&twice, format!("{text_of}{text_of}")).unwrap();
    let lines: Vec<&str> = text_of.lines().collect();
    let (first, last) = (lines.iter().position(|l| l.starts_with("{\"rec\"")).unwrap(), lines.len() - 1);
    let mut swapped = lines.clone();
    // The first core's first two records, the other way round.
    let core = |l: &str| l.split(',').take(2).collect::<Vec<_>>().join(",");
    let second = (first + 1..last).find(|&i| core(lines[i]) == core(lines[first])).unwrap();
    swapped.swap(first, second);
    let shuffled = dir.join("shuffled.jsonl");
    std::fs::write(&shuffled, swapped.join("\n") + "\n").unwrap();
    for (file, why) in [(&twice, "a line after the `end` line"), (&shuffled, "the records are out of order")] {
        let o = cqlab(&["trace", "summary", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(why), "{}", text(&o));
    }
}

/// A kill rate that happens to kill every run says so, never "0 of 0 runs".
#[test]
fn a_campaign_whose_runs_were_all_killed_says_so() {
    let o = cqlab(&["stress", "restart", "--runs", "2", "--kill-rate", "0.99", "--seed", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no run completed: all 2 were killed on purpose") && !out.contains("0 of 0"), "{out}");
    // Kills on fresh embedded simulators test no device: said.
    assert!(String::from_utf8_lossy(&o.stderr).contains("a fresh simulator for every run"), "{}", text(&o));
}

/// `matmul --json` and `driver-bench --json` name the device and chip
/// their figures are of (they named neither, unlike `run`).
#[test]
fn matmul_and_driver_bench_json_name_their_chip() {
    let (code, v) = cqlab_json(&[
        "matmul",
        "--m",
        "16",
        "--n",
        "16",
        "--k",
        "16",
        "--tile",
        "8",
        "--strategy",
        "os",
        "--chip",
        "blackhole-p150a",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!((v["device"].as_str(), v["chip"].as_str()), (Some("embedded"), Some("blackhole-p150a")), "{v}");
    assert_eq!(v["harvesting"], "cols=7,10,eth=5,8", "{v}");
    let (code, v) = cqlab_json(&["driver-bench", "--chip", "blackhole-p150a"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!((v["device"].as_str(), v["chip"].as_str()), (Some("embedded"), Some("blackhole-p150a")), "{v}");
    // A grid one core high runs every figure (core (1,1) failed it midway).
    let (code, v) = cqlab_json(&[&["driver-bench"][..], &support::SMALL_WORMHOLE].concat());
    assert_eq!((code, v["harvesting"].as_str()), (0, Some(support::SMALL_WORMHOLE[3])), "{v}");
}
