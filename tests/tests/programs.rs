//! Programs through the command queue: kernels on core ranges with unique
//! and common args, alternating kernels on overlapping ranges, a full
//! launch-message ring, traces and slow dispatch.

use cqlab_abi::memory_map::USER;
use cqlab_abi::noc;
use cqlab_abi::program::{
    spin_stored_value, CONFIG_RING, CONFIG_RING_SIZE, KERNEL_SLOTS, LAUNCH_RING_ENTRIES, MAX_UNIQUE_ARGS,
};
use cqlab_abi::trace::TraceKind;
use cqlab_driver::{Buffer, CoreRange, Device, KernelImage, Placement, Program};
use cqlab_tests::{booted, booted_with_faults};
use std::sync::Arc;

fn kernel(dev: &Device, name: &str) -> Arc<KernelImage> {
    Arc::new(dev.load_kernel(name).unwrap_or_else(|e| panic!("kernel {name}: {e}")))
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

/// `kernel` on every core of a `cols` x `rows` grid, each core with the
/// unique args `args(core)`.
fn every_core_program(
    kernel: &Arc<KernelImage>,
    (cols, rows): (u8, u8),
    args: impl Fn((u8, u8)) -> Vec<u32>,
) -> Program {
    let mut p = Program::new();
    let range = CoreRange::new((0, 0), (cols - 1, rows - 1));
    let k = p.add_kernel(kernel.clone(), &[range]).unwrap();
    for core in range.cores() {
        p.set_unique_args(k, core, &args(core)).unwrap();
    }
    p
}

/// `size` bytes of `core`'s L1 at `addr`, as a buffer to read back.
fn l1(core: (u8, u8), addr: u32, size: u32) -> Buffer {
    Buffer { placement: Placement::L1 { core: noc::worker(core.0, core.1), addr }, size }
}

fn read_word(dev: &mut Device, core: (u8, u8), addr: u32) -> u32 {
    let buf = l1(core, addr, 4);
    let bytes = dev.cq(0).unwrap().read_buffer(&buf, 0, 4).unwrap();
    u32::from_le_bytes(bytes.try_into().unwrap())
}

#[test]
fn spin_and_copy_alternate_on_overlapping_ranges_for_a_thousand_programs() {
    let seed = 41;
    let mut dev = booted(seed, |_| {});
    let (spin, copy) = (kernel(&dev, "spin"), kernel(&dev, "copy"));
    let (page, pages, banks) = (256u32, 16u32, dev.config().dram_banks);
    let src = dev.alloc_dram(page * pages, page).unwrap();
    let dsts: Vec<Buffer> = (0..4).map(|_| dev.alloc_dram(page * pages, page).unwrap()).collect();
    let data: Vec<u8> = (0..page * pages).map(|i| (i * 29 % 253) as u8).collect();
    dev.cq(0).unwrap().write_buffer(&src, 0, &data).unwrap();
    // copy on (0,0)..(3,3): core r*4+c copies page r*4+c; spin on (2,2)..(5,5).
    let (copy_range, spin_range) = (CoreRange::new((0, 0), (3, 3)), CoreRange::new((2, 2), (5, 5)));
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
            p.set_common_args(k, &[dram_base(&src), dram_base(dst), page, pages, banks, 4, 16]).unwrap();
            cq.enqueue_program(&p).unwrap();
        }
    }
    cq.finish().unwrap();
    for (i, dst) in dsts.iter().enumerate() {
        assert_eq!(dev.cq(0).unwrap().read_buffer(dst, 0, page * pages).unwrap(), data, "seed {seed}: copy {i}");
    }
    for core in [(2, 2), (3, 3), (5, 5), (4, 2)] {
        let buf = l1(core, USER.base, 4 * spins);
        let got = dev.cq(0).unwrap().read_buffer(&buf, 0, 4 * spins).unwrap();
        for j in 0..spins {
            let word = u32::from_le_bytes(got[4 * j as usize..4 * j as usize + 4].try_into().unwrap());
            assert_eq!(word, j << 16 | (core.0 as u32) << 8 | core.1 as u32, "seed {seed}: spin {j} on {core:?}");
        }
    }
}

