//! The dispatcher: consumes its ring (filled by the prefetcher), runs
//! dispatch commands, writes completion records to the host and returns
//! ring pages to the prefetcher once the writes sourced from them are acked.

use crate::cq_config::{setup, CqSetup};
use crate::places::{Dram, Unicasts};
use crate::platform::Platform;
use crate::report::{fail, wait_until, waypoint};
use crate::ring::{readable, split_at_wrap, RingGeometry};
use crate::{device_error, read_header, CHIP, CMD_HEADER, L1_ALIGN};
use core::mem::{offset_of, size_of};
use cqlab_abi::completion::{record_size, CompletionHeader, CompletionKind, EventRecord};
use cqlab_abi::decode::DispatchHeader;
use cqlab_abi::dispatch::{PackedFlags, WaitFlags, WriteHostFlags, MAX_PACKED_DESTS};
use cqlab_abi::mailbox::{CqConfig, DeviceError, COMPLETION_RD_PTR, SCRATCH};
use cqlab_abi::memory_map::interleaved_page;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::noc_map::GridWords;
use cqlab_abi::program::{launch_done_sem, launch_entry, LAUNCH_RING_ENTRIES};
use cqlab_abi::ring::{wrap_ge, RingPtr};
use cqlab_abi::semaphore::{self as sem};
use cqlab_abi::sysmem::{CqSysmemLayout, COMPLETION_WR_PTR};
use cqlab_abi::trace::TraceKind;
use cqlab_abi::waypoint::{DLY, PWD, PWW, QRBW, UAPW, WCW};
use zerocopy::IntoBytes;

/// Bytes of a completion record's header, and of an event's payload (the
/// command's and the record's).
const HEADER: u32 = size_of::<CompletionHeader>() as u32;
const EVENT: u32 = size_of::<EventRecord>() as u32;

pub struct Dispatcher<'p, P: Platform> {
    p: &'p mut P,
    cfg: CqConfig,
    sysmem: CqSysmemLayout,
    ring: RingGeometry,
    prefetcher: Coord,
    /// Host-memory offset 0, the DRAM banks, and the compute grid and the
    /// other memories a unicast may write (`NocMap`; the grid as masks, so
    /// that checking a destination costs two bit tests).
    host: NocAddr,
    dram: Dram,
    unicasts: Unicasts,
    /// The same grid in two words, where it fits them (both chips' grids
    /// do): a packed write's destinations are checked against it.
    grid_words: Option<GridWords>,
    /// The last multicast rectangle [`Self::receivers`] accepted (`NocAddr`
    /// with local 0) and its receivers: a program's multicast writes and
    /// its launch mostly go to one rectangle (the whole grid), so most
    /// calls are one comparison. It starts as `u64::MAX`, which has local
    /// bits set and so matches no `dst`.
    last_rect: (u64, u32),
    /// Bytes consumed from the ring (absolute position) and pages returned.
    read: u64,
    released: u64,
    write_offset: u32,
    completion_wr: RingPtr,
    completion_seq: u32,
    commands: u32,
    /// Launches written (the last launch count sent).
    launches: u32,
    /// Per launch-ring entry: worker completions its launches will add.
    launch_expected: [u32; LAUNCH_RING_ENTRIES as usize],
    /// Writes to workers issued since the last barrier (a launch must not
    /// overtake them).
    worker_writes: WorkerWrites,
    /// Ring pages finished with but maybe still being read by writes: the
    /// absolute page count up to which they may be released, and the
    /// `writes_issued` mark those writes must have left by.
    unreleased: Option<(u64, u32)>,
    /// The trace ring, of which the dispatcher is the only writer once
    /// running: a record costs its stores (no L1 load, no division).
    records: crate::trace::Cursor,
    core: u16,
    /// `RING_UNITS_FILLED` as last read (it only grows).
    filled_seen: u32,
    /// A `WRITE_PACKED`'s destinations, checked, while its blocks are
    /// written: the command's packed coordinate words as they are (the
    /// issue loop loads one word a destination). Kept here: an array on
    /// the stack was zeroed at every command, 15 % of the dispatcher's
    /// time with 128 unique args a core sent to each core alone.
    packed_dests: [u32; MAX_PACKED_DESTS as usize],
}

