//! Statistics of measured samples, in one place: summaries (mean,
//! percentiles, spread), the failure-rate interval of a campaign, and the
//! drift of a metric over consecutive runs. "No samples" is kept distinct
//! from 0.
//!
//! Every standard deviation here is the *sample* standard deviation (divided
//! by n - 1, Bessel's correction): the values are always a sample (of runs,
//! seeds, iterations) drawn from a process whose spread is what we want to
//! know, never the whole population of its outcomes, and dividing by n
//! would understate that spread for the small n campaigns often have. One
//! sample has no measured spread: 0.

use serde::{Deserialize, Serialize};

/// Sample standard deviation of `values` about their `mean` (see the
/// module documentation); 0 for fewer than two values.
pub fn stddev(values: &[f64], mean: f64) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    (values.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
}

/// Mean, percentiles (nearest rank), extremes and spread of samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub samples: u64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (see the module documentation).
    pub stddev: f64,
}

impl Summary {
    /// `None` when there are no samples: a missing figure is never 0.
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        // Nearest-rank percentile: the smallest sample with at least p% at or below it.
        let pct = |p: f64| v[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Self {
            samples: n as u64,
            mean,
            p50: pct(50.0),
            p95: pct(95.0),
            p99: pct(99.0),
            min: v[0],
            max: v[n - 1],
            stddev: stddev(&v, mean),
        })
    }

    /// The same summary with every value scaled (cycles to microseconds).
    pub fn scaled(&self, k: f64) -> Self {
        Self {
            samples: self.samples,
            mean: self.mean * k,
            p50: self.p50 * k,
            p95: self.p95 * k,
            p99: self.p99 * k,
            min: self.min * k,
            max: self.max * k,
            stddev: self.stddev * k,
        }
    }
}

/// 95% Wilson score interval of `k` failures in `n` runs (Wilson 1927; the
/// interval that stays inside 0..1 and is not degenerate at 0 or n).
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let (n, p) = (n as f64, k as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    // At k = 0 (or n) the bound is 0 (or 1) exactly; rounding left 5.6e-17
    // in a script's `lo == 0` (helper-31).
    let lo = if k == 0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if k as f64 == n { 1.0 } else { (centre + half).min(1.0) };
    (lo, hi)
}

/// Drift of one metric over run index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (see the module documentation).
    pub stddev: f64,
    /// Mean of the first 10 and of the last 10 values (fewer if shorter).
    pub first10: f64,
    pub last10: f64,
    /// Least-squares slope of the value against run index (units per run).
    pub slope: f64,
}

pub fn drift(values: &[f64]) -> Option<Drift> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let k = n.min(10);
    let avg = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let xm = (n - 1) as f64 / 2.0;
    let sxx: f64 = (0..n).map(|i| (i as f64 - xm).powi(2)).sum();
    let sxy: f64 = values.iter().enumerate().map(|(i, v)| (i as f64 - xm) * (v - mean)).sum();
    Some(Drift {
        n,
        mean,
        stddev: stddev(values, mean),
        first10: avg(&values[..k]),
        last10: avg(&values[n - k..]),
        slope: if sxx > 0.0 { sxy / sxx } else { 0.0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert_eq!((s.p50, s.p95, s.p99, s.min, s.max), (50.0, 95.0, 99.0, 1.0, 100.0));
        assert_eq!(s.mean, 50.5);
        assert!(Summary::of(&[]).is_none());
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.p50, one.p99, one.stddev), (7.0, 7.0, 0.0));
    }

    #[test]
    fn wilson_matches_the_textbook_values() {
        // 0 of 10: upper bound 0.2775 (Wilson); 5 of 10: 0.2366..0.7634.
        let (lo, hi) = wilson(0, 10);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.2775).abs() < 1e-3, "{hi}");
        let (lo, hi) = wilson(5, 10);
        assert!((lo - 0.2366).abs() < 1e-3 && (hi - 0.7634).abs() < 1e-3, "{lo} {hi}");
        // Exact at the ends for every n (3 of 3 left 5.6e-17 at 0 of 3).
        for n in 1..=100 {
            assert_eq!((wilson(0, n).0, wilson(n, n).1), (0.0, 1.0), "n = {n}");
        }
    }

    #[test]
    fn drift_finds_the_slope_and_the_ends() {
        let v: Vec<f64> = (0..30).map(|i| 100.0 + 2.0 * i as f64).collect();
        let d = drift(&v).unwrap();
        assert!((d.slope - 2.0).abs() < 1e-9);
        assert_eq!((d.first10, d.last10), (109.0, 149.0));
        assert!((d.mean - 129.0).abs() < 1e-9);
    }

    #[test]
    fn the_standard_deviation_is_the_sample_one() {
        // 2, 4, 4, 4, 5, 5, 7, 9: population sd 2, sample sd sqrt(32/7).
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Summary::of(&v).unwrap();
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12, "{}", s.stddev);
        assert_eq!(drift(&v).unwrap().stddev, s.stddev);
    }
}
