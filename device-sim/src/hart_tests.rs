//! Execute-level unit tests: small programs assembled in-process, one
//! instruction class per test, checking results, cycle costs and halts.

use super::*;
use crate::asm::*;
use crate::icache::ICache;
use crate::memory::Ram;
use cqlab_abi::memory_map::CODE;

const BASE: u32 = CODE[0].base;
const DATA: u32 = 0x8000;

fn hart_with(words: &[u32]) -> Hart {
    let mut mem = Memory::new(Ram::new(0, 0x1_0000), None);
    mem.write(BASE, &to_bytes(words)).unwrap();
    Hart::new(mem, 7, BASE)
}

/// Runs `words` followed by `ecall`; returns the hart halted on that ecall.
fn run(words: &[u32]) -> Hart {
    let mut prog = words.to_vec();
    prog.push(ECALL);
    let mut h = hart_with(&prog);
    let stop = h.run(&mut NoBus, 1_000_000);
    let expected_pc = BASE + 4 * (prog.len() as u32 - 1);
    assert_eq!(
        stop,
        Stop::Halted(Halt { pc: expected_pc, reason: HaltReason::Ecall }),
        "program did not reach its ecall"
    );
    h
}

fn with_li(pairs: &[(u32, u32)], body: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = pairs.iter().flat_map(|&(r, x)| li(r, x)).collect();
    v.extend_from_slice(body);
    v
}

/// Result in x3 of `op x3, x1, x2` with x1 = a, x2 = b.
fn rr(op: fn(u32, u32, u32) -> u32, a: u32, b: u32) -> u32 {
    run(&with_li(&[(1, a), (2, b)], &[op(3, 1, 2)])).reg(3)
}

fn r(f7: u32, f3: u32) -> impl Fn(u32, u32) -> u32 {
    move |a, b| run(&with_li(&[(1, a), (2, b)], &[r_type(0x33, f7, f3, 3, 1, 2)])).reg(3)
}

#[test]
fn register_register_alu() {
    assert_eq!(rr(add, 7, u32::MAX), 6);
    assert_eq!(rr(sub, 3, 5), (-2i32) as u32);
    assert_eq!(rr(xor, 0xf0f0, 0xff00), 0x0ff0);
    assert_eq!(rr(sltu, 1, u32::MAX), 1);
    let (sll, slt, srl, sra, or, and) = (r(0, 1), r(0, 2), r(0, 5), r(0x20, 5), r(0, 6), r(0, 7));
    assert_eq!(sll(1, 33), 2, "shift amount masked to 5 bits");
    assert_eq!(sll(1, 31), 0x8000_0000);
    assert_eq!(slt(u32::MAX, 1), 1, "-1 < 1 signed");
    assert_eq!(slt(1, u32::MAX), 0);
    assert_eq!(srl(0x8000_0000, 35), 0x1000_0000);
    assert_eq!(sra(0x8000_0000, 4), 0xf800_0000);
    assert_eq!(sra(0x8000_0000, 32), 0x8000_0000, "shift by 32 is shift by 0");
    assert_eq!(or(0xf0, 0x0f), 0xff);
    assert_eq!(and(0xf0, 0x3c), 0x30);
}

#[test]
fn immediate_alu() {
    let h = run(&with_li(
        &[(1, 0xffff_fff0)],
        &[
            addi(3, 1, 0x7ff),
            i_type(0x13, 2, 4, 1, -1), // slti: -16 < -1
            i_type(0x13, 3, 5, 1, -1), // sltiu: 0xfffffff0 < 0xffffffff
            xori(6, 1, -1),
            i_type(0x13, 6, 7, 1, 0x00f), // ori
            andi(8, 1, 0x0ff),
            slli(9, 1, 4),
            srli(10, 1, 28),
            srai(11, 1, 2),
        ],
    ));
    assert_eq!(h.reg(3), 0x7ef);
    assert_eq!(h.reg(4), 1);
    assert_eq!(h.reg(5), 1);
    assert_eq!(h.reg(6), 0xf);
    assert_eq!(h.reg(7), 0xffff_ffff);
    assert_eq!(h.reg(8), 0xf0);
    assert_eq!(h.reg(9), 0xffff_ff00);
    assert_eq!(h.reg(10), 0xf);
    assert_eq!(h.reg(11), 0xffff_fffc);
}

