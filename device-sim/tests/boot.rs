//! Boot on the simulated chips the way a host driver does it (issue 25):
//! the worker firmware ELFs `cargo xtask firmware` built for each chip load
//! through a BAR0 TLB window multicasting to the compute grid, with the
//! `NocMap` and BRISC's reset `jal`; the host releases BRISC of every
//! compute tile (`SOFT_RESET_0` through a unicast window per tile); each
//! BRISC releases its four subordinates through the reset-PC overrides;
//! the host reads every core's alive record back through a window.
//!
//! Needs the firmware: `cargo xtask firmware` (or `$CQLAB_FIRMWARE_DIR`,
//! a directory with one subdirectory per chip).

use cqlab_abi::arch::tensix::{self, Processor};
use cqlab_abi::arch::tlb::{self, TlbConfig, TlbWindowKind};
use cqlab_abi::arch::{ArchParams, Noc};
use cqlab_abi::boot::reset_jal;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{self, AliveRecord, ALIVE_MAGIC};
use cqlab_abi::memory_map::{firmware_entry, firmware_stack_top, local_mem, RESET_JAL};
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::Board;
use cqlab_abi::{waypoint, ABI_VERSION};
use cqlab_sim::chip::{Chip, CoreId};
use cqlab_sim::config::SimConfig;
use cqlab_sim::elf::ElfImage;
use std::path::PathBuf;
use zerocopy::{FromBytes, IntoBytes};

const FIRMWARE_TARGET: &str = "riscv32im-unknown-none-elf";

/// The firmware ELFs of `board`'s chip.
fn firmware_dir(board: Board) -> PathBuf {
    let root = std::env::var_os("CQLAB_FIRMWARE_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
        target.join(FIRMWARE_TARGET).join("firmware")
    });
    root.join(board.arch().short_name())
}

