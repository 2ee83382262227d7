//! The prefetcher: takes chunks named by the host's fetch-queue entries from
//! the issue queue in sysmem, runs their prefetch commands, and relays
//! dispatch commands and data into the dispatcher's ring under page credits.
//! A gathered chunk (`fetch_queue::STAGED_FLAG`) is read in three parts,
//! the middle one from a staging area in sysmem, and then runs like any
//! other.

use crate::cq_config::{setup, CqSetup};
use crate::places::{Dram, Unicasts};
use crate::platform::Platform;
use crate::replay::Replay;
use crate::report::{fail, wait_until, waypoint};
use crate::ring::{split_at_wrap, RingGeometry};
use crate::{device_error, read_header, CMD_HEADER, L1_ALIGN};
use cqlab_abi::arch::noc_cmd::packet_tag::MAX_TRANSACTION_ID;
use cqlab_abi::decode::PrefetchHeader;
use cqlab_abi::fetch_queue::{self, FetchEntry};
use cqlab_abi::mailbox::{CqConfig, DeviceError, SCRATCH};
use cqlab_abi::memory_map::{chunk_buffer, interleaved_page, CHUNK_BUFFERS, MAX_CHUNK, RELAY_SCRATCH, TRACE_AREA};
use cqlab_abi::noc::{Coord, NocAddr};
#[cfg(test)]
use cqlab_abi::prefetch::checksum;
use cqlab_abi::prefetch::ExecBufFlags;
use cqlab_abi::prefetch::PagedFlags;
use cqlab_abi::ring::{wrap_ge, RingPtr, PTR_UNIT};
use cqlab_abi::semaphore::{self as sem};
use cqlab_abi::sysmem::{CqSysmemLayout, FETCH_RD_COUNT, ISSUE_RD_PTR};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{DAPW, HQD, HQW, NRW, PSD, PSW};

pub struct Prefetcher<'p, P: Platform> {
    p: &'p mut P,
    cfg: CqConfig,
    sysmem: CqSysmemLayout,
    ring: RingGeometry,
    dispatcher: Coord,
    /// Host-memory offset 0 and the DRAM banks, on this core's NOC
    /// (`NocMap`), and the memories a `RELAY_LINEAR` may read.
    host: NocAddr,
    dram: Dram,
    unicasts: Unicasts,
    /// Fetch-queue entries consumed (slots freed for the host).
    fetched: u32,
    /// Issue-queue read pointer published to the host: after the chunks freed.
    issue_rd: RingPtr,
    /// Fetch entries (chunks) whose reads were issued and taken to run:
    /// `taken <= requested`, wrapping. Chunk `j` uses buffer
    /// `j % CHUNK_BUFFERS`: 2^32 is not a multiple of five, so at the wrap
    /// (after 2^32 chunks in one boot) a buffer would lose its turn; a
    /// documented limit (README), cursors measured slower here.
    requested: u32,
    taken: u32,
    /// `writes_issued` after each buffer's last chunk ran: its relays have
    /// left the buffer once the sent count reaches it.
    buffer_sent: [u32; CHUNK_BUFFERS as usize],
    /// `writes_issued` after the last pointer writes from `SCRATCH`.
    pointers_sent: u32,
    /// Issue-queue position of the next chunk to read.
    read_rd: RingPtr,
    /// Per chunk buffer, the entry (raw) and byte size of its chunk.
    chunks: [(u32, u32); CHUNK_BUFFERS as usize],
    /// Per chunk buffer, the issue-queue bytes of its chunk (fewer than
    /// its size when gathered). Stored for every chunk, so that releasing
    /// one is a load, not a test of its entry.
    ring_bytes: [u32; CHUNK_BUFFERS as usize],
    /// Bytes written into the dispatcher ring (absolute position).
    written: u64,
    /// Bytes of the ring known free from `written` on, as of the last look
    /// at the dispatcher's freed count (free room only grows meanwhile).
    room: u32,
    /// 16-byte units written but not yet signalled to the dispatcher.
    unflushed_units: u32,
    /// Relay pieces not signalled yet, oldest first: their units and the
    /// `writes_issued` mark each left with. A piece is signalled once it
    /// has left, while the pieces after it keep the NOC interface busy.
    posted: Posted,
    /// STALL commands executed (the dispatcher's releases must catch up).
    stalls: u32,
    commands: u32,
    /// The trace ring, of which the prefetcher is the only writer once
    /// running: a record costs its stores (no L1 load, no division).
    records: crate::trace::Cursor,
    core: u16,
    /// Per relay-scratch slot, as `buffer_sent` for a chunk buffer: the
    /// mark its relay left with.
    scratch_sent: [u32; SCRATCH_SLOTS as usize],
    /// The slot the next remote relay starts in (slots are used in turn).
    scratch_turn: u32,
}

