//! Random program streams: many kernels (more builds than a queue has text
//! slots), random rectangles, unique and common args of random sizes (so
//! the kernel-config ring wraps at random points), traces captured and
//! replayed in between, on every queue of the device, mixed with DRAM
//! buffer writes and deferred read-backs (relayed by the prefetcher while
//! programs dispatch), `copy` programs whose kernels write DRAM over the NOC
//! and whose output is read back right behind them, bursts of long
//! kernels that fill a launch ring, and events one queue waits for on
//! another. Every `spin` stores a value of its own at an
//! address of its own (XOR a digest of its padding args, so a word of its
//! args relayed wrong shows too); at
//! checkpoints and at the end every core must hold, at each address, the
//! value of the last program that wrote it there, and every read-back the
//! bytes last written. Nothing in a stream is chosen to hit a
//! known case: it is for the residency, ring-reuse and replay bugs nobody
//! thought of. Run by the tests, `cqlab race --workload programs` and
//! `cqlab stress restart --workload programs`.

use cqlab_abi::memory_map::{KERNEL_SCRATCH_MIN, MAX_CHUNK, USER};
use cqlab_abi::program::spin_stored_value;
use cqlab_driver::{
    Buffer, CoreRange, Device, DriverError, KernelHandle, KernelImage, PendingRead, Placement, Program,
};
use cqlab_sim::rng::Rng;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Result words each queue's programs store into, per core.
const WORDS: u32 = 48;

/// Where queue `q`'s result word `w` lies in a worker's L1.
fn result_addr(q: u8, w: u32) -> u32 {
    USER.base + 4 * (q as u32 * WORDS + w)
}

/// Why a stream failed.
#[derive(Debug)]
pub enum StreamFailure {
    /// The driver gave up (timeout, device error, ...), or refused a call.
    Driver(DriverError),
    /// A core's result word differs from the last store made to it.
    Mismatch {
        /// Where in the stream it was found ("after program 120", "at the end").
        when: String,
        core: (u8, u8),
        addr: u32,
        expected: u32,
        found: u32,
    },
    /// A read-back of a queue's DRAM buffer differs from what was written.
    ReadBack { when: String, queue: u8, what: &'static str, page_size: u32, offset: usize, expected: u8, found: u8 },
}

impl From<DriverError> for StreamFailure {
    fn from(e: DriverError) -> Self {
        StreamFailure::Driver(e)
    }
}

impl std::fmt::Display for StreamFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamFailure::Driver(e) => write!(f, "{e}"),
            StreamFailure::Mismatch { when, core, addr, expected, found } => write!(
                f,
                "{when}: worker {core:?} holds {found:#010x} at {addr:#x}, the last program that stored there stored {expected:#010x}"
            ),
            StreamFailure::ReadBack { when, queue, what, page_size, offset, expected, found } => write!(
                f,
                "{when}: CQ{queue}'s read-back of its {what} ({page_size}-byte pages) has {found:#04x} at byte {offset}, {expected:#04x} was written"
            ),
        }
    }
}

/// Expected final words: (core, address) -> value.
type Expected = BTreeMap<((u8, u8), u32), u32>;

/// A store a program makes when it runs: (core, address, value).
type Store = ((u8, u8), u32, u32);

struct Stream {
    rng: Rng,
    spins: Vec<Arc<KernelImage>>,
    noops: Vec<Arc<KernelImage>>,
    /// Bytes of unique args one kernel group may take: a quarter of a
    /// queue's part of the kernel-config ring, so that a program of three
    /// groups fits it on any grid (every core of a range gets the range's
    /// whole block).
    unique_budget: usize,
}

impl Stream {
    fn pick(&mut self, n: usize) -> usize {
        self.rng.upto(n as u64 - 1) as usize
    }

    /// A rectangle of the grid, mostly small, sometimes the whole grid.
    fn rect(&mut self, cols: u8, rows: u8) -> CoreRange {
        if self.rng.chance(0.1) {
            return CoreRange::new((0, 0), (cols - 1, rows - 1));
        }
        let (c, r) = (self.pick(cols as usize) as u8, self.pick(rows as usize) as u8);
        let (w, h) = (self.pick(4) as u8, self.pick(4) as u8);
        CoreRange::new((c, r), ((c + w).min(cols - 1), (r + h).min(rows - 1)))
    }

