//! Host memory the device reaches over PCIe: huge pages when the system has
//! them (1 GiB, then 2 MiB, `MAP_HUGETLB`), else normal pages.
//!
//! Which one was used is not printed here: on a simulator it changes
//! nothing a command reports but host time, so the commands that measure
//! host time say it ([`pages_used`]), and the tt-kmd path says it where a
//! card is to pin the memory. [`alloc_contiguous`] is the tt-kmd backend's:
//! one 1 GiB page whenever the size fits in one.

use memmap2::{MmapMut, MmapOptions};
use std::sync::atomic::{AtomicU8, Ordering};

/// Page size the allocation ended up with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    Huge1G,
    Huge2M,
    Normal,
}

impl PageKind {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Huge1G => "1 GiB huge pages",
            Self::Huge2M => "2 MiB huge pages",
            Self::Normal => "normal pages (no huge pages available)",
        }
    }

    /// The JSON spelling (`"sysmem_pages"` of the reports that carry it).
    pub fn name(self) -> &'static str {
        match self {
            Self::Huge1G => "huge-1g",
            Self::Huge2M => "huge-2m",
            Self::Normal => "normal",
        }
    }

    /// Larger is better for the host's TLB; [`USED`] keeps the least.
    const fn rank(self) -> u8 {
        match self {
            Self::Normal => 1,
            Self::Huge2M => 2,
            Self::Huge1G => 3,
        }
    }
}

/// The smallest pages any allocation of this process got (its
/// [`PageKind::rank`]), 0 before the first.
static USED: AtomicU8 = AtomicU8::new(0);

/// The smallest pages any sysmem this process allocated got; `None` if it
/// allocated none (its device's sysmem is another process's, a daemon's).
pub fn pages_used() -> Option<PageKind> {
    [PageKind::Normal, PageKind::Huge2M, PageKind::Huge1G]
        .into_iter()
        .find(|k| k.rank() == USED.load(Ordering::Relaxed))
}

/// Bytes of a 1 GiB huge page.
pub const GIB: usize = 1 << 30;

/// Records that an allocation got `kind` ([`pages_used`]).
fn record(kind: PageKind) {
    let _ = USED.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
        Some(if u == 0 { kind.rank() } else { u.min(kind.rank()) })
    });
}

/// Anonymous, zeroed host memory of `size` bytes.
pub fn alloc(size: usize) -> std::io::Result<(MmapMut, PageKind)> {
    let tries = [(PageKind::Huge1G, 30u8), (PageKind::Huge2M, 21u8)];
    let (map, kind) = tries
        .iter()
        .filter(|(_, bits)| size % (1usize << bits) == 0)
        .find_map(|&(kind, bits)| MmapOptions::new().len(size).huge(Some(bits)).map_anon().ok().map(|m| (m, kind)))
        .map_or_else(|| MmapOptions::new().len(size).map_anon().map(|m| (m, PageKind::Normal)), Ok)?;
    record(kind);
    Ok((map, kind))
}

/// Host memory of at least `size` bytes for tt-kmd to pin: one whole 1 GiB huge page when
/// `size` fits in one and the system has one free, since that is physically contiguous, and
/// without an IOMMU translating the card's DMA tt-kmd pins nothing else (`ioctl_pin_pages`,
/// `memory.c` at ttkmd-2.10.0: "pages discontiguous", EINVAL); else as [`alloc`]. The mapping
/// is then the whole page, longer than `size`: pin its first `size` bytes.
pub fn alloc_contiguous(size: usize) -> std::io::Result<(MmapMut, PageKind)> {
    if size <= GIB {
        if let Ok(map) = MmapOptions::new().len(GIB).huge(Some(30)).map_anon() {
            record(PageKind::Huge1G);
            return Ok((map, PageKind::Huge1G));
        }
    }
    alloc(size)
}

#[cfg(test)]
mod tests {
    #[test]
    fn allocation_falls_back_to_normal_pages_and_is_zeroed() {
        let (mut m, kind) = super::alloc(3 << 20).unwrap();
        assert_eq!(m.len(), 3 << 20);
        assert!(m.iter().all(|&b| b == 0));
        m[12345] = 7;
        // 3 MiB is not a multiple of 1 GiB; 2 MiB pages or normal pages it is.
        assert_ne!(kind, super::PageKind::Huge1G);
        // A 4 KiB one is in normal pages whatever the system has, and the
        // process's record keeps the smallest.
        let (_, small) = super::alloc(4 << 10).unwrap();
        assert_eq!(small, super::PageKind::Normal);
        assert_eq!(super::pages_used(), Some(super::PageKind::Normal));
    }

    /// A 4 MiB queue area for tt-kmd comes in one whole 1 GiB page where the system has one
    /// free (as `alloc` never gives it: 4 MiB is no multiple of 1 GiB), else as `alloc` does.
    #[test]
    fn memory_to_pin_is_one_gibibyte_page_when_there_is_one() {
        let free_1g = std::fs::read_to_string("/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let (m, kind) = super::alloc_contiguous(4 << 20).unwrap();
        if free_1g > 0 {
            assert_eq!((kind, m.len()), (super::PageKind::Huge1G, super::GIB));
        } else {
            assert_ne!(kind, super::PageKind::Huge1G);
            assert_eq!(m.len(), 4 << 20);
        }
        assert!(m[..4 << 20].iter().all(|&b| b == 0));
    }
}
