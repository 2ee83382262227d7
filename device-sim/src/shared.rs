//! The chip as shared memory: the device behind the tt-kmd simulator mode.
//!
//! A device directory holds the chip's memories as files that the simulator process and host
//! processes map shared, so the host's stores through a TLB window land straight in simulated
//! L1, as on hardware:
//!
//! | file | contents | stride |
//! |---|---|---|
//! | `ctl` | one page: [`Ctl`] words (shape, clock, heartbeat, reset handshake) | — |
//! | `l1` | every core's L1, in [`Chip::cores`] order | [`WINDOW_SIZE`] per core |
//! | `regs` | every core's register block, at [`REGS_OFFSET`] in its stride | [`WINDOW_SIZE`] per core |
//! | `dram` | every DRAM bank | `dram_bank_size` per bank |
//! | `sysmem` | host sysmem, reached at the PCIe endpoint | — |
//! | `lock` | flock: one host process owns the device | — |
//!
//! [`Runner`] runs the chip free (nobody polls it: host timing is whatever the host does) and
//! between slices of [`SYNC_CYCLES`] it mirrors the host-writable registers: SOFT_RESET
//! (host-owned: a release invalidates the core's decoded code first, since the host wrote it
//! behind the chip's back) and the semaphores (two writers, see [`Runner::sync_semaphores`]).
//! Idle fast-forward is off (a parked core would not see host stores). Not deterministic.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use cqlab_abi::mmio::{self, MMIO_BASE, MMIO_SIZE, SEMAPHORE_COUNT, SOFT_RESET};
use cqlab_abi::noc::{Coord, NocAddr};
use memmap2::{MmapOptions, MmapRaw};

use crate::chip::{Chip, Memories};
use crate::config::SimConfig;
use crate::dram::Dram;
use crate::memory::{Ram, Sysmem};
use crate::storage::SharedRegion;

/// The one TLB window size of the simulated chip, and the per-core stride of `l1` and `regs`.
pub const WINDOW_SIZE: u64 = cqlab_abi::memory_map::TLB_WINDOW_SIZE;
/// Where a core's register block sits inside its `regs` stride: a window at
/// `MMIO_BASE & !(WINDOW_SIZE - 1)` sees the registers at their own addresses.
pub const REGS_OFFSET: u64 = MMIO_BASE as u64 % WINDOW_SIZE;
/// Local address a register window is configured at.
pub const REGS_WINDOW_BASE: u64 = MMIO_BASE as u64 - REGS_OFFSET;
/// Device cycles between two register synchronisations.
pub const SYNC_CYCLES: u64 = 1000;
/// `ctl` word 0 (`b"CQLTTKM1"`).
pub const MAGIC: u64 = u64::from_le_bytes(*b"CQLTTKM1");

/// Word indices (u64) of the `ctl` page.
pub mod ctl {
    pub const MAGIC: usize = 0;
    /// Simulated device time in cycles (the runner writes it).
    pub const NOW: usize = 1;
    /// Runner loop iterations (the host tells a live simulator from a dead one).
    pub const HEARTBEAT: usize = 2;
    /// Reset requests (the host increments it).
    pub const RESET_REQUESTED: usize = 3;
    /// Reset requests done (the runner sets it to the request count it served).
    pub const RESET_DONE: usize = 4;
    pub const PID: usize = 5;
    pub const WORKER_COLS: usize = 6;
    pub const WORKER_ROWS: usize = 7;
    pub const NUM_CQS: usize = 8;
    pub const DRAM_BANKS: usize = 9;
    pub const L1_SIZE: usize = 10;
    pub const DRAM_BANK_SIZE: usize = 11;
    pub const SYSMEM_SIZE: usize = 12;
    pub const SEED: usize = 13;
    /// The runner stopped (set on a clean exit).
    pub const STOPPED: usize = 14;
    pub const WORDS: usize = 16;
}

/// Size of the `ctl` file.
pub const CTL_SIZE: usize = 4096;

/// The files of a device directory.
#[derive(Clone, Debug)]
pub struct Paths {
    pub dir: PathBuf,
}

