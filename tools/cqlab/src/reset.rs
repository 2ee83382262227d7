//! `cqlab reset --device SPEC`: a device back to a known state, the reset
//! bring-up engineers otherwise reach for `tt-smi -r` for. Each backend gets
//! the reset that is real for it:
//!
//! - tt-kmd (`/dev/tenstorrent/N`, `ttkmd-sim:PATH`): the whole-chip reset
//!   of tt-kmd's own `tools/reset.c` (`TtKmdDevice::reset_sequence`):
//!   ASIC_RESET, the wait for the chip's reset to clear the reset marker,
//!   POST_RESET from a new open of the device. Refused while another
//!   process has the device open (an `O_EXCL` open on tt-kmd 2.10.0 and
//!   later, its `pids` file before). From tt-kmd 2.6.0 on, a reset moves the
//!   device's reset generation, so every fd of the device opened before it,
//!   in any process, answers ENODEV from then on. SIGINT, SIGTERM and
//!   SIGHUP are held from ASIC_RESET until POST_RESET: a card left between
//!   them refuses every open until `tt-smi -r`. `--dmc` sends ASIC_DMC_RESET
//!   instead (`tools/reset.c --dmc`, tt-kmd 2.4.0 and later, as ASIC_RESET):
//!   the board's management controller is reset with the chip, and the chip
//!   is waited for 10 s instead of 5. The simulated tt-kmd answers it as
//!   `chardev.c` does, the same sequence as ASIC_RESET; the simulator has no
//!   management controller, so its chip resets as for ASIC_RESET.
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
use cqlab_driver::ttkmd::kernel::OpenFlags;
use cqlab_driver::ttkmd::{ResetKind, ResetStep, TtKmdDevice, TtKmdError};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["device", "dev"])))]
pub struct Args {
    /// The device: /dev/tenstorrent/N or ttkmd-sim:PATH (tt-kmd's whole-chip
    /// reset: ASIC_RESET, the wait for the chip, POST_RESET from a new open;
    /// refused while another process has the device open; from tt-kmd 2.6.0
    /// on, every fd opened before it is invalid afterwards), or
    /// sim:PATH[?wait[=SECS]] (a `cqlab sim serve` daemon, back to power-on
    /// state).
    #[arg(long)]
    device: Option<String>,
    /// A simulator daemon's directory: the same as --device sim:PATH.
    #[arg(long)]
    dev: Option<PathBuf>,
    /// tt-kmd's ASIC_DMC_RESET instead of ASIC_RESET: the board's management
    /// controller (DMC) is reset with the chip, as `tt-kmd/tools/reset.c
    /// --dmc` does; the chip is then waited for up to 10 s instead of 5
    /// (tt-kmd 2.4.0 and later; a tt-kmd device only).
    #[arg(long)]
    dmc: bool,
    /// Print JSON instead of the line.
    #[arg(long)]
    json: bool,
}

