//! Which chip is simulated (a board and its harvesting: `soc::ChipLayout`),
//! and every latency of the model, in device cycles.
//!
//! The timing defaults are per chip ([`SimConfig::for_board`]), each with its
//! source; docs/design.md ("Timing") has the table, and `cqlab calibrate`
//! sets the model beside the published figures they come from. NOC figures
//! are in the chip's cycles (one flit per cycle: 32 bytes on Wormhole, 64 on
//! Blackhole, `ArchParams::noc.flit_bytes`); figures set by PCIe and the
//! host (PCIe latency and bandwidth, BAR costs) are nanoseconds and GB/s
//! turned into cycles at the chip's clock (Wormhole 1 GHz, Blackhole
//! 1.35 GHz).

use cqlab_abi::noc::Coord;
use cqlab_abi::soc::{Board, ChipLayout, Harvesting, LayoutError};
use thiserror::Error;

/// NOC timing: latency = 2 x `interface_cycles` + hops x `hop_cycles` +
/// the packet's flits (its data at `bytes_per_cycle`, plus a header flit:
/// `noc::packet_flits`); one way, a read pays the request trip too. Hops
/// are those of the path on the NOC's torus (`soc::route`).
#[derive(Clone, Debug, PartialEq)]
pub struct NocTiming {
    /// Cycles at each network interface (injection, ejection). Default 5.
    pub interface_cycles: u64,
    /// Cycles per router hop. Default 9.
    pub hop_cycles: u64,
    /// Link bandwidth: the chip's flit, one per cycle (Wormhole 32 B,
    /// Blackhole 64 B).
    pub bytes_per_cycle: u64,
    /// The rate a multicast write's data leaves its NIU. Fitted to
    /// tt-metal's one-to-all figures (`ideal_performance.md`: Wormhole
    /// 15 B/cycle, Blackhole 24 B/cycle, against 29 and 60 unicast); the
    /// sources do not say what limits it. Wormhole 16, Blackhole 24.
    pub multicast_bytes_per_cycle: u64,
    /// The rate of a multicast write that follows a linked one from the
    /// same NIU (`NOC_CMD_VC_LINKED`: the path stays set up between the
    /// packets of one transaction). Fitted to tt-metal's one-to-all linked
    /// figures (`ideal_performance.md` at 33def06: Wormhole 22 B/cycle,
    /// Blackhole 41, the first packet of 16 paying the unlinked rate).
    /// Wormhole 24, Blackhole 47.
    pub linked_multicast_bytes_per_cycle: u64,
    /// The rate a read's response data leaves the responding NIU, in bytes
    /// per 1000 cycles (at most the link's). Fitted to tt-metal's
    /// one-from-one at 256 transactions (`perf_plots/wormhole_b0/One from
    /// One Packet Sizes.md`: 28.7 B/cycle at 8 KiB where one-to-one reaches
    /// 31.1; the sources do not say what limits it): Wormhole 28 700.
    /// Blackhole's reads reach its writes' rate (61.1 against 61.8 B/cycle
    /// at 8 KiB): the link's.
    pub read_response_bytes_per_kcycle: u64,
    /// The fewest cycles between the starts of two read responses leaving
    /// one responding NIU, whatever their size (a read's own latency does
    /// not grow: only the next response waits). Fitted to tt-metal's
    /// Blackhole one-from-one (`perf_plots/blackhole/One from One Packet
    /// Sizes.md` at 14dd89ae): 64 B to 2 KiB at 256 transactions take
    /// 9,279-9,311 cycles, a read every ~36 cycles whatever its size,
    /// where its writes take one every ~25 (`One to One Packet Sizes.md`)
    /// and the model issued a read every ~22; the sources do not say what
    /// limits it, nor whether the requester or the responder. Blackhole
    /// 35, Wormhole 0 (its small reads keep pace with its writes).
    pub read_response_min_cycles: u64,
    /// Contention on the links between routers: each link carries one
    /// packet at a time and packets queue for it (`links`; tt-isa
    /// `NoC/RoutingPaths.md`, "Congestion"). On by default since
    /// 2026-11-30 (issue 27's calibrated model; the published figures'
    /// fit is the same with it). Off (`embedded:no-contention`), only a
    /// NIU's injection, a responder, DRAM and PCIe carry one packet at a
    /// time (`noc` module doc): the model before, whose named seeds
    /// replay only off.
    pub link_contention: bool,
    /// Rule 4 (`noc` module doc): a read of host memory waits only for the
    /// earlier writes to host memory that had *left* its NIU when it
    /// issued (as an atomic, rule 2), not for those still queued behind
    /// other packets. The NOC sources promise no more: a read request is a
    /// packet of its own command buffer and does not queue behind write
    /// data (tt-metal `docs/source/tt-metalium/tt_metal/apis/kernel_apis/
    /// data_movement/ordering.rst`: writes on one NOC and VC keep program
    /// order; read responses take a dynamic VC, "no way to control
    /// ordering for data reads"). On by default since
    /// 2026-12-01. Off (`embedded:reads-wait-unsent`), a read also waits
    /// for the writes still queued in its NIU: the model before, which
    /// hid `prefetch-chunk-refill-before-sent` and on which seeds named
    /// before replay.
    pub reads_pass_unsent: bool,
}

