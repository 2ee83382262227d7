//! The worker firmware and the placement the firmware learns at run time,
//! against the fake core: BRISC's boot of its subordinate cores, launches
//! that start them with one word and wait for their `done`, the
//! subordinate loop,
//! the NOC map's checks, and the dispatcher's checks of destinations
//! against the compute grid.

use crate::dispatch::Dispatcher;
use crate::fake::{dispatch_stream, run_until_stopped, End, FakeChip, FakeCore};
use crate::memory::Memory;
use crate::platform::Platform;
use crate::worker;
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::encode::{DispatchWriter, EncodeError, PackedData};
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{
    self, AliveRecord, CqConfig, DeviceError, ErrorRecord, SubordinateMailbox, SubordinateRun, ALIVE, ALIVE_MAGIC,
    ERROR, NOC_MAP, RUN_SYNC_GO, WAYPOINT,
};
use cqlab_abi::memory_map::{CHUNK_AREA, DISPATCH_RING};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::program::{
    config_addr, group_offset, kernel_slot, launch_done_sem, launch_entry, pack_rect, KernelCtx, KernelGroup,
    LaunchHeader, ProcessorKernel, LAUNCH_ENTRY_SIZE, LAUNCH_TAG, NO_RECT,
};
use cqlab_abi::semaphore as sem;
use cqlab_abi::waypoint::{self, Waypoint};
use std::vec::Vec;
use zerocopy::{FromBytes, IntoBytes};

fn word(core: &FakeCore, at: u32) -> u32 {
    u32::from_le_bytes(core.l1_bytes(at, 4).try_into().unwrap())
}

fn waypoint_of(core: &FakeCore) -> Waypoint {
    Waypoint(word(core, WAYPOINT))
}

fn sub(core: &FakeCore, p: Processor) -> SubordinateMailbox {
    SubordinateMailbox::read_from_bytes(core.l1_bytes(mailbox::subordinate(p.index()), 128)).unwrap()
}

fn sub_run(core: &FakeCore) -> SubordinateRun {
    SubordinateRun::read_from_bytes(core.l1_bytes(mailbox::SUBORDINATE_RUN, 16)).unwrap()
}

#[test]
fn brisc_boots_its_subordinates_before_it_says_it_is_alive() {
    let chip = FakeChip::new(1);
    let me = chip.worker(2, 1);
    // Stale words in the subordinate mailboxes and their run word: BRISC
    // clears them first.
    let mut core = FakeCore::on(me, chip);
    core.set_l1(mailbox::subordinate(1), &ALIVE_MAGIC.to_le_bytes());
    core.set_l1(mailbox::SUBORDINATE_RUN, &0x8080u32.to_le_bytes());
    let mut released = false;
    let end = run_until_stopped(|| {
        worker::boot_brisc(&mut core, 0x1234, |p| {
            released = true;
            // Two of the four come up.
            for i in [1, 2] {
                p.write_u32(mailbox::subordinate(i), ALIVE_MAGIC);
            }
        });
        unreachable!("booted without all four subordinates")
    });
    assert_eq!(end, End::Stuck);
    assert!(released);
    assert_eq!(waypoint_of(&core), waypoint::SUBA, "waiting for the other two");
    assert_eq!(word(&core, ALIVE), 0, "BRISC is not alive before its subordinates");
    assert_eq!(sub_run(&core).sync, 0, "stale go cleared before release");

    // All four: BRISC's alive record follows.
    let mut core = FakeCore::new(me);
    let (xy, mut booted) = (me.packed(), false);
    let end = run_until_stopped(|| {
        worker::boot_brisc(&mut core, 0x1234, |p| {
            for i in 1..=4 {
                p.write_u32(mailbox::subordinate(i), ALIVE_MAGIC);
            }
        });
        booted = true;
        std::panic::panic_any(crate::fake::Halted)
    });
    assert_eq!((end, booted), (End::Halted, true));
    let alive = AliveRecord::read_from_bytes(core.l1_bytes(ALIVE, 32)).unwrap();
    assert_eq!((alive.magic, alive.firmware_id, alive.core_xy, alive.build_id), (ALIVE_MAGIC, 3, xy, 0x1234));
}

