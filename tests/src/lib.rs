//! Helpers shared by the end-to-end tests.
//!
//! Every end-to-end test runs on a Wormhole and on a Blackhole ([`CHIPS`],
//! [`on_both_chips!`]). Most run on small harvested chips: the real chip,
//! its register interface and coordinates, with most Tensix lines fused
//! off, so a test simulates tens of tiles instead of a hundred and more.
//! A few run the full boards.

use cqlab_abi::soc::{Board, Harvesting};
use std::path::PathBuf;

/// A chip an end-to-end test runs on: a board and its harvesting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestChip {
    pub board: Board,
    /// `--harvest` text; `None`: the board's usual harvesting.
    pub harvest: Option<&'static str>,
}

impl TestChip {
    /// The board with its usual harvesting (the full chip of a card).
    pub const fn full(board: Board) -> Self {
        Self { board, harvest: None }
    }

    pub fn harvesting(&self) -> Harvesting {
        self.board.harvesting(self.harvest).expect("a valid harvesting")
    }

    /// Sets the configuration's board and harvesting to this chip's.
    pub fn apply(&self, cfg: &mut cqlab_driver::DeviceConfig) {
        cfg.board = Some(self.board);
        cfg.harvesting = Some(self.harvesting());
    }

    /// The simulator configuration of this chip with `seed`.
    pub fn sim(&self, seed: u64) -> cqlab_sim::config::SimConfig {
        cqlab_sim::config::SimConfig {
            seed,
            harvesting: self.harvesting(),
            ..cqlab_sim::config::SimConfig::for_board(self.board)
        }
    }

    /// A short name for messages and test directories.
    pub fn name(&self) -> &'static str {
        match self.board.arch() {
            cqlab_abi::arch::Arch::Wormhole => "wormhole",
            cqlab_abi::arch::Arch::Blackhole => "blackhole",
        }
    }
}

/// A Wormhole n150 with NOC0 Tensix rows 8..11 left (8x4 Tensix: one row
/// of command-queue cores, an 8x3 compute grid).
pub const WORMHOLE: TestChip = TestChip { board: Board::WormholeN150, harvest: Some("rows=1,2,3,4,5,7") };
/// A Blackhole p150a with NOC0 Tensix columns 1..4 left (4x10 Tensix: one
/// column of command-queue cores, a 3x10 compute grid).
pub const BLACKHOLE: TestChip =
    TestChip { board: Board::BlackholeP150a, harvest: Some("cols=5,6,7,10,11,12,13,14,15,16") };
/// The chips every end-to-end test runs on.
pub const CHIPS: [TestChip; 2] = [WORMHOLE, BLACKHOLE];

/// A test on each chip of [`CHIPS`]: `on_both_chips! { fn name(chip) { .. } }`
/// makes tests `name::wormhole` and `name::blackhole`, `chip` a `&TestChip`.
#[macro_export]
macro_rules! on_both_chips {
    ($(#[$meta:meta])* fn $name:ident($chip:ident) $body:block $($rest:tt)*) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn run($chip: &$crate::TestChip) $body
            #[test]
            fn wormhole() {
                run(&$crate::WORMHOLE)
            }
            #[test]
            fn blackhole() {
                run(&$crate::BLACKHOLE)
            }
        }
        $crate::on_both_chips! { $($rest)* }
    };
    () => {};
}

/// The target directory of this workspace (honouring `CARGO_TARGET_DIR`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// cqlab's libttsim library of `arch`, as `cargo xtask libttsim` lays it
/// out (`target/libttsim/<arch>/`), or a panic telling how to build it.
pub fn libttsim_library(arch: cqlab_abi::arch::Arch) -> PathBuf {
    let path = target_dir().join("libttsim").join(arch.short_name()).join(cqlab_ttsim::library_file(arch));
    assert!(
        path.is_file(),
        "libttsim library {} not found: run `cargo xtask libttsim` (or `cargo xtask test`)",
        path.display()
    );
    path
}

