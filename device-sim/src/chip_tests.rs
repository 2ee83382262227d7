//! Chip-level tests: host access, boot, NOC writes/reads/atomics with
//! timing, MMIO validation, debug view and determinism.

use super::*;
use crate::asm::*;
use crate::config::{Faults, Schedule, SlowCore};
use crate::csr;
use crate::hart::HaltReason;
use cqlab_abi::mailbox;
use cqlab_abi::memory_map::{CODE, USER};
use cqlab_abi::mmio::{semaphore, NOC_ATOMICS_ACKED, NOC_READS_ACKED, NOC_WRITES_ACKED};
use cqlab_abi::noc::{dispatcher, dram_bank, prefetcher, worker, PCIE};
use cqlab_abi::waypoint;

fn small() -> SimConfig {
    SimConfig {
        worker_cols: 2,
        worker_rows: 2,
        num_cqs: 1,
        dram_banks: 2,
        dram_bank_size: 1 << 20,
        sysmem_size: 1 << 20,
        // The scenarios below are timed against 200-cycle slices (a lap of
        // three divisions fits one, a worker's ack lands in the slice its
        // dispatcher halts in), whatever the default becomes.
        quantum_cycles: 200,
        ..Default::default()
    }
}

fn boot(chip: &mut Chip, core: Coord, words: &[u32]) {
    chip.write(NocAddr::unicast(core, CODE.base as u64), &to_bytes(words)).unwrap();
    chip.set_reset(core, false).unwrap();
}

fn reg(core: Coord, off: u32) -> NocAddr {
    NocAddr::unicast(core, (MMIO_BASE + off) as u64)
}

const MMIO: u32 = 10; // x10 holds MMIO_BASE in the test programs

/// sw `src` into register `off` of this core.
fn set(off: u32, src: u32) -> u32 {
    sw(src, MMIO, off as i32)
}

/// Issue `cmd` with target from params[`p`], [`p`+1] (at x6), local `x7`, len `len`.
fn issue(p: i32, local_reg: u32, len: i32, cmd: NocCmd) -> Vec<u32> {
    vec![
        lw(7, 6, 4 * p),
        set(mmio::NOC_TARGET_LO, 7),
        lw(7, 6, 4 * p + 4),
        set(mmio::NOC_TARGET_HI, 7),
        set(mmio::NOC_LOCAL_ADDR, local_reg),
        addi(7, 0, len),
        set(mmio::NOC_LEN, 7),
        addi(7, 0, cmd as i32),
        set(mmio::NOC_CMD, 7),
    ]
}

/// Spin until counter register `off` is non-zero.
fn wait_nonzero(off: u32) -> [u32; 2] {
    [lw(7, MMIO, off as i32), beq(7, 0, -4)]
}

fn prologue() -> Vec<u32> {
    let mut p = li(MMIO, MMIO_BASE).to_vec();
    p.extend(li(6, USER.base));
    p
}

/// Worker: burn a core-dependent number of cycles, send its hart id to the
/// dispatcher's slot (params 0,1), wait for the ack, increment the
/// dispatcher's semaphore 0 (params 2,3), wait, halt.
fn worker_program() -> Vec<u32> {
    let mut p = prologue();
    p.extend([csrrs(5, csr::MHARTID as u32, 0), sw(5, 6, 0x40), andi(8, 5, 0x7f), slli(8, 8, 3), addi(8, 8, 1)]);
    p.extend([addi(8, 8, -1), bne(8, 0, -4)]);
    p.push(addi(11, 6, 0x40));
    p.extend(issue(0, 11, 4, NocCmd::Write));
    p.extend(wait_nonzero(NOC_WRITES_ACKED));
    p.extend([addi(7, 0, 1), set(mmio::NOC_ATOMIC_VALUE, 7)]);
    p.extend(issue(2, 11, 4, NocCmd::AtomicInc));
    p.extend(wait_nonzero(NOC_ATOMICS_ACKED));
    p.push(ECALL);
    p
}

