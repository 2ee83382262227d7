//! Properties of the traffic model over random small problems and cache stacks.

use cqlab_schedule::{simulate, Gemm, LevelSpec, PerTensor, Report, Strategy, Tensor, Tiling};
use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest, ProptestConfig};
use proptest::strategy::Strategy as Gen;

fn problem() -> impl Gen<Value = (Gemm, Tiling)> {
    (1u64..40, 1u64..40, 1u64..40, 1u64..5, 1u64..12, 1u64..12, 1u64..12)
        .prop_map(|(m, n, k, e, tm, tn, tk)| (Gemm::new(m, n, k, e).unwrap(), Tiling::new(tm, tn, tk).unwrap()))
}

/// Zero, one or two levels with capacities from "holds nothing" to "holds a lot".
fn levels() -> impl Gen<Value = Vec<LevelSpec>> {
    prop::collection::vec(1u64..6000, 0..=2).prop_map(|caps| {
        let names = ["L2", "L3"];
        let start = 2 - caps.len();
        caps.into_iter().enumerate().map(|(i, c)| LevelSpec::new(names[start + i], c)).collect()
    })
}

/// The report with A and B exchanged (what the transposed problem should give).
fn swap_ab<T: Copy>(p: &PerTensor<T>) -> PerTensor<T> {
    PerTensor { a: p.b, b: p.a, c: p.c }
}

fn assert_transposed_equal(orig: &Report, transposed: &Report) {
    assert_eq!(orig.dram, swap_ab(&transposed.dram), "DRAM traffic");
    assert_eq!(orig.total_bytes, transposed.total_bytes);
    for (lo, lt) in orig.levels.iter().zip(&transposed.levels) {
        assert_eq!(lo.tensors, swap_ab(&lt.tensors), "level {}", lo.name);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// WS on (M, N, K) moves exactly what IS moves on (N, M, K) with A and B swapped, and the reverse.
    #[test]
    fn ws_and_is_are_transposes((gemm, tiling) in problem(), levels in levels()) {
        let (gt, tt) = (gemm.transposed(), tiling.transposed());
        for s in [Strategy::WeightStationary, Strategy::InputStationary] {
            let orig = simulate(&gemm, &tiling, s, &levels).unwrap();
            let transposed = simulate(&gt, &tt, s.transposed(), &levels).unwrap();
            assert_transposed_equal(&orig, &transposed);
        }
    }

    /// Bytes are conserved: inputs are read at least once and never written; C is written at
    /// least once; each C read from DRAM was preceded by a write of that data.
    #[test]
    fn traffic_is_bounded_below((gemm, tiling) in problem(), levels in levels()) {
        for s in Strategy::ALL {
            let r = simulate(&gemm, &tiling, s, &levels).unwrap();
            let min = gemm.tensor_bytes();
            for t in [Tensor::A, Tensor::B] {
                prop_assert!(r.dram[t].read_bytes >= min[t], "{s}: {t:?} read {} < {}", r.dram[t].read_bytes, min[t]);
                prop_assert_eq!(r.dram[t].write_bytes, 0);
                prop_assert!(r.overfetch[t] >= 1.0);
            }
            prop_assert!(r.dram.c.write_bytes >= min.c);
            prop_assert!(r.dram.c.read_bytes <= r.dram.c.write_bytes - min.c);
            if s == Strategy::OutputStationary {
                prop_assert_eq!(r.dram.c.read_bytes, 0);
            }
            let moved: u64 = Tensor::ALL.iter().map(|&t| r.dram[t].moved()).sum();
            prop_assert_eq!(moved, r.total_bytes);
        }
    }

    /// A last level that holds all three tensors gives exactly the minimum, edge tiles included.
    #[test]
    fn a_cache_holding_everything_moves_the_minimum((gemm, tiling) in problem(), l2 in 1u64..3000) {
        let min = gemm.tensor_bytes();
        let all = min.a + min.b + min.c;
        for levels in [vec![LevelSpec::new("L3", all)], vec![LevelSpec::new("L2", l2), LevelSpec::new("L3", all)]] {
            for s in Strategy::ALL {
                let r = simulate(&gemm, &tiling, s, &levels).unwrap();
                prop_assert_eq!(r.total_bytes, r.minimum_bytes, "{} with {:?}", s, levels);
                prop_assert_eq!(r.dram.c.read_bytes, 0);
            }
        }
    }
}

/// Without caches the figures have a closed form: only the core's hoisting saves anything.
#[test]
fn no_cache_traffic_matches_the_loop_nest() {
    let gemm = Gemm::new(10, 7, 9, 4).unwrap();
    let tiling = Tiling::new(4, 3, 2).unwrap(); // 3 x 3 x 5 tiles, all dimensions ragged
    let (mt, nt, kt) = (3, 3, 5);
    let min = gemm.tensor_bytes();
    let ws = simulate(&gemm, &tiling, Strategy::WeightStationary, &[]).unwrap();
    assert_eq!(ws.dram.a.read_bytes, min.a); // hoisted: once per (k, i)
    assert_eq!(ws.dram.b.read_bytes, mt * min.b);
    assert_eq!(ws.dram.c.write_bytes, kt * min.c);
    assert_eq!(ws.dram.c.read_bytes, (kt - 1) * min.c);
    let is = simulate(&gemm, &tiling, Strategy::InputStationary, &[]).unwrap();
    assert_eq!(is.dram.a.read_bytes, nt * min.a);
    assert_eq!(is.dram.b.read_bytes, min.b);
    let os = simulate(&gemm, &tiling, Strategy::OutputStationary, &[]).unwrap();
    assert_eq!(os.dram.a.read_bytes, nt * min.a);
    assert_eq!(os.dram.b.read_bytes, mt * min.b);
    assert_eq!(os.dram.c.write_bytes, min.c);
}
