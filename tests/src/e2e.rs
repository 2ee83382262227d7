//! The end-to-end command-queue tests, one function per test, run on every backend by the
//! test binaries (`cq_e2e` on the embedded simulator, `cq_e2e_ttkmd` through the tt-kmd backend
//! against the simulator). Each names its seed; a failure prints it.

use crate::{boot_on, Kind, TestChip};
use cqlab_driver::geometry::TopologyError;
use cqlab_driver::{CoreRange, Device, DriverError};

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt)).collect()
}

/// The compute grid's last core.
fn last_core(dev: &Device) -> (u8, u8) {
    (dev.chip().cols() - 1, dev.chip().rows() - 1)
}

/// Logical core number `i` of the compute grid, row by row.
fn core(dev: &Device, i: u32) -> (u8, u8) {
    let cols = dev.chip().cols() as u32;
    ((i % cols) as u8, (i / cols % dev.chip().rows() as u32) as u8)
}

/// Every test of this module, by name.
#[macro_export]
macro_rules! every_e2e_test {
    ($m:ident) => {
        $m!(
            boot_brings_every_core_alive,
            l1_write_then_read_back,
            paged_dram_write_then_read_back_across_banks,
            noop_launch_on_all_workers_finishes,
            events_order_work_across_two_queues,
            non_blocking_reads_complete_later_in_order,
            completion_queue_wraps_many_times,
            trace_replays_a_thousand_times,
            out_of_range_buffers_are_rejected_before_reaching_the_device,
            no_enqueue_depth_deadlocks_with_tiny_queues,
            two_queues_ping_pong_with_events,
            packed_writes_reach_every_core,
            linear_writes_to_one_dram_bank_land_byte_exact,
            rebooting_a_used_device_starts_clean,
            program_streams_leave_every_store_of_the_last_writer
        );
    };
}

pub fn boot_brings_every_core_alive(kind: Kind, chip: &TestChip) {
    let _dev = boot_on(kind, chip, 1, |_| {});
}

pub fn l1_write_then_read_back(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 2, |_| {});
    let (c, r) = last_core(&dev);
    let buf = dev.alloc_l1(c, r, 1000).unwrap();
    let data = pattern(1000, 1);
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &data).unwrap();
    assert_eq!(cq.read_buffer(&buf, 0, 1000).unwrap(), data, "seed 2");
}

pub fn paged_dram_write_then_read_back_across_banks(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 3, |_| {});
    let buf = dev.alloc_dram(64 * 1024, 2048).unwrap();
    let data = pattern(64 * 1024, 7);
    let mut cq = dev.cq(1).unwrap();
    cq.write_buffer(&buf, 0, &data).unwrap();
    assert_eq!(cq.read_buffer(&buf, 0, 64 * 1024).unwrap(), data, "seed 3");
    assert_eq!(cq.read_buffer(&buf, 4096, 2048).unwrap(), &data[4096..6144], "seed 3: one page");
}

pub fn noop_launch_on_all_workers_finishes(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 4, |_| {});
    let grid = dev.chip().grid();
    let mut cq = dev.cq(0).unwrap();
    for _ in 0..5 {
        cq.launch(grid, &[1, 2, 3]).unwrap();
    }
    cq.finish().unwrap();
}

pub fn events_order_work_across_two_queues(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 5, |_| {});
    let buf = dev.alloc_l1(0, 0, 256).unwrap();
    let first = pattern(256, 1);
    let second = pattern(256, 2);
    let ev = {
        let mut cq0 = dev.cq(0).unwrap();
        cq0.write_buffer(&buf, 0, &first).unwrap();
        cq0.record_event().unwrap()
    };
    let mut cq1 = dev.cq(1).unwrap();
    cq1.wait_for_event(ev).unwrap();
    assert_eq!(cq1.read_buffer(&buf, 0, 256).unwrap(), first, "seed 5: CQ1 read after CQ0's event");
    cq1.write_buffer(&buf, 0, &second).unwrap();
    let ev1 = cq1.record_event().unwrap();
    dev.event_synchronize(ev1).unwrap();
    assert!(dev.event_query(ev).unwrap());
    assert_eq!(dev.cq(0).unwrap().read_buffer(&buf, 0, 256).unwrap(), second, "seed 5");
}

