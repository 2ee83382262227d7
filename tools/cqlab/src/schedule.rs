//! `cqlab schedule`: GEMM dataflow analysis — DRAM traffic of weight-, input- and
//! output-stationary tile orders through an L2/L3 cache stack (see `cqlab-schedule`).

use crate::chart::BarChart;
use crate::out::{diagln, outln};
use anyhow::Context as _;
use cqlab_schedule::{
    format_gb, format_size, least_traffic, parse_size_list, simulate, simulate_all, Gemm, LevelSpec, Report, Strategy,
    Tensor, Tiling,
};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

const DEFAULT_L3: &str = "1MiB,2MiB,16MiB,64MiB,256MiB";
/// Largest matrix dimension.
const MAX_DIM: u64 = 1 << 40;
/// Largest cache size (--l2, --l3), 1 TiB.
const MAX_CACHE: u64 = 1 << 40;
/// Largest tile edge.
const MAX_TILE_EDGE: u64 = 1 << 24;

#[derive(clap::Args)]
pub struct Args {
    /// Rows of A and C (1..=2^40).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_DIM))]
    pub m: u64,
    /// Columns of B and C (1..=2^40).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_DIM))]
    pub n: u64,
    /// Reduction dimension (columns of A, rows of B; 1..=2^40).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_DIM))]
    pub k: u64,
    /// Tile: T for T x T x T, or TMxTNxTK (e.g. 64x128x32).
    #[arg(long, default_value_t = Tiling::DEFAULT_EDGE.to_string())]
    pub tile: String,
    /// Bytes per element (4 for f32, 2 for bf16; 1..=16).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=16))]
    pub elem_size: u64,
    /// L2 capacities to sweep, comma-separated (e.g. 1MiB,2MiB). Omit for no L2.
    #[arg(long, value_name = "SIZES")]
    pub l2: Option<String>,
    /// L3 capacities to sweep, comma-separated.
    #[arg(long, value_name = "SIZES", default_value = DEFAULT_L3)]
    pub l3: String,
    /// Which loop order(s) to report; `auto` keeps the least total DRAM traffic.
    #[arg(long, value_enum, default_value_t = StrategyArg::All)]
    pub strategy: StrategyArg,
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Also write a grouped bar chart of total DRAM traffic to this SVG file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StrategyArg {
    Ws,
    Is,
    Os,
    All,
    Auto,
}

/// One cache stack and what each reported strategy does on it.
#[derive(Serialize)]
struct ConfigResult {
    l2_bytes: Option<u64>,
    l3_bytes: u64,
    /// Least total traffic among the strategies simulated (all three unless one was asked for).
    best: Strategy,
    reports: Vec<Report>,
}

#[derive(Serialize)]
struct Output {
    gemm: Gemm,
    tiling: Tiling,
    strategy: StrategyArg,
    configs: Vec<ConfigResult>,
}

/// The problem and the cache sizes to sweep, each checked (the tile grid
/// too: a problem over the model's limits is refused here, not mid-run).
struct Problem {
    gemm: Gemm,
    tiling: Tiling,
    l2s: Vec<Option<u64>>,
    l3s: Vec<u64>,
}

fn problem(args: &Args) -> Result<Problem, crate::cli::Usage> {
    fn usage(what: &'static str) -> impl Fn(cqlab_schedule::ScheduleError) -> crate::cli::Usage {
        move |e| crate::cli::Usage(format!("{what}: {e}"))
    }
    let gemm = Gemm::new(args.m, args.n, args.k, args.elem_size).map_err(usage("--m, --n, --k, --elem-size"))?;
    let tiling = Tiling::parse(&args.tile).map_err(usage("--tile"))?;
    crate::usage::ensure([tiling.tm, tiling.tn, tiling.tk].iter().all(|&e| e <= MAX_TILE_EDGE), || {
        format!("--tile {}: a tile edge is at most {MAX_TILE_EDGE}", args.tile)
    })?;
    cqlab_schedule::TileGrid::new(&gemm, &tiling).map_err(usage("--m, --n, --k with --tile"))?;
    let l2s: Vec<Option<u64>> = match &args.l2 {
        Some(s) => parse_size_list(s).map_err(usage("--l2"))?.into_iter().map(Some).collect(),
        None => vec![None],
    };
    let l3s = parse_size_list(&args.l3).map_err(usage("--l3"))?;
    crate::usage::ensure(l2s.iter().flatten().chain(&l3s).all(|&size| size > 0), || {
        "cache sizes must be positive, found 0 in --l2/--l3".into()
    })?;
    crate::usage::ensure(l2s.iter().flatten().chain(&l3s).all(|&size| size <= MAX_CACHE), || {
        format!("cache sizes are at most {} (1 TiB), found more in --l2/--l3", MAX_CACHE)
    })?;
    Ok(Problem { gemm, tiling, l2s, l3s })
}

pub fn validate(args: &Args) -> anyhow::Result<()> {
    problem(args)?;
    if let Some(svg) = &args.svg {
        crate::output::check("--svg", svg, crate::output::Kind::File, &[])?;
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Problem { gemm, tiling, l2s, l3s } = problem(&args)?;

    let mut configs = Vec::new();
    for &l2 in &l2s {
        for &l3 in &l3s {
            let mut levels = Vec::new();
            if let Some(l2) = l2 {
                levels.push(LevelSpec::new("L2", l2));
            }
            levels.push(LevelSpec::new("L3", l3));
            configs.push(run_config(&gemm, &tiling, &levels, args.strategy, l2, l3)?);
        }
    }

    let out = Output { gemm, tiling, strategy: args.strategy, configs };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&out).context("serialising the report")?);
    } else if args.csv {
        outln!("{}", csv(&out)?.trim_end_matches('\n'));
    } else {
        outln!("{}", table(&out).trim_end_matches('\n'));
    }
    if let Some(path) = &args.svg {
        crate::output::write("--svg", path, chart(&out).render().as_bytes())?;
        diagln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn run_config(
    gemm: &Gemm,
    tiling: &Tiling,
    levels: &[LevelSpec],
    which: StrategyArg,
    l2: Option<u64>,
    l3: u64,
) -> anyhow::Result<ConfigResult> {
    let label = config_label(l2, l3);
    let one = |s| simulate(gemm, tiling, s, levels).with_context(|| format!("simulating {s} with {label}"));
    let mut reports = match which {
        StrategyArg::Ws => vec![one(Strategy::WeightStationary)?],
        StrategyArg::Is => vec![one(Strategy::InputStationary)?],
        StrategyArg::Os => vec![one(Strategy::OutputStationary)?],
        StrategyArg::All | StrategyArg::Auto => {
            simulate_all(gemm, tiling, levels).with_context(|| format!("simulating with {label}"))?
        }
    };
    let best = least_traffic(&reports).map(|r| r.strategy).context("no strategy simulated")?;
    if which == StrategyArg::Auto {
        reports.retain(|r| r.strategy == best);
    }
    Ok(ConfigResult { l2_bytes: l2, l3_bytes: l3, best, reports })
}

fn config_label(l2: Option<u64>, l3: u64) -> String {
    match l2 {
        Some(l2) => format!("L2 {} / L3 {}", format_size(l2), format_size(l3)),
        None => format!("L3 {}", format_size(l3)),
    }
}

fn pct(rate: Option<f64>) -> String {
    rate.map(|r| format!("{:.1}%", r * 100.0)).unwrap_or_else(|| "-".into())
}

fn table(out: &Output) -> String {
    let g = &out.gemm;
    let t = &out.tiling;
    let min = g.tensor_bytes();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "GEMM C = A x B: M {} x N {} x K {}, {}-byte elements, tile {}x{}x{} (m x n x k)",
        g.m, g.n, g.k, g.elem_size, t.tm, t.tn, t.tk
    );
    let _ = writeln!(
        s,
        "minimum DRAM traffic {} (read A {}, read B {}, write C {}); GB = 1e9 bytes\n",
        format_gb(min.a + min.b + min.c),
        format_gb(min.a),
        format_gb(min.b),
        format_gb(min.c)
    );
    for cfg in &out.configs {
        let _ = writeln!(s, "{}", config_label(cfg.l2_bytes, cfg.l3_bytes));
        let mut header = format!(
            "  {:<4}{:<9}{:>11}{:>11}{:>11}{:>11}{:>11}{:>9}{:>9}{:>9}{:>9}",
            "", "loops", "A read", "B read", "C read", "C write", "total", "ovf A", "ovf B", "ovf C", "ovf"
        );
        if let Some(r) = cfg.reports.first() {
            for l in &r.levels {
                let _ = write!(header, "{:>9}{:>10}", format!("{} hit", l.name), format!("{} evict", l.name));
            }
        }
        let _ = writeln!(s, "{header}");
        for r in &cfg.reports {
            let d = &r.dram;
            let _ = write!(
                s,
                "  {:<4}{:<9}{:>11}{:>11}{:>11}{:>11}{:>11}{:>9}{:>9}{:>9}{:>9}",
                r.strategy.short(),
                r.loop_order,
                format_gb(d.a.read_bytes),
                format_gb(d.b.read_bytes),
                format_gb(d.c.read_bytes),
                format_gb(d.c.write_bytes),
                format_gb(r.total_bytes),
                format!("{:.2}x", r.overfetch.a),
                format!("{:.2}x", r.overfetch.b),
                format!("{:.2}x", r.overfetch.c),
                format!("{:.2}x", r.total_overfetch),
            );
            for l in &r.levels {
                let _ = write!(s, "{:>9}{:>10}", pct(l.hit_rate), l.total.evictions);
            }
            let _ = writeln!(s);
        }
        if out.strategy == StrategyArg::All || out.strategy == StrategyArg::Auto {
            if let Some(b) = cfg.reports.iter().find(|r| r.strategy == cfg.best) {
                let _ = writeln!(
                    s,
                    "  least traffic: {} ({}), {} = {:.2}x the minimum",
                    b.strategy.short(),
                    b.strategy.name(),
                    format_gb(b.total_bytes),
                    b.total_overfetch
                );
            }
        }
        let _ = writeln!(s);
    }
    s
}

