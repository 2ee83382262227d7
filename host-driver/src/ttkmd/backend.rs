//! The tt-kmd [`Backend`](crate::backend::Backend).

use crate::backend::Backend;
use crate::config::DeviceConfig;
use crate::error::{DriverError, Result};

/// Opens `/dev/tenstorrent/N` as a backend.
pub fn open_device(path: &str, _cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    // Open (and lock) the device first, so a missing card or driver, or a
    // device held by another process, is reported as such.
    let dev = super::TtKmdDevice::open(path).map_err(|e| DriverError::Backend(e.to_string()))?;
    drop(dev);
    Err(DriverError::NotBuilt(
        "command queues over tt-kmd (the device opened; TLB windows and sysmem pinning are not wired to CQs)",
    ))
}

/// Opens the simulator behind the tt-kmd kernel interface at `path`.
#[cfg(feature = "sim")]
pub fn open_simulated(_path: &str, _cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    Err(DriverError::NotBuilt("ttkmd-sim"))
}