fn image(board: Board, id: FirmwareId) -> ElfImage {
    let path = firmware_dir(board).join(id.name());
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("firmware ELF {} not readable ({e}): run `cargo xtask firmware`", path.display()));
    ElfImage::parse(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The host's TLB window: index `index` of kind `kind`, at BAR offset `at`.
struct Window {
    kind: TlbWindowKind,
    index: u32,
    at: u64,
}

impl Window {
    /// The first 2 MiB window (each chip has them).
    fn two_mib(chip: &ArchParams) -> Self {
        let kind = *chip.bar.windows.iter().find(|k| k.size_log2 == 21).expect("2 MiB windows");
        let (_, at) = chip.bar.window(kind.first_index).unwrap();
        Window { kind, index: kind.first_index, at }
    }

    /// Points the window at `cfg` by writing its configuration register.
    fn configure(&self, chip: &mut Chip, cfg: &TlbConfig) {
        let bits = self.kind.fields.encode(cfg).unwrap();
        let words = &tlb::to_words(bits)[..chip.arch().bar.tlb_config_words()];
        chip.bar_write(0, chip.arch().bar.tlb_config_addr(self.index) as u64, words.as_bytes()).unwrap();
    }

    /// Points the window at `addr` of the tile at translated `c` and
    /// returns the BAR offset of `addr`.
    fn unicast(&self, chip: &mut Chip, c: Coord, addr: u64) -> u64 {
        let (cfg, off) = self.kind.target(c.x, c.y, addr, Noc::Noc0);
        self.configure(chip, &cfg);
        self.at + off
    }
}

/// Boots the worker firmware on the compute grid of `board` (one command
/// queue placed) and checks every core's alive record.
fn boot_workers(board: Board) -> Chip {
    let cfg = SimConfig { sysmem_size: 1 << 20, ..SimConfig::for_board(board) };
    let mut chip = Chip::new(cfg).unwrap();
    let layout = chip.layout().clone();
    let placement = layout.placement(1).unwrap();
    let map = layout.noc_map(&placement).unwrap();
    let compute: Vec<Coord> = placement.compute.iter().map(|&c| layout.tile(c).unwrap().translated).collect();
    let (lo, hi) = compute.iter().fold((Coord::new(63, 63), Coord::new(0, 0)), |(lo, hi), c| {
        (Coord::new(lo.x.min(c.x), lo.y.min(c.y)), Coord::new(hi.x.max(c.x), hi.y.max(c.y)))
    });
    let w = Window::two_mib(chip.arch());
    // Everything below 2 MiB of every compute tile at once: the images, the
    // NocMap, BRISC's reset jal.
    assert!(chip.arch().l1_size as u64 <= w.kind.size());
    let mcast = TlbConfig { mcast: true, x_start: lo.x, y_start: lo.y, ..TlbConfig::unicast(hi.x, hi.y, 0, Noc::Noc0) };
    w.configure(&mut chip, &mcast);
    for p in Processor::ALL {
        let img = image(board, FirmwareId::worker(p));
        assert_eq!(img.entry, firmware_entry(p), "{board}: {p}'s image is linked for its own code region");
        for s in &img.segments {
            let mut bytes = s.data.clone();
            bytes.resize(s.mem_size as usize, 0);
            chip.bar_write(0, w.at + s.addr as u64, &bytes).unwrap();
        }
    }
    chip.bar_write(0, w.at + mailbox::NOC_MAP as u64, map.as_bytes()).unwrap();
    chip.bar_write(0, w.at + RESET_JAL as u64, &reset_jal(firmware_entry(Processor::Brisc)).to_le_bytes()).unwrap();
    // The multicast reached the compute grid and nothing else.
    let word = |chip: &Chip, c: Coord, a: u32| chip.read_u32(cqlab_abi::noc::NocAddr::unicast(c, a as u64)).unwrap();
    for c in chip.tensix_tiles().collect::<Vec<_>>() {
        let jal = if compute.contains(&c) { reset_jal(firmware_entry(Processor::Brisc)) } else { 0 };
        assert_eq!(word(&chip, c, RESET_JAL), jal, "{board}: {c}");
    }
    // Release BRISC of each compute tile.
    for &c in &compute {
        let at = w.unicast(&mut chip, c, tensix::SOFT_RESET_0 as u64);
        chip.bar_write(0, at, &tensix::SOFT_RESET_BRISC_ONLY_RUN.to_le_bytes()).unwrap();
    }
    let booted = |chip: &Chip| {
        compute.iter().all(|&c| {
            word(chip, c, mailbox::ALIVE) == ALIVE_MAGIC
                && (1..=4).all(|p| word(chip, c, mailbox::subordinate(p)) == ALIVE_MAGIC)
        })
    };
    chip.run_until(booted, 2_000_000).unwrap_or_else(|e| {
        let ids: Vec<CoreId> = chip.cores().filter(|id| compute.contains(&id.tile)).collect();
        let stuck: Vec<String> = ids
            .into_iter()
            .filter_map(|id| chip.core_debug(id))
            .filter(|d| d.halt.is_some() || d.in_reset)
            .map(|d| d.to_string())
            .take(5)
            .collect();
        panic!("{board}: workers did not boot: {e}\n{}", stuck.join("\n"))
    });
    // Read the alive records back through the window, as a driver does.
    for &c in &compute {
        for p in Processor::ALL {
            let at = match p {
                Processor::Brisc => mailbox::ALIVE,
                _ => mailbox::subordinate(p.index()),
            };
            let off = w.unicast(&mut chip, c, at as u64);
            let mut buf = [0u8; 32];
            chip.bar_read(0, off, &mut buf).unwrap();
            let alive = AliveRecord::read_from_bytes(&buf).unwrap();
            assert_eq!(alive.magic, ALIVE_MAGIC, "{board}: {c}/{p}");
            assert_eq!(alive.firmware_id, FirmwareId::worker(p) as u32, "{board}: {c}/{p}");
            assert_eq!(alive.abi_version, ABI_VERSION);
            assert_eq!(alive.core_xy, c.packed(), "{board}: {c}/{p} learnt its translated coordinates");
        }
        let reset = {
            let off = w.unicast(&mut chip, c, tensix::SOFT_RESET_0 as u64);
            let mut b = [0u8; 4];
            chip.bar_read(0, off, &mut b).unwrap();
            u32::from_le_bytes(b)
        };
        assert_eq!(reset & tensix::SOFT_RESET_ALL, 0, "{board}: {c}: BRISC released all four subordinates");
    }
    // Every core now waits: BRISC for a launch, the others for BRISC.
    chip.host_poll(20_000);
    for &c in &compute {
        for p in Processor::ALL {
            let d = chip.core_debug(CoreId { tile: c, processor: p }).unwrap();
            assert!(d.halt.is_none() && !d.in_reset, "{board}: {d}");
            assert_eq!(d.waypoint, waypoint::GOW, "{board}: {d}");
        }
    }
    // The cores of the dispatch tiles stay held.
    for cq in &placement.cqs {
        for t in [cq.prefetcher, cq.dispatcher] {
            let t = layout.tile(t).unwrap().translated;
            assert!(chip.core(CoreId { tile: t, processor: Processor::Brisc }).unwrap().in_reset);
        }
    }
    chip
}

/// Bytes of core `id`'s stack in use, from the top of its local memory
/// down to the lowest non-zero byte (a lower bound of the deepest use).
fn stack_depth(chip: &mut Chip, id: CoreId) -> u32 {
    let arch = chip.arch();
    let core = chip.core(id).unwrap();
    let local = local_mem(arch, id.processor);
    let bytes = core.hart.mem.local.bytes();
    let top = firmware_stack_top(arch, id.processor);
    let lowest = bytes.iter().position(|&b| b != 0).map_or(top, |i| local.base + i as u32);
    top.saturating_sub(lowest)
}

#[test]
fn worker_firmware_boots_on_every_compute_tile_of_both_chips() {
    for board in [Board::WormholeN150, Board::BlackholeP150a] {
        let mut chip = boot_workers(board);
        let tile = chip.tensix_tiles().next().unwrap();
        for p in Processor::ALL {
            let depth = stack_depth(&mut chip, CoreId { tile, processor: p });
            let room = firmware_stack_top(chip.arch(), p) - local_mem(chip.arch(), p).base;
            eprintln!("{board} {p}: boot stack {depth} of {room} bytes");
            assert!(depth < room, "{board}: {p}'s boot overflowed its local memory");
        }
    }
}
