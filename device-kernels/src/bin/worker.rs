//! `worker` firmware: the resident loop every worker core runs; kernels are
//! separate images it calls (see `cqlab_kernels::worker`).
#![no_std]
#![no_main]

cqlab_kernels::worker_firmware!();
