//! `cqlab trace summary RUN`: where each iteration's device time went, by
//! phase, before anyone changes anything (profile first, then fix).
//!
//! Each CQ core is in one state between two of its records (what its
//! last record started); a worker runs a kernel between its start and end
//! records. A cycle of an iteration belongs to the first phase, in this
//! order, that some core is in:
//! 1. `kernel`: a worker running a kernel;
//! 2. `dispatch`: the dispatcher in a command (not WRITE_HOST; a WAIT only
//!    outside its wait), or a GO in flight to the kernel it starts;
//! 3. `relay`: the prefetcher processing a chunk (its commands, relays,
//!    trace replays);
//! 4. `fetch (PCIe)`: the prefetcher from its previous record to taking a
//!    fetch-queue entry: waiting for the doorbell and reading the chunk;
//! 5. `completion`: the dispatcher in WRITE_HOST, and the host noticing
//!    the iteration's last event after the dispatcher stamped it;
//! 6. `host enqueue`: device time that passed while the host enqueued;
//! 7. `dispatch` again: the dispatcher between commands (reading the next
//!    header, waiting in UAPW for its bytes, returning ring pages);
//! 8. `wait <waypoint>`: a dispatcher WAIT (WCW, PWW), a prefetcher STALL
//!    (PSW), or the prefetcher idle after its last command (HQW).
//!
//! Whatever is left is `unattributed` (before any CQ core's first record).
//! With `--sync per-iter` each iteration is its own window; with `--sync
//! end` iterations overlap, so the timed region is one window. The critical
//! path is the sequence of phases a window passes through.

use crate::trace_file::{Item, TraceReader};
use anyhow::{bail, Result};
use cqlab_abi::dispatch::DispatchCmdId;
use cqlab_abi::noc::{endpoint, Coord, Endpoint};
use cqlab_abi::trace::{TraceKind, TraceRecord};
use cqlab_driver::workloads::analysis::{wait_waypoint, Tally};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SummaryArgs {
    /// A run trace written by `cqlab run ... --trace RUN`.
    pub run: PathBuf,
    /// Critical paths to print (the JSON always has all).
    #[arg(long, default_value_t = 3)]
    pub paths: usize,
    #[arg(long)]
    pub json: bool,
}

pub const PHASES: [&str; 6] = ["kernel", "dispatch", "relay", "fetch (PCIe)", "completion", "host enqueue"];

/// What a core is doing between two of its records.
#[derive(Clone, Debug, Default, PartialEq)]
enum State {
    #[default]
    Idle,
    /// Prefetcher between commands (processing a chunk) or in one.
    PrefetchBusy,
    /// Prefetcher after its last command, until its next fetch-queue entry.
    PrefetchWaiting,
    /// Dispatcher in a command; WRITE_HOST counts as completion.
    DispatchCmd,
    DispatchWriteHost,
    /// Dispatcher between commands.
    DispatchBetween,
    /// In a WAIT or STALL, with its waypoint label.
    Wait(String),
    Kernel,
}

/// Rank (lower wins) and label of a state's time; `None` = not attributed.
fn state_phase(st: &State) -> Option<(u8, String)> {
    Some(match st {
        State::Idle => return None,
        State::Kernel => (0, PHASES[0].into()),
        State::DispatchCmd => (1, PHASES[1].into()),
        State::PrefetchBusy => (2, PHASES[2].into()),
        State::DispatchWriteHost => (4, PHASES[4].into()),
        State::DispatchBetween => (6, PHASES[1].into()),
        State::Wait(l) => (WAIT_RANK, l.clone()),
        State::PrefetchWaiting => (WAIT_RANK, "wait HQW".into()),
    })
}

#[derive(Default)]
struct CoreState {
    last_ts: Option<u64>,
    state: State,
    /// Open commands (EXEC_BUF nests).
    open: Vec<u32>,
    wait_target: (u32, u32),
    kernel: Option<u64>,
    kernel_gap_from: Option<u64>,
    wait_from: Option<(String, u64)>,
}

/// One attributed interval: [start, end) in cycles, phase rank, label.
type Span = (u64, u64, u8, String);

struct Window {
    index: u32,
    start: u64,
    end: u64,
    enqueued: u64,
    events: Vec<u32>,
}

