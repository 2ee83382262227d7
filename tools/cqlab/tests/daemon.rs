//! The simulator daemon end to end: real `cqlab sim serve` processes, real
//! client processes. Each test owns a temporary device directory and kills
//! its daemon when it ends, pass or fail (the guard's `Drop`). Every wait is
//! bounded and says what it waited for.

use cqlab_abi::memory_map::USER;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CQLAB: &str = env!("CARGO_BIN_EXE_cqlab");
/// A whole client job (attach, boot, a few rounds) takes well under this.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(30);

fn firmware_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CQLAB_FIRMWARE_DIR") {
        return dir.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("riscv32im-unknown-none-elf/firmware")
}

/// A running `cqlab sim serve`; killed and its directory removed on drop.
struct Daemon {
    child: Child,
    dir: PathBuf,
    log: PathBuf,
}

impl Daemon {
    fn start(name: &str, seed: u64) -> Daemon {
        let dir = std::env::temp_dir().join(format!("cqlab-daemon-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.with_extension("log");
        let child = Command::new(CQLAB)
            .args(["sim", "serve", "--grid", "2x2", "--cqs", "1", "--sysmem-mib", "4", "--seed"])
            .arg(seed.to_string())
            .arg("--dev")
            .arg(&dir)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawning cqlab sim serve");
        let d = Daemon { child, dir, log };
        let sock = d.dir.join("sock");
        let start = Instant::now();
        while !sock.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timeout waiting for the daemon socket {}",
                sock.display()
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
fn run(mut c: Command) -> Output {
    let what = format!("{c:?}");
    let mut child =
        c.env("CQLAB_FIRMWARE_DIR", firmware_dir()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = Instant::now();
    loop {
        if let Some(_status) = child.try_wait().unwrap() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > PROCESS_TIMEOUT {
            let _ = child.kill();
            panic!("timeout after {PROCESS_TIMEOUT:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn bar(d: &Daemon, extra: &[&str]) -> Output {
    let addr = format!("{:#x}", USER.base + 0x40);
    let mut args = vec!["sim", "bar", "--worker", "1,1", "--addr", &addr];
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
    c.args(["sim", "client-job", "--grid", "2x2", "--cqs", "1", "--bytes", "2048", "--seed"])
        .arg(seed.to_string())
        .args(["--rounds", &rounds.to_string(), "--dev"])
        .arg(dir);
    c
}

#[test]
fn a_hundred_host_processes_half_killed_mid_enqueue_leave_the_device_usable() {
    assert!(
        firmware_dir().join("dispatch").is_file(),
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
            let mut child = client_job(&d.dir, i, 100_000)
                .env("CQLAB_FIRMWARE_DIR", firmware_dir())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let out = child.stdout.take().unwrap();
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(out).read_line(&mut line);
                let _ = tx.send(line);
            });
            let booted = rx.recv_timeout(PROCESS_TIMEOUT);
            std::thread::sleep(delay);
            let _ = child.kill(); // SIGKILL
            let status = child.wait().unwrap();
            let line = booted.unwrap_or_else(|_| panic!("timeout waiting for process {i} to boot {replay}"));
            if !line.contains("booted") {
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("process {i} did not boot {replay}: {line}{err}");
            }
            assert!(status.code().is_none(), "process {i} finished before the kill {replay}: {status}");
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

#[test]
fn ctrl_c_stops_the_daemon_and_removes_its_socket() {
    let mut d = Daemon::start("sigint", 5);
    let kill = Command::new("kill").args(["-INT", &d.child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = d.child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "timeout waiting for the daemon to exit on SIGINT");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "daemon exit status {status}\n{}", d.log());
    assert!(!d.dir.join("sock").exists(), "socket left behind");
    assert!(d.log().contains("stopped by SIGINT"), "{}", d.log());
}

/// The same host program on a 2x2, one-CQ device; returns the device-state
/// digest and the device time at the end.
fn digest_after_program(dev: &mut cqlab_driver::Device) -> (u64, u64) {
    dev.boot().expect("boot");
    let buf = dev.alloc_dram(8192, 1024).unwrap();
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    let mut cq = dev.cq(0).unwrap();
    cq.write_buffer(&buf, 0, &data).unwrap();
    cq.launch(cqlab_driver::CoreRange::new((0, 0), (1, 1)), &[9]).unwrap();
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
    let cfg = cqlab_driver::DeviceConfig {
        worker_cols: 2,
        worker_rows: 2,
        num_cqs: 1,
        firmware_dir: firmware_dir(),
        ..Default::default()
    };
    let mut over_daemon = cqlab_driver::Device::open(&format!("sim:{}", d.dir.display()), cfg.clone()).unwrap();
    let daemon = digest_after_program(&mut over_daemon);
    drop(over_daemon);
    // The daemon's chip: 2x2 workers, one CQ, 4 MiB of sysmem (Daemon::start).
    let sim = cqlab_sim::config::SimConfig { seed, sysmem_size: 4 << 20, ..Default::default() };
    let mut embedded = cqlab_driver::Device::embedded(sim, cfg).unwrap();
    let local = digest_after_program(&mut embedded);
    assert_eq!(daemon, local, "seed {seed}: (digest, device time) over the daemon vs embedded");
    assert!(local.1 > 0);
}
