//! The headline case: 32768 x 7168 x 7168, f32, a 16 MiB L3, default 128 tile.
//!
//! With k outermost, weight-stationary keeps the 128 x 7168 row panel of B (3.5 MiB) in L3
//! while all of A's rows pass, so B is read once. Output-stationary walks all of B (196 MiB)
//! for every 128-row block of A: 256 times.

use cqlab_schedule::{auto, simulate_all, Gemm, LevelSpec, Strategy, Tiling};
use std::time::Instant;

#[test]
fn output_stationary_overfetches_b_and_weight_stationary_does_not() {
    let gemm = Gemm::new(32768, 7168, 7168, 4).unwrap();
    let l3 = [LevelSpec::new("L3", 16 << 20)];
    let start = Instant::now();
    let reports = simulate_all(&gemm, &Tiling::default(), &l3).unwrap();
    let elapsed = start.elapsed();
    let by = |s| reports.iter().find(|r| r.strategy == s).unwrap();
    let (ws, is, os) = (by(Strategy::WeightStationary), by(Strategy::InputStationary), by(Strategy::OutputStationary));
    for r in &reports {
        eprintln!(
            "{}: total {} B ({:.2}x), overfetch A {:.2}x B {:.2}x C {:.2}x",
            r.strategy, r.total_bytes, r.total_overfetch, r.overfetch.a, r.overfetch.b, r.overfetch.c
        );
    }
    assert!(os.overfetch.b > 10.0, "OS overfetch of B {}", os.overfetch.b);
    assert!(ws.overfetch.b <= 1.1, "WS overfetch of B {}", ws.overfetch.b);
    // The other half of the story: WS pays for it in partial sums of C (56 k steps).
    assert!(ws.overfetch.c > 10.0, "WS overfetch of C {}", ws.overfetch.c);
    assert!(os.overfetch.c <= 1.0 + 1e-12 && os.overfetch.a <= 1.1);
    assert!(is.overfetch.b <= 1.1 && is.overfetch.a > 10.0);
    // auto takes the least total, which here is OS.
    let best = auto(&gemm, &Tiling::default(), &l3).unwrap();
    assert_eq!(best.strategy, Strategy::OutputStationary);
    assert!(reports.iter().all(|r| r.total_bytes >= best.total_bytes));
    // Generous bound for an unoptimised build on a loaded machine; release takes milliseconds.
    assert!(elapsed.as_secs_f64() < 20.0, "took {elapsed:?}");
}

/// The WS advantage needs the B panel and a row of C tiles (2 x T x N x 4 bytes) to fit in
/// L3: at T = 512 that is 28 MiB, B streams and WS re-reads it once per row block of A.
#[test]
fn weight_stationary_loses_its_b_reuse_when_the_panel_does_not_fit() {
    let gemm = Gemm::new(32768, 7168, 7168, 4).unwrap();
    let l3 = [LevelSpec::new("L3", 16 << 20)];
    let ws = |t| cqlab_schedule::simulate(&gemm, &Tiling::square(t).unwrap(), Strategy::WeightStationary, &l3).unwrap();
    assert_eq!(ws(256).overfetch.b, 1.0);
    let big = ws(512);
    assert_eq!(big.overfetch.b, (32768 / 512) as f64);
    // C partial sums: written once per k step (14), read back on all but the first.
    assert_eq!(big.overfetch.c, (2 * 14 - 1) as f64);
}
