//! `cqlab-sim`: the cqlab chip, simulated. RV32IM harts with predecoded
//! instruction caches, per-core L1, and a standalone runner for bare ELFs.
//!
//! Layout: [`decode`] turns words into [`decode::Decoded`]; [`hart`] runs
//! them against a [`memory::Memory`]; [`elf`] parses and checks images;
//! [`exec`] runs one ELF to completion (riscv-tests/HTIF `tohost`
//! convention). [`chip::Chip`] is the whole device: cores with
//! [`core_mmio`] registers, [`noc`] timing, DRAM, sysmem, a deterministic
//! scheduler seeded through [`rng`], configured by [`config::SimConfig`],
//! with host access and a per-core [`debug::CoreDebug`] view. [`asm`] is a
//! tiny encoder for in-process programs.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod asm;
pub mod bar;
pub mod bench;
pub mod chip;
pub mod config;
pub mod core_mmio;
pub mod csr;
#[cfg(feature = "daemon")]
pub mod daemon;
pub mod debug;
pub mod decode;
mod digest;
pub mod disasm;
pub mod dram;
pub mod elf;
pub mod exec;
pub mod fastforward;
pub mod hart;
mod history;
pub mod memory;
pub mod noc;
pub mod pct;
pub mod rng;
pub mod shared;
pub mod storage;
pub mod timing;

#[cfg(test)]
mod testelf;

pub use history::HISTORY_LEN;
