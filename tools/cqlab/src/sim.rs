//! `cqlab sim ...`: the simulator's subcommands.

use crate::exit::Exit;
use crate::out::{diagln, outln};
use anyhow::Context;
use cqlab_sim::bench::WORKLOADS;
use cqlab_sim::daemon::files::{self, Simulator};
use cqlab_sim::exec::{self, ExecOptions, Outcome};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "sim_daemon.rs"]
mod daemon;
#[path = "sim_ttkmd.rs"]
mod ttkmd;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Run a bare RV32IM ELF on one core.
    ///
    /// riscv-tests/HTIF convention: a non-zero store v to the symbol `tohost`
    /// ends the run; v == 1 passes (exit 0), otherwise test v >> 1 failed
    /// (exit 5, a mismatch). Without `tohost`, `ecall` exits with code a0
    /// (the program's own status, passed through). Exit 3 (a hang) when
    /// --max-cycles is reached, 2 for a bad ELF, 4 (a device error) when the
    /// hart halts without an answer (illegal instruction, misaligned
    /// access, fault).
    Exec(ExecArgs),
    /// Interpreter throughput: simulated MIPS beside native Rust doing the
    /// same work (use a release build).
    Bench(BenchArgs),
    /// Run the device as a long-lived daemon that host processes attach to
    /// with the device spec `sim:PATH`.
    ///
    /// Device memory lives in the daemon; host sysmem is the file PATH/sysmem,
    /// mapped by the daemon and by each client; BAR accesses and polls go over
    /// the Unix socket PATH/sock. The device advances only while a client
    /// polls and idles (keeping its state) while none is attached. One client
    /// at a time (flock on PATH/lock). Stop with Ctrl-C or `cqlab sim stop`.
    Serve(ServeArgs),
    /// Stop the daemon serving PATH (removes its socket). Refused while
    /// another client holds the device, unless --force.
    Stop(StopArgs),
    /// Run the device as shared memory for the tt-kmd backend (device spec `ttkmd-sim:PATH`).
    ///
    /// L1, registers, DRAM and sysmem are files under PATH that host processes map through the
    /// tt-kmd backend's TLB windows and pinned sysmem; the chip runs free (not deterministic).
    /// Stop with Ctrl-C.
    Ttkmd(TtkmdArgs),
    /// Read (or write, then read) one 32-bit word of a daemon's device
    /// through the BAR, without booting it.
    Bar(BarArgs),
    /// Crash-test helper: attach to a daemon, boot, run CQ work, verify.
    #[command(hide = true)]
    ClientJob(ClientJobArgs),
}

#[derive(clap::Args)]
pub struct StopArgs {
    /// The daemon's device directory.
    #[arg(long)]
    dev: PathBuf,
    /// Stop it even while a client holds the device (that client then fails).
    #[arg(long)]
    force: bool,
}

/// The simulated chip a `sim serve` or `sim ttkmd` device runs.
#[derive(clap::Args)]
pub struct ChipArgs {
    /// Seed of the scheduler, jitter and faults.
    #[arg(long, default_value_t = 0, value_parser = crate::cli::seed)]
    seed: u64,
    #[command(flatten)]
    chip: crate::chip::ChipOpt,
    /// Host sysmem size in MiB (a sparse file; at most 4096, at least what
    /// the default command queues take: 3, 4 for `sim ttkmd`, whose clients
    /// pin it in whole TLB windows).
    #[arg(long, default_value_t = 64)]
    sysmem_mib: u32,
    #[command(flatten)]
    model: crate::model::ModelOpt,
}

/// Most `--sysmem-mib`.
const MAX_SYSMEM_MIB: u32 = 4096;

