//! Slow dispatch: the same API with no CQ firmware, the host driving workers
//! through the BAR, on a Wormhole and a Blackhole.

use cqlab_driver::error::StateError;
use cqlab_driver::{CoreRange, DriverError, Placement};
use cqlab_tests::{booted, on_both_chips};

on_both_chips! {
    fn slow_dispatch_writes_reads_launches_and_orders_like_fast_dispatch(chip) {
        let mut dev = booted(chip, 41, |c| {
            c.slow_dispatch = true;
            c.worker_kernel = "spin".into();
        });
        let (cols, rows) = (dev.chip().cols(), dev.chip().rows());
        let (c, r) = (cols - 1, rows - 1);
        let l1 = dev.alloc_l1(c, r, 16).unwrap();
        let dram = dev.alloc_dram(10_000, 1024).unwrap();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
        let Placement::L1 { addr, .. } = l1.placement else { unreachable!() };
        let mut cq = dev.cq(0).unwrap();
        cq.write_buffer(&dram, 0, &data).unwrap();
        assert_eq!(cq.read_buffer(&dram, 1000, 5000).unwrap(), &data[1000..6000], "{} seed 41", chip.name());
        for round in 1..=3u32 {
            cq.launch(CoreRange::single(c, r), &[5_000, addr, round]).unwrap();
            cq.launch(CoreRange::new((0, 0), (cols - 1, 0)), &[100]).unwrap();
            // The read waits for the kernel's result, as with fast dispatch.
            let got = cq.read_buffer(&l1, 0, 4).unwrap();
            assert_eq!(got, round.to_le_bytes(), "{} seed 41 round {round}", chip.name());
        }
        let ev = cq.record_event().unwrap();
        dev.event_synchronize(ev).unwrap();
        let mut cq = dev.cq(0).unwrap();
        assert!(matches!(cq.begin_trace(), Err(DriverError::State(StateError::NeedsFastDispatch { what: "traces" }))));
        assert!(matches!(
            cq.enqueue_raw(&[0; 64], false),
            Err(DriverError::State(StateError::NeedsFastDispatch { what: "raw command chunks" }))
        ));
        cq.finish().unwrap();
    }

    /// Each queue's launch ring counts its own launches: launches alternating
    /// between two queues all run (a tag counted across queues left a gap in
    /// each ring, and the workers waited for the missing tag forever; found by
    /// the slow-dispatch program streams).
    fn slow_dispatch_launches_alternating_between_queues_all_run(chip) {
        let mut dev = booted(chip, 43, |c| {
            c.slow_dispatch = true;
            c.num_cqs = 2;
            c.worker_kernel = "spin".into();
        });
        let (a, b) = (dev.alloc_l1(1, 1, 16).unwrap(), dev.alloc_l1(1, 1, 16).unwrap());
        let (Placement::L1 { addr: at_a, .. }, Placement::L1 { addr: at_b, .. }) = (a.placement, b.placement) else {
            unreachable!()
        };
        for round in 1..=4u32 {
            dev.cq(1).unwrap().launch(CoreRange::single(1, 1), &[50, at_b, round]).unwrap();
            dev.cq(0).unwrap().launch(CoreRange::single(1, 1), &[50, at_a, round]).unwrap();
        }
        assert_eq!(dev.cq(0).unwrap().read_buffer(&a, 0, 4).unwrap(), 4u32.to_le_bytes());
        assert_eq!(dev.cq(1).unwrap().read_buffer(&b, 0, 4).unwrap(), 4u32.to_le_bytes());
    }
}
