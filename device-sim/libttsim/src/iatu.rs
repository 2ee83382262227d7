//! The PCIe tile's outbound iATU (`arch::bar::IatuLayout`), as the host
//! programs it through BAR2: which host bus address a device access to host
//! memory (an offset from the chip's host-memory base) goes to. tt-umd
//! programs one region per host-memory channel (base `ch` GiB, target the
//! channel's host address, `chip_id << 36` apart per chip) and one for its
//! mapped buffers; the DMA callbacks receive the translated address.
//!
//! An offset no enabled region matches goes out untranslated, as the
//! DesignWare iATU passes it.

use cqlab_abi::arch::bar::{iatu, IatuLayout};

/// One outbound region's registers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Region {
    ctrl1: u32,
    ctrl2: u32,
    ctrl3: u32,
    base: [u32; 2],
    limit: [u32; 2],
    target: [u32; 2],
}

impl Region {
    fn base(&self) -> u64 {
        (self.base[1] as u64) << 32 | self.base[0] as u64
    }
    /// The last offset it translates (inclusive).
    fn limit(&self) -> u64 {
        let hi = if self.ctrl1 & iatu::INCREASE_REGION_SIZE != 0 { self.limit[1] } else { self.base[1] };
        (hi as u64) << 32 | self.limit[0] as u64
    }
    fn target(&self) -> u64 {
        (self.target[1] as u64) << 32 | self.target[0] as u64
    }
    fn enabled(&self) -> bool {
        self.ctrl2 & iatu::REGION_EN != 0 && self.base() <= self.limit()
    }
    fn reg(&mut self, reg: u32) -> &mut u32 {
        match reg {
            iatu::REGION_CTRL_1 => &mut self.ctrl1,
            iatu::REGION_CTRL_2 => &mut self.ctrl2,
            iatu::REGION_CTRL_3 => &mut self.ctrl3,
            iatu::LOWER_BASE => &mut self.base[0],
            iatu::UPPER_BASE => &mut self.base[1],
            iatu::LOWER_LIMIT => &mut self.limit[0],
            iatu::UPPER_LIMIT => &mut self.limit[1],
            iatu::LOWER_TARGET => &mut self.target[0],
            iatu::UPPER_TARGET => &mut self.target[1],
            _ => unreachable!("IatuLayout::register_at decodes registers only"),
        }
    }
}

/// A piece of an access: `len` bytes from byte `at` of the access go to
/// host address `host`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub at: u64,
    pub len: u64,
    pub host: u64,
}

/// The outbound regions of one chip.
#[derive(Clone, Debug)]
pub struct Iatu {
    layout: IatuLayout,
    regions: Vec<Region>,
}

/// Why a BAR2 access is not an iATU register access.
pub const NOT_A_REGISTER: &str =
    "cqlab models the outbound iATU registers of BAR2 only, as aligned 32-bit accesses (not the DMA engines)";

impl Iatu {
    pub fn new(layout: IatuLayout) -> Self {
        Iatu { layout, regions: vec![Region::default(); layout.regions as usize] }
    }

