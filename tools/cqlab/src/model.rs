//! `--exact-time`, `--blocking-loads`, `--no-link-contention`, `--icache`, `--no-l0-cache`,
//! `--reads-wait-unsent`:
//! the timing-model options of the commands that measure the embedded
//! simulator's timing (`bench dispatch`, `calibrate`). Each departs from
//! the calibrated default in one way; the driver's
//! [`Model`](cqlab_driver::backend::spec::Model) turns them into spec words
//! and a simulator configuration. (`race` takes the same options with
//! explicit values, written into its replay lines.)

use cqlab_driver::backend::spec::Model;

#[derive(clap::Args, Clone, Debug, Default)]
pub struct ModelOpt {
    /// Exact time between tiles (`embedded:exact`, `SimConfig::exact_time`):
    /// an effect lands at the cycle it is due rather than at the end of a
    /// 50-cycle slice; about 1.2x the host time (1.3-1.5x in `race`).
    #[arg(long)]
    pub exact_time: bool,
    /// Pipelined L1 loads (`SimConfig::pipelined_loads`: a load costs a
    /// cycle until its register is needed): the default since 2026-11-30
    /// (the flag is kept so older command lines run).
    #[arg(long, conflicts_with = "blocking_loads")]
    pub pipelined_loads: bool,
    /// Blocking L1 loads (`embedded:blocking`): every load stalls its core
    /// for its whole latency, the model before 2026-11-30.
    #[arg(long)]
    pub blocking_loads: bool,
    /// Instruction caches (`embedded:icache`, `SimConfig::icache`): a taken
    /// branch or jump to code a core's cache does not hold costs
    /// `SimConfig::icache_miss_cycles`, an unpublished figure.
    #[arg(long)]
    pub icache: bool,
    /// No L0 data caches on Blackhole (`embedded:no-l0`): every load reads
    /// L1, the model before 2026-11-30. On, each core has four 16-byte lines
    /// in front of L1, not coherent, flushed by `fence`; a hit costs 2
    /// cycles (`SimConfig::l0_data_cache`). Wormhole has none.
    #[arg(long)]
    pub no_l0_cache: bool,
    /// Link contention between NOC routers (`NocTiming::link_contention`:
    /// packets queue for each link of their path): the default since
    /// 2026-11-30 (the flag is kept so older command lines run).
    #[arg(long, conflicts_with = "no_link_contention")]
    pub link_contention: bool,
    /// No link contention (`embedded:no-contention`): packets never queue
    /// between routers, the model before 2026-11-30.
    #[arg(long)]
    pub no_link_contention: bool,
    /// A device read of host memory waits for the earlier host writes still
    /// queued in its core's NIU too (`embedded:reads-wait-unsent`), the
    /// model before 2026-12-01; by default it waits only for those that
    /// had left (`NocTiming::reads_pass_unsent`).
    #[arg(long)]
    pub reads_wait_unsent: bool,
}

impl ModelOpt {
    /// The model these options name.
    pub fn model(&self) -> Model {
        Model {
            exact_time: self.exact_time,
            pipelined_loads: !self.blocking_loads,
            link_contention: !self.no_link_contention,
            icache: self.icache,
            l0_cache: !self.no_l0_cache,
            reads_pass_unsent: !self.reads_wait_unsent,
        }
    }
}
