//! A host-side stand-in for one core and the rest of the chip, for unit
//! tests of the CQ logic: NOC transfers complete at once against plain
//! memories, `halt` unwinds, and a wait that spins too long unwinds too.

use crate::memory::Memory;
use crate::platform::Platform;
use cqlab_abi::memory_map::L1_DEFAULT_SIZE;
use cqlab_abi::mmio::{self, MMIO_BASE};
use cqlab_abi::noc::{Coord, NocAddr, PCIE};
use std::cell::Cell;
use std::collections::HashMap;
use std::vec::Vec;

/// Unwind payload of `halt`.
pub struct Halted;
/// Unwind payload of a wait that never ends.
pub struct Stuck;

pub struct FakeCore {
    pub me: Coord,
    pub l1: Vec<u8>,
    pub semaphores: [u32; mmio::SEMAPHORE_COUNT as usize],
    /// L1 of other cores, DRAM banks and sysmem (at `PCIE`), by coordinate.
    pub remote: HashMap<Coord, Vec<u8>>,
    /// Remote semaphores touched by NOC atomics: (core, index) -> value.
    pub remote_sems: HashMap<(Coord, u32), u32>,
    pub cycle: Cell<u64>,
    /// Reads left before a spinning wait is declared stuck.
    pub spin_budget: Cell<u64>,
    pub writes: u32,
    /// Reads from DRAM banks.
    pub dram_reads: u32,
    /// Reads landed per transaction id (`Platform::reads_acked_id`).
    pub reads_by_id: [u32; mmio::NOC_READ_IDS as usize],
    /// Model a dispatcher that at once consumes all flushed ring data and
    /// frees whole pages of this size (read through `RING_PAGES_FREED`).
    pub peer_frees_pages: Option<u32>,
    /// Model a host that at once consumes every published completion record
    /// (read through `COMPLETION_RD_PTR`).
    pub host_drains: bool,
    /// The other core of this CQ (`Coord::packed`), for the models above.
    pub peer: u32,
}

impl FakeCore {
    pub fn new(me: Coord) -> Self {
        Self {
            me,
            l1: std::vec![0; L1_DEFAULT_SIZE as usize],
            semaphores: [0; mmio::SEMAPHORE_COUNT as usize],
            remote: HashMap::new(),
            remote_sems: HashMap::new(),
            cycle: Cell::new(0),
            reads_by_id: [0; mmio::NOC_READ_IDS as usize],
            spin_budget: Cell::new(200_000),
            writes: 0,
            dram_reads: 0,
            peer_frees_pages: None,
            host_drains: false,
            peer: 0,
        }
    }
    pub fn sysmem(&mut self) -> &mut Vec<u8> {
        self.remote.entry(PCIE).or_insert_with(|| std::vec![0; 4 << 20])
    }
    pub fn remote_mem(&mut self, c: Coord) -> &mut Vec<u8> {
        self.remote.entry(c).or_insert_with(|| std::vec![0; 4 << 20])
    }
    pub fn l1_bytes(&self, addr: u32, len: usize) -> &[u8] {
        &self.l1[addr as usize..addr as usize + len]
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
            let at = cqlab_abi::sysmem::COMPLETION_WR_PTR as usize;
            return self.remote.get(&PCIE).map_or(0, |m| u32::from_le_bytes(m[at..at + 4].try_into().unwrap()));
        }
        let a = addr as usize;
        u32::from_le_bytes(self.l1[a..a + 4].try_into().unwrap())
    }
    fn write_u32(&mut self, addr: u32, value: u32) {
        let a = addr as usize;
        self.l1[a..a + 4].copy_from_slice(&value.to_le_bytes());
    }
}

impl Platform for FakeCore {
    fn cycle(&self) -> u64 {
        self.tick();
        self.cycle.get()
    }
    fn core_xy(&self) -> u32 {
        self.me.packed()
    }
    fn semaphore(&self, index: u32) -> u32 {
        self.tick();
        if let (Some(page), cqlab_abi::mmio::sem::RING_PAGES_FREED) = (self.peer_frees_pages, index) {
            let peer = cqlab_abi::noc::Coord::unpack(self.peer);
            let units = self.remote_sems.get(&(peer, cqlab_abi::mmio::sem::RING_UNITS_FILLED)).copied().unwrap_or(0);
            return (units as u64 * 16 / page as u64) as u32;
        }
        self.semaphores[index as usize]
    }
    fn set_semaphore(&mut self, index: u32, value: u32) {
        self.semaphores[index as usize] = value;
    }
    fn noc_read(&mut self, src: NocAddr, local: u32, len: u32) {
        let (c, a) = (src.coord(), src.local() as usize);
        if matches!(cqlab_abi::noc::endpoint(c), cqlab_abi::noc::Endpoint::Dram { .. }) {
            self.dram_reads += 1;
        }
        let data = self.remote_mem(c)[a..a + len as usize].to_vec();
        self.set_l1(local, &data);
    }
    fn noc_read_with_id(&mut self, src: NocAddr, local: u32, len: u32, id: u32) {
        self.noc_read(src, local, len);
        // Every fake read lands at once, one per NOC packet.
        let n = &mut self.reads_by_id[id as usize];
        *n = n.wrapping_add(len.div_ceil(mmio::NOC_MAX_PACKET));
    }
    fn reads_acked_id(&self, id: u32) -> u32 {
        self.reads_by_id[id as usize]
    }
    fn noc_write(&mut self, local: u32, dst: NocAddr, len: u32) {
        assert!(!dst.is_multicast(), "fake NOC: unicast only");
        let data = self.l1_bytes(local, len as usize).to_vec();
        let (c, a) = (dst.coord(), dst.local() as usize);
        if c == self.me {
            self.set_l1(a as u32, &data);
        } else {
            self.remote_mem(c)[a..a + len as usize].copy_from_slice(&data);
        }
        self.writes += 1;
    }
    fn noc_atomic_inc(&mut self, dst: NocAddr, value: u32) {
        let index = (dst.local() as u32 - MMIO_BASE - mmio::SEMAPHORE_BASE) / 4;
        let v = self.remote_sems.entry((dst.coord(), index)).or_default();
        *v = v.wrapping_add(value);
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
