//! Random program streams: many kernels (more builds than a queue has text
//! slots), random rectangles, unique and common args of random sizes (so
//! the kernel-config ring wraps at random points), traces captured and
//! replayed in between, on one or two queues. Every `spin` stores a value
//! of its own at an address of its own; at the end every core must hold,
//! at each address, the value of the last program that wrote it there.
//! Nothing in the stream is chosen to hit a known case: the test is for
//! the residency, ring-reuse and replay bugs nobody thought of.

use cqlab_abi::memory_map::USER;
use cqlab_abi::noc;
use cqlab_driver::{Buffer, CoreRange, Device, KernelImage, Placement, Program};
use cqlab_sim::rng::Rng;
use cqlab_tests::booted;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Result words each queue's programs store into, per core.
const WORDS: u32 = 48;

/// Where queue `q`'s result word `w` lies in a worker's L1.
fn result_addr(q: u8, w: u32) -> u32 {
    USER.base + 4 * (q as u32 * WORDS + w)
}

/// Expected final words: (core, address) -> value.
type Expected = BTreeMap<((u8, u8), u32), u32>;

/// A store a program makes when it runs: (core, address, value).
type Store = ((u8, u8), u32, u32);

struct Stream {
    rng: Rng,
    spins: Vec<Arc<KernelImage>>,
    noops: Vec<Arc<KernelImage>>,
}

impl Stream {
    fn pick(&mut self, n: usize) -> usize {
        self.rng.upto(n as u64 - 1) as usize
    }

    /// A rectangle of the 8x8 grid, mostly small, sometimes the whole grid.
    fn rect(&mut self) -> CoreRange {
        if self.rng.chance(0.1) {
            return CoreRange::new((0, 0), (7, 7));
        }
        let (c, r) = (self.pick(8) as u8, self.pick(8) as u8);
        let (w, h) = (self.pick(4) as u8, self.pick(4) as u8);
        CoreRange::new((c, r), ((c + w).min(7), (r + h).min(7)))
    }

    fn words(&mut self, max: usize) -> Vec<u32> {
        (0..self.pick(max + 1)).map(|_| self.rng.next_u64() as u32).collect()
    }

    /// One program for queue `q` and the stores it makes when it runs.
    fn program(&mut self, q: u8) -> (Program, Vec<Store>) {
        let mut program = Program::new();
        let mut stores = Vec::new();
        let mut taken: Vec<CoreRange> = Vec::new();
        for _ in 0..1 + self.pick(3) {
            let range = self.rect();
            let overlaps = |o: &CoreRange| {
                o.start.0 <= range.end.0
                    && range.start.0 <= o.end.0
                    && o.start.1 <= range.end.1
                    && range.start.1 <= o.end.1
            };
            if taken.iter().any(overlaps) {
                continue;
            }
            taken.push(range);
            let cores: Vec<(u8, u8)> = (range.start.1..=range.end.1)
                .flat_map(|r| (range.start.0..=range.end.0).map(move |c| (c, r)))
                .collect();
            if self.rng.chance(0.3) {
                let n = self.pick(self.noops.len());
                let image = self.noops[n].clone();
                let k = program.add_kernel(image, &[range]).unwrap();
                program.set_common_args(k, &self.words(32)).unwrap();
                if self.rng.chance(0.5) {
                    for &core in &cores {
                        program.set_unique_args(k, core, &self.words(16)).unwrap();
                    }
                }
                continue;
            }
            let n = self.pick(self.spins.len());
            let image = self.spins[n].clone();
            let k = program.add_kernel(image, &[range]).unwrap();
            let cycles = self.pick(300) as u32;
            let addr = result_addr(q, self.pick(WORDS as usize) as u32);
            // `spin` takes [cycles, addr, value] from its common args when
            // it has any, else from its unique args; padding words after
            // them make the arg blocks of random size.
            if self.rng.chance(0.4) {
                let value = self.rng.next_u64() as u32;
                let mut common = vec![cycles, addr, value];
                common.extend(self.words(64));
                program.set_common_args(k, &common).unwrap();
                stores.extend(cores.iter().map(|&core| (core, addr, value)));
            } else {
                let padding = self.pick(96);
                for &core in &cores {
                    let value = self.rng.next_u64() as u32;
                    let mut unique = vec![cycles, addr, value];
                    unique.extend((0..padding).map(|i| i as u32 ^ value));
                    program.set_unique_args(k, core, &unique).unwrap();
                    stores.push((core, addr, value));
                }
            }
        }
        (program, stores)
    }
}

fn apply(expected: &mut Expected, stores: &[Store]) {
    for &(core, addr, value) in stores {
        expected.insert((core, addr), value);
    }
}