/// Dispatcher: wait for semaphore 0 to reach `n`, sum the `n` slots at
/// USER.base, store the sum and the cycle at USER.base + 0x400, halt.
fn dispatcher_program(n: i32) -> Vec<u32> {
    let mut p = prologue();
    p.extend([addi(8, 0, n), lw(7, MMIO, semaphore(0) as i32), bne(7, 8, -4)]);
    p.extend([addi(9, 0, 0), addi(11, 0, n)]);
    p.extend([lw(12, 6, 0), add(9, 9, 12), addi(6, 6, 4), addi(11, 11, -1), bne(11, 0, -16)]);
    p.extend(li(6, USER.base + 0x400));
    p.extend([sw(9, 6, 0), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4), ECALL]);
    p
}

pub(super) fn gather(cfg: SimConfig) -> (Chip, u64) {
    let mut chip = Chip::new(cfg).unwrap();
    let d = dispatcher(0);
    let workers: Vec<Coord> = chip.cores().filter(|c| noc::worker_index(*c).is_some()).collect();
    for (i, &w) in workers.iter().enumerate() {
        let params = [
            NocAddr::unicast(d, (USER.base + 4 * i as u32) as u64).words(),
            NocAddr::unicast(d, (MMIO_BASE + semaphore(0)) as u64).words(),
        ];
        let bytes: Vec<u8> = params.iter().flat_map(|(lo, hi)| [*lo, *hi]).flat_map(u32::to_le_bytes).collect();
        chip.write(NocAddr::unicast(w, USER.base as u64), &bytes).unwrap();
        boot(&mut chip, w, &worker_program());
    }
    boot(&mut chip, d, &dispatcher_program(workers.len() as i32));
    let done = |c: &Chip| c.core(dispatcher(0)).unwrap().hart.halted().is_some();
    let t = chip.run_until(done, 1_000_000).unwrap();
    (chip, t)
}

#[test]
fn workers_gather_on_the_dispatcher_through_noc_writes_and_atomics() {
    let (chip, _) = gather(small());
    let d = dispatcher(0);
    let expected: u32 = chip.cores().filter(|c| noc::worker_index(*c).is_some()).map(|c| c.packed()).sum();
    let out = NocAddr::unicast(d, (USER.base + 0x400) as u64);
    assert_eq!(chip.read_u32(out).unwrap(), expected);
    assert_eq!(chip.read_u32(reg(d, semaphore(0))).unwrap(), 4);
    let dbg = chip.core_debug(d).unwrap();
    assert_eq!(dbg.halt.map(|h| h.reason), Some(HaltReason::Ecall));
    // The dispatcher saw all four increments only after real NOC latency.
    let finished_at = chip.read_u32(out.offset(4)).unwrap() as u64;
    assert!(finished_at > 2 * trip(chip.config(), worker(0, 0), d, 4), "finished at {finished_at}");
    for c in chip.cores().filter(|c| noc::worker_index(*c).is_some()) {
        let dbg = chip.core_debug(c).unwrap();
        assert_eq!(dbg.halt.map(|h| h.reason), Some(HaltReason::Ecall), "{dbg}");
        assert_eq!((dbg.counters.writes_issued, dbg.counters.writes_acked), (1, 1));
        assert_eq!((dbg.counters.atomics_issued, dbg.counters.atomics_acked), (1, 1));
    }
    assert_eq!(chip.in_flight(), 0);
}

#[test]
fn same_seed_same_run_and_other_seeds_differ() {
    let noisy = |seed| SimConfig {
        seed,
        quantum_cycles: 64,
        quantum_jitter: 50,
        faults: Faults { core_stall_prob: 0.3, core_stall_cycles: 40, noc_jitter_cycles: 30, ..Default::default() },
        ..small()
    };
    let (a, ta) = gather(noisy(1));
    let (b, tb) = gather(noisy(1));
    assert_eq!((a.digest(), ta), (b.digest(), tb), "same seed must replay bit-identically");
    let (c, _) = gather(noisy(2));
    assert_ne!(a.digest(), c.digest(), "the seed drives quanta, stalls and jitter");
}

