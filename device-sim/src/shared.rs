//! The chip as shared memory: the device behind the tt-kmd simulator mode.
//!
//! A device directory holds the chip's memories as files that the simulator process and host
//! processes map shared, so the host's stores through a TLB window land straight in simulated
//! L1, as on hardware:
//!
//! | file | contents | stride |
//! |---|---|---|
//! | `ctl` | one page: [`Ctl`] words (board, harvesting, clock, heartbeat, reset handshake) | — |
//! | `l1` | every Tensix tile's L1, in [`Chip::tensix_tiles`] order | [`WINDOW_SIZE`] per tile |
//! | `regs` | every Tensix tile's debug-register page (`RISCV_DEBUG_REGS_START_ADDR`: `SOFT_RESET_0`, Blackhole's reset PCs) | [`REGS_PAGE`] per tile |
//! | `dram` | every DRAM channel | the channel size per channel |
//! | `sysmem` | host memory, reached through the PCIe tile | — |
//! | `lock` | flock: one host process owns the device | — |
//!
//! [`Runner`] runs the chip free (nobody polls it: host timing is whatever the host does) and
//! between slices of [`SYNC_CYCLES`] it mirrors the host-writable registers, which both the
//! host (through `regs`) and the tile's cores write (BRISC releases its subordinates; on
//! Blackhole it sets their reset PCs): see [`Runner::sync_registers`]. A release invalidates
//! the tile's decoded code first, since the host wrote it behind the chip's back. Semaphores
//! are L1 words and need no mirroring. Idle fast-forward is off (a parked core would not see
//! host stores). Not deterministic.
#![allow(unsafe_code)] // simulator memory: docs/design.md, "Where `unsafe` lives"

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use cqlab_abi::arch::tensix::ResetPcWriters;
use cqlab_abi::arch::tensix::{self, DEBUG_REGS_BASE, SOFT_RESET_0};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::{Board, EthHarvest, Harvesting};
use memmap2::{MmapOptions, MmapRaw};

use crate::chip::{Chip, Memories};
use crate::config::SimConfig;
use crate::dram::Dram;
use crate::memory::{Ram, Sysmem};
use crate::storage::SharedRegion;

/// Per-tile stride of `l1`: a 2 MiB TLB window (both chips have them) holds
/// either chip's L1.
pub const WINDOW_SIZE: u64 = 1 << cqlab_abi::arch::bar::WINDOW_2M_LOG2;
/// Per-tile stride of `regs`: the debug-register page.
pub const REGS_PAGE: u64 = 0x1000;
/// Local address of a tile's debug-register page (what `regs` mirrors).
pub const REGS_WINDOW_BASE: u64 = DEBUG_REGS_BASE as u64;
/// Device cycles between two register synchronisations.
pub const SYNC_CYCLES: u64 = 1000;
/// `ctl` word 0 (`b"CQLTTKM2"`: the real chips' layout).
pub const MAGIC: u64 = u64::from_le_bytes(*b"CQLTTKM2");

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
    /// The board: its index in `soc::Board::ALL`.
    pub const BOARD: usize = 6;
    /// Harvested Tensix rows (bit = NOC0 y) and columns (bit = NOC0 x).
    pub const HARVEST_ROWS: usize = 7;
    pub const HARVEST_COLS: usize = 8;
    /// Harvested DRAM channels (bit = channel).
    pub const HARVEST_DRAM: usize = 9;
    /// Harvested Ethernet channels (bit = channel; all ones: every channel).
    pub const HARVEST_ETH: usize = 10;
    pub const SYSMEM_SIZE: usize = 11;
    pub const SEED: usize = 12;
    /// The runner stopped (set on a clean exit).
    pub const STOPPED: usize = 13;
    /// tt-kmd's `reset_gen` (the host's simulated kernel bumps it on a reset; an fd opened
    /// before the last bump is invalid for good).
    pub const RESET_GEN: usize = 14;
    /// tt-kmd's reset marker, PCI_COMMAND's parity bit in config space (`set_reset_marker`,
    /// tt-kmd `pcie.c`): the host's simulated kernel sets it when a reset starts; a chip reset
    /// (a served reset request) clears it, as a card's reset clears its config space.
    pub const RESET_MARKER: usize = 15;
    /// tt-kmd's `needs_hw_init`: set by the USER/ASIC resets, cleared by POST_RESET.
    pub const NEEDS_HW_INIT: usize = 16;
    /// The tt-kmd version the host's simulated kernel answers as and behaves like, packed
    /// `major << 16 | minor << 8 | patch`; 0 (a new device) for its default.
    pub const DRIVER_VERSION: usize = 17;
    pub const WORDS: usize = 32;
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub board: Board,
    pub harvesting: Harvesting,
    pub sysmem_size: u64,
}

