//! Each host mutant the race finder catches (`cargo xtask mutants --host`,
//! docs/race-finder.md "Host mutants") shows its symptom under a named seed
//! of a race workload with host jitter 2000 (`race`'s), and (where the
//! symptom needs the host's accesses interleaved) not on the same seed with
//! host jitter off; the correct driver passes that seed. The mutant is
//! chosen per device at run time (`DeviceConfig::host_mutant`, the driver's
//! `mutants` feature), so one test binary shows every symptom beside the
//! correct driver.

use clap::Parser;
use cqlab::race::{run_seed_with, Plan};

#[derive(Parser)]
struct RaceCli {
    #[command(flatten)]
    args: cqlab::race::Args,
}

/// The host jitter the campaign that caught them ran every seed with
/// (`race`'s on the seeds that draw host jitter).
const HOST_JITTER: u64 = 2000;

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
/// `symptom` under [`HOST_JITTER`]; with host jitter off it passes when the
/// symptom `needs_host_jitter`, and fails too (perhaps otherwise) when the
/// device alone runs ahead far enough while the host waits. The correct
/// driver passes the seed.
fn shows_symptom(mutant: &'static str, workload: &str, seed: u64, symptom: &str, needs_host_jitter: bool) {
    let what = format!("{mutant}, race --workload {workload} seed {seed}");
    match race(workload, seed, Some(HOST_JITTER), Some(mutant)) {
        Some(signature) => assert!(signature.contains(symptom), "{what}: {signature}"),
        None => panic!("{what}: passed with host jitter on"),
    }
    match (race(workload, seed, Some(0), Some(mutant)), needs_host_jitter) {
        (Some(signature), true) => panic!("{what}: fails with host jitter off too: {signature}"),
        (None, false) => panic!("{what}: passes with host jitter off"),
        (Some(_), false) => {}
        (None, true) => {}
    }
    if let Some(signature) = race(workload, seed, Some(HOST_JITTER), None) {
        panic!("the correct driver, race --workload {workload} seed {seed}: {signature}");
    }
}

macro_rules! caught {
    ($($test:ident: $mutant:literal, $workload:literal, $seed:literal, $symptom:literal, $needs_jitter:literal;)*) => {$(
        #[test]
        fn $test() {
            shows_symptom($mutant, $workload, $seed, $symptom, $needs_jitter);
        }
    )*};
}

caught! {
    doorbell_before_chunk_tail_feeds_the_dispatcher_stale_commands:
        "host-doorbell-before-chunk-tail", "two-queue", 1, "unknown command id", true;
    doorbell_before_gather_words_sends_the_prefetcher_stale_words:
        "host-doorbell-before-gather-words", "programs", 2, "unknown command id", true;
    doorbell_before_staged_blob_gathers_unwritten_bytes:
        "host-doorbell-before-staged-blob", "programs", 2, "Brisc halted <- worker RUN HALTED", true;
    staged_reuse_while_fetching_runs_a_kernel_from_overwritten_bytes:
        "host-staged-reuse-while-fetching", "programs", 226, "worker RUN HALTED", true;
    completion_rd_before_consume_lets_the_dispatcher_overwrite_unread_records:
        "host-completion-rd-before-consume", "random", 2, "corrupt-completion", true;
    completion_read_before_pointer_reads_a_record_not_yet_written:
        "host-completion-read-before-pointer", "two-queue", 2, "corrupt-completion", true;
    // The device alone runs ahead of these while the host waits: host
    // jitter is not what exposes them.
    issue_space_unchecked_overwrites_commands_not_yet_fetched:
        "host-issue-space-unchecked", "random", 10, "timeout", false;
    fetch_slot_reuse_early_overwrites_an_entry_not_yet_taken:
        "host-fetch-slot-reuse-early", "random", 4, "timeout", false;
    // The device alone runs a launch ahead of a one-short WAIT while the
    // host waits: host jitter is not what exposes it.
    config_wait_one_short_lets_a_program_overwrite_running_config:
        "host-config-wait-one-short", "programs", 3, "program store differs", false;
}
