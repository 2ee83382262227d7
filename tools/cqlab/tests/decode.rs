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

/// One dispatch stream built by the encoder, with `edit` applied (a
/// corruption the encoder would refuse to write).
fn dispatch_stream(
    build: impl FnOnce(&mut cqlab_abi::encode::DispatchWriter<'_>) -> Result<(), cqlab_abi::encode::EncodeError>,
    edit: impl FnOnce(&mut [u8]),
) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut enc = Encoder::new(&mut buf);
    enc.relay_inline(true, build).unwrap();
    let hdr = cqlab_abi::CMD_HEADER_SIZE;
    let length = u32::from_le_bytes(buf[4..8].try_into().unwrap()) as usize;
    let mut stream = buf[hdr..hdr + length].to_vec();
    edit(&mut stream);
    stream
}

/// `stream` cut at `cuts` into back-to-back `RELAY_INLINE`s: the
/// dispatcher sees the same bytes.
fn relays(stream: &[u8], cuts: &[usize]) -> Vec<u8> {
    use cqlab_abi::prefetch::{PrefetchCmdId, RelayInlineCmd};
    use zerocopy::IntoBytes;
    let mut out = Vec::new();
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(stream.len());
    for piece in bounds.windows(2).map(|w| &stream[w[0]..w[1]]) {
        let stride = (16 + piece.len()).next_multiple_of(64);
        let cmd = RelayInlineCmd {
            id: PrefetchCmdId::RelayInline as u8,
            length: piece.len() as u32,
            stride: stride as u32,
            ..Default::default()
        };
        let start = out.len();
        out.extend_from_slice(cmd.as_bytes());
        out.extend_from_slice(piece);
        out.resize(start + stride, 0);
    }
    out
}

/// A packed write of 16 bytes to two cores, its second destination word
/// 0xffffffff (no coordinates): header, table (16 bytes), two blocks.
fn bad_packed() -> Vec<u8> {
    let dests = [cqlab_abi::noc::Coord::new(1, 2), cqlab_abi::noc::Coord::new(2, 2)];
    dispatch_stream(
        |w| w.write_packed(0x1000, &dests, cqlab_abi::encode::PackedData::PerCore(&[5; 32])),
        |s| s[20..24].copy_from_slice(&u32::MAX.to_le_bytes()),
    )
}

/// A dispatch `DEBUG` of 12 bytes whose header's checksum is wrong.
fn bad_debug() -> Vec<u8> {
    dispatch_stream(|w| w.debug(&[9; 12]), |s| s[8..12].copy_from_slice(&0x3039u32.to_le_bytes()))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The dispatcher sees one stream whatever relays carry it: a payload
/// that fails its rule is refused at its command's offset (0x10), exit 2,
/// with the same message whether it sits in its header's `RELAY_INLINE`,
/// the next one, or is spread over three.
#[test]
fn a_split_payload_is_checked_as_an_unsplit_one() {
    let cases = [
        ("packed", bad_packed(), "invalid WRITE_PACKED destination 4294967295"),
        ("debug", bad_debug(), "checksum mismatch: header says 0x00003039, payload sums to 0x0000006c"),
    ];
    for (name, stream, message) in cases {
        let expected = format!("at byte offset 16 (0x10): {message}");
        // Whole; header alone then payload; header, a part, the rest.
        for (how, cuts) in [("whole", &[][..]), ("split", &[16][..]), ("three", &[16, 32][..])] {
            if how == "three" && stream.len() <= 32 {
                continue;
            }
            let file = dump(&format!("{name}_{how}.bin"), &relays(&stream, cuts));
            let out = decode(&[file.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(2), "{name} {how}: {}", stderr(&out));
            assert!(stderr(&out).contains(&expected), "{name} {how}: {}", stderr(&out));
            let out = decode(&["--json", file.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(2), "{name} {how}");
            let v = json(&out);
            assert_eq!((&v["error"]["offset"], &v["error"]["message"]), (&16.into(), &message.into()), "{v}");
            assert_eq!(v["owed_at_end"], serde_json::Value::Null, "refused, so owed nothing: {v}");
        }
    }
}

/// Split over three relays with only the last bytes of the packed write's
/// table bad: all its table's pieces are put together, in order.
#[test]
fn a_payload_over_three_relays_is_checked_whole() {
    let dests = [cqlab_abi::noc::Coord::new(1, 2); 5];
    // Table of 20 bytes (32 padded): its last word is in the third relay.
    let stream =
        dispatch_stream(|w| w.write_packed(0x1000, &dests, cqlab_abi::encode::PackedData::Shared(&[5; 16])), |_| {});
    let good = decode(&[dump("packed3_ok.bin", &relays(&stream, &[16, 32])).to_str().unwrap()]);
    assert!(good.status.success(), "{}", stderr(&good));
    let mut bad = stream.clone();
    bad[16 + 16..16 + 20].copy_from_slice(&0x4000u32.to_le_bytes());
    let out = decode(&[dump("packed3_bad.bin", &relays(&bad, &[16, 32])).to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("at byte offset 16 (0x10): invalid WRITE_PACKED destination 16384"),
        "{}",
        stderr(&out)
    );
}

/// A payload the dispatcher checks that a `RELAY_LINEAR` brings from device
/// memory is not in the dump: the listing says it was not checked, in
/// text and JSON, rather than passing it.
#[test]
fn a_relayed_payload_is_reported_not_checked() {
    let chip = chip();
    // The packed write's header alone inline; its table and blocks relayed.
    let header = &bad_packed()[..16];
    let mut bytes = relays(header, &[]);
    let mut tail = vec![0u8; 64];
    let mut enc = Encoder::new(&mut tail);
    enc.relay_linear(chip.dram_addr(0, 0x1000), 48).unwrap();
    bytes.extend_from_slice(enc.bytes());
    let file = dump("packed_linear.bin", &bytes);
    let out = decode(&[file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let note = "-> 48 payload bytes of WRITE_PACKED at 0x10, 0 still owed (not in this dump: its destinations are not checked)";
    assert!(text.contains(note), "{text}");
    let v = json(&decode(&["--json", file.to_str().unwrap()]));
    assert_eq!(v["commands"][1]["relays"]["not_checked"], "destinations", "{v}");
    // A payload with no rule, relayed the same way, has nothing unchecked.
    let v = json(&decode(&["--json", dump("ok.relay.bin", &sample_stream()).to_str().unwrap()]));
    assert_eq!(v["commands"][1]["relays"]["not_checked"], serde_json::Value::Null, "{v}");
}
