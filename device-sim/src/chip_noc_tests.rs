//! The NOC model's fidelity (see `noc`): writes read their source as their
//! flits leave, reads land flit by flit, same-route transactions stay in
//! order under any jitter (unless `faults.reorder`), and faults draw from
//! their own random streams.

use super::*;
use crate::asm::*;
use crate::config::Faults;
use crate::csr;
use cqlab_abi::memory_map::{CODE, USER};
use cqlab_abi::mmio::{NOC_ATOMICS_ACKED, NOC_READS_ACKED, NOC_UNACKED, NOC_WRITES_ACKED, NOC_WRITES_SENT};
use cqlab_abi::noc::worker;

fn small(seed: u64, fast_forward: bool) -> SimConfig {
    SimConfig {
        seed,
        worker_cols: 2,
        worker_rows: 2,
        num_cqs: 1,
        dram_banks: 2,
        dram_bank_size: 1 << 20,
        sysmem_size: 1 << 20,
        fast_forward,
        ..Default::default()
    }
}

const MMIO: u32 = 10; // x10 = MMIO_BASE
const TMP: u32 = 7;
/// Where the tests' NOC target words sit on the issuing core.
const PARAMS: u32 = USER.base;
/// Source of the writes, destination of the reads.
const BUF: u32 = USER.base + 0x1000;
const SRC: Coord = worker(0, 0);

fn set(off: u32, src: u32) -> u32 {
    sw(src, MMIO, off as i32)
}

/// Issues `cmd` to the target stored at `PARAMS + 8 * p`, local `BUF`, `len` bytes.
fn issue(p: u32, len: u32, cmd: NocCmd) -> Vec<u32> {
    let mut v = li(6, PARAMS + 8 * p).to_vec();
    v.extend([lw(TMP, 6, 0), set(mmio::NOC_TARGET_LO, TMP), lw(TMP, 6, 4), set(mmio::NOC_TARGET_HI, TMP)]);
    v.extend(li(TMP, BUF));
    v.push(set(mmio::NOC_LOCAL_ADDR, TMP));
    v.extend(li(TMP, len));
    v.extend([set(mmio::NOC_LEN, TMP), addi(TMP, 0, cmd as i32), set(mmio::NOC_CMD, TMP)]);
    v
}

/// Spins until counter `off` reaches `n`.
fn wait_for(off: u32, n: i32) -> [u32; 4] {
    [addi(8, 0, n), lw(TMP, MMIO, off as i32), bne(TMP, 8, -4), FENCE]
}

/// Stores `value` at `BUF + at`.
fn overwrite(at: i32, value: u32) -> Vec<u32> {
    let mut v = li(6, BUF).to_vec();
    v.extend(li(9, value));
    v.push(sw(9, 6, at));
    v
}

/// Boots `program` on `SRC` with its NOC targets and a source pattern.
fn chip_with(cfg: SimConfig, targets: &[NocAddr], program: &[u32]) -> Chip {
    let mut chip = Chip::new(cfg).unwrap();
    chip.write(NocAddr::unicast(SRC, BUF as u64), &[0xAA; 512]).unwrap();
    chip_with_sources(chip, targets, program)
}

fn word(chip: &Chip, at: NocAddr) -> u32 {
    chip.read_u32(at).unwrap()
}

/// A 512-byte write, its source overwritten (first and last word) right
/// after issue, or only once the write has been sent.
fn overwrite_after_issue(target: NocAddr, wait_sent_first: bool, fast_forward: bool) -> Chip {
    let mut p = issue(0, 512, NocCmd::Write);
    if wait_sent_first {
        p.extend(wait_for(NOC_WRITES_SENT, 1));
    }
    p.extend(overwrite(0, 0x1111_1111));
    p.extend(overwrite(508, 0x2222_2222));
    p.extend(wait_for(NOC_WRITES_ACKED, 1));
    chip_with(small(3, fast_forward), &[target], &p)
}