/// One line of `--csv`: one strategy on one cache stack.
#[derive(Serialize)]
struct CsvRow {
    l2_bytes: Option<u64>,
    l3_bytes: u64,
    /// Spelled out as `--json` spells it (the same serde name), so a script
    /// can read either.
    strategy: Strategy,
    a_read_bytes: u64,
    a_write_bytes: u64,
    b_read_bytes: u64,
    b_write_bytes: u64,
    c_read_bytes: u64,
    c_write_bytes: u64,
    total_bytes: u64,
    minimum_bytes: u64,
    a_overfetch: f64,
    b_overfetch: f64,
    c_overfetch: f64,
    total_overfetch: f64,
    l2_hit_rate: Option<f64>,
    l2_evictions: Option<u64>,
    l3_hit_rate: Option<f64>,
    l3_evictions: Option<u64>,
    least_traffic: bool,
}

fn csv(out: &Output) -> anyhow::Result<String> {
    let rows = out.configs.iter().flat_map(|cfg| {
        cfg.reports.iter().map(move |r| {
            let d = &r.dram;
            let level = |name: &str| r.levels.iter().find(|l| l.name == name);
            let (l2, l3) = (level("L2"), level("L3"));
            CsvRow {
                l2_bytes: cfg.l2_bytes,
                l3_bytes: cfg.l3_bytes,
                strategy: r.strategy,
                a_read_bytes: d.a.read_bytes,
                a_write_bytes: d.a.write_bytes,
                b_read_bytes: d.b.read_bytes,
                b_write_bytes: d.b.write_bytes,
                c_read_bytes: d.c.read_bytes,
                c_write_bytes: d.c.write_bytes,
                total_bytes: r.total_bytes,
                minimum_bytes: r.minimum_bytes,
                a_overfetch: r.overfetch[Tensor::A],
                b_overfetch: r.overfetch[Tensor::B],
                c_overfetch: r.overfetch[Tensor::C],
                total_overfetch: r.total_overfetch,
                l2_hit_rate: l2.and_then(|l| l.hit_rate),
                l2_evictions: l2.map(|l| l.total.evictions),
                l3_hit_rate: l3.and_then(|l| l.hit_rate),
                l3_evictions: l3.map(|l| l.total.evictions),
                least_traffic: r.strategy == cfg.best,
            }
        })
    });
    crate::cli::csv(rows)
}

