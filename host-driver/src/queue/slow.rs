//! Slow dispatch: no prefetcher or dispatcher firmware. The host writes
//! buffers, kernels, args, launch messages and GO words straight through the
//! BAR and polls the worker completion count itself: the baseline fast
//! dispatch is compared against (tt-metal's `TT_SLOW_DISPATCH`).
//!
//! Every operation is synchronous with respect to earlier launches: it first
//! waits until every launched worker has reported done.

use super::mutant::mutant;
use super::ops::{CommandQueue, PendingRead};
use super::program_state::{slot_addr, Plan, ProgramState};
use super::stream::launch_message;
use crate::buffer::{Buffer, Placement};
use crate::dump::Wait;
use crate::error::Result;
use crate::events::Event;
use crate::geometry::Topology;
use crate::program::Program;
use cqlab_abi::noc::NocAddr;
use cqlab_abi::program::{launch_entry, LAUNCH_TAG};
use cqlab_abi::ring::wrap_ge;
use cqlab_abi::semaphore;

impl CommandQueue<'_> {
    /// Where workers launched from this queue count their completions.
    fn done_counter(&self) -> NocAddr {
        NocAddr::unicast(self.chip.dispatcher(self.q), semaphore::addr(semaphore::WORKERS_DONE) as u64)
    }

    /// Polls the completion count until every launched worker is done.
    fn slow_wait_workers(&mut self) -> Result<()> {
        let (q, counter, target) = (self.q, self.done_counter(), self.host().slow_expected);
        crate::wait::until(
            self.backend,
            self.cfg,
            self.chip,
            self.queues,
            || Wait::SlowWorkers { cq: q },
            |backend, _| Ok(wrap_ge(backend.read_u32(counter)?, target)),
        )
    }

    pub(super) fn slow_write(&mut self, buf: &Buffer, offset: u32, data: &[u8]) -> Result<()> {
        self.slow_wait_workers()?;
        for_each_piece(self.chip, buf, offset, data.len() as u32, |addr, at, n| {
            self.backend.write(addr, &data[at as usize..(at + n) as usize])
        })
    }

    pub(super) fn slow_read(&mut self, buf: &Buffer, offset: u32, len: u32) -> Result<PendingRead> {
        self.slow_wait_workers()?;
        let mut out = vec![0u8; len as usize];
        for_each_piece(self.chip, buf, offset, len, |addr, at, n| {
            self.backend.read(addr, &mut out[at as usize..(at + n) as usize])
        })?;
        let host = self.host();
        let tag = host.take_tag();
        host.reads.insert(tag, out);
        Ok(PendingRead { cq: self.q, tags: vec![(tag, len)] })
    }

    pub(super) fn slow_record_event(&mut self) -> Result<Event> {
        self.slow_wait_workers()?;
        let id = self.queues.next_event;
        self.queues.next_event += 1;
        let host = self.host();
        host.last_event_done = host.last_event_done.max(id);
        Ok(Event { cq: self.q, id })
    }

    /// A program: everything through the BAR once earlier work is done.
    pub(super) fn slow_program(&mut self, program: &Program, plan: &Plan, grid: u32) -> Result<()> {
        if !mutant!(self.cfg, "host-slow-launch-before-done") {
            self.slow_wait_workers()?;
        }
        for (k, choice) in plan.slots.iter().enumerate() {
            let spec = &program.kernels[k];
            let image = choice.upload.then(|| spec.image.for_slot(choice.slot));
            for g in plan.groups.iter().filter(|g| g.kernel == k) {
                for (i, (col, row)) in ProgramState::range_cores(program, k, g.range).into_iter().enumerate() {
                    let tile = self.chip.worker(col, row).expect("a program checked against the grid");
                    let at = |a: u32| NocAddr::unicast(tile, a as u64);
                    if let Some(img) = &image {
                        self.backend.write(at(slot_addr(*choice)), img)?;
                    }
                    if g.common_count > 0 {
                        self.backend.write(at(g.common_addr), spec.common_bytes())?;
                    }
                    if g.unique_own {
                        self.backend.write(at(g.unique_addr), spec.unique_of(g.range, i))?;
                    } else if g.unique_count > 0 {
                        self.backend.write(at(g.unique_addr), spec.unique_block(g.range))?;
                    }
                }
            }
        }
        let seq = self.queues.next_launch_seq;
        let mut msg = launch_message(seq, program, plan);
        // Tags count this queue's launches: each queue has its own ring, and
        // a worker expects tag n + 1 in a ring after tag n there (a count
        // shared by the queues left gaps, and the workers waited forever).
        let n = self.host().slow_launches.wrapping_add(1);
        msg[LAUNCH_TAG as usize..].copy_from_slice(&n.to_le_bytes());
        for w in self.chip.workers() {
            // One BAR write per worker, tag last: the message is its GO.
            self.backend.write(NocAddr::unicast(w, launch_entry(self.q as u32, n) as u64), &msg)?;
        }
        let host = self.host();
        host.slow_launches = n;
        host.slow_expected = host.slow_expected.wrapping_add(grid);
        host.program_launches += 1;
        host.waited_launch = host.program_launches;
        let number = host.program_launches;
        host.programs.commit(program, plan, number);
        self.queues.next_launch_seq = seq.wrapping_add(1);
        Ok(())
    }
}

/// Splits `[offset, offset + len)` of `buf` into BAR accesses:
/// `f(noc_address, byte_offset_in_request, bytes)`.
fn for_each_piece(
    chip: &Topology,
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
                let base = buf.dram_page(chip, page).expect("DRAM buffer");
                f(base.offset(in_page as u64), at, n)?;
                at += n;
            }
            Ok(())
        }
    }
}
