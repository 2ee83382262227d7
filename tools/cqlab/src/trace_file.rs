//! The RUN trace file that `cqlab run --trace FILE` writes and `cqlab trace
//! export` / `cqlab trace summary` read: JSON Lines, one object per line,
//! written as the run goes (never held in memory).
//!
//! ```text
//! {"format":"cqlab-trace","version":2,"workload":...,"cqs":2,"chip":"wormhole-n150","harvesting":"rows=8","clock_hz":1e9,"cores":[{"x":18,"y":27,"role":"CQ0 prefetcher"},...]}
//! {"launch":{"seq":0,"cq":0,"cores":[0,0,7,3],"label":"tiny"}}
//! {"iter":{"index":0,"warmup":true,"start":..,"enqueued":..,"end":..,"events":[3,4]}}
//! {"occ":{"cycle":..,"cq":0,"fetch_entries":2,"completion_bytes":64}}
//! {"rec":[x,y,cycle,seq,kind,arg0,arg1]}          one trace-ring record
//! {"end":{"timed_cycles":..,"lost":0}}
//! {"end":{"timed_cycles":..,"lost":0,"failed":{"iteration":1,"cycle":..,"exit":3,"kind":"timeout","error":".."}}}
//! ```
//! A run that fails writes the records drained up to the failure, the
//! iteration it was on as far as it got (its `iter` line: `enqueued` is where
//! enqueuing stopped, `end` where a `--sync per-iter` host gave up) and an
//! `end` line with `failed` (absent when the run finished, and in files of
//! builds before 2026-12-02, which wrote no `end` line for a failed run).
//! A core's records with a forward gap in their seqs (records overwritten
//! before they were read) read as [`Item::Lost`] before the record after it.
//! Records of one core appear in its ring order; cores interleave in
//! drain-sized blocks. A `rec` line is positional on purpose, unlike every
//! other core in cqlab's JSON (`{"x", "y"}`, as the header's `cores`): the
//! records are the bulk of the file and keys would more than double each
//! line. Cores are named by translated NOC coordinates; the
//! header's chip, harvesting and queue count say whose they are (version 1
//! files came from cqlab's earlier invented chip and are refused).

use crate::cli::MAX_RUN_CQS;
use crate::input::Lines;
use crate::usage::UsageError;
use anyhow::{Context, Result};
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::{Board, Harvesting};
use cqlab_abi::trace::TraceRecord;
use cqlab_driver::Topology;
use cqlab_workloads::analysis::Analysis;
use cqlab_workloads::collect::RecordSink;
use cqlab_workloads::runner::{IterationSample, LaunchInfo, Observer, OccupancySample, RunSpec, Stopped};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::{BufWriter, Write};
use std::path::Path;

pub const FORMAT: &str = "cqlab-trace";
pub const VERSION: u64 = 2;

/// Clock rates a header may give: 1 MHz to 100 GHz, around the chips'
/// 1 and 1.35 GHz, so a cycle count converts to a finite time.
const CLOCK_HZ_RANGE: std::ops::RangeInclusive<f64> = 1e6..=1e11;

/// Streams a run into a trace file.
pub struct TraceWriter<W: Write> {
    out: W,
    pub records: u64,
    /// The header is written: a failure's `end` line has a trace to end.
    started: bool,
}

impl TraceWriter<BufWriter<std::fs::File>> {
    pub fn create(path: &Path) -> Result<Self> {
        let f = std::fs::File::create(path).with_context(|| format!("creating trace file {}", path.display()))?;
        Ok(Self::new(BufWriter::new(f)))
    }
}

impl<W: Write> TraceWriter<W> {
    pub fn new(out: W) -> Self {
        Self { out, records: 0, started: false }
    }

