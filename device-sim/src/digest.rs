//! The device-state digest: a 64-bit FNV-1a-style hash over the bytes of
//! the state (never over `Debug` text, whose format may change without the
//! state changing). Every value is fed as little-endian words; strings and
//! byte runs carry their length, enums a tag, so distinct states do not
//! collide by concatenation.

use crate::hart::{Halt, HaltReason};
use crate::noc::{Departing, Event, EventKind, Landing};

/// Running digest.
pub(crate) struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest(0xcbf2_9ce4_8422_2325)
    }
}

impl Digest {
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            self.u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &x in chunks.remainder() {
            self.u64(x as u64);
        }
        self.u64(b.len() as u64);
    }

    /// A hart's halt state: absent, or tag + pc + the reason's fields.
    pub(crate) fn halt(&mut self, halt: Option<Halt>) {
        let Some(h) = halt else {
            self.u64(0);
            return;
        };
        self.u64(1);
        self.u64(h.pc as u64);
        let (tag, a): (u64, u64) = match h.reason {
            HaltReason::Ecall => (1, 0),
            HaltReason::Ebreak => (2, 0),
            HaltReason::IllegalInstruction { word } => (3, word as u64),
            HaltReason::MisalignedFetch { target } => (4, target as u64),
            HaltReason::MisalignedLoad { addr } => (5, addr as u64),
            HaltReason::MisalignedStore { addr } => (6, addr as u64),
            HaltReason::FetchFault => (7, 0),
            HaltReason::LoadFault { addr } => (8, addr as u64),
            HaltReason::StoreFault { addr } => (9, addr as u64),
            HaltReason::Rejected { addr, reason } => {
                self.bytes(reason.as_bytes());
                (10, addr as u64)
            }
        };
        self.u64(tag);
        self.u64(a);
    }

    /// A pending NOC or host event: time, issue order, kind and fields.
    pub(crate) fn event(&mut self, e: &Event) {
        self.u64(e.time);
        self.u64(e.seq);
        match &e.kind {
            EventKind::WriteArrive { target, id, len } => {
                self.u64(1);
                self.u64(target.0);
                self.u64(*id);
                self.u64(*len as u64);
            }
            EventKind::WriteAck { src } => {
                self.u64(2);
                self.u64(*src as u64);
            }
            EventKind::AtomicArrive { target, value } => {
                self.u64(3);
                self.u64(target.0);
                self.u64(*value as u64);
            }
            EventKind::AtomicAck { src } => {
                self.u64(4);
                self.u64(*src as u64);
            }
            EventKind::HostWrite { target, data } => {
                self.u64(5);
                self.u64(target.0);
                self.bytes(data);
            }
            EventKind::ReadComplete { id, src, target, local, len, trid } => {
                self.u64(6);
                self.u64(*id);
                self.u64(*src as u64);
                self.u64(target.0);
                self.u64(*local as u64);
                self.u64(*len as u64);
                self.u64(*trid as u64);
            }
        }
    }

    /// A write still reading its source.
    pub(crate) fn departing(&mut self, d: &Departing) {
        for v in [d.id, d.src as u64, d.local as u64, d.len as u64, d.start, d.read as u64] {
            self.u64(v);
        }
    }

    /// A read whose data is landing.
    pub(crate) fn landing(&mut self, l: &Landing) {
        for v in [l.id, l.src as u64, l.target.0, l.local as u64, l.len as u64, l.start, l.done as u64] {
            self.u64(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::noc::NocAddr;

    fn of(f: impl FnOnce(&mut Digest)) -> u64 {
        let mut d = Digest::default();
        f(&mut d);
        d.finish()
    }

    #[test]
    fn distinct_states_hash_apart() {
        // Length is part of a byte run: [1] then [] differs from [] then [1].
        assert_ne!(of(|d| (d.bytes(&[1]), d.bytes(&[])).1), of(|d| (d.bytes(&[]), d.bytes(&[1])).1));
        let halt = |reason| Some(Halt { pc: 0x100, reason });
        assert_ne!(of(|d| d.halt(None)), of(|d| d.halt(halt(HaltReason::Ecall))));
        assert_ne!(of(|d| d.halt(halt(HaltReason::Ecall))), of(|d| d.halt(halt(HaltReason::Ebreak))));
        let ev = |kind| Event { time: 5, seq: 1, kind };
        let a = ev(EventKind::WriteAck { src: 3 });
        let b = ev(EventKind::AtomicAck { src: 3 });
        assert_ne!(of(|d| d.event(&a)), of(|d| d.event(&b)));
        let w = ev(EventKind::WriteArrive { target: NocAddr(8), id: 3, len: 2 });
        assert_eq!(of(|d| d.event(&w)), of(|d| d.event(&w.clone())));
    }
}
