//! Drains every core's trace ring while a workload runs, so runs longer
//! than a ring (`trace::CAPACITY` records per core) keep their records.
//!
//! Where the backend can read as an observer (the embedded simulator, a
//! daemon, cqlab's libttsim library) the rings are read so, and observing a
//! run does not change it (same seed, same cycles, with or without
//! `--trace`). Other backends read through the BAR, which costs device time
//! there; the report says which was used.

use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::trace::{record_addr, TraceRecord, TraceRingHeader, CAPACITY};
use cqlab_driver::backend::read_struct;
use cqlab_driver::error::Result;
use cqlab_driver::Device;
use zerocopy::{FromBytes, IntoBytes};

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
        let probe = NocAddr::unicast(cores[0], TRACE_RING.base as u64);
        let through_bar = !peek(dev, probe, &mut [0u8; 4])?;
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
        read_untimed(dev, NocAddr::unicast(core, TRACE_RING.base as u64))
    }

    fn record(dev: &mut Device, core: Coord, seq: u32) -> Result<TraceRecord> {
        read_untimed(dev, NocAddr::unicast(core, record_addr(seq) as u64))
    }

    /// Reads every record written since the last drain and hands each
    /// core's new records, oldest first, to `sink`.
    pub fn drain(&mut self, dev: &mut Device, sink: &mut dyn RecordSink) -> Result<()> {
        for i in 0..self.cores.len() {
            let core = self.cores[i];
            let end = self.header(dev, core)?.next_seq;
            let mut from = self.next[i];
            // Record `end` goes into the slot of `end - CAPACITY`, cycle
            // first and seq after: a core stopped between those stores has
            // that slot half new (helper-47: a trace's cycle went
            // backwards under its old seq). The oldest record to trust is
            // the one after it.
            if end.wrapping_sub(from) >= CAPACITY {
                let keep = end.wrapping_sub(CAPACITY - 1);
                self.lost[i] += keep.wrapping_sub(from) as u64;
                from = keep;
            }
            self.scratch.clear();
            let mut seq = from;
            while seq != end {
                self.scratch.push(Self::record(dev, core, seq)?);
                seq = seq.wrapping_add(1);
            }
            if self.through_bar {
                // Reads through the BAR take device time: the core may have
                // written on, over (or into) the oldest slots read.
                let now = self.header(dev, core)?.next_seq;
                let over = (now.wrapping_sub(from).saturating_sub(CAPACITY - 1) as usize).min(self.scratch.len());
                self.lost[i] += over as u64;
                self.scratch.drain(..over);
                from = from.wrapping_add(over as u32);
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

/// An untimed read where the backend has one (see [`cqlab_driver::backend::Introspect::peek`]).
fn peek(dev: &mut Device, at: NocAddr, buf: &mut [u8]) -> Result<bool> {
    match dev.backend().introspect() {
        Some(i) => i.peek(at, buf),
        None => Ok(false),
    }
}

/// `T` at `at`: untimed where the backend can, else through the BAR.
fn read_untimed<T: FromBytes + IntoBytes>(dev: &mut Device, at: NocAddr) -> Result<T> {
    let mut v = T::new_zeroed();
    if peek(dev, at, v.as_mut_bytes())? {
        return Ok(v);
    }
    read_struct(dev.backend(), at)
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

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_driver::DeviceConfig;

    /// A core stopped between the stores of record `CAPACITY` has written
    /// its cycle into the slot of record 0 but not its seq: the drain
    /// leaves that slot out (lost), never reads it as record 0 with a cycle
    /// from the future (helper-47: a trace's cycle went backwards).
    #[test]
    fn a_slot_being_rewritten_is_left_out_not_read_torn() {
        let mut dev = Device::embedded(Default::default(), DeviceConfig::default()).unwrap();
        let core = dev.all_cores().last().unwrap();
        let at = |a: u32| NocAddr::unicast(core, a as u64);
        let header = |next_seq| TraceRingHeader {
            next_seq,
            capacity: CAPACITY,
            record_size: size_of::<TraceRecord>() as u32,
            _reserved: 0,
        };
        dev.backend().write(at(TRACE_RING.base), header(0).as_bytes()).unwrap();
        let mut c = TraceCollector::start(&mut dev).unwrap();
        let i = c.cores().iter().position(|&x| x == core).unwrap();
        for seq in 0..CAPACITY {
            let r = TraceRecord { cycle: 100 + seq as u64, seq, ..Default::default() };
            dev.backend().write(at(record_addr(seq)), r.as_bytes()).unwrap();
        }
        // Record CAPACITY half stored over record 0: its cycle, not its seq.
        let torn = TraceRecord { cycle: 1_000_000, seq: 0, ..Default::default() };
        dev.backend().write(at(record_addr(0)), torn.as_bytes()).unwrap();
        dev.backend().write(at(TRACE_RING.base), header(CAPACITY).as_bytes()).unwrap();
        let mut kept = KeepAll::default();
        c.drain(&mut dev, &mut kept).unwrap();
        let seqs: Vec<u32> = kept.0.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (1..CAPACITY).collect::<Vec<_>>());
        assert!(kept.0.windows(2).all(|w| w[0].cycle < w[1].cycle));
        assert_eq!(c.lost[i], 1);
    }
}
