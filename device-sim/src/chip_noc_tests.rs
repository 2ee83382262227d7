//! The NOC model's fidelity (see `noc`): writes read their source as their
//! flits leave, reads land flit by flit, same-route transactions stay in
//! order under any jitter (unless `faults.reorder`), the NIU counters move
//! when tt-isa says they do, and faults draw from their own random streams.
//! Programs drive the NIU as tt-metal does (`niu_asm`).

use super::tests::{boot, gather, halted, host, niu, tiles};
use super::*;
use crate::asm::*;
use crate::config::Faults;
use crate::csr;
use cqlab_abi::memory_map::USER;

fn small(seed: u64, fast_forward: bool) -> SimConfig {
    SimConfig { seed, sysmem_size: 1 << 20, fast_forward, ..SimConfig::default() }
}

/// Source of the writes, destination of the reads, on the issuing tile.
const BUF: u32 = USER.base + 0x1000;
/// Where programs leave what they measured, on the issuing tile.
const OUT: u32 = USER.base + 0x400;

/// The issuing tile (the first Tensix tile) and the others.
fn cast(chip: &Chip) -> (Coord, Vec<Coord>) {
    let t = tiles(chip);
    (t[0], t[1..].to_vec())
}

fn word(chip: &Chip, at: NocAddr) -> u32 {
    chip.read_u32(at).unwrap()
}

fn out(chip: &Chip, off: u32) -> u32 {
    let src = cast(chip).0;
    word(chip, NocAddr::unicast(src, (OUT + off) as u64))
}

/// Stores `value` at `BUF + at`.
fn overwrite(at: i32, value: u32) -> Vec<u32> {
    let mut v = li(6, BUF).to_vec();
    v.extend(li(9, value));
    v.push(sw(9, 6, at));
    v
}

/// Stores register `r` at `OUT + at`.
fn record(r: u32, at: i32) -> Vec<u32> {
    let mut v = li(6, OUT).to_vec();
    v.push(sw(r, 6, at));
    v
}

/// Boots `program` (then `ecall`) on the issuing tile of `chip` and runs
/// until it halts.
fn run(mut chip: Chip, program: Vec<u32>) -> Chip {
    let src = cast(&chip).0;
    let mut p = program;
    p.push(ECALL);
    boot(&mut chip, src, &p);
    chip.run_until(|c| halted(c, src), 1_000_000).unwrap();
    chip
}

/// A chip whose issuing tile holds a 512-byte 0xAA source pattern at BUF.
fn with_source(cfg: SimConfig) -> Chip {
    let mut chip = Chip::new(cfg).unwrap();
    let src = cast(&chip).0;
    chip.write(NocAddr::unicast(src, BUF as u64), &[0xAA; 512]).unwrap();
    chip
}

/// A 512-byte write to `target`(chip), its source overwritten (first and
/// last word) right after issue, or only once the write has been sent.
fn overwrite_after_issue(target: fn(&Chip) -> NocAddr, wait_sent_first: bool, fast_forward: bool) -> (Chip, NocAddr) {
    let chip = with_source(small(3, fast_forward));
    let (src, dst) = (cast(&chip).0, target(&chip));
    let niu = niu(&chip, Noc::Noc0);
    let mut p = niu.write(src, BUF, dst, 512);
    if wait_sent_first {
        p.extend(niu.wait_counter(counter::NIU_MST_NONPOSTED_WR_REQ_SENT, 1));
    }
    p.extend(overwrite(0, 0x1111_1111));
    p.extend(overwrite(508, 0x2222_2222));
    let acks = if dst.is_multicast() { 2 } else { 1 };
    p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, acks));
    (run(chip, p), dst)
}

fn unicast_dst(chip: &Chip) -> NocAddr {
    NocAddr::unicast(cast(chip).1[0], USER.base as u64 + 0x8000)
}

/// Two tiles of the row below the issuing tile's.
fn multicast_dst(chip: &Chip) -> NocAddr {
    let src = cast(chip).0;
    let (s, e) = (Coord::new(src.x, src.y + 1), Coord::new(src.x + 1, src.y + 1));
    NocAddr::multicast(s, e, USER.base as u64 + 0x8000)
}

