//! Hang dumps: what every core is doing when a wait gives up, and the chain
//! of who waits on whom, from the host down to the core everything waits on
//! (or the cycle, for a deadlock). Collected from the backend and the
//! chip alone, with the queues' pointers handed in.

use crate::backend::{read_struct, Backend};
pub use crate::dump::{
    CoreState, ErrorContext, ErrorReport, HangDump, HostPublished, HostSide, Limit, Link, QueuePointers, Role, SubCore,
    TraceLine, Wait,
};
use crate::error::Result;
use crate::geometry::{CoreId, Topology};
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::completion;
use cqlab_abi::dispatch::DispatchCmdId;
use cqlab_abi::fetch_queue::{self, FetchEntry};
use cqlab_abi::mailbox::{
    self, CqConfig, DeviceError, ErrorRecord, ALIVE_MAGIC, CQ_CONFIG, ERROR, ERROR_MAGIC, LAST_EVENT, SUB_WAYPOINT,
    WAYPOINT,
};
use cqlab_abi::memory_map::MAX_CHUNK;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::semaphore::{self, WORKERS_DONE};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{self, Waypoint};

/// Trace records kept per core in a dump.
const LAST_RECORDS: u32 = 8;

impl HangDump {
    /// Reads every tile of `chip` that runs firmware, and the queues'
    /// pointers from `queues`, beside what the host had published (`host`);
    /// the chain starts at the queue `waited_for` names.
    pub fn collect(
        backend: &mut dyn Backend,
        chip: &Topology,
        queues: impl FnOnce(&mut dyn Backend) -> Result<Vec<QueuePointers>>,
        host: Vec<HostPublished>,
        waited_for: Wait,
    ) -> Result<Self> {
        let device_cycle = backend.poll()?;
        let queues = queues(backend)?;
        let cores = chip.all_cores().map(|c| core_state(backend, chip, c)).collect::<Result<Vec<_>>>()?;
        let mut dump = Self { waited_for, device_cycle, queues, host, cores, chain: Vec::new(), deadlock: false };
        (dump.chain, dump.deadlock) = dump.chain_for(chip, &dump.waited_for);
        Ok(dump)
    }

    /// The wait-for chain from queue `cq` over this dump's cores (a live
    /// dump follows every queue, not only the one a host waited on).
    pub fn chain_from(&self, chip: &Topology, cq: u8) -> (Vec<Link>, bool) {
        self.chain_for(chip, &Wait::Live { cq })
    }

    fn chain_for(&self, chip: &Topology, waited_for: &Wait) -> (Vec<Link>, bool) {
        chain(chip, &self.cores, &|cq, prefetcher| self.host_side(cq, prefetcher), waited_for)
    }

    /// What queue `cq`'s prefetcher (or dispatcher) waits for from the
    /// host, with what the host had published there.
    fn host_side(&self, cq: u8, prefetcher: bool) -> Option<HostSide> {
        let q = self.queues.iter().find(|q| q.cq == cq)?;
        let host = self.host.iter().find(|h| h.cq == cq);
        Some(if prefetcher {
            HostSide::FetchEntry { cq, consumed: q.fetch_consumed, rung: host.map(|h| h.fetch_rung) }
        } else {
            HostSide::CompletionRoom {
                cq,
                wr: q.completion_wr,
                published: host.map_or(q.completion_rd, |h| h.completion_rd_published),
                consumed: host.map(|h| h.completion_rd_consumed),
            }
        })
    }
}

/// What tile `c` is for.
fn role(chip: &Topology, c: Coord) -> Role {
    chip.role(c).unwrap_or_else(|| unreachable!("{c} runs no firmware"))
}

