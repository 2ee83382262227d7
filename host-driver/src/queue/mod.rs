//! Command queues: the host side of each queue's issue ring, fetch queue and
//! completion ring, and the operations users enqueue.
//!
//! - `state`: [`Queues`], every queue's host state (a `Queue` each, which
//!   owns its ring positions, read-backs, events, capture, program state and
//!   staging arena) and what the queues share.
//! - `issue`: the issue ring and fetch queue (reserve, copy, doorbell).
//! - `completion`: the completion rings (drain, read-backs, events).
//! - `pointers`: each queue's pointers, for dumps and status.
//! - `ops`: [`CommandQueue`], the operations on one queue.
//! - `trace`, `capture`: traces ([`Trace`]): what a capture holds; capture,
//!   store, replay.
//! - `programs`, `stream`, `staged`, `program_state`, `staging`: programs,
//!   their dispatch stream, blobs staged in sysmem, what the workers hold.
//! - `slow`: slow dispatch, through the BAR.
//! - [`mutant`]: host mutants, one protocol step of the host reordered or
//!   loosened each, chosen at build time.

mod capture;
mod completion;
mod issue;
pub mod mutant;
mod ops;
mod pointers;
mod program_state;
mod programs;
mod slow;
mod staged;
mod staging;
mod state;
mod stream;
mod trace;

pub use ops::{CommandQueue, PendingRead};
pub(crate) use staging::{arenas, NoArena, Staging};
pub use state::{Queues, EVENT_CYCLES_KEPT};
pub use trace::Trace;