/// What was written towards workers since the last barrier.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WorkerWrites {
    None,
    /// Only multicasts to this one rectangle (`NocAddr` with local 0): a
    /// launch to the same rectangle takes their route and lands after them
    /// (`cqlab_sim::noc`, rule 1), so it needs no barrier.
    Multicast(u64),
    /// Anything else: a launch waits until they have landed.
    Any,
}

impl WorkerWrites {
    /// Whether a multicast to `dst` must wait for these writes to land
    /// (anything but nothing, or multicasts to its own rectangle).
    fn need_barrier_before(self, dst: NocAddr) -> bool {
        match self {
            WorkerWrites::None => false,
            WorkerWrites::Multicast(r) => !dst.is_multicast() || r != dst.with_local(0).0,
            WorkerWrites::Any => true,
        }
    }

    fn add(self, dst: NocAddr) -> Self {
        let rect = dst.with_local(0).0;
        match self {
            _ if !dst.is_multicast() => WorkerWrites::Any,
            WorkerWrites::None => WorkerWrites::Multicast(rect),
            WorkerWrites::Multicast(r) if r == rect => self,
            _ => WorkerWrites::Any,
        }
    }
}

impl<'p, P: Platform> Dispatcher<'p, P> {
    pub fn new(p: &'p mut P, cfg: CqConfig) -> Self {
        let CqSetup { ring, sysmem } = setup(p, &cfg);
        let (records, core) = (crate::trace::Cursor::take(p), p.core_xy() as u16);
        let (host, dram, unicasts) = (crate::places::host(p), Dram::load(p), Unicasts::load(p));
        Self {
            p,
            cfg,
            sysmem,
            ring,
            prefetcher: Coord::unpack(cfg.peer_xy),
            host,
            dram,
            unicasts,
            grid_words: GridWords::of(&unicasts.grid()),
            last_rect: (u64::MAX, 0),
            read: 0,
            released: 0,
            write_offset: 0,
            completion_wr: RingPtr::default(),
            completion_seq: 0,
            commands: 0,
            launches: 0,
            launch_expected: [0; LAUNCH_RING_ENTRIES as usize],
            worker_writes: WorkerWrites::None,
            unreleased: None,
            records,
            core,
            filled_seen: 0,
            packed_dests: [0; MAX_PACKED_DESTS as usize],
        }
    }

    /// Runs dispatch commands until TERMINATE.
    pub fn run(mut self) -> ! {
        loop {
            self.wait_readable(CMD_HEADER);
            let addr = self.ring.local(self.read);
            let h = read_header(self.p, addr);
            let header = match DispatchHeader::parse(&h) {
                Ok(h) => h,
                Err(kind) => fail(self.p, device_error(kind), addr, h[0] as u32, self.read as u32, self.filled()),
            };
            let id = header.id() as u32;
            let size = CMD_HEADER + header.payload_len() as u32;
            self.trace(TraceKind::CmdStart, id, size);
            self.commands = self.commands.wrapping_add(1);
            self.consume(CMD_HEADER);
            self.execute(header, addr);
            // Header-only commands (WAIT, GO, DELAY...) finish pages too: a
            // long run of them must not starve the prefetcher of credits.
            // A command with a payload released pages as it consumed it.
            if size == CMD_HEADER {
                self.release_pages();
            }
            self.trace(TraceKind::CmdEnd, id, size);
        }
    }