impl Paths {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Paths { dir: dir.into() }
    }
    pub fn ctl(&self) -> PathBuf {
        self.dir.join("ctl")
    }
    pub fn l1(&self) -> PathBuf {
        self.dir.join("l1")
    }
    pub fn regs(&self) -> PathBuf {
        self.dir.join("regs")
    }
    pub fn dram(&self) -> PathBuf {
        self.dir.join("dram")
    }
    pub fn sysmem(&self) -> PathBuf {
        self.dir.join("sysmem")
    }
    pub fn lock(&self) -> PathBuf {
        self.dir.join("lock")
    }
}

/// The chip's shape, as `ctl` publishes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub worker_cols: u8,
    pub worker_rows: u8,
    pub num_cqs: u8,
    pub dram_banks: u32,
    pub l1_size: u32,
    pub dram_bank_size: u64,
    pub sysmem_size: u64,
}

impl Shape {
    pub fn of(cfg: &SimConfig) -> Self {
        Shape {
            worker_cols: cfg.worker_cols,
            worker_rows: cfg.worker_rows,
            num_cqs: cfg.num_cqs,
            dram_banks: cfg.dram_banks,
            l1_size: cfg.l1_size,
            dram_bank_size: cfg.dram_bank_size,
            sysmem_size: cfg.sysmem_size as u64,
        }
    }

    /// Every core, in [`Chip::cores`] order (workers row by row, then each CQ's prefetcher and
    /// dispatcher): index `i` owns stride `i` of `l1` and `regs`.
    pub fn cores(&self) -> Vec<Coord> {
        let mut v = Vec::new();
        for row in 0..self.worker_rows {
            for col in 0..self.worker_cols {
                v.push(cqlab_abi::noc::worker(col, row));
            }
        }
        for cq in 0..self.num_cqs {
            v.push(cqlab_abi::noc::prefetcher(cq));
            v.push(cqlab_abi::noc::dispatcher(cq));
        }
        v
    }

    pub fn core_index(&self, c: Coord) -> Option<usize> {
        self.cores().iter().position(|&x| x == c)
    }

    pub fn l1_file_size(&self) -> u64 {
        self.cores().len() as u64 * WINDOW_SIZE
    }
    pub fn dram_file_size(&self) -> u64 {
        self.dram_banks as u64 * self.dram_bank_size
    }
}

/// The `ctl` page, mapped; its words are atomics shared with other processes.
pub struct Ctl {
    map: MmapRaw,
}

impl Ctl {
    /// Maps the `ctl` file at `path` (it must be [`CTL_SIZE`] bytes).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        if file.metadata()?.len() != CTL_SIZE as u64 {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "ctl file of the wrong size"));
        }
        Ok(Ctl { map: MmapOptions::new().len(CTL_SIZE).map_raw(&file)? })
    }

    /// Word `i` (see [`ctl`]).
    pub fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < ctl::WORDS);
        // SAFETY: the page is mapped for the life of `self`, page aligned (so every u64 is
        // 8-aligned), and every access to these words, in every process, is atomic.
        unsafe { AtomicU64::from_ptr(self.map.as_mut_ptr().cast::<u64>().add(i)) }
    }

    pub fn load(&self, i: usize) -> u64 {
        self.word(i).load(Ordering::Acquire)
    }

    pub fn store(&self, i: usize, v: u64) {
        self.word(i).store(v, Ordering::Release)
    }

    /// The shape the runner published, if the page is a live device's.
    pub fn shape(&self) -> Option<Shape> {
        (self.load(ctl::MAGIC) == MAGIC).then(|| Shape {
            worker_cols: self.load(ctl::WORKER_COLS) as u8,
            worker_rows: self.load(ctl::WORKER_ROWS) as u8,
            num_cqs: self.load(ctl::NUM_CQS) as u8,
            dram_banks: self.load(ctl::DRAM_BANKS) as u32,
            l1_size: self.load(ctl::L1_SIZE) as u32,
            dram_bank_size: self.load(ctl::DRAM_BANK_SIZE),
            sysmem_size: self.load(ctl::SYSMEM_SIZE),
        })
    }
}

