//! Workloads built from the driver's primitives, shared by the CLI and tests.

pub mod matmul;