    pub fn header(
        &mut self,
        chip: &Topology,
        cores: &[Coord],
        workload: &str,
        spec: &RunSpec,
        sync: &str,
    ) -> Result<()> {
        let cores: Vec<_> =
            cores.iter().map(|c| json!({"x": c.x, "y": c.y, "role": Analysis::role(chip, *c)})).collect();
        let h = json!({"format": FORMAT, "version": VERSION, "workload": workload, "cqs": chip.num_cqs(),
                       "chip": chip.board().name(), "harvesting": chip.harvesting().to_string(), "seed": spec.seed,
                       "device": cqlab_workloads::runner::device_spec(&spec.device, spec.seed),
                       "host": crate::cli::schedule_json(&spec.base_config.host_schedule),
                       "sync": sync, "clock_hz": chip.layout().clock_hz(), "cores": cores});
        writeln!(self.out, "{h}")?;
        self.started = true;
        Ok(())
    }

    pub fn record(&mut self, core: Coord, r: &TraceRecord) -> Result<()> {
        self.records += 1;
        writeln!(
            self.out,
            "{{\"rec\":[{},{},{},{},{},{},{}]}}",
            core.x, core.y, r.cycle, r.seq, r.kind, r.arg0, r.arg1
        )?;
        Ok(())
    }

    pub fn line(&mut self, key: &str, value: impl serde::Serialize) -> Result<()> {
        writeln!(self.out, "{}", json!({ key: value }))?;
        Ok(())
    }

