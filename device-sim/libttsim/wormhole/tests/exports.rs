//! `libttsim_wh.so` through its exported functions (the shared tests in
//! `device-sim/libttsim/shared-tests/exports.rs`).

use ttsim_wh as lib;

const ARCH: cqlab_abi::arch::Arch = cqlab_abi::arch::Arch::Wormhole;

#[path = "../../shared-tests/exports.rs"]
mod exports;
