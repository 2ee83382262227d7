//! An O(1) least-recently-used set of tiles with a byte capacity.
//!
//! Tiles are dense indices (see [`crate::TileGrid`]), so the recency list is an intrusive
//! doubly linked list stored in plain vectors indexed by tile: no hashing, no allocation
//! per access. Entries have individual byte sizes (edge tiles are smaller); the set holds
//! at most `capacity` bytes. Making room is the caller's job ([`Lru::pop_lru`] until
//! [`Lru::fits`]), because evicting a dirty tile has consequences the set does not know.

const NIL: u32 = u32::MAX;
const PRESENT: u8 = 1;
const DIRTY: u8 = 2;

/// A tile that left the set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    /// Dense tile index.
    pub id: u32,
    /// Its byte size.
    pub bytes: u64,
    /// Whether it held data newer than the level below.
    pub dirty: bool,
}

/// LRU set over tile indices `0..slots`.
#[derive(Clone, Debug)]
pub struct Lru {
    capacity: u64,
    used: u64,
    len: usize,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    prev: Vec<u32>,
    next: Vec<u32>,
    bytes: Vec<u64>,
    state: Vec<u8>,
}

impl Lru {
    /// An empty set for tile indices below `slots`, holding at most `capacity` bytes.
    pub fn new(slots: usize, capacity: u64) -> Self {
        Lru {
            capacity,
            used: 0,
            len: 0,
            head: NIL,
            tail: NIL,
            prev: vec![NIL; slots],
            next: vec![NIL; slots],
            bytes: vec![0; slots],
            state: vec![0; slots],
        }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes held.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Tiles held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `bytes` more would fit without evicting.
    #[inline]
    pub fn fits(&self, bytes: u64) -> bool {
        self.used + bytes <= self.capacity
    }

    /// Whether tile `id` is held.
    #[inline]
    pub fn contains(&self, id: u32) -> bool {
        self.state[id as usize] & PRESENT != 0
    }

    /// Whether tile `id` is held and dirty.
    #[inline]
    pub fn is_dirty(&self, id: u32) -> bool {
        self.state[id as usize] & DIRTY != 0
    }

    /// Byte size of tile `id` if it is held and dirty.
    #[inline]
    pub fn dirty_bytes(&self, id: u32) -> Option<u64> {
        self.is_dirty(id).then(|| self.bytes[id as usize])
    }

    /// Set or clear the dirty flag of a held tile (no effect if absent).
    #[inline]
    pub fn set_dirty(&mut self, id: u32, dirty: bool) {
        let s = &mut self.state[id as usize];
        if *s & PRESENT != 0 {
            *s = if dirty { PRESENT | DIRTY } else { PRESENT };
        }
    }

    /// Make a held tile the most recently used (no effect if absent).
    #[inline]
    pub fn touch(&mut self, id: u32) {
        if self.contains(id) && self.head != id {
            self.unlink(id);
            self.push_front(id);
        }
    }

    /// Insert an absent tile as most recently used. The caller has made room; inserting
    /// beyond capacity or inserting a held tile is a logic error (checked in debug builds).
    pub fn insert(&mut self, id: u32, bytes: u64, dirty: bool) {
        debug_assert!(!self.contains(id), "tile {id} inserted twice");
        debug_assert!(self.fits(bytes), "tile {id} of {bytes} bytes inserted without room");
        self.bytes[id as usize] = bytes;
        self.state[id as usize] = if dirty { PRESENT | DIRTY } else { PRESENT };
        self.used += bytes;
        self.len += 1;
        self.push_front(id);
    }

    /// Remove and return the least recently used tile.
    pub fn pop_lru(&mut self) -> Option<Evicted> {
        let id = self.tail;
        if id == NIL {
            return None;
        }
        self.remove(id)
    }

    /// Remove tile `id` if held.
    pub fn remove(&mut self, id: u32) -> Option<Evicted> {
        if !self.contains(id) {
            return None;
        }
        self.unlink(id);
        let dirty = self.is_dirty(id);
        let bytes = self.bytes[id as usize];
        self.state[id as usize] = 0;
        self.used -= bytes;
        self.len -= 1;
        Some(Evicted { id, bytes, dirty })
    }

    /// Held tiles from least to most recently used.
    pub fn iter_lru(&self) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.tail;
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let id = cur;
            cur = self.prev[id as usize];
            Some(id)
        })
    }

    #[inline]
    fn unlink(&mut self, id: u32) {
        let (p, n) = (self.prev[id as usize], self.next[id as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[id as usize] = NIL;
        self.next[id as usize] = NIL;
    }

    #[inline]
    fn push_front(&mut self, id: u32) {
        self.prev[id as usize] = NIL;
        self.next[id as usize] = self.head;
        if self.head == NIL {
            self.tail = id;
        } else {
            self.prev[self.head as usize] = id;
        }
        self.head = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(l: &Lru) -> Vec<u32> {
        l.iter_lru().collect()
    }

    #[test]
    fn evicts_least_recently_used_first() {
        let mut l = Lru::new(8, 300);
        for id in [3, 1, 4] {
            l.insert(id, 100, false);
        }
        assert_eq!(order(&l), [3, 1, 4]);
        assert!(!l.fits(1));
        l.touch(3);
        assert_eq!(order(&l), [1, 4, 3]);
        assert_eq!(l.pop_lru(), Some(Evicted { id: 1, bytes: 100, dirty: false }));
        assert!(!l.contains(1));
        assert_eq!((l.len(), l.used()), (2, 200));
    }

    #[test]
    fn byte_capacity_with_mixed_sizes() {
        let mut l = Lru::new(4, 100);
        l.insert(0, 60, false);
        l.insert(1, 30, true);
        assert!(l.fits(10));
        assert!(!l.fits(11));
        // Making room for 50 bytes takes out tile 0 only.
        let ev = l.pop_lru().unwrap();
        assert_eq!(ev.id, 0);
        assert!(l.fits(50));
        l.insert(2, 50, false);
        assert_eq!(order(&l), [1, 2]);
        assert_eq!(l.pop_lru(), Some(Evicted { id: 1, bytes: 30, dirty: true }));
        assert_eq!(l.pop_lru().map(|e| e.id), Some(2));
        assert_eq!(l.pop_lru(), None);
        assert!(l.is_empty());
        assert_eq!(l.used(), 0);
    }

    #[test]
    fn dirty_flags_and_removal_in_the_middle() {
        let mut l = Lru::new(5, 1000);
        for id in 0..5 {
            l.insert(id, 10, false);
        }
        l.set_dirty(2, true);
        assert!(l.is_dirty(2));
        assert_eq!(l.remove(2), Some(Evicted { id: 2, bytes: 10, dirty: true }));
        assert_eq!(l.remove(2), None);
        assert_eq!(order(&l), [0, 1, 3, 4]);
        l.touch(0);
        l.touch(4);
        assert_eq!(order(&l), [1, 3, 0, 4]);
        // Absent tiles are not resurrected by touch or set_dirty.
        l.touch(2);
        l.set_dirty(2, true);
        assert!(!l.contains(2));
        l.set_dirty(3, true);
        l.set_dirty(3, false);
        assert!(!l.is_dirty(3));
    }
}
