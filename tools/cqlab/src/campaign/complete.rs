//! Which runs of a campaign have no record, shard by shard: what `campaign
//! merge` says before it calls a report the campaign's, and what a Slurm
//! task checks before it reports success. The records say how many runs
//! their campaign has and which shard ran each ([`Membership`]), so runs
//! after the highest index found, and shards that wrote nothing, count.

use super::{Membership, SeedRecord, Shard};
use crate::usage::UsageError;
use serde::Serialize;

/// One shard's runs without a record.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardGap {
    pub shard: Shard,
    /// Runs the shard owns.
    pub owns: u64,
    /// Of them, runs without a record.
    pub missing: u64,
    /// The missing runs as spans `[first, last]` of the shard's own runs
    /// (each span is every shard-count-th run from `first` to `last`).
    pub runs: Vec<(u64, u64)>,
}

/// What a campaign's records cover.
#[derive(Clone, Debug, PartialEq)]
pub enum Coverage {
    /// Records before 2026-12-02 do not say their campaign's size: only
    /// the runs below the highest index found can be missed.
    Unsized { missing: u64, last: u64, first_missing: u64 },
    /// Every run of the expected shards (all, or `only`), and which have
    /// no record.
    Sized { runs: u64, shards: u64, only: Option<Shard>, gaps: Vec<ShardGap> },
}

impl Coverage {
    /// The runs of `records` (one campaign's, as `read_records` checked)
    /// without a record: of the whole campaign, or of shard `only`.
    pub fn of(records: &[SeedRecord], only: Option<Shard>) -> Result<Self, UsageError> {
        let Some(m) = records.iter().find_map(|r| r.campaign.as_ref()) else {
            if only.is_some() {
                return Err(UsageError(
                    "--shard: these records do not say their shard (records before 2026-12-02)".into(),
                ));
            }
            return Ok(below_highest(records));
        };
        let count = m.shard.count;
        let shards: Vec<Shard> = match only {
            Some(s) => {
                if let Some(r) = records.iter().find(|r| r.campaign.as_ref().is_some_and(|m| m.shard != s)) {
                    let theirs = r.campaign.as_ref().map(|m| m.shard);
                    return Err(UsageError(format!(
                        "--shard {s}: run {} was written by shard {}",
                        r.index,
                        theirs.expect("found by its campaign")
                    )));
                }
                vec![s]
            }
            None => (0..count).map(|i| Shard { index: i, count }).collect(),
        };
        let mut by_shard: std::collections::BTreeMap<u64, Vec<&SeedRecord>> = Default::default();
        for r in records {
            by_shard.entry(r.index % count).or_default().push(r);
        }
        let gaps =
            shards.iter().filter_map(|&s| gap(s, m, by_shard.get(&s.index).map_or(&[][..], Vec::as_slice))).collect();
        Ok(Coverage::Sized { runs: m.runs, shards: shards.len() as u64, only, gaps })
    }

    /// Runs without a record.
    pub fn missing(&self) -> u64 {
        match self {
            Coverage::Unsized { missing, .. } => *missing,
            Coverage::Sized { gaps, .. } => gaps.iter().map(|g| g.missing).sum(),
        }
    }

    /// Whether the merge must exit [`crate::exit::Exit::Incomplete`]: runs
    /// of a campaign that says its size have no record.
    pub fn incomplete(&self) -> bool {
        matches!(self, Coverage::Sized { gaps, .. } if !gaps.is_empty())
    }

    /// Says on stderr which shards and runs have no record.
    pub fn warn(&self) {
        match self {
            Coverage::Unsized { missing: 0, .. } => {}
            Coverage::Unsized { missing, last, first_missing } => crate::out::diagln!(
                "warning: {missing} of runs 0..={last} have no record (the first: run {first_missing}): a shard or \
                 task lost, or a campaign stopped early (--until-first); these records do not say their campaign's \
                 size (written before 2026-12-02), so runs after run {last} are not counted"
            ),
            Coverage::Sized { runs, shards, gaps, .. } => {
                if gaps.is_empty() {
                    return;
                }
                let none: Vec<&ShardGap> = gaps.iter().filter(|g| g.missing == g.owns).collect();
                if !none.is_empty() {
                    let count = none[0].shard.count;
                    let names: Vec<String> = none.iter().map(|g| g.shard.index.to_string()).collect();
                    crate::out::diagln!(
                        "warning: {} of {shards} {} wrote no record: {} {} (of {count}; {} runs of {runs})",
                        none.len(),
                        plural(*shards, "shard", "shards"),
                        plural(none.len() as u64, "shard", "shards"),
                        list(&names),
                        none.iter().map(|g| g.owns).sum::<u64>()
                    );
                }
                for g in gaps.iter().filter(|g| g.missing < g.owns) {
                    crate::out::diagln!(
                        "warning: shard {} has no record of {} of its {} runs: {}",
                        g.shard,
                        g.missing,
                        g.owns,
                        spans(g)
                    );
                }
            }
        }
    }