#[test]
fn noc_read_from_dram_and_write_to_sysmem() {
    let mut chip = Chip::new(small()).unwrap();
    let w = worker(1, 1);
    let payload: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(7)).collect();
    chip.write(NocAddr::unicast(dram_bank(1), 0x1000), &payload).unwrap();
    let params = [NocAddr::unicast(dram_bank(1), 0x1000).words(), NocAddr::unicast(PCIE, 0x2000).words()];
    let bytes: Vec<u8> = params.iter().flat_map(|(lo, hi)| [*lo, *hi]).flat_map(u32::to_le_bytes).collect();
    chip.write(NocAddr::unicast(w, USER.base as u64), &bytes).unwrap();
    let mut p = prologue();
    p.push(addi(11, 6, 0x100));
    p.extend(issue(0, 11, 64, NocCmd::Read));
    p.extend(wait_nonzero(NOC_READS_ACKED));
    p.extend(issue(2, 11, 64, NocCmd::Write));
    p.extend(wait_nonzero(NOC_WRITES_ACKED));
    p.push(ECALL);
    boot(&mut chip, w, &p);
    let t = chip.run_until(|c| c.core(w).unwrap().hart.halted().is_some(), 100_000).unwrap();
    assert_eq!(&chip.sysmem()[0x2000..0x2040], &payload[..]);
    let cfg = chip.config();
    let minimum = cfg.dram_latency_cycles + cfg.pcie.write_latency_cycles;
    assert!(t > minimum, "round trips took {t} cycles, expected more than {minimum}");
}

#[test]
fn host_access_reaches_l1_registers_dram_and_sysmem() {
    let mut chip = Chip::new(small()).unwrap();
    let w = worker(0, 1);
    chip.write_u32(NocAddr::unicast(w, USER.base as u64), 0xfeed).unwrap();
    assert_eq!(chip.read_u32(NocAddr::unicast(w, USER.base as u64)).unwrap(), 0xfeed);
    chip.write_u32(reg(w, semaphore(3)), 9).unwrap();
    assert_eq!(chip.read_u32(reg(w, semaphore(3))).unwrap(), 9);
    assert_eq!(chip.read_u32(reg(w, mmio::CORE_ID)).unwrap(), w.packed());
    assert_eq!(chip.read_u32(reg(w, mmio::SOFT_RESET)).unwrap(), 1, "cores power on held in reset");
    chip.write_u32(NocAddr::unicast(dram_bank(0), 8), 5).unwrap();
    assert_eq!(chip.read_u32(NocAddr::unicast(dram_bank(0), 8)).unwrap(), 5);
    chip.write_u32(NocAddr::unicast(PCIE, 16), 6).unwrap();
    assert_eq!(chip.sysmem()[16], 6);
    // Multicast from the host writes every worker.
    chip.write_u32(NocAddr::multicast(worker(0, 0), worker(1, 1), USER.base as u64 + 8), 77).unwrap();
    for c in [worker(0, 0), worker(1, 0), worker(0, 1), worker(1, 1)] {
        assert_eq!(chip.read_u32(NocAddr::unicast(c, USER.base as u64 + 8)).unwrap(), 77);
    }
    // Errors say where.
    let nowhere = NocAddr::unicast(Coord::new(40, 40), 0);
    assert!(matches!(chip.write_u32(nowhere, 1), Err(SimError::NoEndpoint { .. })));
    assert!(matches!(chip.read_u32(NocAddr::unicast(worker(5, 5), 0)), Err(SimError::NoEndpoint { .. })));
    assert!(matches!(chip.read_u32(NocAddr::unicast(prefetcher(1), 0)), Err(SimError::NoEndpoint { .. })));
    assert!(matches!(
        chip.write_u32(NocAddr::unicast(w, chip.config().l1_size as u64 - 2), 1),
        Err(SimError::OutOfRange { .. })
    ));
    assert!(matches!(chip.write_u32(reg(w, mmio::NOC_CMD), 1), Err(SimError::Mmio { .. })));
    assert!(matches!(chip.read_u32(NocAddr::unicast(dram_bank(2), 0)), Err(SimError::OutOfRange { .. })));
}

