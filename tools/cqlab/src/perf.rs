//! `cqlab perf`: dispatch figures the way tt-metal's dispatch benchmarks
//! report them (device cycles and microseconds per program, empty kernels,
//! with and without trace), plus per-command device-cycle costs measured
//! from the prefetcher's and dispatcher's trace rings.

use crate::out::outln;
use anyhow::Result;
use cqlab_abi::decode::Space;
use cqlab_abi::prefetch::PrefetchCmdId;
use cqlab_abi::trace::TraceRecord;
use cqlab_driver::{Device, DeviceConfig};
use cqlab_workloads::analysis::{command_name, Tally};
use cqlab_workloads::command_spans::CommandSpans;
use std::collections::BTreeMap;
use std::process::ExitCode;

/// Most programs per measurement (three measurements run).
pub const MAX_PROGRAMS: u32 = 1_000_000;

#[derive(clap::Args)]
pub struct Args {
    /// Programs (launches of the noop kernel) per measurement (1..=1000000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=MAX_PROGRAMS as i64))]
    pub programs: u32,
    /// Common runtime arguments per program (0..=256).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=256))]
    pub args: u16,
    /// Simulator seed.
    #[arg(long, default_value_t = 1, value_parser = crate::cli::seed)]
    pub seed: u64,
    /// Device to measure: embedded[:WORDS] (the default embedded; the
    /// slow-dispatch row runs on a second embedded chip of the same seed
    /// and model), or any other spec of
    /// docs/backends.md (sim:PATH, ttkmd-sim:PATH, ttsim:LIBRARY,
    /// /dev/tenstorrent/N).
    #[arg(long, default_value = "embedded")]
    pub device: String,
    #[command(flatten)]
    pub limits: crate::cli::Limits,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
    /// Print one JSON object (every row, the chip, the seed) instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn validate(a: &Args) -> Result<()> {
    a.chip.validate_for(crate::device::made_here(&a.device))?;
    crate::device::validate(&a.device, 0)?;
    // Its programs replay from a captured trace, which slow dispatch has not.
    if let Ok(cqlab_driver::backend::spec::Spec::Embedded { slow: true, .. }) =
        cqlab_driver::backend::spec::Spec::parse(&a.device)
    {
        return Err(crate::cli::Usage(format!(
            "--device {}: perf replays traces, which need fast dispatch (leave out `slow`)",
            a.device
        ))
        .into());
    }
    Ok(())
}

/// Programs per captured trace (a trace replays many programs, as
/// tt-metal's traced pgm_dispatch does; `cqlab bench dispatch` sizes it to fit).
const TRACE_PROGRAMS: u32 = 100;

struct Figure {
    mode: &'static str,
    trace: bool,
    /// Programs measured: the traced row rounds up to whole traces.
    programs: u32,
    cycles_per_program: f64,
    /// `None`: the backend cannot tell the host's time from the device's,
    /// or the host dispatches (slow dispatch waits for the device).
    host_enqueue_us_per_program: Option<f64>,
}

fn measure(
    dev: &mut Device,
    programs: u32,
    args: &[u32],
    trace: bool,
    // Made at its first use: it holds twice the last-level cache.
    copy: &mut Option<crate::bench_dispatch::CopyBound>,
    progress: &indicatif::ProgressBar,
) -> Result<Figure> {
    let all = dev.chip().grid();
    let per = programs_per_enqueue(programs, trace);
    let tr = if trace {
        let mut cq = dev.cq(0)?;
        cq.begin_trace()?;
        for _ in 0..per {
            cq.launch(all, args)?;
        }
        let t = cq.end_trace()?;
        cq.finish()?;
        Some(t)
    } else {
        None
    };
    let enqueue = |cq: &mut cqlab_driver::CommandQueue<'_>| match &tr {
        Some(t) => cq.execute_trace(t),
        None => cq.launch(all, args),
    };
    let programs = measured_programs(programs, trace);
    // Host enqueue cost as `bench dispatch` measures it: batches that fit
    // the queues, the time the simulator ran at the host's accesses left
    // out, a batch in which the host waited refused (a fixed batch of 100
    // counted simulated device time as host time: 6.6 us a program at 10
    // programs, 356 at 16). Only where the backend tells the host's time
    // from the device's (the embedded simulator's fast dispatch).
    let host = if dev.backend().introspect().and_then(|i| i.host_clock()).is_some() && !dev.config().slow_dispatch {
        let copy = copy.get_or_insert_with(crate::bench_dispatch::CopyBound::new);
        let t = crate::bench_dispatch::host_time(dev, copy, per, 1, |cq, _| enqueue(cq))?;
        Some(t.us_per_program)
    } else {
        None
    };
    // Device cost: first enqueue (or replay) to finish, over all programs.
    let c0 = dev.now();
    let mut cq = dev.cq(0)?;
    for _ in 0..programs / per {
        enqueue(&mut cq)?;
        progress.inc(per as u64);
    }
    cq.finish()?;
    Ok(Figure {
        mode: if dev.config().slow_dispatch { "slow" } else { "fast" },
        trace,
        programs,
        cycles_per_program: (dev.now() - c0) as f64 / programs as f64,
        host_enqueue_us_per_program: host,
    })
}

