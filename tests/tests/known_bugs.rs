//! Each known-bug firmware variant shows its symptom under some seed, while
//! the normal firmware passes the very same workload on the same seeds, on a
//! Wormhole and on a Blackhole (each chip's variants are built into
//! `<chip firmware dir>/variants/<bug>/`).

use cqlab_driver::config::chip_dir;
use cqlab_driver::geometry::{CoreId, Topology};
use cqlab_driver::{CoreRange, Device, DeviceConfig, DriverError};
use cqlab_tests::{firmware_dir, on_both_chips, TestChip};
use std::path::PathBuf;

type Outcome = Result<(), String>;

/// The known-bug variants of the CQ firmware (`cargo xtask firmware` builds
/// them for each chip), each with a test below.
use cqlab_abi::firmware::KNOWN_BUG_VARIANTS as VARIANTS;

fn device(chip: &TestChip, seed: u64, variant: Option<&str>, tweak: impl FnOnce(&mut DeviceConfig)) -> Device {
    device_with(chip, seed, variant, tweak, |_| {})
}

fn device_with(
    chip: &TestChip,
    seed: u64,
    variant: Option<&str>,
    tweak: impl FnOnce(&mut DeviceConfig),
    sim_tweak: impl FnOnce(&mut cqlab_sim::config::SimConfig),
) -> Device {
    let mut cfg = DeviceConfig {
        firmware_variant: variant.map(str::to_owned),
        stall_timeout_cycles: 2_000_000,
        ..cqlab_tests::config(chip)
    };
    tweak(&mut cfg);
    let mut sim = cqlab_sim::config::SimConfig { quantum_jitter: 64, ..chip.sim(seed) };
    // Seeded NOC/PCIe jitter widens the races the variants open.
    sim.faults.noc_jitter_cycles = 800;
    sim_tweak(&mut sim);
    let mut dev = Device::embedded(sim, cfg).unwrap();
    dev.boot().unwrap_or_else(|e| panic!("{} seed {seed} variant {variant:?}: boot: {e}", chip.name()));
    dev
}

/// The chip's queue cores as the driver places them (default queue count).
fn topology(chip: &TestChip) -> Topology {
    let cfg = cqlab_tests::config(chip);
    Topology::for_board(chip.board, cfg.harvesting, cfg.num_cqs).unwrap()
}

/// Logical core `(c, r)`, or the grid's nearest one on a smaller grid: a
/// core far from the queue cores where the grid allows.
fn far_core(dev: &Device, (c, r): (u8, u8)) -> (u8, u8) {
    (c.min(dev.chip().cols() - 1), r.min(dev.chip().rows() - 1))
}

fn describe(e: DriverError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}

/// A kernel stores a result; the host reads it right after the launch.
fn read_after_kernel(chip: &TestChip, seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(chip, seed, variant, |c| c.worker_kernel = "spin".into());
    let (c, r) = far_core(&dev, (4, 4));
    let buf = dev.alloc_l1(c, r, 16).unwrap();
    let cqlab_driver::Placement::L1 { addr, .. } = buf.placement else { unreachable!() };
    let mut cq = dev.cq(0).unwrap();
    for round in 1..=4u32 {
        cq.launch(CoreRange::single(c, r), &[20_000, addr, round]).map_err(describe)?;
        let back = cq.read_buffer(&buf, 0, 4).map_err(describe)?;
        if back != round.to_le_bytes() {
            return Err(format!("round {round}: read {back:?} before the kernel's result"));
        }
    }
    Ok(())
}

/// Large writes through a tiny dispatcher ring.
fn tiny_ring(chip: &TestChip, seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(chip, seed, variant, |c| (c.ring_page_size, c.ring_pages) = (256, 4));
    let buf = dev.alloc_l1(2, 2, 8192).unwrap();
    let mut cq = dev.cq(0).unwrap();
    for round in 0..4u8 {
        let data: Vec<u8> = (0..8192).map(|i| (i as u8).wrapping_add(round)).collect();
        cq.write_buffer(&buf, 0, &data).map_err(describe)?;
        if cq.read_buffer(&buf, 0, 8192).map_err(describe)? != data {
            return Err(format!("round {round}: data corrupted"));
        }
    }
    Ok(())
}

