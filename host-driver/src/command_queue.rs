//! Command queues: the host side of the issue queue, fetch queue and
//! completion queue, and the operations users enqueue.
//!
//! Every operation becomes one chunk (one fetch-queue entry) of prefetch
//! commands. While the host waits for issue-queue space or a fetch slot it
//! keeps draining every completion queue, so no enqueue depth deadlocks.

use crate::buffer::{Buffer, Placement};
use crate::device::Device;
use crate::dump::QueuePointers;
use crate::error::{DriverError, Result};
use crate::events::Event;
use cqlab_abi::completion::{record_size, CompletionHeader, CompletionKind, EventRecord};
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::{DispatchWriter, EncodeError, Encoder, PackedData};
use cqlab_abi::fetch_queue::{self, FetchEntry, Split};
use cqlab_abi::mailbox;
use cqlab_abi::memory_map::MAX_CHUNK;
use cqlab_abi::mmio::sem;
use cqlab_abi::noc::{self, Coord, NocAddr};
use cqlab_abi::prefetch::{PagedFlags, EXEC_BUF_HEAD_MAX};
use cqlab_abi::ring::RingPtr;
use cqlab_abi::sysmem::{CqSysmemLayout, COMPLETION_WR_PTR, FETCH_RD_COUNT, ISSUE_RD_PTR};
use cqlab_abi::PCIE_ALIGNMENT;
use std::collections::HashMap;
use std::mem::size_of;
use zerocopy::{FromBytes, FromZeros, IntoBytes};

/// Largest payload put inline in one chunk (leaves room for headers).
const MAX_INLINE: usize = 32 * 1024;

/// Completed events per queue whose device cycle `Device::event_cycle` keeps.
pub const EVENT_CYCLES_KEPT: usize = 1024;

/// Host-side state of one command queue.
#[derive(Debug)]
pub struct CqHost {
    pub(crate) layout: CqSysmemLayout,
    pub(crate) issue_wr: RingPtr,
    pub(crate) fetch_issued: u32,
    /// The device's issue-queue read pointer and fetch count as last read:
    /// both only advance, so space they show free is free (`reserve` reads
    /// them again only when they show too little).
    issue_rd_seen: RingPtr,
    pub(crate) fetched_seen: u32,
    pub(crate) completion_rd: RingPtr,
    /// Worker completions launched on this queue not yet waited for.
    pub(crate) workers_outstanding: u32,
    /// Completions the chunk being built will clear (see `submit_clearing`).
    pub(crate) clear_pending: u32,
    /// Events of this queue known complete (ids are increasing per queue).
    pub(crate) last_event_done: u32,
    /// (event id, dispatcher cycle when it completed) of the latest
    /// `EVENT_CYCLES_KEPT` completed events, oldest first.
    pub(crate) event_cycles: std::collections::VecDeque<(u32, u64)>,
    /// Read-back data by tag.
    pub(crate) reads: HashMap<u32, Vec<u8>>,
    pub(crate) next_tag: u32,
    /// Slow dispatch: worker completions expected on the done counter.
    pub(crate) slow_expected: u32,
    /// Slow dispatch: launches written into this queue's launch ring (the
    /// tag of the last; workers count each queue's ring on its own).
    pub(crate) slow_launches: u32,
    /// Chunks captured by `begin_trace` instead of being issued.
    pub(crate) capture: Option<Vec<u8>>,
    /// Records drained; also the sequence number the next record must carry.
    pub(crate) completions: u64,
    /// Programs launched from this queue, in stream order (captured ones
    /// counted as they would run; a replay adds its trace's): the launch
    /// numbers `program_state` names programs by.
    pub(crate) program_launches: u64,
    /// Highest launch number an earlier WAIT in this queue's stream already
    /// waited to finish.
    pub(crate) waited_launch: u64,
    /// Program state, `program_launches` and `waited_launch` when the
    /// current capture began.
    pub(crate) capture_saved: Option<(crate::program_state::ProgramState, u64, u64)>,
    /// Kernels the current capture found resident and did not send.
    pub(crate) capture_relies: Vec<Resident>,
    /// The launch number standing for "the launch before a replay" in the
    /// current capture, and whether a captured program reuses something it
    /// used (so a replay must first wait for the launch before it).
    pub(crate) capture_before: u64,
    pub(crate) capture_waits_before: bool,
    /// Where this queue stages large blobs (`None`: sysmem has no room).
    pub(crate) staging: Option<crate::staging::Staging>,
    /// Where a chunk around a staged piece is encoded (kept: its staged
    /// part is never written, so it is never cleared either).
    pub(crate) scratch: Vec<u8>,
}

/// A kernel a trace found resident when it was captured (in text slot
/// `slot`, on the workers of `kernel`'s only kernel): a replay that no
/// longer finds it there sends it first.
#[derive(Clone, Debug)]
pub(crate) struct Resident {
    pub slot: u32,
    pub kernel: crate::program::Program,
}

impl CqHost {
    pub(crate) fn new(layout: CqSysmemLayout) -> Self {
        Self {
            layout,
            issue_wr: RingPtr::default(),
            fetch_issued: 0,
            issue_rd_seen: RingPtr::default(),
            fetched_seen: 0,
            completion_rd: RingPtr::default(),
            workers_outstanding: 0,
            clear_pending: 0,
            last_event_done: 0,
            event_cycles: std::collections::VecDeque::new(),
            reads: HashMap::new(),
            next_tag: 1,
            slow_expected: 0,
            slow_launches: 0,
            capture: None,
            completions: 0,
            program_launches: 0,
            waited_launch: 0,
            capture_saved: None,
            capture_relies: Vec::new(),
            capture_before: 0,
            capture_waits_before: false,
            staging: None,
            scratch: Vec::new(),
        }
    }
}

/// A rectangle of worker cores, inclusive, in logical (col, row) coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreRange {
    pub start: (u8, u8),
    pub end: (u8, u8),
}

