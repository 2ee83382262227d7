//! Microbenchmarks for `cqlab calibrate`, shaped like tt-metal's
//! data-movement tests (`tests/tt_metal/tt_metal/data_movement/`): a
//! hand-written RV32 program on one Tensix tile's BRISC drives its NIU as
//! tt-metal's dataflow API does (`niu_asm`), times itself with the `cycle`
//! CSR, and leaves the count in L1; the host-side ones time the chip's BAR
//! costs. Each runs on a fresh chip, so a figure depends only on the chip,
//! the benchmark and the timing model's parameters (`config`, `timing`,
//! `bar`), never on the machine.

use crate::asm::*;
use crate::chip::{Chip, SimError};
use crate::config::SimConfig;
use crate::csr;
use crate::niu_asm::NiuAsm;
use cqlab_abi::arch::niu::counter;
use cqlab_abi::arch::{tensix, Noc};
use cqlab_abi::boot::reset_jal;
use cqlab_abi::memory_map::{ENTRY_POINT, RESET_JAL, USER};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::Board;

/// Where a benchmark's data starts, on both tiles (room for the largest
/// NOC packet, 16 KiB on Blackhole).
const BUF: u32 = USER.base + 0x1000;
/// Where the program leaves its cycle count.
const OUT: u32 = USER.base + 0x400;
/// Device cycles any one benchmark may take.
const BUDGET: u64 = 50_000_000;

/// One microbenchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    /// One core writes `count` packets of `bytes` to the next Tensix tile's
    /// L1 on NOC0 and waits for their acks (tt-metal "One To One").
    OneToOne { bytes: u32, count: u32 },
    /// One core reads `count` packets of `bytes` from the next Tensix
    /// tile's L1 on NOC0 and waits for them ("One From One").
    OneFromOne { bytes: u32, count: u32 },
    /// One core multicasts `count` packets of `bytes` to every Tensix tile
    /// outside its own row (a rectangle) on NOC0 and waits for every
    /// receiver's ack ("One To All", multicast, not linked).
    OneToAll { bytes: u32, count: u32 },
    /// [`Bench::OneToAll`] as one linked transaction: every packet but the
    /// last with `NOC_CMD_VC_LINKED` ("One To All", multicast + linked).
    OneToAllLinked { bytes: u32, count: u32 },
    /// One core reads `count` packets of `bytes` from DRAM bank 0 (its
    /// NOC0 endpoint) and waits for them ("DRAM Read").
    DramRead { bytes: u32, count: u32 },
    /// One core writes `count` packets of `bytes` to DRAM bank 0 and waits
    /// for their acks ("DRAM Write").
    DramWrite { bytes: u32, count: u32 },
    /// One reader per DRAM bank, each on a Tensix tile near its bank
    /// (`bank_partners`), reads `count` packets of `bytes` from that bank alone and
    /// waits for them (the placement of tt-metal's "Saturating DRAM
    /// bandwidth" u-benchmark): all the bytes over the slowest reader's
    /// time.
    DramReadAllBanks { bytes: u32, count: u32 },
    /// [`Bench::DramReadAllBanks`] writing: each writer sends `count`
    /// packets of `bytes` to its own bank and waits for their acks.
    DramWriteAllBanks { bytes: u32, count: u32 },
    /// One read of `bytes` from the next Tensix tile on `noc`, from issue
    /// to its barrier, `count` times in turn: the mean.
    ReadRoundTrip { bytes: u32, noc: Noc, count: u32 },
    /// `count` word stores to L1 back to back: cycles per store.
    L1Stores { count: u32 },
    /// One core reads `count` packets of `bytes` of host memory through
    /// the PCIe tile and waits for them.
    PcieRead { bytes: u32, count: u32 },
    /// One core writes `count` packets of `bytes` to host memory through
    /// the PCIe tile and waits for their acks.
    PcieWrite { bytes: u32, count: u32 },
    /// One read of `bytes` of host memory, issue to barrier, `count` times
    /// in turn: the mean.
    PcieReadLatency { bytes: u32, count: u32 },
    /// The host writes `bytes` to a Tensix tile's L1 through a TLB window
    /// (a doorbell): the device time it costs.
    HostWrite { bytes: u32 },
    /// The host reads `bytes` of a Tensix tile's L1 through a TLB window.
    HostRead { bytes: u32 },
}

