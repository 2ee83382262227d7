//! What the environment chooses, read at every `libttsim_init`: a host
//! loading the library through tt-umd passes no arguments. A host that
//! knows it loaded cqlab's library (cqlab's own driver, `--device ttsim:`)
//! may set any of them for the next `init` with `cqlab_ttsim_set(name,
//! value)` instead: such a value wins over the environment's until
//! `libttsim_exit`.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `CQLAB_TTSIM_BOARD` | the card: `n150`, `n300` (Wormhole library), `p100a`, `p150a` (Blackhole), or the full `--chip` name | `n150` / `p150a` |
//! | `CQLAB_TTSIM_HARVEST` | harvesting in `--harvest` syntax (`none`, `rows=1,8`, `cols=7,10,dram=3,eth=all`) | `none`: every tile of the descriptor beside the library, which is all tt-umd knows |
//! | `CQLAB_TTSIM_SEED` | the seed (decimal or `0x` hex); chip `k` runs on seed + `k` | 0 |
//! | `CQLAB_TTSIM_QUANTUM_JITTER` | cycles of seeded jitter on each scheduling slice | 0 |
//! | `CQLAB_TTSIM_NOC_JITTER` | cycles of seeded jitter on each NOC and PCIe transfer | 0 |
//! | `CQLAB_TTSIM_LOG` | `errors`, `calls` (every call with its arguments) or `off` | `errors` |

use crate::error::{ApiError, Log};
use cqlab_abi::arch::Arch;
use cqlab_abi::soc::{Board, Harvesting};
use cqlab_sim::config::{SimConfig, MAX_FAULT_CYCLES};

/// Every variable a host may set (`cqlab_ttsim_set`).
pub const NAMES: [&str; 6] = [
    "CQLAB_TTSIM_BOARD",
    "CQLAB_TTSIM_HARVEST",
    "CQLAB_TTSIM_SEED",
    "CQLAB_TTSIM_QUANTUM_JITTER",
    "CQLAB_TTSIM_NOC_JITTER",
    "CQLAB_TTSIM_LOG",
];

/// The environment's choices.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub board: Board,
    pub harvesting: Harvesting,
    pub seed: u64,
    pub quantum_jitter: u64,
    pub noc_jitter: u64,
    pub log: Log,
}

fn bad(var: &'static str, value: &str, reason: impl Into<String>) -> ApiError {
    ApiError::Setting { var, value: value.to_string(), reason: reason.into() }
}

fn number(var: &'static str, value: &str) -> Result<u64, ApiError> {
    let v = value.trim();
    let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    parsed.map_err(|e| bad(var, value, format!("expected a number (decimal or 0x hex): {e}")))
}

/// The board a `CQLAB_TTSIM_BOARD` value names, on `arch`.
fn board(arch: Arch, value: &str) -> Result<Board, ApiError> {
    value.parse::<Board>().ok().filter(|b| b.arch() == arch).ok_or_else(|| {
        let names: Vec<&str> = Board::ALL.into_iter().filter(|b| b.arch() == arch).map(Board::short_name).collect();
        bad(
            "CQLAB_TTSIM_BOARD",
            value,
            format!("this is the {} library; boards: {}", arch.short_name(), names.join(", ")),
        )
    })
}

