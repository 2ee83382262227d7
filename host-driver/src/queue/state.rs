//! What the host holds for each command queue ([`Queue`]) and for all of
//! them together ([`Queues`]): ring positions, outstanding work, read-backs
//! and events, the trace being captured, the programs sent, staging.

use super::program_state::ProgramState;
use super::staging::Staging;
use super::trace::Capture;
use crate::backend::Backend;
use crate::config::DeviceConfig;
use crate::dump::{HostPublished, QueuePointers, RungEntry, RUNG_KEPT};
use crate::error::{Result, StateError};
use crate::geometry::Topology;
use crate::wait::Waiting;
use cqlab_abi::ring::RingPtr;
use cqlab_abi::sysmem::CqSysmemLayout;
use cqlab_abi::sysmem::{COMPLETION_WR_PTR, FETCH_RD_COUNT, ISSUE_RD_PTR};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Completed events per queue whose device cycle `Device::event_cycle` keeps.
pub const EVENT_CYCLES_KEPT: usize = 1024;

/// Host-side state of one command queue.
#[derive(Debug)]
pub(crate) struct Queue {
    pub(super) layout: CqSysmemLayout,
    pub(super) issue_wr: RingPtr,
    pub(super) fetch_issued: u32,
    /// The device's issue-queue read pointer and fetch count as last read:
    /// both only advance, so space they show free is free (`reserve` reads
    /// them again only when they show too little).
    pub(super) issue_rd_seen: RingPtr,
    pub(super) fetched_seen: u32,
    pub(super) completion_rd: RingPtr,
    /// The completion read pointer last written to the dispatcher.
    pub(super) completion_rd_published: RingPtr,
    /// The last fetch entries rung (`RUNG_KEPT`), oldest first.
    pub(super) last_rung: VecDeque<RungEntry>,
    /// Worker completions launched on this queue not yet waited for.
    pub(super) workers_outstanding: u32,
    /// Completions the chunk being built will clear (see `submit_clearing`).
    pub(super) clear_pending: u32,
    /// Events of this queue known complete (ids are increasing per queue).
    pub(super) last_event_done: u32,
    /// (event id, dispatcher cycle when it completed) of the latest
    /// `EVENT_CYCLES_KEPT` completed events, oldest first.
    pub(super) event_cycles: VecDeque<(u32, u64)>,
    /// Read-back data by tag.
    pub(super) reads: HashMap<u32, Vec<u8>>,
    pub(super) next_tag: u32,
    /// The records this queue's dispatcher owes, in stream order (a queue
    /// completes its commands in order): a record that is not the next
    /// one is refused, not stored under a tag nobody waits for.
    pub(super) awaited: VecDeque<Awaited>,
    /// Slow dispatch: worker completions expected on the done counter.
    pub(super) slow_expected: u32,
    /// Slow dispatch: launches written into this queue's launch ring (the
    /// tag of the last; workers count each queue's ring on its own).
    pub(super) slow_launches: u32,
    /// The trace being captured instead of issued.
    pub(super) capture: Option<Capture>,
    /// Records drained; also the sequence number the next record must carry.
    pub(super) completions: u64,
    /// Programs launched from this queue, in stream order (captured ones
    /// counted as they would run; a replay adds its trace's): the launch
    /// numbers `program_state` names programs by.
    pub(super) program_launches: u64,
    /// Highest launch number an earlier WAIT in this queue's stream already
    /// waited to finish.
    pub(super) waited_launch: u64,
    /// What the workers hold for this queue's programs (its kernel text
    /// slots and its share of the kernel-config ring).
    pub(super) programs: ProgramState,
    /// Where this queue stages large blobs (`None`: sysmem has no room).
    pub(super) staging: Option<Staging>,
    /// Where a chunk around a staged piece is encoded (kept: its staged
    /// part is never written, so it is never cleared either).
    pub(super) scratch: Vec<u8>,
}

impl Queue {
    fn new(cfg: &DeviceConfig, chip: &Topology, q: u8) -> Self {
        Self {
            layout: cfg.queue_layout(q),
            issue_wr: RingPtr::default(),
            fetch_issued: 0,
            issue_rd_seen: RingPtr::default(),
            fetched_seen: 0,
            completion_rd: RingPtr::default(),
            completion_rd_published: RingPtr::default(),
            last_rung: VecDeque::with_capacity(RUNG_KEPT),
            workers_outstanding: 0,
            clear_pending: 0,
            last_event_done: 0,
            event_cycles: VecDeque::new(),
            reads: HashMap::new(),
            next_tag: 1,
            awaited: VecDeque::new(),
            slow_expected: 0,
            slow_launches: 0,
            capture: None,
            completions: 0,
            program_launches: 0,
            waited_launch: 0,
            programs: ProgramState::new(chip.arch(), chip.cols(), chip.rows(), q, cfg.num_cqs),
            staging: None,
            scratch: Vec::new(),
        }
    }

    /// What the host had last published on this queue (queue `q`).
    pub(super) fn published(&self, q: u8) -> HostPublished {
        HostPublished {
            cq: q,
            issue_wr: self.issue_wr,
            fetch_rung: self.fetch_issued,
            last_rung: self.last_rung.iter().copied().collect(),
            issue_rd_seen: self.issue_rd_seen,
            fetched_seen: self.fetched_seen,
            completion_rd_published: self.completion_rd_published,
            completion_rd_consumed: self.completion_rd,
            launches: self.program_launches,
            launch_waited: self.waited_launch,
        }
    }