    fn execute(&mut self, header: DispatchHeader, addr: u32) {
        match header {
            DispatchHeader::WriteLinear(_) | DispatchHeader::Launch(_) => {}
            DispatchHeader::WritePaged(_) | DispatchHeader::WritePacked(_) | DispatchHeader::Go(_) => {
                self.worker_writes = WorkerWrites::Any
            }
            _ => {}
        }
        match header {
            DispatchHeader::WriteLinear(cmd) => {
                let dst = NocAddr(cmd.dst).offset(self.write_offset as u64);
                self.worker_writes = self.worker_writes.add(dst);
                if dst.is_multicast() {
                    let receivers = self.receivers(dst, addr);
                    self.stream(cmd.length, |p, local, off, n| {
                        p.noc_multicast(local, dst.offset(off as u64), n, receivers)
                    });
                } else {
                    self.check_unicast(dst, cmd.length, addr);
                    self.stream(cmd.length, |p, local, off, n| p.noc_write(local, dst.offset(off as u64), n));
                }
            }
            DispatchHeader::WritePaged(cmd) => {
                let (base, page_size, start) =
                    (cmd.base_addr + self.write_offset, cmd.page_size, cmd.start_page as u32);
                let dram = self.dram;
                self.stream(cmd.pages * cmd.page_size, |p, mut local, mut off, mut n| {
                    while n > 0 {
                        let (page, in_page) = (start + off / page_size, off % page_size);
                        let m = n.min(page_size - in_page);
                        let (bank, boff) = interleaved_page(base, page, page_size, dram.banks());
                        p.noc_write(local, dram.at(bank, boff + in_page as u64), m);
                        (local, off, n) = (local + m, off + m, n - m);
                    }
                });
            }
            DispatchHeader::WritePacked(cmd) => self.write_packed(cmd, addr),
            DispatchHeader::WriteHost(cmd) => {
                let event = WriteHostFlags::from_bits_retain(cmd.flags).contains(WriteHostFlags::EVENT);
                self.write_host(cmd.length, cmd.tag, event, addr);
            }
            DispatchHeader::Wait(cmd) if WaitFlags::from_bits_retain(cmd.flags).contains(WaitFlags::WAIT_LAUNCH) => {
                // The launch `count` back from the next one (ring entries
                // further back have been reused, so those launches are done).
                if cmd.count <= self.launches {
                    self.wait_launch_done(self.launches.wrapping_add(1).wrapping_sub(cmd.count));
                }
            }
            DispatchHeader::Wait(cmd)
                if WaitFlags::from_bits_retain(cmd.flags).contains(WaitFlags::WAIT_MEMORY)
                    && cmd.addr >= CHIP.l1_size =>
            {
                // A word past L1 (the decoder knows no chip's size).
                fail(self.p, DeviceError::BadSize, addr, cmd.addr, self.read as u32, self.filled())
            }
            DispatchHeader::Wait(cmd) => self.wait(cmd.flags, cmd.addr, cmd.count),
            DispatchHeader::Go(cmd) => {
                let dst = NocAddr(cmd.dst);
                let receivers = if dst.is_multicast() {
                    self.receivers(dst, addr)
                } else {
                    self.check_unicast(dst, 4, addr);
                    1
                };
                self.barrier();
                self.p.write_u32(SCRATCH, cmd.signal);
                if dst.is_multicast() {
                    self.p.noc_multicast(SCRATCH, dst, 4, receivers);
                } else {
                    self.p.noc_write(SCRATCH, dst, 4);
                }
            }
            DispatchHeader::Launch(cmd) => self.launch(NocAddr(cmd.dst), cmd.length as u32, addr),
            DispatchHeader::SetWriteOffset(v) => self.write_offset = v,
            DispatchHeader::Delay(cycles) => {
                self.release_pages_now();
                let start = self.p.cycle();
                wait_until(self.p, DLY, |p| p.cycle().wrapping_sub(start) >= cycles as u64);
            }
            DispatchHeader::Debug(cmd) => {
                let mut sum = 0u32;
                self.stream(cmd.length, |p, local, _, n| {
                    sum = sum.wrapping_add(crate::prefetch::l1_checksum(p, local, n))
                });
                if sum != cmd.checksum {
                    fail(self.p, DeviceError::BadChecksum, addr, sum, self.read as u32, self.filled());
                }
            }
            DispatchHeader::Terminate => {
                self.release_pages_now();
                crate::report::exit(self.p, self.commands);
            }
        }
    }

    /// Appends a trace record (`report::trace`, through the cursor).
    fn trace(&mut self, kind: TraceKind, arg0: u32, arg1: u32) {
        let cycle = self.p.cycle();
        self.records.record(self.p, self.core, cycle, kind, arg0, arg1);
    }

