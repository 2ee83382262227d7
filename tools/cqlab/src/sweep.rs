//! `cqlab sweep WORKLOAD --param NAME=LIST|A..B[:STEP] [--bisect]`: runs a
//! workload at each value of one knob and tabulates pass/fail and a metric
//! (table on stdout, JSON and an SVG chart in --out). `--bisect` brackets
//! the first failing of the values given, ascending (doubling steps through
//! them from the least), then bisects to it, and reports the failure
//! signature at the boundary:
//! reference 001's "301 passes, 302 fails" found without a hand-made loop.
//! Each failing point names the command that re-runs it, and with
//! `--dump-dir` leaves its hang dump and trace, as a failing race seed does.
//!
//! Workload `copy_stress`: writes a buffer once, enqueues `depth` reads of it
//! on each of `cqs` queues before collecting any (the batched depth of the
//! field notes), then collects and checks every read.

use crate::exit::FailureClass;
use crate::out::{diagln, outln};
use crate::race::failure::{first_difference, Failure};
use crate::usage::{ensure, UsageError};
use anyhow::Result;
use cqlab_driver::backend::spec::{Model, Spec};
use cqlab_driver::{Device, DeviceConfig, HostBug};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    #[value(name = "copy_stress")]
    CopyStress,
}

#[derive(clap::Args, Clone)]
pub struct Args {
    pub workload: Workload,
    /// The knob and its values: NAME=V1,V2,... or NAME=A..B[:STEP] (inclusive).
    /// Knobs: depth, bytes, issue_size, completion_size, fetch_entries, ring_pages, cqs.
    #[arg(long)]
    pub param: String,
    /// Other knobs held fixed, NAME=V (repeatable).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Find the first failing value instead of running every value. Each
    /// point runs on a fresh device (`--reset-each`): a value found on a
    /// device the points before it had used might not fail on its own.
    #[arg(long)]
    pub bisect: bool,
    /// A fresh device (embedded) or a daemon reset (sim:PATH) before every
    /// point; without it, points share one booted device (its allocations,
    /// ring positions and event ids carry over, so a point's outcome can
    /// depend on the points before it) until a point fails. Always on with
    /// `--bisect`.
    #[arg(long)]
    pub reset_each: bool,
    /// Re-create a known host-side bug: `no-drain` (the host does not drain
    /// completions while it waits for a fetch slot or issue space),
    /// `completion-rd-no-toggle` (the completion read pointer written back
    /// without its wrap toggle) or `hoisted-pointer-load` (the device's
    /// issue pointers loaded once per wait for space).
    #[arg(long)]
    pub host_bug: Option<String>,
    /// Device: embedded[:seed=N][,exact][,blocking][,no-contention][,icache][,no-l0][,reads-wait-unsent]
    /// (docs/cli.md) or sim:PATH[?wait[=SECS]].
    #[arg(long, default_value = "embedded:seed=1")]
    pub device: String,
    #[command(flatten)]
    pub host: crate::cli::HostArgs,
    /// Device cycles without progress before a wait gives up (1000000..=1000000000000).
    #[arg(long, default_value_t = 2_000_000,
          value_parser = clap::value_parser!(u64).range(cqlab_driver::wait::PROGRESS_CHECK_CYCLES..=1_000_000_000_000))]
    pub timeout_cycles: u64,
    /// Write sweep.json and sweep.svg in this directory (created if
    /// missing; its parent must exist).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the sweep (every point, the failing ones with their class) as
    /// JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write each failing point's hang dump in this directory (created if
    /// missing; its parent must exist): NAME-VALUE.txt (the whole error
    /// with its dump), NAME-VALUE.json and NAME-VALUE.trace.json (every
    /// core's trace ring, for Perfetto).
    #[arg(long)]
    pub dump_dir: Option<PathBuf>,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
}

/// The copy_stress knobs.
#[derive(Clone, Debug, Serialize)]
pub struct Knobs {
    pub depth: u64,
    pub bytes: u64,
    pub issue_size: u64,
    pub completion_size: u64,
    pub fetch_entries: u64,
    pub ring_pages: u64,
    pub cqs: u64,
}

impl Default for Knobs {
    fn default() -> Self {
        let d = DeviceConfig::default();
        Knobs {
            depth: 100,
            bytes: 4096,
            issue_size: d.issue_size as u64,
            completion_size: d.completion_size as u64,
            fetch_entries: d.fetch_entries as u64,
            ring_pages: d.ring_pages as u64,
            cqs: 1,
        }
    }
}