#[test]
fn multiply_and_divide_edge_cases() {
    let (mulh, mulhsu, divu, rem, remu) = (r(1, 1), r(1, 2), r(1, 5), r(1, 6), r(1, 7));
    assert_eq!(rr(mul, 0x1234_5678, 0x10), 0x2345_6780);
    assert_eq!(mulh(u32::MAX, u32::MAX), 0, "-1 * -1 = 1");
    assert_eq!(mulh(0x8000_0000, 0x8000_0000), 0x4000_0000);
    assert_eq!(mulhsu(u32::MAX, u32::MAX), u32::MAX, "-1 * (2^32-1) high word");
    assert_eq!(rr(mulhu, u32::MAX, u32::MAX), 0xffff_fffe);
    assert_eq!(rr(div, (-7i32) as u32, 2), (-3i32) as u32, "rounds toward zero");
    assert_eq!(rr(div, 5, 0), u32::MAX, "division by zero gives -1");
    assert_eq!(rr(div, 0x8000_0000, u32::MAX), 0x8000_0000, "overflow gives MIN");
    assert_eq!(divu(7, 0), u32::MAX);
    assert_eq!(divu(u32::MAX, 16), 0x0fff_ffff);
    assert_eq!(rem(7, 0), 7, "remainder by zero is the dividend");
    assert_eq!(rem(0x8000_0000, u32::MAX), 0, "overflow remainder is 0");
    assert_eq!(rem((-7i32) as u32, 2), (-1i32) as u32, "sign of the dividend");
    assert_eq!(remu(7, 0), 7);
    assert_eq!(remu(u32::MAX, 16), 15);
}

#[test]
fn lui_auipc_and_x0() {
    let h = run(&[lui(1, 0xabcde), auipc(2, 0x1), addi(0, 0, 5), lui(0, 1), add(3, 0, 0)]);
    assert_eq!(h.reg(1), 0xabcd_e000);
    assert_eq!(h.reg(2), BASE + 4 + 0x1000);
    assert_eq!(h.reg(0), 0, "writes to x0 are discarded");
    assert_eq!(h.reg(3), 0);
}

#[test]
fn branches_take_and_fall_through() {
    // For each condition: x5 += 1 if taken (skips an x6 marker).
    let cases: [(u32, u32, u32, bool); 12] = [
        (0, 5, 5, true),
        (0, 5, 6, false),
        (1, 5, 6, true),
        (1, 5, 5, false),
        (4, u32::MAX, 0, true),
        (4, 0, u32::MAX, false),
        (5, 0, u32::MAX, true),
        (5, u32::MAX, 0, false),
        (6, 0, u32::MAX, true),
        (6, u32::MAX, 0, false),
        (7, u32::MAX, 0, true),
        (7, 5, 5, true),
    ];
    for (f3, a, b, taken) in cases {
        let h = run(&with_li(&[(1, a), (2, b)], &[b_type(f3, 1, 2, 8), addi(6, 0, 1), addi(5, 0, 1)]));
        assert_eq!((h.reg(5), h.reg(6) == 0), (1, taken), "funct3 {f3} with {a:#x}, {b:#x}");
    }
}

#[test]
fn jal_and_jalr_link_and_clear_the_low_bit() {
    // 0: jal x1, +8 ; 4: (skipped) ; 8: auipc x2, 0 ; 12: jalr x3, 13(x2) -> 8+13 = 21 & !1 = 20
    // 16: (skipped) ; 20: ecall
    let mut h = hart_with(&[jal(1, 8), EBREAK, auipc(2, 0), jalr(3, 2, 13), EBREAK, ECALL]);
    let stop = h.run(&mut NoBus, 1000);
    assert_eq!(stop, Stop::Halted(Halt { pc: BASE + 20, reason: HaltReason::Ecall }));
    assert_eq!(h.reg(1), BASE + 4);
    assert_eq!(h.reg(3), BASE + 16);
    // jalr with rd == rs1 uses the old rs1.
    let h = run(&[auipc(1, 0), jalr(1, 1, 12), EBREAK, addi(0, 0, 0)]);
    assert_eq!(h.reg(1), BASE + 8);
}

