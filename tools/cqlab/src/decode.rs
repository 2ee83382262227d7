//! `cqlab decode FILE`: prints a raw issue-queue dump as a command list.
//!
//! The dispatcher sees one byte stream made of every relay; a dispatch
//! command's payload may come from a later `RELAY_LINEAR`/`RELAY_PAGED`
//! (read-back through `WRITE_HOST`, DRAM-to-L1 writes). The decoder follows
//! that stream so such relays are attributed to the command they feed.

use crate::decode_rings::Kind;
use crate::out::outln;
use anyhow::{Context, Result};
use cqlab_abi::decode::{
    decode_dispatch_partial, decode_prefetch, DecodeError, DispatchHeader, PayloadRule, PrefetchHeader,
};
use cqlab_abi::fields::{FieldValue, Fields};
use cqlab_abi::noc::NocAddr;
use serde_json::{json, Value};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Raw dump: an issue queue (prefetch commands from byte 0), a completion
    /// ring or a trace ring (see --kind). `cqlab dump --json` and the
    /// hang dump show a live device; docs/cli.md says how to get raw bytes.
    #[arg(required_unless_present = "device")]
    pub file: Option<std::path::PathBuf>,
    /// What the dump holds.
    #[arg(long, value_enum, default_value = "issue")]
    pub kind: Kind,
    /// Read the dump from a live simulator daemon (`sim:PATH`) instead of a file
    /// (--kind completion with --cq, or --kind trace with --core).
    #[arg(long, conflicts_with = "file")]
    pub device: Option<String>,
    /// Completion queue to read from the device (0..=15, and one the device has).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..cqlab_abi::noc::MAX_CQS as i64))]
    pub cq: u8,
    /// Core (X,Y NOC coordinates: a worker, prefetcher or dispatcher of the
    /// device) whose trace ring to read from the device.
    #[arg(long, value_parser = crate::args::core)]
    pub core: Option<cqlab_abi::noc::Coord>,
    /// The chip a trace-ring dump FILE was taken on (with the default two
    /// queues), to name its cores; a live device says which it is.
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn validate(a: &Args, given: &crate::cli::Given<'_>) -> Result<()> {
    a.chip.validate()?;
    if let Some(f) = &a.file {
        crate::input::check_file("dump", f)?;
        given.refuse(&["cq", "core"], || "reads a live device (--device sim:PATH); a dump FILE is one ring".into())?;
        return Ok(());
    }
    let device = a.device.as_deref().unwrap_or_default();
    crate::device::validate_daemon("--device", device)?;
    given.refuse(&["chip", "harvest"], || "names the chip of a dump FILE; a live device says which it is".into())?;
    match a.kind {
        Kind::Issue => Err(crate::cli::Usage(
            "--kind issue reads a dump FILE; a live device gives --kind completion or trace".into(),
        )
        .into()),
        Kind::Completion => Ok(given.refuse(&["core"], || "is for --kind trace".into())?),
        Kind::Trace => {
            given.refuse(&["cq"], || "is for --kind completion".into())?;
            crate::cli::check(a.core.is_some(), || "--kind trace --device needs --core X,Y (whose ring)".into())
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.kind != Kind::Issue || args.device.is_some() {
        let (file, device) = (args.file.as_deref(), args.device.as_deref());
        return crate::decode_rings::run(args.kind, file, device, args.cq, args.core, &args.chip, args.json);
    }
    let file = args.file.clone().context("an issue-queue dump FILE")?;
    let bytes = crate::input::read_bytes("dump", &file, crate::input::MAX_DUMP_BYTES)?;
    if bytes.is_empty() {
        return Err(crate::cli::Usage(format!(
            "{} is empty: an issue-queue dump holds at least one command",
            file.display()
        ))
        .into());
    }
    let listing = decode_dump(&bytes);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&listing.to_json())?);
    } else if !listing.text.is_empty() {
        // Nothing decoded (a bad first command): no blank line before the error.
        outln!("{}", listing.text.trim_end_matches('\n'));
    }
    match listing.error {
        None => Ok(ExitCode::SUCCESS),
        Some(e) => {
            // What decoded is printed above; the dump is still malformed.
            crate::cli::report(&format!("malformed issue-queue dump {}: {e}", file.display()));
            Ok(crate::exit::Exit::Usage.into())
        }
    }
}

