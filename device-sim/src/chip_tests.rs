//! Chip-level tests: host access, boot, NOC writes/reads/atomics with
//! timing, register validation, debug view and determinism, on both chips.
//! Programs are hand-assembled and drive the NIUs as tt-metal does
//! (`niu_asm`); the helpers here serve the other chip test modules too.

use super::*;
use crate::asm::*;
use crate::config::{Faults, Schedule, SlowCore};
use crate::csr;
use crate::hart::HaltReason;
use crate::niu_asm::NiuAsm;
use cqlab_abi::arch::tensix::{SOFT_RESET_ALL, SOFT_RESET_BRISC_ONLY_RUN};
use cqlab_abi::boot::reset_jal;
use cqlab_abi::mailbox;
use cqlab_abi::memory_map::{code, ENTRY_POINT, NOC_ATOMIC_RET, RESET_JAL, USER};
use cqlab_abi::semaphore;
use cqlab_abi::soc::Board;
use cqlab_abi::waypoint;

/// One card of each chip.
pub(super) const BOARDS: [Board; 2] = [Board::WormholeN150, Board::BlackholeP150a];

/// `board` with 1 MiB of sysmem and 200-cycle slices: the scenarios below
/// are timed against them (a lap of three divisions fits one, a worker's
/// ack lands in the slice its gatherer halts in), whatever the default.
pub(super) fn small(board: Board) -> SimConfig {
    SimConfig { sysmem_size: 1 << 20, quantum_cycles: 200, ..SimConfig::for_board(board) }
}

pub(super) fn wh() -> SimConfig {
    small(Board::WormholeN150)
}

pub(super) fn brisc(tile: Coord) -> CoreId {
    CoreId { tile, processor: Processor::Brisc }
}

/// The chip's Tensix tiles (translated), NOC0 row by row.
pub(super) fn tiles(chip: &Chip) -> Vec<Coord> {
    chip.tensix_tiles().collect()
}

/// Boots `words` on BRISC of `tile` as the host does: the program at the
/// firmware entry, the reset `jal` at L1 0, BRISC released.
pub(super) fn boot(chip: &mut Chip, tile: Coord, words: &[u32]) {
    chip.write(NocAddr::unicast(tile, ENTRY_POINT as u64), &to_bytes(words)).unwrap();
    chip.write_u32(NocAddr::unicast(tile, RESET_JAL as u64), reset_jal(ENTRY_POINT)).unwrap();
    chip.set_soft_reset(tile, SOFT_RESET_BRISC_ONLY_RUN).unwrap();
}

pub(super) fn halted(chip: &Chip, tile: Coord) -> bool {
    chip.halt_of(brisc(tile)).is_some()
}

/// NIU sequences for `noc`, clobbering x28 and x29 (and x31 in waits).
pub(super) fn niu(chip: &Chip, noc: Noc) -> NiuAsm {
    NiuAsm { chip: chip.arch(), noc, base: 28, tmp: 29 }
}

/// Counter `index` of `tile`'s NIU on `noc`, read over the NOC as a host does.
pub(super) fn status(chip: &Chip, tile: Coord, noc: Noc, index: u32) -> u32 {
    chip.read_u32(NocAddr::unicast(tile, chip.arch().niu.status_reg(noc, index) as u64)).unwrap()
}

/// Host-memory offset `off` as the chip's cores address it.
pub(super) fn host(chip: &Chip, off: u64) -> NocAddr {
    NocAddr(chip.layout().host_mem_noc_base() | off)
}

/// NOC0 coordinates of the tile at translated `c`.
pub(super) fn noc0(chip: &Chip, c: Coord) -> Coord {
    chip.layout().resolve(Noc::Noc0, c).unwrap()
}

fn word(chip: &Chip, tile: Coord, addr: u32) -> u32 {
    chip.read_u32(NocAddr::unicast(tile, addr as u64)).unwrap()
}

/// The gather scenario's cast: four workers spread over the grid and the
/// tile they gather on.
pub(super) fn gather_cast(chip: &Chip) -> (Vec<Coord>, Coord) {
    let t = tiles(chip);
    let n = t.len();
    (vec![t[0], t[1], t[n / 3], t[n - 1]], t[n / 2])
}

/// The NOC worker `i` of the gather uses (both NOCs are exercised).
fn gather_noc(i: usize) -> Noc {
    if i % 2 == 0 {
        Noc::Noc0
    } else {
        Noc::Noc1
    }
}

/// Worker `i` at `me`: burns a coordinate-dependent number of cycles,
/// writes its packed coordinates to slot `i` of the gatherer `d`, waits for
/// the ack, increments `d`'s semaphore 0 (`noc_semaphore_inc`), waits for
/// the atomic's response, halts.
fn worker_program(chip: &Chip, me: Coord, d: Coord, i: usize) -> Vec<u32> {
    let niu = niu(chip, gather_noc(i));
    let slot = USER.base + 0x40;
    let mut p = li(8, (me.packed() & 0x7f) * 8 + 1).to_vec();
    p.extend([addi(8, 8, -1), bne(8, 0, -4)]);
    p.extend(li(6, slot));
    p.extend(li(5, me.packed()));
    p.push(sw(5, 6, 0));
    p.extend(niu.write(me, slot, NocAddr::unicast(d, (USER.base + 4 * i as u32) as u64), 4));
    p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
    p.extend(niu.atomic_inc(me, NocAddr::unicast(d, semaphore::addr(0) as u64), 1, NOC_ATOMIC_RET));
    p.extend(niu.wait_counter(counter::NIU_MST_ATOMIC_RESP_RECEIVED, 1));
    p.push(ECALL);
    p
}

/// Gatherer: waits for its semaphore 0 (an L1 word) to reach `n`, sums the
/// `n` slots at USER.base, stores the sum and the cycle at USER.base +
/// 0x400, halts.
fn gatherer_program(n: i32) -> Vec<u32> {
    let mut p = li(6, semaphore::addr(0)).to_vec();
    p.extend([addi(8, 0, n), lw(7, 6, 0), bne(7, 8, -4)]);
    p.extend([addi(9, 0, 0), addi(11, 0, n)]);
    p.extend(li(6, USER.base));
    p.extend([lw(12, 6, 0), add(9, 9, 12), addi(6, 6, 4), addi(11, 11, -1), bne(11, 0, -16)]);
    p.extend(li(6, USER.base + 0x400));
    p.extend([sw(9, 6, 0), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4), ECALL]);
    p
}

pub(super) fn gather(cfg: SimConfig) -> (Chip, u64) {
    let mut chip = Chip::new(cfg).unwrap();
    let (workers, d) = gather_cast(&chip);
    for (i, &w) in workers.iter().enumerate() {
        let p = worker_program(&chip, w, d, i);
        boot(&mut chip, w, &p);
    }
    boot(&mut chip, d, &gatherer_program(workers.len() as i32));
    let t = chip.run_until(|c| halted(c, d) && workers.iter().all(|&w| halted(c, w)), 1_000_000).unwrap();
    (chip, t)
}

