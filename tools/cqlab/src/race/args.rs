//! `cqlab race`'s arguments: which workload, how many seeds, which faults,
//! each number with its range declared at the option.

use cqlab_driver::backend::spec::Model;
use std::path::PathBuf;

/// Largest `--bytes` per copy (the buffer and its reference live in host memory).
const MAX_BYTES: u32 = 16 << 20;
/// Largest NOC/PCIe jitter and PCIe latency, and the largest `--delay`, in cycles.
const MAX_LATENCY: u64 = cqlab_sim::config::MAX_FAULT_CYCLES;
/// Largest `--timeout-cycles`.
const MAX_TIMEOUT: u64 = 1_000_000_000_000;
/// Most seeds one campaign runs (a million seeds already take days).
pub const MAX_SEEDS: u64 = 10_000_000;
/// Largest issue or completion queue, in bytes (sysmem holds both per CQ).
const MAX_QUEUE_BYTES: u32 = 64 << 20;
/// Largest DRAM page of the copied buffer: what one chunk's paged write
/// carries, in whole PCIe lines (helper-66: the 1 MiB allowed before was
/// refused at the first seed from 36 KiB on).
const MAX_PAGE: u32 = (cqlab_abi::size::paged_write_room(cqlab_abi::memory_map::MAX_CHUNK as usize) as u32)
    & !(cqlab_abi::PCIE_ALIGNMENT as u32 - 1);
/// Most pages of the copied buffer: a queue command names a page in 16 bits.
pub const MAX_PAGES: u32 = 1 << 16;

/// A DRAM page: a whole number of PCIe-aligned blocks (the driver's DRAM
/// buffers are paged so), at most [`MAX_PAGE`].
fn page_size(s: &str) -> Result<u32, String> {
    let align = cqlab_abi::PCIE_ALIGNMENT as u32;
    let v: u64 = s.trim().parse().map_err(|_| format!("expected a number of bytes, found {s:?}"))?;
    if v == 0 || v % align as u64 != 0 || v > MAX_PAGE as u64 {
        return Err(format!("{v}: a multiple of {align} from {align} to {MAX_PAGE}"));
    }
    Ok(v as u32)
}

/// The known-bug variants of the CQ firmware.
pub use cqlab_abi::firmware::KNOWN_BUG_VARIANTS as VARIANTS;

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

/// Options only the two-queue workload reads (the others draw their
/// layout per seed): giving one with another workload is refused.
pub(super) const TWO_QUEUE_ONLY: [&str; 11] = [
    "copies",
    "buffers",
    "depth",
    "trace_kernels",
    "bytes",
    "page_size",
    "delay",
    "ring_pages",
    "pcie_read_latency",
    "issue_size",
    "completion_size",
];