/// Refuses, before anything is opened, a spec that does not parse and a
/// backend that has nothing to reset.
pub fn validate(args: &Args) -> anyhow::Result<()> {
    let no_dmc = |what: &str| {
        Usage(format!(
            "--dmc: {what} has no board management controller; --dmc asks tt-kmd to reset a card's (ASIC_DMC_RESET): \
             --device /dev/tenstorrent/N or ttkmd-sim:PATH"
        ))
    };
    // `--dev` names a directory as it is (a `?` in it is no `?wait`).
    let Some(spec) = &args.device else {
        return if args.dmc { Err(no_dmc("a simulator daemon (--dev)").into()) } else { Ok(()) };
    };
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
        Spec::Daemon { .. } if args.dmc => Err(no_dmc(&format!("--device {spec}, a simulator daemon,")).into()),
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
    /// The reset: tt-kmd's request (`ASIC_RESET`, or `ASIC_DMC_RESET` with
    /// `--dmc`), or `power-on` for a daemon.
    reset: &'static str,
    /// What was done, in order.
    steps: Vec<String>,
    /// The card's PCI address and driver (tt-kmd only).
    pci: Option<String>,
    driver: Option<String>,
    /// The node POST_RESET was sent on: the device's node now, another
    /// `/dev/tenstorrent/N` if the card re-enumerated (tt-kmd only).
    node: Option<String>,
    /// Whether every fd of the device opened before the reset answers
    /// ENODEV now (tt-kmd 2.6.0 and later move the reset generation; 2.4.x
    /// and 2.5.x have none). Null on a daemon.
    other_fds_invalidated: Option<bool>,
    /// A stop signal that arrived between ASIC_RESET and POST_RESET, held
    /// until the reset was complete (tt-kmd only; it then ends the command).
    held_signal: Option<&'static str>,
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
            validate(&args)?;
            let report = reset_daemon(&format!("sim:{}", dir.display()), dir, LockWait::No)?;
            return print(&report, args.json);
        }
        (None, None) => return Err(Usage("reset needs --device SPEC (or --dev PATH)".into()).into()),
    };
    let kind = if args.dmc { ResetKind::AsicDmcReset } else { ResetKind::AsicReset };
    let report = match Spec::parse(&spec)? {
        Spec::Daemon { .. } if args.dmc => {
            validate(&args)?;
            return Err(Usage(format!("--device {spec}: --dmc is tt-kmd's")).into());
        }
        Spec::Daemon { rest } => {
            let (dir, wait) = DaemonBackend::parse_spec(&rest).map_err(|e| Usage(format!("--device {spec}: {e}")))?;
            reset_daemon(&spec, &dir, wait)?
        }
        Spec::TtKmd { path } => {
            return finish_ttkmd(
                reset_ttkmd(&spec, kind, || TtKmdDevice::open_with_flags(&path, RESET_OPEN), &mut |_| {}),
                args.json,
            )
        }
        Spec::TtKmdSim { path } => {
            return finish_ttkmd(reset_ttkmd(&spec, kind, || open_simulated(&path), &mut |_| {}), args.json)
        }
        // Refused by `validate`; said again rather than assumed.
        Spec::Embedded { .. } | Spec::TtSim { .. } => {
            validate(&args)?;
            return Err(Usage(format!("--device {spec}: nothing to reset")).into());
        }
    };
    print(&report, args.json)
}

