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
use cqlab_abi::completion::{CompletionHeader, CompletionKind, EventRecord};
use cqlab_abi::decode::Space;
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::{Coord, DEFAULT_CQS, MAX_CQS};
use cqlab_abi::ring::RingPtr;
use cqlab_abi::sysmem::COMPLETION_WR_PTR;
use cqlab_abi::trace::{TraceKind, TraceRecord, TraceRingHeader, CAPACITY, RECORDS_BASE};
use cqlab_driver::{Role, Topology};
use cqlab_workloads::analysis::command_name;
use serde_json::{json, Value};
use std::mem::size_of;
use zerocopy::FromBytes;

/// What a dump holds (`cqlab decode --kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// An issue queue: prefetch commands from byte 0.
    Issue,
    /// One CQ's completion ring from its offset 0.
    Completion,
    /// One core's trace ring (its TRACE_RING region).
    Trace,
}

/// The first problem a dump has: where, if at a byte, and what. In JSON
/// `{"offset", "message"}`, as an issue dump's error (which adds a typed
/// `kind`; helper-31: these were one string).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DumpError {
    pub offset: Option<usize>,
    pub message: String,
}

impl DumpError {
    fn at(offset: usize, message: String) -> Self {
        Self { offset: Some(offset), message }
    }
    fn whole(message: String) -> Self {
        Self { offset: None, message }
    }
}

