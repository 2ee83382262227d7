//! DRAM banks on the NOC. A bank's memory is allocated on first touch
//! (zeroed pages the OS commits lazily), so a chip with 8 x 1 GiB banks costs
//! only what is written.

//! In the tt-kmd simulator mode every bank is a region of a shared file
//! ([`crate::shared`]) from the start.

use crate::storage::{Bytes, SharedRegion};

/// Every DRAM bank of the chip.
pub struct Dram {
    bank_size: u64,
    banks: Vec<Option<Bytes>>,
}

impl Dram {
    pub fn new(banks: u32, bank_size: u64) -> Self {
        Dram { bank_size, banks: (0..banks).map(|_| None).collect() }
    }

    /// Banks that are regions of a shared mapping, one per bank, each `bank_size` long.
    pub fn shared(bank_size: u64, regions: Vec<SharedRegion>) -> Self {
        assert!(regions.iter().all(|r| r.len() as u64 == bank_size), "DRAM regions must be whole banks");
        Dram { bank_size, banks: regions.into_iter().map(|r| Some(Bytes::Shared(r))).collect() }
    }

    /// True if `[offset, offset + len)` is inside bank `bank`.
    pub fn contains(&self, bank: u32, offset: u64, len: u64) -> bool {
        (bank as usize) < self.banks.len() && offset.checked_add(len).is_some_and(|end| end <= self.bank_size)
    }

    fn bank_mut(&mut self, bank: u32) -> &mut Bytes {
        let size = self.bank_size as usize;
        self.banks[bank as usize].get_or_insert_with(|| Bytes::zeroed(size))
    }

    /// Reads; untouched memory reads as zero. Caller checks `contains`.
    pub fn read(&self, bank: u32, offset: u64, buf: &mut [u8]) {
        match &self.banks[bank as usize] {
            Some(b) => b.read(offset as usize, buf),
            None => buf.fill(0),
        }
    }

    /// Writes. Caller checks `contains`.
    pub fn write(&mut self, bank: u32, offset: u64, data: &[u8]) {
        self.bank_mut(bank).write(offset as usize, data);
    }

    /// Allocated banks and their contents, for digests.
    pub fn touched(&self) -> impl Iterator<Item = (u32, std::borrow::Cow<'_, [u8]>)> {
        self.banks.iter().enumerate().filter_map(|(i, b)| b.as_ref().map(|b| (i as u32, b.snapshot())))
    }
}
