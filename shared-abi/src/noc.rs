//! NOC addresses as firmware, host and simulator exchange them.
//!
//! A [`NocAddr`] is tt-metal's 64-bit NOC address (`NOC_XY_ADDR`,
//! `NOC_MULTICAST_ADDR`; the bit layout is [`crate::arch::noc_addr`]'s):
//! the address local to the tile in bits `[35:0]` (Blackhole host memory
//! also sets bit 60, [`BH_PCIE_FLAG`]); unicast x `[41:36]`, y `[47:42]`;
//! multicast x_end `[41:36]`, y_end `[47:42]`, x_start `[53:48]`, y_start
//! `[59:54]`. Bit 63, which neither chip uses, is cqlab's multicast flag
//! ([`MCAST_FLAG`]): a command names a rectangle or a tile by the address
//! alone. The flag never reaches a register: the HAL turns it into
//! `NOC_CMD_BRCST_PACKET` and writes [`NocAddr::hw`].
//!
//! Coordinates are the chip's *translated* coordinates (NOC translation is
//! on, as tt-metal runs it): Wormhole Tensix from (18, 18), Blackhole Tensix
//! x 1..7, 10.. and y 2..11, DRAM, PCIe and ARC as
//! `soc::ChipLayout::translated` gives them. Where the chip leaves a range
//! untranslated (Wormhole coordinates below 16, Blackhole rows 0 and 1),
//! a NOC1 request names NOC1's own coordinates of the tile. Nothing in this
//! crate places a core: firmware learns every coordinate from the
//! [`crate::noc_map::NocMap`] the host writes into its L1.

use crate::arch::noc_addr::{self as bits, NODE_ID_MASK};
pub use crate::arch::noc_addr::{BH_PCIE_FLAG, LOCAL_ADDR_BITS, LOCAL_ADDR_MASK};

/// cqlab's multicast flag, in a bit neither chip's address uses.
pub const MCAST_FLAG: u64 = 1 << 63;

/// Largest coordinate the encoding carries (6 bits).
pub const MAX_COORD: u8 = NODE_ID_MASK as u8;

/// Most command queues a device runs (each needs a prefetcher and a
/// dispatcher core, placed by `soc::ChipLayout::placement`).
pub const MAX_CQS: u8 = 16;
/// Command queues a device runs unless told otherwise.
pub const DEFAULT_CQS: u8 = 2;

/// Coordinates of a tile on the NOC. In JSON (with `std`) the object
/// `{"x": X, "y": Y}`: every JSON output of cqlab names a core this way
/// (beside whatever else it says of it: a role, a processor), except the
/// positional records of a run's trace file (docs/cli.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "std", derive(serde::Serialize, serde::Deserialize))]
pub struct Coord {
    pub x: u8,
    pub y: u8,
}

impl Coord {
    pub const fn new(x: u8, y: u8) -> Self {
        Self { x, y }
    }
    /// Packed form used in mailboxes, trace records and packed-write
    /// sub-commands: `x | y << 8`.
    pub const fn packed(self) -> u32 {
        self.x as u32 | (self.y as u32) << 8
    }
    pub const fn unpack(v: u32) -> Self {
        Self { x: v as u8, y: (v >> 8) as u8 }
    }
}

impl core::fmt::Display for Coord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "({},{})", self.x, self.y)
    }
}

/// An encoded NOC address (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NocAddr(pub u64);

impl NocAddr {
    /// Unicast to `local` on the tile at `at` (`NOC_XY_ADDR`). Bits of
    /// `local` above bit 35 are dropped; Blackhole host memory adds
    /// [`BH_PCIE_FLAG`] with [`NocAddr::with_flags`].
    pub const fn unicast(at: Coord, local: u64) -> Self {
        Self(bits::unicast(at.x, at.y, local))
    }

    /// Multicast to `local` on every receiving tile of the rectangle
    /// `start..=end` (`NOC_MULTICAST_ADDR`; on NOC1 the HAL swaps the
    /// corners, as tt-metal's callers do).
    pub const fn multicast(start: Coord, end: Coord, local: u64) -> Self {
        Self(bits::multicast(start.x, start.y, end.x, end.y, local) | MCAST_FLAG)
    }

