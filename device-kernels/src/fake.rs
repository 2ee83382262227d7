//! A host-side stand-in for one core and the rest of the chip, for unit
//! tests of the firmware logic: NOC transfers complete at once against
//! plain memories, `halt` unwinds, and a wait that spins too long unwinds
//! too. The core sits on a real chip layout (`soc::ChipLayout` of a board
//! of the chip the crate is built for), whose `NocMap` is in its L1 as the
//! host would write it, so the firmware finds every coordinate as on a card.

use crate::memory::Memory;
use crate::platform::Platform;
use crate::CHIP;
use cqlab_abi::arch::Arch;
use cqlab_abi::mailbox::NOC_MAP;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::noc_map::NocMap;
use cqlab_abi::ring::PTR_UNIT;
use cqlab_abi::semaphore;
use cqlab_abi::soc::{Board, ChipLayout, Placement};
use std::cell::Cell;
use std::collections::HashMap;
use std::vec::Vec;
use zerocopy::IntoBytes;

/// Unwind payload of `halt`.
pub struct Halted;
/// Unwind payload of a wait that never ends.
pub struct Stuck;

/// Remote memory is kept in chunks of this many bytes, allocated on first use.
const CHUNK: u64 = 1 << 20;

/// The chip the fake core sits on: its layout, command-queue placement and
/// the `NocMap` the host writes for it.
pub struct FakeChip {
    pub layout: ChipLayout,
    pub placement: Placement,
    pub map: NocMap,
}

impl FakeChip {
    /// A board of [`CHIP`] (a Wormhole n150 or a Blackhole p150a, default
    /// harvesting) with `cqs` command queues.
    pub fn new(cqs: usize) -> Self {
        let board = match CHIP.arch {
            Arch::Wormhole => Board::WormholeN150,
            Arch::Blackhole => Board::BlackholeP150a,
        };
        let layout = ChipLayout::for_board(board).expect("board layout");
        let placement = layout.placement(cqs).expect("placement");
        let map = layout.noc_map(&placement).expect("NOC map");
        Self { layout, placement, map }
    }

    fn translated(&self, c: Coord) -> Coord {
        self.layout.tile(c).expect("a tile").translated
    }

    /// Translated coordinates of queue `cq`'s prefetcher and dispatcher.
    pub fn prefetcher(&self, cq: usize) -> Coord {
        self.translated(self.placement.cqs[cq].prefetcher)
    }
    pub fn dispatcher(&self, cq: usize) -> Coord {
        self.translated(self.placement.cqs[cq].dispatcher)
    }

    /// Translated coordinates of logical compute core `(col, row)`.
    pub fn worker(&self, col: u8, row: u8) -> Coord {
        self.map.grid.at(col, row)
    }

    /// NOC0 address of byte `offset` of DRAM bank `bank`.
    pub fn dram(&self, bank: u32, offset: u64) -> NocAddr {
        self.map.dram_addr(bank, 0, offset)
    }

    /// NOC0 address of host-memory offset `offset`.
    pub fn host(&self, offset: u64) -> NocAddr {
        NocAddr(self.map.pcie[0]).offset(offset)
    }
}

