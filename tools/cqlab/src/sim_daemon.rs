//! `cqlab sim serve`: the simulated device as a long-lived process.
//!
//! Layout and protocol are `cqlab_driver::daemon_backend`'s (files `sock`,
//! `sysmem`, `lock`, `pid` under `--dev PATH`). Threads: one device thread
//! owns the [`Chip`] and serves requests one at a time in arrival order; one
//! thread accepts connections and one per connection decodes frames and
//! forwards them; one waits for SIGINT/SIGTERM (a signalfd, with the signals
//! blocked in every thread). The main thread waits for a stop (signal or
//! `cqlab sim stop`), removes the socket and pid file, and exits.
//!
//! The device advances only when a client polls; with no client attached it
//! idles, keeping its memory. Every attach (HELLO) starts from a quiet
//! device: the device thread holds every core in reset, delivers every NOC
//! transaction still in flight and zeroes the cores' semaphores (the
//! firmware counts them from zero after boot), keeping L1, DRAM, sysmem and
//! each core's last PC for post-mortems. Whatever the previous client left —
//! a finished run, or half an enqueue when it was killed — the next `boot`
//! starts clean. A previous client that ended without DETACH is logged and
//! reported in HELLO's `recovered_from`.

use anyhow::{bail, Context};
use cqlab_abi::mmio;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_driver::daemon_backend::proto::{self, ChipInfo, CoreView, Reply, Request};
use cqlab_driver::daemon_backend::{map_shared, DevicePaths};
use cqlab_sim::chip::Chip;
use cqlab_sim::config::SimConfig;
use cqlab_sim::memory::Sysmem;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc::{channel, Sender};

/// Most cycles one POLL may ask for (a client cannot stall the daemon).
const MAX_POLL_CYCLES: u64 = 100_000_000;
/// Budget for draining NOC transactions when quiescing after a vanished client.
const QUIESCE_BUDGET_CYCLES: u64 = 10_000_000;

/// A request for the device thread, with where its reply goes.
struct Job {
    conn: u64,
    req: Request,
    reply: Sender<Reply>,
}

/// The client whose HELLO came last.
struct Session {
    conn: u64,
    pid: u32,
    detached: bool,
}

/// Runs the daemon until a signal or `cqlab sim stop`.
pub fn serve(dev: &std::path::Path, cfg: SimConfig, quiet: bool) -> anyhow::Result<()> {
    let paths = DevicePaths::new(dev);
    std::fs::create_dir_all(dev).with_context(|| format!("creating device directory {}", dev.display()))?;
    let sock = paths.socket();
    if sock.exists() {
        if UnixStream::connect(&sock).is_ok() {
            let pid = std::fs::read_to_string(paths.pid()).unwrap_or_default();
            bail!(
                "a daemon already serves {} (pid {}); stop it with `cqlab sim stop --dev {}`",
                dev.display(),
                pid.trim(),
                dev.display()
            );
        }
        std::fs::remove_file(&sock).with_context(|| format!("removing stale socket {}", sock.display()))?;
    }
    // Block the stop signals before any thread starts, so every thread
    // inherits the mask and only the signalfd sees them.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("blocking SIGINT/SIGTERM")?;
    let sfd = SignalFd::new(&signals).context("creating a signalfd")?;

    let map = map_shared(&paths.sysmem(), cfg.sysmem_size, true)?;
    let chip = Chip::with_sysmem(cfg.clone(), Sysmem::External(Box::new(map))).context("powering on the chip")?;
    let listener = UnixListener::bind(&sock).with_context(|| format!("binding {}", sock.display()))?;
    std::fs::write(paths.pid(), std::process::id().to_string())?;
    let info = ChipInfo {
        version: proto::VERSION,
        daemon_pid: std::process::id(),
        seed: cfg.seed,
        worker_cols: cfg.worker_cols,
        worker_rows: cfg.worker_rows,
        num_cqs: cfg.num_cqs,
        dram_banks: cfg.dram_banks,
        sysmem_size: cfg.sysmem_size as u64,
        recovered_from: 0,
    };

    let (stop_tx, stop_rx) = channel::<String>();
    let (job_tx, job_rx) = channel::<Job>();
    let device_stop = stop_tx.clone();
    std::thread::Builder::new().name("device".into()).spawn(move || {
        device_loop(chip, info, job_rx, device_stop, quiet);
    })?;
    let signal_stop = stop_tx.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || match sfd.read_signal() {
        Ok(Some(si)) => {
            let name = Signal::try_from(si.ssi_signo as i32).map_or("a signal", |s| s.as_str());
            let _ = signal_stop.send(name.to_string());
        }
        Ok(None) | Err(_) => {
            let _ = signal_stop.send("a failed signalfd read".into());
        }
    })?;
    std::thread::Builder::new().name("accept".into()).spawn(move || {
        for (conn, stream) in (1u64..).zip(listener.incoming()) {
            let Ok(stream) = stream else { continue };
            let jobs = job_tx.clone();
            let _ = std::thread::Builder::new()
                .name(format!("conn-{conn}"))
                .spawn(move || serve_connection(conn, stream, jobs));
        }
    })?;
    eprintln!(
        "cqlab sim serve: device at {} (pid {}, seed {}, {}x{} workers, {} CQs, sysmem {} MiB); attach with \
         sim:{}; stop with Ctrl-C or `cqlab sim stop --dev {}`",
        dev.display(),
        std::process::id(),
        cfg.seed,
        cfg.worker_cols,
        cfg.worker_rows,
        cfg.num_cqs,
        cfg.sysmem_size >> 20,
        dev.display(),
        dev.display()
    );
    let why = stop_rx.recv().unwrap_or_else(|_| "every sender gone".into());
    let _ = std::fs::remove_file(&sock);
    let _ = std::fs::remove_file(paths.pid());
    eprintln!("cqlab sim serve: stopped by {why}; removed {}", sock.display());
    Ok(())
}

