pub fn json(_a: cqlab_abi::arch::Arch) -> String { String::new() }
