//! Pairs a prefetcher's or dispatcher's command start and end records into
//! spans. One implementation for `cqlab run` (`analysis`) and `cqlab perf`.
//!
//! Commands nest: a prefetcher's EXEC_BUF starts, then each command of the
//! replayed trace starts and ends, EXEC_BUF_END among them, and EXEC_BUF
//! ends last. So the open commands are a stack, not one slot.

use cqlab_abi::trace::{TraceKind, TraceRecord};

/// Commands started and not yet ended on one core, innermost last.
#[derive(Clone, Debug, Default)]
pub struct CommandSpans {
    open: Vec<(u32, u64)>,
}

impl CommandSpans {
    /// Takes one record of the core's trace, in order. A `CmdEnd` that
    /// closes an open command gives `(command id, cycles from its start)`;
    /// commands opened inside it and never ended (their end records lost)
    /// are dropped with it. An end with no open start (the ring lapped past
    /// the start) gives nothing.
    pub fn record(&mut self, r: &TraceRecord) -> Option<(u32, u64)> {
        match TraceKind::from_u16(r.kind) {
            Some(TraceKind::CmdStart) => {
                self.open.push((r.arg0, r.cycle));
                None
            }
            Some(TraceKind::CmdEnd) => {
                let pos = self.open.iter().rposition(|&(id, _)| id == r.arg0)?;
                let (id, start) = self.open[pos];
                self.open.truncate(pos);
                Some((id, r.cycle - start))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cqlab_abi::prefetch::PrefetchCmdId::{ExecBuf, ExecBufEnd, RelayInline};
    use TraceKind::{CmdEnd, CmdStart};

    fn rec(kind: TraceKind, id: cqlab_abi::prefetch::PrefetchCmdId, cycle: u64) -> TraceRecord {
        TraceRecord { kind: kind as u16, arg0: id as u32, cycle, ..Default::default() }
    }

    /// The prefetcher's order for a replay: EXEC_BUF starts, the trace's
    /// commands start and end, EXEC_BUF_END among them, EXEC_BUF ends. Each
    /// command gets its own span; EXEC_BUF's runs from its start to its end.
    #[test]
    fn an_exec_buf_spans_the_commands_it_replays() {
        let records = [
            rec(CmdStart, ExecBuf, 100),
            rec(CmdStart, RelayInline, 110),
            rec(CmdEnd, RelayInline, 150),
            rec(CmdStart, ExecBufEnd, 160),
            rec(CmdEnd, ExecBufEnd, 170),
            rec(CmdEnd, ExecBuf, 171),
        ];
        let mut spans = CommandSpans::default();
        let got: Vec<_> = records.iter().filter_map(|r| spans.record(r)).collect();
        assert_eq!(got, [(RelayInline as u32, 40), (ExecBufEnd as u32, 10), (ExecBuf as u32, 71)]);
    }

    /// The ring keeps the newest records: an end whose start was lapped
    /// pairs with nothing, and an inner command whose end was lost closes
    /// with the command around it, not with a later start of its id.
    #[test]
    fn unmatched_records_pair_with_nothing() {
        let records = [
            rec(CmdEnd, RelayInline, 5),
            rec(CmdStart, ExecBuf, 10),
            rec(CmdStart, RelayInline, 20),
            rec(CmdEnd, ExecBuf, 30),
            rec(CmdStart, RelayInline, 40),
            rec(CmdEnd, RelayInline, 45),
        ];
        let mut spans = CommandSpans::default();
        let got: Vec<_> = records.iter().filter_map(|r| spans.record(r)).collect();
        assert_eq!(got, [(ExecBuf as u32, 20), (RelayInline as u32, 5)]);
    }
}