    /// A program of one `spin` on the whole grid whose unique args take
    /// `bytes` (the relay of a long trace made of these crosses its
    /// replay windows in a few large pieces).
    fn wide_program(&mut self, q: u8, grid: (u8, u8), bytes: usize) -> Result<(Program, Vec<Store>), DriverError> {
        let range = CoreRange::new((0, 0), (grid.0 - 1, grid.1 - 1));
        let cores: Vec<(u8, u8)> = range.cores().collect();
        let which = self.pick(self.spins.len());
        let mut program = Program::new();
        let k = program.add_kernel(self.spins[which].clone(), &[range])?;
        let (cycles, addr) = (self.pick(300) as u32, result_addr(q, self.pick(WORDS as usize) as u32));
        let words = (bytes / 4 / cores.len()).clamp(3, cqlab_abi::program::MAX_UNIQUE_ARGS as usize);
        let mut stores = Vec::new();
        self.spin_unique_args(&mut program, k, &cores, [cycles, addr], words - 3, &mut stores)?;
        Ok((program, stores))
    }

    /// A `spin` on one core, with its three args common: a chunk of a few
    /// hundred bytes (a replay runs it from its inline head and then reads
    /// its first window at once).
    fn small_program(&mut self, q: u8, grid: (u8, u8)) -> Result<(Program, Vec<Store>), DriverError> {
        let core = (self.pick(grid.0 as usize) as u8, self.pick(grid.1 as usize) as u8);
        let (addr, value) = (result_addr(q, self.pick(WORDS as usize) as u32), self.rng.next_u64() as u32);
        let mut program = Program::new();
        let which = self.pick(self.spins.len());
        let k = program.add_kernel(self.spins[which].clone(), &[CoreRange::single(core.0, core.1)])?;
        program.set_common_args(k, &[self.pick(300) as u32, addr, value])?;
        Ok((program, vec![(core, addr, value)]))
    }

    /// Unique args for `spin` kernel `k` on `cores`: `[cycles, addr]`, a
    /// value of each core's own, then `padding` words; each core's store
    /// goes to `stores`.
    fn spin_unique_args(
        &mut self,
        program: &mut Program,
        k: KernelHandle,
        cores: &[(u8, u8)],
        [cycles, addr]: [u32; 2],
        padding: usize,
        stores: &mut Vec<Store>,
    ) -> Result<(), DriverError> {
        for &core in cores {
            let value = self.rng.next_u64() as u32;
            let mut unique = vec![cycles, addr, value];
            unique.extend((0..padding).map(|i| i as u32 ^ value));
            program.set_unique_args(k, core, &unique)?;
            stores.push((core, addr, spin_stored_value(&unique).expect("three args")));
        }
        Ok(())
    }

    /// A burst of long `spin`s on one rectangle, more than its launch ring
    /// holds: the dispatcher gets a whole ring ahead of the cores and must
    /// wait for ring entries (each program stores to a word of its own, so
    /// a message overwritten before it started shows).
    fn burst(&mut self, q: u8, grid: (u8, u8)) -> Result<Vec<(Program, Vec<Store>)>, DriverError> {
        let range = self.rect(grid.0, grid.1);
        let cores: Vec<(u8, u8)> = range.cores().collect();
        let n = cqlab_abi::program::LAUNCH_RING_ENTRIES + 2 + self.pick(8) as u32;
        let which = self.pick(self.spins.len());
        let spin = self.spins[which].clone();
        let first = self.pick(WORDS as usize) as u32;
        (0..n)
            .map(|k| {
                let addr = result_addr(q, (first + k) % WORDS);
                let value = self.rng.next_u64() as u32;
                let mut program = Program::new();
                let kernel = program.add_kernel(spin.clone(), &[range])?;
                program.set_common_args(kernel, &[2000 + self.pick(2000) as u32, addr, value])?;
                Ok((program, cores.iter().map(|&core| (core, addr, value)).collect()))
            })
            .collect()
    }

    fn words(&mut self, max: usize) -> Vec<u32> {
        (0..self.pick(max + 1)).map(|_| self.rng.next_u64() as u32).collect()
    }

