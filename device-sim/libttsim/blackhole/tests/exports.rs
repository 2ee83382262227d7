//! `libttsim_bh.so` through its exported functions (the shared tests in
//! `device-sim/libttsim/shared-tests/exports.rs`).

use ttsim_bh as lib;

const ARCH: cqlab_abi::arch::Arch = cqlab_abi::arch::Arch::Blackhole;

#[path = "../../shared-tests/exports.rs"]
mod exports;