fn mask(bits: &[u8]) -> u64 {
    bits.iter().fold(0, |m, &b| m | 1 << b)
}

fn unmask(m: u64) -> Vec<u8> {
    (0..64).filter(|b| m & 1 << b != 0).collect()
}

impl Shape {
    pub fn of(cfg: &SimConfig) -> Self {
        Shape { board: cfg.board, harvesting: cfg.harvesting.clone(), sysmem_size: cfg.sysmem_size as u64 }
    }

    /// The chip of this shape (the layout decides tile order).
    pub fn layout(&self) -> Result<cqlab_abi::soc::ChipLayout, cqlab_abi::soc::LayoutError> {
        cqlab_abi::soc::ChipLayout::new(self.board, self.harvesting.clone())
    }

    /// Every Tensix tile (translated coordinates), in [`Chip::tensix_tiles`]
    /// order: index `i` owns stride `i` of `l1` and `regs`.
    pub fn tiles(&self) -> Vec<Coord> {
        let Ok(l) = self.layout() else { return Vec::new() };
        l.tiles().iter().filter(|t| t.kind == cqlab_abi::soc::TileKind::Tensix).map(|t| t.translated).collect()
    }

    pub fn tile_index(&self, c: Coord) -> Option<usize> {
        self.tiles().iter().position(|&x| x == c)
    }

    pub fn l1_file_size(&self) -> u64 {
        self.tiles().len() as u64 * WINDOW_SIZE
    }
    pub fn regs_file_size(&self) -> u64 {
        self.tiles().len() as u64 * REGS_PAGE
    }
    /// DRAM channels and the size of each.
    pub fn dram_channels(&self) -> (u64, u64) {
        let d = cqlab_abi::soc::SocDescriptor::builtin(self.board.arch());
        (d.dram.len() as u64, d.dram_bank_size)
    }
    pub fn dram_file_size(&self) -> u64 {
        let (n, size) = self.dram_channels();
        n * size
    }

    fn words(&self) -> [(usize, u64); 6] {
        let h = &self.harvesting;
        let eth = match h.eth() {
            EthHarvest::All => u64::MAX,
            EthHarvest::Channels(c) => mask(c),
        };
        let board = Board::ALL.iter().position(|&b| b == self.board).expect("a board") as u64;
        [
            (ctl::BOARD, board),
            (ctl::HARVEST_ROWS, mask(h.tensix_rows())),
            (ctl::HARVEST_COLS, mask(h.tensix_cols())),
            (ctl::HARVEST_DRAM, mask(h.dram_banks())),
            (ctl::HARVEST_ETH, eth),
            (ctl::SYSMEM_SIZE, self.sysmem_size),
        ]
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
        if self.load(ctl::MAGIC) != MAGIC {
            return None;
        }
        let board = *Board::ALL.get(self.load(ctl::BOARD) as usize)?;
        let (rows, cols) = (unmask(self.load(ctl::HARVEST_ROWS)), unmask(self.load(ctl::HARVEST_COLS)));
        let h = if !rows.is_empty() { Harvesting::rows(&rows) } else { Harvesting::cols(&cols) };
        let eth = match self.load(ctl::HARVEST_ETH) {
            u64::MAX => EthHarvest::All,
            m => EthHarvest::Channels(unmask(m)),
        };
        let harvesting = h.with_dram(&unmask(self.load(ctl::HARVEST_DRAM))).with_eth(eth);
        Some(Shape { board, harvesting, sysmem_size: self.load(ctl::SYSMEM_SIZE) })
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
    tiles: Vec<Coord>,
    /// The register addresses mirrored in each tile's `regs` page.
    mirrored: Vec<u32>,
    /// Per tile and mirrored register: the value last published in `regs`.
    published: Vec<Vec<u32>>,
    resets_done: u64,
}

impl Runner {
    /// Creates (or recreates, zeroed) the device files under `dir` and powers on a chip on
    /// them: every core in reset, memories zero.
    pub fn create(dir: &Path, cfg: SimConfig) -> Result<Self, String> {
        Self::create_with(dir, cfg, &[])
    }