    /// One program for queue `q` and the stores it makes when it runs.
    fn program(&mut self, q: u8, grid: (u8, u8)) -> Result<(Program, Vec<Store>), DriverError> {
        let mut program = Program::new();
        let mut stores = Vec::new();
        let mut taken: Vec<CoreRange> = Vec::new();
        for _ in 0..1 + self.pick(3) {
            let range = self.rect(grid.0, grid.1);
            if taken.iter().any(|o| o.overlaps(&range)) {
                continue;
            }
            taken.push(range);
            let cores: Vec<(u8, u8)> = range.cores().collect();
            if self.rng.chance(0.3) {
                let n = self.pick(self.noops.len());
                let k = program.add_kernel(self.noops[n].clone(), &[range])?;
                program.set_common_args(k, &self.words(32))?;
                if self.rng.chance(0.5) {
                    for &core in &cores {
                        program.set_unique_args(k, core, &self.words(16))?;
                    }
                }
                continue;
            }
            let n = self.pick(self.spins.len());
            let k = program.add_kernel(self.spins[n].clone(), &[range])?;
            let cycles = self.pick(300) as u32;
            let addr = result_addr(q, self.pick(WORDS as usize) as u32);
            // `spin` takes [cycles, addr, value] from its common args when
            // it has any, else from its unique args; padding words after
            // them make the arg blocks of random size.
            if self.rng.chance(0.4) {
                let value = self.rng.next_u64() as u32;
                let mut common = vec![cycles, addr, value];
                common.extend(self.words(64));
                program.set_common_args(k, &common)?;
                let stored = spin_stored_value(&common).expect("three args");
                stores.extend(cores.iter().map(|&core| (core, addr, stored)));
            } else {
                let most = (self.unique_budget / 4 / cores.len()).saturating_sub(3).min(95);
                let padding = self.pick(most + 1);
                self.spin_unique_args(&mut program, k, &cores, [cycles, addr], padding, &mut stores)?;
            }
        }
        Ok((program, stores))
    }
}

fn apply(expected: &mut Expected, stores: &[Store]) {
    for &(core, addr, value) in stores {
        expected.insert((core, addr), value);
    }
}

/// Reads every core's result words back (on CQ0, after every queue has
/// finished) and compares them with the last stores.
fn check(dev: &mut Device, expected: &Expected, when: &str) -> Result<(), StreamFailure> {
    let mut by_core: BTreeMap<(u8, u8), Vec<(u32, u32)>> = BTreeMap::new();
    for (&(core, addr), &value) in expected {
        by_core.entry(core).or_default().push((addr, value));
    }
    let queues = dev.num_cqs() as u32;
    for (core, words) in by_core {
        let tile = dev.chip().worker(core.0, core.1).expect("a store's core is on the grid");
        let at = Placement::L1 { core: tile, addr: USER.base };
        let buf = Buffer { placement: at, size: 4 * WORDS * queues };
        let got = dev.cq(0)?.read_buffer(&buf, 0, buf.size)?;
        for (addr, expected) in words {
            let at = (addr - USER.base) as usize;
            let found = u32::from_le_bytes(got[at..at + 4].try_into().expect("a word"));
            if found != expected {
                return Err(StreamFailure::Mismatch { when: when.into(), core, addr, expected, found });
            }
        }
    }
    Ok(())
}

fn finish_all(dev: &mut Device) -> Result<(), DriverError> {
    for q in 0..dev.num_cqs() {
        dev.cq(q)?.finish()?;
    }
    Ok(())
}

/// Each queue's DRAM buffer and its read-backs in flight (what each must
/// return), oldest first.
struct Side {
    buffers: Vec<Buffer>,
    /// Per queue, the source and destination of its copy programs.
    copies: Vec<(Buffer, Buffer)>,
    pending: Vec<Pending>,
}

/// A read-back in flight and what it must return.
struct Pending {
    queue: u8,
    read: PendingRead,
    data: Vec<u8>,
    /// For the report: the buffer read and its page size.
    what: &'static str,
    page_size: u32,
}

impl Side {
    /// One buffer per queue: 1 to 8 pages of a power of two from 64 bytes
    /// to the largest a chunk and a completion record hold.
    fn new(dev: &mut Device, rng: &mut Rng) -> Result<Self, DriverError> {
        let (issue, completion) = (dev.config().issue_size, dev.config().completion_size);
        let max_page = (issue / 2).min(MAX_CHUNK).saturating_sub(128).min(completion.saturating_sub(64));
        let largest = (6..31).take_while(|&k| 1u32 << k <= max_page).last().unwrap_or(6);
        let mut buffers = Vec::new();
        for _ in 0..dev.num_cqs() {
            let page = 1u32 << (6 + rng.upto(largest - 6));
            buffers.push(dev.alloc_dram(page * (1 + rng.upto(7) as u32), page)?);
        }
        // `copy` moves a page through the kernel scratch.
        let copy_largest = (6..31).take_while(|&k| 1u32 << k <= max_page.min(KERNEL_SCRATCH_MIN)).last().unwrap_or(6);
        let mut copies = Vec::new();
        for _ in 0..dev.num_cqs() {
            // Half the time the largest page: a kernel's last write then
            // takes longest to land after it has issued it.
            let page = if rng.chance(0.5) { 1u32 << copy_largest } else { 1u32 << (6 + rng.upto(copy_largest - 6)) };
            let size = page * (1 + rng.upto(15) as u32);
            copies.push((dev.alloc_dram(size, page)?, dev.alloc_dram(size, page)?));
        }
        Ok(Self { buffers, copies, pending: Vec::new() })
    }

