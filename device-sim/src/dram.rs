//! DRAM banks on the NOC. A bank's memory is allocated on first touch
//! (zeroed pages the OS commits lazily), so a chip with 8 x 1 GiB banks costs
//! only what is written.

/// Every DRAM bank of the chip.
pub struct Dram {
    bank_size: u64,
    banks: Vec<Option<Box<[u8]>>>,
}

impl Dram {
    pub fn new(banks: u32, bank_size: u64) -> Self {
        Dram { bank_size, banks: (0..banks).map(|_| None).collect() }
    }

    /// True if `[offset, offset + len)` is inside bank `bank`.
    pub fn contains(&self, bank: u32, offset: u64, len: u64) -> bool {
        (bank as usize) < self.banks.len() && offset.checked_add(len).is_some_and(|end| end <= self.bank_size)
    }

    fn bank_mut(&mut self, bank: u32) -> &mut [u8] {
        let size = self.bank_size as usize;
        self.banks[bank as usize].get_or_insert_with(|| vec![0u8; size].into_boxed_slice())
    }

    /// Reads; untouched memory reads as zero. Caller checks `contains`.
    pub fn read(&self, bank: u32, offset: u64, buf: &mut [u8]) {
        match &self.banks[bank as usize] {
            Some(b) => buf.copy_from_slice(&b[offset as usize..offset as usize + buf.len()]),
            None => buf.fill(0),
        }
    }

    /// Writes. Caller checks `contains`.
    pub fn write(&mut self, bank: u32, offset: u64, data: &[u8]) {
        let b = self.bank_mut(bank);
        b[offset as usize..offset as usize + data.len()].copy_from_slice(data);
    }

    /// Allocated banks and their contents, for digests.
    pub fn touched(&self) -> impl Iterator<Item = (u32, &[u8])> {
        self.banks.iter().enumerate().filter_map(|(i, b)| b.as_deref().map(|b| (i as u32, b)))
    }
}
