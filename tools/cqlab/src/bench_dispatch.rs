//! `cqlab bench dispatch`: program dispatch measured the way tt-metal's
//! `pgm_dispatch` benchmark defines it. Per-program time = (first enqueue
//! or trace replay until finish) / programs, empty kernels unless stated;
//! host enqueue time with the device drained outside the timer. Axes: kernel
//! binary size (cached and first upload), one core vs the full grid,
//! unique and common runtime args, trace vs no trace, kernel run time, 1 vs
//! 2 command queues (programs on CQ0; CQ1 exists and idles).

use crate::goldens::{Goldens, Shape};
use crate::out::{out, outln};
use anyhow::{Context, Result};
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::ring::RingPtr;
use cqlab_driver::backend::spec::Model;
use cqlab_driver::{
    CommandQueue, CoreRange, Device, DeviceConfig, DriverError, KernelHandle, KernelImage, Program, Trace,
};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Program dispatch: device cycles and host enqueue time per program over tt-metal's pgm_dispatch axes.
    Dispatch(Args),
}

#[derive(clap::Args)]
pub struct Args {
    /// Programs per measured point (1..=100000).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u32).range(1..=MAX_PROGRAMS as i64))]
    pub programs: u32,
    /// Simulator seed.
    #[arg(long, default_value_t = 1, value_parser = crate::cli::seed)]
    pub seed: u64,
    /// Print `{"rows": [...]}`.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV (one line per axis and trace mode when plotted by `axis`).
    #[arg(long)]
    pub csv: bool,
    /// Only the points of this axis (and the base point).
    #[arg(long, value_parser = ["base", "cores", "kernel_bytes", "unique_args", "common_args", "kernel_cycles", "cqs"])]
    pub axis: Option<String>,
    /// Also profile these cores over each point's timed run
    /// (`prefetcher0,dispatcher0,worker0.0`): device time per firmware
    /// function, from PC samples at every scheduling slice.
    /// Not with `--csv`, whose lines have no room for the profiles.
    #[arg(long, conflicts_with = "csv", value_parser = |s: &str| crate::profile::parse_cores(s))]
    pub profile: Option<crate::profile::Cores>,
    /// Kernel binaries and unique-arg blocks of at least this many bytes
    /// are staged in sysmem and sent by reference (0: all copied into the
    /// issue queue), as `DeviceConfig::stage_min_bytes`.
    #[arg(long, default_value_t = DeviceConfig::default().stage_min_bytes,
          value_parser = clap::value_parser!(u32).range(0..=MAX_STAGE_MIN_BYTES as i64))]
    pub stage_min_bytes: u32,
    /// The timing model every point runs on (the calibrated one unless told).
    #[command(flatten)]
    pub model: crate::model::ModelOpt,
    /// Each program's kernels on all five processors of every core (BRISC,
    /// NCRISC, and one compute kernel on TRISC0-2; RISC-V code on the
    /// TRISCs), the slow-kernel axis on BRISC alone, as tt-metal's
    /// pgm_dispatch cases run: the default (the flag is kept so older
    /// command lines run).
    #[arg(long, conflicts_with = "brisc_only")]
    pub all_processors: bool,
    /// Each program's kernel on BRISC alone (the default before 2026-11-29).
    #[arg(long)]
    pub brisc_only: bool,
    /// The simulated chip (the embedded simulator runs every point).
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
}

/// Largest `--stage-min-bytes`: above the largest blob any point sends
/// (a 12 KiB kernel, 128 unique args per core of a full grid), nothing is
/// staged.
const MAX_STAGE_MIN_BYTES: u32 = 1 << 20;

/// Most programs per point: a point at this many takes minutes already.
const MAX_PROGRAMS: u32 = 100_000;

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
struct Point {
    axis: &'static str,
    cores: u32,
    kernel: &'static str,
    kernel_bytes: u32,
    cached: bool,
    unique_args: u32,
    common_args: u32,
    trace: bool,
    kernel_cycles: u32,
    cqs: u8,
}

#[derive(Clone, Debug, serde::Serialize)]
struct Row {
    #[serde(flatten)]
    point: Point,
    programs: u32,
    /// The chip's board, its harvesting, and its clock (board and
    /// harvesting apart, as every other report has them).
    chip: String,
    harvesting: String,
    clock_hz: u64,
    /// The chip's architecture (in `chip` already).
    #[serde(skip)]
    arch: cqlab_abi::arch::Arch,
    /// `--stage-min-bytes` the point ran with.
    stage_min_bytes: u32,
    /// Processors of each core the kernel runs on: 5, or 1 (BRISC) with
    /// `--brisc-only` and on the slow-kernel axis.
    processors: u32,
    /// Kernels on each core, each with its own text and args: 3 on five
    /// processors (BRISC, NCRISC, one compute kernel on the three TRISCs,
    /// as tt-metal's pgm_dispatch creates them), 1 on BRISC alone.
    kernels: u32,
    /// The timing model (`exact_time`, `pipelined_loads`, `icache`,
    /// `l0_cache`, `link_contention`, `reads_pass_unsent`).
    #[serde(flatten)]
    model: Model,
    device_cycles_per_program: f64,
    us_per_program: f64,
    host_enqueue_us_per_program: f64,
    /// Issue-queue bytes the host writes per program.
    host_bytes_per_program: f64,
    /// Time one memcpy of those bytes takes on this host, measured in the
    /// same run: the floor of `host_enqueue_us_per_program`.
    memcpy_us_per_program: f64,
    /// tt-metal's golden for a point of this shape on this chip's arch
    /// (`goldens`), `us_per_program / golden_us`, and where the golden comes
    /// from: its case, its golden file and the CI environment that ran it,
    /// each a field of its own so that scripts need not parse them apart;
    /// all null where tt-metal publishes none (binaries uploaded every
    /// program, 2 CQs).
    golden_us: Option<f64>,
    ratio: Option<f64>,
    golden_case: Option<String>,
    golden_file: Option<String>,
    golden_environment: Option<String>,
    /// What the golden's case does that this point does not (besides
    /// running five kernels a core where `--brisc-only` runs one); null
    /// where nothing, as the other golden fields are.
    golden_note: Option<String>,
    /// Wall-clock seconds this point took on this machine, booting and
    /// simulating included: what a campaign of such runs pays.
    host_seconds: f64,
    /// `--profile`: per profiled core, its functions by share of samples.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    profile: Vec<crate::profile::FunctionShare>,
}