/// The unit a benchmark reports in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes per device cycle.
    BytesPerCycle,
    /// Device cycles.
    Cycles,
    /// Nanoseconds at the chip's clock.
    Ns,
    /// 1e9 bytes per second at the chip's clock.
    GBPerS,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::BytesPerCycle => "B/cycle",
            Unit::Cycles => "cycles",
            Unit::Ns => "ns",
            Unit::GBPerS => "GB/s",
        }
    }

    pub fn parse(s: &str) -> Option<Unit> {
        [Unit::BytesPerCycle, Unit::Cycles, Unit::Ns, Unit::GBPerS].into_iter().find(|u| u.name() == s)
    }
}

impl Bench {
    /// The unit of [`Bench::run`]'s figure.
    pub fn unit(self) -> Unit {
        match self {
            Bench::OneToOne { .. }
            | Bench::OneFromOne { .. }
            | Bench::OneToAll { .. }
            | Bench::OneToAllLinked { .. }
            | Bench::DramRead { .. }
            | Bench::DramWrite { .. } => Unit::BytesPerCycle,
            Bench::ReadRoundTrip { .. } | Bench::L1Stores { .. } => Unit::Cycles,
            Bench::PcieRead { .. }
            | Bench::PcieWrite { .. }
            | Bench::DramReadAllBanks { .. }
            | Bench::DramWriteAllBanks { .. } => Unit::GBPerS,
            Bench::PcieReadLatency { .. } | Bench::HostWrite { .. } | Bench::HostRead { .. } => Unit::Ns,
        }
    }

    /// Checks the parameters against `board`'s chip (packet size, count).
    pub fn check(self, board: Board) -> Result<(), String> {
        let max = board.arch().params().noc.max_packet;
        let (bytes, count) = match self {
            Bench::OneToOne { bytes, count }
            | Bench::OneFromOne { bytes, count }
            | Bench::OneToAll { bytes, count }
            | Bench::OneToAllLinked { bytes, count }
            | Bench::DramRead { bytes, count }
            | Bench::DramWrite { bytes, count }
            | Bench::DramReadAllBanks { bytes, count }
            | Bench::DramWriteAllBanks { bytes, count }
            | Bench::ReadRoundTrip { bytes, count, .. }
            | Bench::PcieRead { bytes, count }
            | Bench::PcieWrite { bytes, count }
            | Bench::PcieReadLatency { bytes, count } => (bytes, count),
            Bench::L1Stores { count } => (4, count),
            Bench::HostWrite { bytes } | Bench::HostRead { bytes } => (bytes, 1),
        };
        if bytes == 0 || bytes % 4 != 0 || bytes > max {
            return Err(format!("{bytes} bytes: a multiple of 4 from 4 to the chip's largest packet, {max}"));
        }
        if !(1..=256).contains(&count) {
            return Err(format!("count {count}: 1 to 256"));
        }
        Ok(())
    }

    /// Runs the benchmark on a fresh `board` chip (`SimConfig::for_board`:
    /// seed 0, no jitter): its figure in [`Bench::unit`].
    pub fn run(self, board: Board) -> Result<f64, SimError> {
        self.run_on(SimConfig::for_board(board))
    }

