//! `cargo xtask demo`: builds the firmware, then runs `cqlab demo` (release
//! build) on the embedded simulator.

use crate::{cargo, firmware, run};
use anyhow::Result;
use std::path::Path;

pub fn run_demo(root: &Path) -> Result<()> {
    firmware::build(root)?;
    let dir = firmware::output_dir(root);
    run(cargo().env("CQLAB_FIRMWARE_DIR", dir).args(["run", "--quiet", "--release", "-p", "cqlab", "--", "demo"]))
}
