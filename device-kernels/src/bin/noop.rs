//! `noop` kernel: see `cqlab_kernels::worker::noop`.
#![no_std]
#![no_main]

cqlab_kernels::kernel!(cqlab_kernels::worker::noop);
