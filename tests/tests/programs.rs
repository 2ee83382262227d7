//! Programs through the command queue: kernels on core ranges with unique
//! and common args, alternating kernels on overlapping ranges, a full
//! launch-message ring, traces and slow dispatch. Every test runs on a
//! Wormhole and a Blackhole (`on_both_chips!`), on the test chip's compute
//! grid.

use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::memory_map::{MAX_CHUNK, USER};
use cqlab_abi::noc::Coord;
use cqlab_abi::program::{
    spin_stored_value, CONFIG_RING, CONFIG_RING_SIZE, KERNEL_SLOTS, LAUNCH_RING_ENTRIES, MAX_COMMON_ARGS,
    MAX_UNIQUE_ARGS,
};
use cqlab_abi::trace::TraceKind;
use cqlab_driver::geometry::TopologyError;
use cqlab_driver::{Buffer, CommandQueue, CoreRange, Device, DriverError, KernelImage, Placement, Program};
use cqlab_tests::{booted, booted_with_faults, on_both_chips, TestChip};
use std::sync::Arc;

fn kernel(dev: &Device, name: &str) -> Arc<KernelImage> {
    Arc::new(dev.load_kernel(name).unwrap_or_else(|e| panic!("kernel {name}: {e}")))
}

/// `chip`'s board unharvested, a device of it booted with one queue at
/// `seed`, and its `spin` kernel.
fn full_board_with_spin(chip: &TestChip, seed: u64) -> (TestChip, Device, Arc<KernelImage>) {
    let full = TestChip::full(chip.board);
    let dev = booted(&full, seed, |c| c.num_cqs = 1);
    let spin = kernel(&dev, "spin");
    (full, dev, spin)
}

/// A device of `chip` booted at `seed`, its `spin` kernel and the 2x2
/// range at the grid's corner.
fn corner_with_spin(chip: &TestChip, seed: u64) -> (Device, Arc<KernelImage>, CoreRange) {
    let dev = booted(chip, seed, |_| {});
    let spin = kernel(&dev, "spin");
    (dev, spin, CoreRange::new((0, 0), (1, 1)))
}

fn dram_base(b: &Buffer) -> u32 {
    match b.placement {
        Placement::Dram { base, .. } => base,
        Placement::L1 { .. } => unreachable!(),
    }
}

/// A `spin` program on `range`: every core spins `cycles`, then stores
/// `value(core)` at L1 `addr` (unique args `[cycles, addr, value]`).
fn spin_program(
    spin: &Arc<KernelImage>,
    range: CoreRange,
    cycles: u32,
    addr: u32,
    value: impl Fn((u8, u8)) -> u32,
) -> Program {
    let mut p = Program::new();
    let k = p.add_kernel(spin.clone(), &[range]).unwrap();
    for core in range.cores() {
        p.set_unique_args(k, core, &[cycles, addr, value(core)]).unwrap();
    }
    p
}

/// `kernel` on every core of `range`, each core with the unique args
/// `args(core)`.
fn every_core_program(kernel: &Arc<KernelImage>, range: CoreRange, args: impl Fn((u8, u8)) -> Vec<u32>) -> Program {
    let mut p = Program::new();
    let k = p.add_kernel(kernel.clone(), &[range]).unwrap();
    for core in range.cores() {
        p.set_unique_args(k, core, &args(core)).unwrap();
    }
    p
}

/// The tile of logical core `core` (translated coordinates).
fn tile(dev: &Device, (c, r): (u8, u8)) -> Coord {
    dev.chip().worker(c, r).unwrap_or_else(|| panic!("core ({c},{r}) is not on the {} grid", dev.chip().grid()))
}

/// `size` bytes of `core`'s L1 at `addr`, as a buffer to read back.
fn l1(dev: &Device, core: (u8, u8), addr: u32, size: u32) -> Buffer {
    Buffer { placement: Placement::L1 { core: tile(dev, core), addr }, size }
}

/// `size` bytes of `core`'s L1 at `addr`, read through CQ0.
fn read_l1(dev: &mut Device, core: (u8, u8), addr: u32, size: u32) -> Vec<u8> {
    let buf = l1(dev, core, addr, size);
    dev.cq(0).unwrap().read_buffer(&buf, 0, size).unwrap()
}

fn read_word(dev: &mut Device, core: (u8, u8), addr: u32) -> u32 {
    u32::from_le_bytes(read_l1(dev, core, addr, 4).try_into().unwrap())
}

/// The compute grid's last core.
fn last_core(dev: &Device) -> (u8, u8) {
    (dev.chip().cols() - 1, dev.chip().rows() - 1)
}

/// Four cores spread over the grid: its corners (first, last column of
/// the first row, last) and its middle.
fn spread_cores(dev: &Device) -> [(u8, u8); 4] {
    let (c, r) = last_core(dev);
    [(0, 0), (c, 0), (c.div_ceil(2), r.div_ceil(2)), (c, r)]
}

/// The words a core's args need for a block of about `bytes` over `cores`
/// cores (at least `min`, at most `MAX_UNIQUE_ARGS`; a multiple of four, so
/// each core's args start 16-byte aligned in the block).
fn words_for_block(bytes: u32, cores: u32, min: u32) -> u32 {
    (bytes / 4).div_ceil(cores).next_multiple_of(4).clamp(min, MAX_UNIQUE_ARGS)
}

/// `spin` on each of the five processors of every core of `grid`, kernel
/// `i` (`Processor::ALL` order) with the unique args `args(i, core)`.
fn five_kernel_program(spin: &Arc<KernelImage>, grid: CoreRange, args: impl Fn(u32, (u8, u8)) -> Vec<u32>) -> Program {
    five_kernel_program_with_common(spin, grid, args, |_| Vec::new())
}

/// `five_kernel_program` with kernel `i`'s common args `common(i)` (none
/// set where empty).
fn five_kernel_program_with_common(
    spin: &Arc<KernelImage>,
    grid: CoreRange,
    args: impl Fn(u32, (u8, u8)) -> Vec<u32>,
    common: impl Fn(u32) -> Vec<u32>,
) -> Program {
    let mut p = Program::new();
    for (i, &processor) in Processor::ALL.iter().enumerate() {
        let k = p.add_kernel_on(spin.clone(), &[grid], processor).unwrap();
        for core in grid.cores() {
            p.set_unique_args(k, core, &args(i as u32, core)).unwrap();
        }
        let common = common(i as u32);
        if !common.is_empty() {
            p.set_common_args(k, &common).unwrap();
        }
    }
    p
}

/// Every kernel of programs 0 and 1 of `five_kernel_program` ran with its
/// own args on the spread cores: `spin` stored the value `args(j, i, core)`
/// names at the word they name.
fn assert_five_kernels_ran(dev: &mut Device, args: impl Fn(u32, u32, (u8, u8)) -> Vec<u32>, what: &str) {
    for core in spread_cores(dev) {
        for j in 0..2 {
            for (i, processor) in Processor::ALL.iter().enumerate() {
                let a = args(j, i as u32, core);
                let got = read_word(dev, core, a[1]);
                assert_eq!(Some(got), spin_stored_value(&a), "{what}: program {j}, {processor} on {core:?}");
            }
        }
    }
}

/// Enqueues `first`, then `second` captured in a trace and replayed, and
/// waits for both.
fn enqueue_then_replay(cq: &mut CommandQueue<'_>, first: &Program, second: &Program) {
    cq.enqueue_program(first).unwrap();
    cq.begin_trace().unwrap();
    cq.enqueue_program(second).unwrap();
    let trace = cq.end_trace().unwrap();
    cq.execute_trace(&trace).unwrap();
    cq.finish().unwrap();
}

