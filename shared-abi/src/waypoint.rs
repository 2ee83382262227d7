//! Waypoints: four ASCII characters each core keeps current in its
//! `mailbox::WAYPOINT` word, so the host can always say what a core waits on.

/// A waypoint word: up to four ASCII bytes, NUL-padded, little-endian.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Waypoint(pub u32);

impl Waypoint {
    /// Up to four bytes (none: the power-on word 0).
    pub const fn new(s: &[u8]) -> Self {
        assert!(s.len() <= 4);
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

/// `waypoints! { /// docs  NAME = "TEXT", "meaning"; ... }`: one line per
/// waypoint gives its constant, `Waypoint::ALL`, its label, its meaning and
/// the parser from the label.
macro_rules! waypoints {
    ($($(#[$doc:meta])* $name:ident = $text:literal, $meaning:literal;)*) => {
        $($(#[$doc])* pub const $name: Waypoint = Waypoint::new($text.as_bytes());)*

        impl Waypoint {
            /// Every known waypoint, in table order.
            pub const ALL: [Waypoint; [$($text),*].len()] = [$($name),*];

            /// The four characters of a known waypoint (empty for [`NONE`]).
            pub const fn label(self) -> Option<&'static str> {
                match self {
                    $($name => Some($text),)*
                    _ => None,
                }
            }

            /// Meaning of a known waypoint, for hang dumps.
            pub const fn describe(self) -> Option<&'static str> {
                match self {
                    $($name => Some($meaning),)*
                    _ => None,
                }
            }

            /// The known waypoint whose label is `text`.
            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|w| w.label() == Some(text))
            }
        }
    };
}

waypoints! {
    /// Power-on value: firmware has not started.
    NONE = "", "not started";
    /// Firmware is booting.
    BOOT = "BOOT", "booting";
    /// Prefetcher: waiting for a fetch-queue entry.
    HQW = "HQW", "prefetcher waiting for a fetch-queue entry from the host";
    /// Prefetcher: fetch-queue entry taken.
    HQD = "HQD", "prefetcher took a fetch-queue entry";
    /// Prefetcher: stalled until the dispatcher releases it.
    PSW = "PSW", "prefetcher stalled until the dispatcher finishes earlier work";
    /// Prefetcher: stall released.
    PSD = "PSD", "prefetcher stall released";
    /// Prefetcher: waiting for free dispatcher-ring pages.
    DAPW = "DAPW", "prefetcher waiting for free dispatcher-ring pages";
    /// Dispatcher: waiting for filled ring pages from the prefetcher.
    UAPW = "UAPW", "dispatcher waiting for ring pages from the prefetcher";
    /// Dispatcher: in a WAIT command.
    PWW = "PWW", "dispatcher in WAIT";
    /// Dispatcher: WAIT satisfied.
    PWD = "PWD", "dispatcher WAIT satisfied";
    /// Dispatcher: waiting for workers to report completion.
    WCW = "WCW", "dispatcher waiting for workers to complete";
    /// Dispatcher: completion queue full, waiting for the host to read.
    QRBW = "QRBW", "dispatcher waiting for the host to drain the completion queue";
    /// Any core: waiting for its NOC reads to land.
    NRW = "NRW", "waiting for NOC reads to land";
    /// Any core: waiting for its NOC writes to be acknowledged.
    NWW = "NWW", "waiting for NOC writes to be acknowledged";
    /// Any core: waiting for its NOC writes to leave its L1 (source reusable).
    NWSW = "NWSW", "waiting for NOC writes to leave L1 (source reuse)";
    /// Any core: waiting for a NOC command buffer to accept the next request.
    NCBW = "NCBW", "waiting for a NOC command buffer to accept a request";
    /// Dispatcher: spinning in a DELAY command.
    DLY = "DLY", "dispatcher spinning in DELAY";
    /// Worker: waiting for a GO signal.
    GOW = "GOW", "worker waiting for GO";
    /// Worker: running its kernel.
    RUN = "RUN", "worker running its kernel";
    /// Worker BRISC: waiting for its subordinate cores to boot.
    SUBA = "SUBA", "worker BRISC waiting for NCRISC and the TRISCs to boot";
    /// Worker BRISC: waiting for its subordinate cores to finish a launch.
    SUBW = "SUBW", "worker BRISC waiting for NCRISC and the TRISCs to finish their kernels";
    /// Bad command: an error record describes it; the core has halted.
    BAD_CMD = "!CMD", "halted on a bad command (see the error record)";
    /// Terminated cleanly.
    DONE = "DONE", "terminated cleanly";
    /// Firmware panicked: a firmware bug, not a bad command.
    PANIC = "PANC", "firmware panicked (a firmware bug)";
}

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
    fn waypoints_are_distinct_and_parse_from_their_labels() {
        extern crate std;
        use std::string::ToString;
        for (i, a) in Waypoint::ALL.iter().enumerate() {
            for b in &Waypoint::ALL[i + 1..] {
                assert_ne!(a, b);
            }
            let label = a.label().unwrap();
            assert_eq!(Waypoint::parse(label), Some(*a));
            assert_eq!(a.to_string(), label);
        }
        assert_eq!(Waypoint::parse("NOPE"), None);
    }
}
