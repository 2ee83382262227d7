//! `cqlab sim ...`: the simulator's subcommands.

use std::process::ExitCode;

#[derive(clap::Subcommand)]
pub enum Command {}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {}
}