#[test]
fn loads_sign_extend_and_stores_write_sub_words() {
    let h = run(&with_li(
        &[(1, DATA), (2, 0x8081_8283)],
        &[
            sw(2, 1, 0),
            lb(3, 1, 0),
            lbu(4, 1, 0),
            lh(5, 1, 2),
            i_type(0x03, 5, 6, 1, 2), // lhu
            lw(7, 1, 0),
            sb(0, 1, 1),
            sh(0, 1, 2),
            lw(8, 1, 0),
            addi(9, 0, -1),
            sb(9, 1, 4),
            lw(10, 1, 4),
        ],
    ));
    assert_eq!(h.reg(3), 0xffff_ff83);
    assert_eq!(h.reg(4), 0x83);
    assert_eq!(h.reg(5), 0xffff_8081);
    assert_eq!(h.reg(6), 0x8081);
    assert_eq!(h.reg(7), 0x8081_8283);
    assert_eq!(h.reg(8), 0x0000_0083);
    assert_eq!(h.reg(10), 0xff);
}

#[test]
fn misaligned_accesses_halt_precisely() {
    let mut h = hart_with(&[addi(1, 0, 0x102), lw(2, 1, 0)]);
    assert_eq!(
        h.run(&mut NoBus, 100),
        Stop::Halted(Halt { pc: BASE + 4, reason: HaltReason::MisalignedLoad { addr: 0x102 } })
    );
    assert_eq!(h.instret(), 1, "the faulting load does not retire");
    let mut h = hart_with(&[addi(1, 0, 0x101), sh(0, 1, 0)]);
    assert_eq!(
        h.run(&mut NoBus, 100),
        Stop::Halted(Halt { pc: BASE + 4, reason: HaltReason::MisalignedStore { addr: 0x101 } })
    );
    // Halfword loads at odd addresses fault too; byte loads never do.
    let h2 = run(&[addi(1, 0, 0x101), lb(2, 1, 0), lbu(2, 1, 0)]);
    assert_eq!(h2.instret(), 3);
    let mut h = hart_with(&[addi(1, 0, 0x103), lh(2, 1, 0)]);
    assert!(matches!(h.run(&mut NoBus, 100), Stop::Halted(Halt { reason: HaltReason::MisalignedLoad { .. }, .. })));
    // A jump to a 2-aligned target halts on the jump.
    let mut h = hart_with(&[jal(0, 6)]);
    assert_eq!(
        h.run(&mut NoBus, 100),
        Stop::Halted(Halt { pc: BASE, reason: HaltReason::MisalignedFetch { target: BASE + 6 } })
    );
}

#[test]
fn faults_outside_ram() {
    let mut h = hart_with(&li(1, 0x4000_0000).into_iter().chain([lw(2, 1, 0)]).collect::<Vec<_>>());
    assert_eq!(
        h.run(&mut NoBus, 100),
        Stop::Halted(Halt { pc: BASE + 8, reason: HaltReason::LoadFault { addr: 0x4000_0000 } })
    );
    let mut h = hart_with(&li(1, 0x4000_0000).into_iter().chain([sw(2, 1, 0)]).collect::<Vec<_>>());
    assert!(matches!(h.run(&mut NoBus, 100), Stop::Halted(Halt { reason: HaltReason::StoreFault { .. }, .. })));
    let mut h = hart_with(&li(1, 0x4000_0000).into_iter().chain([jalr(0, 1, 0)]).collect::<Vec<_>>());
    assert_eq!(h.run(&mut NoBus, 100), Stop::Halted(Halt { pc: 0x4000_0000, reason: HaltReason::FetchFault }));
}

#[test]
fn illegal_instructions_and_ebreak_halt_with_pc_and_word() {
    let mut h = hart_with(&[addi(1, 0, 1), 0xffff_ffff, addi(1, 0, 2)]);
    assert_eq!(
        h.run(&mut NoBus, 100),
        Stop::Halted(Halt { pc: BASE + 4, reason: HaltReason::IllegalInstruction { word: 0xffff_ffff } })
    );
    assert_eq!(h.reg(1), 1, "nothing after the illegal instruction ran");
    // Running a halted hart does nothing.
    assert!(matches!(h.run(&mut NoBus, 100), Stop::Halted(_)));
    assert_eq!(h.pc(), BASE + 4);
    let mut h = hart_with(&[EBREAK]);
    assert_eq!(h.run(&mut NoBus, 100), Stop::Halted(Halt { pc: BASE, reason: HaltReason::Ebreak }));
}

