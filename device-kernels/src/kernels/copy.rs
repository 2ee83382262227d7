//! `copy`: moves pages of one interleaved DRAM buffer to another through L1.
//!
//! args: [src_base, dst_base, page_size, pages, banks, grid_cols, cores].
//! Core `i` copies pages i, i + cores, i + 2*cores, ...

use super::{core_index, wait_reads, wait_writes_sent};
use crate::platform::Platform;
use crate::report::fail;
use crate::worker::common_args;
use cqlab_abi::mailbox::DeviceError;
use cqlab_abi::memory_map::{interleaved_page, kernel_scratch};
use cqlab_abi::program::KernelCtx;

pub fn copy(p: &mut impl Platform, ctx: &KernelCtx) {
    let [src, dst, page_size, pages, banks, cols, cores, ..] = common_args::<7>(p, ctx);
    if page_size == 0
        || page_size > kernel_scratch(crate::CHIP).size
        || banks == 0
        || cores == 0
        || ctx.common_count < 7
    {
        fail(p, DeviceError::BadKernelArgs, ctx.common_addr, page_size, ctx.common_count, ctx.seq);
    }
    let mut page = core_index(p, cols);
    while page < pages {
        if page >= cores {
            // The scratch page is reused: the previous page's write must
            // have left it. The last write is not waited for here: the
            // worker waits for every write to land before it reports done.
            wait_writes_sent(p);
        }
        let (bank, off) = interleaved_page(src, page, page_size, banks);
        p.noc_read(crate::places::dram(p, bank, off), kernel_scratch(crate::CHIP).base, page_size);
        wait_reads(p);
        let (bank, off) = interleaved_page(dst, page, page_size, banks);
        p.noc_write(kernel_scratch(crate::CHIP).base, crate::places::dram(p, bank, off), page_size);
        page += cores;
    }
}
