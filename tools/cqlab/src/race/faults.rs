//! `--faults SPEC`: the simulator's fault knobs by name, and the host's
//! (`lazy-drain`).

use crate::chip::CoreName;
use crate::usage::{ensure, UsageError};
use cqlab_driver::Topology;
use cqlab_sim::config::{SimConfig, SlowCore};

/// Faults to apply on top of the simulator defaults (`None` = leave as is).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    pub stall: Option<(f64, u64)>,
    pub jitter: Option<u64>,
    /// Slowed cores by name, and by how much.
    pub slow: Vec<(CoreName, f64)>,
    pub late_doorbell: Option<u64>,
    pub backpressure: Option<u64>,
    pub pcie_read: Option<u64>,
    pub quantum_jitter: Option<u64>,
    /// The host reads completions only every this many polls of a wait.
    pub lazy_drain: Option<u32>,
    /// A read of host memory passes earlier writes to host memory still
    /// queued in its NIU: the model's default since 2026-12-01
    /// (`NocTiming::reads_pass_unsent`, set from `--reads-pass-unsent`), so
    /// it sets nothing. Kept so command lines from before run as they did:
    /// it is still a fault given, so a two-queue seed with it draws no slice
    /// jitter (`Plan::seed_variation`); refused with `--reads-pass-unsent
    /// false`.
    pub read_passes_unsent: bool,
}

/// What `strong` means: every amplifier at once, each at a level the
/// normal firmware must survive. Back-pressure outlasts the calibrated
/// chips' path from a worker's "done" to a read of what it wrote
/// (~1,000-1,500 cycles; at 1,000 it rarely widened that window).
pub const STRONG: &str =
    "stall=0.01:2000,jitter=800,late-doorbell=400,backpressure=3000,quantum-jitter=64,slow=dispatcher0@2,slow=prefetcher1@2";

/// Said up front (stderr, human output) when `strong` is given: its host
/// time per seed is a surprise otherwise. Measured on 9c46989 with this
/// note (2026-12-02, release build, `race --chip C --workload W --seeds 5 [--faults strong]`,
/// race's "s of runs" without and with): two-queue n150 0.3 and 2.4 s,
/// p150a 0.4 and 4.8; random 0.4 and 5.9, 0.7 and 15.3; programs 2.1 and
/// 13.8, 3.6 and 23.9 (7-22x). `random --seeds 3` with each of its faults
/// alone: the stalls 5.9 s (all of `strong` 6.6), every other fault
/// 0.3-0.4 s, as without.
pub const STRONG_COST_NOTE: &str = "note: --faults strong takes about 7-22x the host time per seed of a race \
     without faults (most of it its core stalls, stall=0.01:2000)";

/// Whether `specs` (`--faults`, as given) name `strong`.
pub fn names_strong(specs: &[String]) -> bool {
    specs.iter().flat_map(|s| s.split(',')).any(|item| item.trim() == "strong")
}

const MAX_CYCLES: u64 = 10_000_000;

/// Cycles a core stalls for `--core-stall` (and `stall=P` without `:CYCLES`).
pub const CORE_STALL_CYCLES: u64 = 2000;

/// The most of the cores' time stalls may take: above it the cores run
/// under a tenth of the time, and the waits of a run (a boot's alive
/// records, a read-back) outlast a wait's no-progress limit as hangs
/// (measured: `race --core-stall` at 0.024 and 0.0245, a 0.96 and 0.98
/// share, timed out seeds of the normal firmware; 0.0235 and 0.0225 ran).
pub const MAX_STALL_SHARE: f64 = 0.9;

