//! `copy` kernel: see `cqlab_kernels::kernels::copy`.
#![no_std]
#![no_main]

cqlab_kernels::kernel!(cqlab_kernels::kernels::copy::copy);
