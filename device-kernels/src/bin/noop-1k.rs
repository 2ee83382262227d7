//! `noop-1k` kernel: `noop` padded to about 1k of binary (dispatch benchmarks).
#![no_std]
#![no_main]

cqlab_kernels::padded_kernel!(cqlab_kernels::worker::noop, 1008);
