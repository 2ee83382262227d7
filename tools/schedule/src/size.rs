//! Byte sizes as people write them: `512KiB`, `16MiB`, `1GiB`, `4096`.

use crate::error::{Result, ScheduleError};

/// Parse a size. Binary units `KiB`, `MiB`, `GiB`, `TiB` (also `K`, `M`, `G`, `T`, as cache
/// sizes are usually quoted), decimal units `KB`, `MB`, `GB`, `TB`, or `B` / no unit for
/// plain bytes. Case-insensitive; whitespace between number and unit is allowed.
pub fn parse_size(input: &str) -> Result<u64> {
    let bad = |reason| ScheduleError::BadSize { input: input.to_string(), reason };
    let s = input.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        return Err(bad("no number"));
    }
    let value: u64 = digits.parse().map_err(|_| bad("number too large"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(bad("unknown unit")),
    };
    value.checked_mul(scale).ok_or_else(|| bad("size overflows 64 bits"))
}

/// Parse a comma-separated list of sizes (`1MiB,16MiB`). Empty items are
/// errors, and so is a size given twice (`1MiB,1024KiB`): it would be
/// modelled twice.
pub fn parse_size_list(input: &str) -> Result<Vec<u64>> {
    let sizes: Vec<u64> = input.split(',').map(parse_size).collect::<Result<_>>()?;
    if sizes.iter().enumerate().any(|(i, s)| sizes[..i].contains(s)) {
        return Err(ScheduleError::BadSize { input: input.to_string(), reason: "a size appears twice" });
    }
    Ok(sizes)
}

/// Format a capacity in the largest binary unit that divides it exactly (`16MiB`, `1536KiB`, `100B`).
pub fn format_size(bytes: u64) -> String {
    for (unit, scale) in [("TiB", 1u64 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= scale && bytes % scale == 0 {
            return format!("{}{unit}", bytes / scale);
        }
    }
    format!("{bytes}B")
}

/// Format traffic in decimal gigabytes (1e9 B) with two decimals, as bandwidth figures are quoted.
pub fn format_gb(bytes: u64) -> String {
    format!("{:.2} GB", bytes as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("16MiB").unwrap(), 16 << 20);
        assert_eq!(parse_size("512KiB").unwrap(), 512 << 10);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size(" 4096 ").unwrap(), 4096);
        assert_eq!(parse_size("2 mib").unwrap(), 2 << 20);
        assert_eq!(parse_size("3M").unwrap(), 3 << 20);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("7B").unwrap(), 7);
        assert_eq!(parse_size_list("1MiB,2MiB,16MiB").unwrap(), vec![1 << 20, 2 << 20, 16 << 20]);
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "MiB", "16 furlongs", "-1", "1.5MiB", "99999999999999999999", "20000000TiB"] {
            assert!(matches!(parse_size(bad), Err(ScheduleError::BadSize { .. })), "{bad:?}");
        }
        assert!(parse_size_list("1MiB,,2MiB").is_err());
        assert!(parse_size_list("1MiB,1024KiB").is_err(), "one size twice");
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(16 << 20), "16MiB");
        assert_eq!(format_size(1536 << 10), "1536KiB");
        assert_eq!(format_size(100), "100B");
        assert_eq!(format_gb(54_550_000_000), "54.55 GB");
        for s in [1u64, 1 << 10, 3 << 20, 5 << 30, 1000] {
            assert_eq!(parse_size(&format_size(s)).unwrap(), s);
        }
    }
}
