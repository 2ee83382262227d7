//! What `cargo xtask mutants` and `cargo xtask mutants --host` share: their
//! options, racing one build with `cqlab race` workload after workload until
//! one fails, reading the failing tests out of a nextest run, and output.

use anyhow::{bail, Context, Result};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Output};

/// `cqlab race --jitter`'s bound (`MAX_LATENCY` in
/// `tools/cqlab/src/race/args.rs`; xtask does not link cqlab), checked here
/// so that a bad value is refused before any mutant is built.
const MAX_JITTER: u64 = 10_000_000;
/// `cqlab race --faults backpressure=N`'s bound (`MAX_CYCLES` in
/// `tools/cqlab/src/race/faults.rs`), checked here for the same reason.
const MAX_BACKPRESSURE: u64 = 10_000_000;

/// Workloads tried in turn, cheapest first.
pub const WORKLOADS: &[&str] = &["two-queue", "random", "programs"];

pub struct Options {
    pub seeds: u64,
    pub jobs: u32,
    pub only: Vec<String>,
    pub workloads: Vec<String>,
    /// Also run the whole test suite on each mutant.
    pub tests: bool,
    pub json: Option<PathBuf>,
    /// `cqlab race --jitter` for every race: seeded extra latency on every
    /// NOC and PCIe transaction, the amplifier that widens ordering windows.
    pub jitter: Option<u64>,
    /// `cqlab race --faults backpressure=N` for every race: each NOC write
    /// waits up to N cycles before it leaves its core, the amplifier for
    /// waits on a write having landed (`worker-done-before-writes-landed`).
    pub backpressure: Option<u64>,
    /// `cqlab race --reads-pass-unsent false` for every race: the model
    /// before 2026-12-01, where a host read waited for the host writes
    /// still queued in its NIU too (which hid
    /// `prefetch-chunk-refill-before-sent`, docs/race-finder.md).
    pub reads_wait_unsent: bool,
    /// `cqlab race --exact-time` for every race: the exact-time model,
    /// effects between tiles at the cycle they are due.
    pub exact_time: bool,
    /// `cqlab race --blocking-loads` for every race: the model before L1
    /// loads in flight became the default (2026-11-30).
    pub blocking_loads: bool,
    /// `cqlab race --link-contention false` for every race: the model
    /// before link contention between routers became the default
    /// (2026-11-30).
    pub no_link_contention: bool,
    /// `cqlab race --icache` for every race: instruction caches, an option
    /// (their miss cost is unpublished).
    pub icache: bool,
}

impl Options {
    /// Parses `args` for mutants called `names` (`--seeds` defaulting to
    /// `seeds`); `None` when `--list` printed `list()` instead.
    pub fn parse(
        args: &[String],
        seeds: u64,
        names: &[&str],
        list: impl FnOnce() -> String,
        usage: &str,
    ) -> Result<Option<Self>> {
        let mut o = Options {
            seeds,
            jobs: 2,
            only: Vec::new(),
            workloads: WORKLOADS.iter().map(|w| w.to_string()).collect(),
            tests: false,
            json: None,
            jitter: None,
            backpressure: None,
            reads_wait_unsent: false,
            exact_time: false,
            blocking_loads: false,
            no_link_contention: false,
            icache: false,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().with_context(|| format!("{a} needs a value ({usage})"));
            match a.as_str() {
                "--list" => {
                    print_out(&list());
                    return Ok(None);
                }
                "--seeds" => {
                    o.seeds = value()?.parse().ok().filter(|&n| n > 0).context("--seeds: a positive number")?
                }
                "--jobs" => {
                    o.jobs = value()?.parse().ok().filter(|j| (1..=256).contains(j)).context("--jobs: 1..=256")?
                }
                "--only" => o.only = value()?.split(',').map(str::to_owned).collect(),
                "--workloads" => o.workloads = value()?.split(',').map(str::to_owned).collect(),
                "--json" => o.json = Some(PathBuf::from(value()?)),
                "--tests" => o.tests = true,
                "--exact-time" => o.exact_time = true,
                "--blocking-loads" => o.blocking_loads = true,
                "--no-link-contention" => o.no_link_contention = true,
                "--icache" => o.icache = true,
                "--reads-wait-unsent" => o.reads_wait_unsent = true,
                "--read-passes-unsent" => bail!(
                    "--read-passes-unsent: cqlab race's default model since 2026-12-01 (a read of host memory \
                     passes the writes still queued in its NIU); leave it out, or give --reads-wait-unsent for \
                     the model before"
                ),
                "--jitter" => {
                    let cycles = value()?.parse().ok().filter(|&n| n <= MAX_JITTER);
                    o.jitter = Some(cycles.with_context(|| format!("--jitter: cycles, 0..={MAX_JITTER}"))?)
                }
                "--backpressure" => {
                    let cycles = value()?.parse().ok().filter(|&n| n <= MAX_BACKPRESSURE);
                    o.backpressure =
                        Some(cycles.with_context(|| format!("--backpressure: cycles, 0..={MAX_BACKPRESSURE}"))?)
                }
                other => bail!("unknown argument {other:?} ({usage})"),
            }
        }
        for name in &o.only {
            if !names.contains(&name.as_str()) {
                bail!("--only {name}: no such mutant (`--list` lists them)");
            }
        }
        for w in &o.workloads {
            if !WORKLOADS.contains(&w.as_str()) {
                bail!("--workloads {w}: one of {}", WORKLOADS.join(", "));
            }
        }
        Ok(Some(o))
    }

