//! Each known-bug firmware variant shows its symptom under some seed, while
//! the normal firmware passes the very same workload on the same seeds.

use cqlab_driver::{CoreRange, Device, DeviceConfig, DriverError};
use cqlab_tests::firmware_dir;

type Outcome = Result<(), String>;

fn device(seed: u64, variant: Option<&str>, tweak: impl FnOnce(&mut DeviceConfig)) -> Device {
    device_with(seed, variant, tweak, |_| {})
}

fn device_with(
    seed: u64,
    variant: Option<&str>,
    tweak: impl FnOnce(&mut DeviceConfig),
    sim_tweak: impl FnOnce(&mut cqlab_sim::config::SimConfig),
) -> Device {
    let mut cfg = DeviceConfig {
        firmware_dir: firmware_dir(),
        firmware_variant: variant.map(str::to_owned),
        stall_timeout_cycles: 2_000_000,
        ..Default::default()
    };
    tweak(&mut cfg);
    let mut sim = cqlab_sim::config::SimConfig { seed, quantum_jitter: 64, ..Default::default() };
    // Seeded NOC/PCIe jitter widens the races the variants open.
    sim.faults.noc_jitter_cycles = 800;
    sim_tweak(&mut sim);
    let mut dev = Device::embedded(sim, cfg).unwrap();
    dev.boot().unwrap();
    dev
}

fn describe(e: DriverError) -> String {
    e.to_string().lines().next().unwrap_or_default().to_owned()
}

/// A kernel stores a result; the host reads it right after the launch.
fn read_after_kernel(seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(seed, variant, |c| c.worker_kernel = "spin".into());
    let buf = dev.alloc_l1(4, 4, 16).unwrap();
    let cqlab_driver::Placement::L1 { addr, .. } = buf.placement else { unreachable!() };
    let mut cq = dev.cq(0).unwrap();
    for round in 1..=4u32 {
        cq.launch(CoreRange::single(4, 4), &[20_000, addr, round]).map_err(describe)?;
        let back = cq.read_buffer(&buf, 0, 4).map_err(describe)?;
        if back != round.to_le_bytes() {
            return Err(format!("round {round}: read {back:?} before the kernel's result"));
        }
    }
    Ok(())
}

