//! Interpreter throughput workloads for `cqlab sim bench`: small RV32IM
//! loops assembled in-process, each paired with a native Rust loop doing the
//! same work. Every run checks that the simulated and native results agree,
//! so a benchmark can never report speed for wrong answers.

use crate::asm::*;
use crate::hart::{Halt, HaltReason, Hart, NoBus, Stop};
use crate::memory::{Memory, Ram};
use cqlab_abi::memory_map::{ENTRY_POINT, USER};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// One benchmark loop.
pub struct Workload {
    pub name: &'static str,
    pub description: &'static str,
    /// Guest instructions per iteration (for the native equivalent rate).
    pub instrs_per_iter: u64,
    program: fn(u32) -> Vec<u32>,
    native: fn(u32) -> u32,
}

const LCG_A: u32 = 1_664_525;
const LCG_C: u32 = 1_013_904_223;

/// x = x*A + C; acc ^= x; acc += x >> 7 — ALU and multiply bound.
fn alu_program(iters: u32) -> Vec<u32> {
    let mut p = Vec::new();
    p.extend(li(5, 1)); // x
    p.extend(li(6, LCG_A));
    p.extend(li(7, LCG_C));
    p.extend(li(10, iters));
    p.extend(li(8, 0)); // acc
    p.extend([
        mul(5, 5, 6),
        add(5, 5, 7),
        xor(8, 8, 5),
        srli(9, 5, 7),
        add(8, 8, 9),
        addi(10, 10, -1),
        bne(10, 0, -24),
        ECALL,
    ]);
    p
}

fn alu_native(iters: u32) -> u32 {
    let (mut x, mut acc) = (1u32, 0u32);
    for _ in 0..black_box(iters) {
        x = x.wrapping_mul(black_box(LCG_A)).wrapping_add(LCG_C);
        acc ^= x;
        acc = acc.wrapping_add(x >> 7);
    }
    acc
}

/// Words in the memory workload's buffer (a power of two).
const BUF_WORDS: u32 = 1024;

/// Walks a 4 KiB buffer: acc += buf[i]; buf[i] = acc — load/store bound.
fn mem_program(iters: u32) -> Vec<u32> {
    let mut p = Vec::new();
    p.extend(li(5, USER.base)); // buffer
    p.extend(li(10, iters));
    p.extend(li(8, 0)); // acc
    p.extend(li(11, 0)); // index (bytes)
    p.extend(li(12, BUF_WORDS * 4 - 1)); // mask
    p.extend([
        add(13, 5, 11),
        lw(14, 13, 0),
        add(8, 8, 14),
        sw(8, 13, 0),
        addi(11, 11, 4),
        r_type(0x33, 0, 7, 11, 11, 12), // and x11, x11, x12
        addi(10, 10, -1),
        bne(10, 0, -28),
        ECALL,
    ]);
    p
}

fn mem_native(iters: u32) -> u32 {
    let mut buf = vec![0u32; BUF_WORDS as usize];
    let mut acc = 0u32;
    let mut i = 0usize;
    for _ in 0..black_box(iters) {
        acc = acc.wrapping_add(buf[i]);
        buf[i] = acc;
        i = (i + 1) & (BUF_WORDS as usize - 1);
        black_box(&mut buf);
    }
    acc
}

pub const WORKLOADS: [Workload; 2] = [
    Workload {
        name: "alu",
        description: "LCG + xor/shift accumulate (mul, add, xor, srli, addi, bne)",
        instrs_per_iter: 7,
        program: alu_program,
        native: alu_native,
    },
    Workload {
        name: "mem",
        description: "read-modify-write walk over a 4 KiB L1 buffer (lw, sw, add, and, bne)",
        instrs_per_iter: 8,
        program: mem_program,
        native: mem_native,
    },
];

/// Measured figures for one workload.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub instret: u64,
    pub cycles: u64,
    pub sim_time: Duration,
    pub native_time: Duration,
    /// Native iterations run (may differ from the simulated count so the
    /// native timing is long enough to measure).
    pub native_iters: u64,
}