#[test]
fn reset_holds_cores_and_release_starts_them_at_the_entry_point() {
    let mut chip = Chip::new(small()).unwrap();
    let w = worker(0, 0);
    let counter = NocAddr::unicast(w, USER.base as u64);
    let mut p = li(6, USER.base).to_vec();
    p.extend([lw(7, 6, 0), addi(7, 7, 1), sw(7, 6, 0), jal(0, -12)]);
    chip.write(NocAddr::unicast(w, CODE.base as u64), &to_bytes(&p)).unwrap();
    chip.advance(1000);
    assert_eq!(chip.read_u32(counter).unwrap(), 0, "held in reset");
    chip.set_reset(w, false).unwrap();
    chip.advance(1000);
    let n = chip.read_u32(counter).unwrap();
    assert!(n > 50, "ran {n} iterations");
    chip.set_reset(w, true).unwrap();
    chip.advance(1000);
    assert_eq!(chip.read_u32(counter).unwrap(), n, "held again");
    assert_eq!(chip.core(w).unwrap().hart.cycle(), chip.now(), "counters track device time");
}

#[test]
fn debug_view_shows_waypoint_pc_and_recent_pcs() {
    let mut chip = Chip::new(small()).unwrap();
    let w = worker(1, 0);
    let mut p = li(6, mailbox::WAYPOINT).to_vec();
    p.extend(li(7, waypoint::HQW.0));
    p.extend([sw(7, 6, 0), jal(0, 0)]);
    boot(&mut chip, w, &p);
    chip.advance(500);
    let dbg = chip.core_debug(w).unwrap();
    assert_eq!(dbg.waypoint, waypoint::HQW);
    assert_eq!(dbg.pc, CODE.base + 20);
    assert_eq!(dbg.last_pcs.last(), Some(&(CODE.base + 20)));
    assert!(dbg.halt.is_none() && !dbg.in_reset);
    let text = dbg.to_string();
    assert!(text.contains("waypoint 'HQW'") && text.contains("fetch-queue"), "{text}");
    assert!(chip.core_debug(Coord::new(40, 40)).is_none());
}

#[test]
fn invalid_noc_commands_halt_the_core_with_the_reason() {
    let mut chip = Chip::new(small()).unwrap();
    let w = worker(0, 0);
    let mut p = li(MMIO, MMIO_BASE).to_vec();
    p.extend([set(mmio::NOC_LEN, 0), addi(7, 0, NocCmd::Write as i32), set(mmio::NOC_CMD, 7), ECALL]);
    boot(&mut chip, w, &p);
    chip.advance(200);
    let h = chip.core_debug(w).unwrap().halt.unwrap();
    assert!(matches!(h.reason, HaltReason::Rejected { reason, .. } if reason.contains("NOC_LEN")), "{h}");
    // A target with no endpoint is refused at issue, not lost in flight.
    let mut chip = Chip::new(small()).unwrap();
    let (lo, hi) = NocAddr::unicast(Coord::new(40, 40), 0).words();
    let mut p = li(MMIO, MMIO_BASE).to_vec();
    p.extend(li(7, lo));
    p.push(set(mmio::NOC_TARGET_LO, 7));
    p.extend(li(7, hi));
    p.extend([set(mmio::NOC_TARGET_HI, 7), addi(7, 0, 4), set(mmio::NOC_LEN, 7)]);
    p.extend([set(mmio::NOC_LOCAL_ADDR, 0), addi(7, 0, NocCmd::Write as i32), set(mmio::NOC_CMD, 7), ECALL]);
    boot(&mut chip, w, &p);
    chip.advance(200);
    let h = chip.core_debug(w).unwrap().halt.unwrap();
    assert!(matches!(h.reason, HaltReason::Rejected { reason: "no endpoint at the target coordinates", .. }), "{h}");
}

#[test]
fn load_elf_places_segments_and_rejects_what_does_not_fit() {
    let mut chip = Chip::new(small()).unwrap();
    let w = worker(0, 0);
    let elf = crate::testelf::program(CODE.base, &[addi(10, 0, 9), ECALL], false);
    let image = ElfImage::parse(&elf).unwrap();
    chip.load_elf(w, &image).unwrap();
    chip.set_reset(w, false).unwrap();
    chip.advance(100);
    let dbg = chip.core_debug(w).unwrap();
    assert_eq!((dbg.regs[10], dbg.halt.map(|h| h.reason)), (9, Some(HaltReason::Ecall)));
    let far = ElfImage::parse(&crate::testelf::program(0x8000_0000, &[ECALL], false)).unwrap();
    assert!(matches!(chip.load_elf(w, &far), Err(SimError::Elf { .. })));
}

