//! Worker kernels on the simulated chips (Wormhole and Blackhole): copy
//! and matmul.

use cqlab_driver::{CoreRange, Placement};
use cqlab_tests::{booted, on_both_chips};

fn dram_base(b: &cqlab_driver::Buffer) -> u32 {
    match b.placement {
        Placement::Dram { base, .. } => base,
        Placement::L1 { .. } => unreachable!(),
    }
}

on_both_chips! {
    fn copy_moves_every_page_between_dram_buffers(chip) {
        let mut dev = booted(chip, 31, |c| c.worker_kernel = "copy".into());
        let (page, pages) = (2048u32, 40u32);
        let src = dev.alloc_dram(page * pages, page).unwrap();
        let dst = dev.alloc_dram(page * pages, page).unwrap();
        let data: Vec<u8> = (0..page * pages).map(|i| (i * 13 % 251) as u8).collect();
        let banks = dev.chip().dram_banks();
        // Two rows of up to four cores: core r*w+c copies pages r*w+c, +2w, ...
        let w = dev.chip().cols().min(4);
        let mut cq = dev.cq(0).unwrap();
        cq.write_buffer(&src, 0, &data).unwrap();
        let args = [dram_base(&src), dram_base(&dst), page, pages, banks, w as u32, 2 * w as u32];
        cq.launch(CoreRange::new((0, 0), (w - 1, 1)), &args).unwrap();
        assert_eq!(cq.read_buffer(&dst, 0, page * pages).unwrap(), data, "{} seed 31", chip.name());
    }

    fn matmul_on_twelve_cores_equals_the_host_reference_bit_for_bit(chip) {
        use cqlab_workloads::matmul::{inputs, reference, tiled, untiled};
        let mut dev = booted(chip, 32, |c| c.worker_kernel = "matmul".into());
        let (m, n, k, t) = (64usize, 48usize, 32usize, 16usize);
        let (a, b) = inputs(m, n, k);
        let page = (t * t * 4) as u32;
        let (ab, bb, cb) = (
            dev.alloc_dram((m * k * 4) as u32, page).unwrap(),
            dev.alloc_dram((k * n * 4) as u32, page).unwrap(),
            dev.alloc_dram((m * n * 4) as u32, page).unwrap(),
        );
        let banks = dev.chip().dram_banks();
        let cols = dev.chip().cols();
        let mut cq = dev.cq(0).unwrap();
        cq.write_buffer(&ab, 0, &tiled(&a, m, k, t)).unwrap();
        cq.write_buffer(&bb, 0, &tiled(&b, k, n, t)).unwrap();
        let (mt, nt, kt) = ((m / t) as u32, (n / t) as u32, (k / t) as u32);
        // Output-stationary, 12 output tiles over the first 12 cores, row by
        // row: full rows of the grid, then what is left in the next row
        // (Wormhole: 8 and 4, Blackhole: four rows of 3).
        let cores = 12u8;
        let args = [dram_base(&ab), dram_base(&bb), dram_base(&cb), mt, nt, kt, banks, cols as u32, 12, t as u32, 0];
        let (full, rest) = (cores / cols, cores % cols);
        if full > 0 {
            cq.launch(CoreRange::new((0, 0), (cols - 1, full - 1)), &args).unwrap();
        }
        if rest > 0 {
            cq.launch(CoreRange::new((0, full), (rest - 1, full)), &args).unwrap();
        }
        let c = untiled(&cq.read_buffer(&cb, 0, (m * n * 4) as u32).unwrap(), m, n, t);
        let want = reference(&a, &b, m, n, k);
        let differ = c.iter().zip(&want).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
        assert_eq!(differ, 0, "{} seed 32: {differ} of {} elements differ", chip.name(), m * n);
    }

    /// Each loop order's DRAM traffic is the schedule's prediction. The
    /// kernel runs on one core for about 5M device cycles at 32x32x32 and
    /// 16M at the larger shapes; to keep the suite's time, each chip runs
    /// the small shape and one of the two larger ones (the larger matrix A
    /// on Wormhole, the longer k on Blackhole), every order on each.
    fn matmul_dram_traffic_matches_the_schedule_prediction(chip) {
        use cqlab_schedule::{simulate, Gemm, Strategy, Tiling};
        use cqlab_workloads::matmul::{inputs, run, Order};
        let t = 16usize;
        let larger = match chip.board.arch() {
            cqlab_abi::arch::Arch::Wormhole => (64, 48, 32),
            cqlab_abi::arch::Arch::Blackhole => (48, 32, 64),
        };
        for (m, n, k) in [(32usize, 32usize, 32usize), larger] {
            let (a, b) = inputs(m, n, k);
            for (order, strategy) in [
                (Order::OutputStationary, Strategy::OutputStationary),
                (Order::WeightStationary, Strategy::WeightStationary),
                (Order::InputStationary, Strategy::InputStationary),
            ] {
                let mut dev = booted(chip, 33, |c| c.worker_kernel = "matmul".into());
                let r = run(&mut dev, &a, &b, (m, n, k), t, order).unwrap();
                let what = format!("{} seed 33 {strategy:?} {m}x{n}x{k}", chip.name());
                assert_eq!(r.mismatches, 0, "{what}: result differs from the host reference");
                let gemm = Gemm::new(m as u64, n as u64, k as u64, 4).unwrap();
                let p = simulate(&gemm, &Tiling::square(t as u64).unwrap(), strategy, &[]).unwrap();
                let p_read: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.read_bytes).sum();
                let p_write: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.write_bytes).sum();
                let (read, written) = (r.dram_read.unwrap(), r.dram_written.unwrap());
                let within =
                    |measured: u64, predicted: u64| (measured as f64 - predicted as f64).abs() <= 0.05 * predicted as f64;
                assert!(within(read, p_read), "{what}: read {read} vs predicted {p_read}");
                assert!(within(written, p_write), "{what}: wrote {written} vs predicted {p_write}");
            }
        }
    }
}
