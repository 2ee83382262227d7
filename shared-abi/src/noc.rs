//! NOC addresses and the placement of every endpoint on the grid.
//!
//! A NOC address is a `u64`: the endpoint's coordinates, an optional
//! multicast rectangle, and a 36-bit address local to that endpoint (an L1 or
//! MMIO address on a core, a byte offset in a DRAM bank or in host sysmem).

/// Bits of the endpoint-local address.
pub const LOCAL_ADDR_BITS: u32 = 36;
pub const LOCAL_ADDR_MASK: u64 = (1 << LOCAL_ADDR_BITS) - 1;
const COORD_BITS: u32 = 6;
const COORD_MASK: u64 = (1 << COORD_BITS) - 1;
const X_SHIFT: u32 = 36;
const Y_SHIFT: u32 = 42;
const X_END_SHIFT: u32 = 48;
const Y_END_SHIFT: u32 = 54;
const MCAST_BIT: u64 = 1 << 60;

/// Largest coordinate the encoding carries.
pub const MAX_COORD: u8 = COORD_MASK as u8;

/// Grid coordinates of a NOC endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Coord {
    pub x: u8,
    pub y: u8,
}

impl Coord {
    pub const fn new(x: u8, y: u8) -> Self {
        Self { x, y }
    }
    /// Packed form used in mailboxes and packed-write sub-commands: `x | y << 8`.
    pub const fn packed(self) -> u32 {
        self.x as u32 | (self.y as u32) << 8
    }
    pub const fn unpack(v: u32) -> Self {
        Self { x: v as u8, y: (v >> 8) as u8 }
    }
    /// Manhattan distance in router hops.
    pub const fn hops(self, other: Coord) -> u32 {
        self.x.abs_diff(other.x) as u32 + self.y.abs_diff(other.y) as u32
    }
}

impl core::fmt::Display for Coord {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "({},{})", self.x, self.y)
    }
}

/// An encoded NOC address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NocAddr(pub u64);

impl NocAddr {
    /// Unicast to `local` on the endpoint at `at`.
    pub const fn unicast(at: Coord, local: u64) -> Self {
        Self((local & LOCAL_ADDR_MASK) | (at.x as u64) << X_SHIFT | (at.y as u64) << Y_SHIFT)
    }
    /// Multicast to `local` on every core of the rectangle `start..=end`.
    pub const fn multicast(start: Coord, end: Coord, local: u64) -> Self {
        Self(Self::unicast(start, local).0 | (end.x as u64) << X_END_SHIFT | (end.y as u64) << Y_END_SHIFT | MCAST_BIT)
    }
    pub const fn local(self) -> u64 {
        self.0 & LOCAL_ADDR_MASK
    }
    pub const fn coord(self) -> Coord {
        Coord { x: ((self.0 >> X_SHIFT) & COORD_MASK) as u8, y: ((self.0 >> Y_SHIFT) & COORD_MASK) as u8 }
    }
    pub const fn is_multicast(self) -> bool {
        self.0 & MCAST_BIT != 0
    }
    /// End corner of a multicast rectangle (equals `coord()` for unicast).
    pub const fn mcast_end(self) -> Coord {
        if self.is_multicast() {
            Coord { x: ((self.0 >> X_END_SHIFT) & COORD_MASK) as u8, y: ((self.0 >> Y_END_SHIFT) & COORD_MASK) as u8 }
        } else {
            self.coord()
        }
    }
    /// The same address moved by `delta` bytes on the same endpoint(s).
    pub const fn offset(self, delta: u64) -> Self {
        Self((self.0 & !LOCAL_ADDR_MASK) | (self.local().wrapping_add(delta) & LOCAL_ADDR_MASK))
    }
    /// The same endpoint(s) at local address `local`.
    pub const fn with_local(self, local: u64) -> Self {
        Self((self.0 & !LOCAL_ADDR_MASK) | (local & LOCAL_ADDR_MASK))
    }
    /// Split into the low and high words written to the NOC command buffer.
    pub const fn words(self) -> (u32, u32) {
        (self.0 as u32, (self.0 >> 32) as u32)
    }
    pub const fn from_words(lo: u32, hi: u32) -> Self {
        Self(lo as u64 | (hi as u64) << 32)
    }
}

