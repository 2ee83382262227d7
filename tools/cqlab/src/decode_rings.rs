//! `cqlab decode --kind completion|trace`: completion-queue and trace-ring
//! dumps as readable records, from a file or a live simulator daemon
//! (`--device sim:PATH`).
//!
//! A completion dump is the raw bytes of one CQ's completion ring from its
//! offset 0: records (`CompletionHeader`, payload, padding to the PCIe
//! alignment) back to back until an all-zero header (unused space). A
//! trace-ring dump is the `TRACE_RING` region of one core: its header, then
//! the record slots.

use crate::out::outln;
use anyhow::{Context, Result};
use cqlab_abi::completion::{record_size, CompletionHeader, CompletionKind, EventRecord};
use cqlab_abi::decode::Space;
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::{endpoint, Coord, Endpoint};
use cqlab_abi::trace::{TraceKind, TraceRecord, TraceRingHeader, CAPACITY, RECORDS_BASE};
use cqlab_workloads::analysis::command_name;
use serde_json::{json, Value};
use std::mem::size_of;
use zerocopy::FromBytes;

/// A decoded dump: text, JSON records, and the first problem found.
pub struct Decoded {
    pub text: String,
    pub records: Vec<Value>,
    pub error: Option<String>,
}

/// Completion records from the start of a completion-ring dump.
pub fn decode_completion(bytes: &[u8]) -> Decoded {
    let mut d = Decoded { text: String::new(), records: Vec::new(), error: None };
    let mut at = 0usize;
    let hs = size_of::<CompletionHeader>();
    while at + hs <= bytes.len() {
        let h = CompletionHeader::read_from_bytes(&bytes[at..at + hs]).expect("sized");
        if bytes[at..at + hs].iter().all(|&b| b == 0) {
            d.text.push_str(&format!("{at:#07x}  ({} bytes from here: unused)\n", bytes.len() - at));
            break;
        }
        let Some(kind) = CompletionKind::from_u8(h.kind) else {
            d.error = Some(format!("offset {at:#x}: completion kind {} is neither data (1) nor event (2)", h.kind));
            break;
        };
        let size = record_size(h.length) as usize;
        let end = at + hs + h.length as usize;
        let mut rec = json!({"offset": at, "kind": format!("{kind:?}").to_lowercase(), "cq": h.cq,
                             "seq": h.seq, "tag": h.tag, "length": h.length, "record_bytes": size});
        let payload = &bytes[at + hs..end.min(bytes.len())];
        let what = match kind {
            CompletionKind::Event => match EventRecord::read_from_prefix(payload) {
                Ok((ev, _)) => {
                    rec["event"] = json!({"id": ev.event_id, "cq": ev.cq, "cycle": ev.cycle});
                    format!("event {} of CQ{} at device cycle {}", ev.event_id, ev.cq, ev.cycle)
                }
                Err(_) => {
                    d.error = Some(format!("offset {at:#x}: event record with {} payload bytes", payload.len()));
                    break;
                }
            },
            CompletionKind::Data => {
                let head: Vec<String> = payload.iter().take(16).map(|b| format!("{b:02x}")).collect();
                format!(
                    "data tag {} {} bytes: {}{}",
                    h.tag,
                    h.length,
                    head.join(" "),
                    if h.length > 16 { " ..." } else { "" }
                )
            }
        };
        d.text.push_str(&format!("{at:#07x}  seq {:<6} CQ{}  {what}\n", h.seq, h.cq));
        if end > bytes.len() {
            let note = format!("record runs {} bytes past the dump (it wraps to the ring start)", end - bytes.len());
            d.text.push_str(&format!("           {note}\n"));
            rec["wraps"] = json!(true);
            d.records.push(rec);
            break;
        }
        d.records.push(rec);
        at += size;
    }
    // Bytes left that cannot hold a header: a truncated dump, unless unused.
    if d.error.is_none() && at < bytes.len() && at + hs > bytes.len() && bytes[at..].iter().any(|&b| b != 0) {
        d.error = Some(format!(
            "offset {at:#x}: {} bytes left, too short for a {hs}-byte completion header (truncated dump?)",
            bytes.len() - at
        ));
    }
    d
}

fn describe(r: &TraceRecord) -> (String, String) {
    let c = Coord::unpack(r.core as u32);
    let role = cqlab_workloads::analysis::Analysis::role(c);
    let space = match endpoint(c) {
        Endpoint::Prefetcher { .. } => Some(Space::Prefetch),
        Endpoint::Dispatcher { .. } => Some(Space::Dispatch),
        _ => None,
    };
    let kind = TraceKind::from_u16(r.kind);
    let what = match (kind, space) {
        (Some(k @ (TraceKind::CmdStart | TraceKind::CmdEnd)), Some(s)) => {
            format!("{:<12} {} ({} bytes)", k.label(), command_name(s, r.arg0), r.arg1)
        }
        (Some(k), _) => format!("{:<12} {:#x} {:#x}", k.label(), r.arg0, r.arg1),
        (None, _) => format!("kind {} (unknown) {:#x} {:#x}", r.kind, r.arg0, r.arg1),
    };
    (role, what)
}

