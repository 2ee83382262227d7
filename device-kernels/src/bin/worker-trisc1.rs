//! `worker-trisc1` firmware: TRISC1's worker loop (see
//! `cqlab_kernels::worker::subordinate`); it runs plain RISC-V kernels.
#![no_std]
#![no_main]

cqlab_kernels::subordinate_firmware!(Trisc1);
