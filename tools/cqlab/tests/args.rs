//! The command-line parser and checks, in-process (`cqlab::check`): every
//! number an option takes is bounded, and no argument vector panics them
//! or is refused with any status but 2. Nothing here runs a command.

use clap::CommandFactory;
use cqlab::Verdict;
use proptest::prelude::*;
use std::ffi::OsString;
use std::path::PathBuf;

/// Scratch inputs every base command line below can name.
struct Fixtures {
    dir: PathBuf,
    file: PathBuf,
}

fn fixtures() -> Fixtures {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("args-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("input");
    std::fs::write(&file, b"{}\n").unwrap();
    Fixtures { dir, file }
}

fn check(argv: &[String]) -> Verdict {
    cqlab::check(std::iter::once(OsString::from("cqlab")).chain(argv.iter().map(OsString::from)))
}

/// A command line of each subcommand that is accepted as it is.
fn bases(f: &Fixtures) -> Vec<Vec<String>> {
    let (dir, file) = (f.dir.to_str().unwrap(), f.file.to_str().unwrap());
    let out = f.dir.join("out.json");
    let out = out.to_str().unwrap();
    let sim = format!("sim:{dir}");
    // A simulator refuses a directory holding anything but its own files.
    let dev = f.dir.join("dev");
    let dev = dev.to_str().unwrap();
    let lines: Vec<Vec<&str>> = vec![
        vec!["demo"],
        vec!["bench", "dispatch"],
        vec!["perf"],
        vec!["driver-bench"],
        vec!["matmul"],
        vec!["race"],
        vec!["run", "copy_stress"],
        vec!["run", "hetero"],
        vec!["run", "large_gemm"],
        vec!["compare", file, file],
        vec!["decode", file],
        vec!["decode", "--device", &sim, "--kind", "completion"],
        vec!["stress", "restart", "--runs", "1"],
        vec!["stress", "restart", "--runs", "1", "--workload", "random"],
        vec!["stress", "run-one", "--seed", "1"],
        vec!["sweep", "copy_stress", "--param", "depth=1"],
        vec!["replay", file],
        vec!["campaign", "merge", dir],
        vec!["campaign", "sbatch", "--shards", "2", "--dir", dir, "--", "race"],
        vec!["sim", "exec", file],
        vec!["sim", "bench"],
        vec!["sim", "serve", "--dev", dev],
        vec!["sim", "stop", "--dev", dir],
        vec!["sim", "ttkmd", "--dev", dev],
        vec!["sim", "bar", "--dev", dir, "--worker", "0,0", "--addr", "0"],
        vec!["sim", "client-job", "--dev", dir],
        vec!["reset", "--dev", dir],
        vec!["reset", "--device", &sim, "--json"],
        vec!["reset", "--device", "/dev/tenstorrent/0"],
        vec!["trace", "export", file, "--perfetto", out],
        vec!["trace", "summary", file],
        vec!["schedule", "--m", "64", "--n", "64", "--k", "64"],
        vec!["status", "--device", &sim],
        vec!["dump", "--device", &sim],
    ];
    lines.into_iter().map(|l| l.into_iter().map(String::from).collect()).collect()
}

/// The options of the subcommand `path` names that take a value.
fn valued_options(path: &[String]) -> Vec<String> {
    let mut cmd = cqlab::Cli::command();
    for name in path {
        match cmd.find_subcommand(name) {
            Some(sub) => cmd = sub.clone(),
            None => break,
        }
    }
    cmd.get_arguments()
        .filter(|a| a.get_long().is_some() && a.get_action().takes_values())
        .map(|a| format!("--{}", a.get_long().unwrap()))
        .collect()
}

/// Options that take any u64 (none since seeds stop at 2^53 - 1).
const ANY_U64: [&str; 0] = [];

#[test]
fn every_number_an_option_takes_is_bounded() {
    let f = fixtures();
    let mut numeric = 0;
    for base in bases(&f) {
        assert_eq!(check(&base), Verdict::Runs, "the base line {base:?} must be accepted");
        let path: Vec<String> =
            base.iter().take_while(|a| !a.starts_with('-') && !a.starts_with('/')).cloned().collect();
        for opt in valued_options(&path) {
            let with = |v: &str| {
                let mut argv = base.clone();
                // Before a trailing `-- ...` (campaign sbatch).
                let at = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
                argv.splice(at..at, [opt.clone(), v.to_owned()]);
                (check(&argv), argv)
            };
            // A number option: "1" may be accepted, "x" never is.
            if with("1").0 != Verdict::Runs || with("x").0 == Verdict::Runs {
                continue;
            }
            numeric += 1;
            for huge in ["18446744073709551615", "18446744073709551616", "-1", "1e400", "nan"] {
                let (verdict, argv) = with(huge);
                if huge == "18446744073709551615" && ANY_U64.contains(&opt.as_str()) {
                    continue;
                }
                match verdict {
                    Verdict::Refused { status: 2, message } => {
                        assert!(!message.trim().is_empty(), "{argv:?}: refused without a reason")
                    }
                    other => panic!("{argv:?}: {huge} is not bounded: {other:?}"),
                }
            }
        }
    }
    // The sweep above reaches the numeric options of every command.
    assert!(numeric > 60, "only {numeric} numeric options found");
}

/// Values a fuzzed option gets: edges, huge, negative, garbage, paths.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_owned()),
        Just("1".to_owned()),
        Just("-1".to_owned()),
        Just("4294967295".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("1e400".to_owned()),
        Just("nan".to_owned()),
        Just("0.1".to_owned()),
        Just("".to_owned()),
        Just("0x0".to_owned()),
        Just("17x17".to_owned()),
        Just("8x8".to_owned()),
        Just("15,15".to_owned()),
        Just("1,1".to_owned()),
        Just("depth=1..3".to_owned()),
        Just("cqs=1,17".to_owned()),
        Just("stall=0.1".to_owned()),
        Just("sim:/nonexistent".to_owned()),
        Just("embedded".to_owned()),
        Just("/dev/zero".to_owned()),
        Just("/dev/full".to_owned()),
        Just("/".to_owned()),
        Just("/nonexistent/x".to_owned()),
        Just("none".to_owned()),
        "[a-z0-9=,.:x/-]{0,12}",
        any::<u64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| v.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, failure_persistence: None, .. ProptestConfig::default() })]

    /// Random argument vectors of real subcommands and options: the parser
    /// and checks never panic, and a refusal is a usage error (2).
    #[test]
    fn random_argument_vectors_never_panic_and_are_refused_with_2(
        pick in any::<prop::sample::Index>(),
        opts in prop::collection::vec((any::<prop::sample::Index>(), value()), 0..6),
        extra in prop::collection::vec(value(), 0..2),
    ) {
        let f = fixtures();
        let bases = bases(&f);
        let base = &bases[pick.index(bases.len())];
        let path: Vec<String> = base.iter().take_while(|a| !a.starts_with('-') && !a.starts_with('/')).cloned().collect();
        let options = valued_options(&path);
        let mut argv = base.clone();
        let at = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
        let mut inserted = Vec::new();
        for (i, v) in opts {
            if !options.is_empty() {
                inserted.extend([options[i.index(options.len())].clone(), v]);
            }
        }
        inserted.extend(extra);
        argv.splice(at..at, inserted);
        match check(&argv) {
            Verdict::Runs | Verdict::Informs => {}
            Verdict::Refused { status, message } => {
                prop_assert_eq!(status, 2, "{:?}: {}", argv, message);
                prop_assert!(!message.trim().is_empty(), "{:?}: refused without a reason", argv);
            }
        }
    }

    /// Arbitrary words after the program name: the same promise.
    #[test]
    fn arbitrary_words_never_panic(words in prop::collection::vec("[ -~]{0,16}", 0..8)) {
        match check(&words) {
            Verdict::Runs | Verdict::Informs => {}
            Verdict::Refused { status, .. } => prop_assert_eq!(status, 2, "{:?}", words),
        }
    }
}
