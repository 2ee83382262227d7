//! Device buffers: page-interleaved DRAM or a range of one core's L1.

use crate::error::{DriverError, Result};
use crate::geometry::Topology;
use cqlab_abi::memory_map::{interleaved_page, USER};
use cqlab_abi::noc::{Coord, NocAddr};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Pages round-robin over the DRAM banks from `base` in each bank.
    Dram { base: u32, page_size: u32, banks: u32 },
    /// Contiguous bytes in one core's L1 (translated coordinates).
    L1 { core: Coord, addr: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub placement: Placement,
    pub size: u32,
}

impl Buffer {
    pub fn pages(&self) -> u32 {
        match self.placement {
            Placement::Dram { page_size, .. } => self.size.div_ceil(page_size),
            Placement::L1 { .. } => 1,
        }
    }

    /// Checks that `[offset, offset + len)` lies in the buffer.
    pub fn check_range(&self, offset: u32, len: usize) -> Result<()> {
        if len == 0 || offset as u64 + len as u64 > self.size as u64 {
            return Err(DriverError::OutOfRange {
                what: "buffer access",
                detail: format!("{len} bytes at offset {offset} of a {}-byte buffer", self.size),
            });
        }
        Ok(())
    }

    /// NOC0 address of DRAM page `page`'s first byte on `chip` (its
    /// bank's worker endpoint, the bank's offset in its channel added).
    pub fn dram_page(&self, chip: &Topology, page: u32) -> Option<NocAddr> {
        match self.placement {
            Placement::Dram { base, page_size, banks } => {
                let (bank, off) = interleaved_page(base, page, page_size, banks);
                Some(chip.dram_addr(bank, off))
            }
            Placement::L1 { .. } => None,
        }
    }
}

/// Bump allocators for DRAM (per-bank offsets) and each core's L1 `USER` region.
#[derive(Debug, Default)]
pub struct Allocator {
    dram_next: u32,
    l1_next: std::collections::HashMap<Coord, u32>,
}

/// DRAM page sizes must be multiples of the PCIe alignment (pages are relayed whole).
const DRAM_PAGE_ALIGN: u32 = cqlab_abi::PCIE_ALIGNMENT as u32;

impl Allocator {
    /// A buffer of `size` bytes in `page_size` pages over `banks` DRAM banks
    /// of `bank_bytes` each ([`Topology::dram_bank_bytes`]). Refused when
    /// its pages would run past a bank's end: they would land in the next
    /// bank of the channel (a Wormhole's second bank) or nowhere, and
    /// silently alias another buffer.
    pub fn dram(&mut self, size: u32, page_size: u32, banks: u32, bank_bytes: u64) -> Result<Buffer> {
        if size == 0 || page_size == 0 || page_size % DRAM_PAGE_ALIGN != 0 {
            return Err(DriverError::Invalid(format!(
                "DRAM buffer of {size} bytes with {page_size}-byte pages (pages must be nonzero multiples of {DRAM_PAGE_ALIGN})"
            )));
        }
        let per_bank = size.div_ceil(page_size).div_ceil(banks) as u64 * page_size as u64;
        let base = self.dram_next;
        let end = base as u64 + per_bank;
        // Offsets in a bank are `u32` (`Placement::Dram::base`): a bank
        // larger than that is used up to it.
        let room = bank_bytes.min(u32::MAX as u64);
        if end > room {
            return Err(DriverError::OutOfRange {
                what: "DRAM",
                detail: format!(
                    "a {size}-byte buffer of {page_size}-byte pages needs {per_bank} bytes in each of {banks} banks; \
                     {} of each bank's {bank_bytes} bytes are free ({base} allocated)",
                    room.saturating_sub(base as u64)
                ),
            });
        }
        self.dram_next = end as u32;
        Ok(Buffer { placement: Placement::Dram { base, page_size, banks }, size })
    }

    pub fn l1(&mut self, core: Coord, size: u32) -> Result<Buffer> {
        let next = self.l1_next.entry(core).or_insert(USER.base);
        let addr = *next;
        let end = addr as u64 + size.next_multiple_of(16) as u64;
        if size == 0 || end > USER.end() as u64 {
            return Err(DriverError::OutOfRange {
                what: "L1",
                detail: format!("{size} bytes on core {core}: {} of {} user bytes free", USER.end() - addr, USER.size),
            });
        }
        *next = end as u32;
        Ok(Buffer { placement: Placement::L1 { core, addr }, size })
    }