#[derive(Default)]
pub struct Summarizer {
    cores: HashMap<Coord, CoreState>,
    launches: HashMap<u32, u8>,
    last_go_end: HashMap<u8, u64>,
    spans: Vec<Span>,
    event_cycles: HashMap<u32, u64>,
    waits: BTreeMap<String, Tally>,
    pub windows: Vec<Value>,
    totals: BTreeMap<String, u64>,
    total_cycles: u64,
}

const WAIT_RANK: u8 = 7;

impl Summarizer {
    fn span(&mut self, start: u64, end: u64, rank: u8, label: String) {
        if end > start {
            self.spans.push((start, end, rank, label));
        }
    }

    pub fn record(&mut self, core: Coord, r: &TraceRecord) {
        let ep = endpoint(core);
        let st = self.cores.entry(core).or_default();
        let prev = st.last_ts.replace(r.cycle);
        let kind = TraceKind::from_u16(r.kind);
        // The time since the previous record, by what the core was doing.
        let mut spans: Vec<Span> = Vec::new();
        if let Some(p) = prev {
            let phase = if kind == Some(TraceKind::FetchConsumed) {
                Some((3, PHASES[3].to_owned()))
            } else {
                state_phase(&st.state)
            };
            if let Some((rank, label)) = phase {
                spans.push((p, r.cycle, rank, label));
            }
        }
        let mut wait_done: Option<(String, u64)> = None;
        let in_cmd_state = |open: &Vec<u32>, ep: Endpoint| -> State {
            match ep {
                Endpoint::Prefetcher { .. } => State::PrefetchBusy,
                Endpoint::Dispatcher { .. } => match open.last().and_then(|&id| DispatchCmdId::from_u8(id as u8)) {
                    None => State::DispatchBetween,
                    Some(DispatchCmdId::WriteHost) => State::DispatchWriteHost,
                    Some(_) => State::DispatchCmd,
                },
                _ => State::Idle,
            }
        };
        match kind {
            Some(TraceKind::FetchConsumed) => st.state = State::PrefetchBusy,
            Some(TraceKind::CmdStart) => {
                st.open.push(r.arg0);
                st.state = in_cmd_state(&st.open, ep);
            }
            Some(TraceKind::CmdEnd) => {
                if let Some(pos) = st.open.iter().rposition(|&id| id == r.arg0) {
                    st.open.truncate(pos);
                }
                if let Endpoint::Dispatcher { cq } = ep {
                    if DispatchCmdId::from_u8(r.arg0 as u8) == Some(DispatchCmdId::Go) {
                        self.last_go_end.insert(cq, r.cycle);
                    }
                }
                st.state = match ep {
                    Endpoint::Prefetcher { .. } if st.open.is_empty() => State::PrefetchWaiting,
                    _ => in_cmd_state(&st.open, ep),
                };
            }
            Some(TraceKind::WaitTarget) => st.wait_target = (r.arg0, r.arg1),
            Some(TraceKind::WaitBegin) => {
                let label = format!("wait {}", wait_waypoint(st.wait_target.0, st.wait_target.1));
                st.wait_from = Some((label.clone(), r.cycle));
                st.state = State::Wait(label);
            }
            Some(TraceKind::StallBegin) => {
                st.wait_from = Some(("wait PSW".into(), r.cycle));
                st.state = State::Wait("wait PSW".into());
            }
            Some(TraceKind::WaitEnd | TraceKind::StallEnd) => {
                if let Some((label, s)) = st.wait_from.take() {
                    wait_done = Some((label, r.cycle - s));
                }
                st.state = in_cmd_state(&st.open, ep);
            }
            Some(TraceKind::KernelStart) => {
                st.kernel = Some(r.cycle);
                st.state = State::Kernel;
                if let Some(from) = st.kernel_gap_from.take() {
                    wait_done = Some(("idle GOW (worker between kernels)".into(), r.cycle - from));
                }
                // The GO in flight from its dispatcher to this kernel.
                if let Some(go) = self.launches.get(&r.arg0).and_then(|cq| self.last_go_end.get(cq)) {
                    spans.push((*go, r.cycle, 1, PHASES[1].into()));
                }
            }
            Some(TraceKind::KernelEnd) => {
                st.kernel = None;
                st.state = State::Idle;
                st.kernel_gap_from = Some(r.cycle);
            }
            Some(TraceKind::Event) => {
                self.event_cycles.insert(r.arg0, r.cycle);
            }
            _ => {}
        }
        if let Some((label, d)) = wait_done {
            self.waits.entry(label).or_default().add(d);
        }
        for (s, e, rank, label) in spans {
            self.span(s, e, rank, label);
        }
    }

