//! Slow dispatch: no prefetcher or dispatcher firmware. The host writes
//! buffers, kernels, args, launch messages and GO words straight through the
//! BAR (programs: `program_dispatch`) and
//! polls the worker completion count itself — the baseline fast dispatch is
//! compared against (tt-metal's `TT_SLOW_DISPATCH`).
//!
//! Every operation is synchronous with respect to earlier launches: it first
//! waits until every launched worker has reported done.

use crate::buffer::{Buffer, Placement};
use crate::command_queue::{CommandQueue, PendingRead};
use crate::error::Result;
use crate::events::Event;
use cqlab_abi::mmio::{self, sem, MMIO_BASE};
use cqlab_abi::noc::{self, NocAddr};
use cqlab_abi::ring::wrap_ge;

impl CommandQueue<'_> {
    /// Where workers launched from this queue count their completions.
    fn done_counter(&self) -> NocAddr {
        NocAddr::unicast(noc::dispatcher(self.q), (MMIO_BASE + mmio::semaphore(sem::WORKERS_DONE)) as u64)
    }

    /// Polls the completion count until every launched worker is done.
    pub(crate) fn slow_wait_workers(&mut self) -> Result<()> {
        let (q, counter, target) = (self.q, self.done_counter(), self.dev.cqs[self.q as usize].slow_expected);
        self.dev.wait_until(
            Some(q),
            || format!("workers launched on CQ{q} (slow dispatch)"),
            |dev| Ok(wrap_ge(dev.backend.read_u32(counter)?, target)),
        )
    }

    pub(crate) fn slow_write(&mut self, buf: &Buffer, offset: u32, data: &[u8]) -> Result<()> {
        self.slow_wait_workers()?;
        for_each_piece(buf, offset, data.len() as u32, |addr, at, n| {
            self.dev.backend.write(addr, &data[at as usize..(at + n) as usize])
        })
    }

    pub(crate) fn slow_read(&mut self, buf: &Buffer, offset: u32, len: u32) -> Result<PendingRead> {
        self.slow_wait_workers()?;
        let mut out = vec![0u8; len as usize];
        for_each_piece(buf, offset, len, |addr, at, n| {
            self.dev.backend.read(addr, &mut out[at as usize..(at + n) as usize])
        })?;
        let host = &mut self.dev.cqs[self.q as usize];
        let tag = host.next_tag;
        host.next_tag = tag.wrapping_add(1).max(1);
        host.reads.insert(tag, out);
        Ok(PendingRead::new(self.q, vec![(tag, len)]))
    }

    pub(crate) fn slow_record_event(&mut self) -> Result<Event> {
        self.slow_wait_workers()?;
        let id = self.dev.next_event;
        self.dev.next_event += 1;
        let host = &mut self.dev.cqs[self.q as usize];
        host.last_event_done = host.last_event_done.max(id);
        Ok(Event { cq: self.q, id })
    }
}

/// Splits `[offset, offset + len)` of `buf` into BAR accesses:
/// `f(noc_address, byte_offset_in_request, bytes)`.
fn for_each_piece(
    buf: &Buffer,
    offset: u32,
    len: u32,
    mut f: impl FnMut(NocAddr, u32, u32) -> Result<()>,
) -> Result<()> {
    match buf.placement {
        Placement::L1 { core, addr } => f(NocAddr::unicast(core, (addr + offset) as u64), 0, len),
        Placement::Dram { page_size, .. } => {
            let mut at = 0;
            while at < len {
                let pos = offset + at;
                let (page, in_page) = (pos / page_size, pos % page_size);
                let n = (page_size - in_page).min(len - at);
                let base = buf.dram_page(page).expect("DRAM buffer");
                f(base.offset(in_page as u64), at, n)?;
                at += n;
            }
            Ok(())
        }
    }
}
