//! Bad input, command by command (issue 24): zero, huge and garbage
//! numbers; missing, empty, binary, endless files and directories where
//! files belong; outputs that cannot be written or would overwrite an
//! input; coordinates off the grid; conflicting options; knobs that can
//! never finish. Each row is a command line, the exit status it must give
//! (docs/cli.md: 2 refused before any work, 1 a run that failed) and a
//! fragment of its message. Refusals print nothing on stdout and come at
//! once.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{firmware_dir, text, CQLAB};

const MISSING: &str = "/nonexistent/cqlab";
/// A device directory whose socket path (`LONG_DEV/sock.new`, 142 bytes) is
/// too long for `bind`.
const LONG_DEV: &str = concat!(
    "/nonexistent/",
    "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
    "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
);

/// Scratch inputs the table names as `{name}`.
struct Fixtures {
    dir: PathBuf,
}

impl Fixtures {
    fn new() -> Self {
        // One directory a test: the tests of this file run in parallel in
        // one process, and each starts by clearing its own.
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("bad-input-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("empty-dir")).unwrap();
        std::os::unix::fs::symlink(dir.join("empty-dir"), dir.join("dir-link")).unwrap();
        let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
        write("garbage", b"this is not what any command reads\n");
        write("binary", &[0xff, 0xfe, 0x00, 0x80, 0x81, 0xc3, 0x28, 0x0a]);
        write("empty", b"");
        write("no-figures.json", br#"{"figures":[]}"#);
        write("figures-array.json", b"[]");
        // Firmware directories whose queue ELFs are no images: text, and
        // an endless device.
        std::fs::create_dir_all(dir.join("bad-fw")).unwrap();
        write("bad-fw/prefetch", b"this is not what any command reads\n");
        write("bad-fw/dispatch", b"");
        // A firmware root whose Wormhole worker kernel `spin` is cut short.
        let root = dir.join("cut-spin-root");
        std::fs::create_dir_all(root.join("wormhole")).unwrap();
        for e in std::fs::read_dir(firmware_dir().join("wormhole")).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), root.join("wormhole").join(e.file_name())).unwrap();
            }
        }
        let spin = std::fs::read(root.join("wormhole/spin")).unwrap();
        std::fs::write(root.join("wormhole/spin"), &spin[..200]).unwrap();
        // And one whose `copy` and `noop-1k` are (kernels only some runs load).
        let other = dir.join("cut-kernels-root");
        std::fs::create_dir_all(other.join("wormhole")).unwrap();
        for e in std::fs::read_dir(root.join("wormhole")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), other.join("wormhole").join(e.file_name())).unwrap();
        }
        std::fs::write(other.join("wormhole/spin"), &spin).unwrap();
        for cut in ["copy", "noop-1k"] {
            let bytes = std::fs::read(other.join("wormhole").join(cut)).unwrap();
            std::fs::write(other.join("wormhole").join(cut), &bytes[..200]).unwrap();
        }
        // A Wormhole root holding Blackhole's kernels `spin`, `copy`,
        // `noop-1k` and `matmul` (each has the same entry and slot; their
        // ids name Blackhole).
        let bh = dir.join("bh-kernels-root");
        std::fs::create_dir_all(bh.join("wormhole")).unwrap();
        for e in std::fs::read_dir(other.join("wormhole")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), bh.join("wormhole").join(e.file_name())).unwrap();
        }
        for kernel in ["spin", "copy", "noop-1k", "matmul"] {
            std::fs::copy(firmware_dir().join("blackhole").join(kernel), bh.join("wormhole").join(kernel)).unwrap();
        }
        // Blackhole's queue firmware, for a Wormhole run.
        std::fs::create_dir_all(dir.join("bh-fw")).unwrap();
        for elf in ["prefetch", "dispatch"] {
            std::fs::copy(firmware_dir().join("blackhole").join(elf), dir.join("bh-fw").join(elf)).unwrap();
        }
        std::fs::create_dir_all(dir.join("zero-fw")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero-fw/prefetch")).unwrap();
        write("zero-fw/dispatch", b"");
        let record = |tool: &str, index: u64| {
            format!(
                r#"{{"tool":"{tool}","seed":{index},"index":{index},"ok":true,"device_cycles":1,"seconds":0.1,"argv":["{tool}"]}}"#
            )
        };
        write("mixed.jsonl", format!("{}\n{}\n", record("race", 0), record("stress", 1)).as_bytes());
        // As an editor may leave it: blank lines first.
        write("blank-first.jsonl", format!("\n\n{}\n{}\n", record("race", 0), record("race", 1)).as_bytes());
        write("bogus-tool.jsonl", record("bogus", 0).as_bytes());
        let failure = r#""failure":{"kind":"mismatch","root":"host","signature":"m","error":"m"},"ok":true"#;
        write("ok-with-failure.jsonl", record("race", 0).replace(r#""ok":true"#, failure).as_bytes());
        write("negative-seconds.jsonl", record("race", 0).replace("0.1", "-5").as_bytes());
        // A metric whose square overflows; a seed no seed base gives.
        let metric = r#""seconds":0.1,"metrics":{"cycles_per_read":-1e308}"#;
        write("negative-metric.jsonl", record("stress", 0).replace(r#""seconds":0.1"#, metric).as_bytes());
        write("seed-under-index.jsonl", record("race", 7).replace(r#""seed":7"#, r#""seed":2"#).as_bytes());
        // A pipe among a directory's records: opening it would wait for ever.
        std::fs::create_dir_all(dir.join("fifo-dir")).unwrap();
        nix::unistd::mkfifo(&dir.join("fifo-dir/shard-0.jsonl"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let report = |cqs: u32| {
            format!(
                r#"{{"tool":"cqlab run","workload":"dispatch_latency","points":[{{"cqs":{cqs},"params":{{"cqs":{cqs}}},"throughput":{{"value":100.0}},"latency_cycles":{{"mean":10.0,"p50":10.0,"p95":10.0,"p99":10.0}}}}]}}"#
            )
        };
        write("report1.json", report(1).as_bytes());
        // Reports no `cqlab run` writes: a metric of the wrong type or sign,
        // two points at one parameter value, a schema or unit of another kind.
        let point = |cqs: u32, throughput: &str, p99: &str| {
            format!(
                r#"{{"cqs":{cqs},"params":{{"cqs":{cqs}}},"throughput":{{"unit":"programs/s","value":{throughput}}},"latency_cycles":{{"mean":10.0,"p50":10.0,"p95":10.0,"p99":{p99}}}}}"#
            )
        };
        let run = |schema: u32, points: &[String]| {
            format!(
                r#"{{"tool":"cqlab run","schema":{schema},"workload":"dispatch_latency","points":[{}]}}"#,
                points.join(",")
            )
        };
        write("report-text.json", run(1, &[point(1, "\"abc\"", "10.0")]).as_bytes());
        write("report-negative.json", run(1, &[point(1, "100.0", "-1")]).as_bytes());
        write("report-twice.json", run(1, &[point(1, "100.0", "10.0"), point(1, "90.0", "10.0")]).as_bytes());
        write("report-schema9.json", run(9, &[point(1, "100.0", "10.0")]).as_bytes());
        write("report-gbs.json", run(1, &[point(1, "100.0", "10.0").replace("programs/s", "GB/s")]).as_bytes());
        write("report-programs.json", run(1, &[point(1, "100.0", "10.0")]).as_bytes());
        write("report2.json", report(2).as_bytes());
        write(
            "trace.jsonl",
            br#"{"format":"cqlab-trace","version":2,"workload":"x","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","clock_hz":1e9,"cores":[]}"#,
        );
        // A whole trace: its header and its end line.
        write(
            "trace-whole.jsonl",
            concat!(
                r#"{"format":"cqlab-trace","version":2,"workload":"x","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","clock_hz":1e9,"cores":[]}"#,
                "\n{\"end\":{\"timed_cycles\":0,\"lost\":0}}\n"
            )
            .as_bytes(),
        );
        // Headers whose clock rate no timestamp can be computed from.
        for (name, clock) in
            [("trace-clock0.jsonl", "0"), ("trace-clock-neg.jsonl", "-1"), ("trace-clock-tiny.jsonl", "1e-300")]
        {
            let header = format!(
                r#"{{"format":"cqlab-trace","version":2,"workload":"x","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","clock_hz":{clock},"cores":[]}}"#
            );
            write(name, format!("{header}\n{{\"end\":{{\"timed_cycles\":0,\"lost\":0}}}}\n").as_bytes());
        }
        // An iteration that ends before it is enqueued, before it starts
        // (helper-53: the summary panicked, the export wrote a negative duration).
        write(
            "trace-iter-back.jsonl",
            format!(
                "{}\n{}\n",
                r#"{"format":"cqlab-trace","version":2,"workload":"x","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","sync":"per-iter","clock_hz":1e9,"cores":[]}"#,
                r#"{"iter":{"index":2,"warmup":false,"start":182102,"enqueued":182697,"end":182002,"events":[4]}}"#
            )
            .as_bytes(),
        );
        // A one-queue header over a two-queue run's launch (helper-65: the
        // summary panicked indexing the queue's cores).
        write(
            "trace-cq-spliced.jsonl",
            format!(
                "{}\n{}\n",
                r#"{"format":"cqlab-trace","version":2,"workload":"x","cqs":1,"chip":"wormhole-n150","harvesting":"rows=8","clock_hz":1e9,"cores":[]}"#,
                r#"{"launch":{"seq":0,"cq":1,"cores":[0,0,0,0],"label":"k"}}"#
            )
            .as_bytes(),
        );
        write(
            "trace-v1.jsonl",
            br#"{"format":"cqlab-trace","version":1,"workload":"x","cqs":1,"clock_hz":1e9,"cores":[]}"#,
        );
        Fixtures { dir }
    }

    /// `{name}` in `arg` replaced by the fixture's path.
    fn expand(&self, arg: &str) -> String {
        let mut a = arg.replace("{missing}", MISSING);
        for name in [
            "garbage",
            "binary",
            "empty",
            "empty-dir",
            "dir-link",
            "bad-fw",
            "zero-fw",
            "bh-fw",
            "no-figures.json",
            "figures-array.json",
            "mixed.jsonl",
            "blank-first.jsonl",
            "bogus-tool.jsonl",
            "ok-with-failure.jsonl",
            "negative-seconds.jsonl",
            "negative-metric.jsonl",
            "seed-under-index.jsonl",
            "fifo-dir",
            "report1.json",
            "report2.json",
            "report-text.json",
            "report-negative.json",
            "report-twice.json",
            "report-schema9.json",
            "report-gbs.json",
            "report-programs.json",
            "trace-v1.jsonl",
            "trace-clock0.jsonl",
            "trace-clock-neg.jsonl",
            "trace-clock-tiny.jsonl",
            "trace-cq-spliced.jsonl",
            "trace-iter-back.jsonl",
            "trace.jsonl",
            "trace-whole.jsonl",
        ] {
            a = a.replace(&format!("{{{name}}}"), self.dir.join(name).to_str().unwrap());
        }
        a.replace("{dir}", self.dir.to_str().unwrap())
    }
}

/// (command line, exit status, fragment of stderr).
type Row = (&'static [&'static str], i32, &'static str);

fn check(rows: &[Row]) {
    let f = Fixtures::new();
    let mut failures = Vec::new();
    for &(args, status, fragment) in rows {
        let argv: Vec<String> = args.iter().map(|a| f.expand(a)).collect();
        let start = Instant::now();
        let o = Command::new(CQLAB).args(&argv).env("CQLAB_FIRMWARE_DIR", firmware_dir()).output().unwrap();
        let took = start.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        let ok = o.status.code() == Some(status)
            && err.contains(fragment)
            && !err.contains("panicked")
            // Refused before any work: nothing on stdout (a malformed dump
            // is listed up to its first bad byte, then refused).
            && (status != 2 || o.stdout.is_empty() || fragment.starts_with("malformed"))
            && took < Duration::from_secs(10);
        if !ok {
            failures.push(format!("{argv:?}: expected {status} and {fragment:?} (took {took:?}):\n{}", text(&o)));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows wrong:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

#[test]
fn demo_bench_perf_driver_bench_matmul_schedule() {
    check(&[
        (&["perf", "--device", "embedded:slow"], 2, "perf replays traces, which need fast dispatch"),
        (&["demo", "--device", "ttsim:{missing}/libttsim.so"], 2, "cannot be loaded"),
        (&["calibrate", "--figures", "{no-figures.json}"], 2, "no published figure for a wormhole-n150"),
        (&["calibrate", "--figures", "{figures-array.json}"], 2, "expected an object {\"figures\": [...]}"),
        (&["run", "dispatch_latency", "--device", "ttsim:{garbage}"], 2, "cannot be loaded"),
        // Not read at all: a device would be read until memory ran out.
        (&["run", "dispatch_latency", "--device", "ttsim:/dev/zero"], 2, "a device, not a shared object file"),
        (&["demo", "--rounds", "0"], 2, "not in 1..=10000"),
        // The last word won, while the report named both (helper-65).
        (&["demo", "--device", "embedded:pipelined,blocking"], 2, "\"pipelined\" and \"blocking\" contradict"),
        (&["demo", "--rounds", "99999999999"], 2, "--rounds"),
        (&["demo", "--rounds", "many"], 2, "--rounds"),
        (&["demo", "--chip", "grayskull"], 2, "unknown chip `grayskull`; expected one of: wormhole-n150"),
        (&["demo", "--harvest", "rows=0"], 2, "has no Tensix row 0"),
        (&["demo", "--harvest", "cols=7"], 2, "harvests Tensix rows, not cols"),
        (&["demo", "--chip", "blackhole-p100a", "--harvest", "rows=8"], 2, "harvests Tensix cols, not rows"),
        (&["demo", "--harvest", "rows=1,2,3,4,5,7,8,9,10"], 2, "at most 0 command queues fit"),
        (&["demo", "--device", "bogus"], 2, "unknown device"),
        (&["demo", "--device", "sim:/x", "--noc-jitter", "5"], 2, "--noc-jitter applies to the embedded"),
        (&["demo", "--device", "sim:/x?wait=1e30"], 2, "wait"),
        (&["demo", "--stall-timeout", "0"], 2, "0 is below 1000000 (the progress-check interval)"),
        (&["demo", "--stall-timeout", "soon"], 2, "expected a number of cycles, found \"soon\""),
        (&["bench", "dispatch", "--programs", "0"], 2, "not in 1..=100000"),
        (&["bench", "dispatch", "--programs", "18446744073709551616"], 2, "--programs"),
        (&["bench", "dispatch", "--stage-min-bytes", "4294967295"], 2, "not in 0..=1048576"),
        (&["bench", "dispatch", "--profile", "worker9.9"], 2, "not a core of the measured devices"),
        (&["bench", "dispatch", "--json", "--csv"], 2, "cannot be used with"),
        (&["calibrate", "--figures", "/dev/zero"], 2, "holds more than 67108864 bytes"),
        (&["calibrate", "--figures", "{empty-dir}"], 2, "is a directory, expected a file"),
        (&["calibrate", "--figures", "{binary}"], 2, "is not UTF-8 text"),
        (&["calibrate", "--figures", "{garbage}"], 2, "garbage: expected ident at line 1"),
        (&["perf", "--programs", "0"], 2, "not in 1..=1000000"),
        (&["perf", "--args", "257"], 2, "not in 0..=256"),
        (&["perf", "--device", "nonsense"], 2, "unknown device"),
        (&["driver-bench", "--kernel-timeout", "5"], 2, "0 (no limit) or at least 1000000"),
        (&["driver-bench", "--device", "embedded:seed=x"], 2, "seed \"x\" is not a number"),
        (&["matmul", "--tile", "1"], 2, "not in 4..=16"),
        (&["matmul", "--tile", "6", "--m", "12", "--n", "12", "--k", "12"], 2, "4, 8, 12 or 16"),
        (&["matmul", "--m", "0"], 2, "not in 1..=1024"),
        (&["matmul", "--m", "4294967280"], 2, "not in 1..=1024"),
        (&["matmul", "--m", "60"], 2, "--m 60 is not a multiple of --tile 16"),
        (&["matmul", "--strategy", "bogus"], 2, "invalid value 'bogus'"),
        (&["schedule", "--m", "0", "--n", "1", "--k", "1"], 2, "not in 1..=1099511627776"),
        (&["schedule", "--m", "64", "--n", "64", "--k", "64", "--tile", "0"], 2, "tile size must be at least 1"),
        (&["schedule", "--m", "64", "--n", "64", "--k", "64", "--tile", "99999999999"], 2, "a tile edge is at most"),
        (&["schedule", "--m", "1099511627776", "--n", "1099511627776", "--k", "1", "--tile", "1"], 2, "overflows"),
        (
            &["schedule", "--m", "1073741824", "--n", "1073741824", "--k", "1", "--tile", "1"],
            2,
            "--m, --n, --k with --tile",
        ),
        (&["schedule", "--m", "64", "--n", "64", "--k", "64", "--l3", "0"], 2, "cache sizes must be positive"),
        (&["schedule", "--m", "64", "--n", "64", "--k", "64", "--l2", "lots"], 2, "--l2"),
        (&["schedule", "--m", "64", "--n", "64", "--k", "64", "--json", "--csv"], 2, "cannot be used with"),
        (
            &["schedule", "--m", "64", "--n", "64", "--k", "64", "--svg", "{missing}/x.svg"],
            2,
            "--svg /nonexistent/cqlab/x.svg: its directory",
        ),
        (
            &["schedule", "--m", "64", "--n", "64", "--k", "64", "--svg", "{empty-dir}"],
            2,
            "is a directory, expected a file",
        ),
        (
            &["schedule", "--m", "64", "--n", "64", "--k", "64", "--svg", "/dev/full"],
            1,
            "writing --svg /dev/full: No space left",
        ),
    ]);
}

#[test]
fn race_and_its_campaign_options() {
    check(&[
        (&["race", "--seeds", "0"], 2, "not in 1..=10000000"),
        (&["race", "--seeds", "10000000000"], 2, "not in 1..=10000000"),
        (&["race", "--seeds", "ten"], 2, "--seeds"),
        (&["race", "--seed-base", "9007199254740991", "--seeds", "2"], 2, "runs past the largest seed"),
        (&["race", "--seed-base", "9007199254740992"], 2, "the largest seed JSON readers keep exactly"),
        (&["run", "copy_stress", "--seed", "18446744073709551615"], 2, "above 9007199254740991 (2^53 - 1)"),
        (
            &["run", "copy_stress", "--device", "embedded:seed=9007199254740992"],
            2,
            "seed=9007199254740992: 9007199254740992 is above",
        ),
        (&["race", "--bytes", "0"], 2, "0 is not in 1..=16777216"),
        (&["race", "--iterations", "0"], 2, "not in 1..=1000000"),
        (&["race", "--delay", "4294967295"], 2, "not in 0..=10000000"),
        (&["race", "--timeout-cycles", "0"], 2, "not in 1000000..=1000000000000"),
        (&["race", "--pct-depth", "65"], 2, "not in 0..=64"),
        (&["race", "--pct-steps", "5"], 2, "--pct-steps needs --pct-depth above 0"),
        (&["race", "--jobs", "0"], 2, "not in 1..=256"),
        (&["race", "--core-stall", "0.1"], 2, "can never boot"),
        (&["race", "--core-stall", "0.0249"], 2, "the cores run under a tenth of the time"),
        // One transaction as long as a wait's no-progress limit: every seed
        // of the normal firmware timed out (helper-66).
        (
            &["race", "--pcie-read-latency", "10000000"],
            2,
            "10000000 cycles (PCIe read latency 10000000) can pass in one transaction",
        ),
        (
            &["race", "--faults", "late-doorbell=3000000,backpressure=3000000"],
            2,
            "(PCIe read latency 750 + late doorbell 3000000 + write back-pressure 3000000) can pass",
        ),
        (&["race", "--core-stall", "nan"], 2, "--core-stall"),
        (&["race", "--core-stall", "2"], 2, "not in 0..=1"),
        (&["race", "--faults", "stall=0.1"], 2, "can never boot"),
        (&["race", "--faults", "slow=worker16.0@2"], 2, "worker16.0 is not on the device"),
        (&["race", "--faults", "slow=worker1@2"], 2, "workerC.R"),
        (&["race", "--faults", "slow=worker9.0@2"], 2, "worker9.0 is not on the device (wormhole-n150 rows=8, a 8x8"),
        (&["race", "--faults", "slow=dispatcher5@2"], 2, "is not on the device"),
        (&["race", "--faults", "jitter=99999999999"], 2, "at most 10000000 cycles"),
        (&["race", "--faults", "bogus=1"], 2, "unknown fault"),
        (&["race", "--faults", "jitter=5,jitter=6"], 2, "jitter is given twice"),
        (&["race", "--faults", "slow=worker1.1@2", "--faults", "slow=worker1.1@3"], 2, "slow=worker1.1 is given twice"),
        (&["race", "--faults", ",,"], 2, "names no fault"),
        (&["race", "--variant", "bogus"], 2, "not a known-bug variant"),
        (&["race", "--firmware", "{missing}"], 2, "not a directory, and"),
        (&["race", "--firmware", "{empty-dir}"], 2, "no prefetch ELF in it"),
        // Refused before any seed runs, not counted as failed seeds.
        (
            &["race", "--firmware", "{bad-fw}"],
            2,
            "bad-fw/prefetch: not an ELF file: expected magic 7f 45 4c 46, found [74",
        ),
        (&["race", "--firmware", "{zero-fw}"], 2, "zero-fw/prefetch: holds more than 16777216 bytes"),
        // Another chip's firmware would fault on this chip's registers at boot.
        (&["race", "--firmware", "{bh-fw}"], 2, "bh-fw/prefetch: built for blackhole, the device is a wormhole"),
        (&["race", "--variant", "none", "--firmware", "x"], 2, "cannot be used with"),
        (&["race", "--workload", "random", "--copies", "3"], 2, "--copies only shape the two-queue workload"),
        (&["race", "--workload", "programs", "--issue-size", "4096"], 2, "--issue-size only shape"),
        (&["race", "--issue-size", "100"], 2, "the device refuses this configuration"),
        (&["race", "--page-size", "3"], 2, "3: a multiple of 64 from 64 to 36800"),
        // Larger than a chunk's paged write: refused naming the option, not
        // at the first seed (helper-66).
        (&["race", "--page-size", "36864"], 2, "36864: a multiple of 64 from 64 to 36800"),
        (&["race", "--page-size", "64", "--bytes", "16777216"], 2, "is 262144 pages; a copy holds at most 65536"),
        (&["race", "--page-size", "99999999999"], 2, "99999999999: a multiple of 64"),
        (&["race", "--shard", "4/4"], 2, "expected I/N"),
        (&["race", "--shard", "0/18446744073709551615"], 2, "expected I/N"),
        (&["race", "--dump-dir", "{missing}/dumps"], 2, "--dump-dir /nonexistent/cqlab/dumps: its directory"),
        (&["race", "--dump-dir", "{garbage}"], 2, "exists and is not a directory"),
        (&["race", "--jsonl", "{empty-dir}"], 2, "is a directory, expected a file"),
        (&["race", "--jsonl", "{missing}/r.jsonl"], 2, "its directory"),
        (&["race", "--jobs", "2", "--child"], 2, "cannot be used with"),
        (&["race", "--jsonl", "{dir}/y.jsonl", "--dump-dir", "{dir}/y.jsonl"], 2, "two outputs of one run"),
    ]);
}

#[test]
fn run_compare_sweep() {
    check(&[
        (&["run", "bogus"], 2, "unknown workload \"bogus\""),
        (&["run", "copy_stress", "--iters", "0"], 2, "not in 1..=1000000"),
        (&["run", "copy_stress", "--cqs", "9"], 2, "9 is outside 1..=8"),
        (&["run", "copy_stress", "--cqs", "1,1"], 2, "appears twice"),
        (&["run", "copy_stress", "--cqs", "x"], 2, "is not a number"),
        // Its trace needs the CQ firmware: refused before a device boots
        // (helper-53: exit 1 after booting).
        (&["run", "copy_stress", "--device", "embedded:seed=3,slow"], 2, "copy_stress needs fast dispatch"),
        // Each queue needs a worker row: refused before the sweep's first
        // point runs (nothing on stdout), on the chip named.
        (
            &["run", "tiny_kernels", "--cqs", "1,8", "--trace", "{dir}/t.jsonl"],
            2,
            "--cqs 8: this wormhole-n150 (rows=8) places at most 7 queues (each queue needs a worker row of its own)",
        ),
        (
            &["run", "dispatch_latency", "--chip", "wormhole-n300", "--cqs", "7"],
            2,
            "(rows=1,8) places at most 6 queues",
        ),
        (
            &["run", "dispatch_latency", "--harvest", "rows=1,2,3,4,5,7,8,9", "--cqs", "2"],
            2,
            "(rows=1,2,3,4,5,7,8,9) places at most 1 queue (each",
        ),
        (&["run", "copy_stress", "--bytes", "1"], 2, "multiple of 1024"),
        (&["run", "copy_stress", "--copies", "4294967295"], 2, "not in 1..=10000"),
        (&["run", "tiny_kernels", "--programs", "4294967295"], 2, "not in 1..=10000"),
        (&["run", "large_gemm", "--m", "4294967280"], 2, "not in 1..=1024"),
        (&["run", "large_gemm", "--tile", "6", "--m", "12", "--n", "12", "--k", "12"], 2, "4, 8, 12 or 16"),
        (&["run", "matmul_peak", "--m", "100"], 2, "multiples of a tile"),
        (&["run", "tiny_kernels", "--copies", "3"], 2, "--copies not read by tiny_kernels"),
        (&["run", "dispatch_latency", "--bytes", "4096"], 2, "not read by dispatch_latency"),
        (&["run", "copy_stress", "--sync", "bogus"], 2, "invalid value 'bogus'"),
        (&["run", "copy_stress", "--device", "bogus"], 2, "unknown device"),
        (&["run", "copy_stress", "--json", "{missing}/r.json"], 2, "--json /nonexistent/cqlab/r.json: its directory"),
        (&["run", "copy_stress", "--trace", "{empty-dir}"], 2, "is a directory, expected a file"),
        (&["run", "copy_stress", "--trace", "-"], 2, "--trace -: stdout is not taken here"),
        (&["race", "--jsonl", "-"], 2, "--jsonl -: stdout is not taken here"),
        (
            &["run", "copy_stress", "--json", "{dir}/same.json", "--trace", "{dir}/same.json"],
            2,
            "two outputs of one run",
        ),
        (
            &["run", "copy_stress", "--cqs", "1,2", "--json", "{dir}/t-cqs2.json", "--trace", "{dir}/t.json"],
            2,
            "two outputs of one run",
        ),
        (&["run", "copy_stress", "--host-jitter", "10001"], 2, "10001 is not in 0..=10000"),
        (&["run", "copy_stress", "--host-pct-steps", "5"], 2, "needs --host-pct above 0"),
        (&["run", "copy_stress", "--host-pct", "6", "--host-pct-steps", "5"], 2, "as many distinct accesses"),
        (
            &["run", "copy_stress", "--device", "sim:{dir}/sock", "--host-jitter", "5"],
            2,
            "--host-jitter needs the embedded simulator",
        ),
        (&["compare", "{missing}", "{report1.json}"], 2, "BASE /nonexistent/cqlab: No such file"),
        (&["compare", "{empty-dir}", "{report1.json}"], 2, "is a directory, expected a file"),
        (&["compare", "/dev/zero", "{report1.json}"], 2, "holds more than 67108864 bytes"),
        (&["compare", "{garbage}", "{report1.json}"], 2, "is not JSON"),
        (&["compare", "{binary}", "{report1.json}"], 2, "is not UTF-8 text"),
        (&["compare", "{empty}", "{report1.json}"], 2, "is not JSON"),
        (&["compare", "{trace.jsonl}", "{report1.json}"], 2, "is not a `cqlab run --json` report"),
        // JSON Lines: named, with what compare takes (helper-72: "is not
        // JSON: trailing characters at line 2 column 1").
        (
            &["compare", "{report1.json}", "{trace-whole.jsonl}"],
            2,
            "trace-whole.jsonl is JSON Lines (a `cqlab run --trace` trace), not one JSON report: compare takes the \
             reports `cqlab run --json FILE` writes",
        ),
        (&["compare", "{mixed.jsonl}", "{report1.json}"], 2, "mixed.jsonl is JSON Lines (one JSON value a line)"),
        (&["compare", "{blank-first.jsonl}", "{report1.json}"], 2, "blank-first.jsonl is JSON Lines"),
        (&["compare", "{report1.json}", "{report2.json}"], 2, "nothing compared"),
        (
            &["compare", "{report-text.json}", "{report1.json}"],
            2,
            "point 1 (cqs=1): throughput is \"abc\", not a number",
        ),
        (&["compare", "{report1.json}", "{report-negative.json}"], 2, "latency p99 is -1, not a number of at least 0"),
        (&["compare", "{report-twice.json}", "{report1.json}"], 2, "point 2 (cqs=1): a second point at the same"),
        (&["compare", "{report-schema9.json}", "{report1.json}"], 2, "schema 9; this cqlab reads schema 1"),
        (
            &["compare", "{report-gbs.json}", "{report-programs.json}"],
            2,
            "throughput in GB/s (BASE) against programs/s",
        ),
        (&["compare", "{report1.json}", "{report1.json}", "--threshold", "5%%"], 2, "expected a percentage"),
        (&["compare", "{report1.json}", "{report1.json}", "--threshold=-1"], 2, "expected a percentage"),
        (&["compare", "{report1.json}", "{report1.json}", "--threshold", "5000%"], 2, "not in 0..=1000"),
        (&["sweep", "copy_stress", "--param", "cqs=1,17"], 2, "cqs 17 (1..=16)"),
        // The chip as harvested places 4 queues: refused before cqs=1 runs
        // (helper-65: after it, its result lost).
        (
            &["sweep", "copy_stress", "--param", "cqs=1,16", "--harvest", "rows=1,2,3,4,5,7,8,9"],
            2,
            "at cqs=16 the device refuses: wormhole-n150 (rows=1,2,3,4,5,7,8,9): 16 command queues need",
        ),
        (&["sweep", "copy_stress", "--param", "bogus=1"], 2, "unknown knob"),
        (
            &["sweep", "copy_stress", "--param", "bytes=1,1048576"],
            2,
            "at bytes=1048576 the device refuses: a read lands",
        ),
        (&["sweep", "copy_stress", "--param", "depth=1,4,1"], 2, "1 appears twice"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--device", "embedded:slow"], 2, "`slow` has none"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--device", "embedded:warp"], 2, "unknown embedded option"),
        (&["sweep", "copy_stress", "--param", "depth=5..1"], 2, "need A <= B"),
        (&["sweep", "copy_stress", "--param", "depth=0..18446744073709551615"], 2, "more than a million values"),
        (&["sweep", "copy_stress", "--param", "issue_size=1,4096"], 2, "at issue_size=1 the device refuses"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--timeout-cycles", "0"], 2, "not in 1000000.."),
        (&["sweep", "copy_stress", "--param", "depth=1,2", "--set", "depth=3"], 2, "is the swept knob"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--set", "bytes=9", "--set", "bytes=10"], 2, "set twice"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--device", "bogus"], 2, "unknown device"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--host-bug", "bogus"], 2, "--host-bug"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--host-bug", "staged-reuse-early"], 2, "sends no programs"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--host-pct", "65"], 2, "65 is not in 0..=64"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--out", "{garbage}"], 2, "exists and is not a directory"),
        (&["sweep", "copy_stress", "--param", "depth=1", "--out", "{missing}/out"], 2, "its directory"),
    ]);
}

#[test]
fn decode_and_the_trace_readers() {
    check(&[
        (&["decode", "--kind", "completion", "{empty}"], 2, "empty: a completion-ring dump holds at least one 16-byte"),
        (&["decode", "--kind", "bogus", "{garbage}"], 2, "invalid value 'bogus'"),
        (&["decode", "{missing}"], 2, "dump /nonexistent/cqlab: No such file"),
        (&["decode", "{empty-dir}"], 2, "is a directory, expected a file"),
        (&["decode", "/dev/zero"], 2, "holds more than 67108864 bytes"),
        (&["decode", "{empty}"], 2, "is empty"),
        (&["decode", "{binary}"], 2, "malformed issue-queue dump"),
        (&["decode", "--kind", "completion", "{garbage}"], 2, "malformed completion dump"),
        (&["decode", "--kind", "trace", "{binary}"], 2, "malformed trace dump"),
        (&["decode", "{garbage}", "--cq", "1"], 2, "--cq reads a live device"),
        (&["decode", "--device", "embedded", "--kind", "completion"], 2, "reads a live simulator daemon"),
        (&["decode", "--device", "sim:/x", "--kind", "issue"], 2, "--kind issue reads a dump FILE"),
        (&["decode", "--device", "sim:/x", "--kind", "trace"], 2, "needs --core X,Y"),
        (&["decode", "--device", "sim:/x", "--kind", "completion", "--core", "1,1"], 2, "--core is for --kind trace"),
        (&["decode", "--device", "sim:/x", "--kind", "trace", "--core", "999,1"], 2, "expected X,Y"),
        (&["decode", "--device", "sim:/x", "--kind", "completion", "--cq", "16"], 2, "not in 0..16"),
        (&["decode", "--device", "sim:{missing}", "--kind", "completion"], 1, "observing sim:/nonexistent/cqlab"),
        (&["trace", "summary", "{missing}"], 2, "RUN /nonexistent/cqlab: No such file"),
        (&["trace", "summary", "{empty-dir}"], 2, "is a directory"),
        (&["trace", "summary", "/dev/zero"], 2, "line 1 is longer than"),
        (&["trace", "summary", "{garbage}"], 2, "line 1 is not a cqlab-trace header"),
        (&["trace", "summary", "{binary}"], 2, "is not UTF-8"),
        (&["trace", "summary", "{empty}"], 2, "not a cqlab-trace header"),
        (&["trace", "summary", "{trace.jsonl}", "--paths", "99999"], 2, "not in 0..=10000"),
        (&["trace", "summary", "{trace-v1.jsonl}"], 2, "a version 1 trace, recorded on cqlab's invented chip"),
        (
            &["trace", "summary", "{trace-clock0.jsonl}"],
            2,
            "trace-clock0.jsonl line 1: clock_hz 0.0 is not a core clock",
        ),
        (&["trace", "summary", "{trace-clock-neg.jsonl}"], 2, "line 1: clock_hz -1.0 is not a core clock rate (cycles"),
        (&["trace", "summary", "{trace-clock-tiny.jsonl}"], 2, "line 1: clock_hz 1e-300 is not a core clock rate"),
        (&["trace", "summary", "{trace-cq-spliced.jsonl}"], 2, "line 2: launch on CQ1, but the header places 1 queue"),
        (&["trace", "export", "{trace-cq-spliced.jsonl}", "--perfetto", "{dir}/p.json"], 2, "launch on CQ1, but"),
        (&["trace", "summary", "{trace-iter-back.jsonl}"], 2, "line 2: iteration 2 end 182002 is before its enqueued"),
        (
            &["trace", "export", "{trace-iter-back.jsonl}", "--perfetto", "{dir}/p.json"],
            2,
            "trace-iter-back.jsonl line 2: iteration 2 end 182002 is before its enqueued 182697",
        ),
        (&["trace", "export", "{trace-clock0.jsonl}", "--perfetto", "{dir}/p.json"], 2, "line 1: clock_hz 0.0 is not"),
        (&["trace", "export", "{trace-clock-neg.jsonl}", "--perfetto", "{dir}/p.json"], 2, "clock_hz -1.0 is not"),
        (&["trace", "export", "{trace-clock-tiny.jsonl}", "--perfetto", "{dir}/p.json"], 2, "clock_hz 1e-300 is not"),
        (&["trace", "export", "{missing}", "--perfetto", "{dir}/p.json"], 2, "RUN /nonexistent/cqlab"),
        (&["trace", "export", "/dev/zero", "--perfetto", "{dir}/p.json"], 2, "line 1 is longer than"),
        (&["trace", "export", "{trace.jsonl}", "--perfetto", "{trace.jsonl}"], 2, "refusing to overwrite an input"),
        (&["trace", "export", "{trace.jsonl}", "--perfetto", "{missing}/p.json"], 2, "its directory"),
        (
            &["trace", "export", "{trace.jsonl}", "--perfetto", "/dev/full"],
            1,
            "writing --perfetto /dev/full: No space left",
        ),
    ]);
}

#[test]
fn stress_replay_campaign() {
    check(&[
        (&["stress", "restart", "--runs", "0"], 2, "not in 1..=100000"),
        (&["stress", "restart", "--runs", "18446744073709551615"], 2, "not in 1..=100000"),
        (&["stress", "restart", "--runs", "1", "--iterations", "0", "--workload", "random"], 2, "not in 1..=1000000"),
        (&["stress", "restart", "--runs", "1", "--kill-rate", "1"], 2, "1 excluded"),
        (&["stress", "run-one", "--seed", "1", "--device", "sim:{dir}/sock", "--host-pct", "2"], 2, "--host-pct needs the embedded simulator"),
        (&["stress", "restart", "--runs", "1", "--timeout", "0"], 2, "0 is not a timeout"),
        (&["stress", "restart", "--runs", "1", "--bytes", "589825"], 2, "L1 user region, 589824 bytes"),
        (&["stress", "restart", "--runs", "1", "--timeout", "86401"], 2, "86401 is not a timeout: at least 0.001, at"),
        (&["stress", "restart", "--runs", "1", "--timeout", "1e-300"], 2, "1e-300 is not a timeout: at least 0.001"),
        // Each of its queues needs a worker row: refused, not a campaign
        // of failed runs (helper-66).
        (
            &["stress", "restart", "--runs", "1", "--workload", "matmul_peak", "--harvest", "rows=1,2,3,4,5,7,8,9"],
            2,
            "--workload matmul_peak runs 2 queues, each on a worker row of its own, and wormhole-n150 \
             (rows=1,2,3,4,5,7,8,9) has 1 worker row",
        ),
        (&["stress", "restart", "--runs", "1", "--timeout=-1"], 2, "-1 is not a timeout: at least 0.001"),
        (&["stress", "restart", "--runs", "1", "--timeout", "soon"], 2, "expected a number, found \"soon\""),
        (&["stress", "restart", "--runs", "1", "--timeout", "inf"], 2, "--timeout"),
        (&["stress", "restart", "--runs", "1", "--device", "bogus"], 2, "unknown device"),
        (&["stress", "restart", "--runs", "1", "--device", "ttkmd-sim:/x"], 2, "stress runs on embedded[:WORDS] or sim:PATH"),
        (&["stress", "restart", "--runs", "1", "--workload", "random", "--depth", "3"], 2, "--depth applies to --workload copy_stress only"),
        (&["stress", "restart", "--runs", "1", "--iterations", "3"], 2, "applies to --workload random, programs or matmul_peak"),
        (&["stress", "restart", "--runs", "1", "--phase-runs", "3"], 2, "applies to --reset phase only"),
        (&["stress", "restart", "--runs", "1", "--jsonl", "{missing}/s.jsonl"], 2, "its directory"),
        (&["stress", "restart", "--runs", "1", "--timeout-cycles", "5"], 2, "not in 1000000.."),
        (&["replay", "{missing}"], 2, "RECORD /nonexistent/cqlab: No such file"),
        (&["replay", "{empty-dir}"], 2, "is a directory, expected a file"),
        (&["replay", "{garbage}"], 2, "not a campaign record"),
        (&["replay", "{binary}"], 2, "is not UTF-8"),
        (&["replay", "/dev/zero"], 2, "line 1 is longer than"),
        (&["replay", "{not json"], 2, "RECORD is not a campaign record"),
        (&["replay", "{\"tool\":\"race\"}", "--seed", "3"], 2, "--seed picks a record of a file"),
        (&["replay", "{mixed.jsonl}", "--out", "{mixed.jsonl}"], 2, "exists and is not a directory"),
        (&["replay", "{\"tool\":\"stress\",\"seed\":1,\"index\":0,\"ok\":true,\"device_cycles\":1,\"seconds\":0.1,\"argv\":[\"sim\",\"bench\"]}"], 2, "a stress record runs `stress run-one"),
        (&["replay", "{\"tool\":\"race\",\"seed\":1,\"index\":0,\"ok\":true,\"device_cycles\":1,\"seconds\":0.1,\"argv\":[]}"], 2, "a race record runs `race ...`, this one ``"),
        (&["replay", "{\"tool\":\"race\",\"seed\":1,\"index\":0,\"ok\":false,\"device_cycles\":1,\"seconds\":0.1,\"argv\":[\"race\"]}"], 2, "the record says ok false, yet names no failure"),
        (&["replay", "{\"tool\":\"race\",\"seed\":1,\"index\":0,\"ok\":true,\"device_cycles\":1,\"seconds\":0.1,\"argv\":[\"race\",\"--seed-base\",\"2\"]}"], 2, "its arguments run --seed-base 2"),
        (&["campaign", "merge", "{missing}"], 2, "/nonexistent/cqlab: No such file"),
        (&["campaign", "merge", "{garbage}"], 2, "not a campaign record"),
        (&["campaign", "merge", "{binary}"], 2, "is not UTF-8"),
        (&["campaign", "merge", "/dev/zero"], 2, "line 1 is longer than"),
        (&["campaign", "merge", "{empty-dir}"], 2, "no campaign records"),
        (&["campaign", "merge", "{mixed.jsonl}"], 2, "a stress record among race records"),
        // What no cqlab wrote is refused, not reported as if it said
        // something (helper-44: it merged, and the report contradicted itself).
        (&["campaign", "merge", "{bogus-tool.jsonl}"], 2, "line 1: not a record cqlab wrote: tool \"bogus\""),
        (&["campaign", "merge", "{ok-with-failure.jsonl}"], 2, "the record says ok true, yet names a failure"),
        (&["campaign", "merge", "{negative-seconds.jsonl}"], 2, "seconds -5.0: not a run's host time"),
        (&["campaign", "merge", "{negative-metric.jsonl}"], 2, "metric cycles_per_read -1e308: not a count, rate"),
        (&["campaign", "merge", "{seed-under-index.jsonl}"], 2, "run 7 is seed 2: a race run i is seed base + i"),
        (&["campaign", "merge", "{fifo-dir}"], 2, "not a regular file"),
        (&["campaign", "sbatch", "--shards", "0", "--dir", "{dir}/s", "--", "race"], 2, "not in 1..=10000"),
        (&["campaign", "sbatch", "--shards", "2", "--dir", "{dir}/s", "--", "demo"], 2, "`race ...` or `stress ...`, not `demo ...`"),
        (&["campaign", "sbatch", "--shards", "2", "--dir", "{dir}/s", "--", "race", "--jobs", "2"], 2, "must not set --shard, --jsonl, --jobs or --resume"),
        (&["campaign", "sbatch", "--shards", "2", "--dir", "{dir}/s", "--", "race", "--seeds", "0"], 2, "would be refused by every array task"),
        (&["campaign", "sbatch", "--shards", "2", "--dir", "{dir}/s", "--", "stress", "restart", "--runs", "1", "--kill-rate", "1"], 2, "would be refused"),
        (&["campaign", "sbatch", "--shards", "2", "--dir", "{dir}/s", "--time", "soon", "--", "race"], 2, "expected MINUTES"),
        (&["campaign", "sbatch", "--shards", "2", "--dir", "{dir}/s", "--partition", "a;rm", "--", "race"], 2, "Slurm partition name"),
        (&["campaign", "sbatch", "--shards", "2", "--dir", "{garbage}", "--", "race"], 2, "exists and is not a directory"),
    ]);
}

#[test]
fn sim_reset_status_dump() {
    check(&[
        (&["sim", "exec", "{missing}"], 2, "ELF /nonexistent/cqlab: No such file"),
        (&["sim", "exec", "{empty-dir}"], 2, "is a directory"),
        (&["sim", "exec", "/dev/zero"], 2, "holds more than 67108864 bytes"),
        (&["sim", "exec", "{garbage}"], 2, "not an ELF file"),
        (&["sim", "exec", "{empty}"], 2, "not an ELF file: expected magic 7f 45 4c 46, found an empty file"),
        (&["sim", "exec", "{garbage}", "--max-cycles", "0"], 2, "not in 1..=10000000000000"),
        (&["sim", "bench", "--iters", "0"], 2, "not in 1..=1000000000"),
        (&["sim", "bench", "--chip-cycles", "18446744073709551615"], 2, "not in 1..=100000000000"),
        (&["sim", "bench", "--quantum", "0"], 2, "not in 1..=100000"),
        (&["sim", "serve", "--dev", "{dir}/d", "--sysmem-mib", "0"], 2, "not in 3..=4096"),
        // A sysmem too small for the default queues started, and failed every
        // client, `status` and `dump` (/proc: a start fails at once).
        (
            &["sim", "serve", "--dev", "/proc/cqlab/d", "--sysmem-mib", "2"],
            2,
            "--sysmem-mib 2 is not in 3..=4096: the sysmem holds the command queues, and the default 2",
        ),
        (
            &["sim", "ttkmd", "--dev", "/proc/cqlab/d", "--sysmem-mib", "3"],
            2,
            "a tt-kmd client pins in whole TLB windows, 4194304 bytes, so at least 4 MiB",
        ),
        (&["sim", "ttkmd", "--dev", "{dir}/d", "--sysmem-mib", "4097"], 2, "--sysmem-mib 4097 is not in 4..=4096\n"),
        // Bad --dev paths as much as a file is (they exited 1).
        (&["sim", "serve", "--dev", "{dir-link}"], 2, "dir-link: is a symbolic link"),
        (&["sim", "ttkmd", "--dev", "{dir-link}"], 2, "dir-link: is a symbolic link"),
        (
            &["sim", "serve", "--dev", LONG_DEV],
            2,
            "sock.new: a socket path of 142 bytes; Unix sockets allow at most 107",
        ),
        (&["sim", "serve", "--dev", "{dir}/d", "--harvest", "rows=6"], 2, "has no Tensix row 6"),
        (&["sim", "serve", "--dev", "{dir}/d", "--chip", "grayskull-e150"], 2, "unknown chip"),
        (&["sim", "serve", "--dev", "{garbage}"], 2, "exists and is not a directory"),
        (
            &["sim", "ttkmd", "--dev", "{dir}/d", "--chip", "blackhole-p150a", "--harvest", "cols=8"],
            2,
            "no Tensix column 8",
        ),
        (&["sim", "ttkmd", "--dev", "{garbage}"], 2, "exists and is not a directory"),
        (&["sim", "stop", "--dev", "{missing}"], 1, "no simulator daemon"),
        (&["sim", "bar", "--dev", "{dir}", "--worker", "256,0", "--addr", "0"], 2, "256 is out of range 0..=255"),
        (&["sim", "bar", "--dev", "{dir}", "--worker", "a,b", "--addr", "0"], 2, "expected COL,ROW"),
        (&["sim", "bar", "--dev", "{dir}", "--worker", "0,0", "--addr", "0x100000000"], 2, "below 2^32"),
        (&["sim", "bar", "--dev", "{dir}", "--worker", "0,0", "--addr", "3"], 2, "4-byte aligned"),
        (&["sim", "bar", "--dev", "{dir}", "--worker", "0,0", "--addr", "0", "--write", "0x100000000"], 2, "32 bits"),
        (&["sim", "bar", "--dev", "{dir}", "--worker", "0,0", "--addr", "0", "--hold", "inf"], 2, "0..=3600"),
        (&["reset", "--dev", "{missing}"], 1, "no simulator daemon"),
        (&["reset", "--device", "sim:{missing}"], 1, "resetting sim:/nonexistent/cqlab"),
        (&["reset", "--device", "ttkmd-sim:{missing}"], 1, "no simulated device"),
        (&["reset"], 2, "--device <DEVICE>|--dev <DEV>"),
        (&["reset", "--device", "embedded"], 2, "the embedded simulator lives inside each command's own process"),
        (&["reset", "--device", "embedded:seed=3"], 2, "nothing of it outlives a command to be reset"),
        (&["reset", "--device", "ttsim:/x.so"], 2, "a libttsim library lives inside each command's own process"),
        (&["reset", "--device", "bogus"], 2, "unknown device"),
        (&["reset", "--dmc", "--device", "sim:{missing}"], 2, "a simulator daemon, has no board management controller"),
        (&["reset", "--dmc", "--dev", "{missing}"], 2, "--dmc asks tt-kmd to reset a card's (ASIC_DMC_RESET)"),
        (&["status", "--device", "embedded"], 2, "reads a live simulator daemon"),
        (&["status", "--device", "bogus"], 2, "unknown device"),
        (&["status", "--device", "sim:{missing}"], 1, "observing sim:/nonexistent/cqlab"),
        (&["status", "--device", "sim:{garbage}"], 1, "garbage: it is not a directory"),
        // A cause shown in its error's own message is not printed again.
        (
            &["sim", "serve", "--dev", "/proc/cqlab/d"],
            1,
            "creating the parent of /proc/cqlab/d: No such file or directory (os error 2)\n",
        ),
        (&["dump", "--device", "/dev/tenstorrent/0"], 2, "reads a live simulator daemon"),
        (&["dump", "--device", "sim:{missing}"], 1, "observing sim:/nonexistent/cqlab"),
    ]);
}

/// A campaign checks every image its runs would load before its first run
/// (a worker kernel cut short made every seed of `race` and every run of
/// `stress restart` a failure, exit 1).
#[test]
fn campaigns_refuse_a_bad_kernel_before_their_first_run() {
    let f = Fixtures::new();
    let root = f.dir.join("cut-spin-root");
    for args in [
        &["race", "--workload", "programs", "--seeds", "3", "--iterations", "1"][..],
        &["stress", "restart", "--runs", "2", "--workload", "random"][..],
    ] {
        let o = Command::new(CQLAB).args(args).env("CQLAB_FIRMWARE_DIR", &root).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(err.contains("wormhole/spin"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} ran something: {}", text(&o));
    }
    // The kernels a workload or point loads beyond the worker kernel too
    // (a cut `copy` failed every `programs` seed; a cut `noop-1k` the
    // sizes point after eight others had run).
    let root = f.dir.join("cut-kernels-root");
    for (args, cut) in [
        (&["race", "--workload", "programs", "--seeds", "3", "--iterations", "1"][..], "wormhole/copy"),
        (&["stress", "restart", "--runs", "2", "--workload", "programs"][..], "wormhole/copy"),
        (&["bench", "dispatch", "--programs", "2"][..], "wormhole/noop-1k"),
    ] {
        let o = Command::new(CQLAB).args(args).env("CQLAB_FIRMWARE_DIR", &root).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains(cut), "{args:?}: {}", text(&o));
        assert!(o.stdout.is_empty(), "{args:?} ran something: {}", text(&o));
    }
}

/// A kernel built for another chip (Blackhole's, copied into the Wormhole
/// directory) is refused by its id before any run, naming the file, as
/// another chip's firmware is: every command that loads it exits 2.
#[test]
fn another_chips_kernel_is_refused_before_any_run() {
    let f = Fixtures::new();
    let root = f.dir.join("bh-kernels-root");
    for args in [
        &["race", "--workload", "programs", "--seeds", "3", "--iterations", "1"][..],
        &["stress", "restart", "--runs", "2", "--workload", "random"][..],
        &["bench", "dispatch", "--programs", "2"][..],
        &["matmul", "--m", "16", "--n", "16", "--k", "16", "--strategy", "os"][..],
    ] {
        let o = Command::new(CQLAB).args(args).env("CQLAB_FIRMWARE_DIR", &root).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let named = ["spin", "copy", "noop-1k", "matmul"]
            .iter()
            .any(|k| err.contains(&format!("wormhole/{k}: built for blackhole, the device is a wormhole")));
        assert!(named, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} ran something: {}", text(&o));
    }
}

/// A firmware root that is not there is named, with where the root comes
/// from, before any work (exit 2); an empty `CQLAB_FIRMWARE_DIR` is unset,
/// not the working directory (helper-65: it read `wormhole/prefetch` from
/// the directory the command ran in).
#[test]
fn a_missing_firmware_root_is_named_and_an_empty_one_is_unset() {
    let f = Fixtures::new();
    let missing = f.dir.join("no-firmware-root");
    let o = Command::new(CQLAB).args(["demo", "--rounds", "1"]).env("CQLAB_FIRMWARE_DIR", &missing).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let named =
        format!("no firmware directory {}/wormhole (the firmware root is $CQLAB_FIRMWARE_DIR", missing.display());
    assert!(err.contains(&named), "{err}");
    assert!(o.stdout.is_empty(), "ran something: {}", text(&o));
    // Unset, the root is the workspace's build, which `cargo xtask test`
    // has built (a run pointed elsewhere has no such build to find).
    if std::env::var_os("CQLAB_FIRMWARE_DIR").is_some() {
        return;
    }
    let o = Command::new(CQLAB)
        .args(["demo", "--rounds", "1"])
        .env("CQLAB_FIRMWARE_DIR", "")
        .current_dir(f.dir.join("empty-dir"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// On a daemon whose chip has one worker row, every command checks its
/// every point against the daemon's chip before the first runs (exit 2,
/// nothing run): `run`'s queue counts (they were exit 1), `sweep`'s
/// (refused after the points before had run) and `stress restart
/// --workload matmul_peak` (a campaign of failed runs; helper-65, -66).
#[test]
fn a_daemons_chip_is_checked_before_the_first_point() {
    let d = support::Daemon::start("one-row", &["--harvest", "rows=1,2,3,4,5,7,8,9"], std::process::Stdio::null());
    let spec = d.spec();
    for (args, says) in [
        (&["run", "tiny_kernels", "--iters", "1", "--cqs", "1,8"][..], "--cqs 8: wormhole-n150 (rows=1,2,3,4,5,7,8,9)"),
        (&["sweep", "copy_stress", "--param", "cqs=1,16"], "at cqs=16 the device sim:"),
        (&["stress", "restart", "--runs", "1", "--workload", "matmul_peak"], "runs 2 queues, each on a worker row"),
    ] {
        let o = Command::new(CQLAB)
            .args(args)
            .args(["--device", &spec])
            .env("CQLAB_FIRMWARE_DIR", firmware_dir())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(err.contains(says) && !err.contains(": pass"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} ran something: {}", text(&o));
    }
}