#[test]
fn workers_gather_through_noc_writes_and_atomics_on_both_chips_and_nocs() {
    for board in BOARDS {
        let (mut chip, _) = gather(small(board));
        let (workers, d) = gather_cast(&chip);
        let expected: u32 = workers.iter().map(|c| c.packed()).sum();
        assert_eq!(word(&chip, d, USER.base + 0x400), expected, "{board}");
        assert_eq!(word(&chip, d, semaphore::addr(0)), 4, "{board}: the semaphore is an L1 word");
        let dbg = chip.core_debug(brisc(d)).unwrap();
        assert_eq!(dbg.halt.map(|h| h.reason), Some(HaltReason::Ecall), "{dbg}");
        assert_eq!(dbg.semaphores[0], 4);
        // The gatherer saw all four increments only after real NOC latency.
        let finished_at = word(&chip, d, USER.base + 0x404) as u64;
        let nearest = workers
            .iter()
            .enumerate()
            .map(|(i, &w)| chip.layout().hop_count(gather_noc(i), noc0(&chip, w), noc0(&chip, d)))
            .min()
            .unwrap();
        assert!(finished_at > 2 * trip(chip.config(), nearest, 4), "{board}: finished at {finished_at}");
        let mut old_values = Vec::new();
        for (i, &w) in workers.iter().enumerate() {
            let dbg = chip.core_debug(brisc(w)).unwrap();
            assert_eq!(dbg.halt.map(|h| h.reason), Some(HaltReason::Ecall), "{dbg}");
            let noc = gather_noc(i);
            let c = |index| status(&chip, w, noc, index);
            assert_eq!((c(counter::NIU_MST_NONPOSTED_WR_REQ_SENT), c(counter::NIU_MST_WR_ACK_RECEIVED)), (1, 1));
            assert_eq!((c(counter::NIU_MST_NONPOSTED_ATOMIC_SENT), c(counter::NIU_MST_ATOMIC_RESP_RECEIVED)), (1, 1));
            assert_eq!(c(counter::reqs_outstanding_id(0)), 0, "nothing outstanding");
            let other = if noc == Noc::Noc0 { Noc::Noc1 } else { Noc::Noc0 };
            assert_eq!(status(&chip, w, other, counter::NIU_MST_CMD_ACCEPTED), 0, "the other NIU stayed idle");
            old_values.push(word(&chip, w, NOC_ATOMIC_RET));
        }
        old_values.sort();
        assert_eq!(old_values, [0, 1, 2, 3], "each atomic returned the value it replaced");
        let received: u32 =
            Noc::ALL.iter().map(|&n| status(&chip, d, n, counter::NIU_SLV_NONPOSTED_ATOMIC_RECEIVED)).sum();
        assert_eq!(received, 4);
        assert_eq!(chip.in_flight(), 0);
    }
}

#[test]
fn same_seed_same_run_and_other_seeds_differ_on_both_chips() {
    for board in BOARDS {
        let noisy = |seed| SimConfig {
            seed,
            quantum_cycles: 64,
            quantum_jitter: 50,
            faults: Faults { core_stall_prob: 0.3, core_stall_cycles: 40, noc_jitter_cycles: 30, ..Default::default() },
            ..small(board)
        };
        let (mut a, ta) = gather(noisy(1));
        let (mut b, tb) = gather(noisy(1));
        assert_eq!((a.digest(), ta), (b.digest(), tb), "{board}: same seed must replay bit-identically");
        let (mut c, _) = gather(noisy(2));
        assert_ne!(a.digest(), c.digest(), "{board}: the seed drives quanta, stalls and jitter");
    }
}

#[test]
fn noc_read_from_dram_and_write_to_host_memory() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let w = tiles(&chip)[5];
        let bank = chip.layout().dram_banks()[1];
        let dram = chip.layout().tile(bank.worker_endpoint_on(Noc::Noc0)).unwrap().translated;
        let from = NocAddr::unicast(dram, bank.offset + 0x1000);
        let payload: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(7)).collect();
        chip.write(from, &payload).unwrap();
        let niu = niu(&chip, Noc::Noc0);
        let buf = USER.base + 0x100;
        let mut p = niu.read(w, from, buf, 64, 0);
        p.extend(niu.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, 1));
        p.extend(niu.write(w, buf, host(&chip, 0x2000), 64));
        p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
        p.push(ECALL);
        boot(&mut chip, w, &p);
        let t = chip.run_until(|c| halted(c, w), 100_000).unwrap();
        assert_eq!(&chip.sysmem()[0x2000..0x2040], &payload[..], "{board}");
        let cfg = chip.config();
        let minimum = cfg.dram_latency_cycles + cfg.pcie.write_latency_cycles;
        assert!(t > minimum, "{board}: round trips took {t} cycles, expected more than {minimum}");
        assert_eq!(chip.dram_traffic(), DramTraffic { read_bytes: 64, write_bytes: 0 });
    }
}

#[test]
fn host_access_reaches_l1_registers_dram_and_host_memory() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let p = chip.arch();
        let t = tiles(&chip);
        let w = t[1];
        let at = |a: u32| NocAddr::unicast(w, a as u64);
        chip.write_u32(at(USER.base), 0xfeed).unwrap();
        assert_eq!(chip.read_u32(at(USER.base)).unwrap(), 0xfeed);
        chip.write_u32(at(semaphore::addr(3)), 9).unwrap();
        assert_eq!(chip.core_debug(brisc(w)).unwrap().semaphores[3], 9, "semaphores are L1 words");
        assert_eq!(chip.read_u32(at(tensix::SOFT_RESET_0)).unwrap(), SOFT_RESET_ALL, "cores power on held");
        // NOC_ID_LOGICAL holds the tile's translated coordinates; NIU_CFG_0
        // says translation is on; NOC_NODE_ID is the cores' (command buffers).
        let logical = chip.read_u32(at(p.niu.cfg_reg(Noc::Noc0, p.niu.cfg.noc_id_logical))).unwrap();
        assert_eq!(logical, (w.y as u32) << 6 | w.x as u32, "{board}");
        let cfg0 = chip.read_u32(at(p.niu.cfg_reg(Noc::Noc1, p.niu.cfg.niu_cfg_0))).unwrap();
        assert_ne!(cfg0 & cqlab_abi::arch::niu::niu_cfg_0::NOC_ID_TRANSLATE_EN, 0);
        let bank = chip.layout().dram_banks()[0];
        let dram = chip.layout().tile(bank.worker_endpoint_on(Noc::Noc0)).unwrap().translated;
        chip.write_u32(NocAddr::unicast(dram, bank.offset + 8), 5).unwrap();
        assert_eq!(chip.read_u32(NocAddr::unicast(dram, bank.offset + 8)).unwrap(), 5);
        // Every endpoint tile of a DRAM channel serves the same memory.
        let ports: Vec<Coord> = chip
            .layout()
            .tiles()
            .iter()
            .filter(|t| matches!(t.kind, TileKind::Dram { bank: b, .. } if b == bank.channel))
            .map(|t| t.translated)
            .collect();
        assert_eq!(ports.len(), chip.layout().descriptor().dram[bank.channel as usize].len(), "{board}");
        for &port in &ports {
            assert_eq!(chip.read_u32(NocAddr::unicast(port, bank.offset + 8)).unwrap(), 5, "{board}: {port}");
        }
        chip.write_u32(host(&chip, 16), 6).unwrap();
        assert_eq!(chip.sysmem()[16], 6);
        // A multicast from the host writes every Tensix tile of the rectangle.
        let (s, e) = (t[0], Coord::new(t[0].x + 1, t[0].y + 1));
        chip.write_u32(NocAddr::multicast(s, e, USER.base as u64 + 8), 77).unwrap();
        let inside = |c: &Coord| (s.x..=e.x).contains(&c.x) && (s.y..=e.y).contains(&c.y);
        assert_eq!(t.iter().filter(|c| inside(c)).count(), 4, "{board}: a 2x2 rectangle of Tensix tiles");
        for c in &t {
            let v = chip.read_u32(NocAddr::unicast(*c, USER.base as u64 + 8)).unwrap();
            assert_eq!(v, if inside(c) { 77 } else { 0 }, "{board}: {c}");
        }
        // Errors say where and why.
        let err = chip.write_u32(NocAddr::unicast(Coord::new(60, 60), 0), 1).unwrap_err();
        assert!(matches!(err, SimError::Refused { reason: "no tile answers to these coordinates", .. }), "{err}");
        let past_l1 = chip.write(at(p.l1_size - 4), &[0; 8]).unwrap_err();
        assert!(past_l1.to_string().contains(&format!("{:#x}", p.l1_size - 4)), "{past_l1}");
        // Above 4 GiB a Tensix tile has nothing, whatever the access's size.
        let high = chip.read_u32(NocAddr::unicast(t[0], 1 << 32)).unwrap_err();
        assert!(matches!(high, SimError::Refused { reason, .. } if reason.contains("nothing above 4 GiB")), "{high}");
        let cmd = chip.write_u32(at(p.niu.cmd_buf_base(Noc::Noc0, 0)), 1).unwrap_err();
        assert!(matches!(cmd, SimError::Register { reason, .. } if reason.contains("command buffers")), "{cmd}");
        // Named as requests name the tile, and as the layout places it.
        let noc0 = chip.layout().tiles().iter().find(|l| l.translated == w).unwrap().noc0;
        assert!(cmd.to_string().starts_with(&format!("tile {w} (NOC0 tile {noc0}): register")), "{cmd}");
        let channel = chip.layout().descriptor().dram_bank_size;
        let beyond = chip.read_u32(NocAddr::unicast(dram, channel)).unwrap_err();
        assert!(matches!(beyond, SimError::Refused { .. }), "{beyond}");
        let sysmem = chip.read_u32(host(&chip, 1 << 20)).unwrap_err();
        assert!(sysmem.to_string().contains("host memory"), "{sysmem}");
        assert!(chip.read(NocAddr::multicast(s, e, 0), &mut [0; 4]).is_err(), "reads are unicast");
    }
}

