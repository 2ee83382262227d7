//! The end-to-end command-queue tests (`cqlab_tests::e2e`) through the libttsim backend
//! (`ttsim:PATH`) on cqlab's own libraries, `target/libttsim/<arch>/libttsim_{wh,bh}.so`
//! (`cargo xtask libttsim` builds them; `cargo xtask test` does before the tests): the driver
//! loads the library, reaches the chip through `libttsim_pci_mem_*` and its TLB windows, and
//! lends sysmem through the DMA callbacks. Each test runs the small test chips, which cqlab's
//! library simulates when told (`cqlab_ttsim_set`).

use cqlab_tests::{on_both_chips, Kind};

macro_rules! on_ttsim {
    ($($name:ident),* $(,)?) => {
        on_both_chips! {
            $(fn $name(chip) {
                cqlab_tests::e2e::$name(Kind::TtSim, chip)
            })*
        }
    };
}

cqlab_tests::every_e2e_test!(on_ttsim);