pub struct FakeCore {
    pub me: Coord,
    pub chip: FakeChip,
    pub l1: Vec<u8>,
    /// L1 of other cores, DRAM and host memory, by (coordinate, chunk of
    /// the local address).
    pub remote: HashMap<(Coord, u64), Vec<u8>>,
    /// Remote semaphores touched by NOC atomics: (core, index) -> value.
    pub remote_sems: HashMap<(Coord, u32), u32>,
    pub cycle: Cell<u64>,
    /// Reads left before a spinning wait is declared stuck.
    pub spin_budget: Cell<u64>,
    pub writes: u32,
    /// Calls of `noc_write_each` (a packed write issued straight from the
    /// ring, not streamed).
    pub write_each_calls: u32,
    /// Each return of ring pages (to `RING_PAGES_FREED` of any core): how
    /// many.
    pub pages_returned: Vec<u32>,
    /// Reads from DRAM banks.
    pub dram_reads: u32,
    /// Model a dispatcher that at once consumes all flushed ring data and
    /// frees whole pages of this size (read through `RING_PAGES_FREED`).
    pub peer_frees_pages: Option<u32>,
    /// Model a host that at once consumes every published completion record
    /// (read through `COMPLETION_RD_PTR`).
    pub host_drains: bool,
    /// Model subordinate cores that finish a launch as soon as BRISC starts
    /// them: these bits of `SubordinateRun::sync` read as 0 (`RUN_SYNC_DONE`).
    pub subordinates_finish: u32,
    /// The other core of this CQ (`Coord::packed`), for the models above.
    pub peer: u32,
    /// Model a prefetcher that feeds a dispatch stream into this
    /// dispatcher's ring as its pages are returned ([`FakeCore::feed`]).
    pub feed: Option<Feed>,
}

/// A dispatch stream going into a ring a returned page at a time.
pub struct Feed {
    stream: Vec<u8>,
    /// Bytes of it in the ring so far.
    sent: usize,
    base: u32,
    page_size: u32,
    pages: u32,
}

impl FakeCore {
    /// The core at translated `me` of a one-queue [`FakeChip`], with the map in L1.
    pub fn new(me: Coord) -> Self {
        Self::on(me, FakeChip::new(1))
    }

    /// The core at translated `me` of `chip`, with its map in L1.
    pub fn on(me: Coord, chip: FakeChip) -> Self {
        let mut core = Self {
            me,
            l1: std::vec![0; CHIP.l1_size as usize],
            remote: HashMap::new(),
            remote_sems: HashMap::new(),
            cycle: Cell::new(0),
            spin_budget: Cell::new(200_000),
            writes: 0,
            write_each_calls: 0,
            pages_returned: Vec::new(),
            dram_reads: 0,
            peer_frees_pages: None,
            host_drains: false,
            feed: None,
            subordinates_finish: 0,
            peer: 0,
            chip,
        };
        let map = core.chip.map;
        core.set_l1(NOC_MAP, map.as_bytes());
        core
    }

    /// Reads `len` bytes at `addr` (any tile, this one included).
    pub fn read_remote(&self, addr: NocAddr, len: usize) -> Vec<u8> {
        if addr.coord() == self.me {
            return self.l1_bytes(addr.local() as u32, len).to_vec();
        }
        let mut out = std::vec![0u8; len];
        for (i, b) in out.iter_mut().enumerate() {
            let a = addr.local() + i as u64;
            *b = self.remote.get(&(addr.coord(), a / CHUNK)).map_or(0, |c| c[(a % CHUNK) as usize]);
        }
        out
    }

    /// Writes `data` at `addr` (any tile, this one included).
    pub fn write_remote(&mut self, addr: NocAddr, data: &[u8]) {
        if addr.coord() == self.me {
            return self.set_l1(addr.local() as u32, data);
        }
        for (i, &b) in data.iter().enumerate() {
            let a = addr.local() + i as u64;
            let chunk = self.remote.entry((addr.coord(), a / CHUNK)).or_insert_with(|| std::vec![0; CHUNK as usize]);
            chunk[(a % CHUNK) as usize] = b;
        }
    }

    /// Host memory bytes at `offset`.
    pub fn sysmem(&self, offset: u64, len: usize) -> Vec<u8> {
        self.read_remote(self.chip.host(offset), len)
    }
    pub fn set_sysmem(&mut self, offset: u64, data: &[u8]) {
        let at = self.chip.host(offset);
        self.write_remote(at, data);
    }

