//! `--device SPEC` for every command that runs work.

use crate::cli::Usage;
use cqlab_driver::backend::spec::Spec;
use cqlab_driver::daemon_backend::{DaemonBackend, LockWait};
use cqlab_driver::{Device, DeviceConfig};

/// Longest `sim:PATH?wait=SECS` a command accepts: a day.
pub const MAX_LOCK_WAIT_SECS: u64 = 86_400;

/// Checks `spec` before any work: its syntax, a bounded `?wait=SECS`, and
/// that `--noc-jitter` (which only the embedded simulator takes) is 0
/// elsewhere.
pub fn validate(spec: &str, noc_jitter: u64) -> Result<(), Usage> {
    let invalid = |m: String| Usage(format!("--device {spec}: {m}"));
    let parsed = Spec::parse(spec).map_err(|e| invalid(e.to_string()))?;
    if let Spec::Daemon { rest } = &parsed {
        let (_, wait) = DaemonBackend::parse_spec(rest).map_err(|e| invalid(e.to_string()))?;
        if let LockWait::Upto(d) = wait {
            crate::usage::ensure(d.as_secs_f64() <= MAX_LOCK_WAIT_SECS as f64, || {
                format!("--device {spec}: ?wait of {:.0} s is over the {MAX_LOCK_WAIT_SECS} s limit", d.as_secs_f64())
            })?;
        }
    }
    // A spec's seed goes into reports as the `--seed`s do: bounded as they are.
    if let Spec::Embedded { seed, .. } = parsed {
        crate::cli::seed(&seed.to_string()).map_err(|m| invalid(format!("seed={seed}: {m}")))?;
    }
    if noc_jitter != 0 && !matches!(parsed, Spec::Embedded { .. }) {
        return Err(Usage(format!(
            "--noc-jitter applies to the embedded simulator (--device embedded[:WORDS]), not to {spec:?}"
        )));
    }
    Ok(())
}

/// Notes on stderr that `--seed` (given other than its default of 1) goes
/// unused on a device with a seed of its own (helper-48: matmul and perf
/// dropped it without a word; demo says so too).
pub fn note_unused_seed(spec: &str, seed: u64) {
    if seed != 1 && cqlab_workloads::runner::device_seed(spec, seed) != Some(seed) {
        crate::out::diagln!("note: --seed {seed} is unused: device {spec} runs on its own seed");
    }
}

/// Whether `spec` makes its simulator here (`embedded[:WORDS]`), so that
/// `--chip` and `--harvest` say what to simulate rather than what to
/// expect of a device that exists. A spec that does not parse counts as
/// made here (it is refused anyway).
pub fn made_here(spec: &str) -> bool {
    Spec::parse(spec).map_or(true, |s| matches!(s, Spec::Embedded { .. }))
}

/// A daemon's chip, its host memory's size and its directory, for a spec
/// `sim:PATH[?wait]` (`None` for any other), read without attaching: an
/// attach boots the device, and a run would then be its second client.
/// What a command checks its every point against before the first runs.
pub fn daemon_chip(
    spec: &str,
) -> anyhow::Result<Option<(cqlab_abi::soc::Board, cqlab_abi::soc::Harvesting, usize, std::path::PathBuf)>> {
    use anyhow::Context;
    use cqlab_driver::backend::Backend;
    let Some(rest) = spec.strip_prefix("sim:") else { return Ok(None) };
    let (path, _) = DaemonBackend::parse_spec(rest)?;
    let (board, harvesting, sysmem) = cqlab_driver::daemon_backend::DaemonObserver::connect(path.clone())
        .and_then(|mut o| o.identify().map(|(b, h)| (b, h, o.sysmem_len())))
        .with_context(|| format!("--device {spec}"))?;
    Ok(Some((board, harvesting, sysmem, path)))
}