pub fn non_blocking_reads_complete_later_in_order(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 6, |_| {});
    let cores: Vec<_> = (0..4).map(|i| core(&dev, i)).collect();
    let bufs: Vec<_> = cores.iter().map(|&(c, r)| dev.alloc_l1(c, r, 512).unwrap()).collect();
    let mut cq = dev.cq(0).unwrap();
    for (i, b) in bufs.iter().enumerate() {
        cq.write_buffer(b, 0, &pattern(512, i as u8)).unwrap();
    }
    let pending: Vec<_> = bufs.iter().map(|b| cq.enqueue_read(b, 0, 512).unwrap()).collect();
    for (i, p) in pending.iter().enumerate().rev() {
        assert_eq!(dev.complete_read(p).unwrap(), pattern(512, i as u8), "seed 6");
    }
}

pub fn completion_queue_wraps_many_times(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 7, |c| c.completion_size = 2048);
    let buf = dev.alloc_l1(1, 1, 480).unwrap();
    let mut cq = dev.cq(0).unwrap();
    for round in 0..60u8 {
        let data = pattern(480, round);
        cq.write_buffer(&buf, 0, &data).unwrap();
        assert_eq!(cq.read_buffer(&buf, 0, 480).unwrap(), data, "seed 7 round {round}");
    }
    // 60 records of 512 bytes through a 2 KiB ring: 15 wraps.
}

pub fn trace_replays_a_thousand_times(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 8, |_| {});
    let buf = dev.alloc_l1(2, 2, 64).unwrap();
    let (c, r) = last_core(&dev);
    let range = CoreRange::new((0, 0), (c.min(3), r.min(3)));
    let mut cq = dev.cq(0).unwrap();
    cq.begin_trace().unwrap();
    cq.launch(range, &[]).unwrap();
    cq.write_buffer(&buf, 0, &[0xAB; 64]).unwrap();
    let trace = cq.end_trace().unwrap();
    for _ in 0..1000 {
        cq.execute_trace(&trace).unwrap();
    }
    cq.finish().unwrap();
    assert_eq!(cq.read_buffer(&buf, 0, 64).unwrap(), vec![0xAB; 64], "seed 8");
}

pub fn out_of_range_buffers_are_rejected_before_reaching_the_device(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 9, |_| {});
    let buf = dev.alloc_l1(0, 0, 100).unwrap();
    let mut cq = dev.cq(0).unwrap();
    assert!(matches!(cq.write_buffer(&buf, 90, &[0; 20]), Err(DriverError::OutOfRange { .. })));
    assert!(matches!(cq.read_buffer(&buf, 0, 0), Err(DriverError::OutOfRange { .. })));
    let cols = dev.chip().cols();
    let mut cq = dev.cq(0).unwrap();
    let e = cq.launch(CoreRange::new((0, 0), (cols, 0)), &[]);
    assert!(matches!(e, Err(DriverError::Chip(TopologyError::OffGrid { .. }))), "{e:?}");
    assert!(dev.cq(2).is_err());
}

pub fn no_enqueue_depth_deadlocks_with_tiny_queues(kind: Kind, chip: &TestChip) {
    // Queues shrunk so the fetch queue, issue queue and completion queue all
    // fill and wrap many times; the host drains completions while it waits.
    let mut dev = boot_on(kind, chip, 10, |c| {
        c.fetch_entries = 4;
        c.issue_size = 4096;
        c.completion_size = 1024;
    });
    let (c, r) = last_core(&dev);
    let buf = dev.alloc_l1(c, r, 64).unwrap();
    let cols = dev.chip().cols() as u32;
    let depths: &[u32] = match kind {
        Kind::Embedded => &[1, 3, 10, 30, 100, 300, 1000, 3000, 10_000],
        // A socket round trip per BAR access, or no idle fast-forward: the shallower depths
        // already fill and wrap every queue many times.
        Kind::TtKmdSim | Kind::Daemon { .. } => &[1, 3, 10, 30, 100, 300],
        // As fast as embedded, but the suite's time is kept small: the deep runs are embedded's.
        Kind::TtSim => &[1, 3, 10, 30, 100, 300],
    };
    for &depth in depths {
        let mut cq = dev.cq(0).unwrap();
        for i in 0..depth {
            cq.launch(CoreRange::single((i % cols) as u8, 0), &[i]).unwrap();
            if i % 97 == 0 {
                cq.record_event().unwrap(); // completion records pile up too
            }
        }
        cq.write_buffer(&buf, 0, &[depth as u8; 64]).unwrap();
        cq.finish().unwrap();
        assert_eq!(cq.read_buffer(&buf, 0, 64).unwrap(), vec![depth as u8; 64], "seed 10 depth {depth}");
    }
}

