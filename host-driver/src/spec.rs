//! Device specs, parsed without touching anything: `embedded[:OPTS]`,
//! `sim:PATH[?wait[=SECS]]`, `/dev/tenstorrent/N`.

use crate::daemon_backend::{DaemonBackend, LockWait};
use crate::error::{DriverError, Result};
use std::path::PathBuf;

/// What a device spec names.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceSpec {
    /// The in-process simulator: `embedded` or `embedded:seed=N,slow`.
    Embedded { seed: Option<u64>, slow: bool },
    /// A `cqlab sim serve` daemon.
    Daemon { path: PathBuf, wait: LockWait },
    /// A tt-kmd character device.
    TtKmd { path: String },
}

impl DeviceSpec {
    pub fn parse(spec: &str) -> Result<Self> {
        if spec == "embedded" || spec.starts_with("embedded:") {
            let (mut seed, mut slow) = (None, false);
            for opt in spec.strip_prefix("embedded:").unwrap_or("").split(',').filter(|o| !o.is_empty()) {
                match opt.split_once('=') {
                    Some(("seed", v)) => {
                        seed = Some(v.parse().map_err(|_| DriverError::Invalid(format!("seed {v:?} is not a number")))?)
                    }
                    None if opt == "slow" => slow = true,
                    _ => {
                        return Err(DriverError::Invalid(format!(
                            "unknown embedded option {opt:?} (known: seed=N, slow)"
                        )))
                    }
                }
            }
            return Ok(DeviceSpec::Embedded { seed, slow });
        }
        if let Some(rest) = spec.strip_prefix("sim:") {
            let (path, wait) = DaemonBackend::parse_spec(rest)?;
            return Ok(DeviceSpec::Daemon { path, wait });
        }
        if spec.starts_with("/dev/") {
            return Ok(DeviceSpec::TtKmd { path: spec.to_owned() });
        }
        Err(DriverError::Invalid(format!(
            "unknown device {spec:?}: use embedded[:seed=N][,slow], sim:PATH[?wait[=SECS]] or /dev/tenstorrent/N"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_or_say_what_is_known() {
        assert_eq!(DeviceSpec::parse("embedded").unwrap(), DeviceSpec::Embedded { seed: None, slow: false });
        assert_eq!(
            DeviceSpec::parse("embedded:seed=5,slow").unwrap(),
            DeviceSpec::Embedded { seed: Some(5), slow: true }
        );
        assert!(matches!(DeviceSpec::parse("sim:/x?wait").unwrap(), DeviceSpec::Daemon { .. }));
        assert!(matches!(DeviceSpec::parse("/dev/tenstorrent/0").unwrap(), DeviceSpec::TtKmd { .. }));
        for bad in ["", "embedded:seed=x", "embedded:fast", "sim:", "sim:/x?wait=-1", "sim:/x?wait=nan", "bogus"] {
            assert!(DeviceSpec::parse(bad).is_err(), "{bad:?}");
        }
    }
}