#[test]
fn reset_holds_cores_and_release_starts_brisc_through_the_reset_jal() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let w = tiles(&chip)[0];
        let counter = NocAddr::unicast(w, USER.base as u64);
        let mut p = li(6, USER.base).to_vec();
        p.extend([lw(7, 6, 0), addi(7, 7, 1), sw(7, 6, 0), jal(0, -12)]);
        chip.write(NocAddr::unicast(w, ENTRY_POINT as u64), &to_bytes(&p)).unwrap();
        chip.write_u32(NocAddr::unicast(w, RESET_JAL as u64), reset_jal(ENTRY_POINT)).unwrap();
        chip.advance(1000);
        assert_eq!(chip.read_u32(counter).unwrap(), 0, "held in reset");
        chip.set_soft_reset(w, SOFT_RESET_BRISC_ONLY_RUN).unwrap();
        chip.advance(1000);
        let n = chip.read_u32(counter).unwrap();
        assert!(n > 50, "{board}: ran {n} iterations");
        for p in [Processor::Ncrisc, Processor::Trisc0, Processor::Trisc1, Processor::Trisc2] {
            let core = chip.core(CoreId { tile: w, processor: p }).unwrap();
            assert!(core.in_reset, "{p} stays held");
        }
        chip.set_soft_reset(w, SOFT_RESET_ALL).unwrap();
        chip.advance(1000);
        assert_eq!(chip.read_u32(counter).unwrap(), n, "held again");
        assert_eq!(chip.core(brisc(w)).unwrap().hart.cycle(), chip.now(), "counters track device time");
    }
}

/// BRISC points NCRISC and TRISC1 at their code with the reset-PC
/// overrides and releases them (as tt-metal's worker firmware does); each
/// leaves a mark. The host may write the overrides on Blackhole only.
#[test]
fn brisc_releases_subordinates_at_their_reset_pc_overrides() {
    for board in BOARDS {
        let mut chip = Chip::new(small(board)).unwrap();
        let p = chip.arch();
        let w = tiles(&chip)[2];
        let released = [Processor::Ncrisc, Processor::Trisc1];
        let mark = |q: Processor| USER.base + 4 * q.index() as u32;
        let mut brisc_prog = Vec::new();
        for q in released {
            let (pc, enable, bit) = p.tensix.reset_pc.for_processor(q).unwrap();
            brisc_prog.extend(li(6, pc));
            brisc_prog.extend(li(7, code(q).base));
            brisc_prog.push(sw(7, 6, 0));
            brisc_prog.extend(li(6, enable));
            brisc_prog.push(lw(7, 6, 0));
            brisc_prog.extend(li(8, bit));
            brisc_prog.extend([r_type(0x33, 0, 6, 7, 7, 8), sw(7, 6, 0)]); // or x7, x7, x8
        }
        let hold = released.iter().fold(SOFT_RESET_BRISC_ONLY_RUN, |v, q| v & !q.soft_reset_mask());
        brisc_prog.extend(li(6, tensix::SOFT_RESET_0));
        brisc_prog.extend(li(7, hold));
        brisc_prog.extend([sw(7, 6, 0), ECALL]);
        for q in released {
            let mut sub = li(6, mark(q)).to_vec();
            sub.extend(li(7, 0x100 + q.index() as u32));
            sub.extend([sw(7, 6, 0), ECALL]);
            chip.write(NocAddr::unicast(w, code(q).base as u64), &to_bytes(&sub)).unwrap();
        }
        boot(&mut chip, w, &brisc_prog);
        chip.advance(2000);
        for q in Processor::ALL {
            let core = chip.core(CoreId { tile: w, processor: q }).unwrap();
            if q == Processor::Brisc || released.contains(&q) {
                assert_eq!(core.hart.halted().map(|h| h.reason), Some(HaltReason::Ecall), "{board} {q}");
            } else {
                assert!(core.in_reset, "{board}: {q} stays held");
            }
        }
        for q in released {
            assert_eq!(word(&chip, w, mark(q)), 0x100 + q.index() as u32, "{board}: {q} ran its own code");
        }
        assert_eq!(word(&chip, w, tensix::SOFT_RESET_0), hold);
        let (pc, ..) = p.tensix.reset_pc.for_processor(Processor::Ncrisc).unwrap();
        let host_write = chip.write_u32(NocAddr::unicast(w, pc as u64), 0x3000);
        match board.arch() {
            cqlab_abi::arch::Arch::Wormhole => {
                let e = host_write.unwrap_err();
                assert!(e.to_string().contains("not reachable over the NOC"), "{e}");
            }
            cqlab_abi::arch::Arch::Blackhole => host_write.unwrap(),
        }
    }
}

#[test]
fn ncrisc_cannot_reach_wormholes_reset_pc_overrides() {
    let mut chip = Chip::new(wh()).unwrap();
    let p = chip.arch();
    let w = tiles(&chip)[0];
    let (pc, _, _) = p.tensix.reset_pc.for_processor(Processor::Trisc0).unwrap();
    let mut sub = li(6, pc).to_vec();
    sub.extend([sw(0, 6, 0), ECALL]);
    chip.write(NocAddr::unicast(w, cqlab_abi::arch::tensix::NCRISC_DEFAULT_RESET_PC as u64), &to_bytes(&sub)).unwrap();
    chip.set_soft_reset(w, SOFT_RESET_ALL & !Processor::Ncrisc.soft_reset_mask()).unwrap();
    chip.advance(500);
    let halt = chip.core(CoreId { tile: w, processor: Processor::Ncrisc }).unwrap().hart.halted().unwrap();
    assert!(
        matches!(halt.reason, HaltReason::Rejected { addr, reason } if addr == pc && reason.contains("NCRISC")),
        "{halt:?}"
    );
}

#[test]
fn debug_view_shows_waypoint_pc_and_recent_pcs() {
    let mut chip = Chip::new(wh()).unwrap();
    let w = tiles(&chip)[3];
    let mut p = li(6, mailbox::WAYPOINT).to_vec();
    p.extend(li(7, waypoint::HQW.0));
    p.extend([sw(7, 6, 0), jal(0, 0)]);
    boot(&mut chip, w, &p);
    chip.advance(500);
    let dbg = chip.core_debug(brisc(w)).unwrap();
    assert_eq!(dbg.waypoint, waypoint::HQW);
    assert_eq!(dbg.pc, ENTRY_POINT + 20);
    assert_eq!(dbg.last_pcs.last(), Some(&(ENTRY_POINT + 20)));
    assert!(dbg.halt.is_none() && !dbg.in_reset);
    let text = dbg.to_string();
    assert!(text.contains("waypoint 'HQW'") && text.contains("fetch-queue") && text.contains("brisc"), "{text}");
    assert!(chip.core_debug(brisc(Coord::new(60, 60))).is_none());
    let ncrisc = chip.core_debug(CoreId { tile: w, processor: Processor::Ncrisc }).unwrap();
    assert!(ncrisc.in_reset && ncrisc.noc == Noc::Noc1, "{ncrisc}");
}

