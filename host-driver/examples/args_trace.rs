use cqlab_abi::noc;
use cqlab_abi::trace::TraceKind;
use cqlab_driver::*;
use std::sync::Arc;
fn main() {
    let cfg = config::DeviceConfig::default();
    let mut dev = device::Device::open("embedded:seed=1", cfg).unwrap();
    dev.boot().unwrap();
    let image = Arc::new(dev.load_kernel("noop").unwrap());
    let range = command_queue::CoreRange::new((0, 0), (7, 7));
    let mut p = program::Program::new();
    let k = p.add_kernel(image, &[range]).unwrap();
    for r in 0..8u8 {
        for c in 0..8u8 {
            let args: Vec<u32> = (0..128u32).map(|i| i ^ (c as u32) << 8 ^ (r as u32) << 16).collect();
            p.set_unique_args(k, (c, r), &args).unwrap();
        }
    }
    let mut cq = dev.cq(0).unwrap();
    for _ in 0..40 {
        cq.enqueue_program(&p).unwrap();
    }
    cq.finish().unwrap();
    for core in [noc::prefetcher(0), noc::dispatcher(0)] {
        let t = dev.read_trace_tail(core, 50).unwrap();
        println!("== {core:?}");
        let mut last = 0;
        for r in &t.records {
            let k = TraceKind::from_u16(r.kind).map(|k| format!("{k:?}")).unwrap_or(format!("{}", r.kind));
            println!("{:>8} +{:>5} {:<20} {:>8x} {:>8x}", r.cycle, r.cycle - last, k, r.arg0, r.arg1);
            last = r.cycle;
        }
    }
}
