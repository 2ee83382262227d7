//! `cqlab decode FILE`.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Raw issue-queue dump.
    pub file: std::path::PathBuf,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not built yet")
}
