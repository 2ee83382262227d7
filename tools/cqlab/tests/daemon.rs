//! The simulator daemon end to end: real `cqlab sim serve` processes, real
//! client processes. Each test owns a temporary device directory and kills
//! its daemon when it ends, pass or fail (the guard's `Drop`). Every wait is
//! bounded and says what it waited for.

mod support;

use cqlab_abi::memory_map::USER;
use cqlab_abi::noc::{Coord, NocAddr};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::{firmware_dir, kill_after_boot, mode, root_or_skip, text, CQLAB, SMALL_BLACKHOLE, SMALL_WORMHOLE};

/// A whole client job (attach, boot, a few rounds) takes well under this.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `cqlab sim serve`; killed and its directory removed on drop.
struct Daemon {
    child: Child,
    dir: PathBuf,
    log: PathBuf,
}

fn scratch_dir(name: &str) -> PathBuf {
    support::scratch(&format!("daemon-{name}"))
}

impl Daemon {
    fn start(name: &str, seed: u64) -> Daemon {
        let dir = scratch_dir(name);
        std::fs::create_dir_all(&dir).unwrap();
        Self::start_in(dir, seed, "", &[])
    }

    /// Starts `cqlab sim serve --dev dir EXTRA...` under `sh -c "PREFIX
    /// exec ..."` (e.g. "umask 000;").
    fn start_in(dir: PathBuf, seed: u64, prefix: &str, extra: &[&str]) -> Daemon {
        Self::start_on(dir, seed, prefix, &SMALL_WORMHOLE, 4, extra)
    }

    /// [`Daemon::start_in`] on the chip `chip` names, with `sysmem_mib` MiB of host memory.
    fn start_on(dir: PathBuf, seed: u64, prefix: &str, chip: &[&str], sysmem_mib: u32, extra: &[&str]) -> Daemon {
        let log = dir.with_extension("log");
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!("{prefix} exec \"$0\" \"$@\""))
            .arg(CQLAB)
            .args(["sim", "serve", "--sysmem-mib", &sysmem_mib.to_string(), "--seed"])
            .arg(seed.to_string())
            .args(chip)
            .arg("--dev")
            .arg(&dir)
            .args(extra)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawning cqlab sim serve");
        let d = Daemon { child, dir, log };
        let sock = d.dir.join("sock");
        let start = Instant::now();
        while !sock.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timeout waiting for the daemon socket {}; log: {}",
                sock.display(),
                std::fs::read_to_string(&d.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        d
    }

    fn cqlab(&self, args: &[&str]) -> Output {
        let mut c = Command::new(CQLAB);
        c.args(args).arg("--dev").arg(&self.dir);
        run(c)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Runs a command to completion within PROCESS_TIMEOUT.
fn run(c: Command) -> Output {
    support::run_within(c, PROCESS_TIMEOUT)
}

fn bar(d: &Daemon, extra: &[&str]) -> Output {
    let addr = format!("{:#x}", USER.base + 0x40);
    let mut args = vec!["sim", "bar", "--worker", "1,0", "--addr", &addr];
    args.extend_from_slice(extra);
    d.cqlab(&args)
}

#[test]
fn a_second_process_reads_what_the_first_wrote_until_reset() {
    let d = Daemon::start("successive", 1);
    let first = bar(&d, &["--write", "0xc0ffee"]);
    assert!(first.status.success(), "{}", text(&first));
    let second = bar(&d, &[]);
    assert!(second.status.success(), "{}", text(&second));
    assert_eq!(String::from_utf8_lossy(&second.stdout).trim(), "0x00c0ffee", "{}", text(&second));
    let reset = d.cqlab(&["reset"]);
    assert!(reset.status.success(), "{}", text(&reset));
    let third = bar(&d, &[]);
    assert_eq!(String::from_utf8_lossy(&third.stdout).trim(), "0x00000000", "{}", text(&third));
    // Stop ends the daemon cleanly and removes its socket.
    let stop = d.cqlab(&["sim", "stop"]);
    assert!(stop.status.success(), "{}", text(&stop));
    let mut d = d;
    let start = Instant::now();
    while d.child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(10), "timeout waiting for the daemon to exit after stop");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!d.dir.join("sock").exists(), "socket left behind");
    let after = bar(&d, &[]);
    assert!(String::from_utf8_lossy(&after.stderr).contains("no simulator daemon at"), "{}", text(&after));
}

#[test]
fn a_concurrent_opener_is_told_who_holds_the_device() {
    let d = Daemon::start("held", 2);
    let addr = format!("{:#x}", USER.base);
    let mut holder = Command::new(CQLAB)
        .args(["sim", "bar", "--worker", "0,0", "--addr", &addr, "--hold", "20", "--dev"])
        .arg(&d.dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The holder prints the word once it is attached.
    let (tx, rx) = mpsc::channel();
    let out = holder.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(out).read_line(&mut line);
        let _ = tx.send(line);
    });
    let attached = rx.recv_timeout(Duration::from_secs(10));
    let second = if attached.is_ok() { Some(bar(&d, &[])) } else { None };
    let _ = holder.kill();
    let _ = holder.wait();
    attached.expect("timeout waiting for the first client to attach");
    let second = second.unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{}", text(&second));
    assert!(err.contains(&format!("held by pid {}", holder.id())), "{}", text(&second));
    // Once the holder is gone the device is free again.
    let third = bar(&d, &[]);
    assert!(third.status.success(), "{}", text(&third));
}