/// Prints a tt-kmd reset's report or failure; a stop signal held during
/// the reset then ends the command, as it would have without the hold
/// (the report written first).
fn finish_ttkmd(done: Result<(Report, Option<Signal>), Failure>, json: bool) -> anyhow::Result<ExitCode> {
    let (code, held) = match done {
        Ok((report, held)) => (print(&report, json)?, held),
        Err(failure) => {
            let held = failure.held;
            (failure.exit()?, held)
        }
    };
    if let Some(signal) = held {
        crate::out::finish(code);
        let _ = nix::sys::signal::raise(signal);
    }
    Ok(code)
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
        (Some(pci), Some(driver), Some(waited)) => {
            let node = match &r.node {
                Some(node) if !r.device.ends_with(node.as_str()) => format!(" on {node}, as the card came back"),
                _ => String::new(),
            };
            let others = if r.other_fds_invalidated == Some(true) {
                "Every fd of the device opened before the reset is invalid now (tt-kmd moved its reset generation): \
                 reopen it."
            } else {
                "This tt-kmd has no reset generation (2.6.0 brought it): fds opened before the reset stay open, on \
                 a chip that was reset under them."
            };
            let held = r.held_signal.map_or_else(String::new, |s| {
                format!(" {s} arrived during the reset and was held until POST_RESET had been sent; it ends cqlab now.")
            });
            format!(
                "reset {}, PCI {pci} on {driver}: {} sent, the chip cleared its reset marker {waited:.2} s later, \
                 POST_RESET{node}; {:.2} s in all. {others}{held}",
                r.device, r.reset, r.seconds
            )
        }
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
        node: None,
        other_fds_invalidated: None,
        held_signal: None,
        waited_for_chip_seconds: None,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// How a reset opens the device: exclusive (`O_EXCL`), so that tt-kmd 2.10.0
/// and later refuse it while any other fd of the device is open (older
/// drivers ignore the flag: [`TtKmdDevice::refuse_other_users`] asks their
/// `pids` file instead).
const RESET_OPEN: OpenFlags = OpenFlags { power_aware: true, exclusive: true };

/// Opens the simulated tt-kmd device at `path` (`cqlab sim ttkmd --dev PATH`)
/// as a card's node is opened for a reset.
fn open_simulated(path: &str) -> Result<TtKmdDevice, TtKmdError> {
    let kernel = cqlab_driver::ttkmd::sim_kernel::SimKernel::open_with_flags(std::path::Path::new(path), RESET_OPEN)?;
    TtKmdDevice::with_kernel(Box::new(kernel), RESET_OPEN)
}

/// A tt-kmd reset that failed, with the exit status its class takes.
struct Failure {
    error: anyhow::Error,
    exit: Exit,
    /// A stop signal held during the reset (see [`HeldStopSignals`]).
    held: Option<Signal>,
}

impl Failure {
    fn exit(self) -> anyhow::Result<ExitCode> {
        crate::cli::report(&crate::out::chain(&self.error));
        Ok(self.exit.into())
    }
}

/// SIGINT, SIGTERM and SIGHUP held (blocked, and read from a signalfd)
/// while a reset is between ASIC_RESET and POST_RESET: a Ctrl-C there
/// would leave the card refusing every open until `tt-smi -r`. Blocked in
/// this thread before the spinner's thread starts, which inherits the mask;
/// the CLI has no other thread then.
struct HeldStopSignals {
    fd: SignalFd,
    before: SigSet,
    /// The signal read from `fd`, once one has arrived.
    arrived: Option<Signal>,
}

impl HeldStopSignals {
    fn hold() -> nix::Result<Self> {
        let mut signals = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            signals.add(s);
        }
        let before = signals.thread_swap_mask(SigmaskHow::SIG_BLOCK)?;
        let fd = SignalFd::with_flags(&signals, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).inspect_err(|_| {
            let _ = before.thread_set_mask();
        })?;
        Ok(Self { fd, before, arrived: None })
    }

    /// The signal that has arrived so far, if any (taken from the
    /// signalfd, kept here).
    fn arrived(&mut self) -> Option<Signal> {
        if self.arrived.is_none() {
            if let Ok(Some(info)) = self.fd.read_signal() {
                self.arrived = Signal::try_from(info.ssi_signo as i32).ok();
            }
        }
        self.arrived
    }

    /// Unblocks them again; returns the one that arrived meanwhile (taken:
    /// the caller ends the command with it once its report is out).
    fn release(mut self) -> Option<Signal> {
        let arrived = self.arrived();
        let _ = self.before.thread_set_mask();
        arrived
    }
}

