//! `cqlab sweep --bisect`: the host-side known bug deadlocks at exactly the
//! depth the README's formula gives, for three queue configurations; the
//! correct driver has no failing depth.

mod support;

use support::EXIT_HANG;

fn sweep(args: &[&str]) -> (i32, serde_json::Value) {
    support::cqlab_json(&[&["sweep", "copy_stress"], args].concat())
}

/// README: first failing depth = floor(C / record_size(B)) + F + 3, with C
/// the completion-queue bytes, B the bytes per read, F the fetch-queue slots.
fn formula(completion: u32, bytes: u32, fetch: u32) -> u64 {
    (completion / cqlab_abi::completion::record_size(bytes)) as u64 + fetch as u64 + 3
}

#[test]
fn bisect_finds_the_formula_depth_of_the_no_drain_host_bug() {
    for (completion, fetch, bytes) in [(65536, 16, 1024), (32768, 64, 2048), (8192, 4, 64)] {
        let sets =
            [format!("completion_size={completion}"), format!("fetch_entries={fetch}"), format!("bytes={bytes}")];
        let mut args = vec!["--param", "depth=1..20000", "--bisect", "--reset-each", "--host-bug", "no-drain"];
        for s in &sets {
            args.extend(["--set", s]);
        }
        let (code, v) = sweep(&args);
        assert_eq!(code, EXIT_HANG, "the no-drain deadlock is a hang: {v}");
        assert_eq!(v["first_failing"], formula(completion, bytes, fetch), "{sets:?}: {v}");
        let sig = v["boundary_signature"].as_str().unwrap();
        assert!(sig.starts_with("timeout: prefetch queue slot") && sig.contains("deadlock"), "{sig}");
        // The depth before passes: it is in the points the bisection ran.
        let before = formula(completion, bytes, fetch) - 1;
        assert!(v["points"].as_array().unwrap().iter().any(|p| p["value"] == before && p["ok"] == true), "{v}");
    }
}