impl Knobs {
    fn set(&mut self, name: &str, v: u64) -> Result<(), UsageError> {
        let slot = match name {
            "depth" => &mut self.depth,
            "bytes" => &mut self.bytes,
            "issue_size" => &mut self.issue_size,
            "completion_size" => &mut self.completion_size,
            "fetch_entries" => &mut self.fetch_entries,
            "ring_pages" => &mut self.ring_pages,
            "cqs" => &mut self.cqs,
            _ => {
                return Err(UsageError(format!(
                    "unknown knob {name:?} (depth, bytes, issue_size, completion_size, fetch_entries, ring_pages, cqs)"
                )))
            }
        };
        *slot = v;
        ensure((1..=1_000_000).contains(&self.depth), || format!("depth {} (1..=1000000)", self.depth))?;
        ensure((1..=1 << 20).contains(&self.bytes), || format!("bytes {} (1..=1048576)", self.bytes))?;
        ensure(self.cqs >= 1 && self.cqs <= cqlab_abi::noc::MAX_CQS as u64, || {
            format!("cqs {} (1..={})", self.cqs, cqlab_abi::noc::MAX_CQS)
        })?;
        for (n, v) in [
            ("issue_size", self.issue_size),
            ("completion_size", self.completion_size),
            ("fetch_entries", self.fetch_entries),
            ("ring_pages", self.ring_pages),
        ] {
            ensure(v <= u32::MAX as u64, || format!("{n} {v} does not fit 32 bits"))?;
        }
        Ok(())
    }

    pub fn device_config(&self, timeout: u64, host_bug: Option<HostBug>) -> DeviceConfig {
        DeviceConfig {
            num_cqs: (self.cqs as u8).max(cqlab_abi::noc::DEFAULT_CQS),
            issue_size: self.issue_size as u32,
            completion_size: self.completion_size as u32,
            fetch_entries: self.fetch_entries as u32,
            ring_pages: self.ring_pages as u32,
            stall_timeout_cycles: timeout,
            host_bug,
            ..Default::default()
        }
    }
}

/// `NAME=V1,V2` or `NAME=A..B[:STEP]`.
pub fn parse_param(spec: &str) -> Result<(String, Vec<u64>), UsageError> {
    let bad = |why: &str| UsageError(format!("--param {spec:?}: {why}"));
    let (name, values) = spec.split_once('=').ok_or_else(|| bad("expected NAME=LIST or NAME=A..B[:STEP]"))?;
    let num = |s: &str| s.trim().parse::<u64>().map_err(|_| bad(&format!("{s:?} is not a number")));
    let list = if let Some((a, rest)) = values.split_once("..") {
        let (b, step) = rest.split_once(':').map_or((rest, "1"), |(b, s)| (b, s));
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        ensure(a <= b && step > 0, || format!("--param {spec:?}: need A <= B and STEP >= 1"))?;
        ensure((b - a) / step < 1_000_000, || format!("--param {spec:?}: more than a million values"))?;
        (a..=b).step_by(step as usize).collect()
    } else {
        values.split(',').map(num).collect::<Result<Vec<_>, _>>()?
    };
    ensure(!list.is_empty(), || format!("--param {spec:?}: no values"))?;
    if let Some(v) = list.iter().enumerate().find_map(|(i, v)| list[..i].contains(v).then_some(v)) {
        return Err(bad(&format!("{v} appears twice (a point would run twice)")));
    }
    Ok((name.trim().to_owned(), list))
}

#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub value: u64,
    pub ok: bool,
    pub signature: Option<String>,
    pub error: Option<String>,
    /// Its failure's class, if it failed (`hang`, `device-error`, ...).
    pub class: Option<FailureClass>,
    /// Device cycles the workload took (a failed point's include the wait
    /// that gave up).
    pub device_cycles: u64,
    /// Device cycles per read (the metric charted); none for a failed
    /// point, whose cycles measure its timeout (helper-31).
    pub cycles_per_read: Option<f64>,
    pub seconds: f64,
    /// A failed point's command that runs it again: alone on a fresh
    /// device, or, when it ran on a device points before it had used,
    /// after those points (alone it might pass: helper-23).
    pub replay: Option<String>,
    /// Points that ran before it on its device (shared without
    /// `--reset-each`), which its replay runs first.
    pub earlier_on_device: usize,
    /// The files `--dump-dir` got for a failed point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dump_files: Vec<PathBuf>,
    /// Why a failed point's `--dump-dir` files could not be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dump_error: Option<String>,
}

