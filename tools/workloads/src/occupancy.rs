//! Fetch-queue and completion-queue occupancy over time, per queue.
//!
//! Each queue has a producer and a consumer on opposite sides:
//! - fetch queue: the host issues entries, the prefetcher takes them
//!   (`FetchConsumed` records, device-timestamped);
//! - completion queue: the dispatcher writes records (`CompletionWrite`
//!   records carry its write pointer after the write), the host consumes.
//!
//! The device side is known at every record, so a point is added at each
//! `FetchConsumed` and `CompletionWrite`. The host side is known at host
//! samples (iteration start, after enqueuing, after synchronising, end):
//! at a device record the host's count is the latest host sample at or
//! before that cycle. On the embedded simulator device time stands still
//! while the host enqueues without waiting, so that value is exact; when
//! the host waited for fetch-queue space during an enqueue, entries it
//! issued inside that wait are not yet counted, and the fetch-queue figure
//! there is a lower bound (never below zero: a taken entry was issued).

use cqlab_abi::ring::RingPtr;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct OccupancySample {
    pub cycle: u64,
    pub cq: u8,
    /// "host": the host read the pointers; "device": at a prefetcher's
    /// fetch or a dispatcher's completion record (see `occupancy`).
    pub source: &'static str,
    /// Fetch-queue entries issued and not yet taken by the prefetcher.
    pub fetch_entries: u32,
    /// Completion-queue bytes written by the dispatcher and not yet consumed.
    pub completion_bytes: u32,
}

/// A device record that changes a queue's occupancy.
#[derive(Clone, Copy, Debug)]
enum Change {
    FetchTaken,
    CompletionWritten { wr: u32 },
}

#[derive(Clone, Debug, Default)]
struct Queue {
    /// Host samples, in time order: (cycle, entries issued, completion read pointer).
    host: Vec<(u64, u32, u32)>,
    /// Entries the prefetcher has taken (base from the first host sample).
    consumed: u32,
    /// The dispatcher's completion write pointer after its latest record.
    completion_wr: u32,
}

/// Builds the per-queue series from host samples and device records.
#[derive(Clone, Debug, Default)]
pub struct Occupancy {
    queues: Vec<Queue>,
    completion_size: u32,
    /// Device records since the last `take_new`: (cycle, queue, change).
    /// A drain hands over one core at a time, so a prefetcher's records
    /// come before its dispatcher's earlier ones; they are applied in
    /// cycle order once the whole drain is in.
    pending: Vec<(u64, u8, Change)>,
    /// Every point, per queue.
    pub series: Vec<Vec<OccupancySample>>,
}

impl Occupancy {
    pub fn new(cqs: u8, completion_size: u32) -> Self {
        Self {
            queues: vec![Queue::default(); cqs as usize],
            completion_size,
            pending: Vec::new(),
            series: vec![Vec::new(); cqs as usize],
        }
    }

    /// Forgets the points so far (the queues' counters stay: later records
    /// go on from them).
    pub fn forget_points(&mut self) {
        self.series.iter_mut().for_each(Vec::clear);
    }

    /// A host sample of queue `cq`'s pointers at `cycle`; returns its point.
    /// The first sample also sets the device-side counters (taken when
    /// the device is idle, before any record is read).
    pub fn host_sample(
        &mut self,
        cq: u8,
        cycle: u64,
        issued: u32,
        consumed: u32,
        completion_wr: u32,
        completion_rd: u32,
    ) -> OccupancySample {
        let q = &mut self.queues[cq as usize];
        if q.host.is_empty() {
            q.consumed = consumed;
            q.completion_wr = completion_wr;
        }
        q.host.push((cycle, issued, completion_rd));
        let s = OccupancySample {
            cycle,
            cq,
            fetch_entries: issued.wrapping_sub(consumed),
            completion_bytes: RingPtr::used(RingPtr(completion_wr), RingPtr(completion_rd), self.completion_size),
            source: "host",
        };
        self.series[cq as usize].push(s.clone());
        s
    }

    /// The prefetcher of `cq` took a fetch-queue entry at `cycle`.
    pub fn fetch_consumed(&mut self, cq: u8, cycle: u64) {
        if (cq as usize) < self.queues.len() {
            self.pending.push((cycle, cq, Change::FetchTaken));
        }
    }