impl<'p, P: Platform> Prefetcher<'p, P> {
    pub fn new(p: &'p mut P, cfg: CqConfig) -> Self {
        let CqSetup { ring, sysmem } = setup(p, &cfg);
        let (records, core) = (crate::trace::Cursor::take(p), p.core_xy() as u16);
        // Reads a previous run left in flight land first: their
        // transaction ids must have nothing outstanding.
        crate::report::wait_reads(p);
        let (host, dram, unicasts) = (crate::places::host(p), Dram::load(p), Unicasts::load(p));
        let issued = p.writes_issued();
        Self {
            p,
            cfg,
            sysmem,
            ring,
            dispatcher: Coord::unpack(cfg.peer_xy),
            host,
            dram,
            unicasts,
            fetched: 0,
            issue_rd: RingPtr::default(),
            requested: 0,
            taken: 0,
            buffer_sent: [issued; CHUNK_BUFFERS as usize],
            pointers_sent: issued,
            scratch_sent: [issued; SCRATCH_SLOTS as usize],
            scratch_turn: 0,
            read_rd: RingPtr::default(),
            chunks: [(0, 0); CHUNK_BUFFERS as usize],
            ring_bytes: [0; CHUNK_BUFFERS as usize],
            written: 0,
            room: 0,
            unflushed_units: 0,
            posted: Posted::default(),
            stalls: 0,
            commands: 0,
            records,
            core,
        }
    }

    /// Appends a trace record (`report::trace`, through the cursor).
    fn trace(&mut self, kind: TraceKind, arg0: u32, arg1: u32) {
        let cycle = self.p.cycle();
        self.records.record(self.p, self.core, cycle, kind, arg0, arg1);
    }

    /// Starts reading the issue queue at `rd` instead of its beginning.
    pub fn set_issue_rd(&mut self, rd: RingPtr) {
        self.issue_rd = rd;
        self.read_rd = rd;
    }

    /// Serves the fetch queue until TERMINATE. Chunk `j` (counting fetch
    /// entries) lands in chunk buffer `j % CHUNK_BUFFERS`. Reads run ahead:
    /// before a landed chunk runs, every further entry the host has written
    /// is read into a free buffer, so the PCIe link carries the next chunks
    /// while this one is relayed. Each buffer's reads carry a transaction
    /// id of their own (`chunk_read_id`), so the prefetcher waits for the
    /// chunk it runs next only, while the later ones stay in flight (reads
    /// complete in no particular order: one counter for all reads would
    /// make every wait drain the reads in flight).
    pub fn run(mut self) -> ! {
        loop {
            if self.taken == self.requested {
                // Waiting for the host: every relayed byte is signalled first.
                self.flush();
                let slot = fetch_queue::slot_addr(self.requested % self.cfg.fetch_entries);
                wait_until(self.p, HQW, |p| p.read_u32(slot) != 0);
                let raw = self.p.read_u32(slot);
                waypoint(self.p, HQD);
                let len = self.checked_len(slot, raw);
                self.request(raw, len, slot);
            }
            let j = self.taken;
            if !self.chunk_landed(j % CHUNK_BUFFERS) {
                // A wait that may be long: the dispatcher first hears of
                // every byte relayed so far.
                self.flush();
                if !const { crate::mutant::dropped("prefetch-chunk-run-before-landed") } {
                    self.wait_chunk(j % CHUNK_BUFFERS);
                }
            }
            // A chunk's fetch slot and issue-queue space are freed when it
            // is taken to run (its read has landed), as with one buffer.
            #[cfg(not(feature = "bug-early-fetch-release"))]
            self.release_chunk(j);
            // Issued before the pointers are published, so they do not wait
            // for them.
            self.read_ahead();
            #[cfg(not(feature = "bug-early-fetch-release"))]
            self.publish_pointers();
            let (raw, len) = self.chunks[(j % CHUNK_BUFFERS) as usize];
            let entry = FetchEntry::from_raw(raw).unwrap_or_else(|_| unreachable!("checked before its read"));
            self.taken = j.wrapping_add(1);
            // The chunk came by the NOC into a buffer read before: its
            // commands are read from L1, not from L0 copies of the last one.
            self.p.invalidate_l1();
            self.trace(TraceKind::FetchConsumed, raw, j % self.cfg.fetch_entries);
            self.run_commands(chunk_buffer(j % CHUNK_BUFFERS), len, entry.stall());
            self.buffer_sent[(j % CHUNK_BUFFERS) as usize] = self.p.writes_issued();
        }
    }

    /// Reads every further chunk the host has announced with a valid entry
    /// (a bad one is reported when its turn comes) into the buffers other
    /// than the last run's (whose relay may still be leaving: waiting for
    /// it held the next chunk back for a whole relay), and at most one
    /// fetch queue's worth of entries ahead of the slots freed.
    fn read_ahead(&mut self) {
        // The host writes the slots: read L1, not L0 copies.
        self.p.invalidate_l1();
        while self.requested.wrapping_sub(self.taken) < CHUNK_BUFFERS - 1
            && self.requested.wrapping_sub(self.fetched) < self.cfg.fetch_entries
        {
            let slot = fetch_queue::slot_addr(self.requested % self.cfg.fetch_entries);
            let raw = self.p.read_u32(slot);
            let valid = FetchEntry::from_raw(raw).ok().map(|e| e.bytes());
            match valid.filter(|&n| n <= MAX_CHUNK && n <= self.cfg.issue_size) {
                Some(len) => self.request(raw, len, slot),
                None => break,
            }
        }
    }

