//! Dispatcher ring-buffer accounting shared by its writer (prefetcher) and
//! reader (dispatcher). Positions are absolute byte counts (u64, never wrap
//! in practice); the semaphores that carry them across cores are wrapping u32
//! counters: 16-byte units filled, pages freed.

use cqlab_abi::ring::PTR_UNIT;

/// Ring geometry: `pages` pages of `page_size` bytes at L1 `base`; both powers of two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingGeometry {
    pub base: u32,
    pub page_size: u32,
    pub pages: u32,
    /// log2(page_size): positions are u64 and RV32IM has no 64-bit divide,
    /// so every division and remainder below is a shift or a mask.
    page_shift: u32,
    /// `size() - 1`, kept so that a position's offset is one mask (no
    /// multiply on every command).
    mask: u32,
}

impl RingGeometry {
    /// `None` unless both counts are nonzero powers of two and a page holds at least one pointer unit ([`PTR_UNIT`]).
    pub fn new(base: u32, page_size: u32, pages: u32) -> Option<Self> {
        let ok = page_size.is_power_of_two() && pages.is_power_of_two() && page_size >= PTR_UNIT;
        let page_shift = page_size.checked_ilog2().unwrap_or(0);
        (ok && pages.checked_mul(page_size).is_some()).then(|| Self {
            base,
            page_size,
            pages,
            page_shift,
            mask: (page_size * pages).wrapping_sub(1),
        })
    }
    pub fn size(&self) -> u32 {
        self.mask + 1
    }
    /// Offset of absolute position `pos` in the ring (the size is a power
    /// of two dividing 2^32, so the low word of `pos` decides).
    pub fn offset(&self, pos: u64) -> u32 {
        pos as u32 & self.mask
    }
    /// Offset of `pos` within its page.
    pub fn in_page(&self, pos: u64) -> u32 {
        pos as u32 & (self.page_size - 1)
    }
    /// L1 address of absolute position `pos`.
    pub fn local(&self, pos: u64) -> u32 {
        self.base + self.offset(pos)
    }
    /// Bytes from `pos` to the ring's end, at most `n`.
    pub fn contiguous(&self, pos: u64, n: u32) -> u32 {
        n.min(self.size() - self.offset(pos))
    }
    /// Bytes the writer at `written` may still write, given `freed` pages
    /// released by the reader (wrapping counter).
    pub fn writable(&self, written: u64, freed: u32) -> u32 {
        let acquired = ((written + self.page_size as u64 - 1) >> self.page_shift) as u32;
        let in_use = acquired.wrapping_sub(freed);
        let tail = (self.page_size - self.in_page(written)) & (self.page_size - 1);
        self.pages.saturating_sub(in_use) * self.page_size + tail
    }
    /// Pages the reader at `read` has finished with but not released yet.
    pub fn releasable(&self, read: u64, released: u64) -> u32 {
        ((read >> self.page_shift) - released) as u32
    }
}

/// Bytes the reader at `read` may consume, given `filled_units` (wrapping
/// count of 16-byte units the writer has published).
pub fn readable(read: u64, filled_units: u32) -> u32 {
    filled_units.wrapping_sub((read / PTR_UNIT as u64) as u32).wrapping_mul(PTR_UNIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> RingGeometry {
        RingGeometry::new(0x1000, 256, 4).unwrap()
    }

    #[test]
    fn geometry_requires_powers_of_two() {
        assert!(RingGeometry::new(0, 256, 3).is_none());
        assert!(RingGeometry::new(0, 100, 4).is_none());
        assert!(RingGeometry::new(0, 8, 4).is_none());
    }

    #[test]
    fn positions_wrap_at_ring_end() {
        let r = ring();
        assert_eq!(r.local(0), 0x1000);
        assert_eq!(r.local(1024 + 48), 0x1000 + 48);
        assert_eq!(r.contiguous(1000, 100), 24);
        assert_eq!(r.contiguous(3 * 1024 + 16, 100), 100);
    }

    #[test]
    fn writer_is_limited_by_freed_pages() {
        let r = ring();
        assert_eq!(r.writable(0, 0), 1024);
        assert_eq!(r.writable(1024, 0), 0, "ring full");
        assert_eq!(r.writable(1024, 1), 256);
        // Mid-page: the rest of the current page plus free pages.
        assert_eq!(r.writable(100, 0), 3 * 256 + 156);
        assert_eq!(r.writable(1000, 0), 24);
    }

    #[test]
    fn counters_survive_u32_wrap() {
        let r = ring();
        let written = (1u64 << 32) * 256 + 512; // pages acquired wrap past u32
        let acquired = written.div_ceil(256) as u32;
        assert_eq!(r.writable(written, acquired.wrapping_sub(2)), 2 * 256);
        let read = (1u64 << 36) + 64;
        assert_eq!(readable(read, ((read / 16) as u32).wrapping_add(3)), 48);
    }

    #[test]
    fn reader_releases_whole_pages_only() {
        let r = ring();
        assert_eq!(r.releasable(255, 0), 0);
        assert_eq!(r.releasable(256, 0), 1);
        assert_eq!(r.releasable(1030, 2), 2);
    }
}

/// Splits `len` bytes at `offset` of a ring of `size` bytes into the part
/// before the end and the part that wraps to the start.
pub fn split_at_wrap(offset: u32, len: u32, size: u32) -> (u32, u32) {
    let first = len.min(size - offset);
    (first, len - first)
}

#[cfg(test)]
mod split_tests {
    #[test]
    fn split_at_wrap_cuts_at_the_end() {
        assert_eq!(super::split_at_wrap(0, 64, 256), (64, 0));
        assert_eq!(super::split_at_wrap(192, 128, 256), (64, 64));
        assert_eq!(super::split_at_wrap(192, 64, 256), (64, 0));
    }
}
