//! The host's share of the embedded simulator's seeded schedule. On a card
//! the firmware runs while the driver works, so the order of the driver's
//! own loads and stores matters as much as the firmware's. Here the device
//! runs only inside the driver's calls, so every host access to
//! device-visible state is a scheduling point: before it takes effect the
//! device runs for a number of cycles this clock decides.
//!
//! - **The modelled cost.** The host time since the previous access: a
//!   BAR write's (the chip's [`cqlab_sim::bar::BarTiming`], posted by the
//!   chip and charged here), a sysmem access's ([`SysmemTiming`]); and a
//!   read's own latency before it samples.
//! - **Jitter** (`HostSchedule::jitter_cycles`): a seeded `0..=N` more at
//!   every access, from a stream of its own ([`Stream::HostJitter`]).
//! - **PCT points** (`HostSchedule::pct`): chosen accesses where the device
//!   runs [`HOST_PCT_RUN_CYCLES`] ahead ([`Stream::HostPct`]).
//!
//! Both streams are forked from the simulator's seed, so the same seed
//! gives the same run bit for bit, and turning either on reshuffles none of
//! the device's own streams. Polls are not scheduling points: the host
//! waits there anyway.

use crate::config::{HostSchedule, HOST_PCT_RUN_CYCLES};
use cqlab_sim::rng::{Rng, Stream};

/// What the host's accesses to its own memory (sysmem) cost, in device
/// cycles (1 GHz): typical x86 server figures. A read of a line the device
/// wrote over PCIe misses the host's caches (about 100 ns to DRAM) and then
/// streams at one core's copy bandwidth (about 10 GB/s); a write streams at
/// about 16 GB/s into write-back memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysmemTiming {
    /// A read's latency. Default 100 cycles.
    pub read_latency_cycles: u64,
    /// Read bandwidth. Default 10 B/cycle.
    pub read_bytes_per_cycle: u64,
    /// Write bandwidth. Default 16 B/cycle.
    pub write_bytes_per_cycle: u64,
}

impl Default for SysmemTiming {
    fn default() -> Self {
        Self { read_latency_cycles: 100, read_bytes_per_cycle: 10, write_bytes_per_cycle: 16 }
    }
}

impl SysmemTiming {
    /// Host time a read of `len` bytes takes before its data is in hand.
    pub fn read_cycles(&self, len: usize) -> u64 {
        self.read_latency_cycles + (len as u64).div_ceil(self.read_bytes_per_cycle.max(1))
    }
    /// Host time writing `len` bytes occupies (at least a cycle).
    pub fn write_cycles(&self, len: usize) -> u64 {
        (len as u64).div_ceil(self.write_bytes_per_cycle.max(1)).max(1)
    }
}

/// A host access, as the clock charges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A BAR write: the chip posts its cost itself.
    BarWrite,
    /// A BAR read: the chip charges its round trip itself before sampling.
    BarRead,
    /// `len` bytes of sysmem read.
    SysmemRead(usize),
    /// `len` bytes of sysmem claimed to write.
    SysmemWrite(usize),
}

/// Counts of what the clock did, for tests and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostClockStats {
    /// Host accesses (scheduling points) so far.
    pub accesses: u64,
    /// Device cycles given for sysmem access costs.
    pub sysmem_cycles: u64,
    /// Device cycles given for jitter.
    pub jitter_cycles: u64,
    /// PCT points reached.
    pub pct_points: u32,
    /// Device cycles the device ran at these points (with the posted BAR
    /// time the chip charged there), and the host wall time simulating them
    /// took: what a host-time measurement leaves out (`cqlab bench
    /// dispatch`). Not part of the run's state.
    pub device_cycles: u64,
    pub device_run: std::time::Duration,
}

/// The host schedule as it runs.
#[derive(Clone, Debug)]
pub struct HostClock {
    schedule: HostSchedule,
    timing: SysmemTiming,
    jitter: Rng,
    /// PCT points not reached yet (access numbers, from 1), last first.
    points: Vec<u64>,
    /// Sysmem host time not given to the device yet.
    owed: u64,
    /// A BAR write whose posted cost the chip holds since the last point.
    posted: bool,
    stats: HostClockStats,
}

impl HostClock {
    /// The clock of a run with simulator seed `seed`.
    pub fn new(seed: u64, schedule: HostSchedule) -> Self {
        let mut points = Vec::new();
        if let Some(p) = schedule.pct {
            let mut rng = Rng::fork(seed, Stream::HostPct);
            // Distinct points (validated: no more points than steps).
            while points.len() < p.points as usize {
                let at = 1 + rng.upto(p.steps - 1);
                if !points.contains(&at) {
                    points.push(at);
                }
            }
            points.sort_unstable_by(|a, b| b.cmp(a));
        }
        Self {
            schedule,
            timing: SysmemTiming::default(),
            jitter: Rng::fork(seed, Stream::HostJitter),
            points,
            owed: 0,
            posted: false,
            stats: HostClockStats::default(),
        }
    }