#[test]
fn invalid_noc_requests_halt_the_core_with_the_reason() {
    for board in BOARDS {
        // A zero-length write.
        let mut chip = Chip::new(small(board)).unwrap();
        let t = tiles(&chip);
        let w = t[0];
        let niu = niu(&chip, Noc::Noc0);
        let mut p = niu.write(w, USER.base, NocAddr::unicast(t[1], USER.base as u64), 0);
        p.push(ECALL);
        boot(&mut chip, w, &p);
        chip.advance(300);
        let h = chip.core_debug(brisc(w)).unwrap().halt.unwrap();
        assert!(matches!(h.reason, HaltReason::Rejected { reason, .. } if reason.contains("NOC_AT_LEN_BE")), "{h}");
        // A target with no tile is refused at issue, not lost in flight.
        let mut chip = Chip::new(small(board)).unwrap();
        let nowhere = Coord::new(60, 60);
        let mut p = niu.write(w, USER.base, NocAddr::unicast(nowhere, 0), 4);
        p.push(ECALL);
        boot(&mut chip, w, &p);
        chip.advance(300);
        let h = chip.core_debug(brisc(w)).unwrap().halt.unwrap();
        assert!(
            matches!(h.reason, HaltReason::BadNocRequest { reason: "no tile answers to these coordinates", coord, .. }
                if coord == nowhere),
            "{h}"
        );
        // A read whose return address names another tile.
        let mut chip = Chip::new(small(board)).unwrap();
        let mut p = niu.read(t[1], NocAddr::unicast(t[2], 0x1000), USER.base, 4, 0);
        p.push(ECALL);
        boot(&mut chip, w, &p);
        chip.advance(300);
        let h = chip.core_debug(brisc(w)).unwrap().halt.unwrap();
        assert!(matches!(h.reason, HaltReason::BadNocRequest { reason, .. } if reason.contains("NOC_RET_ADDR")), "{h}");
    }
}

#[test]
fn load_elf_places_segments_and_rejects_what_does_not_fit() {
    let mut chip = Chip::new(wh()).unwrap();
    let w = tiles(&chip)[0];
    let elf = crate::testelf::program(ENTRY_POINT, &[addi(10, 0, 9), ECALL], false);
    let image = ElfImage::parse(&elf).unwrap();
    chip.load_elf(w, &image).unwrap();
    chip.write_u32(NocAddr::unicast(w, RESET_JAL as u64), reset_jal(image.entry)).unwrap();
    chip.set_soft_reset(w, SOFT_RESET_BRISC_ONLY_RUN).unwrap();
    chip.advance(100);
    let dbg = chip.core_debug(brisc(w)).unwrap();
    assert_eq!((dbg.regs[10], dbg.halt.map(|h| h.reason)), (9, Some(HaltReason::Ecall)));
    let far = ElfImage::parse(&crate::testelf::program(0x8000_0000, &[ECALL], false)).unwrap();
    assert!(matches!(chip.load_elf(w, &far), Err(SimError::Elf { .. })));
    let dram = chip.layout().tile(chip.layout().dram_banks()[0].worker_endpoint[0]).unwrap().translated;
    assert!(matches!(chip.load_elf(dram, &image), Err(SimError::NotATile { .. })));
}

#[test]
fn run_until_times_out_with_the_device_time() {
    let mut chip = Chip::new(wh()).unwrap();
    let err = chip.run_until(|_| false, 1000).unwrap_err();
    assert_eq!(err, SimError::Timeout { budget: 1000, now: 1000 });
}

#[test]
fn each_board_builds_five_cores_per_unharvested_tensix_tile() {
    for board in [Board::WormholeN150, Board::WormholeN300, Board::BlackholeP100a, Board::BlackholeP150a] {
        let mut chip = Chip::new(SimConfig::for_board(board)).unwrap();
        let workers = chip.layout().workers();
        assert_eq!(chip.cores().count(), 5 * workers.len(), "{board}");
        assert_eq!(tiles(&chip).len(), workers.len());
        for c in workers {
            let t = chip.layout().tile(c).unwrap().translated;
            for p in Processor::ALL {
                let local = cqlab_abi::memory_map::local_mem(chip.arch(), p);
                let core = chip.core(CoreId { tile: t, processor: p }).unwrap();
                assert!(core.in_reset);
                assert_eq!(core.hart.mem.local.size(), local.size, "{board} {p}");
            }
        }
    }
}

/// Tile A spins on a GO word in its L1; tile B computes for a while, then
/// NOC-writes GO to A; A records mcycle and halts.
fn go_scenario(cfg: SimConfig) -> Chip {
    let mut chip = Chip::new(cfg).unwrap();
    let t = tiles(&chip);
    let (a, b) = (t[0], t[t.len() - 1]);
    let go = USER.base + 0x80;
    let mut pa = li(6, go).to_vec();
    pa.extend([lw(7, 6, 0), beq(7, 0, -4), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4), ECALL]);
    boot(&mut chip, a, &pa);
    let niu = niu(&chip, Noc::Noc0);
    let mut pb = li(8, 3000).to_vec();
    pb.extend([addi(8, 8, -1), bne(8, 0, -4), addi(7, 0, 1)]);
    pb.extend(li(6, USER.base + 0x40));
    pb.push(sw(7, 6, 0));
    pb.extend(niu.write(b, USER.base + 0x40, NocAddr::unicast(a, go as u64), 4));
    pb.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
    pb.push(ECALL);
    boot(&mut chip, b, &pb);
    chip.advance(100_000);
    chip
}

#[test]
fn fast_forward_does_not_change_results() {
    for seed in [1, 2] {
        let cfg = |fast_forward| SimConfig {
            seed,
            quantum_jitter: 40,
            faults: Faults { core_stall_prob: 0.2, core_stall_cycles: 30, noc_jitter_cycles: 20, ..Default::default() },
            fast_forward,
            ..wh()
        };
        let (mut with, mut without) = (go_scenario(cfg(true)), go_scenario(cfg(false)));
        let a = tiles(&with)[0];
        let woke_at = |c: &Chip| word(c, a, USER.base + 0x84);
        assert!(woke_at(&without) > 3000, "A woke at {}", woke_at(&without));
        assert_eq!(woke_at(&with), woke_at(&without), "seed {seed}");
        assert_eq!(with.digest(), without.digest(), "seed {seed}");
        assert!(with.core(brisc(a)).unwrap().fast_forwarded_cycles() > 3000, "A was parked while it waited");
        assert_eq!(without.core(brisc(a)).unwrap().fast_forwarded_cycles(), 0);
        let (mut g1, t1) = gather(cfg(true));
        let (mut g2, t2) = gather(cfg(false));
        assert_eq!((g1.digest(), t1), (g2.digest(), t2), "seed {seed}");
    }
}

fn pct(seed: u64, depth: u32, steps: u64) -> SimConfig {
    SimConfig { seed, schedule: Schedule::Pct { depth, steps }, ..wh() }
}

