//! Mutants: builds of the firmware with one ordering wait left out, chosen
//! at build time by `$CQLAB_MUTANT` (`cargo xtask mutants` builds each and
//! races it). Unlike the known-bug variants, which re-create bug classes
//! with a known symptom, these are every wait the protocol's ordering rests
//! on, taken out one at a time: a mutant the race finder does not catch is
//! either a wait nothing needs or a blind spot of the finder.
//!
//! With `$CQLAB_MUTANT` unset every [`dropped`] is a constant `false` and
//! the normal firmware is unchanged.

use cqlab_abi::firmware::same_name;

/// One mutant: its name (`$CQLAB_MUTANT`) and the wait it leaves out.
pub struct Mutant {
    pub name: &'static str,
    pub drops: &'static str,
}

/// Every mutant, with the core whose firmware it changes first in its name.
pub const MUTANTS: &[Mutant] = &[
    Mutant {
        name: "prefetch-chunk-refill-before-sent",
        drops: "the wait for a chunk buffer's relays to leave before the next chunk is read into it",
    },
    Mutant { name: "prefetch-chunk-run-before-landed", drops: "the wait for a chunk's read to land before it runs" },
    Mutant {
        name: "prefetch-flush-before-sent",
        drops: "the wait for relayed writes to leave before a flush signals them to the dispatcher",
    },
    Mutant {
        name: "prefetch-signal-before-sent",
        drops: "the check that a posted relay piece has left before it is signalled",
    },
    Mutant {
        name: "prefetch-pointers-before-sent",
        drops: "the wait for the previous issue/fetch pointer writes to leave SCRATCH before it is rewritten",
    },
    Mutant {
        name: "prefetch-relay-before-landed",
        drops: "the wait for a remote relay piece's read to land in the relay scratch before it is relayed",
    },
    Mutant {
        name: "prefetch-stall-without-flush",
        drops: "the flush before a STALL waits (the dispatcher may need the relayed bytes to release it)",
    },
    Mutant {
        name: "prefetch-replay-window-before-landed",
        drops: "the wait for a trace window's DRAM reads to land before its commands run",
    },
    Mutant {
        name: "prefetch-replay-window-reuse-before-sent",
        drops: "the wait for a trace-area window's relays to leave before the window is refilled",
    },
    Mutant {
        name: "prefetch-replay-start-before-sent",
        drops:
            "the wait for earlier replays' relays to leave the trace area before a replay first reads into each window",
    },
    Mutant {
        name: "dispatch-go-before-writes-landed",
        drops: "the barrier that lands kernel text, args and launch bodies before the GO (launch tag) write",
    },
    Mutant {
        name: "dispatch-launch-entry-reuse-early",
        drops: "the wait for a launch-ring entry's previous launch to finish before it is rewritten",
    },
    Mutant {
        name: "dispatch-launch-tag-before-body",
        drops: "the wait for a wrapped launch message's first piece to land before the piece with its tag",
    },
    Mutant {
        name: "dispatch-completion-overwrite",
        drops: "the wait for room in the completion queue before a record is written",
    },
    Mutant {
        name: "dispatch-release-before-sent",
        drops: "the check that writes sourced from ring pages have left before the pages are returned",
    },
    Mutant { name: "dispatch-wait-without-barrier", drops: "the barrier of a WAIT with the BARRIER flag" },
    Mutant {
        name: "worker-done-before-writes-landed",
        drops: "the wait for a kernel's NOC writes to land before the worker reports done",
    },
];

/// The mutant the firmware being built is, if any (`$CQLAB_MUTANT`).
pub const SELECTED: Option<&str> = option_env!("CQLAB_MUTANT");

const _: () = if let Some(name) = SELECTED {
    assert!(listed(name), "$CQLAB_MUTANT names no mutant in `mutant::MUTANTS`")
};

/// Whether the firmware being built leaves out the wait of mutant `name`; use it in a
/// `const` block, so a name missing from [`MUTANTS`] fails the build.
pub const fn dropped(name: &str) -> bool {
    assert!(listed(name), "a mutant used in the firmware is missing from `mutant::MUTANTS`");
    match SELECTED {
        Some(selected) => same_name(selected, name),
        None => false,
    }
}

const fn listed(name: &str) -> bool {
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
    use std::format;

    /// The firmware sources, where each mutant's `dropped` call sits.
    const SOURCES: &[&str] = &[
        include_str!("prefetch.rs"),
        include_str!("replay.rs"),
        include_str!("dispatch.rs"),
        include_str!("worker.rs"),
    ];

    #[test]
    fn every_mutant_is_named_once_and_used_at_exactly_one_wait() {
        let names: BTreeSet<_> = MUTANTS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), MUTANTS.len(), "mutant names are unique");
        for m in MUTANTS {
            let call = format!("mutant::dropped(\"{}\")", m.name);
            let uses: usize = SOURCES.iter().map(|s| s.matches(&call).count()).sum();
            assert_eq!(uses, 1, "{} is used at {uses} places", m.name);
            let core = m.name.split('-').next().unwrap();
            assert!(["prefetch", "dispatch", "worker"].contains(&core), "{}", m.name);
        }
        assert!(SELECTED.is_none() && !dropped(MUTANTS[0].name), "tests build the normal firmware");
    }
}
