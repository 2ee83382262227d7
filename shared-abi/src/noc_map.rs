//! The NOC map: every coordinate firmware needs, written by the host into
//! each tile's L1 (`mailbox::NOC_MAP`) before it releases the tile's
//! cores. Nothing is placed at compile time: the same ELF runs on any
//! board and harvesting of its chip.
//!
//! It holds, as tt-metal's firmware gets them from its bank-to-NOC tables
//! and launch messages:
//! - the NOC address of host-memory offset 0 on each NOC (the PCIe tile's
//!   coordinates and the chip's host-memory base: Wormhole 0x8_0000_0000,
//!   Blackhole bit 60);
//! - per DRAM bank (tt-metal's numbering: Wormhole's 1 GiB views, two per
//!   channel), the NOC address of the bank's byte 0 on each NOC (the
//!   worker endpoint of that NOC and the view's offset in its channel);
//! - the compute grid: the translated x of each logical column and y of
//!   each logical row (Blackhole's columns skip 8 and 9, which are not
//!   Tensix), which the dispatcher checks destinations against and counts
//!   multicast receivers with, and from which a worker knows its logical
//!   place;
//! - each command queue's dispatcher, which workers report done to.
//!
//! `soc::ChipLayout::noc_map` builds it (feature `std`).

use crate::memory_map::MAX_DRAM_BANKS;
use crate::noc::{Coord, NocAddr, MAX_CQS};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `NocMap::magic`: the host wrote the map (firmware halts with
/// `DeviceError::BadConfig` otherwise).
pub const MAGIC: u32 = u32::from_le_bytes(*b"NMAP");
/// Most logical columns and rows the compute grid may have (Blackhole has
/// 14 Tensix columns, Wormhole 10 Tensix rows).
pub const MAX_GRID_COLS: usize = 16;
pub const MAX_GRID_ROWS: usize = 16;

/// The compute grid: its logical size, and the translated x of each
/// logical column and y of each logical row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct Grid {
    pub cols: u32,
    pub rows: u32,
    pub x: [u8; MAX_GRID_COLS],
    pub y: [u8; MAX_GRID_ROWS],
}
assert_layout!(Grid, 40, cols => 0, rows => 4, x => 8, y => 24);

impl Grid {
    /// Whether the size is within the tables (and not empty), and the
    /// coordinates in use are distinct NOC coordinates (below 64), as
    /// [`GridMasks`] needs to answer exactly as [`Grid::logical`] and
    /// [`Grid::cores_in`] do.
    pub const fn is_valid(&self) -> bool {
        let size_ok = self.cols >= 1
            && self.cols as usize <= MAX_GRID_COLS
            && self.rows >= 1
            && self.rows as usize <= MAX_GRID_ROWS;
        size_ok && {
            let m = GridMasks::of(self);
            m.cols.count_ones() == self.cols && m.rows.count_ones() == self.rows
        }
    }

    /// Logical `(col, row)` of translated coordinate `c`, if it is a compute core.
    pub const fn logical(&self, c: Coord) -> Option<(u8, u8)> {
        let col = find(&self.x, self.cols as usize, c.x);
        let row = find(&self.y, self.rows as usize, c.y);
        match (col, row) {
            (Some(col), Some(row)) => Some((col, row)),
            _ => None,
        }
    }

    /// Compute cores inside the (translated, inclusive) rectangle
    /// `start..=end`: the receivers of a multicast to it.
    pub const fn cores_in(&self, start: Coord, end: Coord) -> u32 {
        count_in(&self.x, self.cols as usize, start.x, end.x) * count_in(&self.y, self.rows as usize, start.y, end.y)
    }

    /// Translated coordinates of logical core `(col, row)`.
    pub const fn at(&self, col: u8, row: u8) -> Coord {
        Coord::new(self.x[col as usize], self.y[row as usize])
    }
}

/// A [`Grid`] as one bitmask per axis: bit `v` of `cols` (`rows`) is set
/// when translated x (y) `v` is a compute column (row). The dispatcher
/// checks every destination of a packed write (one per core per kernel)
/// and counts every multicast's receivers; on the tables each was a scan
/// (half its PC samples in `cqlab bench dispatch --all-processors`), here
/// two bit tests and two popcounts. NOC coordinates are 6 bits
/// (`arch::niu::node_id::COORD_MASK`), so a `u64` holds an axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GridMasks {
    pub cols: u64,
    pub rows: u64,
}

