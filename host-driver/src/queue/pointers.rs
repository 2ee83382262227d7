//! A queue's pointers at a moment, for hang dumps, `cqlab status` and
//! occupancy samples: the host's own, or, for an observer of a device
//! another process drives, derived from the device.

use super::state::Queues;
use crate::backend::Backend;
use crate::config::DeviceConfig;
use crate::dump::QueuePointers;
use crate::error::Result;
use cqlab_abi::fetch_queue::{self, FetchEntry};
use cqlab_abi::mailbox;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::ring::RingPtr;
use cqlab_abi::sysmem::{COMPLETION_WR_PTR, FETCH_RD_COUNT, ISSUE_RD_PTR};
use cqlab_abi::waypoint;

impl Queues {
    /// Queue `q`'s pointers (reads sysmem only, no BAR, unless observing).
    pub(crate) fn pointers_of(&self, backend: &mut dyn Backend, cfg: &DeviceConfig, q: u8) -> Result<QueuePointers> {
        let issue_rd = RingPtr(self.header_word(backend, q, ISSUE_RD_PTR)?);
        let fetched = self.header_word(backend, q, FETCH_RD_COUNT)?;
        let completion_wr = RingPtr(self.header_word(backend, q, COMPLETION_WR_PTR)?);
        if self.observer {
            return self.observed(backend, cfg, q, issue_rd, fetched, completion_wr);
        }
        let cq = &self.list[q as usize];
        Ok(QueuePointers {
            cq: q,
            issue_wr: cq.issue_wr,
            issue_rd,
            fetch_issued: cq.fetch_issued,
            fetch_consumed: fetched,
            completion_rd: cq.completion_rd,
            completion_wr,
            launches_unwaited: Some(cq.workers_outstanding),
            workers_running: None,
            last_event_done: cq.last_event_done,
        })
    }

    /// Queue pointers as an observer sees them: the host-side ones derived
    /// from the device (the owner's completion read pointer and last event
    /// from the dispatcher's mailboxes, pending fetch entries from the
    /// prefetcher's fetch queue, running kernels from worker waypoints). A
    /// read that fails is the error, not a pointer of 0 (an empty queue).
    fn observed(
        &self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        q: u8,
        issue_rd: RingPtr,
        fetched: u32,
        completion_wr: RingPtr,
    ) -> Result<QueuePointers> {
        let d = self.chip.dispatcher(q);
        let mut word = |c: Coord, a: u32| backend.read_u32(NocAddr::unicast(c, a as u64));
        let completion_rd = RingPtr(word(d, mailbox::COMPLETION_RD_PTR)?);
        let last_event_done = word(d, mailbox::last_event(q))?;
        // Each slot: entry, source and split words.
        let slot = fetch_queue::SLOT_SIZE as usize;
        let mut slots = vec![0u8; slot * cfg.fetch_entries as usize];
        let at = NocAddr::unicast(self.chip.prefetcher(q), fetch_queue::slot_addr(0) as u64);
        backend.read(at, &mut slots)?;
        let word = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
        let split_at = fetch_queue::SPLIT_OFFSET as usize;
        let pending: Vec<(u32, u32)> =
            slots.chunks_exact(slot).map(|s| (word(s), word(&s[split_at..]))).filter(|&(raw, _)| raw != 0).collect();
        let pending_bytes: u32 =
            pending.iter().filter_map(|&(raw, split)| Some(FetchEntry::from_raw(raw).ok()?.issue_bytes(split))).sum();
        let issue_size = self.list[q as usize].layout.issue_size;
        let mut running = 0;
        for w in self.chip.workers() {
            running += (backend.read_u32(NocAddr::unicast(w, mailbox::WAYPOINT as u64))? == waypoint::RUN.0) as u32;
        }
        Ok(QueuePointers {
            cq: q,
            issue_wr: issue_rd.advance(pending_bytes, issue_size),
            issue_rd,
            fetch_issued: fetched.wrapping_add(pending.len() as u32),
            fetch_consumed: fetched,
            completion_rd,
            completion_wr,
            launches_unwaited: None,
            workers_running: Some(running),
            last_event_done,
        })
    }
}
