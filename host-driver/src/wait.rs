//! The one place the host waits for the device: progress-aware, with a
//! hang dump when it gives up, reporting how far it has got at each
//! progress check (`DeviceConfig::wait_progress`). A wait takes the backend, the configuration,
//! the chip and the queues (which it drains while it waits), never the
//! whole device.

use crate::backend::Backend;
use crate::config::DeviceConfig;
use crate::dump::{HangDump, HostPublished, QueuePointers, Wait};
use crate::error::{DeviceFault, DriverError, Result};
use crate::geometry::{CoreId, Topology};
use crate::wait_progress::{WaitLimit, WaitProgress};
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::mailbox::{self, ErrorRecord, ERROR, ERROR_MAGIC, SUB_WAYPOINT, WAYPOINT};
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::trace::{TraceKind, TraceRingHeader};
use cqlab_abi::waypoint::{self, Waypoint};

/// Device cycles between progress checks while waiting: the resolution of
/// the stall and kernel timeouts.
pub const PROGRESS_CHECK_CYCLES: u64 = 1_000_000;

/// Stall timeouts the CQ cores may go on recording while no queue advances
/// before a wait gives up on them as a livelock: a loop that records as it
/// goes, which the stall timeout alone counts as progress for ever
/// (helper-25: one flipped bit made a dispatcher run the same WAIT again and
/// again). Long: a chain of DELAYs or a replay with no kernel in it is
/// legal, and advances no pointer the host sees either.
pub const LIVELOCK_STALLS: u64 = 10;

/// What a wait needs of the queues besides its condition.
pub(crate) trait Waiting {
    /// One host poll went by (the queues count them to drain lazily).
    fn polled(&mut self);
    /// A progress check: the next drain happens whatever the count, so a
    /// late-draining host never looks like a hang.
    fn checked(&mut self);
    /// Every queue's pointers now, for a dump.
    fn pointers(&mut self, backend: &mut dyn Backend, cfg: &DeviceConfig) -> Result<Vec<QueuePointers>>;
    /// What the host had last published on each queue (none where the host
    /// is another process).
    fn host(&self) -> Vec<HostPublished>;
    /// The pointers the device writes to sysmem for each queue (issue and
    /// fetch read, completion write): what moves when a queue advances.
    /// Host memory only: no BAR read, so no device time on a simulator.
    fn advanced_to(&mut self, backend: &mut dyn Backend) -> Result<Vec<u32>>;
}

/// A dump of the device now, with the queues' pointers.
pub(crate) fn dump<Q: Waiting + ?Sized>(
    backend: &mut dyn Backend,
    cfg: &DeviceConfig,
    chip: &Topology,
    queues: &mut Q,
    wait: Wait,
) -> Result<Box<HangDump>> {
    let host = queues.host();
    Ok(Box::new(HangDump::collect(backend, chip, |b| queues.pointers(b, cfg), host, wait)?))
}

