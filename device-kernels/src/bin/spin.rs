//! `spin` worker: see `cqlab_kernels::worker::spin`.
#![no_std]
#![no_main]

cqlab_kernels::worker_firmware!(Spin, cqlab_kernels::worker::spin);
