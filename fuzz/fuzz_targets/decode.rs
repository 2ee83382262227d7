//! Feeds arbitrary bytes to every decoder entry point: none may panic.
#![no_main]

use cqlab_abi::decode::{decode_dispatch_partial, DispatchStream, PrefetchHeader, PrefetchStream};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Each decoded header also prints: its fields and text form (what
    // `cqlab decode` lists) may not panic either.
    for cmd in PrefetchStream::new(data).flatten() {
        std::hint::black_box(cmd.1.header.to_string());
        if let PrefetchHeader::RelayInline { .. } = cmd.1.header {
            for (_, d) in DispatchStream::new(cmd.1.payload).flatten() {
                std::hint::black_box(d.header.to_string());
            }
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
