//! A mapped MMIO window (a PCIe BAR resource or a TLB window) with bounds-checked, volatile,
//! 32-bit accesses. This is the only place that dereferences pointers into device memory, and it
//! does so through the `volatile` crate's [`VolatilePtr`], whose type carries the access kind:
//! [`MmioWindow::word_ro`] can only be read, [`MmioWindow::word_wo`] (doorbells) only written.
#![allow(unsafe_code)] // BAR/mmap layer: docs/design.md, "Where `unsafe` lives"

use std::ptr::NonNull;

use memmap2::MmapRaw;
use volatile::access::{ReadOnly, ReadWrite, WriteOnly};
use volatile::VolatilePtr;

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

    /// The 32-bit word at byte `offset`, readable and writable.
    pub fn word(&self, offset: usize) -> Result<VolatilePtr<'_, u32, ReadWrite>> {
        self.check(offset, 4)?;
        // SAFETY: `check` proved offset..offset+4 lies inside the mapping, which lives as long
        // as `self` (the pointer's lifetime), and is 4-aligned (the mapping is page aligned).
        // No Rust reference to device memory exists, only volatile accesses through this type.
        Ok(unsafe { VolatilePtr::new(NonNull::new_unchecked(self.map.as_mut_ptr().add(offset).cast::<u32>())) })
    }

    /// The word at `offset`, for reading only (status, counters).
    pub fn word_ro(&self, offset: usize) -> Result<VolatilePtr<'_, u32, ReadOnly>> {
        Ok(self.word(offset)?.read_only())
    }

    /// The word at `offset`, for writing only (doorbells, reset lines).
    pub fn word_wo(&self, offset: usize) -> Result<VolatilePtr<'_, u32, WriteOnly>> {
        Ok(self.word(offset)?.write_only())
    }

    /// Reads the 32-bit word at byte `offset`.
    pub fn read_u32(&self, offset: usize) -> Result<u32> {
        Ok(self.word_ro(offset)?.read())
    }

    /// Writes the 32-bit word `value` at byte `offset`.
    pub fn write_u32(&self, offset: usize, value: u32) -> Result<()> {
        self.word_wo(offset)?.write(value);
        #[cfg(test)]
        super::io_barrier::order_log::record(super::io_barrier::order_log::Access::DeviceWord);
        Ok(())
    }

    /// Writes `data` (length a multiple of 4) at byte `offset` as little-endian 32-bit words.
    pub fn write_block(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len())?;
        for (i, chunk) in data.chunks_exact(4).enumerate() {
            let word = u32::from_le_bytes(chunk.try_into().expect("4 bytes"));
            self.word_wo(offset + 4 * i)?.write(word);
        }
        #[cfg(test)]
        super::io_barrier::order_log::record(super::io_barrier::order_log::Access::DeviceBlock(data.len()));
        Ok(())
    }

    /// Reads `out.len()` bytes (a multiple of 4) from byte `offset` as little-endian words.
    pub fn read_block(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len())?;
        for (i, chunk) in out.chunks_exact_mut(4).enumerate() {
            chunk.copy_from_slice(&self.word_ro(offset + 4 * i)?.read().to_le_bytes());
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
