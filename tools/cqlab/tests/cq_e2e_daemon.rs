//! The end-to-end command-queue tests (`cqlab_tests::e2e`) and the demo over a simulator
//! daemon: a `cqlab sim serve` process per test, the host in this process (`sim:DIR`).

use cqlab_tests::{on_both_chips, DaemonProcess, Kind};

const CQLAB: &str = env!("CARGO_BIN_EXE_cqlab");

macro_rules! on_daemon {
    ($($name:ident),* $(,)?) => {
        on_both_chips! {
            $(fn $name(chip) {
                cqlab_tests::e2e::$name(Kind::Daemon { cqlab: CQLAB }, chip)
            })*
        }
    };
}

cqlab_tests::every_e2e_test!(on_daemon);

on_both_chips! {
fn the_demo_runs_over_the_daemon(chip) {
    let d = DaemonProcess::start(CQLAB, "demo", 1, chip);
    let out = std::process::Command::new(CQLAB)
        .args(["demo", "--rounds", "2", "--device"])
        .arg(format!("sim:{}", d.dir.display()))
        .env("CQLAB_FIRMWARE_DIR", cqlab_tests::firmware_dir())
        .output()
        .unwrap();
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("verified 524288 bytes read back"), "{text}");
    assert!(text.contains(&format!("chip: {} ({})", chip.board, chip.harvesting())), "{text}");
}
}
