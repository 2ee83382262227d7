//! `cqlab matmul`: runs C = A x B on the simulated chip in a chosen tile
//! order, checks it against the host reference, and reports the DRAM bytes
//! the simulator measured against what `cqlab schedule` predicts for the
//! same order (no cache between the core and DRAM, as on the chip).

use anyhow::{ensure, Result};
use cqlab_driver::workloads::matmul::{inputs, run as run_matmul, Order};
use cqlab_driver::{Device, DeviceConfig};
use cqlab_schedule::{simulate, Gemm, Strategy, Tiling};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, default_value_t = 64)]
    pub m: usize,
    #[arg(long, default_value_t = 64)]
    pub n: usize,
    #[arg(long, default_value_t = 64)]
    pub k: usize,
    /// Tile edge (at most 16; f32 tiles).
    #[arg(long, default_value_t = 16)]
    pub tile: usize,
    /// ws, is, os or all.
    #[arg(long, default_value = "all")]
    pub strategy: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let strategies: Vec<Strategy> = match args.strategy.as_str() {
        "all" => Strategy::ALL.to_vec(),
        s => vec![s.parse()?],
    };
    let (a, b) = inputs(args.m, args.n, args.k);
    let tiling = Tiling::square(args.tile as u64)?;
    let gemm = Gemm::new(args.m as u64, args.n as u64, args.k as u64, 4)?;
    let mut rows = Vec::new();
    for s in strategies {
        let order = match s {
            Strategy::OutputStationary => Order::OutputStationary,
            Strategy::WeightStationary => Order::WeightStationary,
            Strategy::InputStationary => Order::InputStationary,
        };
        let cfg = DeviceConfig { worker_kernel: "matmul".into(), ..Default::default() };
        let mut dev = Device::open(&format!("embedded:seed={}", args.seed), cfg)?;
        dev.boot()?;
        let r = run_matmul(&mut dev, &a, &b, (args.m, args.n, args.k), args.tile, order)?;
        ensure!(r.mismatches == 0, "{s}: {} elements differ from the host reference", r.mismatches);
        let p = simulate(&gemm, &tiling, s, &[])?;
        let p_read: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.read_bytes).sum();
        let p_write: u64 = [p.dram.a, p.dram.b, p.dram.c].iter().map(|d| d.write_bytes).sum();
        rows.push((s, r.device_cycles, r.dram_read.unwrap_or(0), p_read, r.dram_written.unwrap_or(0), p_write));
    }
    if args.json {
        let v: Vec<_> = rows
            .iter()
            .map(|(s, cyc, r, pr, w, pw)| {
                serde_json::json!({"strategy": s.short(), "device_cycles": cyc, "dram_read": r, "predicted_read": pr,
                                   "dram_written": w, "predicted_written": pw})
            })
            .collect();
        println!("{}", serde_json::json!({"m": args.m, "n": args.n, "k": args.k, "tile": args.tile, "runs": v}));
        return Ok(ExitCode::SUCCESS);
    }
    println!("matmul {}x{}x{} f32, tile {}, one core, result verified bit for bit", args.m, args.n, args.k, args.tile);
    println!(
        "{:<9} {:>14} {:>12} {:>12} {:>12} {:>12}",
        "strategy", "device cycles", "DRAM read", "predicted", "DRAM write", "predicted"
    );
    for (s, cyc, r, pr, w, pw) in rows {
        println!("{:<9} {:>14} {:>12} {:>12} {:>12} {:>12}", s.short(), cyc, r, pr, w, pw);
    }
    Ok(ExitCode::SUCCESS)
}