    /// Writes fresh bytes into queue `q`'s copy source, copies them with a
    /// `copy` program on the grid's corner `cols` x `rows`, and enqueues the
    /// read-back of the destination right behind it: the kernels' NOC
    /// writes must have landed by the time the program counts as done.
    fn copy(
        &mut self,
        dev: &mut Device,
        rng: &mut Rng,
        copy: &Arc<KernelImage>,
        q: u8,
        corner: (u8, u8),
    ) -> Result<(), DriverError> {
        let (src, dst) = self.copies[q as usize];
        let (Placement::Dram { base: from, page_size, banks }, Placement::Dram { base: to, .. }) =
            (src.placement, dst.placement)
        else {
            unreachable!("copy buffers are in DRAM")
        };
        let data: Vec<u8> = (0..src.size).map(|_| rng.next_u64() as u8).collect();
        let (cols, rows) = corner;
        let mut program = Program::new();
        let k = program.add_kernel(copy.clone(), &[CoreRange::new((0, 0), (cols - 1, rows - 1))])?;
        let cores = cols as u32 * rows as u32;
        program.set_common_args(k, &[from, to, page_size, src.pages(), banks, cols as u32, cores])?;
        let mut cq = dev.cq(q)?;
        cq.write_buffer(&src, 0, &data)?;
        cq.enqueue_program(&program)?;
        let read = cq.enqueue_read(&dst, 0, dst.size)?;
        self.pending.push(Pending { queue: q, read, data, what: "copy destination", page_size });
        Ok(())
    }

    /// Writes fresh bytes into queue `q`'s buffer and enqueues their read-back.
    fn write_and_read(&mut self, dev: &mut Device, rng: &mut Rng, q: u8) -> Result<(), DriverError> {
        let buf = self.buffers[q as usize];
        let data: Vec<u8> = (0..buf.size).map(|_| rng.next_u64() as u8).collect();
        let mut cq = dev.cq(q)?;
        cq.write_buffer(&buf, 0, &data)?;
        let read = cq.enqueue_read(&buf, 0, buf.size)?;
        let page_size = match buf.placement {
            Placement::Dram { page_size, .. } => page_size,
            Placement::L1 { .. } => 0,
        };
        self.pending.push(Pending { queue: q, read, data, what: "DRAM buffer", page_size });
        Ok(())
    }

    /// Collects the oldest read-backs (all of them with `all`) and compares.
    fn collect(&mut self, dev: &mut Device, all: bool, when: &str) -> Result<(), StreamFailure> {
        let n = if all { self.pending.len() } else { self.pending.len().min(1) };
        for Pending { queue, read, data, what, page_size } in self.pending.drain(..n).collect::<Vec<_>>() {
            let got = dev.complete_read(&read)?;
            if let Some(offset) = (0..data.len()).find(|&i| got.get(i) != Some(&data[i])) {
                let (expected, found) = (data[offset], got.get(offset).copied().unwrap_or(0));
                return Err(StreamFailure::ReadBack {
                    when: when.into(),
                    queue,
                    what,
                    page_size,
                    offset,
                    expected,
                    found,
                });
            }
        }
        Ok(())
    }
}

/// The kernels a stream loads (what a campaign checks before its first run).
pub const KERNELS: [&str; 3] = ["spin", "noop", "copy"];

/// Runs `programs` random programs of stream `seed` over every queue of
/// `dev` (booted), with traces, and checks the stores at random
/// checkpoints and at the end.
pub fn run(dev: &mut Device, seed: u64, programs: u32) -> Result<(), StreamFailure> {
    run_with(dev, seed, programs, &mut |_| {})
}