/// The base point on a chip of `cores` compute cores: every one of them.
const fn base(cores: u32) -> Point {
    Point {
        axis: "base",
        cores,
        kernel: "noop",
        kernel_bytes: 0,
        cached: true,
        unique_args: 0,
        common_args: 0,
        trace: false,
        kernel_cycles: 0,
        cqs: 1,
    }
}

/// Every point on a chip of `cores` compute cores.
fn points(cores: u32) -> Vec<Point> {
    let b = base(cores);
    let mut v = vec![b.clone()];
    v.push(Point { axis: "cores", cores: 1, ..b });
    for (kernel, _) in SIZED {
        for cached in [true, false] {
            v.push(Point { axis: "kernel_bytes", kernel, cached, ..b });
        }
    }
    for n in [1, 32, 128] {
        v.push(Point { axis: "unique_args", unique_args: n, ..b });
    }
    for n in [1, 32, 128] {
        v.push(Point { axis: "common_args", common_args: n, ..b });
    }
    for c in [1_000, 5_000, 10_000] {
        v.push(Point { axis: "kernel_cycles", kernel: "spin", kernel_cycles: c, ..b });
    }
    v.push(Point { axis: "cqs", cqs: 2, ..b });
    v.into_iter().flat_map(|p| [p.clone(), Point { trace: true, ..p }]).collect()
}

/// The padded kernels of the binary-size axis.
const SIZED: [(&str, u32); 4] = [("noop-256", 256), ("noop-1k", 1024), ("noop-4k", 4096), ("noop-12k", 12 * 1024)];

/// Distinct kernels cycled through so that every program uploads its
/// binary (one more than there are text slots).
const UNCACHED_KERNELS: usize = cqlab_abi::program::KERNEL_SLOTS as usize + 1;

/// Point `p`'s common and unique args for kernel `k` on `range`.
fn set_args(prog: &mut Program, k: KernelHandle, p: &Point, range: CoreRange) -> Result<()> {
    let mut common: Vec<u32> = (0..p.common_args).collect();
    if p.kernel_cycles > 0 {
        common = vec![p.kernel_cycles];
    }
    prog.set_common_args(k, &common)?;
    if p.unique_args > 0 {
        for (c, r) in range.cores() {
            let args: Vec<u32> = (0..p.unique_args).map(|i| i ^ (c as u32) << 8 ^ (r as u32) << 16).collect();
            prog.set_unique_args(k, (c, r), &args)?;
        }
    }
    Ok(())
}

/// How many processors of each core run point `p`'s kernel: all five, as
/// tt-metal's cases do, but BRISC alone with `--brisc-only` and on the
/// slow-kernel axis, whose tt-metal cases run the slow kernel on BRISC with
/// the other processors idle (`BM_pgm_dispatch_vary_slow_cycles`,
/// `brisc_only`).
fn processors(args: &Args, p: &Point) -> usize {
    if args.brisc_only || p.kernel_cycles > 0 {
        1
    } else {
        Processor::ALL.len()
    }
}

/// Kernels a program of `processors` processors a core places: BRISC,
/// NCRISC and a compute kernel on the three TRISCs where all five run.
fn kernels(processors: usize) -> u32 {
    if processors == Processor::ALL.len() {
        3
    } else {
        processors as u32
    }
}

fn programs_for(dev: &Device, p: &Point, processors: usize) -> Result<Vec<Program>> {
    let image = Arc::new(dev.load_kernel(p.kernel)?);
    let images: Vec<Arc<KernelImage>> = if p.cached {
        vec![image]
    } else {
        (0..UNCACHED_KERNELS).map(|i| Arc::new(image.renamed(&format!("{}#{i}", image.name)))).collect()
    };
    let range = if p.cores == 1 { CoreRange::single(0, 0) } else { dev.chip().grid() };
    images
        .into_iter()
        .map(|img| {
            let mut prog = Program::new();
            let k = prog.add_kernel(img.clone(), &[range])?;
            // The same args for each kernel, as tt-metal sets them on its
            // three (DM0, DM1, compute: `test_pgm_dispatch.cpp`); its three
            // TRISCs share the compute kernel's.
            if processors == Processor::ALL.len() {
                let dm1 = prog.add_kernel_on(img.clone(), &[range], Processor::Ncrisc)?;
                set_args(&mut prog, dm1, p, range)?;
                let compute = prog.add_compute_kernel(img.clone(), &[range])?;
                set_args(&mut prog, compute, p, range)?;
            }
            set_args(&mut prog, k, p, range)?;
            Ok(prog)
        })
        .collect()
}

