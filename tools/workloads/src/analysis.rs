//! Metrics derived from trace records as they are drained: per-command
//! device cycles, stall and wait totals, kernel spans and queue-switch
//! gaps, and the device cycle at which each event was signalled.
//!
//! Memory stays bounded by the number of cores, command kinds and events
//! (not by records), so it runs beside a streaming trace writer.

use crate::collect::RecordSink;
use crate::command_spans::CommandSpans;
use crate::occupancy::Occupancy;
use crate::stats::Summary;
use cqlab_abi::decode::Space;
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::noc::Coord;
use cqlab_abi::semaphore;
use cqlab_abi::trace::{TraceKind, TraceRecord};
use cqlab_abi::waypoint::{Waypoint, PSW, PWW, WCW};
use cqlab_driver::error::Result;
use cqlab_driver::Topology;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Count, total, min and max of durations in device cycles.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Tally {
    pub count: u64,
    pub total_cycles: u64,
    pub min_cycles: u64,
    pub max_cycles: u64,
}

impl Tally {
    pub fn add(&mut self, d: u64) {
        self.min_cycles = if self.count == 0 { d } else { self.min_cycles.min(d) };
        self.max_cycles = self.max_cycles.max(d);
        self.count += 1;
        self.total_cycles += d;
    }
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.total_cycles as f64 / self.count as f64)
    }
}

/// Name of a command id on a prefetcher or dispatcher.
pub fn command_name(space: Space, id: u32) -> &'static str {
    space.command_name(id as u8).unwrap_or("unknown")
}

/// The waypoint a dispatcher WAIT shows, from its `WaitTarget` record.
pub fn wait_waypoint(flags: u32, addr: u32) -> Waypoint {
    let flags = WaitFlags::from_bits_retain(flags as u8);
    if flags.contains(WaitFlags::WAIT_COUNTER) && addr == semaphore::WORKERS_DONE {
        WCW
    } else {
        PWW
    }
}

#[derive(Default)]
struct CoreState {
    /// Open commands (EXEC_BUF nests the trace's commands).
    open: CommandSpans,
    wait: Option<(Waypoint, u64)>,
    wait_target: Option<(u32, u32)>,
    stall: Option<u64>,
    /// Open kernel: (seq, start).
    kernel: Option<(u32, u64)>,
    /// Last finished kernel: (seq, end).
    last_kernel: Option<(u32, u64)>,
}

pub use cqlab_driver::dump::Role;

