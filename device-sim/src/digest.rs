//! The device-state digest: a 64-bit FNV-1a-style hash over the bytes of
//! the state (never over `Debug` text, whose format may change without the
//! state changing). Every value is fed as little-endian words; strings and
//! byte runs carry their length, enums a tag, so distinct states do not
//! collide by concatenation.

use crate::hart::{Halt, HaltReason};
use crate::noc::{Departing, Event, EventKind, Landing, Source, Target};
use crate::tensix::TensixRegs;
use std::hash::{Hash, Hasher};

/// Feeds `std::hash::Hash` output into a [`Digest`] (for register state).
struct Feed<'a>(&'a mut Digest);

impl Hasher for Feed<'_> {
    fn finish(&self) -> u64 {
        self.0.finish()
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.bytes(bytes);
    }
    fn write_u32(&mut self, v: u32) {
        self.0.u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0.u64(v);
    }
}

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
            HaltReason::NotModelled { addr, what } => {
                self.bytes(what.as_bytes());
                (11, addr as u64)
            }
            HaltReason::BadNocRequest { addr, reason, coord } => {
                self.bytes(reason.as_bytes());
                self.u64(coord.packed() as u64);
                (12, addr as u64)
            }
        };
        self.u64(tag);
        self.u64(a);
    }

    /// A tile's registers: soft reset, reset PCs, both NIUs.
    pub(crate) fn tensix(&mut self, regs: &TensixRegs) {
        regs.hash(&mut Feed(self));
    }

    fn source(&mut self, s: Source) {
        self.u64(s.tile as u64);
        self.u64(s.noc.index() as u64);
    }

    fn target(&mut self, t: &Target) {
        match t {
            Target::L1 { tile, addr } => [1, *tile as u64, *addr as u64].map(|v| self.u64(v)),
            Target::Reg { tile, addr } => [2, *tile as u64, *addr as u64].map(|v| self.u64(v)),
            Target::Dram { channel, offset } => [3, *channel as u64, *offset].map(|v| self.u64(v)),
            Target::Host { offset } => [4, *offset, 0].map(|v| self.u64(v)),
            Target::Arc { addr } => [5, *addr as u64, 0].map(|v| self.u64(v)),
            Target::Multicast { tiles, addr } => {
                self.u64(6);
                for &t in tiles {
                    self.u64(t as u64);
                }
                [tiles.len() as u64, *addr as u64, 0].map(|v| self.u64(v))
            }
        };
    }

    /// A pending NOC or host event: time, issue order, kind and fields.
    pub(crate) fn event(&mut self, e: &Event) {
        self.u64(e.time);
        self.u64(e.seq);
        match &e.kind {
            EventKind::WriteArrive { src, target, id, len, posted } => {
                self.u64(1);
                match src {
                    Some(s) => self.source(*s),
                    None => self.u64(u64::MAX),
                }
                self.target(target);
                for v in [*id, *len as u64, *posted as u64] {
                    self.u64(v);
                }
            }
            EventKind::WriteAck { src, tid, count } => {
                self.u64(2);
                self.source(*src);
                self.u64(*tid as u64);
                self.u64(*count as u64);
            }
            EventKind::AtomicArrive { src, id, target, value, wrap, resp } => {
                self.u64(3);
                self.source(*src);
                self.target(target);
                for v in [*id, *value as u64, *wrap as u64, *resp as u64] {
                    self.u64(v);
                }
            }
            EventKind::AtomicResp { src, id, tid, ret } => {
                self.u64(4);
                self.source(*src);
                self.u64(*id);
                self.u64(*tid as u64);
                self.u64(ret.map_or(u64::MAX, u64::from));
            }
            EventKind::HostWrite { target, data } => {
                self.u64(5);
                self.target(target);
                self.bytes(data);
            }
            EventKind::ReadComplete { src, id, target, local, len, tid } => {
                self.u64(6);
                self.source(*src);
                self.target(target);
                for v in [*id, *local as u64, *len as u64, *tid as u64] {
                    self.u64(v);
                }
            }
        }
    }

    /// A write still reading its source.
    pub(crate) fn departing(&mut self, d: &Departing) {
        self.source(d.src);
        for v in [d.id, d.tid as u64, d.posted as u64, d.local as u64, d.len as u64, d.start, d.rate, d.read as u64] {
            self.u64(v);
        }
    }

    /// A read whose data is landing.
    pub(crate) fn landing(&mut self, l: &Landing) {
        self.source(l.src);
        self.target(&l.target);
        for v in [l.id, l.local as u64, l.len as u64, l.start, l.done as u64] {
            self.u64(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::arch::Noc;

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
        let src = Source { tile: 3, noc: Noc::Noc0 };
        let a = ev(EventKind::WriteAck { src, tid: 0, count: 1 });
        let b = ev(EventKind::AtomicResp { src, id: 0, tid: 0, ret: None });
        assert_ne!(of(|d| d.event(&a)), of(|d| d.event(&b)));
        let other_noc = ev(EventKind::WriteAck { src: Source { tile: 3, noc: Noc::Noc1 }, tid: 0, count: 1 });
        assert_ne!(of(|d| d.event(&a)), of(|d| d.event(&other_noc)));
        let w = ev(EventKind::WriteArrive {
            src: Some(src),
            target: Target::L1 { tile: 8, addr: 0 },
            id: 3,
            len: 2,
            posted: false,
        });
        assert_eq!(of(|d| d.event(&w)), of(|d| d.event(&w.clone())));
    }
}