/// Largest worker grid (columns x rows).
pub const MAX_WORKER_COLS: u8 = 16;
pub const MAX_WORKER_ROWS: u8 = 16;
/// Default worker grid, 8x8.
pub const DEFAULT_WORKER_COLS: u8 = 8;
pub const DEFAULT_WORKER_ROWS: u8 = 8;
/// Largest and default number of command queues.
pub const MAX_CQS: u8 = 16;
pub const DEFAULT_CQS: u8 = 2;

/// The PCIe endpoint: local addresses are byte offsets in host sysmem.
pub const PCIE: Coord = Coord::new(0, 0);

/// Worker core at logical `(col, row)`.
pub const fn worker(col: u8, row: u8) -> Coord {
    Coord::new(col + 1, row + 1)
}
/// Logical `(col, row)` of a worker coordinate, if it is one.
pub const fn worker_index(c: Coord) -> Option<(u8, u8)> {
    if c.x >= 1 && c.x <= MAX_WORKER_COLS && c.y >= 1 && c.y <= MAX_WORKER_ROWS {
        Some((c.x - 1, c.y - 1))
    } else {
        None
    }
}
/// DRAM bank `bank`.
pub const fn dram_bank(bank: u8) -> Coord {
    Coord::new(0, bank + 1)
}
/// Prefetcher core of command queue `cq`.
pub const fn prefetcher(cq: u8) -> Coord {
    Coord::new(MAX_WORKER_COLS + 1, cq + 1)
}
/// Dispatcher core of command queue `cq`.
pub const fn dispatcher(cq: u8) -> Coord {
    Coord::new(MAX_WORKER_COLS + 2, cq + 1)
}

/// What lives at a coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Pcie,
    Dram { bank: u8 },
    Worker { col: u8, row: u8 },
    Prefetcher { cq: u8 },
    Dispatcher { cq: u8 },
    Nothing,
}

pub const fn endpoint(c: Coord) -> Endpoint {
    if c.x == PCIE.x && c.y == PCIE.y {
        Endpoint::Pcie
    } else if c.x == 0 && c.y >= 1 && c.y as u32 <= crate::memory_map::MAX_DRAM_BANKS {
        Endpoint::Dram { bank: c.y - 1 }
    } else if let Some((col, row)) = worker_index(c) {
        Endpoint::Worker { col, row }
    } else if c.x == MAX_WORKER_COLS + 1 && c.y >= 1 && c.y <= MAX_CQS {
        Endpoint::Prefetcher { cq: c.y - 1 }
    } else if c.x == MAX_WORKER_COLS + 2 && c.y >= 1 && c.y <= MAX_CQS {
        Endpoint::Dispatcher { cq: c.y - 1 }
    } else {
        Endpoint::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unicast_round_trips() {
        let a = NocAddr::unicast(Coord::new(5, 9), 0xA_1234_5678);
        assert_eq!(a.coord(), Coord::new(5, 9));
        assert_eq!(a.local(), 0xA_1234_5678);
        assert!(!a.is_multicast());
        assert_eq!(a.mcast_end(), a.coord());
        let (lo, hi) = a.words();
        assert_eq!(NocAddr::from_words(lo, hi), a);
    }

    #[test]
    fn multicast_keeps_rectangle() {
        let a = NocAddr::multicast(worker(0, 0), worker(7, 7), 0x100);
        assert!(a.is_multicast());
        assert_eq!(a.coord(), worker(0, 0));
        assert_eq!(a.mcast_end(), worker(7, 7));
        assert_eq!(a.offset(0x10).local(), 0x110);
        assert_eq!(a.offset(0x10).mcast_end(), worker(7, 7));
    }

    #[test]
    fn endpoints_do_not_overlap() {
        assert_eq!(endpoint(PCIE), Endpoint::Pcie);
        assert_eq!(endpoint(dram_bank(3)), Endpoint::Dram { bank: 3 });
        assert_eq!(endpoint(worker(15, 15)), Endpoint::Worker { col: 15, row: 15 });
        assert_eq!(endpoint(prefetcher(15)), Endpoint::Prefetcher { cq: 15 });
        assert_eq!(endpoint(dispatcher(0)), Endpoint::Dispatcher { cq: 0 });
        assert_eq!(endpoint(Coord::new(40, 40)), Endpoint::Nothing);
        assert!(dispatcher(MAX_CQS - 1).x <= MAX_COORD);
    }
}