    /// LAUNCH: once every earlier write to workers (kernel text, args) is
    /// acknowledged, the payload, stamped with `n` in its `LAUNCH_TAG`, becomes launch message
    /// `n` in every worker's ring entry for `n`: one multicast, the GO. The
    /// host has made sure launch `n - LAUNCH_RING_ENTRIES` finished before
    /// this entry is reused. Launch messages need no barrier between them:
    /// each lands in its own entry and carries its own tag.
    fn launch(&mut self, dst: NocAddr, len: u32, addr: u32) {
        let n = self.launches.wrapping_add(1);
        let workers = self.receivers(dst, addr);
        // The entry's previous launch must be finished on every worker.
        self.wait_launch_done(n);
        let entry_slot = (n % LAUNCH_RING_ENTRIES) as usize;
        self.launch_expected[entry_slot] = self.launch_expected[entry_slot].wrapping_add(workers);
        if !const { crate::mutant::dropped("dispatch-go-before-writes-landed") }
            && self.worker_writes.need_barrier_before(dst)
        {
            self.barrier();
        }
        let entry = dst.with_local(launch_entry(self.cfg.cq_id, n) as u64);
        self.stream(len, |p, local, off, m| {
            if off + m == len {
                // The piece with the tag: stamp it, and let any earlier
                // piece (the message wrapped the ring) land first.
                p.write_u32(local + m - 4, n);
                if off > 0 && !const { crate::mutant::dropped("dispatch-launch-tag-before-body") } {
                    crate::report::wait_writes(p);
                }
            }
            p.noc_multicast(local, entry.offset(off as u64), m, workers);
        });
        self.launches = n;
    }

    /// The compute cores a multicast to `dst` reaches (each acks once): the
    /// rectangle's corners must be compute cores, so that only they are
    /// inside it (the dispatch cores and harvested tiles lie beyond the
    /// compute grid), or the command at `addr` is refused.
    fn receivers(&mut self, dst: NocAddr, addr: u32) -> u32 {
        let rect = dst.with_local(0).0;
        if rect == self.last_rect.0 {
            return self.last_rect.1;
        }
        let ((s, e), grid) = (dst.rect(), self.unicasts.grid());
        if !dst.is_multicast() || !grid.contains(s) || !grid.contains(e) {
            fail(self.p, DeviceError::BadDestination, addr, e.packed(), self.read as u32, s.packed());
        }
        let n = grid.cores_in(s, e);
        self.last_rect = (rect, n);
        n
    }

    /// Refuses the command at `addr` unless its unicast of `len` bytes to
    /// `dst` reaches memory the NOC map names ([`Unicasts::reach`]): a
    /// write to no such place would hang the NOC or be refused by it, with
    /// nothing on the host's side but a stall.
    #[inline(always)]
    fn check_unicast(&mut self, dst: NocAddr, len: u32, addr: u32) {
        if !self.unicasts.reach(self.p, &self.dram, dst, len) {
            self.refuse_unicast(dst, addr);
        }
    }

    /// [`Self::check_unicast`]'s refusal, out of line (each command with a
    /// unicast keeps only the test). The record's value and write pointer
    /// are `dst`'s high and low words (the write offset applied).
    #[cold]
    #[inline(never)]
    fn refuse_unicast(&mut self, dst: NocAddr, addr: u32) -> ! {
        fail(self.p, DeviceError::BadDestination, addr, (dst.0 >> 32) as u32, self.read as u32, dst.0 as u32)
    }

    /// Waits until launch `n`'s ring entry is done with: its per-entry
    /// completion count has reached every completion expected of the
    /// launches that used it. Usually true at once (no wait records then).
    fn wait_launch_done(&mut self, n: u32) {
        let (sem, want) = (launch_done_sem(n), self.launch_expected[(n % LAUNCH_RING_ENTRIES) as usize]);
        if !const { crate::mutant::dropped("dispatch-launch-entry-reuse-early") }
            && !wrap_ge(self.p.semaphore(sem), want)
        {
            self.wait(WaitFlags::WAIT_COUNTER.bits(), sem, want);
        }
    }

    fn filled(&self) -> u32 {
        self.p.semaphore(sem::RING_UNITS_FILLED)
    }

    /// Every write and atomic landed: for ordering with a later signal to
    /// another destination (GO to workers, WAIT with BARRIER).
    fn barrier(&mut self) {
        crate::report::wait_writes(self.p);
        self.worker_writes = WorkerWrites::None;
    }

    /// Every write has left L1: before its source (ring pages, SCRATCH) is
    /// reused. Writes to host memory need nothing more to stay in order
    /// (one route: `cqlab_sim::noc`, rules 1 and 4).
    fn wait_sent(&mut self) {
        crate::report::wait_writes_sent(self.p);
    }

    /// Waits until `n` bytes (at most the ring size) are in the ring.
    #[inline(always)]
    fn wait_readable(&mut self, n: u32) {
        // The count last seen usually shows them already (no load).
        if readable(self.read, self.filled_seen) < n {
            self.wait_readable_slow(n);
        }
    }

