//! The issue ring and the fetch queue: the host copies a chunk of commands
//! into the ring, then rings the prefetcher's fetch queue with its size.
//! While it waits for ring space or a fetch slot it keeps draining every
//! completion queue, so no enqueue depth deadlocks.

use super::mutant::mutant;
use super::state::{Queue, Queues};
use crate::backend::Backend;
use crate::config::{DeviceConfig, HostBug};
use crate::dump::Wait;
use crate::error::{DriverError, Result};
use cqlab_abi::encode::{EncodeError, Encoder};
use cqlab_abi::fetch_queue::{self, FetchEntry, Split};
use cqlab_abi::memory_map::MAX_CHUNK;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::ring::RingPtr;
use cqlab_abi::sysmem::{FETCH_RD_COUNT, ISSUE_RD_PTR};
use cqlab_abi::PCIE_ALIGNMENT;
use zerocopy::IntoBytes;

/// Encodes one chunk of exactly `size` bytes (from `cqlab_abi::size`) into a fresh buffer.
pub(super) fn chunk(size: usize, build: impl FnOnce(&mut Encoder<'_>) -> Result<(), EncodeError>) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; size];
    let mut enc = Encoder::new(&mut buf);
    build(&mut enc)?;
    let n = enc.len();
    debug_assert_eq!(n, size, "a chunk's calculated size differs from its encoded length");
    buf.truncate(n);
    Ok(buf)
}

fn entry(len: u64, stall: bool) -> Result<FetchEntry> {
    FetchEntry::new(len, stall).map_err(|e| DriverError::Invalid(format!("fetch entry for a {len}-byte chunk: {e:?}")))
}

impl Queue {
    /// Copies `parts`, back to back, into the issue ring from its write
    /// pointer, wrapping at its end. The space must be free (`reserve`
    /// waited for it): the device reads it only after the doorbell.
    fn copy_to_issue(&self, backend: &mut dyn Backend, parts: &[&[u8]]) -> Result<()> {
        self.copy_to_issue_at(backend, self.issue_wr, parts)
    }

    /// [`Queue::copy_to_issue`] from ring position `at`.
    fn copy_to_issue_at(&self, backend: &mut dyn Backend, at: RingPtr, parts: &[&[u8]]) -> Result<()> {
        let (base, size) = (self.layout.issue_base() as usize, self.layout.issue_size as usize);
        let mut off = at.offset_bytes() as usize;
        for part in parts {
            let first = (size - off).min(part.len());
            backend.sysmem_claim(base + off, first)?.copy_from_slice(&part[..first]);
            backend.sysmem_claim(base, part.len() - first)?.copy_from_slice(&part[first..]);
            off = (off + part.len()) % size;
        }
        Ok(())
    }
}

impl Queues {
    /// Copies `chunk` into queue `q`'s issue ring and rings its fetch queue,
    /// waiting (and draining completions) while either is full; inside a
    /// capture, appends it to the trace instead.
    pub(super) fn submit(
        &mut self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        q: u8,
        chunk: &[u8],
        stall: bool,
    ) -> Result<()> {
        if let Some(capture) = &mut self.list[q as usize].capture {
            capture.bytes.extend_from_slice(chunk);
            return Ok(());
        }
        let len = chunk.len() as u32;
        let entry = entry(len as u64, stall)?;
        self.reserve(backend, cfg, q, len)?;
        let tail = PCIE_ALIGNMENT.min(chunk.len().saturating_sub(16));
        if mutant!(cfg, "host-doorbell-before-chunk-tail") && tail > 0 {
            // The chunk's last line is stored after its doorbell.
            let (body, last) = chunk.split_at(chunk.len() - tail);
            let cq = &self.list[q as usize];
            let at = cq.issue_wr.advance(body.len() as u32, cq.layout.issue_size);
            cq.copy_to_issue(backend, &[body])?;
            self.ring_doorbell(backend, cfg, q, entry, len)?;
            return self.list[q as usize].copy_to_issue_at(backend, at, &[last]);
        }
        self.list[q as usize].copy_to_issue(backend, &[chunk])?;
        self.ring_doorbell(backend, cfg, q, entry, len)
    }

    /// Encodes a chunk of `size` bytes straight into the issue ring (one
    /// copy fewer than `submit`), falling back to `submit` when the chunk
    /// would wrap the ring or a trace is being captured.
    pub(super) fn submit_with(
        &mut self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        q: u8,
        size: usize,
        build: impl FnOnce(&mut Encoder<'_>) -> Result<(), EncodeError>,
    ) -> Result<()> {
        let cq = &self.list[q as usize];
        let contiguous = cq.layout.issue_size - cq.issue_wr.offset_bytes();
        if cq.capture.is_some() || size as u32 > contiguous || mutant!(cfg, "host-doorbell-before-chunk-tail") {
            let c = chunk(size, build)?;
            return self.submit(backend, cfg, q, &c, false);
        }
        let capacity = size.next_multiple_of(PCIE_ALIGNMENT).min(contiguous as usize);
        self.reserve(backend, cfg, q, capacity as u32)?;
        let cq = &self.list[q as usize];
        let at = (cq.layout.issue_base() + cq.issue_wr.offset_bytes() as u64) as usize;
        // Free issue space (reserve waited for it): the device reads it only after the doorbell.
        let mut enc = Encoder::new(backend.sysmem_claim(at, capacity)?);
        build(&mut enc)?;
        let len = enc.len() as u64;
        debug_assert_eq!(len as usize, size, "a chunk's calculated size differs from its encoded length");
        self.ring_doorbell(backend, cfg, q, entry(len, false)?, len as u32)
    }

    /// Rings a gathered chunk (`cqlab_abi::fetch_queue`): the `head` and
    /// `tail` bytes (multiples of 16) go into the issue queue, and the
    /// prefetcher reads the `staged` bytes at sysmem offset `at` between
    /// them. Returns the entry's number.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn submit_gathered(
        &mut self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        q: u8,
        head: &[u8],
        at: u64,
        staged: u32,
        tail: &[u8],
    ) -> Result<u32> {
        let unit = fetch_queue::SIZE_UNIT as u64;
        let (ring, total) = ((head.len() + tail.len()) as u32, (head.len() + tail.len()) as u64 + staged as u64);
        let split = u32::try_from(head.len()).ok().and_then(|h| Split::new(h, staged));
        // The source word counts from the start of the chip's host-memory
        // range, where sysmem offset 0 is not (a card's pinned buffer is
        // wherever PIN_PAGES put it), as `CqConfig::sysmem_base` does.
        let source = backend.sysmem_noc_base() + at;
        let fits = source % unit == 0 && source / unit <= u32::MAX as u64 && total <= MAX_CHUNK as u64;
        let (entry, split) = FetchEntry::staged(total).ok().filter(|_| fits).zip(split).ok_or_else(|| {
            DriverError::Invalid(format!(
                "gathered chunk of {} + {staged} (at sysmem {at:#x}) + {} bytes",
                head.len(),
                tail.len()
            ))
        })?;
        self.reserve(backend, cfg, q, ring)?;
        let cq = &self.list[q as usize];
        cq.copy_to_issue(backend, &[head, tail])?;
        let number = cq.fetch_issued;
        let slot = number % cfg.fetch_entries;
        let prefetcher = self.chip.prefetcher(q);
        let word = |addr: u32| NocAddr::unicast(prefetcher, addr as u64);
        // Source and split side by side (`SPLIT_OFFSET` follows
        // `SOURCE_OFFSET`), written before the entry: the prefetcher reads
        // them once it is nonzero.
        let words = [(source / unit) as u32, split.raw()];
        if mutant!(cfg, "host-doorbell-before-gather-words") {
            self.ring_doorbell(backend, cfg, q, entry, ring)?;
            backend.write(word(fetch_queue::source_addr(slot)), words.as_bytes())?;
            return Ok(number);
        }
        backend.write(word(fetch_queue::source_addr(slot)), words.as_bytes())?;
        self.ring_doorbell(backend, cfg, q, entry, ring)?;
        Ok(number)
    }

    /// The prefetcher's fetch count as it stands now (it only grows).
    pub(super) fn fetched_now(&mut self, backend: &mut dyn Backend, q: u8) -> Result<u32> {
        let fetched = self.header_word(backend, q, FETCH_RD_COUNT)?;
        self.list[q as usize].fetched_seen = fetched;
        Ok(fetched)
    }

    /// Waits until queue `q` has `len` bytes of issue space and a free fetch slot.
    fn reserve(&mut self, backend: &mut dyn Backend, cfg: &DeviceConfig, q: u8, len: u32) -> Result<()> {
        let size = self.list[q as usize].layout.issue_size;
        if len == 0 || len > size || len > MAX_CHUNK {
            return Err(DriverError::Invalid(format!("{len}-byte chunk exceeds the issue queue or chunk area")));
        }
        let entries = cfg.fetch_entries;
        let (any_space, extra_slot) =
            (mutant!(cfg, "host-issue-space-unchecked"), mutant!(cfg, "host-fetch-slot-reuse-early") as u32);
        let fits = |cq: &Queue| {
            let free = size - RingPtr::used(cq.issue_wr, cq.issue_rd_seen, size);
            (free >= len || any_space) && cq.fetch_issued.wrapping_sub(cq.fetched_seen) < entries + extra_slot
        };
        let drain = cfg.host_bug != Some(HostBug::NoDrainWhileReserving);
        // Known host bug: the pointers are loaded once per wait.
        let (hoisted, mut loaded) = (cfg.host_bug == Some(HostBug::HoistedPointerLoad), false);
        let what = || Wait::IssueSpace { cq: q, bytes: len };
        let chip = self.chip.clone();
        crate::wait::until(backend, cfg, &chip, self, what, |backend, queues| {
            if drain {
                queues.drain_in_wait(backend, cfg)?;
            }
            if !(fits(&queues.list[q as usize]) || hoisted && loaded) {
                loaded = true;
                let issue_rd = RingPtr(queues.header_word(backend, q, ISSUE_RD_PTR)?);
                let fetched = queues.header_word(backend, q, FETCH_RD_COUNT)?;
                let cq = &mut queues.list[q as usize];
                (cq.issue_rd_seen, cq.fetched_seen) = (issue_rd, fetched);
            }
            Ok(fits(&queues.list[q as usize]))
        })
    }

    /// Publishes a chunk whose `ring` bytes are already in the ring at the
    /// write pointer.
    fn ring_doorbell(
        &mut self,
        backend: &mut dyn Backend,
        cfg: &DeviceConfig,
        q: u8,
        entry: FetchEntry,
        ring: u32,
    ) -> Result<()> {
        let prefetcher = self.chip.prefetcher(q);
        let cq = &mut self.list[q as usize];
        let slot = cq.fetch_issued % cfg.fetch_entries;
        // The chunk reaches the device before the entry: a backend stores what was claimed of
        // sysmem before a later write, ordered before it (`Backend::write`). A fence here
        // would order nothing: the tt-kmd backend lands the claimed bytes in pinned memory
        // inside this `write_u32`, and runs its I/O barrier there, between them and the entry.
        let slot_addr = NocAddr::unicast(prefetcher, fetch_queue::slot_addr(slot) as u64);
        backend.write_u32(slot_addr, entry.raw())?;
        cq.rung(slot, entry.raw(), cq.issue_wr);
        cq.issue_wr = cq.issue_wr.advance(ring, cq.layout.issue_size);
        cq.fetch_issued = cq.fetch_issued.wrapping_add(1);
        Ok(())
    }
}
