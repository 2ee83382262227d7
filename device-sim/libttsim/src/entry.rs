//! How a C call enters the library. Each exported call's body runs in
//! [`Entry::c`] (an `extern "C"` export) or [`Entry::c_unwind`] (an
//! `extern "C-unwind"` one), and reaches the state only through [`call`],
//! which takes the [`Entry`] one of them gives: no call can reach the
//! state without saying which ABI it has, and with it what a panic does.
//!
//! - `extern "C"` calls (everything that cannot reach the host's DMA
//!   callbacks: `init`, `exit`, configuration space, device creation and
//!   selection, DRAM access, the setters, cqlab's counters) catch a panic
//!   (a bug) inside the lock: it is reported as an internal error, and the
//!   simulator is broken: [`crate::state::Lib::broken`] keeps the call and
//!   the panic's message, which every later call reports until `exit`.
//! - `extern "C-unwind"` calls (`clock*`, `pci_mem_*`, `tile_*`,
//!   `cqlab_ttsim_peek`) may run a DMA callback whose C++ exception
//!   unwinds through them back to the host: the lock is released on the
//!   way out (a foreign exception does not poison it), the chip is
//!   consistent (`cqlab_sim::memory::HostMemory`), and the call is
//!   reported as having lost that access. Such a call cannot catch a
//!   panic without also meeting the foreign exception, on which
//!   `catch_unwind` may abort, so a panic anywhere in its body aborts the
//!   process after the panic's message, naming the call, rather than
//!   unwind into the host's C++ frames.
//!
//! Either way no panic crosses into C, and a call a DMA callback makes on
//! the thread of the call that runs it is refused as reentrant.

use crate::error::{self, note, report, ApiError, Log};
use crate::state::{self, Broken, Lib};
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The ABI of the export a call is the body of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Abi {
    C,
    CUnwind,
}

/// A call being made: what it is (for the log and its errors) and its ABI.
pub struct Entry<'a> {
    describe: &'a dyn Fn() -> String,
    abi: Abi,
}

impl<'a> Entry<'a> {
    /// Runs `body`, the whole of an `extern "C"` export, as call
    /// `describe()` (the call with its arguments, formatted only when
    /// logged or failed). A panic in [`call`] is caught there; one outside
    /// it reaches the `extern "C"` boundary, where Rust aborts.
    pub fn c<R>(describe: &'a dyn Fn() -> String, body: impl FnOnce(&Entry<'a>) -> R) -> R {
        body(&Entry { describe, abi: Abi::C })
    }

    /// Runs `body`, the whole of an `extern "C-unwind"` export, as call
    /// `describe()`: a host's exception passes, a panic aborts the process.
    pub fn c_unwind<R>(describe: &'a dyn Fn() -> String, body: impl FnOnce(&Entry<'a>) -> R) -> R {
        let _abort = AbortOnPanic::new(describe);
        body(&Entry { describe, abi: Abi::CUnwind })
    }

    /// The call with its arguments.
    pub fn describe(&self) -> String {
        (self.describe)()
    }

    /// Reports `err` as this call's.
    pub fn report(&self, err: &ApiError) {
        report(&self.describe(), err)
    }
}

/// Runs `f` on the state for `entry`. Its error is reported and gives
/// `None`; so does a refusal (a broken simulator, a reentrant call) and a
/// panic in a C call.
pub fn call<R>(entry: &Entry, broken: Broken, f: impl FnOnce(&mut Lib) -> Result<R, ApiError>) -> Option<R> {
    if error::log_level() == Log::Calls {
        note(Log::Calls, &entry.describe());
    }
    if IN_CALL.get() {
        entry.report(&ApiError::Reentrant);
        return None;
    }
    let mut lib = state::lock();
    let refused = match (&lib.broken, broken) {
        (Some(why), Broken::Refuse) => Some(ApiError::Broken(why.clone())),
        _ => None,
    };
    let r = match refused {
        Some(e) => Err(e),
        None => {
            let mut in_call = InCall::enter(entry);
            let r = match entry.abi {
                Abi::CUnwind => f(&mut lib),
                Abi::C => catch_unwind(AssertUnwindSafe(|| f(&mut lib))).unwrap_or_else(|payload| {
                    let why = panic_message(&*payload);
                    lib.broken = Some(format!("{} panicked: {why}", entry.describe()));
                    Err(ApiError::Internal(format!("it panicked: {why}")))
                }),
            };
            in_call.finished = true;
            r
        }
    };
    drop(lib);
    r.map_err(|e| entry.report(&e)).ok()
}

/// A panic's message, as the panic hook printed it.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "(a panic without a message)".into(),
    }
}

thread_local! {
    /// This thread is inside a call (a DMA callback calling back in).
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread inside a call; tells on drop how a C-unwind call that
/// did not finish ended.
struct InCall<'a, 'b> {
    entry: &'a Entry<'b>,
    finished: bool,
}

impl<'a, 'b> InCall<'a, 'b> {
    fn enter(entry: &'a Entry<'b>) -> Self {
        IN_CALL.set(true);
        InCall { entry, finished: false }
    }
}

impl Drop for InCall<'_, '_> {
    fn drop(&mut self) {
        IN_CALL.set(false);
        if self.finished {
            return;
        }
        if std::thread::panicking() {
            // About to abort (`AbortOnPanic`).
            self.entry.report(&ApiError::Internal("it panicked (message above)".into()));
        } else {
            self.entry.report(&ApiError::DmaUnwound);
        }
    }
}

/// Held through a `C-unwind` call: a Rust panic unwinding out of it would
/// enter the host's C++ frames, which cannot handle it, so the process
/// aborts instead, naming the call (the panic hook has printed where it
/// panicked). A C++ exception from a DMA callback is no Rust panic and
/// passes.
struct AbortOnPanic<'a> {
    call: &'a dyn Fn() -> String,
    /// The thread was unwinding already when the call began (a call from a
    /// destructor): only a panic inside the call aborts.
    was_panicking: bool,
}

impl<'a> AbortOnPanic<'a> {
    fn new(call: &'a dyn Fn() -> String) -> Self {
        AbortOnPanic { call, was_panicking: std::thread::panicking() }
    }
}

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() && !self.was_panicking {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr().lock(),
                "cqlab libttsim: {}: a Rust panic (above) inside a call that runs the device: aborting rather than \
                 unwinding into the host",
                (self.call)()
            );
            std::process::abort();
        }
    }
}