    /// [`Bench::run`] on a chip of `cfg` (its board's timing with options
    /// such as `exact_time` or `noc.link_contention` set).
    pub fn run_on(self, cfg: SimConfig) -> Result<f64, SimError> {
        self.check(cfg.board).map_err(|e| SimError::Bar(format!("calibrate: {e}")))?;
        let mut chip = Chip::new(cfg)?;
        let clock_ghz = chip.arch().clock_hz as f64 / 1e9;
        let tiles: Vec<Coord> = chip.tensix_tiles().collect();
        let (me, peer) = (tiles[0], tiles[1]);
        let niu = |noc| NiuAsm { chip: chip.arch(), noc, base: 5, tmp: 7 };
        let per_cycle = |bytes: u32, count: u32, cycles: u64| (bytes as u64 * count as u64) as f64 / cycles as f64;
        match self {
            Bench::OneToOne { bytes, count } => {
                let p = writes(niu(Noc::Noc0), me, NocAddr::unicast(peer, BUF as u64), 0, bytes, count);
                Ok(per_cycle(bytes, count, timed(&mut chip, me, &p)?))
            }
            Bench::OneFromOne { bytes, count } => {
                let p = reads(niu(Noc::Noc0), me, NocAddr::unicast(peer, BUF as u64), 0, bytes, count);
                Ok(per_cycle(bytes, count, timed(&mut chip, me, &p)?))
            }
            Bench::OneToAll { bytes, count } | Bench::OneToAllLinked { bytes, count } => {
                let others: Vec<Coord> = tiles.iter().copied().filter(|c| c.y != me.y).collect();
                let corner = |pick: fn(u8, u8) -> u8| {
                    let fold = |f: fn(&Coord) -> u8| others.iter().map(f).reduce(pick).unwrap_or(0);
                    Coord::new(fold(|c| c.x), fold(|c| c.y))
                };
                let dst = NocAddr::multicast(corner(u8::min), corner(u8::max), BUF as u64);
                let acks = count * others.len() as u32;
                let n = niu(Noc::Noc0);
                let mut p: Vec<u32> = (0..count)
                    .flat_map(|k| match self {
                        Bench::OneToAllLinked { .. } if k + 1 < count => n.write_linked(me, BUF, dst, bytes),
                        _ => n.write(me, BUF, dst, bytes),
                    })
                    .collect();
                p.extend(n.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, acks));
                Ok(per_cycle(bytes, count, timed(&mut chip, me, &p)?))
            }
            Bench::DramRead { bytes, count } => {
                let dram = dram_bank0(&chip);
                let p = reads(niu(Noc::Noc0), me, dram, bytes, bytes, count);
                Ok(per_cycle(bytes, count, timed(&mut chip, me, &p)?))
            }
            Bench::DramWrite { bytes, count } => {
                let dram = dram_bank0(&chip);
                let p = writes(niu(Noc::Noc0), me, dram, bytes, bytes, count);
                Ok(per_cycle(bytes, count, timed(&mut chip, me, &p)?))
            }
            Bench::DramReadAllBanks { bytes, count } | Bench::DramWriteAllBanks { bytes, count } => {
                let read = matches!(self, Bench::DramReadAllBanks { .. });
                let mut programs = Vec::new();
                for (tile, src) in bank_partners(&chip, &tiles, read)? {
                    let n = niu(Noc::Noc0);
                    let p = if read {
                        reads(n, tile, src, bytes, bytes, count)
                    } else {
                        writes(n, tile, src, bytes, bytes, count)
                    };
                    programs.push((tile, p));
                }
                let slowest = timed_together(&mut chip, &programs)?.into_iter().max().unwrap_or(0);
                Ok(per_cycle(bytes, count * programs.len() as u32, slowest) * clock_ghz)
            }
            Bench::ReadRoundTrip { bytes, noc, count } => {
                let p = reads_in_turn(niu(noc), me, NocAddr::unicast(peer, BUF as u64), bytes, count);
                Ok(timed(&mut chip, me, &p)? as f64 / count as f64)
            }
            Bench::L1Stores { count } => {
                let mut p = li(6, BUF).to_vec();
                p.extend((0..count).map(|k| sw(0, 6, 4 * k as i32)));
                Ok(timed(&mut chip, me, &p)? as f64 / count as f64)
            }
            Bench::PcieRead { bytes, count } => {
                let host = host_memory(&chip);
                let p = reads(niu(Noc::Noc0), me, host, bytes, bytes, count);
                Ok(per_cycle(bytes, count, timed(&mut chip, me, &p)?) * clock_ghz)
            }
            Bench::PcieWrite { bytes, count } => {
                let host = host_memory(&chip);
                let p = writes(niu(Noc::Noc0), me, host, bytes, bytes, count);
                Ok(per_cycle(bytes, count, timed(&mut chip, me, &p)?) * clock_ghz)
            }
            Bench::PcieReadLatency { bytes, count } => {
                let p = reads_in_turn(niu(Noc::Noc0), me, host_memory(&chip), bytes, count);
                Ok(timed(&mut chip, me, &p)? as f64 / count as f64 / clock_ghz)
            }
            Bench::HostWrite { bytes } => {
                let at = NocAddr::unicast(peer, BUF as u64);
                let before = chip.now();
                chip.timed_write(at, &vec![0x5a; bytes as usize])?;
                let after = chip.host_poll(0);
                Ok((after - before) as f64 / clock_ghz)
            }
            Bench::HostRead { bytes } => {
                let at = NocAddr::unicast(peer, BUF as u64);
                let before = chip.now();
                chip.timed_read(at, &mut vec![0; bytes as usize])?;
                Ok((chip.now() - before) as f64 / clock_ghz)
            }
        }
    }
}