#[test]
fn csr_reads_and_illegal_csr_accesses() {
    let h = run(&[
        csrrs(1, 0xb00, 0), // mcycle
        csrrs(2, 0xb02, 0), // minstret
        addi(0, 0, 0),
        csrrs(3, 0xb00, 0),
        csrrs(4, 0xb02, 0),
        csrrs(5, 0xf14, 0),                     // mhartid
        csrrs(6, 0xb80, 0),                     // mcycleh
        csrrs(7, 0xc00, 0),                     // cycle
        i_type(0x73, 6, 8, 0, 0) | 0xb02 << 20, // csrrsi x8, minstret, 0: read only
    ]);
    assert_eq!((h.reg(1), h.reg(2)), (0, 1));
    assert_eq!(h.reg(3) - h.reg(1), 3, "three 1-cycle instructions between the reads");
    assert_eq!(h.reg(4), 4);
    assert_eq!(h.reg(5), 7);
    assert_eq!(h.reg(6), 0);
    assert_eq!(h.reg(7), 7);
    assert_eq!(h.reg(8), 8);
    for bad in [
        csrrw(0, 0xb00, 1),                     // write to read-only mcycle
        csrrs(1, 0xb00, 2),                     // set bits: a write
        i_type(0x73, 7, 1, 3, 0) | 0xb00 << 20, // csrrci with uimm 3
        csrrs(1, 0x300, 0),                     // mstatus: not implemented
        csrrw(0, 0x7c0, 0),                     // unknown CSR write
    ] {
        let mut h = hart_with(&[bad]);
        assert_eq!(
            h.run(&mut NoBus, 100),
            Stop::Halted(Halt { pc: BASE, reason: HaltReason::IllegalInstruction { word: bad } }),
            "{bad:#010x}"
        );
    }
}

