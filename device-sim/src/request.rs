//! Where a NOC request lands, as the chip decides it: coordinates resolved
//! as the chip translates them on the request's NOC
//! (`soc::ChipLayout::resolve`), then the address checked against what the
//! tile there holds. The same resolution serves the cores' NIU requests
//! (checked when `NOC_CMD_CTRL` is written, so a bad request halts the core
//! at that store) and the host's accesses (TLB windows, direct tile access).

use crate::arc::Arc;
use crate::hart::AccessFault;
use crate::niu::{Kind, Request};
use crate::noc::{Source, Target, Vc};
use cqlab_abi::arch::noc_addr::CoordField;
use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::{ArchParams, Noc};
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::{ChipLayout, HarvestedUnit, TileKind};

/// Why a request cannot be served. Static texts, so a core halts with them
/// (`HaltReason::BadNocRequest`); the host wraps them with context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub reason: &'static str,
    /// The coordinates the request named (the end corner of a multicast).
    pub coord: Coord,
    /// The tile they reached (NOC0), if any.
    pub tile: Option<Coord>,
}

/// Everything resolution needs, borrowed from the chip.
pub struct Resolver<'a> {
    pub layout: &'a ChipLayout,
    pub chip: &'static ArchParams,
    pub dram_channel_size: u64,
    pub sysmem_size: u64,
    pub arc: &'a Arc,
}

/// What a tile kind is, for a refusal.
fn kind_refusal(kind: TileKind) -> &'static str {
    match kind {
        TileKind::Eth { .. } => "the tile is an Ethernet tile, which cqlab does not model",
        TileKind::RouterOnly => "the tile is a router-only tile: nothing answers there",
        TileKind::Security => "the tile is the security tile, which cqlab does not model",
        TileKind::L2Cpu => "the tile is an L2CPU tile, which cqlab does not model",
        TileKind::Harvested(HarvestedUnit::Tensix) => "the tile is a harvested Tensix tile",
        TileKind::Harvested(HarvestedUnit::Dram { .. }) => "the tile is a harvested DRAM tile",
        TileKind::Harvested(HarvestedUnit::Eth { .. }) => "the tile is a harvested Ethernet tile",
        TileKind::Harvested(HarvestedUnit::Pcie) => "the tile is the PCIe tile the host is not attached through",
        TileKind::Tensix | TileKind::Dram { .. } | TileKind::Pcie | TileKind::Arc => "the tile refuses the access",
    }
}

impl Resolver<'_> {
    fn tile_index(&self, c: Coord) -> usize {
        c.y as usize * self.layout.grid().x as usize + c.x as usize
    }

    /// The target of an access of `len` bytes at `tile_addr` on the tile(s)
    /// `coords` name on `noc`; `from`: the issuing tile (NOC0), which a
    /// multicast leaves out unless `src_include`. Also the hops to the
    /// (farthest) target from `from` (0 for the host).
    pub fn resolve(
        &self,
        noc: Noc,
        coords: CoordField,
        tile_addr: u64,
        len: u64,
        multicast: bool,
        from: Option<(Coord, bool)>,
    ) -> Result<(Target, u32, u64), Refusal> {
        let named = Coord::new(coords.x(), coords.y());
        let refuse = |reason, tile| Refusal { reason, coord: named, tile };
        let hops = |to: Coord| from.map_or(0, |(f, _)| self.layout.hop_count(noc, f, to));
        if multicast {
            let start = Coord::new(coords.x_start(), coords.y_start());
            let (s, e) = (self.layout.resolve(noc, start), self.layout.resolve(noc, named));
            let (Some(s), Some(e)) = (s, e) else {
                return Err(refuse("a multicast corner names no tile", None));
            };
            let on_noc = |c| self.layout.from_noc0(noc, c).expect("a tile of the layout");
            let mut receivers = self.layout.multicast_receivers(noc, on_noc(s), on_noc(e));
            if let Some((f, include)) = from {
                if !include {
                    receivers.retain(|&c| c != f);
                }
            }
            if receivers.is_empty() {
                return Err(refuse("the multicast rectangle holds no Tensix tile", Some(e)));
            }
            let l1 = self.chip.l1_size as u64;
            if tile_addr.checked_add(len).is_none_or(|end| end > l1) {
                return Err(refuse("a multicast reaches L1 only, and the bytes are outside L1", Some(e)));
            }
            let far = receivers.iter().map(|&c| hops(c)).max().unwrap_or(0);
            let key = 1 << 63 | (s.packed() as u64) << 16 | e.packed() as u64;
            let tiles = receivers.into_iter().map(|c| self.tile_index(c)).collect();
            return Ok((Target::Multicast { tiles, addr: tile_addr as u32 }, far, key));
        }
        let Some(noc0) = self.layout.resolve(noc, named) else {
            return Err(refuse("no tile answers to these coordinates", None));
        };
        let tile = self.layout.tile(noc0).expect("a tile of the layout");
        let key = noc0.packed() as u64;
        let in_range = |size: u64| tile_addr.checked_add(len).is_some_and(|end| end <= size);
        let target = match tile.kind {
            TileKind::Tensix => {
                let t = self.tile_index(noc0);
                if in_range(self.chip.l1_size as u64) {
                    Target::L1 { tile: t, addr: tile_addr as u32 }
                } else if len == self.chip.noc.mmio_access_bytes as u64 && tile_addr <= u32::MAX as u64 {
                    Target::Reg { tile: t, addr: tile_addr as u32 }
                } else if tile_addr > u32::MAX as u64 {
                    // The registers sit in the cores' 32-bit address space.
                    return Err(refuse(
                        "a Tensix tile has nothing above 4 GiB (its L1 and registers lie below)",
                        Some(noc0),
                    ));
                } else {
                    return Err(refuse(
                        "beyond L1 a Tensix tile has registers only, reached 4 bytes at a time",
                        Some(noc0),
                    ));
                }
            }
            TileKind::Dram { bank, .. } => {
                if !in_range(self.dram_channel_size) {
                    return Err(refuse(
                        "beyond its channel's memory a DRAM tile holds registers cqlab does not model",
                        Some(noc0),
                    ));
                }
                Target::Dram { channel: bank as usize, offset: tile_addr }
            }
            TileKind::Pcie => {
                let base = self.chip.bar.host_mem_base;
                let offset = tile_addr.wrapping_sub(base);
                if tile_addr < base || offset.checked_add(len).is_none_or(|end| end > self.sysmem_size) {
                    return Err(refuse(
                        "the PCIe tile reaches host memory only, from the chip's host-memory base up to the sysmem size",
                        Some(noc0),
                    ));
                }
                Target::Host { offset }
            }
            TileKind::Arc => match self.arc.arc_addr(tile_addr) {
                Some(addr) if self.arc.read(addr, &mut vec![0; len as usize]).is_ok() => Target::Arc { addr },
                _ => return Err(refuse("ARC holds nothing cqlab models there", Some(noc0))),
            },
            other => return Err(refuse(kind_refusal(other), Some(noc0))),
        };
        Ok((target, hops(noc0), key))
    }
}

