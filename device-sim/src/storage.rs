//! Simulator memory that other processes read and write while the simulator runs: a window of
//! a shared file mapping (see [`crate::shared`]). The host's stores land here straight from its
//! own mapping, as on hardware, so nothing about this memory is exclusive to the simulator.
//!
//! Memory model. The other party is another process, outside the Rust abstract machine; a
//! reference (`&[u8]`, `&mut [u8]`) to this memory would promise the compiler that nobody else
//! changes it, which is false. So this layer never hands out references: every access is a
//! volatile load or store through a raw pointer, which the compiler may neither elide, merge,
//! duplicate nor move across other volatile accesses. Aligned accesses of up to 4 bytes are
//! single instructions on the hosts we build for (x86-64, AArch64), so a 32-bit word is never
//! torn; wider copies are word by word and may interleave with the host's stores, exactly like
//! a device reading memory the host is writing. Ordering against the host is the protocol's job
//! (the host fences write-combined data before its doorbell; the firmware polls).
//!
//! Accesses go through the `volatile` crate's [`VolatilePtr`] (read-only for loads, write-only
//! for stores). This is the only `unsafe` of the simulator's memory layer.

use std::ptr::NonNull;
use std::sync::Arc;

use memmap2::MmapRaw;
use volatile::access::{ReadOnly, WriteOnly};
use volatile::VolatilePtr;

/// `len` bytes at `offset` of a shared mapping, kept alive as long as any region uses it.
pub struct SharedRegion {
    ptr: NonNull<u8>,
    len: usize,
    _map: Arc<MmapRaw>,
}

// SAFETY: the region is plain memory reached only through volatile accesses of `&self` /
// `&mut self` methods; the mapping it points into lives as long as `_map`. Moving the handle to
// another thread changes nothing about that (the simulator uses it from one thread at a time).
unsafe impl Send for SharedRegion {}

impl SharedRegion {
    /// The window `[offset, offset + len)` of `map`. Panics if it does not fit (a layout bug).
    pub fn new(map: &Arc<MmapRaw>, offset: usize, len: usize) -> Self {
        assert!(offset.checked_add(len).is_some_and(|end| end <= map.len()), "region outside its mapping");
        // SAFETY: in bounds of the live mapping (checked above); a mapping is never null.
        let ptr = unsafe { NonNull::new_unchecked(map.as_mut_ptr().add(offset)) };
        SharedRegion { ptr, len, _map: map.clone() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn in_bounds(&self, off: usize, n: usize) -> bool {
        off.checked_add(n).is_some_and(|end| end <= self.len)
    }

    /// A read-only volatile pointer to the `T` at `off`; the caller checked bounds.
    #[inline(always)]
    fn ro<T>(&self, off: usize) -> VolatilePtr<'_, T, ReadOnly> {
        debug_assert!(self.in_bounds(off, size_of::<T>()));
        // SAFETY: the caller checked `off + size_of::<T>() <= len`, so the pointer lies inside
        // the live mapping (kept by `_map` for as long as `self` lends it); `T` is only ever
        // `u8` or `[u8; N]`, alignment 1; volatile because another process stores here at any
        // time (module docs).
        unsafe { VolatilePtr::new_read_only(NonNull::new_unchecked(self.ptr.as_ptr().add(off).cast::<T>())) }
    }

    /// A write-only volatile pointer to the `T` at `off`; the caller checked bounds.
    #[inline(always)]
    fn wo<T>(&mut self, off: usize) -> VolatilePtr<'_, T, WriteOnly> {
        debug_assert!(self.in_bounds(off, size_of::<T>()));
        // SAFETY: as in `ro`; the mapping is writable (MAP_SHARED, read-write).
        unsafe {
            VolatilePtr::new_restricted(WriteOnly, NonNull::new_unchecked(self.ptr.as_ptr().add(off).cast::<T>()))
        }
    }