/// A core's trace ring from a dump of its `TRACE_RING` region, oldest first.
pub fn decode_trace_ring(bytes: &[u8]) -> Decoded {
    let mut d = Decoded { text: String::new(), records: Vec::new(), error: None };
    let Ok((h, _)) = TraceRingHeader::read_from_prefix(bytes) else {
        d.error = Some(format!("{} bytes: too short for a trace-ring header", bytes.len()));
        return d;
    };
    let rs = size_of::<TraceRecord>() as u32;
    if h.capacity != CAPACITY || h.record_size != rs {
        d.error = Some(format!(
            "trace-ring header says capacity {} and record size {}, this ABI has {CAPACITY} and {rs}",
            h.capacity, h.record_size
        ));
        return d;
    }
    let first = h.next_seq.saturating_sub(CAPACITY);
    d.text.push_str(&format!(
        "trace ring: {} records written, {} overwritten, showing seq {first}..{}\n",
        h.next_seq, first, h.next_seq
    ));
    for seq in first..h.next_seq {
        let at = (RECORDS_BASE - TRACE_RING.base + (seq % CAPACITY) * rs) as usize;
        let Some(slot) = bytes.get(at..at + rs as usize) else {
            d.error = Some(format!("dump ends at {} bytes, record {seq} is at {at:#x}", bytes.len()));
            break;
        };
        let r = TraceRecord::read_from_bytes(slot).expect("sized");
        if r.seq != seq {
            d.text.push_str(&format!("#{seq:<7} (slot holds seq {}: overwritten while dumped)\n", r.seq));
            continue;
        }
        let (role, what) = describe(&r);
        d.text.push_str(&format!("#{seq:<7} @{:<12} {role:<18} {what}\n", r.cycle));
        d.records.push(json!({"seq": r.seq, "cycle": r.cycle, "core": Coord::unpack(r.core as u32).to_string(),
                              "role": role, "kind": TraceKind::from_u16(r.kind).map(|k| k.label()),
                              "arg0": r.arg0, "arg1": r.arg1}));
    }
    d
}

/// Reads the dump bytes from a live simulator daemon: CQ `cq`'s completion
/// ring, or `core`'s trace ring.
pub fn read_live(device: &str, kind: &str, cq: u8, core: Option<Coord>) -> Result<Vec<u8>> {
    anyhow::ensure!(
        device.starts_with("sim:"),
        "--device {device:?}: live dumps come from a simulator daemon (sim:PATH)"
    );
    // Read-only: no lock, no HELLO, nothing changes for the device's owner.
    let (mut dev, _) = cqlab_driver::Device::observe(device).with_context(|| format!("observing {device}"))?;
    let cfg = dev.config().clone();
    match kind {
        "completion" => {
            anyhow::ensure!(cq < dev.num_cqs(), "--cq {cq}: the device has {} queues", dev.num_cqs());
            let l = cqlab_abi::sysmem::CqSysmemLayout::for_cq(cq, cfg.issue_size, cfg.completion_size);
            let mut ring = vec![0u8; (l.end() - l.completion_base()) as usize];
            dev.backend().sysmem_read(l.completion_base() as usize, &mut ring)?;
            Ok(ring)
        }
        _ => {
            let core = core.context("--core X,Y names the core whose trace ring to read")?;
            let mut buf = vec![0u8; TRACE_RING.size as usize];
            dev.backend()
                .read(cqlab_abi::noc::NocAddr::unicast(core, TRACE_RING.base as u64), &mut buf)
                .with_context(|| format!("reading the trace ring of core {core}"))?;
            Ok(buf)
        }
    }
}

fn parse_core(s: &str) -> Result<Coord> {
    let (x, y) = s.split_once(',').with_context(|| format!("--core {s:?}: expected X,Y"))?;
    Ok(Coord::new(x.trim().parse().context("--core X")?, y.trim().parse().context("--core Y")?))
}

/// `cqlab decode --kind completion|trace`: a dump from `file`, or read
/// live from `device` (queue `cq`'s completion ring, `core`'s trace ring).
pub fn run(
    kind: &str,
    file: Option<&std::path::Path>,
    device: Option<&str>,
    cq: u8,
    core: Option<&str>,
    json: bool,
) -> Result<std::process::ExitCode> {
    anyhow::ensure!(
        matches!(kind, "completion" | "trace"),
        "--kind {kind:?}: issue, completion or trace (a live device has no issue-queue dump here)"
    );
    let (bytes, source) = match (device, file) {
        (Some(dev), _) => {
            let core = core.map(parse_core).transpose()?;
            (read_live(dev, kind, cq, core)?, dev.to_owned())
        }
        (None, Some(f)) => {
            (std::fs::read(f).with_context(|| format!("reading {}", f.display()))?, f.display().to_string())
        }
        (None, None) => anyhow::bail!("a dump FILE or --device sim:PATH"),
    };
    let d = if kind == "completion" { decode_completion(&bytes) } else { decode_trace_ring(&bytes) };
    if json {
        outln!("{}", serde_json::to_string_pretty(&json!({"kind": kind, "records": d.records, "error": d.error}))?);
    } else {
        outln!("{}", d.text.trim_end_matches('\n'));
    }
    match d.error {
        None => Ok(std::process::ExitCode::SUCCESS),
        Some(e) => {
            eprintln!("error: malformed {kind} dump {source}: {e}");
            Ok(std::process::ExitCode::from(crate::exit::USAGE))
        }
    }
}