    /// Starts the read of the next entry's chunk (`raw`, `len` bytes, from
    /// the slot at L1 address `slot`) into its buffer.
    fn request(&mut self, raw: u32, len: u32, slot: u32) {
        if raw & fetch_queue::STAGED_FLAG != 0 {
            return self.request_gathered(raw, len, slot);
        }
        let j = self.requested;
        self.fetch_chunk_at(len, j % CHUNK_BUFFERS, self.read_rd);
        self.read_rd = self.read_rd.advance(len, self.cfg.issue_size);
        self.ring_bytes[(j % CHUNK_BUFFERS) as usize] = len;
        self.requested_chunk(j, raw, len);
    }

    /// [`Self::request`] of a gathered chunk (kept out of the usual path).
    #[cold]
    #[inline(never)]
    fn request_gathered(&mut self, raw: u32, len: u32, slot: u32) {
        let j = self.requested;
        let ring = self.gather(j, len, slot);
        self.ring_bytes[(j % CHUNK_BUFFERS) as usize] = ring;
        self.read_rd = self.read_rd.advance(ring, self.cfg.issue_size);
        self.requested_chunk(j, raw, len);
    }

    /// Records chunk `j`'s read as issued.
    #[inline(always)]
    fn requested_chunk(&mut self, j: u32, raw: u32, len: u32) {
        self.chunks[(j % CHUNK_BUFFERS) as usize] = (raw, len);
        self.requested = j.wrapping_add(1);
        // Known bug 3 frees the chunk's slot and issue-queue space while
        // its read is in flight.
        #[cfg(feature = "bug-early-fetch-release")]
        {
            self.release_chunk(j);
            self.publish_pointers();
        }
    }

    /// Frees chunk `j`'s fetch slot and issue-queue bytes (published later).
    fn release_chunk(&mut self, j: u32) {
        let slot = fetch_queue::slot_addr(j % self.cfg.fetch_entries);
        self.consume_slot(slot);
        let ring = self.ring_bytes[(j % CHUNK_BUFFERS) as usize];
        self.issue_rd = self.issue_rd.advance(ring, self.cfg.issue_size);
    }

    /// The byte size of fetch entry `raw` (from `slot`), or a halt when it
    /// is zero or larger than a chunk buffer or the issue queue.
    fn checked_len(&mut self, slot: u32, raw: u32) -> u32 {
        let entry = match FetchEntry::from_raw(raw) {
            Ok(e) => e,
            Err(_) => fail(self.p, DeviceError::ZeroFetchEntry, slot, raw, self.fetched, 0),
        };
        let len = entry.bytes();
        if len > MAX_CHUNK || len > self.cfg.issue_size {
            fail(self.p, DeviceError::TooLarge, slot, raw, self.fetched, self.issue_rd.0);
        }
        len
    }

    /// Reads `len` bytes at issue-queue position `rd` into chunk buffer
    /// `buf`, in two reads when the chunk wraps the issue queue.
    #[inline(always)]
    fn fetch_chunk_at(&mut self, len: u32, buf: u32, rd: RingPtr) {
        self.wait_buffer_free(buf);
        self.fetch_chunk_at_offset(len, buf, chunk_buffer(buf), rd);
    }

    /// Waits until chunk buffer `buf` may be refilled. The chunk that last
    /// used it may still be relaying from it: those relays must have left
    /// it (sent), not landed; later relays (the chunk running now) may
    /// still be leaving.
    #[inline(always)]
    fn wait_buffer_free(&mut self, buf: u32) {
        if !const { crate::mutant::dropped("prefetch-chunk-refill-before-sent") } {
            crate::report::wait_sent_until(self.p, self.buffer_sent[buf as usize]);
        }
    }

    /// Reads `len` issue-queue bytes at `rd` to `dst` in chunk buffer `buf`
    /// (whose previous relays have left).
    #[inline(always)]
    fn fetch_chunk_at_offset(&mut self, len: u32, buf: u32, dst: u32, rd: RingPtr) {
        let offset = rd.offset_bytes();
        let (first, second) = split_at_wrap(offset, len, self.cfg.issue_size);
        let base = self.sysmem.issue_base();
        let id = chunk_read_id(buf);
        self.p.noc_read_with_id(self.host.offset(base + offset as u64), dst, first, id);
        if second > 0 {
            self.p.noc_read_with_id(self.host.offset(base), dst + first, second, id);
        }
    }

