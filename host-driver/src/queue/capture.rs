//! Traces: a queue's commands captured instead of run, stored in DRAM and
//! replayed by one `EXEC_BUF`.
//!
//! A capture plans programs from the kernels resident when it begins and
//! everything in use by the launch just before the trace (launch number
//! `before`): whatever a replay reuses first, it first waits for the launch
//! that precedes that replay, and so for all earlier ones. That wait is not
//! captured: a replay makes it before its `EXEC_BUF`, and only when the host
//! does not know that launch finished already (`execute_trace`). A replay
//! checks the residency the capture relied on again.

use super::issue::chunk;
use super::ops::CommandQueue;
use super::trace::{Capture, Trace};
use crate::buffer::Placement;
use crate::error::{DriverError, Result, StateError};
use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::prefetch::EXEC_BUF_HEAD_MAX;
use cqlab_abi::size::{ChunkSize, DispatchSize};
use cqlab_abi::PCIE_ALIGNMENT;

impl CommandQueue<'_> {
    /// Starts capturing this queue's commands into a trace instead of running them.
    pub fn begin_trace(&mut self) -> Result<()> {
        self.fast_only("traces")?;
        if self.host().capture.is_some() {
            return Err(StateError::AlreadyCapturing.into());
        }
        if self.host().workers_outstanding > 0 {
            // Traces start from a drained worker count.
            let size = ChunkSize::new().relay_inline(DispatchSize::new().wait()).bytes();
            let c = chunk(size, |e| e.relay_inline(true, |w| self.wait_workers(w, WaitFlags::empty())))?;
            self.submit_clearing(&c, false)?;
        }
        let host = self.host();
        let (launches, waited) = (host.program_launches, host.waited_launch);
        let before = launches + 1;
        host.program_launches = before;
        host.waited_launch = before;
        let state = host.programs.all_in_use(before);
        let saved = std::mem::replace(&mut host.programs, state);
        host.capture = Some(Capture {
            bytes: Vec::new(),
            saved: (saved, launches, waited),
            relies: Vec::new(),
            before,
            waits_before: false,
        });
        Ok(())
    }

    /// Ends the capture and stores the trace in DRAM.
    pub fn end_trace(&mut self) -> Result<Trace> {
        let capture = self.host().capture.take().ok_or(StateError::NotCapturing)?;
        let Capture { mut bytes, saved: (saved, start, waited), relies, waits_before, .. } = capture;
        let host = self.host();
        let workers = std::mem::take(&mut host.workers_outstanding);
        // The captured programs have not run: the workers still hold what
        // they held before the capture.
        let captured = std::mem::replace(&mut host.programs, saved);
        // Launch numbers relative to the one before the trace, numbered 1.
        let before = start + 1;
        let launches = host.program_launches - before;
        let programs = (launches > 0).then(|| (captured.rebased(before, 1), launches));
        host.program_launches = start;
        host.waited_launch = waited;
        bytes.extend(chunk(ChunkSize::new().exec_buf_end().bytes(), |e| e.exec_buf_end())?);
        // The prefetcher streams a trace through its trace area window by
        // window (`memory_map::TRACE_WINDOW`, which these page sizes divide),
        // one DRAM read per page, so a trace of any length replays. Pages
        // are whole NOC packets where the issue queue can carry one (the
        // trace is written through it), else halves.
        let issue = self.host().layout.issue_size as usize;
        let page_chunk = |page: usize| ChunkSize::new().relay_inline(DispatchSize::new().write_paged(page)).bytes();
        let mut page_size = self.chip.params().noc.max_packet as usize;
        while page_size > PCIE_ALIGNMENT && (page_chunk(page_size) > issue || page_size > self.max_inline()) {
            page_size /= 2;
        }
        let size = bytes.len().next_multiple_of(page_size) as u32;
        let buffer =
            self.allocator.dram(size, page_size as u32, self.chip.dram_banks(), self.chip.dram_bank_bytes())?;
        // The first bytes also travel inline with each replay's EXEC_BUF
        // (`ExecBufCmd::head`): the prefetcher starts on them while it reads
        // the rest from DRAM. Whole PCIe lines, as much as a chunk can carry.
        let head_len = (EXEC_BUF_HEAD_MAX as usize).min(self.max_inline()).min(bytes.len()) & !(PCIE_ALIGNMENT - 1);
        let head = bytes[..head_len].to_vec();
        let head_is_whole = head_len == bytes.len();
        bytes.resize(buffer.size as usize, 0);
        self.write_buffer(&buffer, 0, &bytes)?;
        // The trace must be in DRAM before the prefetcher first reads it: the
        // dispatcher drains the upload's writes and releases a STALL, once.
        let size = ChunkSize::new().relay_inline(DispatchSize::new().wait()).stall().bytes();
        let c = chunk(size, |e| {
            e.relay_inline(true, |w| w.wait(WaitFlags::BARRIER | WaitFlags::NOTIFY_PREFETCH, 0, 0))?;
            e.stall()
        })?;
        self.submit(&c, false)?;
        Ok(Trace { buffer, bytes: bytes.len() as u32, head, head_is_whole, waits_before, workers, programs, relies })
    }

    /// Replays a trace (with the stall flag the prefetcher requires).
    pub fn execute_trace(&mut self, trace: &Trace) -> Result<()> {
        self.fast_only("traces")?;
        let Placement::Dram { base, page_size, .. } = trace.buffer.placement else {
            return Err(DriverError::Invalid("traces live in DRAM".into()));
        };
        if self.host().capture.is_some() {
            return Err(StateError::NestedReplay.into());
        }
        // The kernels the trace did not send must be where it found them.
        for r in &trace.relies {
            self.ensure_resident(r)?;
        }
        // No drain: the trace waits for what it reuses (see the module
        // documentation), and the dispatcher for the launch-ring entries
        // its launches take, so a replay overlaps the work before it.
        let head = &trace.head;
        // The wait the capture left out: for the launch before this replay,
        // unless an earlier WAIT covered it.
        let host = self.host();
        let wait_before = trace.waits_before && host.waited_launch < host.program_launches;
        let wait =
            if wait_before { ChunkSize::new().relay_inline(DispatchSize::new().wait()) } else { ChunkSize::new() };
        let c = chunk(wait.exec_buf(head.len()).bytes(), |e| {
            if wait_before {
                e.relay_inline(true, |w| w.wait(WaitFlags::WAIT_LAUNCH, 0, 1))?;
            }
            if trace.head_is_whole {
                e.exec_buf_whole(base, page_size, trace.buffer.pages(), head)
            } else {
                e.exec_buf_with_head(base, page_size, trace.buffer.pages(), head)
            }
        })?;
        self.submit(&c, true)?;
        let host = self.host();
        if wait_before {
            host.waited_launch = host.program_launches;
        }
        host.workers_outstanding += trace.workers;
        if let Some((state, launches)) = &trace.programs {
            // After the replay the workers hold what the trace left; its
            // launch numbers continue from the launch before the replay.
            let start = host.program_launches;
            host.programs = state.rebased(1, start);
            host.program_launches = start + launches;
        }
        Ok(())
    }
}