    /// Records fetch entry `raw` rung into `slot` for a chunk at `issue_at`.
    pub(super) fn rung(&mut self, slot: u32, raw: u32, issue_at: RingPtr) {
        if self.last_rung.len() == RUNG_KEPT {
            self.last_rung.pop_front();
        }
        self.last_rung.push_back(RungEntry { number: self.fetch_issued, slot, raw, issue_at });
    }

    /// A fresh read-back tag (never 0).
    pub(super) fn take_tag(&mut self) -> u32 {
        let tag = self.next_tag;
        self.next_tag = tag.wrapping_add(1).max(1);
        tag
    }
}

/// A completion record a queue's dispatcher owes the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Awaited {
    /// Read-back data: its tag and the bytes relayed (whole pages).
    Read {
        tag: u32,
        length: u32,
    },
    Event {
        id: u32,
    },
}

impl std::fmt::Display for Awaited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Awaited::Read { tag, length } => write!(f, "read-back tag {tag} of {length} bytes"),
            Awaited::Event { id } => write!(f, "event {id}"),
        }
    }
}

/// Every queue of a device, and what they share.
#[derive(Debug)]
pub struct Queues {
    /// The chip the queues run on (where their cores and workers are).
    pub(super) chip: Arc<Topology>,
    pub(super) list: Vec<Queue>,
    /// Next event id (ids start at 1, shared by all queues).
    pub(super) next_event: u32,
    /// Sequence number of the next worker launch (unique across queues).
    pub(super) next_launch_seq: u32,
    /// Polls of waits since the host last read completions in one
    /// (`DeviceConfig::drain_every_polls`).
    pub(super) polls_since_drain: u32,
    /// A read-only view of a device another process drives: pointers are
    /// derived from the device.
    pub(super) observer: bool,
}

impl Queues {
    /// The queues of a device shaped like `cfg` on `chip`, empty.
    pub(crate) fn new(cfg: &DeviceConfig, chip: Arc<Topology>) -> Self {
        Self {
            list: (0..cfg.num_cqs).map(|q| Queue::new(cfg, &chip, q)).collect(),
            chip,
            next_event: 1,
            next_launch_seq: 0,
            polls_since_drain: 0,
            observer: false,
        }
    }

    /// Back to empty, as the firmware starts its queues after a boot; each
    /// queue stages in its arena of sysmem (none: copy everything).
    pub(crate) fn reboot(&mut self, cfg: &DeviceConfig, arenas: Vec<Option<Staging>>) {
        self.list = (0..cfg.num_cqs).map(|q| Queue::new(cfg, &self.chip, q)).collect();
        for (queue, arena) in self.list.iter_mut().zip(arenas) {
            queue.staging = arena;
        }
        self.next_launch_seq = 0;
    }

    #[cfg(feature = "daemon")]
    pub(crate) fn set_observer(&mut self) {
        self.observer = true;
    }

    /// Slow dispatch: the done count the workers of queue `q` start from.
    pub(crate) fn set_slow_expected(&mut self, q: u8, count: u32) {
        self.list[q as usize].slow_expected = count;
    }

    /// The seq the next worker launch will carry in its launch message and
    /// in its workers' kernel trace records (unique across queues).
    pub fn next_launch_seq(&self) -> u32 {
        self.next_launch_seq
    }

    /// Queue `q`, or an error naming how many there are.
    pub(super) fn get(&mut self, q: u8) -> Result<&mut Queue> {
        let count = self.list.len() as u8;
        self.list.get_mut(q as usize).ok_or(StateError::NoSuchQueue { q, count }.into())
    }

    /// A word of queue `q`'s sysmem header (a device-written pointer).
    pub(super) fn header_word(&self, backend: &mut dyn Backend, q: u8, offset: u32) -> Result<u32> {
        backend.sysmem_read_u32(self.header_offset(q, offset))
    }

    /// The same word read as an observer (`Backend::sysmem_peek_u32`).
    fn header_peek(&self, backend: &mut dyn Backend, q: u8, offset: u32) -> Result<u32> {
        backend.sysmem_peek_u32(self.header_offset(q, offset))
    }

    fn header_offset(&self, q: u8, offset: u32) -> usize {
        (self.list[q as usize].layout.header() + offset as u64) as usize
    }
}

impl Waiting for Queues {
    fn polled(&mut self) {
        self.polls_since_drain = self.polls_since_drain.saturating_add(1);
    }

    fn checked(&mut self) {
        self.polls_since_drain = u32::MAX;
    }

    fn pointers(&mut self, backend: &mut dyn Backend, cfg: &DeviceConfig) -> Result<Vec<QueuePointers>> {
        (0..cfg.num_cqs).map(|q| self.pointers_of(backend, cfg, q)).collect()
    }

    fn host(&self) -> Vec<HostPublished> {
        if self.observer {
            return Vec::new();
        }
        self.list.iter().enumerate().map(|(q, cq)| cq.published(q as u8)).collect()
    }

    fn advanced_to(&mut self, backend: &mut dyn Backend) -> Result<Vec<u32>> {
        let mut words = Vec::with_capacity(3 * self.list.len());
        for q in 0..self.list.len() as u8 {
            for offset in [ISSUE_RD_PTR, FETCH_RD_COUNT, COMPLETION_WR_PTR] {
                words.push(self.header_peek(backend, q, offset)?);
            }
        }
        Ok(words)
    }
}
