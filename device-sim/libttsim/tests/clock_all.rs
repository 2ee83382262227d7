//! `clock_all_devices` when a chip's DMA callback throws: the call ends at
//! that chip, the chips after it are owed their turn, and the next call
//! pays it first, so every chip is clocked as far as the others.
//!
//! A host's C++ exception cannot be thrown from Rust; these callbacks
//! panic instead, and the test catches the panic: to the library and the
//! chip both unwind alike. (Through the exported `C-unwind` call a panic
//! aborts, by design, so the test drives the state below it; the pytest
//! suite does the same through tt-umd's real exceptions.)

use cqlab_abi::soc::ChipLayout;
use cqlab_ttsim::dma::Callbacks;
use cqlab_ttsim::fixtures::DmaProbe;
use cqlab_ttsim::state::{Lib, Sim};
use cqlab_ttsim::Arch;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

extern "C-unwind" fn refuse_read(addr: u64, _: *mut c_void, _: u32) {
    panic!("the host throws at a device read of {addr:#x}");
}

extern "C-unwind" fn refuse_write(addr: u64, _: *const c_void, _: u32) {
    panic!("the host throws at a device write to {addr:#x}");
}

/// Cycles chip `id` has been clocked for, and what it is still owed.
fn clocked(sim: &mut Sim, id: u32) -> (u64, u64) {
    let owed = sim.owed.iter().filter(|(chip, _)| *chip == id).map(|(_, n)| n).sum();
    (sim.device(id).unwrap().stats.get("clocked_cycles").unwrap(), owed)
}

#[test]
fn a_chip_whose_callback_throws_leaves_the_later_chips_owed_and_the_next_call_pays_them() {
    const N: u32 = 50;
    for arch in Arch::ALL {
        let mut lib = Lib::new();
        lib.callbacks = Some(Callbacks { read: refuse_read, write: refuse_write });
        lib.set(arch, "CQLAB_TTSIM_LOG", "off").unwrap();
        lib.init(arch).unwrap();
        let callbacks = lib.callbacks;
        let sim = lib.sim().unwrap();
        for id in [1, 2] {
            sim.create(id, callbacks).unwrap();
        }
        // Chip 1 writes to host memory and reads back: the host throws at both.
        let layout = ChipLayout::new(sim.settings.board, sim.settings.harvesting.clone()).unwrap();
        let probe = DmaProbe::new(&layout);
        probe.load(sim.device(1).unwrap()).unwrap();
        let (mut calls, mut thrown) = (0u64, 0);
        while !probe.done(sim.device(1).unwrap()).unwrap() {
            assert!(calls < 10_000, "{arch:?}: the probe never finished");
            calls += 1;
            let given = calls * N as u64;
            let r = catch_unwind(AssertUnwindSafe(|| sim.clock_all(N)));
            let [c0, c1, c2] = [0, 1, 2].map(|id| clocked(sim, id));
            // Chip 0 had its turn before chip 1 threw, and chip 1 its own
            // (cut short: the rest of that clock is not run).
            assert_eq!([c0, c1], [(given, 0); 2], "{arch:?}: call {calls}");
            if r.is_err() {
                thrown += 1;
                assert!(c2.1 > 0, "{arch:?}: call {calls} threw before chip 2's turn: it is owed it");
            }
            assert_eq!(c2.0 + c2.1, given, "{arch:?}: call {calls}: chip 2 clocked or owed every cycle given");
            if r.is_ok() {
                assert!(sim.owed.is_empty(), "{arch:?}: call {calls} paid everything owed: {:?}", sim.owed);
            }
        }
        assert_eq!(thrown, 2, "{arch:?}: the probe's write and its read each threw");
        // After the last call, which did not throw, chip 2 has had every
        // cycle; idle, its device time is just that.
        let given = calls * N as u64;
        assert_eq!(clocked(sim, 2), (given, 0), "{arch:?}");
        assert_eq!(sim.device(2).unwrap().chip.now(), given, "{arch:?}");
    }
}