/// The decoded dump: text lines, JSON records, and the first error if any.
pub struct Listing {
    pub text: String,
    pub commands: Vec<Value>,
    pub error: Option<DecodeError>,
    pub trailing_zero_bytes: usize,
    /// The dispatch command still owed payload bytes where the listing
    /// stops (the dump's end, or its first bad byte).
    pub owed_at_end: Option<Owed>,
}

impl Listing {
    fn to_json(&self) -> Value {
        json!({
            "commands": self.commands,
            "trailing_zero_bytes": self.trailing_zero_bytes,
            "owed_at_end": self.owed_at_end.as_ref().map(|o| json!({
                "owner": o.command, "owner_offset": o.offset, "bytes_owed": o.bytes, "text": o.end_note(self.error.map(|e| e.offset)),
            })),
            "error": self.error.map(error_json),
        })
    }
}

/// A decode error as JSON: its byte, its `kind` and that kind's fields
/// typed (as the commands' `fields` are), and the `message` the text
/// prints.
fn error_json(e: DecodeError) -> Value {
    use cqlab_abi::decode::{DecodeErrorKind as K, Space};
    let mut v = match e.kind {
        K::UnknownId { space, id } => json!({
            "kind": "unknown_id",
            "space": match space { Space::Prefetch => "prefetch", Space::Dispatch => "dispatch" },
            "id": id,
        }),
        K::Truncated { needed, available } => json!({ "kind": "truncated", "needed": needed, "available": available }),
        K::Misaligned { align } => json!({ "kind": "misaligned", "align": align }),
        K::BadSize { field, value } => json!({ "kind": "bad_size", "field": field, "value": value }),
        K::BadFlags { flags } => json!({ "kind": "bad_flags", "flags": flags }),
        K::BadChecksum { expected, found } => json!({ "kind": "bad_checksum", "expected": expected, "found": found }),
    };
    v["offset"] = json!(e.offset);
    v["message"] = json!(e.kind.to_string());
    v
}

/// A dispatch command whose payload the stream still owes: later relays
/// carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owed {
    pub command: &'static str,
    /// The command's byte offset in the dump.
    pub offset: usize,
    /// Payload bytes still to come.
    pub bytes: u64,
    header: DispatchHeader,
    /// Its payload rule, while the bytes the rule reads are still arriving.
    check: Option<PendingCheck>,
}

/// A payload rule (`DispatchHeader::payload_rule`) waiting for its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
struct PendingCheck {
    rule: PayloadRule,
    /// The rule's bytes that arrived, in order; `None` once some came by
    /// `RELAY_LINEAR`/`RELAY_PAGED`: they are in device memory, not in the
    /// dump, so the rule cannot be checked.
    seen: Option<Vec<u8>>,
    /// The rule's bytes that arrived, in the dump or not.
    arrived: u64,
}

impl Owed {
    /// `header` at dump offset `offset`, whose first payload bytes
    /// (`present`) are in its own inline payload and `missing` are not.
    fn new(header: DispatchHeader, offset: usize, present: &[u8], missing: u64) -> Self {
        // A rule whose bytes are all present was checked with the header
        // (`decode_dispatch_partial`).
        let check = header.payload_rule().filter(|r| (present.len() as u64) < r.len).map(|rule| PendingCheck {
            rule,
            seen: Some(present.to_vec()),
            arrived: present.len() as u64,
        });
        Self { command: header.id().name(), offset, bytes: missing, header, check }
    }

    /// How the text names the command: `WRITE_HOST at 0x60`.
    fn owner(&self) -> String {
        format!("{} at {:#x}", self.command, self.offset)
    }

    /// Where the listing stops owing this: the dump's end, or the first
    /// malformed byte (`stopped_at`), past which nothing is known.
    fn end_note(&self, stopped_at: Option<usize>) -> String {
        let owed = format!("{} still expects {} payload bytes", self.owner(), self.bytes);
        match stopped_at {
            Some(at) => format!("the listing stops at the malformed byte {at:#x} while {owed}"),
            None => format!("dump ends while {owed}"),
        }
    }

    /// `relayed` bytes of the stream arrive: takes those it is owed.
    /// Returns how many, and how many of them its rule reads.
    fn take(&mut self, relayed: u64) -> (u64, u64) {
        let used = self.bytes.min(relayed);
        self.bytes -= used;
        let for_rule = self.check.as_ref().map_or(0, |c| (c.rule.len - c.arrived).min(used));
        (used, for_rule)
    }