    /// The report's own line (after the report): how much is missing and
    /// what to do.
    pub fn say(&self, present: usize) {
        let missing = self.missing();
        if missing == 0 {
            return;
        }
        let has = plural(missing, "has", "have");
        let covers = format!("the report covers the {present} {} present", plural(present as u64, "run", "runs"));
        match self {
            Coverage::Unsized { .. } => {
                crate::out::outln!("{missing} {} no record: {covers}", plural(missing, "run has", "runs have"))
            }
            Coverage::Sized { only: Some(s), .. } => crate::out::outln!(
                "incomplete: {missing} of the {} runs of shard {s} {has} no record: {covers}",
                s.count_in(self.total())
            ),
            Coverage::Sized { runs, .. } => crate::out::outln!(
                "incomplete: {missing} of the campaign's {runs} runs {has} no record: {covers}; rerun the shards \
                 named above with the same arguments (docs/campaigns.md, Shards and Slurm)"
            ),
        }
    }

    /// Runs in the campaign, as far as the records say.
    fn total(&self) -> u64 {
        match self {
            Coverage::Unsized { last, .. } => last + 1,
            Coverage::Sized { runs, .. } => *runs,
        }
    }

    /// The JSON report's fields on runs without a record.
    pub fn to_json(&self, v: &mut serde_json::Value) {
        v["missing_runs"] = self.missing().into();
        if let Coverage::Sized { runs, gaps, .. } = self {
            v["campaign_runs"] = (*runs).into();
            v["incomplete"] = (!gaps.is_empty()).into();
            v["missing_shards"] =
                gaps.iter().filter(|g| g.missing == g.owns).map(|g| g.shard.index).collect::<Vec<_>>().into();
            v["incomplete_shards"] = serde_json::to_value(gaps).unwrap_or_default();
        }
    }
}

fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// `a, b and c`, the first 20 of a long list and how many more.
fn list(names: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut text = names[..names.len().min(SHOWN)].join(", ");
    if names.len() > SHOWN {
        text += &format!(" and {} more", names.len() - SHOWN);
    }
    text
}

/// A shard's missing runs, as spans of its own runs.
fn spans(g: &ShardGap) -> String {
    let step = g.shard.count;
    let names: Vec<String> = g
        .runs
        .iter()
        .map(|&(a, b)| match (b - a) / step {
            0 => format!("run {a}"),
            1 => format!("runs {a} and {b}"),
            _ if step == 1 => format!("runs {a}..={b}"),
            _ => format!("runs {a}..={b} (every {})", ordinal(step)),
        })
        .collect();
    list(&names)
}

/// `2nd`, `3rd`, `4th`, `11th`, `21st`.
fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Shard `s`'s runs without a record among `present` (its records), or
/// none when it has them all, or stopped at its first failure under
/// `--until-first`.
fn gap(s: Shard, m: &Membership, present: &[&SeedRecord]) -> Option<ShardGap> {
    let owns = s.count_in(m.runs);
    let mut indices: Vec<u64> = present.iter().map(|r| r.index).collect();
    indices.sort_unstable();
    if indices.len() as u64 == owns {
        return None;
    }
    // The k-th run of the shard is run index + k * count.
    let k = |i: u64| (i - s.index) / s.count;
    if m.until_first {
        let prefix = indices.iter().enumerate().all(|(n, &i)| k(i) == n as u64);
        let last = present.iter().max_by_key(|r| r.index);
        if prefix && last.is_some_and(|r| !r.ok && !r.killed_on_purpose()) {
            return None;
        }
    }
    let mut runs = Vec::new();
    let mut next = 0; // the shard's next run expected
    for &i in indices.iter().chain(std::iter::once(&(s.index + owns * s.count))) {
        if k(i) > next {
            runs.push((s.index + next * s.count, s.index + (k(i) - 1) * s.count));
        }
        next = k(i) + 1;
    }
    Some(ShardGap { shard: s, owns, missing: owns - indices.len() as u64, runs })
}

