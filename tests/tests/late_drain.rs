//! A host that reads completion records late (`DeviceConfig::drain_every_polls`),
//! as a host thread busy elsewhere does, on a Wormhole and a Blackhole.

use cqlab_tests::{booted, on_both_chips};

on_both_chips! {
    /// Deferred reads fill a 1 KiB completion queue (three page records)
    /// while the host looks at completions only every 50 polls: the
    /// dispatcher must wait for room each time, and every read-back arrives
    /// intact and in order. A dispatcher that wrote over records not yet read
    /// fails here with a corrupt completion record.
    fn a_host_that_drains_late_loses_no_completion(chip) {
        let mut took = Vec::new();
        for every in [1u32, 50] {
            let mut dev = booted(chip, 71, |c| {
                c.completion_size = 1024;
                c.drain_every_polls = every;
            });
            let (page, pages) = (256u32, 16u32);
            let buf = dev.alloc_dram(page * pages, page).unwrap();
            let data: Vec<u8> = (0..page * pages).map(|i| (i * 7 % 251) as u8).collect();
            let mut cq = dev.cq(0).unwrap();
            cq.write_buffer(&buf, 0, &data).unwrap();
            let pending: Vec<_> =
                (0..64u32).map(|i| cq.enqueue_read(&buf, (i % pages) * page, page).unwrap()).collect();
            for (i, p) in pending.iter().enumerate() {
                let at = (i as u32 % pages * page) as usize;
                let name = chip.name();
                let got =
                    dev.complete_read(p).unwrap_or_else(|e| panic!("{name}: drain every {every} polls, read {i}: {e}"));
                assert_eq!(got, &data[at..at + page as usize], "{name}: drain every {every} polls, read {i}");
            }
            took.push(dev.now());
        }
        // The late host made the dispatcher wait for room: the same reads
        // took longer (a setting that did nothing would take as long).
        assert!(took[1] > took[0] + took[0] / 4, "{}: device cycles draining every poll and every 50: {took:?}", chip.name());
    }
}