    /// The next bytes of the stream are the inline `payload`: takes its
    /// share (returned) and, once its rule's bytes are all in the dump,
    /// checks them as the dispatcher would. A refusal is the command's, at
    /// its offset, as when its whole payload is inline.
    fn take_inline(&mut self, payload: &[u8]) -> (u64, Result<(), DecodeError>) {
        let (used, for_rule) = self.take(payload.len() as u64);
        let Some(check) = self.check.as_mut().filter(|_| for_rule > 0) else {
            return (used, Ok(()));
        };
        if let Some(seen) = &mut check.seen {
            seen.extend_from_slice(&payload[..for_rule as usize]);
        }
        check.arrived += for_rule;
        if check.arrived < check.rule.len {
            return (used, Ok(()));
        }
        let checked = match self.check.take().and_then(|c| c.seen) {
            Some(seen) => self.header.check_payload(&seen).map_err(|kind| DecodeError { offset: self.offset, kind }),
            // Reported not checked by the relay that brought its bytes.
            None => Ok(()),
        };
        (used, checked)
    }

    /// `relayed` bytes arrive from device memory: takes its share. Returns
    /// the bytes it took, and what of its payload cannot be checked if
    /// any of them are ones its rule reads.
    fn take_relayed(&mut self, relayed: u64) -> (u64, Option<&'static str>) {
        let (used, for_rule) = self.take(relayed);
        let Some(check) = self.check.as_mut().filter(|_| for_rule > 0) else {
            return (used, None);
        };
        let what = check.rule.what;
        check.seen = None;
        check.arrived += for_rule;
        if check.arrived == check.rule.len {
            self.check = None;
        }
        (used, Some(what))
    }

    /// `Some(self)` while it is still owed bytes.
    fn still_owed(self) -> Option<Owed> {
        Some(self).filter(|o| o.bytes > 0)
    }

    /// A relay's `used` bytes that went to this command (after `take`), in
    /// JSON; `not_checked` names what of its payload the dump cannot check.
    fn payload_json(&self, used: u64, not_checked: Option<&str>, text: &str) -> Value {
        json!({ "kind": "payload", "owner": self.command, "owner_offset": self.offset, "bytes_used": used,
                "bytes_owed": self.bytes, "not_checked": not_checked, "text": text })
    }
}

/// A header's fields as one JSON object of typed values (docs/cli.md).
fn fields_json(fields: Fields) -> Value {
    Value::Object(fields.map(|f| (f.name.to_owned(), field_json(f.value))).collect())
}

fn field_json(value: FieldValue) -> Value {
    match value {
        FieldValue::Dec(n) | FieldValue::Hex(n) => json!(n),
        FieldValue::Word(w) => json!(w),
        // A decoded header has no bits that no flag names: `parse` refuses them.
        FieldValue::Flags(set) => json!(set.names().collect::<Vec<_>>()),
        FieldValue::Noc(a) => noc_json(a),
        FieldValue::Choice(c) => json!(c),
        FieldValue::Switch(on) => json!(on),
    }
}

/// `{x, y, addr}` of a unicast; a multicast rectangle's first corner, with
/// `end: {x, y}`; `flags` when bits above the coordinates are set.
fn noc_json(a: NocAddr) -> Value {
    let (start, end) = a.rect();
    let mut v = json!({ "x": start.x, "y": start.y, "addr": a.local() });
    if a.is_multicast() {
        v["end"] = json!({ "x": end.x, "y": end.y });
    }
    if a.flags() != 0 {
        v["flags"] = json!(a.flags());
    }
    v
}

/// A command's record: where it is, what it is, its typed fields and its
/// text form.
fn command_json(offset: usize, id: u8, name: &str, fields: Fields, text: String) -> Value {
    json!({ "offset": offset, "id": id, "command": name, "fields": fields_json(fields), "text": text })
}

