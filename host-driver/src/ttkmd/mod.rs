//! tt-kmd backend: real Tenstorrent hardware through the `/dev/tenstorrent/N` character device.
//!
//! - [`ioctl`]: the mirrored ABI of tt-kmd's `ioctl.h` (layouts asserted, request numbers tested).
//! - [`TtKmdDevice`]: open, own, map BARs on demand, allocate/configure/free TLB windows, pin/unpin host
//!   memory, reset.
//! - [`MmioWindow`]: bounds-checked volatile access to a mapped BAR or TLB window.
//! - `io_barrier`: the I/O write barrier between published bytes and the store that publishes them.
//!
//! Without a card and driver, [`TtKmdDevice::open`] fails at once with
//! [`TtKmdError::NotPresent`]. Unsafe code in the driver lives here only.

pub mod backend;
mod device;
mod error;
mod io_barrier;
pub mod ioctl;
pub mod kernel;
mod owner;
#[cfg(test)]
mod scripted_kernel;
#[cfg(feature = "sim")]
pub mod sim_kernel;
mod window;

pub use device::{
    DeviceInfo, PinFlags, PinnedMemory, PinnedPages, PowerMode, ResetDone, ResetKind, ResetStep, ResourceMapping,
    TlbWindow, TtKmdDevice, CQLAB_LOCK_INDEX,
};
pub use error::{Result, TtKmdError};
pub use ioctl::NocTlbConfig;
pub use kernel::DEVICE_DIR;
pub use window::{Caching, MmioWindow};
