//! `cqlab`: the command-line tool for command-queue bring-up work.
//!
//! [`main_with`] is the whole program: parse, check, run, exit status.
//! [`check`] is its first half alone (parse and check an argument vector,
//! run nothing, touch nothing), for the tests and the fuzzer.
// Report output goes through `out` (a closed pipe or a full disk is an
// error with a status, never a panic): no `println!` anywhere.
#![deny(clippy::print_stdout)]

mod args;
mod bench_dispatch;
mod calibrate;
mod campaign;
mod chart;
mod chip;
pub mod cli;
mod compare;
mod critical_path;
mod decode;
mod decode_rings;
mod demo;
mod device;
mod driver_bench;
mod dump_files;
pub mod exit;
mod goldens;
mod input;
mod matmul;
mod model;
mod out;
mod output;
mod perf;
mod profile;
/// Public for the tests that run one race seed with a host mutant.
#[doc(hidden)]
pub mod race;
mod replay;
mod reset;
mod run;
mod schedule;
mod shell;
mod sim;
mod status;
mod stress;
mod sweep;
mod sysmem_pages;
mod trace_export;
mod trace_file;
mod trace_summary;
mod usage;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use cli::Given;
use exit::Exit;
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cqlab",
    version,
    about = "Command-queue laboratory: decode, simulate, stress, trace.",
    after_help = exit::EXIT_CODES_HELP
)]
pub struct Cli {
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
    /// The timing model beside published Wormhole/Blackhole measurements: microbenchmarks, ratios, sources.
    Calibrate(calibrate::Args),
    /// Host-side driver figures: enqueue rate, bulk copy vs memcpy, event round trip.
    DriverBench(driver_bench::Args),
    /// Matmul on the simulated chip in a tile order: measured vs predicted DRAM bytes.
    Matmul(matmul::Args),
    /// A race workload (two-queue, random or programs) over many seeds: failure rate, signatures, replay commands.
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
    /// Re-run one campaign run from its JSONL record, bit for bit (a race record with its dump and trace).
    Replay(replay::Args),
    /// Campaigns spread over a batch system: Slurm array jobs, merging shard records.
    #[command(subcommand)]
    Campaign(campaign::cli::Command),
    /// Run firmware on the simulator.
    #[command(subcommand)]
    Sim(sim::Command),
    /// Reset a device: tt-kmd's whole-chip reset (/dev/tenstorrent/N,
    /// ttkmd-sim:PATH), or a simulator daemon back to power-on state (sim:PATH).
    Reset(reset::Args),
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
    /// Time by phase per iteration, critical path and top waits: read this
    /// before any fix.
    ///
    /// Busy time goes to the first of kernel > dispatch >
    /// relay > fetch > completion > host enqueue > waits that some core was
    /// doing; the critical path walks back from each iteration's completion
    /// through what each step waited on.
    Summary(trace_summary::SummaryArgs),
}

impl Command {
    /// Everything that can be checked before any work starts: ranges that
    /// depend on other options, conflicting options, coordinates against
    /// the grid, input and output paths. Reads no file's contents, creates
    /// nothing, opens no device.
    fn validate(&self, given: &Given<'_>) -> anyhow::Result<()> {
        match self {
            Command::Demo(a) => demo::validate(a),
            Command::Bench(c) => bench_dispatch::validate(c),
            Command::Perf(a) => perf::validate(a),
            Command::Calibrate(a) => calibrate::validate(a),
            Command::DriverBench(a) => driver_bench::validate(a),
            Command::Matmul(a) => matmul::validate(a),
            Command::Race(a) => race::validate(a, given),
            Command::Run(a) => run::validate(a, given),
            Command::Compare(a) => compare::validate(a),
            Command::Decode(a) => decode::validate(a, given),
            Command::Stress(c) => stress::validate(c, given),
            Command::Sweep(a) => sweep::validate(a, given),
            Command::Replay(a) => replay::validate(a),
            Command::Campaign(c) => campaign::cli::validate(c),
            Command::Sim(c) => sim::validate(c),
            Command::Reset(a) => reset::validate(a),
            Command::Schedule(a) => schedule::validate(a),
            Command::Status(a) => status::validate_spec(&a.device),
            Command::Dump(a) => status::validate_spec(&a.device),
            Command::Trace(TraceCommand::Export(a)) => trace_export::validate(a),
            Command::Trace(TraceCommand::Summary(a)) => trace_summary::validate(a),
        }
    }

    fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            Command::Demo(args) => demo::run(args),
            Command::Bench(cmd) => bench_dispatch::run(cmd),
            Command::Perf(args) => perf::run(args),
            Command::Calibrate(args) => calibrate::run(args),
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
            Command::Reset(args) => reset::run(args),
            Command::Schedule(args) => schedule::run(args),
            Command::Status(args) => status::status(args),
            Command::Dump(args) => status::dump(args),
            Command::Trace(TraceCommand::Export(args)) => trace_export::run_export(args),
            Command::Trace(TraceCommand::Summary(args)) => trace_summary::run_summary(args),
        }
    }
}

/// What [`check`] decided about an argument vector.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Parsed and checked: `cqlab` would start the work.
    Runs,
    /// `--help`, `--version` or a help subcommand: text, exit 0.
    Informs,
    /// Refused before any work, with the exit status and the message.
    Refused { status: u8, message: String },
}

/// A parsed and checked command line, with what the user set explicitly.
struct Parsed {
    command: Command,
}

fn parse(argv: impl IntoIterator<Item = OsString>) -> Result<Parsed, clap::Error> {
    let matches = Cli::command().try_get_matches_from(argv)?;
    let cli = Cli::from_arg_matches(&matches)?;
    let given = Given::new(&matches);
    cli.command.validate(&given).map_err(|e| {
        // Carried as a clap error so both kinds of refusal leave one way.
        clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{}\n", out::chain(&e)))
    })?;
    Ok(Parsed { command: cli.command })
}

/// Parses and checks `argv` (program name first) as `cqlab` would, and
/// runs nothing.
pub fn check(argv: impl IntoIterator<Item = OsString>) -> Verdict {
    match parse(argv) {
        Ok(_) => Verdict::Runs,
        Err(e) if !e.use_stderr() => Verdict::Informs,
        Err(e) => Verdict::Refused { status: Exit::Usage.code(), message: e.render().to_string() },
    }
}

/// How many runs the campaign `argv` (program name first) has: `race`'s
/// seeds, `stress restart`'s runs; `None` for any other command, or one
/// that does not parse.
pub fn campaign_runs(argv: impl IntoIterator<Item = OsString>) -> Option<u64> {
    match Cli::try_parse_from(argv).ok()?.command {
        Command::Race(a) => Some(a.seeds),
        Command::Stress(stress::Command::Restart(a)) => Some(a.runs),
        _ => None,
    }
}

/// The whole program on `argv` (program name first): its exit status.
pub fn main_with(argv: impl IntoIterator<Item = OsString>) -> ExitCode {
    let parsed = match parse(argv) {
        Ok(p) => p,
        Err(e) if !e.use_stderr() => {
            // Help or version text: on stdout, which may be closed.
            out::outln!("{}", e.render().to_string().trim_end());
            return out::finish(Exit::Success.into());
        }
        Err(e) => {
            let text = e.render().to_string();
            cli::report(text.trim_end().trim_start_matches("error: "));
            return Exit::Usage.into();
        }
    };
    let status = match parsed.command.run() {
        Ok(code) => code,
        Err(e) => {
            cli::report(&out::chain(&e));
            exit::of_error(&e).into()
        }
    };
    out::finish(status)
}