/// Checks that `spec` names a simulator daemon (`sim:PATH`): the commands
/// that observe a live device read it through the daemon.
pub fn validate_daemon(option: &str, spec: &str) -> Result<(), Usage> {
    validate(spec, 0)?;
    crate::usage::ensure(spec.starts_with("sim:"), || {
        format!("{option} {spec}: this reads a live simulator daemon's device: sim:PATH")
    })
}

/// Opens `spec` for a command. `embedded[:WORDS]` is the in-process
/// simulator of `cfg`'s chip with the spec's model words, its `seed=` or
/// else the command's `--seed` (as `run`'s
/// [`cqlab_workloads::runner::device_spec`]: `embedded:exact` ran on seed 0
/// while the report said `--seed`), and `--noc-jitter`; any other spec
/// (`sim:PATH[?wait]`, `/dev/tenstorrent/N`) goes to [`Device::open`] as
/// written, and then the seed is the device's own.
pub fn open(spec: &str, seed: u64, noc_jitter: u64, mut cfg: DeviceConfig) -> anyhow::Result<Device> {
    validate(spec, noc_jitter)?;
    let (seed, model) = match Spec::parse(&cqlab_workloads::runner::device_spec(spec, seed))? {
        Spec::Embedded { seed, slow, model } => {
            cfg.slow_dispatch |= slow;
            (seed, model)
        }
        _ => return Device::open(spec, cfg).map_err(refused(spec)),
    };
    let mut sim = cqlab_driver::backend::spec::sim_config(&cfg, seed);
    cqlab_driver::backend::spec::Model::apply(&model, &mut sim);
    sim.faults.noc_jitter_cycles = noc_jitter;
    Device::embedded(sim, cfg).map_err(refused(spec))
}

/// A device that refuses the command's configuration (its sizes, or a
/// chip that cannot hold its queues) is a usage error.
fn refused(spec: &str) -> impl FnOnce(cqlab_driver::DriverError) -> anyhow::Error + '_ {
    move |e| match e {
        cqlab_driver::DriverError::Invalid(m) => Usage(format!("--device {spec}: {m}")).into(),
        cqlab_driver::DriverError::Chip(c) => Usage(format!("--device {spec}: {c}")).into(),
        e => anyhow::Error::from(e).context(format!("opening --device {spec}")),
    }
}

/// Why a campaign could not open its device.
pub enum Opened {
    /// The device refuses the configuration, or the spec is wrong: usage.
    Refused(crate::usage::UsageError),
    /// Held by another process, or not served: not the run's fault.
    Unavailable(String),
}

/// `embedded` (a fresh simulator from `sim`) or `sim:PATH[?wait]` (a daemon,
/// reset to power-on first when `reset`), for `stress` and `sweep`.
pub fn open_for_campaign(
    spec: &str,
    sim: cqlab_sim::config::SimConfig,
    cfg: cqlab_driver::DeviceConfig,
    reset: bool,
) -> Result<Device, Opened> {
    use crate::usage::UsageError;
    use cqlab_driver::DriverError;
    let refused = |e: DriverError| match e {
        DriverError::Busy { .. } | DriverError::Backend(_) | DriverError::Io(_) => {
            Opened::Unavailable(format!("--device {spec}: {e}"))
        }
        // A chip that cannot hold the queues, a refused size: usage.
        e => Opened::Refused(UsageError(format!("--device {spec}: {e}"))),
    };
    if spec == "embedded" {
        return Device::embedded(sim, cfg).map_err(refused);
    }
    let Some(rest) = spec.strip_prefix("sim:") else {
        return Err(Opened::Refused(UsageError(format!("--device {spec:?}: use embedded or sim:PATH[?wait[=SECS]]"))));
    };
    use cqlab_driver::daemon_backend::DaemonBackend;
    let (path, wait) = DaemonBackend::parse_spec(rest).map_err(refused)?;
    let mut backend = DaemonBackend::attach_with(path, wait).map_err(refused)?;
    backend.check_config(&cfg).map_err(refused)?;
    if reset {
        backend.reset().map_err(refused)?;
    }
    Device::with_backend(Box::new(backend), cfg).map_err(refused)
}
