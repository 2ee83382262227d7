//! `campaign sbatch --submit --wait`: follows a submitted array job with
//! `scontrol -o show job` (Slurm's own view, no accounting database
//! needed) until every task has ended, saying on stderr how many tasks are
//! in which state as it changes; then says how each task that did not
//! complete ended, and which shards and runs have no record (helper-80:
//! `sbatch --wait` was silent, could wait for ever, and a failed task gave
//! an empty reason).

use crate::out::diagln;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::time::Duration;

/// How often the job's state is asked for.
const POLL: Duration = Duration::from_secs(2);
/// Failed `scontrol` calls in a row after which the wait gives up.
const MAX_FAILED_POLLS: u32 = 30;

/// One array task (or a pending range of them) as `scontrol` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// `ArrayTaskId`: one index, or a range while pending (`0-3`).
    pub tasks: String,
    pub state: String,
    /// `ExitCode`: status:signal.
    pub exit: String,
    /// `Reason`, when Slurm gives one.
    pub reason: String,
}

impl Task {
    /// Whether the task has ended (Slurm's terminal job states), or is
    /// held where only a user can release it (`SPECIAL_EXIT`,
    /// `REQUEUE_HOLD`, `RESV_DEL_HOLD`): waiting on would not end
    /// (helper-83), and the wait names it among the tasks that did not
    /// complete.
    pub fn ended(&self) -> bool {
        matches!(
            self.state.as_str(),
            "COMPLETED"
                | "FAILED"
                | "TIMEOUT"
                | "CANCELLED"
                | "NODE_FAIL"
                | "PREEMPTED"
                | "OUT_OF_MEMORY"
                | "BOOT_FAIL"
                | "DEADLINE"
                | "REVOKED"
                | "SPECIAL_EXIT"
                | "REQUEUE_HOLD"
                | "RESV_DEL_HOLD"
        )
    }
}

/// The tasks of `scontrol -o show job` output: one line a record.
pub fn parse(text: &str) -> Vec<Task> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let field = |key: &str| {
                line.split_whitespace()
                    .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
                    .unwrap_or("")
                    .to_owned()
            };
            Task {
                tasks: field("ArrayTaskId"),
                state: field("JobState"),
                exit: field("ExitCode"),
                reason: field("Reason"),
            }
        })
        .collect()
}

/// "2 RUNNING, 1 PENDING (Resources)": how many tasks (or pending ranges)
/// are in each state, and why they pend: a job that can never start says
/// so while it waits.
fn summary(tasks: &[Task]) -> String {
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    for t in tasks {
        let key = match t.state.as_str() {
            "PENDING" if !t.reason.is_empty() && t.reason != "None" => format!("PENDING ({})", t.reason),
            s => s.to_owned(),
        };
        *by_state.entry(key).or_default() += 1;
    }
    by_state.iter().map(|(s, n)| format!("{n} {s}")).collect::<Vec<_>>().join(", ")
}

/// The job's tasks as `scontrol` shows them; `None` once Slurm has
/// forgotten the job (past MinJobAge).
fn show(id: &str) -> Result<Option<Vec<Task>>> {
    let out = std::process::Command::new("scontrol")
        .args(["-o", "show", "job", id])
        .output()
        .context("running scontrol to follow the job (is Slurm on PATH?)")?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if err.contains("Invalid job id") {
            return Ok(None);
        }
        anyhow::bail!("scontrol show job {id}: {}", err.trim());
    }
    Ok(Some(parse(&String::from_utf8_lossy(&out.stdout))))
}

/// Waits until every task of job `id` has ended, saying what changes; the
/// tasks as last seen (empty when Slurm forgot the job before an ended
/// state was seen).
pub fn until_ended(id: &str) -> Result<Vec<Task>> {
    let (mut last, mut failed, mut seen) = (String::new(), 0, Vec::new());
    loop {
        match show(id) {
            Ok(None) => return Ok(seen),
            Ok(Some(tasks)) => {
                failed = 0;
                let now = summary(&tasks);
                if now != last {
                    diagln!("job {id}: {now}");
                    last = now;
                }
                if !tasks.is_empty() && tasks.iter().all(Task::ended) {
                    return Ok(tasks);
                }
                seen = tasks;
            }
            // The first poll failing is no passing hiccup: no scontrol on
            // PATH, or no cluster to ask.
            Err(e) if last.is_empty() => return Err(e.context(format!("following job {id}"))),
            Err(e) => {
                failed += 1;
                if failed >= MAX_FAILED_POLLS {
                    return Err(e.context(format!("following job {id}: {MAX_FAILED_POLLS} polls in a row failed")));
                }
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Says how each task that did not complete with exit 0 ended.
pub fn say_failed(id: &str, tasks: &[Task]) {
    for t in tasks.iter().filter(|t| t.state != "COMPLETED" || t.exit != "0:0") {
        let reason = if t.reason.is_empty() || t.reason == "None" { String::new() } else { format!(", {}", t.reason) };
        diagln!("job {id} task {}: {} (exit {}{reason})", t.tasks, t.state, t.exit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scontrol_lines_give_each_tasks_state_and_exit() {
        let text = "JobId=8 ArrayJobId=7 ArrayTaskId=1 JobName=cqlab-campaign JobState=TIMEOUT Reason=TimeLimit \
                    ExitCode=0:15\nJobId=7 ArrayJobId=7 ArrayTaskId=2-3 JobState=PENDING Reason=Resources \
                    ExitCode=0:0\nJobId=9 ArrayJobId=7 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0\n";
        let tasks = parse(text);
        assert_eq!(tasks.len(), 3);
        assert_eq!(
            tasks[0],
            Task { tasks: "1".into(), state: "TIMEOUT".into(), exit: "0:15".into(), reason: "TimeLimit".into() }
        );
        assert!(tasks[0].ended() && !tasks[1].ended() && tasks[2].ended());
        assert_eq!(summary(&tasks), "1 COMPLETED, 1 PENDING (Resources), 1 TIMEOUT");
    }

    /// A task held until a user releases it ends the wait (helper-83: the
    /// wait polled for ever), one still running or requeued does not.
    #[test]
    fn held_tasks_end_the_wait_and_running_ones_do_not() {
        let task = |state: &str| Task { tasks: "0".into(), state: state.into(), exit: "0:0".into(), reason: "".into() };
        for held in ["SPECIAL_EXIT", "REQUEUE_HOLD", "RESV_DEL_HOLD", "REVOKED"] {
            assert!(task(held).ended(), "{held}");
        }
        for going in ["PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "SUSPENDED", "RESIZING"] {
            assert!(!task(going).ended(), "{going}");
        }
    }
}
