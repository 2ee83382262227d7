//! Statistics of campaigns: the failure-rate interval and drift of a metric
//! over consecutive runs.

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
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Drift of one metric over run index.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Drift {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n - 1).
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
    let var = if n > 1 { values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
    let k = n.min(10);
    let avg = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let xm = (n - 1) as f64 / 2.0;
    let sxx: f64 = (0..n).map(|i| (i as f64 - xm).powi(2)).sum();
    let sxy: f64 = values.iter().enumerate().map(|(i, v)| (i as f64 - xm) * (v - mean)).sum();
    Some(Drift {
        n,
        mean,
        stddev: var.sqrt(),
        first10: avg(&values[..k]),
        last10: avg(&values[n - k..]),
        slope: if sxx > 0.0 { sxy / sxx } else { 0.0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_the_textbook_values() {
        // 0 of 10: upper bound 0.2775 (Wilson); 5 of 10: 0.2366..0.7634.
        let (lo, hi) = wilson(0, 10);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.2775).abs() < 1e-3, "{hi}");
        let (lo, hi) = wilson(5, 10);
        assert!((lo - 0.2366).abs() < 1e-3 && (hi - 0.7634).abs() < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn drift_finds_the_slope_and_the_ends() {
        let v: Vec<f64> = (0..30).map(|i| 100.0 + 2.0 * i as f64).collect();
        let d = drift(&v).unwrap();
        assert!((d.slope - 2.0).abs() < 1e-9);
        assert_eq!((d.first10, d.last10), (109.0, 149.0));
        assert!((d.mean - 129.0).abs() < 1e-9);
    }
}
