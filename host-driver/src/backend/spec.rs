//! Device specs: which backend a string names, and opening it.
//!
//! | spec | backend | cargo feature |
//! |---|---|---|
//! | `embedded`, `embedded:seed=N[,slow][,exact][,blocking][,no-contention][,icache][,no-l0][,reads-wait-unsent]` | in-process simulator (`exact`: exact time between tiles, `SimConfig::exact_time`; `blocking`: every L1 load stalls its core, the model before pipelined L1 loads became the default, `SimConfig::pipelined_loads` off (`pipelined`, the default, is accepted); `no-contention`: packets never queue for the links between NOC routers, `NocTiming::link_contention` off, the model before link contention became the default (`contention`, the default, is accepted); `icache`: instruction caches, `SimConfig::icache`; `no-l0`: no L0 data caches on Blackhole (`l0`, the default, is accepted); `reads-wait-unsent`: a device read of host memory waits for the host writes still queued in its NIU too, `NocTiming::reads_pass_unsent` off, the model before 2026-12-01 (`reads-pass-unsent`, the default, is accepted)) | `sim` |
//! | `sim:PATH[?wait[=SECS]]` | simulator daemon client | `daemon` |
//! | `/dev/tenstorrent/N` | tt-kmd on a card | `ttkmd` |
//! | `ttkmd-sim:PATH` | the tt-kmd backend against the simulator | `ttkmd` + `sim` |
//! | `ttsim:PATH` | any libttsim shared library (PATH to the `.so`, its `soc_descriptor.yaml` beside it): cqlab's own (`cargo xtask libttsim`) or Tenstorrent's ttsim | `ttsim` |

use super::Backend;
use crate::config::DeviceConfig;
use crate::error::{DriverError, Result};

pub use super::model::Model;

/// What a spec names, parsed but not opened.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    Embedded { seed: u64, slow: bool, model: Model },
    Daemon { rest: String },
    TtKmd { path: String },
    TtKmdSim { path: String },
    TtSim { path: String },
}

impl Spec {
    pub fn parse(spec: &str) -> Result<Self> {
        if spec == "embedded" || spec.starts_with("embedded:") {
            let (mut seed, mut slow, mut model) = (0, false, Model::default());
            let mut seen: Vec<&str> = Vec::new();
            for opt in spec.strip_prefix("embedded:").unwrap_or("").split(',').filter(|o| !o.is_empty()) {
                // Twice is ambiguous: the simulator and the report would
                // each take a different one (helper-44: seed=1,seed=2).
                let name = opt.split_once('=').map_or(opt, |(k, _)| k);
                if seen.contains(&name) {
                    return Err(DriverError::Invalid(format!("embedded option {name:?} given twice in {spec:?}")));
                }
                // So is a word and its contrary: the last one won, while the
                // spec a report records named both (helper-65).
                if let Some(other) = Model::contrary(name).filter(|o| seen.contains(o)) {
                    return Err(DriverError::Invalid(format!(
                        "embedded options {other:?} and {name:?} contradict each other in {spec:?}"
                    )));
                }
                seen.push(name);
                match opt.split_once('=') {
                    Some(("seed", v)) => {
                        seed = v.parse().map_err(|_| DriverError::Invalid(format!("seed {v:?} is not a number")))?
                    }
                    None if opt == "slow" => slow = true,
                    None if model.take(opt) => {}
                    _ => {
                        return Err(DriverError::Invalid(format!(
                            "unknown embedded option {opt:?} (known: seed=N, slow, {})",
                            Model::WORDS
                        )))
                    }
                }
            }
            return Ok(Spec::Embedded { seed, slow, model });
        }
        if let Some(rest) = spec.strip_prefix("sim:") {
            return Ok(Spec::Daemon { rest: rest.to_owned() });
        }
        if let Some(path) = spec.strip_prefix("ttkmd-sim:") {
            if path.is_empty() {
                return Err(DriverError::Invalid("ttkmd-sim: needs a path: ttkmd-sim:PATH".into()));
            }
            return Ok(Spec::TtKmdSim { path: path.to_owned() });
        }
        if let Some(path) = spec.strip_prefix("ttsim:") {
            if path.is_empty() {
                return Err(DriverError::Invalid("ttsim: needs the library's path: ttsim:PATH".into()));
            }
            return Ok(Spec::TtSim { path: path.to_owned() });
        }
        if spec.starts_with("/dev/") {
            return Ok(Spec::TtKmd { path: spec.to_owned() });
        }
        Err(DriverError::Invalid(format!(
            "unknown device {spec:?}: use embedded[:seed=N], sim:PATH, /dev/tenstorrent/N, ttkmd-sim:PATH or ttsim:PATH"
        )))
    }
}

