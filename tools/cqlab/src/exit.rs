//! Every exit code of `cqlab`, in one place (the table in `docs/cli.md`).
//! A failure's class picks its code, as a deterministic simulator's failure
//! classes do: a hang is a liveness failure, a device error a crash, a
//! mismatch a correctness failure. Scripts and CI can tell them apart
//! without reading the output.

use cqlab_driver::DriverError;
use std::process::ExitCode;

/// Success.
pub const SUCCESS: u8 = 0;
/// The run failed for another reason: I/O, a driver error of no class
/// below, failures of several classes in one campaign, a compare regression.
pub const FAILED: u8 = 1;
/// A usage error: a bad argument or malformed input, refused before any work.
pub const USAGE: u8 = 2;
/// A hang: a wait timed out (liveness).
pub const HANG: u8 = 3;
/// A device error: a firmware error record (`!CMD`), a corrupt completion
/// record, a core that crashed (a crash).
pub const DEVICE_ERROR: u8 = 4;
/// A mismatch: a result differs from the host's reference (correctness).
pub const MISMATCH: u8 = 5;

/// The codes of a run that ran to its result, passed or failed: what a
/// parent process (`--jobs`, `stress`, a Slurm task) keeps as data rather
/// than as a broken run (a usage error, a crash).
pub const RAN: [u8; 5] = [SUCCESS, FAILED, HANG, DEVICE_ERROR, MISMATCH];

/// Whether a child's exit `code` is one of [`RAN`].
pub fn ran(code: Option<i32>) -> bool {
    code.is_some_and(|c| RAN.iter().any(|&r| i32::from(r) == c))
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
    /// The class of a driver error.
    pub fn of(e: &DriverError) -> Self {
        match e {
            DriverError::Timeout { .. } | DriverError::KernelTimeout { .. } => FailureClass::Hang,
            DriverError::Device { .. } => FailureClass::DeviceError,
            _ => FailureClass::Other,
        }
    }

    pub fn code(self) -> u8 {
        match self {
            FailureClass::Hang => HANG,
            FailureClass::DeviceError => DEVICE_ERROR,
            FailureClass::Mismatch => MISMATCH,
            FailureClass::Other => FAILED,
        }
    }
}

/// The exit of a run whose failures (if any) have these classes: success
/// without failures, the class's code when they all share one, else 1.
pub fn of_failures(classes: impl IntoIterator<Item = FailureClass>) -> ExitCode {
    let mut classes = classes.into_iter();
    let Some(first) = classes.next() else { return ExitCode::from(SUCCESS) };
    ExitCode::from(if classes.all(|c| c == first) { first.code() } else { FAILED })
}

/// The exit of a command that ended in `e`: the class of the driver error
/// in its chain, if there is one, else 1.
pub fn of_error(e: &anyhow::Error) -> ExitCode {
    let class = e.chain().find_map(|c| c.downcast_ref::<DriverError>()).map_or(FailureClass::Other, FailureClass::of);
    ExitCode::from(class.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_exits_with_its_one_failure_class_or_1_when_mixed() {
        use FailureClass::*;
        assert_eq!(of_failures([]), ExitCode::SUCCESS);
        assert_eq!(of_failures([Hang, Hang]), ExitCode::from(HANG));
        assert_eq!(of_failures([DeviceError]), ExitCode::from(DEVICE_ERROR));
        assert_eq!(of_failures([Mismatch, Mismatch]), ExitCode::from(MISMATCH));
        assert_eq!(of_failures([Hang, Mismatch]), ExitCode::from(FAILED));
        assert_eq!(of_failures([Other]), ExitCode::from(FAILED));
    }

    #[test]
    fn an_error_exits_with_the_class_of_the_driver_error_inside_it() {
        use cqlab_driver::dump::{HangDump, Wait};
        let wait = Wait::Live { cq: 0 };
        let dump = HangDump {
            waited_for: wait.clone(),
            device_cycle: 0,
            queues: vec![],
            cores: vec![],
            chain: vec![],
            deadlock: false,
        };
        let hang = DriverError::Timeout { wait, cycles: 1, dump: Box::new(dump) };
        assert_eq!(of_error(&anyhow::Error::from(hang).context("running")), ExitCode::from(HANG));
        let e = anyhow::Error::from(DriverError::Invalid("x".into())).context("running");
        assert_eq!(of_error(&e), ExitCode::from(FAILED));
        assert_eq!(of_error(&anyhow::anyhow!("no driver error")), ExitCode::from(FAILED));
    }
}
