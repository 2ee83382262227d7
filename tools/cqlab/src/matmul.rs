//! `cqlab matmul`: runs C = A x B on the simulated chip in a chosen tile
//! order, checks it against the host reference, and reports the DRAM bytes
//! the simulator measured against what `cqlab schedule` predicts for the
//! same order (no cache between the core and DRAM, as on the chip).

use crate::out::outln;
use anyhow::Result;
use cqlab_driver::DeviceConfig;
use cqlab_schedule::{simulate, Gemm, Strategy, Tiling};
use cqlab_workloads::matmul::{inputs, run as run_matmul, Order};
use std::process::ExitCode;

/// Largest matrix edge: A, B and C of 1024x1024 f32 are 4 MiB each, and
/// one core computes it all.
pub const MAX_DIM: u32 = 1024;

#[derive(clap::Args)]
pub struct Args {
    /// Rows of A and C (1..=1024, a multiple of --tile).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=MAX_DIM as i64))]
    pub m: u32,
    /// Columns of B and C (1..=1024, a multiple of --tile).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=MAX_DIM as i64))]
    pub n: u32,
    /// Columns of A, rows of B (1..=1024, a multiple of --tile).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=MAX_DIM as i64))]
    pub k: u32,
    /// Tile edge: 4, 8, 12 or 16 (f32 tiles; a tile fills whole 64-byte DRAM pages).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(4..=16))]
    pub tile: u32,
    /// ws, is, os or all.
    #[arg(long, default_value = "all", value_parser = ["ws", "is", "os", "all"])]
    pub strategy: String,
    /// Simulator seed of the embedded device (its scheduler's rotation
    /// order; a daemon has its own).
    #[arg(long, default_value_t = 1, value_parser = crate::cli::seed)]
    pub seed: u64,
    /// Device (embedded by default). DRAM bytes are measured on cqlab's
    /// simulators (embedded, sim:PATH); elsewhere (ttsim:PATH, a card) the
    /// table prints n/a and JSON null.
    #[arg(long, default_value = "embedded")]
    pub device: String,
    #[command(flatten)]
    pub limits: crate::cli::Limits,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
    /// Print one JSON object (device, chip, and each strategy's cycles and
    /// DRAM traffic beside the model's prediction) instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn validate(args: &Args) -> Result<()> {
    args.chip.validate_for(crate::device::made_here(&args.device))?;
    // A tile of t x t f32 is t*t*4 bytes: whole 64-byte DRAM pages when 4 divides t.
    crate::cli::check(args.tile % 4 == 0, || {
        format!("--tile {}: 4, 8, 12 or 16 (a tile must fill whole 64-byte DRAM pages)", args.tile)
    })?;
    for (name, v) in [("--m", args.m), ("--n", args.n), ("--k", args.k)] {
        crate::cli::check(v % args.tile == 0, || format!("{name} {v} is not a multiple of --tile {}", args.tile))?;
    }
    Ok(crate::device::validate(&args.device, 0)?)
}

pub fn run(args: Args) -> Result<ExitCode> {
    validate(&args)?;
    let (m, n, k, t) = (args.m as usize, args.n as usize, args.k as usize, args.tile as usize);
    let strategies: Vec<Strategy> = match args.strategy.as_str() {
        "all" => Strategy::ALL.to_vec(),
        s => vec![s.parse().map_err(|e| crate::cli::Usage(format!("--strategy {s}: {e} (ws, is, os or all)")))?],
    };
    let (a, b) = inputs(m, n, k);
    let tiling = Tiling::square(t as u64)?;
    let gemm = Gemm::new(m as u64, n as u64, k as u64, 4)?;
    let mut rows = Vec::new();
    let mut chip = None;
    crate::device::note_unused_seed(&args.device, args.seed);
    for s in strategies {
        let order = match s {
            Strategy::OutputStationary => Order::OutputStationary,
            Strategy::WeightStationary => Order::WeightStationary,
            Strategy::InputStationary => Order::InputStationary,
        };
        let mut cfg = DeviceConfig { worker_kernel: "matmul".into(), ..Default::default() };
        args.limits.apply(&mut cfg);
        args.chip.apply_for(&mut cfg, crate::device::made_here(&args.device))?;
        let mut dev = crate::device::open(&args.device, args.seed, 0, cfg)?;
        dev.boot()?;
        chip = Some((dev.chip().board().name(), dev.chip().harvesting().to_string()));
        let spin = crate::cli::spinner(&format!("matmul {m}x{n}x{k}, {}", s.short()));
        let r = run_matmul(&mut dev, &a, &b, (m, n, k), t, order);
        spin.finish_and_clear();
        let r = r?;
        if r.mismatches > 0 {
            // The class `run`'s validation fails with: exit 5, a wrong result.
            let why = format!("{s}: {} of {} elements of C differ from the host reference", r.mismatches, m * n);
            return Err(cqlab_driver::DriverError::Mismatch(why).into());
        }
        let p = simulate(&gemm, &tiling, s, &[])?;
        let p_read: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.read_bytes).sum();
        let p_write: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.write_bytes).sum();
        rows.push((s, r.device_cycles, r.dram_read, p_read, r.dram_written, p_write));
    }
    if args.json {
        let v: Vec<_> = rows
            .iter()
            .map(|(s, cyc, r, pr, w, pw)| {
                serde_json::json!({"strategy": s.short(), "device_cycles": cyc, "dram_read": r, "predicted_read": pr,
                                   "dram_written": w, "predicted_written": pw})
            })
            .collect();
        let (chip, harvesting) = chip.unzip();
        outln!(
            "{}",
            serde_json::json!({"device": args.device, "chip": chip, "harvesting": harvesting,
                               "seed": cqlab_workloads::runner::device_seed(&args.device, args.seed),
                               "m": args.m, "n": args.n, "k": args.k, "tile": args.tile, "runs": v})
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!("matmul {}x{}x{} f32, tile {}, one core, result verified bit for bit", args.m, args.n, args.k, args.tile);
    outln!(
        "{:<9} {:>14} {:>12} {:>12} {:>12} {:>12}",
        "strategy",
        "device cycles",
        "DRAM read",
        "predicted",
        "DRAM write",
        "predicted"
    );
    let measured = |b: Option<u64>| b.map_or("n/a".to_owned(), |b| b.to_string());
    for (s, cyc, r, pr, w, pw) in rows {
        outln!("{:<9} {:>14} {:>12} {:>12} {:>12} {:>12}", s.short(), cyc, measured(r), pr, measured(w), pw);
    }
    Ok(ExitCode::SUCCESS)
}
