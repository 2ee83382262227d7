//! How firmware logic touches its core's L1. On the device this is volatile
//! access (`hal::L1`); host unit tests use a plain byte array.

pub trait Memory {
    fn read_u32(&self, addr: u32) -> u32;
    fn write_u32(&mut self, addr: u32, value: u32);
    /// One byte, its word's other bytes untouched (another core may own them).
    fn write_u8(&mut self, addr: u32, value: u8);

    /// Reads `out.len()` bytes (a multiple of 4) from 4-aligned `addr`.
    fn read_words(&self, addr: u32, out: &mut [u8]) {
        for (i, w) in out.chunks_exact_mut(4).enumerate() {
            w.copy_from_slice(&self.read_u32(addr + 4 * i as u32).to_le_bytes());
        }
    }

    /// Reads an ABI struct (a multiple of 4 bytes) at 4-aligned `addr`.
    fn read_struct<T: zerocopy::FromBytes + zerocopy::IntoBytes>(&self, addr: u32) -> T
    where
        Self: Sized,
    {
        let mut value = T::new_zeroed();
        self.read_words(addr, value.as_mut_bytes());
        value
    }

    /// Writes `bytes` (length a multiple of 4, `addr` 4-aligned) word by word.
    fn write_words(&mut self, addr: u32, bytes: &[u8]) {
        for (i, w) in bytes.chunks_exact(4).enumerate() {
            self.write_u32(addr + 4 * i as u32, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
    }
}

/// A byte-array L1 for host tests.
#[cfg(test)]
pub struct TestL1(pub std::vec::Vec<u8>);

#[cfg(test)]
impl Default for TestL1 {
    fn default() -> Self {
        Self(std::vec![0; crate::CHIP.l1_size as usize])
    }
}

#[cfg(test)]
impl TestL1 {
    pub fn bytes(&self, addr: u32, len: usize) -> &[u8] {
        &self.0[addr as usize..addr as usize + len]
    }
}

#[cfg(test)]
impl Memory for TestL1 {
    fn read_u32(&self, addr: u32) -> u32 {
        let a = addr as usize;
        u32::from_le_bytes(self.0[a..a + 4].try_into().unwrap())
    }
    fn write_u32(&mut self, addr: u32, value: u32) {
        let a = addr as usize;
        self.0[a..a + 4].copy_from_slice(&value.to_le_bytes());
    }
    fn write_u8(&mut self, addr: u32, value: u8) {
        self.0[addr as usize] = value;
    }
}