    /// Reads gathered chunk `j` (`len` bytes, its entry at L1 address
    /// `slot`) into its buffer: its head from the issue queue, its staged
    /// piece from sysmem, then the rest from the issue queue; returns the
    /// issue-queue bytes it takes. A split larger than the chunk, or a
    /// staged piece outside the queue's staging arena, halts the
    /// prefetcher.
    #[inline(always)]
    fn gather(&mut self, j: u32, len: u32, slot: u32) -> u32 {
        let (source_at, split_at) = (slot + fetch_queue::SOURCE_OFFSET, slot + fetch_queue::SPLIT_OFFSET);
        let source = self.p.read_u32(source_at);
        let split = fetch_queue::Split::from_raw(self.p.read_u32(split_at));
        // Each at most 0xffff units: no overflow.
        if split.head + split.staged > len {
            fail(self.p, DeviceError::BadSize, split_at, split.raw(), self.fetched, len);
        }
        // A read of host memory the host did not give the queue may reach
        // no memory at all, and would then never land: the record starts
        // at the source word, the split word after it.
        let staged_units = split.staged / fetch_queue::SIZE_UNIT;
        if staged_units > 0 && !self.cfg.stages(source, staged_units) {
            fail(self.p, DeviceError::BadSource, source_at, source, self.fetched, split.raw());
        }
        let (buf, tail) = (j % CHUNK_BUFFERS, len - split.head - split.staged);
        // The head's reads, then the staged piece's, then the tail's, all
        // under the buffer's id: the buffer has landed when all have.
        self.wait_buffer_free(buf);
        if split.head > 0 {
            self.fetch_chunk_at_offset(split.head, buf, chunk_buffer(buf), self.read_rd);
        }
        let staged = chunk_buffer(buf) + split.head;
        if split.staged > 0 {
            let src = self.host.offset(source as u64 * fetch_queue::SIZE_UNIT as u64);
            self.p.noc_read_with_id(src, staged, split.staged, chunk_read_id(buf));
        }
        if tail > 0 {
            let rd = self.read_rd.advance(split.head, self.cfg.issue_size);
            self.fetch_chunk_at_offset(tail, buf, staged + split.staged, rd);
        }
        split.head + tail
    }

    /// Waits until the reads into chunk buffer `buf` have landed.
    fn wait_chunk(&mut self, buf: u32) {
        let id = chunk_read_id(buf);
        wait_until(self.p, NRW, |p| p.reads_landed_id(id));
    }

    /// Whether the reads into chunk buffer `buf` have landed: its
    /// transaction id has no request outstanding.
    fn chunk_landed(&self, buf: u32) -> bool {
        self.p.reads_landed_id(chunk_read_id(buf))
    }

    /// Frees the fetch-queue slot for the host.
    fn consume_slot(&mut self, slot: u32) {
        self.p.write_u32(slot, 0);
        self.fetched = self.fetched.wrapping_add(1);
    }

    /// Before reusing a write's source (tt-metal: writes flushed).
    fn wait_writes_sent(&mut self) {
        crate::report::wait_writes_sent(self.p);
    }

    /// Tells the host how far it may reuse the issue queue and fetch queue.
    fn publish_pointers(&mut self) {
        // SCRATCH is reused: the previous pointer writes must have left it
        // (not the relays issued since).
        if !const { crate::mutant::dropped("prefetch-pointers-before-sent") } {
            crate::report::wait_sent_until(self.p, self.pointers_sent);
        }
        self.p.write_u32(SCRATCH, self.issue_rd.0);
        self.p.write_u32(SCRATCH + 4, self.fetched);
        let header = self.sysmem.header();
        self.p.noc_write(SCRATCH, self.host.offset(header + ISSUE_RD_PTR as u64), 4);
        self.p.noc_write(SCRATCH + 4, self.host.offset(header + FETCH_RD_COUNT as u64), 4);
        self.pointers_sent = self.p.writes_issued();
    }

