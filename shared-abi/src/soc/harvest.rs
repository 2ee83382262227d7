//! Harvesting: which Tensix rows (Wormhole) or columns (Blackhole), DRAM
//! banks and Ethernet channels a chip has fused off.
//!
//! Text form, for a `--harvest` option: comma-separated `key=values` groups,
//! a value list continuing until the next `key=`:
//!
//! - `rows=1,8` (Wormhole: NOC0 y of the harvested Tensix rows)
//! - `cols=7,10,dram=3,eth=all` (Blackhole: NOC0 x of the harvested Tensix
//!   columns, DRAM bank numbers, Ethernet channels or `all`)
//! - `none` (nothing harvested)
//!
//! A value replaces the board's default harvesting as a whole: `cols=7,10`
//! on a p100a means its DRAM and Ethernet are all present. Rows and columns
//! are NOC0 coordinates (not tt-umd's mask bits) so they can be read off the
//! grid. [`Harvesting::validate`] checks a value against a chip.

use std::string::{String, ToString};
use std::vec::Vec;

use crate::arch::Arch;
use crate::noc::Coord;

use super::board::Board;
use super::descriptor::SocDescriptor;
use super::error::HarvestError;

/// Harvested Ethernet channels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EthHarvest {
    /// These channels (sorted).
    Channels(Vec<u8>),
    /// Every channel (a p100a has no Ethernet).
    All,
}

impl Default for EthHarvest {
    fn default() -> Self {
        EthHarvest::Channels(Vec::new())
    }
}

/// What a chip has fused off.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Harvesting {
    rows: Vec<u8>,
    cols: Vec<u8>,
    dram: Vec<u8>,
    eth: EthHarvest,
}