/// The least `--sysmem-mib` of `sim`'s device (a smaller one started, then
/// failed every client, and `status` and `dump`), with why: the sysmem the
/// driver's default configuration needs for its queues (cqlab-abi's layout;
/// every client boots that many unless told fewer, and `status` and `dump`
/// read them on a device not booted yet), as a tt-kmd client pins it.
fn least_sysmem(sim: Simulator) -> (u32, String) {
    let cfg = cqlab_driver::DeviceConfig::default();
    let need = cfg.sysmem_needed();
    let queues = format!(
        "the sysmem holds the command queues, and the default {} (what a client boots unless told fewer{}) take \
         {need} bytes",
        cfg.num_cqs,
        if sim == Simulator::Serve { ", and what `status` and `dump` read" } else { "" }
    );
    let (bytes, why) = match sim {
        Simulator::Serve => (need, queues),
        Simulator::Ttkmd => {
            let pinned = cqlab_driver::ttkmd::backend::pinned_sysmem_len(&cfg) as u64;
            (pinned, format!("{queues}, which a tt-kmd client pins in whole TLB windows, {pinned} bytes"))
        }
    };
    let least = bytes.div_ceil(1 << 20) as u32;
    (least, format!("{why}, so at least {least} MiB"))
}

impl ChipArgs {
    /// The chip configuration of `sim`'s device, checked before any file is created.
    fn config(&self, sim: Simulator) -> anyhow::Result<cqlab_sim::config::SimConfig> {
        let (least, why) = least_sysmem(sim);
        let mib = self.sysmem_mib;
        crate::usage::ensure(mib >= least, || {
            format!("--sysmem-mib {mib} is not in {least}..={MAX_SYSMEM_MIB}: {why}")
        })?;
        crate::usage::ensure(mib <= MAX_SYSMEM_MIB, || {
            format!("--sysmem-mib {mib} is not in {least}..={MAX_SYSMEM_MIB}")
        })?;
        let mut cfg =
            cqlab_sim::config::SimConfig { sysmem_size: (self.sysmem_mib as usize) << 20, ..self.chip.sim(self.seed)? };
        self.model.model().apply(&mut cfg);
        cfg.validate().map_err(|e| crate::cli::Usage(format!("the device's chip configuration: {e}")))?;
        Ok(cfg)
    }
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Device directory: socket, sysmem file, lock. Created 0700 if
    /// missing; an existing one must belong to you and hold nothing but a
    /// stopped simulator's files (it is made 0700).
    #[arg(long)]
    dev: PathBuf,
    #[command(flatten)]
    chip: ChipArgs,
    /// Do not log attaches, resets, recoveries and closed connections.
    #[arg(long)]
    quiet: bool,
    /// Close a connection that does not hold the device after this many
    /// seconds (0.1..=86400) without a request, and one whose request has
    /// not arrived whole this long after its first byte (silent connections
    /// would otherwise fill the 16-connection cap and lock everyone out).
    #[arg(long, default_value_t = cqlab_sim::daemon::server::DEFAULT_IDLE_TIMEOUT.as_secs_f64(), value_parser = parse_idle_timeout)]
    idle_timeout: f64,
}

fn parse_idle_timeout(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.1..=86_400.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("{v} seconds is outside 0.1..=86400")),
        Err(_) => Err(format!("expected a number of seconds, got {s:?}")),
    }
}

#[derive(clap::Args)]
pub struct TtkmdArgs {
    /// Device directory (created if missing; an existing one must belong to you and hold
    /// nothing but a stopped simulator's files; they are recreated zeroed).
    #[arg(long)]
    dev: PathBuf,
    /// The tt-kmd release the simulated kernel answers as and behaves like where releases
    /// differ (resets, O_EXCL opens), for every client: 2.0.0 through 2.10.1 (default 2.10.1).
    #[arg(long, value_name = "X.Y.Z", value_parser = ttkmd::driver_version)]
    driver_version: Option<(u8, u8, u8)>,
    #[command(flatten)]
    chip: ChipArgs,
}

#[derive(clap::Args)]
pub struct BarArgs {
    /// The daemon's device directory.
    #[arg(long)]
    dev: PathBuf,
    /// Compute core, logical COL,ROW on the daemon's chip (with the
    /// default two command queues placed).
    #[arg(long, value_parser = crate::args::worker)]
    worker: (u8, u8),
    /// Local address in the core (L1 or a register), decimal or 0x hex, 4-byte aligned, below 2^32.
    #[arg(long, value_parser = local_addr)]
    addr: u64,
    /// Value to write first (32 bits).
    #[arg(long, value_parser = parse_u32)]
    write: Option<u32>,
    /// Keep the device attached this many seconds afterwards (0..=3600;
    /// ownership tests).
    #[arg(long, default_value_t = 0.0, value_parser = parse_hold)]
    hold: f64,
}

