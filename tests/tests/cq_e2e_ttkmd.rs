//! The end-to-end command-queue tests (`cqlab_tests::e2e`) through the tt-kmd backend against
//! the simulator: TLB windows mmapped onto the simulator's L1 and registers, sysmem pinned,
//! doorbells as volatile stores, the chip running on its own thread. Not deterministic: host
//! timing is whatever the host does.

use cqlab_tests::{on_both_chips, Kind};

macro_rules! on_ttkmd_sim {
    ($($name:ident),* $(,)?) => {
        on_both_chips! {
            $(fn $name(chip) {
                cqlab_tests::e2e::$name(Kind::TtKmdSim, chip)
            })*
        }
    };
}

cqlab_tests::every_e2e_test!(on_ttkmd_sim);