    /// Runs the prefetch commands in `chunk_len` bytes of L1 at `chunk` (a
    /// chunk). An EXEC_BUF switches the same loop to the commands of the
    /// replayed trace streaming through `TRACE_AREA`, and its EXEC_BUF_END
    /// back to the chunk: no nested call and no `memset` of the replay's
    /// state, so a replay reaches its first relay sooner (the EXEC_BUF
    /// figures of `docs/performance.md`).
    fn run_commands(&mut self, chunk: u32, chunk_len: u32, stall_entry: bool) {
        let (mut base, mut len, mut off) = (chunk, chunk_len, 0);
        let mut replay: Option<Replay> = None;
        // Where the chunk continues after a replay, and the EXEC_BUF's id and size.
        let (mut resume, mut exec_buf) = (0, (0, 0));
        loop {
            if off >= len {
                if let Some(r) = &replay {
                    // A replay ran out of commands before its EXEC_BUF_END.
                    fail(self.p, DeviceError::LengthOverrun, r.local_end(len), 0, off, len);
                }
                break;
            }
            let addr = match replay.as_mut() {
                Some(r) => {
                    // Commands are 64-byte aligned: a header never straddles
                    // windows (nor the end of the head, a multiple of 64).
                    self.land(r, off + CMD_HEADER);
                    r.local(off)
                }
                None => base + off,
            };
            let h = read_header(self.p, addr);
            let header = match PrefetchHeader::parse(&h) {
                Ok(h) => h,
                Err(kind) => fail(self.p, device_error(kind), addr, h[0] as u32, off, len),
            };
            let stride = header.stride();
            if stride > len - off {
                fail(self.p, DeviceError::LengthOverrun, addr, stride, off, len);
            }
            let id = header.id() as u32;
            self.trace(TraceKind::CmdStart, id, stride);
            self.commands = self.commands.wrapping_add(1);
            match header {
                // A flush is owed rather than waited for, enqueued or
                // replayed: the pieces still leaving stay posted (see
                // `signal_sent`), so the next chunk's work overlaps this
                // relay's bytes on the NOC. Waiting here would cost a large
                // relay (a kernel's first upload, a block of unique args)
                // its whole NOC time.
                PrefetchHeader::RelayInline { cmd, .. } => match replay.as_mut() {
                    Some(r) => {
                        let (mut at, end) = (off + CMD_HEADER, off + CMD_HEADER + cmd.length);
                        while at < end {
                            let n = r.in_window(at, end - at);
                            self.land(r, at + n);
                            self.relay_local(r.local(at), n);
                            at += n;
                        }
                        // The pieces that have left by now are signalled at
                        // once (before and after issuing the next window's
                        // reads), so the dispatcher need not wait for the
                        // next relay.
                        self.signal_sent();
                        r.read_ahead(self.p, &self.dram);
                        self.signal_sent();
                    }
                    None => self.relay_local(addr + CMD_HEADER, cmd.length),
                },
                PrefetchHeader::RelayLinear(cmd) => {
                    let (src, padded) = (NocAddr(cmd.src), cmd.length.next_multiple_of(L1_ALIGN));
                    // A read from no memory of the NOC map (a core's L1 or
                    // a DRAM bank) would never land: the value is the
                    // source's high word (its coordinates).
                    if !self.unicasts.reach(self.p, &self.dram, src, padded) {
                        fail(self.p, DeviceError::BadSource, addr, (cmd.src >> 32) as u32, off, len);
                    }
                    self.relay_remote(Remote::Linear { src, padded });
                }
                PrefetchHeader::RelayPaged(cmd) => {
                    if !PagedFlags::from_bits_retain(cmd.flags).contains(PagedFlags::DRAM) {
                        fail(self.p, DeviceError::BadFlags, addr, cmd.flags as u32, off, len);
                    }
                    let remote = Remote::Paged {
                        base: cmd.base_addr,
                        first: cmd.start_page as u32,
                        page_size: cmd.page_size,
                        per_page: cmd.page_size.next_multiple_of(L1_ALIGN).div_ceil(SCRATCH_PIECE).max(1),
                        pages: cmd.pages,
                    };
                    if remote.pieces().is_none() {
                        fail(self.p, DeviceError::TooLarge, addr, cmd.pages, off, len);
                    }
                    self.relay_remote(remote);
                }
                PrefetchHeader::Stall => self.stall(),
                PrefetchHeader::ExecBuf(cmd) => {
                    if !stall_entry {
                        fail(self.p, DeviceError::ExecBufWithoutStall, addr, id, off, len);
                    }
                    if replay.is_some() {
                        fail(self.p, DeviceError::NestedExecBuf, addr, id, off, len);
                    }
                    let total = cmd.pages as u64 * cmd.page_size as u64;
                    let head = cmd.head as u32;
                    // A whole trace in the head has no pages to read, and
                    // its commands end within the head (a command past it
                    // is an overrun, not a read).
                    let whole = ExecBufFlags::from_bits_retain(cmd.flags).contains(ExecBufFlags::WHOLE);
                    let (pages, commands) = if whole { (0, head) } else { (cmd.pages, total as u32) };
                    // The head runs from this chunk, after the header's line
                    // (the first window's reads wait for the previous
                    // replay's relays from the trace area, `Replay::issue`).
                    let head_at = addr + cqlab_abi::PCIE_ALIGNMENT as u32;
                    if !Replay::fits(cmd.page_size, self.dram.banks()) || total > u32::MAX as u64 {
                        fail(self.p, DeviceError::TooLarge, addr, cmd.page_size, off, len);
                    }
                    let start = self.p.writes_issued();
                    let r = Replay::new(start, cmd.base_addr, cmd.page_size, pages, self.dram.banks(), head_at, head);
                    if head as u64 > total {
                        fail(self.p, DeviceError::BadSize, addr, head, off, len);
                    }
                    replay = Some(r);
                    (resume, exec_buf) = (off + stride, (id, stride));
                    (base, len, off) = (TRACE_AREA.base, commands, 0);
                    continue;
                }
                PrefetchHeader::ExecBufEnd => {
                    if replay.is_none() {
                        fail(self.p, DeviceError::UnexpectedExecBufEnd, addr, id, off, len);
                    }
                    self.trace(TraceKind::CmdEnd, id, stride);
                    // Back to the chunk, after its EXEC_BUF.
                    replay = None;
                    (base, len, off) = (chunk, chunk_len, resume);
                    self.trace(TraceKind::CmdEnd, exec_buf.0, exec_buf.1);
                    continue;
                }
                PrefetchHeader::Debug(cmd) => {
                    let found = match replay.as_mut() {
                        Some(r) => {
                            let (mut at, end, mut sum) = (off + CMD_HEADER, off + CMD_HEADER + cmd.length, 0u32);
                            while at < end {
                                // Pieces of whole words: a window holds a multiple of 16 bytes.
                                let n = r.in_window(at, end - at);
                                self.land(r, at + n);
                                sum = sum.wrapping_add(l1_checksum(self.p, r.local(at), n));
                                at += n;
                            }
                            sum
                        }
                        None => l1_checksum(self.p, addr + CMD_HEADER, cmd.length),
                    };
                    if found != cmd.checksum {
                        fail(self.p, DeviceError::BadChecksum, addr, found, off, len);
                    }
                }
                PrefetchHeader::Terminate => {
                    self.flush();
                    crate::report::exit(self.p, self.commands);
                }
            }
            self.trace(TraceKind::CmdEnd, id, stride);
            off += stride;
        }
        // What has left is signalled now; pieces still leaving stay posted
        // (the next chunk's relays do not wait for them), and every wait for
        // the host or a chunk still landing flushes them first (`run`).
        self.signal_sent();
    }

