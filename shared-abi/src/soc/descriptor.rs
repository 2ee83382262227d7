//! The SoC descriptor files (`shared-abi/chips/*.yaml`, tt-umd's format),
//! embedded in the crate and parsed with serde.
//!
//! The keys and their meaning follow tt-umd's parser (tt-umd
//! `device/soc_arch_descriptor.cpp` `SocArchDescriptor::load_from_yaml`) and
//! tt-metal's extra `dram_views` (tt-metal
//! `tt_metal/soc_descriptors/*_arch.yaml`). Every coordinate is an `"x-y"`
//! string in NOC0 coordinates. Parsing also checks what tt-umd leaves to
//! trust: coordinates inside the grid, every tile listed exactly once, the
//! NOC1 tables permutations, the DRAM views pointing at real endpoints.

use std::collections::BTreeMap;
use std::format;
use std::string::{String, ToString};
use std::sync::OnceLock;
use std::vec::Vec;

use serde::Deserialize;

use crate::arch::{Arch, GridSize};
use crate::noc::Coord;

use super::error::SocError;

/// Wormhole B0's descriptor text.
pub const WORMHOLE_YAML: &str = include_str!("../../chips/wormhole_b0_80_arch.yaml");
/// Blackhole's descriptor text.
pub const BLACKHOLE_YAML: &str = include_str!("../../chips/blackhole_140_arch.yaml");

/// One of tt-metal's DRAM banks ("view") of a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct DramView {
    /// Index into [`SocDescriptor::dram`].
    pub channel: u8,
    /// Port (index into the channel's endpoints) Ethernet cores use, for
    /// NOC0 and NOC1.
    pub eth_endpoint: [u8; 2],
    /// Port workers use, for NOC0 and NOC1.
    pub worker_endpoint: [u8; 2],
    /// Where the view starts inside the channel.
    pub address_offset: u64,
}

#[derive(Deserialize)]
struct RawGrid {
    x_size: u8,
    y_size: u8,
}

#[derive(Deserialize)]
struct RawDescriptor {
    grid: RawGrid,
    arc: Vec<String>,
    pcie: Vec<String>,
    dram: Vec<Vec<String>>,
    eth: Vec<String>,
    functional_workers: Vec<String>,
    #[serde(default)]
    harvested_workers: Vec<String>,
    router_only: Vec<String>,
    #[serde(default)]
    security: Vec<String>,
    #[serde(default)]
    l2cpu: Vec<String>,
    noc0_x_to_noc1_x: Option<Vec<u8>>,
    noc0_y_to_noc1_y: Option<Vec<u8>>,
    worker_l1_size: u32,
    dram_bank_size: u64,
    eth_l1_size: u32,
    arch_name: String,
    #[serde(default)]
    dram_views: Vec<DramView>,
    dram_view_size: Option<u64>,
}

/// A parsed, checked SoC descriptor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocDescriptor {
    pub arch: Arch,
    pub grid: GridSize,
    pub arc: Vec<Coord>,
    /// PCIe tiles; the index is the bit of tt-umd's PCIe harvesting mask.
    pub pcie: Vec<Coord>,
    /// DRAM channels (tt-umd's banks), each the NOC endpoints ("ports")
    /// sharing one address space.
    pub dram: Vec<Vec<Coord>>,
    /// Ethernet tiles; the index is the channel.
    pub eth: Vec<Coord>,
    /// Tensix tiles (`functional_workers`), row by row.
    pub tensix: Vec<Coord>,
    pub router_only: Vec<Coord>,
    pub security: Vec<Coord>,
    pub l2cpu: Vec<Coord>,
    pub noc0_x_to_noc1_x: Vec<u8>,
    pub noc0_y_to_noc1_y: Vec<u8>,
    pub worker_l1_size: u32,
    /// Bytes per DRAM channel.
    pub dram_bank_size: u64,
    pub eth_l1_size: u32,
    /// tt-metal's banks; empty if the file has none.
    pub dram_views: Vec<DramView>,
    /// Bytes per tt-metal bank.
    pub dram_view_size: Option<u64>,
}

