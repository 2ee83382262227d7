//! Configuration errors: a bad option is reported before any seed or run
//! starts, with its own exit code, never counted as a failure of the device.

/// Exit code of a usage (configuration) error; the same code clap uses for
/// options it cannot parse (see `crate::exit`).
pub const USAGE_EXIT: u8 = crate::exit::USAGE;

/// An option outside its real range, or a combination the device refuses.
#[derive(Debug, thiserror::Error)]
#[error("usage: {0}")]
pub struct UsageError(pub String);

/// `Err(UsageError)` unless `ok`.
pub fn ensure(ok: bool, message: impl FnOnce() -> String) -> Result<(), UsageError> {
    if ok {
        Ok(())
    } else {
        Err(UsageError(message()))
    }
}
