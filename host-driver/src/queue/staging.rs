//! Staged blobs: large bytes a queue sends again and again (kernel
//! binaries, runtime-arg blocks) kept in sysmem beyond the queues' rings,
//! so an enqueue refers to them with a `STAGED` fetch entry instead of
//! copying them into the issue queue (`cqlab_abi::fetch_queue`). The
//! prefetcher gathers them into the chunk over PCIe as it reads the issue
//! queue, at the cost of two more reads to issue (about 130-170 cycles a
//! gathered chunk, `cqlab bench dispatch`); the host skips the copy, which
//! bounded its enqueue time by memory bandwidth (32 KiB of args: about
//! 3 us).
//!
//! A queue's arena is filled in order, round and round. A blob is
//! overwritten only once the prefetcher has taken every chunk that read it
//! (its fetch count has passed the blob's last entry); when the blobs in
//! the way are still being read, the caller copies inline instead, so
//! staging never waits.

use std::collections::{BTreeMap, HashMap};

/// Placement alignment of a blob in sysmem (PCIe reads start on a line).
const ALIGN: u64 = cqlab_abi::PCIE_ALIGNMENT as u64;

/// Most sysmem one queue stages in, and least worth having.
const ARENA_MAX: u64 = 8 << 20;
const ARENA_MIN: u64 = 64 << 10;

/// The queues' arenas: the sysmem from `end` (past the queues' regions) to
/// `sysmem_len`, shared out evenly; none where a share is too small, or
/// ends past `limit` (`cqlab_abi::fetch_queue::staged_end_limit` of the
/// chip: what its PCIe tile forwards and a fetch slot's source word can
/// name). The device sees sysmem offset 0 at `noc_base` in the chip's
/// host-memory range (`Backend::sysmem_noc_base`), and the limit counts
/// from the range's start.
pub(crate) fn arenas(end: u64, sysmem_len: u64, cqs: u8, noc_base: u64, limit: u64) -> Vec<Result<Staging, NoArena>> {
    let start = end.next_multiple_of(ALIGN);
    let share = (sysmem_len.saturating_sub(start) / cqs.max(1) as u64).min(ARENA_MAX) & !(ALIGN - 1);
    (0..cqs as u64)
        .map(|q| start + q * share)
        .map(|base| match noc_base + base + share {
            _ if share < ARENA_MIN => Err(NoArena::TooSmall),
            end if end > limit => Err(NoArena::Unreachable { end }),
            _ => Ok(Staging::new(base, share)),
        })
        .collect()
}

/// Why a queue has no staging arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoArena {
    /// Less sysmem is left past the queues than an arena is worth.
    TooSmall,
    /// It would end `end` bytes into the chip's host-memory range, past the
    /// limit [`arenas`] was given.
    Unreachable { end: u64 },
}

/// Bytes of the unit a fetch slot's source word counts.
const SIZE_UNIT: u64 = cqlab_abi::fetch_queue::SIZE_UNIT as u64;

/// What a blob holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BlobKey {
    /// A kernel binary relocated for a text slot (residency names binaries
    /// by build id too).
    Image { build_id: u64, slot: u32, len: u32 },
    /// Range `range`'s unique-arg block of the kernel whose args carry
    /// `stamp` (`crate::program::next_stamp`).
    UniqueArgs { stamp: u64, range: usize },
}

/// A staged blob, by its placement.
#[derive(Debug)]
struct Blob {
    key: BlobKey,
    /// Bytes it takes (padded to `ALIGN`).
    span: u64,
}

/// A staged blob, by its key: what a lookup needs (one probe).
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Placement, relative to `base`.
    at: u64,
    /// Fetch-entry number (`CqHost::fetch_issued` when rung) of the last
    /// chunk that reads it.
    last_entry: u32,
}

/// One queue's staging arena: `size` bytes at sysmem offset `base`.
#[derive(Debug)]
pub(crate) struct Staging {
    base: u64,
    size: u64,
    /// Next placement, relative to `base`.
    head: u64,
    /// Blobs by placement (relative to `base`), to find those in the way.
    blobs: BTreeMap<u64, Blob>,
    index: HashMap<BlobKey, Entry>,
}

/// Where a staged blob is, for its fetch entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    pub key: BlobKey,
    /// Sysmem offset.
    pub at: u64,
    /// Bytes, padded to 16.
    pub len: u64,
    /// Whether it was just placed (its bytes must be written now).
    pub fresh: bool,
}

