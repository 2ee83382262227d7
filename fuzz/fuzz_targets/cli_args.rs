//! Feeds arbitrary argument vectors to the CLI's parser and checks
//! (`cqlab::check`: parse, validate, run nothing): they accept, print help,
//! or refuse with the usage status 2; they never panic. The input is the
//! argument vector with arguments separated by NUL bytes (any other bytes,
//! UTF-8 or not, are the arguments' own).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

fuzz_target!(|data: &[u8]| {
    let args = data.split(|&b| b == 0).map(|a| std::ffi::OsStr::from_bytes(a).to_owned());
    let argv: Vec<OsString> = std::iter::once(OsString::from("cqlab")).chain(args).collect();
    if let cqlab::Verdict::Refused { status, message } = cqlab::check(argv.clone()) {
        assert_eq!(status, 2, "{argv:?} refused with {status}: {message}");
        assert!(!message.trim().is_empty(), "{argv:?} refused without a reason");
    }
});
