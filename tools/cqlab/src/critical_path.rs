//! The critical path of one iteration: a dependency chain, walked back from
//! the iteration's completion through what each step waited on, using the
//! trace records of every core:
//!
//! - the host saw the iteration's last event after its dispatcher stamped it
//!   (`completion`);
//! - a dispatcher in a WAIT on its workers (`wait WCW`) waited for the
//!   worker whose kernel ended last before the wait ended; a WAIT on memory
//!   (`wait PWW`, another queue's event) waited for the dispatcher whose
//!   event record came last before it ended;
//! - a dispatcher between commands waited for its prefetcher when a relay
//!   ended inside the gap, else the gap is its own (`dispatch`);
//! - a kernel (`kernel`) waited for the GO that launched it (latest GO of
//!   its queue's dispatcher at or before its start: `dispatch`), or, when the
//!   worker was still busy after that GO, for the worker's previous kernel
//!   (`dispatch`, worker firmware between kernels: the convoy);
//! - a prefetcher stalled in `wait PSW` waited for its dispatcher's WAIT
//!   that released it; a prefetcher taking a fetch-queue entry (`fetch
//!   (PCIe)`: doorbell wait plus the chunk read) waited for the host while
//!   the host was still enqueuing the iteration (`host enqueue`). The
//!   doorbell itself has no record, so the fetch step starts where the
//!   host's enqueue ends.
//!
//! Everything else on a core's own timeline (commands, relays) continues on
//! that core. A step with no records to explain it is `unattributed`.

use cqlab_abi::dispatch::DispatchCmdId;
use cqlab_abi::noc::Coord;
use cqlab_driver::{Role, Topology};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// What a core did over one interval between two of its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seg {
    Kernel {
        seq: u32,
    },
    /// A worker between kernels (or before its first), waiting for a GO.
    WorkerIdle,
    /// Dispatcher in a command (outside any WAIT).
    DispatchCmd {
        id: u8,
    },
    /// Dispatcher between commands (reading headers, UAPW for bytes).
    DispatchBetween,
    /// Dispatcher in a WAIT: on its workers (WCW) or on memory (PWW, with
    /// the value it waits for: an event id when another queue's event).
    DispatchWait {
        workers: bool,
        target: u32,
    },
    /// Prefetcher running a chunk's commands (relays, trace replays).
    PrefetchBusy,
    /// Prefetcher stalled for its dispatcher (PSW).
    PrefetchStall,
    /// Prefetcher until it took a fetch-queue entry: doorbell wait + chunk read.
    PrefetchFetch,
    /// Prefetcher after its last command, no entry taken yet (HQW).
    PrefetchIdle,
}

/// One step of a critical path, in time order once reversed.
#[derive(Clone, Debug)]
pub struct Step {
    /// A phase of `trace_summary::PHASES`, `wait WP` or `unattributed`.
    pub phase: String,
    /// What exactly (a command, "worker done -> dispatcher counter", ...).
    pub detail: String,
    /// The core it happened on; `None` for the host.
    pub core: Option<Coord>,
    pub from: u64,
    pub to: u64,
}

/// GO and event records remembered per core (bounded, oldest dropped).
const POINT_HISTORY: usize = 1 << 16;

/// Per-core segments since the last pruned window, and each core's open state.
pub struct Timeline {
    /// The chip the records come from: whose each core is.
    chip: Arc<Topology>,
    segs: HashMap<Coord, VecDeque<(u64, u64, Seg)>>,
    open: HashMap<Coord, (u64, Seg)>,
    /// Per dispatcher: cycles its GO commands ended.
    go_ends: HashMap<Coord, VecDeque<u64>>,
    /// Event records: (event id, cycle, dispatcher).
    events: VecDeque<(u32, u64, Coord)>,
}

fn push_bounded(q: &mut VecDeque<u64>, v: u64) {
    if q.len() == POINT_HISTORY {
        q.pop_front();
    }
    q.push_back(v);
}