impl GridMasks {
    /// The masks of `g`'s columns and rows in use (coordinates of 64 and
    /// above, which no NOC address can name, are left out: `g` is then
    /// not valid).
    pub const fn of(g: &Grid) -> Self {
        Self { cols: mask_of(&g.x, g.cols as usize), rows: mask_of(&g.y, g.rows as usize) }
    }

    /// Whether `c` is a compute core: `g.logical(c).is_some()` for the
    /// valid grid `g` these masks were made from.
    #[inline]
    pub const fn contains(&self, c: Coord) -> bool {
        has(self.cols, c.x) && has(self.rows, c.y)
    }

    /// [`GridWords::contains_packed`] for any grid: whether `raw` is the
    /// packed coordinate word of a compute core.
    #[inline]
    pub const fn contains_packed(&self, raw: u32) -> bool {
        raw >> 16 == 0 && self.contains(Coord::unpack(raw))
    }

    /// Compute cores inside the (translated, inclusive) rectangle
    /// `start..=end`: `g.cores_in(start, end)` for a valid grid `g`.
    #[inline]
    pub const fn cores_in(&self, start: Coord, end: Coord) -> u32 {
        // RV32IM has no popcount instruction: LLVM expands `count_ones`
        // inline (shifts, masks and one multiply per word), with no call.
        (self.cols & span(start.x, end.x)).count_ones() * (self.rows & span(start.y, end.y)).count_ones()
    }
}

/// [`GridMasks`] as two 32-bit words, for a grid whose compute columns
/// and rows all lie below 32 (both chips' do: translated Wormhole Tensix
/// x 18-25 and y 18-27, Blackhole x 1-16 and y 2-11; `soc` module). The
/// dispatcher checks every destination of a packed write against it with
/// three shifts in registers: the one-byte-a-coordinate table it replaced
/// took two byte loads and the address arithmetic around them a
/// destination (the dispatcher's copy and check of a program with 128
/// unique args a core on a p150a's 110 cores: ~28 cycles a core with the
/// table, ~21 with the words).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridWords {
    cols: u32,
    rows: u32,
}

impl GridWords {
    /// `None` when a compute column or row lies at 32 or above.
    pub const fn of(m: &GridMasks) -> Option<Self> {
        if m.cols >> 32 != 0 || m.rows >> 32 != 0 {
            return None;
        }
        Some(Self { cols: m.cols as u32, rows: m.rows as u32 })
    }

    /// Whether `raw` is the packed coordinate word (`Coord::packed`: x |
    /// y << 8, nothing above) of a compute core. Without a branch, so
    /// that the dispatcher can check several words and branch once.
    #[inline(always)]
    pub const fn contains_packed(&self, raw: u32) -> bool {
        // The `& 31`s cost nothing on RV32, whose shifts take the amount's
        // low five bits; the bits they drop must be clear.
        let unused_clear = (raw & !0x1F1F == 0) as u32;
        (self.cols >> (raw & 31)) & (self.rows >> (raw >> 8 & 31)) & unused_clear != 0
    }

    /// A check of many words at once: [`PackedCheck::passed`] after
    /// [`PackedCheck::add`] of each is whether `contains_packed` holds for
    /// all of them.
    #[inline(always)]
    pub const fn check(self) -> PackedCheck {
        PackedCheck { grid: self, cols: !0, rows: !0, bits: 0 }
    }
}

/// [`GridWords::contains_packed`] of a batch, with a third fewer
/// instructions a word: the column and row bits are AND-ed across the
/// words and the bits that must be clear OR-ed, then tested once (the
/// dispatcher's check of a packed write's destinations, ~8 instructions a
/// word one by one, 6 so).
#[derive(Clone, Copy, Debug)]
pub struct PackedCheck {
    grid: GridWords,
    cols: u32,
    rows: u32,
    bits: u32,
}

impl PackedCheck {
    #[inline(always)]
    pub fn add(&mut self, raw: u32) {
        // The shifts take the amount's low five bits (RV32, and `& 31`
        // here); the bits they drop are tested through `bits`.
        self.cols &= self.grid.cols >> (raw & 31);
        self.rows &= self.grid.rows >> (raw >> 8 & 31);
        self.bits |= raw;
    }

    /// Whether every word added is the packed coordinate word of a compute core.
    #[inline(always)]
    pub const fn passed(&self) -> bool {
        self.cols & self.rows & 1 != 0 && self.bits & !0x1F1F == 0
    }
}

