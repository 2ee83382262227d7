//! [`CommandQueue`]: the operations users enqueue on one queue. Each
//! becomes one chunk (one fetch-queue entry) of prefetch commands, sized by
//! `cqlab_abi::size` before it is written.

use super::issue::chunk;
use super::state::{Awaited, Queue, Queues};
use crate::backend::Backend;
use crate::buffer::{Allocator, Buffer, Placement};
use crate::config::DeviceConfig;
use crate::error::{DriverError, Result, StateError};
use crate::events::Event;
use crate::geometry::{CoreRange, Topology};
use crate::kernel::KernelImage;
use cqlab_abi::completion::record_size;
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::{DispatchWriter, EncodeError, Encoder, PackedData};
use cqlab_abi::mailbox;
use cqlab_abi::memory_map::MAX_CHUNK;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::prefetch::PagedFlags;
use cqlab_abi::semaphore;
use cqlab_abi::size::{self, ChunkSize, DispatchSize};
use cqlab_abi::PCIE_ALIGNMENT;
use std::sync::Arc;

/// Largest payload one write puts inline in one chunk.
const MAX_INLINE: usize = 32 * 1024;

/// Read-back in flight: `tags` in order, concatenated on completion.
#[derive(Debug)]
pub struct PendingRead {
    pub cq: u8,
    /// Completion tags in order, with the bytes each piece contributes.
    pub(super) tags: Vec<(u32, u32)>,
}

/// Operations on one queue of a device (`Device::cq`): it borrows what
/// the queue works with, the device's backend and every queue (a wait
/// drains them all), and the DRAM allocator (a trace is stored in DRAM).
pub struct CommandQueue<'d> {
    pub(super) backend: &'d mut dyn Backend,
    pub(super) cfg: &'d DeviceConfig,
    /// The chip: where the queue's cores and the workers are.
    pub(super) chip: &'d Topology,
    pub(super) queues: &'d mut Queues,
    pub(super) allocator: &'d mut Allocator,
    /// `DeviceConfig::worker_kernel`, once booted: what `launch` runs.
    pub(super) default_kernel: Option<Arc<KernelImage>>,
    pub(super) q: u8,
}

enum Source {
    Linear(NocAddr),
    Paged { base: u32, page_size: u32, start: u16, pages: u32 },
}

impl<'d> CommandQueue<'d> {
    /// Queue `q` of `queues`.
    pub(crate) fn new(
        backend: &'d mut dyn Backend,
        cfg: &'d DeviceConfig,
        chip: &'d Topology,
        queues: &'d mut Queues,
        allocator: &'d mut Allocator,
        default_kernel: Option<Arc<KernelImage>>,
        q: u8,
    ) -> Result<Self> {
        queues.get(q)?;
        Ok(Self { backend, cfg, chip, queues, allocator, default_kernel, q })
    }
}

