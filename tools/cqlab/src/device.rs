//! `--device SPEC` for every command that runs work.

use crate::cli::Usage;
use cqlab_driver::{Device, DeviceConfig};

/// Opens `spec` for a command. `embedded` is the in-process simulator with
/// the command's `--seed` and `--noc-jitter`; any other spec
/// (`embedded:seed=N`, `sim:PATH[?wait]`, `/dev/tenstorrent/N`) goes to
/// [`Device::open`] as written, and then the seed is the device's own.
pub fn open(spec: &str, seed: u64, noc_jitter: u64, cfg: DeviceConfig) -> anyhow::Result<Device> {
    if spec == "embedded" {
        let mut sim = cqlab_sim::config::SimConfig { seed, ..Default::default() };
        sim.faults.noc_jitter_cycles = noc_jitter;
        return Ok(Device::embedded(sim, cfg)?);
    }
    if noc_jitter != 0 {
        return Err(Usage(format!(
            "--noc-jitter applies to the embedded simulator (--device embedded), not to {spec:?}"
        ))
        .into());
    }
    Device::open(spec, cfg).map_err(|e| match e {
        cqlab_driver::DriverError::Invalid(m) => Usage(format!("--device {spec}: {m}")).into(),
        e => anyhow::Error::from(e).context(format!("opening --device {spec}")),
    })
}

/// `embedded` (a fresh simulator from `sim`) or `sim:PATH[?wait]` (a daemon,
/// reset to power-on first when `reset`). A device the spec or the daemon
/// refuses is a usage error.
pub fn open_for_campaign(
    spec: &str,
    sim: cqlab_sim::config::SimConfig,
    cfg: cqlab_driver::DeviceConfig,
    reset: bool,
) -> Result<Device, crate::usage::UsageError> {
    let refused = |e: cqlab_driver::DriverError| crate::usage::UsageError(format!("--device {spec}: {e}"));
    if spec == "embedded" {
        return Device::embedded(sim, cfg).map_err(refused);
    }
    let Some(rest) = spec.strip_prefix("sim:") else {
        return Err(crate::usage::UsageError(format!("--device {spec:?}: use embedded or sim:PATH[?wait[=SECS]]")));
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