impl Settings {
    /// Reads them through `get` (the environment, or a test's table).
    pub fn read(arch: Arch, get: impl Fn(&str) -> Option<String>) -> Result<Settings, ApiError> {
        let board = match get("CQLAB_TTSIM_BOARD") {
            Some(v) => board(arch, &v)?,
            None => match arch {
                Arch::Wormhole => Board::WormholeN150,
                Arch::Blackhole => Board::BlackholeP150a,
            },
        };
        let harvesting = match get("CQLAB_TTSIM_HARVEST") {
            Some(v) => {
                let h = Harvesting::parse(&v).map_err(|e| bad("CQLAB_TTSIM_HARVEST", &v, e.to_string()))?;
                cqlab_abi::soc::ChipLayout::new(board, h.clone())
                    .map_err(|e| bad("CQLAB_TTSIM_HARVEST", &v, format!("not a harvesting of this board: {e}")))?;
                h
            }
            None => Harvesting::none(),
        };
        let opt = |var: &'static str| get(var).map(|v| number(var, &v)).transpose();
        // Bounded here, naming the variable: past the bound the first
        // draw overflowed, inside a call that cannot report a panic.
        let cycles = |var: &'static str| match get(var) {
            None => Ok(0),
            Some(v) => match number(var, &v)? {
                n if n <= MAX_FAULT_CYCLES => Ok(n),
                _ => Err(bad(var, &v, format!("expected at most {MAX_FAULT_CYCLES} cycles"))),
            },
        };
        let log = match get("CQLAB_TTSIM_LOG").as_deref() {
            None | Some("errors") => Log::Errors,
            Some("calls") => Log::Calls,
            Some("off") => Log::Off,
            Some(v) => return Err(bad("CQLAB_TTSIM_LOG", v, "expected errors, calls or off")),
        };
        Ok(Settings {
            board,
            harvesting,
            seed: opt("CQLAB_TTSIM_SEED")?.unwrap_or(0),
            quantum_jitter: cycles("CQLAB_TTSIM_QUANTUM_JITTER")?,
            noc_jitter: cycles("CQLAB_TTSIM_NOC_JITTER")?,
            log,
        })
    }

    /// From the process environment.
    pub fn from_env(arch: Arch) -> Result<Settings, ApiError> {
        Self::read(arch, |var| std::env::var(var).ok())
    }

    /// From `overrides` (name, value), then the process environment.
    pub fn with_overrides(arch: Arch, overrides: &[(String, String)]) -> Result<Settings, ApiError> {
        Self::read(arch, |var| {
            overrides.iter().rev().find(|(n, _)| n == var).map(|(_, v)| v.clone()).or_else(|| std::env::var(var).ok())
        })
    }

    /// The configuration of chip `id`: the board's chip with the default
    /// timing, the whole host-memory range of the chip forwarded to the
    /// host (the DMA callbacks decide what is there), seed + `id`.
    pub fn chip_config(&self, id: u32) -> SimConfig {
        let mut cfg = SimConfig::for_board(self.board);
        cfg.harvesting = self.harvesting.clone();
        cfg.seed = self.seed.wrapping_add(id as u64);
        cfg.quantum_jitter = self.quantum_jitter;
        cfg.faults.noc_jitter_cycles = self.noc_jitter;
        cfg.sysmem_size = host_window(self.board.arch());
        cfg
    }
}

/// Bytes of host memory the PCIe tile forwards on `arch`.
pub fn host_window(arch: Arch) -> usize {
    arch.params().bar.host_mem_size as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(arch: Arch, vars: &[(&str, &str)]) -> Result<Settings, ApiError> {
        Settings::read(arch, |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn defaults_and_values() {
        let s = read(Arch::Wormhole, &[]).unwrap();
        assert_eq!((s.board, s.seed, s.log), (Board::WormholeN150, 0, Log::Errors));
        assert_eq!(s.harvesting, Harvesting::none(), "the descriptor beside the library has every tile");
        assert_eq!(read(Arch::Blackhole, &[]).unwrap().board, Board::BlackholeP150a);
        let s = read(Arch::Blackhole, &[("CQLAB_TTSIM_BOARD", "p100a"), ("CQLAB_TTSIM_SEED", "0x10")]).unwrap();
        assert_eq!((s.board, s.seed), (Board::BlackholeP100a, 16));
        assert_eq!(s.chip_config(2).seed, 18);
        assert!(s.chip_config(0).validate().is_ok());
        let s = read(Arch::Wormhole, &[("CQLAB_TTSIM_BOARD", "wormhole-n300"), ("CQLAB_TTSIM_HARVEST", "rows=1,8")]);
        assert_eq!(s.unwrap().harvesting, Harvesting::rows(&[1, 8]));
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (arch, var, value) in [
            (Arch::Wormhole, "CQLAB_TTSIM_BOARD", "p150a"),
            (Arch::Wormhole, "CQLAB_TTSIM_SEED", "twelve"),
            (Arch::Wormhole, "CQLAB_TTSIM_HARVEST", "cols=7"),
            (Arch::Blackhole, "CQLAB_TTSIM_LOG", "loud"),
            // u64::MAX was accepted and overflowed the first draw (helper-52).
            (Arch::Wormhole, "CQLAB_TTSIM_QUANTUM_JITTER", "18446744073709551615"),
            (Arch::Blackhole, "CQLAB_TTSIM_NOC_JITTER", "10000001"),
        ] {
            let e = read(arch, &[(var, value)]).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{var}=\"{value}\"")), "{e}");
        }
        let e = read(Arch::Wormhole, &[("CQLAB_TTSIM_HARVEST", "rows=6")]).unwrap_err().to_string();
        assert_eq!(e.matches("wormhole-n150").count(), 1, "the board is named once: {e}");
        let s = read(Arch::Wormhole, &[("CQLAB_TTSIM_NOC_JITTER", "10000000")]).unwrap();
        assert!(s.chip_config(0).validate().is_ok());
    }
}