/// [`run`], calling `enqueued(n)` each time the stream has enqueued its
/// first `n` programs (n grows by one, or by a trace's or burst's size):
/// where a restart campaign holds a run for its planned kill.
pub fn run_with(
    dev: &mut Device,
    seed: u64,
    programs: u32,
    enqueued: &mut dyn FnMut(u32),
) -> Result<(), StreamFailure> {
    let [spin, noop, copy] = KERNELS;
    let (spin, noop) = (dev.load_kernel(spin)?, dev.load_kernel(noop)?);
    let copy = Arc::new(dev.load_kernel(copy)?);
    let (cqs, grid) = (dev.num_cqs(), (dev.chip().cols(), dev.chip().rows()));
    // More builds than text slots: uploads evict kernels that ran recently.
    let variants = cqlab_abi::program::KERNEL_SLOTS as usize / 2 + 3;
    let mut s = Stream {
        rng: Rng::new(seed ^ 0x5eed),
        spins: (0..variants).map(|i| Arc::new(spin.renamed(&format!("spin#{i}")))).collect(),
        noops: (0..3).map(|i| Arc::new(noop.renamed(&format!("noop#{i}")))).collect(),
        unique_budget: cqlab_abi::program::CONFIG_RING_SIZE as usize / cqs as usize / 4,
    };
    let mut expected = Expected::new();
    let mut side = Side::new(dev, &mut s.rng)?;
    // Slow dispatch has no traces: its streams are programs and side traffic.
    let traces = !dev.config().slow_dispatch;
    let mut i = 0;
    while i < programs {
        'turn: {
            let q = s.pick(cqs as usize) as u8;
            if s.rng.chance(0.04) {
                side.write_and_read(dev, &mut s.rng, q)?;
            }
            if s.rng.chance(0.06) {
                let corner = (1 + s.pick(grid.0.min(4) as usize) as u8, 1 + s.pick(grid.1.min(4) as usize) as u8);
                side.copy(dev, &mut s.rng, &copy, q, corner)?;
            }
            if s.rng.chance(0.1) {
                side.collect(dev, false, &format!("after program {i}"))?;
            }
            if cqs > 1 && s.rng.chance(0.04) {
                // The other queue's next work waits for this one's so far.
                let event = dev.cq(q)?.record_event()?;
                dev.cq((q + 1) % cqs)?.wait_for_event(event)?;
            }
            if s.rng.chance(0.1) && traces {
                // A trace of a few programs, replayed one to three times; a
                // capture runs nothing by itself.
                // A third of them are long and wide: programs of 32 KiB of
                // args (two CQs) over more replay windows than the trace area
                // holds, so windows are refilled while few, large relay pieces
                // from them are still leaving (the window-reuse wait). Half of
                // those start with a small program, so a replay reads its
                // first window right after the head's first relay, while the
                // replay before may still be relaying from that window's slot.
                let wide = s.rng.chance(0.3);
                let n = if wide { 10 + s.pick(8) } else { 1 + s.pick(6) };
                let small_first = wide && s.rng.chance(0.5);
                let wide_bytes = 2 * s.unique_budget;
                let mut cq = dev.cq(q)?;
                cq.begin_trace()?;
                let mut stores = Vec::new();
                for j in 0..n {
                    let (p, st) = if small_first && j == 0 {
                        s.small_program(q, grid)?
                    } else if wide {
                        s.wide_program(q, grid, wide_bytes)?
                    } else {
                        s.program(q, grid)?
                    };
                    cq.enqueue_program(&p)?;
                    stores.push(st);
                }
                let trace = cq.end_trace()?;
                for _ in 0..1 + s.pick(3) {
                    dev.cq(q)?.execute_trace(&trace)?;
                    stores.iter().for_each(|st| apply(&mut expected, st));
                }
                i += n as u32;
                break 'turn;
            }
            if s.rng.chance(0.02) {
                let burst = s.burst(q, grid)?;
                i += burst.len() as u32;
                for (p, stores) in burst {
                    dev.cq(q)?.enqueue_program(&p)?;
                    apply(&mut expected, &stores);
                }
                break 'turn;
            }
            let (p, stores) = s.program(q, grid)?;
            dev.cq(q)?.enqueue_program(&p)?;
            apply(&mut expected, &stores);
            i += 1;
            if s.rng.chance(0.02) {
                finish_all(dev)?;
                check(dev, &expected, &format!("after program {i}"))?;
            }
        }
        enqueued(i);
    }
    finish_all(dev)?;
    side.collect(dev, true, "at the end")?;
    check(dev, &expected, "at the end")
}
