//! `cqlab sim ...`: the simulator's subcommands.

use anyhow::Context;
use cqlab_sim::bench::WORKLOADS;
use cqlab_sim::exec::{self, ExecOptions, Outcome};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code of `sim exec` when `--max-cycles` stops the program (as `timeout`).
const EXIT_MAX_CYCLES: u8 = 124;
/// Exit code for an input the simulator cannot run (bad or unreadable ELF).
const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when the hart halts without an answer (illegal instruction, fault...).
const EXIT_HALTED: u8 = 3;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Run a bare RV32IM ELF on one core.
    ///
    /// riscv-tests/HTIF convention: a non-zero store v to the symbol `tohost`
    /// ends the run; v == 1 passes (exit 0), otherwise test v >> 1 failed
    /// (exit 1). Without `tohost`, `ecall` exits with code a0. Exit 124 when
    /// --max-cycles is reached, 2 for a bad ELF, 3 when the hart halts
    /// without an answer (illegal instruction, misaligned access, fault).
    Exec(ExecArgs),
    /// Interpreter throughput: simulated MIPS beside native Rust doing the
    /// same work (use a release build).
    Bench(BenchArgs),
}

#[derive(clap::Args)]
pub struct ExecArgs {
    /// The ELF to run.
    file: PathBuf,
    /// Stop after this many device cycles.
    #[arg(long, default_value_t = 10_000_000_000)]
    max_cycles: u64,
    /// Print every retired instruction (cycle, pc, word, disassembly, result).
    #[arg(long)]
    trace: bool,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Loop iterations per workload.
    #[arg(long, default_value_t = 20_000_000)]
    iters: u32,
    /// Device cycles of the chip ping-pong.
    #[arg(long, default_value_t = 50_000_000)]
    chip_cycles: u64,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Exec(args) => exec(args),
        Command::Bench(args) => bench(args),
    }
}

fn exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let bytes = match std::fs::read(&args.file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: reading {}: {e}", args.file.display());
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
    };
    let opts = ExecOptions { max_cycles: args.max_cycles, ..Default::default() };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let trace: Option<&mut dyn Write> = if args.trace { Some(&mut out) } else { None };
    let report = match exec::run_elf(&bytes, &opts, trace) {
        Ok(r) => r,
        Err(exec::ExecError::Elf(e)) => {
            eprintln!("error: {}: {e}", args.file.display());
            return Ok(ExitCode::from(EXIT_BAD_INPUT));
        }
        Err(e) => return Err(e).context("running the ELF"),
    };
    out.flush().context("writing the trace")?;
    let name = args.file.display();
    let stats = format!("{} instructions, {} cycles", report.instret, report.cycles);
    Ok(match report.outcome {
        Outcome::Pass => {
            eprintln!("{name}: PASS ({stats})");
            ExitCode::SUCCESS
        }
        Outcome::Fail { test, value } => {
            eprintln!("{name}: FAIL: test {test} failed (tohost = {value:#x}) at pc {:#010x} ({stats})", report.pc);
            ExitCode::from(1)
        }
        Outcome::Exit { code } => {
            eprintln!("{name}: exit {code} ({stats})");
            ExitCode::from(code as u8)
        }
        Outcome::MaxCycles => {
            eprintln!("{name}: stopped after --max-cycles {} at pc {:#010x} ({stats})", args.max_cycles, report.pc);
            ExitCode::from(EXIT_MAX_CYCLES)
        }
        Outcome::Halted(h) => {
            let recent: Vec<String> = report.last_pcs.iter().take(8).map(|pc| format!("{pc:#x}")).collect();
            eprintln!("{name}: halted: {h} ({stats}); last retired pcs: {}", recent.join(" "));
            ExitCode::from(EXIT_HALTED)
        }
    })
}

fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!("note: debug build; run `cargo run --release -p cqlab -- sim bench` for real figures");
    }
    println!("cqlab sim bench: one hart, interpreter throughput, {} iterations per workload", args.iters);
    println!(
        "{:<6} {:>14} {:>10} {:>10} {:>14} {:>14} {:>12}",
        "loop", "guest instrs", "sim time", "sim MIPS", "dev Mcycles/s", "native MIPS*", "native/sim"
    );
    for w in &WORKLOADS {
        let m = w.measure(args.iters)?;
        let (sim, native) = (m.sim_mips(), m.native_mips(w));
        println!(
            "{:<6} {:>14} {:>9.3}s {:>10.1} {:>14.1} {:>14.1} {:>11.1}x",
            w.name,
            m.instret,
            m.sim_time.as_secs_f64(),
            sim,
            m.sim_mcycles_per_s(),
            native,
            native / sim
        );
    }
    println!();
    for w in &WORKLOADS {
        println!("{:<6} {}", w.name, w.description);
    }
    println!("* native MIPS: the same loop in Rust on the host, counted in guest-instruction equivalents.");
    println!();
    chip_bench(args.chip_cycles)?;
    Ok(ExitCode::SUCCESS)
}

/// Whole-chip figures: a polling ping-pong and the memory footprint of the
/// default 64-worker chip.
fn chip_bench(cycles: u64) -> anyhow::Result<()> {
    use cqlab_abi::noc::NocAddr;
    use cqlab_sim::bench::{chip_pingpong, rss_bytes};
    use cqlab_sim::chip::Chip;
    use cqlab_sim::config::SimConfig;

    let cfg = SimConfig::default();
    println!(
        "chip: {}x{} workers + {} CQs, L1 {} KiB, quantum {} cycles; ping-pong = 2 workers alternately \
         NOC-incrementing each other's L1 semaphore and polling their own",
        cfg.worker_cols,
        cfg.worker_rows,
        cfg.num_cqs,
        cfg.l1_size / 1024,
        cfg.quantum_cycles
    );
    println!(
        "{:<56} {:>14} {:>10} {:>16} {:>12}",
        "scenario", "device cycles", "host time", "dev Mcycles/s", "round trips"
    );
    for (spinners, ff) in [(false, false), (false, true), (true, false), (true, true)] {
        let name = format!(
            "ping-pong{}, fast-forward {}",
            if spinners { " + 62 workers polling for GO" } else { "" },
            if ff { "on" } else { "off" }
        );
        let p = chip_pingpong(cycles, SimConfig { fast_forward: ff, ..cfg.clone() }, spinners)?;
        println!(
            "{:<56} {:>14} {:>9.3}s {:>16.1} {:>12}",
            name,
            p.device_cycles,
            p.host_time.as_secs_f64(),
            p.cycles_per_second() / 1e6,
            p.round_trips
        );
    }
    let before = rss_bytes();
    let mut chip = Chip::new(cfg.clone())?;
    let booted = rss_bytes();
    let fill = vec![0xa5u8; cfg.l1_size as usize];
    let cores: Vec<_> = chip.cores().collect();
    for &c in &cores {
        chip.write(NocAddr::unicast(c, 0), &fill)?;
    }
    let filled = rss_bytes();
    let mib = |b: Option<u64>| b.map_or("?".to_string(), |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64));
    println!(
        "memory: process RSS {} before the chip, {} with the chip powered on, {} after writing all {} cores' L1",
        mib(before),
        mib(booted),
        mib(filled),
        cores.len()
    );
    Ok(())
}
