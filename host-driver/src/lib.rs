//! `cqlab-driver`: what users program against. A [`Device`] over a
//! [`backend::Backend`] (the embedded simulator, a simulator daemon, or tt-kmd hardware), its
//! command queues, buffers, events and traces, and hang dumps when a wait
//! gives up.
//!
//! Lower modules never import higher ones: `dump` (a hang dump's data) and
//! `geometry` (the chip: board, harvesting, placement) and `notes` import
//! nothing of the driver; `error` only those; `tlb` (the window manager), `arc`,
//! `backend`, `config`, `trace_reader`, `hang_dump` and `wait` the modules
//! below them; `queue` those; `device` everything. `cargo xtask cycles`
//! keeps it so.

pub mod arc;
pub mod backend;
pub mod buffer;
pub mod config;
#[cfg(feature = "daemon")]
pub mod daemon_backend;
pub mod device;
pub mod dump;
pub mod elf;
pub mod error;
pub mod events;
pub mod geometry;
pub mod hang_dump;
#[cfg(any(feature = "sim", feature = "daemon", feature = "ttsim"))]
pub mod host_clock;
pub mod kernel;
pub mod notes;
pub mod process_state;
pub mod program;
pub mod queue;
#[cfg(feature = "sim")]
pub mod sim_backend;
pub mod sysmem;
pub mod tlb;
pub mod trace_reader;
#[cfg(feature = "ttkmd")]
pub mod ttkmd;
#[cfg(feature = "ttsim")]
pub mod ttsim;
pub mod wait;
pub mod wait_progress;

pub use buffer::{Buffer, Placement};
pub use config::{DeviceConfig, HostBug, HostPct, HostSchedule};
pub use cqlab_abi::encode::PackedData;
pub use device::Device;
pub use error::{DriverError, Result};
pub use events::Event;
pub use geometry::{CoreId, CoreRange, Role, Topology};
pub use kernel::KernelImage;
pub use program::{KernelHandle, Program};
pub use queue::{CommandQueue, PendingRead, Trace};
