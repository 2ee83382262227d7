//! The two-queue stall/dispatch pattern of the field notes: CQ0 replays a
//! trace (kernels on every worker), launches one kernel that stores the
//! iteration number, stamps a marker and records an event; CQ1 waits for
//! that event, checks the marker and the kernel's result, launches a kernel
//! of its own and reads its result at once, then does `copies`
//! write/read-back pairs, each read a dispatcher WAIT plus prefetcher STALL
//! (the stall point): over `buffers` buffers, `depth` enqueued before their
//! read-backs are awaited; CQ0's trace holds `trace_kernels` launches.

use super::args::Args;
use super::failure::{first_difference, Failure};
use cqlab_driver::{CoreRange, Device, Placement, Result as DriverResult};

/// Kernel spin before it stores its result: long enough that a read which
/// does not wait for it sees the old value.
const RESULT_SPIN: u32 = 20_000;

/// What the device must accept before any seed runs.
pub fn preflight(args: &Args, dev: &mut Device) -> DriverResult<()> {
    let (completion, page) = (dev.config().completion_size, args.page_size);
    if page == 0 || cqlab_abi::completion::record_size(page) > completion {
        return Err(cqlab_driver::DriverError::Invalid(format!(
            "--completion-size {completion} cannot hold one {page}-byte page of read-back"
        )));
    }
    for _ in 0..args.buffers {
        dev.alloc_dram(args.bytes.next_multiple_of(page), page)?;
    }
    Ok(())
}

/// What copy `c` of iteration `it` writes: not periodic in the page size,
/// so a page landing in another's place shows.
fn copy_data(len: u32, it: u32, c: u32) -> Vec<u8> {
    (0..len).map(|i| (i ^ i >> 8 ^ i >> 16) as u8 ^ (it as u8).wrapping_mul(31) ^ (c as u8)).collect()
}

pub fn run(args: &Args, dev: &mut Device) -> Result<(), Failure> {
    let (cols, rows) = (dev.chip().cols(), dev.chip().rows());
    let all = CoreRange::new((0, 0), (cols - 1, rows - 1));
    let page = args.page_size;
    let bufs = (0..args.buffers)
        .map(|_| dev.alloc_dram(args.bytes.next_multiple_of(page), page))
        .collect::<DriverResult<Vec<_>>>()?;
    // CQ0 stamps the iteration here before its event; CQ1 checks it after waiting.
    let marker = dev.alloc_l1(0, 0, 16)?;
    let (kc, kr) = (cols - 1, rows - 1);
    let result = dev.alloc_l1(kc, kr, 16)?;
    let Placement::L1 { addr: result_addr, .. } = result.placement else { unreachable!("L1 buffer") };
    // CQ1's own kernel, on another core, at the same L1 offset.
    let (oc, or) = (0, rows - 1);
    let own = dev.alloc_l1(oc, or, 16)?;
    let Placement::L1 { addr: own_addr, .. } = own.placement else { unreachable!("L1 buffer") };
    let trace = {
        let mut cq0 = dev.cq(0)?;
        cq0.begin_trace()?;
        for _ in 0..args.trace_kernels {
            cq0.launch(all, &[])?;
        }
        // No finish here: CQ0 must not have completed an event before the
        // first iteration (an unwritten event word is part of the race).
        cq0.end_trace()?
    };
    for it in 0..args.iterations {
        let stamp = it.wrapping_add(1);
        let ev = {
            let mut cq0 = dev.cq(0)?;
            cq0.execute_trace(&trace)?;
            cq0.launch(CoreRange::single(kc, kr), &[RESULT_SPIN, result_addr, stamp])?;
            if args.delay > 0 {
                cq0.delay(args.delay)?;
            }
            cq0.write_buffer(&marker, 0, &[stamp as u8; 16])?;
            cq0.record_event()?
        };
        let mut cq1 = dev.cq(1)?;
        cq1.wait_for_event(ev)?;
        let seen = cq1.read_buffer(&marker, 0, 16)?;
        if let Some(d) = first_difference(&[stamp as u8; 16], &seen, |_| format!("CQ0 marker write of iteration {it}"))
        {
            return Err(Failure::Check {
                check: "CQ1 ran past CQ0's event (marker)",
                detail: format!("iteration {it}: {d}"),
            });
        }
        let produced = cq1.read_buffer(&result, 0, 4)?;
        if let Some(d) = first_difference(&stamp.to_le_bytes(), &produced, |_| {
            format!("the CQ0 kernel on worker ({kc},{kr}) of iteration {it}")
        }) {
            return Err(Failure::Check {
                check: "CQ1 read a kernel result before CQ0's kernel wrote it",
                detail: format!("iteration {it}: {d}"),
            });
        }
        cq1.launch(CoreRange::single(oc, or), &[RESULT_SPIN, own_addr, !stamp])?;
        let produced = cq1.read_buffer(&own, 0, 4)?;
        if let Some(d) = first_difference(&(!stamp).to_le_bytes(), &produced, |_| {
            format!("the CQ1 kernel on worker ({oc},{or}) of iteration {it}")
        }) {
            return Err(Failure::Check {
                check: "CQ1 read its own kernel's result before the kernel wrote it",
                detail: format!("iteration {it}: {d}"),
            });
        }
        drop(cq1);
        // Rounds of `depth` copies: every write and its read enqueued, then
        // the read-backs collected (the queue keeps each read after its
        // write, and before the next write to its buffer). At depth 1 this
        // is `read_buffer` after each write.
        let size = bufs[0].size;
        let mut c = 0;
        while c < args.copies {
            let round = c..args.copies.min(c + args.depth);
            let mut pending = Vec::with_capacity(round.len());
            for c in round.clone() {
                let buf = &bufs[(c % args.buffers) as usize];
                let mut cq1 = dev.cq(1)?;
                cq1.write_buffer(buf, 0, &copy_data(size, it, c))?;
                pending.push((c, cq1.enqueue_read(buf, 0, size)?));
            }
            for (c, p) in pending {
                let back = dev.complete_read(&p)?;
                if let Some(d) = first_difference(&copy_data(size, it, c), &back, |at| {
                    format!("CQ1 write_buffer of iteration {it} copy {c} (page {})", at as u32 / page)
                }) {
                    return Err(Failure::Check {
                        check: "read-back differs",
                        detail: format!("iteration {it} copy {c}: {d}"),
                    });
                }
            }
            c = round.end;
        }
    }
    dev.cq(0)?.finish()?;
    dev.cq(1)?.finish()?;
    Ok(())
}
