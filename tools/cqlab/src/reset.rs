//! `cqlab reset --device SPEC`: a device back to a known state, the reset
//! bring-up engineers otherwise reach for `tt-smi -r` for. Each backend gets
//! the reset that is real for it:
//!
//! - tt-kmd (`/dev/tenstorrent/N`, `ttkmd-sim:PATH`): the whole-chip reset
//!   of tt-kmd's own `tools/reset.c` (`TtKmdDevice::reset_sequence`):
//!   ASIC_RESET, the wait for the chip's reset to clear the reset marker,
//!   POST_RESET. tt-kmd moves the device's reset generation, so every other
//!   fd of the device, in any process, answers ENODEV from then on.
//! - a simulator daemon (`sim:PATH`): its power-on reset (time 0, memories
//!   and sysmem zeroed, every core held).
//! - the embedded simulator and a libttsim library live inside each
//!   command's own process and start at power-on every time: nothing of
//!   them outlives a command to be reset, so they are refused, saying so.

use crate::cli::Usage;
use crate::exit::Exit;
use crate::out::outln;
use anyhow::Context;
use cqlab_driver::backend::spec::Spec;
use cqlab_driver::ttkmd::{ResetKind, ResetStep, TtKmdDevice, TtKmdError};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["device", "dev"])))]
pub struct Args {
    /// The device: /dev/tenstorrent/N or ttkmd-sim:PATH (tt-kmd's whole-chip
    /// reset: ASIC_RESET, the wait for the chip, POST_RESET; every other fd
    /// of the device is invalid afterwards), or sim:PATH[?wait[=SECS]] (a
    /// `cqlab sim serve` daemon, back to power-on state).
    #[arg(long)]
    device: Option<String>,
    /// A simulator daemon's directory: the same as --device sim:PATH.
    #[arg(long)]
    dev: Option<PathBuf>,
    /// Print JSON instead of the line.
    #[arg(long)]
    json: bool,
}

/// Refuses, before anything is opened, a spec that does not parse and a
/// backend that has nothing to reset.
pub fn validate(args: &Args) -> anyhow::Result<()> {
    // `--dev` names a directory as it is (a `?` in it is no `?wait`).
    let Some(spec) = &args.device else { return Ok(()) };
    crate::device::validate(spec, 0)?;
    let not_resettable = |what: &str| {
        Usage(format!(
            "--device {spec}: {what} lives inside each command's own process and starts at power-on every time, so \
             nothing of it outlives a command to be reset; reset a device that does: /dev/tenstorrent/N, \
             ttkmd-sim:PATH or sim:PATH"
        ))
    };
    match Spec::parse(spec)? {
        Spec::Embedded { .. } => Err(not_resettable("the embedded simulator").into()),
        Spec::TtSim { .. } => Err(not_resettable("a libttsim library").into()),
        Spec::Daemon { .. } | Spec::TtKmd { .. } | Spec::TtKmdSim { .. } => Ok(()),
    }
}

/// What a reset did, as `--json` gives it.
#[derive(serde::Serialize)]
struct Report {
    /// The spec as given.
    device: String,
    /// `tt-kmd` or `daemon`.
    backend: &'static str,
    /// The reset: tt-kmd's request (`ASIC_RESET`), or `power-on` for a daemon.
    reset: &'static str,
    /// What was done, in order.
    steps: Vec<String>,
    /// The card's PCI address and driver (tt-kmd only).
    pci: Option<String>,
    driver: Option<String>,
    /// From the reset request until the chip had cleared tt-kmd's reset
    /// marker (tt-kmd only).
    waited_for_chip_seconds: Option<f64>,
    /// The whole reset, the open included.
    seconds: f64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    use cqlab_driver::daemon_backend::{DaemonBackend, LockWait};
    let spec = match (&args.device, &args.dev) {
        (Some(spec), _) => spec.clone(),
        (None, Some(dir)) => {
            let report = reset_daemon(&format!("sim:{}", dir.display()), dir, LockWait::No)?;
            return print(&report, args.json);
        }
        (None, None) => return Err(Usage("reset needs --device SPEC (or --dev PATH)".into()).into()),
    };
    let report = match Spec::parse(&spec)? {
        Spec::Daemon { rest } => {
            let (dir, wait) = DaemonBackend::parse_spec(&rest).map_err(|e| Usage(format!("--device {spec}: {e}")))?;
            reset_daemon(&spec, &dir, wait)?
        }
        Spec::TtKmd { path } => match reset_ttkmd(&spec, || TtKmdDevice::open(&path)) {
            Ok(r) => r,
            Err(failure) => return failure.exit(),
        },
        Spec::TtKmdSim { path } => match reset_ttkmd(&spec, || open_simulated(&path)) {
            Ok(r) => r,
            Err(failure) => return failure.exit(),
        },
        // Refused by `validate`; said again rather than assumed.
        Spec::Embedded { .. } | Spec::TtSim { .. } => {
            validate(&args)?;
            return Err(Usage(format!("--device {spec}: nothing to reset")).into());
        }
    };
    print(&report, args.json)
}

fn print(report: &Report, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        outln!("{}", serde_json::to_string_pretty(report)?);
    } else {
        outln!("{}", describe(report));
    }
    Ok(Exit::Success.into())
}

