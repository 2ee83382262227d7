//! Simulator memory that other processes read and write while the simulator runs: a window of
//! a shared file mapping (see [`crate::shared`]). The host's stores land here straight from its
//! own mapping, as on hardware, so nothing about this memory is exclusive to the simulator.
//!
//! Memory model. The other party is another process, outside the Rust abstract machine; a
//! reference (`&[u8]`, `&mut [u8]`) to this memory would promise the compiler that nobody else
//! changes it, which is false. So this layer never hands out references: every access is a
//! volatile load or store through a raw pointer, which the compiler may neither elide, merge,
//! duplicate nor move across other volatile accesses. Every 4-aligned 32-bit word is read and
//! written with one 32-bit access (a single instruction on the hosts we build for, x86-64 and
//! AArch64), so a word is never torn, as on hardware, where an aligned 32-bit PCIe or NOC write
//! lands whole. That is what the queue pointers rely on: the host reads the completion write
//! pointer the dispatcher writes here, the firmware reads the fetch-queue slots and read
//! pointers the host writes. (A volatile `[u8; 4]` is *not* one access: it compiles to four
//! byte loads, and a pointer seen half old, half new sent the host reading records not yet
//! written.) Unaligned bytes are copied one by one; wider copies are word by word and may
//! interleave with the other side's stores, exactly like a device reading memory the host is
//! writing. Ordering against the host is the protocol's job (the host fences write-combined
//! data before its doorbell; the firmware polls), but the protocol assumes what PCIe and the
//! NOC give: writes land in the order they were made. A weakly ordered host CPU (AArch64)
//! would let the other process see this process's stores out of order (a completion pointer
//! before the record it covers), so every store into the region is preceded by a release
//! fence and every load followed by an acquire fence: stores become visible in program order,
//! and nothing read after a load is older than it. On x86-64 both are compiler barriers only.
//!
//! Accesses go through the `volatile` crate's [`VolatilePtr`] (read-only for loads, write-only
//! for stores). With [`crate::zeroed`] (the simulator's own memories), this is the only
//! `unsafe` of the simulator's memory layer.
#![allow(unsafe_code)] // simulator memory: docs/design.md, "Where `unsafe` lives"

use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use memmap2::MmapRaw;
use volatile::access::{ReadOnly, WriteOnly};
use volatile::VolatilePtr;

use crate::zeroed::ZeroedSlice;