impl Timeline {
    /// Nothing recorded yet, of records from `chip`.
    pub fn new(chip: Arc<Topology>) -> Self {
        Self { chip, segs: HashMap::new(), open: HashMap::new(), go_ends: HashMap::new(), events: VecDeque::new() }
    }

    /// `core` did `seg` over `[start, end)`.
    pub fn segment(&mut self, core: Coord, start: u64, end: u64, seg: Seg) {
        if end > start {
            self.segs.entry(core).or_default().push_back((start, end, seg));
        }
    }

    /// `core` is doing `seg` from `since` on (until its next record).
    pub fn set_open(&mut self, core: Coord, since: u64, seg: Option<Seg>) {
        match seg {
            Some(s) => {
                self.open.insert(core, (since, s));
            }
            None => {
                self.open.remove(&core);
            }
        }
    }

    pub fn go_ended(&mut self, dispatcher: Coord, cycle: u64) {
        push_bounded(self.go_ends.entry(dispatcher).or_default(), cycle);
    }

    pub fn event(&mut self, dispatcher: Coord, id: u32, cycle: u64) {
        if self.events.len() == POINT_HISTORY {
            self.events.pop_front();
        }
        self.events.push_back((id, cycle, dispatcher));
    }

    /// Drops what no later window can need: segments ending at or before `cycle`.
    pub fn prune(&mut self, cycle: u64) {
        for q in self.segs.values_mut() {
            while q.front().is_some_and(|s| s.1 <= cycle) {
                q.pop_front();
            }
        }
    }

    /// Segments held (for the bounded-memory test).
    pub fn held(&self) -> usize {
        self.segs.values().map(VecDeque::len).sum::<usize>() + self.events.len()
    }

    /// The segment of `core` covering the instant just before `t`.
    fn at(&self, core: Coord, t: u64) -> Option<(u64, u64, Seg)> {
        if let Some(q) = self.segs.get(&core) {
            let n = q.partition_point(|s| s.0 < t);
            if n > 0 && q[n - 1].1 >= t {
                return Some(q[n - 1]);
            }
        }
        match self.open.get(&core) {
            Some(&(since, seg)) if since < t => Some((since, t, seg)),
            _ => None,
        }
    }

    /// Latest end in `(after, t]` of a segment of `core` matching `f`.
    fn latest_end(&self, core: Coord, after: u64, t: u64, f: impl Fn(Seg) -> bool) -> Option<u64> {
        let q = self.segs.get(&core)?;
        let n = q.partition_point(|s| s.0 < t);
        q.range(..n).rev().map_while(|s| (s.1 > after).then_some(s)).filter(|s| s.1 <= t && f(s.2)).map(|s| s.1).max()
    }

    /// Latest kernel end in `(after, t]` among workers running launches of queue `cq`.
    fn latest_kernel_end(&self, cq: u8, launches: &HashMap<u32, u8>, after: u64, t: u64) -> Option<(Coord, u64)> {
        self.segs
            .keys()
            .filter(|c| matches!(self.chip.role(**c), Some(Role::Worker { .. })))
            .filter_map(|&c| {
                let e = self.latest_end(
                    c,
                    after,
                    t,
                    |s| matches!(s, Seg::Kernel { seq } if launches.get(&seq) == Some(&cq)),
                )?;
                Some((c, e))
            })
            .max_by_key(|&(c, e)| (e, std::cmp::Reverse(c.packed())))
    }

    pub fn latest_go(&self, cq: u8, t: u64) -> Option<u64> {
        let q = self.go_ends.get(&self.chip.dispatcher(cq))?;
        let n = q.partition_point(|&g| g <= t);
        n.checked_sub(1).map(|i| q[i])
    }

