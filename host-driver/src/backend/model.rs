//! The embedded simulator's timing model as spec words, flags and a
//! simulator configuration (one place, so they cannot drift apart).

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
    /// `reads-wait-unsent` turns it off: a device read of host memory waits
    /// for the earlier host writes still queued in its core's NIU too, the
    /// model before 2026-12-01 (`NocTiming::reads_pass_unsent`).
    pub reads_pass_unsent: bool,
}

impl Default for Model {
    fn default() -> Self {
        Model {
            exact_time: false,
            pipelined_loads: true,
            icache: false,
            l0_cache: true,
            link_contention: true,
            reads_pass_unsent: true,
        }
    }
}

impl Model {
    /// Every word [`Model::take`] knows.
    pub const WORDS: &'static str =
        "exact, blocking, pipelined, no-contention, contention, icache, no-l0, l0, reads-wait-unsent, reads-pass-unsent";

    /// The word that sets the same parameter the other way (`blocking` for
    /// `pipelined`); `None` for a word without one or not a model word.
    pub fn contrary(word: &str) -> Option<&'static str> {
        const PAIRS: [(&str, &str); 4] = [
            ("pipelined", "blocking"),
            ("contention", "no-contention"),
            ("l0", "no-l0"),
            ("reads-pass-unsent", "reads-wait-unsent"),
        ];
        PAIRS.iter().find_map(|&(a, b)| match word {
            _ if word == a => Some(b),
            _ if word == b => Some(a),
            _ => None,
        })
    }

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
            "reads-pass-unsent" => self.reads_pass_unsent = true,
            "reads-wait-unsent" => self.reads_pass_unsent = false,
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
            (!self.reads_pass_unsent, "reads-wait-unsent", "host reads wait for unsent writes"),
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

    /// [`Model::describe`] for a chip of `arch`: one without L0 data
    /// caches (Wormhole) has none to turn off, so `no-l0` departs nothing.
    pub fn describe_on(&self, arch: cqlab_abi::arch::Arch) -> String {
        Model { l0_cache: self.l0_cache || arch != cqlab_abi::arch::Arch::Blackhole, ..*self }.describe()
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
        sim.noc.reads_pass_unsent = self.reads_pass_unsent;
    }
}

#[cfg(feature = "daemon")]
impl Model {
    /// The model a simulator daemon of an `arch` chip says it runs: a chip
    /// without L0 data caches (Wormhole) runs the default, not a departure
    /// from it ([`Model::on`] gives the caches as they run).
    pub fn of_daemon(m: cqlab_sim::daemon::proto::TimingModel, arch: cqlab_abi::arch::Arch) -> Model {
        Model {
            exact_time: m.exact_time,
            pipelined_loads: m.pipelined_loads,
            icache: m.icache,
            l0_cache: m.l0_data_cache || arch != cqlab_abi::arch::Arch::Blackhole,
            link_contention: m.link_contention,
            reads_pass_unsent: m.reads_pass_unsent,
        }
    }
}
