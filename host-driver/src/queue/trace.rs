//! What a trace is: the capture in progress on a queue, and a captured
//! trace stored in DRAM (`super::capture` makes and replays them).

use super::program_state::ProgramState;
use crate::buffer::Buffer;
use crate::program::Program;

/// A kernel a trace found resident when it was captured (in text slot
/// `slot`, on the workers of `kernel`'s only kernel): a replay that no
/// longer finds it there sends it first.
#[derive(Clone, Debug)]
pub(crate) struct Resident {
    pub slot: u32,
    pub kernel: Program,
}

/// A capture in progress.
#[derive(Debug)]
pub(crate) struct Capture {
    /// The chunks captured so far.
    pub bytes: Vec<u8>,
    /// Program state, launch count and last waited launch when it began:
    /// the captured programs have not run, so they come back at its end.
    pub saved: (ProgramState, u64, u64),
    /// Kernels the capture found resident and did not send.
    pub relies: Vec<Resident>,
    /// The launch number standing for "the launch before a replay".
    pub before: u64,
    /// Whether a captured program reuses something that launch used (so a
    /// replay must first wait for it).
    pub waits_before: bool,
}

/// A captured trace stored in DRAM, replayed with `execute_trace`.
#[derive(Clone, Debug)]
pub struct Trace {
    pub buffer: Buffer,
    pub bytes: u32,
    /// The trace's first bytes, sent inline with every replay's EXEC_BUF.
    pub(crate) head: Vec<u8>,
    /// Whether `head` is the whole trace: a replay then reads nothing from
    /// DRAM (`ExecBufFlags::WHOLE`).
    pub(crate) head_is_whole: bool,
    /// Whether its programs reuse what the launch before a replay may
    /// still use (the replay waits for that launch first, when not known done).
    pub(crate) waits_before: bool,
    /// Worker completions one replay adds.
    pub workers: u32,
    /// What the workers hold after a replay (launch numbers relative to its
    /// start) and how many launches it makes, if the trace enqueues programs.
    pub(crate) programs: Option<(ProgramState, u64)>,
    /// Kernels the trace expects resident (see [`Resident`]).
    pub(crate) relies: Vec<Resident>,
}
