//! Errors of the chip descriptions and of harvesting values. Each says what
//! was expected, what was found, and where. (A layout's errors name its
//! board, so they live with the layout.)

use std::string::String;

use crate::arch::Arch;
use crate::noc::Coord;

/// A SoC descriptor file cqlab cannot use.
#[derive(Debug, thiserror::Error)]
pub enum SocError {
    #[error("{file}: not a SoC descriptor: {error}")]
    Yaml { file: String, error: serde_yaml_ng::Error },
    #[error("{file}: arch_name {found:?} is not a chip cqlab models (expected WORMHOLE_B0 or BLACKHOLE)")]
    UnknownArch { file: String, found: String },
    #[error("{file}: {key}[{index}] = {text:?} is not an \"x-y\" coordinate")]
    BadCoord { file: String, key: &'static str, index: usize, text: String },
    #[error("{file}: {key}[{index}] = {coord} lies outside the {width}x{height} grid")]
    OutOfGrid { file: String, key: &'static str, index: usize, coord: Coord, width: u8, height: u8 },
    #[error("{file}: tile {coord} is listed under both {first} and {second}")]
    Duplicate { file: String, coord: Coord, first: &'static str, second: &'static str },
    #[error("{file}: no list names tile {coord}; every tile of the grid needs a kind")]
    Uncovered { file: String, coord: Coord },
    #[error("{file}: {key} must map each of the {size} NOC0 values to a distinct NOC1 value, found {found:?}")]
    BadNocTable { file: String, key: &'static str, size: u8, found: std::vec::Vec<u8> },
    #[error("{file}: dram_views[{index}]: {problem}")]
    BadDramView { file: String, index: usize, problem: String },
}

/// A harvesting value that cannot be parsed or does not fit the chip.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HarvestError {
    #[error("empty harvesting value; expected e.g. `rows=1,8`, `cols=7,10,dram=3,eth=all` or `none`")]
    Empty,
    #[error("`{token}` comes before any key; expected `rows=`, `cols=`, `dram=` or `eth=` first (e.g. `rows=1,8`)")]
    NoKey { token: String },
    #[error("unknown harvesting key `{key}`; the keys are rows, cols, dram and eth")]
    UnknownKey { key: String },
    #[error("`{key}=` is given twice")]
    RepeatedKey { key: &'static str },
    #[error("`{key}=` needs at least one value")]
    EmptyList { key: &'static str },
    #[error("`{token}` in `{key}=` is not a line or bank number (0..=255)")]
    BadNumber { key: &'static str, token: String },
    #[error("`{key}=` lists {value} twice")]
    Duplicate { key: &'static str, value: u8 },
    #[error("`all` is only allowed for eth=")]
    AllNotAllowed { key: &'static str },
    #[error("{arch} harvests Tensix {expected}, not {found}: use `{expected}=`")]
    WrongAxis { arch: Arch, expected: &'static str, found: &'static str },
    #[error("{arch} has no Tensix {axis} {value}; the Tensix {axis}s are {valid}")]
    NotTensixLine { arch: Arch, axis: &'static str, value: u8, valid: String },
    #[error("harvesting all {count} Tensix {axis}s of {arch} leaves no Tensix tile")]
    AllTensixHarvested { arch: Arch, axis: &'static str, count: usize },
    #[error("{arch} does not harvest {unit}")]
    NotHarvestable { arch: Arch, unit: &'static str },
    #[error("{arch} harvests at most {max} DRAM bank, {count} given")]
    TooManyDramBanks { arch: Arch, count: usize, max: usize },
    #[error("{arch} has DRAM banks 0..{banks}, bank {bank} does not exist")]
    DramBankOutOfRange { arch: Arch, bank: u8, banks: usize },
    #[error("{arch} has Ethernet channels 0..{channels}, channel {channel} does not exist")]
    EthChannelOutOfRange { arch: Arch, channel: u8, channels: usize },
}