/// A request a core issued, decoded and resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    pub src: Source,
    pub processor: Processor,
    pub kind: Kind,
    pub target: Target,
    /// The issuing tile's L1 address: a write's source, a read's
    /// destination, an atomic's return address.
    pub local: u32,
    pub len: u32,
    pub tid: u32,
    pub value: u32,
    pub hops: u32,
    /// Route key of the destination and the VC (ordering rules, `noc`).
    pub dst_key: u64,
    pub vc: Vc,
    pub time: u64,
}

impl Resolver<'_> {
    /// Decodes and resolves `req`, issued by `processor` of the tile at
    /// NOC0 `me` (index `tile`).
    pub fn issue(&self, tile: usize, me: Coord, processor: Processor, req: &Request) -> Result<Issued, AccessFault> {
        let chip = self.chip;
        let kind = req.kind(chip).map_err(AccessFault::Rejected)?;
        let bad = |r: Refusal| AccessFault::BadRequest(r.reason, r.coord);
        let own = |field: CoordField, which: &'static str| -> Result<(), AccessFault> {
            let c = Coord::new(field.x(), field.y());
            if self.layout.resolve(req.noc, c) == Some(me) {
                Ok(())
            } else {
                Err(AccessFault::BadRequest(which, c))
            }
        };
        let l1 = chip.l1_size;
        let len = req.at_len_be;
        let (target_field, target_addr) = req.target(chip);
        let (ret_field, ret_addr) = req.ret(chip);
        let (target, local, len, hops, key) = match kind {
            Kind::Read => {
                check_len(chip, len)?;
                own(ret_field, "a read's NOC_RET_ADDR must name this tile")?;
                let (t, hops, key) = self
                    .resolve(req.noc, target_field, target_addr, len as u64, false, Some((me, true)))
                    .map_err(bad)?;
                check_local(l1, ret_addr, len)?;
                (t, ret_addr as u32, len, hops, key)
            }
            Kind::Write { multicast, src_include, .. } => {
                check_len(chip, len)?;
                own(target_field, "a write's NOC_TARG_ADDR (its source) must name this tile")?;
                let from = Some((me, src_include));
                let (t, hops, key) =
                    self.resolve(req.noc, ret_field, ret_addr, len as u64, multicast, from).map_err(bad)?;
                check_local(l1, target_addr, len)?;
                (t, target_addr as u32, len, hops, key)
            }
            Kind::AtomicIncr { ind, resp, .. } => {
                // The word `ind` of the 16-byte line holding the address.
                let word = (target_addr & !0xF) + 4 * ind as u64;
                let (t, hops, key) =
                    self.resolve(req.noc, target_field, word, 4, false, Some((me, true))).map_err(bad)?;
                if !matches!(t, Target::L1 { .. }) {
                    return Err(AccessFault::Rejected("NOC atomics act on L1 words only"));
                }
                if resp {
                    own(ret_field, "a non-posted atomic's NOC_RET_ADDR must name this tile")?;
                    check_local(l1, ret_addr, 4)?;
                }
                (t, ret_addr as u32, 4, hops, key)
            }
        };
        let vc = match (req.static_vc(), kind) {
            (Some(v), _) => Vc::Static(v),
            (None, Kind::Write { multicast: true, .. }) => Vc::Multicast,
            (None, _) => Vc::Unicast,
        };
        Ok(Issued {
            src: Source { tile, noc: req.noc },
            processor,
            kind,
            target,
            local,
            len,
            tid: req.tid(),
            value: req.at_data,
            hops,
            dst_key: key,
            vc,
            time: req.time,
        })
    }
}

fn check_len(chip: &ArchParams, len: u32) -> Result<(), AccessFault> {
    if len == 0 {
        return Err(AccessFault::Rejected("NOC_AT_LEN_BE must not be 0"));
    }
    if len > chip.noc.max_packet {
        return Err(AccessFault::Rejected(
            "NOC_AT_LEN_BE above the largest packet: cqlab does not model the NIU's request splitting",
        ));
    }
    Ok(())
}

fn check_local(l1: u32, addr: u64, len: u32) -> Result<(), AccessFault> {
    if addr.checked_add(len as u64).is_none_or(|end| end > l1 as u64) {
        return Err(AccessFault::Rejected("the request's bytes on this tile are outside L1"));
    }
    Ok(())
}