#[test]
fn a_source_overwritten_one_cycle_after_issue_lands_overwritten_unicast() {
    let dst = NocAddr::unicast(worker(1, 0), USER.base as u64 + 0x8000);
    let chip = overwrite_after_issue(dst, false, true);
    assert_eq!(word(&chip, dst), 0x1111_1111, "the first flit left after the store");
    assert_eq!(word(&chip, dst.offset(508)), 0x2222_2222, "so did the last");
    assert_eq!(word(&chip, dst.offset(4)), 0xAAAA_AAAA);
    // After waiting for sent, reusing the source is safe.
    let chip = overwrite_after_issue(dst, true, true);
    assert_eq!(word(&chip, dst), 0xAAAA_AAAA);
    assert_eq!(word(&chip, dst.offset(508)), 0xAAAA_AAAA);
    // Both with fast-forward off: bit-identical.
    for sent in [false, true] {
        assert_eq!(overwrite_after_issue(dst, sent, true).digest(), overwrite_after_issue(dst, sent, false).digest());
    }
}

/// A 512-byte write whose source's first word is overwritten about 400
/// cycles after issue (or once it has been sent), under write
/// back-pressure of up to `backpressure` cycles: the word that landed.
fn overwrite_later(seed: u64, backpressure: u64, wait_sent_first: bool, fast_forward: bool) -> (u32, u64) {
    let dst = NocAddr::unicast(worker(1, 0), USER.base as u64 + 0x8000);
    let mut p = issue(0, 512, NocCmd::Write);
    if wait_sent_first {
        p.extend(wait_for(NOC_WRITES_SENT, 1));
    }
    p.extend([addi(8, 0, 200), addi(8, 8, -1), bne(8, 0, -4)]);
    p.extend(overwrite(0, 0x1111_1111));
    p.extend(wait_for(NOC_WRITES_ACKED, 1));
    let mut cfg = small(seed, fast_forward);
    cfg.faults = Faults { write_backpressure_cycles: backpressure, ..Default::default() };
    let chip = chip_with(cfg, &[dst], &p);
    (word(&chip, dst), chip.digest())
}

#[test]
fn backpressure_delays_when_a_write_reads_its_source() {
    let seeds = 0..8;
    for seed in seeds.clone() {
        assert_eq!(overwrite_later(seed, 0, false, true).0, 0xAAAA_AAAA, "seed {seed}: left before the store");
        // Waiting for "sent" stays a safe point to reuse the source.
        assert_eq!(overwrite_later(seed, 5000, true, true).0, 0xAAAA_AAAA, "seed {seed}");
        // Fast-forward stays an optimisation under back-pressure.
        assert_eq!(overwrite_later(seed, 5000, false, true), overwrite_later(seed, 5000, false, false));
    }
    let late = seeds.filter(|&s| overwrite_later(s, 5000, false, true).0 == 0x1111_1111).count();
    assert!(late > 0, "some seed should hold the write until after the store");
}

#[test]
fn a_source_overwritten_one_cycle_after_issue_lands_overwritten_multicast() {
    let dst = NocAddr::multicast(worker(0, 1), worker(1, 1), USER.base as u64 + 0x8000);
    let at = |c: Coord| NocAddr::unicast(c, dst.local());
    let chip = overwrite_after_issue(dst, false, true);
    // One read of the source serves every destination.
    for c in [worker(0, 1), worker(1, 1)] {
        assert_eq!(word(&chip, at(c)), 0x1111_1111);
        assert_eq!(word(&chip, at(c).offset(508)), 0x2222_2222);
    }
    let chip = overwrite_after_issue(dst, true, true);
    for c in [worker(0, 1), worker(1, 1)] {
        assert_eq!(word(&chip, at(c)), 0xAAAA_AAAA);
        assert_eq!(word(&chip, at(c).offset(508)), 0xAAAA_AAAA);
    }
}

#[test]
fn sent_counts_before_acked() {
    // Wait for sent, record ACKED then: the write is still in flight.
    let dst = NocAddr::unicast(worker(1, 1), USER.base as u64 + 0x8000);
    let mut p = issue(0, 512, NocCmd::Write);
    p.extend(wait_for(NOC_WRITES_SENT, 1));
    p.extend([lw(9, MMIO, NOC_WRITES_ACKED as i32)]);
    p.extend(li(6, BUF + 0x400));
    p.push(sw(9, 6, 0));
    p.extend(wait_for(NOC_WRITES_ACKED, 1));
    let chip = chip_with(small(1, true), &[dst], &p);
    assert_eq!(word(&chip, NocAddr::unicast(SRC, BUF as u64 + 0x400)), 0, "acked when sent");
    assert_eq!(word(&chip, dst), 0xAAAA_AAAA);
}