#[test]
fn every_core_refuses_a_missing_noc_map() {
    let mut core = FakeCore::new(FakeChip::new(1).worker(0, 0));
    core.set_l1(NOC_MAP, &[0; 4]);
    let end = run_until_stopped(|| worker::boot_brisc(&mut core, 0, |_| unreachable!("released without a map")));
    assert_eq!(end, End::Halted);
    let rec = ErrorRecord::read_from_bytes(core.l1_bytes(ERROR, 64)).unwrap();
    assert_eq!((rec.code, rec.addr), (DeviceError::BadNocMap as u32, NOC_MAP));
    assert_eq!(waypoint_of(&core), waypoint::BAD_CMD);
}

/// A launch entry whose first group covers logical `(c0,r0)..=(c1,r1)` and
/// runs `kernels` (entry per core, 0 for none) with per-core args.
fn launch_message(n: u32, rect: u32, kernels: [u32; 5]) -> Vec<u8> {
    let mut msg = std::vec![0u8; LAUNCH_ENTRY_SIZE as usize];
    LaunchHeader { seq: 40 + n }.write_to_prefix(&mut msg[..]).unwrap();
    let mut g = KernelGroup { rect, kernel_id: 9, ..Default::default() };
    for (i, &entry) in kernels.iter().enumerate() {
        // Core i's args: 2 unique words per tile from config word 10 * i,
        // one common word at config word 100 + i.
        g.kernels[i] = ProcessorKernel {
            entry,
            unique_count: 2,
            common_count: 1,
            unique_word: 10 * i as u16,
            common_word: 100 + i as u16,
        };
    }
    g.write_to_prefix(&mut msg[group_offset(0) as usize..]).unwrap();
    let next = group_offset(1) as usize;
    msg[next..next + 4].copy_from_slice(&NO_RECT.to_le_bytes());
    msg[LAUNCH_TAG as usize..].copy_from_slice(&n.to_le_bytes());
    msg
}

/// Runs BRISC's launch loop on worker `(col, row)` with launch
/// 1 in its ring; `done` lists the subordinates that finish as soon as
/// they are started. Returns the core, how it ended and the kernels BRISC
/// ran itself.
fn serve_one(col: u8, row: u8, rect: u32, kernels: [u32; 5], done: &[usize]) -> (FakeCore, End, Vec<(u32, KernelCtx)>) {
    let chip = FakeChip::new(1);
    let mut core = FakeCore::on(chip.worker(col, row), chip);
    core.set_l1(launch_entry(0, 1), &launch_message(1, rect, kernels));
    core.subordinates_finish = done.iter().map(|&i| 0xff << mailbox::run_sync_shift(i)).sum();
    let mut ran = Vec::new();
    let end = run_until_stopped(|| worker::serve(&mut core, |_, entry, ctx| ran.push((entry, *ctx))));
    (core, end, ran)
}

#[test]
fn a_launch_starts_its_subordinates_with_one_word_and_reports_done_once() {
    let kernels = [kernel_slot(0), kernel_slot(3), 0, kernel_slot(5), 0];
    // Tile (2, 1) is index 4 of the rectangle (1,0)..(3,1).
    let (core, end, ran) = serve_one(2, 1, pack_rect(1, 0, 3, 1), kernels, &[1, 3]);
    assert_eq!(end, End::Stuck);
    assert_eq!(waypoint_of(&core), waypoint::GOW, "done with launch 1, waiting for launch 2");
    // BRISC ran its own kernel with its own args.
    assert_eq!(ran.len(), 1);
    let (entry, ctx) = ran[0];
    assert_eq!((entry, ctx.processor, ctx.index, ctx.seq, ctx.kernel_id), (kernel_slot(0), 0, 4, 41, 9));
    assert_eq!(ctx.unique_addr, cqlab_abi::program::config_addr(0) + 4 * 2 * 4);
    assert_eq!((ctx.common_addr, ctx.common_count), (cqlab_abi::program::config_addr(100), 1));
    // NCRISC and TRISC1 were started, with one word, on the launch's group;
    // the others were not.
    let run = sub_run(&core);
    let go = RUN_SYNC_GO as u32;
    assert_eq!(run.sync, go | go << 16, "NCRISC's and TRISC1's bytes");
    assert_eq!((run.group, run.index, run.seq), (launch_entry(0, 1) + group_offset(0), 4, 41));
    // One done per tile: the dispatcher's per-entry and total counts.
    let d = FakeChip::new(1).dispatcher(0);
    assert_eq!(core.remote_sems[&(d, launch_done_sem(1))], 1);
    assert_eq!(core.remote_sems[&(d, sem::WORKERS_DONE)], 1);
}

