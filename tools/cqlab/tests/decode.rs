//! `cqlab decode` on real encoder output and on malformed dumps.

use cqlab_abi::completion::EventRecord;
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::Encoder;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::prefetch::PagedFlags;
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

/// Relays that carry what the dump does not hold: dispatch commands from
/// device memory, then a write whose payload comes in pieces (the start of
/// the next inline payload, then a paged relay) and is still owed where the
/// dump ends.
fn relay_stream() -> Vec<u8> {
    let chip = chip();
    let mut buf = vec![0u8; 4096];
    let mut enc = Encoder::new(&mut buf);
    enc.relay_linear(chip.dram_addr(1, 0x8000), 64).unwrap();
    enc.relay_inline(false, |w| w.write_linear_header(NocAddr::unicast(chip.worker(1, 2).unwrap(), 0x2000), 64))
        .unwrap();
    enc.relay_inline(true, |w| {
        w.delay(1)?;
        w.delay(2)
    })
    .unwrap();
    enc.relay_paged(PagedFlags::DRAM, 0x10000, 16, 0, 1).unwrap();
    let n = enc.len();
    buf.truncate(n);
    buf
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
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

/// A dump bad from its first command decodes nothing: stdout stays empty
/// (it printed a blank line before the error).
#[test]
fn a_dump_bad_from_its_first_command_prints_nothing() {
    let mut bytes = sample_stream();
    bytes[0] = 0x7f;
    let out = decode(&[dump("bad_first.bin", &bytes).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{:?}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at byte offset 0 (0x0): unknown Prefetch command id 0x7f"), "{err}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = decode(&["/nonexistent/dump.bin"]);
    assert_eq!(out.status.code(), Some(2), "a missing input is a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("dump /nonexistent/dump.bin: No such file"));
}

/// The text listing, byte for byte as it was before the JSON fields were
/// typed: the fields' text form is the one it always was.
#[test]
fn text_listing_is_unchanged() {
    let cases = [
        (
            sample_stream(),
            "\
0x00000  [0x01] RELAY_INLINE length=96 stride=128
           +0x0000  [0x21] WRITE_LINEAR length=40 dst=(18,18)..(25,25)+0xa1000
           +0x0040  [0x25] WAIT flags=BARRIER | NOTIFY_PREFETCH addr=0x0 count=0
           +0x0050  [0x24] WRITE_HOST data length=256 tag=5
0x00080  [0x03] RELAY_LINEAR length=256 src=(0,5)+0x4000
           -> 256 payload bytes of WRITE_HOST at 0x60, 0 still owed
0x000c0  [0x05] STALL
0x00100  [0x01] RELAY_INLINE length=32 stride=64
           +0x0000  [0x24] WRITE_HOST event length=16 tag=1
0x00140  (128 zero bytes: unused)
",
        ),
        (
            relay_stream(),
            "\
0x00000  [0x03] RELAY_LINEAR length=64 src=(0,1)+0x40008000
           -> dispatch commands from device memory (not in this dump)
0x00040  [0x02] RELAY_INLINE_NOFLUSH length=16 stride=64
           +0x0000  [0x21] WRITE_LINEAR length=64 dst=(19,20)+0x2000
0x00080  [0x01] RELAY_INLINE length=32 stride=64
           +0x0000  32 payload bytes of WRITE_LINEAR at 0x50
0x000c0  [0x04] RELAY_PAGED dram base=0x10000 page_size=16 start_page=0 pages=1
           -> 16 payload bytes of WRITE_LINEAR at 0x50, 16 still owed
note: dump ends while WRITE_LINEAR at 0x50 still expects 16 payload bytes
",
        ),
    ];
    for (i, (bytes, expected)) in cases.into_iter().enumerate() {
        let out = decode(&[dump(&format!("golden{i}.bin"), &bytes).to_str().unwrap()]);
        assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }
}

/// `fields` is an object of typed values (flags a list of names, NOC
/// addresses `{x, y, addr}`), the prose under `text`.
#[test]
fn decode_json_fields_are_typed() {
    let out = decode(&["--json", dump("typed.bin", &sample_stream()).to_str().unwrap()]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    let cmds = v["commands"].as_array().unwrap();
    let chip = chip();
    let (first, last) = (chip.worker(0, 0).unwrap(), chip.worker(7, 7).unwrap());

    assert_eq!(cmds[0]["fields"], serde_json::json!({"length": 96, "stride": 128}));
    assert_eq!(cmds[0]["text"], "RELAY_INLINE length=96 stride=128");
    let [write, wait, host] = cmds[0]["dispatch"].as_array().unwrap().as_slice() else { panic!("{v}") };
    assert_eq!(
        write["fields"],
        serde_json::json!({"length": 40,
                           "dst": {"x": first.x, "y": first.y, "end": {"x": last.x, "y": last.y}, "addr": 0xA1000}}),
    );
    assert_eq!(wait["command"], "WAIT");
    assert_eq!(wait["fields"], serde_json::json!({"flags": ["BARRIER", "NOTIFY_PREFETCH"], "addr": 0, "count": 0}));
    assert_eq!(wait["text"], "WAIT flags=BARRIER | NOTIFY_PREFETCH addr=0x0 count=0");
    assert_eq!(host["fields"], serde_json::json!({"record": "data", "length": 256, "tag": 5}));

    // A relay from DRAM: its source a unicast NOC address, and the bytes it
    // carries the payload of the WRITE_HOST above, named by its offset.
    let bank = chip.dram_addr(2, 0x4000);
    assert_eq!(
        cmds[1]["fields"]["src"],
        serde_json::json!({"x": bank.coord().x, "y": bank.coord().y, "addr": bank.local()})
    );
    assert_eq!(cmds[1]["relays"]["kind"], "payload");
    assert_eq!(cmds[1]["relays"]["owner"], "WRITE_HOST");
    assert_eq!(cmds[1]["relays"]["owner_offset"], host["offset"]);
    assert_eq!((&cmds[1]["relays"]["bytes_used"], &cmds[1]["relays"]["bytes_owed"]), (&256.into(), &0.into()));
    assert_eq!(cmds[2]["fields"], serde_json::json!({}), "STALL has no fields");
    assert_eq!(cmds[3]["dispatch"][0]["fields"]["record"], "event");
}

/// A nested dispatch command's offsets: the text's `+0xNN` counts from its
/// relay's payload, which JSON gives as `payload_offset`; JSON `offset` is
/// the byte in the dump, as the relay notes and errors name it.
#[test]
fn nested_offsets_in_json_match_the_listing() {
    let file = dump("offsets.bin", &sample_stream());
    let text = String::from_utf8(decode(&[file.to_str().unwrap()]).stdout).unwrap();
    let v = json(&decode(&["--json", file.to_str().unwrap()]));
    let mut seen = 0;
    for relay in v["commands"].as_array().unwrap() {
        for nested in relay["dispatch"].as_array().into_iter().flatten() {
            let at = nested["payload_offset"].as_u64().unwrap();
            let line =
                format!("+{at:#06x}  [{:#04x}] {}", nested["id"].as_u64().unwrap(), nested["text"].as_str().unwrap());
            assert!(text.contains(&line), "missing {line:?} in:\n{text}");
            assert_eq!(nested["offset"].as_u64().unwrap(), relay["offset"].as_u64().unwrap() + 16 + at, "{nested}");
            seen += 1;
        }
    }
    assert_eq!(seen, 4);
    // The relay note names the WRITE_HOST by its `offset` (0x60), listed at +0x0050.
    assert!(text.contains("payload bytes of WRITE_HOST at 0x60"), "{text}");
    assert_eq!(v["commands"][0]["dispatch"][2]["offset"], 0x60);
    assert_eq!(v["commands"][0]["dispatch"][2]["payload_offset"], 0x50);
}

/// What the dump does not hold, in fields: commands relayed from device
/// memory, payload bytes relayed to an earlier command (by a later inline
/// payload or a paged relay), and the payload still owed at the end.
#[test]
fn relays_are_structured() {
    let out = decode(&["--json", dump("relays.bin", &relay_stream()).to_str().unwrap()]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out);
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds[0]["relays"]["kind"], "dispatch_commands");
    assert_eq!(cmds[0]["relays"]["source"], "device memory");
    let write = &cmds[1]["dispatch"][0];
    assert_eq!(
        (&write["command"], &write["offset"], &write["missing"]),
        (&"WRITE_LINEAR".into(), &0x50.into(), &64.into())
    );
    let continues = &cmds[2]["continues"];
    assert_eq!(
        (&continues["owner"], &continues["owner_offset"], &continues["bytes_used"], &continues["bytes_owed"]),
        (&"WRITE_LINEAR".into(), &0x50.into(), &32.into(), &32.into()),
        "{continues}"
    );
    assert_eq!((&continues["offset"], &continues["payload_offset"]), (&0x90.into(), &0.into()));
    assert_eq!(cmds[2]["dispatch"], serde_json::json!([]), "its 32 bytes are all payload");
    assert_eq!(cmds[3]["fields"]["memory"], "dram");
    let relays = &cmds[3]["relays"];
    assert_eq!((&relays["bytes_used"], &relays["bytes_owed"]), (&16.into(), &16.into()), "{relays}");
    assert_eq!(
        v["owed_at_end"],
        serde_json::json!({"owner": "WRITE_LINEAR", "owner_offset": 0x50, "bytes_owed": 16,
                           "text": "dump ends while WRITE_LINEAR at 0x50 still expects 16 payload bytes"})
    );
}

/// A malformed dump's JSON keeps what decoded before the bad byte, nested
/// commands too, with typed fields; the error names the byte.
#[test]
fn malformed_dump_json_keeps_what_decoded() {
    let mut bytes = sample_stream();
    bytes[16 + 0x40] = 0x00; // the WAIT's id
    let out = decode(&["--json", dump("bad_nested.json.bin", &bytes).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert_eq!(
        v["error"],
        serde_json::json!({"offset": 0x50, "kind": "unknown_id", "space": "dispatch", "id": 0,
                           "message": "unknown Dispatch command id 0x00"})
    );
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds.len(), 1, "{v}");
    let nested = cmds[0]["dispatch"].as_array().unwrap();
    assert_eq!(nested.len(), 1, "the WRITE_LINEAR before the bad byte: {v}");
    assert_eq!(nested[0]["fields"]["length"], 40);
    assert_eq!(v["owed_at_end"], serde_json::Value::Null);

    let mut bytes = sample_stream();
    bytes[0x80] = 0x7f;
    let out = decode(&["--json", dump("bad_id.json.bin", &bytes).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let v = json(&out);
    assert_eq!(v["error"]["offset"], 0x80);
    assert_eq!(v["commands"].as_array().unwrap().len(), 1, "{v}");
    // The WRITE_HOST's payload never came: the listing stops owing it, at
    // the bad byte (not at the dump's end, which it never reached).
    assert_eq!(v["owed_at_end"]["owner_offset"], 0x60, "{v}");
    assert_eq!(v["owed_at_end"]["bytes_owed"], 256, "{v}");
    let stops = "the listing stops at the malformed byte 0x80 while WRITE_HOST at 0x60 still expects 256 payload bytes";
    assert_eq!(v["owed_at_end"]["text"], stops, "{v}");
    let out = decode(&[dump("bad_id.bin", &bytes).to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("note: {stops}\n")),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A dump cut inside a command says so in typed fields, for a script to
/// tell a cut dump from a corrupt one without reading the message.
#[test]
fn a_cut_dump_error_is_typed() {
    let bytes = sample_stream();
    let out = decode(&["--json", dump("cut.json.bin", &bytes[..40]).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = &json(&out)["error"];
    assert_eq!(e["kind"], "truncated", "{e}");
    assert_eq!(e["offset"], 0, "{e}");
    assert_eq!(e["available"], 40, "{e}");
    assert!(e["needed"].as_u64().is_some_and(|n| n > 40), "{e}");
    assert!(e["message"].as_str().is_some_and(|m| m.starts_with("truncated")), "{e}");
}