impl Staging {
    pub(crate) fn new(base: u64, size: u64) -> Self {
        debug_assert!(base % ALIGN == 0);
        Self { base, size: size & !(ALIGN - 1), head: 0, blobs: BTreeMap::new(), index: HashMap::new() }
    }

    /// The arena as the queue's `CqConfig` gives it to the prefetcher,
    /// which reads a staged piece from nowhere else: its first unit in the
    /// chip's host-memory range, where sysmem starts at `noc_base` (the
    /// `noc_base` given to [`arenas`]), and its units
    /// (`CqConfig::staged_from`, `staged_units`).
    pub(crate) fn config_units(&self, noc_base: u64) -> (u32, u32) {
        let unit = |bytes: u64| u32::try_from(bytes / SIZE_UNIT).expect("`arenas` keeps an arena within the limit");
        (unit(noc_base + self.base), unit(self.size))
    }

    /// The blob for `key` (`len` bytes, padded to 16), placed now if it is
    /// not staged already; `None` when the space it needs is still being
    /// read (`released(entry)` says whether a fetch entry's chunk has been
    /// taken) or it is larger than the arena. Until `used_by` names the
    /// entry that reads it, the blob counts as read by entry `next` (the
    /// next to be issued), so the same enqueue's next blobs never take its
    /// place.
    pub(crate) fn place(
        &mut self,
        key: BlobKey,
        len: u64,
        next: u32,
        released: impl Fn(u32) -> bool,
    ) -> Option<Placed> {
        let len = len.next_multiple_of(16);
        if let Some(e) = self.index.get_mut(&key) {
            e.last_entry = next;
            return Some(Placed { key, at: self.base + e.at, len, fresh: false });
        }
        let span = len.next_multiple_of(ALIGN);
        if span > self.size {
            return None;
        }
        let at = if self.head + span <= self.size { self.head } else { 0 };
        // The blobs overlapping [at, at + span): the oldest, placed a lap ago.
        let in_the_way: Vec<(u64, BlobKey)> = self
            .blobs
            .range(..at + span)
            .rev()
            .take_while(|(&b, blob)| b + blob.span > at)
            .map(|(&b, blob)| (b, blob.key))
            .collect();
        if in_the_way.iter().any(|(_, key)| !released(self.index[key].last_entry)) {
            return None;
        }
        for (b, key) in in_the_way {
            self.blobs.remove(&b);
            self.index.remove(&key);
        }
        self.blobs.insert(at, Blob { key, span });
        self.index.insert(key, Entry { at, last_entry: next });
        self.head = at + span;
        Some(Placed { key, at: self.base + at, len, fresh: true })
    }

    /// Records that fetch entry `entry` reads the blob `key`.
    pub(crate) fn used_by(&mut self, key: BlobKey, entry: u32) {
        if let Some(e) = self.index.get_mut(&key) {
            e.last_entry = entry;
        }
    }