fn chart(out: &Output) -> BarChart {
    let series: Vec<Strategy> = match out.strategy {
        StrategyArg::Ws => vec![Strategy::WeightStationary],
        StrategyArg::Is => vec![Strategy::InputStationary],
        StrategyArg::Os => vec![Strategy::OutputStationary],
        StrategyArg::All => Strategy::ALL.to_vec(),
        StrategyArg::Auto => vec![],
    };
    let (names, values) = if out.strategy == StrategyArg::Auto {
        let values =
            out.configs.iter().map(|c| c.reports.iter().map(|r| r.total_bytes as f64 / 1e9).collect()).collect();
        (vec!["auto (least traffic)".to_string()], values)
    } else {
        let values = out
            .configs
            .iter()
            .map(|c| {
                series
                    .iter()
                    .map(|s| c.reports.iter().find(|r| r.strategy == *s).map_or(0.0, |r| r.total_bytes as f64 / 1e9))
                    .collect()
            })
            .collect();
        (series.iter().map(|s| format!("{} ({})", s.short(), s.loop_order())).collect(), values)
    };
    let g = &out.gemm;
    let t = &out.tiling;
    BarChart {
        title: format!(
            "DRAM traffic of C = A x B, {} x {} x {}, {}-byte elements, tile {}x{}x{}",
            g.m, g.n, g.k, g.elem_size, t.tm, t.tn, t.tk
        ),
        x_label: "cache configuration".into(),
        y_label: "total DRAM traffic (GB, 1e9 bytes)".into(),
        groups: out.configs.iter().map(|c| config_label(c.l2_bytes, c.l3_bytes)).collect(),
        series: names,
        values,
    }
}