    /// Attributes `[w.start, w.end)` and drops spans that end before it.
    fn close_window(&mut self, w: &Window, timed: bool) {
        let done = w.events.iter().filter_map(|id| self.event_cycles.get(id)).max().copied();
        let mut spans: Vec<Span> = self.spans.iter().filter(|s| s.1 > w.start && s.0 < w.end).cloned().collect();
        spans.push((w.start, w.enqueued, 5, PHASES[5].into()));
        if let Some(d) = done {
            spans.push((d, w.end, 4, PHASES[4].into()));
        }
        // What each core is still doing when the window closes.
        for st in self.cores.values() {
            if let (Some(last), Some((rank, label))) = (st.last_ts, state_phase(&st.state)) {
                if last < w.end {
                    spans.push((last, w.end, rank, label));
                }
            }
        }
        // Sweep: at each boundary the best-ranked active span owns the time.
        let mut points: Vec<u64> = vec![w.start, w.end];
        for s in &spans {
            points.push(s.0.clamp(w.start, w.end));
            points.push(s.1.clamp(w.start, w.end));
        }
        points.sort_unstable();
        points.dedup();
        let mut by_phase: BTreeMap<String, u64> = BTreeMap::new();
        let mut path: Vec<(String, u64)> = Vec::new();
        for pair in points.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let owner = spans.iter().filter(|s| s.0 <= a && s.1 >= b).min_by_key(|s| s.2);
            let label = owner.map_or_else(|| "unattributed".to_owned(), |s| s.3.clone());
            *by_phase.entry(label.clone()).or_default() += b - a;
            match path.last_mut() {
                Some((l, d)) if *l == label => *d += b - a,
                _ => path.push((label, b - a)),
            }
        }
        let total = w.end - w.start;
        let unattributed = by_phase.get("unattributed").copied().unwrap_or(0);
        if timed {
            for (k, v) in &by_phase {
                *self.totals.entry(k.clone()).or_default() += v;
            }
            self.total_cycles += total;
        }
        self.windows.push(json!({
            "iteration": w.index, "timed": timed, "start": w.start, "end": w.end, "cycles": total,
            "attributed_fraction": if total == 0 { 1.0 } else { 1.0 - unattributed as f64 / total as f64 },
            "phases": by_phase, "critical_path": path.iter().map(|(l, d)| json!([l, d])).collect::<Vec<_>>(),
        }));
        let keep_from = w.end;
        self.spans.retain(|s| s.1 > keep_from);
    }
}

pub fn summarize(run: &std::path::Path) -> Result<Value> {
    let reader = TraceReader::open(run)?;
    let header = reader.header.clone();
    let mut s = Summarizer::default();
    let per_iter = header.sync == "per-iter";
    let mut pending: Option<(Window, bool)> = None;
    let mut timed_first: Option<(u64, u64, u32)> = None;
    let mut last_events: Vec<u32> = Vec::new();
    let mut last_index = 0;
    let mut end_cycles: Option<u64> = None;
    let mut lost = 0;
    for item in reader {
        match item? {
            Item::Rec(core, r) => s.record(core, &r),
            Item::Launch(l) => {
                s.launches.insert(l.seq, l.cq);
            }
            Item::Iter(i) => {
                // Records of an iteration follow its line: close the previous one now.
                if let Some((w, timed)) = pending.take() {
                    s.close_window(&w, timed);
                }
                if per_iter {
                    let Some(end) = i.end else { bail!("per-iter trace without an iteration end") };
                    let w = Window { index: i.index, start: i.start, end, enqueued: i.enqueued, events: i.events };
                    pending = Some((w, !i.warmup));
                } else if !i.warmup {
                    timed_first.get_or_insert((i.start, i.enqueued, i.index));
                    last_events = i.events;
                    last_index = i.index;
                }
            }
            Item::End(e) => lost = e.lost,
            Item::Occ(o) => {
                if !per_iter {
                    end_cycles = end_cycles.max(Some(o.cycle));
                }
            }
        }
    }
    if let Some((w, timed)) = pending.take() {
        s.close_window(&w, timed);
    }
    if !per_iter {
        if let Some((start, enqueued, first)) = timed_first {
            // The last occupancy sample is taken right after the final synchronisation.
            let end = end_cycles.unwrap_or(start).max(start);
            let w = Window { index: first, start, end, enqueued, events: last_events.clone() };
            s.close_window(&w, true);
            let _ = last_index;
        }
    }
    let mut waits: Vec<(String, Tally)> = s.waits.iter().map(|(k, v)| (k.clone(), *v)).collect();
    waits.sort_by_key(|w| std::cmp::Reverse(w.1.total_cycles));
    let min_attr = s
        .windows
        .iter()
        .filter(|w| w["timed"] == true)
        .filter_map(|w| w["attributed_fraction"].as_f64())
        .fold(f64::INFINITY, f64::min);
    Ok(json!({
        "workload": header.workload, "cqs": header.cqs, "sync": header.sync,
        "window": if per_iter { "each iteration" } else { "the timed region (iterations overlap with --sync end)" },
        "timed_cycles": s.total_cycles, "records_lost": lost,
        "phases": s.totals,
        "min_attributed_fraction": if min_attr.is_finite() { json!(min_attr) } else { Value::Null },
        "top_waits": waits.iter().map(|(k, t)| json!({"waypoint": k, "count": t.count, "total_cycles": t.total_cycles,
            "mean_cycles": t.mean(), "max_cycles": t.max_cycles})).collect::<Vec<_>>(),
        "iterations": s.windows,
    }))
}