#[test]
fn pct_schedules_replay_and_change_the_timing() {
    let (mut a, ta) = gather(pct(3, 3, 2000));
    let (mut b, tb) = gather(pct(3, 3, 2000));
    assert_eq!((a.digest(), ta), (b.digest(), tb), "same seed, same PCT schedule");
    let (free, tf) = gather(SimConfig { seed: 3, ..wh() });
    assert!(ta > tf, "PCT serialises the workers: done at {ta}, slice schedule at {tf}");
    // Seeds draw different priorities and change points: some finish
    // at another time.
    let times: std::collections::BTreeSet<u64> = (10..16).map(|s| gather(pct(s, 3, 2000)).1).collect();
    assert!(times.len() > 1, "every seed gave the same schedule: {times:?}");
    // Same gathered answer either way.
    let d = gather_cast(&a).1;
    assert_eq!(word(&a, d, USER.base + 0x400), word(&free, d, USER.base + 0x400));
    // Fast-forward does not change a PCT run.
    let (mut ff_on, t_on) = gather(SimConfig { fast_forward: true, ..pct(4, 2, 500) });
    let (mut ff_off, t_off) = gather(SimConfig { fast_forward: false, ..pct(4, 2, 500) });
    assert_eq!((ff_on.digest(), t_on), (ff_off.digest(), t_off));
}

#[test]
fn a_slowed_core_runs_at_its_factor_and_replays() {
    let probe = Chip::new(wh()).unwrap();
    let slowed = gather_cast(&probe).0[3];
    let d = gather_cast(&probe).1;
    drop(probe);
    let slow = |factor| {
        let mut cfg = SimConfig { quantum_cycles: 20, ..wh() };
        cfg.faults.slow_cores.push(SlowCore { core: slowed, factor });
        cfg
    };
    // The cycle at which the gatherer saw every worker's increment.
    let done = |c: &Chip| word(c, d, USER.base + 0x404);
    let (base, _) = gather(slow(1.0));
    let (mut a, _) = gather(slow(2.0));
    let (mut b, _) = gather(slow(2.0));
    let (c, _) = gather(slow(8.0));
    assert_eq!(a.digest(), b.digest(), "same setting, same run");
    let (t1, t2, t8) = (done(&base), done(&a), done(&c));
    assert!(t1 < t2 && t2 < t8, "done at {t1} (full speed), {t2} (x2), {t8} (x8)");
    let (mut on, t_on) = gather(SimConfig { fast_forward: true, ..slow(3.0) });
    let (mut off, t_off) = gather(SimConfig { fast_forward: false, ..slow(3.0) });
    assert_eq!((on.digest(), t_on), (off.digest(), t_off), "fast-forward equivalence with a slowed core");
    let mut bad = wh();
    bad.faults.slow_cores.push(SlowCore { core: Coord::new(60, 60), factor: 2.0 });
    assert!(matches!(Chip::new(bad), Err(SimError::Config(ConfigError::NoSuchCore { .. }))));
}

/// Tile A polls a GO word; the host writes a payload word, then GO, then
/// lets the device run. A copies the payload next to the cycle it saw GO.
fn doorbell(cfg: SimConfig) -> (Chip, u32, u32) {
    let mut chip = Chip::new(cfg).unwrap();
    let a = tiles(&chip)[0];
    let go = USER.base + 0x80;
    let mut p = li(6, go).to_vec();
    p.extend([lw(7, 6, 0), beq(7, 0, -4), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4)]);
    p.extend([lw(8, 6, 8), sw(8, 6, 12), ECALL]);
    boot(&mut chip, a, &p);
    chip.advance(1000);
    chip.write_u32(NocAddr::unicast(a, go as u64 + 8), 0x5eed).unwrap();
    chip.write_u32(NocAddr::unicast(a, go as u64), 1).unwrap();
    chip.run_until(|c| halted(c, a), 1_000_000).unwrap();
    let (woke, copied) = (word(&chip, a, go + 4), word(&chip, a, go + 12));
    (chip, woke, copied)
}

#[test]
fn late_doorbells_land_later_in_order_and_replay() {
    let late = |seed, delay| {
        let mut cfg = SimConfig { seed, ..wh() };
        cfg.faults.host_write_delay_cycles = delay;
        cfg
    };
    let (_, prompt, copied) = doorbell(late(1, 0));
    assert_eq!(copied, 0x5eed);
    assert!(prompt < 1000 + 2 * 200, "without delay A sees GO within a slice or two: {prompt}");
    let (mut a, woke_a, copied_a) = doorbell(late(1, 5000));
    let (mut b, woke_b, _) = doorbell(late(1, 5000));
    assert_eq!((a.digest(), woke_a), (b.digest(), woke_b), "same seed, same delays");
    assert_eq!(copied_a, 0x5eed, "the payload, written first, landed no later than GO");
    let woken: std::collections::BTreeSet<u32> = (1..8).map(|s| doorbell(late(s, 5000)).1).collect();
    assert!(woken.len() > 1 && woken.iter().all(|&w| w <= 1000 + 5000 + 2 * 200), "{woken:?}");
    assert!(woken.iter().any(|&w| w > prompt + 400), "some seed delays the doorbell: {woken:?}");
    // A posted write is invisible until it lands; a host read lands it.
    let mut chip = Chip::new(late(9, 1_000_000)).unwrap();
    let w = tiles(&chip)[1];
    let at = NocAddr::unicast(w, USER.base as u64);
    chip.write_u32(at, 42).unwrap();
    chip.write_u32(at, 43).unwrap();
    assert_eq!(chip.read_u32(at).unwrap(), 0, "still posted");
    let mut buf = [0u8; 4];
    chip.host_read(at, &mut buf).unwrap();
    assert_eq!(u32::from_le_bytes(buf), 43, "landed in order by the read");
    assert_eq!(chip.in_flight(), 0);
    // Register writes are checked when posted, not when they land.
    let cmd = NocAddr::unicast(w, chip.arch().niu.cmd_buf_base(Noc::Noc0, 0) as u64);
    assert!(matches!(chip.write_u32(cmd, 1), Err(SimError::Register { .. })));
}

#[test]
fn every_knob_at_once_replays_bit_identically_with_and_without_fast_forward() {
    let slowed = gather_cast(&Chip::new(wh()).unwrap()).0[2];
    let cfg = |seed, fast_forward| {
        let mut c = SimConfig {
            seed,
            quantum_cycles: 64,
            quantum_jitter: 50,
            schedule: Schedule::Pct { depth: 3, steps: 3000 },
            fast_forward,
            ..wh()
        };
        c.faults = Faults {
            core_stall_prob: 0.2,
            core_stall_cycles: 40,
            noc_jitter_cycles: 30,
            slow_cores: vec![SlowCore { core: slowed, factor: 1.5 }],
            host_write_delay_cycles: 300,
            write_backpressure_cycles: 100,
            reorder: seed % 2 == 1,
        };
        c.noc.reads_pass_unsent = seed % 2 == 0;
        c
    };
    let (mut a, ta) = gather(cfg(5, true));
    let (mut b, tb) = gather(cfg(5, true));
    let (mut c, tc) = gather(cfg(5, false));
    assert_eq!((a.digest(), ta), (b.digest(), tb));
    assert_eq!((a.digest(), ta), (c.digest(), tc));
    let (mut d, _) = gather(cfg(6, true));
    assert_ne!(a.digest(), d.digest());
}

#[test]
fn power_on_reset_forgets_everything_but_keeps_external_sysmem() {
    let cfg = wh();
    let ext = crate::memory::Sysmem::External(Box::new(vec![0xffu8; cfg.sysmem_size]));
    let mut chip = Chip::with_sysmem(cfg.clone(), ext).unwrap();
    assert!(chip.sysmem().iter().all(|&b| b == 0), "external sysmem is zeroed at power-on");
    let fresh = Chip::new(cfg.clone()).unwrap().digest();
    assert_eq!(chip.digest(), fresh);
    let w = tiles(&chip)[1];
    let a = NocAddr::unicast(w, USER.base as u64);
    chip.write_u32(a, 7).unwrap();
    chip.write_u32(host(&chip, 64), 9).unwrap();
    boot(&mut chip, w, &[addi(1, 0, 1), jal(0, -4)]);
    chip.advance(5000);
    assert_ne!(chip.digest(), fresh);
    chip.power_on_reset().unwrap();
    assert_eq!((chip.now(), chip.read_u32(a).unwrap(), chip.sysmem()[64]), (0, 0, 0));
    assert_eq!(chip.digest(), fresh, "bit-identical to a new chip");
    let short = crate::memory::Sysmem::owned(8192);
    assert_eq!(
        Chip::with_sysmem(cfg.clone(), short).err(),
        Some(SimError::SysmemSize { expected: cfg.sysmem_size, found: 8192 })
    );
}

