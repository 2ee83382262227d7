//! Host memory the device reaches over PCIe: huge pages when the system has
//! them (1 GiB, then 2 MiB, `MAP_HUGETLB`), else normal pages. Which one was
//! used is said once per process.

use memmap2::{MmapMut, MmapOptions};
use std::io::Write as _;
use std::sync::Once;

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
}

static SAID: Once = Once::new();

/// Anonymous, zeroed host memory of `size` bytes.
pub fn alloc(size: usize) -> std::io::Result<(MmapMut, PageKind)> {
    let tries = [(PageKind::Huge1G, 30u8), (PageKind::Huge2M, 21u8)];
    let (map, kind) = tries
        .iter()
        .filter(|(_, bits)| size % (1usize << bits) == 0)
        .find_map(|&(kind, bits)| MmapOptions::new().len(size).huge(Some(bits)).map_anon().ok().map(|m| (m, kind)))
        .map_or_else(|| MmapOptions::new().len(size).map_anon().map(|m| (m, PageKind::Normal)), Ok)?;
    // A note only: a closed stderr (`2>&1 | head -1`) must not end the run.
    SAID.call_once(|| {
        let _ = writeln!(std::io::stderr(), "cqlab: sysmem in {}", kind.describe());
    });
    Ok((map, kind))
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
    }
}