fn local_addr(s: &str) -> Result<u64, String> {
    let v = crate::args::u64_any_base(s)?;
    if v > u32::MAX as u64 || v % 4 != 0 {
        return Err(format!("{v:#x}: a core's local address is 4-byte aligned and below 2^32"));
    }
    Ok(v)
}

fn parse_u32(s: &str) -> Result<u32, String> {
    let v = crate::args::u64_any_base(s)?;
    u32::try_from(v).map_err(|_| format!("{v:#x} does not fit in 32 bits"))
}

fn parse_hold(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=3600.0).contains(&v) => Ok(v),
        _ => Err(format!("expected seconds in 0..=3600, found {s:?}")),
    }
}

#[derive(clap::Args)]
pub struct ClientJobArgs {
    #[arg(long)]
    dev: PathBuf,
    /// Seed of the data written.
    #[arg(long, default_value_t = 0, value_parser = crate::cli::seed)]
    seed: u64,
    /// Rounds of write, launch, read back, verify (1..=100000).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    rounds: u32,
    /// Bytes per buffer write (16..=16777216, a multiple of 16).
    #[arg(long, default_value_t = 4096, value_parser = parse_bytes)]
    bytes: u32,
    /// Command queues to boot (1..=16); the job runs on CQ0 over every compute core.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=cqlab_abi::noc::MAX_CQS as i64))]
    cqs: u8,
    /// Open the device through the tt-kmd backend (`ttkmd-sim:DEV`) instead of the daemon.
    #[arg(long)]
    ttkmd: bool,
}

fn parse_bytes(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(v) if (16..=16 << 20).contains(&v) && v % 16 == 0 => Ok(v),
        _ => Err(format!("expected a multiple of 16 in 16..=16777216, found {s:?}")),
    }
}

#[derive(clap::Args)]
pub struct ExecArgs {
    /// The ELF to run.
    file: PathBuf,
    /// Stop after this many device cycles (1..=10000000000000).
    #[arg(long, default_value_t = 10_000_000_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000_000_000))]
    max_cycles: u64,
    /// Print every retired instruction (cycle, pc, word, disassembly, result).
    #[arg(long)]
    trace: bool,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Loop iterations per workload (1..=1000000000).
    #[arg(long, default_value_t = 20_000_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    iters: u32,
    /// Device cycles of the chip ping-pong (1..=100000000000).
    #[arg(long, default_value_t = 50_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000_000))]
    chip_cycles: u64,
    /// The chip's scheduling slice in cycles (`SimConfig::quantum_cycles`;
    /// default: the calibrated model's 50; 1..=100000): how much of the
    /// polling rows' cost is the slice. Under exact time a slice is also
    /// capped at the NOC's lookahead. Another slice is another model: the
    /// ping-pong's round trips round to it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    quantum: Option<u64>,
    /// Print one JSON object (the loops, the chip's scenarios, its memory)
    /// instead of the tables, for comparing builds by script.
    #[arg(long)]
    json: bool,
}

/// A `--dev` refusal is a bad argument (exit 2). An I/O error looking at
/// the path is left to the start, which names it (exit 1, as before).
fn dev_refused(r: Result<(), files::FileError>) -> anyhow::Result<()> {
    match r {
        Err(e @ files::FileError::Refused { .. }) => Err(crate::cli::Usage(format!("--dev {e}")).into()),
        _ => Ok(()),
    }
}

