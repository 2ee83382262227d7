//! The TLB windows of BAR0/BAR4 and their configuration registers: which
//! tile (or rectangle) and which window-sized piece of its address space a
//! window shows, on which NOC, with what ordering.
//!
//! A window of size 2^n shows NOC address `local_offset << n` onwards of the
//! configured tile. The register layout depends on the chip and on the window
//! size; [`TlbFields`] gives the first bit of each field, [`TlbWindowKind`]
//! encodes a [`TlbConfig`] into register bits and decodes it back. The bits
//! are little-endian across the 32-bit words the host writes (low word
//! first: tt-umd `device/pcie/pci_device.cpp` `configure_tlb`).

use super::noc_id::Noc;

/// Ordering mode of the requests a window produces (tt-umd
/// `device/api/umd/device/types/tlb.hpp` Relaxed 0, Strict 1, Posted 2; tt-isa
/// `BlackholeA0/PCIExpressTile/HostToDeviceTLBs.md` adds 3, counted writes;
/// blackhole-py `hw.py` NocOrdering has 0-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum TlbOrdering {
    /// Default: no read-after-write protection.
    #[default]
    Relaxed,
    /// Full AXI ordering.
    Strict,
    /// Posted writes.
    Posted,
    /// Counted writes (Blackhole).
    Counted,
}

impl TlbOrdering {
    pub const fn bits(self) -> u32 {
        match self {
            TlbOrdering::Relaxed => 0,
            TlbOrdering::Strict => 1,
            TlbOrdering::Posted => 2,
            TlbOrdering::Counted => 3,
        }
    }

    pub const fn from_bits(v: u32) -> Self {
        match v & 3 {
            0 => TlbOrdering::Relaxed,
            1 => TlbOrdering::Strict,
            2 => TlbOrdering::Posted,
            _ => TlbOrdering::Counted,
        }
    }
}

/// What one TLB window is configured to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlbConfig {
    /// NOC address of the window's first byte, in units of the window size.
    pub local_offset: u64,
    /// Target tile (unicast), or the multicast rectangle's end corner.
    pub x_end: u8,
    pub y_end: u8,
    /// Multicast rectangle's start corner (ignored for unicast).
    pub x_start: u8,
    pub y_start: u8,
    pub noc_sel: Noc,
    pub mcast: bool,
    pub ordering: TlbOrdering,
    pub linked: bool,
    /// Use a static VC (tt-umd never sets it: `*_implementation.hpp`
    /// get_static_vc() false). On Blackhole this is the enable bit; the VC
    /// number bits after it are left 0.
    pub static_vc: bool,
}

impl TlbConfig {
    /// A unicast window onto tile (`x`, `y`), showing `local_offset`.
    pub const fn unicast(x: u8, y: u8, local_offset: u64, noc_sel: Noc) -> Self {
        Self {
            local_offset,
            x_end: x,
            y_end: y,
            x_start: 0,
            y_start: 0,
            noc_sel,
            mcast: false,
            ordering: TlbOrdering::Relaxed,
            linked: false,
            static_vc: false,
        }
    }
}

/// A [`TlbConfig`] field does not fit its register field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TlbError {
    #[error("TLB field {field} = {value:#x} does not fit in {bits} bits")]
    FieldTooWide { field: &'static str, value: u64, bits: u32 },
    #[error("TLB register selects NOC {value}; only 0 and 1 exist")]
    BadNocSel { value: u32 },
}

/// First bit of each field of one window kind's configuration register.
/// Each field runs up to the next one's first bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlbFields {
    /// `local_offset` is bits [0, x_end).
    pub x_end: u32,
    pub y_end: u32,
    pub x_start: u32,
    pub y_start: u32,
    pub noc_sel: u32,
    pub mcast: u32,
    pub ordering: u32,
    pub linked: u32,
    pub static_vc: u32,
}

const COORD_BITS: u32 = 6;