#[test]
fn a_source_overwritten_one_cycle_after_issue_lands_overwritten_unicast() {
    let (chip, dst) = overwrite_after_issue(unicast_dst, false, true);
    assert_eq!(word(&chip, dst), 0x1111_1111, "the first flit left after the store");
    assert_eq!(word(&chip, dst.offset(508)), 0x2222_2222, "so did the last");
    assert_eq!(word(&chip, dst.offset(4)), 0xAAAA_AAAA);
    // After waiting for sent, reusing the source is safe.
    let (chip, _) = overwrite_after_issue(unicast_dst, true, true);
    assert_eq!(word(&chip, dst), 0xAAAA_AAAA);
    assert_eq!(word(&chip, dst.offset(508)), 0xAAAA_AAAA);
    // Both with fast-forward off: bit-identical.
    for sent in [false, true] {
        let digest = |ff| overwrite_after_issue(unicast_dst, sent, ff).0.digest();
        assert_eq!(digest(true), digest(false));
    }
}

/// A 512-byte write whose source's first word is overwritten about 400
/// cycles after issue (or once it has been sent), under write
/// back-pressure of up to `backpressure` cycles: the word that landed.
fn overwrite_later(seed: u64, backpressure: u64, wait_sent_first: bool, fast_forward: bool) -> (u32, u64) {
    let mut cfg = small(seed, fast_forward);
    cfg.faults = Faults { write_backpressure_cycles: backpressure, ..Default::default() };
    let chip = with_source(cfg);
    let (src, dst) = (cast(&chip).0, unicast_dst(&chip));
    let niu = niu(&chip, Noc::Noc0);
    let mut p = niu.write(src, BUF, dst, 512);
    if wait_sent_first {
        p.extend(niu.wait_counter(counter::NIU_MST_NONPOSTED_WR_REQ_SENT, 1));
    }
    p.extend([addi(8, 0, 200), addi(8, 8, -1), bne(8, 0, -4)]);
    p.extend(overwrite(0, 0x1111_1111));
    p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
    let mut chip = run(chip, p);
    (word(&chip, dst), chip.digest())
}

#[test]
fn backpressure_delays_when_a_write_reads_its_source() {
    let seeds = 0..6;
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
    let (chip, dst) = overwrite_after_issue(multicast_dst, false, true);
    let (s, e) = dst.rect();
    let receivers = [s, e];
    let at = |c: Coord| NocAddr::unicast(c, dst.local());
    // One read of the source serves every destination.
    for c in receivers {
        assert_eq!(word(&chip, at(c)), 0x1111_1111);
        assert_eq!(word(&chip, at(c).offset(508)), 0x2222_2222);
    }
    let (chip, _) = overwrite_after_issue(multicast_dst, true, true);
    for c in receivers {
        assert_eq!(word(&chip, at(c)), 0xAAAA_AAAA);
        assert_eq!(word(&chip, at(c).offset(508)), 0xAAAA_AAAA);
    }
}

#[test]
fn sent_counts_before_acked() {
    // Wait for sent (`noc_async_writes_flushed`), record the acks then:
    // the write is still in flight.
    let chip = with_source(small(1, true));
    let (src, dst) = (cast(&chip).0, unicast_dst(&chip));
    let niu = niu(&chip, Noc::Noc0);
    let mut p = niu.write(src, BUF, dst, 512);
    p.extend(niu.wait_counter(counter::NIU_MST_NONPOSTED_WR_REQ_SENT, 1));
    p.extend(niu.load_counter(9, counter::NIU_MST_WR_ACK_RECEIVED));
    p.extend(record(9, 0));
    p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
    let chip = run(chip, p);
    assert_eq!(out(&chip, 0), 0, "not acked when sent");
    assert_eq!(word(&chip, dst), 0xAAAA_AAAA);
}

