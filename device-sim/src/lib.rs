//! `cqlab-sim`: a Wormhole B0 or Blackhole chip, simulated register for
//! register. RV32IM harts with predecoded instruction caches, and a
//! standalone runner for bare ELFs.
//!
//! Layout: [`decode`] turns words into [`decode::Decoded`]; [`hart`] runs
//! them against a [`memory::Memory`], timing fetches through its
//! [`icache`] when that option is on; [`elf`] parses and checks images;
//! [`exec`] runs one ELF to completion (riscv-tests/HTIF `tohost`
//! convention). [`chip::Chip`] is the whole device, built from a
//! `soc::ChipLayout` ([`config::SimConfig`]): Tensix tiles of five cores
//! with their registers ([`tensix`]) and two NIUs ([`niu`]), requests
//! resolved as the chip translates them ([`request`]) and timed on the two
//! NOC tori ([`noc`]), DRAM, host memory behind the PCIe tile, ARC
//! ([`arc`]), BAR0/BAR4 with their TLB windows ([`bar`]), a deterministic
//! scheduler seeded through [`rng`], and a per-core [`debug::CoreDebug`]
//! view. [`asm`] is a tiny encoder for in-process programs.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod arc;
pub mod asm;
pub mod bar;
pub mod bench;
pub mod calibrate;
pub mod chip;
pub mod config;
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
pub mod icache;
pub mod l0cache;
pub mod links;
pub mod memory;
pub mod niu;
pub mod niu_asm;
pub mod noc;
pub mod pct;
pub mod request;
pub mod rng;
pub mod shared;
pub mod storage;
pub mod tensix;
pub mod timing;
mod zeroed;

#[cfg(test)]
mod testelf;

pub use history::HISTORY_LEN;
