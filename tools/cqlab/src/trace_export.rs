//! `cqlab trace export RUN --perfetto OUT.json`: a run trace (`cqlab run
//! --trace RUN`) as Chrome trace-event JSON for ui.perfetto.dev.
//!
//! One track (tid) per core that recorded anything, named by its role; a
//! B/E slice per command, wait, stall and kernel; instants for fetches and
//! events; counters for fetch- and completion-queue occupancy; a host
//! track with the iterations; and a flow arrow from the dispatcher's GO to
//! each kernel it started. Records lost to a lapped ring are an instant "N
//! records lost" on their core's track, where the slices open before the gap
//! close. Written as the trace is read: memory holds the
//! open slices per core, the launch table and the occupancy samples (a few
//! words each), never the records. The samples are written last, in time
//! order: a run writes its host's sample before the device's earlier ones
//! that the following drain brings, and a counter track read out of order
//! draws its values at the wrong times.

use crate::out::diagln;
use crate::trace_file::{Failed, Item, TraceReader};
use anyhow::{Context, Result};
use cqlab_abi::decode::Space;
use cqlab_abi::dispatch::DispatchCmdId;
use cqlab_abi::noc::Coord;
use cqlab_abi::trace::{TraceKind, TraceRecord};
use cqlab_driver::{Role, Topology};
use cqlab_workloads::analysis::{command_name, wait_waypoint};
use serde_json::json;
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ExportArgs {
    /// A run trace written by `cqlab run ... --trace RUN`.
    pub run: PathBuf,
    /// Where to write the Chrome trace-event JSON.
    #[arg(long)]
    pub perfetto: PathBuf,
}

const PID: u32 = 1;
/// Track of host-side iteration spans and counters.
const HOST_TID: u32 = 1;

#[derive(Default)]
struct Track {
    tid: u32,
    named: bool,
    /// Open slices: (kind key, name) for matching ends.
    open: Vec<(u32, String)>,
    last_ts: f64,
    wait_target: (u32, u32),
}

pub struct Exporter<W: Write> {
    out: W,
    first: bool,
    clock_hz: f64,
    /// The chip the records come from: whose each core is.
    chip: Topology,
    roles: HashMap<Coord, String>,
    tracks: HashMap<Coord, Track>,
    next_tid: u32,
    /// Launch seq -> (queue, label).
    launches: HashMap<u32, (u8, String)>,
    /// Per queue: the n-th GO (or LAUNCH) the dispatcher ran starts the
    /// n-th launch the host enqueued on the queue. A GO record does not
    /// name its launch, and a worker can take its GO while it still runs
    /// the previous kernel (the convoy), so the GO nearest before a kernel
    /// can be another launch's (helper-94: 1600 of 2560 arrows of `hetero
    /// --cqs 1`). Launches and GOs not yet paired, oldest first.
    unpaired: HashMap<u8, (VecDeque<u32>, VecDeque<f64>)>,
    /// Launch seq -> its GO's timestamp.
    go_of: HashMap<u32, f64>,
    /// Where a failed run's host gave up: slices still open then (its hung
    /// kernels) last until it, not until their own start.
    failed_ts: Option<f64>,
    /// Queues whose GOs no longer follow the launch lines: their
    /// dispatcher lost records (a gap hides how many GOs it ran), or the
    /// queue captured a trace (its replays run GOs with no launch line).
    /// Their later kernels get no arrow rather than a wrong one.
    unordered: HashSet<u8>,
    next_flow: u64,
    /// Occupancy samples as read, written sorted by `finish`.
    occupancy: Vec<OccupancySample>,
    pub events: u64,
}

/// One queue's occupancy at one cycle: a value on each of its two counter
/// tracks.
struct OccupancySample {
    cycle: u64,
    cq: u8,
    fetch_entries: u32,
    completion_bytes: u32,
}