/// Creates (or truncates) a device file, private to this user whatever the umask. `cqlab sim
/// ttkmd` creates each file first with the daemon's `O_EXCL|O_NOFOLLOW` rules.
fn create(path: &Path, len: u64) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = OpenOptions::new().read(true).write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.set_len(len)?; // sparse, zeroed
    Ok(f)
}

fn map(file: &File, len: u64) -> std::io::Result<Arc<MmapRaw>> {
    Ok(Arc::new(MmapOptions::new().len(len as usize).map_raw(file)?))
}

/// The simulator side: a chip on the device directory's files, run free.
pub struct Runner {
    chip: Chip,
    ctl: Ctl,
    regs: Arc<MmapRaw>,
    cores: Vec<Coord>,
    /// SOFT_RESET as last applied, per core.
    in_reset: Vec<bool>,
    /// Semaphore values last published to `regs`, per core.
    published: Vec<[u32; SEMAPHORE_COUNT as usize]>,
    resets_done: u64,
}

impl Runner {
    /// Creates (or recreates, zeroed) the device files under `dir` and powers on a chip on
    /// them: every core in reset, memories zero.
    pub fn create(dir: &Path, mut cfg: SimConfig) -> Result<Self, String> {
        cfg.validate().map_err(|e| e.to_string())?;
        if cfg.dram_bank_size % WINDOW_SIZE != 0 || (cfg.l1_size as u64) > WINDOW_SIZE {
            return Err(format!(
                "the shared device needs DRAM banks that are multiples of {WINDOW_SIZE:#x} bytes and an L1 of at most \
                 that (found {:#x}, {:#x})",
                cfg.dram_bank_size, cfg.l1_size
            ));
        }
        // A parked core would never see the host's stores into its L1.
        cfg.fast_forward = false;
        let io = |what: &str, e: std::io::Error| format!("{what} under {}: {e}", dir.display());
        std::fs::create_dir_all(dir).map_err(|e| io("creating the device directory", e))?;
        let paths = Paths::new(dir);
        let shape = Shape::of(&cfg);
        let cores = shape.cores();
        let l1_file = create(&paths.l1(), shape.l1_file_size()).map_err(|e| io("creating l1", e))?;
        let regs_file = create(&paths.regs(), shape.l1_file_size()).map_err(|e| io("creating regs", e))?;
        let dram_file = create(&paths.dram(), shape.dram_file_size()).map_err(|e| io("creating dram", e))?;
        let sysmem_file = create(&paths.sysmem(), shape.sysmem_size).map_err(|e| io("creating sysmem", e))?;
        let l1_map = map(&l1_file, shape.l1_file_size()).map_err(|e| io("mapping l1", e))?;
        let regs = map(&regs_file, shape.l1_file_size()).map_err(|e| io("mapping regs", e))?;
        let dram_map = map(&dram_file, shape.dram_file_size()).map_err(|e| io("mapping dram", e))?;
        let sysmem_map = map(&sysmem_file, shape.sysmem_size).map_err(|e| io("mapping sysmem", e))?;
        let l1 = (0..cores.len())
            .map(|i| Ram::shared(0, SharedRegion::new(&l1_map, i * WINDOW_SIZE as usize, cfg.l1_size as usize)))
            .collect();
        let bank = cfg.dram_bank_size as usize;
        let dram = Dram::shared(
            cfg.dram_bank_size,
            (0..cfg.dram_banks as usize).map(|b| SharedRegion::new(&dram_map, b * bank, bank)).collect(),
        );
        let sysmem = Sysmem::Shared(SharedRegion::new(&sysmem_map, 0, shape.sysmem_size as usize));
        let chip = Chip::with_memories(cfg.clone(), sysmem, Some(Memories { l1, dram })).map_err(|e| e.to_string())?;
        create(&paths.ctl(), CTL_SIZE as u64).map_err(|e| io("creating ctl", e))?;
        let ctl = Ctl::open(&paths.ctl()).map_err(|e| io("mapping ctl", e))?;
        for (i, v) in [
            (ctl::PID, std::process::id() as u64),
            (ctl::WORKER_COLS, shape.worker_cols as u64),
            (ctl::WORKER_ROWS, shape.worker_rows as u64),
            (ctl::NUM_CQS, shape.num_cqs as u64),
            (ctl::DRAM_BANKS, shape.dram_banks as u64),
            (ctl::L1_SIZE, shape.l1_size as u64),
            (ctl::DRAM_BANK_SIZE, shape.dram_bank_size),
            (ctl::SYSMEM_SIZE, shape.sysmem_size),
            (ctl::SEED, cfg.seed),
        ] {
            ctl.store(i, v);
        }
        let n = cores.len();
        let published = vec![[0; SEMAPHORE_COUNT as usize]; n];
        let r = Runner { chip, ctl, regs, cores, in_reset: vec![true; n], published, resets_done: 0 };
        for i in 0..n {
            r.reg(i, SOFT_RESET).store(1, Ordering::Release);
            // Read-only registers the host may look at: the core id.
            r.reg(i, mmio::CORE_ID).store(r.cores[i].packed(), Ordering::Release);
        }
        // Published last: a host that sees the magic sees a complete device.
        r.ctl.store(ctl::MAGIC, MAGIC);
        Ok(r)
    }

