//! `worker` firmware: BRISC's resident loop on every worker tile; it starts
//! the other four cores and hands them their kernels. Kernels are separate
//! images it calls (see `cqlab_kernels::worker`).
#![no_std]
#![no_main]

cqlab_kernels::worker_firmware!();