/// Opens the backend `spec` names, adjusting `cfg` where the spec says
/// (`embedded:...,slow`). Backends whose cargo feature is off say so.
pub fn open(spec: &str, cfg: &mut DeviceConfig) -> Result<Box<dyn Backend>> {
    let parsed = Spec::parse(spec)?;
    if cfg.host_schedule.is_active() && !matches!(parsed, Spec::Embedded { .. }) {
        // Elsewhere the device runs on its own clock: the host's accesses
        // interleave with it however they do, not by a seed.
        return Err(DriverError::Invalid(format!(
            "a host schedule (host jitter, host PCT) needs the embedded simulator, not {spec:?}"
        )));
    }
    match parsed {
        Spec::Embedded { seed, slow, model } => {
            cfg.slow_dispatch |= slow;
            embedded(seed, model, cfg)
        }
        Spec::Daemon { rest } => daemon(&rest, cfg),
        Spec::TtKmd { path } => ttkmd(&path, cfg),
        Spec::TtKmdSim { path } => ttkmd_sim(&path, cfg),
        Spec::TtSim { path } => ttsim(&path, cfg),
    }
}

#[cfg(feature = "ttsim")]
fn ttsim(path: &str, cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    Ok(Box::new(crate::ttsim::TtSim::open(std::path::Path::new(path), cfg)?))
}

#[cfg(not(feature = "ttsim"))]
fn ttsim(_: &str, _: &DeviceConfig) -> Result<Box<dyn Backend>> {
    Err(DriverError::NotBuilt("the libttsim backend (cargo feature `ttsim` of cqlab-driver)"))
}

#[cfg(feature = "sim")]
fn embedded(seed: u64, model: Model, cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    let mut sim = sim_config(cfg, seed);
    model.apply(&mut sim);
    Ok(Box::new(embedded_with(sim, cfg)?))
}

/// The simulator configuration of `cfg`'s chip (its board, a Wormhole n150
/// unless it names one, and its harvesting) with seed `seed` and the
/// default timing.
#[cfg(feature = "sim")]
pub fn sim_config(cfg: &DeviceConfig, seed: u64) -> cqlab_sim::config::SimConfig {
    let board = cfg.sim_board();
    cqlab_sim::config::SimConfig {
        seed,
        harvesting: cfg.sim_harvesting(),
        ..cqlab_sim::config::SimConfig::for_board(board)
    }
}

#[cfg(not(feature = "sim"))]
fn embedded(_: u64, _: Model, _: &DeviceConfig) -> Result<Box<dyn Backend>> {
    Err(DriverError::NotBuilt("the embedded simulator (cargo feature `sim` of cqlab-driver)"))
}

/// An in-process simulated chip as `sim` describes it (board, harvesting,
/// timing), with room in sysmem for `cfg`'s queues.
#[cfg(feature = "sim")]
pub fn embedded_with(sim: cqlab_sim::config::SimConfig, cfg: &DeviceConfig) -> Result<crate::sim_backend::EmbeddedSim> {
    cfg.check_sysmem(sim.sysmem_size as u64, "the simulator")?;
    crate::sim_backend::EmbeddedSim::new(sim, cfg.host_schedule)
}

#[cfg(feature = "daemon")]
fn daemon(rest: &str, cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    let (path, wait) = crate::daemon_backend::DaemonBackend::parse_spec(rest)?;
    let backend = crate::daemon_backend::DaemonBackend::attach_with(path, wait)?;
    backend.check_config(cfg)?;
    Ok(Box::new(backend))
}

#[cfg(not(feature = "daemon"))]
fn daemon(_: &str, _: &DeviceConfig) -> Result<Box<dyn Backend>> {
    Err(DriverError::NotBuilt("the simulator daemon client (cargo feature `daemon` of cqlab-driver)"))
}

#[cfg(feature = "ttkmd")]
fn ttkmd(path: &str, cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    crate::ttkmd::backend::open_device(path, cfg)
}

#[cfg(not(feature = "ttkmd"))]
fn ttkmd(_: &str, _: &DeviceConfig) -> Result<Box<dyn Backend>> {
    Err(DriverError::NotBuilt("the tt-kmd backend (cargo feature `ttkmd` of cqlab-driver)"))
}

#[cfg(all(feature = "ttkmd", feature = "sim"))]
fn ttkmd_sim(path: &str, cfg: &DeviceConfig) -> Result<Box<dyn Backend>> {
    crate::ttkmd::backend::open_simulated(path, cfg)
}