#[test]
fn stalls_longer_than_a_slice_delay_parked_cores_exactly() {
    // A parked core's state may lie whole periods behind the slice start; a
    // stall must delay it from where it really is.
    for seed in 1..4 {
        let cfg = |fast_forward| {
            let mut c = SimConfig { seed, fast_forward, ..wh() };
            c.faults.core_stall_prob = 0.3;
            c.faults.core_stall_cycles = 500;
            c
        };
        let (mut with, mut without) = (go_scenario(cfg(true)), go_scenario(cfg(false)));
        assert_eq!(with.digest(), without.digest(), "seed {seed}");
        let a = tiles(&with)[0];
        assert!(with.core(brisc(a)).unwrap().fast_forwarded_cycles() > 0, "seed {seed}: A was parked");
        let (mut g1, t1) = gather(cfg(true));
        let (mut g2, t2) = gather(cfg(false));
        assert_eq!((g1.digest(), t1), (g2.digest(), t2), "seed {seed}");
    }
}

#[test]
fn deliveries_a_parked_loop_does_not_read_leave_it_parked_with_the_same_results() {
    // A polls GO; B first NOC-writes another word of A's L1 (and gets acks
    // A's loop never reads), computes, then writes GO.
    let run = |fast_forward| {
        let mut chip = Chip::new(SimConfig { seed: 3, quantum_jitter: 30, fast_forward, ..wh() }).unwrap();
        let t = tiles(&chip);
        let (a, b) = (t[0], t[t.len() - 1]);
        let go = USER.base + 0x80;
        let mut pa = li(6, go).to_vec();
        pa.extend([lw(7, 6, 0), beq(7, 0, -4), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4), ECALL]);
        boot(&mut chip, a, &pa);
        let niu = niu(&chip, Noc::Noc0);
        let src = USER.base + 0x40;
        let mut pb = li(6, src).to_vec();
        pb.extend([addi(7, 0, 5), sw(7, 6, 0)]);
        pb.extend(niu.write(b, src, NocAddr::unicast(a, go as u64 + 0x100), 4));
        pb.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
        pb.extend(li(8, 2000));
        pb.extend([addi(8, 8, -1), bne(8, 0, -4), addi(7, 0, 1), sw(7, 6, 0)]);
        pb.extend(niu.write(b, src, NocAddr::unicast(a, go as u64), 4));
        pb.push(ECALL);
        boot(&mut chip, b, &pb);
        chip.advance(50_000);
        (chip, a)
    };
    let ((mut on, a), (mut off, _)) = (run(true), run(false));
    let at = |c: &Chip, off: u32| word(c, a, USER.base + off);
    assert_eq!(at(&on, 0x180), 5, "the other word landed");
    assert!(at(&off, 0x84) > 2000, "A saw GO only after B's compute: {}", at(&off, 0x84));
    assert_eq!((on.digest(), at(&on, 0x84)), (off.digest(), at(&off, 0x84)));
    assert!(on.core(brisc(a)).unwrap().fast_forwarded_cycles() > 2000);
}

/// A statistical profile: one sample per slice end, weighted by the
/// slice's cycles, each in the loop the core runs; a run sampled is the
/// run unsampled.
#[test]
fn pc_samples_land_in_the_running_loop_and_change_nothing() {
    let b = ENTRY_POINT;
    // Three slow divisions and a quick add per lap.
    let program =
        [addi(5, 0, 1), lui(7, 0x7ffff), div(6, 7, 5), div(6, 7, 5), div(6, 7, 5), addi(6, 6, 1), jal(0, -16)];
    let lap = b + 8..=b + 24;
    let run = |sample: bool| {
        let mut chip = Chip::new(wh()).unwrap();
        let w = brisc(tiles(&chip)[0]);
        if sample {
            chip.set_pc_sampling(&[w]).unwrap();
        }
        boot(&mut chip, w.tile, &program);
        chip.advance(100_000);
        (chip.digest(), chip.pc_samples(), w)
    };
    let (plain, none, _) = run(false);
    let (sampled, samples, w) = run(true);
    assert_eq!(plain, sampled, "sampling changes nothing");
    assert!(none.is_empty());
    let total: u64 = samples.iter().map(|s| s.2).sum();
    assert_eq!(total, 100_000, "the samples' cycles are the time sampled: {samples:?}");
    assert!(samples.iter().all(|&(c, pc, _)| c == w && lap.contains(&pc)), "{samples:?}");
    // The lap touches no memory: fast-forward parks the core at its head,
    // where nearly every sample then finds it.
    let head: u64 = samples.iter().filter(|s| s.1 == b + 8).map(|s| s.2).sum();
    assert!(head * 10 >= total * 9, "{samples:?}");
    let mut chip = Chip::new(wh()).unwrap();
    assert!(chip.set_pc_sampling(&[brisc(Coord::new(60, 60))]).is_err(), "no core there");
}

/// A tile's L1 stays with the core that ran last: the host, the NOC and
/// the tile's other cores still reach the one memory. BRISC echoes each
/// value the host writes to a word; NCRISC, its sibling, echoes BRISC's
/// echo; another tile's BRISC NOC-writes a word BRISC adds in.
#[test]
fn a_tiles_l1_is_one_memory_wherever_it_is_held() {
    for fast_forward in [false, true] {
        let mut chip = Chip::new(SimConfig { fast_forward, ..wh() }).unwrap();
        let (w, other) = (tiles(&chip)[0], tiles(&chip)[9]);
        let (host, echo, sibling, noc) = (USER.base + 0x40, USER.base + 0x44, USER.base + 0x48, USER.base + 0x4c);
        // NCRISC: copies `echo` to `sibling` for ever.
        let mut sub = li(6, USER.base).to_vec();
        sub.extend([lw(7, 6, 0x44), sw(7, 6, 0x48), jal(0, -8)]);
        let at = cqlab_abi::arch::tensix::NCRISC_DEFAULT_RESET_PC;
        chip.write(NocAddr::unicast(w, at as u64), &to_bytes(&sub)).unwrap();
        // BRISC: releases NCRISC, then echo = host + noc for ever.
        let mut p = li(6, tensix::SOFT_RESET_0).to_vec();
        p.extend(li(7, SOFT_RESET_BRISC_ONLY_RUN & !Processor::Ncrisc.soft_reset_mask()));
        p.push(sw(7, 6, 0));
        p.extend(li(6, USER.base));
        p.extend([lw(7, 6, 0x40), lw(8, 6, 0x4c), add(7, 7, 8), sw(7, 6, 0x44), jal(0, -16)]);
        boot(&mut chip, w, &p);
        chip.advance(2_000);
        for v in [5, 0x1234, 7] {
            chip.write_u32(NocAddr::unicast(w, host as u64), v).unwrap();
            chip.advance(2_000);
            assert_eq!(word(&chip, w, echo), v, "ff {fast_forward}: BRISC saw the host's write");
            assert_eq!(word(&chip, w, sibling), v, "ff {fast_forward}: NCRISC saw BRISC's store");
        }
        // Another tile's BRISC writes 100 into `noc` over the NOC.
        let n = niu(&chip, Noc::Noc0);
        chip.write_u32(NocAddr::unicast(other, USER.base as u64), 100).unwrap();
        let mut q = n.write(other, USER.base, NocAddr::unicast(w, noc as u64), 4);
        q.push(ECALL);
        boot(&mut chip, other, &q);
        chip.advance(5_000);
        assert!(halted(&chip, other));
        assert_eq!(word(&chip, w, echo), 107, "ff {fast_forward}: BRISC saw the NOC's write");
        assert_eq!(word(&chip, w, sibling), 107, "ff {fast_forward}");
    }
}

