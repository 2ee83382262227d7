//! `cqlab-abi`: the single source of truth for every byte the host driver,
//! the RISC-V firmware and the simulator agree on.
//!
//! `no_std`, no alloc: the firmware links it as it is. Every `#[repr(C)]`
//! struct has its size and field offsets asserted at compile time next to its
//! definition; nothing outside this crate may restate a layout or a constant.
//!
//! Byte order is little-endian on both sides (x86_64/aarch64 host, RV32IM
//! device); a compile-time check refuses any other target.
#![no_std]
#![forbid(unsafe_code)]

// The `std` feature adds the host-side chip descriptions (`soc`).
#[cfg(feature = "std")]
extern crate std;

#[macro_use]
mod layout;
#[macro_use]
mod table;

pub mod arch;
pub mod boot;
pub mod completion;
pub mod decode;
pub mod dispatch;
pub mod elf;
pub mod encode;
pub mod fetch_queue;
pub mod fields;
pub mod firmware;
pub mod mailbox;
pub mod memory_map;
pub mod noc;
pub mod noc_map;
pub mod prefetch;
pub mod program;
pub mod ring;
pub mod semaphore;
pub mod size;
#[cfg(feature = "std")]
pub mod soc;
pub mod sysmem;
pub mod trace;
pub mod waypoint;

/// Version of this ABI. Firmware reports it in its alive record; the host
/// refuses to drive firmware built against another version. 3: the real
/// chips' contract (issue 25: translated coordinates, `NocMap`, L1
/// semaphores, per-core images and kernels). 4: a worker's BRISC starts
/// its subordinate cores with one word (`mailbox::SubordinateRun`, as
/// tt-metal's `subordinate_sync`), and they read their launch themselves.
/// 5: unique args may be sent to each tile alone (`program::UNIQUE_OWN`).
/// 6: a firmware image's id names its role too (`boot::IMAGE_ID_WORDS`).
/// 7: each queue's staging arena is in its `mailbox::CqConfig`, and
/// `DeviceError::BadSource` names a source the firmware will not read.
pub const ABI_VERSION: u32 = 7;

/// Command headers, dispatch payloads and dispatcher-ring writes are aligned
/// to this many bytes (the L1 / NOC alignment).
pub const L1_ALIGNMENT: usize = 16;

/// Every prefetch command (header + payload + zero padding) in the issue queue
/// occupies a multiple of this many bytes, the PCIe read alignment.
pub const PCIE_ALIGNMENT: usize = 64;

/// Size of every prefetch and dispatch command header.
pub const CMD_HEADER_SIZE: usize = 16;

/// Rounds `n` up to a multiple of `align` (a power of two). `None` on overflow.
pub const fn align_up(n: usize, align: usize) -> Option<usize> {
    match n.checked_add(align - 1) {
        Some(v) => Some(v & !(align - 1)),
        None => None,
    }
}

const _: () = assert!(cfg!(target_endian = "little"), "cqlab-abi assumes a little-endian target");
