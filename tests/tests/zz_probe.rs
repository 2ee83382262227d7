use cqlab_driver::CoreRange;
use cqlab_tests::booted;
#[test]
fn probe() {
    let mut dev = booted(1, |c| c.worker_kernel = "noop".into());
    let mut cq = dev.cq(0).unwrap();
    for _ in 0..40 { cq.launch(CoreRange::new((0,0),(7,7)), &[]).unwrap(); }
    cq.finish().unwrap();
    for core in [cqlab_abi::noc::worker(3,3), cqlab_abi::noc::dispatcher(0), cqlab_abi::noc::prefetcher(0)] {
        let t = dev.read_trace(core).unwrap();
        let n = t.records.len();
        for r in &t.records[n.saturating_sub(30)..] {
            println!("{core} {:>9} {:?} {:#x} {:#x}", r.cycle, cqlab_abi::trace::TraceKind::from_u16(r.kind), r.arg0, r.arg1);
        }
    }
}