impl CoreRange {
    pub fn new(start: (u8, u8), end: (u8, u8)) -> Self {
        Self { start, end }
    }
    pub fn single(col: u8, row: u8) -> Self {
        Self { start: (col, row), end: (col, row) }
    }
    pub fn count(&self) -> u32 {
        (self.end.0 - self.start.0 + 1) as u32 * (self.end.1 - self.start.1 + 1) as u32
    }
    /// Its cores, row by row, as (col, row).
    pub fn cores(&self) -> impl Iterator<Item = (u8, u8)> {
        let (start, end) = (self.start, self.end);
        (start.1..=end.1).flat_map(move |row| (start.0..=end.0).map(move |col| (col, row)))
    }
    /// Whether it holds core `(col, row)`.
    pub fn contains(&self, (col, row): (u8, u8)) -> bool {
        (self.start.0..=self.end.0).contains(&col) && (self.start.1..=self.end.1).contains(&row)
    }
    /// Whether it shares a core with `other`.
    pub fn overlaps(&self, other: &CoreRange) -> bool {
        self.start.0 <= other.end.0
            && other.start.0 <= self.end.0
            && self.start.1 <= other.end.1
            && other.start.1 <= self.end.1
    }
    pub(crate) fn noc(&self, local: u32) -> NocAddr {
        let (s, e) = (noc::worker(self.start.0, self.start.1), noc::worker(self.end.0, self.end.1));
        if s == e {
            NocAddr::unicast(s, local as u64)
        } else {
            NocAddr::multicast(s, e, local as u64)
        }
    }
}

/// Read-back in flight: `tags` in order, concatenated on completion.
#[derive(Debug)]
pub struct PendingRead {
    pub cq: u8,
    /// Completion tags in order, with the bytes each piece contributes.
    tags: Vec<(u32, u32)>,
}

impl PendingRead {
    pub(crate) fn new(cq: u8, tags: Vec<(u32, u32)>) -> Self {
        Self { cq, tags }
    }
}

/// A captured trace stored in DRAM, replayed with `execute_trace`.
#[derive(Clone, Debug)]
pub struct Trace {
    pub buffer: Buffer,
    pub bytes: u32,
    /// The trace's first bytes, sent inline with every replay's EXEC_BUF.
    pub(crate) head: Vec<u8>,
    /// Whether `head` is the whole trace: a replay then reads nothing from
    /// DRAM (`ExecBufFlags::WHOLE`).
    pub(crate) head_is_whole: bool,
    /// Whether its programs reuse what the launch before a replay may
    /// still use (the replay waits for that launch first, when not known done).
    pub(crate) waits_before: bool,
    /// Worker completions one replay adds.
    pub workers: u32,
    /// What the workers hold after a replay (launch numbers relative to its
    /// start) and how many launches it makes, if the trace enqueues programs.
    pub(crate) programs: Option<(crate::program_state::ProgramState, u64)>,
    /// Kernels the trace expects resident (see [`Resident`]).
    pub(crate) relies: Vec<Resident>,
}

/// Operations on queue `q` of a device.
pub struct CommandQueue<'d> {
    pub(crate) dev: &'d mut Device,
    pub(crate) q: u8,
}

