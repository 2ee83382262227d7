//! `copy` worker: see `cqlab_kernels::kernels::copy`.
#![no_std]
#![no_main]

cqlab_kernels::worker_firmware!(Copy, cqlab_kernels::kernels::copy::copy);