/// Accumulates run metrics from drained records.
pub struct Analysis {
    /// The chip the records come from (whose cores are whose).
    chip: std::sync::Arc<Topology>,
    /// Launch seq -> (queue, label, device cycle it was enqueued; `None`
    /// for launches captured in a trace) of every launch the workload made.
    pub launches: HashMap<u32, (u8, &'static str, Option<u64>)>,
    /// Per launch label: cycles from enqueue to each core's kernel start
    /// (queueing behind earlier work: the convoy effect).
    pub start_delays: BTreeMap<&'static str, Vec<f64>>,
    cores: HashMap<Coord, CoreState>,
    /// (role "CQ0 prefetcher", command) -> cycles.
    pub commands: BTreeMap<(String, &'static str), Tally>,
    /// (CQ, waypoint) -> cycles spent in that wait.
    pub waits: BTreeMap<(u8, String), Tally>,
    /// Kernel durations by launch label.
    pub kernels: BTreeMap<&'static str, Tally>,
    /// Gaps between consecutive kernels on one worker: same queue, different queues.
    pub same_cq_gaps: Vec<f64>,
    pub cross_cq_gaps: Vec<f64>,
    /// Event id -> device cycle its dispatcher signalled it.
    pub event_cycles: HashMap<u32, u64>,
    /// Fetch- and completion-queue occupancy, points at device records.
    pub occupancy: Occupancy,
    pub records: u64,
}

impl Analysis {
    /// Forgets what the records so far measured (command, wait and kernel
    /// tallies, gaps between kernels, start delays, occupancy points), and
    /// keeps what pairs later records with earlier ones (each core's open
    /// command and wait, the launches, the events): called where the timed
    /// iterations start, so a run's totals cover what its timed cycles do,
    /// not its warmup too (a wait open at that point counts whole).
    pub fn begin_timed(&mut self) {
        self.start_delays.clear();
        self.commands.clear();
        self.waits.clear();
        self.kernels.clear();
        self.same_cq_gaps.clear();
        self.cross_cq_gaps.clear();
        self.occupancy.forget_points();
    }

    /// Nothing seen yet, of records from `chip`.
    pub fn new(chip: std::sync::Arc<Topology>) -> Self {
        Self {
            chip,
            launches: HashMap::new(),
            start_delays: BTreeMap::new(),
            cores: HashMap::new(),
            commands: BTreeMap::new(),
            waits: BTreeMap::new(),
            kernels: BTreeMap::new(),
            same_cq_gaps: Vec::new(),
            cross_cq_gaps: Vec::new(),
            event_cycles: HashMap::new(),
            occupancy: Occupancy::default(),
            records: 0,
        }
    }

    /// What core `core` of `chip` is, as people read it ("CQ0 prefetcher",
    /// "worker (1,2)"; "core (x,y)" for a tile that runs no firmware).
    pub fn role(chip: &Topology, core: Coord) -> String {
        chip.role(core).map_or_else(|| format!("core {core}"), |r| r.to_string())
    }

    fn record(&mut self, core: Coord, r: &TraceRecord) {
        self.records += 1;
        let role = self.chip.role(core);
        let space = match role {
            Some(Role::Prefetcher { .. }) => Some(Space::Prefetch),
            Some(Role::Dispatcher { .. }) => Some(Space::Dispatch),
            _ => None,
        };
        let cq = match role {
            Some(Role::Prefetcher { cq } | Role::Dispatcher { cq }) => cq,
            _ => 0,
        };
        let st = self.cores.entry(core).or_default();
        match TraceKind::from_u16(r.kind) {
            Some(TraceKind::CmdStart | TraceKind::CmdEnd) => {
                if let (Some((id, cycles)), Some(space)) = (st.open.record(r), space) {
                    let key = (Self::role(&self.chip, core), command_name(space, id));
                    self.commands.entry(key).or_default().add(cycles);
                }
            }
            Some(TraceKind::WaitTarget) => st.wait_target = Some((r.arg0, r.arg1)),
            Some(TraceKind::WaitBegin) => {
                let (flags, addr) = st.wait_target.take().unwrap_or((0, 0));
                st.wait = Some((wait_waypoint(flags, addr), r.cycle));
            }
            Some(TraceKind::WaitEnd) => {
                if let Some((wp, start)) = st.wait.take() {
                    self.waits.entry((cq, wp.to_string())).or_default().add(r.cycle - start);
                }
            }
            Some(TraceKind::StallBegin) => st.stall = Some(r.cycle),
            Some(TraceKind::StallEnd) => {
                if let Some(start) = st.stall.take() {
                    self.waits.entry((cq, PSW.to_string())).or_default().add(r.cycle - start);
                }
            }
            Some(TraceKind::KernelStart) => {
                if let Some((prev_seq, prev_end)) = st.last_kernel {
                    let owner = |s: u32| self.launches.get(&s).map(|l| l.0);
                    if let (Some(a), Some(b)) = (owner(prev_seq), owner(r.arg0)) {
                        let gap = r.cycle.saturating_sub(prev_end) as f64;
                        if a == b { &mut self.same_cq_gaps } else { &mut self.cross_cq_gaps }.push(gap);
                    }
                }
                if let Some(&(_, label, Some(enqueued))) = self.launches.get(&r.arg0) {
                    self.start_delays.entry(label).or_default().push(r.cycle.saturating_sub(enqueued) as f64);
                }
                st.kernel = Some((r.arg0, r.cycle));
            }
            Some(TraceKind::KernelEnd) => {
                if let Some((seq, start)) = st.kernel.take().filter(|(s, _)| *s == r.arg0) {
                    let label = self.launches.get(&seq).map_or("unknown", |l| l.1);
                    self.kernels.entry(label).or_default().add(r.cycle - start);
                    st.last_kernel = Some((seq, r.cycle));
                }
            }
            Some(TraceKind::Event) => {
                self.event_cycles.insert(r.arg0, r.cycle);
            }
            Some(TraceKind::FetchConsumed) if space == Some(Space::Prefetch) => {
                self.occupancy.fetch_consumed(cq, r.cycle);
            }
            Some(TraceKind::CompletionWrite) if space == Some(Space::Dispatch) => {
                self.occupancy.completion_written(cq, r.cycle, r.arg1);
            }
            _ => {}
        }
    }

    /// Cross-queue minus same-queue kernel gap on a worker, with both sample
    /// sets; `overhead_cycles` is `None` ("no samples") when either is empty.
    pub fn switch_overhead(&self) -> SwitchOverhead {
        let same = Summary::of(&self.same_cq_gaps);
        let cross = Summary::of(&self.cross_cq_gaps);
        let overhead_cycles = match (&same, &cross) {
            (Some(s), Some(c)) => Some(c.mean - s.mean),
            _ => None,
        };
        SwitchOverhead {
            same_cq_samples: self.same_cq_gaps.len() as u64,
            cross_cq_samples: self.cross_cq_gaps.len() as u64,
            same_cq_gap_cycles: same,
            cross_cq_gap_cycles: cross,
            overhead_cycles,
        }
    }
}

impl RecordSink for Analysis {
    fn records(&mut self, core: Coord, records: &[TraceRecord]) -> Result<()> {
        for r in records {
            self.record(core, r);
        }
        Ok(())
    }
}

/// Queue-switch overhead: the gap between kernels from different queues on
/// one worker minus the gap between kernels from the same queue.
#[derive(Clone, Debug, Serialize)]
pub struct SwitchOverhead {
    pub same_cq_samples: u64,
    pub cross_cq_samples: u64,
    pub same_cq_gap_cycles: Option<Summary>,
    pub cross_cq_gap_cycles: Option<Summary>,
    /// Mean cross-queue gap minus mean same-queue gap; `None` = no samples.
    pub overhead_cycles: Option<f64>,
}
