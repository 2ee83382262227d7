//! Device specs: which backend a string names, and opening it.
//!
//! | spec | backend | cargo feature |
//! |---|---|---|
//! | `embedded`, `embedded:seed=N[,slow][,exact][,blocking][,no-contention][,icache]` | in-process simulator (`exact`: exact time between tiles, `SimConfig::exact_time`; `blocking`: every L1 load stalls its core, the model before pipelined L1 loads became the default, `SimConfig::pipelined_loads` off (`pipelined`, the default, is accepted); `no-contention`: packets never queue for the links between NOC routers, `NocTiming::link_contention` off, the model before link contention became the default (`contention`, the default, is accepted); `icache`: instruction caches, `SimConfig::icache`) | `sim` |
//! | `sim:PATH[?wait[=SECS]]` | simulator daemon client | `daemon` |
//! | `/dev/tenstorrent/N` | tt-kmd on a card | `ttkmd` |
//! | `ttkmd-sim:PATH` | the tt-kmd backend against the simulator | `ttkmd` + `sim` |
//! | `ttsim:PATH` | any libttsim shared library (PATH to the `.so`, its `soc_descriptor.yaml` beside it): cqlab's own (`cargo xtask libttsim`) or Tenstorrent's ttsim | `ttsim` |

use super::Backend;
use crate::config::DeviceConfig;
use crate::error::{DriverError, Result};

/// The embedded simulator's timing-model options, each named by the word
/// an `embedded:` spec takes for it; the default is the calibrated model.
/// Every tool that offers them (`bench dispatch`, `calibrate`, `race`)
/// turns them into a simulator configuration here, so a word, a flag and
/// a configuration field cannot drift apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Model {
    /// `exact`: exact time between tiles (`SimConfig::exact_time`).
    pub exact_time: bool,
    /// `blocking` turns it off: every L1 load stalls its core, the model
    /// before pipelined loads became the default (`SimConfig::pipelined_loads`).
    pub pipelined_loads: bool,
    /// `icache`: instruction caches (`SimConfig::icache`).
    pub icache: bool,
    /// `no-l0` turns it off: Blackhole's L0 data caches
    /// (`SimConfig::l0_data_cache`), the default there since 2026-11-30
    /// (Wormhole has none: nothing to turn off).
    pub l0_cache: bool,
    /// `no-contention` turns it off: packets never queue for the links
    /// between routers, the model before contention became the default
    /// (`NocTiming::link_contention`).
    pub link_contention: bool,
}

impl Default for Model {
    fn default() -> Self {
        Model { exact_time: false, pipelined_loads: true, icache: false, l0_cache: true, link_contention: true }
    }
}

impl Model {
    /// Every word [`Model::take`] knows.
    pub const WORDS: &'static str = "exact, blocking, pipelined, no-contention, contention, icache, no-l0, l0";

    /// Applies spec word `word`; false if it is not a model word.
    pub fn take(&mut self, word: &str) -> bool {
        match word {
            "exact" => self.exact_time = true,
            "pipelined" => self.pipelined_loads = true,
            "blocking" => self.pipelined_loads = false,
            "contention" => self.link_contention = true,
            "no-contention" => self.link_contention = false,
            "icache" => self.icache = true,
            "l0" => self.l0_cache = true,
            "no-l0" => self.l0_cache = false,
            _ => return false,
        }
        true
    }

    /// How this model departs from the default: each departure's spec word
    /// and what it is, in the order the spec table lists them.
    fn departures(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        [
            (self.exact_time, "exact", "exact time"),
            (!self.pipelined_loads, "blocking", "blocking L1 loads"),
            (!self.link_contention, "no-contention", "no link contention"),
            (self.icache, "icache", "instruction caches"),
            (!self.l0_cache, "no-l0", "no L0 data caches"),
        ]
        .into_iter()
        .filter(|&(departs, ..)| departs)
        .map(|(_, word, what)| (word, what))
    }

    /// The spec words that differ from the default, each after a comma
    /// (`",exact,icache"`): appended to `embedded:seed=N`, they name this model.
    pub fn spec_words(&self) -> String {
        self.departures().map(|(word, _)| format!(",{word}")).collect()
    }

    /// How this model differs from the default, for a report's header
    /// (`", exact time, instruction caches"`; empty for the default).
    pub fn describe(&self) -> String {
        self.departures().map(|(_, what)| format!(", {what}")).collect()
    }

    /// This model as it runs on `arch`: Wormhole's cores have no L0 data
    /// caches, whatever `l0_cache` says (what a report of a run says).
    pub fn on(self, arch: cqlab_abi::arch::Arch) -> Model {
        Model { l0_cache: self.l0_cache && arch == cqlab_abi::arch::Arch::Blackhole, ..self }
    }

    /// Sets `sim`'s timing model to this one.
    #[cfg(feature = "sim")]
    pub fn apply(&self, sim: &mut cqlab_sim::config::SimConfig) {
        sim.exact_time = self.exact_time;
        sim.pipelined_loads = self.pipelined_loads;
        sim.noc.link_contention = self.link_contention;
        sim.icache = self.icache;
        sim.l0_data_cache = self.on(sim.board.arch()).l0_cache;
    }
}

/// The model a simulator daemon says it runs.
#[cfg(feature = "daemon")]
impl From<cqlab_sim::daemon::proto::TimingModel> for Model {
    fn from(m: cqlab_sim::daemon::proto::TimingModel) -> Model {
        Model {
            exact_time: m.exact_time,
            pipelined_loads: m.pipelined_loads,
            icache: m.icache,
            l0_cache: m.l0_data_cache,
            link_contention: m.link_contention,
        }
    }
}

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
            for opt in spec.strip_prefix("embedded:").unwrap_or("").split(',').filter(|o| !o.is_empty()) {
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
    let need = cfg.queue_layout(cfg.num_cqs).base;
    if need > sim.sysmem_size as u64 {
        return Err(DriverError::Invalid(format!(
            "the command queues need {need} bytes of sysmem, the simulator has {}",
            sim.sysmem_size
        )));
    }
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
        let unknown = Spec::parse("embedded:links").unwrap_err().to_string();
        assert!(
            unknown.contains(
                "known: seed=N, slow, exact, blocking, pipelined, no-contention, contention, icache, no-l0, l0"
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
        assert!(Spec::parse("gpu0").unwrap_err().to_string().contains("unknown device"));
    }

    /// A tool names a model by its spec words (`bench dispatch` opens
    /// `embedded:seed=N` with them): every model reads back as itself.
    #[test]
    fn every_model_reads_back_from_its_spec_words() {
        for bits in 0..32u8 {
            let on = |k: u8| bits & (1 << k) != 0;
            let model = Model {
                exact_time: on(0),
                pipelined_loads: !on(1),
                icache: on(2),
                link_contention: !on(3),
                l0_cache: !on(4),
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
