//! Waypoints: four ASCII characters each core keeps current in its
//! `mailbox::WAYPOINT` word, so the host can always say what a core waits on.

/// A waypoint word: up to four ASCII bytes, NUL-padded, little-endian.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Waypoint(pub u32);

impl Waypoint {
    pub const fn new(s: &[u8]) -> Self {
        assert!(!s.is_empty() && s.len() <= 4);
        let mut b = [0u8; 4];
        let mut i = 0;
        while i < s.len() {
            b[i] = s[i];
            i += 1;
        }
        Self(u32::from_le_bytes(b))
    }
    pub const fn bytes(self) -> [u8; 4] {
        self.0.to_le_bytes()
    }
    /// Meaning of a known waypoint, for hang dumps.
    pub fn describe(self) -> Option<&'static str> {
        WAYPOINTS.iter().find(|(w, _)| *w == self).map(|(_, d)| *d)
    }
}

impl core::fmt::Display for Waypoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for b in self.bytes() {
            match b {
                0 => break,
                0x20..=0x7e => write!(f, "{}", b as char)?,
                _ => write!(f, "\\x{b:02x}")?,
            }
        }
        Ok(())
    }
}

impl core::fmt::Debug for Waypoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Waypoint({self})")
    }
}

/// Power-on value: firmware has not started.
pub const NONE: Waypoint = Waypoint(0);
/// Firmware is booting.
pub const BOOT: Waypoint = Waypoint::new(b"BOOT");
/// Prefetcher: waiting for a fetch-queue entry.
pub const HQW: Waypoint = Waypoint::new(b"HQW");
/// Prefetcher: fetch-queue entry taken.
pub const HQD: Waypoint = Waypoint::new(b"HQD");
/// Prefetcher: stalled until the dispatcher releases it.
pub const PSW: Waypoint = Waypoint::new(b"PSW");
/// Prefetcher: stall released.
pub const PSD: Waypoint = Waypoint::new(b"PSD");
/// Prefetcher: waiting for free dispatcher-ring pages.
pub const DAPW: Waypoint = Waypoint::new(b"DAPW");
/// Dispatcher: waiting for filled ring pages from the prefetcher.
pub const UAPW: Waypoint = Waypoint::new(b"UAPW");
/// Dispatcher: in a WAIT command.
pub const PWW: Waypoint = Waypoint::new(b"PWW");
/// Dispatcher: WAIT satisfied.
pub const PWD: Waypoint = Waypoint::new(b"PWD");
/// Dispatcher: waiting for workers to report completion.
pub const WCW: Waypoint = Waypoint::new(b"WCW");
/// Dispatcher: completion queue full, waiting for the host to read.
pub const QRBW: Waypoint = Waypoint::new(b"QRBW");
/// Any core: waiting for its NOC reads to land.
pub const NRW: Waypoint = Waypoint::new(b"NRW");
/// Any core: waiting for its NOC writes to be acknowledged.
pub const NWW: Waypoint = Waypoint::new(b"NWW");
/// Any core: waiting for its NOC writes to leave its L1 (source reusable).
pub const NWSW: Waypoint = Waypoint::new(b"NWSW");
/// Dispatcher: spinning in a DELAY command.
pub const DLY: Waypoint = Waypoint::new(b"DLY");
/// Worker: waiting for a GO signal.
pub const GOW: Waypoint = Waypoint::new(b"GOW");
/// Worker: running its kernel.
pub const RUN: Waypoint = Waypoint::new(b"RUN");
/// Bad command: an error record describes it; the core has halted.
pub const BAD_CMD: Waypoint = Waypoint::new(b"!CMD");
/// Terminated cleanly.
pub const DONE: Waypoint = Waypoint::new(b"DONE");
/// Firmware panicked: a firmware bug, not a bad command.
pub const PANIC: Waypoint = Waypoint::new(b"PANC");

/// Every known waypoint with its meaning.
pub const WAYPOINTS: [(Waypoint, &str); 21] = [
    (NONE, "not started"),
    (BOOT, "booting"),
    (HQW, "prefetcher waiting for a fetch-queue entry from the host"),
    (HQD, "prefetcher took a fetch-queue entry"),
    (PSW, "prefetcher stalled until the dispatcher finishes earlier work"),
    (PSD, "prefetcher stall released"),
    (DAPW, "prefetcher waiting for free dispatcher-ring pages"),
    (UAPW, "dispatcher waiting for ring pages from the prefetcher"),
    (PWW, "dispatcher in WAIT"),
    (PWD, "dispatcher WAIT satisfied"),
    (WCW, "dispatcher waiting for workers to complete"),
    (QRBW, "dispatcher waiting for the host to drain the completion queue"),
    (NRW, "waiting for NOC reads to land"),
    (NWW, "waiting for NOC writes to be acknowledged"),
    (NWSW, "waiting for NOC writes to leave L1 (source reuse)"),
    (DLY, "dispatcher spinning in DELAY"),
    (GOW, "worker waiting for GO"),
    (RUN, "worker running its kernel"),
    (BAD_CMD, "halted on a bad command (see the error record)"),
    (DONE, "terminated cleanly"),
    (PANIC, "firmware panicked (a firmware bug)"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waypoints_print_as_text() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(HQW.to_string(), "HQW");
        assert_eq!(BAD_CMD.to_string(), "!CMD");
        assert_eq!(Waypoint(0x0102_4141).to_string(), "AA\\x02\\x01");
        assert_eq!(PSW.describe(), Some("prefetcher stalled until the dispatcher finishes earlier work"));
    }

    #[test]
    fn waypoints_are_distinct() {
        for (i, (a, _)) in WAYPOINTS.iter().enumerate() {
            for (b, _) in &WAYPOINTS[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
