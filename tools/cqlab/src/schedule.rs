//! `cqlab schedule`: GEMM dataflow analysis.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cqlab schedule` is not built yet (issue 6)")
}