#[test]
fn unacked_counts_writes_and_atomics_until_they_land() {
    // A write and an atomic: both unacknowledged right after issue; the
    // parked wait for 0 wakes when the last acknowledgement arrives.
    let dst = NocAddr::unicast(worker(1, 1), USER.base as u64 + 0x8000);
    let sem = NocAddr::unicast(worker(1, 0), USER.base as u64 + 0x8000);
    for fast_forward in [false, true] {
        let mut p = issue(0, 512, NocCmd::Write);
        p.extend(issue(1, 4, NocCmd::AtomicInc));
        p.extend([lw(9, MMIO, NOC_UNACKED as i32)]);
        p.extend(li(6, BUF + 0x400));
        p.push(sw(9, 6, 0));
        p.extend(wait_for(NOC_UNACKED, 0));
        p.extend([lw(9, MMIO, NOC_WRITES_ACKED as i32), lw(8, MMIO, NOC_ATOMICS_ACKED as i32), add(9, 9, 8)]);
        p.push(sw(9, 6, 4));
        let chip = chip_with(small(1, fast_forward), &[dst, sem], &p);
        let at = |off: u64| word(&chip, NocAddr::unicast(SRC, BUF as u64 + 0x400 + off));
        assert_eq!(at(0), 2, "one write and one atomic in flight");
        assert_eq!(at(4), 2, "both acknowledged once NOC_UNACKED reads 0");
        assert_eq!(word(&chip, dst), 0xAAAA_AAAA);
    }
}

/// Two 4-byte writes (1, then 2) to one address; the value left there.
fn last_of_two_writes(seed: u64, reorder: bool) -> u32 {
    let dst = NocAddr::unicast(worker(1, 1), USER.base as u64 + 0x8000);
    let mut p = overwrite(0, 1);
    p.extend(issue(0, 4, NocCmd::Write));
    p.extend(wait_for(NOC_WRITES_SENT, 1));
    p.extend(overwrite(0, 2));
    p.extend(issue(0, 4, NocCmd::Write));
    p.extend(wait_for(NOC_WRITES_ACKED, 2));
    let mut cfg = small(seed, true);
    cfg.faults = Faults { noc_jitter_cycles: 100_000, reorder, ..Default::default() };
    word(&chip_with(cfg, &[dst], &p), dst)
}

#[test]
fn same_route_writes_never_reorder_under_maximal_jitter_unless_reorder_is_on() {
    let seeds = 0..24;
    for seed in seeds.clone() {
        assert_eq!(last_of_two_writes(seed, false), 2, "seed {seed}: the later write landed first");
    }
    let reordered = seeds.filter(|&s| last_of_two_writes(s, true) == 1).count();
    assert!(reordered > 0, "with `reorder` some seed should let the second write overtake");
}

#[test]
fn a_read_lands_flit_by_flit() {
    let len = 8192u32;
    let from = NocAddr::unicast(worker(1, 0), USER.base as u64 + 0x8000);
    let mut p = issue(0, len, NocCmd::Read);
    p.extend(wait_for(NOC_READS_ACKED, 1));
    let cfg = SimConfig { quantum_cycles: 8, ..small(0, true) };
    let mut chip = Chip::new(cfg).unwrap();
    chip.write(from, &vec![0x5A; len as usize]).unwrap();
    let params: Vec<u8> = [from.words().0, from.words().1].iter().flat_map(|w| w.to_le_bytes()).collect();
    chip.write(NocAddr::unicast(SRC, PARAMS as u64), &params).unwrap();
    let mut prog = li(MMIO, MMIO_BASE).to_vec();
    prog.extend(p);
    prog.push(ECALL);
    chip.write(NocAddr::unicast(SRC, CODE.base as u64), &to_bytes(&prog)).unwrap();
    chip.set_reset(SRC, false).unwrap();
    let first = NocAddr::unicast(SRC, BUF as u64);
    let last = first.offset(len as u64 - 4);
    chip.run_until(|c| c.read_u32(first).unwrap() != 0, 10_000).unwrap();
    assert_eq!(word(&chip, last), 0, "an early look sees the read partly landed");
    assert_eq!(word(&chip, reg_addr(SRC, NOC_READS_ACKED)), 0);
    chip.run_until(|c| c.core(SRC).unwrap().hart.halted().is_some(), 10_000).unwrap();
    assert_eq!(word(&chip, last), 0x5A5A_5A5A);
}