pub fn two_queues_ping_pong_with_events(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 14, |_| {});
    let (c, r) = last_core(&dev);
    let buf = dev.alloc_l1(c, r, 16).unwrap();
    let mut last = None;
    for round in 0..50u8 {
        let (me, other) = if round % 2 == 0 { (0, 1) } else { (1, 0) };
        let mut cq = dev.cq(me).unwrap();
        if let Some(ev) = last {
            cq.wait_for_event(ev).unwrap();
        }
        cq.write_buffer(&buf, 0, &[round; 16]).unwrap();
        last = Some(cq.record_event().unwrap());
        let _ = other;
    }
    dev.event_synchronize(last.unwrap()).unwrap();
    assert_eq!(dev.cq(0).unwrap().read_buffer(&buf, 0, 16).unwrap(), vec![49; 16], "seed 14");
}

pub fn packed_writes_reach_every_core(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 15, |_| {});
    let n = dev.chip().worker_count();
    let cores: Vec<(u8, u8)> = (0..n).map(|i| core(&dev, i)).collect();
    let bufs: Vec<_> = cores.iter().map(|&(c, r)| dev.alloc_l1(c, r, 48).unwrap()).collect();
    let cqlab_driver::Placement::L1 { addr, .. } = bufs[0].placement else { unreachable!() };
    let per_core: Vec<u8> = (0..n as usize * 48).map(|i| (i / 48) as u8 ^ (i % 48) as u8).collect();
    let mut cq = dev.cq(0).unwrap();
    cq.write_packed(addr, &cores, cqlab_driver::PackedData::PerCore(&per_core)).unwrap();
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(cq.read_buffer(b, 0, 48).unwrap(), &per_core[i * 48..(i + 1) * 48], "seed 15 core {i}");
    }
    cq.write_packed(addr, &cores, cqlab_driver::PackedData::Shared(&[0x42; 48])).unwrap();
    for b in bufs.iter().step_by(9) {
        assert_eq!(cq.read_buffer(b, 0, 48).unwrap(), vec![0x42; 48], "seed 15 shared");
    }
}

pub fn linear_writes_to_one_dram_bank_land_byte_exact(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 16, |_| {});
    let data = pattern(3000, 5);
    // Bank 5's worker endpoint, at its view's offset in its channel.
    let dst = dev.chip().dram_addr(5, 0x10_0000);
    let mut buf = vec![0u8; 4096];
    let mut enc = cqlab_abi::encode::Encoder::new(&mut buf);
    enc.relay_inline(true, |w| w.write_linear(dst, &data)).unwrap();
    let n = enc.len();
    let mut cq = dev.cq(0).unwrap();
    cq.enqueue_raw(&buf[..n], false).unwrap();
    cq.finish().unwrap();
    let mut back = vec![0u8; 3000];
    dev.backend().read(dst, &mut back).unwrap();
    assert_eq!(back, data, "seed 16");
}

pub fn rebooting_a_used_device_starts_clean(kind: Kind, chip: &TestChip) {
    // Semaphores survive soft reset; boot must clear them (stale ring credits
    // and completion counts would otherwise wedge the new firmware).
    let mut dev = boot_on(kind, chip, 17, |_| {});
    let buf = dev.alloc_l1(1, 2, 4096).unwrap();
    let grid = dev.chip().grid();
    for round in 0..2u8 {
        let mut cq = dev.cq(0).unwrap();
        for _ in 0..20 {
            cq.write_buffer(&buf, 0, &[round; 4096]).unwrap();
            cq.launch(grid, &[]).unwrap();
        }
        assert_eq!(cq.read_buffer(&buf, 0, 4096).unwrap(), vec![round; 4096], "seed 17 round {round}");
        dev.boot().unwrap();
    }
}

/// Random program streams (`workloads::program_stream`: uploads, args,
/// traces, read-backs, cross-queue events on both queues), every store and
/// read-back checked: the program path through each backend's BAR, sysmem
/// and doorbells.
pub fn program_streams_leave_every_store_of_the_last_writer(kind: Kind, chip: &TestChip) {
    let mut dev = boot_on(kind, chip, 15, |_| {});
    if let Err(e) = cqlab_workloads::program_stream::run(&mut dev, 15, 120) {
        panic!("seed 15: {e}");
    }
}