/// Captures as many of `n` programs as fit one trace (halving on refusal).
fn capture(dev: &mut Device, programs: &[Program], n: u32) -> Result<(Trace, u32)> {
    let mut k = n;
    loop {
        let mut cq = dev.cq(0)?;
        cq.begin_trace()?;
        for i in 0..k {
            cq.enqueue_program(&programs[i as usize % programs.len()])?;
        }
        match cq.end_trace() {
            Ok(t) => return Ok((t, k)),
            // Only a trace DRAM cannot hold is retried smaller; any other
            // failure is the run's.
            Err(DriverError::OutOfRange { what: "DRAM", .. }) if k > 1 => k /= 2,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Measures point `p` with the run's options `args` (programs, seed,
/// chip, staging, profiled cores).
fn measure(
    p: &Point,
    args: &Args,
    goldens: &Goldens,
    copy: &mut CopyBound,
    symbols: &mut crate::profile::Symbols,
) -> Result<Row> {
    let started = Instant::now();
    let (n, seed, stage_min_bytes) = (args.programs, args.seed, args.stage_min_bytes);
    let profile = args.profile.as_ref().map_or(&[][..], |c| &c.0[..]);
    let mut cfg = DeviceConfig {
        num_cqs: p.cqs,
        stage_min_bytes,
        wait_progress: Some(crate::cli::wait_lines()),
        notes: Some(crate::cli::note_lines()),
        ..Default::default()
    };
    args.chip.apply(&mut cfg)?;
    let model = args.model.model();
    let mut dev = Device::open(&format!("embedded:seed={seed}{}", model.spec_words()), cfg)?;
    dev.boot()?;
    let programs = programs_for(&dev, p, processors(args, p))?;
    let bytes = dev.load_kernel(p.kernel)?.len();
    // The profiled cores this point's device has.
    let profile: Vec<_> = profile.iter().filter_map(|name| name.on(dev.chip())).collect();
    let profile = &profile[..];
    let (cycles, host, profile) = if p.trace {
        if p.cached {
            // Cached means resident before the timed region, as on the
            // untraced path and in tt-metal's pgm_dispatch (which enqueues
            // its programs before it times or captures anything): the trace
            // then relies on the resident kernel (checked before each
            // replay) instead of uploading it in its first program.
            let mut cq = dev.cq(0)?;
            for prog in &programs {
                cq.enqueue_program(prog)?;
            }
            cq.finish()?;
        }
        let (trace, per_trace) = capture(&mut dev, &programs, n)?;
        let replays = n.div_ceil(per_trace);
        // Warm up: one replay leaves the trace's kernels resident.
        dev.cq(0)?.execute_trace(&trace)?;
        dev.cq(0)?.finish()?;
        if !profile.is_empty() {
            crate::profile::start(&mut dev, profile)?;
        }
        let c0 = dev.now();
        let mut cq = dev.cq(0)?;
        for _ in 0..replays {
            cq.execute_trace(&trace)?;
        }
        let cycles = (finished_at(&mut dev)? - c0) as f64 / (replays * per_trace) as f64;
        let profiled = if profile.is_empty() { Vec::new() } else { crate::profile::take(&mut dev, symbols)? };
        let host = host_time(&mut dev, copy, per_trace, 1, |cq, _| cq.execute_trace(&trace))?;
        (cycles, host, profiled)
    } else {
        let mut cq = dev.cq(0)?;
        // Warm up: kernels resident and the queues in their steady state.
        for prog in programs.iter().take(UNCACHED_KERNELS) {
            cq.enqueue_program(prog)?;
        }
        cq.finish()?;
        if !profile.is_empty() {
            crate::profile::start(&mut dev, profile)?;
        }
        let c0 = dev.now();
        let mut cq = dev.cq(0)?;
        for i in 0..n {
            cq.enqueue_program(&programs[i as usize % programs.len()])?;
        }
        let cycles = (finished_at(&mut dev)? - c0) as f64 / n as f64;
        let profiled = if profile.is_empty() { Vec::new() } else { crate::profile::take(&mut dev, symbols)? };
        // Carry on through the programs where the loop above left off, so
        // that uncached points keep uploading every program.
        let host = host_time(&mut dev, copy, 1, programs.len(), |cq, i| {
            cq.enqueue_program(&programs[(n + i) as usize % programs.len()])
        })?;
        (cycles, host, profiled)
    };
    let us_per_program = cycles * 1e6 / dev.chip().layout().clock_hz() as f64;
    let golden = goldens.find(&Shape {
        arch: dev.chip().board().arch().short_name(),
        one_core: p.cores == 1,
        kernel_bytes: (p.axis == "kernel_bytes").then_some(bytes),
        cached: p.cached,
        unique_args: p.unique_args,
        common_args: p.common_args,
        kernel_cycles: p.kernel_cycles,
        trace: p.trace,
        cqs: p.cqs,
    });
    Ok(Row {
        point: Point { kernel_bytes: bytes, ..p.clone() },
        programs: n,
        chip: dev.chip().board().to_string(),
        harvesting: dev.chip().harvesting().to_string(),
        clock_hz: dev.chip().layout().clock_hz(),
        arch: dev.chip().board().arch(),
        stage_min_bytes,
        processors: processors(args, p) as u32,
        kernels: kernels(processors(args, p)),
        model: model.on(dev.chip().board().arch()),
        device_cycles_per_program: cycles,
        us_per_program,
        golden_us: golden.map(|g| g.golden_us),
        ratio: golden.map(|g| us_per_program / g.golden_us),
        golden_case: golden.map(|g| g.case.clone()),
        golden_file: golden.map(|g| g.file.clone()),
        golden_environment: golden.map(|g| g.environment.clone()),
        golden_note: golden.and_then(|g| g.note.clone()),
        host_seconds: started.elapsed().as_secs_f64(),
        host_enqueue_us_per_program: host.us_per_program,
        host_bytes_per_program: host.bytes_per_program,
        memcpy_us_per_program: host.memcpy_us_per_program,
        profile,
    })
}

/// Waits for everything enqueued on CQ0 and returns the device cycle at
/// which it had finished: the dispatcher's stamp on the completion of an
/// event recorded last, not the cycle the host noticed it (the embedded
/// host looks every `backend::DEFAULT_POLL_CYCLES`, which would round each
/// point's end up by as much).
fn finished_at(dev: &mut Device) -> Result<u64> {
    let ev = dev.cq(0)?.record_event()?;
    dev.event_synchronize(ev)?;
    dev.event_cycle(ev)?.ok_or_else(|| anyhow::anyhow!("CQ0's completed event {} has no device cycle", ev.id))
}

/// Timed rounds of host enqueueing; the median is reported.
const HOST_ROUNDS: usize = 5;
/// Programs per timed round, at most (a replay counts its trace's programs;
/// a round has at least one call).
const HOST_BATCH: u32 = 64;

/// Host enqueue cost of one point.
pub(crate) struct HostTime {
    pub us_per_program: f64,
    /// Issue-queue bytes the host writes per program.
    bytes_per_program: f64,
    /// What copying those bytes costs on this host with the caches as a
    /// timed batch finds them: the floor for any host that writes them
    /// (measured now, see `CopyBound`).
    memcpy_us_per_program: f64,
}

/// What the host's scheduling points ran so far (nothing on a backend
/// without them).
fn host_points(dev: &mut Device) -> cqlab_driver::host_clock::HostClockStats {
    dev.backend().introspect().and_then(|i| i.host_clock()).unwrap_or_default()
}

/// Host time per program of `call` (the `i`th enqueue or replay on CQ0,
/// `programs` programs each, cycling through `sources` distinct ones): the median of `HOST_ROUNDS` timed batches,
/// each started with the device drained and sized to fit the issue and
/// fetch queues, so the host never waits for the device inside the timer.
/// The embedded simulator runs the device at the host's scheduling points
/// (`cqlab_driver::host_clock`) and when the host waits: the wall time the
/// points took simulating is left out, and a round whose device clock moved
/// further (the host waited) is refused: no device time is counted as host
/// time.
pub(crate) fn host_time(
    dev: &mut Device,
    copy: &mut CopyBound,
    programs: u32,
    sources: usize,
    mut call: impl FnMut(&mut CommandQueue<'_>, u32) -> Result<(), DriverError>,
) -> Result<HostTime> {
    let (issue, fetch) = (dev.config().issue_size, dev.config().fetch_entries);
    let mut i = 0;
    // One call untimed, to learn how many issue-queue bytes a call takes.
    dev.cq(0)?.finish()?;
    let before = dev.queue_pointers(0)?;
    call(&mut dev.cq(0)?, i)?;
    i += 1;
    let after = dev.queue_pointers(0)?;
    let per_call = RingPtr::used(after.issue_wr, before.issue_wr, issue);
    // Staged blobs take fetch entries but no issue-queue bytes.
    let entries = after.fetch_issued.wrapping_sub(before.fetch_issued).max(1);
    let batch = (HOST_BATCH / programs).min(issue / 2 / per_call.max(1)).min(fetch / 2 / entries).max(1);
    let mut rounds = Vec::with_capacity(HOST_ROUNDS);
    for _ in 0..HOST_ROUNDS {
        dev.cq(0)?.finish()?;
        let (c0, p0) = (dev.now(), host_points(dev));
        let t0 = Instant::now();
        let mut cq = dev.cq(0)?;
        for _ in 0..batch {
            call(&mut cq, i)?;
            i += 1;
        }
        let t = t0.elapsed();
        let p1 = host_points(dev);
        let waited = (dev.now() - c0) - (p1.device_cycles - p0.device_cycles);
        anyhow::ensure!(
            waited == 0,
            "the device ran {waited} cycles beyond the host's accesses inside a timed batch of {batch} calls of \
             {per_call} bytes: the host waited"
        );
        let t = t.saturating_sub(p1.device_run - p0.device_run);
        rounds.push(t.as_secs_f64() * 1e6 / (batch * programs) as f64);
    }
    dev.cq(0)?.finish()?;
    rounds.sort_by(f64::total_cmp);
    Ok(HostTime {
        us_per_program: rounds[rounds.len() / 2],
        bytes_per_program: per_call as f64 / programs as f64,
        memcpy_us_per_program: copy.us(per_call as usize, batch as usize, issue as usize, sources) / programs as f64,
    })
}

/// The memory-copy floor of a point: one `memcpy` of a program's issue-queue
/// bytes, timed the way `host_time` times enqueues. A timed batch starts
/// right after the device drained, and the embedded simulator ran on this
/// CPU meanwhile, so the issue queue and the program's bytes are no longer
/// in the host's caches (on a card the device runs elsewhere and the ring
/// stays warmer). So each round first evicts the caches (touching twice the
/// last-level cache), then copies a batch round robin through a ring of the
/// issue queue's size; the median round, per copy.
pub(crate) struct CopyBound {
    evict: Vec<u8>,
}

impl CopyBound {
    pub(crate) fn new() -> Self {
        Self { evict: vec![0; 2 * last_level_cache().unwrap_or(32 << 20)] }
    }

    /// Microseconds per copy of `bytes`, in batches of `batch`, from
    /// `sources` buffers in turn (one per distinct program the point cycles
    /// through: their bytes are as cold as the programs').
    fn us(&mut self, bytes: usize, batch: usize, ring: usize, sources: usize) -> f64 {
        let bytes = bytes.clamp(1, ring);
        let srcs: Vec<Vec<u8>> = (0..sources.max(1)).map(|s| (0..bytes).map(|i| (i + s) as u8).collect()).collect();
        let mut dst = vec![0xa5u8; ring];
        let mut at = 0;
        let mut rounds: Vec<f64> = (0..HOST_ROUNDS)
            .map(|_| {
                for line in self.evict.iter_mut().step_by(64) {
                    *line = line.wrapping_add(1);
                }
                std::hint::black_box(&mut self.evict);
                let t0 = Instant::now();
                for i in 0..batch {
                    if at + bytes > ring {
                        at = 0;
                    }
                    dst[at..at + bytes].copy_from_slice(std::hint::black_box(&srcs[i % srcs.len()]));
                    at += bytes;
                }
                std::hint::black_box(&mut dst);
                t0.elapsed().as_secs_f64() * 1e6 / batch as f64
            })
            .collect();
        rounds.sort_by(f64::total_cmp);
        rounds[rounds.len() / 2]
    }
}

/// Bytes of the largest CPU cache (Linux sysfs), if known.
fn last_level_cache() -> Option<usize> {
    (0..8)
        .filter_map(|i| std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size")).ok())
        .filter_map(|s| {
            let s = s.trim();
            let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
            let n: usize = n.parse().ok()?;
            Some(match unit {
                "K" => n << 10,
                "M" => n << 20,
                "G" => n << 30,
                _ => n,
            })
        })
        .max()
}

/// The chip of the points' devices with `cqs` queues placed.
fn chip(args: &Args, cqs: u8) -> Result<cqlab_driver::Topology> {
    let (board, harvesting) = (args.chip.sim_board(), args.chip.harvesting()?);
    Ok(cqlab_driver::Topology::for_board(board, harvesting, cqs)?)
}

fn selected(args: &Args) -> Result<Vec<Point>> {
    let cores = chip(args, 1)?.worker_count();
    Ok(points(cores)
        .into_iter()
        .filter(|p| args.axis.as_deref().is_none_or(|a| a == p.axis || p.axis == "base"))
        .collect())
}

/// The chip must be one the options describe, and a core to profile on the
/// device of some point (a 1-CQ point skips CQ1's cores).
pub fn validate(cmd: &Command) -> Result<()> {
    let Command::Dispatch(args) = cmd;
    args.chip.validate()?;
    let points = selected(args)?;
    let profile = args.profile.as_ref().map_or(&[][..], |c| &c.0[..]);
    let most_cqs = points.iter().map(|p| p.cqs).max().unwrap_or(1);
    let chip = chip(args, most_cqs)?;
    for &core in profile {
        crate::usage::ensure(core.on(&chip).is_some(), || {
            format!(
                "--profile {core}: not a core of the measured devices ({} {}: a {}x{} compute grid, {most_cqs} \
                 queue(s))",
                chip.board(),
                chip.harvesting(),
                chip.cols(),
                chip.rows()
            )
        })?;
    }
    Ok(())
}

pub fn run(cmd: Command) -> Result<ExitCode> {
    validate(&cmd)?;
    let Command::Dispatch(args) = cmd;
    let points = selected(&args)?;
    {
        // Every image a point loads, checked before the first point (a cut
        // kernel failed its point after the others had run).
        let mut cfg = DeviceConfig::default();
        args.chip.apply(&mut cfg)?;
        let arch = cfg.sim_board().arch();
        let kernels: std::collections::BTreeSet<&str> = points.iter().map(|p| p.kernel).collect();
        cfg.check_firmware(arch)
            .and_then(|()| cfg.check_kernels(arch, kernels))
            .map_err(|e| crate::usage::UsageError(format!("the firmware: {e}")))?;
    }
    let mut rows = Vec::new();
    let mut copy = CopyBound::new();
    let mut symbols = crate::profile::Symbols::default();
    let goldens = Goldens::builtin();
    for (i, p) in points.iter().enumerate() {
        let row = measure(p, &args, &goldens, &mut copy, &mut symbols)
            .with_context(|| format!("measuring {} {:?} trace={}", p.axis, p.kernel, p.trace))?;
        crate::out::diagln!("{}", progress(i, points.len(), &row));
        rows.push(row);
    }
    if args.json {
        // Every point runs on an embedded simulator of this seed.
        outln!(
            "{}",
            serde_json::json!({ "seed": args.seed, "sysmem_pages": crate::sysmem_pages::json(), "rows": rows })
        );
    } else if args.csv {
        out!("{}", csv(&rows)?);
    } else {
        out!("{}", table(&rows));
        let seconds: f64 = rows.iter().map(|r| r.host_seconds).sum();
        outln!("host time: {seconds:.1} s for {} points on this machine (`--json`: each point's)", rows.len());
        if let Some(line) = crate::sysmem_pages::line() {
            outln!("{line}");
        }
        out!("{}", golden_legend(&rows, &goldens));
        out!("{}", targets(&rows));
        out!("{}", profiles(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

/// The progress line of the `i`th of `n` points, measured as `r`.
fn progress(i: usize, n: usize, r: &Row) -> String {
    format!(
        "point {}/{n}: {}={}{}, {:.0} cycles/program ({:.1} s)",
        i + 1,
        r.point.axis,
        x(r),
        label(&r.point),
        r.device_cycles_per_program,
        r.host_seconds
    )
}

/// `--profile`: each point's top functions per profiled core.
fn profiles(rows: &[Row]) -> String {
    let mut s = String::new();
    for r in rows.iter().filter(|r| !r.profile.is_empty()) {
        let p = &r.point;
        s += &format!(
            "\nprofile: {} {} {}{} ({:.0} cycles/program)\n",
            p.axis,
            x(r),
            p.kernel,
            label(p),
            r.device_cycles_per_program
        );
        let mut shown: std::collections::BTreeMap<&str, usize> = Default::default();
        for f in &r.profile {
            let n = shown.entry(&f.name).or_default();
            *n += 1;
            if *n <= PROFILE_TOP {
                s += &format!("  {:<13} {:>5.1}%  {:>9}  {}\n", f.name, 100.0 * f.share, f.cycles, f.function);
            }
        }
    }
    s
}

/// Functions shown per core and point (`--json` has them all).
const PROFILE_TOP: usize = 8;

/// The value an axis varies, for plotting.
fn x(r: &Row) -> String {
    let p = &r.point;
    match p.axis {
        "cores" | "base" => p.cores.to_string(),
        "kernel_bytes" => p.kernel_bytes.to_string(),
        "unique_args" => p.unique_args.to_string(),
        "common_args" => p.common_args.to_string(),
        "kernel_cycles" => p.kernel_cycles.to_string(),
        "cqs" => p.cqs.to_string(),
        _ => String::new(),
    }
}

/// Where a row sits in a plot: the value its axis varies and its line (one
/// per axis, trace mode and, for binary sizes, caching).
#[derive(serde::Serialize)]
struct Plotted {
    x: String,
    series: String,
}

/// The measured columns of a `--csv` line, then what else identifies its
/// row (after the figures, so that the columns of earlier builds keep
/// their places).
#[derive(serde::Serialize)]
struct Figures<'a> {
    device_cycles_per_program: f64,
    us_per_program: f64,
    host_enqueue_us_per_program: f64,
    host_bytes_per_program: f64,
    memcpy_us_per_program: f64,
    golden_us: Option<f64>,
    ratio: Option<f64>,
    chip: &'a str,
    harvesting: &'a str,
    clock_hz: u64,
    programs: u32,
    processors: u32,
    kernels: u32,
}

/// One `--csv` line per row: its point, where it is plotted, its figures.
fn csv(rows: &[Row]) -> Result<String> {
    crate::cli::csv(rows.iter().map(|r| {
        let p = &r.point;
        let series = format!(
            "{}{}{}",
            p.axis,
            if p.trace { "/trace" } else { "" },
            if p.axis == "kernel_bytes" && !p.cached { "/upload" } else { "" }
        );
        let figures = Figures {
            device_cycles_per_program: r.device_cycles_per_program,
            us_per_program: r.us_per_program,
            host_enqueue_us_per_program: r.host_enqueue_us_per_program,
            host_bytes_per_program: r.host_bytes_per_program,
            memcpy_us_per_program: r.memcpy_us_per_program,
            golden_us: r.golden_us,
            ratio: r.ratio,
            chip: &r.chip,
            harvesting: &r.harvesting,
            clock_hz: r.clock_hz,
            programs: r.programs,
            processors: r.processors,
            kernels: r.kernels,
        };
        (p, Plotted { x: x(r), series }, figures)
    }))
}

fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "program dispatch, {} programs per point, embedded simulator of a {} at {:.2} GHz{}{}, {}\n",
        rows.first().map_or(0, |r| r.programs),
        rows.first().map_or("?".into(), |r| format!("{} ({})", r.chip, r.harvesting)),
        rows.first().map_or(0.0, |r| r.clock_hz as f64 / 1e9),
        // How the model departs from the default on the rows' chip.
        rows.first().map_or(String::new(), |r| r.model.describe_on(r.arch)),
        match (rows.iter().any(|r| r.processors > 1), rows.iter().any(|r| r.point.kernel_cycles > 0)) {
            (true, true) =>
                ", kernels on all five processors, the TRISCs' one compute kernel (slow kernels on BRISC alone)",
            (true, false) => ", kernels on all five processors, the TRISCs' one compute kernel",
            (false, _) => ", kernels on BRISC alone",
        },
        match rows.first().map_or(0, |r| r.stage_min_bytes) {
            0 => "nothing staged".to_string(),
            n => format!("blobs of {n} B and more staged"),
        }
    );
    let _ = writeln!(
        s,
        "{:<14} {:>5} {:>7} {:>6} {:>6} {:>6} {:>6} {:>10} {:>3} {:>12} {:>10} {:>10} {:>6} {:>12} {:>12} {:>10}",
        "axis",
        "cores",
        "bytes",
        "cached",
        "unique",
        "common",
        "trace",
        "kernel cyc",
        "cqs",
        "cycles/prog",
        "us/prog",
        "golden us",
        "ratio",
        "host us/prog",
        "host B/prog",
        "memcpy us"
    );
    for r in rows {
        let p = &r.point;
        let _ = writeln!(
            s,
            "{:<14} {:>5} {:>7} {:>6} {:>6} {:>6} {:>6} {:>10} {:>3} {:>12.0} {:>10.3} {:>10} {:>6} {:>12.3} {:>12.0} {:>10.3}",
            p.axis,
            p.cores,
            p.kernel_bytes,
            if p.cached { "yes" } else { "no" },
            p.unique_args,
            p.common_args,
            if p.trace { "yes" } else { "no" },
            p.kernel_cycles,
            p.cqs,
            r.device_cycles_per_program,
            r.us_per_program,
            r.golden_us.map_or("-".to_string(), |g| format!("{g:.3}")),
            r.ratio.map_or("-".to_string(), |q| format!("{q:.2}")),
            r.host_enqueue_us_per_program,
            r.host_bytes_per_program,
            r.memcpy_us_per_program
        );
    }
    s
}

/// What the golden columns compare, and what they do not.
fn golden_legend(rows: &[Row], goldens: &Goldens) -> String {
    let processors = if rows.iter().any(|r| r.processors == 1 && r.point.kernel_cycles == 0) {
        "tt-metal runs a kernel on all five processors of each core, cqlab one (BRISC; `--brisc-only`)"
    } else {
        "both run three kernels on the five processors of each core, BRISC, NCRISC and a compute kernel whose args \
         the three TRISCs share (the slow kernels on BRISC alone, as tt-metal's), but tt-metal's compute kernel is \
         three binaries, cqlab's one image"
    };
    let mut s = format!(
        "\ngolden us: tt-metal's pgm_dispatch time for a program of the same shape on this arch ({}); ratio = us/prog \
         / golden us. Not equal: {processors}; its grid is its card's (n300, p150), cqlab's the simulated \
         board's; cqlab's base kernel is smaller than 256 B and is set beside tt-metal's 256 B case.\n",
        goldens.source
    );
    let mut notes: Vec<&str> = rows.iter().filter_map(|r| r.golden_note.as_deref()).collect();
    notes.sort_unstable();
    notes.dedup();
    for n in notes {
        let _ = writeln!(s, "  golden case differs: {n}");
    }
    s
}

/// The issue's targets, checked against this run.
fn targets(rows: &[Row]) -> String {
    let find = |f: &dyn Fn(&Point) -> bool| rows.iter().find(|r| f(&r.point)).map(|r| r.device_cycles_per_program);
    let full = rows.iter().find(|r| r.point.axis == "base").map_or(0, |r| r.point.cores);
    // Set before the chips were calibrated: say so, or a MISSED reads as a
    // failed run.
    let mut s = String::from(
        "\ncqlab's own targets from its first, uncalibrated model (issue 10: 32 B/cycle multicast, one kernel \
         a core, 1-cycle L1 stores), which the calibrated chips may miss (docs/performance.md says why on the \
         n150); tt-metal's goldens above are the comparison to quote\n",
    );
    let mut check = |name: &str, value: Option<f64>, limit: Option<f64>| {
        if let (Some(v), Some(l)) = (value, limit) {
            let _ = writeln!(s, "  {:<58} {:>9.0} <= {:>9.0}  {}", name, v, l, if v <= l { "ok" } else { "MISSED" });
        }
    };
    let base = |p: &Point, trace| p.axis == "base" && p.trace == trace;
    check("full grid, empty kernel, traced (cycles/program)", find(&|p| base(p, true)), Some(1000.0));
    check("full grid, empty kernel, untraced", find(&|p| base(p, false)), Some(2000.0));
    check("one core, traced", find(&|p| p.axis == "cores" && p.trace), Some(900.0));
    for trace in [false, true] {
        check(
            &format!("5,000-cycle kernel{} (<= 1.05 x 5,000)", if trace { ", traced" } else { "" }),
            find(&|p| p.kernel_cycles == 5000 && p.trace == trace),
            Some(5250.0),
        );
    }
    for trace in [false, true] {
        let small = find(&|p| p.kernel == "noop-256" && p.cached && p.trace == trace);
        check(
            &format!("12 KiB resident vs 256 B (<= 1.05 x){}", if trace { ", traced" } else { "" }),
            find(&|p| p.kernel == "noop-12k" && p.cached && p.trace == trace),
            small.map(|v| v * 1.05),
        );
        // The upload's cost: what it adds to the resident case, against one
        // multicast of each kernel's image at 32 B/cycle.
        let upload = rows.iter().find(|r| r.point.kernel == "noop-12k");
        let bytes = upload.map(|r| (r.point.kernel_bytes * r.kernels) as f64);
        let resident = find(&|p| p.kernel == "noop-12k" && p.cached && p.trace == trace);
        check(
            &format!(
                "12 KiB first upload x {} kernels, added cycles (<= 1.2 x bytes / 32){}",
                upload.map_or(1, |r| r.kernels),
                if trace { ", traced" } else { "" }
            ),
            find(&|p| p.kernel == "noop-12k" && !p.cached && p.trace == trace).zip(resident).map(|(u, r)| u - r),
            bytes.map(|b| 1.2 * b / 32.0),
        );
        // Each core's args of each kernel cross the NOC once.
        let unique = rows.iter().find(|r| r.point.unique_args == 128 && r.point.trace == trace);
        let kernels = unique.map_or(1, |r| r.kernels);
        check(
            &format!(
                "128 unique args x {full} cores x {kernels} kernels (<= 1.25 x NOC bytes / 32){}",
                if trace { ", traced" } else { "" }
            ),
            unique.map(|r| r.device_cycles_per_program),
            unique.map(|r| 1.25 * (128.0 * 4.0 * (full * r.kernels) as f64) / 32.0),
        );
    }
    // Traced minus untraced cycles over the run, per point.
    let leads: Vec<(f64, &Row)> = rows
        .iter()
        .filter(|r| r.point.trace)
        .filter_map(|t| {
            let untraced = rows.iter().find(|u| !u.point.trace && same_point(&u.point, &t.point))?;
            Some(((t.device_cycles_per_program - untraced.device_cycles_per_program) * t.programs as f64, t))
        })
        .collect();
    // `;` between points: a label has commas of its own.
    let slower: Vec<String> = leads
        .iter()
        .filter(|(d, _)| *d >= 0.0)
        .map(|(_, t)| format!("{}={}{}", t.point.axis, x(t), label(&t.point)))
        .collect();
    // Where kernels bound both modes, they differ by where a scheduling
    // slice falls: say how narrow the lead is, not only its sign.
    let slice = cqlab_sim::config::SimConfig::default().quantum_cycles;
    let narrowest = leads.iter().max_by(|a, b| a.0.total_cmp(&b.0)).map(|(d, t)| {
        let tie =
            if -d < slice as f64 { format!(", less than one {slice}-cycle scheduling slice") } else { String::new() };
        let programs = if t.programs == 1 { "program" } else { "programs" };
        format!(
            " (narrowest: {}={}{}, by {:.0} cycles over {} {programs}{tie})",
            t.point.axis,
            x(t),
            label(&t.point),
            -d,
            t.programs
        )
    });
    let _ = writeln!(
        s,
        "  traced faster than untraced on every point: {}",
        if slower.is_empty() {
            format!("ok{}", narrowest.unwrap_or_default())
        } else {
            format!("MISSED at {}", slower.join("; "))
        }
    );
    let worst = |key: &dyn Fn(&Row) -> f64| rows.iter().max_by(|a, b| key(a).total_cmp(&key(b)));
    if let Some(r) = worst(&|r| r.host_enqueue_us_per_program) {
        let _ = writeln!(
            s,
            "  host enqueue <= 1 us/program: worst {:.3} us at {}={}{}  {}",
            r.host_enqueue_us_per_program,
            r.point.axis,
            x(r),
            label(&r.point),
            if r.host_enqueue_us_per_program <= 1.0 { "ok" } else { "MISSED" }
        );
    }
    // Where a program's bytes take long to copy, the copy is the floor: the
    // rest of the enqueue must stay under 1 us on top of it.
    if let Some(r) = worst(&|r| r.host_enqueue_us_per_program - r.memcpy_us_per_program) {
        let over = r.host_enqueue_us_per_program - r.memcpy_us_per_program;
        let _ = writeln!(
            s,
            "  host enqueue <= 1 us/program + memcpy of its bytes: worst {:.3} us over the copy ({:.3} us of {:.0} B) at {}={}{}  {}",
            over,
            r.memcpy_us_per_program,
            r.host_bytes_per_program,
            r.point.axis,
            x(r),
            label(&r.point),
            if over <= 1.0 { "ok" } else { "MISSED" }
        );
    }
    s
}

/// ", traced" / ", upload" as a point needs it.
fn label(p: &Point) -> String {
    format!("{}{}", if p.trace { ", traced" } else { "" }, if p.cached { "" } else { ", upload" })
}

fn same_point(a: &Point, b: &Point) -> bool {
    (a.axis, a.cores, a.kernel, a.cached, a.unique_args, a.common_args, a.kernel_cycles, a.cqs)
        == (b.axis, b.cores, b.kernel, b.cached, b.unique_args, b.common_args, b.kernel_cycles, b.cqs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::Arch;

    /// A row of point `p` on a Wormhole n150 at `cycles` per program.
    fn row(p: &Point, cycles: f64) -> Row {
        Row {
            point: p.clone(),
            programs: 50,
            chip: "wormhole-n150".into(),
            harvesting: "rows=8".into(),
            clock_hz: 1_000_000_000,
            arch: Arch::Wormhole,
            stage_min_bytes: 4096,
            processors: 5,
            kernels: 3,
            model: Model::default().on(Arch::Wormhole),
            device_cycles_per_program: cycles,
            us_per_program: cycles / 1e3,
            host_enqueue_us_per_program: 0.2,
            host_bytes_per_program: 22.0,
            memcpy_us_per_program: 0.05,
            golden_us: None,
            ratio: None,
            golden_case: None,
            golden_file: None,
            golden_environment: None,
            golden_note: None,
            host_seconds: 1.5,
            profile: Vec::new(),
        }
    }

    /// The 256 B kernel's point, uploaded every program, `trace`d or not.
    fn upload_256(trace: bool) -> Point {
        Point { axis: "kernel_bytes", kernel: "noop-256", kernel_bytes: 256, cached: false, trace, ..base(64) }
    }

    /// `--profile` with `--csv` is refused: the CSV has no room for the
    /// profiles, which were measured and dropped.
    #[test]
    fn profile_is_refused_with_csv() {
        use clap::Parser as _;
        let argv = ["cqlab", "bench", "dispatch", "--csv", "--profile", "worker0.0"];
        let e = crate::Cli::try_parse_from(argv).err().expect("refused");
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict, "{e}");
    }

    /// Each CSV line says on what chip, at what clock, with how many
    /// kernels it ran, and its golden and ratio (empty where none).
    #[test]
    fn csv_lines_say_chip_clock_kernels_and_golden() {
        let b = row(&base(64), 1070.0);
        let golden = Row { golden_us: Some(2.698), ratio: Some(1.07 / 2.698), ..b.clone() };
        let text = csv(&[golden, row(&upload_256(false), 1801.0)]).unwrap();
        let mut lines = text.lines().map(|l| l.split(',').collect::<Vec<_>>());
        let header = lines.next().unwrap();
        let column =
            |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}: {header:?}"));
        let (first, second) = (lines.next().unwrap(), lines.next().unwrap());
        let cell = |l: &[&str], name| l[column(name)].to_owned();
        assert_eq!(cell(&first, "chip"), "wormhole-n150");
        assert_eq!(cell(&first, "harvesting"), "rows=8");
        assert_eq!(cell(&first, "clock_hz"), "1000000000");
        assert_eq!((cell(&first, "processors"), cell(&first, "kernels")), ("5".into(), "3".into()));
        assert_eq!(cell(&first, "golden_us"), "2.698");
        assert!(cell(&first, "ratio").starts_with("0.39"), "{first:?}");
        assert_eq!((cell(&second, "golden_us"), cell(&second, "ratio")), (String::new(), String::new()));
        // The columns of earlier builds keep their places.
        assert_eq!(header[..3], ["axis", "cores", "kernel"]);
        assert_eq!(column("memcpy_us_per_program") + 1, column("golden_us"));
    }

    /// Progress names the point, of how many, as the targets name it.
    #[test]
    fn progress_names_the_point_of_how_many() {
        let line = progress(6, 40, &row(&upload_256(true), 1834.0));
        assert_eq!(line, "point 7/40: kernel_bytes=256, traced, upload, 1834 cycles/program (1.5 s)");
    }

    /// A traced point slower than its untraced one is named with its
    /// label (`, upload`), as the host-enqueue targets name theirs; the
    /// table's kernel-cycles column says what it holds.
    #[test]
    fn targets_and_table_name_points_fully() {
        let cached = Point { cached: true, ..upload_256(false) };
        let rows = [
            row(&cached, 1069.0),
            row(&Point { trace: true, ..cached.clone() }, 673.0),
            row(&upload_256(false), 1801.0),
            row(&upload_256(true), 1834.0),
        ];
        let t = targets(&rows);
        assert!(
            t.contains("traced faster than untraced on every point: MISSED at kernel_bytes=256, traced, upload\n"),
            "{t}"
        );
        let table = table(&rows);
        let header = table.lines().nth(1).unwrap();
        assert!(header.contains(" kernel cyc ") && !header.contains("kcycles"), "{header}");
    }
}
