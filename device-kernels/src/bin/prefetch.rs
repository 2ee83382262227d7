//! `prefetch` firmware: one per command queue.
#![no_std]
#![no_main]

use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{CqConfig, CQ_CONFIG};
use cqlab_kernels::boot::announce;
use cqlab_kernels::hal::{core_xy, cycle, Device};
use cqlab_kernels::memory::Memory;
use cqlab_kernels::prefetch::Prefetcher;
use zerocopy::FromBytes;

cqlab_kernels::entry!(main);

fn main() -> ! {
    let mut dev = Device;
    announce(&mut dev, FirmwareId::Prefetch, core_xy(), cqlab_kernels::build_id(), cycle());
    let mut raw = [0u8; 64];
    dev.read_words(CQ_CONFIG, &mut raw);
    let cfg = CqConfig::read_from_bytes(&raw).unwrap_or_default();
    Prefetcher::new(&mut dev, cfg).run()
}
