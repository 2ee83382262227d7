//! Feeds arbitrary bytes to every decoder entry point: none may panic.
//! (The check itself: `fuzz/checks.rs`, shared with the corpus replay.)
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::decode(data));
