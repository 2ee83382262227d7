//! `cargo xtask demo`: until the simulator and driver exist, prints the boot
//! plan for the firmware and says plainly what is not built yet.

use crate::firmware;
use anyhow::Result;
use cqlab_abi::memory_map::{CODE, DATA, STACK_TOP};
use cqlab_abi::{noc, ABI_VERSION};
use std::path::Path;

pub fn run(root: &Path) -> Result<()> {
    let elfs = firmware::build(root)?;
    println!("cqlab boot plan (ABI version {ABI_VERSION})");
    println!("{:<10} {:>8} {:>8} {:>8} {:>11} {:>11}  cores", "firmware", "code", "data", "bss", "load", "entry");
    for path in &elfs {
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let s = firmware::sizes(path)?;
        let cores = match name.as_str() {
            "prefetch" => format!("{} (CQ0), {} (CQ1)", noc::prefetcher(0), noc::prefetcher(1)),
            "dispatch" => format!("{} (CQ0), {} (CQ1)", noc::dispatcher(0), noc::dispatcher(1)),
            _ => format!("workers {}..{}", noc::worker(0, 0), noc::worker(7, 7)),
        };
        println!(
            "{:<10} {:>8} {:>8} {:>8} {:>#11x} {:>#11x}  {}",
            name, s.code, s.data, s.bss, CODE.base, s.entry, cores
        );
    }
    println!("data at {:#x}, stack top {:#x}", DATA.base, STACK_TOP);
    println!();
    println!("not built yet: the device simulator (issue 3) and host driver (issue 5),");
    println!("so nothing above has been booted. The demo runs end to end once they land.");
    Ok(())
}