/// Polls `ready` until it holds. Gives up after `stall_timeout_cycles`
/// device cycles in which no core recorded any trace event and no kernel
/// ran, with an error naming `what` and carrying a hang dump. While a
/// worker runs its kernel the wait goes on until that kernel has run
/// `kernel_timeout_cycles` (if not 0). Gives up too after
/// [`LIVELOCK_STALLS`] stall timeouts in which only the CQ cores recorded:
/// no queue pointer in sysmem moved, no worker recorded, no kernel ran.
pub(crate) fn until<Q: Waiting + ?Sized>(
    backend: &mut dyn Backend,
    cfg: &DeviceConfig,
    chip: &Topology,
    queues: &mut Q,
    what: impl Fn() -> Wait,
    mut ready: impl FnMut(&mut dyn Backend, &mut Q) -> Result<bool>,
) -> Result<()> {
    // Fast path: no device time passes and no BAR reads happen when the
    // condition already holds (the common case on enqueue).
    if ready(backend, queues)? {
        return Ok(());
    }
    // Progress is read through the BAR (slow on hardware): only at checks.
    let mut last_progress: Option<Activity> = None;
    let mut last_change = backend.now();
    let livelock_limit = cfg.stall_timeout_cycles.saturating_mul(LIVELOCK_STALLS);
    let mut advance = Advance { at: last_change, position: Vec::new(), queue_cores: Vec::new() };
    let mut next_check = last_change + PROGRESS_CHECK_CYCLES;
    let mut first_running: Vec<(Coord, u64)> = Vec::new();
    // How long the kernel on `core` started at `started` (as its record
    // says) has run: one without its KernelStart record (still booting, or
    // the record overwritten) counts from when this wait first saw it, so
    // the kernel limit bounds it.
    let mut ran = |(core, started): (Coord, u64), now: u64| {
        let first = match first_running.iter().find(|(c, _)| *c == core) {
            Some(&(_, at)) => at,
            None => {
                first_running.push((core, now));
                now
            }
        };
        now.saturating_sub(if started >= now { first } else { started })
    };
    let kernel_limit = cfg.kernel_timeout();
    let began = last_change;
    // The kernel the last check found running, and how long it had run:
    // what a progress report names.
    let mut kernel_seen: Option<(Coord, u64)> = None;
    loop {
        if ready(backend, queues)? {
            return Ok(());
        }
        let now = backend.poll()?;
        queues.polled();
        if now >= next_check {
            if let Some(sink) = &cfg.wait_progress {
                // How far the wait got by the last check, before this one's
                // reads (which take device time on a simulator).
                let limit = match kernel_seen {
                    Some((core, ran)) => WaitLimit::Kernel { core, ran, limit: kernel_limit },
                    None => WaitLimit::Stall { stalled: now - last_change, limit: cfg.stall_timeout_cycles },
                };
                sink.report(&WaitProgress { wait: what(), device_cycle: now, waited_cycles: now - began, limit });
            }
            next_check = now + PROGRESS_CHECK_CYCLES;
            queues.checked();
            check_halted(backend, cfg, chip, queues, &what)?;
            let activity = progress(backend, chip)?;
            let position = queues.advanced_to(backend)?;
            let workers_recorded = last_progress.as_ref().is_none_or(|p| p.workers != activity.workers);
            if workers_recorded || position != advance.position {
                advance = Advance { at: now, position, queue_cores: activity.queue_cores.clone() };
            }
            if last_progress.as_ref() != Some(&activity) {
                kernel_seen = None;
                last_change = now;
                // Only the CQ cores recorded since `advance.at`. A kernel
                // behind them still meets its own limit (helper-32: one
                // stuck while a CQ core looped waited for ever); with none
                // running, ten stall timeouts of this are a livelock. The
                // kernel is looked for only then: no BAR reads, so no
                // device time, while the queues advance.
                let stalled = now - advance.at;
                if stalled >= livelock_limit || (kernel_limit != 0 && stalled >= kernel_limit) {
                    match running_kernel(backend, chip)? {
                        Some(running) => {
                            let cycles = ran(running, now);
                            if kernel_limit != 0 && cycles >= kernel_limit {
                                return Err(kernel_timeout(backend, cfg, chip, queues, &what, running.0, cycles, now)?);
                            }
                        }
                        None if stalled >= livelock_limit => {
                            let (core, records) = advance.recorded_since(chip, &activity);
                            let dump = dump(backend, cfg, chip, queues, what())?;
                            let wait = what();
                            return Err(DriverError::Livelock { wait, core, cycles: stalled, records, dump });
                        }
                        None => {}
                    }
                }
                last_progress = Some(activity);
                continue;
            }
            // No core recorded anything since `last_change`. A kernel
            // still running is not a hang: it has its own limit.
            kernel_seen = None;
            if let Some(running) = running_kernel(backend, chip)? {
                let cycles = ran(running, now);
                if kernel_limit != 0 && cycles >= kernel_limit {
                    return Err(kernel_timeout(backend, cfg, chip, queues, &what, running.0, cycles, now)?);
                }
                kernel_seen = Some((running.0, cycles));
                last_change = now;
                advance =
                    Advance { at: now, position: queues.advanced_to(backend)?, queue_cores: activity.queue_cores };
            } else if now - last_change >= cfg.stall_timeout_cycles {
                let dump = dump(backend, cfg, chip, queues, what())?;
                return Err(DriverError::Timeout { wait: what(), cycles: now - last_change, dump });
            }
        }
    }
}