    /// [`Replay::land`], signalling relayed bytes first when it may wait
    /// for reads. After the head (the first window's wait, a few small
    /// relays behind it) every byte is signalled, so the head's programs
    /// reach the dispatcher while that window lands; later windows signal
    /// only what has left already (no drain of the NOC interface between
    /// back-to-back relays; the rest is signalled at the next relay piece).
    #[inline(always)]
    fn land(&mut self, r: &mut Replay, upto: u32) {
        if r.must_land(upto) {
            if r.after_head(upto) {
                self.flush();
            } else {
                self.signal_sent();
            }
            r.land(self.p, &self.dram, upto);
        }
    }

    /// Waits for room in the dispatcher ring; returns how many of `want`
    /// bytes may be written contiguously now. The freed count is read only
    /// when the room last seen is short of `want` (one MMIO load and the
    /// page arithmetic saved per piece while the ring is ahead): a fresh
    /// look could only show more room, and `want` is all that is taken.
    #[inline(always)]
    fn ring_space(&mut self, want: u32) -> u32 {
        if self.room < want {
            self.look_for_room();
        }
        self.ring.contiguous(self.written, want.min(self.room))
    }

    /// Reads the dispatcher's freed count into `room`, waiting for some.
    fn look_for_room(&mut self) {
        let freed = |p: &mut P| p.semaphore(sem::RING_PAGES_FREED);
        let mut writable = self.ring.writable(self.written, freed(self.p));
        if writable == 0 {
            // The dispatcher can only free pages it has been told about.
            self.flush();
            let (ring, written) = (self.ring, self.written);
            wait_until(self.p, DAPW, |p| ring.writable(written, freed(p)) > 0);
            let freed_now = freed(self.p);
            writable = self.ring.writable(self.written, freed_now);
            self.trace(TraceKind::CreditsAcquired, writable / self.ring.page_size, freed_now);
        }
        self.room = writable;
    }

    /// Copies `len` bytes (a multiple of 16) of local L1 into the ring, in
    /// as few writes as the ring's contiguous free space allows (the HAL
    /// splits them into NOC packets). Each piece is signalled to the
    /// dispatcher as soon as it has left (per-write counters, not a drain of
    /// everything), so the dispatcher forwards it while the next one is
    /// still on its way.
    fn relay_local(&mut self, src: u32, len: u32) {
        let mut done = 0;
        while done < len {
            let n = self.ring_space(len - done);
            let dst = NocAddr::unicast(self.dispatcher, self.ring.local(self.written) as u64);
            self.p.noc_write(src + done, dst, n);
            let mark = self.p.writes_issued();
            self.written += n as u64;
            self.room -= n;
            done += n;
            self.unflushed_units += n / PTR_UNIT;
            if self.posted.len == POSTED {
                // Rule 2 of `cqlab_sim::noc`: an atomic follows the writes
                // of its route that had left when it issued.
                let (_, oldest) = self.posted.entries[self.posted.head as usize];
                crate::report::wait_sent_until(self.p, oldest);
            }
            self.signal_sent();
            self.posted.push(n / PTR_UNIT, mark);
        }
    }

    /// Signals every posted piece that has left by now, in one increment;
    /// does not wait. A relay's flush is owed rather than waited
    /// for: its pieces still leaving stay posted and are signalled here, at
    /// the next relay piece, so the NOC interface does not drain between
    /// back-to-back relays. Every wait of the prefetcher that depends on
    /// the dispatcher or the host (ring space, STALL, the fetch queue after
    /// a chunk) flushes fully first; its NOC-only waits (reads landing,
    /// writes leaving) end on their own.
    fn signal_sent(&mut self) {
        if self.posted.len == 0 {
            return;
        }
        let sent = if const { crate::mutant::dropped("prefetch-signal-before-sent") } {
            self.p.writes_issued()
        } else {
            self.p.writes_sent_count()
        };
        let units = self.posted.pop_sent(sent);
        if units > 0 {
            self.signal(units);
            self.unflushed_units -= units;
        }
    }