#[test]
fn outstanding_counts_writes_and_atomics_until_they_are_acknowledged() {
    // A write and an atomic (transaction id 0): both outstanding right
    // after issue; the parked wait for 0 wakes when the last response
    // arrives.
    for fast_forward in [false, true] {
        let chip = with_source(small(1, fast_forward));
        let (src, others) = cast(&chip);
        let (dst, sem) = (unicast_dst(&chip), NocAddr::unicast(others[1], USER.base as u64 + 0x8000));
        let niu = niu(&chip, Noc::Noc0);
        let outstanding = counter::reqs_outstanding_id(0);
        let mut p = niu.write(src, BUF, dst, 512);
        p.extend(niu.atomic_inc(src, sem, 1, BUF + 0x300));
        p.extend(niu.load_counter(9, outstanding));
        p.extend(record(9, 0));
        p.extend(niu.wait_counter(outstanding, 0));
        p.extend(niu.load_counter(9, counter::NIU_MST_WR_ACK_RECEIVED));
        p.extend(niu.load_counter(8, counter::NIU_MST_ATOMIC_RESP_RECEIVED));
        p.push(add(9, 9, 8));
        p.extend(record(9, 4));
        let chip = run(chip, p);
        assert_eq!(out(&chip, 0), 2, "one write and one atomic in flight");
        assert_eq!(out(&chip, 4), 2, "both acknowledged once the outstanding count reads 0");
        assert_eq!(word(&chip, dst), 0xAAAA_AAAA);
        assert_eq!(word(&chip, sem), 1);
    }
}

/// Two 4-byte writes (1, then 2) to one address; the value left there.
fn last_of_two_writes(seed: u64, reorder: bool) -> u32 {
    let mut cfg = small(seed, true);
    cfg.faults = Faults { noc_jitter_cycles: 100_000, reorder, ..Default::default() };
    let chip = Chip::new(cfg).unwrap();
    let (src, dst) = (cast(&chip).0, unicast_dst(&chip));
    let niu = niu(&chip, Noc::Noc0);
    let mut p = overwrite(0, 1);
    p.extend(niu.write(src, BUF, dst, 4));
    p.extend(niu.wait_counter(counter::NIU_MST_NONPOSTED_WR_REQ_SENT, 1));
    p.extend(overwrite(0, 2));
    p.extend(niu.write(src, BUF, dst, 4));
    p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 2));
    word(&run(chip, p), dst)
}

#[test]
fn same_route_writes_never_reorder_under_maximal_jitter_unless_reorder_is_on() {
    let seeds = 0..16;
    for seed in seeds.clone() {
        assert_eq!(last_of_two_writes(seed, false), 2, "seed {seed}: the later write landed first");
    }
    let reordered = seeds.filter(|&s| last_of_two_writes(s, true) == 1).count();
    assert!(reordered > 0, "with `reorder` some seed should let the second write overtake");
}

#[test]
fn a_read_lands_flit_by_flit() {
    let len = 8192u32;
    let cfg = SimConfig { quantum_cycles: 8, ..small(0, true) };
    let mut chip = Chip::new(cfg).unwrap();
    assert!(len <= chip.arch().noc.max_packet);
    let (src, others) = cast(&chip);
    let from = NocAddr::unicast(others[0], USER.base as u64 + 0x8000);
    chip.write(from, &vec![0x5A; len as usize]).unwrap();
    let niu = niu(&chip, Noc::Noc0);
    let mut p = niu.read(src, from, BUF, len, 0);
    p.extend(niu.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, 1));
    p.push(ECALL);
    boot(&mut chip, src, &p);
    let first = NocAddr::unicast(src, BUF as u64);
    let last = first.offset(len as u64 - 4);
    chip.run_until(|c| c.read_u32(first).unwrap() != 0, 10_000).unwrap();
    assert_eq!(word(&chip, last), 0, "an early look sees the read partly landed");
    let resp = NocAddr::unicast(src, chip.arch().niu.status_reg(Noc::Noc0, counter::NIU_MST_RD_RESP_RECEIVED) as u64);
    assert_eq!(word(&chip, resp), 0);
    chip.run_until(|c| halted(c, src), 10_000).unwrap();
    assert_eq!(word(&chip, last), 0x5A5A_5A5A);
    assert_eq!(word(&chip, resp), 1);
}