    /// Frees `buf`, which must be the latest buffer still allocated in its
    /// memory (a core's L1, or DRAM): allocations are a stack, so a
    /// long-lived device reused for many runs (a sweep's points) does not
    /// run out (helper-66: a sweep's L1 filled point by point).
    pub fn free(&mut self, buf: &Buffer, banks: u32) -> Result<()> {
        let (next, start, end) = match buf.placement {
            Placement::L1 { core, addr } => {
                let next = self.l1_next.get_mut(&core).ok_or_else(|| not_latest(buf))?;
                (next, addr, addr as u64 + buf.size.next_multiple_of(16) as u64)
            }
            Placement::Dram { base, page_size, .. } => {
                let per_bank = buf.size.div_ceil(page_size).div_ceil(banks) * page_size;
                (&mut self.dram_next, base, base as u64 + per_bank as u64)
            }
        };
        if end != *next as u64 {
            return Err(not_latest(buf));
        }
        *next = start;
        Ok(())
    }
}

fn not_latest(buf: &Buffer) -> DriverError {
    DriverError::Invalid(format!(
        "{:?} ({} bytes) is not the latest buffer of its memory: buffers are freed latest first",
        buf.placement, buf.size
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Topology;
    use cqlab_abi::soc::Board;

    /// A bank size for tests of other limits: a Wormhole's.
    const BANK: u64 = 1 << 30;

    /// helper-86's audit: only the `u32` offset was checked, so buffers past
    /// a bank's end (1 GiB on a Wormhole, where the channel's next bank
    /// starts) silently aliased the next. Each board's bank size, from the
    /// ABI's descriptors, is filled to its last page and no further.
    #[test]
    fn dram_buffers_end_at_the_end_of_a_bank() {
        for board in [Board::WormholeN150, Board::BlackholeP150a] {
            let chip = Topology::for_board(board, None, 1).unwrap();
            let (banks, bank) = (chip.dram_banks(), chip.dram_bank_bytes());
            assert!(bank >= 1 << 30, "{board:?}: a bank of {bank} bytes");
            let page = 1 << 20;
            let mut a = Allocator::default();
            // Whole pages per bank, in buffers below 4 GiB.
            let per_buffer = (1u64 << 31) / (banks as u64 * page) * page;
            let mut used = 0;
            while used + per_buffer <= bank {
                a.dram((per_buffer * banks as u64) as u32, page as u32, banks, bank).unwrap();
                used += per_buffer;
            }
            let left = bank - used;
            if left >= page {
                a.dram((left / page * page * banks as u64) as u32, page as u32, banks, bank).unwrap();
                used += left / page * page;
            }
            let err = a.dram(page as u32 * banks, page as u32, banks, bank).unwrap_err();
            let says = format!(
                "DRAM out of range: a {}-byte buffer of {page}-byte pages needs {page} bytes in each of {banks} \
                 banks; {} of each bank's {bank} bytes are free",
                page as u32 * banks,
                bank - used
            );
            assert!(err.to_string().starts_with(&says), "{board:?}: {err}\nexpected: {says}");
        }
    }

    #[test]
    fn dram_buffers_do_not_overlap_and_l1_is_bounded() {
        let mut a = Allocator::default();
        let b1 = a.dram(10_000, 1024, 8, BANK).unwrap();
        let b2 = a.dram(64, 64, 8, BANK).unwrap();
        let (Placement::Dram { base: x, .. }, Placement::Dram { base: y, .. }) = (b1.placement, b2.placement) else {
            panic!()
        };
        assert_eq!(y - x, 2 * 1024, "10 pages over 8 banks = 2 pages per bank");
        assert!(a.dram(100, 100, 8, BANK).is_err());
        let core = Coord::new(18, 18);
        assert!(a.l1(core, USER.size).is_ok());
        assert!(matches!(a.l1(core, 16), Err(DriverError::OutOfRange { .. })));
        assert!(b1.check_range(9_999, 1).is_ok());
        assert!(b1.check_range(9_999, 2).is_err());
    }

    #[test]
    fn buffers_are_freed_latest_first_and_their_room_reused() {
        let mut a = Allocator::default();
        let core = Coord::new(18, 18);
        let first = a.l1(core, 100).unwrap();
        let second = a.l1(core, 40).unwrap();
        assert!(a.free(&first, 8).is_err(), "not the latest");
        a.free(&second, 8).unwrap();
        assert!(a.free(&second, 8).is_err(), "freed twice");
        a.free(&first, 8).unwrap();
        // The whole region again, many times over.
        for _ in 0..3 {
            let all = a.l1(core, USER.size).unwrap();
            a.free(&all, 8).unwrap();
        }
        let d1 = a.dram(10_000, 1024, 8, BANK).unwrap();
        let d2 = a.dram(64, 64, 8, BANK).unwrap();
        assert!(a.free(&d1, 8).is_err(), "not the latest");
        a.free(&d2, 8).unwrap();
        a.free(&d1, 8).unwrap();
        assert_eq!(a.dram(10_000, 1024, 8, BANK).unwrap().placement, d1.placement);
    }
}