#[test]
fn a_full_launch_ring_stalls_the_dispatcher_and_loses_no_message() {
    let seed = 42;
    let mut dev = booted(seed, |_| {});
    let spin = kernel(&dev, "spin");
    let core = (1u8, 1u8);
    let programs = 3 * LAUNCH_RING_ENTRIES;
    let mut cq = dev.cq(0).unwrap();
    for i in 0..programs {
        // Long kernels: the dispatcher gets a whole ring ahead of the core.
        let p = spin_program(&spin, CoreRange::single(core.0, core.1), 4000, USER.base + 4 * i, move |_| 0x100 + i);
        cq.enqueue_program(&p).unwrap();
    }
    cq.finish().unwrap();
    // Every program ran with its own message (an overwritten, unstarted one
    // would leave its word unwritten or carry another program's args).
    for i in 0..programs {
        assert_eq!(read_word(&mut dev, core, USER.base + 4 * i), 0x100 + i, "seed {seed}: program {i}");
    }
    // The dispatcher did wait for ring entries: a worker-counter wait that
    // found fewer completions than it needed.
    let trace = dev.read_trace(noc::dispatcher(0)).unwrap();
    let stalls = trace
        .records
        .windows(2)
        .filter(|w| TraceKind::from_u16(w[0].kind) == Some(TraceKind::WaitTarget) && w[0].arg0 == 0x8)
        .filter(|w| TraceKind::from_u16(w[1].kind) == Some(TraceKind::WaitBegin) && w[1].arg1 < w[1].arg0)
        .count();
    assert!(stalls > 0, "seed {seed}: the dispatcher never waited for a launch-ring entry");
}

#[test]
fn programs_replay_in_traces_with_their_args_and_kernels() {
    let seed = 43;
    let mut dev = booted(seed, |_| {});
    let (spin, noop) = (kernel(&dev, "spin"), kernel(&dev, "noop"));
    let mut cq = dev.cq(0).unwrap();
    cq.begin_trace().unwrap();
    for i in 0..6u32 {
        if i % 3 == 2 {
            let mut p = Program::new();
            p.add_kernel(noop.clone(), &[CoreRange::new((0, 0), (7, 7))]).unwrap();
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
            assert_eq!(read_word(&mut dev, core, USER.base + 4 * i), want, "seed {seed}: program {i} on {core:?}");
        }
    }
    assert_eq!(read_word(&mut dev, (1, 1), USER.base + 64), 0xabc, "seed {seed}");
}

/// 128 unique args per core on all 64 cores, program after program, with
/// one and two queues (the kernel-config ring then holds four or two such
/// programs, so every program reuses bytes of an earlier one and WAITs for
/// it), enqueued and then replayed from a trace: every core's kernel finds
/// its own args at its own offset (`spin` stores the third, XOR a digest of
/// the rest, at the second),
/// and the last program's whole block of 64 x 128 words is intact in the
/// kernel-config ring of the cores checked.
#[test]
fn a_hundred_and_twenty_eight_unique_args_per_core_arrive_intact_on_every_core() {
    for cqs in [1u8, 2] {
        let seed = 48 + cqs as u64;
        let mut dev = booted(seed, |c| c.num_cqs = cqs);
        let spin = kernel(&dev, "spin");
        let args = |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
            let id = (c as u32) << 8 | r as u32;
            let mut a = vec![0, USER.base + 4 * j, j << 16 | id];
            a.extend((3..MAX_UNIQUE_ARGS / 2).map(|i| i.wrapping_mul(0x9e37_79b9) ^ j << 20 ^ id));
            a
        };
        let program = |j: u32| every_core_program(&spin, (8, 8), |core| args(j, core));
        let n = 10u32;
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
        for r in 0..8u8 {
            for c in 0..8u8 {
                let got = dev.cq(0).unwrap().read_buffer(&l1((c, r), USER.base, 8 * n), 0, 8 * n).unwrap();
                for j in 0..2 * n {
                    let word = u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap());
                    let want = spin_stored_value(&args(j, (c, r))).unwrap();
                    assert_eq!(word, want, "seed {seed}, {cqs} queues: program {j} on {:?}", (c, r));
                }
            }
        }
        let block: Vec<u8> = (0..8u8)
            .flat_map(|r| (0..8u8).map(move |c| (c, r)))
            .flat_map(|core| args(2 * n - 1, core))
            .flat_map(u32::to_le_bytes)
            .collect();
        for core in [(0, 0), (7, 0), (3, 4), (7, 7)] {
            let ring =
                dev.cq(0).unwrap().read_buffer(&l1(core, CONFIG_RING, CONFIG_RING_SIZE), 0, CONFIG_RING_SIZE).unwrap();
            assert!(
                ring.windows(block.len()).step_by(16).any(|w| w == block),
                "seed {seed}, {cqs} queues: the last program's args block is not intact on {core:?}"
            );
        }
    }
}

