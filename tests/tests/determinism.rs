//! Same seed, same program: bit-identical device state.

use cqlab_driver::CoreRange;
use cqlab_tests::booted;

fn run(seed: u64) -> u64 {
    let mut dev = booted(seed, |_| {});
    let buf = dev.alloc_dram(8192, 1024).unwrap();
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &[3u8; 8192]).unwrap();
    cq.launch(CoreRange::new((0, 0), (7, 7)), &[9]).unwrap();
    let ev = cq.record_event().unwrap();
    let mut cq1 = dev.cq(1).unwrap();
    cq1.wait_for_event(ev).unwrap();
    cq1.read_buffer(&buf, 0, 8192).unwrap();
    cq1.finish().unwrap();
    dev.backend().introspect().expect("the simulator has introspection").digest().unwrap()
}

#[test]
fn same_seed_gives_identical_device_state() {
    assert_eq!(run(21), run(21), "seed 21 replayed differently");
}
