//! The `device_spec` fuzz target: what it checks is `checks::device_spec` (`fuzz/checks.rs`,
//! which `cargo xtask test` also runs over the corpus on stable).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::device_spec(data));