/// A trace longer than its inline head and than a trace window: its first
/// programs run from the EXEC_BUF chunk, the rest from DRAM windows, and
/// every program's result is there after each replay (cleared in between).
#[test]
fn a_long_trace_replays_from_its_inline_head_and_its_windows() {
    let seed = 47;
    const PROGRAMS: u32 = 480;
    let mut dev = booted(seed, |_| {});
    let spin = kernel(&dev, "spin");
    let range = CoreRange::new((0, 0), (1, 1));
    let value = |i: u32, (c, r): (u8, u8)| 0x5000_0000 | i << 8 | (c as u32) << 4 | r as u32;
    let mut cq = dev.cq(0).unwrap();
    cq.begin_trace().unwrap();
    for i in 0..PROGRAMS {
        cq.enqueue_program(&spin_program(&spin, range, 10, USER.base + 4 * i, move |core| value(i, core))).unwrap();
    }
    let trace = cq.end_trace().unwrap();
    let window = cqlab_abi::memory_map::TRACE_WINDOW;
    assert!(trace.bytes > window, "{} trace bytes: the replay goes past its head and first window", trace.bytes);
    for replay in 0..2 {
        let mut cq = dev.cq(0).unwrap();
        for r in 0..=1u8 {
            for c in 0..=1u8 {
                cq.write_buffer(&l1((c, r), USER.base, 4 * PROGRAMS), 0, &vec![0; 4 * PROGRAMS as usize]).unwrap();
            }
        }
        cq.execute_trace(&trace).unwrap();
        cq.finish().unwrap();
        for r in 0..=1u8 {
            for c in 0..=1u8 {
                let got =
                    dev.cq(0).unwrap().read_buffer(&l1((c, r), USER.base, 4 * PROGRAMS), 0, 4 * PROGRAMS).unwrap();
                for i in 0..PROGRAMS {
                    let word = u32::from_le_bytes(got[4 * i as usize..][..4].try_into().unwrap());
                    assert_eq!(word, value(i, (c, r)), "seed {seed}: replay {replay}, program {i} on ({c},{r})");
                }
            }
        }
    }
}

/// A trace of wide programs, longer than the trace area, replayed three
/// times back to back: each window slot is refilled while the few large
/// relay pieces from its previous window may still be leaving (each
/// program's 32 KiB of args on 64 cores crosses windows in one or two
/// pieces, and write back-pressure keeps them in the NOC interface
/// longer), and what each program stored, and nothing else, is there at
/// the end. The trace starts with a small program whose relay ends within
/// the inline head, so a replay reads its first window right behind it,
/// while the previous replay's last relays from that window's slot (its
/// seventh window) may still be leaving. Without the firmware's wait for
/// a window's relays before it is refilled (the mutant
/// `prefetch-replay-window-reuse-before-sent`), or for the previous
/// replay's relays before the first windows are read
/// (`prefetch-replay-start-before-sent`), the dispatcher gets corrupted
/// commands or a kernel spins on corrupted args, on each of seeds 1-8 and
/// 51.
#[test]
fn a_trace_of_wide_programs_longer_than_the_trace_area_replays_intact_back_to_back() {
    let seed = 51;
    // Back-pressure holds each relay piece in the NOC interface longer;
    // the kernels spin 20 cycles, so one still running after 5M cycles is
    // spinning on corrupted args.
    let faults = cqlab_sim::config::Faults { write_backpressure_cycles: 1000, ..Default::default() };
    let mut dev = booted_with_faults(seed, faults, |cfg| cfg.kernel_timeout_cycles = 5_000_000);
    let spin = kernel(&dev, "spin");
    const PROGRAMS: u32 = 13;
    let args = |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
        let value = j << 16 | (c as u32) << 8 | r as u32 | 0x8000_0000;
        let mut a = vec![20, USER.base + 4 * j, value];
        a.extend((3..MAX_UNIQUE_ARGS / 2).map(|i| i.wrapping_mul(0x9e37_79b9) ^ value));
        a
    };
    let mut small = Program::new();
    let k = small.add_kernel(spin.clone(), &[CoreRange::single(0, 0)]).unwrap();
    small.set_common_args(k, &[20]).unwrap();
    let mut cq = dev.cq(0).unwrap();
    cq.begin_trace().unwrap();
    cq.enqueue_program(&small).unwrap();
    for j in 0..PROGRAMS {
        cq.enqueue_program(&every_core_program(&spin, (8, 8), |core| args(j, core))).unwrap();
    }
    let trace = cq.end_trace().unwrap();
    let area = cqlab_abi::memory_map::TRACE_AREA.size;
    assert!(trace.bytes > 2 * area, "{} trace bytes: each window slot is refilled more than once", trace.bytes);
    let window = cqlab_abi::memory_map::TRACE_WINDOW;
    let windows = trace.bytes.div_ceil(window);
    assert_eq!((windows - 1) % (area / window), 0, "{windows} windows: the last one is in the first one's slot");
    for _ in 0..3 {
        cq.execute_trace(&trace).unwrap();
    }
    cq.finish().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    // The stores, and the words just past them untouched.
    let words = PROGRAMS + 16;
    for core in CoreRange::new((0, 0), (7, 7)).cores() {
        let got = dev.cq(0).unwrap().read_buffer(&l1(core, USER.base, 4 * words), 0, 4 * words).unwrap();
        for j in 0..words {
            let word = u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap());
            let want = if j < PROGRAMS { spin_stored_value(&args(j, core)).unwrap() } else { 0 };
            assert_eq!(word, want, "seed {seed}: word {j} on {core:?}");
        }
    }
}

