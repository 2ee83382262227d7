//! Reads a core's trace ring through the BAR.

use crate::device::Device;
use crate::error::Result;
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::trace::{record_addr, TraceRecord, TraceRingHeader, CAPACITY};
use zerocopy::FromBytes;

/// The records still in a core's ring, oldest first.
#[derive(Clone, Debug)]
pub struct CoreTrace {
    pub core: Coord,
    pub records: Vec<TraceRecord>,
    /// Records overwritten before they could be read.
    pub lost: u32,
}

impl Device {
    pub fn read_trace(&mut self, core: Coord) -> Result<CoreTrace> {
        let mut hdr = [0u8; 16];
        self.backend.read(NocAddr::unicast(core, TRACE_RING.base as u64), &mut hdr)?;
        let next = TraceRingHeader::read_from_bytes(&hdr).expect("16 bytes").next_seq;
        let first = next.saturating_sub(CAPACITY);
        let mut records = Vec::with_capacity((next - first) as usize);
        let mut raw = [0u8; 24];
        for seq in first..next {
            self.backend.read(NocAddr::unicast(core, record_addr(seq) as u64), &mut raw)?;
            records.push(TraceRecord::read_from_bytes(&raw).expect("24 bytes"));
        }
        Ok(CoreTrace { core, records, lost: first })
    }
}