    /// The dispatcher of `cq` wrote a completion record; `wr` is its write pointer after.
    pub fn completion_written(&mut self, cq: u8, cycle: u64, wr: u32) {
        if (cq as usize) < self.queues.len() {
            self.pending.push((cycle, cq, Change::CompletionWritten { wr }));
        }
    }

    fn point(&mut self, cq: u8, cycle: u64, change: Change) -> Option<OccupancySample> {
        let q = &mut self.queues[cq as usize];
        match change {
            Change::FetchTaken => q.consumed = q.consumed.wrapping_add(1),
            Change::CompletionWritten { wr } => q.completion_wr = wr,
        }
        if q.host.is_empty() {
            return None;
        }
        let n = q.host.partition_point(|h| h.0 <= cycle);
        let (_, issued, rd) = q.host[n.saturating_sub(1)];
        // A taken entry was issued: the host count is at least the device's.
        let outstanding = issued.wrapping_sub(q.consumed);
        let fetch_entries = if (outstanding as i32) < 0 { 0 } else { outstanding };
        let completion_bytes = RingPtr::used(RingPtr(q.completion_wr), RingPtr(rd), self.completion_size);
        let s = OccupancySample { cycle, cq, fetch_entries, completion_bytes, source: "device" };
        self.series[cq as usize].push(s.clone());
        Some(s)
    }

    /// Applies the device records handed over since the last call, in
    /// cycle order, and returns their points. Call after a whole drain.
    pub fn take_new(&mut self) -> Vec<OccupancySample> {
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by_key(|p| p.0);
        pending.into_iter().filter_map(|(cycle, cq, change)| self.point(cq, cycle, change)).collect()
    }

    /// Drops host samples no later record can need (records of one core
    /// arrive in time order; every core has been drained up to `cycle`).
    pub fn prune_before(&mut self, cycle: u64) {
        for q in &mut self.queues {
            let n = q.host.partition_point(|h| h.0 <= cycle);
            if n > 1 {
                q.host.drain(..n - 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_points_use_the_latest_host_sample_at_or_before_them() {
        let mut o = Occupancy::new(1, 4096);
        o.host_sample(0, 100, 0, 0, 0, 0);
        // The host issues 3 entries at cycle 200 (device time stood still).
        o.host_sample(0, 200, 3, 0, 0, 0);
        o.fetch_consumed(0, 250);
        o.fetch_consumed(0, 300);
        // Ring pointers count 16-byte units: 4 units = 64 bytes.
        o.completion_written(0, 320, 4);
        let pts = o.take_new();
        let f: Vec<(u64, u32, u32)> = pts.iter().map(|p| (p.cycle, p.fetch_entries, p.completion_bytes)).collect();
        assert_eq!(f, vec![(250, 2, 0), (300, 1, 0), (320, 1, 64)]);
        // The host consumed the completion at 400.
        o.host_sample(0, 400, 3, 2, 4, 4);
        o.fetch_consumed(0, 450);
        assert_eq!(o.take_new()[0].fetch_entries, 0);
        assert_eq!(o.take_new().len(), 0);
    }

    #[test]
    fn records_of_one_drain_apply_in_cycle_order_across_cores() {
        let mut o = Occupancy::new(1, 4096);
        o.host_sample(0, 100, 1, 0, 0, 0);
        // The dispatcher wrote 64 bytes at 150; the host consumed them by 200.
        o.host_sample(0, 200, 1, 0, 4, 4);
        // Drain order: the prefetcher's later record first, then the dispatcher's.
        o.fetch_consumed(0, 250);
        o.completion_written(0, 150, 4);
        let f: Vec<(u64, u32, u32)> =
            o.take_new().iter().map(|p| (p.cycle, p.fetch_entries, p.completion_bytes)).collect();
        assert_eq!(f, vec![(150, 1, 64), (250, 0, 0)]);
    }

    #[test]
    fn an_entry_taken_before_the_host_sample_saw_it_issued_is_never_negative() {
        let mut o = Occupancy::new(1, 4096);
        o.host_sample(0, 100, 0, 0, 0, 0);
        // The host waited inside an enqueue: the prefetcher took an entry
        // issued after the last host sample.
        o.fetch_consumed(0, 150);
        assert_eq!(o.take_new()[0].fetch_entries, 0);
    }
}