fn check(dev: &mut Device, expected: &Expected, what: &str) {
    let mut by_core: BTreeMap<(u8, u8), Vec<(u32, u32)>> = BTreeMap::new();
    for (&(core, addr), &value) in expected {
        by_core.entry(core).or_default().push((addr, value));
    }
    for (core, words) in by_core {
        let buf =
            Buffer { placement: Placement::L1 { core: noc::worker(core.0, core.1), addr: USER.base }, size: 8 * WORDS };
        let got = dev.cq(0).unwrap().read_buffer(&buf, 0, buf.size).unwrap();
        for (addr, value) in words {
            let at = (addr - USER.base) as usize;
            let found = u32::from_le_bytes(got[at..at + 4].try_into().unwrap());
            assert_eq!(found, value, "{what}: core {core:?}, word at {addr:#x}");
        }
    }
}

/// `programs` random programs spread over `cqs` queues, with traces.
fn run_stream(seed: u64, cqs: u8, programs: u32) {
    run_stream_on(booted(seed, |cfg| cfg.num_cqs = cqs), seed, cqs, programs);
}

fn run_stream_on(mut dev: Device, seed: u64, cqs: u8, programs: u32) {
    let (spin, noop) = (dev.load_kernel("spin").unwrap(), dev.load_kernel("noop").unwrap());
    // More builds than text slots: uploads evict kernels that ran recently.
    let variants = cqlab_abi::program::KERNEL_SLOTS as usize / 2 + 3;
    let mut s = Stream {
        rng: Rng::new(seed ^ 0x5eed),
        spins: (0..variants).map(|i| Arc::new(spin.renamed(&format!("spin#{i}")))).collect(),
        noops: (0..3).map(|i| Arc::new(noop.renamed(&format!("noop#{i}")))).collect(),
    };
    let mut expected = Expected::new();
    let mut i = 0;
    while i < programs {
        let q = s.pick(cqs as usize) as u8;
        if s.rng.chance(0.1) {
            // A trace of a few programs, replayed one to three times; a
            // capture runs nothing by itself.
            let n = 1 + s.pick(6);
            let mut cq = dev.cq(q).unwrap();
            cq.begin_trace().unwrap();
            let mut stores = Vec::new();
            for _ in 0..n {
                let (p, st) = s.program(q);
                cq.enqueue_program(&p).unwrap();
                stores.push(st);
            }
            let trace = cq.end_trace().unwrap();
            for _ in 0..1 + s.pick(3) {
                dev.cq(q).unwrap().execute_trace(&trace).unwrap();
                stores.iter().for_each(|st| apply(&mut expected, st));
            }
            i += n as u32;
            continue;
        }
        let (p, stores) = s.program(q);
        dev.cq(q).unwrap().enqueue_program(&p).unwrap_or_else(|e| panic!("seed {seed}: program {i}: {e}"));
        apply(&mut expected, &stores);
        i += 1;
        if s.rng.chance(0.02) {
            for q in 0..cqs {
                dev.cq(q).unwrap().finish().unwrap();
            }
            check(&mut dev, &expected, &format!("seed {seed}, after program {i}"));
        }
    }
    for q in 0..cqs {
        dev.cq(q).unwrap().finish().unwrap();
    }
    check(&mut dev, &expected, &format!("seed {seed}, at the end"));
}

#[test]
fn random_program_streams_on_one_queue_leave_every_store_of_the_last_writer() {
    for seed in [1, 2] {
        run_stream(seed, 1, 250);
    }
}

#[test]
fn random_program_streams_on_two_queues_leave_every_store_of_the_last_writer() {
    for seed in [3, 4] {
        run_stream(seed, 2, 250);
    }
}

/// The same under timing faults (core stalls, NOC jitter, late doorbells)
/// with a small issue queue and three fetch slots, so rings wrap and the
/// host waits for space in the middle of programs and traces.
#[test]
fn random_program_streams_under_timing_faults_and_tight_queues_leave_every_store_of_the_last_writer() {
    for (seed, cqs) in [(5, 1), (6, 2)] {
        let faults = cqlab_sim::config::Faults {
            core_stall_prob: 0.05,
            core_stall_cycles: 700,
            noc_jitter_cycles: 300,
            host_write_delay_cycles: 3000,
            ..Default::default()
        };
        let sim = cqlab_sim::config::SimConfig { seed, faults, ..Default::default() };
        let cfg = cqlab_driver::DeviceConfig {
            firmware_dir: cqlab_tests::firmware_dir(),
            num_cqs: cqs,
            issue_size: 96 << 10,
            fetch_entries: 3,
            ..Default::default()
        };
        let mut dev = Device::embedded(sim, cfg).unwrap();
        dev.boot().unwrap_or_else(|e| panic!("seed {seed}: boot: {e}"));
        run_stream_on(dev, seed, cqs, 250);
    }
}
