//! `cqlab calibrate`: the simulator's timing model beside published
//! Wormhole and Blackhole measurements. Each published figure names a
//! microbenchmark of the same shape (`cqlab_sim::calibrate`); the command
//! runs it on the chosen chip and prints model, published figure, ratio and
//! source. The figures live in one data file (`data/published-figures.json`,
//! built in); `--figures FILE` reads another of the same shape, such as
//! your own card's measurements.

use crate::chip::ChipOpt;
use crate::out::outln;
use crate::usage::UsageError;
use anyhow::Context as _;
use cqlab_abi::arch::{Arch, Noc};
use cqlab_abi::soc::Board;
use cqlab_driver::backend::spec::Model;
use cqlab_sim::calibrate::{Bench, Unit};
use cqlab_sim::config::SimConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::ExitCode;

/// The built-in figures.
const FIGURES: &str = include_str!("../data/published-figures.json");
/// A model figure within this factor of the published one is calibrated.
const TOLERANCE: (f64, f64) = (0.85, 1.15);
/// The smallest published value taken: far below any real figure in these
/// units, and far enough above zero that a ratio to it stays finite (a
/// subnormal one made it infinite).
const MIN_PUBLISHED: f64 = 1e-6;

#[derive(clap::Args)]
pub struct Args {
    /// The board to calibrate (default: wormhole-n150; the card's name
    /// alone, such as n300, is taken too), at its usual harvesting: the
    /// published figures were measured on it, so `--harvest` is refused.
    #[arg(long, value_name = "BOARD", value_parser = crate::chip::listed_board())]
    pub chip: Option<Board>,
    /// Refused: the published figures were measured on each board's usual
    /// harvesting (hidden; said when given).
    #[arg(long, value_name = "LINES", hide = true)]
    pub harvest: Option<String>,
    /// Published figures to compare with (JSON, the shape of the built-in
    /// `tools/cqlab/data/published-figures.json`); default: the built-in ones.
    #[arg(long, value_name = "FILE")]
    pub figures: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The timing model each benchmark runs on (the calibrated one unless told).
    #[command(flatten)]
    pub model: crate::model::ModelOpt,
}

impl Args {
    /// `board`'s timing with the options given.
    fn sim(&self, board: Board) -> SimConfig {
        let mut cfg = SimConfig::for_board(board);
        self.model.model().apply(&mut cfg);
        cfg
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FigureFile {
    #[serde(default)]
    #[allow(dead_code)]
    about: String,
    /// Each deserialized alone, so that a shape error names its figure.
    figures: Vec<serde_json::Value>,
}

/// One published measurement and the benchmark of its shape.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct Figure {
    name: String,
    /// `wormhole` or `blackhole`.
    arch: String,
    /// The board it was measured on, as `--chip` names it: the figure is
    /// judged on that board alone. Without it, on every board of `arch`.
    #[serde(default)]
    board: Option<String>,
    /// `one-to-one`, `one-from-one`, `one-to-all`, `one-to-all-linked`,
    /// `dram-read`, `dram-write`, `dram-read-all-banks`,
    /// `dram-write-all-banks`, `read-round-trip`, `l1-stores`, `pcie-read`,
    /// `pcie-write`, `pcie-read-latency`, `host-write` or `host-read`.
    bench: String,
    #[serde(default)]
    bytes: Option<u32>,
    #[serde(default)]
    count: Option<u32>,
    /// 0 or 1 (`read-round-trip`; default 0).
    #[serde(default)]
    noc: Option<u8>,
    published: f64,
    /// The upper end of a published range.
    #[serde(default)]
    published_max: Option<f64>,
    unit: String,
    source: String,
}

#[derive(Serialize)]
struct Row {
    name: String,
    chip: String,
    bench: String,
    model: f64,
    published: f64,
    published_max: Option<f64>,
    unit: &'static str,
    /// Model over the published figure (1.0 inside a published range; the
    /// nearer end outside it).
    ratio: f64,
    calibrated: bool,
    source: String,
    /// The timing model measured (`exact_time`, `pipelined_loads`,
    /// `icache`, `l0_cache`, `link_contention`, `reads_pass_unsent`).
    #[serde(flatten)]
    timing: Model,
}

impl Figure {
    fn arch(&self) -> Result<Arch, String> {
        match self.arch.as_str() {
            "wormhole" => Ok(Arch::Wormhole),
            "blackhole" => Ok(Arch::Blackhole),
            other => Err(format!("arch {other:?}: wormhole or blackhole")),
        }
    }

