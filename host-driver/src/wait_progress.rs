//! How far a long wait has got, for whoever shows it (the CLI prints a line
//! on stderr): what the host waits for, the device cycle reached and the
//! limit that will end the wait. A wait reports at each of its progress
//! checks (`wait::PROGRESS_CHECK_CYCLES` of device time), so what is
//! reported depends on device time alone; how often it is shown is the
//! sink's choice.

use crate::dump::Wait;
use cqlab_abi::noc::Coord;
use std::fmt;
use std::sync::Arc;

/// How a report's text starts (a campaign recognises its runs' lines by it).
pub const STILL_WAITING: &str = "still waiting for ";

/// One report of a wait still under way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitProgress {
    pub wait: Wait,
    /// The device cycle reached.
    pub device_cycle: u64,
    /// Device cycles since the wait began.
    pub waited_cycles: u64,
    /// What will end the wait if nothing changes.
    pub limit: WaitLimit,
}

/// The timeout a wait runs towards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitLimit {
    /// No core has recorded for `stalled` cycles of the stall timeout `limit`.
    Stall { stalled: u64, limit: u64 },
    /// The kernel on `core` has run `ran` cycles of the kernel timeout
    /// `limit` (0: none).
    Kernel { core: Coord, ran: u64, limit: u64 },
}

impl fmt::Display for WaitProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{STILL_WAITING}{}: device cycle {}, {} cycles into the wait; ",
            self.wait, self.device_cycle, self.waited_cycles
        )?;
        match self.limit {
            WaitLimit::Stall { stalled, limit } => {
                write!(f, "no progress for {stalled} cycles of the {limit}-cycle stall timeout")
            }
            WaitLimit::Kernel { core, ran, limit: 0 } => {
                write!(f, "kernel on {core} running for {ran} cycles (no kernel timeout)")
            }
            WaitLimit::Kernel { core, ran, limit } => {
                write!(f, "kernel on {core} running for {ran} cycles of the {limit}-cycle kernel timeout")
            }
        }
    }
}

/// Where a device's waits report ([`crate::DeviceConfig::wait_progress`]).
#[derive(Clone)]
pub struct WaitProgressSink(Arc<dyn Fn(&WaitProgress) + Send + Sync>);

impl WaitProgressSink {
    pub fn new(f: impl Fn(&WaitProgress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    pub fn report(&self, p: &WaitProgress) {
        (self.0)(p)
    }
}

impl fmt::Debug for WaitProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WaitProgressSink")
    }
}
