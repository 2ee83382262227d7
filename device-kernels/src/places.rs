//! The coordinates firmware learns at run time: the host's `NocMap` in
//! this tile's L1 (`mailbox::NOC_MAP`), read once at boot into the core's
//! own state (local memory), so hot paths never load them from L1.

use crate::platform::Platform;
use crate::report::fail;
use crate::CHIP;
use cqlab_abi::mailbox::{DeviceError, NOC_MAP};
use cqlab_abi::memory_map::MAX_DRAM_BANKS;
use cqlab_abi::noc::{Coord, NocAddr, MAX_CQS};
use cqlab_abi::noc_map::{self, Grid, GridMasks, MAGIC};

/// The map's header: magic, queue count, DRAM bank count, and whether
/// they are within the map's capacities (the grid is checked by [`grid`]).
fn header(p: &impl Platform) -> (u32, u32, u32) {
    (p.read_u32(NOC_MAP), p.read_u32(NOC_MAP + noc_map::NUM_CQS), p.read_u32(NOC_MAP + noc_map::DRAM_BANKS))
}

/// Halts with `BadNocMap` unless the host wrote a valid map.
pub fn check(p: &mut impl Platform) {
    let (magic, cqs, banks) = header(p);
    let ok = magic == MAGIC
        && (1..=cqlab_abi::noc::MAX_CQS as u32).contains(&cqs)
        && (1..=MAX_DRAM_BANKS).contains(&banks)
        && grid(p).is_valid();
    if !ok {
        fail(p, DeviceError::BadNocMap, NOC_MAP, magic, cqs, banks);
    }
}

/// Command queues of the device.
pub fn num_cqs(p: &impl Platform) -> u32 {
    header(p).1
}

/// The compute grid.
pub fn grid(p: &impl Platform) -> Grid {
    p.read_struct(NOC_MAP + noc_map::GRID)
}

/// The dispatcher of command queue `cq`.
pub fn dispatcher(p: &impl Platform, cq: u32) -> Coord {
    Coord::unpack(p.read_u32(NOC_MAP + noc_map::dispatcher_entry(cq)))
}

/// The 64-bit word at `NOC_MAP + offset`.
fn word64(p: &impl Platform, offset: u32) -> u64 {
    p.read_u32(NOC_MAP + offset) as u64 | (p.read_u32(NOC_MAP + offset + 4) as u64) << 32
}

/// Host-memory offset 0 on this core's NOC.
pub fn host<P: Platform>(p: &P) -> NocAddr {
    NocAddr(word64(p, noc_map::pcie_entry(P::NOC as u32)))
}

/// Byte `offset` of DRAM bank `bank` on this core's NOC, straight from
/// the map (two L1 loads: for kernels, which do not keep a [`Dram`]).
pub fn dram<P: Platform>(p: &P, bank: u32, offset: u64) -> NocAddr {
    NocAddr(word64(p, noc_map::dram_entry(bank, P::NOC as u32))).offset(offset)
}

/// The DRAM bank table of this core's NOC, kept in the core's own state.
#[derive(Clone, Copy)]
pub struct Dram {
    banks: u32,
    base: [u64; MAX_DRAM_BANKS as usize],
}

impl Dram {
    pub fn load<P: Platform>(p: &P) -> Self {
        let banks = header(p).2.min(MAX_DRAM_BANKS);
        let mut base = [0; MAX_DRAM_BANKS as usize];
        for (b, v) in base.iter_mut().enumerate().take(banks as usize) {
            *v = word64(p, noc_map::dram_entry(b as u32, P::NOC as u32));
        }
        Self { banks, base }
    }

    /// Banks buffers are interleaved over.
    pub fn banks(&self) -> u32 {
        self.banks
    }

    /// Byte `offset` of bank `bank` (below `banks()`).
    #[inline(always)]
    pub fn at(&self, bank: u32, offset: u64) -> NocAddr {
        NocAddr(self.base[bank as usize]).offset(offset)
    }

    /// Whether unicast `addr` names the endpoint of a bank (its
    /// coordinates and flags, whatever its local address: the firmware
    /// does not know a channel's size).
    fn names(&self, addr: NocAddr) -> bool {
        let tile = addr.with_local(0);
        self.base.iter().take(self.banks as usize).any(|&b| NocAddr(b).with_local(0) == tile)
    }
}

/// The memories of the `NocMap` a unicast NOC request may name: the L1 of
/// a compute core or of a queue's dispatcher (the local range inside L1),
/// or a DRAM bank's endpoint. Anything else (another tile, a harvested
/// one, bits set beyond the coordinates, bytes past L1) is a request the
/// NOC would refuse or never answer: the firmware reports the command
/// instead of issuing it. Only the grid is kept in the core's state (16
/// bytes: keeping the dispatchers too moved the CQ cores' other state
/// enough to cost the p150a's 128-unique-args point 50 cycles a program);
/// a tile beyond it is looked up in the map in L1.
#[derive(Clone, Copy)]
pub struct Unicasts {
    /// The compute grid, as two bit tests a coordinate.
    grid: GridMasks,
}

impl Unicasts {
    pub fn load(p: &impl Platform) -> Self {
        Self { grid: GridMasks::of(&grid(p)) }
    }

    /// The compute grid's masks.
    pub fn grid(&self) -> GridMasks {
        self.grid
    }

    /// Whether a unicast of `len` bytes at `addr` reaches memory the map
    /// names (a multicast address does not). A compute core costs a mask
    /// and two bit tests, then the L1 bound; the dispatchers and banks
    /// are looked through only for other tiles (an event's `LAST_EVENT`
    /// writes, DRAM).
    #[inline(always)]
    pub fn reach(&self, p: &impl Platform, dram: &Dram, addr: NocAddr, len: u32) -> bool {
        let in_l1 = addr.local() + len as u64 <= CHIP.l1_size as u64;
        if addr.is_multicast() || addr.flags() != 0 {
            return false;
        }
        if self.grid.contains(addr.coord()) {
            return in_l1;
        }
        reach_beyond_grid(p, dram, addr, in_l1)
    }
}

/// [`Unicasts::reach`] for a tile outside the compute grid (out of line:
/// the usual path stays short): each queue's dispatcher (the host writes
/// their `LAST_EVENT` words), from the map in L1, or a DRAM bank.
#[inline(never)]
fn reach_beyond_grid(p: &impl Platform, dram: &Dram, addr: NocAddr, in_l1: bool) -> bool {
    let c = addr.coord();
    if (0..num_cqs(p).min(MAX_CQS as u32)).any(|cq| dispatcher(p, cq) == c) {
        return in_l1;
    }
    dram.names(addr)
}
