//! Which runs of a campaign this process does: `--shard I/N`, or the index
//! a batch system hands an array task (Slurm's SLURM_ARRAY_TASK_ID and
//! SLURM_ARRAY_TASK_COUNT, Kubernetes' JOB_COMPLETION_INDEX with
//! CQLAB_SHARD_COUNT for the count, as an indexed Job does not export it).
//! Run `i` of the campaign belongs to shard `i % N`.

use crate::usage::UsageError;

/// Most shards a campaign splits into (`--jobs` splits each again, by at most 256).
pub const MAX_SHARDS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    pub fn parse(text: &str) -> Result<Self, UsageError> {
        let bad = || UsageError(format!("--shard {text:?}: expected I/N with 0 <= I < N <= {MAX_SHARDS}"));
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        Self::new(index, count).ok_or_else(bad)
    }

    pub fn new(index: u64, count: u64) -> Option<Self> {
        (count > 0 && count <= MAX_SHARDS && index < count).then_some(Shard { index, count })
    }

    /// Warns when this shard, taken from the environment, owns none of
    /// `runs` runs: a Slurm array task's variables leave a one-seed replay
    /// line run there nothing to run (helper-49: "0 of 0 runs failed").
    pub fn warn_if_empty(&self, runs: u64) {
        if self.count_in(runs) == 0 {
            crate::out::diagln!(
                "warning: shard {}/{} owns none of the {runs} runs (run i belongs to shard i % {}): nothing runs \
                 here; the shard comes from SLURM_ARRAY_TASK_ID/COUNT or JOB_COMPLETION_INDEX/CQLAB_SHARD_COUNT \
                 in the environment (--shard 0/1 runs them all)",
                self.index,
                self.count,
                self.count
            );
        }
    }

    /// How many of runs `0..runs` this shard owns.
    pub fn count_in(&self, runs: u64) -> u64 {
        if self.index >= runs {
            0
        } else {
            (runs - self.index - 1) / self.count + 1
        }
    }

    /// `--shard` if given, else the batch system's environment, else whole.
    pub fn resolve(flag: Option<&str>) -> Result<Self, UsageError> {
        Self::resolve_from(flag, |k| std::env::var(k).ok())
    }

    pub fn resolve_from(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Result<Self, UsageError> {
        if let Some(f) = flag {
            return Self::parse(f);
        }
        let pair = |id: &str, count: &str| -> Result<Option<Shard>, UsageError> {
            match (env(id), env(count)) {
                (None, _) => Ok(None),
                (Some(_), None) => {
                    Err(UsageError(format!("{id} is set but {count} is not: cannot tell the shard count")))
                }
                // No --shard was given: the message names where the pair came from.
                (Some(i), Some(n)) => Self::parse(&format!("{i}/{n}")).map(Some).map_err(|e| {
                    let why = e.0.split_once(": ").map_or(e.0.as_str(), |(_, why)| why);
                    UsageError(format!("{id}={i:?} with {count}={n:?} (the shard, from the environment): {why}"))
                }),
            }
        };
        // Slurm array indices start where --array starts; cqlab's sbatch
        // script uses 0..N-1 so the task id is the shard index.
        if let Some(s) = pair("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT")? {
            return Ok(s);
        }
        if let Some(s) = pair("JOB_COMPLETION_INDEX", "CQLAB_SHARD_COUNT")? {
            return Ok(s);
        }
        Ok(Shard::WHOLE)
    }

    pub fn owns(&self, run_index: u64) -> bool {
        run_index % self.count == self.index
    }

    /// Shard `k` of `parts` inside this shard (for `--jobs`).
    pub fn split(&self, k: u64, parts: u64) -> Shard {
        Shard { index: self.index + self.count * k, count: self.count * parts }
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Records spell a shard as `--shard` does: `"I/N"`.
impl serde::Serialize for Shard {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Shard {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Shard::parse(&text).map_err(|e| serde::de::Error::custom(e.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_come_from_the_flag_slurm_or_kubernetes() {
        let none = |_: &str| None;
        assert_eq!(Shard::resolve_from(None, none).unwrap(), Shard::WHOLE);
        assert_eq!(Shard::resolve_from(Some("2/4"), none).unwrap(), Shard { index: 2, count: 4 });
        assert!(Shard::resolve_from(Some("4/4"), none).is_err());
        assert!(Shard::resolve_from(Some("x"), none).is_err());
        let slurm = |k: &str| match k {
            "SLURM_ARRAY_TASK_ID" => Some("3".into()),
            "SLURM_ARRAY_TASK_COUNT" => Some("5".into()),
            _ => None,
        };
        assert_eq!(Shard::resolve_from(None, slurm).unwrap(), Shard { index: 3, count: 5 });
        // A bad pair names the variables it came from, not a --shard never given.
        let garbage = |k: &str| slurm(k).map(|v| if k == "SLURM_ARRAY_TASK_ID" { "abc".into() } else { v });
        let e = Shard::resolve_from(None, garbage).unwrap_err().0;
        assert!(e.starts_with("SLURM_ARRAY_TASK_ID=\"abc\" with SLURM_ARRAY_TASK_COUNT=\"5\""), "{e}");
        assert!(!e.contains("--shard"), "{e}");
        let k8s = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "1".to_owned());
        assert!(Shard::resolve_from(None, k8s).is_err(), "an index without a count is refused");
    }

    #[test]
    fn split_shards_partition_the_parent() {
        let parent = Shard { index: 1, count: 3 };
        let mut owned = Vec::new();
        for k in 0..2 {
            let s = parent.split(k, 2);
            owned.extend((0..30).filter(|&i| s.owns(i)));
        }
        owned.sort();
        assert_eq!(owned, (0..30).filter(|&i| parent.owns(i)).collect::<Vec<_>>());
        for runs in 0..12 {
            assert_eq!(parent.count_in(runs), (0..runs).filter(|&i| parent.owns(i)).count() as u64, "{runs}");
        }
        assert!(Shard::parse("0/1000001").is_err(), "shard counts are bounded");
    }
}