#[test]
fn cycle_costs_follow_the_timing_model() {
    // addi (1), taken beq (3), mul (2), lw (8), sw (1), divu 100/10 (10), not-taken bne (1)
    let mut prog = with_li(&[(1, 100), (2, 10), (4, DATA)], &[]);
    let setup = prog.len() as u64;
    prog.extend_from_slice(&[
        addi(3, 0, 1),
        beq(0, 0, 8),
        EBREAK,
        mul(5, 1, 2),
        lw(6, 4, 0),
        sw(6, 4, 0),
        divu(7, 1, 2),
        bne(0, 0, 8),
        ECALL,
    ]);
    let mut h = hart_with(&prog);
    assert!(matches!(h.run(&mut NoBus, 1000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    assert_eq!(h.cycle(), setup + 1 + 3 + 2 + 8 + 1 + 10 + 1);
    assert_eq!(h.instret(), setup + 7);
}

#[test]
fn run_stops_at_the_cycle_limit_and_resumes() {
    let mut h = hart_with(&[addi(1, 1, 1), jal(0, -4)]);
    assert_eq!(h.run(&mut NoBus, 1000), Stop::CycleLimit);
    assert!(h.cycle() >= 1000 && h.cycle() < 1003);
    let before = h.reg(1);
    assert_eq!(h.run(&mut NoBus, 2000), Stop::CycleLimit);
    assert!(h.reg(1) > before);
    assert_eq!(h.step(&mut NoBus), Stop::CycleLimit);
}

/// The same loop from L1 and from a second window (code the L1 decode
/// cache never holds), and from L1 jumping into the window: same results,
/// same cycles, whichever way the interpreter's loop decodes.
#[test]
fn code_in_a_window_runs_as_code_in_l1_does() {
    const WINDOW: u32 = 0x8000_0000;
    // x1 counts 10 turns of a loop that sums them into x3.
    let mut body = li(1, 10).to_vec();
    body.extend([add(3, 3, 1), addi(1, 1, -1), bne(1, 0, -8), ECALL]);
    let run_from = |entry: u32, l1: &[u32], window: &[u32]| {
        let mut mem = Memory::new(Ram::new(0, 0x1_0000), Some(Ram::new(WINDOW, 0x1000)));
        mem.write(BASE, &to_bytes(l1)).unwrap();
        mem.write(WINDOW, &to_bytes(window)).unwrap();
        let mut h = Hart::new(mem, 0, entry);
        let stop = h.run(&mut NoBus, 1_000_000);
        assert!(matches!(stop, Stop::Halted(Halt { reason: HaltReason::Ecall, .. })), "{stop:?}");
        (h.reg(3), h.cycle(), h.instret())
    };
    let in_l1 = run_from(BASE, &body, &[]);
    assert_eq!(in_l1.0, 55);
    assert_eq!(run_from(WINDOW, &[], &body), in_l1, "from the window");
    // L1 jumps to the window (lui + jalr: two more instructions).
    let mut jump = li(5, WINDOW).to_vec();
    jump.push(jalr(0, 5, 0));
    let (sum, cycles, instret) = run_from(BASE, &jump, &body);
    let extra = jump.len() as u64;
    assert_eq!(sum, 55);
    assert_eq!(instret, in_l1.2 + extra, "from L1 into the window");
    assert!(cycles > in_l1.1 + extra, "the jump is taken: {cycles} against {}", in_l1.1);
}

#[test]
fn stores_into_decoded_code_take_effect() {
    // Runs a loop body once, then overwrites its first instruction with
    // `addi x5, x0, 42` and runs it again.
    let patch = addi(5, 0, 42);
    let body = BASE + 4 * 6;
    let mut prog = li(1, patch).to_vec(); // 0, 4
    prog.extend(li(2, body)); // 8, 12
    prog.extend([addi(6, 0, 2), jal(0, 8)]); // 16, 20 -> 28 (skips the patch store)
                                             // 24: body: addi x5, x0, 1
                                             // 28: ...
    let mut p = prog.clone();
    p.insert(6, addi(5, 0, 1)); // at 24
                                // 28: addi x6, x6, -1 ; 32: beq x6, x0, +12 (-> 44) ; 36: sw x1, 0(x2) ; 40: jal x0, -16 (-> 24)
    p.extend([addi(6, 6, -1), beq(6, 0, 12), sw(1, 2, 0), jal(0, -16), ECALL]);
    // Fix the early jal at 20 to go to 24 (run the body first).
    p[5] = jal(0, 4);
    let mut h = hart_with(&p);
    assert!(matches!(h.run(&mut NoBus, 1000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    assert_eq!(h.reg(5), 42, "the patched instruction ran");
}

#[test]
fn tohost_watch_ends_the_slice_after_the_store() {
    let mut prog = li(1, DATA).to_vec();
    prog.extend([addi(2, 0, 3), sw(2, 1, 0), EBREAK]);
    let mut h = hart_with(&prog);
    h.mem.set_watch(Some(DATA));
    assert_eq!(h.run(&mut NoBus, 1000), Stop::Watch { addr: DATA, value: 3, old: 0 });
    assert_eq!(h.pc(), BASE + 16, "the store retired");
    assert_eq!(h.instret(), 4);
}

#[test]
fn last_retired_pcs_follow_control_flow() {
    // 0: addi ; 4: jal +8 ; 12: addi ; 16: ebreak
    let mut h = hart_with(&[addi(1, 0, 1), jal(0, 8), EBREAK, addi(2, 0, 1), EBREAK]);
    assert!(matches!(h.run(&mut NoBus, 100), Stop::Halted(_)));
    assert_eq!(h.last_retired_pcs(8), vec![BASE + 12, BASE + 4, BASE]);
}

#[test]
fn local_memory_costs_one_cycle_where_l1_costs_load_cycles() {
    let region =
        cqlab_abi::memory_map::local_mem(&cqlab_abi::arch::WORMHOLE, cqlab_abi::arch::tensix::Processor::Brisc);
    let local = region.base;
    let program = |addr: u32| with_li(&[(1, addr), (2, 0x1234_5678)], &[sw(2, 1, 0), lw(3, 1, 0)]);
    let cycles = |addr: u32| {
        let prog = program(addr);
        let mut words = prog.clone();
        words.push(ECALL);
        let mut mem = Memory::new(Ram::new(0, 0x1_0000), None).with_local_mem(region.base, region.size);
        mem.write(BASE, &to_bytes(&words)).unwrap();
        let mut h = Hart::new(mem, 7, BASE);
        assert!(matches!(h.run(&mut NoBus, 1_000_000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
        assert_eq!(h.reg(3), 0x1234_5678, "value read back at {addr:#x}");
        h.cycle()
    };
    assert_eq!(cycles(DATA) - cycles(local), LOAD_CYCLES - 1);
    // Without local memory the same address faults.
    let mut prog = program(local);
    prog.push(ECALL);
    let mut h = hart_with(&prog);
    assert!(matches!(h.run(&mut NoBus, 1_000_000), Stop::Halted(Halt { reason: HaltReason::StoreFault { .. }, .. })));
}

/// Cycles `count` back-to-back word stores to L1, `stride` bytes apart,
/// take with L1 taking stores at `timing`.
fn store_run_cycles(timing: L1Stores, count: u32, stride: i32) -> u64 {
    let mut prog = with_li(&[(1, DATA)], &[]);
    let setup = prog.len() as u64;
    prog.extend((0..count as i32).map(|k| sw(0, 1, stride * k)));
    prog.push(ECALL);
    let mut h = hart_with(&prog);
    h.set_l1_stores(timing);
    assert!(matches!(h.run(&mut NoBus, 1_000_000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    h.cycle() - setup
}

#[test]
fn l1_takes_a_store_every_five_cycles_once_four_are_queued() {
    let wh = L1Stores::WORMHOLE;
    assert_eq!(store_run_cycles(wh, 4, 4), 4, "four stores queue at full speed");
    assert_eq!(store_run_cycles(wh, 24, 4) - store_run_cycles(wh, 12, 4), 12 * 5, "then one every 5 cycles");
    // Stores between other work do not wait: the queue drains meanwhile.
    let mut prog = with_li(&[(1, DATA)], &[]);
    let setup = prog.len() as u64;
    for k in 0..12 {
        prog.extend([sw(0, 1, 4 * k), addi(2, 2, 1), addi(2, 2, 1), addi(2, 2, 1), addi(2, 2, 1)]);
    }
    prog.push(ECALL);
    let mut h = hart_with(&prog);
    assert!(matches!(h.run(&mut NoBus, 1_000_000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    assert_eq!(h.cycle() - setup, 12 * 5);
}

#[test]
fn blackhole_coalesces_stores_to_one_16_byte_block() {
    let bh = L1Stores::BLACKHOLE;
    // Word after word: four to a block, one block every 5 cycles at most.
    assert_eq!(store_run_cycles(bh, 48, 4), 48, "no store waits");
    // A block per store: as Wormhole.
    assert_eq!(store_run_cycles(bh, 24, 16), store_run_cycles(L1Stores::WORMHOLE, 24, 4));
    // Every other word: the same block, but 8 bytes apart, so no store
    // joins the one before (tt-isa: starts within ±4 bytes): as Wormhole.
    assert_eq!(store_run_cycles(bh, 24, 8), store_run_cycles(L1Stores::WORMHOLE, 24, 4));
}

/// Cycles `body` takes after its setup, with pipelined loads on or off,
/// and the hart after it.
fn cycles_of(pipelined: bool, pairs: &[(u32, u32)], body: &[u32]) -> (u64, Hart) {
    let mut prog = with_li(pairs, &[]);
    let setup = prog.len() as u64;
    prog.extend_from_slice(body);
    prog.push(ECALL);
    let mut h = hart_with(&prog);
    h.set_pipelined_loads(pipelined);
    assert!(matches!(h.run(&mut NoBus, 1_000_000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    (h.cycle() - setup, h)
}

#[test]
fn a_pipelined_load_stalls_only_the_instruction_that_needs_its_register() {
    let data = [(1, DATA)];
    let independent = [lw(3, 1, 0), addi(4, 4, 1), addi(4, 4, 1), addi(4, 4, 1), add(5, 3, 3)];
    let (blocking, _) = cycles_of(false, &data, &independent);
    let (pipelined, h) = cycles_of(true, &data, &independent);
    assert_eq!(blocking - pipelined, 3, "three instructions under the load's {LOAD_CYCLES} cycles");
    assert_eq!(h.reg(4), 3);
    // A consumer right after the load waits all of it.
    let dependent = [lw(3, 1, 0), add(5, 3, 3)];
    assert_eq!(cycles_of(true, &data, &dependent).0, cycles_of(false, &data, &dependent).0);
    // Two loads overlap: the second's data is back a cycle after the first's.
    let two = [lw(3, 1, 0), lw(6, 1, 4), add(5, 3, 6)];
    assert_eq!(cycles_of(false, &data, &two).0 - cycles_of(true, &data, &two).0, LOAD_CYCLES - 1);
    // Writing the load's register waits for it too (registers are written in order).
    let overwrite = [lw(3, 1, 0), addi(3, 0, 9)];
    let (c, h) = cycles_of(true, &data, &overwrite);
    assert_eq!((c, h.reg(3)), (cycles_of(false, &data, &overwrite).0, 9));
}

#[test]
fn a_run_never_starts_an_instruction_at_its_limit_while_a_load_is_waited_for() {
    let mut prog = with_li(&[(1, DATA)], &[]);
    let setup = prog.len() as u64;
    prog.extend([lw(3, 1, 0), add(5, 3, 3), ECALL]);
    let mut h = hart_with(&prog);
    h.set_pipelined_loads(true);
    // The add waits until the load's data is back, past this limit.
    assert_eq!(h.run(&mut NoBus, setup + 2), Stop::CycleLimit);
    assert_eq!((h.pc(), h.instret()), (BASE + 4 * (setup as u32 + 1), setup + 1), "the add not executed");
    assert!(matches!(h.run(&mut NoBus, 1_000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    assert_eq!(h.cycle() - setup, cycles_of(false, &[(1, DATA)], &[lw(3, 1, 0), add(5, 3, 3)]).0);
}

/// Eight loads waited for when a run ends, resumed after all their data is
/// back, then eight more: the queue forgets the first eight (no overflow)
/// and the cycles are those of one uninterrupted run.
#[test]
fn loads_left_waiting_at_a_run_end_are_forgotten_once_their_data_is_back() {
    let loads = |base: i32| (0..8).map(move |k| lw(3 + k as u32, 1, base + 4 * k)).collect::<Vec<_>>();
    let mut body = loads(0);
    body.extend(loads(64));
    body.push(add(20, 3, 10));
    let mut prog = with_li(&[(1, DATA)], &[]);
    let setup = prog.len() as u64;
    prog.extend(&body);
    prog.push(ECALL);
    let mut h = hart_with(&prog);
    h.set_pipelined_loads(true);
    assert_eq!(h.run(&mut NoBus, setup + 8), Stop::CycleLimit, "stops with eight loads waiting");
    h.skip_cycles(20);
    assert!(matches!(h.run(&mut NoBus, 1_000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    let (straight, _) = cycles_of(true, &[(1, DATA)], &body);
    assert_eq!(h.cycle() - setup - 20, straight);
}

/// `n` instructions of a loop run `iters` times (`addi`s, then a `bne`
/// back to the first), its cycles after the setup and its misses, with a
/// 512 B instruction cache (32 lines of four instructions) or none.
fn loop_cycles(icache: bool, n: usize, iters: u32) -> (u64, u64) {
    let mut body = vec![addi(3, 3, 1); n - 2];
    body.push(addi(1, 1, -1));
    body.push(bne(1, 0, -4 * (n as i32 - 1)));
    let mut prog = with_li(&[(1, iters)], &[]);
    let setup = prog.len() as u64;
    prog.extend(body);
    prog.push(ECALL);
    let mut h = hart_with(&prog);
    if icache {
        h.set_icache(ICache::new(512, 8));
    }
    assert!(matches!(h.run(&mut NoBus, 10_000_000), Stop::Halted(Halt { reason: HaltReason::Ecall, .. })));
    assert_eq!(h.reg(3), iters * (n as u32 - 2));
    (h.cycle() - setup, h.icache().misses())
}

#[test]
fn a_loop_larger_than_the_instruction_cache_misses_every_turn() {
    // 64 instructions (16 lines, and the one after) fit in 32 lines: the
    // turns after the first fetch only what was fetched, free.
    assert_eq!(loop_cycles(true, 64, 50), (loop_cycles(false, 64, 50).0, 0));
    // 200 instructions (50 lines): by its end the loop has refilled the set
    // of its first line, so every jump back misses.
    let (cached, misses) = loop_cycles(true, 200, 50);
    assert_eq!(misses, 50 - 1, "every jump back but none on the way out");
    assert_eq!(cached - loop_cycles(false, 200, 50).0, 8 * misses);
    // The miss cost is the parameter's.
    let mut h = hart_with(&[jal(0, 0x400)]);
    h.set_icache(ICache::new(512, 30));
    h.mem.write(BASE + 0x400, &to_bytes(&[ECALL])).unwrap();
    h.run(&mut NoBus, 1000);
    assert_eq!((h.cycle(), h.icache().misses()), (1 + TAKEN_PENALTY + 30, 1));
}

#[test]
fn reset_empties_the_instruction_cache_and_its_first_fetch_misses() {
    let prog = [addi(3, 3, 1), jal(0, -4)];
    let mut h = hart_with(&prog);
    h.set_icache(ICache::new(2048, 8));
    h.run(&mut NoBus, 100);
    let misses = h.icache().misses();
    assert_eq!(misses, 0, "the loop's line was fetched when it was turned on");
    let before = h.cycle();
    h.reset(BASE);
    assert_eq!((h.cycle() - before, h.icache().misses()), (8, 1), "the entry's line misses");
    // Off, reset costs nothing.
    let mut off = hart_with(&prog);
    off.run(&mut NoBus, 100);
    let before = off.cycle();
    off.reset(BASE);
    assert_eq!(off.cycle(), before);
}

#[test]
fn a_write_over_cached_code_drops_its_lines_and_the_next_jump_there_misses() {
    // A loop calling a function 0x100 bytes on: one miss to fetch it, then hits.
    let mut h = hart_with(&[jal(1, 0x100), jal(0, -4)]);
    h.mem.write(BASE + 0x100, &to_bytes(&[jalr(0, 1, 0)])).unwrap();
    h.set_icache(ICache::new(2048, 8));
    h.run(&mut NoBus, 100);
    assert_eq!(h.icache().misses(), 1);
    let to_loop_head = |h: &mut Hart| loop {
        h.step(&mut NoBus);
        if h.pc() == BASE {
            break;
        }
    };
    // A write elsewhere drops nothing.
    to_loop_head(&mut h);
    assert!(!h.icache_holds_any(BASE + 0x200, 64));
    h.icache_drop_written(BASE + 0x200, 64);
    h.run(&mut NoBus, h.cycle() + 100);
    assert_eq!(h.icache().misses(), 1);
    // A write over the function: the next call misses, once.
    to_loop_head(&mut h);
    assert!(h.icache_holds_any(BASE + 0x100, 4));
    h.icache_drop_written(BASE + 0x100, 4);
    h.run(&mut NoBus, h.cycle() + 100);
    assert_eq!(h.icache().misses(), 2);
}

/// A store that meets a drained store queue takes the fast path, which
/// must answer as the full rule does (it spares the rule, not its
/// result), on both chips' timings and on a queue of one, every queue
/// state and store address near each other.
#[test]
fn a_store_to_a_drained_queue_goes_on_as_the_full_rule_says() {
    let timings = [L1Stores::WORMHOLE, L1Stores::BLACKHOLE, L1Stores { interval: 3, queue: 1, coalesce: true }];
    for timing in timings {
        for drained in 0..40 {
            for last in [0, 4, 12, 16, 20, u32::MAX] {
                for cycle in 0..45 {
                    for addr in [0, 4, 8, 12, 16, 20, 36] {
                        let q = StoreQueue { timing, drained, last };
                        let (mut fast, mut full) = (q, q);
                        let at = (fast.push(cycle, addr), full.push_queued(cycle, addr));
                        assert_eq!((at.0, fast), (at.1, full), "{timing:?} drained {drained} last {last} at {cycle}");
                    }
                }
            }
        }
    }
}