/// The text names what the table is of before it: the device, the knobs
/// held fixed and a host bug injected on purpose (helper-72: a no-drain
/// sweep ended in a bare "deadlock", read as the driver's).
#[test]
fn the_text_header_names_the_fixed_knobs_and_an_injected_host_bug() {
    for bug in [None, Some("no-drain")] {
        let mut args = vec!["sweep", "copy_stress", "--param", "depth=193,194", "--set", "bytes=4096"];
        args.extend(bug.map(|b| ["--host-bug", b]).into_iter().flatten());
        let out = support::cqlab(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let header = stdout.lines().next().unwrap_or_default();
        let fixed = "fixed bytes 4096, completion_size 262144, cqs 1, fetch_entries 128, issue_size 1048576, \
                     ring_pages 64, timeout 2000000 cycles";
        assert!(header.starts_with("sweep copy_stress over depth on wormhole-n150 (rows=8), device embedded:seed=1, "));
        assert!(header.contains(fixed), "{header}");
        let injected = "host bug no-drain injected on purpose (--host-bug)";
        assert_eq!(header.contains(injected), bug.is_some(), "{bug:?}: {header}");
        assert_eq!(out.status.code(), Some(if bug.is_some() { EXIT_HANG } else { 0 }), "{}", support::text(&out));
    }
}

/// A bisection's answer fails on its own and the value before it passes:
/// each point runs on a fresh device without `--reset-each` (on one shared
/// device `completion-rd-no-toggle` read 30, which alone passes).
#[test]
fn a_bisected_depth_fails_alone_and_the_one_before_passes() {
    let (code, v) = sweep(&["--param", "depth=1..100", "--bisect", "--host-bug", "completion-rd-no-toggle"]);
    assert_eq!(code, EXIT_HANG, "{v}");
    assert_eq!(v["reset_each"], true, "{v}");
    let first = v["first_failing"].as_u64().expect("a failing depth");
    let list = format!("depth={},{first}", first - 1);
    let (code, alone) = sweep(&["--param", &list, "--reset-each", "--host-bug", "completion-rd-no-toggle"]);
    assert_eq!(code, EXIT_HANG, "{alone}");
    let ok: Vec<bool> = alone["points"].as_array().unwrap().iter().map(|p| p["ok"].as_bool().unwrap()).collect();
    assert_eq!(ok, [true, false], "{first}: {alone}");
    // The failed point has its class and no figure (its cycles are the
    // wait that gave up); the passing one has its figure and no class.
    let (pass, fail) = (&alone["points"][0], &alone["points"][1]);
    assert!(pass["cycles_per_read"].as_f64().is_some() && pass["class"].is_null(), "{alone}");
    assert_eq!((&fail["class"], &fail["cycles_per_read"]), (&serde_json::json!("hang"), &serde_json::Value::Null));
}

/// A bisection runs over the values given: a range's steps, or a list in
/// any order (helper-49: it stepped by 1 past a `:10` grid and answered 71;
/// a list given high to low wrapped its arithmetic).
#[test]
fn a_bisection_answers_one_of_the_values_given() {
    let bug = ["--bisect", "--host-bug", "completion-rd-no-toggle"];
    let (_, fine) = sweep(&[&["--param", "depth=1..100"][..], &bug].concat());
    let first = fine["first_failing"].as_u64().expect("a failing depth");
    let (_, grid) = sweep(&[&["--param", "depth=1..100:10"][..], &bug].concat());
    let want = (1..=100).step_by(10).find(|&d| d >= first).expect("on the grid");
    assert_eq!(grid["first_failing"].as_u64(), Some(want), "{grid}");
    let list = format!("depth={},{},1", want + 10, first);
    let (_, listed) = sweep(&[&["--param", &list][..], &bug].concat());
    assert_eq!(listed["first_failing"].as_u64(), Some(first), "{listed}");
    // Without --bisect, the least failing value, not the first run.
    let list = format!("depth={},{first}", first + 1);
    let (_, plain) = sweep(&["--param", &list, "--reset-each", "--host-bug", "completion-rd-no-toggle"]);
    assert_eq!(plain["first_failing"].as_u64(), Some(first), "{plain}");
}

#[test]
fn the_correct_driver_has_no_failing_depth() {
    let dir = std::env::temp_dir().join(format!("cqlab-sweep-{}", std::process::id()));
    let (code, v) = sweep(&[
        "--param",
        "depth=1..400",
        "--bisect",
        "--set",
        "completion_size=8192",
        "--set",
        "fetch_entries=4",
        "--set",
        "bytes=64",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    assert!(v["first_failing"].is_null());
    assert!(std::fs::read_to_string(dir.join("sweep.svg")).unwrap().starts_with("<svg"));
    assert!(dir.join("sweep.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plain_sweep_tabulates_every_value() {
    let (code, v) = sweep(&["--param", "depth=9,1,5", "--set", "bytes=256"]);
    assert_eq!(code, 0, "{v}");
    let values: Vec<u64> = v["points"].as_array().unwrap().iter().map(|p| p["value"].as_u64().unwrap()).collect();
    assert_eq!(values, [1, 5, 9]);
    // Points shared one device: the report keeps the order they ran in, and
    // names the device and schedule a rerun needs.
    assert_eq!(v["run_order"], serde_json::json!([9, 1, 5]), "{v}");
    assert_eq!((v["device"].as_str(), v["reset_each"].as_bool()), (Some("embedded:seed=1"), Some(false)), "{v}");
    assert_eq!(v["host"]["jitter_cycles"], 0, "{v}");
    // The knobs held fixed, not the swept one.
    assert!(v["fixed"]["depth"].is_null() && v["fixed"]["bytes"] == 256, "{v}");
    // The chip the points ran on, though no --chip named it.
    assert_eq!((v["chip"].as_str(), v["harvesting"].as_str()), (Some("wormhole-n150"), Some("rows=8")), "{v}");
}

/// `--device embedded:...` takes the timing model's words, as its help says:
/// exact time moves a point's cycles; the same spec gives the same cycles.
#[test]
fn a_sweep_runs_the_timing_model_its_device_names() {
    let cycles = |device: &str| {
        let (code, v) = sweep(&["--param", "depth=2", "--device", device]);
        assert_eq!(code, 0, "{device}: {v}");
        v["points"][0]["device_cycles"].as_u64().unwrap()
    };
    let sliced = cycles("embedded:seed=2");
    assert_eq!(cycles("embedded:seed=2"), sliced);
    assert_ne!(cycles("embedded:seed=2,exact"), sliced, "exact time moves a hand-off");
}

/// Points on one device give its L1 back: two reads each larger than half
/// the user region both pass (helper-66: the second was refused, its L1
/// still held by the first point's buffer).
#[test]
fn points_on_one_device_reuse_its_l1() {
    let (code, v) = sweep(&["--param", "bytes=300000,300032", "--set", "depth=2"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["reset_each"], false, "{v}");
    assert!(v["points"].as_array().unwrap().iter().all(|p| p["ok"] == true), "{v}");
}

/// A point the device refuses mid-sweep (a chunk the small issue queue
/// cannot hold at three queues) stops the sweep with exit 2, and the points
/// before it are still reported (helper-66: they were lost).
#[test]
fn a_point_the_device_refuses_keeps_the_points_before_it() {
    let (code, v) = sweep(&["--param", "cqs=2,3", "--set", "issue_size=256", "--set", "depth=2"]);
    assert_eq!(code, 2, "{v}");
    let points = v["points"].as_array().unwrap();
    assert_eq!((points.len(), points[0]["value"].as_u64(), &points[0]["ok"]), (1, Some(2), &true.into()), "{v}");
    assert_eq!(v["stopped"]["value"], 3, "{v}");
    assert!(v["stopped"]["error"].as_str().unwrap().contains("chunk exceeds the issue queue"), "{v}");
    assert!(v["first_failing"].is_null(), "{v}");
}

/// A replay line's arguments (its words are plain: none needs quoting).
fn replay_args(line: &str) -> Vec<&str> {
    let args: Vec<&str> = line.strip_prefix("cqlab ").expect("a cqlab command").split(' ').collect();
    assert!(args.iter().all(|a| !a.starts_with('\'')), "{line}");
    args
}

/// A bisected failure names the command that re-runs that point alone,
/// which fails the same way at the same cycle, and `--dump-dir` gets its
/// hang dump and trace, named after the point (as a race seed's: the
/// sweep printed a signature and one error line, nothing to debug with).
#[test]
fn a_failing_point_names_its_replay_and_leaves_its_hang_dump() {
    let dir = support::scratch("sweep-dump");
    let dump_dir = dir.to_str().unwrap();
    let small = ["--set", "completion_size=8192", "--set", "fetch_entries=4", "--set", "bytes=64"];
    let args = [&["--param", "depth=1..200", "--bisect", "--host-bug", "no-drain", "--dump-dir", dump_dir][..], &small]
        .concat();
    let (code, v) = sweep(&args);
    assert_eq!(code, EXIT_HANG, "{v}");
    let first = formula(8192, 64, 4);
    assert_eq!(v["first_failing"], first, "{v}");
    let points = v["points"].as_array().unwrap();
    let boundary = points.iter().find(|p| p["value"] == first).unwrap();
    let replay = boundary["replay"].as_str().unwrap_or_else(|| panic!("no replay: {boundary}"));
    assert!(replay.contains(&format!("--param depth={first} ")) && replay.ends_with("--reset-each"), "{replay}");
    assert!(replay.contains("--host-bug no-drain") && replay.contains("--set fetch_entries=4"), "{replay}");
    assert!(points.iter().all(|p| p["replay"].is_null() == (p["ok"] == true)), "{v}");

    let (code, again) = support::cqlab_json(&replay_args(replay));
    assert_eq!(code, EXIT_HANG, "{replay}: {again}");
    let alone = &again["points"][0];
    assert_eq!((&alone["signature"], &alone["device_cycles"]), (&boundary["signature"], &boundary["device_cycles"]));

    // The dump: the whole error with its wait-for chain, the same as
    // JSON naming the point and its replay, and every core's trace.
    let stem = dir.join(format!("depth-{first}"));
    let text = std::fs::read_to_string(stem.with_extension("txt")).unwrap();
    assert!(text.contains("hang dump at device cycle") && text.contains("wait-for chain (DEADLOCK"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stem.with_extension("json")).unwrap()).unwrap();
    assert_eq!((&json["param"], &json["value"], &json["replay"]), (&"depth".into(), &first.into(), &replay.into()));
    assert!(!json["dump"]["chain"].as_array().unwrap().is_empty(), "{json}");
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stem.with_extension("trace.json")).unwrap()).unwrap();
    assert!(!trace["traceEvents"].as_array().unwrap().is_empty());
    let files = boundary["dump_files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "{boundary}");
    assert!(points.iter().filter(|p| p["ok"] == true).all(|p| p["dump_files"].is_null()), "{v}");
    // A passing point leaves nothing.
    assert!(!dir.join(format!("depth-{}.txt", first - 1)).exists());

    // The text names both under the boundary's error.
    let out = support::cqlab(&[&["sweep", "copy_stress"][..], &args].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("  replay alone: {replay}\n")), "{stdout}");
    assert!(stdout.contains(&format!("  dump and trace: {}.{{txt,json,trace.json}}", stem.display())), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A point that failed on a device earlier points had used may pass alone
/// (`completion-rd-no-toggle` fails depth 11 after 1..=10, alone not below
/// 63): its replay runs those points first, and fails the same way.
#[test]
fn a_failing_point_on_a_shared_device_replays_after_the_points_before_it() {
    let (code, v) = sweep(&["--param", "depth=1..20", "--host-bug", "completion-rd-no-toggle"]);
    assert_eq!(code, EXIT_HANG, "{v}");
    let first = v["first_failing"].as_u64().expect("a failing depth");
    let point = v["points"].as_array().unwrap().iter().find(|p| p["value"] == first).unwrap().clone();
    assert_eq!(point["earlier_on_device"], first - 1, "{point}");
    let replay = point["replay"].as_str().unwrap();
    assert!(replay.contains(&format!("--param depth=1..{first}:1 ")) && !replay.contains("--reset-each"), "{replay}");
    let (code, again) = support::cqlab_json(&replay_args(replay));
    assert_eq!(code, EXIT_HANG, "{replay}: {again}");
    let last = again["points"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((&last["value"], &last["ok"]), (&first.into(), &false.into()), "{again}");
    assert_eq!((&last["signature"], &last["device_cycles"]), (&point["signature"], &point["device_cycles"]));
}

/// A dump that cannot be written (a directory where its file goes) is a
/// warning naming the point; the sweep is still reported, then exits 1.
#[test]
fn a_dump_that_cannot_be_written_keeps_the_sweep_and_exits_1() {
    let dir = support::scratch("sweep-dump-blocked");
    let first = formula(8192, 64, 4);
    std::fs::create_dir_all(dir.join(format!("depth-{first}.txt"))).unwrap();
    let list = format!("depth={},{first}", first - 1);
    let small = ["--set", "completion_size=8192", "--set", "fetch_entries=4", "--set", "bytes=64"];
    let args = [&["sweep", "copy_stress", "--param", &list, "--reset-each", "--host-bug", "no-drain"][..], &small];
    let out = support::cqlab(&[&args.concat()[..], &["--dump-dir", dir.to_str().unwrap()]].concat());
    let all = support::text(&out);
    assert_eq!(out.status.code(), Some(support::EXIT_FAILED), "{all}");
    assert!(all.contains(&format!("warning: depth={first}: its dump was not written")), "{all}");
    assert!(all.contains(&format!("first failing depth: {first}")), "the sweep is reported: {all}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A point whose wait goes on says so on stderr every 10 s of host time, as
/// `run`'s do (a sweep said nothing until its stall timeout): the no-drain
/// host bug fills the completion queue, and with a stall timeout of 10^12
/// cycles the wait runs for minutes. `--json` stdout holds no such line.
#[test]
fn a_long_wait_of_a_point_prints_progress_lines_on_stderr() {
    use std::io::{BufRead, BufReader, Read};
    let mut child = std::process::Command::new(support::CQLAB)
        .env("CQLAB_FIRMWARE_DIR", support::firmware_dir())
        .args(["sweep", "copy_stress", "--param", "depth=200", "--host-bug", "no-drain"])
        .args(["--timeout-cycles", "1000000000000", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The first line is due 10 s after the wait began.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut seen = Vec::new();
    let line = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            Ok(l) if l.starts_with("note: still waiting for") => break Some(l),
            Ok(l) => seen.push(l),
            Err(_) => break None,
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    let line = line.unwrap_or_else(|| panic!("no progress line in 120 s; stderr: {seen:?}"));
    assert!(line.contains("issue queue on CQ0") && line.contains("of the 1000000000000-cycle stall timeout"), "{line}");
    assert!(stdout.is_empty(), "stdout: {stdout}");
}