    fn wait_readable_slow(&mut self, n: u32) {
        if self.readable_now(n) >= n {
            return;
        }
        // The prefetcher may need the pages we hold to send more.
        self.release_pages_now();
        let read = self.read;
        wait_until(self.p, UAPW, |p| readable(read, p.semaphore(sem::RING_UNITS_FILLED)) >= n);
        self.filled_seen = self.filled();
    }

    /// Bytes in the ring now; the prefetcher's count is read again only
    /// when the count last seen shows fewer than `want` (an MMIO load per
    /// command saved while the ring is ahead).
    fn readable_now(&mut self, want: u32) -> u32 {
        let seen = readable(self.read, self.filled_seen);
        if seen >= want {
            return seen;
        }
        self.filled_seen = self.filled();
        readable(self.read, self.filled_seen)
    }

    fn consume(&mut self, n: u32) {
        self.read += n as u64;
    }

    /// Returns finished pages to the prefetcher once every write that read
    /// from them has left them (sent; landing is not needed to reuse them).
    /// Does not wait: pages whose writes are still leaving go back on a
    /// later call, so the dispatcher goes on issuing writes meanwhile. Runs
    /// after every command and every streamed piece, so the common cases
    /// (nothing to release; pages still waiting for their writes) cost one
    /// comparison or one counter load here, without a call.
    #[inline(always)]
    fn release_pages(&mut self) {
        // A group of pages at a time (`release_group`), as soon as their
        // writes have left. Rings of small pages (under 4 KiB) return each
        // page and wait for its writes instead: there the prefetcher
        // runs short of room within a few pages, and returning them late
        // made it drain its writes at every page (it flushes before it
        // waits for room), which also hid known bug 6 from the random race
        // workload (found in 3 of 64 seeds instead of within 16).
        let small = self.ring.page_size < 4096;
        let ready = match self.unreleased {
            Some((_, mark)) => small || wrap_ge(self.p.writes_sent_count(), mark),
            None => self.ring.releasable(self.read, self.released) >= self.release_group(),
        };
        if ready {
            self.release(small);
        }
    }

    /// Returns every finished page, waiting for the writes that read from
    /// them: before the dispatcher itself waits for anything.
    fn release_pages_now(&mut self) {
        self.release(true);
    }

    fn release(&mut self, wait: bool) {
        // Known bug 2 returns the page being read too, without waiting for
        // the writes sourced from it: the prefetcher may overwrite live data.
        #[cfg(feature = "bug-release-before-ack")]
        {
            let _ = wait;
            let next = self.read.next_multiple_of(self.ring.page_size as u64);
            let pages = self.ring.releasable(next, self.released);
            if pages > 0 {
                self.return_pages(pages);
            }
        }
        #[cfg(not(feature = "bug-release-before-ack"))]
        {
            // The mutant takes every write as left already.
            const LEFT: bool = crate::mutant::dropped("dispatch-release-before-sent");
            let sent = |p: &P, mark: u32| LEFT || wrap_ge(p.writes_sent_count(), mark);
            let wait = wait && !LEFT;
            if let Some((upto, mark)) = self.unreleased {
                if wait {
                    crate::report::wait_sent_until(self.p, mark);
                }
                if !sent(self.p, mark) {
                    return;
                }
                self.unreleased = None;
                self.return_pages((upto - self.released) as u32);
            }
            let pages = self.ring.releasable(self.read, self.released);
            if pages == 0 || (!wait && pages < self.release_group()) {
                return;
            }
            // Every write issued so far is all that can still read them.
            let mark = self.p.writes_issued();
            if wait {
                crate::report::wait_sent_until(self.p, mark);
            }
            if sent(self.p, mark) {
                self.return_pages(pages);
            } else {
                self.unreleased = Some((self.released + pages as u64, mark));
            }
        }
    }

    /// Pages returned together unless the dispatcher is about to wait:
    /// a quarter of the ring. Each return costs an atomic and a trace
    /// record (~40 cycles), which page by page held up large packed writes
    /// (a quarter of a 128-unique-args program); the prefetcher keeps at
    /// least half the ring to fill meanwhile (a group whose writes are
    /// still leaving, most of a group more, the page being read). Rings of
    /// small pages return each page (`release_pages` says why).
    #[inline(always)]
    fn release_group(&self) -> u32 {
        if self.ring.page_size < 4096 {
            1
        } else {
            (self.ring.pages / 4).max(1)
        }
    }