const fn field(bits: u128, first: u32, width: u32) -> u64 {
    ((bits >> first) & ((1u128 << width) - 1)) as u64
}

const fn put(value: u64, first: u32, width: u32, name: &'static str) -> Result<u128, TlbError> {
    if width < 64 && value >> width != 0 {
        return Err(TlbError::FieldTooWide { field: name, value, bits: width });
    }
    Ok((value as u128) << first)
}

impl TlbFields {
    /// Width of `local_offset` in bits.
    pub const fn local_offset_bits(&self) -> u32 {
        self.x_end
    }

    /// Width of the NOC-select field (1 on Wormhole, 2 on Blackhole).
    pub const fn noc_sel_bits(&self) -> u32 {
        self.mcast - self.noc_sel
    }

    /// The register bits of `c` (reserved bits 0).
    pub const fn encode(&self, c: &TlbConfig) -> Result<u128, TlbError> {
        let parts = [
            put(c.local_offset, 0, self.x_end, "local_offset"),
            put(c.x_end as u64, self.x_end, COORD_BITS, "x_end"),
            put(c.y_end as u64, self.y_end, COORD_BITS, "y_end"),
            put(c.x_start as u64, self.x_start, COORD_BITS, "x_start"),
            put(c.y_start as u64, self.y_start, COORD_BITS, "y_start"),
            put(c.noc_sel.index() as u64, self.noc_sel, self.noc_sel_bits(), "noc_sel"),
            put(c.mcast as u64, self.mcast, 1, "mcast"),
            put(c.ordering.bits() as u64, self.ordering, 2, "ordering"),
            put(c.linked as u64, self.linked, 1, "linked"),
            put(c.static_vc as u64, self.static_vc, 1, "static_vc"),
        ];
        let mut bits = 0u128;
        let mut i = 0;
        while i < parts.len() {
            match parts[i] {
                Ok(b) => bits |= b,
                Err(e) => return Err(e),
            }
            i += 1;
        }
        Ok(bits)
    }

    /// The configuration register bits `bits` hold (reserved bits ignored).
    pub const fn decode(&self, bits: u128) -> Result<TlbConfig, TlbError> {
        let noc = field(bits, self.noc_sel, self.noc_sel_bits()) as u32;
        let noc_sel = match Noc::from_index(noc) {
            Some(n) => n,
            None => return Err(TlbError::BadNocSel { value: noc }),
        };
        Ok(TlbConfig {
            local_offset: field(bits, 0, self.x_end),
            x_end: field(bits, self.x_end, COORD_BITS) as u8,
            y_end: field(bits, self.y_end, COORD_BITS) as u8,
            x_start: field(bits, self.x_start, COORD_BITS) as u8,
            y_start: field(bits, self.y_start, COORD_BITS) as u8,
            noc_sel,
            mcast: field(bits, self.mcast, 1) != 0,
            ordering: TlbOrdering::from_bits(field(bits, self.ordering, 2) as u32),
            linked: field(bits, self.linked, 1) != 0,
            static_vc: field(bits, self.static_vc, 1) != 0,
        })
    }
}

/// One size of TLB window and where its windows and registers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlbWindowKind {
    /// log2 of the window size in bytes.
    pub size_log2: u32,
    /// Windows of this size.
    pub count: u32,
    /// The BAR the windows are in (0 or 4).
    pub bar: u8,
    /// Offset of the first window in that BAR.
    pub bar_offset: u64,
    /// TLB index of the first window (indices number all kinds in a row;
    /// index i's config register is at `tlb_config_base + i * entry bytes`).
    pub first_index: u32,
    pub fields: TlbFields,
}

impl TlbWindowKind {
    pub const fn size(&self) -> u64 {
        1 << self.size_log2
    }

    /// Offset in its BAR of window `i` of this kind (0-based within the kind).
    pub const fn window_offset(&self, i: u32) -> u64 {
        self.bar_offset + i as u64 * self.size()
    }

