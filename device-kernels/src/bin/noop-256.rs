//! `noop-256` kernel: `noop` padded to about 256 of binary (dispatch benchmarks).
#![no_std]
#![no_main]

cqlab_kernels::padded_kernel!(cqlab_kernels::worker::noop, 240);
