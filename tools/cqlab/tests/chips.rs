//! Issue 25: `demo`, `race`, `run` and `bench dispatch` on each of the four
//! boards, full size (the other CLI tests use small harvested chips), each
//! reporting the chip it ran on; and a harvested core named by a command is
//! refused, saying why.

mod support;

use support::{cqlab, cqlab_json, text};

const BOARDS: [&str; 4] = ["wormhole-n150", "wormhole-n300", "blackhole-p100a", "blackhole-p150a"];

/// Compute grid of each board with its usual harvesting and two queues
/// (README, "The chips").
fn grid(board: &str) -> (u64, u64) {
    match board {
        "wormhole-n150" => (8, 8),
        "wormhole-n300" => (8, 7),
        _ => (11, 10),
    }
}

#[test]
fn demo_on_every_board_verifies_its_read_back_over_the_whole_grid() {
    for board in BOARDS {
        let (code, v) = cqlab_json(&["demo", "--chip", board, "--rounds", "1"]);
        assert_eq!(code, 0, "{board}: {v}");
        assert_eq!(v["verified_bytes"], 256 * 1024, "{board}: {v}");
        let (cols, rows) = grid(board);
        assert_eq!((v["chip"].as_str(), &v["grid"]), (Some(board), &serde_json::json!([cols, rows])), "{v}");
        let clock = if board.starts_with("wormhole") { 1_000_000_000 } else { 1_350_000_000 };
        assert_eq!(v["clock_hz"], clock, "{board}");
    }
}

#[test]
fn race_run_and_bench_dispatch_on_every_board() {
    for board in BOARDS {
        let (code, race) = cqlab_json(&["race", "--chip", board, "--seeds", "1", "--iterations", "2"]);
        assert_eq!(code, 0, "{board}: {race}");
        assert_eq!((race["runs"].as_u64(), race["failures"].as_u64()), (Some(1), Some(0)), "{board}: {race}");
        let out = cqlab(&["run", "dispatch_latency", "--chip", board, "--iters", "2", "--warmup", "0", "--json", "-"]);
        assert!(out.status.success(), "{board}: {}", text(&out));
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(run["chip"], board, "{run}");
        assert!(run["points"][0]["latency_cycles"]["mean"].as_f64().is_some_and(|m| m > 0.0), "{run}");
        let (code, bench) = cqlab_json(&["bench", "dispatch", "--chip", board, "--programs", "4", "--axis", "cores"]);
        assert_eq!(code, 0, "{board}: {bench}");
        let rows = bench["rows"].as_array().unwrap();
        let (cols, rows_) = grid(board);
        let full = rows.iter().find(|r| r["axis"] == "base").unwrap();
        assert_eq!(full["cores"], cols * rows_, "{board}: {full}");
        assert_eq!(full["chip"], board, "{full}");
        assert!(full["harvesting"].as_str().is_some_and(|h| !h.is_empty()), "{full}");
        assert!(rows.iter().all(|r| r["device_cycles_per_program"].as_f64().is_some_and(|c| c > 0.0)), "{bench}");
    }
}

#[test]
fn a_harvested_or_missing_core_is_refused_naming_the_harvesting() {
    // An n300's compute grid has 7 rows: row 7 is not there, and the
    // refusal says which lines are harvested and which hold the queues.
    let out = cqlab(&["race", "--chip", "wormhole-n300", "--faults", "slow=worker0.7@2", "--seeds", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("worker0.7 is not on the device (wormhole-n300 rows=1,8, a 8x7 compute grid"), "{err}");
    let args =
        ["bench", "dispatch", "--chip", "blackhole-p150a", "--harvest", "cols=5,6,7,10", "--profile", "worker10.0"];
    let out = cqlab(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cols=5,6,7,10: a 9x10 compute grid"), "{}", text(&out));
}

/// The README's tables name the cards (`n300`, `p150a`): `--chip` takes
/// those names too, and every report and replay line prints the full one
/// (`n300` was refused, its error listing only `wormhole-n300`).
#[test]
fn a_board_by_its_card_name_is_the_same_board_printed_in_full() {
    for (short, board) in [("n150", BOARDS[0]), ("n300", BOARDS[1]), ("p100a", BOARDS[2]), ("p150a", BOARDS[3])] {
        let (code, race) = cqlab_json(&["race", "--chip", short, "--seeds", "1", "--iterations", "2"]);
        assert_eq!(code, 0, "{short}: {race}");
        assert_eq!(race["chip"], board, "{short}: {race}");
    }
    let args = ["race", "--chip", "n300", "--workload", "random", "--firmware", "relay-reuse-before-sent"];
    let (code, race) = cqlab_json(&[&args[..], &["--seeds", "16", "--until-first"]].concat());
    assert_ne!(code, 0, "a known bug is found: {race}");
    let replay = race["signatures"][0]["replay"].as_str().unwrap();
    assert!(replay.contains("--chip wormhole-n300 "), "{replay}");
    // A name that is neither is refused, listing both spellings.
    let out = cqlab(&["race", "--chip", "n250", "--seeds", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wormhole-n300 (n300)"), "{}", text(&out));
}