#[test]
fn run_until_times_out_with_the_device_time() {
    let mut chip = Chip::new(small()).unwrap();
    let err = chip.run_until(|_| false, 1000).unwrap_err();
    assert_eq!(err, SimError::Timeout { budget: 1000, now: 1000 });
}

#[test]
fn the_default_chip_builds_with_every_core() {
    let chip = Chip::new(SimConfig::default()).unwrap();
    assert_eq!(chip.cores().count(), 64 + 2 * 2);
    assert!(chip.core(prefetcher(1)).is_some() && chip.core(dispatcher(1)).is_some());
}

/// Worker A spins on a GO word in its L1; worker B computes for a while,
/// then NOC-writes GO to A; A records mcycle and halts.
fn go_scenario(cfg: SimConfig) -> Chip {
    let mut chip = Chip::new(cfg).unwrap();
    let (a, b) = (worker(0, 0), worker(1, 1));
    let go = USER.base + 0x80;
    let mut pa = li(6, go).to_vec();
    pa.extend([lw(7, 6, 0), beq(7, 0, -4), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4), ECALL]);
    boot(&mut chip, a, &pa);
    let (lo, hi) = NocAddr::unicast(a, go as u64).words();
    chip.write(NocAddr::unicast(b, USER.base as u64), &to_bytes(&[lo, hi])).unwrap();
    let mut pb = prologue();
    pb.extend(li(8, 3000));
    pb.extend([addi(8, 8, -1), bne(8, 0, -4), addi(7, 0, 1), sw(7, 6, 0x40), addi(11, 6, 0x40)]);
    pb.extend(issue(0, 11, 4, NocCmd::Write));
    pb.extend(wait_nonzero(NOC_WRITES_ACKED));
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
            ..small()
        };
        let (with, without) = (go_scenario(cfg(true)), go_scenario(cfg(false)));
        let a = worker(0, 0);
        let woke_at = |c: &Chip| c.read_u32(NocAddr::unicast(a, (USER.base + 0x84) as u64)).unwrap();
        assert!(woke_at(&without) > 3000, "A woke at {}", woke_at(&without));
        assert_eq!(woke_at(&with), woke_at(&without), "seed {seed}");
        assert_eq!(with.digest(), without.digest(), "seed {seed}");
        assert!(with.core(a).unwrap().fast_forwarded_cycles() > 3000, "A was parked while it waited");
        assert_eq!(without.core(a).unwrap().fast_forwarded_cycles(), 0);
        let (g1, t1) = gather(cfg(true));
        let (g2, t2) = gather(cfg(false));
        assert_eq!((g1.digest(), t1), (g2.digest(), t2), "seed {seed}");
    }
}

fn pct(seed: u64, depth: u32, steps: u64) -> SimConfig {
    SimConfig { seed, schedule: Schedule::Pct { depth, steps }, ..small() }
}

#[test]
fn pct_schedules_replay_and_change_the_timing() {
    let (a, ta) = gather(pct(3, 3, 2000));
    let (b, tb) = gather(pct(3, 3, 2000));
    assert_eq!((a.digest(), ta), (b.digest(), tb), "same seed, same PCT schedule");
    let (free, tf) = gather(SimConfig { seed: 3, ..small() });
    assert!(ta > tf, "PCT serialises the workers: done at {ta}, slice schedule at {tf}");
    // Seeds draw different priorities and change points: some finish
    // at another time.
    let times: std::collections::BTreeSet<u64> = (10..16).map(|s| gather(pct(s, 3, 2000)).1).collect();
    assert!(times.len() > 1, "every seed gave the same schedule: {times:?}");
    // Same gathered answer either way.
    let out = NocAddr::unicast(dispatcher(0), (USER.base + 0x400) as u64);
    assert_eq!(a.read_u32(out).unwrap(), free.read_u32(out).unwrap());
    // A window of one step is almost the slice schedule; fast-forward does
    // not change a PCT run.
    let (ff_on, t_on) = gather(SimConfig { fast_forward: true, ..pct(4, 2, 500) });
    let (ff_off, t_off) = gather(SimConfig { fast_forward: false, ..pct(4, 2, 500) });
    assert_eq!((ff_on.digest(), t_on), (ff_off.digest(), t_off));
}