impl Device {
    /// Queue `q` (0-based).
    pub fn cq(&mut self, q: u8) -> Result<CommandQueue<'_>> {
        if q >= self.cfg.num_cqs {
            return Err(DriverError::Invalid(format!("command queue {q} (device has {})", self.cfg.num_cqs)));
        }
        Ok(CommandQueue { dev: self, q })
    }

    fn header_word(&mut self, q: u8, offset: u32) -> Result<u32> {
        let at = (self.cqs[q as usize].layout.header() + offset as u64) as usize;
        self.backend.sysmem_read_u32(at)
    }

    /// Consumes every completion record queue `q` has written.
    pub(crate) fn drain(&mut self, q: u8) -> Result<()> {
        let wr = RingPtr(self.header_word(q, COMPLETION_WR_PTR)?);
        let cq = &self.cqs[q as usize];
        let (size, base, mut rd) = (cq.layout.completion_size, cq.layout.completion_base() as usize, cq.completion_rd);
        if rd == wr {
            return Ok(());
        }
        while rd != wr {
            let at = base + rd.offset_bytes() as usize;
            let mut header = CompletionHeader::new_zeroed();
            self.backend.sysmem_read(at, header.as_mut_bytes())?;
            let record = record_size(header.length);
            let kind = CompletionKind::from_u8(header.kind);
            let expected_seq = self.cqs[q as usize].completions as u32;
            if kind.is_none() || record > size || header.cq != q as u16 || header.seq != expected_seq {
                let message = format!(
                    "corrupt completion record at offset {} of CQ{q}: kind {} cq {} length {} seq {} (expected seq {expected_seq})",
                    rd.offset_bytes(),
                    header.kind,
                    header.cq,
                    header.length,
                    header.seq
                );
                let dump = crate::hang_dump::HangDump::collect(self, "completion queue", Some(q))?;
                return Err(DriverError::Device { core: noc::dispatcher(q), message, dump: Box::new(dump) });
            }
            // The payload may wrap the ring: at most two pieces.
            let mut payload = vec![0u8; header.length as usize];
            let start = (rd.offset_bytes() as usize + size_of::<CompletionHeader>()) % size as usize;
            let first = (size as usize - start).min(payload.len());
            self.backend.sysmem_read(base + start, &mut payload[..first])?;
            self.backend.sysmem_read(base, &mut payload[first..])?;
            let cq = &mut self.cqs[q as usize];
            match kind {
                Some(CompletionKind::Event) => {
                    let Ok((ev, _)) = EventRecord::read_from_prefix(&payload) else {
                        return Err(DriverError::Invalid(format!("event record of {} bytes on CQ{q}", payload.len())));
                    };
                    cq.last_event_done = cq.last_event_done.max(ev.event_id);
                    if cq.event_cycles.len() == EVENT_CYCLES_KEPT {
                        cq.event_cycles.pop_front();
                    }
                    cq.event_cycles.push_back((ev.event_id, ev.cycle));
                }
                _ => {
                    cq.reads.insert(header.tag, payload);
                }
            }
            cq.completions += 1;
            rd = rd.advance(record, size);
        }
        self.cqs[q as usize].completion_rd = rd;
        self.backend.write_u32(NocAddr::unicast(noc::dispatcher(q), mailbox::COMPLETION_RD_PTR as u64), rd.0)?;
        Ok(())
    }

    /// `drain_all` from inside a wait: only every
    /// `DeviceConfig::drain_every_polls` polls.
    pub(crate) fn drain_in_wait(&mut self) -> Result<()> {
        if self.polls_since_drain < self.cfg.drain_every_polls.saturating_sub(1) {
            return Ok(());
        }
        self.polls_since_drain = 0;
        self.drain_all()
    }

    pub(crate) fn drain_all(&mut self) -> Result<()> {
        for q in 0..self.cfg.num_cqs {
            self.drain(q)?;
        }
        Ok(())
    }

    /// Copies `chunk` into queue `q`'s issue ring and rings its fetch queue,
    /// waiting (and draining completions) while either is full.
    pub(crate) fn submit(&mut self, q: u8, chunk: &[u8], stall: bool) -> Result<()> {
        let cq = &mut self.cqs[q as usize];
        if let Some(capture) = &mut cq.capture {
            capture.extend_from_slice(chunk);
            return Ok(());
        }
        let len = chunk.len() as u32;
        let entry = FetchEntry::new(len as u64, stall)
            .map_err(|e| DriverError::Invalid(format!("fetch entry for a {len}-byte chunk: {e:?}")))?;
        self.reserve(q, len)?;
        self.copy_to_issue(q, &[chunk])?;
        self.ring_doorbell(q, entry, len)
    }

    /// Copies `parts`, back to back, into queue `q`'s issue ring from its
    /// write pointer, wrapping at its end. The space must be free (`reserve`
    /// waited for it): the device reads it only after the doorbell.
    fn copy_to_issue(&mut self, q: u8, parts: &[&[u8]]) -> Result<()> {
        let cq = &self.cqs[q as usize];
        let (base, size) = (cq.layout.issue_base() as usize, cq.layout.issue_size as usize);
        let mut off = cq.issue_wr.offset_bytes() as usize;
        for part in parts {
            let first = (size - off).min(part.len());
            self.backend.sysmem_claim(base + off, first)?.copy_from_slice(&part[..first]);
            self.backend.sysmem_claim(base, part.len() - first)?.copy_from_slice(&part[first..]);
            off = (off + part.len()) % size;
        }
        Ok(())
    }

    /// Encodes a chunk of at most `capacity` bytes straight into the issue
    /// ring (one copy fewer than `submit`), falling back to `submit` when the
    /// chunk could wrap the ring or a trace is being captured.
    pub(crate) fn submit_with(
        &mut self,
        q: u8,
        capacity: usize,
        build: impl FnOnce(&mut Encoder<'_>) -> Result<(), EncodeError>,
    ) -> Result<()> {
        let cq = &self.cqs[q as usize];
        let contiguous = cq.layout.issue_size - cq.issue_wr.offset_bytes();
        if cq.capture.is_some() || capacity as u32 > contiguous {
            let c = chunk(capacity, build)?;
            return self.submit(q, &c, false);
        }
        let capacity = capacity.next_multiple_of(cqlab_abi::PCIE_ALIGNMENT).min(contiguous as usize);
        self.reserve(q, capacity as u32)?;
        let cq = &self.cqs[q as usize];
        let at = (cq.layout.issue_base() + cq.issue_wr.offset_bytes() as u64) as usize;
        // Free issue space (reserve waited for it): the device reads it only after the doorbell.
        let mut enc = Encoder::new(self.backend.sysmem_claim(at, capacity)?);
        build(&mut enc).map_err(|e| DriverError::Invalid(format!("encoding: {e}")))?;
        let len = enc.len() as u64;
        let entry = FetchEntry::new(len, false)
            .map_err(|e| DriverError::Invalid(format!("fetch entry for a {len}-byte chunk: {e:?}")))?;
        self.ring_doorbell(q, entry, len as u32)
    }

    /// Rings a gathered chunk (`cqlab_abi::fetch_queue`): the `head` and
    /// `tail` bytes (multiples of 16) go into the issue queue, and the
    /// prefetcher reads the `staged` bytes at sysmem offset `at` between
    /// them. Returns the entry's number.
    pub(crate) fn submit_gathered(&mut self, q: u8, head: &[u8], at: u64, staged: u32, tail: &[u8]) -> Result<u32> {
        let unit = fetch_queue::SIZE_UNIT as u64;
        let (ring, total) = ((head.len() + tail.len()) as u32, (head.len() + tail.len()) as u64 + staged as u64);
        let split = u32::try_from(head.len()).ok().and_then(|h| Split::new(h, staged));
        let fits = at % unit == 0 && at / unit <= u32::MAX as u64 && total <= MAX_CHUNK as u64;
        let (entry, split) = FetchEntry::staged(total).ok().filter(|_| fits).zip(split).ok_or_else(|| {
            DriverError::Invalid(format!(
                "gathered chunk of {} + {staged} (at sysmem {at:#x}) + {} bytes",
                head.len(),
                tail.len()
            ))
        })?;
        self.reserve(q, ring)?;
        self.copy_to_issue(q, &[head, tail])?;
        let number = self.cqs[q as usize].fetch_issued;
        let slot = number % self.cfg.fetch_entries;
        let word = |addr: u32| NocAddr::unicast(noc::prefetcher(q), addr as u64);
        // Source and split side by side (`SPLIT_OFFSET` follows
        // `SOURCE_OFFSET`), written before the entry: the prefetcher reads
        // them once it is nonzero.
        let words = [(at / unit) as u32, split.raw()];
        self.backend.write(word(fetch_queue::source_addr(slot)), words.as_bytes())?;
        self.ring_doorbell(q, entry, ring)?;
        Ok(number)
    }

    /// The prefetcher's fetch count as it stands now (it only grows).
    pub(crate) fn fetched_now(&mut self, q: u8) -> Result<u32> {
        let fetched = self.header_word(q, FETCH_RD_COUNT)?;
        self.cqs[q as usize].fetched_seen = fetched;
        Ok(fetched)
    }

    /// Waits until queue `q` has `len` bytes of issue space and a free fetch slot.
    fn reserve(&mut self, q: u8, len: u32) -> Result<()> {
        let size = self.cqs[q as usize].layout.issue_size;
        if len == 0 || len > size || len > MAX_CHUNK {
            return Err(DriverError::Invalid(format!("{len}-byte chunk exceeds the issue queue or chunk area")));
        }
        let entries = self.cfg.fetch_entries;
        let fits = |cq: &CqHost| {
            let free = size - RingPtr::used(cq.issue_wr, cq.issue_rd_seen, size);
            free >= len && cq.fetch_issued.wrapping_sub(cq.fetched_seen) < entries
        };
        let what = || format!("prefetch queue slot and {len} bytes of issue queue on CQ{q}");
        let drain = self.cfg.host_bug != Some(crate::config::HostBug::NoDrainWhileReserving);
        self.wait_until(Some(q), what, |dev| {
            if drain {
                dev.drain_in_wait()?;
            }
            if !fits(&dev.cqs[q as usize]) {
                let issue_rd = RingPtr(dev.header_word(q, ISSUE_RD_PTR)?);
                let fetched = dev.header_word(q, FETCH_RD_COUNT)?;
                let cq = &mut dev.cqs[q as usize];
                (cq.issue_rd_seen, cq.fetched_seen) = (issue_rd, fetched);
            }
            Ok(fits(&dev.cqs[q as usize]))
        })
    }

    /// Publishes a chunk whose `ring` bytes are already in the ring at the
    /// write pointer.
    fn ring_doorbell(&mut self, q: u8, entry: FetchEntry, ring: u32) -> Result<()> {
        let entries = self.cfg.fetch_entries;
        let cq = &self.cqs[q as usize];
        let slot = cq.fetch_issued % entries;
        // The chunk must be visible in sysmem before the doorbell.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let slot_addr = NocAddr::unicast(noc::prefetcher(q), fetch_queue::slot_addr(slot) as u64);
        self.backend.write_u32(slot_addr, entry.raw())?;
        let cq = &mut self.cqs[q as usize];
        cq.issue_wr = cq.issue_wr.advance(ring, cq.layout.issue_size);
        cq.fetch_issued = cq.fetch_issued.wrapping_add(1);
        Ok(())
    }
}

