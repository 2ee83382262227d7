//! Worker kernels. Each gets its launch message; work is split across the
//! launched cores by their index in the rectangle (`args` say how).

pub mod copy;
pub mod matmul;

use crate::platform::Platform;
use cqlab_abi::noc::{worker_index, Coord};

/// This worker's index among `cols`-wide rows of cores starting at (0,0).
pub(crate) fn core_index(p: &impl Platform, cols: u32) -> u32 {
    let (c, r) = worker_index(Coord::unpack(p.core_xy())).unwrap_or((0, 0));
    r as u32 * cols + c as u32
}

pub(crate) use crate::report::{wait_reads, wait_writes_sent};