    /// `N` bytes at `off`, or `None` out of bounds.
    #[inline(always)]
    pub fn load<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        if !self.in_bounds(off, N) {
            return None;
        }
        Some(self.ro::<[u8; N]>(off).read())
    }

    /// Stores `N` bytes at `off`; `false` out of bounds.
    #[inline(always)]
    pub fn store<const N: usize>(&mut self, off: usize, v: [u8; N]) -> bool {
        if !self.in_bounds(off, N) {
            return false;
        }
        self.wo::<[u8; N]>(off).write(v);
        true
    }

    /// Copies out `buf.len()` bytes at `off`; `false` out of bounds.
    pub fn read(&self, off: usize, buf: &mut [u8]) -> bool {
        if !self.in_bounds(off, buf.len()) {
            return false;
        }
        for (i, b) in buf.iter_mut().enumerate() {
            *b = self.ro::<u8>(off + i).read();
        }
        true
    }

    /// Copies `data` in at `off`; `false` out of bounds.
    pub fn write(&mut self, off: usize, data: &[u8]) -> bool {
        if !self.in_bounds(off, data.len()) {
            return false;
        }
        for (i, &b) in data.iter().enumerate() {
            self.wo::<u8>(off + i).write(b);
        }
        true
    }

    /// Zeroes `[off, off + len)`; `false` out of bounds.
    pub fn fill_zero(&mut self, off: usize, len: usize) -> bool {
        if !self.in_bounds(off, len) {
            return false;
        }
        for i in 0..len {
            self.wo::<u8>(off + i).write(0);
        }
        true
    }

    /// A copy of the whole region (digests, snapshots).
    pub fn snapshot(&self) -> Vec<u8> {
        let mut v = vec![0; self.len];
        self.read(0, &mut v);
        v
    }

    /// Zeroes the region, writing only 4 KiB pages that are not zero already (a sparse file
    /// stays sparse).
    pub fn zero_sparse(&mut self) {
        let mut page = [0u8; 4096];
        let mut off = 0;
        while off < self.len {
            let n = (self.len - off).min(4096);
            self.read(off, &mut page[..n]);
            if page[..n].iter().any(|&b| b != 0) {
                self.fill_zero(off, n);
            }
            off += n;
        }
    }
}

/// Bytes the simulator computes on: its own, or a [`SharedRegion`].
pub enum Bytes {
    Owned(Box<[u8]>),
    Shared(SharedRegion),
}

impl Bytes {
    pub fn zeroed(len: usize) -> Self {
        Bytes::Owned(vec![0; len].into_boxed_slice())
    }

    pub fn len(&self) -> usize {
        match self {
            Bytes::Owned(b) => b.len(),
            Bytes::Shared(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    pub fn load<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        match self {
            Bytes::Owned(b) => b.get(off..off.checked_add(N)?).and_then(|s| s.try_into().ok()),
            Bytes::Shared(s) => s.load(off),
        }
    }

    #[inline(always)]
    pub fn store<const N: usize>(&mut self, off: usize, v: [u8; N]) -> bool {
        match self {
            Bytes::Owned(b) => match off.checked_add(N).and_then(|end| b.get_mut(off..end)) {
                Some(s) => {
                    s.copy_from_slice(&v);
                    true
                }
                None => false,
            },
            Bytes::Shared(s) => s.store(off, v),
        }
    }

    /// Callers check bounds first; out of bounds panics (a simulator bug).
    pub fn read(&self, off: usize, buf: &mut [u8]) {
        match self {
            Bytes::Owned(b) => buf.copy_from_slice(&b[off..off + buf.len()]),
            Bytes::Shared(s) => assert!(s.read(off, buf), "shared read out of bounds"),
        }
    }

    /// Callers check bounds first; out of bounds panics (a simulator bug).
    pub fn write(&mut self, off: usize, data: &[u8]) {
        match self {
            Bytes::Owned(b) => b[off..off + data.len()].copy_from_slice(data),
            Bytes::Shared(s) => assert!(s.write(off, data), "shared write out of bounds"),
        }
    }

    pub fn fill_zero(&mut self, off: usize, len: usize) {
        match self {
            Bytes::Owned(b) => b[off..off + len].fill(0),
            Bytes::Shared(s) => assert!(s.fill_zero(off, len), "shared fill out of bounds"),
        }
    }

    /// The bytes: borrowed when owned, a volatile copy when shared.
    pub fn snapshot(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Bytes::Owned(b) => std::borrow::Cow::Borrowed(b),
            Bytes::Shared(s) => std::borrow::Cow::Owned(s.snapshot()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_regions_see_each_others_stores_and_check_bounds() {
        let map = Arc::new(MmapRaw::from(memmap2::MmapMut::map_anon(8192).unwrap()));
        let mut a = SharedRegion::new(&map, 4096, 4096);
        let b = SharedRegion::new(&map, 0, 8192);
        assert!(a.store::<4>(8, 0xdead_beef_u32.to_le_bytes()));
        assert_eq!(b.load::<4>(4096 + 8), Some(0xdead_beef_u32.to_le_bytes()));
        assert!(a.load::<4>(4094).is_none() && !a.store::<2>(4095, [0; 2]));
        assert!(a.write(100, &[1, 2, 3]));
        let mut back = [0; 3];
        assert!(b.read(4196, &mut back));
        assert_eq!(back, [1, 2, 3]);
        a.zero_sparse();
        assert!(b.snapshot()[4096..].iter().all(|&x| x == 0));
        let mut owned = Bytes::zeroed(16);
        assert!(owned.store::<4>(12, [1, 2, 3, 4]) && !owned.store::<4>(13, [0; 4]));
        assert_eq!(owned.load::<2>(14), Some([3, 4]));
        assert_eq!(owned.snapshot().len(), 16);
    }
}