/// The libttsim backend on cqlab's library of `chip`'s architecture,
/// simulating `chip` with `seed`. A library holds one simulator per
/// process: when another test of this process has it open (`cargo test`
/// runs tests as threads), this waits its turn.
pub fn open_ttsim(chip: &TestChip, seed: u64, cfg: &cqlab_driver::DeviceConfig) -> cqlab_driver::ttsim::TtSim {
    use cqlab_driver::error::{DriverError, LibraryProblem};
    let lib = libttsim_library(chip.board.arch());
    let seed = seed.to_string();
    loop {
        match cqlab_driver::ttsim::TtSim::open_with(&lib, cfg, &[("CQLAB_TTSIM_SEED", &seed)]) {
            Ok(b) => return b,
            Err(DriverError::Library { problem: LibraryProblem::InUse, .. }) => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => panic!("opening ttsim:{} for {} (seed {seed}): {e}", lib.display(), chip.name()),
        }
    }
}

/// Target triple of the device firmware.
pub const FIRMWARE_TARGET: &str = "riscv32im-unknown-none-elf";

/// The firmware root `cargo xtask firmware` builds (one directory per
/// chip under it): `$CQLAB_FIRMWARE_DIR` if set, else
/// `target/riscv32im-unknown-none-elf/firmware` of this workspace
/// (honouring `CARGO_TARGET_DIR`).
pub fn firmware_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CQLAB_FIRMWARE_DIR") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join(FIRMWARE_TARGET).join("firmware")
}

/// A fresh firmware root at `root` holding a copy of `chip`'s images (to
/// change one of them); returns `chip`'s directory in it.
pub fn copy_firmware(chip: &TestChip, root: &std::path::Path) -> PathBuf {
    let arch = chip.board.arch();
    let dir = cqlab_driver::config::chip_dir(root, arch);
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(cqlab_driver::config::chip_dir(&firmware_dir(), arch)).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
    }
    dir
}

/// Path of chip `chip`'s firmware ELF `name`, or a panic telling how to build it.
pub fn firmware_elf(chip: &TestChip, name: &str) -> PathBuf {
    let path = cqlab_driver::config::chip_dir(&firmware_dir(), chip.board.arch()).join(name);
    assert!(
        path.is_file(),
        "firmware ELF {} not found: run `cargo xtask firmware` (or `cargo xtask test`)",
        path.display()
    );
    path
}

/// The configuration of `chip` with this workspace's firmware.
pub fn config(chip: &TestChip) -> cqlab_driver::DeviceConfig {
    let mut cfg = cqlab_driver::DeviceConfig { firmware_dir: firmware_dir(), ..Default::default() };
    chip.apply(&mut cfg);
    cfg
}

/// A booted embedded `chip` with `seed`, the configuration adjusted by `tweak`.
pub fn booted(chip: &TestChip, seed: u64, tweak: impl FnOnce(&mut cqlab_driver::DeviceConfig)) -> cqlab_driver::Device {
    booted_with_faults(chip, seed, cqlab_sim::config::Faults::default(), tweak)
}

/// [`booted`] on a simulator with `faults`.
pub fn booted_with_faults(
    chip: &TestChip,
    seed: u64,
    faults: cqlab_sim::config::Faults,
    tweak: impl FnOnce(&mut cqlab_driver::DeviceConfig),
) -> cqlab_driver::Device {
    let mut cfg = config(chip);
    tweak(&mut cfg);
    let sim = cqlab_sim::config::SimConfig { faults, ..chip.sim(seed) };
    let mut dev = cqlab_driver::Device::embedded(sim, cfg).expect("simulator starts");
    dev.boot().unwrap_or_else(|e| panic!("boot failed on {} (seed {seed}): {e}", chip.name()));
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
    /// cqlab's libttsim library of the chip's architecture
    /// ([`libttsim_library`]), reached through the `ttsim:` backend
    /// (deterministic: the seed goes to the library).
    TtSim,
}

/// A `cqlab sim serve` process on a temporary directory; killed and removed on drop.
pub struct DaemonProcess {
    child: std::process::Child,
    pub dir: PathBuf,
}