/// Runs copy_stress on `dev`.
pub fn copy_stress(dev: &mut Device, k: &Knobs) -> Result<(), Failure> {
    copy_stress_with(dev, k, &mut |_| {})
}

/// copy_stress, calling `enqueued(n)` after the n-th read is enqueued.
pub fn copy_stress_with(dev: &mut Device, k: &Knobs, enqueued: &mut dyn FnMut(u64)) -> Result<(), Failure> {
    let bytes = k.bytes as u32;
    let core = (0, 0);
    let buf = dev.alloc_l1(core.0, core.1, bytes)?;
    let data: Vec<u8> = (0..bytes).map(|i| (i as u8).wrapping_mul(7) ^ 0x5a).collect();
    dev.cq(0)?.write_buffer(&buf, 0, &data)?;
    dev.cq(0)?.finish()?;
    let mut pending = Vec::new();
    for d in 0..k.depth {
        for q in 0..k.cqs as u8 {
            pending.push((d, q, dev.cq(q)?.enqueue_read(&buf, 0, bytes)?));
            enqueued(pending.len() as u64);
        }
    }
    for (d, q, p) in pending {
        let back = dev.complete_read(&p)?;
        if let Some(diff) = first_difference(&data, &back, |_| "the CQ0 write before the reads".into()) {
            return Err(Failure::Check { check: "read-back differs", detail: format!("read {d} on CQ{q}: {diff}") });
        }
    }
    for q in 0..k.cqs as u8 {
        dev.cq(q)?.finish()?;
    }
    // A device reused for the next point has its L1 back.
    dev.free(&buf)?;
    Ok(())
}

struct Sweeper {
    args: Args,
    name: String,
    base: Knobs,
    host_bug: Option<HostBug>,
    shared: Option<Device>,
    /// The values run on `shared` so far, in order: what a failing point's
    /// replay runs before it.
    on_shared: Vec<u64>,
    /// The chip the points ran on, as the first device opened said (board,
    /// harvesting): a daemon's is its own, whatever `--chip` left out.
    chip: Option<(&'static str, String)>,
}

impl Sweeper {
    fn open(&mut self, k: &Knobs) -> Result<Device> {
        let mut cfg = k.device_config(self.args.timeout_cycles, self.host_bug);
        self.args.chip.apply_for(&mut cfg, crate::device::made_here(&self.args.device))?;
        cfg.host_schedule = self.args.host.schedule(0);
        cfg.wait_progress = Some(crate::cli::wait_lines());
        cfg.notes = Some(crate::cli::note_lines());
        let spec = &self.args.device;
        let embedded = embedded_device(spec)?;
        let mut sim = cqlab_driver::backend::spec::sim_config(&cfg, embedded.map_or(0, |(seed, _)| seed));
        if let Some((_, model)) = embedded {
            model.apply(&mut sim);
        }
        let spec = if embedded.is_some() { "embedded" } else { spec.as_str() };
        let mut dev = crate::device::open_for_campaign(spec, sim, cfg, self.args.reset_each).map_err(|e| match e {
            crate::device::Opened::Refused(u) => anyhow::Error::from(u),
            crate::device::Opened::Unavailable(why) => anyhow::anyhow!(why),
        })?;
        dev.boot().map_err(|e| UsageError(format!("boot: {e}")))?;
        self.chip.get_or_insert_with(|| (dev.chip().board().name(), dev.chip().harvesting().to_string()));
        Ok(dev)
    }