/// Refuses a stall probability `p` of `cycles` per scheduling slice whose
/// stalls take more than [`MAX_STALL_SHARE`] of the cores' time. The
/// simulator draws a stall for every core once in every slice (a slice
/// cut short where a host step ends draws its share), also while the core
/// is still behind from the last one, so a core loses `p * cycles / slice`
/// cycles per cycle: at 1 or more it falls behind forever and never runs.
pub fn check_stall(option: &str, p: f64, cycles: u64) -> Result<(), UsageError> {
    let option = format!("{option} {p}");
    let slice = cqlab_sim::config::SimConfig::default().quantum_cycles as f64;
    let share = p * cycles as f64 / slice;
    ensure(share <= MAX_STALL_SHARE, || {
        let why = if share >= 1.0 {
            "the cores fall behind forever and the device can never boot"
        } else {
            "the cores run under a tenth of the time and every wait outlasts its no-progress limit as a hang"
        };
        format!(
            "{option}: each core stalls {cycles} cycles with probability {p} in every {slice}-cycle scheduling \
             slice, {share:.2} stall cycles per cycle: {why} (with {cycles}-cycle stalls the probability must be \
             at most {})",
            MAX_STALL_SHARE * slice / cycles as f64
        )
    })
}

/// Refuses latencies that one transaction can take for as long as a
/// wait's no-progress limit (`--timeout-cycles`): a read behind them would
/// time out as a hang on any firmware (helper-66: `--pcie-read-latency
/// 10000000` failed every seed of the normal firmware at the default
/// limit). The worst a host read meets: its PCIe read latency, the NOC
/// jitter, a late doorbell and write back-pressure.
pub fn check_latencies(a: &super::args::Args, f: &Faults) -> Result<(), UsageError> {
    let parts = [
        ("PCIe read latency", f.pcie_read.unwrap_or(a.pcie_read_latency)),
        ("NOC jitter", f.jitter.unwrap_or(a.jitter)),
        ("late doorbell", f.late_doorbell.unwrap_or(0)),
        ("write back-pressure", f.backpressure.unwrap_or(0)),
    ];
    let worst: u64 = parts.iter().map(|&(_, c)| c).sum();
    ensure(worst < a.timeout_cycles, || {
        let named: Vec<String> = parts.iter().filter(|&&(_, c)| c > 0).map(|(n, c)| format!("{n} {c}")).collect();
        format!(
            "{} cycles ({}) can pass in one transaction, and --timeout-cycles {} is how long a wait goes without \
             progress: every wait behind one would time out as a hang; raise --timeout-cycles above {worst}",
            worst,
            named.join(" + "),
            a.timeout_cycles
        )
    })
}

/// Refuses what acts per scheduling slice with `--exact-time`: exact time
/// fixes the slices (and cuts a core's run at each delivery to its tile),
/// so a stall drawn per slice or a jittered slice length means nothing
/// there.
pub fn check_exact_time(core_stall: f64, faults: &Faults) -> Result<(), UsageError> {
    let per_slice = [
        (core_stall > 0.0, "--core-stall"),
        (faults.stall.is_some(), "--faults stall= (also in `strong`)"),
        (faults.quantum_jitter.is_some(), "--faults quantum-jitter= (also in `strong`)"),
    ];
    match per_slice.iter().find(|(given, _)| *given) {
        Some((_, option)) => Err(UsageError(format!(
            "--exact-time with {option}: stalls and slice jitter act per scheduling slice, which exact time fixes \
             (and cuts at each delivery to a tile); leave them out (`strong` without them: {})",
            STRONG
                .split(',')
                .filter(|f| !f.starts_with("stall=") && !f.starts_with("quantum-jitter="))
                .collect::<Vec<_>>()
                .join(",")
        ))),
        None => Ok(()),
    }
}