/// Many small commands of mixed sizes through a tiny issue queue.
fn tiny_issue_queue(chip: &TestChip, seed: u64, variant: Option<&str>) -> Outcome {
    // Slow PCIe reads (a fault setting) widen the window in which a freed
    // slot's chunk is still being read.
    let mut dev = device_with(
        chip,
        seed,
        variant,
        |c| (c.issue_size, c.fetch_entries) = (512, 16),
        |s| s.pcie.read_latency_cycles = 4000,
    );
    let bufs: Vec<_> = (0..5u32).map(|i| dev.alloc_l1(1, 1, 48 * (i + 1)).unwrap()).collect();
    let cols = dev.chip().cols() as u32;
    let mut expect = vec![Vec::new(); bufs.len()];
    let mut cq = dev.cq(0).unwrap();
    for i in 0..200u32 {
        let k = (i % 5) as usize;
        let data = vec![i as u8; bufs[k].size as usize];
        cq.write_buffer(&bufs[k], 0, &data).map_err(describe)?;
        expect[k] = data;
        if i % 3 == 0 {
            cq.launch(CoreRange::single((i % cols) as u8, 1), &[i]).map_err(describe)?;
        }
    }
    cq.finish().map_err(describe)?;
    for (k, b) in bufs.iter().enumerate() {
        if cq.read_buffer(b, 0, b.size).map_err(describe)? != expect[k] {
            return Err(format!("buffer {k} holds the wrong data"));
        }
    }
    Ok(())
}

/// More events than the completion queue holds.
fn many_events(chip: &TestChip, seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(chip, seed, variant, |c| c.completion_size = 1024);
    for _ in 0..40 {
        let ev = dev.cq(0).unwrap().record_event().map_err(describe)?;
        dev.event_synchronize(ev).map_err(describe)?;
    }
    Ok(())
}

/// CQ1 waits for CQ0's first event, then reads what CQ0's kernel wrote.
fn cross_queue_event(chip: &TestChip, seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(chip, seed, variant, |c| c.worker_kernel = "spin".into());
    let (c, r) = far_core(&dev, (6, 6));
    let buf = dev.alloc_l1(c, r, 16).unwrap();
    let cqlab_driver::Placement::L1 { addr, .. } = buf.placement else { unreachable!() };
    let ev = {
        let mut cq0 = dev.cq(0).unwrap();
        cq0.launch(CoreRange::single(c, r), &[20_000, addr, 77]).map_err(describe)?;
        cq0.record_event().map_err(describe)?
    };
    let mut cq1 = dev.cq(1).unwrap();
    cq1.wait_for_event(ev).map_err(describe)?;
    match cq1.read_buffer(&buf, 0, 4).map_err(describe)? {
        b if b == 77u32.to_le_bytes() => Ok(()),
        b => Err(format!("CQ1 read {b:?} before CQ0's event completed")),
    }
}

/// Reads back a DRAM buffer of two 32 KiB pages: the prefetcher relays each
/// page through its relay scratch, the second read into it right after the
/// first page's writes were issued.
fn paged_read_back(chip: &TestChip, seed: u64, variant: Option<&str>) -> Outcome {
    // NOC jitter would only delay the second read past the first page's
    // sending; the race is in the NIU's pace, not in latency noise. Write
    // back-pressure holds a page's packets in the NIU before they leave (on
    // Blackhole, whose NOC moves 64 bytes a cycle, the page otherwise leaves
    // before the next read lands).
    let mut dev = device_with(
        chip,
        seed,
        variant,
        |_| {},
        |s| {
            s.faults.noc_jitter_cycles = 0;
            s.faults.write_backpressure_cycles = 1000;
        },
    );
    let buf = dev.alloc_dram(64 * 1024, 32 * 1024).unwrap();
    // Not periodic in the page: one page's bytes in the other's place show.
    let data: Vec<u8> = (0..buf.size).map(|i| (i ^ i >> 8 ^ i >> 15) as u8).collect();
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &data).map_err(describe)?;
    match cq.read_buffer(&buf, 0, buf.size).map_err(describe)? {
        back if back == data => Ok(()),
        back => {
            let at = back.iter().zip(&data).position(|(a, b)| a != b).unwrap_or(0);
            Err(format!("read-back corrupted from byte {at}"))
        }
    }
}

/// Runs `workload` on seeds 1..=seeds: the normal firmware must pass every
/// seed, the variant must fail at least one. Returns the variant's failures.
fn shows_symptom(
    chip: &TestChip,
    variant: &str,
    seeds: u64,
    workload: fn(&TestChip, u64, Option<&str>) -> Outcome,
) -> Vec<(u64, String)> {
    let name = chip.name();
    let mut failures = Vec::new();
    for seed in 1..=seeds {
        if let Err(e) = workload(chip, seed, None) {
            panic!("{name}: normal firmware failed {variant}'s workload on seed {seed}: {e}");
        }
        if let Err(e) = workload(chip, seed, Some(variant)) {
            failures.push((seed, e));
        }
    }
    assert!(!failures.is_empty(), "{name}: variant {variant} showed no symptom on seeds 1..={seeds}");
    failures
}