/// Encodes one chunk into a fresh buffer.
fn chunk(capacity: usize, build: impl FnOnce(&mut Encoder<'_>) -> Result<(), EncodeError>) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; capacity];
    let mut enc = Encoder::new(&mut buf);
    build(&mut enc).map_err(|e| DriverError::Invalid(format!("encoding: {e}")))?;
    let n = enc.len();
    buf.truncate(n);
    Ok(buf)
}

impl CommandQueue<'_> {
    fn fast_only(&self, what: &str) -> Result<()> {
        if self.dev.cfg.slow_dispatch {
            return Err(DriverError::Invalid(format!("{what} need fast dispatch (this device uses slow dispatch)")));
        }
        Ok(())
    }

    /// Largest payload one chunk carries: at most half the issue queue, so
    /// chunks always fit it with room to spare.
    pub(crate) fn max_inline(&mut self) -> usize {
        let issue = self.host().layout.issue_size as usize;
        MAX_INLINE.min((issue / 2).saturating_sub(128).max(64) & !15)
    }

    fn host(&mut self) -> &mut CqHost {
        &mut self.dev.cqs[self.q as usize]
    }

    /// Dispatch-side wait for every worker launched on this queue, clearing
    /// the count so waits stay relative (and traces replayable).
    /// The count is cleared on the host only once the chunk is submitted
    /// (`submit_clearing`), so a failed submit loses nothing.
    fn wait_workers(&mut self, w: &mut DispatchWriter<'_>, extra: WaitFlags) -> Result<(), EncodeError> {
        let outstanding = self.host().workers_outstanding;
        self.host().clear_pending = outstanding;
        if outstanding == 0 {
            return w.wait(WaitFlags::BARRIER | extra, 0, 0);
        }
        w.wait(WaitFlags::BARRIER | WaitFlags::WAIT_COUNTER | WaitFlags::CLEAR | extra, sem::WORKERS_DONE, outstanding)
    }

    /// Submits a chunk built with `wait_workers`, then drops the worker
    /// completions its WAIT clears from the host's count.
    fn submit_clearing(&mut self, chunk: &[u8], stall: bool) -> Result<()> {
        let cleared = std::mem::take(&mut self.host().clear_pending);
        self.dev.submit(self.q, chunk, stall)?;
        let host = self.host();
        host.workers_outstanding -= cleared;
        // Every launch so far has been waited for in the stream.
        host.waited_launch = host.program_launches;
        Ok(())
    }

    /// Sends `chunk` (prefetch commands, a nonzero multiple of 16 bytes) as
    /// one fetch entry, unchecked: for fuzzing and bad-input tests.
    pub fn enqueue_raw(&mut self, chunk: &[u8], stall: bool) -> Result<()> {
        self.fast_only("raw command chunks")?;
        self.dev.submit(self.q, chunk, stall)
    }

    /// Makes the dispatcher spin `cycles` cycles before the next command: a
    /// race-amplification knob (stretches the window in which other work runs).
    pub fn delay(&mut self, cycles: u32) -> Result<()> {
        self.fast_only("dispatcher delays")?;
        let c = chunk(128, |e| e.relay_inline(true, |w| w.delay(cycles)))?;
        self.dev.submit(self.q, &c, false)
    }

    /// Writes `data` at byte `offset` of `buf`. DRAM buffers take whole pages.
    pub fn write_buffer(&mut self, buf: &Buffer, offset: u32, data: &[u8]) -> Result<()> {
        buf.check_range(offset, data.len())?;
        if self.dev.cfg.slow_dispatch {
            return self.slow_write(buf, offset, data);
        }
        match buf.placement {
            Placement::L1 { core, addr } => {
                let max_piece = self.max_inline();
                for (i, piece) in data.chunks(max_piece).enumerate() {
                    let dst = NocAddr::unicast(core, (addr + offset) as u64 + (i * max_piece) as u64);
                    self.dev.submit_with(self.q, piece.len() + 128, |e| {
                        e.relay_inline(true, |w| w.write_linear(dst, piece))
                    })?;
                }
            }
            Placement::Dram { base, page_size, .. } => {
                if offset % page_size != 0
                    || (data.len() as u32 % page_size != 0 && offset + data.len() as u32 != buf.size)
                {
                    return Err(DriverError::Invalid(format!(
                        "DRAM writes take whole {page_size}-byte pages (offset {offset}, {} bytes)",
                        data.len()
                    )));
                }
                let per_chunk = (self.max_inline() as u32 / page_size).max(1) as usize * page_size as usize;
                if per_chunk + 128 > self.host().layout.issue_size as usize {
                    return Err(DriverError::Invalid(format!(
                        "a {page_size}-byte page does not fit the {}-byte issue queue",
                        self.host().layout.issue_size
                    )));
                }
                for (i, piece) in data.chunks(per_chunk).enumerate() {
                    let start_page = offset / page_size + (i * per_chunk) as u32 / page_size;
                    let start = u16::try_from(start_page)
                        .map_err(|_| DriverError::Invalid(format!("page {start_page} beyond 65535")))?;
                    let whole = piece.len().next_multiple_of(page_size as usize);
                    let padded;
                    let pages = if whole == piece.len() {
                        piece
                    } else {
                        padded = [piece, &vec![0; whole - piece.len()]].concat();
                        &padded[..]
                    };
                    self.dev.submit_with(self.q, whole + 128, |e| {
                        e.relay_inline(true, |w| w.write_paged(PagedFlags::DRAM, base, page_size, start, pages))
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Writes to the same L1 address on many worker cores in one packed
    /// write: `data` is either shared or `cores.len()` equal blocks.
    pub fn write_packed(&mut self, addr: u32, cores: &[(u8, u8)], data: PackedData<'_>) -> Result<()> {
        self.fast_only("packed writes")?;
        let (cols, rows) = (self.dev.cfg.worker_cols, self.dev.cfg.worker_rows);
        if let Some(bad) = cores.iter().find(|&&(c, r)| c >= cols || r >= rows) {
            return Err(DriverError::OutOfRange { what: "core", detail: format!("{bad:?} on a {cols}x{rows} grid") });
        }
        let dests: Vec<Coord> = cores.iter().map(|&(c, r)| noc::worker(c, r)).collect();
        let bytes = match data {
            PackedData::Shared(d) | PackedData::PerCore(d) => d.len(),
        };
        let per_core = if matches!(data, PackedData::Shared(_)) { bytes } else { bytes / cores.len().max(1) };
        let ring = self.dev.cfg.ring_page_size as usize * (self.dev.cfg.ring_pages as usize - 1);
        if matches!(data, PackedData::Shared(_)) && per_core.next_multiple_of(16) > ring {
            return Err(DriverError::Invalid(format!(
                "a shared packed block of {per_core} bytes exceeds the dispatcher ring less one page ({ring} bytes)"
            )));
        }
        if !cqlab_abi::memory_map::USER.contains(addr, per_core as u32) {
            return Err(DriverError::OutOfRange {
                what: "packed write",
                detail: format!("{per_core} bytes at L1 {addr:#x} leave the user region"),
            });
        }
        let c =
            chunk(bytes + 16 * cores.len() + 256, |e| e.relay_inline(true, |w| w.write_packed(addr, &dests, data)))?;
        self.dev.submit(self.q, &c, false)
    }

    /// Enqueues a read of `len` bytes at `offset` of `buf`; the data arrives
    /// in the completion queue. Waits for earlier writes and kernels first.
    pub fn enqueue_read(&mut self, buf: &Buffer, offset: u32, len: u32) -> Result<PendingRead> {
        buf.check_range(offset, len as usize)?;
        if self.dev.cfg.slow_dispatch {
            return self.slow_read(buf, offset, len);
        }
        if self.host().capture.is_some() {
            return Err(DriverError::Invalid("reads cannot be captured in a trace".into()));
        }
        let max_piece = (self.host().layout.completion_size / 2).min(64 * 1024) & !63;
        let mut tags = Vec::new();
        let mut done = 0;
        while done < len {
            let (src, n) = match buf.placement {
                Placement::L1 { core, addr } => {
                    (Source::Linear(NocAddr::unicast(core, (addr + offset + done) as u64)), (len - done).min(max_piece))
                }
                Placement::Dram { base, page_size, .. } => {
                    let at = offset + done;
                    if at % page_size != 0 {
                        return Err(DriverError::Invalid(format!(
                            "DRAM reads start on a page: offset {at} is not a multiple of the {page_size}-byte page"
                        )));
                    }
                    let completion = self.host().layout.completion_size;
                    if record_size(page_size) > completion {
                        return Err(DriverError::Invalid(format!(
                            "a {page_size}-byte page does not fit one record of the {completion}-byte completion queue"
                        )));
                    }
                    let pages = ((len - done).min(max_piece.max(page_size)).div_ceil(page_size)).max(1);
                    let n = (pages * page_size).min(len - done);
                    (Source::Paged { base, page_size, start: at / page_size, pages }, n)
                }
            };
            let tag = self.host().next_tag;
            self.host().next_tag = tag.wrapping_add(1).max(1);
            let relay_len = match src {
                Source::Linear(_) => n,
                Source::Paged { page_size, pages, .. } => page_size * pages,
            };
            let c = chunk(4096, |e| {
                e.relay_inline(true, |w| self.wait_workers(w, WaitFlags::NOTIFY_PREFETCH))?;
                e.stall()?;
                e.relay_inline(true, |w| w.write_host_header(tag, relay_len))?;
                match src {
                    Source::Linear(addr) => e.relay_linear(addr, n),
                    Source::Paged { base, page_size, start, pages } => {
                        let start = u16::try_from(start).map_err(|_| EncodeError::Full { needed: 0, available: 0 })?;
                        e.relay_paged(PagedFlags::DRAM, base, page_size, start, pages)
                    }
                }
            })?;
            self.submit_clearing(&c, false)?;
            tags.push((tag, n));
            done += n;
        }
        Ok(PendingRead { cq: self.q, tags })
    }

    /// Blocking read.
    pub fn read_buffer(&mut self, buf: &Buffer, offset: u32, len: u32) -> Result<Vec<u8>> {
        let pending = self.enqueue_read(buf, offset, len)?;
        let mut data = self.dev.complete_read(&pending)?;
        data.truncate(len as usize);
        Ok(data)
    }

    /// Runs the device's default kernel (`DeviceConfig::worker_kernel`) on
    /// every core of `cores` with `args` as its common args: a one-kernel
    /// program.
    pub fn launch(&mut self, cores: CoreRange, args: &[u32]) -> Result<()> {
        let (cols, rows) = (self.dev.cfg.worker_cols, self.dev.cfg.worker_rows);
        if cores.start.0 > cores.end.0 || cores.start.1 > cores.end.1 || cores.end.0 >= cols || cores.end.1 >= rows {
            return Err(DriverError::OutOfRange {
                what: "core range",
                detail: format!("{cores:?} on a {cols}x{rows} grid"),
            });
        }
        let kernel = self.dev.default_kernel()?;
        let mut program = crate::program::Program::new();
        let k = program.add_kernel(kernel, &[cores])?;
        program.set_common_args(k, args)?;
        self.enqueue_program(&program)
    }

    /// Records an event: completes when all earlier work on this queue has.
    pub fn record_event(&mut self) -> Result<Event> {
        if self.dev.cfg.slow_dispatch {
            return self.slow_record_event();
        }
        if self.host().capture.is_some() {
            return Err(DriverError::Invalid("events cannot be captured in a trace".into()));
        }
        let id = self.dev.next_event;
        self.dev.next_event += 1;
        let (q, ncqs) = (self.q, self.dev.cfg.num_cqs);
        let c = chunk(4096, |e| {
            e.relay_inline(true, |w| self.wait_workers(w, WaitFlags::NOTIFY_PREFETCH))?;
            e.stall()?;
            e.relay_inline(true, |w| {
                for other in 0..ncqs {
                    let word = NocAddr::unicast(noc::dispatcher(other), mailbox::last_event(q) as u64);
                    w.write_linear(word, &id.to_le_bytes())?;
                }
                w.wait(WaitFlags::BARRIER, 0, 0)?;
                w.write_event(&EventRecord { event_id: id, cq: q as u32, cycle: 0 })
            })
        })?;
        self.submit_clearing(&c, false)?;
        Ok(Event { cq: q, id })
    }

    /// Makes this queue's dispatcher wait until `event` (of any queue) completes.
    pub fn wait_for_event(&mut self, event: Event) -> Result<()> {
        if event.id == 0 || event.cq >= self.dev.cfg.num_cqs {
            return Err(DriverError::Invalid(format!("{event:?} is not an event of this device")));
        }
        if self.dev.cfg.slow_dispatch {
            // Slow dispatch is synchronous: a recorded event has completed.
            return Ok(());
        }
        let c = chunk(256, |e| {
            e.relay_inline(true, |w| w.wait(WaitFlags::WAIT_MEMORY, mailbox::last_event(event.cq), event.id))
        })?;
        self.dev.submit(self.q, &c, false)
    }

    /// Blocks until everything enqueued on this queue has completed.
    pub fn finish(&mut self) -> Result<()> {
        let ev = self.record_event()?;
        self.dev.event_synchronize(ev)
    }

    /// Starts capturing this queue's commands into a trace instead of running them.
    pub fn begin_trace(&mut self) -> Result<()> {
        self.fast_only("traces")?;
        if self.host().capture.is_some() {
            return Err(DriverError::Invalid("a trace is already being captured".into()));
        }
        if self.host().workers_outstanding > 0 {
            // Traces start from a drained worker count.
            let c = chunk(256, |e| e.relay_inline(true, |w| self.wait_workers(w, WaitFlags::empty())))?;
            self.submit_clearing(&c, false)?;
        }
        // The capture plans programs from the kernels resident now and
        // everything in use by a launch just before the trace (launch number
        // `before`): whatever a replay reuses first, it first waits for the
        // launch that precedes that replay, and so for all earlier ones. That
        // wait is not captured: a replay makes it before its EXEC_BUF, and
        // only when the host does not know that launch finished already
        // (`execute_trace`). A replay checks the residency the capture
        // relied on again.
        let host = self.host();
        let saved = (host.program_launches, host.waited_launch);
        let before = host.program_launches + 1;
        host.program_launches = before;
        host.waited_launch = before;
        host.capture_before = before;
        host.capture_waits_before = false;
        let q = self.q as usize;
        let state = self.dev.programs[q].all_in_use(before);
        let saved = (std::mem::replace(&mut self.dev.programs[q], state), saved.0, saved.1);
        let host = self.host();
        host.capture_saved = Some(saved);
        host.capture_relies.clear();
        host.capture = Some(Vec::new());
        Ok(())
    }

    /// Ends the capture and stores the trace in DRAM.
    pub fn end_trace(&mut self) -> Result<Trace> {
        let mut bytes =
            self.host().capture.take().ok_or_else(|| DriverError::Invalid("end_trace without begin_trace".into()))?;
        let workers = std::mem::take(&mut self.host().workers_outstanding);
        // The captured programs have not run: the workers still hold what
        // they held before the capture.
        let (saved, start, waited) = self.host().capture_saved.take().expect("capture_saved set by begin_trace");
        let relies = std::mem::take(&mut self.host().capture_relies);
        let captured = std::mem::replace(&mut self.dev.programs[self.q as usize], saved);
        // Launch numbers relative to the one before the trace, numbered 1.
        let before = start + 1;
        let launches = self.host().program_launches - before;
        let programs = (launches > 0).then(|| (captured.rebased(before, 1), launches));
        self.host().program_launches = start;
        self.host().waited_launch = waited;
        bytes.extend(chunk(64, |e| e.exec_buf_end())?);
        // The prefetcher streams a trace through its trace area window by
        // window (`memory_map::TRACE_WINDOW`, which these page sizes divide),
        // one DRAM read per page, so a trace of any length replays. Pages
        // are whole NOC packets where the issue queue can carry one (the
        // trace is written through it), else halves.
        let mut page_size = cqlab_abi::mmio::NOC_MAX_PACKET as usize;
        while page_size > 64
            && (page_size + 128 > self.host().layout.issue_size as usize || page_size > self.max_inline())
        {
            page_size /= 2;
        }
        let buffer = self.dev.alloc_dram(bytes.len().next_multiple_of(page_size) as u32, page_size as u32)?;
        // The first bytes also travel inline with each replay's EXEC_BUF
        // (`ExecBufCmd::head`): the prefetcher starts on them while it reads
        // the rest from DRAM. Whole PCIe lines, as much as a chunk can carry.
        let head_len = (EXEC_BUF_HEAD_MAX as usize).min(self.max_inline()).min(bytes.len()) & !(PCIE_ALIGNMENT - 1);
        let head = bytes[..head_len].to_vec();
        let head_is_whole = head_len == bytes.len();
        bytes.resize(buffer.size as usize, 0);
        self.write_buffer(&buffer, 0, &bytes)?;
        // The trace must be in DRAM before the prefetcher first reads it: the
        // dispatcher drains the upload's writes and releases a STALL, once.
        let c = chunk(256, |e| {
            e.relay_inline(true, |w| w.wait(WaitFlags::BARRIER | WaitFlags::NOTIFY_PREFETCH, 0, 0))?;
            e.stall()
        })?;
        self.dev.submit(self.q, &c, false)?;
        let waits_before = std::mem::take(&mut self.host().capture_waits_before);
        Ok(Trace { buffer, bytes: bytes.len() as u32, head, head_is_whole, waits_before, workers, programs, relies })
    }

    /// Replays a trace (with the stall flag the prefetcher requires).
    pub fn execute_trace(&mut self, trace: &Trace) -> Result<()> {
        self.fast_only("traces")?;
        let Placement::Dram { base, page_size, .. } = trace.buffer.placement else {
            return Err(DriverError::Invalid("traces live in DRAM".into()));
        };
        if self.host().capture.is_some() {
            return Err(DriverError::Invalid("a trace cannot replay a trace (nested EXEC_BUF)".into()));
        }
        // The kernels the trace did not send must be where it found them.
        for r in &trace.relies {
            self.ensure_resident(r)?;
        }
        // No drain: the trace waits for what it reuses (see `begin_trace`),
        // and the dispatcher for the launch-ring entries its launches take,
        // so a replay overlaps the work before it.
        let head = &trace.head;
        // The wait the capture left out (see `begin_trace`): for the launch
        // before this replay, unless an earlier WAIT covered it.
        let host = self.host();
        let wait_before = trace.waits_before && host.waited_launch < host.program_launches;
        let c = chunk(256 + head.len(), |e| {
            if wait_before {
                e.relay_inline(true, |w| w.wait(WaitFlags::WAIT_LAUNCH, 0, 1))?;
            }
            if trace.head_is_whole {
                e.exec_buf_whole(base, page_size, trace.buffer.pages(), head)
            } else {
                e.exec_buf_with_head(base, page_size, trace.buffer.pages(), head)
            }
        })?;
        self.dev.submit(self.q, &c, true)?;
        if wait_before {
            let host = self.host();
            host.waited_launch = host.program_launches;
        }
        self.host().workers_outstanding += trace.workers;
        if let Some((state, launches)) = &trace.programs {
            // After the replay the workers hold what the trace left; its
            // launch numbers continue from the launch before the replay.
            let start = self.host().program_launches;
            self.dev.programs[self.q as usize] = state.rebased(1, start);
            self.host().program_launches = start + launches;
        }
        Ok(())
    }
}

enum Source {
    Linear(NocAddr),
    Paged { base: u32, page_size: u32, start: u32, pages: u32 },
}

impl Device {
    /// Waits for a pending read and returns its bytes.
    pub fn complete_read(&mut self, pending: &PendingRead) -> Result<Vec<u8>> {
        let q = pending.cq;
        let mut out = Vec::new();
        for &(tag, len) in &pending.tags {
            let what = format!("CQ{q} read-back completion (tag {tag})");
            self.wait_until(
                Some(q),
                || what.clone(),
                |dev| {
                    dev.drain_in_wait()?;
                    Ok(dev.cqs[q as usize].reads.contains_key(&tag))
                },
            )?;
            let piece = self.cqs[q as usize].reads.remove(&tag).expect("present");
            // Paged reads relay whole pages; keep the bytes asked for.
            out.extend_from_slice(&piece[..(len as usize).min(piece.len())]);
        }
        Ok(out)
    }

    /// Blocks until `event` has completed.
    pub fn event_synchronize(&mut self, event: Event) -> Result<()> {
        let what = format!("CQ host completion event {} on CQ{}", event.id, event.cq);
        self.wait_until(
            Some(event.cq),
            || what.clone(),
            |dev| {
                dev.drain_in_wait()?;
                Ok(dev.cqs[event.cq as usize].last_event_done >= event.id)
            },
        )
    }

    /// The device cycle at which `event` completed (the dispatcher's stamp
    /// in its completion record, after every earlier command of its queue
    /// finished), once it has; `None` while it has not, or when it is older
    /// than the last `EVENT_CYCLES_KEPT` events of its queue. Drains
    /// completions, never blocks. Device time, so it does not depend on
    /// when the host looked (`event_synchronize` notices a completion up to
    /// a host poll later).
    pub fn event_cycle(&mut self, event: Event) -> Result<Option<u64>> {
        self.drain_all()?;
        let Some(cq) = self.cqs.get(event.cq as usize) else {
            return Err(DriverError::Invalid(format!("event {} of CQ{}: no such queue", event.id, event.cq)));
        };
        Ok(cq.event_cycles.iter().rev().find(|&&(id, _)| id == event.id).map(|&(_, cycle)| cycle))
    }

    /// Whether `event` has completed (drains completions, never blocks).
    pub fn event_query(&mut self, event: Event) -> Result<bool> {
        self.drain_all()?;
        Ok(self.cqs[event.cq as usize].last_event_done >= event.id)
    }

    pub fn alloc_dram(&mut self, size: u32, page_size: u32) -> Result<Buffer> {
        self.allocator.dram(size, page_size, self.cfg.dram_banks)
    }

    pub fn alloc_l1(&mut self, col: u8, row: u8, size: u32) -> Result<Buffer> {
        if col >= self.cfg.worker_cols || row >= self.cfg.worker_rows {
            return Err(DriverError::OutOfRange { what: "core", detail: format!("({col},{row})") });
        }
        self.allocator.l1(noc::worker(col, row), size)
    }

    /// Queue pointers, for hang dumps and stats (reads sysmem only, no BAR).
    pub fn queue_pointers(&mut self, q: u8) -> Result<QueuePointers> {
        let issue_rd = self.header_word(q, ISSUE_RD_PTR)?;
        let fetched = self.header_word(q, FETCH_RD_COUNT)?;
        let completion_wr = self.header_word(q, COMPLETION_WR_PTR)?;
        if self.observer {
            return Ok(self.observed_queue_pointers(q, issue_rd, fetched, completion_wr));
        }
        let cq = &self.cqs[q as usize];
        Ok(QueuePointers {
            cq: q,
            issue_wr: cq.issue_wr.0,
            issue_rd,
            fetch_issued: cq.fetch_issued,
            fetch_consumed: fetched,
            completion_rd: cq.completion_rd.0,
            completion_wr,
            workers_outstanding: cq.workers_outstanding,
            last_event_done: cq.last_event_done,
        })
    }
}

impl Device {
    /// Queue pointers as an observer sees them: the host-side ones derived
    /// from the device (the owner's completion read pointer and last event
    /// from the dispatcher's mailboxes, pending fetch entries from the
    /// prefetcher's fetch queue, running kernels from worker waypoints).
    fn observed_queue_pointers(&mut self, q: u8, issue_rd: u32, fetched: u32, completion_wr: u32) -> QueuePointers {
        let d = noc::dispatcher(q);
        let mut word = |c: Coord, a: u32| self.backend.read_u32(NocAddr::unicast(c, a as u64)).unwrap_or(0);
        let completion_rd = word(d, mailbox::COMPLETION_RD_PTR);
        let last_event_done = word(d, mailbox::last_event(q));
        // Each slot: entry, source and split words.
        let slot = cqlab_abi::fetch_queue::SLOT_SIZE as usize;
        let mut slots = vec![0u8; slot * self.cfg.fetch_entries as usize];
        let at = NocAddr::unicast(noc::prefetcher(q), cqlab_abi::fetch_queue::slot_addr(0) as u64);
        let _ = self.backend.read(at, &mut slots);
        let word = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().expect("4 bytes"));
        let split_at = cqlab_abi::fetch_queue::SPLIT_OFFSET as usize;
        let pending: Vec<(u32, u32)> =
            slots.chunks_exact(slot).map(|s| (word(s), word(&s[split_at..]))).filter(|&(raw, _)| raw != 0).collect();
        let pending_bytes: u32 = pending
            .iter()
            .filter_map(|&(raw, split)| {
                Some(cqlab_abi::fetch_queue::FetchEntry::from_raw(raw).ok()?.issue_bytes(split))
            })
            .sum();
        let issue_size = self.cqs[q as usize].layout.issue_size;
        let workers: Vec<Coord> = self.workers().collect();
        let running = workers
            .into_iter()
            .filter(|&w| {
                self.backend.read_u32(NocAddr::unicast(w, mailbox::WAYPOINT as u64)).ok()
                    == Some(cqlab_abi::waypoint::RUN.0)
            })
            .count() as u32;
        QueuePointers {
            cq: q,
            issue_wr: RingPtr(issue_rd).advance(pending_bytes, issue_size).0,
            issue_rd,
            fetch_issued: fetched.wrapping_add(pending.len() as u32),
            fetch_consumed: fetched,
            completion_rd,
            completion_wr,
            workers_outstanding: running,
            last_event_done,
        }
    }
}
