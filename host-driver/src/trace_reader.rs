//! Reads a core's trace ring through the BAR.

use crate::backend::{read_struct, Backend};
use crate::error::Result;
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::trace::{record_addr, TraceRecord, TraceRingHeader, CAPACITY};

/// The records still in a core's ring, oldest first.
#[derive(Clone, Debug)]
pub struct CoreTrace {
    pub core: Coord,
    pub records: Vec<TraceRecord>,
    /// Records overwritten before they could be read.
    pub lost: u32,
}

/// The newest `max` records of `core`'s ring (at most its capacity less
/// one): record `next_seq` goes into the oldest slot, cycle first, so a core
/// stopped between those stores leaves that slot half new (helper-51: the
/// trace collector's fix, 7da62e3, is needed here too).
pub fn read_tail(backend: &mut dyn Backend, core: Coord, max: u32) -> Result<CoreTrace> {
    let header: TraceRingHeader = read_struct(backend, NocAddr::unicast(core, TRACE_RING.base as u64))?;
    let next = header.next_seq;
    let first = next.saturating_sub(max.min(CAPACITY - 1));
    let mut records = Vec::with_capacity((next - first) as usize);
    for seq in first..next {
        records.push(read_struct(backend, NocAddr::unicast(core, record_addr(seq) as u64))?);
    }
    Ok(CoreTrace { core, records, lost: next.saturating_sub(CAPACITY - 1) })
}