    pub fn l1_bytes(&self, addr: u32, len: usize) -> &[u8] {
        &self.l1[addr as usize..addr as usize + len]
    }
    /// Feeds `stream` (whole 16-byte units) into the ring of `pages` pages
    /// of `page_size` bytes at `base`: as much as fits now, then a page more
    /// for each page returned (to `RING_PAGES_FREED` of any core), wrapping
    /// at the ring's end, each time adding to `RING_UNITS_FILLED`.
    pub fn feed(&mut self, stream: Vec<u8>, base: u32, page_size: u32, pages: u32) {
        assert!(stream.len() % PTR_UNIT as usize == 0, "a dispatch stream is whole 16-byte units");
        self.feed = Some(Feed { stream, sent: 0, base, page_size, pages });
        self.feed_pages(pages);
    }

    fn feed_pages(&mut self, pages: u32) {
        let Some(f) = self.feed.as_mut() else { return };
        let ring = (f.page_size * f.pages) as usize;
        let n = (pages as usize * f.page_size as usize).min(f.stream.len() - f.sent);
        let (bytes, at, base) = (f.stream[f.sent..f.sent + n].to_vec(), f.sent % ring, f.base);
        f.sent += n;
        let first = n.min(ring - at);
        self.set_l1(base + at as u32, &bytes[..first]);
        self.set_l1(base, &bytes[first..]);
        let filled = self.semaphore(semaphore::RING_UNITS_FILLED) + (n / PTR_UNIT as usize) as u32;
        self.set_semaphore(semaphore::RING_UNITS_FILLED, filled);
    }

    pub fn set_l1(&mut self, addr: u32, bytes: &[u8]) {
        self.l1[addr as usize..addr as usize + bytes.len()].copy_from_slice(bytes);
    }
    fn tick(&self) {
        self.cycle.set(self.cycle.get() + 1);
        let left = self.spin_budget.get();
        if left == 0 {
            std::panic::panic_any(Stuck);
        }
        self.spin_budget.set(left - 1);
    }
}

impl Memory for FakeCore {
    fn read_u32(&self, addr: u32) -> u32 {
        self.tick();
        if self.host_drains && addr == cqlab_abi::mailbox::COMPLETION_RD_PTR {
            let at = cqlab_abi::sysmem::COMPLETION_WR_PTR as u64;
            return u32::from_le_bytes(self.sysmem(at, 4).try_into().unwrap());
        }
        let a = addr as usize;
        let word = u32::from_le_bytes(self.l1[a..a + 4].try_into().unwrap());
        if addr == cqlab_abi::mailbox::SUBORDINATE_RUN {
            return word & !self.subordinates_finish;
        }
        word
    }
    fn write_u32(&mut self, addr: u32, value: u32) {
        let a = addr as usize;
        self.l1[a..a + 4].copy_from_slice(&value.to_le_bytes());
    }
    fn write_u8(&mut self, addr: u32, value: u8) {
        self.l1[addr as usize] = value;
    }
}

impl Platform for FakeCore {
    const NOC: usize = 0;