    fn decode(&self, offset: u64, len: usize) -> Result<(usize, u32), &'static str> {
        if len != 4 || offset % 4 != 0 {
            return Err(NOT_A_REGISTER);
        }
        let (region, reg) = self.layout.register_at(offset).ok_or(NOT_A_REGISTER)?;
        if reg % 4 != 0 {
            return Err(NOT_A_REGISTER);
        }
        Ok((region as usize, reg))
    }

    /// A host write of `data` at BAR2 `offset`.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), &'static str> {
        let (r, reg) = self.decode(offset, data.len())?;
        *self.regions[r].reg(reg) = u32::from_le_bytes(data.try_into().expect("4 bytes"));
        Ok(())
    }

    /// A host read at BAR2 `offset`.
    pub fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), &'static str> {
        let (r, reg) = self.decode(offset, buf.len())?;
        buf.copy_from_slice(&self.regions[r].reg(reg).to_le_bytes());
        Ok(())
    }

    /// Where `len` bytes at host-memory offset `offset` go, piece by piece
    /// (an access may straddle a region's end). Regions are looked up in
    /// index order; the first that holds an offset translates it.
    pub fn translate(&self, offset: u64, len: u64) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut at = 0;
        while at < len {
            let off = offset + at;
            let rest = len - at;
            let hit = self.regions.iter().find(|r| r.enabled() && (r.base()..=r.limit()).contains(&off));
            let piece = match hit {
                Some(r) => {
                    // A limit of 2^64 - 1 holds 2^64 - off bytes: saturated,
                    // not wrapped to an empty piece (a loop without end).
                    let n = rest.min((r.limit() - off).saturating_add(1));
                    Piece { at, len: n, host: r.target().wrapping_add(off - r.base()) }
                }
                None => {
                    // Untranslated up to the next enabled region's base.
                    let next = self.regions.iter().filter(|r| r.enabled() && r.base() > off).map(|r| r.base()).min();
                    let n = next.map_or(rest, |b| rest.min(b - off));
                    Piece { at, len: n, host: off }
                }
            };
            at += piece.len;
            pieces.push(piece);
        }
        pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::bar::WORMHOLE;

    /// Programs region `r` as tt-umd does.
    fn program(i: &mut Iatu, r: u64, base: u64, limit: u64, target: u64) {
        let at = |reg: u32| WORMHOLE.iatu.bar2_offset as u64 + r * 0x200 + reg as u64;
        let mut w = |reg, v: u32| i.write(at(reg), &v.to_le_bytes()).unwrap();
        w(iatu::REGION_CTRL_2, 0);
        w(iatu::REGION_CTRL_1, 0);
        w(iatu::LOWER_BASE, base as u32);
        w(iatu::UPPER_BASE, (base >> 32) as u32);
        w(iatu::LOWER_LIMIT, limit as u32);
        w(iatu::LOWER_TARGET, target as u32);
        w(iatu::UPPER_TARGET, (target >> 32) as u32);
        w(iatu::REGION_CTRL_2, iatu::REGION_EN);
    }

    #[test]
    fn regions_translate_and_the_rest_passes_through() {
        let mut i = Iatu::new(WORMHOLE.iatu);
        assert_eq!(i.translate(0x100, 8), vec![Piece { at: 0, len: 8, host: 0x100 }], "nothing programmed");
        // Chip 1 (host base 64 GiB): channel 0, and the arena from 1 GiB.
        program(&mut i, 0, 0, (1 << 30) - 1, 1 << 36);
        program(&mut i, 5, 1 << 30, 0xFFFF_FDFF, (1 << 36) + (1 << 30));
        assert_eq!(i.translate(0x100, 8), vec![Piece { at: 0, len: 8, host: (1 << 36) + 0x100 }]);
        // Straddling channel 0's end into the arena.
        let p = i.translate((1 << 30) - 4, 8);
        assert_eq!(
            p,
            vec![
                Piece { at: 0, len: 4, host: (1 << 36) + (1 << 30) - 4 },
                Piece { at: 4, len: 4, host: (1 << 36) + (1 << 30) }
            ]
        );
        // Past every region: untranslated.
        assert_eq!(i.translate(0xFFFF_FE00, 4), vec![Piece { at: 0, len: 4, host: 0xFFFF_FE00 }]);
        // Registers read back; other BAR2 bytes are not registers.
        let mut b = [0; 4];
        i.read(0x1200 + 5 * 0x200 + iatu::REGION_CTRL_2 as u64, &mut b).unwrap();
        assert_eq!(u32::from_le_bytes(b), iatu::REGION_EN);
        assert_eq!(i.write(0x100, &[0; 4]), Err(NOT_A_REGISTER), "a DMA engine register");
        assert_eq!(i.write(0x1202, &[0; 4]), Err(NOT_A_REGISTER), "unaligned");
        assert_eq!(i.write(0x1200, &[0; 8]), Err(NOT_A_REGISTER), "two registers at once");
    }

    /// A region that ends at the last byte of the 64-bit space (its 64-bit
    /// limit all ones) overflowed its length (helper-52).
    #[test]
    fn a_region_to_the_end_of_the_address_space_translates() {
        let mut i = Iatu::new(WORMHOLE.iatu);
        program(&mut i, 0, 0, 0xFFFF_FFFF, 1 << 32);
        let at = |reg: u32| WORMHOLE.iatu.bar2_offset as u64 + reg as u64;
        i.write(at(iatu::REGION_CTRL_1), &iatu::INCREASE_REGION_SIZE.to_le_bytes()).unwrap();
        i.write(at(iatu::UPPER_LIMIT), &u32::MAX.to_le_bytes()).unwrap();
        assert_eq!(i.translate(0, 8), vec![Piece { at: 0, len: 8, host: 1 << 32 }]);
        assert_eq!(i.translate(0x40, 4), vec![Piece { at: 0, len: 4, host: (1 << 32) + 0x40 }]);
    }
}
