//! Feeds arbitrary strings to the device-spec parser (`embedded:...`,
//! `sim:PATH?wait=SECS`, `/dev/...`): it parses or refuses, never panics.
#![no_main]

use cqlab_driver::spec::DeviceSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = DeviceSpec::parse(s);
    }
});