/// `count` reads of `bytes` into `BUF`, the k-th from `src + k * stride`,
/// all issued before their barrier (`noc_async_read` x N,
/// `noc_async_read_barrier`), the loop shaped as tt-metal compiles it
/// (`NiuAsm::read_loop`).
fn reads(n: NiuAsm, me: Coord, src: NocAddr, stride: u32, bytes: u32, count: u32) -> Vec<u32> {
    let mut p = n.read_loop(me, src, stride, BUF, bytes, count);
    p.extend(n.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, count));
    p
}

/// `count` reads of `bytes` from `src`, each waited for before the next.
fn reads_in_turn(n: NiuAsm, me: Coord, src: NocAddr, bytes: u32, count: u32) -> Vec<u32> {
    let read =
        |k| [n.read_loop(me, src, 0, BUF, bytes, 1), n.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, k)].concat();
    (1..=count).flat_map(read).collect()
}

/// `count` writes of `bytes` from `BUF`, the k-th to `dst + k * stride`,
/// then a barrier on their acks (`NiuAsm::write_loop`).
fn writes(n: NiuAsm, me: Coord, dst: NocAddr, stride: u32, bytes: u32, count: u32) -> Vec<u32> {
    let mut p = n.write_loop(me, BUF, dst, stride, bytes, count);
    p.extend(n.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, count));
    p
}

/// One Tensix tile per DRAM bank (from `tiles`) and the bank's start as
/// that tile addresses it on NOC0, chosen as tt-metal's "Saturating DRAM
/// bandwidth" u-benchmark places its readers: the fewest NOC0 hops for
/// the data (bank to tile when `read`, tile to bank when not), and no
/// link shared with another bank's data where a tile allows it.
fn bank_partners(chip: &Chip, tiles: &[Coord], read: bool) -> Result<Vec<(Coord, NocAddr)>, SimError> {
    let layout = chip.layout();
    let mut free = tiles.to_vec();
    let mut used = std::collections::BTreeSet::new();
    let mut partners = Vec::new();
    for bank in layout.dram_banks() {
        let end = bank.worker_endpoint[0];
        let path = |tile: &Coord| {
            let at = layout.from_translated(*tile).unwrap_or(*tile);
            if read {
                layout.route(Noc::Noc0, end, at)
            } else {
                layout.route(Noc::Noc0, at, end)
            }
        };
        let shares = |tile: &Coord| path(tile).links().any(|l| used.contains(&l));
        let Some(best) = (0..free.len()).min_by_key(|&i| (shares(&free[i]), path(&free[i]).hops())) else {
            return Err(SimError::Bar("calibrate: fewer Tensix tiles than DRAM banks".into()));
        };
        let tile = free.swap_remove(best);
        used.extend(path(&tile).links());
        let at = layout.tile(end).map_or(end, |t| t.translated);
        partners.push((tile, NocAddr::unicast(at, bank.offset)));
    }
    Ok(partners)
}

/// The start of DRAM bank 0 as a worker addresses it on NOC0 (its
/// endpoint's translated coordinates).
fn dram_bank0(chip: &Chip) -> NocAddr {
    let layout = chip.layout();
    let bank = &layout.dram_banks()[0];
    let end = bank.worker_endpoint[0];
    let at = layout.tile(end).map_or(end, |t| t.translated);
    NocAddr::unicast(at, bank.offset)
}

/// Host-memory offset 0 as the chip's cores address it.
fn host_memory(chip: &Chip) -> NocAddr {
    NocAddr(chip.layout().host_mem_noc_base())
}

