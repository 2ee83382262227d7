//! The random protocol workload: per seed, a queue layout (issue,
//! completion, fetch-queue and dispatcher-ring sizes, PCIe latency, jitter,
//! write back-pressure, how late the host reads completions)
//! and a random mix of every command kind on both queues — inline L1
//! writes, paged DRAM writes, packed writes (shared and per core), reads
//! (blocking and deferred), launches of kernels that store a result,
//! traces that launch kernels and write, delays, and events across queues.
//! Sizes are uniform over wide ranges so commands end at every 16-byte
//! offset of a ring page, and small queues make the issue queue, the
//! completion queue and the chunk area wrap often. Every read and kernel
//! result is checked against a host model of device memory that knows, for
//! each byte, which command wrote it.
//!
//! Ordering is the workload's job, as it is a real program's: an access
//! from one queue to memory last touched from the other is preceded by an
//! event on that queue and a wait for it on this one, so the model is exact.

use super::failure::{first_difference, Failure};
use cqlab_abi::memory_map::{DISPATCH_RING, MAX_CHUNK, TRACE_AREA};
use cqlab_abi::{L1_ALIGNMENT, PCIE_ALIGNMENT};
use cqlab_driver::{Buffer, CoreRange, Device, DeviceConfig, PackedData, PendingRead, Placement, Trace};
use cqlab_sim::config::SimConfig;
use cqlab_sim::rng::Rng;

/// The workload's own random stream is forked from the seed with this
/// constant, so the simulator's stream (same seed) is independent of it.
const STREAM: u64 = 0x7261_6e64_6f6d_0001;
/// Commands per seed = `--iterations` x this.
pub const OPS_PER_ITERATION: u32 = 12;
/// Largest DRAM buffer the workload allocates: several pages of the
/// largest page size, while keeping a seed's final sweep short.
const MAX_DRAM_BUFFER: u32 = 128 << 10;

fn pick<T: Copy>(rng: &mut Rng, items: &[T]) -> T {
    items[rng.upto(items.len() as u64 - 1) as usize]
}

/// The seed's queue layout and timing, drawn before the device is built.
pub fn configure(seed: u64, sim: &mut SimConfig, cfg: &mut DeviceConfig) {
    let mut rng = Rng::new(seed ^ STREAM ^ 0xc0f1);
    let align = PCIE_ALIGNMENT as u32;
    // Each queue is small (a few KiB: it wraps often) or large (it holds
    // the largest DRAM pages, see `layout`), at even odds.
    cfg.issue_size =
        if rng.upto(1) == 0 { 1 << 20 } else { pick(&mut rng, &[16 * align, 24 * align, 32 * align, 64 * align]) };
    cfg.completion_size =
        if rng.upto(1) == 0 { 256 << 10 } else { pick(&mut rng, &[16 * align, 32 * align, 64 * align]) };
    cfg.fetch_entries = pick(&mut rng, &[4, 16, 128]);
    ring_and_timing(&mut rng, sim, cfg);
    // A third of the seeds with a host that reads completions only every
    // 20 polls of a wait, so that the completion queue fills (drawn last,
    // so the draws above replay).
    cfg.drain_every_polls = pick(&mut rng, &[1, 1, 20]);
}

