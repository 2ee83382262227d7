//! Feeds arbitrary bytes to the daemon's wire protocol: frames, requests,
//! replies and reply bodies. Nothing may panic, and whatever decodes must
//! encode back to the same value.
//! (The check itself: `fuzz/checks.rs`, shared with the corpus replay.)
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::daemon_proto(data));