    /// [`Self::create`], with `ctl_words` (`ctl` index, value) stored before the device is
    /// published: no host sees the device without them (a host's simulated kernel reads
    /// `ctl::DRIVER_VERSION` at each open).
    pub fn create_with(dir: &Path, mut cfg: SimConfig, ctl_words: &[(usize, u64)]) -> Result<Self, String> {
        cfg.validate().map_err(|e| e.to_string())?;
        // A parked core would never see the host's stores into its L1.
        cfg.fast_forward = false;
        let io = |what: &str, e: std::io::Error| format!("{what} under {}: {e}", dir.display());
        std::fs::create_dir_all(dir).map_err(|e| io("creating the device directory", e))?;
        let paths = Paths::new(dir);
        let shape = Shape::of(&cfg);
        let tiles = shape.tiles();
        let chip_params = cfg.board.arch().params();
        let l1_file = create(&paths.l1(), shape.l1_file_size()).map_err(|e| io("creating l1", e))?;
        let regs_file = create(&paths.regs(), shape.regs_file_size()).map_err(|e| io("creating regs", e))?;
        let dram_file = create(&paths.dram(), shape.dram_file_size()).map_err(|e| io("creating dram", e))?;
        let sysmem_file = create(&paths.sysmem(), shape.sysmem_size).map_err(|e| io("creating sysmem", e))?;
        let l1_map = map(&l1_file, shape.l1_file_size()).map_err(|e| io("mapping l1", e))?;
        let regs = map(&regs_file, shape.regs_file_size()).map_err(|e| io("mapping regs", e))?;
        let dram_map = map(&dram_file, shape.dram_file_size()).map_err(|e| io("mapping dram", e))?;
        let sysmem_map = map(&sysmem_file, shape.sysmem_size).map_err(|e| io("mapping sysmem", e))?;
        let l1_size = chip_params.l1_size as usize;
        let l1 = (0..tiles.len())
            .map(|i| Ram::shared(0, SharedRegion::new(&l1_map, i * WINDOW_SIZE as usize, l1_size)))
            .collect();
        let (channels, channel) = shape.dram_channels();
        let dram = Dram::shared(
            channel,
            (0..channels as usize)
                .map(|c| SharedRegion::new(&dram_map, c * channel as usize, channel as usize))
                .collect(),
        );
        // Just created: the chip's zeroing at power-on has nothing to do.
        let sysmem = Sysmem::Shared(SharedRegion::fresh(&sysmem_map, 0, shape.sysmem_size as usize));
        let chip = Chip::with_memories(cfg.clone(), sysmem, Some(Memories { l1, dram })).map_err(|e| e.to_string())?;
        create(&paths.ctl(), CTL_SIZE as u64).map_err(|e| io("creating ctl", e))?;
        let ctl = Ctl::open(&paths.ctl()).map_err(|e| io("mapping ctl", e))?;
        ctl.store(ctl::PID, std::process::id() as u64);
        ctl.store(ctl::SEED, cfg.seed);
        for (i, v) in shape.words().into_iter().chain(ctl_words.iter().copied()) {
            ctl.store(i, v);
        }
        let mut mirrored = vec![SOFT_RESET_0];
        let pcs = chip_params.tensix.reset_pc;
        if pcs.writers == ResetPcWriters::Anyone {
            mirrored.extend(pcs.trisc_pc);
            mirrored.extend([pcs.trisc_override, pcs.ncrisc_pc, pcs.ncrisc_override]);
        }
        let n = tiles.len();
        let mut r =
            Runner { chip, ctl, regs, tiles, published: vec![vec![0; mirrored.len()]; n], mirrored, resets_done: 0 };
        for i in 0..n {
            for k in 0..r.mirrored.len() {
                let v = r.chip_reg(i, k);
                r.reg(i, r.mirrored[k]).store(v, Ordering::Release);
                r.published[i][k] = v;
            }
        }
        // Published last: a host that sees the magic sees a complete device.
        r.ctl.store(ctl::MAGIC, MAGIC);
        Ok(r)
    }

