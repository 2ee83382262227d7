//! The simulator daemon (`cqlab sim serve`): the chip as a long-lived
//! process that host processes attach to with the device spec `sim:PATH`.
//! Built with the `daemon` feature.
//!
//! - [`proto`]: the wire protocol, spoken by the server and the driver's
//!   client (`cqlab_driver::daemon_backend`);
//! - [`files`]: the device directory, its files and their permissions, and
//!   the shared sysmem mapping;
//! - [`server`]: the server, which enforces who may do what;
//! - [`log`]: its stderr lines, which never wait for a reader.

pub mod files;
pub mod log;
pub mod proto;
pub mod server;