on_both_chips! {
    /// Every known-bug variant is built for the chip: its own prefetcher
    /// and dispatcher, and at least one of them differs from the normal
    /// firmware's.
    fn every_known_bug_variant_is_built_for_the_chip(chip) {
        let dir = chip_dir(&firmware_dir(), chip.board.arch());
        for variant in VARIANTS {
            let vdir = dir.join("variants").join(variant);
            let read = |d: &PathBuf, name: &str| {
                let path = d.join(name);
                let what = format!("{}: variant {variant}: {}", chip.name(), path.display());
                std::fs::read(&path).unwrap_or_else(|e| panic!("{what}: {e} (run `cargo xtask firmware`)"))
            };
            let differs = ["prefetch", "dispatch"].iter().any(|n| read(&vdir, n) != read(&dir, n));
            assert!(differs, "{}: variant {variant}'s CQ firmware is the normal firmware", chip.name());
        }
    }

    fn stall_released_early_returns_stale_reads(chip) {
        let f = shows_symptom(chip, "stall-release-early", 2, read_after_kernel);
        assert!(f.iter().all(|(_, e)| e.contains("before the kernel's result")), "{}: {f:?}", chip.name());
    }

    fn credits_released_before_acks_corrupt_the_ring(chip) {
        let f = shows_symptom(chip, "release-before-ack", 4, tiny_ring);
        // Overwritten ring bytes: the dispatcher decodes garbage, or data is corrupted.
        let dispatcher = format!("device error on CQ0 dispatcher {}", topology(chip).dispatcher(0));
        let symptom = |e: &String| e.contains(&dispatcher) || e.contains("data corrupted");
        assert!(f.iter().all(|(_, e)| symptom(e)), "{}: {f:?}", chip.name());
    }

    fn fetch_entries_freed_before_the_read_lands_corrupt_commands(chip) {
        let f = shows_symptom(chip, "early-fetch-release", 4, tiny_issue_queue);
        // The chunk read back is not the one the entry named: bad commands on the
        // prefetcher, lost work, or the host starved of slots.
        let prefetcher = format!("device error on CQ0 prefetcher {}", topology(chip).prefetcher(0));
        let symptom = |e: &String| {
            [prefetcher.as_str(), "wrong data", "last write lost", "timeout"].iter().any(|s| e.contains(s))
        };
        assert!(f.iter().all(|(_, e)| symptom(e)), "{}: {f:?}", chip.name());
    }

    fn completion_wrap_without_toggle_loses_records(chip) {
        let f = shows_symptom(chip, "completion-no-toggle", 1, many_events);
        assert!(f[0].1.contains("corrupt completion record"), "{}: {f:?}", chip.name());
    }

    fn event_zero_taken_as_signalled_lets_another_queue_run_ahead(chip) {
        let f = shows_symptom(chip, "event-zero-signalled", 1, cross_queue_event);
        assert!(f[0].1.contains("before CQ0's event completed"), "{}: {f:?}", chip.name());
    }

    fn relay_scratch_reused_before_sent_corrupts_read_backs(chip) {
        let f = shows_symptom(chip, "relay-reuse-before-sent", 3, paged_read_back);
        // The second page's read lands over the tail of the first page while it
        // is still being sent: the first page comes back partly overwritten.
        assert!(f[0].1.contains("read-back corrupted from byte"), "{}: {f:?}", chip.name());
    }

    /// A variant directory may carry its own worker firmware (a mutant's, see
    /// `cargo xtask mutants`): workers boot from it when it is there, and from
    /// the chip's firmware directory when it is not. A truncated worker ELF in
    /// the variant directory shows which one booted.
    fn a_variant_directory_with_its_own_worker_boots_that_worker(chip) {
        let chip_fw = chip_dir(&firmware_dir(), chip.board.arch());
        let tag = format!("cqlab-variant-worker-{}-{}", chip.name(), std::process::id());
        let dir = std::env::temp_dir().join(tag);
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["prefetch", "dispatch"] {
            std::fs::copy(chip_fw.join(name), dir.join(name)).unwrap();
        }
        let boot = |dir: &std::path::Path| {
            let cfg = DeviceConfig {
                firmware_variant: Some(dir.to_string_lossy().into_owned()),
                ..cqlab_tests::config(chip)
            };
            let mut dev = Device::embedded(chip.sim(0), cfg).unwrap();
            dev.boot().map(|()| dev)
        };
        let dev = boot(&dir).expect("no worker in the variant directory: the firmware directory's boots");
        let worker = CoreId::brisc(dev.chip().worker(0, 0).unwrap());
        assert_eq!(dev.firmware_elf(worker), Some(chip_fw.join("worker")), "{}", chip.name());
        let elf = std::fs::read(chip_fw.join("worker")).unwrap();
        std::fs::write(dir.join("worker"), &elf[..elf.len() / 2]).unwrap();
        let err = boot(&dir).err().expect("the variant's truncated worker is refused");
        assert!(err.to_string().contains(&dir.join("worker").display().to_string()), "{}: {err}", chip.name());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
