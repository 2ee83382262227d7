//! `cqlab`: the command-line tool for command-queue bring-up work.

#[macro_use]
mod cli;
mod decode;
mod demo;
mod device;
mod driver_bench;
mod matmul;
mod perf;
mod race;
mod schedule;
mod sim;
mod status;

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
    /// Dispatch performance and per-command device-cycle costs.
    Perf(perf::Args),
    /// Host-side driver figures: enqueue rate, bulk copy vs memcpy, event round trip.
    DriverBench(driver_bench::Args),
    /// Matmul on the simulated chip in a tile order: measured vs predicted DRAM bytes.
    Matmul(matmul::Args),
    /// The two-queue stall/dispatch race over many seeds: failure rate and replay commands.
    Race(race::Args),
    /// Print a raw issue-queue dump as a readable command list.
    Decode(decode::Args),
    /// Run firmware on the simulator.
    #[command(subcommand)]
    Sim(sim::Command),
    /// Restore a simulator daemon's device (`cqlab sim serve --dev PATH`) to power-on state.
    Reset(sim::DevArgs),
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Perf(args) => perf::run(args),
        Command::DriverBench(args) => driver_bench::run(args),
        Command::Matmul(args) => matmul::run(args),
        Command::Race(args) => race::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Sim(cmd) => sim::run(cmd),
        Command::Reset(args) => sim::reset(args),
        Command::Schedule(args) => schedule::run(args),
        Command::Status(args) => status::status(args),
        Command::Dump(args) => status::dump(args),
    };
    match result {
        Ok(code) => code,
        // `cqlab decode F | head -1`: the reader has gone, nothing to say.
        Err(e) if cli::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<cli::Usage>().is_some() => {
            eprintln!("error: usage: {e:#}");
            ExitCode::from(cli::EXIT_USAGE)
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