impl Measurement {
    /// Simulated guest instructions per host second, in millions.
    pub fn sim_mips(&self) -> f64 {
        self.instret as f64 / self.sim_time.as_secs_f64() / 1e6
    }
    /// Same work done natively, in guest-instruction equivalents (millions/s).
    pub fn native_mips(&self, w: &Workload) -> f64 {
        (self.native_iters * w.instrs_per_iter) as f64 / self.native_time.as_secs_f64() / 1e6
    }
    /// Simulated device cycles per host second, in millions.
    pub fn sim_mcycles_per_s(&self) -> f64 {
        self.cycles as f64 / self.sim_time.as_secs_f64() / 1e6
    }
}

/// Error when the simulated result disagrees with the native one.
#[derive(Debug, thiserror::Error)]
#[error("{workload}: simulator computed 0x{sim:08x}, native Rust 0x{native:08x} ({stop:?})")]
pub struct Mismatch {
    pub workload: &'static str,
    pub sim: u32,
    pub native: u32,
    pub stop: Stop,
}

impl Workload {
    /// A hart with the program loaded at the firmware entry point.
    pub fn hart(&self, iters: u32) -> Hart {
        let mut mem = Memory::new(Ram::new(0, cqlab_abi::arch::BLACKHOLE.l1_size), None);
        mem.write(ENTRY_POINT, &to_bytes(&(self.program)(iters))).expect("program fits in L1");
        Hart::new(mem, 0, ENTRY_POINT)
    }

