//! Bad input and hangs end as clear errors with hang dumps, never as hangs.

use cqlab_abi::fetch_queue::{slot_addr, STALL_FLAG};
use cqlab_abi::noc::{prefetcher, NocAddr};
use cqlab_driver::{CoreRange, DriverError};
use cqlab_tests::booted;

#[test]
fn a_worker_that_never_finishes_ends_the_chain() {
    let mut dev = booted(11, |c| {
        c.worker_kernel = "spin".into();
        c.stall_timeout_cycles = 3_000_000;
    });
    let mut cq = dev.cq(0).unwrap();
    cq.launch(CoreRange::single(1, 1), &[u32::MAX]).unwrap();
    let err = cq.finish().unwrap_err();
    let DriverError::Timeout { what, dump, .. } = &err else { panic!("seed 11: expected a timeout, got {err}") };
    assert!(what.contains("completion event"), "{what}");
    let chain = dump.chain.join(" -> ");
    assert!(chain.contains("CQ0 prefetcher") && chain.contains("PSW"), "seed 11: {chain}");
    assert!(chain.contains("CQ0 dispatcher") && chain.contains("WCW"), "seed 11: {chain}");
    assert!(dump.chain.last().unwrap().contains("worker (1,1)"), "seed 11: chain ends at the worker: {chain}");
    assert!(!dump.deadlock);
    let text = err.to_string();
    eprintln!("{text}");
    assert!(text.contains("timeout waiting for CQ host completion event"), "{text}");
    let json = serde_json::to_string(dump.as_ref()).unwrap();
    assert!(json.contains("\"chain\""));
}

#[test]
fn an_unknown_command_is_reported_with_its_bytes() {
    let mut dev = booted(12, |_| {});
    let mut chunk = vec![0u8; 64];
    chunk[0] = 0x7f;
    chunk[1] = 0xee;
    let mut cq = dev.cq(0).unwrap();
    cq.enqueue_raw(&chunk, false).unwrap();
    let err = cq.finish().unwrap_err();
    let DriverError::Device { core, message, dump } = &err else {
        panic!("seed 12: expected a device error, got {err}")
    };
    assert_eq!(*core, prefetcher(0));
    assert!(message.contains("unknown command id") && message.contains("7f ee"), "{message}");
    assert!(dump.cores.iter().any(|c| c.waypoint == "!CMD"));
}

#[test]
fn zero_size_fetch_entries_are_rejected_on_both_sides() {
    let mut dev = booted(13, |_| {});
    assert!(matches!(dev.cq(0).unwrap().enqueue_raw(&[], false), Err(DriverError::Invalid(_))));
    // Forge one past the driver, straight through the BAR.
    dev.backend().write_u32(NocAddr::unicast(prefetcher(1), slot_addr(0) as u64), STALL_FLAG).unwrap();
    for _ in 0..10 {
        dev.backend().poll().unwrap(); // let the prefetcher see it before the host reuses slot 0
    }
    let err = dev.cq(1).unwrap().finish().unwrap_err();
    assert!(err.to_string().contains("zero-size fetch-queue entry"), "seed 13: {err}");
}

#[test]
fn opening_missing_hardware_or_unknown_devices_is_a_clear_error() {
    use cqlab_driver::{Device, DeviceConfig};
    let err = Device::open("/dev/tenstorrent/97", DeviceConfig::default()).err().unwrap().to_string();
    assert!(err.contains("no Tenstorrent device/driver present") && err.contains("/dev/tenstorrent/97"), "{err}");
    let err = Device::open("gpu0", DeviceConfig::default()).err().unwrap().to_string();
    assert!(err.contains("unknown device \"gpu0\""), "{err}");
    let err = Device::open("embedded:seed=x", DeviceConfig::default()).err().unwrap().to_string();
    assert!(err.contains("seed \"x\" is not a number"), "{err}");
}
