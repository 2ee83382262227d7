//! `cqlab decode FILE`: prints a raw issue-queue dump as a command list.
//!
//! The dispatcher sees one byte stream made of every relay; a dispatch
//! command's payload may come from a later `RELAY_LINEAR`/`RELAY_PAGED`
//! (read-back through `WRITE_HOST`, DRAM-to-L1 writes). The decoder follows
//! that stream so such relays are attributed to the command they feed.

use crate::decode_rings::Kind;
use crate::out::outln;
use anyhow::{Context, Result};
use cqlab_abi::decode::{decode_dispatch_partial, decode_prefetch, DecodeError, PrefetchHeader};
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
        given.refuse(&["cq", "core"], || "read a live device (--device sim:PATH); a dump FILE is one ring".into())?;
        return Ok(());
    }
    let device = a.device.as_deref().unwrap_or_default();
    crate::device::validate_daemon("--device", device)?;
    given.refuse(&["chip", "harvest"], || "name the chip of a dump FILE; a live device says which it is".into())?;
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
    } else {
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
}

impl Listing {
    fn to_json(&self) -> Value {
        json!({
            "commands": self.commands,
            "trailing_zero_bytes": self.trailing_zero_bytes,
            "error": self.error.map(|e| json!({ "offset": e.offset, "message": e.kind.to_string() })),
        })
    }
}

/// Decodes prefetch commands back to back until the end, an all-zero tail
/// (unused ring space) or the first malformed byte.
pub fn decode_dump(bytes: &[u8]) -> Listing {
    let mut out = Listing { text: String::new(), commands: Vec::new(), error: None, trailing_zero_bytes: 0 };
    let mut offset = 0;
    // Payload bytes the dispatch stream still owes to the last dispatch command.
    let mut pending: Option<(String, u64)> = None;
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
        let mut record = json!({ "offset": offset, "id": header.id() as u8, "command": header.id().name(),
                                 "fields": header.to_string() });
        match header {
            PrefetchHeader::RelayInline { .. } => {
                let base = offset + cqlab_abi::CMD_HEADER_SIZE;
                match decode_inline(cmd.payload, base, &mut pending, &mut out.text) {
                    Ok(nested) => record["dispatch"] = Value::Array(nested),
                    Err(e) => {
                        out.commands.push(record);
                        out.error = Some(e);
                        break;
                    }
                }
            }
            PrefetchHeader::RelayLinear(_) | PrefetchHeader::RelayPaged(_) => {
                let relayed = header.relay_len().next_multiple_of(16);
                let note = match pending.take() {
                    Some((owner, missing)) => {
                        let used = missing.min(relayed);
                        let owed = missing - used;
                        let note = format!("{used} payload bytes of {owner}, {owed} still owed");
                        if owed > 0 {
                            pending = Some((owner, owed));
                        }
                        note
                    }
                    None => "dispatch commands from device memory (not in this dump)".to_owned(),
                };
                out.text.push_str(&format!("           -> {note}\n"));
                record["relays"] = Value::String(note);
            }
            _ => {}
        }
        out.commands.push(record);
        offset = next;
    }
    if let Some((owner, missing)) = pending {
        out.text.push_str(&format!("note: dump ends while {owner} still expects {missing} payload bytes\n"));
    }
    out
}

/// Decodes the dispatch commands in one inline payload at file offset `base`.
fn decode_inline(
    payload: &[u8],
    base: usize,
    pending: &mut Option<(String, u64)>,
    text: &mut String,
) -> Result<Vec<Value>, DecodeError> {
    let mut nested = Vec::new();
    let mut at = 0usize;
    if let Some((owner, missing)) = pending.take() {
        let used = missing.min(payload.len() as u64) as usize;
        text.push_str(&format!("           +{:#06x}  {used} payload bytes of {owner}\n", 0));
        at = used;
        if (used as u64) < missing {
            *pending = Some((owner, missing - used as u64));
        }
    }
    while at < payload.len() {
        let (cmd, next) =
            decode_dispatch_partial(payload, at).map_err(|e| DecodeError { offset: base + e.offset, kind: e.kind })?;
        let h = cmd.header;
        text.push_str(&format!("           +{at:#06x}  [{:#04x}] {h}\n", h.id() as u8));
        nested.push(json!({ "offset": base + at, "id": h.id() as u8, "command": h.id().name(),
                            "fields": h.to_string(), "payload_bytes": h.payload_len(), "missing": cmd.missing }));
        if cmd.missing > 0 {
            *pending = Some((format!("{} at {:#x}", h.id().name(), base + at), cmd.missing));
        }
        at = next;
    }
    Ok(nested)
}