/// Decodes prefetch commands back to back until the end, an all-zero tail
/// (unused ring space) or the first malformed byte.
pub fn decode_dump(bytes: &[u8]) -> Listing {
    let mut out =
        Listing { text: String::new(), commands: Vec::new(), error: None, trailing_zero_bytes: 0, owed_at_end: None };
    let mut offset = 0;
    // Payload bytes the dispatch stream still owes to the last dispatch command.
    let mut pending: Option<Owed> = None;
    while offset < bytes.len() {
        if bytes[offset..].iter().all(|&b| b == 0) {
            out.trailing_zero_bytes = bytes.len() - offset;
            out.text.push_str(&format!("{offset:#07x}  ({} zero bytes: unused)\n", out.trailing_zero_bytes));
            break;
        }
        let (cmd, next) = match decode_prefetch(bytes, offset) {
            Ok(v) => v,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        };
        let header = cmd.header;
        out.text.push_str(&format!("{offset:#07x}  [{:#04x}] {header}\n", header.id() as u8));
        let mut record =
            command_json(offset, header.id() as u8, header.id().name(), header.fields(), header.to_string());
        match header {
            PrefetchHeader::RelayInline { .. } => {
                let base = offset + cqlab_abi::CMD_HEADER_SIZE;
                let inline = decode_inline(cmd.payload, base, &mut pending, &mut out.text);
                if let Some(continues) = inline.continues {
                    record["continues"] = continues;
                }
                record["dispatch"] = Value::Array(inline.nested);
                if let Some(e) = inline.error {
                    out.commands.push(record);
                    out.error = Some(e);
                    break;
                }
            }
            PrefetchHeader::RelayLinear(_) | PrefetchHeader::RelayPaged(_) => {
                let relayed = header.relay_len().next_multiple_of(16);
                let relays = match pending.take() {
                    Some(mut owed) => {
                        let (used, not_checked) = owed.take_relayed(relayed);
                        let mut note = format!("{used} payload bytes of {}, {} still owed", owed.owner(), owed.bytes);
                        if let Some(what) = not_checked {
                            // Not a pass: the dispatcher checks bytes this
                            // dump does not hold.
                            note.push_str(&format!(" (not in this dump: its {what} are not checked)"));
                        }
                        out.text.push_str(&format!("           -> {note}\n"));
                        let json = owed.payload_json(used, not_checked, &note);
                        pending = owed.still_owed();
                        json
                    }
                    None => {
                        let note = "dispatch commands from device memory (not in this dump)";
                        out.text.push_str(&format!("           -> {note}\n"));
                        json!({ "kind": "dispatch_commands", "source": "device memory", "text": note })
                    }
                };
                record["relays"] = relays;
            }
            _ => {}
        }
        out.commands.push(record);
        offset = next;
    }
    if let Some(owed) = pending {
        out.text.push_str(&format!("note: {}\n", owed.end_note(out.error.map(|e| e.offset))));
        out.owed_at_end = Some(owed);
    }
    out
}

/// One inline payload's dispatch stream: the payload bytes it owed an
/// earlier command (JSON), its commands (JSON), and the first error.
struct Inline {
    continues: Option<Value>,
    nested: Vec<Value>,
    error: Option<DecodeError>,
}

/// Decodes the dispatch commands in one inline payload at file offset
/// `base`. The text counts their offsets from `base` (`+0x0040`); their
/// JSON has that as `payload_offset` and the file offset as `offset`.
fn decode_inline(payload: &[u8], base: usize, pending: &mut Option<Owed>, text: &mut String) -> Inline {
    let mut inline = Inline { continues: None, nested: Vec::new(), error: None };
    let mut at = 0usize;
    if let Some(mut owed) = pending.take() {
        let (used, checked) = owed.take_inline(payload);
        let note = format!("{used} payload bytes of {}", owed.owner());
        text.push_str(&format!("           +{:#06x}  {note}\n", 0));
        let mut continues = owed.payload_json(used, None, &note);
        continues["offset"] = json!(base);
        continues["payload_offset"] = json!(0);
        inline.continues = Some(continues);
        if let Err(e) = checked {
            // The dispatcher refuses the command: nothing after it runs,
            // and it is owed nothing more.
            inline.error = Some(e);
            return inline;
        }
        at = used as usize;
        *pending = owed.still_owed();
    }
    while at < payload.len() {
        let (cmd, next) = match decode_dispatch_partial(payload, at) {
            Ok(v) => v,
            Err(e) => {
                inline.error = Some(DecodeError { offset: base + e.offset, kind: e.kind });
                break;
            }
        };
        let h = cmd.header;
        text.push_str(&format!("           +{at:#06x}  [{:#04x}] {h}\n", h.id() as u8));
        let mut record = command_json(base + at, h.id() as u8, h.id().name(), h.fields(), h.to_string());
        record["payload_offset"] = json!(at);
        record["payload_bytes"] = json!(h.payload_len());
        record["missing"] = json!(cmd.missing);
        inline.nested.push(record);
        if cmd.missing > 0 {
            *pending = Some(Owed::new(h, base + at, cmd.payload, cmd.missing));
        }
        at = next;
    }
    inline
}