/// The map (module docs). Coordinates are translated ones, as requests
/// name them (`noc` module docs); NOC addresses are `NocAddr` words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct NocMap {
    pub magic: u32,
    /// Command queues of the device (each worker serves that many launch rings).
    pub num_cqs: u32,
    /// DRAM banks in `dram`.
    pub dram_banks: u32,
    pub _reserved0: u32,
    /// The compute grid.
    pub grid: Grid,
    pub _reserved1: [u32; 2],
    /// Host-memory offset 0, per NOC (index `arch::Noc::index`).
    pub pcie: [u64; 2],
    /// Per command queue: its dispatcher's coordinates (`Coord::packed`).
    pub dispatcher: [u32; MAX_CQS as usize],
    /// Per DRAM bank, per NOC: the NOC address of the bank's byte 0.
    pub dram: [[u64; 2]; MAX_DRAM_BANKS as usize],
    pub _reserved2: [u32; 28],
}
assert_layout!(NocMap, 512, magic => 0, num_cqs => 4, dram_banks => 8, grid => 16, pcie => 64,
    dispatcher => 80, dram => 144, _reserved2 => 400);

impl Default for NocMap {
    fn default() -> Self {
        <Self as zerocopy::FromZeros>::new_zeroed()
    }
}

/// Byte offsets of the fields firmware loads word by word.
pub const NUM_CQS: u32 = core::mem::offset_of!(NocMap, num_cqs) as u32;
pub const DRAM_BANKS: u32 = core::mem::offset_of!(NocMap, dram_banks) as u32;
pub const GRID: u32 = core::mem::offset_of!(NocMap, grid) as u32;
pub const PCIE: u32 = core::mem::offset_of!(NocMap, pcie) as u32;
pub const DISPATCHER: u32 = core::mem::offset_of!(NocMap, dispatcher) as u32;
pub const DRAM: u32 = core::mem::offset_of!(NocMap, dram) as u32;

/// Byte offset of NOC `noc`'s host-memory base (`NocMap::pcie[noc]`).
pub const fn pcie_entry(noc: u32) -> u32 {
    PCIE + noc * core::mem::size_of::<u64>() as u32
}

/// Byte offset of DRAM bank `bank`'s base on NOC `noc` (`NocMap::dram[bank][noc]`).
pub const fn dram_entry(bank: u32, noc: u32) -> u32 {
    DRAM + (bank * 2 + noc) * core::mem::size_of::<u64>() as u32
}

/// Byte offset of command queue `cq`'s dispatcher (`NocMap::dispatcher[cq]`).
pub const fn dispatcher_entry(cq: u32) -> u32 {
    DISPATCHER + cq * core::mem::size_of::<u32>() as u32
}

impl NocMap {
    /// Whether the map is complete and within its capacities.
    pub const fn is_valid(&self) -> bool {
        self.magic == MAGIC
            && self.num_cqs >= 1
            && self.num_cqs <= MAX_CQS as u32
            && self.dram_banks >= 1
            && self.dram_banks <= MAX_DRAM_BANKS
            && self.grid.is_valid()
    }

    /// The NOC address of byte `offset` of DRAM bank `bank` on NOC `noc`.
    pub const fn dram_addr(&self, bank: u32, noc: usize, offset: u64) -> NocAddr {
        NocAddr(self.dram[bank as usize][noc]).offset(offset)
    }
}

const fn find(list: &[u8], n: usize, v: u8) -> Option<u8> {
    let mut i = 0;
    while i < n && i < list.len() {
        if list[i] == v {
            return Some(i as u8);
        }
        i += 1;
    }
    None
}

const fn mask_of(list: &[u8], n: usize) -> u64 {
    let (mut i, mut m) = (0, 0u64);
    while i < n && i < list.len() {
        if list[i] < 64 {
            m |= 1 << list[i];
        }
        i += 1;
    }
    m
}

/// Whether bit `v` of `mask` is set (none is at 64 and above).
const fn has(mask: u64, v: u8) -> bool {
    // One 32-bit half and a 32-bit shift: RV32 shifts a u64 by a variable
    // amount in several instructions and branches (the dispatcher checks
    // every destination of a packed write so).
    let half = match v {
        0..32 => mask as u32,
        32..64 => (mask >> 32) as u32,
        _ => return false,
    };
    (half >> (v & 31)) & 1 != 0
}

/// Bits `lo..=hi` (within 0..64; none when `lo > hi`).
const fn span(lo: u8, hi: u8) -> u64 {
    if lo > hi || lo >= 64 {
        return 0;
    }
    let hi = if hi > 63 { 63 } else { hi };
    (u64::MAX << lo) & (u64::MAX >> (63 - hi))
}

