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
    booted_with_faults(seed, cqlab_sim::config::Faults::default(), tweak)
}

/// [`booted`] on a simulator with `faults`.
pub fn booted_with_faults(
    seed: u64,
    faults: cqlab_sim::config::Faults,
    tweak: impl FnOnce(&mut cqlab_driver::DeviceConfig),
) -> cqlab_driver::Device {
    let mut cfg = cqlab_driver::DeviceConfig { firmware_dir: firmware_dir(), ..Default::default() };
    tweak(&mut cfg);
    let sim = cqlab_sim::config::SimConfig { seed, faults, ..Default::default() };
    let mut dev = cqlab_driver::Device::embedded(sim, cfg).expect("simulator starts");
    dev.boot().unwrap_or_else(|e| panic!("boot failed (seed {seed}): {e}"));
    dev
}

pub mod e2e;

/// Which backend an end-to-end test runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The embedded simulator (deterministic).
    Embedded,
    /// The tt-kmd backend against the simulator: a `cqlab_sim::shared::Runner` on its own
    /// thread, reached through `ttkmd-sim:DIR` (shared mappings; not deterministic).
    TtKmdSim,
    /// A `cqlab sim serve` daemon process (the `cqlab` binary at this path), reached through
    /// `sim:DIR`.
    Daemon { cqlab: &'static str },
}

/// A `cqlab sim serve` process on a temporary directory; killed and removed on drop.
pub struct DaemonProcess {
    child: std::process::Child,
    pub dir: PathBuf,
}

impl DaemonProcess {
    /// Starts `cqlab sim serve` (the binary `cqlab`) shaped like `cfg`, with `seed`.
    pub fn start(cqlab: &str, tag: &str, seed: u64, cfg: &cqlab_driver::DeviceConfig) -> DaemonProcess {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cqlab-daemon-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let grid = format!("{}x{}", cfg.worker_cols, cfg.worker_rows);
        let child = std::process::Command::new(cqlab)
            .args(["sim", "serve", "--quiet", "--sysmem-mib", "16", "--grid", &grid, "--cqs"])
            .arg(cfg.num_cqs.to_string())
            .args(["--dram-banks", &cfg.dram_banks.to_string(), "--seed", &seed.to_string(), "--dev"])
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawning cqlab sim serve");
        let d = DaemonProcess { child, dir };
        let start = std::time::Instant::now();
        while !d.dir.join("sock").exists() {
            assert!(start.elapsed() < std::time::Duration::from_secs(20), "timeout waiting for the daemon socket");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        d
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A shared-memory simulator running on a thread of this process; stopped and its files
/// removed on drop.
pub struct SimThread {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    pub dir: PathBuf,
}

impl SimThread {
    /// Starts a chip shaped like `cfg` (grid, CQs, DRAM banks) on fresh files under a
    /// temporary directory named after `tag`.
    pub fn start(tag: &str, seed: u64, cfg: &cqlab_driver::DeviceConfig) -> SimThread {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cqlab-ttkmd-{tag}-{}-{n}", std::process::id()));
        let sim = cqlab_sim::config::SimConfig {
            seed,
            worker_cols: cfg.worker_cols,
            worker_rows: cfg.worker_rows,
            num_cqs: cfg.num_cqs,
            dram_banks: cfg.dram_banks,
            sysmem_size: 16 << 20,
            ..Default::default()
        };
        let mut runner = cqlab_sim::shared::Runner::create(&dir, sim).expect("creating the shared device");
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("ttkmd-sim".into())
            .spawn(move || {
                runner.run(&flag);
            })
            .expect("spawning the simulator thread");
        SimThread { stop, handle: Some(handle), dir }
    }
}

impl Drop for SimThread {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A booted device on some backend (derefs to the [`cqlab_driver::Device`]); the simulator
/// behind it, if any, outlives it.
pub struct Booted {
    pub dev: cqlab_driver::Device,
    pub sim: Option<SimThread>,
    pub daemon: Option<DaemonProcess>,
}

impl std::ops::Deref for Booted {
    type Target = cqlab_driver::Device;
    fn deref(&self) -> &cqlab_driver::Device {
        &self.dev
    }
}

impl std::ops::DerefMut for Booted {
    fn deref_mut(&mut self) -> &mut cqlab_driver::Device {
        &mut self.dev
    }
}

/// A booted device on `kind` with `seed`, the configuration adjusted by `tweak`.
pub fn boot_on(kind: Kind, seed: u64, tweak: impl FnOnce(&mut cqlab_driver::DeviceConfig)) -> Booted {
    match kind {
        Kind::Embedded => Booted { dev: booted(seed, tweak), sim: None, daemon: None },
        Kind::Daemon { cqlab } => {
            let mut cfg = cqlab_driver::DeviceConfig { firmware_dir: firmware_dir(), ..Default::default() };
            tweak(&mut cfg);
            let d = DaemonProcess::start(cqlab, "e2e", seed, &cfg);
            let spec = format!("sim:{}", d.dir.display());
            let mut dev = cqlab_driver::Device::open(&spec, cfg).unwrap_or_else(|e| panic!("opening {spec}: {e}"));
            dev.boot().unwrap_or_else(|e| panic!("boot failed on {spec} (seed {seed}): {e}"));
            Booted { dev, sim: None, daemon: Some(d) }
        }
        Kind::TtKmdSim => {
            let mut cfg = cqlab_driver::DeviceConfig { firmware_dir: firmware_dir(), ..Default::default() };
            tweak(&mut cfg);
            let sim = SimThread::start("e2e", seed, &cfg);
            let spec = format!("ttkmd-sim:{}", sim.dir.display());
            let mut dev = cqlab_driver::Device::open(&spec, cfg).unwrap_or_else(|e| panic!("opening {spec}: {e}"));
            dev.boot().unwrap_or_else(|e| panic!("boot failed on {spec} (seed {seed}): {e}"));
            Booted { dev, sim: Some(sim), daemon: None }
        }
    }
}
