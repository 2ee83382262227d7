//! A mapped MMIO window (a PCIe BAR resource or a TLB window) with bounds-checked, volatile,
//! 32-bit accesses. This is the only place that dereferences pointers into device memory.

use memmap2::MmapRaw;

use super::kernel::Kernel;

use super::error::{Result, TtKmdError};

/// Caching mode of a mapping, as tt-kmd offers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Caching {
    /// Uncached: register access, reads.
    Uc,
    /// Write-combining: bulk writes.
    Wc,
}

/// A device-memory mapping through the tt-kmd fd.
///
/// Accesses are 32-bit volatile loads and stores (device memory must not be touched with
/// `memcpy`, which may use unaligned or wider accesses, nor through Rust references).
#[derive(Debug)]
pub struct MmioWindow {
    map: MmapRaw,
    name: String,
}

impl MmioWindow {
    /// Maps `len` bytes at mmap offset `offset` through `kernel` (shared, read-write).
    pub(crate) fn map(kernel: &dyn Kernel, name: String, offset: u64, len: u64) -> Result<Self> {
        let map_err =
            |source| TtKmdError::Map { path: kernel.path().to_owned(), what: name.clone(), offset, len, source };
        let len_usize = usize::try_from(len).map_err(|_| {
            map_err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "length does not fit the address space"))
        })?;
        if len_usize == 0 {
            return Err(map_err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "zero-length mapping")));
        }
        let map = kernel.mmap(offset, len_usize).map_err(map_err)?;
        Ok(Self { map, name })
    }

    /// What this window maps, e.g. "BAR0 (WC)" or "TLB 3 (UC)".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the window is empty (never, for a mapped window).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// Checks that `[offset, offset + len)` lies inside the window and is 4-byte aligned.
    fn check(&self, offset: usize, len: usize) -> Result<()> {
        let size = self.map.len();
        if offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(TtKmdError::OutOfBounds { window: self.name.clone(), offset, len, size });
        }
        if offset % 4 != 0 || len % 4 != 0 {
            return Err(TtKmdError::Misaligned { window: self.name.clone(), offset, len });
        }
        Ok(())
    }

    /// Reads the 32-bit word at byte `offset`.
    pub fn read_u32(&self, offset: usize) -> Result<u32> {
        self.check(offset, 4)?;
        // SAFETY: `check` proved offset..offset+4 lies inside the live mapping and is 4-aligned
        // (the mapping itself is page aligned); the memory is device MMIO, read once, volatile.
        Ok(unsafe { self.map.as_ptr().add(offset).cast::<u32>().read_volatile() })
    }

    /// Writes the 32-bit word `value` at byte `offset`.
    pub fn write_u32(&self, offset: usize, value: u32) -> Result<()> {
        self.check(offset, 4)?;
        // SAFETY: as in `read_u32`: in bounds, aligned, shared writable mapping of device memory;
        // no Rust reference to this memory exists, so a volatile store cannot alias one.
        unsafe { self.map.as_mut_ptr().add(offset).cast::<u32>().write_volatile(value) };
        Ok(())
    }

    /// Writes `data` (length a multiple of 4) at byte `offset` as little-endian 32-bit words.
    pub fn write_block(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len())?;
        let base = self.map.as_mut_ptr();
        for (i, chunk) in data.chunks_exact(4).enumerate() {
            let word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            // SAFETY: `check` covered the whole range [offset, offset + data.len()), which
            // contains this aligned word; volatile store into the shared device mapping.
            unsafe { base.add(offset + 4 * i).cast::<u32>().write_volatile(word) };
        }
        Ok(())
    }

    /// Reads `out.len()` bytes (a multiple of 4) from byte `offset` as little-endian words.
    pub fn read_block(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len())?;
        let base = self.map.as_ptr();
        for (i, chunk) in out.chunks_exact_mut(4).enumerate() {
            // SAFETY: `check` covered the whole range; aligned volatile load from the mapping.
            let word = unsafe { base.add(offset + 4 * i).cast::<u32>().read_volatile() };
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    /// An ordinary file stands in for device memory: same code path, real mmap.
    fn window_over_temp_file(len: u64) -> (MmioWindow, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("cqlab-ttkmd-window-{}-{len}", std::process::id()));
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        file.set_len(len).unwrap();
        let map = memmap2::MmapOptions::new().len(len as usize).map_raw(&file).unwrap();
        let w = MmioWindow { map, name: "test window".into() };
        (w, path)
    }

    #[test]
    fn words_and_blocks_round_trip_with_bounds_and_alignment_checked() {
        let (w, path) = window_over_temp_file(4096);
        w.write_u32(8, 0xdead_beef).unwrap();
        assert_eq!(w.read_u32(8).unwrap(), 0xdead_beef);
        w.write_block(16, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let mut back = [0u8; 8];
        w.read_block(16, &mut back).unwrap();
        assert_eq!(back, [1, 2, 3, 4, 5, 6, 7, 8]);

        assert!(matches!(w.read_u32(4096), Err(TtKmdError::OutOfBounds { .. })));
        assert!(matches!(w.read_u32(usize::MAX - 1), Err(TtKmdError::OutOfBounds { .. })));
        assert!(matches!(w.write_u32(2, 0), Err(TtKmdError::Misaligned { .. })));
        assert!(matches!(w.write_block(0, &[1, 2, 3]), Err(TtKmdError::Misaligned { .. })));
        let msg = w.read_u32(4096).unwrap_err().to_string();
        assert!(msg.contains("test window") && msg.contains("0x1000"), "{msg}");
        drop(w);
        std::fs::remove_file(path).unwrap();
    }
}
