//! Hang dumps: what every core is doing when a wait gives up, and the chain
//! of who waits on whom, from the host down to the core everything waits on
//! (or the cycle, for a deadlock).

use crate::backend::read_struct;
use crate::command_queue::QueuePointers;
use crate::device::Device;
use crate::error::Result;
use cqlab_abi::mailbox::{DeviceError, ErrorRecord, ERROR, ERROR_MAGIC, LAST_EVENT, WAYPOINT};
use cqlab_abi::mmio::{self, sem, MMIO_BASE};
use cqlab_abi::noc::{self, Coord, Endpoint, NocAddr};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{self, Waypoint};
use std::fmt;

/// Trace records kept per core in a dump.
const LAST_RECORDS: u32 = 8;

#[derive(Clone, Debug, serde::Serialize)]
pub struct TraceLine {
    pub seq: u32,
    pub cycle: u64,
    pub kind: String,
    pub arg0: u32,
    pub arg1: u32,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct CoreState {
    pub core: String,
    pub role: String,
    pub waypoint: String,
    pub meaning: String,
    pub pc: Option<u32>,
    pub halt: Option<String>,
    pub semaphores: [u32; 4],
    pub error: Option<String>,
    pub last_trace: Vec<TraceLine>,
    #[serde(skip)]
    coord: Coord,
    #[serde(skip)]
    wp: Waypoint,
    /// Last wait target (flags, address) from the trace, for the chain.
    #[serde(skip)]
    wait_target: Option<(u32, u32)>,
    /// Cycle of the last `KernelStart` record in the tail, for the chain.
    #[serde(skip)]
    kernel_start: Option<u64>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct HangDump {
    pub waited_for: String,
    pub device_cycle: u64,
    pub queues: Vec<QueuePointers>,
    pub cores: Vec<CoreState>,
    /// Host first, then each core waited on.
    pub chain: Vec<String>,
    pub deadlock: bool,
}

fn role(c: Coord) -> String {
    match noc::endpoint(c) {
        Endpoint::Prefetcher { cq } => format!("CQ{cq} prefetcher"),
        Endpoint::Dispatcher { cq } => format!("CQ{cq} dispatcher"),
        Endpoint::Worker { col, row } => format!("worker ({col},{row})"),
        other => format!("{other:?}"),
    }
}

impl HangDump {
    /// `cq` is the queue the host waited on, where the wait-for chain starts.
    pub fn collect(dev: &mut Device, waited_for: &str, cq: Option<u8>) -> Result<Self> {
        let device_cycle = dev.backend.poll()?;
        let queues = (0..dev.cfg.num_cqs).map(|q| dev.queue_pointers(q)).collect();
        let coords: Vec<Coord> = dev.all_cores().collect();
        let mut cores = Vec::new();
        for c in coords {
            cores.push(core_state(dev, c)?);
        }
        let (chain, deadlock) = chain(&cores, waited_for, cq, device_cycle);
        Ok(Self { waited_for: waited_for.to_owned(), device_cycle, queues, cores, chain, deadlock })
    }
}

impl HangDump {
    /// The wait-for chain from queue `cq` over this dump's cores (a live
    /// dump follows every queue, not only the one a host waited on).
    pub fn chain_from(&self, cq: u8) -> (Vec<String>, bool) {
        chain(&self.cores, &format!("work on CQ{cq}"), Some(cq), self.device_cycle)
    }
}

fn core_state(dev: &mut Device, c: Coord) -> Result<CoreState> {
    let at = |a: u32| NocAddr::unicast(c, a as u64);
    let wp = Waypoint(dev.backend.read_u32(at(WAYPOINT))?);
    let mut semaphores = [0; 4];
    for (i, s) in semaphores.iter_mut().enumerate() {
        *s = dev.backend.read_u32(at(MMIO_BASE + mmio::semaphore(i as u32)))?;
    }
    let err: ErrorRecord = read_struct(&mut *dev.backend, at(ERROR))?;
    let error = (err.magic == ERROR_MAGIC).then(|| {
        let what = DeviceError::from_u32(err.code).map_or("unknown error", DeviceError::describe);
        let n = (err.nbytes as usize).min(err.bytes.len());
        let bytes: Vec<String> = err.bytes[..n].iter().map(|b| format!("{b:02x}")).collect();
        format!("{what}: value {:#x} at L1 {:#x}; bytes {}", err.value, err.addr, bytes.join(" "))
    });
    let mut last_trace = Vec::new();
    let mut wait_target = None;
    let mut kernel_start = None;
    for r in dev.read_trace_tail(c, LAST_RECORDS)?.records {
        let kind = TraceKind::from_u16(r.kind);
        match kind {
            Some(TraceKind::WaitTarget) => wait_target = Some((r.arg0, r.arg1)),
            Some(TraceKind::KernelStart) => kernel_start = Some(r.cycle),
            Some(TraceKind::KernelEnd) => kernel_start = None,
            _ => {}
        }
        let kind = kind.map_or_else(|| format!("kind{}", r.kind), |k| k.label().to_owned());
        last_trace.push(TraceLine { seq: r.seq, cycle: r.cycle, kind, arg0: r.arg0, arg1: r.arg1 });
    }
    let debug = dev.backend.core_debug(c);
    Ok(CoreState {
        core: c.to_string(),
        role: role(c),
        waypoint: wp.to_string(),
        meaning: wp.describe().unwrap_or("unknown waypoint").to_owned(),
        pc: debug.as_ref().map(|d| d.pc),
        halt: debug.and_then(|d| d.halt),
        semaphores,
        error,
        last_trace,
        coord: c,
        wp,
        wait_target,
        kernel_start,
    })
}

/// One link of the chain: a core as the root cause would be described. A
/// halted core shows its error record or halt reason, a running kernel its
/// cycles, a waiting core its waypoint.
fn link(s: &CoreState, now: u64) -> String {
    let pc = s.pc.map(|pc| format!(" pc={pc:#x}")).unwrap_or_default();
    let mut l = format!("{} {} {}", s.role, s.core, s.waypoint);
    if s.error.is_some() || s.halt.is_some() {
        l.push_str(" HALTED");
        if let Some(e) = &s.error {
            l.push_str(&format!(": {e}"));
        }
        if let Some(h) = &s.halt {
            l.push_str(&format!(" ({h})"));
        }
    } else if s.wp == waypoint::RUN {
        match s.kernel_start {
            Some(start) => l.push_str(&format!(
                " (running its kernel for {} cycles, since cycle {start})",
                now.saturating_sub(start)
            )),
            None => l.push_str(" (running its kernel)"),
        }
    } else {
        l.push_str(&format!(" ({})", s.meaning));
    }
    l.push_str(&pc);
    l
}

/// Follows waypoints from the queue the host waited on, down to the root.
fn chain(cores: &[CoreState], waited_for: &str, cq: Option<u8>, now: u64) -> (Vec<String>, bool) {
    let find = |c: Coord| cores.iter().find(|s| s.coord == c);
    let mut chain = vec![format!("host waiting for {waited_for}")];
    let Some(q) = cq else { return (chain, false) };
    let mut next = Some(noc::prefetcher(q));
    let mut seen = Vec::new();
    while let Some(c) = next.take() {
        let Some(s) = find(c) else { break };
        chain.push(link(s, now));
        if seen.contains(&c) {
            return (chain, true);
        }
        seen.push(c);
        if s.error.is_some() || s.halt.is_some() {
            // A halted core waits on nobody: it is the root.
            break;
        }
        let (cq_of, is_prefetcher) = match noc::endpoint(c) {
            Endpoint::Prefetcher { cq } => (cq, true),
            Endpoint::Dispatcher { cq } => (cq, false),
            _ => break,
        };
        next = match s.wp {
            w if w == waypoint::PSW || w == waypoint::DAPW => Some(noc::dispatcher(cq_of)),
            w if w == waypoint::UAPW => Some(noc::prefetcher(cq_of)),
            w if w == waypoint::HQW || w == waypoint::QRBW => {
                chain.push("host (waits on the device while the device waits on the host)".into());
                return (chain, true);
            }
            w if w == waypoint::PWW && !is_prefetcher => match s.wait_target {
                Some((_, addr)) if (LAST_EVENT..LAST_EVENT + 4 * noc::MAX_CQS as u32).contains(&addr) => {
                    let other = ((addr - LAST_EVENT) / 4) as u8;
                    chain.last_mut().expect("pushed").push_str(&format!(" on an event of CQ{other}"));
                    Some(noc::dispatcher(other))
                }
                _ => None,
            },
            w if w == waypoint::WCW => {
                let workers = || cores.iter().filter(|w| matches!(noc::endpoint(w.coord), Endpoint::Worker { .. }));
                // The root among the workers: one that halted, else one
                // still running its kernel.
                let halted = workers().find(|w| w.error.is_some() || w.halt.is_some());
                let running = workers().find(|w| w.wp == waypoint::RUN);
                match halted.or(running) {
                    Some(w) => chain.push(link(w, now)),
                    None => chain.push(format!(
                        "no worker running: completion count short (semaphore {} = {})",
                        sem::WORKERS_DONE,
                        s.semaphores[sem::WORKERS_DONE as usize]
                    )),
                }
                None
            }
            _ => None,
        };
    }
    (chain, false)
}

impl fmt::Display for HangDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "hang dump at device cycle {} ({})", self.device_cycle, self.waited_for)?;
        writeln!(f, "wait-for chain{}:", if self.deadlock { " (DEADLOCK: cycle)" } else { "" })?;
        for (i, link) in self.chain.iter().enumerate() {
            writeln!(f, "  {}{link}", if i == 0 { "" } else { "-> " })?;
        }
        for q in &self.queues {
            writeln!(
                f,
                "CQ{}: issue wr {:#x} rd {:#x}; fetch issued {} consumed {}; completion rd {:#x} wr {:#x}; workers outstanding {}; last event {}",
                q.cq, q.issue_wr, q.issue_rd, q.fetch_issued, q.fetch_consumed, q.completion_rd, q.completion_wr,
                q.workers_outstanding, q.last_event_done
            )?;
        }
        for c in &self.cores {
            let boring = c.wp == waypoint::GOW && c.error.is_none();
            if boring {
                continue;
            }
            write!(f, "{:<16} {:<8} {:<5}", c.role, c.core, c.waypoint)?;
            if let Some(pc) = c.pc {
                write!(f, " pc={pc:#010x}")?;
            }
            write!(f, " sem={:?}", c.semaphores)?;
            if let Some(h) = &c.halt {
                write!(f, " halted: {h}")?;
            }
            writeln!(f)?;
            if let Some(e) = &c.error {
                writeln!(f, "    error: {e}")?;
            }
            for t in &c.last_trace {
                writeln!(f, "    #{:<6} @{:<10} {:<12} {:#x} {:#x}", t.seq, t.cycle, t.kind, t.arg0, t.arg1)?;
            }
        }
        let idle = self.cores.iter().filter(|c| c.wp == waypoint::GOW && c.error.is_none()).count();
        writeln!(f, "({idle} workers idle in GOW not shown)")
    }
}
