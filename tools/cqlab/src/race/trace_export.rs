//! Every core's trace ring as a Chrome trace-event JSON file, which Perfetto
//! (ui.perfetto.dev) and chrome://tracing open: one track per core, one
//! instant event per trace record, timestamps in microseconds at the chip's
//! clock (Wormhole 1 GHz, Blackhole 1.35 GHz).

use cqlab_abi::trace::TraceKind;
use cqlab_driver::{Device, Result};
use serde_json::{json, Value};

pub fn chrome_trace(dev: &mut Device) -> Result<Value> {
    let cores: Vec<_> = dev.all_cores().collect();
    let cycles_per_us = dev.chip().layout().clock_hz() as f64 / 1e6;
    let mut events = Vec::new();
    for (tid, core) in cores.into_iter().enumerate() {
        let trace = dev.read_trace(core)?;
        if trace.records.is_empty() {
            continue;
        }
        events.push(json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid,
                           "args": {"name": format!("{} {core}", cqlab_workloads::analysis::Analysis::role(dev.chip(), core))}}));
        for r in trace.records {
            let kind = TraceKind::from_u16(r.kind).map_or_else(|| format!("kind{}", r.kind), |k| k.label().to_owned());
            events.push(json!({"name": kind, "ph": "i", "s": "t", "pid": 1, "tid": tid,
                               "ts": r.cycle as f64 / cycles_per_us,
                               "args": {"seq": r.seq, "arg0": r.arg0, "arg1": r.arg1, "cycle": r.cycle}}));
        }
    }
    Ok(json!({"traceEvents": events, "displayTimeUnit": "ns"}))
}