    /// Relays a remote range (`Remote`: pieces of at most `SCRATCH_PIECE`
    /// bytes, each a multiple of 16) through the relay scratch, as
    /// tt-metal's prefetcher relays paged data: while a piece is relayed,
    /// the reads of the next `SCRATCH_SLOTS - 1` are in flight, each with
    /// its slot's transaction id, so a relay costs one read latency plus its
    /// bytes rather than a latency per piece. A slot is refilled before the
    /// next piece is relayed, once the slot's previous relay has left: the
    /// reads start as early as they can (refilling after the next relay
    /// instead, so that the NOC interface never drains, reads back more
    /// slowly in 1 KiB and in 32 KiB pages). Like a replayed relay, its flush is owed, not waited for (the
    /// pieces still leaving are signalled at the next relay piece or wait).
    #[inline(never)]
    fn relay_remote(&mut self, remote: Remote) {
        let pieces = remote.pieces().unwrap_or(0);
        let turn = self.scratch_turn;
        let slot_of = |i: u32| (turn + i) % SCRATCH_SLOTS;
        let mut issued = 0;
        for i in 0..pieces {
            while issued < pieces && issued < i + SCRATCH_SLOTS {
                self.read_piece(&remote, issued, slot_of(issued));
                issued += 1;
            }
            let slot = slot_of(i);
            let id = scratch_read_id(slot);
            if !const { crate::mutant::dropped("prefetch-relay-before-landed") } && !self.p.reads_landed_id(id) {
                // Pieces that have left are signalled before waiting.
                self.signal_sent();
                wait_until(self.p, NRW, |p| p.reads_landed_id(id));
            }
            let (_, n) = remote.piece(i, &self.dram);
            self.relay_local(scratch_slot(slot), n);
            self.scratch_sent[slot as usize] = self.p.writes_issued();
        }
        self.scratch_turn = slot_of(pieces);
        self.signal_sent();
    }

    /// Issues the read of `remote`'s piece `i` into relay-scratch slot
    /// `slot`, once the slot's previous relay has left it (known bug 6 reads
    /// the next piece over it).
    fn read_piece(&mut self, remote: &Remote, i: u32, slot: u32) {
        #[cfg(not(feature = "bug-relay-reuse-before-sent"))]
        crate::report::wait_sent_until(self.p, self.scratch_sent[slot as usize]);
        let (src, n) = remote.piece(i, &self.dram);
        self.p.noc_read_with_id(src, scratch_slot(slot), n, scratch_read_id(slot));
    }

    /// Signals every written unit to the dispatcher. The data and the
    /// increment take one route (this core -> the dispatcher, unicast), and
    /// an atomic stays behind the writes that had left when it issued
    /// (`cqlab_sim::noc`, rules 1 and 2): waiting for *sent* is enough, as
    /// tt-metal's prefetcher flushes before its semaphore increment.
    fn flush(&mut self) {
        self.posted.clear();
        if self.unflushed_units == 0 {
            return;
        }
        if !const { crate::mutant::dropped("prefetch-flush-before-sent") } {
            self.wait_writes_sent();
        }
        self.signal(self.unflushed_units);
        self.unflushed_units = 0;
    }

    /// Adds `units` to the dispatcher's filled count.
    fn signal(&mut self, units: u32) {
        let filled = NocAddr::unicast(self.dispatcher, sem::addr(sem::RING_UNITS_FILLED) as u64);
        self.p.noc_atomic_inc(filled, units);
    }

    /// STALL: wait until the dispatcher has released as many stalls as were issued.
    fn stall(&mut self) {
        if !const { crate::mutant::dropped("prefetch-stall-without-flush") } {
            self.flush();
        }
        self.stalls = self.stalls.wrapping_add(1);
        let target = self.stalls;
        let observed = self.p.semaphore(sem::STALL_RELEASE);
        self.trace(TraceKind::StallBegin, target, observed);
        wait_until(self.p, PSW, |p| wrap_ge(p.semaphore(sem::STALL_RELEASE), target));
        let observed = self.p.semaphore(sem::STALL_RELEASE);
        waypoint(self.p, PSD);
        self.trace(TraceKind::StallEnd, target, observed);
    }
}

/// The read transaction id of chunk buffer `buf` (plain reads carry 0). A
/// chunk is at most `MAX_CHUNK` bytes, a handful of packets: far below the
/// 255 a transaction id's outstanding counter holds.
const fn chunk_read_id(buf: u32) -> u32 {
    buf + 1
}
const _: () = assert!(chunk_read_id(CHUNK_BUFFERS - 1) <= MAX_TRANSACTION_ID);

/// What a remote relay reads: `RELAY_LINEAR`'s range, or `RELAY_PAGED`'s
/// pages of an interleaved DRAM buffer, each padded to 16 bytes. Either is
/// relayed in pieces of at most `SCRATCH_PIECE` bytes.
#[derive(Clone, Copy)]
enum Remote {
    Linear { src: NocAddr, padded: u32 },
    Paged { base: u32, first: u32, page_size: u32, per_page: u32, pages: u32 },
}