/// The kernel on `core` had run `cycles` at device cycle `now`, past its
/// limit: the error, with a hang dump. The cycles are told as of the dump,
/// which the BAR reads of finding the kernel left later (helper-67: the
/// error said 2,998,727 where the dump beside it showed 3,320,159).
#[allow(clippy::too_many_arguments)]
fn kernel_timeout<Q: Waiting + ?Sized>(
    backend: &mut dyn Backend,
    cfg: &DeviceConfig,
    chip: &Topology,
    queues: &mut Q,
    what: &impl Fn() -> Wait,
    core: Coord,
    cycles: u64,
    now: u64,
) -> Result<DriverError> {
    let mut dump = dump(backend, cfg, chip, queues, what())?;
    dump.end_at_running(core);
    let cycles = cycles + dump.device_cycle.saturating_sub(now);
    Ok(DriverError::KernelTimeout { core, cycles, limit: cfg.kernel_timeout(), wait: what(), dump })
}

/// A core the wait depends on that has stopped for good.
enum HaltedCore {
    /// A CQ core on a bad command (`!CMD`) or a panic, by its waypoint.
    Queue(Coord, Waypoint),
    /// A core of a tile whose alive record is awaited (where the backend
    /// can tell: a simulator).
    Booting(Coord, Processor, String),
    /// Any other core of the chip (a worker's kernel that crashed, a CQ
    /// core on an access the chip refused), where the backend can tell.
    Crashed(Coord, Processor, String),
}

/// The first core the wait `what` depends on that has halted, if any.
fn halted_core(backend: &mut dyn Backend, chip: &Topology, what: &Wait) -> Result<Option<HaltedCore>> {
    for core in chip.cq_cores() {
        let wp = Waypoint(backend.read_u32(NocAddr::unicast(core, WAYPOINT as u64))?);
        if wp == waypoint::BAD_CMD || wp == waypoint::PANIC {
            return Ok(Some(HaltedCore::Queue(core, wp)));
        }
    }
    let Some(i) = backend.introspect() else { return Ok(None) };
    // A core still held shows the halt of a run before it was held.
    let mut halt = |tile: Coord, processor| -> Result<Option<String>> {
        Ok(i.core_debug(CoreId { tile, processor })?.filter(|d| !d.in_reset).and_then(|d| d.halt))
    };
    // No core halts while the queues run: one that did crashed, and what
    // waits on it would wait out the stall timeout (helper-25: a kernel's
    // illegal instruction read as a hang after 200 M cycles).
    let booting = matches!(what, Wait::Alive { .. });
    for tile in chip.all_cores() {
        for processor in Processor::ALL {
            if let Some(reason) = halt(tile, processor)? {
                // While the chip boots, another tile's halt is a boot's too.
                return Ok(Some(if booting {
                    HaltedCore::Booting(tile, processor, reason)
                } else {
                    HaltedCore::Crashed(tile, processor, reason)
                }));
            }
        }
    }
    Ok(None)
}

/// Fails at once, with a hang dump, when a core the wait depends on has
/// halted ([`halted_core`]), rather than waiting out the stall timeout for
/// what cannot come.
fn check_halted<Q: Waiting + ?Sized>(
    backend: &mut dyn Backend,
    cfg: &DeviceConfig,
    chip: &Topology,
    queues: &mut Q,
    what: &impl Fn() -> Wait,
) -> Result<()> {
    let Some(halted) = halted_core(backend, chip, &what())? else { return Ok(()) };
    let dump = dump(backend, cfg, chip, queues, what())?;
    let (core, fault) = match halted {
        HaltedCore::Queue(core, wp) => match dump.core(core).and_then(|c| c.error.clone()) {
            Some(report) => (core, DeviceFault::BadCommand(report)),
            None => (core, DeviceFault::Halted { waypoint: wp, wait: what() }),
        },
        HaltedCore::Booting(tile, processor, reason) => (tile, DeviceFault::BootHalted { processor, reason }),
        // A worker that wrote an error record before it halted says why.
        HaltedCore::Crashed(tile, processor, reason) => match dump.core(tile).and_then(|c| c.error.clone()) {
            Some(report) => (tile, DeviceFault::BadCommand(report)),
            None => (tile, DeviceFault::Crashed { processor, reason }),
        },
    };
    Err(DriverError::Device { core, fault, dump })
}

