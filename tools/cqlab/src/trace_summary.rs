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
//!    trace replays, and the time between two commands of a chunk);
//! 4. `fetch (PCIe)`: the prefetcher from its previous record to taking a
//!    fetch-queue entry: waiting for the doorbell and reading the chunk
//!    (the doorbell has no record, so the two are one phase);
//! 5. `completion`: the dispatcher in WRITE_HOST, and the host noticing
//!    the iteration's last event after the dispatcher stamped it;
//! 6. `host enqueue`: device time that passed while the host enqueued;
//! 7. `dispatch` again: the dispatcher between commands (reading the next
//!    header, waiting in UAPW for its bytes, returning ring pages);
//! 8. `wait <waypoint>`: a dispatcher WAIT (WCW, PWW), a prefetcher STALL
//!    (PSW), or the prefetcher idle after its last command (HQW) when
//!    no fetch-queue entry has been taken by the window's end.
//!
//! A core whose records were lost (a gap in its seqs) is in none of
//! these from its last record before the gap to its first after it: that
//! time is `unattributed (records lost)` unless a worker ran a kernel then.
//!
//! Whatever is left is `unattributed` (before any CQ core's first record).
//! Phases 1-6 are work; `wait ...` labels are a core idle on a named
//! waypoint (the output marks them as waits): the breakdown says what some
//! core was doing at each cycle, not what the iteration was waiting for.
//! That is the critical path (`critical_path.rs`): per iteration, a
//! dependency chain walked back from the iteration's completion.
//!
//! Windows: with `--sync per-iter` an iteration runs from the host starting
//! to enqueue it to the host seeing its events; with `--sync end`
//! iterations overlap, so an iteration runs from the previous iteration's
//! completion to its own (the first timed one from the host starting to
//! enqueue it), the same definition as the run's latency. Memory holds one
//! window's records at a time.

use crate::critical_path::{self, Seg, Timeline};
use crate::out::{diagln, outln};
use crate::trace_file::{Item, TraceReader};
use anyhow::Result;
use cqlab_abi::dispatch::DispatchCmdId;
use cqlab_abi::noc::Coord;
use cqlab_abi::trace::{TraceKind, TraceRecord};
use cqlab_driver::{Role, Topology};
use cqlab_workloads::analysis::{wait_waypoint, Tally};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct SummaryArgs {
    /// A run trace written by `cqlab run ... --trace RUN`.
    pub run: PathBuf,
    /// Critical paths to print (the JSON always has all; 0..=10000).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(0..=10_000))]
    pub paths: u16,
    /// Print the summary as JSON (every iteration's busy time, critical
    /// paths and waits) instead of the tables.
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
    /// Across a gap in the core's records (lost to a lapped ring): unknown.
    Lost,
}

/// Phase ranks (lower wins a cycle), in the order of the module's list. A
/// core whose records were lost might have been doing anything but a
/// kernel that another core's records show: its gap outranks the rest, so
/// the time is not claimed for a phase it may not have been (helper-94:
/// 100 % attributed with 703573 records lost).
const RANK_KERNEL: u8 = 0;
const RANK_LOST: u8 = 1;
const RANK_DISPATCH: u8 = 2;
const RANK_RELAY: u8 = 3;
const RANK_FETCH: u8 = 4;
const RANK_COMPLETION: u8 = 5;
const RANK_HOST: u8 = 6;
const RANK_BETWEEN: u8 = 7;
const RANK_WAIT: u8 = 8;
/// The label of time a lost record's core spent unseen (not attributed).
pub const RECORDS_LOST: &str = "unattributed (records lost)";

/// Rank (lower wins) and label of a state's time; `None` = not attributed.
fn state_phase(st: &State) -> Option<(u8, String)> {
    Some(match st {
        State::Idle => return None,
        State::Kernel => (RANK_KERNEL, PHASES[0].into()),
        State::Lost => (RANK_LOST, RECORDS_LOST.into()),
        State::DispatchCmd => (RANK_DISPATCH, PHASES[1].into()),
        State::PrefetchBusy => (RANK_RELAY, PHASES[2].into()),
        State::DispatchWriteHost => (RANK_COMPLETION, PHASES[4].into()),
        State::DispatchBetween => (RANK_BETWEEN, PHASES[1].into()),
        State::Wait(l) => (RANK_WAIT, l.clone()),
        State::PrefetchWaiting => (RANK_WAIT, "wait HQW".into()),
    })
}

