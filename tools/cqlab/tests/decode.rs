//! `cqlab decode` on real encoder output and on malformed dumps.

use cqlab_abi::completion::EventRecord;
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::Encoder;
use cqlab_abi::noc::NocAddr;
use std::path::PathBuf;
use std::process::{Command, Output};

fn dump(name: &str, bytes: &[u8]) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn decode(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cqlab")).arg("decode").args(args).output().unwrap()
}

/// The chip the sample stream addresses: a Wormhole n150.
fn chip() -> cqlab_driver::Topology {
    cqlab_driver::Topology::for_board(cqlab_abi::soc::Board::WormholeN150, None, 2).unwrap()
}

/// A read-back: WRITE_HOST header inline, its data relayed from DRAM.
fn sample_stream() -> Vec<u8> {
    let chip = chip();
    let worker = |c, r| chip.worker(c, r).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut enc = Encoder::new(&mut buf);
    enc.relay_inline(true, |w| {
        w.write_linear(NocAddr::multicast(worker(0, 0), worker(7, 7), 0xA1000), &[7; 40])?;
        w.wait(WaitFlags::BARRIER | WaitFlags::NOTIFY_PREFETCH, 0, 0)?;
        w.write_host_header(5, 256)
    })
    .unwrap();
    enc.relay_linear(chip.dram_addr(2, 0x4000), 256).unwrap();
    enc.stall().unwrap();
    enc.relay_inline(true, |w| w.write_event(&EventRecord { event_id: 1, cq: 0, cycle: 0 })).unwrap();
    let n = enc.len();
    buf.truncate(n + 128); // plus unused (zero) ring space
    buf
}

#[test]
fn decode_lists_commands_nested_dispatch_and_relayed_payloads() {
    let out = decode(&[dump("ok.bin", &sample_stream()).to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let chip = chip();
    let (first, last) = (chip.worker(0, 0).unwrap(), chip.worker(7, 7).unwrap());
    let bank = chip.dram_addr(2, 0x4000);
    let write = format!("+0x0000  [0x21] WRITE_LINEAR length=40 dst={first}..{last}+0xa1000");
    let relay = format!("0x00080  [0x03] RELAY_LINEAR length=256 src={}+{:#x}", bank.coord(), bank.local());
    let expected_lines = [
        "0x00000  [0x01] RELAY_INLINE length=96 stride=128",
        &write,
        "+0x0040  [0x25] WAIT flags=BARRIER | NOTIFY_PREFETCH addr=0x0 count=0",
        "+0x0050  [0x24] WRITE_HOST data length=256 tag=5",
        &relay,
        "-> 256 payload bytes of WRITE_HOST at 0x60, 0 still owed",
        "0x000c0  [0x05] STALL",
        "+0x0000  [0x24] WRITE_HOST event length=16 tag=1",
        "(128 zero bytes: unused)",
    ];
    for line in expected_lines {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}

#[test]
fn decode_json_is_machine_readable() {
    let out = decode(&["--json", dump("ok.json.bin", &sample_stream()).to_str().unwrap()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds.len(), 4);
    assert_eq!(cmds[0]["command"], "RELAY_INLINE");
    assert_eq!(cmds[0]["dispatch"][2]["command"], "WRITE_HOST");
    assert_eq!(cmds[0]["dispatch"][2]["missing"], 256);
    assert!(v["error"].is_null());
}

#[test]
fn malformed_dump_exits_2_naming_the_byte_offset() {
    // Unknown prefetch id at the second command.
    let mut bytes = sample_stream();
    bytes[0x80] = 0x7f;
    let out = decode(&[dump("bad_id.bin", &bytes).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at byte offset 128 (0x80): unknown Prefetch command id 0x7f"), "{err}");

    // A corrupted nested dispatch command is reported at its absolute offset.
    let mut bytes = sample_stream();
    bytes[16 + 0x40] = 0x00;
    let out = decode(&[dump("bad_nested.bin", &bytes).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at byte offset 80 (0x50): unknown Dispatch command id 0x00"), "{err}");

    // Truncated in the middle of a command.
    let bytes = sample_stream();
    let out = decode(&[dump("short.bin", &bytes[..100]).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at byte offset 0 (0x0): truncated: command needs 128 bytes, 100 available"), "{err}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = decode(&["/nonexistent/dump.bin"]);
    assert_eq!(out.status.code(), Some(2), "a missing input is a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("dump /nonexistent/dump.bin: No such file"));
}
