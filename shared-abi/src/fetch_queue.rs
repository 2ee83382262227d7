//! Fetch-queue entries: the host's doorbell to the prefetcher.
//!
//! The host writes one `u32` per chunk into the prefetcher's `FETCH_QUEUE`
//! region through the BAR; the prefetcher zeroes the slot when it has read the
//! chunk, which frees the slot. A zero entry therefore means "empty" and a
//! zero-size chunk can never be expressed: both sides reject it.

use crate::memory_map::FETCH_QUEUE;

/// Bit 31: the chunk may hold an `EXEC_BUF` (the prefetcher refuses one in
/// a chunk without it, so stray bytes never start a replay). It no longer
/// drains earlier work: a replay waits only for what it reuses (a WAIT the
/// host puts before the `EXEC_BUF` where needed), so it overlaps the work
/// before it.
pub const STALL_FLAG: u32 = 1 << 31;
/// Chunk sizes are counted in these units.
pub const SIZE_UNIT: u32 = 16;
/// Largest chunk size an entry can express, in bytes.
pub const MAX_CHUNK_BYTES: u64 = (STALL_FLAG as u64 - 1) * SIZE_UNIT as u64;
/// Number of slots the `FETCH_QUEUE` region holds.
pub const MAX_ENTRIES: u32 = FETCH_QUEUE.size / 4;

/// L1 address of slot `index`.
pub const fn slot_addr(index: u32) -> u32 {
    FETCH_QUEUE.base + 4 * index
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
    /// Parse a raw slot value as the prefetcher sees it.
    pub const fn from_raw(raw: u32) -> Result<Self, FetchEntryError> {
        if raw & !STALL_FLAG == 0 {
            Err(FetchEntryError::ZeroSize)
        } else {
            Ok(Self(raw))
        }
    }
    pub const fn raw(self) -> u32 {
        self.0
    }
    pub const fn bytes(self) -> u32 {
        (self.0 & !STALL_FLAG) * SIZE_UNIT
    }
    pub const fn stall(self) -> bool {
        self.0 & STALL_FLAG != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