    fn return_pages(&mut self, pages: u32) {
        let freed = NocAddr::unicast(self.prefetcher, sem::addr(sem::RING_PAGES_FREED) as u64);
        self.p.noc_atomic_inc(freed, pages);
        self.released += pages as u64;
        self.trace(TraceKind::CreditsReleased, pages, self.released as u32);
    }

    /// Streams a payload of `len` bytes (padded to [`L1_ALIGN`] in the ring) through
    /// `sink(platform, l1_addr, payload_offset, n)` as it arrives, releasing
    /// pages as it goes, so payloads larger than the ring flow through it.
    fn stream(&mut self, len: u32, mut sink: impl FnMut(&mut P, u32, u32, u32)) {
        let padded = len.next_multiple_of(L1_ALIGN);
        let mut done = 0;
        while done < padded {
            self.wait_readable(L1_ALIGN);
            let avail = self.readable_now(padded - done);
            let n = self.ring.contiguous(self.read, avail.min(padded - done));
            let data = n.min(len.saturating_sub(done));
            if data > 0 {
                sink(self.p, self.ring.local(self.read), done, data);
            }
            self.consume(n);
            done += n;
            self.release_pages();
        }
    }

    /// Reads a packed write's `count` destinations (its `table` bytes at
    /// the read position, readable) into `packed_dests`. Returns the first
    /// that is no compute core, if any: its address, word and index. Out of
    /// line, with the failure left to the caller, so each loop's branches
    /// stay short: its loop runs once for every core a packed write
    /// reaches.
    #[inline(never)]
    fn read_dests(&mut self, count: u32, table: u32) -> Option<(u32, u32, u32)> {
        let dests = &mut self.packed_dests[..count as usize];
        let start = self.ring.local(self.read);
        match self.grid_words {
            // Mostly: the table does not wrap, its words are at one address
            // on, and the grid fits two words. Four at a time, with one
            // branch for the four (a taken branch costs what three
            // instructions do); the first bad one is looked for only once
            // there is one.
            Some(grid) if self.ring.contiguous(self.read, table) == table => {
                let mut quads = dests.chunks_exact_mut(4);
                let mut at = start;
                let mut check = grid.check();
                for quad in &mut quads {
                    // Written out: the firmware is built for size, which keeps
                    // an inner loop.
                    let (r0, r1) = (self.p.read_u32(at), self.p.read_u32(at + 4));
                    let (r2, r3) = (self.p.read_u32(at + 8), self.p.read_u32(at + 12));
                    quad.copy_from_slice(&[r0, r1, r2, r3]);
                    check.add(r0);
                    check.add(r1);
                    check.add(r2);
                    check.add(r3);
                    at += 16;
                }
                for d in quads.into_remainder() {
                    let r = self.p.read_u32(at);
                    *d = r;
                    check.add(r);
                    at += 4;
                }
                if check.passed() {
                    return None;
                }
                (0..count)
                    .map(|i| (start + 4 * i, self.p.read_u32(start + 4 * i), i))
                    .find(|&(_, r, _)| !grid.contains_packed(r))
            }
            _ => {
                for (i, d) in dests.iter_mut().enumerate() {
                    let at = self.ring.local(self.read + 4 * i as u64);
                    *d = self.p.read_u32(at);
                    if !self.unicasts.grid().contains_packed(*d) {
                        return Some((at, *d, i as u32));
                    }
                }
                None
            }
        }
    }