#[test]
fn a_slowed_core_runs_at_its_factor_and_replays() {
    let slow = |factor| {
        let mut cfg = SimConfig { quantum_cycles: 20, ..small() };
        cfg.faults.slow_cores.push(SlowCore { core: worker(1, 1), factor });
        cfg
    };
    // The cycle at which the dispatcher saw every worker's increment.
    let done = |c: &Chip| c.read_u32(NocAddr::unicast(dispatcher(0), (USER.base + 0x404) as u64)).unwrap();
    let (base, _) = gather(slow(1.0));
    let (a, _) = gather(slow(2.0));
    let (b, _) = gather(slow(2.0));
    let (c, _) = gather(slow(8.0));
    assert_eq!(a.digest(), b.digest(), "same setting, same run");
    let (t1, t2, t8) = (done(&base), done(&a), done(&c));
    assert!(t1 < t2 && t2 < t8, "done at {t1} (full speed), {t2} (x2), {t8} (x8)");
    let (on, t_on) = gather(SimConfig { fast_forward: true, ..slow(3.0) });
    let (off, t_off) = gather(SimConfig { fast_forward: false, ..slow(3.0) });
    assert_eq!((on.digest(), t_on), (off.digest(), t_off), "fast-forward equivalence with a slowed core");
    let mut bad = small();
    bad.faults.slow_cores.push(SlowCore { core: worker(7, 7), factor: 2.0 });
    assert!(matches!(Chip::new(bad), Err(SimError::Config(ConfigError::NoSuchCore { .. }))));
}

/// Worker A polls a GO word; the host writes a payload word, then GO, then
/// lets the device run. A copies the payload next to the cycle it saw GO.
fn doorbell(cfg: SimConfig) -> (Chip, u32, u32) {
    let mut chip = Chip::new(cfg).unwrap();
    let a = worker(0, 0);
    let go = USER.base + 0x80;
    let mut p = li(6, go).to_vec();
    p.extend([lw(7, 6, 0), beq(7, 0, -4), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4)]);
    p.extend([lw(8, 6, 8), sw(8, 6, 12), ECALL]);
    boot(&mut chip, a, &p);
    chip.advance(1000);
    chip.write_u32(NocAddr::unicast(a, go as u64 + 8), 0x5eed).unwrap();
    chip.write_u32(NocAddr::unicast(a, go as u64), 1).unwrap();
    chip.run_until(|c| c.core(a).unwrap().hart.halted().is_some(), 1_000_000).unwrap();
    let at = |off: u64| chip.read_u32(NocAddr::unicast(a, go as u64 + off)).unwrap();
    let (woke, copied) = (at(4), at(12));
    (chip, woke, copied)
}

#[test]
fn late_doorbells_land_later_in_order_and_replay() {
    let late = |seed, delay| {
        let mut cfg = SimConfig { seed, ..small() };
        cfg.faults.host_write_delay_cycles = delay;
        cfg
    };
    let (_, prompt, copied) = doorbell(late(1, 0));
    assert_eq!(copied, 0x5eed);
    assert!(prompt < 1000 + 2 * 200, "without delay A sees GO within a slice or two: {prompt}");
    let (a, woke_a, copied_a) = doorbell(late(1, 5000));
    let (b, woke_b, _) = doorbell(late(1, 5000));
    assert_eq!((a.digest(), woke_a), (b.digest(), woke_b), "same seed, same delays");
    assert_eq!(copied_a, 0x5eed, "the payload, written first, landed no later than GO");
    let woken: std::collections::BTreeSet<u32> = (1..8).map(|s| doorbell(late(s, 5000)).1).collect();
    assert!(woken.len() > 1 && woken.iter().all(|&w| w <= 1000 + 5000 + 2 * 200), "{woken:?}");
    assert!(woken.iter().any(|&w| w > prompt + 400), "some seed delays the doorbell: {woken:?}");
    // A posted write is invisible until it lands; a host read lands it.
    let mut chip = Chip::new(late(9, 1_000_000)).unwrap();
    let at = NocAddr::unicast(worker(1, 0), USER.base as u64);
    chip.write_u32(at, 42).unwrap();
    chip.write_u32(at, 43).unwrap();
    assert_eq!(chip.read_u32(at).unwrap(), 0, "still posted");
    let mut buf = [0u8; 4];
    chip.host_read(at, &mut buf).unwrap();
    assert_eq!(u32::from_le_bytes(buf), 43, "landed in order by the read");
    assert_eq!(chip.in_flight(), 0);
    // Register writes are checked when posted, not when they land.
    assert!(matches!(chip.write_u32(reg(worker(1, 0), mmio::NOC_CMD), 1), Err(SimError::Mmio { .. })));
}