    fn point(&mut self, value: u64) -> Result<Point> {
        let mut k = self.base.clone();
        k.set(&self.name, value)?;
        // A knob that shapes the device needs a device of that shape.
        let shape_changes = self.name != "depth" && self.name != "bytes";
        let reuse = !self.args.reset_each && !shape_changes;
        if !reuse || self.shared.is_none() {
            self.shared = Some(self.open(&k)?);
            self.on_shared.clear();
        }
        self.on_shared.push(value);
        let replay = crate::shell::cqlab_line(&self.replay_argv());
        let dev = self.shared.as_mut().expect("opened above");
        let start = Instant::now();
        let t0 = dev.now();
        let outcome = copy_stress(dev, &k);
        if let Err(Failure::Driver(
            e @ (cqlab_driver::DriverError::Invalid(_) | cqlab_driver::DriverError::OutOfRange { .. }),
        )) = &outcome
        {
            return Err(UsageError(format!("{}={value}: the device refuses it: {e}", self.name)).into());
        }
        let cycles = dev.now() - t0;
        let (mut dump_files, mut dump_error) = (Vec::new(), None);
        if let (Err(f), Some(dir)) = (&outcome, &self.args.dump_dir) {
            let identity = serde_json::Map::from_iter([
                ("param".to_owned(), self.name.clone().into()),
                ("value".to_owned(), value.into()),
                ("replay".to_owned(), replay.clone().into()),
            ]);
            // The point is reported whatever becomes of its dump.
            let (stem, run) = (format!("{}-{value}", self.name), format!("{}={value}", self.name));
            (dump_files, dump_error) = crate::dump_files::write_or_warn(dir, &stem, &run, identity, f, Some(dev));
        }
        if outcome.is_err() || !reuse {
            // A failed point leaves the device wedged: the next one boots afresh.
            self.shared = None;
        }
        let reads = (k.depth * k.cqs) as f64;
        let c = outcome.as_ref().err().map(Failure::classify);
        Ok(Point {
            value,
            ok: outcome.is_ok(),
            signature: c.as_ref().map(|c| c.signature.clone()),
            class: c.as_ref().map(|c| c.class),
            error: c.map(|c| c.error),
            device_cycles: cycles,
            cycles_per_read: outcome.is_ok().then_some(cycles as f64 / reads),
            seconds: start.elapsed().as_secs_f64(),
            replay: outcome.is_err().then_some(replay),
            earlier_on_device: self.on_shared.len() - 1,
            dump_files,
            dump_error,
        })
    }