    /// The same address with `flags` (bits above the coordinates, such as
    /// [`BH_PCIE_FLAG`]) set.
    pub const fn with_flags(self, flags: u64) -> Self {
        Self(self.0 | flags)
    }

    /// The address local to the tile, bits `[35:0]`.
    pub const fn local(self) -> u64 {
        self.0 & LOCAL_ADDR_MASK
    }

    /// The unicast target (for a multicast: the end corner, bits `[47:36]`).
    pub const fn coord(self) -> Coord {
        Coord { x: bits::x(self.0), y: bits::y(self.0) }
    }

    pub const fn is_multicast(self) -> bool {
        self.0 & MCAST_FLAG != 0
    }

    /// `(start, end)` of a multicast rectangle; `(coord, coord)` for a unicast.
    pub const fn rect(self) -> (Coord, Coord) {
        let end = self.coord();
        if self.is_multicast() {
            (Coord { x: bits::x_start(self.0), y: bits::y_start(self.0) }, end)
        } else {
            (end, end)
        }
    }

    /// The bits above the coordinates and the local address: Blackhole's
    /// PCIe flag and, for a unicast, anything else a caller set there.
    pub const fn flags(self) -> u64 {
        if self.is_multicast() {
            self.0 & !MCAST_FLAG & !((1 << (bits::MCAST_Y_START_SHIFT + 6)) - 1)
        } else {
            self.0 & !((1 << (bits::Y_SHIFT + 6)) - 1)
        }
    }

    /// The address as the chip takes it: without cqlab's multicast flag.
    pub const fn hw(self) -> u64 {
        self.0 & !MCAST_FLAG
    }

    /// The same address moved by `delta` bytes on the same tile(s); the
    /// local part wraps within its 36 bits.
    pub const fn offset(self, delta: u64) -> Self {
        Self((self.0 & !LOCAL_ADDR_MASK) | (self.local().wrapping_add(delta) & LOCAL_ADDR_MASK))
    }

    /// The same tile(s) at local address `local`.
    pub const fn with_local(self, local: u64) -> Self {
        Self((self.0 & !LOCAL_ADDR_MASK) | (local & LOCAL_ADDR_MASK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::noc_addr;

    #[test]
    fn unicast_is_tt_metals_encoding() {
        let a = NocAddr::unicast(Coord::new(25, 19), 0xA_1234_5678);
        assert_eq!(a.0, noc_addr::unicast(25, 19, 0xA_1234_5678));
        assert_eq!(a.0, 19 << 42 | 25 << 36 | 0xA_1234_5678);
        assert_eq!((a.coord(), a.local()), (Coord::new(25, 19), 0xA_1234_5678));
        assert!(!a.is_multicast());
        assert_eq!(a.rect(), (Coord::new(25, 19), Coord::new(25, 19)));
        assert_eq!(a.hw(), a.0);
    }

    #[test]
    fn multicast_keeps_rectangle_and_flag_stays_out_of_the_chip_bits() {
        let a = NocAddr::multicast(Coord::new(1, 2), Coord::new(13, 11), 0x100);
        assert!(a.is_multicast());
        assert_eq!(a.rect(), (Coord::new(1, 2), Coord::new(13, 11)));
        assert_eq!(a.hw(), noc_addr::multicast(1, 2, 13, 11, 0x100));
        assert_eq!(a.hw() & MCAST_FLAG, 0);
        let b = a.offset(0x10);
        assert_eq!((b.local(), b.rect(), b.is_multicast()), (0x110, a.rect(), true));
        assert_eq!(a.flags(), 0);
    }

    #[test]
    fn blackhole_host_memory_keeps_its_flag_through_offsets() {
        let base = NocAddr::unicast(Coord::new(19, 24), 0).with_flags(BH_PCIE_FLAG);
        let a = base.offset(0xF_FFFF_FFF0).offset(0x20);
        assert_eq!(a.local(), 0x10, "the local part wraps within 36 bits");
        assert_eq!(a.flags(), BH_PCIE_FLAG);
        assert_eq!(a.coord(), Coord::new(19, 24));
        assert_eq!(a.hw(), a.0);
    }
}