/// Decodes one connection's frames and forwards them to the device thread.
fn serve_connection(conn: u64, stream: UnixStream, jobs: Sender<Job>) {
    let mut r = &stream;
    while let Ok(Some(frame)) = proto::read_frame(&mut r) {
        let (reply_tx, reply_rx) = channel();
        let reply = match Request::decode(&frame) {
            Ok(req) => {
                if jobs.send(Job { conn, req, reply: reply_tx }).is_err() {
                    break;
                }
                match reply_rx.recv() {
                    Ok(r) => r,
                    Err(_) => break,
                }
            }
            Err(e) => Reply { now: 0, result: Err(format!("bad request: {e}")) },
        };
        let mut w = &stream;
        if proto::write_frame(&mut w, &reply.encode()).is_err() {
            break;
        }
    }
}

fn device_loop(
    mut chip: Chip,
    mut info: ChipInfo,
    jobs: std::sync::mpsc::Receiver<Job>,
    stop: Sender<String>,
    quiet: bool,
) {
    let mut session: Option<Session> = None;
    while let Ok(Job { conn, req, reply }) = jobs.recv() {
        let stopping = req == Request::Stop;
        match &req {
            Request::Hello { pid, .. } => {
                info.recovered_from = match &session {
                    Some(s) if !s.detached => s.pid,
                    _ => 0,
                };
                let (drained, cycles) = quiesce(&mut chip);
                let left = chip.in_flight();
                if left > 0 {
                    eprintln!(
                        "cqlab sim serve: quiescing: {left} NOC transactions still in flight after \
                         {QUIESCE_BUDGET_CYCLES} cycles"
                    );
                }
                if !quiet {
                    if info.recovered_from != 0 {
                        eprintln!(
                            "cqlab sim serve: client pid {} ended without detaching (killed?)",
                            info.recovered_from
                        );
                    }
                    eprintln!(
                        "cqlab sim serve: client pid {pid} attached (connection {conn}); quiesced: cores held in \
                         reset, {drained} NOC transactions drained in {cycles} cycles, semaphores zeroed"
                    );
                }
                session = Some(Session { conn, pid: *pid, detached: false });
            }
            Request::Detach => {
                if let Some(s) = session.as_mut().filter(|s| s.conn == conn) {
                    s.detached = true;
                }
            }
            Request::Reset if !quiet => eprintln!("cqlab sim serve: power-on reset"),
            _ => {}
        }
        let result = handle(&mut chip, &mut info, req);
        let _ = reply.send(Reply { now: chip.now(), result });
        if stopping {
            let _ = stop.send("`cqlab sim stop`".into());
        }
    }
}

fn handle(chip: &mut Chip, info: &mut ChipInfo, req: Request) -> Result<Vec<u8>, String> {
    match req {
        Request::Hello { version, .. } if version != proto::VERSION => {
            Err(format!("protocol version {version} requested, this daemon speaks {}", proto::VERSION))
        }
        Request::Hello { .. } => Ok(info.encode()),
        Request::Write { addr, data } => {
            chip.bar_write(NocAddr(addr), &data).map(|()| Vec::new()).map_err(|e| e.to_string())
        }
        Request::Read { addr, len } => {
            if len as usize > proto::MAX_FRAME - 16 {
                return Err(format!("READ of {len} bytes exceeds the frame limit {}", proto::MAX_FRAME - 16));
            }
            let mut buf = vec![0u8; len as usize];
            chip.bar_read(NocAddr(addr), &mut buf).map(|()| buf).map_err(|e| e.to_string())
        }
        Request::Poll { cycles } => {
            chip.host_poll(cycles.min(MAX_POLL_CYCLES));
            Ok(Vec::new())
        }
        Request::Digest => Ok(chip.digest().to_le_bytes().to_vec()),
        Request::DramTraffic { reset } => {
            let t = chip.dram_traffic();
            if reset {
                chip.reset_dram_traffic();
            }
            Ok([t.read_bytes.to_le_bytes(), t.write_bytes.to_le_bytes()].concat())
        }
        Request::CoreDebug { core } => {
            let view = chip.core_debug(Coord::unpack(core)).map(|d| CoreView {
                pc: d.pc,
                halt: d.halt.map(|h| h.to_string()),
                last_pcs: d.last_pcs,
            });
            Ok(CoreView::encode(view.as_ref()))
        }
        Request::Detach | Request::Stop => Ok(Vec::new()),
        Request::Reset => {
            info.recovered_from = 0;
            chip.power_on_reset().map(|()| Vec::new()).map_err(|e| e.to_string())
        }
    }
}

/// Holds every core in reset, delivers what is in flight, zeroes every
/// semaphore. Returns the transactions drained and the cycles it took.
fn quiesce(chip: &mut Chip) -> (usize, u64) {
    let cores: Vec<Coord> = chip.cores().collect();
    for &c in &cores {
        chip.set_reset(c, true).expect("every core has SOFT_RESET");
    }
    chip.land_posted_writes();
    let (drained, start) = (chip.in_flight(), chip.now());
    if drained > 0 {
        // Bounded; the caller reports what is left through in_flight().
        let _ = chip.run_until(|c| c.in_flight() == 0, QUIESCE_BUDGET_CYCLES);
    }
    for &c in &cores {
        for i in 0..mmio::SEMAPHORE_COUNT {
            let at = NocAddr::unicast(c, (mmio::MMIO_BASE + mmio::semaphore(i)) as u64);
            chip.write_u32(at, 0).expect("the host may write semaphores");
        }
    }
    chip.land_posted_writes();
    (drained, chip.now() - start)
}
