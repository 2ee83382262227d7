//! Host mutants: builds of the driver with one host step of the CQ
//! protocol reordered or loosened, chosen at build time by
//! `$CQLAB_HOST_MUTANT` (`cargo xtask mutants --host` builds each and races
//! it), as the firmware's are by `$CQLAB_MUTANT` (`cqlab_kernels::mutant`).
//! Each is written from the protocol's rules for the host: publish a
//! consumer pointer only after the data behind it is consumed; reuse space
//! only once the device says it is free; ring a doorbell only after the
//! last store of what it announces; read device-written data only where a
//! pointer read before it covers it.
//!
//! With `$CQLAB_HOST_MUTANT` unset every `mutant!` is a
//! constant `false` and the driver is unchanged. With the cargo feature
//! `mutants`, a test may also choose one for a device at run time
//! (`DeviceConfig::host_mutant`), so one test binary shows each symptom
//! beside the correct driver.

use cqlab_abi::firmware::same_name;

/// One host mutant: its name (`$CQLAB_HOST_MUTANT`) and the step it changes.
pub struct Mutant {
    pub name: &'static str,
    pub changes: &'static str,
}

/// Every host mutant.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        name: "host-doorbell-before-chunk-tail",
        changes: "rings the fetch-queue doorbell before the chunk's last 64 bytes are stored in the issue queue",
    },
    Mutant {
        name: "host-doorbell-before-gather-words",
        changes: "rings a gathered chunk's doorbell before its source and split words are written beside it",
    },
    Mutant {
        name: "host-doorbell-before-staged-blob",
        changes: "writes a fresh staged blob only after the doorbell of the first chunk that gathers it",
    },
    Mutant {
        name: "host-completion-rd-before-consume",
        changes: "publishes the completion read pointer before reading the records it frees",
    },
    Mutant {
        name: "host-completion-read-before-pointer",
        changes: "reads the next completion record's header before the write pointer that covers it",
    },
    Mutant {
        name: "host-issue-space-unchecked",
        changes: "waits for a free fetch slot only, not for issue-queue space behind the prefetcher's read pointer",
    },
    Mutant {
        name: "host-fetch-slot-reuse-early",
        changes: "takes one fetch-queue slot more than the prefetcher has freed",
    },
    Mutant {
        name: "host-staged-reuse-while-fetching",
        changes: "overwrites a staged blob once the prefetcher is at, not past, the last fetch entry that gathers it",
    },
    Mutant {
        name: "host-config-wait-one-short",
        changes: "a program's WAIT reaches one launch short of the last program using the text slot or config bytes \
                  it overwrites",
    },
    Mutant {
        name: "host-slow-launch-before-done",
        changes: "slow dispatch writes a program's args and launch without waiting for the workers of the last one",
    },
];

/// The mutant this build of the driver is, if any (`$CQLAB_HOST_MUTANT`).
pub const SELECTED: Option<&str> = option_env!("CQLAB_HOST_MUTANT");

const _: () = if let Some(name) = SELECTED {
    assert!(listed(name), "$CQLAB_HOST_MUTANT names no mutant in `queue::mutant::MUTANTS`")
};

/// Whether host mutant `$name` (a literal listed in [`MUTANTS`]) is on for
/// a device configured by `$cfg`: the build's, or (feature `mutants`) the
/// one its configuration chose. A name missing from the list fails the build.
macro_rules! mutant {
    ($cfg:expr, $name:literal) => {{
        const _: () = assert!(
            $crate::queue::mutant::listed($name),
            "a host mutant used in the driver is missing from `queue::mutant::MUTANTS`"
        );
        $crate::queue::mutant::on($cfg, $name)
    }};
}
pub(crate) use mutant;

/// `mutant!` after its name was checked.
#[inline(always)]
pub fn on(cfg: &crate::config::DeviceConfig, name: &str) -> bool {
    if let Some(selected) = SELECTED {
        return same_name(selected, name);
    }
    chosen(cfg, name)
}

#[cfg(feature = "mutants")]
fn chosen(cfg: &crate::config::DeviceConfig, name: &str) -> bool {
    cfg.host_mutant.is_some_and(|m| m == name)
}

#[cfg(not(feature = "mutants"))]
#[inline(always)]
fn chosen(_: &crate::config::DeviceConfig, _: &str) -> bool {
    false
}

/// Checks that the mutant a configuration chooses is listed.
#[cfg(feature = "mutants")]
pub(crate) fn check(cfg: &crate::config::DeviceConfig) -> crate::error::Result<()> {
    match cfg.host_mutant {
        Some(m) if find(m).is_none() => {
            Err(crate::error::DriverError::Invalid(format!("host mutant {m:?} is not in queue::mutant::MUTANTS")))
        }
        _ => Ok(()),
    }
}

/// The listed mutant called `name`.
pub fn find(name: &str) -> Option<&'static Mutant> {
    MUTANTS.iter().find(|m| m.name == name)
}

#[doc(hidden)]
pub const fn listed(name: &str) -> bool {
    let mut i = 0;
    while i < MUTANTS.len() {
        if same_name(MUTANTS[i].name, name) {
            return true;
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The queue sources, where each mutant's `mutant!` sits.
    const SOURCES: &[&str] = &[
        include_str!("issue.rs"),
        include_str!("completion.rs"),
        include_str!("staged.rs"),
        include_str!("programs.rs"),
        include_str!("slow.rs"),
    ];

    #[test]
    fn every_mutant_is_named_once_and_changes_one_place() {
        let names: BTreeSet<_> = MUTANTS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), MUTANTS.len(), "mutant names are unique");
        for m in MUTANTS {
            let call = format!("\"{}\")", m.name);
            let uses: usize = SOURCES.iter().map(|s| s.matches(&call).count()).sum();
            assert!(uses >= 1, "{} is used nowhere", m.name);
            assert!(m.name.starts_with("host-"), "{}", m.name);
        }
        assert!(SELECTED.is_none(), "tests build the correct driver");
        let cfg = crate::config::DeviceConfig::default();
        assert!(MUTANTS.iter().all(|m| !on(&cfg, m.name)), "no mutant is on by default");
    }
}
