//! What a workload enqueues through ([`Ctx`]), recording every launch.

use cqlab_driver::error::Result;
use cqlab_driver::{CoreRange, Device, Trace};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct LaunchInfo {
    pub seq: u32,
    pub cq: u8,
    /// Device cycle the host enqueued it; `None` when captured in a trace.
    pub enqueued: Option<u64>,
    /// Logical worker rectangle, inclusive: [start col, start row, end col, end row].
    pub cores: [u8; 4],
    pub label: &'static str,
}

/// What a workload enqueues through; it records every launch.
pub struct Ctx<'a> {
    pub dev: &'a mut Device,
    pub(crate) cqs: u8,
    pub(crate) new_launches: Vec<LaunchInfo>,
    pub(crate) capturing: bool,
}

impl Ctx<'_> {
    pub fn cqs(&self) -> u8 {
        self.cqs
    }

    /// Worker rows each queue owns (rows split evenly, leftovers unused).
    pub fn rows_per_cq(&self) -> u8 {
        (self.dev.chip().rows() / self.cqs).max(1)
    }

    /// Queue `q`'s own rows of workers: queues never launch on each other's cores.
    pub fn partition(&self, q: u8) -> CoreRange {
        let per = self.rows_per_cq();
        let cols = self.dev.chip().cols();
        CoreRange::new((0, q * per), (cols - 1, q * per + per - 1))
    }

    pub fn all_workers(&self) -> CoreRange {
        self.dev.chip().grid()
    }

    /// Cores every queue launches on (hetero): all workers. Queues sharing
    /// cores must order their launches with events.
    pub fn shared_cores(&self) -> CoreRange {
        self.all_workers()
    }

    /// Launches the booted worker kernel on `cores` from queue `q` and
    /// records the launch's seq, queue and label.
    pub fn launch(&mut self, q: u8, cores: CoreRange, args: &[u32], label: &'static str) -> Result<()> {
        let seq = self.dev.next_launch_seq();
        let enqueued = (!self.capturing).then(|| self.dev.now());
        self.dev.cq(q)?.launch(cores, args)?;
        self.new_launches.push(LaunchInfo {
            seq,
            cq: q,
            enqueued,
            cores: [cores.start.0, cores.start.1, cores.end.0, cores.end.1],
            label,
        });
        Ok(())
    }

    pub fn begin_trace(&mut self, q: u8) -> Result<()> {
        self.dev.cq(q)?.begin_trace()?;
        self.capturing = true;
        Ok(())
    }
    pub fn end_trace(&mut self, q: u8) -> Result<Trace> {
        self.capturing = false;
        self.dev.cq(q)?.end_trace()
    }
}