#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Which workload each seed runs.
    #[arg(long, value_enum, default_value = "two-queue")]
    pub workload: WorkloadKind,
    /// Known-bug firmware variant to run, or `none` for the normal
    /// firmware: stall-release-early, release-before-ack,
    /// early-fetch-release, completion-no-toggle, event-zero-signalled,
    /// relay-reuse-before-sent (docs/cli.md says what each re-creates).
    #[arg(long, conflicts_with = "firmware", value_parser = variant)]
    pub variant: Option<String>,
    /// CQ firmware to race: a directory holding `prefetch` and `dispatch`
    /// ELFs (any patched build), or the name of a known-bug variant.
    #[arg(long)]
    pub firmware: Option<String>,
    /// Seeds to run: seed-base .. seed-base + seeds (1..=10000000).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=MAX_SEEDS))]
    pub seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1, value_parser = crate::cli::seed)]
    pub seed_base: u64,
    /// Two-queue: iterations of the pattern. Random: batches of 12 commands
    /// per seed. Programs: batches of 25 programs per seed (1..=1000000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub iterations: u32,
    /// Two-queue: write/read-back pairs (stall points) per iteration on CQ1 (0..=10000).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub copies: u32,
    /// Two-queue: DRAM buffers the copies rotate over, copy c to buffer c
    /// mod N: more CQ1 traffic in flight (1..=64).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub buffers: u32,
    /// Two-queue: copies enqueued (each write and its read) before the
    /// first of their read-backs is awaited: more prefetcher pressure
    /// (1..=64).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub depth: u32,
    /// Two-queue: launches on every worker in CQ0's trace (1 is a trivial
    /// trace: fast iterations, more overlap with CQ1's copies; 1..=1000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trace_kernels: u32,
    /// Two-queue: bytes per copy (1..=16777216).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=MAX_BYTES as i64))]
    pub bytes: u32,
    /// Two-queue: DRAM page size of the copied buffer (a read relays it page
    /// by page through the prefetcher's relay scratch; a multiple of 64 up
    /// to 36800, the largest a chunk's paged write carries; at most 65536
    /// pages of --bytes).
    #[arg(long, default_value_t = 1024, value_parser = page_size)]
    pub page_size: u32,
    /// Seeded extra latency, up to this many cycles, on every NOC/PCIe transaction (0..=10000000).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=MAX_LATENCY))]
    pub jitter: u64,
    /// What-if beyond the hardware: drop the NOC/PCIe ordering rules, so
    /// jitter may reorder same-route transactions (see README).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub reorder: bool,
    /// Exact time between tiles (`SimConfig::exact_time`): an effect lands
    /// at the cycle it is due rather than at the end of a 50-cycle slice;
    /// about 1.3-1.5x the host time. A window shorter than a slice then shows
    /// as it would on the chip, and seeds replay only with the same
    /// setting. Not with core stalls or slice jitter (`--core-stall`,
    /// `--faults stall=`, `quantum-jitter=`, `strong`), which act per
    /// slice; the slice jitter the random and programs workloads draw is
    /// left out.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub exact_time: bool,
    /// Every L1 load stalls its core for its whole latency
    /// (`SimConfig::pipelined_loads` off): the model before 2026-11-30,
    /// whose replay lines (they have no `--blocking-loads`) replay only
    /// with it. By default loads are in flight until their register is
    /// needed.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub blocking_loads: bool,
    /// Link contention between NOC routers (`NocTiming::link_contention`:
    /// packets queue for each link of their path), the default since
    /// 2026-11-30. `--link-contention false` races the model before, on
    /// which replay lines without `--link-contention` were found.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = true)]
    pub link_contention: bool,
    /// Instruction caches (`SimConfig::icache`): a taken branch or jump to
    /// code a core's cache does not hold costs the miss cost, an unpublished
    /// figure. An option, not the default; seeds replay only with the same
    /// setting.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub icache: bool,
    /// Blackhole's L0 data caches (`SimConfig::l0_data_cache`): four 16-byte
    /// lines a core, not coherent, flushed by `fence`, so a firmware that
    /// polls without one reads stale copies (a seed that read one fails,
    /// "stale L0 read"). The default since 2026-11-30; `--l0-cache false`
    /// races the model before, on which replay lines without `--l0-cache`
    /// were found. Wormhole has none: either value runs the same there,
    /// and the report (`l0_cache`) and replay lines say `false`.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = true)]
    pub l0_cache: bool,
    /// A device read of host memory waits only for the earlier writes to
    /// host memory that had left its core's NIU when it issued
    /// (`NocTiming::reads_pass_unsent`), the default since 2026-12-01.
    /// `--reads-pass-unsent false` races the model before, where it waited
    /// for those still queued too (an ordering the NOC does not promise),
    /// on which replay lines without `--reads-pass-unsent` were found.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = true)]
    pub reads_pass_unsent: bool,
    /// Probability per scheduling slice that a core stalls 2000 cycles
    /// (0..=1; refused where the stalls would take over nine tenths of the
    /// cores' time: at most 0.0225 at the default 50-cycle slice).
    #[arg(long, default_value_t = 0.0, value_parser = |s: &str| crate::args::real(s, 0.0..=1.0))]
    pub core_stall: f64,
    /// Two-queue: dispatcher DELAY (cycles) on CQ0 before it stamps the
    /// marker and records its event: a slow producer widens the cross-queue
    /// window. The host's no-progress limit grows by the same amount (a
    /// delay is not a hang; 0..=10000000).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=MAX_LATENCY as i64))]
    pub delay: u32,
    /// Two-queue: dispatcher ring pages per CQ (4 KiB each, 1..=64: fewer
    /// means more credit pressure; the device says how many fit).
    #[arg(long, default_value_t = cqlab_abi::memory_map::DEFAULT_RING_PAGES,
          value_parser = clap::value_parser!(u32).range(1..=cqlab_abi::memory_map::DISPATCH_RING.size as i64 / 4096))]
    pub ring_pages: u32,
    /// Two-queue: device read latency of host memory over PCIe, in cycles (1..=10000000).
    #[arg(long, default_value_t = 750, value_parser = clap::value_parser!(u64).range(1..=MAX_LATENCY))]
    pub pcie_read_latency: u64,
    /// Two-queue: issue-queue bytes per CQ (smaller fills and wraps it
    /// sooner; the device says which sizes work). The random and programs
    /// workloads draw this and the completion size, ring pages and PCIe
    /// latency per seed instead.
    #[arg(long, default_value_t = cqlab_abi::sysmem::DEFAULT_ISSUE_QUEUE_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=MAX_QUEUE_BYTES as i64))]
    pub issue_size: u32,
    /// Two-queue: completion-queue bytes per CQ.
    #[arg(long, default_value_t = cqlab_abi::sysmem::DEFAULT_COMPLETION_QUEUE_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=MAX_QUEUE_BYTES as i64))]
    pub completion_size: u32,
    /// Device cycles without progress before a wait gives up (1000000, the
    /// driver's progress-check interval, ..=1000000000000); also how long one
    /// kernel may run (the workloads' kernels take thousands of cycles, so
    /// one spinning on corrupted args is a failure, not a long wait).
    #[arg(long, default_value_t = 5_000_000,
          value_parser = clap::value_parser!(u64).range(cqlab_driver::wait::PROGRESS_CHECK_CYCLES..=MAX_TIMEOUT))]
    pub timeout_cycles: u64,
    /// PCT schedule of this depth (Burckhardt et al.): finds races needing
    /// up to depth-1 ordering changes. 0 = the default sliced schedule (0..=64).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub pct_depth: u32,
    /// Scheduling steps (slices) PCT controls before reverting to slices
    /// (with --pct-depth; 1..=1000000000).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub pct_steps: u64,
    #[command(flatten)]
    pub host: crate::cli::HostArgs,
    /// Faults, comma-separated (repeatable): stall=P[:CYCLES], jitter=N,
    /// slow=CORE@FACTOR (CORE: prefetcherQ, dispatcherQ, workerC.R),
    /// late-doorbell=N, backpressure=N, pcie-read=N, quantum-jitter=N,
    /// lazy-drain=N (the host reads completions every N polls of a wait),
    /// or `strong` (every simulator amplifier at once; 7-22x the host time
    /// per seed). read-passes-unsent (a read of host memory passes earlier
    /// writes to host memory still queued in its NIU) is the model's
    /// default since 2026-12-01; it is accepted as before, and like any
    /// fault given it stops a two-queue seed from drawing slice jitter, so
    /// older replay lines replay.
    #[arg(long)]
    pub faults: Vec<String>,
    /// Parallel processes (each runs a share of the seeds; 1..=256).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: u32,
    /// Stop at the first failing seed.
    #[arg(long)]
    pub until_first: bool,
    /// Keep each failing seed's full hang dump (text, JSON) and trace here
    /// (created if missing; its parent must exist).
    #[arg(long)]
    pub dump_dir: Option<PathBuf>,
    #[command(flatten)]
    pub records: crate::campaign::RecordArgs,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
    /// Internal (`--jobs`): print records on stdout, nothing else.
    #[arg(long, hide = true, conflicts_with = "jobs")]
    pub child: bool,
}

impl Args {
    /// The timing model raced.
    pub(super) fn model(&self) -> Model {
        Model {
            exact_time: self.exact_time,
            pipelined_loads: !self.blocking_loads,
            icache: self.icache,
            l0_cache: self.l0_cache,
            link_contention: self.link_contention,
            reads_pass_unsent: self.reads_pass_unsent,
        }
    }
}

/// `--variant NAME`: a known-bug variant, or `none` for the normal firmware.
pub(super) fn variant(s: &str) -> Result<String, String> {
    if s == "none" || VARIANTS.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!("{s:?} is not a known-bug variant: none, {}", VARIANTS.join(", ")))
    }
}
