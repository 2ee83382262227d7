//! Parsers of option values that are more than a plain number in a range
//! (those use `clap::value_parser!(T).range(..)` at the option, so the
//! limit is declared once and printed in the refusal). Each parser says
//! what it expected and what it found.

use cqlab_abi::noc::{self, Coord, Endpoint, MAX_WORKER_COLS, MAX_WORKER_ROWS};
use std::ops::RangeInclusive;

/// A worker grid `COLSxROWS`, each at least 1 and at most the largest
/// grid (16x16).
pub fn grid(s: &str) -> Result<(u8, u8), String> {
    let bad = || format!("expected COLSxROWS such as 8x8 (1x1..={MAX_WORKER_COLS}x{MAX_WORKER_ROWS}), found {s:?}");
    let (c, r) = s.split_once('x').ok_or_else(bad)?;
    let (c, r): (u8, u8) = (c.parse().map_err(|_| bad())?, r.parse().map_err(|_| bad())?);
    if !(1..=MAX_WORKER_COLS).contains(&c) || !(1..=MAX_WORKER_ROWS).contains(&r) {
        return Err(format!("grid {c}x{r} is off the chip: columns 1..={MAX_WORKER_COLS}, rows 1..={MAX_WORKER_ROWS}"));
    }
    Ok((c, r))
}

/// A worker `COL,ROW` on the largest grid (0-based); the device's own grid
/// is checked where the device is known.
pub fn worker(s: &str) -> Result<(u8, u8), String> {
    let bad = || format!("expected COL,ROW such as 0,1, found {s:?}");
    let (c, r) = s.split_once(',').ok_or_else(bad)?;
    let (c, r): (u8, u8) = (c.trim().parse().map_err(|_| bad())?, r.trim().parse().map_err(|_| bad())?);
    if c >= MAX_WORKER_COLS || r >= MAX_WORKER_ROWS {
        return Err(format!(
            "worker {c},{r} is off the largest grid: columns 0..{MAX_WORKER_COLS}, rows 0..{MAX_WORKER_ROWS}"
        ));
    }
    Ok((c, r))
}

/// Whether worker `(col, row)` lies on a `cols` x `rows` grid; the refusal
/// names both.
pub fn on_grid(what: &str, (col, row): (u8, u8), (cols, rows): (u8, u8)) -> Result<(), String> {
    if col < cols && row < rows {
        Ok(())
    } else {
        Err(format!("{what} {col},{row} is off the device's {cols}x{rows} worker grid (0..{cols}, 0..{rows})"))
    }
}

/// A core by NOC coordinates `X,Y`: a worker, prefetcher or dispatcher
/// (DRAM, PCIe and empty tiles hold no trace ring).
pub fn core(s: &str) -> Result<Coord, String> {
    let bad = || format!("expected X,Y NOC coordinates such as 1,1, found {s:?}");
    let (x, y) = s.split_once(',').ok_or_else(bad)?;
    let c = Coord::new(x.trim().parse().map_err(|_| bad())?, y.trim().parse().map_err(|_| bad())?);
    match noc::endpoint(c) {
        Endpoint::Worker { .. } | Endpoint::Prefetcher { .. } | Endpoint::Dispatcher { .. } => Ok(c),
        other => {
            Err(format!("({},{}) is not a core of the chip ({other:?}): a worker, prefetcher or dispatcher", c.x, c.y))
        }
    }
}

/// A u64 in decimal or `0x` hex.
pub fn u64_any_base(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("expected a number (decimal or 0x hex), found {s:?}"))
}

/// A finite real number in `range`.
pub fn real(s: &str, range: RangeInclusive<f64>) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("expected a number, found {s:?}"))?;
    if !v.is_finite() || !range.contains(&v) {
        return Err(format!("{s} is not in {}..={}", range.start(), range.end()));
    }
    Ok(v)
}

/// A finite real number in `lo..hi` (the upper end excluded).
pub fn real_below(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v = real(s, lo..=hi)?;
    if v >= hi {
        return Err(format!("{s} is not in {lo}..{hi} ({hi} excluded)"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_and_workers_are_checked_never_wrapped() {
        assert_eq!(grid("8x8"), Ok((8, 8)));
        assert_eq!(grid("16x16"), Ok((16, 16)));
        for bad in ["0x0", "0x8", "17x1", "1x17", "255x255", "8", "8x", "x8", "-1x2", "8x8x8"] {
            assert!(grid(bad).is_err(), "{bad}");
        }
        assert_eq!(worker("15,15"), Ok((15, 15)));
        for bad in ["16,0", "0,16", "255,0", "1", "a,b"] {
            assert!(worker(bad).is_err(), "{bad}");
        }
        assert!(on_grid("--worker", (1, 1), (2, 2)).is_ok());
        let e = on_grid("--worker", (2, 0), (2, 2)).unwrap_err();
        assert!(e.contains("2x2") && e.contains("--worker 2,0"), "{e}");
        assert!(core("1,1").is_ok() && core("17,1").is_ok() && core("18,2").is_ok());
        for bad in ["0,0", "0,1", "19,1", "17,0", "1,17"] {
            assert!(core(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reals_are_finite_and_in_range() {
        assert_eq!(real("0.5", 0.0..=1.0), Ok(0.5));
        for bad in ["nan", "inf", "-0.1", "1.1", "x", ""] {
            assert!(real(bad, 0.0..=1.0).is_err(), "{bad}");
        }
        assert!(real_below("1", 0.0, 1.0).unwrap_err().contains("excluded"));
        assert_eq!(u64_any_base("0x10"), Ok(16));
        assert!(u64_any_base("0x").is_err());
    }
}
