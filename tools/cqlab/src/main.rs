//! `cqlab`: the command-line tool for command-queue bring-up work.

mod bench_dispatch;
mod campaign;
mod chart;
mod cli;
mod compare;
mod critical_path;
mod decode;
mod decode_rings;
mod demo;
mod device;
mod driver_bench;
mod exit;
mod matmul;
mod out;
mod perf;
mod profile;
mod race;
mod replay;
mod run;
mod schedule;
mod sim;
mod status;
mod stress;
mod sweep;
mod trace_export;
mod trace_file;
mod trace_summary;
mod usage;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cqlab",
    version,
    about = "Command-queue laboratory: decode, simulate, stress, trace.",
    after_help = cli::EXIT_CODES_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the main job end to end on the embedded simulator.
    Demo(demo::Args),
    /// Benchmarks over many configurations (`bench dispatch`).
    #[command(subcommand)]
    Bench(bench_dispatch::Command),
    /// Dispatch performance and per-command device-cycle costs.
    Perf(perf::Args),
    /// Host-side driver figures: enqueue rate, bulk copy vs memcpy, event round trip.
    DriverBench(driver_bench::Args),
    /// Matmul on the simulated chip in a tile order: measured vs predicted DRAM bytes.
    Matmul(matmul::Args),
    /// A race workload (two-queue or random) over many seeds: failure rate, signatures, replay commands.
    Race(race::Args),
    /// Run a named workload over 1..=8 queues: latency percentiles, throughput, switch overhead, scaling.
    Run(run::Args),
    /// Compare two `cqlab run --json` reports: delta table, exit 1 on a regression beyond the threshold.
    Compare(compare::Args),
    /// Print a raw issue-queue, completion-queue or trace-ring dump as readable records.
    Decode(decode::Args),
    /// Restart fuzzing: a workload in many fresh processes, with kills, timeouts and drift statistics.
    #[command(subcommand)]
    Stress(stress::Command),
    /// Run a workload at each value of one knob, or bisect to the first failing value.
    Sweep(sweep::Args),
    /// Re-run one campaign run from its JSONL record, bit for bit, with its dump and trace.
    Replay(replay::Args),
    /// Campaigns spread over a batch system: Slurm array jobs, merging shard records.
    #[command(subcommand)]
    Campaign(campaign::cli::Command),
    /// Run firmware on the simulator.
    #[command(subcommand)]
    Sim(sim::Command),
    /// Restore a simulator daemon's device (`cqlab sim serve --dev PATH`) to power-on state.
    Reset(sim::DevArgs),
    /// Run traces (`cqlab run --trace RUN`): Perfetto export and the time breakdown.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// GEMM tile-order (dataflow) DRAM traffic analysis.
    Schedule(schedule::Args),
    /// Who holds a live device, its cycle, each core's waypoint, PC,
    /// firmware and last trace record, queue pointers and outstanding work.
    /// Read-only: works in the middle of another client's run.
    Status(status::StatusArgs),
    /// The full hang dump of a live device, without waiting for a timeout
    /// (read-only, like status).
    Dump(status::DumpArgs),
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Chrome trace-event JSON for ui.perfetto.dev (streamed, bounded memory).
    Export(trace_export::ExportArgs),
    /// Time by phase per iteration, critical path and top waits: read this before any fix.
    Summary(trace_summary::SummaryArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Bench(cmd) => bench_dispatch::run(cmd),
        Command::Perf(args) => perf::run(args),
        Command::DriverBench(args) => driver_bench::run(args),
        Command::Matmul(args) => matmul::run(args),
        Command::Race(args) => race::run(args),
        Command::Run(args) => run::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Stress(cmd) => stress::run(cmd),
        Command::Sweep(args) => sweep::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Campaign(cmd) => campaign::cli::run(cmd),
        Command::Sim(cmd) => sim::run(cmd),
        Command::Reset(args) => sim::reset(args),
        Command::Schedule(args) => schedule::run(args),
        Command::Status(args) => status::status(args),
        Command::Dump(args) => status::dump(args),
        Command::Trace(TraceCommand::Export(args)) => trace_export::run_export(args),
        Command::Trace(TraceCommand::Summary(args)) => trace_summary::run_summary(args),
    };
    match result {
        Ok(code) => code,
        // `cqlab decode F | head -1`: the reader has gone, nothing to say.
        Err(e) if cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<usage::UsageError>().is_some() => {
            eprintln!("error: {e:#}");
            ExitCode::from(usage::USAGE_EXIT)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::of_error(&e)
        }
    }
}
