//! Feeds arbitrary strings to the device-spec parser (`embedded:...`,
//! `sim:PATH?wait=SECS`, `/dev/...`): it parses or refuses, never panics.
//! (The check itself: `fuzz/checks.rs`, shared with the corpus replay.)
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::device_spec(data));
