//! The data of a hang dump (what [`crate::hang_dump`] collects when a wait
//! gives up) and how it prints. A leaf module: it imports nothing of the
//! driver, so [`crate::error`] can carry a dump without an import cycle.

use cqlab_abi::noc::Coord;
use cqlab_abi::waypoint::{self, Waypoint};
use std::fmt;

/// Pointers of one queue at a moment (ring pointers raw, with toggles).
#[derive(Clone, Debug, serde::Serialize)]
pub struct QueuePointers {
    pub cq: u8,
    pub issue_wr: u32,
    pub issue_rd: u32,
    pub fetch_issued: u32,
    pub fetch_consumed: u32,
    pub completion_rd: u32,
    pub completion_wr: u32,
    pub workers_outstanding: u32,
    pub last_event_done: u32,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct TraceLine {
    pub seq: u32,
    pub cycle: u64,
    pub kind: String,
    pub arg0: u32,
    pub arg1: u32,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct CoreState {
    pub core: String,
    pub role: String,
    pub waypoint: String,
    pub meaning: String,
    pub pc: Option<u32>,
    pub halt: Option<String>,
    pub semaphores: [u32; 4],
    pub error: Option<String>,
    pub last_trace: Vec<TraceLine>,
    #[serde(skip)]
    pub(crate) coord: Coord,
    #[serde(skip)]
    pub(crate) wp: Waypoint,
    /// Last wait target (flags, address) from the trace, for the chain.
    #[serde(skip)]
    pub(crate) wait_target: Option<(u32, u32)>,
    /// Cycle of the last `KernelStart` record in the tail, for the chain.
    #[serde(skip)]
    pub(crate) kernel_start: Option<u64>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct HangDump {
    pub waited_for: String,
    pub device_cycle: u64,
    pub queues: Vec<QueuePointers>,
    pub cores: Vec<CoreState>,
    /// Host first, then each core waited on.
    pub chain: Vec<String>,
    pub deadlock: bool,
}

impl fmt::Display for HangDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "hang dump at device cycle {} ({})", self.device_cycle, self.waited_for)?;
        writeln!(f, "wait-for chain{}:", if self.deadlock { " (DEADLOCK: cycle)" } else { "" })?;
        for (i, link) in self.chain.iter().enumerate() {
            writeln!(f, "  {}{link}", if i == 0 { "" } else { "-> " })?;
        }
        for q in &self.queues {
            writeln!(
                f,
                "CQ{}: issue wr {:#x} rd {:#x}; fetch issued {} consumed {}; completion rd {:#x} wr {:#x}; workers outstanding {}; last event {}",
                q.cq, q.issue_wr, q.issue_rd, q.fetch_issued, q.fetch_consumed, q.completion_rd, q.completion_wr,
                q.workers_outstanding, q.last_event_done
            )?;
        }
        for c in &self.cores {
            let boring = c.wp == waypoint::GOW && c.error.is_none();
            if boring {
                continue;
            }
            write!(f, "{:<16} {:<8} {:<5}", c.role, c.core, c.waypoint)?;
            if let Some(pc) = c.pc {
                write!(f, " pc={pc:#010x}")?;
            }
            write!(f, " sem={:?}", c.semaphores)?;
            if let Some(h) = &c.halt {
                write!(f, " halted: {h}")?;
            }
            writeln!(f)?;
            if let Some(e) = &c.error {
                writeln!(f, "    error: {e}")?;
            }
            for t in &c.last_trace {
                writeln!(f, "    #{:<6} @{:<10} {:<12} {:#x} {:#x}", t.seq, t.cycle, t.kind, t.arg0, t.arg1)?;
            }
        }
        let idle = self.cores.iter().filter(|c| c.wp == waypoint::GOW && c.error.is_none()).count();
        writeln!(f, "({idle} workers idle in GOW not shown)")
    }
}
