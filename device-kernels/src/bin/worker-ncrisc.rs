//! `worker-ncrisc` firmware: NCRISC's worker loop (see
//! `cqlab_kernels::worker::subordinate`); its kernels use NOC1.
#![no_std]
#![no_main]

cqlab_kernels::subordinate_firmware!(Ncrisc);