/// Checks before any work: paths and what clap cannot see.
pub fn validate(cmd: &Command) -> anyhow::Result<()> {
    // Created with its parents when missing; else a real directory of ours
    // holding only a simulator's files: what the start checks again, here
    // so that a refusal is a usage error (a symlink exited 1, a file 2).
    let dev_dir = |dev: &Path| dev_refused(files::check_dir(dev).map(|_| ()));
    match cmd {
        Command::Exec(a) => crate::input::check_file("ELF", &a.file)?,
        Command::Serve(a) => {
            let paths = files::DevicePaths::new(&a.dev);
            dev_refused(files::check_socket_path(&paths))?;
            dev_dir(&a.dev)?;
            a.chip.config(Simulator::Serve)?;
        }
        Command::Ttkmd(a) => {
            dev_dir(&a.dev)?;
            a.chip.config(Simulator::Ttkmd)?;
        }
        _ => {}
    }
    Ok(())
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Exec(args) => exec(args),
        Command::Bench(args) => bench(args),
        Command::Serve(a) => {
            let opts = cqlab_sim::daemon::server::ServeOptions {
                quiet: a.quiet,
                idle_timeout: std::time::Duration::from_secs_f64(a.idle_timeout),
            };
            daemon::serve(&a.dev, a.chip.config(Simulator::Serve)?, opts)
        }
        Command::Stop(a) => {
            let pid = cqlab_driver::daemon_backend::stop_daemon(&a.dev, a.force)?;
            let pid = pid.map_or("?".into(), |p| p.to_string());
            diagln!("{}: daemon pid {pid} stopped", a.dev.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Ttkmd(a) => {
            ttkmd::serve(&a.dev, a.chip.config(Simulator::Ttkmd)?, a.driver_version)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::ClientJob(a) => client_job(a),
        Command::Bar(a) => bar(a),
    }
}

fn exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let bytes = crate::input::read_bytes("ELF", &args.file, crate::input::MAX_DUMP_BYTES)?;
    let opts = ExecOptions { max_cycles: args.max_cycles, ..Default::default() };
    let mut out = crate::out::Stream;
    let trace: Option<&mut dyn Write> = if args.trace { Some(&mut out) } else { None };
    let report = match exec::run_elf(&bytes, &opts, trace) {
        Ok(r) => r,
        Err(exec::ExecError::Elf(e)) => {
            return Err(crate::cli::Usage(format!("{}: {e}", args.file.display())).into());
        }
        // Stdout failed (a full disk): `out::finish` reports it, exit 1.
        Err(exec::ExecError::Trace(_)) if crate::out::gone() => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e).context("running the ELF"),
    };
    let name = args.file.display();
    let stats = format!("{} instructions, {} cycles", report.instret, report.cycles);
    Ok(match report.outcome {
        Outcome::Pass => {
            diagln!("{name}: PASS ({stats})");
            ExitCode::SUCCESS
        }
        Outcome::Fail { test, value } => {
            diagln!("{name}: FAIL: test {test} failed (tohost = {value:#x}) at pc {:#010x} ({stats})", report.pc);
            Exit::Mismatch.into()
        }
        Outcome::Exit { code } => {
            diagln!("{name}: exit {code} ({stats})");
            ExitCode::from(exit_status(code))
        }
        Outcome::MaxCycles => {
            diagln!("{name}: stopped after --max-cycles {} at pc {:#010x} ({stats})", args.max_cycles, report.pc);
            Exit::Hang.into()
        }
        Outcome::Halted(h) => {
            let recent: Vec<String> = report.last_pcs.iter().take(8).map(|pc| format!("{pc:#x}")).collect();
            diagln!("{name}: halted: {h} ({stats}); last retired pcs: {}", recent.join(" "));
            Exit::Device.into()
        }
    })
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if cfg!(debug_assertions) {
        diagln!("note: debug build; run `cargo run --release -p cqlab -- sim bench` for real figures");
    }
    let mut loops = Vec::new();
    for w in &WORKLOADS {
        let spin = crate::cli::spinner(&format!("measuring {}", w.name));
        let m = w.measure(args.iters);
        spin.finish_and_clear();
        let m = m?;
        loops.push(serde_json::json!({
            "name": w.name,
            "description": w.description,
            "guest_instrs": m.instret,
            "device_cycles": m.cycles,
            "sim_seconds": m.sim_time.as_secs_f64(),
            "sim_mips": m.sim_mips(),
            "device_mcycles_per_s": m.sim_mcycles_per_s(),
            "native_mips": m.native_mips(w),
        }));
    }
    let chip = chip_bench(args.chip_cycles, args.quantum)?;
    if args.json {
        outln!("{}", serde_json::json!({ "iters": args.iters, "loops": loops, "chip": chip }));
        return Ok(ExitCode::SUCCESS);
    }
    outln!("cqlab sim bench: one hart, interpreter throughput, {} iterations per workload", args.iters);
    outln!(
        "{:<6} {:>14} {:>10} {:>10} {:>14} {:>14} {:>12}",
        "loop",
        "guest instrs",
        "sim time",
        "sim MIPS",
        "dev Mcycles/s",
        "native MIPS*",
        "native/sim"
    );
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or_default();
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_default();
    for l in &loops {
        outln!(
            "{:<6} {:>14} {:>9.3}s {:>10.1} {:>14.1} {:>14.1} {:>11.1}x",
            l["name"].as_str().unwrap_or_default(),
            n(l, "guest_instrs"),
            f(l, "sim_seconds"),
            f(l, "sim_mips"),
            f(l, "device_mcycles_per_s"),
            f(l, "native_mips"),
            f(l, "native_mips") / f(l, "sim_mips")
        );
    }
    outln!("");
    for w in &WORKLOADS {
        outln!("{:<6} {}", w.name, w.description);
    }
    outln!("* native MIPS: the same loop in Rust on the host, counted in guest-instruction equivalents.");
    outln!("");
    outln!(
        "chip: {} ({}), {} Tensix tiles of 5 cores, L1 {} KiB, quantum {} cycles, {} L1 loads, {}; ping-pong = 2 \
         BRISCs alternately NOC-incrementing each other's L1 semaphore and polling their own",
        chip["board"].as_str().unwrap_or_default(),
        chip["harvesting"].as_str().unwrap_or_default(),
        n(&chip, "tiles"),
        n(&chip, "l1_kib"),
        n(&chip, "quantum_cycles"),
        if chip["pipelined_loads"].as_bool().unwrap_or(false) { "pipelined" } else { "blocking" },
        if chip["link_contention"].as_bool().unwrap_or(false) { "link contention" } else { "no link contention" }
    );
    outln!(
        "{:<68} {:>14} {:>10} {:>16} {:>12} {:>14}",
        "scenario",
        "device cycles",
        "host time",
        "dev Mcycles/s",
        "round trips",
        "ns/round trip"
    );
    for row in chip["scenarios"].as_array().into_iter().flatten() {
        outln!(
            "{:<68} {:>14} {:>9.3}s {:>16.1} {:>12} {:>14}",
            row["scenario"].as_str().unwrap_or_default(),
            n(row, "device_cycles"),
            f(row, "host_seconds"),
            f(row, "device_mcycles_per_s"),
            n(row, "round_trips"),
            row["host_ns_per_round_trip"].as_f64().map_or("-".to_string(), |ns| format!("{ns:.0}"))
        );
    }
    let mem = &chip["memory"];
    let mib = |k: &str| mem[k].as_u64().map_or("?".to_string(), |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64));
    outln!(
        "memory: process RSS {} before the chip, {} with the chip powered on, {} after writing all {} tiles' L1",
        mib("rss_before"),
        mib("rss_booted"),
        mib("rss_filled"),
        n(&chip, "tiles")
    );
    Ok(ExitCode::SUCCESS)
}