#[test]
fn every_knob_at_once_replays_bit_identically_with_and_without_fast_forward() {
    let cfg = |seed, fast_forward| {
        let mut c = SimConfig {
            seed,
            quantum_cycles: 64,
            quantum_jitter: 50,
            schedule: Schedule::Pct { depth: 3, steps: 3000 },
            fast_forward,
            ..small()
        };
        c.faults = Faults {
            core_stall_prob: 0.2,
            core_stall_cycles: 40,
            noc_jitter_cycles: 30,
            slow_cores: vec![SlowCore { core: worker(0, 1), factor: 1.5 }],
            host_write_delay_cycles: 300,
            write_backpressure_cycles: 100,
            reorder: seed % 2 == 1,
        };
        c
    };
    let (a, ta) = gather(cfg(5, true));
    let (b, tb) = gather(cfg(5, true));
    let (c, tc) = gather(cfg(5, false));
    assert_eq!((a.digest(), ta), (b.digest(), tb));
    assert_eq!((a.digest(), ta), (c.digest(), tc));
    let (d, _) = gather(cfg(6, true));
    assert_ne!(a.digest(), d.digest());
}

#[test]
fn power_on_reset_forgets_everything_but_keeps_external_sysmem() {
    let cfg = small();
    let ext = crate::memory::Sysmem::External(Box::new(vec![0xffu8; cfg.sysmem_size]));
    let mut chip = Chip::with_sysmem(cfg.clone(), ext).unwrap();
    assert!(chip.sysmem().iter().all(|&b| b == 0), "external sysmem is zeroed at power-on");
    let fresh = Chip::new(cfg.clone()).unwrap().digest();
    assert_eq!(chip.digest(), fresh);
    let (w, a) = (worker(1, 0), NocAddr::unicast(worker(1, 0), USER.base as u64));
    chip.write_u32(a, 7).unwrap();
    chip.write_u32(NocAddr::unicast(PCIE, 64), 9).unwrap();
    boot(&mut chip, w, &[addi(1, 0, 1), jal(0, -4)]);
    chip.advance(5000);
    chip.power_on_reset().unwrap();
    assert_eq!((chip.now(), chip.read_u32(a).unwrap(), chip.sysmem()[64]), (0, 0, 0));
    assert_eq!(chip.digest(), fresh, "bit-identical to a new chip");
    let short = crate::memory::Sysmem::owned(100);
    assert_eq!(
        Chip::with_sysmem(cfg.clone(), short).err(),
        Some(SimError::SysmemSize { expected: cfg.sysmem_size, found: 100 })
    );
}

#[test]
fn stalls_longer_than_a_slice_delay_parked_cores_exactly() {
    // A parked core's state may lie whole periods behind the slice start; a
    // stall must delay it from where it really is.
    for seed in 1..5 {
        let cfg = |fast_forward| {
            let mut c = SimConfig { seed, fast_forward, ..small() };
            c.faults.core_stall_prob = 0.3;
            c.faults.core_stall_cycles = 500;
            c
        };
        let (with, without) = (go_scenario(cfg(true)), go_scenario(cfg(false)));
        assert_eq!(with.digest(), without.digest(), "seed {seed}");
        assert!(with.core(worker(0, 0)).unwrap().fast_forwarded_cycles() > 0, "seed {seed}: A was parked");
        let (g1, t1) = gather(cfg(true));
        let (g2, t2) = gather(cfg(false));
        assert_eq!((g1.digest(), t1), (g2.digest(), t2), "seed {seed}");
    }
}