#[test]
fn turning_on_core_stalls_does_not_reshuffle_the_jitter() {
    // Zero-cycle stalls change nothing but draw from their own stream: the
    // run stays bit-identical (one shared stream would have reshuffled the
    // jitter and the slice order).
    let run = |stall_prob| {
        let mut cfg = SimConfig { quantum_jitter: 40, ..small(11, true) };
        cfg.faults = Faults { noc_jitter_cycles: 300, core_stall_prob: stall_prob, ..Default::default() };
        let (mut chip, t) = gather(cfg);
        (chip.digest(), t)
    };
    assert_eq!(run(0.0), run(0.5));
}

/// [`small`] with 4-cycle slices: NOC deliveries become visible at slice
/// ends, so cycle counts measured by the core are exact to 4 cycles.
fn fine(fast_forward: bool) -> SimConfig {
    SimConfig { quantum_cycles: 4, ..small(5, fast_forward) }
}

/// Issues one `len`-byte read from each of `from`(chip) back to back (into
/// `BUF`) and waits for all of them: the cycles from the first issue to the
/// last completion, and the chip's digest.
fn reads_take(from: fn(&Chip) -> Vec<NocAddr>, len: u32, fast_forward: bool) -> (u64, u64) {
    let mut chip = Chip::new(fine(fast_forward)).unwrap();
    let from = from(&chip);
    for (k, f) in from.iter().enumerate() {
        chip.write(*f, &vec![0x10 + k as u8; len as usize]).unwrap();
    }
    let src = cast(&chip).0;
    let niu = niu(&chip, Noc::Noc0);
    let mut p = vec![csrrs(20, csr::MCYCLE as u32, 0)];
    for f in &from {
        p.extend(niu.read(src, *f, BUF, len, 0));
    }
    p.extend(niu.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, from.len() as u32));
    p.extend([csrrs(9, csr::MCYCLE as u32, 0), sub(9, 9, 20)]);
    p.extend(record(9, 0));
    let mut chip = run(chip, p);
    let last = NocAddr::unicast(src, (BUF + len - 4) as u64);
    assert_ne!(word(&chip, last), 0, "the reads landed");
    (out(&chip, 0) as u64, chip.digest())
}

#[test]
fn concurrent_pcie_reads_share_the_link_but_overlap_their_latency() {
    let len = 8192;
    let cfg = small(5, true);
    // Data time of one read on the host -> device direction: 335 cycles at
    // 24.5 B/cycle; its latency is 750.
    let data = (len as u64 * 1000).div_ceil(cfg.pcie.read_bytes_per_kcycle);
    let (one, _) = reads_take(|c| vec![host(c, 0)], len, true);
    let two_reads = |c: &Chip| vec![host(c, 0), host(c, 0x4000)];
    let (two, d2) = reads_take(two_reads, len, true);
    let (four, _) = reads_take(|c| vec![host(c, 0), host(c, 0x4000), host(c, 0x8000), host(c, 0xC000)], len, true);
    // Each further read adds its data time (plus the cycles its issue
    // takes), not its whole latency: the requests are pipelined.
    let issue_slack = 60;
    let near = |n: u64| n * data - 10..=n * (data + issue_slack);
    assert!(near(1).contains(&(two - one)), "one read {one}, two {two}, data time {data}");
    assert!(near(3).contains(&(four - one)), "one read {one}, four {four}");
    assert!(two < one + cfg.pcie.read_latency_cycles, "the second read's latency overlapped the first's");
    assert_eq!(d2, reads_take(two_reads, len, false).1, "fast-forward changes nothing");
}