#[derive(Default)]
struct CoreState {
    last_ts: Option<u64>,
    state: State,
    /// Open commands (EXEC_BUF nests).
    open: Vec<u32>,
    wait_target: (u32, u32),
    /// Value the current WAIT waits for (its `WaitBegin` arg0).
    wait_value: u32,
    kernel: Option<u32>,
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

pub struct Summarizer {
    /// The chip the records come from: whose each core is.
    chip: Arc<Topology>,
    cores: HashMap<Coord, CoreState>,
    launches: HashMap<u32, u8>,
    spans: Vec<Span>,
    /// Event id -> (cycle, dispatcher) of its record.
    event_cycles: HashMap<u32, (u64, Coord)>,
    timeline: Timeline,
    waits: BTreeMap<String, Tally>,
    pub windows: Vec<Value>,
    totals: BTreeMap<String, u64>,
    /// Critical-path cycles by phase over the timed windows.
    path_totals: BTreeMap<String, u64>,
    total_cycles: u64,
    /// A timed iteration has been closed (--sync end windows).
    seen_timed: bool,
    /// Start of the first timed iteration: the waits counted end after it,
    /// as the timed cycles do (warmup and boot waits are not theirs).
    timed_from: Option<u64>,
    /// Most segments and spans held at once (memory stays per window).
    pub max_held: usize,
    /// Gaps in the cores' records (records lost).
    gaps: u64,
    /// Device cycle the failed run stopped at: the end of the windows whose
    /// events have no records.
    failed_at: Option<u64>,
    /// An iteration of a failed `--sync end` run has been given the time up
    /// to the failure: the ones enqueued after it never ran apart from it.
    failure_window_given: bool,
    /// The iteration the failed run was on.
    failed_iteration: Option<u32>,
}

/// What `st` does until its next record, for the critical path.
fn seg_of(st: &CoreState, ep: Option<Role>) -> Option<Seg> {
    Some(match (&st.state, ep) {
        (State::Kernel, _) => Seg::Kernel { seq: st.kernel? },
        (State::Idle, Some(Role::Worker { .. })) => Seg::WorkerIdle,
        (State::Idle, _) => return None,
        (State::DispatchCmd | State::DispatchWriteHost, _) => Seg::DispatchCmd { id: *st.open.last()? as u8 },
        (State::DispatchBetween, _) => Seg::DispatchBetween,
        (State::Wait(_), Some(Role::Prefetcher { .. })) => Seg::PrefetchStall,
        (State::Wait(l), _) => Seg::DispatchWait { workers: l == "wait WCW", target: st.wait_value },
        (State::PrefetchBusy, _) => Seg::PrefetchBusy,
        (State::PrefetchWaiting, _) => Seg::PrefetchIdle,
        (State::Lost, _) => return None,
    })
}

impl Summarizer {
    /// Nothing read yet, of records from `chip`.
    pub fn new(chip: Topology) -> Self {
        let chip = Arc::new(chip);
        Self {
            timeline: Timeline::new(chip.clone()),
            chip,
            cores: HashMap::new(),
            launches: HashMap::new(),
            spans: Vec::new(),
            event_cycles: HashMap::new(),
            waits: BTreeMap::new(),
            windows: Vec::new(),
            totals: BTreeMap::new(),
            path_totals: BTreeMap::new(),
            total_cycles: 0,
            seen_timed: false,
            timed_from: None,
            max_held: 0,
            gaps: 0,
            failed_at: None,
            failure_window_given: false,
            failed_iteration: None,
        }
    }

    fn span(&mut self, start: u64, end: u64, rank: u8, label: String) {
        if end > start {
            self.spans.push((start, end, rank, label));
        }
    }

