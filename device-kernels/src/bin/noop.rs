//! `noop` worker: does nothing per launch but report completion; measures
//! pure dispatch cost.
#![no_std]
#![no_main]

cqlab_kernels::worker_firmware!(Noop, cqlab_kernels::worker::noop);
