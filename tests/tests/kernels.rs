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

/// Row-major `rows x cols` matrix as T x T tiles, tile (i, k) at page i * (cols/T) + k.
fn tiled(m: &[f32], rows: usize, cols: usize, t: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(m.len() * 4);
    for ti in 0..rows / t {
        for tk in 0..cols / t {
            for r in 0..t {
                for c in 0..t {
                    out.extend(m[(ti * t + r) * cols + tk * t + c].to_le_bytes());
                }
            }
        }
    }
    out
}

fn untiled(bytes: &[u8], rows: usize, cols: usize, t: usize) -> Vec<f32> {
    let mut m = vec![0f32; rows * cols];
    let mut at = 0;
    for ti in 0..rows / t {
        for tk in 0..cols / t {
            for r in 0..t {
                for c in 0..t {
                    m[(ti * t + r) * cols + tk * t + c] = f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
                    at += 4;
                }
            }
        }
    }
    m
}

fn inputs(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 3.0).collect();
    let mut reference = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0f32;
            for x in 0..k {
                acc += a[i * k + x] * b[x * n + j];
            }
            reference[i * n + j] = acc;
        }
    }
    (a, b, reference)
}

#[test]
fn matmul_equals_the_host_reference_bit_for_bit() {
    let mut dev = booted(32, |c| c.worker_kernel = "matmul".into());
    let (m, n, k, t) = (64usize, 48usize, 32usize, 16usize);
    let (a, b, reference) = inputs(m, n, k);
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
    let args = [dram_base(&ab), dram_base(&bb), dram_base(&cb), mt, nt, kt, banks, 8, 12, t as u32];
    cq.launch(CoreRange::new((0, 0), (7, 0)), &args).unwrap();
    cq.launch(CoreRange::new((0, 1), (3, 1)), &args).unwrap();
    let c = untiled(&cq.read_buffer(&cb, 0, (m * n * 4) as u32).unwrap(), m, n, t);
    let differ = c.iter().zip(&reference).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
    assert_eq!(differ, 0, "seed 32: {differ} of {} elements differ", m * n);
}

/// Runs C = A x B on one core in `order`; returns C and the DRAM bytes the
/// simulator counted (read, written) for the kernel alone.
fn matmul_on_chip(order: u32, m: usize, n: usize, k: usize, t: usize) -> (Vec<f32>, u64, u64, Vec<f32>) {
    use cqlab_driver::sim_backend::EmbeddedSim;
    let mut dev = booted(33, |c| c.worker_kernel = "matmul".into());
    let (a, b, reference) = inputs(m, n, k);
    let page = (t * t * 4) as u32;
    let bufs: Vec<_> = [m * k, k * n, m * n].iter().map(|&e| dev.alloc_dram((e * 4) as u32, page).unwrap()).collect();
    let banks = dev.config().dram_banks;
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&bufs[0], 0, &tiled(&a, m, k, t)).unwrap();
    cq.write_buffer(&bufs[1], 0, &tiled(&b, k, n, t)).unwrap();
    cq.finish().unwrap();
    dev.backend().as_any().unwrap().downcast_mut::<EmbeddedSim>().unwrap().chip_mut().reset_dram_traffic();
    let (mt, nt, kt) = ((m / t) as u32, (n / t) as u32, (k / t) as u32);
    let args = [dram_base(&bufs[0]), dram_base(&bufs[1]), dram_base(&bufs[2]), mt, nt, kt, banks, 8, 1, t as u32, order];
    let mut cq = dev.cq(0).unwrap();
    cq.launch(CoreRange::single(0, 0), &args).unwrap();
    cq.finish().unwrap();
    let traffic = dev.backend().as_any().unwrap().downcast_mut::<EmbeddedSim>().unwrap().chip().dram_traffic();
    let c = untiled(&dev.cq(0).unwrap().read_buffer(&bufs[2], 0, (m * n * 4) as u32).unwrap(), m, n, t);
    (c, traffic.read_bytes, traffic.write_bytes, reference)
}

#[test]
fn matmul_dram_traffic_matches_the_schedule_prediction() {
    use cqlab_schedule::{simulate, Gemm, Strategy, Tiling};
    let t = 16usize;
    for (m, n, k) in [(32usize, 32usize, 32usize), (64, 48, 32), (48, 32, 64)] {
        for (order, strategy) in
            [(0u32, Strategy::OutputStationary), (1, Strategy::WeightStationary), (2, Strategy::InputStationary)]
        {
            let (c, read, written, reference) = matmul_on_chip(order, m, n, k, t);
            assert!(
                c.iter().zip(&reference).all(|(x, y)| x.to_bits() == y.to_bits()),
                "seed 33 {strategy:?} {m}x{n}x{k}: result differs from the host reference"
            );
            let gemm = Gemm::new(m as u64, n as u64, k as u64, 4).unwrap();
            let predicted = simulate(&gemm, &Tiling::square(t as u64).unwrap(), strategy, &[]).unwrap();
            let p_read: u64 = [predicted.dram.a, predicted.dram.b, predicted.dram.c].iter().map(|d| d.read_bytes).sum();
            let p_write: u64 = [predicted.dram.a, predicted.dram.b, predicted.dram.c].iter().map(|d| d.write_bytes).sum();
            let within = |measured: u64, predicted: u64| (measured as f64 - predicted as f64).abs() <= 0.05 * predicted as f64;
            eprintln!("{strategy:?} {m}x{n}x{k}: read {read} (predicted {p_read}), written {written} (predicted {p_write})");
            assert!(within(read, p_read), "seed 33 {strategy:?} {m}x{n}x{k}: read {read} vs predicted {p_read}");
            assert!(within(written, p_write), "seed 33 {strategy:?} {m}x{n}x{k}: wrote {written} vs predicted {p_write}");
        }
    }
}
