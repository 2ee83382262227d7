//! Feeds arbitrary bytes to the trace-ring reader as the contents of a
//! core's trace ring (header and records, as a corrupted or hostile device
//! could leave them): it returns records or an error, never panics, and
//! never returns more than the ring holds.
//! (The check itself: `fuzz/checks.rs`, shared with the corpus replay.)
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::trace_ring(data));