    /// The race options every race takes besides its workload's
    /// defaults, as the table's heading says them.
    pub fn race_options(&self) -> String {
        let options: Vec<String> = self.race_args().chunks(2).map(|pair| pair.join(" ")).collect();
        if options.is_empty() {
            return "at default options".into();
        }
        format!("with {}", options.join(" and "))
    }

    /// The `cqlab race` arguments of the campaign's amplifiers.
    fn race_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(j) = self.jitter {
            args.extend(["--jitter".to_owned(), j.to_string()]);
        }
        if let Some(b) = self.backpressure {
            args.extend(["--faults".to_owned(), format!("backpressure={b}")]);
        }
        if self.exact_time {
            args.extend(["--exact-time".to_owned(), "true".to_owned()]);
        }
        if self.blocking_loads {
            args.extend(["--blocking-loads".to_owned(), "true".to_owned()]);
        }
        if self.no_link_contention {
            args.extend(["--link-contention".to_owned(), "false".to_owned()]);
        }
        if self.icache {
            args.extend(["--icache".to_owned(), "true".to_owned()]);
        }
        if self.reads_wait_unsent {
            args.extend(["--reads-pass-unsent".to_owned(), "false".to_owned()]);
        }
        args
    }

    /// Whether `--only` keeps mutant `name`.
    pub fn selects(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|n| n == name)
    }
}

/// The workload that caught a mutant and its first failure.
pub struct Caught {
    pub workload: String,
    /// Seeds run until the first failure (with `--jobs`, in finishing order).
    pub seeds: u64,
    /// The failing seed.
    pub seed: u64,
    pub signature: String,
    pub replay: String,
}

/// Races a mutant with each workload in turn until one fails: `race(w)` is
/// `cqlab race --workload w` with the mutant's options, to which the
/// campaign's are added. Returns what caught it, and the seeds run.
pub fn race_until_caught(name: &str, o: &Options, race: impl Fn(&str) -> Command) -> Result<(Option<Caught>, u64)> {
    let mut seeds_run = 0;
    for w in &o.workloads {
        let mut cmd = race(w);
        cmd.args(["--seeds", &o.seeds.to_string(), "--jobs", &o.jobs.to_string(), "--until-first", "--json"]);
        cmd.args(o.race_args());
        let out = cmd.output().context("running cqlab race")?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).with_context(|| {
            format!("cqlab race --workload {w} with {name}: {}", String::from_utf8_lossy(&out.stderr).trim())
        })?;
        seeds_run += v["runs"].as_u64().unwrap_or(0);
        if v["failures"].as_u64().unwrap_or(0) > 0 {
            let sig = &v["signatures"][0];
            let caught = Caught {
                workload: w.clone(),
                seeds: v["runs_to_first_failure"].as_u64().unwrap_or(0),
                seed: v["first_failing_seed"].as_u64().unwrap_or(0),
                signature: sig["signature"].as_str().unwrap_or("").to_owned(),
                replay: sig["replay"].as_str().unwrap_or("").to_owned(),
            };
            eprintln!(
                "xtask:   caught by {w} after {} seeds, first at seed {}: {}",
                caught.seeds, caught.seed, caught.signature
            );
            return Ok((Some(caught), seeds_run));
        }
        eprintln!("xtask:   {w}: 0 of {} seeds failed", o.seeds);
    }
    Ok((None, seeds_run))
}