    fn write_packed(&mut self, cmd: cqlab_abi::dispatch::WritePackedCmd, addr: u32) {
        let count = cmd.count.min(MAX_PACKED_DESTS) as u32;
        let table = (4 * count).next_multiple_of(L1_ALIGN);
        let block = cmd.size.next_multiple_of(L1_ALIGN);
        let shared = PackedFlags::from_bits_retain(cmd.flags).contains(PackedFlags::SHARED_DATA);
        if table > self.ring.size() || (shared && block > self.ring.size()) {
            fail(self.p, DeviceError::TooLarge, addr, cmd.size, self.read as u32, self.ring.size());
        }
        self.wait_readable(table);
        if let Some((at, raw, i)) = self.read_dests(count, table) {
            fail(self.p, DeviceError::BadDestination, at, raw, self.read as u32, i);
        }
        self.consume(table);
        if shared {
            // The block must fit what the ring can hold beyond the partly
            // consumed page we are in, or it could never become readable.
            self.release_pages();
            let room = self.ring.size() - self.ring.in_page(self.read);
            if block > room {
                fail(self.p, DeviceError::TooLarge, addr, cmd.size, self.read as u32, room);
            }
            self.wait_readable(block);
            // The block's place in the ring (in two pieces when it wraps),
            // worked out once for all destinations.
            let (local, base) = (self.ring.local(self.read), self.ring.base);
            let (first, second) = split_at_wrap(local - base, cmd.size, self.ring.size());
            for &d in &self.packed_dests[..count as usize] {
                let dst = NocAddr::unicast(Coord::unpack(d), cmd.addr as u64);
                self.p.noc_write(local, dst, first);
                if second > 0 {
                    self.p.noc_write(base, dst.offset(first as u64), second);
                }
            }
            self.consume(block);
            self.release_pages();
        } else {
            // The dispatcher is what holds a large packed write up, so most
            // of its blocks are in the ring already, in one piece: the
            // blocks readable now go as one write a core straight from the
            // ring, their pages returned once after (streamed core by core,
            // each core's ring step and page release cost about twice its
            // write). A block that wraps, or has not arrived whole, streams.
            let mut i = 0;
            while i < count {
                let left = (count - i) * block;
                let readable = self.readable_now(left);
                // (`block` >= 16: the header's parse refuses size 0.)
                let whole = self.ring.contiguous(self.read, readable).checked_div(block).unwrap_or(0);
                if whole > 0 {
                    let n = whole.min(count - i);
                    let dests = &self.packed_dests[i as usize..(i + n) as usize];
                    self.p.noc_write_each(self.ring.local(self.read), block, dests, cmd.addr, cmd.size);
                    self.consume(n * block);
                    self.release_pages();
                    i += n;
                } else {
                    let dst = NocAddr::unicast(Coord::unpack(self.packed_dests[i as usize]), cmd.addr as u64);
                    self.stream(cmd.size, |p, local, off, n| p.noc_write(local, dst.offset(off as u64), n));
                    i += 1;
                }
            }
        }
    }

    /// WRITE_HOST: one completion record (header + `len` payload bytes),
    /// written when the host has made room, then the write pointer.
    fn write_host(&mut self, len: u32, tag: u32, event: bool, addr: u32) {
        let size = self.cfg.completion_size;
        let record = record_size(len);
        if record > size {
            fail(self.p, DeviceError::TooLarge, addr, len, self.read as u32, self.completion_wr.0);
        }
        let wr = self.completion_wr;
        // The host writes the read pointer: read L1, not an L0 copy.
        let free = |p: &mut P| {
            p.invalidate_l1();
            size - RingPtr::used(wr, RingPtr(p.read_u32(COMPLETION_RD_PTR)), size)
        };
        if !const { crate::mutant::dropped("dispatch-completion-overwrite") } && free(self.p) < record {
            self.release_pages_now();
            wait_until(self.p, QRBW, |p| free(p) >= record);
        }
        let kind = if event { CompletionKind::Event } else { CompletionKind::Data };
        let header = CompletionHeader {
            kind: kind as u8,
            _pad: 0,
            cq: self.cfg.cq_id as u16,
            length: len,
            tag,
            seq: self.completion_seq,
        };
        // SCRATCH is reused; earlier records need not have landed.
        self.wait_sent();
        self.p.write_words(SCRATCH, header.as_bytes());
        let base = self.sysmem.completion_base();
        let at = wr.offset_bytes();
        self.p.noc_write(SCRATCH, self.host.offset(base + at as u64), HEADER);
        // Payload offsets within the ring: record start + the header, wrapping.
        let ring_addr = move |off: u32| base + ((at + HEADER + off) % size) as u64;
        if event {
            // Stamp the event with the dispatcher's cycle count: the
            // command's EventRecord, its cycle filled in, goes from SCRATCH
            // after the header.
            const ID: u32 = offset_of!(EventRecord, event_id) as u32;
            const CQ: u32 = offset_of!(EventRecord, cq) as u32;
            const CYCLE: u32 = offset_of!(EventRecord, cycle) as u32;
            let ev = SCRATCH + HEADER;
            self.wait_readable(EVENT);
            let local = self.ring.local(self.read);
            let cycle = self.p.cycle();
            self.p.write_u32(ev + ID, self.p.read_u32(local + ID));
            self.p.write_u32(ev + CQ, self.p.read_u32(local + CQ));
            self.p.write_u32(ev + CYCLE, cycle as u32);
            self.p.write_u32(ev + CYCLE + 4, (cycle >> 32) as u32);
            self.p.noc_write(ev, self.host.offset(ring_addr(0)), EVENT);
            self.trace(TraceKind::Event, self.p.read_u32(local + ID), self.cfg.cq_id);
            self.consume(EVENT);
            self.release_pages();
        } else {
            let host = self.host;
            self.stream(len, |p, local, off, n| {
                let (first, second) = split_at_wrap((at + HEADER + off) % size, n, size);
                p.noc_write(local, host.offset(ring_addr(off)), first);
                if second > 0 {
                    p.noc_write(local + first, host.offset(base), second);
                }
            });
        }
        self.completion_seq = self.completion_seq.wrapping_add(1);
        self.completion_wr = advance_completion(wr, record, size);
        // The record lands before the pointer (same route to host memory);
        // only SCRATCH, the header's source, must be free.
        self.wait_sent();
        self.p.write_u32(SCRATCH, self.completion_wr.0);
        let ptr = self.host.offset(self.sysmem.header() + COMPLETION_WR_PTR as u64);
        self.p.noc_write(SCRATCH, ptr, 4);
        self.trace(TraceKind::CompletionWrite, record, self.completion_wr.0);
    }

