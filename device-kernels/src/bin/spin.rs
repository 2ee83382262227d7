//! `spin` kernel: see `cqlab_kernels::worker::spin`.
#![no_std]
#![no_main]

cqlab_kernels::kernel!(cqlab_kernels::worker::spin);
