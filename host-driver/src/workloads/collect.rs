//! Drains every core's trace ring while a workload runs, so runs longer
//! than a ring (`trace::CAPACITY` records per core) keep their records.
//!
//! On the embedded simulator the rings are read through the simulator's
//! untimed view, so observing a run does not change it (same seed, same
//! cycles, with or without `--trace`). Other backends read through the BAR,
//! which costs device time there; the report says which was used.

use crate::backend::read_struct;
use crate::device::Device;
use crate::error::{DriverError, Result};
use crate::sim_backend::EmbeddedSim;
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::trace::{record_addr, TraceRecord, TraceRingHeader, CAPACITY};
use zerocopy::FromBytes;

/// Where new records go as they are drained (a file writer, an analyser...).
pub trait RecordSink {
    fn records(&mut self, core: Coord, records: &[TraceRecord]) -> Result<()>;
}

/// Incremental reader of every core's ring.
pub struct TraceCollector {
    cores: Vec<Coord>,
    /// Next sequence number to read, per core.
    next: Vec<u32>,
    /// Records overwritten before they were read, per core.
    pub lost: Vec<u64>,
    /// Whether reads went through the BAR (and so cost device time).
    pub through_bar: bool,
    scratch: Vec<TraceRecord>,
}

impl TraceCollector {
    /// Starts at each core's current ring position: earlier records are skipped.
    pub fn start(dev: &mut Device) -> Result<Self> {
        let cores: Vec<Coord> = dev.all_cores().collect();
        let through_bar = sim(dev).is_none();
        let mut c =
            Self { next: vec![0; cores.len()], lost: vec![0; cores.len()], cores, through_bar, scratch: vec![] };
        for i in 0..c.cores.len() {
            c.next[i] = c.header(dev, c.cores[i])?.next_seq;
        }
        Ok(c)
    }

    pub fn cores(&self) -> &[Coord] {
        &self.cores
    }

    pub fn total_lost(&self) -> u64 {
        self.lost.iter().sum()
    }

    fn header(&self, dev: &mut Device, core: Coord) -> Result<TraceRingHeader> {
        let at = NocAddr::unicast(core, TRACE_RING.base as u64);
        match sim(dev) {
            Some(s) => {
                let mut b = [0u8; size_of::<TraceRingHeader>()];
                s.chip().read(at, &mut b).map_err(|e| DriverError::Backend(format!("simulator: {e}")))?;
                Ok(TraceRingHeader::read_from_bytes(&b).expect("sized"))
            }
            None => read_struct(dev.backend(), at),
        }
    }

    fn record(dev: &mut Device, core: Coord, seq: u32) -> Result<TraceRecord> {
        let at = NocAddr::unicast(core, record_addr(seq) as u64);
        match sim(dev) {
            Some(s) => {
                let mut b = [0u8; size_of::<TraceRecord>()];
                s.chip().read(at, &mut b).map_err(|e| DriverError::Backend(format!("simulator: {e}")))?;
                Ok(TraceRecord::read_from_bytes(&b).expect("sized"))
            }
            None => read_struct(dev.backend(), at),
        }
    }

    /// Reads every record written since the last drain and hands each
    /// core's new records, oldest first, to `sink`.
    pub fn drain(&mut self, dev: &mut Device, sink: &mut dyn RecordSink) -> Result<()> {
        for i in 0..self.cores.len() {
            let core = self.cores[i];
            let end = self.header(dev, core)?.next_seq;
            let mut from = self.next[i];
            if end.wrapping_sub(from) > CAPACITY {
                let keep = end.wrapping_sub(CAPACITY);
                self.lost[i] += keep.wrapping_sub(from) as u64;
                from = keep;
            }
            self.scratch.clear();
            let mut seq = from;
            while seq != end {
                self.scratch.push(Self::record(dev, core, seq)?);
                seq = seq.wrapping_add(1);
            }
            // A record overwritten while we read it carries a later seq.
            if let Some(bad) = self.scratch.iter().position(|r| r.seq.wrapping_sub(from) >= CAPACITY) {
                self.lost[i] += (self.scratch.len() - bad) as u64;
                self.scratch.truncate(bad);
            }
            self.next[i] = end;
            if !self.scratch.is_empty() {
                sink.records(core, &self.scratch)?;
            }
        }
        Ok(())
    }
}

fn sim(dev: &mut Device) -> Option<&mut EmbeddedSim> {
    dev.backend().as_any().and_then(|a| a.downcast_mut::<EmbeddedSim>())
}

/// A sink that keeps everything (tests, small runs).
#[derive(Default)]
pub struct KeepAll(pub Vec<TraceRecord>);

impl RecordSink for KeepAll {
    fn records(&mut self, _: Coord, records: &[TraceRecord]) -> Result<()> {
        self.0.extend_from_slice(records);
        Ok(())
    }
}