/// The host's share of a device read of host memory: the PCIe tile to host
/// memory and back. tt-isa-documentation `WormholeB0/PCIExpressTile`
/// measures a whole read, from the core's request to its data, at about
/// 690 ns at least; this is that less the NOC trips to and from the PCIe
/// tile and the data time, chosen so that `cqlab calibrate`'s 32 B read
/// lands near it (751 ns on a Wormhole n150, 1.09x).
pub const PCIE_READ_LATENCY_NS: f64 = 450.0;

/// PCIe timing for device accesses to host sysmem (on top of the NOC trip
/// to the PCIe endpoint), at the chip's clock.
#[derive(Clone, Debug, PartialEq)]
pub struct PcieTiming {
    /// Device read of host memory, round trip: [`PCIE_READ_LATENCY_NS`].
    pub read_latency_cycles: u64,
    /// Read bandwidth in bytes per 1000 cycles: 24.5 GB/s
    /// (tt-isa-documentation `WormholeB0/PCIExpressTile`).
    pub read_bytes_per_kcycle: u64,
    /// Device write to host memory until visible: 260 ns.
    pub write_latency_cycles: u64,
    /// Write bandwidth in bytes per 1000 cycles: 26 GB/s.
    pub write_bytes_per_kcycle: u64,
}

/// A tile whose cores execute `factor` times slower than the clock: in
/// every scheduling slice each runs only `1/factor` of the slice's cycles
/// and is stalled for the rest (its `mcycle` still follows device time).
#[derive(Clone, Debug, PartialEq)]
pub struct SlowCore {
    /// The tile's translated coordinates.
    pub core: Coord,
    /// >= 1.0; 1.0 is full speed.
    pub factor: f64,
}

/// Seeded perturbations for race hunting. All off by default.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Faults {
    /// Each scheduling slice, each running core stalls with this probability...
    pub core_stall_prob: f64,
    /// ...for this many cycles.
    pub core_stall_cycles: u64,
    /// Extra latency, uniform in `0..=noc_jitter_cycles`, on every NOC and
    /// PCIe transaction.
    pub noc_jitter_cycles: u64,
    /// Per-core slowdown (see [`SlowCore`]). A slowed core is never parked
    /// by idle fast-forward, so results stay identical with it on or off.
    pub slow_cores: Vec<SlowCore>,
    /// Late doorbell: when non-zero, host BAR writes into the device (L1,
    /// DRAM, core registers; not sysmem, which is host memory) are posted
    /// and take effect only after a seeded delay uniform in
    /// `0..=host_write_delay_cycles` device cycles, in issue order (a write
    /// never lands before an earlier one). A host read through
    /// [`crate::chip::Chip::host_read`] first lands every posted write, as
    /// PCIe reads do not pass posted writes.
    pub host_write_delay_cycles: u64,
    /// Back-pressure: each NOC write packet waits, uniform in
    /// `0..=write_backpressure_cycles`, before its first flit leaves its
    /// core, as when the network ahead is congested. Its source is read
    /// that much later, so a buffer reused before its writes have left
    /// (rather than before they were issued) is overwritten under them.
    pub write_backpressure_cycles: u64,
    /// What-if, beyond the hardware: drop the NOC/PCIe ordering rules
    /// (`noc` module doc, rules 1, 2 and 4), so jitter can make a write
    /// overtake an earlier one on the same route, an atomic overtake sent
    /// writes, and a read of host memory pass earlier posted writes. Real
    /// chips keep those in order; use it to see what firmware would need if
    /// they did not. Draws no random numbers of its own.
    pub reorder: bool,
}