    pub fn finish(mut self, timed_cycles: u64, lost: u64) -> Result<W> {
        self.line("end", json!({"timed_cycles": timed_cycles, "lost": lost}))?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Ends the trace of a run that failed: where it stopped (`None` when
    /// the runner never said, a failure outside the iterations' reach) and
    /// the failure's exit code, kind and first line. A trace whose header
    /// was never written is left empty.
    pub fn fail(mut self, at: Option<&Stopped>, failure: &Failed) -> Result<W> {
        if self.started {
            let (timed_cycles, lost) = at.map_or((0, 0), |s| (s.timed_cycles, s.lost));
            self.line("end", json!({"timed_cycles": timed_cycles, "lost": lost, "failed": failure}))?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn io(e: anyhow::Error) -> cqlab_driver::DriverError {
    cqlab_driver::DriverError::Backend(format!("writing the trace file: {e:#}"))
}

impl<W: Write> RecordSink for TraceWriter<W> {
    fn records(&mut self, core: Coord, records: &[TraceRecord]) -> cqlab_driver::Result<()> {
        for r in records {
            self.record(core, r).map_err(io)?;
        }
        Ok(())
    }
}

impl<W: Write> Observer for TraceWriter<W> {
    fn started(&mut self, chip: &Topology, cores: &[Coord], spec: &RunSpec) -> cqlab_driver::Result<()> {
        let sync = match spec.sync {
            cqlab_workloads::runner::SyncMode::PerIter => "per-iter",
            cqlab_workloads::runner::SyncMode::End => "end",
        };
        self.header(chip, cores, spec.kind.name(), spec, sync).map_err(io)
    }
    fn launch(&mut self, l: &LaunchInfo) -> cqlab_driver::Result<()> {
        self.line("launch", l).map_err(io)
    }
    fn iteration(&mut self, it: &IterationSample) -> cqlab_driver::Result<()> {
        self.line("iter", it).map_err(io)
    }
    fn occupancy(&mut self, o: &OccupancySample) -> cqlab_driver::Result<()> {
        self.line("occ", o).map_err(io)
    }
}

impl Header {
    /// The chip the trace was recorded on, with its queues placed: whose
    /// each core is.
    pub fn topology(&self) -> Result<Topology, UsageError> {
        let bad = |e: String| UsageError(format!("the trace header's chip {} ({}): {e}", self.chip, self.harvesting));
        let board: Board = self.chip.parse().map_err(|e: cqlab_abi::soc::UnknownBoard| bad(e.to_string()))?;
        let harvesting = Harvesting::parse(&self.harvesting).map_err(|e| bad(e.to_string()))?;
        // `Topology` clamps a queue count into range; a header's must be
        // one `cqlab run` could have placed, or its queue numbers index
        // nothing.
        if !(1..=MAX_RUN_CQS).contains(&self.cqs) {
            return Err(bad(format!("cqs {} is not a queue count `cqlab run` places (1 to {MAX_RUN_CQS})", self.cqs)));
        }
        let chip = Topology::for_board(board, Some(harvesting), self.cqs).map_err(|e| bad(e.to_string()))?;
        if self.cqs > chip.rows() {
            return Err(bad(format!(
                "cqs {}: this chip {} (a run gives each queue a worker row of its own)",
                self.cqs,
                crate::cli::run_queue_limit(&chip)
            )));
        }
        Ok(chip)
    }
}

/// The header line.
#[derive(Clone, Debug, Deserialize)]
pub struct Header {
    pub format: String,
    pub version: u64,
    pub workload: String,
    pub cqs: u8,
    /// The board (`--chip` spelling) and its harvesting (`--harvest`);
    /// absent in version 1 files (refused by version, not by field).
    #[serde(default)]
    pub chip: String,
    #[serde(default)]
    pub harvesting: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub sync: String,
    pub clock_hz: f64,
    pub cores: Vec<CoreInfo>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct CoreInfo {
    pub x: u8,
    pub y: u8,
    pub role: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Launch {
    pub seq: u32,
    pub cq: u8,
    pub label: String,
    /// When the host enqueued it; null for a launch captured in a trace,
    /// which runs where the trace is replayed, not where its line is.
    #[serde(default)]
    pub enqueued: Option<u64>,
}

/// An iteration line reads back into the type the runner wrote.
pub use cqlab_workloads::runner::IterationSample as Iter;

#[derive(Clone, Debug, Deserialize)]
pub struct Occ {
    pub cycle: u64,
    pub cq: u8,
    pub fetch_entries: u32,
    pub completion_bytes: u32,
}

#[derive(Clone, Debug, Deserialize)]
pub struct End {
    pub lost: u64,
    /// The run's own timed device cycles (to when the host saw the last
    /// timed iteration complete; to the failure in a failed run's trace).
    pub timed_cycles: u64,
    /// The run failed: the trace ends where it stopped.
    #[serde(default)]
    pub failed: Option<Failed>,
}

/// How a run failed, on its trace's `end` line.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Failed {
    /// The iteration the host was enqueuing or synchronising; null when the
    /// run failed outside the iterations (setup, validation).
    pub iteration: Option<u32>,
    /// Device cycle when the host gave up; null when the runner never said.
    pub cycle: Option<u64>,
    /// `cqlab run`'s exit code (3 a hang, 4 a device error, ...).
    pub exit: u8,
    /// The driver error's kind (`timeout`, `device-error`, ...), if one.
    pub kind: Option<String>,
    /// The error's first line (its dump follows it on `run`'s stderr).
    pub error: String,
}

impl Failed {
    /// "the run failed at iteration N (exit 3, timeout): ERROR".
    pub fn describe(&self) -> String {
        let at = self.iteration.map_or("outside its iterations".into(), |i| format!("at iteration {i}"));
        let kind = self.kind.as_deref().map_or(String::new(), |k| format!(", {k}"));
        format!("the run failed {at} (exit {}{kind}): {}", self.exit, self.error)
    }
}

/// One line after the header.
#[derive(Clone, Debug)]
pub enum Item {
    Launch(Launch),
    Iter(Iter),
    Occ(Occ),
    Rec(Coord, TraceRecord),
    /// Records of the core lost before the `Rec` that follows (the ring
    /// lapped them): `records` is how many seqs were skipped after `after`.
    Lost {
        core: Coord,
        after: u32,
        records: u32,
    },
    End(End),
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Line {
    Launch(Launch),
    Iter(Iter),
    Occ(Occ),
    Rec([u64; 7]),
    End(End),
}

/// Streams a trace file: the header, then one item at a time. A file cut
/// short (a run stopped by Ctrl-C) reads up to its last whole line; then
/// [`TraceReader::end_missing`] says so.
pub struct TraceReader {
    lines: Lines,
    pub header: Header,
    path: String,
    /// The `end` line was read.
    ended: bool,
    /// The file ends inside this line (no newline, not a whole record).
    cut_at: Option<usize>,
    /// Each core's last record's sequence number: a trace holds them in order.
    last_seq: std::collections::HashMap<Coord, u32>,
    /// A record read after its core's gap, returned after the gap's item.
    after_gap: Option<Item>,
    /// The `end` line said the run failed.
    failed: Option<Failed>,
}

impl TraceReader {
    pub fn open(path: &Path) -> Result<Self> {
        // Streamed: the file may be any size, each line is bounded.
        let mut lines = Lines::open("trace file", path, u64::MAX)?;
        let first = lines.next_line()?.unwrap_or_default();
        let header: Header = serde_json::from_str(&first).map_err(|e| {
            UsageError(format!(
                "{}: line 1 is not a cqlab-trace header ({e}; write one with `cqlab run ... --trace FILE`)",
                path.display()
            ))
        })?;
        if header.format == FORMAT && header.version == 1 {
            return Err(UsageError(format!(
                "{}: a version 1 trace, recorded on cqlab's invented chip before it modelled Wormhole and Blackhole; \
                 record it again with `cqlab run ... --trace FILE`",
                path.display()
            ))
            .into());
        }
        if header.format != FORMAT || header.version != VERSION {
            return Err(UsageError(format!(
                "{}: format {:?} version {}, expected {FORMAT:?} version {VERSION}",
                path.display(),
                header.format,
                header.version
            ))
            .into());
        }
        header.topology().map_err(|e| UsageError(format!("{}: {}", path.display(), e.0)))?;
        // Every timestamp divides by it: 0 made each `ts` null, a negative
        // rate made them negative and Perfetto dropped the events, 1e-300
        // overflowed them to null.
        if !(header.clock_hz.is_finite() && CLOCK_HZ_RANGE.contains(&header.clock_hz)) {
            return Err(UsageError(format!(
                "{}: clock_hz {:?} is not a core clock rate (cycles a second, {:e} to {:e})",
                lines.at(),
                header.clock_hz,
                CLOCK_HZ_RANGE.start(),
                CLOCK_HZ_RANGE.end()
            ))
            .into());
        }
        Ok(Self {
            lines,
            header,
            path: path.display().to_string(),
            ended: false,
            cut_at: None,
            last_seq: Default::default(),
            after_gap: None,
            failed: None,
        })
    }

    /// After the last item: `Some(why)` when the `end` line says the run
    /// failed, naming the iteration and the error.
    pub fn failure(&self) -> Option<String> {
        self.failed.as_ref().map(|f| format!("{}: {}", self.path, f.describe()))
    }

    /// After the last item: `Some(why)` when the trace has no `end` line
    /// (the run did not finish writing it), naming where it stops.
    pub fn end_missing(&self) -> Option<String> {
        if self.ended {
            return None;
        }
        Some(match self.cut_at {
            Some(n) => format!(
                "{}: the end is missing: the file stops inside line {n} (the run was interrupted?); read up to line {}",
                self.path,
                n - 1
            ),
            None => format!(
                "{}: the end is missing: no `end` line after line {} (the run was interrupted?)",
                self.path, self.lines.line_no
            ),
        })
    }

    /// A line's queue is one the header placed (an analysis indexes the
    /// queue's cores by it).
    fn check_cq(&self, what: &str, cq: u8) -> Result<()> {
        if cq >= self.header.cqs {
            return Err(UsageError(format!(
                "{}: {what} on CQ{cq}, but the header places {} queue(s) (a spliced or edited trace?)",
                self.lines.at(),
                self.header.cqs
            ))
            .into());
        }
        Ok(())
    }

    fn item(&mut self, l: Line) -> Result<Item> {
        Ok(match l {
            Line::Launch(l) => {
                self.check_cq("launch", l.cq)?;
                Item::Launch(l)
            }
            Line::Iter(i) => {
                // The host reads its clock at start, enqueued and end, in that
                // order: a line out of that order was edited or corrupted, and
                // its window would have a negative length (a summary panicked).
                let mut times = vec![("start", i.start), ("enqueued", i.enqueued)];
                times.extend(i.end.map(|e| ("end", e)));
                if let Some(w) = times.windows(2).find(|w| w[1].1 < w[0].1) {
                    return Err(UsageError(format!(
                        "{}: iteration {} {} {} is before its {} {}: the host's times are out of order",
                        self.lines.at(),
                        i.index,
                        w[1].0,
                        w[1].1,
                        w[0].0,
                        w[0].1
                    ))
                    .into());
                }
                Item::Iter(i)
            }
            Line::Occ(o) => {
                self.check_cq("occ", o.cq)?;
                Item::Occ(o)
            }
            Line::End(e) => {
                self.failed = e.failed.clone();
                Item::End(e)
            }
            Line::Rec([x, y, cycle, seq, kind, arg0, arg1]) => {
                let (Ok(x), Ok(y)) = (u8::try_from(x), u8::try_from(y)) else {
                    return Err(UsageError(format!("{}: core ({x},{y}) is off the grid", self.lines.at())).into());
                };
                let core = Coord::new(x, y);
                // A field wider than the record's was truncated before
                // (helper-94: seq 2^32 read as seq 0, kind 65547 as a kernel start).
                let field = |name: &str, v: u64, max: u64| -> Result<u64> {
                    if v > max {
                        return Err(UsageError(format!(
                            "{}: core ({x},{y}) record {name} {v} is out of range (at most {max})",
                            self.lines.at()
                        ))
                        .into());
                    }
                    Ok(v)
                };
                let seq = field("seq", seq, u32::MAX.into())? as u32;
                let kind = field("kind", kind, u16::MAX.into())? as u16;
                let arg0 = field("arg0", arg0, u32::MAX.into())? as u32;
                let arg1 = field("arg1", arg1, u32::MAX.into())? as u32;
                // A core's records are written oldest first (records lost
                // to a lapped ring only skip ahead): one that goes back is
                // a file shuffled or spliced, whose analysis would be wrong.
                // Cycles are not checked so: traces of builds before
                // 2026-12-01 can go back (their drain read a slot the core
                // was rewriting: the new cycle under the old seq).
                let last = self.last_seq.insert(core, seq);
                if let Some(last) = last.filter(|&l| (seq.wrapping_sub(l) as i32) <= 0) {
                    return Err(UsageError(format!(
                        "{}: core ({x},{y}) record seq {seq} after seq {last}: the records are out of order",
                        self.lines.at()
                    ))
                    .into());
                }
                let r = TraceRecord { cycle, seq, core: core.packed() as u16, kind, arg0, arg1 };
                // Seqs count every record a core wrote: one skipped is one
                // lost, and what the core did across the gap is unknown.
                if let Some(last) = last.filter(|&l| seq.wrapping_sub(l) > 1) {
                    self.after_gap = Some(Item::Rec(core, r));
                    return Ok(Item::Lost { core, after: last, records: seq.wrapping_sub(last) - 1 });
                }
                Item::Rec(core, r)
            }
        })
    }
}

impl Iterator for TraceReader {
    type Item = Result<Item>;
    fn next(&mut self) -> Option<Result<Item>> {
        if let Some(r) = self.after_gap.take() {
            return Some(Ok(r));
        }
        if self.ended || self.cut_at.is_some() {
            return None;
        }
        let line = match self.lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        match serde_json::from_str::<Line>(&line) {
            Ok(l) => {
                self.ended = matches!(l, Line::End(_));
                if self.ended {
                    // Nothing follows `end` (two traces concatenated read
                    // as one, the second ignored).
                    loop {
                        match self.lines.next_line() {
                            Ok(Some(rest)) if rest.trim().is_empty() => continue,
                            Ok(Some(_)) => {
                                return Some(Err(UsageError(format!(
                                    "{}: a line after the `end` line (two traces in one file?)",
                                    self.lines.at()
                                ))
                                .into()))
                            }
                            Ok(None) => break,
                            Err(e) => return Some(Err(e)),
                        }
                    }
                }
                Some(self.item(l))
            }
            // The last line, without its newline: where the writer stopped.
            Err(_) if self.lines.cut => {
                self.cut_at = Some(self.lines.line_no);
                None
            }
            Err(e) => Some(Err(UsageError(format!("{} is malformed: {e}", self.lines.at())).into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-queue n150 trace's header, with `cqs` and `clock_hz` as given.
    fn header(cqs: &str, clock_hz: &str) -> String {
        format!(
            r#"{{"format":"cqlab-trace","version":2,"workload":"x","cqs":{cqs},"chip":"wormhole-n150","harvesting":"rows=8","clock_hz":{clock_hz},"cores":[]}}"#
        )
    }

    /// Every item of a trace of `header` then `lines`.
    fn read(header: &str, lines: &[&str]) -> Result<Vec<Item>> {
        let text: String = std::iter::once(header).chain(lines.iter().copied()).map(|l| format!("{l}\n")).collect();
        let p = tempfile::Builder::new().prefix("cqlab-trace-read-").tempfile().unwrap().into_temp_path();
        std::fs::write(&p, text).unwrap();
        TraceReader::open(&p)?.collect()
    }

    /// The iteration lines of a trace, with a one-queue header before them.
    fn read_iters(iters: &[&str]) -> Result<Vec<Item>> {
        read(&header("1", "1e9"), iters)
    }

    fn refused_saying(r: Result<Vec<Item>>, says: &str) {
        let e = r.unwrap_err();
        assert!(e.downcast_ref::<UsageError>().is_some() && e.to_string().contains(says), "{e}");
    }

    /// A header's queue count is one a run places, and every launch and
    /// occupancy line names one of its queues (helper-65: a spliced trace,
    /// the header of a one-queue run over a two-queue run's lines, made
    /// `trace summary` panic indexing the queue's cores).
    #[test]
    fn queue_numbers_outside_the_header_are_refused() {
        let launch = |cq: u8| format!(r#"{{"launch":{{"seq":0,"cq":{cq},"cores":[0,0,0,0],"label":"k"}}}}"#);
        let occ = |cq: u8| format!(r#"{{"occ":{{"cycle":5,"cq":{cq},"fetch_entries":1,"completion_bytes":0}}}}"#);
        assert!(read(&header("2", "1e9"), &[&launch(1), &occ(1)]).is_ok());
        refused_saying(read(&header("1", "1e9"), &[&launch(1)]), "line 2: launch on CQ1, but the header places 1");
        refused_saying(read(&header("2", "1e9"), &[&occ(7)]), "line 2: occ on CQ7, but the header places 2");
        for cqs in ["0", "9", "255"] {
            refused_saying(read(&header(cqs, "1e9"), &[]), &format!("cqs {cqs} is not a queue count"));
        }
        // Eight fit the placement, not the seven worker rows left beside them.
        refused_saying(read(&header("8", "1e9"), &[]), "cqs 8: this chip places at most 7 queues (a run gives each");
    }

    /// A clock rate converts every cycle count to a finite time.
    #[test]
    fn a_clock_rate_off_any_core_clock_is_refused() {
        assert!(read(&header("1", "1.35e9"), &[]).is_ok());
        for clock in ["0", "-1e9", "1e-300", "1e300"] {
            refused_saying(read(&header("1", clock), &[]), "is not a core clock rate");
        }
    }

    /// An iteration's host times come in the order the host read them:
    /// start <= enqueued <= end (no end with `--sync end`). One out of that
    /// order is refused, naming its line (helper-53: end before start made
    /// the summary panic and the export write a negative duration).
    #[test]
    fn an_iteration_whose_times_go_back_is_refused() {
        let iter = |start: u64, enqueued: u64, end: &str| {
            format!(
                r#"{{"iter":{{"index":0,"warmup":false,"start":{start},"enqueued":{enqueued},"end":{end},"events":[1]}}}}"#
            )
        };
        for ok in [iter(10, 20, "30"), iter(10, 10, "10"), iter(10, 20, "null")] {
            assert!(read_iters(&[&ok]).is_ok(), "{ok}");
        }
        for (bad, says) in [
            (iter(10, 20, "5"), "line 2: iteration 0 end 5 is before its enqueued 20"),
            (iter(10, 20, "15"), "line 2: iteration 0 end 15 is before its enqueued 20"),
            (iter(10, 5, "null"), "line 2: iteration 0 enqueued 5 is before its start 10"),
        ] {
            let e = read_iters(&[&bad]).unwrap_err();
            assert!(e.downcast_ref::<UsageError>().is_some() && e.to_string().contains(says), "{bad}: {e}");
        }
    }

    /// A `rec` field wider than its record's is refused with its line, not
    /// truncated (helper-94: seq 2^32 was refused as "seq 0 after seq 0",
    /// kind 65547 read as a kernel start).
    #[test]
    fn record_fields_out_of_range_are_refused() {
        let h = header("1", "1e9");
        let rec =
            |seq: u64, kind: u64, arg0: u64, arg1: u64| format!(r#"{{"rec":[18,18,100,{seq},{kind},{arg0},{arg1}]}}"#);
        let max = u64::from(u32::MAX);
        assert!(read(&h, &[&rec(max, 11, max, max), &rec(0, 65535, 0, 0)]).is_ok());
        for (bad, says) in [
            (rec(1 << 32, 11, 0, 0), "line 2: core (18,18) record seq 4294967296 is out of range (at most 4294967295)"),
            (rec(7, 65547, 0, 0), "line 2: core (18,18) record kind 65547 is out of range (at most 65535)"),
            (rec(7, 11, 1 << 32, 0), "line 2: core (18,18) record arg0 4294967296 is out of range"),
            (rec(7, 11, 0, u64::MAX), "line 2: core (18,18) record arg1 18446744073709551615 is out of range"),
        ] {
            refused_saying(read(&h, &[&bad]), says);
        }
        // A seq of 2^32 after seq 0 on the same core was refused only as out of order.
        refused_saying(
            read(&h, &[&rec(0, 11, 0, 0), &rec(1 << 32, 11, 0, 0)]),
            "line 3: core (18,18) record seq 4294967296",
        );
    }

    /// A forward gap in a core's seqs (records the ring lapped before the
    /// run read them) reads as `Item::Lost` before the record after it;
    /// another core's seqs are its own.
    #[test]
    fn a_forward_seq_gap_reads_as_lost_records() {
        let rec = |x: u8, seq: u32| format!(r#"{{"rec":[{x},18,{},{seq},11,0,0]}}"#, 100 + seq);
        let items =
            read(&header("1", "1e9"), &[&rec(18, 5), &rec(18, 6), &rec(20, 40), &rec(18, 10), &rec(18, 11)]).unwrap();
        let seen: Vec<String> = items
            .iter()
            .map(|i| match i {
                Item::Rec(c, r) => format!("rec {},{} {}", c.x, c.y, r.seq),
                Item::Lost { core, after, records } => format!("lost {},{} {records} after {after}", core.x, core.y),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            seen,
            ["rec 18,18 5", "rec 18,18 6", "rec 20,18 40", "lost 18,18 3 after 6", "rec 18,18 10", "rec 18,18 11"]
        );
    }
}