#[test]
fn concurrent_pcie_writes_share_the_link() {
    // Two 8 KiB writes to host memory: the second lands one data time
    // (8192 B at 26 B/cycle = 316 cycles) after the first, where a lone
    // write of its own would have landed as early as the NIU let it.
    let len = 8192;
    let acked_after = |n: u32| {
        let chip = Chip::new(fine(true)).unwrap();
        let src = cast(&chip).0;
        let niu = niu(&chip, Noc::Noc0);
        let mut p = vec![csrrs(20, csr::MCYCLE as u32, 0)];
        for k in 0..n {
            p.extend(niu.write(src, BUF, host(&chip, 0x4000 * k as u64), len));
        }
        p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, n));
        p.extend([csrrs(9, csr::MCYCLE as u32, 0), sub(9, 9, 20)]);
        p.extend(record(9, 0));
        out(&run(chip, p), 0) as u64
    };
    let cfg = small(5, true);
    let data = (len as u64 * 1000).div_ceil(cfg.pcie.write_bytes_per_kcycle);
    let (one, two) = (acked_after(1), acked_after(2));
    // The NIU sends the packets 256 cycles apart (8 KiB at 32 B per cycle);
    // the link needs 316.
    assert!((data - 10..=data + 60).contains(&(two - one)), "one write {one}, two {two}, data time {data}");
}

/// A slow read (host memory) with transaction id 1, then a quick one (a
/// neighbour's L1) with id 2: id 2's outstanding count drops to 0 while the
/// first is still in flight (its count still 1), and each id counts only
/// its own reads (tt-metal `noc_async_read_barrier_with_trid`).
#[test]
fn reads_count_per_transaction_id() {
    let chip = Chip::new(small(2, true)).unwrap();
    let (src, others) = cast(&chip);
    let (slow, quick) = (host(&chip, 0), NocAddr::unicast(others[0], USER.base as u64));
    let niu = niu(&chip, Noc::Noc0);
    let id = counter::reqs_outstanding_id;
    let mut p = niu.read(src, slow, BUF, 8192, 1);
    p.extend(niu.read(src, quick, BUF + 0x4000, 64, 2));
    p.extend(niu.load_counter(9, id(2)));
    p.extend(record(9, 0));
    p.extend(niu.wait_counter(id(2), 0));
    p.extend(niu.load_counter(9, id(1)));
    p.extend(niu.load_counter(8, counter::NIU_MST_RD_RESP_RECEIVED));
    p.extend(record(9, 4));
    p.extend(record(8, 8));
    p.extend(niu.wait_counter(id(1), 0));
    let chip = run(chip, p);
    assert_eq!(out(&chip, 0), 1, "id 2's read outstanding right after issue");
    assert_eq!((out(&chip, 4), out(&chip, 8)), (1, 1), "id 2's read landed alone, id 1's still in flight");
    let reg = |index| super::tests::status(&chip, src, Noc::Noc0, index);
    assert_eq!((reg(id(0)), reg(id(1)), reg(id(2))), (0, 0, 0));
    assert_eq!(reg(counter::NIU_MST_RD_RESP_RECEIVED), 2);
    assert_eq!(reg(counter::NIU_MST_RD_REQ_SENT), 2);
}

/// Cycles from the cycle after A's NOC atomic leaves its core to the cycle
/// B, polling the semaphore it increments, sees it (B's `mcycle` minus
/// A's; every core's counter follows device time). A first spins `delay`
/// iterations, moving the issue against the slice grid.
fn hand_off(cfg: SimConfig, delay: u32) -> u32 {
    let mut chip = Chip::new(cfg).unwrap();
    let t = tiles(&chip);
    let (a, b) = (t[0], t[t.len() - 1]);
    let sem = cqlab_abi::semaphore::addr(0);
    let mut pa = spin_then_increment(&chip, a, b, delay);
    pa.extend(li(6, OUT));
    pa.extend([sw(13, 6, 0), ECALL]);
    let mut pb = li(6, sem).to_vec();
    // `fence` each turn: Blackhole's L0 data cache would keep the old word.
    pb.extend([FENCE, lw(7, 6, 0), beq(7, 0, -8), csrrs(13, csr::MCYCLE as u32, 0)]);
    pb.extend(li(6, OUT));
    pb.extend([sw(13, 6, 0), ECALL]);
    boot(&mut chip, b, &pb);
    boot(&mut chip, a, &pa);
    chip.run_until(|c| halted(c, a) && halted(c, b), 100_000).unwrap();
    let at = |tile: Coord| word(&chip, NocAddr::unicast(tile, OUT as u64));
    at(b) - at(a)
}