    /// The board the figure was measured on, where it names one.
    fn board(&self) -> Result<Option<Board>, String> {
        let Some(name) = &self.board else { return Ok(None) };
        let board: Board = name.parse().map_err(|e| format!("board: {e}"))?;
        if board.arch() != self.arch()? {
            return Err(format!("board {board}: not a {} board", self.arch));
        }
        Ok(Some(board))
    }

    /// Whether the figure is judged on `board`: one of its arch, and its
    /// own board where it names one.
    fn applies_to(&self, board: Board) -> bool {
        self.arch() == Ok(board.arch()) && self.board().is_ok_and(|b| b.is_none_or(|b| b == board))
    }

    /// The board a figure is checked and run on: its own, or its arch's
    /// first (packet limits are the architecture's, the same on each board).
    fn home(&self) -> Result<Board, String> {
        let arch = self.arch()?;
        Ok(self.board()?.unwrap_or(if arch == Arch::Wormhole { Board::WormholeN150 } else { Board::BlackholeP150a }))
    }

    /// A figure says what was measured and where it was published.
    fn check_text(&self) -> Result<(), String> {
        match [("name", &self.name), ("source", &self.source)].into_iter().find(|(_, v)| v.trim().is_empty()) {
            Some((field, _)) => Err(format!("{field}: empty")),
            None => Ok(()),
        }
    }

    /// The benchmark and the fields given for it (`l1-stores, count 64`).
    fn shape(&self) -> String {
        let fields = [("bytes", self.bytes), ("count", self.count), ("noc", self.noc.map(u32::from))];
        fields.iter().filter_map(|(f, v)| v.map(|v| format!(", {f} {v}"))).fold(self.bench.clone(), |s, f| s + &f)
    }

    fn bench(&self) -> Result<Bench, String> {
        let need = |v: Option<u32>, what: &str| v.ok_or_else(|| format!("bench {} needs {what}", self.bench));
        let bytes = || need(self.bytes, "bytes");
        let count = || need(self.count, "count");
        let bench = match self.bench.as_str() {
            "one-to-one" => Bench::OneToOne { bytes: bytes()?, count: count()? },
            "one-from-one" => Bench::OneFromOne { bytes: bytes()?, count: count()? },
            "one-to-all" => Bench::OneToAll { bytes: bytes()?, count: count()? },
            "one-to-all-linked" => Bench::OneToAllLinked { bytes: bytes()?, count: count()? },
            "dram-read" => Bench::DramRead { bytes: bytes()?, count: count()? },
            "dram-write" => Bench::DramWrite { bytes: bytes()?, count: count()? },
            "dram-read-all-banks" => Bench::DramReadAllBanks { bytes: bytes()?, count: count()? },
            "dram-write-all-banks" => Bench::DramWriteAllBanks { bytes: bytes()?, count: count()? },
            "read-round-trip" => {
                let noc = match self.noc.unwrap_or(0) {
                    0 => Noc::Noc0,
                    1 => Noc::Noc1,
                    n => return Err(format!("noc {n}: 0 or 1")),
                };
                Bench::ReadRoundTrip { bytes: bytes()?, noc, count: count()? }
            }
            "l1-stores" => Bench::L1Stores { count: count()? },
            "pcie-read" => Bench::PcieRead { bytes: bytes()?, count: count()? },
            "pcie-write" => Bench::PcieWrite { bytes: bytes()?, count: count()? },
            "pcie-read-latency" => Bench::PcieReadLatency { bytes: bytes()?, count: count()? },
            "host-write" => Bench::HostWrite { bytes: bytes()? },
            "host-read" => Bench::HostRead { bytes: bytes()? },
            other => return Err(format!("no benchmark named {other:?}")),
        };
        // A field the benchmark does not take would be ignored unseen.
        let takes: &[&str] = match bench {
            Bench::ReadRoundTrip { .. } => &["bytes", "count", "noc"],
            Bench::L1Stores { .. } => &["count"],
            Bench::HostWrite { .. } | Bench::HostRead { .. } => &["bytes"],
            _ => &["bytes", "count"],
        };
        let given = [("bytes", self.bytes.is_some()), ("count", self.count.is_some()), ("noc", self.noc.is_some())];
        if let Some((field, _)) = given.into_iter().find(|&(f, given)| given && !takes.contains(&f)) {
            return Err(format!("{field}: bench {} takes no {field}, only {}", self.bench, takes.join(", ")));
        }
        match Unit::parse(&self.unit) {
            Some(u) if u == bench.unit() => Ok(bench),
            _ => Err(format!("unit {:?}: benchmark {} measures {}", self.unit, self.bench, bench.unit().name())),
        }
    }

