//! Appends trace records to this core's L1 trace ring.

use crate::memory::Memory;
use core::mem::offset_of;
use cqlab_abi::memory_map::TRACE_RING;
use cqlab_abi::trace::{record_addr, TraceKind, TraceRecord, TraceRingHeader, CAPACITY};
use zerocopy::IntoBytes;

const NEXT_SEQ: u32 = TRACE_RING.base + core::mem::offset_of!(TraceRingHeader, next_seq) as u32;

/// Resets the ring: no records, capacity and record size published for the host.
pub fn init(mem: &mut impl Memory) {
    let header = TraceRingHeader {
        next_seq: 0,
        capacity: CAPACITY,
        record_size: core::mem::size_of::<TraceRecord>() as u32,
        _reserved: 0,
    };
    mem.write_words(TRACE_RING.base, header.as_bytes());
}

/// Appends one record, overwriting the oldest when the ring is full. The
/// sequence number lets the host see how many records it missed.
pub fn record(mem: &mut impl Memory, core: u16, cycle: u64, kind: TraceKind, arg0: u32, arg1: u32) {
    let seq = mem.read_u32(NEXT_SEQ);
    store(mem, record_addr(seq), seq, core, cycle, kind, arg0, arg1);
    mem.write_u32(NEXT_SEQ, seq.wrapping_add(1));
}

/// Writes record `seq` at `at`: field by field (one store each, on every hot
/// path of the firmware), at the offsets `TraceRecord`'s layout asserts.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn store(mem: &mut impl Memory, at: u32, seq: u32, core: u16, cycle: u64, kind: TraceKind, arg0: u32, arg1: u32) {
    store_word(mem, at, seq, core_kind(core, kind), cycle, arg0, arg1);
}

#[inline(always)]
fn store_word(mem: &mut impl Memory, at: u32, seq: u32, word: u32, cycle: u64, arg0: u32, arg1: u32) {
    mem.write_u32(at + offset_of!(TraceRecord, cycle) as u32, cycle as u32);
    mem.write_u32(at + offset_of!(TraceRecord, cycle) as u32 + 4, (cycle >> 32) as u32);
    mem.write_u32(at + offset_of!(TraceRecord, seq) as u32, seq);
    mem.write_u32(at + offset_of!(TraceRecord, core) as u32, word);
    mem.write_u32(at + offset_of!(TraceRecord, arg0) as u32, arg0);
    mem.write_u32(at + offset_of!(TraceRecord, arg1) as u32, arg1);
}

/// The record word holding `core` and `kind` (`TraceRecord::core` and `kind`).
pub const fn core_kind(core: u16, kind: TraceKind) -> u32 {
    core as u32 | (kind as u32) << 16
}

/// A writer that owns this core's ring: it keeps the next sequence number
/// and record address in local memory, so a record costs only its stores (no
/// L1 load of `next_seq`, no division). Whoever holds a `Cursor` must be the
/// ring's only writer while it does (the worker firmware between launches:
/// kernels do not append records; a kernel that fails halts the core).
pub struct Cursor {
    seq: u32,
    at: u32,
    /// Records left before `at` is recomputed: at the ring's last slot, and
    /// where the sequence number wraps (`CAPACITY` does not divide 2^32).
    left: u32,
}

impl Cursor {
    /// Takes over the ring where it stands.
    pub fn take(mem: &impl Memory) -> Self {
        let mut c = Cursor { seq: mem.read_u32(NEXT_SEQ), at: 0, left: 0 };
        c.place();
        c
    }

    /// `at` and `left` for `seq` (one division, once per pass of the ring:
    /// out of line, so a record's own path stays short).
    #[cold]
    #[inline(never)]
    fn place(&mut self) {
        self.at = record_addr(self.seq);
        let to_end = CAPACITY - self.seq % CAPACITY;
        let to_wrap = 0u32.wrapping_sub(self.seq);
        self.left = if to_wrap == 0 { to_end } else { to_end.min(to_wrap) };
    }

    /// Appends one record, like [`record`].
    #[inline(always)]
    pub fn record(&mut self, mem: &mut impl Memory, core: u16, cycle: u64, kind: TraceKind, arg0: u32, arg1: u32) {
        self.record_word(mem, core_kind(core, kind), cycle, arg0, arg1);
    }

    /// Appends one record whose core and kind are `word` ([`core_kind`],
    /// computed once by a writer that appends the same kind again and again).
    #[inline(always)]
    pub fn record_word(&mut self, mem: &mut impl Memory, word: u32, cycle: u64, arg0: u32, arg1: u32) {
        let (seq, at) = (self.seq, self.at);
        store_word(mem, at, seq, word, cycle, arg0, arg1);
        let next = seq.wrapping_add(1);
        mem.write_u32(NEXT_SEQ, next);
        self.seq = next;
        self.at = at + RECORD_SIZE;
        self.left -= 1;
        if self.left == 0 {
            self.place();
        }
    }
}

const RECORD_SIZE: u32 = core::mem::size_of::<TraceRecord>() as u32;

const _: () = assert!(offset_of!(TraceRecord, kind) == offset_of!(TraceRecord, core) + 2);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::TestL1;
    use zerocopy::FromBytes;

    #[test]
    fn ring_overwrites_oldest_and_keeps_sequence() {
        let mut l1 = TestL1::default();
        init(&mut l1);
        for i in 0..CAPACITY + 3 {
            record(&mut l1, 0x0101, 100 + i as u64, TraceKind::CmdStart, i, 0);
        }
        assert_eq!(l1.read_u32(NEXT_SEQ), CAPACITY + 3);
        let rec = TraceRecord::read_from_bytes(l1.bytes(record_addr(CAPACITY + 2), 24)).unwrap();
        assert_eq!((rec.seq, rec.arg0, rec.cycle), (CAPACITY + 2, CAPACITY + 2, 100 + CAPACITY as u64 + 2));
        // Slot 2 now holds the record written CAPACITY later.
        let slot2 = TraceRecord::read_from_bytes(l1.bytes(record_addr(2), 24)).unwrap();
        assert_eq!(slot2.seq, CAPACITY + 2);
    }

    #[test]
    fn cursor_writes_what_record_writes() {
        // Across the ring's end and across the sequence number's wrap.
        for start in [0, CAPACITY - 2, u32::MAX - 2] {
            let (mut a, mut b) = (TestL1::default(), TestL1::default());
            init(&mut a);
            init(&mut b);
            a.write_u32(NEXT_SEQ, start);
            b.write_u32(NEXT_SEQ, start);
            let mut cursor = Cursor::take(&b);
            for i in 0..5u32 {
                record(&mut a, 0x0203, 7 + i as u64, TraceKind::KernelStart, i, !i);
                cursor.record(&mut b, 0x0203, 7 + i as u64, TraceKind::KernelStart, i, !i);
            }
            let n = TRACE_RING.size as usize;
            assert!(a.bytes(TRACE_RING.base, n) == b.bytes(TRACE_RING.base, n), "start {start}");
        }
    }
}