    pub fn chip(&self) -> &Chip {
        &self.chip
    }

    /// Register `addr` (in the debug page) of tile `i` in `regs`.
    fn reg(&self, i: usize, addr: u32) -> &AtomicU32 {
        let off = addr - DEBUG_REGS_BASE;
        assert!((off as u64) < REGS_PAGE && off % 4 == 0);
        let at = i * REGS_PAGE as usize + off as usize;
        // SAFETY: `at` lies inside the live `regs` mapping (one page per tile) and is
        // 4-aligned; every access from this process is atomic, the host's are aligned 32-bit
        // volatile accesses (single instructions).
        unsafe { AtomicU32::from_ptr(self.regs.as_mut_ptr().add(at).cast::<u32>()) }
    }

    /// The chip's value of mirrored register `k` of tile `i`.
    fn chip_reg(&self, i: usize, k: usize) -> u32 {
        let at = NocAddr::unicast(self.tiles[i], self.mirrored[k] as u64);
        self.chip.read_u32(at).expect("a mirrored register is readable")
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
    /// registers and clock out.
    pub fn step(&mut self) {
        self.sync_registers();
        let asked = self.ctl.load(ctl::RESET_REQUESTED);
        if asked != self.resets_done {
            self.quiesce();
            self.resets_done = asked;
            // The chip's reset clears its PCI config space, the reset marker with it.
            self.ctl.store(ctl::RESET_MARKER, 0);
            self.ctl.store(ctl::RESET_DONE, asked);
        }
        let now = self.chip.advance(SYNC_CYCLES);
        self.sync_registers();
        self.ctl.store(ctl::NOW, now);
        self.ctl.word(ctl::HEARTBEAT).fetch_add(1, Ordering::Release);
    }

    /// The mirrored registers have two writers, the host (through `regs`) and the tile's
    /// cores (in the chip). A `regs` word that differs from what was last published there was
    /// written by the host: it goes into the chip (a `SOFT_RESET_0` that releases a core
    /// invalidates the tile's decoded code first: the host wrote it behind the chip's back).
    /// Then the chip's value is published with a compare-and-swap from the value just seen, so
    /// a host store racing with the publication is not overwritten: it is picked up at the
    /// next synchronisation.
    fn sync_registers(&mut self) {
        for i in 0..self.tiles.len() {
            for k in 0..self.mirrored.len() {
                let addr = self.mirrored[k];
                let seen = self.reg(i, addr).load(Ordering::Acquire);
                if seen != self.published[i][k] {
                    let tile = self.tiles[i];
                    if addr == SOFT_RESET_0 {
                        self.chip.invalidate_code(tile).expect("a Tensix tile of this chip");
                    }
                    self.chip.write_u32(NocAddr::unicast(tile, addr as u64), seen).expect("a host-writable register");
                    self.published[i][k] = seen;
                }
                let now = self.chip_reg(i, k);
                if now != seen
                    && self.reg(i, addr).compare_exchange(seen, now, Ordering::AcqRel, Ordering::Acquire).is_ok()
                {
                    self.published[i][k] = now;
                }
            }
        }
    }

    /// What a reset does to the simulated chip: every core held in reset, posted writes
    /// landed, NOC transactions in flight delivered. L1, DRAM and sysmem keep their contents
    /// (as on a card).
    fn quiesce(&mut self) {
        for i in 0..self.tiles.len() {
            let at = NocAddr::unicast(self.tiles[i], SOFT_RESET_0 as u64);
            self.chip.write_u32(at, tensix::SOFT_RESET_ALL).expect("SOFT_RESET_0 is host-writable");
            self.reg(i, SOFT_RESET_0).store(tensix::SOFT_RESET_ALL, Ordering::Release);
            self.published[i][0] = tensix::SOFT_RESET_ALL;
        }
        self.chip.land_posted_writes();
        // Bounded: what is left is said (a reset that returns with traffic
        // still landing would otherwise look clean).
        if self.chip.run_until(|c| c.in_flight() == 0, QUIESCE_BUDGET_CYCLES).is_err() {
            eprintln!(
                "cqlab sim ttkmd: reset: {} NOC transactions still in flight after {QUIESCE_BUDGET_CYCLES} cycles",
                self.chip.in_flight()
            );
        }
    }
}

/// Device cycles a reset waits for the NOC to drain.
const QUIESCE_BUDGET_CYCLES: u64 = 10_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_stores_into_the_files_reach_the_chip_and_back() {
        let dir = std::env::temp_dir().join(format!("cqlab-shared-{}", std::process::id()));
        let cfg = SimConfig { sysmem_size: 1 << 20, ..SimConfig::for_board(Board::BlackholeP100a) };
        let mut r = Runner::create(&dir, cfg).unwrap();
        let paths = Paths::new(&dir);
        let ctl = Ctl::open(&paths.ctl()).unwrap();
        let shape = ctl.shape().unwrap();
        assert_eq!((shape.board, shape.sysmem_size), (Board::BlackholeP100a, 1 << 20));
        assert_eq!(shape.harvesting, Board::BlackholeP100a.default_harvesting());
        // A "host" mapping of the l1 file: a store there is in the chip's L1 at once.
        let f = OpenOptions::new().read(true).write(true).open(paths.l1()).unwrap();
        let host = map(&f, shape.l1_file_size()).unwrap();
        let mut h = SharedRegion::new(&host, WINDOW_SIZE as usize, WINDOW_SIZE as usize);
        assert!(h.store::<4>(0x100, 0x1234_5678u32.to_le_bytes()));
        let second = shape.tiles()[1];
        assert_eq!(r.chip().read_u32(NocAddr::unicast(second, 0x100)).unwrap(), 0x1234_5678);
        // A reset PC written by the host reaches the chip; SOFT_RESET_0 is published.
        let rf = OpenOptions::new().read(true).write(true).open(paths.regs()).unwrap();
        let regs = map(&rf, shape.regs_file_size()).unwrap();
        let mut hr = SharedRegion::new(&regs, REGS_PAGE as usize, REGS_PAGE as usize);
        let pc = Board::BlackholeP100a.arch().params().tensix.reset_pc.ncrisc_pc;
        assert!(hr.store::<4>((pc - DEBUG_REGS_BASE) as usize, 0xC000u32.to_le_bytes()));
        r.step();
        assert_eq!(r.chip().read_u32(NocAddr::unicast(second, pc as u64)).unwrap(), 0xC000);
        let soft = (SOFT_RESET_0 - DEBUG_REGS_BASE) as usize;
        assert_eq!(hr.load::<4>(soft), Some(tensix::SOFT_RESET_ALL.to_le_bytes()));
        assert!(ctl.load(ctl::NOW) >= SYNC_CYCLES && ctl.load(ctl::HEARTBEAT) == 1);
        // A release the host writes reaches the chip; a reset request holds it again.
        assert!(hr.store::<4>(soft, tensix::SOFT_RESET_BRISC_ONLY_RUN.to_le_bytes()));
        r.step();
        let soft_at = NocAddr::unicast(second, SOFT_RESET_0 as u64);
        assert_eq!(r.chip().read_u32(soft_at).unwrap(), tensix::SOFT_RESET_BRISC_ONLY_RUN);
        // The reset marker a tt-kmd reset sets stays set until the chip's reset clears it.
        ctl.store(ctl::RESET_MARKER, 1);
        r.step();
        assert_eq!(ctl.load(ctl::RESET_MARKER), 1);
        ctl.word(ctl::RESET_REQUESTED).fetch_add(1, Ordering::AcqRel);
        r.step();
        assert_eq!((ctl.load(ctl::RESET_DONE), ctl.load(ctl::RESET_MARKER)), (1, 0));
        assert_eq!(r.chip().read_u32(soft_at).unwrap(), tensix::SOFT_RESET_ALL);
        assert_eq!(hr.load::<4>(soft), Some(tensix::SOFT_RESET_ALL.to_le_bytes()));
        drop(r);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
