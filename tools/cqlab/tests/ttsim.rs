//! `--device ttsim:PATH`: the CLI on cqlab's libttsim libraries (`cargo xtask libttsim`), and
//! a library that is not one refused with its problem named.

mod support;

use std::time::Duration;
use support::{run_within, text, CQLAB, SMALL_CHIPS, SMALL_WORMHOLE};

#[test]
fn the_demo_runs_through_ttsim_on_each_chip() {
    for chip in SMALL_CHIPS {
        let board: cqlab_abi::soc::Board = chip[1].parse().unwrap();
        let lib = cqlab_tests::libttsim_library(board.arch());
        let mut c = std::process::Command::new(CQLAB);
        c.args(["demo", "--rounds", "2"]).args(chip).arg("--device").arg(format!("ttsim:{}", lib.display()));
        let o = run_within(c, Duration::from_secs(60));
        assert!(o.status.success(), "{}: {}", chip[1], text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("verified 524288 bytes read back"), "{}", text(&o));
        assert!(out.contains(&format!("chip: {} ({})", chip[1], chip[3])), "{}", text(&o));
    }
}

/// `--harvest` without `--chip` harvests the library's own board, as
/// docs/libttsim.md says (it was left out: "the configuration asks for
/// rows=..."; helper-52).
#[test]
fn harvest_alone_harvests_the_librarys_board() {
    let lib = cqlab_tests::libttsim_library(cqlab_abi::arch::Arch::Wormhole);
    let mut c = std::process::Command::new(CQLAB);
    c.args(["demo", "--rounds", "1", SMALL_WORMHOLE[2], SMALL_WORMHOLE[3], "--device"]);
    c.arg(format!("ttsim:{}", lib.display()));
    let o = run_within(c, Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&format!("chip: wormhole-n150 ({})", SMALL_WORMHOLE[3])), "{}", text(&o));
}

#[test]
fn a_file_that_is_not_a_library_is_refused_naming_it() {
    let dir = std::env::temp_dir().join(format!("cqlab-cli-ttsim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libttsim_wh.so");
    std::fs::write(&lib, "#!/bin/sh\n").unwrap();
    let spec = format!("ttsim:{}", lib.display());
    let o = support::cqlab(&["demo", "--device", &spec]);
    let _ = std::fs::remove_dir_all(&dir);
    // Malformed input, refused before any work: exit 2 (it was 1).
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("libttsim library {}: cannot be loaded", lib.display())), "{}", text(&o));
    let o = support::cqlab(&["demo", "--device", "ttsim:"]);
    assert_eq!(o.status.code(), Some(2), "an empty path is a usage error: {}", text(&o));
}

/// A bad `CQLAB_TTSIM_*` value in the environment is named as the
/// environment's, not blamed on the setting the driver was making.
#[test]
fn a_bad_setting_in_the_environment_is_named_as_such() {
    let lib = cqlab_tests::libttsim_library(cqlab_abi::arch::Arch::Wormhole);
    let mut c = std::process::Command::new(CQLAB);
    c.args(["demo", "--rounds", "1", "--device"]).arg(format!("ttsim:{}", lib.display()));
    c.env("CQLAB_TTSIM_SEED", "abc").env_remove("CQLAB_TTSIM_LOG");
    let o = run_within(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("CQLAB_TTSIM_SEED=\"abc\": expected a number")
            && err.contains("(in the environment; this call set"),
        "{}",
        text(&o)
    );
    // With the library's log set by the user, the calls after the failed
    // init were blamed instead: "not running: call libttsim_init first"
    // (helper-52).
    for (log, named) in [("off", "CQLAB_TTSIM_SEED=\"abc\": expected a number"), ("loud", "CQLAB_TTSIM_LOG=\"loud\"")] {
        let mut c = std::process::Command::new(CQLAB);
        c.args(["demo", "--rounds", "1", "--device"]).arg(format!("ttsim:{}", lib.display()));
        c.env("CQLAB_TTSIM_SEED", "abc").env("CQLAB_TTSIM_LOG", log);
        let o = run_within(c, Duration::from_secs(60));
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(named) && !err.contains("not running"), "CQLAB_TTSIM_LOG={log}: {}", text(&o));
    }
}

/// `run` reads the trace rings as an observer through cqlab's library, as
/// it does on the embedded simulator: the same seed gives the same timed
/// cycles and records. (Through the BAR each drain cost device time inside
/// the timed window: `tiny_kernels` read 56x the embedded run's cycles.)
#[test]
fn a_run_through_ttsim_times_what_the_embedded_run_times() {
    for chip in SMALL_CHIPS {
        let board: cqlab_abi::soc::Board = chip[1].parse().unwrap();
        let lib = cqlab_tests::libttsim_library(board.arch());
        let run = |device: String| {
            let mut c = std::process::Command::new(CQLAB);
            c.args([
                "run",
                "tiny_kernels",
                "--iters",
                "4",
                "--cqs",
                "1",
                "--seed",
                "3",
                "--json",
                "-",
                "--device",
                &device,
            ]);
            c.args(chip);
            let o = run_within(c, Duration::from_secs(120));
            assert!(o.status.success(), "{device}: {}", text(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("run --json is JSON");
            let p = &v["points"][0];
            assert_eq!(p["trace"]["through_bar"], false, "{device}: the rings are read as an observer");
            assert!(p["trace"]["records"].as_u64().unwrap() > 0, "{device}: no records");
            (p["timed_cycles"].clone(), p["latency_cycles"].clone(), p["trace"]["records"].clone())
        };
        let ttsim = run(format!("ttsim:{}", lib.display()));
        let embedded = run("embedded:seed=3".into());
        assert_eq!(ttsim, embedded, "{}: the same seed through the library and embedded", chip[1]);
    }
}

/// `matmul` through a libttsim library (no DRAM traffic counters there)
/// verifies its product and reports the bytes as not measured: null, not
/// 0 and not an error after the work (it exited 1 once the run was done).
#[test]
fn matmul_through_ttsim_reports_dram_bytes_as_not_measured() {
    let lib = cqlab_tests::libttsim_library(cqlab_abi::arch::Arch::Wormhole);
    let mut c = std::process::Command::new(CQLAB);
    c.args(["matmul", "--m", "16", "--n", "16", "--k", "16", "--strategy", "ws", "--json", "--device"]);
    c.arg(format!("ttsim:{}", lib.display()));
    let o = run_within(c, Duration::from_secs(60));
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &v["runs"][0];
    assert!(run["dram_read"].is_null() && run["dram_written"].is_null(), "{v}");
    assert!(run["predicted_read"].as_u64().is_some_and(|b| b > 0), "{v}");
}