fn core_state(backend: &mut dyn Backend, chip: &Topology, c: Coord) -> Result<CoreState> {
    let at = |a: u32| NocAddr::unicast(c, a as u64);
    let wp = Waypoint(backend.read_u32(at(WAYPOINT))?);
    let mut semaphores = [0; 4];
    for (i, s) in semaphores.iter_mut().enumerate() {
        *s = backend.read_u32(at(semaphore::addr(i as u32)))?;
    }
    let err: ErrorRecord = read_struct(backend, at(ERROR))?;
    let role = role(chip, c);
    let error = if err.magic == ERROR_MAGIC {
        // What the record's address and pointers mean depends on the
        // core's role and queue configuration.
        let config: Option<CqConfig> = match role {
            Role::Prefetcher { .. } | Role::Dispatcher { .. } => Some(read_struct(backend, at(CQ_CONFIG))?),
            Role::Worker { .. } => None,
        };
        Some(error_report(&err, role, config.as_ref()))
    } else {
        None
    };
    let mut last_trace = Vec::new();
    let mut wait_target = None;
    let mut kernel_start = None;
    for r in crate::trace_reader::read_tail(backend, c, LAST_RECORDS)?.records {
        match TraceKind::from_u16(r.kind) {
            Some(TraceKind::WaitTarget) => wait_target = Some((r.arg0, r.arg1)),
            Some(TraceKind::KernelStart) => kernel_start = Some(r.cycle),
            Some(TraceKind::KernelEnd) => kernel_start = None,
            _ => {}
        }
        last_trace.push(TraceLine { seq: r.seq, cycle: r.cycle, kind: r.kind, arg0: r.arg0, arg1: r.arg1 });
    }
    let debug = |backend: &mut dyn Backend, p: Processor| match backend.introspect() {
        Some(i) => i.core_debug(CoreId { tile: c, processor: p }),
        None => Ok(None),
    };
    let mut subordinates = Vec::new();
    if matches!(role, Role::Worker { .. }) {
        for &p in &Processor::ALL[1..] {
            let waypoint = Waypoint(backend.read_u32(at(mailbox::subordinate(p.index()) + SUB_WAYPOINT))?);
            let alive = backend.read_u32(at(mailbox::subordinate(p.index())))? == ALIVE_MAGIC;
            let d = debug(backend, p)?;
            subordinates.push(SubCore {
                processor: p,
                waypoint,
                alive,
                pc: d.as_ref().map(|d| d.pc),
                halt: d.and_then(|d| d.halt),
            });
        }
    }
    let brisc = debug(backend, Processor::Brisc)?;
    Ok(CoreState {
        core: c,
        role,
        waypoint: wp,
        pc: brisc.as_ref().map(|d| d.pc),
        halt: brisc.and_then(|d| d.halt),
        subordinates,
        semaphores,
        error,
        last_trace,
        wait_target,
        kernel_start,
    })
}

/// The error record `err` of a core of role `role` (with its queue
/// configuration, on a CQ core), with what the host can tell of where it
/// points and which limit it broke.
fn error_report(err: &ErrorRecord, role: Role, config: Option<&CqConfig>) -> ErrorReport {
    let bytes = err.bytes[..(err.nbytes as usize).min(err.bytes.len())].to_vec();
    let code = DeviceError::from_u32(err.code);
    let context = match role {
        // The prefetcher's record of a bad fetch entry: the slot's address,
        // the raw entry, its fetch count (`prefetch.rs` `checked_len`).
        Role::Prefetcher { cq } => fetch_queue::slot_of(err.addr).map(|slot| {
            let over = (code == Some(DeviceError::TooLarge)).then(|| {
                let asked = FetchEntry::raw_bytes(err.value);
                let issue = config.map_or(u64::MAX, |c| c.issue_size as u64);
                // The firmware refuses a chunk past either buffer: the
                // smaller one it exceeds is the one to name.
                let (limit_of, limit) = if asked > MAX_CHUNK as u64 && MAX_CHUNK as u64 <= issue {
                    ("chunk buffer", MAX_CHUNK as u64)
                } else {
                    ("issue queue", issue)
                };
                Limit { asked_for: "chunk", asked, limit_of, limit }
            });
            ErrorContext::FetchSlot { cq, slot, fetched: err.rd_ptr, over }
        }),
        // The dispatcher's record points at the command's header.
        Role::Dispatcher { cq } => bytes.first().and_then(|&id| DispatchCmdId::from_u8(id)).map(|id| {
            let over = match (code, id) {
                // `dispatch.rs` `write_packed`: the ring's bytes (or its
                // room past the page it is in) in the write pointer.
                (Some(DeviceError::TooLarge), DispatchCmdId::WritePacked) => Some(Limit {
                    asked_for: "packed block",
                    asked: err.value as u64,
                    limit_of: "dispatch ring room",
                    limit: err.wr_ptr as u64,
                }),
                // `write_host`: a record past the whole completion queue.
                (Some(DeviceError::TooLarge), DispatchCmdId::WriteHost) => config.map(|c| Limit {
                    asked_for: "completion record",
                    asked: completion::record_size(err.value) as u64,
                    limit_of: "completion queue",
                    limit: c.completion_size as u64,
                }),
                _ => None,
            };
            ErrorContext::Command { cq, command: id.name(), over }
        }),
        Role::Worker { .. } => None,
    };
    ErrorReport {
        code: err.code,
        value: err.value,
        addr: err.addr,
        bytes,
        rd_ptr: err.rd_ptr,
        wr_ptr: err.wr_ptr,
        context: context.map(Box::new),
    }
}

