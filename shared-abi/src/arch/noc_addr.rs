//! NOC addresses: the 64-bit software encoding both chips share, how it
//! splits into the `LO`/`MID`/`HI` command-buffer registers on each chip, and
//! the per-chip packet, flit and alignment limits.
//!
//! Software encoding (tt-metal wh and bh `noc_parameters.h` `NOC_XY_ADDR`,
//! `NOC_MULTICAST_ADDR`, `NOC_ADDR_LOCAL_BITS` 36, `NOC_ADDR_NODE_ID_BITS` 6):
//! bits `[35:0]` the address local to the tile; unicast x `[41:36]`, y `[47:42]`;
//! multicast x_end `[41:36]`, y_end `[47:42]`, x_start `[53:48]`, y_start `[59:54]`.
//! Blackhole adds bit 60 for host memory behind the PCIe tile
//! (`NOC_XY_PCIE_ENCODING`).
//!
//! The registers (tt-metal wh `noc_nonblocking_api.h` `NOC_ADDR_COORD_SHIFT`
//! 32, `NOC_TARG_ADDR_COORDINATE` = `NOC_TARG_ADDR_MID`; bh
//! `noc_nonblocking_api.h` `NOC_ADDR_COORD_SHIFT` 36, `NOC_PCIE_MASK`
//! 0x1000000F, `NOC_TARG_ADDR_COORDINATE` = `NOC_TARG_ADDR_HI`):
//! - Wormhole: LO = addr`[31:0]`; MID = addr >> 32, so MID `[3:0]` is
//!   addr`[35:32]` and the coordinate field starts at MID bit 4. HI is not used.
//! - Blackhole: LO = addr`[31:0]`; MID = (addr >> 32) & 0x1000000F (address bits
//!   35:32 and the PCIe flag, bit 60 -> MID bit 28); HI = (addr >> 36) &
//!   0xFFFFFF, the coordinate field.
//!
//! The coordinate field as the hardware reads it (tt-isa `NoC/MemoryMap.md`,
//! `NOC_TARG_ADDR_*`): x or x_end `[5:0]`, y or y_end `[11:6]`, x_start `[17:12]`,
//! y_start `[23:18]`.

/// Bits of the tile-local address in the software encoding.
pub const LOCAL_ADDR_BITS: u32 = 36;
pub const LOCAL_ADDR_MASK: u64 = (1 << LOCAL_ADDR_BITS) - 1;
/// Bits of one coordinate.
pub const NODE_ID_BITS: u32 = 6;
pub const NODE_ID_MASK: u64 = (1 << NODE_ID_BITS) - 1;
/// Unicast x and y.
pub const X_SHIFT: u32 = 36;
pub const Y_SHIFT: u32 = 42;
/// Multicast rectangle corners.
pub const MCAST_X_END_SHIFT: u32 = 36;
pub const MCAST_Y_END_SHIFT: u32 = 42;
pub const MCAST_X_START_SHIFT: u32 = 48;
pub const MCAST_Y_START_SHIFT: u32 = 54;
/// Blackhole: host memory through the PCIe tile's outbound iATU (tt-metal bh
/// `noc_parameters.h` `NOC_XY_PCIE_ENCODING` | 0x1000000000000000; tt-umd
/// `Cluster::get_pcie_base_addr_from_device` 1ULL << 60).
pub const BH_PCIE_FLAG: u64 = 1 << 60;

/// `NOC_XY_ADDR(x, y, local)`.
pub const fn unicast(x: u8, y: u8, local: u64) -> u64 {
    (y as u64 & NODE_ID_MASK) << Y_SHIFT | (x as u64 & NODE_ID_MASK) << X_SHIFT | (local & LOCAL_ADDR_MASK)
}

/// `NOC_MULTICAST_ADDR(x_start, y_start, x_end, y_end, local)`: every
/// receiving tile of the rectangle, inclusive (start > end wraps).
pub const fn multicast(x_start: u8, y_start: u8, x_end: u8, y_end: u8, local: u64) -> u64 {
    (x_start as u64 & NODE_ID_MASK) << MCAST_X_START_SHIFT
        | (y_start as u64 & NODE_ID_MASK) << MCAST_Y_START_SHIFT
        | unicast(x_end, y_end, local)
}

/// The tile-local address, bits `[35:0]`.
pub const fn local(addr: u64) -> u64 {
    addr & LOCAL_ADDR_MASK
}

/// Unicast x (multicast x_end).
pub const fn x(addr: u64) -> u8 {
    ((addr >> X_SHIFT) & NODE_ID_MASK) as u8
}

/// Unicast y (multicast y_end).
pub const fn y(addr: u64) -> u8 {
    ((addr >> Y_SHIFT) & NODE_ID_MASK) as u8
}

pub const fn x_start(addr: u64) -> u8 {
    ((addr >> MCAST_X_START_SHIFT) & NODE_ID_MASK) as u8
}

pub const fn y_start(addr: u64) -> u8 {
    ((addr >> MCAST_Y_START_SHIFT) & NODE_ID_MASK) as u8
}

