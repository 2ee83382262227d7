//! `prefetch` firmware: one per command queue.
#![no_std]
#![no_main]

use cqlab_kernels::prefetch::Prefetcher;

cqlab_kernels::cq_firmware!(Prefetch, Prefetcher);