    pub fn record(&mut self, core: Coord, r: &TraceRecord) {
        let ep = self.chip.role(core);
        let st = self.cores.entry(core).or_default();
        let prev = st.last_ts.replace(r.cycle);
        let kind = TraceKind::from_u16(r.kind);
        // The time since the previous record, by what the core was doing.
        let mut spans: Vec<Span> = Vec::new();
        if let Some(p) = prev {
            // A prefetcher with no command open is idle on HQW only if its
            // next record takes a fetch-queue entry; otherwise it was between
            // two commands of a chunk (parsing, waiting on relays: busy).
            let between_cmds = st.state == State::PrefetchWaiting && kind != Some(TraceKind::FetchConsumed);
            let seg = match kind {
                Some(TraceKind::FetchConsumed) => Some(Seg::PrefetchFetch),
                _ if between_cmds => Some(Seg::PrefetchBusy),
                _ => seg_of(st, ep),
            };
            if let Some(seg) = seg {
                self.timeline.segment(core, p, r.cycle, seg);
            }
            let phase = if kind == Some(TraceKind::FetchConsumed) {
                Some((RANK_FETCH, PHASES[3].to_owned()))
            } else if between_cmds {
                Some((RANK_RELAY, PHASES[2].to_owned()))
            } else {
                state_phase(&st.state)
            };
            if let Some((rank, label)) = phase {
                spans.push((p, r.cycle, rank, label));
            }
        }
        let mut wait_done: Option<(String, u64)> = None;
        let in_cmd_state = |open: &Vec<u32>, ep: Option<Role>| -> State {
            match ep {
                Some(Role::Prefetcher { .. }) => State::PrefetchBusy,
                Some(Role::Dispatcher { .. }) => match open.last().and_then(|&id| DispatchCmdId::from_u8(id as u8)) {
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
                if let Some(Role::Dispatcher { .. }) = ep {
                    // A LAUNCH's multicast is the GO of programs.
                    if matches!(DispatchCmdId::from_u8(r.arg0 as u8), Some(DispatchCmdId::Go | DispatchCmdId::Launch)) {
                        self.timeline.go_ended(core, r.cycle);
                    }
                }
                st.state = match ep {
                    Some(Role::Prefetcher { .. }) if st.open.is_empty() => State::PrefetchWaiting,
                    _ => in_cmd_state(&st.open, ep),
                };
            }
            Some(TraceKind::WaitTarget) => st.wait_target = (r.arg0, r.arg1),
            Some(TraceKind::WaitBegin) => {
                st.wait_value = r.arg0;
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
                    // A core's cycles can step back in traces of older builds
                    // (`TraceReader`): such a wait lasted 0 cycles, as its span
                    // does, and still counts as one.
                    wait_done = Some((label, r.cycle.saturating_sub(s)));
                }
                st.state = in_cmd_state(&st.open, ep);
            }
            Some(TraceKind::KernelStart) => {
                st.kernel = Some(r.arg0);
                st.state = State::Kernel;
                if let Some(from) = st.kernel_gap_from.take() {
                    wait_done = Some(("idle GOW (worker between kernels)".into(), r.cycle.saturating_sub(from)));
                }
                // The GO in flight from its dispatcher to this kernel: the
                // latest GO at or before it (a drain block holds several).
                if let Some(go) = self.launches.get(&r.arg0).and_then(|&cq| self.timeline.latest_go(cq, r.cycle)) {
                    spans.push((go, r.cycle, RANK_DISPATCH, PHASES[1].into()));
                }
            }
            Some(TraceKind::KernelEnd) => {
                st.kernel = None;
                st.state = State::Idle;
                st.kernel_gap_from = Some(r.cycle);
            }
            Some(TraceKind::Event) => {
                self.event_cycles.insert(r.arg0, (r.cycle, core));
                self.timeline.event(core, r.arg0, r.cycle);
            }
            _ => {}
        }
        let st = self.cores.get(&core).expect("inserted above");
        self.timeline.set_open(core, r.cycle, seg_of(st, ep));
        if let Some((label, d)) = wait_done.filter(|_| self.timed_from.is_some_and(|t| r.cycle >= t)) {
            self.waits.entry(label).or_default().add(d);
        }
        for (s, e, rank, label) in spans {
            self.span(s, e, rank, label);
        }
    }