impl CommandQueue<'_> {
    pub(super) fn host(&mut self) -> &mut Queue {
        &mut self.queues.list[self.q as usize]
    }

    pub(super) fn fast_only(&self, what: &'static str) -> Result<()> {
        if self.cfg.slow_dispatch {
            return Err(StateError::NeedsFastDispatch { what }.into());
        }
        Ok(())
    }

    /// Sends a chunk (waiting for room), or adds it to the trace being captured.
    pub(super) fn submit(&mut self, chunk: &[u8], stall: bool) -> Result<()> {
        self.queues.submit(self.backend, self.cfg, self.q, chunk, stall)
    }

    /// Sends a chunk of `size` bytes encoded in place by `build`.
    pub(super) fn submit_with(
        &mut self,
        size: usize,
        build: impl FnOnce(&mut Encoder<'_>) -> Result<(), EncodeError>,
    ) -> Result<()> {
        self.queues.submit_with(self.backend, self.cfg, self.q, size, build)
    }

    /// Largest payload one write puts in a chunk: at most half the issue
    /// queue (so chunks always fit it with room to spare), in whole 16-byte
    /// units, and at most `MAX_INLINE`.
    pub(crate) fn max_inline(&mut self) -> usize {
        let half = self.host().layout.issue_size as usize / 2;
        MAX_INLINE.min(size::paged_write_room(half).max(16) & !15)
    }

    /// Dispatch-side wait for every worker launched on this queue, clearing
    /// the count so waits stay relative (and traces replayable).
    /// The count is cleared on the host only once the chunk is submitted
    /// (`submit_clearing`), so a failed submit loses nothing.
    pub(super) fn wait_workers(&mut self, w: &mut DispatchWriter<'_>, extra: WaitFlags) -> Result<(), EncodeError> {
        let outstanding = self.host().workers_outstanding;
        self.host().clear_pending = outstanding;
        if outstanding == 0 {
            return w.wait(WaitFlags::BARRIER | extra, 0, 0);
        }
        let flags = WaitFlags::BARRIER | WaitFlags::WAIT_COUNTER | WaitFlags::CLEAR | extra;
        w.wait(flags, semaphore::WORKERS_DONE, outstanding)
    }

    /// Submits a chunk built with `wait_workers`, then drops the worker
    /// completions its WAIT clears from the host's count.
    pub(super) fn submit_clearing(&mut self, chunk: &[u8], stall: bool) -> Result<()> {
        let cleared = std::mem::take(&mut self.host().clear_pending);
        self.submit(chunk, stall)?;
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
        self.submit(chunk, stall)
    }

    /// Makes the dispatcher spin `cycles` cycles before the next command: a
    /// race-amplification knob (stretches the window in which other work runs).
    pub fn delay(&mut self, cycles: u32) -> Result<()> {
        self.fast_only("dispatcher delays")?;
        let size = ChunkSize::new().relay_inline(DispatchSize::new().header()).bytes();
        let c = chunk(size, |e| e.relay_inline(true, |w| w.delay(cycles)))?;
        self.submit(&c, false)
    }

    /// Writes `data` at byte `offset` of `buf`. DRAM buffers take whole pages.
    pub fn write_buffer(&mut self, buf: &Buffer, offset: u32, data: &[u8]) -> Result<()> {
        buf.check_range(offset, data.len())?;
        if self.cfg.slow_dispatch {
            return self.slow_write(buf, offset, data);
        }
        match buf.placement {
            Placement::L1 { core, addr } => {
                let max_piece = self.max_inline();
                for (i, piece) in data.chunks(max_piece).enumerate() {
                    let dst = NocAddr::unicast(core, (addr + offset) as u64 + (i * max_piece) as u64);
                    let size = ChunkSize::new().relay_inline(DispatchSize::new().write_linear(piece.len())).bytes();
                    self.submit_with(size, |e| e.relay_inline(true, |w| w.write_linear(dst, piece)))?;
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
                // One page a chunk at least: a page larger than a chunk
                // carries is refused naming the page, not the chunk.
                let room = size::paged_write_room(MAX_CHUNK as usize);
                if page_size as usize > room {
                    return Err(DriverError::Invalid(format!(
                        "a {page_size}-byte page is larger than a paged write carries in one {MAX_CHUNK}-byte chunk \
                         ({room} bytes)"
                    )));
                }
                let per_chunk = (self.max_inline() as u32 / page_size).max(1) as usize * page_size as usize;
                let issue = self.host().layout.issue_size as usize;
                if ChunkSize::new().relay_inline(DispatchSize::new().write_paged(per_chunk)).bytes() > issue {
                    return Err(DriverError::Invalid(format!(
                        "a {page_size}-byte page does not fit the {issue}-byte issue queue"
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
                    let size = ChunkSize::new().relay_inline(DispatchSize::new().write_paged(whole)).bytes();
                    self.submit_with(size, |e| {
                        e.relay_inline(true, |w| w.write_paged(PagedFlags::DRAM, base, page_size, start, pages))
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Writes to the same L1 address on many worker cores (logical
    /// coordinates) in one packed write: `data` is either shared or
    /// `cores.len()` equal blocks.
    pub fn write_packed(&mut self, addr: u32, cores: &[(u8, u8)], data: PackedData<'_>) -> Result<()> {
        self.fast_only("packed writes")?;
        for &(c, r) in cores {
            self.chip.check_range("packed-write core", &CoreRange::single(c, r))?;
        }
        let dests: Vec<Coord> = cores.iter().map(|&(c, r)| self.chip.worker(c, r).expect("checked")).collect();
        let (bytes, shared) = match data {
            PackedData::Shared(d) => (d.len(), true),
            PackedData::PerCore(d) => (d.len(), false),
        };
        let per_core = if shared { bytes } else { bytes / cores.len().max(1) };
        let ring = self.cfg.ring_page_size as usize * (self.cfg.ring_pages as usize - 1);
        if shared && per_core.next_multiple_of(16) > ring {
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
        let payload = DispatchSize::new().write_packed(dests.len(), per_core, shared);
        let c = chunk(ChunkSize::new().relay_inline(payload).bytes(), |e| {
            e.relay_inline(true, |w| w.write_packed(addr, &dests, data))
        })?;
        self.submit(&c, false)
    }

    /// Enqueues a read of `len` bytes at `offset` of `buf`; the data arrives
    /// in the completion queue. Waits for earlier writes and kernels first.
    pub fn enqueue_read(&mut self, buf: &Buffer, offset: u32, len: u32) -> Result<PendingRead> {
        buf.check_range(offset, len as usize)?;
        if self.cfg.slow_dispatch {
            return self.slow_read(buf, offset, len);
        }
        if self.host().capture.is_some() {
            return Err(StateError::NotCapturable { what: "reads" }.into());
        }
        let completion = self.host().layout.completion_size;
        // Whole PCIe lines, as completion records are padded.
        let max_piece = (completion / 2).min(64 * 1024) & !(PCIE_ALIGNMENT as u32 - 1);
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
                    if record_size(page_size) > completion {
                        return Err(DriverError::Invalid(format!(
                            "a {page_size}-byte page does not fit one record of the {completion}-byte completion queue"
                        )));
                    }
                    let pages = ((len - done).min(max_piece.max(page_size)).div_ceil(page_size)).max(1);
                    let n = (pages * page_size).min(len - done);
                    let start = u16::try_from(at / page_size)
                        .map_err(|_| DriverError::Invalid(format!("page {} beyond 65535", at / page_size)))?;
                    (Source::Paged { base, page_size, start, pages }, n)
                }
            };
            let tag = self.host().take_tag();
            let relay_len = match src {
                Source::Linear(_) => n,
                Source::Paged { page_size, pages, .. } => page_size * pages,
            };
            // WAIT, STALL, WRITE_HOST's header, then the relay of its data.
            let wait = DispatchSize::new().wait();
            let size = ChunkSize::new().relay_inline(wait).stall().relay_inline(DispatchSize::new().header());
            let size = match src {
                Source::Linear(_) => size.relay_linear(),
                Source::Paged { .. } => size.relay_paged(),
            };
            let c = chunk(size.bytes(), |e| {
                e.relay_inline(true, |w| self.wait_workers(w, WaitFlags::NOTIFY_PREFETCH))?;
                e.stall()?;
                e.relay_inline(true, |w| w.write_host_header(tag, relay_len))?;
                match src {
                    Source::Linear(addr) => e.relay_linear(addr, n),
                    Source::Paged { base, page_size, start, pages } => {
                        e.relay_paged(PagedFlags::DRAM, base, page_size, start, pages)
                    }
                }
            })?;
            self.submit_clearing(&c, false)?;
            // Once sent (a failed submit owes nothing): records are drained
            // only while reserving room, before the doorbell.
            self.host().awaited.push_back(Awaited::Read { tag, length: relay_len });
            tags.push((tag, n));
            done += n;
        }
        Ok(PendingRead { cq: self.q, tags })
    }

    /// Blocking read.
    pub fn read_buffer(&mut self, buf: &Buffer, offset: u32, len: u32) -> Result<Vec<u8>> {
        let pending = self.enqueue_read(buf, offset, len)?;
        let mut data = self.queues.complete_read(self.backend, self.cfg, &pending)?;
        data.truncate(len as usize);
        Ok(data)
    }

    /// Runs the device's default kernel (`DeviceConfig::worker_kernel`) on
    /// every core of `cores` with `args` as its common args: a one-kernel
    /// program.
    pub fn launch(&mut self, cores: CoreRange, args: &[u32]) -> Result<()> {
        self.chip.check_range("launch", &cores)?;
        let kernel = self.default_kernel.clone().ok_or(StateError::NotBooted)?;
        let mut program = crate::program::Program::new();
        let k = program.add_kernel(kernel, &[cores])?;
        program.set_common_args(k, args)?;
        self.enqueue_program(&program)
    }

    /// Records an event: completes when all earlier work on this queue has.
    pub fn record_event(&mut self) -> Result<Event> {
        if self.cfg.slow_dispatch {
            return self.slow_record_event();
        }
        if self.host().capture.is_some() {
            return Err(StateError::NotCapturable { what: "events" }.into());
        }
        let id = self.queues.next_event;
        self.queues.next_event += 1;
        let (q, ncqs) = (self.q, self.cfg.num_cqs);
        // WAIT, STALL, then each dispatcher's last-event word, a barrier and the record.
        let notify = DispatchSize::times(DispatchSize::new().write_linear(4), ncqs as usize).wait().write_event();
        let size = ChunkSize::new().relay_inline(DispatchSize::new().wait()).stall().relay_inline(notify);
        let c = chunk(size.bytes(), |e| {
            e.relay_inline(true, |w| self.wait_workers(w, WaitFlags::NOTIFY_PREFETCH))?;
            e.stall()?;
            e.relay_inline(true, |w| {
                for other in 0..ncqs {
                    let word = NocAddr::unicast(self.chip.dispatcher(other), mailbox::last_event(q) as u64);
                    w.write_linear(word, &id.to_le_bytes())?;
                }
                w.wait(WaitFlags::BARRIER, 0, 0)?;
                w.write_event(&cqlab_abi::completion::EventRecord { event_id: id, cq: q as u32, cycle: 0 })
            })
        })?;
        self.submit_clearing(&c, false)?;
        self.host().awaited.push_back(Awaited::Event { id });
        Ok(Event { cq: q, id })
    }

    /// Makes this queue's dispatcher wait until `event` (of any queue) completes.
    pub fn wait_for_event(&mut self, event: Event) -> Result<()> {
        if event.id == 0 || event.cq >= self.cfg.num_cqs {
            return Err(DriverError::Invalid(format!("{event:?} is not an event of this device")));
        }
        if self.cfg.slow_dispatch {
            // Slow dispatch is synchronous: a recorded event has completed.
            return Ok(());
        }
        let size = ChunkSize::new().relay_inline(DispatchSize::new().wait()).bytes();
        let c = chunk(size, |e| {
            e.relay_inline(true, |w| w.wait(WaitFlags::WAIT_MEMORY, mailbox::last_event(event.cq), event.id))
        })?;
        self.submit(&c, false)
    }

    /// Blocks until everything enqueued on this queue has completed.
    pub fn finish(&mut self) -> Result<()> {
        let ev = self.record_event()?;
        self.queues.event_synchronize(self.backend, self.cfg, ev)
    }
}