/// `len` bytes at `offset` of a shared mapping, kept alive as long as any region uses it.
pub struct SharedRegion {
    ptr: NonNull<u8>,
    len: usize,
    /// Zero and seen by nobody else yet ([`SharedRegion::fresh`]), until the
    /// first [`SharedRegion::zero_sparse`].
    fresh: bool,
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
        SharedRegion { ptr, len, fresh: false, _map: map.clone() }
    }

    /// [`SharedRegion::new`] over a file this process has just created (truncated and sized,
    /// so all zero, and mapped by no other process yet): its first [`Self::zero_sparse`] has
    /// nothing to do. Reading every page of a large sparse file to find it zero took minutes
    /// (a Blackhole's 64 GiB host range) and filled the page cache with zero pages.
    pub fn fresh(map: &Arc<MmapRaw>, offset: usize, len: usize) -> Self {
        SharedRegion { fresh: true, ..Self::new(map, offset, len) }
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

    /// Whether the byte at `off` starts a 4-aligned word in memory.
    #[inline(always)]
    fn word_aligned(&self, off: usize) -> bool {
        (self.ptr.as_ptr() as usize + off) % size_of::<u32>() == 0
    }

    /// A read-only volatile pointer to the `T` at `off`; the caller checked bounds, and
    /// alignment when `T` is `u32`.
    #[inline(always)]
    fn ro<T>(&self, off: usize) -> VolatilePtr<'_, T, ReadOnly> {
        debug_assert!(self.in_bounds(off, size_of::<T>()));
        debug_assert!((self.ptr.as_ptr() as usize + off) % align_of::<T>() == 0);
        // SAFETY: the caller checked `off + size_of::<T>() <= len`, so the pointer lies inside
        // the live mapping (kept by `_map` for as long as `self` lends it); `T` is `u8`, or
        // `u32` at an address the caller checked is 4-aligned; volatile because another process
        // stores here at any time (module docs).
        unsafe { VolatilePtr::new_read_only(NonNull::new_unchecked(self.ptr.as_ptr().add(off).cast::<T>())) }
    }

    /// A write-only volatile pointer to the `T` at `off`; the caller checked bounds, and
    /// alignment when `T` is `u32`.
    #[inline(always)]
    fn wo<T>(&mut self, off: usize) -> VolatilePtr<'_, T, WriteOnly> {
        debug_assert!(self.in_bounds(off, size_of::<T>()));
        debug_assert!((self.ptr.as_ptr() as usize + off) % align_of::<T>() == 0);
        // SAFETY: as in `ro`; the mapping is writable (MAP_SHARED, read-write).
        unsafe {
            VolatilePtr::new_restricted(WriteOnly, NonNull::new_unchecked(self.ptr.as_ptr().add(off).cast::<T>()))
        }
    }

    /// `N` bytes at `off`, or `None` out of bounds. An aligned word is one 32-bit load.
    #[inline(always)]
    pub fn load<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        if !self.in_bounds(off, N) {
            return None;
        }
        let mut v = [0; N];
        self.read_in_bounds(off, &mut v);
        Some(v)
    }

    /// Stores `N` bytes at `off`; `false` out of bounds. An aligned word is one 32-bit store.
    #[inline(always)]
    pub fn store<const N: usize>(&mut self, off: usize, v: [u8; N]) -> bool {
        if !self.in_bounds(off, N) {
            return false;
        }
        self.write_in_bounds(off, &v);
        true
    }

    /// Copies out `buf.len()` bytes at `off`; `false` out of bounds.
    pub fn read(&self, off: usize, buf: &mut [u8]) -> bool {
        if !self.in_bounds(off, buf.len()) {
            return false;
        }
        self.read_in_bounds(off, buf);
        true
    }

    /// Copies `data` in at `off`; `false` out of bounds.
    pub fn write(&mut self, off: usize, data: &[u8]) -> bool {
        if !self.in_bounds(off, data.len()) {
            return false;
        }
        self.write_in_bounds(off, data);
        true
    }

    /// In ascending address order: each 4-aligned word whole with one 32-bit load, the bytes
    /// before the first and after the last one by one.
    #[inline(always)]
    fn read_in_bounds(&self, off: usize, buf: &mut [u8]) {
        let mut i = 0;
        while i < buf.len() {
            if buf.len() - i >= 4 && self.word_aligned(off + i) {
                buf[i..i + 4].copy_from_slice(&self.ro::<u32>(off + i).read().to_ne_bytes());
                i += 4;
            } else {
                buf[i] = self.ro::<u8>(off + i).read();
                i += 1;
            }
        }
        // Later accesses see nothing older than these bytes.
        fence(Ordering::Acquire);
    }

    /// The store side of [`Self::read_in_bounds`]: aligned words whole, in ascending order.
    #[inline(always)]
    fn write_in_bounds(&mut self, off: usize, data: &[u8]) {
        // Earlier stores (the record a pointer covers) become visible first.
        fence(Ordering::Release);
        let mut i = 0;
        while i < data.len() {
            if data.len() - i >= 4 && self.word_aligned(off + i) {
                let word = u32::from_ne_bytes(data[i..i + 4].try_into().expect("4 bytes"));
                self.wo::<u32>(off + i).write(word);
                i += 4;
            } else {
                self.wo::<u8>(off + i).write(data[i]);
                i += 1;
            }
        }
    }

    /// Zeroes `[off, off + len)`; `false` out of bounds.
    pub fn fill_zero(&mut self, off: usize, len: usize) -> bool {
        if !self.in_bounds(off, len) {
            return false;
        }
        fence(Ordering::Release);
        let mut i = 0;
        while i < len {
            if len - i >= 4 && self.word_aligned(off + i) {
                self.wo::<u32>(off + i).write(0);
                i += 4;
            } else {
                self.wo::<u8>(off + i).write(0);
                i += 1;
            }
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
        if std::mem::take(&mut self.fresh) {
            return;
        }
        let mut page = [0u8; 4096];
        let mut off = 0;
        while off < self.len {
            let n = (self.len - off).min(4096);
            self.read(off, &mut page[..n]);
            if !all_zero(&page[..n]) {
                self.fill_zero(off, n);
            }
            off += n;
        }
    }
}