fn reg_addr(core: Coord, off: u32) -> NocAddr {
    NocAddr::unicast(core, (MMIO_BASE + off) as u64)
}

#[test]
fn turning_on_core_stalls_does_not_reshuffle_the_jitter() {
    // Zero-cycle stalls change nothing but draw from their own stream: the
    // run stays bit-identical (one shared stream would have reshuffled the
    // jitter and the slice order).
    let run = |stall_prob| {
        let mut cfg = SimConfig { quantum_jitter: 40, ..small(11, true) };
        cfg.faults = Faults { noc_jitter_cycles: 300, core_stall_prob: stall_prob, ..Default::default() };
        let (chip, t) = super::tests::gather(cfg);
        (chip.digest(), t)
    };
    assert_eq!(run(0.0), run(0.5));
}

/// Where `reads_take` leaves its measurement on `SRC`.
const ELAPSED: u32 = PARAMS + 0x100;

/// [`small`] with 4-cycle slices: NOC deliveries become visible at slice
/// ends, so cycle counts measured by the core are exact to 4 cycles.
fn fine(fast_forward: bool) -> SimConfig {
    SimConfig { quantum_cycles: 4, ..small(5, fast_forward) }
}

/// Issues one `len`-byte read from each of `from` back to back (into `BUF`)
/// and waits for all of them: the cycles from the first issue to the last
/// completion, and the chip's digest.
fn reads_take(from: &[NocAddr], len: u32, fast_forward: bool) -> (u64, u64) {
    let mut p = vec![csrrs(20, csr::MCYCLE as u32, 0)];
    for k in 0..from.len() {
        p.extend(issue(k as u32, len, NocCmd::Read));
    }
    p.extend(wait_for(NOC_READS_ACKED, from.len() as i32));
    p.extend([csrrs(9, csr::MCYCLE as u32, 0), sub(9, 9, 20)]);
    p.extend(li(6, ELAPSED));
    p.push(sw(9, 6, 0));
    let mut chip = Chip::new(fine(fast_forward)).unwrap();
    for (k, f) in from.iter().enumerate() {
        chip.write(*f, &vec![0x10 + k as u8; len as usize]).unwrap();
    }
    let chip = chip_with_sources(chip, from, &p);
    let last = NocAddr::unicast(SRC, (BUF + len - 4) as u64);
    assert_ne!(word(&chip, last), 0, "the reads landed");
    (word(&chip, NocAddr::unicast(SRC, ELAPSED as u64)) as u64, chip.digest())
}

/// [`chip_with`] on a chip whose read sources are already filled.
fn chip_with_sources(mut chip: Chip, targets: &[NocAddr], program: &[u32]) -> Chip {
    let words: Vec<u8> = targets.iter().flat_map(|t| [t.words().0, t.words().1]).flat_map(u32::to_le_bytes).collect();
    chip.write(NocAddr::unicast(SRC, PARAMS as u64), &words).unwrap();
    let mut p = li(MMIO, MMIO_BASE).to_vec();
    p.extend_from_slice(program);
    p.push(ECALL);
    chip.write(NocAddr::unicast(SRC, CODE.base as u64), &to_bytes(&p)).unwrap();
    chip.set_reset(SRC, false).unwrap();
    let halted = |c: &Chip| c.core(SRC).unwrap().hart.halted().is_some();
    chip.run_until(halted, 100_000).unwrap();
    chip
}

#[test]
fn concurrent_pcie_reads_share_the_link_but_overlap_their_latency() {
    let len = 8192;
    let host = |off: u64| NocAddr::unicast(cqlab_abi::noc::PCIE, off);
    let cfg = small(5, true);
    // Data time of one read on the host -> device direction: 335 cycles at
    // 24.5 B/cycle; its latency is 750.
    let data = (len as u64 * 1000).div_ceil(cfg.pcie.read_bytes_per_kcycle);
    let (one, _) = reads_take(&[host(0)], len, true);
    let (two, d2) = reads_take(&[host(0), host(0x4000)], len, true);
    let (four, _) = reads_take(&[host(0), host(0x4000), host(0x8000), host(0xC000)], len, true);
    // Each further read adds its data time (plus the ~20 cycles its issue
    // takes), not its whole latency: the requests are pipelined.
    let issue_slack = 40;
    let near = |n: u64| n * data - 10..=n * (data + issue_slack);
    assert!(near(1).contains(&(two - one)), "one read {one}, two {two}, data time {data}");
    assert!(near(3).contains(&(four - one)), "one read {one}, four {four}");
    assert!(two < one + cfg.pcie.read_latency_cycles, "the second read's latency overlapped the first's");
    assert_eq!(d2, reads_take(&[host(0), host(0x4000)], len, false).1, "fast-forward changes nothing");
}

