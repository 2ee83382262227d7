//! The `trace_ring` fuzz target: what it checks is `checks::trace_ring` (`fuzz/checks.rs`,
//! which `cargo xtask test` also runs over the corpus on stable).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::trace_ring(data));
