//! `copy` worker: see `cqlab_kernels::kernels::copy`.
#![no_std]
#![no_main]

use cqlab_abi::firmware::FirmwareId;
use cqlab_kernels::boot::announce;
use cqlab_kernels::hal::{core_xy, cycle, Device};
use cqlab_kernels::kernels::copy::copy;
use cqlab_kernels::worker::serve;

cqlab_kernels::entry!(main);

fn main() -> ! {
    let mut dev = Device;
    announce(&mut dev, FirmwareId::Copy, core_xy(), cqlab_kernels::build_id(), cycle());
    serve(&mut dev, FirmwareId::Copy, copy)
}