on_both_chips! {
    /// `copy` on a rectangle of up to 4x4 cores and `spin` on one that
    /// overlaps it, alternating for a thousand programs.
    fn spin_and_copy_alternate_on_overlapping_ranges_for_a_thousand_programs(chip) {
        let seed = 41;
        let mut dev = booted(chip, seed, |_| {});
        let (spin, copy) = (kernel(&dev, "spin"), kernel(&dev, "copy"));
        let (page, pages, banks) = (256u32, 16u32, dev.chip().dram_banks());
        let src = dev.alloc_dram(page * pages, page).unwrap();
        let dsts: Vec<Buffer> = (0..4).map(|_| dev.alloc_dram(page * pages, page).unwrap()).collect();
        let data: Vec<u8> = (0..page * pages).map(|i| (i * 29 % 253) as u8).collect();
        dev.cq(0).unwrap().write_buffer(&src, 0, &data).unwrap();
        // copy on (0,0)..(w-1,h-1): core r*w+c copies pages r*w+c, +w*h, ...;
        // spin on a rectangle from the copy range's middle on.
        let (cols, rows) = (dev.chip().cols(), dev.chip().rows());
        let (w, h) = (cols.min(4), rows.min(4));
        let copy_range = CoreRange::new((0, 0), (w - 1, h - 1));
        let spin_range = CoreRange::new((w / 2, h / 2), ((w / 2 + 3).min(cols - 1), (h / 2 + 3).min(rows - 1)));
        assert!(copy_range.overlaps(&spin_range) && spin_range != copy_range, "{copy_range} and {spin_range}");
        let spins = 500u32;
        let mut cq = dev.cq(0).unwrap();
        for i in 0..2 * spins {
            let j = i / 2;
            if i % 2 == 0 {
                let value = move |(c, r): (u8, u8)| j << 16 | (c as u32) << 8 | r as u32;
                cq.enqueue_program(&spin_program(&spin, spin_range, 50, USER.base + 4 * j, value)).unwrap();
            } else {
                let mut p = Program::new();
                let k = p.add_kernel(copy.clone(), &[copy_range]).unwrap();
                let dst = &dsts[j as usize % dsts.len()];
                let args = [dram_base(&src), dram_base(dst), page, pages, banks, w as u32, copy_range.count()];
                p.set_common_args(k, &args).unwrap();
                cq.enqueue_program(&p).unwrap();
            }
        }
        cq.finish().unwrap();
        for (i, dst) in dsts.iter().enumerate() {
            let got = dev.cq(0).unwrap().read_buffer(dst, 0, page * pages).unwrap();
            assert_eq!(got, data, "{} seed {seed}: copy {i}", chip.name());
        }
        let (s, e) = (spin_range.start, spin_range.end);
        for core in [s, e, (e.0, s.1), (w - 1, h - 1)] {
            let buf = l1(&dev, core, USER.base, 4 * spins);
            let got = dev.cq(0).unwrap().read_buffer(&buf, 0, 4 * spins).unwrap();
            for j in 0..spins {
                let word = u32::from_le_bytes(got[4 * j as usize..4 * j as usize + 4].try_into().unwrap());
                let want = j << 16 | (core.0 as u32) << 8 | core.1 as u32;
                assert_eq!(word, want, "{} seed {seed}: spin {j} on {core:?}", chip.name());
            }
        }
    }

    fn a_full_launch_ring_stalls_the_dispatcher_and_loses_no_message(chip) {
        let seed = 42;
        let mut dev = booted(chip, seed, |_| {});
        let spin = kernel(&dev, "spin");
        let core = (1u8, 1u8);
        let programs = 3 * LAUNCH_RING_ENTRIES;
        let mut cq = dev.cq(0).unwrap();
        for i in 0..programs {
            // Long kernels: the dispatcher gets a whole ring ahead of the core.
            let range = CoreRange::single(core.0, core.1);
            let p = spin_program(&spin, range, 4000, USER.base + 4 * i, move |_| 0x100 + i);
            cq.enqueue_program(&p).unwrap();
        }
        cq.finish().unwrap();
        // Every program ran with its own message (an overwritten, unstarted one
        // would leave its word unwritten or carry another program's args).
        for i in 0..programs {
            let got = read_word(&mut dev, core, USER.base + 4 * i);
            assert_eq!(got, 0x100 + i, "{} seed {seed}: program {i}", chip.name());
        }
        // The dispatcher did wait for ring entries: a worker-counter wait that
        // found fewer completions than it needed.
        let dispatcher = dev.chip().dispatcher(0);
        let trace = dev.read_trace(dispatcher).unwrap();
        let counter = cqlab_abi::dispatch::WaitFlags::WAIT_COUNTER.bits() as u32;
        let stalls = trace
            .records
            .windows(2)
            .filter(|w| TraceKind::from_u16(w[0].kind) == Some(TraceKind::WaitTarget) && w[0].arg0 == counter)
            .filter(|w| TraceKind::from_u16(w[1].kind) == Some(TraceKind::WaitBegin) && w[1].arg1 < w[1].arg0)
            .count();
        assert!(stalls > 0, "{} seed {seed}: the dispatcher never waited for a launch-ring entry", chip.name());
    }

    fn programs_replay_in_traces_with_their_args_and_kernels(chip) {
        let seed = 43;
        let mut dev = booted(chip, seed, |_| {});
        let (spin, noop) = (kernel(&dev, "spin"), kernel(&dev, "noop"));
        let grid = dev.chip().grid();
        let mut cq = dev.cq(0).unwrap();
        cq.begin_trace().unwrap();
        for i in 0..6u32 {
            if i % 3 == 2 {
                let mut p = Program::new();
                p.add_kernel(noop.clone(), &[grid]).unwrap();
                cq.enqueue_program(&p).unwrap();
            } else {
                let p = spin_program(&spin, CoreRange::new((0, 0), (1, 1)), 10, USER.base + 4 * i, move |(c, r)| {
                    i << 8 | (c as u32) << 4 | r as u32
                });
                cq.enqueue_program(&p).unwrap();
            }
        }
        let trace = cq.end_trace().unwrap();
        for _ in 0..3 {
            cq.execute_trace(&trace).unwrap();
        }
        // A program enqueued after the replays reuses what they left resident.
        let after = spin_program(&spin, CoreRange::single(1, 1), 10, USER.base + 64, |_| 0xabc);
        cq.enqueue_program(&after).unwrap();
        cq.finish().unwrap();
        for i in [0u32, 1, 3, 4] {
            for core in [(0, 0), (1, 1), (0, 1)] {
                let want = i << 8 | (core.0 as u32) << 4 | core.1 as u32;
                let got = read_word(&mut dev, core, USER.base + 4 * i);
                assert_eq!(got, want, "{} seed {seed}: program {i} on {core:?}", chip.name());
            }
        }
        assert_eq!(read_word(&mut dev, (1, 1), USER.base + 64), 0xabc, "{} seed {seed}", chip.name());
    }

    /// A compute kernel (one `spin` on the three TRISCs of each core, as
    /// tt-metal's) beside a BRISC kernel, for two launches: the three
    /// TRISCs read one set of args, the compute kernel's own (unique args
    /// at launch 0, common args at launch 1), and each kernel stores what
    /// its args name.
    fn a_compute_kernel_runs_on_the_three_triscs_with_one_set_of_args(chip) {
        let seed = 45;
        let (mut dev, spin, range) = corner_with_spin(chip, seed);
        let slot = |launch: u32, k: u32| USER.base + 4 * (2 * launch + k);
        let value = |launch: u32, k: u32, (c, r): (u8, u8)| launch << 16 | k << 8 | (c as u32) << 4 | r as u32;
        let mut cq = dev.cq(0).unwrap();
        for launch in 0..2u32 {
            let mut p = Program::new();
            let dm = p.add_kernel(spin.clone(), &[range]).unwrap();
            let compute = p.add_compute_kernel(spin.clone(), &[range]).unwrap();
            for (k, handle) in [dm, compute].into_iter().enumerate() {
                let k = k as u32;
                if launch == 1 && k == 1 {
                    p.set_common_args(handle, &[40, slot(launch, k), value(launch, k, (0, 0))]).unwrap();
                } else {
                    for core in range.cores() {
                        p.set_unique_args(handle, core, &[40, slot(launch, k), value(launch, k, core)]).unwrap();
                    }
                }
            }
            assert_eq!(p.kernels().len(), 2);
            cq.enqueue_program(&p).unwrap();
        }
        cq.finish().unwrap();
        for launch in 0..2u32 {
            for k in 0..2u32 {
                for core in range.cores() {
                    let want = value(launch, k, if launch == 1 && k == 1 { (0, 0) } else { core });
                    let got = read_word(&mut dev, core, slot(launch, k));
                    assert_eq!(got, want, "{} seed {seed}: launch {launch}, kernel {k} on {core:?}", chip.name());
                }
            }
        }
    }

    /// A kernel on each of the five processors of every core of a range, for
    /// two launches: BRISC, TRISC0 and TRISC2 with their own unique args,
    /// NCRISC and TRISC1 with their own common args. Every kernel runs and
    /// finds its own args (`spin` stores its third at its second), and the
    /// next launch starts all five again.
    fn the_five_processors_of_a_core_each_run_their_kernel_with_their_own_args(chip) {
        let seed = 44;
        let (mut dev, spin, range) = corner_with_spin(chip, seed);
        let slot = |launch: u32, i: u32| USER.base + 4 * (5 * launch + i);
        let unique = |launch: u32, i: u32, (c, r): (u8, u8)| launch << 16 | i << 8 | (c as u32) << 4 | r as u32;
        let common = |launch: u32, i: u32| 0xc000_0000 | launch << 16 | i << 8;
        let mut cq = dev.cq(0).unwrap();
        for launch in 0..2u32 {
            let mut p = Program::new();
            for (i, &processor) in Processor::ALL.iter().enumerate() {
                let i = i as u32;
                let k = p.add_kernel_on(spin.clone(), &[range], processor).unwrap();
                if i % 2 == 1 {
                    p.set_common_args(k, &[30 * i, slot(launch, i), common(launch, i)]).unwrap();
                } else {
                    for core in range.cores() {
                        p.set_unique_args(k, core, &[30 * i, slot(launch, i), unique(launch, i, core)]).unwrap();
                    }
                }
            }
            cq.enqueue_program(&p).unwrap();
        }
        cq.finish().unwrap();
        for launch in 0..2u32 {
            for (i, processor) in Processor::ALL.iter().enumerate() {
                let i = i as u32;
                for core in range.cores() {
                    let want = if i % 2 == 1 { common(launch, i) } else { unique(launch, i, core) };
                    let got = read_word(&mut dev, core, slot(launch, i));
                    assert_eq!(got, want, "{} seed {seed}: launch {launch}, {processor} on {core:?}", chip.name());
                }
            }
        }
    }

    /// 128 unique args per core on every core of the grid, program after
    /// program, with one and two queues (the kernel-config ring then holds
    /// a few such programs, so later programs reuse bytes of earlier ones
    /// and WAIT for them), enqueued and then replayed from a trace: every
    /// core's kernel finds its own args at its own offset (`spin` stores
    /// the third, XOR a digest of the rest, at the second), and the last
    /// program's whole block of cores x 128 words is intact in the
    /// kernel-config ring of the cores checked.
    fn a_hundred_and_twenty_eight_unique_args_per_core_arrive_intact_on_every_core(chip) {
        for cqs in [1u8, 2] {
            let seed = 48 + cqs as u64;
            let mut dev = booted(chip, seed, |c| c.num_cqs = cqs);
            let spin = kernel(&dev, "spin");
            let grid = dev.chip().grid();
            let args = |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
                let id = (c as u32) << 8 | r as u32;
                let mut a = vec![0, USER.base + 4 * j, j << 16 | id];
                a.extend((3..MAX_UNIQUE_ARGS / 2).map(|i| i.wrapping_mul(0x9e37_79b9) ^ j << 20 ^ id));
                a
            };
            let program = |j: u32| every_core_program(&spin, grid, |core| args(j, core));
            let n = 10u32;
            // The ring is lapped: later programs overwrite earlier ones' args.
            let block_bytes = grid.count() * MAX_UNIQUE_ARGS / 2 * 4;
            assert!(2 * n * block_bytes > CONFIG_RING_SIZE, "{block_bytes}-byte blocks do not lap the ring");
            let mut cq = dev.cq(0).unwrap();
            for j in 0..n {
                cq.enqueue_program(&program(j)).unwrap();
            }
            cq.begin_trace().unwrap();
            for j in n..2 * n {
                cq.enqueue_program(&program(j)).unwrap();
            }
            let trace = cq.end_trace().unwrap();
            cq.execute_trace(&trace).unwrap();
            cq.finish().unwrap();
            for core in grid.cores() {
                let got = read_l1(&mut dev, core, USER.base, 8 * n);
                for j in 0..2 * n {
                    let word = u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap());
                    let want = spin_stored_value(&args(j, core)).unwrap();
                    assert_eq!(word, want, "{} seed {seed}, {cqs} queues: program {j} on {core:?}", chip.name());
                }
            }
            let block: Vec<u8> =
                grid.cores().flat_map(|core| args(2 * n - 1, core)).flat_map(u32::to_le_bytes).collect();
            for core in spread_cores(&dev) {
                let buf = l1(&dev, core, CONFIG_RING, CONFIG_RING_SIZE);
                let ring = dev.cq(0).unwrap().read_buffer(&buf, 0, CONFIG_RING_SIZE).unwrap();
                assert!(
                    ring.windows(block.len()).step_by(16).any(|w| w == block),
                    "{} seed {seed}, {cqs} queues: the last program's args block is not intact on {core:?}",
                    chip.name()
                );
            }
        }
    }

    /// A trace longer than its inline head and than a trace window: its first
    /// programs run from the EXEC_BUF chunk, the rest from DRAM windows, and
    /// every program's result is there after each replay (cleared in between).
    fn a_long_trace_replays_from_its_inline_head_and_its_windows(chip) {
        let seed = 47;
        const PROGRAMS: u32 = 480;
        let mut dev = booted(chip, seed, |_| {});
        let spin = kernel(&dev, "spin");
        let range = CoreRange::new((0, 0), (1, 1));
        let value = |i: u32, (c, r): (u8, u8)| 0x5000_0000 | i << 8 | (c as u32) << 4 | r as u32;
        let mut cq = dev.cq(0).unwrap();
        cq.begin_trace().unwrap();
        for i in 0..PROGRAMS {
            let p = spin_program(&spin, range, 10, USER.base + 4 * i, move |core| value(i, core));
            cq.enqueue_program(&p).unwrap();
        }
        let trace = cq.end_trace().unwrap();
        let window = cqlab_abi::memory_map::TRACE_WINDOW;
        assert!(trace.bytes > window, "{} trace bytes: the replay goes past its head and first window", trace.bytes);
        for replay in 0..2 {
            for core in range.cores() {
                let buf = l1(&dev, core, USER.base, 4 * PROGRAMS);
                dev.cq(0).unwrap().write_buffer(&buf, 0, &vec![0; 4 * PROGRAMS as usize]).unwrap();
            }
            let mut cq = dev.cq(0).unwrap();
            cq.execute_trace(&trace).unwrap();
            cq.finish().unwrap();
            for core in range.cores() {
                let buf = l1(&dev, core, USER.base, 4 * PROGRAMS);
                let got = dev.cq(0).unwrap().read_buffer(&buf, 0, 4 * PROGRAMS).unwrap();
                for i in 0..PROGRAMS {
                    let word = u32::from_le_bytes(got[4 * i as usize..][..4].try_into().unwrap());
                    let want = value(i, core);
                    assert_eq!(word, want, "{} seed {seed}: replay {replay}, program {i} on {core:?}", chip.name());
                }
            }
        }
    }
}

