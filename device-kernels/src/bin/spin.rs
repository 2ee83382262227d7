//! `spin` worker: busy-waits `args[0]` cycles per launch.
#![no_std]
#![no_main]

use cqlab_abi::firmware::FirmwareId;
use cqlab_kernels::boot::announce;
use cqlab_kernels::hal::{core_xy, cycle, Device};
use cqlab_kernels::worker::{serve, spin};

cqlab_kernels::entry!(main);

fn main() -> ! {
    let mut dev = Device;
    announce(&mut dev, FirmwareId::Spin, core_xy(), cqlab_kernels::build_id(), cycle());
    serve(&mut dev, FirmwareId::Spin, spin)
}