/// Runs `body` on BRISC of tile `me` between two reads of the `cycle` CSR
/// and returns the cycles between them.
fn timed(chip: &mut Chip, me: Coord, body: &[u32]) -> Result<u64, SimError> {
    Ok(timed_together(chip, &[(me, body.to_vec())])?[0])
}

/// [`timed`] for several tiles at once, their BRISCs released from reset
/// at the same cycle: each one's cycles, in order.
fn timed_together(chip: &mut Chip, bodies: &[(Coord, Vec<u32>)]) -> Result<Vec<u64>, SimError> {
    for (me, body) in bodies {
        let mut p = vec![csrrs(20, csr::CYCLE as u32, 0)];
        p.extend_from_slice(body);
        p.push(csrrs(21, csr::CYCLE as u32, 0));
        p.push(sub(21, 21, 20));
        p.extend(li(6, OUT));
        p.extend([sw(21, 6, 0), ECALL]);
        chip.write(NocAddr::unicast(*me, ENTRY_POINT as u64), &to_bytes(&p))?;
        chip.write_u32(NocAddr::unicast(*me, RESET_JAL as u64), reset_jal(ENTRY_POINT))?;
    }
    for (me, _) in bodies {
        chip.set_soft_reset(*me, tensix::SOFT_RESET_BRISC_ONLY_RUN)?;
    }
    let briscs: Vec<_> =
        bodies.iter().map(|&(tile, _)| crate::chip::CoreId { tile, processor: tensix::Processor::Brisc }).collect();
    chip.run_until(|c| briscs.iter().all(|&b| c.halt_of(b).is_some()), BUDGET)?;
    let mut cycles = Vec::with_capacity(bodies.len());
    for (&brisc, (me, _)) in briscs.iter().zip(bodies) {
        let halt = chip.halt_of(brisc).expect("halted");
        if halt.reason != crate::hart::HaltReason::Ecall {
            return Err(SimError::Bar(format!("calibrate: the benchmark program on {me} stopped: {halt}")));
        }
        cycles.push(chip.read_u32(NocAddr::unicast(*me, OUT as u64))? as u64);
    }
    Ok(cycles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_grows_with_packet_size_up_to_the_link() {
        for board in [Board::WormholeN150, Board::BlackholeP150a] {
            let small = Bench::OneToOne { bytes: 32, count: 16 }.run(board).unwrap();
            let large = Bench::OneToOne { bytes: 4096, count: 16 }.run(board).unwrap();
            let flit = board.arch().params().noc.flit_bytes as f64;
            assert!(small < large && large <= flit, "{board}: {small} -> {large} B/cycle, flit {flit}");
        }
    }

    #[test]
    fn a_figure_depends_on_the_model_alone() {
        let board = Board::WormholeN150;
        for b in
            [Bench::ReadRoundTrip { bytes: 32, noc: Noc::Noc1, count: 4 }, Bench::PcieRead { bytes: 2048, count: 4 }]
        {
            assert_eq!(b.run(board).unwrap(), b.run(board).unwrap(), "{b:?}");
        }
    }

    #[test]
    fn every_benchmark_completes_on_both_chips() {
        for board in [Board::WormholeN150, Board::BlackholeP150a] {
            for b in [
                Bench::OneToAll { bytes: 256, count: 2 },
                Bench::OneToAllLinked { bytes: 256, count: 2 },
                Bench::DramRead { bytes: 256, count: 2 },
                Bench::DramWrite { bytes: 256, count: 2 },
                Bench::DramReadAllBanks { bytes: 256, count: 2 },
                Bench::DramWriteAllBanks { bytes: 256, count: 2 },
                Bench::PcieRead { bytes: 256, count: 2 },
                Bench::PcieWrite { bytes: 256, count: 2 },
                Bench::PcieReadLatency { bytes: 32, count: 2 },
            ] {
                let v = b.run(board).unwrap_or_else(|e| panic!("{board} {b:?}: {e}"));
                assert!(v.is_finite() && v > 0.0, "{board} {b:?}: {v}");
            }
        }
    }

    /// A linked transaction's packets after the first keep its path and
    /// leave at the linked rate; the first pays the unlinked one.
    #[test]
    fn a_linked_multicast_is_faster_after_its_first_packet() {
        for board in [Board::WormholeN150, Board::BlackholeP150a] {
            let bytes = board.arch().params().noc.max_packet;
            let run = |b: Bench| b.run(board).unwrap_or_else(|e| panic!("{board} {b:?}: {e}"));
            let (unlinked, linked) =
                (run(Bench::OneToAll { bytes, count: 16 }), run(Bench::OneToAllLinked { bytes, count: 16 }));
            let noc = SimConfig::for_board(board).noc;
            let gain = noc.linked_multicast_bytes_per_cycle as f64 / noc.multicast_bytes_per_cycle as f64;
            assert!(linked > unlinked * 1.2 && linked < unlinked * gain, "{board}: {unlinked} -> {linked} B/cycle");
        }
    }

    /// Exact time removes only the slice's rounding: a lone read's round
    /// trip gets shorter, never below its NOC trips, and a stream of
    /// 8 KiB writes (bound by the link, not by hand-offs) keeps its rate.
    #[test]
    fn exact_time_shortens_the_round_trip_and_keeps_the_link_rate() {
        for board in [Board::WormholeN150, Board::BlackholeP150a] {
            let trip = Bench::ReadRoundTrip { bytes: 32, noc: Noc::Noc1, count: 1 };
            let cfg = SimConfig::for_board(board);
            let exact_cfg = SimConfig { exact_time: true, ..cfg.clone() };
            let (rounded, exact) = (trip.run(board).unwrap(), trip.run_on(exact_cfg.clone()).unwrap());
            let least = (crate::noc::trip(&cfg, 1, 0) + crate::noc::trip(&cfg, 1, 32)) as f64;
            assert!(least < exact && exact < rounded, "{board}: {least} < {exact} < {rounded}");
            let stream = Bench::OneToOne { bytes: 8192, count: 64 };
            let (a, b) = (stream.run(board).unwrap(), stream.run_on(exact_cfg).unwrap());
            assert!((a - b).abs() / a < 0.02, "{board}: {a} vs {b} B/cycle");
        }
    }

    /// Each bank streams on its own: readers of every bank at once move
    /// about banks x what one reader of one bank moves (a bank's rate,
    /// not one core's NOC port, bounds the figure), and no more.
    #[test]
    fn every_bank_read_at_once_multiplies_one_banks_rate() {
        for board in [Board::WormholeN150, Board::BlackholeP150a] {
            let cfg = SimConfig::for_board(board);
            let one = Bench::DramRead { bytes: 8192, count: 16 }.run(board).unwrap();
            let all = Bench::DramReadAllBanks { bytes: 8192, count: 16 }.run(board).unwrap();
            let clock_ghz = board.arch().params().clock_hz as f64 / 1e9;
            let banks = Chip::new(cfg.clone()).unwrap().layout().dram_banks().len() as f64;
            let bank_gbps = cfg.dram_bytes_per_kcycle as f64 / 1000.0 * clock_ghz;
            assert!(all > 0.9 * banks * one * clock_ghz, "{board}: {all} GB/s from {banks} banks, one {one} B/cycle");
            assert!(all <= banks * bank_gbps, "{board}: {all} GB/s above {banks} x {bank_gbps}");
        }
    }

    #[test]
    fn host_reads_cost_more_than_posted_writes() {
        let board = Board::WormholeN150;
        let w = Bench::HostWrite { bytes: 4 }.run(board).unwrap();
        let r = Bench::HostRead { bytes: 4 }.run(board).unwrap();
        assert!(w < r, "{w} {r}");
    }

    #[test]
    fn parameters_out_of_range_are_refused() {
        assert!(Bench::OneToOne { bytes: 0, count: 1 }.check(Board::WormholeN150).is_err());
        assert!(Bench::OneToOne { bytes: 16384, count: 1 }.check(Board::WormholeN150).is_err());
        assert!(Bench::OneToOne { bytes: 16384, count: 1 }.check(Board::BlackholeP150a).is_ok());
        assert!(Bench::L1Stores { count: 0 }.check(Board::WormholeN150).is_err());
    }
}