/// Records that do not say their campaign's size: the runs below the
/// highest index without one.
fn below_highest(records: &[SeedRecord]) -> Coverage {
    let mut present: Vec<u64> = records.iter().map(|r| r.index).collect();
    present.sort_unstable();
    let last = present.last().copied().unwrap_or(0);
    let missing = if present.is_empty() { 0 } else { last + 1 - present.len() as u64 };
    let first_missing = (0..).zip(&present).find(|&(i, &at)| i != at).map_or(last, |(i, _)| i);
    Coverage::Unsized { missing, last, first_missing }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(index: u64, count: u64, runs: u64) -> SeedRecord {
        SeedRecord {
            tool: "race".into(),
            seed: index + 1,
            index,
            ok: true,
            killed: false,
            after_kill: None,
            failure: None,
            device_cycles: 0,
            seconds: 0.0,
            metrics: Default::default(),
            argv: vec![],
            dump_error: None,
            campaign: Some(Membership::new(runs, Shard { index: index % count, count }, String::new())),
        }
    }

    #[test]
    fn runs_after_the_highest_index_and_lost_shards_are_missing() {
        // 20 runs in 4 shards: shard 1 lost, shard 2 stopped after 2 runs.
        let records: Vec<SeedRecord> =
            (0..20).filter(|i| i % 4 != 1 && !(i % 4 == 2 && *i >= 10)).map(|i| record(i, 4, 20)).collect();
        let c = Coverage::of(&records, None).unwrap();
        let Coverage::Sized { runs: 20, shards: 4, gaps, .. } = &c else { panic!("{c:?}") };
        assert_eq!(gaps.len(), 2, "{gaps:?}");
        assert_eq!((gaps[0].shard.index, gaps[0].owns, gaps[0].missing, &gaps[0].runs[..]), (1, 5, 5, &[(1, 17)][..]));
        assert_eq!((gaps[1].shard.index, gaps[1].owns, gaps[1].missing, &gaps[1].runs[..]), (2, 5, 3, &[(10, 18)][..]));
        assert_eq!(c.missing(), 8);
        assert!(c.incomplete());
        assert_eq!(spans(&gaps[1]), "runs 10..=18 (every 4th)");
        assert_eq!([2, 3, 11, 21, 112].map(ordinal), ["2nd", "3rd", "11th", "21st", "112th"]);
        // One shard alone is judged on its own runs.
        let only = Coverage::of(&records[..0], Some(Shard { index: 3, count: 4 }));
        assert!(only.is_err(), "no records say nothing of their campaign");
        let shard3: Vec<SeedRecord> = records.iter().filter(|r| r.index % 4 == 3).cloned().collect();
        assert!(!Coverage::of(&shard3, Some(Shard { index: 3, count: 4 })).unwrap().incomplete());
        assert!(Coverage::of(&shard3, Some(Shard { index: 2, count: 4 })).is_err(), "another shard's records");
    }

    #[test]
    fn a_hole_inside_a_shard_is_a_span_of_its_own() {
        let records: Vec<SeedRecord> = [0, 2, 3, 6].into_iter().map(|i| record(i, 1, 8)).collect();
        let c = Coverage::of(&records, None).unwrap();
        let Coverage::Sized { gaps, .. } = &c else { panic!("{c:?}") };
        assert_eq!(gaps[0].runs, [(1, 1), (4, 5), (7, 7)]);
        assert_eq!(spans(&gaps[0]), "run 1, runs 4 and 5, run 7");
    }

    #[test]
    fn an_until_first_shard_that_stopped_at_a_failure_is_whole() {
        let mut records: Vec<SeedRecord> = (0..3).map(|i| record(i, 1, 8)).collect();
        for r in &mut records {
            r.campaign.as_mut().unwrap().until_first = true;
        }
        assert!(Coverage::of(&records, None).unwrap().incomplete(), "stopped without a failure");
        records[2].ok = false;
        assert!(!Coverage::of(&records, None).unwrap().incomplete());
    }
}
