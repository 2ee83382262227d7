//! Every exit status of `cqlab`, in one place: the [`Exit`] table (also in
//! `cqlab --help` and docs/cli.md) and how a failure picks its row.
//!
//! A failure's class picks its code, as a deterministic simulator's failure
//! classes do: a hang is a liveness failure, a device error a crash, a
//! mismatch a correctness failure. Scripts and CI can tell them apart
//! without reading the output.

use crate::usage::UsageError;
use cqlab_driver::DriverError;
use std::process::ExitCode;

/// The exit status of every command: the one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success; also when stdout closes early (`cqlab ... | head -1`).
    Success = 0,
    /// The run failed for another reason: I/O, a driver error of no class
    /// below, failures of several classes in one campaign, a `compare`
    /// regression.
    Failed = 1,
    /// A usage error: a bad argument or malformed input, refused before any
    /// work (the code clap uses for options it cannot parse).
    Usage = 2,
    /// A hang: a wait timed out, the device or the host stopped making
    /// progress (liveness).
    Hang = 3,
    /// A device error: a firmware error record (`!CMD`), a corrupt
    /// completion record, a core that crashed or halted (a crash).
    Device = 4,
    /// A mismatch: the run ended but a result differs from the host's
    /// reference (correctness).
    Mismatch = 5,
    /// A campaign's records lack runs (`campaign merge`): a shard or array
    /// task lost, stopped by its time limit, or cut short. The report
    /// covers the runs present; rerun the shards it names.
    Incomplete = 6,
}

impl Exit {
    /// The status as a process exit code.
    pub const fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e.code())
    }
}

/// The help text's table of exit codes.
pub const EXIT_CODES_HELP: &str = "Exit codes: 0 success (also when stdout closes early); 1 the run failed for \
     another reason (I/O, driver error, failures of several classes, a compare regression); 2 usage error (a bad \
     argument or malformed input, refused before any work); 3 hang (a wait timed out); 4 device error (a firmware \
     error record, a corrupt completion record, a crashed core); 5 mismatch (a result differs from the host \
     reference); 6 incomplete campaign (`campaign merge`: runs without a record). See docs/cli.md.";

/// The statuses of a run that ran to its result, passed or failed: what a
/// parent process (`race --jobs`, `stress`) keeps as data rather than as a
/// broken run (a usage error, a crash of the process). A Slurm task goes by
/// its records instead (`campaign merge --check`): 1 is also an I/O error.
pub const RAN: [Exit; 5] = [Exit::Success, Exit::Failed, Exit::Hang, Exit::Device, Exit::Mismatch];

/// Whether a child's exit `code` is one of [`RAN`].
pub fn ran(code: Option<i32>) -> bool {
    code.is_some_and(|c| RAN.iter().any(|&r| i32::from(r.code()) == c))
}

/// What kind of failure a run ended in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureClass {
    /// A wait timed out: the device or the host stopped making progress.
    Hang,
    /// The device reported an error or a core crashed.
    DeviceError,
    /// A result differs from the host reference.
    Mismatch,
    /// Anything else (a driver or I/O error, a killed process).
    #[default]
    Other,
}

impl FailureClass {
    /// The class as records and reports spell it (`device-error`).
    pub fn name(self) -> &'static str {
        match self {
            FailureClass::Hang => "hang",
            FailureClass::DeviceError => "device-error",
            FailureClass::Mismatch => "mismatch",
            FailureClass::Other => "other",
        }
    }

    /// The class of a driver error.
    pub fn of(e: &DriverError) -> Self {
        match e {
            DriverError::Timeout { .. } | DriverError::KernelTimeout { .. } | DriverError::Livelock { .. } => {
                FailureClass::Hang
            }
            DriverError::Device { .. } => FailureClass::DeviceError,
            DriverError::Mismatch(_) => FailureClass::Mismatch,
            _ => FailureClass::Other,
        }
    }

    /// The class's row of the table.
    pub fn exit(self) -> Exit {
        match self {
            FailureClass::Hang => Exit::Hang,
            FailureClass::DeviceError => Exit::Device,
            FailureClass::Mismatch => Exit::Mismatch,
            FailureClass::Other => Exit::Failed,
        }
    }
}