/// The scheduler's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Schedule {
    /// Every core runs every slice, in a seeded rotation order.
    #[default]
    Slices,
    /// PCT (probabilistic concurrency testing, Burckhardt et al. 2010)
    /// adapted to timed cores, for deep races. From the seed: every core
    /// gets a distinct random priority (`depth` .. `depth + cores - 1`), and
    /// `depth - 1` change points are drawn uniformly from slices
    /// `1..=steps`. During the first `steps` slices (the scheduling steps),
    /// each slice runs the highest-priority *enabled* core alone; every
    /// other enabled core is held (stalled for the slice). A core is
    /// *waiting* — not enabled, and left to poll — when its previous slice
    /// had no side effect (no store, no counter read: a pure polling loop),
    /// and enabled again as soon as a slice of polling has one. Cores in
    /// reset or halted never run. At the i-th change point the core that
    /// ran that slice drops to priority `depth - 1 - i` (below every initial
    /// priority). After `steps` slices the schedule reverts to `Slices`, so
    /// a priority order that livelocks (a high-priority core spinning with
    /// side effects) cannot hang the device forever.
    Pct { depth: u32, steps: u64 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct SimConfig {
    /// Fixes scheduling quanta, jitter and faults: same seed, same run.
    pub seed: u64,
    /// The card whose chip is simulated.
    pub board: Board,
    /// What that chip has fused off (`Board::default_harvesting` unless told).
    pub harvesting: Harvesting,
    /// Extra cycles of a DRAM access beyond the NOC trip. Default 100.
    pub dram_latency_cycles: u64,
    /// The rate one DRAM bank streams a packet's data to or from the NOC,
    /// in bytes per 1000 cycles; a bank carries one packet's data at a time
    /// (`noc::Endpoints`). Wormhole 24 000: 24 GB/s per GDDR6 channel at
    /// 1 GHz, two channels a DRAM tile (tt-isa-documentation
    /// `WormholeB0/DRAMTile`; `ArchParams::gddr_channel_bytes`); tt-metal measures
    /// 22 B/cycle reading and 21 writing from one core. Blackhole 34 000:
    /// fitted to tt-metal's one-core figures (33 B/cycle read, 34 write),
    /// below a bank's 64 GB/s (47 B/cycle at 1.35 GHz), which takes several
    /// requesters to reach and is not modelled.
    pub dram_bytes_per_kcycle: u64,
    /// Host memory the PCIe tile reaches (from the chip's host-memory base).
    /// Default 64 MiB.
    pub sysmem_size: usize,
    /// Cycles each core runs per scheduling slice before others catch up;
    /// cross-core effects (NOC deliveries) become visible at slice ends
    /// (unless `exact_time`).
    /// Default 50: `cqlab bench dispatch` gives the same figures at 25, 50
    /// and 100, while at 200 (the default until then) a slice's delay on
    /// cross-core hand-offs showed (traced full-grid dispatch 679 cycles
    /// per program against 562), at no measurable cost in host time.
    pub quantum_cycles: u64,
    /// Each slice lasts `quantum_cycles` plus a seeded `0..=quantum_jitter`.
    /// Not with `exact_time`.
    pub quantum_jitter: u64,
    /// Exact time between tiles: a slice never outlasts the least trip
    /// between two tiles (`noc::lookahead_between_tiles`, 20 cycles on both
    /// chips; under PCT the zero-hop `noc::lookahead`, 11), and a NOC
    /// delivery due inside it lands at its cycle once the cores of the
    /// tiles it touches have run to it (the other cores run the slice
    /// through; a tile's request to itself, which may land inside the
    /// slice it was issued in, stops that tile's cores at its cycle), so an
    /// effect lands at the cycle it is due whatever `quantum_cycles` is;
    /// where no core can run and nothing is in flight, time jumps to the
    /// next delivery. Each slice's rotation is keyed by its start cycle, so
    /// idle fast-forward still changes nothing. The five cores of one tile
    /// still see each other's L1 stores at slice granularity. Off by
    /// default: a dispatch run takes about 1.5x the host time
    /// (docs/performance.md), and it moves every named seed.
    pub exact_time: bool,
    /// Pipelined L1 loads: a load costs one cycle and the core goes on
    /// until an instruction reads or writes its register (tt-isa
    /// `BabyRISCV/MemoryOrdering.md`; `hart::LoadQueue`). On by default
    /// (issue 27's "loads in flight"); off (`embedded:blocking`), every L1
    /// load stalls its core for `timing::LOAD_CYCLES`, the model before
    /// 2026-11-30, whose named seeds replay only off.
    pub pipelined_loads: bool,
    /// Instruction caches, one per core (`icache`): direct-mapped 16-byte
    /// lines, 2 KiB on BRISC, TRISC0 and TRISC2, 512 B on TRISC1 and
    /// NCRISC (tt-isa `BabyRISCV/InstructionCache.md`), next-line
    /// prefetch; a taken branch or jump to a line not held costs
    /// `icache_miss_cycles`. Off by default: fetches never miss.
    pub icache: bool,
    /// Cycles a miss adds. Unpublished; 8 is the cycles of an L1 load
    /// (`timing::LOAD_CYCLES`, tt-isa `BabyRISCV/README.md`: >= 8), since
    /// a miss is one 128-bit L1 read through the same ports
    /// (tt-isa `TensixTile/L1.md`). Default 8; 0..=1000.
    pub icache_miss_cycles: u64,
    /// Blackhole's L0 data caches, one per core (`l0cache`): 4 lines of
    /// 16 B in front of L1, not coherent, flushed by `fence`; a hit costs 2
    /// cycles and returns the cached copy (tt-isa
    /// `BlackholeA0/TensixTile/BabyRISCV/README.md`). On by default on
    /// Blackhole since 2026-11-30 (off, `embedded:no-l0`: every load reads
    /// L1, the model before). Wormhole has none: refused there.
    pub l0_data_cache: bool,
    pub noc: NocTiming,
    pub pcie: PcieTiming,
    pub faults: Faults,
    /// Which core runs when (see [`Schedule`]).
    pub schedule: Schedule,
    /// Park cores spinning in pure loops (see `fastforward`); results are
    /// identical either way, only host time differs.
    pub fast_forward: bool,
    /// Host BAR access costs, charged by the chip (see [`crate::bar`]).
    pub bar: crate::bar::BarTiming,
}

impl SimConfig {
    /// `board` with its usual harvesting and the chip's timing.
    pub fn for_board(board: Board) -> Self {
        let harvesting = board.default_harvesting();
        let arch = board.arch();
        let ghz = arch.params().clock_hz as f64 / 1e9;
        let cycles = |ns: f64| (ns * ghz).round() as u64;
        // GB/s are bytes per ns: per 1000 cycles at the chip's clock.
        let per_kcycle = |gb_per_s: f64| (gb_per_s * 1000.0 / ghz).round() as u64;
        let wormhole = matches!(arch, cqlab_abi::arch::Arch::Wormhole);
        SimConfig {
            seed: 0,
            board,
            harvesting,
            dram_latency_cycles: 100,
            dram_bytes_per_kcycle: if wormhole { 24_000 } else { 34_000 },
            sysmem_size: 64 << 20,
            quantum_cycles: 50,
            quantum_jitter: 0,
            exact_time: false,
            pipelined_loads: true,
            icache: false,
            icache_miss_cycles: crate::timing::LOAD_CYCLES,
            l0_data_cache: board.arch() == cqlab_abi::arch::Arch::Blackhole,
            noc: NocTiming {
                interface_cycles: 5,
                hop_cycles: 9,
                bytes_per_cycle: arch.params().noc.flit_bytes as u64,
                multicast_bytes_per_cycle: if wormhole { 16 } else { 24 },
                linked_multicast_bytes_per_cycle: if wormhole { 24 } else { 47 },
                read_response_bytes_per_kcycle: if wormhole {
                    28_700
                } else {
                    arch.params().noc.flit_bytes as u64 * 1000
                },
                read_response_min_cycles: if wormhole { 0 } else { 35 },
                link_contention: true,
                reads_pass_unsent: true,
            },
            pcie: PcieTiming {
                read_latency_cycles: cycles(PCIE_READ_LATENCY_NS),
                read_bytes_per_kcycle: per_kcycle(24.5),
                write_latency_cycles: cycles(260.0),
                write_bytes_per_kcycle: per_kcycle(26.0),
            },
            faults: Faults::default(),
            schedule: Schedule::Slices,
            fast_forward: true,
            bar: crate::bar::BarTiming::at_clock(ghz),
        }
    }

    /// The chip: the board's layout with the harvesting applied.
    pub fn layout(&self) -> Result<ChipLayout, ConfigError> {
        ChipLayout::new(self.board, self.harvesting.clone()).map_err(ConfigError::Layout)
    }
}

impl Default for SimConfig {
    /// A Wormhole n150 with its usual harvesting.
    fn default() -> Self {
        SimConfig::for_board(Board::WormholeN150)
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    #[error("{what} must be in {min}..={max}, found {found}")]
    OutOfRange { what: &'static str, min: u64, max: u64, found: u64 },
    #[error("{what} must be a probability in 0..=1, found {found}")]
    BadProbability { what: &'static str, found: f64 },
    #[error("faults.slow_cores: the factor of core {core} must be a finite number >= 1.0, found {found}")]
    BadSlowdown { core: Coord, found: f64 },
    #[error("faults.slow_cores names {core}, which is no Tensix tile of this chip")]
    NoSuchCore { core: Coord },
    #[error(transparent)]
    Layout(LayoutError),
    #[error("quantum_jitter ({0}) varies slice lengths, which exact_time fixes: set one of them")]
    JitterWithExactTime(u64),
    #[error("schedule Pct: depth must be >= 1 and steps >= 1, found depth {depth}, steps {steps}")]
    BadPct { depth: u32, steps: u64 },
    #[error(
        "l0_data_cache: the {0}'s cores have no L0 data cache (tt-isa WormholeB0/TensixTile/BabyRISCV/README.md); \
         it is Blackhole's"
    )]
    NoL0Cache(Board),
}

/// Most cycles of any seeded delay: jitter, stalls, late doorbells,
/// back-pressure. Far past any real effect (10 ms at 1 GHz), and small
/// enough that no draw or sum of them overflows.
pub const MAX_FAULT_CYCLES: u64 = 10_000_000;

fn check(what: &'static str, found: u64, min: u64, max: u64) -> Result<(), ConfigError> {
    if (min..=max).contains(&found) {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange { what, min, max, found })
    }
}

impl SimConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.layout()?;
        let host = self.board.arch().params().bar.host_mem_size;
        check("sysmem_size", self.sysmem_size as u64, 4096, host)?;
        check("quantum_cycles", self.quantum_cycles, 1, 1 << 32)?;
        check("icache_miss_cycles", self.icache_miss_cycles, 0, 1000)?;
        check("quantum_jitter", self.quantum_jitter, 0, MAX_FAULT_CYCLES)?;
        let f = &self.faults;
        check("faults.core_stall_cycles", f.core_stall_cycles, 0, MAX_FAULT_CYCLES)?;
        check("faults.noc_jitter_cycles", f.noc_jitter_cycles, 0, MAX_FAULT_CYCLES)?;
        check("faults.host_write_delay_cycles", f.host_write_delay_cycles, 0, MAX_FAULT_CYCLES)?;
        check("faults.write_backpressure_cycles", f.write_backpressure_cycles, 0, MAX_FAULT_CYCLES)?;
        if self.l0_data_cache && self.board.arch() != cqlab_abi::arch::Arch::Blackhole {
            return Err(ConfigError::NoL0Cache(self.board));
        }
        if self.exact_time && self.quantum_jitter > 0 {
            return Err(ConfigError::JitterWithExactTime(self.quantum_jitter));
        }
        check("bar.write_bytes_per_cycle", self.bar.write_bytes_per_cycle, 1, 1 << 20)?;
        check("noc.bytes_per_cycle", self.noc.bytes_per_cycle, 1, 1 << 20)?;
        check("noc.multicast_bytes_per_cycle", self.noc.multicast_bytes_per_cycle, 1, 1 << 20)?;
        check("noc.linked_multicast_bytes_per_cycle", self.noc.linked_multicast_bytes_per_cycle, 1, 1 << 20)?;
        check(
            "noc.read_response_bytes_per_kcycle",
            self.noc.read_response_bytes_per_kcycle,
            1,
            self.noc.bytes_per_cycle * 1000,
        )?;
        check("noc.read_response_min_cycles", self.noc.read_response_min_cycles, 0, 100_000)?;
        check("dram_bytes_per_kcycle", self.dram_bytes_per_kcycle, 1, 1 << 40)?;
        check("pcie.read_bytes_per_kcycle", self.pcie.read_bytes_per_kcycle, 1, 1 << 40)?;
        check("pcie.write_bytes_per_kcycle", self.pcie.write_bytes_per_kcycle, 1, 1 << 40)?;
        let p = self.faults.core_stall_prob;
        if !(0.0..=1.0).contains(&p) {
            return Err(ConfigError::BadProbability { what: "faults.core_stall_prob", found: p });
        }
        for s in &self.faults.slow_cores {
            if !(s.factor.is_finite() && s.factor >= 1.0) {
                return Err(ConfigError::BadSlowdown { core: s.core, found: s.factor });
            }
        }
        if let Schedule::Pct { depth, steps } = self.schedule {
            if depth == 0 || steps == 0 {
                return Err(ConfigError::BadPct { depth, steps });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_limits_are_enforced() {
        assert_eq!(SimConfig::default().validate(), Ok(()));
        for board in Board::ALL {
            let cfg = SimConfig::for_board(board);
            assert_eq!(cfg.validate(), Ok(()), "{board}");
            assert_eq!(cfg.noc.bytes_per_cycle, board.arch().params().noc.flit_bytes as u64);
        }
        let bad = SimConfig { harvesting: "cols=7".parse().unwrap(), ..Default::default() };
        assert!(matches!(bad.validate(), Err(ConfigError::Layout(_))), "Wormhole harvests rows");
        let bad = SimConfig { sysmem_size: 16, ..Default::default() };
        assert!(matches!(bad.validate(), Err(ConfigError::OutOfRange { what: "sysmem_size", .. })));
        // A jitter of u64::MAX overflowed its first draw (helper-52).
        let bad = SimConfig { quantum_jitter: u64::MAX, ..Default::default() };
        assert!(matches!(bad.validate(), Err(ConfigError::OutOfRange { what: "quantum_jitter", .. })));
        let mut bad = SimConfig::default();
        bad.faults.noc_jitter_cycles = MAX_FAULT_CYCLES + 1;
        assert!(matches!(bad.validate(), Err(ConfigError::OutOfRange { what: "faults.noc_jitter_cycles", .. })));
        let mut bad = SimConfig::default();
        bad.faults.core_stall_prob = 2.0;
        assert!(matches!(bad.validate(), Err(ConfigError::BadProbability { .. })));
        let mut bad = SimConfig::default();
        bad.faults.slow_cores.push(SlowCore { core: Coord::new(18, 18), factor: 0.5 });
        assert!(matches!(bad.validate(), Err(ConfigError::BadSlowdown { .. })));
        let bad = SimConfig { schedule: Schedule::Pct { depth: 0, steps: 10 }, ..Default::default() };
        assert!(matches!(bad.validate(), Err(ConfigError::BadPct { .. })));
    }
}