const fn count_in(list: &[u8], n: usize, lo: u8, hi: u8) -> u32 {
    let (mut i, mut k) = (0, 0);
    while i < n && i < list.len() {
        if list[i] >= lo && list[i] <= hi {
            k += 1;
        }
        i += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entry_offsets_read_the_fields_the_host_wrote() {
        use zerocopy::IntoBytes;
        let mut m = NocMap { pcie: [0x1111, 0x2222], ..Default::default() };
        m.dispatcher[1] = 0x3333;
        m.dram[5] = [0x4444, 0x5555];
        let bytes = m.as_bytes();
        let u64_at = |o: u32| u64::from_le_bytes(bytes[o as usize..o as usize + 8].try_into().unwrap());
        let u32_at = |o: u32| u32::from_le_bytes(bytes[o as usize..o as usize + 4].try_into().unwrap());
        assert_eq!((u64_at(pcie_entry(0)), u64_at(pcie_entry(1))), (0x1111, 0x2222));
        assert_eq!(u32_at(dispatcher_entry(1)), 0x3333);
        assert_eq!((u64_at(dram_entry(5, 0)), u64_at(dram_entry(5, 1))), (0x4444, 0x5555));
    }

    #[test]
    fn a_blackhole_grid_skips_columns_8_and_9() {
        let mut m = NocMap { magic: MAGIC, num_cqs: 1, dram_banks: 7, ..Default::default() };
        m.grid.cols = 11;
        m.grid.rows = 10;
        let cols = [1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13];
        m.grid.x[..11].copy_from_slice(&cols);
        for (i, y) in m.grid.y.iter_mut().take(10).enumerate() {
            *y = 2 + i as u8;
        }
        assert!(m.is_valid());
        let g = m.grid;
        assert_eq!(g.logical(Coord::new(10, 2)), Some((7, 0)));
        assert_eq!(g.at(7, 0), Coord::new(10, 2));
        assert_eq!(g.logical(Coord::new(8, 2)), None, "column 8 is not Tensix");
        assert_eq!(g.logical(Coord::new(14, 2)), None, "the dispatch column is not compute");
        assert_eq!(g.cores_in(Coord::new(1, 2), Coord::new(13, 11)), 110);
        assert_eq!(g.cores_in(Coord::new(7, 2), Coord::new(10, 3)), 4);
        let masks = GridMasks::of(&g);
        assert_eq!(masks.cols, 0b11_1100_1111_1110, "columns 1-7 and 10-13");
        assert!(!masks.contains(Coord::new(9, 2)) && masks.contains(Coord::new(10, 11)));
        assert_eq!(masks.cores_in(Coord::new(7, 2), Coord::new(10, 3)), 4);
        assert_masks_agree(&g);
        m.magic = 0;
        assert!(!m.is_valid());
    }

    /// `GridMasks::of(g)` answers as `g`'s tables do, for every coordinate
    /// a packed destination or multicast corner can carry (x and y are
    /// bytes). `cores_in` is a product of one count per axis in both, so
    /// each axis is checked over every `lo..=hi` with the other axis
    /// spanning the whole grid (at least one core).
    fn assert_masks_agree(g: &Grid) {
        assert!(g.is_valid(), "{g:?}");
        let m = GridMasks::of(g);
        let words = GridWords::of(&m);
        for x in 0..=u8::MAX {
            for y in 0..=u8::MAX {
                let c = Coord::new(x, y);
                assert_eq!(m.contains(c), g.logical(c).is_some(), "{c} in {g:?}");
                assert_eq!(m.contains_packed(c.packed()), m.contains(c), "{c} packed, in {g:?}");
                assert!(!m.contains_packed(c.packed() | 1 << 16), "{c} with a bit above the coordinates");
                if let Some(words) = words {
                    assert_eq!(words.contains_packed(c.packed()), m.contains(c), "{c} packed, in {g:?}");
                    assert!(!words.contains_packed(c.packed() | 1 << 16), "{c} with a bit above the coordinates");
                }
            }
        }
        let all = (Coord::new(0, 0), Coord::new(u8::MAX, u8::MAX));
        for lo in 0..=u8::MAX {
            for hi in 0..=u8::MAX {
                let (cols, rows) = (
                    (Coord::new(lo, all.0.y), Coord::new(hi, all.1.y)),
                    (Coord::new(all.0.x, lo), Coord::new(all.1.x, hi)),
                );
                assert_eq!(m.cores_in(cols.0, cols.1), g.cores_in(cols.0, cols.1), "columns {lo}..={hi} of {g:?}");
                assert_eq!(m.cores_in(rows.0, rows.1), g.cores_in(rows.0, rows.1), "rows {lo}..={hi} of {g:?}");
            }
        }
    }

    fn grid(x: &[u8], y: &[u8]) -> Grid {
        let mut g = Grid { cols: x.len() as u32, rows: y.len() as u32, ..Grid::default() };
        g.x[..x.len()].copy_from_slice(x);
        g.y[..y.len()].copy_from_slice(y);
        g
    }

    #[test]
    fn a_grid_of_repeated_or_out_of_range_coordinates_is_not_valid() {
        assert!(grid(&[1, 2, 3], &[2, 3]).is_valid());
        assert!(!grid(&[1, 2, 1], &[2, 3]).is_valid(), "column 1 twice");
        assert!(!grid(&[1, 2, 3], &[2, 64]).is_valid(), "row 64 is no NOC coordinate");
        assert!(grid(&[0, 63], &[63]).is_valid());
        assert!(GridWords::of(&GridMasks::of(&grid(&[0, 31], &[31]))).is_some());
        assert!(GridWords::of(&GridMasks::of(&grid(&[1, 32], &[2]))).is_none(), "column 32 needs more than a word");
        assert!(GridWords::of(&GridMasks::of(&grid(&[1], &[40]))).is_none(), "row 40 needs more than a word");
        assert!(!grid(&[], &[2]).is_valid());
        // Entries past `cols` and `rows` are not part of the grid.
        let mut g = grid(&[1, 2], &[2]);
        g.x[2] = 1;
        assert!(g.is_valid());
        assert_masks_agree(&g);
    }

    /// Every board's grid, with its usual harvesting and with none (the
    /// Blackhole grids' translated x skip 8 and 9: 1-7 and 10-13, or 10-15
    /// unharvested, the last column going to dispatch).
    #[cfg(feature = "std")]
    #[test]
    fn masks_agree_with_the_tables_on_every_board() {
        use crate::soc::{Board, ChipLayout, Harvesting};
        for board in Board::ALL {
            for h in [board.default_harvesting(), Harvesting::none()] {
                let l = ChipLayout::new(board, h.clone()).unwrap();
                let m = l.noc_map(&l.placement(1).unwrap()).unwrap();
                assert_masks_agree(&m.grid);
                // The dispatcher's quick destination check serves every board.
                assert!(GridWords::of(&GridMasks::of(&m.grid)).is_some(), "{board:?}: {:?}", m.grid);
            }
        }
    }

    #[cfg(feature = "std")]
    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Any valid grid, in any order (the exhaustive check is ~65k
        /// lookups a grid).
        #[test]
        fn masks_agree_with_the_tables(
            x in proptest::sample::subsequence((0u8..64).collect::<std::vec::Vec<_>>(), 1..=MAX_GRID_COLS).prop_shuffle(),
            y in proptest::sample::subsequence((0u8..64).collect::<std::vec::Vec<_>>(), 1..=MAX_GRID_ROWS).prop_shuffle(),
        ) {
            assert_masks_agree(&grid(&x, &y));
        }

        /// A batch passes exactly when every word of it is a compute core's,
        /// whichever word is bad and however (a column or row outside the
        /// grid, a bit above or between the coordinates).
        #[test]
        fn a_batch_check_is_every_word_checked_alone(
            x in proptest::sample::subsequence((0u8..32).collect::<std::vec::Vec<_>>(), 1..=MAX_GRID_COLS),
            y in proptest::sample::subsequence((0u8..32).collect::<std::vec::Vec<_>>(), 1..=MAX_GRID_ROWS),
            words in proptest::collection::vec((0usize..16, 0usize..16, 0u32..8), 1..12),
        ) {
            let words_of = GridWords::of(&GridMasks::of(&grid(&x, &y))).expect("coordinates below 32");
            let raws: std::vec::Vec<u32> = words
                .iter()
                .map(|&(i, j, spoil)| {
                    let good = Coord::new(x[i % x.len()], y[j % y.len()]).packed();
                    // Mostly good words; otherwise a coordinate moved off
                    // the grid or a bit set where none may be.
                    match spoil {
                        0 => good ^ 1,
                        1 => good ^ 1 << 8,
                        2 => good | 1 << (13 + i % 3),
                        3 => good | 1 << (16 + j),
                        _ => good,
                    }
                })
                .collect();
            let mut check = words_of.check();
            for &r in &raws {
                check.add(r);
            }
            let each = raws.iter().all(|&r| words_of.contains_packed(r));
            prop_assert_eq!(check.passed(), each, "{:x?}", raws);
        }
    }
}