    /// Walks back from `done` (the cycle and dispatcher of the iteration's
    /// last event) to `start`; `enqueued` is when the host finished
    /// enqueuing the iteration and `end` when it saw it complete.
    pub fn walk(
        &self,
        start: u64,
        enqueued: u64,
        end: u64,
        done: Option<(u64, Coord)>,
        launches: &HashMap<u32, u8>,
    ) -> Vec<Step> {
        let mut steps: Vec<Step> = Vec::new();
        let mut push = |phase: &str, detail: String, core: Option<Coord>, from: u64, to: u64| {
            let from = from.max(start);
            if to > from {
                steps.push(Step { phase: phase.into(), detail, core, from, to });
            }
        };
        let Some((done, dcore)) = done else {
            push("unattributed", "the iteration's events have no records".into(), None, start, end);
            return steps;
        };
        let done = done.min(end);
        push("completion", "host sees the event the dispatcher stamped".into(), None, done, end);
        // Where the walk is: a core, or the host (None).
        let (mut t, mut at) = (done, Some(dcore));
        let mut guard = 0u32;
        while t > start {
            guard += 1;
            let Some(core) = at.filter(|_| guard < 1_000_000) else {
                let what = if at.is_none() { "host enqueuing the iteration" } else { "walk cut short" };
                let phase = if at.is_none() { "host enqueue" } else { "unattributed" };
                push(phase, what.into(), None, start, t);
                break;
            };
            let Some((s, _, seg)) = self.at(core, t) else {
                push("unattributed", "no records of this core".into(), Some(core), start, t);
                break;
            };
            let cq = match self.chip.role(core) {
                Some(Role::Prefetcher { cq } | Role::Dispatcher { cq }) => cq,
                _ => 0,
            };
            match seg {
                Seg::Kernel { seq } => {
                    push("kernel", format!("launch {seq}"), Some(core), s, t);
                    t = s;
                    let go = launches.get(&seq).and_then(|&q| Some((q, self.latest_go(q, t)?)));
                    let idle_from = match self.at(core, t) {
                        Some((p, _, Seg::WorkerIdle)) => Some(p),
                        _ => None,
                    };
                    match (go, idle_from) {
                        (Some((q, g)), idle) if idle.is_none_or(|p| g >= p) => {
                            push("dispatch", "GO in flight to the kernel".into(), Some(core), g, t);
                            (t, at) = (g.min(t), Some(self.chip.dispatcher(q)));
                        }
                        (_, Some(p)) => {
                            push(
                                "dispatch",
                                "worker firmware between kernels (its GO came while the previous kernel ran)".into(),
                                Some(core),
                                p,
                                t,
                            );
                            t = p;
                        }
                        _ => {
                            push("unattributed", format!("no GO record for launch {seq}"), Some(core), start, t);
                            t = start;
                        }
                    }
                }
                Seg::WorkerIdle => {
                    push("wait GOW", "worker idle, waiting for a GO".into(), Some(core), s, t);
                    t = s;
                }
                Seg::DispatchCmd { id } => {
                    let name = DispatchCmdId::from_u8(id).map_or("unknown", |c| c.name());
                    let phase = if id == DispatchCmdId::WriteHost as u8 { "completion" } else { "dispatch" };
                    push(phase, name.into(), Some(core), s, t);
                    t = s;
                }
                Seg::DispatchBetween => {
                    match self.latest_end(self.chip.prefetcher(cq), s, t, |x| x == Seg::PrefetchBusy) {
                        Some(r) => {
                            push("dispatch", "between commands, after the prefetcher's relay".into(), Some(core), r, t);
                            (t, at) = (r, Some(self.chip.prefetcher(cq)));
                        }
                        None => {
                            push("dispatch", "between commands".into(), Some(core), s, t);
                            t = s;
                        }
                    }
                }
                Seg::DispatchWait { workers: true, .. } => match self.latest_kernel_end(cq, launches, s, t) {
                    Some((w, e)) => {
                        push("wait WCW", "last worker done -> dispatcher counter".into(), Some(core), e, t);
                        (t, at) = (e, Some(w));
                    }
                    None => {
                        push("wait WCW", "no kernel ended during the wait".into(), Some(core), s, t);
                        t = s;
                    }
                },
                Seg::DispatchWait { workers: false, target } => {
                    // The WAIT watches for event `target` from another queue: that
                    // queue's dispatcher wrote it (its event record may come a
                    // little after the write that released this wait).
                    let ev = self.events.iter().rev().find(|e| e.0 == target && e.2 != core).copied();
                    match ev.filter(|e| e.1 > s) {
                        Some((_, c, d)) => {
                            let c = c.min(t);
                            push(
                                "wait PWW",
                                format!(
                                    "event {target} from {}",
                                    cqlab_workloads::analysis::Analysis::role(&self.chip, d)
                                ),
                                Some(core),
                                c,
                                t,
                            );
                            (t, at) = (c, Some(d));
                        }
                        None => {
                            push("wait PWW", "no other queue's event during the wait".into(), Some(core), s, t);
                            t = s;
                        }
                    }
                }
                Seg::PrefetchBusy => {
                    push("relay", "running the chunk's commands".into(), Some(core), s, t);
                    t = s;
                }
                Seg::PrefetchStall => {
                    // Released by the dispatcher's WAIT (NOTIFY_PREFETCH) as it finishes.
                    let wait = DispatchCmdId::Wait as u8;
                    let release = self.latest_end(self.chip.dispatcher(cq), s, t, |x| {
                        matches!(x, Seg::DispatchWait { .. }) || x == Seg::DispatchCmd { id: wait }
                    });
                    match release {
                        Some(r) => {
                            push("wait PSW", "dispatcher's WAIT released the stall".into(), Some(core), r, t);
                            (t, at) = (r, Some(self.chip.dispatcher(cq)));
                        }
                        // Released by a command with no WAIT records of its own:
                        // the stall lasted while the dispatcher worked up to it.
                        None => at = Some(self.chip.dispatcher(cq)),
                    }
                }
                Seg::PrefetchFetch | Seg::PrefetchIdle => {
                    let (phase, what) = if seg == Seg::PrefetchFetch {
                        ("fetch (PCIe)", "doorbell wait and chunk read")
                    } else {
                        ("wait HQW", "prefetcher idle, no fetch-queue entry yet")
                    };
                    if enqueued > s {
                        // The host was still enqueuing when the prefetcher became ready.
                        let h = enqueued.min(t);
                        push(phase, what.into(), Some(core), h, t);
                        (t, at) = (h, None);
                    } else {
                        push(phase, what.into(), Some(core), s, t);
                        t = s;
                    }
                }
            }
        }
        steps.reverse();
        steps
    }
}

/// Consecutive steps with the same phase and core (of `chip`) merged, as
/// JSON: each step's `core` as `{"x", "y"}` (null for the host) beside its
/// `role` on the chip (`"host"` for the host).
pub fn to_json(chip: &Topology, steps: &[Step]) -> Value {
    let role = |c: Coord| cqlab_workloads::analysis::Analysis::role(chip, c);
    let mut out: Vec<(String, String, Option<Coord>, u64, u64)> = Vec::new();
    for s in steps {
        match out.last_mut() {
            Some(l) if l.0 == s.phase && l.2 == s.core && l.4 == s.from => {
                l.4 = s.to;
                if !l.1.contains(&s.detail) {
                    l.1 = format!("{}; {}", l.1, s.detail);
                }
            }
            _ => out.push((s.phase.clone(), s.detail.clone(), s.core, s.from, s.to)),
        }
    }
    Value::Array(
        out.into_iter()
            .map(|(phase, detail, core, from, to)| {
                json!({"phase": phase, "detail": detail, "core": core, "role": core.map_or("host".into(), role),
                       "from": from, "to": to, "cycles": to - from})
            })
            .collect(),
    )
}