/// tt-kmd's whole-chip reset (`kind`: ASIC_RESET or ASIC_DMC_RESET) of the
/// device `open` opens, with a spinner
/// (on a terminal) while the chip resets; `observe` sees each step too. A
/// chip that does not clear the reset marker in time is a hang (exit 3);
/// anything else (held by another process, a card that left the bus, a
/// driver too old) exits 1. Returns the report and the stop signal held
/// during the reset, if one arrived.
fn reset_ttkmd(
    spec: &str,
    kind: ResetKind,
    open: impl FnOnce() -> Result<TtKmdDevice, TtKmdError>,
    observe: &mut dyn FnMut(&ResetStep),
) -> Result<(Report, Option<Signal>), Failure> {
    let failed = |e: TtKmdError| {
        let exit = if matches!(e, TtKmdError::ResetTimeout { .. }) { Exit::Hang } else { Exit::Failed };
        Failure { error: anyhow::Error::from(e).context(format!("resetting {spec}")), exit, held: None }
    };
    let start = Instant::now();
    // Held from before the open: a signal that arrives before ASIC_RESET
    // is sent ends the command with nothing reset.
    let mut held = HeldStopSignals::hold().map_err(|e| Failure {
        error: anyhow::anyhow!("resetting {spec}: holding SIGINT/SIGTERM/SIGHUP for the reset: {e}"),
        exit: Exit::Failed,
        held: None,
    })?;
    let dev = match open().and_then(|dev| dev.refuse_other_users(RESET_OPEN.exclusive).map(|checked| (dev, checked))) {
        Ok((dev, checked)) => {
            if let Some(signal) = held.arrived() {
                let held = held.release();
                return Err(Failure {
                    error: anyhow::anyhow!(
                        "resetting {spec}: {} arrived before the reset was sent: nothing was reset",
                        signal.as_str()
                    ),
                    exit: Exit::Failed,
                    held,
                });
            }
            if !checked {
                crate::out::diagln!(
                    "cqlab reset: {} keeps no list of the processes with {} open (tt-kmd 2.5.0 and later do): one \
                     that has it open would lose its fds",
                    dev.version(),
                    dev.path().display()
                );
            }
            dev
        }
        Err(e) => {
            let held = held.release();
            return Err(Failure { held, ..failed(e) });
        }
    };
    let (pci, version) = (dev.info().pci_address(), dev.version());
    let spinner = crate::cli::spinner(&format!("sending {}", kind.name()));
    let mut on_step = |step: ResetStep| {
        observe(&step);
        match step {
            ResetStep::Requested(kind) => spinner.set_message(format!("sending {}", kind.name())),
            // Short, the spec left out: a line wider than the terminal is redrawn as two.
            ResetStep::WaitingForChip { pci, waited, limit } => spinner.set_message(format!(
                "waiting for PCI {pci} to reset ({:.1} s, at most {:.1} s)",
                waited.as_secs_f64(),
                limit.as_secs_f64()
            )),
            ResetStep::PostReset => spinner.set_message("POST_RESET"),
        }
    };
    let done = dev.reset_sequence_with_progress(kind, &mut on_step);
    spinner.finish_and_clear();
    let arrived = held.release();
    let done = done.map_err(|e| Failure { held: arrived, ..failed(e) })?;
    let report = Report {
        device: spec.to_owned(),
        backend: "tt-kmd",
        reset: done.kind.name(),
        steps: vec![
            done.kind.name().into(),
            "wait for the chip to clear the reset marker".into(),
            ResetKind::PostReset.name().into(),
        ],
        pci: Some(pci),
        driver: Some(version.to_string()),
        node: Some(done.node.display().to_string()),
        other_fds_invalidated: Some(version.semver.is_some_and(|v| v >= RESET_GENERATION_SINCE)),
        held_signal: arrived.map(Signal::as_str),
        waited_for_chip_seconds: Some(done.waited_for_chip.as_secs_f64()),
        seconds: start.elapsed().as_secs_f64(),
    };
    Ok((report, arrived))
}

