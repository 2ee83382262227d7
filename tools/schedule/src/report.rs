//! What a simulation reports, and how a measured figure compares with it.

use crate::hierarchy::{LevelSpec, LevelStats, TensorTraffic};
use crate::problem::{Gemm, PerTensor, Tensor, Tiling};
use crate::strategy::Strategy;
use serde::Serialize;

/// One cache level's view of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelReport {
    /// Level name, e.g. "L3".
    pub name: String,
    /// Capacity in bytes.
    pub capacity: u64,
    /// Per-tensor counters.
    pub tensors: PerTensor<LevelStats>,
    /// Per-tensor hit rates (`None` where a tensor never reached this level).
    pub hit_rates: PerTensor<Option<f64>>,
    /// All tensors together.
    pub total: LevelStats,
    /// Hit rate over all tensors.
    pub hit_rate: Option<f64>,
}

impl LevelReport {
    pub(crate) fn new(spec: &LevelSpec, tensors: PerTensor<LevelStats>) -> Self {
        let total = tensors.a.plus(&tensors.b).plus(&tensors.c);
        LevelReport {
            name: spec.name.clone(),
            capacity: spec.capacity,
            hit_rates: tensors.map(|_, s| s.hit_rate()),
            tensors,
            hit_rate: total.hit_rate(),
            total,
        }
    }
}

/// DRAM traffic of one strategy on one problem and cache stack.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The loop order simulated.
    pub strategy: Strategy,
    /// Its loops, outermost first.
    pub loop_order: &'static str,
    /// The problem.
    pub gemm: Gemm,
    /// The tile extents.
    pub tiling: Tiling,
    /// Cache levels, nearest the core first.
    pub levels: Vec<LevelReport>,
    /// Bytes read from and written to DRAM per tensor.
    pub dram: PerTensor<TensorTraffic>,
    /// Minimum bytes per tensor: each input read once, C written once.
    pub minimum: PerTensor<u64>,
    /// `(read + written) / minimum` per tensor.
    pub overfetch: PerTensor<f64>,
    /// All bytes moved to and from DRAM.
    pub total_bytes: u64,
    /// Sum of the minimums.
    pub minimum_bytes: u64,
    /// `total_bytes / minimum_bytes`.
    pub total_overfetch: f64,
}

impl Report {
    pub(crate) fn new(
        strategy: Strategy,
        gemm: Gemm,
        tiling: Tiling,
        levels: Vec<LevelReport>,
        dram: PerTensor<TensorTraffic>,
    ) -> Self {
        let minimum = gemm.tensor_bytes();
        let overfetch = dram.map(|t, d| d.moved() as f64 / minimum[t] as f64);
        let total_bytes = dram.a.moved() + dram.b.moved() + dram.c.moved();
        let minimum_bytes = minimum.a + minimum.b + minimum.c;
        Report {
            strategy,
            loop_order: strategy.loop_order(),
            gemm,
            tiling,
            levels,
            dram,
            minimum,
            overfetch,
            total_bytes,
            minimum_bytes,
            total_overfetch: total_bytes as f64 / minimum_bytes as f64,
        }
    }

    /// Compare the prediction with DRAM bytes measured elsewhere (for example by the
    /// device simulator running the same schedule).
    pub fn compare(&self, measured: &PerTensor<TensorTraffic>) -> Comparison {
        let pick = |f: fn(&TensorTraffic) -> u64| PerTensor {
            a: Deviation::new(f(&self.dram.a), f(&measured.a)),
            b: Deviation::new(f(&self.dram.b), f(&measured.b)),
            c: Deviation::new(f(&self.dram.c), f(&measured.c)),
        };
        let measured_total: u64 = Tensor::ALL.iter().map(|&t| measured[t].moved()).sum();
        Comparison {
            read: pick(|t| t.read_bytes),
            write: pick(|t| t.write_bytes),
            total: Deviation::new(self.total_bytes, measured_total),
        }
    }
}

/// Predicted against measured bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Deviation {
    /// Bytes the schedule analysis predicts.
    pub predicted: u64,
    /// Bytes measured.
    pub measured: u64,
    /// `|measured - predicted| / predicted`; 0 when both are 0, infinite when only the prediction is 0.
    pub relative_error: f64,
}

impl Deviation {
    /// Compare two byte counts.
    pub fn new(predicted: u64, measured: u64) -> Self {
        let relative_error = match (predicted, measured) {
            (0, 0) => 0.0,
            (0, _) => f64::INFINITY,
            (p, m) => p.abs_diff(m) as f64 / p as f64,
        };
        Deviation { predicted, measured, relative_error }
    }
}

/// A prediction set against a measurement, per tensor and direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// DRAM reads per tensor.
    pub read: PerTensor<Deviation>,
    /// DRAM writes per tensor.
    pub write: PerTensor<Deviation>,
    /// All bytes moved.
    pub total: Deviation,
}

impl Comparison {
    /// The largest relative error over all tensors and directions.
    pub fn worst_relative_error(&self) -> f64 {
        Tensor::ALL
            .iter()
            .flat_map(|&t| [self.read[t].relative_error, self.write[t].relative_error])
            .fold(self.total.relative_error, f64::max)
    }

    /// Whether every figure agrees within `tolerance` (e.g. 0.05 for 5%).
    pub fn within(&self, tolerance: f64) -> bool {
        self.worst_relative_error() <= tolerance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traffic(a: (u64, u64), b: (u64, u64), c: (u64, u64)) -> PerTensor<TensorTraffic> {
        let t = |(r, w)| TensorTraffic { read_bytes: r, write_bytes: w };
        PerTensor { a: t(a), b: t(b), c: t(c) }
    }

    #[test]
    fn minimum_and_overfetch() {
        let g = Gemm::new(4, 2, 8, 2).unwrap();
        let r = Report::new(
            Strategy::OutputStationary,
            g,
            Tiling::square(2).unwrap(),
            vec![],
            traffic((64, 0), (96, 0), (8, 16)),
        );
        assert_eq!(r.minimum, PerTensor { a: 64, b: 32, c: 16 });
        assert_eq!(r.overfetch, PerTensor { a: 1.0, b: 3.0, c: 1.5 });
        assert_eq!((r.total_bytes, r.minimum_bytes), (184, 112));
        assert!((r.total_overfetch - 184.0 / 112.0).abs() < 1e-12);
    }

    #[test]
    fn comparison_with_measurement() {
        let g = Gemm::new(4, 2, 8, 2).unwrap();
        let r = Report::new(
            Strategy::OutputStationary,
            g,
            Tiling::square(2).unwrap(),
            vec![],
            traffic((64, 0), (96, 0), (0, 16)),
        );
        let same = r.compare(&r.dram);
        assert!(same.within(0.0));
        let off = r.compare(&traffic((64, 0), (100, 0), (0, 16)));
        assert!((off.read.b.relative_error - 4.0 / 96.0).abs() < 1e-12);
        assert!(off.within(0.05));
        assert!(!off.within(0.04));
        let unexpected = r.compare(&traffic((64, 8), (96, 0), (0, 16)));
        assert!(unexpected.write.a.relative_error.is_infinite());
        assert!(!unexpected.within(1.0));
    }
}
