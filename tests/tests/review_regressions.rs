//! Regressions for protocol bugs a review found (each reproduced before the
//! fix), on a Wormhole and a Blackhole.

use cqlab_driver::geometry::Topology;
use cqlab_driver::{CoreRange, Device, DeviceConfig, DriverError, PackedData, Placement};
use cqlab_sim::config::{SimConfig, SlowCore};
use cqlab_tests::{booted, on_both_chips};

on_both_chips! {
    fn long_runs_of_header_only_commands_do_not_starve_the_ring(chip) {
        // The dispatcher returned pages only after payloads: 200 DELAYs (16 bytes
        // each) through a 1 KiB ring deadlocked at DAPW/UAPW.
        let mut dev = booted(chip, 51, |c| (c.ring_page_size, c.ring_pages) = (256, 4));
        let mut cq = dev.cq(0).unwrap();
        for _ in 0..200 {
            cq.delay(1).unwrap();
        }
        let ev = cq.record_event().unwrap();
        let mut cq1 = dev.cq(1).unwrap();
        for _ in 0..200 {
            cq1.wait_for_event(ev).unwrap();
        }
        cq1.finish().unwrap();
        dev.cq(0).unwrap().finish().unwrap();
    }

    fn shared_packed_blocks_near_the_ring_size_work_or_are_refused_up_front(chip) {
        let mut dev = booted(chip, 52, |c| (c.ring_page_size, c.ring_pages) = (256, 4));
        // Four cores, row by row.
        let cols = dev.chip().cols();
        let cores: Vec<(u8, u8)> = (0..4).map(|i| (i % cols, i / cols)).collect();
        let bufs: Vec<_> = cores.iter().map(|&(c, r)| dev.alloc_l1(c, r, 704).unwrap()).collect();
        let Placement::L1 { addr, .. } = bufs[0].placement else { unreachable!() };
        let mut cq = dev.cq(0).unwrap();
        let data = vec![0x3c; 700];
        cq.write_packed(addr, &cores, PackedData::Shared(&data)).unwrap();
        for b in &bufs {
            assert_eq!(cq.read_buffer(b, 0, 700).unwrap(), data, "seed 52");
        }
        let err = cq.write_packed(addr, &cores, PackedData::Shared(&[1; 1000])).unwrap_err();
        assert!(matches!(err, DriverError::Invalid(_)), "{err}");
        cq.finish().unwrap();
    }

    fn a_trace_replay_waits_for_cores_still_starting_earlier_launches(chip) {
        // With worker (0,0) slowed 5000x, a trace's launch overwrote the launch
        // message of a core that had not yet started the previous one.
        let cfg = DeviceConfig { stall_timeout_cycles: 50_000_000, ..cqlab_tests::config(chip) };
        let topology = Topology::for_board(chip.board, cfg.harvesting.clone(), cfg.num_cqs).unwrap();
        let mut sim = SimConfig { seed: 53, ..chip.sim(53) };
        sim.faults.slow_cores = vec![SlowCore { core: topology.worker(0, 0).unwrap(), factor: 5000.0 }];
        let mut dev = Device::embedded(sim, cfg).unwrap();
        dev.boot().unwrap();
        let mut cq = dev.cq(0).unwrap();
        cq.begin_trace().unwrap();
        cq.launch(CoreRange::single(0, 0), &[]).unwrap();
        let trace = cq.end_trace().unwrap();
        cq.finish().unwrap();
        cq.launch(CoreRange::single(0, 0), &[]).unwrap();
        cq.execute_trace(&trace).unwrap();
        cq.finish().unwrap();
    }

    fn reads_whose_pages_cannot_fit_the_completion_queue_are_refused_on_the_host(chip) {
        let mut dev = booted(chip, 54, |c| c.completion_size = 1024);
        let buf = dev.alloc_dram(8192, 2048).unwrap();
        let mut cq = dev.cq(0).unwrap();
        let err = cq.read_buffer(&buf, 0, 2048).unwrap_err();
        assert!(err.to_string().contains("does not fit one record"), "{err}");
        cq.finish().unwrap(); // the device is still fine
    }

    fn partial_page_reads_return_exactly_the_bytes_asked_for(chip) {
        let mut dev = booted(chip, 55, |_| {});
        let buf = dev.alloc_dram(4096, 1024).unwrap();
        let data: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        let mut cq = dev.cq(0).unwrap();
        cq.write_buffer(&buf, 0, &data).unwrap();
        let pending = cq.enqueue_read(&buf, 1024, 1500).unwrap();
        assert_eq!(dev.complete_read(&pending).unwrap(), &data[1024..2524], "seed 55");
    }
}

on_both_chips! {
    /// A device rebooted the moment a read-back returns still runs: the
    /// acks of the old dispatcher's last writes to host memory may still be
    /// on their way, and the new firmware, which starts its write count
    /// from its NIU's counters, must not count them. (The boot flushes its
    /// posted loads with a read-back before it releases a core; without it
    /// the simulator released the new dispatcher before those acks landed
    /// and its first launch waited for writes forever, at NWW, on Blackhole.)
    fn a_reboot_right_after_a_read_back_leaves_a_device_that_runs(chip) {
        let mut dev = booted(chip, 17, |c| c.stall_timeout_cycles = 2_000_000);
        let buf = dev.alloc_l1(1, 2, 4096).unwrap();
        let grid = dev.chip().grid();
        for launches in [1u8, 5, 20] {
            let mut cq = dev.cq(0).unwrap();
            for _ in 0..launches {
                cq.write_buffer(&buf, 0, &[launches; 4096]).unwrap();
                cq.launch(grid, &[]).unwrap();
            }
            assert_eq!(cq.read_buffer(&buf, 0, 4096).unwrap(), vec![launches; 4096], "{}", chip.name());
            dev.boot().unwrap();
            let mut cq = dev.cq(0).unwrap();
            cq.launch(grid, &[]).unwrap();
            let name = chip.name();
            cq.finish().unwrap_or_else(|e| panic!("{name}: rebooted after {launches} launches and a read-back: {e}"));
        }
    }
}
