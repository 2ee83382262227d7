//! Zeroed buffers for the simulator's memories (a tile's L1, a window's
//! decode cache), each large one in its own anonymous mapping. The kernel hands out
//! zero pages on first touch, so a chip costs only the memory its cores
//! touch, and creating one zeroes nothing: from the heap, a buffer that
//! reuses memory a dropped chip freed is zeroed by `calloc` byte by byte,
//! which was a tenth of the host instructions of a one-seed `race --workload
//! programs` run (callgrind, two chips of 72 tiles). With the storage layer
//! (`crate::storage`), this is the simulator memory's `unsafe`.
#![allow(unsafe_code)] // simulator memory: docs/design.md, "Where `unsafe` lives"

use memmap2::MmapMut;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use zerocopy::FromZeros;

/// Buffers from this size up get their own mapping; smaller ones (a
/// core's local memory and its decode cache) come from the heap, so a
/// process holding many chips stays far below the kernel's limit on
/// mappings (`vm.max_map_count`, 65,530 by default): two a tile, not ten.
const MAP_MIN_BYTES: usize = 64 << 10;

/// `len` zeroed `T`s (all-zero bytes are a valid `T`: [`FromZeros`]).
pub struct ZeroedSlice<T> {
    ptr: NonNull<T>,
    len: usize,
    owner: Owner,
}

/// What holds a [`ZeroedSlice`]'s elements.
enum Owner {
    /// No bytes: `ptr` dangles.
    Nothing,
    /// A `Box<[T]>` of `len` elements, turned into `ptr` (freed on drop).
    Heap,
    /// The mapping `ptr` points into.
    Map { _map: MmapMut },
}

// SAFETY: the slice owns its box or mapping exclusively (as a `Box<[T]>` owns its
// allocation) and hands out references only through `&self` / `&mut self`.
unsafe impl<T: Send> Send for ZeroedSlice<T> {}
// SAFETY: as above; shared access gives `&[T]` only.
unsafe impl<T: Sync> Sync for ZeroedSlice<T> {}

impl<T: FromZeros> ZeroedSlice<T> {
    /// Panics if the mapping cannot be made (out of address space), as an
    /// allocation failure would.
    pub fn new(len: usize) -> Self {
        let bytes = len.checked_mul(size_of::<T>()).expect("a zeroed buffer's size overflows");
        if bytes == 0 {
            return ZeroedSlice { ptr: NonNull::dangling(), len, owner: Owner::Nothing };
        }
        if bytes < MAP_MIN_BYTES {
            let boxed: Box<[T]> = std::iter::repeat_with(T::new_zeroed).take(len).collect();
            let ptr = NonNull::new(Box::into_raw(boxed).cast::<T>()).expect("a box is never null");
            return ZeroedSlice { ptr, len, owner: Owner::Heap };
        }
        let mut map = MmapMut::map_anon(bytes).expect("mapping a zeroed buffer");
        let ptr = NonNull::new(map.as_mut_ptr().cast::<T>()).expect("a mapping is never null");
        // Page-aligned, so aligned for any `T` the simulator stores.
        assert!(ptr.as_ptr().is_aligned(), "a mapping aligned for its element");
        ZeroedSlice { ptr, len, owner: Owner::Map { _map: map } }
    }
}

impl<T> Drop for ZeroedSlice<T> {
    fn drop(&mut self) {
        if let Owner::Heap = self.owner {
            // SAFETY: `ptr` and `len` are those of the `Box<[T]>` that `new`
            // turned into a raw pointer, and this is the only place it is
            // taken back, once.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len)) });
        }
    }
}

impl<T> Deref for ZeroedSlice<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is aligned and valid for `len` elements (the box or
        // mapping `owner` stands for, alive as long as `self`, or dangling
        // for no bytes),
        // every element is initialized (zero bytes are a valid `T`, and
        // writes go through `&mut [T]`), and no `&mut` is live while `&self` is.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for ZeroedSlice<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_starts_zeroed_and_keeps_what_is_written() {
        // From the heap (below `MAP_MIN_BYTES`) and mapped.
        for len in [0, 1, 4095, 4096, MAP_MIN_BYTES / 4, 1 << 20] {
            let mut b = ZeroedSlice::<u32>::new(len);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&w| w == 0), "{len} words");
            if len > 1 {
                b[len - 1] = 7;
                assert_eq!((b[0], b[len - 1]), (0, 7), "{len} words");
            }
        }
    }
}