/// The dispatcher ring and the timing a seed runs with (shared by the
/// random and programs workloads, drawn in this order from `rng`).
pub fn ring_and_timing(rng: &mut Rng, sim: &mut SimConfig, cfg: &mut DeviceConfig) {
    let page = pick(rng, &[256u32, 1024, 4096]);
    let max_pages = DISPATCH_RING.size / page;
    cfg.ring_page_size = page;
    // The dispatcher ring is a few pages (it wraps every few commands) or
    // the whole ring (it holds several of the largest DRAM pages), at even odds.
    cfg.ring_pages = if rng.upto(1) == 0 { max_pages } else { pick(rng, &[4u32, 8]).min(max_pages) };
    sim.pcie.read_latency_cycles = pick(rng, &[750, 2000, 4000]);
    sim.faults.noc_jitter_cycles = sim.faults.noc_jitter_cycles.max(pick(rng, &[0, 200, 800]));
    sim.quantum_jitter = sim.quantum_jitter.max(pick(rng, &[0, 64]));
    // Back-pressure holds a write's source longer: a buffer reused before
    // its writes have left shows (drawn last, so the draws above replay).
    // Its upper levels outlast the calibrated chips' ~1,000-1,500 cycles
    // from a worker's "done" to a read of what it wrote, so a "done" sent
    // before the writes landed shows too (it rarely did at 300 and 1,000);
    // 10,000 reaches windows 3,000 does not (docs/race-finder.md).
    sim.faults.write_backpressure_cycles = sim.faults.write_backpressure_cycles.max(pick(rng, &[0, 1000, 3000, 10000]));
}

/// One region of device memory the model follows.
struct Region {
    buf: Buffer,
    name: String,
    /// Expected bytes and, per byte, the op that wrote it (`None`: never written).
    bytes: Vec<u8>,
    writer: Vec<Option<u32>>,
    /// Queue that last touched it, for cross-queue ordering.
    last_queue: Option<u8>,
    /// Host writes allowed (kernel result slots are written by kernels only).
    host_writes: bool,
}

struct Model {
    regions: Vec<Region>,
    ops: Vec<String>,
    /// Per worker (col, row): index of its result-slot region.
    result_slot: Vec<((u8, u8), usize)>,
    /// Per worker: index of its packed region.
    packed: Vec<((u8, u8), usize)>,
    packed_addr: u32,
    result_addr: u32,
}

impl Model {
    fn describe_writer(&self, region: usize, at: usize) -> String {
        match self.regions[region].writer.get(at).copied().flatten() {
            Some(op) => format!("op #{op}: {}", self.ops[op as usize]),
            None => "nobody (never written)".into(),
        }
    }

    fn store(&mut self, region: usize, offset: usize, data: &[u8], op: u32) {
        let r = &mut self.regions[region];
        r.bytes[offset..offset + data.len()].copy_from_slice(data);
        r.writer[offset..offset + data.len()].fill(Some(op));
    }
}

struct Run<'d> {
    dev: &'d mut Device,
    rng: Rng,
    m: Model,
    pending: Vec<Pending>,
    traces: Vec<(u8, Trace, Vec<TraceEffect>)>,
}

/// A read in flight and what the model expected when it was enqueued.
struct Pending {
    read: PendingRead,
    region: usize,
    offset: u32,
    len: u32,
    expected: Vec<u8>,
    writers: Vec<Option<u32>>,
}

/// What replaying a trace does to memory.
#[derive(Clone)]
enum TraceEffect {
    Store { region: usize, offset: usize, data: Vec<u8> },
    Kernel { cores: Vec<usize>, value: u32 },
}

pub fn run(iterations: u32, seed: u64, dev: &mut Device) -> Result<(), Failure> {
    run_with(iterations, seed, dev, &mut |_| {})
}

/// [`run`], calling `enqueued(n)` after its n-th operation (of
/// `iterations` x [`OPS_PER_ITERATION`]): where a restart campaign holds a
/// run for its planned kill.
pub fn run_with(iterations: u32, seed: u64, dev: &mut Device, enqueued: &mut dyn FnMut(u32)) -> Result<(), Failure> {
    let mut rng = Rng::new(seed ^ STREAM);
    let m = layout(dev, &mut rng)?;
    let mut r = Run { dev, rng, m, pending: Vec::new(), traces: Vec::new() };
    // Half the seeds open with a producer on one queue and its consumer on
    // the other, before either queue has completed an event.
    if r.rng.upto(1) == 0 {
        r.launch()?;
    }
    let ops = iterations.saturating_mul(OPS_PER_ITERATION);
    for op in 1..=ops {
        r.step()?;
        enqueued(op);
    }
    while !r.pending.is_empty() {
        r.complete_one()?;
    }
    for q in 0..r.dev.num_cqs() {
        r.dev.cq(q)?.finish()?;
    }
    // Final sweep: every region read back once.
    for region in 0..r.m.regions.len() {
        r.read(region, 0, r.m.regions[region].buf.size, true)?;
    }
    Ok(())
}