#[test]
fn deliveries_a_parked_loop_does_not_read_leave_it_parked_with_the_same_results() {
    // A polls GO; B first NOC-writes another word of A's L1 (and gets acks
    // A's loop never reads), computes, then writes GO.
    let run = |fast_forward| {
        let mut chip = Chip::new(SimConfig { seed: 3, quantum_jitter: 30, fast_forward, ..small() }).unwrap();
        let (a, b) = (worker(0, 0), worker(1, 1));
        let go = USER.base + 0x80;
        let mut pa = li(6, go).to_vec();
        pa.extend([lw(7, 6, 0), beq(7, 0, -4), csrrs(13, csr::MCYCLE as u32, 0), sw(13, 6, 4), ECALL]);
        boot(&mut chip, a, &pa);
        let other = NocAddr::unicast(a, go as u64 + 0x100).words();
        let gow = NocAddr::unicast(a, go as u64).words();
        chip.write(NocAddr::unicast(b, USER.base as u64), &to_bytes(&[other.0, other.1, gow.0, gow.1])).unwrap();
        let mut pb = prologue();
        pb.extend([addi(7, 0, 5), sw(7, 6, 0x40), addi(11, 6, 0x40)]);
        pb.extend(issue(0, 11, 4, NocCmd::Write));
        pb.extend(wait_nonzero(NOC_WRITES_ACKED));
        pb.extend(li(8, 2000));
        pb.extend([addi(8, 8, -1), bne(8, 0, -4), addi(7, 0, 1), sw(7, 6, 0x40)]);
        pb.extend(issue(2, 11, 4, NocCmd::Write));
        pb.push(ECALL);
        boot(&mut chip, b, &pb);
        chip.advance(50_000);
        chip
    };
    let (on, off) = (run(true), run(false));
    let a = worker(0, 0);
    let at = |c: &Chip, off: u32| c.read_u32(NocAddr::unicast(a, (USER.base + off) as u64)).unwrap();
    assert_eq!(at(&on, 0x180), 5, "the other word landed");
    assert!(at(&off, 0x84) > 2000, "A saw GO only after B's compute: {}", at(&off, 0x84));
    assert_eq!((on.digest(), at(&on, 0x84)), (off.digest(), at(&off, 0x84)));
    assert!(on.core(a).unwrap().fast_forwarded_cycles() > 2000);
}

/// A statistical profile: one sample per slice end, weighted by the
/// slice's cycles, each in the loop the core runs; a run sampled is the
/// run unsampled.
#[test]
fn pc_samples_land_in_the_running_loop_and_change_nothing() {
    let b = CODE.base;
    // Three slow divisions and a quick add per lap.
    let program =
        [addi(5, 0, 1), lui(7, 0x7ffff), div(6, 7, 5), div(6, 7, 5), div(6, 7, 5), addi(6, 6, 1), jal(0, -16)];
    let lap = b + 8..=b + 24;
    let run = |sample: bool| {
        let mut chip = Chip::new(small()).unwrap();
        if sample {
            chip.set_pc_sampling(&[worker(0, 0)]).unwrap();
        }
        boot(&mut chip, worker(0, 0), &program);
        chip.advance(100_000);
        (chip.digest(), chip.pc_samples())
    };
    let (plain, none) = run(false);
    let (sampled, samples) = run(true);
    assert_eq!(plain, sampled, "sampling changes nothing");
    assert!(none.is_empty());
    let total: u64 = samples.iter().map(|s| s.2).sum();
    assert_eq!(total, 100_000, "the samples' cycles are the time sampled: {samples:?}");
    assert!(samples.iter().all(|&(c, pc, _)| c == worker(0, 0) && lap.contains(&pc)), "{samples:?}");
    // The lap touches no memory: fast-forward parks the core at its head,
    // where nearly every sample then finds it.
    let head: u64 = samples.iter().filter(|s| s.1 == b + 8).map(|s| s.2).sum();
    assert!(head * 10 >= total * 9, "{samples:?}");
    let mut chip = Chip::new(small()).unwrap();
    assert!(chip.set_pc_sampling(&[Coord::new(60, 60)]).is_err(), "no core there");
}
