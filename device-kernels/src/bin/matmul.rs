//! `matmul` kernel: see `cqlab_kernels::kernels::matmul`.
#![no_std]
#![no_main]

cqlab_kernels::kernel!(cqlab_kernels::kernels::matmul::matmul);
