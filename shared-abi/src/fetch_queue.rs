//! Fetch-queue entries: the host's doorbell to the prefetcher.
//!
//! The host writes one `u32` per chunk into a slot of the prefetcher's
//! `FETCH_QUEUE` region through the BAR; the prefetcher zeroes the slot
//! when it has read the chunk, which frees the slot. A zero entry therefore means "empty" and a
//! zero-size chunk can never be expressed: both sides reject it.
//!
//! A chunk is read from the issue queue, next after the previous one. A
//! `STAGED` entry's chunk is gathered: the first bytes from the issue queue,
//! then a piece of sysmem elsewhere (its place and size in the slot's
//! `source_addr` and `split_addr` words, written before the entry; the
//! place in `SIZE_UNIT`s from the start of the chip's host-memory range,
//! as `CqConfig::sysmem_base` counts, not from the pinned buffer's start,
//! which a card's driver puts anywhere in that range), then
//! the rest from the issue queue, which holds only the first and last
//! parts. The host keeps large, reused bytes (kernel binaries, runtime-arg
//! blocks) staged in sysmem that way and an enqueue copies none of them;
//! the prefetcher reads the same bytes into the same chunk buffer, in three
//! reads instead of one.

use crate::memory_map::FETCH_QUEUE;

/// Bit 31: the chunk may hold an `EXEC_BUF` (the prefetcher refuses one in
/// a chunk without it, so stray bytes never start a replay). It no longer
/// drains earlier work: a replay waits only for what it reuses (a WAIT the
/// host puts before the `EXEC_BUF` where needed), so it overlaps the work
/// before it.
pub const STALL_FLAG: u32 = 1 << 31;
/// Bit 30: the chunk is gathered (module docs).
pub const STAGED_FLAG: u32 = 1 << 30;
/// Chunk sizes are counted in these units.
pub const SIZE_UNIT: u32 = 16;
/// The size bits of an entry.
const SIZE_MASK: u32 = STAGED_FLAG - 1;
/// Largest chunk size an entry can express, in bytes.
pub const MAX_CHUNK_BYTES: u64 = SIZE_MASK as u64 * SIZE_UNIT as u64;
/// Where a staged piece may end, counted from the start of the chip's
/// host-memory range, on a chip whose PCIe tile forwards `host_mem_size`
/// bytes of that range to host memory (`arch::bar::BarLayout`, each chip's
/// figure cited there): the lesser of that and what a source word can name.
/// A source word, and `CqConfig::staged_from + staged_units`, count
/// `SIZE_UNIT`s in a `u32`, so a piece ends at `u32::MAX` units (64 GiB - 16)
/// at most. Wormhole forwards 4 GiB - 128 KiB; Blackhole 64 GiB, of which
/// the last 16 bytes cannot be named.
pub const fn staged_end_limit(host_mem_size: u64) -> u64 {
    let named = u32::MAX as u64 * SIZE_UNIT as u64;
    if host_mem_size < named {
        host_mem_size
    } else {
        named
    }
}

/// Bytes of one slot: the entry, then (for a gathered chunk) its source and
/// split words, side by side so the host writes both at once.
pub const SLOT_SIZE: u32 = 16;
/// Offset of a slot's source word from its entry.
pub const SOURCE_OFFSET: u32 = 4;
/// Offset of a slot's split word from its entry: right after the source.
pub const SPLIT_OFFSET: u32 = SOURCE_OFFSET + 4;
const _: () = assert!(SPLIT_OFFSET + 4 <= SLOT_SIZE);
/// Number of slots the `FETCH_QUEUE` region holds.
pub const MAX_ENTRIES: u32 = FETCH_QUEUE.size / SLOT_SIZE;

/// L1 address of slot `index`'s entry.
pub const fn slot_addr(index: u32) -> u32 {
    FETCH_QUEUE.base + SLOT_SIZE * index
}

/// The slot an L1 address `addr` lies in (its entry or a word after it), if
/// any: where a prefetcher's error record points.
pub const fn slot_of(addr: u32) -> Option<u32> {
    if addr >= FETCH_QUEUE.base && addr < FETCH_QUEUE.base + FETCH_QUEUE.size {
        Some((addr - FETCH_QUEUE.base) / SLOT_SIZE)
    } else {
        None
    }
}

