//! `noop-4k` kernel: `noop` padded to about 4k of binary (dispatch benchmarks).
#![no_std]
#![no_main]

cqlab_kernels::padded_kernel!(cqlab_kernels::worker::noop, 4080);