    pub fn chip(&self) -> &Chip {
        &self.chip
    }

    /// Register `off` of core `i` in `regs`.
    fn reg(&self, i: usize, off: u32) -> &AtomicU32 {
        assert!(off < MMIO_SIZE && off % 4 == 0);
        let at = i * WINDOW_SIZE as usize + REGS_OFFSET as usize + off as usize;
        // SAFETY: `at` lies inside the live `regs` mapping (one stride per core, the block
        // inside it) and is 4-aligned; every access from this process is atomic, the host's
        // are aligned 32-bit volatile accesses (single instructions).
        unsafe { AtomicU32::from_ptr(self.regs.as_mut_ptr().add(at).cast::<u32>()) }
    }

    /// Runs until `stop` is set; returns the device time then.
    pub fn run(&mut self, stop: &AtomicBool) -> u64 {
        while !stop.load(Ordering::Relaxed) {
            self.step();
        }
        self.ctl.store(ctl::STOPPED, 1);
        self.chip.now()
    }

    /// One slice: host register writes in, a reset if asked, [`SYNC_CYCLES`] of device time,
    /// semaphores and clock out.
    pub fn step(&mut self) {
        self.sync_reset_lines();
        let asked = self.ctl.load(ctl::RESET_REQUESTED);
        if asked != self.resets_done {
            self.quiesce();
            self.resets_done = asked;
            self.ctl.store(ctl::RESET_DONE, asked);
        }
        self.sync_semaphores();
        let now = self.chip.advance(SYNC_CYCLES);
        self.sync_semaphores();
        self.ctl.store(ctl::NOW, now);
        self.ctl.word(ctl::HEARTBEAT).fetch_add(1, Ordering::Release);
    }

    /// Applies SOFT_RESET words the host changed.
    fn sync_reset_lines(&mut self) {
        for i in 0..self.cores.len() {
            let held = self.reg(i, SOFT_RESET).load(Ordering::Acquire) != 0;
            if held != self.in_reset[i] {
                let c = self.cores[i];
                if !held {
                    // The host wrote this core's code through its own mapping.
                    self.chip.invalidate_code(c).expect("a core of this chip");
                }
                self.chip.set_reset(c, held).expect("every core has SOFT_RESET");
                self.in_reset[i] = held;
            }
        }
    }

    /// Semaphores have two writers, the host (through `regs`) and the device (NOC atomics and
    /// firmware, in the chip). A `regs` word that differs from what was last published there
    /// was written by the host: it goes into the chip. Then the chip's value is published with
    /// a compare-and-swap from the value just seen, so a host store racing with the publication
    /// is not overwritten: it is picked up at the next synchronisation.
    fn sync_semaphores(&mut self) {
        for i in 0..self.cores.len() {
            let c = self.cores[i];
            for s in 0..SEMAPHORE_COUNT {
                let off = mmio::semaphore(s);
                let at = NocAddr::unicast(c, (MMIO_BASE + off) as u64);
                let seen = self.reg(i, off).load(Ordering::Acquire);
                if seen != self.published[i][s as usize] {
                    self.chip.write_u32(at, seen).expect("the host may write semaphores");
                    self.published[i][s as usize] = seen;
                }
                let now = self.chip.core(c).expect("a core of this chip").mmio.semaphores[s as usize];
                if now != seen
                    && self.reg(i, off).compare_exchange(seen, now, Ordering::AcqRel, Ordering::Acquire).is_ok()
                {
                    self.published[i][s as usize] = now;
                }
            }
        }
    }