#[test]
fn brisc_reports_done_only_once_its_subordinates_have() {
    let kernels = [0, kernel_slot(3), kernel_slot(4), 0, 0];
    let (core, end, ran) = serve_one(0, 0, pack_rect(0, 0, 7, 7), kernels, &[1]);
    assert_eq!((end, ran.len()), (End::Stuck, 0));
    assert_eq!(waypoint_of(&core), waypoint::SUBW, "TRISC0 has not finished launch 1");
    let go = RUN_SYNC_GO as u32;
    assert_eq!(sub_run(&core).sync, go | go << 8, "NCRISC and TRISC0 started");
    assert!(core.remote_sems.is_empty(), "no done before the subordinates'");

    // A tile outside every group still reports done, without running anything.
    let (core, end, ran) = serve_one(7, 7, pack_rect(0, 0, 1, 1), kernels, &[]);
    assert_eq!((end, ran.len()), (End::Stuck, 0));
    assert_eq!(sub_run(&core), SubordinateRun::default(), "no subordinate started");
    assert_eq!(core.remote_sems[&(FakeChip::new(1).dispatcher(0), sem::WORKERS_DONE)], 1);
}

#[test]
fn a_subordinate_runs_its_kernel_of_the_launch_brisc_starts_and_says_done() {
    let chip = FakeChip::new(1);
    let me = chip.worker(1, 1);
    let mut core = FakeCore::on(me, chip);
    let kernels = [kernel_slot(0), kernel_slot(3), 0, 0, kernel_slot(7)];
    core.set_l1(launch_entry(0, 1), &launch_message(1, pack_rect(1, 0, 3, 1), kernels));
    // BRISC started NCRISC and TRISC2 on the first group; this core is TRISC2.
    let go = RUN_SYNC_GO as u32;
    let run = SubordinateRun { sync: go | go << 24, group: launch_entry(0, 1) + group_offset(0), index: 4, seq: 41 };
    core.set_l1(mailbox::SUBORDINATE_RUN, run.as_bytes());
    let mut ran = Vec::new();
    let end = run_until_stopped(|| {
        worker::subordinate(&mut core, Processor::Trisc2, 0xbeef, |_, entry, ctx| ran.push((entry, *ctx)))
    });
    assert_eq!(end, End::Stuck, "waiting for the next go");
    let expected = KernelCtx {
        seq: 41,
        index: 4,
        unique_addr: config_addr(40) + 4 * 2 * 4,
        unique_count: 2,
        common_addr: config_addr(104),
        common_count: 1,
        rect: pack_rect(1, 0, 3, 1),
        kernel_id: 9,
        processor: 4,
        ..Default::default()
    };
    assert_eq!(ran, [(kernel_slot(7), expected)], "its own kernel and args, read from the group");
    assert_eq!(sub_run(&core).sync, go, "its byte cleared, NCRISC's untouched");
    let m = sub(&core, Processor::Trisc2);
    assert_eq!(
        (m.alive.magic, m.alive.firmware_id, m.alive.core_xy),
        (ALIVE_MAGIC, FirmwareId::WorkerTrisc2 as u32, me.packed())
    );
}

fn cfg() -> CqConfig {
    CqConfig {
        issue_size: 4096,
        completion_size: 1024,
        fetch_entries: 4,
        cmd_buffer_size: CHUNK_AREA.size,
        ring_page_size: 4096,
        ring_pages: 4,
        ..Default::default()
    }
}

