//! Usage errors: a bad argument or malformed input, reported before any
//! work starts (exit 2, see `exit::Exit`), never counted as a failure of
//! the device.

/// An option outside its real range, options that conflict, or input that
/// is not what the command reads.
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