/// L1 address of slot `index`'s source word: where a gathered chunk's
/// staged piece is in sysmem, in `SIZE_UNIT`s.
pub const fn source_addr(index: u32) -> u32 {
    slot_addr(index) + SOURCE_OFFSET
}

/// L1 address of slot `index`'s split word ([`Split`]).
pub const fn split_addr(index: u32) -> u32 {
    slot_addr(index) + SPLIT_OFFSET
}

/// Where a gathered chunk's staged piece goes: after `head` bytes from the
/// issue queue, `staged` bytes from sysmem (both multiples of `SIZE_UNIT`,
/// each at most `u16::MAX` units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub head: u32,
    pub staged: u32,
}

impl Split {
    /// The split, if both sizes are whole units that fit its fields.
    pub const fn new(head: u32, staged: u32) -> Option<Self> {
        const fn fits(n: u32) -> bool {
            n % SIZE_UNIT == 0 && n / SIZE_UNIT <= 0xffff
        }
        if fits(head) && fits(staged) {
            Some(Self { head, staged })
        } else {
            None
        }
    }
    pub const fn raw(self) -> u32 {
        (self.head / SIZE_UNIT) | ((self.staged / SIZE_UNIT) << 16)
    }
    pub const fn from_raw(raw: u32) -> Self {
        Self { head: (raw & 0xffff) * SIZE_UNIT, staged: (raw >> 16) * SIZE_UNIT }
    }
}

/// One fetch-queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchEntry(u32);

/// Why a value is not a valid fetch entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchEntryError {
    /// Zero-size chunks are rejected (a zero word means an empty slot).
    ZeroSize,
    /// The size is not a multiple of `SIZE_UNIT` bytes.
    Unaligned { bytes: u32 },
    /// The size does not fit the entry.
    TooLarge { bytes: u64 },
}

