//! Feeds arbitrary argument vectors to the CLI's parser and checks
//! (`cqlab::check`: parse, validate, run nothing): they accept, print help,
//! or refuse with the usage status 2; they never panic. The input is the
//! argument vector with arguments separated by NUL bytes (any other bytes,
//! UTF-8 or not, are the arguments' own).
//! (The check itself: `fuzz/checks.rs`, shared with the corpus replay.)
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::cli_args(data));