/// Follows waypoints from the queue the host waited on, down to the root;
/// `host_side(cq, is_prefetcher)` says what a CQ core waiting on the host
/// waits for.
fn chain(
    chip: &Topology,
    cores: &[CoreState],
    host_side: &dyn Fn(u8, bool) -> Option<HostSide>,
    waited_for: &Wait,
) -> (Vec<Link>, bool) {
    let find = |c: Coord| cores.iter().find(|s| s.core == c);
    let mut chain = vec![Link::Host(waited_for.clone())];
    if let Wait::Alive { core, .. } = *waited_for {
        // A boot: the core whose alive record is awaited, and on a worker
        // tile whose BRISC waits for its subordinates (SUBA), the first
        // that has not announced itself: the one everything waits on.
        if let Some(s) = find(core) {
            chain.push(Link::Core { core, on_event_of: None });
            if s.waypoint == waypoint::SUBA && !s.halted() {
                if let Some(sub) = s.subordinates.iter().find(|sub| !sub.alive) {
                    chain.push(Link::Subordinate { core, processor: sub.processor });
                }
            }
        }
        return (chain, false);
    }
    let Some(q) = waited_for.cq().filter(|&q| q < chip.num_cqs()) else { return (chain, false) };
    // A prefetcher waiting for the host has run all it was given: what the
    // host waits for is downstream of it, unless the dispatcher has run
    // out of work too.
    let (prefetcher, dispatcher) = (chip.prefetcher(q), chip.dispatcher(q));
    let start = match (find(prefetcher), find(dispatcher)) {
        (Some(p), Some(d)) if p.waypoint == waypoint::HQW && !p.halted() && d.waypoint != waypoint::UAPW => dispatcher,
        _ => prefetcher,
    };
    let mut next = Some(start);
    let mut seen = Vec::new();
    while let Some(c) = next.take() {
        let Some(s) = find(c) else { break };
        chain.push(Link::Core { core: c, on_event_of: None });
        if seen.contains(&c) {
            return (chain, true);
        }
        seen.push(c);
        if s.halted() {
            // A halted core waits on nobody: it is the root.
            break;
        }
        let Some((cq_of, is_prefetcher)) = chip.cq_role(c) else { break };
        next = match s.waypoint {
            w if w == waypoint::PSW || w == waypoint::DAPW => Some(chip.dispatcher(cq_of)),
            w if w == waypoint::UAPW => Some(chip.prefetcher(cq_of)),
            w if w == waypoint::HQW || w == waypoint::QRBW => {
                chain.push(Link::HostLoop(host_side(cq_of, is_prefetcher)));
                // Back at the host: a cycle when the host waits on the
                // device, not in a live dump (the host waits on nothing;
                // an idle queue's prefetcher always waits for the host).
                return (chain, !matches!(waited_for, Wait::Live { .. }));
            }
            w if w == waypoint::PWW && !is_prefetcher => match s.wait_target {
                Some((_, addr)) if (LAST_EVENT..LAST_EVENT + 4 * chip.num_cqs() as u32).contains(&addr) => {
                    let other = ((addr - LAST_EVENT) / 4) as u8;
                    chain.pop();
                    chain.push(Link::Core { core: c, on_event_of: Some(other) });
                    Some(chip.dispatcher(other))
                }
                _ => None,
            },
            w if w == waypoint::WCW => {
                let workers = || cores.iter().filter(|w| matches!(w.role, Role::Worker { .. }));
                // The root among the workers: one that halted, else the
                // kernel running longest (the one a kernel timeout names:
                // `wait::running_kernel` takes the earliest started; a
                // kernel whose start record is gone counts as latest).
                let halted = workers().find(|w| w.halted());
                let running = workers().filter(|w| w.running()).min_by_key(|w| w.kernel_start.unwrap_or(u64::MAX));
                match halted.or(running) {
                    Some(w) => chain.push(Link::Core { core: w.core, on_event_of: None }),
                    None => chain
                        .push(Link::ShortCount { semaphore: WORKERS_DONE, value: s.semaphores[WORKERS_DONE as usize] }),
                }
                None
            }
            _ => None,
        };
    }
    (chain, false)
}