fn sorted(v: &[u8]) -> Vec<u8> {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

impl Harvesting {
    /// Nothing harvested.
    pub fn none() -> Self {
        Self::default()
    }

    /// Tensix rows at these NOC0 y (Wormhole).
    pub fn rows(ys: &[u8]) -> Self {
        Self { rows: sorted(ys), ..Self::default() }
    }

    /// Tensix columns at these NOC0 x (Blackhole).
    pub fn cols(xs: &[u8]) -> Self {
        Self { cols: sorted(xs), ..Self::default() }
    }

    /// And these DRAM banks.
    pub fn with_dram(mut self, banks: &[u8]) -> Self {
        self.dram = sorted(banks);
        self
    }

    /// And these Ethernet channels.
    pub fn with_eth(mut self, eth: EthHarvest) -> Self {
        self.eth = match eth {
            EthHarvest::Channels(c) => EthHarvest::Channels(sorted(&c)),
            EthHarvest::All => EthHarvest::All,
        };
        self
    }

    pub fn tensix_rows(&self) -> &[u8] {
        &self.rows
    }

    pub fn tensix_cols(&self) -> &[u8] {
        &self.cols
    }

    pub fn dram_banks(&self) -> &[u8] {
        &self.dram
    }

    pub fn eth(&self) -> &EthHarvest {
        &self.eth
    }

    /// Whether the Tensix tile at NOC0 `c` is in a harvested row or column.
    pub fn tensix_harvested(&self, c: Coord) -> bool {
        self.rows.contains(&c.y) || self.cols.contains(&c.x)
    }

    pub fn dram_harvested(&self, bank: usize) -> bool {
        self.dram.iter().any(|&b| b as usize == bank)
    }

    pub fn eth_harvested(&self, channel: usize) -> bool {
        match &self.eth {
            EthHarvest::All => true,
            EthHarvest::Channels(c) => c.iter().any(|&ch| ch as usize == channel),
        }
    }

    /// Checks the value against `desc`'s chip: the right axis, real rows,
    /// columns, banks and channels, and at least one Tensix line left.
    pub fn validate(&self, desc: &SocDescriptor) -> Result<(), HarvestError> {
        let arch = desc.arch;
        match arch {
            Arch::Wormhole => {
                if !self.cols.is_empty() {
                    return Err(HarvestError::WrongAxis { arch, expected: "rows", found: "cols" });
                }
                let valid = tensix_lines(desc, |c| c.y);
                check_lines(arch, "row", &self.rows, &valid)?;
                if !self.dram.is_empty() {
                    return Err(HarvestError::NotHarvestable { arch, unit: "DRAM banks" });
                }
                if self.eth != EthHarvest::default() {
                    return Err(HarvestError::NotHarvestable { arch, unit: "Ethernet channels" });
                }
            }
            Arch::Blackhole => {
                if !self.rows.is_empty() {
                    return Err(HarvestError::WrongAxis { arch, expected: "cols", found: "rows" });
                }
                let valid = tensix_lines(desc, |c| c.x);
                check_lines(arch, "column", &self.cols, &valid)?;
                // tt-umd `blackhole_coordinate_manager.cpp`: "At most DRAM bank
                // can be harvested on Blackhole" (its translated layout has
                // one spare slot).
                if self.dram.len() > 1 {
                    return Err(HarvestError::TooManyDramBanks { arch, count: self.dram.len(), max: 1 });
                }
                if let Some(&bank) = self.dram.iter().find(|&&b| b as usize >= desc.dram.len()) {
                    return Err(HarvestError::DramBankOutOfRange { arch, bank, banks: desc.dram.len() });
                }
                if let EthHarvest::Channels(chs) = &self.eth {
                    if let Some(&channel) = chs.iter().find(|&&c| c as usize >= desc.eth.len()) {
                        return Err(HarvestError::EthChannelOutOfRange { arch, channel, channels: desc.eth.len() });
                    }
                }
            }
        }
        Ok(())
    }

    /// Parses the text form (module docs).
    pub fn parse(s: &str) -> Result<Harvesting, HarvestError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(HarvestError::Empty);
        }
        if s == "none" {
            return Ok(Harvesting::none());
        }
        let mut groups: Vec<(&'static str, Vec<&str>)> = Vec::new();
        for token in s.split(',').map(str::trim) {
            if let Some((key, first)) = token.split_once('=') {
                let key = match key.trim() {
                    "rows" => "rows",
                    "cols" => "cols",
                    "dram" => "dram",
                    "eth" => "eth",
                    other => return Err(HarvestError::UnknownKey { key: other.to_string() }),
                };
                if groups.iter().any(|(k, _)| *k == key) {
                    return Err(HarvestError::RepeatedKey { key });
                }
                let first = first.trim();
                groups.push((key, if first.is_empty() { Vec::new() } else { Vec::from([first]) }));
            } else {
                let Some((_, values)) = groups.last_mut() else {
                    return Err(HarvestError::NoKey { token: token.to_string() });
                };
                if !token.is_empty() {
                    values.push(token);
                }
            }
        }
        let mut h = Harvesting::none();
        for (key, values) in groups {
            if values.is_empty() {
                return Err(HarvestError::EmptyList { key });
            }
            if key == "eth" && values == ["all"] {
                h.eth = EthHarvest::All;
                continue;
            }
            let nums = numbers(key, &values)?;
            match key {
                "rows" => h.rows = nums,
                "cols" => h.cols = nums,
                "dram" => h.dram = nums,
                _ => h.eth = EthHarvest::Channels(nums),
            }
        }
        Ok(h)
    }
}

fn numbers(key: &'static str, values: &[&str]) -> Result<Vec<u8>, HarvestError> {
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        if *v == "all" {
            return Err(HarvestError::AllNotAllowed { key });
        }
        let n: u8 = v.parse().map_err(|_| HarvestError::BadNumber { key, token: v.to_string() })?;
        if out.contains(&n) {
            return Err(HarvestError::Duplicate { key, value: n });
        }
        out.push(n);
    }
    out.sort_unstable();
    Ok(out)
}