    fn cycle(&self) -> u64 {
        self.tick();
        self.cycle.get()
    }
    fn core_xy(&self) -> u32 {
        self.me.packed()
    }
    fn semaphore(&self, index: u32) -> u32 {
        self.tick();
        if let (Some(page), semaphore::RING_PAGES_FREED) = (self.peer_frees_pages, index) {
            let peer = Coord::unpack(self.peer);
            let units = self.remote_sems.get(&(peer, semaphore::RING_UNITS_FILLED)).copied().unwrap_or(0);
            return (units as u64 * PTR_UNIT as u64 / page as u64) as u32;
        }
        self.read_u32(semaphore::addr(index))
    }
    fn noc_read(&mut self, src: NocAddr, local: u32, len: u32) {
        if self.chip.map.dram[..self.chip.map.dram_banks as usize].iter().any(|b| NocAddr(b[0]).coord() == src.coord())
        {
            self.dram_reads += 1;
        }
        let data = self.read_remote(src, len as usize);
        self.set_l1(local, &data);
    }
    fn noc_read_with_id(&mut self, src: NocAddr, local: u32, len: u32, id: u32) {
        assert!((1..=cqlab_abi::arch::noc_cmd::packet_tag::MAX_TRANSACTION_ID).contains(&id), "transaction id {id}");
        self.noc_read(src, local, len);
    }
    fn reads_landed_id(&self, _id: u32) -> bool {
        // Every fake read lands at once.
        true
    }
    fn noc_write(&mut self, local: u32, dst: NocAddr, len: u32) {
        assert!(!dst.is_multicast(), "noc_write is unicast; multicasts go through noc_multicast");
        let data = self.l1_bytes(local, len as usize).to_vec();
        self.write_remote(dst, &data);
        self.writes += 1;
    }
    fn noc_write_each(&mut self, local: u32, stride: u32, dests: &[u32], addr: u32, len: u32) {
        self.write_each_calls += 1;
        for (i, &d) in dests.iter().enumerate() {
            self.noc_write(local + i as u32 * stride, NocAddr::unicast(Coord::unpack(d), addr as u64), len);
        }
    }
    fn noc_multicast(&mut self, local: u32, dst: NocAddr, len: u32, receivers: u32) {
        assert!(dst.is_multicast());
        let (s, e) = dst.rect();
        let grid = self.chip.map.grid;
        assert_eq!(receivers, grid.cores_in(s, e), "the receivers a multicast to {s}..{e} acks from");
        let data = self.l1_bytes(local, len as usize).to_vec();
        for row in 0..grid.rows as u8 {
            for col in 0..grid.cols as u8 {
                let c = grid.at(col, row);
                if (s.x..=e.x).contains(&c.x) && (s.y..=e.y).contains(&c.y) {
                    self.write_remote(NocAddr::unicast(c, dst.local()), &data);
                }
            }
        }
        self.writes += 1;
    }
    fn noc_atomic_inc(&mut self, dst: NocAddr, value: u32) {
        let index = semaphore::index_of(dst.local() as u32).expect("atomics increment semaphores");
        let v = self.remote_sems.entry((dst.coord(), index)).or_default();
        *v = v.wrapping_add(value);
        if index == semaphore::RING_PAGES_FREED {
            self.pages_returned.push(value);
            self.feed_pages(value);
        }
    }
    fn reads_done(&self) -> bool {
        true
    }
    fn writes_done(&self) -> bool {
        true
    }
    fn writes_sent(&self) -> bool {
        true
    }
    fn writes_issued(&self) -> u32 {
        self.writes
    }
    fn writes_sent_count(&self) -> u32 {
        self.writes
    }
    fn halt(&mut self) -> ! {
        std::panic::panic_any(Halted)
    }
}

/// The dispatch commands `build` writes, as the dispatcher's ring holds
/// them (a relay's payload).
pub fn dispatch_stream(
    build: impl FnOnce(&mut cqlab_abi::encode::DispatchWriter<'_>) -> Result<(), cqlab_abi::encode::EncodeError>,
) -> Vec<u8> {
    let mut buf = std::vec![0u8; 1 << 16];
    let mut e = cqlab_abi::encode::Encoder::new(&mut buf);
    e.relay_inline(true, build).unwrap();
    let len = u32::from_le_bytes(buf[4..8].try_into().unwrap()) as usize;
    buf[16..16 + len].to_vec()
}

/// How a run on the fake ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    Halted,
    Stuck,
}

/// Serialises runs: the panic hook is process-wide.
static HOOK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` until it halts or gets stuck waiting.
pub fn run_until_stopped(f: impl FnOnce()) -> End {
    let _guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let prev = std::panic::take_hook();
    std::panic::set_hook(std::boxed::Box::new(|info| {
        if !(info.payload().is::<Halted>() || info.payload().is::<Stuck>()) {
            std::eprintln!("{info}");
        }
    }));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(prev);
    match r {
        Ok(()) => unreachable!("firmware loops never return"),
        Err(e) if e.is::<Halted>() => End::Halted,
        Err(e) if e.is::<Stuck>() => End::Stuck,
        Err(e) => std::panic::resume_unwind(e),
    }
}