/// With `exact_time` a hand-off between tiles lands at the cycle it is
/// due: the same cycles whatever the slice length, the rotation order (the
/// seed) and idle fast-forward, at any issue time, and no less than the
/// model's trip. Without it the hand-off varies with the slice.
#[test]
fn a_hand_off_costs_the_same_cycles_whatever_the_slice_or_rotation() {
    for board in super::tests::BOARDS {
        let base = SimConfig { sysmem_size: 1 << 20, exact_time: true, ..SimConfig::for_board(board) };
        let chip = Chip::new(base.clone()).unwrap();
        let t = tiles(&chip);
        let (a, b) = (super::tests::noc0(&chip, t[0]), super::tests::noc0(&chip, t[t.len() - 1]));
        let hops = chip.layout.hop_count(Noc::Noc0, a, b);
        let least = noc::trip(&base, hops, 4) as u32;
        same_whatever_the_slice(&base, &[1, 7, 20, 33], least, hand_off);
        // Slices round the hand-off up to their end without it.
        let rounded: std::collections::BTreeSet<u32> = [1, 50, 200]
            .into_iter()
            .map(|quantum_cycles| hand_off(SimConfig { quantum_cycles, exact_time: false, ..base.clone() }, 7))
            .collect();
        assert!(rounded.len() > 1, "{board}: {rounded:?}");
    }
}

/// Code that spins `delay` iterations, increments semaphore 0 of tile `to`
/// with a NOC atomic from tile `from`, and reads `mcycle` into x13 as the
/// atomic has left.
fn spin_then_increment(chip: &Chip, from: Coord, to: Coord, delay: u32) -> Vec<u32> {
    let sem = cqlab_abi::semaphore::addr(0);
    let mut p = li(8, delay).to_vec();
    p.extend([addi(8, 8, -1), bne(8, 0, -4)]);
    let niu = niu(chip, Noc::Noc0);
    p.extend(niu.atomic_inc(from, NocAddr::unicast(to, sem as u64), 1, cqlab_abi::memory_map::NOC_ATOMIC_RET));
    p.push(csrrs(13, csr::MCYCLE as u32, 0));
    p
}

/// Cycles from the cycle after a core's NOC atomic to its own L1 leaves
/// it to the cycle it sees the increment, polling; it first spins `delay`
/// iterations.
fn own_hand_off(cfg: SimConfig, delay: u32) -> u32 {
    let mut chip = Chip::new(cfg).unwrap();
    let a = tiles(&chip)[0];
    let sem = cqlab_abi::semaphore::addr(0);
    let mut p = spin_then_increment(&chip, a, a, delay);
    p.extend(li(6, sem));
    p.extend([FENCE, lw(7, 6, 0), beq(7, 0, -8), csrrs(14, csr::MCYCLE as u32, 0), sub(13, 14, 13)]);
    p.extend(li(6, OUT));
    p.extend([sw(13, 6, 0), ECALL]);
    boot(&mut chip, a, &p);
    chip.run_until(|c| halted(c, a), 100_000).unwrap();
    word(&chip, NocAddr::unicast(a, OUT as u64))
}

/// With `exact_time` a tile's request to itself, which lands sooner than
/// any between tiles (so inside a slice as long as that lookahead), lands
/// at the cycle it is due: the same cycles whatever the slice, the
/// rotation and idle fast-forward, and no less than the model's trip.
#[test]
fn a_request_to_its_own_tile_lands_at_its_cycle_inside_a_slice() {
    for board in super::tests::BOARDS {
        let base = SimConfig { sysmem_size: 1 << 20, exact_time: true, ..SimConfig::for_board(board) };
        let least = noc::trip(&base, 0, 4) as u32;
        assert!(noc::lookahead_between_tiles(&base) > noc::lookahead(&base), "{board}: slices may outlast it");
        same_whatever_the_slice(&base, &[1, 5, 12, 20], least, own_hand_off);
    }
}

