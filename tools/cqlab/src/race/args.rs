//! `cqlab race`'s arguments: which workload, how many seeds, which faults.

use std::path::PathBuf;

/// Largest `--bytes` per copy (the buffer and its reference live in host memory).
pub(super) const MAX_BYTES: u32 = 16 << 20;
/// Largest NOC/PCIe jitter and PCIe latency, in cycles.
pub(super) const MAX_LATENCY: u64 = 10_000_000;
/// Largest `--timeout-cycles`.
pub(super) const MAX_TIMEOUT: u64 = 1_000_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WorkloadKind {
    /// CQ0 replays a trace and records an event; CQ1 waits, copies, reads back.
    TwoQueue,
    /// A seeded random mix of every command kind, checked against a reference model.
    Random,
    /// Random program streams (kernel uploads and evictions, args of random
    /// sizes, traces) on both queues, mixed with DRAM read-backs and
    /// cross-queue events; every kernel's store and read-back checked.
    Programs,
}

impl WorkloadKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            WorkloadKind::TwoQueue => "two-queue",
            WorkloadKind::Random => "random",
            WorkloadKind::Programs => "programs",
        }
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Which workload each seed runs.
    #[arg(long, value_enum, default_value = "two-queue")]
    pub workload: WorkloadKind,
    /// Known-bug firmware variant to run (see README), or none for the normal firmware.
    #[arg(long, conflicts_with = "firmware")]
    pub variant: Option<String>,
    /// CQ firmware to race: a directory holding `prefetch` and `dispatch`
    /// ELFs (any patched build), or the name of a known-bug variant.
    #[arg(long)]
    pub firmware: Option<String>,
    /// Seeds to run: seed-base .. seed-base + seeds.
    #[arg(long, default_value_t = 20)]
    pub seeds: u64,
    #[arg(long, default_value_t = 1)]
    pub seed_base: u64,
    /// Two-queue: iterations of the pattern. Random: batches of 12 commands
    /// per seed. Programs: batches of 25 programs per seed.
    #[arg(long, default_value_t = 10)]
    pub iterations: u32,
    /// Write/read-back pairs (stall points) per iteration on CQ1.
    #[arg(long, default_value_t = 3)]
    pub copies: u32,
    /// Bytes per copy.
    #[arg(long, default_value_t = 4096)]
    pub bytes: u32,
    /// DRAM page size of the copied buffer (a read relays it page by page
    /// through the prefetcher's relay scratch).
    #[arg(long, default_value_t = 1024)]
    pub page_size: u32,
    /// Seeded extra latency, up to this many cycles, on every NOC/PCIe transaction.
    #[arg(long, default_value_t = 0)]
    pub jitter: u64,
    /// What-if beyond the hardware: drop the NOC/PCIe ordering rules, so
    /// jitter may reorder same-route transactions (see README).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub reorder: bool,
    /// Probability per scheduling slice that a core stalls 2000 cycles.
    #[arg(long, default_value_t = 0.0)]
    pub core_stall: f64,
    /// Dispatcher DELAY (cycles) on CQ0 before it stamps the marker and
    /// records its event: a slow producer widens the cross-queue window. The
    /// host's no-progress limit grows by the same amount (a delay is not a hang).
    #[arg(long, default_value_t = 0)]
    pub delay: u32,
    /// Dispatcher ring pages per CQ (4 KiB each; fewer means more credit pressure).
    #[arg(long, default_value_t = cqlab_abi::memory_map::DEFAULT_RING_PAGES)]
    pub ring_pages: u32,
    /// Device read latency of host memory over PCIe, in cycles.
    #[arg(long, default_value_t = 750)]
    pub pcie_read_latency: u64,
    /// Issue-queue bytes per CQ (smaller fills and wraps it sooner). The
    /// random and programs workloads draw this and the completion size,
    /// ring pages and PCIe latency per seed instead.
    #[arg(long, default_value_t = cqlab_abi::sysmem::DEFAULT_ISSUE_QUEUE_SIZE)]
    pub issue_size: u32,
    /// Completion-queue bytes per CQ.
    #[arg(long, default_value_t = cqlab_abi::sysmem::DEFAULT_COMPLETION_QUEUE_SIZE)]
    pub completion_size: u32,
    /// Device cycles without progress before a wait gives up (at least the
    /// driver's progress-check interval, 1,000,000); also how long one
    /// kernel may run (the workloads' kernels take thousands of cycles, so
    /// one spinning on corrupted args is a failure, not a long wait).
    #[arg(long, default_value_t = 5_000_000)]
    pub timeout_cycles: u64,
    /// PCT schedule of this depth (Burckhardt et al.): finds races needing
    /// up to depth-1 ordering changes. 0 = the default sliced schedule.
    #[arg(long, default_value_t = 0)]
    pub pct_depth: u32,
    /// Scheduling steps (slices) PCT controls before reverting to slices.
    #[arg(long, default_value_t = 20_000)]
    pub pct_steps: u64,
    /// Faults, comma-separated (repeatable): stall=P[:CYCLES], jitter=N,
    /// slow=CORE@FACTOR (CORE: prefetcherQ, dispatcherQ, workerC.R),
    /// late-doorbell=N, backpressure=N, pcie-read=N, quantum-jitter=N,
    /// lazy-drain=N (the host reads completions every N polls of a wait),
    /// or `strong` (every simulator amplifier at once).
    #[arg(long)]
    pub faults: Vec<String>,
    /// Parallel processes (each runs a share of the seeds).
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Stop at the first failing seed.
    #[arg(long)]
    pub until_first: bool,
    /// Keep each failing seed's full hang dump (text, JSON) and trace here.
    #[arg(long)]
    pub dump_dir: Option<PathBuf>,
    #[command(flatten)]
    pub records: crate::campaign::RecordArgs,
    /// Internal (`--jobs`): print records on stdout, nothing else.
    #[arg(long, hide = true)]
    pub child: bool,
}
