//! What the driver needs from a device, in two traits:
//!
//! - [`Backend`]: device access only. BAR reads and writes by NOC address
//!   (through TLB windows the backend configures, with the window manager
//!   of [`crate::tlb`]), the chip's architecture and what ARC says about
//!   the board, the pinned host sysmem the device reaches over PCIe, a way
//!   to let time pass while the host waits, and the device clock. Every
//!   backend has it: the embedded simulator, the simulator daemon, tt-kmd on
//!   a card, tt-kmd against the simulator, a libttsim library.
//! - [`Introspect`]: simulator control a real card cannot offer (a core's
//!   PC, state digests, DRAM traffic counters, running an exact number of
//!   cycles). A backend that has it returns it from [`Backend::introspect`].
//!
//! [`spec`] turns a device spec (`embedded:seed=N`, `sim:PATH`,
//! `/dev/tenstorrent/N`, `ttkmd-sim:PATH`, `ttsim:PATH`) into a backend.

pub mod model;
pub mod spec;

use crate::error::Result;
use crate::geometry::CoreId;
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::ArchParams;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::{Board, Harvesting};
use zerocopy::{FromBytes, IntoBytes};

/// Device cycles a simulator runs per host poll.
pub const DEFAULT_POLL_CYCLES: u64 = 500;

/// Per-core state only a simulator can see (the PC of a real core is not
/// readable through the BAR).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CoreDebug {
    pub pc: u32,
    /// Why the hart stopped, if it did.
    pub halt: Option<String>,
    /// Most recently retired PCs, oldest first.
    pub last_pcs: Vec<u32>,
    /// Held in soft reset: a halt it shows is from before it was held.
    pub in_reset: bool,
}

/// DRAM bytes moved by NOC transactions (host BAR access excluded).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DramTraffic {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Blackhole's L0 data caches, over every core (the simulator's `l0`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct L0CacheStats {
    /// Loads from L1 that hit a core's L0 data cache.
    pub hits: u64,
    /// Hits that returned bytes L1 no longer held: reads a firmware takes
    /// stale on silicon (a wait without `fence`).
    pub stale_hits: u64,
    /// The first stale read in device time: where a `fence` is missing.
    pub first_stale: Option<StaleRead>,
}

/// A load that returned a copy in a core's L0 data cache that L1 no longer
/// held. In JSON `{"core": {"x": .., "y": ..}, "processor": "brisc", "pc":
/// .., "addr": .., "cycle": ..}`; as text "core (x,y) brisc pc 0x.. addr
/// 0x.. at cycle N".
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StaleRead {
    /// The tile (translated coordinates).
    pub core: Coord,
    /// Which of its cores loaded (`Processor::name`: `brisc`, `ncrisc`,
    /// `trisc0`..`trisc2`).
    #[serde(with = "processor_name")]
    pub processor: Processor,
    /// The load's PC and the L1 address it read.
    pub pc: u32,
    pub addr: u32,
    /// The device cycle of the load.
    pub cycle: u64,
}

impl std::fmt::Display for StaleRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "core {} {} pc {:#x} addr {:#x} at cycle {}",
            self.core,
            self.processor.name(),
            self.pc,
            self.addr,
            self.cycle
        )
    }
}

/// A [`Processor`] in JSON: its name.
mod processor_name {
    use cqlab_abi::arch::tensix::Processor;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Processor, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Processor, D::Error> {
        let name = String::deserialize(d)?;
        Processor::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Processor::ALL.iter().map(|p| p.name()).collect();
            serde::de::Error::custom(format!("processor {name:?}: one of {}", names.join(", ")))
        })
    }
}