    /// Records of `core` were lost before its next one: what it was doing
    /// from its last record to that one is unknown, so nothing it had open
    /// (a command, wait or kernel) carries across the gap.
    pub fn lost(&mut self, core: Coord) {
        let st = self.cores.entry(core).or_default();
        *st = CoreState { last_ts: st.last_ts, state: State::Lost, ..Default::default() };
        self.timeline.set_open(core, st.last_ts.unwrap_or(0), None);
        self.gaps += 1;
    }

    /// Attributes `[w.start, w.end)` and drops spans that end before it.
    fn close_window(&mut self, w: &Window, timed: bool) {
        let last = w.events.iter().filter_map(|id| self.event_cycles.get(id)).max_by_key(|e| e.0).copied();
        let done = last.map(|e| e.0);
        let mut spans: Vec<Span> = self.spans.iter().filter(|s| s.1 > w.start && s.0 < w.end).cloned().collect();
        spans.push((w.start, w.enqueued, RANK_HOST, PHASES[5].into()));
        if let Some(d) = done {
            spans.push((d, w.end, RANK_COMPLETION, PHASES[4].into()));
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
        for pair in points.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let owner = spans.iter().filter(|s| s.0 <= a && s.1 >= b).min_by_key(|s| s.2);
            let label = owner.map_or_else(|| "unattributed".to_owned(), |s| s.3.clone());
            *by_phase.entry(label.clone()).or_default() += b - a;
        }
        let path = self.timeline.walk(w.start, w.enqueued, w.end, last, &self.launches);
        let path_unattributed: u64 = path.iter().filter(|s| s.phase == "unattributed").map(|s| s.to - s.from).sum();
        let path_waits: u64 = path.iter().filter(|s| s.phase.starts_with("wait ")).map(|s| s.to - s.from).sum();
        let total = w.end - w.start;
        let unattributed =
            by_phase.get("unattributed").copied().unwrap_or(0) + by_phase.get(RECORDS_LOST).copied().unwrap_or(0);
        if timed {
            for (k, v) in &by_phase {
                *self.totals.entry(k.clone()).or_default() += v;
            }
            self.total_cycles += total;
        }
        let failed = self.failed_iteration == Some(w.index);
        self.windows.push(json!({
            "iteration": w.index, "timed": timed, "failed": failed, "start": w.start, "end": w.end, "cycles": total,
            "attributed_fraction": if total == 0 { 1.0 } else { 1.0 - unattributed as f64 / total as f64 },
            "phases": by_phase,
            "critical_path": critical_path::to_json(&self.chip, &path),
            "critical_path_attributed_fraction": if total == 0 { 1.0 } else { 1.0 - path_unattributed as f64 / total as f64 },
            "critical_path_wait_cycles": path_waits,
        }));
        if timed {
            for s in &path {
                *self.path_totals.entry(s.phase.clone()).or_default() += s.to - s.from;
            }
        }
        let keep_from = w.end;
        self.spans.retain(|s| s.1 > keep_from);
        self.timeline.prune(keep_from);
    }
}

/// An iteration read from the trace, waiting for its events' records.
struct Pending {
    index: u32,
    warmup: bool,
    start: u64,
    enqueued: u64,
    /// Host saw it complete (`--sync per-iter`).
    end: Option<u64>,
    events: Vec<u32>,
}

impl Summarizer {
    /// Closes the oldest pending iterations whose events have all been
    /// seen; `eof`: close the rest too. Called only between drain blocks,
    /// when every record up to the events' cycles has been read.
    fn close_ready(&mut self, pending: &mut VecDeque<Pending>, prev_done: &mut Option<u64>, eof: bool) {
        while let Some(p) = pending.front() {
            let done = p.events.iter().map(|id| self.event_cycles.get(id).map(|e| e.0)).collect::<Option<Vec<u64>>>();
            let done = done.and_then(|d| d.into_iter().max());
            if done.is_none() && !eof {
                return;
            }
            let p = pending.pop_front().expect("front");
            if done.is_none() && p.end.is_none() && self.failed_at.is_some() {
                // Only the oldest iteration the device never finished ran
                // until the host gave up; each later one would count that
                // same time again (helper-99: three windows of 3.24 M
                // kernel cycles each for a 3.25 M-cycle run).
                if std::mem::replace(&mut self.failure_window_given, true) {
                    continue;
                }
            }
            let w = match p.end {
                // --sync per-iter: the host's own window.
                Some(end) => Window { index: p.index, start: p.start, end, enqueued: p.enqueued, events: p.events },
                // --sync end: from the previous completion (the first timed
                // iteration starts from the drained device) to its own.
                None => {
                    let first_timed = !p.warmup && !self.seen_timed;
                    let start = match *prev_done {
                        Some(d) if !first_timed => d,
                        _ => p.start,
                    };
                    // A failed run's iterations whose events never came
                    // ran until the host gave up.
                    let end = done.or(self.failed_at).unwrap_or(start).max(start);
                    Window { index: p.index, start, end, enqueued: p.enqueued.clamp(start, end), events: p.events }
                }
            };
            self.seen_timed |= !p.warmup;
            *prev_done = done.or(*prev_done);
            self.close_window(&w, !p.warmup);
        }
    }
}

pub fn summarize(run: &std::path::Path) -> Result<Value> {
    let mut reader = TraceReader::open(run)?;
    let header = reader.header.clone();
    let mut s = Summarizer::new(header.topology()?);
    let per_iter = header.sync == "per-iter";
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut prev_done: Option<u64> = None;
    let (mut lost, mut run_timed) = (0, None);
    let mut in_records = false;
    for item in reader.by_ref() {
        let item = item?;
        let is_rec = matches!(item, Item::Rec(..) | Item::Lost { .. });
        if in_records && !is_rec {
            // A drain block ended: every record up to now has been read.
            s.close_ready(&mut pending, &mut prev_done, false);
        }
        in_records = is_rec;
        match item {
            Item::Rec(core, r) => {
                s.record(core, &r);
                s.max_held = s.max_held.max(s.timeline.held() + s.spans.len());
            }
            Item::Launch(l) => {
                s.launches.insert(l.seq, l.cq);
            }
            Item::Iter(i) => {
                if per_iter && i.end.is_none() {
                    return Err(crate::cli::Usage(format!(
                        "{}: --sync per-iter trace, iteration {} has no end",
                        run.display(),
                        i.index
                    ))
                    .into());
                }
                if per_iter {
                    // The previous iteration was synchronised and drained before
                    // this one began: close it even if an event record was lost.
                    s.close_ready(&mut pending, &mut prev_done, true);
                }
                if !i.warmup && s.timed_from.is_none() {
                    s.timed_from = Some(i.start);
                }
                pending.push_back(Pending {
                    index: i.index,
                    warmup: i.warmup,
                    start: i.start,
                    enqueued: i.enqueued,
                    end: if per_iter { i.end } else { None },
                    events: i.events,
                });
            }
            Item::Lost { core, .. } => s.lost(core),
            Item::End(e) => {
                (lost, run_timed) = (e.lost, Some(e.timed_cycles));
                if let Some(f) = &e.failed {
                    s.failed_at = f.cycle;
                    s.failed_iteration = f.iteration;
                    // Not a figure the run's throughput divided by.
                    run_timed = None;
                }
            }
            Item::Occ(_) => {}
        }
    }
    s.close_ready(&mut pending, &mut prev_done, true);
    let end_missing = reader.end_missing();
    let failed = reader.failure();
    let mut waits: Vec<(String, Tally)> = s.waits.iter().map(|(k, v)| (k.clone(), *v)).collect();
    waits.sort_by_key(|w| std::cmp::Reverse(w.1.total_cycles));
    let min_of = |key: &str| {
        let m = s
            .windows
            .iter()
            .filter(|w| w["timed"] == true)
            .filter_map(|w| w[key].as_f64())
            .fold(f64::INFINITY, f64::min);
        if m.is_finite() {
            json!(m)
        } else {
            Value::Null
        }
    };
    let kinds: BTreeMap<&String, &str> =
        s.totals.keys().chain(s.path_totals.keys()).map(|k| (k, phase_kind(k))).collect();
    Ok(json!({
        "workload": header.workload, "cqs": header.cqs, "chip": header.chip, "harvesting": header.harvesting,
        "sync": header.sync,
        "window": if per_iter {
            "each iteration: host starts enqueuing it -> host sees its events"
        } else {
            "each iteration: previous iteration's completion (first timed one: host starts enqueuing it) -> its last event record"
        },
        "timed_cycles": s.total_cycles,
        // The run's figure, which its throughput divides by: with --sync end
        // it runs on to the host seeing the last event, past the windows'
        // end at the event's record (helper-67: 228546 against 227269).
        "run_timed_cycles": run_timed, "records_lost": lost, "record_gaps": s.gaps,
        "complete": end_missing.is_none(), "end_missing": end_missing, "failed": failed,
        "phases": s.totals,
        "phase_kinds": kinds,
        "min_attributed_fraction": min_of("attributed_fraction"),
        "critical_path_phases": s.path_totals,
        "min_critical_path_attributed_fraction": min_of("critical_path_attributed_fraction"),
        "top_waits": waits.iter().map(|(k, t)| {
            let (kind, waypoint) = wait_parts(k);
            json!({"waypoint": waypoint, "kind": kind, "label": k, "count": t.count,
                   "total_cycles": t.total_cycles, "mean_cycles": t.mean(), "max_cycles": t.max_cycles})
        }).collect::<Vec<_>>(),
        "max_segments_held": s.max_held,
        "iterations": s.windows,
    }))
}

/// "work" for a phase, "wait" for a core idle on a named waypoint.
fn phase_kind(label: &str) -> &'static str {
    if PHASES.contains(&label) {
        "work"
    } else if label.starts_with("wait ") || label.starts_with("idle ") {
        "wait"
    } else {
        "unattributed"
    }
}