    /// The published value (and range) a ratio can be taken against.
    fn check_published(&self) -> Result<(), String> {
        let taken = |v: f64| v.is_finite() && v >= MIN_PUBLISHED;
        match self.published_max {
            _ if !taken(self.published) => {
                Err(format!("published {:?}: a finite number of at least {MIN_PUBLISHED:e}", self.published))
            }
            Some(max) if !taken(max) || max < self.published => {
                Err(format!("published_max {max:?}: a finite number at least published ({})", self.published))
            }
            _ => Ok(()),
        }
    }

    fn ratio(&self, model: f64) -> f64 {
        match self.published_max {
            Some(max) if model >= self.published && model <= max => 1.0,
            Some(max) if model > max => model / max,
            _ => model / self.published,
        }
    }
}

/// The figures of `path` (or the built-in ones), each checked: input the
/// command cannot take is a usage error.
fn load(path: Option<&PathBuf>) -> anyhow::Result<Vec<Figure>> {
    let what = path.map_or("the built-in figures".to_string(), |p| format!("--figures {}", p.display()));
    let text = match path {
        // A figures file is a few KiB; a report's limit bounds what a
        // wrong path (`/dev/zero`) can make it read.
        Some(p) => crate::input::read_text("--figures", p, crate::input::MAX_REPORT_BYTES)?,
        None => FIGURES.to_string(),
    };
    parse(&what, &text)
}

/// The figures of `text`, read from `what`, each checked.
fn parse(what: &str, text: &str) -> anyhow::Result<Vec<Figure>> {
    let shape = "an object {\"figures\": [...]}, the shape of tools/cqlab/data/published-figures.json";
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| UsageError(format!("{what}: {e}")))?;
    if !value.is_object() {
        return Err(UsageError(format!("{what}: expected {shape}")).into());
    }
    let file: FigureFile = serde_json::from_value(value).map_err(|e| UsageError(format!("{what}: {e} ({shape})")))?;
    let mut figures: Vec<Figure> = Vec::with_capacity(file.figures.len());
    for (i, v) in file.figures.into_iter().enumerate() {
        let label = match v.get("name").and_then(|n| n.as_str()) {
            Some(name) => format!("figure {} ({name})", i + 1),
            None => format!("figure {}", i + 1),
        };
        let mut f: Figure = serde_json::from_value(v).map_err(|e| UsageError(format!("{what}: {label}: {e}")))?;
        let checked = f.check_text().and_then(|()| {
            // A board by its short name (`n300`) is kept by its full one, as
            // reports print it and duplicates are judged.
            f.board = f.board()?.map(|b| b.name().to_string());
            f.bench()?.check(f.home()?)?;
            f.check_published()
        });
        checked.map_err(|e| UsageError(format!("{what}: {label}: {e}")))?;
        // One measurement twice would be counted twice.
        let boards_meet = |g: &Figure| f.board.is_none() || g.board.is_none() || f.board == g.board;
        if let Some((j, g)) =
            figures.iter().enumerate().find(|(_, g)| g.arch() == f.arch() && g.bench() == f.bench() && boards_meet(g))
        {
            let on = f.board.as_ref().or(g.board.as_ref()).unwrap_or(&f.arch);
            return Err(UsageError(format!(
                "{what}: {label}: the same benchmark as figure {} ({}), {} on {on}: a duplicate",
                j + 1,
                g.name,
                f.shape()
            ))
            .into());
        }
        figures.push(f);
    }
    Ok(figures)
}