impl std::fmt::Display for DumpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(at) => write!(f, "offset {at:#x}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A decoded dump: text, JSON records, and the first problem found.
pub struct Decoded {
    pub text: String,
    pub records: Vec<Value>,
    pub error: Option<DumpError>,
    /// Where a completion dump's sequence of records ended before its end.
    pub end: Option<Value>,
}

/// Completion records from the start of a completion-ring dump, taken from
/// a ring of `ring_bytes` (a file dump is the whole ring: its length).
pub fn decode_completion(bytes: &[u8], ring_bytes: usize) -> Decoded {
    let mut d = Decoded { text: String::new(), records: Vec::new(), error: None, end: None };
    let mut at = 0usize;
    let hs = size_of::<CompletionHeader>();
    if bytes.is_empty() {
        // As an issue-queue dump: nothing to decode is not a dump.
        d.error =
            Some(DumpError::whole(format!("empty: a completion-ring dump holds at least one {hs}-byte record header")));
        return d;
    }
    // The last record's (queue, seq): the next one follows it.
    let mut last: Option<(u16, u32)> = None;
    while at + hs <= bytes.len() {
        let h = CompletionHeader::read_from_bytes(&bytes[at..at + hs]).expect("sized");
        if bytes[at..at + hs].iter().all(|&b| b == 0) {
            d.text.push_str(&format!("{at:#07x}  ({} bytes from here: unused)\n", bytes.len() - at));
            break;
        }
        let kind = CompletionKind::from_u8(h.kind);
        // A raw dump (a file) runs past the write pointer into what an
        // earlier lap or client left: after a whole sequence, what does not
        // follow it ends the records rather than making the dump malformed.
        if let Some((cq, seq)) = last {
            // Which header field does not follow, and how the text says so.
            let broken = match kind {
                None => Some(("kind", format!("completion kind {}", h.kind))),
                Some(_) if h.cq != cq => Some(("cq", format!("a record of CQ{}", h.cq))),
                Some(_) if h.seq != seq.wrapping_add(1) => Some(("seq", format!("seq {}", h.seq))),
                Some(_) => None,
            };
            // The record after this one, if its length is right, still
            // in the sequence: this one is corrupt, not past the pointer.
            let next_at = at + (hs + h.length as usize).next_multiple_of(cqlab_abi::PCIE_ALIGNMENT);
            let resumes = next_at.checked_add(hs).is_some_and(|e| e <= bytes.len()) && {
                let n = CompletionHeader::read_from_bytes(&bytes[next_at..next_at + hs]).expect("sized");
                n.cq == cq && n.seq == seq.wrapping_add(2) && CompletionKind::from_u8(n.kind).is_some()
            };
            if let Some((mismatch, found)) = broken.filter(|_| !resumes) {
                let end = format!(
                    "the sequence ends after seq {seq}: {found} here, where seq {} would follow (past the write \
                     pointer: older bytes, or corrupt; `decode --device sim:PATH --cq N` stops at the pointer)",
                    seq.wrapping_add(1)
                );
                d.text.push_str(&format!("{at:#07x}  ({end})\n"));
                d.end = Some(json!({
                    "offset": at, "after_seq": seq, "mismatch": mismatch,
                    "expected": {"cq": cq, "seq": seq.wrapping_add(1)},
                    "found": {"kind": h.kind, "cq": h.cq, "seq": h.seq},
                    "text": end,
                }));
                break;
            }
        }
        let Some(kind) = kind else {
            let message = format!("completion kind {} is neither data (1) nor event (2)", h.kind);
            d.error = Some(DumpError::at(at, message));
            break;
        };
        if let Some((_, seq)) = last.filter(|&(cq, seq)| h.cq != cq || h.seq != seq.wrapping_add(1)) {
            d.error = Some(DumpError::at(
                at,
                format!("CQ{} seq {} inside the sequence, where seq {} would follow", h.cq, h.seq, seq.wrapping_add(1)),
            ));
            break;
        }
        last = Some((h.cq, h.seq));
        // In usize: a garbage length is a finding, not an overflow.
        let size = (hs + h.length as usize).next_multiple_of(cqlab_abi::PCIE_ALIGNMENT);
        if let Some(message) = bad_header(&h, kind, size, ring_bytes) {
            d.error = Some(DumpError::at(at, message));
            break;
        }
        let end = at + hs + h.length as usize;
        let mut rec = json!({"offset": at, "kind": format!("{kind:?}").to_lowercase(), "cq": h.cq,
                             "seq": h.seq, "tag": h.tag, "length": h.length, "record_bytes": size});
        let payload = &bytes[at + hs..end.min(bytes.len())];
        let what = match kind {
            CompletionKind::Event => match EventRecord::read_from_prefix(payload) {
                Ok((ev, _)) => {
                    let bad = if ev.event_id == 0 {
                        Some("event id 0 (event ids start at 1)".to_owned())
                    } else if ev.cq >= MAX_CQS as u32 {
                        Some(format!("event of CQ{}: the ABI has at most {MAX_CQS} queues", ev.cq))
                    } else {
                        None
                    };
                    if let Some(message) = bad {
                        d.error = Some(DumpError::at(at, message));
                        break;
                    }
                    rec["event"] = json!({"id": ev.event_id, "cq": ev.cq, "cycle": ev.cycle});
                    format!("event {} of CQ{} at device cycle {}", ev.event_id, ev.cq, ev.cycle)
                }
                Err(_) => {
                    d.error = Some(DumpError::at(at, format!("event record with {} payload bytes", payload.len())));
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
        d.error = Some(DumpError::at(
            at,
            format!("{} bytes left, too short for a {hs}-byte completion header (truncated dump?)", bytes.len() - at),
        ));
    }
    d
}

/// What makes a record's header one no dispatcher writes, if anything: a
/// queue the ABI does not have, a record larger than its ring (the
/// dispatcher refuses one), or a length its `WRITE_HOST` could not carry
/// (`cqlab_abi::decode` refuses a zero length and an event's of another size).
fn bad_header(h: &CompletionHeader, kind: CompletionKind, size: usize, ring_bytes: usize) -> Option<String> {
    let event = size_of::<EventRecord>();
    if h.cq >= MAX_CQS as u16 {
        Some(format!("record of CQ{}: the ABI has at most {MAX_CQS} queues", h.cq))
    } else if kind == CompletionKind::Event && h.length as usize != event {
        Some(format!("event record of length {} (an event's payload is the {event}-byte EventRecord)", h.length))
    } else if h.length == 0 {
        Some("data record of length 0 (a WRITE_HOST carries at least 1 byte)".to_owned())
    } else if size > ring_bytes {
        Some(format!(
            "record length {} ({size} bytes with its header and padding) is more than the {ring_bytes}-byte ring \
             holds",
            h.length
        ))
    } else {
        None
    }
}

fn describe(chip: &Topology, r: &TraceRecord) -> (String, String) {
    let c = Coord::unpack(r.core as u32);
    let role = cqlab_workloads::analysis::Analysis::role(chip, c);
    let space = match chip.role(c) {
        Some(Role::Prefetcher { .. }) => Some(Space::Prefetch),
        Some(Role::Dispatcher { .. }) => Some(Space::Dispatch),
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

/// A core's trace ring from a dump of its `TRACE_RING` region, oldest
/// first; `chip` says whose each recorded core is.
pub fn decode_trace_ring(chip: &Topology, bytes: &[u8]) -> Decoded {
    let mut d = Decoded { text: String::new(), records: Vec::new(), error: None, end: None };
    let Ok((h, _)) = TraceRingHeader::read_from_prefix(bytes) else {
        d.error = Some(DumpError::whole(format!("{} bytes: too short for a trace-ring header", bytes.len())));
        return d;
    };
    let rs = size_of::<TraceRecord>() as u32;
    if h.capacity != CAPACITY || h.record_size != rs {
        d.error = Some(DumpError::whole(format!(
            "trace-ring header says capacity {} and record size {}, this ABI has {CAPACITY} and {rs}",
            h.capacity, h.record_size
        )));
        return d;
    }
    // Record next_seq goes into the oldest slot, cycle first: a core
    // stopped between those stores leaves it half new, so a full ring
    // shows one record less (helper-51; the collector does the same).
    let first = h.next_seq.saturating_sub(CAPACITY - 1);
    d.text.push_str(&format!(
        "trace ring: {} records written, {} overwritten or being overwritten, showing seq {first}..{}\n",
        h.next_seq, first, h.next_seq
    ));
    for seq in first..h.next_seq {
        let at = (RECORDS_BASE - TRACE_RING.base + (seq % CAPACITY) * rs) as usize;
        let Some(slot) = bytes.get(at..at + rs as usize) else {
            d.error = Some(DumpError::at(at, format!("dump ends at {} bytes before record {seq}", bytes.len())));
            break;
        };
        let r = TraceRecord::read_from_bytes(slot).expect("sized");
        if r.seq != seq {
            // A core that records while its ring is read puts a later record
            // (seq + k laps) in the slot. An older seq, or one of another
            // slot, no writer leaves: the header does not describe the slots
            // (zeroed slots under a made-up next_seq were a ring's worth of
            // "overwritten" lines, and no record at all in JSON).
            let later = r.seq > seq && (r.seq - seq) % CAPACITY == 0;
            if !later {
                d.error = Some(DumpError::at(
                    at,
                    format!(
                        "the slot of seq {seq} holds seq {}, {}: the header's next_seq {} does not match the \
                         records",
                        r.seq,
                        if r.seq < seq { "an older one" } else { "one that belongs in another slot" },
                        h.next_seq
                    ),
                ));
                break;
            }
            d.text.push_str(&format!("#{seq:<7} (slot holds seq {}: overwritten while dumped)\n", r.seq));
            d.records.push(json!({"seq": seq, "overwritten_by": r.seq}));
            continue;
        }
        let (role, what) = describe(chip, &r);
        d.text.push_str(&format!("#{seq:<7} @{:<12} {role:<18} {what}\n", r.cycle));
        d.records.push(json!({"seq": r.seq, "cycle": r.cycle, "core": Coord::unpack(r.core as u32),
                              "role": role, "kind": TraceKind::from_u16(r.kind).map(|k| k.label()),
                              "arg0": r.arg0, "arg1": r.arg1}));
    }
    d
}

/// The record boundary of a completion ring to decode from: the oldest
/// position from which whole records (valid kind, this queue, consecutive
/// sequence numbers) lead exactly to the write pointer `wr`. A ring that has
/// wrapped holds the tail of a record at its start, so offset 0 is not one.
pub fn oldest_boundary(ring: &[u8], cq: u8, wr: usize) -> Option<usize> {
    let (size, hs) = (ring.len(), size_of::<CompletionHeader>());
    let unit = cqlab_abi::ring::PTR_UNIT as usize;
    if size == 0 || wr >= size || wr % unit != 0 {
        return None;
    }
    let header = |at: usize| -> Option<CompletionHeader> {
        let mut b = [0u8; 16];
        for (i, x) in b.iter_mut().enumerate().take(hs) {
            *x = ring[(at + i) % size];
        }
        CompletionHeader::read_from_bytes(&b[..hs]).ok()
    };
    // Candidates from the oldest data (just after wr) round to wr itself.
    (1..=size / unit).map(|k| (wr + k * unit) % size).find(|&start| {
        let (mut at, mut walked, mut seq) = (start, 0usize, None::<u32>);
        while walked < size {
            if at == wr && walked > 0 {
                return true;
            }
            let Some(h) = header(at) else { return false };
            let ok_seq = seq.is_none_or(|s| h.seq == s.wrapping_add(1));
            if CompletionKind::from_u8(h.kind).is_none() || h.cq != cq as u16 || !ok_seq {
                return false;
            }
            let len = (hs + h.length as usize).next_multiple_of(cqlab_abi::PCIE_ALIGNMENT);
            if len > size {
                return false;
            }
            seq = Some(h.seq);
            walked += len;
            at = (at + len) % size;
        }
        false
    })
}

/// What a live read gives: the bytes to decode, where they start, and the
/// device's chip.
pub struct Live {
    pub bytes: Vec<u8>,
    pub window: Option<RingWindow>,
    pub chip: Topology,
}

/// The part of a live completion ring decoded: from its oldest whole
/// record at ring offset `start` to the write pointer; record offsets
/// count from `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RingWindow {
    pub cq: u8,
    pub ring_bytes: usize,
    pub start: usize,
    pub write_pointer: usize,
}

impl RingWindow {
    fn note(&self) -> String {
        format!(
            "CQ{} completion ring of {} bytes, from its oldest whole record at ring offset {:#x} to the write \
             pointer {:#x}; offsets below count from there",
            self.cq, self.ring_bytes, self.start, self.write_pointer
        )
    }
}

/// Reads the dump bytes from a live simulator daemon: CQ `cq`'s completion
/// ring (rotated to start at its oldest whole record, ending at the write
/// pointer), or `core`'s trace ring.
pub fn read_live(device: &str, kind: Kind, cq: u8, core: Option<Coord>) -> Result<Live> {
    // Read-only: no lock, no HELLO, nothing changes for the device's owner.
    let (mut dev, _) = cqlab_driver::Device::observe(device).with_context(|| format!("observing {device}"))?;
    let cfg = dev.config().clone();
    let chip = dev.chip().clone();
    match kind {
        Kind::Completion => {
            crate::cli::check(cq < dev.num_cqs(), || format!("--cq {cq}: the device has {} queues", dev.num_cqs()))?;
            let l = cqlab_abi::sysmem::CqSysmemLayout::for_cq(cq, cfg.issue_size, cfg.completion_size);
            let mut ring = vec![0u8; (l.end() - l.completion_base()) as usize];
            dev.backend().sysmem_read(l.completion_base() as usize, &mut ring)?;
            let mut wr = [0u8; 4];
            dev.backend().sysmem_read((l.header() + COMPLETION_WR_PTR as u64) as usize, &mut wr)?;
            let wr = RingPtr(u32::from_le_bytes(wr)).offset_bytes() as usize;
            let Some(start) = oldest_boundary(&ring, cq, wr) else {
                return Ok(Live { bytes: ring, window: None, chip });
            };
            let used = (wr + ring.len() - start) % ring.len();
            let used = if used == 0 { ring.len() } else { used };
            let mut rotated: Vec<u8> = ring[start..].iter().chain(&ring[..start]).copied().collect();
            rotated.truncate(used);
            let window = RingWindow { cq, ring_bytes: ring.len(), start, write_pointer: wr };
            Ok(Live { bytes: rotated, window: Some(window), chip })
        }
        _ => {
            let core = core.context("--core X,Y names the core whose trace ring to read")?;
            crate::cli::check(dev.all_cores().any(|c| c == core), || {
                format!(
                    "--core {},{}: no firmware runs there on this {} ({}, {} queues): name a compute core \
                     (translated coordinates) or a queue's prefetcher or dispatcher",
                    core.x,
                    core.y,
                    chip.board(),
                    chip.harvesting(),
                    dev.num_cqs()
                )
            })?;
            // A core that never booted has no ring: its zeroed L1 is no
            // malformed dump (helper-86's audit: "malformed trace dump ...
            // capacity 0 and record size 0" on a daemon never booted).
            let alive = cqlab_abi::noc::NocAddr::unicast(core, cqlab_abi::mailbox::ALIVE as u64);
            let magic = dev.backend().read_u32(alive).with_context(|| format!("reading the alive record of {core}"))?;
            if magic != cqlab_abi::mailbox::ALIVE_MAGIC {
                anyhow::bail!(
                    "core {core} ({}) has not booted on {device}: no alive record, so no trace ring to read (run \
                     a workload on the device first, e.g. `cqlab run dispatch_latency --device {device}`)",
                    cqlab_workloads::analysis::Analysis::role(&chip, core)
                );
            }
            let mut buf = vec![0u8; TRACE_RING.size as usize];
            dev.backend()
                .read(cqlab_abi::noc::NocAddr::unicast(core, TRACE_RING.base as u64), &mut buf)
                .with_context(|| format!("reading the trace ring of core {core}"))?;
            Ok(Live { bytes: buf, window: None, chip })
        }
    }
}

/// `cqlab decode --kind completion|trace`: a dump from `file`, or read
/// live from `device` (queue `cq`'s completion ring, `core`'s trace ring).
/// It takes its inputs, not `decode::Args`, so `decode` depends on this
/// module and not the other way round.
pub fn run(
    kind: Kind,
    file: Option<&std::path::Path>,
    device: Option<&str>,
    cq: u8,
    core: Option<Coord>,
    file_chip: &crate::chip::ChipOpt,
    json: bool,
) -> Result<std::process::ExitCode> {
    let name = if kind == Kind::Completion { "completion" } else { "trace" };
    let (live, source) = match (device, file) {
        (Some(dev), _) => (read_live(dev, kind, cq, core)?, dev.to_owned()),
        (None, Some(f)) => {
            let bytes = crate::input::read_bytes("dump", f, crate::input::MAX_DUMP_BYTES)?;
            let chip = Topology::for_board(file_chip.sim_board(), file_chip.harvesting()?, DEFAULT_CQS)?;
            (Live { bytes, window: None, chip }, f.display().to_string())
        }
        (None, None) => return Err(crate::cli::Usage("a dump FILE or --device sim:PATH".into()).into()),
    };
    let d = if kind == Kind::Completion {
        // A live window is part of its ring; a file is the whole ring.
        decode_completion(&live.bytes, live.window.map_or(live.bytes.len(), |w| w.ring_bytes))
    } else {
        decode_trace_ring(&live.chip, &live.bytes)
    };
    if json {
        let v = json!({"kind": name, "records": d.records, "error": d.error, "end": d.end,
                       "window": live.window, "note": live.window.map(|w| w.note())});
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        if let Some(w) = &live.window {
            outln!("{}", w.note());
        }
        if !d.text.is_empty() {
            outln!("{}", d.text.trim_end_matches('\n'));
        }
    }
    match d.error {
        None => Ok(std::process::ExitCode::SUCCESS),
        Some(e) => {
            crate::cli::report(&format!("malformed {name} dump {source}: {e}"));
            Ok(crate::exit::Exit::Usage.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    /// A ring of `size` bytes with records of `lengths` written from
    /// `start` on, wrapping; returns it and the write pointer.
    fn ring(size: usize, start: usize, lengths: &[u32]) -> (Vec<u8>, usize) {
        let mut ring = vec![0xeeu8; size];
        let mut at = start;
        for (seq, &length) in lengths.iter().enumerate() {
            let h = CompletionHeader { kind: 1, _pad: 0, cq: 1, length, tag: 7, seq: seq as u32 + 40 };
            let mut rec = h.as_bytes().to_vec();
            rec.resize((16 + length as usize).next_multiple_of(cqlab_abi::PCIE_ALIGNMENT), 0x5a);
            for b in rec {
                ring[at] = b;
                at = (at + 1) % size;
            }
        }
        (ring, at)
    }

    #[test]
    fn a_wrapped_completion_ring_decodes_from_its_oldest_whole_record() {
        // Three records from near the end: the second wraps, so offset 0 holds
        // the tail of its payload (what made a healthy ring look malformed).
        let (r, wr) = ring(1024, 1024 - 128, &[48, 200, 16]);
        assert!(decode_completion(&r, r.len()).error.is_some(), "from offset 0 it is not a record");
        let start = oldest_boundary(&r, 1, wr).expect("a boundary");
        assert_eq!(start, 1024 - 128);
        let mut rotated: Vec<u8> = r[start..].iter().chain(&r[..start]).copied().collect();
        rotated.truncate((wr + 1024 - start) % 1024);
        let d = decode_completion(&rotated, 1024);
        assert_eq!(d.error, None, "{}", d.text);
        let seqs: Vec<u64> = d.records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, [40, 41, 42]);
        // Another queue's records are not this queue's boundary.
        assert_eq!(oldest_boundary(&r, 0, wr), None);
    }

    /// A raw dump of a used ring runs past the write pointer: the records
    /// end where the sequence breaks, not as a malformed dump (helper-23:
    /// the documented `dd` recipe on a used daemon exited 2 at "completion
    /// kind 10").
    #[test]
    fn a_raw_dump_ends_where_its_sequence_breaks() {
        let (mut r, wr) = ring(1024, 0, &[48, 16, 16]);
        r[wr..].fill(0x0a); // what an earlier client left
        let d = decode_completion(&r, r.len());
        assert_eq!(d.error, None, "{}", d.text);
        assert_eq!(d.records.len(), 3, "{}", d.text);
        let end = d.end.as_ref().unwrap();
        assert_eq!(end["offset"], wr, "{}", d.text);
        assert!(d.text.contains("the sequence ends after seq 42: completion kind 10"), "{}", d.text);
        // In JSON the end is fields, not the sentence (which is `text`).
        assert_eq!((end["after_seq"].as_u64(), end["mismatch"].as_str()), (Some(42), Some("kind")), "{end}");
        assert_eq!(end["expected"], json!({"cq": 1, "seq": 43}), "{end}");
        assert_eq!(end["found"]["kind"], 10, "{end}");
        assert!(end["text"].as_str().is_some_and(|t| t.contains("completion kind 10 here")), "{end}");
        // An older lap's whole record (seq 7) past the pointer ends it too.
        let (old, _) = ring(64, 0, &[16]);
        let mut r2 = ring(1024, 0, &[16, 16]).0;
        let at = 2 * cqlab_abi::PCIE_ALIGNMENT.max(32);
        r2[at..at + 32].copy_from_slice(&old[..32]);
        r2[at + 12..at + 16].copy_from_slice(&7u32.to_le_bytes());
        let d = decode_completion(&r2, r2.len());
        assert_eq!((d.error, d.records.len()), (None, 2), "{}", d.text);
        assert!(d.text.contains("seq 7 here, where seq 42 would follow"), "{}", d.text);
        let end = d.end.as_ref().unwrap();
        assert_eq!((end["mismatch"].as_str(), end["found"]["seq"].as_u64()), (Some("seq"), Some(7)), "{end}");
        assert_eq!(end["expected"], json!({"cq": 1, "seq": 42}), "{end}");
        // So does another queue's record with the next seq.
        let (mut r4, wr) = ring(1024, 0, &[16, 16]);
        r4[wr + 2..wr + 4].copy_from_slice(&0u16.to_le_bytes()); // its header's cq: 0, not 1
        r4[wr + 12..wr + 16].copy_from_slice(&42u32.to_le_bytes());
        r4[wr] = 1;
        let d = decode_completion(&r4, r4.len());
        assert_eq!((d.error, d.records.len()), (None, 2), "{}", d.text);
        let end = d.end.as_ref().unwrap();
        assert_eq!((end["mismatch"].as_str(), end["found"]["cq"].as_u64()), (Some("cq"), Some(0)), "{end}");
        assert!(d.text.contains("a record of CQ0 here"), "{}", d.text);
        // A record the sequence resumes after is corrupt, not stale.
        let (mut r3, _) = ring(1024, 0, &[16, 16, 16]);
        r3[64] = 9;
        let d = decode_completion(&r3, r3.len());
        assert!(
            d.error.as_ref().is_some_and(|e| e.to_string().contains("offset 0x40: completion kind 9")),
            "{:?}",
            d.error
        );
    }

    /// Headers no dispatcher writes are malformed, not records: a length
    /// larger than the ring (which printed "runs 4294705167 bytes past the
    /// dump"), an event of another length (a data record relabelled read as
    /// "event 1949726381 of CQ3939465708"), a queue or event the ABI does
    /// not have. What decoded before them is kept.
    #[test]
    fn impossible_records_are_malformed() {
        let (good, _) = ring(1024, 0, &[16]);
        let with = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut r = good.clone();
            edit(&mut r);
            let d = decode_completion(&r, r.len());
            (d.records.len(), d.error.map(|e| e.to_string()).unwrap_or_default())
        };
        let header =
            |at: usize, h: CompletionHeader| move |r: &mut Vec<u8>| r[at..at + 16].copy_from_slice(h.as_bytes());
        let next = CompletionHeader { kind: 1, _pad: 0, cq: 1, length: 16, tag: 7, seq: 41 };
        let cases: [(CompletionHeader, &str); 5] = [
            (CompletionHeader { length: u32::MAX, ..next }, "record length 4294967295 (4294967360 bytes with"),
            (CompletionHeader { length: 1024 - 15, ..next }, "is more than the 1024-byte ring holds"),
            (CompletionHeader { kind: 2, length: 16384, ..next }, "event record of length 16384 (an event's payload"),
            (CompletionHeader { length: 0, ..next }, "data record of length 0"),
            (CompletionHeader { cq: 99, seq: 0, ..next }, "record of CQ99: the ABI has at most 16 queues"),
        ];
        for (h, why) in cases {
            // The first record: nothing decoded before it.
            let (n, e) = with(&header(0, h));
            assert!(e.starts_with("offset 0x0: ") && e.contains(why), "{h:?}: {e}");
            assert_eq!(n, 0, "{h:?}");
        }
        // Inside the sequence, after a good record (CQ99 would end it instead).
        for (h, why) in &cases[..4] {
            let (n, e) = with(&header(64, *h));
            assert!(e.starts_with("offset 0x40: ") && e.contains(why), "{h:?}: {e}");
            assert_eq!(n, 1, "the record before is kept: {h:?}");
        }
        // An event's own fields, where the ABI bounds them.
        let event = |id: u32, cq: u32| {
            move |r: &mut Vec<u8>| {
                r[64..80].copy_from_slice(CompletionHeader { kind: 2, ..next }.as_bytes());
                r[80..96].copy_from_slice(EventRecord { event_id: id, cq, cycle: 5 }.as_bytes());
            }
        };
        assert_eq!(with(&event(3, 1)), (2, String::new()));
        assert_eq!(with(&event(3, 16)), (1, "offset 0x40: event of CQ16: the ABI has at most 16 queues".into()));
        assert_eq!(with(&event(0, 1)), (1, "offset 0x40: event id 0 (event ids start at 1)".into()));
    }

    /// A record that continues at the ring's start (its payload runs past
    /// the dump's end) decodes as before: noted, not malformed.
    #[test]
    fn a_record_that_wraps_still_decodes() {
        let (mut r, _) = ring(256, 0, &[16, 16]);
        r[128..144]
            .copy_from_slice(CompletionHeader { kind: 1, _pad: 0, cq: 1, length: 176, tag: 7, seq: 42 }.as_bytes());
        let d = decode_completion(&r, r.len());
        assert_eq!(d.error, None, "{}", d.text);
        assert_eq!(d.records.len(), 3, "{}", d.text);
        assert!(d.text.contains("record runs 64 bytes past the dump (it wraps to the ring start)"), "{}", d.text);
        assert_eq!(d.records[2]["wraps"], true);
    }
}