pub fn run_summary(a: SummaryArgs) -> Result<ExitCode> {
    let v = summarize(&a.run)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let total = v["timed_cycles"].as_u64().unwrap_or(0).max(1);
    outln!(
        "{} on {} CQs, sync {}: {} device cycles over the timed iterations (window: {})",
        v["workload"].as_str().unwrap_or(""),
        v["cqs"],
        v["sync"].as_str().unwrap_or(""),
        total,
        v["window"].as_str().unwrap_or("")
    );
    outln!("{:<36} {:>14} {:>8}", "phase", "cycles", "share");
    let mut phases: Vec<(&String, u64)> =
        v["phases"].as_object().into_iter().flatten().map(|(k, x)| (k, x.as_u64().unwrap_or(0))).collect();
    phases.sort_by_key(|p| std::cmp::Reverse(p.1));
    for (k, c) in phases {
        outln!("{:<36} {:>14} {:>7.1}%", k, c, c as f64 * 100.0 / total as f64);
    }
    if v["records_lost"].as_u64().unwrap_or(0) > 0 {
        outln!("note: {} trace records were overwritten before they were read", v["records_lost"]);
    }
    if let Some(f) = v["min_attributed_fraction"].as_f64() {
        outln!("every timed window has at least {:.1}% of its device time in a named phase", f * 100.0);
    }
    outln!("\ncritical path (phases in time order, device cycles):");
    outln!("(steps under 2% of the iteration folded into \"+N short\")");
    for w in v["iterations"].as_array().into_iter().flatten().filter(|w| w["timed"] == true).take(a.paths) {
        let cycles = w["cycles"].as_u64().unwrap_or(0);
        let mut steps: Vec<String> = Vec::new();
        let mut short = 0;
        for s in w["critical_path"].as_array().into_iter().flatten() {
            let d = s[1].as_u64().unwrap_or(0);
            if d * 50 < cycles {
                short += 1;
                continue;
            }
            if short > 0 {
                steps.push(format!("+{short} short"));
                short = 0;
            }
            steps.push(format!("{} {d}", s[0].as_str().unwrap_or("")));
        }
        if short > 0 {
            steps.push(format!("+{short} short"));
        }
        outln!("  iteration {} ({cycles} cycles): {}", w["iteration"], steps.join(" -> "));
    }
    outln!("\ntop waits by waypoint:");
    outln!("{:<36} {:>8} {:>14} {:>10} {:>10}", "waypoint", "count", "total", "mean", "max");
    for w in v["top_waits"].as_array().into_iter().flatten().take(8) {
        outln!(
            "{:<36} {:>8} {:>14} {:>10.0} {:>10}",
            w["waypoint"].as_str().unwrap_or(""),
            w["count"].as_u64().unwrap_or(0),
            w["total_cycles"].as_u64().unwrap_or(0),
            w["mean_cycles"].as_f64().unwrap_or(0.0),
            w["max_cycles"].as_u64().unwrap_or(0)
        );
    }
    Ok(ExitCode::SUCCESS)
}
