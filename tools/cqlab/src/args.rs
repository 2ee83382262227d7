//! Parsers of option values that are more than a plain number in a range
//! (those use `clap::value_parser!(T).range(..)` at the option, so the
//! limit is declared once and printed in the refusal). Each parser says
//! what it expected and what it found.

use cqlab_abi::noc::Coord;
use std::ops::RangeInclusive;

/// A logical compute core `COL,ROW` (0-based, as tt-metal numbers them);
/// the device's grid is checked where the device is known
/// ([`on_grid`]).
pub fn worker(s: &str) -> Result<(u8, u8), String> {
    pair(s, "COL,ROW such as 0,1 (logical compute-core coordinates)")
}

/// Two numbers `A,B` of 0..=255; `shape` says what they are. A number too
/// large is named as such, not as a malformed pair (helper-44).
fn pair(s: &str, shape: &str) -> Result<(u8, u8), String> {
    let bad = || format!("expected {shape}, found {s:?}");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let one = |v: &str| -> Result<u8, String> {
        let n: u64 = v.trim().parse().map_err(|_| bad())?;
        u8::try_from(n).map_err(|_| format!("{s:?}: {n} is out of range 0..=255 (expected {shape})"))
    };
    Ok((one(a)?, one(b)?))
}

/// Whether logical core `(col, row)` lies on the device's compute grid;
/// the refusal names the chip and why its grid is that size.
pub fn on_grid(what: &'static str, (col, row): (u8, u8), chip: &cqlab_driver::Topology) -> Result<(), String> {
    chip.check_range(what, &cqlab_driver::CoreRange::single(col, row)).map_err(|e| e.to_string())
}

/// A tile by translated NOC coordinates `X,Y` (as traces and dumps name
/// cores); whether it runs firmware is checked against the device.
pub fn core(s: &str) -> Result<Coord, String> {
    let (x, y) = pair(s, "X,Y NOC coordinates (translated) such as 18,18")?;
    Ok(Coord::new(x, y))
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
    fn workers_and_cores_are_parsed_never_wrapped() {
        assert_eq!(worker("7, 9"), Ok((7, 9)));
        for bad in ["256,0", "0,256", "-1,0", "1", "a,b", ""] {
            assert!(worker(bad).is_err(), "{bad}");
        }
        assert_eq!(core("18,18"), Ok(Coord::new(18, 18)));
        for bad in ["256,1", "1", "x,y"] {
            assert!(core(bad).is_err(), "{bad}");
        }
        // Too large is said as such, not as a malformed pair.
        assert!(core("999,999").unwrap_err().contains("999 is out of range 0..=255"));
        assert!(worker("300,0").unwrap_err().contains("300 is out of range 0..=255"));
        let chip = cqlab_driver::Topology::for_board(cqlab_abi::soc::Board::WormholeN150, None, 2).unwrap();
        assert!(on_grid("--worker", (7, 7), &chip).is_ok());
        let e = on_grid("--worker", (8, 0), &chip).unwrap_err();
        assert!(e.contains("8x8") && e.contains("--worker") && e.contains("harvested"), "{e}");
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
