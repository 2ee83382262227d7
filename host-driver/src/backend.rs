//! What the driver needs from a device: BAR access by NOC address, the
//! pinned sysmem the device reaches over PCIe, a way to let time pass, and
//! (on the simulator) a view into each core.

use crate::error::Result;
use cqlab_abi::noc::{Coord, NocAddr};
use zerocopy::{FromBytes, IntoBytes};

/// Per-core state only a simulator can see (the PC of a real core is not
/// readable through the BAR).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CoreDebug {
    pub pc: u32,
    /// Why the hart stopped, if it did.
    pub halt: Option<String>,
    /// Most recently retired PCs, oldest first.
    pub last_pcs: Vec<u32>,
}

pub trait Backend {
    /// Human-readable name ("embedded simulator", "/dev/tenstorrent/0").
    fn name(&self) -> String;
    /// Writes `data` at `addr` through a BAR window.
    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()>;
    /// Reads `buf.len()` bytes at `addr` through a BAR window (slow on hardware).
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()>;
    /// Host sysmem, as the device sees it at the PCIe endpoint.
    fn sysmem(&mut self) -> &mut [u8];
    /// Lets the device run a while. Returns the device time in cycles (the
    /// simulator's clock; a cycle estimate from wall time on hardware).
    fn poll(&mut self) -> Result<u64>;
    /// Device time in cycles, without letting it advance.
    fn now(&self) -> u64;
    /// Simulator-only view of a core; `None` where it cannot be known.
    fn core_debug(&self, core: Coord) -> Option<CoreDebug>;
    /// The concrete backend, for backend-specific tools (simulator digests).
    fn as_any(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }

    fn write_u32(&mut self, addr: NocAddr, value: u32) -> Result<()> {
        self.write(addr, &value.to_le_bytes())
    }
    fn read_u32(&mut self, addr: NocAddr) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
}

/// Reads an ABI struct (its size from its own definition) through the BAR.
pub fn read_struct<T: FromBytes + IntoBytes>(backend: &mut (impl Backend + ?Sized), addr: NocAddr) -> Result<T> {
    let mut value = T::new_zeroed();
    backend.read(addr, value.as_mut_bytes())?;
    Ok(value)
}