    /// WAIT: optional barrier, optional wait on memory or a counter, then
    /// optional clear and optional prefetcher release.
    fn wait(&mut self, flags: u8, addr: u32, count: u32) {
        let flags = WaitFlags::from_bits_retain(flags);
        #[cfg(feature = "bug-stall-release-early")]
        if flags.contains(WaitFlags::NOTIFY_PREFETCH) {
            // Known bug 1: the prefetcher is released before the condition holds.
            self.notify_prefetcher();
        }
        if flags.contains(WaitFlags::BARRIER) && !const { crate::mutant::dropped("dispatch-wait-without-barrier") } {
            self.barrier();
        }
        let counter = flags.contains(WaitFlags::WAIT_COUNTER);
        if counter || flags.contains(WaitFlags::WAIT_MEMORY) {
            // Another agent writes the word: read L1, not an L0 copy (a
            // semaphore read always does).
            let value = |p: &mut P| {
                if counter {
                    p.semaphore(addr)
                } else {
                    p.invalidate_l1();
                    p.read_u32(addr)
                }
            };
            let observed = value(self.p);
            self.trace(TraceKind::WaitTarget, flags.bits() as u32, addr);
            self.trace(TraceKind::WaitBegin, count, observed);
            let w = if counter && addr == sem::WORKERS_DONE { WCW } else { PWW };
            if !condition_holds(observed, count, counter) {
                self.release_pages_now();
            }
            wait_until(self.p, w, |p| condition_holds(value(p), count, counter));
            let observed = value(self.p);
            waypoint(self.p, PWD);
            self.trace(TraceKind::WaitEnd, count, observed);
            if flags.contains(WaitFlags::CLEAR) {
                if counter {
                    self.p.set_semaphore(addr, observed.wrapping_sub(count));
                } else {
                    self.p.write_u32(addr, observed.wrapping_sub(count));
                }
            }
        }
        #[cfg(not(feature = "bug-stall-release-early"))]
        if flags.contains(WaitFlags::NOTIFY_PREFETCH) {
            self.notify_prefetcher();
        }
    }

    fn notify_prefetcher(&mut self) {
        let release = NocAddr::unicast(self.prefetcher, sem::addr(sem::STALL_RELEASE) as u64);
        self.p.noc_atomic_inc(release, 1);
    }
}

/// Whether a WAIT on `observed` reaching `count` is satisfied. Known bug 5
/// takes a memory word still at 0 (an event word no event has written yet)
/// for "already signalled".
fn condition_holds(observed: u32, count: u32, counter: bool) -> bool {
    if cfg!(feature = "bug-event-zero-signalled") && !counter && observed == 0 {
        return true;
    }
    wrap_ge(observed, count)
}

/// Advances the completion write pointer. Known bug 4 forgets the toggle.
fn advance_completion(wr: RingPtr, record: u32, size: u32) -> RingPtr {
    let next = wr.advance(record, size);
    if cfg!(feature = "bug-completion-no-toggle") {
        RingPtr::new(next.offset_bytes(), wr.toggle())
    } else {
        next
    }
}