#[test]
fn concurrent_pcie_writes_share_the_link() {
    // Two 8 KiB writes to host memory: the second lands one data time
    // (8192 B at 26 B/cycle = 316 cycles) after the first, where a lone
    // write of its own would have landed as early as the NIU let it.
    let len = 8192;
    let host = |off: u64| NocAddr::unicast(cqlab_abi::noc::PCIE, off);
    let acked_after = |n: usize| {
        let mut p = vec![csrrs(20, csr::MCYCLE as u32, 0)];
        for k in 0..n {
            p.extend(issue(k as u32, len, NocCmd::Write));
        }
        p.extend(wait_for(NOC_WRITES_ACKED, n as i32));
        p.extend([csrrs(9, csr::MCYCLE as u32, 0), sub(9, 9, 20)]);
        p.extend(li(6, ELAPSED));
        p.push(sw(9, 6, 0));
        let chip = chip_with(fine(true), &[host(0), host(0x4000)], &p);
        word(&chip, NocAddr::unicast(SRC, ELAPSED as u64)) as u64
    };
    let cfg = small(5, true);
    let data = (len as u64 * 1000).div_ceil(cfg.pcie.write_bytes_per_kcycle);
    let (one, two) = (acked_after(1), acked_after(2));
    // The NIU sends the packets 256 cycles apart; the link needs 316.
    assert!((data - 10..=data + 40).contains(&(two - one)), "one write {one}, two {two}, data time {data}");
}

/// A slow read (host memory) with transaction id 1, then a quick one (a
/// neighbour's L1) with id 2: waiting on id 2's counter returns while the
/// first is still in flight (its counter still 0), and each id counts only
/// its own reads.
#[test]
fn reads_count_per_transaction_id() {
    let (slow, quick) = (NocAddr::unicast(cqlab_abi::noc::PCIE, 0), NocAddr::unicast(worker(1, 0), USER.base as u64));
    let set_id = |id: u32| [addi(TMP, 0, id as i32), set(mmio::NOC_READ_ID, TMP)];
    let mut p = set_id(1).to_vec();
    p.extend(issue(0, 8192, NocCmd::Read));
    p.extend(set_id(2));
    p.extend(issue(1, 64, NocCmd::Read));
    p.extend(wait_for(mmio::noc_reads_acked_id(2), 1));
    p.extend([lw(9, MMIO, mmio::noc_reads_acked_id(1) as i32), lw(8, MMIO, NOC_READS_ACKED as i32)]);
    p.extend(li(6, ELAPSED));
    p.extend([sw(9, 6, 0), sw(8, 6, 4)]);
    p.extend(wait_for(mmio::noc_reads_acked_id(1), 1));
    let chip = chip_with(small(2, true), &[slow, quick], &p);
    let at = |off: u32| word(&chip, NocAddr::unicast(SRC, (ELAPSED + off) as u64));
    assert_eq!((at(0), at(4)), (0, 1), "id 2's read landed alone, id 1's still in flight");
    let reg = |off: u32| word(&chip, reg_addr(SRC, off));
    assert_eq!((reg(mmio::noc_reads_acked_id(1)), reg(mmio::noc_reads_acked_id(2))), (1, 1));
    assert_eq!((reg(mmio::noc_reads_acked_id(0)), reg(NOC_READS_ACKED)), (0, 2));
    assert_eq!(reg(mmio::NOC_READ_ID), 2, "the id stays set for later reads");

    // An id out of range is refused: the core halts on the store.
    let bad = [addi(TMP, 0, mmio::NOC_READ_IDS as i32), set(mmio::NOC_READ_ID, TMP)];
    let chip = chip_with(small(2, true), &[], &bad);
    let halt = chip.core(SRC).unwrap().hart.halted().unwrap();
    assert!(matches!(halt.reason, crate::hart::HaltReason::Rejected { .. }), "{halt:?}");
}