pub fn validate(a: &Args) -> anyhow::Result<()> {
    if a.harvest.is_some() {
        return Err(
            UsageError("calibrate runs each chip with its usual harvesting; --harvest is not taken".into()).into()
        );
    }

    // The figures file is read once, by `run` (a pipe reads only once);
    // what it cannot take is a usage error there too.
    Ok(())
}

pub fn run(a: Args) -> anyhow::Result<ExitCode> {
    let board = ChipOpt { chip: a.chip, harvest: None }.sim_board();
    let figures = load(a.figures.as_ref())?;
    let mine: Vec<&Figure> = figures.iter().filter(|f| f.applies_to(board)).collect();
    if mine.is_empty() {
        return Err(UsageError(format!(
            "no published figure for a {board} ({:?}) in the figures given: nothing to calibrate against",
            board.arch()
        ))
        .into());
    }
    // Every benchmark runs on a fresh chip of this configuration, so of
    // this seed (`SimConfig::for_board`'s).
    let seed = a.sim(board).seed;
    let mut rows = Vec::new();
    for f in mine {
        let bench = f.bench().map_err(anyhow::Error::msg)?;
        let model = bench.run_on(a.sim(board)).with_context(|| format!("running {} on a {board}", f.bench))?;
        let ratio = f.ratio(model);
        rows.push(Row {
            name: f.name.clone(),
            chip: board.to_string(),
            bench: f.bench.clone(),
            model,
            published: f.published,
            published_max: f.published_max,
            unit: bench.unit().name(),
            ratio,
            calibrated: (TOLERANCE.0..=TOLERANCE.1).contains(&ratio),
            source: f.source.clone(),
            timing: a.model.model().on(board.arch()),
        });
    }
    if a.json {
        let report = serde_json::json!({"chip": board.to_string(), "seed": seed, "rows": rows});
        outln!("{}", serde_json::to_string_pretty(&report).context("serialising the report")?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", header(board, seed, a.model.model()));
    outln!("{:<62} {:>10} {:>12} {:>8} {:>6}  source", "figure", "model", "published", "unit", "ratio");
    for r in &rows {
        outln!("{}", table_line(r));
    }
    let ok = rows.iter().filter(|r| r.calibrated).count();
    outln!("{ok} of {} within {}-{} of the published figure (* outside)", rows.len(), TOLERANCE.0, TOLERANCE.1);
    Ok(ExitCode::SUCCESS)
}

/// The table's first line: the board, the seed, and how the model departs
/// from the default on it.
fn header(board: Board, seed: u64, model: Model) -> String {
    let timing = model.describe_on(board.arch());
    format!("cqlab calibrate: {board}, the timing model beside published figures (seed {seed}, one run each{timing})")
}

/// One figure's line of the table.
fn table_line(r: &Row) -> String {
    let published = match r.published_max {
        Some(max) => format!("{}-{}", r.published, max),
        None => r.published.to_string(),
    };
    let flag = if r.calibrated { "" } else { " *" };
    let (model, ratio) = (significant(r.model, 4), ratio_shown(r.ratio));
    format!("{:<62} {model:>10} {published:>12} {:>8} {ratio:>6}{flag}  {}", r.name, r.unit, r.source)
}

/// `v` to `digits` significant digits: a model figure of 0.0098 is not 0.0.
fn significant(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return v.to_string();
    }
    let decimals = (digits - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

/// A ratio to two decimals, or to as many more as it takes to fall on the
/// side of the tolerance its flag says (1.1504 is not `1.15 *`).
fn ratio_shown(ratio: f64) -> String {
    let inside = |r: f64| (TOLERANCE.0..=TOLERANCE.1).contains(&r);
    (2..=17)
        .map(|d| format!("{ratio:.d$}"))
        .find(|s| s.parse().is_ok_and(|r: f64| inside(r) == inside(ratio)))
        .unwrap_or_else(|| ratio.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `calibrate --help` gives its `--chip` the boards alone and why
    /// harvesting is refused, not the prose of `ChipOpt`'s `--chip` (whose
    /// board list and device rules calibrate does not need).
    #[test]
    fn chip_help_names_the_boards_and_the_refused_harvesting() {
        use clap::{Args as _, CommandFactory as _};
        let help = |cmd: &clap::Command| {
            let arg = cmd.get_arguments().find(|a| a.get_id() == "chip").expect("--chip");
            (arg.get_help().expect("help").to_string(), arg.get_possible_values())
        };
        let (chip_opt_help, _) = help(&crate::chip::ChipOpt::augment_args(clap::Command::new("chip-opt")));
        let cli = crate::Cli::command();
        let (calibrate_help, boards) = help(cli.find_subcommand("calibrate").expect("calibrate"));
        let boards: Vec<&str> = boards.iter().map(|b| b.get_name()).collect();
        assert_eq!(boards, Board::ALL.map(Board::name), "the boards, listed by clap");
        // Each takes the card's name, as the README's tables write it.
        for b in Board::ALL {
            let parsed = <crate::Cli as clap::Parser>::try_parse_from(["cqlab", "calibrate", "--chip", b.short_name()]);
            let Ok(crate::Cli { command: crate::Command::Calibrate(args), .. }) = parsed else {
                panic!("calibrate --chip {}: {:?}", b.short_name(), parsed.err())
            };
            assert_eq!(args.chip, Some(b));
        }
        // ChipOpt's help names both spellings of every board.
        for b in Board::ALL {
            assert!(chip_opt_help.contains(b.name()) && chip_opt_help.contains(b.short_name()), "{chip_opt_help}");
        }
        assert!(calibrate_help.contains("`--harvest` is refused"), "{calibrate_help}");
        assert!(calibrate_help.contains("usual harvesting"), "{calibrate_help}");
        let chip_opt_first = chip_opt_help.split('.').next().unwrap();
        assert!(!calibrate_help.contains(chip_opt_first), "repeats ChipOpt's {chip_opt_first:?}: {calibrate_help}");
    }

    /// The model is calibrated: every built-in figure, on a board of its
    /// architecture, within `TOLERANCE` of what was published (issue 27).
    #[test]
    fn the_model_is_within_tolerance_of_every_built_in_figure() {
        let mut outside = Vec::new();
        for f in load(None).unwrap() {
            let board = f.home().unwrap();
            let model = f.bench().unwrap().run(board).unwrap();
            let ratio = f.ratio(model);
            if !(TOLERANCE.0..=TOLERANCE.1).contains(&ratio) {
                outside
                    .push(format!("{board} {}: model {model:.1}, published {}, ratio {ratio:.2}", f.name, f.published));
            }
        }
        assert!(outside.is_empty(), "outside {TOLERANCE:?}:\n{}", outside.join("\n"));
    }

    /// With exact time (`--exact-time`) the figures hold but one, as
    /// docs/performance.md says: Wormhole's one-transaction read round
    /// trip, whose default fit leans on the slice's rounding.
    #[test]
    fn exact_time_leaves_only_the_wormhole_read_round_trip_outside() {
        let mut outside = Vec::new();
        for f in load(None).unwrap() {
            let board = f.home().unwrap();
            let exact = SimConfig { exact_time: true, ..SimConfig::for_board(board) };
            let ratio = f.ratio(f.bench().unwrap().run_on(exact).unwrap());
            if !(TOLERANCE.0..=TOLERANCE.1).contains(&ratio) {
                outside.push((board, f.bench.clone()));
            }
        }
        assert_eq!(outside, [(Board::WormholeN150, "read-round-trip".to_owned())]);
    }

    /// Without link contention (`--no-link-contention`, the model before
    /// it became the default) every figure still holds: each benchmark's
    /// packets share their path's links only with packets of the same
    /// sender, which its NIU already sends one at a time.
    #[test]
    fn every_figure_holds_without_link_contention_too() {
        let mut outside = Vec::new();
        for f in load(None).unwrap() {
            let board = f.home().unwrap();
            let mut cfg = SimConfig::for_board(board);
            cfg.noc.link_contention = false;
            let (model, default) = (f.bench().unwrap().run_on(cfg).unwrap(), f.bench().unwrap().run(board).unwrap());
            let ratio = f.ratio(model);
            if !(TOLERANCE.0..=TOLERANCE.1).contains(&ratio) {
                outside.push(format!("{board} {}: model {model:.1} (default {default:.1}), ratio {ratio:.2}", f.name));
            }
        }
        assert!(outside.is_empty(), "outside {TOLERANCE:?}:\n{}", outside.join("\n"));
    }

    #[test]
    fn the_built_in_figures_name_benchmarks_of_their_unit() {
        let figures = load(None).unwrap();
        assert!(figures.iter().any(|f| f.arch() == Ok(Arch::Blackhole)));
        for f in &figures {
            f.bench().unwrap();
        }
    }

    /// The figures of `figures`, each a JSON object, or the error.
    fn parsed(figures: &[&str]) -> Result<Vec<Figure>, String> {
        parse("test", &format!(r#"{{"figures": [{}]}}"#, figures.join(","))).map_err(|e| e.to_string())
    }

    const L1: &str = r#"{"name":"stores","arch":"wormhole","bench":"l1-stores","count":64,"published":5,"unit":"cycles","source":"s"}"#;

    /// `L1` with `edit` applied to its object.
    fn l1(edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) -> String {
        let mut v: serde_json::Value = serde_json::from_str(L1).unwrap();
        edit(v.as_object_mut().unwrap());
        v.to_string()
    }

    /// A figure naming a board is judged on that board alone (a p150a's
    /// all-bank DRAM figure is no p100a's, of 7 banks); one without on
    /// every board of its arch. A board of another arch is refused.
    #[test]
    fn a_figure_naming_its_board_is_judged_there_alone() {
        let on = |board: &str| l1(|o| drop(o.insert("board".into(), board.into())));
        let figures = parsed(&[&on("wormhole-n300"), &l1(|o| drop(o.insert("count".into(), 32.into())))]).unwrap();
        assert!(figures[0].applies_to(Board::WormholeN300) && !figures[0].applies_to(Board::WormholeN150));
        assert!(figures[1].applies_to(Board::WormholeN300) && figures[1].applies_to(Board::WormholeN150));
        assert!(!figures[1].applies_to(Board::BlackholeP150a));
        let e = parsed(&[&on("blackhole-p150a")]).unwrap_err();
        assert!(e.contains("figure 1 (stores): board blackhole-p150a: not a wormhole board"), "{e}");
        let e = parsed(&[&on("n250")]).unwrap_err();
        assert!(e.contains("figure 1 (stores): board: unknown chip `n250`"), "{e}");
        // The card's name is the board's: kept by its full name, and a
        // duplicate of the same measurement given by the full name.
        let figures = parsed(&[&on("n300")]).unwrap();
        assert_eq!(figures[0].board.as_deref(), Some("wormhole-n300"));
        let e = parsed(&[&on("n300"), &on("wormhole-n300")]).unwrap_err();
        assert!(e.contains("on wormhole-n300: a duplicate"), "{e}");
    }

    /// The built-in figures whose source names the board they were measured
    /// on say so; the counts the README gives stay whole (n150 25, p150a 15).
    #[test]
    fn built_in_figures_of_one_board_name_it() {
        let figures = load(None).unwrap();
        for f in &figures {
            let named = f.source.contains("n150");
            assert_eq!(f.board.as_deref(), named.then_some("wormhole-n150"), "{}", f.name);
        }
        let on = |b: Board| figures.iter().filter(|f| f.applies_to(b)).count();
        assert_eq!(Board::ALL.map(on), [25, 23, 15, 15]);
    }

    /// One measurement given twice (also once for every board of its arch
    /// and once for one of them) is refused, naming both; the same
    /// benchmark on two boards is not a duplicate.
    #[test]
    fn a_duplicate_figure_is_refused() {
        let e = parsed(&[L1, L1]).unwrap_err();
        assert!(e.contains("figure 2 (stores): the same benchmark as figure 1 (stores), l1-stores, count 64"), "{e}");
        let on = |board: &str| l1(|o| drop(o.insert("board".into(), board.into())));
        assert!(parsed(&[L1, &on("wormhole-n150")]).unwrap_err().contains("on wormhole-n150: a duplicate"));
        assert!(parsed(&[&on("wormhole-n150"), &on("wormhole-n300")]).is_ok());
        // A read round trip on NOC0 whether or not `noc` says so.
        let rtt = r#"{"name":"rt","arch":"wormhole","bench":"read-round-trip","bytes":32,"count":1,"published":290,"unit":"cycles","source":"s""#;
        assert!(parsed(&[&format!("{rtt}}}"), &format!(r#"{rtt},"noc":0}}"#)]).unwrap_err().contains("duplicate"));
        assert!(parsed(&[&format!("{rtt}}}"), &format!(r#"{rtt},"noc":1}}"#)]).is_ok());
    }

    #[test]
    fn a_figure_without_a_name_or_source_is_refused() {
        let e = parsed(&[&l1(|o| drop(o.insert("name".into(), " ".into())))]).unwrap_err();
        assert!(e.contains("figure 1 ( ): name: empty"), "{e}");
        let e = parsed(&[&l1(|o| drop(o.insert("source".into(), "".into())))]).unwrap_err();
        assert!(e.contains("figure 1 (stores): source: empty"), "{e}");
    }

    /// A field the benchmark does not take is refused, not ignored.
    #[test]
    fn a_field_the_benchmark_does_not_take_is_refused() {
        let e = parsed(&[&l1(|o| drop(o.insert("noc".into(), 1.into())))]).unwrap_err();
        assert!(e.contains("figure 1 (stores): noc: bench l1-stores takes no noc, only count"), "{e}");
        let e = parsed(&[&l1(|o| drop(o.insert("bytes".into(), 4.into())))]).unwrap_err();
        assert!(e.contains("bytes: bench l1-stores takes no bytes"), "{e}");
        let host = r#"{"name":"h","arch":"wormhole","bench":"host-write","bytes":4,"count":9,"published":39,"unit":"ns","source":"s"}"#;
        assert!(parsed(&[host])
            .unwrap_err()
            .contains("figure 1 (h): count: bench host-write takes no count, only bytes"));
        let one = r#"{"name":"o","arch":"wormhole","bench":"one-to-one","bytes":64,"count":4,"noc":0,"published":1,"unit":"B/cycle","source":"s"}"#;
        assert!(parsed(&[one]).unwrap_err().contains("noc: bench one-to-one takes no noc, only bytes, count"));
    }

    /// A figure of the wrong shape (a field missing, of the wrong type or
    /// unknown) is named by its place and its name.
    #[test]
    fn a_misshapen_figure_is_named() {
        let e = parsed(&[L1, &l1(|o| drop(o.insert("count".into(), "16".into())))]).unwrap_err();
        assert!(e.contains("test: figure 2 (stores): invalid type: string \"16\", expected u32"), "{e}");
        let e = parsed(&[&l1(|o| drop(o.remove("unit")))]).unwrap_err();
        assert!(e.contains("figure 1 (stores): missing field `unit`"), "{e}");
        let e = parsed(&[&l1(|o| drop(o.insert("chip".into(), "wormhole-n150".into())))]).unwrap_err();
        assert!(e.contains("figure 1 (stores): unknown field `chip`"), "{e}");
        let e = parsed(&[&l1(|o| drop(o.remove("name")))]).unwrap_err();
        assert!(e.contains("figure 1: missing field `name`"), "{e}");
    }

    /// The table's ratio is on the side of the tolerance its flag says,
    /// and the model column has the digits a small figure needs.
    #[test]
    fn the_table_shows_what_its_flag_judges() {
        let line = |model: f64, published: f64| {
            let f: Figure =
                serde_json::from_str(&l1(|o| drop(o.insert("published".into(), published.into())))).unwrap();
            let ratio = f.ratio(model);
            let row = Row {
                name: f.name.clone(),
                chip: "wormhole-n150".into(),
                bench: f.bench.clone(),
                model,
                published,
                published_max: None,
                unit: "cycles",
                ratio,
                calibrated: (TOLERANCE.0..=TOLERANCE.1).contains(&ratio),
                source: f.source,
                timing: Model::default(),
            };
            table_line(&row)
        };
        assert!(line(4.75, 4.129).contains(" 1.1504 *  s"), "{}", line(4.75, 4.129));
        assert!(line(4.75, 5.591).contains(" 0.8496 *  s"), "{}", line(4.75, 5.591));
        assert!(line(4.75, 4.75).contains(" 4.750 ") && line(4.75, 4.75).contains(" 1.00  s"));
        assert!(line(0.00976, 0.0098).contains(" 0.009760 ") && line(0.00976, 0.0098).contains(" 1.00  s"));
        assert_eq!(significant(261.751, 4), "261.8");
        assert_eq!(significant(0.0, 4), "0");
        assert_eq!(ratio_shown(1.15), "1.15");
    }

    /// `--no-l0-cache` departs from the default on Blackhole alone.
    #[test]
    fn the_header_says_no_l0_caches_only_where_there_are_some() {
        let no_l0 = Model { l0_cache: false, ..Model::default() };
        assert!(!header(Board::WormholeN150, 0, no_l0).contains("L0"), "{}", header(Board::WormholeN150, 0, no_l0));
        assert!(header(Board::BlackholeP150a, 0, no_l0).ends_with("one run each, no L0 data caches)"));
    }

    #[test]
    fn a_range_counts_as_met_inside_it() {
        let f: Figure = serde_json::from_str(
            r#"{"name":"x","arch":"wormhole","bench":"host-read","bytes":4,"published":671,"published_max":960,"unit":"ns","source":"s"}"#,
        )
        .unwrap();
        assert_eq!(f.ratio(700.0), 1.0);
        assert_eq!(f.ratio(335.5), 0.5);
        assert_eq!(f.ratio(1920.0), 2.0);
    }

    #[test]
    fn a_figure_whose_unit_is_not_its_benchmarks_is_refused() {
        let f: Figure = serde_json::from_str(
            r#"{"name":"x","arch":"wormhole","bench":"one-to-one","bytes":64,"count":4,"published":1,"unit":"ns","source":"s"}"#,
        )
        .unwrap();
        assert!(f.bench().unwrap_err().contains("measures B/cycle"));
    }

    #[test]
    fn a_published_value_a_ratio_cannot_be_taken_against_is_refused() {
        let figure = |published: &str, max: &str| -> Figure {
            let json = format!(
                r#"{{"name":"x","arch":"wormhole","bench":"host-read","bytes":4,"published":{published},"published_max":{max},"unit":"ns","source":"s"}}"#
            );
            serde_json::from_str(&json).unwrap()
        };
        assert!(figure("0", "null").check_published().is_err());
        assert!(figure("1e-320", "null").check_published().unwrap_err().contains("published 1e-320: a finite"));
        assert!(figure("671", "1e-320").check_published().is_err());
        assert!(figure("-3", "null").check_published().is_err());
        assert!(figure("671", "600").check_published().is_err());
        assert!(figure("671", "960").check_published().is_ok());
    }
}