/// Programs one enqueue runs: a whole trace, or one launch.
fn programs_per_enqueue(programs: u32, trace: bool) -> u32 {
    if trace {
        TRACE_PROGRAMS.min(programs)
    } else {
        1
    }
}

/// Programs a row measures for `--programs programs`: whole traces, so the
/// traced row of 101 runs 200 (a second, shorter trace would time a
/// different replay).
fn measured_programs(programs: u32, trace: bool) -> u32 {
    let per = programs_per_enqueue(programs, trace);
    programs.div_ceil(per) * per
}

/// Count and total/min/max cycles of each command, from its start record to
/// its end record on one core's trace ring. Paired as `cqlab run` pairs them:
/// a prefetcher's EXEC_BUF stays open around the commands it replays.
fn command_costs(records: &[TraceRecord], space: Space) -> BTreeMap<&'static str, Tally> {
    let mut spans = CommandSpans::default();
    let mut costs: BTreeMap<&'static str, Tally> = BTreeMap::new();
    for (id, cycles) in records.iter().filter_map(|r| spans.record(r)) {
        costs.entry(command_name(space, id)).or_default().add(cycles);
    }
    costs
}

pub fn run(args: Args) -> Result<ExitCode> {
    // Any embedded spec (`embedded:seed=1`, `embedded:exact`), not only the
    // bare word (helper-53: those lost the slow row).
    let embedded = crate::device::made_here(&args.device);
    let mut cfg = DeviceConfig::default();
    args.limits.apply(&mut cfg);
    args.chip.apply_for(&mut cfg, embedded)?;
    crate::device::note_unused_seed(&args.device, args.seed);
    let mut dev = crate::device::open(&args.device, args.seed, 0, cfg.clone())?;
    dev.boot()?;
    let rt: Vec<u32> = (0..args.args as u32).collect();
    let slow_row = if embedded { args.programs as u64 } else { 0 };
    let total = args.programs as u64 + measured_programs(args.programs, true) as u64 + slow_row;
    let progress = crate::cli::progress(total, "perf programs");
    let mut copy = None;
    let mut figures = vec![
        measure(&mut dev, args.programs, &rt, false, &mut copy, &progress)?,
        measure(&mut dev, args.programs, &rt, true, &mut copy, &progress)?,
    ];
    let (prefetcher, dispatcher) = (dev.chip().prefetcher(0), dev.chip().dispatcher(0));
    let pre = command_costs(&dev.read_trace(prefetcher)?.records, Space::Prefetch);
    let dis = command_costs(&dev.read_trace(dispatcher)?.records, Space::Dispatch);
    if embedded {
        // Slow dispatch on the same seed and model: the host writes launches through the BAR.
        let mut slow = crate::device::open(&args.device, args.seed, 0, DeviceConfig { slow_dispatch: true, ..cfg })?;
        slow.boot()?;
        figures.push(measure(&mut slow, args.programs, &rt, false, &mut copy, &progress)?);
    }
    progress.finish_and_clear();
    let cores = dev.chip().worker_count();
    let clock_hz = dev.chip().layout().clock_hz();
    if args.json {
        let figs: Vec<_> = figures
            .iter()
            .map(|f| {
                serde_json::json!({"dispatch": f.mode, "trace": f.trace, "programs": f.programs,
                "device_cycles_per_program": f.cycles_per_program,
                "us_per_program": f.cycles_per_program * 1e6 / clock_hz as f64,
                "host_enqueue_us_per_program": f.host_enqueue_us_per_program})
            })
            .collect();
        let costs = |m: &BTreeMap<&'static str, Tally>| -> Vec<serde_json::Value> {
            m.iter()
                .map(|(k, t)| {
                    serde_json::json!({"command": k, "count": t.count,
                "mean_cycles": t.mean(), "min_cycles": t.min_cycles, "max_cycles": t.max_cycles})
                })
                .collect()
        };
        outln!(
            "{}",
            serde_json::json!({"programs": args.programs, "cores": cores, "kernel": "noop", "runtime_args": args.args,
                "chip": dev.chip().board().name(), "harvesting": dev.chip().harvesting().to_string(), "clock_hz": clock_hz,
                "device": args.device, "slow_dispatch_row": embedded,
                "seed": cqlab_workloads::runner::device_seed(&args.device, args.seed),
                "sysmem_pages": crate::sysmem_pages::json(),
                "dispatch": figs, "prefetch_commands": costs(&pre), "dispatch_commands": costs(&dis)})
        );
        return Ok(ExitCode::SUCCESS);
    }
    let device = match args.device.as_str() {
        "embedded" => "the embedded simulator".to_owned(),
        spec if embedded => format!("the embedded simulator {spec}"),
        spec => format!("device {spec}"),
    };
    outln!(
        "dispatch: {} programs, noop kernel on {cores} cores, {} runtime args, {device}: {} ({}) at {:.2} GHz",
        args.programs,
        args.args,
        dev.chip().board(),
        dev.chip().harvesting(),
        clock_hz as f64 / 1e9
    );
    outln!(
        "{:<9} {:<6} {:>9} {:>16} {:>14} {:>20}",
        "dispatch",
        "trace",
        "programs",
        "cycles/program",
        "us/program",
        "host enqueue us/prog"
    );
    for f in &figures {
        let host = f.host_enqueue_us_per_program.map_or("n/a".to_owned(), |us| format!("{us:.3}"));
        outln!(
            "{:<9} {:<6} {:>9} {:>16.0} {:>14.3} {:>20}",
            f.mode,
            if f.trace { "yes" } else { "no" },
            f.programs,
            f.cycles_per_program,
            f.cycles_per_program * 1e6 / clock_hz as f64,
            host
        );
    }
    if let Some(f) = figures.iter().find(|f| f.programs != args.programs) {
        outln!("(the traced row replays whole {TRACE_PROGRAMS}-program traces: {} programs)", f.programs);
    }
    if !embedded {
        outln!("(no slow-dispatch row: it runs on a second embedded chip, so only with --device embedded[:WORDS])");
        outln!("(host enqueue n/a: this device cannot tell the host's time from its own)");
    } else {
        outln!("(host enqueue n/a for slow dispatch: the host dispatches, waiting for the device)");
    }
    if let Some(line) = crate::sysmem_pages::line() {
        outln!("{line}");
    }
    for (title, m) in [("CQ0 prefetcher", &pre), ("CQ0 dispatcher", &dis)] {
        let held: u64 = m.values().map(|t| t.count).sum();
        outln!(
            "\n{title}: device cycles per command, over the {held} its trace ring still held at the end (the ring \
             keeps the newest: the run's last commands)"
        );
        outln!("{:<22} {:>7} {:>10} {:>8} {:>8}", "command", "count", "mean", "min", "max");
        for (k, t) in m {
            let mean = t.mean().unwrap_or_default();
            outln!("{:<22} {:>7} {:>10.0} {:>8} {:>8}", k, t.count, mean, t.min_cycles, t.max_cycles);
        }
        if m.contains_key(PrefetchCmdId::ExecBuf.name()) {
            outln!("(EXEC_BUF's cycles run around the commands it replays, which also count in their own rows)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::prefetch::PrefetchCmdId::{ExecBuf, ExecBufEnd, RelayInline};
    use cqlab_abi::trace::TraceKind::{self, CmdEnd, CmdStart};

    fn rec(kind: TraceKind, id: PrefetchCmdId, cycle: u64) -> TraceRecord {
        TraceRecord { kind: kind as u16, arg0: id as u32, cycle, ..Default::default() }
    }

    /// A replay as the prefetcher traces it: EXEC_BUF's start, each
    /// replayed command's start and end (EXEC_BUF_END last), EXEC_BUF's end.
    /// The table has EXEC_BUF once, from its start to its end (helper-97:
    /// it kept only the last start, so EXEC_BUF never closed).
    #[test]
    fn the_prefetcher_table_has_exec_buf_around_its_replayed_commands() {
        let records = [
            rec(CmdStart, ExecBuf, 1000),
            rec(CmdStart, RelayInline, 1010),
            rec(CmdEnd, RelayInline, 1300),
            rec(CmdStart, ExecBufEnd, 1310),
            rec(CmdEnd, ExecBufEnd, 1360),
            rec(CmdEnd, ExecBuf, 1361),
        ];
        let costs = command_costs(&records, Space::Prefetch);
        let table: Vec<_> = costs.iter().map(|(k, t)| (*k, t.count, t.total_cycles)).collect();
        assert_eq!(table, [("EXEC_BUF", 1, 361), ("EXEC_BUF_END", 1, 50), ("RELAY_INLINE", 1, 290)]);
    }
}
