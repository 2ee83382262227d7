//! `cqlab status` and `cqlab dump`: look at a live device that another
//! process drives, as tt-smi and Watcher dumps let bring-up engineers do.
//! Both attach read-only (no lock, no HELLO: see
//! `cqlab_driver::daemon_backend::DaemonObserver`), so they work in the
//! middle of another client's run and change nothing it sees: no device time
//! passes and no posted write lands because of them.

use crate::out::outln;
use anyhow::{Context, Result};
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{AliveRecord, ALIVE, ALIVE_MAGIC};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_driver::backend::read_struct;
use cqlab_driver::dump::{HangDump, Wait};
use cqlab_driver::{Device, DriverError};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct StatusArgs {
    /// The device: sim:PATH (a `cqlab sim serve` daemon).
    #[arg(long)]
    pub device: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args)]
pub struct DumpArgs {
    /// The device: sim:PATH (a `cqlab sim serve` daemon).
    #[arg(long)]
    pub device: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn validate_spec(spec: &str) -> anyhow::Result<()> {
    Ok(crate::device::validate_daemon("--device", spec)?)
}

fn observe(spec: &str) -> Result<(Device, cqlab_driver::daemon_backend::proto::Status)> {
    Device::observe(spec).map_err(|e| match e {
        DriverError::Invalid(m) => crate::cli::Usage(format!("--device {spec}: {m}")).into(),
        e => anyhow::Error::from(e).context(format!("observing {spec}")),
    })
}

/// The firmware a core reported in its alive record, if any.
fn firmware(dev: &mut Device, c: Coord) -> Result<Option<&'static str>> {
    let alive: AliveRecord = read_struct(dev.backend(), NocAddr::unicast(c, ALIVE as u64))?;
    Ok((alive.magic == ALIVE_MAGIC).then(|| FirmwareId::from_u32(alive.firmware_id).map_or("unknown", |f| f.name())))
}

fn live_dump(dev: &mut Device) -> Result<HangDump> {
    dev.dump(Wait::Live { cq: 0 }).context("reading the device")
}

pub fn status(args: StatusArgs) -> Result<ExitCode> {
    let (mut dev, st) = observe(&args.device)?;
    let dump = live_dump(&mut dev)?;
    let cores: Vec<Coord> = dev.all_cores().collect();
    let mut fw = Vec::new();
    for &c in &cores {
        fw.push(firmware(&mut dev, c)?);
    }
    // Nobody attached, yet a client may hold the lock: one of a daemon
    // before this one (its connection died with it), or one between its
    // lock and its attach.
    let locked = match (st.owner_pid, args.device.strip_prefix("sim:")) {
        (0, Some(rest)) => cqlab_driver::daemon_backend::DaemonBackend::parse_spec(rest)
            .ok()
            .and_then(|(path, _)| cqlab_driver::daemon_backend::lock_holder(&path)),
        _ => None,
    };
    let holder = match (st.owner_pid, locked) {
        (0, None) => "nobody".to_owned(),
        (0, Some(pid)) => format!("nobody attached (pid {pid} holds the lock file: a client not attached yet, or of a daemon before this one)"),
        (pid, _) => format!("pid {pid}"),
    };
    let arch = dev.chip().board().arch();
    let model = cqlab_driver::backend::spec::Model::of_daemon(st.chip.model, arch);
    if args.json {
        let cores_json: Vec<_> = dump
            .cores
            .iter()
            .zip(&fw)
            .map(|(c, f)| {
                let mut v = serde_json::to_value(c).expect("a core state serializes");
                v["firmware"] = serde_json::json!(f);
                v["last_trace"] = serde_json::json!(c.last_trace.last());
                v
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({"device": args.device, "daemon_pid": st.chip.daemon_pid, "seed": st.chip.seed,
                "chip": st.chip.board, "harvesting": st.chip.harvesting, "model": model.on(arch), "cqs": dev.num_cqs(),
                "held_by": (st.owner_pid != 0).then_some(st.owner_pid), "lock_held_by": locked,
                "connections": st.connections,
                "device_cycle": dump.device_cycle, "queues": dump.queues, "cores": cores_json})
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{}: simulator daemon pid {}, seed {}, {} harvested {}, {} CQs; timing model: {}",
        args.device,
        st.chip.daemon_pid,
        st.chip.seed,
        st.chip.board,
        st.chip.harvesting,
        dev.num_cqs(),
        match model.describe() {
            d if d.is_empty() => "the calibrated default".to_string(),
            d => format!("the calibrated default but{}", d.trim_start_matches(',')),
        }
    );
    outln!("held by {holder}; {} connections open (this one included)", st.connections);
    outln!("device cycle {}", dump.device_cycle);
    for q in &dump.queues {
        outln!(
            "CQ{}: issue rd {}, {} fetch entries pending ({} consumed); completion wr {} rd {}; last event \
             {}; {} kernels running on the chip",
            q.cq,
            q.issue_rd,
            q.fetch_issued.wrapping_sub(q.fetch_consumed),
            q.fetch_consumed,
            q.completion_wr,
            q.completion_rd,
            q.last_event_done,
            q.workers_running.unwrap_or_default()
        );
    }
    outln!("{:<16} {:<8} {:<5} {:<10} {:<9} last trace record", "core", "at", "wp", "pc", "firmware");
    for (c, f) in dump.cores.iter().zip(&fw) {
        let pc = c.pc.map_or("-".into(), |pc| format!("{pc:#010x}"));
        let last = c.last_trace.last().map_or("-".into(), |t| format!("#{} @{} {}", t.seq, t.cycle, t.kind_label()));
        let (role, core, wp) = (c.role.to_string(), c.core.to_string(), c.waypoint.to_string());
        outln!("{:<16} {:<8} {:<5} {:<10} {:<9} {last}", role, core, wp, pc, f.unwrap_or("-"));
        if let Some(e) = &c.error {
            outln!("    error: {e}");
        }
        if let Some(h) = &c.halt {
            outln!("    halted: {h}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn dump(args: DumpArgs) -> Result<ExitCode> {
    let (mut dev, st) = observe(&args.device)?;
    let dump = live_dump(&mut dev)?;
    let chains: Vec<_> = (0..dev.num_cqs())
        .map(|q| {
            let (chain, deadlock) = dump.chain_from(dev.chip(), q);
            (q, (chain.iter().map(|l| dump.link_text(l)).collect::<Vec<_>>(), deadlock))
        })
        .collect();
    if args.json {
        let chains: Vec<_> = chains
            .iter()
            .map(|(q, (chain, deadlock))| serde_json::json!({"cq": q, "chain": chain, "deadlock": deadlock}))
            .collect();
        outln!(
            "{}",
            serde_json::json!({"device": args.device, "held_by": (st.owner_pid != 0).then_some(st.owner_pid),
                "dump": dump, "chains": chains})
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", dump.to_string().trim_end_matches('\n'));
    for (q, (chain, deadlock)) in chains.iter().skip(1) {
        outln!("wait-for chain from CQ{q}{}:", if *deadlock { " (DEADLOCK: cycle)" } else { "" });
        for (i, link) in chain.iter().enumerate() {
            outln!("  {}{link}", if i == 0 { "" } else { "-> " });
        }
    }
    Ok(ExitCode::SUCCESS)
}