/// tt-kmd 2.6.0 brought the reset generation (`reset_gen`, `chardev.c` at
/// ttkmd-2.6.0; not at ttkmd-2.5.0): fds opened before a reset answer ENODEV.
const RESET_GENERATION_SINCE: (u8, u8, u8) = (2, 6, 0);

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
        let timeout = TtKmdError::ResetTimeout { path: path.clone(), kind: "ASIC_RESET", pci: pci.clone(), secs: 5.5 };
        let gone = TtKmdError::ResetReenumerated { path: path.clone(), pci, secs: 5.5 };
        let held = TtKmdError::HeldByPid { path, pid: 4242 };
        for (e, exit, says) in [
            (timeout, Exit::Hang, "is still set 5.5 s after the reset"),
            (gone, Exit::Failed, "left the bus during the reset (it re-enumerates) and was not back 5.5 s"),
            (held, Exit::Failed, "held by pid 4242"),
        ] {
            let Err(f) = reset_ttkmd(spec, ResetKind::AsicReset, || Err(e), &mut |_| {}) else {
                panic!("the open failed, the reset did not")
            };
            assert_eq!(f.exit, exit);
            let text = crate::out::chain(&f.error);
            assert!(text.starts_with("resetting /dev/tenstorrent/0: ") && text.contains(says), "{text}");
        }
    }

    /// A SIGTERM that arrives while the device is opened, before ASIC_RESET
    /// is sent, ends the command with nothing reset, saying so (the signal
    /// is then raised again by `finish_ttkmd`).
    #[test]
    fn a_signal_before_the_reset_is_sent_resets_nothing() {
        let sim = Sim::start("sigterm-first");
        let dir = sim.dir.display().to_string();
        let generation = || {
            let ctl = cqlab_sim::shared::Ctl::open(&cqlab_sim::shared::Paths::new(&sim.dir).ctl()).unwrap();
            ctl.load(cqlab_sim::shared::ctl::RESET_GEN)
        };
        let before = generation();
        let Err(f) = reset_ttkmd(
            "ttkmd-sim:x",
            ResetKind::AsicReset,
            || {
                nix::sys::signal::raise(Signal::SIGTERM).expect("raising SIGTERM");
                open_simulated(&dir)
            },
            &mut |_| {},
        ) else {
            panic!("a reset interrupted before it was sent went on")
        };
        assert_eq!(f.held, Some(Signal::SIGTERM));
        let text = crate::out::chain(&f.error);
        assert!(text.contains("SIGTERM arrived before the reset was sent: nothing was reset"), "{text}");
        assert_eq!(generation(), before, "a reset was sent");
    }

    /// The line says what a reset did to other fds as the driver does it:
    /// invalidated from tt-kmd 2.6.0 on (the reset generation), left open
    /// on 2.4.x and 2.5.x (it said "tt-kmd moved its reset generation" on
    /// every version); and where the card came back, if elsewhere.
    #[test]
    fn the_line_says_what_the_driver_did_to_other_fds() {
        let report = |driver: &str, invalidated, node: &str| Report {
            device: "/dev/tenstorrent/0".into(),
            backend: "tt-kmd",
            reset: "ASIC_RESET",
            steps: Vec::new(),
            pci: Some("0000:01:00.0".into()),
            driver: Some(driver.into()),
            node: Some(node.into()),
            other_fds_invalidated: Some(invalidated),
            held_signal: None,
            waited_for_chip_seconds: Some(0.6),
            seconds: 0.7,
        };
        let new = describe(&report("tt-kmd 2.8.0 (ioctl API 2)", true, "/dev/tenstorrent/0"));
        assert!(new.contains("tt-kmd moved its reset generation") && !new.contains("came back"), "{new}");
        let old = describe(&report("tt-kmd 2.4.0 (ioctl API 2)", false, "/dev/tenstorrent/0"));
        assert!(!old.contains("moved its reset generation") && old.contains("has no reset generation"), "{old}");
        let moved = describe(&report("tt-kmd 2.10.0 (ioctl API 2)", true, "/dev/tenstorrent/3"));
        assert!(moved.contains("POST_RESET on /dev/tenstorrent/3, as the card came back"), "{moved}");
    }

    /// A simulated tt-kmd device (a small Wormhole) run on a thread over
    /// fresh files; stopped and removed on drop.
    struct Sim {
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
        dir: PathBuf,
    }

    impl Sim {
        fn start(tag: &str) -> Sim {
            let dir = std::env::temp_dir().join(format!("cqlab-reset-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let cfg = cqlab_sim::config::SimConfig {
                harvesting: "rows=1,2,3,4,5,7,8".parse().unwrap(),
                sysmem_size: 4 << 20,
                ..cqlab_sim::config::SimConfig::for_board(cqlab_abi::soc::Board::WormholeN150)
            };
            let mut runner = cqlab_sim::shared::Runner::create(&dir, cfg).unwrap();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = stop.clone();
            let thread = Some(std::thread::spawn(move || {
                runner.run(&flag);
            }));
            Sim { stop, thread, dir }
        }
    }

    impl Drop for Sim {
        fn drop(&mut self) {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// `--dmc` sends ASIC_DMC_RESET (tt-kmd's `tools/reset.c --dmc`) and waits for the chip
    /// as that tool does with it, 10 s (after a Wormhole's half second) instead of 5; the
    /// report names it, the device's reset generation moved, and it opens again afterwards.
    /// Refused, sending nothing, by a tt-kmd older than 2.4.0, which has no ASIC_DMC_RESET.
    #[test]
    fn dmc_sends_asic_dmc_reset_and_waits_for_it_as_reset_c_does() {
        let sim = Sim::start("dmc");
        let dir = sim.dir.display().to_string();
        let spec = format!("ttkmd-sim:{dir}");
        let generation = || {
            let ctl = cqlab_sim::shared::Ctl::open(&cqlab_sim::shared::Paths::new(&sim.dir).ctl()).unwrap();
            ctl.load(cqlab_sim::shared::ctl::RESET_GEN)
        };
        let before = generation();
        let mut steps = Vec::new();
        let (report, _) =
            reset_ttkmd(&spec, ResetKind::AsicDmcReset, || open_simulated(&dir), &mut |s| steps.push(s.clone()))
                .unwrap_or_else(|f| panic!("{}", crate::out::chain(&f.error)));
        assert_eq!(steps.first(), Some(&ResetStep::Requested(ResetKind::AsicDmcReset)));
        let limit = steps.iter().find_map(|s| match s {
            ResetStep::WaitingForChip { limit, .. } => Some(*limit),
            _ => None,
        });
        assert_eq!(limit, Some(std::time::Duration::from_millis(10_500)), "{steps:?}");
        assert_eq!((report.reset, report.steps[0].as_str()), ("ASIC_DMC_RESET", "ASIC_DMC_RESET"));
        assert!(describe(&report).contains("ASIC_DMC_RESET sent"), "{}", describe(&report));
        assert_ne!(generation(), before, "no reset reached the device");
        drop(open_simulated(&dir).expect("the device opens after the reset"));

        cqlab_driver::ttkmd::sim_kernel::set_driver_version(&sim.dir, (2, 3, 0)).unwrap();
        let before = generation();
        let Err(f) = reset_ttkmd(&spec, ResetKind::AsicDmcReset, || open_simulated(&dir), &mut |_| {}) else {
            panic!("tt-kmd 2.3.0 has no ASIC_DMC_RESET, and the reset went on")
        };
        let text = crate::out::chain(&f.error);
        assert!(text.contains("ASIC_DMC_RESET") && text.contains("tt-kmd 2.4.0 (ioctl API 2) or later"), "{text}");
        assert_eq!((f.exit, generation()), (Exit::Failed, before));
    }

    /// `--dmc` is refused before anything is opened where there is no tt-kmd to send it: a
    /// simulator daemon (by `--device sim:PATH` or `--dev`).
    #[test]
    fn dmc_is_refused_for_a_daemon() {
        let args = |device: Option<&str>, dev: Option<&str>| Args {
            device: device.map(str::to_owned),
            dev: dev.map(PathBuf::from),
            json: false,
            dmc: true,
        };
        for (a, says) in
            [(args(Some("sim:/tmp/d"), None), "--device sim:/tmp/d"), (args(None, Some("/tmp/d")), "--dev")]
        {
            let err = validate(&a).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains("--dmc asks tt-kmd"), "{err}");
        }
        let ttkmd = Args { dmc: true, ..args(Some("/dev/tenstorrent/0"), None) };
        assert!(validate(&ttkmd).is_ok());
    }

    /// A SIGINT that arrives while the chip resets (after ASIC_RESET,
    /// before POST_RESET) is held until POST_RESET has been sent, and the
    /// report says so; the command then ends with it (`finish_ttkmd`).
    /// Unheld, its default action ended the process there, leaving the card
    /// refusing every open until `tt-smi -r`.
    #[test]
    fn a_sigint_during_the_reset_is_held_until_post_reset() {
        let sim = Sim::start("sigint");
        let dir = sim.dir.display().to_string();
        let spec = format!("ttkmd-sim:{dir}");
        let mut raised = false;
        let (report, held) = reset_ttkmd(&spec, ResetKind::AsicReset, || open_simulated(&dir), &mut |step| {
            if matches!(step, ResetStep::WaitingForChip { .. }) && !raised {
                raised = true;
                nix::sys::signal::raise(Signal::SIGINT).expect("raising SIGINT");
            }
        })
        .unwrap_or_else(|f| panic!("{}", crate::out::chain(&f.error)));
        assert!(raised, "no wait for the chip was seen");
        assert_eq!(held, Some(Signal::SIGINT));
        assert_eq!(report.held_signal, Some("SIGINT"));
        let line = describe(&report);
        assert!(line.contains("SIGINT arrived during the reset and was held until POST_RESET had been sent"), "{line}");
        // POST_RESET was sent: the device opens again (SET_POWER_STATE answers ENODEV until then).
        drop(open_simulated(&dir).expect("the device opens after the reset"));
        // And the signal was taken, not left pending in this thread.
        let again = HeldStopSignals::hold().unwrap();
        assert_eq!(again.release(), None);
    }
}
