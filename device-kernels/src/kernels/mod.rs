//! Worker kernels. Each gets its launch message; work is split across the
//! launched cores by their index in the rectangle (`args` say how).

pub mod copy;
pub mod matmul;

use crate::platform::Platform;
use cqlab_abi::noc::Coord;

/// This worker's index among `cols`-wide rows of cores starting at logical
/// (0,0) of the compute grid (`NocMap`).
pub(crate) fn core_index(p: &impl Platform, cols: u32) -> u32 {
    let (c, r) = crate::places::grid(p).logical(Coord::unpack(p.core_xy())).unwrap_or((0, 0));
    r as u32 * cols + c as u32
}

pub(crate) use crate::report::{wait_reads, wait_writes_sent};