/// The tests a nextest run (`out`) failed on `what`.
pub fn failed_tests(out: &Output, what: &str) -> Result<Vec<String>> {
    let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    let mut failed: Vec<String> = log
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("FAIL ["))
        .filter_map(|rest| rest.split_once(") ").map(|(_, name)| name.trim().to_owned()))
        .collect();
    failed.sort();
    failed.dedup();
    if failed.is_empty() && !out.status.success() {
        bail!("the tests did not run on {what}:\n{log}");
    }
    eprintln!("xtask:   tests: {} failed", failed.len());
    Ok(failed)
}

/// A JSON row: `fields` and what caught the mutant (nulls if nothing).
pub fn row_json(mut fields: serde_json::Value, c: Option<&Caught>) -> serde_json::Value {
    let caught = serde_json::json!({
        "caught": c.is_some(),
        "workload": c.map(|c| &c.workload),
        "seeds_to_first_failure": c.map(|c| c.seeds),
        "first_failing_seed": c.map(|c| c.seed),
        "signature": c.map(|c| &c.signature),
        "replay": c.map(|c| &c.replay),
    });
    if let (Some(row), serde_json::Value::Object(more)) = (fields.as_object_mut(), caught) {
        row.extend(more);
    }
    fields
}

/// Writes the report to `--json`, if given.
pub fn write_json(o: &Options, report: &serde_json::Value) -> Result<()> {
    if let Some(path) = &o.json {
        std::fs::write(path, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Writes to stdout; a reader that went away (`| head -1`) is not an error.
pub fn print_out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Options>> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        Options::parse(&args, 30, &["m"], String::new, "usage")
    }

    #[test]
    fn jitter_is_a_bounded_cycle_count_and_the_heading_says_it() {
        let o = parse(&["--jitter", "2000"]).unwrap().unwrap();
        assert_eq!((o.jitter, o.race_options().as_str()), (Some(2000), "with --jitter 2000"));
        assert_eq!(parse(&[]).unwrap().unwrap().race_options(), "at default options");
        for bad in [&["--jitter"][..], &["--jitter", "x"], &["--jitter", "-1"], &["--jitter", "10000001"]] {
            let e = parse(bad).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(e.to_string().contains("--jitter"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn backpressure_becomes_races_fault_and_the_heading_says_it() {
        let o = parse(&["--backpressure", "3000", "--jitter", "5"]).unwrap().unwrap();
        assert_eq!(o.race_args(), ["--jitter", "5", "--faults", "backpressure=3000"]);
        assert_eq!(o.race_options(), "with --jitter 5 and --faults backpressure=3000");
        let o = parse(&["--backpressure", "3000", "--reads-wait-unsent"]).unwrap().unwrap();
        assert_eq!(o.race_args(), ["--faults", "backpressure=3000", "--reads-pass-unsent", "false"]);
        let o = parse(&["--reads-wait-unsent"]).unwrap().unwrap();
        assert_eq!(o.race_options(), "with --reads-pass-unsent false");
        let old = parse(&["--read-passes-unsent"]).err().expect("the old flag names the default");
        assert!(old.to_string().contains("default model since 2026-12-01"), "{old}");
        let o = parse(&["--exact-time"]).unwrap().unwrap();
        assert_eq!(o.race_options(), "with --exact-time true");
        let o = parse(&["--blocking-loads", "--exact-time"]).unwrap().unwrap();
        assert_eq!(o.race_options(), "with --exact-time true and --blocking-loads true");
        let o = parse(&["--no-link-contention"]).unwrap().unwrap();
        assert_eq!(o.race_options(), "with --link-contention false");
        let o = parse(&["--icache", "--no-link-contention"]).unwrap().unwrap();
        assert_eq!(o.race_options(), "with --link-contention false and --icache true");
        for bad in [&["--backpressure"][..], &["--backpressure", "1e3"], &["--backpressure", "10000001"]] {
            let e = parse(bad).err().unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(e.to_string().contains("--backpressure"), "{bad:?}: {e}");
        }
    }
}
