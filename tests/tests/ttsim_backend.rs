//! The libttsim backend (`ttsim:PATH`) beyond the end-to-end suite (`cq_e2e_ttsim`): the same
//! seed gives the same device time and host memory through cqlab's library as on the embedded
//! simulator, and the same chip digest run after run, and a library that is not a libttsim one fails cleanly at open, naming what is
//! wrong (a missing symbol, not a shared object, the other architecture).

use cqlab_driver::error::{DriverError, LibraryProblem};
use cqlab_driver::Device;
use cqlab_tests::{boot_on, libttsim_library, on_both_chips, reference_program, Kind, TestChip, WORMHOLE};
use std::path::PathBuf;

/// Device time, a hash of sysmem and the digest after the same host program on `kind`. The
/// library's digest leaves host memory out (it is the host's), the embedded one takes it in.
fn time_sysmem_digest(kind: Kind, chip: &TestChip, seed: u64) -> (u64, u64, u64) {
    let mut dev = boot_on(kind, chip, seed, |_| {});
    reference_program(&mut dev, &format!("{} seed {seed}", chip.name()));
    let now = dev.now();
    let backend = dev.backend();
    let mut sysmem = vec![0u8; backend.sysmem_len()];
    backend.sysmem_read(0, &mut sysmem).unwrap();
    let hash = sysmem.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    (now, hash, backend.introspect().expect("introspection").digest().unwrap())
}

on_both_chips! {
    fn the_same_seed_gives_the_same_time_and_host_memory_through_the_library_as_embedded(chip) {
        let embedded = time_sysmem_digest(Kind::Embedded, chip, 33);
        let ttsim = time_sysmem_digest(Kind::TtSim, chip, 33);
        assert_eq!(ttsim.0, embedded.0, "{} seed 33: device time through ttsim vs embedded", chip.name());
        assert_eq!(ttsim.1, embedded.1, "{} seed 33: sysmem through ttsim vs embedded", chip.name());
        let again = time_sysmem_digest(Kind::TtSim, chip, 33);
        assert_eq!(again, ttsim, "{} seed 33: the library run again", chip.name());
    }
}

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cqlab-ttsim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn open_err(path: &std::path::Path) -> DriverError {
    let spec = format!("ttsim:{}", path.display());
    match Device::open(&spec, cqlab_tests::config(&WORMHOLE)) {
        Ok(_) => panic!("{spec} opened"),
        Err(e) => e,
    }
}

#[test]
fn a_library_missing_a_symbol_fails_at_open_naming_it() {
    // cqlab's library with `libttsim_pci_mem_wr_bytes` renamed in its dynamic symbol table:
    // the loader finds every other symbol, not that one.
    let good = std::fs::read(libttsim_library(WORMHOLE.board.arch())).unwrap();
    let (from, to) = (b"libttsim_pci_mem_wr_bytes\0", b"libttsim_pci_mem_wr_bytez\0");
    let mut bytes = good.clone();
    let mut renamed = 0;
    for i in 0..bytes.len() - from.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + to.len()].copy_from_slice(to);
            renamed += 1;
        }
    }
    assert!(renamed > 0, "the library names libttsim_pci_mem_wr_bytes");
    let lib = scratch("missing").join("libttsim_wh.so");
    std::fs::write(&lib, bytes).unwrap();
    let e = open_err(&lib);
    let msg = e.to_string();
    assert!(
        matches!(
            &e,
            DriverError::Library {
                problem: LibraryProblem::MissingSymbol { symbol: "libttsim_pci_mem_wr_bytes", .. },
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.contains(&lib.display().to_string()) && msg.contains("`libttsim_pci_mem_wr_bytes`"), "{msg}");
    let _ = std::fs::remove_dir_all(lib.parent().unwrap());
}

#[test]
fn a_file_that_is_not_a_shared_object_fails_at_open() {
    let lib = scratch("text").join("libttsim_wh.so");
    std::fs::write(&lib, "not a shared object\n").unwrap();
    let e = open_err(&lib);
    let msg = e.to_string();
    assert!(matches!(&e, DriverError::Library { problem: LibraryProblem::Load(_), .. }), "{msg}");
    assert!(msg.contains(&lib.display().to_string()) && msg.contains("cannot be loaded"), "{msg}");
    let _ = std::fs::remove_dir_all(lib.parent().unwrap());
    let e = open_err(&lib);
    assert!(e.to_string().contains("cannot be loaded"), "a missing file: {e}");
}

/// A library cut short is refused before the loader maps it: mapped, its
/// missing pages fault (SIGBUS) and the process dies without a word.
#[test]
fn a_truncated_library_fails_at_open_naming_what_is_missing() {
    let whole = std::fs::read(libttsim_library(cqlab_abi::arch::Arch::Wormhole)).unwrap();
    let lib = scratch("truncated").join("libttsim_wh.so");
    // Cut inside its first loadable segment (the file's tail past its
    // segments, debug sections, the loader never maps: cut there, it loads).
    std::fs::write(&lib, &whole[..100_000]).unwrap();
    let e = open_err(&lib);
    let msg = e.to_string();
    assert!(matches!(&e, DriverError::Library { problem: LibraryProblem::Load(_), .. }), "{msg}");
    assert!(msg.contains("cannot be loaded: truncated: a loadable segment needs file bytes"), "{msg}");
    let _ = std::fs::remove_dir_all(lib.parent().unwrap());
}

#[test]
fn a_library_of_the_other_architecture_refuses_the_board() {
    // The Blackhole library asked for the Wormhole test chip: cqlab's library refuses the board.
    let lib = libttsim_library(cqlab_abi::arch::Arch::Blackhole);
    let e = open_err(&lib);
    let msg = e.to_string();
    assert!(msg.contains("CQLAB_TTSIM_BOARD") && msg.contains("blackhole library"), "{msg}");
}
