//! Feeds arbitrary strings to the device-spec parser (`embedded:...`,
//! `sim:PATH?wait=SECS`, `/dev/...`): it parses or refuses, never panics.
#![no_main]

use cqlab_driver::backend::spec::Spec;
use cqlab_driver::daemon_backend::DaemonBackend;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(Spec::Daemon { rest }) = Spec::parse(s) {
            let _ = DaemonBackend::parse_spec(&rest);
        }
    }
});