/// Whole-chip figures: a polling ping-pong in each scenario and the memory
/// footprint of the default chip (a Wormhole n150), as JSON.
fn chip_bench(cycles: u64, quantum: Option<u64>) -> anyhow::Result<serde_json::Value> {
    use cqlab_abi::noc::NocAddr;
    use cqlab_sim::bench::{chip_pingpong, rss_bytes};
    use cqlab_sim::chip::Chip;
    use cqlab_sim::config::SimConfig;

    let mut cfg = SimConfig::default();
    if let Some(q) = quantum {
        cfg.quantum_cycles = q;
    }
    let layout = cfg.layout()?;
    let tiles = layout.workers().len();
    let mut scenarios = Vec::new();
    for exact_time in [false, true] {
        for (spinners, ff) in [(false, false), (false, true), (true, false), (true, true)] {
            let name = format!(
                "ping-pong{}, fast-forward {}{}",
                if spinners { format!(" + {} BRISCs polling for GO", tiles - 2) } else { String::new() },
                if ff { "on" } else { "off" },
                if exact_time { ", exact time" } else { "" }
            );
            let spin = crate::cli::spinner(&format!("measuring {name}"));
            let p = chip_pingpong(cycles, SimConfig { fast_forward: ff, exact_time, ..cfg.clone() }, spinners);
            spin.finish_and_clear();
            let p = p?;
            scenarios.push(serde_json::json!({
                "scenario": name,
                "polling_brisc": if spinners { tiles - 2 } else { 0 },
                "fast_forward": ff,
                "exact_time": exact_time,
                "device_cycles": p.device_cycles,
                "host_seconds": p.host_time.as_secs_f64(),
                "device_mcycles_per_s": p.cycles_per_second() / 1e6,
                "round_trips": p.round_trips,
                // Equal work across models whose round trips differ in
                // cycles (null when none was made).
                "host_ns_per_round_trip":
                    (p.round_trips > 0).then(|| p.host_time.as_secs_f64() * 1e9 / p.round_trips as f64),
            }));
        }
    }
    let before = rss_bytes();
    let mut chip = Chip::new(cfg.clone())?;
    let booted = rss_bytes();
    let fill = vec![0xa5u8; layout.l1_size() as usize];
    let cores: Vec<_> = chip.tensix_tiles().collect();
    for &c in &cores {
        chip.write(NocAddr::unicast(c, 0), &fill)?;
    }
    let filled = rss_bytes();
    Ok(serde_json::json!({
        "board": cfg.board.to_string(),
        "harvesting": cfg.harvesting.to_string(),
        "tiles": tiles,
        "l1_kib": layout.l1_size() / 1024,
        "quantum_cycles": cfg.quantum_cycles,
        "pipelined_loads": cfg.pipelined_loads,
        "link_contention": cfg.noc.link_contention,
        "reads_pass_unsent": cfg.noc.reads_pass_unsent,
        "scenarios": scenarios,
        "memory": { "rss_before": before, "rss_booted": booted, "rss_filled": filled },
    }))
}