    /// What a reset does to the simulated chip: every core held in reset, posted writes
    /// landed, NOC transactions in flight delivered, every semaphore zeroed. L1, DRAM and
    /// sysmem keep their contents (as on a card).
    fn quiesce(&mut self) {
        for i in 0..self.cores.len() {
            self.reg(i, SOFT_RESET).store(1, Ordering::Release);
            self.chip.set_reset(self.cores[i], true).expect("every core has SOFT_RESET");
            self.in_reset[i] = true;
        }
        self.chip.land_posted_writes();
        let _ = self.chip.run_until(|c| c.in_flight() == 0, 10_000_000);
        for i in 0..self.cores.len() {
            for s in 0..SEMAPHORE_COUNT {
                let at = NocAddr::unicast(self.cores[i], (MMIO_BASE + mmio::semaphore(s)) as u64);
                self.chip.write_u32(at, 0).expect("the host may write semaphores");
                self.reg(i, mmio::semaphore(s)).store(0, Ordering::Release);
                self.published[i][s as usize] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_stores_into_the_files_reach_the_chip_and_back() {
        let dir = std::env::temp_dir().join(format!("cqlab-shared-{}", std::process::id()));
        let cfg = SimConfig {
            worker_cols: 1,
            worker_rows: 1,
            num_cqs: 1,
            dram_banks: 1,
            dram_bank_size: WINDOW_SIZE,
            sysmem_size: 1 << 20,
            ..Default::default()
        };
        let mut r = Runner::create(&dir, cfg).unwrap();
        let paths = Paths::new(&dir);
        let ctl = Ctl::open(&paths.ctl()).unwrap();
        let shape = ctl.shape().unwrap();
        assert_eq!((shape.worker_cols, shape.num_cqs, shape.sysmem_size), (1, 1, 1 << 20));
        // A "host" mapping of the l1 file: a store there is in the chip's L1 at once.
        let f = OpenOptions::new().read(true).write(true).open(paths.l1()).unwrap();
        let host = map(&f, shape.l1_file_size()).unwrap();
        let mut h = SharedRegion::new(&host, 0, WINDOW_SIZE as usize);
        assert!(h.store::<4>(0x100, 0x1234_5678u32.to_le_bytes()));
        let w = cqlab_abi::noc::worker(0, 0);
        assert_eq!(r.chip().read_u32(NocAddr::unicast(w, 0x100)).unwrap(), 0x1234_5678);
        // A semaphore written by the host reaches the chip; the chip's value comes back.
        let rf = OpenOptions::new().read(true).write(true).open(paths.regs()).unwrap();
        let regs = map(&rf, shape.l1_file_size()).unwrap();
        let mut hr = SharedRegion::new(&regs, REGS_OFFSET as usize, MMIO_SIZE as usize);
        assert!(hr.store::<4>(mmio::semaphore(2) as usize, 7u32.to_le_bytes()));
        r.step();
        let sem = NocAddr::unicast(w, (MMIO_BASE + mmio::semaphore(2)) as u64);
        assert_eq!(r.chip().read_u32(sem).unwrap(), 7);
        assert_eq!(hr.load::<4>(SOFT_RESET as usize), Some(1u32.to_le_bytes()));
        assert!(ctl.load(ctl::NOW) >= SYNC_CYCLES && ctl.load(ctl::HEARTBEAT) == 1);
        // A reset request is served at the next step: semaphores zeroed, acknowledged.
        ctl.word(ctl::RESET_REQUESTED).fetch_add(1, Ordering::AcqRel);
        r.step();
        assert_eq!(ctl.load(ctl::RESET_DONE), 1);
        assert_eq!(r.chip().read_u32(sem).unwrap(), 0);
        assert_eq!(hr.load::<4>(mmio::semaphore(2) as usize), Some([0; 4]));
        drop(r);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