/// A read-back enqueued right behind a `copy` program sees every byte its
/// kernels wrote: a program counts as done only once its kernels' NOC
/// writes have landed. Each core's last write is a whole 32 KiB page, held
/// in its NOC interface longer by write back-pressure, and fresh source
/// bytes each round show a read that came too early. Without the worker's
/// wait for its kernel's writes (the mutant
/// `worker-done-before-writes-landed`) the read-back differs, on each of
/// seeds 1-8 and 52.
#[test]
fn a_read_back_right_behind_a_copy_sees_every_byte_its_kernels_wrote() {
    let seed = 52;
    let faults = cqlab_sim::config::Faults { write_backpressure_cycles: 1000, ..Default::default() };
    let mut dev = booted_with_faults(seed, faults, |_| {});
    let copy = kernel(&dev, "copy");
    let (page, pages, banks) = (32u32 << 10, 4u32, dev.config().dram_banks);
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
        assert_eq!(first, None, "seed {seed}: round {round}: the read-back differs from byte {first:?} on");
    }
}

/// A replay is correct whatever ran before it: captured while `spin` was
/// resident, the trace still runs `spin` after other programs have taken
/// every text slot of the queue on its cores (however a capture plans
/// uploads, it must not trust residency a replay no longer finds).
#[test]
fn a_replay_after_its_resident_kernel_was_replaced_runs_that_kernel() {
    let seed = 47;
    let mut dev = booted(seed, |_| {});
    let (spin, noop) = (kernel(&dev, "spin"), kernel(&dev, "noop"));
    let range = CoreRange::new((0, 0), (1, 1));
    let cores = [(0u8, 0u8), (1, 0), (0, 1), (1, 1)];
    let addr = USER.base + 128;
    let value = |(c, r): (u8, u8)| 0x5a00 | (c as u32) << 4 | r as u32;
    // Every text slot there is (this queue owns a share of them), each
    // taken by a distinct build of `noop` on the whole grid.
    let fillers: Vec<Program> = (0..KERNEL_SLOTS)
        .map(|i| {
            let mut p = Program::new();
            p.add_kernel(Arc::new(noop.renamed(&format!("noop#{i}"))), &[CoreRange::new((0, 0), (7, 7))]).unwrap();
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
        for core in cores {
            cq.write_buffer(&l1(core, addr, 4), 0, &[0; 4]).unwrap();
        }
        for p in &fillers {
            cq.enqueue_program(p).unwrap();
        }
        cq.execute_trace(&trace).unwrap();
        cq.finish().unwrap();
        for core in cores {
            let buf = l1(core, addr, 4);
            let got = u32::from_le_bytes(cq.read_buffer(&buf, 0, 4).unwrap().try_into().unwrap());
            assert_eq!(got, value(core), "seed {seed}: round {round}, replay after the slots were refilled, {core:?}");
        }
    }
    // Back to back, with `spin` resident as the capture found it.
    for core in cores {
        cq.write_buffer(&l1(core, addr, 4), 0, &[0; 4]).unwrap();
    }
    for _ in 0..3 {
        cq.execute_trace(&trace).unwrap();
    }
    cq.finish().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    for core in cores {
        let got = u32::from_le_bytes(cq.read_buffer(&l1(core, addr, 4), 0, 4).unwrap().try_into().unwrap());
        assert_eq!(got, value(core), "seed {seed}: back-to-back replays, {core:?}");
    }
}

#[test]
fn slow_dispatch_runs_programs_with_unique_and_common_args() {
    let seed = 44;
    let mut dev = booted(seed, |c| c.slow_dispatch = true);
    let spin = kernel(&dev, "spin");
    let mut cq = dev.cq(0).unwrap();
    for i in 0..10u32 {
        let p = spin_program(&spin, CoreRange::new((2, 0), (3, 1)), 20, USER.base + 4 * i, move |(c, r)| {
            i * 100 + c as u32 * 10 + r as u32
        });
        cq.enqueue_program(&p).unwrap();
    }
    // Common args: the same three words on every core.
    let mut p = Program::new();
    let k = p.add_kernel(spin.clone(), &[CoreRange::single(7, 7)]).unwrap();
    p.set_common_args(k, &[5, USER.base + 100, 77]).unwrap();
    cq.enqueue_program(&p).unwrap();
    cq.finish().unwrap();
    for i in 0..10u32 {
        for core in [(2, 0), (3, 1)] {
            let want = i * 100 + core.0 as u32 * 10 + core.1 as u32;
            assert_eq!(read_word(&mut dev, core, USER.base + 4 * i), want, "seed {seed}: program {i} on {core:?}");
        }
    }
    assert_eq!(read_word(&mut dev, (7, 7), USER.base + 100), 77, "seed {seed}");
}

#[test]
fn programs_are_checked_before_they_reach_the_device() {
    let mut dev = booted(45, |_| {});
    let spin = kernel(&dev, "spin");
    let mut p = Program::new();
    p.add_kernel(spin.clone(), &[CoreRange::new((0, 0), (8, 0))]).unwrap();
    assert!(dev.cq(0).unwrap().enqueue_program(&p).is_err(), "range outside the 8x8 grid");
    assert!(dev.cq(0).unwrap().enqueue_program(&Program::new()).is_err(), "no kernels");
    // Both queues launch programs, each from its own launch ring.
    let mut ok = Program::new();
    ok.add_kernel(spin, &[CoreRange::single(0, 0)]).unwrap();
    dev.cq(0).unwrap().enqueue_program(&ok).unwrap();
    dev.cq(1).unwrap().enqueue_program(&ok).unwrap();
    dev.cq(0).unwrap().finish().unwrap();
    dev.cq(1).unwrap().finish().unwrap();
}

/// `Device::event_cycle` gives device time: two events around a kernel of
/// 20,000 cycles are at least that far apart, neither is later than the
/// device clock, and an event not yet completed has no cycle.
#[test]
fn event_cycles_are_device_time_and_bracket_a_kernel() {
    let seed = 48;
    let mut dev = booted(seed, |_| {});
    let spin = kernel(&dev, "spin");
    let mut cq = dev.cq(0).unwrap();
    let before = cq.record_event().unwrap();
    cq.enqueue_program(&spin_program(&spin, CoreRange::single(2, 3), 20_000, USER.base, |_| 7)).unwrap();
    let after = cq.record_event().unwrap();
    assert_eq!(dev.event_cycle(after).unwrap(), None, "seed {seed}: nothing ran yet");
    dev.event_synchronize(after).unwrap();
    let (a, b) = (dev.event_cycle(before).unwrap().unwrap(), dev.event_cycle(after).unwrap().unwrap());
    assert!(b >= a + 20_000, "seed {seed}: events at {a} and {b} around a 20,000-cycle kernel");
    assert!(b <= dev.now(), "seed {seed}: event at {b}, device clock {}", dev.now());
    assert_eq!(read_word(&mut dev, (2, 3), USER.base), 7, "seed {seed}");
}

/// A program whose commands exceed one chunk: 64 unique args on each of
/// the 256 cores of a 16x16 grid (a 64 KiB block, two chunks' worth) goes
/// out in several chunks, enqueued and inside a trace; every core finds
/// its own args (`spin` stores its third, XOR a digest of the rest, at its
/// second), and the last of them, 64 words in, is intact too.
#[test]
fn a_program_larger_than_a_chunk_goes_out_in_several_and_runs() {
    let seed = 61;
    let mut dev = booted(seed, |c| (c.worker_cols, c.worker_rows, c.num_cqs) = (16, 16, 1));
    let spin = kernel(&dev, "spin");
    let args = |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
        let id = (c as u32) << 8 | r as u32;
        let mut a = vec![0, USER.base + 4 * j, j << 16 | id];
        a.extend((3..64u32).map(|i| i ^ j << 20 ^ id << 8));
        a
    };
    let program = |j: u32| every_core_program(&spin, (16, 16), |core| args(j, core));
    let mut cq = dev.cq(0).unwrap();
    cq.enqueue_program(&program(0)).unwrap();
    cq.begin_trace().unwrap();
    cq.enqueue_program(&program(1)).unwrap();
    let trace = cq.end_trace().unwrap();
    cq.execute_trace(&trace).unwrap();
    cq.finish().unwrap();
    for core in [(0, 0), (15, 0), (7, 9), (15, 15)] {
        for j in 0..2 {
            let want = spin_stored_value(&args(j, core)).unwrap();
            assert_eq!(read_word(&mut dev, core, USER.base + 4 * j), want, "seed {seed}: program {j} on {core:?}");
        }
    }
    // The last program's block ends with core (15,15)'s 64 words.
    let block: Vec<u8> = args(1, (15, 15)).into_iter().flat_map(u32::to_le_bytes).collect();
    let ring =
        dev.cq(0).unwrap().read_buffer(&l1((15, 15), CONFIG_RING, CONFIG_RING_SIZE), 0, CONFIG_RING_SIZE).unwrap();
    assert!(ring.windows(block.len()).step_by(16).any(|w| w == block), "seed {seed}: the block's tail is not intact");
}