/// Allocates the regions: a packed region and a result slot on every
/// worker (the same L1 address on each), a few L1 buffers, a few DRAM
/// buffers with drawn page sizes.
fn layout(dev: &mut Device, rng: &mut Rng) -> Result<Model, Failure> {
    let (cols, rows) = (dev.chip().cols(), dev.chip().rows());
    let mut regions = Vec::new();
    let mut packed = Vec::new();
    let mut result_slot = Vec::new();
    let packed_size = 256;
    let (mut packed_addr, mut result_addr) = (0, 0);
    for row in 0..rows {
        for col in 0..cols {
            let p = dev.alloc_l1(col, row, packed_size)?;
            let s = dev.alloc_l1(col, row, 16)?;
            if let (Placement::L1 { addr: pa, .. }, Placement::L1 { addr: sa, .. }) = (p.placement, s.placement) {
                (packed_addr, result_addr) = (pa, sa);
            }
            packed.push(((col, row), regions.len()));
            regions.push(region(p, format!("packed region of worker ({col},{row})"), true));
            result_slot.push(((col, row), regions.len()));
            regions.push(region(s, format!("kernel result slot of worker ({col},{row})"), false));
        }
    }
    for i in 0..4 {
        let (col, row) = (rng.upto(cols as u64 - 1) as u8, rng.upto(rows as u64 - 1) as u8);
        let size = (1 + rng.upto(8191)) as u32;
        let b = dev.alloc_l1(col, row, size)?;
        regions.push(region(b, format!("L1 buffer {i} ({size} bytes) on worker ({col},{row})"), true));
    }
    let (issue, completion) = (dev.config().issue_size, dev.config().completion_size);
    // A page must fit one chunk (half the issue queue, and half the
    // double-buffered chunk area, less headers) and one completion record.
    let chunk = (issue / 2).min(MAX_CHUNK).saturating_sub(128);
    let max_page = chunk.min(completion.saturating_sub(64));
    // Page sizes are powers of two from 64 bytes to the largest the queues
    // allow (32 KiB with a 1 MiB issue queue and a 256 KiB completion
    // queue): half the time that largest, else log-uniform. A buffer has 1 to 16 pages up to
    // `MAX_DRAM_BUFFER` bytes: small pages cross ring pages and chunks
    // often, large ones keep a page's relay and NOC writes in flight while
    // the next page is read.
    let largest = (6..31).take_while(|&k| 1u32 << k <= max_page).last().unwrap_or(6);
    for i in 0..3 {
        let page = if rng.upto(1) == 0 { 1u32 << largest } else { 1 << (6 + rng.upto(largest - 6)) };
        let most = (MAX_DRAM_BUFFER / page).clamp(1, 16);
        let size =
            page * (1 + rng.upto(most as u64 - 1) as u32) - if rng.upto(1) == 0 { 0 } else { 16 * rng.upto(3) as u32 };
        let b = dev.alloc_dram(size, page)?;
        regions.push(region(b, format!("DRAM buffer {i} ({size} bytes, {page}-byte pages)"), true));
    }
    Ok(Model { regions, ops: Vec::new(), result_slot, packed, packed_addr, result_addr })
}

fn region(buf: Buffer, name: String, host_writes: bool) -> Region {
    let n = buf.size as usize;
    Region { buf, name, bytes: vec![0; n], writer: vec![None; n], last_queue: None, host_writes }
}