/// The exit of a run whose failures (if any) have these classes: success
/// without failures, the class's code when they all share one, else 1.
pub fn of_failures(classes: impl IntoIterator<Item = FailureClass>) -> Exit {
    let mut classes = classes.into_iter();
    let Some(first) = classes.next() else { return Exit::Success };
    if classes.all(|c| c == first) {
        first.exit()
    } else {
        Exit::Failed
    }
}

/// The exit of a command that ended in `e`: 2 for a usage error anywhere in
/// its chain, else the class of the driver error in its chain, else 1.
pub fn of_error(e: &anyhow::Error) -> Exit {
    // A firmware file that is no image for this chip and ABI, or a path to
    // something that is no libttsim library (missing, not a shared object,
    // another API, another chip), is malformed input, refused before any
    // work.
    let bad_input = |c: &(dyn std::error::Error + 'static)| {
        use cqlab_driver::error::LibraryProblem::{Load, MissingSymbol, UnknownDevice};
        c.downcast_ref::<UsageError>().is_some()
            || matches!(
                c.downcast_ref(),
                Some(
                    DriverError::BadElf { .. }
                        | DriverError::Library { problem: Load(_) | MissingSymbol { .. } | UnknownDevice { .. }, .. }
                )
            )
    };
    if e.chain().any(bad_input) {
        return Exit::Usage;
    }
    e.chain().find_map(|c| c.downcast_ref::<DriverError>()).map_or(FailureClass::Other, FailureClass::of).exit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_exits_with_its_one_failure_class_or_1_when_mixed() {
        use FailureClass::*;
        assert_eq!(of_failures([]), Exit::Success);
        assert_eq!(of_failures([Hang, Hang]), Exit::Hang);
        assert_eq!(of_failures([DeviceError]), Exit::Device);
        assert_eq!(of_failures([Mismatch, Mismatch]), Exit::Mismatch);
        assert_eq!(of_failures([Hang, Mismatch]), Exit::Failed);
        assert_eq!(of_failures([Other]), Exit::Failed);
    }

    #[test]
    fn an_error_exits_with_the_class_of_the_driver_error_inside_it() {
        use cqlab_driver::dump::{HangDump, Wait};
        let wait = Wait::Live { cq: 0 };
        let dump = HangDump {
            waited_for: wait.clone(),
            device_cycle: 0,
            queues: vec![],
            host: vec![],
            cores: vec![],
            chain: vec![],
            deadlock: false,
        };
        let hang = DriverError::Timeout { wait, cycles: 1, dump: Box::new(dump) };
        assert_eq!(of_error(&anyhow::Error::from(hang).context("running")), Exit::Hang);
        let e = anyhow::Error::from(DriverError::Invalid("x".into())).context("running");
        assert_eq!(of_error(&e), Exit::Failed);
        // A workload's validation that found a difference is a mismatch (it exited 1).
        let e = anyhow::Error::from(DriverError::Mismatch("matmul_peak failed validation".into())).context("running");
        assert_eq!(of_error(&e), Exit::Mismatch);
        assert_eq!(of_error(&anyhow::anyhow!("no driver error")), Exit::Failed);
    }

    /// A class reads in messages as in records (replay printed `Mismatch`).
    #[test]
    fn a_class_is_named_as_records_spell_it() {
        for class in [FailureClass::Hang, FailureClass::DeviceError, FailureClass::Mismatch, FailureClass::Other] {
            assert_eq!(serde_json::to_value(class).unwrap(), class.name());
        }
    }

    #[test]
    fn a_usage_error_exits_2_wherever_it_is_in_the_chain() {
        let e = anyhow::Error::from(UsageError("bad".into())).context("checking");
        assert_eq!(of_error(&e), Exit::Usage);
    }

    #[test]
    fn the_codes_are_the_documented_ones() {
        let codes =
            [Exit::Success, Exit::Failed, Exit::Usage, Exit::Hang, Exit::Device, Exit::Mismatch, Exit::Incomplete]
                .map(Exit::code);
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6]);
    }
}
