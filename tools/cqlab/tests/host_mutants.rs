//! Each host mutant the race finder catches (`cargo xtask mutants --host`,
//! README "Host mutants") shows its symptom under a named seed of a race
//! workload with host interleaving at `race`'s defaults, and not on the
//! same seed with host jitter off; the correct driver passes that seed
//! either way. The mutant is chosen per device at run time
//! (`DeviceConfig::host_mutant`, the driver's `mutants` feature), so one
//! test binary shows every symptom beside the correct driver.

use clap::Parser;
use cqlab::race::{run_seed_with, Plan};

#[derive(Parser)]
struct RaceCli {
    #[command(flatten)]
    args: cqlab::race::Args,
}

/// One seed of `cqlab race --workload WORKLOAD` at its defaults, with
/// `--host-jitter` if given and the driver as `mutant`: the failure's
/// signature, or `None` when the seed passes.
fn race(workload: &str, seed: u64, host_jitter: Option<u64>, mutant: Option<&'static str>) -> Option<String> {
    let mut argv = vec!["race".to_owned(), "--workload".into(), workload.into()];
    if let Some(j) = host_jitter {
        argv.extend(["--host-jitter".into(), j.to_string()]);
    }
    let cli = RaceCli::try_parse_from(&argv).expect("race options");
    let plan = Plan::new(cli.args).expect("a race plan");
    let (outcome, _) = run_seed_with(&plan, seed, |cfg| cfg.host_mutant = mutant);
    outcome.err().map(|f| f.classify().signature)
}

/// `mutant` fails `workload` at `seed` with a signature containing
/// `symptom`, under race's default host jitter only.
fn shows_only_with_host_interleaving(mutant: &'static str, workload: &str, seed: u64, symptom: &str) {
    let what = format!("{mutant}, race --workload {workload} seed {seed}");
    match race(workload, seed, None, Some(mutant)) {
        Some(signature) => assert!(signature.contains(symptom), "{what}: {signature}"),
        None => panic!("{what}: passed with host jitter on"),
    }
    if let Some(signature) = race(workload, seed, Some(0), Some(mutant)) {
        panic!("{what}: fails with host jitter off too: {signature}");
    }
    if let Some(signature) = race(workload, seed, None, None) {
        panic!("the correct driver, race --workload {workload} seed {seed}: {signature}");
    }
}

macro_rules! caught {
    ($($test:ident: $mutant:literal, $workload:literal, $seed:literal, $symptom:literal;)*) => {$(
        #[test]
        fn $test() {
            shows_only_with_host_interleaving($mutant, $workload, $seed, $symptom);
        }
    )*};
}

caught! {
    doorbell_before_chunk_tail_feeds_the_dispatcher_stale_commands:
        "host-doorbell-before-chunk-tail", "two-queue", 1, "unknown command id";
    doorbell_before_gather_words_sends_the_prefetcher_stale_words:
        "host-doorbell-before-gather-words", "programs", 1, "unknown command id";
}