    /// `cqlab` arguments that run the latest point again: the values run
    /// on its device so far, each knob, the device, timeout, host bug,
    /// chip and host schedule written out (so the line replays the point
    /// whatever the defaults become). A point that opened its device runs
    /// alone with `--reset-each` (on a daemon, a reset first).
    fn replay_argv(&self) -> Vec<String> {
        let values = param_values(&self.on_shared);
        let mut v: Vec<String> =
            vec!["sweep".into(), "copy_stress".into(), "--param".into(), format!("{}={values}", self.name)];
        let knobs = serde_json::to_value(&self.base).expect("knobs are plain numbers");
        for (knob, value) in knobs.as_object().into_iter().flatten().filter(|(knob, _)| **knob != self.name) {
            v.extend(["--set".into(), format!("{knob}={value}")]);
        }
        v.extend(["--device".into(), self.args.device.clone()]);
        v.extend(["--timeout-cycles".into(), self.args.timeout_cycles.to_string()]);
        if let Some(bug) = &self.args.host_bug {
            v.extend(["--host-bug".into(), bug.clone()]);
        }
        v.extend(self.args.chip.argv());
        v.extend(self.args.host.argv(0));
        if self.on_shared.len() == 1 {
            v.push("--reset-each".into());
        }
        v
    }
}

/// `values` as `--param` takes them: `A..B:STEP` for three or more in one
/// ascending step (a range's run on one device), else a list.
fn param_values(values: &[u64]) -> String {
    if let [first, second, .., last] = *values {
        let step = second.wrapping_sub(first);
        if second > first && values.windows(2).all(|w| w[1].checked_sub(w[0]) == Some(step)) {
            return format!("{first}..{last}:{step}");
        }
    }
    values.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

fn progress(json: bool, p: &Point, name: &str) {
    if !json {
        diagln!(
            "{name}={}: {}",
            p.value,
            if p.ok { "pass".to_owned() } else { format!("FAIL {}", p.error.clone().unwrap_or_default()) }
        );
    }
}

/// The sweep's checked shape: knob, its values, the fixed knobs, the host bug.
struct Shape {
    name: String,
    values: Vec<u64>,
    base: Knobs,
    host_bug: Option<HostBug>,
}

/// Every value of the sweep, the fixed knobs, the device and the output,
/// checked before the first point runs.
fn shape(args: &Args) -> Result<Shape, UsageError> {
    let (name, values) = parse_param(&args.param)?;
    let mut base = Knobs::default();
    let mut fixed: Vec<&str> = Vec::new();
    for s in &args.set {
        let (n, v) = s.split_once('=').ok_or_else(|| UsageError(format!("--set {s:?}: expected NAME=V")))?;
        let n = n.trim();
        ensure(n != name, || format!("--set {s:?}: {n} is the swept knob (--param {})", args.param))?;
        ensure(!fixed.contains(&n), || format!("--set {s:?}: {n} is set twice"))?;
        fixed.push(n);
        let v = v.trim().parse().map_err(|_| UsageError(format!("--set {s:?}: {v:?} is not a number")))?;
        base.set(n, v).map_err(|e| UsageError(format!("--set {s:?}: {}", e.0)))?;
    }
    for &v in &values {
        // Every value is checked now, not when the sweep reaches it.
        let mut k = base.clone();
        k.set(&name, v).map_err(|e| UsageError(format!("--param {}: {}", args.param, e.0)))?;
        let cfg = k.device_config(args.timeout_cycles, None);
        let refused =
            |why: String| UsageError(format!("--param {}: at {name}={v} the device refuses: {why}", args.param));
        cfg.validate().map_err(|e| refused(e.to_string()))?;
        // The read lands in one worker's L1 user region (as `stress` checks).
        let user = cqlab_abi::memory_map::USER.size as u64;
        ensure(k.bytes <= user, || refused(format!("a read lands in one worker's L1 user region, {user} bytes")).0)?;
        if args.device.starts_with("embedded") {
            // The chip `--chip`/`--harvest` name places every queue count
            // (helper-65: 16 queues on a chip harvested to room for 4 were
            // refused after the points before had run, their results lost).
            let harvesting = args.chip.harvesting()?;
            cqlab_driver::Topology::for_board(args.chip.sim_board(), harvesting, cfg.num_cqs)
                .map_err(|e| refused(e.to_string()))?;
            // The embedded simulator's host memory holds every queue.
            let has = cqlab_driver::backend::spec::sim_config(&cfg, 0).sysmem_size as u64;
            let need = cfg.queue_layout(cfg.num_cqs).base;
            ensure(need <= has, || {
                refused(format!("the queues need {need} bytes of sysmem, the simulator has {has}")).0
            })?;
        }
    }
    base.set(&name, values[0])?;
    let host_bug = match &args.host_bug {
        // The sweep's copy stress sends no programs: a staging bug would
        // change nothing in it.
        Some(b) => Some(HostBug::from_name(b).filter(|&h| h != HostBug::StagedReuseEarly).ok_or_else(|| {
            UsageError(format!(
                "--host-bug {b:?}: the sweep re-creates no-drain, completion-rd-no-toggle or hoisted-pointer-load \
                 (its copy stress sends no programs, so staged-reuse-early would change nothing)"
            ))
        })?),
        None => None,
    };
    crate::device::validate(&args.device, 0)?;
    embedded_device(&args.device)?;
    if let Some(dir) = &args.out {
        crate::output::check("--out", dir, crate::output::Kind::Dir, &[])?;
    }
    if let Some(dir) = &args.dump_dir {
        crate::output::check("--dump-dir", dir, crate::output::Kind::Dir, &[])?;
    }
    Ok(Shape { name, values, base, host_bug })
}

/// On a daemon (`sim:PATH`), whose chip is its own, every point's queue
/// count is placed on that chip before the first point runs; read without
/// attaching (an attach boots the device).
fn daemon_places_every_point(args: &Args, values: &[u64], name: &str, base: &Knobs) -> Result<()> {
    let Some((board, harvesting, sysmem, path)) = crate::device::daemon_chip(&args.device)? else { return Ok(()) };
    for &v in values {
        let mut k = base.clone();
        k.set(name, v)?;
        let cfg = k.device_config(args.timeout_cycles, None);
        let refused = |e: String| {
            UsageError(format!("--param {}: at {name}={v} the device {} refuses: {e}", args.param, args.device))
        };
        cqlab_driver::Topology::for_board(board, Some(harvesting.clone()), cfg.num_cqs)
            .map_err(|e| refused(e.to_string()))?;
        // Its host memory holds every queue (helper-66: refused mid-sweep).
        cfg.check_sysmem(sysmem as u64, &format!("the daemon at {}", path.display()))
            .map_err(|e| refused(e.to_string()))?;
    }
    Ok(())
}

pub fn validate(args: &Args, given: &crate::cli::Given<'_>) -> Result<()> {
    args.chip.validate_for(crate::device::made_here(&args.device))?;
    shape(args)?;
    args.host.validate(given, Some(&args.device))?;
    Ok(())
}

/// `Some(seed)` for `embedded[:seed=N]`, `None` for a daemon.
/// The seed and timing model of an embedded `spec`; `None` for a daemon.
fn embedded_device(spec: &str) -> Result<Option<(u64, Model)>, UsageError> {
    let bad = |why: String| UsageError(format!("--device {spec}: {why}"));
    match Spec::parse(spec).map_err(|e| bad(e.to_string()))? {
        // The sweep's points are the queues' own: slow dispatch has none.
        Spec::Embedded { slow: true, .. } => Err(bad("a sweep runs the command queues; `slow` has none".into())),
        Spec::Embedded { seed, model, .. } => Ok(Some((seed, model))),
        Spec::Daemon { .. } => Ok(None),
        _ => Err(bad(
            "use embedded[:seed=N][,exact][,blocking][,no-contention][,icache][,no-l0][,reads-wait-unsent] or sim:PATH[?wait[=SECS]]"
                .into(),
        )),
    }
}

pub fn run(mut args: Args) -> Result<ExitCode> {
    // Bisection takes each point for itself: what it reports must fail
    // when run alone (helper-23: depth 30 found after other depths passed
    // on one device; alone it passed).
    args.reset_each |= args.bisect;
    let Shape { name, values, base, host_bug } = shape(&args)?;
    daemon_places_every_point(&args, &values, &name, &base)?;
    if let Some(dir) = &args.dump_dir {
        // Before any point: a dump directory that cannot be made stops nothing later.
        crate::output::create_dir("--dump-dir", dir)?;
    }
    let mut s = Sweeper {
        args: args.clone(),
        name: name.clone(),
        base: base.clone(),
        host_bug,
        shared: None,
        on_shared: Vec::new(),
        chip: None,
    };
    let mut points = Vec::new();
    let mut first_failing = None;
    // A point the device refuses (or that cannot open it) stops the sweep:
    // the points before it are still reported, then the error is the
    // command's (helper-66: they were lost).
    let mut stopped: Option<(u64, anyhow::Error)> = None;
    // Bisection runs over the values given, ascending: a list or a range's
    // steps (helper-49: it stepped by 1 past a `:10` grid, and an unsorted
    // list wrapped its arithmetic).
    // (Values are distinct: `--param` refuses one given twice.)
    let mut sorted = values.clone();
    sorted.sort_unstable();
    if args.bisect {
        // Bracket: the first value, then doubling steps, until one fails.
        let last = sorted.len() - 1;
        let (mut last_pass, mut fail) = (None, None);
        let (mut i, mut step) = (0, 1);
        loop {
            let p = match s.point(sorted[i]) {
                Ok(p) => p,
                Err(e) => {
                    stopped = Some((sorted[i], e));
                    break;
                }
            };
            progress(args.json, &p, &name);
            let ok = p.ok;
            points.push(p);
            if !ok {
                fail = Some(i);
                break;
            }
            last_pass = Some(i);
            if i == last {
                break;
            }
            i = (i + step).min(last);
            step *= 2;
        }
        // Bisect between the last pass and the first failure.
        if let (Some(mut good), Some(mut bad)) = (last_pass, fail) {
            while bad - good > 1 {
                let mid = good + (bad - good) / 2;
                let p = match s.point(sorted[mid]) {
                    Ok(p) => p,
                    Err(e) => {
                        stopped = Some((sorted[mid], e));
                        break;
                    }
                };
                progress(args.json, &p, &name);
                if p.ok {
                    good = mid;
                } else {
                    bad = mid;
                }
                points.push(p);
            }
            fail = Some(bad);
        }
        // A bisection cut short found no boundary.
        first_failing = fail.filter(|_| stopped.is_none()).map(|i| sorted[i]);
    } else {
        for &v in &values {
            let p = match s.point(v) {
                Ok(p) => p,
                Err(e) => {
                    stopped = Some((v, e));
                    break;
                }
            };
            progress(args.json, &p, &name);
            // The least value that failed, whatever order they ran in
            // (it was the first in run order, under a table by value).
            if !p.ok && first_failing.is_none_or(|f| v < f) {
                first_failing = Some(v);
            }
            points.push(p);
        }
    }
    let stopped = match stopped {
        Some((_, e)) if points.is_empty() => return Err(e),
        other => other,
    };
    let run_order: Vec<u64> = points.iter().map(|p| p.value).collect();
    points.sort_by_key(|p| p.value);
    let boundary = first_failing.and_then(|v| points.iter().find(|p| p.value == v)).cloned();
    // The knobs held fixed: the swept one is each point's own.
    let mut fixed = serde_json::to_value(&base)?;
    if let Some(knobs) = fixed.as_object_mut() {
        knobs.remove(&name);
    }
    let report = serde_json::json!({
        "workload": "copy_stress", "param": name, "fixed": fixed, "host_bug": args.host_bug,
        // What a rerun needs: the device, its chip, the host's schedule, and
        // whether points shared one device (then the order they ran in
        // matters; the points below are sorted by value).
        "device": args.device, "chip": s.chip.as_ref().map(|c| c.0), "harvesting": s.chip.as_ref().map(|c| &c.1),
        "host": args.host.report(0), "timeout_cycles": args.timeout_cycles, "reset_each": args.reset_each,
        "dump_dir": args.dump_dir,
        "run_order": run_order,
        "bisect": args.bisect, "first_failing": first_failing,
        "boundary_signature": boundary.as_ref().and_then(|b| b.signature.clone()),
        "boundary_error": boundary.as_ref().and_then(|b| b.error.clone()),
        // The error's first line, as `run`'s `failed_point.error` and race
        // signatures take it.
        "stopped": stopped
            .as_ref()
            .map(|(v, e)| serde_json::json!({"value": v, "error": crate::cli::error_headline(e)})),
        "points": points,
    });
    if let Some(dir) = &args.out {
        crate::output::create_dir("--out", dir)?;
        crate::output::write(
            "--out",
            &dir.join("sweep.json"),
            (serde_json::to_string_pretty(&report)? + "\n").as_bytes(),
        )?;
        crate::output::write("--out", &dir.join("sweep.svg"), svg(&name, &points).as_bytes())?;
    }
    if args.json {
        outln!("{report}");
    } else {
        outln!("{}", header(&report));
        outln!("{:>12}  {:<6} {:>14} {:>12}  signature", name, "result", "device cycles", "cycles/read");
        for p in &points {
            outln!(
                "{:>12}  {:<6} {:>14} {:>12}  {}",
                p.value,
                if p.ok { "pass" } else { "FAIL" },
                p.device_cycles,
                p.cycles_per_read.map_or("-".into(), |c| format!("{c:.1}")),
                p.signature.as_deref().unwrap_or("")
            );
        }
        match (&boundary, args.bisect) {
            _ if stopped.is_some() => {
                let v = stopped.as_ref().map(|(v, _)| *v).unwrap_or_default();
                outln!("stopped at {name}={v}, before the sweep ended (the error follows)")
            }
            (Some(b), _) => {
                outln!(
                    "first failing {name}: {} ({})\n  {}",
                    b.value,
                    b.signature.as_deref().unwrap_or(""),
                    b.error.as_deref().unwrap_or("")
                );
                print_replay(b);
            }
            (None, true) => outln!("no failing {name} in {}..={}", sorted[0], sorted.last().expect("non-empty")),
            (None, false) => outln!("no failing {name} among the values swept"),
        }
    }
    if let Some((_, e)) = stopped {
        return Err(e);
    }
    if let Some(dir) = &args.dump_dir {
        let lost = points.iter().filter(|p| p.dump_error.is_some()).count();
        crate::dump_files::fail_if_lost(lost, "point(s)", dir, "the sweep is reported")?;
    }
    Ok(exit_of(&points).into())
}

/// A sweep's exit: the class every failed point shares, or 1 when their
/// classes differ (docs/cli.md), not the boundary's class alone
/// (helper-94: a later point failing otherwise went unsaid).
fn exit_of(points: &[Point]) -> crate::exit::Exit {
    crate::exit::of_failures(points.iter().filter_map(|p| p.class))
}

/// The failing point's replay line and dump files, under its error.
fn print_replay(p: &Point) {
    let Some(replay) = &p.replay else { return };
    match p.earlier_on_device {
        0 => outln!("  replay alone: {replay}"),
        n => outln!("  replay after the {n} point(s) before it on its device (alone it may pass): {replay}"),
    }
    if let Some(first) = p.dump_files.first() {
        let stem = first.with_extension("");
        outln!("  dump and trace: {}.{{txt,json,trace.json}}", stem.display());
    }
}

/// The line above the table: what was swept, on what, with what held
/// fixed, and a host bug injected on purpose (helper-72: without it a
/// no-drain sweep's deadlock read as the driver's).
fn header(report: &serde_json::Value) -> String {
    let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let on = match (report["chip"].as_str(), report["harvesting"].as_str()) {
        (Some(chip), Some(harvest)) => format!(" on {chip} ({harvest})"),
        _ => String::new(),
    };
    let fixed: Vec<String> =
        report["fixed"].as_object().into_iter().flatten().map(|(knob, value)| format!("{knob} {value}")).collect();
    let host = &report["host"];
    let mut line = format!(
        "sweep copy_stress over {}{on}, device {}, fixed {}, timeout {} cycles",
        text(&report["param"]),
        text(&report["device"]),
        fixed.join(", "),
        report["timeout_cycles"]
    );
    if host["jitter_cycles"].as_u64().is_some_and(|j| j > 0) {
        line += &format!(", host jitter {}", host["jitter_cycles"]);
    }
    if host["pct_points"].as_u64().is_some_and(|p| p > 0) {
        line += &format!(", host PCT {} of {}", host["pct_points"], host["pct_steps"]);
    }
    if let Some(bug) = report["host_bug"].as_str() {
        line += &format!(
            "; host bug {bug} injected on purpose (--host-bug): its failures are the re-created bug's, not the driver's"
        );
    }
    line
}

/// Cycles per read against the knob; failing points in red, at the top of
/// the passing ones (they have no figure; at 0 when none passed).
fn svg(name: &str, points: &[Point]) -> String {
    let top = points.iter().filter_map(|p| p.cycles_per_read).fold(0.0, f64::max);
    let points = points
        .iter()
        .map(|p| crate::chart::Point {
            x: p.value as f64,
            y: p.cycles_per_read.unwrap_or(top),
            ok: p.ok,
            label: format!("{name}={}: {}", p.value, if p.ok { "pass" } else { "FAIL" }),
        })
        .collect();
    crate::chart::PointChart {
        title: name.to_owned(),
        x_label: name.to_owned(),
        y_label: "device cycles per read".into(),
        points,
    }
    .render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_lists_or_inclusive_ranges() {
        assert_eq!(parse_param("depth=1..5").unwrap(), ("depth".into(), vec![1, 2, 3, 4, 5]));
        assert_eq!(parse_param("bytes=64..256:64").unwrap().1, vec![64, 128, 192, 256]);
        assert_eq!(parse_param("cqs=1,2").unwrap().1, vec![1, 2]);
        for bad in ["depth", "depth=5..1", "depth=1..9:0", "depth=x", "depth=0..18446744073709551615"] {
            assert!(parse_param(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_sweep_exits_with_the_class_its_failures_share_or_1() {
        use crate::exit::Exit;
        let point = |value, class: Option<FailureClass>| Point {
            value,
            ok: class.is_none(),
            signature: None,
            error: None,
            class,
            device_cycles: 0,
            cycles_per_read: None,
            seconds: 0.0,
            replay: None,
            earlier_on_device: 0,
            dump_files: vec![],
            dump_error: None,
        };
        let (hang, mismatch) = (Some(FailureClass::Hang), Some(FailureClass::Mismatch));
        assert_eq!(exit_of(&[point(1, None), point(2, None)]), Exit::Success);
        assert_eq!(exit_of(&[point(1, None), point(2, hang), point(3, hang)]), FailureClass::Hang.exit());
        assert_eq!(exit_of(&[point(1, None), point(2, hang), point(3, mismatch)]), Exit::Failed);
    }

    #[test]
    fn replayed_values_read_back_as_the_same_list() {
        for values in [vec![194], vec![1, 2, 3, 4], vec![1, 8, 15], vec![9, 1, 5], vec![3, 5], vec![2, 4, 7]] {
            let text = param_values(&values);
            assert_eq!(parse_param(&format!("depth={text}")).unwrap().1, values, "{text}");
        }
        assert_eq!(param_values(&[1, 8, 15, 22]), "1..22:7");
    }
}
