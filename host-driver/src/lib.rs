//! `cqlab-driver`: what users program against. A [`Device`] over a
//! [`backend::Backend`] (the embedded simulator, a simulator daemon, or tt-kmd hardware), its
//! command queues, buffers, events and traces, and hang dumps when a wait
//! gives up.

pub mod backend;
pub mod buffer;
pub mod command_queue;
pub mod config;
#[cfg(feature = "daemon")]
pub mod daemon_backend;
pub mod device;
pub mod dump;
pub mod elf;
pub mod error;
pub mod events;
pub mod hang_dump;
pub mod kernel;
pub mod program;
mod program_dispatch;
mod program_state;
#[cfg(feature = "sim")]
pub mod sim_backend;
pub mod slow_dispatch;
mod staging;
pub mod sysmem;
pub mod trace_reader;
#[cfg(feature = "ttkmd")]
pub mod ttkmd;
pub mod workloads;

pub use buffer::{Buffer, Placement};
pub use command_queue::{CommandQueue, CoreRange, PendingRead, Trace};
pub use config::{DeviceConfig, HostBug};
pub use cqlab_abi::encode::PackedData;
pub use device::Device;
pub use error::{DriverError, Result};
pub use events::Event;
pub use kernel::KernelImage;
pub use program::{KernelHandle, Program};
