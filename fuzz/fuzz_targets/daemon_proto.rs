//! The `daemon_proto` fuzz target: what it checks is `checks::daemon_proto` (`fuzz/checks.rs`,
//! which `cargo xtask test` also runs over the corpus on stable).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::daemon_proto(data));
