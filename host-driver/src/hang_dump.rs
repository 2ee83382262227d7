//! Hang dumps: what every core is doing when a wait gives up, and the chain
//! of who waits on whom, from the host down to the core everything waits on
//! (or the cycle, for a deadlock).

use crate::backend::read_struct;
use crate::device::Device;
pub use crate::dump::{CoreState, HangDump, QueuePointers, TraceLine};
use crate::error::Result;
use cqlab_abi::mailbox::{DeviceError, ErrorRecord, ERROR, ERROR_MAGIC, LAST_EVENT, WAYPOINT};
use cqlab_abi::mmio::{self, sem, MMIO_BASE};
use cqlab_abi::noc::{self, Coord, Endpoint, NocAddr};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{self, Waypoint};

/// Trace records kept per core in a dump.
const LAST_RECORDS: u32 = 8;

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
        let queues = (0..dev.cfg.num_cqs).map(|q| dev.queue_pointers(q)).collect::<Result<_>>()?;
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
    let debug = match dev.backend.introspect() {
        Some(i) => i.core_debug(c)?,
        None => None,
    };
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