/// Cores of one tile share its L1: NCRISC polls a word BRISC stores after
/// a while. Parked or not, NCRISC sees it at the same cycle, whether it
/// comes before or after BRISC in the slice's rotation (seeds vary it).
#[test]
fn a_store_by_one_core_wakes_its_parked_sibling_exactly() {
    for seed in 1..7 {
        sibling_wake(seed);
    }
}

fn sibling_wake(seed: u64) {
    let run = |fast_forward| {
        let mut chip = Chip::new(SimConfig { seed, quantum_jitter: 30, fast_forward, ..wh() }).unwrap();
        let w = tiles(&chip)[0];
        let flag = USER.base + 0x20;
        let mut sub = li(6, flag).to_vec();
        sub.extend([lw(7, 6, 0), beq(7, 0, -4), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4), ECALL]);
        let at = cqlab_abi::arch::tensix::NCRISC_DEFAULT_RESET_PC;
        chip.write(NocAddr::unicast(w, at as u64), &to_bytes(&sub)).unwrap();
        let mut p = li(6, tensix::SOFT_RESET_0).to_vec();
        p.extend(li(7, SOFT_RESET_BRISC_ONLY_RUN & !Processor::Ncrisc.soft_reset_mask()));
        p.push(sw(7, 6, 0));
        p.extend(li(8, 3000));
        p.extend([addi(8, 8, -1), bne(8, 0, -4)]);
        p.extend(li(6, flag));
        p.extend([addi(7, 0, 1), sw(7, 6, 0), ECALL]);
        boot(&mut chip, w, &p);
        chip.advance(30_000);
        let ncrisc = CoreId { tile: w, processor: Processor::Ncrisc };
        let parked = chip.core(ncrisc).unwrap().fast_forwarded_cycles();
        (chip.digest(), word(&chip, w, flag + 4), parked)
    };
    let ((on, seen_on, parked), (off, seen_off, _)) = (run(true), run(false));
    assert!(seen_off > 3000, "seed {seed}: NCRISC saw the flag at {seen_off}");
    assert_eq!((on, seen_on), (off, seen_off), "seed {seed}");
    assert!(parked > 1000, "seed {seed}: NCRISC was parked while it waited ({parked} cycles)");
}

#[test]
fn exact_time_replays_and_fast_forward_changes_nothing() {
    // With instruction caches too: their miss on the first fetch shifts
    // the gatherer's polling so that seed 2's Blackhole run stalled a
    // core stopped inside a load's wait, which a parked core woken to the
    // slice start had not reached (`Hart::stall`).
    for (board, icache) in BOARDS.into_iter().flat_map(|b| [(b, false), (b, true)]) {
        for seed in [1, 2] {
            let cfg = |fast_forward| SimConfig {
                seed,
                exact_time: true,
                icache,
                fast_forward,
                faults: Faults {
                    core_stall_prob: 0.1,
                    core_stall_cycles: 30,
                    noc_jitter_cycles: 20,
                    ..Default::default()
                },
                ..small(board)
            };
            let (mut a, ta) = gather(cfg(true));
            let (mut b, tb) = gather(cfg(false));
            let (mut c, tc) = gather(cfg(true));
            let what = format!("{board} seed {seed} icache {icache}");
            assert_eq!((a.digest(), ta), (b.digest(), tb), "{what}: fast-forward changed the run");
            assert_eq!((a.digest(), ta), (c.digest(), tc), "{what}: the same seed replays");
            let (workers, d) = gather_cast(&a);
            // Fast-forward took part: the gatherer was parked while it waited
            // (not on Blackhole, whose poll without `fence` reads its L0 copy:
            // a hit may flush, so such a loop is never parked).
            let parked = |chip: &mut Chip| chip.core(brisc(d)).unwrap().fast_forwarded_cycles();
            let (on, off) = (parked(&mut a), parked(&mut b));
            let parks = !a.config().l0_data_cache;
            assert!((on > 0) == parks && off == 0, "{what}: parked {on} / {off} cycles");
            let expected: u32 = workers.iter().map(|c| c.packed()).sum();
            assert_eq!(word(&a, d, USER.base + 0x400), expected, "{board}");
        }
    }
    let bad = SimConfig { exact_time: true, quantum_jitter: 5, ..wh() };
    assert!(matches!(Chip::new(bad).err(), Some(SimError::Config(ConfigError::JitterWithExactTime(5)))));
}

/// With `SimConfig::icache` each core gets its processor's instruction
/// cache (B, NC, T0, T1, T2: 2 KiB, 512 B, 2 KiB, 512 B, 2 KiB), on both
/// chips; without it, none.
#[test]
fn each_core_gets_its_processors_instruction_cache_on_both_chips() {
    for board in BOARDS {
        let on = Chip::new(SimConfig { icache: true, ..small(board) }).unwrap();
        for c in &on.cores {
            let bytes = crate::icache::capacity(board.arch(), c.id.processor);
            assert_eq!(c.hart.icache().bytes(), bytes, "{board} {:?}", c.id);
        }
        let first: Vec<u32> = on.cores[..5].iter().map(|c| c.hart.icache().bytes()).collect();
        assert_eq!(first, [2048, 512, 2048, 512, 2048], "{board}");
        let off = Chip::new(small(board)).unwrap();
        assert!(off.cores.iter().all(|c| c.hart.icache().bytes() == 0), "{board}");
    }
}

/// A host write over the code a core loops in drops its cached lines: one
/// more miss (the line it is not in), and none for a write elsewhere; the
/// same with the loop parked by fast-forward as without.
#[test]
fn a_host_write_over_a_cores_code_drops_its_cached_lines() {
    // ENTRY: call f (0x40 on); loop back. f: return.
    let mut image = vec![0u32; 20];
    (image[0], image[1], image[16]) = (jal(1, 0x40), jal(0, -4), jalr(0, 1, 0));
    for board in BOARDS {
        let run = |fast_forward| {
            let mut chip = Chip::new(SimConfig { icache: true, fast_forward, ..small(board) }).unwrap();
            let t = tiles(&chip)[0];
            boot(&mut chip, t, &image);
            let i = chip.core_index(brisc(t)).unwrap();
            chip.advance(3000);
            let warm = chip.cores[i].hart.icache().misses();
            chip.write(NocAddr::unicast(t, ENTRY_POINT as u64 + 0x100), &[0; 64]).unwrap();
            chip.advance(3000);
            assert_eq!(chip.cores[i].hart.icache().misses(), warm, "{board}: a write elsewhere");
            chip.write(NocAddr::unicast(t, ENTRY_POINT as u64), &to_bytes(&image)).unwrap();
            chip.advance(3000);
            chip.settle();
            assert!(!fast_forward || chip.cores[i].fast_forwarded_cycles() > 0, "{board}: the loop was never parked");
            let h = &chip.cores[i].hart;
            (h.icache().misses() - warm, h.pc(), h.cycle(), h.instret())
        };
        let parked = run(true);
        assert_eq!(parked.0, 1, "{board}: one line missed again");
        assert_eq!(parked, run(false), "{board}: fast-forward changed the run");
    }
}