impl DaemonProcess {
    /// Starts `cqlab sim serve` (the binary `cqlab`) simulating `chip`, with `seed`.
    pub fn start(cqlab: &str, tag: &str, seed: u64, chip: &TestChip) -> DaemonProcess {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cqlab-daemon-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let child = std::process::Command::new(cqlab)
            .args(["sim", "serve", "--quiet", "--sysmem-mib", "16", "--chip", chip.board.name()])
            .args(["--harvest", &chip.harvesting().to_string(), "--seed", &seed.to_string(), "--dev"])
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
    /// Starts `chip` on fresh files under a temporary directory named after `tag`.
    pub fn start(tag: &str, seed: u64, chip: &TestChip) -> SimThread {
        Self::start_with_sysmem(tag, seed, chip, 16 << 20)
    }

    /// [`Self::start`] with `sysmem_size` bytes of host memory (a sparse file: what is never
    /// written takes no space), at whose top the simulated tt-kmd pins.
    pub fn start_with_sysmem(tag: &str, seed: u64, chip: &TestChip, sysmem_size: usize) -> SimThread {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cqlab-ttkmd-{tag}-{}-{n}", std::process::id()));
        let sim = cqlab_sim::config::SimConfig { sysmem_size, ..chip.sim(seed) };
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

/// A booted `chip` on `kind` with `seed`, the configuration adjusted by `tweak`.
pub fn boot_on(kind: Kind, chip: &TestChip, seed: u64, tweak: impl FnOnce(&mut cqlab_driver::DeviceConfig)) -> Booted {
    match kind {
        Kind::Embedded => Booted { dev: booted(chip, seed, tweak), sim: None, daemon: None },
        Kind::Daemon { cqlab } => {
            let mut cfg = config(chip);
            tweak(&mut cfg);
            let d = DaemonProcess::start(cqlab, "e2e", seed, chip);
            let spec = format!("sim:{}", d.dir.display());
            let mut dev = cqlab_driver::Device::open(&spec, cfg).unwrap_or_else(|e| panic!("opening {spec}: {e}"));
            dev.boot().unwrap_or_else(|e| panic!("boot failed on {spec} (seed {seed}): {e}"));
            Booted { dev, sim: None, daemon: Some(d) }
        }
        Kind::TtKmdSim => {
            let mut cfg = config(chip);
            tweak(&mut cfg);
            let sim = SimThread::start("e2e", seed, chip);
            let spec = format!("ttkmd-sim:{}", sim.dir.display());
            let mut dev = cqlab_driver::Device::open(&spec, cfg).unwrap_or_else(|e| panic!("opening {spec}: {e}"));
            dev.boot().unwrap_or_else(|e| panic!("boot failed on {spec} (seed {seed}): {e}"));
            Booted { dev, sim: Some(sim), daemon: None }
        }
        Kind::TtSim => {
            let mut cfg = config(chip);
            tweak(&mut cfg);
            let backend = open_ttsim(chip, seed, &cfg);
            let name = cqlab_driver::backend::Backend::name(&backend);
            let mut dev = cqlab_driver::Device::with_backend(Box::new(backend), cfg)
                .unwrap_or_else(|e| panic!("opening {name}: {e}"));
            dev.boot().unwrap_or_else(|e| panic!("boot failed on {name} (seed {seed}): {e}"));
            Booted { dev, sim: None, daemon: None }
        }
    }
}

/// The reference host program of the determinism tests: a DRAM write on
/// CQ0, a launch over the whole grid, CQ1 waiting on CQ0's event and
/// reading the buffer back (checked), both queues finished.
pub fn reference_program(dev: &mut cqlab_driver::Device, what: &str) {
    let buf = dev.alloc_dram(8192, 1024).unwrap();
    let grid = dev.chip().grid();
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &[3u8; 8192]).unwrap();
    cq.launch(grid, &[9]).unwrap();
    let ev = cq.record_event().unwrap();
    let mut cq1 = dev.cq(1).unwrap();
    cq1.wait_for_event(ev).unwrap();
    assert_eq!(cq1.read_buffer(&buf, 0, 8192).unwrap(), vec![3u8; 8192], "{what}");
    cq1.finish().unwrap();
}