impl SocDescriptor {
    /// File name of `arch`'s descriptor under `shared-abi/chips/`, as tt-umd
    /// and tt-metal name theirs.
    pub const fn file_name(arch: Arch) -> &'static str {
        match arch {
            Arch::Wormhole => "wormhole_b0_80_arch.yaml",
            Arch::Blackhole => "blackhole_140_arch.yaml",
        }
    }

    /// The embedded text of `arch`'s descriptor.
    pub const fn yaml(arch: Arch) -> &'static str {
        match arch {
            Arch::Wormhole => WORMHOLE_YAML,
            Arch::Blackhole => BLACKHOLE_YAML,
        }
    }

    /// `arch`'s embedded descriptor, parsed once per process.
    ///
    /// # Panics
    /// If the embedded file does not parse; the crate's tests parse both, so
    /// this is a build defect, not an input error.
    pub fn builtin(arch: Arch) -> &'static SocDescriptor {
        static WH: OnceLock<SocDescriptor> = OnceLock::new();
        static BH: OnceLock<SocDescriptor> = OnceLock::new();
        let cell = match arch {
            Arch::Wormhole => &WH,
            Arch::Blackhole => &BH,
        };
        cell.get_or_init(|| match SocDescriptor::parse(Self::yaml(arch), Self::file_name(arch)) {
            Ok(d) => d,
            Err(e) => panic!("embedded SoC descriptor does not parse: {e}"),
        })
    }

    /// Parses and checks a descriptor; `file` names it in errors.
    pub fn parse(yaml: &str, file: &str) -> Result<SocDescriptor, SocError> {
        let raw: RawDescriptor =
            serde_yaml_ng::from_str(yaml).map_err(|error| SocError::Yaml { file: file.to_string(), error })?;
        let arch = match raw.arch_name.trim() {
            "WORMHOLE_B0" | "wormhole_b0" => Arch::Wormhole,
            "BLACKHOLE" => Arch::Blackhole,
            other => return Err(SocError::UnknownArch { file: file.to_string(), found: other.to_string() }),
        };
        let grid = GridSize { x: raw.grid.x_size, y: raw.grid.y_size };
        let p = CoordParser { file, grid };
        let dram = raw.dram.iter().map(|ch| p.list("dram", ch)).collect::<Result<Vec<_>, _>>()?;
        let desc = SocDescriptor {
            arch,
            grid,
            arc: p.list("arc", &raw.arc)?,
            pcie: p.list("pcie", &raw.pcie)?,
            dram,
            eth: p.list("eth", &raw.eth)?,
            tensix: p.list("functional_workers", &raw.functional_workers)?,
            router_only: p.list("router_only", &raw.router_only)?,
            security: p.list("security", &raw.security)?,
            l2cpu: p.list("l2cpu", &raw.l2cpu)?,
            noc0_x_to_noc1_x: noc_table(file, "noc0_x_to_noc1_x", raw.noc0_x_to_noc1_x, grid.x)?,
            noc0_y_to_noc1_y: noc_table(file, "noc0_y_to_noc1_y", raw.noc0_y_to_noc1_y, grid.y)?,
            worker_l1_size: raw.worker_l1_size,
            dram_bank_size: raw.dram_bank_size,
            eth_l1_size: raw.eth_l1_size,
            dram_views: raw.dram_views,
            dram_view_size: raw.dram_view_size,
        };
        // Listed but meaningless at run time: tt-umd applies harvesting from
        // the chip, not from the file. Still, the entries must be coordinates.
        p.list("harvested_workers", &raw.harvested_workers)?;
        desc.check_every_tile_once(file)?;
        desc.check_dram_views(file)?;
        Ok(desc)
    }

    /// Every list with its key, DRAM flattened.
    pub fn kinds(&self) -> Vec<(&'static str, Coord)> {
        let mut out = Vec::new();
        let mut add = |key: &'static str, list: &[Coord]| out.extend(list.iter().map(|&c| (key, c)));
        add("functional_workers", &self.tensix);
        for ch in &self.dram {
            add("dram", ch);
        }
        add("eth", &self.eth);
        add("arc", &self.arc);
        add("pcie", &self.pcie);
        add("router_only", &self.router_only);
        add("security", &self.security);
        add("l2cpu", &self.l2cpu);
        out
    }

    fn check_every_tile_once(&self, file: &str) -> Result<(), SocError> {
        let mut seen: BTreeMap<Coord, &'static str> = BTreeMap::new();
        for (key, c) in self.kinds() {
            if let Some(first) = seen.insert(c, key) {
                return Err(SocError::Duplicate { file: file.to_string(), coord: c, first, second: key });
            }
        }
        for y in 0..self.grid.y {
            for x in 0..self.grid.x {
                if !seen.contains_key(&Coord::new(x, y)) {
                    return Err(SocError::Uncovered { file: file.to_string(), coord: Coord::new(x, y) });
                }
            }
        }
        Ok(())
    }

    fn check_dram_views(&self, file: &str) -> Result<(), SocError> {
        let bad = |index: usize, problem: String| SocError::BadDramView { file: file.to_string(), index, problem };
        for (i, v) in self.dram_views.iter().enumerate() {
            let Some(ports) = self.dram.get(v.channel as usize) else {
                return Err(bad(i, format!("channel {} does not exist ({} channels)", v.channel, self.dram.len())));
            };
            for port in v.eth_endpoint.iter().chain(&v.worker_endpoint) {
                if *port as usize >= ports.len() {
                    return Err(bad(i, format!("port {port} of channel {} does not exist", v.channel)));
                }
            }
            if let Some(size) = self.dram_view_size {
                if v.address_offset.saturating_add(size) > self.dram_bank_size {
                    return Err(bad(
                        i,
                        format!(
                            "offset {:#x} + view size {size:#x} runs past the channel's {:#x} bytes",
                            v.address_offset, self.dram_bank_size
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

struct CoordParser<'a> {
    file: &'a str,
    grid: GridSize,
}

impl CoordParser<'_> {
    fn list(&self, key: &'static str, items: &[String]) -> Result<Vec<Coord>, SocError> {
        items.iter().enumerate().map(|(i, t)| self.one(key, i, t)).collect()
    }

    fn one(&self, key: &'static str, index: usize, text: &str) -> Result<Coord, SocError> {
        let bad = || SocError::BadCoord { file: self.file.to_string(), key, index, text: text.to_string() };
        let (x, y) = text.trim().split_once('-').ok_or_else(bad)?;
        let x: u8 = x.trim().parse().map_err(|_| bad())?;
        let y: u8 = y.trim().parse().map_err(|_| bad())?;
        if x >= self.grid.x || y >= self.grid.y {
            return Err(SocError::OutOfGrid {
                file: self.file.to_string(),
                key,
                index,
                coord: Coord::new(x, y),
                width: self.grid.x,
                height: self.grid.y,
            });
        }
        Ok(Coord::new(x, y))
    }
}

/// A NOC0-to-NOC1 table, or tt-umd's default (the mirror, size - 1 - v)
/// when the file has none.
fn noc_table(file: &str, key: &'static str, table: Option<Vec<u8>>, size: u8) -> Result<Vec<u8>, SocError> {
    let Some(table) = table else {
        return Ok((0..size).rev().collect());
    };
    let mut sorted = table.clone();
    sorted.sort_unstable();
    if sorted != (0..size).collect::<Vec<_>>() {
        return Err(SocError::BadNocTable { file: file.to_string(), key, size, found: table });
    }
    Ok(table)
}