/// The distinct Tensix rows (or columns) of the descriptor, sorted.
fn tensix_lines(desc: &SocDescriptor, axis: impl Fn(Coord) -> u8) -> Vec<u8> {
    let mut v: Vec<u8> = desc.tensix.iter().map(|&c| axis(c)).collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn check_lines(arch: Arch, axis: &'static str, given: &[u8], valid: &[u8]) -> Result<(), HarvestError> {
    if let Some(&value) = given.iter().find(|v| !valid.contains(v)) {
        let valid = valid.iter().map(u8::to_string).collect::<Vec<_>>().join(", ");
        return Err(HarvestError::NotTensixLine { arch, axis, value, valid });
    }
    if given.len() == valid.len() {
        return Err(HarvestError::AllTensixHarvested { arch, axis, count: valid.len() });
    }
    Ok(())
}

impl core::str::FromStr for Harvesting {
    type Err = HarvestError;

    fn from_str(s: &str) -> Result<Harvesting, HarvestError> {
        Harvesting::parse(s)
    }
}

impl core::fmt::Display for Harvesting {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let list = |v: &[u8]| v.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
        let mut parts: Vec<String> = Vec::new();
        if !self.rows.is_empty() {
            parts.push(std::format!("rows={}", list(&self.rows)));
        }
        if !self.cols.is_empty() {
            parts.push(std::format!("cols={}", list(&self.cols)));
        }
        if !self.dram.is_empty() {
            parts.push(std::format!("dram={}", list(&self.dram)));
        }
        match &self.eth {
            EthHarvest::All => parts.push("eth=all".to_string()),
            EthHarvest::Channels(c) if !c.is_empty() => parts.push(std::format!("eth={}", list(c))),
            EthHarvest::Channels(_) => {}
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(","))
        }
    }
}

/// The harvesting side of a board (here, so `board` depends on nothing
/// else of `soc`).
impl Board {
    /// The harvesting of a typical card, used when none is given.
    ///
    /// - n150: Tensix row y=8 (tt-umd `tests/cluster_descriptor_examples/
    ///   wormhole_N150.yaml` harvest_mask 64; one row per
    ///   `cluster_descriptor_types.hpp` expected_tensix_harvested_units_map).
    /// - n300: rows y=1 and y=8 (`wormhole_N300.yaml` chip 0 harvest_mask 65).
    /// - p100a: Tensix columns x=7 and x=10, DRAM bank 3, every Ethernet
    ///   channel (`blackhole_P100.yaml` harvest_mask 192,
    ///   dram_harvesting_mask 8, eth_harvesting_mask 16383).
    /// - p150a: columns x=7 and x=10 (two since CMFW 19.5: tt-umd commit
    ///   5bcdcd4e), Ethernet channels 5 and 8 (`blackhole_P150.yaml`
    ///   harvest_mask 192, eth_harvesting_mask 288).
    pub fn default_harvesting(self) -> Harvesting {
        match self {
            Board::WormholeN150 => Harvesting::rows(&[8]),
            Board::WormholeN300 => Harvesting::rows(&[1, 8]),
            Board::BlackholeP100a => Harvesting::cols(&[7, 10]).with_dram(&[3]).with_eth(EthHarvest::All),
            Board::BlackholeP150a => Harvesting::cols(&[7, 10]).with_eth(EthHarvest::Channels(Vec::from([5, 8]))),
        }
    }

    /// The harvesting a `--harvest` option gives: its value parsed, or the
    /// board's default when the option is absent. (A value replaces the
    /// default as a whole; [`ChipLayout::new`](super::ChipLayout::new)
    /// checks it against the chip.)
    pub fn harvesting(self, option: Option<&str>) -> Result<Harvesting, HarvestError> {
        option.map_or_else(|| Ok(self.default_harvesting()), Harvesting::parse)
    }
}