    /// Whether TLB index `index` is one of this kind's windows.
    pub const fn contains_index(&self, index: u32) -> bool {
        index >= self.first_index && index < self.first_index + self.count
    }

    /// The config that shows NOC address `addr` of tile (`x`, `y`), and the
    /// offset of `addr` inside the window.
    pub const fn target(&self, x: u8, y: u8, addr: u64, noc_sel: Noc) -> (TlbConfig, u64) {
        (TlbConfig::unicast(x, y, addr >> self.size_log2, noc_sel), addr & (self.size() - 1))
    }
}

/// Splits register bits into the 32-bit words the host writes, low first.
pub const fn to_words(bits: u128) -> [u32; 3] {
    [bits as u32, (bits >> 32) as u32, (bits >> 64) as u32]
}

/// Joins the 32-bit words of a config register, low first.
pub const fn from_words(words: [u32; 3]) -> u128 {
    words[0] as u128 | (words[1] as u128) << 32 | (words[2] as u128) << 64
}

/// Wormhole 1 MiB windows: tt-umd `wormhole_implementation.hpp` TLB_1M_OFFSET
/// {local_offset 0, x_end 16, y_end 22, x_start 28, y_start 34, noc_sel 40,
/// mcast 41, ordering 42, linked 44, static_vc 45}.
pub const WH_1M_FIELDS: TlbFields = TlbFields {
    x_end: 16,
    y_end: 22,
    x_start: 28,
    y_start: 34,
    noc_sel: 40,
    mcast: 41,
    ordering: 42,
    linked: 44,
    static_vc: 45,
};

/// Wormhole 2 MiB windows: tt-umd `wormhole_implementation.hpp` TLB_2M_OFFSET
/// {0, 15, 21, 27, 33, 39, 40, 41, 43, 44}.
pub const WH_2M_FIELDS: TlbFields = TlbFields {
    x_end: 15,
    y_end: 21,
    x_start: 27,
    y_start: 33,
    noc_sel: 39,
    mcast: 40,
    ordering: 41,
    linked: 43,
    static_vc: 44,
};

/// Wormhole 16 MiB windows: tt-umd `wormhole_implementation.hpp`
/// TLB_16M_OFFSET {0, 12, 18, 24, 30, 36, 37, 38, 40, 41}.
pub const WH_16M_FIELDS: TlbFields = TlbFields {
    x_end: 12,
    y_end: 18,
    x_start: 24,
    y_start: 30,
    noc_sel: 36,
    mcast: 37,
    ordering: 38,
    linked: 40,
    static_vc: 41,
};

/// Blackhole 2 MiB windows: tt-umd `blackhole_implementation.hpp`
/// TLB_2M_OFFSET {0, 43, 49, 55, 61, 67, 69, 70, 72, 73}; tt-kmd `blackhole.c`
/// struct TLB_2M_REG (address:43, x_end:6, y_end:6, x_start:6, y_start:6,
/// noc:2, multicast:1, ordering:2, linked:1, use_static_vc:1, stream_header:1,
/// static_vc:3).
pub const BH_2M_FIELDS: TlbFields = TlbFields {
    x_end: 43,
    y_end: 49,
    x_start: 55,
    y_start: 61,
    noc_sel: 67,
    mcast: 69,
    ordering: 70,
    linked: 72,
    static_vc: 73,
};

/// Blackhole 4 GiB windows: tt-umd `blackhole_implementation.hpp`
/// TLB_4G_OFFSET {0, 32, 38, 44, 50, 56, 58, 59, 61, 62}; tt-kmd `blackhole.c`
/// struct TLB_4G_REG.
pub const BH_4G_FIELDS: TlbFields = TlbFields {
    x_end: 32,
    y_end: 38,
    x_start: 44,
    y_start: 50,
    noc_sel: 56,
    mcast: 58,
    ordering: 59,
    linked: 61,
    static_vc: 62,
};
