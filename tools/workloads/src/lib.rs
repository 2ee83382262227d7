//! Workloads built from the driver's primitives, shared by the CLI and tests.
//!
//! `matmul` is the single-core tile-order experiment; `kinds` are the named
//! `cqlab run` workloads, run by `runner` with metrics from `analysis`
//! (command start and end records paired by `command_spans`),
//! trace rings drained by `collect`, queue occupancy over time by `occupancy`;
//! `program_stream` runs random program streams checked store by store.

pub mod analysis;
pub mod collect;
pub mod command_spans;
pub mod ctx;
pub mod kinds;
pub mod matmul;
pub mod occupancy;
pub mod program_stream;
pub mod runner;
pub mod stats;