    pub fn schedule(&self) -> HostSchedule {
        self.schedule
    }

    pub fn stats(&self) -> HostClockStats {
        self.stats
    }

    /// The device cycles to run before access `a` takes effect, or `None`
    /// when there are none and nothing is posted (the device need not be
    /// entered at all). Records the access's own cost: a sysmem write's is
    /// owed to the next point.
    pub fn before(&mut self, a: Access) -> Option<u64> {
        self.stats.accesses += 1;
        let mut run = std::mem::take(&mut self.owed);
        match a {
            Access::SysmemRead(len) => {
                let cost = self.timing.read_cycles(len);
                self.stats.sysmem_cycles += cost;
                run += cost;
            }
            Access::SysmemWrite(len) => {
                let cost = self.timing.write_cycles(len);
                self.stats.sysmem_cycles += cost;
                self.owed = cost;
            }
            Access::BarWrite | Access::BarRead => {}
        }
        if self.schedule.jitter_cycles > 0 {
            let j = self.jitter.upto(self.schedule.jitter_cycles);
            self.stats.jitter_cycles += j;
            run += j;
        }
        if self.points.last() == Some(&self.stats.accesses) {
            self.points.pop();
            self.stats.pct_points += 1;
            run += HOST_PCT_RUN_CYCLES;
        }
        // A BAR read charges posted writes itself, before it samples.
        let posted = std::mem::replace(&mut self.posted, a == Access::BarWrite) && a != Access::BarRead;
        (run > 0 || posted).then_some(run)
    }

    /// Records what the device ran at the point `before` asked for.
    pub fn ran(&mut self, cycles: u64, took: std::time::Duration) {
        self.stats.device_cycles += cycles;
        self.stats.device_run += took;
    }

    /// Host time owed to the device at a poll (or an exact run), which
    /// the caller adds to it.
    pub fn take_owed(&mut self) -> u64 {
        self.posted = false;
        std::mem::take(&mut self.owed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HostPct;

    #[test]
    fn costs_follow_the_figures() {
        let t = SysmemTiming::default();
        assert_eq!(t.read_cycles(4), 101);
        assert_eq!(t.read_cycles(64), 107);
        assert_eq!(t.write_cycles(1), 1);
        assert_eq!(t.write_cycles(4096), 256);
    }

    #[test]
    fn off_it_charges_the_modelled_costs_only() {
        let mut c = HostClock::new(1, HostSchedule::default());
        assert_eq!(c.before(Access::BarRead), None, "nothing owed, nothing posted");
        assert_eq!(c.before(Access::BarWrite), None);
        assert_eq!(c.before(Access::BarWrite), Some(0), "the first write's posted cost");
        assert_eq!(c.before(Access::SysmemWrite(160)), Some(0));
        assert_eq!(c.before(Access::SysmemRead(4)), Some(10 + 101), "the write's time, then the read's");
        assert_eq!(c.before(Access::BarRead), None);
        c.before(Access::SysmemWrite(16));
        assert_eq!(c.take_owed(), 1);
        assert_eq!(c.stats().accesses, 7);
    }

    #[test]
    fn jitter_and_points_replay_from_the_seed_and_stay_in_bounds() {
        let s = HostSchedule { jitter_cycles: 500, pct: Some(HostPct { points: 3, steps: 20 }) };
        let draws = |seed| {
            let mut c = HostClock::new(seed, s);
            (0..40).map(|_| c.before(Access::BarRead).unwrap_or(0)).collect::<Vec<_>>()
        };
        let a = draws(7);
        assert_eq!(a, draws(7));
        assert_ne!(a, draws(8));
        let far: Vec<usize> = (0..40).filter(|&i| a[i] >= HOST_PCT_RUN_CYCLES).collect();
        assert_eq!(far.len(), 3, "{a:?}");
        assert!(far.iter().all(|&i| i < 20), "points among the first 20 accesses: {far:?}");
        assert!(a.iter().all(|&r| r % HOST_PCT_RUN_CYCLES <= 500));
        // The jitter stream does not depend on PCT being on.
        let mut plain = HostClock::new(7, HostSchedule { jitter_cycles: 500, pct: None });
        let b: Vec<u64> = (0..40).map(|_| plain.before(Access::BarRead).unwrap_or(0)).collect();
        let stripped: Vec<u64> = a.iter().map(|r| r % HOST_PCT_RUN_CYCLES).collect();
        assert_eq!(b, stripped);
    }
}
