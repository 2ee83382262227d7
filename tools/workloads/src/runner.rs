//! Runs a named workload: boots a device shaped for it, runs warmup and
//! timed iterations, synchronises per iteration or at the end, drains the
//! trace rings as it goes and turns everything into a [`PointReport`].
//!
//! Latency of an iteration, in device cycles at the modelled clock:
//! - `--sync per-iter`: from the device time the host starts enqueuing the
//!   iteration to the device time it has seen every queue's end-of-iteration
//!   event complete (so it includes the host's completion polling);
//! - `--sync end`: iterations overlap, so an iteration's latency is the
//!   interval between its completion and the previous one's, both taken
//!   from the dispatchers' event trace records (its incremental cost).

use crate::analysis::{Analysis, SwitchOverhead, Tally};
use crate::collect::{RecordSink, TraceCollector};
pub use crate::ctx::{Ctx, LaunchInfo};
use crate::kinds::{self, Kind, Knobs, Validation, Work};
pub use crate::occupancy::OccupancySample;
use crate::stats::Summary;
use cqlab_abi::noc::Coord;
use cqlab_abi::trace::TraceRecord;
use cqlab_driver::error::{DriverError, Result};
use cqlab_driver::CoreRange;
use cqlab_driver::Device;
use cqlab_driver::DeviceConfig;
use cqlab_driver::Event;
use cqlab_driver::Topology;
use serde::{Deserialize, Serialize};

/// When the host waits for the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SyncMode {
    /// After every iteration.
    #[serde(rename = "per-iter")]
    PerIter,
    /// Once, after the last iteration.
    #[serde(rename = "end")]
    End,
}

impl SyncMode {
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "per-iter" => Some(Self::PerIter),
            "end" => Some(Self::End),
            _ => None,
        }
    }
}

/// One run at one queue count.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub kind: Kind,
    pub knobs: Knobs,
    /// Device spec (`embedded:seed=N`, `sim:PATH`); the seed is applied to
    /// embedded devices that do not name one.
    pub device: String,
    pub cqs: u8,
    pub iters: u32,
    pub warmup: u32,
    pub seed: u64,
    pub sync: SyncMode,
    pub skip_validation: bool,
    /// Overrides for the device (firmware dir, timeouts); `num_cqs` and
    /// `worker_kernel` are set from the spec.
    pub base_config: DeviceConfig,
}

/// Everything a run reports besides its summary: the raw material of a
/// trace file. All methods default to doing nothing.
pub trait Observer: RecordSink {
    /// The run starts on `chip`, whose cores `cores` are traced.
    fn started(&mut self, _chip: &Topology, _cores: &[Coord], _spec: &RunSpec) -> Result<()> {
        Ok(())
    }
    fn launch(&mut self, _l: &LaunchInfo) -> Result<()> {
        Ok(())
    }
    fn iteration(&mut self, _it: &IterationSample) -> Result<()> {
        Ok(())
    }
    fn occupancy(&mut self, _o: &OccupancySample) -> Result<()> {
        Ok(())
    }
    fn progress(&mut self, _done: u32, _total: u32) {}
    /// The run failed after [`Observer::started`]: what the device recorded
    /// up to the failure has been drained and the iteration the host was on
    /// reported as far as it got; the error itself returns next.
    fn failed(&mut self, _at: &Stopped) {}
}

/// Where a failed run stopped, for its trace's last line.
#[derive(Clone, Debug, Serialize)]
pub struct Stopped {
    /// The iteration the host was enqueuing or synchronising; `None` when the
    /// run failed outside the iterations (setup, the final drain, validation).
    pub iteration: Option<u32>,
    /// Device cycle when the host gave up.
    pub cycle: u64,
    /// Trace records overwritten before they were read, up to the failure.
    pub lost: u64,
    /// Timed device cycles up to the failure (0 if it came before them).
    pub timed_cycles: u64,
}

/// The iteration being enqueued, as far as it got.
struct Current {
    index: u32,
    warmup: bool,
    start: u64,
    enqueued: Option<u64>,
    events: Vec<u32>,
}

/// An observer that keeps nothing.
pub struct NoObserver;
impl RecordSink for NoObserver {
    fn records(&mut self, _: Coord, _: &[TraceRecord]) -> Result<()> {
        Ok(())
    }
}
impl Observer for NoObserver {}

