//! Summary statistics of a sample set, with "no samples" kept distinct from 0.

use serde::{Deserialize, Serialize};

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
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
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
            stddev: var.sqrt(),
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
}