/// Kernel binaries and arg blocks of 4 KiB and more are staged in sysmem and
/// sent by reference (gathered fetch entries). A changed arg block is sent
/// anew, a staged blob is reused only while it holds the same bytes, and an
/// arena lapped many times (sysmem just past the queues' rings: about 190
/// KiB a queue, against 20 distinct 12 KiB binaries in turn and a 16 KiB arg
/// block per program) never lets the prefetcher read bytes it has
/// overwritten. The same programs without staging give the same results.
#[test]
fn staged_blobs_follow_every_change_and_survive_many_arena_laps() {
    for stage in [4096u32, 0] {
        let seed = 61;
        let cfg = cqlab_driver::DeviceConfig {
            firmware_dir: cqlab_tests::firmware_dir(),
            stage_min_bytes: stage,
            ..Default::default()
        };
        let end = cqlab_abi::sysmem::CqSysmemLayout::for_cq(cfg.num_cqs, cfg.issue_size, cfg.completion_size).base;
        let sim = cqlab_sim::config::SimConfig { seed, sysmem_size: end as usize + (384 << 10), ..Default::default() };
        let mut dev = Device::embedded(sim, cfg).unwrap();
        dev.boot().unwrap();
        let (spin, noop) = (kernel(&dev, "spin"), kernel(&dev, "noop-12k"));
        let binaries: Vec<Arc<KernelImage>> =
            (0..20).map(|i| Arc::new(noop.renamed(&format!("noop-12k#{i}")))).collect();
        // 64 words a core on 64 cores: a 16 KiB block. Word 2 (XOR the
        // rest's digest) is what the core stores; the rest differ per
        // program too.
        let args = |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
            let id = (c as u32) << 8 | r as u32;
            let mut a = vec![0, USER.base + 4 * j, j << 16 | id];
            a.extend((3..64).map(|i| i ^ j << 20 ^ id));
            a
        };
        // One program whose args change before each enqueue (its old
        // blocks may still be in flight) and one enqueued unchanged.
        let mut changing = Program::new();
        let k = changing.add_kernel(spin.clone(), &[CoreRange::new((0, 0), (7, 7))]).unwrap();
        let set_args = |p: &mut Program, j: u32| {
            for r in 0..8u8 {
                for c in 0..8u8 {
                    p.set_unique_args(k, (c, r), &args(j, (c, r))).unwrap();
                }
            }
        };
        set_args(&mut changing, 0);
        let unchanged = every_core_program(&spin, (8, 8), |core| args(1, core));
        let n = 40u32;
        let before = cqlab_abi::ring::RingPtr(dev.queue_pointers(0).unwrap().issue_wr);
        dev.cq(0).unwrap().enqueue_program(&changing).unwrap();
        let after = cqlab_abi::ring::RingPtr(dev.queue_pointers(0).unwrap().issue_wr);
        let issue_bytes = cqlab_abi::ring::RingPtr::used(after, before, dev.config().issue_size);
        if stage > 0 {
            assert!(issue_bytes < 1024, "a staged 16 KiB arg block took {issue_bytes} issue-queue bytes");
        } else {
            assert!(issue_bytes > 16 << 10, "copied inline: {issue_bytes} issue-queue bytes");
        }
        let mut cq = dev.cq(0).unwrap();
        cq.enqueue_program(&unchanged).unwrap();
        for j in 2..n {
            let mut upload = Program::new();
            upload
                .add_kernel(binaries[j as usize % binaries.len()].clone(), &[CoreRange::new((0, 0), (7, 7))])
                .unwrap();
            cq.enqueue_program(&upload).unwrap();
            if j % 5 == 0 {
                // Unchanged: the same block again (staged once). Its
                // stores land in slot 1 again.
                cq.enqueue_program(&unchanged).unwrap();
            }
            set_args(&mut changing, j);
            cq.enqueue_program(&changing).unwrap();
        }
        cq.finish().unwrap_or_else(|e| panic!("stage {stage}: {e}"));
        for r in 0..8u8 {
            for c in 0..8u8 {
                let got = dev.cq(0).unwrap().read_buffer(&l1((c, r), USER.base, 4 * n), 0, 4 * n).unwrap();
                for j in 0..n {
                    let word = u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap());
                    let want = spin_stored_value(&args(j, (c, r))).unwrap();
                    assert_eq!(word, want, "stage {stage}: program {j} on {:?}", (c, r));
                }
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
#[test]
fn overwriting_staged_blobs_still_being_read_is_caught() {
    for bug in [None, Some(cqlab_driver::HostBug::StagedReuseEarly)] {
        let seed = 61;
        let cfg = cqlab_driver::DeviceConfig {
            firmware_dir: cqlab_tests::firmware_dir(),
            host_bug: bug,
            stall_timeout_cycles: 2_000_000,
            kernel_timeout_cycles: 2_000_000,
            ..Default::default()
        };
        let end = cqlab_abi::sysmem::CqSysmemLayout::for_cq(cfg.num_cqs, cfg.issue_size, cfg.completion_size).base;
        let sim = cqlab_sim::config::SimConfig { seed, sysmem_size: end as usize + (384 << 10), ..Default::default() };
        let mut dev = Device::embedded(sim, cfg).unwrap();
        dev.boot().unwrap();
        let spin = kernel(&dev, "spin");
        let n = 60u32;
        let mut cq = dev.cq(0).unwrap();
        let args = |j: u32, (c, r): (u8, u8)| -> Vec<u32> {
            let id = (c as u32) << 8 | r as u32;
            let mut a = vec![0, USER.base + 4 * j, j << 16 | id];
            a.extend((3..64).map(|i| i ^ j << 20 ^ id));
            a
        };
        for j in 0..n {
            cq.enqueue_program(&every_core_program(&spin, (8, 8), |core| args(j, core))).unwrap();
        }
        let finished = cq.finish();
        let wrong = finished.is_err() || {
            let got = dev.cq(0).unwrap().read_buffer(&l1((3, 5), USER.base, 4 * n), 0, 4 * n).unwrap();
            (0..n).any(|j| {
                u32::from_le_bytes(got[4 * j as usize..][..4].try_into().unwrap())
                    != spin_stored_value(&args(j, (3, 5))).unwrap()
            })
        };
        assert_eq!(wrong, bug.is_some(), "host bug {bug:?}: finished {finished:?}");
    }
}