/// Blackhole's L0 data cache is not coherent: a core polling an L1 word
/// without `fence` keeps reading its copy after a host write (until a
/// periodic flush), and counts those reads stale; with `fence` in the loop
/// it sees the write at once and reads nothing stale. Refused on Wormhole.
#[test]
fn a_poll_without_fence_reads_its_l0_copy_until_a_flush() {
    let fenced = l0_poll(true, false, true, 200, 1, false);
    assert_eq!((fenced.1, fenced.2), (7, 0), "with fence: the write seen, nothing stale: {fenced:?}");
    assert!(fenced.0 < 100, "with fence the write is seen within a turn or two: {fenced:?}");
    let stale = l0_poll(false, false, true, 200, 1, false);
    assert_eq!(stale.1, 7, "a periodic flush ends the wait: {stale:?}");
    assert!(stale.2 > 0 && stale.0 > 4 * fenced.0, "without fence the copy is read for a while: {stale:?}");
    let err = Chip::new(SimConfig { l0_data_cache: true, ..small(Board::WormholeN150) }).err().expect("refused");
    assert!(err.to_string().contains("no L0 data cache"), "{err}");
}

/// Polls that read L0 copies run the same with idle fast-forward as
/// without, whatever the slice, seed and time model: a probe that runs past
/// a slice's end into a hit goes back (a hit is an effect), and a turn
/// that filled a line it did not hold is no repeat (its next turn hits).
/// Both cases once gave other cycles, instructions and hits.
#[test]
fn l0_polls_run_the_same_with_and_without_fast_forward() {
    for (fence, two_words) in [(true, true), (false, false), (false, true)] {
        for exact in [false, true] {
            for quantum in [7, 20, 50, 200] {
                for seed in 0..6 {
                    let what = format!("fence {fence} two words {two_words} exact {exact} slice {quantum} seed {seed}");
                    let parked = l0_poll(fence, two_words, true, quantum, seed, exact);
                    assert_eq!(parked, l0_poll(fence, two_words, false, quantum, seed, exact), "{what}");
                }
            }
        }
    }
}

/// BRISC of a p150a tile spins until an L1 word is non-zero ([fence;] lw;
/// [lw of the word after;] beq), stores what it saw one word on and halts;
/// the host writes 7 there 2,000 cycles in. Returns (cycles from the write
/// to the halt, the word stored, stale hits, hits, instructions).
fn l0_poll(
    fence: bool,
    two_words: bool,
    fast_forward: bool,
    quantum: u64,
    seed: u64,
    exact: bool,
) -> (u64, u32, u64, u64, u64) {
    let cfg = SimConfig {
        l0_data_cache: true,
        fast_forward,
        quantum_cycles: quantum,
        exact_time: exact,
        seed,
        ..small(Board::BlackholeP150a)
    };
    let flag = USER.base;
    let mut image = li(5, flag).to_vec();
    let top = image.len();
    if fence {
        image.push(FENCE);
    }
    image.push(lw(6, 5, 0));
    if two_words {
        image.push(lw(9, 5, 8));
    }
    let back = -4 * (image.len() - top) as i32;
    image.extend([beq(6, 0, back), sw(6, 5, 4), ECALL]);
    let mut chip = Chip::new(cfg).unwrap();
    let t = tiles(&chip)[0];
    chip.write(NocAddr::unicast(t, flag as u64), &[0; 16]).unwrap();
    boot(&mut chip, t, &image);
    chip.advance(2000);
    assert!(!halted(&chip, t), "the flag is still 0");
    chip.write_u32(NocAddr::unicast(t, flag as u64), 7).unwrap();
    let written = chip.now();
    let mut waited = 0;
    while !halted(&chip, t) {
        assert!(waited < 200_000, "fence {fence}: the write was never seen");
        chip.advance(10);
        waited += 10;
    }
    let h = &chip.cores[chip.core_index(brisc(t)).unwrap()].hart;
    let l0 = *h.l0_cache();
    // The chip's summary names the first stale read: this core, the flag,
    // after the write and before the halt.
    let first = chip.l0_cache().expect("the model has L0 caches").first_stale;
    match first {
        None => assert_eq!(l0.stale_hits(), 0, "stale hits without a first one"),
        Some(hit) => {
            assert_eq!((hit.core, hit.addr), (brisc(t), flag), "{hit:?}");
            assert!(hit.cycle >= written && hit.cycle <= h.cycle(), "{hit:?}: written at {written}");
        }
    }
    (h.cycle() - written, word(&chip, t, flag + 4), l0.stale_hits(), l0.hits(), h.instret())
}

/// Under PCT a core that only polls counts as waiting, so it never holds
/// back a core of lower priority: on Blackhole too, where its poll hits its
/// L0 copy (a hit counts as an effect for fast-forward, and PCT took the
/// hits for progress: the worker behind the poller stood still).
#[test]
fn a_poll_of_l0_copies_waits_under_pct() {
    let mut polled = 0;
    for seed in 0..8 {
        let cfg = SimConfig {
            l0_data_cache: true,
            seed,
            schedule: Schedule::Pct { depth: 1, steps: 1_000_000 },
            ..small(Board::BlackholeP150a)
        };
        let mut chip = Chip::new(cfg).unwrap();
        let (poller, worker) = (tiles(&chip)[0], tiles(&chip)[1]);
        let word_at = USER.base;
        let mut poll = li(5, word_at).to_vec();
        poll.extend([lw(6, 5, 0), beq(6, 0, -4), ECALL]);
        let mut count = li(5, word_at).to_vec();
        count.extend([addi(6, 6, 1), sw(6, 5, 0), jal(0, -8)]);
        boot(&mut chip, poller, &poll);
        boot(&mut chip, worker, &count);
        chip.advance(20_000);
        let hits = chip.cores[chip.core_index(brisc(poller)).unwrap()].hart.l0_cache().hits();
        polled += (hits > 1000) as u32;
        let counted = word(&chip, worker, word_at);
        assert!(counted > 1000, "seed {seed}: the worker was held behind the poller: counted {counted}");
    }
    // Seeds that rank the worker first hold the poller instead.
    assert!(polled > 0, "no seed let the poller read its L0 copy");
}

/// A taken branch costs its cycle plus the chip's mispredict bubble: 2 on
/// Wormhole, 4 on Blackhole (tt-isa `BabyRISCV/README.md` of each).
#[test]
fn a_taken_branch_costs_each_chips_bubble() {
    for (board, bubble) in [(Board::WormholeN150, 2), (Board::BlackholeP150a, 4)] {
        let cycles = |turns: u32| {
            let mut chip = Chip::new(small(board)).unwrap();
            let t = tiles(&chip)[0];
            let mut p = li(8, turns).to_vec();
            p.extend([addi(8, 8, -1), bne(8, 0, -4), ECALL]);
            boot(&mut chip, t, &p);
            chip.run_until(|c| halted(c, t), 100_000).unwrap();
            chip.cores[chip.core_index(brisc(t)).unwrap()].hart.cycle()
        };
        // A turn: the addi, the bne and its bubble (the last bne falls through).
        assert_eq!(cycles(200) - cycles(100), 100 * (2 + bubble), "{board}");
    }
}

#[test]
fn core_stalls_take_the_same_share_whatever_the_host_step() {
    // A core counting in L1 under stalls, advanced in whole slices or one
    // cycle at a time (a host polling): a slice cut short draws its share
    // of the stall probability, so the core counts about as far either way
    // (helper-66: each cut slice drew the whole probability, and the
    // stalls outran the clock).
    let count = |step: u64| {
        let mut cfg = SimConfig { seed: 5, ..wh() };
        (cfg.faults.core_stall_prob, cfg.faults.core_stall_cycles) = (0.2, 40);
        let mut chip = Chip::new(cfg).unwrap();
        let a = tiles(&chip)[0];
        let at = USER.base + 0x40;
        let mut p = li(6, at).to_vec();
        p.extend([addi(7, 7, 1), sw(7, 6, 0), beq(0, 0, -8)]);
        boot(&mut chip, a, &p);
        for _ in 0..100_000 / step {
            chip.advance(step);
        }
        word(&chip, a, at)
    };
    let (whole, polled) = (count(50), count(1));
    let ratio = polled as f64 / whole as f64;
    assert!((0.95..=1.05).contains(&ratio), "whole slices {whole}, one cycle at a time {polled}");
}