#[cfg(not(all(feature = "ttkmd", feature = "sim")))]
fn ttkmd_sim(_: &str, _: &DeviceConfig) -> Result<Box<dyn Backend>> {
    Err(DriverError::NotBuilt("tt-kmd against the simulator (cargo features `ttkmd` and `sim` of cqlab-driver)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        assert_eq!(Spec::parse("embedded").unwrap(), Spec::Embedded { seed: 0, slow: false, model: Model::default() });
        assert_eq!(
            Spec::parse("embedded:seed=7,slow").unwrap(),
            Spec::Embedded { seed: 7, slow: true, model: Model::default() }
        );
        assert_eq!(
            Spec::parse("embedded:exact,seed=2").unwrap(),
            Spec::Embedded { seed: 2, slow: false, model: Model { exact_time: true, ..Model::default() } }
        );
        assert_eq!(
            Spec::parse("embedded:seed=3,pipelined").unwrap(),
            Spec::Embedded { seed: 3, slow: false, model: Model::default() }
        );
        assert_eq!(
            Spec::parse("embedded:blocking,seed=3").unwrap(),
            Spec::Embedded { seed: 3, slow: false, model: Model { pipelined_loads: false, ..Model::default() } }
        );
        assert_eq!(
            Spec::parse("embedded:contention").unwrap(),
            Spec::Embedded { seed: 0, slow: false, model: Model::default() }
        );
        assert_eq!(
            Spec::parse("embedded:no-contention,seed=5").unwrap(),
            Spec::Embedded { seed: 5, slow: false, model: Model { link_contention: false, ..Model::default() } }
        );
        assert_eq!(
            Spec::parse("embedded:icache,seed=4").unwrap(),
            Spec::Embedded { seed: 4, slow: false, model: Model { icache: true, ..Model::default() } }
        );
        assert_eq!(
            Spec::parse("embedded:reads-wait-unsent,seed=6").unwrap(),
            Spec::Embedded { seed: 6, slow: false, model: Model { reads_pass_unsent: false, ..Model::default() } }
        );
        assert_eq!(
            Spec::parse("embedded:reads-pass-unsent").unwrap(),
            Spec::Embedded { seed: 0, slow: false, model: Model::default() }
        );
        let unknown = Spec::parse("embedded:links").unwrap_err().to_string();
        assert!(
            unknown.contains(
                "known: seed=N, slow, exact, blocking, pipelined, no-contention, contention, icache, no-l0, l0, \
                 reads-wait-unsent, reads-pass-unsent"
            ),
            "{unknown}"
        );
        assert_eq!(Spec::parse("sim:/tmp/d?wait").unwrap(), Spec::Daemon { rest: "/tmp/d?wait".into() });
        assert_eq!(Spec::parse("/dev/tenstorrent/0").unwrap(), Spec::TtKmd { path: "/dev/tenstorrent/0".into() });
        assert_eq!(Spec::parse("ttkmd-sim:/tmp/t").unwrap(), Spec::TtKmdSim { path: "/tmp/t".into() });
        assert!(Spec::parse("ttkmd-sim:").is_err());
        assert_eq!(Spec::parse("ttsim:/l/libttsim_wh.so").unwrap(), Spec::TtSim { path: "/l/libttsim_wh.so".into() });
        assert!(Spec::parse("ttsim:").unwrap_err().to_string().contains("ttsim:PATH"));
        assert!(Spec::parse("embedded:seed=x").unwrap_err().to_string().contains("not a number"));
        for twice in ["embedded:seed=1,seed=2", "embedded:slow,exact,slow"] {
            assert!(Spec::parse(twice).unwrap_err().to_string().contains("given twice"), "{twice}");
        }
        for (a, b) in [
            ("pipelined", "blocking"),
            ("no-contention", "contention"),
            ("l0", "no-l0"),
            ("reads-wait-unsent", "reads-pass-unsent"),
        ] {
            for spec in [format!("embedded:{a},{b}"), format!("embedded:{b},exact,{a}")] {
                let e = Spec::parse(&spec).unwrap_err().to_string();
                assert!(e.contains("contradict each other"), "{spec}: {e}");
            }
        }
        assert!(Spec::parse("gpu0").unwrap_err().to_string().contains("unknown device"));
    }

    /// A tool names a model by its spec words (`bench dispatch` opens
    /// `embedded:seed=N` with them): every model reads back as itself.
    #[test]
    fn every_model_reads_back_from_its_spec_words() {
        for bits in 0..64u8 {
            let on = |k: u8| bits & (1 << k) != 0;
            let model = Model {
                exact_time: on(0),
                pipelined_loads: !on(1),
                icache: on(2),
                link_contention: !on(3),
                l0_cache: !on(4),
                reads_pass_unsent: !on(5),
            };
            let spec = format!("embedded:seed=9{}", model.spec_words());
            assert_eq!(Spec::parse(&spec).unwrap(), Spec::Embedded { seed: 9, slow: false, model }, "{spec}");
            assert_eq!(model.describe().is_empty(), model == Model::default(), "{model:?}");
        }
        // The words the error message lists are the words taken.
        for word in Model::WORDS.split(", ") {
            assert!(Model::default().take(word), "{word}");
        }
    }
}