/// `cqlab reset --device sim:PATH` is the daemon's power-on reset, reported as such; while
/// another client holds the device it is refused naming the holder, and resets nothing.
#[test]
fn reset_by_device_spec_restores_power_on_state_and_refuses_a_held_device() {
    let d = Daemon::start("reset-spec", 3);
    let reset = || {
        let mut c = Command::new(CQLAB);
        c.args(["reset", "--json", "--device"]).arg(format!("sim:{}", d.dir.display()));
        run(c)
    };
    let written = bar(&d, &["--write", "0xc0ffee"]);
    assert!(written.status.success(), "{}", text(&written));

    let holder = support::hold_device(&d.dir, 20);
    let refused = reset();
    let holder = {
        let mut h = holder;
        let _ = h.kill();
        let _ = h.wait();
        h
    };
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains(&format!("held by pid {}", holder.id())), "{}", text(&refused));
    let kept = bar(&d, &[]);
    assert_eq!(String::from_utf8_lossy(&kept.stdout).trim(), "0x00c0ffee", "a refused reset reset: {}", text(&kept));

    let o = reset();
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("--json is JSON");
    assert_eq!((report["backend"].as_str(), report["reset"].as_str()), (Some("daemon"), Some("power-on")), "{report}");
    assert!(report["seconds"].as_f64().is_some_and(|s| s >= 0.0), "{report}");
    let after = bar(&d, &[]);
    assert_eq!(String::from_utf8_lossy(&after.stdout).trim(), "0x00000000", "{}", text(&after));
}

/// splitmix64: the test's own seeded stream of kill delays.
fn next(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn client_job(dir: &Path, seed: u64, rounds: u32) -> Command {
    let mut c = Command::new(CQLAB);
    c.args(["sim", "client-job", "--cqs", "1", "--bytes", "2048", "--seed"])
        .arg(seed.to_string())
        .args(["--rounds", &rounds.to_string(), "--dev"])
        .arg(dir);
    c
}

#[test]
fn a_hundred_host_processes_half_killed_mid_enqueue_leave_the_device_usable() {
    assert!(
        firmware_dir().join("wormhole").join("dispatch").is_file(),
        "firmware ELFs not found in {}: run `cargo xtask firmware` or set CQLAB_FIRMWARE_DIR",
        firmware_dir().display()
    );
    const SEED: u64 = 0x5eed_0c0a;
    let d = Daemon::start("crash", 3);
    let started = Instant::now();
    let mut rng = SEED;
    let mut killed = 0;
    for i in 0..100u64 {
        let replay = format!("(process {i}, test seed {SEED:#x})");
        if i % 2 == 0 {
            // Killed mid-enqueue: many rounds, SIGKILL a seeded 0-15 ms
            // after it reports that boot is done.
            let delay = Duration::from_micros(next(&mut rng) % 15_000);
            kill_after_boot(client_job(&d.dir, i, 100_000), delay, PROCESS_TIMEOUT, &format!("process {i} {replay}"));
            killed += 1;
        } else {
            let o = run(client_job(&d.dir, i, 3));
            assert!(o.status.success(), "process {i} after a kill failed {replay}\n{}", text(&o));
            assert!(String::from_utf8_lossy(&o.stdout).contains("3 rounds of 2048 bytes verified"), "{}", text(&o));
        }
    }
    let elapsed = started.elapsed();
    assert_eq!(killed, 50);
    let log = d.log();
    let recovered = log.matches("ended without detaching").count();
    assert_eq!(recovered, 50, "the daemon noticed every killed client:\n{log}");
    assert!(elapsed < Duration::from_secs(90), "100 processes took {elapsed:?}");
    eprintln!("100 host processes (50 killed mid-enqueue) in {:.1} s", elapsed.as_secs_f64());
}

#[test]
fn a_run_after_reset_replays_the_same_device_time() {
    let d = Daemon::start("replay", 4);
    let cycle = |o: &Output| {
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}", text(o));
        out.rsplit("device cycle ").next().and_then(|s| s.trim().parse::<u64>().ok()).expect("a device cycle")
    };
    let first = cycle(&run(client_job(&d.dir, 7, 3)));
    assert!(d.cqlab(&["reset"]).status.success());
    let second = cycle(&run(client_job(&d.dir, 7, 3)));
    assert_eq!(first, second, "seed 4, same client program after a reset: same device time");
}

/// Ctrl-C, and a closed terminal (SIGHUP: it killed the daemon and left
/// its socket, helper-33), stop the daemon as `sim stop` does.
#[test]
fn ctrl_c_stops_the_daemon_and_removes_its_socket() {
    for signal in ["INT", "HUP"] {
        let mut d = Daemon::start(&format!("sig{signal}"), 5);
        let kill = Command::new("kill").args([&format!("-{signal}"), &d.child.id().to_string()]).status().unwrap();
        assert!(kill.success());
        let start = Instant::now();
        let status = loop {
            if let Some(s) = d.child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "timeout waiting for the daemon to exit on SIG{signal}");
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(status.success(), "SIG{signal}: daemon exit status {status}\n{}", d.log());
        assert!(!d.dir.join("sock").exists(), "SIG{signal}: socket left behind");
        assert!(d.log().contains(&format!("stopped by SIG{signal}")), "{}", d.log());
    }
}

