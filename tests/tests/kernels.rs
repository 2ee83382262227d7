//! Worker kernels on the simulated chip: copy and matmul.

use cqlab_driver::{CoreRange, Placement};
use cqlab_tests::booted;

fn dram_base(b: &cqlab_driver::Buffer) -> u32 {
    match b.placement {
        Placement::Dram { base, .. } => base,
        Placement::L1 { .. } => unreachable!(),
    }
}

#[test]
fn copy_moves_every_page_between_dram_buffers() {
    let mut dev = booted(31, |c| c.worker_kernel = "copy".into());
    let (page, pages) = (2048u32, 40u32);
    let src = dev.alloc_dram(page * pages, page).unwrap();
    let dst = dev.alloc_dram(page * pages, page).unwrap();
    let data: Vec<u8> = (0..page * pages).map(|i| (i * 13 % 251) as u8).collect();
    let banks = dev.config().dram_banks;
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&src, 0, &data).unwrap();
    let args = [dram_base(&src), dram_base(&dst), page, pages, banks, 4, 8];
    cq.launch(CoreRange::new((0, 0), (3, 1)), &args).unwrap();
    assert_eq!(cq.read_buffer(&dst, 0, page * pages).unwrap(), data, "seed 31");
}

#[test]
fn matmul_on_twelve_cores_equals_the_host_reference_bit_for_bit() {
    use cqlab_workloads::matmul::{inputs, reference, tiled, untiled};
    let mut dev = booted(32, |c| c.worker_kernel = "matmul".into());
    let (m, n, k, t) = (64usize, 48usize, 32usize, 16usize);
    let (a, b) = inputs(m, n, k);
    let page = (t * t * 4) as u32;
    let (ab, bb, cb) = (
        dev.alloc_dram((m * k * 4) as u32, page).unwrap(),
        dev.alloc_dram((k * n * 4) as u32, page).unwrap(),
        dev.alloc_dram((m * n * 4) as u32, page).unwrap(),
    );
    let banks = dev.config().dram_banks;
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&ab, 0, &tiled(&a, m, k, t)).unwrap();
    cq.write_buffer(&bb, 0, &tiled(&b, k, n, t)).unwrap();
    let (mt, nt, kt) = ((m / t) as u32, (n / t) as u32, (k / t) as u32);
    // Output-stationary, 12 output tiles over 12 cores (8 in row 0, 4 in row 1).
    let args = [dram_base(&ab), dram_base(&bb), dram_base(&cb), mt, nt, kt, banks, 8, 12, t as u32, 0];
    cq.launch(CoreRange::new((0, 0), (7, 0)), &args).unwrap();
    cq.launch(CoreRange::new((0, 1), (3, 1)), &args).unwrap();
    let c = untiled(&cq.read_buffer(&cb, 0, (m * n * 4) as u32).unwrap(), m, n, t);
    let want = reference(&a, &b, m, n, k);
    let differ = c.iter().zip(&want).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
    assert_eq!(differ, 0, "seed 32: {differ} of {} elements differ", m * n);
}

#[test]
fn matmul_dram_traffic_matches_the_schedule_prediction() {
    use cqlab_schedule::{simulate, Gemm, Strategy, Tiling};
    use cqlab_workloads::matmul::{inputs, run, Order};
    let t = 16usize;
    for (m, n, k) in [(32usize, 32usize, 32usize), (64, 48, 32), (48, 32, 64)] {
        let (a, b) = inputs(m, n, k);
        for (order, strategy) in [
            (Order::OutputStationary, Strategy::OutputStationary),
            (Order::WeightStationary, Strategy::WeightStationary),
            (Order::InputStationary, Strategy::InputStationary),
        ] {
            let mut dev = booted(33, |c| c.worker_kernel = "matmul".into());
            let r = run(&mut dev, &a, &b, (m, n, k), t, order).unwrap();
            assert_eq!(r.mismatches, 0, "seed 33 {strategy:?} {m}x{n}x{k}: result differs from the host reference");
            let gemm = Gemm::new(m as u64, n as u64, k as u64, 4).unwrap();
            let p = simulate(&gemm, &Tiling::square(t as u64).unwrap(), strategy, &[]).unwrap();
            let p_read: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.read_bytes).sum();
            let p_write: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.write_bytes).sum();
            let (read, written) = (r.dram_read.unwrap(), r.dram_written.unwrap());
            let within =
                |measured: u64, predicted: u64| (measured as f64 - predicted as f64).abs() <= 0.05 * predicted as f64;
            assert!(within(read, p_read), "seed 33 {strategy:?} {m}x{n}x{k}: read {read} vs predicted {p_read}");
            assert!(
                within(written, p_write),
                "seed 33 {strategy:?} {m}x{n}x{k}: wrote {written} vs predicted {p_write}"
            );
        }
    }
}