impl Run<'_> {
    fn log(&mut self, what: String) -> u32 {
        self.m.ops.push(what);
        self.m.ops.len() as u32 - 1
    }

    /// Orders queue `q` after every other queue's last access to `regions`.
    fn order(&mut self, q: u8, regions: &[usize]) -> Result<(), Failure> {
        let others: Vec<u8> = {
            let mut o: Vec<u8> =
                regions.iter().filter_map(|&r| self.m.regions[r].last_queue).filter(|&p| p != q).collect();
            o.sort();
            o.dedup();
            o
        };
        for p in others {
            let ev = self.dev.cq(p)?.record_event()?;
            self.dev.cq(q)?.wait_for_event(ev)?;
            self.log(format!("CQ{q} waits for event {} of CQ{p}", ev.id));
            for r in &mut self.m.regions {
                if r.last_queue == Some(p) {
                    r.last_queue = Some(q);
                }
            }
        }
        for &r in regions {
            self.m.regions[r].last_queue = Some(q);
        }
        Ok(())
    }

    fn queue(&mut self) -> u8 {
        self.rng.upto(self.dev.num_cqs() as u64 - 1) as u8
    }

    /// `n` bytes of the op's own stream: not periodic, so bytes of one page
    /// (or ring page, or line) landing in another's place show.
    fn data(&mut self, n: usize, op: u32) -> Vec<u8> {
        let mut bytes = Rng::new(self.rng.next_u64() ^ op as u64);
        let mut out = Vec::with_capacity(n.next_multiple_of(8));
        while out.len() < n {
            out.extend_from_slice(&bytes.next_u64().to_le_bytes());
        }
        out.truncate(n);
        out
    }

    /// A length in 1..=max, often small, sometimes exactly a ring page less a few 16-byte lines.
    fn length(&mut self, max: u32, step: u32) -> u32 {
        let max = max.max(step);
        let raw = match self.rng.upto(3) {
            0 => 1 + self.rng.upto(255) as u32,
            1 => {
                let page = self.dev.config().ring_page_size;
                page.saturating_sub(16 * self.rng.upto(8) as u32).max(1)
            }
            _ => 1 + self.rng.upto(max as u64 - 1) as u32,
        };
        (raw.min(max) / step).max(1) * step
    }

    fn step(&mut self) -> Result<(), Failure> {
        match self.rng.upto(99) {
            0..=19 => self.write_l1(),
            20..=31 => self.write_dram(),
            32..=39 => self.write_packed(),
            40..=59 => {
                let region = self.rng.upto(self.m.regions.len() as u64 - 1) as usize;
                let (offset, len) = self.read_range(region);
                let now = self.rng.upto(2) != 0;
                self.read(region, offset, len, now)
            }
            60..=71 => self.launch(),
            72..=77 => self.trace(),
            78..=81 => {
                let q = self.queue();
                let cycles = self.rng.upto(3000) as u32;
                self.dev.cq(q)?.delay(cycles)?;
                self.log(format!("CQ{q} delay {cycles}"));
                Ok(())
            }
            82..=89 => {
                let (p, q) = (self.queue(), self.queue());
                let ev = self.dev.cq(p)?.record_event()?;
                if p != q {
                    self.dev.cq(q)?.wait_for_event(ev)?;
                }
                self.log(format!("CQ{p} event {} waited by CQ{q}", ev.id));
                if self.rng.upto(3) == 0 {
                    self.dev.event_synchronize(ev)?;
                }
                Ok(())
            }
            90..=94 => self.complete_one(),
            _ => {
                let q = self.queue();
                self.dev.cq(q)?.finish()?;
                self.log(format!("CQ{q} finish"));
                Ok(())
            }
        }
    }

    fn host_writable(&mut self, dram: bool) -> Option<usize> {
        let candidates: Vec<usize> = (0..self.m.regions.len())
            .filter(|&i| {
                let r = &self.m.regions[i];
                r.host_writes && matches!(r.buf.placement, Placement::Dram { .. }) == dram
            })
            .collect();
        (!candidates.is_empty()).then(|| pick(&mut self.rng, &candidates))
    }

    fn write_l1(&mut self) -> Result<(), Failure> {
        let Some(region) = self.host_writable(false) else { return Ok(()) };
        let size = self.m.regions[region].buf.size;
        let offset = 4 * self.rng.upto((size as u64 - 1) / 4) as u32;
        let len = self.length(size - offset, 4).min(size - offset);
        let q = self.queue();
        self.order(q, &[region])?;
        let op = self
            .log(format!("CQ{q} inline write of {len} bytes at offset {offset} of {}", self.m.regions[region].name));
        let data = self.data(len as usize, op);
        let buf = self.m.regions[region].buf;
        self.dev.cq(q)?.write_buffer(&buf, offset, &data)?;
        self.m.store(region, offset as usize, &data, op);
        Ok(())
    }

    fn write_dram(&mut self) -> Result<(), Failure> {
        let Some(region) = self.host_writable(true) else { return Ok(()) };
        let buf = self.m.regions[region].buf;
        let Placement::Dram { page_size, .. } = buf.placement else { return Ok(()) };
        let pages = buf.size.div_ceil(page_size);
        let start = self.rng.upto(pages as u64 - 1) as u32;
        let count = 1 + self.rng.upto((pages - start - 1) as u64) as u32;
        let offset = start * page_size;
        let len = (count * page_size).min(buf.size - offset);
        let q = self.queue();
        self.order(q, &[region])?;
        let op = self.log(format!(
            "CQ{q} paged write of {len} bytes (pages {start}..{}) of {}",
            start + count,
            self.m.regions[region].name
        ));
        let data = self.data(len as usize, op);
        self.dev.cq(q)?.write_buffer(&buf, offset, &data)?;
        self.m.store(region, offset as usize, &data, op);
        Ok(())
    }

    fn write_packed(&mut self) -> Result<(), Failure> {
        let n = 1 + self.rng.upto(7) as usize;
        let mut cores: Vec<usize> = (0..n).map(|_| self.rng.upto(self.m.packed.len() as u64 - 1) as usize).collect();
        cores.sort();
        cores.dedup();
        let size = self.m.regions[self.m.packed[0].1].buf.size;
        let offset = 16 * self.rng.upto((size / 16 - 1) as u64) as u32;
        let shared = self.rng.upto(1) == 0;
        // The whole command must fit one chunk of half the issue queue: each
        // block gets an equal share of what the headers and sub-commands
        // leave, in whole L1-aligned units.
        let chunk = self.dev.config().issue_size as usize / 2;
        let headers = cqlab_abi::size::write_packed(cores.len(), 0, shared);
        let room = cqlab_abi::size::relay_inline_room(chunk).saturating_sub(headers);
        let blocks = if shared { 1 } else { cores.len() };
        let per_core_budget = (room / blocks / L1_ALIGNMENT * L1_ALIGNMENT) as u32;
        let len = self.length((size - offset).min(per_core_budget), 4).min(size - offset).min(per_core_budget);
        if len == 0 {
            return Ok(());
        }
        let regions: Vec<usize> = cores.iter().map(|&c| self.m.packed[c].1).collect();
        let coords: Vec<(u8, u8)> = cores.iter().map(|&c| self.m.packed[c].0).collect();
        let q = self.queue();
        self.order(q, &regions)?;
        let op = self.log(format!(
            "CQ{q} packed write ({}) of {len} bytes at offset {offset} to workers {coords:?}",
            if shared { "shared data" } else { "per-core data" }
        ));
        let data = self.data(len as usize * if shared { 1 } else { cores.len() }, op);
        let addr = self.m.packed_addr + offset;
        let packed = if shared { PackedData::Shared(&data) } else { PackedData::PerCore(&data) };
        self.dev.cq(q)?.write_packed(addr, &coords, packed)?;
        for (i, &r) in regions.iter().enumerate() {
            let piece = if shared { &data[..] } else { &data[i * len as usize..(i + 1) * len as usize] };
            self.m.store(r, offset as usize, piece, op);
        }
        Ok(())
    }

    fn read_range(&mut self, region: usize) -> (u32, u32) {
        let buf = self.m.regions[region].buf;
        match buf.placement {
            Placement::Dram { page_size, .. } => {
                let pages = buf.size.div_ceil(page_size);
                let offset = page_size * self.rng.upto(pages as u64 - 1) as u32;
                (offset, self.length(buf.size - offset, 1).min(buf.size - offset))
            }
            Placement::L1 { .. } => {
                let offset = 4 * self.rng.upto((buf.size as u64 - 1) / 4) as u32;
                (offset, self.length(buf.size - offset, 4).min(buf.size - offset))
            }
        }
    }

    /// Reads `len` bytes at `offset` of a region now or later, checking them
    /// against the model as it is now.
    fn read(&mut self, region: usize, offset: u32, len: u32, now: bool) -> Result<(), Failure> {
        let q = self.queue();
        self.read_on(q, region, offset, len, now)
    }

    fn read_on(&mut self, q: u8, region: usize, offset: u32, len: u32, now: bool) -> Result<(), Failure> {
        self.order(q, &[region])?;
        let buf = self.m.regions[region].buf;
        let pending = self.dev.cq(q)?.enqueue_read(&buf, offset, len)?;
        let (o, l) = (offset as usize, len as usize);
        let r = &self.m.regions[region];
        let expected = r.bytes[o..o + l].to_vec();
        let writers = r.writer[o..o + l].to_vec();
        let what = format!("CQ{q} read of {len} bytes at offset {offset} of {}", r.name);
        self.log(what);
        self.pending.push(Pending { read: pending, region, offset, len, expected, writers });
        if now {
            let last = self.pending.len() - 1;
            self.complete(last)
        } else {
            Ok(())
        }
    }

    fn complete_one(&mut self) -> Result<(), Failure> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // Oldest first: a queue's reads complete in order.
        self.complete(0)
    }

    fn complete(&mut self, i: usize) -> Result<(), Failure> {
        let Pending { read: pending, region, offset, len, expected, writers } = self.pending.remove(i);
        let mut found = self.dev.complete_read(&pending)?;
        found.truncate(len as usize);
        // Bytes no command wrote are whatever was there: not compared.
        let masked: Vec<u8> =
            expected.iter().zip(&writers).zip(&found).map(|((&e, w), &f)| if w.is_some() { e } else { f }).collect();
        let name = &self.m.regions[region].name;
        if let Some(d) = first_difference(&masked, &found, |at| self.m.describe_writer(region, offset as usize + at)) {
            return Err(Failure::Check {
                check: "read-back differs",
                detail: format!("CQ{} read of {len} bytes at offset {offset} of {name}: {d}", pending.cq),
            });
        }
        Ok(())
    }

    /// Launches the spin kernel on a rectangle; each core stores `value` in
    /// its result slot after spinning.
    fn launch(&mut self) -> Result<(), Failure> {
        let (cores, range) = self.core_rect();
        let q = self.queue();
        let slots: Vec<usize> = cores.iter().map(|&c| self.m.result_slot[c].1).collect();
        self.order(q, &slots)?;
        let value = self.rng.next_u64() as u32;
        let spin = if self.rng.upto(3) == 0 { 20_000 } else { self.rng.upto(4000) as u32 };
        let op = self.log(format!("CQ{q} launch on {range:?}: spin {spin} cycles, then store {value:#x}"));
        self.dev.cq(q)?.launch(range, &[spin, self.m.result_addr, value])?;
        for &s in &slots {
            self.m.store(s, 0, &value.to_le_bytes(), op);
        }
        // Consume a result at once, as programs do: from this queue, or from
        // another one (which first waits for an event of this one).
        if self.rng.upto(1) == 0 {
            let slot = slots[self.rng.upto(slots.len() as u64 - 1) as usize];
            self.read(slot, 0, 4, true)?;
        }
        Ok(())
    }

    fn core_rect(&mut self) -> (Vec<usize>, CoreRange) {
        let (cols, rows) = (self.dev.chip().cols(), self.dev.chip().rows());
        let c0 = self.rng.upto(cols as u64 - 1) as u8;
        let r0 = self.rng.upto(rows as u64 - 1) as u8;
        let c1 = c0 + self.rng.upto((cols - 1 - c0).min(3) as u64) as u8;
        let r1 = r0 + self.rng.upto((rows - 1 - r0).min(3) as u64) as u8;
        let mut cores = Vec::new();
        for (i, &((c, r), _)) in self.m.result_slot.iter().enumerate() {
            if (c0..=c1).contains(&c) && (r0..=r1).contains(&r) {
                cores.push(i);
            }
        }
        (cores, CoreRange::new((c0, r0), (c1, r1)))
    }

    /// Captures a new trace (a launch and an L1 write) or replays an old one.
    fn trace(&mut self) -> Result<(), Failure> {
        if !self.traces.is_empty() && self.rng.upto(1) == 0 {
            let i = self.rng.upto(self.traces.len() as u64 - 1) as usize;
            let (q, trace, effects) = self.traces[i].clone();
            let regions: Vec<usize> = effects
                .iter()
                .flat_map(|e| match e {
                    TraceEffect::Store { region, .. } => vec![*region],
                    TraceEffect::Kernel { cores, .. } => cores.iter().map(|&c| self.m.result_slot[c].1).collect(),
                })
                .collect();
            self.order(q, &regions)?;
            let op = self.log(format!("CQ{q} replays trace {i}"));
            self.dev.cq(q)?.execute_trace(&trace)?;
            for e in effects {
                match e {
                    TraceEffect::Store { region, offset, data } => self.m.store(region, offset, &data, op),
                    TraceEffect::Kernel { cores, value } => {
                        for c in cores {
                            let slot = self.m.result_slot[c].1;
                            self.m.store(slot, 0, &value.to_le_bytes(), op);
                        }
                    }
                }
            }
            return Ok(());
        }
        // Traces are stored in 1024-byte DRAM pages, and a page must fit a chunk.
        if self.dev.config().issue_size < 2048 {
            return Ok(());
        }
        let q = self.queue();
        let (cores, range) = self.core_rect();
        let value = self.rng.next_u64() as u32;
        let spin = self.rng.upto(2000) as u32;
        let Some(region) = self.host_writable(false) else { return Ok(()) };
        let size = self.m.regions[region].buf.size;
        let offset = 4 * self.rng.upto((size as u64 - 1) / 4) as u32;
        let len = self.length((size - offset).min(TRACE_AREA.size / 4), 4).min(size - offset);
        let data = self.data(len as usize, self.m.ops.len() as u32);
        let buf = self.m.regions[region].buf;
        let trace = {
            let mut cq = self.dev.cq(q)?;
            cq.begin_trace()?;
            cq.launch(range, &[spin, self.m.result_addr, value])?;
            cq.write_buffer(&buf, offset, &data)?;
            cq.end_trace()?
        };
        let effects =
            vec![TraceEffect::Kernel { cores, value }, TraceEffect::Store { region, offset: offset as usize, data }];
        self.log(format!(
            "CQ{q} captures trace {}: launch on {range:?} storing {value:#x}, write of {len} bytes at offset {offset} of {}",
            self.traces.len(),
            self.m.regions[region].name
        ));
        self.traces.push((q, trace, effects));
        Ok(())
    }
}
