//! `cqlab decode --kind completion|trace` on dumps of a real run, from files
//! and from a live simulator daemon.

mod support;

use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::soc::Board;
use cqlab_abi::sysmem::CqSysmemLayout;
use cqlab_driver::{CoreRange, Device, DeviceConfig};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use support::{cqlab, firmware_dir, Daemon};

fn dump(name: &str, bytes: &[u8]) -> String {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A run on `board` with a launch, two events and a read-back; returns
/// CQ0's completion ring and its dispatcher's trace ring.
fn real_dumps(board: Board) -> (Vec<u8>, Vec<u8>) {
    let cfg = DeviceConfig { firmware_dir: firmware_dir(), board: Some(board), ..Default::default() };
    let mut dev = Device::open("embedded:seed=3", cfg.clone()).unwrap();
    dev.boot().unwrap();
    let buf = dev.alloc_l1(0, 0, 64).unwrap();
    let mut cq = dev.cq(0).unwrap();
    cq.launch(CoreRange::single(0, 0), &[]).unwrap();
    cq.finish().unwrap();
    cq.write_buffer(&buf, 0, &[0xAB; 64]).unwrap();
    assert_eq!(cq.read_buffer(&buf, 0, 64).unwrap(), vec![0xAB; 64]);
    cq.finish().unwrap();
    let l = CqSysmemLayout::for_cq(0, cfg.issue_size, cfg.completion_size);
    let mut completion = vec![0u8; (l.end() - l.completion_base()) as usize];
    dev.backend().sysmem_read(l.completion_base() as usize, &mut completion).unwrap();
    let mut ring = vec![0u8; TRACE_RING.size as usize];
    let dispatcher = dev.chip().dispatcher(0);
    dev.backend().read(NocAddr::unicast(dispatcher, TRACE_RING.base as u64), &mut ring).unwrap();
    (completion, ring)
}

/// A trace ring names its cores by the chip's coordinates: decoded with
/// the chip it came from, each record is its core's.
#[test]
fn trace_ring_dumps_decode_on_each_chip() {
    for board in [Board::WormholeN150, Board::BlackholeP150a] {
        let (_, ring) = real_dumps(board);
        let file = dump(&format!("ring-{board}.bin"), &ring);
        let out = cqlab(&["decode", "--kind", "trace", &file, "--chip", board.name()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("CQ0 dispatcher") && text.contains("LAUNCH"), "{board}: {text}");
        // In JSON each record's core is `{x, y}`, as every JSON output's.
        let out = cqlab(&["decode", "--kind", "trace", &file, "--chip", board.name(), "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let core = &v["records"][0]["core"];
        assert!(core["x"].is_u64() && core["y"].is_u64(), "{board}: {v}");
    }
}

#[test]
fn completion_and_trace_ring_dumps_decode() {
    let (completion, ring) = real_dumps(Board::WormholeN150);
    let out = cqlab(&["decode", "--kind", "completion", &dump("cq.bin", &completion), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["window"], Value::Null, "a file is decoded from its offset 0");
    let recs = v["records"].as_array().unwrap();
    let kinds: Vec<&str> = recs.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["event", "data", "event"], "{v}");
    assert_eq!(recs[0]["event"]["id"], 1);
    assert_eq!(recs[1]["length"], 64);
    let seqs: Vec<u64> = recs.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [0, 1, 2]);

    let out = cqlab(&["decode", "--kind", "trace", &dump("ring.bin", &ring)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("CQ0 dispatcher") && text.contains("LAUNCH") && text.contains("WRITE_HOST"), "{text}");
    assert!(text.contains("boot"), "{text}");

    // A corrupt record kind is reported with its offset, exit 2.
    let mut bad = completion.clone();
    bad[64] = 9;
    let out = cqlab(&["decode", "--kind", "completion", &dump("bad.bin", &bad)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("offset 0x40"), "{}", String::from_utf8_lossy(&out.stderr));
    // In JSON the error is `{offset, message}`, as an issue dump's.
    let out = cqlab(&["decode", "--kind", "completion", &dump("bad.bin", &bad), "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["offset"], 64, "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.starts_with("completion kind 9")), "{v}");
    // A dump too short for a header (garbage, a truncated file) is exit 2, not an empty success.
    let out = cqlab(&["decode", "--kind", "completion", &dump("short.bin", b"garbage\n")]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("too short"), "{}", String::from_utf8_lossy(&out.stderr));
    // A trace ring from another ABI (wrong capacity) is refused, exit 2.
    let mut bad = ring.clone();
    bad[4] ^= 1;
    assert_eq!(cqlab(&["decode", "--kind", "trace", &dump("badring.bin", &bad)]).status.code(), Some(2));
}

#[test]
fn live_daemon_dumps_decode() {
    let d = Daemon::start("decode-live", &[], Stdio::null());
    let spec = d.spec();
    // Before any client booted it, a core's ring is no malformed dump: the
    // core has not booted (helper-86's audit: "malformed trace dump ...
    // capacity 0 and record size 0", exit 2).
    let worker = cqlab_driver::Topology::for_board(Board::WormholeN150, None, 2).unwrap().worker(0, 0).unwrap();
    let out = cqlab(&["decode", "--device", &spec, "--kind", "trace", "--core", &format!("{},{}", worker.x, worker.y)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("core {worker} (worker (0,0)) has not booted")) && !err.contains("malformed"),
        "{err}"
    );
    let out = cqlab(&["run", "dispatch_latency", "--device", &spec, "--cqs", "2", "--iters", "2", "--warmup", "0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = cqlab(&["decode", "--device", &spec, "--kind", "completion", "--cq", "1", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["records"].as_array().unwrap().iter().all(|r| r["kind"] == "event" && r["cq"] == 1), "{v}");
    // CQ1's dispatcher on the daemon's chip (a Wormhole n150: the second
    // queue's pair in the last Tensix row).
    let chip = cqlab_driver::Topology::for_board(Board::WormholeN150, None, 2).unwrap();
    let core = chip.dispatcher(1);
    let out = cqlab(&["decode", "--device", &spec, "--kind", "trace", "--core", &format!("{},{}", core.x, core.y)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CQ1 dispatcher"));
}

/// Issue 24: a healthy completion ring that has wrapped (a record straddles
/// its end, so offset 0 holds the tail of a payload) decodes live from its
/// oldest whole record, with consecutive sequence numbers up to the last.
#[test]
fn a_wrapped_live_completion_ring_decodes() {
    let d = Daemon::start("decode-wrap", &[], Stdio::null());
    let spec = d.spec();
    // A 1 KiB completion ring: 64-byte event records and 128-byte data
    // records (100 bytes read back) make records straddle its end.
    let cfg = DeviceConfig { firmware_dir: firmware_dir(), completion_size: 1024, ..Default::default() };
    let mut dev = Device::open(&spec, cfg).unwrap();
    dev.boot().unwrap();
    let buf = dev.alloc_l1(0, 0, 128).unwrap();
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &[0xEE; 128]).unwrap();
    let mut records = 0;
    // 11 pairs of 192 bytes: the third lap of the ring starts inside
    // the data record at 1984..2112.
    for _ in 0..11 {
        cq.record_event().unwrap();
        assert_eq!(cq.read_buffer(&buf, 0, 100).unwrap(), vec![0xEE; 100]);
        records += 2;
    }
    cq.finish().unwrap();
    let layout = CqSysmemLayout::for_cq(0, dev.config().issue_size, dev.config().completion_size);
    let mut raw = vec![0u8; 1024];
    dev.backend().sysmem_read(layout.completion_base() as usize, &mut raw).unwrap();
    drop(dev);
    // From its offset 0 the ring is not a record: what decode used to read.
    let out = cqlab(&["decode", "--kind", "completion", &dump("wrapped.bin", &raw)]);
    assert_eq!(out.status.code(), Some(2), "offset 0 of the wrapped ring is a record boundary: the test wraps wrong");
    let out = cqlab(&["decode", "--device", &spec, "--kind", "completion", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let seqs: Vec<u64> = v["records"].as_array().unwrap().iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert!(seqs.len() >= 5 && seqs.windows(2).all(|w| w[1] == w[0] + 1), "{v}");
    // Every record still in the ring, up to the last one written
    // (the finish's event after the loop's records).
    assert!(*seqs.last().unwrap() >= records - 1, "{v}");
    assert!(v["note"].as_str().is_some_and(|n| n.contains("oldest whole record")), "{v}");
    // The window the note describes, in fields: record offsets count from its start.
    let w = &v["window"];
    assert_eq!((w["cq"].as_u64(), w["ring_bytes"].as_u64()), (Some(0), Some(1024)), "{v}");
    let (start, wr) = (w["start"].as_u64().unwrap(), w["write_pointer"].as_u64().unwrap());
    assert!(
        v["note"].as_str().unwrap().contains(&format!("ring offset {start:#x} to the write pointer {wr:#x}")),
        "{v}"
    );
}

/// `status` and `decode --device` give a queue's completion write pointer
/// as the same number, bytes into the ring, and `status` shows its wrap
/// toggle apart (helper-97's audit: `status` printed the raw word, 16-byte
/// units with the toggle in bit 31, `completion wr 0x84` where `decode`
/// said 0x840, and `0x800000xx` on odd laps). A 1 KiB ring lapped once.
#[test]
fn status_and_decode_agree_on_a_wrapped_write_pointer() {
    let d = Daemon::start("status-wrap", &[], Stdio::null());
    let spec = d.spec();
    let cfg = DeviceConfig { firmware_dir: firmware_dir(), completion_size: 1024, ..Default::default() };
    let mut dev = Device::open(&spec, cfg).unwrap();
    dev.boot().unwrap();
    let mut cq = dev.cq(0).unwrap();
    // 64-byte event records: 16 a lap, so 20 end in the second.
    for _ in 0..20 {
        cq.record_event().unwrap();
    }
    cq.finish().unwrap();
    let wr = dev.queue_pointers(0).unwrap().completion_wr;
    assert!(wr.toggle() && wr.offset_bytes() > 0, "the ring did not lap once: {wr:?}");
    drop(dev);
    let out = cqlab(&["decode", "--device", &spec, "--kind", "completion", "--cq", "0", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["window"]["write_pointer"].as_u64(), Some(wr.offset_bytes() as u64), "{v}");
    let out = cqlab(&["status", "--device", &spec]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("CQ0: ")).unwrap_or_else(|| panic!("{text}"));
    let shown = format!("completion wr {:#x} (toggle 1) rd ", wr.offset_bytes());
    assert!(line.contains(&shown), "{line}\nwants {shown}");
    let out = cqlab(&["status", "--device", &spec, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let q = &v["queues"][0];
    assert_eq!(q["completion_wr_bytes"].as_u64(), Some(wr.offset_bytes() as u64), "{q}");
    assert_eq!((q["completion_wr_toggle"].as_u64(), q["completion_wr"].as_u64()), (Some(1), Some(wr.0 as u64)), "{q}");
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Completion records no dispatcher writes are malformed (exit 2, the
/// offset and the bad value), not decoded: a length larger than the ring
/// ("record runs 4294705167 bytes past the dump"), a data record relabelled
/// as an event ("event 1949726381 of CQ3939465708"). What decoded before
/// stays listed, in text and JSON; a bad first record prints nothing.
#[test]
fn impossible_completion_records_are_malformed() {
    let (completion, _) = real_dumps(Board::WormholeN150);
    // The real ring: event at 0, 64-byte data record at 0x40, event at 0xc0.
    let set = |at: usize, field: usize, value: u32| {
        let mut b = completion.clone();
        b[at + field..at + field + 4].copy_from_slice(&value.to_le_bytes());
        b
    };
    let relabelled = {
        let mut b = completion.clone();
        b[0x40] = 2; // the data record's kind: event
        b
    };
    let cases = [
        ("huge.bin", set(0x40, 4, u32::MAX), 0x40, "record length 4294967295 (4294967360 bytes with its header"),
        ("relabelled.bin", relabelled, 0x40, "event record of length 64 (an event's payload is the 16-byte"),
        ("cq99.bin", set(0, 0, 0x0063_0002), 0, "record of CQ99: the ABI has at most 16 queues"),
    ];
    for (name, bytes, offset, why) in cases {
        let file = dump(name, &bytes);
        let out = cqlab(&["decode", "--kind", "completion", &file]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let said = format!("malformed completion dump {file}: offset {offset:#x}: {why}");
        assert!(stderr(&out).contains(&said), "{name}: {}", stderr(&out));
        // The records before the bad one, and nothing (no blank line) when none.
        let kept = if offset == 0 { 0 } else { 1 };
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count(), kept, "{name}: {text:?}");
        let out = cqlab(&["decode", "--kind", "completion", &file, "--json"]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["records"].as_array().unwrap().len(), kept, "{name}: {v}");
        assert_eq!(v["error"]["offset"], offset, "{name}: {v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| m.starts_with(why)), "{name}: {v}");
    }
    // The well-formed ring still decodes, exit 0.
    let out = cqlab(&["decode", "--kind", "completion", &dump("good.bin", &completion)]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A trace-ring header is checked against its slots: the slot of each seq
/// it claims holds that record, or a later one of the same slot (a core
/// that recorded while its ring was read). Anything else is a header that
/// does not describe the ring: exit 2 naming the slot (`next_seq`
/// 0xffffffff over zeroed slots was a ring's worth of "overwritten" lines,
/// and `records: []`, `error: null` in JSON). Text and JSON say the same.
#[test]
fn a_trace_ring_header_is_checked_against_its_slots() {
    let (_, ring) = real_dumps(Board::WormholeN150);
    let next_seq = u32::from_le_bytes(ring[..4].try_into().unwrap());
    assert!((6..682).contains(&next_seq), "the ring has not wrapped: {next_seq}");
    let capacity = cqlab_abi::trace::CAPACITY;
    let slot_seq = |seq: u32| 16 + seq as usize * 24 + 8;
    let decode = |name: &str, bytes: &[u8]| {
        let file = dump(name, bytes);
        let text = cqlab(&["decode", "--kind", "trace", &file]);
        let json = cqlab(&["decode", "--kind", "trace", &file, "--json"]);
        let v: Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(text.status.code(), json.status.code(), "{name}: {v}");
        (text, v)
    };

    // A made-up next_seq over the real slots (older records, or zeros).
    let mut bad = ring.clone();
    bad[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    // The oldest slot, which record next_seq goes into, is left out.
    let first = u32::MAX - (capacity - 1);
    let at = 16 + (first % capacity) as usize * 24;
    let (out, v) = decode("made-up.bin", &bad);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // That slot holds the real record of its index (the ring has not wrapped).
    let why = format!(
        "the slot of seq {first} holds seq {}, an older one: the header's next_seq 4294967295",
        first % capacity
    );
    assert!(stderr(&out).contains(&format!("offset {at:#x}: {why}")), "{}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("while dumped"), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!((v["error"]["offset"].as_u64(), v["records"].as_array().map(Vec::len)), (Some(at as u64), Some(0)));
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.starts_with(&why)), "{v}");

    // A slot holding an older record than its seq, inside the window: the
    // records before it are kept.
    let mut bad = ring.clone();
    bad[slot_seq(5)..slot_seq(5) + 4].copy_from_slice(&3u32.to_le_bytes());
    let (out, v) = decode("older.bin", &bad);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("offset 0x88: the slot of seq 5 holds seq 3, an older one"), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with('#')).count(), 5);
    assert_eq!(v["records"].as_array().map(Vec::len), Some(5), "{v}");

    // A later record of the same slot is a ring read while its core
    // recorded: listed in text and JSON alike, exit 0.
    let mut lapped = ring.clone();
    lapped[slot_seq(2)..slot_seq(2) + 4].copy_from_slice(&(2 + capacity).to_le_bytes());
    let (out, v) = decode("lapped.bin", &lapped);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = format!("#2       (slot holds seq {}: overwritten while dumped)", 2 + capacity);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&line), "{}", String::from_utf8_lossy(&out.stdout));
    let recs = v["records"].as_array().unwrap();
    assert_eq!(recs.len(), next_seq as usize, "{v}");
    assert_eq!(recs[2], serde_json::json!({"seq": 2, "overwritten_by": 2 + capacity}), "{v}");
    assert_eq!(v["error"], Value::Null);
}