/// Runs `hand_off` at each delay at slices of 1, 11 and 200 cycles, two
/// rotations (seeds), with and without idle fast-forward: it takes the
/// same cycles every way, no fewer than `least` (the model's trip).
fn same_whatever_the_slice(base: &SimConfig, delays: &[u32], least: u32, hand_off: fn(SimConfig, u32) -> u32) {
    let board = base.board;
    for &delay in delays {
        let mut seen = std::collections::BTreeSet::new();
        for quantum_cycles in [1, 11, 200] {
            for seed in 1..3 {
                for fast_forward in [false, true] {
                    let cfg = SimConfig { seed, quantum_cycles, fast_forward, ..base.clone() };
                    seen.insert(hand_off(cfg, delay));
                }
            }
        }
        assert_eq!(seen.len(), 1, "{board}, delay {delay}: the hand-off took {seen:?} cycles");
        let took = *seen.first().unwrap();
        // Plus at most a lap of the poll (a fence, a load, a taken
        // branch), the load that sees it and the counter read.
        let lap = (2 * crate::timing::LOAD_CYCLES + crate::timing::taken_penalty(board.arch()) + 5) as u32;
        assert!((least..least + lap).contains(&took), "{board}: {took} cycles, the trip is {least}");
    }
}

/// 8 KiB reads issued back to back from the tiles `(dx, dy)` from the
/// issuing one, with and without link contention (`noc.link_contention`):
/// the cycles each way, from the first issue to the last completion.
fn reads_with_and_without_contention(from: &[(u8, u8)]) -> (u64, u64) {
    let contended = |on: bool| {
        let mut cfg = fine(true);
        cfg.noc.link_contention = on;
        let chip = Chip::new(cfg).unwrap();
        let src = cast(&chip).0;
        let from: Vec<NocAddr> =
            from.iter().map(|&(dx, dy)| NocAddr::unicast(Coord::new(src.x + dx, src.y + dy), BUF as u64)).collect();
        assert!(from.iter().all(|f| tiles(&chip).contains(&f.coord())), "reads from Tensix tiles");
        let niu = niu(&chip, Noc::Noc0);
        let mut p = vec![csrrs(20, csr::MCYCLE as u32, 0)];
        for f in &from {
            p.extend(niu.read(src, *f, BUF, 8192, 0));
        }
        p.extend(niu.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, from.len() as u32));
        p.extend([csrrs(9, csr::MCYCLE as u32, 0), sub(9, 9, 20)]);
        p.extend(record(9, 0));
        out(&run(chip, p), 0) as u64
    };
    (contended(false), contended(true))
}

/// On NOC0 (+x, then +y, both wrapping) the responses of two tiles east of
/// the issuing one in its row come back round the row over the same links,
/// so with contention the second waits for the first's 257 flits; the
/// responses of one tile east and one below use disjoint links (the row's,
/// the column's) and cost the same either way.
#[test]
fn read_responses_queue_on_a_shared_link_only_with_link_contention() {
    let (free, shared) = reads_with_and_without_contention(&[(1, 0), (2, 0)]);
    let flits = packet_flits(8192, SimConfig::default().noc.bytes_per_cycle);
    // The responses' heads meet the shared links some tens of cycles apart
    // (a read's issue takes a few stores, the nearer responder is a hop
    // closer): the later one waits for the rest of the other's flits.
    assert!((flits - 60..=flits).contains(&(shared - free)), "{free} -> {shared} cycles, {flits} flits a response");
    let (free, apart) = reads_with_and_without_contention(&[(1, 0), (0, 1)]);
    assert_eq!(free, apart, "disjoint paths do not contend");
}