/// Device access: what every backend offers.
pub trait Backend {
    /// Human-readable name ("embedded simulator", "/dev/tenstorrent/0").
    fn name(&self) -> String;
    /// The chip's architecture facts (from the PCI device id on a card).
    fn params(&self) -> &'static ArchParams;
    /// Writes `data` at `addr` through a TLB window: a tile, or every tile
    /// of a multicast rectangle (NOC0, translated coordinates).
    ///
    /// Publishes by order: every sysmem byte claimed ([`Backend::sysmem_claim`])
    /// and every byte written before this write reaches the device before
    /// this write's last word does, and that word after the rest of `data`.
    /// So a fetch-queue entry may announce the issue-ring bytes before it,
    /// and a flag at the end of a message (the slow launch's tag) the message.
    fn write(&mut self, addr: NocAddr, data: &[u8]) -> Result<()>;
    /// Reads `buf.len()` bytes at `addr` through a TLB window (slow on hardware).
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()>;
    /// Whether its TLB windows can multicast (a write to a rectangle of
    /// tiles at once).
    fn multicast_windows(&self) -> bool {
        true
    }
    /// Reads BAR0 at `offset` outside the TLB windows (Wormhole's ARC
    /// regions), where the backend maps it.
    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        let _ = buf;
        Err(crate::error::DriverError::Backend(format!("{}: BAR0 offset {offset:#x} is not mapped", self.name())))
    }
    /// The board and its harvesting, as ARC's telemetry tells a host at
    /// open ([`crate::arc::identify`]).
    fn identify(&mut self) -> Result<(Board, Harvesting)> {
        crate::arc::identify(self)
    }
    /// Size of host sysmem in bytes.
    fn sysmem_len(&self) -> usize;
    /// Where the device sees sysmem offset 0: the local address at the PCIe endpoint (the NOC
    /// address PIN_PAGES returned on tt-kmd; 0 on the simulators).
    fn sysmem_noc_base(&self) -> u64 {
        0
    }
    /// Copies host sysmem at `offset` into `buf`. The device may write
    /// sysmem at any time (completion records, queue pointers): this is a
    /// snapshot, read with accesses the compiler may not elide or merge.
    fn sysmem_read(&mut self, offset: usize, buf: &mut [u8]) -> Result<()>;
    /// Host sysmem bytes `[offset, offset + len)` for the host to fill, for
    /// ranges the device does not access until the host publishes them (free
    /// issue-queue space before its doorbell; queue headers while the CQ
    /// cores are held in reset). The protocol, not the type, keeps the
    /// device away from them.
    fn sysmem_claim(&mut self, offset: usize, len: usize) -> Result<&mut [u8]>;
    /// The host waits a little: the device runs meanwhile. Returns the
    /// device time in cycles (the simulator's clock; an estimate from wall
    /// time where the device runs on its own).
    fn poll(&mut self) -> Result<u64>;
    /// Device time in cycles, without letting it advance.
    fn now(&self) -> u64;
    /// Whether this is silicon (a card), whose device time passes as fast as
    /// host time; a simulator's cycles cost far more (the default kernel
    /// timeout depends on it).
    fn silicon(&self) -> bool {
        false
    }
    /// Simulator control, where the backend has it.
    fn introspect(&mut self) -> Option<&mut dyn Introspect> {
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
    /// A 32-bit word of sysmem the device writes whole (a queue pointer). A backend whose
    /// device writes sysmem while the host reads it must override this with one aligned load:
    /// this default copies byte by byte, which is right only where the device stands still
    /// while the host reads (the embedded simulator and the daemon).
    fn sysmem_read_u32(&mut self, offset: usize) -> Result<u32> {
        let mut b = [0u8; 4];
        self.sysmem_read(offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    /// A sysmem word read as an observer: no device time passes and the
    /// host clock counts no access, so a simulated run's schedule (its
    /// jitter draws, its PCT points) is the same whether or not the host
    /// looked. A backend whose sysmem reads cost the run nothing reads it.
    fn sysmem_peek_u32(&mut self, offset: usize) -> Result<u32> {
        self.sysmem_read_u32(offset)
    }
}

/// A sysmem word of a simulator's snapshot (`sysmem_peek_u32`).
#[cfg_attr(not(any(feature = "sim", feature = "daemon")), allow(dead_code))]
pub(crate) fn snapshot_u32(mem: &[u8], offset: usize) -> Result<u32> {
    let mut b = [0u8; 4];
    snapshot_read(mem, offset, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// ARC is read through any backend's BAR ([`crate::arc`]).
impl<B: Backend + ?Sized> crate::arc::ArcBus for B {
    fn name(&self) -> String {
        Backend::name(self)
    }
    fn params(&self) -> &'static ArchParams {
        Backend::params(self)
    }
    fn read(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<()> {
        Backend::read(self, addr, buf)
    }
    fn bar0_read(&mut self, offset: u32, buf: &mut [u8]) -> Result<()> {
        Backend::bar0_read(self, offset, buf)
    }
}

/// Simulator control: views and knobs no real device has.
pub trait Introspect {
    /// A core's PC, halt reason and recent PCs; `None` if there is no core there.
    fn core_debug(&mut self, core: CoreId) -> Result<Option<CoreDebug>>;
    /// Digest of the whole device state (equal digests: bit-identical runs).
    fn digest(&mut self) -> Result<u64>;
    /// DRAM bytes moved by NOC transactions since power-on or the last
    /// [`Introspect::reset_dram_traffic`]; `None` where the backend counts
    /// none (a libttsim library).
    fn dram_traffic(&mut self) -> Result<Option<DramTraffic>>;
    /// Zeroes the DRAM traffic counters (nothing to do where there are none).
    fn reset_dram_traffic(&mut self) -> Result<()>;
    /// Reads device memory without costing device time (the simulator's side-effect-free
    /// view), where this backend has such a view: `Ok(false)` when it has none (read through
    /// the BAR instead).
    fn peek(&mut self, addr: NocAddr, buf: &mut [u8]) -> Result<bool>;
    /// Runs the device exactly `cycles` cycles (plus host time still owed).
    /// Returns the device time.
    fn run_cycles(&mut self, cycles: u64) -> Result<u64>;
    /// What the host's scheduling points did so far
    /// ([`crate::host_clock`]), where the backend has them (the embedded
    /// simulator).
    #[cfg(any(feature = "sim", feature = "daemon", feature = "ttsim"))]
    fn host_clock(&self) -> Option<crate::host_clock::HostClockStats> {
        None
    }
    /// What the cores' L0 data caches did since power-on, where the model
    /// has them (a Blackhole simulator with `l0`, embedded or a daemon).
    fn l0_cache(&mut self) -> Result<Option<L0CacheStats>> {
        Ok(None)
    }
    /// Samples the PC of each of `cores` at every scheduling slice from now
    /// on, dropping earlier samples (an empty list stops): a statistical
    /// profile, where the backend can take one (the embedded simulator).
    fn set_pc_sampling(&mut self, _cores: &[CoreId]) -> Result<()> {
        Err(crate::error::DriverError::Backend("PC sampling needs the embedded simulator".into()))
    }
    /// The samples so far: (core, PC, slices that ended there), most first.
    fn pc_samples(&mut self) -> Result<Vec<(CoreId, u32, u64)>> {
        Err(crate::error::DriverError::Backend("PC sampling needs the embedded simulator".into()))
    }
}

/// Reads an ABI struct (its size from its own definition) through the BAR.
pub fn read_struct<T: FromBytes + IntoBytes>(backend: &mut (impl Backend + ?Sized), addr: NocAddr) -> Result<T> {
    let mut value = T::new_zeroed();
    backend.read(addr, value.as_mut_bytes())?;
    Ok(value)
}

/// Copies `buf.len()` bytes at `offset` out of `mem`, a sysmem the device
/// writes only inside the backend's own calls, so a plain copy is a
/// snapshot.
#[cfg_attr(not(any(feature = "sim", feature = "daemon")), allow(dead_code))]
pub(crate) fn snapshot_read(mem: &[u8], offset: usize, buf: &mut [u8]) -> Result<()> {
    let r = check_sysmem(offset, buf.len(), mem.len())?;
    buf.copy_from_slice(&mem[r]);
    Ok(())
}

/// The `len` bytes at `offset` of `mem`, for the host to write in place.
#[cfg_attr(not(any(feature = "sim", feature = "daemon")), allow(dead_code))]
pub(crate) fn claim_slice(mem: &mut [u8], offset: usize, len: usize) -> Result<&mut [u8]> {
    let r = check_sysmem(offset, len, mem.len())?;
    Ok(&mut mem[r])
}

/// Checks that `[offset, offset + len)` lies in a sysmem of `size` bytes.
#[cfg_attr(not(any(feature = "sim", feature = "daemon")), allow(dead_code))]
pub(crate) fn check_sysmem(offset: usize, len: usize, size: usize) -> Result<std::ops::Range<usize>> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(offset..end),
        _ => Err(crate::error::DriverError::OutOfRange {
            what: "sysmem access",
            detail: format!("{len} bytes at offset {offset:#x} of a {size:#x}-byte sysmem"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stale read in JSON names its core `{"x", "y"}` and its processor
    /// by name, and reads back; a processor no core has is refused, named.
    #[test]
    fn a_stale_read_is_structured_json_and_reads_back() {
        let read = StaleRead { core: Coord::new(3, 4), processor: Processor::Trisc1, pc: 0x40, addr: 0x104, cycle: 9 };
        let v = serde_json::to_value(read).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"core": {"x": 3, "y": 4}, "processor": "trisc1", "pc": 0x40, "addr": 0x104, "cycle": 9})
        );
        assert_eq!(serde_json::from_value::<StaleRead>(v.clone()).unwrap(), read);
        assert_eq!(read.to_string(), "core (3,4) trisc1 pc 0x40 addr 0x104 at cycle 9");
        let mut bad = v;
        bad["processor"] = "erisc".into();
        let e = serde_json::from_value::<StaleRead>(bad).unwrap_err().to_string();
        assert!(e.contains("processor \"erisc\": one of brisc, ncrisc, trisc0, trisc1, trisc2"), "{e}");
    }
}