/// Runs dispatcher `me` of `chip` with config `c` over `stream`, fed into
/// its ring as pages come back (`FakeCore::feed`), until it waits for more.
fn dispatch_fed(chip: FakeChip, me: Coord, c: CqConfig, stream: Vec<u8>) -> FakeCore {
    let mut core = FakeCore::on(me, chip);
    core.feed(stream, DISPATCH_RING.base, c.ring_page_size, c.ring_pages);
    let end = run_until_stopped(|| Dispatcher::new(&mut core, c).run());
    assert_eq!(end, End::Stuck);
    core
}

/// Runs a dispatcher over `build`'s dispatch commands.
fn dispatch(build: impl FnOnce(&mut DispatchWriter<'_>) -> Result<(), EncodeError>) -> (FakeCore, End) {
    dispatch_filled(build, usize::MAX)
}

/// [`dispatch`] with only the first `filled` bytes of the stream in the
/// ring (the prefetcher's count says so).
fn dispatch_filled(
    build: impl FnOnce(&mut DispatchWriter<'_>) -> Result<(), EncodeError>,
    filled: usize,
) -> (FakeCore, End) {
    dispatch_on(FakeChip::new(1), build, filled)
}

/// [`dispatch_filled`] on `chip` (its `NocMap` as the host wrote it).
fn dispatch_on(
    chip: FakeChip,
    build: impl FnOnce(&mut DispatchWriter<'_>) -> Result<(), EncodeError>,
    filled: usize,
) -> (FakeCore, End) {
    let (me, peer) = (chip.dispatcher(0), chip.prefetcher(0));
    let mut core = FakeCore::on(me, chip);
    let stream = dispatch_stream(build);
    core.set_l1(DISPATCH_RING.base, &stream);
    core.set_semaphore(sem::RING_UNITS_FILLED, stream.len().min(filled) as u32 / 16);
    let c = CqConfig { peer_xy: peer.packed(), ..cfg() };
    let end = run_until_stopped(|| Dispatcher::new(&mut core, c).run());
    (core, end)
}

fn error_code(core: &FakeCore) -> u32 {
    ErrorRecord::read_from_bytes(core.l1_bytes(ERROR, 64)).unwrap().code
}

#[test]
fn the_dispatcher_counts_launch_receivers_on_the_compute_grid() {
    let chip = FakeChip::new(1);
    let (first, last) = (chip.worker(0, 0), chip.worker(7, 7));
    let msg = launch_message(0, pack_rect(0, 0, 7, 7), [kernel_slot(0), 0, 0, 0, 0]);
    // The fake checks the receivers the dispatcher passes: all 64.
    let (core, end) = dispatch(|w| w.launch(NocAddr::multicast(first, last, 0), &msg));
    assert_eq!(end, End::Stuck);
    let tag = core.read_remote(NocAddr::unicast(chip.worker(3, 5), (launch_entry(0, 1) + LAUNCH_TAG) as u64), 4);
    assert_eq!(tag, 1u32.to_le_bytes(), "launch 1 reached a core inside the rectangle");

    // A rectangle reaching the dispatch cores (the row after the compute
    // grid on Wormhole, the column after it on Blackhole) is refused.
    let beyond = chip.dispatcher(0);
    let (core, end) = dispatch(|w| w.launch(NocAddr::multicast(first, beyond, 0), &msg));
    assert_eq!((end, error_code(&core)), (End::Halted, DeviceError::BadDestination as u32));
}

#[test]
fn the_dispatcher_refuses_packed_writes_to_cores_outside_the_compute_grid() {
    let chip = FakeChip::new(1);
    let ok = [chip.worker(0, 0), chip.worker(5, 2)];
    let (core, end) = dispatch(|w| w.write_packed(0xA1000, &ok, PackedData::Shared(&[7; 16])));
    assert_eq!(end, End::Stuck);
    assert_eq!(core.read_remote(NocAddr::unicast(ok[1], 0xA1000), 16), [7; 16]);
    // The prefetcher is a Tensix core, but not a compute core.
    let bad = [chip.worker(0, 0), chip.prefetcher(0)];
    let (core, end) = dispatch(|w| w.write_packed(0xA1000, &bad, PackedData::Shared(&[7; 16])));
    assert_eq!((end, error_code(&core)), (End::Halted, DeviceError::BadDestination as u32));
}

/// A unicast `WRITE_LINEAR` or `GO` goes only to memory the NOC map
/// names: a compute core's or a dispatcher's L1 (to its last byte) or a
/// DRAM bank. Anywhere else (no tile at (63,63); the prefetcher, which no
/// map names; bytes past L1, also where `SET_WRITE_OFFSET` moves them;
/// bits beyond the coordinates; host memory) the dispatcher halts before
/// writing anything, the record holding the command (the address in its
/// bytes 8..16) and the address's high and low words.
#[test]
fn unicast_writes_and_gos_reach_only_memory_the_noc_map_names() {
    let chip = FakeChip::new(1);
    let l1 = crate::CHIP.l1_size as u64;
    let signal = 0x1234_5678u32;
    let mut landed = signal.to_le_bytes().to_vec();
    landed.extend([9; 12]);
    let good = [
        NocAddr::unicast(chip.worker(7, 7), l1 - 16),
        NocAddr::unicast(chip.dispatcher(0), mailbox::last_event(0) as u64),
        chip.dram(2, 0x8000),
    ];
    for dst in good {
        let (core, end) = dispatch(|w| {
            w.write_linear(dst, &[9; 16])?;
            w.go(signal, dst)
        });
        assert_eq!((end, core.read_remote(dst, 16)), (End::Stuck, landed.clone()), "{dst:x?}");
    }

    let worker = NocAddr::unicast(chip.worker(3, 2), 0xA1000);
    let bad = [
        (NocAddr::unicast(Coord::new(63, 63), 0x1000), "no tile"),
        (NocAddr::unicast(chip.prefetcher(0), 0xA1000), "a core the map does not name"),
        (worker.with_local(l1), "past L1"),
        (worker.with_flags(cqlab_abi::noc::BH_PCIE_FLAG), "a flag set"),
        (chip.host(0x10000), "host memory"),
    ];
    let refused = |core: &FakeCore, end: End, dst: NocAddr, at: u32, what: &str| {
        let rec = ErrorRecord::read_from_bytes(core.l1_bytes(ERROR, 64)).unwrap();
        assert_eq!((end, rec.code, rec.addr), (End::Halted, DeviceError::BadDestination as u32, at), "{what}");
        assert_eq!((rec.value, rec.wr_ptr), ((dst.0 >> 32) as u32, dst.0 as u32), "{what}");
        assert_eq!(core.writes, 0, "{what}: nothing written");
    };
    for (dst, what) in bad {
        let (core, end) = dispatch(|w| w.write_linear(dst, &[9; 16]));
        refused(&core, end, dst, DISPATCH_RING.base, what);
        assert_eq!(&core.l1_bytes(DISPATCH_RING.base, 16)[8..], &dst.0.to_le_bytes(), "{what}");
        let (core, end) = dispatch(|w| w.go(signal, dst));
        refused(&core, end, dst, DISPATCH_RING.base, what);
    }
    // 16 bytes ending one past L1; a GO's 4 bytes there fit, one word on not.
    let (core, end) = dispatch(|w| w.write_linear(worker.with_local(l1 - 8), &[9; 16]));
    refused(&core, end, worker.with_local(l1 - 8), DISPATCH_RING.base, "8 bytes past L1");
    let (core, end) = dispatch(|w| w.go(signal, worker.with_local(l1 - 4)));
    assert_eq!((end, core.read_remote(worker.with_local(l1 - 4), 4)), (End::Stuck, signal.to_le_bytes().to_vec()));
    // A write offset moving a good address past L1, as the command after it.
    let (core, end) = dispatch(|w| {
        w.set_write_offset((l1 - 0xA1000) as u32)?;
        w.write_linear(worker, &[9; 16])
    });
    refused(&core, end, worker.with_local(l1), DISPATCH_RING.base + 16, "offset past L1");
}

/// A grid whose columns reach 32 does not fit the dispatcher's two grid
/// words (no board's does): a packed write's destinations are then
/// checked one by one on the masks, to the same outcomes. Here the
/// first compute column is renamed 40.
#[test]
fn a_grid_past_coordinate_31_still_has_its_packed_destinations_checked() {
    let moved = |chip: &mut FakeChip| chip.map.grid.x[0] = 40;
    let mut chip = FakeChip::new(1);
    moved(&mut chip);
    let dests: Vec<Coord> = (0..6).map(|c| chip.worker(c, 1)).collect();
    assert_eq!(dests[0].x, 40);
    let (core, end) = dispatch_on(chip, |w| w.write_packed(0xA1000, &dests, PackedData::Shared(&[7; 16])), usize::MAX);
    assert_eq!(end, End::Stuck);
    for &d in &dests {
        assert_eq!(core.read_remote(NocAddr::unicast(d, 0xA1000), 16), [7; 16], "{d:?}");
    }
    // The column's old coordinate is no compute core now.
    let mut chip = FakeChip::new(1);
    let old = chip.worker(0, 1);
    moved(&mut chip);
    let bad = [chip.worker(1, 1), old];
    let (core, end) = dispatch_on(chip, |w| w.write_packed(0xA1000, &bad, PackedData::Shared(&[7; 16])), usize::MAX);
    let rec = ErrorRecord::read_from_bytes(core.l1_bytes(ERROR, 64)).unwrap();
    assert_eq!(
        (end, rec.code, rec.value, rec.wr_ptr),
        (End::Halted, DeviceError::BadDestination as u32, old.packed(), 1)
    );
    assert_eq!(core.read_remote(NocAddr::unicast(bad[0], 0xA1000), 16), [0; 16], "no core is written");
}

/// The dispatcher checks a packed write's destinations four at a time:
/// whichever of nine is bad (in the first or second four, or the one left
/// over), alone or before another, the first bad one is the one reported
/// (its address, word and index), and no core is written. A word with bits
/// set beyond the two coordinates (x 64 + a compute column) is no compute
/// core either.
#[test]
fn a_packed_write_reports_its_first_bad_destination_wherever_it_is() {
    let chip = FakeChip::new(1);
    let good: Vec<Coord> = (0..9).map(|c| chip.worker(c % 8, c / 8)).collect();
    let col0 = chip.worker(0, 0);
    // Alone, before another in its own four (or the one left over), before
    // the one left over.
    let cases: Vec<(usize, Option<usize>)> = (0..9)
        .flat_map(|k| [(k, None), (k, Some(k | 3)), (k, Some(8))])
        .filter(|&(k, also)| also.is_none_or(|j| j > k && j < 9))
        .collect();
    for bad in [chip.prefetcher(0), Coord::new(col0.x | 0x40, col0.y)] {
        for &(k, also) in &cases {
            let mut dests = good.clone();
            dests[k] = bad;
            if let Some(j) = also {
                dests[j] = chip.prefetcher(0);
            }
            let (core, end) = dispatch(|w| w.write_packed(0xA1000, &dests, PackedData::Shared(&[7; 16])));
            let rec = ErrorRecord::read_from_bytes(core.l1_bytes(ERROR, 64)).unwrap();
            assert_eq!((end, rec.code), (End::Halted, DeviceError::BadDestination as u32), "{bad:?} at {k}");
            let word = DISPATCH_RING.base + 16 + 4 * k as u32;
            assert_eq!((rec.addr, rec.value, rec.wr_ptr), (word, bad.packed(), k as u32), "{bad:?} at {k}");
            for &d in good.iter() {
                assert_eq!(core.read_remote(NocAddr::unicast(d, 0xA1000), 16), [0; 16], "{bad:?} at {k}: {d:?}");
            }
        }
    }
}

/// A packed write with a block a core: each core gets its own, whether
/// every block is in the ring when the command starts (one write a core
/// from the ring, `noc_write_each`) or they arrive later (the blocks in the
/// ring whole go so, a block partly there is streamed as it arrives, the
/// next waits). Blocks of 40 bytes, padded to 48 in the ring: a write that
/// stepped through the ring by the length rather than the padded stride
/// would give a core bytes of another's.
#[test]
fn a_packed_write_gives_each_core_its_own_block_whether_or_not_all_have_arrived() {
    let chip = FakeChip::new(1);
    let cores = [chip.worker(0, 0), chip.worker(5, 2), chip.worker(7, 7)];
    let blocks: Vec<u8> = (0..3u8).flat_map(|i| [i + 1; 40]).collect();
    let write = |w: &mut DispatchWriter<'_>| w.write_packed(0xA1000, &cores, PackedData::PerCore(&blocks));
    let got = |core: &FakeCore, i: usize| core.read_remote(NocAddr::unicast(cores[i], 0xA1000), 48);
    let block = |i: u8| -> Vec<u8> { [i + 1; 40].into_iter().chain([0; 8]).collect() };
    let (core, end) = dispatch(write);
    assert_eq!((end, core.write_each_calls), (End::Stuck, 1), "one write a core from the ring");
    for i in 0..3 {
        assert_eq!(got(&core, i), block(i as u8), "core {i}");
    }
    // Header, the table (three words padded to 16) and two blocks in the ring.
    let (core, end) = dispatch_filled(write, 16 + 16 + 2 * 48);
    assert_eq!((end, core.write_each_calls), (End::Stuck, 1), "the two blocks there in one go");
    assert_eq!((got(&core, 0), got(&core, 1)), (block(0), block(1)));
    assert_eq!(got(&core, 2), [0; 48], "its block has not arrived");
    // One block and the first 32 bytes of the next.
    let (core, end) = dispatch_filled(write, 16 + 16 + 48 + 32);
    assert_eq!((end, core.write_each_calls), (End::Stuck, 1), "the whole block in one go");
    assert_eq!(got(&core, 0), block(0));
    let first_32: Vec<u8> = block(1)[..32].iter().copied().chain([0; 16]).collect();
    assert_eq!(got(&core, 1), first_32, "what has arrived of its block, streamed");
    assert_eq!(got(&core, 2), [0; 48], "its block has not arrived");
}

/// A linear write of `linear_len` bytes, then a packed write of a 48-byte
/// block to each of `n` cores, fed through a ring of `cfg()` as its pages
/// are returned: the linear write lands whole and every core gets its own
/// block.
fn linear_then_packed_land_whole(n: u8, linear_len: usize) {
    let chip = FakeChip::new(1);
    let (me, peer) = (chip.dispatcher(0), chip.prefetcher(0));
    let cores: Vec<Coord> = (0..n).map(|c| chip.worker(c, 0)).collect();
    let c = CqConfig { peer_xy: peer.packed(), ..cfg() };
    let linear: Vec<u8> = (0..linear_len).map(|i| i as u8).collect();
    let blocks: Vec<u8> = (0..n).flat_map(|i| [i + 1; 48]).collect();
    let stream = dispatch_stream(|w| {
        w.write_linear(NocAddr::unicast(cores[0], 0xB0000), &linear)?;
        w.write_packed(0xA1000, &cores, PackedData::PerCore(&blocks))
    });
    let core = dispatch_fed(chip, me, c, stream);
    assert_eq!(core.read_remote(NocAddr::unicast(cores[0], 0xB0000), linear.len()), linear);
    for (i, &d) in cores.iter().enumerate() {
        assert_eq!(core.read_remote(NocAddr::unicast(d, 0xA1000), 48), [i as u8 + 1; 48], "core {i}");
    }
}

/// The ring of `cfg()`, in bytes.
fn ring_bytes() -> usize {
    (cfg().ring_page_size * cfg().ring_pages) as usize
}

/// A packed write whose destination table wraps the ring's end: a linear
/// write of a ring less two units first, so the packed write's header is the
/// ring's last unit but one and its table (eight cores) runs from the last
/// unit into the first.
#[test]
fn a_packed_write_whose_table_wraps_the_ring_gives_each_core_its_own_block() {
    let linear = ring_bytes() - 48;
    // The linear write's header and data, then the packed write's header:
    // its table starts 16 bytes before the ring's end.
    assert_eq!(16 + linear + 16, ring_bytes() - 16);
    linear_then_packed_land_whole(8, linear);
}

/// A packed write whose second block wraps the ring's end: the first block
/// goes straight from the ring, the second is streamed in its two pieces,
/// the third goes from the ring's start.
#[test]
fn a_packed_write_whose_block_wraps_the_ring_gives_each_core_its_own_block() {
    let linear = ring_bytes() - 112;
    // The linear write's header and data, the packed write's header and
    // table (three words), its first block: the second starts 16 bytes
    // before the end.
    assert_eq!(16 + linear + 16 + 16 + 48, ring_bytes() - 16);
    linear_then_packed_land_whole(3, linear);
}

/// On a ring of eight 4 KiB pages the dispatcher returns finished pages two
/// at a time (a quarter of the ring: each return costs an atomic and a
/// trace record) while it goes on, and the rest, one, before it waits for
/// more: 46 linear writes of 1 KiB with their headers, eleven and a half
/// pages, fed in as pages come back. A ring of small pages (256 bytes)
/// gets each write's pages back as soon as they are finished, never a
/// quarter of the ring.
#[test]
fn the_dispatcher_returns_ring_pages_a_quarter_of_the_ring_at_a_time() {
    let chip = FakeChip::new(1);
    let (me, peer, dst) = (chip.dispatcher(0), chip.prefetcher(0), chip.worker(3, 1));
    let c = CqConfig { peer_xy: peer.packed(), ring_pages: 8, ..cfg() };
    let data = |i: usize| [i as u8; 1024 - 16];
    let at = |i: usize| NocAddr::unicast(dst, 0xB0000 + 1024 * i as u64);
    let stream = dispatch_stream(|w| (0..46).try_for_each(|i| w.write_linear(at(i), &data(i))));
    assert_eq!(stream.len(), 46 * 1024);
    let core = dispatch_fed(chip, me, c, stream);
    for i in 0..46 {
        assert_eq!(core.read_remote(at(i), 1024 - 16), data(i), "write {i}");
    }
    assert_eq!(core.pages_returned, [2, 2, 2, 2, 2, 1]);

    // Through a ring of 64 pages of 256 bytes, each 1 KiB write's pages go
    // back as soon as its writes have left, never a quarter of the ring.
    let c = CqConfig { ring_page_size: 256, ring_pages: 64, ..c };
    let stream = dispatch_stream(|w| (0..46).try_for_each(|i| w.write_linear(at(i), &data(i))));
    let core = dispatch_fed(FakeChip::new(1), me, c, stream);
    assert_eq!(core.pages_returned.iter().sum::<u32>(), 46 * 4);
    assert!(core.pages_returned.iter().all(|&n| n <= 4), "{:?}", core.pages_returned);
}

#[test]
fn the_dispatcher_counts_receivers_again_when_the_rectangle_changes() {
    let chip = FakeChip::new(1);
    let (first, last) = (chip.worker(0, 0), chip.worker(7, 7));
    let (all, part) = (NocAddr::multicast(first, last, 0xA1000), NocAddr::multicast(first, chip.worker(2, 3), 0xA1000));
    let msg = launch_message(0, pack_rect(0, 0, 7, 7), [kernel_slot(0), 0, 0, 0, 0]);
    // The fake checks the receivers of each: 64, 12, 64 (the rectangle
    // seen two writes back), 12, then the launch's 64.
    let (core, end) = dispatch(|w| {
        for (i, dst) in [all, part, all, part].into_iter().enumerate() {
            w.write_linear(dst.offset(16 * i as u64), &[i as u8; 16])?;
        }
        w.launch(NocAddr::multicast(first, last, 0), &msg)
    });
    assert_eq!(end, End::Stuck);
    assert_eq!(core.read_remote(NocAddr::unicast(last, 0xA1000 + 32), 16), [2; 16]);

    // A unicast launch is refused, as the first command and after a
    // multicast to its own core.
    let (core, end) = dispatch(|w| w.launch(NocAddr(0), &msg));
    assert_eq!((end, error_code(&core)), (End::Halted, DeviceError::BadDestination as u32));
    let (core, end) = dispatch(|w| {
        w.write_linear(NocAddr::multicast(first, first, 0xA1000), &[1; 16])?;
        w.launch(NocAddr::unicast(first, 0), &msg)
    });
    assert_eq!((end, error_code(&core)), (End::Halted, DeviceError::BadDestination as u32));
}
