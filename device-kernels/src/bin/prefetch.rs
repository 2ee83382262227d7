//! `prefetch` firmware: boots, publishes its alive record and halts. The command
//! queue logic arrives with the firmware issue (#4).
#![no_std]
#![no_main]

use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::waypoint::DONE;
use cqlab_kernels::boot::{announce, set_waypoint};
use cqlab_kernels::hal::{core_xy, cycle, halt, L1};

cqlab_kernels::entry!(main);

fn main() -> ! {
    let mut l1 = L1;
    announce(&mut l1, FirmwareId::Prefetch, core_xy(), cqlab_kernels::build_id(), cycle());
    set_waypoint(&mut l1, DONE);
    halt()
}