    /// Forgets a blob whose bytes could not be written (nothing reads it).
    pub(crate) fn forget(&mut self, key: BlobKey) {
        if let Some(e) = self.index.remove(&key) {
            self.blobs.remove(&e.at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(build_id: u64) -> BlobKey {
        BlobKey::Image { build_id, slot: 0, len: 4096 }
    }

    /// No limit but the source word's.
    const NAMED: u64 = u32::MAX as u64 * SIZE_UNIT;

    #[test]
    fn arenas_share_the_sysmem_past_the_queues() {
        let a = arenas(1000, 1000 + (1 << 20), 2, 0, NAMED);
        let (q0, q1) = (a[0].as_ref().unwrap(), a[1].as_ref().unwrap());
        assert_eq!(q0.base, 1024);
        assert_eq!(q1.base, q0.base + q0.size);
        assert!(q1.base + q1.size <= 1000 + (1 << 20));
        assert!(arenas(1000, 1000 + (64 << 10), 2, 0, NAMED)
            .iter()
            .all(|a| a.as_ref().err() == Some(&NoArena::TooSmall)));
        assert_eq!(arenas(0, 1 << 30, 1, 0, NAMED)[0].as_ref().unwrap().size, ARENA_MAX);
        assert_eq!(q1.config_units(0), ((q1.base / 16) as u32, (q1.size / 16) as u32));
        // Where sysmem does not start at the host range's base, the units count from the range's.
        assert_eq!(q1.config_units(3 << 20).0, ((q1.base + (3 << 20)) / 16) as u32);
        // Past 64 GiB a source word cannot name the arena: none, whether the
        // sysmem offset or the pinned buffer's place takes it there.
        let far = arenas(64 << 30, (64 << 30) + (1 << 20), 1, 0, NAMED);
        assert!(matches!(far[0], Err(NoArena::Unreachable { .. })));
        assert!(arenas(1000, 1000 + (1 << 20), 1, (64 << 30) - (1 << 19), NAMED)[0].is_err());
    }

    /// Each chip's limit (`staged_end_limit`), at the byte: an arena that
    /// ends exactly there is kept, one that ends a unit past it is not,
    /// whether the pinned buffer's place or the sysmem offset puts it there.
    /// On Wormhole the range the PCIe tile forwards ends far below what a
    /// source word names (4 GiB - 128 KiB against 64 GiB - 16): an arena
    /// past it read the PCIe controller's registers or reserved space.
    #[test]
    fn an_arena_ends_within_its_chips_limit_at_the_byte() {
        use cqlab_abi::arch::bar::{BLACKHOLE, WORMHOLE};
        use cqlab_abi::fetch_queue::staged_end_limit;
        let len = 1 << 20;
        for (chip, limit) in [
            ("wormhole", staged_end_limit(WORMHOLE.host_mem_size)),
            ("blackhole", staged_end_limit(BLACKHOLE.host_mem_size)),
        ] {
            // One queue; its arena runs from 64 KiB to the buffer's end.
            let at = |noc_base: u64| arenas(64 << 10, len, 1, noc_base, limit).remove(0);
            let fits = at(limit - len).unwrap_or_else(|e| panic!("{chip}: ending at the limit: {e:?}"));
            assert_eq!(fits.config_units(limit - len).0 as u64 + fits.config_units(limit - len).1 as u64, limit / 16);
            assert_eq!(at(limit - len + 16).err(), Some(NoArena::Unreachable { end: limit + 16 }), "{chip}");
            let by_offset = arenas(limit - (128 << 10), limit + (64 << 10), 1, 0, limit).remove(0);
            assert!(matches!(by_offset, Err(NoArena::Unreachable { .. })), "{chip}");
        }
        // The 64 GiB the old check allowed on every chip is past Wormhole's range.
        let wormhole = staged_end_limit(WORMHOLE.host_mem_size);
        assert!(arenas(64 << 10, len, 1, (4 << 30) - len, wormhole)[0].is_err());
    }

    #[test]
    fn a_staged_blob_is_found_again_without_a_copy() {
        let mut s = Staging::new(1 << 20, 64 << 10);
        let a = s.place(image(1), 4096, 0, |_| true).unwrap();
        assert!(a.fresh);
        assert_eq!(a.at, 1 << 20);
        let again = s.place(image(1), 4096, 0, |_| true).unwrap();
        assert_eq!((again.at, again.fresh), (a.at, false));
        let b = s.place(image(2), 4000, 0, |_| true).unwrap();
        assert_eq!((b.at, b.len), ((1 << 20) + 4096, 4000));
    }

    #[test]
    fn a_blob_still_being_read_is_never_overwritten() {
        let mut s = Staging::new(0, 16 << 10);
        for id in 0..4 {
            s.place(image(id), 4096, 0, |_| true).unwrap();
            s.used_by(image(id), 10 + id as u32);
        }
        // The arena is full: the next lap overwrites blob 0 only once its
        // entry (10) has been taken.
        assert_eq!(s.place(image(9), 4096, 0, |e| e != 10), None);
        let p = s.place(image(9), 4096, 0, |e| e == 10).unwrap();
        assert_eq!(p.at, 0);
        // Blob 0 is gone; blob 1 is still staged.
        assert!(s.place(image(0), 4096, 0, |_| false).is_none());
        assert!(!s.place(image(1), 4096, 0, |_| false).unwrap().fresh);
    }

    #[test]
    fn a_blob_larger_than_the_arena_is_not_staged() {
        let mut s = Staging::new(0, 8 << 10);
        assert_eq!(s.place(image(1), 8193, 0, |_| true), None);
        assert!(s.place(image(1), 8192, 0, |_| true).is_some());
    }

    #[test]
    fn a_blob_that_does_not_fit_before_the_end_wraps_to_the_start() {
        let mut s = Staging::new(0, 10 << 10);
        s.place(image(1), 4096, 0, |_| true).unwrap();
        s.place(image(2), 4096, 0, |_| true).unwrap();
        let p = s.place(image(3), 4096, 0, |_| true).unwrap();
        assert_eq!(p.at, 0);
        // Blob 1 made way, blob 2 did not.
        assert!(s.place(image(1), 16, 0, |_| false).is_none());
        assert!(!s.place(image(2), 4096, 0, |_| false).unwrap().fresh);
    }
}