/// A wait's label split into its kind (`wait` on a condition, `idle`
/// between kernels) and its waypoint's code (`wait PSW` is `("wait",
/// "PSW")`), so a script joins the code to the waypoint glossary.
fn wait_parts(label: &str) -> (&str, &str) {
    let mut words = label.split_whitespace();
    (words.next().unwrap_or(""), words.next().unwrap_or(""))
}

pub fn validate(a: &SummaryArgs) -> Result<()> {
    Ok(crate::input::check_file("RUN", &a.run)?)
}

pub fn run_summary(a: SummaryArgs) -> Result<ExitCode> {
    let v = summarize(&a.run)?;
    if let Some(why) = v["end_missing"].as_str() {
        // Summarised up to where it stops, and said so: not a whole run.
        diagln!("warning: {why}; the summary covers what is there (its last iteration may be partial)");
    }
    if let Some(why) = v["failed"].as_str() {
        diagln!("warning: {why}; the summary covers the records drained up to the failure");
    }
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    let timed = v["timed_cycles"].as_u64().unwrap_or(0);
    // Shares divide by it; the header says what the trace holds.
    let total = timed.max(1);
    outln!(
        "{} on {} CQs, sync {}: {timed} device cycles over the timed iterations (window: {})",
        v["workload"].as_str().unwrap_or(""),
        v["cqs"],
        v["sync"].as_str().unwrap_or(""),
        v["window"].as_str().unwrap_or("")
    );
    if let Some(run) = v["run_timed_cycles"].as_u64().filter(|&r| r != timed) {
        outln!("the run's timed_cycles, to the host seeing the last event: {run}");
    }
    outln!("busy time: the best-ranked thing any core was doing at each cycle (see `cqlab trace summary --help`)");
    outln!("{:<36} {:>14} {:>8}  kind", "phase", "cycles", "share");
    let print_phases = |key: &str| {
        let mut phases: Vec<(&String, u64)> =
            v[key].as_object().into_iter().flatten().map(|(k, x)| (k, x.as_u64().unwrap_or(0))).collect();
        phases.sort_by_key(|p| std::cmp::Reverse(p.1));
        for (k, c) in phases {
            let kind = match phase_kind(k) {
                "wait" => "wait (idle on a named waypoint)",
                other => other,
            };
            outln!("{:<36} {:>14} {:>7.1}%  {}", k, c, c as f64 * 100.0 / total as f64, kind);
        }
    };
    print_phases("phases");
    let lost = v["records_lost"].as_u64().unwrap_or(0) > 0 || v["record_gaps"].as_u64().unwrap_or(0) > 0;
    if lost {
        outln!(
            "note: {} trace records were overwritten before they were read ({} gaps): a core's time across its gap \
             is \"{RECORDS_LOST}\" unless another core ran a kernel then",
            v["records_lost"],
            v["record_gaps"]
        );
    }
    if let Some(why) = v["end_missing"].as_str() {
        outln!("note: INCOMPLETE TRACE: {why}");
    }
    if let Some(why) = v["failed"].as_str() {
        outln!("note: FAILED RUN: {why}");
    }
    match v["min_attributed_fraction"].as_f64() {
        // With records lost the attribution covers what the rings kept:
        // never a claim about every cycle (helper-94: "100 %" with 703573 lost).
        Some(f) if lost => outln!(
            "every timed window has at least {:.1}% of its device time in a named phase or wait as far as the kept \
             records show; records were lost, so not every cycle is accounted for",
            f * 100.0
        ),
        Some(f) => {
            outln!("every timed window has at least {:.1}% of its device time in a named phase or wait", f * 100.0)
        }
        None => {}
    }
    outln!("\ncritical path: what each iteration's completion waited on, walked back through the cores");
    outln!("{:<36} {:>14} {:>8}  kind", "phase", "cycles", "share");
    print_phases("critical_path_phases");
    if let Some(f) = v["min_critical_path_attributed_fraction"].as_f64() {
        outln!("every timed critical path explains at least {:.1}% of its iteration", f * 100.0);
    }
    outln!("(steps under 2% of the iteration folded into \"+N short\")");
    for w in v["iterations"].as_array().into_iter().flatten().filter(|w| w["timed"] == true).take(a.paths as usize) {
        let cycles = w["cycles"].as_u64().unwrap_or(0);
        let mut steps: Vec<String> = Vec::new();
        let mut short = 0;
        for s in w["critical_path"].as_array().into_iter().flatten() {
            let d = s["cycles"].as_u64().unwrap_or(0);
            if d * 50 < cycles {
                short += 1;
                continue;
            }
            if short > 0 {
                steps.push(format!("+{short} short"));
                short = 0;
            }
            steps.push(format!(
                "{} {d} ({}: {})",
                s["phase"].as_str().unwrap_or(""),
                s["role"].as_str().unwrap_or(""),
                s["detail"].as_str().unwrap_or("")
            ));
        }
        if short > 0 {
            steps.push(format!("+{short} short"));
        }
        outln!("  iteration {} ({cycles} cycles):\n    {}", w["iteration"], steps.join("\n    -> "));
    }
    outln!("\ntop waits by waypoint:");
    outln!("{:<36} {:>8} {:>14} {:>10} {:>10}", "waypoint", "count", "total", "mean", "max");
    for w in v["top_waits"].as_array().into_iter().flatten().take(8) {
        outln!(
            "{:<36} {:>8} {:>14} {:>10.0} {:>10}",
            w["label"].as_str().unwrap_or(""),
            w["count"].as_u64().unwrap_or(0),
            w["total_cycles"].as_u64().unwrap_or(0),
            w["mean_cycles"].as_f64().unwrap_or(0.0),
            w["max_cycles"].as_u64().unwrap_or(0)
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::soc::Board;

    fn rec(cycle: u64, seq: u32, kind: TraceKind) -> TraceRecord {
        TraceRecord { cycle, seq, kind: kind as u16, ..Default::default() }
    }

    /// A core's cycles that step back (traces of builds before 2026-12-01)
    /// make a 0-cycle wait, not one of 2^64 - 10 cycles (helper-53: `idle
    /// GOW` totalled 18446744073709551606): a worker's next kernel starts 10
    /// cycles before its last one ended, a dispatcher's WAIT ends before it began.
    #[test]
    fn waits_whose_cycles_step_back_last_zero_cycles() {
        let chip = Topology::for_board(Board::WormholeN150, None, 1).unwrap();
        let (worker, dispatcher) = (chip.worker(0, 0).unwrap(), chip.dispatcher(0));
        let mut s = Summarizer::new(chip);
        s.timed_from = Some(0);
        use TraceKind::*;
        for (seq, (cycle, kind)) in
            [(100, KernelStart), (200, KernelEnd), (190, KernelStart), (300, KernelEnd), (330, KernelStart)]
                .into_iter()
                .enumerate()
        {
            s.record(worker, &rec(cycle, seq as u32, kind));
        }
        for (seq, (cycle, kind)) in
            [(500, WaitBegin), (480, WaitEnd), (600, WaitBegin), (640, WaitEnd)].into_iter().enumerate()
        {
            s.record(dispatcher, &rec(cycle, seq as u32, kind));
        }
        let tally = |label: &str| s.waits.get(label).map(|t| (t.count, t.total_cycles, t.max_cycles));
        assert_eq!(tally("idle GOW (worker between kernels)"), Some((2, 30, 30)), "{:?}", s.waits.keys());
        let wait = s.waits.keys().find(|k| k.starts_with("wait ")).expect("the dispatcher's WAIT").clone();
        assert_eq!(tally(&wait), Some((2, 40, 40)));
    }

    /// Records lost in the middle of a worker's kernel: the kernel's time
    /// from the record before the gap to the one after it is unknown, so it
    /// is not claimed, and the window is not 100 % attributed (helper-94:
    /// a trace with 703573 records lost claimed 100 %). The dispatcher sits
    /// between commands all along, a phase the gap outranks.
    #[test]
    fn a_gap_in_a_cores_records_is_not_attributed() {
        let chip = Topology::for_board(Board::WormholeN150, None, 1).unwrap();
        let (worker, dispatcher) = (chip.worker(0, 0).unwrap(), chip.dispatcher(0));
        let line = |c: Coord, cycle: u64, seq: u32, kind: TraceKind, arg0: u32| {
            format!(r#"{{"rec":[{},{},{cycle},{seq},{},{arg0},0]}}"#, c.x, c.y, kind as u16)
        };
        let launch = DispatchCmdId::Launch as u32;
        let lines = [
            r#"{"format":"cqlab-trace","version":2,"workload":"x","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","sync":"per-iter","clock_hz":1e9,"cores":[]}"#.to_owned(),
            r#"{"launch":{"seq":1,"cq":0,"enqueued":5,"cores":[0,0,0,0],"label":"k"}}"#.to_owned(),
            line(dispatcher, 50, 0, TraceKind::CmdStart, launch),
            line(dispatcher, 60, 1, TraceKind::CmdEnd, launch),
            line(dispatcher, 19_000, 2, TraceKind::Event, 1),
            line(worker, 100, 0, TraceKind::KernelStart, 1),
            line(worker, 10_000, 6, TraceKind::KernelEnd, 1),
            r#"{"iter":{"index":0,"warmup":false,"start":0,"enqueued":10,"end":20000,"events":[1]}}"#.to_owned(),
            r#"{"end":{"timed_cycles":20000,"lost":5}}"#.to_owned(),
        ];
        let run = tempfile::Builder::new().prefix("cqlab-summary-gap-").tempfile().unwrap().into_temp_path();
        std::fs::write(&run, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        let v = summarize(&run).unwrap();
        let w = &v["iterations"][0];
        assert_eq!(w["phases"]["unattributed (records lost)"], 9_900, "{w}");
        assert_eq!(w["phases"]["kernel"], Value::Null, "{w}");
        assert!(w["attributed_fraction"].as_f64().unwrap() < 0.6, "{w}");
        assert_eq!(v["record_gaps"], 1, "{v}");
    }
}