/// Two `sim serve` started at once on one new directory: one serves, the
/// other is refused having changed nothing (its cleanup removed the first's
/// sysmem, pid and lock files, 12 times in 15, before the directory lock).
#[test]
fn two_daemons_started_at_once_leave_one_serving_untouched() {
    for round in 0..5 {
        let dir = scratch_dir(&format!("race-{round}"));
        let serve = || {
            Command::new(CQLAB)
                .args(["sim", "serve", "--quiet", "--sysmem-mib", "4"])
                .args(SMALL_WORMHOLE)
                .arg("--dev")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawning cqlab sim serve")
        };
        // Both killed however the round ends.
        struct Both(Child, Child);
        impl Drop for Both {
            fn drop(&mut self) {
                for c in [&mut self.0, &mut self.1] {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
        }
        let mut both = Both(serve(), serve());
        let Both(a, b) = &mut both;
        // The loser exits at once; the winner serves until stopped.
        let start = Instant::now();
        let loser = loop {
            match (a.try_wait().unwrap(), b.try_wait().unwrap()) {
                (Some(s), None) => break (s, &mut *a, &mut *b),
                (None, Some(s)) => break (s, &mut *b, &mut *a),
                (None, None) => {}
                both => panic!("round {round}: both daemons exited: {both:?}"),
            }
            assert!(start.elapsed() < Duration::from_secs(10), "round {round}: neither start was refused");
            std::thread::sleep(Duration::from_millis(10));
        };
        let (status, refused, winner) = loser;
        let mut err = String::new();
        refused.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(!status.success() && err.contains("another `cqlab sim serve` is starting or serving"), "{err}");
        while !dir.join("sock").exists() {
            assert!(start.elapsed() < Duration::from_secs(10), "round {round}: the winner never published its socket");
            std::thread::sleep(Duration::from_millis(10));
        }
        for f in ["sysmem", "pid", "lock", "sock"] {
            assert!(dir.join(f).exists(), "round {round}: {f} removed by the refused start");
        }
        let mut demo = Command::new(CQLAB);
        demo.args(["demo", "--rounds", "1", "--device"]).arg(format!("sim:{}", dir.display()));
        let o = run(demo);
        let _ = winner.kill();
        drop(both);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(o.status.success(), "round {round}: {}", text(&o));
    }
}

/// The same host program on a small one-CQ device; returns the device-state
/// digest and the device time at the end.
fn digest_after_program(dev: &mut cqlab_driver::Device) -> (u64, u64) {
    dev.boot().expect("boot");
    let buf = dev.alloc_dram(8192, 1024).unwrap();
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &data).unwrap();
    cq.launch(cqlab_driver::CoreRange::new((0, 0), (1, 0)), &[9]).unwrap();
    cq.record_event().unwrap();
    assert_eq!(cq.read_buffer(&buf, 0, 8192).unwrap(), data);
    cq.finish().unwrap();
    let now = dev.now();
    (dev.backend().introspect().expect("a simulator").digest().unwrap(), now)
}

#[test]
fn the_daemon_and_the_embedded_simulator_reach_the_same_state_for_the_same_seed() {
    let seed = 11;
    let d = Daemon::start("digest", seed);
    let cfg = cqlab_driver::DeviceConfig { num_cqs: 1, firmware_dir: firmware_dir(), ..Default::default() };
    let mut over_daemon = cqlab_driver::Device::open(&format!("sim:{}", d.dir.display()), cfg.clone()).unwrap();
    let daemon = digest_after_program(&mut over_daemon);
    drop(over_daemon);
    // The daemon's chip: the small Wormhole, 4 MiB of sysmem (Daemon::start).
    let harvesting = cqlab_abi::soc::Harvesting::parse(SMALL_WORMHOLE[3]).unwrap();
    let sim = cqlab_sim::config::SimConfig {
        seed,
        sysmem_size: 4 << 20,
        harvesting,
        ..cqlab_sim::config::SimConfig::for_board(cqlab_abi::soc::Board::WormholeN150)
    };
    let mut embedded = cqlab_driver::Device::embedded(sim, cfg).unwrap();
    let local = digest_after_program(&mut embedded);
    assert_eq!(daemon, local, "seed {seed}: (digest, device time) over the daemon vs embedded");
    assert!(local.1 > 0);
}

/// `run` over a fresh daemon measures what the embedded simulator of the
/// daemon's seed does: its check of the chip's rows reads the chip without
/// attaching (an attach boots the device, and the measured run was the
/// daemon's second client, every cycle 10,080 later).
#[test]
fn run_over_a_fresh_daemon_matches_the_embedded_run_of_its_seed() {
    let d = Daemon::start("run", 7);
    let common = ["run", "hetero", "--programs", "4", "--iters", "1", "--warmup", "0", "--cqs", "1", "--json", "-"];
    let run = |device: &str, extra: &[&str]| {
        let trace = d.dir.with_extension(format!("{}.jsonl", device.len()));
        let mut c = Command::new(CQLAB);
        c.args(common).args(["--device", device, "--trace"]).arg(&trace).args(extra);
        let o = run(c);
        assert!(o.status.success(), "{device}: {}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("run --json is JSON");
        let p = &v["points"][0];
        // The device's own records, at their absolute cycles.
        let records: Vec<String> = std::fs::read_to_string(&trace)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("{\"rec\""))
            .map(str::to_owned)
            .collect();
        let _ = std::fs::remove_file(&trace);
        (p["timed_cycles"].clone(), p["latency_cycles"].clone(), p["commands"].clone(), records)
    };
    let daemon = run(&format!("sim:{}", d.dir.display()), &[]);
    let embedded = run("embedded:seed=7", &SMALL_WORMHOLE);
    assert!(!daemon.3.is_empty(), "no trace records");
    assert_eq!(daemon, embedded, "the same seed over the daemon and embedded");
}

/// The least sysmem a daemon takes (`sim serve --sysmem-mib 3`; less is
/// refused at start, `bad_input`) holds what `status`, `dump` and a default
/// client read (on 1 MiB the daemon started, `status` and `dump` failed
/// with "sysmem access out of range" and every client was refused). A `run`
/// of more queues than it holds is refused as a usage error before anything
/// attaches (`run` exited 1).
#[test]
fn a_daemon_without_sysmem_for_the_queues_is_a_usage_error() {
    let dir = scratch_dir("small-sysmem");
    std::fs::create_dir_all(&dir).unwrap();
    let d = Daemon::start_on(dir, 1, "", &[], 3, &[]);
    let device = format!("sim:{}", d.dir.display());
    for args in [&["status"][..], &["dump"][..], &["demo", "--rounds", "1"][..]] {
        let mut c = Command::new(CQLAB);
        c.args(args).args(["--device", &device]);
        let o = run(c);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    let mut c = Command::new(CQLAB);
    c.args(["run", "copy_stress", "--iters", "1", "--cqs", "3", "--device", &device]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("need") && err.contains("bytes of sysmem") && err.contains("has 3145728"), "{err}");
    let mut d = d;
    assert!(d.child.try_wait().unwrap().is_none(), "the daemon stopped: {}", d.log());
}

/// `run` on a daemon of another chip than `--chip` names is a usage error,
/// as in every other command (it exited 1, with no `usage:`).
#[test]
fn run_on_a_daemon_of_another_chip_is_a_usage_error() {
    let d = Daemon::start("other-chip", 1);
    let device = format!("sim:{}", d.dir.display());
    for args in [&["run", "hetero", "--iters", "1", "--cqs", "1"][..], &["demo"][..]] {
        let mut c = Command::new(CQLAB);
        c.args(args).args(["--device", &device, "--chip", "blackhole-p150a"]);
        let o = run(c);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("usage:") && err.contains("simulates a wormhole-n150"), "{args:?}: {err}");
    }
    // A harvesting the daemon's chip cannot have is named as such (it was
    // "restart the daemon with --harvest rows=6", which refuses it too).
    let mut c = Command::new(CQLAB);
    c.args(["demo", "--device", &device, "--harvest", "rows=6"]);
    let o = run(c);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(err.contains("no Tensix row 6") && !err.contains("restart"), "{err}");
}

/// A daemon runs the timing model its options name and says which, and a
/// run over it reports Blackhole's L0 data caches as the embedded run of
/// the same seed and model does (both were missing: a daemon always ran
/// the default model and reported no L0 figures).
#[test]
fn a_daemon_names_its_timing_model_and_reports_its_l0_caches() {
    for (name, options, words) in [
        ("l0", &[][..], ""),
        ("no-l0", &["--no-l0-cache", "--exact-time", "--reads-wait-unsent"][..], ",exact,no-l0,reads-wait-unsent"),
    ] {
        let dir = scratch_dir(name);
        std::fs::create_dir_all(&dir).unwrap();
        let d = Daemon::start_on(dir, 3, "", &SMALL_BLACKHOLE, 4, options);
        let spec = format!("sim:{}", d.dir.display());
        let mut c = Command::new(CQLAB);
        c.args(["status", "--json", "--device", &spec]);
        let o = run(c);
        assert!(o.status.success(), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("status --json is JSON");
        assert_eq!(v["model"]["l0_cache"], words.is_empty(), "{name}: {v}");
        assert_cores_by_x_and_y(&v["cores"]);
        assert_eq!(v["model"]["exact_time"], !words.is_empty(), "{name}: {v}");
        assert_eq!(v["model"]["reads_pass_unsent"], words.is_empty(), "{name}: {v}");
        let l0_of = |device: &str, chip: &[&str]| {
            let mut c = Command::new(CQLAB);
            c.args(["run", "hetero", "--programs", "4", "--iters", "1", "--warmup", "0", "--cqs", "1", "--json", "-"])
                .args(["--device", device])
                .args(chip);
            let o = run(c);
            assert!(o.status.success(), "{device}: {}", text(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("run --json is JSON");
            v["points"][0]["l0_cache"].clone()
        };
        let daemon = l0_of(&spec, &[]);
        assert_eq!(daemon, l0_of(&format!("embedded:seed=3{words}"), &SMALL_BLACKHOLE), "{name}");
        match words {
            "" => assert!(daemon["hits"].as_u64().is_some_and(|h| h > 0) && daemon["stale_hits"] == 0, "{daemon}"),
            _ => assert!(daemon.is_null(), "{name}: {daemon}"),
        }
        // A second run reports its own part of the caches' work, not the
        // daemon's since power-on.
        if let Some(first) = daemon["hits"].as_u64() {
            let second = l0_of(&spec, &[])["hits"].as_u64().expect("hits");
            assert!(second < first * 3 / 2, "{name}: the second run counted {second} hits, the first {first}");
        }
        // Its harvesting without --chip is checked against the chip it
        // reports (it was read as a wormhole-n150's and refused).
        // A demo on a daemon that served others counts its own device time
        // (it counted the daemon's clock from power-on).
        let demo = || {
            let mut c = Command::new(CQLAB);
            c.args(["demo", "--rounds", "1", "--json", "--device", &spec, "--harvest", SMALL_BLACKHOLE[3]]);
            let o = run(c);
            assert!(o.status.success(), "{name}: {}", text(&o));
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("demo --json is JSON");
            v["device_cycles"].as_u64().expect("device cycles")
        };
        let (first, second) = (demo(), demo());
        assert!(second < first * 3 / 2, "{name}: the second demo took {second} cycles, the first {first}");
    }
}

/// After a daemon restart a client of the one before may still hold the
/// lock file: `status` says so instead of "held by nobody". A pid file
/// naming a live process that is no daemon (a reused pid) is no daemon:
/// the client says so at once instead of retrying.
#[test]
fn status_names_a_lock_holder_and_a_reused_pid_is_no_daemon() {
    let mut d = Daemon::start("relock", 3);
    let holder = support::hold_device(&d.dir, 30);
    // Stopped, it keeps the lock file's lock past its daemon's death (a
    // running holder notices the closed connection and exits); killed on
    // the way out, pass or fail.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let holder = Killed(holder);
    assert!(Command::new("kill").args(["-STOP", &holder.0.id().to_string()]).status().unwrap().success());
    let _ = d.child.kill();
    let _ = d.child.wait();
    // The killed daemon's socket would read as the new one's.
    std::fs::remove_file(d.dir.join("sock")).unwrap();
    let restarted = Daemon::start_in(d.dir.clone(), 3, "", &[]);
    let device = format!("sim:{}", restarted.dir.display());
    let o = support::cqlab(&["status", "--device", &device]);
    let said = text(&o);
    let pid = holder.0.id();
    drop(holder);
    assert!(o.status.success() && said.contains(&format!("nobody attached (pid {pid} holds the lock file")), "{said}");
    drop(restarted);
    // A socket that refuses and a pid file naming this test (alive, no daemon).
    let dir = scratch_dir("reused-pid");
    std::fs::create_dir_all(&dir).unwrap();
    drop(std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap());
    std::fs::write(dir.join("pid"), std::process::id().to_string()).unwrap();
    let start = Instant::now();
    let o = support::cqlab(&["status", "--device", &format!("sim:{}", dir.display())]);
    assert!(!o.status.success() && text(&o).contains("no live daemon pid"), "{}", text(&o));
    assert!(start.elapsed() < Duration::from_secs(2), "retried as if a daemon were restarting");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- Security and ownership (issue 14) ----------------------------------

use cqlab_sim::daemon::proto::{self, Reply, Request};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;

/// A raw connection to the daemon, below the driver's client.
fn raw(d: &Daemon) -> UnixStream {
    let s = UnixStream::connect(d.dir.join("sock")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn raw_call(s: &UnixStream, req: &Request) -> Result<Vec<u8>, String> {
    let mut w = s;
    proto::write_frame(&mut w, &req.encode()).map_err(|e| e.to_string())?;
    let frame = proto::read_frame(&mut w).map_err(|e| e.to_string())?.ok_or("connection closed")?;
    Reply::decode(&frame).map_err(|e| e.to_string())?.result
}

#[test]
fn device_files_are_private_whatever_the_umask() {
    let dir = scratch_dir("umask");
    let d = Daemon::start_in(dir, 3, "umask 000;", &[]);
    assert_eq!(mode(&d.dir), 0o700, "device directory");
    for f in ["sock", "sysmem", "lock", "pid"] {
        assert_eq!(mode(&d.dir.join(f)), 0o600, "{f}");
    }
    // An existing directory of ours with a loose mode is tightened.
    drop(d);
    let dir = scratch_dir("umask-existing");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let d = Daemon::start_in(dir, 3, "umask 000;", &[]);
    assert_eq!(mode(&d.dir), 0o700);
}

#[test]
fn a_directory_of_another_user_is_refused_and_its_symlink_not_followed() {
    if !root_or_skip("a_directory_of_another_user_is_refused_and_its_symlink_not_followed") {
        return;
    }
    // The attack from the issue: another user's directory holding
    // `sysmem -> victim`, where root runs `sim serve`.
    let dir = scratch_dir("foreign");
    let victim = support::plant_foreign_symlink(&dir);
    let mut c = Command::new(CQLAB);
    c.args(["sim", "serve", "--sysmem-mib", "4", "--dev"]).arg(&dir);
    let out = run(c);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("owned by uid 65534"), "{}", text(&out));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "victim touched");
    // The same symlink in a directory of our own: refused, not followed.
    std::os::unix::fs::lchown(&dir, Some(0), Some(0)).unwrap();
    let mut c = Command::new(CQLAB);
    c.args(["sim", "serve", "--sysmem-mib", "4", "--dev"]).arg(&dir);
    let out = run(c);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"), "{}", text(&out));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "victim touched");
    std::fs::remove_file(&victim).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_peer_of_another_uid_is_refused() {
    if !root_or_skip("a_peer_of_another_uid_is_refused") {
        return;
    }
    // Even with the directory and socket opened up to everyone (umask 000
    // in the issue), the daemon refuses nobody by its credentials.
    let d = Daemon::start("peercred", 4);
    assert!(bar(&d, &["--write", "0x1234"]).status.success());
    std::fs::set_permissions(&d.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    for f in ["sock", "sysmem", "lock"] {
        std::fs::set_permissions(d.dir.join(f), std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let as_nobody = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", CQLAB]).args(args).arg("--dev").arg(&d.dir);
        run(c)
    };
    let addr = format!("{:#x}", USER.base + 0x40);
    let w = as_nobody(&["sim", "bar", "--worker", "1,1", "--addr", &addr, "--write", "0x666"]);
    assert!(!w.status.success(), "{}", text(&w));
    assert!(String::from_utf8_lossy(&w.stderr).contains("peer uid 65534"), "{}", text(&w));
    let stop = as_nobody(&["sim", "stop", "--force"]);
    assert!(!stop.status.success(), "{}", text(&stop));
    let back = bar(&d, &[]);
    assert_eq!(String::from_utf8_lossy(&back.stdout).trim(), "0x00001234", "{}", text(&back));
}

/// A request whose client gave up before the daemon read it is dropped,
/// not carried out late: a forced stop sent to a SIGSTOPped daemon, whose
/// client then timed out and left, stopped the daemon when it resumed (67 s
/// later, helper-48), after the client had reported failure.
#[test]
fn a_request_whose_client_gave_up_is_not_carried_out() {
    let mut d = Daemon::start("gave-up", 3);
    let pid = d.child.id().to_string();
    assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
    {
        let s = raw(&d);
        let mut w = &s;
        proto::write_frame(&mut w, &Request::Stop { force: true }.encode()).unwrap();
    }
    assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
    let start = Instant::now();
    while !d.log().contains("dropped STOP") {
        assert!(start.elapsed() < Duration::from_secs(10), "the dropped STOP was not logged: {}", d.log());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(d.child.try_wait().unwrap().is_none(), "the daemon stopped: {}", d.log());
    let mut c = Command::new(CQLAB);
    c.args(["status", "--device", &format!("sim:{}", d.dir.display())]);
    let o = run(c);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn only_the_owner_may_attach_reset_or_stop() {
    let d = Daemon::start("owner", 5);
    // A wrong-version HELLO with nobody attached: refused, nothing quiesced.
    let s = raw(&d);
    let err = raw_call(&s, &Request::Hello { version: proto::VERSION - 1, pid: 1 }).unwrap_err();
    assert!(err.contains(&format!("protocol version {}", proto::VERSION - 1)), "{err}");
    assert!(!d.log().contains("attached"), "a refused HELLO was logged as an attach: {}", d.log());
    // Requests that need ownership are refused before HELLO.
    let err = raw_call(&s, &Request::Poll { cycles: 10 }).unwrap_err();
    assert!(err.contains("has not attached"), "{err}");

    // A client job runs; raw HELLO, RESET, WRITE and a plain stop from
    // others are refused meanwhile and the job completes undisturbed.
    let mut job = client_job(&d.dir, 7, 200).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(job.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("booted"), "{line:?}");
    let other = raw(&d);
    let err = raw_call(&other, &Request::Hello { version: proto::VERSION, pid: 1 }).unwrap_err();
    assert!(err.contains(&format!("device held by pid {}", job.id())), "{err}");
    let err = raw_call(&other, &Request::Reset).unwrap_err();
    assert!(err.contains("RESET refused: the device is held by"), "{err}");
    let err = raw_call(&other, &Request::Write { addr: 0, data: vec![1] }).unwrap_err();
    assert!(err.contains("WRITE refused"), "{err}");
    let stop = d.cqlab(&["sim", "stop"]);
    assert!(!stop.status.success(), "{}", text(&stop));
    assert!(String::from_utf8_lossy(&stop.stderr).contains("--force"), "{}", text(&stop));
    // Read-only requests need no ownership.
    let status = proto::Status::decode(&raw_call(&other, &Request::Status).unwrap()).unwrap();
    assert_eq!(status.owner_pid, job.id());
    let mut out = String::new();
    job.stdout.as_mut().unwrap().read_to_string(&mut out).unwrap();
    let done = job.wait().unwrap();
    assert!(done.success() && out.contains("200 rounds of 2048 bytes verified"), "{out}");

    // `sim stop --force` stops a daemon that a client holds.
    let mut held = support::hold_device(&d.dir, 20);
    let stop = d.cqlab(&["sim", "stop", "--force"]);
    assert!(stop.status.success(), "{}", text(&stop));
    // The holder notices and fails (it held its 20 s and exited 0).
    let start = Instant::now();
    let ended = loop {
        if let Some(status) = held.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = held.kill();
            panic!("the holder did not notice the forced stop in 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(ended.code(), Some(1), "the holder of a device stopped under it");
    let start = Instant::now();
    while d.dir.join("sock").exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "timeout waiting for the forced stop");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Resident set of process `pid` in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kb * 1024
}

#[test]
fn frames_and_connections_are_capped() {
    let d = Daemon::start("caps", 6);
    let pid = d.child.id();
    assert!(bar(&d, &[]).status.success());
    let before = rss(pid);
    // The attack: connections that each announce a huge frame and
    // send part of it. Each costs only what it sent, and the number of
    // connections is capped.
    use std::io::Write;
    let mut open = Vec::new();
    for _ in 0..cqlab_sim::daemon::server::MAX_CONNECTIONS {
        let mut s = raw(&d);
        s.write_all(&(proto::MAX_FRAME as u32).to_le_bytes()).unwrap();
        s.write_all(&[2; 4096]).unwrap();
        open.push(s);
    }
    let extra = raw(&d);
    let mut r = &extra;
    let refused = proto::read_frame(&mut r).unwrap().map(|f| Reply::decode(&f).unwrap().result);
    assert!(
        matches!(&refused, Some(Err(m)) if m.contains("connections already open")),
        "connection past the cap: {refused:?}"
    );
    // Let the daemon read what was sent, then measure.
    std::thread::sleep(Duration::from_millis(200));
    let grown = rss(pid).saturating_sub(before);
    assert!(grown < 16 << 20, "the daemon grew by {grown} bytes for {} partial frames", open.len());
    // A frame over the cap is refused with a reason.
    let big = raw(&d);
    let mut w = &big;
    w.write_all(&(proto::MAX_FRAME as u32 + 1).to_le_bytes()).unwrap_or(());
    drop(open);
    let mut r = &big;
    if let Ok(Some(f)) = proto::read_frame(&mut r) {
        let e = Reply::decode(&f).unwrap().result.unwrap_err();
        assert!(e.contains("bad frame") || e.contains("connections already open"), "{e}");
    }
    // Once those connections close the daemon serves again.
    let start = Instant::now();
    loop {
        let o = bar(&d, &[]);
        if o.status.success() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "daemon unusable after the caps: {}", text(&o));
        std::thread::sleep(Duration::from_millis(50));
    }
    // A frame over the cap, on a fresh connection: refused with its reason.
    let big = raw(&d);
    let mut w = &big;
    w.write_all(&(proto::MAX_FRAME as u32 + 1).to_le_bytes()).unwrap();
    let mut r = &big;
    let f = proto::read_frame(&mut r).unwrap().expect("a reply");
    let e = Reply::decode(&f).unwrap().result.unwrap_err();
    assert!(e.contains("bad frame") && e.contains(&format!("> {}", proto::MAX_FRAME)), "{e}");
}

/// Silent connections (nothing sent, or half a frame) fill the cap only
/// for the idle timeout: each is then told why and closed, and `sim stop`
/// gets through. The owner may stay silent longer and keeps the device.
#[test]
fn silent_connections_are_closed_after_the_idle_timeout() {
    use std::io::Write;
    let dir = scratch_dir("idle");
    std::fs::create_dir_all(&dir).unwrap();
    let d = Daemon::start_in(dir, 7, "", &["--idle-timeout", "1"]);
    let mut holder = support::hold_device(&d.dir, 30);
    let cap = cqlab_sim::daemon::server::MAX_CONNECTIONS;
    let silent: Vec<UnixStream> = (0..cap - 1)
        .map(|i| {
            let mut s = raw(&d);
            if i % 2 == 1 {
                s.write_all(&64u32.to_le_bytes()).unwrap();
                s.write_all(&[1; 8]).unwrap();
            }
            s
        })
        .collect();
    let extra = raw(&d);
    let mut r = &extra;
    let refused = proto::read_frame(&mut r).unwrap().map(|f| Reply::decode(&f).unwrap().result);
    assert!(
        matches!(&refused, Some(Err(m)) if m.contains("connections already open") && m.contains("after 1 s")),
        "connection past the cap: {refused:?}"
    );
    for (i, s) in silent.iter().enumerate() {
        let mut r = s;
        let why = proto::read_frame(&mut r)
            .unwrap_or_else(|e| panic!("silent connection {i} was not closed with a reason: {e}"))
            .map(|f| Reply::decode(&f).unwrap().result);
        let expected = if i % 2 == 1 { "not complete 1 s after its first byte" } else { "no request for 1 s" };
        assert!(matches!(&why, Some(Err(m)) if m.contains(expected)), "silent connection {i}: {why:?}");
        assert!(matches!(proto::read_frame(&mut r), Ok(None)), "silent connection {i} left open");
    }
    // The owner was silent as long and still holds the device.
    let stop = d.cqlab(&["sim", "stop"]);
    assert!(!stop.status.success() && text(&stop).contains("device held by pid"), "{}", text(&stop));
    let stop = d.cqlab(&["sim", "stop", "--force"]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(stop.status.success(), "{}", text(&stop));
    assert!(d.log().contains("silent for 1 s without holding the device"), "{}", d.log());
}

/// A client whose daemon was killed and restarted under it names the
/// daemon it talked to as gone and the new one as another (helper-78: it
/// said the new daemon "is running but did not answer").
#[test]
fn a_client_of_a_restarted_daemon_is_told_its_daemon_is_gone() {
    let dir = scratch_dir("restarted");
    std::fs::create_dir_all(&dir).unwrap();
    let mut first = Daemon::start_in(dir.clone(), 10, "", &[]);
    let mut job = client_job(&dir, 7, 100_000)
        .env("CQLAB_FIRMWARE_DIR", firmware_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(job.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("booted"), "{line:?}");
    let signal =
        |sig: &str, pid: u32| assert!(Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
    signal("-STOP", job.id());
    let old = first.child.id();
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let second = Daemon::start_in(dir.clone(), 10, "", &[]);
    let new = second.child.id();
    let start = Instant::now();
    while std::fs::read_to_string(dir.join("pid")).unwrap_or_default().trim() != new.to_string() {
        assert!(start.elapsed() < Duration::from_secs(10), "the second daemon never wrote its pid");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal("-CONT", job.id());
    let start = Instant::now();
    while job.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < PROCESS_TIMEOUT, "the continued client did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = job.wait_with_output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!("the daemon this run attached to, pid {old}, is gone; pid {new} serves the directory now");
    assert!(err.contains(&expected), "{err}");
    drop(second);
}

/// The owner may stop in the middle of a request (SIGSTOP, a debugger)
/// for longer than the idle timeout and go on: helper-78 found half a
/// WRITE held 11 s cut off, and the device lost.
#[test]
fn the_owner_may_pause_in_the_middle_of_a_request() {
    use std::io::Write;
    let dir = scratch_dir("owner-pause");
    std::fs::create_dir_all(&dir).unwrap();
    let d = Daemon::start_in(dir, 8, "", &["--idle-timeout", "0.3"]);
    let s = raw(&d);
    raw_call(&s, &Request::Hello { version: proto::VERSION, pid: std::process::id() }).unwrap();
    let data = vec![0x5a; 4096];
    // DRAM bank 0 (NOC0 (0,0)): every Wormhole harvesting keeps it.
    let write = Request::Write { addr: NocAddr::unicast(Coord::new(0, 0), 0x10000).0, data: data.clone() };
    let frame = write.encode();
    let mut w = &s;
    w.write_all(&(frame.len() as u32).to_le_bytes()).unwrap();
    w.write_all(&frame[..frame.len() / 2]).unwrap();
    // Three idle timeouts with half the frame sent.
    std::thread::sleep(Duration::from_millis(900));
    w.write_all(&frame[frame.len() / 2..]).unwrap();
    let mut r = &s;
    let reply = proto::read_frame(&mut r).unwrap().map(|f| Reply::decode(&f).unwrap().result);
    assert!(matches!(reply, Some(Ok(_))), "the paused WRITE: {reply:?}; log: {}", d.log());
    let read = Request::Read { addr: NocAddr::unicast(Coord::new(0, 0), 0x10000).0, len: 4096 };
    assert_eq!(raw_call(&s, &read).unwrap(), data, "the paused WRITE landed whole");
    assert!(!d.log().contains("dropped connection"), "{}", d.log());
}

/// A daemon out of file descriptors says so once and backs off, rather
/// than spinning a core on the connection accept cannot take (helper-78:
/// ~67 % of a core under `ulimit -n 12`), and serves again once clients
/// close.
#[test]
fn a_daemon_out_of_file_descriptors_says_so_once_and_does_not_spin() {
    let dir = scratch_dir("emfile");
    std::fs::create_dir_all(&dir).unwrap();
    let d = Daemon::start_in(dir, 9, "ulimit -n 12;", &[]);
    let conns: Vec<UnixStream> = (0..12).map(|_| raw(&d)).collect();
    let start = Instant::now();
    while !d.log().contains("cannot accept a connection") {
        assert!(start.elapsed() < Duration::from_secs(10), "accept never failed; log: {}", d.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let cpu = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", d.child.id())).unwrap();
        // utime and stime, fields 14 and 15, after the command name's ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<u64> = rest.split(' ').skip(11).take(2).map(|x| x.parse().unwrap()).collect();
        f[0] + f[1]
    };
    let (before, t) = (cpu(), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let ticks = cpu() - before;
    let hz = 100; // USER_HZ on Linux
    assert!(
        (ticks as f64) < 0.25 * hz as f64 * t.elapsed().as_secs_f64(),
        "the daemon used {ticks} ticks of CPU in {:?} while accept failed",
        t.elapsed()
    );
    let log = d.log();
    assert_eq!(log.matches("cannot accept a connection").count(), 1, "{log}");
    assert!(log.contains("out of file descriptors: raise `ulimit -n`"), "{log}");
    drop(conns);
    let start = Instant::now();
    loop {
        let o = bar(&d, &[]);
        if o.status.success() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "daemon unusable after the fd shortage: {}", text(&o));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_failed_start_leaves_nothing_behind() {
    // A socket path too long for bind (the 150 characters).
    let base = std::env::temp_dir().join(format!("cqlab-long-{}", std::process::id()));
    let dir = base.join("d".repeat(150));
    let mut c = Command::new(CQLAB);
    c.args(["sim", "serve", "--sysmem-mib", "4", "--dev"]).arg(&dir);
    let out = run(c);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unix sockets allow at most"), "{}", text(&out));
    assert!(!dir.exists() && !base.exists(), "a failed start left {} behind", dir.display());
    // A failure after sysmem was created (a file size limit it cannot be
    // sized within): every file the start created is removed again. (A
    // directory where the lock file goes did this; it is refused before
    // the start now.)
    let dir = scratch_dir("failed");
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = Command::new("sh");
    c.args(["-c", "ulimit -f 1024; trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(CQLAB)
        .args(["sim", "serve", "--sysmem-mib", "4"])
        .args(SMALL_WORMHOLE)
        .arg("--dev")
        .arg(&dir);
    let out = run(c);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sysmem to 4194304 bytes: File too large"), "{}", text(&out));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "a failed start left files behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A directory of the user's own files is no device directory: `sim serve`
/// and `sim ttkmd` deleted its `sysmem` (and `pid`, `ctl`, ...) without a
/// word, and made it 0700 even when they then failed. Now either refuses
/// it, exit 2, naming it and its first entry by name, and nothing in it
/// changes. (The `lock` directory made the old start fail after it had
/// deleted `sysmem`, instead of running on.)
#[test]
fn a_directory_of_the_users_files_is_refused_and_left_as_it_was() {
    let dir = scratch_dir("users-files");
    std::fs::create_dir_all(dir.join("lock")).unwrap();
    for (name, text) in [("notes.txt", "keep"), ("pid", "my notes"), ("sysmem", "precious")] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for sim in ["serve", "ttkmd"] {
        let mut c = Command::new(CQLAB);
        c.args(["sim", sim]).args(SMALL_WORMHOLE).arg("--dev").arg(&dir);
        let out = run(c);
        assert_eq!(out.status.code(), Some(2), "{sim}: {}", text(&out));
        let said = format!("{}: holds \"lock\", which is not a regular file", dir.display());
        assert!(String::from_utf8_lossy(&out.stderr).contains(&said), "{sim}: {said}\n{}", text(&out));
        assert_eq!(mode(&dir), 0o755, "{sim} changed the mode");
        let mut left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        left.sort();
        assert_eq!(left, ["lock", "notes.txt", "pid", "sysmem"], "{sim}");
        assert_eq!(std::fs::read_to_string(dir.join("sysmem")).unwrap(), "precious", "{sim}");
        assert_eq!(std::fs::read_to_string(dir.join("pid")).unwrap(), "my notes", "{sim}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each core state of `status --json` or `dump --json` names its core as
/// every JSON output does, `{"x": .., "y": ..}` (it was the string
/// "(18,18)"), beside its role; no two the same.
fn assert_cores_by_x_and_y(cores: &serde_json::Value) {
    let cores = cores.as_array().unwrap_or_else(|| panic!("cores: {cores}"));
    assert!(!cores.is_empty(), "no cores");
    let mut seen = std::collections::BTreeSet::new();
    for c in cores {
        let xy = c["core"].as_object().filter(|o| o.len() == 2);
        let at = xy.and_then(|o| Some((o.get("x")?.as_u64()?, o.get("y")?.as_u64()?)));
        let at = at.unwrap_or_else(|| panic!("core is not {{\"x\", \"y\"}}: {c}"));
        assert!(c["role"].is_string() && seen.insert(at), "{c}");
    }
}

#[test]
fn status_and_dump_work_mid_run_without_disturbing_it() {
    let d = Daemon::start("observe", 8);
    let cycle = |out: &str| {
        out.rsplit("device cycle ").next().and_then(|s| s.trim().parse::<u64>().ok()).expect("a device cycle")
    };
    let spec = format!("sim:{}", d.dir.display());
    let mut job = client_job(&d.dir, 9, 300).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = BufReader::new(job.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("booted"), "{line:?}");
    let mut observed = 0;
    // Observe while the job runs (at least once, as long as it runs).
    while observed == 0 || job.try_wait().unwrap().is_none() && observed < 6 {
        let status = run({
            let mut c = Command::new(CQLAB);
            c.args(["status", "--device", &spec]);
            c
        });
        let dump = run({
            let mut c = Command::new(CQLAB);
            c.args(["dump", "--json", "--device", &spec]);
            c
        });
        assert!(status.status.success() && dump.status.success(), "{}\n{}", text(&status), text(&dump));
        let s = String::from_utf8_lossy(&status.stdout);
        if job.try_wait().unwrap().is_none() {
            observed += 1;
            assert!(s.contains(&format!("held by pid {}", job.id())) || s.contains("held by nobody"), "{s}");
        }
        assert!(s.contains("CQ0 dispatcher") && s.contains("dispatch") && s.contains("device cycle"), "{s}");
        // A Wormhole has no L0 caches: its default model is the default.
        assert!(s.contains("timing model: the calibrated default\n"), "{s}");
        let v: serde_json::Value = serde_json::from_slice(&dump.stdout).expect("dump --json is JSON");
        // One queue's two cores and the small Wormhole's 8x1 compute grid.
        assert!(v["dump"]["cores"].as_array().is_some_and(|c| c.len() == 10), "{v}");
        assert_cores_by_x_and_y(&v["dump"]["cores"]);
        assert!(v["chains"][0]["chain"][0].as_str().is_some_and(|l| l.contains("CQ0")), "{v}");
    }
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(job.wait().unwrap().success(), "{rest}");
    assert!(observed > 0, "the job ended before it could be observed");
    let watched = cycle(&rest);
    // Idle now: its prefetchers wait for the host, which waits on nothing,
    // so a live dump names no deadlock (it said DEADLOCK on every queue).
    let idle = run({
        let mut c = Command::new(CQLAB);
        c.args(["dump", "--json", "--device", &spec]);
        c
    });
    let v: serde_json::Value = serde_json::from_slice(&idle.stdout).expect("dump --json is JSON");
    let chains = v["chains"].as_array().unwrap();
    assert!(!chains.is_empty(), "an idle dump names each queue's chain: {v}");
    for c in chains {
        assert_eq!(c["deadlock"], false, "{c}");
        assert!(c["chain"][1].as_str().is_some_and(|l| l.contains("HQW")), "{c}");
    }
    // The same job after a reset, unobserved: the same device time, so the
    // observers changed nothing the owner saw.
    assert!(d.cqlab(&["reset"]).status.success());
    let out = run(client_job(&d.dir, 9, 300));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(watched, cycle(&String::from_utf8_lossy(&out.stdout)), "seed 8: observers disturbed the run");
    // Status of a device that is not a daemon is a usage error.
    let mut c = Command::new(CQLAB);
    c.args(["status", "--device", "embedded"]);
    let o = run(c);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