/// The human line of a report.
fn describe(r: &Report) -> String {
    match (&r.pci, &r.driver, r.waited_for_chip_seconds) {
        (Some(pci), Some(driver), Some(waited)) => format!(
            "reset {}, PCI {pci} on {driver}: {} sent, the chip cleared its reset marker {waited:.2} s later, \
             POST_RESET; {:.2} s in all. Every other open fd of the device is invalid now (tt-kmd moved its reset \
             generation): reopen it.",
            r.device, r.reset, r.seconds
        ),
        _ => format!(
            "reset {} to power-on state (time 0, memories and sysmem zeroed, every core held); {:.2} s",
            r.device, r.seconds
        ),
    }
}

/// The power-on reset of the daemon serving `dir`, attached as `wait` says.
fn reset_daemon(
    spec: &str,
    dir: &std::path::Path,
    wait: cqlab_driver::daemon_backend::LockWait,
) -> anyhow::Result<Report> {
    let start = Instant::now();
    let mut dev = cqlab_driver::daemon_backend::DaemonBackend::attach_with(dir, wait)
        .with_context(|| format!("resetting {spec}"))?;
    dev.reset().with_context(|| format!("resetting {spec}"))?;
    Ok(Report {
        device: spec.to_owned(),
        backend: "daemon",
        reset: "power-on",
        steps: vec![
            "attach (every core held, NOC drained)".into(),
            "power-on reset (time 0, memories and sysmem zeroed)".into(),
        ],
        pci: None,
        driver: None,
        waited_for_chip_seconds: None,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Opens the simulated tt-kmd device at `path` (`cqlab sim ttkmd --dev PATH`)
/// as a card's node is opened.
fn open_simulated(path: &str) -> Result<TtKmdDevice, TtKmdError> {
    use cqlab_driver::ttkmd::kernel::OpenFlags;
    let flags = OpenFlags::default();
    let kernel = cqlab_driver::ttkmd::sim_kernel::SimKernel::open_with_flags(std::path::Path::new(path), flags)?;
    TtKmdDevice::with_kernel(Box::new(kernel), flags)
}

/// A tt-kmd reset that failed, with the exit status its class takes.
struct Failure {
    error: anyhow::Error,
    exit: Exit,
}

impl Failure {
    fn exit(self) -> anyhow::Result<ExitCode> {
        crate::cli::report(&crate::out::chain(&self.error));
        Ok(self.exit.into())
    }
}

/// tt-kmd's whole-chip reset of the device `open` opens, with a spinner
/// (on a terminal) while the chip resets. A chip that does not clear the
/// reset marker in time is a hang (exit 3); anything else (held by another
/// process, a card that left the bus, a driver too old) exits 1.
fn reset_ttkmd(spec: &str, open: impl FnOnce() -> Result<TtKmdDevice, TtKmdError>) -> Result<Report, Failure> {
    let failed = |e: TtKmdError| {
        let exit = if matches!(e, TtKmdError::ResetTimeout { .. }) { Exit::Hang } else { Exit::Failed };
        Failure { error: anyhow::Error::from(e).context(format!("resetting {spec}")), exit }
    };
    let start = Instant::now();
    let mut dev = open().map_err(failed)?;
    let kind = ResetKind::AsicReset;
    let spinner = crate::cli::spinner(&format!("sending {}", kind.name()));
    let mut on_step = |step: ResetStep| match step {
        ResetStep::Requested(kind) => spinner.set_message(format!("sending {}", kind.name())),
        // Short, the spec left out: a line wider than the terminal is redrawn as two.
        ResetStep::WaitingForChip { pci, waited, limit } => spinner.set_message(format!(
            "waiting for PCI {pci} to reset ({:.1} s, at most {:.1} s)",
            waited.as_secs_f64(),
            limit.as_secs_f64()
        )),
        ResetStep::PostReset => spinner.set_message("POST_RESET"),
    };
    let done = dev.reset_sequence_with_progress(kind, &mut on_step);
    spinner.finish_and_clear();
    let done = done.map_err(failed)?;
    Ok(Report {
        device: spec.to_owned(),
        backend: "tt-kmd",
        reset: done.kind.name(),
        steps: vec![
            done.kind.name().into(),
            "wait for the chip to clear the reset marker".into(),
            ResetKind::PostReset.name().into(),
        ],
        pci: Some(dev.info().pci_address()),
        driver: Some(dev.version().to_string()),
        waited_for_chip_seconds: Some(done.waited_for_chip.as_secs_f64()),
        seconds: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chip that never clears the marker is a hang; one that left the bus
    /// or a device held elsewhere is exit 1, each with the driver's words.
    #[test]
    fn a_failed_reset_exits_with_its_class() {
        let spec = "/dev/tenstorrent/0";
        let path = PathBuf::from(spec);
        let pci = "0000:01:00.0".to_owned();
        let timeout = TtKmdError::ResetTimeout { path: path.clone(), kind: "ASIC_RESET", pci: pci.clone(), secs: 5 };
        let gone = TtKmdError::ResetReenumerated { path: path.clone(), pci };
        let held = TtKmdError::HeldByPid { path, pid: 4242 };
        for (e, exit, says) in [
            (timeout, Exit::Hang, "is still set after 5 s"),
            (gone, Exit::Failed, "left the bus during the reset"),
            (held, Exit::Failed, "held by pid 4242"),
        ] {
            let Err(f) = reset_ttkmd(spec, || Err(e)) else { panic!("the open failed, the reset did not") };
            assert_eq!(f.exit, exit);
            let text = crate::out::chain(&f.error);
            assert!(text.starts_with("resetting /dev/tenstorrent/0: ") && text.contains(says), "{text}");
        }
    }
}