/// A program's `ecall` exit code as this process's status: its low byte,
/// as a shell takes it, except that a nonzero code never reads as success
/// (256 would: helper-44).
fn exit_status(code: u32) -> u8 {
    match (code, code as u8) {
        (0, _) => 0,
        (_, 0) => Exit::Failed.code(),
        (_, low) => low,
    }
}

/// Attaches to `sim:DEV?wait=30`, boots, and runs `rounds` of: write a
/// seeded pattern to a DRAM buffer, launch every worker, read it back,
/// verify, finish. Prints one line and exits 0 when all of it checks out.
fn client_job(a: ClientJobArgs) -> anyhow::Result<ExitCode> {
    use cqlab_driver::{Device, DeviceConfig};
    let cfg = DeviceConfig { num_cqs: a.cqs, wait_progress: Some(crate::cli::wait_lines()), ..Default::default() };
    let spec =
        if a.ttkmd { format!("ttkmd-sim:{}", a.dev.display()) } else { format!("sim:{}?wait=30", a.dev.display()) };
    let mut dev = Device::open(&spec, cfg).with_context(|| format!("opening {spec}"))?;
    dev.boot().context("booting")?;
    // The crash test kills this process after this line, mid-enqueue.
    outln!("client-job: booted");
    let buf = dev.alloc_dram(a.bytes, 1024)?;
    let all = dev.chip().grid();
    let mut cq = dev.cq(0)?;
    for round in 0..a.rounds {
        let data: Vec<u8> = (0..a.bytes).map(|i| (i as u64 * 31 + a.seed * 7 + round as u64) as u8).collect();
        cq.write_buffer(&buf, 0, &data)?;
        cq.launch(all, &[round])?;
        let back = cq.read_buffer(&buf, 0, a.bytes)?;
        if back != data {
            let at = back.iter().zip(&data).position(|(x, y)| x != y).unwrap_or(0);
            anyhow::bail!("round {round}: read back differs at byte {at}: {} != {}", back[at], data[at]);
        }
    }
    cq.finish()?;
    outln!(
        "client-job: seed {} pid {}: {} rounds of {} bytes verified at device cycle {}",
        a.seed,
        std::process::id(),
        a.rounds,
        a.bytes,
        dev.now()
    );
    Ok(ExitCode::SUCCESS)
}

