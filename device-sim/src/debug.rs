//! Per-core debug view for hang dumps: what a host can ask the simulator
//! that silicon would not tell it (PC, registers, recent PCs, halt reason),
//! plus the waypoint the firmware keeps in its mailbox.

use crate::core_mmio::{CoreMmio, NocCounters};
use crate::hart::{Halt, Hart};
use cqlab_abi::mailbox;
use cqlab_abi::mmio::SEMAPHORE_COUNT;
use cqlab_abi::noc::Coord;
use cqlab_abi::waypoint::Waypoint;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreDebug {
    pub coord: Coord,
    pub pc: u32,
    pub regs: [u32; 32],
    /// The firmware's current waypoint (`mailbox::WAYPOINT` in its L1).
    pub waypoint: Waypoint,
    /// Most recently retired PCs, oldest first.
    pub last_pcs: Vec<u32>,
    pub halt: Option<Halt>,
    pub in_reset: bool,
    pub cycle: u64,
    pub instret: u64,
    pub counters: NocCounters,
    pub semaphores: [u32; SEMAPHORE_COUNT as usize],
}

impl CoreDebug {
    /// The core at `coord` with its hart and registers, with its last `n_pcs` PCs.
    pub(crate) fn of(coord: Coord, hart: &Hart, mmio: &CoreMmio, n_pcs: usize) -> Self {
        let mut last_pcs = hart.last_retired_pcs(n_pcs);
        last_pcs.reverse();
        CoreDebug {
            coord,
            pc: hart.pc(),
            regs: hart.regs(),
            waypoint: Waypoint(hart.mem.l1.read_u32(mailbox::WAYPOINT).unwrap_or(0)),
            last_pcs,
            halt: hart.halted(),
            in_reset: mmio.in_reset,
            cycle: hart.cycle(),
            instret: hart.instret(),
            counters: mmio.counters,
            semaphores: mmio.semaphores,
        }
    }
}

impl fmt::Display for CoreDebug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (&self.halt, self.in_reset) {
            (_, true) => "held in reset".to_string(),
            (Some(h), _) => format!("halted: {h}"),
            (None, false) => "running".to_string(),
        };
        write!(f, "core {} pc {:#010x} waypoint '{}' ({state})", self.coord, self.pc, self.waypoint)?;
        if let Some(d) = self.waypoint.describe() {
            write!(f, " [{d}]")?;
        }
        let pcs: Vec<String> = self.last_pcs.iter().map(|p| format!("{p:#x}")).collect();
        write!(f, "; last pcs: {}", pcs.join(" "))
    }
}