/// Whether a core of worker tile `w` runs a kernel: BRISC at RUN, or
/// BRISC waiting for its subordinates (SUBW) while one of them is at RUN.
fn kernel_running(backend: &mut dyn Backend, w: Coord) -> Result<bool> {
    let wp = |backend: &mut dyn Backend, a: u32| -> Result<Waypoint> {
        Ok(Waypoint(backend.read_u32(NocAddr::unicast(w, a as u64))?))
    };
    match wp(backend, WAYPOINT)? {
        x if x == waypoint::RUN => Ok(true),
        x if x == waypoint::SUBW => {
            for p in &Processor::ALL[1..] {
                if wp(backend, mailbox::subordinate(p.index()) + SUB_WAYPOINT)? == waypoint::RUN {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// A worker tile running a kernel (`kernel_running`, no core halted, no
/// error record) and the cycle its kernels started (BRISC's last
/// `KernelStart` trace record), the earliest-started first.
fn running_kernel(backend: &mut dyn Backend, chip: &Topology) -> Result<Option<(Coord, u64)>> {
    let mut found: Option<(Coord, u64)> = None;
    for w in chip.workers() {
        let at = |a: u32| NocAddr::unicast(w, a as u64);
        if !kernel_running(backend, w)? {
            continue;
        }
        let halted = match backend.introspect() {
            Some(i) => {
                let mut any = false;
                for p in Processor::ALL {
                    any |= i.core_debug(CoreId { tile: w, processor: p })?.is_some_and(|d| d.halt.is_some());
                }
                any
            }
            None => false,
        };
        if halted || backend.read_u32(at(ERROR + std::mem::offset_of!(ErrorRecord, magic) as u32))? == ERROR_MAGIC {
            continue;
        }
        let started = crate::trace_reader::read_tail(backend, w, 4)?
            .records
            .iter()
            .rev()
            .find(|r| TraceKind::from_u16(r.kind) == Some(TraceKind::KernelStart))
            .map_or(backend.now(), |r| r.cycle);
        if found.is_none_or(|(_, s)| started < s) {
            found = Some((w, started));
        }
    }
    Ok(found)
}

/// Trace sequence numbers: they move whenever a core does something worth
/// recording.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Activity {
    /// Of each prefetcher and dispatcher, in `Topology::cq_cores` order.
    queue_cores: Vec<u32>,
    /// Summed over the workers: a kernel launched or ran, the queues' purpose.
    workers: u64,
}

fn progress(backend: &mut dyn Backend, chip: &Topology) -> Result<Activity> {
    let next_seq = TRACE_RING.base as u64 + std::mem::offset_of!(TraceRingHeader, next_seq) as u64;
    let mut seq = |core| backend.read_u32(NocAddr::unicast(core, next_seq));
    let queue_cores = chip.cq_cores().map(&mut seq).collect::<Result<Vec<u32>>>()?;
    let mut workers = 0;
    for core in chip.workers() {
        workers += seq(core)? as u64;
    }
    Ok(Activity { queue_cores, workers })
}

/// The last progress check at which a queue advanced: a sysmem pointer
/// moved, a worker recorded or a kernel ran.
struct Advance {
    at: u64,
    /// The queues' pointers then (`Waiting::advanced_to`).
    position: Vec<u32>,
    /// The CQ cores' sequence numbers then.
    queue_cores: Vec<u32>,
}

impl Advance {
    /// The CQ core that recorded most since, and the records they all made.
    fn recorded_since(&self, chip: &Topology, now: &Activity) -> (Coord, u64) {
        let moved = |i: usize| now.queue_cores[i].wrapping_sub(self.queue_cores.get(i).copied().unwrap_or(0)) as u64;
        let busiest = (0..now.queue_cores.len()).max_by_key(|&i| moved(i)).unwrap_or(0);
        let core = chip.cq_cores().nth(busiest).expect("a CQ core per sequence number");
        (core, (0..now.queue_cores.len()).map(moved).sum())
    }
}