/// True if every byte of `bytes` is zero. Bytes are OR-ed 64 at a time,
/// with no early exit within a block, which the compiler vectorizes: a
/// byte-wise `any` is not, and scanning a chip's 64 MiB of sysmem that way
/// at every chip built over an existing mapping was a sixth of `bench
/// dispatch`'s host instructions (callgrind).
pub(crate) fn all_zero(bytes: &[u8]) -> bool {
    let blocks = bytes.chunks_exact(64);
    let tail = blocks.remainder();
    blocks.into_iter().all(|b| b.iter().fold(0, |acc, &x| acc | x) == 0) && tail.iter().all(|&x| x == 0)
}

/// Bytes the simulator computes on: its own, or a [`SharedRegion`].
pub enum Bytes {
    Owned(ZeroedSlice<u8>),
    Shared(SharedRegion),
}

impl Bytes {
    pub fn zeroed(len: usize) -> Self {
        Bytes::Owned(ZeroedSlice::new(len))
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
            Bytes::Owned(b) => std::borrow::Cow::Borrowed(&b[..]),
            Bytes::Shared(s) => std::borrow::Cow::Owned(s.snapshot()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_zero_sees_a_set_byte_anywhere() {
        let mut bytes = vec![0u8; 200];
        assert!(all_zero(&bytes) && all_zero(&[]));
        for at in [0, 63, 64, 127, 128, 191, 199] {
            bytes[at] = 0x80;
            assert!(!all_zero(&bytes), "byte {at}");
            bytes[at] = 0;
        }
    }

    #[test]
    fn a_fresh_region_skips_only_its_first_zeroing() {
        let map = Arc::new(MmapRaw::from(memmap2::MmapMut::map_anon(8192).unwrap()));
        let mut fresh = SharedRegion::fresh(&map, 0, 8192);
        // Stores after creation (a host's, through its own mapping) are zeroed by every later
        // power-on reset; the first zeroing, at creation, is the one skipped.
        fresh.zero_sparse();
        assert!(fresh.write(4100, &[7]));
        fresh.zero_sparse();
        assert!(fresh.snapshot().iter().all(|&x| x == 0));
        let mut skipped = SharedRegion::fresh(&map, 0, 8192);
        assert!(skipped.write(4100, &[7]));
        skipped.zero_sparse();
        assert_eq!(skipped.snapshot()[4100], 7, "the region was zeroed: `fresh` has no effect");
    }

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

    /// A NOC write of an aligned word lands whole, and a hart's aligned load reads one value:
    /// the other side of the mapping never sees half of each. (A completion write pointer
    /// landing byte by byte once read as one ring ahead, 1 run in ~150 of the ttkmd-sim demo.)
    /// A stress test: another thread flips the word as fast as it can for a bounded time.
    #[test]
    fn aligned_words_are_never_seen_half_written() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::{Duration, Instant};
        let map = Arc::new(MmapRaw::from(memmap2::MmapMut::map_anon(4096).unwrap()));
        // The wrap of a completion write pointer: offset 196800 (toggle clear) to 256 (set).
        let (a, b) = (0x0000_300c_u32.to_le_bytes(), 0x8000_0010_u32.to_le_bytes());
        let mut device = SharedRegion::new(&map, 0, 4096);
        let host = SharedRegion::new(&map, 0, 4096);
        assert!(device.write(0x80, &a));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let writer = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                // Bulk copies (a record and its pointer in one packet) and single stores.
                device.write(0x7c, &[a, b].concat());
                device.write(0x80, &a);
                device.store::<4>(0x80, b);
            }
        });
        let start = Instant::now();
        let (mut changes, mut last, mut torn) = (0u32, a, None);
        while changes < 100_000 && start.elapsed() < Duration::from_millis(500) && torn.is_none() {
            let mut bulk = [0; 6];
            host.read(0x7e, &mut bulk);
            for v in [host.load::<4>(0x80).unwrap(), bulk[2..].try_into().unwrap()] {
                if v != a && v != b {
                    torn = Some(v);
                }
                changes += u32::from(v != last);
                last = v;
            }
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(torn, None, "read {torn:x?}, a mix of {a:x?} and {b:x?} ({changes} changes seen)");
    }
}
