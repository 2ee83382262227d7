//! `cqlab race`: failure rates over seeds, and replay commands that replay.

use std::process::Command;

fn firmware_dir() -> std::path::PathBuf {
    std::env::var_os("CQLAB_FIRMWARE_DIR").map(Into::into).unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
        target.join("riscv32im-unknown-none-elf/firmware")
    })
}

fn race(args: &[&str]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_cqlab"))
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .arg("race")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let v =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), v)
}

#[test]
fn the_normal_firmware_survives_every_amplifier() {
    let (code, v) =
        race(&["--seeds", "3", "--iterations", "4", "--jitter", "800", "--delay", "5000", "--ring-pages", "4"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["failure_rate"], 0.0);
}

#[test]
fn a_known_bug_fails_and_its_replay_command_reproduces_it() {
    let (code, v) = race(&["--variant", "event-zero-signalled", "--seeds", "2", "--iterations", "2"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["failures"], 2);
    let first = &v["failed"][0];
    let replay = first["replay"].as_str().unwrap();
    assert!(replay.starts_with("cqlab race --seed-base 1 --seeds 1"), "{replay}");
    let words: Vec<&str> = replay.split_whitespace().skip(2).collect();
    let (code, again) = race(&words);
    assert_eq!(code, 1);
    assert_eq!(again["failed"][0]["error"], first["error"], "the replay fails the same way");
}