/// Slice keys: commands by id (prefetch and dispatch ids can coincide, but a
/// track is one core, so one space), then waits, stalls and kernels.
const KEY_WAIT: u32 = 0x1_0000;
const KEY_STALL: u32 = 0x1_0001;
const KEY_KERNEL: u32 = 0x1_0002;

impl<W: Write> Exporter<W> {
    pub fn new(mut out: W, chip: Topology, roles: HashMap<Coord, String>, clock_hz: f64, title: &str) -> Result<Self> {
        writeln!(out, "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")?;
        let mut e = Self {
            out,
            first: true,
            clock_hz,
            chip,
            roles,
            tracks: HashMap::new(),
            next_tid: HOST_TID + 1,
            launches: HashMap::new(),
            unpaired: HashMap::new(),
            go_of: HashMap::new(),
            failed_ts: None,
            unordered: HashSet::new(),
            next_flow: 1,
            occupancy: Vec::new(),
            events: 0,
        };
        e.emit(json!({"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "ts": 0, "args": {"name": title}}))?;
        e.emit(
            json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": HOST_TID, "ts": 0, "args": {"name": "host"}}),
        )?;
        Ok(e)
    }

    fn emit(&mut self, v: serde_json::Value) -> Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, &v)?;
        self.events += 1;
        Ok(())
    }

    /// Microseconds (the trace-event unit) from device cycles.
    fn ts(&self, cycle: u64) -> f64 {
        cycle as f64 * 1e6 / self.clock_hz
    }

    fn track(&mut self, core: Coord) -> Result<u32> {
        if let Some(t) = self.tracks.get(&core) {
            if t.named {
                return Ok(t.tid);
            }
        }
        let tid = self.next_tid;
        self.next_tid += 1;
        let name = self.roles.get(&core).cloned().unwrap_or_else(|| format!("core {core}"));
        self.tracks.insert(core, Track { tid, named: true, ..Default::default() });
        self.emit(json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": tid, "ts": 0, "args": {"name": name}}))?;
        // Perfetto orders tracks by this index: CQ cores first, then workers.
        self.emit(json!({"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": tid, "ts": 0,
                         "args": {"sort_index": tid}}))?;
        Ok(tid)
    }

    fn begin(&mut self, core: Coord, key: u32, name: String, ts: f64, args: serde_json::Value) -> Result<()> {
        let tid = self.track(core)?;
        self.emit(json!({"ph": "B", "name": name, "cat": "device", "pid": PID, "tid": tid, "ts": ts, "args": args}))?;
        let t = self.tracks.get_mut(&core).expect("track");
        t.open.push((key, name));
        t.last_ts = ts;
        Ok(())
    }

    /// Closes the innermost open slice with `key` (and any opened inside it
    /// whose end was lost); an end with no open slice is dropped.
    fn end(&mut self, core: Coord, key: u32, ts: f64) -> Result<()> {
        let tid = self.track(core)?;
        let t = self.tracks.get_mut(&core).expect("track");
        let Some(pos) = t.open.iter().rposition(|(k, _)| *k == key) else {
            return Ok(());
        };
        let closing: Vec<String> = t.open.drain(pos..).map(|(_, n)| n).rev().collect();
        t.last_ts = ts;
        for name in closing {
            self.emit(json!({"ph": "E", "name": name, "pid": PID, "tid": tid, "ts": ts}))?;
        }
        Ok(())
    }

    fn instant(&mut self, core: Coord, name: String, ts: f64, args: serde_json::Value) -> Result<()> {
        let tid = self.track(core)?;
        self.emit(json!({"ph": "i", "s": "t", "name": name, "pid": PID, "tid": tid, "ts": ts, "args": args}))
    }

    /// A launch line; `captured`: recorded into a trace, so it runs when
    /// the trace is replayed, not here.
    pub fn launch(&mut self, seq: u32, cq: u8, label: String, captured: bool) {
        self.launches.insert(seq, (cq, label));
        if captured {
            self.unorder(cq);
        } else if !self.unordered.contains(&cq) {
            self.unpaired.entry(cq).or_default().0.push_back(seq);
            self.pair(cq);
        }
    }

    /// Pairs the queue's oldest unpaired launch and GO while it has both.
    fn pair(&mut self, cq: u8) {
        let (seqs, gos) = self.unpaired.entry(cq).or_default();
        while !seqs.is_empty() && !gos.is_empty() {
            let (seq, go) = (seqs.pop_front().expect("non-empty"), gos.pop_front().expect("non-empty"));
            self.go_of.insert(seq, go);
        }
    }

    /// The queue's GOs can no longer be told apart: no more arrows on it.
    fn unorder(&mut self, cq: u8) {
        self.unordered.insert(cq);
        self.unpaired.remove(&cq);
    }

    /// `records` records of `core` after seq `after` were lost: whatever
    /// it was doing across the gap is unknown, so the slices open before
    /// it end at its last record before it (helper-94: a LAUNCH start
    /// before a gap and another LAUNCH's end after it drew one slice of
    /// 2.8 ms), and the gap is marked there.
    pub fn lost(&mut self, core: Coord, after: u32, records: u32) -> Result<()> {
        let tid = self.track(core)?;
        let t = self.tracks.get_mut(&core).expect("track");
        let ts = t.last_ts;
        let closing: Vec<String> = t.open.drain(..).map(|(_, n)| n).rev().collect();
        t.wait_target = (0, 0);
        for name in closing {
            self.emit(json!({"ph": "E", "name": name, "pid": PID, "tid": tid, "ts": ts}))?;
        }
        if let Some(Role::Dispatcher { cq }) = self.chip.role(core) {
            self.unorder(cq);
        }
        self.instant(core, format!("{records} records lost"), ts, json!({"after_seq": after, "records": records}))
    }

    pub fn record(&mut self, core: Coord, r: &TraceRecord) -> Result<()> {
        // A core's cycles can step back in traces of older builds
        // (`TraceReader`): drawn at its track's latest time, a slice never
        // ends before it begins nor begins inside the one before it.
        let ts = self.tracks.get(&core).map_or(self.ts(r.cycle), |t| self.ts(r.cycle).max(t.last_ts));
        let ep = self.chip.role(core);
        let space = match ep {
            Some(Role::Prefetcher { .. }) => Space::Prefetch,
            _ => Space::Dispatch,
        };
        match TraceKind::from_u16(r.kind) {
            Some(TraceKind::CmdStart) => {
                let name = command_name(space, r.arg0).to_owned();
                self.begin(core, r.arg0, name, ts, json!({"bytes": r.arg1}))?;
                if let Some(Role::Dispatcher { cq }) = ep {
                    // A LAUNCH's multicast is the GO of programs.
                    let go = r.arg0 == DispatchCmdId::Go as u32 || r.arg0 == DispatchCmdId::Launch as u32;
                    if go && !self.unordered.contains(&cq) {
                        self.unpaired.entry(cq).or_default().1.push_back(ts);
                        self.pair(cq);
                    }
                }
            }
            Some(TraceKind::CmdEnd) => self.end(core, r.arg0, ts)?,
            Some(TraceKind::WaitTarget) => {
                let tid = self.track(core)?;
                let _ = tid;
                self.tracks.get_mut(&core).expect("track").wait_target = (r.arg0, r.arg1);
            }
            Some(TraceKind::WaitBegin) => {
                let (flags, addr) = self.tracks.get(&core).map_or((0, 0), |t| t.wait_target);
                let wp = wait_waypoint(flags, addr);
                self.begin(core, KEY_WAIT, format!("wait {wp}"), ts, json!({"target": r.arg0, "observed": r.arg1}))?;
            }
            Some(TraceKind::WaitEnd) => self.end(core, KEY_WAIT, ts)?,
            Some(TraceKind::StallBegin) => {
                self.begin(core, KEY_STALL, "stall PSW".into(), ts, json!({"target": r.arg0}))?
            }
            Some(TraceKind::StallEnd) => self.end(core, KEY_STALL, ts)?,
            Some(TraceKind::KernelStart) => {
                let (cq, label) = self.launches.get(&r.arg0).cloned().unwrap_or((u8::MAX, "kernel".into()));
                let name = format!("kernel {label}");
                self.begin(core, KEY_KERNEL, name, ts, json!({"seq": r.arg0, "cq": cq}))?;
                // (A kernel cannot start before its GO: one that seems to
                // is a mispairing, drawn without an arrow.)
                if let Some(go_ts) = self.go_of.get(&r.arg0).copied().filter(|&g| g <= ts) {
                    let id = self.next_flow;
                    self.next_flow += 1;
                    let dispatcher = self.chip.dispatcher(cq);
                    let dtid = self.track(dispatcher)?;
                    let wtid = self.track(core)?;
                    self.emit(json!({"ph": "s", "name": "GO", "cat": "launch", "id": id, "pid": PID, "tid": dtid,
                                     "ts": go_ts}))?;
                    self.emit(json!({"ph": "f", "bp": "e", "name": "GO", "cat": "launch", "id": id, "pid": PID,
                                     "tid": wtid, "ts": ts}))?;
                }
            }
            Some(TraceKind::KernelEnd) => self.end(core, KEY_KERNEL, ts)?,
            Some(k @ (TraceKind::FetchConsumed | TraceKind::Event | TraceKind::Error | TraceKind::CompletionWrite)) => {
                self.instant(core, k.label().to_owned(), ts, json!({"arg0": r.arg0, "arg1": r.arg1}))?
            }
            _ => {}
        }
        Ok(())
    }

    /// An iteration on the host track: `start` to `end` when the host saw
    /// it complete (`--sync per-iter`); with `--sync end` (`end` None) the
    /// host only enqueued it here, so the slice is `start` to `enqueued` and
    /// says so (helper-94: it read as the iteration's latency).
    pub fn iteration(&mut self, index: u32, warmup: bool, start: u64, enqueued: u64, end: Option<u64>) -> Result<()> {
        let (ts, dur) = (self.ts(start), self.ts(end.unwrap_or(enqueued)) - self.ts(start));
        let what = if warmup { "warmup" } else { "iteration" };
        let name = if end.is_some() { format!("{what} {index}") } else { format!("enqueue {what} {index}") };
        self.emit(json!({"ph": "X", "name": name, "cat": "host", "pid": PID, "tid": HOST_TID, "ts": ts, "dur": dur}))
    }

    /// The run failed: an instant on the host track where it stopped.
    pub fn failed(&mut self, f: &Failed) -> Result<()> {
        let ts = f.cycle.map_or(0.0, |c| self.ts(c));
        self.failed_ts = f.cycle.map(|_| ts);
        self.emit(json!({"ph": "i", "s": "g", "name": "run failed", "cat": "host", "pid": PID, "tid": HOST_TID,
                         "ts": ts, "args": {"iteration": f.iteration, "exit": f.exit, "kind": f.kind,
                                            "error": f.error}}))
    }

    /// Keeps a queue's occupancy sample for `finish` to write in time order.
    pub fn occupancy(&mut self, cq: u8, cycle: u64, fetch_entries: u32, completion_bytes: u32) {
        self.occupancy.push(OccupancySample { cycle, cq, fetch_entries, completion_bytes });
    }

    /// The occupancy counters by cycle, then queue; samples of one queue at
    /// one cycle keep the run's order (a stable sort), so the output is the
    /// same on every export.
    fn write_occupancy(&mut self) -> Result<()> {
        let mut samples = std::mem::take(&mut self.occupancy);
        samples.sort_by_key(|s| (s.cycle, s.cq));
        for s in samples {
            let (ts, cq) = (self.ts(s.cycle), s.cq);
            self.emit(json!({"ph": "C", "name": format!("CQ{cq} fetch queue entries"), "pid": PID, "tid": HOST_TID,
                             "ts": ts, "args": {"entries": s.fetch_entries}}))?;
            self.emit(json!({"ph": "C", "name": format!("CQ{cq} completion queue bytes"), "pid": PID,
                             "tid": HOST_TID, "ts": ts, "args": {"bytes": s.completion_bytes}}))?;
        }
        Ok(())
    }

    /// Closes every slice still open at its track's last timestamp (a failed
    /// run's, where its host gave up if later: a hung kernel's track ends
    /// at its start, and drew it zero wide), then writes the occupancy
    /// counters.
    pub fn finish(mut self) -> Result<(W, u64)> {
        let failed = self.failed_ts.unwrap_or(f64::MIN);
        let mut open: Vec<(u32, f64, Vec<String>)> = self
            .tracks
            .values_mut()
            .map(|t| (t.tid, t.last_ts.max(failed), t.open.drain(..).map(|(_, n)| n).rev().collect()))
            .collect();
        // In track order, not the map's (which differs run to run): a
        // failed run's trace ends with every worker's kernel open, and two
        // exports of it differed.
        open.sort_by_key(|o| o.0);
        for (tid, ts, names) in open {
            for name in names {
                self.emit(json!({"ph": "E", "name": name, "pid": PID, "tid": tid, "ts": ts}))?;
            }
        }
        self.write_occupancy()?;
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok((self.out, self.events))
    }
}

/// What an export wrote: events, and why the trace is incomplete if it is.
pub struct Exported {
    pub events: u64,
    pub end_missing: Option<String>,
    /// The run failed (the `end` line says where and why).
    pub failure: Option<String>,
    /// Records the run lost (its `end` line), and the gaps they left.
    pub lost: u64,
    pub gaps: u64,
}

pub fn export(run: &Path, out: &Path) -> Result<Exported> {
    let mut reader = TraceReader::open(run)?;
    let h = reader.header.clone();
    let roles = h.cores.iter().map(|c| (Coord::new(c.x, c.y), c.role.clone())).collect();
    let file = crate::output::Atomic::create("--perfetto", out)?;
    let title = format!("cqlab {} ({}, {} CQs, seed {})", h.workload, h.chip, h.cqs, h.seed);
    let mut ex = Exporter::new(file, h.topology()?, roles, h.clock_hz, &title)?;
    let (mut lost, mut gaps) = (0, 0);
    for item in reader.by_ref() {
        match item? {
            Item::Rec(core, r) => ex.record(core, &r)?,
            Item::Lost { core, after, records } => {
                gaps += 1;
                ex.lost(core, after, records)?
            }
            Item::Launch(l) => ex.launch(l.seq, l.cq, l.label, l.enqueued.is_none()),
            Item::Iter(i) => ex.iteration(i.index, i.warmup, i.start, i.enqueued, i.end)?,
            Item::Occ(o) => ex.occupancy(o.cq, o.cycle, o.fetch_entries, o.completion_bytes),
            Item::End(e) => {
                lost = e.lost;
                if let Some(f) = &e.failed {
                    ex.failed(f)?;
                }
            }
        }
    }
    let (file, events) = ex.finish().with_context(|| format!("writing --perfetto {}", out.display()))?;
    file.commit()?;
    Ok(Exported { events, end_missing: reader.end_missing(), failure: reader.failure(), lost, gaps })
}

pub fn validate(a: &ExportArgs) -> Result<()> {
    crate::input::check_file("RUN", &a.run)?;
    crate::output::check("--perfetto", &a.perfetto, crate::output::Kind::File, &[&a.run])?;
    Ok(())
}

pub fn run_export(a: ExportArgs) -> Result<ExitCode> {
    let e = export(&a.run, &a.perfetto)?;
    if let Some(why) = &e.end_missing {
        diagln!("warning: {why}; exported what is there (open slices are closed at their last record)");
    }
    if let Some(why) = &e.failure {
        diagln!("warning: {why}; exported the records drained up to the failure (instant \"run failed\")");
    }
    if e.lost > 0 || e.gaps > 0 {
        diagln!(
            "warning: {} trace records were overwritten before the run read them ({} gaps in the cores' records): \
             each gap is an instant \"N records lost\" on its core's track, the slices open across it end at its \
             last record before it, and a queue's GO arrows stop at its dispatcher's first gap",
            e.lost,
            e.gaps
        );
    }
    diagln!("wrote {} trace events to {} (open it at ui.perfetto.dev)", e.events, a.perfetto.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::soc::Board;

    /// Occupancy read as a run writes it (a host sample, then the drain's
    /// earlier device samples) on two queues: each of the four counter
    /// tracks comes out in time order.
    #[test]
    fn every_counter_track_is_in_time_order() {
        let chip = Topology::for_board(Board::WormholeN150, None, 2).unwrap();
        let mut ex = Exporter::new(Vec::new(), chip, HashMap::new(), 1e9, "test").unwrap();
        for (cq, cycle) in [(0, 1000), (1, 1000), (0, 400), (1, 700), (0, 900), (1, 300), (0, 2000), (1, 1500)] {
            ex.occupancy(cq, cycle, cycle as u32 % 7, cycle as u32 % 64);
        }
        let (out, _) = ex.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let mut tracks: HashMap<String, Vec<f64>> = HashMap::new();
        for e in v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "C") {
            tracks.entry(e["name"].as_str().unwrap().to_owned()).or_default().push(e["ts"].as_f64().unwrap());
        }
        assert_eq!(tracks.len(), 4, "{tracks:?}");
        for (name, ts) in &tracks {
            assert_eq!(ts.len(), 4, "{name}: {ts:?}");
            assert!(ts.is_sorted(), "{name} goes back in time: {ts:?}");
        }
    }

    /// A core's cycles that step back (traces of builds before 2026-12-01)
    /// leave each track's slices in time order: a worker's next
    /// kernel starts 10 cycles before its last one ended, a dispatcher's WAIT
    /// ends before it began (helper-53: a slice ended before it began).
    #[test]
    fn slices_stay_in_time_order_when_cycles_step_back() {
        let chip = Topology::for_board(Board::WormholeN150, None, 1).unwrap();
        let (worker, dispatcher) = (chip.worker(0, 0).unwrap(), chip.dispatcher(0));
        let mut ex = Exporter::new(Vec::new(), chip, HashMap::new(), 1e9, "test").unwrap();
        let rec = |cycle, seq, kind: TraceKind| TraceRecord { cycle, seq, kind: kind as u16, ..Default::default() };
        use TraceKind::*;
        for (seq, (cycle, kind)) in
            [(100, KernelStart), (200, KernelEnd), (190, KernelStart), (300, KernelEnd)].into_iter().enumerate()
        {
            ex.record(worker, &rec(cycle, seq as u32, kind)).unwrap();
        }
        for (seq, (cycle, kind)) in [(500, WaitBegin), (480, WaitEnd)].into_iter().enumerate() {
            ex.record(dispatcher, &rec(cycle, seq as u32, kind)).unwrap();
        }
        let (out, _) = ex.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let mut slices: HashMap<u64, Vec<f64>> = HashMap::new();
        for e in v["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "B" || e["ph"] == "E") {
            slices.entry(e["tid"].as_u64().unwrap()).or_default().push(e["ts"].as_f64().unwrap());
        }
        assert_eq!(slices.values().map(Vec::len).sum::<usize>(), 6, "{slices:?}");
        for (tid, ts) in &slices {
            assert!(ts.is_sorted(), "track {tid}: a slice begins or ends before the one before it: {ts:?}");
        }
    }

    /// A one-queue n150 trace of `lines` (after its header), exported: the
    /// trace events, and what the export said.
    fn export_lines(lines: &[String]) -> (Vec<serde_json::Value>, Exported) {
        let header = r#"{"format":"cqlab-trace","version":2,"workload":"x","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","clock_hz":1e9,"cores":[]}"#;
        let text: String = std::iter::once(header.to_owned()).chain(lines.iter().cloned()).map(|l| l + "\n").collect();
        let dir = tempfile::tempdir().unwrap();
        let (run, out) = (dir.path().join("run.jsonl"), dir.path().join("run.perfetto.json"));
        std::fs::write(&run, text).unwrap();
        let e = export(&run, &out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        (v["traceEvents"].as_array().unwrap().clone(), e)
    }

    /// A `rec` line of `core`.
    fn rec(core: Coord, cycle: u64, seq: u32, kind: TraceKind, arg0: u32) -> String {
        format!(r#"{{"rec":[{},{},{cycle},{seq},{},{arg0},0]}}"#, core.x, core.y, kind as u16)
    }

    /// Records lost between a LAUNCH's start and another LAUNCH's end: the
    /// slice ends at the last record before the gap, an instant marks the
    /// gap, and the export counts the records the `end` line says were lost
    /// (helper-94: one LAUNCH slice of 2.8 ms, and no warning).
    #[test]
    fn a_seq_gap_ends_open_slices_before_it_and_is_marked() {
        let chip = Topology::for_board(Board::WormholeN150, None, 1).unwrap();
        let d = chip.dispatcher(0);
        let launch = DispatchCmdId::Launch as u32;
        let (events, e) = export_lines(&[
            rec(d, 100, 7, TraceKind::CmdStart, launch),
            rec(d, 5000, 11, TraceKind::CmdEnd, launch),
            rec(d, 5100, 12, TraceKind::CmdStart, launch),
            rec(d, 5200, 13, TraceKind::CmdEnd, launch),
            r#"{"end":{"timed_cycles":6000,"lost":3}}"#.to_owned(),
        ]);
        let slices: Vec<(&str, f64)> = events
            .iter()
            .filter(|v| v["ph"] == "B" || v["ph"] == "E")
            .map(|v| (v["ph"].as_str().unwrap(), v["ts"].as_f64().unwrap()))
            .collect();
        assert_eq!(slices, [("B", 0.1), ("E", 0.1), ("B", 5.1), ("E", 5.2)], "{events:?}");
        let lost: Vec<&serde_json::Value> = events.iter().filter(|v| v["ph"] == "i").collect();
        assert_eq!(lost.len(), 1, "{lost:?}");
        assert_eq!(
            (&lost[0]["name"], &lost[0]["ts"], &lost[0]["args"]["after_seq"]),
            (&json!("3 records lost"), &json!(0.1), &json!(7))
        );
        assert_eq!((e.lost, e.gaps), (3, 1));
    }

    /// With `--sync end` the host track's slice of an iteration is its
    /// enqueue, and says so; with `--sync per-iter` it is the iteration
    /// (helper-94: "iteration N" spanned the enqueue only).
    #[test]
    fn an_iteration_without_its_end_is_named_as_its_enqueue() {
        let iter = |index: u32, end: &str| {
            format!(
                r#"{{"iter":{{"index":{index},"warmup":false,"start":1000,"enqueued":3000,"end":{end},"events":[1]}}}}"#
            )
        };
        let (events, _) = export_lines(&[iter(0, "null"), iter(1, "9000")]);
        let host: Vec<(&str, f64)> = events
            .iter()
            .filter(|v| v["ph"] == "X")
            .map(|v| (v["name"].as_str().unwrap(), v["dur"].as_f64().unwrap()))
            .collect();
        assert_eq!(host, [("enqueue iteration 0", 2.0), ("iteration 1", 8.0)]);
    }

    /// Slices still open at the end (a failed run's hung kernels) close in
    /// the same order on every export: two exports are byte-identical.
    #[test]
    fn slices_open_at_the_end_close_in_the_same_order_every_time() {
        let chip = Topology::for_board(Board::WormholeN150, None, 1).unwrap();
        let starts: Vec<String> =
            chip.workers().enumerate().map(|(i, w)| rec(w, 100 + i as u64, 0, TraceKind::KernelStart, 1)).collect();
        let first = export_lines(&starts).0;
        for _ in 0..4 {
            assert_eq!(export_lines(&starts).0, first);
        }
    }
}