/// The three 32-bit address registers of a command buffer (`*_ADDR_LO`,
/// `*_ADDR_MID`, `*_ADDR_HI`), for the target or the return address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct AddrWords {
    pub lo: u32,
    pub mid: u32,
    pub hi: u32,
}

/// The coordinate field of a command buffer (Wormhole: `MID >> 4`,
/// Blackhole: `HI`): x or x_end `[5:0]`, y or y_end `[11:6]`, x_start `[17:12]`,
/// y_start `[23:18]` (tt-metal bh `noc_parameters.h` `NOC_MULTICAST_COORD`,
/// `NOC_XY_COORD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct CoordField(pub u32);

impl CoordField {
    pub const fn unicast(x: u8, y: u8) -> Self {
        Self((x as u32 & 0x3F) | (y as u32 & 0x3F) << 6)
    }
    pub const fn multicast(x_start: u8, y_start: u8, x_end: u8, y_end: u8) -> Self {
        Self(Self::unicast(x_end, y_end).0 | (x_start as u32 & 0x3F) << 12 | (y_start as u32 & 0x3F) << 18)
    }
    /// Unicast x, or multicast x_end.
    pub const fn x(self) -> u8 {
        (self.0 & 0x3F) as u8
    }
    /// Unicast y, or multicast y_end.
    pub const fn y(self) -> u8 {
        ((self.0 >> 6) & 0x3F) as u8
    }
    pub const fn x_start(self) -> u8 {
        ((self.0 >> 12) & 0x3F) as u8
    }
    pub const fn y_start(self) -> u8 {
        ((self.0 >> 18) & 0x3F) as u8
    }
}

/// How a chip splits a 64-bit NOC address into its address registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrSplit {
    /// Coordinates in MID from bit 4 (`NOC_COORD_REG_OFFSET` 4); HI unused.
    CoordsInMid,
    /// Coordinates in HI (`NOC_COORD_REG_OFFSET` 0); MID keeps address bits
    /// 35:32 and the PCIe flag.
    CoordsInHi,
}

/// Wormhole's MID keeps address bits `[35:32]` below the coordinates.
const WH_MID_ADDR_BITS: u32 = 4;
/// Blackhole `NOC_PCIE_MASK` (tt-metal bh `noc_nonblocking_api.h`).
const BH_MID_MASK: u64 = 0x1000_000F;
/// Blackhole: HI = (addr >> 36) & 0xFFFFFF.
const BH_HI_MASK: u64 = 0xFF_FFFF;

impl AddrSplit {
    /// The register words tt-metal's `ncrisc_noc_fast_read`/`_write` write
    /// for the software address `addr`.
    pub const fn split(self, addr: u64) -> AddrWords {
        match self {
            AddrSplit::CoordsInMid => AddrWords { lo: addr as u32, mid: (addr >> 32) as u32, hi: 0 },
            AddrSplit::CoordsInHi => AddrWords {
                lo: addr as u32,
                mid: ((addr >> 32) & BH_MID_MASK) as u32,
                hi: ((addr >> LOCAL_ADDR_BITS) & BH_HI_MASK) as u32,
            },
        }
    }

    /// The software address back from its register words (inverse of
    /// [`split`](Self::split)).
    pub const fn join(self, w: AddrWords) -> u64 {
        match self {
            AddrSplit::CoordsInMid => (w.mid as u64) << 32 | w.lo as u64,
            AddrSplit::CoordsInHi => {
                ((w.hi as u64) & BH_HI_MASK) << LOCAL_ADDR_BITS | ((w.mid as u64) & BH_MID_MASK) << 32 | w.lo as u64
            }
        }
    }

    /// Whether firmware writes the HI register at all.
    pub const fn uses_hi(self) -> bool {
        matches!(self, AddrSplit::CoordsInHi)
    }

    /// The coordinate field the hardware reads from the register words.
    pub const fn coords(self, w: AddrWords) -> CoordField {
        match self {
            AddrSplit::CoordsInMid => CoordField(w.mid >> WH_MID_ADDR_BITS),
            AddrSplit::CoordsInHi => CoordField(w.hi),
        }
    }

    /// The address inside the target tile the hardware reads from the
    /// register words: 36 bits on Wormhole; LO and MID (64 bits, the PCIe flag
    /// included) on Blackhole.
    pub const fn tile_addr(self, w: AddrWords) -> u64 {
        match self {
            AddrSplit::CoordsInMid => ((w.mid & 0xF) as u64) << 32 | w.lo as u64,
            AddrSplit::CoordsInHi => (w.mid as u64) << 32 | w.lo as u64,
        }
    }

    /// The register words for a tile address and a coordinate field, as the
    /// hardware reads them (inverse of [`coords`](Self::coords) and
    /// [`tile_addr`](Self::tile_addr)).
    pub const fn words(self, tile_addr: u64, coords: CoordField) -> AddrWords {
        match self {
            AddrSplit::CoordsInMid => AddrWords {
                lo: tile_addr as u32,
                mid: ((tile_addr >> 32) & 0xF) as u32 | coords.0 << WH_MID_ADDR_BITS,
                hi: 0,
            },
            AddrSplit::CoordsInHi => AddrWords { lo: tile_addr as u32, mid: (tile_addr >> 32) as u32, hi: coords.0 },
        }
    }
}

