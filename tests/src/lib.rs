//! Helpers shared by the end-to-end tests.

use std::path::PathBuf;

/// Target triple of the device firmware.
pub const FIRMWARE_TARGET: &str = "riscv32im-unknown-none-elf";

/// Directory holding the firmware ELFs built by `cargo xtask firmware`:
/// `$CQLAB_FIRMWARE_DIR` if set, else `target/riscv32im-unknown-none-elf/firmware`
/// of this workspace (honouring `CARGO_TARGET_DIR`).
pub fn firmware_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CQLAB_FIRMWARE_DIR") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join(FIRMWARE_TARGET).join("firmware")
}

/// Path of firmware ELF `name`, or a panic telling how to build it.
pub fn firmware_elf(name: &str) -> PathBuf {
    let path = firmware_dir().join(name);
    assert!(
        path.is_file(),
        "firmware ELF {} not found: run `cargo xtask firmware` (or `cargo xtask test`)",
        path.display()
    );
    path
}

/// A booted embedded device with `seed`, the configuration adjusted by `tweak`.
pub fn booted(seed: u64, tweak: impl FnOnce(&mut cqlab_driver::DeviceConfig)) -> cqlab_driver::Device {
    let mut cfg = cqlab_driver::DeviceConfig { firmware_dir: firmware_dir(), ..Default::default() };
    tweak(&mut cfg);
    let sim = cqlab_sim::config::SimConfig { seed, ..Default::default() };
    let mut dev = cqlab_driver::Device::embedded(sim, cfg).expect("simulator starts");
    dev.boot().unwrap_or_else(|e| panic!("boot failed (seed {seed}): {e}"));
    dev
}