/// Written by `cqlab run --trace` and read back by the trace tools.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IterationSample {
    pub index: u32,
    pub warmup: bool,
    /// Device cycle the host started enqueuing it.
    pub start: u64,
    /// Device cycle the host had enqueued it.
    pub enqueued: u64,
    /// Device cycle it was seen complete (per-iter sync), else `None` until the end.
    pub end: Option<u64>,
    /// Events recorded at its end, one per queue.
    pub events: Vec<u32>,
}

/// Throughput in a readable unit.
#[derive(Clone, Debug, Serialize)]
pub struct Throughput {
    pub value: f64,
    pub unit: String,
}

impl Throughput {
    /// Of `iters` iterations in `cycles` of a `clock_hz` clock.
    fn of(work: &Work, iters: u32, cycles: u64, clock_hz: u64) -> Option<Self> {
        if cycles == 0 {
            return None;
        }
        let per_s = work.per_iteration * iters as f64 * clock_hz as f64 / cycles as f64;
        Some(match work.unit {
            "bytes" => Self { value: per_s / 1e9, unit: "GB/s (1e9 B/s)".into() },
            "flop" => Self { value: per_s / 1e12, unit: "TFLOPS".into() },
            u => Self { value: per_s, unit: format!("{u}/s") },
        })
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CommandCost {
    pub core: String,
    pub command: &'static str,
    #[serde(flatten)]
    pub tally: Tally,
    pub mean_cycles: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct WaitTotal {
    pub cq: u8,
    pub waypoint: String,
    pub meaning: &'static str,
    #[serde(flatten)]
    pub tally: Tally,
}

#[derive(Clone, Debug, Serialize)]
pub struct QueueOccupancy {
    pub cq: u8,
    /// Points in the series: host samples plus `device_points`.
    pub samples: u64,
    /// Points taken at the device's own fetch and completion records.
    pub device_points: u64,
    /// Means are time-weighted over the series (each value holds until the next point).
    pub fetch_entries_mean: f64,
    pub fetch_entries_max: u32,
    pub completion_bytes_mean: f64,
    pub completion_bytes_max: u32,
    /// [cycle, fetch entries, completion bytes], at most `SERIES_POINTS` evenly picked samples.
    pub series: Vec<(u64, u32, u32)>,
}

/// Kernels of one launch label: how long they ran, and how long each core's
/// kernel waited from its enqueue to its start (queueing behind earlier
/// launches: the convoy effect). No enqueue time for kernels replayed from a trace.
#[derive(Clone, Debug, Serialize)]
pub struct KernelFigures {
    pub label: String,
    pub duration: Tally,
    pub launch_to_start_cycles: Option<Summary>,
}

/// Occupancy time series kept in the report, per queue.
pub const SERIES_POINTS: usize = 256;

#[derive(Clone, Debug, Serialize)]
pub struct MatmulFigures {
    pub tflops: f64,
    pub gflops: f64,
    pub peak_tflops: f64,
    pub utilization: f64,
    pub cycles_per_mac: f64,
    pub workers: u32,
    pub peak_basis: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct TraceStats {
    pub records: u64,
    pub lost: u64,
    /// Rings read through the BAR (costs device time) instead of the simulator's untimed view.
    pub through_bar: bool,
}

/// Results of a run at one queue count.
#[derive(Clone, Debug, Serialize)]
pub struct PointReport {
    /// The board (`--chip` spelling), its harvesting and its clock.
    pub chip: String,
    pub harvesting: String,
    pub clock_hz: u64,
    pub cqs: u8,
    pub iters: u32,
    pub warmup: u32,
    /// Device cycles of the timed iterations, first enqueue to last completion.
    pub timed_cycles: u64,
    pub latency_cycles: Option<Summary>,
    pub latency_us: Option<Summary>,
    pub throughput: Option<Throughput>,
    pub work_per_iteration: Work,
    pub commands: Vec<CommandCost>,
    pub stall_total_cycles: u64,
    pub wait_total_cycles: u64,
    pub waits: Vec<WaitTotal>,
    pub kernels: Vec<KernelFigures>,
    pub switch_overhead: SwitchOverhead,
    pub occupancy: Vec<QueueOccupancy>,
    pub validation: Option<Validation>,
    pub matmul: Option<MatmulFigures>,
    pub trace: TraceStats,
    /// The cores' L0 data caches over the whole run (boot and warmup
    /// included), where the model has them (`embedded:l0`).
    pub l0_cache: Option<cqlab_driver::backend::L0CacheStats>,
}

struct Tee<'a> {
    analysis: &'a mut Analysis,
    observer: &'a mut dyn Observer,
}
impl RecordSink for Tee<'_> {
    fn records(&mut self, core: Coord, records: &[TraceRecord]) -> Result<()> {
        self.analysis.records(core, records)?;
        self.observer.records(core, records)
    }
}

fn forward_launches(ctx: &mut Ctx<'_>, analysis: &mut Analysis, observer: &mut dyn Observer) -> Result<()> {
    for l in ctx.new_launches.drain(..) {
        analysis.launches.insert(l.seq, (l.cq, l.label, l.enqueued));
        observer.launch(&l)?;
    }
    Ok(())
}

/// A host sample of every queue's pointers (sysmem only, no device time).
fn sample_occupancy(dev: &mut Device, cqs: u8, analysis: &mut Analysis, observer: &mut dyn Observer) -> Result<()> {
    let cycle = dev.now();
    for q in 0..cqs {
        let p = dev.queue_pointers(q)?;
        let s = analysis.occupancy.host_sample(
            q,
            cycle,
            p.fetch_issued,
            p.fetch_consumed,
            p.completion_wr.0,
            p.completion_rd.0,
        );
        observer.occupancy(&s)?;
    }
    Ok(())
}

/// Drains the trace rings into the analysis and the observer, with the
/// occupancy points the drained records made.
fn drain(
    dev: &mut Device,
    collector: &mut TraceCollector,
    analysis: &mut Analysis,
    observer: &mut dyn Observer,
) -> Result<()> {
    collector.drain(dev, &mut Tee { analysis, observer })?;
    for s in analysis.occupancy.take_new() {
        observer.occupancy(&s)?;
    }
    // Every core is drained up to now: later records are later than this.
    analysis.occupancy.prune_before(dev.now());
    Ok(())
}

/// Synchronises outstanding iterations one at a time, oldest first, and
/// drains the trace rings after each: waiting for the last one alone would
/// let a long tail of queued iterations overwrite the rings before they
/// are read.
fn sync_in_order(
    dev: &mut Device,
    outstanding: &mut std::collections::VecDeque<(u32, Vec<Event>)>,
    collector: &mut TraceCollector,
    analysis: &mut Analysis,
    observer: &mut dyn Observer,
) -> Result<()> {
    // Popped once synchronised: on a failure the front is the iteration that failed.
    while let Some((_, events)) = outstanding.front() {
        for &ev in events {
            dev.event_synchronize(ev)?;
        }
        outstanding.pop_front();
        drain(dev, collector, analysis, observer)?;
    }
    Ok(())
}

/// The device spec with the run's seed applied to an embedded device that names none.
pub fn device_spec(spec: &str, seed: u64) -> String {
    match spec.strip_prefix("embedded:").or((spec == "embedded").then_some("")) {
        Some(rest) if rest.split(',').any(|o| o.starts_with("seed=")) => spec.to_owned(),
        // Written without empty words (`embedded:` read `embedded:seed=1,`).
        Some(rest) => {
            rest.split(',').filter(|w| !w.is_empty()).fold(format!("embedded:seed={seed}"), |s, w| s + "," + w)
        }
        None => spec.to_owned(),
    }
}

/// The seed of the simulator `device_spec(spec, seed)` opens, where the
/// client knows it: an embedded one's. A daemon's or a library's simulator
/// has the seed it was started with; hardware has none.
pub fn device_seed(spec: &str, seed: u64) -> Option<u64> {
    let resolved = device_spec(spec, seed);
    let words = resolved.strip_prefix("embedded:")?;
    words.split(',').find_map(|w| w.strip_prefix("seed=")?.parse().ok())
}

/// The device configuration `spec` runs on.
pub fn device_config(spec: &RunSpec) -> DeviceConfig {
    DeviceConfig { num_cqs: spec.cqs, worker_kernel: spec.kind.worker_kernel().into(), ..spec.base_config.clone() }
}

/// Runs `spec` on the device its spec names and reports one point.
pub fn run(spec: &RunSpec, observer: &mut dyn Observer) -> Result<PointReport> {
    let mut dev = Device::open(&device_spec(&spec.device, spec.seed), device_config(spec))?;
    run_on(&mut dev, spec, observer)
}

/// Runs `spec` on `dev` (opened with [`device_config`], not yet booted) and
/// reports one point.
pub fn run_on(dev: &mut Device, spec: &RunSpec, observer: &mut dyn Observer) -> Result<PointReport> {
    if spec.iters == 0 {
        return Err(DriverError::Invalid("--iters must be at least 1".into()));
    }
    // A daemon's caches have served its earlier clients: this point reports
    // its own part.
    let l0_before = dev.backend().introspect().map_or(Ok(None), |i| i.l0_cache())?;
    if spec.cqs > dev.chip().rows() {
        return Err(DriverError::Invalid(format!(
            "{} queues on {} worker rows: each queue needs a row of its own",
            spec.cqs,
            dev.chip().rows()
        )));
    }
    dev.boot()?;
    let mut workload = kinds::build(spec.kind, &spec.knobs, spec.seed)?;
    let calibration = match spec.kind {
        Kind::MatmulPeak | Kind::LargeGemm => Some(calibrate_mac(dev, spec.knobs.tile)?),
        _ => None,
    };
    let mut collector = TraceCollector::start(dev)?;
    let chip = std::sync::Arc::new(dev.chip().clone());
    observer.started(&chip, collector.cores(), spec)?;
    let cqs = spec.cqs;
    let mut analysis = Analysis::new(chip.clone());
    analysis.occupancy = crate::occupancy::Occupancy::new(cqs, dev.config().completion_size);
    // The device is idle: this sample sets the device-side counters.
    sample_occupancy(dev, cqs, &mut analysis, observer)?;
    let total = spec.warmup.checked_add(spec.iters).ok_or_else(|| {
        DriverError::Invalid(format!("--warmup {} + --iters {} exceeds {}", spec.warmup, spec.iters, u32::MAX))
    })?;
    let mut samples: Vec<IterationSample> = Vec::new();
    let mut timed_start = None;
    // Iterations enqueued and not yet synchronised, oldest first (`--sync
    // end` runs ahead of the device by up to the queues' depth).
    let mut outstanding: std::collections::VecDeque<(u32, Vec<Event>)> = Default::default();
    let mut current: Option<Current> = None;
    let ran = (|| -> Result<(u64, Option<Validation>)> {
        {
            let mut ctx = Ctx { dev, cqs, new_launches: Vec::new(), capturing: false };
            workload.setup(&mut ctx)?;
            forward_launches(&mut ctx, &mut analysis, observer)?;
        }
        for q in 0..cqs {
            dev.cq(q)?.finish()?;
        }
        drain(dev, &mut collector, &mut analysis, observer)?;
        for i in 0..total {
            let warmup = i < spec.warmup;
            if i == spec.warmup {
                // The timed region starts drained.
                sync_in_order(dev, &mut outstanding, &mut collector, &mut analysis, observer)?;
                // Totals cover the timed iterations, as the timed cycles do (what
                // came before is drained: at boot, after each synchronised
                // iteration, and by `sync_in_order`).
                analysis.begin_timed();
                timed_start = Some(dev.now());
            }
            let start = dev.now();
            let cur = current.insert(Current { index: i, warmup, start, enqueued: None, events: Vec::new() });
            sample_occupancy(dev, cqs, &mut analysis, observer)?;
            {
                let mut ctx = Ctx { dev, cqs, new_launches: Vec::new(), capturing: false };
                workload.iteration(&mut ctx, i)?;
                forward_launches(&mut ctx, &mut analysis, observer)?;
            }
            let mut events = Vec::new();
            for q in 0..cqs {
                events.push(dev.cq(q)?.record_event()?);
                cur.events.push(events[events.len() - 1].id);
            }
            let enqueued = dev.now();
            cur.enqueued = Some(enqueued);
            sample_occupancy(dev, cqs, &mut analysis, observer)?;
            let end = if spec.sync == SyncMode::PerIter {
                for &ev in &events {
                    dev.event_synchronize(ev)?;
                }
                sample_occupancy(dev, cqs, &mut analysis, observer)?;
                Some(dev.now())
            } else {
                None
            };
            let sample = IterationSample {
                index: i,
                warmup,
                start,
                enqueued,
                end,
                events: events.iter().map(|e| e.id).collect(),
            };
            observer.iteration(&sample)?;
            current = None;
            samples.push(sample);
            if spec.sync == SyncMode::End {
                outstanding.push_back((i, events));
            }
            drain(dev, &mut collector, &mut analysis, observer)?;
            observer.progress(i + 1, total);
        }
        sync_in_order(dev, &mut outstanding, &mut collector, &mut analysis, observer)?;
        let timed_cycles = dev.now() - timed_start.unwrap_or(0);
        sample_occupancy(dev, cqs, &mut analysis, observer)?;
        drain(dev, &mut collector, &mut analysis, observer)?;
        let validation = if spec.skip_validation {
            None
        } else {
            let mut ctx = Ctx { dev, cqs, new_launches: Vec::new(), capturing: false };
            workload.validate(&mut ctx)?
        };
        if let Some(v) = validation.as_ref().filter(|v| v.mismatches > 0) {
            return Err(DriverError::Mismatch(format!(
                "{} failed validation: {} of {} {} differ (seed {}; replay with the same command)",
                spec.kind.name(),
                v.mismatches,
                v.checked,
                v.what,
                spec.seed
            )));
        }
        Ok((timed_cycles, validation))
    })();
    let (timed_cycles, validation) = match ran {
        Ok(r) => r,
        Err(e) => {
            // The records up to the failure explain it (helper-94: a hang's
            // trace held only the boot's): drained as far as the rings can
            // still be read, then the iteration the host was on. Errors
            // here are secondary to `e`, which is what the run reports.
            // Where the host gave up: the cycle its hang dump was taken at
            // (reading the dump and draining take device time through the
            // BAR, ~1 M cycles on a full chip), else before the drain.
            let cycle = e.dump().map_or_else(|| dev.now(), |d| d.device_cycle);
            let _ = drain(dev, &mut collector, &mut analysis, observer);
            let iteration = match current {
                Some(c) => {
                    let enqueued = c.enqueued.unwrap_or(cycle);
                    let end = (spec.sync == SyncMode::PerIter).then_some(cycle);
                    let partial = IterationSample {
                        index: c.index,
                        warmup: c.warmup,
                        start: c.start,
                        enqueued,
                        end,
                        events: c.events,
                    };
                    let _ = observer.iteration(&partial);
                    Some(c.index)
                }
                None => outstanding.front().map(|o| o.0),
            };
            let timed_cycles = timed_start.map_or(0, |t| cycle - t);
            observer.failed(&Stopped { iteration, cycle, lost: collector.total_lost(), timed_cycles });
            return Err(e);
        }
    };

    let latencies = latencies(spec, &samples, &analysis);
    let latency_cycles = Summary::of(&latencies);
    let work = workload.work(cqs);
    let clock_hz = chip.layout().clock_hz();
    let throughput = Throughput::of(&work, spec.iters, timed_cycles, clock_hz);
    let matmul = calibration.map(|cycles_per_mac| {
        // The queues' workers share the output tiles, one each in turn
        // (`Matmul::args`): a worker past the last tile computes nothing.
        let launched = chip.cols() as u32 * (chip.rows() / cqs).max(1) as u32 * cqs as u32;
        let tiles = (spec.knobs.m / spec.knobs.tile) * (spec.knobs.n / spec.knobs.tile);
        let workers = launched.min(tiles).max(1);
        let achieved = work.per_iteration * spec.iters as f64 * clock_hz as f64 / timed_cycles.max(1) as f64;
        let peak = workers as f64 * clock_hz as f64 * 2.0 / cycles_per_mac;
        MatmulFigures {
            tflops: achieved / 1e12,
            gflops: achieved / 1e9,
            peak_tflops: peak / 1e12,
            utilization: achieved / peak,
            cycles_per_mac,
            workers,
            peak_basis: format!(
                "every worker with an output tile ({workers} of the {launched} launched) running the matmul kernel's \
                 k-step (two tile reads from DRAM, tile loads, t^3 soft-float multiply-adds) back to back at the rate \
                 measured on one core of this chip (kernel cycles of a 2-step minus a 1-step tile, over t^3), at the \
                 chip's {:.2} GHz clock",
                clock_hz as f64 / 1e9
            ),
        }
    });
    let commands = analysis
        .commands
        .iter()
        .map(|((core, command), t)| CommandCost { core: core.clone(), command, tally: *t, mean_cycles: t.mean() })
        .collect();
    let waits: Vec<WaitTotal> = analysis
        .waits
        .iter()
        .map(|((cq, wp), t)| WaitTotal { cq: *cq, waypoint: wp.clone(), meaning: waypoint_meaning(wp), tally: *t })
        .collect();
    let l0_cache = dev.backend().introspect().map_or(Ok(None), |i| i.l0_cache())?.map(|after| match &l0_before {
        None => after,
        Some(before) => cqlab_driver::backend::L0CacheStats {
            // (Saturating: only a power-on reset, which a run does not send,
            // could take the counters back.)
            hits: after.hits.saturating_sub(before.hits),
            stale_hits: after.stale_hits.saturating_sub(before.stale_hits),
            // The first stale read so far is this point's only if none came before.
            first_stale: after.first_stale.filter(|_| before.stale_hits == 0),
        },
    });
    let stall_total_cycles = waits.iter().filter(|w| w.waypoint == "PSW").map(|w| w.tally.total_cycles).sum();
    let wait_total_cycles = waits.iter().filter(|w| w.waypoint != "PSW").map(|w| w.tally.total_cycles).sum();
    Ok(PointReport {
        chip: chip.board().name().into(),
        harvesting: chip.harvesting().to_string(),
        clock_hz,
        cqs,
        iters: spec.iters,
        warmup: spec.warmup,
        timed_cycles,
        latency_us: latency_cycles.as_ref().map(|s| s.scaled(1e6 / clock_hz as f64)),
        latency_cycles,
        throughput,
        work_per_iteration: work,
        commands,
        stall_total_cycles,
        wait_total_cycles,
        waits,
        kernels: analysis
            .kernels
            .iter()
            .map(|(k, t)| KernelFigures {
                label: k.to_string(),
                duration: *t,
                launch_to_start_cycles: analysis.start_delays.get(k).and_then(|v| Summary::of(v)),
            })
            .collect(),
        switch_overhead: analysis.switch_overhead(),
        occupancy: analysis
            .occupancy
            .series
            .iter_mut()
            .enumerate()
            .map(|(q, s)| summarize_occupancy(q as u8, s))
            .collect(),
        validation,
        matmul,
        trace: TraceStats {
            records: analysis.records,
            lost: collector.total_lost(),
            through_bar: collector.through_bar,
        },
        l0_cache,
    })
}

fn waypoint_meaning(wp: &str) -> &'static str {
    cqlab_abi::waypoint::Waypoint::new(wp.as_bytes()).describe().unwrap_or("")
}

/// Per-iteration latencies of the timed iterations (see the module docs).
fn latencies(spec: &RunSpec, samples: &[IterationSample], analysis: &Analysis) -> Vec<f64> {
    let done = |s: &IterationSample| -> Option<u64> {
        s.events
            .iter()
            .map(|id| analysis.event_cycles.get(id).copied())
            .collect::<Option<Vec<u64>>>()?
            .into_iter()
            .max()
    };
    match spec.sync {
        SyncMode::PerIter => {
            samples.iter().filter(|s| !s.warmup).filter_map(|s| Some((s.end? - s.start) as f64)).collect()
        }
        SyncMode::End => {
            let mut out = Vec::new();
            let mut prev: Option<u64> = None;
            for s in samples {
                let d = done(s);
                if !s.warmup {
                    // The first timed iteration starts from the drained device.
                    let from = if s.index == spec.warmup { Some(s.start) } else { prev };
                    if let (Some(a), Some(b)) = (from, d) {
                        out.push(b.saturating_sub(a) as f64);
                    }
                }
                prev = d;
            }
            out
        }
    }
}

fn summarize_occupancy(cq: u8, s: &mut [OccupancySample]) -> QueueOccupancy {
    // Host samples and device points arrive in drain order: put them in time order.
    s.sort_by_key(|x| x.cycle);
    let stride = s.len().div_ceil(SERIES_POINTS).max(1);
    // Time-weighted: each point's value holds until the next point.
    let span = match (s.first(), s.last()) {
        (Some(a), Some(b)) if b.cycle > a.cycle => (b.cycle - a.cycle) as f64,
        _ => 0.0,
    };
    let weighted = |f: fn(&OccupancySample) -> u32| -> f64 {
        if span == 0.0 {
            return s.first().map_or(0.0, |x| f(x) as f64);
        }
        s.windows(2).map(|w| f(&w[0]) as f64 * (w[1].cycle - w[0].cycle) as f64).sum::<f64>() / span
    };
    QueueOccupancy {
        cq,
        samples: s.len() as u64,
        device_points: s.iter().filter(|x| x.source == "device").count() as u64,
        fetch_entries_mean: weighted(|x| x.fetch_entries),
        fetch_entries_max: s.iter().map(|x| x.fetch_entries).max().unwrap_or(0),
        completion_bytes_mean: weighted(|x| x.completion_bytes),
        completion_bytes_max: s.iter().map(|x| x.completion_bytes).max().unwrap_or(0),
        series: s.iter().step_by(stride).map(|x| (x.cycle, x.fetch_entries, x.completion_bytes)).collect(),
    }
}

/// Device cycles of one f32 multiply-add in the matmul kernel's k-step, on
/// one core: kernel time of a tile with two k-steps minus one with one
/// k-step, over t^3 (both from the worker's trace records).
fn calibrate_mac(dev: &mut Device, t: u32) -> Result<f64> {
    let page = t * t * 4;
    let a = dev.alloc_dram(2 * page, page)?;
    let b = dev.alloc_dram(2 * page, page)?;
    let c = dev.alloc_dram(page, page)?;
    let base = |b: &cqlab_driver::Buffer| match b.placement {
        cqlab_driver::Placement::Dram { base, .. } => base,
        cqlab_driver::Placement::L1 { addr, .. } => addr,
    };
    let (banks, cols) = (dev.chip().dram_banks(), dev.chip().cols() as u32);
    let core = dev.chip().worker(0, 0).expect("a compute grid has a core");
    let mut kernel_cycles = |kt: u32| -> Result<u64> {
        let args = [base(&a), base(&b), base(&c), 1, 1, kt, banks, cols, 1, t, 0];
        let mut cq = dev.cq(0)?;
        cq.launch(CoreRange::single(0, 0), &args)?;
        cq.finish()?;
        let tr = dev.read_trace_tail(core, 8)?;
        let kind =
            |k: cqlab_abi::trace::TraceKind| tr.records.iter().rev().find(|r| r.kind == k as u16).map(|r| r.cycle);
        match (kind(cqlab_abi::trace::TraceKind::KernelStart), kind(cqlab_abi::trace::TraceKind::KernelEnd)) {
            (Some(s), Some(e)) if e > s => Ok(e - s),
            _ => Err(DriverError::Invalid("matmul calibration: no kernel start/end records on worker (0,0)".into())),
        }
    };
    let one = kernel_cycles(1)?;
    let two = kernel_cycles(2)?;
    if two <= one {
        return Err(DriverError::Invalid(format!("matmul calibration: 2 k-steps took {two} cycles, 1 took {one}")));
    }
    Ok((two - one) as f64 / (t as f64).powi(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec a run opens, and reports: the run's seed added where the
    /// spec names none, with no empty words (`embedded:` read
    /// `embedded:seed=1,`).
    #[test]
    fn a_device_spec_gets_the_seed_it_lacks() {
        assert_eq!(device_spec("embedded", 3), "embedded:seed=3");
        assert_eq!(device_spec("embedded:", 3), "embedded:seed=3");
        assert_eq!(device_spec("embedded:exact,,slow", 3), "embedded:seed=3,exact,slow");
        assert_eq!(device_spec("embedded:seed=7,exact", 3), "embedded:seed=7,exact");
        assert_eq!(device_spec("sim:/tmp/x", 3), "sim:/tmp/x");
    }

    #[test]
    fn the_device_seed_is_the_embedded_simulators_only() {
        assert_eq!(device_seed("embedded", 3), Some(3));
        assert_eq!(device_seed("embedded:exact", 3), Some(3));
        assert_eq!(device_seed("embedded:seed=7,exact", 3), Some(7));
        assert_eq!(device_seed("sim:/tmp/cqlab-sim", 3), None);
        assert_eq!(device_seed("/dev/tenstorrent/0", 3), None);
    }
}
