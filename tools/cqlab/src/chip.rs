//! `--chip` and `--harvest`: which real chip a command's device is, for
//! every command that makes or opens one.
//!
//! For a simulator made here (`--device embedded`, `sim serve`, `sim
//! ttkmd`) they say what to simulate: a Wormhole n150 with its usual
//! harvesting unless told otherwise. For a device that exists (`sim:PATH`,
//! a card) they are what the command expects, checked against what ARC
//! reports; left out, the device is whatever it says it is.

use crate::usage::UsageError;
use cqlab_abi::noc::Coord;
use cqlab_abi::soc::{Board, ChipLayout, Harvesting};
use cqlab_driver::{DeviceConfig, Role, Topology};

#[derive(clap::Args, Clone, Debug, Default)]
pub struct ChipOpt {
    /// The board: wormhole-n150, wormhole-n300 (its PCIe-attached chip),
    /// blackhole-p100a or blackhole-p150a, or by the card's name alone
    /// (n150, n300, p100a, p150a). A simulator made here defaults to
    /// wormhole-n150; a device that exists is what it reports.
    #[arg(long, value_name = "BOARD", value_parser = board)]
    pub chip: Option<Board>,
    /// Harvested Tensix lines in NOC0 coordinates, replacing the board's
    /// usual harvesting as a whole: `rows=Y,..` (Wormhole),
    /// `cols=X,..[,dram=BANK,..][,eth=CH,..|all]` (Blackhole), or `none`.
    /// Usual: n150 rows=8, n300 rows=1,8, p100a cols=7,10,dram=3,eth=all,
    /// p150a cols=7,10,eth=5,8.
    #[arg(long, value_name = "LINES")]
    pub harvest: Option<String>,
}

pub fn board(s: &str) -> Result<Board, String> {
    s.parse().map_err(|e: cqlab_abi::soc::UnknownBoard| e.to_string())
}

/// A `--chip` whose help lists the boards as clap's possible values (from
/// `Board::ALL`, each taking its short name as an alias), for a command
/// that takes the board alone and so needs none of `ChipOpt`'s prose.
pub fn listed_board() -> impl clap::builder::TypedValueParser<Value = Board> {
    use clap::builder::{PossibleValue, TypedValueParser as _};
    clap::builder::PossibleValuesParser::new(Board::ALL.map(|b| PossibleValue::new(b.name()).alias(b.short_name())))
        .map(|name| name.parse::<Board>().expect("a board's own name"))
}

impl ChipOpt {
    /// The board a simulator made here simulates.
    pub fn sim_board(&self) -> Board {
        self.chip.unwrap_or(Board::WormholeN150)
    }

    /// The harvesting `--harvest` names (against the board a simulator
    /// would be), checked against the chip; `None` when not given.
    pub fn harvesting(&self) -> Result<Option<Harvesting>, UsageError> {
        self.harvesting_for(true)
    }

    /// [`ChipOpt::harvesting`] for a device made here (`made_here`) or one
    /// that exists: without `--chip`, the latter's board is whatever the
    /// device reports, so the value is checked against it when it opens,
    /// not against the board a simulator would be.
    pub fn harvesting_for(&self, made_here: bool) -> Result<Option<Harvesting>, UsageError> {
        let Some(text) = &self.harvest else { return Ok(None) };
        let h = Harvesting::parse(text).map_err(|e| UsageError(format!("--harvest {text}: {e}")))?;
        if made_here || self.chip.is_some() {
            let board = self.sim_board();
            ChipLayout::new(board, h.clone()).map_err(|e| UsageError(format!("--harvest {text}: {e}")))?;
        }
        Ok(Some(h))
    }

    /// Checks the options before any work (a device made here).
    pub fn validate(&self) -> Result<(), UsageError> {
        self.validate_for(true)
    }

    /// Checks the options before any work, for a device made here or one
    /// that exists ([`ChipOpt::harvesting_for`]).
    pub fn validate_for(&self, made_here: bool) -> Result<(), UsageError> {
        self.harvesting_for(made_here).map(drop)
    }

    /// Sets `cfg`'s board and harvesting: what to simulate.
    pub fn apply(&self, cfg: &mut DeviceConfig) -> Result<(), UsageError> {
        self.apply_for(cfg, true)
    }

    /// Sets `cfg`'s board and harvesting: what to simulate (`made_here`),
    /// or what to expect of a device that exists.
    pub fn apply_for(&self, cfg: &mut DeviceConfig, made_here: bool) -> Result<(), UsageError> {
        cfg.harvesting = self.harvesting_for(made_here)?;
        cfg.board = self.chip.or(cfg.harvesting.as_ref().filter(|_| made_here).map(|_| self.sim_board()));
        Ok(())
    }

    /// The simulator of this chip with `seed` (a simulator made here).
    pub fn sim(&self, seed: u64) -> Result<cqlab_sim::config::SimConfig, UsageError> {
        let mut cfg = DeviceConfig::default();
        self.apply(&mut cfg)?;
        Ok(cqlab_driver::backend::spec::sim_config(&cfg, seed))
    }

    /// The options as a command line gives them (for replay lines and
    /// campaign jobs).
    pub fn argv(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(b) = self.chip {
            v.extend(["--chip".to_string(), b.name().to_string()]);
        }
        if let Some(h) = &self.harvest {
            v.extend(["--harvest".to_string(), h.clone()]);
        }
        v
    }
}