/// Large writes through a tiny dispatcher ring.
fn tiny_ring(seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(seed, variant, |c| (c.ring_page_size, c.ring_pages) = (256, 4));
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
fn tiny_issue_queue(seed: u64, variant: Option<&str>) -> Outcome {
    // Slow PCIe reads (a fault setting) widen the window in which a freed
    // slot's chunk is still being read.
    let mut dev = device_with(
        seed,
        variant,
        |c| (c.issue_size, c.fetch_entries) = (512, 16),
        |s| s.pcie.read_latency_cycles = 4000,
    );
    let bufs: Vec<_> = (0..5u32).map(|i| dev.alloc_l1(1, 1, 48 * (i + 1)).unwrap()).collect();
    let mut expect = vec![Vec::new(); bufs.len()];
    let mut cq = dev.cq(0).unwrap();
    for i in 0..200u32 {
        let k = (i % 5) as usize;
        let data = vec![i as u8; bufs[k].size as usize];
        cq.write_buffer(&bufs[k], 0, &data).map_err(describe)?;
        expect[k] = data;
        if i % 3 == 0 {
            cq.launch(CoreRange::single((i % 8) as u8, 1), &[i]).map_err(describe)?;
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
fn many_events(seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(seed, variant, |c| c.completion_size = 1024);
    for _ in 0..40 {
        let ev = dev.cq(0).unwrap().record_event().map_err(describe)?;
        dev.event_synchronize(ev).map_err(describe)?;
    }
    Ok(())
}

/// Runs `workload` on seeds 1..=seeds: the normal firmware must pass every
/// seed, the variant must fail at least one. Returns the variant's failures.
fn shows_symptom(variant: &str, seeds: u64, workload: fn(u64, Option<&str>) -> Outcome) -> Vec<(u64, String)> {
    let mut failures = Vec::new();
    for seed in 1..=seeds {
        if let Err(e) = workload(seed, None) {
            panic!("normal firmware failed {variant}'s workload on seed {seed}: {e}");
        }
        if let Err(e) = workload(seed, Some(variant)) {
            failures.push((seed, e));
        }
    }
    assert!(!failures.is_empty(), "variant {variant} showed no symptom on seeds 1..={seeds}");
    failures
}

#[test]
fn stall_released_early_returns_stale_reads() {
    let f = shows_symptom("stall-release-early", 2, read_after_kernel);
    assert!(f.iter().all(|(_, e)| e.contains("before the kernel's result")), "{f:?}");
}

#[test]
fn credits_released_before_acks_corrupt_the_ring() {
    let f = shows_symptom("release-before-ack", 4, tiny_ring);
    // Overwritten ring bytes: the dispatcher decodes garbage, or data is corrupted.
    let dispatcher = format!("device error on core {}", cqlab_abi::noc::dispatcher(0));
    assert!(f.iter().all(|(_, e)| e.contains(&dispatcher) || e.contains("data corrupted")), "{f:?}");
}

#[test]
fn fetch_entries_freed_before_the_read_lands_corrupt_commands() {
    let f = shows_symptom("early-fetch-release", 4, tiny_issue_queue);
    // The chunk read back is not the one the entry named: bad commands on the
    // prefetcher, lost work, or the host starved of slots.
    let prefetcher = format!("device error on core {}", cqlab_abi::noc::prefetcher(0));
    let symptom = |e: &String| {
        e.contains(&prefetcher) || e.contains("wrong data") || e.contains("last write lost") || e.contains("timeout")
    };
    assert!(f.iter().all(|(_, e)| symptom(e)), "{f:?}");
}

#[test]
fn completion_wrap_without_toggle_loses_records() {
    let f = shows_symptom("completion-no-toggle", 1, many_events);
    assert!(f[0].1.contains("corrupt completion record"), "{f:?}");
}

/// CQ1 waits for CQ0's first event, then reads what CQ0's kernel wrote.
fn cross_queue_event(seed: u64, variant: Option<&str>) -> Outcome {
    let mut dev = device(seed, variant, |c| c.worker_kernel = "spin".into());
    let buf = dev.alloc_l1(6, 6, 16).unwrap();
    let cqlab_driver::Placement::L1 { addr, .. } = buf.placement else { unreachable!() };
    let ev = {
        let mut cq0 = dev.cq(0).unwrap();
        cq0.launch(CoreRange::single(6, 6), &[20_000, addr, 77]).map_err(describe)?;
        cq0.record_event().map_err(describe)?
    };
    let mut cq1 = dev.cq(1).unwrap();
    cq1.wait_for_event(ev).map_err(describe)?;
    match cq1.read_buffer(&buf, 0, 4).map_err(describe)? {
        b if b == 77u32.to_le_bytes() => Ok(()),
        b => Err(format!("CQ1 read {b:?} before CQ0's event completed")),
    }
}

#[test]
fn event_zero_taken_as_signalled_lets_another_queue_run_ahead() {
    let f = shows_symptom("event-zero-signalled", 1, cross_queue_event);
    assert!(f[0].1.contains("before CQ0's event completed"), "{f:?}");
}

/// Reads back a DRAM buffer of two 32 KiB pages: the prefetcher relays each
/// page through its relay scratch, the second read into it right after the
/// first page's writes were issued.
fn paged_read_back(seed: u64, variant: Option<&str>) -> Outcome {
    // NOC jitter would only delay the second read past the first page's
    // sending; the race is in the NIU's pace, not in latency noise.
    let mut dev = device_with(seed, variant, |_| {}, |s| s.faults.noc_jitter_cycles = 0);
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

#[test]
fn relay_scratch_reused_before_sent_corrupts_read_backs() {
    let f = shows_symptom("relay-reuse-before-sent", 2, paged_read_back);
    // The second page's read lands over the tail of the first page while it
    // is still being sent: the first page comes back partly overwritten.
    assert!(f[0].1.contains("read-back corrupted from byte"), "{f:?}");
}

/// A variant directory may carry its own worker firmware (a mutant's, see
/// `cargo xtask mutants`): workers boot from it when it is there, and from
/// the firmware directory when it is not. A truncated worker ELF in the
/// variant directory shows which one booted.
#[test]
fn a_variant_directory_with_its_own_worker_boots_that_worker() {
    let dir = std::env::temp_dir().join(format!("cqlab-variant-worker-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["prefetch", "dispatch"] {
        std::fs::copy(firmware_dir().join(name), dir.join(name)).unwrap();
    }
    let boot = |dir: &std::path::Path| {
        let cfg = DeviceConfig {
            firmware_dir: firmware_dir(),
            firmware_variant: Some(dir.to_string_lossy().into_owned()),
            ..Default::default()
        };
        let mut dev = Device::embedded(cqlab_sim::config::SimConfig::default(), cfg).unwrap();
        dev.boot().map(|()| dev)
    };
    let dev = boot(&dir).expect("no worker in the variant directory: the firmware directory's boots");
    let worker = cqlab_abi::noc::worker(0, 0);
    assert_eq!(dev.firmware_elf(worker), Some(firmware_dir().join("worker")));
    let elf = std::fs::read(firmware_dir().join("worker")).unwrap();
    std::fs::write(dir.join("worker"), &elf[..elf.len() / 2]).unwrap();
    let err = boot(&dir).err().expect("the variant's truncated worker is refused");
    assert!(err.to_string().contains(&dir.join("worker").display().to_string()), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