    /// Runs `iters` iterations simulated and natively and times both.
    pub fn measure(&self, iters: u32) -> Result<Measurement, Mismatch> {
        let mut hart = self.hart(iters);
        let t = Instant::now();
        let stop = hart.run(&mut NoBus, u64::MAX);
        let sim_time = t.elapsed();
        let sim = hart.reg(8);
        let native = (self.native)(iters);
        let ok = matches!(stop, Stop::Halted(Halt { reason: HaltReason::Ecall, .. }));
        if !ok || sim != native {
            return Err(Mismatch { workload: self.name, sim, native, stop });
        }
        // Native loops are ~100x faster: repeat until they run >= 50 ms.
        let mut reps = 1u64;
        let native_time = loop {
            let t = Instant::now();
            for _ in 0..reps {
                black_box((self.native)(black_box(iters)));
            }
            let e = t.elapsed();
            if e >= Duration::from_millis(50) || reps >= 1 << 20 {
                break e;
            }
            reps *= 2;
        };
        Ok(Measurement {
            instret: hart.instret(),
            cycles: hart.cycle(),
            sim_time,
            native_time,
            native_iters: reps * iters as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_compute_what_native_rust_computes() {
        for w in &WORKLOADS {
            let m = w.measure(3000).unwrap_or_else(|e| panic!("{e}"));
            // Setup (li pairs) plus the loop body per iteration.
            assert!(m.instret >= 3000 * w.instrs_per_iter, "{}: {} instructions", w.name, m.instret);
            assert!(m.instret < 3000 * w.instrs_per_iter + 20);
        }
    }
}

/// Result of the two-core ping-pong on the default chip.
#[derive(Debug, Clone)]
pub struct PingPong {
    pub device_cycles: u64,
    pub host_time: Duration,
    pub round_trips: u32,
}

impl PingPong {
    /// Simulated device cycles per host second.
    pub fn cycles_per_second(&self) -> f64 {
        self.device_cycles as f64 / self.host_time.as_secs_f64()
    }
}

/// Polling-dominated ping-pong on the chip: the BRISCs of two Tensix tiles
/// take turns incrementing each other's semaphore 0 with NOC atomics (as
/// `noc_semaphore_inc`) and spin on their own until it moves. With
/// `spinners`, the BRISC of every other Tensix tile runs and spins on a GO
/// word that never comes (as workers waiting for a launch); otherwise they
/// are held in reset.
pub fn chip_pingpong(
    device_cycles: u64,
    cfg: crate::config::SimConfig,
    spinners: bool,
) -> Result<PingPong, crate::chip::SimError> {
    use crate::chip::Chip;
    use crate::niu_asm::NiuAsm;
    use cqlab_abi::arch::{tensix, Noc};
    use cqlab_abi::boot::reset_jal;
    use cqlab_abi::memory_map::{NOC_ATOMIC_RET, RESET_JAL};
    use cqlab_abi::noc::NocAddr;
    use cqlab_abi::semaphore;

    let mut chip = Chip::new(cfg)?;
    let tiles: Vec<_> = chip.tensix_tiles().collect();
    let (a, b) = (tiles[0], tiles[1]);
    let niu = NiuAsm { chip: chip.arch(), noc: Noc::Noc0, base: 5, tmp: 7 };
    let sem0 = semaphore::addr(0) as i32;
    let blackhole = chip.arch().arch == cqlab_abi::arch::Arch::Blackhole;
    let program = |me, peer, serves: bool| {
        let inc = niu.atomic_inc(me, NocAddr::unicast(peer, sem0 as u64), 1, NOC_ATOMIC_RET);
        // x8: the count this core waits for next.
        let mut p = vec![addi(8, 0, 0)];
        if serves {
            p.extend(&inc);
        }
        let top = p.len();
        p.push(addi(8, 8, 1));
        // Blackhole's L0 data cache keeps the old count until a `fence`
        // (Wormhole has none: its turn stays the two instructions 30b5dcc's
        // polling rows were measured with).
        let poll =
            if blackhole { vec![FENCE, lw(9, 0, sem0), bltu(9, 8, -8)] } else { vec![lw(9, 0, sem0), bltu(9, 8, -4)] };
        p.extend(poll);
        p.extend(&inc);
        p.push(jal(0, -4 * (p.len() - top) as i32));
        p
    };
    let boot = |chip: &mut Chip, tile, prog: &[u32]| -> Result<(), crate::chip::SimError> {
        chip.write(NocAddr::unicast(tile, ENTRY_POINT as u64), &to_bytes(prog))?;
        chip.write_u32(NocAddr::unicast(tile, RESET_JAL as u64), reset_jal(ENTRY_POINT))?;
        chip.set_soft_reset(tile, tensix::SOFT_RESET_BRISC_ONLY_RUN)
    };
    boot(&mut chip, a, &program(a, b, true))?;
    boot(&mut chip, b, &program(b, a, false))?;
    if spinners {
        let mut spin = li(6, USER.base + 0x80).to_vec();
        // Fenced on Blackhole as the ping-pong's poll: a turn that hits its
        // L0 copy is no idle repeat, and would never park.
        if blackhole {
            spin.extend([FENCE, lw(7, 6, 0), beq(7, 0, -8), ECALL]);
        } else {
            spin.extend([lw(7, 6, 0), beq(7, 0, -4), ECALL]);
        }
        for &c in &tiles[2..] {
            boot(&mut chip, c, &spin)?;
        }
    }
    let t = Instant::now();
    chip.advance(device_cycles);
    let host_time = t.elapsed();
    let round_trips = chip.read_u32(NocAddr::unicast(a, sem0 as u64))?;
    Ok(PingPong { device_cycles, host_time, round_trips })
}

/// Resident set size of this process in bytes (Linux `/proc/self/status`).
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod chip_tests {
    use super::*;

    #[test]
    fn pingpong_makes_round_trips_on_both_chips() {
        for board in [cqlab_abi::soc::Board::WormholeN150, cqlab_abi::soc::Board::BlackholeP150a] {
            let cfg = crate::config::SimConfig::for_board(board);
            let p = chip_pingpong(20_000, cfg, true).unwrap();
            assert!(p.round_trips > 10, "{board}: {} round trips", p.round_trips);
            // Each round trip needs two NOC trips, so it cannot beat their latency.
            assert!(p.round_trips < 20_000 / 40, "{board}: {} round trips", p.round_trips);
        }
    }
}