fn bar(a: BarArgs) -> anyhow::Result<ExitCode> {
    use cqlab_driver::backend::Backend;
    use cqlab_driver::daemon_backend::DaemonBackend;
    let mut dev = DaemonBackend::attach(&a.dev)?;
    let info = dev.info();
    let board: cqlab_abi::soc::Board = info.board.parse()?;
    let harvesting = cqlab_abi::soc::Harvesting::parse(&info.harvesting)?;
    let chip = cqlab_driver::Topology::for_board(board, Some(harvesting), cqlab_abi::noc::DEFAULT_CQS)?;
    crate::args::on_grid("--worker", a.worker, &chip).map_err(crate::cli::Usage)?;
    let tile = chip.worker(a.worker.0, a.worker.1).expect("checked on the grid");
    let at = cqlab_abi::noc::NocAddr::unicast(tile, a.addr);
    if let Some(v) = a.write {
        dev.write_u32(at, v)?;
    }
    let v = dev.read_u32(at)?;
    outln!("{v:#010x}");
    // Watched, not slept through: a forced stop ends the hold with an error.
    if dev.closed_within(std::time::Duration::from_secs_f64(a.hold)) {
        anyhow::bail!(
            "simulator daemon at {}: the daemon closed the connection during --hold (`sim stop --force`, or it died)",
            a.dev.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::{exit_status, least_sysmem, Simulator, MAX_SYSMEM_MIB};

    /// The least `--sysmem-mib` holds what a client of the default
    /// configuration maps (or pins), one MiB less does not, and docs/cli.md
    /// gives it.
    #[test]
    fn the_least_sysmem_holds_the_default_queues() {
        let cfg = cqlab_driver::DeviceConfig::default();
        let pinned = cqlab_driver::ttkmd::backend::pinned_sysmem_len(&cfg) as u64;
        for (sim, need) in [(Simulator::Serve, cfg.sysmem_needed()), (Simulator::Ttkmd, pinned)] {
            let (least, why) = least_sysmem(sim);
            assert!(u64::from(least) << 20 >= need && u64::from(least - 1) << 20 < need, "{sim:?}: {least}");
            assert!(why.ends_with(&format!("{need} bytes, so at least {least} MiB")), "{why}");
            let range = format!("`--sysmem-mib {least}..={MAX_SYSMEM_MIB}`");
            assert!(include_str!("../../../docs/cli.md").contains(&range), "docs/cli.md does not say {range}");
        }
        // And `--help` says so.
        let mut cli = <crate::Cli as clap::CommandFactory>::command();
        let sim = cli.find_subcommand_mut("sim").unwrap().find_subcommand_mut("serve").unwrap();
        let arg = sim.get_arguments().find(|a| a.get_id() == "sysmem_mib").unwrap();
        let help = arg.get_help().unwrap().to_string();
        let said =
            format!("take: {}, {} for `sim ttkmd`", least_sysmem(Simulator::Serve).0, least_sysmem(Simulator::Ttkmd).0);
        assert!(help.contains(&said), "{help}");
    }

    /// A program's exit code is its status, as a shell takes it, but no
    /// nonzero code reads as a pass.
    #[test]
    fn a_nonzero_exit_code_is_never_success() {
        assert_eq!([0, 42, 255, 256, 512, 257, u32::MAX].map(exit_status), [0, 42, 255, 1, 1, 1, 255]);
    }
}