impl Remote {
    /// Pieces in all; `None` when they do not fit a u32.
    fn pieces(&self) -> Option<u32> {
        match *self {
            Self::Linear { padded, .. } => Some(padded.div_ceil(SCRATCH_PIECE)),
            Self::Paged { per_page, pages, .. } => pages.checked_mul(per_page),
        }
    }

    /// Source and length of piece `i`.
    fn piece(&self, i: u32, dram: &Dram) -> (NocAddr, u32) {
        let (src, padded, at) = match *self {
            Self::Linear { src, padded } => (src, padded, i * SCRATCH_PIECE),
            Self::Paged { base, first, page_size, per_page, .. } => {
                let (bank, offset) = interleaved_page(base, first + i / per_page, page_size, dram.banks());
                (dram.at(bank, offset), page_size.next_multiple_of(L1_ALIGN), (i % per_page) * SCRATCH_PIECE)
            }
        };
        (src.offset(at as u64), (padded - at).min(SCRATCH_PIECE))
    }
}

/// Relay-scratch slots: one piece each, read while earlier pieces relay.
#[cfg(not(feature = "bug-relay-reuse-before-sent"))]
const SCRATCH_SLOTS: u32 = 3;
/// Bytes of a relay piece (a multiple of [`L1_ALIGN`]).
#[cfg(not(feature = "bug-relay-reuse-before-sent"))]
const SCRATCH_PIECE: u32 = 8 * 1024;
// Known bug 6 keeps the relay scratch the firmware had when it was planted:
// one slot for the whole scratch, so the next piece's read follows the
// previous piece's writes at once. With several slots a reused slot's
// writes were issued pieces earlier, and the reads landing over them came
// too late: neither its known-bug test (2 seeds) nor a random race run (16
// seeds) showed corruption, though the missing wait is as wrong.
#[cfg(feature = "bug-relay-reuse-before-sent")]
const SCRATCH_SLOTS: u32 = 1;
#[cfg(feature = "bug-relay-reuse-before-sent")]
const SCRATCH_PIECE: u32 = RELAY_SCRATCH.size;
const _: () = assert!(SCRATCH_PIECE % L1_ALIGN == 0);
const _: () = assert!(SCRATCH_SLOTS * SCRATCH_PIECE <= RELAY_SCRATCH.size);

/// Where relay-scratch slot `slot` starts.
const fn scratch_slot(slot: u32) -> u32 {
    RELAY_SCRATCH.base + slot * SCRATCH_PIECE
}

/// The read transaction id of relay-scratch slot `slot`, after the chunk buffers'.
const fn scratch_read_id(slot: u32) -> u32 {
    chunk_read_id(CHUNK_BUFFERS) + slot
}
const _: () = assert!(scratch_read_id(SCRATCH_SLOTS - 1) <= MAX_TRANSACTION_ID);

/// Relay pieces in flight that the prefetcher may post before it waits for
/// the oldest to leave.
const POSTED: u32 = 4;

/// A small FIFO of posted relay pieces: (units, `writes_issued` mark).
#[derive(Clone, Copy, Default)]
struct Posted {
    entries: [(u32, u32); POSTED as usize],
    head: u32,
    len: u32,
}

impl Posted {
    /// Forgets every piece (all signalled), leaving the entries as they are:
    /// rebuilding the struct costs a `memset` of it per flush.
    fn clear(&mut self) {
        (self.head, self.len) = (0, 0);
    }

    fn push(&mut self, units: u32, mark: u32) {
        debug_assert!(self.len < POSTED);
        self.entries[((self.head + self.len) % POSTED) as usize] = (units, mark);
        self.len += 1;
    }

    /// Removes the pieces whose writes have left (`sent` has reached their
    /// mark) and returns their units.
    fn pop_sent(&mut self, sent: u32) -> u32 {
        let mut units = 0;
        while self.len > 0 {
            let (u, mark) = self.entries[self.head as usize];
            if !wrap_ge(sent, mark) {
                break;
            }
            units += u;
            self.head = (self.head + 1) % POSTED;
            self.len -= 1;
        }
        units
    }
}

/// Wrapping byte sum of `len` bytes of L1 at 4-aligned `addr` (the ABI's
/// `prefetch::checksum`, computed in place).
pub fn l1_checksum(p: &impl crate::memory::Memory, addr: u32, len: u32) -> u32 {
    let mut sum = 0u32;
    for i in 0..len.div_ceil(4) {
        let word = p.read_u32(addr + 4 * i).to_le_bytes();
        let n = (len - 4 * i).min(4) as usize;
        sum = word[..n].iter().fold(sum, |s, &b| s.wrapping_add(b as u32));
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Memory, TestL1};

    #[test]
    fn l1_checksum_matches_the_abi_checksum() {
        let mut l1 = TestL1::default();
        let bytes: std::vec::Vec<u8> = (0..23u8).map(|b| b.wrapping_mul(37)).collect();
        let mut padded = bytes.clone();
        padded.resize(24, 0xff);
        l1.write_words(0x1000, &padded);
        assert_eq!(l1_checksum(&l1, 0x1000, 23), checksum(&bytes));
    }
}