/// Minimum alignment of a NOC transfer's addresses, per endpoint kind
/// (tt-metal `noc_parameters.h` `NOC_*_ALIGNMENT_BYTES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alignment {
    pub l1_read: u32,
    pub l1_write: u32,
    pub dram_read: u32,
    pub dram_write: u32,
    pub pcie_read: u32,
    pub pcie_write: u32,
}

/// Per-chip NOC limits and the address split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NocParams {
    /// Largest packet: `NOC_MAX_BURST_SIZE`. Longer requests are split (by
    /// tt-metal in software; the NIU can also split them).
    pub max_packet: u32,
    /// Bytes of payload per flit: `NOC_WORD_BYTES`.
    pub flit_bytes: u32,
    pub alignment: Alignment,
    pub split: AddrSplit,
    /// First address of the register space: an inline write at or above it
    /// targets MMIO (`NOC_REG_SPACE_START_ADDR`).
    pub reg_space_start: u32,
    /// Reads and writes of MMIO registers over the NOC move exactly this many
    /// bytes (tt-isa `NoC/MemoryMap.md` NOC_AT_LEN_BE).
    pub mmio_access_bytes: u32,
}

impl NocParams {
    /// Flits a payload of `len` bytes occupies (the header flit not counted).
    pub const fn flits(&self, len: u32) -> u32 {
        len.div_ceil(self.flit_bytes)
    }

    /// Packets a request of `len` bytes splits into (at least one).
    pub const fn packets(&self, len: u32) -> u32 {
        if len == 0 {
            1
        } else {
            len.div_ceil(self.max_packet)
        }
    }

    /// The byte-enable mask of an inline write of byte-enables `be` to
    /// `addr`: `be` shifted to the address's byte within the flit (tt-metal
    /// `noc_nonblocking_api.h` `noc_inline_dw_write`, `NOC_WORD_BYTES - 1`).
    /// The low 32 bits go to `NOC_AT_LEN_BE`; a Blackhole flit has 64 bytes,
    /// and bits 63:32 go to `NOC_AT_LEN_BE_1` (tt-isa
    /// `BlackholeA0/NoC/MemoryMap.md`: the high half of a 64-bit mask).
    pub const fn inline_be(&self, addr: u64, be: u32) -> u64 {
        (be as u64) << (addr & (self.flit_bytes as u64 - 1))
    }
}

/// Wormhole B0 (tt-metal wh `noc_parameters.h`).
pub const WORMHOLE: NocParams = NocParams {
    // NOC_MAX_BURST_SIZE = NOC_MAX_BURST_WORDS 256 * NOC_WORD_BYTES 32.
    max_packet: 8192,
    // NOC_WORD_BYTES = NOC_PAYLOAD_WIDTH 256 / 8.
    flit_bytes: 32,
    alignment: Alignment {
        l1_read: 16,    // NOC_L1_READ_ALIGNMENT_BYTES
        l1_write: 16,   // NOC_L1_WRITE_ALIGNMENT_BYTES
        dram_read: 32,  // NOC_DRAM_READ_ALIGNMENT_BYTES
        dram_write: 16, // NOC_DRAM_WRITE_ALIGNMENT_BYTES
        pcie_read: 32,  // NOC_PCIE_READ_ALIGNMENT_BYTES
        pcie_write: 16, // NOC_PCIE_WRITE_ALIGNMENT_BYTES
    },
    // NOC_COORD_REG_OFFSET 4; noc_nonblocking_api.h NOC_ADDR_COORD_SHIFT 32.
    split: AddrSplit::CoordsInMid,
    // NOC_REG_SPACE_START_ADDR.
    reg_space_start: 0xFF00_0000,
    mmio_access_bytes: 4,
};

/// Blackhole (tt-metal bh `noc_parameters.h`).
pub const BLACKHOLE: NocParams = NocParams {
    // NOC_MAX_BURST_SIZE = NOC_MAX_BURST_WORDS 256 * NOC_WORD_BYTES 64.
    max_packet: 16384,
    // NOC_WORD_BYTES = NOC_PAYLOAD_WIDTH 512 / 8.
    flit_bytes: 64,
    alignment: Alignment {
        l1_read: 16,    // NOC_L1_READ_ALIGNMENT_BYTES
        l1_write: 16,   // NOC_L1_WRITE_ALIGNMENT_BYTES
        dram_read: 64,  // NOC_DRAM_READ_ALIGNMENT_BYTES
        dram_write: 16, // NOC_DRAM_WRITE_ALIGNMENT_BYTES
        pcie_read: 64,  // NOC_PCIE_READ_ALIGNMENT_BYTES
        pcie_write: 16, // NOC_PCIE_WRITE_ALIGNMENT_BYTES
    },
    // NOC_COORD_REG_OFFSET 0; noc_nonblocking_api.h NOC_ADDR_COORD_SHIFT 36.
    split: AddrSplit::CoordsInHi,
    // NOC_REG_SPACE_START_ADDR.
    reg_space_start: 0xFF00_0000,
    mmio_access_bytes: 4,
};