impl FetchEntry {
    /// Entry for a chunk of `bytes` bytes.
    pub const fn new(bytes: u64, stall: bool) -> Result<Self, FetchEntryError> {
        if bytes == 0 {
            return Err(FetchEntryError::ZeroSize);
        }
        if bytes > MAX_CHUNK_BYTES {
            return Err(FetchEntryError::TooLarge { bytes });
        }
        if bytes % SIZE_UNIT as u64 != 0 {
            return Err(FetchEntryError::Unaligned { bytes: bytes as u32 });
        }
        let units = (bytes / SIZE_UNIT as u64) as u32;
        Ok(Self(units | if stall { STALL_FLAG } else { 0 }))
    }
    /// Entry for a gathered chunk of `bytes` bytes in all (its source and
    /// split words say which are staged).
    pub const fn staged(bytes: u64) -> Result<Self, FetchEntryError> {
        match Self::new(bytes, false) {
            Ok(e) => Ok(Self(e.0 | STAGED_FLAG)),
            Err(e) => Err(e),
        }
    }
    /// Parse a raw slot value as the prefetcher sees it.
    pub const fn from_raw(raw: u32) -> Result<Self, FetchEntryError> {
        if raw & SIZE_MASK == 0 {
            Err(FetchEntryError::ZeroSize)
        } else {
            Ok(Self(raw))
        }
    }
    pub const fn raw(self) -> u32 {
        self.0
    }
    pub const fn bytes(self) -> u32 {
        (self.0 & SIZE_MASK) * SIZE_UNIT
    }
    /// The chunk size a raw slot value names, in bytes, without wrapping:
    /// what a report of a refused entry says it asked for (an entry can name
    /// up to [`MAX_CHUNK_BYTES`], past a `u32`).
    pub const fn raw_bytes(raw: u32) -> u64 {
        (raw & SIZE_MASK) as u64 * SIZE_UNIT as u64
    }
    pub const fn stall(self) -> bool {
        self.0 & STALL_FLAG != 0
    }
    pub const fn is_staged(self) -> bool {
        self.0 & STAGED_FLAG != 0
    }
    /// Issue-queue bytes the chunk takes, given its split word (read only
    /// for a gathered chunk).
    pub const fn issue_bytes(self, split: u32) -> u32 {
        if self.is_staged() {
            self.bytes().saturating_sub(Split::from_raw(split).staged)
        } else {
            self.bytes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each chip's limit: Wormhole's is its forwarded range (a source word
    /// could name 16 times more), Blackhole's the source word's reach (its
    /// range is 16 bytes longer).
    #[test]
    fn a_staged_piece_ends_where_the_chip_forwards_and_a_source_word_names() {
        use crate::arch::bar::{BLACKHOLE, WORMHOLE};
        assert_eq!(staged_end_limit(WORMHOLE.host_mem_size), 0xFFFE_0000);
        assert_eq!(staged_end_limit(BLACKHOLE.host_mem_size), (1 << 36) - 16);
        // The reach is a whole number of units: an arena may end exactly there.
        assert_eq!(staged_end_limit(u64::MAX) % SIZE_UNIT as u64, 0);
        assert_eq!(staged_end_limit(u64::MAX) / SIZE_UNIT as u64, u32::MAX as u64);
    }

    #[test]
    fn zero_size_is_rejected_both_ways() {
        assert_eq!(FetchEntry::new(0, false), Err(FetchEntryError::ZeroSize));
        assert_eq!(FetchEntry::new(0, true), Err(FetchEntryError::ZeroSize));
        assert_eq!(FetchEntry::from_raw(0), Err(FetchEntryError::ZeroSize));
        assert_eq!(FetchEntry::from_raw(STALL_FLAG), Err(FetchEntryError::ZeroSize));
    }

    #[test]
    fn size_and_stall_round_trip() {
        let e = FetchEntry::new(4096, true).unwrap();
        assert_eq!(e.bytes(), 4096);
        assert!(e.stall());
        assert_eq!(FetchEntry::from_raw(e.raw()), Ok(e));
        assert_eq!(FetchEntry::new(24, false), Err(FetchEntryError::Unaligned { bytes: 24 }));
        assert!(matches!(FetchEntry::new(1 << 40, false), Err(FetchEntryError::TooLarge { .. })));
    }

    #[test]
    fn a_gathered_entry_takes_the_issue_queue_bytes_around_its_staged_piece() {
        let e = FetchEntry::staged(12288 + 128).unwrap();
        let split = Split { head: 64, staged: 12288 };
        assert_eq!(Split::from_raw(split.raw()), split);
        assert_eq!(Split::new(64, 12288), Some(split));
        assert_eq!(Split::new(24, 16), None, "not whole units");
        assert_eq!(Split::new(16, 0x10000 * SIZE_UNIT), None, "too many units");
        assert_eq!((e.bytes(), e.issue_bytes(split.raw()), e.is_staged(), e.stall()), (12416, 128, true, false));
        assert_eq!(FetchEntry::from_raw(e.raw()), Ok(e));
        assert_eq!(FetchEntry::from_raw(STAGED_FLAG), Err(FetchEntryError::ZeroSize));
        assert_eq!(FetchEntry::new(4096, false).unwrap().issue_bytes(split.raw()), 4096);
        // A slot's words follow its entry, inside the region.
        assert_eq!((source_addr(1), split_addr(1)), (slot_addr(1) + 4, slot_addr(1) + 8));
        assert!(split_addr(MAX_ENTRIES - 1) + 4 <= FETCH_QUEUE.base + FETCH_QUEUE.size);
    }

    #[test]
    fn a_refused_entry_names_its_slot_and_its_size_unwrapped() {
        assert_eq!(FetchEntry::raw_bytes(0x3fff_ffff), 0x3fff_ffff * SIZE_UNIT as u64);
        assert_eq!(FetchEntry::raw_bytes(STALL_FLAG | 4), 64);
        assert_eq!(slot_of(slot_addr(92)), Some(92));
        assert_eq!(slot_of(split_addr(3)), Some(3));
        assert_eq!(slot_of(FETCH_QUEUE.base + FETCH_QUEUE.size), None);
    }
}
