//! Per-core debug view for hang dumps: what a host can ask the simulator
//! that silicon would not tell it (PC, registers, recent PCs, halt reason),
//! plus the waypoint the firmware keeps in its mailbox, the NIU counters of
//! the core's NOC and the tile's semaphores.

use crate::hart::{Halt, Hart};
use crate::memory::Ram;
use crate::tensix::{CoreId, TensixRegs};
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::Noc;
use cqlab_abi::mailbox;
use cqlab_abi::semaphore;
use cqlab_abi::waypoint::Waypoint;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreDebug {
    pub id: CoreId,
    pub pc: u32,
    pub regs: [u32; 32],
    /// The firmware's current waypoint (BRISC: `mailbox::WAYPOINT`; the
    /// others: their `mailbox::SubordinateMailbox`).
    pub waypoint: Waypoint,
    /// Most recently retired PCs, oldest first.
    pub last_pcs: Vec<u32>,
    pub halt: Option<Halt>,
    pub in_reset: bool,
    pub cycle: u64,
    pub instret: u64,
    /// The NOC the core's firmware uses (BRISC NOC0, NCRISC NOC1; NOC0 for
    /// the TRISCs) and that NIU's `NOC_STATUS` counters.
    pub noc: Noc,
    pub noc_status: [u32; 64],
    /// The tile's semaphores.
    pub semaphores: [u32; semaphore::COUNT as usize],
}

impl CoreDebug {
    /// The view of core `id` (its hart, whether held in reset) of a tile
    /// with L1 `l1` and registers `regs`, with its last `n_pcs` PCs.
    pub(crate) fn of(id: CoreId, hart: &Hart, in_reset: bool, l1: &Ram, regs: &TensixRegs, n_pcs: usize) -> Self {
        let mut last_pcs = hart.last_retired_pcs(n_pcs);
        last_pcs.reverse();
        let p = id.processor;
        let waypoint_at = match p {
            Processor::Brisc => mailbox::WAYPOINT,
            _ => mailbox::subordinate(p.index()) + mailbox::SUB_WAYPOINT,
        };
        let noc = if p == Processor::Ncrisc { Noc::Noc1 } else { Noc::Noc0 };
        let niu = &regs.niu[noc.index() as usize];
        CoreDebug {
            id,
            pc: hart.pc(),
            regs: hart.regs(),
            waypoint: Waypoint(l1.read_u32(waypoint_at).unwrap_or(0)),
            last_pcs,
            halt: hart.halted(),
            in_reset,
            cycle: hart.cycle(),
            instret: hart.instret(),
            noc,
            noc_status: std::array::from_fn(|i| niu.counter(i as u32)),
            semaphores: std::array::from_fn(|i| l1.read_u32(semaphore::addr(i as u32)).unwrap_or(0)),
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
        write!(f, "core {} pc {:#010x} waypoint '{}' ({state})", self.id, self.pc, self.waypoint)?;
        if let Some(d) = self.waypoint.describe() {
            write!(f, " [{d}]")?;
        }
        let pcs: Vec<String> = self.last_pcs.iter().map(|p| format!("{p:#x}")).collect();
        write!(f, "; last pcs: {}", pcs.join(" "))
    }
}