on_both_chips! {
    /// A trace of wide programs, longer than the trace area, replayed three
    /// times back to back: each window slot is refilled while the few large
    /// relay pieces from its previous window may still be leaving (each
    /// program's args, about 32 KiB over the grid, cross windows in one or
    /// two pieces, and write back-pressure keeps them in the NOC interface
    /// longer), and what each program stored, and nothing else, is there at
    /// the end. The trace starts with a small program whose relay ends
    /// within the inline head, so a replay reads its first window right
    /// behind it, while the previous replay's last relays from that
    /// window's slot (its seventh window) may still be leaving. Without the
    /// firmware's wait for a window's relays before it is refilled (the
    /// mutant `prefetch-replay-window-reuse-before-sent`), or for the
    /// previous replay's relays before the first windows are read
    /// (`prefetch-replay-start-before-sent`), the dispatcher gets corrupted
    /// commands or a kernel spins on corrupted args (the first mutant: on
    /// both chips, seeds 1-4 and 51).
    fn a_trace_of_wide_programs_longer_than_the_trace_area_replays_intact_back_to_back(chip) {
        let seed = 51;
        // Back-pressure holds each relay piece in the NOC interface longer
        // (10,000 cycles: with 1,000 neither chip's NOC kept a piece long
        // enough for the mutant to show, on seeds 1-8 and 51); the kernels
        // spin 20 cycles, so one still running after 5M cycles is spinning
        // on corrupted args.
        let faults = cqlab_sim::config::Faults { write_backpressure_cycles: 10_000, ..Default::default() };
        let mut dev = booted_with_faults(chip, seed, faults, |cfg| cfg.kernel_timeout_cycles = Some(5_000_000));
        let spin = kernel(&dev, "spin");
        let grid = dev.chip().grid();
        let words = words_for_block(32 << 10, grid.count(), MAX_UNIQUE_ARGS / 2);
        let args = move |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
            let value = j << 16 | (c as u32) << 8 | r as u32 | 0x8000_0000;
            let mut a = vec![20, USER.base + 4 * j, value];
            a.extend((3..words).map(|i| i.wrapping_mul(0x9e37_79b9) ^ value));
            a
        };
        let mut small = Program::new();
        let k = small.add_kernel(spin.clone(), &[CoreRange::single(0, 0)]).unwrap();
        small.set_common_args(k, &[20]).unwrap();
        let capture = |dev: &mut Device, programs: u32| {
            let mut cq = dev.cq(0).unwrap();
            cq.begin_trace().unwrap();
            cq.enqueue_program(&small).unwrap();
            for j in 0..programs {
                cq.enqueue_program(&every_core_program(&spin, grid, |core| args(j, core))).unwrap();
            }
            cq.end_trace().unwrap()
        };
        // As many programs as put the trace's end in its seventh window
        // (the first window's slot again): estimated from two shorter
        // traces, then grown a program at a time (trace sizes are rounded).
        let (area, window) = (cqlab_abi::memory_map::TRACE_AREA.size, cqlab_abi::memory_map::TRACE_WINDOW);
        let (one, two) = (capture(&mut dev, 1).bytes, capture(&mut dev, 2).bytes);
        let mut programs = 1 + (2 * area - one).div_ceil(two - one);
        let mut trace = capture(&mut dev, programs);
        while trace.bytes <= 2 * area && programs < 64 {
            programs += 1;
            trace = capture(&mut dev, programs);
        }
        assert!(trace.bytes > 2 * area, "{} trace bytes: each window slot is refilled more than once", trace.bytes);
        let windows = trace.bytes.div_ceil(window);
        assert_eq!((windows - 1) % (area / window), 0, "{windows} windows: the last one is in the first one's slot");
        let mut cq = dev.cq(0).unwrap();
        for _ in 0..3 {
            cq.execute_trace(&trace).unwrap();
        }
        cq.finish().unwrap_or_else(|e| panic!("{} seed {seed}: {e}", chip.name()));
        // The stores, and the words just past them untouched.
        let stored = programs + 16;
        for core in grid.cores() {
            let got = read_l1(&mut dev, core, USER.base, 4 * stored);
            for j in 0..stored {
                let word = u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap());
                let want = if j < programs { spin_stored_value(&args(j, core)).unwrap() } else { 0 };
                assert_eq!(word, want, "{} seed {seed}: word {j} on {core:?}", chip.name());
            }
        }
    }

    /// A read-back enqueued right behind a `copy` program sees every byte its
    /// kernels wrote: a program counts as done only once its kernels' NOC
    /// writes have landed. Each core's last write is a whole 32 KiB page, held
    /// in its NOC interface longer by write back-pressure, and fresh source
    /// bytes each round show a read that came too early. Without the worker's
    /// wait for its kernel's writes (the mutant
    /// `worker-done-before-writes-landed`) the read-back differs.
    ///
    /// The back-pressure must outlast the path from the worker's "done" to
    /// the read of the destination, ~1,000-1,500 cycles on the calibrated
    /// chips: with up to 1,000 cycles the mutant failed 4 of seeds 1-20 on
    /// the Wormhole and none on the Blackhole; with 2,000, 3,000 or 5,000,
    /// all 20 on both (and the correct firmware none).
    fn a_read_back_right_behind_a_copy_sees_every_byte_its_kernels_wrote(chip) {
        let seed = 52;
        let faults = cqlab_sim::config::Faults { write_backpressure_cycles: 3000, ..Default::default() };
        let mut dev = booted_with_faults(chip, seed, faults, |_| {});
        let copy = kernel(&dev, "copy");
        let (page, pages, banks) = (32u32 << 10, 4u32, dev.chip().dram_banks());
        let (src, dst) = (dev.alloc_dram(page * pages, page).unwrap(), dev.alloc_dram(page * pages, page).unwrap());
        let mut program = Program::new();
        let k = program.add_kernel(copy.clone(), &[CoreRange::new((0, 0), (1, 1))]).unwrap();
        program.set_common_args(k, &[dram_base(&src), dram_base(&dst), page, pages, banks, 2, 4]).unwrap();
        for round in 0..8u32 {
            let data: Vec<u8> = (0..page * pages).map(|i| (i.wrapping_mul(31) ^ (round * 97)) as u8).collect();
            let mut cq = dev.cq(0).unwrap();
            cq.write_buffer(&src, 0, &data).unwrap();
            cq.enqueue_program(&program).unwrap();
            let read = cq.enqueue_read(&dst, 0, dst.size).unwrap();
            let got = dev.complete_read(&read).unwrap();
            let first = got.iter().zip(&data).position(|(a, b)| a != b);
            let name = chip.name();
            assert_eq!(first, None, "{name} seed {seed}: round {round}: the read-back differs from byte {first:?} on");
        }
    }

    /// A replay is correct whatever ran before it: captured while `spin` was
    /// resident, the trace still runs `spin` after other programs have taken
    /// every text slot of the queue on its cores (however a capture plans
    /// uploads, it must not trust residency a replay no longer finds).
    fn a_replay_after_its_resident_kernel_was_replaced_runs_that_kernel(chip) {
        let seed = 47;
        let mut dev = booted(chip, seed, |_| {});
        let (spin, noop) = (kernel(&dev, "spin"), kernel(&dev, "noop"));
        let range = CoreRange::new((0, 0), (1, 1));
        let cores: Vec<(u8, u8)> = range.cores().collect();
        let bufs: Vec<Buffer> = cores.iter().map(|&core| l1(&dev, core, USER.base + 128, 4)).collect();
        let addr = USER.base + 128;
        let value = |(c, r): (u8, u8)| 0x5a00 | (c as u32) << 4 | r as u32;
        // Every text slot there is (this queue owns a share of them), each
        // taken by a distinct build of `noop` on the whole grid.
        let grid = dev.chip().grid();
        let fillers: Vec<Program> = (0..KERNEL_SLOTS)
            .map(|i| {
                let mut p = Program::new();
                p.add_kernel(Arc::new(noop.renamed(&format!("noop#{i}"))), &[grid]).unwrap();
                p
            })
            .collect();
        let mut cq = dev.cq(0).unwrap();
        cq.enqueue_program(&spin_program(&spin, range, 10, addr, |_| 1)).unwrap();
        cq.begin_trace().unwrap();
        cq.enqueue_program(&spin_program(&spin, range, 10, addr, value)).unwrap();
        let trace = cq.end_trace().unwrap();
        cq.finish().unwrap();
        for round in 0..2 {
            for b in &bufs {
                cq.write_buffer(b, 0, &[0; 4]).unwrap();
            }
            for p in &fillers {
                cq.enqueue_program(p).unwrap();
            }
            cq.execute_trace(&trace).unwrap();
            cq.finish().unwrap();
            for (b, &core) in bufs.iter().zip(&cores) {
                let got = u32::from_le_bytes(cq.read_buffer(b, 0, 4).unwrap().try_into().unwrap());
                assert_eq!(
                    got,
                    value(core),
                    "{} seed {seed}: round {round}, replay after the slots were refilled, {core:?}",
                    chip.name()
                );
            }
        }
        // Back to back, with `spin` resident as the capture found it.
        for b in &bufs {
            cq.write_buffer(b, 0, &[0; 4]).unwrap();
        }
        for _ in 0..3 {
            cq.execute_trace(&trace).unwrap();
        }
        cq.finish().unwrap_or_else(|e| panic!("{} seed {seed}: {e}", chip.name()));
        for (b, &core) in bufs.iter().zip(&cores) {
            let got = u32::from_le_bytes(cq.read_buffer(b, 0, 4).unwrap().try_into().unwrap());
            assert_eq!(got, value(core), "{} seed {seed}: back-to-back replays, {core:?}", chip.name());
        }
    }

    fn slow_dispatch_runs_programs_with_unique_and_common_args(chip) {
        let seed = 44;
        let mut dev = booted(chip, seed, |c| c.slow_dispatch = true);
        let spin = kernel(&dev, "spin");
        // A 2x2 rectangle at the grid's right edge, and its last core.
        let (c, r) = last_core(&dev);
        let range = CoreRange::new((c - 1, 0), (c, 1));
        let mut cq = dev.cq(0).unwrap();
        for i in 0..10u32 {
            let p = spin_program(&spin, range, 20, USER.base + 4 * i, move |(c, r)| {
                i * 100 + c as u32 * 10 + r as u32
            });
            cq.enqueue_program(&p).unwrap();
        }
        // Common args: the same three words on every core.
        let mut p = Program::new();
        let k = p.add_kernel(spin.clone(), &[CoreRange::single(c, r)]).unwrap();
        p.set_common_args(k, &[5, USER.base + 100, 77]).unwrap();
        cq.enqueue_program(&p).unwrap();
        cq.finish().unwrap();
        for i in 0..10u32 {
            for core in [range.start, range.end] {
                let want = i * 100 + core.0 as u32 * 10 + core.1 as u32;
                let got = read_word(&mut dev, core, USER.base + 4 * i);
                assert_eq!(got, want, "{} seed {seed}: program {i} on {core:?}", chip.name());
            }
        }
        assert_eq!(read_word(&mut dev, (c, r), USER.base + 100), 77, "{} seed {seed}", chip.name());
    }

    fn programs_are_checked_before_they_reach_the_device(chip) {
        let mut dev = booted(chip, 45, |_| {});
        let spin = kernel(&dev, "spin");
        let cols = dev.chip().cols();
        let mut p = Program::new();
        p.add_kernel(spin.clone(), &[CoreRange::new((0, 0), (cols, 0))]).unwrap();
        let e = dev.cq(0).unwrap().enqueue_program(&p);
        assert!(matches!(e, Err(DriverError::Chip(TopologyError::OffGrid { .. }))), "range outside the grid: {e:?}");
        assert!(dev.cq(0).unwrap().enqueue_program(&Program::new()).is_err(), "no kernels");
        // Both queues launch programs, each from its own launch ring.
        let mut ok = Program::new();
        ok.add_kernel(spin, &[CoreRange::single(0, 0)]).unwrap();
        dev.cq(0).unwrap().enqueue_program(&ok).unwrap();
        dev.cq(1).unwrap().enqueue_program(&ok).unwrap();
        dev.cq(0).unwrap().finish().unwrap();
        dev.cq(1).unwrap().finish().unwrap();
    }

    /// A launch, a program, a packed write or an L1 buffer whose core range
    /// names a core the chip does not compute on (a core past the grid's
    /// last row or column: on these harvested test chips the lines there
    /// are harvested Tensix or the command-queue cores) is refused on the
    /// host with an error that says why the grid ends there (its size, the
    /// harvested lines, the command-queue lines), and nothing reaches the
    /// queue: not even the valid part of a program. A harvested tile named
    /// by its NOC0 coordinates is refused as harvested. The device then
    /// still runs a correct program.
    fn a_launch_on_a_harvested_or_off_grid_core_is_refused_and_enqueues_nothing(chip) {
        let seed = 46;
        let mut dev = booted(chip, seed, |c| c.worker_kernel = "spin".into());
        let (spin, noop) = (kernel(&dev, "spin"), kernel(&dev, "noop"));
        let (cols, rows) = (dev.chip().cols(), dev.chip().rows());
        let h = chip.harvesting();
        let (axis, lines) = match dev.chip().arch() {
            cqlab_abi::arch::Arch::Wormhole => ("rows", h.tensix_rows()),
            cqlab_abi::arch::Arch::Blackhole => ("columns", h.tensix_cols()),
        };
        assert!(!lines.is_empty(), "{}: the test chip is harvested", chip.name());
        let lines = lines.iter().map(u8::to_string).collect::<Vec<_>>().join(", ");
        let says_why = |e: &DriverError| {
            let text = e.to_string();
            assert!(matches!(e, DriverError::Chip(TopologyError::OffGrid { .. })), "{}: {e:?}", chip.name());
            assert!(
                text.contains(&format!("harvested NOC0 {axis} {lines}"))
                    && text.contains(&format!("{cols}x{rows}"))
                    && text.contains("command-queue"),
                "{}: the refusal names the grid and the harvested {axis}: {text}",
                chip.name()
            );
        };
        let before = (dev.queue_pointers(0).unwrap(), dev.next_launch_seq());
        let past_row = CoreRange::new((0, rows - 1), (0, rows));
        let past_col = CoreRange::new((cols - 1, 0), (cols, 0));
        for range in [past_row, past_col, CoreRange::single(cols, rows), CoreRange::new((0, 0), (cols, rows))] {
            says_why(&dev.cq(0).unwrap().launch(range, &[10, USER.base, 1]).unwrap_err());
            // One kernel on the grid and one off it (where they do not
            // overlap): the whole program is refused.
            let mut p = Program::new();
            if !range.contains((0, 0)) {
                let k = p.add_kernel(spin.clone(), &[CoreRange::single(0, 0)]).unwrap();
                p.set_common_args(k, &[10, USER.base, 1]).unwrap();
            }
            p.add_kernel(noop.clone(), &[range]).unwrap();
            says_why(&dev.cq(0).unwrap().enqueue_program(&p).unwrap_err());
            says_why(&dev.alloc_l1(range.end.0, range.end.1, 16).unwrap_err());
        }
        let shared = cqlab_driver::PackedData::Shared(&[1; 16]);
        let packed = dev.cq(0).unwrap().write_packed(USER.base, &[(0, 0), (cols, 0)], shared);
        says_why(&packed.unwrap_err());
        // A harvested tile by its NOC0 coordinates.
        let harvested = dev
            .chip()
            .layout()
            .tiles()
            .iter()
            .find(|t| t.kind == cqlab_abi::soc::TileKind::Harvested(cqlab_abi::soc::HarvestedUnit::Tensix))
            .map(|t| t.noc0)
            .expect("a harvested Tensix tile");
        let e = dev.logical_core(harvested).unwrap_err().to_string();
        assert!(e.contains("harvested Tensix") && e.contains(&harvested.to_string()), "{}: {e}", chip.name());
        // Nothing was enqueued or launched.
        let after = (dev.queue_pointers(0).unwrap(), dev.next_launch_seq());
        assert_eq!(after, before, "{}: a refused launch left something in the queue", chip.name());
        // The device runs a correct program afterwards, on the grid's last core.
        let (c, r) = last_core(&dev);
        let value = 0x4e0 | seed as u32;
        dev.cq(0).unwrap().launch(CoreRange::single(c, r), &[10, USER.base, value]).unwrap();
        dev.cq(0).unwrap().finish().unwrap();
        assert_eq!(read_word(&mut dev, (c, r), USER.base), value, "{} seed {seed}", chip.name());
    }

    /// `Device::event_cycle` gives device time: two events around a kernel of
    /// 20,000 cycles are at least that far apart, neither is later than the
    /// device clock, and an event not yet completed has no cycle.
    fn event_cycles_are_device_time_and_bracket_a_kernel(chip) {
        let seed = 48;
        let mut dev = booted(chip, seed, |_| {});
        let spin = kernel(&dev, "spin");
        let core = last_core(&dev);
        let mut cq = dev.cq(0).unwrap();
        let before = cq.record_event().unwrap();
        cq.enqueue_program(&spin_program(&spin, CoreRange::single(core.0, core.1), 20_000, USER.base, |_| 7)).unwrap();
        let after = cq.record_event().unwrap();
        assert_eq!(dev.event_cycle(after).unwrap(), None, "{} seed {seed}: nothing ran yet", chip.name());
        dev.event_synchronize(after).unwrap();
        let (a, b) = (dev.event_cycle(before).unwrap().unwrap(), dev.event_cycle(after).unwrap().unwrap());
        assert!(b >= a + 20_000, "{} seed {seed}: events at {a} and {b} around a 20,000-cycle kernel", chip.name());
        assert!(b <= dev.now(), "{} seed {seed}: event at {b}, device clock {}", chip.name(), dev.now());
        assert_eq!(read_word(&mut dev, core, USER.base), 7, "{} seed {seed}", chip.name());
    }

    /// A program whose commands exceed one chunk: a kernel on each of the
    /// five processors of every core of the full board's grid, each with its
    /// own unique args (64 KiB of them, more than a chunk, which the stream
    /// sends as one write cut into pieces), goes out in several chunks,
    /// enqueued and inside a trace; every kernel finds its own args (`spin`
    /// stores its third, XOR a digest of the rest, at its second), and the
    /// last core's blocks are intact too. The full board, not the harvested
    /// test chip: no smaller grid holds such a program.
    fn a_program_larger_than_a_chunk_goes_out_in_several_and_runs(chip) {
        let seed = 61;
        let (full, mut dev, spin) = full_board_with_spin(chip, seed);
        let grid = dev.chip().grid();
        let kernels = Processor::ALL.len() as u32;
        let words = words_for_block((64 << 10) / kernels, grid.count(), 16);
        let program_bytes = kernels * grid.count() * words * 4;
        assert!(program_bytes > MAX_CHUNK, "{kernels} x {} cores x {words} words fit one chunk", grid.count());
        let slot = |j: u32, i: u32| USER.base + 4 * (kernels * j + i);
        let args = move |j: u32, i: u32, (c, r): (u8, u8)| -> Vec<u32> {
            let id = i << 16 | (c as u32) << 8 | r as u32;
            let mut a = vec![0, slot(j, i), j << 24 | id];
            a.extend((3..words).map(|w| w ^ j << 20 ^ id << 4));
            a
        };
        let program = |j: u32| five_kernel_program(&spin, grid, |i, core| args(j, i, core));
        enqueue_then_replay(&mut dev.cq(0).unwrap(), &program(0), &program(1));
        assert_five_kernels_ran(&mut dev, args, &format!("{} seed {seed}", full.name()));
        // The last program's blocks end with the last core's words.
        let last = last_core(&dev);
        let buf = l1(&dev, last, CONFIG_RING, CONFIG_RING_SIZE);
        let ring = dev.cq(0).unwrap().read_buffer(&buf, 0, CONFIG_RING_SIZE).unwrap();
        for i in 0..kernels {
            let block: Vec<u8> = args(1, i, last).into_iter().flat_map(u32::to_le_bytes).collect();
            let intact = ring.windows(block.len()).step_by(16).any(|w| w == block);
            assert!(intact, "{} seed {seed}: kernel {i}'s block's tail is not intact", full.name());
        }
    }

    /// 128 unique args a core for a kernel on each of the five processors of
    /// every core of the full board's grid (tt-metal's `all_processors_all_cores_128_rta`
    /// shape): every core's block for every kernel, multicast, would need
    /// more than the kernel-config ring, so each core is sent its own (one
    /// `WRITE_PACKED` a rectangle, cut between cores where a chunk ends).
    /// Enqueued and inside a trace, and through slow dispatch (the host
    /// writes each core's args through the BAR), every kernel finds its own
    /// args (`spin` stores its third, XOR a digest of the rest, at its
    /// second), and the last core's ring holds its own args, not another
    /// core's.
    fn each_core_is_sent_its_own_args_when_every_cores_would_not_fit_the_ring(chip) {
        let full = TestChip::full(chip.board);
        for (seed, slow) in [(62, false), (63, true)] {
            let mut dev = booted(&full, seed, |c| {
                c.num_cqs = 1;
                c.slow_dispatch = slow;
            });
            let spin = kernel(&dev, "spin");
            let grid = dev.chip().grid();
            let kernels = Processor::ALL.len() as u32;
            let words = MAX_UNIQUE_ARGS / 2;
            assert!(kernels * grid.count() * words * 4 > CONFIG_RING_SIZE, "every core's args fit the ring");
            let slot = |j: u32, i: u32| USER.base + 4 * (kernels * j + i);
            let args = move |j: u32, i: u32, (c, r): (u8, u8)| -> Vec<u32> {
                let id = i << 16 | (c as u32) << 8 | r as u32;
                let mut a = vec![0, slot(j, i), j << 24 | id];
                a.extend((3..words).map(|w| w.wrapping_mul(0x9e37_79b9) ^ j << 20 ^ id));
                a
            };
            let program = |j: u32| five_kernel_program(&spin, grid, |i, core| args(j, i, core));
            let mut cq = dev.cq(0).unwrap();
            cq.enqueue_program(&program(0)).unwrap();
            if slow {
                // Slow dispatch has no traces.
                cq.enqueue_program(&program(1)).unwrap();
            } else {
                cq.begin_trace().unwrap();
                cq.enqueue_program(&program(1)).unwrap();
                let trace = cq.end_trace().unwrap();
                cq.execute_trace(&trace).unwrap();
            }
            cq.finish().unwrap();
            let how = if slow { "slow dispatch" } else { "fast dispatch" };
            assert_five_kernels_ran(&mut dev, args, &format!("{} seed {seed}, {how}", full.name()));
            let (first, last) = ((0, 0), last_core(&dev));
            let buf = l1(&dev, last, CONFIG_RING, CONFIG_RING_SIZE);
            let ring = dev.cq(0).unwrap().read_buffer(&buf, 0, CONFIG_RING_SIZE).unwrap();
            let holds = |core| {
                let block: Vec<u8> = args(1, 4, core).into_iter().flat_map(u32::to_le_bytes).collect();
                ring.windows(block.len()).step_by(16).any(|w| w == block)
            };
            assert!(holds(last), "{} seed {seed}, {how}: the last core's ring lacks its own args", full.name());
            assert!(!holds(first), "{} seed {seed}, {how}: the last core's ring holds another's args", full.name());
        }
    }

    /// With eight queues each queue's part of the kernel-config ring (16
    /// KiB) is smaller than a chunk (36 KiB), so a program whose every
    /// core's args just overflow it multicast (five kernels on every core)
    /// sends each core its own in a one-chunk stream: every kernel finds its
    /// own args, on the first queue and the last, enqueued and inside a
    /// trace.
    fn each_core_is_sent_its_own_args_in_one_chunk_on_eight_queues(chip) {
        let seed = 66;
        let full = TestChip::full(chip.board);
        let queues = 8;
        let mut dev = booted(&full, seed, |c| c.num_cqs = queues);
        let spin = kernel(&dev, "spin");
        let grid = dev.chip().grid();
        let kernels = Processor::ALL.len() as u32;
        let ring = CONFIG_RING_SIZE / queues as u32;
        let words = ring / (kernels * grid.count() * 4) + 1;
        // Each kernel's args in a core's block padded to 16 bytes.
        let own = kernels * grid.count() * (4 * words).next_multiple_of(16);
        assert!(own + 4 * grid.count() < MAX_CHUNK - 1024, "{own} bytes of own args in one chunk");
        for cq in [0, queues as u32 - 1] {
            let slot = move |j: u32, i: u32| USER.base + 4 * (kernels * (2 * cq + j) + i);
            let args = move |j: u32, i: u32, (c, r): (u8, u8)| -> Vec<u32> {
                let id = cq << 28 | i << 16 | (c as u32) << 8 | r as u32;
                let mut a = vec![0, slot(j, i), j << 24 | id];
                a.extend((3..words).map(|w| w.wrapping_mul(0x9e37_79b9) ^ j << 20 ^ id));
                a
            };
            let program = |j: u32| five_kernel_program(&spin, grid, |i, core| args(j, i, core));
            enqueue_then_replay(&mut dev.cq(cq as u8).unwrap(), &program(0), &program(1));
            assert_five_kernels_ran(&mut dev, args, &format!("{} seed {seed}, CQ{cq}", full.name()));
        }
    }

    /// A program whose every core gets its own args, with more bytes a core
    /// than the queue's chunks carry (an 8 KiB issue queue against five
    /// kernels of 256 unique args: 5 KiB a core), is refused with an error
    /// that says so, having sent nothing: a small program still runs after.
    fn a_cores_own_args_larger_than_a_chunk_are_refused_and_the_queue_goes_on(chip) {
        let seed = 64;
        let full = TestChip::full(chip.board);
        let mut dev = booted(&full, seed, |c| {
            c.num_cqs = 1;
            c.issue_size = 8 << 10;
        });
        let spin = kernel(&dev, "spin");
        let grid = dev.chip().grid();
        let big = five_kernel_program(&spin, grid, |i, core| {
            let mut a = vec![0, USER.base, i];
            a.resize(MAX_UNIQUE_ARGS as usize, core.0 as u32);
            a
        });
        let mut cq = dev.cq(0).unwrap();
        let err = cq.enqueue_program(&big).expect_err("5 KiB of args a core in 8 KiB chunks").to_string();
        assert!(err.contains("bytes of runtime args do not fit"), "{} seed {seed}: {err}", full.name());
        let one = (1, 1);
        cq.enqueue_program(&spin_program(&spin, CoreRange::single(one.0, one.1), 10, USER.base + 64, |_| 77)).unwrap();
        cq.finish().unwrap();
        assert_eq!(read_word(&mut dev, one, USER.base + 64), 77, "{} seed {seed}", full.name());
    }

    /// A core's own args larger than a NOC packet (five kernels of 256
    /// unique and 256 common args: 10 KiB a core, over Wormhole's 8 KiB
    /// packets; Blackhole's 16 KiB packets carry it whole) go out in several
    /// packets a core. `spin` takes its args from the common ones, which
    /// end each core's block: every kernel stores what they name on the
    /// spread cores, and each spread core's ring holds its own unique args
    /// for every kernel, not another core's.
    fn a_cores_own_args_larger_than_a_packet_arrive_whole(chip) {
        let seed = 65;
        let (full, mut dev, spin) = full_board_with_spin(chip, seed);
        let grid = dev.chip().grid();
        let kernels = Processor::ALL.len() as u32;
        let unique = |j: u32, i: u32, (c, r): (u8, u8)| -> Vec<u32> {
            let id = j << 24 | i << 16 | (c as u32) << 8 | r as u32;
            (0..MAX_UNIQUE_ARGS).map(|w| w.wrapping_mul(0x9e37_79b9) ^ id).collect()
        };
        let common = move |j: u32, i: u32| -> Vec<u32> {
            let mut a = vec![0, USER.base + 4 * (kernels * j + i), j << 24 | i << 16 | 0x5a];
            a.extend((3..MAX_COMMON_ARGS).map(|w| w.wrapping_mul(0x85eb_ca6b) ^ j << 20 ^ i));
            a
        };
        let program = |j: u32| five_kernel_program_with_common(&spin, grid, |i, core| unique(j, i, core), |i| common(j, i));
        let mut cq = dev.cq(0).unwrap();
        cq.enqueue_program(&program(0)).unwrap();
        cq.enqueue_program(&program(1)).unwrap();
        cq.finish().unwrap();
        assert_five_kernels_ran(&mut dev, |j, i, _| common(j, i), &format!("{} seed {seed}", full.name()));
        let bytes = |words: Vec<u32>| -> Vec<u8> { words.into_iter().flat_map(u32::to_le_bytes).collect() };
        for core in spread_cores(&dev) {
            let ring = read_l1(&mut dev, core, CONFIG_RING, CONFIG_RING_SIZE);
            let holds = |block: Vec<u8>| ring.windows(block.len()).step_by(16).any(|w| w == block);
            for i in 0..kernels {
                assert!(holds(bytes(unique(1, i, core))), "{} seed {seed}: kernel {i}'s args on {core:?}", full.name());
            }
            let other = if core == (0, 0) { last_core(&dev) } else { (0, 0) };
            assert!(!holds(bytes(unique(1, 0, other))), "{} seed {seed}: {core:?} holds {other:?}'s", full.name());
        }
    }

    /// Kernel binaries and arg blocks of 4 KiB and more are staged in sysmem and
    /// sent by reference (gathered fetch entries). A changed arg block is sent
    /// anew, a staged blob is reused only while it holds the same bytes, and an
    /// arena lapped many times (sysmem just past the queues' rings: about 190
    /// KiB a queue, against 20 distinct 12 KiB binaries in turn and a 16 KiB arg
    /// block per program) never lets the prefetcher read bytes it has
    /// overwritten. The same programs without staging give the same results.
    fn staged_blobs_follow_every_change_and_survive_many_arena_laps(chip) {
        for stage in [4096u32, 0] {
            let seed = 61;
            let cfg = cqlab_driver::DeviceConfig { stage_min_bytes: stage, ..cqlab_tests::config(chip) };
            let end = cqlab_abi::sysmem::CqSysmemLayout::for_cq(cfg.num_cqs, cfg.issue_size, cfg.completion_size).base;
            let sim = cqlab_sim::config::SimConfig { sysmem_size: end as usize + (384 << 10), ..chip.sim(seed) };
            let mut dev = Device::embedded(sim, cfg).unwrap();
            dev.boot().unwrap();
            let (spin, noop) = (kernel(&dev, "spin"), kernel(&dev, "noop-12k"));
            let binaries: Vec<Arc<KernelImage>> =
                (0..20).map(|i| Arc::new(noop.renamed(&format!("noop-12k#{i}")))).collect();
            // A 16 KiB block over the grid. Word 2 (XOR the rest's digest) is
            // what the core stores; the rest differ per program too.
            let grid = dev.chip().grid();
            let words = words_for_block(16 << 10, grid.count(), 64);
            let block_bytes = grid.count() * words * 4;
            let args = move |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
                let id = (c as u32) << 8 | r as u32;
                let mut a = vec![0, USER.base + 4 * j, j << 16 | id];
                a.extend((3..words).map(|i| i ^ j << 20 ^ id));
                a
            };
            // One program whose args change before each enqueue (its old
            // blocks may still be in flight) and one enqueued unchanged.
            let mut changing = Program::new();
            let k = changing.add_kernel(spin.clone(), &[grid]).unwrap();
            let set_args = |p: &mut Program, j: u32| {
                for core in grid.cores() {
                    p.set_unique_args(k, core, &args(j, core)).unwrap();
                }
            };
            set_args(&mut changing, 0);
            let unchanged = every_core_program(&spin, grid, |core| args(1, core));
            let n = 40u32;
            dev.cq(0).unwrap().enqueue_program(&changing).unwrap();
            // The second program's kernel is resident: what it puts in the
            // issue queue is its launch and its args block, staged or inline.
            let before = dev.queue_pointers(0).unwrap().issue_wr;
            dev.cq(0).unwrap().enqueue_program(&unchanged).unwrap();
            let after = dev.queue_pointers(0).unwrap().issue_wr;
            let issue_bytes = cqlab_abi::ring::RingPtr::used(after, before, dev.config().issue_size);
            if stage > 0 {
                let what = format!("a staged {block_bytes}-byte arg block took {issue_bytes} issue-queue bytes");
                assert!(issue_bytes < 1024, "{what}");
            } else {
                assert!(issue_bytes > block_bytes, "copied inline: {issue_bytes} issue-queue bytes");
            }
            let mut cq = dev.cq(0).unwrap();
            for j in 2..n {
                let mut upload = Program::new();
                upload.add_kernel(binaries[j as usize % binaries.len()].clone(), &[grid]).unwrap();
                cq.enqueue_program(&upload).unwrap();
                if j % 5 == 0 {
                    // Unchanged: the same block again (staged once). Its
                    // stores land in slot 1 again.
                    cq.enqueue_program(&unchanged).unwrap();
                }
                set_args(&mut changing, j);
                cq.enqueue_program(&changing).unwrap();
            }
            cq.finish().unwrap_or_else(|e| panic!("{} stage {stage}: {e}", chip.name()));
            for core in grid.cores() {
                let got = read_l1(&mut dev, core, USER.base, 4 * n);
                for j in 0..n {
                    let word = u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap());
                    let want = spin_stored_value(&args(j, core)).unwrap();
                    assert_eq!(word, want, "{} stage {stage}: program {j} on {core:?}", chip.name());
                }
            }
        }
    }

    /// Blobs staged anew for every program (16 KiB arg blocks: the arena,
    /// about 190 KiB a queue, laps every dozen programs while the host runs
    /// ahead) arrive intact, and the same stream with the host overwriting
    /// staged blobs without waiting for the prefetcher
    /// (`HostBug::StagedReuseEarly`) is caught: a later enqueue's bytes replace
    /// those a chunk still has to read.
    fn overwriting_staged_blobs_still_being_read_is_caught(chip) {
        for bug in [None, Some(cqlab_driver::HostBug::StagedReuseEarly)] {
            let seed = 61;
            let cfg = cqlab_driver::DeviceConfig {
                host_bug: bug,
                stall_timeout_cycles: 2_000_000,
                kernel_timeout_cycles: Some(2_000_000),
                ..cqlab_tests::config(chip)
            };
            let end = cqlab_abi::sysmem::CqSysmemLayout::for_cq(cfg.num_cqs, cfg.issue_size, cfg.completion_size).base;
            let sim = cqlab_sim::config::SimConfig { sysmem_size: end as usize + (384 << 10), ..chip.sim(seed) };
            let mut dev = Device::embedded(sim, cfg).unwrap();
            dev.boot().unwrap();
            let spin = kernel(&dev, "spin");
            let grid = dev.chip().grid();
            let words = words_for_block(16 << 10, grid.count(), 64);
            let core = spread_cores(&dev)[2];
            // Enough programs that the host laps the staging space while the
            // prefetcher still reads it (60 did on Blackhole before its L0
            // data caches sped the dispatcher up).
            let n = 120u32;
            let mut cq = dev.cq(0).unwrap();
            let args = move |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
                let id = (c as u32) << 8 | r as u32;
                let mut a = vec![0, USER.base + 4 * j, j << 16 | id];
                a.extend((3..words).map(|i| i ^ j << 20 ^ id));
                a
            };
            for j in 0..n {
                cq.enqueue_program(&every_core_program(&spin, grid, |core| args(j, core))).unwrap();
            }
            let finished = cq.finish();
            let wrong = finished.is_err() || {
                let got = read_l1(&mut dev, core, USER.base, 4 * n);
                (0..n).any(|j| {
                    u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap())
                        != spin_stored_value(&args(j, core)).unwrap()
                })
            };
            assert_eq!(wrong, bug.is_some(), "{} host bug {bug:?}: finished {finished:?}", chip.name());
        }
    }
}
