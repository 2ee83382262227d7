//! `matmul` worker: see `cqlab_kernels::kernels::matmul`.
#![no_std]
#![no_main]

cqlab_kernels::worker_firmware!(Matmul, cqlab_kernels::kernels::matmul::matmul);