impl Faults {
    pub fn parse(specs: &[String]) -> Result<Self, UsageError> {
        let mut f = Faults::default();
        // Each fault once (a second value would silently win), each slowed core once.
        let mut given: Vec<String> = Vec::new();
        for spec in specs {
            ensure(spec.split(',').any(|s| !s.trim().is_empty()), || {
                format!("--faults {spec:?}: names no fault (KEY=VALUE,... or `strong`)")
            })?;
            for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let key = match item.split_once('=') {
                    Some(("slow", v)) => format!("slow={}", v.split_once('@').map_or(v, |(core, _)| core)),
                    Some((k, _)) => k.to_owned(),
                    None => item.to_owned(),
                };
                ensure(!given.contains(&key), || format!("--faults {item:?}: {key} is given twice"))?;
                given.push(key);
                if item == "strong" {
                    let strong = Faults::parse(&[STRONG.to_owned()])?;
                    f.merge(strong);
                    continue;
                }
                if item == "read-passes-unsent" {
                    f.read_passes_unsent = true;
                    continue;
                }
                let bad = |why: &str| UsageError(format!("--faults {item:?}: {why}"));
                let (key, value) = item.split_once('=').ok_or_else(|| bad("expected KEY=VALUE or `strong`"))?;
                let cycles = |v: &str| -> Result<u64, UsageError> {
                    let n: u64 = v.parse().map_err(|_| bad("not a number of cycles"))?;
                    ensure(n <= MAX_CYCLES, || format!("--faults {item:?}: at most {MAX_CYCLES} cycles"))?;
                    Ok(n)
                };
                match key {
                    "stall" => {
                        let (p, c) = value.split_once(':').unwrap_or((value, ""));
                        let p: f64 = p.parse().map_err(|_| bad("probability is not a number"))?;
                        ensure(p.is_finite() && (0.0..=1.0).contains(&p), || {
                            format!("--faults {item:?}: probability in 0..=1")
                        })?;
                        let c = if c.is_empty() { CORE_STALL_CYCLES } else { cycles(c)? };
                        check_stall(&format!("--faults {item:?}: stall probability"), p, c)?;
                        f.stall = Some((p, c));
                    }
                    "jitter" => f.jitter = Some(cycles(value)?),
                    "late-doorbell" => f.late_doorbell = Some(cycles(value)?),
                    "backpressure" => f.backpressure = Some(cycles(value)?),
                    "pcie-read" => {
                        let n = cycles(value)?;
                        ensure(n > 0, || format!("--faults {item:?}: at least 1 cycle"))?;
                        f.pcie_read = Some(n);
                    }
                    "quantum-jitter" => f.quantum_jitter = Some(cycles(value)?),
                    "lazy-drain" => {
                        let n: u64 = value.parse().map_err(|_| bad("not a number of polls"))?;
                        ensure((1..=100_000).contains(&n), || format!("--faults {item:?}: 1..=100000 polls"))?;
                        f.lazy_drain = Some(n as u32);
                    }
                    "slow" => {
                        let (name, factor) = value.split_once('@').ok_or_else(|| bad("expected slow=CORE@FACTOR"))?;
                        let core = CoreName::parse(name)
                            .ok_or_else(|| bad("core is prefetcherQ, dispatcherQ or workerC.R"))?;
                        let factor: f64 = factor.parse().map_err(|_| bad("factor is not a number"))?;
                        ensure(factor.is_finite() && (1.0..=1000.0).contains(&factor), || {
                            format!("--faults {item:?}: factor in 1..=1000")
                        })?;
                        f.slow.push((core, factor));
                    }
                    _ => {
                        return Err(bad(
                            "unknown fault (stall, jitter, slow, late-doorbell, backpressure, pcie-read, quantum-jitter, lazy-drain, strong; read-passes-unsent is the model's default)",
                        ))
                    }
                }
            }
        }
        Ok(f)
    }

    fn merge(&mut self, other: Faults) {
        self.stall = other.stall.or(self.stall);
        self.jitter = other.jitter.or(self.jitter);
        self.late_doorbell = other.late_doorbell.or(self.late_doorbell);
        self.backpressure = other.backpressure.or(self.backpressure);
        self.pcie_read = other.pcie_read.or(self.pcie_read);
        self.quantum_jitter = other.quantum_jitter.or(self.quantum_jitter);
        self.lazy_drain = other.lazy_drain.or(self.lazy_drain);
        self.read_passes_unsent |= other.read_passes_unsent;
        self.slow.extend(other.slow);
    }

    /// The simulator faults, on `chip` (a slowed core the chip does not
    /// have is left out: see [`Faults::missing_on`]).
    pub fn apply(&self, sim: &mut SimConfig, chip: &Topology) {
        if let Some((p, c)) = self.stall {
            (sim.faults.core_stall_prob, sim.faults.core_stall_cycles) = (p, c);
        }
        if let Some(j) = self.jitter {
            sim.faults.noc_jitter_cycles = j;
        }
        if let Some(d) = self.late_doorbell {
            sim.faults.host_write_delay_cycles = d;
        }
        if let Some(b) = self.backpressure {
            sim.faults.write_backpressure_cycles = b;
        }
        if let Some(l) = self.pcie_read {
            sim.pcie.read_latency_cycles = l;
        }
        if let Some(q) = self.quantum_jitter {
            sim.quantum_jitter = q;
        }
        let slow = self.slow.iter().filter_map(|&(name, factor)| Some(SlowCore { core: name.on(chip)?, factor }));
        sim.faults.slow_cores.extend(slow);
    }

    /// The first slowed core `chip` does not have.
    pub fn missing_on(&self, chip: &Topology) -> Option<CoreName> {
        self.slow.iter().map(|&(name, _)| name).find(|name| name.on(chip).is_none())
    }

    /// The host-side faults.
    pub fn apply_device(&self, cfg: &mut cqlab_driver::DeviceConfig) {
        if let Some(n) = self.lazy_drain {
            cfg.drain_every_polls = n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_specs_parse_and_bad_ones_say_why() {
        let f = Faults::parse(&["stall=0.05:500,jitter=40".into(), "slow=dispatcher1@3".into()]).unwrap();
        assert_eq!(f.stall, Some((0.05, 500)));
        assert_eq!(f.jitter, Some(40));
        assert_eq!(f.slow, vec![(CoreName::Dispatcher(1), 3.0)]);
        assert!(Faults::parse(&["strong".into()]).unwrap().late_doorbell.is_some());
        assert!(names_strong(&["lazy-drain=20, strong".into()]) && !names_strong(&["stall=0.01:2000".into()]));
        assert_eq!(Faults::parse(&["backpressure=300".into()]).unwrap().backpressure, Some(300));
        assert_eq!(Faults::parse(&["lazy-drain=40".into()]).unwrap().lazy_drain, Some(40));
        assert!(Faults::parse(&["read-passes-unsent,backpressure=10".into()]).unwrap().read_passes_unsent);
        assert!(Faults::parse(&["read-passes-unsent=1".into()]).is_err(), "a flag takes no value");
        for bad in ["lazy-drain=0", "lazy-drain=100001", "lazy-drain=99999999999999", "lazy-drain=x"] {
            assert!(Faults::parse(&[bad.into()]).is_err(), "{bad}");
        }
        for bad in ["stall=2", "jitter=18446744073709551615", "slow=core9@2", "bogus=1", "jitter", "stall=0.1"] {
            assert!(Faults::parse(&[bad.into()]).is_err(), "{bad}");
        }
        // The stalls of 0.025 x 2000 cycles per 50-cycle slice equal the
        // clock; 0.0225 x 2000 take nine tenths of it.
        assert!(check_stall("--core-stall", 0.0225, 2000).is_ok());
        let e = check_stall("--core-stall", 0.025, 2000).unwrap_err();
        assert!(e.0.contains("never boot") && e.0.contains("at most 0.0225"), "{e}");
        let e = check_stall("--core-stall", 0.0249, 2000).unwrap_err();
        assert!(e.0.contains("under a tenth of the time") && e.0.contains("at most 0.0225"), "{e}");
        assert!(Faults::parse(&["stall=0.1:100".into()]).is_ok(), "short stalls may be frequent");
    }
}
