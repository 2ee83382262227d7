//! Feeds arbitrary bytes to every decoder entry point: none may panic.
#![no_main]

use cqlab_abi::decode::{decode_dispatch_partial, DispatchStream, PrefetchHeader, PrefetchStream};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for cmd in PrefetchStream::new(data).flatten() {
        if let PrefetchHeader::RelayInline { .. } = cmd.1.header {
            DispatchStream::new(cmd.1.payload).for_each(drop);
        }
    }
    DispatchStream::new(data).for_each(drop);
    let mut at = 0;
    while let Ok((_, next)) = decode_dispatch_partial(data, at) {
        if next <= at {
            break;
        }
        at = next;
    }
});