/// A core by role, as options name it: `prefetcherQ`, `dispatcherQ`,
/// `workerC.R` (logical compute coordinates). It becomes a tile only on a
/// chip ([`CoreName::on`]): where the queues sit and which lines are
/// harvested differ between chips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreName {
    Prefetcher(u8),
    Dispatcher(u8),
    Worker(u8, u8),
}

impl CoreName {
    /// `prefetcherQ`, `dispatcherQ` or `workerC.R`.
    pub fn parse(name: &str) -> Option<Self> {
        let queue = |q: &str| q.parse().ok().filter(|&q| q < cqlab_abi::noc::MAX_CQS);
        if let Some(q) = name.strip_prefix("prefetcher") {
            return queue(q).map(CoreName::Prefetcher);
        }
        if let Some(q) = name.strip_prefix("dispatcher") {
            return queue(q).map(CoreName::Dispatcher);
        }
        let (c, r) = name.strip_prefix("worker")?.split_once('.')?;
        Some(CoreName::Worker(c.parse().ok()?, r.parse().ok()?))
    }

    /// The tile it names on `chip` (translated coordinates), if the chip has it.
    pub fn on(self, chip: &Topology) -> Option<Coord> {
        match self {
            CoreName::Prefetcher(q) => (q < chip.num_cqs()).then(|| chip.prefetcher(q)),
            CoreName::Dispatcher(q) => (q < chip.num_cqs()).then(|| chip.dispatcher(q)),
            CoreName::Worker(c, r) => chip.worker(c, r),
        }
    }

    /// The name of tile `c` of `chip`, if it runs firmware.
    pub fn of(chip: &Topology, c: Coord) -> Option<Self> {
        Some(match chip.role(c)? {
            Role::Prefetcher { cq } => CoreName::Prefetcher(cq),
            Role::Dispatcher { cq } => CoreName::Dispatcher(cq),
            Role::Worker { col, row } => CoreName::Worker(col, row),
        })
    }
}

impl std::fmt::Display for CoreName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoreName::Prefetcher(q) => write!(f, "prefetcher{q}"),
            CoreName::Dispatcher(q) => write!(f, "dispatcher{q}"),
            CoreName::Worker(c, r) => write!(f, "worker{c}.{r}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl ChipOpt {
        fn of(board: Board, harvest: Option<&str>) -> Self {
            Self { chip: Some(board), harvest: harvest.map(str::to_string) }
        }
    }

    #[test]
    fn boards_and_harvesting_are_checked_against_the_chip() {
        assert_eq!(board("blackhole-p100a"), Ok(Board::BlackholeP100a));
        let e = board("grayskull").unwrap_err();
        assert!(e.contains("wormhole-n150") && e.contains("blackhole-p150a"), "{e}");
        // The README's tables name the cards (`n300`); `--chip` takes that
        // name too, and replay lines print the full one.
        for b in Board::ALL {
            assert_eq!(board(b.short_name()), Ok(b));
            assert!(e.contains(b.short_name()), "{e}");
        }
        let opt = ChipOpt { chip: Some(board("n300").unwrap()), harvest: None };
        assert_eq!(opt.argv(), ["--chip", "wormhole-n300"]);
        let wh = ChipOpt::of(Board::WormholeN150, Some("rows=1,2"));
        assert_eq!(wh.harvesting().unwrap(), Some(Harvesting::rows(&[1, 2])));
        // Columns are a Blackhole's harvesting, not a Wormhole's.
        assert!(ChipOpt::of(Board::WormholeN150, Some("cols=7")).validate().is_err());
        assert!(ChipOpt::of(Board::BlackholeP150a, Some("cols=7,10")).validate().is_ok());
        // A line that holds no Tensix is refused.
        assert!(ChipOpt::of(Board::WormholeN150, Some("rows=0")).validate().is_err());
        let mut cfg = DeviceConfig::default();
        ChipOpt::default().apply(&mut cfg).unwrap();
        assert_eq!((cfg.board, cfg.harvesting.clone()), (None, None));
        ChipOpt { chip: None, harvest: Some("rows=1".into()) }.apply(&mut cfg).unwrap();
        assert_eq!(cfg.board, Some(Board::WormholeN150));
    }

    #[test]
    fn core_names_resolve_on_each_chip() {
        for name in ["prefetcher0", "dispatcher1", "worker3.2"] {
            assert_eq!(CoreName::parse(name).unwrap().to_string(), name);
        }
        for bad in ["prefetcher16", "worker1", "worker1.x", "core1"] {
            assert_eq!(CoreName::parse(bad), None, "{bad}");
        }
        for board in Board::ALL {
            let chip = Topology::for_board(board, None, 2).unwrap();
            for name in [CoreName::Prefetcher(1), CoreName::Dispatcher(0), CoreName::Worker(1, 1)] {
                let c = name.on(&chip).unwrap();
                assert_eq!(CoreName::of(&chip, c), Some(name), "{board}");
            }
            assert_eq!(CoreName::Prefetcher(2).on(&chip), None);
            assert_eq!(CoreName::Worker(chip.cols(), 0).on(&chip), None);
        }
    }
}
