//! Ring pointers shared between host and device, and wrap-aware counters.

/// Bit 31 of a ring pointer: flips each time the writer wraps, so equal
/// offsets can be told apart as "empty" (same toggle) or "full" (different).
pub const WRAP_TOGGLE: u32 = 1 << 31;
/// Ring offsets are counted in these units.
pub const PTR_UNIT: u32 = 16;

/// A ring position: offset in 16-byte units plus the wrap toggle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingPtr(pub u32);

impl RingPtr {
    pub const fn new(offset_bytes: u32, toggle: bool) -> Self {
        Self((offset_bytes / PTR_UNIT) | if toggle { WRAP_TOGGLE } else { 0 })
    }
    pub const fn offset_bytes(self) -> u32 {
        (self.0 & !WRAP_TOGGLE) * PTR_UNIT
    }
    pub const fn toggle(self) -> bool {
        self.0 & WRAP_TOGGLE != 0
    }
    /// Advance by `bytes` in a ring of `size` bytes, wrapping (and flipping the
    /// toggle) at the end. `bytes` must not exceed `size`.
    pub const fn advance(self, bytes: u32, size: u32) -> Self {
        let next = self.offset_bytes() + bytes;
        if next >= size {
            Self::new(next - size, !self.toggle())
        } else {
            Self::new(next, self.toggle())
        }
    }
    /// Bytes written by `writer` not yet consumed by `reader` in a ring of
    /// `size`. Inconsistent pointers (a reader ahead of the writer) count as
    /// a full ring: the writer then waits instead of overwriting unread data.
    pub const fn used(writer: Self, reader: Self, size: u32) -> u32 {
        let (w, r) = (writer.offset_bytes() as u64, reader.offset_bytes() as u64);
        let ahead = if writer.toggle() == reader.toggle() { w } else { w + size as u64 };
        if ahead >= r && ahead - r <= size as u64 {
            (ahead - r) as u32
        } else {
            size
        }
    }
}

/// The one form tools print a ring pointer in: its byte offset from the
/// ring's start (what `decode` and a `dd` of the ring count in), then the
/// toggle when set, `0x840` or `0x840 (toggle 1)`. The raw word would read
/// as sixteen times too small and, on odd laps, as 0x800000xx.
impl core::fmt::Display for RingPtr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:#x}", self.offset_bytes())?;
        if self.toggle() {
            write!(f, " (toggle 1)")?;
        }
        Ok(())
    }
}

/// `a >= b` for free-running u32 counters that may wrap: true when `a` is at
/// most 2^31 - 1 steps ahead of `b`.
pub const fn wrap_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_wraps_and_flips_toggle() {
        let p = RingPtr::new(0, false).advance(48, 64);
        assert_eq!((p.offset_bytes(), p.toggle()), (48, false));
        let p = p.advance(32, 64);
        assert_eq!((p.offset_bytes(), p.toggle()), (16, true));
        let p = p.advance(48, 64);
        assert_eq!((p.offset_bytes(), p.toggle()), (0, false));
    }

    #[test]
    fn used_tells_full_from_empty() {
        let r = RingPtr::new(32, false);
        assert_eq!(RingPtr::used(r, r, 64), 0);
        assert_eq!(RingPtr::used(RingPtr::new(32, true), r, 64), 64);
        assert_eq!(RingPtr::used(RingPtr::new(16, true), r, 64), 48);
        assert_eq!(RingPtr::used(RingPtr::new(16, false), r, 64), 64, "reader ahead of writer: treated as full");
        assert_eq!(RingPtr::used(RingPtr::new(48, true), r, 64), 64, "writer lapped the reader: full");
    }

    /// Bytes, not 16-byte units, and the toggle apart from the offset.
    #[test]
    fn a_ring_pointer_prints_its_byte_offset_and_toggle() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(RingPtr(0x84).to_string(), "0x840");
        assert_eq!(RingPtr(WRAP_TOGGLE | 0x84).to_string(), "0x840 (toggle 1)");
        assert_eq!(RingPtr::new(0, true).to_string(), "0x0 (toggle 1)");
    }

    #[test]
    fn wrap_ge_handles_wrap() {
        assert!(wrap_ge(5, 5));
        assert!(wrap_ge(6, 5));
        assert!(!wrap_ge(4, 5));
        assert!(wrap_ge(2, u32::MAX - 1));
        assert!(!wrap_ge(u32::MAX - 1, 2));
    }
}
